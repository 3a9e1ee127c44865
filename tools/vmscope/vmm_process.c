/* What is known of a guest's VMM process on its host, said the same way by info and report
 * (text and JSON): its pid and how the trace told it (vms_pid_how), else the vCPU thread
 * that is known (tid and name) and that the pid was not recorded — never "pid ?". */
#include <stdio.h>

#include "cli.h"
#include "vmscope/writers.h"
#include "vmscope/xentrace.h"

/* how the pid was learnt, as a reader checks it against the trace */
static const char *pid_source_text(enum vms_pid_how how)
{
	switch (how) {
	case VMS_PID_EXEC: return "pid from its exec (sched_process_exec)";
	case VMS_PID_STATEDUMP: return "pid from the trace's process table (statedump)";
	case VMS_PID_FORK: return "pid from its vCPU threads' creation (sched_process_fork tgid)";
	case VMS_PID_PARENT:
		return "pid taken as the thread that created its vCPU threads (sched_process_fork)";
	case VMS_PID_NONE: break;
	}
	return "pid recorded";
}

/* The first vCPU's host thread (the one the text names), -1 when none is linked. */
static int32_t first_vcpu_tid(const struct vms_machine *g)
{
	for (uint32_t v = 0; v < g->nr_vcpus; v++)
		if (g->vcpus[v].host_tid >= 0)
			return g->vcpus[v].host_tid;
	return -1;
}

static const char *comm_of(struct vms_model *m, int32_t host, int32_t tid)
{
	const struct vms_thread_info *t =
		host >= 0 && tid >= 0 ? vms_model_thread(m, (uint32_t)host, tid) : NULL;
	return t && t->comm[0] ? t->comm : NULL;
}

const char *cli_vmm_text(struct vms_model *m, const struct vms_machine *g, char *buf, size_t len)
{
	int32_t tid = first_vcpu_tid(g);
	if (g->host_how == VMS_LINK_XENTRACE && tid > 0) {
		/* a Xen domain: no process and no pid to record */
		snprintf(buf, len, "Xen domain %u", vms_xen_tid_dom(tid));
		return buf;
	}
	if (g->host_pid >= 0) {
		const char *name = comm_of(m, g->host, g->host_pid);
		if (name)
			snprintf(buf, len, "process %d (%s), %s", g->host_pid, cli_text(name),
				 pid_source_text(g->host_pid_how));
		else
			snprintf(buf, len, "process %d, %s", g->host_pid,
				 pid_source_text(g->host_pid_how));
		return buf;
	}
	const char *comm = comm_of(m, g->host, tid);
	if (tid >= 0 && comm)
		snprintf(buf, len, "the process of thread %d (%s), pid not recorded", tid,
			 cli_text(comm));
	else if (tid >= 0)
		snprintf(buf, len, "the process of thread %d, pid not recorded", tid);
	else
		snprintf(buf, len, "process not recorded");
	return buf;
}

void cli_vmm_json(struct vms_json *j, struct vms_model *m, const struct vms_machine *g)
{
	if (g->host < 0) {
		vms_json_null(j, "vmm_process");
		return;
	}
	int32_t tid = first_vcpu_tid(g);
	vms_json_begin_object(j, "vmm_process");
	if (g->host_pid >= 0) {
		vms_json_int(j, "pid", g->host_pid);
		vms_json_string(j, "pid_source", vms_pid_how_name(g->host_pid_how));
		vms_json_string(j, "name", comm_of(m, g->host, g->host_pid));
	} else {
		vms_json_null(j, "pid");
		vms_json_null(j, "pid_source");
		vms_json_null(j, "name");
	}
	if (tid >= 0)
		vms_json_int(j, "tid", tid);
	else
		vms_json_null(j, "tid");
	vms_json_string(j, "comm", comm_of(m, g->host, tid));
	vms_json_end_object(j);
}
