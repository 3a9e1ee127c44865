/* vmscope export: the timeline as a Perfetto trace (.pftrace) or a Chrome JSON trace. */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "vmscope/export.h"

static const char usage[] =
	"usage: vmscope export -o FILE [--format perfetto|json] [--deflate] [--from T] [--to T]\n"
	"                      [--machine NAME] [--vcpu N] [--tsc-hz HZ | --cpu-hz HZ]\n"
	"                      [--host FILE] [--guest NAME=FILE] [--map NAME:VCPU=TID,...]\n"
	"                      [--offset NAME=NS] [--threads N] TRACE...\n"
	"\n"
	"Write the timeline: per host, one track per physical CPU (what really ran there); per\n"
	"guest, per vCPU its states, its VM exits (named by reason, with guest RIP, info and\n"
	"host CPU) and counters (exits/s, steal %), one track per guest thread (running and why\n"
	"it did not run) and one per host thread that took a vCPU's CPU. FILE ending in .json\n"
	"gets the Chrome JSON trace format, anything else Perfetto's protobuf format: open it at\n"
	"https://ui.perfetto.dev (Open trace file; it stays in the browser).\n"
	"\n"
	"  --format F          perfetto or json, whatever FILE's name\n"
	"  --deflate           Perfetto: packets in deflated blocks (about a fifth of the size;\n"
	"                      the UI and trace_processor read them as they are)\n"
	"  -o FILE             the file to write (needed)\n"
	"  --tsc-hz HZ         the TSC rate of a trace that counts cycles without TSC2NSEC\n"
	"  --cpu-hz HZ         the same (xenalyze's name: a xentrace host's CPU frequency)\n"
	CLI_HELP_THREADS CLI_HELP_ROLES CLI_HELP_WINDOW;

int cmd_export(int argc, char **argv)
{
	/* --format is this command's own: taken out before the shared parser sees argv */
	const char *format = NULL;
	bool deflate = false;
	int n = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--deflate") && i > 0) {
			deflate = true;
			continue;
		}
		if (!strcmp(argv[i], "--format") && i + 1 < argc && i > 0) {
			format = argv[++i];
			continue;
		}
		if (!strncmp(argv[i], "--format=", 9) && i > 0) {
			format = argv[i] + 9;
			continue;
		}
		argv[n++] = argv[i];
	}
	argc = n;
	argv[argc] = NULL;
	struct cli c;
	int st = cli_begin(&c, argc, argv, CLI_ROLES | CLI_OUT | CLI_WINDOW, usage);
	if (st != CLI_GO)
		return st;
	struct vms_export_opts opts = { .format = VMS_EXPORT_PERFETTO, .deflate = deflate };
	size_t len = strlen(c.out ? c.out : "");
	if (format ? !strcmp(format, "json")
		   : len >= 5 && !strcmp(c.out + len - 5, ".json"))
		opts.format = VMS_EXPORT_CHROME_JSON;
	if (!c.out || !strcmp(c.out, "-") || (format && strcmp(format, "json") &&
					      strcmp(format, "perfetto"))) {
		fprintf(stderr, "vmscope %s: %s\n%s", c.cmd,
			c.out && strcmp(c.out, "-") ? "--format is perfetto or json"
						    : "-o FILE is needed (a trace file)", usage);
		return cli_end(&c, VMS_EXIT_USAGE);
	}
	/* no model yet: the export makes its tracks when the pass begins (its observer's reset),
	 * so that the session may read the traces once (the checked single pass) */
	opts.filter = (struct vms_filter){ .machine = -1,
					   .vcpu = c.sopts.has_vcpu ? (int32_t)c.sopts.vcpu : -1 };
	opts.machine_name = c.sopts.machine;
	struct vms_export *x = vms_export_new(NULL, c.f, &opts);
	struct vms_observer obs = x ? vms_export_observer(x) : (struct vms_observer){ 0 };
	if (x && !obs.reset) {   /* FILE cannot be written again: the model pass comes first */
		vms_export_free(x);
		struct vms_error err = { 0 };
		if (vms_session_build_model(c.s, &err) != 0)
			return cli_end(&c, cli_fail(&c, &err));
		x = vms_export_new(vms_session_model(c.s), c.f, &opts);
		obs = x ? vms_export_observer(x) : (struct vms_observer){ 0 };
	}
	if (!x || vms_session_observe(c.s, &obs) != 0) {
		vms_export_free(x);
		fprintf(stderr, "vmscope %s: out of memory\n", c.cmd);
		return cli_end(&c, VMS_EXIT_FAIL);
	}
	struct vms_sinks sinks = vms_export_sinks(x);
	st = cli_run(&c, &sinks);
	if (st == 0 && vms_export_finish(x) != 0) {
		/* what fails in an export is a write (the stream's error flag is set) or else an
		 * allocation: running out of memory is said as such, never as "cannot write" */
		if (ferror(c.f))
			fprintf(stderr, "vmscope %s: cannot write %s\n", c.cmd, c.out);
		else
			fprintf(stderr, "vmscope %s: out of memory writing %s\n", c.cmd, c.out);
		st = VMS_EXIT_FAIL;
	}
	/* (before the file is closed: a run that failed leaves the export's thread writing) */
	vms_export_free(x);
	const char *out = c.out;
	st = cli_end(&c, st);
	struct stat sb;
	/* a failed export leaves no file a viewer would open as if it were whole (as a
	 * compiler removes its -o on error); only a regular file, never a FIFO or a device */
	if (st != 0 && out && stat(out, &sb) == 0 && S_ISREG(sb.st_mode) && unlink(out) == 0)
		fprintf(stderr, "vmscope export: removed the incomplete %s\n", out);
	if (st == 0 && stat(out, &sb) == 0)
		fprintf(stderr, "vmscope export: wrote %s (%.1f MiB)%s\n", out,
			(double)sb.st_size / (1024.0 * 1024.0),
			opts.format == VMS_EXPORT_PERFETTO
				? "; open it at https://ui.perfetto.dev (Open trace file)" : "");
	return st;
}
