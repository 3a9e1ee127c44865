/* The containment check (docs/vm-analysis.md §8), a consumer of the state machine's
 * observations: with a correct clock transform, every event a guest records on vCPU n
 * happens while the host thread of vCPU n is in guest mode (between its kvm_entry and its
 * kvm_exit), in reference time. The share that does is the sync's reality check. Events
 * before the host thread's first kvm_entry/kvm_exit are not counted: nothing is known of its
 * mode then. */
#include <stdlib.h>

#include "analysis_internal.h"

struct ct_vcpu {
	int8_t guest_mode;         /* 1 between kvm_entry and kvm_exit, 0 outside, -1 unknown */
	uint64_t contained, total;
};

struct an_contain {
	const struct an_layout *L;
	struct ct_vcpu *v;
};

extern inline __attribute__((always_inline)) void an_contain_on_mode(void *ctx, const struct vms_obs_vcpu_mode *o)
{
	((struct an_contain *)ctx)->v[o->vidx].guest_mode = o->guest_mode ? 1 : 0;
}

static void on_event(void *ctx, const struct vms_event *ev, uint64_t t)
{
	(void)t;
	struct an_contain *c = ctx;
	if (ev->machine >= c->L->nr_mach)
		return;
	const struct an_layout_machine *lm = &c->L->mach[ev->machine];
	if (!lm->guest || ev->cpu >= lm->nr_vcpus)
		return;
	struct ct_vcpu *v = &c->v[lm->vcpu_base + ev->cpu];
	if (v->guest_mode < 0)
		return;
	v->total++;
	if (v->guest_mode == 1)
		v->contained++;
}

struct an_contain *an_contain_new(const struct an_layout *L, struct vms_observer *o)
{
	struct an_contain *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->L = L;
	c->v = calloc(L->nr_v ? L->nr_v : 1, sizeof *c->v);
	if (!c->v) {
		free(c);
		return NULL;
	}
	for (uint32_t i = 0; i < L->nr_v; i++)
		c->v[i].guest_mode = -1;
	/* Events are checked only when a guest has a trace of its own: a guest without one (a
	 * Xen domain, a VM whose host alone was traced) gives no event, and the check would be
	 * a call per host event that can never count (0.8 M of report's 60.7 M instructions on
	 * xen/xentrace.bin); the modes, which only the check reads, are then not followed
	 * either (two calls per VM exit) */
	*o = (struct vms_observer){ .ctx = c, .vcpu_mode = L->traced_guest ? an_contain_on_mode : NULL,
				    .event = L->traced_guest ? on_event : NULL,
				    /* (a host's events, 86 % of the synthesized pair's, never count) */
				    .guest_events_only = true };
	return c;
}

void an_contain_get(const struct an_contain *c, uint32_t vidx, uint64_t *in, uint64_t *total)
{
	*in = c->v[vidx].contained;
	*total = c->v[vidx].total;
}

void an_contain_to_model(const struct an_contain *c)
{
	for (uint32_t m = 0; m < c->L->nr_mach; m++) {
		struct vms_machine *mc = vms_model_machine(c->L->model, m);
		const struct an_layout_machine *lm = &c->L->mach[m];
		if (!mc || !lm->guest)
			continue;
		uint64_t in = 0, total = 0;
		for (uint32_t i = 0; i < lm->nr_vcpus; i++) {
			in += c->v[lm->vcpu_base + i].contained;
			total += c->v[lm->vcpu_base + i].total;
		}
		mc->sync.has_containment = total > 0;
		mc->sync.contained = in;
		mc->sync.contain_total = total;
	}
}

void an_contain_free(struct an_contain *c)
{
	if (!c)
		return;
	free(c->v);
	free(c);
}
