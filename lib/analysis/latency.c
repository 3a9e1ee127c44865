/* Wake-up latency, decomposed (include/vmscope/latency.h): a consumer of the vCPU state
 * machine's observations only (vmscope/observe.h: a wait begins at guest_wakeup and ends at
 * the guest_switch that runs the thread); it never reads an event itself.
 *
 * Each vCPU keeps the history of its causes (what a waiting thread would be waiting for)
 * since its oldest pending wake-up; when the woken thread runs, [wakeup, run) is integrated
 * over that history, so the causes add up to the latency exactly. A HLT exit's states are
 * published when the halt ends (observe.h), before any later guest event of that vCPU, so the
 * history is complete when the thread runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "vmscope/latency.h"
#include "core/grow.h"

#define LT_HIST_MAX 8192    /* history entries per vCPU before the oldest are dropped:
                               bounded memory (latency.h) */
#define LT_TAIL 64          /* slowest wake-ups kept per thread for the tail's causes */

/* Where a guest thread is, as far as its vCPU's switches tell (thr below). Linux traces
 * sched_wakeup for a task that set itself to sleep but has not yet left its CPU (ttwu_runnable):
 * that task never waits, and a wait counted from there would run until its next real wake-up
 * is served. Like `perf sched latency`, only a thread not known to be on a CPU or its run queue
 * begins a wait at a wake-up. */
enum { LT_SLEEPING = 0, LT_RUNNING = 1, LT_RUNNABLE = 2 };
/* A thread's value in vms_latency.thr: where it is (above), and in the low half its index in
 * th[] + 1 (0: none yet; LT_TH_NONE: it could not be made, out of memory) */
#define LT_WHERE(x) ((uint32_t)((x) >> 32))
#define LT_TH(x) ((uint32_t)(x))
#define LT_TH_NONE UINT32_MAX
static inline void lt_set_where(uint64_t *x, uint32_t where)
{
	*x = (uint64_t)where << 32 | LT_TH(*x);
}

const char *vms_cause_name(enum vms_cause c)
{
	static const char *const n[VMS_CAUSE_COUNT] = { "guest-runqueue", "preempted", "exits",
							 "halted-wakeup", "unknown" };
	return (unsigned)c < VMS_CAUSE_COUNT ? n[c] : "?";
}

/* What a waiter waits for from t on. The culprit is kept as ids (formatted only for the
 * wake-ups' winners): this is written at every state change of a vCPU. */
struct lt_hist {
	uint64_t t;
	uint8_t cause;
	int32_t tid;               /* guest-runqueue: the guest thread (<= 0: idle); preempted:
	                              the host thread (-1 unknown) */
	uint32_t isa, reason;      /* exits and HLT: the exit (reason UINT32_MAX: not recorded) */
	int32_t layer;             /* the machine whose hypervisor or scheduler it is at, -1 */
	char comm[24];
};

struct lt_vcpu {
	uint32_t machine, vcpu;
	enum vms_vcpu_state state;
	int32_t exit_reason;
	uint32_t isa;
	int32_t layer, host;       /* the state's layer and the vCPU's host (observe.h) */
	int32_t gtid;
	char gcomm[24];
	int32_t instead_tid;
	char instead_comm[24];
	struct lt_hist *h;
	uint32_t n, cap;
	uint32_t pending;          /* wake-ups waiting on this vCPU */
	uint64_t dropped_before;   /* history before this time was dropped (cap reached) */
	uint64_t since;            /* the time of the last observation of this vCPU */
	bool untraced;             /* its guest has no trace: no wake-up of a guest thread can
	                              come, so nothing of it is followed (a Xen domain, a KVM
	                              guest seen from the host only) */
};

struct lt_tail {
	uint64_t latency;
	uint64_t ns[VMS_CAUSE_COUNT];
	uint8_t top;
	bool has_who;
	struct lt_hist who;        /* the top cause's culprit, named only at the end */
};

struct lt_thread {
	struct vms_latency_thread st;
	struct vms_dist *dist;
	bool pending;
	uint64_t tw;
	uint32_t vidx;
	int32_t waker;
	struct lt_tail tail[LT_TAIL];
	uint32_t nr_tail;
	uint32_t tail_min;         /* when full: the kept wake-up with the smallest latency */
};

