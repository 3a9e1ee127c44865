/* Scenario "nested" (vmscope synth --scenario nested): three trace.dat files of a nested KVM
 * stack recorded the way trace-cmd records them. L0 (host.dat) is the physical host; its GUEST
 * option names L1, whose vCPU 0 is L0's thread 3001. L1 (l1.dat) is L0's guest and L2's
 * hypervisor: TIME_SHIFT to L0, and a GUEST option naming L2, whose vCPU 0 is L1's thread
 * 4001. L2 (l2.dat) has a TIME_SHIFT to L1. Each hop has its own offset and ratio, drawn from
 * the seed (ratios powers of two, so that each layer's TSC2NSEC says its own tick and the
 * inverse is exact): L1's TSC = (L0's << s1) + o1, L2's = (L1's << s2) + o2. L0's TSC counts
 * ns (TSC2NSEC 1/0), so every time below is an L0 ns, the reference the analysis reports.
 *
 * One CPU per layer, one L2 vCPU. After a start as trace-cmd's (L0 switches 3001 in and enters
 * L1, L1 switches 4001 in and enters L2, L2's task 200 runs), cycles of running L2 code and one
 * planted thing each, drawn from the seed:
 *   l0-exit     L0 handles an exit of L1 (EPT_VIOLATION) while L2 runs: vmm at l0
 *   reflected   an L2 exit of vcpu_lane.c's busy-guest reasons and costs: L0 sees an exit
 *               of L1 (that reason), enters L1, which records its kvm_exit of 4001 and
 *               handles it (vmm at l1), sometimes itself exiting to L0 inside (VMREAD: vmm
 *               at l0, within the L2 exit); L1's kvm_entry ends it. The L2 exit's cost
 *               split: L0's part the VMREAD, L1's the rest
 *   l0-preempt  L0 exits L1 (EXTERNAL_INTERRUPT) and preempts 3001 for its stress-ng (tid 77)
 *   l1-preempt  a reflected exit in which L1 preempts 4001 for its own tid 77 ("l1-noise")
 *   idle        L2 switches to its idle task and back, all in guest mode
 * and an end as trace-cmd's stops: L2's last event, L1's kvm_exit of 4001 (IO_INSTRUCTION,
 * unfinished), L0's kvm_exit of 3001 (unfinished). The truth (--truth) is the L2 vCPU's state
 * at every instant with the layer of its cause and the status vcpus --csv prints, its exits
 * with their L0 part, and who took its CPU at each layer. */
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

struct nested {
	struct vms_emitter e[3];
	struct vms_synth_file_truth ft[3];
	struct vms_prng rng;
	uint32_t s[3];                  /* layer k's TSC = L0's << s[k] + o[k] */
	uint64_t o[3];
	struct vms_task l1v, l2v, l0noise, l1noise, idle, task;
	uint64_t t;                     /* now, L0 ns */
	struct nstate cur;              /* the L2 vCPU's current interval (have: one started) */
	bool have;
	FILE *truth;                    /* the intervals are written as they end: memory flat */
	uint64_t nrows, first_ns;
	struct nexit ex[NESTED_REASONS];
	uint32_t nex;
	struct nsteal steal[2];
	uint64_t ns[VMS_SYNTH_NSTATES];
};

static uint64_t raw(const struct nested *N, int layer, uint64_t t)
{
	uint64_t r = t;
	for (int k = 1; k <= layer; k++)
		r = (r << N->s[k]) + N->o[k];
	return r;
}

/* The current interval ends at N->t: into the totals and the truth (one that lasted nothing
 * is dropped). */
static void close_row(struct nested *N)
{
	const struct nstate *c = &N->cur;
	if (!N->have || c->end == c->start)
		return;
	for (int k = 0; k < VMS_SYNTH_NSTATES; k++)
		if (!strcmp(c->state, vms_synth_state_name(k)))
			N->ns[k] += c->end - c->start;
	if (N->truth) {
		fprintf(N->truth, "%s\n     [%" PRIu64 ", %" PRIu64 ", %u, \"%s\", ",
			N->nrows ? "," : "", c->start, c->end, c->status, c->state);
		if (c->layer)
			fprintf(N->truth, "\"%s\"]", c->layer);
		else
			fprintf(N->truth, "null]");
	}
	N->nrows++;
}

