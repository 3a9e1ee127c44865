/* vmscope: a session is the whole pipeline for a set of traces:
 *   open the sources -> build the model (metadata + a first pass over linking events)
 *   -> clocks -> merge all streams by reference time -> the analyses -> sinks.
 * Used alike by the CLI, the tests and the benchmarks. */
#ifndef VMSCOPE_SESSION_H
#define VMSCOPE_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "vmscope/analysis.h"
#include "vmscope/error.h"
#include "vmscope/event.h"
#include "vmscope/filter.h"
#include "vmscope/model.h"
#include "vmscope/observe.h"
#include "vmscope/source.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vms_session_opts {
	const char *host_path;       /* --host FILE: this trace is the (reference) host */
	uint32_t nr_guests;          /* --guest NAME=FILE */
	const char **guest_names;
	const char **guest_paths;
	uint32_t nr_maps;            /* --map NAME[@HOST]:VCPU=TID */
	const char **map_guest;
	uint32_t *map_vcpu;
	int32_t *map_tid;
	const char **map_host;       /* NULL, or per entry the host named (NULL: none) */
	uint32_t nr_dom_maps;        /* --map NAME:dom=N (Xen domain N is machine NAME) */
	const char **dom_map_guest;
	uint32_t *dom_map_id;
	uint32_t nr_offsets;         /* --offset NAME=NS: NAME's reference time = its time + NS */
	const char **offset_name;
	int64_t *offset_ns;
	bool progress;               /* progress on stderr (the CLI sets it when it is a tty) */
	bool no_hull;                /* no clock sync from matched events (vms_model_set_hull) */
	int clock_model;             /* --clock-model: enum vms_clock_model (vmscope/sync.h),
	                                0 = auto */
	uint32_t match_cap;          /* unmatched events remembered per direction (0: the
	                                default, VMS_MATCH_DEFAULT_CAP; tests set it small) */
	const char *reference;       /* --reference NAME: the reference timebase, else the first
	                                host, else the first trace */
	/* every matched message pair (machine own ns) as the model pass finds it (may be NULL) */
	void (*on_pair)(void *ctx, const struct vms_sync_pair *pair);
	void *on_pair_ctx;
	double tsc_hz;               /* --tsc-hz: the rate of a counter clock that has no
	                              * TSC2NSEC (0: such timestamps stay in cycles) */
	struct vms_time_bound from, to; /* --from, --to: the time window (vmscope/filter.h) */
	const char *machine;         /* --machine NAME: only its rows (NULL: all) */
	bool has_vcpu;               /* --vcpu N: only that vCPU's rows */
	uint32_t vcpu;
	unsigned threads;            /* --threads N: threads that read the traces, the calling
	                              * one included (0: one per online CPU; 1: no worker). It
	                              * is the process's setting: the readers' worker pool
	                              * serves every open source */
};

struct vms_session;
struct vms_sync_pair;

/* Open every trace (paths given positionally, plus host/guests of opts). */
struct vms_session *vms_session_open(const char *const *paths, uint32_t nr_paths,
				     const struct vms_session_opts *opts, struct vms_error *err);
void vms_session_free(struct vms_session *s);
/* The sync options of vms_session_opts (reference, on_pair), set after opening and before
 * the model is built. `reference` must outlive the session. */
void vms_session_set_sync(struct vms_session *s, const char *reference,
			  void (*on_pair)(void *ctx, const struct vms_sync_pair *pair), void *ctx);

uint32_t vms_session_nr_sources(const struct vms_session *s);
struct vms_source *vms_session_source(struct vms_session *s, uint32_t i);

/* Build the model (idempotent). */
int vms_session_build_model(struct vms_session *s, struct vms_error *err);
struct vms_model *vms_session_model(struct vms_session *s);

/* Per-event callback on the merged stream (t = reference ns), for dump and custom sinks. */
typedef void (*vms_event_fn)(void *ctx, const struct vms_event *ev, uint64_t t);

/* Run the analyses over the merged stream, streaming intervals to sinks (may be NULL).
 * on_event (may be NULL) sees every event too. Builds the model first if needed: with a model
 * pass when anything is streamed (sinks, on_event), else in one checked pass (the analysis
 * runs again only when the events link more than the metadata said). */
