/* Opening a trace: the format is decided by content (each reader says "not mine" by
 * returning NULL with no error set), never by the file name. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vmscope/simpletrace.h"
#include "vmscope/source.h"

typedef struct vms_source *(*opener_fn)(const char *path, struct vms_error *err);

/* QEMU simpletrace without its trace-events file: event names from the file's mapping
 * records, arguments unnamed (`vmscope dump --events FILE` names them). */
static struct vms_source *simpletrace_open(const char *path, struct vms_error *err)
{
	return vms_simpletrace_open(path, NULL, err);
}

static const opener_fn openers[] = {
	vms_tracedat_open,
	vms_ctf_open,          /* a directory written by libvmstrace */
	simpletrace_open,
	vms_tcxml_open,
};

struct vms_source *vms_source_open(const char *path, struct vms_error *err)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		/* naming a trace that is not there is bad input (exit 2); other failures are I/O */
		int e = errno;
		return vms_error_set(err, e == ENOENT || e == ENOTDIR ? VMS_ERR_USAGE : VMS_ERR_IO,
				     "%s: cannot open: %s", path, strerror(e)), NULL;
	}
	for (size_t i = 0; i < sizeof openers / sizeof openers[0]; i++) {
		struct vms_source *s = openers[i](path, err);
		if (s)
			return s;
		if (err->status != 0)
			return NULL;
	}
	vms_error_set(err, VMS_ERR_FORMAT, "%s: not a trace format vmscope knows, at byte offset 0",
		      path);
	return NULL;
}

void vms_source_close(struct vms_source *src)
{
	if (src && src->ops && src->ops->close)
		src->ops->close(src);
}

void vms_trace_meta_free(struct vms_trace_meta *m)
{
	if (m->timeshift) {
		for (uint32_t c = 0; c < m->timeshift->nr_cpus; c++) {
			struct vms_timeshift_cpu *tc = &m->timeshift->cpu[c];
			free(tc->time);
			free(tc->offset);
			free(tc->scaling);
			free(tc->frac);
		}
		free(m->timeshift->cpu);
		free(m->timeshift);
	}
	for (uint32_t g = 0; g < m->nr_guests; g++) {
		free(m->guests[g].name);
		free(m->guests[g].vcpu);
		free(m->guests[g].host_tid);
	}
	free(m->guests);
	for (uint32_t t = 0; t < m->nr_types; t++)
		free(m->type_names[t]);
	free(m->type_names);
	free(m->type_kinds);
	for (uint32_t c = 0; c < m->nr_comms; c++)
		free(m->comm_name[c]);
	free(m->comm_tid);
	free(m->comm_name);
	memset(m, 0, sizeof *m);
}
