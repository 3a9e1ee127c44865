/* vmscope: the common event.
 *
 * Every reader turns its format's records into this one small, fixed-size value. Readers know
 * nothing about virtualization; they only decide, once per event type when the trace is
 * opened, which kind a type maps to and where its fields are. Everything downstream (clock
 * sync, the model, the analyses) sees only vms_event. No allocation per event: strings point
 * into memory owned by the stream and stay valid until that stream is advanced. */
#ifndef VMSCOPE_EVENT_H
#define VMSCOPE_EVENT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kinds the analyses understand. The meaning of f[] and s[] per kind is fixed here. */
enum vms_kind {
	VMS_K_OTHER = 0,        /* any event no analysis needs; counted, and kept for dump */
	VMS_K_SCHED_SWITCH,     /* f0 prev_tid, f1 prev_state (kernel bits: 0 = R), f2 next_tid,
	                           f3 prev_prio, f4 next_prio; s0 prev_comm, s1 next_comm */
	VMS_K_SCHED_WAKEUP,     /* f0 tid, f1 target_cpu, f2 prio; s0 comm (sched_wakeup and
	                           sched_wakeup_new) */
	VMS_K_KVM_ENTRY,        /* f0 vcpu_id, f1 rip, f2 guest_mode + 1 where the format records
	                           it (kernels since 6.8: 2 the vCPU enters its own guest, L2;
	                           1 its own code), 0 where it does not */
	VMS_K_KVM_EXIT,         /* f0 exit_reason, f1 isa (1 VMX, 2 SVM), f2 guest_rip, f3 info1,
	                           f4 info2 */
	VMS_K_VMSYNC_GH_GUEST,  /* f0 vm_uid, f1 cnt: guest -> host message, sent by the guest */
	VMS_K_VMSYNC_GH_HOST,   /* f0 vm_uid, f1 cnt: guest -> host message, received by host */
	VMS_K_VMSYNC_HG_HOST,   /* f0 vm_uid, f1 cnt: host -> guest message, sent by the host */
	VMS_K_VMSYNC_HG_GUEST,  /* f0 vm_uid, f1 cnt: host -> guest message, received by guest */
	VMS_K_NET_SEND,         /* f0 seq, f1 ack_seq, f2 flags (TCP packet leaving) */
	VMS_K_NET_RECV,         /* f0 seq, f1 ack_seq, f2 flags (TCP packet arriving) */
	VMS_K_PROCESS_FORK,     /* f0 parent_tid, f1 child_tid, f2 child tgid if known else 0;
	                           f3 the child's PID namespace inode (LTTng child_ns_inum: its
	                           deepest level) else 0, f4 its PID namespace levels (the
	                           vtids, so its ns_level is f4 - 1) else 0; s0 child comm */
	VMS_K_PROCESS_EXIT,     /* f0 tid */
	VMS_K_THREAD_NAME,      /* f0 tid, f1 tgid if known else 0; s0 comm: a name learnt for a
	                           thread (task_rename, statedump, process names); f2 a PID
	                           namespace of the thread (statedump ns_inum) else 0, f3 its
	                           ns_level (0 = the root namespace): one record per level */
	VMS_K_XEN_RUNSTATE,     /* f0 domain, f1 vcpu, f2 old state, f3 new state */
	VMS_K_XEN_VMEXIT,       /* f0 exit reason, f1 guest rip; tid = domain << 16 | vcpu */
	VMS_K_XEN_VMENTRY,      /* tid = domain << 16 | vcpu */
	VMS_K_TRACEPOINT,       /* a user-space trace point (tracer library, simpletrace) */
	VMS_K_KVM_VCPU_WAKEUP,  /* f0 ns (time halted or polled), f1 waited (1: the thread
	                           blocked; 0: halt-polling found work), f2 valid: emitted by the
	                           vCPU thread when a HLT exit's halt ends */
	VMS_K_PROCESS_EXEC,     /* f0 tid (after exec the thread leads its process: tid = pid);
	                           s0 the file executed (LTTng: its base name) */
	/* nested KVM, recorded by L0 on the thread of an L1 vCPU (docs/DESIGN.md, nested) */
	VMS_K_KVM_NESTED_VMENTER, /* L1 entered its guest (kvm_nested_vmenter, AMD's older
	                           kvm_nested_vmrun): the next kvm_entry runs L2 code */
	VMS_K_KVM_NESTED_VMEXIT,  /* an exit of L2 code, to L0 (kvm_nested_vmexit): f0
	                           exit_reason, f1 isa */
	VMS_K_KVM_NESTED_INJECT,  /* L0 reflects L2's exit into L1 (kvm_nested_vmexit_inject,
	                           kvm_nested_intr_vmexit): L1's hypervisor handles it from here;
	                           f0 exit_code (0 for intr_vmexit), f1 isa */
	VMS_K_COUNT
};

/* vms_event.flags */
enum vms_event_flag {
	VMS_EVF_LOST_BEFORE = 1u << 0, /* the source lost events just before this one (on its CPU) */
	VMS_EVF_TIME_BACKWARDS = 1u << 1, /* its raw time is below its predecessor's in the stream */
};

struct vms_event {
	uint64_t ts;          /* raw time in the machine's own clock (ticks or ns: see vms_clock) */
	uint64_t f[5];        /* kind-specific fields, see enum vms_kind */
	const char *s[2];     /* kind-specific strings (NUL-terminated) or NULL */
	int32_t tid;          /* thread that emitted the event, -1 when unknown */
	uint32_t cpu;         /* CPU of the machine that recorded it */
	uint16_t kind;        /* enum vms_kind */
	uint16_t flags;       /* enum vms_event_flag */
	uint32_t type;        /* the source's own event type index (see vms_trace_meta.type_names) */
	uint32_t machine;     /* index of the machine (source) in the session */
	uint32_t stream;      /* index of the stream within its source */
};

const char *vms_kind_name(enum vms_kind kind);

#ifdef __cplusplus
}
#endif
#endif
