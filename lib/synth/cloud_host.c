/* The cloud-host scenario (vmscope/synth.h): many QEMU guests on an oversubscribed host.
 *
 * Every thread is pinned to one host CPU, so each CPU is simulated on its own: a small
 * scheduler (FIFO run queue, a 3 ms time slice when others wait, wake-up preemption for the
 * host threads that have it) runs the CPU's vCPU threads and host threads. A vCPU thread
 * on its CPU alternates guest-mode windows and exits as a vCPU lane does (vcpu_lane.c: the
 * same exit reasons and costs, HLT with halt-polling or a blocked halt and kvm_vcpu_wakeup),
 * but its window also ends at the CPU's next interrupt (a sleeper's wake-up, the slice's
 * end): an EXTERNAL_INTERRUPT exit, after which the thread may be switched out runnable
 * (preempted). Inside every guest a scheduler (sched_model.c) runs only while its vCPU is
 * in guest mode; the traced guests' events are written, the untraced guests' only decide
 * when their vCPUs halt. The truth of a traced vCPU follows vcpu_lane.c's rules, and a
 * switch on a CPU charges the thread that ran until it to every traced vCPU preempted
 * there. Times are host TSC cycles. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmscope/synth.h"
#include "output/tracedat_writer.h"
#include "synth/kernel_formats.h"
#include "synth/sched_model.h"
#include "synth/synth_context.h"
#include "synth/truth_json.h"
#include "synth/vcpu_lane.h"

#define QEMU_PID0 10000
#define PID_STRIDE 100        /* guest g's QEMU is QEMU_PID0 + g * PID_STRIDE, vCPU v + 10 + v */
#define KWORKER_TID0 200000
#define STRESS_TID0 300000
#define RIP_HLT 0xffffffff81f4a2caull
#define INTR_LOCAL_TIMER 0x800000ecu

enum { T_SLEEPING = 0, T_RUNNABLE, T_RUNNING };

struct cvcpu;
struct cthread {
	struct vms_task task;
	uint8_t st;
	bool preempts;            /* its wake-up preempts whoever runs (CFS: it slept long) */
	uint64_t wake_at;         /* when SLEEPING */
	double burst_ns, sleep_ns;
	uint64_t left;            /* host thread: cycles of its burst still to run */
	struct cvcpu *v;          /* NULL: a host thread */
};

struct hcpu;
struct cloud;
struct cvcpu {
	struct cthread th;
	struct cloud *C;
	uint32_t guest, vcpu;
	struct hcpu *cpu;
	struct vms_sched g;                  /* the guest's scheduler on this vCPU */
	struct vms_task gidle, gtrace;
	struct vms_emitter *ge;              /* traced: the guest's file */
	struct vms_synth_vcpu_truth *vt;     /* traced: its truth */
	uint64_t ratio;
	uint32_t frac;
	int64_t tsc_offset;
	double window_ns;                    /* mean guest-mode window */
	uint8_t hmode, base;
	uint64_t since;
	bool in_exit, gstopped;
	const struct vms_exit_kind *exit_k;
	uint64_t exit_tsc, last_exit;
	uint64_t t_next;                     /* on its CPU: its next kvm_entry */
	bool halted_off;                     /* off its CPU in a blocked halt */
	uint64_t halt_ps, halt_off, wake_t;  /* the halt's start (polling), switch out, wake-up */
	uint64_t rip;
	uint32_t inject;
	uint64_t tail[VMS_SYNTH_NSTATES];    /* base time shown since its last guest event */
};

struct hcpu {
	uint32_t id;
	struct vms_task swapper;
	struct cthread **th;                 /* every thread pinned here */
	uint32_t n;
	struct cthread **rq;
	uint32_t nrq;
	struct cvcpu **tv;                   /* the traced vCPUs here */
	uint32_t ntv;
	struct cthread *cur;                 /* NULL: idle */
	uint64_t cur_in, cur_end, last, occ_since;
};

struct cloud {
	struct vms_synth_ctx x;
	struct vms_synth_cloud_truth *tr;
	struct hcpu *cpu;
	struct cvcpu *v;
	struct cthread *ht;
	struct cthread **slots;
	struct vms_emitter *ge;
	uint32_t ncpu, nv, nht;
	uint64_t gstop_at;
};

static inline uint64_t umax(uint64_t a, uint64_t b) { return a > b ? a : b; }
static inline uint64_t umin(uint64_t a, uint64_t b) { return a < b ? a : b; }

static uint64_t cyc(struct cloud *C, double ns) { return vms_synth_cyc(&C->x, ns); }
static uint64_t ns_of(struct cloud *C, uint64_t tsc) { return vms_synth_ns(&C->x, tsc); }

void vms_synth_cloud_config_init(struct vms_synth_cloud_config *c)
{
	*c = (struct vms_synth_cloud_config){ .guests = 64, .vcpus = 8, .traced = 2 };
	c->host_cpus = vms_synth_cloud_default_cpus(c->guests, c->vcpus, c->traced);
}

uint32_t vms_synth_cloud_default_cpus(uint32_t guests, uint32_t vcpus, uint32_t traced)
{
	uint64_t n = ((uint64_t)guests * vcpus + 7) / 8;
	if (n < (uint64_t)traced * vcpus)
		n = (uint64_t)traced * vcpus;
	return n < 1 ? 1 : n > VMS_SYNTH_CLOUD_MAX_HOST_CPUS ? VMS_SYNTH_CLOUD_MAX_HOST_CPUS : (uint32_t)n;
}

