/* The timeline export's stage 2 (export_rec.h): the records of the state machine's
 * observations and of the analyses' intervals that stage 1 (export_front.c) made, written as
 * tracks through the timeline writer (timeline.h).
 *
 * Where each kind of slice comes from:
 *   CPU n               the fused view (pcpu_view.c), whose observer this one feeds
 *   vCPU n              vcpu_state (maximal intervals, as `vmscope vcpus` gets them from
 *                       the vcpu_interval sink); with nested guests (vms_model_nested) a
 *                       state with a layer is named with it: "vmm at l0"
 *   vCPU n exits        exit_begin opens, exit_end closes (as `vmscope exits` counts them)
 *   guest thread        guest_switch opens/closes "running on vCPU n"; the overlays (as
 *                       `vmscope threads`), made here from the records by the analysis's own
 *                       consumer (vmscope/overlays.h), close before (or when) the running
 *                       slice closes and so nest inside it
 *   host thread         vcpu_state (preempted) and vcpu_instead: who runs where the vCPU's
 *                       thread left, while it is preempted (not halted: that is no steal)
 *   unattributed        vcpu_instead's unattributed (vmscope/observe.h): a host's counter
 *                       of the vCPUs preempted with who ran not followed, made when needed
 *   counters            per period: exits begun / period, preempted time / period */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/grow.h"
#include "model/keymap.h"
#include "export_rec.h"
#include "timeline.h"
#include "vmscope/overlays.h"
#include "vmscope/pcpu_view.h"

#define DEFAULT_PERIOD 10000000ull   /* 10 ms */
#define RD_ISAS 3                    /* exit names found by a table (VMX 1, SVM 2) ... */
#define RD_REASONS 1280              /* ... for reasons below (SVM's go to 0x403) */
#define RANK_THREADS 1000000

struct xv {                      /* per vCPU */
	uint32_t machine, vcpu;
	bool kept;                   /* by the filter: its tracks exist */
	uint64_t st_start;           /* its state's slice: since when, and which state */
	enum vms_vcpu_state st;
	uint32_t st_name;            /* its slice's name when not state_name[st] (nested) */
	uint32_t state_tr, exits_tr, rate_tr, steal_tr;
	int32_t run_gtid;            /* guest thread whose running slice is open, -1 none */
	uint32_t run_tr;             /* its track */
	int32_t ins_tid;             /* the host thread last named in its overlays, -1 none */
	uint32_t ins_name;           /* its name */
	uint32_t run_name;           /* "running on vCPU n" */
	uint32_t instead_name;       /* "instead of <guest> vCPU n" */
	/* steal: who runs where its thread left while preempted */
	bool preempted;
	uint64_t pre_since;
	int32_t steal_tid;           /* host thread charged now, -1 none */
	uint32_t lane;               /* its lane: thief index << 8 | lane number */
	uint32_t steal_group;        /* the lane's group (its host's) */
	uint64_t steal_since;
	bool unattr;                 /* counted in its host's unattributed counter */
	uint32_t unattr_host;
	/* counters */
	uint64_t b_start, b_exits, b_steal;
	bool emitted;
	double last_rate, last_steal;
};

/* A CPU's track, and the names of its last occupants (a CPU goes back and forth between a
 * few: a vCPU in guest mode, its thread in the hypervisor, a host thread): found here without
 * a hash lookup. An entry is (occupant key, comm) -> name id; name 0 is an empty entry. */
#define CPU_NAMES 8
struct xcpu {
	uint32_t tr;
	unsigned next;               /* the entry replaced next */
	struct { uint64_t key; uint32_t name; char comm[24]; } nc[CPU_NAMES];
};
#define CPU_DIRECT 256           /* CPUs below: their index by a table, not a hash */

/* Names made from a thread's comm, kept per (kind, machine, thread) with the comm they were
 * made from: made again only when the comm changes (a slice's name is not formatted per
 * slice). */
struct xnamed {
	uint32_t name;
	char comm[24];
};

struct xnames {
	struct vms_keymap map;       /* key -> index in v + 1 */
	struct xnamed *v;
	uint32_t n, cap;
};

/* A host thread that ran instead of preempted vCPUs: a lane (timeline.h) per slice it has
 * open at once, made when first needed, numbered from 0 and reused when free, so that its
 * lanes made are 0 .. nlanes - 1 and nothing else is kept of them. A lane's key is the
 * thief's index << 8 | its number. */
#define LANES_MAX 256
struct xthief {
	uint64_t busy[LANES_MAX / 64];   /* lanes open now */
	uint16_t nlanes;
};
#define THIEVES_MAX (VMS_TL_LANE_KEYS / LANES_MAX)

struct xconf {                   /* what the export was asked (kept across resets) */
	FILE *out;
	enum vms_export_format format;
	uint64_t period;
	struct vms_filter filter;
	char *machine;               /* opts.machine_name */
	bool rewritable;             /* out can be emptied and written again (a reset) */
	bool deflate;
};

