/* vmscope: Xen's xentrace files (the t_rec stream that `xentrace` writes and `xenalyze` reads).
 *
 * A xentrace file is one Xen host. Its reader (lib/input/xentrace) gives one stream per
 * physical CPU and turns each record into a common event whose kind is what the record means
 * to the analyses, so that the vCPU state machine needs nothing Xen-specific:
 *
 *   runstate change, vCPU leaves running    VMS_K_SCHED_SWITCH prev = the vCPU's "thread",
 *                                           prev_state 0 (runnable: preempted) or 1
 *                                           (blocked/offline: halted), next = the vCPU that
 *                                           the same CPU switches to next (-1 unknown)
 *   runstate change, vCPU enters running    VMS_K_SCHED_SWITCH prev = -1, next = the vCPU
 *   runstate change blocked/offline->runnable  VMS_K_SCHED_WAKEUP of the vCPU
 *   HVM VMEXIT (VMX or SVM, 32/64-bit)      VMS_K_KVM_EXIT by the vCPU current on the CPU
 *   HVM VMENTRY                             VMS_K_KVM_ENTRY by that vCPU
 *   anything else                           VMS_K_OTHER (counted, shown by dump)
 *
 * The "thread" of vCPU v of domain d is VMS_XEN_TID(d, v); the idle domain's vCPUs are the
 * host's idle (tid 0). Every event keeps the record's own facts for Xen-specific consumers
 * (the xenalyze-equal accounting in lib/model/xen_model.c): ev->type is one of enum
 * vms_xen_type, ev->ts the record's TSC (or the last TSC of its CPU), ev->cpu the physical
 * CPU, and
 *   RUNSTATE_CHANGE / CONTINUE  f3 = old << 4 | new (enum vms_xen_runstate), f4 = dom << 16 | vcpu
 *   VMEXIT                      f0 = exit reason, f1 = isa (1 VMX, 2 SVM), f2 = guest rip
 *   LOST_RECORDS                f0 = records lost, f1 = vcpu << 16 | dom (Xen writes u16 did,
 *                                 vid), f2 = first lost TSC, f3 = the marker's own TSC (where
 *                                 LOST_END will be: the loss is [f2, f3))
 * A lost-records marker is written when the buffer has room again, and says when the loss
 * began: it gives two events, LOST_RECORDS at the first lost TSC (where the CPU's story stops
 * being known; xenalyze handles it there too) and LOST_END at the marker's own TSC; the next
 * record after it has VMS_EVF_LOST_BEFORE.
 *   OTHER record classes        f0 = the raw event id, f1..f4 = its first extra words
 *
 * Times are CPU cycles (the clock "tsc", no TSC2NSEC): the CPU frequency is not in the file.
 * The session turns them into ns with the rate the user gives (--tsc-hz, or its alias
 * --cpu-hz, xenalyze's name) and tells the reader with vms_xentrace_set_cpu_hz, for the Xen
 * tables; without it times stay cycles (xenalyze would assume 2.4 GHz). */
#ifndef VMSCOPE_XENTRACE_H
#define VMSCOPE_XENTRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "vmscope/error.h"
#include "vmscope/source.h"

