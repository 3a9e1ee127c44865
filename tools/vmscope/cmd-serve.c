/* vmscope serve: the timeline in the browser, down to single events, from a local HTTP
 * server (vmscope/serve.h: the transport in lib/output/serve_http.c, the window queries in
 * lib/session/serve_window.c). This file parses the options, makes the page (the page of
 * `vmscope html`, in its server mode) and routes the API:
 *   /            the page
 *   /api/findings  the findings of `vmscope report --json`
 *   /api/rows    every row (vCPUs, physical CPUs, guest threads) and the traces' span
 *   /api/window  ?from=NS&to=NS&px=N[&row=ID]: the rows' intervals or per-pixel sums, exits
 *   /api/events  ?from=NS&to=NS[&limit=N]: the lines `vmscope dump --from --to` prints
 *   /api/search  ?q=TEXT[&max=N]: the times a thread, an exit reason or an event matches
 *   /api/stats   ?from=NS&to=NS: per row the ns by state, per vCPU the exits by reason and
 *                their duration histograms (the page's range comparison and selection)
 * One request at a time (the server is single-threaded); every window is computed by the
 * same pipeline as vcpus/threads/pcpus/exits --from --to. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include "cli.h"
#include "cmds.h"
#include "serve_index.h"
#include "vmscope/serve.h"

static const char usage[] =
	"usage: vmscope serve [--port N] [--open] [--tsc-hz HZ] [--host FILE]\n"
	"                     [--guest NAME=FILE] [--map NAME:VCPU=TID,...] TRACE...\n"
	"\n"
	"Serves the page of `vmscope html` from a local HTTP server (127.0.0.1 only) that answers\n"
	"what it shows at any zoom: per row and time window the exact intervals (VM exits,\n"
	"guest thread switches, host preemptions, exact ns) or per-pixel summaries, the events of\n"
	"the window as `vmscope dump` prints them, and searches. It prints the URL to open, with a\n"
	"random token every request must carry; other hosts and requests without it are refused.\n"
	"One request is served at a time; each window is computed by the state machine of\n"
	"`vmscope report` from the last checkpoint before it (trace.dat; other formats replay\n"
	"the traces from their start), or, when it holds 400,000 events or more, from the\n"
	"per-row summaries. The page, the findings, the rows, the checkpoints and the summaries\n"
	"are read from the index (vmscope index) when it is these traces', else computed and\n"
	"the index written. Ctrl+C stops it.\n"
	"\n"
	"  --port N            listen on port N (default 0: a free port)\n"
	"  --open              open the URL in the browser (xdg-open)\n"
	"  --cache-dir DIR     the index cache (default $XDG_CACHE_HOME/vmscope, else\n"
	"                      ~/.cache/vmscope): see vmscope index\n"
	"  --index FILE        use (and write) this index file instead of the cache's\n"
	"  --no-index          neither read nor write an index\n"
	CLI_HELP_OUTPUT CLI_HELP_ROLES;

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

struct srv {
	struct cli *c;
	struct vms_serve_traces t;
	struct serve_art art;         /* the page, /api/findings, /api/rows: computed once, or
	                                 read from the index (serve_index.c) */
	struct vms_serve_summary *summary; /* the wide windows' answers, NULL: none */
	uint64_t replay_below;        /* VMS_SERVE_SUMMARY_MIN: fewer events are replayed */
	const char *self;             /* this program, for dump */
	/* the model, built in a thread of its own while the server already answers what needs
	 * none (the page, the rows, the findings, the summaries' windows): the queries that do
	 * wait for it (model()) */
	pthread_t model_thread;
	bool model_building;
	int model_rc;
	struct vms_error model_err;
};

static void *build_model(void *arg)
{
	struct srv *sv = arg;
	sv->model_rc = vms_session_build_model(sv->c->s, &sv->model_err);
	return NULL;
}

/* A reference-ns parameter; false when absent or not a plain integer. */
static bool ns_param(const struct vms_http_req *r, const char *key, uint64_t *v)
{
	const char *s = vms_http_param(r, key);
	if (!s || !*s || *s == '-' || *s == '+' || strlen(s) > 20)
		return false;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*v = x;
	return true;
}

static void bad(struct vms_http_resp *resp, int st, const char *msg)
{
	resp->status = st;
	fputs("{\"error\":\"", resp->body);
	vms_http_json_escape(resp->body, msg);
	fprintf(resp->body, "\",\"status\":%d}\n", st);
}

static void fail(struct vms_http_resp *resp, const struct vms_error *err)
{
	bad(resp, err->status == VMS_ERR_USAGE ? 400 : err->status == VMS_ERR_NOMEM ? 503 : 500,
	    err->msg);
}

/* The lines of `vmscope dump --from F --to T --limit N` over the same traces: dump itself,
 * run as a child, so that the lines are its lines. At most 8 MiB are read. */
