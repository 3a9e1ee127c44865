/* Containers inside machines (include/vmscope/containers.h): a consumer of the raw events
 * (namespace records, the machines' own sched_switch / sched_wakeup / fork) and of the vCPU
 * state machine's vcpu_state and guest_switch (what the layers below took from a guest
 * thread's running time). Threads and namespaces are kept in tables grown as the records
 * show them, found through keymaps; containers are formed at the finish. */
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "core/grow.h"
#include "vmscope/containers.h"

#define NONE UINT64_MAX
#define NONE32 UINT32_MAX

struct ct_ns {                 /* a thread's namespace at one level */
	uint64_t inum;         /* 0: none recorded */
	uint32_t level;
};

struct ct_thread {
	uint32_t machine;
	int32_t tid;
	char comm[24];
	struct ct_ns deep, above; /* its deepest namespace, and the one a level above it */
	uint64_t wait_since;   /* NONE: not waiting (as far as recorded) */
	uint64_t running, runqueue, vmm, preempted;
	uint64_t vmm_below, preempted_below; /* of vmm and preempted: below the guest's host */
};

struct ct_cpu {                /* a CPU of a machine, as its own sched_switch shows it */
	int32_t tid;           /* -1 before its first sched_switch */
	uint32_t th;           /* tid's index in the threads, NONE32: none (a lookup saved) */
	uint64_t since;
};

struct ct_vcpu {               /* a guest's vCPU, as the state machine publishes it */
	uint32_t machine;
	enum vms_vcpu_state state;
	bool below;            /* the state is at a layer below the guest's host (nested) */
	int32_t gtid;
	uint32_t th;           /* gtid's index in the threads, NONE32: none */
	uint64_t since;
};

struct ct_parent {             /* a namespace's parent, learnt from a thread or a fork */
	uint32_t machine;
	uint64_t inum, parent;
	uint32_t level;
};

struct vms_containers {
	const struct vms_model *model;
	struct ct_thread *th;
	uint32_t nr_th, cap_th;
	struct vms_keymap th_idx;   /* (machine, tid) -> index in th */
	struct ct_cpu *cpu;
	uint32_t nr_cpu, cap_cpu;
	struct vms_keymap cpu_idx;  /* (machine, cpu) -> index in cpu */
	struct ct_vcpu *v;
	uint32_t nr_v;
	struct ct_parent *par;
	uint32_t nr_par, cap_par;
	bool nomem;
	bool *watch;                /* by machine: followed (vms_containers_watch) */
	uint32_t nr_watch;
	/* the result */
	struct vms_container *out;
	uint32_t nr_out;
	struct vms_container_thread *out_th;
};

/* A table grown as the records show its entries, found through a keymap. */
struct ct_table {
	void **arr;
	uint32_t *nr, *cap;
	size_t elem;
	struct vms_keymap *idx;
};

/* The entry of key: *fresh says it is new (then zeroed); NULL when out of memory. */
static void *entry(struct vms_containers *c, struct ct_table t, uint64_t key, bool *fresh)
{
	uint64_t *ix = vms_keymap_put(t.idx, key, *t.nr, fresh);
	if (!ix) {
		c->nomem = true;
		return NULL;
	}
	if (!*fresh)
		return *ix < *t.nr ? (char *)*t.arr + *ix * t.elem : NULL;
	if (*t.nr == *t.cap) {
		void *p = vms_grow(*t.arr, t.cap, t.elem, 16);
		if (!p) {
			c->nomem = true;
			*ix = NONE; /* a later lookup sees an index out of range: not kept */
			return NULL;
		}
		*t.arr = p;
	}
	void *x = (char *)*t.arr + (size_t)(*t.nr)++ * t.elem;
	memset(x, 0, t.elem);
	return x;
}

static struct ct_thread *thread(struct vms_containers *c, uint32_t machine, uint64_t tid)
{
	int32_t t = (int32_t)tid;
	if (t <= 0 || (uint64_t)t != tid) /* the idle task (0) belongs to no container */
		return NULL;
	bool fresh;
	struct ct_table tb = { (void **)&c->th, &c->nr_th, &c->cap_th, sizeof *c->th, &c->th_idx };
	struct ct_thread *x = entry(c, tb, vms_keymap_mt(machine, t), &fresh);
	if (x && fresh) {
		x->machine = machine;
		x->tid = t;
		x->wait_since = NONE;
	}
	return x;
}

