/* Who took the CPU (docs/vm-analysis.md §6). While a vCPU is preempted (its thread left
 * its physical CPU runnable), the host threads that ran on that CPU are charged with the
 * time (overlays.c cuts the time at every change of that thread and calls us). Halted time
 * is not charged: the guest had nothing to run, nobody stole anything.
 *
 * Run-queue latency: from the vCPU thread's sched_wakeup to its next sched_switch in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"

void an_steal_charge(struct vms_analysis *a, struct an_vcpu *v, int32_t host_tid,
		     const char *comm, uint64_t ns)
{
	for (uint32_t i = 0; i < v->nr_steal; i++) {
		if (v->steal[i].host_tid == host_tid) {
			v->steal[i].ns += ns;
			return;
		}
	}
	if (v->nr_steal == v->cap_steal) {
		uint32_t ncap = v->cap_steal ? v->cap_steal * 2 : 8;
		struct vms_steal_entry *ns_ = realloc(v->steal, ncap * sizeof *ns_);
		if (!ns_)
			return;
		v->steal = ns_;
		v->cap_steal = ncap;
	}
	struct vms_steal_entry *e = &v->steal[v->nr_steal++];
	memset(e, 0, sizeof *e);
	e->host_tid = host_tid;
	e->host_pid = -1;
	e->ns = ns;
	const struct vms_thread_info *ti =
		v->host >= 0 ? vms_model_thread(a->model, (uint32_t)v->host, host_tid) : NULL;
	if (ti && ti->pid > 0)
		e->host_pid = ti->pid;
	if (comm && *comm)
		snprintf(e->comm, sizeof e->comm, "%s", comm);
	else if (ti)
		snprintf(e->comm, sizeof e->comm, "%s", ti->comm);
}

void an_runq_wakeup(struct an_vcpu *v, uint64_t t)
{
	if (v->wake_pending)
		return; /* a second wakeup before running: the wait began at the first */
	v->wake_pending = true;
	v->wake_t = t;
}

void an_runq_switch_in(struct an_vcpu *v, uint64_t t)
{
	if (!v->wake_pending)
		return;
	v->wake_pending = false;
	if (v->runq)
		vms_dist_add(v->runq, t > v->wake_t ? t - v->wake_t : 0);
}

static int cmp_steal(const void *x, const void *y)
{
	const struct vms_steal_entry *a = x, *b = y;
	if (a->ns != b->ns)
		return a->ns > b->ns ? -1 : 1;
	return a->host_tid < b->host_tid ? -1 : a->host_tid > b->host_tid;
}

void an_steal_sort(struct an_vcpu *v)
{
	if (v->nr_steal > 1)
		qsort(v->steal, v->nr_steal, sizeof *v->steal, cmp_steal);
}