/* Everything but c is made from a model (make_state) and made again at a reset. */
struct xback {
	struct xconf c;
	const struct vms_model *m;
	struct vms_filter f;
	struct vms_tl *tl;
	uint64_t period;
	uint32_t nr_mach;
	uint32_t *group;             /* [nr_mach], UINT32_MAX when none */
	bool *no_tids;               /* [nr_mach]: its "threads" have no tid in the trace (a
	                                Xen host's: vCPUs numbered by VMS_XEN_TID), so their
	                                names show none (docs/perfetto.md) */
	uint32_t *unattr_tr;         /* [nr_mach]: its unattributed counter + 1, 0 none yet */
	uint32_t *unattr_n;          /* [nr_mach]: the vCPUs it counts now */
	uint32_t *vbase;
	struct xv *v;
	uint32_t nr_v;
	struct vms_keymap cpu_tr;    /* (host, cpu) -> index in cpus + 1 */
	uint32_t *cpu_ix;            /* [nr_mach * CPU_DIRECT]: the same, for CPUs below */
	struct xcpu *cpus;
	uint32_t nr_cpus, cap_cpus;
	struct vms_keymap gthread_tr; /* (guest, tid) -> track + 1 */
	struct vms_keymap thief_ix;  /* (host, tid) -> index in thieves + 1 */
	struct xthief *thieves;
	uint32_t nr_thieves, cap_thieves;
	bool nested;                 /* vms_model_nested: states are named with their layer */
	struct vms_keymap layer_name; /* state << 32 | layer -> "STATE at MACHINE"'s name id */
	struct vms_keymap vmm_name;  /* vmm << 63 | isa << 32 | exit reason -> name id of
	                                "REASON" (an exit) or "vmm: REASON" (an overlay) */
	uint32_t (*rdirect)[RD_ISAS][RD_REASONS]; /* [vmm]: the same for small isa and reason */
	struct xnames occupants;     /* who ran on a CPU: (guest, vcpu, tid) */
	struct xnames insteads;      /* host threads: (host, tid) */
	struct vms_pcpu_view *pv;
	struct vms_observer pvo;
	struct vms_overlays *ov;     /* the guest threads' overlays, fed before the records */
	struct vms_observer ovo;
	/* names made once: argument keys, vCPU states */
	uint32_t k_rip, k_info1, k_info2, k_host_cpu, k_end, k_vcpu, k_instead, k_instead_tid;
	uint32_t state_name[VMS_STATE_COUNT];
	bool started, finished, failed;
};

static const char *mname(const struct xback *x, uint32_t m)
{
	const struct vms_machine *mc = vms_model_machine_c(x->m, m);
	return mc && mc->name ? mc->name : "?";
}

/* "comm (tid), pid N" of a thread as the model knew it (ti), its comm given or the model's;
 * its comm alone when its machine's trace has no tids (no_tids) */
static void thread_name(const struct xr_thread *ti, int32_t tid, bool no_tid, const char *given,
			char *buf, size_t len)
{
	const char *c = given && *given ? given : ti->comm[0] ? ti->comm : "?";
	if (no_tid)
		snprintf(buf, len, "%s", c);
	else if (ti->pid > 0) /* the process where the trace says it (vms_pid_how) */
		snprintf(buf, len, "%s (%d), pid %d", c, tid, ti->pid);
	else
		snprintf(buf, len, "%s (%d)", c, tid);
}

static struct xv *xv_of(struct xback *x, uint32_t machine, uint32_t vcpu)
{
	if (machine >= x->nr_mach)
		return NULL;
	uint32_t i = x->vbase[machine] + vcpu;
	uint32_t end = machine + 1 < x->nr_mach ? x->vbase[machine + 1] : x->nr_v;
	return i < end ? &x->v[i] : NULL;
}

/* A track looked up in map by key, made by name when absent. */
static uint32_t track_for(struct xback *x, struct vms_keymap *map, uint64_t key,
			  uint32_t group, const char *name, int32_t rank)
{
	uint64_t *v = vms_keymap_get(map, key);
	if (v)
		return (uint32_t)(*v - 1);
	uint32_t tr = vms_tl_track(x->tl, group, name, rank);
	if (tr == UINT32_MAX || !vms_keymap_put(map, key, (uint64_t)tr + 1, NULL)) {
		x->failed = true;
		return UINT32_MAX;
	}
	return tr;
}

/* The entry of key in ns, its name 0 (to be made) when new or when made from another comm;
 * NULL when out of memory. */
static struct xnamed *named(struct xback *x, struct xnames *ns, uint64_t key,
			    const char *comm)
{
	uint64_t *v = vms_keymap_get(&ns->map, key);
	if (!v) {
		if (ns->n == ns->cap) {
			struct xnamed *nv = vms_grow(ns->v, &ns->cap, sizeof *nv, 16);
			if (!nv)
				goto fail;
			ns->v = nv;
		}
		if (!(v = vms_keymap_put(&ns->map, key, ns->n + 1, NULL)))
			goto fail;
		ns->v[ns->n++] = (struct xnamed){ .name = 0 };
	}
	struct xnamed *nm = &ns->v[*v - 1];
	if (strncmp(nm->comm, comm, sizeof nm->comm)) {
		snprintf(nm->comm, sizeof nm->comm, "%s", comm);
		nm->name = 0;
	}
	return nm;
fail:
	x->failed = true;
	return NULL;
}

static void names_free(struct xnames *ns)
{
	vms_keymap_free(&ns->map);
	free(ns->v);
}

/* ---- the fused view ---- */

static struct xcpu *cpu_track(struct xback *x, uint32_t host, uint32_t cpu)
{
	uint32_t *ix = cpu < CPU_DIRECT ? &x->cpu_ix[(size_t)host * CPU_DIRECT + cpu] : NULL;
	if (ix && *ix)
		return &x->cpus[*ix - 1];
	uint64_t key = (uint64_t)host << 32 | cpu;
	uint64_t *v = vms_keymap_get(&x->cpu_tr, key);
	if (v)
		return &x->cpus[*v - 1];
	if (x->nr_cpus == x->cap_cpus) {
		struct xcpu *nc = vms_grow(x->cpus, &x->cap_cpus, sizeof *nc, 16);
		if (!nc)
			goto fail;
		x->cpus = nc;
	}
	char name[32];
	snprintf(name, sizeof name, "CPU %u", cpu);
	struct xcpu *c = &x->cpus[x->nr_cpus];
	memset(c, 0, sizeof *c);
	c->tr = vms_tl_track(x->tl, x->group[host], name, (int32_t)cpu);
	if (c->tr == UINT32_MAX || !vms_keymap_put(&x->cpu_tr, key, x->nr_cpus + 1, NULL))
		goto fail;
	if (ix)
		*ix = x->nr_cpus + 1;
	return &x->cpus[x->nr_cpus++];
fail:
	x->failed = true;
	return NULL;
}

