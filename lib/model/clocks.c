/* Each machine's clock from its metadata (TSC2NSEC, OFFSET, DATE), and TIME_SHIFT for a
 * trace-cmd guest whose host (the peer TRACEID of its TIME_SHIFT) is in the session: that
 * is exact (quality EXACT). The reference keeps its own timebase; other machines have no
 * transform here (NONE): matched-pair sync (hull) is another stage's business. Untraced
 * guests have no events of their own, only their host's: they share its timebase. */
#include "model_internal.h"

void vms_model_set_clocks(struct vms_model *m)
{
	for (uint32_t i = 0; i < m->nr; i++) {
		struct vms_machine *mc = &m->mach[i];
		const struct vms_trace_meta *meta = m->priv[i].meta;
		struct vms_sync_info *si = &mc->sync;
		si->reference = m->reference;
		si->slope = 1.0;
		si->offset_ns = 0.0;
		if (!meta)
			continue; /* untraced: filled below from the host */
		const struct vms_trace_meta *host_meta = NULL;
		if ((mc->role & VMS_ROLE_GUEST) && meta->timeshift && mc->host >= 0) {
			const struct vms_trace_meta *hm = m->priv[mc->host].meta;
			if (hm && hm->has_trace_id && hm->trace_id == meta->timeshift->peer_trace_id)
				host_meta = hm;
		}
		if (!host_meta) {
			for (uint32_t h = 0; meta->timeshift && h < m->nr_sources; h++) {
				const struct vms_trace_meta *hm = m->priv[h].meta;
				if (h != i && hm && hm->has_trace_id &&
				    hm->trace_id == meta->timeshift->peer_trace_id)
					host_meta = hm;
			}
		}
		vms_clock_from_meta(&mc->clock, meta, host_meta != NULL, host_meta);
		if (i == m->reference) {
			si->method = VMS_SYNC_REFERENCE;
			si->quality = VMS_SYNC_Q_EXACT;
		} else if (host_meta) {
			si->method = VMS_SYNC_TIMESHIFT;
			si->quality = VMS_SYNC_Q_EXACT;
			uint64_t n = 0;
			for (uint32_t c = 0; c < meta->timeshift->nr_cpus; c++)
				n += meta->timeshift->cpu[c].n;
			si->pairs = n;
		} else {
			si->method = VMS_SYNC_NONE;
			si->quality = VMS_SYNC_Q_ABSENT;
		}
	}
	for (uint32_t i = 0; i < m->nr; i++) {
		struct vms_machine *mc = &m->mach[i];
		if (m->priv[i].meta || mc->host < 0)
			continue;
		const struct vms_machine *h = &m->mach[mc->host];
		mc->clock = h->clock;
		mc->sync = h->sync;
	}
}
