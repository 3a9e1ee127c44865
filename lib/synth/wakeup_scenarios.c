/* The wake-up scenarios (wakeup_scenarios.h). The machines are the default scenario's: a
 * host with 4 CPUs whose CPU 1 + v runs the thread of vCPU v ("CPU v/KVM" of QEMU 4242), a
 * guest "demo-guest" with 2 vCPUs, TSC clocks with TSC2NSEC, GUEST and TIME_SHIFT options.
 * Time is cut into episodes; each scripts both vCPUs in order of time and plants a few guest
 * thread wake-ups. While it writes an event, the script says what a thread woken onto that
 * vCPU would now be waiting for (the cause and its culprit, include/vmscope/latency.h): that
 * is the vCPU's history. When the episode ends, each wake-up's [wakeup, run) is split over
 * its vCPU's history: that split is the truth, from what was planted, never from the
 * analysis. Per scenario (what the tail is made of):
 *   noisy-wakeups   nginx on vCPU 0, woken from the guest's idle task; a host stress-ng
 *                   preempts the vCPU thread (a kworker after it now and then): preempted
 *   exit-storm      a fio thread rings a virtio doorbell: 8,000 EPT_MISCONFIG exits in one
 *                   100 ms window from virtio_queue_notify+0x2a (the guest trace carries a
 *                   kallsyms section); nginx, woken meanwhile, waits behind fio and the exits
 *   halted-wakeup   haproxy on vCPU 0 wakes nginx on the halted vCPU 1 (IPI): halt polling
 *                   catches it, or the host wakes the blocked thread, late when a host kworker
 *                   holds the CPU
 *   oversubscribed  three CPU-bound guest threads and nginx on two vCPUs: nginx waits for
 *                   cc1's time slice (guest-runqueue), timer exits between
 *   cross-vcpu      haproxy on vCPU 0 wakes nginx on vCPU 1, which is halted, or running
 *                   java, or in a long port I/O exit that java made
 * Memory is bounded by an episode (the storm's is the largest). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/tracedat_writer.h"
#include "synth/kernel_formats.h"
#include "synth/wakeup_scenarios.h"
#include "core/grow.h"

const char *const vms_synth_wakeup_scenarios[] = { "noisy-wakeups", "exit-storm",
						   "halted-wakeup", "oversubscribed",
						   "cross-vcpu", NULL };

enum scn { NOISY = 0, STORM, HALTED, OVERSUB, CROSS };

/* as the default scenario's (synth.c) */
#define NR_VCPUS 2
#define TSC_SHIFT 31
#define QEMU_PID 4242

/* guest code addresses, and the kallsyms lines that name them */
#define RIP_HLT 0xffffffff81f4a2caull          /* default_idle+0x1a */
#define RIP_WRMSR 0xffffffff810a3f44ull        /* native_write_msr+0x4 */
#define RIP_NOTIFY 0xffffffff8123458aull       /* virtio_queue_notify+0x2a */
#define RIP_INB 0xffffffff81061a13ull          /* native_io_in+0x3 */
#define RIP_USER 0x00005566778899aaull         /* user space */
static const char guest_kallsyms[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81061a10 T native_io_in\n"
	"ffffffff810a3f40 T native_write_msr\n"
	"ffffffff81234560 T virtio_queue_notify\n"
	"ffffffff812345e0 t vring_interrupt\n"
	"ffffffff81f4a2b0 T default_idle\n"
	"ffffffff81f4a300 T default_idle_call\n";

/* VMX exit reasons used here */
#define X_EXT_INT 1
#define X_HLT 12
#define X_IO 30
#define X_MSR_WRITE 32
#define X_EPT_MISCONFIG 49
#define STORM_EXITS 8000
#define STORM_WINDOW_NS 100000000ull   /* findings.c's exit-storm window */

#define MAX_CULPRITS 32

const char *vms_synth_cause_name(enum vms_synth_cause c)
{
	static const char *const n[VMS_SYNTH_NCAUSES] = { "guest-runqueue", "preempted", "exits",
							   "halted-wakeup", "unknown" };
	return (unsigned)c < VMS_SYNTH_NCAUSES ? n[c] : "?";
}

bool vms_synth_is_wakeup_scenario(const char *name)
{
	for (const char *const *s = vms_synth_wakeup_scenarios; *s; s++)
		if (!strcmp(*s, name))
			return true;
	return false;
}

/* What a thread woken onto the vCPU waits for, from t (reference ns) on. */
struct seg {
	uint64_t t;
	uint8_t cause, culprit;
};

struct lane {
	struct ws *w;
	uint32_t vcpu, cpu;
	struct vms_task vthr, swapper, gidle;
	int64_t tsc_offset;
	uint64_t t;                    /* host TSC of the lane's last event */
	const struct vms_task *gcur;   /* the guest thread on the vCPU, NULL: idle */
	uint32_t exit_reason;          /* the exit the thread is in (when not in guest mode) */
	uint64_t poll_start;           /* the HLT's halt began (host TSC) */
	struct seg *h;                 /* this episode's history */
	uint32_t n, cap;
	uint64_t steal_ns[2];          /* stress-ng, kworker (noisy-wakeups) */
};

struct planted {
	const struct vms_task *who;
	uint32_t vcpu;
	int32_t waker;
	uint64_t tw, tr;               /* reference ns */
};

struct ws {
	struct vms_synth_ctx x;
	const struct vms_synth_config *cfg;
	struct vms_synth_truth *tr;
	enum scn scn;
	struct lane lane[NR_VCPUS];
	uint64_t ratio;
	uint32_t frac;
	char culprit[MAX_CULPRITS][48];
	uint32_t nculprits;
	struct planted *pl;
	uint32_t npl, cappl;
	bool oom;
	bool stormed;
	uint64_t storm_exits;
};

/* the cast */
static struct vms_task task(int32_t tid, const char *comm)
{
	struct vms_task t = { .tid = tid, .prio = 120 };
	snprintf(t.comm, sizeof t.comm, "%s", comm);
	return t;
}

static struct vms_task nginx, haproxy, fio, cc1a, cc1b, java, gkw[NR_VCPUS];
static struct vms_task stress, kworker1, kworker2;

static void cast(void)
{
	nginx = task(1301, "nginx");
	haproxy = task(1201, "haproxy");
	fio = task(1401, "fio");
	cc1a = task(1501, "cc1");
	cc1b = task(1502, "cc1");
	java = task(1601, "java");
	gkw[0] = task(31, "kworker/0:1");
	gkw[1] = task(58, "kworker/1:2");
	stress = task(5101, "stress-ng");
	kworker1 = task(71, "kworker/1:1");
	kworker2 = task(76, "kworker/2:1");
}

/* ---- clocks ---- */
static uint64_t H(const struct ws *w, uint64_t tsc)
{
	return vms_synth_ns(&w->x, tsc);
}

static uint64_t to_guest(const struct lane *L, uint64_t tsc)
{
	return vms_synth_to_guest(tsc, L->w->ratio, L->w->frac, L->tsc_offset);
}

/* a guest event's reference time: the exact inverse of its guest TSC */
static uint64_t G(const struct lane *L, uint64_t tsc)
{
	return H(L->w, vms_synth_to_host(to_guest(L, tsc), L->w->ratio, L->w->frac, L->tsc_offset));
}

static uint64_t cy(const struct ws *w, double ns)
{
	return vms_synth_cyc(&w->x, ns);
}

static double U(struct ws *w, double lo, double hi)
{
	return lo + vms_prng_unit(&w->x.rng) * (hi - lo);
}

static bool chance(struct ws *w, double p)
{
	return vms_prng_unit(&w->x.rng) < p;
}

/* ---- the history: what a waiter waits for ---- */
static uint8_t culprit(struct ws *w, const char *fmt, ...)
{
	char b[48];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b, sizeof b, fmt, ap);
	va_end(ap);
	for (uint32_t i = 0; i < w->nculprits; i++)
		if (!strcmp(w->culprit[i], b))
			return (uint8_t)i;
	if (w->nculprits == MAX_CULPRITS)
		return 0; /* not reached: the cast is small */
	memcpy(w->culprit[w->nculprits], b, sizeof b);
	return (uint8_t)w->nculprits++;
}

