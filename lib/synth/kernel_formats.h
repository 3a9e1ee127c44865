/* Kernel event formats and the binary layout of the events the generator writes (the layout
 * must agree with the "offset:/size:" of each format; the static asserts check it). */
#ifndef VMS_SYNTH_KERNEL_FORMATS_H
#define VMS_SYNTH_KERNEL_FORMATS_H

#include <stddef.h>
#include <stdint.h>

extern const char vms_synth_fmt_sched_switch[];
extern const char vms_synth_fmt_sched_wakeup[];
extern const char vms_synth_fmt_kvm_entry[];
extern const char vms_synth_fmt_kvm_exit[];
extern const char vms_synth_fmt_kvm_vcpu_wakeup[];
extern const char vms_synth_fmt_sched_process_exec[];
extern const char vms_synth_fmt_sched_process_fork[];
extern const char vms_synth_header_page[];
extern const char vms_synth_header_event[];

struct vms_ev_common {
	uint16_t type;
	uint8_t flags;
	uint8_t preempt_count;
	int32_t pid;
};

struct vms_ev_sched_switch {
	struct vms_ev_common c;
	char prev_comm[16];
	int32_t prev_pid;
	int32_t prev_prio;
	int64_t prev_state;
	char next_comm[16];
	int32_t next_pid;
	int32_t next_prio;
};
_Static_assert(offsetof(struct vms_ev_sched_switch, prev_state) == 32, "sched_switch layout");
_Static_assert(offsetof(struct vms_ev_sched_switch, next_pid) == 56, "sched_switch layout");
_Static_assert(sizeof(struct vms_ev_sched_switch) == 64, "sched_switch size");

struct vms_ev_sched_wakeup {
	struct vms_ev_common c;
	char comm[16];
	int32_t pid;
	int32_t prio;
	int32_t target_cpu;
};
_Static_assert(offsetof(struct vms_ev_sched_wakeup, target_cpu) == 32, "sched_wakeup layout");
_Static_assert(sizeof(struct vms_ev_sched_wakeup) == 36, "sched_wakeup size");

struct vms_ev_kvm_entry {
	struct vms_ev_common c;
	uint32_t vcpu_id;
	uint32_t pad0;
	uint64_t rip;
	uint8_t immediate_exit;
	uint8_t pad1[3];
	uint32_t intr_info;
	uint32_t error_code;
	uint32_t pad2;
};
_Static_assert(offsetof(struct vms_ev_kvm_entry, rip) == 16, "kvm_entry layout");
_Static_assert(offsetof(struct vms_ev_kvm_entry, intr_info) == 28, "kvm_entry layout");
_Static_assert(offsetof(struct vms_ev_kvm_entry, error_code) == 32, "kvm_entry layout");
_Static_assert(sizeof(struct vms_ev_kvm_entry) == 40, "kvm_entry size (the kernel's struct, padded)");

struct vms_ev_kvm_exit {
	struct vms_ev_common c;
	uint32_t exit_reason;
	uint32_t pad0;
	uint64_t guest_rip;
	uint32_t isa;
	uint32_t pad1;
	uint64_t info1;
	uint64_t info2;
	uint32_t intr_info;
	uint32_t error_code;
	uint32_t vcpu_id;
	uint32_t pad2;
	uint64_t requests;
};
_Static_assert(offsetof(struct vms_ev_kvm_exit, isa) == 24, "kvm_exit layout");
_Static_assert(offsetof(struct vms_ev_kvm_exit, info1) == 32, "kvm_exit layout");
_Static_assert(offsetof(struct vms_ev_kvm_exit, intr_info) == 48, "kvm_exit layout");
_Static_assert(offsetof(struct vms_ev_kvm_exit, vcpu_id) == 56, "kvm_exit layout");
_Static_assert(offsetof(struct vms_ev_kvm_exit, requests) == 64, "kvm_exit layout");
_Static_assert(sizeof(struct vms_ev_kvm_exit) == 72, "kvm_exit size");

struct vms_ev_kvm_vcpu_wakeup {
	struct vms_ev_common c;
	uint64_t ns;
	uint8_t waited, valid;
	uint8_t pad[6];
};
_Static_assert(offsetof(struct vms_ev_kvm_vcpu_wakeup, waited) == 16, "kvm_vcpu_wakeup layout");
_Static_assert(sizeof(struct vms_ev_kvm_vcpu_wakeup) == 24, "kvm_vcpu_wakeup size");

/* sched_process_exec: the fixed part; the file name follows it (__data_loc: offset in the
 * low 16 bits, length with its NUL in the high 16). */
struct vms_ev_sched_process_exec {
	struct vms_ev_common c;
	uint32_t filename_loc;
	int32_t pid;
	int32_t old_pid;
};
_Static_assert(sizeof(struct vms_ev_sched_process_exec) == 20, "sched_process_exec size");

struct vms_ev_sched_process_fork {
	struct vms_ev_common c;
	char parent_comm[16];
	int32_t parent_pid;
	char child_comm[16];
	int32_t child_pid;
};
_Static_assert(offsetof(struct vms_ev_sched_process_fork, child_pid) == 44, "fork layout");
_Static_assert(sizeof(struct vms_ev_sched_process_fork) == 48, "sched_process_fork size");

/* prev_state values (the kernel's TASK_REPORT encoding): a task preempted while runnable
 * reports TASK_REPORT_MAX (0x100), printed "R+". */
#define VMS_TASK_RUNNING 0x0
#define VMS_TASK_INTERRUPTIBLE 0x1
#define VMS_TASK_PREEMPTED 0x100

#endif