static void pcpu_row(void *ctx, const struct vms_pcpu_interval *iv)
{
	struct xback *x = ctx;
	if (iv->host >= x->nr_mach || !vms_filter_pcpu(&x->f, iv->host, iv->guest, iv->vcpu))
		return;
	/* who ran is not known (docs/vm-analysis.md §7): no slice, so that the track shows a
	 * gap, as before the CPU's first event, rather than an "unknown" slice that Perfetto's
	 * slice tables would count as an occupant */
	if (iv->guest < 0 && iv->tid < 0)
		return;
	struct xcpu *c = cpu_track(x, iv->host, iv->cpu);
	if (!c)
		return;
	/* the name says it all (no arguments: this is the biggest kind of slice) */
	uint64_t key = ((uint64_t)(uint16_t)(iv->guest + 1) << 48) |
		       ((uint64_t)(uint16_t)(iv->vcpu + 1) << 32) | (uint32_t)iv->tid;
	for (unsigned i = 0; i < CPU_NAMES; i++)
		if (c->nc[i].key == key && c->nc[i].name && !memcmp(c->nc[i].comm, iv->comm, 24)) {
			vms_tl_slice(x->tl, c->tr, iv->start, iv->end, c->nc[i].name, NULL, 0);
			return;
		}
	struct xnamed *nm = named(x, &x->occupants, key, iv->comm);
	if (nm && !nm->name) {
		char name[96];
		if (iv->guest >= 0 && iv->tid >= 0)
			snprintf(name, sizeof name, "%s vCPU %d: %s (%d)",
				 mname(x, (uint32_t)iv->guest), iv->vcpu, iv->comm, iv->tid);
		else if (iv->guest >= 0)
			snprintf(name, sizeof name, "%s vCPU %d: ?",
				 mname(x, (uint32_t)iv->guest), iv->vcpu);
		else if (x->no_tids[iv->host])
			snprintf(name, sizeof name, "%s", iv->comm[0] ? iv->comm : "?");
		else
			snprintf(name, sizeof name, "%s (%d)", iv->comm[0] ? iv->comm : "?",
				 iv->tid);
		nm->name = vms_tl_name(x->tl, name);
	}
	if (!nm)
		return;
	unsigned i = c->next++ % CPU_NAMES;
	c->nc[i].key = key;
	c->nc[i].name = nm->name;
	memcpy(c->nc[i].comm, iv->comm, 24);   /* (24 bytes, NUL-padded: pcpu_view.h) */
	vms_tl_slice(x->tl, c->tr, iv->start, iv->end, nm->name, NULL, 0);
}

/* ---- counters ---- */

static void count_emit(struct xback *x, struct xv *v, uint64_t t, uint64_t len)
{
	double rate = (double)v->b_exits * 1e9 / (double)len;
	double steal = 100.0 * (double)v->b_steal / (double)len;
	if (!v->emitted || rate != v->last_rate)
		vms_tl_count(x->tl, v->rate_tr, t, rate);
	if (!v->emitted || steal != v->last_steal)
		vms_tl_count(x->tl, v->steal_tr, t, steal);
	v->emitted = true;
	v->last_rate = rate;
	v->last_steal = steal;
}

static void add_steal(struct xv *v, uint64_t until)
{
	if (v->preempted) {
		uint64_t from = v->pre_since > v->b_start ? v->pre_since : v->b_start;
		if (until > from)
			v->b_steal += until - from;
	}
}

/* Close the periods of v that end at or before t. Runs of periods in which nothing
 * happened get one value. */
static __attribute__((noinline)) void advance_slow(struct xback *x, struct xv *v,
						   uint64_t t)
{
	while (t >= v->b_start + x->period) {
		uint64_t end = v->b_start + x->period;
		add_steal(v, end);
		count_emit(x, v, v->b_start, x->period);
		v->b_start = end;
		v->b_exits = v->b_steal = 0;
		if (t >= v->b_start + x->period) {
			v->b_steal = v->preempted ? x->period : 0;
			count_emit(x, v, v->b_start, x->period);
			v->b_steal = 0;
			v->b_start += (t - v->b_start) / x->period * x->period;
		}
	}
}

/* (most calls find the period still open) */
static inline void advance(struct xback *x, struct xv *v, uint64_t t)
{
	if (__builtin_expect(t >= v->b_start + x->period, 0))
		advance_slow(x, v, t);
}

/* ---- steal: host threads that ran instead ---- */

static void steal_close(struct xback *x, struct xv *v, uint64_t t)
{
	if (v->steal_tid < 0)
		return;
	vms_tl_lane_slice(x->tl, v->steal_group, v->lane, v->steal_since, t, v->instead_name);
	x->thieves[v->lane >> 8].busy[(v->lane & 0xff) / 64] &= ~(1ull << (v->lane % 64));
	v->steal_tid = -1;
}

/* The first lane of host thread tid that no vCPU is charging now, taken (its key), made when
 * it is one more than the thread had; UINT32_MAX when out of memory or lanes. */
