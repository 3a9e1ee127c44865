/* The rows accumulator of `vmscope serve` and `index` (vmscope/serve.h: vms_serve_rows_begin):
 * during the page's run, every row that ever has something (for /api/rows) and the rows'
 * summaries (serve_summary.c), from the vCPU and thread intervals the analysis streams, the
 * exits it publishes and a fused physical-CPU view (pcpu_view.c) of its occupants.
 *
 * In a thread of its own (the second stage). Why: the index build is `report` plus this
 * (about 0.4 of report's instructions again per event: the pCPU view and every interval into
 * its row's buckets), and the user waits for its wall-clock time. So, as the export does
 * (export_front.c), the callbacks in the reading thread only copy each observation into a
 * record of plain values (names copied, pointers not) and hand the records over in blocks
 * through a bounded queue (core/spsc.h: memory stays flat); the second stage plays them, in
 * order, into the same code that runs without a thread, so the rows and summaries are the
 * same bytes either way. The reading thread waits for the second stage only at a pass's
 * reset and finish (what the stage made is then visible to it, and the next pass's model is
 * given to the view there), and at the end.
 *
 * VMS_SERVE_ROWS_THREADS=0 in the environment: no thread, each record is played at once (the
 * same records in the same order; for tests and measurements). VMS_SERVE_ROWS_STATS=1: at the
 * end, each side's CPU time and how often each waited for the other, on stderr
 * (bench/bench_index.sh). */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/spsc.h"
#include "model/keymap.h"
#include "serve_rows.h"
#include "vmscope/pcpu_view.h"

#define BLOCK_SIZE (64 * 1024)
#define BLOCKS 16

/* Every interval of the run asks for its row twice (the rows' list, the summary's): a
 * direct-mapped cache of the rows seen answers both with one probe. */
#define ACC_CACHE 256u

struct acc_slot {
	uint64_t key1;           /* row key + 1, 0 empty */
	int32_t sum;             /* the summary's row, -1 not yet */
	bool listed;             /* in q's rows */
};

struct vms_serve_rows_acc {
	struct q q;
	struct vms_pcpu_view *pv;     /* made at the first reset (it needs the pass's model) */
	struct vms_observer pvo;
	struct vms_serve_summary_rec *sum;
	struct acc_slot cache[ACC_CACHE];
	/* another consumer's exit_end, called here (vms_serve_rows_tee_exits) */
	void (*exits_to)(void *ctx, const struct vms_obs_exit *o);
	void *exits_ctx;
	/* the second stage: NULL, unthreaded */
	struct vms_spsc *sq;
	struct vms_spsc_cursor qc;
	pthread_t th;
	bool running;
	uint64_t one[16];             /* unthreaded: the record being made, played at once */
	double cpu2;                  /* the second stage's CPU time (s), when it ends */
};

/* ---- what the second stage does (or the reading thread, unthreaded) ---- */

/* acc_row's slot c of row (k, m, b) made, listed (list) and its summary row found */
static __attribute__((noinline)) void acc_row_fill(struct vms_serve_rows_acc *a,
						   struct acc_slot *c, uint64_t key, uint8_t k,
						   uint32_t m, int32_t b, bool list)
{
	if (c->key1 != key + 1)
		*c = (struct acc_slot){ .key1 = key + 1, .sum = -1 };
	if (list && !c->listed)
		c->listed = sr_row_get(&a->q, k, m, b) != NULL;
	if (c->sum < 0)
		c->sum = vms_serve_summary_rec_row(a->sum, k, m, b);
}

/* The slot of row (k, a, b), its row listed (list: an interval's) and its summary row found
 * (when the recorder has started). Every interval of the run asks: a hit is tested inline. */
static inline struct acc_slot *acc_row(struct vms_serve_rows_acc *a, uint8_t k, uint32_t m,
				       int32_t b, bool list)
{
	uint64_t key = sr_row_key(k, m, b);
	struct acc_slot *c = &a->cache[vms_keymap_slot(key, 8)];
	if (__builtin_expect(c->key1 != key + 1 || (list && !c->listed) || c->sum < 0, 0))
		acc_row_fill(a, c, key, k, m, b, list);
	return c;
}

/* An interval of row (k, m, b): the row listed, the summary given it (an empty one only
 * lists its row, as the summary takes nothing of it) */
