/* The Xen model's accounting, xenalyze's rules (include/vmscope/xen_model.h says which).
 *
 * The functions below follow xenalyze.c's (4.17) of the same names: runstate_update,
 * vcpu_prev_update, vcpu_next_update, vcpu_start, sched_runstate_process, lose_vcpu,
 * hvm_vmexit_process, hvm_close_vmexit, hvm_vmentry_process, deactivate_pcpu. Only what
 * feeds the per-vCPU runstate and exit tables is kept (no domain-level states, interrupts,
 * cr3, io). Where xenalyze stops with an error, this keeps going and counts an anomaly. */
#include <stdlib.h>
#include <string.h>

#include "keymap.h"
#include "vmscope/xen_model.h"
#include "vmscope/xentrace.h"

#define XM_DEFAULT_DOMAIN 32768u   /* xenalyze's placeholder for "not known yet" per CPU */
#define XM_MAX_CPUS 4096u

enum { DATA_NONE = 0, DATA_HVM, DATA_PV };

struct xm_exit_table {
	struct vms_xen_exit_row *row;   /* by reason, ascending */
	uint32_t n, cap;
};

struct xm_oldstate {
	uint32_t wrong, actual;
	uint64_t tsc;
	uint32_t pid;
};

struct xm_vcpu {
	struct vms_xen_vcpu_acct acct;
	uint32_t state, runnable_state;
	uint64_t tsc;                   /* start of the current runstate, 0 unknown */
	struct xm_oldstate last_oldstate; /* a contradicting record seen last (TSC skew) */
	int32_t p;                      /* the CPU it last ran on, -1 none */
	bool activated;
	int data_type;
	bool vmexit_valid;
	uint64_t exit_tsc;
	uint32_t exit_reason;
	struct xm_exit_table exits;
	/* lost-records markers, applied lazily (see vcpu()): */
	bool lost_follow;               /* LOST since a marker, behind by the markers after it */
	bool lost_listed;               /* in x->lost_list */
	uint64_t lost_cycles, lost_count; /* x->lost_cycles / lost_count when it started following */
};

struct xm_pcpu {
	bool active;
	int32_t current;                /* index of the vCPU, -1 none */
	uint64_t first_tsc, last_tsc;
	bool seen_valid_schedule;
	bool lost_active, lost_domain_valid;
	uint32_t lost_did, lost_vid;
	uint64_t lost_tsc;
	uint64_t lost_end_tsc;          /* the marker's own TSC: the loss is [lost_tsc, this) */
};

struct vms_xen_model {
	uint32_t machine, isa;
	struct xm_vcpu *v;
	uint32_t nr_v, cap_v;
	struct vms_keymap idx;          /* dom << 16 | vcpu -> index in v */
	uint64_t hit_key[64];           /* a direct-mapped cache in front of idx (key + 1, 0 empty):
	                                   every runstate record looks its vCPU up */
	int32_t hit_idx[64];
	struct xm_pcpu *p;
	uint32_t nr_p;
	int32_t lost_cpus;
	/* xenalyze makes every vCPU that is not running (but the per-CPU placeholders) LOST at
	 * every lost-records marker: O(vCPUs x markers) if done so. Here a marker loses only the
	 * vCPUs updated since the one before (lost_list, capacity cap_v: an index at most once);
	 * the rest are LOST already with the previous marker's TSC, so that each later marker adds
	 * the same interval to their LOST row (runstate_update's rule: counted when the previous
	 * marker's TSC is > 0 and below this one's): a running sum, taken by a vCPU when it is
	 * next touched (vcpu()) or when the accounts are read (vms_xen_model_finish). */
	uint32_t *lost_list, nr_lost_list;
	bool marker_seen;
	uint64_t marker_tsc;            /* the last marker's first lost TSC */
	uint64_t lost_cycles, lost_count; /* the running sums of those intervals */
	uint64_t anomalies, skews;
	/* results */
	uint32_t *order;                /* indices of the reported vCPUs, sorted */
	uint32_t nr_order;
};

