/* vmscope CLI: one file per subcommand (git's builtin/ style); each returns the exit status:
 * 0 success, 1 failure, 2 bad input or usage. A closed pipe on stdout ends the command with
 * 0 (main.c). */
#ifndef VMSCOPE_CMDS_H
#define VMSCOPE_CMDS_H

#include <stdio.h>

#define VMS_EXIT_OK 0
#define VMS_EXIT_FAIL 1
#define VMS_EXIT_USAGE 2

#include <signal.h>
/* Whether the command's output is stdout (main.c's rule for a closed pipe: exit 0 at once);
 * cleared by a command that writes to -o FILE. */
extern volatile sig_atomic_t vms_output_is_stdout;

int cmd_info(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_html(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_index(int argc, char **argv);
int cmd_vcpus(int argc, char **argv);
int cmd_pcpus(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_latency(int argc, char **argv);
int cmd_threads(int argc, char **argv);
int cmd_exits(int argc, char **argv);
int cmd_sync(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_ctl(int argc, char **argv);
int cmd_db(int argc, char **argv);
int cmd_containers(int argc, char **argv);

/* cmd-containers.c: containers (PID namespaces) and their times, for report too */
struct vms_model;
struct vms_containers;
struct vms_json;
void cli_containers_text(FILE *f, struct vms_model *m, const struct vms_containers *c);
void cli_containers_json(struct vms_json *j, struct vms_model *m, const struct vms_containers *c);
struct vms_session;
/* A containers consumer observing the session, following the sources that can record
 * namespaces; *out NULL when none can. Returns 0, or -1 when out of memory. */
int cli_containers_observe(struct vms_session *s, struct vms_containers **out);
void cli_containers_warn(const char *cmd, struct vms_model *m, const struct vms_containers *c);

/* cmd-report.c: the member "findings" of report --json (vmscope serve's /api/findings too) */
struct vms_findings;
void cli_findings_json(struct vms_json *j, struct vms_model *m, const struct vms_findings *fd);
/* After the run: apply the findings' rules to session s's analysis and sources (lat may be
 * NULL), as report does. */
struct vms_latency;
void cli_findings_compute(struct vms_session *s, struct vms_findings *fd,
			  const struct vms_latency *lat);

#endif
