/* Who took the CPU (docs/vm-analysis.md §6), a consumer of the state machine's
 * observations. While a vCPU is preempted (its thread left its physical CPU runnable), the
 * host thread that runs on that CPU is charged with the time, cut at every change of that
 * thread (vcpu_instead). Halted time is not charged: the guest had nothing to run, nobody
 * stole anything.
 *
 * Run-queue latency: from the vCPU thread's sched_wakeup to its next sched_switch in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "core/grow.h"

/* A vCPU's thieves are looked up by tid at every change of thief: the first ST_SCAN by a scan
 * (the usual vCPU has a handful), the others through an index of 4-byte slots (not a
 * vms_keymap, whose 16-byte slots would take 4x the index's memory), so that a vCPU left
 * preempted while N distinct threads run in turn costs O(N), not O(N^2).
 *
 * Bounded whatever the trace (issue 7.5): at most VMS_STEAL_MAX_THIEVES threads itemised per
 * vCPU and VMS_STEAL_MAX_ENTRIES for all, the first to steal; later ones are summed in the
 * vCPU's "other threads" bucket (exact time; counted distinct in a set of 4-byte tids while
 * all those sets together stay under ST_MAX_OTHER_SLOTS, then "at least"), one bucket per
 * layer whose scheduler ran them (a nested guest's vCPU loses its CPU at L1 and at L0, whose
 * thread ids are two machines' and may be the same numbers). With the state
 * machine's VMS_INSTEAD_MAX_WAITERS, a trace leaving N vCPUs runnable on one CPU while N
 * threads run in turn (xml-entry-tids) keeps 64 x 256 entries, not N^2/2. */
#define ST_SCAN 16
#define ST_MAX_OTHER_SLOTS (1u << 22)

struct st_other {              /* the "other threads" of one layer */
	uint32_t host;             /* the machine whose scheduler ran them */
	uint64_t ns, threads;
	bool at_least;
	uint32_t *oset;            /* open addressing: tid + 1 of the other threads, 0 empty */
	uint32_t nr_oset;          /* a power of two > 2 threads, or 0 */
};

struct st_vcpu {
	bool preempted;            /* shown state PREEMPTED */
	bool unattributed;         /* who runs instead is not followed (observe.h) */
	int32_t tid;               /* who runs instead, -1 unknown */
	char comm[24];
	uint64_t since;
	struct vms_steal_entry *steal;
	uint32_t nr_steal, cap_steal;
	uint32_t *slot;            /* open addressing by host tid: steal index + 1, 0 empty */
	uint32_t nr_slot;          /* a power of two > 2 nr_steal, or 0 (no index yet) */
	/* the buckets (vmscope/analysis.h) */
	uint64_t unattributed_ns;
	uint64_t unattr_key;       /* (host, cpu) + 1 its last unattributed wait was counted on */
	uint32_t cur_cpu, cur_host;
	struct st_other *oth;      /* by layer */
	uint32_t nr_oth, cap_oth;
	bool wake_pending;
	uint64_t wake_t;
	struct vms_dist *runq;
};

struct an_steal {
	const struct an_layout *L;
	bool tables;               /* the thieves and the run-queue latencies, not only the
	                              unattributed waits */
	struct st_vcpu *v;
	uint64_t nr_entries;       /* itemised, of all vCPUs */
	uint64_t nr_oslots;        /* of all the other-thread sets */
	struct vms_keymap ucpu;    /* (host, cpu) -> index in unattr + 1 */
	struct vms_unattributed *unattr;
	uint32_t nr_unattr, cap_unattr;
};

static uint32_t hash_tid(int32_t tid, uint32_t nr)
{
	uint32_t h = (uint32_t)tid * 2654435761u;
	return (h ^ h >> 16) & (nr - 1);
}

/* Puts entry i (tid) in the index's first free slot after tid's home. */
static void slot_put(struct st_vcpu *v, int32_t tid, uint32_t i)
{
	uint32_t h = hash_tid(tid, v->nr_slot);
	while (v->slot[h])
		h = (h + 1) & (v->nr_slot - 1);
	v->slot[h] = i + 1;
}

/* The index of the entry of thread tid of machine host, or UINT32_MAX (a nested guest's
 * vCPU has thieves at two layers, whose tids may be the same number). */
static uint32_t find(const struct st_vcpu *v, int32_t tid, uint32_t host)
{
	for (uint32_t i = 0; i < v->nr_steal && i < ST_SCAN; i++)
		if (v->steal[i].host_tid == tid && v->steal[i].host == host)
			return i;
	if (!v->nr_slot)
		return UINT32_MAX;
	for (uint32_t h = hash_tid(tid, v->nr_slot); v->slot[h]; h = (h + 1) & (v->nr_slot - 1))
		if (v->steal[v->slot[h] - 1].host_tid == tid && v->steal[v->slot[h] - 1].host == host)
			return v->slot[h] - 1;
	return UINT32_MAX;
}

