/* vmscope internal: a stream's bounded queue of blocks decoded ahead by the readers' worker
 * pool (core/pool.h), shared by the readers whose streams decode independently (CTF,
 * xentrace).
 *
 * Why: a reader whose streams can be decoded on their own lets the pool's workers decode each
 * stream's next events in blocks while the reading thread merges; what differs between the
 * readers is what a block holds and how it is filled, not the queue. A stream has at most
 * VMS_AHEAD_DEPTH blocks decoded ahead and one being read (memory bounded by the queues
 * whatever the trace's length), and at most one job at a time (busy), so each event is
 * decoded once, in order. The reading thread, when the block it needs is neither decoded nor
 * claimed, decodes it itself instead of sleeping; when a worker is decoding it, it waits.
 *
 * Everything is under the pool's lock (vms_pool_lock) except cur, the reading thread's, and
 * the blocks' contents, which are their job's holder's and then the reading thread's. */
#ifndef VMS_CORE_AHEAD_H
#define VMS_CORE_AHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VMS_AHEAD_DEPTH 4 /* blocks decoded ahead per stream */

struct vms_ahead {
	void *ring[VMS_AHEAD_DEPTH];       /* decoded, in order from head */
	void *spare[VMS_AHEAD_DEPTH + 1];  /* free for a job */
	void *cur;                         /* the block being read (the reading thread's) */
	uint32_t head, nready, nspare, nblocks; /* nblocks: allocated, at most DEPTH + 1 */
	bool started;  /* the workers may decode it (the reader asked for it) */
	bool busy;     /* a job (or the reading thread) decodes its next block */
	bool ended;    /* the block of its end (or error) is decoded */
	bool stale;    /* decoded ahead under a setting since replaced: the reader replays */
	uint64_t taken; /* events the reader took since the rewind (a reader may add a block's
			 * when done with it, counting those of cur itself: CTF) */
};

/* What a reader's blocks are, for the queue to make and fill them. */
struct vms_ahead_ops {
	size_t block_bytes;
	/* under the lock: b about to be filled for the stream (its job's settings) */
	void (*prepare)(void *ctx, uint32_t stream, void *b);
	/* without the lock, by the job's holder */
	void (*fill)(void *ctx, void *b);
	/* b holds the stream's end (or error): nothing after it */
	bool (*last)(const void *b);
	void *ctx;
};

/* Under the lock: can a job decode q's next block? */
bool vms_ahead_claimable(const struct vms_ahead *q);
/* Under the lock, the pool's claim: among the n queues at base + i * stride, the one with the
 * fewest blocks ahead (the merge will want it first) from *rr on, with a free block prepared
 * and held (busy); 1 and *stream, *b set, or 0 when none (or out of memory: the reader says
 * it when it needs the block). */
int vms_ahead_claim(void *base, size_t stride, uint32_t n, uint32_t *rr,
		    const struct vms_ahead_ops *ops, uint32_t *stream, void **b);
/* Under the lock, the pool's finish: the job's block joins q. */
void vms_ahead_push(struct vms_ahead *q, const struct vms_ahead_ops *ops, void *b);
/* Under the lock, by the reading thread: cur given back and the next block made cur (waiting
 * while a worker decodes it, decoding it here when none has claimed it); false when out of
 * memory for it (no job on the stream then). A block taken from the ring frees a slot: the
 * caller decides when that is worth waking the workers for (vms_pool_kick). */
bool vms_ahead_next(struct vms_ahead *q, const struct vms_ahead_ops *ops, uint32_t stream);
/* Has q events decoded that the reader has not taken? cur_left: cur's, the reader's count
 * (with no job running and nothing left to take, the decoder is where the reader is). */
bool vms_ahead_ahead(const struct vms_ahead *q, bool cur_left);
/* Under the lock, no job on q: empty, as before its stream's first event (the blocks kept). */
void vms_ahead_reset(struct vms_ahead *q);
/* No job on q: its blocks freed, q zeroed. */
void vms_ahead_free(struct vms_ahead *q);

#endif
