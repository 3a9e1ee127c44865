/* vmscope: a machine's clock, as a value that maps its raw timestamps to the reference
 * timebase (the first host's nanoseconds).
 *
 *   raw --(TIME_SHIFT inverse, guests of trace-cmd)--> host TSC
 *       --(TSC2NSEC mult/shift, when the clock counts cycles)--> ns
 *       --(+ OFFSET/DATE)--> machine ns
 *       --(linear sync: t_ref = slope * t + offset)--> reference ns
 *
 * Every stage is optional. The TIME_SHIFT inverse is exact (128-bit integers), including TSC
 * scaling: host_tsc = ((guest_tsc - tsc_offset) << frac) / ratio. The linear stage is exact
 * too: a rational slope and a fractional offset applied in 128-bit integers (vms_linear), so
 * that no nanosecond is lost on 64-bit timestamps, whatever their size. */
#ifndef VMSCOPE_CLOCK_H
#define VMSCOPE_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmscope/source.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An affine map of nanoseconds, exact in form and in application:
 *   R(t) = out0 + ((t - in0) * num + frac) / den          (a rational number)
 *   applied(t) = floor(R(t) + 1/2), saturated to [0, 2^64 - 1]
 * computed in 128-bit integers ((t - in0) * num < 2^127 since num < 2^63). den is a power of
 * two (2^62 for slopes near 1: a slope resolution of 2e-19, 2e-5 ns over a day), and
 * 0 <= frac < den is the offset's fraction. The identity is in0 = out0 = 0, num = den = 1. */
struct vms_linear {
	uint64_t in0;             /* origin of the input */
	int64_t out0;             /* integer part of R(in0) (floor) */
	uint64_t num, den;        /* slope = num / den */
	uint64_t frac;            /* fractional part of R(in0), in units of 1/den */
};

void vms_linear_identity(struct vms_linear *l);
/* The map t -> slope * (t - in0) + out_at_in0, with slope > 0 and the value at in0 given as
 * a long double (64-bit mantissa): both are rounded to the representation above. Returns -1
 * (l untouched) when slope is not positive and finite or out_at_in0 is out of range. */
int vms_linear_set(struct vms_linear *l, long double slope, uint64_t in0, long double out_at_in0);
/* The same with the value at in0 given as base + delta, base an exact integer and delta a
 * small long double (an offset from it), so that large bases lose nothing. */
int vms_linear_set_base(struct vms_linear *l, long double slope, uint64_t in0, int64_t base,
			long double delta);
/* t_out = slope * t + offset (the form the command line and JSON use). */
int vms_linear_set_slope_offset(struct vms_linear *l, long double slope, long double offset);
uint64_t vms_linear_apply(const struct vms_linear *l, uint64_t t);
/* R(t) as a long double (for reports and composition). */
long double vms_linear_eval(const struct vms_linear *l, long double t);
long double vms_linear_slope(const struct vms_linear *l);
/* R(0): the offset of the form t_out = slope * t + offset (long double: inexact far from
 * in0, for display only). */
long double vms_linear_offset(const struct vms_linear *l);
/* outer(inner(t)), rounded to the representation (the origin stays inner's in0). */
int vms_linear_compose(struct vms_linear *out, const struct vms_linear *outer,
		       const struct vms_linear *inner);

#define VMS_CLOCK_MAX_HOPS 7  /* TIME_SHIFT hops above the first: L2 -> L1 -> L0 is one */

struct vms_clock {
	const struct vms_timeshift *timeshift; /* not owned; NULL when none */
	/* nested guests: after `timeshift` (this guest's TSC -> its host's TSC), the host's own
	 * TIME_SHIFT to its host, and so on up to a root host (L2 -> L1 -> L0: one hop here).
	 * An up hop uses its table's CPU 0: which CPU of the host ran the guest's vCPU at that
	 * instant is not known from the guest's event, and a VM's vCPUs share one TSC offset */
	const struct vms_timeshift *up[VMS_CLOCK_MAX_HOPS];
	uint32_t nr_up;
	bool tsc2nsec;
	uint32_t mult, shift;
	uint64_t tsc_offset;      /* TSC2NSEC offset, subtracted before the multiply */
	int64_t add_ns;          /* OFFSET + DATE */
	bool linear;             /* apply lin (sync by hull, user) */
	struct vms_linear lin;   /* machine ns -> reference ns */
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

/* The same, with the host's common cases (raw ns, TSC2NSEC, an epoch offset: LTTng's
 * clocks) inline: the merge calls it for every event. */
static inline uint64_t vms_clock_to_ref_fast(const struct vms_clock *c, uint32_t cpu,
					     uint64_t raw)
{
	if (c->timeshift || c->linear)
		return vms_clock_to_ref(c, cpu, raw);
	uint64_t t = raw;
	if (c->tsc2nsec) {
		t = raw > c->tsc_offset ? raw - c->tsc_offset : 0;
		__extension__ typedef unsigned __int128 vms_u128;
		t = (uint64_t)(((vms_u128)t * c->mult) >> c->shift);
	}
	if (c->add_ns >= 0) /* saturating, as vms_clock_to_ns */
		return t > UINT64_MAX - (uint64_t)c->add_ns ? UINT64_MAX : t + (uint64_t)c->add_ns;
	uint64_t sub = 0 - (uint64_t)c->add_ns;
	return t < sub ? 0 : t - sub;
}
/* What a stream's conversions can reuse: the TIME_SHIFT sample in force over the raw times
 * [lo, hi) of one CPU. A stream's events are one CPU's in time order and a guest's samples
 * change rarely, so the sample's search and the clock's tests are made once per sample, not
 * once per event (a guest's event cost ~130 instructions, ~50 with it). Zeroed: empty. */
struct vms_clock_memo {
	uint64_t lo, hi;          /* hi == 0: empty */
	uint32_t cpu;
	uint32_t sorted;          /* CPU + 1 whose sample times were seen to rise strictly */
	bool off;                 /* this clock cannot be memoised: every call converts */
	int64_t offset;
	uint64_t scaling, frac;
};
/* vms_clock_to_ref, the same result, through the memo (for a clock with TIME_SHIFT) */
uint64_t vms_clock_to_ref_memo(const struct vms_clock *c, uint32_t cpu, uint64_t raw,
			       struct vms_clock_memo *mm);

/* raw -> the machine's own ns (no linear sync stage). */
uint64_t vms_clock_to_ns(const struct vms_clock *c, uint32_t cpu, uint64_t raw);

/* A time in clock cycles of an unknown rate, for people: "1234 cycles", "12.34 k cycles",
 * "12.34 M cycles", "1.234 G cycles" (never seconds: the rate is not known). Returns buf. */
const char *vms_fmt_cycles(uint64_t cycles, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
