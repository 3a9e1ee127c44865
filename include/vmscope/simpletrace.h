/* vmscope: QEMU simpletrace v4 reader.
 *
 * A simpletrace file is not self-describing: it holds event ids, the id -> name mapping
 * records, timestamps, the process id and raw argument words. The names and types of the
 * arguments come from the trace-events-all file QEMU was built with; without it the events
 * are still read (name, time, pid) but their arguments are left undecoded.
 *
 * The source has one stream. Every event is VMS_K_TRACEPOINT with
 *   f[0..4]  the first five arguments (a string argument gives its length),
 *   s[0], s[1] the first two string arguments (NUL-terminated copies; NULL when set_wanted
 *              excludes VMS_K_TRACEPOINT),
 *   tid = -1 (the format records only the process id, not the thread),
 *   cpu = 0 (no CPU is recorded), ts = the recorded CLOCK_MONOTONIC nanoseconds.
 * A "dropped events" record is delivered as type "Dropped_Event" (VMS_K_OTHER, f[0] = how
 * many were dropped) and the next event carries VMS_EVF_LOST_BEFORE. QEMU reads its clock
 * before it reserves the buffer slot, so times can go backwards by a little: such events are
 * flagged VMS_EVF_TIME_BACKWARDS, never rejected.
 *
 * ops->format_event renders the last event like QEMU's simpletrace.py:
 *   NAME DELTA_US pid=PID arg=0xHEX str=TEXT
 * (DELTA_US: microseconds since the previous event, 3 decimals; non-printable string bytes as
 * \xNN). It returns the length of the full line like snprintf (it may exceed len; the text
 * is then cut and still NUL-terminated). */
#ifndef VMSCOPE_SIMPLETRACE_H
#define VMSCOPE_SIMPLETRACE_H

#include "vmscope/error.h"
#include "vmscope/source.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Open a simpletrace v4 file; events_file (QEMU's trace-events-all, may be NULL) gives the
 * arguments. Returns NULL with err->status == 0 when path is not a simpletrace file, NULL with
 * err set on an error (damaged header, unreadable or malformed events file). Damage past the
 * header is reported by next() once the good events before it have been delivered. */
struct vms_source *vms_simpletrace_open(const char *path, const char *events_file,
					struct vms_error *err);

#ifdef __cplusplus
}
#endif
#endif
