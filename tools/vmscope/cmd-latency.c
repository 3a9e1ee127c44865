/* vmscope latency: why guest threads were late. Every guest thread wake-up with its latency
 * split into causes (include/vmscope/latency.h), streamed as wake-ups complete, then per
 * thread: count, p50/p90/p99/max and the causes of the tail.
 * CSV header (a contract):
 *   machine,tid,comm,wakeup,run,latency_ns,guest_runqueue_ns,preempted_ns,exits_ns,
 *   halted_wakeup_ns,unknown_ns,top_cause,culprit
 * With nested guests (vms_model_nested) the layer of the causes follows at the end:
 *   layer (the top culprit's machine),below_layer (the layer below the guest's host, L0),
 *   below_preempted_ns,below_exits_ns,below_halted_wakeup_ns (of those causes, the part at
 *   below_layer; the rest is at the guest's host) */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "vmscope/filter.h"
#include "vmscope/latency.h"
#include "vmscope/writers.h"

static const char usage[] =
	"usage: vmscope latency [--csv | --json] [--thread TID|COMM] [--top N] [-o FILE]\n"
	"                       [--from T] [--to T] [--machine NAME] [--vcpu N]\n"
	"                       [--tsc-hz HZ] [--host FILE] [--guest NAME=FILE]\n"
	"                       [--map NAME:VCPU=TID,...] TRACE...\n"
	"\n"
	"Why was a guest thread late? For every guest thread wake-up (guest sched_wakeup, then\n"
	"the guest sched_switch that runs it), the latency split into causes that add up to it\n"
	"exactly, by what the vCPU it was woken onto did meanwhile: guest-runqueue (another\n"
	"guest thread, or the guest's idle task, had the vCPU), preempted (the vCPU's host\n"
	"thread was runnable, off its CPU: the host threads that ran), exits (VM exits, by\n"
	"reason), halted-wakeup (the vCPU was halted: the host had to wake it), unknown (outside\n"
	"the traces). The text lists the threads, slowest p99 first: count, p50/p90/p99/max and\n"
	"the share of each cause in the wake-ups above p99; --csv and --json (JSON Lines) give\n"
	"one row per wake-up (JSON: then one line per thread).\n"
	"\n"
	"  --thread TID|COMM   only this guest thread (by tid, or by name)\n"
	"  --top N             threads listed (default 10)\n"
	CLI_HELP_OUTPUT CLI_HELP_ROLES CLI_HELP_WINDOW;

struct out {
	struct cli *c;
	struct vms_model *m;
	FILE *f;
	uint64_t rows;
	bool nested;               /* vms_model_nested: the causes' layers are named */
};

/* The causes that can be at a layer below the guest's host (a running, idle or unknown
 * vCPU is at none) */
static const enum vms_cause below_causes[] = { VMS_CAUSE_PREEMPTED, VMS_CAUSE_EXITS,
					       VMS_CAUSE_HALTED_WAKEUP };
#define NR_BELOW (sizeof below_causes / sizeof below_causes[0])

static const char *layer_name(struct vms_model *m, int32_t layer)
{
	return layer >= 0 ? cli_machine_name(m, (uint32_t)layer) : NULL;
}

static bool wanted(const struct cli *c, int32_t tid, const char *comm)
{
	if (!c->thread)
		return true;
	char *end;
	long v = strtol(c->thread, &end, 10);
	if (*c->thread && !*end)
		return v == tid;
	return strcmp(comm, c->thread) == 0;
}

static void json_causes(struct vms_json *j, const uint64_t *ns)
{
	vms_json_begin_object(j, cli_unit());
	for (int k = 0; k < VMS_CAUSE_COUNT; k++)
		vms_json_uint(j, vms_cause_name((enum vms_cause)k), ns[k]);
	vms_json_end_object(j);
}

