/* vmscope synth: a realistic SIMULATED host + guest pair of trace-cmd trace.dat files, with
 * the ground truth of what was planted in them.
 *
 * Scenario "noisy-neighbour" (default): a KVM host with 4 physical CPUs runs one guest,
 * "demo-guest", whose 2 vCPUs are threads of a QEMU process ("CPU 0/KVM", "CPU 1/KVM"), each
 * pinned to its own physical CPU. A "stress-ng" process on the host wakes up now and then and
 * preempts the vCPU threads (sched_switch with prev_state R+). The vCPUs exit to the hypervisor
 * with realistic VMX reasons and costs; an idle guest executes HLT and its vCPU thread blocks
 * (prev_state S) until a sched_wakeup. Inside the guest, threads and the idle task alternate on
 * each vCPU, and guest events happen only while the vCPU's thread is in guest mode (between
 * kvm_entry and kvm_exit), so that a correct time synchronization contains 100 % of them.
 * Scenario "quiet": the same without the neighbour.
 *
 * The host records raw TSC cycles (TSC2NSEC option, 2.9 GHz); the guest records its own TSC,
 * guest_tsc = ((host_tsc * ratio) >> frac) + tsc_offset, with trace-cmd's TIME_SHIFT option
 * storing offset = -tsc_offset, scaling = ratio and frac (TSC scaling: ratio != 1 << frac).
 *
 * Ground truth (struct vms_synth_truth): all times in HOST nanoseconds, ns = (tsc * mult) >>
 * shift, the reference timebase of docs/vm-analysis.md; guest event times are the exact
 * inverse of their guest TSC, floor(((guest_tsc - tsc_offset) << frac) / ratio). States are
 * accumulated over the session window [first event, last event] of both files, with the
 * precedence of vm-analysis.md section 3: preempted/halted > vmm > base (running/idle/unknown).
 * Everything is deterministic from the seed. */
#ifndef VMSCOPE_SYNTH_H
#define VMSCOPE_SYNTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vmscope/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VMS_SYNTH_MAX_VCPUS 4
#define VMS_SYNTH_MAX_REASONS 16
#define VMS_SYNTH_MAX_STEAL 64        /* cloud-host: every thread of a host CPU */
#define VMS_SYNTH_MAX_GTHREADS 16
#define VMS_SYNTH_MAX_SAMPLES 16

enum vms_synth_compression { VMS_SYNTH_ZSTD = 0, VMS_SYNTH_ZLIB, VMS_SYNTH_NONE };

/* trace.dat (trace-cmd), or LTTng-kernel-style CTF: host_path and guest_path are then trace
 * directories, times monotonic ns (host ns = the truth's), the guest's monotonic clock
 * started guest_boot_ns later, each clock's epoch offset in its metadata; lttng_statedump
 * records name the threads, and vmsync message pairs (vm_uid, cnt) are planted every 32nd
 * guest-mode window: vmsync_hg_host at the kvm_entry, vmsync_hg_guest 100 ns later,
 * vmsync_gh_guest 100 ns before the kvm_exit, vmsync_gh_host 100 ns after it. */
enum vms_synth_format { VMS_SYNTH_TRACEDAT = 0, VMS_SYNTH_LTTNG };

/* vCPU states as reported (vm-analysis.md section 3). */
enum vms_synth_state {
	VMS_SYNTH_UNKNOWN = 0,
	VMS_SYNTH_IDLE,
	VMS_SYNTH_RUNNING,
	VMS_SYNTH_VMM,
	VMS_SYNTH_PREEMPTED, /* off CPU after prev_state R (steal) */
	VMS_SYNTH_HALTED,    /* in a HLT exit's halt: polling, or off CPU after prev_state S */
	VMS_SYNTH_NSTATES
};

enum vms_synth_event {
	VMS_SYNTH_EV_SCHED_SWITCH = 0,
	VMS_SYNTH_EV_SCHED_WAKEUP,
	VMS_SYNTH_EV_KVM_ENTRY,
	VMS_SYNTH_EV_KVM_EXIT,
	VMS_SYNTH_EV_KVM_VCPU_WAKEUP,   /* a halt ends: ns halted or polled, waited */
	VMS_SYNTH_EV_PROCESS_EXEC,      /* the VMM starts (qemu_pid) ... */
	VMS_SYNTH_EV_PROCESS_FORK,      /* ... and creates its threads */
	VMS_SYNTH_NEVENTS
};

/* The wake-up scenarios (latency blame, vmscope-latency(1)) plant guest thread wake-ups
 * whose latency has known causes, and report each one as they plant it: the causes of
 * include/vmscope/latency.h, in its order and with its culprit names. */