/* The analysis' rule for one instant holds here too: a change at the same instant replaces
 * the last, and a change to what was already waited for is none. */
static void seg(struct lane *L, uint64_t t, enum vms_synth_cause c, uint8_t who)
{
	if (L->n && L->h[L->n - 1].cause == c && L->h[L->n - 1].culprit == who)
		return;
	if (L->n && L->h[L->n - 1].t == t) {
		L->h[L->n - 1] = (struct seg){ t, (uint8_t)c, who };
		return;
	}
	if (L->n == L->cap) {
		struct seg *nh = vms_grow(L->h, &L->cap, sizeof *nh, 256);
		if (!nh) {
			L->w->oom = true;
			return;
		}
		L->h = nh;
	}
	L->h[L->n++] = (struct seg){ t, (uint8_t)c, who };
}

static uint8_t guest_culprit(struct lane *L)
{
	if (!L->gcur)
		return culprit(L->w, "the guest's idle task");
	return culprit(L->w, "%s (tid %d)", L->gcur->comm, L->gcur->tid);
}

static const char *exit_name(uint32_t r)
{
	switch (r) {
	case X_EXT_INT: return "EXTERNAL_INTERRUPT";
	case X_HLT: return "HLT";
	case X_IO: return "IO_INSTRUCTION";
	case X_MSR_WRITE: return "MSR_WRITE";
	case X_EPT_MISCONFIG: return "EPT_MISCONFIG";
	default: return "?";
	}
}

/* ---- events, each with what it changes for a waiter ---- */
static void at(struct lane *L, uint64_t t)
{
	L->t = t;
	vms_synth_seen(&L->w->x, t);
}

static void entry(struct lane *L, uint64_t t)
{
	vms_emit_kvm_entry(&L->w->x.host, L->cpu, t, &L->vthr, L->vcpu, 0, 0);
	at(L, t);
	seg(L, H(L->w, t), VMS_SYNTH_CAUSE_GUEST_RUNQUEUE, guest_culprit(L));
}

static void vm_exit(struct lane *L, uint64_t t, uint32_t reason, uint64_t rip)
{
	uint64_t info1 = reason == X_IO ? 0x0cfc000bull : 0;
	vms_emit_kvm_exit(&L->w->x.host, L->cpu, t, &L->vthr, L->vcpu, reason, rip, info1, 0,
			  reason == X_EXT_INT ? 0x800000ecu : 0);
	at(L, t);
	L->exit_reason = reason;
	/* a HLT exit is the guest asking to sleep: its handling counts as the halt's */
	seg(L, H(L->w, t), reason == X_HLT ? VMS_SYNTH_CAUSE_HALTED_WAKEUP : VMS_SYNTH_CAUSE_EXITS,
	    culprit(L->w, "exit:%s", exit_name(reason)));
}

/* the exit's own handling again (after a preemption or a halt) */
static void in_exit_again(struct lane *L, uint64_t t)
{
	seg(L, H(L->w, t), L->exit_reason == X_HLT ? VMS_SYNTH_CAUSE_HALTED_WAKEUP
						  : VMS_SYNTH_CAUSE_EXITS,
	    culprit(L->w, "exit:%s", exit_name(L->exit_reason)));
}

