/* vmscope: the analyses (docs/vm-analysis.md §3-6), consumers of the merged event stream.
 *
 * vms_analysis owns the state of every analysis: vCPU states, guest-thread overlays, VM exits
 * per reason, who took the CPU (steal) and run-queue latency, and the containment check.
 * Intervals are streamed to sinks as they close (nothing grows with trace length); tables are
 * aggregated in memory bounded by the model (machines, vCPUs, threads, exit reasons). */
#ifndef VMSCOPE_ANALYSIS_H
#define VMSCOPE_ANALYSIS_H

#include <stdbool.h>
#include <stdint.h>

#include "vmscope/event.h"
#include "vmscope/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Trace Compass's encoding (spec §3) */
enum vms_vcpu_status {
	VMS_VCPU_UNKNOWN = 0,
	VMS_VCPU_IDLE = 1,
	VMS_VCPU_RUNNING = 2,
	VMS_VCPU_FLAG_VMM = 128,
	VMS_VCPU_FLAG_PREEMPTED = 256,
};

/* What is shown, by precedence: preempted/halted over vmm over the base state. */
enum vms_vcpu_state {
	VMS_STATE_UNKNOWN = 0, VMS_STATE_IDLE, VMS_STATE_RUNNING, VMS_STATE_VMM,
	VMS_STATE_PREEMPTED, VMS_STATE_HALTED, VMS_STATE_COUNT
};
const char *vms_vcpu_state_name(enum vms_vcpu_state s);
/* What cannot be seen is not a 0: a vCPU's time in state st is unknown with no host trace
 * (vmm, preempted, halted), a host that recorded no sched_switch (preempted), or a guest
 * that was not traced (idle, running: its time in guest mode is all that is known, and
 * counts as unknown). report --json writes null for it, the db NULL. */
bool vms_vcpu_state_unseen(bool traced, bool host_visible, bool preempt_visible,
			   enum vms_vcpu_state st);

/* Why a guest thread was not really running (spec §4) */
enum vms_overlay_reason { VMS_OVERLAY_VMM = 1, VMS_OVERLAY_PREEMPTED, VMS_OVERLAY_HALTED };
const char *vms_overlay_reason_name(enum vms_overlay_reason r);

struct vms_vcpu_interval {
	uint32_t machine, vcpu;
	uint64_t start, end;     /* reference ns, [start, end) */
	uint32_t status;         /* numeric encoding */
	enum vms_vcpu_state state;
	int32_t layer;           /* the machine of the state's cause (vms_obs_vcpu_state) */
};

struct vms_thread_interval {
	uint32_t machine;        /* the guest */
	int32_t tid;             /* guest thread */
	uint32_t vcpu;
	uint64_t start, end;
	enum vms_overlay_reason reason;
	int32_t exit_reason;     /* for VMM: the kvm_exit reason code, else -1 */
	uint32_t isa;            /* for VMM: 1 VMX, 2 SVM */
	int32_t host_tid;        /* host thread that ran instead, -1 when not known: for VMM the
	                            vCPU thread itself (in the hypervisor); for preempted/halted
	                            the thread current on the physical CPU the vCPU thread left
	                            (an overlay is split when that thread changes);
	                            VMS_TID_UNATTRIBUTED when the vCPU waited on a CPU beyond the
	                            VMS_INSTEAD_MAX_WAITERS followed there (observe.h) */
};

/* host_tid of a wait whose host CPU's occupants were not followed for this vCPU (< 0 like
 * every unknown tid: `host_tid >= 0` still means "a known thread") */
#define VMS_TID_UNATTRIBUTED (-2)

/* Streaming outputs. Any callback may be NULL. */
struct vms_sinks {
	void *ctx;
	void (*vcpu_interval)(void *ctx, const struct vms_vcpu_interval *iv);
	void (*thread_interval)(void *ctx, const struct vms_thread_interval *iv);
	/* These sinks belong to a subscribed observer whose reset (vms_observer.reset) takes
	 * back what they were given (the export: its file is rewritten), so a session may run
	 * the checked single pass with them, not only the model pass. */
	bool reset_with_observer;
	/* The caller reads no table of exits, times or thieves (vms_vcpu_stats: exits,
	 * nr_exits, exits_unpaired left empty; ns, halt_poll_ns and hypervisor_ns 0 unless
	 * vcpu_interval is set; steal holds the unattributed bucket only; runq_latency NULL;
	 * vms_analysis_guest_exits none; no guest thread unless thread_interval is set, and
	 * then with no reasons):
	 * what only makes those is not run (the export: its slices say it all, and it must
	 * cost no more than `report`). The unattributed waits are still counted
	 * (vms_analysis_unattributed): the run's warning reads them. */
	bool intervals_only;
};

/* A distribution of durations: exact count/sum/min/max; percentiles exact while the number
 * of samples is small (<= 4096), then from a log-linear histogram (128 sub-buckets per power
 * of two, value = bucket middle clamped to [min, max]: relative error < 0.4%).
 * Percentile method: nearest rank, the smallest sample x such that at least p% of the
 * samples are <= x, i.e. the sample of rank ceil(p/100 * n) (rank 1 for p = 0). 0 when empty. */
