/* vmscope: why was a guest thread late? Wake-up latency decomposed across layers.
 *
 * For every guest thread wake-up (guest sched_wakeup / sched_waking of tid, then the guest
 * sched_switch that runs it), [wakeup, run) is split into disjoint causes whose durations add
 * up exactly to the latency, by what the vCPU it was woken onto (the wake-up's target_cpu)
 * was doing meanwhile, as the vCPU state machine published it:
 *   guest-runqueue  the vCPU ran guest code: another guest thread (or the guest's idle task
 *                   on its way to switch) had it
 *   preempted       the vCPU's host thread was runnable but off its CPU (host threads ran)
 *   exits           the vCPU was in a VM exit, by reason (HLT's handling excepted)
 *   halted-wakeup   the vCPU was halted when the wake-up came and the host had to wake its
 *                   thread (the halt and the HLT exit's handling around it)
 *   unknown         outside the traces' coverage, or older than the history kept
 * A consumer of observations (vmscope/observe.h). Memory: per guest thread one pending
 * wake-up, per vCPU the state history since its oldest pending wake-up, bounded at 8,192
 * changes (384 KiB): beyond, the oldest half is dropped and a wait that reached back there
 * has that part as unknown (a thread woken and not run for that long; on the synthesized
 * pairs the bound changes no wake-up's breakdown and keeps memory flat). */
#ifndef VMSCOPE_LATENCY_H
#define VMSCOPE_LATENCY_H

#include <stdbool.h>
#include <stdint.h>

#include "vmscope/analysis.h"
#include "vmscope/model.h"
#include "vmscope/observe.h"

#ifdef __cplusplus
extern "C" {
#endif

enum vms_cause {
	VMS_CAUSE_GUEST_RUNQUEUE = 0,
	VMS_CAUSE_PREEMPTED,
	VMS_CAUSE_EXITS,
	VMS_CAUSE_HALTED_WAKEUP,
	VMS_CAUSE_UNKNOWN,
	VMS_CAUSE_COUNT
};
const char *vms_cause_name(enum vms_cause c); /* "guest-runqueue", ... */

struct vms_wakeup {
	uint32_t machine;             /* the guest */
	int32_t tid;
	char comm[24];
	uint32_t vcpu;                /* the vCPU it was woken onto */
	int32_t waker_vcpu;           /* the vCPU whose sched_wakeup woke it (-1 unknown): another
	                                 vCPU means an IPI was needed */
	uint64_t wakeup, run;         /* reference ns */
	uint64_t latency;             /* run - wakeup = the sum of ns[] */
	uint64_t ns[VMS_CAUSE_COUNT];
	uint32_t exit_isa, exit_reason; /* the exit reason that cost the most (exits > 0) */
	enum vms_cause top;           /* the largest cause */
	char culprit[48];             /* who, for the top cause: the guest thread, the host
	                                 thread, the exit reason ("exit:HLT"), "" unknown; a
	                                 nested guest's culprit at the layer below its host (L0)
	                                 ends with " at " and that machine's name */
	/* nested guests (vms_model_nested): the layer of each cause (vms_obs_vcpu_state.layer):
	 * of ns[], the part at the layer below the guest's host (L0 for an L2 guest, below_layer;
	 * the rest is at its host, L1); 0 and -1 for a guest of one layer */
	uint64_t below_ns[VMS_CAUSE_COUNT];
	int32_t below_layer;
	int32_t layer;                /* the top culprit's layer, -1 none */
};

/* Per guest thread, after finish */
struct vms_latency_thread {
	uint32_t machine;
	int32_t tid;
	char comm[24];
	const struct vms_dist *dist;  /* latencies */
	uint64_t tail_count;          /* wake-ups above p99 among the slowest kept (64) */
	uint64_t tail_ns[VMS_CAUSE_COUNT]; /* their causes, summed */
	char tail_culprit[48];        /* the top culprit of the tail's top cause */
};

typedef void (*vms_wakeup_fn)(void *ctx, const struct vms_wakeup *w);

struct vms_latency;
/* A consumer for the analysis of `model` (nr_vcpu_slots = vms_analysis_nr_vcpu_slots). Every
 * finished wake-up goes to fn (may be NULL). Fills *o: subscribe it with vms_session_observe
 * or vms_analysis_observe. */
struct vms_latency *vms_latency_new(const struct vms_model *model, vms_wakeup_fn fn, void *ctx,
				    struct vms_observer *o);
void vms_latency_free(struct vms_latency *l);
/* After the run: per thread, ordered by machine then tid. */
uint32_t vms_latency_nr_threads(const struct vms_latency *l);
const struct vms_latency_thread *vms_latency_thread(const struct vms_latency *l, uint32_t i);

#ifdef __cplusplus
}
#endif
#endif
