/* vmscope: what the vCPU state machine publishes.
 *
 * The analysis stage is one publisher and many consumers. The vCPU state machine
 * (lib/analysis/vcpu_state.c) is the only code that interprets scheduler and KVM events of
 * hosts and guests (docs/vm-analysis.md §3); it publishes what happens, in reference-time
 * order, as the observations below. Every other analysis (overlays and guest-thread totals,
 * exit tables, steal and run-queue latency, containment) and every view (the fused
 * physical-CPU view, the Perfetto and HTML exporters, latency blame) is a consumer: it
 * subscribes with vms_analysis_observe(), keeps its own state, and never calls back into the
 * state machine. A consumer that needs something the state machine knows gets it from an
 * observation, never by reaching into another consumer.
 *
 * Order guarantees: observations are delivered synchronously while vms_analysis_event()
 * processes an event, with the event's reference time t (non-decreasing across calls), with
 * one exception: a HLT exit is only understood when its halt ends (kvm_vcpu_wakeup says how
 * long the vCPU halted or polled; a sched_switch says it blocked; the kvm_entry says nothing
 * more was recorded), so the vcpu_state observations of a vCPU inside a HLT exit are
 * published then, with their own earlier t. Per vCPU, t never decreases.
 * For one event, the order is: cpu_run (the CPU's occupant changed), then vcpu_mode / exit,
 * then guest_switch, then vcpu_state and vcpu_instead (a guest sched_wakeup: guest_wakeup),
 * then event (the raw event, last); cpu_occupant where what a CPU shows changes (a gap of
 * lost events on a CPU first, at that CPU's last time before it). At
 * vms_analysis_finish(t_end), every open exit is published as unfinished (exit_end with
 * VMS_EXIT_UNFINISHED), then `finish` is called with t_end, after which nothing is
 * published: consumers close their open intervals there. */
#ifndef VMSCOPE_OBSERVE_H
#define VMSCOPE_OBSERVE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vmscope/analysis.h"
#include "vmscope/error.h"
#include "vmscope/event.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A vCPU's shown state changed at t (status = Trace Compass's numeric encoding). Published
 * only on a change of (status, state), so consecutive observations of one vCPU are the
 * boundaries of maximal intervals. */
/* vidx, in every observation about a vCPU: its index among all guests' vCPUs, ordered by
 * machine then vCPU number (the order of vms_analysis_vcpu()); consumers size per-vCPU
 * arrays with vms_analysis_nr_vcpu_slots(). */
struct vms_obs_vcpu_state {
	uint32_t machine, vcpu, vidx;    /* the guest and its vCPU */
	uint64_t t;
	uint32_t status, old_status;
	enum vms_vcpu_state state, old_state;
	int32_t gtid;                    /* guest thread current on the vCPU: -1 unknown, 0 idle */
	int32_t host;                    /* host machine, -1 none */
	int32_t host_tid;                /* the vCPU's host thread, -1 unknown */
	int32_t host_cpu;                /* preempted/halted: the physical CPU its thread left;
	                                    otherwise the one it runs on; -1 unknown */
	int32_t exit_reason;             /* VMM: the pending exit's reason, else -1 */
	uint32_t isa;                    /* VMM: 1 VMX, 2 SVM, else 0 */
	bool halt_polling;               /* HALTED: the thread polls on its CPU (a CPU burnt) */
	/* the machine whose hypervisor (VMM) or scheduler (preempted, halted) the state is at:
	 * the vCPU's host, or for a nested guest's vCPU (L2) the host of the L1 vCPU its thread
	 * runs on (L0) when that vCPU is in L0's exit or off its physical CPU; -1 for running,
	 * idle and unknown */
	int32_t layer;
};

/* The guest thread current on a vCPU changed (guest sched_switch on guest CPU vcpu). When
 * the guest's coverage of that vCPU ends (its trace stream ended), next_tid is -1: nothing is
 * known of its threads from then on. */
struct vms_obs_guest_switch {
	uint32_t machine, vcpu, vidx;
	uint64_t t;
	int32_t prev_tid, next_tid;      /* 0 = the guest's idle task */
	const char *prev_comm, *next_comm; /* valid during the call only */
	uint64_t prev_state;             /* kernel bits; 0 = runnable */
};

/* A VM exit of a vCPU: begin at kvm_exit; end at the kvm_entry that closes it. */
struct vms_obs_exit {
	uint32_t machine, vcpu, vidx;    /* the guest and its vCPU */
	uint32_t host;                   /* the host machine */
	int32_t host_tid;                /* the vCPU thread */
	uint32_t host_cpu;               /* the physical CPU of the kvm_exit */
	uint64_t t;                      /* begin: the kvm_exit; end: the closing time */
	uint64_t begin;                  /* end only: the exit's kvm_exit time */
	uint32_t isa, reason;            /* isa: 1 VMX, 2 SVM, else 0 */
	uint64_t guest_rip, info1, info2;
	enum vms_exit_end {
		VMS_EXIT_ENDED = 0,      /* closed by its kvm_entry: duration = t - begin */
		VMS_EXIT_UNFINISHED,     /* the trace ended (or the coverage of the host did) */
		VMS_EXIT_LOST,           /* a gap (lost events) closed it: no duration known */
	} how;
	int32_t gtid;                    /* guest thread current on the vCPU, -1 unknown */
};