static uint32_t steal_lane(struct xback *x, uint32_t host, int32_t tid, const char *comm,
			   const struct xr_thread *ti)
{
	bool made = false;
	uint64_t *ix = vms_keymap_put(&x->thief_ix, vms_keymap_mt(host, tid), x->nr_thieves + 1,
				      &made);
	if (!ix)
		goto fail;
	if (made) {
		if (x->nr_thieves == THIEVES_MAX)
			goto fail;
		if (x->nr_thieves == x->cap_thieves) {
			struct xthief *nt = vms_grow(x->thieves, &x->cap_thieves, sizeof *nt, 16);
			if (!nt)
				goto fail;
			x->thieves = nt;
		}
		x->thieves[x->nr_thieves++] = (struct xthief){ .nlanes = 0 };
	}
	uint32_t i = (uint32_t)(*ix - 1);
	if (i >= x->nr_thieves)
		goto fail;   /* (put in the map when it could not be made) */
	struct xthief *th = &x->thieves[i];
	unsigned lane = 0;
	while (lane < LANES_MAX && !~th->busy[lane / 64])
		lane += 64;
	if (lane == LANES_MAX)
		goto fail;
	lane += (unsigned)__builtin_ctzll(~th->busy[lane / 64]);
	uint32_t key = i << 8 | lane;
	if (lane == th->nlanes) {
		char name[96], base[64];
		thread_name(ti, tid, x->no_tids[host], comm, base, sizeof base);
		if (lane)
			snprintf(name, sizeof name, "%s #%u", base, lane + 1);
		else
			snprintf(name, sizeof name, "%s", base);
		if (vms_tl_lane(x->tl, x->group[host], key, name, RANK_THREADS + tid) != 0)
			goto fail;
		th->nlanes++;
	}
	th->busy[lane / 64] |= 1ull << (lane % 64);
	return key;
fail:
	x->failed = true;
	return UINT32_MAX;
}

/* The vCPU is counted (on) or not in its host's counter of preempted vCPUs whose thieves
 * are unattributed: a counter, not a slice per vCPU on a shared track, since they are many
 * at once by definition. */
static void unattr_set(struct xback *x, struct xv *v, uint32_t host, bool on, uint64_t t)
{
	if (v->unattr == on)
		return;
	if (on)
		v->unattr_host = host;
	uint32_t h = v->unattr_host;
	if (!x->unattr_tr[h]) {
		uint32_t tr = x->group[h] == UINT32_MAX ? UINT32_MAX
			: vms_tl_counter(x->tl, x->group[h], "vCPUs preempted, who ran unattributed",
					 "vCPUs", RANK_THREADS - 1);
		if (tr == UINT32_MAX) {
			x->failed = x->group[h] != UINT32_MAX;
			return;
		}
		x->unattr_tr[h] = tr + 1;
	}
	v->unattr = on;
	x->unattr_n[h] += on ? 1 : (uint32_t)-1;
	vms_tl_count(x->tl, x->unattr_tr[h] - 1, t, x->unattr_n[h]);
}

static void on_instead(struct xback *x, const struct xr_instead *o)
{
	struct xv *v = xv_of(x, o->machine, o->vcpu);
	if (!v || !v->preempted || o->host >= x->nr_mach || !v->kept)
		return;
	if (o->unattributed) {
		steal_close(x, v, o->t);
		unattr_set(x, v, o->host, true, o->t);
		return;
	}
	if (v->steal_tid == o->tid && o->tid >= 0)
		return;
	steal_close(x, v, o->t);
	if (o->tid > 0) {
		v->lane = steal_lane(x, o->host, o->tid, o->comm, &o->thr);
		if (v->lane == UINT32_MAX)
			return;
		v->steal_group = x->group[o->host];
		v->steal_tid = o->tid;
		v->steal_since = o->t;
	}
}

/* The vCPU's state slice closes at t, if not empty (the maximal intervals of `vmscope
 * vcpus`: consecutive observations bound them, the first starts at the first event). */
static inline void state_slice(struct xback *x, struct xv *v, uint64_t t)
{
	if (t <= v->st_start)
		return;
	vms_tl_slice(x->tl, v->state_tr, v->st_start, t,
		     v->st_name ? v->st_name : x->state_name[v->st], NULL, 0);
	v->st_start = t;
}

/* "vmm at l0": a state and the machine of its cause, made once per pair (0: out of memory,
 * the state's own name is used) */
static __attribute__((noinline)) uint32_t layer_state_name(struct xback *x,
							    enum vms_vcpu_state st, uint32_t layer)
{
	uint64_t key = (uint64_t)st << 32 | layer, *v = vms_keymap_get(&x->layer_name, key);
	if (v)
		return (uint32_t)*v;
	const struct vms_machine *mc = vms_model_machine_c(x->m, layer);
	char name[96];
	snprintf(name, sizeof name, "%s at %s", vms_vcpu_state_name(st),
		 mc && mc->name ? mc->name : "?");
	uint32_t id = vms_tl_name(x->tl, name);
	if (id && !vms_keymap_put(&x->layer_name, key, id, NULL))
		x->failed = true;
	return id;
}

static void on_vcpu_state(struct xback *x, const struct xr_state *o)
{
	struct xv *v = xv_of(x, o->machine, o->vcpu);
	if (!v)
		return;
	/* written here from the observation, not from the analyses' interval sink: a hop and
	 * an interval made fewer per state */
	state_slice(x, v, o->t);
	v->st = o->state < VMS_STATE_COUNT ? (enum vms_vcpu_state)o->state : VMS_STATE_UNKNOWN;
	v->st_name = __builtin_expect(x->nested, 0) && o->layer >= 0
			     ? layer_state_name(x, v->st, (uint32_t)o->layer) : 0;
	advance(x, v, o->t);
	bool pre = o->state == VMS_STATE_PREEMPTED;
	if (v->preempted && !pre) {
		add_steal(v, o->t);
		steal_close(x, v, o->t);
		unattr_set(x, v, 0, false, o->t);
	}
	if (pre && !v->preempted)
		v->pre_since = o->t;
	v->preempted = pre;
}

/* ---- exits ---- */

/* The name of an exit's slice, "REASON", or of a VMM overlay, "vmm: REASON" (vmm): made
 * once per reason. */
