/* vmscope pcpus: the fused physical-CPU view (spec §7), streamed as intervals close.
 * CSV header (a contract): host,cpu,start_ns,end_ns,machine,vcpu,tid,comm (_cycles for a
 * counter clock without its rate). --json: JSON Lines, a header object then the rows.
 * With nested guests (vms_model_nested) four columns follow, the layer stacked above a row
 * that shows an L1 vCPU: up_machine,up_vcpu,up_tid,up_comm (the L2 vCPU that L1 vCPU runs
 * in guest mode, and its thread; empty when none), so a physical CPU's row reads physical
 * CPU -> L1 vCPU -> L1 thread (tid, comm) -> L2 vCPU -> L2 thread.
 * A stretch where who ran is not known is a row too (machine "unknown", vcpu, tid and comm
 * empty / null); when there is any, its share per CPU and in all follows the rows (text: a
 * table; JSON: a last object, "unknown"; every format: a warning on stderr). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "vmscope/pcpu_view.h"
#include "vmscope/writers.h"

static const char usage[] =
	"usage: vmscope pcpus [--csv | --json] [-o FILE] [--tsc-hz HZ] [--host FILE]\n"
	"                     [--guest NAME=FILE] [--map NAME:VCPU=TID,...] TRACE...\n"
	"\n"
	"What really ran on every physical CPU of every host: one row per maximal interval of\n"
	"one occupant. machine is the host itself when a host thread runs (vcpu empty, tid 0\n"
	"the host's idle), the guest's name while one of its vCPUs is in guest mode there\n"
	"(tid/comm the guest thread, 0/idle for the guest's idle; empty while the guest has\n"
	"not yet recorded anything on that vCPU). start/end are integer ns in the reference\n"
	"(first host) timebase, end exclusive. A CPU's rows begin at the first event recorded\n"
	"on it; around lost events nothing is claimed (cycles instead of ns when a trace counts\n"
	"cycles with no rate: see --tsc-hz). Where who ran is not known (after lost events,\n"
	"from a thread's last event on a CPU once it is seen on another, after the host's\n"
	"trace ended while other traces go on, and on a host that recorded no sched_switch\n"
	"everywhere outside kvm_entry..kvm_exit: a thread is on one CPU at a time, and nothing\n"
	"else proves where it was), the row says\n"
	"so: machine \"unknown\", vcpu, tid and comm empty (null in JSON); the unknown share of\n"
	"each CPU's time (from its first row to the end) and of all follows the rows.\n"
	"\n"
	"  --csv               CSV: host,cpu,start_ns,end_ns,machine,vcpu,tid,comm\n"
	"  --json              JSON Lines: a header object (schema_version, time_unit), then\n"
	"                      one object per interval, written as it closes\n"
	CLI_HELP_OUTPUT CLI_HELP_ROLES CLI_HELP_WINDOW;

/* A CPU's time from its first row, and how much of it is unknown */
struct share {
	uint64_t covered, unknown;
};
struct share_host {
	struct share *cpu;
	uint32_t n;
};

struct out {
	FILE *f;
	struct vms_model *m;
	struct cli *c;
	const struct vms_filter *filter;
	struct share_host *share;   /* [machines] */
	uint32_t nr_share;
	bool oom;
	bool nested;               /* the up_ columns */
};

