/* The vCPU lane: see vcpu_lane.h. Times are host TSC cycles; the guest's events are written
 * at guest TSC = KVM's transform of their host time, and the truth places them at the exact
 * inverse of that guest TSC (what a correct reader computes). */
#include <string.h>

#include "synth/kernel_formats.h"
#include "synth/vcpu_lane.h"

/* VMX exit reasons of a busy guest, with relative weights and cost (min + exponential). */

static const struct vms_exit_kind busy_exits[] = {
	{ 1, "EXTERNAL_INTERRUPT", 30, 700, 1900, 0 },
	{ 32, "MSR_WRITE", 22, 450, 1000, 2 },
	{ 52, "PREEMPTION_TIMER", 12, 500, 1200, 0 },
	{ 48, "EPT_VIOLATION", 10, 1500, 4200, 0 },
	{ 49, "EPT_MISCONFIG", 9, 3000, 7500, 3 },
	{ 30, "IO_INSTRUCTION", 7, 6000, 15000, 1 },
	{ 40, "PAUSE_INSTRUCTION", 6, 600, 1400, 2 },
	{ 10, "CPUID", 4, 500, 1100, 2 },
};
#define NR_BUSY (sizeof busy_exits / sizeof busy_exits[0])
_Static_assert(NR_BUSY <= VMS_LANE_EXIT_KINDS, "hot RIP table");
static const struct vms_exit_kind hlt_exit = { 12, "HLT", 0, 0, 0, 1 };
static const struct vms_exit_kind ext_irq = { 1, "EXTERNAL_INTERRUPT", 0, 700, 1900, 0 };

#define RIP_HLT 0xffffffff81f4a2caull /* default_idle's hlt */
#define INTR_LOCAL_TIMER 0x800000ecu  /* valid, external interrupt, vector 0xec */

static inline uint64_t umax(uint64_t a, uint64_t b) { return a > b ? a : b; }
static inline uint64_t umin(uint64_t a, uint64_t b) { return a < b ? a : b; }

static uint64_t cyc(const struct vms_vcpu_lane *L, double ns)
{
	return vms_synth_cyc(L->x, ns);
}

/* ---- truth ---- */

int vms_lane_shown_state(uint8_t hmode, uint8_t base)
{
	switch (hmode) {
	case VMS_H_PREEMPTED:
		return VMS_SYNTH_PREEMPTED;
	case VMS_H_HALTED:
	case VMS_H_POLL:
	case VMS_H_HALT_ONCPU:
		return VMS_SYNTH_HALTED;
	case VMS_H_VMM:
		return VMS_SYNTH_VMM;
	default:
		return base;
	}
}

static int shown_state(const struct vms_vcpu_lane *L)
{
	return vms_lane_shown_state(L->hmode, L->base);
}

static void account(struct vms_vcpu_lane *L, uint64_t tsc)
{
	if (tsc <= L->since)
		return;
	uint64_t d = vms_synth_ns(L->x, tsc) - vms_synth_ns(L->x, L->since);
	int st = shown_state(L);
	L->vt->ns[st] += d;
	if (L->hmode == VMS_H_POLL)
		L->vt->halt_poll_ns += d;
	if (L->gcur >= 0) {
		struct vms_synth_gthread_truth *gt = &L->x->truth->gthread[L->gcur];
		if (st == VMS_SYNTH_RUNNING)
			gt->running_ns += d;
		else if (st == VMS_SYNTH_VMM)
			gt->vmm_ns += d;
		else if (st == VMS_SYNTH_PREEMPTED)
			gt->preempted_ns += d;
		else if (st == VMS_SYNTH_HALTED)
			gt->halted_ns += d;
	}
	L->since = tsc;
}

static void set_hmode(struct vms_vcpu_lane *L, uint64_t tsc, uint8_t mode)
{
	account(L, tsc);
	L->hmode = mode;
}

void vms_synth_truth_add_exit(struct vms_synth_vcpu_truth *vt, uint32_t reason, const char *name,
			      uint64_t ns)
{
	uint32_t i;
	for (i = 0; i < vt->nr_exits; i++)
		if (vt->exits[i].reason == reason)
			break;
	if (i == vt->nr_exits) {
		if (i == VMS_SYNTH_MAX_REASONS)
			return;
		vt->exits[i] = (struct vms_synth_exit_stat){ .reason = reason, .name = name };
		vt->nr_exits++;
	}
	vt->exits[i].count++;
	vt->exits[i].total_ns += ns;
}