static void acc_ival(struct vms_serve_rows_acc *a, uint8_t k, uint32_t m, int32_t b,
		     const struct ival *v)
{
	if (v->e > v->s)
		vms_serve_summary_rec_ival_at(a->sum, acc_row(a, k, m, b, true)->sum, v);
	else
		sr_row_get(&a->q, k, m, b);
}

/* the fused view's intervals */
static void acc_pcpu(void *ctx, const struct vms_pcpu_interval *iv)
{
	struct ival v = sr_ival_pcpu(iv);
	acc_ival(ctx, ROW_PCPU, iv->host, (int32_t)iv->cpu, &v);
}

/* ---- the records ---- */

enum { RR_VCPU = 1, RR_THREAD, RR_OCCUPANT, RR_EXIT, RR_START, RR_FINISH };

struct rr_ival {                /* RR_VCPU, RR_THREAD: an ival without its name (a pCPU's) */
	uint32_t kind, m;
	int32_t b, va, vb, vc;
	uint32_t isa;
	uint64_t s, e;
};

struct rr_occupant {
	uint32_t kind, host, cpu;
	int32_t guest, vcpu, vidx, tid;
	uint64_t t;
	char comm[24];
};

struct rr_exit {
	uint32_t kind, pad;
	struct vms_obs_exit o;   /* (plain values: no pointer in it) */
};

struct rr_time {                /* RR_START, RR_FINISH */
	uint32_t kind;
	uint64_t t;
};

_Static_assert(sizeof(struct rr_ival) % 8 == 0 && sizeof(struct rr_occupant) % 8 == 0 &&
		       sizeof(struct rr_exit) % 8 == 0 && sizeof(struct rr_time) % 8 == 0,
	       "records keep the next one aligned");
_Static_assert(sizeof(struct rr_ival) <= 128 && sizeof(struct rr_occupant) <= 128 &&
		       sizeof(struct rr_exit) <= 128 && sizeof(struct rr_time) <= 128,
	       "a record fits the unthreaded buffer (vms_serve_rows_acc.one)");

/* Play one record; its size. (Inlined in the second stage's loop: a call per record cost
 * ~17 instructions of saved registers, callgrind.) */
static inline __attribute__((always_inline)) size_t play(struct vms_serve_rows_acc *a,
							  const void *p)
{
	switch (*(const uint32_t *)p) {
	case RR_VCPU:
	case RR_THREAD: {
		const struct rr_ival *r = p;
		struct ival v = { .s = r->s, .e = r->e, .a = r->va, .b = r->vb, .c = r->vc,
				  .isa = r->isa };
		acc_ival(a, r->kind == RR_VCPU ? ROW_VCPU : ROW_THREAD, r->m, r->b, &v);
		return sizeof *r;
	}
	case RR_OCCUPANT: {
		const struct rr_occupant *r = p;
		if (a->pv) {
			struct vms_obs_cpu_occupant o = { .host = r->host, .cpu = r->cpu, .t = r->t,
							  .guest = r->guest, .vcpu = r->vcpu,
							  .vidx = r->vidx, .tid = r->tid,
							  .comm = r->comm };
			vms_pcpu_view_occupant(a->pv, &o);
		}
		return sizeof *r;
	}
	case RR_EXIT: {
		const struct rr_exit *r = p;
		struct xslice x = sr_xslice(&r->o);
		vms_serve_summary_rec_exit_at(
			a->sum, acc_row(a, ROW_VCPU, r->o.machine, (int32_t)r->o.vcpu, false)->sum, &x);
		if (a->exits_to)
			a->exits_to(a->exits_ctx, &r->o);
		return sizeof *r;
	}
	case RR_START: {
		const struct rr_time *r = p;
		vms_serve_summary_rec_start(a->sum, r->t);
		return sizeof *r;
	}
	default: {   /* RR_FINISH: the view's last intervals */
		const struct rr_time *r = p;
		if (a->pv)
			a->pvo.finish(a->pvo.ctx, r->t);
		return sizeof *r;
	}
	}
}

/* The same, out of line (unthreaded: each record as it is made). */
static __attribute__((noinline)) void play_one(struct vms_serve_rows_acc *a, const void *p)
{
	play(a, p);
}

