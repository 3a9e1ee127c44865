/* vmscope: containers inside machines (issue 23 item 2).
 *
 * A container is a PID namespace other than a machine's root one. Where a trace records
 * namespaces (LTTng's statedump: one lttng_statedump_process_state or _process_pid_ns record
 * per namespace level of a thread, ns_level 0 = the root; sched_process_fork's
 * child_ns_inum and vtids), each thread belongs to the namespace at its deepest level, and
 * nested namespaces form a tree (a namespace's parent is the one a level above it).
 *
 * Per container of each machine: its threads and, per thread and in all,
 *   running    from a sched_switch that runs the thread to the one that takes it off its
 *              CPU (from each CPU's first sched_switch: before it nothing is known)
 *   runqueue   waiting in the machine's own run queue: from a wake-up, a fork (the child is
 *              runnable) or a switch that leaves it runnable, to the switch that runs it
 *   vmm        of its running time (guests), the vCPU it ran on was in a VM exit
 *   preempted  of its running time (guests), the vCPU's host thread was preempted by the host
 * vmm and preempted are known only for a guest whose host was traced (below_known);
 * otherwise they are unknown, never zero. Intervals still open at the end are closed there.
 * A nested guest's (L2's) vmm and preempted are at its host (L1: L1's hypervisor, L1's
 * scheduler) or at the layer below it (L0: the L1 vCPU in L0's exit or off its physical
 * CPU, the state machine's vcpu_state layer); vmm_below and preempted_below are the part at
 * the layer below, below_layer that machine (-1: not a nested guest).
 *
 * A consumer of the state machine's observations (vmscope/observe.h): the raw events for the
 * namespaces and the machines' own scheduling, vcpu_state and guest_switch for the layers
 * below. Threads are decided at the end (a thread may run before its statedump record).
 * Memory: one entry per thread and per namespace the records show. */
#ifndef VMSCOPE_CONTAINERS_H
#define VMSCOPE_CONTAINERS_H

#include <stdbool.h>
#include <stdint.h>

#include "vmscope/model.h"
#include "vmscope/observe.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vms_container_thread {
	int32_t tid;
	char comm[24];                 /* "" when no record named it */
	uint64_t running, runqueue, vmm, preempted; /* reference ns */
	uint64_t vmm_below, preempted_below;        /* of vmm and preempted: at below_layer */
};

struct vms_container {
	uint32_t machine;
	uint64_t inum;                 /* the PID namespace's inode (/proc/PID/ns/pid) */
	uint32_t level;                /* ns_level: 1 = a child of the root namespace */
	uint64_t parent;               /* the namespace a level above, 0 when not recorded */
	bool below_known;              /* vmm and preempted are known (a guest with its host) */
	int32_t below_layer;           /* a nested guest: its host's host (L0), else -1 */
	uint32_t nr_threads;           /* its own threads (not those of nested containers) */
	const struct vms_container_thread *threads; /* by tid */
	uint64_t running, runqueue, vmm, preempted; /* its threads', summed */
	uint64_t vmm_below, preempted_below;
};

struct vms_containers;
/* A consumer; fills *o (it has reset: the session calls it with the model before a pass). */
struct vms_containers *vms_containers_new(struct vms_observer *o);
void vms_containers_free(struct vms_containers *c);
/* Follow machine `machine` (a source index): only machines whose traces can record PID
 * namespaces are worth the cost (a sched_switch costs three lookups); the others are left
 * out at once. Call before the run. Returns 0, or -1 when out of memory. */
int vms_containers_watch(struct vms_containers *c, uint32_t machine);
/* After the run: ordered by machine, then level, then inode. */
uint32_t vms_containers_count(const struct vms_containers *c);
const struct vms_container *vms_containers_get(const struct vms_containers *c, uint32_t i);

#ifdef __cplusplus
}
#endif
#endif
