/* Guest threads (docs/vm-analysis.md §4): a guest thread that is running from the guest's
 * point of view is in fact stopped whenever its vCPU has the VMM or PREEMPTED flag. A
 * consumer of the state machine's observations.
 *
 * Each vCPU's time is cut into segments over which nothing the overlays look at changes:
 * (guest thread current on the vCPU, shown state, exit reason when VMM, host thread that
 * ran instead). When a segment closes, its time goes to the guest thread's totals (running /
 * vmm / preempted / halted, and per exit reason) and an overlay interval is streamed for the
 * stopped states. Overlays are only for real threads (tid > 0): the idle task being
 * "halted" is what idle means. */
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "core/grow.h"
#include "vmscope/overlays.h"

/* Per guest thread totals */
struct ov_gthread {
	struct vms_gthread_stats st;
	uint32_t cap_reasons;
	uint32_t last_reason;      /* index of the last reason row used */
	/* row + 1 by reason % 64 (0 none; rows past 254 not kept): a thread's exits alternate
	 * a few reasons, which `last_reason` misses, and each has a slot (an_exit_table.near) */
	uint8_t near[64];
};

struct ov_segment {
	uint64_t start;
	enum vms_vcpu_state state;
	int32_t gtid;
	int32_t gidx;              /* its index in gthreads, -1 none (no lookup per event) */
	int32_t exit_reason;       /* VMM: the pending exit's reason, else -1 */
	uint32_t isa;
	int32_t host_tid;          /* who ran instead (see vms_thread_interval) */
};

struct ov_vcpu {
	/* what the observations said last */
	enum vms_vcpu_state state;
	int32_t gtid, gidx;
	int32_t exit_reason;
	uint32_t isa;
	int32_t host_tid;          /* the vCPU's own thread */
	int32_t instead_tid;       /* preempted/halted: who runs where it left */
	struct ov_segment seg;
};

struct an_overlays {
	const struct an_layout *L;
	struct vms_sinks sinks;
	struct ov_vcpu *v;
	struct vms_keymap gthread_idx; /* (machine, tid) -> index in gthreads */
	struct vms_keymap reason_idx;  /* (gthread index, isa, reason) -> its reasons row */
	struct ov_gthread *gthreads;
	uint32_t nr_gthreads, cap_gthreads;
	struct vms_gthread_stats *gstats; /* results */
};

static struct ov_gthread *gthread_get(struct an_overlays *ov, uint32_t machine, int32_t tid)
{
	bool inserted;
	uint64_t *idx = vms_keymap_put(&ov->gthread_idx, vms_keymap_mt(machine, tid),
				       ov->nr_gthreads, &inserted);
	if (!idx)
		return NULL;
	if (!inserted)
		return *idx < ov->nr_gthreads ? &ov->gthreads[*idx] : NULL;
	if (ov->nr_gthreads == ov->cap_gthreads) {
		struct ov_gthread *ng = vms_grow(ov->gthreads, &ov->cap_gthreads, sizeof *ng, 64);
		if (!ng) {
			*idx = UINT32_MAX; /* never a valid index */
			return NULL;
		}
		ov->gthreads = ng;
	}
	struct ov_gthread *g = &ov->gthreads[ov->nr_gthreads++];
	memset(g, 0, sizeof *g);
	g->st.machine = machine;
	g->st.tid = tid;
	return g;
}

static __attribute__((noinline)) struct vms_gthread_reason *
reason_row_find(struct an_overlays *ov, uint32_t gidx, uint32_t isa, uint32_t reason)
{
	struct ov_gthread *g = &ov->gthreads[gidx];
	uint32_t i = an_reason_find(&ov->reason_idx, gidx, isa, reason);
	for (uint32_t k = 0; i == AN_REASON_UNINDEXED && k < g->st.nr_reasons; k++)
		if (g->st.reasons[k].isa == isa && g->st.reasons[k].reason == reason)
			i = k;
	if (i < g->st.nr_reasons) {
		g->last_reason = i;
		if (i < 255)
			g->near[reason & 63] = (uint8_t)(i + 1);
		return &g->st.reasons[i];
	}
	if (g->st.nr_reasons == g->cap_reasons) {
		struct vms_gthread_reason *nr =
			vms_grow(g->st.reasons, &g->cap_reasons, sizeof *nr, 4);
		if (!nr)
			return NULL;
		g->st.reasons = nr;
	}
	if (i == UINT32_MAX && !an_reason_add(&ov->reason_idx, gidx, isa, reason, g->st.nr_reasons))
		return NULL;
	i = g->st.nr_reasons++;
	g->last_reason = i;
	if (i < 255)
		g->near[reason & 63] = (uint8_t)(i + 1);
	g->st.reasons[i] = (struct vms_gthread_reason){ .isa = isa, .reason = reason };
	return &g->st.reasons[i];
}