struct vms_latency {
	const struct vms_model *model;
	vms_wakeup_fn fn;
	void *ctx;
	struct lt_vcpu *v;
	uint32_t nr_v;
	struct vms_keymap thr;     /* (machine, tid) -> LT_WHERE << 32 | LT_TH: where the guest's
	                              switches say it is (a wake-up of a thread running or
	                              runnable is no wait) and its thread index; one map, so that
	                              a switch or a wake-up looks each thread up once */
	struct lt_thread *th;
	uint32_t nr_th, cap_th;
	struct vms_latency_thread *out;
};

/* ---- what a waiting thread waits for, now ---- */
static void current(const struct lt_vcpu *v, struct lt_hist *e, uint64_t t)
{
	e->t = t;
	e->tid = -1;
	e->isa = e->reason = 0;
	e->layer = v->layer;
	e->comm[0] = '\0';
	switch (v->state) {
	case VMS_STATE_RUNNING:
	case VMS_STATE_IDLE:
		e->cause = VMS_CAUSE_GUEST_RUNQUEUE;
		e->tid = v->gtid;
		if (v->gtid > 0)
			memcpy(e->comm, v->gcomm, sizeof e->comm);
		break;
	case VMS_STATE_PREEMPTED:
		e->cause = VMS_CAUSE_PREEMPTED;
		e->tid = v->instead_tid;
		if (v->instead_tid >= 0)
			memcpy(e->comm, v->instead_comm, sizeof e->comm);
		break;
	case VMS_STATE_HALTED:
		e->cause = VMS_CAUSE_HALTED_WAKEUP;
		e->reason = UINT32_MAX - 1; /* the halt itself, not its exit's handling */
		break;
	case VMS_STATE_VMM: {
		bool known = v->exit_reason >= 0;
		bool hlt = known && vms_exit_is_halt(v->isa, (uint32_t)v->exit_reason);
		e->cause = hlt ? VMS_CAUSE_HALTED_WAKEUP : VMS_CAUSE_EXITS;
		e->isa = v->isa;
		e->reason = known ? (uint32_t)v->exit_reason : UINT32_MAX;
		break;
	}
	default:
		e->cause = VMS_CAUSE_UNKNOWN;
		break;
	}
}

/* A thread is its tid (its name is the one it had first): no string compare per change. */
static bool same_culprit(const struct lt_hist *a, const struct lt_hist *b)
{
	return a->cause == b->cause && a->tid == b->tid && a->isa == b->isa &&
	       a->reason == b->reason && a->layer == b->layer;
}

static void culprit_what(const struct lt_hist *e, char *buf, size_t len);

/* The culprit as the wake-up tells it: the guest thread, the host thread, the exit; of a
 * nested guest's vCPU (host: its L1) at the layer below, " at " that machine (L0). */
static void culprit_name(const struct vms_latency *l, int32_t host, const struct lt_hist *e,
			 char *buf, size_t len)
{
	culprit_what(e, buf, len);
	const struct vms_machine *mc;
	if (__builtin_expect(e->layer >= 0 && e->layer != host, 0) && buf[0] &&
	    (mc = vms_model_machine_c(l->model, (uint32_t)e->layer)) && mc->name) {
		size_t n = strlen(buf);
		snprintf(buf + n, len - n, " at %s", mc->name);
	}
}