int vms_session_run(struct vms_session *s, const struct vms_sinks *sinks,
		    vms_event_fn on_event, void *on_event_ctx, struct vms_error *err);
/* Subscribe an observer (vmscope/observe.h) to every later vms_session_run. Observers are
 * treated like streaming sinks: the run takes the model pass, so each observer sees the
 * stream exactly once. The observer's struct is copied; its ctx must outlive the runs.
 * Returns 0, or -1 when out of memory. */
int vms_session_observe(struct vms_session *s, const struct vms_observer *o);
/* The rows to keep (--machine, --vcpu), valid after the model is built; NULL when the
 * machine named is not one of the model's (the run fails with a usage error then). */
const struct vms_filter *vms_session_filter(struct vms_session *s);
/* The Xen model's accounting (vmscope/xen_model.h) of source `source` in the last run, NULL
 * when that source is no xentrace file, or when the run started from a checkpoint (which
 * holds no Xen model: it would have seen only the events after it). */
struct vms_xen_model;
const struct vms_xen_model *vms_session_xen_model(const struct vms_session *s, uint32_t source);
/* The analysis of the last run (results valid until the session is freed). */
struct vms_analysis *vms_session_analysis(struct vms_session *s);

/* Counts of the last run; with a window (--from, --to), of the window's events only (those
 * before it, read for the state at its start, are not counted), and first/last are the
 * window's first and last events. A window that holds no time of the traces, --vcpu N that
 * no kept machine has, a --map to a thread no event of its host shows: the run fails with
 * VMS_ERR_USAGE (vmscope/filter.h), before any interval reaches a sink. */
uint64_t vms_session_events(const struct vms_session *s);               /* all events */
uint64_t vms_session_type_count(const struct vms_session *s, uint32_t source, uint32_t type);
uint64_t vms_session_backwards(const struct vms_session *s);            /* time inversions */
uint64_t vms_session_passes(const struct vms_session *s);  /* passes over the data so far */
uint64_t vms_session_first_ts(const struct vms_session *s);             /* reference ns */
uint64_t vms_session_last_ts(const struct vms_session *s);

/* Checkpoints: a windowed run (--from) computed from the last checkpoint before its start
 * instead of from the start of the traces, with the same result (lib/session/checkpoints.h).
 * record: the next analysis pass over the whole traces takes one every `every` events (0:
 * none), when every source can seek (trace.dat, CTF, simpletrace) and no Xen model runs; the readers then read
 * every record (no skip_unread). checkpoints: that pass's recording, NULL (*len 0) when none
 * was taken; valid until the session is freed or runs again. use: the recording of a session
 * of the same traces, options and model, for the windowed runs of this one (buf must outlive
 * it); 0, or <0 with err set when it is not one (another build, cut). A restore that finds
 * the recorded state does not fit fails the run with err set. restored: the events of the
 * last run's checkpoint (0: it read the traces from their start). */
void vms_session_record_checkpoints(struct vms_session *s, uint64_t every);
const void *vms_session_checkpoints(struct vms_session *s, size_t *len);
int vms_session_use_checkpoints(struct vms_session *s, const void *buf, size_t len,
				struct vms_error *err);
uint64_t vms_session_restored(const struct vms_session *s);
/* Use model m (built by vms_session_build_model of a session of the same traces and
 * options) instead of building one: the caller keeps it, and it must outlive the session.
 * A run writes its containment check into it (vms_sync_info). */
void vms_session_borrow_model(struct vms_session *s, struct vms_model *m);
/* The built model saved (vms_model_save: 0, or -1), and a saved one loaded instead of
 * building it (the bytes of a session of the same traces and options, such as the index's):
 * 0, or <0 with err set (not these traces', damaged). */
int vms_session_save_model(struct vms_session *s, FILE *f);
int vms_session_load_model(struct vms_session *s, const void *buf, size_t len,
			   struct vms_error *err);

/* Merge only: every event of every source in reference-time order, no analysis and no
 * model pass (info, dump). */
int vms_session_iterate(struct vms_session *s, vms_event_fn fn, void *ctx,
			struct vms_error *err);
/* From an event callback: end the pass under way after this event (dump --limit, or a
 * closed output). The counts of that pass then cover only what was read. */
void vms_session_stop(struct vms_session *s);

#ifdef __cplusplus
}
#endif
#endif
