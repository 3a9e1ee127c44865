/* The fused physical-CPU view (docs/vm-analysis.md §7), a consumer of the vCPU state
 * machine's observations (vmscope/observe.h); it never calls back into the state machine.
 *
 * Per host CPU it keeps who occupies it (cpu_run; before the first sched_switch, the thread
 * of the first event recorded on it) and which vCPU, if any, is in guest mode there
 * (vcpu_mode). Per vCPU it keeps the guest thread current on it (guest_switch; before the
 * first guest sched_switch, the thread of the guest's first event on that vCPU). What the
 * CPU shows is the guest thread while a vCPU is in guest mode there, else the host thread.
 *
 * Maximal intervals: a change at t closes the open interval; zero-length ones are dropped,
 * and the last closed interval of each CPU is held back so that A [s, t), B [t, t), A [t, u)
 * comes out as one A [s, u).
 *
 * Lost events (VMS_EVF_LOST_BEFORE on a host CPU): who ran there during the gap is not known,
 * so the interval open across it ends at the last event before the gap. */
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "vmscope/pcpu_view.h"

#define PV_MAX_CPUS 4096   /* physical CPUs of one host; beyond is damage */

struct pv_what {
	int32_t guest, vcpu, tid;  /* guest -1: host thread tid */
	char comm[24];
};

struct pv_iv {
	bool open;
	uint64_t start, end;
	struct pv_what w;
};

struct pv_cpu {
	bool known;               /* the occupant is known */
	int32_t tid;
	char comm[24];
	int32_t gm;               /* index of the vCPU in guest mode here, -1 none */
	bool seen;                /* an event was recorded on it */
	uint64_t last_t;          /* the last one's time */
	struct pv_iv cur, held;
};

struct pv_vcpu {
	uint32_t machine, vcpu;
	int32_t gtid;             /* guest thread current on it, -1 unknown */
	char gcomm[24];
	int32_t gm_host, gm_cpu;  /* where it is in guest mode, -1 when not */
};

struct pv_host {
	struct pv_cpu *cpu;
	uint32_t nr_cpus;
};

struct vms_pcpu_view {
	const struct vms_model *model;
	vms_pcpu_sink sink;
	void *ctx;
	uint32_t nr_mach;
	struct pv_host *host;     /* [nr_mach] (only hosts get CPUs) */
	bool *host_of;            /* [nr_mach]: is_host, asked once (on_event asks per event) */
	uint32_t *vbase;          /* [nr_mach]: first index of its vCPUs in v[] */
	struct pv_vcpu *v;
	uint32_t nr_v;
};

/* Every comm the view keeps is NUL-padded to its 24 bytes: it is copied whole into an
 * interval, whose comm a sink may compare whole (vms_pcpu_interval.comm). */
static void copy_padded(char dst[24], const char *src)
{
	size_t i = 0;
	for (; src && i < 23 && src[i]; i++)
		dst[i] = src[i];
	memset(dst + i, 0, 24 - i);
}

/* A thread's name: the event's when it has one, else what the model learnt. */
static void name_of(const struct vms_pcpu_view *pv, uint32_t machine, int32_t tid,
		    const char *given, char dst[24])
{
	if (given && *given) {
		copy_padded(dst, given);
		return;
	}
	const struct vms_thread_info *ti = vms_model_thread(pv->model, machine, tid);
	copy_padded(dst, ti && ti->comm[0] ? ti->comm : tid == 0 ? "idle" : NULL);
}

static bool is_host(const struct vms_pcpu_view *pv, uint32_t m)
{
	const struct vms_machine *mc = vms_model_machine_c(pv->model, m);
	return mc && (mc->role & VMS_ROLE_HOST);
}

static inline bool is_host_c(const struct vms_pcpu_view *pv, uint32_t m)
{
	return pv->host_of[m];   /* (m < nr_mach) */
}

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
		for (uint32_t c = hs->nr_cpus; c < n; c++)
			nc[c].gm = -1;
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