static void culprit_what(const struct lt_hist *e, char *buf, size_t len)
{
	buf[0] = '\0';
	switch (e->cause) {
	case VMS_CAUSE_GUEST_RUNQUEUE:
		if (e->tid > 0)
			snprintf(buf, len, "%s (tid %d)", e->comm[0] ? e->comm : "?", e->tid);
		else
			snprintf(buf, len, "the guest's idle task");
		break;
	case VMS_CAUSE_PREEMPTED:
		if (e->tid >= 0)
			snprintf(buf, len, "host %s (tid %d)", e->comm[0] ? e->comm : "?", e->tid);
		else if (e->tid == VMS_TID_UNATTRIBUTED)
			snprintf(buf, len, "host: unattributed (> %d vCPUs waited)",
				 VMS_INSTEAD_MAX_WAITERS);
		break;
	case VMS_CAUSE_HALTED_WAKEUP:
	case VMS_CAUSE_EXITS: {
		if (e->reason == UINT32_MAX - 1) {
			snprintf(buf, len, "halted vCPU");
			break;
		}
		const char *nm = e->reason != UINT32_MAX ? vms_exit_reason_name(e->isa, e->reason) : NULL;
		if (nm)
			snprintf(buf, len, "exit:%s", nm);
		else if (e->reason != UINT32_MAX)
			snprintf(buf, len, "exit:%d", (int32_t)(e->reason & INT32_MAX));
		else
			snprintf(buf, len, "exit:not recorded");
		break;
	}
	default:
		break;
	}
}

/* The vCPU's cause may have changed at t: record it while someone waits on the vCPU. Without
 * waiters nothing is kept but the time (what holds from then on is the vCPU's state, which the
 * next wait's history begins with): most changes happen with nobody waiting. */
static __attribute__((noinline)) void note_waited(struct lt_vcpu *v, uint64_t t);

/* (inline: most changes find nobody waiting; the record itself out of line) */
static inline __attribute__((always_inline)) void note(struct vms_latency *l, uint32_t vidx,
						       uint64_t t)
{
	struct lt_vcpu *v = &l->v[vidx];
	v->since = t;
	if (v->pending && v->cap) /* (no history when out of memory) */
		note_waited(v, t);
}

/* (a full history: room made by growing it or dropping its older half, out of line) */
static __attribute__((noinline)) void note_full(struct lt_vcpu *v, uint64_t t);

static void note_waited(struct lt_vcpu *v, uint64_t t)
{
	if (__builtin_expect(v->n == v->cap, 0)) {
		note_full(v, t);
		return;
	}
	/* written in place, in the free slot h[n], and kept (n + 1) only when it is news */
	struct lt_hist *e = &v->h[v->n];
	current(v, e, t);
	if (!v->n)
		v->n = 1;
	else if (same_culprit(&v->h[v->n - 1], e))
		return;
	else if (v->h[v->n - 1].t == t)
		v->h[v->n - 1] = *e; /* a change at the same instant replaces */
	else
		v->n++;
}

static void note_full(struct lt_vcpu *v, uint64_t t)
{
	struct lt_hist e;
	current(v, &e, t);
	if (v->n && same_culprit(&v->h[v->n - 1], &e))
		return;
	if (v->cap >= LT_HIST_MAX) {
		/* bounded: drop the older half; waits reaching back there lose their start */
		uint32_t keep = v->n / 2;
		v->dropped_before = v->h[v->n - keep].t;
		memmove(v->h, v->h + (v->n - keep), keep * sizeof *v->h);
		v->n = keep;
	} else {
		uint32_t ncap = v->cap * 2;
		struct lt_hist *nh = realloc(v->h, ncap * sizeof *nh);
		if (!nh)
			return;
		v->h = nh;
		v->cap = ncap;
	}
	if (v->n && v->h[v->n - 1].t == t)
		v->h[v->n - 1] = e; /* a change at the same instant replaces */
	else
		v->h[v->n++] = e;
}

/* The thread of value x (of thr), NULL when it has none */
static inline struct lt_thread *thread_of(struct vms_latency *l, uint64_t x)
{
	uint32_t ix = LT_TH(x) - 1; /* (none: UINT32_MAX; LT_TH_NONE: beyond any nr_th) */
	return ix < l->nr_th ? &l->th[ix] : NULL;
}

/* an_copy_comm, returning the length copied: the name's bytes and its NUL, nothing after */
static inline size_t copy_comm_len(char dst[24], const char *src)
{
	size_t n = src ? strnlen(src, 23) : 0; /* (not a byte loop: at every guest switch) */
	memcpy(dst, src ? src : "", n);
	dst[n] = '\0';
	return n;
}

