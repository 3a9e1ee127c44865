/* vmscope: the machine model (docs/vm-analysis.md §1-2).
 *
 * Machines (one per trace, plus one per untraced guest found on a host), their roles, the
 * link of each guest to its host and of each guest vCPU to the host thread that runs it, and
 * which source decided each link. The model is complete before any state is computed: it is
 * built from trace metadata (GUEST options, TRACEID, TIME_SHIFT), the user's options, and a
 * first pass over the few event kinds that link things (vmsync, kvm_entry, thread names). */
#ifndef VMSCOPE_MODEL_H
#define VMSCOPE_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vmscope/clock.h"
#include "vmscope/error.h"
#include "vmscope/event.h"
#include "vmscope/source.h"

#ifdef __cplusplus
extern "C" {
#endif

enum vms_role {
	VMS_ROLE_NONE = 0,
	VMS_ROLE_HOST = 1u << 0,
	VMS_ROLE_GUEST = 1u << 1,
};
/* "none", "host", "guest", "host+guest" */
const char *vms_role_name(unsigned role);

/* How a link (guest -> host, vCPU -> host thread) was decided, in the spec's order. */
enum vms_link_how {
	VMS_LINK_NONE = 0,
	VMS_LINK_GUEST_OPTION, /* trace.dat GUEST option matched by TRACEID */
	VMS_LINK_VMSYNC,       /* vmsync events with the same vm_uid */
	VMS_LINK_KVM_ENTRY,    /* kvm_entry.vcpu_id executed by the host thread */
	VMS_LINK_USER,         /* --guest / --map on the command line */
	VMS_LINK_TIMESHIFT,    /* guest -> host only: the guest's TIME_SHIFT names the host's
	                          TRACEID (trace-cmd recording without a usable GUEST option) */
	VMS_LINK_XENTRACE,     /* a Xen domain's vCPU, named by the xentrace records themselves */
};
const char *vms_link_how_name(enum vms_link_how how);

/* How a host thread's process id (and so a guest's VMM process) was learnt, best first. A
 * trace.dat from trace-cmd records no tgids (trace-cmd v3.4 saves cmdlines only), so there
 * the pid is known only when the recording saw the VMM start or create its vCPU threads. */
enum vms_pid_how {
	VMS_PID_NONE = 0,
	VMS_PID_EXEC,      /* sched_process_exec: the thread exec'd (its tid is its pid), or it
	                      was created by a thread that did */
	VMS_PID_STATEDUMP, /* the trace said the tgid (LTTng statedump, Trace Compass XML) */
	VMS_PID_FORK,      /* sched_process_fork with the child's tgid (LTTng child_pid), or
	                      created by a thread whose tgid that said */
	VMS_PID_PARENT,    /* vCPU threads only: created (sched_process_fork) by a thread whose
	                      process is not known: that thread's tid is taken as the pid, as
	                      QEMU's main thread creates its vCPU threads */
};
/* "none", "exec", "statedump", "fork", "parent" */
const char *vms_pid_how_name(enum vms_pid_how how);

/* How the clock of a machine was brought to the reference. */
enum vms_sync_method {
	VMS_SYNC_REFERENCE = 0, /* this machine is the reference */
	VMS_SYNC_NONE,          /* no transform found: raw timestamps used as they are */
	VMS_SYNC_TIMESHIFT,     /* trace.dat TIME_SHIFT + TSC2NSEC */
	VMS_SYNC_HULL,          /* matched event pairs + convex hull ("convex-hull") */
	VMS_SYNC_USER,          /* command line */
};
const char *vms_sync_method_name(enum vms_sync_method m);

enum vms_sync_quality {
	VMS_SYNC_Q_ABSENT = 0, VMS_SYNC_Q_INCOMPLETE, VMS_SYNC_Q_APPROXIMATE,
	VMS_SYNC_Q_ACCURATE, VMS_SYNC_Q_FAIL, VMS_SYNC_Q_EXACT, /* EXACT: from TIME_SHIFT */
};
const char *vms_sync_quality_name(enum vms_sync_quality q);

/* How an offset-only fit's offset was chosen within its feasible interval. */
enum vms_offset_how {
	VMS_OFFSET_MIDDLE = 0,   /* the middle: no search was made (no containment to search) */
	VMS_OFFSET_SEARCHED,     /* the most guest events inside guest mode (ties: the middle) */
	VMS_OFFSET_TOO_WIDE,     /* the middle: the interval is wider than the search's bound */
	VMS_OFFSET_TOO_DENSE,    /* the middle: more events within the interval than its bound */
};

struct vms_sync_info {
	enum vms_sync_method method;
	enum vms_sync_quality quality;
	uint32_t reference;      /* machine index of the reference */
	double slope, offset_ns; /* t_reference = slope * t_machine_ns + offset_ns (fit; for the
	                            hull, the exact form is the clock's vms_linear) */
	double accuracy;         /* hull: alpha_max - alpha_min */
	uint64_t pairs;          /* matched pairs / TIME_SHIFT samples used */
	bool has_containment;
	uint64_t contained, contain_total; /* containment check (spec §8) */
	/* hull (method VMS_SYNC_HULL) */
	bool applied;            /* the transform is used (quality ACCURATE or APPROXIMATE on a
	                            path from the reference); else the raw clock is */
	int32_t parent;          /* the machine it was synchronized to (tree), -1 when none */
	uint32_t depth;          /* edges from the reference */
	uint32_t hull_above, hull_below; /* points kept on the two hulls of its edge: messages
	                            parent -> it (above) and it -> parent (below) */
	long double alpha, beta; /* the edge's bisector y = alpha x + beta, x the parent's ns
	                            relative to x0, y its own relative to y0 */
	uint64_t x0, y0;
	bool has_range;          /* the offsets the hull allows at that slope, as a shift of
	                            this machine's reference times: [range_lo_ns, range_hi_ns] */
	double range_lo_ns, range_hi_ns;
	/* --clock-model (vmscope/sync.h): with auto, a guest and the host that runs it have a
	 * known slope and only the offset is fitted: [feasible_lo_ns, feasible_hi_ns] are the
	 * offsets (offset_ns) every message allows, and the search for the most guest events
	 * inside guest mode (lib/session/offset_fit.c) chose offset_ns within them (for the
	 * host, when the guest is the reference, likewise) */
	bool offset_only;
	bool refused;            /* auto: a hull beyond VMS_SYNC_MAX_DRIFT_PPM, not used */
	double feasible_lo_ns, feasible_hi_ns;
	enum vms_offset_how offset_how;
	uint64_t search_inside;  /* VMS_OFFSET_SEARCHED: guest events inside at the best offsets */
	double search_lo_ns, search_hi_ns; /* ... the widest run of best offsets (offset_ns) */
	/* --refine: the shift within that range that maximises containment */
	bool refined;
	double refine_shift_ns;
	uint64_t refine_contained, refine_total;
};

struct vms_vcpu_link {
	uint32_t vcpu;
	int32_t host_tid;        /* -1 when unknown */
	enum vms_link_how how;
};

/* A machine. Names: the user's name, else (guests) the GUEST option's name when not empty,
 * else the trace file name without directory and extension; a name already taken gets "-N"
 * appended (N = machine index). Untraced guests (vCPU threads of a host that no traced guest
 * claims) are grouped by host process and named "pid-N" after it. When the trace does not
 * say a thread's process, QEMU-style vCPU threads (named "CPU n/KVM" for vcpu_id n, or
 * unnamed) with the same tid - vcpu_id are taken as one process (QEMU creates them in a
 * row), any other thread as a process of its own, and the machine is named "tid-N" after
 * the lowest vCPU thread id in it; host_pid is then -1. */
struct vms_machine {
	char *name;
	unsigned role;           /* enum vms_role bits */
	int32_t source;          /* index of its source in the session, -1 for untraced guests */
	/* as a guest */
	int32_t host;            /* machine index of its host, -1 when unknown */
	int32_t host_pid;        /* the VMM process on the host, -1 when unknown */
	enum vms_pid_how host_pid_how; /* how host_pid was learnt */
	enum vms_link_how host_how;
	uint32_t nr_vcpus;
	struct vms_vcpu_link *vcpus; /* indexed by vCPU number (nr_vcpus = highest + 1) */
	/* time */
	struct vms_clock clock;
	struct vms_sync_info sync;
	uint64_t vm_uid;         /* vmsync id, 0 when none */
};

/* Threads of one machine, by tid: names and processes learnt from metadata and events. */
struct vms_thread_info {
	int32_t tid;
	int32_t pid;             /* -1 when unknown */
	enum vms_pid_how pid_how;
	int32_t parent;          /* the thread that created it (sched_process_fork), -1 */
	bool exec;               /* it exec'd during the recording */
	char comm[24];
};

struct vms_model;

struct vms_model *vms_model_new(void);
void vms_model_free(struct vms_model *m);

/* Machines */
uint32_t vms_model_nr_machines(const struct vms_model *m);
struct vms_machine *vms_model_machine(struct vms_model *m, uint32_t i);
const struct vms_machine *vms_model_machine_c(const struct vms_model *m, uint32_t i);
/* Add the machine of a source (index = source index; sources must be added in index order
 * 0, 1, 2... before any untraced guest exists, i.e. before vms_model_finish); name may be
 * NULL (then derived). `meta` is NOT copied: it must outlive the model (it is the source's). */
int vms_model_add_source(struct vms_model *m, uint32_t source_index, const char *path,
			 const struct vms_trace_meta *meta, const char *name,
			 struct vms_error *err);
/* Find a machine by name, -1 when none. */
int32_t vms_model_find(const struct vms_model *m, const char *name);
/* The reference machine (first host, else machine 0); valid after vms_model_finish. */
uint32_t vms_model_reference(const struct vms_model *m);
/* Whether some guest's host is itself a guest (nested virtualization, L2 -> L1 -> L0): the
 * outputs then name the layer of each state's cause (a column they add only then, so that
 * one-layer outputs stay as they were). */
bool vms_model_nested(const struct vms_model *m);

/* User overrides: call them before vms_model_finish (they are applied there, and win over
 * what the data says). force_guest's name may be NULL (keep the derived name).
 * user_map: vCPU `vcpu` of guest `guest` (a machine name) is host thread `tid` of that
 * guest's host (when the guest has no host link, of the reference host).
 * user_map_host: the same, the host named: thread `tid` of machine `host` (a traced machine;
 * NULL: as user_map). For a nested guest (L2) whose trace has no link to its hypervisor (L1),
 * which user_map would put on the reference (L0); a host that contradicts the guest's link
 * from its trace is a usage error at vms_model_finish. */
int vms_model_force_host(struct vms_model *m, uint32_t machine);
int vms_model_force_guest(struct vms_model *m, uint32_t machine, const char *name);
int vms_model_user_map(struct vms_model *m, const char *guest, uint32_t vcpu, int32_t tid,
		       struct vms_error *err);
int vms_model_user_map_host(struct vms_model *m, const char *guest, const char *host,
			    uint32_t vcpu, int32_t tid, struct vms_error *err);
/* user_domain: Xen domain `dom` of the xentrace host is the machine `guest` (a guest trace of
 * that name, whose vCPU v is the domain's vCPU v; else the domain's machine takes the name). */
int vms_model_user_domain(struct vms_model *m, const char *guest, uint32_t dom,
			  struct vms_error *err);
/* user_offset: machine `name`'s reference time is its own time + ns (sync method "user":
 * for a guest that shares no clock with its host and has no matchable events). It wins over
 * every other sync; at vms_model_finish, a name that is no traced machine, or the reference
 * itself, is a usage error. */
int vms_model_user_offset(struct vms_model *m, const char *name, int64_t ns,
			  struct vms_error *err);

/* Clock sync from matched events (vmscope/sync.h). The reference: the machine named `name`
 * (checked at vms_model_finish: an unknown name is a usage error there), instead of the first
 * host. on_pair (may be NULL) sees every matched pair (machine own ns) during the first pass. */
void vms_model_set_reference(struct vms_model *m, const char *name);
/* Matching and the hull on (the default) or off: off, machines without metadata transforms
 * keep their own clocks (method none), as Trace Compass reads an unsynchronized experiment. */
void vms_model_set_hull(struct vms_model *m, bool enabled);
/* The matcher's bound (unmatched events per direction; 0 = VMS_MATCH_DEFAULT_CAP). */
void vms_model_set_match_cap(struct vms_model *m, uint32_t cap);
/* --clock-model (vmscope/sync.h): how matched pairs make each edge's fit (default auto). */
void vms_model_set_clock_model(struct vms_model *m, int model);
int vms_model_clock_model(const struct vms_model *m);
struct vms_sync_pair;
void vms_model_on_pair(struct vms_model *m, void (*fn)(void *ctx, const struct vms_sync_pair *p),
		       void *ctx);
/* The match counts of the first pass (NULL when nothing was matched or fewer than two traces). */
struct vms_match_stats;
const struct vms_match_stats *vms_model_match_stats(const struct vms_model *m);

/* The first pass: which kinds it needs (sets wanted[k] = true, leaves others untouched),
 * then every such event, each stream in its own time order, streams interleaved in any order.
 * Events of other kinds are ignored. ev->machine must be the source index. */
void vms_model_wanted_kinds(bool wanted[VMS_K_COUNT]);
void vms_model_observe(struct vms_model *m, const struct vms_event *ev);
/* Resolve roles and links; create untraced guests ("pid-N"); set clocks from metadata
 * (TIME_SHIFT + TSC2NSEC). Call once after the first pass. */
int vms_model_finish(struct vms_model *m, struct vms_error *err);
/* The finished model saved (0, or -1 when the write fails or it is not finished), and loaded
 * into m: a new model with the same sources added and the same options set, not finished
 * (lib/model/model_io.c: native byte order, for the build that saved it; every length and
 * index checked). Then m is finished, as the saved one was, without its matched-event
 * statistics (vms_model_match_stats: NULL). 0, or <0 with err set. */
int vms_model_save(const struct vms_model *m, FILE *f);
int vms_model_load(struct vms_model *m, const void *buf, size_t len, struct vms_error *err);
/* A host shows at most VMS_MODEL_MAX_UNTRACED untraced guests (the first in their order:
 * known processes by pid, then lone threads by tid); the vCPU threads of the others stay
 * host threads. What was left out of host machine `host`: 0 with *guests and *threads set
 * (both 0: nothing). */
#define VMS_MODEL_MAX_UNTRACED 4096u
int vms_model_untraced_omitted(const struct vms_model *m, uint32_t host, uint64_t *guests,
			       uint64_t *threads);

/* Lookups used on the hot path of the analyses (O(1) amortized). */
/* The (guest machine, vcpu) that host thread `tid` of host machine `host` runs: 0 and
 * guest and vcpu set, or -1 when the thread is no vCPU thread. */
int vms_model_vcpu_of(const struct vms_model *m, uint32_t host, int32_t tid,
		      uint32_t *guest, uint32_t *vcpu);
/* What the model knows of thread `tid` of a machine (from metadata comms, THREAD_NAME,
 * PROCESS_FORK and PROCESS_EXEC events), NULL when nothing. */
const struct vms_thread_info *vms_model_thread(const struct vms_model *m, uint32_t machine,
					       int32_t tid);

#ifdef __cplusplus
}
#endif
#endif