enum vms_synth_cause {
	VMS_SYNTH_CAUSE_GUEST_RUNQUEUE = 0, /* the vCPU ran guest code: another thread had it */
	VMS_SYNTH_CAUSE_PREEMPTED,          /* the vCPU thread was runnable, off its CPU */
	VMS_SYNTH_CAUSE_EXITS,              /* in a VM exit (HLT excepted) */
	VMS_SYNTH_CAUSE_HALTED_WAKEUP,      /* halted (the HLT exit and its halt) */
	VMS_SYNTH_CAUSE_UNKNOWN,
	VMS_SYNTH_NCAUSES
};

/* One planted wake-up: [wakeup, run) in host ns, split into causes that add up to it. */
struct vms_synth_wakeup {
	int32_t tid;
	char comm[16];
	uint32_t vcpu;                  /* the vCPU it was woken onto (target_cpu) */
	int32_t waker_vcpu;             /* the guest CPU whose sched_wakeup it was */
	uint64_t wakeup, run, latency;
	uint64_t ns[VMS_SYNTH_NCAUSES];
	enum vms_synth_cause top;       /* the largest (the first on a tie) */
	char culprit[48];               /* the top cause's largest culprit: "nginx (tid 1301)",
	                                   "the guest's idle task", "host stress-ng (tid 5101)",
	                                   "exit:EPT_MISCONFIG", "exit:HLT", "halted vCPU" */
};

/* A finding `vmscope report` should make (include/vmscope/findings.h); the first of the
 * truth's list should be the report's first. */
#define VMS_SYNTH_MAX_FINDINGS 4
struct vms_synth_finding {
	char kind[16];                  /* "steal", "latency", "exit-storm" */
	int32_t vcpu, tid;              /* -1: not about one */
	char names[64];                 /* what its sentence must name (the planted culprit) */
	uint64_t count;                 /* exit-storm: the exits in its 100 ms window */
};

struct vms_synth_config {
	const char *scenario;           /* "noisy-neighbour" (default), "quiet", or a wake-up
	                                   scenario: vms_synth_wakeup_scenarios[] */
	uint64_t seed;
	uint64_t events;                /* target total of both files: reached, then each vCPU runs
	                                 * on to its next kvm_entry (a few dozen events more) */
	const char *host_path;          /* e.g. "vmscope-demo/host.dat" */
	const char *guest_path;
 	enum vms_synth_compression compression;
	int level;                      /* compression level; 0: the writer's default (zstd -1) */
	bool tsc_scaling;               /* default true: the guest TSC runs at 3.0 GHz */
	enum vms_synth_format format;
	int64_t clock_error_ns;         /* LTTng: the guest's epoch offset is off by this much */
	uint32_t nested_vcpus;          /* nested: vCPUs at each layer, 1 to
	                                   VMS_SYNTH_NESTED_MAX_VCPUS; 0: 2 */
	/* progress, called now and then from the generating thread */
	void (*progress)(void *ctx, uint64_t done, uint64_t target);
	void *progress_ctx;
	/* wake-up scenarios: every planted wake-up, in the order they complete (may be NULL) */
	void (*wakeup)(void *ctx, const struct vms_synth_wakeup *w);
	void *wakeup_ctx;
};

struct vms_synth_exit_stat {
	uint32_t reason;                /* VMX basic exit reason */
	const char *name;
	uint64_t count;                 /* completed exits (kvm_exit followed by kvm_entry) */
	uint64_t total_ns;
};

struct vms_synth_steal {
	int32_t tid;
	char comm[16];
	uint64_t ns;
};

struct vms_synth_vcpu_truth {
	uint32_t vcpu;
	int32_t host_tid;
	uint32_t host_cpu;
	uint64_t ns[VMS_SYNTH_NSTATES];
	uint64_t halt_poll_ns;          /* of ns[HALTED]: the thread polling on its CPU */
	uint64_t guest_end_ns;          /* the guest's last event on this vCPU (its recording
	                                 * stopped before the host's): after it, unknown */
	uint32_t nr_exits;
	struct vms_synth_exit_stat exits[VMS_SYNTH_MAX_REASONS];
	uint32_t nr_steal;
	struct vms_synth_steal steal[VMS_SYNTH_MAX_STEAL];
	uint64_t preemptions;           /* switch-outs with prev_state R */
	uint64_t halts;                 /* switch-outs with prev_state S */
	uint64_t wakeups;               /* sched_wakeup of the vCPU thread */
	uint64_t runq_latency_ns;       /* sum over wakeups: wakeup -> switch in */
	/* TIME_SHIFT of this guest CPU, as stored */
	int64_t ts_offset;              /* = -tsc_offset */
	uint64_t ts_scaling, ts_frac;
};

