/* The fused physical-CPU view (docs/vm-analysis.md §7), a consumer of the vCPU state
 * machine's observations (vmscope/observe.h); it never calls back into the state machine.
 *
 * The state machine follows who occupies each host CPU and publishes every change
 * (cpu_occupant: a host thread, or a vCPU in guest mode running a guest thread; nothing known
 * after a gap of lost events, after a thread left without a switch being recorded, and, on a
 * host that records no sched_switch, outside [kvm_entry, kvm_exit)); this view only makes the
 * maximal intervals of those: a change at t closes the open interval; zero-length ones are
 * dropped, and the last closed interval of each CPU is held back so that A [s, t), B [t, t),
 * A [t, u) comes out as one A [s, u). Once a CPU showed something, a stretch where nothing is
 * known is an interval too (guest and tid -1: unknown), so that every view shows it as
 * unknown rather than as nothing. */
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "vmscope/pcpu_view.h"

#define PV_MAX_CPUS 4096   /* physical CPUs of one host; beyond is damage */

/* An interval: its start (and end, held back) and what ran (guest -1: host thread tid) */
struct pv_iv {
	uint64_t start, end;
	int32_t guest, vcpu, tid;
	bool open;
	char comm[24];
	/* nested: what the L1 vCPU shown runs (pv_up; up_guest -1: nothing stacked) */
	int32_t up_guest, up_vcpu, up_tid;
	char up_comm[24];
};

struct pv_cpu {
	struct pv_iv cur, held;
};

struct pv_host {
	struct pv_cpu *cpu;
	uint32_t nr_cpus;
};

struct vms_pcpu_view {
	vms_pcpu_sink sink;
	void *ctx;
	uint32_t nr_mach;
	struct pv_host *host;     /* [nr_mach] */
	int32_t *host_of;         /* nested only: [nr_mach] each machine's host, -1 none; NULL
	                             when no guest's host is a guest (nothing is stacked) */
};

static __attribute__((noinline)) struct pv_cpu *cpu_grow(struct vms_pcpu_view *pv, uint32_t h,
							 uint32_t cpu)
{
	if (h >= pv->nr_mach || cpu >= PV_MAX_CPUS)
		return NULL;
	struct pv_host *hs = &pv->host[h];
	if (cpu >= hs->nr_cpus) {
		uint32_t n = hs->nr_cpus ? hs->nr_cpus : 8;
		while (n <= cpu)
			n *= 2;
		if (n > PV_MAX_CPUS)
			n = PV_MAX_CPUS;
		struct pv_cpu *nc = realloc(hs->cpu, n * sizeof *nc);
		if (!nc)
			return NULL;
		memset(nc + hs->nr_cpus, 0, (n - hs->nr_cpus) * sizeof *nc);
		hs->cpu = nc;
		hs->nr_cpus = n;
	}
	return &hs->cpu[cpu];
}

/* CPU (h, cpu), made when new (NULL: out of memory or past the bound) */
static inline struct pv_cpu *cpu_of(struct vms_pcpu_view *pv, uint32_t h, uint32_t cpu)
{
	if (__builtin_expect(h < pv->nr_mach && cpu < pv->host[h].nr_cpus, 1))
		return &pv->host[h].cpu[cpu];
	return cpu_grow(pv, h, cpu);
}

static void emit(struct vms_pcpu_view *pv, uint32_t h, uint32_t cpu, const struct pv_iv *iv)
{
	if (!pv->sink)
		return;
	struct vms_pcpu_interval o = {
		.host = h, .cpu = cpu, .start = iv->start, .end = iv->end,
		.guest = iv->guest, .vcpu = iv->vcpu, .tid = iv->tid, .comm = iv->comm,
		.stacked = iv->up_guest >= 0, .up_guest = iv->up_guest, .up_vcpu = iv->up_vcpu,
		.up_tid = iv->up_tid, .up_comm = iv->up_guest >= 0 ? iv->up_comm : "",
	};
	pv->sink(pv->ctx, &o);
}

static inline bool same(const struct pv_iv *a, const struct pv_iv *b)
{
	return a->guest == b->guest && a->vcpu == b->vcpu && a->tid == b->tid &&
	       a->up_guest == b->up_guest && a->up_vcpu == b->up_vcpu && a->up_tid == b->up_tid;
}