static __attribute__((noinline)) uint32_t reason_name_new(struct xback *x, bool vmm,
							   uint32_t isa, uint32_t reason)
{
	uint32_t *d = isa < RD_ISAS && reason < RD_REASONS ? &x->rdirect[vmm][isa][reason] : NULL;
	uint64_t key = (uint64_t)vmm << 63 | (uint64_t)(isa & INT32_MAX) << 32 | reason;
	uint64_t *v = vms_keymap_get(&x->vmm_name, key);
	if (v)
		return (uint32_t)*v;
	char name[64];
	const char *rn = vms_exit_reason_name(isa, (uint32_t)reason);
	if (rn)
		snprintf(name, sizeof name, "%s%s", vmm ? "vmm: " : "", rn);
	else
		snprintf(name, sizeof name, "%sexit %u", vmm ? "vmm: " : "", reason);
	uint32_t id = vms_tl_name(x->tl, name);
	if (id && !vms_keymap_put(&x->vmm_name, key, id, NULL))
		x->failed = true;
	if (d)
		*d = id;
	return id;
}

/* (inline: the table answers all but a reason's first exit) */
static inline uint32_t reason_name(struct xback *x, bool vmm, uint32_t isa, uint32_t reason)
{
	if (__builtin_expect(isa < RD_ISAS && reason < RD_REASONS, 1)) {
		uint32_t id = x->rdirect[vmm][isa][reason];
		if (__builtin_expect(id != 0, 1))
			return id;
	}
	return reason_name_new(x, vmm, isa, reason);
}


static void on_exit_begin(struct xback *x, const struct xr_exit *o)
{
	struct xv *v = xv_of(x, o->machine, o->vcpu);
	if (!v)
		return;
	advance(x, v, o->t);
	v->b_exits++;
	uint32_t name = reason_name(x, false, o->isa, o->reason);
	/* (no isa argument: the reason is named in the ISA's own terms, and the ISA is the same
	 * on every exit of a guest) */
	struct vms_tl_arg a[] = {
		{ .key = x->k_rip, .type = VMS_TL_HEX, .u = o->rip },
		{ .key = x->k_info1, .type = VMS_TL_HEX, .u = o->info1 },
		{ .key = x->k_info2, .type = VMS_TL_HEX, .u = o->info2 },
		{ .key = x->k_host_cpu, .type = VMS_TL_UINT, .u = o->host_cpu },
	};
	vms_tl_open(x->tl, v->exits_tr, o->t, name, a, sizeof a / sizeof a[0]);
}

static void on_exit_end(struct xback *x, const struct xr_exit_end *o)
{
	struct xv *v = xv_of(x, o->machine, o->vcpu);
	if (!v)
		return;
	/* lost: nothing is known of its end, nothing is claimed (zero length) */
	struct vms_tl_arg a = { .key = x->k_end, .type = VMS_TL_STR,
				.s = o->how == VMS_EXIT_LOST ? "lost (events lost before its entry)"
							     : "unfinished (the trace ends)" };
	vms_tl_close(x->tl, v->exits_tr, o->how == VMS_EXIT_LOST ? o->begin : o->t, &a,
		     o->how == VMS_EXIT_ENDED ? 0 : 1);
}

/* ---- guest threads ---- */

/* ti: what the model knew of it (NULL: asked now) */
static uint32_t gthread_track(struct xback *x, uint32_t guest, int32_t tid,
			      const char *comm, const struct xr_thread *ti)
{
	char name[64];
	uint64_t key = vms_keymap_mt(guest, tid);
	uint64_t *v = vms_keymap_get(&x->gthread_tr, key);
	if (v)
		return (uint32_t)(*v - 1);
	struct xr_thread own;
	if (!ti) {
		xr_put_thread(x->m, &own, guest, tid);
		ti = &own;
	}
	thread_name(ti, tid, x->no_tids[guest], comm, name, sizeof name);
	return track_for(x, &x->gthread_tr, key, x->group[guest], name, RANK_THREADS + tid);
}

static void on_guest_switch(struct xback *x, const struct xr_switch *o)
{
	struct xv *v = xv_of(x, o->machine, o->vcpu);
	if (!v)
		return;
	if (v->run_gtid > 0)
		vms_tl_close(x->tl, v->run_tr, o->t, NULL, 0);
	v->run_gtid = -1;
	if (o->next_tid > 0 && v->kept) {
		v->run_tr = gthread_track(x, o->machine, o->next_tid, o->next_comm, &o->next);
		vms_tl_open(x->tl, v->run_tr, o->t, v->run_name, NULL, 0);
		v->run_gtid = o->next_tid;
	}
}

/* "comm (tid)" of a host thread (", pid N" when known), made again only when the model's name of it changed */
static uint32_t instead_name(struct xback *x, uint32_t host, int32_t tid,
			     const struct xr_thread *ti)
{
	struct xnamed *nm = named(x, &x->insteads, vms_keymap_mt(host, tid), ti->comm);
	if (nm && !nm->name) {
		char name[64];
		thread_name(ti, tid, x->no_tids[host], NULL, name, sizeof name);
		nm->name = vms_tl_name(x->tl, name);
	}
	return nm ? nm->name : 0;
}

/* The overlays' sink: an overlay of a guest thread, on the vCPUs the filter keeps (those of
 * --machine and --vcpu, as the session's filter keeps them). Its track and who ran instead
 * are mostly those the vCPU had last; the model is asked only for a name not made yet (it
 * does not change during the pass: export_rec.h). */
