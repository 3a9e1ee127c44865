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
	bool raw_ns;         /* clock is the identity (raw ns): t = ev.ts, no conversion */
	struct vms_event ev;
	struct vms_clock_memo memo; /* a guest's TIME_SHIFT sample in force (vms_clock_memo) */
};

/* ev's reference time: the identity clock (a host's own trace, the commonest) costs
 * nothing; the clock's tests were ~10 instructions an event. */
static inline uint64_t vms_merge_stream_time(struct vms_merge_stream *s)
{
	if (s->raw_ns)
		return s->ev.ts;
	if (s->clock->timeshift)
		return vms_clock_to_ref_memo(s->clock, s->ev.cpu, s->ev.ts, &s->memo);
	return vms_clock_to_ref_fast(s->clock, s->ev.cpu, s->ev.ts);
}

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

/* A checkpoint of the merge (issue 21): for every stream (in init's order: the sources'
 * streams one source after the other) whether it has ended, holds an event not handed out
 * yet, or holds the one handed out last, and the source position of that event; plus
 * last_t (the time of the last event handed out: an event behind it is delivered at it).
 * Ties need nothing more: the order is by (time, source, stream), no history. */
enum { VMS_MARK_ENDED, VMS_MARK_PENDING, VMS_MARK_DELIVERED };
struct vms_merge_mark {
	uint8_t state;
	struct vms_stream_pos pos;
};
/* marks: m->nr_streams entries. 0, or <0 (a source cannot seek) with m->err set. The event
 * handed out last stays valid. */
int vms_merge_tell(struct vms_merge *m, struct vms_merge_mark *marks);
/* Like vms_merge_init, but the streams start where marks (nr_marks, untrusted: checked)
 * say, so that vms_merge_next gives what it gave after the checkpoint (on_end is not told
 * about the streams ended before it; `backwards` counts from 0). 0, or <0 with err set. */
int vms_merge_restart(struct vms_merge *m, struct vms_source **sources,
		      const struct vms_clock *const *clocks, uint32_t n,
		      const struct vms_merge_mark *marks, uint32_t nr_marks, uint64_t last_t,
		      struct vms_error *err);
int vms_merge_settle(struct vms_merge *m, int r);

static inline bool vms_merge_before(const struct vms_merge_stream *a,
				    const struct vms_merge_stream *b)
{
	if (a->t != b->t)
		return a->t < b->t;
	if (a->source != b->source)
		return a->source < b->source;
	return a->stream < b->stream;
}

/* Next event in reference order: 1 (ev, t set), 0 at the end, negative on a reader error.
 * The event handed out last stays in its stream's slot until the next call, which then
 * advances that stream: so strings inside it stay valid for the caller. Inline (once per
 * event: the call's saved registers were ~16 instructions of ~90); what is rare, a stream
 * that ends, an error or a sift, is vms_merge_settle's. */
static inline int vms_merge_next(struct vms_merge *m, const struct vms_event **ev, uint64_t *t)
{
	if (m->heap_len == 0)
		return 0;
	struct vms_merge_stream *top = m->heap[0];
	if (m->advance) {
		m->advance = false;
		/* advance the stream delivered last time */
		int r = top->src->ops->next(top->src, top->stream, &top->ev);
		bool settle = r <= 0;
		if (r > 0) {
			top->ev.machine = top->source;
			top->ev.stream = top->stream;
			top->t = vms_merge_stream_time(top);
			if (m->heap_len > 1) {
				/* most of the time the same stream is still the earliest: check the
				 * two children before paying for a sift */
				struct vms_merge_stream *c = m->heap[1];
				if (m->heap_len > 2 && vms_merge_before(m->heap[2], c))
					c = m->heap[2];
				settle = vms_merge_before(c, top);
			}
		}
		if (settle && (r = vms_merge_settle(m, r)) <= 0)
			return r;
		top = m->heap[0];
	}
	uint64_t tt = top->t;
	if (tt < m->last_t) {
		m->backwards++;
		top->ev.flags |= VMS_EVF_TIME_BACKWARDS;
		tt = m->last_t;
	}
	m->last_t = tt;
	m->advance = true;
	*ev = &top->ev;
	*t = tt;
	return 1;
}

#endif
