/* What every source shares: closing, and freeing the metadata its reader filled. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmscope/source.h"

void vms_source_close(struct vms_source *src)
{
	if (src && src->ops && src->ops->close)
		src->ops->close(src);
}

const struct vms_ksyms *vms_source_ksyms(struct vms_source *src)
{
	if (!src)
		return NULL;
	if (!src->meta.ksyms_loaded) {
		src->meta.ksyms_loaded = true;
		if (!src->meta.ksyms && src->ops && src->ops->load_ksyms) {
			struct vms_error saved = src->err;
			src->meta.ksyms = src->ops->load_ksyms(src);
			if (!src->meta.ksyms && src->err.status != 0) {
				/* the events are still good: say it, read on without symbols */
				fprintf(stderr, "vmscope: warning: %s (guest RIPs are shown as "
					"addresses)\n", src->err.msg);
				src->err = saved;
			}
		}
	}
	return src->meta.ksyms;
}

int vms_source_tell(struct vms_source *src, uint32_t stream, struct vms_stream_pos *pos)
{
	if (!src->ops->tell)
		return vms_error_set(&src->err, VMS_ERR_USAGE, "%s: %s traces cannot seek",
				     src->path, src->ops->name);
	return src->ops->tell(src, stream, pos);
}

int vms_source_seek(struct vms_source *src, uint32_t stream, const struct vms_stream_pos *pos)
{
	if (!src->ops->seek)
		return vms_error_set(&src->err, VMS_ERR_USAGE, "%s: %s traces cannot seek",
				     src->path, src->ops->name);
	return src->ops->seek(src, stream, pos);
}

/* A reader that ran out of memory half-way may have set a count before its array was
 * allocated: a NULL array is taken as empty, whatever its count says. */
void vms_trace_meta_free(struct vms_trace_meta *m)
{
	if (m->timeshift) {
		for (uint32_t c = 0; m->timeshift->cpu && c < m->timeshift->nr_cpus; c++) {
			struct vms_timeshift_cpu *tc = &m->timeshift->cpu[c];
			free(tc->time);
			free(tc->offset);
			free(tc->scaling);
			free(tc->frac);
		}
		free(m->timeshift->cpu);
		free(m->timeshift);
	}
	for (uint32_t g = 0; m->guests && g < m->nr_guests; g++) {
		free(m->guests[g].name);
		free(m->guests[g].vcpu);
		free(m->guests[g].host_tid);
	}
	free(m->guests);
	for (uint32_t t = 0; m->type_names && t < m->nr_types; t++)
		free(m->type_names[t]);
	free(m->type_names);
	free(m->type_kinds);
	for (uint32_t c = 0; m->comm_name && c < m->nr_comms; c++)
		free(m->comm_name[c]);
	free(m->comm_tid);
	free(m->comm_name);
	vms_ksyms_free(m->ksyms);
	memset(m, 0, sizeof *m);
}