static const char *exit_name(uint32_t code)
{
	if (code == hlt_exit.code)
		return hlt_exit.name;
	for (size_t i = 0; i < NR_BUSY; i++)
		if (busy_exits[i].code == code)
			return busy_exits[i].name;
	return "?";
}

void vms_synth_truth_add_steal(struct vms_synth_vcpu_truth *vt, const struct vms_task *t,
			       uint64_t ns)
{
	uint32_t i;
	for (i = 0; i < vt->nr_steal; i++)
		if (vt->steal[i].tid == t->tid)
			break;
	if (i == vt->nr_steal) {
		if (i == VMS_SYNTH_MAX_STEAL)
			return;
		vt->steal[i] = (struct vms_synth_steal){ .tid = t->tid };
		memcpy(vt->steal[i].comm, t->comm, sizeof vt->steal[i].comm);
		vt->nr_steal++;
	}
	vt->steal[i].ns += ns;
}

static void add_steal(struct vms_vcpu_lane *L, const struct vms_task *t, uint64_t a, uint64_t b)
{
	vms_synth_truth_add_steal(L->vt, t, vms_synth_ns(L->x, b) - vms_synth_ns(L->x, a));
}

const struct vms_exit_kind *vms_lane_exit_hlt(void) { return &hlt_exit; }
const struct vms_exit_kind *vms_lane_exit_irq(void) { return &ext_irq; }

const struct vms_exit_kind *vms_lane_exit_busy(struct vms_prng *r)
{
	uint64_t pick = vms_prng_below(r, 100), acc = 0;
	for (size_t i = 0; i < NR_BUSY; i++) {
		acc += busy_exits[i].weight;
		if (pick < acc)
			return &busy_exits[i];
	}
	return &busy_exits[0];
}

uint64_t vms_lane_exit_cost(struct vms_synth_ctx *x, const struct vms_exit_kind *k)
{
	double cost = k->min_ns + vms_prng_exp(&x->rng, k->mean_ns - k->min_ns);
	if (k->code == 48 && vms_prng_unit(&x->rng) < 0.03)
		cost += 40000; /* a page to fault in */
	return vms_synth_cyc(x, cost);
}

/* ---- host events ---- */

static void h_switch(struct vms_vcpu_lane *L, uint64_t ts, const struct vms_task *prev,
		     int64_t state, const struct vms_task *next)
{
	vms_emit_switch(&L->x->host, L->cpu, ts, prev, state, next);
	vms_synth_seen(L->x, ts);
}

static void h_wakeup(struct vms_vcpu_lane *L, uint64_t ts, const struct vms_task *waker,
		     const struct vms_task *woken, int hardirq)
{
	vms_emit_wakeup(&L->x->host, L->cpu, ts, waker, woken, L->cpu, hardirq);
	vms_synth_seen(L->x, ts);
}

/* A guest event at host time `ts`, in the guest's TSC (vmsync: no truth side effects). */
static uint64_t to_guest(const struct vms_vcpu_lane *L, uint64_t ts)
{
	return vms_synth_to_guest(ts, L->ratio, L->frac, L->tsc_offset);
}

static void kvm_entry(struct vms_vcpu_lane *L, uint64_t ts)
{
	struct vms_synth_ctx *x = L->x;
	/* not in the first windows: the guest's coverage starts with its own events, as in trace.dat */
	bool sync = x->vmsync && L->nwin++ % 32 == 16 && !L->sync_pending && !L->gstopped;
	if (sync)
		vms_emit_vmsync(&x->host, L->cpu, ts, &L->vthr, VMS_CE_HG_HOST, x->vm_uid, ++x->cnt_hg);
	vms_emit_kvm_entry(&L->x->host, L->cpu, ts, &L->vthr, L->vcpu, L->rip, L->inject);
	vms_synth_seen(L->x, ts);
	if (sync) {
		vms_emit_vmsync(&x->guest, L->vcpu, to_guest(L, ts + cyc(L, 100)), &L->gidle,
				VMS_CE_HG_GUEST, x->vm_uid, x->cnt_hg);
		L->sync_pending = true;
	}
	L->inject = 0;
	if (L->in_exit) {
		vms_synth_truth_add_exit(L->vt, L->exit_reason, exit_name(L->exit_reason),
			 vms_synth_ns(L->x, ts) - vms_synth_ns(L->x, L->exit_tsc));
		L->in_exit = false;
	}
	set_hmode(L, ts, VMS_H_GUEST);
	L->entry_tsc = ts;
}

