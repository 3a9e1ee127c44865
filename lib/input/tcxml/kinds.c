/* Event names and fields of Trace Compass XML stubs (which follow LTTng's kernel event
 * names and field names) mapped to vmscope's kinds (include/vmscope/event.h). A field a kind
 * needs that is absent reads as 0; one that is present but not a number is an error: a
 * misread field would silently change the results. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tcxml.h"

static const struct {
	const char *name;
	enum vms_kind kind;
} names[] = {
	{"sched_switch", VMS_K_SCHED_SWITCH},
	{"sched_wakeup", VMS_K_SCHED_WAKEUP},
	{"sched_wakeup_new", VMS_K_SCHED_WAKEUP},
	{"kvm_entry", VMS_K_KVM_ENTRY},
	{"kvm_x86_entry", VMS_K_KVM_ENTRY},
	{"kvm_exit", VMS_K_KVM_EXIT},
	{"kvm_x86_exit", VMS_K_KVM_EXIT},
	{"kvm_vcpu_wakeup", VMS_K_KVM_VCPU_WAKEUP},
	{"vmsync_gh_guest", VMS_K_VMSYNC_GH_GUEST},
	{"vmsync_gh_host", VMS_K_VMSYNC_GH_HOST},
	{"vmsync_hg_host", VMS_K_VMSYNC_HG_HOST},
	{"vmsync_hg_guest", VMS_K_VMSYNC_HG_GUEST},
	{"inet_sock_local_out", VMS_K_NET_SEND},
	{"inet_sock_local_in", VMS_K_NET_RECV},
	{"sched_process_fork", VMS_K_PROCESS_FORK},
	{"sched_process_exit", VMS_K_PROCESS_EXIT},
	{"sched_process_free", VMS_K_PROCESS_EXIT},
	{"lttng_statedump_process_state", VMS_K_THREAD_NAME},
	{"task_rename", VMS_K_THREAD_NAME},
};

enum vms_kind tcxml_kind_of(const char *name)
{
	const char *colon = strrchr(name, ':'); /* "sched:sched_switch" -> "sched_switch" */
	if (colon)
		name = colon + 1;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(names[i].name, name) == 0)
			return names[i].kind;
	return VMS_K_OTHER;
}

const char *tcxml_field(const struct tcxml_raw *ev, const char *name)
{
	for (uint32_t i = 0; i < ev->nr_fields; i++)
		if (strcmp(ev->fname[i], name) == 0)
			return ev->fvalue[i];
	return NULL;
}

