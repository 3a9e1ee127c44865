/* The containment check (docs/vm-analysis.md §8): with a correct clock transform, every
 * event a guest records on vCPU n happens while the host thread of vCPU n is in guest mode
 * (between its kvm_entry and its kvm_exit), in reference time. The share that does is the
 * sync's reality check. Events before the host thread's first kvm_entry/kvm_exit are not
 * counted: nothing is known of its mode then. */
#include "analysis_internal.h"

void an_containment_event(struct an_vcpu *v)
{
	if (v->guest_mode < 0)
		return;
	v->contain_total++;
	if (v->guest_mode == 1)
		v->contained++;
}

void an_containment_to_model(struct vms_analysis *a)
{
	for (uint32_t m = 0; m < a->nr_mach; m++) {
		struct vms_machine *mc = vms_model_machine(a->model, m);
		const struct an_machine *am = &a->mach[m];
		if (!mc || !am->guest)
			continue;
		uint64_t in = 0, total = 0;
		for (uint32_t i = 0; i < am->nr_vcpus; i++) {
			in += a->v[am->vcpu_base + i].contained;
			total += a->v[am->vcpu_base + i].contain_total;
		}
		mc->sync.has_containment = total > 0;
		mc->sync.contained = in;
		mc->sync.contain_total = total;
	}
}