static void gswitch(struct lane *L, uint64_t t, int64_t prev_state, const struct vms_task *next)
{
	vms_emit_switch(&L->w->x.guest, L->vcpu, to_guest(L, t), L->gcur ? L->gcur : &L->gidle,
			prev_state, next ? next : &L->gidle);
	at(L, t);
	L->gcur = next;
	seg(L, G(L, t), VMS_SYNTH_CAUSE_GUEST_RUNQUEUE, guest_culprit(L));
}

static void plant_begin(struct ws *w, const struct vms_task *who, uint32_t vcpu, int32_t waker,
			uint64_t tw)
{
	if (w->npl == w->cappl) {
		struct planted *np = vms_grow(w->pl, &w->cappl, sizeof *np, 64);
		if (!np) {
			w->oom = true;
			return;
		}
		w->pl = np;
	}
	w->pl[w->npl++] = (struct planted){ who, vcpu, waker, tw, UINT64_MAX };
}

/* Guest sched_wakeup of `who` onto vCPU `target`, recorded on L's vCPU (in guest mode). */
static void gwakeup(struct lane *L, uint64_t t, const struct vms_task *who, uint32_t target)
{
	const struct vms_task *waker = L->gcur ? L->gcur : &L->gidle;
	vms_emit_wakeup(&L->w->x.guest, L->vcpu, to_guest(L, t), waker, who, target, L->gcur == NULL);
	at(L, t);
	plant_begin(L->w, who, target, (int32_t)L->vcpu, G(L, t));
}

/* `who` runs on L's vCPU: its pending wake-up ends */
static void grun(struct lane *L, uint64_t t, int64_t prev_state, const struct vms_task *who)
{
	gswitch(L, t, prev_state, who);
	struct ws *w = L->w;
	for (uint32_t i = 0; i < w->npl; i++)
		if (w->pl[i].who == who && w->pl[i].tr == UINT64_MAX)
			w->pl[i].tr = G(L, t);
}

static void hswitch(struct lane *L, uint64_t t, const struct vms_task *prev, int64_t state,
		    const struct vms_task *next)
{
	vms_emit_switch(&L->w->x.host, L->cpu, t, prev, state, next);
	at(L, t);
}

static void hwakeup(struct lane *L, uint64_t t, const struct vms_task *waker,
		    const struct vms_task *woken, int hardirq)
{
	vms_emit_wakeup(&L->w->x.host, L->cpu, t, waker, woken, L->cpu, hardirq);
	at(L, t);
}

/* In an exit, the vCPU thread is preempted (prev_state R) by `by`. */
static void preempt(struct lane *L, uint64_t t, const struct vms_task *by)
{
	hswitch(L, t, &L->vthr, VMS_TASK_PREEMPTED, by);
	seg(L, H(L->w, t), VMS_SYNTH_CAUSE_PREEMPTED, culprit(L->w, "host %s (tid %d)", by->comm, by->tid));
}

/* While preempted, another host thread takes the CPU */
static void preempt_next(struct lane *L, uint64_t t, const struct vms_task *prev,
			 const struct vms_task *next)
{
	hswitch(L, t, prev, VMS_TASK_INTERRUPTIBLE, next);
	seg(L, H(L->w, t), VMS_SYNTH_CAUSE_PREEMPTED,
	    culprit(L->w, "host %s (tid %d)", next->comm, next->tid));
}

static void preempt_end(struct lane *L, uint64_t t, const struct vms_task *prev)
{
	hswitch(L, t, prev, VMS_TASK_INTERRUPTIBLE, &L->vthr);
	in_exit_again(L, t);
}

/* HLT: the exit at t, halt polling from 250 cycles later */
static void hlt(struct lane *L, uint64_t t)
{
	vm_exit(L, t, X_HLT, RIP_HLT);
	L->poll_start = t + 250;
	seg(L, H(L->w, L->poll_start), VMS_SYNTH_CAUSE_HALTED_WAKEUP, culprit(L->w, "halted vCPU"));
}

/* polling ends: the thread blocks (still halted) */
static void hlt_block(struct lane *L, uint64_t t)
{
	hswitch(L, t, &L->vthr, VMS_TASK_INTERRUPTIBLE, &L->swapper);
}

/* the halt ends (kvm_vcpu_wakeup, its length exact in host ns); handling until the entry */
static void hlt_end(struct lane *L, uint64_t t, int waited)
{
	vms_emit_kvm_vcpu_wakeup(&L->w->x.host, L->cpu, t, &L->vthr,
				 H(L->w, t) - H(L->w, L->poll_start), waited);
	at(L, t);
	in_exit_again(L, t);
}

/* The guest is idle in guest mode at L->t: it halts until `until` (host TSC), blocked, and a
 * host timer wakes it; it is back in guest mode, idle, before `until`. */
static void idle_until(struct lane *L, uint64_t until)
{
	struct ws *w = L->w;
	uint64_t t = L->t + cy(w, U(w, 1000, 3000));
	if (until < t + cy(w, 40000))
		return;
	hlt(L, t);
	hlt_block(L, t + 1200);
	uint64_t a = until - cy(w, U(w, 15000, 25000));
	hwakeup(L, a, &L->swapper, &L->vthr, 1);
	uint64_t b = a + cy(w, U(w, 2000, 6000));
	hswitch(L, b, &L->swapper, VMS_TASK_RUNNING, &L->vthr);
	hlt_end(L, b + 300, 1);
	entry(L, b + 300 + 1200);
}

/* ---- the episodes ---- */

