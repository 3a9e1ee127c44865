/* trace.dat: a stream's position and the way back to it, for checkpoints (issue 21: a
 * window replays from the nearest checkpoint instead of from the start of the trace).
 *
 * A position names the record next() returned last on the stream: its chunk (the index
 * among the stream's compressed chunks; uncompressed data is one region), its page (the
 * page's offset in the chunk or region), the record's header within the page, and the
 * stream state the parser carries from record to record: the running time stamp before the
 * record's delta (time-extend and absolute-time records before it already applied), the
 * previous record's time (for VMS_EVF_TIME_BACKWARDS), whether the record carried
 * VMS_EVF_LOST_BEFORE, and the page's number (lost-event pages are counted once per page).
 * Seek decompresses only that chunk, parses that page and restarts the parser at that
 * record, so that next() returns it again and then what the uninterrupted read returns;
 * with the worker pool, the workers' prefetch restarts from the chunk after it.
 *
 * Words: w[0] TD_POS_TAG | stream << 8 | flags, w[1] chunk, w[2] page offset, w[3] record
 * header offset in the page's data, w[4] time before the record, w[5] previous record's
 * time, w[6] page number, w[7] lost-before. Everything is checked on seek: a position read
 * back from a file is untrusted. */
#include "tracedat.h"

#define TD_POS_TAG (0x7464706fULL << 32) /* "tdpo" */
#define TD_POS_TAG_MASK (0xffffffffULL << 32)
#define TD_POS_STARTED 1u

int td_tell(struct vms_source *src, uint32_t stream, struct vms_stream_pos *pos)
{
	struct td_source *ts = (struct td_source *)src;
	memset(pos, 0, sizeof *pos);
	if (stream >= ts->nr_streams)
		return vms_error_set(&src->err, VMS_ERR_USAGE, "%s: no stream %u", src->path, stream);
	const struct td_stream *s = &ts->streams[stream];
	pos->w[0] = TD_POS_TAG | (uint64_t)stream << 8;
	if (!s->last_rec)
		return 0; /* nothing returned yet: the start of the stream */
	const uint8_t *pg = s->page;
	uint32_t delta = td_rd32(&ts->f, pg + s->rec_at) >> 5;
	pos->w[0] |= TD_POS_STARTED;
	pos->w[1] = s->compressed ? s->chunks_taken - 1 : 0;
	pos->w[2] = (uint64_t)(pg - ts->fm.data_off - s->region);
	pos->w[3] = s->rec_at;
	pos->w[4] = s->ts - delta;
	pos->w[5] = s->prev_ts;
	pos->w[6] = s->page_index;
	pos->w[7] = s->rec_lost;
	return 0;
}

static int bad(struct td_source *ts, struct td_stream *s, uint32_t stream, const char *what)
{
	s->error = vms_error_set(&ts->src.err, VMS_ERR_FORMAT, "%s: stream %u: bad position: %s",
				 ts->src.path, stream, what);
	return s->error;
}

/* The stream back at its start with its cursor past `chunk` chunk headers (each checked as
 * the reader checks them); with the pool, under its lock with this source's jobs paused. */
static int restart_at_chunk(struct td_source *ts, struct td_stream *s, uint32_t stream,
			    uint64_t chunk)
{
	bool pool = ts->pf.running;
	if (pool) {
		vms_pool_lock();
		vms_pool_quiesce(&ts->pf.pc);
	}
	td_stream_reset(s);
	int r = td_stream_start(ts, s, pool);
	for (uint64_t i = 0; r >= 0 && i < chunk; i++) {
		uint64_t at;
		uint32_t csize, usize;
		r = td_claim_chunk(ts, s, &ts->src.err, &at, &csize, &usize);
		if (r == 0)
			r = bad(ts, s, stream, "chunk beyond the stream's chunks");
		/* the headers walked are dropped from the mapping as the reader drops what it
		 * read: a seek deep into a large trace would keep every page before it resident */
		td_file_release(&ts->f, &s->released, s->next_chunk);
	}
	if (r >= 0 && chunk && s->chunks_left == 0)
		r = bad(ts, s, stream, "chunk beyond the stream's chunks");
	if (r < 0 && !s->error)
		s->error = r;
	s->need_seq = s->claim_seq;
	if (pool) {
		vms_pool_resume(&ts->pf.pc);
		vms_pool_unlock();
	}
	return r < 0 ? r : 0;
}

int td_seek(struct vms_source *src, uint32_t stream, const struct vms_stream_pos *pos)
{
	struct td_source *ts = (struct td_source *)src;
	if (stream >= ts->nr_streams)
		return vms_error_set(&src->err, VMS_ERR_USAGE, "%s: no stream %u", src->path, stream);
	struct td_stream *s = &ts->streams[stream];
	const uint64_t *w = pos->w;
	if ((w[0] & TD_POS_TAG_MASK) != TD_POS_TAG)
		return bad(ts, s, stream, "not a trace.dat position");
	if (((w[0] >> 8) & 0xffffffu) != stream)
		return bad(ts, s, stream, "the position of another stream");
	if (w[0] & 0xfe)
		return bad(ts, s, stream, "unknown flags");
	bool started = w[0] & TD_POS_STARTED;
	if (!started) {
		for (int i = 1; i < VMS_POS_WORDS; i++)
			if (w[i])
				return bad(ts, s, stream, "the start of a stream with a place in it");
		return restart_at_chunk(ts, s, stream, 0);
	}
	if (!s->compressed && w[1] != 0)
		return bad(ts, s, stream, "a chunk in uncompressed data");
	if (w[6] == 0 || w[7] > 1)
		return bad(ts, s, stream, "page number 0 or lost flag not 0/1");
	if (s->data_size == 0)
		return bad(ts, s, stream, "a record in a stream without data");
	int r = restart_at_chunk(ts, s, stream, w[1]);
	if (r < 0)
		return r;
	if (s->compressed) {
		r = td_next_chunk(ts, s);
		if (r <= 0)
			return r < 0 ? r : bad(ts, s, stream, "chunk beyond the stream's chunks");
	}
	if (w[2] >= s->region_len || w[2] % s->page_size != 0)
		return bad(ts, s, stream, "page offset outside the chunk or not at a page");
	s->region_pos = w[2];
	s->page_index = w[6] - 1;
	r = td_next_page(ts, s);
	if (r < 0)
		return r;
	if (r == 0 || s->page != s->region + w[2] + ts->fm.data_off)
		return bad(ts, s, stream, "a page without records");
	if (w[3] >= s->page_len || w[3] % 4 != 0)
		return bad(ts, s, stream, "record offset past the page's data");
	s->pos = (uint32_t)w[3];
	s->ts = w[4];
	s->last_ts = w[5];
	s->lost_pending = w[7] != 0;
	return 0;
}
