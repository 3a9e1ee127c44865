/* vmscope tracer: trace points for hypervisors, VMMs and any multi-threaded C program.
 *
 * Trace points are generated from a QEMU-syntax `trace-events` file by vmscope-tracegen,
 * which writes inline trace_NAME() functions and the event table. A disabled point costs one
 * load and a predicted branch; an enabled one writes a record into the calling thread's own
 * buffer (no lock, no system call, no allocation). A writer thread drains full buffers to a
 * CTF 1.8 trace directory. Prefix: vmst_. This library does not depend on libvmscope.
 *
 * Control: VMSCOPE_TRACE="enable=PATTERN,events=FILE,file=DIR[,socket=PATH][,period=MS]
 * [,bufsize=BYTES][,subbufs=N][,clock=tsc|monotonic]" in the environment at start-up, this C
 * API, and a control socket speaking JSON lines (see vmst_control_start).
 *
 * The configuration string (QEMU's -trace shape), comma-separated key=value items:
 *   enable=GLOB     enable the events whose name matches the glob (fnmatch: * ? [..]);
 *                   repeatable; a leading '-' disables instead ("enable=-virtio_*").
 *   events=FILE     a file of globs, one per line, applied in order; '-' prefix disables;
 *                   '#' starts a comment line; blank lines are ignored.
 *   file=DIR        the CTF trace directory (default "vmstrace-PID" in the current
 *                   directory); created if missing; our own files in it are replaced.
 *   socket=PATH     start the control socket there (vmst_control_start).
 *   period=MS       periodic write-out of partly filled buffers (default 100).
 *   bufsize=BYTES   buffer per producer thread (default 2 MiB; suffixes k, M), split in
 *   subbufs=N       N sub-buffers (default 8); a sub-buffer is written out as one CTF
 *                   packet (or a few, when flushed while partly filled).
 *   clock=tsc|monotonic   time source (default tsc when the CPU has an invariant TSC).
 * As in QEMU, nothing is enabled unless enable= or events= says so.
 *
 * The trace: DIR/metadata (CTF 1.8 TSDL; the clock is the TSC with its calibrated frequency,
 * or CLOCK_MONOTONIC in ns), DIR/stream-TID-N (one per producer thread; the packet context
 * carries the thread id `vtid` and `cpu_id`, the CPU the thread ran on when the packet's
 * sub-buffer was opened; every record's event context carries `cpu_id`, the CPU it was
 * written on), and DIR/.vmst-closed written last by a clean shutdown: its absence means the traced process
 * ended abruptly (killed); every packet written before that is complete and readable. */
#ifndef VMSCOPE_TRACER_H
#define VMSCOPE_TRACER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- configuration and life cycle ---- */

/* Start the tracer (idempotent). config uses the VMSCOPE_TRACE syntax; NULL reads the
 * environment. Called automatically by the first generated event table's constructor when
 * VMSCOPE_TRACE is set. Returns 0 or -errno. */
int vmst_init(const char *config);
/* Flush everything and stop the writer thread (also run at exit()). A forked child of a
 * traced process records nothing until it calls vmst_init itself (the writer thread is the
 * parent's); then it writes only its own events, each thread under its own tid, never the
 * parent's events that were buffered when it forked. */
void vmst_shutdown(void);

/* ---- events ---- */

/* Number of events known (all registered tables), their names and states. */
size_t vmst_event_count(void);
const char *vmst_event_name(size_t i);
bool vmst_event_get(size_t i);
/* Enable or disable one event; returns 0, or -EINVAL for an index out of range. */
int vmst_event_set(size_t i, bool enable);
/* Enable or disable every event whose name matches the glob; returns how many matched. */
int vmst_event_set_glob(const char *glob, bool enable);

/* ---- the trace file ---- */

/* Start or stop writing (events are not recorded while off). */
int vmst_file_enable(bool on);
bool vmst_file_enabled(void);
/* Write out everything recorded so far (all threads' buffers). Returns when every record
 * committed before the call is in its stream file: readers see it, and it stays there if the
 * process is then killed. It does not wait for the disk (no fsync: the kernel writes the
 * pages back; vmst_shutdown syncs).
 * Latency bound: a pass of the writer that is not the flush's own stops at its next
 * sub-buffer when a flush waits, and the flush's pass writes at most one lap of each thread's
 * ring (bufsize + one sub-buffer), however fast the producers refill it. So a flush waits for
 * at most (bufsize + bufsize/subbufs) x threads + one sub-buffer of bytes to be written, at
 * the writer's buffered-write rate W ("written" in bench_tracer; new file space costs twice,
 * see packet_file.c): e.g. 4 threads x 64 MiB buffers at W = 1 GB/s: at most 0.31 s; the
 * default 2 MiB buffers: 10 ms. W falls when the writer thread gets little CPU (producers
 * spinning on every core): the bound in bytes holds, the time grows with it.
 * bench_tracer -F measures it with producers at full speed. */
int vmst_flush(void);
/* Close the current trace directory and continue in a new one. */
int vmst_file_set(const char *dir);
const char *vmst_file_get(void);

/* ---- statistics ---- */

struct vmst_thread_stats {
	int32_t tid;
	uint64_t written;        /* events recorded into the buffer (the writer writes them all
	                            out unless the process is killed first) */
	uint64_t dropped;        /* events dropped because the buffer was full (also in the
	                            trace: packet context events_discarded) */
};
/* Copies up to `max` entries, returns the number of producer threads known. */
size_t vmst_stats(struct vmst_thread_stats *out, size_t max);

/* ---- debugging and tests ---- */

/* Stop (true) or resume (false) the writer thread's draining: producers then run out of
 * sub-buffers and drop. For tests of the drop accounting. */
void vmst_debug_pause_writer(bool pause);
/* Bytes of packets (headers and records) the writer has written since vmst_init, and those
 * it wrote while the calling thread's last vmst_flush() waited (bench_tracer -F). */
uint64_t vmst_debug_written_bytes(void);
uint64_t vmst_debug_flush_written_bytes(void);
/* The clock in use: "tsc" or "monotonic", and its frequency in Hz (after vmst_init). */
const char *vmst_clock_name(void);
uint64_t vmst_clock_freq(void);

/* ---- control socket ---- */

/* Listen on a UNIX socket (mode 0600) at path and serve JSON-line commands from a thread of
 * its own: trace-event-get-state, trace-event-set-state, trace-file, query-trace-stats.
 * Returns 0 or -errno. */
int vmst_control_start(const char *path);
void vmst_control_stop(void);

#ifdef __cplusplus
}
#endif
#endif