/* nginx on vCPU 0, woken from the idle task; the neighbour preempts its vCPU thread. */
static void neighbour_runs(struct lane *L, uint64_t tx, double burst_ns)
{
	struct ws *w = L->w;
	vm_exit(L, tx, X_EXT_INT, RIP_USER);
	hwakeup(L, tx + cy(w, 400), &L->vthr, &stress, 1);
	uint64_t tb = tx + cy(w, U(w, 800, 1400));
	preempt(L, tb, &stress);
	uint64_t end = tb + cy(w, burst_ns), in = end;
	if (chance(w, 0.2)) {
		hwakeup(L, tb + (end - tb) / 2, &stress, &kworker1, 0);
		preempt_next(L, end, &stress, &kworker1);
		in = end + cy(w, U(w, 5000, 20000));
		preempt_end(L, in, &kworker1);
		L->steal_ns[1] += H(w, in) - H(w, end);
	} else {
		preempt_end(L, in, &stress);
	}
	L->steal_ns[0] += H(w, end) - H(w, tb);
	entry(L, in + cy(w, U(w, 500, 1500)));
}

static void ep_noisy(struct ws *w)
{
	struct lane *L = &w->lane[0];
	uint64_t T = L->t;
	uint64_t t = T + cy(w, U(w, 5000, 20000));
	gwakeup(L, t, &nginx, 0);
	uint64_t tr;
	if (chance(w, 0.7)) {
		double burst = 50e3 + vms_prng_exp(&w->x.rng, 600e3);
		neighbour_runs(L, t + cy(w, U(w, 300, 2000)), burst > 3e6 ? 3e6 : burst);
		tr = L->t + cy(w, U(w, 300, 800));
	} else {
		tr = t + cy(w, U(w, 2000, 10000));
	}
	grun(L, tr, VMS_TASK_RUNNING, &nginx);
	gswitch(L, tr + cy(w, U(w, 30e3, 200e3)), VMS_TASK_INTERRUPTIBLE, NULL);
	/* the neighbour also takes the CPU while the guest has nothing waiting */
	if (chance(w, 0.5))
		neighbour_runs(L, L->t + cy(w, U(w, 2000, 10000)), U(w, 100e3, 2e6));
	idle_until(L, L->t + cy(w, U(w, 200e3, 1e6)));
	idle_until(&w->lane[1], L->t);
}

/* nginx, woken on vCPU 0 while it is idle, runs at once (a few microseconds) */
static void ep_quick(struct ws *w)
{
	struct lane *L = &w->lane[0];
	uint64_t t = L->t + cy(w, U(w, 5000, 20000));
	gwakeup(L, t, &nginx, 0);
	uint64_t tr = t + cy(w, U(w, 2000, 10000));
	grun(L, tr, VMS_TASK_RUNNING, &nginx);
	gswitch(L, tr + cy(w, U(w, 30e3, 100e3)), VMS_TASK_INTERRUPTIBLE, NULL);
	idle_until(L, L->t + cy(w, U(w, 300e3, 2e6)));
	idle_until(&w->lane[1], L->t);
}

/* The doorbell storm: fio on vCPU 0 kicks a virtqueue 8,000 times in one 100 ms window of
 * reference time (findings.c's windows are multiples of 100 ms); nginx, woken meanwhile,
 * waits for fio to yield, through its exits. */
static void ep_storm(struct ws *w)
{
	struct lane *L = &w->lane[0];
	/* the next window that starts at least 1 ms from now */
	uint64_t now_ns = H(w, L->t) + 1000000;
	uint64_t start_ns = (now_ns / STORM_WINDOW_NS + 1) * STORM_WINDOW_NS + 500000;
	uint64_t ts = (uint64_t)(((unsigned __int128)start_ns << TSC_SHIFT) / w->x.mult);
	while (H(w, ts) < start_ns)
		ts++;
	idle_until(L, ts - cy(w, 30e3));
	idle_until(&w->lane[1], ts - cy(w, 30e3));
	uint64_t t = L->t + cy(w, 3000);
	gwakeup(L, t, &fio, 0);
	grun(L, t + cy(w, 1500), VMS_TASK_RUNNING, &fio);
	uint64_t next_wake = L->t + cy(w, U(w, 300e3, 500e3));
	int wait = -1; /* windows nginx still waits */
	for (uint32_t i = 0; i < STORM_EXITS; i++) {
		uint64_t g0 = L->t + cy(w, 300);
		if (wait < 0 && g0 >= next_wake) {
			gwakeup(L, g0, &nginx, 0);
			wait = 20 + (int)vms_prng_below(&w->x.rng, 40);
		} else if (wait == 0) {
			grun(L, g0, VMS_TASK_RUNNING, &nginx);
			gswitch(L, g0 + cy(w, U(w, 20e3, 40e3)), VMS_TASK_INTERRUPTIBLE, &fio);
			next_wake = L->t + cy(w, U(w, 300e3, 500e3));
			wait = -1;
		} else if (wait > 0) {
			wait--;
		}
		vm_exit(L, L->t + cy(w, U(w, 1500, 2500)), X_EPT_MISCONFIG, RIP_NOTIFY);
		entry(L, L->t + cy(w, U(w, 4000, 6000)));
		w->storm_exits++;
	}
	if (wait >= 0)
		grun(L, L->t + cy(w, 300), VMS_TASK_RUNNING, &nginx);
	gswitch(L, L->t + cy(w, U(w, 20e3, 40e3)), VMS_TASK_INTERRUPTIBLE, NULL);
	/* the window ends well after: the storm is alone in it */
	idle_until(L, L->t + cy(w, 2e6));
	idle_until(&w->lane[1], L->t);
	w->stormed = true;
}

/* haproxy runs on vCPU 0 (a timer woke it) and wakes nginx onto vCPU 1: an IPI, which on
 * VMX is a write to the x2APIC's ICR (an MSR_WRITE exit), returns when it is sent. */
