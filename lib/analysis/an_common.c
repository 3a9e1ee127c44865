/* What the analysis stage's files share and none owns: the layout of the vCPUs (which
 * machine has which), who subscribed to which callback, and an observer as subscribed for a
 * layout. analysis.c drives the stage; the consumers (overlays.c makes a layout of its own)
 * use these without calling into analysis.c. */
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"

int an_subs_build(struct an_subs *s, const struct vms_observer *obs, uint32_t nr)
{
	if (nr > s->cap) {
		struct an_call *all = realloc(s->all, (size_t)AN_CB_COUNT * nr * sizeof *all);
		if (!all)
			return -1;
		s->all = all;
		s->cap = nr;
	}
	for (int k = 0; k < AN_CB_COUNT; k++) {
		s->by[k] = s->all + (size_t)k * s->cap;
		s->n[k] = 0;
	}
	for (uint32_t i = 0; i < nr; i++) {
		const struct vms_observer *o = &obs[i];
#define CB(cb) [AN_CB_##cb] = (void (*)(void))o->cb
		void (*const fn[AN_CB_COUNT])(void) = {
			CB(vcpu_state), CB(guest_switch), CB(exit_begin), CB(exit_end), CB(cpu_run),
			CB(vcpu_mode), CB(vcpu_wakeup), CB(vcpu_instead), CB(guest_wakeup),
			CB(cpu_occupant), CB(event), CB(start), CB(finish),
			[AN_CB_host_event] = o->guest_events_only ? NULL : (void (*)(void))o->event,
		};
#undef CB
		for (int k = 0; k < AN_CB_COUNT; k++)
			if (fn[k])
				s->by[k][s->n[k]++] = (struct an_call){ fn[k], o->ctx };
	}
	return 0;
}

void an_subs_free(struct an_subs *s)
{
	free(s->all);
	memset(s, 0, sizeof *s);
}

void an_observer_for(struct vms_observer *o, const struct an_layout *L)
{
	if (o->traced_guests_only && !L->traced_guest) {
		o->vcpu_state = NULL;
		o->vcpu_instead = NULL;
		o->exit_begin = o->exit_end = NULL;
		o->guest_switch = NULL;
		o->guest_wakeup = NULL;
	}
}

int an_layout_init(struct an_layout *L, struct vms_model *model)
{
	/* the layout owes nothing to what the caller's memory held (a layout on the stack) */
	*L = (struct an_layout){ .model = model };
	L->nr_mach = vms_model_nr_machines(model);
	L->mach = calloc(L->nr_mach ? L->nr_mach : 1, sizeof *L->mach);
	if (!L->mach)
		return -1;
	for (uint32_t m = 0; m < L->nr_mach; m++) {
		const struct vms_machine *mc = vms_model_machine_c(model, m);
		struct an_layout_machine *lm = &L->mach[m];
		lm->host = (mc->role & VMS_ROLE_HOST) != 0;
		lm->guest = (mc->role & VMS_ROLE_GUEST) != 0;
		lm->vcpu_base = L->nr_v;
		lm->nr_vcpus = lm->guest ? mc->nr_vcpus : 0;
		L->nr_v += lm->nr_vcpus;
		L->traced_guest |= lm->guest && mc->source >= 0;
	}
	L->nested = vms_model_nested(model);
	L->v = calloc(L->nr_v ? L->nr_v : 1, sizeof *L->v);
	if (!L->v)
		return -1;
	for (uint32_t m = 0; m < L->nr_mach; m++) {
		const struct vms_machine *mc = vms_model_machine_c(model, m);
		for (uint32_t n = 0; n < L->mach[m].nr_vcpus; n++) {
			struct an_layout_vcpu *v = &L->v[L->mach[m].vcpu_base + n];
			v->machine = m;
			v->vcpu = n;
			v->host = mc->host;
			v->host_tid = n < mc->nr_vcpus ? mc->vcpus[n].host_tid : -1;
		}
	}
	return 0;
}

void an_layout_free(struct an_layout *L)
{
	free(L->mach);
	free(L->v);
}
