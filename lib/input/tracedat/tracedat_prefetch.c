/* trace.dat: the prefetch thread. Decompression is most of the cost of reading a compressed
 * trace.dat (zstd at ~1 GB/s against a record parser several times faster), so one thread
 * per source decompresses, for the odd streams (or the only one), the chunk after the one
 * being parsed, while the reading thread decompresses the even streams' chunks itself: both
 * cores decompress, and the reader (which also parses) seldom waits for the thread. The
 * reader takes a ready chunk by swapping buffers, waits for one being filled, or — when the
 * thread has not got to that stream yet — claims and decompresses the chunk itself.
 *
 * Everything shared (each stream's claim cursor and prefetch slot, the thread's flags) is
 * under pf.mu; the slot's buffer belongs to the thread only while it is FILLING. */
#include <stdlib.h>

#include "tracedat.h"

#define PREFETCH_MIN_BYTES (1u << 20) /* below this, a thread is not worth starting */

static void *prefetch_main(void *arg)
{
	struct td_source *ts = arg;
	struct td_prefetch *pf = &ts->pf;
	pthread_mutex_lock(&pf->mu);
	while (!pf->stop) {
		struct td_stream *s = NULL;
		if (!pf->paused)
			for (uint32_t i = 0; i < ts->nr_streams; i++) {
				uint32_t k = (pf->rr + i) % ts->nr_streams;
				struct td_stream *c = &ts->streams[k];
				/* odd streams only (all when there is one): the reader decompresses
				 * the even ones itself, so neither waits on the other for long */
				if (ts->nr_streams > 1 && !(k & 1))
					continue;
				if (c->compressed && c->started && c->pf_state == TD_PF_EMPTY &&
				    c->chunks_left > 0) {
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
		vms_error_clear(&s->pf_err);
		int r = td_claim_chunk(ts, s, &s->pf_err, &at, &csize, &usize);
		if (r > 0)
			r = td_chunk_room(ts, &s->pf_buf, &s->pf_cap, usize, &s->pf_err);
		if (r < 0) {
			s->pf_state = TD_PF_ERROR;
			s->chunks_left = 0;
			pthread_cond_broadcast(&pf->done);
			continue;
		}
		s->pf_state = TD_PF_FILLING;
		s->pf_off = at;
		s->pf_len = usize;
		pf->filling++;
		uint8_t *dst = s->pf_buf;
		pthread_mutex_unlock(&pf->mu);
		r = td_decompress_with(&ts->f, &pf->dc, &s->pf_err, ts->f.base + at + 8, csize, dst,
				       usize, at + 8);
		pthread_mutex_lock(&pf->mu);
		pf->filling--;
		s->pf_state = r < 0 ? TD_PF_ERROR : TD_PF_READY;
		if (r < 0)
			s->chunks_left = 0;
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
	if (pthread_mutex_init(&pf->mu, NULL) != 0)
		return;
	if (pthread_cond_init(&pf->work, NULL) != 0) {
		pthread_mutex_destroy(&pf->mu);
		return;
	}
	if (pthread_cond_init(&pf->done, NULL) != 0) {
		pthread_cond_destroy(&pf->work);
		pthread_mutex_destroy(&pf->mu);
		return;
	}
	pf->stop = pf->paused = false;
	if (pthread_create(&pf->thread, NULL, prefetch_main, ts) != 0) {
		/* no thread: the reader decompresses by itself */
		pthread_cond_destroy(&pf->done);
		pthread_cond_destroy(&pf->work);
		pthread_mutex_destroy(&pf->mu);
		return;
	}
	pf->running = true;
}

int td_prefetch_take(struct td_source *ts, struct td_stream *s, uint64_t *at, uint32_t *usize)
{
	struct td_prefetch *pf = &ts->pf;
	pthread_mutex_lock(&pf->mu);
	while (s->pf_state == TD_PF_FILLING)
		pthread_cond_wait(&pf->done, &pf->mu);
	if (s->pf_state == TD_PF_READY) {
		uint8_t *b = s->chunk;
		uint32_t c = s->chunk_cap;
		s->chunk = s->pf_buf;
		s->chunk_cap = s->pf_cap;
		s->pf_buf = b;
		s->pf_cap = c;
		*at = s->pf_off;
		*usize = s->pf_len;
		s->pf_state = TD_PF_EMPTY;
		pthread_cond_signal(&pf->work);
		pthread_mutex_unlock(&pf->mu);
		return 1;
	}
	if (s->pf_state == TD_PF_ERROR) {
		int st = vms_error_set(&ts->src.err, s->pf_err.status ? s->pf_err.status
				       : VMS_ERR_FORMAT, "%s", s->pf_err.msg);
		pthread_mutex_unlock(&pf->mu);
		return st;
	}
	/* EMPTY: the thread has not got here; claim this chunk and let it take the next */
	uint32_t csize;
	int r = td_claim_chunk(ts, s, &ts->src.err, at, &csize, usize);
	if (r > 0)
		pthread_cond_signal(&pf->work);
	pthread_mutex_unlock(&pf->mu);
	if (r <= 0)
		return r;
	int e = td_chunk_room(ts, &s->chunk, &s->chunk_cap, *usize, &ts->src.err);
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
}
