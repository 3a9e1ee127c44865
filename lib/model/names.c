/* Display names of the model's enums (the CLI prints them; tests compare them). */
#include "vmscope/model.h"

const char *vms_role_name(unsigned role)
{
	switch (role & (VMS_ROLE_HOST | VMS_ROLE_GUEST)) {
	case VMS_ROLE_HOST: return "host";
	case VMS_ROLE_GUEST: return "guest";
	case VMS_ROLE_HOST | VMS_ROLE_GUEST: return "host+guest";
	default: return "none";
	}
}

const char *vms_link_how_name(enum vms_link_how how)
{
	switch (how) {
	case VMS_LINK_NONE: return "none";
	case VMS_LINK_GUEST_OPTION: return "guest-option";
	case VMS_LINK_VMSYNC: return "vmsync";
	case VMS_LINK_KVM_ENTRY: return "kvm_entry";
	case VMS_LINK_USER: return "user";
	case VMS_LINK_TIMESHIFT: return "timeshift";
	case VMS_LINK_XENTRACE: return "xentrace";
	}
	return "invalid";
}

const char *vms_pid_how_name(enum vms_pid_how how)
{
	switch (how) {
	case VMS_PID_NONE: return "none";
	case VMS_PID_EXEC: return "exec";
	case VMS_PID_STATEDUMP: return "statedump";
	case VMS_PID_FORK: return "fork";
	case VMS_PID_PARENT: return "parent";
	}
	return "invalid";
}

const char *vms_sync_method_name(enum vms_sync_method m)
{
	switch (m) {
	case VMS_SYNC_REFERENCE: return "reference";
	case VMS_SYNC_NONE: return "none";
	case VMS_SYNC_TIMESHIFT: return "timeshift";
	case VMS_SYNC_HULL: return "convex-hull";
	case VMS_SYNC_USER: return "user";
	}
	return "invalid";
}

const char *vms_sync_quality_name(enum vms_sync_quality q)
{
	switch (q) {
	case VMS_SYNC_Q_ABSENT: return "absent";
	case VMS_SYNC_Q_INCOMPLETE: return "incomplete";
	case VMS_SYNC_Q_APPROXIMATE: return "approximate";
	case VMS_SYNC_Q_ACCURATE: return "accurate";
	case VMS_SYNC_Q_FAIL: return "fail";
	case VMS_SYNC_Q_EXACT: return "exact";
	}
	return "invalid";
}
