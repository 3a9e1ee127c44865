/* vms_synth_run: the scenario's machines, threads and clocks, both trace.dat writers, and the
 * loop that advances every CPU of the host in lockstep until the event target is reached. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmscope/synth.h"
#include "output/tracedat_writer.h"
#include "synth/kernel_formats.h"
#include "synth/sched_model.h"
#include "synth/synth_context.h"
#include "synth/vcpu_lane.h"
#include "synth/wakeup_scenarios.h"

const char *const vms_synth_scenarios[] = { "noisy-neighbour", "quiet", "noisy-wakeups",
					    "exit-storm", "halted-wakeup", "oversubscribed",
					    "cross-vcpu", "cloud-host", "nested", NULL };

#define HOST_CPUS 4
#define NR_VCPUS 2
#define TSC_HZ 2900000000ull          /* host TSC */
#define GUEST_TSC_HZ 3000000000ull    /* the guest's TSC with scaling: it came from a 3.0 GHz host */
#define TSC_SHIFT 31
#define FRAC_BITS 48                  /* VMX's TSC-scaling fraction bits */
#define QEMU_PID 4242

/* Event ids: the host's are a 6.18 kernel's; the guest runs another build, with other ids. */
static const uint16_t host_ids[VMS_SYNTH_NEVENTS] = { 372, 374, 115, 103, 127, 367, 368 };
static const uint16_t guest_ids[VMS_SYNTH_NEVENTS] = { 316, 318, 0, 0, 0, 0, 0 };

static const char trace_clock[] = "local global counter uptime perf mono mono_raw boot tai [x86-tsc]\n";

void vms_synth_config_init(struct vms_synth_config *cfg)
{
	*cfg = (struct vms_synth_config){
		.scenario = "noisy-neighbour",
		.seed = 1,
		.events = 200000,
		.host_path = "vmscope-demo/host.dat",
		.guest_path = "vmscope-demo/guest.dat",
		.compression = VMS_SYNTH_ZSTD,
		.tsc_scaling = true,
	};
}

const char *vms_synth_state_name(enum vms_synth_state s)
{
	static const char *const n[] = { "unknown", "idle", "running", "vmm", "preempted", "halted" };
	return (unsigned)s < VMS_SYNTH_NSTATES ? n[s] : "?";
}

const char *vms_synth_event_name(enum vms_synth_event e)
{
	static const char *const n[] = { "sched_switch", "sched_wakeup", "kvm_entry", "kvm_exit",
					 "kvm_vcpu_wakeup", "sched_process_exec",
					 "sched_process_fork" };
	return (unsigned)e < VMS_SYNTH_NEVENTS ? n[e] : "?";
}

void vms_synth_clocks_init(struct vms_synth_ctx *x, const struct vms_synth_config *cfg,
			   struct vms_synth_clocks *c)
{
	struct vms_synth_truth *tr = x->truth;
	vms_prng_seed(&x->rng, cfg->seed);
	x->cyc_per_ns = (double)TSC_HZ / 1e9;
	x->shift = TSC_SHIFT;
	x->mult = (uint32_t)llround(ldexp(1e9 / (double)TSC_HZ, TSC_SHIFT));
	tr->tsc_hz = TSC_HZ;
	tr->mult = x->mult;
	tr->shift = x->shift;
	/* the host has been up about an hour, the guest about ten minutes */
	c->t0 = (uint64_t)((3600.0 + vms_prng_unit(&x->rng) * 600.0) * (double)TSC_HZ);
	c->host_id = vms_prng_next(&x->rng) | 1;
	c->guest_id = vms_prng_next(&x->rng) | 1;
	c->ratio = cfg->tsc_scaling ? (uint64_t)llround(ldexp((double)GUEST_TSC_HZ / TSC_HZ, FRAC_BITS)) : 1;
	c->frac = cfg->tsc_scaling ? FRAC_BITS : 0;
	double guest_up = (600.0 + vms_prng_unit(&x->rng) * 60.0) * (double)GUEST_TSC_HZ;
	c->off0 = (int64_t)guest_up - (int64_t)vms_synth_to_guest(c->t0, c->ratio, c->frac, 0);
}

