/* The analyses' lifecycle and dispatch: every event of the merged stream goes to the
 * transitions of its machine's role(s); results are assembled at vms_analysis_finish.
 * Files: vcpu_state.c (§3), overlays.c (§4), exits.c + exit_reasons.c (§5), steal.c (§6),
 * containment.c (§8), dist.c (distributions). */
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"

void vms_analysis_wanted_kinds(bool wanted[VMS_K_COUNT])
{
	wanted[VMS_K_SCHED_SWITCH] = true;
	wanted[VMS_K_SCHED_WAKEUP] = true;
	wanted[VMS_K_KVM_ENTRY] = true;
	wanted[VMS_K_KVM_EXIT] = true;
}

static void vcpu_init(struct an_vcpu *v, uint32_t machine, uint32_t vcpu,
		      const struct vms_machine *mc)
{
	memset(v, 0, sizeof *v);
	v->machine = machine;
	v->vcpu = vcpu;
	v->host = mc->host;
	v->host_tid = vcpu < mc->nr_vcpus ? mc->vcpus[vcpu].host_tid : -1;
	v->base = VMS_VCPU_UNKNOWN;
	v->status = VMS_VCPU_UNKNOWN;
	v->state = VMS_STATE_UNKNOWN;
	v->gtid = -1;
	v->gidx = -1;
	v->seg = (struct an_segment){ .state = VMS_STATE_UNKNOWN, .gtid = -1, .gidx = -1,
				      .exit_reason = -1, .host_tid = -1 };
	v->guest_mode = -1;
	v->left_prev = v->left_next = -1;
}

struct vms_analysis *vms_analysis_new(struct vms_model *model, const struct vms_sinks *sinks)
{
	struct vms_analysis *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	a->model = model;
	if (sinks)
		a->sinks = *sinks;
	vms_keymap_init(&a->gthread_idx);
	a->nr_mach = vms_model_nr_machines(model);
	a->mach = calloc(a->nr_mach ? a->nr_mach : 1, sizeof *a->mach);
	if (!a->mach)
		goto fail;
	for (uint32_t m = 0; m < a->nr_mach; m++) {
		const struct vms_machine *mc = vms_model_machine_c(model, m);
		struct an_machine *am = &a->mach[m];
		am->host = (mc->role & VMS_ROLE_HOST) != 0;
		am->guest = (mc->role & VMS_ROLE_GUEST) != 0;
		am->vcpu_base = a->nr_v;
		am->nr_vcpus = am->guest ? mc->nr_vcpus : 0;
		a->nr_v += am->nr_vcpus;
	}
	a->v = calloc(a->nr_v ? a->nr_v : 1, sizeof *a->v);
	if (!a->v)
		goto fail;
	for (uint32_t m = 0; m < a->nr_mach; m++) {
		const struct vms_machine *mc = vms_model_machine_c(model, m);
		for (uint32_t n = 0; n < a->mach[m].nr_vcpus; n++) {
			struct an_vcpu *v = &a->v[a->mach[m].vcpu_base + n];
			vcpu_init(v, m, n, mc);
			if (!(v->runq = vms_dist_new()))
				goto fail;
		}
	}
	return a;
fail:
	vms_analysis_free(a);
	return NULL;
}

void vms_analysis_event(struct vms_analysis *a, const struct vms_event *ev, uint64_t t)
{
	if (a->finished)
		return;
	if (!a->started) {
		a->started = true;
		a->t0 = a->t_last = t;
		for (uint32_t i = 0; i < a->nr_v; i++)
			a->v[i].iv_start = a->v[i].seg.start = t;
	}
	/* the merge delivers reference-time order; never let a stray inversion make a
	 * negative duration */
	if (t < a->t_last)
		t = a->t_last;
	a->t_last = t;
	uint32_t m = ev->machine;
	if (m >= a->nr_mach)
		return;
	struct an_machine *am = &a->mach[m];
	if (am->guest && ev->cpu < am->nr_vcpus) {
		an_containment_event(&a->v[am->vcpu_base + ev->cpu]);
		if (ev->kind == VMS_K_SCHED_SWITCH)
			an_on_guest_switch(a, m, ev, t);
	}
	if (!am->host)
		return;
	switch (ev->kind) {
	case VMS_K_SCHED_SWITCH:
		an_on_host_switch(a, m, ev, t);
		break;
	case VMS_K_KVM_ENTRY:
	case VMS_K_KVM_EXIT:
		an_on_kvm(a, m, ev, t);
		break;
	case VMS_K_SCHED_WAKEUP: {
		uint32_t g, n;
		int64_t tid = (int64_t)ev->f[0];
		if (tid >= 0 && tid <= INT32_MAX &&
		    vms_model_vcpu_of(a->model, m, (int32_t)tid, &g, &n) == 0 && g < a->nr_mach &&
		    n < a->mach[g].nr_vcpus)
			an_runq_wakeup(&a->v[a->mach[g].vcpu_base + n], t);
		break;
	}
	default:
		break;
	}
}