const char *vms_xen_rs_name(unsigned rs)
{
	static const char *const n[VMS_XEN_NR_RS] = { "running", "runnable", "blocked", "offline",
						      "lost", "queued", "init" };
	return rs < VMS_XEN_NR_RS ? n[rs] : "?";
}

const char *vms_xen_runnable_name(unsigned r)
{
	static const char *const n[VMS_XEN_NR_RUNNABLE] = { "invalid", "wake", "preempt", "other" };
	return r < VMS_XEN_NR_RUNNABLE ? n[r] : "?";
}

struct vms_xen_model *vms_xen_model_new(uint32_t machine, uint32_t isa)
{
	struct vms_xen_model *x = calloc(1, sizeof *x);
	if (!x)
		return NULL;
	x->machine = machine;
	x->isa = isa ? isa : 1;
	vms_keymap_init(&x->idx);
	return x;
}

void vms_xen_model_free(struct vms_xen_model *x)
{
	if (!x)
		return;
	for (uint32_t i = 0; i < x->nr_v; i++)
		free(x->v[i].exits.row);
	free(x->v);
	free(x->lost_list);
	free(x->p);
	free(x->order);
	vms_keymap_free(&x->idx);
	free(x);
}

uint64_t vms_xen_model_anomalies(const struct vms_xen_model *x) { return x->anomalies; }
uint64_t vms_xen_model_skews(const struct vms_xen_model *x) { return x->skews; }

static inline void update_cycles(struct vms_xen_cycles *c, uint64_t cycles)
{
	c->events++;
	if (!cycles)
		return;
	c->count++;
	c->cycles += cycles;
}

/* A vCPU a lost-records marker has to see: each index at most once (the list has room for
 * every vCPU); the per-CPU placeholders are never lost by a marker. */
static void lost_list_add(struct vms_xen_model *x, uint32_t i)
{
	struct xm_vcpu *v = &x->v[i];
	if (v->lost_listed || v->acct.dom == XM_DEFAULT_DOMAIN)
		return;
	v->lost_listed = true;
	x->lost_list[x->nr_lost_list++] = i;
}

/* The vCPU at index i, brought up to date with the markers it missed (every access to a
 * vCPU's state, TSC or accounts goes through here): each marker since it started following
 * made it LOST again at that marker's TSC. Listed, as whatever it is used for may change it. */
__attribute__((noinline)) static void vcpu_catch_up(struct vms_xen_model *x, struct xm_vcpu *v)
{
	struct vms_xen_cycles *c = &v->acct.rs[VMS_XEN_RS_LOST];
	uint64_t n = x->lost_count - v->lost_count;
	c->events += n;
	c->count += n;
	c->cycles += x->lost_cycles - v->lost_cycles;
	v->tsc = x->marker_tsc;
	v->lost_follow = false;
}

/* (inline: several calls per record; what is rare, catching up and listing, is out of line) */
static inline struct xm_vcpu *vcpu(struct vms_xen_model *x, int32_t i)
{
	struct xm_vcpu *v = &x->v[i];
	if (__builtin_expect(v->lost_follow, 0))
		vcpu_catch_up(x, v);
	if (__builtin_expect(!v->lost_listed, 0))
		lost_list_add(x, (uint32_t)i);
	return v;
}

/* vcpu_find: the vCPU, created in state INIT; -1 when out of memory */
static int32_t vcpu_find_slow(struct vms_xen_model *x, uint64_t key, uint32_t h);

static inline int32_t vcpu_find(struct vms_xen_model *x, uint32_t dom, uint32_t vcpu)
{
	uint64_t key = (uint64_t)dom << 16 | vcpu;
	uint32_t h = (uint32_t)(key ^ (key >> 16) ^ (key >> 6)) & 63u;
	if (x->hit_key[h] == key + 1)
		return x->hit_idx[h];
	return vcpu_find_slow(x, key, h);
}