static void kvm_exit(struct vms_vcpu_lane *L, uint64_t ts, const struct vms_exit_kind *k)
{
	struct vms_prng *r = &L->x->rng;
	uint64_t info1 = 0, info2 = 0;
	uint32_t intr = 0;
	/* a guest exits at a few hot instructions per reason (wrmsr in native_write_msr, the
	 * MMIO accessors, ...): pick one of the lane's own */
	size_t ki = 0;
	while (ki + 1 < NR_BUSY && busy_exits[ki].code != k->code)
		ki++;
	uint64_t rip = k->code == hlt_exit.code ? RIP_HLT
						: L->hot_rip[ki][vms_prng_below(r, VMS_LANE_HOT_RIPS)];
	switch (k->code) {
	case 1:
		intr = INTR_LOCAL_TIMER;
		break;
	case 48: {
		static const uint64_t qual[] = { 0x181, 0x182, 0x184, 0x283 };
		info1 = qual[vms_prng_below(r, 4)];
		break;
	}
	case 30:
		/* exit qualification: port << 16 | direction (8 = in) | size - 1 */
		info1 = vms_prng_below(r, 2) ? 0x03f80000ull : 0x0cfc000bull;
		break;
	default:
		break;
	}
	struct vms_synth_ctx *x = L->x;
	if (L->sync_pending && L->gstopped)
		L->sync_pending = false; /* the guest stopped recording: no reply */
	if (L->sync_pending)
		vms_emit_vmsync(&x->guest, L->vcpu, to_guest(L, ts - cyc(L, 100)), &L->gidle,
				VMS_CE_GH_GUEST, x->vm_uid, ++x->cnt_gh);
	vms_emit_kvm_exit(&L->x->host, L->cpu, ts, &L->vthr, L->vcpu, k->code, rip, info1, info2, intr);
	vms_synth_seen(L->x, ts);
	if (L->sync_pending) {
		vms_emit_vmsync(&x->host, L->cpu, ts + cyc(L, 100), &L->vthr, VMS_CE_GH_HOST,
				x->vm_uid, x->cnt_gh);
		L->sync_pending = false;
	}
	L->rip = rip + k->insn_len;
	L->in_exit = true;
	L->exit_reason = k->code;
	L->exit_tsc = ts;
	set_hmode(L, ts, VMS_H_VMM);
	if (L->have_sample) {
		L->sample.exit_tsc = ts;
		struct vms_synth_truth *t = L->x->truth;
		if (t->nr_samples < VMS_SYNTH_MAX_SAMPLES)
			t->sample[t->nr_samples++] = L->sample;
		L->have_sample = false;
	}
}

/* ---- guest events (from the guest's scheduler) ---- */

static uint64_t guest_time(struct vms_vcpu_lane *L, uint64_t host_tsc, uint64_t *ref)
{
	uint64_t g = vms_synth_to_guest(host_tsc, L->ratio, L->frac, L->tsc_offset);
	*ref = vms_synth_to_host(g, L->ratio, L->frac, L->tsc_offset);
	vms_synth_seen(L->x, *ref);
	/* Sample windows 1, 2, 4, 8, ...: spread over the trace, a few per vCPU. */
	if (L->counted_entry != L->entry_tsc) {
		L->counted_entry = L->entry_tsc;
		L->windows++;
		if (!(L->windows & (L->windows - 1)) && !L->have_sample) {
			L->sample = (struct vms_synth_sync_sample){ .vcpu = L->vcpu, .guest_tsc = g,
								    .host_tsc = *ref,
								    .entry_tsc = L->entry_tsc };
			L->have_sample = true;
		}
	}
	return g;
}

static void g_switch(void *ctx, uint64_t ts, const struct vms_sthread *prev, int64_t state,
		     const struct vms_sthread *next)
{
	struct vms_vcpu_lane *L = ctx;
	if (L->gstopped)
		return; /* the guest's recording stopped: nothing more is written or known */
	uint64_t ref;
	uint64_t g = guest_time(L, ts, &ref);
	vms_emit_switch(&L->x->guest, L->vcpu, g, prev ? &prev->task : &L->gidle, state,
			next ? &next->task : &L->gidle);
	account(L, ref);
	L->base = next ? VMS_SYNTH_RUNNING : VMS_SYNTH_IDLE;
	L->gcur = next ? next->truth : -1;
}

