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
};

struct cli {
	const char *cmd;
	bool json, csv, per_guest;
	unsigned top;
	const char *out;
	const char **paths;
	uint32_t nr_paths;
	struct vms_session_opts sopts;
	struct vms_session *s;   /* after cli_begin */
	FILE *f;                 /* the output, after cli_begin */
};

#define CLI_GO (-1)
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
/* Print "vmscope CMD: message" and return the exit status for the error. */
int cli_fail(const struct cli *c, const struct vms_error *err);
/* Where the command's output goes (-o FILE, else stdout). NULL after printing an error. */
FILE *cli_output(const struct cli *c);

/* The members of a machine's sync object (spec §8: reference, method, slope, offset_ns,
 * quality, pairs, containment), written into the JSON object the caller has opened. */
struct vms_json;
void cli_json_sync_members(struct vms_json *j, struct vms_model *m,
			   const struct vms_sync_info *si);

/* xen_report.c: the Xen model's tables of a xentrace source (nothing for other sources) */
void cli_xen_text(FILE *f, struct vms_session *s, uint32_t source);
void cli_xen_json(struct vms_json *j, struct vms_session *s, uint32_t source);
void cli_xen_info_text(FILE *f, const struct vms_source *src);
void cli_xen_info_json(struct vms_json *j, const struct vms_source *src);

/* Human formatting */
const char *cli_ns(uint64_t ns, char *buf, size_t len);   /* "1.23 ms" */
const char *cli_machine_name(struct vms_model *m, uint32_t i);

#endif
