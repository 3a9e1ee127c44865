/* The model's first pass: only the few kinds that link machines and name threads. Each is
 * remembered in a form bounded by the model (threads, vm_uids), never per event. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

void vms_model_wanted_kinds(bool wanted[VMS_K_COUNT])
{
	wanted[VMS_K_KVM_ENTRY] = true;
	wanted[VMS_K_KVM_EXIT] = true;
	wanted[VMS_K_VMSYNC_GH_GUEST] = true;
	wanted[VMS_K_VMSYNC_GH_HOST] = true;
	wanted[VMS_K_VMSYNC_HG_HOST] = true;
	wanted[VMS_K_VMSYNC_HG_GUEST] = true;
	wanted[VMS_K_PROCESS_FORK] = true;
	wanted[VMS_K_THREAD_NAME] = true;
	wanted[VMS_K_PROCESS_EXEC] = true;
	wanted[VMS_K_NET_SEND] = true;  /* matched pairs for the hull (vmscope/sync.h) */
	wanted[VMS_K_NET_RECV] = true;
}

/* An event that may pair with one of another machine: matched in the machines' own ns. */
static void observe_match(struct vms_model *m, const struct vms_event *ev)
{
	if (m->nr_sources < 2 || m->no_hull)
		return;
	if (!m->sync_set &&
	    !(m->sync_set = vms_sync_set_new(m->nr_sources,
					     m->match_cap ? m->match_cap : VMS_MATCH_DEFAULT_CAP)))
		return;
	uint64_t t = vms_clock_to_ns(&m->priv[ev->machine].own, ev->cpu, ev->ts);
	struct vms_sync_pair pair;
	if (vms_sync_set_event(m->sync_set, ev->machine, (enum vms_kind)ev->kind, ev->f, t, &pair) &&
	    m->on_pair)
		m->on_pair(m->on_pair_ctx, &pair);
}

static void note_sync_host(struct vms_machine_priv *p, uint64_t uid, int32_t tid, bool gh)
{
	p->has_vmsync_host = true;
	if (tid < 0)
		return;
	for (uint32_t i = 0; i < p->nr_sync; i++) {
		if (p->sync[i].vm_uid == uid && p->sync[i].tid == tid) {
			p->sync[i].gh |= gh;
			return;
		}
	}
	if (p->nr_sync == VMS_MODEL_MAX_SYNC)
		return; /* more distinct pairs than any real session has: the rest add nothing */
	if ((p->nr_sync & (p->nr_sync - 1)) == 0) { /* grow at powers of two */
		uint32_t ncap = p->nr_sync ? p->nr_sync * 2 : 4;
		struct vms_sync_host *ns = realloc(p->sync, ncap * sizeof *ns);
		if (!ns)
			return;
		p->sync = ns;
	}
	p->sync[p->nr_sync++] = (struct vms_sync_host){ .vm_uid = uid, .tid = tid, .gh = gh };
}

/* What an event says of a thread: its pid (`how` says how it was learnt; a better source
 * replaces a worse one, see enum vms_pid_how), its name, its creator. The names a fork or
 * an exec gives are the thread's first: they never replace a name learnt otherwise (saved
 * cmdlines are the last names, and streams are observed in any order, so a later
 * task_rename may already be in). */
static struct vms_thread_info *note_thread(struct vms_model *m, uint32_t machine, uint64_t tid,
					   uint64_t pid, enum vms_pid_how how, const char *comm,
					   bool first_name)
{
	int32_t t = (int32_t)tid;
	if (t < 0 || (uint64_t)t != tid)
		return NULL;
	struct vms_thread_info *ti = vms_model_thread_put(m, machine, t);
	if (!ti)
		return NULL;
	if (pid > 0 && pid <= INT32_MAX && (ti->pid < 0 || how < ti->pid_how)) {
		ti->pid = (int32_t)pid;
		ti->pid_how = how;
	}
	if (comm && *comm && (!first_name || !ti->comm[0]))
		snprintf(ti->comm, sizeof ti->comm, "%s", comm);
	return ti;
}