/* Makes room in the index for one more entry (built when the scan stops being enough);
 * false when out of memory. */
static bool index_room(struct st_vcpu *v)
{
	if (v->nr_steal < ST_SCAN || (uint64_t)(v->nr_steal + 1) * 2 <= v->nr_slot)
		return true;
	uint32_t n = v->nr_slot ? v->nr_slot * 2 : 4 * ST_SCAN;
	uint32_t *s = calloc(n, sizeof *s);
	if (!s)
		return false;
	free(v->slot);
	v->slot = s;
	v->nr_slot = n;
	for (uint32_t i = 0; i < v->nr_steal; i++)
		slot_put(v, v->steal[i].host_tid, i);
	return true;
}

/* The vCPU's "other threads" of layer host; NULL when out of memory. */
static struct st_other *other_of(struct st_vcpu *v, uint32_t host)
{
	for (uint32_t i = 0; i < v->nr_oth; i++) /* one per layer: a handful */
		if (v->oth[i].host == host)
			return &v->oth[i];
	if (v->nr_oth == v->cap_oth) {
		struct st_other *o = vms_grow(v->oth, &v->cap_oth, sizeof *o, 2);
		if (!o)
			return NULL;
		v->oth = o;
	}
	struct st_other *o = &v->oth[v->nr_oth++];
	*o = (struct st_other){ .host = host };
	return o;
}

/* ns of thread tid of machine host, one not itemised, in the vCPU's "other threads" of that
 * layer: the first time it is seen there, it counts one more (while the sets' budget lasts;
 * then "at least"). */
static void charge_other(struct an_steal *st, struct st_vcpu *v, uint32_t host, int32_t tid,
			 uint64_t ns)
{
	struct st_other *b = other_of(v, host);
	if (!b)
		return; /* out of memory: that time is not itemised anywhere */
	b->ns += ns;
	if (b->at_least)
		return;
	uint32_t key = (uint32_t)tid + 1;
	for (uint32_t h = b->nr_oset ? hash_tid(tid, b->nr_oset) : 0; b->nr_oset && b->oset[h];
	     h = (h + 1) & (b->nr_oset - 1))
		if (b->oset[h] == key)
			return;
	if ((b->threads + 1) * 2 > b->nr_oset) {
		uint32_t n = b->nr_oset ? b->nr_oset * 2 : 64;
		uint32_t *s = st->nr_oslots + n <= ST_MAX_OTHER_SLOTS ? calloc(n, sizeof *s) : NULL;
		if (!s) {
			/* the count from here would be a guess: it says "at least" */
			b->at_least = true;
			b->threads++;
			free(b->oset);
			st->nr_oslots -= b->nr_oset;
			b->oset = NULL;
			b->nr_oset = 0;
			return;
		}
		for (uint32_t i = 0; i < b->nr_oset; i++)
			if (b->oset[i]) {
				uint32_t h = hash_tid((int32_t)(b->oset[i] - 1), n);
				while (s[h])
					h = (h + 1) & (n - 1);
				s[h] = b->oset[i];
			}
		free(b->oset);
		st->nr_oslots += n - b->nr_oset;
		b->oset = s;
		b->nr_oset = n;
	}
	uint32_t h = hash_tid(tid, b->nr_oset);
	while (b->oset[h])
		h = (h + 1) & (b->nr_oset - 1);
	b->oset[h] = key;
	b->threads++;
}

/* An unattributed wait of vCPU v on (host, cpu) is counted for the warning. */
static void count_unattributed(struct an_steal *st, struct st_vcpu *v, uint64_t ns)
{
	uint64_t key = (uint64_t)v->cur_host << 32 | v->cur_cpu;
	bool inserted;
	uint64_t *idx = vms_keymap_put(&st->ucpu, key, st->nr_unattr + 1, &inserted);
	if (!idx)
		return;
	if (inserted) {
		if (st->nr_unattr == st->cap_unattr) {
			struct vms_unattributed *u =
				vms_grow(st->unattr, &st->cap_unattr, sizeof *u, 8);
			if (!u) {
				*idx = 0;
				return;
			}
			st->unattr = u;
		}
		st->unattr[st->nr_unattr++] = (struct vms_unattributed){ .host = v->cur_host,
									 .cpu = v->cur_cpu };
	}
	if (!*idx)
		return;
	struct vms_unattributed *u = &st->unattr[*idx - 1];
	u->ns += ns;
	if (v->unattr_key != key + 1) {
		v->unattr_key = key + 1;
		u->vcpus++;
	}
}

