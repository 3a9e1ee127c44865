/* The k-way merge: every stream of every source, ordered by reference time.
 *
 * A binary min-heap of streams keyed by (reference time, source, stream), so ties resolve the
 * same way every run. Each stream holds its next event; a stream's reference times are
 * monotonic as long as its raw times are (every clock transform is monotonic). A stream that
 * goes backwards anyway (LTTng's scp_src, QEMU's simpletrace) is tolerated: its event is
 * delivered at the last delivered time, flagged and counted, never an abort. */
#ifndef VMS_MERGE_H
#define VMS_MERGE_H

#include <stdbool.h>
#include <stdint.h>

#include "vmscope/clock.h"
#include "vmscope/error.h"
#include "vmscope/event.h"
#include "vmscope/source.h"

struct vms_merge_stream {
	struct vms_source *src;
	const struct vms_clock *clock;
	uint32_t source, stream;
	uint64_t t;          /* reference time of ev */
	struct vms_event ev;
};

struct vms_merge {
	struct vms_merge_stream *streams;
	struct vms_merge_stream **heap;
	uint32_t nr_streams, heap_len;
	uint64_t last_t;
	bool advance;        /* heap[0] was handed out: advance it on the next call */
	uint64_t backwards;  /* events delivered later than their own time said */
	struct vms_error *err;
	/* Optional (set after init): told when a stream has delivered its last event, at the
	 * time it was delivered, before any later event; source_done when it was the source's
	 * last stream with events. */
	void (*on_end)(void *ctx, uint32_t source, uint32_t stream, uint64_t t, bool source_done);
	void *end_ctx;
	uint32_t *live;      /* [source]: streams with events left */
	uint32_t nr_sources;
};

/* Prepare over sources[0..n) with their clocks (clocks[i] for sources[i]). */
int vms_merge_init(struct vms_merge *m, struct vms_source **sources, const struct vms_clock *const *clocks,
		   uint32_t n, struct vms_error *err);
void vms_merge_free(struct vms_merge *m);
/* Next event in reference order: 1 (ev, t set), 0 at the end, negative on a reader error. */
int vms_merge_next(struct vms_merge *m, const struct vms_event **ev, uint64_t *t);

#endif
