/* vmscope: the local HTTP server of `vmscope serve` (lib/output/serve_http.c) and the window
 * queries it answers (lib/session/serve_window.c).
 *
 * The transport: HTTP/1.1 on 127.0.0.1 only, plain sockets and poll(), one request at a time
 * and one request per connection (Connection: close): the page asks for little at once, and
 * a single-threaded server has no shared state to race on. A random 128-bit token
 * (getrandom) is in the URL it prints; every request must carry it (?token=...) or is refused
 * with 403. The Host header must be 127.0.0.1:PORT or localhost:PORT (421 otherwise: a page
 * of another site reaching the port through DNS rebinding names its own host). A request is
 * bounded: its head at VMS_HTTP_HEAD_MAX bytes (431), its request line at VMS_HTTP_LINE_MAX
 * (414), VMS_HTTP_MAX_PARAMS parameters of at most VMS_HTTP_PARAM_MAX bytes each (400), no
 * body (400), and VMS_HTTP_TIMEOUT_MS to arrive whole (408). After each refusal the server
 * goes on serving. */
#ifndef VMSCOPE_SERVE_H
#define VMSCOPE_SERVE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vmscope/error.h"
#include "vmscope/session.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VMS_HTTP_HEAD_MAX 8192u
#define VMS_HTTP_LINE_MAX 4096u
#define VMS_HTTP_MAX_PARAMS 16u
#define VMS_HTTP_PARAM_MAX 256u
#define VMS_HTTP_TIMEOUT_MS 5000

struct vms_http_req {
	char path[VMS_HTTP_LINE_MAX];   /* decoded, without the query */
	uint32_t nr_params;
	char key[VMS_HTTP_MAX_PARAMS][VMS_HTTP_PARAM_MAX + 1];
	char val[VMS_HTTP_MAX_PARAMS][VMS_HTTP_PARAM_MAX + 1];
};
/* The value of parameter `key`, NULL when absent. */
const char *vms_http_param(const struct vms_http_req *r, const char *key);

/* What a handler answers: status (200, 400, 404...), content type, and the body it wrote to
 * `body` (an open_memstream the server owns). */
struct vms_http_resp {
	int status;
	const char *content_type;
	FILE *body;
};
/* Called for a request that passed every check (token, host, bounds) and whose path the
 * server does not refuse itself. */
typedef void (*vms_http_handler)(void *ctx, const struct vms_http_req *r,
				 struct vms_http_resp *resp);

struct vms_server;
/* Listen on 127.0.0.1:port (0: a free port the system picks). NULL with err set. */
struct vms_server *vms_server_new(uint16_t port, struct vms_error *err);
void vms_server_free(struct vms_server *s);
uint16_t vms_server_port(const struct vms_server *s);
const char *vms_server_token(const struct vms_server *s);   /* 32 hex digits */
/* Serve until *stop is set (a signal handler sets it). Returns 0, or -1 with err set when the
 * listening socket fails. */
int vms_server_run(struct vms_server *s, vms_http_handler fn, void *ctx,
		   volatile sig_atomic_t *stop, struct vms_error *err);
/* Write `v` as the body of a JSON string (without the quotes), escaped. */
void vms_http_json_escape(FILE *f, const char *v);

/* The window queries (lib/session/serve_window.c). A query runs the pipeline of the other
 * commands on a new session of the same traces and options with from/to set, as `vcpus`,
 * `exits`, `threads` and `pcpus --from --to` do: the numbers are theirs. The state machine
 * must see what happened before the window (the analysis publishes nothing before it): a
 * window starts from the last checkpoint before it when the traces have checkpoints
 * (vms_serve_traces.ckpt), else it replays the traces from their start, so that it costs
 * the trace from that checkpoint (or the start) to its end. */
struct vms_serve_traces {
	const char *const *paths;
	uint32_t nr_paths;
	const struct vms_session_opts *opts;   /* from/to/machine/vcpu are replaced per query */
	/* Optional: the model of these traces and options (vms_session_build_model's), which
	 * every query then uses instead of building its own (vms_session_borrow_model); and the
	 * checkpoints of a run over them (vms_session_checkpoints), from which a window starts
	 * instead of from the traces' start. Both outlive the queries. */
	struct vms_model *model;
	const void *ckpt;
	size_t ckpt_len;
};
/* Every row the page draws: {"rows":[{"id":"v:M:V","kind":"vcpu","label":...},...]}, and the
 * trace's first/last reference ns. */
