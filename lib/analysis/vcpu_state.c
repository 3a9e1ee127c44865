/* The virtual CPU state machine (docs/vm-analysis.md §3): the publisher of the analysis
 * stage. It is the only code that interprets scheduler and KVM events, exactly the spec's
 * transitions:
 *
 *   guest sched_switch on guest CPU n      base of vCPU n = RUNNING if next_tid != 0, else IDLE
 *   host kvm_exit by the thread of vCPU n  set VMM
 *   host kvm_entry by that thread          clear VMM
 *   host sched_switch, prev = that thread  set PREEMPTED (halted when prev_state is not R)
 *   host sched_switch, next = that thread  clear PREEMPTED
 *
 * Flags survive base changes and the base survives flag changes. The shown state is
 * preempted/halted over vmm over the base. What happens is published as observations
 * (vmscope/observe.h); the analyses and views are consumers of those and never call back.
 *
 * What vmscope adds, so that what it shows is true:
 *  - A HLT exit is the guest asking to sleep: its time is *halted*, not the hypervisor's
 *    (the numeric status keeps the VMM flag). When the host recorded how the halt went,
 *    the exit is split: [kvm_exit, halt) handling, [halt, wake) halted, [wake, kvm_entry)
 *    handling, where the halt is the vCPU thread's sched_switch out (blocked) .. in, or
 *    kvm_vcpu_wakeup's `ns` before it (waited = 0: halt-polling, the thread spun on its CPU).
 *    Without either, the whole exit is halted. Its states are published when the halt's
 *    end tells which (see observe.h).
 *  - Nothing is known outside a trace's coverage: before the vCPU thread's first host event
 *    and after the host's trace ended, the vCPU's state is UNKNOWN; after the guest's stream
 *    for that vCPU ended, its base state and current thread are unknown.
 *  - Lost events are not papered over: an exit that is followed by another exit, by a
 *    kvm_vcpu_wakeup outside any halt, by an entry flagged as coming after lost events, or by
 *    the thread's events on another CPU with no sched_switch between, is closed as LOST
 *    (counted, no cost) instead of being paired with an entry much later.
 *
 * prev_state: the kernel reports a preempted task as TASK_RUNNING (0), or, since 4.14, as
 * TASK_REPORT_MAX (0x100, printed "R+"; older kernels used TASK_STATE_MAX, also above
 * 0xff): all of these are runnable. Any bit in the low byte (S, D, T, t, X, Z, P, I) means
 * the thread blocked: the vCPU halted. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "vcpu_state_snap.h"

enum sm_halt {
	HALT_NONE = 0,             /* not in a HLT exit */
	HALT_PENDING,              /* in a HLT exit, its states held until the halt ends */
	HALT_HANDLING,             /* in a HLT exit, the hypervisor handling it (shown VMM) */
	HALT_ON_CPU,               /* halted, its thread on its CPU (polling, or not recorded) */
};

/* (what the events and state changes read first; the occupants and a halt's held flag
 * changes, which few events read, last: the common fields in the first 124 of 304 bytes) */
struct sm_vcpu {
	uint32_t machine, vcpu, vidx;
	int32_t host, host_tid;
	uint32_t base;             /* VMS_VCPU_UNKNOWN / IDLE / RUNNING */
	bool vmm, preempted, halted;
	bool host_known;           /* the host's view of its thread is known: inside the host
	                              trace's coverage (from its first event to its end) */
	bool sched_seen;           /* a sched_switch moved its thread: run_cpu is reliable */
	enum sm_halt halt;
	bool polling;              /* HALT_ON_CPU: the halt's length is known (kvm_vcpu_wakeup):
	                              while its thread is on its CPU, it polls */
	bool pub_polling;          /* the published halt_polling */
	int32_t last_stream;       /* the guest stream that told of it last, -1 none */
	uint32_t status;           /* the published values */
	enum vms_vcpu_state state;
	int32_t gtid;              /* guest thread current on the vCPU, -1 unknown */
	int32_t run_cpu;           /* physical CPU its thread runs on, -1 unknown */
	/* the pending exit */
	bool exit_pending, have_exit;
	uint64_t exit_t, exit_rip, exit_info1, exit_info2;
	uint32_t exit_isa, exit_reason, exit_cpu;
	/* off its CPU: the CPU its thread left (left_valid), and its place in that CPU's list of
	 * the vCPUs told who runs there (left_listed: at most VMS_INSTEAD_MAX_WAITERS) */
	bool left_valid, left_listed;
	uint32_t left_cpu;
	int32_t left_prev, left_next;
	/* host CPU occupants (sm->occ): the guest thread current on it as the fused view shows
	 * it (also learnt from the guest's first event on it), and where it is in guest mode */
	int32_t occ_gtid;          /* -1 unknown */
	char occ_gcomm[24];        /* NUL-padded */
	int32_t gm_host, gm_cpu;   /* -1 when not in guest mode */
	int32_t occ_cpu;           /* the host CPU last shown running its thread, -1 none */
	/* HALT_PENDING: the flag changes of its thread since the kvm_exit, replayed once the
	 * halt's extent is known (bounded: past it the halt is resolved as it stands) */
	struct sm_held { uint64_t t; bool preempted, halted; } held[8];
	uint8_t nheld;
	uint64_t halt_t0;          /* the HLT exit's kvm_exit */
	/* nested guests (L2): its host (L1) is itself a guest, whose vCPUs start at lower_base
	 * (-1: not nested); lower_cur the L1 vCPU whose state it was composed with at its last
	 * update (-1 none); for an L1 vCPU, upper is the L2 vCPU that last composed with it */
	int32_t lower_base, lower_n, lower_cur, upper;
	int32_t layer;             /* the published layer (vms_obs_vcpu_state.layer) */
	/* an L1 vCPU, from L0's nested events (kvm_entry's guest_mode, kvm_nested_*): whose
	 * code it runs, -1 not recorded, 0 L1's own, 1 its guest's (L2); reflected: in this L0
	 * exit, L0 reflected L2's exit into L1 (kvm_nested_vmexit_inject), whose hypervisor
	 * handles it from there (refl_reason, refl_isa: that exit) */
	int8_t l2_mode;
	bool reflected;
	uint32_t refl_reason, refl_isa;
};

struct sm_cpu {
	int32_t tid;               /* -1 unknown */
	char comm[24];
	int32_t left_head;         /* first off-CPU vCPU whose thread left this CPU, -1 none: a
	                              list, so that a switch here updates them without scanning
	                              every vCPU */
	uint32_t nr_left;          /* its length, at most VMS_INSTEAD_MAX_WAITERS: a switch costs
	                              that much at most, however many vCPU threads wait here (the
	                              others are told once that who ran is unattributed) */
	/* its occupant as the fused view shows it (sm->occ; cpu_occupant): unlike tid above,
	 * also learnt from the first event recorded here and from a vCPU thread's kvm events */
	bool occ_known, occ_seen;  /* the host thread here is known; an event was recorded here */
	bool pub_open, pub_named;  /* an occupant is published (its comm was not "") */
	int32_t occ_tid;
	int32_t occ_gm;            /* the vCPU (index) in guest mode here, -1 none */
	int32_t pub_guest, pub_vcpu, pub_tid;
	uint64_t occ_last_t;       /* the last event recorded here */
	uint64_t pub_t;            /* when the published occupant began */
	char occ_comm[24];         /* NUL-padded */
};

/* ---- the last words, kept for checkpoints (an_sm_keep_last_words) ----
 * What a window's gate (window.c) keeps of each thing before its window opens, and replays
 * at its start: the last observation published of each kind, as far as replay() reads it.
 * Much of it is the state machine's own state already (a vCPU's published state, its
 * current guest thread, its pending exit; a CPU's thread and published occupant); these
 * hold the rest, stored where it is published: a few stores where a gate that saw every
 * observation cost a call and a copy of each (~140 instructions per event of the index
 * build, callgrind). Outside the snapshot: only a recording run keeps them, and it is never
 * restored. */
struct sm_kept_vcpu {
	bool mode_seen, mode_guest;    /* vcpu_mode: its last one (kvm_exit/entry) */
	bool sw_seen;                  /* guest_switch */
	bool state_seen;               /* vcpu_state */
	bool instead_has;              /* vcpu_instead, since its last state not away */
	bool instead_unattributed;
	uint32_t mode_host, mode_cpu;
	int32_t mode_tid;
	uint32_t exit_host;            /* the pending exit's (exit_obs) host and guest thread */
	int32_t exit_gtid;
	uint64_t sw_prev_state;
	int32_t state_gtid, state_host_cpu, state_exit_reason;
	uint32_t state_isa;
	uint32_t instead_host, instead_cpu;
	int32_t instead_tid;
	char sw_comm[24], instead_comm[24];   /* NUL-padded */
};

struct sm_kept_cpu {
	uint64_t seq;                  /* when first told of (cpu_run or cpu_occupant), from 1:
	                                  a gate lists its CPUs in that order */
	uint64_t run_prev_state;       /* cpu_run (its thread: sm_cpu.tid, .comm) */
	bool run_seen, occ_seen;       /* cpu_occupant (its who: sm_cpu.pub_*, when pub_open) */
	int32_t occ_vidx;
	char occ_comm[24];
};

struct sm_machine {
	struct sm_cpu *cpu;        /* as a host: [nr_cpus] */
	uint32_t nr_cpus;
	bool started, ended;       /* its trace's coverage began, ended */
	bool unscheduled;          /* as a host: its trace holds no sched_switch, so a thread
	                              seen on a CPU is known there at that instant only (§7) */
	bool occ_end_pending;      /* as a host: its trace ended at end_t, its CPUs not yet
	                              made unknown (an_sm.occ_end_pending) */
	uint64_t end_t;
	uint64_t sched_switches;   /* as a host: sched_switch events seen */
};

struct an_sm {
	const struct an_layout *L;
	struct sm_vcpu *v;
	struct sm_machine *mach;
	const struct an_subs *subs;
	/* per callback, from the first event: its subscribers are exactly the ones its
	 * publication expects (SM_PUBLISH3: report's), so that it calls them without comparing
	 * their addresses; and how many there were then (a subscription later, which the
	 * contract forbids, would only fall back to AN_EACH_KNOWN) */
	uint8_t exact[AN_CB_COUNT];
	bool occ;                  /* follow and publish host CPU occupants */
	/* (host, thread) -> the host CPU last shown running it or where it was last seen
	 * (occupants on a host with sched_switch): a thread is on one CPU at a time, so its
	 * event on another CPU ends what the first one shows when that CPU's switch away from
	 * it was lost. Sized by the threads the records show, at most AN_OCC_THREADS_MAX;
	 * past it a new thread is not followed (counted: occ_unfollowed) */
	struct vms_keymap occ_where;
	uint64_t occ_unfollowed;
	/* hosts whose trace ended and whose CPUs still show their last occupants: made unknown
	 * from their end at the next event of another trace (none: the run ends there too, and
	 * an empty unknown stretch would only reorder the last rows) */
	bool occ_end_pending;
	/* host thread -> its vCPU (or none), a direct-mapped cache in front of the model's hash
	 * map: a CPU runs the same few threads event after event, and the model does not change
	 * during the pass */
	struct { uint64_t key; struct sm_vcpu *v; } thread_cache[256];
	/* the last words (an_sm_keep_last_words), NULL when not kept; kept_lost: something was
	 * told that they cannot hold (a CPU past AN_MAX_CPUS, out of memory) */
	struct sm_kept_vcpu *kept;
	struct sm_kept_cpu **kept_cpu;   /* [nr_mach][that host's nr_cpus] */
	uint64_t kept_seq;
	bool kept_lost;
};

