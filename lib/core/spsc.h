/* vmscope internal: a bounded single-producer/single-consumer queue of records, in blocks.
 *
 * Why: a stage of the pipeline (the export's writer) runs in a thread of its own, fed by the
 * thread that reads the traces. The producer writes records into a block and hands blocks
 * over whole (one atomic store per block, not per record); the consumer takes them in order.
 * The queue holds nblocks blocks of block_size bytes and nothing more: a producer that finds
 * every block full waits for the consumer, so memory stays flat whatever the stream's
 * length. A side sleeps (mutex and condition variable) only when it cannot go on; a
 * sleeping consumer is woken when a batch of blocks is ready (or at a flush), not per block,
 * so that the hand-over costs a few system calls per megabyte.
 *
 * Records are the caller's: vms_spsc_reserve gives room for n bytes (n <= block_size) in
 * the producer's block (inline: a compare and an add, the queue is touched once per block),
 * the consumer gets a block's bytes and walks them (it knows each record's size from the
 * record). */
#ifndef VMS_CORE_SPSC_H
#define VMS_CORE_SPSC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vms_spsc;

/* NULL when out of memory */
struct vms_spsc *vms_spsc_new(size_t block_size, unsigned nblocks);
void vms_spsc_free(struct vms_spsc *q);

/* Producer: its place in the block being filled, { NULL, NULL } before the first. */
struct vms_spsc_cursor {
	unsigned char *cur, *end;
};
/* The block being filled handed over (if any), the next given to c (waiting for the
 * consumer to release one if none is free). */
void vms_spsc_more(struct vms_spsc *q, struct vms_spsc_cursor *c);
/* Room for n bytes at c (in a new block when they do not fit in this one). */
static inline void *vms_spsc_reserve(struct vms_spsc *q, struct vms_spsc_cursor *c, size_t n)
{
	if (__builtin_expect((size_t)(c->end - c->cur) < n, 0))
		vms_spsc_more(q, c);
	void *p = c->cur;
	c->cur += n;
	return p;
}
/* Hand the block being filled over (if not empty) and wait until the consumer has released
 * every block: what the consumer did is then visible to the producer, and it waits for more. */
void vms_spsc_drain(struct vms_spsc *q, struct vms_spsc_cursor *c);
/* Hand the block being filled over and say the stream ends (the consumer gets NULL after the
 * last block). Nothing may be reserved afterwards. */
void vms_spsc_close(struct vms_spsc *q, struct vms_spsc_cursor *c);

/* Consumer. The next block (its bytes in *len), waiting for one; NULL when the stream ended.
 * Release it (vms_spsc_release) before asking for the next. */
const void *vms_spsc_next(struct vms_spsc *q, size_t *len);
void vms_spsc_release(struct vms_spsc *q);

/* How often and how long each side slept (the producer on a full queue, the consumer on an
 * empty one); read after both have stopped. */
struct vms_spsc_sleeps {
	unsigned long n;
	uint64_t ns;
};
void vms_spsc_sleeps(const struct vms_spsc *q, struct vms_spsc_sleeps *producer,
		     struct vms_spsc_sleeps *consumer);

/* The calling thread's CPU time in seconds (-1 when unknown). */
double vms_thread_cpu_s(void);
/* A two-stage pipeline's figures on stderr, after both stopped: "vmscope WHAT: PRODUCER
 * cpu1 s CPU, waited ... for CONSUMER; CONSUMER cpu2 s CPU, waited ... for PRODUCER". */
void vms_spsc_print_stats(const struct vms_spsc *q, const char *what, const char *producer,
			  double cpu1, const char *consumer, double cpu2);

#endif
