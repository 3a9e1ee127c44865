/* vmscope: the command dispatcher. Thin on purpose: every command lives in its own
 * cmd-<name>.c and talks to libvmscope. */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
#define VMS_COMMAND(name, summary) { #name, cmd_##name, summary },
#include "commands.h"
#undef VMS_COMMAND
};

volatile sig_atomic_t vms_output_is_stdout = 1;

/* The reader of the output went away (`vmscope dump big | head -1`): it has what it wanted,
 * so the command ends at once with status 0, as the documentation says, instead of being
 * killed by SIGPIPE (status 141). Only when stdout is the output and its pipe is the one
 * closed (poll: POLLERR on a pipe with no reader); a SIGPIPE of any other descriptor (the
 * reader of stderr gone, a control socket, stdout while -o FILE is the output) is left to
 * the write, which fails with EPIPE and is handled where it is made. */
static void on_sigpipe(int sig)
{
	(void)sig;
	struct pollfd p = { .fd = STDOUT_FILENO, .events = POLLOUT };
	if (vms_output_is_stdout && poll(&p, 1, 0) == 1 && (p.revents & POLLERR))
		_exit(VMS_EXIT_OK);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: vmscope <command> [options] TRACE...\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "   %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nOptions may come before or after the traces; --opt=value and --opt value are "
		   "alike.\n'vmscope help <command>' tells more, 'man vmscope-<command>' tells all;\n"
		   "'vmscope --version' (on any command) prints the version.\n"
		   "Exit status: 0 success (also when the reader of the output closes the pipe, as\n"
		   "`| head` does), 1 failure, 2 bad input or usage.\n");
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
	struct sigaction sa = { .sa_handler = on_sigpipe };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPIPE, &sa, NULL);
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