/* The row of (isa, reason) in guest thread gidx's table, made when new (NULL: out of
 * memory). Inline, the row used last and the one of its slot in `near`: an exit's beginning
 * counts it and its segment's close adds its time, so nearly every lookup finds it there
 * (a call each cost ~20 instructions of ~35, 0.56 M of them on a 1 M-event pair). */
static inline struct vms_gthread_reason *reason_row(struct an_overlays *ov, uint32_t gidx,
						    uint32_t isa, uint32_t reason)
{
	struct ov_gthread *g = &ov->gthreads[gidx];
	struct vms_gthread_reason *r = g->st.reasons;
	if (g->last_reason < g->st.nr_reasons && r[g->last_reason].isa == isa &&
	    r[g->last_reason].reason == reason)
		return &r[g->last_reason];
	uint32_t j = (uint32_t)g->near[reason & 63] - 1;
	if (j < g->st.nr_reasons && r[j].isa == isa && r[j].reason == reason) {
		g->last_reason = j;
		return &r[j];
	}
	return reason_row_find(ov, gidx, isa, reason);
}

static bool is_overlay(enum vms_vcpu_state s)
{
	return s == VMS_STATE_VMM || s == VMS_STATE_PREEMPTED || s == VMS_STATE_HALTED;
}

/* (inline in refresh_cut: nearly every state change closes a segment; refresh_cut itself
 * inline in its four callers cost more than the call) */
static inline __attribute__((always_inline)) void segment_close(struct an_overlays *ov,
								   uint32_t vidx, uint64_t t)
{
	struct ov_segment *s = &ov->v[vidx].seg;
	if (t <= s->start)
		return;
	uint64_t d = t - s->start;
	if (s->gtid > 0) {
		struct ov_gthread *g = s->gidx >= 0 && (uint32_t)s->gidx < ov->nr_gthreads
					       ? &ov->gthreads[s->gidx] : NULL;
		if (g) {
			switch (s->state) {
			case VMS_STATE_RUNNING: g->st.ns_running += d; break;
			case VMS_STATE_VMM: {
				g->st.ns_vmm += d;
				if (ov->sinks.intervals_only)   /* (no reasons table) */
					break;
				struct vms_gthread_reason *r =
					reason_row(ov, (uint32_t)s->gidx, s->isa,
						   (uint32_t)s->exit_reason);
				if (r && s->exit_reason >= 0)
					r->ns += d;
				break;
			}
			case VMS_STATE_PREEMPTED: g->st.ns_preempted += d; break;
			case VMS_STATE_HALTED: g->st.ns_halted += d; break;
			default: break;
			}
		}
		if (is_overlay(s->state) && ov->sinks.thread_interval) {
			struct vms_thread_interval iv = {
				.machine = ov->L->v[vidx].machine, .tid = s->gtid,
				.vcpu = ov->L->v[vidx].vcpu, .start = s->start, .end = t,
				.reason = s->state == VMS_STATE_VMM ? VMS_OVERLAY_VMM
					  : s->state == VMS_STATE_PREEMPTED ? VMS_OVERLAY_PREEMPTED
					  : VMS_OVERLAY_HALTED,
				.exit_reason = s->state == VMS_STATE_VMM ? s->exit_reason : -1,
				.isa = s->state == VMS_STATE_VMM ? s->isa : 0,
				.host_tid = s->host_tid,
			};
			ov->sinks.thread_interval(ov->sinks.ctx, &iv);
		}
	}
	s->start = t;
}

/* After any observation about the vCPU: cut a segment when something it looks at changed. */
static void refresh_cut(struct an_overlays *ov, uint32_t vidx, uint64_t t)
{
	struct ov_vcpu *v = &ov->v[vidx];
	enum vms_vcpu_state state = v->state;
	int32_t exit_reason = -1, host_tid = -1;
	uint32_t isa = 0;
	if (state == VMS_STATE_VMM) {
		exit_reason = v->exit_reason;
		isa = v->isa;
		host_tid = v->host_tid;
	} else if (state == VMS_STATE_PREEMPTED || state == VMS_STATE_HALTED) {
		host_tid = v->instead_tid;
	}
	struct ov_segment *s = &v->seg;
	if (state == s->state && v->gtid == s->gtid && exit_reason == s->exit_reason &&
	    isa == s->isa && host_tid == s->host_tid)
		return;
	segment_close(ov, vidx, t);
	if (t > s->start)
		s->start = t;
	*s = (struct ov_segment){ .start = s->start, .state = state, .gtid = v->gtid,
				  .gidx = v->gidx, .exit_reason = exit_reason, .isa = isa,
				  .host_tid = host_tid };
}

