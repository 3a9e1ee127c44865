/* vmscope: the command dispatcher. Thin on purpose: every command lives in its own
 * cmd-<name>.c and talks to libvmscope. */
#include <stdio.h>
#include <string.h>

#include "cmds.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "demo", cmd_demo, "synthesize a host + guest pair and report on it (no files needed)" },
	{ "info", cmd_info, "what a trace is: format, role, clock, CPUs, events, options" },
	{ "report", cmd_report, "the truth per guest and vCPU: run, VMM, preempted, exits, steal" },
	{ "html", cmd_html, "the report as one self-contained HTML page with a timeline" },
	{ "vcpus", cmd_vcpus, "vCPU state intervals (text, CSV or JSON Lines)" },
	{ "pcpus", cmd_pcpus, "what really ran on each physical CPU: host thread or guest thread" },
	{ "threads", cmd_threads, "when a guest thread its guest thought running was stopped" },
	{ "export", cmd_export, "the timeline for Perfetto UI (.pftrace) or as Chrome JSON" },
	{ "latency", cmd_latency, "why guest threads were late: each wake-up split into causes" },
	{ "containers", cmd_containers, "threads by container: running, run queue, VMM, preempted" },
	{ "exits", cmd_exits, "VM exits per guest, vCPU and reason with cost percentiles" },
	{ "sync", cmd_sync, "how each machine's clock was brought to the reference" },
	{ "synth", cmd_synth, "write a realistic simulated host + guest trace.dat pair" },
	{ "dump", cmd_dump, "print the events of a trace as text" },
	{ "ctl", cmd_ctl, "talk to a traced program's control socket" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: vmscope <command> [options] TRACE...\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "   %-9s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nOptions may come before or after the traces; --opt=value and --opt value are "
		   "alike.\n'vmscope help <command>' tells more, 'man vmscope-<command>' tells all;\n"
		   "'vmscope --version' (on any command) prints the version.\n"
		   "Exit status: 0 success, 1 failure, 2 bad input or usage.\n");
}

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	fprintf(stderr, "vmscope: '%s' is not a command. See 'vmscope --help'.\n", name);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return VMS_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    (!strcmp(argv[1], "help") && argc == 2)) {
		usage(stdout);
		return VMS_EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) {
		/* vmscope help CMD: what CMD --help prints */
		const struct command *c = find(argv[2]);
		char *hargv[] = { argv[2], "--help", NULL };
		return c ? c->fn(2, hargv) : VMS_EXIT_USAGE;
	}
	/* --version on every command (before a "--", after which arguments are the command's) */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--version")) {
			printf("vmscope %s\n", VMSCOPE_VERSION);
			return VMS_EXIT_OK;
		}
	const struct command *c = find(argv[1]);
	return c ? c->fn(argc - 1, argv + 1) : VMS_EXIT_USAGE;
}
