/* Scenario "nested" (vmscope synth --scenario nested): three trace.dat files of a nested KVM
 * stack recorded the way trace-cmd records them, two CPUs each (cfg->nested_vcpus). L0 (host.dat) is the physical
 * host; its GUEST option names L1, whose vCPU v is L0's thread 3001+v. L1 (l1.dat) is L0's
 * guest and L2's hypervisor: TIME_SHIFT to L0, and a GUEST option naming L2, whose vCPU v is
 * L1's thread 4001+v. L2 (l2.dat) has a TIME_SHIFT to L1. Each hop has its own offset and
 * ratio, drawn from the seed (ratios powers of two, so that each layer's TSC2NSEC says its own
 * tick and the inverse is exact): L1's TSC = (L0's << s1) + o1, L2's = (L1's << s2) + o2.
 * L0's TSC counts ns (TSC2NSEC 1/0), so every time below is an L0 ns, the reference the
 * analysis reports.
 *
 * L2 vCPU v runs on L1's CPU v (L1's vCPU v), on L0's CPU v. After a start as trace-cmd's,
 * the same on both CPUs (L0 switches 3001+v in and enters L1, L1 switches 4001+v in and
 * enters L2, L2's task 200+v runs), each vCPU has cycles of running L2 code and one planted
 * thing, drawn from the seed:
 *   l0-exit     L0 handles an exit of L1 (EPT_VIOLATION) while L2 runs: vmm at l0
 *   reflected   an L2 exit of vcpu_lane.c's busy-guest reasons and costs: L0 sees an exit
 *               of L1 (that reason), enters L1, which records its kvm_exit of 4001+v and
 *               handles it (vmm at l1), sometimes itself exiting to L0 inside (VMREAD: vmm
 *               at l0, within the L2 exit); L1's kvm_entry ends it. The L2 exit's cost
 *               split: L0's part the VMREAD, L1's the rest
 *   l0-preempt  L0 exits L1 (EXTERNAL_INTERRUPT) and preempts 3001+v for its stress-ng
 *               (tid 77+v)
 *   l1-preempt  a reflected exit in which L1 preempts 4001+v for its own tid 77+v
 *               ("l1-noise": one tid at two layers, two threads)
 *   idle        L2 switches to its idle task and back, all in guest mode
 * and an end as trace-cmd's stops, at the same times on both CPUs: L2's last event, L1's
 * kvm_exit of 4001+v (IO_INSTRUCTION, unfinished), L0's kvm_exit of 3001+v (unfinished).
 * The truth (--truth) is per L2 vCPU its state at every instant with the layer of its cause
 * and the status vcpus --csv prints, its exits with their L0 part, and who took its CPU at
 * each layer. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "vmscope/synth.h"
#include "synth/event_emit.h"
#include "synth/kernel_formats.h"
#include "synth/prng.h"
#include "synth/synth_context.h"
#include "synth/truth_json.h"
#include "synth/vcpu_lane.h"

#define NESTED_L0_ID 0x4e45535430000000ull
#define NESTED_REASONS 16
#define NESTED_VCPUS VMS_SYNTH_NESTED_MAX_VCPUS /* the most; N->nv of them */
/* L0's machine name: its file's, host.dat (L1 and L2 are named by the GUEST options) */
#define L0 "host"

/* status bits as vcpus --csv prints them: base 1 idle, 2 running; 128 L1's VMM; 256 off CPU
 * at L1 (tests/nested/test_nested.sh) */
enum { ST_UNKNOWN = 0, ST_IDLE = 1, ST_RUNNING = 2, ST_L1_VMM = 128, ST_L1_OFF = 256 };

struct nstate {
	uint64_t start, end;
	uint32_t status;
	const char *state, *layer;      /* layer NULL: none */
};

struct nexit {
	uint32_t reason;
	const char *name;
	uint64_t count, total, min, max, below, unfinished;
};

struct nsteal {
	const char *layer;
	int32_t tid;
	const char *comm;
	uint64_t ns;
};

/* One L2 vCPU: vCPU v of L2 is L1's thread 4001+v on L1's CPU v, that is L1's vCPU v, L0's
 * thread 3001+v on L0's CPU v. Its own thieves (tid 77+v at L0 and at L1) and truth. */