struct vms_synth_gthread_truth {
	int32_t tid;
	char comm[16];
	uint32_t vcpu;
	uint64_t running_ns, vmm_ns, preempted_ns, halted_ns;
};

struct vms_synth_file_truth {
	char path[1024];
	uint64_t trace_id;
	uint32_t nr_cpus;
	uint64_t count[VMS_SYNTH_NEVENTS];
	uint64_t total;
	uint64_t first_ts, last_ts;     /* raw timestamps (host TSC / guest TSC) */
};

/* A guest event and the host guest-mode window it was planted in. */
struct vms_synth_sync_sample {
	uint32_t vcpu;
	uint64_t guest_tsc;             /* raw, as in the guest file */
	uint64_t host_tsc;              /* exact inverse of guest_tsc */
	uint64_t entry_tsc, exit_tsc;   /* kvm_entry/kvm_exit of the window, host file */
};

struct vms_synth_truth {
	char scenario[32];
	uint64_t seed;
	uint64_t tsc_hz;
	uint32_t mult, shift;           /* TSC2NSEC */
	uint64_t window_start_tsc, window_end_tsc;
	uint64_t window_start_ns, window_end_ns;
	struct vms_synth_file_truth host, guest;
	char guest_name[32];
	int32_t qemu_pid;
	const char *qemu_pid_how;       /* how a reader learns it: "exec" (trace.dat: the VMM's
	                                   exec and forks are recorded), "statedump" (LTTng) */
	uint32_t nr_vcpus;
	struct vms_synth_vcpu_truth vcpu[VMS_SYNTH_MAX_VCPUS];
	uint32_t nr_gthreads;
	struct vms_synth_gthread_truth gthread[VMS_SYNTH_MAX_GTHREADS];
	uint32_t nr_samples;
	struct vms_synth_sync_sample sample[VMS_SYNTH_MAX_SAMPLES];
	/* LTTng output */
	bool lttng;
	uint64_t guest_boot_ns;         /* guest monotonic ns = host ns - this */
	int64_t host_epoch_ns;          /* the host's clock offset (epoch ns at host ns 0) */
	int64_t clock_error_ns;         /* the guest's clock offset = host's + boot + this */
	uint64_t vm_uid;
	uint64_t vmsync_pairs;          /* messages each way */
	/* wake-up scenarios (the per-vCPU state truth above is not kept for them) */
	uint64_t nr_wakeups;
	uint64_t wakeup_ns[VMS_SYNTH_NCAUSES]; /* summed over the wake-ups */
	uint32_t nr_findings;
	struct vms_synth_finding finding[VMS_SYNTH_MAX_FINDINGS];
};

void vms_synth_config_init(struct vms_synth_config *cfg);

/* A synthesized fleet (vmscope synth --hosts N, lib/synth/fleet.c): N host + guest pairs
 * with distinct seeds and host names, and a known subset with something to find: every
 * fourth host from the second (1, 5, 9, ...) has a noisy neighbour (scenario noisy-neighbour:
 * a host stress-ng steals from the guest), every fourth from the fourth (3, 7, ...) an exit
 * storm (scenario exit-storm: EPT_MISCONFIG from one guest RIP); the others are quiet. Each
 * host's kernel label alternates "6.1" (even hosts) and "6.6" (odd), for the fleet queries
 * per kernel (every planted host is odd, so the 6.6 hosts are the worse ones). */
struct vms_synth_fleet_host {
	char name[32];                  /* "host-007", also its directory under the fleet's */
	uint64_t seed;                  /* the fleet's seed + i */
	const char *scenario;           /* noisy-neighbour, exit-storm or quiet */
	const char *kernel;
	bool noisy, storm;
};
void vms_synth_fleet_host(uint32_t i, uint64_t seed, struct vms_synth_fleet_host *h);
/* The fleet's truth as JSON: {"hosts": [{name, dir, seed, scenario, kernel, noisy, storm}],
 * "noisy": [names], "storms": [names]}. Returns 0, or -1 when the write failed. */
int vms_synth_fleet_truth_json(uint32_t n, uint64_t seed, FILE *f);
/* Scenario "cloud-host" (lib/synth/cloud_host.c, vmscope synth --scenario cloud-host): one
 * host trace.dat of `host_cpus` CPUs running `guests` QEMU guests of `vcpus` vCPUs each,
 * oversubscribed; guests 0 .. traced-1 are traced (DIR/guest-K.dat, GUEST option in the host
 * file and TIME_SHIFT in theirs, as the default pair), the others are seen from the host
 * only. Every vCPU thread is pinned to one host CPU (vCPU thread j of all, traced first, on
 * CPU j mod host_cpus), so that a traced vCPU is the first thread of its CPU; host threads
 * and untraced guests' vCPU threads share the CPUs. Noisy neighbours: a host "stress-ng"
 * on every odd CPU that preempts at its wake-ups, and every untraced guest whose number is 3
 * mod 4 is CPU-bound, its vCPU threads runnable most of the time
 * (preempting at the end of a 3 ms time slice). The truth of the traced vCPUs is kept as
 * the default scenario's, every thief named (`--events` counts every file). */
