/* vmscope: errors are values. The library never prints; it fills a vms_error and returns
 * a negative status, and the CLI prints the one line. Reader errors follow the shape
 * "FILE: WHAT at byte offset N" so a damaged trace says where it is damaged. */
#ifndef VMSCOPE_ERROR_H
#define VMSCOPE_ERROR_H

#include <stdarg.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vms_status {
	VMS_OK = 0,
	VMS_ERR_IO = -1,      /* the file could not be read or written */
	VMS_ERR_FORMAT = -2,  /* the input is damaged or not what it claims (exit 2) */
	VMS_ERR_USAGE = -3,   /* the caller asked for something that cannot be (exit 2) */
	VMS_ERR_NOMEM = -4,   /* out of memory or over a sanity limit */
	VMS_ERR_INTERNAL = -5,
};

struct vms_error {
	int status;      /* one of enum vms_status, 0 when no error */
	char msg[768];   /* one line, no trailing newline */
};

/* Set the error (first error wins: a later call does not overwrite an earlier one). Returns
 * status so that `return vms_error_set(err, VMS_ERR_FORMAT, ...)` reads naturally. */
int vms_error_set(struct vms_error *err, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int vms_error_vset(struct vms_error *err, int status, const char *fmt, va_list ap);
void vms_error_clear(struct vms_error *err);
/* A file that cannot be opened or mapped (errnum: errno), said as what it is: out of file
 * descriptors is "too many streams open", out of memory is "out of memory at byte offset
 * OFF", anything else "cannot open: REASON" (a missing file is a usage error). */
int vms_error_open(struct vms_error *err, const char *path, int errnum, uint64_t off);
/* An allocation failed while a reader was at byte offset OFF of PATH (the record, packet,
 * section or element being read): "PATH: out of memory at byte offset OFF", VMS_ERR_NOMEM.
 * Readers say running out of memory only through this, so the message always says where. */
int vms_error_nomem_at(struct vms_error *err, const char *path, uint64_t off);

#ifdef __cplusplus
}
#endif
#endif