struct lane {
	uint32_t v;
	struct vms_task l1v, l2v, l0noise, l1noise, task;
	uint64_t t;                     /* now, L0 ns */
	struct nstate cur;              /* the current interval (have: one started) */
	bool have;
	FILE *rows;                     /* its intervals as they end, for the truth: memory flat */
	uint64_t nrows, first_ns;
	struct nexit ex[NESTED_REASONS];
	uint32_t nex;
	struct nsteal steal[2];
	uint64_t ns[VMS_SYNTH_NSTATES];
};

struct nested {
	struct vms_emitter e[3];
	struct vms_synth_file_truth ft[3];
	struct vms_prng rng;
	uint32_t s[3];                  /* layer k's TSC = L0's << s[k] + o[k] */
	uint64_t o[3];
	struct vms_task idle;
	struct lane lane[NESTED_VCPUS];
	uint32_t nv;                    /* vCPUs at each layer */
};

static uint64_t raw(const struct nested *N, int layer, uint64_t t)
{
	uint64_t r = t;
	for (int k = 1; k <= layer; k++)
		r = (r << N->s[k]) + N->o[k];
	return r;
}

/* The current interval ends at L->t: into the totals and the truth (one that lasted nothing
 * is dropped). */
static void close_row(struct lane *L)
{
	const struct nstate *c = &L->cur;
	if (!L->have || c->end == c->start)
		return;
	for (int k = 0; k < VMS_SYNTH_NSTATES; k++)
		if (!strcmp(c->state, vms_synth_state_name(k)))
			L->ns[k] += c->end - c->start;
	if (L->rows) {
		fprintf(L->rows, "%s\n     [%" PRIu64 ", %" PRIu64 ", %u, \"%s\", ",
			L->nrows ? "," : "", c->start, c->end, c->status, c->state);
		if (c->layer)
			fprintf(L->rows, "\"%s\"]", c->layer);
		else
			fprintf(L->rows, "null]");
	}
	L->nrows++;
}

/* The L2 vCPU is in this state from L->t on; `split`: a new row even if it is the same (the
 * analysis starts one where what it knows changes, as at the end of a layer's trace). */
static void state(struct lane *L, uint32_t status, const char *st, const char *layer, bool split)
{
	if (L->have) {
		struct nstate *c = &L->cur;
		c->end = L->t;
		if (!split && c->status == status && !strcmp(c->state, st) &&
		    (c->layer == layer || (c->layer && layer && !strcmp(c->layer, layer))))
			return;
		close_row(L);
	} else {
		L->first_ns = L->t;
	}
	L->cur = (struct nstate){ L->t, L->t, status, st, layer };
	L->have = true;
}

static void exit_done(struct lane *L, uint32_t reason, const char *name, uint64_t ns,
		      uint64_t below, bool unfinished)
{
	uint32_t i = 0;
	while (i < L->nex && L->ex[i].reason != reason)
		i++;
	if (i == L->nex) {
		if (L->nex == NESTED_REASONS)
			return;
		L->ex[L->nex++] = (struct nexit){ reason, name, 0, 0, UINT64_MAX, 0, 0, 0 };
	}
	struct nexit *x = &L->ex[i];
	x->count++;
	if (unfinished) {
		x->unfinished++;
		return;
	}
	x->total += ns;
	x->below += below;
	if (ns < x->min)
		x->min = ns;
	if (ns > x->max)
		x->max = ns;
}

static uint64_t draw(struct nested *N, uint64_t lo, uint64_t span)
{
	return lo + vms_prng_below(&N->rng, span);
}

static void l0_exit(struct nested *N, struct lane *L, uint32_t reason)
{
	vms_emit_kvm_exit(&N->e[0], L->v, raw(N, 0, L->t), &L->l1v, L->v, reason,
			  0xffffffff81000000ull, 0, 0, 0);
}

static void l0_entry(struct nested *N, struct lane *L)
{
	vms_emit_kvm_entry(&N->e[0], L->v, raw(N, 0, L->t), &L->l1v, L->v, 0xffffffff81000000ull, 0);
}

static void l1_exit(struct nested *N, struct lane *L, uint32_t reason)
{
	vms_emit_kvm_exit(&N->e[1], L->v, raw(N, 1, L->t), &L->l2v, L->v, reason, 0x401000, 0, 0, 0);
}

static void l1_entry(struct nested *N, struct lane *L)
{
	vms_emit_kvm_entry(&N->e[1], L->v, raw(N, 1, L->t), &L->l2v, L->v, 0x401000, 0);
}

static void sw(struct nested *N, struct lane *L, int layer, const struct vms_task *prev,
	       int64_t prev_state, const struct vms_task *next)
{
	vms_emit_switch(&N->e[layer], L->v, raw(N, layer, L->t), prev, prev_state, next);
}