static void g_wakeup(void *ctx, uint64_t ts, const struct vms_sthread *waker,
		     const struct vms_sthread *woken)
{
	struct vms_vcpu_lane *L = ctx;
	if (L->gstopped)
		return;
	uint64_t ref;
	uint64_t g = guest_time(L, ts, &ref);
	vms_emit_wakeup(&L->x->guest, L->vcpu, g, waker ? &waker->task : &L->gidle, &woken->task,
			L->vcpu, waker == NULL);
}

/* The guest's recording stops (trace-cmd's agent is woken to stop it): its last event on
 * this vCPU, in guest mode. After it nothing is known of the guest's side: the base state
 * and the current thread are unknown (vm-analysis.md: nothing is known outside a trace's
 * own time). */
static void guest_stop(struct vms_vcpu_lane *L, uint64_t ts)
{
	uint64_t ref;
	uint64_t g = guest_time(L, ts, &ref);
	vms_emit_wakeup(&L->x->guest, L->vcpu, g, &L->gidle, &L->gtrace, L->vcpu, 1);
	account(L, ref);
	L->base = VMS_SYNTH_UNKNOWN;
	L->gcur = -1;
	L->gstopped = true;
	L->vt->guest_end_ns = vms_synth_ns(L->x, ref);
}

/* kvm_vcpu_wakeup at `wake`: the halt began at `start` (polling first), `waited` when the
 * thread blocked. `ns` is exact in host ns, as a reader computes it. */
static void vcpu_wakeup(struct vms_vcpu_lane *L, uint64_t wake, uint64_t start, int waited)
{
	vms_emit_kvm_vcpu_wakeup(&L->x->host, L->cpu, wake, &L->vthr,
				 vms_synth_ns(L->x, wake) - vms_synth_ns(L->x, start), waited);
	vms_synth_seen(L->x, wake);
}

static const struct vms_sched_ops guest_ops = { g_switch, g_wakeup };

/* ---- the neighbour ---- */

static uint64_t noisy_sleep(struct vms_vcpu_lane *L, uint64_t now)
{
	/* storms of activity alternate with calm phases */
	bool storm = !(((now - L->noisy_t0 + L->noisy_phase_off) / L->noisy_phase_len) & 1);
	return cyc(L, 200e3 + vms_prng_exp(&L->x->rng, storm ? 4e6 : 80e6));
}

static uint64_t noisy_burst(struct vms_vcpu_lane *L)
{
	double ns = 50e3 + vms_prng_exp(&L->x->rng, 2.5e6);
	return cyc(L, ns > 10e6 ? 10e6 : ns);
}

/* The neighbour's timer fires at `a` while the vCPU thread is in the hypervisor: it is woken,
 * preempts the vCPU thread, runs, and hands the CPU back. Returns the switch-in time. */
static uint64_t preempt(struct vms_vcpu_lane *L, uint64_t a)
{
	struct vms_prng *r = &L->x->rng;
	h_wakeup(L, a, &L->vthr, &L->noisy, 1);
	uint64_t b = a + cyc(L, 800 + vms_prng_unit(r) * 600);
	h_switch(L, b, &L->vthr, VMS_TASK_PREEMPTED, &L->noisy);
	set_hmode(L, b, VMS_H_PREEMPTED);
	L->vt->preemptions++;
	uint64_t end = b + noisy_burst(L);
	add_steal(L, &L->noisy, b, end);
	uint64_t in = end;
	if (vms_prng_unit(r) < 0.15) {
		/* a kworker queued meanwhile runs before the vCPU thread gets its CPU back */
		h_wakeup(L, b + (end - b) / 2, &L->noisy, &L->kworker, 0);
		h_switch(L, end, &L->noisy, VMS_TASK_INTERRUPTIBLE, &L->kworker);
		in = end + cyc(L, 5000 + vms_prng_unit(r) * 15000);
		add_steal(L, &L->kworker, end, in);
		h_switch(L, in, &L->kworker, VMS_TASK_INTERRUPTIBLE, &L->vthr);
	} else {
		h_switch(L, end, &L->noisy, VMS_TASK_INTERRUPTIBLE, &L->vthr);
	}
	set_hmode(L, in, VMS_H_VMM);
	L->noisy_wake = end + noisy_sleep(L, end);
	return in;
}

