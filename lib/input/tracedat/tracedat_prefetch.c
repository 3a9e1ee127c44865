/* trace.dat: the prefetch thread. Decompression is most of the cost of reading a compressed
 * trace.dat (zstd at ~1 GB/s against a record parser several times faster), so one thread
 * per source decompresses, for every stream, the chunks after the one being parsed, while the
 * reading thread parses: the thread, with only zstd to do, is normally ahead (the reader
 * once decompressed the even streams itself while the thread took the odd ones; with the
 * thread ahead on all of them, report on the 5 M-event synthesized pair took ~8 % less wall
 * time). The reader takes a ready chunk by swapping buffers; otherwise it decompresses the
 * chunk itself (dropping the thread's copy if one is under way) and never waits, so a busy
 * machine that starves the thread costs no more than reading single-threaded.
 *
 * Everything shared (each stream's claim cursor and slots, the thread's flags) is under
 * pf.mu; a slot's buffer belongs to the thread only while it is FILLING. Chunks are numbered
 * per stream: claim_seq is the next the cursor hands out, need_seq the next the reader
 * parses; the thread stays at most TD_PF_DEPTH chunks ahead. */
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "tracedat.h"

#define PREFETCH_MIN_BYTES (1u << 20) /* below this, a thread is not worth starting */

/* Prefetch threads in the process. More of them than spare cores only take turns with the
 * reading thread, so the chunks they were asked for arrive late and are decompressed twice
 * (a host + guest pair on 2 cores ran 30 % slower with a thread per file). The first large
 * source opened (the host, normally the largest) gets the thread. */
static atomic_int prefetch_threads;

static int prefetch_limit(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 1 ? (int)(n - 1) : 0;
}

static struct td_pf_slot *free_slot(struct td_stream *s)
{
	if (s->claim_seq - s->need_seq >= TD_PF_DEPTH)
		return NULL;
	for (int i = 0; i < TD_PF_DEPTH; i++)
		if (s->pf[i].state == TD_PF_EMPTY)
			return &s->pf[i];
	return NULL;
}

static void *prefetch_main(void *arg)
{
	struct td_source *ts = arg;
	struct td_prefetch *pf = &ts->pf;
	pthread_mutex_lock(&pf->mu);
	while (!pf->stop) {
		struct td_stream *s = NULL;
		struct td_pf_slot *slot = NULL;
		if (!pf->paused)
			for (uint32_t i = 0; i < ts->nr_streams; i++) {
				uint32_t k = (pf->rr + i) % ts->nr_streams;
				struct td_stream *c = &ts->streams[k];
				if (!c->compressed || !c->started || c->chunks_left == 0)
					continue;
				if ((slot = free_slot(c))) {
					s = c;
					pf->rr = (pf->rr + i + 1) % ts->nr_streams;
					break;
				}
			}
		if (!s) {
			pthread_cond_wait(&pf->work, &pf->mu);
			continue;
		}
		uint64_t at;
		uint32_t csize, usize;
		vms_error_clear(&slot->err);
		slot->seq = s->claim_seq;
		slot->discard = false;
		int r = td_claim_chunk(ts, s, &slot->err, &at, &csize, &usize);
		if (r > 0)
			r = td_chunk_room(ts, &slot->buf, &slot->cap, usize, at, &slot->err);
		if (r < 0) {
			/* reported when the reader gets to this chunk, after the ones before */
			slot->state = TD_PF_ERROR;
			s->chunks_left = 0;
			continue;
		}
		slot->state = TD_PF_FILLING;
		slot->off = at;
		slot->len = usize;
		slot->csize = csize;
		pf->filling++;
		uint8_t *dst = slot->buf;
		pthread_mutex_unlock(&pf->mu);
		r = td_decompress_with(&ts->f, &pf->dc, &slot->err, ts->f.base + at + 8, csize, dst,
				       usize, at + 8);
		pthread_mutex_lock(&pf->mu);
		pf->filling--;
		if (slot->discard) {
			/* the reader decompressed this chunk itself meanwhile */
			slot->discard = false;
			slot->state = TD_PF_EMPTY;
		} else {
			slot->state = r < 0 ? TD_PF_ERROR : TD_PF_READY;
			if (r < 0)
				s->chunks_left = 0;
		}
		pthread_cond_broadcast(&pf->done);
	}
	pthread_mutex_unlock(&pf->mu);
	return NULL;
}