/* Nested: what CPU cpu of host g (L1's vCPU cpu, as L1 shows it) runs in guest mode, into
 * iv's up fields (nothing when g is no host, or shows a host thread there) */
static void pv_up(struct vms_pcpu_view *pv, struct pv_iv *iv)
{
	iv->up_guest = iv->up_vcpu = iv->up_tid = -1;
	memset(iv->up_comm, 0, sizeof iv->up_comm);
	if (!pv->host_of || iv->guest < 0 || (uint32_t)iv->guest >= pv->nr_mach ||
	    iv->vcpu < 0 || (uint32_t)iv->vcpu >= pv->host[iv->guest].nr_cpus)
		return;
	const struct pv_iv *u = &pv->host[iv->guest].cpu[iv->vcpu].cur;
	if (!u->open || u->guest < 0)
		return;
	iv->up_guest = u->guest;
	iv->up_vcpu = u->vcpu;
	iv->up_tid = u->tid;
	memcpy(iv->up_comm, u->comm, sizeof iv->up_comm);
}

static void occupant(struct vms_pcpu_view *pv, uint32_t h, uint32_t cpu, uint64_t t,
		     int32_t guest, int32_t vcpu, int32_t tid, const char *comm);

/* Nested: CPU cpu of host h (an L1 vCPU) changed at t: the CPUs of h's host showing that
 * vCPU restack (a scan of that host's CPUs: nested captures only) */
static __attribute__((noinline)) void restack(struct vms_pcpu_view *pv, uint32_t h, uint32_t cpu,
					      uint64_t t)
{
	int32_t h0 = pv->host_of[h];
	if (h0 < 0 || (uint32_t)h0 >= pv->nr_mach || (uint32_t)h0 == h)
		return;
	struct pv_host *hs = &pv->host[h0];
	for (uint32_t c = 0; c < hs->nr_cpus; c++) {
		struct pv_iv *cur = &hs->cpu[c].cur;
		if (cur->open && cur->guest == (int32_t)h && cur->vcpu == (int32_t)cpu) {
			char comm[24];
			memcpy(comm, cur->comm, sizeof comm);
			occupant(pv, (uint32_t)h0, c, t, cur->guest, cur->vcpu, cur->tid, comm);
		}
	}
}

/* Close c's open interval at t (nothing when it is empty). */
static inline void close_cur(struct vms_pcpu_view *pv, uint32_t h, uint32_t cpu,
			     struct pv_cpu *c, uint64_t t)
{
	struct pv_iv *cur = &c->cur, *held = &c->held;
	if (!cur->open)
		return;
	cur->open = false;
	if (t <= cur->start)
		return;
	if (held->open && held->end == cur->start && same(held, cur)) {
		held->end = t;
		return;
	}
	if (held->open)
		emit(pv, h, cpu, held);
	*held = *cur;
	held->end = t;
	held->open = true;
}

static void occupant(struct vms_pcpu_view *pv, uint32_t h, uint32_t cpu, uint64_t t,
		     int32_t guest, int32_t vcpu, int32_t tid, const char *comm)
{
	struct pv_cpu *c = cpu_of(pv, h, cpu);
	if (!c)
		return;
	if (__builtin_expect(!pv->host_of, 1)) {
		/* nothing stacked (not nested): the interval is written in place, not built and
		 * copied (this runs at every change of every host CPU's occupant) */
		struct pv_iv *cur = &c->cur;
		int32_t v = guest >= 0 ? vcpu : -1;
		if (!(cur->open && cur->guest == guest && cur->vcpu == v && cur->tid == tid)) {
			close_cur(pv, h, cpu, c, t);
			cur->open = true;
			cur->start = t;
			cur->guest = guest;
			cur->vcpu = v;
			cur->tid = tid;
			cur->up_guest = cur->up_vcpu = cur->up_tid = -1;
		}
		memcpy(cur->comm, comm, sizeof cur->comm);   /* (24 bytes: observe.h) */
		return;
	}
	struct pv_iv *cur = &c->cur, next = { .guest = guest, .vcpu = guest >= 0 ? vcpu : -1,
					      .tid = tid, .up_guest = -1, .up_vcpu = -1,
					      .up_tid = -1 };
	if (pv->host_of)
		pv_up(pv, &next);
	if (cur->open && same(cur, &next)) {
		memcpy(cur->comm, comm, sizeof cur->comm);   /* its name became known */
		memcpy(cur->up_comm, next.up_comm, sizeof cur->up_comm);
		if (pv->host_of)
			restack(pv, h, cpu, t);
		return;
	}
	close_cur(pv, h, cpu, c, t);
	/* (nothing known from t: an unknown interval, guest, vcpu and tid -1, comm "") */
	next.open = true;
	next.start = t;
	memcpy(next.comm, comm, sizeof next.comm);   /* (24 bytes: observe.h) */
	*cur = next;
	if (pv->host_of)
		restack(pv, h, cpu, t);
}