/* HLT with nothing to do soon: the vCPU thread blocks until the guest's next timer. The CPU
 * idles, or runs the neighbour. Returns the time the thread is back on the CPU. */
static uint64_t halt(struct vms_vcpu_lane *L, uint64_t x, uint64_t w)
{
	struct vms_prng *r = &L->x->rng;
	h_switch(L, x, &L->vthr, VMS_TASK_INTERRUPTIBLE, &L->swapper);
	set_hmode(L, x, VMS_H_HALTED);
	L->vt->halts++;
	for (;;) {
		uint64_t nd = L->noisy_wake;
		if (nd != UINT64_MAX && nd + cyc(L, 5000) < w) {
			uint64_t a = umax(nd, x + cyc(L, 500));
			h_wakeup(L, a, &L->swapper, &L->noisy, 1);
			uint64_t b = a + cyc(L, 2000 + vms_prng_unit(r) * 2000);
			h_switch(L, b, &L->swapper, VMS_TASK_RUNNING, &L->noisy);
			uint64_t end = b + noisy_burst(L);
			L->noisy_wake = end + noisy_sleep(L, end);
			uint64_t wv = umax(w, b + cyc(L, 500));
			if (end <= wv) {
				h_switch(L, end, &L->noisy, VMS_TASK_INTERRUPTIBLE, &L->swapper);
				x = end;
				continue;
			}
			/* the vCPU's timer fires while the neighbour runs: it waits for the CPU */
			h_wakeup(L, wv, &L->noisy, &L->vthr, 1);
			L->vt->wakeups++;
			h_switch(L, end, &L->noisy, VMS_TASK_INTERRUPTIBLE, &L->vthr);
			set_hmode(L, end, VMS_H_HALT_ONCPU);
			L->vt->runq_latency_ns += vms_synth_ns(L->x, end) - vms_synth_ns(L->x, wv);
			return end;
		}
		uint64_t a = umax(w, x + cyc(L, 500));
		h_wakeup(L, a, &L->swapper, &L->vthr, 1);
		L->vt->wakeups++;
		uint64_t b = a + cyc(L, 2000 + vms_prng_unit(r) * 4000);
		h_switch(L, b, &L->swapper, VMS_TASK_RUNNING, &L->vthr);
		set_hmode(L, b, VMS_H_HALT_ONCPU);
		L->vt->runq_latency_ns += vms_synth_ns(L->x, b) - vms_synth_ns(L->x, a);
		return b;
	}
}

/* ---- the lane ---- */

void vms_vcpu_lane_init(struct vms_vcpu_lane *L, struct vms_synth_ctx *x,
			struct vms_synth_vcpu_truth *vt, uint32_t vcpu, uint32_t cpu, uint64_t t0)
{
	memset(L, 0, sizeof *L);
	L->x = x;
	L->vt = vt;
	L->vcpu = vcpu;
	L->cpu = cpu;
	L->gcur = -1;
	L->base = VMS_SYNTH_UNKNOWN;
	L->stop_at = UINT64_MAX;
	L->gstop_at = UINT64_MAX;
	L->rip = 0xffffffff81f4a2cbull;
	vms_sched_init(&L->g, &x->rng, x->cyc_per_ns, 3e6);
	L->noisy_wake = UINT64_MAX;
	L->noisy_phase_len = vms_synth_cyc(x, 700e6);
	L->noisy_phase_off = vms_synth_cyc(x, 350e6 * vcpu); /* both start in a storm */
	L->noisy_t0 = t0;
	if (x->noisy)
		L->noisy_wake = t0 + vms_synth_cyc(x, 1e6 + vms_prng_exp(&x->rng, 3e6));
	L->counted_entry = UINT64_MAX;
	for (size_t i = 0; i < NR_BUSY; i++)
		for (int j = 0; j < VMS_LANE_HOT_RIPS; j++)
			L->hot_rip[i][j] = 0xffffffff81000000ull + (vms_prng_below(&x->rng, 0xe00000) & ~0x3ull);
}