void vms_synth_truth_files(struct vms_synth_ctx *x, const struct vms_synth_config *cfg,
			   const struct vms_synth_clocks *c)
{
	struct vms_synth_truth *tr = x->truth;
	snprintf(tr->host.path, sizeof tr->host.path, "%s", cfg->host_path);
	snprintf(tr->guest.path, sizeof tr->guest.path, "%s", cfg->guest_path);
	tr->host.trace_id = c->host_id;
	tr->guest.trace_id = c->guest_id;
	tr->host.nr_cpus = HOST_CPUS;
	tr->guest.nr_cpus = NR_VCPUS;
}

void vms_synth_vmm_start(struct vms_synth_ctx *x, uint64_t ts, int32_t pid, const int32_t *tids,
			 uint32_t n)
{
	struct vms_task q = { .tid = pid, .prio = 120 };
	snprintf(q.comm, sizeof q.comm, "qemu-system-x86"); /* the kernel's 15 bytes of the name */
	vms_emit_exec(&x->host, 0, ts, &q, "/usr/bin/qemu-system-x86_64");
	for (uint32_t i = 0; i < n; i++) {
		struct vms_task c = q; /* a new thread starts with its creator's name */
		c.tid = tids[i];
		vms_emit_fork(&x->host, 0, ts, &q, &c, pid);
	}
	vms_synth_seen(x, ts);
}

/* ---- the host's housekeeping CPUs: a scheduler and nothing else ---- */

struct host_lane {
	struct vms_synth_ctx *x;
	uint32_t cpu;
	struct vms_task swapper;
	struct vms_sched s;
	uint64_t last;      /* time of the last event: a step never goes before it */
};

static void hl_switch(void *ctx, uint64_t ts, const struct vms_sthread *prev, int64_t state,
		      const struct vms_sthread *next)
{
	struct host_lane *h = ctx;
	vms_emit_switch(&h->x->host, h->cpu, ts, prev ? &prev->task : &h->swapper, state,
			next ? &next->task : &h->swapper);
	vms_synth_seen(h->x, ts);
}

static void hl_wakeup(void *ctx, uint64_t ts, const struct vms_sthread *waker,
		      const struct vms_sthread *woken)
{
	struct host_lane *h = ctx;
	vms_emit_wakeup(&h->x->host, h->cpu, ts, waker ? &waker->task : &h->swapper, &woken->task,
			h->cpu, waker == NULL);
	vms_synth_seen(h->x, ts);
}

static const struct vms_sched_ops host_ops = { hl_switch, hl_wakeup };

static void host_lane_run(struct host_lane *h, uint64_t until)
{
	for (;;) {
		uint64_t t = vms_sched_next(&h->s);
		if (t >= until)
			break;
		h->last = vms_sched_step(&h->s, t > h->last ? t : h->last, &host_ops, h);
	}
}

/* ---- the cast ---- */

static struct vms_task task(int32_t tid, const char *comm)
{
	struct vms_task t = { .tid = tid, .prio = 120 };
	snprintf(t.comm, sizeof t.comm, "%s", comm);
	return t;
}

struct thread_spec {
	int32_t tid;
	const char *comm;
	double burst_ns, sleep_ns;
};

static const struct thread_spec guest_threads[NR_VCPUS][4] = {
	{ { 1201, "postgres", 400e3, 700e3 }, { 1202, "postgres", 250e3, 1.2e6 },
	  { 31, "kworker/0:1", 25e3, 2e6 }, { 412, "systemd-journal", 150e3, 20e6 } },
	{ { 1301, "nginx", 200e3, 450e3 }, { 1302, "nginx", 180e3, 900e3 },
	  { 58, "kworker/1:2", 30e3, 2.5e6 }, { 901, "sshd", 60e3, 15e6 } },
};

static const struct thread_spec host_threads[2][5] = {
	{ { QEMU_PID, "qemu-system-x86", 40e3, 2e6 }, { QEMU_PID + 2, "IO mon_iothread", 20e3, 5e6 },
	  { 1022, "sshd", 100e3, 50e6 }, { 97, "kworker/0:2", 15e3, 3e6 }, { 16, "rcu_preempt", 8e3, 4e6 } },
	{ { 1500, "containerd", 200e3, 10e6 }, { 398, "systemd-journal", 150e3, 40e6 },
	  { 102, "kworker/3:1", 20e3, 4e6 }, { 5100, "stress-ng", 20e3, 100e6 }, { 1, "systemd", 300e3, 200e6 } },
};

