/* vmscope internal: a buffer read back from a file (a checkpoint, a snapshot), taken piece by
 * piece: every take checks the bytes left first, and the offset is kept for the error's
 * "at byte offset N". */
#ifndef VMS_BYTE_READER_H
#define VMS_BYTE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct vms_rd {
	const uint8_t *p;
	size_t left, off;
};

/* The next n bytes into dst (NULL: skipped); false, and nothing taken, when fewer are left. */
static inline bool vms_rd_take(struct vms_rd *r, void *dst, size_t n)
{
	if (n > r->left)
		return false;
	if (dst && n)
		memcpy(dst, r->p, n);
	r->p += n;
	r->left -= n;
	r->off += n;
	return true;
}

#endif