__attribute__((noinline)) static int32_t vcpu_find_slow(struct vms_xen_model *x, uint64_t key,
							uint32_t h)
{
	uint32_t dom = (uint32_t)(key >> 16), vcpu = (uint32_t)(key & 0xffff);
	bool inserted;
	uint64_t *slot = vms_keymap_put(&x->idx, key, x->nr_v, &inserted);
	if (!slot)
		return -1;
	if (!inserted) {
		x->hit_key[h] = key + 1;
		x->hit_idx[h] = (int32_t)*slot;
		return (int32_t)*slot;
	}
	if (x->nr_v == x->cap_v) {
		uint32_t n = x->cap_v ? 2 * x->cap_v : 32;
		uint32_t *nl = realloc(x->lost_list, n * sizeof *nl);
		if (!nl)
			return -1;
		x->lost_list = nl;
		struct xm_vcpu *nv = realloc(x->v, n * sizeof *nv);
		if (!nv)
			return -1;
		x->v = nv;
		x->cap_v = n;
	}
	struct xm_vcpu *v = &x->v[x->nr_v];
	memset(v, 0, sizeof *v);
	v->acct.dom = dom;
	v->acct.vcpu = vcpu;
	v->state = VMS_XEN_RS_INIT;
	v->last_oldstate.wrong = VMS_XEN_RS_INIT;
	v->p = -1;
	lost_list_add(x, x->nr_v);
	return (int32_t)x->nr_v++;
}

static struct xm_pcpu *pcpu(struct vms_xen_model *x, uint32_t cpu)
{
	if (cpu >= XM_MAX_CPUS)
		return NULL;
	if (cpu >= x->nr_p) {
		uint32_t n = x->nr_p ? x->nr_p : 8;
		while (n <= cpu)
			n *= 2;
		struct xm_pcpu *np = realloc(x->p, n * sizeof *np);
		if (!np)
			return NULL;
		memset(np + x->nr_p, 0, (n - x->nr_p) * sizeof *np);
		x->p = np;
		x->nr_p = n;
	}
	return &x->p[cpu];
}

static inline void runstate_update(struct xm_vcpu *v, uint32_t new_state, uint64_t tsc)
{
	if (v->tsc > 0 && v->tsc < tsc) {
		update_cycles(&v->acct.rs[v->state], tsc - v->tsc);
		if (v->state == VMS_XEN_RS_RUNNABLE)
			update_cycles(&v->acct.runnable[v->runnable_state], tsc - v->tsc);
	}
	if (new_state == VMS_XEN_RS_RUNNABLE) {
		switch (v->state) {
		case VMS_XEN_RS_RUNNING: v->runnable_state = VMS_XEN_RUNNABLE_PREEMPT; break;
		case VMS_XEN_RS_BLOCKED:
		case VMS_XEN_RS_OFFLINE: v->runnable_state = VMS_XEN_RUNNABLE_WAKE; break;
		default: v->runnable_state = VMS_XEN_RUNNABLE_OTHER; break;
		}
	} else {
		v->runnable_state = VMS_XEN_RUNNABLE_INVALID;
	}
	v->state = new_state;
	v->tsc = tsc;
}

static void lose_vcpu(struct xm_vcpu *v, uint64_t tsc)
{
	if (v->data_type == DATA_HVM)
		v->vmexit_valid = false;
	runstate_update(v, VMS_XEN_RS_LOST, tsc);
}

static inline void vcpu_prev_update(struct vms_xen_model *x, uint32_t p, int32_t prev,
				    uint64_t tsc, uint32_t new_state)
{
	struct xm_pcpu *pc = &x->p[p];
	struct xm_vcpu *v = vcpu(x, prev);
	if (v->p != (int32_t)p || pc->current != prev || v->state != VMS_XEN_RS_RUNNING) {
		if (pc->current < 0)
			x->anomalies++; /* xenalyze: FATAL, p->current NULL */
		v->tsc = 0;
	}
	pc->current = -1;
	runstate_update(v, new_state, tsc);
}