static void overlay_row(void *ctx, const struct vms_thread_interval *iv)
{
	struct xback *x = ctx;
	struct xv *v = xv_of(x, iv->machine, iv->vcpu);
	if (!v || !v->kept)
		return;
	uint32_t name = iv->reason == VMS_OVERLAY_VMM && iv->exit_reason >= 0
		? reason_name(x, true, iv->isa, (uint32_t)iv->exit_reason)
		: vms_tl_name_lit(x->tl, vms_overlay_reason_name(iv->reason));
	struct vms_tl_arg a[3] = {
		{ .key = x->k_vcpu, .type = VMS_TL_UINT, .u = iv->vcpu },
	};
	unsigned n = 1;
	const struct vms_machine *g = vms_model_machine_c(x->m, iv->machine);
	int32_t host = g ? g->host : -1;
	if (iv->host_tid >= 0 && host >= 0) {
		if (v->ins_tid != iv->host_tid) {
			struct xr_thread ti;
			xr_put_thread(x->m, &ti, (uint32_t)host, iv->host_tid);
			v->ins_name = instead_name(x, (uint32_t)host, iv->host_tid, &ti);
			v->ins_tid = iv->host_tid;
		}
		a[n++] = (struct vms_tl_arg){ .key = x->k_instead, .type = VMS_TL_NAME,
					      .u = v->ins_name };
		a[n++] = (struct vms_tl_arg){ .key = x->k_instead_tid, .type = VMS_TL_INT,
					      .i = iv->host_tid };
	}
	uint32_t tr = v->run_gtid == iv->tid && v->run_gtid > 0
		? v->run_tr : gthread_track(x, iv->machine, iv->tid, NULL, NULL);
	vms_tl_slice(x->tl, tr, iv->start, iv->end, name, a, n);
}

/* ---- the rest: the fused view's, forwarded ---- */

static void on_cpu_occupant(struct xback *x, const struct xr_occupant *r)
{
	if (!x->pv)
		return;
	struct vms_obs_cpu_occupant o = {
		.host = r->host, .cpu = r->cpu, .t = r->t, .guest = r->guest, .vcpu = r->vcpu,
		.vidx = -1 /* (not read by the view) */, .tid = r->tid, .comm = r->comm,
	};
	vms_pcpu_view_occupant(x->pv, &o);
}

static void on_start(struct xback *x, uint64_t t0)
{
	x->started = true;
	for (uint32_t i = 0; i < x->nr_v; i++)
		x->v[i].b_start = x->v[i].st_start = t0;
}

static void on_finish(struct xback *x, uint64_t t_end)
{
	if (x->finished || !x->tl)
		return;
	for (uint32_t i = 0; x->started && i < x->nr_v; i++)
		state_slice(x, &x->v[i], t_end);
	x->pvo.finish(x->pvo.ctx, t_end);
	for (uint32_t i = 0; i < x->nr_v; i++) {
		struct xv *v = &x->v[i];
		if (v->run_gtid > 0)
			vms_tl_close(x->tl, v->run_tr, t_end, NULL, 0);
		if (v->preempted)
			steal_close(x, v, t_end);
		if (!x->started)
			continue;
		advance(x, v, t_end);
		if (t_end > v->b_start) {   /* the last, partial period */
			add_steal(v, t_end);
			count_emit(x, v, v->b_start, t_end - v->b_start);
		}
	}
	if (vms_tl_finish(x->tl, t_end) != 0)
		x->failed = true;
	x->finished = true;
}

/* ---- life ---- */

static int make_tracks(struct xback *x)
{
	static const char *const keys[] = { "guest_rip", "info1", "info2", "host_cpu", "end",
					    "vcpu", "instead", "instead_tid" };
	uint32_t *const ids[] = { &x->k_rip, &x->k_info1, &x->k_info2, &x->k_host_cpu, &x->k_end,
				  &x->k_vcpu, &x->k_instead, &x->k_instead_tid };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (!(*ids[i] = vms_tl_name(x->tl, keys[i])))
			return -1;
	for (int st = 0; st < VMS_STATE_COUNT; st++)
		if (!(x->state_name[st] = vms_tl_name(x->tl, vms_vcpu_state_name(st))))
			return -1;
	for (uint32_t m = 0; m < x->nr_mach; m++) {
		const struct vms_machine *mc = vms_model_machine_c(x->m, m);
		x->group[m] = UINT32_MAX;
		if (!(mc->role & (VMS_ROLE_HOST | VMS_ROLE_GUEST)) ||
		    (!vms_filter_machine(&x->f, m) && !(mc->role & VMS_ROLE_HOST)))
			continue;
		char name[96];
		snprintf(name, sizeof name, "%s (%s)", mname(x, m), vms_role_name(mc->role));
		x->group[m] = vms_tl_group(x->tl, name, (int32_t)m);
		if (x->group[m] == UINT32_MAX)
			return -1;
	}
	for (uint32_t i = 0; i < x->nr_v; i++) {
		struct xv *v = &x->v[i];
		uint32_t g = x->group[v->machine];
		v->kept = g != UINT32_MAX && vms_filter_vcpu(&x->f, v->machine, v->vcpu);
		if (!v->kept) {
			v->state_tr = v->exits_tr = v->rate_tr = v->steal_tr = UINT32_MAX;
			continue;
		}
		int32_t r = 4 * (int32_t)v->vcpu;
		char name[96];
		snprintf(name, sizeof name, "running on vCPU %u", v->vcpu);
		v->run_name = vms_tl_name(x->tl, name);
		snprintf(name, sizeof name, "instead of %s vCPU %u", mname(x, v->machine), v->vcpu);
		v->instead_name = vms_tl_name(x->tl, name);
		snprintf(name, sizeof name, "vCPU %u", v->vcpu);
		v->state_tr = vms_tl_track(x->tl, g, name, r);
		snprintf(name, sizeof name, "vCPU %u exits", v->vcpu);
		v->exits_tr = vms_tl_track(x->tl, g, name, r + 1);
		snprintf(name, sizeof name, "vCPU %u exits/s", v->vcpu);
		v->rate_tr = vms_tl_counter(x->tl, g, name, "exits/s", r + 2);
		snprintf(name, sizeof name, "vCPU %u steal %%", v->vcpu);
		v->steal_tr = vms_tl_counter(x->tl, g, name, "%", r + 3);
		if (v->state_tr == UINT32_MAX || v->exits_tr == UINT32_MAX ||
		    v->rate_tr == UINT32_MAX || v->steal_tr == UINT32_MAX)
			return -1;
	}
	return 0;
}

