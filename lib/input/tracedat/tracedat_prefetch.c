/* trace.dat: the streams' chunks decompressed ahead by the readers' worker pool
 * (lib/core/pool.c). Decompression is most of the cost of reading a compressed trace.dat
 * (zstd at ~1 GB/s against a record parser several times faster), so the pool's workers
 * decompress, for every stream, the chunks after the one being parsed while the reading
 * thread parses and the analyses run. Each stream has TD_PF_DEPTH slots: a bounded queue of
 * chunks ahead, so memory is (1 + TD_PF_DEPTH) chunks per stream whatever the trace length.
 *
 * A chunk is decompressed once. The reader takes a ready chunk by swapping buffers; a chunk
 * a worker is decompressing it waits for (before the pool, the reader decompressed such a
 * chunk again itself so as never to wait, and on the 2.43 M-event sched-syscalls trace the
 * two threads burnt 25-33 % more CPU than one); a chunk no worker has claimed yet it claims
 * and decompresses itself, so a starved pool costs no more than reading alone.
 *
 * Everything shared (each stream's claim cursor and slots) is under the pool's lock; a
 * slot's buffer belongs to a worker only while it is FILLING. Chunks are numbered per
 * stream: claim_seq is the next the cursor hands out, need_seq the next the reader parses;
 * the workers stay at most TD_PF_DEPTH chunks ahead. */
#include <stddef.h>
#include <stdlib.h>

#include "tracedat.h"

#define PREFETCH_MIN_BYTES (1u << 20) /* below this, the pool is not worth joining */

static struct td_source *client_source(struct vms_pool_client *c)
{
	return (struct td_source *)((char *)c - offsetof(struct td_source, pf.pc));
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

/* Under the lock: the next chunk of some stream, round robin over the streams. */
static int pf_claim(struct vms_pool_client *c, void **job)
{
	struct td_source *ts = client_source(c);
	struct td_prefetch *pf = &ts->pf;
	for (uint32_t i = 0; i < ts->nr_streams; i++) {
		uint32_t k = (pf->rr + i) % ts->nr_streams;
		struct td_stream *s = &ts->streams[k];
		if (!s->compressed || !s->started || s->chunks_left == 0)
			continue;
		struct td_pf_slot *slot = free_slot(s);
		if (!slot)
			continue;
		pf->rr = (k + 1) % ts->nr_streams;
		uint64_t at;
		uint32_t csize, usize;
		vms_error_clear(&slot->err);
		slot->seq = s->claim_seq;
		slot->stream = k;
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
		*job = slot;
		return 1;
	}
	return 0;
}

/* A claimed slot's chunk decompressed with dc (a worker's, or the reader's own), unlocked */
static void slot_fill(struct td_source *ts, struct td_pf_slot *slot, struct td_dctx *dc)
{
	atomic_fetch_add(&ts->decompressions, 1);
	slot->result = td_decompress_with(&ts->f, dc, &slot->err, ts->f.base + slot->off + 8,
					  slot->csize, slot->buf, slot->len, slot->off + 8);
}

static void pf_run(struct vms_pool_client *c, void *job, unsigned worker)
{
	struct td_source *ts = client_source(c);
	slot_fill(ts, job, &ts->pf.dc[worker]);
}

static void pf_finish(struct vms_pool_client *c, void *job)
{
	struct td_source *ts = client_source(c);
	struct td_pf_slot *slot = job;
	slot->state = slot->result < 0 ? TD_PF_ERROR : TD_PF_READY;
	if (slot->result < 0)
		ts->streams[slot->stream].chunks_left = 0;
}

void td_prefetch_start(struct td_source *ts)
{
	struct td_prefetch *pf = &ts->pf;
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < ts->nr_streams; i++)
		if (ts->streams[i].compressed)
			bytes += ts->streams[i].avail;
	/* VMS_TRACEDAT_POOL_MIN=BYTES: the tests run small (hostile) files through the pool */
	const char *e = getenv("VMS_TRACEDAT_POOL_MIN");
	uint64_t min = e && *e ? strtoull(e, NULL, 10) : PREFETCH_MIN_BYTES;
	if (bytes < min || vms_pool_threads() < 2)
		return;
	/* one decompression context per worker, made by its first use */
	unsigned most = vms_pool_threads() - 1;
	pf->dc = calloc(most, sizeof *pf->dc);
	if (!pf->dc)
		return; /* the reader decompresses by itself */
	pf->pc.claim = pf_claim;
	pf->pc.run = pf_run;
	pf->pc.finish = pf_finish;
	unsigned n = vms_pool_join(&pf->pc);
	if (n == 0 || n > most) {
		/* no worker, or a pool started earlier with more workers than this source has
		 * contexts for: read alone */
		vms_pool_leave(&pf->pc);
		free(pf->dc);
		pf->dc = NULL;
		return;
	}
	pf->nr_dc = most;
	pf->running = true;
}

