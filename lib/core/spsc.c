/* The bounded single-producer/single-consumer queue of blocks (core/spsc.h).
 *
 * head counts the blocks handed over, tail the blocks released; block i lives at
 * i % nblocks. Each side reads the other's counter with acquire and writes its own with
 * release, so a block's bytes (and whatever the consumer did before releasing it) are seen
 * with the counter. Sleeping: a side that must wait sets its bit in `sleeping` and re-checks
 * its condition under the mutex; the other side, after moving its counter, wakes it only if
 * that bit is set. Both the bit and the counters are sequentially consistent, so either the
 * sleeper sees the new counter or the waker sees the bit (no lost wake-up), and the common
 * path takes no lock and makes no system call. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/spsc.h"

#define PRODUCER 1
#define CONSUMER 2

struct vms_spsc {
	size_t bsize;
	unsigned nb;
	unsigned batch;              /* a sleeping consumer is woken when this many are ready */
	unsigned char *mem;          /* nb blocks of bsize bytes */
	size_t *used;                /* [nb]: the bytes of each block handed over */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	_Alignas(64) atomic_uint_fast64_t head;
	atomic_bool urgent;          /* drain or close: wake the consumer for any block */
	atomic_bool closed;
	atomic_int sleeping;
	_Alignas(64) atomic_uint_fast64_t tail;
	/* the producer's own */
	_Alignas(64) uint64_t p_head;   /* the block being filled: p_head % nb */
	unsigned long p_sleeps;
	uint64_t p_slept_ns;
	/* the consumer's own */
	_Alignas(64) uint64_t c_tail;
	unsigned long c_sleeps;
	uint64_t c_slept_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct vms_spsc *vms_spsc_new(size_t block_size, unsigned nblocks)
{
	if (nblocks < 2 || !block_size || block_size > SIZE_MAX / nblocks)
		return NULL;
	struct vms_spsc *q = aligned_alloc(64, (sizeof *q + 63) / 64 * 64);
	if (!q)
		return NULL;
	*q = (struct vms_spsc){ .bsize = block_size, .nb = nblocks,
				.batch = nblocks / 4 ? nblocks / 4 : 1 };
	q->mem = malloc(block_size * nblocks);
	q->used = calloc(nblocks, sizeof *q->used);
	if (!q->mem || !q->used || pthread_mutex_init(&q->mu, NULL) != 0)
		goto fail;
	if (pthread_cond_init(&q->cv, NULL) != 0) {
		pthread_mutex_destroy(&q->mu);
		goto fail;
	}
	atomic_init(&q->head, 0);
	atomic_init(&q->tail, 0);
	atomic_init(&q->urgent, false);
	atomic_init(&q->closed, false);
	atomic_init(&q->sleeping, 0);
	return q;
fail:
	free(q->mem);
	free(q->used);
	free(q);
	return NULL;
}

void vms_spsc_free(struct vms_spsc *q)
{
	if (!q)
		return;
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	free(q->mem);
	free(q->used);
	free(q);
}

static void wake(struct vms_spsc *q, int who)
{
	if (atomic_load(&q->sleeping) & who) {
		pthread_mutex_lock(&q->mu);
		pthread_cond_broadcast(&q->cv);
		pthread_mutex_unlock(&q->mu);
	}
}

/* the producer may fill block p_head: not every block is handed over unreleased */
static bool room(struct vms_spsc *q)
{
	return q->p_head - atomic_load(&q->tail) < q->nb;
}

static bool all_released(struct vms_spsc *q)
{
	return atomic_load(&q->tail) == q->p_head;
}

/* a block for the consumer: a batch, or any when the producer flushes; or the end */
static bool ready(struct vms_spsc *q)
{
	uint64_t n = atomic_load(&q->head) - q->c_tail;
	return n >= q->batch || (n && atomic_load(&q->urgent)) || atomic_load(&q->closed);
}

