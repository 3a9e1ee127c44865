/* The timeline export (vmscope/export.h), stage 1: the observer and the sinks the session
 * calls, in the thread that reads the traces. Each observation becomes a record of plain
 * values (export_rec.h), with what the model knows of the threads it names looked up here,
 * and goes to stage 2 (export.c) through a bounded queue to the export's own thread. The
 * guest threads' overlays are made in stage 2, from the records (the analysis is asked for
 * no thread interval: it runs no overlays here).
 *
 * Why a thread: the user waits for the command's wall-clock time, and every machine vmscope
 * runs on has two cores or more. Reading, merging and the state machine (what `report` does
 * too) stay in the caller's thread; making tracks, names, slices, protobuf or JSON bytes and
 * writing them (half as much work again as report's, and gigabytes written on a long trace)
 * goes to the other core. The queue is bounded (2 MiB): when stage 2 falls behind, stage 1
 * waits, so memory stays flat whatever the trace's length. The CPU time of the two together
 * is more than one thread's (the records, the hand-over, two busy cores sharing caches):
 * bench/bench_export.sh has the figures.
 *
 * VMS_EXPORT_THREADS=0 in the environment: no thread, stage 1 plays each record into stage 2
 * at once (the same records in the same order: the same bytes; for measurements and tests).
 * VMS_EXPORT_STATS=1: at the end, each stage's CPU time and how often each waited for the
 * other, on stderr (bench/bench_export.sh). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/spsc.h"
#include "export_rec.h"

#define BLOCK_SIZE (64 * 1024)
#define BLOCKS 32

struct vms_export {
	struct xback *b;
	const struct vms_model *m;   /* of the pass (the threads' names and pids) */
	struct vms_spsc *q;          /* NULL: unthreaded */
	struct vms_spsc_cursor qc;   /* stage 1's place in it */
	pthread_t th;
	bool running;                /* th is to be joined */
	atomic_bool cancel;          /* stage 2 drops what is left (the run failed) */
	uint64_t t_last;             /* the last event's time */
	double cpu2;                 /* stage 2's CPU time (s), when its thread ends */
	_Alignas(8) unsigned char scratch[XR_MAX];   /* unthreaded: the record being played */
};

/* ---- stage 2's thread ---- */

static void *stage2(void *arg)
{
	struct vms_export *x = arg;
	const unsigned char *p;
	size_t len;
	while ((p = vms_spsc_next(x->q, &len))) {
		if (!atomic_load_explicit(&x->cancel, memory_order_relaxed))
			for (size_t off = 0; off < len;)
				off += vms_xback_play(x->b, p + off);
		vms_spsc_release(x->q);
	}
	x->cpu2 = vms_thread_cpu_s();
	return NULL;
}

/* the end of the stream: stage 2 has played (or, cancelled, dropped) everything */
static void stop(struct vms_export *x)
{
	if (!x->running)
		return;
	double cpu1 = vms_thread_cpu_s();
	vms_spsc_close(x->q, &x->qc);
	pthread_join(x->th, NULL);
	x->running = false;
	if (getenv("VMS_EXPORT_STATS"))
		vms_spsc_print_stats(x->q, "export", "stage 1 (reading, state machine, records)",
				     cpu1, "stage 2 (tracks, encoding, writing)", x->cpu2);
}

/* ---- records ---- */

static inline void *rec_begin(struct vms_export *x, size_t n)
{
	return x->q ? vms_spsc_reserve(x->q, &x->qc, n) : x->scratch;
}

static inline void rec_end(struct vms_export *x, void *r)
{
	if (!x->q)
		vms_xback_play(x->b, r);
}

/* s cut to XR_COMM - 1 bytes, the rest NUL */
static void put_comm(char dst[XR_COMM], const char *s)
{
	size_t n = s ? strnlen(s, XR_COMM - 1) : 0;
	memcpy(dst, s, n);
	memset(dst + n, 0, XR_COMM - n);
}

static void on_vcpu_state(void *ctx, const struct vms_obs_vcpu_state *o)
{
	struct vms_export *x = ctx;
	struct xr_state *r = rec_begin(x, sizeof *r);
	*r = (struct xr_state){ .kind = XR_STATE, .machine = o->machine, .vcpu = o->vcpu,
				.state = (uint8_t)o->state, .isa = (uint8_t)o->isa,
				.layer = o->layer >= 0 && o->layer <= INT16_MAX ? (int16_t)o->layer
										: -1,
				.exit_reason = o->exit_reason, .host_tid = o->host_tid, .t = o->t };
	rec_end(x, r);
}

static void on_guest_switch(void *ctx, const struct vms_obs_guest_switch *o)
{
	struct vms_export *x = ctx;
	struct xr_switch *r = rec_begin(x, sizeof *r);
	*r = (struct xr_switch){ .kind = XR_SWITCH, .machine = o->machine, .vcpu = o->vcpu,
				 .next_tid = o->next_tid, .t = o->t };
	if (o->next_tid > 0) {   /* (the name of its track, if it is new) */
		put_comm(r->next_comm, o->next_comm);
		xr_put_thread(x->m, &r->next, o->machine, o->next_tid);
	}
	rec_end(x, r);
}

static void on_exit_begin(void *ctx, const struct vms_obs_exit *o)
{
	struct vms_export *x = ctx;
	struct xr_exit *r = rec_begin(x, sizeof *r);
	*r = (struct xr_exit){ .kind = XR_EXIT_BEGIN, .machine = o->machine, .vcpu = o->vcpu,
			       .isa = o->isa, .reason = o->reason, .host_cpu = o->host_cpu,
			       .t = o->t, .rip = o->guest_rip, .info1 = o->info1,
			       .info2 = o->info2 };
	rec_end(x, r);
}