const char *vms_synth_cloud_check(const struct vms_synth_cloud_config *c)
{
	static char why[160];
	if (c->guests < 1 || c->guests > VMS_SYNTH_CLOUD_MAX_GUESTS)
		return "--guests wants 1 to 1024 guests";
	if (c->vcpus < 1 || c->vcpus > VMS_SYNTH_CLOUD_MAX_VCPUS)
		return "--vcpus wants 1 to 64 vCPUs per guest";
	if (c->host_cpus < 1 || c->host_cpus > VMS_SYNTH_CLOUD_MAX_HOST_CPUS)
		return "--host-cpus wants 1 to 1024 host CPUs";
	if (c->traced > c->guests || c->traced > VMS_SYNTH_CLOUD_MAX_TRACED)
		return "--traced wants at most 64 traced guests, and no more than --guests";
	if ((uint64_t)c->traced * c->vcpus > c->host_cpus) {
		snprintf(why, sizeof why, "%u traced guests x %u vCPUs need as many host CPUs (each "
			 "traced vCPU is the first thread of its own CPU), not %u", c->traced,
			 c->vcpus, c->host_cpus);
		return why;
	}
	uint64_t per = ((uint64_t)c->guests * c->vcpus + c->host_cpus - 1) / c->host_cpus;
	if (per > VMS_SYNTH_CLOUD_MAX_PER_CPU) {
		snprintf(why, sizeof why, "%llu vCPU threads per host CPU: at most %u (more --host-cpus "
			 "or fewer --guests/--vcpus)", (unsigned long long)per,
			 VMS_SYNTH_CLOUD_MAX_PER_CPU);
		return why;
	}
	return NULL;
}

/* ---- truth ---- */

static void account(struct cvcpu *v, uint64_t tsc)
{
	if (!v->vt || tsc <= v->since) {
		if (!v->vt)
			v->since = tsc;
		return;
	}
	uint64_t d = ns_of(v->C, tsc) - ns_of(v->C, v->since);
	int st = vms_lane_shown_state(v->hmode, v->base);
	v->vt->ns[st] += d;
	if (v->hmode == VMS_H_POLL)
		v->vt->halt_poll_ns += d;
	if (st == v->base && (st == VMS_SYNTH_RUNNING || st == VMS_SYNTH_IDLE))
		v->tail[st] += d;
	v->since = tsc;
}

static void hmode(struct cvcpu *v, uint64_t tsc, uint8_t mode)
{
	account(v, tsc);
	v->hmode = mode;
}

/* ---- guest events ---- */

static uint64_t guest_event_time(struct cvcpu *v, uint64_t ts, uint64_t *ref)
{
	uint64_t g = vms_synth_to_guest(ts, v->ratio, v->frac, v->tsc_offset);
	*ref = vms_synth_to_host(g, v->ratio, v->frac, v->tsc_offset);
	vms_synth_seen(&v->C->x, *ref);
	return g;
}

/* After a guest event at ref: the base shown so far is known. */
static void guest_told(struct cvcpu *v, uint64_t ref)
{
	account(v, ref);
	memset(v->tail, 0, sizeof v->tail);
	v->vt->guest_end_ns = ns_of(v->C, ref);
}

static void g_switch(void *ctx, uint64_t ts, const struct vms_sthread *prev, int64_t state,
		     const struct vms_sthread *next)
{
	struct cvcpu *v = ctx;
	if (v->ge && !v->gstopped) {
		uint64_t ref, g = guest_event_time(v, ts, &ref);
		vms_emit_switch(v->ge, v->vcpu, g, prev ? &prev->task : &v->gidle, state,
				next ? &next->task : &v->gidle);
		guest_told(v, ref);
		v->base = next ? VMS_SYNTH_RUNNING : VMS_SYNTH_IDLE;
	}
}

static void g_wakeup(void *ctx, uint64_t ts, const struct vms_sthread *waker,
		     const struct vms_sthread *woken)
{
	struct cvcpu *v = ctx;
	if (v->ge && !v->gstopped) {
		uint64_t ref, g = guest_event_time(v, ts, &ref);
		vms_emit_wakeup(v->ge, v->vcpu, g, waker ? &waker->task : &v->gidle, &woken->task,
				v->vcpu, waker == NULL);
		guest_told(v, ref);
	}
}

static const struct vms_sched_ops guest_ops = { g_switch, g_wakeup };

/* The guest's recording stops: its last event on this vCPU (trace-cmd's agent woken). */
static void guest_stop(struct cvcpu *v, uint64_t ts)
{
	uint64_t ref, g = guest_event_time(v, ts, &ref);
	vms_emit_wakeup(v->ge, v->vcpu, g, &v->gidle, &v->gtrace, v->vcpu, 1);
	guest_told(v, ref);
	v->base = VMS_SYNTH_UNKNOWN;
	v->gstopped = true;
}

/* ---- host events ---- */

static void seen(struct cloud *C, struct hcpu *c, uint64_t ts)
{
	c->last = ts;
	vms_synth_seen(&C->x, ts);
}