/* Free what was made from a model; x is left as if made with no model. */
static void free_state(struct xback *x)
{
	vms_tl_free(x->tl);
	vms_pcpu_view_free(x->pv);
	vms_overlays_free(x->ov);
	vms_keymap_free(&x->cpu_tr);
	free(x->cpu_ix);
	free(x->cpus);
	vms_keymap_free(&x->gthread_tr);
	vms_keymap_free(&x->thief_ix);
	free(x->thieves);
	vms_keymap_free(&x->vmm_name);
	vms_keymap_free(&x->layer_name);
	free(x->rdirect);
	names_free(&x->occupants);
	names_free(&x->insteads);
	free(x->group);
	free(x->no_tids);
	free(x->unattr_tr);
	free(x->unattr_n);
	free(x->vbase);
	free(x->v);
	struct xconf c = x->c;
	memset(x, 0, sizeof *x);
	x->c = c;
}

static int make_state(struct xback *x, const struct vms_model *model)
{
	x->m = model;
	x->period = x->c.period;
	x->f = x->c.filter;
	if (x->c.machine) {   /* no such machine: nothing kept (the session says so) */
		int32_t m = vms_model_find(model, x->c.machine);
		x->f.machine = m >= 0 ? m : INT32_MAX;
	}
	vms_keymap_init(&x->cpu_tr);
	vms_keymap_init(&x->gthread_tr);
	vms_keymap_init(&x->thief_ix);
	vms_keymap_init(&x->vmm_name);
	vms_keymap_init(&x->layer_name);
	x->nested = vms_model_nested(model);
	vms_keymap_init(&x->occupants.map);
	vms_keymap_init(&x->insteads.map);
	x->nr_mach = vms_model_nr_machines(model);
	x->group = calloc(x->nr_mach ? x->nr_mach : 1, sizeof *x->group);
	x->no_tids = calloc(x->nr_mach ? x->nr_mach : 1, sizeof *x->no_tids);
	x->vbase = calloc(x->nr_mach ? x->nr_mach : 1, sizeof *x->vbase);
	x->unattr_tr = calloc(x->nr_mach ? x->nr_mach : 1, sizeof *x->unattr_tr);
	x->unattr_n = calloc(x->nr_mach ? x->nr_mach : 1, sizeof *x->unattr_n);
	x->cpu_ix = calloc((size_t)(x->nr_mach ? x->nr_mach : 1) * CPU_DIRECT, sizeof *x->cpu_ix);
	x->rdirect = calloc(2, sizeof *x->rdirect);
	if (!x->group || !x->no_tids || !x->vbase || !x->unattr_tr || !x->unattr_n || !x->cpu_ix || !x->rdirect)
		return -1;
	for (uint32_t m = 0; m < x->nr_mach; m++) {
		const struct vms_machine *mc = vms_model_machine_c(model, m);
		x->vbase[m] = x->nr_v;
		x->nr_v += mc->nr_vcpus;
		/* a Xen domain's host is xentrace's: Xen records domains and vCPUs, no thread */
		if (mc->host_how == VMS_LINK_XENTRACE && mc->host >= 0 &&
		    (uint32_t)mc->host < x->nr_mach)
			x->no_tids[mc->host] = true;
	}
	x->v = calloc(x->nr_v ? x->nr_v : 1, sizeof *x->v);
	if (!x->v)
		return -1;
	for (uint32_t m = 0; m < x->nr_mach; m++)
		for (uint32_t n = 0; n < vms_model_machine_c(model, m)->nr_vcpus; n++) {
			struct xv *v = &x->v[x->vbase[m] + n];
			v->machine = m;
			v->vcpu = n;
			v->run_gtid = v->steal_tid = v->ins_tid = -1;
		}
	x->tl = vms_tl_new(x->c.out, x->c.format == VMS_EXPORT_CHROME_JSON ? VMS_TL_CHROME_JSON
									  : VMS_TL_PERFETTO,
			   x->c.deflate);
	x->pv = vms_pcpu_view_new(model, pcpu_row, x);
	struct vms_sinks rows = { .ctx = x, .thread_interval = overlay_row, .intervals_only = true };
	x->ov = vms_overlays_new(model, &rows);
	if (!x->tl || !x->pv || !x->ov || make_tracks(x) != 0)
		return -1;
	x->pvo = vms_pcpu_view_observer(x->pv);
	x->ovo = vms_overlays_observer(x->ov);
	return 0;
}

/* A regular file can be emptied and written again; so can /dev/null (a benchmark's). */
static bool rewritable(FILE *f)
{
	struct stat st, null;
	if (fstat(fileno(f), &st) != 0)
		return false;
	return S_ISREG(st.st_mode) ||
	       (S_ISCHR(st.st_mode) && stat("/dev/null", &null) == 0 && st.st_rdev == null.st_rdev);
}

/* Another pass begins (the session's checked single pass found that the events link the
 * machines otherwise than the metadata said): what was written is thrown away and the
 * tracks are made again from the model of that pass. */
void vms_xback_reset(struct xback *x, const struct vms_model *model)
{
	bool wrote = x->tl != NULL;
	free_state(x);   /* (a Chrome JSON writer keeps nothing unwritten) */
	if ((wrote && (fflush(x->c.out) != 0 || fseek(x->c.out, 0, SEEK_SET) != 0 ||
		       (ftruncate(fileno(x->c.out), 0) != 0 && errno != EINVAL))) ||
	    make_state(x, model) != 0) {
		free_state(x);   /* nothing half made: every callback finds no track */
		x->failed = true;
	}
}