static int add_formats(struct vms_tdw *w, const uint16_t *ids, bool kvm, struct vms_error *err)
{
	/* indexed by enum vms_synth_event; a guest has the first two only */
	static const struct { const char *sys, *name; const char *body; } f[VMS_SYNTH_NEVENTS] = {
		{ "sched", "sched_switch", vms_synth_fmt_sched_switch },
		{ "sched", "sched_wakeup", vms_synth_fmt_sched_wakeup },
		{ "kvm", "kvm_entry", vms_synth_fmt_kvm_entry },
		{ "kvm", "kvm_exit", vms_synth_fmt_kvm_exit },
		{ "kvm", "kvm_vcpu_wakeup", vms_synth_fmt_kvm_vcpu_wakeup },
		{ "sched", "sched_process_exec", vms_synth_fmt_sched_process_exec },
		{ "sched", "sched_process_fork", vms_synth_fmt_sched_process_fork },
	};
	char buf[16384];
	for (int i = 0; i < (kvm ? VMS_SYNTH_NEVENTS : 2); i++) {
		snprintf(buf, sizeof buf, "name: %s\nID: %u\nformat:\n%s", f[i].name, ids[i], f[i].body);
		int rc = vms_tdw_add_event_format(w, f[i].sys, buf, err);
		if (rc)
			return rc;
	}
	return VMS_OK;
}

static int open_writer(struct vms_tdw **w, const char *path, uint32_t cpus,
		       enum vms_synth_compression comp, int level, uint64_t trace_id,
		       const char *uname, struct vms_error *err)
{
	struct vms_tdw_config c = {
		.path = path,
		.compression = comp == VMS_SYNTH_ZLIB ? VMS_TDW_ZLIB
			       : comp == VMS_SYNTH_NONE ? VMS_TDW_NONE : VMS_TDW_ZSTD,
		.level = level,
		.nr_cpus = cpus,
		.header_page = vms_synth_header_page,
		.header_event = vms_synth_header_event,
		.buffer_clock = "tsc2nsec",
		.trace_clock = trace_clock,
		.uname = uname,
		.version = "vmscope synth (SIMULATED data)",
		.trace_id = trace_id,
	};
	return vms_tdw_open(w, &c, err);
}

/* The threads a machine knows at the start: trace.dat's saved cmdlines, LTTng's statedump. */
struct thread_list {
	uint32_t n;
	struct vms_task t[32];
	int32_t pid[32];
};

static int add_thread(struct vms_tdw *w, struct thread_list *l, const struct vms_task *t,
		      int32_t pid, struct vms_error *err)
{
	if (l->n < 32) {
		l->t[l->n] = *t;
		l->pid[l->n++] = pid;
	}
	return w ? vms_tdw_add_cmdline(w, t->tid, t->comm, err) : VMS_OK;
}

static void statedump(struct vms_emitter *e, const struct thread_list *l, uint64_t ts)
{
	vms_emit_statedump_mark(e, 0, ts, false);
	for (uint32_t i = 0; i < l->n; i++)
		vms_emit_statedump(e, 0, ts, &l->t[i], l->pid[i]);
	vms_emit_statedump_mark(e, 0, ts, true);
}

#define EPOCH_S 1764547200ll   /* the host's clock offset: 2025-12-01 00:00:00 UTC */

/* Both machines as LTTng kernel traces: host ns = the truth's; the guest's monotonic clock
 * started when the guest booted, its epoch offset says so (plus clock_error_ns). */