static uint32_t index_of(const struct vms_containers *c, const struct ct_thread *x)
{
	return x ? (uint32_t)(x - c->th) : NONE32;
}

/* The latest name: every sched_switch says it, so it is copied only when it changed (a
 * snprintf per switch was most of this consumer's cost). */
static void name(struct ct_thread *x, const char *comm)
{
	if (!comm || !*comm || !strncmp(x->comm, comm, sizeof x->comm - 1))
		return;
	size_t n = strnlen(comm, sizeof x->comm - 1);
	memcpy(x->comm, comm, n);
	x->comm[n] = '\0';
}

/* A thread's namespace at `level`: the deepest so far, or the one just above it. */
static void note_ns(struct ct_thread *x, uint64_t inum, uint64_t level)
{
	if (!inum || inum > UINT32_MAX || level > 64) /* an ns inode is 32 bits, depth <= 32 */
		return;
	struct ct_ns n = { inum, (uint32_t)level };
	if (!x->deep.inum || n.level > x->deep.level) {
		if (x->deep.inum && x->deep.level + 1 == n.level)
			x->above = x->deep;
		else
			x->above = (struct ct_ns){ 0, 0 };
		x->deep = n;
	} else if (n.level + 1 == x->deep.level) {
		x->above = n;
	}
}

static void note_parent(struct vms_containers *c, uint32_t machine, struct ct_ns ns, uint64_t parent)
{
	if (c->nr_par == c->cap_par) {
		struct ct_parent *p = vms_grow(c->par, &c->cap_par, sizeof *p, 16);
		if (!p) {
			c->nomem = true;
			return;
		}
		c->par = p;
	}
	c->par[c->nr_par++] = (struct ct_parent){ machine, ns.inum, parent, ns.level };
}

static void on_fork(struct vms_containers *c, const struct vms_event *ev, uint64_t t)
{
	struct ct_thread *child = thread(c, ev->machine, ev->f[1]);
	if (!child)
		return;
	name(child, ev->s[0]);
	child->wait_since = t; /* a new task is runnable until it first runs */
	if (!ev->f[3] || !ev->f[4])
		return;
	note_ns(child, ev->f[3], ev->f[4] - 1);
	struct ct_thread *parent = thread(c, ev->machine, ev->f[0]);
	/* a child in a namespace its parent is not in: the clone made it, one level below */
	if (parent && parent->deep.inum && parent->deep.inum != child->deep.inum &&
	    parent->deep.level + 1 == child->deep.level)
		note_parent(c, ev->machine, child->deep, parent->deep.inum);
}

static struct ct_cpu *cpu_of(struct vms_containers *c, uint32_t machine, uint32_t cpu)
{
	bool fresh;
	struct ct_table tb = { (void **)&c->cpu, &c->nr_cpu, &c->cap_cpu, sizeof *c->cpu, &c->cpu_idx };
	struct ct_cpu *k = entry(c, tb, (uint64_t)machine << 32 | cpu, &fresh);
	if (k && fresh) {
		k->tid = -1; /* nothing known before its first sched_switch */
		k->th = NONE32;
	}
	return k;
}

static void on_switch(struct vms_containers *c, const struct vms_event *ev, uint64_t t)
{
	struct ct_cpu *k = cpu_of(c, ev->machine, ev->cpu);
	if (!k)
		return;
	/* the thread leaving is, but for lost events, the one the CPU ran: no lookup then */
	struct ct_thread *prev = k->tid >= 0 && (uint64_t)k->tid == ev->f[0] && k->th < c->nr_th
					 ? &c->th[k->th] : thread(c, ev->machine, ev->f[0]);
	if (prev) {
		if (k->tid == prev->tid)
			prev->running += t - k->since;
		name(prev, ev->s[0]);
		if (ev->f[1] == 0) /* left runnable: back in the run queue */
			prev->wait_since = t;
	}
	struct ct_thread *next = thread(c, ev->machine, ev->f[2]);
	k->tid = (int32_t)ev->f[2] == (int64_t)ev->f[2] ? (int32_t)ev->f[2] : -1;
	k->since = t;
	k->th = index_of(c, next);
	if (next) {
		name(next, ev->s[1]);
		if (next->wait_since != NONE && next->wait_since <= t)
			next->runqueue += t - next->wait_since;
		next->wait_since = NONE;
	}
}

