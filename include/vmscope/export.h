/* vmscope: the timeline export (Perfetto protobuf trace, Chrome JSON trace format).
 *
 * A consumer of the vCPU state machine's observations (vmscope/observe.h; the guest threads'
 * overlays it makes from them itself: vmscope/overlays.h): make it, subscribe its observer
 * and pass its sinks to the run (they ask the analysis for no table and no interval), then
 * vms_export_finish. The file is written while the run goes; memory is
 * bounded by the model (one track per host CPU, vCPU, guest thread, host thread that stole
 * time), never by the trace's length.
 *
 * Tracks, one group per machine:
 *   host:  "CPU n" per physical CPU: the fused view (vmscope/pcpu_view.h);
 *          "<comm> (<tid>)" per host thread that ran where a preempted vCPU's thread left
 *          (slices "instead of <guest> vCPU n"; a second lane "... #2" when it stole from
 *          two vCPUs at once);
 *   guest: "vCPU n" (slices named by state), "vCPU n exits" (one slice per VM exit named by
 *          its reason; args guest_rip, info1, info2, host_cpu; an exit whose end was
 *          lost is a zero-length slice), counters "vCPU n exits/s" and "vCPU n steal %"
 *          (per period, default 10 ms), and "<comm> (<tid>)" per guest thread (slices
 *          "running on vCPU n", inside them the overlays "vmm: REASON" / "preempted" /
 *          "halted" with who ran instead). */
#ifndef VMSCOPE_EXPORT_H
#define VMSCOPE_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "vmscope/analysis.h"
#include "vmscope/filter.h"
#include "vmscope/model.h"
#include "vmscope/observe.h"

#ifdef __cplusplus
extern "C" {
#endif

enum vms_export_format { VMS_EXPORT_PERFETTO, VMS_EXPORT_CHROME_JSON };

struct vms_export_opts {
	enum vms_export_format format;
	uint64_t counter_period_ns;   /* 0: 10 ms */
	struct vms_filter filter;     /* the rows to keep (machine/vcpu -1: all; a zeroed
	                                 struct keeps machine 0's vCPU 0 only) */
	const char *machine_name;     /* when set, filter.machine is the machine of this name
	                                 in the model of each pass (none: no rows) */
	bool deflate;                 /* Perfetto: packets in deflated blocks (zlib, as
	                                 TracePacket.compressed_packets: a fifth of the size) */
};

struct vms_export;

/* An export of the machines of `model` (complete, built before the run; it must outlive the
 * export) into f (not closed). NULL when out of memory.
 *
 * The file is written by a thread of the export's own (the reading thread only publishes
 * records to it: lib/output/export_front.c), from vms_export_new until vms_export_finish or
 * vms_export_free returns: leave f alone meanwhile (close it after either). With
 * VMS_EXPORT_THREADS=0 in the environment, or when no thread can be made, everything is
 * done in the caller's thread; the bytes are the same.
 *
 * model may be NULL when f is a regular file (or /dev/null): the export's observer then has
 * a reset (vms_observer.reset) that makes the tracks from the model of each pass and, from
 * the second pass on, empties f and writes it again; its sinks say so
 * (vms_sinks.reset_with_observer), so that a session can export in its checked single pass
 * (one pass over the traces when the metadata links the machines as the events do). A
 * thread's pid that only events say (its exec, its fork) is then not in the names of its
 * tracks and arguments ("comm (tid), pid N"): a name is written when first used, before
 * the pass has read what says the pid; the model pass (f not rewritable) knows it first. */
struct vms_export *vms_export_new(const struct vms_model *model, FILE *f,
				  const struct vms_export_opts *opts);
struct vms_observer vms_export_observer(struct vms_export *x);
struct vms_sinks vms_export_sinks(struct vms_export *x);
/* After the run: ends the file (if the run did not reach its end). 0, or -1 when writing
 * failed or memory ran out. */
int vms_export_finish(struct vms_export *x);
void vms_export_free(struct vms_export *x);

#ifdef __cplusplus
}
#endif
#endif
