/* vmscope demo: the README's first command. Synthesizes a host + guest trace.dat pair (a
 * noisy neighbour preempting a busy guest), then reports on it, so a newcomer sees what
 * vmscope tells without having any trace at hand. The data is simulated, and says so. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"

static const char usage[] =
	"usage: vmscope demo [--events N] [--seed N] [--scenario NAME] [--dir DIR]\n"
	"\n"
	"Writes a simulated host + guest trace.dat pair with `vmscope synth` (into DIR, default a\n"
	"fresh directory under $TMPDIR) and runs `vmscope report` on it.\n";

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
			fprintf(stderr, "vmscope demo: bad argument '%s'\n%s", argv[optind - 1], usage);
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
	return cmd_report(3, rargv);
}