static void on_exit_end(void *ctx, const struct vms_obs_exit *o)
{
	struct vms_export *x = ctx;
	struct xr_exit_end *r = rec_begin(x, sizeof *r);
	*r = (struct xr_exit_end){ .kind = XR_EXIT_END, .machine = o->machine, .vcpu = o->vcpu,
				   .how = (uint32_t)o->how, .t = o->t, .begin = o->begin };
	rec_end(x, r);
}

static void on_cpu_occupant(void *ctx, const struct vms_obs_cpu_occupant *o)
{
	struct vms_export *x = ctx;
	struct xr_occupant *r = rec_begin(x, sizeof *r);
	*r = (struct xr_occupant){ .kind = XR_OCCUPANT, .host = o->host, .t = o->t, .cpu = o->cpu,
				   .guest = o->guest, .vcpu = o->vcpu, .tid = o->tid };
	memcpy(r->comm, o->comm, XR_COMM);   /* (24 bytes, NUL-padded: observe.h) */
	rec_end(x, r);
}

static void on_instead(void *ctx, const struct vms_obs_vcpu_instead *o)
{
	struct vms_export *x = ctx;
	struct xr_instead *r = rec_begin(x, sizeof *r);
	*r = (struct xr_instead){ .kind = XR_INSTEAD, .machine = o->machine, .vcpu = o->vcpu,
				  .host = o->host, .tid = o->tid,
				  .unattributed = o->unattributed, .t = o->t };
	put_comm(r->comm, o->comm);
	if (o->tid > 0 && !o->unattributed)   /* (the name of its lane, if it is new) */
		xr_put_thread(x->m, &r->thr, o->host, o->tid);
	rec_end(x, r);
}

static void put_time(struct vms_export *x, uint32_t kind, uint64_t t)
{
	struct xr_time *r = rec_begin(x, sizeof *r);
	*r = (struct xr_time){ .kind = kind, .t = t };
	rec_end(x, r);
}

/* (every event of the analysed kinds: the end of a run that did not reach finish; a reader
 * may then leave out the records no analysis reads, as for report) */
static void on_event(void *ctx, const struct vms_event *ev, uint64_t t)
{
	struct vms_export *x = ctx;
	(void)ev;
	x->t_last = t;
}

static void on_start(void *ctx, uint64_t t0)
{
	put_time(ctx, XR_START, t0);
}

/* The end of a pass: stage 1 waits for stage 2 to catch up, since the session may change
 * or free the pass's model (whose machines' names stage 2 reads) as soon as this returns. */
static void on_finish(void *ctx, uint64_t t_end)
{
	struct vms_export *x = ctx;
	put_time(x, XR_FINISH, t_end);
	if (x->q)
		vms_spsc_drain(x->q, &x->qc);
}

/* Another pass: stage 2 is emptied (what it did is seen here, and it waits), then made
 * again for the model of the pass, here, while it waits. */
static void on_reset(void *ctx, const struct vms_model *model)
{
	struct vms_export *x = ctx;
	if (x->q)
		vms_spsc_drain(x->q, &x->qc);
	vms_xback_reset(x->b, model);
	x->m = model;
}

/* ---- life ---- */

static bool threads_wanted(void)
{
	const char *e = getenv("VMS_EXPORT_THREADS");
	return !e || strcmp(e, "0") != 0;
}

struct vms_export *vms_export_new(const struct vms_model *model, FILE *f,
				  const struct vms_export_opts *opts)
{
	struct vms_export *x = calloc(1, sizeof *x);
	if (!x)
		return NULL;
	atomic_init(&x->cancel, false);
	x->m = model;
	if (!(x->b = vms_xback_new(f, opts, model))) {
		free(x);
		return NULL;
	}
	/* no thread (none wanted, or none could be made): unthreaded, the same bytes */
	if (threads_wanted() && (x->q = vms_spsc_new(BLOCK_SIZE, BLOCKS))) {
		x->running = pthread_create(&x->th, NULL, stage2, x) == 0;
		if (!x->running) {
			vms_spsc_free(x->q);
			x->q = NULL;
		}
	}
	return x;
}

struct vms_observer vms_export_observer(struct vms_export *x)
{
	return (struct vms_observer){
		.ctx = x, .vcpu_state = on_vcpu_state, .guest_switch = on_guest_switch,
		.exit_begin = on_exit_begin, .exit_end = on_exit_end,
		.cpu_occupant = on_cpu_occupant, .vcpu_instead = on_instead, .event = on_event,
		.start = on_start, .finish = on_finish, .event_kinds_only = true,
		.reset = vms_xback_rewritable(x->b) ? on_reset : NULL,
	};
}

struct vms_sinks vms_export_sinks(struct vms_export *x)
{
	return (struct vms_sinks){ .ctx = x, .reset_with_observer = true, .intervals_only = true };
}

int vms_export_finish(struct vms_export *x)
{
	stop(x);   /* (stage 2's writes and failures are seen from here on) */
	/* a run that did not reach finish ends at its last event, here, stage 2 joined */
	return vms_xback_finish(x->b, x->t_last);
}

void vms_export_free(struct vms_export *x)
{
	if (!x)
		return;
	atomic_store(&x->cancel, true);   /* (a run that failed: nothing more is written) */
	stop(x);
	vms_spsc_free(x->q);
	vms_xback_free(x->b);
	free(x);
}
