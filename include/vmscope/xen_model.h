/* vmscope: the Xen model's own accounting of a xentrace host, the way `xenalyze --summary`
 * does it (tools/xentrace/xenalyze.c), so that its numbers can be checked against xenalyze's
 * on the same file: per domain and vCPU, the time in each runstate (running, runnable with
 * its wake / preempt split, blocked, offline, lost) and the HVM exits per reason with their
 * cost in cycles.
 *
 * It consumes the events of one xentrace source in merged order (vms_xen_model_event, from a
 * session's event callback or an observer) and reads only what the reader keeps of each record
 * (vmscope/xentrace.h): raw TSC cycles, the physical CPU, the record type and its fields.
 *
 * xenalyze's rules, followed here:
 *  - an interval counts when it ends after it starts (count = such intervals, cycles = their
 *    sum); the interval open when the trace ends is not counted, except for a vCPU running
 *    on a CPU when that CPU's records end: it is closed there ("lost");
 *  - a vCPU's accounting starts at the first record that puts it into running ("init" before);
 *    on a CPU that was running something unknown, the first running vCPU is taken as running
 *    from the CPU's first TSC;
 *  - a runstate record that contradicts what is known (TSC skew between CPUs) starts a new
 *    interval of unknown start;
 *  - an HVM exit (VMEXIT) is closed by the next VMENTRY of its vCPU, or when the vCPU becomes
 *    runnable (so that the time a halted vCPU waits for a CPU is not charged to HLT); its cost
 *    is the cycles in between; lost records drop a pending exit.
 * A lost-records marker is handled as xenalyze does, at the first lost TSC it carries and
 * again at its own TSC (the reader gives both events). Where they differ: xenalyze's
 * TSC-skew correction (shifting a CPU's later TSCs) is not applied: a skew is counted in
 * `skews`. */
#ifndef VMSCOPE_XEN_MODEL_H
#define VMSCOPE_XEN_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "vmscope/event.h"

#ifdef __cplusplus
extern "C" {
#endif

/* xenalyze's runstates (RUNSTATE_*) */
enum vms_xen_rs {
	VMS_XEN_RS_RUNNING = 0, VMS_XEN_RS_RUNNABLE, VMS_XEN_RS_BLOCKED, VMS_XEN_RS_OFFLINE,
	VMS_XEN_RS_LOST, VMS_XEN_RS_QUEUED, VMS_XEN_RS_INIT, VMS_XEN_NR_RS
};
const char *vms_xen_rs_name(unsigned rs);
/* how a runnable interval began (xenalyze's RUNNABLE_STATE_*) */
enum vms_xen_runnable {
	VMS_XEN_RUNNABLE_INVALID = 0, VMS_XEN_RUNNABLE_WAKE, VMS_XEN_RUNNABLE_PREEMPT,
	VMS_XEN_RUNNABLE_OTHER, VMS_XEN_NR_RUNNABLE
};
const char *vms_xen_runnable_name(unsigned r);

struct vms_xen_cycles {
	uint64_t count;    /* intervals longer than 0 cycles */
	uint64_t events;   /* every interval (xenalyze's event_count: what its exit table shows) */
	uint64_t cycles;   /* their sum */
};

struct vms_xen_exit_row {
	uint32_t reason;
	struct vms_xen_cycles c;
};

struct vms_xen_vcpu_acct {
	uint32_t dom, vcpu;
	struct vms_xen_cycles rs[VMS_XEN_NR_RS];
	struct vms_xen_cycles runnable[VMS_XEN_NR_RUNNABLE];
	bool hvm;
	uint32_t nr_exits;                 /* rows by reason, ascending */
	const struct vms_xen_exit_row *exits;
};

struct vms_xen_model;

/* For the events of source `machine` (ev->machine); others are ignored. isa: 1 VMX, 2 SVM. */
struct vms_xen_model *vms_xen_model_new(uint32_t machine, uint32_t isa);
void vms_xen_model_free(struct vms_xen_model *x);
void vms_xen_model_event(struct vms_xen_model *x, const struct vms_event *ev);
/* Close what xenalyze closes at the end (each CPU's running vCPU at its last TSC). */
void vms_xen_model_finish(struct vms_xen_model *x);
/* The records of physical CPU `cpu` have ended (the merge has no more of its stream):
 * xenalyze's deactivate_pcpu, where it happens in the merged order (its running vCPU is
 * LOST from the CPU's last TSC, before the markers of the other CPUs that follow make the
 * vCPUs not running LOST); vms_xen_model_finish does it for the CPUs not ended so. */
void vms_xen_model_cpu_end(struct vms_xen_model *x, uint32_t cpu);
/* vCPUs of real domains (the idle domain included, xenalyze's per-CPU placeholder not),
 * ordered by domain then vCPU; valid after finish. */
uint32_t vms_xen_model_nr_vcpus(const struct vms_xen_model *x);
const struct vms_xen_vcpu_acct *vms_xen_model_vcpu(const struct vms_xen_model *x, uint32_t i);
/* Records that xenalyze would stop at or that contradict what is known (kept going here). */
uint64_t vms_xen_model_anomalies(const struct vms_xen_model *x);
uint64_t vms_xen_model_skews(const struct vms_xen_model *x);

#ifdef __cplusplus
}
#endif
#endif