static bool watched(const struct vms_containers *c, uint32_t machine)
{
	return machine < c->nr_watch && c->watch[machine];
}

static void on_event(void *ctx, const struct vms_event *ev, uint64_t t)
{
	struct vms_containers *c = ctx;
	struct ct_thread *x;
	if (!watched(c, ev->machine))
		return;
	switch (ev->kind) {
	case VMS_K_SCHED_SWITCH:
		on_switch(c, ev, t);
		break;
	case VMS_K_SCHED_WAKEUP:
		if ((x = thread(c, ev->machine, ev->f[0])) && x->wait_since == NONE)
			x->wait_since = t;
		break;
	case VMS_K_PROCESS_FORK:
		on_fork(c, ev, t);
		break;
	case VMS_K_THREAD_NAME:
		if (ev->f[2] && (x = thread(c, ev->machine, ev->f[0]))) {
			name(x, ev->s[0]);
			note_ns(x, ev->f[2], ev->f[3]);
		}
		break;
	default:
		break;
	}
}

/* What the vCPU did since its last change goes to the guest thread that was current on it. */
static void close_vcpu(struct vms_containers *c, struct ct_vcpu *v, uint64_t t)
{
	if (v->th < c->nr_th && t > v->since &&
	    (v->state == VMS_STATE_VMM || v->state == VMS_STATE_PREEMPTED)) {
		struct ct_thread *x = &c->th[v->th];
		uint64_t d = t - v->since;
		if (v->state == VMS_STATE_VMM) {
			x->vmm += d;
			x->vmm_below += v->below ? d : 0;
		} else {
			x->preempted += d;
			x->preempted_below += v->below ? d : 0;
		}
	}
	v->since = t;
}

/* vCPU vidx from t on: what it did before is closed, the caller says what it does now. */
static struct ct_vcpu *vcpu_from(struct vms_containers *c, uint32_t vidx, uint32_t machine,
				 uint64_t t)
{
	if (vidx >= c->nr_v || !watched(c, machine))
		return NULL;
	struct ct_vcpu *v = &c->v[vidx];
	close_vcpu(c, v, t);
	v->machine = machine;
	return v;
}

static void on_state(void *ctx, const struct vms_obs_vcpu_state *o)
{
	struct ct_vcpu *v = vcpu_from(ctx, o->vidx, o->machine, o->t);
	if (v) {
		v->state = o->state;
		v->below = o->layer >= 0 && o->host >= 0 && o->layer != o->host;
		if (v->gtid != o->gtid)
			v->th = index_of(ctx, thread(ctx, o->machine, (uint64_t)(int64_t)o->gtid));
		v->gtid = o->gtid;
	}
}

static void on_guest_switch(void *ctx, const struct vms_obs_guest_switch *o)
{
	struct ct_vcpu *v = vcpu_from(ctx, o->vidx, o->machine, o->t);
	if (v) {
		v->th = index_of(ctx, thread(ctx, o->machine, (uint64_t)(int64_t)o->next_tid));
		v->gtid = o->next_tid;
	}
}

static bool below_known(const struct vms_model *m, uint32_t machine)
{
	if (!m || machine >= vms_model_nr_machines(m))
		return false;
	const struct vms_machine *mc = vms_model_machine_c(m, machine);
	return (mc->role & VMS_ROLE_GUEST) && mc->host >= 0 &&
	       (uint32_t)mc->host < vms_model_nr_machines(m) &&
	       vms_model_machine_c(m, (uint32_t)mc->host)->source >= 0;
}

/* A nested guest's host's host (L2 -> L1 -> L0), else -1. */
static int32_t below_layer(const struct vms_model *m, uint32_t machine)
{
	if (!below_known(m, machine))
		return -1;
	uint32_t h = (uint32_t)vms_model_machine_c(m, machine)->host;
	return below_known(m, h) ? vms_model_machine_c(m, h)->host : -1;
}