static uint64_t haproxy_wakes_nginx(struct ws *w, uint64_t tw, bool wake_thread)
{
	struct lane *L = &w->lane[0], *V = &w->lane[1];
	gwakeup(L, tw, &nginx, 1);
	uint64_t tx = tw + cy(w, U(w, 300, 1000));
	vm_exit(L, tx, X_MSR_WRITE, RIP_WRMSR);
	uint64_t ta = tx + cy(w, 500);
	if (wake_thread)
		hwakeup(L, ta, &L->vthr, &V->vthr, 0);
	entry(L, ta + cy(w, U(w, 1000, 2000)));
	gswitch(L, L->t + cy(w, U(w, 10e3, 50e3)), VMS_TASK_INTERRUPTIBLE, NULL);
	return ta;
}

static void haproxy_runs(struct ws *w, uint64_t t)
{
	struct lane *L = &w->lane[0];
	gwakeup(L, t, &haproxy, 0);
	grun(L, t + cy(w, U(w, 1000, 3000)), VMS_TASK_RUNNING, &haproxy);
}

/* nginx runs on vCPU 1 in place of the idle task or of java (which has the vCPU back when
 * nginx sleeps), then sleeps */
static void nginx_runs_on_1(struct ws *w, uint64_t t)
{
	struct lane *V = &w->lane[1];
	const struct vms_task *back = V->gcur;
	grun(V, t, back ? VMS_TASK_PREEMPTED : VMS_TASK_RUNNING, &nginx);
	gswitch(V, t + cy(w, U(w, 30e3, 100e3)), VMS_TASK_INTERRUPTIBLE, back);
	if (back)
		gswitch(V, V->t + cy(w, U(w, 5e3, 30e3)), VMS_TASK_INTERRUPTIBLE, NULL);
}

/* vCPU 1 halted: polling catches the IPI, or the thread blocked and the host wakes it (late
 * when a kworker holds its CPU, `slow` of the time) */
static void ep_halted(struct ws *w, double slow)
{
	struct lane *L = &w->lane[0], *V = &w->lane[1];
	uint64_t T = L->t > V->t ? L->t : V->t;
	uint64_t tx1 = T + cy(w, U(w, 1000, 3000));
	hlt(V, tx1);
	bool poll = chance(w, 0.3);
	uint64_t tb = V->poll_start + cy(w, 20000);
	uint64_t tw = poll ? V->poll_start + cy(w, U(w, 8000, 15000)) : tb + cy(w, U(w, 20e3, 300e3));
	if (!poll)
		hlt_block(V, tb);
	haproxy_runs(w, tw - cy(w, 5000));
	uint64_t ta = haproxy_wakes_nginx(w, tw, !poll);
	uint64_t tk;
	if (poll) {
		tk = ta + cy(w, 200);
		hlt_end(V, tk, 0);
	} else {
		uint64_t ti = ta + cy(w, U(w, 3000, 30000));
		if (chance(w, slow)) {
			uint64_t k0 = tb + (ta - tb) / 2;
			hwakeup(V, k0, &V->swapper, &kworker2, 1);
			hswitch(V, k0 + cy(w, 2000), &V->swapper, VMS_TASK_RUNNING, &kworker2);
			ti = ta + cy(w, U(w, 400e3, 2e6));
			hswitch(V, ti, &kworker2, VMS_TASK_INTERRUPTIBLE, &V->vthr);
		} else {
			hswitch(V, ti, &V->swapper, VMS_TASK_RUNNING, &V->vthr);
		}
		tk = ti + 300;
		hlt_end(V, tk, 1);
	}
	entry(V, tk + cy(w, U(w, 500, 1000)));
	nginx_runs_on_1(w, V->t + cy(w, U(w, 300, 800)));
	uint64_t end = (L->t > V->t ? L->t : V->t) + cy(w, U(w, 500e3, 2e6));
	idle_until(L, end);
	idle_until(V, end);
}

/* vCPU 1 runs java (woken there), which the IPI interrupts; java yields a little later, or
 * java is in a long port I/O exit (`io`) when the wake-up comes */
static void ep_busy_target(struct ws *w, bool io)
{
	struct lane *L = &w->lane[0], *V = &w->lane[1];
	uint64_t T = L->t > V->t ? L->t : V->t;
	uint64_t tj = T + cy(w, U(w, 2000, 5000));
	gwakeup(V, tj, &java, 1);
	grun(V, tj + cy(w, U(w, 1000, 3000)), VMS_TASK_RUNNING, &java);
	uint64_t tw = V->t + cy(w, U(w, 40e3, 80e3));
	if (io) {
		vm_exit(V, tw - cy(w, U(w, 2000, 10000)), X_IO, RIP_INB);
		haproxy_runs(w, tw - cy(w, 30000));
		haproxy_wakes_nginx(w, tw, false);
		entry(V, tw + cy(w, U(w, 300e3, 1.5e6)));
		nginx_runs_on_1(w, V->t + cy(w, U(w, 500, 2000)));
	} else {
		haproxy_runs(w, tw - cy(w, 30000));
		haproxy_wakes_nginx(w, tw, false);
		/* the reschedule IPI arrives in guest mode: a short external interrupt exit */
		vm_exit(V, tw + cy(w, U(w, 1500, 2500)), X_EXT_INT, RIP_USER);
		entry(V, V->t + cy(w, U(w, 1000, 2000)));
		nginx_runs_on_1(w, V->t + cy(w, U(w, 20e3, 150e3)));
	}
	uint64_t end = (L->t > V->t ? L->t : V->t) + cy(w, U(w, 300e3, 1e6));
	idle_until(L, end);
	idle_until(V, end);
}