static inline void vcpu_next_update(struct vms_xen_model *x, uint32_t p, int32_t next,
				    uint64_t tsc)
{
	struct xm_pcpu *pc = &x->p[p];
	struct xm_vcpu *v = vcpu(x, next);
	if (pc->current >= 0) {
		if (!pc->seen_valid_schedule)
			runstate_update(vcpu(x, pc->current), VMS_XEN_RS_LOST, tsc);
		else
			x->anomalies++; /* xenalyze: FATAL, p->current not NULL */
		pc->current = -1;
	}
	if (v->activated) {
		if (v->state == VMS_XEN_RS_RUNNING && v->acct.dom != XM_DEFAULT_DOMAIN)
			v->tsc = 0; /* already running elsewhere */
	} else {
		v->activated = true;
	}
	runstate_update(v, VMS_XEN_RS_RUNNING, tsc);
	v->p = (int32_t)p;
	pc->current = next;
	pc->seen_valid_schedule = true;
}

/* A vCPU still in INIT: start-of-day fix-ups. */
static void vcpu_start(struct vms_xen_model *x, uint32_t p, int32_t vi, uint32_t old_state,
		       uint32_t new_state, uint64_t tsc)
{
	struct xm_pcpu *pc = &x->p[p];
	struct xm_vcpu *v = vcpu(x, vi);
	if (old_state == VMS_XEN_RUNNING) {
		if (pc->current < 0 || x->v[pc->current].acct.dom != XM_DEFAULT_DOMAIN) {
			x->anomalies++; /* xenalyze: "p->current not default domain", stops */
			return;
		}
		runstate_update(vcpu(x, pc->current), VMS_XEN_RS_QUEUED, pc->first_tsc);
		pc->current = -1;
	}
	if (new_state != VMS_XEN_RUNNING)
		return; /* stays INIT until seen running */
	if (old_state == VMS_XEN_RUNNING)
		tsc = pc->first_tsc;
	runstate_update(v, VMS_XEN_RS_RUNNING, tsc);
	pc->current = vi;
	v->p = (int32_t)p;
}

static void exit_add(struct xm_vcpu *v, uint32_t reason, uint64_t cycles)
{
	struct xm_exit_table *t = &v->exits;
	uint32_t lo = 0, hi = t->n;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (t->row[mid].reason < reason)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == t->n || t->row[lo].reason != reason) {
		if (t->n == t->cap) {
			uint32_t n = t->cap ? 2 * t->cap : 16;
			struct vms_xen_exit_row *nr = realloc(t->row, n * sizeof *nr);
			if (!nr)
				return;
			t->row = nr;
			t->cap = n;
		}
		memmove(&t->row[lo + 1], &t->row[lo], (t->n - lo) * sizeof *t->row);
		t->row[lo] = (struct vms_xen_exit_row){ .reason = reason };
		t->n++;
	}
	update_cycles(&t->row[lo].c, cycles);
}

static inline void close_vmexit(struct xm_vcpu *v, uint64_t tsc)
{
	if (v->exit_tsc && v->exit_tsc <= tsc)
		exit_add(v, v->exit_reason, tsc - v->exit_tsc);
	v->exit_tsc = 0;
	v->vmexit_valid = false;
}

/* Is a CPU losing records at tsc (xenalyze's P.lost_cpus > 0)? A CPU whose loss ends at or
 * before tsc is not: the marker is written when its trace runs again, so the loss is
 * [first lost TSC, marker's TSC). Only the order of two records of the same TSC on two
 * CPUs makes the difference: the merge takes the lower CPU's first, xenalyze whichever
 * its ordering list had first. (A marker that ends at or before its own first lost TSC
 * never ends, as in xenalyze.) */
static bool losing_at(const struct vms_xen_model *x, uint64_t tsc)
{
	for (uint32_t c = 0; c < x->nr_p; c++) {
		const struct xm_pcpu *pc = &x->p[c];
		if (pc->lost_active &&
		    !(pc->lost_end_tsc > pc->lost_tsc && pc->lost_end_tsc <= tsc))
			return true;
	}
	return false;
}

