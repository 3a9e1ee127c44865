/* vmscope internal: the export in two stages, and the records between them.
 *
 * Stage 1 (export_front.c, the thread that reads the traces) subscribes to the state
 * machine's observations and turns each into a record of plain values: times, small ids,
 * numbers, and names as copied bytes, never a pointer (the observations' strings live during
 * the call only).
 *
 * Stage 2 (export.c, the back) turns records into tracks, slices, names and bytes, and
 * makes the guest threads' overlays (vmscope/overlays.h) from the same records, as the
 * analysis would have from the observations: the thread that reads the traces does not. It
 * runs in a thread of its own fed through a bounded queue (core/spsc.h), or, unthreaded
 * (VMS_EXPORT_THREADS=0, or no thread could be made), called by stage 1 record by record:
 * the same records in the same order, so the same bytes.
 *
 * Both stages read the model of the pass (machines, threads' names and pids): a session
 * analyses with a model that no event changes (what the events say goes to another model,
 * or came from a pass before), and stage 1 waits for stage 2 at the pass's finish and at
 * the next pass's reset, before the session changes or frees that model. */
#ifndef VMS_OUTPUT_EXPORT_REC_H
#define VMS_OUTPUT_EXPORT_REC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "vmscope/export.h"
#include "vmscope/model.h"

enum xr_kind {
	XR_START = 1, XR_FINISH, XR_STATE, XR_SWITCH, XR_EXIT_BEGIN, XR_EXIT_END, XR_OCCUPANT,
	XR_INSTEAD,
};

#define XR_COMM 24               /* a comm, cut to 23 bytes, NUL-padded */

/* a thread as the model knew it at the time: pid (<= 0: not known), comm ("": not known) */
struct xr_thread {
	int32_t pid;
	char comm[XR_COMM];
};

/* Every record begins with its kind; sizes are multiples of 8 (records are laid end to end
 * in the queue's blocks). They cross from one core to the other: no padding, nothing that
 * stage 2 does not read. */
struct xr_time {                 /* XR_START: the first time; XR_FINISH: the end */
	uint32_t kind;
	uint64_t t;
};

struct xr_state {                /* a vCPU's state changed at t (what the overlays read too) */
	uint32_t kind, machine, vcpu;
	uint8_t state, isa;          /* isa: VMM's, else 0 */
	int16_t layer;               /* the machine of its cause (observe.h), -1 none (or past
	                                INT16_MAX machines: not named) */
	int32_t exit_reason;         /* VMM: the pending exit's reason, else -1 */
	int32_t host_tid;            /* the vCPU's host thread, -1 unknown */
	uint64_t t;
};

struct xr_switch {               /* the guest thread current on a vCPU changed */
	uint32_t kind, machine, vcpu;
	int32_t next_tid;
	uint64_t t;
	char next_comm[XR_COMM];     /* as the event said it ("" unknown) */
	struct xr_thread next;       /* the model's */
};

struct xr_exit {                 /* XR_EXIT_BEGIN */
	uint32_t kind, machine, vcpu, isa, reason, host_cpu;
	uint64_t t, rip, info1, info2;
};

struct xr_exit_end {
	uint32_t kind, machine, vcpu, how;
	uint64_t t, begin;
};

struct xr_occupant {             /* vms_obs_cpu_occupant, its comm copied; not its vidx,
	                                    which the fused view does not read (56 bytes, not 64:
	                                    the most numerous record with the vCPU state's) */
	uint32_t kind, host;
	uint64_t t;
	uint32_t cpu;
	int32_t guest, vcpu, tid;
	char comm[XR_COMM];
};

struct xr_instead {              /* vms_obs_vcpu_instead */
	uint32_t kind, machine, vcpu, host;
	int32_t tid;
	bool unattributed;
	uint64_t t;
	char comm[XR_COMM];
	struct xr_thread thr;        /* the model's (host, tid) */
};

_Static_assert(sizeof(struct xr_occupant) == 56, "an occupant's record has no padding");
_Static_assert(sizeof(struct xr_state) == 32, "a state's record has no padding");

/* the largest record (stage 1's scratch when unthreaded) */
#define XR_MAX sizeof(struct xr_instead)
_Static_assert(sizeof(struct xr_instead) >= sizeof(struct xr_switch) &&
	       sizeof(struct xr_instead) >= sizeof(struct xr_exit) &&
	       sizeof(struct xr_instead) >= sizeof(struct xr_occupant), "XR_MAX is the largest");

/* What the model knows of (machine, tid): r->pid, r->comm ("" and 0 when nothing) */
static inline void xr_put_thread(const struct vms_model *m, struct xr_thread *r,
				 uint32_t machine, int32_t tid)
{
	const struct vms_thread_info *ti = m ? vms_model_thread(m, machine, tid) : NULL;
	_Static_assert(sizeof ti->comm == XR_COMM, "a model's comm is a record's");
	if (ti) {   /* (a NUL-terminated comm: what follows its NUL is never read) */
		r->pid = ti->pid;
		memcpy(r->comm, ti->comm, XR_COMM);
	} else {
		r->pid = 0;
		r->comm[0] = '\0';
	}
}

/* ---- stage 2 (export.c) ---- */
struct xback;

/* An export into f (not closed) of the machines of model (NULL: made at the first reset). */
struct xback *vms_xback_new(FILE *f, const struct vms_export_opts *opts,
			    const struct vms_model *model);
/* f can be emptied and written again (the session's checked single pass) */
bool vms_xback_rewritable(const struct xback *b);
/* another pass, with this model: what was written is thrown away */
void vms_xback_reset(struct xback *b, const struct vms_model *model);
/* play one record; returns its size */
size_t vms_xback_play(struct xback *b, const void *rec);
/* ends the file if no XR_FINISH came (at t_last); 0, or -1 when writing or memory failed */
int vms_xback_finish(struct xback *b, uint64_t t_last);
void vms_xback_free(struct xback *b);

#endif
