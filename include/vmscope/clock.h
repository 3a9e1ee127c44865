/* vmscope: a machine's clock, as a value that maps its raw timestamps to the reference
 * timebase (the first host's nanoseconds).
 *
 *   raw --(TIME_SHIFT inverse, guests of trace-cmd)--> host TSC
 *       --(TSC2NSEC mult/shift, when the clock counts cycles)--> ns
 *       --(+ OFFSET/DATE)--> machine ns
 *       --(linear sync: t_ref = slope * t + offset)--> reference ns
 *
 * Every stage is optional. The TIME_SHIFT inverse is exact (128-bit integers), including TSC
 * scaling: host_tsc = ((guest_tsc - tsc_offset) << frac) / ratio. */
#ifndef VMSCOPE_CLOCK_H
#define VMSCOPE_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "vmscope/source.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vms_clock {
	const struct vms_timeshift *timeshift; /* not owned; NULL when none */
	bool tsc2nsec;
	uint32_t mult, shift;
	uint64_t tsc_offset;      /* TSC2NSEC offset, subtracted before the multiply */
	int64_t add_ns;          /* OFFSET + DATE */
	bool linear;             /* apply slope/offset (sync by hull, user) */
	double slope;            /* t_ref = slope * t + offset_ns */
	double offset_ns;
};

/* The identity clock (raw ns). */
void vms_clock_init(struct vms_clock *c);
/* The clock a trace's own metadata implies (TSC2NSEC, OFFSET, DATE; TIME_SHIFT only when
 * `apply_timeshift`: the guest's host must be in the session, whose TSC the shift targets). */
void vms_clock_from_meta(struct vms_clock *c, const struct vms_trace_meta *meta,
			 bool apply_timeshift, const struct vms_trace_meta *host_meta);

/* Guest TSC -> host TSC with the sample in force for `cpu` at guest time `tsc` (or the
 * interpolation between two samples when INTERPOLATE is set). Exact 128-bit inverse. */
uint64_t vms_timeshift_to_host(const struct vms_timeshift *ts, uint32_t cpu, uint64_t tsc);
/* The forward direction (host TSC -> guest TSC), as KVM computes it, for tests and synth. */
uint64_t vms_timeshift_to_guest(int64_t offset, uint64_t scaling, uint64_t frac,
				uint64_t host_tsc);

/* raw -> reference ns. */
uint64_t vms_clock_to_ref(const struct vms_clock *c, uint32_t cpu, uint64_t raw);

/* The same, with the host's common cases (raw ns, or TSC2NSEC alone) inline: the merge calls
 * it for every event. */
static inline uint64_t vms_clock_to_ref_fast(const struct vms_clock *c, uint32_t cpu,
					     uint64_t raw)
{
	if (c->timeshift || c->linear || c->add_ns)
		return vms_clock_to_ref(c, cpu, raw);
	if (!c->tsc2nsec)
		return raw;
	uint64_t t = raw > c->tsc_offset ? raw - c->tsc_offset : 0;
	__extension__ typedef unsigned __int128 vms_u128;
	return (uint64_t)(((vms_u128)t * c->mult) >> c->shift);
}
/* raw -> the machine's own ns (no linear sync stage). */
uint64_t vms_clock_to_ns(const struct vms_clock *c, uint32_t cpu, uint64_t raw);

#ifdef __cplusplus
}
#endif
#endif