struct vms_dist;
struct vms_dist *vms_dist_new(void);
void vms_dist_free(struct vms_dist *d);
void vms_dist_add(struct vms_dist *d, uint64_t v);
uint64_t vms_dist_count(const struct vms_dist *d);
uint64_t vms_dist_sum(const struct vms_dist *d);
uint64_t vms_dist_min(const struct vms_dist *d);
uint64_t vms_dist_max(const struct vms_dist *d);
uint64_t vms_dist_percentile(const struct vms_dist *d, double p); /* p in [0,100] */
/* Are the percentiles exact (every sample kept), or from the histogram (approximate)? */
bool vms_dist_exact(const struct vms_dist *d);

/* Exit names: VMX (isa 1) and SVM (isa 2) tables; NULL when the code is unknown. */
const char *vms_exit_reason_name(uint32_t isa, uint32_t reason);

/* Halt exits (VMX HLT 12, SVM HLT 0x78): the guest asked to sleep. Time in them is halted,
 * not hypervisor time, though the numeric status keeps Trace Compass's VMM flag. */
bool vms_exit_is_halt(uint32_t isa, uint32_t reason);

struct vms_exit_stats {
	uint32_t isa, reason;
	const struct vms_dist *dist;  /* cost of each finished exit (kvm_exit -> its kvm_entry):
	                                 vms_dist_count of them, total vms_dist_sum */
	uint64_t unfinished;          /* kvm_exits with no known end (the trace ended, or lost
	                                 events: an exit followed by another exit, a wake-up
	                                 outside any halt, the thread on another CPU with no
	                                 switch): counted, not in the costs */
	uint64_t count;               /* every kvm_exit: vms_dist_count + unfinished */
	uint64_t below_ns;            /* nested guests (vms_model_nested): of the finished exits'
	                                 total, the time the layer below the exit's hypervisor
	                                 took (an L2 exit handled by L1: L0's part, while L1's
	                                 vCPU was in L0's exit or off its physical CPU); the
	                                 rest is L1's. 0 otherwise */
};

/* Who took a vCPU's CPU. Exact in every normal trace: one entry per host thread. Two
 * buckets keep a hostile trace's table bounded, each with its exact total:
 *  - UNATTRIBUTED: time preempted on a host CPU where VMS_INSTEAD_MAX_WAITERS (64) vCPUs
 *    already waited (vmscope/observe.h): who ran is not followed for it;
 *  - OTHERS: the host threads beyond the first VMS_STEAL_MAX_THIEVES (256) of the vCPU (or
 *    beyond VMS_STEAL_MAX_ENTRIES of all vCPUs), `threads` of them (at least that many when
 *    threads_at_least: counting them distinct took more than a fixed budget); one per layer
 *    whose scheduler ran them (`host`: a nested guest's vCPU has one at L1 and one at L0,
 *    whose tids are two machines'), in machine order.
 * Bucket entries have host_tid = host_pid = -1 and a comm naming them ("unattributed",
 * "other threads"). */
#define VMS_STEAL_MAX_THIEVES 256
#define VMS_STEAL_MAX_ENTRIES (1u << 20)
enum vms_steal_kind { VMS_STEAL_THREAD = 0, VMS_STEAL_UNATTRIBUTED, VMS_STEAL_OTHERS };
/* "thread", "unattributed", "other threads": a steal entry's kind as the outputs name it */
const char *vms_steal_kind_name(enum vms_steal_kind k);
struct vms_steal_entry {
	int32_t host_tid, host_pid;
	uint32_t host;                      /* the machine of host_tid: the vCPU's host, or for a
	                                       nested guest's vCPU preempted at the layer below,
	                                       that layer's (L0) */
	char comm[24];
	uint64_t ns;
	enum vms_steal_kind kind;
	uint64_t threads;                   /* OTHERS: distinct host threads summed */
	bool threads_at_least;
};

/* Host CPUs where more than VMS_INSTEAD_MAX_WAITERS vCPUs waited at once: `vcpus` vCPUs
 * (a vCPU counted once per stay) had `ns` of preempted time there with who ran unattributed. */
struct vms_unattributed {
	uint32_t host, cpu;
	uint64_t vcpus, ns;
};

