/* Guest threads (docs/vm-analysis.md §4): a guest thread that is running from the guest's
 * point of view is in fact stopped whenever its vCPU has the VMM or PREEMPTED flag.
 *
 * Each vCPU's time is cut into segments over which nothing the overlays look at changes:
 * (guest thread current on the vCPU, shown state, exit reason when VMM, host thread that
 * ran instead). When a segment closes, its time goes to the guest thread's totals (running /
 * vmm / preempted / halted, and per exit reason), an overlay interval is streamed for the
 * stopped states, and preempted time is charged to the host thread that took the CPU
 * (steal.c). Overlays are only for real threads (tid > 0): the idle task being "halted" is
 * what idle means. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"

struct an_gthread *an_gthread_get(struct vms_analysis *a, uint32_t machine, int32_t tid)
{
	bool inserted;
	uint64_t *idx = vms_keymap_put(&a->gthread_idx, vms_keymap_mt(machine, tid),
				       a->nr_gthreads, &inserted);
	if (!idx)
		return NULL;
	if (!inserted)
		return *idx < a->nr_gthreads ? &a->gthreads[*idx] : NULL;
	if (a->nr_gthreads == a->cap_gthreads) {
		uint32_t ncap = a->cap_gthreads ? a->cap_gthreads * 2 : 64;
		struct an_gthread *ng = realloc(a->gthreads, ncap * sizeof *ng);
		if (!ng) {
			*idx = UINT32_MAX; /* never a valid index */
			return NULL;
		}
		a->gthreads = ng;
		a->cap_gthreads = ncap;
	}
	struct an_gthread *g = &a->gthreads[a->nr_gthreads++];
	memset(g, 0, sizeof *g);
	g->st.machine = machine;
	g->st.tid = tid;
	return g;
}

static struct vms_gthread_reason *reason_row(struct an_gthread *g, uint32_t isa, uint32_t reason)
{
	/* the exit counted at kvm_exit is the one whose time is added at the segment's close */
	if (g->last_reason < g->st.nr_reasons && g->st.reasons[g->last_reason].isa == isa &&
	    g->st.reasons[g->last_reason].reason == reason)
		return &g->st.reasons[g->last_reason];
	for (uint32_t i = 0; i < g->st.nr_reasons; i++) {
		if (g->st.reasons[i].isa == isa && g->st.reasons[i].reason == reason) {
			g->last_reason = i;
			return &g->st.reasons[i];
		}
	}
	if (g->st.nr_reasons == g->cap_reasons) {
		uint32_t ncap = g->cap_reasons ? g->cap_reasons * 2 : 4;
		struct vms_gthread_reason *nr = realloc(g->st.reasons, ncap * sizeof *nr);
		if (!nr)
			return NULL;
		g->st.reasons = nr;
		g->cap_reasons = ncap;
	}
	uint32_t i = g->st.nr_reasons++;
	g->last_reason = i;
	g->st.reasons[i].isa = isa;
	g->st.reasons[i].reason = reason;
	g->st.reasons[i].ns = 0;
	g->st.reasons[i].count = 0;
	return &g->st.reasons[i];
}

/* A kvm_exit while guest thread gtid is current on v: one more exit of that reason. */
void an_gthread_exit(struct vms_analysis *a, struct an_vcpu *v)
{
	if (v->gidx < 0 || (uint32_t)v->gidx >= a->nr_gthreads)
		return;
	struct an_gthread *g = &a->gthreads[v->gidx];
	struct vms_gthread_reason *r = reason_row(g, v->exit_isa, v->exit_reason);
	if (r)
		r->count++;
}

static bool is_overlay(enum vms_vcpu_state s)
{
	return s == VMS_STATE_VMM || s == VMS_STATE_PREEMPTED || s == VMS_STATE_HALTED;
}