void vms_analysis_finish(struct vms_analysis *a, uint64_t t_end)
{
	if (a->finished)
		return;
	a->finished = true;
	if (!a->started)
		a->t0 = a->t_last = t_end;
	if (t_end < a->t_last)
		t_end = a->t_last;
	a->vstats = calloc(a->nr_v ? a->nr_v : 1, sizeof *a->vstats);
	a->guest_exits = calloc(a->nr_mach ? a->nr_mach : 1, sizeof *a->guest_exits);
	a->nr_guest_exits = calloc(a->nr_mach ? a->nr_mach : 1, sizeof *a->nr_guest_exits);
	for (uint32_t i = 0; i < a->nr_v; i++) {
		struct an_vcpu *v = &a->v[i];
		if (!a->started)
			v->iv_start = v->seg.start = t_end;
		an_vcpu_close(a, v, t_end);
		if (v->exit_pending) {
			v->exits_unpaired++;
			v->exit_pending = false;
		}
		an_steal_sort(v);
		if (!a->vstats)
			continue;
		struct vms_vcpu_stats *s = &a->vstats[i];
		s->machine = v->machine;
		s->vcpu = v->vcpu;
		s->host_tid = v->host_tid;
		s->first = a->t0;
		s->last = t_end;
		memcpy(s->ns, v->ns, sizeof s->ns);
		an_exit_table_sorted(&v->exits, &s->exits, &s->nr_exits);
		s->exits_unpaired = v->exits_unpaired;
		s->nr_steal = v->nr_steal;
		s->steal = v->steal;
		s->runq_latency = v->runq;
		s->contained = v->contained;
		s->contain_total = v->contain_total;
	}
	for (uint32_t m = 0; a->guest_exits && a->nr_guest_exits && m < a->nr_mach; m++)
		an_exit_table_sorted(&a->mach[m].exits, &a->guest_exits[m], &a->nr_guest_exits[m]);
	an_gthreads_finish(a);
	an_containment_to_model(a);
}

void vms_analysis_free(struct vms_analysis *a)
{
	if (!a)
		return;
	for (uint32_t i = 0; a->v && i < a->nr_v; i++) {
		struct an_vcpu *v = &a->v[i];
		an_exit_table_free(&v->exits);
		free(v->steal);
		vms_dist_free(v->runq);
		if (a->vstats)
			free(a->vstats[i].exits);
	}
	for (uint32_t m = 0; a->mach && m < a->nr_mach; m++) {
		an_exit_table_free(&a->mach[m].exits);
		free(a->mach[m].cpu);
		if (a->guest_exits)
			free(a->guest_exits[m]);
	}
	free(a->guest_exits);
	free(a->nr_guest_exits);
	free(a->vstats);
	free(a->v);
	free(a->mach);
	an_gthreads_free(a);
	free(a);
}

uint32_t vms_analysis_nr_vcpus(const struct vms_analysis *a)
{
	return a->vstats ? a->nr_v : 0;
}

const struct vms_vcpu_stats *vms_analysis_vcpu(const struct vms_analysis *a, uint32_t i)
{
	return a->vstats && i < a->nr_v ? &a->vstats[i] : NULL;
}

uint32_t vms_analysis_nr_gthreads(const struct vms_analysis *a)
{
	return a->gstats ? a->nr_gthreads : 0;
}

const struct vms_gthread_stats *vms_analysis_gthread(const struct vms_analysis *a, uint32_t i)
{
	return a->gstats && i < a->nr_gthreads ? &a->gstats[i] : NULL;
}

const struct vms_exit_stats *vms_analysis_guest_exits(const struct vms_analysis *a,
						      uint32_t machine, uint32_t *nr)
{
	*nr = 0;
	if (!a->guest_exits || !a->nr_guest_exits || machine >= a->nr_mach)
		return NULL;
	*nr = a->nr_guest_exits[machine];
	return a->guest_exits[machine];
}