/* cc1 has vCPU 0, the other cc1 vCPU 1, with a timer exit every millisecond; nginx, woken
 * on vCPU 0, waits for the end of cc1's slice */
static void ticks(struct lane *L, uint64_t until)
{
	struct ws *w = L->w;
	for (;;) {
		uint64_t tx = L->t + cy(w, U(w, 900e3, 1000e3));
		if (tx + cy(w, 10000) >= until)
			return;
		vm_exit(L, tx, X_EXT_INT, RIP_USER);
		entry(L, tx + cy(w, U(w, 1000, 3000)));
	}
}

static void ep_oversub(struct ws *w)
{
	struct lane *L = &w->lane[0], *V = &w->lane[1];
	uint64_t T = L->t;
	uint64_t slice_end = T + cy(w, U(w, 1e6, 4e6));
	uint64_t tw = T + cy(w, U(w, 50e3, 900e3));
	ticks(L, tw);
	gwakeup(L, L->t + cy(w, U(w, 2000, 40000)), &nginx, 0);
	ticks(L, slice_end);
	grun(L, (L->t > slice_end ? L->t : slice_end) + cy(w, 500), VMS_TASK_RUNNING, &nginx);
	gswitch(L, L->t + cy(w, U(w, 40e3, 120e3)), VMS_TASK_INTERRUPTIBLE, &cc1a);
	ticks(V, L->t);
}

/* ---- the truth of an episode's wake-ups ---- */
static void resolve(struct ws *w)
{
	for (uint32_t i = 0; i < w->npl; i++) {
		const struct planted *p = &w->pl[i];
		if (p->tr == UINT64_MAX)
			continue; /* not reached: every wake-up planted is run */
		const struct lane *L = &w->lane[p->vcpu];
		struct vms_synth_wakeup r;
		memset(&r, 0, sizeof r);
		r.tid = p->who->tid;
		memcpy(r.comm, p->who->comm, sizeof r.comm);
		r.vcpu = p->vcpu;
		r.waker_vcpu = p->waker;
		r.wakeup = p->tw;
		r.run = p->tr;
		r.latency = p->tr - p->tw;
		uint64_t by[MAX_CULPRITS] = {0};
		uint8_t order[MAX_CULPRITS], norder = 0;
		uint64_t covered = 0;
		for (uint32_t k = 0; k < L->n; k++) {
			uint64_t a = L->h[k].t, b = k + 1 < L->n ? L->h[k + 1].t : UINT64_MAX;
			if (a < p->tw)
				a = p->tw;
			if (b > p->tr)
				b = p->tr;
			if (b <= a)
				continue;
			r.ns[L->h[k].cause] += b - a;
			covered += b - a;
			uint8_t c = L->h[k].culprit;
			if (!by[c] && norder < MAX_CULPRITS)
				order[norder++] = c;
			by[c] += b - a;
		}
		/* the rules of include/vmscope/latency.h, written again here on purpose: this is the
		 * truth the analysis is checked against */
		r.ns[VMS_SYNTH_CAUSE_UNKNOWN] += r.latency - covered;
		r.top = VMS_SYNTH_CAUSE_UNKNOWN;
		uint64_t best = 0;
		for (int c = 0; c < VMS_SYNTH_NCAUSES; c++)
			if (r.ns[c] > best) {
				best = r.ns[c];
				r.top = (enum vms_synth_cause)c;
			}
		/* the top cause's largest culprit (the first seen on a tie): a culprit belongs to
		 * one cause, except the exits' names, which HLT shares with halted-wakeup */
		best = 0;
		for (uint32_t j = 0; j < norder; j++) {
			uint8_t c = order[j];
			uint64_t ns = 0;
			for (uint32_t k = 0; k < L->n; k++) {
				if (L->h[k].culprit != c || L->h[k].cause != r.top)
					continue;
				uint64_t a = L->h[k].t, b = k + 1 < L->n ? L->h[k + 1].t : UINT64_MAX;
				a = a < p->tw ? p->tw : a;
				b = b > p->tr ? p->tr : b;
				ns += b > a ? b - a : 0;
			}
			if (ns > best) {
				best = ns;
				snprintf(r.culprit, sizeof r.culprit, "%s", w->culprit[c]);
			}
		}
		w->tr->nr_wakeups++;
		for (int c = 0; c < VMS_SYNTH_NCAUSES; c++)
			w->tr->wakeup_ns[c] += r.ns[c];
		if (w->cfg->wakeup)
			w->cfg->wakeup(w->cfg->wakeup_ctx, &r);
	}
	w->npl = 0;
	for (uint32_t v = 0; v < NR_VCPUS; v++) {
		struct lane *L = &w->lane[v];
		if (L->n > 1) {
			L->h[0] = L->h[L->n - 1];
			L->n = 1;
		}
	}
}

static void episode(struct ws *w, uint64_t nr)
{
	switch (w->scn) {
	case NOISY:
		ep_noisy(w);
		break;
	case STORM:
		if (!w->stormed && (nr >= 50 || w->tr->host.total + w->tr->guest.total >=
						     w->cfg->events / 4))
			ep_storm(w);
		else
			ep_quick(w);
		break;
	case HALTED:
		ep_halted(w, 0.08);
		break;
	case OVERSUB:
		ep_oversub(w);
		break;
	case CROSS: {
		double k = vms_prng_unit(&w->x.rng);
		if (k < 0.4)
			ep_halted(w, 0);
		else
			ep_busy_target(w, k >= 0.7);
		break;
	}
	}
	resolve(w);
}