static void share_add(struct out *o, const struct vms_pcpu_interval *iv, bool unknown)
{
	if (!o->share || iv->host >= o->nr_share)
		return;
	struct share_host *h = &o->share[iv->host];
	if (iv->cpu >= h->n) {
		uint32_t n = h->n ? h->n : 8;
		while (n <= iv->cpu)
			n *= 2;
		struct share *nc = realloc(h->cpu, (size_t)n * sizeof *nc);
		if (!nc) {
			o->oom = true;
			return;
		}
		memset(nc + h->n, 0, (size_t)(n - h->n) * sizeof *nc);
		h->cpu = nc;
		h->n = n;
	}
	h->cpu[iv->cpu].covered += iv->end - iv->start;
	if (unknown)
		h->cpu[iv->cpu].unknown += iv->end - iv->start;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* After the rows: the unknown share per CPU and in all, when any time is unknown. */
static void share_report(struct out *o)
{
	uint64_t cov = 0, unk = 0;
	for (uint32_t h = 0; o->share && h < o->nr_share; h++)
		for (uint32_t c = 0; c < o->share[h].n; c++) {
			cov += o->share[h].cpu[c].covered;
			unk += o->share[h].cpu[c].unknown;
		}
	if (!unk)
		return;
	struct vms_json j;
	char d[32], e[32];
	if (o->c->json) {
		vms_json_init(&j, o->f, false);
		vms_json_begin_object(&j, NULL);
		vms_json_begin_object(&j, "unknown");
		vms_json_uint(&j, cli_key("covered"), cov);
		vms_json_uint(&j, cli_key("unknown"), unk);
		vms_json_begin_array(&j, "cpus");
	} else if (!o->c->csv) {
		fprintf(o->f, "\nunknown: who ran is not known for %s of %s of CPU time (%.2f%%)\n",
			cli_ns(unk, d, sizeof d), cli_ns(cov, e, sizeof e), pct(unk, cov));
		fprintf(o->f, "%-12s %4s %12s %12s %8s\n", "host", "cpu", "covered", "unknown",
			"share");
	}
	for (uint32_t h = 0; o->share && h < o->nr_share; h++)
		for (uint32_t c = 0; c < o->share[h].n; c++) {
			const struct share *s = &o->share[h].cpu[c];
			if (!s->covered)
				continue;
			const char *host = cli_machine_name(o->m, h);
			if (o->c->json) {
				vms_json_begin_object(&j, NULL);
				vms_json_string(&j, "host", host);
				vms_json_uint(&j, "cpu", c);
				vms_json_uint(&j, cli_key("covered"), s->covered);
				vms_json_uint(&j, cli_key("unknown"), s->unknown);
				vms_json_end_object(&j);
			} else if (!o->c->csv) {
				fprintf(o->f, "%-12s %4u %12s %12s %7.2f%%\n", cli_text(host), c,
					cli_ns(s->covered, d, sizeof d),
					cli_ns(s->unknown, e, sizeof e), pct(s->unknown, s->covered));
			}
		}
	if (o->c->json) {
		vms_json_end_array(&j);
		vms_json_end_object(&j);
		vms_json_end_object(&j);
		vms_json_finish(&j);
	}
	fprintf(stderr, "vmscope %s: warning: who ran on the host CPUs is not known for %.2f%% of "
			"their time (%s of %s, from each CPU's first row: lost events, a thread seen "
			"on another CPU, after a host's trace ended, or a host that recorded no "
			"sched_switch); the rows say where\n", o->c->cmd,
		pct(unk, cov), cli_ns(unk, d, sizeof d), cli_ns(cov, e, sizeof e));
}

static void row(void *ctx, const struct vms_pcpu_interval *iv)
{
	struct out *o = ctx;
	if (!vms_filter_pcpu(o->filter, iv->host, iv->guest, iv->vcpu))
		return;
	bool unknown = iv->guest < 0 && iv->tid < 0;
	share_add(o, iv, unknown);
	const char *host = cli_machine_name(o->m, iv->host);
	const char *mach = unknown ? "unknown"
			 : iv->guest >= 0 ? cli_machine_name(o->m, (uint32_t)iv->guest) : host;
	if (o->c->json) {
		struct vms_json j;
		vms_json_init(&j, o->f, false);
		vms_json_begin_object(&j, NULL);
		vms_json_string(&j, "host", host);
		vms_json_uint(&j, "cpu", iv->cpu);
		vms_json_uint(&j, cli_key("start"), iv->start);
		vms_json_uint(&j, cli_key("end"), iv->end);
		vms_json_string(&j, "machine", mach);
		if (iv->guest >= 0)
			vms_json_int(&j, "vcpu", iv->vcpu);
		else
			vms_json_null(&j, "vcpu");
		if (iv->tid >= 0) {
			vms_json_int(&j, "tid", iv->tid);
			vms_json_string(&j, "comm", iv->comm);
		} else {
			vms_json_null(&j, "tid");
			vms_json_null(&j, "comm");
		}
		if (o->nested && iv->stacked) {
			vms_json_string(&j, "up_machine", cli_machine_name(o->m, (uint32_t)iv->up_guest));
			vms_json_int(&j, "up_vcpu", iv->up_vcpu);
			if (iv->up_tid >= 0) {
				vms_json_int(&j, "up_tid", iv->up_tid);
				vms_json_string(&j, "up_comm", iv->up_comm);
			} else {
				vms_json_null(&j, "up_tid");
				vms_json_null(&j, "up_comm");
			}
		} else if (o->nested) {
			vms_json_null(&j, "up_machine");
			vms_json_null(&j, "up_vcpu");
			vms_json_null(&j, "up_tid");
			vms_json_null(&j, "up_comm");
		}
		vms_json_end_object(&j);
		vms_json_finish(&j);
	} else if (o->c->csv) {
		vms_csv_string(o->f, host);
		fprintf(o->f, ",%u,%llu,%llu,", iv->cpu, (unsigned long long)iv->start,
			(unsigned long long)iv->end);
		vms_csv_string(o->f, mach);
		fputc(',', o->f);
		if (iv->guest >= 0)
			fprintf(o->f, "%d", iv->vcpu);
		fputc(',', o->f);
		if (iv->tid >= 0) {
			fprintf(o->f, "%d,", iv->tid);
			vms_csv_string(o->f, iv->comm);
		} else {
			fputc(',', o->f);
		}
		if (o->nested && iv->stacked) {
			fputc(',', o->f);
			vms_csv_string(o->f, cli_machine_name(o->m, (uint32_t)iv->up_guest));
			fprintf(o->f, ",%d,", iv->up_vcpu);
			if (iv->up_tid >= 0) {
				fprintf(o->f, "%d,", iv->up_tid);
				vms_csv_string(o->f, iv->up_comm);
			} else {
				fputc(',', o->f);
			}
		} else if (o->nested) {
			fputs(",,,,", o->f);
		}
		fputc('\n', o->f);
	} else {
		char d[32], v[16] = "-", t[16] = "?";
		if (iv->guest >= 0)
			snprintf(v, sizeof v, "%d", iv->vcpu);
		if (iv->tid >= 0)
			snprintf(t, sizeof t, "%d", iv->tid);
		fprintf(o->f, "%-12s %4u %20llu %20llu %10s  %-16s %4s %8s %s", cli_text(host), iv->cpu,
			(unsigned long long)iv->start, (unsigned long long)iv->end,
			cli_ns(iv->end - iv->start, d, sizeof d), unknown ? "(unknown)" : cli_text(mach),
			v, t, cli_text(iv->comm));
		if (o->nested && iv->stacked) {
			char ut[16] = "?";
			if (iv->up_tid >= 0)
				snprintf(ut, sizeof ut, "%d", iv->up_tid);
			fprintf(o->f, "  -> %s vcpu %d %s %s", cli_text(cli_machine_name(o->m,
				(uint32_t)iv->up_guest)), iv->up_vcpu, ut, cli_text(iv->up_comm));
		}
		fputc('\n', o->f);
	}
}

int cmd_pcpus(int argc, char **argv)
{
	struct cli c;
	int st = cli_begin(&c, argc, argv, CLI_JSON | CLI_CSV | CLI_ROLES | CLI_OUT | CLI_WINDOW,
			   usage);
	if (st != CLI_GO)
		return st;
	struct vms_error err = { 0 };
	if (vms_session_build_model(c.s, &err) != 0)
		return cli_end(&c, cli_fail(&c, &err));
	struct out o = { .f = c.f, .m = vms_session_model(c.s), .c = &c,
			 .filter = vms_session_filter(c.s) };
	o.nr_share = vms_model_nr_machines(o.m);
	o.share = calloc(o.nr_share ? o.nr_share : 1, sizeof *o.share);
	if (!o.filter) {
		fprintf(stderr, "vmscope %s: --machine %s: no such machine\n", c.cmd, c.sopts.machine);
		return cli_end(&c, VMS_EXIT_USAGE);
	}
	struct vms_pcpu_view *pv = vms_pcpu_view_new(o.m, row, &o);
	struct vms_observer obs = pv ? vms_pcpu_view_observer(pv) : (struct vms_observer){ 0 };
	if (!pv || !o.share || vms_session_observe(c.s, &obs) != 0) {
		vms_pcpu_view_free(pv);
		free(o.share);
		fprintf(stderr, "vmscope %s: out of memory\n", c.cmd);
		return cli_end(&c, VMS_EXIT_FAIL);
	}
	o.nested = vms_model_nested(o.m);
	if (c.json) {
		struct vms_json j;
		vms_json_init(&j, o.f, false);
		vms_json_begin_object(&j, NULL);
		cli_json_header(&j, "pcpus");
		vms_json_end_object(&j);
		vms_json_finish(&j);
	} else if (c.csv)
		fprintf(o.f, "host,cpu,start_%s,end_%s,machine,vcpu,tid,comm%s\n", cli_unit(),
			cli_unit(), o.nested ? ",up_machine,up_vcpu,up_tid,up_comm" : "");
	else
		fprintf(o.f, "%-12s %4s %20s %20s %10s  %-16s %4s %8s %s\n", "host", "cpu", "start",
			"end", "duration", "machine", "vcpu", "tid", "comm");
	bool any_host = false;
	for (uint32_t i = 0; i < vms_model_nr_machines(o.m); i++)
		any_host |= (vms_model_machine_c(o.m, i)->role & VMS_ROLE_HOST) != 0;
	if (!any_host)
		fprintf(stderr, "vmscope %s: no trace is a host's (no KVM events, no --host): no "
			"physical CPU to show\n", c.cmd);
	st = cli_run(&c, NULL);
	if (st == VMS_EXIT_OK) {
		if (o.oom)
			fprintf(stderr, "vmscope %s: out of memory: the unknown share is not stated\n",
				c.cmd);
		else
			share_report(&o);
		struct vms_analysis *an = vms_session_analysis(c.s);
		uint64_t unf = an ? vms_analysis_threads_unfollowed(an) : 0;
		if (unf)
			fprintf(stderr, "vmscope %s: warning: more than %u host threads: %llu times "
					"one beyond them came on a CPU unfollowed (a CPU whose switch "
					"away from it was lost may still show it)\n", c.cmd,
				VMS_OCC_THREADS_MAX, (unsigned long long)unf);
	}
	st = cli_end(&c, st);
	vms_pcpu_view_free(pv);
	for (uint32_t h = 0; h < o.nr_share; h++)
		free(o.share[h].cpu);
	free(o.share);
	return st;
}