static void *stage2(void *arg)
{
	struct vms_serve_rows_acc *a = arg;
	const unsigned char *p;
	size_t len;
	while ((p = vms_spsc_next(a->sq, &len))) {
		for (size_t off = 0; off < len;)
			off += play(a, p + off);
		vms_spsc_release(a->sq);
	}
	a->cpu2 = vms_thread_cpu_s();
	return NULL;
}

/* The records' fields, from the observations. (A pCPU interval's name stays behind: only
 * the fused view's intervals, made in the second stage, have one.) */
static inline void fill_vcpu(void *p, const struct vms_vcpu_interval *iv)
{
	/* (sr_ival_vcpu's fields) */
	*(struct rr_ival *)p = (struct rr_ival){ .kind = RR_VCPU, .m = iv->machine,
						 .b = (int32_t)iv->vcpu, .va = (int32_t)iv->status,
						 .vb = (int32_t)iv->state, .s = iv->start,
						 .e = iv->end };
}

static inline void fill_thread(void *p, const struct vms_thread_interval *iv)
{
	/* (sr_ival_thread's fields) */
	*(struct rr_ival *)p = (struct rr_ival){ .kind = RR_THREAD, .m = iv->machine, .b = iv->tid,
						 .va = (int32_t)iv->reason, .vb = iv->exit_reason,
						 .vc = iv->host_tid, .isa = iv->isa, .s = iv->start,
						 .e = iv->end };
}

static inline void fill_occupant(void *p, const struct vms_obs_cpu_occupant *o)
{
	struct rr_occupant *r = p;
	*r = (struct rr_occupant){ .kind = RR_OCCUPANT, .host = o->host, .cpu = o->cpu,
				   .guest = o->guest, .vcpu = o->vcpu, .vidx = o->vidx,
				   .tid = o->tid, .t = o->t };
	memcpy(r->comm, o->comm, sizeof r->comm);   /* (24 bytes, NUL-padded: observe.h) */
}

static inline void fill_exit(void *p, const struct vms_obs_exit *o)
{
	struct rr_exit *r = p;
	r->kind = RR_EXIT;
	memcpy(&r->o, o, sizeof r->o);
}

/* Room for n bytes in the queue's block being filled (never unthreaded: the cursor stays
 * empty); else put_slow. The callers write their record there directly (put_take), and their
 * common path calls nothing, so it saves no registers (a record built on the stack and
 * copied over, then a call that could be made, cost ~1/3 of the tee's instructions in the
 * reading thread: callgrind). */
static inline bool put_fits(const struct vms_serve_rows_acc *a, size_t n)
{
	return (size_t)(a->qc.end - a->qc.cur) >= n;
}

static inline void *put_take(struct vms_serve_rows_acc *a, size_t n)
{
	unsigned char *p = a->qc.cur;
	a->qc.cur = p + n;
	/* the lines a few records on, for writing: the second stage read them last, from its
	 * core's cache, and a write that must first take them back waits for it (perf: the
	 * records were 12 % of the reading thread's samples on the 10 M pair, for ~5 % of its
	 * instructions; a prefetch never faults, past the block's end too). (Non-temporal
	 * stores were tried: the index build 1.5x slower.) */
	__builtin_prefetch(p + 512, 1, 0);
	return p;
}

/* The record of kind k from observation obs (RR_START, RR_FINISH: a struct rr_time) where
 * put_fits found no room: in the queue's next block, or (unthreaded) played at once. */
static __attribute__((noinline)) void put_slow(struct vms_serve_rows_acc *a, uint32_t k,
					       const void *obs)
{
	size_t n = k == RR_VCPU || k == RR_THREAD ? sizeof(struct rr_ival) :
		   k == RR_OCCUPANT ? sizeof(struct rr_occupant) :
		   k == RR_EXIT ? sizeof(struct rr_exit) : sizeof(struct rr_time);
	void *p = a->sq ? vms_spsc_reserve(a->sq, &a->qc, n) : a->one;
	if (k == RR_VCPU)
		fill_vcpu(p, obs);
	else if (k == RR_THREAD)
		fill_thread(p, obs);
	else if (k == RR_OCCUPANT)
		fill_occupant(p, obs);
	else if (k == RR_EXIT)
		fill_exit(p, obs);
	else
		memcpy(p, obs, n);
	if (a->sq)
		__builtin_prefetch((unsigned char *)p + 512, 1, 0);
	else
		play_one(a, a->one);
}