/* L0 handles an exit of L1 of `ns` while L1's view is `status` (2: L1 thinks L2 runs) */
static void l0_handles(struct nested *N, struct lane *L, uint32_t reason, uint64_t ns,
		       uint32_t status)
{
	l0_exit(N, L, reason);
	state(L, status, "vmm", L0, false);
	L->t += ns;
	l0_entry(N, L);
}

/* L0's preemption of the L1 vCPU thread inside an exit of L1 */
static void l0_preempt(struct nested *N, struct lane *L)
{
	l0_exit(N, L, vms_lane_exit_irq()->code);
	state(L, ST_RUNNING, "vmm", L0, false);
	L->t += draw(N, 50, 400);
	sw(N, L, 0, &L->l1v, VMS_TASK_RUNNING, &L->l0noise);
	state(L, ST_RUNNING, "preempted", L0, false);
	uint64_t p = draw(N, 500, 20000);
	L->steal[0].ns += p;
	L->t += p;
	sw(N, L, 0, &L->l0noise, VMS_TASK_INTERRUPTIBLE, &L->l1v);
	state(L, ST_RUNNING, "vmm", L0, false);
	L->t += draw(N, 50, 300);
	l0_entry(N, L);
}

/* An L2 exit reflected to L1 (L0's exit of L1 first), handled there, `preempt`: L1 preempts
 * the L2 vCPU thread during it */
static void reflected(struct nested *N, struct lane *L, bool preempt)
{
	/* the reasons and costs of vcpu_lane.c's busy guest (its time is L1's handling) */
	const struct vms_exit_kind *k = preempt ? vms_lane_exit_irq() : vms_lane_exit_busy(&N->rng);
	uint64_t cost = (uint64_t)(k->min_ns + vms_prng_exp(&N->rng, k->mean_ns - k->min_ns));
	l0_handles(N, L, k->code, draw(N, 100, 600), ST_RUNNING);
	state(L, ST_RUNNING, "running", NULL, false);
	L->t += draw(N, 20, 200);       /* L0 entered L1 in host mode: L1's kvm_exit follows */
	l1_exit(N, L, k->code);
	uint64_t start = L->t, below = 0;
	state(L, ST_RUNNING | ST_L1_VMM, "vmm", "l1", false);
	L->t += cost / 2 + 1;
	if (vms_prng_below(&N->rng, 2)) {   /* L1's own exit to L0 within its handling */
		uint64_t ns = draw(N, 100, 900);
		l0_handles(N, L, 23, ns, ST_RUNNING | ST_L1_VMM);
		below = ns;
		state(L, ST_RUNNING | ST_L1_VMM, "vmm", "l1", false);
	}
	L->t += cost - cost / 2 + 1;
	if (preempt) {
		sw(N, L, 1, &L->l2v, VMS_TASK_RUNNING, &L->l1noise);
		state(L, ST_RUNNING | ST_L1_VMM | ST_L1_OFF, "preempted", "l1", false);
		uint64_t p = draw(N, 500, 20000);
		L->steal[1].ns += p;
		L->t += p;
		sw(N, L, 1, &L->l1noise, VMS_TASK_INTERRUPTIBLE, &L->l2v);
		state(L, ST_RUNNING | ST_L1_VMM, "vmm", "l1", false);
		L->t += draw(N, 50, 300);
	}
	l1_entry(N, L);
	exit_done(L, k->code, k->name, L->t - start, below, false);
}

static void cycle(struct nested *N, struct lane *L)
{
	state(L, ST_RUNNING, "running", NULL, false);
	L->t += draw(N, 1000, 30000);
	switch (vms_prng_below(&N->rng, 5)) {
	case 0:
		l0_handles(N, L, 48, draw(N, 100, 2000), ST_RUNNING);
		break;
	case 1:
		reflected(N, L, false);
		break;
	case 2:
		l0_preempt(N, L);
		break;
	case 3:
		reflected(N, L, true);
		break;
	default:
		sw(N, L, 2, &L->task, VMS_TASK_INTERRUPTIBLE, &N->idle);
		state(L, ST_IDLE, "idle", NULL, false);
		L->t += draw(N, 1000, 50000);
		sw(N, L, 2, &N->idle, VMS_TASK_RUNNING, &L->task);
		break;
	}
	state(L, ST_RUNNING, "running", NULL, false);
}