static void rq_remove(struct hcpu *c, const struct cthread *t)
{
	for (uint32_t i = 0; i < c->nrq; i++)
		if (c->rq[i] == t) {
			memmove(c->rq + i, c->rq + i + 1, (c->nrq - i - 1) * sizeof *c->rq);
			c->nrq--;
			return;
		}
}

/* A vCPU thread gets its CPU back at ts. */
static void vcpu_in(struct cloud *C, struct hcpu *c, struct cvcpu *v, uint64_t ts)
{
	if (v->halted_off) {
		/* the end of a blocked halt: KVM notes it, then prepares the entry */
		hmode(v, ts, VMS_H_HALT_ONCPU);
		if (v->vt)
			v->vt->runq_latency_ns += ns_of(C, ts) - ns_of(C, v->wake_t);
		uint64_t wake = ts + cyc(C, 300);
		vms_emit_kvm_vcpu_wakeup(&C->x.host, c->id, wake, &v->th.task,
					 ns_of(C, wake) - ns_of(C, v->halt_ps), 1);
		seen(C, c, wake);
		hmode(v, wake, VMS_H_VMM);
		v->t_next = wake + cyc(C, 1200);
		v->halted_off = false;
	} else if (v->hmode == VMS_H_NONE) {
		v->t_next = ts + cyc(C, 2500); /* its first run: nothing known of it before */
	} else {
		hmode(v, ts, VMS_H_VMM);
		v->t_next = ts + cyc(C, 500);
	}
}

/* prev (NULL: idle) leaves the CPU in `state` (runnable: back on the run queue; blocked: its
 * wake_at set by the caller), next (NULL: idle) runs from ts. */
static void do_switch(struct cloud *C, struct hcpu *c, struct cthread *prev, int64_t state,
		      struct cthread *next, uint64_t ts)
{
	/* whoever ran until now stole that time from every traced vCPU preempted here */
	const struct vms_task *occ = c->cur ? &c->cur->task : &c->swapper;
	for (uint32_t i = 0; i < c->ntv; i++) {
		struct cvcpu *v = c->tv[i];
		if (v->hmode == VMS_H_PREEMPTED && ts > c->occ_since)
			vms_synth_truth_add_steal(v->vt, occ, ns_of(C, ts) - ns_of(C, c->occ_since));
	}
	vms_emit_switch(&C->x.host, c->id, ts, prev ? &prev->task : &c->swapper, state,
			next ? &next->task : &c->swapper);
	seen(C, c, ts);
	if (prev) {
		bool runnable = state == VMS_TASK_PREEMPTED;
		prev->st = runnable ? T_RUNNABLE : T_SLEEPING;
		if (runnable)
			c->rq[c->nrq++] = prev;
		if (prev->v) {
			hmode(prev->v, ts, runnable ? VMS_H_PREEMPTED : VMS_H_HALTED);
			if (prev->v->vt) {
				if (runnable)
					prev->v->vt->preemptions++;
				else
					prev->v->vt->halts++;
			}
		} else if (runnable) {
			prev->left = c->cur_end > ts ? c->cur_end - ts : 0;
		}
	}
	c->cur = next;
	c->cur_in = c->occ_since = ts;
	if (!next)
		return;
	rq_remove(c, next);
	next->st = T_RUNNING;
	if (next->v) {
		vcpu_in(C, c, next->v, ts);
	} else {
		if (!next->left)
			next->left = cyc(C, vms_prng_exp(&C->x.rng, next->burst_ns));
		c->cur_end = ts + next->left;
	}
}

/* The CPU's next interrupt: the earliest sleeper's wake-up (*who), or the end of the running
 * thread's slice when others wait (*who NULL). UINT64_MAX: none. */
static uint64_t next_external(struct cloud *C, const struct hcpu *c, struct cthread **who)
{
	uint64_t t = UINT64_MAX;
	*who = NULL;
	for (uint32_t i = 0; i < c->n; i++)
		if (c->th[i]->st == T_SLEEPING && c->th[i]->wake_at < t) {
			t = c->th[i]->wake_at;
			*who = c->th[i];
		}
	if (c->cur && c->nrq) {
		uint64_t s = c->cur_in + cyc(C, 3e6);
		if (s <= t) {
			t = s;
			*who = NULL;
		}
	}
	return t;
}

static void handle_external(struct cloud *C, struct hcpu *c, uint64_t ext, struct cthread *who)
{
	struct vms_prng *r = &C->x.rng;
	uint64_t at = umax(ext, c->last + cyc(C, 200));
	if (!who) { /* the slice is over: the first waiting thread runs */
		do_switch(C, c, c->cur, VMS_TASK_PREEMPTED, c->rq[0], at);
		return;
	}
	vms_emit_wakeup(&C->x.host, c->id, at, c->cur ? &c->cur->task : &c->swapper, &who->task,
			c->id, 1);
	seen(C, c, at);
	if (who->v) {
		who->v->wake_t = at;
		if (who->v->vt)
			who->v->vt->wakeups++;
	}
	who->st = T_RUNNABLE;
	c->rq[c->nrq++] = who;
	if (!c->cur)
		do_switch(C, c, NULL, VMS_TASK_RUNNING, who,
			  at + cyc(C, 2000 + vms_prng_unit(r) * 4000));
	else if (who->preempts)
		do_switch(C, c, c->cur, VMS_TASK_PREEMPTED, who,
			  at + cyc(C, 800 + vms_prng_unit(r) * 600));
}

