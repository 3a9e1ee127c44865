/* vmscope sync: how each machine's clock was brought to the reference (spec §8), and whether
 * the result can be trusted (the containment check). --json is one object: the header and
 * "machines", one object per machine: machine, reference, method, slope, offset_ns, quality,
 * pairs, containment. The text shows slope and offset exactly (%.17g: they read back to the
 * same doubles). */
#include <math.h>
#include <stdlib.h>

#include "cli.h"
#include "cmds.h"
#include "vmscope/writers.h"

static const char usage[] =
	"usage: vmscope sync [--json] [-o FILE] [--tsc-hz HZ] [--host FILE] [--guest NAME=FILE]\n"
	"                    [--map NAME:VCPU=TID,...]\n"
	"                    [--map NAME:dom=N] TRACE...\n"
	"\n"
	"For every machine: the transform t_reference = slope * t_machine + offset_ns, the method\n"
	"that found it (reference, timeshift, hull, user, none), its quality and the number of\n"
	"pairs or samples used, and the containment check: the share of guest events on vCPU n\n"
	"that fall inside a guest-mode window (kvm_entry -> kvm_exit) of vCPU n's host thread.\n"
	"Slope and offset are printed exactly.\n"
	"\n"
	"  --json              one JSON object: the header (schema_version, time_unit), machines\n"
	CLI_HELP_OUTPUT CLI_HELP_ROLES;

int cmd_sync(int argc, char **argv)
{
	struct cli c;
	int st = cli_begin(&c, argc, argv, CLI_JSON | CLI_ROLES | CLI_OUT, usage);
	if (st != CLI_GO)
		return st;
	if ((st = cli_run(&c, NULL)))
		return cli_end(&c, st);
	struct vms_session *s = c.s;
	FILE *f = c.f;
	struct vms_model *m = vms_session_model(s);
	struct vms_json j;
	if (c.json) {
		vms_json_init(&j, f, true);
		vms_json_begin_object(&j, NULL);
		cli_json_header(&j, "sync");
		vms_json_begin_array(&j, "machines");
	}
	for (uint32_t i = 0; i < vms_model_nr_machines(m); i++) {
		const struct vms_machine *mc = vms_model_machine_c(m, i);
		const struct vms_sync_info *si = &mc->sync;
		const char *ref = cli_machine_name(m, si->reference);
		if (c.json) {
			vms_json_begin_object(&j, NULL);
			vms_json_string(&j, "machine", mc->name);
			cli_json_sync_members(&j, m, si);
			vms_json_end_object(&j);
		} else {
			if (mc->source < 0) {
				/* an untraced guest: its times are its host's thread events */
				fprintf(f, "%s: untraced, seen in %s's timebase\n", mc->name,
					mc->host >= 0 ? cli_machine_name(m, (uint32_t)mc->host) : "?");
				continue;
			}
			fprintf(f, "%s: %s", mc->name, vms_sync_method_name(si->method));
			if (si->method != VMS_SYNC_REFERENCE)
				fprintf(f, " to %s, t_ref = %.17g * t %c %.17g %s, quality %s, %llu %s",
					ref, si->slope, si->offset_ns < 0 ? '-' : '+', fabs(si->offset_ns),
					cli_unit(), vms_sync_quality_name(si->quality),
					(unsigned long long)si->pairs,
					si->method == VMS_SYNC_TIMESHIFT ? "samples" : "pairs");
			if (si->has_containment && si->contain_total) {
				double pct = 100.0 * (double)si->contained / (double)si->contain_total;
				fprintf(f, "; containment %.2f%% (%llu of %llu guest events)%s", pct,
					(unsigned long long)si->contained,
					(unsigned long long)si->contain_total,
					pct < 90.0 ? " -- LOW: the sync is probably wrong" : "");
			}
			fputc('\n', f);
		}
	}
	if (c.json) {
		vms_json_end_array(&j);
		vms_json_end_object(&j);
		vms_json_finish(&j);
	}
	return cli_end(&c, VMS_EXIT_OK);
}