#ifdef __cplusplus
extern "C" {
#endif

/* xen/include/public/trace.h */
#define VMS_XEN_TRC_LOST_RECORDS      0x0001f001u
#define VMS_XEN_TRC_WRAP_BUFFER       0x0001f002u
#define VMS_XEN_TRC_CPU_CHANGE        0x0001f003u
#define VMS_XEN_TRC_RUNSTATE_CHANGE   0x00021001u /* | old << 8 | new << 4 */
#define VMS_XEN_TRC_RUNSTATE_CONTINUE 0x00021002u
#define VMS_XEN_TRC_SCHED_SWITCH      0x0002800au
#define VMS_XEN_TRC_VMENTRY           0x00081001u
#define VMS_XEN_TRC_VMX_EXIT          0x00081002u
#define VMS_XEN_TRC_SVM_EXIT          0x00081003u
#define VMS_XEN_TRC_64_FLAG           0x00000100u
#define VMS_XEN_IDLE_DOMAIN           32767u
#define VMS_XEN_DEFAULT_CPU_HZ        2400000000ull /* xenalyze's assumption */

/* The host "thread" that stands for vCPU v of domain d (never 0, which is the idle). */
#define VMS_XEN_TID(d, v) ((int32_t)((((uint32_t)(d) & 0x7fffu) << 16 | ((uint32_t)(v) & 0xffffu)) + 1u))
static inline uint32_t vms_xen_tid_dom(int32_t tid) { return ((uint32_t)tid - 1u) >> 16; }
static inline uint32_t vms_xen_tid_vcpu(int32_t tid) { return ((uint32_t)tid - 1u) & 0xffffu; }

enum vms_xen_runstate {
	VMS_XEN_RUNNING = 0, VMS_XEN_RUNNABLE = 1, VMS_XEN_BLOCKED = 2, VMS_XEN_OFFLINE = 3,
};
const char *vms_xen_runstate_name(unsigned state);

/* ev->type of a xentrace event (= index in meta.type_names) */
enum vms_xen_type {
	VMS_XEN_T_LOST_RECORDS = 0,
	VMS_XEN_T_WRAP_BUFFER,
	VMS_XEN_T_LOST_END,        /* the second event of a lost-records marker (see below) */
	VMS_XEN_T_RUNSTATE_CHANGE,
	VMS_XEN_T_RUNSTATE_CONTINUE,
	VMS_XEN_T_SCHED_SWITCH,
	VMS_XEN_T_VMENTRY,
	VMS_XEN_T_VMEXIT,
	/* any other record, by class */
	VMS_XEN_T_GEN, VMS_XEN_T_SCHED, VMS_XEN_T_DOM0OP, VMS_XEN_T_HVM, VMS_XEN_T_MEM,
	VMS_XEN_T_PV, VMS_XEN_T_SHADOW, VMS_XEN_T_HW, VMS_XEN_T_GUEST, VMS_XEN_T_UNKNOWN,
	VMS_XEN_T_COUNT
};

/* The record classes (trace.h TRC_GEN ... TRC_GUEST) */
enum { VMS_XEN_NR_CLASSES = 10 };
const char *vms_xen_class_name(uint32_t cls); /* "gen", "sched", ..., "unknown" */

/* What the reader learnt at open (one walk over every record, which also checks the file). */
struct vms_xen_domain {
	uint32_t id;
	uint32_t nr_vcpus;        /* vCPUs seen running (the new state of a runstate change to
	                             running, or a runstate continue): a vCPU only named in
	                             other records is not one */
	const uint32_t *vcpus;    /* their Xen numbers, ascending */
	bool hvm;                 /* VMEXIT/VMENTRY records were seen while one of its vCPUs ran */
};

struct vms_xen_info {
	uint64_t records;               /* every record but the CPU-change block headers */
	uint64_t blocks;                /* CPU-change blocks */
	uint64_t class_records[VMS_XEN_NR_CLASSES];
	uint64_t lost_markers;          /* TRC_LOST_RECORDS records */
	uint64_t lost_records;          /* the records they say were lost */
	uint64_t wraps;                 /* TRC_TRACE_WRAP_BUFFER records */
	uint64_t notsc_records;         /* records without a TSC of their own */
	uint32_t nr_pcpus;              /* physical CPUs with records (the streams) */
	const uint32_t *pcpu;           /* their numbers, ascending */
	uint32_t nr_domains;            /* ascending by id; the idle domain included */
	const struct vms_xen_domain *domains;
	uint64_t first_tsc;             /* the earliest of the CPUs' first TSCs, 0 none */
	uint32_t isa;                   /* 1 VMX, 2 SVM, 0 no HVM exits */
	uint64_t cpu_hz;                /* the frequency given by the user, 0 unknown */
	bool cpu_hz_given;
	bool truncated;                 /* the last block ends before its size says */
	uint64_t truncated_at;          /* byte offset of the first missing byte */
};

/* Open a xentrace file; NULL with err->status == 0 when it is not one. */
struct vms_source *vms_xentrace_open(const char *path, struct vms_error *err);
/* Is this source a xentrace file? */
bool vms_source_is_xentrace(const struct vms_source *src);
/* The reader's facts, NULL when src is no xentrace source. */
const struct vms_xen_info *vms_xentrace_info(const struct vms_source *src);
/* The CPU frequency the user gave (0: unknown), for the Xen tables' ns. */
void vms_xentrace_set_cpu_hz(struct vms_source *src, uint64_t hz);
/* Exact cycles -> ns at hz (128-bit; hz 0 is taken as xenalyze's 2.4 GHz). */
uint64_t vms_xen_cycles_to_ns(uint64_t cycles, uint64_t hz);

#ifdef __cplusplus
}
#endif
#endif