static void kvm_entry(struct cloud *C, struct hcpu *c, struct cvcpu *v, uint64_t t)
{
	vms_emit_kvm_entry(&C->x.host, c->id, t, &v->th.task, v->vcpu, v->rip, v->inject);
	seen(C, c, t);
	v->inject = 0;
	if (v->in_exit && v->vt)
		vms_synth_truth_add_exit(v->vt, v->exit_k->code, v->exit_k->name,
					 ns_of(C, t) - ns_of(C, v->exit_tsc));
	v->in_exit = false;
	hmode(v, t, VMS_H_GUEST);
	if (v->last_exit)
		vms_sched_stall(&v->g, v->last_exit, t);
}

static void kvm_exit(struct cloud *C, struct hcpu *c, struct cvcpu *v, uint64_t te,
		     const struct vms_exit_kind *k)
{
	uint64_t rip = k->code == 12 ? RIP_HLT
				     : 0xffffffff81000000ull +
					       (vms_prng_below(&C->x.rng, 0xe00000) & ~0x3ull);
	vms_emit_kvm_exit(&C->x.host, c->id, te, &v->th.task, v->vcpu, k->code, rip, 0, 0,
			  k->code == 1 ? INTR_LOCAL_TIMER : 0);
	seen(C, c, te);
	v->rip = rip + k->insn_len;
	v->in_exit = true;
	v->exit_k = k;
	v->exit_tsc = v->last_exit = te;
	hmode(v, te, VMS_H_VMM);
}

/* One guest-mode window of the running vCPU v and the exit that ends it; `ext` is the
 * CPU's next interrupt. */
static void vcpu_window(struct cloud *C, struct hcpu *c, struct cvcpu *v, uint64_t ext)
{
	struct vms_prng *r = &C->x.rng;
	uint64_t t = v->t_next;
	kvm_entry(C, c, v, t);
	if (v->ge && !v->gstopped && t >= C->gstop_at)
		guest_stop(v, t + cyc(C, 100));
	uint64_t now = t + cyc(C, 300);
	uint64_t te_host = t + cyc(C, 1500 + vms_prng_exp(r, v->window_ns));
	uint64_t hlt_at;
	for (;;) {
		hlt_at = v->g.cur < 0 ? now + cyc(C, 1500) : UINT64_MAX;
		uint64_t limit = umin(umin(te_host, ext), hlt_at);
		uint64_t ga = vms_sched_next(&v->g);
		if (ga >= limit)
			break;
		now = vms_sched_step(&v->g, umax(ga, now), &guest_ops, v) + cyc(C, 200);
	}
	const struct vms_exit_kind *k;
	uint64_t te;
	if (v->g.cur < 0 && hlt_at <= te_host && hlt_at <= ext) {
		k = vms_lane_exit_hlt();
		te = umax(hlt_at, now);
	} else if (ext <= te_host) {
		k = vms_lane_exit_irq(); /* the host's interrupt: a wake-up or the tick */
		te = umax(ext, now);
	} else {
		k = vms_lane_exit_busy(r);
		te = umax(te_host, now);
	}
	kvm_exit(C, c, v, te, k);
	if (k->code != 12) {
		v->t_next = te + vms_lane_exit_cost(&C->x, k);
		return;
	}
	/* HLT: KVM polls a while when nobody else wants the CPU, then blocks the thread */
	uint64_t w = vms_sched_next(&v->g);
	uint64_t ps = te + cyc(C, 250);
	hmode(v, ps, VMS_H_POLL);
	v->inject = INTR_LOCAL_TIMER;
	struct cthread *who;
	uint64_t ext2 = next_external(C, c, &who);
	if (w < te + cyc(C, 40000) && !c->nrq && ext2 > w + cyc(C, 1000)) {
		uint64_t wake = umax(w, te + cyc(C, 300));
		vms_emit_kvm_vcpu_wakeup(&C->x.host, c->id, wake, &v->th.task,
					 ns_of(C, wake) - ns_of(C, ps), 0);
		seen(C, c, wake);
		hmode(v, wake, VMS_H_VMM);
		v->t_next = wake + cyc(C, 400);
		return;
	}
	uint64_t b = te + cyc(C, 1200);
	v->halt_ps = ps;
	v->halt_off = b;
	v->halted_off = true;
	v->th.wake_at = umax(w, b + cyc(C, 500));
	do_switch(C, c, &v->th, VMS_TASK_INTERRUPTIBLE, c->nrq ? c->rq[0] : NULL, b);
}

/* Run host CPU c up to `until` (its last window may end past it). */
static void cpu_run(struct cloud *C, struct hcpu *c, uint64_t until)
{
	while (!C->x.host.rc) {
		struct cthread *who;
		uint64_t ext = next_external(C, c, &who);
		struct cthread *cur = c->cur;
		if (!cur || (!cur->v && ext < c->cur_end) || (cur->v && ext < cur->v->t_next)) {
			if (ext >= until)
				break;
			handle_external(C, c, ext, who);
		} else if (!cur->v) {
			if (c->cur_end >= until)
				break;
			uint64_t at = umax(c->cur_end, c->last + cyc(C, 200));
			cur->left = 0;
			cur->wake_at = at + cyc(C, vms_prng_exp(&C->x.rng, cur->sleep_ns));
			do_switch(C, c, cur, VMS_TASK_INTERRUPTIBLE, c->nrq ? c->rq[0] : NULL, at);
		} else {
			if (cur->v->t_next >= until)
				break;
			vcpu_window(C, c, cur->v, ext);
		}
	}
}

