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

/* The truth's window: from the first event (t0) to the last seen. */
static inline void vms_synth_truth_window(struct vms_synth_ctx *x, uint64_t t0)
{
	x->truth->window_start_tsc = t0;
	x->truth->window_end_tsc = x->max_ref_tsc;
	x->truth->window_start_ns = vms_synth_ns(x, t0);
	x->truth->window_end_ns = vms_synth_ns(x, x->max_ref_tsc);
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

/* The default scenario's clocks (2.9 GHz host TSC, TSC2NSEC; the guest's 3.0 GHz TSC with
 * KVM's scaling unless cfg->tsc_scaling is off), drawn from the seed: x->rng seeded, x's and
 * x->truth's clock fields set, then the first event's time, the trace ids and the guest's
 * TSC offset. */
struct vms_synth_clocks {
	uint64_t t0;                  /* host TSC of the first event */
	uint64_t host_id, guest_id;   /* TRACEIDs */
	uint64_t ratio;               /* guest TSC = ((host TSC * ratio) >> frac) + off0 */
	uint32_t frac;
	int64_t off0;
};
void vms_synth_clocks_init(struct vms_synth_ctx *x, const struct vms_synth_config *cfg,
			   struct vms_synth_clocks *c);
/* The VMM starts inside the recording (as when trace-cmd record runs before the VM is
 * launched): QEMU's exec as process `pid`, then the creation of its threads `tids` (which
 * QEMU renames "CPU n/KVM" afterwards: the saved cmdlines / statedump say that name), all on
 * host CPU 0 at `ts`. */
void vms_synth_vmm_start(struct vms_synth_ctx *x, uint64_t ts, int32_t pid, const int32_t *tids,
			 uint32_t n);
/* The files' part of the truth: paths, trace ids, CPUs. */
void vms_synth_truth_files(struct vms_synth_ctx *x, const struct vms_synth_config *cfg,
			   const struct vms_synth_clocks *c);

/* One trace.dat file of the default scenario's kind (a host's: every event type, with the
 * host kernel's ids; a guest's: the scheduler's two), opened with its formats into e->w
 * and e->id (the rest of *e is the caller's). */
int vms_synth_open_file(struct vms_emitter *e, const char *path, uint32_t cpus,
			const struct vms_synth_config *cfg, uint64_t trace_id, const char *uname,
			bool host, struct vms_error *err);

#endif
