/* vmscope threads: guest thread overlays (spec §4): every interval in which a guest thread
 * that its guest believed running was in fact stopped (VM exit, preempted, halted).
 * CSV header (a contract): machine,tid,start_ns,end_ns,reason,exit_reason,host_tid (_cycles
 * for a counter clock without its rate). --json: JSON Lines, a header object then the rows. */
#include <stdlib.h>

#include "cli.h"
#include "cmds.h"
#include "vmscope/writers.h"

static const char usage[] =
	"usage: vmscope threads [--csv | --json] [-o FILE] [--tsc-hz HZ] [--host FILE]\n"
	"                       [--guest NAME=FILE] [--map NAME:VCPU=TID,...]\n"
	"                       [--map NAME:dom=N] TRACE...\n"
	"\n"
	"One row per interval in which a guest thread, running as far as its guest knew, was\n"
	"stopped: reason vmm (exit_reason names the VM exit), preempted (the host ran host_tid\n"
	"instead) or halted. Times are integer ns in the reference timebase, end exclusive\n"
	"(cycles when a trace counts cycles with no rate: see --tsc-hz).\n"
	"\n"
	"  --csv               CSV: machine,tid,start_ns,end_ns,reason,exit_reason,host_tid\n"
	"  --json              JSON Lines: a header object (schema_version, time_unit), then\n"
	"                      one object per interval, written as it closes\n"
	CLI_HELP_OUTPUT CLI_HELP_ROLES CLI_HELP_WINDOW;

struct out {
	FILE *f;
	struct vms_session *s;   /* the model exists once the run has started */
	struct cli *c;
	struct vms_json j;
};

static void exit_name(const struct vms_thread_interval *iv, char *buf, size_t len)
{
	buf[0] = '\0';
	if (iv->reason != VMS_OVERLAY_VMM || iv->exit_reason < 0)
		return;
	const char *n = vms_exit_reason_name(iv->isa, (uint32_t)iv->exit_reason);
	if (n)
		snprintf(buf, len, "%s", n);
	else
		snprintf(buf, len, "%d", iv->exit_reason);
}

static void row(void *ctx, const struct vms_thread_interval *iv)
{
	struct out *o = ctx;
	const char *name = cli_machine_name(vms_session_model(o->s), iv->machine);
	char ex[48];
	exit_name(iv, ex, sizeof ex);
	if (o->c->json) {
		vms_json_begin_object(&o->j, NULL);
		vms_json_string(&o->j, "machine", name);
		vms_json_int(&o->j, "tid", iv->tid);
		vms_json_uint(&o->j, "vcpu", iv->vcpu);
		vms_json_uint(&o->j, cli_key("start"), iv->start);
		vms_json_uint(&o->j, cli_key("end"), iv->end);
		vms_json_string(&o->j, "reason", vms_overlay_reason_name(iv->reason));
		if (ex[0])
			vms_json_string(&o->j, "exit_reason", ex);
		else
			vms_json_null(&o->j, "exit_reason");
		if (iv->host_tid >= 0)
			vms_json_int(&o->j, "host_tid", iv->host_tid);
		else
			vms_json_null(&o->j, "host_tid");
		if (iv->host_tid == VMS_TID_UNATTRIBUTED)
			vms_json_bool(&o->j, "host_unattributed", true);
		vms_json_end_object(&o->j);
		fputc('\n', o->f);
	} else if (o->c->csv) {
		vms_csv_string(o->f, name);
		fprintf(o->f, ",%d,%llu,%llu,%s,", iv->tid, (unsigned long long)iv->start,
			(unsigned long long)iv->end, vms_overlay_reason_name(iv->reason));
		vms_csv_string(o->f, ex);
		if (iv->host_tid >= 0)
			fprintf(o->f, ",%d\n", iv->host_tid);
		else
			fputs(",\n", o->f);
	} else {
		char d[32], h[16] = "-";
		if (iv->host_tid >= 0)
			snprintf(h, sizeof h, "%d", iv->host_tid);
		else if (iv->host_tid == VMS_TID_UNATTRIBUTED)
			snprintf(h, sizeof h, "unattributed");
		fprintf(o->f, "%-16s %8d %20llu %20llu %10s  %-9s %-22s %s\n", cli_text(name), iv->tid,
			(unsigned long long)iv->start, (unsigned long long)iv->end,
			cli_ns(iv->end - iv->start, d, sizeof d), vms_overlay_reason_name(iv->reason),
			ex[0] ? ex : "-", h);
	}
}

int cmd_threads(int argc, char **argv)
{
	struct cli c;
	int st = cli_begin(&c, argc, argv, CLI_JSON | CLI_CSV | CLI_ROLES | CLI_OUT | CLI_WINDOW, usage);
	if (st != CLI_GO)
		return st;
	struct out o = { .s = c.s, .c = &c, .f = c.f };
	if (c.json) {
		vms_json_init(&o.j, o.f, false);
		vms_json_begin_object(&o.j, NULL);
		cli_json_header(&o.j, "threads");
		vms_json_end_object(&o.j);
		fputc('\n', o.f);
	} else if (c.csv) {
		fprintf(o.f, "machine,tid,start_%s,end_%s,reason,exit_reason,host_tid\n", cli_unit(),
			cli_unit());
	} else {
		fprintf(o.f, "%-16s %8s %20s %20s %10s  %-9s %-22s %s\n", "machine", "tid", "start",
			"end", "duration", "reason", "exit_reason", "host_tid");
	}
	struct vms_sinks sinks = { .ctx = &o, .thread_interval = row };
	st = cli_run(&c, &sinks);
	return cli_end(&c, st);
}