/* The second stage has played everything given so far (its work is visible here). */
static void catch_up(struct vms_serve_rows_acc *a)
{
	if (a->running)
		vms_spsc_drain(a->sq, &a->qc);
}

/* ---- the reading thread's side: the sinks and the observer ---- */

/* A sink or observer callback that puts its observation's record of kind K (struct REC) */
#define PUT_SINK(NAME, OBS, K, REC, FILL)                                  \
	static void NAME(void *ctx, const OBS *o)                          \
	{                                                                  \
		struct vms_serve_rows_acc *a = ctx;                        \
		if (__builtin_expect(!put_fits(a, sizeof(REC)), 0))        \
			put_slow(a, K, o);                                 \
		else                                                       \
			FILL(put_take(a, sizeof(REC)), o);                 \
	}

PUT_SINK(rows_vcpu, struct vms_vcpu_interval, RR_VCPU, struct rr_ival, fill_vcpu)
PUT_SINK(rows_thread, struct vms_thread_interval, RR_THREAD, struct rr_ival, fill_thread)
PUT_SINK(rows_occupant, struct vms_obs_cpu_occupant, RR_OCCUPANT, struct rr_occupant,
	 fill_occupant)
PUT_SINK(rows_exit, struct vms_obs_exit, RR_EXIT, struct rr_exit, fill_exit)

static void put_time(struct vms_serve_rows_acc *a, uint32_t kind, uint64_t t)
{
	struct rr_time r = { .kind = kind, .t = t };
	put_slow(a, kind, &r);
}

static void rows_start(void *ctx, uint64_t t0)
{
	put_time(ctx, RR_START, t0);
}

static void rows_finish(void *ctx, uint64_t t_end)
{
	struct vms_serve_rows_acc *a = ctx;
	put_time(a, RR_FINISH, t_end);
	catch_up(a);
}

/* A new pass (the checked single pass run again with the model its events gave): what the
 * last one gave is taken back, and the view laid out for this pass's model. */
static void rows_reset(void *ctx, const struct vms_model *m)
{
	struct vms_serve_rows_acc *a = ctx;
	catch_up(a);
	memset(a->q.rows, 0, MAX_ROWS * sizeof *a->q.rows);
	memset(a->q.hash, 0, 2 * MAX_ROWS * sizeof *a->q.hash);
	a->q.nr_rows = 0;
	a->q.full = a->q.oom = false;
	memset(a->cache, 0, sizeof a->cache);
	struct vms_serve_summary_rec *sum = vms_serve_summary_rec_new();
	if (sum) {
		vms_serve_summary_rec_free(a->sum);
		a->sum = sum;
	} else {
		vms_serve_summary_rec_fail(a->sum);   /* (no summary rather than a wrong one) */
	}
	if (!a->pv) {
		a->pv = vms_pcpu_view_new(m, acc_pcpu, a);
		if (a->pv)
			a->pvo = vms_pcpu_view_observer(a->pv);
	} else if (vms_pcpu_view_reset(a->pv, m) < 0) {
		vms_pcpu_view_free(a->pv);
		a->pv = NULL;
	}
	if (!a->pv)
		vms_serve_summary_rec_fail(a->sum);   /* (no pCPU rows: no summary either) */
}

static bool threaded(void)
{
	const char *e = getenv("VMS_SERVE_ROWS_THREADS");
	return !(e && e[0] == '0' && !e[1]);
}

struct vms_serve_rows_acc *vms_serve_rows_begin(struct vms_session *s, struct vms_sinks *sinks,
						struct vms_error *err)
{
	struct vms_serve_rows_acc *a = calloc(1, sizeof *a);
	if (!a)
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory"), NULL;
	a->q.px = 1;
	a->q.rows = calloc(MAX_ROWS, sizeof *a->q.rows);
	a->q.hash = calloc(2 * MAX_ROWS, sizeof *a->q.hash);
	a->sum = vms_serve_summary_rec_new();
	if (!a->q.rows || !a->q.hash || !a->sum)
		goto nomem;
	if (threaded()) {
		if (!(a->sq = vms_spsc_new(BLOCK_SIZE, BLOCKS)))
			goto nomem;
		if (pthread_create(&a->th, NULL, stage2, a) != 0) {
			vms_spsc_free(a->sq);   /* (no thread: the records are played at once) */
			a->sq = NULL;
		} else {
			a->running = true;
		}
	}
	/* (every pass starts with a reset, which lays the view out for its model; a consumer
	 * of the occupants also keeps the readers from leaving records out, as it must) */
	struct vms_observer xo = { .ctx = a, .start = rows_start, .exit_end = rows_exit,
				   .cpu_occupant = rows_occupant, .finish = rows_finish,
				   .reset = rows_reset };
	if (vms_session_observe(s, &xo) != 0)
		goto nomem;
	*sinks = (struct vms_sinks){ .ctx = a, .vcpu_interval = rows_vcpu,
				     .thread_interval = rows_thread, .reset_with_observer = true };
	return a;
nomem:
	vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	vms_serve_rows_free(a);
	return NULL;
}

