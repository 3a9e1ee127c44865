/* vmscope internal: a snapshot of the vCPU state machine (vcpu_state_snap.c), the checkpoint
 * a window query would restore instead of replaying the trace from its start. The parts
 * (what vcpu_state.c lends the snapshot) are byte ranges of its structs, so that every field,
 * present or future, is in the snapshot; vcpu_state.c also checks restored bytes
 * (an_sm_check), since they come from a file. */
#ifndef VMS_VCPU_STATE_SNAP_H
#define VMS_VCPU_STATE_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/keymap.h"
#include "vmscope/error.h"

struct an_sm;

struct an_sm_parts {
	void *vcpus;                 /* nr_vcpus x vcpu_size bytes, no pointers */
	uint32_t nr_vcpus;
	size_t vcpu_size;
	uint32_t nr_machines;
	size_t machine_tail_off;     /* a machine's bytes from here to machine_size: no pointers
	                                (its CPU array and count come before) */
	size_t machine_size, cpu_size;
	bool *occ, *occ_end_pending;
	uint64_t *occ_unfollowed;
	struct vms_keymap *occ_where;
};
/* vcpu_state.c */
struct an_sm_parts an_sm_parts(struct an_sm *sm);
void *an_sm_machine(struct an_sm *sm, uint32_t m, void **cpus, uint32_t *nr_cpus);
int an_sm_set_cpus(struct an_sm *sm, uint32_t m, uint32_t nr);   /* zeroed; -1 no memory */
bool an_sm_check(const struct an_sm *sm);

/* vcpu_state_snap.c: write the state of sm (0, or -1 when the write fails); restore it into
 * sm, new from the same layout (0, or <0 with err set: a snapshot of another layout or build,
 * cut, or whose values no run can make). */
int an_sm_snapshot(struct an_sm *sm, FILE *f);
int an_sm_restore(struct an_sm *sm, const void *buf, size_t len, struct vms_error *err);

#endif