static struct pv_vcpu *vcpu_of(struct vms_pcpu_view *pv, uint32_t machine, uint32_t vcpu)
{
	if (machine >= pv->nr_mach)
		return NULL;
	uint32_t i = pv->vbase[machine] + vcpu;
	uint32_t end = machine + 1 < pv->nr_mach ? pv->vbase[machine + 1] : pv->nr_v;
	return i < end ? &pv->v[i] : NULL;
}

static void emit(struct vms_pcpu_view *pv, uint32_t h, uint32_t cpu, const struct pv_iv *iv)
{
	if (!pv->sink)
		return;
	struct vms_pcpu_interval o = {
		.host = h, .cpu = cpu, .start = iv->start, .end = iv->end,
		.guest = iv->w.guest, .vcpu = iv->w.vcpu, .tid = iv->w.tid, .comm = iv->w.comm,
	};
	pv->sink(pv->ctx, &o);
}

static bool same(const struct pv_what *a, const struct pv_what *b)
{
	return a->guest == b->guest && a->vcpu == b->vcpu && a->tid == b->tid;
}

/* Close c's open interval at t (nothing when it is empty). */
static void close_cur(struct vms_pcpu_view *pv, uint32_t h, uint32_t cpu, struct pv_cpu *c,
		      uint64_t t)
{
	struct pv_iv *cur = &c->cur, *held = &c->held;
	if (!cur->open)
		return;
	cur->open = false;
	if (t <= cur->start)
		return;
	if (held->open && held->end == cur->start && same(&held->w, &cur->w)) {
		held->end = t;
		return;
	}
	if (held->open)
		emit(pv, h, cpu, held);
	*held = *cur;
	held->end = t;
	held->open = true;
}

/* What CPU c shows now: its identity in w (comm not set) and the comm to show (24 bytes,
 * padded), not copied (most refreshes find the same occupant: nothing to copy then). */
static const char *what_now(const struct vms_pcpu_view *pv, const struct pv_cpu *c,
			    struct pv_what *w)
{
	if (c->gm >= 0) {
		const struct pv_vcpu *v = &pv->v[c->gm];
		w->guest = (int32_t)v->machine;
		w->vcpu = (int32_t)v->vcpu;
		w->tid = v->gtid;
		static const char idle[24] = "idle";
		return v->gtid == 0 ? idle : v->gcomm;
	}
	w->guest = w->vcpu = -1;
	w->tid = c->tid;
	return c->comm;
}

/* Something that CPU (h, cpu) shows may have changed at t. */
static void refresh(struct vms_pcpu_view *pv, uint32_t h, uint32_t cpu, struct pv_cpu *c,
		    uint64_t t)
{
	if (!c->known && c->gm < 0) {
		close_cur(pv, h, cpu, c, t);
		return;
	}
	struct pv_what w;
	const char *comm = what_now(pv, c, &w);
	if (c->cur.open && same(&c->cur.w, &w)) {
		if (!c->cur.w.comm[0])
			memcpy(c->cur.w.comm, comm, sizeof c->cur.w.comm);
		return;
	}
	close_cur(pv, h, cpu, c, t);
	c->cur.open = true;
	c->cur.start = t;
	c->cur.w.guest = w.guest;
	c->cur.w.vcpu = w.vcpu;
	c->cur.w.tid = w.tid;
	memcpy(c->cur.w.comm, comm, sizeof c->cur.w.comm);
}

static void set_occupant(struct vms_pcpu_view *pv, uint32_t h, struct pv_cpu *c, int32_t tid,
			 const char *comm)
{
	c->known = tid >= 0;
	c->tid = tid;
	if (tid >= 0)
		name_of(pv, h, tid, comm, c->comm);
	else
		memset(c->comm, 0, sizeof c->comm);
}

