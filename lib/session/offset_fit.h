/* vmscope internal: the offset search of --clock-model auto (offset_fit.c). */
#ifndef VMS_SESSION_OFFSET_FIT_H
#define VMS_SESSION_OFFSET_FIT_H

#include <stdint.h>

#include "vmscope/error.h"
#include "vmscope/model.h"
#include "vmscope/source.h"

#define VMS_OFFSET_FIT_MAX_WIDTH (1u << 20) /* ns of feasible offsets searched (8 MiB) */
#define VMS_OFFSET_FIT_MAX_KEPT (1u << 20)  /* windows kept + guest events waiting */

/* For every guest whose clock is an offset-only fit to its host (vms_sync_info.offset_only),
 * move its offset within the feasible interval to where the most of its events fall inside
 * guest mode, reading its trace and its host's once (each pass counted in *passes); the
 * sources are rewound. */
int vms_offset_fit(struct vms_source *const *src, uint32_t nr_src, struct vms_model *m,
		   uint32_t *passes, struct vms_error *err);

#endif