static void wakeup_row(void *ctx, const struct vms_wakeup *w)
{
	struct out *o = ctx;
	if (!wanted(o->c, w->tid, w->comm) ||
	    !vms_filter_vcpu(vms_session_filter(o->c->s), w->machine, w->vcpu))
		return;
	o->rows++;
	const char *mach = cli_machine_name(o->m, w->machine);
	if (o->c->csv) {
		vms_csv_string(o->f, mach);
		fprintf(o->f, ",%d,", w->tid);
		vms_csv_string(o->f, w->comm);
		fprintf(o->f, ",%llu,%llu,%llu", (unsigned long long)w->wakeup,
			(unsigned long long)w->run, (unsigned long long)w->latency);
		for (int k = 0; k < VMS_CAUSE_COUNT; k++)
			fprintf(o->f, ",%llu", (unsigned long long)w->ns[k]);
		fprintf(o->f, ",%s,", vms_cause_name(w->top));
		vms_csv_string(o->f, w->culprit);
		if (o->nested) {
			const char *ly = layer_name(o->m, w->layer);
			const char *bl = layer_name(o->m, w->below_layer);
			fputc(',', o->f);
			if (ly)
				vms_csv_string(o->f, ly);
			fputc(',', o->f);
			if (bl)
				vms_csv_string(o->f, bl);
			for (size_t k = 0; k < NR_BELOW; k++)
				fprintf(o->f, ",%llu", (unsigned long long)w->below_ns[below_causes[k]]);
		}
		fputc('\n', o->f);
	} else if (o->c->json) {
		struct vms_json j;
		vms_json_init(&j, o->f, false);
		vms_json_begin_object(&j, NULL);
		vms_json_string(&j, "type", "wakeup");
		vms_json_string(&j, "machine", mach);
		vms_json_int(&j, "tid", w->tid);
		vms_json_string(&j, "comm", w->comm);
		vms_json_uint(&j, "vcpu", w->vcpu);
		if (w->waker_vcpu >= 0)
			vms_json_int(&j, "waker_vcpu", w->waker_vcpu);
		else
			vms_json_null(&j, "waker_vcpu");
		vms_json_uint(&j, cli_key("wakeup"), w->wakeup);
		vms_json_uint(&j, cli_key("run"), w->run);
		vms_json_uint(&j, cli_key("latency"), w->latency);
		json_causes(&j, w->ns);
		vms_json_string(&j, "top_cause", vms_cause_name(w->top));
		vms_json_string(&j, "culprit", w->culprit);
		if (o->nested) {
			const char *ly = layer_name(o->m, w->layer);
			const char *bl = layer_name(o->m, w->below_layer);
			if (ly)
				vms_json_string(&j, "layer", ly);
			else
				vms_json_null(&j, "layer");
			if (bl)
				vms_json_string(&j, "below_layer", bl);
			else
				vms_json_null(&j, "below_layer");
			vms_json_begin_object(&j, "below");
			vms_json_begin_object(&j, cli_unit());
			for (size_t k = 0; k < NR_BELOW; k++)
				vms_json_uint(&j, vms_cause_name(below_causes[k]),
					      w->below_ns[below_causes[k]]);
			vms_json_end_object(&j);
			vms_json_end_object(&j);
		}
		vms_json_end_object(&j);
		vms_json_finish(&j);
	}
}

static const struct vms_latency_thread **sorted_threads(struct vms_latency *l, const struct cli *c,
							uint32_t *n)
{
	uint32_t total = vms_latency_nr_threads(l);
	const struct vms_latency_thread **t = calloc(total ? total : 1, sizeof *t);
	*n = 0;
	if (!t)
		return NULL;
	for (uint32_t i = 0; i < total; i++) {
		const struct vms_latency_thread *x = vms_latency_thread(l, i);
		if (vms_dist_count(x->dist) && wanted(c, x->tid, x->comm) &&
		    vms_filter_machine(vms_session_filter(c->s), x->machine))
			t[(*n)++] = x;
	}
	/* slowest p99 first (insertion sort: a few hundred threads at most in practice) */
	for (uint32_t i = 1; i < *n; i++)
		for (uint32_t k = i; k > 0 && vms_dist_percentile(t[k]->dist, 99) >
					      vms_dist_percentile(t[k - 1]->dist, 99); k--) {
			const struct vms_latency_thread *x = t[k];
			t[k] = t[k - 1];
			t[k - 1] = x;
		}
	return t;
}