static void runstate_record(struct vms_xen_model *x, uint32_t p, const struct vms_event *ev,
			    bool cont)
{
	uint32_t dv = (uint32_t)ev->f[4];
	uint32_t old_state = (uint32_t)(ev->f[3] >> 4) & 0xf, new_state = (uint32_t)ev->f[3] & 0xf;
	uint64_t tsc = ev->ts;
	int32_t vi = vcpu_find(x, dv >> 16, dv & 0xffff);
	if (vi < 0)
		return;
	struct xm_vcpu *v = vcpu(x, vi);
	struct xm_oldstate last = v->last_oldstate;
	v->last_oldstate.wrong = VMS_XEN_RS_INIT;
	if (v->state == VMS_XEN_RS_INIT) {
		vcpu_start(x, p, vi, old_state, new_state, tsc);
		return;
	}
	if (new_state == VMS_XEN_RUNNABLE && v->data_type == DATA_HVM && v->vmexit_valid)
		close_vmexit(v, tsc);
	if (v->state != old_state) {
		if (v->state == VMS_XEN_RS_LOST) {
			if (new_state != VMS_XEN_RUNNING)
				return;
		} else if (last.wrong == new_state && last.actual == old_state) {
			x->skews++; /* xenalyze shifts the other CPU's TSCs here; not done */
			return;
		} else {
			v->last_oldstate.wrong = old_state;
			v->last_oldstate.actual = v->state;
			v->last_oldstate.tsc = tsc;
			v->last_oldstate.pid = p;
			if (v->state == VMS_XEN_RS_RUNNING)
				return;
		}
	}
	struct xm_pcpu *pc = &x->p[p];
	if (cont) {
		if (v->state == VMS_XEN_RS_LOST) {
			if (pc->current >= 0)
				vcpu_prev_update(x, p, pc->current, tsc, VMS_XEN_RS_LOST);
			vcpu_next_update(x, p, vi, tsc);
			v = &x->v[vi];
		} else if (v->state != VMS_XEN_RS_RUNNING || v->p != (int32_t)p) {
			x->anomalies++; /* xenalyze: FATAL */
		}
		runstate_update(v, VMS_XEN_RS_RUNNING, tsc);
	} else if (old_state == VMS_XEN_RUNNING || v->state == VMS_XEN_RS_RUNNING) {
		if (old_state == VMS_XEN_RUNNING) {
			if (v->state != VMS_XEN_RS_RUNNING && v->state != VMS_XEN_RS_LOST)
				x->anomalies++; /* xenalyze: FATAL */
			vcpu_prev_update(x, p, vi, tsc, new_state);
		} else if (v->p >= 0) {
			vcpu_prev_update(x, (uint32_t)v->p, vi, tsc, new_state);
		} else {
			x->anomalies++;
			runstate_update(v, new_state, tsc);
		}
		if (x->lost_cpus && v->acct.dom != VMS_XEN_IDLE_DOMAIN && losing_at(x, tsc))
			lose_vcpu(&x->v[vi], tsc);
	} else if (new_state == VMS_XEN_RUNNING) {
		vcpu_next_update(x, p, vi, tsc);
	} else {
		runstate_update(v, new_state, tsc);
	}
}

