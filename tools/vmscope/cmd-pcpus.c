/* vmscope pcpus: the fused physical-CPU view (spec §7), streamed as intervals close.
 * CSV header (a contract): host,cpu,start_ns,end_ns,machine,vcpu,tid,comm (_cycles for a
 * counter clock without its rate). --json: JSON Lines, a header object then the rows. */
#include <stdlib.h>

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
	"cycles with no rate: see --tsc-hz).\n"
	"\n"
	"  --csv               CSV: host,cpu,start_ns,end_ns,machine,vcpu,tid,comm\n"
	"  --json              JSON Lines: a header object (schema_version, time_unit), then\n"
	"                      one object per interval, written as it closes\n"
	CLI_HELP_OUTPUT CLI_HELP_ROLES CLI_HELP_WINDOW;

struct out {
	FILE *f;
	struct vms_model *m;
	struct cli *c;
	const struct vms_filter *filter;
};

static void row(void *ctx, const struct vms_pcpu_interval *iv)
{
	struct out *o = ctx;
	if (!vms_filter_pcpu(o->filter, iv->host, iv->guest, iv->vcpu))
		return;
	const char *host = cli_machine_name(o->m, iv->host);
	const char *mach = iv->guest >= 0 ? cli_machine_name(o->m, (uint32_t)iv->guest) : host;
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
		fputc('\n', o->f);
	} else {
		char d[32], v[16] = "-", t[16] = "?";
		if (iv->guest >= 0)
			snprintf(v, sizeof v, "%d", iv->vcpu);
		if (iv->tid >= 0)
			snprintf(t, sizeof t, "%d", iv->tid);
		fprintf(o->f, "%-12s %4u %20llu %20llu %10s  %-16s %4s %8s %s\n", cli_text(host), iv->cpu,
			(unsigned long long)iv->start, (unsigned long long)iv->end,
			cli_ns(iv->end - iv->start, d, sizeof d), cli_text(mach), v, t,
			cli_text(iv->comm));
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
	if (!o.filter) {
		fprintf(stderr, "vmscope %s: --machine %s: no such machine\n", c.cmd, c.sopts.machine);
		return cli_end(&c, VMS_EXIT_USAGE);
	}
	struct vms_pcpu_view *pv = vms_pcpu_view_new(o.m, row, &o);
	struct vms_observer obs = pv ? vms_pcpu_view_observer(pv) : (struct vms_observer){ 0 };
	if (!pv || vms_session_observe(c.s, &obs) != 0) {
		vms_pcpu_view_free(pv);
		fprintf(stderr, "vmscope %s: out of memory\n", c.cmd);
		return cli_end(&c, VMS_EXIT_FAIL);
	}
	if (c.json) {
		struct vms_json j;
		vms_json_init(&j, o.f, false);
		vms_json_begin_object(&j, NULL);
		cli_json_header(&j, "pcpus");
		vms_json_end_object(&j);
		vms_json_finish(&j);
	} else if (c.csv)
		fprintf(o.f, "host,cpu,start_%s,end_%s,machine,vcpu,tid,comm\n", cli_unit(), cli_unit());
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
	st = cli_end(&c, st);
	vms_pcpu_view_free(pv);
	return st;
}
