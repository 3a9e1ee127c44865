/* The flyrecord data of a trace.dat being written: per CPU, events are packed into
 * ring-buffer pages, pages into chunks, and each full chunk is compressed by a worker thread
 * and appended to that CPU's own (unlinked) temporary file. Memory stays constant however many
 * events are written: one chunk being filled per CPU plus a small pool in flight. At the end
 * the writer copies each CPU's file into the trace.dat at its page-aligned offset. */
#ifndef VMS_OUTPUT_FLYRECORD_SPOOL_H
#define VMS_OUTPUT_FLYRECORD_SPOOL_H

#include <stdint.h>

#include "vmscope/error.h"
#include "output/tracedat_codec.h"

struct vms_spool;

struct vms_spool_cpu_info {
	uint64_t events;
	uint64_t first_ts, last_ts;   /* raw; valid when events > 0 */
	uint64_t pages;
	uint64_t chunks;              /* compressed chunks (0 with "none") */
	uint64_t stored_bytes;        /* bytes copy_cpu writes, chunk count header included */
};

int vms_spool_open(struct vms_spool **out, const char *tmp_dir, uint32_t nr_cpus,
		   uint32_t page_size, uint32_t chunk_pages, enum vms_tdw_compression comp,
		   int level, struct vms_error *err);

/* Append one event to `cpu` (time must not go backwards on a CPU). 0 or a negative status. */
int vms_spool_event(struct vms_spool *s, uint32_t cpu, uint64_t ts, const void *payload,
		    uint32_t len, struct vms_error *err);

/* Flush the partial pages and chunks and stop the worker. */
int vms_spool_finish(struct vms_spool *s, struct vms_error *err);

/* After finish: what a CPU holds, and copy it (chunk count + chunks, or raw pages) to the
 * current position of `out_fd`. */
void vms_spool_cpu_info(const struct vms_spool *s, uint32_t cpu, struct vms_spool_cpu_info *info);
int vms_spool_copy_cpu(struct vms_spool *s, uint32_t cpu, int out_fd, struct vms_error *err);

/* Total events appended so far (all CPUs). */
uint64_t vms_spool_events(const struct vms_spool *s);

void vms_spool_free(struct vms_spool *s);

#endif
