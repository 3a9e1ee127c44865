/* being written */
typedef int vms_core_placeholder_merge;