static struct vms_task mktask(int32_t tid, const char *comm)
{
	struct vms_task t;
	memset(&t, 0, sizeof t);
	t.tid = tid;
	t.prio = 120;
	snprintf(t.comm, sizeof t.comm, "%s", comm);
	return t;
}

static int time_shift(struct vms_tdw *w, uint32_t nv, uint64_t peer, uint64_t o, uint32_t s,
		      struct vms_error *err)
{
	uint64_t time[NESTED_VCPUS] = { 0 }, scaling[NESTED_VCPUS], frac[NESTED_VCPUS] = { 0 };
	int64_t offset[NESTED_VCPUS];
	struct vms_tdw_ts_cpu c[NESTED_VCPUS];
	for (int v = 0; v < (int)nv; v++) {
		scaling[v] = 1ull << s;
		offset[v] = -(int64_t)o;
		c[v] = (struct vms_tdw_ts_cpu){ 1, &time[v], &offset[v], &scaling[v], &frac[v] };
	}
	return vms_tdw_add_time_shift(w, peer, 0, nv, c, err);
}

static int open_files(struct nested *N, const struct vms_synth_config *cfg, const char *dir,
		      struct vms_error *err)
{
	static const char *const names[3] = { "host", "l1", "l2" };
	static const char *const unames[3] = { "Linux nested-l0 6.18.0 x86_64 (SIMULATED)",
		"Linux nested-l1 6.12.0 x86_64 (SIMULATED)", "Linux nested-l2 6.1.0 x86_64 (SIMULATED)" };
	int rc = 0;
	for (int k = 0; k < 3 && !rc; k++) {
		struct vms_emitter *e = &N->e[k];
		struct vms_synth_file_truth *ft = &N->ft[k];
		snprintf(ft->path, sizeof ft->path, "%s/%s.dat", dir, names[k]);
		ft->trace_id = NESTED_L0_ID + (uint64_t)k;
		ft->nr_cpus = N->nv;
		e->ft = ft;
		e->err = err;
		e->mult = 1;
		rc = vms_synth_open_file(e, ft->path, N->nv, cfg, ft->trace_id, unames[k], k < 2,
					 err);
		if (!rc)
			rc = vms_tdw_add_tsc2nsec(e->w, 1, N->s[1] * (k >= 1) + N->s[2] * (k == 2), 0, err);
	}
	int32_t t1[NESTED_VCPUS], t2[NESTED_VCPUS];
	for (int v = 0; v < (int)N->nv; v++) {
		t1[v] = N->lane[v].l1v.tid;
		t2[v] = N->lane[v].l2v.tid;
	}
	if (!rc)
		rc = vms_tdw_add_guest(N->e[0].w, "l1", N->ft[1].trace_id, N->nv, t1, err);
	if (!rc)
		rc = time_shift(N->e[1].w, N->nv, N->ft[0].trace_id, N->o[1], N->s[1], err);
	if (!rc)
		rc = vms_tdw_add_guest(N->e[1].w, "l2", N->ft[2].trace_id, N->nv, t2, err);
	if (!rc)
		rc = time_shift(N->e[2].w, N->nv, N->ft[1].trace_id, N->o[2], N->s[2], err);
	for (int v = 0; v < (int)N->nv && !rc; v++) {
		const struct lane *L = &N->lane[v];
		rc = vms_tdw_add_cmdline(N->e[0].w, L->l1v.tid, L->l1v.comm, err);
		if (!rc)
			rc = vms_tdw_add_cmdline(N->e[0].w, L->l0noise.tid, L->l0noise.comm, err);
		if (!rc)
			rc = vms_tdw_add_cmdline(N->e[1].w, L->l2v.tid, L->l2v.comm, err);
		if (!rc)
			rc = vms_tdw_add_cmdline(N->e[1].w, L->l1noise.tid, L->l1noise.comm, err);
		if (!rc)
			rc = vms_tdw_add_cmdline(N->e[2].w, L->task.tid, L->task.comm, err);
	}
	return rc;
}

/* The truth: its head, each L2 vCPU (its intervals copied from where they were spooled), the
 * window and the files. */
