/* Writing the four event types into a trace.dat writer, with the counts, first and last
 * timestamps the ground truth reports for that file. */
#ifndef VMS_SYNTH_EVENT_EMIT_H
#define VMS_SYNTH_EVENT_EMIT_H

#include <stdint.h>

#include "vmscope/synth.h"
#include "output/ctf_writer.h"
#include "output/tracedat_writer.h"

/* A thread as the trace shows it. comm is NUL-terminated and zero-padded to 16 bytes (build
 * tasks zero-initialized, then snprintf the name), so events copy it whole. */
struct vms_task {
	int32_t tid;
	int32_t prio;     /* kernel prio: 120 = nice 0 */
	char comm[16];
};

/* The LTTng event classes of `synth --format lttng` (ids in vms_emitter.cid). */
enum vms_ctf_event {
	VMS_CE_SWITCH, VMS_CE_WAKEUP, VMS_CE_ENTRY, VMS_CE_EXIT, VMS_CE_SD_START, VMS_CE_SD_PROC,
	VMS_CE_SD_END, VMS_CE_GH_GUEST, VMS_CE_GH_HOST, VMS_CE_HG_HOST, VMS_CE_HG_GUEST,
	VMS_CE_VCPU_WAKEUP, VMS_CE_EXEC, VMS_CE_FORK, VMS_CE_N
};

struct vms_emitter {
	struct vms_tdw *w;                   /* trace.dat, or: */
	struct vms_ctfw *cw;                 /* LTTng CTF, time in ns: */
	uint32_t cid[VMS_CE_N];
	uint32_t mult, shift;                /* host TSC -> ns */
	bool guest;                          /* raw times are a guest CPU's TSC: */
	uint64_t ratio;
	uint32_t frac;
	int64_t tsc_offset[VMS_SYNTH_MAX_VCPUS];
	uint64_t minus_ns;                   /* the machine's monotonic clock = host ns - this */
	uint16_t id[VMS_SYNTH_NEVENTS];      /* event ids in this file's formats */
	struct vms_synth_file_truth *ft;
	struct vms_error *err;
	int rc;                              /* first failure, latched */
};

void vms_emit_switch(struct vms_emitter *e, uint32_t cpu, uint64_t ts, const struct vms_task *prev,
		     int64_t prev_state, const struct vms_task *next);
/* `hardirq`: woken from a timer interrupt (common_flags show it). */
void vms_emit_wakeup(struct vms_emitter *e, uint32_t cpu, uint64_t ts, const struct vms_task *waker,
		     const struct vms_task *woken, uint32_t target_cpu, int hardirq);
void vms_emit_kvm_entry(struct vms_emitter *e, uint32_t cpu, uint64_t ts, const struct vms_task *t,
			uint32_t vcpu, uint64_t rip, uint32_t intr_info);
void vms_emit_kvm_vcpu_wakeup(struct vms_emitter *e, uint32_t cpu, uint64_t ts,
			      const struct vms_task *t, uint64_t ns, int waited);
void vms_emit_kvm_exit(struct vms_emitter *e, uint32_t cpu, uint64_t ts, const struct vms_task *t,
		       uint32_t vcpu, uint32_t reason, uint64_t rip, uint64_t info1, uint64_t info2,
		       uint32_t intr_info);

/* The VMM's start as a recording that began before it shows it: `t` exec'd `filename`
 * (its tid becomes its pid), and `parent` created thread `child` of process `pid`
 * (trace.dat's sched_process_fork does not say the pid; LTTng's child_pid does). */
void vms_emit_exec(struct vms_emitter *e, uint32_t cpu, uint64_t ts, const struct vms_task *t,
		   const char *filename);
void vms_emit_fork(struct vms_emitter *e, uint32_t cpu, uint64_t ts, const struct vms_task *parent,
		   const struct vms_task *child, int32_t pid);

/* LTTng-only events (not in the truth's counts): a statedump record of a thread, and the
 * vmsync messages (kind: VMS_CE_GH_GUEST .. VMS_CE_HG_GUEST). */
void vms_emit_statedump(struct vms_emitter *e, uint32_t cpu, uint64_t ts, const struct vms_task *t,
			int32_t pid);
void vms_emit_statedump_mark(struct vms_emitter *e, uint32_t cpu, uint64_t ts, bool end);
void vms_emit_vmsync(struct vms_emitter *e, uint32_t cpu, uint64_t ts, const struct vms_task *t,
		     enum vms_ctf_event kind, uint64_t vm_uid, uint64_t cnt);
/* Declare the LTTng event classes in e->cw. */
int vms_emit_ctf_classes(struct vms_emitter *e, struct vms_error *err);

#endif