void vms_pcpu_view_occupant(struct vms_pcpu_view *pv, const struct vms_obs_cpu_occupant *o)
{
	occupant(pv, o->host, o->cpu, o->t, o->guest, o->vcpu, o->tid, o->comm);
}

static void on_occupant(void *ctx, const struct vms_obs_cpu_occupant *o)
{
	vms_pcpu_view_occupant(ctx, o);
}

/* Every event is wanted (none left out by a reader's skip_unread): the first event recorded
 * on a CPU, of any kind, says who runs there. */
static void on_event(void *ctx, const struct vms_event *ev, uint64_t t)
{
	(void)ctx;
	(void)ev;
	(void)t;
}

static void on_finish(void *ctx, uint64_t t_end)
{
	struct vms_pcpu_view *pv = ctx;
	for (uint32_t h = 0; h < pv->nr_mach; h++)
		for (uint32_t cpu = 0; cpu < pv->host[h].nr_cpus; cpu++) {
			struct pv_cpu *c = &pv->host[h].cpu[cpu];
			close_cur(pv, h, cpu, c, t_end);
			if (c->held.open)
				emit(pv, h, cpu, &c->held);
			c->held.open = false;
		}
}

/* Free what a layout made */
static void unlayout(struct vms_pcpu_view *pv)
{
	for (uint32_t h = 0; pv->host && h < pv->nr_mach; h++)
		free(pv->host[h].cpu);
	free(pv->host);
	free(pv->host_of);
	pv->host = NULL;
	pv->host_of = NULL;
	pv->nr_mach = 0;
}

/* Per-machine tables for `model`, nothing known yet: 0, or -1 when out of memory (then the
 * view has no machine and streams nothing). */
static int layout(struct vms_pcpu_view *pv, const struct vms_model *model)
{
	unlayout(pv);
	uint32_t nm = vms_model_nr_machines(model);
	pv->host = calloc(nm ? nm : 1, sizeof *pv->host);
	if (!pv->host)
		return -1;
	pv->nr_mach = nm;
	if (vms_model_nested(model)) {
		if (!(pv->host_of = malloc((nm ? nm : 1) * sizeof *pv->host_of)))
			return -1;
		for (uint32_t m = 0; m < nm; m++)
			pv->host_of[m] = vms_model_machine_c(model, m)->host;
	}
	return 0;
}

struct vms_pcpu_view *vms_pcpu_view_new(const struct vms_model *model, vms_pcpu_sink sink,
					void *ctx)
{
	struct vms_pcpu_view *pv = calloc(1, sizeof *pv);
	if (!pv)
		return NULL;
	pv->sink = sink;
	pv->ctx = ctx;
	if (layout(pv, model) < 0) {
		vms_pcpu_view_free(pv);
		return NULL;
	}
	return pv;
}

int vms_pcpu_view_reset(struct vms_pcpu_view *pv, const struct vms_model *model)
{
	return layout(pv, model);
}

struct vms_observer vms_pcpu_view_observer(struct vms_pcpu_view *pv)
{
	return (struct vms_observer){
		.ctx = pv, .cpu_occupant = on_occupant, .event = on_event, .finish = on_finish,
	};
}

void vms_pcpu_view_free(struct vms_pcpu_view *pv)
{
	if (!pv)
		return;
	unlayout(pv);
	free(pv);
}