static int cmp_th(const void *a, const void *b)
{
	const struct ct_thread *x = *(struct ct_thread *const *)a, *y = *(struct ct_thread *const *)b;
	if (x->machine != y->machine)
		return x->machine < y->machine ? -1 : 1;
	if (x->deep.level != y->deep.level)
		return x->deep.level < y->deep.level ? -1 : 1;
	if (x->deep.inum != y->deep.inum)
		return x->deep.inum < y->deep.inum ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static int cmp_ct(const void *a, const void *b)
{
	const struct vms_container *x = a, *y = b;
	if (x->machine != y->machine)
		return x->machine < y->machine ? -1 : 1;
	if (x->level != y->level)
		return x->level < y->level ? -1 : 1;
	return (x->inum > y->inum) - (x->inum < y->inum);
}

static struct vms_container *find_out(struct vms_containers *c, uint32_t machine, uint64_t inum)
{
	for (uint32_t i = 0; i < c->nr_out; i++) /* few containers: a linear search */
		if (c->out[i].machine == machine && c->out[i].inum == inum)
			return &c->out[i];
	return NULL;
}

/* A container for each namespace below the root: those of threads (deepest and above), and
 * those forks named; `level` 0 is the root, not a container. */
static void add_ns(struct vms_containers *c, uint32_t machine, struct ct_ns ns, uint64_t parent,
		   uint32_t cap)
{
	if (!ns.inum || ns.level == 0)
		return;
	struct vms_container *k = find_out(c, machine, ns.inum);
	if (!k) {
		if (c->nr_out == cap)
			return;
		k = &c->out[c->nr_out++];
		memset(k, 0, sizeof *k);
		k->machine = machine;
		k->inum = ns.inum;
		k->level = ns.level;
		k->below_known = below_known(c->model, machine);
		k->below_layer = below_layer(c->model, machine);
	}
	if (!k->parent && parent)
		k->parent = parent;
}

static int build(struct vms_containers *c)
{
	uint32_t cap = 2 * c->nr_th + c->nr_par;
	struct ct_thread **in = calloc(c->nr_th ? c->nr_th : 1, sizeof *in);
	c->out = calloc(cap ? cap : 1, sizeof *c->out);
	c->out_th = calloc(c->nr_th ? c->nr_th : 1, sizeof *c->out_th);
	if (!in || !c->out || !c->out_th) {
		free(in);
		return -1;
	}
	uint32_t n = 0;
	for (uint32_t i = 0; i < c->nr_th; i++) {
		struct ct_thread *x = &c->th[i];
		if (x->deep.inum && x->deep.level > 0)
			in[n++] = x;
		add_ns(c, x->machine, x->deep, x->above.inum, cap);
		add_ns(c, x->machine, x->above, 0, cap);
	}
	for (uint32_t i = 0; i < c->nr_par; i++)
		add_ns(c, c->par[i].machine, (struct ct_ns){ c->par[i].inum, c->par[i].level },
		       c->par[i].parent, cap);
	qsort(c->out, c->nr_out, sizeof *c->out, cmp_ct);
	qsort(in, n, sizeof *in, cmp_th);
	for (uint32_t i = 0; i < n; i++) {
		const struct ct_thread *x = in[i];
		struct vms_container *k = find_out(c, x->machine, x->deep.inum);
		struct vms_container_thread *o = &c->out_th[i];
		*o = (struct vms_container_thread){ .tid = x->tid, .running = x->running,
			.runqueue = x->runqueue, .vmm = x->vmm, .preempted = x->preempted,
			.vmm_below = x->vmm_below, .preempted_below = x->preempted_below };
		memcpy(o->comm, x->comm, sizeof o->comm);
		if (!k->threads)
			k->threads = o; /* sorted: a container's threads are consecutive */
		k->nr_threads++;
		k->running += o->running;
		k->runqueue += o->runqueue;
		k->vmm += o->vmm;
		k->preempted += o->preempted;
		k->vmm_below += o->vmm_below;
		k->preempted_below += o->preempted_below;
	}
	free(in);
	return 0;
}

static void on_finish(void *ctx, uint64_t t_end)
{
	struct vms_containers *c = ctx;
	for (uint32_t i = 0; i < c->nr_v; i++)
		close_vcpu(c, &c->v[i], t_end);
	/* threads still on a CPU or still waiting: closed at the end (the CPU's machine is in
	 * its key) */
	for (size_t s = 0; s < c->cpu_idx.cap; s++) {
		uint64_t key = c->cpu_idx.keys[s];
		if (key == VMS_KEYMAP_EMPTY || c->cpu_idx.vals[s] >= c->nr_cpu)
			continue;
		struct ct_cpu *k = &c->cpu[c->cpu_idx.vals[s]];
		struct ct_thread *x = k->tid > 0 ? thread(c, (uint32_t)(key >> 32), (uint64_t)k->tid) : NULL;
		if (x && t_end > k->since)
			x->running += t_end - k->since;
	}
	for (uint32_t i = 0; i < c->nr_th; i++) {
		struct ct_thread *x = &c->th[i];
		if (x->wait_since != NONE && t_end > x->wait_since)
			x->runqueue += t_end - x->wait_since;
		x->wait_since = NONE;
	}
	if (c->nomem || build(c) != 0)
		c->nr_out = 0; /* out of memory: no containers rather than wrong ones */
}

static void clear(struct vms_containers *c)
{
	free(c->th);
	free(c->cpu);
	free(c->v);
	free(c->par);
	free(c->out);
	free(c->out_th);
	vms_keymap_free(&c->th_idx);
	vms_keymap_free(&c->cpu_idx);
	const struct vms_model *m = c->model;
	bool *w = c->watch;
	uint32_t nw = c->nr_watch;
	memset(c, 0, sizeof *c);
	c->model = m;
	c->watch = w; /* the machines followed stay, pass after pass */
	c->nr_watch = nw;
	vms_keymap_init(&c->th_idx);
	vms_keymap_init(&c->cpu_idx);
}

static void on_reset(void *ctx, const struct vms_model *model)
{
	struct vms_containers *c = ctx;
	c->model = model;
	clear(c);
	uint32_t nv = 0;
	for (uint32_t m = 0; model && m < vms_model_nr_machines(model); m++) {
		const struct vms_machine *mc = vms_model_machine_c(model, m);
		if (mc->role & VMS_ROLE_GUEST)
			nv += mc->nr_vcpus;
	}
	c->v = calloc(nv ? nv : 1, sizeof *c->v);
	if (!c->v) {
		c->nomem = true;
		return;
	}
	c->nr_v = nv;
	for (uint32_t i = 0; i < nv; i++) {
		c->v[i].gtid = -1;
		c->v[i].th = NONE32;
	}
}

struct vms_containers *vms_containers_new(struct vms_observer *o)
{
	struct vms_containers *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	vms_keymap_init(&c->th_idx);
	vms_keymap_init(&c->cpu_idx);
	*o = (struct vms_observer){
		.ctx = c, .event = on_event, .vcpu_state = on_state,
		.guest_switch = on_guest_switch, .finish = on_finish, .reset = on_reset,
		.event_kinds_only = true,
	};
	return c;
}

void vms_containers_free(struct vms_containers *c)
{
	if (!c)
		return;
	clear(c);
	vms_keymap_free(&c->th_idx);
	vms_keymap_free(&c->cpu_idx);
	free(c->watch);
	free(c);
}

int vms_containers_watch(struct vms_containers *c, uint32_t machine)
{
	if (machine >= c->nr_watch) {
		if (machine > UINT32_MAX / 2 - 1)
			return -1;
		uint32_t n = machine + 1;
		bool *w = realloc(c->watch, n * sizeof *w);
		if (!w)
			return -1;
		memset(w + c->nr_watch, 0, (n - c->nr_watch) * sizeof *w);
		c->watch = w;
		c->nr_watch = n;
	}
	c->watch[machine] = true;
	return 0;
}

uint32_t vms_containers_count(const struct vms_containers *c)
{
	return c ? c->nr_out : 0;
}

const struct vms_container *vms_containers_get(const struct vms_containers *c, uint32_t i)
{
	return c && i < c->nr_out ? &c->out[i] : NULL;
}
