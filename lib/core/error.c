/* vms_error: the first error wins, so the innermost reader's precise message (with its byte
 * offset) is what the user sees, not a vaguer one added on the way up. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "vmscope/error.h"

int vms_error_vset(struct vms_error *err, int status, const char *fmt, va_list ap)
{
	if (!err)
		return status;
	if (err->status != 0)
		return status;
	err->status = status;
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	/* one line: no newlines inside, and no control characters (a message may quote bytes
	 * of a hostile trace, and it is printed to a terminal) */
	for (char *p = err->msg; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
		else if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return status;
}

int vms_error_set(struct vms_error *err, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vms_error_vset(err, status, fmt, ap);
	va_end(ap);
	return status;
}

int vms_error_open(struct vms_error *err, const char *path, int errnum, uint64_t off)
{
	if (errnum == EMFILE || errnum == ENFILE)
		return vms_error_set(err, VMS_ERR_NOMEM, "%s: too many streams open (the process ran "
				     "out of file descriptors; raise `ulimit -n`)", path);
	if (errnum == ENOMEM)
		return vms_error_nomem_at(err, path, off);
	/* a trace that is not there, or a name the system cannot hold, is bad input (exit 2) */
	return vms_error_set(err, errnum == ENOENT || errnum == ENOTDIR || errnum == ENAMETOOLONG
				     ? VMS_ERR_USAGE : VMS_ERR_IO,
			     "%s: cannot open: %s", path, strerror(errnum));
}

int vms_error_nomem_at(struct vms_error *err, const char *path, uint64_t off)
{
	return vms_error_set(err, VMS_ERR_NOMEM, "%s: out of memory at byte offset %llu",
			     path ? path : "(trace)", (unsigned long long)off);
}

void vms_error_clear(struct vms_error *err)
{
	if (err) {
		err->status = 0;
		err->msg[0] = '\0';
	}
}
