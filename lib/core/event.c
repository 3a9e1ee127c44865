#include "vmscope/event.h"

static const char *const kind_names[VMS_K_COUNT] = {
	[VMS_K_OTHER] = "other",
	[VMS_K_SCHED_SWITCH] = "sched_switch",
	[VMS_K_SCHED_WAKEUP] = "sched_wakeup",
	[VMS_K_KVM_ENTRY] = "kvm_entry",
	[VMS_K_KVM_EXIT] = "kvm_exit",
	[VMS_K_VMSYNC_GH_GUEST] = "vmsync_gh_guest",
	[VMS_K_VMSYNC_GH_HOST] = "vmsync_gh_host",
	[VMS_K_VMSYNC_HG_HOST] = "vmsync_hg_host",
	[VMS_K_VMSYNC_HG_GUEST] = "vmsync_hg_guest",
	[VMS_K_NET_SEND] = "net_send",
	[VMS_K_NET_RECV] = "net_recv",
	[VMS_K_PROCESS_FORK] = "process_fork",
	[VMS_K_PROCESS_EXIT] = "process_exit",
	[VMS_K_THREAD_NAME] = "thread_name",
	[VMS_K_XEN_RUNSTATE] = "xen_runstate",
	[VMS_K_XEN_VMEXIT] = "xen_vmexit",
	[VMS_K_XEN_VMENTRY] = "xen_vmentry",
	[VMS_K_TRACEPOINT] = "tracepoint",
	[VMS_K_KVM_VCPU_WAKEUP] = "kvm_vcpu_wakeup",
	[VMS_K_PROCESS_EXEC] = "process_exec",
	[VMS_K_KVM_NESTED_VMENTER] = "kvm_nested_vmenter",
	[VMS_K_KVM_NESTED_VMEXIT] = "kvm_nested_vmexit",
	[VMS_K_KVM_NESTED_INJECT] = "kvm_nested_inject",
};

const char *vms_kind_name(enum vms_kind kind)
{
	if ((unsigned)kind >= VMS_K_COUNT)
		return "invalid";
	return kind_names[kind];
}