/* The vCPU leaves guest mode wherever it was (refreshing that CPU at t). */
static void leave_guest_mode(struct vms_pcpu_view *pv, struct pv_vcpu *v, uint64_t t)
{
	if (v->gm_host < 0)
		return;
	uint32_t h = (uint32_t)v->gm_host, cpu = (uint32_t)v->gm_cpu;
	v->gm_host = v->gm_cpu = -1;
	struct pv_cpu *c = cpu_of(pv, h, cpu);
	if (c && c->gm == (int32_t)(v - pv->v)) {
		c->gm = -1;
		refresh(pv, h, cpu, c, t);
	}
}

static void on_cpu_run(void *ctx, const struct vms_obs_cpu_run *o)
{
	struct vms_pcpu_view *pv = ctx;
	struct pv_cpu *c = cpu_of(pv, o->host, o->cpu);
	if (!c)
		return;
	/* a thread is switched out in host mode: whatever was in guest mode here left it */
	if (c->gm >= 0) {
		struct pv_vcpu *v = &pv->v[c->gm];
		v->gm_host = v->gm_cpu = -1;
		c->gm = -1;
	}
	set_occupant(pv, o->host, c, o->tid, o->comm);
	refresh(pv, o->host, o->cpu, c, o->t);
}

static void on_vcpu_mode(void *ctx, const struct vms_obs_vcpu_mode *o)
{
	struct vms_pcpu_view *pv = ctx;
	struct pv_vcpu *v = vcpu_of(pv, o->machine, o->vcpu);
	struct pv_cpu *c = cpu_of(pv, o->host, o->host_cpu);
	if (!v || !c)
		return;
	leave_guest_mode(pv, v, o->t);
	/* the vCPU thread emitted this event on that CPU: it is the occupant */
	if (o->host_tid >= 0 && (!c->known || c->tid != o->host_tid))
		set_occupant(pv, o->host, c, o->host_tid, NULL);
	if (o->guest_mode) {
		if (c->gm >= 0 && c->gm != (int32_t)(v - pv->v)) {
			struct pv_vcpu *other = &pv->v[c->gm];
			other->gm_host = other->gm_cpu = -1;
		}
		c->gm = (int32_t)(v - pv->v);
		v->gm_host = (int32_t)o->host;
		v->gm_cpu = (int32_t)o->host_cpu;
	}
	refresh(pv, o->host, o->host_cpu, c, o->t);
}

static void guest_thread(struct vms_pcpu_view *pv, struct pv_vcpu *v, int32_t tid,
			 const char *comm, uint64_t t)
{
	v->gtid = tid;
	if (tid > 0)
		name_of(pv, v->machine, tid, comm, v->gcomm);
	else
		memset(v->gcomm, 0, sizeof v->gcomm);
	if (v->gm_host >= 0) {
		struct pv_cpu *c = cpu_of(pv, (uint32_t)v->gm_host, (uint32_t)v->gm_cpu);
		if (c)
			refresh(pv, (uint32_t)v->gm_host, (uint32_t)v->gm_cpu, c, t);
	}
}

static void on_guest_switch(void *ctx, const struct vms_obs_guest_switch *o)
{
	struct vms_pcpu_view *pv = ctx;
	struct pv_vcpu *v = vcpu_of(pv, o->machine, o->vcpu);
	if (v)
		guest_thread(pv, v, o->next_tid, o->next_comm, o->t);
}

/* A gap before this event on host CPU c: the interval open across it ends at the last
 * event seen before the gap, and the occupant is learnt again from this event (unless an
 * observation of this same event already changed it at t, closing the interval into held:
 * then held is cut back). */
static void lost_before(struct vms_pcpu_view *pv, uint32_t h, uint32_t cpu, struct pv_cpu *c,
			uint64_t t)
{
	uint64_t cut = c->last_t;
	if (c->cur.open && c->cur.start < t) {
		close_cur(pv, h, cpu, c, cut > c->cur.start ? cut : c->cur.start);
		c->known = false;
		if (c->gm >= 0) { /* someone's event here: host mode (kvm_entry would be at t) */
			struct pv_vcpu *v = &pv->v[c->gm];
			v->gm_host = v->gm_cpu = -1;
			c->gm = -1;
		}
	} else if (c->held.open && c->held.end == t && cut < t) {
		if (cut > c->held.start)
			c->held.end = cut;
		else
			c->held.open = false;
	}
}