void vms_serve_rows_free(struct vms_serve_rows_acc *a)
{
	if (!a)
		return;
	if (a->running) {
		double cpu1 = vms_thread_cpu_s();
		vms_spsc_close(a->sq, &a->qc);
		pthread_join(a->th, NULL);
		if (getenv("VMS_SERVE_ROWS_STATS"))
			vms_spsc_print_stats(a->sq, "rows", "the reading thread", cpu1,
					     "the rows' thread", a->cpu2);
	}
	vms_spsc_free(a->sq);
	vms_pcpu_view_free(a->pv);
	vms_serve_summary_rec_free(a->sum);
	free(a->q.rows);
	free(a->q.hash);
	free(a);
}

void vms_serve_rows_tee_exits(struct vms_serve_rows_acc *a,
			      void (*fn)(void *ctx, const struct vms_obs_exit *o), void *ctx)
{
	a->exits_to = fn;
	a->exits_ctx = ctx;
}

int vms_serve_rows_write_summary(struct vms_serve_rows_acc *a, struct vms_session *s, FILE *f)
{
	catch_up(a);
	return vms_serve_summary_rec_write(a->sum, vms_session_events(s), vms_session_model(s), f);
}

void vms_serve_rows_write(struct vms_serve_rows_acc *a, struct vms_session *s, FILE *f)
{
	catch_up(a);
	struct q *qp = &a->q;
	struct vms_model *m = vms_session_model(s);
	qsort(qp->rows, qp->nr_rows, sizeof *qp->rows, sr_row_cmp);
	struct vms_analysis *an = vms_session_analysis(s);
	fprintf(f, "{\"first\":%" PRIu64 ",\"last\":%" PRIu64 ",\"events\":%" PRIu64
		",\"rows_truncated\":%s,\"rows\":[", vms_session_first_ts(s), vms_session_last_ts(s),
		vms_session_events(s), qp->full ? "true" : "false");
	for (uint32_t i = 0; i < qp->nr_rows; i++) {
		const struct row *r = &qp->rows[i];
		char id[48], label[160];
		sr_row_id(id, sizeof id, r->kind, r->a, r->b);
		const char *mn = sr_machine_name(m, r->a);
		const char *comm = "";
		if (r->kind == ROW_THREAD)
			for (uint32_t g = 0; an && g < vms_analysis_nr_gthreads(an); g++) {
				const struct vms_gthread_stats *gs = vms_analysis_gthread(an, g);
				if (gs->machine == r->a && gs->tid == r->b)
					comm = gs->comm;
			}
		if (r->kind == ROW_VCPU)
			snprintf(label, sizeof label, "%s vCPU %d", mn, r->b);
		else if (r->kind == ROW_PCPU)
			snprintf(label, sizeof label, "%s CPU %d", mn, r->b);
		else
			snprintf(label, sizeof label, "%s %.23s %d", mn, comm, r->b);
		fprintf(f, "%s{\"id\":\"%s\",\"kind\":\"%s\",", i ? "," : "", id,
			r->kind == ROW_VCPU ? "vcpu" : r->kind == ROW_PCPU ? "pcpu" : "thread");
		sr_put_str(f, "machine", mn);
		fprintf(f, ",\"%s\":%d,", r->kind == ROW_VCPU ? "vcpu" : r->kind == ROW_PCPU ? "cpu"
			: "tid", r->b);
		if (r->kind == ROW_THREAD) {
			sr_put_str(f, "comm", comm);
			fputc(',', f);
		}
		sr_put_str(f, "label", label);
		fputc('}', f);
	}
	fputs("]}\n", f);
}