/* refresh_cut, but first (inline, in every observation) the common case of a guest with no
 * trace of its own (all of a Xen host's): no guest thread before or after, so a segment
 * without one is neither counted nor streamed, and what it was is never read; only its start
 * moves, as a close would move it */
static inline void refresh(struct an_overlays *ov, uint32_t vidx, uint64_t t)
{
	struct ov_vcpu *v = &ov->v[vidx];
	if (v->gtid <= 0 && v->seg.gtid <= 0) {
		if (t > v->seg.start)
			v->seg.start = t;
		v->seg.gtid = v->gtid;
		return;
	}
	refresh_cut(ov, vidx, t);
}

static void on_start(void *ctx, uint64_t t0)
{
	struct an_overlays *ov = ctx;
	for (uint32_t i = 0; i < ov->L->nr_v; i++)
		ov->v[i].seg.start = t0;
}

void an_overlays_on_state(void *ctx, const struct vms_obs_vcpu_state *o)
{
	struct an_overlays *ov = ctx;
	struct ov_vcpu *v = &ov->v[o->vidx];
	v->state = o->state;
	v->exit_reason = o->exit_reason;
	v->isa = o->isa;
	v->host_tid = o->host_tid;
	if (o->state != VMS_STATE_PREEMPTED && o->state != VMS_STATE_HALTED)
		v->instead_tid = -1;
	refresh(ov, o->vidx, o->t);
}

void an_overlays_on_instead(void *ctx, const struct vms_obs_vcpu_instead *o)
{
	struct an_overlays *ov = ctx;
	ov->v[o->vidx].instead_tid = o->unattributed ? VMS_TID_UNATTRIBUTED : o->tid;
	refresh(ov, o->vidx, o->t);
}

extern inline __attribute__((always_inline)) void an_overlays_on_guest_switch(void *ctx, const struct vms_obs_guest_switch *o)
{
	struct an_overlays *ov = ctx;
	struct ov_vcpu *v = &ov->v[o->vidx];
	v->gtid = o->next_tid;
	v->gidx = -1;
	if (v->gtid > 0) {
		struct ov_gthread *g = gthread_get(ov, o->machine, v->gtid);
		if (g) {
			v->gidx = (int32_t)(g - ov->gthreads);
			if (o->next_comm && *o->next_comm)
				an_copy_comm(g->st.comm, o->next_comm);
		}
	}
	refresh(ov, o->vidx, o->t);
}

/* A kvm_exit while a guest thread is current on the vCPU: one more exit of that reason. */
extern inline __attribute__((always_inline)) void an_overlays_on_exit_begin(void *ctx, const struct vms_obs_exit *o)
{
	struct an_overlays *ov = ctx;
	struct ov_vcpu *v = &ov->v[o->vidx];
	/* a second exit with no entry between (lost events) changes the reason without a
	 * change of state */
	v->exit_reason = (int32_t)(o->reason & INT32_MAX);
	v->isa = o->isa;
	refresh(ov, o->vidx, o->t);
	if (v->gidx < 0 || (uint32_t)v->gidx >= ov->nr_gthreads || ov->sinks.intervals_only)
		return;
	struct vms_gthread_reason *r = reason_row(ov, (uint32_t)v->gidx, o->isa, o->reason);
	if (r)
		r->count++;
}

/* An exit closed by a gap: what the thread does until its next entry is not known. */
void an_overlays_on_exit_end(void *ctx, const struct vms_obs_exit *o)
{
	struct an_overlays *ov = ctx;
	if (o->how == VMS_EXIT_ENDED)
		return;
	ov->v[o->vidx].exit_reason = -1;
	ov->v[o->vidx].isa = 0;
	refresh(ov, o->vidx, o->t);
}

static void on_finish(void *ctx, uint64_t t_end)
{
	struct an_overlays *ov = ctx;
	for (uint32_t i = 0; i < ov->L->nr_v; i++)
		segment_close(ov, i, t_end);
}