/* The thread of value *x, made when it has none (x is its value in thr) */
static struct lt_thread *thread_get(struct vms_latency *l, uint64_t *x, uint32_t machine,
				    int32_t tid)
{
	if (LT_TH(*x))
		return thread_of(l, *x);
	uint32_t where = LT_WHERE(*x);
	*x = (uint64_t)where << 32 | LT_TH_NONE; /* until it is made */
	if (l->nr_th == l->cap_th) {
		struct lt_thread *nt = vms_grow(l->th, &l->cap_th, sizeof *nt, 64);
		if (!nt)
			return NULL;
		l->th = nt;
	}
	struct lt_thread *th = &l->th[l->nr_th];
	memset(th, 0, sizeof *th);
	if (!(th->dist = vms_dist_new()))
		return NULL;
	l->nr_th++;
	*x = (uint64_t)where << 32 | l->nr_th;
	th->st.machine = machine;
	th->st.tid = tid;
	return th;
}

/* ---- the breakdown ---- */
/* Time per distinct culprit (by its first history entry). */
struct tally { const struct lt_hist *e; uint64_t ns; };

static void tally_add(struct tally *t, uint32_t *n, uint32_t max, const struct lt_hist *e,
		      uint64_t ns)
{
	for (uint32_t i = 0; i < *n; i++)
		if (same_culprit(t[i].e, e)) {
			t[i].ns += ns;
			return;
		}
	if (*n < max) {
		t[*n].e = e;
		t[(*n)++].ns = ns;
	}
}

/* The wake-up's slot among the thread's slowest kept (LT_TAIL: none): the smallest kept is
 * known, so a faster wake-up costs one compare. */
static inline uint32_t tail_slot(const struct lt_thread *th, uint64_t latency)
{
	if (th->nr_tail < LT_TAIL)
		return th->nr_tail;
	return th->tail[th->tail_min].latency < latency ? th->tail_min : LT_TAIL;
}

/* The wait ends: no one records into the vCPU's history for it any more. */
static inline void wait_done(struct lt_vcpu *v, struct lt_thread *th)
{
	th->pending = false;
	if (v->pending)
		v->pending--;
	if (!v->pending)
		v->n = 0; /* nobody waits: no history until the next wake-up (h[] stays as is) */
}