static void thread_table(struct out *o, struct vms_latency *l)
{
	uint32_t n;
	const struct vms_latency_thread **t = sorted_threads(l, o->c, &n);
	if (!t)
		return;
	FILE *f = o->f;
	if (o->c->json) {
		for (uint32_t i = 0; i < n; i++) {
			struct vms_json j;
			vms_json_init(&j, f, false);
			vms_json_begin_object(&j, NULL);
			vms_json_string(&j, "type", "thread");
			vms_json_string(&j, "machine", cli_machine_name(o->m, t[i]->machine));
			vms_json_int(&j, "tid", t[i]->tid);
			vms_json_string(&j, "comm", t[i]->comm);
			vms_json_uint(&j, "count", vms_dist_count(t[i]->dist));
			vms_json_uint(&j, cli_key("p50"), vms_dist_percentile(t[i]->dist, 50));
			vms_json_uint(&j, cli_key("p90"), vms_dist_percentile(t[i]->dist, 90));
			vms_json_uint(&j, cli_key("p99"), vms_dist_percentile(t[i]->dist, 99));
			vms_json_uint(&j, cli_key("max"), vms_dist_max(t[i]->dist));
			vms_json_bool(&j, "percentiles_approximate", !vms_dist_exact(t[i]->dist));
			vms_json_uint(&j, "tail_count", t[i]->tail_count);
			vms_json_begin_object(&j, "tail");
			json_causes(&j, t[i]->tail_ns);
			vms_json_end_object(&j);
			vms_json_string(&j, "tail_culprit", t[i]->tail_culprit);
			vms_json_end_object(&j);
			vms_json_finish(&j);
		}
	} else if (!o->c->csv) {
		char b[4][32];
		fprintf(f, "%-18s %8s %-16s %7s %10s %10s %10s %10s  %s\n", "machine", "tid", "comm",
			"wakeups", "p50", "p90", "p99", "max", "the tail (above p99): causes");
		for (uint32_t i = 0; i < n && i < o->c->top; i++) {
			const struct vms_latency_thread *x = t[i];
			fprintf(f, "%-18s %8d %-16s %7llu %10s %10s %10s %10s ",
				cli_text(cli_machine_name(o->m, x->machine)), x->tid,
				x->comm[0] ? cli_text(x->comm) : "?",
				(unsigned long long)vms_dist_count(x->dist),
				cli_ns(vms_dist_percentile(x->dist, 50), b[0], 32),
				cli_ns(vms_dist_percentile(x->dist, 90), b[1], 32),
				cli_ns(vms_dist_percentile(x->dist, 99), b[2], 32),
				cli_ns(vms_dist_max(x->dist), b[3], 32));
			uint64_t sum = 0;
			for (int k = 0; k < VMS_CAUSE_COUNT; k++)
				sum += x->tail_ns[k];
			if (!x->tail_count || !sum)
				fprintf(f, " -");
			for (int k = 0; sum && k < VMS_CAUSE_COUNT; k++)
				if (x->tail_ns[k])
					fprintf(f, " %s %.0f%%", vms_cause_name((enum vms_cause)k),
						100.0 * (double)x->tail_ns[k] / (double)sum);
			if (x->tail_culprit[0])
				fprintf(f, " (%s)", cli_text(x->tail_culprit));
			fputc('\n', f);
		}
		if (n > o->c->top)
			fprintf(f, "(%u more threads; --top N)\n", n - o->c->top);
		if (!n)
			fprintf(f, "no guest thread wake-up was seen%s (the guest traces need "
				"sched_wakeup and sched_switch)\n", o->c->thread ? " for that thread" : "");
	}
	free(t);
}

int cmd_latency(int argc, char **argv)
{
	struct cli c;
	int st = cli_begin(&c, argc, argv, CLI_JSON | CLI_CSV | CLI_ROLES | CLI_OUT | CLI_TOP |
				  CLI_THREAD | CLI_WINDOW, usage);
	if (st != CLI_GO)
		return st;
	struct vms_error err = { 0 };
	if (vms_session_build_model(c.s, &err) != 0)
		return cli_end(&c, cli_fail(&c, &err));
	struct out o = { .c = &c, .m = vms_session_model(c.s), .f = c.f };
	o.nested = vms_model_nested(o.m);
	struct vms_observer obs;
	struct vms_latency *l = vms_latency_new(o.m, wakeup_row, &o, &obs);
	if (!l || vms_session_observe(c.s, &obs) != 0) {
		vms_latency_free(l);
		fprintf(stderr, "vmscope %s: out of memory\n", c.cmd);
		return cli_end(&c, VMS_EXIT_FAIL);
	}
	if (c.csv) {
		fprintf(c.f, "machine,tid,comm,wakeup,run,%s,%s,%s,%s,%s,%s,top_cause,culprit",
			cli_key("latency"), cli_key("guest_runqueue"), cli_key("preempted"),
			cli_key("exits"), cli_key("halted_wakeup"), cli_key("unknown"));
		if (o.nested)
			fprintf(c.f, ",layer,below_layer,%s,%s,%s", cli_key("below_preempted"),
				cli_key("below_exits"), cli_key("below_halted_wakeup"));
		fputc('\n', c.f);
	}
	st = cli_run(&c, NULL);
	if (st == 0)
		thread_table(&o, l);
	st = cli_end(&c, st);
	vms_latency_free(l);
	return st;
}
