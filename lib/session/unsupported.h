/* Naming a trace vmscope cannot read yet, once every reader has said "not mine". */
#ifndef VMS_SESSION_UNSUPPORTED_H
#define VMS_SESSION_UNSUPPORTED_H

#include <stddef.h>

/* What the file or directory at path looks like ("LTTng CTF trace (not supported yet)",
 * "is a directory, not a trace"), or NULL when it looks like nothing known. */
const char *vms_unsupported_kind(const char *path);

/* The formats the readers take, for the message that follows. */
#define VMS_SUPPORTED_FORMATS                                                              \
	"vmscope reads trace-cmd trace.dat (v6, v7), CTF 1.8 (LTTng kernel and UST, "   \
	"libvmstrace), QEMU simpletrace v4, Trace Compass XML stub traces and Xen's "    \
	"xentrace files"

#endif