/* ---- the findings the report should make (include/vmscope/findings.h) ---- */
static void finding(struct ws *w, const char *kind, int32_t vcpu, int32_t tid, const char *names,
		    uint64_t count)
{
	struct vms_synth_truth *t = w->tr;
	if (t->nr_findings == VMS_SYNTH_MAX_FINDINGS)
		return;
	struct vms_synth_finding *f = &t->finding[t->nr_findings++];
	snprintf(f->kind, sizeof f->kind, "%s", kind);
	f->vcpu = vcpu;
	f->tid = tid;
	snprintf(f->names, sizeof f->names, "%s", names);
	f->count = count;
}

static void findings(struct ws *w)
{
	struct vms_synth_truth *t = w->tr;
	switch (w->scn) {
	case NOISY: {
		/* the steal the neighbour planted, then what it did to nginx's tail */
		struct lane *L = &w->lane[0];
		struct vms_synth_vcpu_truth *vt = &t->vcpu[0];
		vt->nr_steal = 2;
		vt->steal[0] = (struct vms_synth_steal){ .tid = stress.tid, .ns = L->steal_ns[0] };
		memcpy(vt->steal[0].comm, stress.comm, 16);
		vt->steal[1] = (struct vms_synth_steal){ .tid = kworker1.tid, .ns = L->steal_ns[1] };
		memcpy(vt->steal[1].comm, kworker1.comm, 16);
		finding(w, "steal", 0, stress.tid, "stress-ng (tid 5101)", 0);
		finding(w, "latency", -1, nginx.tid, "preempted (host stress-ng (tid 5101))", 0);
		break;
	}
	case STORM:
		/* then nginx's tail: 20-60 doorbell rounds of ~2 us guest, ~5 us exit */
		finding(w, "exit-storm", 0, -1, "virtio_queue_notify+0x2a", w->storm_exits);
		finding(w, "latency", -1, nginx.tid, "exits (exit:EPT_MISCONFIG)", 0);
		break;
	case HALTED:
		finding(w, "latency", -1, nginx.tid, "halted-wakeup (halted vCPU)", 0);
		break;
	case OVERSUB:
		finding(w, "latency", -1, nginx.tid, "guest-runqueue (cc1 (tid 1501))", 0);
		break;
	case CROSS:
		finding(w, "latency", -1, nginx.tid, "exits (exit:IO_INSTRUCTION)", 0);
		break;
	}
}

/* ---- the run ---- */
static int close_pair(struct ws *w, uint64_t host_id, uint64_t guest_id, uint64_t t0,
		      uint64_t t_end, struct vms_error *err)
{
	struct vms_synth_ctx *x = &w->x;
	int32_t tids[NR_VCPUS];
	uint64_t times[NR_VCPUS][2], scal[NR_VCPUS][2], fr[NR_VCPUS][2];
	int64_t offs[NR_VCPUS][2];
	struct vms_tdw_ts_cpu tc[NR_VCPUS];
	for (uint32_t v = 0; v < NR_VCPUS; v++) {
		const struct lane *L = &w->lane[v];
		tids[v] = L->vthr.tid;
		times[v][0] = to_guest(L, t0 - cy(w, 1e6));
		times[v][1] = to_guest(L, t_end + cy(w, 1e6));
		for (int i = 0; i < 2; i++) {
			offs[v][i] = -L->tsc_offset;
			scal[v][i] = w->ratio;
			fr[v][i] = w->frac;
		}
		tc[v] = (struct vms_tdw_ts_cpu){ 2, times[v], offs[v], scal[v], fr[v] };
	}
	int rc = vms_tdw_add_tsc2nsec(x->host.w, x->mult, x->shift, 0, err);
	if (!rc)
		rc = vms_tdw_add_guest(x->host.w, w->tr->guest_name, guest_id, NR_VCPUS, tids, err);
	if (!rc)
		rc = vms_tdw_add_tsc2nsec(x->guest.w, x->mult, x->shift, 0, err);
	if (!rc)
		rc = vms_tdw_add_time_shift(x->guest.w, host_id, 0, NR_VCPUS, tc, err);
	if (!rc)
		rc = vms_tdw_add_kallsyms(x->guest.w, guest_kallsyms, err);
	if (rc)
		return rc;
	rc = vms_tdw_close(x->host.w, err);
	x->host.w = NULL;
	if (!rc)
		rc = vms_tdw_close(x->guest.w, err);
	x->guest.w = NULL;
	return rc;
}

static int add_cmdlines(struct ws *w, struct vms_error *err)
{
	const struct vms_task *g[] = { &nginx, &haproxy, &fio, &cc1a, &cc1b, &java, &gkw[0], &gkw[1] };
	const struct vms_task *h[] = { &stress, &kworker1, &kworker2, &w->lane[0].vthr,
				       &w->lane[1].vthr };
	int rc = VMS_OK;
	for (size_t i = 0; !rc && i < sizeof g / sizeof g[0]; i++)
		rc = vms_tdw_add_cmdline(w->x.guest.w, g[i]->tid, g[i]->comm, err);
	for (size_t i = 0; !rc && i < sizeof h / sizeof h[0]; i++)
		rc = vms_tdw_add_cmdline(w->x.host.w, h[i]->tid, h[i]->comm, err);
	return rc;
}

/* Both vCPU threads on their CPUs, in guest mode, the guest's threads known. */
static void warm_up(struct ws *w, uint64_t t0)
{
	for (uint32_t v = 0; v < NR_VCPUS; v++) {
		struct lane *L = &w->lane[v];
		hswitch(L, t0 + v * 100, &L->swapper, VMS_TASK_RUNNING, &L->vthr);
		entry(L, t0 + v * 100 + 2500);
		L->gcur = &gkw[v];
		gswitch(L, L->t + cy(w, 1000), VMS_TASK_INTERRUPTIBLE, NULL);
		if (w->scn == OVERSUB)
			gswitch(L, L->t + cy(w, 2000), VMS_TASK_RUNNING, v ? &cc1b : &cc1a);
	}
}