static void finish_wakeup(struct vms_latency *l, struct lt_thread *th, uint64_t tr)
{
	struct lt_vcpu *v = &l->v[th->vidx];
	uint64_t run = tr > th->tw ? tr : th->tw;
	uint32_t slot = tail_slot(th, run - th->tw);
	if (!l->fn && slot == LT_TAIL) {
		/* Nobody is told of this wake-up (report: no callback) and it is not among the
		 * thread's slowest: its breakdown would go nowhere but the distribution, which
		 * takes the latency alone. Most wake-ups end here, without the history's walk. */
		wait_done(v, th);
		vms_dist_add(th->dist, run - th->tw);
		return;
	}
	struct vms_wakeup w;
	memset(&w, 0, sizeof w);
	w.machine = th->st.machine;
	w.tid = th->st.tid;
	memcpy(w.comm, th->st.comm, sizeof w.comm);
	w.vcpu = v->vcpu;
	w.waker_vcpu = th->waker;
	w.wakeup = th->tw;
	w.run = run;
	w.below_layer = w.layer = -1;
	w.latency = w.run - w.wakeup;
	struct tally cul[VMS_CAUSE_COUNT][8], ex[16];
	uint32_t ncul[VMS_CAUSE_COUNT] = {0}, nex = 0;
	/* the part lost to the history's bound is unknown */
	uint64_t from = th->tw;
	if (v->dropped_before > from) {
		uint64_t lost = (v->dropped_before < w.run ? v->dropped_before : w.run) - from;
		w.ns[VMS_CAUSE_UNKNOWN] += lost;
		from += lost;
	}
	for (uint32_t i = 0; i < v->n; i++) {
		uint64_t a = v->h[i].t, b = i + 1 < v->n ? v->h[i + 1].t : w.run;
		if (a < from)
			a = from;
		if (b > w.run)
			b = w.run;
		if (i == 0 && v->h[0].t > from) /* nothing recorded before the first entry */
			w.ns[VMS_CAUSE_UNKNOWN] += (v->h[0].t < w.run ? v->h[0].t : w.run) - from;
		if (b <= a)
			continue;
		const struct lt_hist *e = &v->h[i];
		w.ns[e->cause] += b - a;
		if (__builtin_expect(e->layer >= 0 && e->layer != v->host, 0)) {
			w.below_ns[e->cause] += b - a;   /* a nested guest's, at L0 */
			w.below_layer = e->layer;
		}
		tally_add(cul[e->cause], &ncul[e->cause], 8, e, b - a);
		if (e->cause == VMS_CAUSE_EXITS)
			tally_add(ex, &nex, 16, e, b - a);
	}
	uint64_t sum = 0;
	for (int c = 0; c < VMS_CAUSE_COUNT; c++)
		sum += w.ns[c];
	if (sum < w.latency) /* no history at all: unknown */
		w.ns[VMS_CAUSE_UNKNOWN] += w.latency - sum;
	w.top = VMS_CAUSE_UNKNOWN;
	uint64_t best = 0;
	for (int c = 0; c < VMS_CAUSE_COUNT; c++)
		if (w.ns[c] > best) {
			best = w.ns[c];
			w.top = (enum vms_cause)c;
		}
	const struct lt_hist *who = NULL;
	best = 0;
	for (uint32_t i = 0; i < ncul[w.top]; i++)
		if (cul[w.top][i].ns > best) {
			best = cul[w.top][i].ns;
			who = cul[w.top][i].e;
		}
	/* the costliest exit reason */
	best = 0;
	for (uint32_t i = 0; i < nex; i++)
		if (ex[i].ns > best) {
			best = ex[i].ns;
			w.exit_isa = ex[i].e->isa;
			w.exit_reason = ex[i].e->reason;
		}
	if (who)
		w.layer = who->layer;
	wait_done(v, th);
	vms_dist_add(th->dist, w.latency);
	/* keep the slowest LT_TAIL */
	if (th->nr_tail < LT_TAIL)
		th->nr_tail++; /* (slot is the first free one) */
	if (slot < LT_TAIL) {
		struct lt_tail *k = &th->tail[slot];
		k->latency = w.latency;
		memcpy(k->ns, w.ns, sizeof w.ns);
		k->top = (uint8_t)w.top;
		k->has_who = who != NULL;
		if (who)
			k->who = *who;
		if (th->nr_tail == LT_TAIL) {
			th->tail_min = 0;
			for (uint32_t i = 1; i < LT_TAIL; i++)
				if (th->tail[i].latency < th->tail[th->tail_min].latency)
					th->tail_min = i;
		}
	}
	/* the history is the vCPU's: read before anyone records into it again */
	if (l->fn) {
		if (who)
			culprit_name(l, v->host, who, w.culprit, sizeof w.culprit);
		l->fn(l->ctx, &w);
	}
}

/* ---- observations ---- */
extern inline __attribute__((always_inline)) void an_latency_on_state(void *ctx, const struct vms_obs_vcpu_state *o)
{
	struct vms_latency *l = ctx;
	if (o->vidx >= l->nr_v || l->v[o->vidx].untraced)
		return;
	struct lt_vcpu *v = &l->v[o->vidx];
	v->state = o->state;
	v->exit_reason = o->exit_reason;
	v->isa = o->isa;
	v->layer = o->layer;
	v->host = o->host;
	note(l, o->vidx, o->t);
}

extern inline __attribute__((always_inline)) void an_latency_on_instead(void *ctx, const struct vms_obs_vcpu_instead *o)
{
	struct vms_latency *l = ctx;
	if (o->vidx >= l->nr_v || l->v[o->vidx].untraced)
		return;
	struct lt_vcpu *v = &l->v[o->vidx];
	v->instead_tid = o->unattributed ? VMS_TID_UNATTRIBUTED : o->tid;
	an_copy_comm24(v->instead_comm, o->comm);
	note(l, o->vidx, o->t);
}