static void charge(struct an_steal *st, uint32_t vidx, uint64_t t)
{
	struct st_vcpu *v = &st->v[vidx];
	if (!v->preempted || t <= v->since)
		return;
	uint64_t ns = t - v->since;
	if (v->unattributed) {
		v->unattributed_ns += ns;
		count_unattributed(st, v, ns);
		return;
	}
	if (v->tid < 0 || !st->tables)
		return;
	int32_t host = st->L->v[vidx].host;
	uint32_t thief_host = host >= 0 ? v->cur_host : 0;   /* (who ran: at its layer) */
	uint32_t i = find(v, v->tid, thief_host);
	if (i != UINT32_MAX) {
		v->steal[i].ns += ns;
		return;
	}
	if (v->nr_steal >= VMS_STEAL_MAX_THIEVES || st->nr_entries >= VMS_STEAL_MAX_ENTRIES ||
	    !index_room(v)) {
		charge_other(st, v, thief_host, v->tid, ns);
		return;
	}
	if (v->nr_steal == v->cap_steal) {
		struct vms_steal_entry *ns_ = vms_grow(v->steal, &v->cap_steal, sizeof *ns_, 8);
		if (!ns_) {
			charge_other(st, v, thief_host, v->tid, ns);
			return;
		}
		v->steal = ns_;
	}
	if (v->nr_slot)
		slot_put(v, v->tid, v->nr_steal);
	st->nr_entries++;
	struct vms_steal_entry *e = &v->steal[v->nr_steal++];
	memset(e, 0, sizeof *e);
	e->host_tid = v->tid;
	e->host_pid = -1;
	e->host = thief_host;
	e->ns = ns;
	const struct vms_thread_info *ti =
		host >= 0 ? vms_model_thread(st->L->model, thief_host, v->tid) : NULL;
	if (ti && ti->pid > 0)
		e->host_pid = ti->pid;
	/* (a copy, not snprintf: once per new thief) */
	if (v->comm[0])
		an_copy_comm(e->comm, v->comm);
	else if (ti)
		an_copy_comm(e->comm, ti->comm);
}

void an_steal_on_state(void *ctx, const struct vms_obs_vcpu_state *o)
{
	struct an_steal *st = ctx;
	struct st_vcpu *v = &st->v[o->vidx];
	if (v->preempted)   /* (charge's own test, here: most changes are not of a preempted vCPU) */
		charge(st, o->vidx, o->t);
	v->since = o->t;
	v->preempted = o->state == VMS_STATE_PREEMPTED;
	if (o->state != VMS_STATE_PREEMPTED && o->state != VMS_STATE_HALTED) {
		v->tid = -1;
		v->unattributed = false;
	}
}

void an_steal_on_instead(void *ctx, const struct vms_obs_vcpu_instead *o)
{
	struct an_steal *st = ctx;
	struct st_vcpu *v = &st->v[o->vidx];
	if (o->tid == v->tid && o->unattributed == v->unattributed &&
	    strncmp(o->comm, v->comm, 23) == 0)
		return;
	if (v->preempted)   /* (as in an_steal_on_state: most are told of a halted vCPU) */
		charge(st, o->vidx, o->t);
	v->since = o->t;
	v->tid = o->tid;
	v->unattributed = o->unattributed;
	v->cur_host = o->host;
	v->cur_cpu = o->host_cpu;
	an_copy_comm24(v->comm, o->comm);
}

extern inline __attribute__((always_inline)) void an_steal_on_wakeup(void *ctx, const struct vms_obs_vcpu_wakeup *o)
{
	struct st_vcpu *v = &((struct an_steal *)ctx)->v[o->vidx];
	if (v->wake_pending)
		return; /* a second wakeup before running: the wait began at the first */
	v->wake_pending = true;
	v->wake_t = o->t;
}

extern inline __attribute__((always_inline)) void an_steal_on_cpu_run(void *ctx, const struct vms_obs_cpu_run *o)
{
	if (o->vidx < 0)
		return;
	struct st_vcpu *v = &((struct an_steal *)ctx)->v[o->vidx];
	if (!v->wake_pending)
		return;
	v->wake_pending = false;
	if (v->runq)
		vms_dist_add(v->runq, o->t > v->wake_t ? o->t - v->wake_t : 0);
}