int vms_serve_rows(const struct vms_serve_traces *t, FILE *f, struct vms_error *err);
/* The same rows collected during a run of another caller's session (the page's run of serve
 * and index, so that the rows cost no pass of their own; lib/session/serve_rows_acc.c, in a
 * thread of its own unless VMS_SERVE_ROWS_THREADS=0): _begin subscribes its observer (with a
 * fused physical-CPU view of its own) and fills *sinks, which the caller gives
 * vms_session_run; after the run _write writes what vms_serve_rows writes; _free always. The
 * sinks are taken back by the observer's reset, so the session may run its checked single
 * pass with them (no model pass). */
struct vms_serve_rows_acc;
struct vms_serve_rows_acc *vms_serve_rows_begin(struct vms_session *s, struct vms_sinks *sinks,
						struct vms_error *err);
/* Every exit the rows take (exit_end) also to fn, in the rows' thread, in the order of the
 * run, before the end of each pass (vms_session_run's finish) and of each reset: a consumer
 * of the same run whose only per-event work is the exits (the served page's histograms)
 * runs there instead of subscribing its exit_end. Set it before the run. */
struct vms_obs_exit;
void vms_serve_rows_tee_exits(struct vms_serve_rows_acc *a,
			      void (*fn)(void *ctx, const struct vms_obs_exit *o), void *ctx);
void vms_serve_rows_write(struct vms_serve_rows_acc *a, struct vms_session *s, FILE *f);
void vms_serve_rows_free(struct vms_serve_rows_acc *a);
/* The summaries of the rows (lib/session/serve_summary.c), recorded by the same run: per row
 * time buckets (ns by state, intervals and exits beginning) and, for rows with few, their
 * intervals and exits; they answer the windows too wide to replay fast. _write_summary: the
 * index's section 5 (0 written, 1 none: no rows; -1 the write failed). */
int vms_serve_rows_write_summary(struct vms_serve_rows_acc *a, struct vms_session *s, FILE *f);
struct vms_serve_summary;
/* Read section 5 (buf must outlive it; every length checked): NULL with err set when damaged. */
struct vms_serve_summary *vms_serve_summary_load(const void *buf, size_t len,
						 struct vms_error *err);
void vms_serve_summary_free(struct vms_serve_summary *s);
/* Answer [from, to) at px pixels as vms_serve_window does, from the summaries alone: 1 when
 * written to f (the window holds at least replay_below events, 0: VMS_SERVE_REPLAY_EVENTS,
 * estimated from the buckets' activity; and every row either kept whole, so that its
 * intervals and exits are those a replay gives, or holding more than 2 per pixel in the
 * buckets wholly inside the window, so that a replay would sum it too: its pixels' ns are
 * then the buckets' spread evenly over each bucket, "summary_ns" the bucket's width); 0 when
 * it cannot (replay instead); -1 with err set. */
#define VMS_SERVE_REPLAY_EVENTS 400000u
int vms_serve_summary_window(const struct vms_serve_summary *s, uint64_t from, uint64_t to,
			     uint32_t px, const char *only, uint64_t replay_below, FILE *f,
			     struct vms_error *err);
/* The rows' contents in [from, to) (reference ns) at `px` pixels: per row the exact
 * intervals when fewer than 2 per pixel, else per pixel the ns of each state; per vCPU row
 * its VM exits (exact, or counts per pixel). `row` NULL: every row; else one row id. */
int vms_serve_window(const struct vms_serve_traces *t, uint64_t from, uint64_t to, uint32_t px,
		     const char *row, FILE *f, struct vms_error *err);
/* Times where `what` matches: a guest thread's name or tid (when it was switched in), an
 * exit reason's name or number (kvm_exit), an event's name. At most `max` matches, in time
 * order: {"matches":[{"t":ns,"row":"...","what":"..."}],"truncated":bool}. */
int vms_serve_search(const struct vms_serve_traces *t, const char *what, uint32_t max, FILE *f,
		     struct vms_error *err);

/* The statistics of [from, to) (reference ns) that the page compares and its histograms
 * follow (lib/session/serve_stats.c): per row the ns of each state and the intervals that
 * overlap it; per vCPU its VM exits by reason (count, ended/unfinished/lost, total, min,
 * max ns, the duration histogram in bins of 2^(b/4) ns as [bin, count] pairs), as `vcpus`,
 * `threads`, `pcpus` and `exits --from --to` count them. */
int vms_serve_stats(const struct vms_serve_traces *t, uint64_t from, uint64_t to, FILE *f,
		    struct vms_error *err);
/* A new session of the traces with [from, to) set (to UINT64_MAX with from 0: no window),
 * the one every query runs on. */
struct vms_session *vms_serve_session(const struct vms_serve_traces *t, uint64_t from,
				      uint64_t to, struct vms_error *err);

#ifdef __cplusplus
}
#endif
#endif
