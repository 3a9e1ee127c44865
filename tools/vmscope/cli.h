/* What the analysis commands share: options that name traces, roles and mappings, the
 * output switches, opening the session, and turning a vms_error into the one line and the
 * exit status (0 ok, 1 failure, 2 bad input or usage). */
#ifndef VMSCOPE_CLI_H
#define VMSCOPE_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vmscope/session.h"

enum cli_allow {
	CLI_JSON = 1u << 0,
	CLI_CSV = 1u << 1,
	CLI_ROLES = 1u << 2,   /* --host, --guest, --map */
	CLI_TOP = 1u << 3,     /* --top N */
	CLI_OUT = 1u << 4,     /* -o FILE */
	CLI_PER_GUEST = 1u << 5, /* --per-guest */
	CLI_RAW = 1u << 6,     /* --raw */
	CLI_WINDOW = 1u << 7,  /* --from, --to, --machine, --vcpu */
	CLI_THREAD = 1u << 10, /* --thread TID|COMM */
	CLI_BY = 1u << 11,     /* --by rip, --kallsyms NAME=FILE */
};

/* The version of the JSON documents (a member "schema_version" of each document, and of the
 * first line of a JSON Lines stream); raised when a member changes meaning or goes away.
 * 3: what cannot be seen is null, not a number (report's shares and *_ns fields where
 * preemption or the guest's own states are unknown). */
#define CLI_SCHEMA_VERSION 3

/* --threads N: every command that reads traces takes it (cli_parse_threads). */
#define CLI_HELP_THREADS                                                                 \
	"  --threads N         threads that read the traces (default: one per online CPU;\n"  \
	"                      1: the reading thread alone); the output is the same at any N\n"
#define CLI_MAX_THREADS 256

/* The lines of --help for the options every analysis command shares. */
#define CLI_HELP_OUTPUT                                                                  \
	"  -o, --output FILE   write to FILE instead of stdout\n"                           \
	CLI_HELP_THREADS                                                                 \
	"  --tsc-hz HZ         the TSC rate of a trace that counts cycles without TSC2NSEC\n"   \
	"  --cpu-hz HZ         the same (xenalyze's name: a xentrace host's CPU frequency)\n"   \
	"  --clock-model M     auto (default): a guest's slope to its own host is known, the\n" \
	"                      offset is fitted; two hosts: the hull, within 1000 ppm of 1;\n" \
	"                      linear: the unbounded convex hull (as Trace Compass)\n"
#define CLI_HELP_HOST_GUEST                                                              \
	"  --host FILE         this trace is the host (the reference timebase)\n"           \
	"  --guest NAME=FILE   this trace is a guest named NAME\n"
#define CLI_HELP_ROLES                                                                   \
	CLI_HELP_HOST_GUEST                                                              \
	"  --map NAME:VCPU=TID,...  guest NAME's vCPU VCPU runs on host thread TID (replaces\n" \
	"                      the link the data gave); NAME@HOST:VCPU=TID: thread TID of\n" \
	"                      machine HOST (a nested guest whose trace has no link to L1)\n" \
	"  --map NAME:dom=N    Xen: domain N of the xentrace host is the machine NAME\n"      \
	"  --offset NAME=NS    NAME's clock: reference time = its time + NS (ns, or -1.5ms,\n" \
	"                      250us, 2s), when no shared clock or matched events sync it\n"

#define CLI_HELP_WINDOW                                                                  \
	CLI_HELP_TIMES                                                                   \
	"  --machine NAME      only the rows of this machine (a host: its CPUs)\n"         \
	"  --vcpu N            only the rows of vCPU N (one that no machine kept has is a\n" \
	"                      usage error)\n"

/* The window's lines of --help (dump's too) */
#define CLI_HELP_TIMES                                                                   \
	"  --from T, --to T    only the time from T / up to T: reference seconds as info and\n" \
	"                      dump print them (22150.5), ns (22150500000000), or after the\n" \
	"                      traces' start (+1.5s, +250ms, +10us); a window that holds no\n" \
	"                      time of the traces is a usage error\n"

struct cli {
	const char *cmd;
	bool json, csv, per_guest, raw;
	const char *thread;      /* --thread TID|COMM */
	const char *by;          /* --by KEY */
	uint32_t nr_kallsyms;    /* --kallsyms NAME=FILE */
	const char *kallsyms_name[8], *kallsyms_path[8];
	unsigned top;
	const char *out;
	const char **paths;
	uint32_t nr_paths;
	struct vms_session_opts sopts;
	struct vms_session *s;   /* after cli_begin */
	FILE *f;                 /* the output, after cli_begin */
};

#define CLI_GO (-1)

/* --threads N (1 .. CLI_MAX_THREADS) into *threads; false with the message on stderr. */
bool cli_parse_threads(const char *cmd, const char *arg, unsigned *threads);
/* The life of an analysis command: cli_begin parses, opens the session and the output and
 * returns CLI_GO to go on (else the exit status, 0 after --help, everything released); cli_run runs the analyses
 * (0, or the exit status after printing the error); cli_end releases everything and returns
 * the status it is given. */
int cli_begin(struct cli *c, int argc, char **argv, unsigned allow, const char *usage);
int cli_run(struct cli *c, const struct vms_sinks *sinks);
int cli_end(struct cli *c, int status);

/* Parse argv (argv[0] is the command name). Returns 0 to go on, or an exit status + 1000
 * when the command must stop (--help printed: 1000; usage error: 1002). */
