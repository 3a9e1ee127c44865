/* Clock sync by the user (`--offset NAME=NS`, method "user"): NAME's reference time is its own
 * time plus NS nanoseconds.
 *
 * For a guest trace that shares no clock with its host and has no events the matcher can pair
 * with the host's (a trace.dat or LTTng trace from inside a Xen domain, whose xentrace host
 * records no network or hypercall payloads), this is the only way to put both on one
 * timeline. It wins over what the data gave (the user forces it), and the containment check
 * still says how well the guest's events then fall inside guest mode. */
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

int vms_model_user_offset(struct vms_model *m, const char *name, int64_t ns, struct vms_error *err)
{
	struct vms_user_offset *n = realloc(m->offsets, (m->nr_offsets + 1) * sizeof *n);
	if (!n)
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	m->offsets = n;
	char *dup = strdup(name);
	if (!dup)
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	m->offsets[m->nr_offsets++] = (struct vms_user_offset){ .name = dup, .ns = ns };
	return 0;
}

void vms_model_user_offsets_free(struct vms_model *m)
{
	for (uint32_t i = 0; i < m->nr_offsets; i++)
		free(m->offsets[i].name);
	free(m->offsets);
	m->offsets = NULL;
	m->nr_offsets = 0;
}

int vms_model_apply_user_offsets(struct vms_model *m, struct vms_error *err)
{
	for (uint32_t k = 0; k < m->nr_offsets; k++) {
		const struct vms_user_offset *u = &m->offsets[k];
		int32_t i = vms_model_find(m, u->name);
		if (i < 0 || m->mach[i].source < 0)
			return vms_error_set(err, VMS_ERR_USAGE,
					     "--offset %s: no traced machine has that name", u->name);
		if ((uint32_t)i == m->reference)
			return vms_error_set(err, VMS_ERR_USAGE,
					     "--offset %s: that is the reference timebase (its offset "
					     "is 0 by definition)", u->name);
		struct vms_machine *mc = &m->mach[i];
		struct vms_linear lin;
		if (vms_linear_set_slope_offset(&lin, 1.0L, (long double)u->ns) < 0)
			return vms_error_set(err, VMS_ERR_USAGE, "--offset %s=%lld: out of range",
					     u->name, (long long)u->ns);
		struct vms_sync_info *si = &mc->sync;
		*si = (struct vms_sync_info){
			.method = VMS_SYNC_USER, .quality = VMS_SYNC_Q_APPROXIMATE,
			.reference = m->reference, .slope = 1.0, .offset_ns = (double)u->ns,
			.applied = true, .parent = (int32_t)m->reference,
		};
		mc->clock.linear = true;
		mc->clock.lin = lin;
	}
	return 0;
}