static int open_lttng(struct vms_synth_ctx *x, struct vms_synth_truth *tr,
		      const struct vms_synth_config *cfg, uint64_t t0, uint64_t ratio, uint32_t frac,
		      struct vms_ctfw **hc, struct vms_ctfw **gc, struct vms_error *err)
{
	/* the guest has been up about ten minutes at t0 (no PRNG draw: the scenario is the
	 * trace.dat one, event for event) */
	uint64_t host_t0 = vms_synth_ns(x, t0);
	uint64_t boot = host_t0 - 600000000000ull - (cfg->seed % 60) * 1000000000ull;
	int64_t gepoch = EPOCH_S * 1000000000ll + (int64_t)boot + cfg->clock_error_ns;
	struct vms_ctfw_config hcfg = {
		.dir = cfg->host_path, .hostname = "synth-host",
		.kernel_release = "6.18.0 (SIMULATED)", .nr_cpus = HOST_CPUS,
		.offset_s = EPOCH_S, .offset_ns = 0, .uuid_seed = cfg->seed * 2 + 1,
	};
	struct vms_ctfw_config gcfg = {
		.dir = cfg->guest_path, .hostname = "demo-guest",
		.kernel_release = "6.1.0 (SIMULATED)", .nr_cpus = NR_VCPUS,
		.offset_s = gepoch / 1000000000ll, .offset_ns = (uint64_t)(gepoch % 1000000000ll),
		.uuid_seed = cfg->seed * 2 + 2,
	};
	int rc = vms_ctfw_open(hc, &hcfg, err);
	if (!rc)
		rc = vms_ctfw_open(gc, &gcfg, err);
	if (rc)
		return rc;
	x->host.cw = *hc;
	x->guest.cw = *gc;
	if ((rc = vms_emit_ctf_classes(&x->host, err)) || (rc = vms_emit_ctf_classes(&x->guest, err)))
		return rc;
	x->host.mult = x->guest.mult = x->mult;
	x->host.shift = x->guest.shift = x->shift;
	x->guest.guest = true;
	x->guest.ratio = ratio;
	x->guest.frac = frac;
	x->guest.minus_ns = boot;
	x->vmsync = true;
	x->vm_uid = 0x5eed0000u + (cfg->seed & 0xffff);
	tr->lttng = true;
	tr->guest_boot_ns = boot;
	tr->host_epoch_ns = EPOCH_S * 1000000000ll;
	tr->clock_error_ns = cfg->clock_error_ns;
	tr->vm_uid = x->vm_uid;
	return VMS_OK;
}

int vms_synth_run(const struct vms_synth_config *cfg, struct vms_synth_truth *truth_out,
		  struct vms_error *err)
{
	const char *scn = cfg->scenario ? cfg->scenario : "noisy-neighbour";
	bool noisy;
	if (vms_synth_is_wakeup_scenario(scn))
		return vms_synth_wakeup_run(cfg, truth_out, err);
	if (!strcmp(scn, "noisy-neighbour"))
		noisy = true;
	else if (!strcmp(scn, "quiet"))
		noisy = false;
	else if (!strcmp(scn, "cloud-host"))
		return vms_error_set(err, VMS_ERR_USAGE, "scenario cloud-host writes many guests: "
				     "vms_synth_cloud_run");
	else if (!strcmp(scn, "nested"))
		return vms_error_set(err, VMS_ERR_USAGE, "scenario nested writes three layers: "
				     "vms_synth_nested_run");
	else
		return vms_error_set(err, VMS_ERR_USAGE, "unknown scenario '%s' (vmscope synth --help "
				     "lists them)", scn);
	if (!cfg->host_path || !cfg->guest_path)
		return vms_error_set(err, VMS_ERR_USAGE, "synth: no output paths");
	if (cfg->events < 1000)
		return vms_error_set(err, VMS_ERR_USAGE, "synth: --events must be at least 1000");

	static struct vms_synth_truth scratch;
	struct vms_synth_truth *tr = truth_out ? truth_out : &scratch;
	memset(tr, 0, sizeof *tr);
	snprintf(tr->scenario, sizeof tr->scenario, "%s", scn);
	tr->seed = cfg->seed;

	struct run {
		struct vms_synth_ctx x;
		struct vms_vcpu_lane lanes[NR_VCPUS];
		struct host_lane hl[2];
		struct thread_list sd_host, sd_guest;
	} *run = calloc(1, sizeof *run);
	if (!run)
		return vms_error_set(err, VMS_ERR_NOMEM, "synth: out of memory");
	struct vms_synth_ctx *x = &run->x;
	struct vms_vcpu_lane *lanes = run->lanes;
	struct host_lane *hl = run->hl;
	x->truth = tr;
	x->noisy = noisy;
	struct vms_synth_clocks clk;
	vms_synth_clocks_init(x, cfg, &clk);
	uint64_t t0 = clk.t0, host_id = clk.host_id, guest_id = clk.guest_id, ratio = clk.ratio;
	uint32_t frac = clk.frac;
	int64_t off0 = clk.off0;