/* ---- the cast ---- */

static struct vms_task task(int32_t tid, const char *comm)
{
	struct vms_task t = { .tid = tid, .prio = 120 }; /* comm: the kernel's 15 bytes */
	memcpy(t.comm, comm, strnlen(comm, sizeof t.comm - 1));
	return t;
}

struct gthread_spec {
	const char *comm;
	double burst_ns, sleep_ns;
};
/* the traced guests serve requests; most untraced ones are light, every fourth CPU-bound */
static const struct gthread_spec traced_threads[] = {
	{ "postgres", 400e3, 700e3 }, { "nginx", 200e3, 900e3 }, { "kworker", 25e3, 2e6 } };
static const struct gthread_spec light_threads[] = {
	{ "java", 300e3, 4e6 }, { "kworker", 20e3, 5e6 }, { NULL, 0, 0 } };
static const struct gthread_spec bound_threads[] = {
	{ "ffmpeg", 8e6, 300e3 }, { "kworker", 20e3, 5e6 }, { NULL, 0, 0 } };

static bool cpu_bound_guest(uint32_t g, uint32_t traced)
{
	return g >= traced && g % 4 == 3;
}

static int setup(struct cloud *C,
		 const struct vms_synth_cloud_config *cc, const struct vms_synth_clocks *clk,
		 struct vms_error *err)
{
	struct vms_synth_ctx *x = &C->x;
	struct vms_synth_cloud_truth *tr = C->tr;
	uint64_t t0 = clk->t0;
	int rc = VMS_OK;
	/* host threads: a kworker on every CPU, a stress-ng on every odd one */
	for (uint32_t c = 0; c < C->ncpu; c++) {
		char name[32];
		snprintf(name, sizeof name, "kworker/%u:1", c);
		C->ht[C->nht++] = (struct cthread){ .task = task(KWORKER_TID0 + (int32_t)c, name),
						    .preempts = true, .burst_ns = 20e3, .sleep_ns = 4e6 };
		if (c % 2) {
			tr->noisy_tid[tr->nr_noisy_host] = STRESS_TID0 + (int32_t)c;
			tr->noisy_cpu[tr->nr_noisy_host++] = c;
			C->ht[C->nht++] = (struct cthread){ .task = task(STRESS_TID0 + (int32_t)c, "stress-ng"),
							    .preempts = true, .burst_ns = 1.5e6,
							    .sleep_ns = 20e6 };
		}
	}
	for (uint32_t i = 0; i < C->nht; i++) {
		struct cthread *h = &C->ht[i];
		h->st = T_SLEEPING;
		h->wake_at = t0 + cyc(C, 1000 + vms_prng_exp(&x->rng, h->sleep_ns));
		if (!rc)
			rc = vms_tdw_add_cmdline(x->host.w, h->task.tid, h->task.comm, err);
	}
	/* the guests' vCPU threads, the traced first */
	for (uint32_t g = 0; g < cc->guests && !rc; g++) {
		struct vms_synth_cloud_guest *G = &tr->guest[g];
		snprintf(G->name, sizeof G->name, "guest-%u", g);
		G->qemu_pid = QEMU_PID0 + (int32_t)(g * PID_STRIDE);
		G->first_tid = G->qemu_pid + 10;
		G->traced = g < cc->traced;
		G->cpu_bound = cpu_bound_guest(g, cc->traced);
		const struct gthread_spec *spec = G->traced ? traced_threads
						  : G->cpu_bound ? bound_threads : light_threads;
		int64_t goff = clk->off0 - (int64_t)g * 7777777;
		int32_t tids[VMS_SYNTH_CLOUD_MAX_VCPUS];
		for (uint32_t vi = 0; vi < cc->vcpus; vi++) {
			uint32_t j = g * cc->vcpus + vi;
			struct cvcpu *v = &C->v[j];
			char name[32];
			snprintf(name, sizeof name, "CPU %u/KVM", vi);
			v->th = (struct cthread){ .task = task(G->first_tid + (int32_t)vi, name), .v = v };
			tids[vi] = v->th.task.tid;
			v->C = C;
			v->guest = g;
			v->vcpu = vi;
			v->cpu = &C->cpu[j % C->ncpu];
			snprintf(name, sizeof name, "swapper/%u", vi);
			v->gidle = task(0, name);
			v->gtrace = task(1900 + (int32_t)vi, "trace-cmd");
			v->window_ns = G->traced ? 38000 : 250000;
			v->base = VMS_SYNTH_UNKNOWN;
			v->rip = RIP_HLT + 1;
			v->ratio = clk->ratio;
			v->frac = clk->frac;
			v->tsc_offset = goff - (int64_t)(vi ? 1000 + vms_prng_below(&x->rng, 4000) : 0);
			vms_sched_init(&v->g, &x->rng, x->cyc_per_ns, 3e6);
			for (int i = 0; i < 3 && spec[i].comm; i++) {
				char comm[32];
				if (!strcmp(spec[i].comm, "kworker"))
					snprintf(comm, sizeof comm, "kworker/%u:1", vi);
				else
					snprintf(comm, sizeof comm, "%s", spec[i].comm);
				struct vms_task t = task(1000 + (int32_t)(vi * 10 + (uint32_t)i), comm);
				vms_sched_add(&v->g, &t, spec[i].burst_ns, spec[i].sleep_ns, -1, t0);
				if (G->traced && !rc)
					rc = vms_tdw_add_cmdline(C->ge[g].w, t.tid, t.comm, err);
			}
			if (v->g.n)
				v->g.th[0].wake_at = t0; /* the guest soon tells what it runs */
			if (G->traced) {
				v->ge = &C->ge[g];
				v->vt = &G->vcpu[vi];
				*v->vt = (struct vms_synth_vcpu_truth){
					.vcpu = vi, .host_tid = v->th.task.tid, .host_cpu = v->cpu->id,
					.ts_offset = -v->tsc_offset, .ts_scaling = clk->ratio,
					.ts_frac = clk->frac };
			}
			if (!rc)
				rc = vms_tdw_add_cmdline(x->host.w, v->th.task.tid, v->th.task.comm, err);
		}
		if (!rc)
			rc = vms_tdw_add_cmdline(x->host.w, G->qemu_pid, "qemu-system-x86", err);
		vms_synth_vmm_start(x, t0, G->qemu_pid, tids, cc->vcpus);
	}
	if (rc)
		return rc;
	/* each CPU's threads: its vCPU threads in order, then its host threads */
	struct cthread **slot = C->slots;
	for (uint32_t c = 0; c < C->ncpu; c++) {
		struct hcpu *h = &C->cpu[c];
		h->th = slot;
		for (uint32_t j = c; j < C->nv; j += C->ncpu)
			h->th[h->n++] = &C->v[j].th;
		for (uint32_t i = 0; i < C->nht; i++)
			if (C->ht[i].task.tid == KWORKER_TID0 + (int32_t)c ||
			    C->ht[i].task.tid == STRESS_TID0 + (int32_t)c)
				h->th[h->n++] = &C->ht[i];
		slot += h->n;
		h->rq = slot;
		slot += h->n;
		h->tv = (struct cvcpu **)slot;
		slot += h->n;
		for (uint32_t i = 0; i < h->n; i++)
			if (h->th[i]->v && h->th[i]->v->vt)
				h->tv[h->ntv++] = h->th[i]->v;
		/* the first vCPU thread runs from t0, the others sleep in a halt until soon */
		for (uint32_t i = 0; i < h->n; i++) {
			struct cvcpu *v = h->th[i]->v;
			if (!v)
				continue;
			v->since = t0;
			if (i) {
				v->th.st = T_SLEEPING;
				v->th.wake_at = t0 + cyc(C, 1000 + vms_prng_unit(&x->rng) * 2e6);
			}
		}
		h->last = t0;
		if (h->n && h->th[0]->v)
			do_switch(C, h, NULL, VMS_TASK_RUNNING, h->th[0], t0);
	}
	return VMS_OK;
}

