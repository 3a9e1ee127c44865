/* Opening a trace: the format is decided by content (each reader says "not mine" by
 * returning NULL with no error set), never by the file name. This is the one place that
 * knows every reader; a new format is a new folder under lib/input and one line here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vmscope/simpletrace.h"
#include "vmscope/source.h"
#include "vmscope/xentrace.h"
#include "unsupported.h"

typedef struct vms_source *(*opener_fn)(const char *path, struct vms_error *err);

/* QEMU simpletrace without its trace-events file: event names from the file's mapping
 * records, arguments unnamed (`vmscope dump --events FILE` names them). */
static struct vms_source *simpletrace_open(const char *path, struct vms_error *err)
{
	return vms_simpletrace_open(path, NULL, err);
}

static const opener_fn openers[] = {
	vms_tracedat_open,
	vms_ctf_open,          /* a CTF directory (LTTng, libvmstrace) or an LTTng session */
	simpletrace_open,
	vms_tcxml_open,
	vms_xentrace_open,     /* Xen's t_rec stream */
};

struct vms_source *vms_source_open(const char *path, struct vms_error *err)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		/* naming a trace that is not there is bad input (exit 2); other failures are I/O */
		return vms_error_open(err, path, errno, 0), NULL;
	}
	for (size_t i = 0; i < sizeof openers / sizeof openers[0]; i++) {
		struct vms_source *s = openers[i](path, err);
		if (s)
			return s;
		if (err->status != 0)
			return NULL;
	}
	const char *kind = vms_unsupported_kind(path);
	if (kind)
		vms_error_set(err, VMS_ERR_FORMAT, "%s: %s; " VMS_SUPPORTED_FORMATS, path, kind);
	else
		vms_error_set(err, VMS_ERR_FORMAT,
			      "%s: not a trace format vmscope knows, at byte offset 0; "
			      VMS_SUPPORTED_FORMATS, path);
	return NULL;
}