int td_prefetch_take(struct td_source *ts, struct td_stream *s, uint64_t *at, uint32_t *usize)
{
	vms_pool_lock();
	struct td_pf_slot *slot;
	for (;;) {
		slot = NULL;
		for (int i = 0; i < TD_PF_DEPTH; i++)
			if (s->pf[i].state != TD_PF_EMPTY && s->pf[i].seq == s->need_seq)
				slot = &s->pf[i];
		if (!slot || slot->state != TD_PF_FILLING)
			break;
		/* a worker is decompressing the very chunk needed now: never decompress it a
		 * second time; meanwhile do a worker's job (a later chunk) if there is one, else
		 * wait. Once the analyses leave most records out (skip_unread) the reader parses
		 * a chunk in half the time a worker decompresses one: waiting for each cost a
		 * sleep and a wake-up per chunk, and --threads 2 ran slower than 1 */
		void *job;
		if (!ts->pf.pc.paused && pf_claim(&ts->pf.pc, &job) > 0) {
			ts->pf.pc.running++;
			vms_pool_unlock();
			slot_fill(ts, job, &ts->f.dc);
			vms_pool_lock();
			pf_finish(&ts->pf.pc, job);
			ts->pf.pc.running--;
			continue;
		}
		vms_pool_wait();
	}
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
		if (s->claim_seq - s->need_seq <= TD_PF_DEPTH / 2)
			vms_pool_kick(); /* see TD_PF_DEPTH */
		vms_pool_unlock();
		return 1;
	}
	if (slot) { /* TD_PF_ERROR */
		int st = vms_error_set(&ts->src.err, slot->err.status ? slot->err.status
				       : VMS_ERR_FORMAT, "%s", slot->err.msg);
		vms_pool_unlock();
		return st;
	}
	/* not claimed yet: claim it here and let the workers take the ones after */
	uint32_t csize;
	int r = td_claim_chunk(ts, s, &ts->src.err, at, &csize, usize);
	if (r > 0) {
		s->need_seq++;
		vms_pool_kick();
	}
	vms_pool_unlock();
	if (r <= 0)
		return r;
	int e = td_chunk_room(ts, &s->chunk, &s->chunk_cap, *usize, *at, &ts->src.err);
	if (e == 0) {
		atomic_fetch_add(&ts->decompressions, 1);
		e = td_decompress(&ts->f, ts->f.base + *at + 8, csize, s->chunk, *usize, *at + 8);
	}
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
	vms_pool_lock();
	vms_pool_quiesce(&pf->pc);
	for (uint32_t i = 0; i < ts->nr_streams; i++)
		td_stream_reset(&ts->streams[i]);
	vms_pool_resume(&pf->pc);
	vms_pool_unlock();
}

void td_prefetch_stop(struct td_source *ts)
{
	struct td_prefetch *pf = &ts->pf;
	if (!pf->running)
		return;
	vms_pool_leave(&pf->pc);
	for (unsigned i = 0; i < pf->nr_dc; i++)
		td_dctx_free(&pf->dc[i]);
	free(pf->dc);
	pf->dc = NULL;
	pf->nr_dc = 0;
	pf->running = false;
}