struct xback *vms_xback_new(FILE *f, const struct vms_export_opts *opts,
			    const struct vms_model *model)
{
	struct xback *x = calloc(1, sizeof *x);
	if (!x)
		return NULL;
	x->c.out = f;
	x->c.format = opts ? opts->format : VMS_EXPORT_PERFETTO;
	x->c.period = opts && opts->counter_period_ns ? opts->counter_period_ns : DEFAULT_PERIOD;
	x->c.filter = opts ? opts->filter : (struct vms_filter){ -1, -1 };
	x->c.rewritable = rewritable(f);
	x->c.deflate = opts && opts->deflate;
	if (opts && opts->machine_name && !(x->c.machine = strdup(opts->machine_name))) {
		free(x);
		return NULL;
	}
	if (model && make_state(x, model) != 0) {
		vms_xback_free(x);
		return NULL;
	}
	return x;
}

bool vms_xback_rewritable(const struct xback *x)
{
	return x->c.rewritable;
}

/* ---- the overlays, fed the observations the records are: as in the analysis, they see
 * each one before the export (their intervals come first) ---- */

static void ov_state(struct xback *x, const struct xr_state *r)
{
	uint32_t vidx = vms_overlays_vidx(x->ov, r->machine, r->vcpu);
	if (vidx == UINT32_MAX || !x->ovo.vcpu_state)
		return;
	struct vms_obs_vcpu_state o = {
		.machine = r->machine, .vcpu = r->vcpu, .vidx = vidx, .t = r->t,
		.state = (enum vms_vcpu_state)r->state, .isa = r->isa, .exit_reason = r->exit_reason,
		.host_tid = r->host_tid,
	};
	x->ovo.vcpu_state(x->ovo.ctx, &o);
}

static void ov_switch(struct xback *x, const struct xr_switch *r)
{
	uint32_t vidx = vms_overlays_vidx(x->ov, r->machine, r->vcpu);
	if (vidx == UINT32_MAX || !x->ovo.guest_switch)
		return;
	struct vms_obs_guest_switch o = {
		.machine = r->machine, .vcpu = r->vcpu, .vidx = vidx, .t = r->t,
		.next_tid = r->next_tid, .next_comm = r->next_tid > 0 ? r->next_comm : "",
	};
	x->ovo.guest_switch(x->ovo.ctx, &o);
}

static void ov_exit(struct xback *x, const struct xr_exit *r)
{
	uint32_t vidx = vms_overlays_vidx(x->ov, r->machine, r->vcpu);
	if (vidx == UINT32_MAX || !x->ovo.exit_begin)
		return;
	struct vms_obs_exit o = { .machine = r->machine, .vcpu = r->vcpu, .vidx = vidx,
				  .t = r->t, .isa = r->isa, .reason = r->reason };
	x->ovo.exit_begin(x->ovo.ctx, &o);
}

static void ov_exit_end(struct xback *x, const struct xr_exit_end *r)
{
	uint32_t vidx = vms_overlays_vidx(x->ov, r->machine, r->vcpu);
	if (vidx == UINT32_MAX || !x->ovo.exit_end)
		return;
	struct vms_obs_exit o = { .machine = r->machine, .vcpu = r->vcpu, .vidx = vidx,
				  .t = r->t, .how = (enum vms_exit_end)r->how, .begin = r->begin };
	x->ovo.exit_end(x->ovo.ctx, &o);
}

static void ov_instead(struct xback *x, const struct xr_instead *r)
{
	uint32_t vidx = vms_overlays_vidx(x->ov, r->machine, r->vcpu);
	if (vidx == UINT32_MAX || !x->ovo.vcpu_instead)
		return;
	struct vms_obs_vcpu_instead o = { .machine = r->machine, .vcpu = r->vcpu, .vidx = vidx,
					  .t = r->t, .host = r->host, .tid = r->tid,
					  .unattributed = r->unattributed, .comm = r->comm };
	x->ovo.vcpu_instead(x->ovo.ctx, &o);
}

size_t vms_xback_play(struct xback *x, const void *rec)
{
	/* (no model yet: stage 1 sends nothing before a reset gives one) */
	switch (*(const uint32_t *)rec) {
	case XR_STATE:
		ov_state(x, rec);
		on_vcpu_state(x, rec);
		return sizeof(struct xr_state);
	case XR_OCCUPANT:
		on_cpu_occupant(x, rec);
		return sizeof(struct xr_occupant);
	case XR_EXIT_BEGIN:
		ov_exit(x, rec);
		on_exit_begin(x, rec);
		return sizeof(struct xr_exit);
	case XR_EXIT_END:
		ov_exit_end(x, rec);
		on_exit_end(x, rec);
		return sizeof(struct xr_exit_end);
	case XR_SWITCH:
		ov_switch(x, rec);
		on_guest_switch(x, rec);
		return sizeof(struct xr_switch);
	case XR_INSTEAD:
		ov_instead(x, rec);
		on_instead(x, rec);
		return sizeof(struct xr_instead);
	case XR_START:
		x->ovo.start(x->ovo.ctx, ((const struct xr_time *)rec)->t);
		on_start(x, ((const struct xr_time *)rec)->t);
		return sizeof(struct xr_time);
	case XR_FINISH:
		/* (the overlays' last intervals: a run ended without it makes none) */
		x->ovo.finish(x->ovo.ctx, ((const struct xr_time *)rec)->t);
		on_finish(x, ((const struct xr_time *)rec)->t);
		return sizeof(struct xr_time);
	}
	abort();   /* (stage 1 writes nothing else) */
}

int vms_xback_finish(struct xback *x, uint64_t t_last)
{
	if (!x->tl)
		return -1;   /* never given a model */
	if (!x->finished)
		on_finish(x, t_last);
	return x->failed ? -1 : 0;
}

void vms_xback_free(struct xback *x)
{
	if (!x)
		return;
	free_state(x);
	free(x->c.machine);
	free(x);
}
