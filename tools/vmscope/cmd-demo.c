/* vmscope demo: the README's first command. Synthesizes a host + guest trace.dat pair (a
 * noisy neighbour preempting a busy guest), then reports on it, so a newcomer sees what
 * vmscope tells without having any trace at hand. The data is simulated, and says so. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"

static const char usage[] =
	"usage: vmscope demo [--events N] [--seed N] [--scenario NAME] [--dir DIR]\n"
	"\n"
	"Writes a simulated host + guest trace.dat pair with `vmscope synth` (into DIR, default a\n"
	"fresh directory under $TMPDIR), runs `vmscope report` on it and writes its timeline\n"
	"beside it, DIR/demo.pftrace, for the Perfetto UI (`vmscope export`), and the same report\n"
	"with an interactive timeline in DIR/report.html (`vmscope html`). It ends with how to\n"
	"record one's own host and guests (docs/recording.md).\n";

/* The timeline beside the report, and how to look at it. */
static int demo_timeline(const char *dir, char *host, char *guest)
{
	char out[PATH_MAX + 16];
	snprintf(out, sizeof out, "%s/demo.pftrace", dir);
	char *xargv[] = { "export", "-o", out, host, guest, NULL };
	fflush(stdout);
	int st = cmd_export(5, xargv);
	if (st != VMS_EXIT_OK)
		return st;
	printf("\nThe timeline: %s\n"
	       "Open https://ui.perfetto.dev in a browser, click \"Open trace file\" and pick it (it\n"
	       "stays in your browser). Each machine is a group: the host's CPU tracks show what really\n"
	       "ran (host thread, or guest vCPU and guest thread); the guest's vCPU tracks show its\n"
	       "states and VM exits (click one: reason, guest RIP, host CPU), with exits/s and\n"
	       "steal %% counters; each guest thread shows when it ran and why it did not.\n",
	       out);
	return VMS_EXIT_OK;
}

int cmd_demo(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "events", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 'S' },
		{ "scenario", required_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *events = "200000", *seed = "1", *scenario = NULL, *dir = NULL;
	int c;
	optind = 1;
	opterr = 0;
	char ob[8];   /* cli_bad_option's "-c" */
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage, stdout);
			return VMS_EXIT_OK;
		case 'n':
			events = optarg;
			break;
		case 'S':
			seed = optarg;
			break;
		case 's':
			scenario = optarg;
			break;
		case 'd':
			dir = optarg;
			break;
		default:
			fprintf(stderr, "vmscope demo: unknown option '%s'\n%s",
				cli_bad_option(argv, ob, sizeof ob), usage);
			return VMS_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vmscope demo: unexpected argument '%s'\n%s", argv[optind], usage);
		return VMS_EXIT_USAGE;
	}
	char tmpl[PATH_MAX];
	if (!dir) {
		const char *tmp = getenv("TMPDIR");
		snprintf(tmpl, sizeof tmpl, "%s/vmscope-demo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(tmpl)) {
			perror("vmscope demo: mkdtemp");
			return VMS_EXIT_FAIL;
		}
		dir = tmpl;
	}
	char *sargv[12];
	int sargc = 0;
	sargv[sargc++] = "synth";
	sargv[sargc++] = "--events";
	sargv[sargc++] = (char *)events;
	sargv[sargc++] = "--seed";
	sargv[sargc++] = (char *)seed;
	sargv[sargc++] = "--out";
	sargv[sargc++] = (char *)dir;
	if (scenario) {
		sargv[sargc++] = "--scenario";
		sargv[sargc++] = (char *)scenario;
	}
	sargv[sargc] = NULL;
	int st = cmd_synth(sargc, sargv);
	if (st != VMS_EXIT_OK)
		return st;
	char host[PATH_MAX + 16], guest[PATH_MAX + 16];
	snprintf(host, sizeof host, "%s/host.dat", dir);
	snprintf(guest, sizeof guest, "%s/guest.dat", dir);
	printf("vmscope demo: SIMULATED DATA. A host and its guest were synthesized into %s\n"
	       "(a noisy neighbour on the host preempts the guest's vCPUs). This is what vmscope\n"
	       "tells about them; run it on your own trace-cmd recordings the same way:\n"
	       "  vmscope report %s %s\n\n",
	       dir, host, guest);
	fflush(stdout);
	char *rargv[] = { "report", host, guest, NULL };
	st = cmd_report(3, rargv);
	if (st != VMS_EXIT_OK)
		return st;
	st = demo_timeline(dir, host, guest);
	if (st != VMS_EXIT_OK)
		return st;
	/* the same as a page with the timeline, beside the traces */
	char page[PATH_MAX + 16];
	snprintf(page, sizeof page, "%s/report.html", dir);
	char *hargv[] = { "html", host, guest, "-o", page, NULL };
	fflush(stdout);
	st = cmd_html(5, hargv);
	if (st != VMS_EXIT_OK)
		return st;
	printf("\nvmscope demo: the same report with an interactive timeline: %s\n"
	       "(one self-contained file: open it in any web browser)\n", page);
	/* the next step: the same on one's own host (docs/recording.md has the details) */
	printf("\nOn your own KVM host (docs/recording.md): `trace-cmd agent -D` in each guest, then\n"
	       "  trace-cmd record -C tsc2nsec -e kvm -e sched -e task -A GUEST@CID -e sched -e task\n"
	       "  vmscope report trace.dat trace-GUEST.dat\n");
	return st;
}
