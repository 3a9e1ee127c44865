/* A stream's queue of blocks decoded ahead by the readers' worker pool (core/ahead.h). */
#include <stdlib.h>
#include <string.h>

#include "core/ahead.h"
#include "core/pool.h"

/* a free block of q, allocated while q has fewer than DEPTH + 1 */
static void *take_spare(struct vms_ahead *q, size_t bytes)
{
	if (q->nspare)
		return q->spare[--q->nspare];
	if (q->nblocks > VMS_AHEAD_DEPTH)
		return NULL;
	void *b = malloc(bytes);
	if (b)
		q->nblocks++;
	return b;
}

bool vms_ahead_claimable(const struct vms_ahead *q)
{
	return q->started && !q->ended && !q->busy && !q->stale && q->nready < VMS_AHEAD_DEPTH;
}

int vms_ahead_claim(void *base, size_t stride, uint32_t n, uint32_t *rr,
		    const struct vms_ahead_ops *ops, uint32_t *stream, void **b)
{
	uint32_t best = UINT32_MAX, least = VMS_AHEAD_DEPTH;
	for (uint32_t i = 0; i < n && least; i++) {
		uint32_t k = (*rr + i) % n;
		const struct vms_ahead *q = (const void *)((char *)base + (size_t)k * stride);
		if (vms_ahead_claimable(q) && q->nready < least) {
			best = k;
			least = q->nready;
		}
	}
	if (best == UINT32_MAX)
		return 0;
	struct vms_ahead *q = (void *)((char *)base + (size_t)best * stride);
	if (!(*b = take_spare(q, ops->block_bytes)))
		return 0;
	ops->prepare(ops->ctx, best, *b);
	q->busy = true;
	*rr = (best + 1) % n;
	*stream = best;
	return 1;
}

void vms_ahead_push(struct vms_ahead *q, const struct vms_ahead_ops *ops, void *b)
{
	q->ring[(q->head + q->nready) % VMS_AHEAD_DEPTH] = b;
	q->nready++;
	q->busy = false;
	if (ops->last(b))
		q->ended = true;
}

bool vms_ahead_next(struct vms_ahead *q, const struct vms_ahead_ops *ops, uint32_t stream)
{
	q->started = true;
	if (q->cur)
		q->spare[q->nspare++] = q->cur;
	q->cur = NULL;
	for (;;) {
		if (q->nready) {
			q->cur = q->ring[q->head];
			q->head = (q->head + 1) % VMS_AHEAD_DEPTH;
			q->nready--;
			return true; /* (the caller wakes the workers: when is its choice) */
		}
		if (q->busy) {
			/* a worker decodes the very block needed: wait rather than decode twice */
			vms_pool_wait();
			continue;
		}
		void *b = take_spare(q, ops->block_bytes);
		if (!b)
			return false;
		ops->prepare(ops->ctx, stream, b);
		q->busy = true;
		/* the workers take the blocks after it; woken with the lock let go, so that a
		 * worker woken does not find it still held and sleep again on it at once */
		vms_pool_unlock();
		vms_pool_kick();
		ops->fill(ops->ctx, b);
		vms_pool_lock();
		vms_ahead_push(q, ops, b);
	}
}

bool vms_ahead_ahead(const struct vms_ahead *q, bool cur_left)
{
	return q->started && !q->stale && (q->nready || (q->cur && cur_left));
}

void vms_ahead_reset(struct vms_ahead *q)
{
	if (q->cur)
		q->spare[q->nspare++] = q->cur;
	for (uint32_t i = 0; i < q->nready; i++)
		q->spare[q->nspare++] = q->ring[(q->head + i) % VMS_AHEAD_DEPTH];
	q->cur = NULL;
	q->head = q->nready = 0;
	q->started = q->busy = q->ended = q->stale = false;
	q->taken = 0;
}

void vms_ahead_free(struct vms_ahead *q)
{
	vms_ahead_reset(q);
	for (uint32_t i = 0; i < q->nspare; i++)
		free(q->spare[i]);
	memset(q, 0, sizeof *q);
}