#define VMS_SYNTH_CLOUD_MAX_GUESTS 1024
#define VMS_SYNTH_CLOUD_MAX_VCPUS 64
#define VMS_SYNTH_CLOUD_MAX_HOST_CPUS 1024
#define VMS_SYNTH_CLOUD_MAX_TRACED 64
#define VMS_SYNTH_CLOUD_MAX_PER_CPU 32   /* vCPU threads on one host CPU: the analysis follows
                                            who runs instead for at most 64 waiting vCPUs */
struct vms_synth_cloud_config {
	uint32_t guests, vcpus, host_cpus, traced;
	const char *dir;                /* DIR/host.dat, DIR/guest-K.dat */
};
/* Defaults (64 guests x 8 vCPUs, 2 traced) and the host CPUs for a size: one per 8 vCPUs,
 * at least one per traced vCPU. */
void vms_synth_cloud_config_init(struct vms_synth_cloud_config *c);
uint32_t vms_synth_cloud_default_cpus(uint32_t guests, uint32_t vcpus, uint32_t traced);
/* NULL when the sizes are within the limits above, else why not (a usage error). */
const char *vms_synth_cloud_check(const struct vms_synth_cloud_config *c);

struct vms_synth_cloud_guest {
	char name[32];                  /* "guest-K" (traced: the GUEST option's name) */
	int32_t qemu_pid;
	int32_t first_tid;              /* vCPU v's host thread is first_tid + v, "CPU v/KVM" */
	bool traced, cpu_bound;
	struct vms_synth_file_truth file;              /* traced */
	struct vms_synth_vcpu_truth *vcpu;             /* traced: [vcpus] */
};
struct vms_synth_cloud_truth {
	struct vms_synth_truth head;    /* scenario, seed, clocks, window, the host file */
	uint32_t guests, vcpus, host_cpus, traced;
	struct vms_synth_cloud_guest *guest;           /* [guests] */
	uint32_t nr_noisy_host;         /* the host stress-ng threads: tid, CPU */
	int32_t *noisy_tid;
	uint32_t *noisy_cpu;
};
int vms_synth_cloud_run(const struct vms_synth_config *cfg, const struct vms_synth_cloud_config *cc,
			struct vms_synth_cloud_truth *truth, struct vms_error *err);
void vms_synth_cloud_truth_free(struct vms_synth_cloud_truth *t);
int vms_synth_cloud_truth_json(const struct vms_synth_cloud_truth *t, FILE *f);

/* Scenario "nested" (lib/synth/nested.c, vmscope synth --scenario nested): DIR/host.dat (L0),
 * DIR/l1.dat (L1, L0's guest and L2's hypervisor) and DIR/l2.dat (L2), a nested KVM stack of
 * cfg->nested_vcpus vCPUs at each layer (default two), with planted L0 and L1 preemptions, L0 exits and exits reflected to
 * L1, cycles of them until the files hold cfg->events (a few more: a cycle writes up to 8). The
 * truth (each L2 vCPU's states
 * with their layer, exits split L0/L1, steal per layer) is written to `truth` as JSON when not
 * NULL; *events is the files' total. */
#define VMS_SYNTH_NESTED_MAX_VCPUS 16
int vms_synth_nested_run(const struct vms_synth_config *cfg, const char *dir, FILE *truth,
			 uint64_t *events, struct vms_error *err);

/* Known scenario names, NULL-terminated: all, and the wake-up scenarios among them. */
extern const char *const vms_synth_scenarios[];
extern const char *const vms_synth_wakeup_scenarios[];
const char *vms_synth_cause_name(enum vms_synth_cause c); /* "guest-runqueue", ... */
const char *vms_synth_state_name(enum vms_synth_state s);
const char *vms_synth_event_name(enum vms_synth_event e);

/* Write both files and fill `truth` (may be NULL). */
int vms_synth_run(const struct vms_synth_config *cfg, struct vms_synth_truth *truth,
		  struct vms_error *err);

/* The truth as JSON (one object). Returns 0 or a negative status. */
int vms_synth_truth_write_json(const struct vms_synth_truth *t, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