static void on_event(void *ctx, const struct vms_event *ev, uint64_t t)
{
	struct vms_pcpu_view *pv = ctx;
	uint32_t m = ev->machine;
	if (m >= pv->nr_mach)
		return;
	if (is_host_c(pv, m)) {
		struct pv_cpu *c = cpu_of(pv, m, ev->cpu);
		if (c) {
			if ((ev->flags & VMS_EVF_LOST_BEFORE) && c->seen)
				lost_before(pv, m, ev->cpu, c, t);
			/* the first event on a CPU says who runs there */
			if (!c->known && ev->tid >= 0 && ev->kind != VMS_K_XEN_VMEXIT &&
			    ev->kind != VMS_K_XEN_VMENTRY) {
				set_occupant(pv, m, c, ev->tid, NULL);
				refresh(pv, m, ev->cpu, c, t);
			}
			c->last_t = t;
			c->seen = true;
		}
	}
	/* the guest's first event on a vCPU says which guest thread is current there */
	struct pv_vcpu *v = vcpu_of(pv, m, ev->cpu);
	if (v && ev->tid >= 0 &&
	    (v->gtid < 0 || ((ev->flags & VMS_EVF_LOST_BEFORE) && ev->kind != VMS_K_SCHED_SWITCH &&
			      v->gtid != ev->tid)))
		guest_thread(pv, v, ev->tid, NULL, t);
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
	pv->host_of = NULL;
	free(pv->vbase);
	free(pv->v);
	pv->host = NULL;
	pv->vbase = NULL;
	pv->v = NULL;
	pv->nr_mach = pv->nr_v = 0;
}

/* Per-machine and per-vCPU tables for `model`, nothing known yet: 0, or -1 when out of
 * memory (then the view has no machine and streams nothing). */
static int layout(struct vms_pcpu_view *pv, const struct vms_model *model)
{
	unlayout(pv);
	pv->model = model;
	uint32_t nm = vms_model_nr_machines(model), nv = 0;
	pv->host = calloc(nm ? nm : 1, sizeof *pv->host);
	pv->vbase = calloc(nm ? nm : 1, sizeof *pv->vbase);
	pv->host_of = calloc(nm ? nm : 1, sizeof *pv->host_of);
	if (!pv->host || !pv->vbase || !pv->host_of)
		goto fail;
	pv->nr_mach = nm;
	for (uint32_t m = 0; m < nm; m++)
		pv->host_of[m] = is_host(pv, m);
	for (uint32_t m = 0; m < nm; m++) {
		pv->vbase[m] = nv;
		nv += vms_model_machine_c(model, m)->nr_vcpus;
	}
	pv->v = calloc(nv ? nv : 1, sizeof *pv->v);
	if (!pv->v)
		goto fail;
	pv->nr_v = nv;
	for (uint32_t m = 0; m < nm; m++)
		for (uint32_t n = pv->vbase[m]; n < (m + 1 < nm ? pv->vbase[m + 1] : nv); n++) {
			pv->v[n].machine = m;
			pv->v[n].vcpu = n - pv->vbase[m];
			pv->v[n].gtid = -1;
			pv->v[n].gm_host = pv->v[n].gm_cpu = -1;
		}
	return 0;
fail:
	unlayout(pv);
	return -1;
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
		.ctx = pv, .cpu_run = on_cpu_run, .vcpu_mode = on_vcpu_mode,
		.guest_switch = on_guest_switch, .event = on_event, .finish = on_finish,
	};
}

void vms_pcpu_view_free(struct vms_pcpu_view *pv)
{
	if (!pv)
		return;
	unlayout(pv);
	free(pv);
}