/* A host physical CPU's occupant: from now on `tid` runs on (host, cpu). Published at every
 * host sched_switch (even when tid does not change). Guest mode on that CPU is published by
 * vcpu_mode. tid 0 is the host's idle; -1 unknown. */
struct vms_obs_cpu_run {
	uint32_t host, cpu;
	uint64_t t;
	int32_t tid;
	const char *comm;                /* valid during the call only; may be "" */
	int32_t prev_tid;
	uint64_t prev_state;             /* kernel bits of the thread that left; 0 = runnable */
	int32_t guest, vcpu, vidx;       /* when tid is a vCPU thread: its guest, vCPU and vidx,
	                                    else -1 */
};

/* A vCPU thread entered (kvm_entry) or left (kvm_exit) guest mode on a physical CPU. */
struct vms_obs_vcpu_mode {
	uint32_t machine, vcpu, vidx;
	uint32_t host, host_cpu;
	int32_t host_tid;
	uint64_t t;
	bool guest_mode;
};

/* A vCPU thread was woken on the host (sched_wakeup of the thread of vCPU (machine, vcpu)). */
struct vms_obs_vcpu_wakeup {
	uint32_t machine, vcpu, vidx;
	uint32_t host;
	int32_t host_tid;
	uint64_t t;
};

/* A guest thread was woken (guest sched_wakeup / sched_wakeup_new) onto vCPU `vcpu` (the
 * event's target CPU, else the CPU it was recorded on). The wait it begins ends at the
 * guest_switch that runs the thread. */
struct vms_obs_guest_wakeup {
	uint32_t machine, vcpu, vidx;    /* the guest and the vCPU the thread will run on */
	uint64_t t;
	int32_t tid;
	const char *comm;                /* valid during the call only; may be "" */
	int32_t waker_vcpu;              /* the vCPU the wake-up was recorded on, -1 unknown */
};

/* What a host physical CPU shows changed (the fused physical-CPU view, docs/vm-analysis.md
 * §7): from t, (host, cpu) runs host thread `tid` (guest -1; 0 the host's idle), or guest
 * `guest`'s vCPU `vcpu` in guest mode, running guest thread `tid` (0 the guest's idle, -1 not
 * known yet). guest -1 and tid -1: nothing is known of the CPU from t on (events were lost
 * there: t is then the time of the last event before the gap, or when the occupant began if
 * later; per CPU, t never decreases).
 *
 * The state machine follows occupants only when some observer has this callback (vmscope
 * pcpus, the export, the HTML report): from the first event recorded on a CPU (the thread
 * that emitted it), a sched_switch's next thread, a vCPU thread's kvm_entry/kvm_exit there,
 * and the thread current on that vCPU in its guest (guest_switch; before the guest's first
 * sched_switch, the thread of its first event on that vCPU). Published when what the CPU
 * shows changes, and when the same occupant's name becomes known (comm was ""). Before the
 * first publication on a CPU, nothing is known of it. */
struct vms_obs_cpu_occupant {
	uint32_t host, cpu;
	uint64_t t;
	int32_t guest, vcpu, vidx;       /* in guest mode: the guest, its vCPU and vidx; else -1 */
	int32_t tid;
	const char *comm;                /* its name ("idle" for a guest's idle, "" when not
	                                    known); 24 bytes, NUL-padded; valid during the call */
};

/* While a vCPU is preempted or halted (its thread off its physical CPU), the host thread
 * that runs on the CPU it left changed (or became known): tid -1 when unknown. Published at
 * the vcpu_state that makes the vCPU preempted/halted and at every later change of that
 * CPU's occupant until the vCPU runs again.
 *
 * At most VMS_INSTEAD_MAX_WAITERS vCPUs waiting on one host CPU at once are told of its
 * occupants, the first to leave it: a vCPU whose thread leaves a CPU where that many already
 * wait gets one vcpu_instead with `unattributed` set (tid -1) and none until it runs again.
 * Its preempted or halted time is exact (its vcpu_state observations); who ran meanwhile is
 * not attributed. A host switch so costs O(VMS_INSTEAD_MAX_WAITERS), not O(vCPUs waiting):
 * a trace leaving N vCPU threads runnable on one CPU would otherwise cost N^2. No real host
 * comes near it (a vCPU thread waits behind a few others). */