static void lost_records(struct vms_xen_model *x, uint32_t p, const struct vms_event *ev)
{
	struct xm_pcpu *pc = &x->p[p];
	uint64_t first_tsc = ev->f[2];
	if (pc->current >= 0) {
		struct xm_vcpu *c = vcpu(x, pc->current);
		if (c->data_type == DATA_HVM)
			c->vmexit_valid = false;
		vcpu_prev_update(x, p, pc->current, first_tsc, VMS_XEN_RS_LOST);
	}
	if (!pc->lost_active)
		x->lost_cpus++;
	pc->lost_active = true;
	pc->lost_tsc = first_tsc;
	pc->lost_end_tsc = ev->f[3];
	/* xenalyze: every vCPU not running is lost at first_tsc. Those following (LOST at the
	 * previous marker's TSC, untouched since) gain this interval through the sums; the
	 * listed ones are lost here and follow from now on. */
	if (x->marker_tsc > 0 && x->marker_tsc < first_tsc) {
		x->lost_cycles += first_tsc - x->marker_tsc;
		x->lost_count++;
	}
	x->marker_tsc = first_tsc;
	for (uint32_t k = 0; k < x->nr_lost_list; k++) {
		struct xm_vcpu *v = &x->v[x->lost_list[k]];
		v->lost_listed = false;
		if (v->state == VMS_XEN_RS_RUNNING)
			continue;
		lose_vcpu(v, first_tsc);
		v->lost_follow = true;
		v->lost_cycles = x->lost_cycles;
		v->lost_count = x->lost_count;
	}
	x->nr_lost_list = 0;
	pc->lost_domain_valid = true;
	pc->lost_did = (uint32_t)ev->f[1] & 0xffff; /* u16 did, then u16 vid */
	pc->lost_vid = (uint32_t)ev->f[1] >> 16;
}

/* process_lost_records_end: the marker's own TSC (the reader's LOST_END event) */
static void lost_end(struct vms_xen_model *x, uint32_t p, const struct vms_event *ev)
{
	struct xm_pcpu *pc = &x->p[p];
	if (!pc->lost_active) {
		x->anomalies++;
		return;
	}
	if (ev->ts > pc->lost_tsc) {
		if (pc->lost_domain_valid) {
			if (pc->current >= 0) {
				x->anomalies++;
			} else {
				int32_t vi = vcpu_find(x, pc->lost_did, pc->lost_vid);
				if (vi >= 0)
					vcpu_next_update(x, p, vi, ev->ts);
				pc->seen_valid_schedule = false;
			}
			pc->lost_domain_valid = false;
		}
		pc->lost_active = false;
		x->lost_cpus--;
	}
}

static bool activate(struct vms_xen_model *x, uint32_t cpu, uint64_t tsc)
{
	struct xm_pcpu *pc = pcpu(x, cpu);
	if (!pc)
		return false;
	if (pc->active)
		return true;
	int32_t d = vcpu_find(x, XM_DEFAULT_DOMAIN, cpu);
	if (d < 0)
		return false;
	pc = &x->p[cpu];
	pc->active = true;
	pc->seen_valid_schedule = true;
	pc->first_tsc = tsc;
	x->v[d].activated = true;
	x->v[d].p = (int32_t)cpu;
	x->v[d].state = VMS_XEN_RS_RUNNING;
	pc->current = d;
	return true;
}

void vms_xen_model_event(struct vms_xen_model *x, const struct vms_event *ev)
{
	if (ev->machine != x->machine || !activate(x, ev->cpu, ev->ts))
		return;
	uint32_t p = ev->cpu;
	struct xm_pcpu *pc = &x->p[p];
	pc->last_tsc = ev->ts;
	switch (ev->type) {
	case VMS_XEN_T_RUNSTATE_CHANGE:
		runstate_record(x, p, ev, false);
		return;
	case VMS_XEN_T_RUNSTATE_CONTINUE:
		runstate_record(x, p, ev, true);
		return;
	case VMS_XEN_T_LOST_RECORDS:
		lost_records(x, p, ev);
		return;
	case VMS_XEN_T_LOST_END:
		lost_end(x, p, ev);
		return;
	default:
		break;
	}
	/* HVM (and shadow) records belong to the vCPU current on the CPU; PV ones make it PV */
	bool hvm = ev->type == VMS_XEN_T_VMEXIT || ev->type == VMS_XEN_T_VMENTRY ||
		   ev->type == VMS_XEN_T_HVM || ev->type == VMS_XEN_T_SHADOW;
	bool pv = ev->type == VMS_XEN_T_PV;
	if (!hvm && !pv)
		return;
	if (pc->current < 0 || x->v[pc->current].acct.dom == VMS_XEN_IDLE_DOMAIN)
		return; /* xenalyze: "p->current null" / "record for idle domain", not processed */
	struct xm_vcpu *v = vcpu(x, pc->current);
	int want = hvm ? DATA_HVM : DATA_PV;
	if (v->data_type != DATA_NONE && v->data_type != want)
		return;
	v->data_type = want;
	v->acct.hvm = want == DATA_HVM;
	if (ev->type == VMS_XEN_T_VMEXIT) {
		v->vmexit_valid = true;
		uint32_t max = x->isa == 2 ? 1025 : 56; /* HVM_{SVM,VMX}_EXIT_REASON_MAX */
		if (ev->f[0] > max) {
			x->anomalies++;
			return;
		}
		v->exit_tsc = ev->ts;
		v->exit_reason = (uint32_t)ev->f[0];
	} else if (ev->type == VMS_XEN_T_VMENTRY && v->vmexit_valid) {
		close_vmexit(v, ev->ts);
	}
}

