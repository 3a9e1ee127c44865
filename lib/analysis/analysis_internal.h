/* vmscope internal: the state shared by the analyses (include/vmscope/analysis.h is the
 * contract). Everything here is sized by the model (machines, vCPUs, CPUs, threads, exit
 * reasons), never by the number of events. */
#ifndef VMS_ANALYSIS_INTERNAL_H
#define VMS_ANALYSIS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "model/keymap.h"
#include "vmscope/analysis.h"

#define AN_MAX_CPUS 4096   /* physical CPUs of one host tracked; beyond is damage */

/* One (isa, reason) row of an exit table */
struct an_exit_row {
	uint32_t isa, reason;
	struct vms_dist *dist;
};

struct an_exit_table {
	struct an_exit_row *row;
	uint32_t n, cap;
	uint32_t last;             /* index of the last hit: exits come in runs of one reason */
};

/* What runs on one physical CPU of a host (from its sched_switch events). */
struct an_cpu {
	int32_t tid;               /* -1 unknown */
	char comm[24];
	int32_t left_head;         /* first off-CPU vCPU (index in an->v) whose thread left this
	                              CPU, -1 none: a list, so that a switch here updates them
	                              without scanning every vCPU */
};

struct an_machine {
	bool host, guest;
	uint32_t vcpu_base, nr_vcpus; /* its vCPUs in an->v[] (as a guest) */
	struct an_cpu *cpu;        /* as a host: [nr_cpus] */
	uint32_t nr_cpus;
	struct an_exit_table exits; /* as a guest: all its vCPUs */
};

/* A piece of time during which nothing that the thread overlays, the guest-thread totals
 * and the steal accounting look at changes on one vCPU. */
struct an_segment {
	uint64_t start;
	enum vms_vcpu_state state;
	int32_t gtid;              /* guest thread current on the vCPU, -1 unknown */
	int32_t gidx;              /* its index in an->gthreads, -1 none (no lookup per event) */
	int32_t exit_reason;       /* VMM: the pending exit's reason, else -1 */
	uint32_t isa;
	int32_t host_tid;          /* who ran instead (see vms_thread_interval) */
	char comm[24];             /* its comm (steal entries) */
};

struct an_vcpu {
	uint32_t machine, vcpu;
	int32_t host;              /* host machine, -1 when none */
	int32_t host_tid;          /* main host thread (from the model), -1 unknown */

	/* §3 state */
	uint32_t base;             /* VMS_VCPU_UNKNOWN / IDLE / RUNNING */
	bool vmm, preempted, halted;
	uint32_t status;           /* the current interval's value */
	enum vms_vcpu_state state;
	uint64_t iv_start;
	uint64_t ns[VMS_STATE_COUNT];

	/* §4 */
	int32_t gtid;              /* guest thread current on this vCPU, -1 unknown */
	int32_t gidx;              /* its index in an->gthreads, -1 none */
	struct an_segment seg;

	/* §5 */
	bool exit_pending;
	uint64_t exit_t;
	uint32_t exit_isa, exit_reason;
	bool have_exit;            /* exit_isa/exit_reason hold the last exit seen */
	struct an_exit_table exits;
	uint64_t exits_unpaired;

	/* §6 */
	bool left_valid;           /* on the left_cpu list of its host */
	uint32_t left_cpu;         /* physical CPU the thread left when it was switched out */
	int32_t left_prev, left_next; /* that list's links */
	struct vms_steal_entry *steal;
	uint32_t nr_steal, cap_steal;
	bool wake_pending;
	uint64_t wake_t;
	struct vms_dist *runq;

	/* §8 containment */
	int8_t guest_mode;         /* 1 between kvm_entry and kvm_exit, 0 outside, -1 unknown */
	uint64_t contained, contain_total;
};

/* Per guest thread totals (§4) */
struct an_gthread {
	struct vms_gthread_stats st;
	uint32_t cap_reasons;
	uint32_t last_reason;      /* index of the last reason row used */
};

struct vms_analysis {
	struct vms_model *model;
	struct vms_sinks sinks;
	struct an_machine *mach;
	uint32_t nr_mach;
	struct an_vcpu *v;
	uint32_t nr_v;
	struct vms_keymap gthread_idx; /* (machine, tid) -> index in gthreads */
	/* host thread -> its vCPU (or none), a direct-mapped cache in front of the model's hash
	 * map: a CPU runs the same few threads event after event, and the model does not change
	 * during the pass */
	struct { uint64_t key; struct an_vcpu *v; } thread_cache[256];
	struct an_gthread *gthreads;
	uint32_t nr_gthreads, cap_gthreads;
	bool started, finished;
	uint64_t t0, t_last;
	/* results (after finish) */
	struct vms_vcpu_stats *vstats;
	struct vms_exit_stats **guest_exits; /* [nr_mach] */
	uint32_t *nr_guest_exits;
	struct vms_gthread_stats *gstats;
};

/* Copy a thread name into a 24-byte field (snprintf costs too much per event). */
static inline void an_copy_comm(char dst[24], const char *src)
{
	size_t i = 0;
	if (src)
		for (; i < 23 && src[i]; i++)
			dst[i] = src[i];
	dst[i] = '\0';
}

/* vcpu_state.c: recompute the vCPU's status at t (after its flags or base changed) */
void an_vcpu_update(struct vms_analysis *a, struct an_vcpu *v, uint64_t t);
void an_vcpu_close(struct vms_analysis *a, struct an_vcpu *v, uint64_t t_end);
/* "runnable" from a sched_switch prev_state */
bool an_prev_state_runnable(uint64_t prev_state);
/* the §3 transitions */
void an_on_guest_switch(struct vms_analysis *a, uint32_t m, const struct vms_event *ev,
			uint64_t t);
void an_on_host_switch(struct vms_analysis *a, uint32_t h, const struct vms_event *ev,
		       uint64_t t);
void an_on_kvm(struct vms_analysis *a, uint32_t h, const struct vms_event *ev, uint64_t t);
struct an_cpu *an_host_cpu(struct vms_analysis *a, uint32_t h, uint32_t cpu);

/* overlays.c: segments, thread intervals, guest-thread totals */
void an_segment_refresh(struct vms_analysis *a, struct an_vcpu *v, uint64_t t);
void an_segment_close(struct vms_analysis *a, struct an_vcpu *v, uint64_t t);
struct an_gthread *an_gthread_get(struct vms_analysis *a, uint32_t machine, int32_t tid);
void an_gthread_exit(struct vms_analysis *a, struct an_vcpu *v);
int an_gthreads_finish(struct vms_analysis *a);
void an_gthreads_free(struct vms_analysis *a);

/* exits.c */
void an_exit_begin(struct vms_analysis *a, struct an_vcpu *v, const struct vms_event *ev,
		   uint64_t t);
void an_exit_end(struct vms_analysis *a, struct an_vcpu *v, uint64_t t);
int an_exit_table_sorted(const struct an_exit_table *tb, struct vms_exit_stats **out,
			 uint32_t *n);
void an_exit_table_free(struct an_exit_table *tb);

/* steal.c */
void an_steal_charge(struct vms_analysis *a, struct an_vcpu *v, int32_t host_tid,
		     const char *comm, uint64_t ns);
void an_runq_wakeup(struct an_vcpu *v, uint64_t t);
void an_runq_switch_in(struct an_vcpu *v, uint64_t t);
void an_steal_sort(struct an_vcpu *v);

/* containment.c */
void an_containment_event(struct an_vcpu *v);
void an_containment_to_model(struct vms_analysis *a);

#endif