	struct vms_tdw *hw = NULL, *gw = NULL;
	struct vms_ctfw *hc = NULL, *gc = NULL;
	bool lttng = cfg->format == VMS_SYNTH_LTTNG;
	int rc;
	x->host = (struct vms_emitter){ .ft = &tr->host, .err = err };
	x->guest = (struct vms_emitter){ .ft = &tr->guest, .err = err };
	if (lttng) {
		rc = open_lttng(x, tr, cfg, t0, ratio, frac, &hc, &gc, err);
	} else {
		rc = open_writer(&hw, cfg->host_path, HOST_CPUS, cfg->compression, cfg->level, host_id,
				 "Linux synth-host 6.18.0 x86_64 (SIMULATED)", err);
		if (!rc)
			rc = open_writer(&gw, cfg->guest_path, NR_VCPUS, cfg->compression, cfg->level,
					 guest_id, "Linux demo-guest 6.1.0 x86_64 (SIMULATED)", err);
		if (!rc)
			rc = add_formats(hw, host_ids, true, err);
		if (!rc)
			rc = add_formats(gw, guest_ids, false, err);
	}
	if (rc)
		goto fail;
	x->host.w = hw;
	x->guest.w = gw;
	memcpy(x->host.id, host_ids, sizeof host_ids);
	memcpy(x->guest.id, guest_ids, sizeof guest_ids);

	/* the host's CPUs: 0 and 3 housekeeping, 1 and 2 run the vCPUs */
	snprintf(tr->guest_name, sizeof tr->guest_name, "demo-guest");
	tr->qemu_pid = QEMU_PID;
	tr->nr_vcpus = NR_VCPUS;
	int32_t vcpu_tids[NR_VCPUS];
	for (uint32_t v = 0; v < NR_VCPUS; v++) {
		struct vms_vcpu_lane *L = &lanes[v];
		struct vms_synth_vcpu_truth *vt = &tr->vcpu[v];
		uint32_t cpu = 1 + v;
		vms_vcpu_lane_init(L, x, vt, v, cpu, t0);
		char name[16];
		snprintf(name, sizeof name, "CPU %u/KVM", v);
		L->vthr = task(QEMU_PID + 5 + (int32_t)v, name);
		snprintf(name, sizeof name, "swapper/%u", cpu);
		L->swapper = task(0, name);
		L->noisy = task(5101 + (int32_t)v, "stress-ng");
		snprintf(name, sizeof name, "kworker/%u:1", cpu);
		L->kworker = task(71 + 5 * (int32_t)v, name);
		snprintf(name, sizeof name, "swapper/%u", v);
		L->gidle = task(0, name);
		L->gtrace = task(1900 + (int32_t)v, "trace-cmd");
		L->ratio = ratio;
		L->frac = frac;
		/* vCPU 1's TSC offset differs a little (the guest wrote its TSC once), so a reader
		 * must take each CPU's own TIME_SHIFT samples */
		L->tsc_offset = off0 - (int64_t)(v ? 1000 + vms_prng_below(&x->rng, 4000) : 0);
		vt->vcpu = v;
		vt->host_tid = L->vthr.tid;
		vt->host_cpu = cpu;
		vt->ts_offset = -L->tsc_offset;
		vt->ts_scaling = ratio;
		vt->ts_frac = frac;
		vcpu_tids[v] = L->vthr.tid;
		L->t = t0;
		for (int i = 0; i < 4; i++) {
			const struct thread_spec *s = &guest_threads[v][i];
			struct vms_synth_gthread_truth *gt = &tr->gthread[tr->nr_gthreads];
			gt->tid = s->tid;
			snprintf(gt->comm, sizeof gt->comm, "%s", s->comm);
			gt->vcpu = v;
			struct vms_task t = task(s->tid, s->comm);
			vms_vcpu_lane_add_thread(L, &t, s->burst_ns, s->sleep_ns, (int32_t)tr->nr_gthreads);
			tr->nr_gthreads++;
			if (!rc)
				rc = add_thread(gw, &run->sd_guest, &t, s->tid, err);
		}
		if (!rc)
			rc = add_thread(hw, &run->sd_host, &L->vthr, QEMU_PID, err);
		if (!rc && noisy)
			rc = add_thread(hw, &run->sd_host, &L->noisy, L->noisy.tid, err);
		if (!rc)
			rc = add_thread(hw, &run->sd_host, &L->kworker, L->kworker.tid, err);
	}
	for (int h = 0; h < 2; h++) {
		hl[h].x = x;
		hl[h].cpu = h ? 3 : 0;
		char name[16];
		snprintf(name, sizeof name, "swapper/%u", hl[h].cpu);
		hl[h].swapper = task(0, name);
		vms_sched_init(&hl[h].s, &x->rng, x->cyc_per_ns, 3e6);
		for (int i = 0; i < 5; i++) {
			const struct thread_spec *s = &host_threads[h][i];
			if (!noisy && !strcmp(s->comm, "stress-ng"))
				continue; /* quiet: no neighbour at all */
			struct vms_task t = task(s->tid, s->comm);
			vms_sched_add(&hl[h].s, &t, s->burst_ns, s->sleep_ns, -1, t0);
			if (!rc)
				rc = add_thread(hw, &run->sd_host, &t,
						s->tid == QEMU_PID + 2 ? QEMU_PID : s->tid, err);
		}
	}
	if (rc)
		goto fail;
	int32_t qemu_threads[1 + NR_VCPUS] = { QEMU_PID + 2 };
	memcpy(qemu_threads + 1, vcpu_tids, sizeof vcpu_tids);
	vms_synth_vmm_start(x, t0, QEMU_PID, qemu_threads, 1 + NR_VCPUS);
	tr->qemu_pid_how = lttng ? "statedump" : "exec"; /* LTTng: the tgid is in the statedump */
	if (lttng) {
		/* the session starts with a statedump of the threads on CPU 0 of each machine */
		for (uint32_t v = 0; v < NR_VCPUS; v++)
			x->guest.tsc_offset[v] = lanes[v].tsc_offset;
		statedump(&x->host, &run->sd_host, t0);
		/* a few cycles after t0: its exact inverse must not fall before t0 (the window) */
		statedump(&x->guest, &run->sd_guest,
			  vms_synth_to_guest(t0 + 4, ratio, frac, lanes[0].tsc_offset));
	}

