/* vms_error: the first error wins, so the innermost reader's precise message (with its byte
 * offset) is what the user sees, not a vaguer one added on the way up. */
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
	/* one line: no newlines inside */
	for (char *p = err->msg; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
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

void vms_error_clear(struct vms_error *err)
{
	if (err) {
		err->status = 0;
		err->msg[0] = '\0';
	}
}