struct an_overlays *an_overlays_new(const struct an_layout *L, const struct vms_sinks *sinks,
				    struct vms_observer *o)
{
	struct an_overlays *ov = calloc(1, sizeof *ov);
	if (!ov)
		return NULL;
	ov->L = L;
	if (sinks)
		ov->sinks = *sinks;
	vms_keymap_init(&ov->gthread_idx);
	vms_keymap_init(&ov->reason_idx);
	ov->v = calloc(L->nr_v ? L->nr_v : 1, sizeof *ov->v);
	if (!ov->v) {
		an_overlays_free(ov);
		return NULL;
	}
	for (uint32_t i = 0; i < L->nr_v; i++) {
		struct ov_vcpu *v = &ov->v[i];
		v->gtid = v->gidx = -1;
		v->exit_reason = v->host_tid = v->instead_tid = -1;
		v->seg = (struct ov_segment){ .state = VMS_STATE_UNKNOWN, .gtid = -1, .gidx = -1,
					      .exit_reason = -1, .host_tid = -1 };
	}
	*o = (struct vms_observer){
		.ctx = ov, .start = on_start, .vcpu_state = an_overlays_on_state,
		.vcpu_instead = an_overlays_on_instead, .guest_switch = an_overlays_on_guest_switch,
		.exit_begin = an_overlays_on_exit_begin, .exit_end = an_overlays_on_exit_end,
		.finish = on_finish,
		/* Without a guest that has a trace of its own no guest thread is ever current on
		 * a vCPU (guest_switch comes from guest traces only): every segment would be
		 * without one, neither counted nor streamed, and the four calls per vCPU change
		 * would be for nothing (2.6 M of report's 60.0 M instructions on
		 * xen/xentrace.bin): vms_analysis_observe then subscribes none of them */
		.traced_guests_only = true,
	};
	return ov;
}

static int cmp_reason(const void *x, const void *y)
{
	const struct vms_gthread_reason *a = x, *b = y;
	if (a->ns != b->ns)
		return a->ns > b->ns ? -1 : 1;
	if (a->isa != b->isa)
		return a->isa < b->isa ? -1 : 1;
	return a->reason < b->reason ? -1 : a->reason > b->reason;
}

static int cmp_gthread(const void *x, const void *y)
{
	const struct vms_gthread_stats *a = x, *b = y;
	if (a->machine != b->machine)
		return a->machine < b->machine ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

int an_overlays_results(struct an_overlays *ov, const struct vms_gthread_stats **out,
			uint32_t *n)
{
	*out = NULL;
	*n = 0;
	if (!ov->gstats) {
		ov->gstats = malloc((ov->nr_gthreads ? ov->nr_gthreads : 1) * sizeof *ov->gstats);
		if (!ov->gstats)
			return -1;
		for (uint32_t i = 0; i < ov->nr_gthreads; i++) {
			struct vms_gthread_stats *g = &ov->gthreads[i].st;
			if (g->nr_reasons)
				qsort(g->reasons, g->nr_reasons, sizeof *g->reasons, cmp_reason);
			ov->gstats[i] = *g; /* shares the reasons array, owned by gthreads[i] */
		}
		qsort(ov->gstats, ov->nr_gthreads, sizeof *ov->gstats, cmp_gthread);
	}
	*out = ov->gstats;
	*n = ov->nr_gthreads;
	return 0;
}

void an_overlays_free(struct an_overlays *ov)
{
	if (!ov)
		return;
	for (uint32_t i = 0; i < ov->nr_gthreads; i++)
		free(ov->gthreads[i].st.reasons);
	free(ov->gthreads);
	free(ov->gstats);
	free(ov->v);
	vms_keymap_free(&ov->gthread_idx);
	vms_keymap_free(&ov->reason_idx);
	free(ov);
}

/* ---- on their own (vmscope/overlays.h) ---- */

struct vms_overlays {
	struct an_layout L;
	struct an_overlays *ov;
	struct vms_observer o;
};

struct vms_overlays *vms_overlays_new(const struct vms_model *model, const struct vms_sinks *sinks)
{
	struct vms_overlays *x = calloc(1, sizeof *x);
	if (!x)
		return NULL;
	/* (the layout keeps a writable model for the analysis's containment; the overlays
	 * read only its machines) */
	if (an_layout_init(&x->L, (struct vms_model *)model) < 0 ||
	    !(x->ov = an_overlays_new(&x->L, sinks, &x->o))) {
		vms_overlays_free(x);
		return NULL;
	}
	an_observer_for(&x->o, &x->L);
	return x;
}

struct vms_observer vms_overlays_observer(struct vms_overlays *x)
{
	return x->o;
}

uint32_t vms_overlays_vidx(const struct vms_overlays *x, uint32_t machine, uint32_t vcpu)
{
	if (machine >= x->L.nr_mach || vcpu >= x->L.mach[machine].nr_vcpus)
		return UINT32_MAX;
	return x->L.mach[machine].vcpu_base + vcpu;
}

void vms_overlays_free(struct vms_overlays *x)
{
	if (!x)
		return;
	an_overlays_free(x->ov);
	an_layout_free(&x->L);
	free(x);
}
