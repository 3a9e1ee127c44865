/* replaced by the stage's real files */
typedef int vms_placeholder_model;