extern inline __attribute__((always_inline)) void an_latency_on_exit_begin(void *ctx, const struct vms_obs_exit *o)
{
	struct vms_latency *l = ctx;
	if (o->vidx >= l->nr_v || l->v[o->vidx].untraced)
		return;
	struct lt_vcpu *v = &l->v[o->vidx];
	if (v->state == VMS_STATE_VMM) { /* a second exit with no entry between */
		v->exit_reason = (int32_t)(o->reason & INT32_MAX);
		v->isa = o->isa;
		note(l, o->vidx, o->t);
	}
}

extern inline __attribute__((always_inline)) void an_latency_on_guest_switch(void *ctx, const struct vms_obs_guest_switch *o)
{
	struct vms_latency *l = ctx;
	if (o->vidx >= l->nr_v)
		return;
	struct lt_vcpu *v = &l->v[o->vidx];
	uint64_t *x;
	if (o->prev_tid > 0 &&
	    (x = vms_keymap_put(&l->thr, vms_keymap_mt(o->machine, o->prev_tid), 0, NULL)))
		lt_set_where(x, an_prev_state_runnable(o->prev_state) ? LT_RUNNABLE : LT_SLEEPING);
	/* the name once, into the vCPU's (finish_wakeup reads neither it nor gtid) */
	size_t len = copy_comm_len(v->gcomm, o->next_comm);
	if (o->next_tid > 0 &&
	    (x = vms_keymap_put(&l->thr, vms_keymap_mt(o->machine, o->next_tid), 0, NULL))) {
		lt_set_where(x, LT_RUNNING);
		struct lt_thread *th = thread_of(l, *x);
		if (th) {
			if (len)
				memcpy(th->st.comm, v->gcomm, len + 1);
			if (th->pending)
				finish_wakeup(l, th, o->t);
		}
	}
	v->gtid = o->next_tid;
	note(l, o->vidx, o->t);
}

extern inline __attribute__((always_inline)) void an_latency_on_guest_wakeup(void *ctx, const struct vms_obs_guest_wakeup *o)
{
	struct vms_latency *l = ctx;
	if (o->vidx >= l->nr_v)
		return;
	uint64_t *x = vms_keymap_put(&l->thr, vms_keymap_mt(o->machine, o->tid), 0, NULL);
	if (!x || LT_WHERE(*x) != LT_SLEEPING)
		return; /* still on its CPU or its run queue: no wait begins */
	struct lt_thread *th = thread_get(l, x, o->machine, o->tid);
	if (!th || th->pending)
		return; /* a second wake-up before it runs: the wait began at the first */
	if (*o->comm)
		an_copy_comm(th->st.comm, o->comm);
	th->pending = true;
	th->tw = o->t;
	th->vidx = o->vidx;
	th->waker = o->waker_vcpu;
	struct lt_vcpu *v = &l->v[th->vidx];
	if (!v->pending++) {
		/* the first waiter: the history begins with what holds since the last observation */
		if (!v->cap) {
			if (!(v->h = malloc(8 * sizeof *v->h))) {
				v->n = 0;
				return;
			}
			v->cap = 8;
		}
		current(v, &v->h[0], v->since);
		v->n = 1;
	}
}

static int cmp_thread(const void *x, const void *y)
{
	const struct vms_latency_thread *a = x, *b = y;
	if (a->machine != b->machine)
		return a->machine < b->machine ? -1 : 1;
	return (a->tid > b->tid) - (a->tid < b->tid);
}

static void on_finish(void *ctx, uint64_t t_end)
{
	(void)t_end;
	struct vms_latency *l = ctx;
	l->out = calloc(l->nr_th ? l->nr_th : 1, sizeof *l->out);
	if (!l->out)
		return;
	for (uint32_t i = 0; i < l->nr_th; i++) {
		struct lt_thread *th = &l->th[i];
		struct vms_latency_thread *r = &l->out[i];
		*r = th->st;
		r->dist = th->dist;
		uint64_t p99 = vms_dist_percentile(th->dist, 99);
		uint64_t best = 0;
		for (uint32_t k = 0; k < th->nr_tail; k++) {
			if (th->tail[k].latency <= p99)
				continue;
			r->tail_count++;
			for (int c = 0; c < VMS_CAUSE_COUNT; c++)
				r->tail_ns[c] += th->tail[k].ns[c];
		}
		int topc = 0;
		for (int c = 0; c < VMS_CAUSE_COUNT; c++)
			if (r->tail_ns[c] > r->tail_ns[topc])
				topc = c;
		for (uint32_t k = 0; k < th->nr_tail; k++)
			if (th->tail[k].latency > p99 && th->tail[k].ns[topc] > best) {
				best = th->tail[k].ns[topc];
				r->tail_culprit[0] = '\0';
				if (th->tail[k].top == topc && th->tail[k].has_who)
					culprit_name(l, l->v[th->vidx].host, &th->tail[k].who,
						     r->tail_culprit, sizeof r->tail_culprit);
			}
	}
	qsort(l->out, l->nr_th, sizeof *l->out, cmp_thread);
}

