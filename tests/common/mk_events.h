/* The events the hand-made trace.dat writers of the tests write (tests/cli/mk_trace.c,
 * tests/nested/mk_nested.c), with vmscope's own trace.dat writer and the synthesizer's kernel
 * formats: event type ids 372 sched_switch, 374 sched_wakeup, 115 kvm_entry, 103 kvm_exit
 * (mk_fmt registers a format under the id given). Each returns the writer's status. */
#ifndef VMS_TEST_MK_EVENTS_H
#define VMS_TEST_MK_EVENTS_H

#include <stdio.h>
#include <string.h>

#include "output/tracedat_writer.h"
#include "synth/kernel_formats.h"

static inline int mk_fmt(struct vms_tdw *w, const char *sys, const char *name, unsigned id,
			 const char *body, struct vms_error *err)
{
	char buf[16384];
	snprintf(buf, sizeof buf, "name: %s\nID: %u\nformat:\n%s", name, id, body);
	return vms_tdw_add_event_format(w, sys, buf, err);
}

/* kvm_entry of vCPU 0 by host thread tid */
static inline int mk_entry(struct vms_tdw *w, uint32_t cpu, uint64_t ts, int tid,
			   struct vms_error *err)
{
	struct vms_ev_kvm_entry e;
	memset(&e, 0, sizeof e);
	e.c.type = 115;
	e.c.pid = tid;
	e.vcpu_id = 0;
	return vms_tdw_event(w, cpu, ts, &e, sizeof e, err);
}

/* kvm_exit (VMX) of vCPU 0 by host thread tid */
static inline int mk_exit(struct vms_tdw *w, uint32_t cpu, uint64_t ts, int tid, uint32_t reason,
			  struct vms_error *err)
{
	struct vms_ev_kvm_exit e;
	memset(&e, 0, sizeof e);
	e.c.type = 103;
	e.c.pid = tid;
	e.exit_reason = reason;
	e.isa = 1;
	e.vcpu_id = 0;
	return vms_tdw_event(w, cpu, ts, &e, sizeof e, err);
}

/* "task-PID", NUL-padded in a comm's 16 bytes (cut at 15 as the kernel's; through a buffer
 * that fits any int, so that no snprintf may truncate) */
static inline void mk_task_comm(char dst[16], int pid)
{
	char b[24] = { 0 };
	snprintf(b, sizeof b, "task-%d", pid);
	memcpy(dst, b, 15);
	dst[15] = '\0';
}

/* sched_switch prev -> next, prev left runnable; comms "task-N" */
static inline int mk_switch(struct vms_tdw *w, uint32_t cpu, uint64_t ts, int prev, int next,
			    struct vms_error *err)
{
	struct vms_ev_sched_switch e;
	memset(&e, 0, sizeof e);
	e.c.type = 372;
	e.c.pid = prev;
	mk_task_comm(e.prev_comm, prev);
	e.prev_pid = prev;
	e.prev_prio = 120;
	mk_task_comm(e.next_comm, next);
	e.next_pid = next;
	e.next_prio = 120;
	return vms_tdw_event(w, cpu, ts, &e, sizeof e, err);
}

#endif