void td_prefetch_start(struct td_source *ts)
{
	struct td_prefetch *pf = &ts->pf;
	const char *e = getenv("VMS_TRACEDAT_THREADS");
	if (e && strcmp(e, "0") == 0)
		return; /* single-threaded reading, for measurements */
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < ts->nr_streams; i++)
		if (ts->streams[i].compressed)
			bytes += ts->streams[i].avail;
	if (bytes < PREFETCH_MIN_BYTES)
		return;
	if (atomic_fetch_add(&prefetch_threads, 1) >= prefetch_limit()) {
		atomic_fetch_sub(&prefetch_threads, 1);
		return;
	}
	if (pthread_mutex_init(&pf->mu, NULL) != 0) {
		atomic_fetch_sub(&prefetch_threads, 1);
		return;
	}
	if (pthread_cond_init(&pf->work, NULL) != 0) {
		pthread_mutex_destroy(&pf->mu);
		atomic_fetch_sub(&prefetch_threads, 1);
		return;
	}
	if (pthread_cond_init(&pf->done, NULL) != 0) {
		pthread_cond_destroy(&pf->work);
		pthread_mutex_destroy(&pf->mu);
		atomic_fetch_sub(&prefetch_threads, 1);
		return;
	}
	pf->stop = pf->paused = false;
	if (pthread_create(&pf->thread, NULL, prefetch_main, ts) != 0) {
		/* no thread: the reader decompresses by itself */
		pthread_cond_destroy(&pf->done);
		pthread_cond_destroy(&pf->work);
		pthread_mutex_destroy(&pf->mu);
		atomic_fetch_sub(&prefetch_threads, 1);
		return;
	}
	pf->running = true;
}

int td_prefetch_take(struct td_source *ts, struct td_stream *s, uint64_t *at, uint32_t *usize)
{
	struct td_prefetch *pf = &ts->pf;
	pthread_mutex_lock(&pf->mu);
	struct td_pf_slot *slot = NULL;
	for (int i = 0; i < TD_PF_DEPTH; i++)
		if (s->pf[i].state != TD_PF_EMPTY && !s->pf[i].discard &&
		    s->pf[i].seq == s->need_seq)
			slot = &s->pf[i];
	if (slot && slot->state == TD_PF_READY) {
		uint8_t *b = s->chunk;
		uint32_t c = s->chunk_cap;
		s->chunk = slot->buf;
		s->chunk_cap = slot->cap;
		slot->buf = b;
		slot->cap = c;
		*at = slot->off;
		*usize = slot->len;
		slot->state = TD_PF_EMPTY;
		s->need_seq++;
		pthread_cond_signal(&pf->work);
		pthread_mutex_unlock(&pf->mu);
		return 1;
	}
	if (slot && slot->state == TD_PF_ERROR) {
		int st = vms_error_set(&ts->src.err, slot->err.status ? slot->err.status
				       : VMS_ERR_FORMAT, "%s", slot->err.msg);
		pthread_mutex_unlock(&pf->mu);
		return st;
	}
	uint32_t csize;
	int r;
	if (slot) {
		/* FILLING: the thread is decompressing the very chunk needed now. Never wait for
		 * it (a thread preempted by another process would stall the reader): decompress
		 * it here too and let the thread drop its copy. */
		slot->discard = true;
		*at = slot->off;
		*usize = slot->len;
		csize = slot->csize;
		r = 1;
	} else {
		/* not claimed yet: claim it here and let the thread take the ones after */
		r = td_claim_chunk(ts, s, &ts->src.err, at, &csize, usize);
		if (r > 0)
			pthread_cond_signal(&pf->work);
	}
	if (r > 0)
		s->need_seq++;
	pthread_mutex_unlock(&pf->mu);
	if (r <= 0)
		return r;
	int e = td_chunk_room(ts, &s->chunk, &s->chunk_cap, *usize, *at, &ts->src.err);
	if (e == 0)
		e = td_decompress(&ts->f, ts->f.base + *at + 8, csize, s->chunk, *usize, *at + 8);
	return e < 0 ? e : 1;
}

void td_prefetch_rewind(struct td_source *ts)
{
	struct td_prefetch *pf = &ts->pf;
	if (!pf->running) {
		for (uint32_t i = 0; i < ts->nr_streams; i++)
			td_stream_reset(&ts->streams[i]);
		return;
	}
	pthread_mutex_lock(&pf->mu);
	pf->paused = true;
	while (pf->filling)
		pthread_cond_wait(&pf->done, &pf->mu);
	for (uint32_t i = 0; i < ts->nr_streams; i++)
		td_stream_reset(&ts->streams[i]);
	pf->paused = false;
	pthread_cond_signal(&pf->work);
	pthread_mutex_unlock(&pf->mu);
}

void td_prefetch_stop(struct td_source *ts)
{
	struct td_prefetch *pf = &ts->pf;
	if (!pf->running)
		return;
	pthread_mutex_lock(&pf->mu);
	pf->stop = true;
	pthread_cond_broadcast(&pf->work);
	pthread_mutex_unlock(&pf->mu);
	pthread_join(pf->thread, NULL);
	pthread_cond_destroy(&pf->done);
	pthread_cond_destroy(&pf->work);
	pthread_mutex_destroy(&pf->mu);
	td_dctx_free(&pf->dc);
	pf->running = false;
	atomic_fetch_sub(&prefetch_threads, 1);
}