bool an_prev_state_runnable(uint64_t prev_state)
{
	return (prev_state & 0xff) == 0;
}

/* ---- publishing ---- */
#define PUBLISH(sm, cb, o) AN_EACH((sm)->subs, cb, (o))
/* cb's publication to the three subscribers it expects (AN_EACH_KNOWN), called directly
 * without a test of their addresses when they are exactly those (sm->exact: n of them). The
 * observation (of type T, initialised by init) is made in each branch: in the first its
 * address goes only to functions inlined there, so that the compiler may keep its fields
 * in registers instead of storing them all for the consumers to load. */
#define SM_PUBLISH3(sm, cb, k0, k1, k2, T, init)                                     \
	do {                                                                          \
		const struct an_subs *p_ = (sm)->subs;                                \
		if ((sm)->exact[AN_CB_##cb] == 3 && p_->n[AN_CB_##cb] == 3) {         \
			const struct an_call *pc_ = p_->by[AN_CB_##cb];               \
			const T o_ = init;                                            \
			k0(pc_[0].ctx, &o_);                                          \
			k1(pc_[1].ctx, &o_);                                          \
			k2(pc_[2].ctx, &o_);                                          \
		} else {                                                              \
			const T o_ = init;                                            \
			AN_EACH_KNOWN(p_, cb, k0, k1, k2, &o_);                       \
		}                                                                     \
	} while (0)
/* The same for one subscriber expected (AN_EACH_KNOWN1) */
#define SM_PUBLISH1(sm, cb, k, T, init)                                               \
	do {                                                                          \
		const struct an_subs *p_ = (sm)->subs;                                \
		if ((sm)->exact[AN_CB_##cb] == 1 && p_->n[AN_CB_##cb] == 1) {         \
			const T o_ = init;                                            \
			k(p_->by[AN_CB_##cb][0].ctx, &o_);                            \
		} else {                                                              \
			const T o_ = init;                                            \
			AN_EACH_KNOWN1(p_, cb, k, &o_);                               \
		}                                                                     \
	} while (0)
#define SM_EXACT1(sm, cb, k)                                                          \
	((sm)->exact[AN_CB_##cb] = (sm)->subs->n[AN_CB_##cb] == 1 &&                  \
				   (sm)->subs->by[AN_CB_##cb][0].fn == (void (*)(void))(k))
/* whether cb's subscribers are exactly k0, k1, k2: 3, else 0 */
static uint8_t sm_exact3(const struct an_subs *s, enum an_cb cb, void (*k0)(void),
			 void (*k1)(void), void (*k2)(void))
{
	const struct an_call *c = s->by[cb];
	return s->n[cb] == 3 && c[0].fn == k0 && c[1].fn == k1 && c[2].fn == k2 ? 3 : 0;
}
#define SM_EXACT3(sm, cb, k0, k1, k2)                                                 \
	((sm)->exact[AN_CB_##cb] = sm_exact3((sm)->subs, AN_CB_##cb, (void (*)(void))(k0), \
					     (void (*)(void))(k1), (void (*)(void))(k2)))

struct an_sm *an_sm_new(const struct an_layout *L)
{
	struct an_sm *sm = calloc(1, sizeof *sm);
	if (!sm)
		return NULL;
	sm->L = L;
	vms_keymap_init(&sm->occ_where);
	sm->v = calloc(L->nr_v ? L->nr_v : 1, sizeof *sm->v);
	sm->mach = calloc(L->nr_mach ? L->nr_mach : 1, sizeof *sm->mach);
	if (!sm->v || !sm->mach) {
		an_sm_free(sm);
		return NULL;
	}
	for (uint32_t i = 0; i < L->nr_v; i++) {
		struct sm_vcpu *v = &sm->v[i];
		v->machine = L->v[i].machine;
		v->vcpu = L->v[i].vcpu;
		v->vidx = i;
		v->host = L->v[i].host;
		v->host_tid = L->v[i].host_tid;
		v->gtid = -1;
		v->run_cpu = -1;
		v->left_prev = v->left_next = -1;
		v->last_stream = -1;
		v->occ_gtid = v->gm_host = v->gm_cpu = v->occ_cpu = -1;
		v->lower_base = v->lower_cur = v->upper = v->layer = -1;
		v->l2_mode = -1;
		v->refl_reason = UINT32_MAX;
		int32_t h = v->host;
		/* L1 is a guest of a traced-or-untraced host and has vCPUs of its own: an L2 vCPU's
		 * state is composed with the state of the L1 vCPU its thread runs on */
		if (h >= 0 && (uint32_t)h < L->nr_mach && L->mach[h].guest && L->mach[h].nr_vcpus &&
		    L->v[L->mach[h].vcpu_base].host >= 0) {
			v->lower_base = (int32_t)L->mach[h].vcpu_base;
			v->lower_n = (int32_t)L->mach[h].nr_vcpus;
		}
	}
	return sm;
}

void an_sm_free(struct an_sm *sm)
{
	if (!sm)
		return;
	for (uint32_t m = 0; sm->mach && m < sm->L->nr_mach; m++) {
		free(sm->mach[m].cpu);
		if (sm->kept_cpu)
			free(sm->kept_cpu[m]);
	}
	free(sm->kept);
	free(sm->kept_cpu);
	free(sm->mach);
	free(sm->v);
	vms_keymap_free(&sm->occ_where);
	free(sm);
}

void an_sm_set_subs(struct an_sm *sm, const struct an_subs *subs)
{
	sm->subs = subs;
}

static __attribute__((noinline)) struct sm_cpu *host_cpu_grow(struct an_sm *sm, uint32_t h,
							       uint32_t cpu)
{
	struct sm_machine *am = &sm->mach[h];
	if (cpu >= AN_MAX_CPUS)
		return NULL;
	if (cpu >= am->nr_cpus) {
		uint32_t n = am->nr_cpus ? am->nr_cpus : 8;
		while (n <= cpu)
			n *= 2;
		if (n > AN_MAX_CPUS)
			n = AN_MAX_CPUS;
		if (sm->kept) {   /* (first: the CPUs never outnumber what is kept of them) */
			struct sm_kept_cpu *nk = realloc(sm->kept_cpu[h], n * sizeof *nk);
			if (!nk) {
				sm->kept_lost = true;
				return NULL;
			}
			memset(nk + am->nr_cpus, 0, (n - am->nr_cpus) * sizeof *nk);
			sm->kept_cpu[h] = nk;
		}
		struct sm_cpu *nc = realloc(am->cpu, n * sizeof *nc);
		if (!nc)
			return NULL;
		memset(nc + am->nr_cpus, 0, (n - am->nr_cpus) * sizeof *nc);
		for (uint32_t c = am->nr_cpus; c < n; c++) {
			nc[c].tid = -1;
			nc[c].left_head = -1;
			nc[c].occ_gm = -1;
		}
		am->cpu = nc;
		am->nr_cpus = n;
	}
	return &am->cpu[cpu];
}

/* Host CPU (h, cpu), made when new (NULL: out of memory or past AN_MAX_CPUS). Growing moves
 * every CPU of the host: a pointer from before a call that may make one is stale. */
static inline struct sm_cpu *host_cpu(struct an_sm *sm, uint32_t h, uint32_t cpu)
{
	struct sm_machine *am = &sm->mach[h];
	if (__builtin_expect(cpu < am->nr_cpus, 1))
		return &am->cpu[cpu];
	return host_cpu_grow(sm, h, cpu);
}

/* What is kept of CPU (h, cpu), c, now told of (NULL: its last words cannot be kept). */
static struct sm_kept_cpu *kept_cpu(struct an_sm *sm, uint32_t h, const struct sm_cpu *c)
{
	if (!c || !sm->kept_cpu[h]) {
		sm->kept_lost = true;
		return NULL;
	}
	struct sm_kept_cpu *k = &sm->kept_cpu[h][c - sm->mach[h].cpu];
	if (!k->seq)
		k->seq = ++sm->kept_seq;
	return k;
}

/* ---- host CPU occupants (cpu_occupant), followed only when someone reads them ----
 * What each host CPU shows: the guest thread of the vCPU in guest mode there, else the host
 * thread that runs there. Published on a change only, so that the fused view (pcpu_view.c)
 * and the exporters make their rows from these alone, without tracking CPUs again. */

/* A thread's name, NUL-padded: the event's when it has one, else what the model learnt. */
static void occ_name(struct an_sm *sm, uint32_t machine, int32_t tid, const char *given,
		     char dst[24])
{
	if (given && *given) {
		size_t n = strnlen(given, 23);
		memcpy(dst, given, n);
		memset(dst + n, 0, 24 - n);
		return;
	}
	const struct vms_thread_info *ti = vms_model_thread(sm->L->model, machine, tid);
	an_copy_padded(dst, ti && ti->comm[0] ? ti->comm : tid == 0 ? "idle" : NULL);
}

/* (inline in occ_mode's refresh, a kvm_entry's or kvm_exit's: ~0.8 per event of the index
 * build; out of line elsewhere) */
static inline __attribute__((always_inline)) void occ_publish_in(struct an_sm *sm, uint32_t h,
								   uint32_t cpu, struct sm_cpu *c,
								   uint64_t t, int32_t guest,
								   int32_t vcpu, int32_t vidx,
								   int32_t tid, const char *comm)
{
	struct vms_obs_cpu_occupant o = {
		.host = h, .cpu = cpu, .t = t, .guest = guest, .vcpu = vcpu, .vidx = vidx,
		.tid = tid, .comm = comm,
	};
	if (guest >= 0 || tid >= 0) {
		if (!c->pub_open || c->pub_guest != guest || c->pub_vcpu != vcpu ||
		    c->pub_tid != tid)
			c->pub_t = t;
		c->pub_open = true;
		c->pub_guest = guest;
		c->pub_vcpu = vcpu;
		c->pub_tid = tid;
		c->pub_named = comm[0] != '\0';
	} else {
		c->pub_open = false;
	}
	if (sm->kept) {
		struct sm_kept_cpu *k = kept_cpu(sm, h, c);
		if (k) {
			k->occ_seen = true;
			k->occ_vidx = vidx;
			memcpy(k->occ_comm, comm, sizeof k->occ_comm);   /* (24 bytes: observe.h) */
		}
	}
	PUBLISH(sm, cpu_occupant, &o);
}

static __attribute__((noinline)) void occ_publish(struct an_sm *sm, uint32_t h, uint32_t cpu,
						   struct sm_cpu *c, uint64_t t, int32_t guest,
						   int32_t vcpu, int32_t vidx, int32_t tid,
						   const char *comm)
{
	occ_publish_in(sm, h, cpu, c, t, guest, vcpu, vidx, tid, comm);
}

/* (inl: occ_publish_in, a constant where always inlined) */
static inline __attribute__((always_inline)) void occ_pub(struct an_sm *sm, uint32_t h,
							    uint32_t cpu, struct sm_cpu *c,
							    uint64_t t, int32_t guest, int32_t vcpu,
							    int32_t vidx, int32_t tid,
							    const char *comm, const bool inl)
{
	if (inl)
		occ_publish_in(sm, h, cpu, c, t, guest, vcpu, vidx, tid, comm);
	else
		occ_publish(sm, h, cpu, c, t, guest, vcpu, vidx, tid, comm);
}

/* What CPU (h, cpu) shows may have changed at t: published when it did (most calls find
 * the same occupant: compared inline). */
static inline __attribute__((always_inline)) void occ_refresh_in(struct an_sm *sm, uint32_t h,
								   uint32_t cpu, struct sm_cpu *c,
								   uint64_t t, const bool inl)
{
	static const char idle[24] = "idle", none[24] = "";
	if (c->occ_gm >= 0) {
		const struct sm_vcpu *v = &sm->v[c->occ_gm];
		int32_t tid = v->occ_gtid;
		const char *comm = tid == 0 ? idle : v->occ_gcomm;
		if (!c->pub_open || c->pub_guest != (int32_t)v->machine ||
		    c->pub_vcpu != (int32_t)v->vcpu || c->pub_tid != tid ||
		    (!c->pub_named && comm[0]))
			occ_pub(sm, h, cpu, c, t, (int32_t)v->machine, (int32_t)v->vcpu,
				(int32_t)v->vidx, tid, comm, inl);
	} else if (c->occ_known) {
		if (!c->pub_open || c->pub_guest != -1 || c->pub_tid != c->occ_tid ||
		    (!c->pub_named && c->occ_comm[0]))
			occ_pub(sm, h, cpu, c, t, -1, -1, -1, c->occ_tid, c->occ_comm, inl);
	} else if (c->pub_open) {
		occ_pub(sm, h, cpu, c, t, -1, -1, -1, -1, none, inl);
	}
}

static inline void occ_refresh(struct an_sm *sm, uint32_t h, uint32_t cpu, struct sm_cpu *c,
			       uint64_t t)
{
	occ_refresh_in(sm, h, cpu, c, t, false);
}

static void occ_forget(struct an_sm *sm, uint32_t h, uint32_t cpu, struct sm_cpu *c,
		       uint64_t t);

/* Host thread tid (not idle: every CPU has its own) is on (h, cpu) at t: the CPU where it
 * was before, when another that still shows it in host mode (the switch away from it there
 * was not recorded), shows it no longer, from its last event there. Only on a host with
 * sched_switch: without it no CPU shows a host thread beyond the instant of its event. */
static __attribute__((noinline)) void occ_thread_at(struct an_sm *sm, uint32_t h,
						     uint32_t cpu, int32_t tid, uint64_t t)
{
	if (tid <= 0 || sm->mach[h].unscheduled)
		return;
	uint64_t key = vms_keymap_mt(h, tid), *where = vms_keymap_get(&sm->occ_where, key);
	if (!where) {
		if (sm->occ_where.len >= AN_OCC_THREADS_MAX ||
		    !(where = vms_keymap_put(&sm->occ_where, key, cpu, NULL))) {
			sm->occ_unfollowed++;
			return;
		}
	}
	uint32_t was = (uint32_t)*where;
	*where = cpu;
	if (was == cpu || was >= sm->mach[h].nr_cpus)
		return;
	struct sm_cpu *oc = &sm->mach[h].cpu[was];
	if (oc->occ_known && oc->occ_tid == tid && oc->occ_gm < 0)
		occ_forget(sm, h, was, oc, t);
}

/* CPU (h, cpu), c, runs host thread tid (-1: not known) from t. */
static void occ_set(struct an_sm *sm, uint32_t h, uint32_t cpu, struct sm_cpu *c, int32_t tid,
		    const char *comm, uint64_t t)
{
	occ_thread_at(sm, h, cpu, tid, t);
	c->occ_known = tid >= 0;
	c->occ_tid = tid;
	if (tid >= 0)
		occ_name(sm, h, tid, comm, c->occ_comm);
	else
		memset(c->occ_comm, 0, sizeof c->occ_comm);
}

/* Nothing is in guest mode on c any more. */
static inline void occ_clear_gm(struct an_sm *sm, struct sm_cpu *c)
{
	if (c->occ_gm < 0)
		return;
	struct sm_vcpu *v = &sm->v[c->occ_gm];
	v->gm_host = v->gm_cpu = -1;
	c->occ_gm = -1;
}

/* Who runs on CPU c stopped being known before t (a gap of lost events there, or its thread
 * seen on another CPU at t): what was shown ends at the last event recorded on c. */
static __attribute__((noinline)) void occ_forget(struct an_sm *sm, uint32_t h, uint32_t cpu,
						  struct sm_cpu *c, uint64_t t)
{
	if (!c->occ_seen || !c->pub_open || c->pub_t >= t)
		return;
	static const char none[24] = "";   /* (a comm is 24 bytes that may all be read) */
	uint64_t cut = c->occ_last_t > c->pub_t ? c->occ_last_t : c->pub_t;
	occ_publish(sm, h, cpu, c, cut, -1, -1, -1, -1, none);
	c->occ_known = false;
	occ_clear_gm(sm, c);   /* someone's event here: host mode (kvm_entry would be at t) */
}

/* vCPU v's thread is seen on (h, cpu) at t: a thread is on one CPU at a time, so the CPU it
 * was last shown on, when another and still showing it (its switch away was not recorded),
 * shows it no longer. */
static inline void occ_here(struct an_sm *sm, struct sm_vcpu *v, uint32_t h, uint32_t cpu,
			    int32_t tid, uint64_t t)
{
	if (__builtin_expect(v->occ_cpu >= 0 && (uint32_t)v->occ_cpu != cpu, 0)) {
		struct sm_cpu *oc = host_cpu(sm, h, (uint32_t)v->occ_cpu);
		if (oc && oc->occ_known && oc->occ_tid == tid && oc->occ_gm < 0)
			occ_forget(sm, h, (uint32_t)v->occ_cpu, oc, t);
	}
	v->occ_cpu = (int32_t)cpu;
}

/* The vCPU's thread (host_tid) entered or left guest mode on (h, cpu) at t. (inline in
 * on_kvm's two calls, guest_mode a constant in each: out of line its call and saved registers
 * were ~20 of its ~100 instructions, with as many again for occ_publish's) */
static inline __attribute__((always_inline)) void occ_mode(struct an_sm *sm, struct sm_vcpu *v,
							     uint32_t h, uint32_t cpu,
							     int32_t host_tid, bool guest_mode,
							     uint64_t t)
{
	int32_t self = (int32_t)(v - sm->v);
	if (v->gm_host >= 0) {   /* it leaves guest mode wherever it was */
		uint32_t oh = (uint32_t)v->gm_host, ocpu = (uint32_t)v->gm_cpu;
		v->gm_host = v->gm_cpu = -1;
		struct sm_cpu *oc = host_cpu(sm, oh, ocpu);
		if (oc && oc->occ_gm == self) {
			oc->occ_gm = -1;
			if (oh != h || ocpu != cpu) {   /* (here: refreshed below) */
				/* its thread is here now, not in host mode there */
				if (oc->occ_known && oc->occ_tid == host_tid)
					oc->occ_known = false;
				occ_refresh(sm, oh, ocpu, oc, t);
			}
		}
	}
	occ_here(sm, v, h, cpu, host_tid, t);
	struct sm_cpu *c = host_cpu(sm, h, cpu);
	if (!c)
		return;
	/* the vCPU thread emitted this event on that CPU: it is the occupant (in host mode
	 * until the next switch; without sched_switch, at this instant only) */
	if (host_tid >= 0 && (!c->occ_known || c->occ_tid != host_tid) &&
	    !sm->mach[h].unscheduled)
		occ_set(sm, h, cpu, c, host_tid, NULL, t);
	if (guest_mode) {
		if (c->occ_gm != self)
			occ_clear_gm(sm, c);
		c->occ_gm = self;
		v->gm_host = (int32_t)h;
		v->gm_cpu = (int32_t)cpu;
	}
	occ_refresh_in(sm, h, cpu, c, t, true);
}

/* The guest thread current on vCPU v, as shown, is tid (comm: its name if given) from t. */
static __attribute__((noinline)) void occ_guest_thread(struct an_sm *sm, struct sm_vcpu *v,
							int32_t tid,
			     const char *comm, uint64_t t)
{
	v->occ_gtid = tid;
	if (tid > 0)
		occ_name(sm, v->machine, tid, comm, v->occ_gcomm);
	else
		memset(v->occ_gcomm, 0, sizeof v->occ_gcomm);
	if (v->gm_host >= 0) {
		struct sm_cpu *c = host_cpu(sm, (uint32_t)v->gm_host, (uint32_t)v->gm_cpu);
		if (c)
			occ_refresh(sm, (uint32_t)v->gm_host, (uint32_t)v->gm_cpu, c, t);
	}
}

/* A host sched_switch put thread tid (comm) on CPU c, in host mode. */
static inline void occ_switch(struct an_sm *sm, uint32_t h, uint32_t cpu, struct sm_cpu *c,
			      int32_t tid, const char *comm, uint64_t t)
{
	occ_clear_gm(sm, c);
	occ_set(sm, h, cpu, c, tid, comm, t);
	occ_refresh(sm, h, cpu, c, t);
}

/* After an event was processed: the first event on a CPU says who runs there, and the
 * guest's first event on a vCPU (or its first after a gap) which thread is current on it. */
static inline void occ_event_after(struct an_sm *sm, uint32_t m,
				   const struct an_layout_machine *lm,
				   const struct vms_event *ev, uint64_t t)
{
	if (lm->host) {
		struct sm_cpu *c = host_cpu(sm, m, ev->cpu);
		if (c) {
			if (__builtin_expect(!c->occ_known, 0) && ev->tid >= 0 &&
			    ev->kind != VMS_K_XEN_VMEXIT && ev->kind != VMS_K_XEN_VMENTRY &&
			    !sm->mach[m].unscheduled) {
				occ_set(sm, m, ev->cpu, c, ev->tid, NULL, t);
				occ_refresh(sm, m, ev->cpu, c, t);
			} else if (__builtin_expect(ev->tid != c->occ_tid, 0) && ev->tid > 0 &&
				   ev->kind != VMS_K_SCHED_SWITCH &&
				   ev->kind != VMS_K_XEN_VMEXIT && ev->kind != VMS_K_XEN_VMENTRY) {
				/* a thread's event on a CPU not shown running it (a sched_switch's
				 * thread is its prev, no longer here): it is here at t, so not
				 * on another CPU */
				occ_thread_at(sm, m, ev->cpu, ev->tid, t);
			}
			c->occ_last_t = t;
			c->occ_seen = true;
		}
	}
	if (lm->guest && ev->cpu < lm->nr_vcpus && ev->tid >= 0) {
		struct sm_vcpu *v = &sm->v[lm->vcpu_base + ev->cpu];
		if (__builtin_expect(v->occ_gtid < 0, 0) ||
		    ((ev->flags & VMS_EVF_LOST_BEFORE) && ev->kind != VMS_K_SCHED_SWITCH &&
		     v->occ_gtid != ev->tid))
			occ_guest_thread(sm, v, ev->tid, NULL, t);
	}
}

void an_sm_follow_occupants(struct an_sm *sm, bool on)
{
	sm->occ = on;
}

uint64_t an_sm_occ_unfollowed(const struct an_sm *sm)
{
	return sm->occ_unfollowed;
}

void an_sm_host_unscheduled(struct an_sm *sm, uint32_t m)
{
	if (m < sm->L->nr_mach)
		sm->mach[m].unscheduled = true;
}

static enum vms_vcpu_state shown_state(const struct sm_vcpu *v)
{
	if (v->host >= 0 && !v->host_known)
		return VMS_STATE_UNKNOWN;
	if (v->preempted)
		return v->halted ? VMS_STATE_HALTED : VMS_STATE_PREEMPTED;
	if (v->vmm)
		return v->halt == HALT_ON_CPU ? VMS_STATE_HALTED : VMS_STATE_VMM;
	switch (v->base) {
	case VMS_VCPU_IDLE: return VMS_STATE_IDLE;
	case VMS_VCPU_RUNNING: return VMS_STATE_RUNNING;
	default: return VMS_STATE_UNKNOWN;
	}
}

static bool is_away(enum vms_vcpu_state s)
{
	return s == VMS_STATE_PREEMPTED || s == VMS_STATE_HALTED;
}

/* Who runs now on the CPU a preempted/halted vCPU's thread left. */
static void publish_instead(struct an_sm *sm, struct sm_vcpu *v, uint64_t t)
{
	static const char no_comm[24]; /* (a comm is 24 bytes that may all be read) */
	struct sm_vcpu *self = v;
	/* a nested guest's vCPU away at the layer below: who runs instead is told of the L1
	 * vCPU its thread was on, at L0 */
	if (v->lower_cur >= 0 && v->layer >= 0 && v->layer != v->host)
		v = &sm->v[v->lower_cur];
	struct vms_obs_vcpu_instead o = {
		.machine = self->machine, .vcpu = self->vcpu, .vidx = self->vidx, .t = t,
		.host = v->host >= 0 ? (uint32_t)v->host : 0, .host_cpu = v->left_cpu,
		.tid = -1, .comm = no_comm,
	};
	if (!v->preempted) {
		/* halted in its exit, its thread on its CPU: polling burns that CPU itself; a
		 * halt nothing recorded might have blocked */
		if (v->polling) {
			o.tid = v->host_tid;
			o.host_cpu = v->run_cpu >= 0 ? (uint32_t)v->run_cpu : 0;
		}
	} else if (v->left_valid && !v->left_listed) {
		/* it left a CPU where VMS_INSTEAD_MAX_WAITERS vCPUs already waited */
		o.unattributed = true;
	} else if (v->left_valid && v->host >= 0) {
		struct sm_cpu *c = host_cpu(sm, (uint32_t)v->host, v->left_cpu);
		if (c) {
			o.tid = c->tid;
			o.comm = c->comm;
		}
	}
	if (sm->kept) {
		struct sm_kept_vcpu *k = &sm->kept[self->vidx];
		k->instead_has = true;
		k->instead_unattributed = o.unattributed;
		k->instead_host = o.host;
		k->instead_cpu = o.host_cpu;
		k->instead_tid = o.tid;
		an_copy_padded(k->instead_comm, o.comm);
	}
	SM_PUBLISH3(sm, vcpu_instead, an_fused_instead, an_latency_on_instead,
		    an_findings_on_instead, struct vms_obs_vcpu_instead, o);
	/* the L2 vCPU away because this L1 vCPU is: told too */
	if (self == v && v->upper >= 0) {
		struct sm_vcpu *u = &sm->v[v->upper];
		if (u->lower_cur == (int32_t)v->vidx && u->layer == v->host && is_away(u->state))
			publish_instead(sm, u, t);
	}
}

static void halt_resolve(struct an_sm *sm, struct sm_vcpu *v, bool have_wake, uint64_t th,
			 uint64_t t_now);

/* The layer a vCPU's own state names: its host's, when in the hypervisor or away. */
static inline int32_t own_layer(const struct sm_vcpu *v, enum vms_vcpu_state state)
{
	return state == VMS_STATE_VMM || is_away(state) ? v->host : -1;
}

static void update(struct an_sm *sm, struct sm_vcpu *v, uint64_t t);

/* An L1 vCPU's state changed: the L2 vCPU whose thread is on it recomposes its own. */
static inline void update_upper(struct an_sm *sm, const struct sm_vcpu *v, uint64_t t)
{
	if (__builtin_expect(v->upper >= 0, 0) && sm->v[v->upper].lower_cur == (int32_t)v->vidx)
		update(sm, &sm->v[v->upper], t);
}

/* A nested guest's vCPU (L2): its shown state composed with the L1 vCPU its thread runs
 * on; returns the layer (vms_obs_vcpu_state.layer) and may change *state and *polling;
 * *ex is the vCPU whose exit a VMM state is told of, when not v's own. */
static __attribute__((noinline)) int32_t update_nested(struct an_sm *sm, struct sm_vcpu *v,
							enum vms_vcpu_state *state,
							bool *polling, const struct sm_vcpu **ex)
{
	int32_t layer = own_layer(v, *state);
	v->lower_cur = -1;
	*ex = v;
	if ((*state == VMS_STATE_RUNNING || *state == VMS_STATE_IDLE || *state == VMS_STATE_VMM) &&
	    v->run_cpu >= 0 && v->run_cpu < v->lower_n) {
		/* its thread is on L1 vCPU run_cpu: when that vCPU is in L0's exit or off its
		 * physical CPU, so is this one, at L0 (in L0's hypervisor on its behalf when L1
		 * thought it ran; the part of L1's exit handling that L0 took, when in L1's) */
		struct sm_vcpu *lo = &sm->v[v->lower_base + v->run_cpu];
		v->lower_cur = (int32_t)lo->vidx;
		lo->upper = (int32_t)v->vidx;
		bool l1_view_runs = *state == VMS_STATE_RUNNING || *state == VMS_STATE_IDLE;
		if (lo->state == VMS_STATE_VMM && lo->reflected) {
			/* L0 reflected L2's exit into L1: L0's part ended at the inject, the rest
			 * is L1's hypervisor's (before L1's own kvm_exit, when it has one) */
			if (l1_view_runs) {
				*state = VMS_STATE_VMM;
				*ex = lo;
			}
			layer = v->host;
		} else if (lo->state == VMS_STATE_VMM || is_away(lo->state)) {
			*state = lo->state;
			layer = lo->host;
			*polling = false;
			*ex = lo;
		} else if (lo->state == VMS_STATE_UNKNOWN) {
			*state = VMS_STATE_UNKNOWN;   /* what L0 did is not known */
			layer = -1;
		} else if (lo->l2_mode == 0 && l1_view_runs) {
			/* L0 says the L1 vCPU runs L1's own code while L1's trace says L2 runs:
			 * L1's hypervisor handles L2's exit (its kvm_exit not yet, or not,
			 * recorded), or prepares L2's entry (after its kvm_entry, before the
			 * VMRESUME that L0 sees) */
			*state = VMS_STATE_VMM;
			layer = v->host;
			*ex = lo->refl_reason != UINT32_MAX ? lo : v;
		}
	} else if (*state == VMS_STATE_UNKNOWN && v->host_known && !v->vmm && !v->preempted &&
		   v->run_cpu >= 0 && v->run_cpu < v->lower_n) {
		/* L1 does not say what its thread runs (no trace of L2: its base is unknown), but
		 * L0 may: the L1 vCPU it is on in L0's exit of L2's code, or off its CPU while
		 * running L2 (kvm_nested_vmexit, guest_mode, vmenter), is L0's on L2's behalf */
		struct sm_vcpu *lo = &sm->v[v->lower_base + v->run_cpu];
		v->lower_cur = (int32_t)lo->vidx;
		lo->upper = (int32_t)v->vidx;
		if (lo->l2_mode == 1 && (lo->state == VMS_STATE_VMM || is_away(lo->state))) {
			*state = lo->state;
			layer = lo->host;
			*polling = false;
			*ex = lo;
		}
	}
	return layer;
}

/* Recompute the vCPU's status at t (after its flags or base changed); publish a change.
 * (update_in inline in on_kvm, two thirds of the calls: the call's saved registers were
 * ~20 instructions of each) */
static inline __attribute__((always_inline)) void update_in(struct an_sm *sm, struct sm_vcpu *v,
							      uint64_t t)
{
	if (v->halt == HALT_PENDING) {
		/* held until the halt ends: keep the thread's flag changes */
		struct sm_held *last = v->nheld ? &v->held[v->nheld - 1] : NULL;
		bool pre0 = last ? last->preempted : false, hal0 = last ? last->halted : false;
		if (v->preempted == pre0 && v->halted == hal0)
			return;
		if (v->nheld < sizeof v->held / sizeof v->held[0]) {
			v->held[v->nheld++] = (struct sm_held){ t, v->preempted, v->halted };
			return;
		}
		halt_resolve(sm, v, false, 0, t);
	}
	uint32_t status = v->base | (v->vmm ? VMS_VCPU_FLAG_VMM : 0) |
			  (v->preempted ? VMS_VCPU_FLAG_PREEMPTED : 0);
	enum vms_vcpu_state state = shown_state(v);
	bool polling = state == VMS_STATE_HALTED && v->halt == HALT_ON_CPU && v->polling &&
		       !v->preempted;
	int32_t layer;
	const struct sm_vcpu *ex = v;   /* whose exit a VMM state is told of */
	if (__builtin_expect(v->lower_base < 0, 1)) {
		/* one layer: the layer follows from the state (the early return as before) */
		if (status == v->status && state == v->state && polling == v->pub_polling)
			return;
		layer = own_layer(v, state);
	} else {
		layer = update_nested(sm, v, &state, &polling, &ex);
		if (status == v->status && state == v->state && polling == v->pub_polling &&
		    layer == v->layer)
			return;
	}

	bool was_away = is_away(v->state);
	uint32_t old_status = v->status;
	enum vms_vcpu_state old_state = v->state;
	int32_t host_cpu = is_away(state) ? (v->left_valid ? (int32_t)v->left_cpu : -1)
					  : v->run_cpu;
	int32_t exit_reason = -1;
	uint32_t isa = 0;
	if (state == VMS_STATE_VMM && ex != v && ex->refl_reason != UINT32_MAX &&
	    (ex->reflected || !ex->vmm)) {
		/* L1's part of a reflected exit: the exit L0 reflected */
		exit_reason = (int32_t)(ex->refl_reason & INT32_MAX);
		isa = ex->refl_isa;
	} else if (state == VMS_STATE_VMM && (ex != v || v->vmm) && ex->have_exit) {
		exit_reason = (int32_t)(ex->exit_reason & INT32_MAX);   /* L0's exit, as such */
		isa = ex->exit_isa;
	}
	bool poll_changed = polling != v->pub_polling;
	v->status = status;
	v->state = state;
	v->pub_polling = polling;
	bool layer_changed = layer != v->layer;
	v->layer = layer;
	if (sm->kept) {   /* (status, state, polling and layer: v's own, set above) */
		struct sm_kept_vcpu *k = &sm->kept[v->vidx];
		k->state_seen = true;
		k->state_gtid = v->gtid;
		k->state_host_cpu = host_cpu;
		k->state_exit_reason = exit_reason;
		k->state_isa = isa;
		if (!is_away(state))
			k->instead_has = false;   /* (as a gate forgets it) */
	}
#define STATE_OBS                                                                     \
	{ .machine = v->machine, .vcpu = v->vcpu, .vidx = v->vidx, .t = t,            \
	  .status = status, .old_status = old_status, .state = state,                 \
	  .old_state = old_state, .gtid = v->gtid, .host = v->host,                   \
	  .host_tid = v->host_tid, .host_cpu = host_cpu, .exit_reason = exit_reason,  \
	  .isa = isa, .halt_polling = polling, .layer = layer }
	SM_PUBLISH3(sm, vcpu_state, an_fused_state, an_latency_on_state,
		    an_findings_on_state, struct vms_obs_vcpu_state, STATE_OBS);
#undef STATE_OBS
	if (is_away(state) && (!was_away || poll_changed || layer_changed))
		publish_instead(sm, v, t);
	update_upper(sm, v, t);
}

static __attribute__((noinline)) void update(struct an_sm *sm, struct sm_vcpu *v, uint64_t t)
{
	update_in(sm, v, t);
}

/* A thread not in the cache: the model's answer, kept in slot `slot` under `key`. */
static __attribute__((noinline)) struct sm_vcpu *vcpu_of_thread_slow(struct an_sm *sm,
								      uint32_t h, int64_t tid,
								      size_t slot, uint64_t key)
{
	uint32_t g, n;
	struct sm_vcpu *v = NULL;
	if (vms_model_vcpu_of(sm->L->model, h, (int32_t)tid, &g, &n) == 0 &&
	    g < sm->L->nr_mach && n < sm->L->mach[g].nr_vcpus)
		v = &sm->v[sm->L->mach[g].vcpu_base + n];
	sm->thread_cache[slot].key = key;
	sm->thread_cache[slot].v = v;
	return v;
}

/* (inline: 0.9 M calls on a 1 M-event pair, nearly all found in the cache) */
static inline __attribute__((always_inline)) struct sm_vcpu *vcpu_of_thread(struct an_sm *sm,
									     uint32_t h, int64_t tid)
{
	if (tid < 0 || tid > INT32_MAX)
		return NULL;
	/* key + 1 so that the zeroed cache holds no valid entry */
	uint64_t key = ((uint64_t)h << 32 | (uint64_t)tid) + 1;
	size_t slot = (size_t)((uint64_t)tid ^ h) & 255;
	if (__builtin_expect(sm->thread_cache[slot].key == key, 1))
		return sm->thread_cache[slot].v;
	return vcpu_of_thread_slow(sm, h, tid, slot, key);
}

/* (always inline, and publish_mode never: with occ_mode inlined, GCC took exit_obs out of
 * line and publish_mode in, +9.8 M instructions of report on the 1 M pair) */
static inline __attribute__((always_inline)) struct vms_obs_exit
exit_obs(const struct sm_vcpu *v, uint32_t h, uint64_t t, enum vms_exit_end how)
{
	return (struct vms_obs_exit){
		.machine = v->machine, .vcpu = v->vcpu, .vidx = v->vidx, .host = h,
		.host_tid = v->host_tid, .host_cpu = v->exit_cpu, .t = t, .begin = v->exit_t,
		.isa = v->exit_isa, .reason = v->exit_reason, .guest_rip = v->exit_rip,
		.info1 = v->exit_info1, .info2 = v->exit_info2, .how = how, .gtid = v->gtid,
	};
}

/* A HLT exit's halt ends (or must be decided now, at t_now): publish its held states.
 * The halt is [th, tw) when kvm_vcpu_wakeup told its length (have_wake; tw = t_now); else
 * it is the thread's first blocked stay off its CPU, when a sched_switch showed one; else
 * the whole exit until t_now (nothing recorded how it went: the guest asked to sleep).
 * Outside the halt, the exit is the hypervisor's handling (VMM). The thread's flag changes
 * held meanwhile are replayed at their own times. */
struct halt_point {
	uint64_t t;
	int what;
	uint32_t k;
};

/* The held states replayed in (t, what) order when the flag changes are not in time order, or
 * the halt would end before it begins (never seen: a stable sort of the points) */
static __attribute__((noinline)) void halt_replay_sorted(struct an_sm *sm, struct sm_vcpu *v,
							 uint64_t th, uint64_t tend)
{
	struct halt_point pt[sizeof v->held / sizeof v->held[0] + 2];
	uint32_t n = 0;
	pt[n++] = (struct halt_point){ th, 0, 0 };
	for (uint32_t k = 0; k < v->nheld; k++)
		pt[n++] = (struct halt_point){ v->held[k].t, 1, k };
	pt[n++] = (struct halt_point){ tend, 2, 0 };
	for (uint32_t i = 1; i < n; i++) /* insertion sort: a handful of points */
		for (uint32_t j = i; j > 0 && (pt[j].t < pt[j - 1].t ||
					       (pt[j].t == pt[j - 1].t && pt[j].what < pt[j - 1].what)); j--) {
			struct halt_point x = pt[j];
			pt[j] = pt[j - 1];
			pt[j - 1] = x;
		}
	for (uint32_t i = 0; i < n; i++) {
		if (pt[i].what == 0) {
			v->halt = HALT_ON_CPU;
		} else if (pt[i].what == 1) {
			v->preempted = v->held[pt[i].k].preempted;
			v->halted = v->held[pt[i].k].halted;
			if (v->preempted && v->halted)
				v->polling = false; /* it blocked: polling is over */
		} else {
			v->halt = HALT_HANDLING;
		}
		update(sm, v, pt[i].t);
	}
}

/* (the halt's begin th and end tend merged into the held flag changes, which are in time
 * order: the halt's begin before a change at the same time, its end after one; one update for
 * the kvm_exit's state and every point, none for a point that changes nothing (the halt's
 * begin at the exit's own time) nor for the flags put back when they are the last replayed:
 * ~1,700 instructions per HLT exit before, most of them its 5 states' publications) */
static void halt_resolve(struct an_sm *sm, struct sm_vcpu *v, bool have_wake, uint64_t th,
			 uint64_t t_now)
{
	if (v->halt != HALT_PENDING)
		return;
	uint64_t t0 = v->halt_t0, tend = t_now;
	const uint32_t nh = v->nheld;
	if (!have_wake) {
		th = t0;
		for (uint32_t k = 0; k < nh; k++) {
			if (v->held[k].preempted && v->held[k].halted) {
				th = v->held[k].t;
				for (uint32_t j = k + 1; j < nh; j++)
					if (!v->held[j].preempted) {
						tend = v->held[j].t;
						break;
					}
				break;
			}
		}
	}
	if (th < t0)
		th = t0;
	bool in_order = th <= tend;
	for (uint32_t k = 1; k < nh; k++)
		in_order &= v->held[k].t >= v->held[k - 1].t;
	bool now_pre = v->preempted, now_hal = v->halted;
	v->preempted = v->halted = false; /* at the kvm_exit its thread was on its CPU */
	v->polling = have_wake;
	v->halt = th == t0 ? HALT_ON_CPU : HALT_HANDLING;
	if (__builtin_expect(in_order, 1)) {
		/* the points in (t, what) order: halt begins (0), flag changes (1), halt ends (2) */
		uint32_t k = 0;
		int next = 0; /* the halt's begin to come (0), its end (1), neither (2) */
		uint64_t t = t0;
		for (;;) {
			update_in(sm, v, t);
		point:
			if (next == 0 && (k == nh || v->held[k].t >= th)) {
				next = 1;
				if (v->halt == HALT_ON_CPU)
					goto point; /* (begins at t0: nothing changes) */
				v->halt = HALT_ON_CPU;
				t = th;
			} else if (next == 1 && (k == nh || v->held[k].t > tend)) {
				next = 2;
				v->halt = HALT_HANDLING;
				t = tend;
			} else if (k < nh) {
				v->preempted = v->held[k].preempted;
				v->halted = v->held[k].halted;
				if (v->preempted && v->halted)
					v->polling = false; /* it blocked: polling is over */
				t = v->held[k++].t;
			} else {
				break;
			}
		}
	} else {
		update(sm, v, t0);
		halt_replay_sorted(sm, v, th, tend);
	}
	v->nheld = 0;
	if (now_pre != v->preempted || now_hal != v->halted) {
		v->preempted = now_pre;
		v->halted = now_hal;
		update(sm, v, t_now);
	}
	if (is_away(v->state))
		publish_instead(sm, v, t_now);
}

/* Close the pending exit: ENDED at its entry, LOST at a gap, UNFINISHED at the end. */
static inline __attribute__((always_inline)) void exit_close_in(struct an_sm *sm,
								    struct sm_vcpu *v, uint32_t h,
								    uint64_t t, enum vms_exit_end how)
{
	if (!v->exit_pending)
		return;
	halt_resolve(sm, v, false, 0, t);
	v->exit_pending = false;
	SM_PUBLISH1(sm, exit_end, an_fused_exit_end, struct vms_obs_exit, exit_obs(v, h, t, how));
}

/* (exit_close_in inline at the kvm_entry that ends an exit, one event in three) */
static void exit_close(struct an_sm *sm, struct sm_vcpu *v, uint32_t h, uint64_t t,
		       enum vms_exit_end how)
{
	exit_close_in(sm, v, h, t, how);
}

/* A guest_switch to v's current thread (v->gtid), kept. */
static void keep_switch(struct an_sm *sm, const struct sm_vcpu *v, uint64_t prev_state,
			const char *next_comm)
{
	struct sm_kept_vcpu *k = &sm->kept[v->vidx];
	k->sw_seen = true;
	k->sw_prev_state = prev_state;
	an_copy_padded(k->sw_comm, next_comm);
}

/* (occ: sm->occ, a constant in each of the two copies of the event path, an_sm_event) */
#define SM_HOT static inline __attribute__((always_inline))
SM_HOT void on_guest_switch(struct an_sm *sm, uint32_t m, const struct vms_event *ev, uint64_t t,
			    const bool occ)
{
	const struct an_layout_machine *lm = &sm->L->mach[m];
	if (ev->cpu >= lm->nr_vcpus)
		return;
	struct sm_vcpu *v = &sm->v[lm->vcpu_base + ev->cpu];
	int64_t prev = (int64_t)ev->f[0], next = (int64_t)ev->f[2];
	struct vms_obs_guest_switch o = {
		.machine = m, .vcpu = ev->cpu, .vidx = v->vidx, .t = t,
		.prev_tid = prev >= 0 && prev <= INT32_MAX ? (int32_t)prev : -1,
		.next_tid = next >= 0 && next <= INT32_MAX ? (int32_t)next : -1,
		.prev_comm = ev->s[0] ? ev->s[0] : "", .next_comm = ev->s[1] ? ev->s[1] : "",
		.prev_state = ev->f[1],
	};
	/* the guest ran while a halt was held: the clocks disagree; take the halt as is */
	halt_resolve(sm, v, false, 0, t);
	v->gtid = o.next_tid;
	v->base = next != 0 ? VMS_VCPU_RUNNING : VMS_VCPU_IDLE;
	if (sm->kept)
		keep_switch(sm, v, o.prev_state, o.next_comm);
	AN_EACH_KNOWN(sm->subs, guest_switch, an_overlays_on_guest_switch,
		      an_latency_on_guest_switch, an_latency_on_guest_switch, &o);
	if (occ)
		occ_guest_thread(sm, v, o.next_tid, o.next_comm, t);
	update(sm, v, t);
}

/* A guest thread woken onto one of the guest's vCPUs: the start of a wait (latency.c). */
static void on_guest_wakeup(struct an_sm *sm, uint32_t m, const struct vms_event *ev, uint64_t t)
{
	const struct an_layout_machine *lm = &sm->L->mach[m];
	int64_t tid = (int64_t)ev->f[0];
	if (tid <= 0 || tid > INT32_MAX)
		return;
	uint64_t target = ev->f[1];
	if (target >= lm->nr_vcpus)
		target = ev->cpu;
	if (target >= lm->nr_vcpus)
		return;
	struct vms_obs_guest_wakeup o = {
		.machine = m, .vcpu = (uint32_t)target, .vidx = lm->vcpu_base + (uint32_t)target,
		.t = t, .tid = (int32_t)tid, .comm = ev->s[0] ? ev->s[0] : "",
		.waker_vcpu = ev->cpu < lm->nr_vcpus ? (int32_t)ev->cpu : -1,
	};
	AN_EACH_KNOWN1(sm->subs, guest_wakeup, an_latency_on_guest_wakeup, &o);
}

static void left_detach(struct an_sm *sm, struct sm_vcpu *v)
{
	if (!v->left_valid)
		return;
	v->left_valid = false;
	if (!v->left_listed)
		return;
	struct sm_cpu *c = host_cpu(sm, (uint32_t)v->host, v->left_cpu);
	if (v->left_prev >= 0)
		sm->v[v->left_prev].left_next = v->left_next;
	else if (c)
		c->left_head = v->left_next;
	if (v->left_next >= 0)
		sm->v[v->left_next].left_prev = v->left_prev;
	if (c && c->nr_left)
		c->nr_left--;
	v->left_listed = false;
	v->left_prev = v->left_next = -1;
}

/* The vCPU's thread left CPU cpu (c): it is told who runs there from now on, unless
 * VMS_INSTEAD_MAX_WAITERS vCPUs already are (then its wait is unattributed, exact in length:
 * telling each of N waiters of every switch would make a trace's work N^2). A vCPU does not
 * move up the list when one before it runs again: its wait stays one thing, attributed or
 * not. */
static void left_attach(struct an_sm *sm, struct sm_vcpu *v, struct sm_cpu *c, uint32_t cpu)
{
	int32_t self = (int32_t)(v - sm->v);
	v->left_cpu = cpu;
	v->left_valid = true;
	if (c->nr_left >= VMS_INSTEAD_MAX_WAITERS)
		return;
	c->nr_left++;
	v->left_listed = true;
	v->left_prev = -1;
	v->left_next = c->left_head;
	if (c->left_head >= 0)
		sm->v[c->left_head].left_prev = self;
	c->left_head = self;
}


SM_HOT void on_host_switch(struct an_sm *sm, uint32_t h, const struct vms_event *ev, uint64_t t,
			   const bool occ)
{
	struct sm_cpu *c = host_cpu(sm, h, ev->cpu);
	int64_t prev = (int64_t)ev->f[0], next = (int64_t)ev->f[2];
	struct sm_vcpu *vp = vcpu_of_thread(sm, h, prev);
	struct sm_vcpu *vn = vcpu_of_thread(sm, h, next);
	int32_t next_tid = next >= 0 && next <= INT32_MAX ? (int32_t)next : -1;
	sm->mach[h].sched_switches++;
	if (c) {
		c->tid = next_tid;
		an_copy_comm(c->comm, ev->s[1]);
	}
	struct vms_obs_cpu_run o = {
		.host = h, .cpu = ev->cpu, .t = t, .tid = next_tid,
		.comm = ev->s[1] ? ev->s[1] : "",
		.prev_tid = prev >= 0 && prev <= INT32_MAX ? (int32_t)prev : -1,
		.prev_state = ev->f[1],
		.guest = vn ? (int32_t)vn->machine : -1, .vcpu = vn ? (int32_t)vn->vcpu : -1,
		.vidx = vn ? (int32_t)vn->vidx : -1,
	};
	if (sm->kept) {   /* (its thread and name: c's own, set above) */
		struct sm_kept_cpu *k = kept_cpu(sm, h, c);
		if (k) {
			k->run_seen = true;
			k->run_prev_state = o.prev_state;
		}
	}
	SM_PUBLISH1(sm, cpu_run, an_steal_on_cpu_run, struct vms_obs_cpu_run, o);
	if (occ && c) {
		occ_switch(sm, h, ev->cpu, c, next_tid, o.comm, t);
		if (vn)
			occ_here(sm, vn, h, ev->cpu, next_tid, t);
	}
	if (vp && vp != vn) {
		left_detach(sm, vp);
		vp->preempted = true;
		vp->halted = !an_prev_state_runnable(ev->f[1]);
		vp->run_cpu = -1;
		vp->sched_seen = true;
		if (c && vp->host == (int32_t)h)
			left_attach(sm, vp, c, ev->cpu);
		update(sm, vp, t);
	}
	/* the other vCPUs that left this CPU: someone else runs there now */
	for (int32_t i = c ? c->left_head : -1; i >= 0; i = sm->v[i].left_next)
		if (&sm->v[i] != vp && is_away(sm->v[i].state))
			publish_instead(sm, &sm->v[i], t);
	if (vn) {
		left_detach(sm, vn);
		vn->preempted = false;
		vn->halted = false;
		vn->run_cpu = (int32_t)ev->cpu;
		vn->sched_seen = true;
		update(sm, vn, t);
	}
}

/* The thread's mode at a kvm_exit or kvm_entry; its observation is not even made when no
 * one subscribes (a host whose guests have no trace: the containment check is off) */
static __attribute__((noinline)) void publish_mode(struct an_sm *sm, const struct sm_vcpu *v,
						    uint32_t h, const struct vms_event *ev,
						    uint64_t t)
{
	if (sm->kept) {
		struct sm_kept_vcpu *k = &sm->kept[v->vidx];
		k->mode_seen = true;
		k->mode_guest = ev->kind == VMS_K_KVM_ENTRY;
		k->mode_host = h;
		k->mode_cpu = ev->cpu;
		k->mode_tid = (int32_t)ev->tid;
	}
	if (!sm->subs->n[AN_CB_vcpu_mode])
		return;
	struct vms_obs_vcpu_mode mo = {
		.machine = v->machine, .vcpu = v->vcpu, .vidx = v->vidx, .host = h,
		.host_cpu = ev->cpu, .host_tid = ev->tid, .t = t,
		.guest_mode = ev->kind == VMS_K_KVM_ENTRY,
	};
	SM_PUBLISH1(sm, vcpu_mode, an_contain_on_mode, struct vms_obs_vcpu_mode, mo);
}

/* An L1 vCPU runs its guest's code (l2) or its own from now. */
static void nested_mode(struct sm_vcpu *v, bool l2)
{
	v->l2_mode = l2 ? 1 : 0;
	if (l2)
		v->refl_reason = UINT32_MAX;   /* L1 handled what was reflected */
}

SM_HOT void on_kvm(struct an_sm *sm, uint32_t h, const struct vms_event *ev, uint64_t t,
		   const bool occ)
{
	struct sm_vcpu *v = vcpu_of_thread(sm, h, ev->tid);
	if (!v)
		return;
	/* lost events: the ring buffer said so, or the thread is on another CPU than the last
	 * sched_switch put it on */
	if ((ev->flags & VMS_EVF_LOST_BEFORE) ||
	    (v->sched_seen && v->run_cpu >= 0 && (uint32_t)v->run_cpu != ev->cpu)) {
		exit_close(sm, v, h, t, VMS_EXIT_LOST);
	}
	v->run_cpu = (int32_t)ev->cpu;
	if (ev->kind == VMS_K_KVM_EXIT) {
		/* an exit without its entry: events were lost in between */
		exit_close(sm, v, h, t, VMS_EXIT_LOST);
		v->exit_pending = v->have_exit = true;
		v->exit_t = t;
		v->exit_reason = (uint32_t)ev->f[0];
		/* 1 VMX, 2 SVM, anything else unknown (0): what the exit tables key by, never a
		 * u32 from the trace */
		v->exit_isa = ev->f[1] == 1 || ev->f[1] == 2 ? (uint32_t)ev->f[1] : 0;
		v->exit_rip = ev->f[2];
		v->exit_info1 = ev->f[3];
		v->exit_info2 = ev->f[4];
		v->exit_cpu = ev->cpu;
		v->reflected = false;
		publish_mode(sm, v, h, ev, t);
		if (occ)
			occ_mode(sm, v, h, ev->cpu, ev->tid, false, t);
		if (sm->kept) {
			sm->kept[v->vidx].exit_host = h;
			sm->kept[v->vidx].exit_gtid = v->gtid;
		}
		SM_PUBLISH3(sm, exit_begin, an_overlays_on_exit_begin, an_latency_on_exit_begin,
			    an_findings_on_exit_begin, struct vms_obs_exit,
			    exit_obs(v, h, t, VMS_EXIT_ENDED));
		v->vmm = true;
		v->halt = HALT_NONE;
		if (vms_exit_is_halt(v->exit_isa, v->exit_reason)) {
			/* the exit's own states are published when its halt ends */
			v->halt = HALT_PENDING;
			v->halt_t0 = t;
			v->nheld = 0;
		}
	} else {
		exit_close_in(sm, v, h, t, VMS_EXIT_ENDED);
		publish_mode(sm, v, h, ev, t);
		if (occ)
			occ_mode(sm, v, h, ev->cpu, ev->tid, true, t);
		v->vmm = false;
		v->halt = HALT_NONE;
		v->polling = false;
		v->reflected = false;
		if (__builtin_expect(ev->f[2] != 0, 0))
			nested_mode(v, ev->f[2] == 2);
	}
	update_in(sm, v, t);
}

/* L0's nested events on an L1 vCPU's thread (docs/DESIGN.md, nested): whose code it runs,
 * and which of L2's exits L0 reflected into L1. */
static void on_nested(struct an_sm *sm, uint32_t h, const struct vms_event *ev, uint64_t t)
{
	struct sm_vcpu *v = vcpu_of_thread(sm, h, ev->tid);
	if (!v)
		return;
	if (ev->kind == VMS_K_KVM_NESTED_INJECT) {
		v->l2_mode = 0;
		v->reflected = v->exit_pending;
		/* kvm_nested_vmexit_inject names the exit L1 is given; kvm_nested_intr_vmexit
		 * does not (no isa): the exit L0 is in */
		bool named = ev->f[1] == 1 || ev->f[1] == 2;
		v->refl_reason = named ? (uint32_t)ev->f[0] & INT32_MAX
				       : v->exit_pending ? v->exit_reason & INT32_MAX : UINT32_MAX;
		v->refl_isa = named ? (uint32_t)ev->f[1] : v->exit_isa;
	} else {
		/* kvm_nested_vmexit: L2's code exited to L0; kvm_nested_vmenter: L1 entered L2 */
		nested_mode(v, true);
	}
	update_upper(sm, v, t);
}

/* kvm_vcpu_wakeup: a halt ends (f0 ns halted or polled, f1 waited, f2 valid). */
static void on_vcpu_wakeup(struct an_sm *sm, uint32_t h, const struct vms_event *ev, uint64_t t)
{
	struct sm_vcpu *v = vcpu_of_thread(sm, h, ev->tid);
	if (!v)
		return;
	if (!v->exit_pending || !vms_exit_is_halt(v->exit_isa, v->exit_reason)) {
		/* a wake-up outside any halt: the HLT exit (and the entry closing an exit before
		 * it) were lost; the thread is in the hypervisor, for a reason not recorded */
		exit_close(sm, v, h, t, VMS_EXIT_LOST);
		v->vmm = true;
		v->have_exit = false;
		v->halt = HALT_NONE;
		update(sm, v, t);
		return;
	}
	if (v->halt == HALT_PENDING) {
		uint64_t ns = ev->f[0], th = v->halt_t0;
		if (ns <= t - v->halt_t0)
			th = t - ns;
		/* (its last point, the halt's end at t: HALT_HANDLING published, as below) */
		halt_resolve(sm, v, true, th, t);
		return;
	}
	/* the halt is over: handling until the kvm_entry */
	v->halt = HALT_HANDLING;
	update(sm, v, t);
}

static void on_host_wakeup(struct an_sm *sm, uint32_t h, const struct vms_event *ev, uint64_t t)
{
	struct sm_vcpu *v = vcpu_of_thread(sm, h, (int64_t)ev->f[0]);
	if (!v)
		return;
	struct vms_obs_vcpu_wakeup o = {
		.machine = v->machine, .vcpu = v->vcpu, .vidx = v->vidx, .host = h,
		.host_tid = (int32_t)ev->f[0], .t = t,
	};
	AN_EACH_KNOWN1(sm->subs, vcpu_wakeup, an_steal_on_wakeup, &o);
}

/* A host's coverage begins with its first event: from then on what it does not say about a
 * vCPU thread (no exit, no preemption) is known not to have happened. */
static void machine_start(struct an_sm *sm, uint32_t m, uint64_t t)
{
	sm->mach[m].started = true;
	if (!sm->L->mach[m].host)
		return;
	for (uint32_t i = 0; i < sm->L->nr_v; i++) {
		struct sm_vcpu *v = &sm->v[i];
		if (v->host == (int32_t)m) {
			v->host_known = true;
			update(sm, v, t);
		}
	}
}

void an_sm_start(struct an_sm *sm, uint64_t t0)
{
	SM_EXACT3(sm, vcpu_state, an_fused_state, an_latency_on_state, an_findings_on_state);
	SM_EXACT3(sm, vcpu_instead, an_fused_instead, an_latency_on_instead,
		  an_findings_on_instead);
	SM_EXACT3(sm, exit_begin, an_overlays_on_exit_begin, an_latency_on_exit_begin,
		  an_findings_on_exit_begin);
	SM_EXACT1(sm, exit_end, an_fused_exit_end);
	SM_EXACT1(sm, vcpu_mode, an_contain_on_mode);
	SM_EXACT1(sm, cpu_run, an_steal_on_cpu_run);
	AN_EACH(sm->subs, start, t0);
}

static void occ_coverage_end(struct an_sm *sm, uint32_t h, uint64_t t);

/* Another trace goes on past the end of the hosts' traces that ended (up to t): their CPUs
 * are unknown from their ends. */
static __attribute__((noinline)) void occ_end_flush(struct an_sm *sm, uint64_t t)
{
	sm->occ_end_pending = false;
	for (uint32_t h = 0; h < sm->L->nr_mach; h++)
		if (sm->mach[h].occ_end_pending && t > sm->mach[h].end_t)
			occ_coverage_end(sm, h, sm->mach[h].end_t);
		else if (sm->mach[h].occ_end_pending)
			sm->occ_end_pending = true;   /* (an event at its end: not past it yet) */
}

SM_HOT void sm_event(struct an_sm *sm, const struct vms_event *ev, uint64_t t, const bool occ)
{
	uint32_t m = ev->machine;
	if (occ && __builtin_expect(sm->occ_end_pending, 0))
		occ_end_flush(sm, t);
	if (m < sm->L->nr_mach) {
		const struct an_layout_machine *lm = &sm->L->mach[m];
		if (!sm->mach[m].started)
			machine_start(sm, m, t);
		if (occ && lm->host && (ev->flags & VMS_EVF_LOST_BEFORE)) {
			struct sm_cpu *c = host_cpu(sm, m, ev->cpu);
			if (c)
				occ_forget(sm, m, ev->cpu, c, t);
		}
		if (lm->guest && ev->cpu < lm->nr_vcpus) {
			sm->v[lm->vcpu_base + ev->cpu].last_stream = (int32_t)ev->stream;
			if (ev->kind == VMS_K_SCHED_SWITCH)
				on_guest_switch(sm, m, ev, t, occ);
		}
		if (lm->guest && ev->kind == VMS_K_SCHED_WAKEUP)
			on_guest_wakeup(sm, m, ev, t);
		if (lm->host) {
			switch (ev->kind) {
			case VMS_K_SCHED_SWITCH: on_host_switch(sm, m, ev, t, occ); break;
			case VMS_K_KVM_ENTRY:
			case VMS_K_KVM_EXIT: on_kvm(sm, m, ev, t, occ); break;
			case VMS_K_KVM_VCPU_WAKEUP: on_vcpu_wakeup(sm, m, ev, t); break;
			case VMS_K_SCHED_WAKEUP: on_host_wakeup(sm, m, ev, t); break;
			case VMS_K_KVM_NESTED_VMENTER:
			case VMS_K_KVM_NESTED_VMEXIT:
			case VMS_K_KVM_NESTED_INJECT: on_nested(sm, m, ev, t); break;
			default: break;
			}
		}
		if (occ)
			occ_event_after(sm, m, lm, ev, t);
		if (lm->guest) {
			AN_EACH(sm->subs, event, ev, t);
			return;
		}
	}
	AN_EACH_IN(sm->subs, AN_CB_host_event, event, ev, t);
}

/* The event path twice, with and without following occupants (occ a constant in each
 * copy): what only the fused view needs costs nothing when no one reads it (`report`). Both
 * copies inline into the session's pass: the occupants' out of line cost the export ~9 M
 * instructions on a 500 k-event pair in calls, and report gained nothing from it. */
void an_sm_event(struct an_sm *sm, const struct vms_event *ev, uint64_t t)
{
	if (sm->occ)
		sm_event(sm, ev, t, true);
	else
		sm_event(sm, ev, t, false);
}

/* The guest's coverage of vCPU v ended at t: its base and current thread are unknown. */
static void guest_coverage_end(struct an_sm *sm, struct sm_vcpu *v, uint64_t t)
{
	if (v->base == VMS_VCPU_UNKNOWN && v->gtid < 0)
		return;
	halt_resolve(sm, v, false, 0, t);
	struct vms_obs_guest_switch o = {
		.machine = v->machine, .vcpu = v->vcpu, .vidx = v->vidx, .t = t,
		.prev_tid = v->gtid, .next_tid = -1, .prev_comm = "", .next_comm = "",
	};
	v->gtid = -1;
	v->base = VMS_VCPU_UNKNOWN;
	if (sm->kept)
		keep_switch(sm, v, 0, "");
	PUBLISH(sm, guest_switch, &o);
	if (sm->occ)
		occ_guest_thread(sm, v, -1, "", t);
	update(sm, v, t);
}

/* The host's coverage ended at t: what it said of the vCPU thread is unknown from now. */
static void host_coverage_end(struct an_sm *sm, struct sm_vcpu *v, uint64_t t)
{
	if (v->host < 0)
		return;
	exit_close(sm, v, (uint32_t)v->host, t, VMS_EXIT_UNFINISHED);
	left_detach(sm, v);
	v->vmm = v->preempted = v->halted = v->polling = false;
	v->halt = HALT_NONE;
	v->host_known = false;
	v->run_cpu = -1;
	update(sm, v, t);
}

/* Host h's trace ended at t (its last event): from then on no CPU of h shows an occupant, in
 * host or in guest mode (§7: outside coverage the answer is unknown, never the last occupant
 * carried forward while other traces go on). The end is the trace's, not each CPU's last
 * event: one recording starts and stops the ring buffers of all its CPUs together (trace-cmd,
 * LTTng, xentrace), so a CPU with no event late in the trace was quiet, not unrecorded, and
 * what its last sched_switch put there is still exact up to the trace's end. */
static void occ_coverage_end(struct an_sm *sm, uint32_t h, uint64_t t)
{
	static const char none[24] = "";   /* (a comm is 24 bytes that may all be read) */
	struct sm_machine *am = &sm->mach[h];
	am->occ_end_pending = false;
	for (uint32_t cpu = 0; cpu < am->nr_cpus; cpu++) {
		struct sm_cpu *c = &am->cpu[cpu];
		occ_clear_gm(sm, c);
		c->occ_known = false;
		if (c->pub_open)
			occ_publish(sm, h, cpu, c, t, -1, -1, -1, -1, none);
	}
}

void an_sm_stream_end(struct an_sm *sm, uint32_t m, uint32_t stream, uint64_t t)
{
	if (m >= sm->L->nr_mach)
		return;
	const struct an_layout_machine *lm = &sm->L->mach[m];
	for (uint32_t n = 0; lm->guest && n < lm->nr_vcpus; n++) {
		struct sm_vcpu *v = &sm->v[lm->vcpu_base + n];
		if (v->last_stream == (int32_t)stream)
			guest_coverage_end(sm, v, t);
	}
}

void an_sm_machine_end(struct an_sm *sm, uint32_t m, uint64_t t)
{
	if (m >= sm->L->nr_mach || sm->mach[m].ended)
		return;
	sm->mach[m].ended = true;
	const struct an_layout_machine *lm = &sm->L->mach[m];
	for (uint32_t n = 0; lm->guest && n < lm->nr_vcpus; n++)
		guest_coverage_end(sm, &sm->v[lm->vcpu_base + n], t);
	if (lm->host) {
		for (uint32_t i = 0; i < sm->L->nr_v; i++)
			if (sm->v[i].host == (int32_t)m)
				host_coverage_end(sm, &sm->v[i], t);
		if (sm->occ) {
			sm->mach[m].occ_end_pending = sm->occ_end_pending = true;
			sm->mach[m].end_t = t;
		}
	}
}

bool an_sm_preempt_visible(const struct an_sm *sm, uint32_t vidx)
{
	int32_t h = sm->v[vidx].host;
	return h >= 0 && sm->mach[h].sched_switches > 0;
}

void an_sm_finish(struct an_sm *sm, uint64_t t_end)
{
	if (sm->occ_end_pending)
		occ_end_flush(sm, t_end);
	for (uint32_t i = 0; i < sm->L->nr_v; i++) {
		struct sm_vcpu *v = &sm->v[i];
		if (v->host >= 0)
			exit_close(sm, v, (uint32_t)v->host, t_end, VMS_EXIT_UNFINISHED);
	}
	AN_EACH(sm->subs, finish, t_end);
}

/* ---- the last words (struct sm_kept_vcpu, sm_kept_cpu) ---- */

int an_sm_keep_last_words(struct an_sm *sm)
{
	if (sm->kept)
		return 0;
	sm->kept = calloc(sm->L->nr_v ? sm->L->nr_v : 1, sizeof *sm->kept);
	sm->kept_cpu = calloc(sm->L->nr_mach ? sm->L->nr_mach : 1, sizeof *sm->kept_cpu);
	if (!sm->kept || !sm->kept_cpu) {
		free(sm->kept);
		free(sm->kept_cpu);
		sm->kept = NULL;
		sm->kept_cpu = NULL;
		return -1;
	}
	for (uint32_t m = 0; m < sm->L->nr_mach; m++) {
		uint32_t n = sm->mach[m].nr_cpus;
		if (n && !(sm->kept_cpu[m] = calloc(n, sizeof **sm->kept_cpu)))
			sm->kept_lost = true;
	}
	return 0;
}

struct kept_order {
	uint64_t seq;
	uint32_t h, cpu;
};

static int kept_order_cmp(const void *a, const void *b)
{
	const struct kept_order *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The CPUs told of, in the order they were first told of (a gate's order). */
static int tell_cpus(struct an_sm *sm, const struct vms_observer *o)
{
	size_t n = 0;
	for (uint32_t h = 0; h < sm->L->nr_mach; h++)
		for (uint32_t c = 0; sm->kept_cpu[h] && c < sm->mach[h].nr_cpus; c++)
			n += sm->kept_cpu[h][c].seq != 0;
	struct kept_order *ord = calloc(n ? n : 1, sizeof *ord);
	if (!ord)
		return -1;
	n = 0;
	for (uint32_t h = 0; h < sm->L->nr_mach; h++)
		for (uint32_t c = 0; sm->kept_cpu[h] && c < sm->mach[h].nr_cpus; c++)
			if (sm->kept_cpu[h][c].seq)
				ord[n++] = (struct kept_order){ sm->kept_cpu[h][c].seq, h, c };
	qsort(ord, n, sizeof *ord, kept_order_cmp);
	for (size_t i = 0; i < n; i++) {
		uint32_t h = ord[i].h, cpu = ord[i].cpu;
		const struct sm_cpu *c = &sm->mach[h].cpu[cpu];
		const struct sm_kept_cpu *k = &sm->kept_cpu[h][cpu];
		if (k->run_seen) {   /* (who the thread is: the model's answer, as when told) */
			const struct sm_vcpu *vn = vcpu_of_thread(sm, h, c->tid);
			struct vms_obs_cpu_run r = {
				.host = h, .cpu = cpu, .tid = c->tid, .comm = c->comm, .prev_tid = -1,
				.prev_state = k->run_prev_state,
				.guest = vn ? (int32_t)vn->machine : -1,
				.vcpu = vn ? (int32_t)vn->vcpu : -1, .vidx = vn ? (int32_t)vn->vidx : -1,
			};
			o->cpu_run(o->ctx, &r);
		}
		if (k->occ_seen) {
			struct vms_obs_cpu_occupant oc = {
				.host = h, .cpu = cpu, .guest = -1, .vcpu = -1, .vidx = -1, .tid = -1,
				.comm = k->occ_comm,
			};
			if (c->pub_open) {
				oc.guest = c->pub_guest;
				oc.vcpu = c->pub_vcpu;
				oc.vidx = k->occ_vidx;
				oc.tid = c->pub_tid;
			}
			o->cpu_occupant(o->ctx, &oc);
		}
	}
	free(ord);
	return 0;
}

/* Each vCPU's last words, in the order of one event (window.c's replay). */
static void tell_vcpu(struct an_sm *sm, const struct sm_vcpu *v, const struct vms_observer *o)
{
	const struct sm_kept_vcpu *k = &sm->kept[v->vidx];
	if (k->mode_seen) {
		struct vms_obs_vcpu_mode mo = {
			.machine = v->machine, .vcpu = v->vcpu, .vidx = v->vidx, .host = k->mode_host,
			.host_cpu = k->mode_cpu, .host_tid = k->mode_tid, .guest_mode = k->mode_guest,
		};
		o->vcpu_mode(o->ctx, &mo);
	}
	if (v->exit_pending) {   /* (told at its kvm_exit: its begin is its time) */
		struct vms_obs_exit eo = exit_obs(v, k->exit_host, v->exit_t, VMS_EXIT_ENDED);
		eo.gtid = k->exit_gtid;
		o->exit_begin(o->ctx, &eo);
	}
	if (k->sw_seen) {
		struct vms_obs_guest_switch sw = {
			.machine = v->machine, .vcpu = v->vcpu, .vidx = v->vidx, .prev_tid = -1,
			.next_tid = v->gtid, .prev_comm = "", .next_comm = k->sw_comm,
			.prev_state = k->sw_prev_state,
		};
		o->guest_switch(o->ctx, &sw);
	}
	if (k->state_seen) {
		struct vms_obs_vcpu_state st = {
			.machine = v->machine, .vcpu = v->vcpu, .vidx = v->vidx, .status = v->status,
			.state = v->state, .old_state = VMS_STATE_UNKNOWN, .gtid = k->state_gtid,
			.host = v->host, .host_tid = v->host_tid, .host_cpu = k->state_host_cpu,
			.exit_reason = k->state_exit_reason, .isa = k->state_isa,
			.halt_polling = v->pub_polling, .layer = v->layer,
		};
		o->vcpu_state(o->ctx, &st);
	}
	if (k->instead_has) {
		struct vms_obs_vcpu_instead in = {
			.machine = v->machine, .vcpu = v->vcpu, .vidx = v->vidx,
			.host = k->instead_host, .host_cpu = k->instead_cpu, .tid = k->instead_tid,
			.comm = k->instead_comm, .unattributed = k->instead_unattributed,
		};
		o->vcpu_instead(o->ctx, &in);
	}
}

int an_sm_last_words(struct an_sm *sm, const struct vms_observer *o)
{
	if (!sm->kept || sm->kept_lost || tell_cpus(sm, o) < 0)
		return -1;
	for (uint32_t i = 0; i < sm->L->nr_v; i++)
		tell_vcpu(sm, &sm->v[i], o);
	return 0;
}

/* ---- the state's parts, for the snapshot (vcpu_state_snap.c writes and checks them) ----
 * Every field of the state is in one of these byte ranges, so that a field added to
 * struct sm_vcpu, sm_cpu or sm_machine is snapshotted without a line here (the round-trip
 * test compares a restored state's re-serialisation with the original's). Left out, and
 * why: L and subs (the restoring machine's own), the CPU arrays' pointers (remade), and
 * thread_cache (a cache of the model's answers, emptied: it refills with the same). */
struct an_sm_parts an_sm_parts(struct an_sm *sm)
{
	return (struct an_sm_parts){
		.vcpus = sm->v, .nr_vcpus = sm->L->nr_v, .vcpu_size = sizeof *sm->v,
		.nr_machines = sm->L->nr_mach,
		.machine_tail_off = offsetof(struct sm_machine, started),
		.machine_size = sizeof(struct sm_machine), .cpu_size = sizeof(struct sm_cpu),
		.occ = &sm->occ, .occ_where = &sm->occ_where, .occ_unfollowed = &sm->occ_unfollowed,
		.occ_end_pending = &sm->occ_end_pending,
	};
}

void *an_sm_machine(struct an_sm *sm, uint32_t m, void **cpus, uint32_t *nr_cpus)
{
	*cpus = sm->mach[m].cpu;
	*nr_cpus = sm->mach[m].nr_cpus;
	return &sm->mach[m];
}

int an_sm_set_cpus(struct an_sm *sm, uint32_t m, uint32_t nr)
{
	struct sm_machine *mc = &sm->mach[m];
	if (sm->kept) {   /* (a restored state's last words are not known) */
		free(sm->kept_cpu[m]);
		sm->kept_cpu[m] = NULL;
		sm->kept_lost = true;
	}
	free(mc->cpu);
	mc->cpu = nr ? calloc(nr, sizeof *mc->cpu) : NULL;
	mc->nr_cpus = mc->cpu ? nr : 0;
	memset(sm->thread_cache, 0, sizeof sm->thread_cache);
	return nr && !mc->cpu ? -1 : 0;
}

/* Whether restored bytes make a state this file can run: every index in range, every flag 0
 * or 1, every enum one of its values (the bytes come from a file, so they are checked, not
 * trusted). */
static bool ok_b(const bool *b) { return *(const unsigned char *)b <= 1; }
static bool ok_i(int32_t i, uint32_t n) { return i >= -1 && (i < 0 || (uint32_t)i < n); }

bool an_sm_check(const struct an_sm *sm)
{
	const struct an_layout *L = sm->L;
	if (!ok_b(&sm->occ) || !ok_b(&sm->occ_end_pending))
		return false;
	for (uint32_t i = 0; i < L->nr_v; i++) {
		const struct sm_vcpu *v = &sm->v[i];
		if (v->machine != L->v[i].machine || v->vcpu != L->v[i].vcpu || v->vidx != i ||
		    v->host != L->v[i].host || v->base > VMS_VCPU_RUNNING ||
		    (uint32_t)v->state >= VMS_STATE_COUNT || (uint32_t)v->halt > HALT_ON_CPU ||
		    v->status > 0xffff || v->nheld > 8 || !ok_i(v->run_cpu, AN_MAX_CPUS) ||
		    !ok_i(v->left_prev, L->nr_v) || !ok_i(v->left_next, L->nr_v) ||
		    v->left_cpu >= AN_MAX_CPUS || !ok_i(v->occ_cpu, AN_MAX_CPUS) ||
		    !ok_i(v->gm_cpu, AN_MAX_CPUS) || !ok_i(v->gm_host, L->nr_mach) ||
		    !ok_i(v->lower_cur, L->nr_v) || !ok_i(v->upper, L->nr_v) ||
		    !ok_i(v->lower_base, L->nr_v) || v->lower_n < 0 ||
		    (v->lower_base >= 0 && (uint32_t)v->lower_base + (uint32_t)v->lower_n > L->nr_v) ||
		    v->l2_mode < -1 || v->l2_mode > 1 || v->occ_gcomm[23])
			return false;
		const bool *flags[] = { &v->vmm, &v->preempted, &v->halted, &v->host_known,
					&v->sched_seen, &v->polling, &v->pub_polling, &v->exit_pending,
					&v->have_exit, &v->left_valid, &v->left_listed, &v->reflected };
		for (size_t k = 0; k < sizeof flags / sizeof *flags; k++)
			if (!ok_b(flags[k]))
				return false;
		for (uint32_t k = 0; k < 8; k++)
			if (!ok_b(&v->held[k].preempted) || !ok_b(&v->held[k].halted))
				return false;
	}
	for (uint32_t m = 0; m < L->nr_mach; m++) {
		const struct sm_machine *mc = &sm->mach[m];
		if (mc->nr_cpus > AN_MAX_CPUS || !ok_b(&mc->started) || !ok_b(&mc->ended) ||
		    !ok_b(&mc->unscheduled) || !ok_b(&mc->occ_end_pending))
			return false;
		for (uint32_t c = 0; c < mc->nr_cpus; c++) {
			const struct sm_cpu *cp = &mc->cpu[c];
			if (!ok_i(cp->left_head, L->nr_v) || cp->nr_left > VMS_INSTEAD_MAX_WAITERS ||
			    !ok_i(cp->occ_gm, L->nr_v) || cp->comm[23] || cp->occ_comm[23] ||
			    !ok_b(&cp->occ_known) || !ok_b(&cp->occ_seen) || !ok_b(&cp->pub_open) ||
			    !ok_b(&cp->pub_named))
				return false;
		}
	}
	return true;
}