static int cmp_steal(const void *x, const void *y)
{
	const struct vms_steal_entry *a = x, *b = y;
	if (a->ns != b->ns)
		return a->ns > b->ns ? -1 : 1;
	if (a->host_tid != b->host_tid)
		return a->host_tid < b->host_tid ? -1 : 1;
	return a->host < b->host ? -1 : a->host > b->host;   /* (nested: two layers' tid) */
}

static int cmp_other(const void *x, const void *y)
{
	const struct st_other *a = x, *b = y;
	return a->host < b->host ? -1 : a->host > b->host;
}

static void on_finish(void *ctx, uint64_t t_end)
{
	struct an_steal *st = ctx;
	for (uint32_t i = 0; i < st->L->nr_v; i++) {
		charge(st, i, t_end);
		st->v[i].since = t_end;
		struct st_vcpu *v = &st->v[i];
		if (v->nr_steal > 1)
			qsort(v->steal, v->nr_steal, sizeof *v->steal, cmp_steal);
		/* sorted, the index is stale: nothing is charged after the end */
		free(v->slot);
		v->slot = NULL;
		v->nr_slot = 0;
		for (uint32_t k = 0; k < v->nr_oth; k++) {
			free(v->oth[k].oset);
			v->oth[k].oset = NULL;
			v->oth[k].nr_oset = 0;
		}
		/* the buckets, after the threads: the other threads of each layer, the layers
		 * in machine order */
		if (v->nr_oth > 1)
			qsort(v->oth, v->nr_oth, sizeof *v->oth, cmp_other);
		uint32_t need = v->nr_steal + 1 + v->nr_oth;
		if ((v->unattributed_ns || v->nr_oth) && need > v->cap_steal) {
			struct vms_steal_entry *e = realloc(v->steal, need * sizeof *e);
			if (!e)
				continue; /* (out of memory at the end: the table without them) */
			v->steal = e;
			v->cap_steal = need;
		}
		if (v->unattributed_ns)
			v->steal[v->nr_steal++] = (struct vms_steal_entry){
				.host_tid = -1, .host_pid = -1, .comm = "unattributed",
				.ns = v->unattributed_ns, .kind = VMS_STEAL_UNATTRIBUTED };
		for (uint32_t k = 0; k < v->nr_oth; k++)
			if (v->oth[k].ns)
				v->steal[v->nr_steal++] = (struct vms_steal_entry){
					.host_tid = -1, .host_pid = -1, .host = v->oth[k].host,
					.comm = "other threads", .ns = v->oth[k].ns,
					.kind = VMS_STEAL_OTHERS, .threads = v->oth[k].threads,
					.threads_at_least = v->oth[k].at_least };
	}
}

struct an_steal *an_steal_new(const struct an_layout *L, bool tables, struct vms_observer *o)
{
	struct an_steal *st = calloc(1, sizeof *st);
	if (!st)
		return NULL;
	st->L = L;
	st->tables = tables;
	vms_keymap_init(&st->ucpu);
	st->v = calloc(L->nr_v ? L->nr_v : 1, sizeof *st->v);
	if (!st->v) {
		free(st);
		return NULL;
	}
	for (uint32_t i = 0; i < L->nr_v; i++) {
		st->v[i].tid = -1;
		if (tables && !(st->v[i].runq = vms_dist_new())) {
			an_steal_free(st);
			return NULL;
		}
	}
	*o = (struct vms_observer){ .ctx = st, .vcpu_state = an_steal_on_state,
				    .vcpu_instead = an_steal_on_instead,
				    .vcpu_wakeup = tables ? an_steal_on_wakeup : NULL,
				    .cpu_run = tables ? an_steal_on_cpu_run : NULL, .finish = on_finish };
	return st;
}

const struct vms_steal_entry *an_steal_entries(const struct an_steal *st, uint32_t vidx,
					       uint32_t *n)
{
	*n = st->v[vidx].nr_steal;
	return st->v[vidx].steal;
}

const struct vms_unattributed *an_steal_unattributed(const struct an_steal *st, uint32_t *n)
{
	*n = st->nr_unattr;
	return st->unattr;
}

const struct vms_dist *an_steal_runq(const struct an_steal *st, uint32_t vidx)
{
	return st->v[vidx].runq;
}

void an_steal_free(struct an_steal *st)
{
	if (!st)
		return;
	for (uint32_t i = 0; i < st->L->nr_v; i++) {
		free(st->v[i].steal);
		free(st->v[i].slot);
		for (uint32_t k = 0; k < st->v[i].nr_oth; k++)
			free(st->v[i].oth[k].oset);
		free(st->v[i].oth);
		vms_dist_free(st->v[i].runq);
	}
	vms_keymap_free(&st->ucpu);
	free(st->unattr);
	free(st->v);
	free(st);
}