/* Everything a pass accumulates, released (the layout too). */
static void clear(struct vms_latency *l)
{
	for (uint32_t i = 0; i < l->nr_th; i++)
		vms_dist_free(l->th[i].dist);
	for (uint32_t i = 0; l->v && i < l->nr_v; i++)
		free(l->v[i].h);
	free(l->th);
	free(l->out);
	free(l->v);
	vms_keymap_free(&l->thr);
	l->th = NULL;
	l->out = NULL;
	l->v = NULL;
	l->nr_th = l->cap_th = l->nr_v = 0;
	vms_keymap_init(&l->thr);
}

/* The model's vCPUs in the analysis stage's vidx order: guests by machine index, then vCPU. */
static int layout(struct vms_latency *l, const struct vms_model *model)
{
	l->model = model;
	if (!model)
		return 0;
	uint32_t nm = vms_model_nr_machines(model);
	for (uint32_t m = 0; m < nm; m++) {
		const struct vms_machine *mc = vms_model_machine_c(model, m);
		l->nr_v += (mc->role & VMS_ROLE_GUEST) ? mc->nr_vcpus : 0;
	}
	l->v = calloc(l->nr_v ? l->nr_v : 1, sizeof *l->v);
	if (!l->v) {
		clear(l);
		return -1;
	}
	struct lt_vcpu *v = l->v;
	for (uint32_t m = 0; m < nm; m++) {
		const struct vms_machine *mc = vms_model_machine_c(model, m);
		for (uint32_t n = 0; (mc->role & VMS_ROLE_GUEST) && n < mc->nr_vcpus; n++, v++) {
			v->machine = m;
			v->vcpu = n;
			v->gtid = v->instead_tid = v->exit_reason = -1;
			v->layer = v->host = -1;
			v->untraced = mc->source < 0;
		}
	}
	return 0;
}

static void on_reset(void *ctx, const struct vms_model *model)
{
	struct vms_latency *l = ctx;
	clear(l);
	layout(l, model); /* out of memory: no vCPU, nothing measured */
}

struct vms_latency *vms_latency_new(const struct vms_model *model, vms_wakeup_fn fn, void *ctx,
				    struct vms_observer *o)
{
	struct vms_latency *l = calloc(1, sizeof *l);
	if (!l)
		return NULL;
	l->fn = fn;
	l->ctx = ctx;
	vms_keymap_init(&l->thr);
	if (layout(l, model) < 0) {
		vms_latency_free(l);
		return NULL;
	}
	*o = (struct vms_observer){
		.ctx = l, .vcpu_state = an_latency_on_state, .vcpu_instead = an_latency_on_instead,
		.exit_begin = an_latency_on_exit_begin, .guest_switch = an_latency_on_guest_switch,
		.guest_wakeup = an_latency_on_guest_wakeup,
		.finish = on_finish, .reset = on_reset,
		/* a vCPU whose guest has no trace is "untraced": every callback returns at once */
		.traced_guests_only = true,
	};
	return l;
}

void vms_latency_free(struct vms_latency *l)
{
	if (!l)
		return;
	clear(l);
	vms_keymap_free(&l->thr);
	free(l);
}

uint32_t vms_latency_nr_threads(const struct vms_latency *l)
{
	return l->out ? l->nr_th : 0;
}

const struct vms_latency_thread *vms_latency_thread(const struct vms_latency *l, uint32_t i)
{
	return l->out && i < l->nr_th ? &l->out[i] : NULL;
}