/* ---- the run ---- */

static int close_files(struct cloud *C, const struct vms_synth_cloud_config *cc,
		       const struct vms_synth_clocks *clk, uint64_t step, struct vms_error *err)
{
	struct vms_synth_ctx *x = &C->x;
	struct vms_synth_cloud_truth *tr = C->tr;
	int rc = vms_tdw_add_tsc2nsec(x->host.w, x->mult, x->shift, 0, err);
	for (uint32_t g = 0; g < cc->traced && !rc; g++) {
		int32_t tids[VMS_SYNTH_CLOUD_MAX_VCPUS];
		for (uint32_t vi = 0; vi < cc->vcpus; vi++)
			tids[vi] = tr->guest[g].first_tid + (int32_t)vi;
		rc = vms_tdw_add_guest(x->host.w, tr->guest[g].name, tr->guest[g].file.trace_id,
				       cc->vcpus, tids, err);
	}
	if (!rc) {
		rc = vms_tdw_close(x->host.w, err);
		x->host.w = NULL;
	}
	for (uint32_t g = 0; g < cc->traced && !rc; g++) {
		struct vms_emitter *e = &C->ge[g];
		uint64_t times[VMS_SYNTH_CLOUD_MAX_VCPUS][2], scal[VMS_SYNTH_CLOUD_MAX_VCPUS][2],
			fr[VMS_SYNTH_CLOUD_MAX_VCPUS][2];
		int64_t offs[VMS_SYNTH_CLOUD_MAX_VCPUS][2];
		struct vms_tdw_ts_cpu tc[VMS_SYNTH_CLOUD_MAX_VCPUS];
		for (uint32_t vi = 0; vi < cc->vcpus; vi++) {
			const struct cvcpu *v = &C->v[g * cc->vcpus + vi];
			times[vi][0] = vms_synth_to_guest(clk->t0 - step, v->ratio, v->frac, v->tsc_offset);
			times[vi][1] = vms_synth_to_guest(x->max_ref_tsc + step, v->ratio, v->frac,
							  v->tsc_offset);
			for (int i = 0; i < 2; i++) {
				offs[vi][i] = -v->tsc_offset;
				scal[vi][i] = v->ratio;
				fr[vi][i] = v->frac;
			}
			tc[vi] = (struct vms_tdw_ts_cpu){ 2, times[vi], offs[vi], scal[vi], fr[vi] };
		}
		rc = vms_tdw_add_tsc2nsec(e->w, x->mult, x->shift, 0, err);
		if (!rc)
			rc = vms_tdw_add_time_shift(e->w, clk->host_id, 0, cc->vcpus, tc, err);
		if (!rc) {
			rc = vms_tdw_close(e->w, err);
			e->w = NULL;
		}
	}
	return rc;
}