void vms_vcpu_lane_add_thread(struct vms_vcpu_lane *L, const struct vms_task *t, double burst_ns,
			      double sleep_ns, int32_t truth)
{
	vms_sched_add(&L->g, t, burst_ns, sleep_ns, truth, L->t);
}

void vms_vcpu_lane_start(struct vms_vcpu_lane *L, uint64_t t0)
{
	L->since = t0;
	h_switch(L, t0, &L->swapper, VMS_TASK_RUNNING, &L->vthr);
	/* the guest's first thread is due at once, so the trace soon tells what the guest runs */
	if (L->g.n)
		L->g.th[0].wake_at = t0;
	L->t = t0 + cyc(L, 2500);
}

void vms_vcpu_lane_cycle(struct vms_vcpu_lane *L)
{
	struct vms_prng *r = &L->x->rng;
	uint64_t t = L->t;
	kvm_entry(L, t);
	if (!L->gstopped && (t >= L->gstop_at || t >= L->stop_at))
		guest_stop(L, t + cyc(L, 100));
	if (t >= L->stop_at) {
		L->done = true;
		return;
	}

	/* guest mode: the guest's scheduler acts until something makes the vCPU exit */
	uint64_t now = t + cyc(L, 300);
	uint64_t te_host = t + cyc(L, 1500 + vms_prng_exp(r, 38000));
	uint64_t hlt_at;
	for (;;) {
		hlt_at = L->g.cur < 0 ? now + cyc(L, 1500) : UINT64_MAX;
		uint64_t limit = umin(umin(te_host, L->noisy_wake), hlt_at);
		uint64_t ga = vms_sched_next(&L->g);
		if (ga >= limit)
			break;
		now = vms_sched_step(&L->g, umax(ga, now), &guest_ops, L) + cyc(L, 200);
	}

	const struct vms_exit_kind *k;
	bool by_noisy = false;
	uint64_t te;
	if (L->g.cur < 0 && hlt_at <= te_host && hlt_at <= L->noisy_wake) {
		k = &hlt_exit;
		te = umax(hlt_at, now);
	} else if (L->noisy_wake <= te_host) {
		k = &ext_irq; /* the host's timer interrupt for the neighbour */
		te = umax(L->noisy_wake, now);
		by_noisy = true;
	} else {
		k = vms_lane_exit_busy(r);
		te = umax(te_host, now);
	}
	kvm_exit(L, te, k);

	/* the hypervisor */
	uint64_t x;
	if (k == &hlt_exit) {
		/* KVM handles the HLT, then polls for a while before it blocks the thread;
		 * kvm_vcpu_wakeup tells when the halt ended and how long it lasted */
		uint64_t w = vms_sched_next(&L->g);
		uint64_t ps = te + cyc(L, 250);
		set_hmode(L, ps, VMS_H_POLL);
		if (w < te + cyc(L, 40000)) {
			/* halt polling finds the guest's timer due (or a task wanting the CPU) */
			uint64_t wake = umax(w, te + cyc(L, 300));
			if (L->noisy_wake < wake)
				wake = umax(L->noisy_wake, ps + cyc(L, 50));
			vcpu_wakeup(L, wake, ps, 0);
			set_hmode(L, wake, VMS_H_VMM);
			x = wake + cyc(L, 400);
			if (L->noisy_wake < x)
				x = preempt(L, umax(L->noisy_wake, wake + cyc(L, 50))) + cyc(L, 500);
		} else {
			uint64_t back = halt(L, te + cyc(L, 1200), w);
			uint64_t wake = back + cyc(L, 300);
			vcpu_wakeup(L, wake, ps, 1);
			set_hmode(L, wake, VMS_H_VMM);
			x = wake + cyc(L, 1200);
		}
		L->inject = INTR_LOCAL_TIMER;
	} else {
		x = te + vms_lane_exit_cost(L->x, k);
		if (by_noisy || L->noisy_wake < x) {
			uint64_t a = by_noisy ? te + cyc(L, 400) : umax(L->noisy_wake, te + cyc(L, 200));
			x = preempt(L, a) + cyc(L, 500);
		}
	}
	vms_sched_stall(&L->g, te, x);
	L->t = x;
}

void vms_vcpu_lane_finish(struct vms_vcpu_lane *L, uint64_t end_tsc)
{
	account(L, end_tsc);
}