int cli_parse(struct cli *c, int argc, char **argv, unsigned allow, const char *usage);
void cli_free(struct cli *c);
/* Open the session; prints the error and sets *status on failure. */
struct vms_session *cli_session(struct cli *c, int *status);
/* --from/--to's value into b; false after printing the usage error (one line). */
bool cli_time_bound(const char *cmd, const char *opt, const char *arg, struct vms_time_bound *b);
/* Print "vmscope CMD: message" and return the exit status for the error. */
int cli_fail(const struct cli *c, const struct vms_error *err);
/* The option getopt_long just refused (unknown, or without its value), as the user wrote it:
 * in a cluster ("-rf.dat") getopt has not moved past the argument and names the character
 * ("-r"); otherwise the argument before optind. buf holds the "-c" form. */
const char *cli_bad_option(char **argv, char *buf, size_t len);
/* The exit status for a file that could not be opened (errnum: errno): a name the system
 * cannot hold (longer than NAME_MAX or PATH_MAX) or in a directory that is not there is a bad
 * argument (2); anything else a failure (1). */
int cli_open_exit(int errnum);
/* A warning per trace whose formats of events vmscope reads were refused or not parsed
 * (vms_trace_meta.nr_formats_unread): their events are not decoded, which is said. Called
 * once the traces have been read (cli_end does), since a reader may learn it per event. */
void cli_warn_formats(const char *cmd, struct vms_session *s);
/* Where the command's output goes (-o FILE, else stdout). NULL after printing an error. */
FILE *cli_output(const struct cli *c);

/* The members of a machine's sync object (spec §8: reference, method, slope, offset_ns,
 * quality, pairs, containment), written into the JSON object the caller has opened. */
struct vms_json;
void cli_json_sync_members(struct vms_json *j, struct vms_model *m,
			   const struct vms_sync_info *si);

/* The text of `vmscope report` for a session that has run (cmd-report.c; the HTML report
 * shows it too). */
void cli_report_text(FILE *f, struct vms_session *s, unsigned top);

/* The unit of every time the analyses give: "ns", or "cycles" when a trace's clock is a
 * counter without TSC2NSEC and no --tsc-hz was given (set by cli_begin). */
const char *cli_unit(void);
bool cli_cycles(void);
/* A JSON/CSV key with the unit: cli_key("total") is "total_ns" or "total_cycles" (a static
 * buffer, eight in turn). */
const char *cli_key(const char *base);
/* The members every JSON document starts with: schema_version, command, tool, version,
 * time_unit. */
struct vms_json;
void cli_json_header(struct vms_json *j, const char *cmd);

/* Warnings on stderr, for every command after its run: low containment, machines that share
 * no clock with the reference, roles forced against the data, no KVM events at all, a host
 * without sched_switch (preemption cannot be seen). */
void cli_warn_model(const struct cli *c);

/* xen_report.c: the Xen model's tables of a xentrace source (nothing for other sources) */
void cli_xen_text(FILE *f, struct vms_session *s, uint32_t source);
/* A Xen guest's domain (a guest of a xentrace host), else -1; under a Xen guest's exit
 * table: its rule, and how its counts and time come from xenalyze's table (vcpu -1: all) */
int32_t cli_xen_domain(struct vms_session *s, const struct vms_machine *g);
void cli_xen_exit_rule(FILE *f, struct vms_session *s, const struct vms_machine *g, int32_t vcpu,
		       const char *in, const struct vms_exit_stats *ex, uint32_t nr);
void cli_xen_json(struct vms_json *j, struct vms_session *s, uint32_t source);
void cli_xen_info_text(FILE *f, const struct vms_source *src);
void cli_xen_info_json(struct vms_json *j, const struct vms_source *src);

/* Human formatting */
const char *cli_ns(uint64_t ns, char *buf, size_t len);   /* "1.23 ms" (or "1.23 M cycles") */
const char *cli_machine_name(struct vms_model *m, uint32_t i);
/* Text from a trace (a name, a comm, a path, a format) escaped for a terminal, see
 * vms_text_escape: one of 16 rotating buffers, so that several can be in one printf. */
const char *cli_text(const char *s);
/* ns as trace-cmd prints a timestamp: seconds with the microseconds rounded
 * ("22149.948193"). Returns the length, like snprintf. */
int cli_seconds(uint64_t ns, char *buf, size_t len);
/* What is known of guest g's VMM process on its host (vmm_process.c): "process 4242
 * (qemu-system-x86), pid from its exec (sched_process_exec)", else "the process of thread
 * 1235 (CPU 0/KVM), pid not recorded"; in JSON the member "vmm_process" {pid, pid_source,
 * name, tid, comm} (null members where unknown; null when g has no host). */
const char *cli_vmm_text(struct vms_model *m, const struct vms_machine *g, char *buf, size_t len);
void cli_vmm_json(struct vms_json *j, struct vms_model *m, const struct vms_machine *g);

/* Parse a time rate such as 2.1e9, 2100000000 or 2.1G (Hz); false when not one. */
bool cli_parse_hz(const char *s, double *hz);
/* Report a failed write of the output: one line and VMS_EXIT_FAIL; a closed pipe (EPIPE) is
 * quiet and VMS_EXIT_OK, the rule of main.c. */
int cli_write_failed(const char *cmd, int err);
/* The same file named twice (positionally, or also by --host/--guest) is read once, with a
 * warning on stderr (cli_begin calls it). */
void cli_dedupe_paths(struct cli *c);

#endif