static int truth_json(const struct nested *N, const struct vms_synth_config *cfg, FILE *f)
{
	fprintf(f, "{\n  \"simulated\": true,\n  \"scenario\": \"nested\",\n  \"seed\": %" PRIu64
		",\n  \"time_unit\": \"ns (L0's, the reference)\",\n  \"clocks\": [", cfg->seed);
	for (int k = 1; k < 3; k++)
		fprintf(f, "%s{\"machine\": \"l%d\", \"to\": \"%s\", \"offset\": -%" PRIu64
			", \"scaling\": %llu}", k > 1 ? ", " : "", k, k == 1 ? L0 : "l1", N->o[k],
			1ull << N->s[k]);
	fprintf(f, "],\n  \"l2_vcpus\": [");
	for (int v = 0; v < (int)N->nv; v++) {
		const struct lane *L = &N->lane[v];
		fprintf(f, "%s{\"machine\": \"l2\", \"vcpu\": %u, \"l1_tid\": %d, \"l0_tid\": %d,\n"
			"   \"states\": [", v ? ",\n  " : "", L->v, L->l2v.tid, L->l1v.tid);
		char buf[65536];
		size_t n;
		rewind(L->rows);
		while ((n = fread(buf, 1, sizeof buf, L->rows)))
			fwrite(buf, 1, n, f);
		if (ferror(L->rows))
			return -1;
		fprintf(f, "],\n   \"ns\": {");
		for (int s = 0; s < VMS_SYNTH_NSTATES; s++)
			fprintf(f, "%s\"%s\": %" PRIu64, s ? ", " : "", vms_synth_state_name(s), L->ns[s]);
		fprintf(f, "},\n   \"exits\": [");
		for (uint32_t i = 0; i < L->nex; i++) {
			const struct nexit *x = &L->ex[i];
			fprintf(f, "%s\n     {\"reason\": %u, \"name\": \"%s\", \"count\": %" PRIu64
				", \"total_ns\": %" PRIu64 ", \"min_ns\": %" PRIu64 ", \"max_ns\": %"
				PRIu64 ", \"unfinished\": %" PRIu64 ", \"layer\": \"l1\", \"below_layer\": "
				"\"" L0 "\", \"below_total_ns\": %" PRIu64 "}", i ? "," : "", x->reason,
				x->name, x->count, x->total, x->min == UINT64_MAX ? 0 : x->min, x->max,
				x->unfinished, x->below);
		}
		fprintf(f, "],\n   \"steal\": [");
		for (int i = 0; i < 2; i++)
			fprintf(f, "%s{\"layer\": \"%s\", \"tid\": %d, \"comm\": \"%s\", \"ns\": %" PRIu64
				"}", i ? ", " : "", L->steal[i].layer, L->steal[i].tid, L->steal[i].comm,
				L->steal[i].ns);
		fprintf(f, "]}");
	}
	fprintf(f, "],\n  \"window\": {\"start_ns\": %" PRIu64 ", \"end_ns\": %" PRIu64
		"},\n  \"files\": {\n", N->lane[0].first_ns, N->lane[0].cur.end);
	static const char *const keys[3] = { L0, "l1", "l2" };
	for (int k = 0; k < 3; k++) {
		vms_synth_file_json(f, keys[k], &N->ft[k]);
		fprintf(f, k < 2 ? ",\n" : "\n");
	}
	fprintf(f, "  }\n}\n");
	return 0;
}

static uint64_t total(const struct nested *N)
{
	return N->ft[0].total + N->ft[1].total + N->ft[2].total;
}