	/* run every CPU in 1 ms steps of host time until the target is reached */
	for (uint32_t v = 0; v < NR_VCPUS; v++)
		vms_vcpu_lane_start(&lanes[v], t0);
	uint64_t step = vms_synth_cyc(x, 1e6), until = t0, next_progress = 1u << 20;
	for (;;) {
		until += step;
		for (uint32_t v = 0; v < NR_VCPUS; v++)
			while (!lanes[v].done && lanes[v].t < until)
				vms_vcpu_lane_cycle(&lanes[v]);
		for (int h = 0; h < 2; h++)
			host_lane_run(&hl[h], until);
		if (x->host.rc || x->guest.rc)
			break;
		uint64_t total = tr->host.total + tr->guest.total;
		if (cfg->progress && total >= next_progress) {
			cfg->progress(cfg->progress_ctx, total, cfg->events);
			next_progress = total + (1u << 20);
		}
		/* the guest's recording stops a little before the host's, as trace-cmd's agent
		 * in a real guest does: the traces are of unequal length */
		if (total >= cfg->events / 100 * 97)
			for (uint32_t v = 0; v < NR_VCPUS; v++)
				if (lanes[v].gstop_at == UINT64_MAX)
					lanes[v].gstop_at = until;
		if (total >= cfg->events)
			break;
	}
	/* stop: each vCPU lane ends on its next kvm_entry, the other CPUs at the same time */
	for (uint32_t v = 0; v < NR_VCPUS; v++) {
		lanes[v].stop_at = until;
		while (!lanes[v].done && !x->host.rc && !x->guest.rc)
			vms_vcpu_lane_cycle(&lanes[v]);
	}
	rc = x->host.rc ? x->host.rc : x->guest.rc;
	if (rc)
		goto fail;

	/* the truth's window: from the first event (t0, on every vCPU's CPU) to the last */
	vms_synth_truth_window(x, t0);
	for (uint32_t v = 0; v < NR_VCPUS; v++)
		vms_vcpu_lane_finish(&lanes[v], x->max_ref_tsc);