#define VMS_INSTEAD_MAX_WAITERS 64
struct vms_obs_vcpu_instead {
	uint32_t machine, vcpu, vidx;
	uint64_t t;
	uint32_t host, host_cpu;
	int32_t tid;
	const char *comm;                /* its name ("" when not known), NUL-terminated within
	                                    24 bytes that may all be read (a consumer copies
	                                    them whole); valid during the call only */
	bool unattributed;               /* beyond VMS_INSTEAD_MAX_WAITERS: tid -1, see above */
};

/* The subscriber. Any callback may be NULL. */
struct vms_observer {
	void *ctx;
	void (*vcpu_state)(void *ctx, const struct vms_obs_vcpu_state *o);
	void (*guest_switch)(void *ctx, const struct vms_obs_guest_switch *o);
	void (*exit_begin)(void *ctx, const struct vms_obs_exit *o);
	void (*exit_end)(void *ctx, const struct vms_obs_exit *o);
	void (*cpu_run)(void *ctx, const struct vms_obs_cpu_run *o);
	void (*vcpu_mode)(void *ctx, const struct vms_obs_vcpu_mode *o);
	void (*vcpu_wakeup)(void *ctx, const struct vms_obs_vcpu_wakeup *o);
	void (*vcpu_instead)(void *ctx, const struct vms_obs_vcpu_instead *o);
	void (*guest_wakeup)(void *ctx, const struct vms_obs_guest_wakeup *o);
	void (*cpu_occupant)(void *ctx, const struct vms_obs_cpu_occupant *o);
	/* every event of the merged stream, after the state machine processed it */
	void (*event)(void *ctx, const struct vms_event *ev, uint64_t t);
	/* the first event's time (before anything else is published) */
	void (*start)(void *ctx, uint64_t t0);
	/* the end: close what is open at t_end; nothing is published after it */
	void (*finish)(void *ctx, uint64_t t_end);
	/* Optional: start afresh for a pass with this model. An observer that has it can take
	 * part in a session's checked single pass (which may run the analysis again with the
	 * model the events revealed): the session calls it before every analysis pass. One
	 * without it is treated like a streaming sink (the session takes the model pass). */
	void (*reset)(void *ctx, const struct vms_model *model);
	/* `event` looks only at events of the analysed kinds (not VMS_K_OTHER): a session may
	 * then leave out the records no analysis reads (vms_source_ops.skip_unread). Without it,
	 * an observer with `event` gets every event of the traces. */
	bool event_kinds_only;
	/* `event` looks only at events of guest machines: the analysis may then leave it out
	 * of a host's events (a hint: it must still ignore one it is given) */
	bool guest_events_only;
	/* the vCPU callbacks (vcpu_state, vcpu_instead, exit_begin, exit_end, guest_switch,
	 * guest_wakeup) matter only for vCPUs of guests with a trace of their own: when no guest
	 * has one (a Xen host, a VM whose host alone was traced), the analysis subscribes the
	 * observer to none of them (a call per vCPU change that could only return) */
	bool traced_guests_only;
};

/* Subscribe before the first vms_analysis_event(); observers are called in the order they
 * were added, after the built-in consumers. Returns 0, or -1 when out of memory. */
int vms_analysis_observe(struct vms_analysis *a, const struct vms_observer *o);
/* A time window from `from` (reference ns): before it the state machine runs but nothing is
 * published; at the first observation at or after it, every consumer gets start(from) and the
 * state known at that instant (lib/analysis/window.c), then everything. Call before the first
 * event. Returns 0, or -1 (out of memory, or too late). */
int vms_analysis_window(struct vms_analysis *a, uint64_t from);
/* The number of vCPUs of all guests (the range of vidx). */
uint32_t vms_analysis_nr_vcpu_slots(const struct vms_analysis *a);

/* Checkpoints (a window computed from the nearest one before it instead of from the start
 * of the traces; lib/session/checkpoints.c keeps them). A run that records them calls
 * vms_analysis_record_checkpoints() before its first event: the state machine then keeps
 * its last words, what a window's gate would know at each instant. vms_analysis_checkpoint()
 * writes the state after the events fed so far (the state machine's and that of a gate told
 * the last words; the consumers need nothing,
 * since in a window they see only what comes after its start). vms_analysis_restore(), on a
 * new analysis of the same model with vms_analysis_window() set and no event fed yet, takes
 * that state back, so that the events after the checkpoint give what the whole run gives.
 * record: 0, or -1 (out of memory, or too late); checkpoint: 0, or -1 when the write fails
 * or something was told that the last words cannot hold (a CPU past 4096);
 * restore: 0; 1 when the checkpoint was recorded by a run that followed the host CPUs'
 * occupants and this one does not, or the reverse (nothing restored: replay instead); <0
 * with err set (another layout or build, cut, or values no run makes). */
int vms_analysis_record_checkpoints(struct vms_analysis *a);
int vms_analysis_checkpoint(struct vms_analysis *a, FILE *f);
int vms_analysis_restore(struct vms_analysis *a, const void *buf, size_t len,
			 struct vms_error *err);

#ifdef __cplusplus
}
#endif
#endif