int vms_synth_nested_run(const struct vms_synth_config *cfg, const char *dir, FILE *truth,
			 uint64_t *events, struct vms_error *err)
{
	uint32_t nv = cfg->nested_vcpus ? cfg->nested_vcpus : 2;
	if (nv > NESTED_VCPUS)
		return vms_error_set(err, VMS_ERR_USAGE, "synth nested: %u vCPUs, at most %d", nv,
				     NESTED_VCPUS);
	struct nested *N = calloc(1, sizeof *N);
	if (!N)
		return vms_error_set(err, VMS_ERR_NOMEM, "synth nested: out of memory");
	N->nv = nv;
	vms_prng_seed(&N->rng, cfg->seed);
	for (int k = 1; k < 3; k++) {
		N->s[k] = (uint32_t)vms_prng_below(&N->rng, 3);
		N->o[k] = 1000000000ull * (1 + vms_prng_below(&N->rng, 1000));
	}
	N->idle = mktask(0, "swapper");
	int rc = 0;
	for (uint32_t v = 0; v < N->nv; v++) {
		struct lane *L = &N->lane[v];
		char name[24];   /* v <= 15: "CPU 15/KVM" fits a comm (mktask cuts to one); 24 for
		                    * any u32, which -O0 format-truncation asks for */
		L->v = v;
		snprintf(name, sizeof name, "CPU %u/KVM", v);
		L->l1v = mktask(3001 + (int32_t)v, name);
		L->l2v = mktask(4001 + (int32_t)v, name);
		L->l0noise = mktask(77 + (int32_t)v, "stress-ng");
		L->l1noise = mktask(77 + (int32_t)v, "l1-noise");
		L->task = mktask(200 + (int32_t)v, "l2-app");
		L->steal[0] = (struct nsteal){ L0, L->l0noise.tid, "stress-ng", 0 };
		L->steal[1] = (struct nsteal){ "l1", L->l1noise.tid, "l1-noise", 0 };
		if (truth && !(L->rows = tmpfile()) && !rc)
			rc = vms_error_set(err, VMS_ERR_IO, "synth nested: no temporary file for the "
					   "truth");
	}
	if (!rc)
		rc = open_files(N, cfg, dir, err);
	if (rc)
		goto out;
	/* the start, the same on every CPU: L0's, L1's, then L2's first event; unknown until
	 * L2's (its base) */
	uint64_t t0 = 1000000 + vms_prng_below(&N->rng, 1000000);
	for (int v = 0; v < (int)N->nv; v++) {
		struct lane *L = &N->lane[v];
		L->t = t0;
		state(L, ST_UNKNOWN, "unknown", NULL, false);
		sw(N, L, 0, &N->idle, VMS_TASK_RUNNING, &L->l1v);
		L->t += 100;
		l0_entry(N, L);
		L->t += 900;
		sw(N, L, 1, &N->idle, VMS_TASK_RUNNING, &L->l2v);
		L->t += 100;
		l1_entry(N, L);
		L->t += 400;
		sw(N, L, 2, &N->idle, VMS_TASK_RUNNING, &L->task);
	}
	/* cycles, the vCPU furthest behind first, until the files hold cfg->events (the end
	 * adds 5 per vCPU) */
	while (total(N) + 5 * N->nv < cfg->events && !N->e[0].rc && !N->e[1].rc &&
	       !N->e[2].rc) {
		struct lane *L = &N->lane[0];
		for (int v = 1; v < (int)N->nv; v++)
			if (N->lane[v].t < L->t)
				L = &N->lane[v];
		cycle(N, L);
	}
	/* the end, the same on every CPU (each file's last event is each CPU's): L2's last
	 * event, L1's (an unfinished exit), L0's */
	uint64_t end = 0;
	for (int v = 0; v < (int)N->nv; v++)
		if (N->lane[v].t > end)
			end = N->lane[v].t;
	uint64_t idle = draw(N, 1000, 5000), d1 = draw(N, 500, 1000), d0 = draw(N, 500, 1000);
	for (int v = 0; v < (int)N->nv; v++) {
		struct lane *L = &N->lane[v];
		L->t = end;
		sw(N, L, 2, &L->task, VMS_TASK_INTERRUPTIBLE, &N->idle);
		state(L, ST_IDLE, "idle", NULL, false);
		L->t += idle;
		sw(N, L, 2, &N->idle, VMS_TASK_RUNNING, &L->task);
		state(L, ST_UNKNOWN, "unknown", NULL, false);
		L->t += d1;
		l1_exit(N, L, 30);
		exit_done(L, 30, "IO_INSTRUCTION", 0, 0, true);
		state(L, ST_UNKNOWN, "unknown", NULL, true);
		L->t += d0;
		l0_exit(N, L, vms_lane_exit_irq()->code);
		state(L, ST_UNKNOWN, "unknown", NULL, true);   /* the last row ends at t */
		close_row(L);
	}
	for (int k = 0; k < 3 && !rc; k++)
		rc = N->e[k].rc;
	for (int k = 0; k < 3; k++) {
		if (!N->e[k].w)
			continue;
		int r = rc ? (vms_tdw_discard(N->e[k].w), 0) : vms_tdw_close(N->e[k].w, err);
		N->e[k].w = NULL;
		if (r && !rc)
			rc = r;
	}
	if (!rc && truth && truth_json(N, cfg, truth))
		rc = vms_error_set(err, VMS_ERR_IO, "synth nested: cannot read back the truth's "
				   "intervals");
	if (events)
		*events = total(N);
out:
	for (int k = 0; k < 3; k++)
		if (N->e[k].w)
			vms_tdw_discard(N->e[k].w);
	for (int v = 0; v < (int)N->nv; v++)
		if (N->lane[v].rows)
			fclose(N->lane[v].rows);
	free(N);
	return rc;
}