static void finish(struct cloud *C, uint64_t end)
{
	for (uint32_t c = 0; c < C->ncpu; c++) {
		struct hcpu *h = &C->cpu[c];
		const struct vms_task *occ = h->cur ? &h->cur->task : &h->swapper;
		for (uint32_t i = 0; i < h->ntv; i++) {
			struct cvcpu *v = h->tv[i];
			if (v->hmode == VMS_H_PREEMPTED && end > h->occ_since)
				vms_synth_truth_add_steal(v->vt, occ, ns_of(C, end) - ns_of(C, h->occ_since));
			account(v, end);
			if (v->halted_off) {
				/* no kvm_vcpu_wakeup tells that it polled first: its halt is
				 * known from the switch out, the time before it is handling */
				uint64_t poll = ns_of(C, v->halt_off) - ns_of(C, v->halt_ps);
				v->vt->ns[VMS_SYNTH_HALTED] -= poll;
				v->vt->ns[VMS_SYNTH_VMM] += poll;
				v->vt->halt_poll_ns -= poll;
			}
			if (!v->gstopped) {
				/* its guest stream ended at its last event: the base after it is
				 * unknown */
				for (int s = 0; s < VMS_SYNTH_NSTATES; s++) {
					v->vt->ns[s] -= v->tail[s];
					v->vt->ns[VMS_SYNTH_UNKNOWN] += v->tail[s];
				}
			}
		}
	}
}

static int alloc_truth(struct vms_synth_cloud_truth *tr, const struct vms_synth_cloud_config *cc)
{
	memset(tr, 0, sizeof *tr);
	tr->guests = cc->guests;
	tr->vcpus = cc->vcpus;
	tr->host_cpus = cc->host_cpus;
	tr->traced = cc->traced;
	tr->guest = calloc(cc->guests, sizeof *tr->guest);
	tr->noisy_tid = calloc(cc->host_cpus, sizeof *tr->noisy_tid);
	tr->noisy_cpu = calloc(cc->host_cpus, sizeof *tr->noisy_cpu);
	if (!tr->guest || !tr->noisy_tid || !tr->noisy_cpu)
		return -1;
	for (uint32_t g = 0; g < cc->traced; g++)
		if (!(tr->guest[g].vcpu = calloc(cc->vcpus, sizeof *tr->guest[g].vcpu)))
			return -1;
	return 0;
}

void vms_synth_cloud_truth_free(struct vms_synth_cloud_truth *t)
{
	if (!t)
		return;
	for (uint32_t g = 0; t->guest && g < t->guests; g++)
		free(t->guest[g].vcpu);
	free(t->guest);
	free(t->noisy_tid);
	free(t->noisy_cpu);
	memset(t, 0, sizeof *t);
}

int vms_synth_cloud_run(const struct vms_synth_config *cfg, const struct vms_synth_cloud_config *cc,
			struct vms_synth_cloud_truth *tr, struct vms_error *err)
{
	const char *why = vms_synth_cloud_check(cc);
	if (why)
		return vms_error_set(err, VMS_ERR_USAGE, "synth: %s", why);
	if (cfg->events < 1000)
		return vms_error_set(err, VMS_ERR_USAGE, "synth: --events must be at least 1000");
	if (cfg->format != VMS_SYNTH_TRACEDAT)
		return vms_error_set(err, VMS_ERR_USAGE, "synth: cloud-host writes trace.dat only");
	struct cloud *C = calloc(1, sizeof *C);
	uint32_t nv = cc->guests * cc->vcpus;
	size_t plen = strlen(cc->dir) + 32;
	char *path = malloc(plen);
	int rc = VMS_ERR_NOMEM;
	if (!C || !path || alloc_truth(tr, cc))
		goto nomem;
	C->tr = tr;
	C->ncpu = cc->host_cpus;
	C->nv = nv;
	C->cpu = calloc(C->ncpu, sizeof *C->cpu);
	C->v = calloc(nv, sizeof *C->v);
	C->ht = calloc(2 * (size_t)C->ncpu, sizeof *C->ht);
	C->slots = calloc(3 * ((size_t)nv + 2 * C->ncpu), sizeof *C->slots);
	C->ge = calloc(cc->traced ? cc->traced : 1, sizeof *C->ge);
	if (!C->cpu || !C->v || !C->ht || !C->slots || !C->ge)
		goto nomem;
	C->gstop_at = UINT64_MAX;
	struct vms_synth_ctx *x = &C->x;
	struct vms_synth_truth *head = &tr->head;
	x->truth = head;
	snprintf(head->scenario, sizeof head->scenario, "cloud-host");
	head->seed = cfg->seed;
	struct vms_synth_clocks clk;
	vms_synth_clocks_init(x, cfg, &clk);
	for (uint32_t c = 0; c < C->ncpu; c++) {
		C->cpu[c].id = c;
		char name[32];
		snprintf(name, sizeof name, "swapper/%u", c);
		C->cpu[c].swapper = task(0, name);
	}
	x->host = (struct vms_emitter){ .ft = &head->host, .err = err };
	snprintf(path, plen, "%s/host.dat", cc->dir);
	snprintf(head->host.path, sizeof head->host.path, "%s", path);
	head->host.trace_id = clk.host_id;
	head->host.nr_cpus = cc->host_cpus;
	rc = vms_synth_open_file(&x->host, path, cc->host_cpus, cfg, clk.host_id,
				 "Linux cloud-host 6.18.0 x86_64 (SIMULATED)", true, err);
	for (uint32_t g = 0; g < cc->traced && !rc; g++) {
		struct vms_synth_cloud_guest *G = &tr->guest[g];
		C->ge[g] = (struct vms_emitter){ .ft = &G->file, .err = err };
		snprintf(path, plen, "%s/guest-%u.dat", cc->dir, g);
		snprintf(G->file.path, sizeof G->file.path, "%s", path);
		G->file.trace_id = vms_prng_next(&x->rng) | 1;
		G->file.nr_cpus = cc->vcpus;
		rc = vms_synth_open_file(&C->ge[g], path, cc->vcpus, cfg, G->file.trace_id,
					 "Linux cloud-guest 6.1.0 x86_64 (SIMULATED)", false, err);
	}
	if (!rc)
		rc = setup(C, cc, &clk, err);
	if (rc)
		goto fail;