int vms_synth_wakeup_run(const struct vms_synth_config *cfg, struct vms_synth_truth *tr,
			 struct vms_error *err)
{
	static const char *const names[] = { "noisy-wakeups", "exit-storm", "halted-wakeup",
					     "oversubscribed", "cross-vcpu" };
	if (!cfg->host_path || !cfg->guest_path)
		return vms_error_set(err, VMS_ERR_USAGE, "synth: no output paths");
	if (cfg->events < 1000)
		return vms_error_set(err, VMS_ERR_USAGE, "synth: --events must be at least 1000");
	if (cfg->format != VMS_SYNTH_TRACEDAT)
		return vms_error_set(err, VMS_ERR_USAGE, "synth: scenario '%s' writes trace.dat only",
				     cfg->scenario);
	static struct vms_synth_truth scratch;
	if (!tr)
		tr = &scratch;
	memset(tr, 0, sizeof *tr);
	struct ws *w = calloc(1, sizeof *w);
	if (!w)
		return vms_error_set(err, VMS_ERR_NOMEM, "synth: out of memory");
	for (int i = 0; i < 5; i++)
		if (!strcmp(cfg->scenario, names[i]))
			w->scn = (enum scn)i;
	cast();
	w->cfg = cfg;
	w->tr = tr;
	snprintf(tr->scenario, sizeof tr->scenario, "%s", cfg->scenario);
	tr->seed = cfg->seed;
	struct vms_synth_ctx *x = &w->x;
	x->truth = tr;
	struct vms_synth_clocks clk;
	vms_synth_clocks_init(x, cfg, &clk);
	uint64_t t0 = clk.t0, host_id = clk.host_id, guest_id = clk.guest_id;
	int64_t off0 = clk.off0;
	w->ratio = clk.ratio;
	w->frac = clk.frac;
	x->host = (struct vms_emitter){ .ft = &tr->host, .err = err };
	x->guest = (struct vms_emitter){ .ft = &tr->guest, .err = err };
	snprintf(tr->guest_name, sizeof tr->guest_name, "demo-guest");
	tr->qemu_pid = QEMU_PID;
	tr->nr_vcpus = NR_VCPUS;
	for (uint32_t v = 0; v < NR_VCPUS; v++) {
		struct lane *L = &w->lane[v];
		char name[16];
		L->w = w;
		L->vcpu = v;
		L->cpu = 1 + v;
		snprintf(name, sizeof name, "CPU %u/KVM", v);
		L->vthr = task(QEMU_PID + 5 + (int32_t)v, name);
		snprintf(name, sizeof name, "swapper/%u", L->cpu);
		L->swapper = task(0, name);
		snprintf(name, sizeof name, "swapper/%u", v);
		L->gidle = task(0, name);
		L->tsc_offset = off0 - (int64_t)(v ? 1000 + vms_prng_below(&x->rng, 4000) : 0);
		struct vms_synth_vcpu_truth *vt = &tr->vcpu[v];
		vt->vcpu = v;
		vt->host_tid = L->vthr.tid;
		vt->host_cpu = L->cpu;
		vt->ts_offset = -L->tsc_offset;
		vt->ts_scaling = w->ratio;
		vt->ts_frac = w->frac;
	}
	int rc = vms_synth_open_tracedat(x, cfg, host_id, guest_id, err);
	if (!rc)
		rc = add_cmdlines(w, err);
	if (rc)
		goto fail;
	int32_t vcpu_tids[NR_VCPUS];
	for (uint32_t v = 0; v < NR_VCPUS; v++)
		vcpu_tids[v] = w->lane[v].vthr.tid;
	vms_synth_vmm_start(x, t0, QEMU_PID, vcpu_tids, NR_VCPUS);
	tr->qemu_pid_how = "exec";
	warm_up(w, t0);
	resolve(w);
	uint64_t next_progress = 1u << 20;
	for (uint64_t nr = 0; !x->host.rc && !x->guest.rc && !w->oom; nr++) {
		episode(w, nr);
		uint64_t total = tr->host.total + tr->guest.total;
		if (cfg->progress && total >= next_progress) {
			cfg->progress(cfg->progress_ctx, total, cfg->events);
			next_progress = total + (1u << 20);
		}
		if (total >= cfg->events && (w->scn != STORM || w->stormed))
			break;
	}
	/* the host's recording ends after the guest's last event: every wake-up is inside its
	 * coverage (after it, nothing is known of the vCPUs) */
	uint64_t last = w->lane[0].t > w->lane[1].t ? w->lane[0].t : w->lane[1].t;
	for (uint32_t v = 0; v < NR_VCPUS; v++) {
		vm_exit(&w->lane[v], last + cy(w, 10000) + v * 100, X_EXT_INT, RIP_USER);
		entry(&w->lane[v], w->lane[v].t + cy(w, 2000));
	}
	rc = x->host.rc ? x->host.rc : x->guest.rc;
	if (!rc && w->oom)
		rc = vms_error_set(err, VMS_ERR_NOMEM, "synth: out of memory");
	if (rc)
		goto fail;
	vms_synth_truth_window(x, t0);
	findings(w);
	rc = close_pair(w, host_id, guest_id, t0, x->max_ref_tsc, err);
	if (rc)
		goto fail;
	vms_synth_truth_files(x, cfg, &clk);
	goto out;
fail:
	vms_tdw_discard(x->host.w);
	vms_tdw_discard(x->guest.w);
out:
	for (uint32_t v = 0; v < NR_VCPUS; v++)
		free(w->lane[v].h);
	free(w->pl);
	free(w);
	return rc;
}
