/* QEMU trace-events files: `[props] name(type a, type b) "format"`, one event per line,
 * `#` comments. Only what a simpletrace reader needs is kept: the name and, per argument,
 * its name and whether it is a string (recorded as u32 length + bytes) or not (one u64). */
#ifndef VMS_ST_TRACE_EVENTS_H
#define VMS_ST_TRACE_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "vmscope/error.h"

#define VMS_ST_MAX_ARGS 10   /* tracetool refuses more */

struct vms_st_desc {
	char *name;
	uint32_t nargs;
	uint32_t str_mask;                  /* bit i: argument i is a string */
	char *arg_name[VMS_ST_MAX_ARGS];
	uint32_t arg_name_len[VMS_ST_MAX_ARGS];
};

struct vms_st_events {
	struct vms_st_desc *desc;           /* sorted by name */
	size_t n;
};

/* Parse an events file. Returns 0 or a negative vms_status with err set
 * ("FILE: WHAT at line N"). */
int vms_st_events_load(struct vms_st_events *ev, const char *path, struct vms_error *err);
/* Parse one line (exposed for the tests): 1 with *d filled, 0 for a blank or comment line,
 * VMS_ERR_NOMEM when out of memory, else negative with *why set. */
int vms_st_events_parse_line(const char *line, struct vms_st_desc *d, const char **why);
const struct vms_st_desc *vms_st_events_find(const struct vms_st_events *ev, const char *name,
					     size_t len);
void vms_st_desc_free(struct vms_st_desc *d);
void vms_st_events_free(struct vms_st_events *ev);

#endif