	if (lttng) {
		rc = vms_ctfw_close(hc, err);
		hc = NULL;
		if (!rc)
			rc = vms_ctfw_close(gc, err);
		gc = NULL;
		if (rc)
			goto fail;
		tr->vmsync_pairs = x->cnt_gh < x->cnt_hg ? x->cnt_gh : x->cnt_hg;
		goto done;
	}
	/* options that needed the whole run */
	rc = vms_tdw_add_tsc2nsec(hw, x->mult, x->shift, 0, err);
	if (!rc)
		rc = vms_tdw_add_guest(hw, tr->guest_name, guest_id, NR_VCPUS, vcpu_tids, err);
	if (!rc)
		rc = vms_tdw_add_tsc2nsec(gw, x->mult, x->shift, 0, err);
	if (!rc) {
		static uint64_t times[NR_VCPUS][2], scal[NR_VCPUS][2], fr[NR_VCPUS][2];
		static int64_t offs[NR_VCPUS][2];
		struct vms_tdw_ts_cpu tc[NR_VCPUS];
		for (uint32_t v = 0; v < NR_VCPUS; v++) {
			const struct vms_vcpu_lane *L = &lanes[v];
			times[v][0] = vms_synth_to_guest(t0 - step, ratio, frac, L->tsc_offset);
			times[v][1] = vms_synth_to_guest(x->max_ref_tsc + step, ratio, frac, L->tsc_offset);
			for (int i = 0; i < 2; i++) {
				offs[v][i] = -L->tsc_offset;
				scal[v][i] = ratio;
				fr[v][i] = frac;
			}
			tc[v] = (struct vms_tdw_ts_cpu){ 2, times[v], offs[v], scal[v], fr[v] };
		}
		rc = vms_tdw_add_time_shift(gw, host_id, 0, NR_VCPUS, tc, err);
	}
	if (rc)
		goto fail;
	rc = vms_tdw_close(hw, err);
	hw = NULL;
	if (!rc)
		rc = vms_tdw_close(gw, err);
	gw = NULL;
	if (rc)
		goto fail;
done:
	vms_synth_truth_files(x, cfg, &clk);
	free(run);
	return VMS_OK;
fail:
	vms_tdw_discard(hw);
	vms_tdw_discard(gw);
	vms_ctfw_discard(hc);
	vms_ctfw_discard(gc);
	free(run);
	return rc ? rc : VMS_ERR_INTERNAL;
}

int vms_synth_open_file(struct vms_emitter *e, const char *path, uint32_t cpus,
			const struct vms_synth_config *cfg, uint64_t trace_id, const char *uname,
			bool host, struct vms_error *err)
{
	const uint16_t *ids = host ? host_ids : guest_ids;
	int rc = open_writer(&e->w, path, cpus, cfg->compression, cfg->level, trace_id, uname, err);
	if (!rc)
		rc = add_formats(e->w, ids, host, err);
	memcpy(e->id, ids, sizeof e->id);
	return rc;
}

/* The trace.dat pair of the default scenario's machines, for the other generators: both
 * writers opened with their event formats, ids and uname, the emitters pointed at them. */
int vms_synth_open_tracedat(struct vms_synth_ctx *x, const struct vms_synth_config *cfg,
			    uint64_t host_id, uint64_t guest_id, struct vms_error *err)
{
	int rc = open_writer(&x->host.w, cfg->host_path, HOST_CPUS, cfg->compression, cfg->level,
			     host_id, "Linux synth-host 6.18.0 x86_64 (SIMULATED)", err);
	if (!rc)
		rc = open_writer(&x->guest.w, cfg->guest_path, NR_VCPUS, cfg->compression, cfg->level,
				 guest_id, "Linux demo-guest 6.1.0 x86_64 (SIMULATED)", err);
	if (!rc)
		rc = add_formats(x->host.w, host_ids, true, err);
	if (!rc)
		rc = add_formats(x->guest.w, guest_ids, false, err);
	memcpy(x->host.id, host_ids, sizeof host_ids);
	memcpy(x->guest.id, guest_ids, sizeof guest_ids);
	return rc;
}
