/* Display names of the analysis enums. */
#include "vmscope/analysis.h"

const char *vms_vcpu_state_name(enum vms_vcpu_state s)
{
	switch (s) {
	case VMS_STATE_UNKNOWN: return "unknown";
	case VMS_STATE_IDLE: return "idle";
	case VMS_STATE_RUNNING: return "running";
	case VMS_STATE_VMM: return "vmm";
	case VMS_STATE_PREEMPTED: return "preempted";
	case VMS_STATE_HALTED: return "halted";
	case VMS_STATE_COUNT: break;
	}
	return "invalid";
}

bool vms_vcpu_state_unseen(bool traced, bool host_visible, bool preempt_visible,
			   enum vms_vcpu_state st)
{
	return (!host_visible && (st == VMS_STATE_VMM || st == VMS_STATE_PREEMPTED ||
				  st == VMS_STATE_HALTED)) ||
	       (st == VMS_STATE_PREEMPTED && !preempt_visible) ||
	       (!traced && (st == VMS_STATE_IDLE || st == VMS_STATE_RUNNING));
}

const char *vms_steal_kind_name(enum vms_steal_kind k)
{
	return k == VMS_STEAL_UNATTRIBUTED ? "unattributed"
	       : k == VMS_STEAL_OTHERS ? "other threads" : "thread";
}

const char *vms_overlay_reason_name(enum vms_overlay_reason r)
{
	switch (r) {
	case VMS_OVERLAY_VMM: return "vmm";
	case VMS_OVERLAY_PREEMPTED: return "preempted";
	case VMS_OVERLAY_HALTED: return "halted";
	}
	return "invalid";
}