static void wait_until(struct vms_spsc *q, int who, bool (*ok)(struct vms_spsc *))
{
	uint64_t t0 = now_ns();
	pthread_mutex_lock(&q->mu);
	atomic_fetch_or(&q->sleeping, who);
	while (!ok(q))
		pthread_cond_wait(&q->cv, &q->mu);
	atomic_fetch_and(&q->sleeping, ~who);
	pthread_mutex_unlock(&q->mu);
	uint64_t dt = now_ns() - t0;
	if (who == PRODUCER) {
		q->p_sleeps++;
		q->p_slept_ns += dt;
	} else {
		q->c_sleeps++;
		q->c_slept_ns += dt;
	}
}

static unsigned char *block(const struct vms_spsc *q, uint64_t i)
{
	return q->mem + (size_t)(i % q->nb) * q->bsize;
}

/* the block being filled, its bytes up to c->cur, handed over (not when empty or none) */
static void hand_over(struct vms_spsc *q, struct vms_spsc_cursor *c)
{
	if (!c->cur || c->cur == block(q, q->p_head))
		return;
	q->used[q->p_head % q->nb] = (size_t)(c->cur - block(q, q->p_head));
	q->p_head++;
	atomic_store(&q->head, q->p_head);
	if (q->p_head - atomic_load(&q->tail) >= q->batch || atomic_load(&q->urgent))
		wake(q, CONSUMER);
}

static void start_block(struct vms_spsc *q, struct vms_spsc_cursor *c)
{
	c->cur = block(q, q->p_head);
	c->end = c->cur + q->bsize;
}

void vms_spsc_more(struct vms_spsc *q, struct vms_spsc_cursor *c)
{
	hand_over(q, c);
	if (!room(q))
		wait_until(q, PRODUCER, room);
	start_block(q, c);
}

void vms_spsc_drain(struct vms_spsc *q, struct vms_spsc_cursor *c)
{
	atomic_store(&q->urgent, true);
	hand_over(q, c);
	wake(q, CONSUMER);
	if (!all_released(q))
		wait_until(q, PRODUCER, all_released);
	atomic_store(&q->urgent, false);
	if (c->cur)
		start_block(q, c);   /* (free: every block is) */
}

void vms_spsc_close(struct vms_spsc *q, struct vms_spsc_cursor *c)
{
	atomic_store(&q->urgent, true);
	hand_over(q, c);
	*c = (struct vms_spsc_cursor){ NULL, NULL };
	atomic_store(&q->closed, true);
	wake(q, CONSUMER);
}

const void *vms_spsc_next(struct vms_spsc *q, size_t *len)
{
	if (atomic_load_explicit(&q->head, memory_order_acquire) == q->c_tail) {
		wait_until(q, CONSUMER, ready);
		if (atomic_load(&q->head) == q->c_tail)
			return NULL;   /* closed, and every block taken */
	}
	unsigned i = (unsigned)(q->c_tail % q->nb);
	*len = q->used[i];
	return q->mem + (size_t)i * q->bsize;
}

void vms_spsc_release(struct vms_spsc *q)
{
	q->c_tail++;
	atomic_store(&q->tail, q->c_tail);
	wake(q, PRODUCER);
}

void vms_spsc_sleeps(const struct vms_spsc *q, struct vms_spsc_sleeps *producer,
		     struct vms_spsc_sleeps *consumer)
{
	*producer = (struct vms_spsc_sleeps){ q->p_sleeps, q->p_slept_ns };
	*consumer = (struct vms_spsc_sleeps){ q->c_sleeps, q->c_slept_ns };
}

double vms_thread_cpu_s(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return -1;
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void vms_spsc_print_stats(const struct vms_spsc *q, const char *what, const char *producer,
			  double cpu1, const char *consumer, double cpu2)
{
	struct vms_spsc_sleeps w1, w2;
	vms_spsc_sleeps(q, &w1, &w2);
	fprintf(stderr, "vmscope %s: %s %.2f s CPU, waited %lu times (%.2f s) for %s; %s %.2f s "
		"CPU, waited %lu times (%.2f s) for %s\n", what, producer, cpu1, w1.n,
		(double)w1.ns * 1e-9, consumer, consumer, cpu2, w2.n, (double)w2.ns * 1e-9, producer);
}