struct vms_vcpu_stats {
	uint32_t machine, vcpu;
	int32_t host_tid;
	uint64_t first, last;               /* span analysed (reference ns) */
	uint64_t ns[VMS_STATE_COUNT];       /* time per shown state; UNKNOWN is time outside
	                                       the traces' coverage or before anything was known */
	uint64_t halt_poll_ns;              /* of ns[HALTED]: halt-polling, the vCPU thread
	                                       spinning on its host CPU (a CPU burnt for the
	                                       guest), from kvm_vcpu_wakeup with waited = 0 */
	uint64_t hypervisor_ns;             /* time handling exits: ns[VMM] (halted and
	                                       preempted time are not the hypervisor's) */
	uint64_t below_ns[VMS_STATE_COUNT]; /* nested guests: of ns[], the time at the layer
	                                       below its host (L0 for an L2 vCPU: in L0's exit,
	                                       preempted or halted in L0); 0 otherwise */
	bool preempt_visible;               /* its host recorded sched_switch: preemption can be
	                                       seen (else preempted/halted-blocked are unknown) */
	bool host_visible;                  /* a host trace covers this vCPU (else VMM and
	                                       preemption are unknown, not zero) */
	uint32_t nr_exits;
	struct vms_exit_stats *exits;       /* per (isa, reason), sorted by total time, descending */
	uint64_t exits_unpaired;            /* unfinished exits (see vms_exit_stats.unfinished) */
	uint32_t nr_steal;
	struct vms_steal_entry *steal;      /* host threads sorted by ns, descending, then the
	                                       UNATTRIBUTED and OTHERS buckets when not empty;
	                                       only PREEMPTED time (runnable vCPU thread), not
	                                       HALTED time */
	const struct vms_dist *runq_latency; /* sched_wakeup -> sched_switch in, of the vCPU thread */
	uint64_t contained, contain_total;  /* guest events inside a guest-mode window */
};

struct vms_gthread_stats {
	uint32_t machine;
	int32_t tid;
	char comm[24];
	uint64_t ns_running, ns_vmm, ns_preempted, ns_halted; /* while current on a vCPU, by
	                                                          the vCPU's shown state */
	uint32_t nr_reasons;
	struct vms_gthread_reason { uint32_t isa, reason; uint64_t ns, count; }
		*reasons;                 /* sorted by ns, desc */
};

struct vms_analysis;

struct vms_analysis *vms_analysis_new(struct vms_model *model, const struct vms_sinks *sinks);
void vms_analysis_free(struct vms_analysis *a);
/* Before the first event: host `machine`'s trace cannot hold sched_switch (its source has no
 * such event type). Then who runs on its CPUs is known only where its events prove it (the
 * physical-CPU view, docs/vm-analysis.md §7: a vCPU between kvm_entry and kvm_exit); the rest
 * of their time is unknown, not the last thread seen there carried forward. Not called: the
 * host's CPUs are followed through its sched_switch events. */
void vms_analysis_host_unscheduled(struct vms_analysis *a, uint32_t machine);
/* The occupants of the host CPUs (physical-CPU view) follow each host thread to the CPU it
 * was last seen on, so that a CPU whose switch away from a thread was lost stops showing it
 * once the thread is seen elsewhere; at most VMS_OCC_THREADS_MAX (262144) threads are
 * followed. How many times a thread beyond them was seen on a CPU, not followed (its old CPU
 * may still show it after a lost switch: the run's warning says so). */
#define VMS_OCC_THREADS_MAX 262144
uint64_t vms_analysis_threads_unfollowed(const struct vms_analysis *a);
/* Feed every event in merged reference-time order; t is the event's reference time
 * (ev->ts is not used). ev->machine must be the machine (= source) index. The first event's t
 * starts every vCPU's first interval (UNKNOWN until something is known). */
void vms_analysis_event(struct vms_analysis *a, const struct vms_event *ev, uint64_t t);
/* Coverage (the session calls these as the merge finds them): stream `stream` of machine
 * `machine` delivered its last event at t; machine_end: every stream of the machine has.
 * After it, nothing that stream (machine) told is known: a guest vCPU's base state and its
 * current thread become unknown, a host's view of its vCPU threads (VMM, preempted) too. */
void vms_analysis_stream_end(struct vms_analysis *a, uint32_t machine, uint32_t stream,
			     uint64_t t);
void vms_analysis_machine_end(struct vms_analysis *a, uint32_t machine, uint64_t t);
/* Close every open interval at t_end and compute the tables. */
void vms_analysis_finish(struct vms_analysis *a, uint64_t t_end);

/* Results (valid after finish, until free) */
/* vCPUs of every guest machine (traced or not), ordered by machine index then vCPU number. */
uint32_t vms_analysis_nr_vcpus(const struct vms_analysis *a);
const struct vms_vcpu_stats *vms_analysis_vcpu(const struct vms_analysis *a, uint32_t i);
/* Guest threads that were ever current on a vCPU (tid > 0), ordered by machine then tid. */
/* Host CPUs where who ran was left unattributed for some vCPUs (vms_unattributed), in the
 * order first met; *n = 0 when none (every normal trace). */
const struct vms_unattributed *vms_analysis_unattributed(const struct vms_analysis *a,
							 uint32_t *n);
uint32_t vms_analysis_nr_gthreads(const struct vms_analysis *a);
const struct vms_gthread_stats *vms_analysis_gthread(const struct vms_analysis *a, uint32_t i);
/* Exits of all vCPUs of guest `machine` per (isa, reason), sorted by total time descending;
 * *nr = 0 and NULL when none. */
const struct vms_exit_stats *vms_analysis_guest_exits(const struct vms_analysis *a,
						      uint32_t machine, uint32_t *nr);
/* The kinds the analyses need (sets wanted[k] = true, leaves others untouched). The
 * containment check counts every guest event, so guest sources should get all kinds. */
void vms_analysis_wanted_kinds(bool wanted[VMS_K_COUNT]);

#ifdef __cplusplus
}
#endif
#endif