static void events(struct srv *sv, uint64_t from, uint64_t to, uint64_t limit,
		   struct vms_http_resp *resp)
{
	char a_from[32], a_to[32], a_lim[32];
	snprintf(a_from, sizeof a_from, "%" PRIu64, from);
	snprintf(a_to, sizeof a_to, "%" PRIu64, to);
	snprintf(a_lim, sizeof a_lim, "%" PRIu64, limit);
	const struct vms_session_opts *o = &sv->c->sopts;
	uint32_t n = 0, cap = 16 + sv->c->nr_paths + o->nr_guests + 1;
	char **argv = calloc(cap, sizeof *argv);
	char hz[40];
	if (!argv)
		return bad(resp, 503, "out of memory");
	argv[n++] = (char *)"vmscope";
	argv[n++] = (char *)"dump";
	argv[n++] = (char *)"--from";
	argv[n++] = a_from;
	argv[n++] = (char *)"--to";
	argv[n++] = a_to;
	argv[n++] = (char *)"--limit";
	argv[n++] = a_lim;
	if (o->tsc_hz > 0) {
		snprintf(hz, sizeof hz, "%.17g", o->tsc_hz);
		argv[n++] = (char *)"--tsc-hz";
		argv[n++] = hz;
	}
	argv[n++] = (char *)"--";
	if (o->host_path)
		argv[n++] = (char *)o->host_path;
	for (uint32_t i = 0; i < sv->c->nr_paths; i++)
		argv[n++] = (char *)sv->c->paths[i];
	for (uint32_t i = 0; i < o->nr_guests; i++)
		argv[n++] = (char *)o->guest_paths[i];
	int pfd[2];
	if (pipe(pfd) < 0) {
		free(argv);
		return bad(resp, 503, "no pipe");
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		int dn = open("/dev/null", 1);
		if (dn >= 0)
			dup2(dn, 2);
		execv(sv->self, argv);
		_exit(127);
	}
	close(pfd[1]);
	free(argv);
	if (pid < 0) {
		close(pfd[0]);
		return bad(resp, 503, "cannot run dump");
	}
	fputs("{\"lines\":[", resp->body);
	char buf[65536], line[4096];
	size_t ll = 0, total = 0, nl = 0;
	ssize_t r;
	while ((r = read(pfd[0], buf, sizeof buf)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		total += (size_t)r;
		for (ssize_t i = 0; i < r; i++) {
			if (buf[i] != '\n') {
				if (ll + 1 < sizeof line)
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = 0;
			fputs(nl++ ? ",\"" : "\"", resp->body);
			vms_http_json_escape(resp->body, line);
			fputc('"', resp->body);
			ll = 0;
		}
		if (total > (8u << 20)) {
			kill(pid, SIGTERM);
			break;
		}
	}
	close(pfd[0]);
	int ws = 0;
	waitpid(pid, &ws, 0);
	fprintf(resp->body, "],\"exit_status\":%d}\n", WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
	resp->status = 200;
}

/* The model every query borrows: the page's run's, or built at the first query when the
 * page came from the index (a model pass, once per server). */
static int model(struct srv *sv, struct vms_error *err)
{
	if (sv->t.model)
		return 0;
	if (sv->model_building) {
		pthread_join(sv->model_thread, NULL);
		sv->model_building = false;
		if (sv->model_rc != 0) {
			*err = sv->model_err;
			return -1;
		}
	} else if (vms_session_build_model(sv->c->s, err) != 0) {
		return -1;
	}
	sv->t.model = vms_session_model(sv->c->s);
	return 0;
}

static void handle(void *ctx, const struct vms_http_req *r, struct vms_http_resp *resp)
{
	struct srv *sv = ctx;
	struct vms_error err = { 0 };
	if (!strncmp(r->path, "/api/", 5) && strcmp(r->path, "/api/findings") &&
	    strcmp(r->path, "/api/rows") && strcmp(r->path, "/api/events") &&
	    strcmp(r->path, "/api/window") && model(sv, &err) < 0)
		return fail(resp, &err);
	if (!strcmp(r->path, "/") || !strcmp(r->path, "/index.html")) {
		resp->status = 200;
		resp->content_type = "text/html; charset=utf-8";
		fwrite(sv->art.page, 1, sv->art.page_len, resp->body);
		return;
	}
	if (!strcmp(r->path, "/api/findings")) {
		resp->status = 200;
		fwrite(sv->art.findings, 1, sv->art.findings_len, resp->body);
		return;
	}
	if (!strcmp(r->path, "/api/rows")) {
		resp->status = 200;
		fwrite(sv->art.rows, 1, sv->art.rows_len, resp->body);
		return;
	}
	if (!strcmp(r->path, "/api/window") || !strcmp(r->path, "/api/events")) {
		bool win = !strcmp(r->path, "/api/window");
		uint64_t from, to, px = 1000, limit = 1000;
		const char *pxs = vms_http_param(r, win ? "px" : "limit");
		if (!ns_param(r, "from", &from) || !ns_param(r, "to", &to) || from >= to)
			return bad(resp, 400, "from and to: integer reference ns, from < to");
		if (pxs && !ns_param(r, win ? "px" : "limit", win ? &px : &limit))
			return bad(resp, 400, win ? "px: an integer" : "limit: an integer");
		if (win && (px < 1 || px > 4096))
			return bad(resp, 400, "px: 1 to 4096");
		if (!win && (limit < 1 || limit > 100000))
			return bad(resp, 400, "limit: 1 to 100000");
		if (!win)
			return events(sv, from, to, limit, resp);
		const char *row = vms_http_param(r, "row");
		int sr = vms_serve_summary_window(sv->summary, from, to, (uint32_t)px, row,
						  sv->replay_below, resp->body, &err);
		if (sr < 0)
			return fail(resp, &err);
		if (sr == 0 && (model(sv, &err) < 0 ||
				vms_serve_window(&sv->t, from, to, (uint32_t)px, row, resp->body,
						 &err) < 0))
			return fail(resp, &err);
		resp->status = 200;
		return;
	}
	if (!strcmp(r->path, "/api/stats")) {
		uint64_t from, to;
		if (!ns_param(r, "from", &from) || !ns_param(r, "to", &to) || from >= to)
			return bad(resp, 400, "from and to: integer reference ns, from < to");
		if (vms_serve_stats(&sv->t, from, to, resp->body, &err) < 0)
			return fail(resp, &err);
		resp->status = 200;
		return;
	}
	if (!strcmp(r->path, "/api/search")) {
		const char *q = vms_http_param(r, "q");
		uint64_t max = 1000;
		if (!q || !*q)
			return bad(resp, 400, "q: what to search for");
		if (vms_http_param(r, "max") && (!ns_param(r, "max", &max) || !max || max > 100000))
			return bad(resp, 400, "max: 1 to 100000");
		if (vms_serve_search(&sv->t, q, (uint32_t)max, resp->body, &err) < 0)
			return fail(resp, &err);
		resp->status = 200;
		return;
	}
	resp->status = 404;   /* the server writes the refusal */
}

/* The page, findings and rows: from the index when it is these traces' (unchanged since it was
 * written, same options, same program), else computed and the index written for next time.
 * A damaged index is said in one line and replaced; one that cannot be written is a warning. */
static int prepare(struct srv *sv, const struct serve_index_opts *io, struct vms_error *err)
{
	char *key = NULL, *path = NULL;
	struct vms_error ie = { 0 };
	if (!io->off && serve_index_locate(sv->c, io, &key, &path, &ie) < 0) {
		fprintf(stderr, "vmscope serve: warning: no index: %s\n", ie.msg);
		vms_error_clear(&ie);
	}
	enum vms_index_state state = VMS_INDEX_MISSING;
	if (path && serve_art_load(path, key, &sv->art, &state, &ie) == 0) {
		fprintf(stderr, "vmscope serve: index %s\n", path);
		free(key);
		free(path);
		return 0;
	}
	if (state == VMS_INDEX_DAMAGED)
		fprintf(stderr, "vmscope serve: %s: rebuilding the index\n", ie.msg);
	vms_error_clear(&ie);
	int st = serve_art_build(sv->c, &sv->t, &sv->art, path != NULL, err);
	if (!st && path) {
		if (serve_art_save(path, key, &sv->art, &ie) < 0)
			fprintf(stderr, "vmscope serve: warning: index not written: %s\n", ie.msg);
		else
			fprintf(stderr, "vmscope serve: index %s written\n", path);
		serve_index_upkeep(io, path);
	}
	free(key);
	free(path);
	return st;
}

int cmd_serve(int argc, char **argv)
{
	/* --port and --open are serve's own: taken out before the shared parser sees argv */
	long port = 0;
	bool open_it = false;
	struct serve_index_opts io = { 0 };
	char **av = calloc((size_t)argc + 1, sizeof *av);
	int ac = 0;
	if (!av) {
		fprintf(stderr, "vmscope serve: out of memory\n");
		return VMS_EXIT_FAIL;
	}
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		if (!strcmp(a, "--")) {
			while (i < argc)
				av[ac++] = argv[i++];
			break;
		}
		if (!strcmp(a, "--open")) {
			open_it = true;
			continue;
		}
		int t = serve_index_opt("serve", argc, argv, &i, false, &io, usage);
		if (t < 0) {
			free(av);
			return VMS_EXIT_USAGE;
		}
		if (t)
			continue;
		if (!strcmp(a, "--port")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "vmscope serve: --port needs a value\n%s", usage);
				free(av);
				return VMS_EXIT_USAGE;
			}
			v = argv[++i];
		} else if (!strncmp(a, "--port=", 7)) {
			v = a + 7;
		} else {
			av[ac++] = argv[i];
			continue;
		}
		char *end;
		errno = 0;
		port = strtol(v, &end, 10);
		if (errno || end == v || *end || port < 0 || port > 65535) {
			fprintf(stderr, "vmscope serve: --port: not a port (0 to 65535): '%s'\n",
				cli_text(v));
			free(av);
			return VMS_EXIT_USAGE;
		}
	}
	struct cli c;
	int st = cli_begin(&c, ac, av, CLI_ROLES, usage);
	if (st != CLI_GO) {
		free(av);
		return st;
	}
	struct srv sv = { .c = &c, .self = "/proc/self/exe" };
	sv.t = (struct vms_serve_traces){ .paths = c.paths, .nr_paths = c.nr_paths, .opts = &c.sopts };
	struct vms_error err = { 0 };
	struct vms_server *s = NULL;
	static char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
	if (sl > 0) {
		self[sl] = 0;
		sv.self = self;
	}
	if (prepare(&sv, &io, &err) < 0)
		goto fail;
	/* VMS_SERVE_SUMMARIES=0: no window answered from the summaries (the tests compare) */
	const char *sum_env = getenv("VMS_SERVE_SUMMARIES");
	/* VMS_SERVE_SUMMARY_MIN=N: windows of fewer events are replayed (the tests' traces) */
	const char *min_env = getenv("VMS_SERVE_SUMMARY_MIN");
	sv.replay_below = min_env ? strtoull(min_env, NULL, 10) : 0;
	if ((!sum_env || strcmp(sum_env, "0")) && sv.art.summary) {
		struct vms_error se = { 0 };
		sv.summary = vms_serve_summary_load(sv.art.summary, sv.art.summary_len, &se);
		if (!sv.summary)
			fprintf(stderr, "vmscope serve: warning: %s: wide windows are replayed\n",
				se.msg);
	}
	/* VMS_SERVE_CHECKPOINTS=0: every window replayed from the start (the tests compare) */
	const char *ck_env = getenv("VMS_SERVE_CHECKPOINTS");
	if ((!ck_env || strcmp(ck_env, "0")) && sv.art.ckpt) {
		/* read once here: checkpoints that are not these traces' (a damaged index under a
		 * sound checksum) are said once, and the windows replay from the start */
		struct vms_error ce = { 0 };
		if (vms_session_use_checkpoints(c.s, sv.art.ckpt, sv.art.ckpt_len, &ce) == 0) {
			sv.t.ckpt = sv.art.ckpt;
			sv.t.ckpt_len = sv.art.ckpt_len;
		} else {
			fprintf(stderr, "vmscope serve: warning: %s: windows replay the traces from "
				"their start\n", ce.msg);
		}
		vms_session_use_checkpoints(c.s, NULL, 0, &ce);
	}
	s = vms_server_new((uint16_t)port, &err);
	if (!s)
		goto fail;
	/* (the page came from the index: no run built the model yet; the index's, else one
	 * built in a thread) */
	if (!vms_session_analysis(c.s) && sv.art.model) {
		struct vms_error me = { 0 };
		if (vms_session_load_model(c.s, sv.art.model, sv.art.model_len, &me) == 0)
			sv.t.model = vms_session_model(c.s);
		else
			fprintf(stderr, "vmscope serve: warning: %s: the model is built again\n",
				me.msg);
	}
	if (!vms_session_analysis(c.s) && !sv.t.model &&
	    pthread_create(&sv.model_thread, NULL, build_model, &sv) == 0)
		sv.model_building = true;
	printf("http://127.0.0.1:%u/?token=%s\n", vms_server_port(s), vms_server_token(s));
	fflush(stdout);
	if (open_it && fork() == 0) {
		char url[128];
		snprintf(url, sizeof url, "http://127.0.0.1:%u/?token=%s", vms_server_port(s),
			 vms_server_token(s));
		int dn = open("/dev/null", 1);
		if (dn >= 0) {
			dup2(dn, 1);
			dup2(dn, 2);
		}
		execlp("xdg-open", "xdg-open", url, (char *)NULL);
		_exit(127);
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGCHLD, SIG_DFL);
	if (vms_server_run(s, handle, &sv, &stop, &err) < 0)
		goto fail;
	st = VMS_EXIT_OK;
	goto out;
fail:
	st = cli_fail(&c, &err);
out:
	if (sv.model_building)
		pthread_join(sv.model_thread, NULL);
	vms_server_free(s);
	vms_serve_summary_free(sv.summary);
	serve_art_free(&sv.art);
	free(av);
	return cli_end(&c, st);
}
