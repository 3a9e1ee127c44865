/* vmscope vcpus: the vCPU state intervals (spec §3), streamed as they close.
 * CSV header (a contract): machine,vcpu,start_ns,end_ns,status,state (_cycles for a counter
 * clock without its rate). --json: JSON Lines, a header object then one object per row.
 * With nested guests (vms_model_nested) a column `layer` follows (JSON: "layer"; text: a
 * last column): the machine whose hypervisor (vmm) or scheduler (preempted, halted) the
 * state is at, empty for running, idle and unknown; one-layer captures keep the columns
 * above, so the header waits for the model (the first row, or the run's end). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "vmscope/writers.h"

static const char usage[] =
	"usage: vmscope vcpus [--csv | --json] [-o FILE] [--tsc-hz HZ] [--host FILE]\n"
	"                     [--guest NAME=FILE] [--map NAME:VCPU=TID,...]\n"
	"                     [--map NAME:dom=N] TRACE...\n"
	"\n"
	"One row per maximal interval of constant vCPU state, for every vCPU of every guest\n"
	"(traced or not). start/end are integer ns in the reference (first host) timebase, end\n"
	"exclusive (cycles when a trace counts cycles with no rate: see --tsc-hz); status is\n"
	"Trace Compass's encoding (0 unknown, 1 idle, 2 running, +128 VMM, +256 preempted);\n"
	"state is one of unknown idle running vmm preempted halted.\n"
	"\n"
	"  --csv               CSV: machine,vcpu,start_ns,end_ns,status,state\n"
	"  --json              JSON Lines: a header object (schema_version, time_unit), then\n"
	"                      one object per interval, written as it closes\n"
	CLI_HELP_OUTPUT CLI_HELP_ROLES CLI_HELP_WINDOW;

struct out {
	FILE *f;
	struct vms_session *s;   /* the model exists once the run has started */
	struct cli *c;
	struct vms_json j;
	bool header, nested;
};

static void header(struct out *o)
{
	if (o->header)
		return;
	o->header = true;
	struct vms_model *m = vms_session_model(o->s);
	o->nested = m && vms_model_nested(m);
	if (o->c->json) {
		vms_json_init(&o->j, o->f, false);
		vms_json_begin_object(&o->j, NULL);
		cli_json_header(&o->j, "vcpus");
		vms_json_end_object(&o->j);
		fputc('\n', o->f);
	} else if (o->c->csv) {
		fprintf(o->f, "machine,vcpu,start_%s,end_%s,status,state%s\n", cli_unit(), cli_unit(),
			o->nested ? ",layer" : "");
	} else {
		fprintf(o->f, "%-16s %4s %20s %20s %10s  %4s %s%s\n", "machine", "vcpu", "start",
			"end", "duration", "stat", o->nested ? "state     " : "state",
			o->nested ? "layer" : "");
	}
}

static void row(void *ctx, const struct vms_vcpu_interval *iv)
{
	struct out *o = ctx;
	header(o);
	struct vms_model *m = vms_session_model(o->s);
	const char *name = cli_machine_name(m, iv->machine);
	const char *layer = o->nested && iv->layer >= 0 ? cli_machine_name(m, (uint32_t)iv->layer)
							 : "";
	if (o->c->json) {
		vms_json_begin_object(&o->j, NULL);
		vms_json_string(&o->j, "machine", name);
		vms_json_uint(&o->j, "vcpu", iv->vcpu);
		vms_json_uint(&o->j, cli_key("start"), iv->start);
		vms_json_uint(&o->j, cli_key("end"), iv->end);
		vms_json_uint(&o->j, "status", iv->status);
		vms_json_string(&o->j, "state", vms_vcpu_state_name(iv->state));
		if (o->nested) {
			if (iv->layer >= 0)
				vms_json_string(&o->j, "layer", layer);
			else
				vms_json_null(&o->j, "layer");
		}
		vms_json_end_object(&o->j);
		fputc('\n', o->f);
	} else if (o->c->csv) {
		vms_csv_string(o->f, name);
		fprintf(o->f, ",%u,%llu,%llu,%u,%s", iv->vcpu, (unsigned long long)iv->start,
			(unsigned long long)iv->end, iv->status, vms_vcpu_state_name(iv->state));
		if (o->nested) {
			fputc(',', o->f);
			vms_csv_string(o->f, layer);
		}
		fputc('\n', o->f);
	} else {
		char d[32];
		fprintf(o->f, "%-16s %4u %20llu %20llu %10s  %4u %s", cli_text(name), iv->vcpu,
			(unsigned long long)iv->start, (unsigned long long)iv->end,
			cli_ns(iv->end - iv->start, d, sizeof d), iv->status,
			vms_vcpu_state_name(iv->state));
		if (o->nested)
			fprintf(o->f, "%*s%s", 10 - (int)strlen(vms_vcpu_state_name(iv->state)), "",
				cli_text(layer));
		fputc('\n', o->f);
	}
}

int cmd_vcpus(int argc, char **argv)
{
	struct cli c;
	int st = cli_begin(&c, argc, argv, CLI_JSON | CLI_CSV | CLI_ROLES | CLI_OUT | CLI_WINDOW, usage);
	if (st != CLI_GO)
		return st;
	struct out o = { .s = c.s, .c = &c, .f = c.f };
	struct vms_sinks sinks = { .ctx = &o, .vcpu_interval = row };
	st = cli_run(&c, &sinks);
	header(&o);   /* (no row: the header alone, as before) */
	return cli_end(&c, st);
}
