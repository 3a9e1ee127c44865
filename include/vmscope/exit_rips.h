/* vmscope: VM exits by guest code location (exits --by rip). Per guest, per (isa, reason,
 * guest RIP of the kvm_exit): count, unfinished, total time. A consumer of the vCPU state
 * machine's exit observations. Memory: at most VMS_EXIT_RIPS_MAX rows; exits at further
 * addresses are summed in one row per guest and reason with rip = UINT64_MAX (and the table
 * says it was truncated). */
#ifndef VMSCOPE_EXIT_RIPS_H
#define VMSCOPE_EXIT_RIPS_H

#include <stdbool.h>
#include <stdint.h>

#include "vmscope/observe.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VMS_EXIT_RIPS_MAX 65536

struct vms_exit_rip {
	uint32_t machine, isa, reason;
	uint64_t rip;                 /* UINT64_MAX: the other addresses (table full) */
	uint64_t count;               /* every kvm_exit there */
	uint64_t unfinished;          /* of them, with no known end */
	uint64_t total;               /* time of the finished ones (reference ns) */
};

struct vms_exit_rips;
struct vms_exit_rips *vms_exit_rips_new(struct vms_observer *o);
void vms_exit_rips_free(struct vms_exit_rips *r);
/* After the run: rows sorted by total time, then count, descending. */
uint32_t vms_exit_rips_count(const struct vms_exit_rips *r);
const struct vms_exit_rip *vms_exit_rips_row(const struct vms_exit_rips *r, uint32_t i);
bool vms_exit_rips_truncated(const struct vms_exit_rips *r);

#ifdef __cplusplus
}
#endif
#endif