/* A decimal integer, possibly negative (stored two's complement), or -1 on error. */
static int parse_num(const char *s, uint64_t *out)
{
	while (*s == ' ')
		s++;
	char *end;
	errno = 0;
	if (*s == '-') {
		long long v = strtoll(s, &end, 10);
		if (errno || end == s || *end)
			return -1;
		*out = (uint64_t)v;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* Field `name` as a number into *out (0 when absent); *present says whether it was there. */
static int num(const char *path, const struct tcxml_raw *ev, const char *name, uint64_t *out,
	       bool *present, struct vms_error *err)
{
	const char *v = tcxml_field(ev, name);
	if (present)
		*present = v != NULL;
	*out = 0;
	if (!v)
		return 0;
	if (parse_num(v, out) != 0)
		return vms_error_set(err, VMS_ERR_FORMAT,
				     "%s: field %s of event %s is not a number (\"%.40s\") (line %u) at "
				     "byte offset %ld", path, name, ev->name, v, ev->line, ev->offset);
	return 0;
}

int tcxml_cpu(const char *path, const struct tcxml_raw *ev, uint32_t *cpu,
	      struct vms_error *err)
{
	uint64_t v;
	if (num(path, ev, "cpu", &v, NULL, err) != 0)
		return err->status;
	if (v >= TCXML_MAX_CPUS)
		return vms_error_set(err, VMS_ERR_FORMAT,
				     "%s: cpu %llu of event %s out of range (line %u) at byte offset %ld",
				     path, (unsigned long long)v, ev->name, ev->line, ev->offset);
	*cpu = (uint32_t)v;
	return 0;
}

/* The entries of a longArray value ("43,4,2": a thread's tid in each PID namespace level). */
static uint64_t levels(const char *v)
{
	if (!v || !*v)
		return 0;
	uint64_t n = 1;
	for (; *v; v++)
		n += *v == ',';
	return n;
}

#define NUM(i, fname)                                                                   \
	do {                                                                            \
		if (num(path, ev, fname, &out->f[i], NULL, err) != 0)                   \
			return err->status;                                             \
	} while (0)

int tcxml_decode(const char *path, const struct tcxml_raw *ev, enum vms_kind kind,
		 struct vms_event *out, struct vms_error *err)
{
	bool present;
	uint64_t v;
	memset(out->f, 0, sizeof out->f);
	out->s[0] = out->s[1] = NULL;
	switch (kind) {
	case VMS_K_SCHED_SWITCH:
		NUM(0, "prev_tid");
		NUM(1, "prev_state");
		NUM(2, "next_tid");
		NUM(3, "prev_prio");
		NUM(4, "next_prio");
		out->s[0] = tcxml_field(ev, "prev_comm");
		out->s[1] = tcxml_field(ev, "next_comm");
		break;
	case VMS_K_SCHED_WAKEUP:
		if (num(path, ev, "tid", &out->f[0], &present, err) != 0)
			return err->status;
		if (!present)
			NUM(0, "pid"); /* ftrace's name for the same thing */
		NUM(1, "target_cpu");
		NUM(2, "prio");
		out->s[0] = tcxml_field(ev, "comm");
		break;
	case VMS_K_KVM_ENTRY:
		NUM(0, "vcpu_id");
		if (num(path, ev, "rip", &out->f[1], &present, err) != 0)
			return err->status;
		if (!present)
			NUM(1, "guest_rip");
		break;
	case VMS_K_KVM_EXIT:
		NUM(0, "exit_reason");
		NUM(1, "isa");
		NUM(2, "guest_rip");
		NUM(3, "info1");
		NUM(4, "info2");
		break;
	case VMS_K_KVM_VCPU_WAKEUP:
		NUM(0, "ns");
		NUM(1, "waited");
		NUM(2, "valid");
		break;
	case VMS_K_VMSYNC_GH_GUEST:
	case VMS_K_VMSYNC_GH_HOST:
	case VMS_K_VMSYNC_HG_HOST:
	case VMS_K_VMSYNC_HG_GUEST:
		NUM(0, "vm_uid");
		NUM(1, "cnt");
		break;
	case VMS_K_NET_SEND:
	case VMS_K_NET_RECV:
		NUM(0, "seq");
		NUM(1, "ack_seq");
		NUM(2, "flags");
		break;
	case VMS_K_PROCESS_FORK:
		/* LTTng: child_tid + child_pid (the tgid); ftrace: child_pid is the tid */
		if (num(path, ev, "parent_tid", &out->f[0], &present, err) != 0)
			return err->status;
		if (!present)
			NUM(0, "parent_pid");
		if (num(path, ev, "child_tid", &out->f[1], &present, err) != 0)
			return err->status;
		if (present) {
			NUM(2, "child_pid");
		} else {
			NUM(1, "child_pid");
		}
		out->s[0] = tcxml_field(ev, "child_comm");
		NUM(3, "child_ns_inum");
		out->f[4] = levels(tcxml_field(ev, "vtids"));
		break;
	case VMS_K_PROCESS_EXIT:
		if (num(path, ev, "tid", &out->f[0], &present, err) != 0)
			return err->status;
		if (!present)
			NUM(0, "pid");
		break;
	case VMS_K_THREAD_NAME:
		/* lttng_statedump_process_state: tid, pid, name; task_rename: pid (a tid), newcomm */
		if (num(path, ev, "tid", &v, &present, err) != 0)
			return err->status;
		if (present) {
			out->f[0] = v;
			NUM(1, "pid");
			out->s[0] = tcxml_field(ev, "name");
			NUM(2, "ns_inum");
			NUM(3, "ns_level");
		} else {
			NUM(0, "pid");
			out->s[0] = tcxml_field(ev, "newcomm");
		}
		break;
	default:
		break;
	}
	return 0;
}