/* (key, index) pairs, sorted by key */
struct xm_sortkey {
	uint64_t key;
	uint32_t i;
};

static int sortkey_cmp(const void *a, const void *b)
{
	const struct xm_sortkey *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

void vms_xen_model_cpu_end(struct vms_xen_model *x, uint32_t cpu)
{
	if (!x || cpu >= x->nr_p || !x->p[cpu].active || x->order)
		return;
	struct xm_pcpu *pc = &x->p[cpu];
	if (pc->current >= 0)
		lose_vcpu(vcpu(x, pc->current), pc->last_tsc);
	pc->active = false;
}

void vms_xen_model_finish(struct vms_xen_model *x)
{
	if (x->order)
		return;
	uint32_t nk = x->nr_p > x->nr_v ? x->nr_p : x->nr_v;
	struct xm_sortkey *k = calloc(nk ? nk : 1, sizeof *k);
	x->order = calloc(x->nr_v ? x->nr_v : 1, sizeof *x->order);
	if (!k || !x->order) {
		free(k);
		free(x->order);
		x->order = NULL;
		return;
	}
	/* deactivate_pcpu, in the order each CPU's records end, for the CPUs whose end was not
	 * told (vms_xen_model_cpu_end) */
	uint32_t n = 0;
	for (uint32_t c = 0; c < x->nr_p; c++)
		if (x->p[c].active)
			k[n++] = (struct xm_sortkey){ x->p[c].last_tsc, c };
	qsort(k, n, sizeof *k, sortkey_cmp);
	for (uint32_t i = 0; i < n; i++) {
		struct xm_pcpu *pc = &x->p[k[i].i];
		if (pc->current >= 0)
			lose_vcpu(vcpu(x, pc->current), pc->last_tsc);
		pc->active = false;
	}
	n = 0;
	for (uint32_t i = 0; i < x->nr_v; i++) {
		struct xm_vcpu *v = vcpu(x, (int32_t)i); /* the markers it missed */
		v->acct.nr_exits = v->exits.n;
		v->acct.exits = v->exits.row;
		if (v->acct.dom != XM_DEFAULT_DOMAIN)
			k[n++] = (struct xm_sortkey){ (uint64_t)v->acct.dom << 32 | v->acct.vcpu, i };
	}
	qsort(k, n, sizeof *k, sortkey_cmp);
	for (uint32_t i = 0; i < n; i++)
		x->order[i] = k[i].i;
	x->nr_order = n;
	free(k);
}

uint32_t vms_xen_model_nr_vcpus(const struct vms_xen_model *x)
{
	return x->order ? x->nr_order : 0;
}

const struct vms_xen_vcpu_acct *vms_xen_model_vcpu(const struct vms_xen_model *x, uint32_t i)
{
	return x->order && i < x->nr_order ? &x->v[x->order[i]].acct : NULL;
}