static void note_fork(struct vms_model *m, const struct vms_event *ev)
{
	struct vms_thread_info *ti =
		note_thread(m, ev->machine, ev->f[1], ev->f[2], VMS_PID_FORK, ev->s[0], true);
	if (ti && ev->f[0] > 0 && ev->f[0] <= INT32_MAX && ev->f[0] != ev->f[1])
		ti->parent = (int32_t)ev->f[0];
}

/* After exec the thread leads its process (the kernel makes the exec'ing thread the group
 * leader): its pid is its tid, its name the file's base name (TASK_COMM_LEN - 1 bytes). */
static void note_exec(struct vms_model *m, const struct vms_event *ev)
{
	char comm[16] = "";
	if (ev->s[0]) {
		const char *b = strrchr(ev->s[0], '/');
		snprintf(comm, sizeof comm, "%s", b ? b + 1 : ev->s[0]);
	}
	struct vms_thread_info *ti =
		note_thread(m, ev->machine, ev->f[0], ev->f[0], VMS_PID_EXEC, comm, true);
	if (ti)
		ti->exec = true;
}

/* What vms_model_observe does for the kinds that come rarely, and for a kvm_entry of a thread
 * kvm_seen does not hold (out of line: the kvm events, most of a host's, then cost a test
 * or two, ~45 instructions each when the switch, the match test and the calls' saved
 * registers were on their path) */
static __attribute__((noinline)) void observe_rest(struct vms_model *m,
						   struct vms_machine_priv *p,
						   const struct vms_event *ev)
{
	if (vms_match_kind((enum vms_kind)ev->kind))
		observe_match(m, ev);
	switch (ev->kind) {
	case VMS_K_KVM_ENTRY:
		if (vms_keymap_put(&p->kvm_threads, (uint32_t)ev->tid, ev->f[0], NULL))
			p->kvm_seen[ev->tid & 15] = (uint32_t)ev->tid + 1;
		break;
	case VMS_K_VMSYNC_GH_HOST:
	case VMS_K_VMSYNC_HG_HOST:
		note_sync_host(p, ev->f[0], ev->tid, ev->kind == VMS_K_VMSYNC_GH_HOST);
		break;
	case VMS_K_VMSYNC_GH_GUEST:
	case VMS_K_VMSYNC_HG_GUEST:
		p->has_vmsync_guest = true;
		if (!p->has_guest_uid) {
			p->has_guest_uid = true;
			p->guest_uid = ev->f[0];
		}
		break;
	case VMS_K_PROCESS_FORK:
		note_fork(m, ev);
		break;
	case VMS_K_PROCESS_EXEC:
		note_exec(m, ev);
		break;
	case VMS_K_THREAD_NAME:
		note_thread(m, ev->machine, ev->f[0], ev->f[1], VMS_PID_STATEDUMP, ev->s[0], false);
		break;
	default:
		break;
	}
}

void vms_model_observe(struct vms_model *m, const struct vms_event *ev)
{
	if (ev->machine >= m->nr_sources || m->finished)
		return;
	struct vms_machine_priv *p = &m->priv[ev->machine];
	/* (neither kvm kind is one the matcher pairs) */
	if (ev->kind == VMS_K_KVM_EXIT) {
		p->has_kvm = true;
		return;
	}
	if (ev->kind == VMS_K_KVM_ENTRY) {
		p->has_kvm = true;
		/* its thread's vCPU is kept once: kvm_seen holds the threads kept last */
		if (ev->tid < 0 || ev->f[0] >= VMS_MODEL_MAX_VCPUS ||
		    p->kvm_seen[ev->tid & 15] == (uint32_t)ev->tid + 1)
			return;
	}
	observe_rest(m, p, ev);
}