/* The L2 vCPU is in this state from N->t on; `split`: a new row even if it is the same (the
 * analysis starts one where what it knows changes, as at the end of a layer's trace). */
static void state(struct nested *N, uint32_t status, const char *st, const char *layer, bool split)
{
	if (N->have) {
		struct nstate *c = &N->cur;
		c->end = N->t;
		if (!split && c->status == status && !strcmp(c->state, st) &&
		    (c->layer == layer || (c->layer && layer && !strcmp(c->layer, layer))))
			return;
		close_row(N);
	} else {
		N->first_ns = N->t;
	}
	N->cur = (struct nstate){ N->t, N->t, status, st, layer };
	N->have = true;
}

static void exit_done(struct nested *N, uint32_t reason, const char *name, uint64_t ns,
		      uint64_t below, bool unfinished)
{
	uint32_t i = 0;
	while (i < N->nex && N->ex[i].reason != reason)
		i++;
	if (i == N->nex) {
		if (N->nex == NESTED_REASONS)
			return;
		N->ex[N->nex++] = (struct nexit){ reason, name, 0, 0, UINT64_MAX, 0, 0, 0 };
	}
	struct nexit *x = &N->ex[i];
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

static void l0_exit(struct nested *N, uint32_t reason)
{
	vms_emit_kvm_exit(&N->e[0], 0, raw(N, 0, N->t), &N->l1v, 0, reason, 0xffffffff81000000ull,
			  0, 0, 0);
}

static void l0_entry(struct nested *N)
{
	vms_emit_kvm_entry(&N->e[0], 0, raw(N, 0, N->t), &N->l1v, 0, 0xffffffff81000000ull, 0);
}

static void l1_exit(struct nested *N, uint32_t reason)
{
	vms_emit_kvm_exit(&N->e[1], 0, raw(N, 1, N->t), &N->l2v, 0, reason, 0x401000, 0, 0, 0);
}

static void l1_entry(struct nested *N)
{
	vms_emit_kvm_entry(&N->e[1], 0, raw(N, 1, N->t), &N->l2v, 0, 0x401000, 0);
}

/* L0 handles an exit of L1 of `ns` while L1's view is `status` (2: L1 thinks L2 runs) */
static void l0_handles(struct nested *N, uint32_t reason, uint64_t ns, uint32_t status)
{
	l0_exit(N, reason);
	state(N, status, "vmm", L0, false);
	N->t += ns;
	l0_entry(N);
}

/* L0's preemption of 3001 inside an exit of L1 */
static void l0_preempt(struct nested *N)
{
	l0_exit(N, 1);
	state(N, ST_RUNNING, "vmm", L0, false);
	N->t += draw(N, 50, 400);
	vms_emit_switch(&N->e[0], 0, raw(N, 0, N->t), &N->l1v, VMS_TASK_RUNNING, &N->l0noise);
	state(N, ST_RUNNING, "preempted", L0, false);
	uint64_t p = draw(N, 500, 20000);
	N->steal[0].ns += p;
	N->t += p;
	vms_emit_switch(&N->e[0], 0, raw(N, 0, N->t), &N->l0noise, VMS_TASK_INTERRUPTIBLE, &N->l1v);
	state(N, ST_RUNNING, "vmm", L0, false);
	N->t += draw(N, 50, 300);
	l0_entry(N);
}

/* An L2 exit reflected to L1 (L0's exit of L1 first), handled there, `preempt`: L1 preempts
 * 4001 during it */
static void reflected(struct nested *N, bool preempt)
{
	/* the reasons and costs of vcpu_lane.c's busy guest (its time is L1's handling) */
	const struct vms_exit_kind *k = preempt ? vms_lane_exit_irq() : vms_lane_exit_busy(&N->rng);
	uint64_t cost = (uint64_t)(k->min_ns + vms_prng_exp(&N->rng, k->mean_ns - k->min_ns));
	l0_handles(N, k->code, draw(N, 100, 600), ST_RUNNING);
	state(N, ST_RUNNING, "running", NULL, false);
	N->t += draw(N, 20, 200);       /* L0 entered L1 in host mode: L1's kvm_exit follows */
	l1_exit(N, k->code);
	uint64_t start = N->t, below = 0;
	state(N, ST_RUNNING | ST_L1_VMM, "vmm", "l1", false);
	N->t += cost / 2 + 1;
	if (vms_prng_below(&N->rng, 2)) {   /* L1's own exit to L0 within its handling */
		uint64_t ns = draw(N, 100, 900);
		l0_handles(N, 23, ns, ST_RUNNING | ST_L1_VMM);
		below = ns;
		state(N, ST_RUNNING | ST_L1_VMM, "vmm", "l1", false);
	}
	N->t += cost - cost / 2 + 1;
	if (preempt) {
		vms_emit_switch(&N->e[1], 0, raw(N, 1, N->t), &N->l2v, VMS_TASK_RUNNING, &N->l1noise);
		state(N, ST_RUNNING | ST_L1_VMM | ST_L1_OFF, "preempted", "l1", false);
		uint64_t p = draw(N, 500, 20000);
		N->steal[1].ns += p;
		N->t += p;
		vms_emit_switch(&N->e[1], 0, raw(N, 1, N->t), &N->l1noise, VMS_TASK_INTERRUPTIBLE,
				&N->l2v);
		state(N, ST_RUNNING | ST_L1_VMM, "vmm", "l1", false);
		N->t += draw(N, 50, 300);
	}
	l1_entry(N);
	exit_done(N, k->code, k->name, N->t - start, below, false);
}

static void cycle(struct nested *N)
{
	state(N, ST_RUNNING, "running", NULL, false);
	N->t += draw(N, 1000, 30000);
	switch (vms_prng_below(&N->rng, 5)) {
	case 0:
		l0_handles(N, 48, draw(N, 100, 2000), ST_RUNNING);
		break;
	case 1:
		reflected(N, false);
		break;
	case 2:
		l0_preempt(N);
		break;
	case 3:
		reflected(N, true);
		break;
	default:
		vms_emit_switch(&N->e[2], 0, raw(N, 2, N->t), &N->task, VMS_TASK_INTERRUPTIBLE,
				&N->idle);
		state(N, ST_IDLE, "idle", NULL, false);
		N->t += draw(N, 1000, 50000);
		vms_emit_switch(&N->e[2], 0, raw(N, 2, N->t), &N->idle, VMS_TASK_RUNNING, &N->task);
		break;
	}
	state(N, ST_RUNNING, "running", NULL, false);
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

static int time_shift(struct vms_tdw *w, uint64_t peer, uint64_t o, uint32_t s,
		      struct vms_error *err)
{
	uint64_t time = 0, scaling = 1ull << s, frac = 0;
	int64_t offset = -(int64_t)o;
	struct vms_tdw_ts_cpu c = { 1, &time, &offset, &scaling, &frac };
	return vms_tdw_add_time_shift(w, peer, 0, 1, &c, err);
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
		ft->nr_cpus = 1;
		e->ft = ft;
		e->err = err;
		e->mult = 1;
		rc = vms_synth_open_file(e, ft->path, 1, cfg, ft->trace_id, unames[k], k < 2, err);
		if (!rc)
			rc = vms_tdw_add_tsc2nsec(e->w, 1, N->s[1] * (k >= 1) + N->s[2] * (k == 2), 0, err);
	}
	int32_t t1 = N->l1v.tid, t2 = N->l2v.tid;
	if (!rc)
		rc = vms_tdw_add_guest(N->e[0].w, "l1", N->ft[1].trace_id, 1, &t1, err);
	if (!rc)
		rc = time_shift(N->e[1].w, N->ft[0].trace_id, N->o[1], N->s[1], err);
	if (!rc)
		rc = vms_tdw_add_guest(N->e[1].w, "l2", N->ft[2].trace_id, 1, &t2, err);
	if (!rc)
		rc = time_shift(N->e[2].w, N->ft[1].trace_id, N->o[2], N->s[2], err);
	if (!rc)
		rc = vms_tdw_add_cmdline(N->e[0].w, t1, N->l1v.comm, err);
	if (!rc)
		rc = vms_tdw_add_cmdline(N->e[0].w, N->l0noise.tid, N->l0noise.comm, err);
	if (!rc)
		rc = vms_tdw_add_cmdline(N->e[1].w, t2, N->l2v.comm, err);
	if (!rc)
		rc = vms_tdw_add_cmdline(N->e[1].w, N->l1noise.tid, N->l1noise.comm, err);
	if (!rc)
		rc = vms_tdw_add_cmdline(N->e[2].w, N->task.tid, N->task.comm, err);
	return rc;
}

/* The truth's beginning, up to the L2 vCPU's intervals, which follow as they end. */
static void truth_head(const struct nested *N, const struct vms_synth_config *cfg, FILE *f)
{
	fprintf(f, "{\n  \"simulated\": true,\n  \"scenario\": \"nested\",\n  \"seed\": %" PRIu64
		",\n  \"time_unit\": \"ns (L0's, the reference)\",\n  \"clocks\": [", cfg->seed);
	for (int k = 1; k < 3; k++)
		fprintf(f, "%s{\"machine\": \"l%d\", \"to\": \"%s\", \"offset\": -%" PRIu64
			", \"scaling\": %llu}", k > 1 ? ", " : "", k, k == 1 ? L0 : "l1", N->o[k],
			1ull << N->s[k]);
	fprintf(f, "],\n  \"l2_vcpus\": [{\"machine\": \"l2\", \"vcpu\": 0, \"l1_tid\": %d, "
		"\"l0_tid\": %d,\n   \"states\": [", N->l2v.tid, N->l1v.tid);
}

static void truth_tail(const struct nested *N, FILE *f)
{
	fprintf(f, "],\n   \"ns\": {");
	for (int s = 0; s < VMS_SYNTH_NSTATES; s++)
		fprintf(f, "%s\"%s\": %" PRIu64, s ? ", " : "", vms_synth_state_name(s), N->ns[s]);
	fprintf(f, "},\n   \"exits\": [");
	for (uint32_t i = 0; i < N->nex; i++) {
		const struct nexit *x = &N->ex[i];
		fprintf(f, "%s\n     {\"reason\": %u, \"name\": \"%s\", \"count\": %" PRIu64
			", \"total_ns\": %" PRIu64 ", \"min_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64
			", \"unfinished\": %" PRIu64 ", \"layer\": \"l1\", \"below_layer\": \"" L0 "\", "
			"\"below_total_ns\": %" PRIu64 "}", i ? "," : "", x->reason, x->name, x->count,
			x->total, x->min == UINT64_MAX ? 0 : x->min, x->max, x->unfinished, x->below);
	}
	fprintf(f, "],\n   \"steal\": [");
	for (int i = 0; i < 2; i++)
		fprintf(f, "%s{\"layer\": \"%s\", \"tid\": %d, \"comm\": \"%s\", \"ns\": %" PRIu64 "}",
			i ? ", " : "", N->steal[i].layer, N->steal[i].tid, N->steal[i].comm,
			N->steal[i].ns);
	fprintf(f, "]}],\n  \"window\": {\"start_ns\": %" PRIu64 ", \"end_ns\": %" PRIu64
		"},\n  \"files\": {\n", N->first_ns, N->cur.end);
	static const char *const keys[3] = { L0, "l1", "l2" };
	for (int k = 0; k < 3; k++) {
		vms_synth_file_json(f, keys[k], &N->ft[k]);
		fprintf(f, k < 2 ? ",\n" : "\n");
	}
	fprintf(f, "  }\n}\n");
}

int vms_synth_nested_run(const struct vms_synth_config *cfg, const char *dir, FILE *truth,
			 uint64_t *events, struct vms_error *err)
{
	struct nested *N = calloc(1, sizeof *N);
	if (!N)
		return vms_error_set(err, VMS_ERR_NOMEM, "synth nested: out of memory");
	vms_prng_seed(&N->rng, cfg->seed);
	for (int k = 1; k < 3; k++) {
		N->s[k] = (uint32_t)vms_prng_below(&N->rng, 3);
		N->o[k] = 1000000000ull * (1 + vms_prng_below(&N->rng, 1000));
	}
	N->l1v = mktask(3001, "CPU 0/KVM");
	N->l2v = mktask(4001, "CPU 0/KVM");
	N->l0noise = mktask(77, "stress-ng");
	N->l1noise = mktask(77, "l1-noise");
	N->idle = mktask(0, "swapper/0");
	N->task = mktask(200, "l2-app");
	N->steal[0] = (struct nsteal){ L0, 77, "stress-ng", 0 };
	N->steal[1] = (struct nsteal){ "l1", 77, "l1-noise", 0 };
	int rc = open_files(N, cfg, dir, err);
	if (rc)
		goto out;
	N->truth = truth;
	if (truth)
		truth_head(N, cfg, truth);
	/* the start: L0's, L1's, then L2's first event; unknown until L2's (its base) */
	N->t = 1000000 + vms_prng_below(&N->rng, 1000000);
	state(N, ST_UNKNOWN, "unknown", NULL, false);
	vms_emit_switch(&N->e[0], 0, raw(N, 0, N->t), &N->idle, VMS_TASK_RUNNING, &N->l1v);
	N->t += 100;
	l0_entry(N);
	N->t += 900;
	vms_emit_switch(&N->e[1], 0, raw(N, 1, N->t), &N->idle, VMS_TASK_RUNNING, &N->l2v);
	N->t += 100;
	l1_entry(N);
	N->t += 400;
	vms_emit_switch(&N->e[2], 0, raw(N, 2, N->t), &N->idle, VMS_TASK_RUNNING, &N->task);
	/* cycles until the three files hold cfg->events (the end adds 5) */
	while (N->ft[0].total + N->ft[1].total + N->ft[2].total + 5 < cfg->events &&
	       !N->e[0].rc && !N->e[1].rc && !N->e[2].rc)
		cycle(N);
	/* the end: L2's last event, L1's (an unfinished exit), L0's */
	vms_emit_switch(&N->e[2], 0, raw(N, 2, N->t), &N->task, VMS_TASK_INTERRUPTIBLE, &N->idle);
	state(N, ST_IDLE, "idle", NULL, false);
	N->t += draw(N, 1000, 5000);
	vms_emit_switch(&N->e[2], 0, raw(N, 2, N->t), &N->idle, VMS_TASK_RUNNING, &N->task);
	state(N, ST_UNKNOWN, "unknown", NULL, false);
	N->t += draw(N, 500, 1000);
	l1_exit(N, 30);
	exit_done(N, 30, "IO_INSTRUCTION", 0, 0, true);
	state(N, ST_UNKNOWN, "unknown", NULL, true);
	N->t += draw(N, 500, 1000);
	l0_exit(N, 1);
	state(N, ST_UNKNOWN, "unknown", NULL, true);   /* the last row ends at t */
	close_row(N);
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
	if (!rc && truth)
		truth_tail(N, truth);
	if (events)
		*events = N->ft[0].total + N->ft[1].total + N->ft[2].total;
out:
	for (int k = 0; k < 3; k++)
		if (N->e[k].w)
			vms_tdw_discard(N->e[k].w);
	free(N);
	return rc;
}
