/* What the parts of the generator share: the two files being written, the clock
 * conversions, the PRNG and the truth being accumulated. */
#ifndef VMS_SYNTH_CONTEXT_H
#define VMS_SYNTH_CONTEXT_H

#include <stdint.h>

#include "vmscope/synth.h"
#include "synth/event_emit.h"
#include "synth/prng.h"

struct vms_synth_ctx {
	struct vms_emitter host, guest;
	struct vms_prng rng;
	double cyc_per_ns;            /* host TSC cycles per ns */
	uint32_t mult, shift;         /* TSC2NSEC: ns = (tsc * mult) >> shift */
	struct vms_synth_truth *truth;
	uint64_t max_ref_tsc;         /* latest event seen, host TSC (guest events: inverse) */
	bool noisy;                   /* the neighbour exists */
	bool vmsync;                  /* plant vmsync pairs (LTTng output) */
	uint64_t vm_uid, cnt_gh, cnt_hg;
};

static inline uint64_t vms_synth_ns(const struct vms_synth_ctx *x, uint64_t tsc)
{
	return (uint64_t)(((unsigned __int128)tsc * x->mult) >> x->shift);
}

static inline uint64_t vms_synth_cyc(const struct vms_synth_ctx *x, double ns)
{
	/* via int64_t: x86 converts doubles to signed integers in one instruction */
	uint64_t c = (uint64_t)(int64_t)(ns * x->cyc_per_ns);
	return c ? c : 1;
}

static inline void vms_synth_seen(struct vms_synth_ctx *x, uint64_t tsc)
{
	if (tsc > x->max_ref_tsc)
		x->max_ref_tsc = tsc;
}

/* KVM's guest TSC from the host TSC, and the exact inverse (vm-analysis.md section 8.1). */
static inline uint64_t vms_synth_to_guest(uint64_t host_tsc, uint64_t ratio, uint32_t frac,
					  int64_t tsc_offset)
{
	return (uint64_t)(((unsigned __int128)host_tsc * ratio) >> frac) + (uint64_t)tsc_offset;
}

static inline uint64_t vms_synth_to_host(uint64_t guest_tsc, uint64_t ratio, uint32_t frac,
					 int64_t tsc_offset)
{
	return (uint64_t)((((unsigned __int128)(guest_tsc - (uint64_t)tsc_offset)) << frac) / ratio);
}

#endif