void an_segment_close(struct vms_analysis *a, struct an_vcpu *v, uint64_t t)
{
	struct an_segment *s = &v->seg;
	if (t <= s->start)
		return;
	uint64_t d = t - s->start;
	if (s->gtid > 0) {
		struct an_gthread *g = s->gidx >= 0 && (uint32_t)s->gidx < a->nr_gthreads
					       ? &a->gthreads[s->gidx] : NULL;
		if (g) {
			switch (s->state) {
			case VMS_STATE_RUNNING: g->st.ns_running += d; break;
			case VMS_STATE_VMM: {
				g->st.ns_vmm += d;
				struct vms_gthread_reason *r =
					reason_row(g, s->isa, (uint32_t)s->exit_reason);
				if (r && s->exit_reason >= 0)
					r->ns += d;
				break;
			}
			case VMS_STATE_PREEMPTED: g->st.ns_preempted += d; break;
			case VMS_STATE_HALTED: g->st.ns_halted += d; break;
			default: break;
			}
		}
		if (is_overlay(s->state) && a->sinks.thread_interval) {
			struct vms_thread_interval iv = {
				.machine = v->machine, .tid = s->gtid, .vcpu = v->vcpu,
				.start = s->start, .end = t,
				.reason = s->state == VMS_STATE_VMM ? VMS_OVERLAY_VMM
					  : s->state == VMS_STATE_PREEMPTED ? VMS_OVERLAY_PREEMPTED
					  : VMS_OVERLAY_HALTED,
				.exit_reason = s->state == VMS_STATE_VMM ? s->exit_reason : -1,
				.isa = s->state == VMS_STATE_VMM ? s->isa : 0,
				.host_tid = s->host_tid,
			};
			a->sinks.thread_interval(a->sinks.ctx, &iv);
		}
	}
	if (s->state == VMS_STATE_PREEMPTED && s->host_tid >= 0)
		an_steal_charge(a, v, s->host_tid, s->comm, d);
	s->start = t;
}

void an_segment_refresh(struct vms_analysis *a, struct an_vcpu *v, uint64_t t)
{
	/* called on every vCPU event: compare first, build the new segment only on a change */
	enum vms_vcpu_state state = v->state;
	int32_t exit_reason = -1, host_tid = -1;
	uint32_t isa = 0;
	const char *comm = "";
	if (state == VMS_STATE_VMM) {
		if (v->have_exit) {
			exit_reason = (int32_t)(v->exit_reason & INT32_MAX);
			isa = v->exit_isa;
		}
		host_tid = v->host_tid;
	} else if ((state == VMS_STATE_PREEMPTED || state == VMS_STATE_HALTED) && v->left_valid &&
		   v->host >= 0) {
		struct an_cpu *c = an_host_cpu(a, (uint32_t)v->host, v->left_cpu);
		if (c) {
			host_tid = c->tid;
			comm = c->comm;
		}
	}
	struct an_segment *s = &v->seg;
	if (state == s->state && v->gtid == s->gtid && exit_reason == s->exit_reason &&
	    isa == s->isa && host_tid == s->host_tid)
		return;
	an_segment_close(a, v, t);
	if (t > s->start)
		s->start = t;
	s->state = state;
	s->gtid = v->gtid;
	s->gidx = v->gidx;
	s->exit_reason = exit_reason;
	s->isa = isa;
	s->host_tid = host_tid;
	an_copy_comm(s->comm, comm);
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

int an_gthreads_finish(struct vms_analysis *a)
{
	a->gstats = malloc((a->nr_gthreads ? a->nr_gthreads : 1) * sizeof *a->gstats);
	if (!a->gstats)
		return -1;
	for (uint32_t i = 0; i < a->nr_gthreads; i++) {
		struct vms_gthread_stats *g = &a->gthreads[i].st;
		if (g->nr_reasons)
			qsort(g->reasons, g->nr_reasons, sizeof *g->reasons, cmp_reason);
		a->gstats[i] = *g; /* shares the reasons array, owned by gthreads[i] */
	}
	qsort(a->gstats, a->nr_gthreads, sizeof *a->gstats, cmp_gthread);
	return 0;
}

void an_gthreads_free(struct vms_analysis *a)
{
	for (uint32_t i = 0; i < a->nr_gthreads; i++)
		free(a->gthreads[i].st.reasons);
	free(a->gthreads);
	free(a->gstats);
	vms_keymap_free(&a->gthread_idx);
}