	uint64_t step = cyc(C, 1e6), until = clk.t0, next_progress = 1u << 20;
	for (;;) {
		until += step;
		for (uint32_t c = 0; c < C->ncpu; c++)
			cpu_run(C, &C->cpu[c], until);
		uint64_t total = head->host.total;
		rc = x->host.rc;
		for (uint32_t g = 0; g < cc->traced; g++) {
			total += tr->guest[g].file.total;
			if (!rc)
				rc = C->ge[g].rc;
		}
		if (rc)
			goto fail;
		if (cfg->progress && total >= next_progress) {
			cfg->progress(cfg->progress_ctx, total, cfg->events);
			next_progress = total + (1u << 20);
		}
		/* the guests' recordings stop a little before the host's */
		if (total >= cfg->events / 100 * 97 && C->gstop_at == UINT64_MAX)
			C->gstop_at = until;
		if (total >= cfg->events)
			break;
	}
	vms_synth_truth_window(x, clk.t0);
	finish(C, x->max_ref_tsc);
	rc = close_files(C, cc, &clk, step, err);
	goto fail; /* the same clean-up: the files are closed, discarding them is a no-op */
nomem:
	rc = vms_error_set(err, VMS_ERR_NOMEM, "synth: out of memory");
fail:
	if (C) {
		vms_tdw_discard(C->x.host.w);
		for (uint32_t g = 0; C->ge && g < cc->traced; g++)
			vms_tdw_discard(C->ge[g].w);
		free(C->cpu);
		free(C->v);
		free(C->ht);
		free(C->slots);
		free(C->ge);
	}
	free(C);
	free(path);
	return rc;
}

/* ---- the truth as JSON: the default scenario's members, a guest per traced guest, then the
 * untraced guests and the host's planted neighbours ---- */

int vms_synth_cloud_truth_json(const struct vms_synth_cloud_truth *t, FILE *f)
{
	vms_synth_truth_head_json(f, &t->head);
	fprintf(f, "  \"cloud\": {\"guests\": %u, \"vcpus\": %u, \"host_cpus\": %u, \"traced\": %u},\n",
		t->guests, t->vcpus, t->host_cpus, t->traced);
	fprintf(f, "  \"files\": {\n");
	vms_synth_file_json(f, "host", &t->head.host);
	for (uint32_t g = 0; g < t->traced; g++) {
		fprintf(f, ",\n");
		vms_synth_file_json(f, t->guest[g].name, &t->guest[g].file);
	}
	fprintf(f, "\n  },\n  \"guests\": [");
	for (uint32_t g = 0; g < t->traced; g++) {
		const struct vms_synth_cloud_guest *G = &t->guest[g];
		fprintf(f, "%s{\n    \"name\": \"%s\", \"trace_id\": \"0x%016llx\", \"qemu_pid\": %d, "
			"\"qemu_pid_source\": \"exec\",\n    \"vcpus\": [\n", g ? ", " : "", G->name,
			(unsigned long long)G->file.trace_id, G->qemu_pid);
		for (uint32_t v = 0; v < t->vcpus; v++)
			vms_synth_vcpu_json(f, &G->vcpu[v], v + 1 == t->vcpus);
		fprintf(f, "    ]\n  }");
	}
	fprintf(f, "],\n  \"untraced\": [");
	for (uint32_t g = t->traced; g < t->guests; g++) {
		const struct vms_synth_cloud_guest *G = &t->guest[g];
		fprintf(f, "%s\n    {\"name\": \"%s\", \"qemu_pid\": %d, \"first_tid\": %d, "
			"\"cpu_bound\": %s}", g > t->traced ? "," : "", G->name, G->qemu_pid,
			G->first_tid, G->cpu_bound ? "true" : "false");
	}
	fprintf(f, "\n  ],\n  \"noisy_host\": [");
	for (uint32_t i = 0; i < t->nr_noisy_host; i++)
		fprintf(f, "%s{\"tid\": %d, \"comm\": \"stress-ng\", \"cpu\": %u}", i ? ", " : "",
			t->noisy_tid[i], t->noisy_cpu[i]);
	fprintf(f, "]\n}\n");
	return ferror(f) ? VMS_ERR_IO : VMS_OK;
}
