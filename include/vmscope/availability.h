/* vmscope: what the given traces can tell, analysis by analysis.
 *
 * Each analysis needs some event kinds on some machine (the host's kvm_entry/kvm_exit and
 * sched_switch, the guest's sched_switch and sched_wakeup, ...), links between machines and
 * a clock shared with the reference. After a run (or an iteration, for `info`) the session
 * knows how many events of each kind every trace holds and what the model linked, so this
 * says, per analysis, whether it is available, partial or not available, and the missing
 * event or option that decides it. `vmscope info` prints the table; the warnings of every
 * command (tools/vmscope/cli.c) use the same rows and wording, pointing to
 * docs/recording.md, which says how to record what is missing. */
#ifndef VMSCOPE_AVAILABILITY_H
#define VMSCOPE_AVAILABILITY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vms_avail_what {
	VMS_AV_VCPU_STATES = 0, /* guest code, hypervisor, off its CPU: per vCPU */
	VMS_AV_PREEMPTION,      /* preemption and steal: who took the vCPU's CPU, run-queue wait */
	VMS_AV_HALTED,          /* halted (nothing to do) vs preempted (wanted to run) */
	VMS_AV_EXITS,           /* VM exits and their cost */
	VMS_AV_OVERLAYS,        /* guest threads: when they were stopped by their vCPU */
	VMS_AV_LATENCY,         /* guest thread wake-up latency, blamed across layers */
	VMS_AV_PCPU_VIEW,       /* the fused physical CPU view */
	VMS_AV_CLOCK_SYNC,      /* every trace on the reference clock */
	VMS_AV_COUNT
};

enum vms_avail_level { VMS_AVAIL_YES = 0, VMS_AVAIL_PARTIAL, VMS_AVAIL_NO };

struct vms_avail_row {
	enum vms_avail_level level;
	/* the event kind or option that decides it ("sched_switch", "kvm_entry", "guest
	 * trace", "TIME_SHIFT", ...); "" when available */
	char missing[32];
	/* why, as a sentence fragment naming the machine ("host recorded no sched_switch:
	 * when its vCPU threads were off their CPU is unknown"); for an available row, what it
	 * rests on ("one trace: one clock") or "" */
	char why[256];
};

/* "vCPU states", "preemption and steal", ...: the table's words */
const char *vms_avail_what_name(enum vms_avail_what w);
/* "vcpu_states", "preemption", ...: the JSON keys */
const char *vms_avail_what_key(enum vms_avail_what w);
/* "available", "partial", "not available" */
const char *vms_avail_level_name(enum vms_avail_level l);

/* The table for the session's traces, after vms_session_run or vms_session_iterate (it
 * reads the counts of that pass and the model). */
struct vms_session;
void vms_session_availability(struct vms_session *s, struct vms_avail_row rows[VMS_AV_COUNT]);

#ifdef __cplusplus
}
#endif
#endif
