/* One physical CPU of the host that runs one guest vCPU: the vCPU's host thread (kvm_entry /
 * kvm_exit with their VMX reasons, halts, wake-ups), the noisy neighbour's thread that preempts
 * it, and inside the guest the vCPU's own scheduler, whose events are written only while the
 * vCPU is in guest mode. The lane also keeps the ground truth of that vCPU: its state at every
 * instant (vm-analysis.md section 3), its exits, who stole its CPU, its guest threads. */
#ifndef VMS_SYNTH_VCPU_LANE_H
#define VMS_SYNTH_VCPU_LANE_H

#include <stdbool.h>
#include <stdint.h>

#include "synth/sched_model.h"
#include "synth/synth_context.h"

#define VMS_LANE_EXIT_KINDS 8
#define VMS_LANE_HOT_RIPS 8

/* What the host does with the vCPU: HALTED is a HLT exit's halt with the thread off its CPU,
 * POLL the halt with the thread polling on its CPU, HALT_ONCPU the end of a blocked halt
 * after the thread is back on its CPU (until kvm_vcpu_wakeup). */
enum vms_lane_hmode { VMS_H_NONE = 0, VMS_H_GUEST, VMS_H_VMM, VMS_H_PREEMPTED, VMS_H_HALTED,
		      VMS_H_POLL, VMS_H_HALT_ONCPU };

struct vms_vcpu_lane {
	struct vms_synth_ctx *x;
	struct vms_synth_vcpu_truth *vt;
	uint32_t vcpu, cpu;
	struct vms_task vthr, swapper, noisy, kworker, gidle;
	struct vms_task gtrace;             /* the guest's trace-cmd agent, woken at its stop */
	uint64_t gstop_at;                  /* the guest's recording stops at the first kvm_entry
	                                       at or after it (UINT64_MAX: with the host's) */
	bool gstopped;
	struct vms_sched g;                 /* the guest's scheduler on this vCPU */
	/* the neighbour */
	uint64_t noisy_wake;                /* UINT64_MAX when there is none */
	uint64_t noisy_phase_len, noisy_phase_off, noisy_t0;
	/* this guest CPU's TSC */
	uint64_t ratio;
	uint32_t frac;
	int64_t tsc_offset;
	/* progress */
	uint64_t t;                         /* next kvm_entry */
	uint64_t stop_at;                   /* stop after the first kvm_entry at or after it */
	bool done;
	uint64_t rip;
	uint64_t hot_rip[VMS_LANE_EXIT_KINDS][VMS_LANE_HOT_RIPS]; /* where the guest exits */
	uint32_t inject;                    /* intr_info of the next kvm_entry */
	/* truth */
	uint8_t hmode, base;
	int32_t gcur;                       /* truth index of the current guest thread, -1 */
	uint64_t since;                     /* start of the current state interval */
	bool in_exit;
	uint32_t exit_reason;
	uint64_t exit_tsc, entry_tsc;
	uint64_t windows;                   /* guest-mode windows with guest events */
	uint64_t counted_entry;             /* the window last counted */
	uint64_t nwin;                      /* guest-mode windows so far (vmsync every 32nd) */
	bool sync_pending;                  /* a vmsync_gh pair is due at the next exit */
	bool have_sample;
	struct vms_synth_sync_sample sample;
};

/* A VMX exit reason as the lanes plant it: relative weight among a busy guest's exits, cost
 * (min + exponential), RIP advance when KVM skips the instruction. */
struct vms_exit_kind {
	uint32_t code;
	const char *name;
	uint32_t weight;
	double min_ns, mean_ns;
	uint8_t insn_len;
};
const struct vms_exit_kind *vms_lane_exit_hlt(void);
const struct vms_exit_kind *vms_lane_exit_irq(void);   /* EXTERNAL_INTERRUPT: the host's */
const struct vms_exit_kind *vms_lane_exit_busy(struct vms_prng *r); /* drawn by weight */
/* A non-HLT exit's handling time, host TSC cycles. */
uint64_t vms_lane_exit_cost(struct vms_synth_ctx *x, const struct vms_exit_kind *k);
/* The state a vCPU shows (enum vms_synth_state) in host mode `hmode` over guest base `base`:
 * preempted/halted over vmm over the base (vm-analysis.md section 3). */
int vms_lane_shown_state(uint8_t hmode, uint8_t base);
/* The truth of one vCPU: a finished exit of `ns`; `ns` stolen by host thread t. */
void vms_synth_truth_add_exit(struct vms_synth_vcpu_truth *vt, uint32_t reason, const char *name,
			      uint64_t ns);
void vms_synth_truth_add_steal(struct vms_synth_vcpu_truth *vt, const struct vms_task *t,
			       uint64_t ns);

void vms_vcpu_lane_init(struct vms_vcpu_lane *L, struct vms_synth_ctx *x,
			struct vms_synth_vcpu_truth *vt, uint32_t vcpu, uint32_t cpu, uint64_t t0);
/* Guest threads of this vCPU (before start); `truth` is their index in the truth. */
void vms_vcpu_lane_add_thread(struct vms_vcpu_lane *L, const struct vms_task *t, double burst_ns,
			      double sleep_ns, int32_t truth);
/* The first event: the vCPU thread is switched in at t0. */
void vms_vcpu_lane_start(struct vms_vcpu_lane *L, uint64_t t0);
/* One guest-mode window and the exit that ends it (sets `done` at the stop). */
void vms_vcpu_lane_cycle(struct vms_vcpu_lane *L);
/* Close the truth's last interval at the end of the session window. */
void vms_vcpu_lane_finish(struct vms_vcpu_lane *L, uint64_t end_tsc);

#endif
