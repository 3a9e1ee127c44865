/* trace.dat: the hot path. One stream = one CPU of one buffer: its data is a run of
 * ring-buffer pages, either in place in the mapping (uncompressed) or in a series of
 * compressed chunks decompressed one at a time into a per-stream buffer (memory constant).
 *
 * Pages are parsed here rather than with libtraceevent's kbuffer: kbuffer trusts the page
 * (a type_len 0 length or a padding length is followed without a bound, the commit size is
 * not checked against the page) and reads every word through function pointers, which costs
 * more than the rest of the reader. This parser follows kbuffer's semantics (time extend,
 * absolute time stamps keeping the 5 MSBs, padding deltas, missed-event flags) and checks
 * every length against the page commit before use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#include "tracedat.h"

#define COMMIT_MASK ((1u << 27) - 1)
#define MISSED_EVENTS (1ull << 31)
#define MISSED_STORED (1ull << 30)
#define TS_SHIFT 27
#define TS_MSB (0xf8ull << 56)

enum { RB_PADDING = 29, RB_TIME_EXTEND = 30, RB_TIME_STAMP = 31 };

void td_stream_reset(struct td_stream *s)
{
	s->chunks_left = 0;
	s->next_chunk = 0;
	s->released = 0;
	s->chunk_len = 0;
	s->chunk_off = 0;
	s->region = NULL;
	s->region_len = s->region_pos = 0;
	s->region_file_off = 0;
	s->uncomp_pos = 0;
	s->page = NULL;
	s->page_len = s->pos = 0;
	s->ts = 0;
	s->page_index = 0;
	s->lost_pending = false;
	s->started = false;
	s->done = false;
	s->error = 0;
	s->last_ts = 0;
	s->last_rec = NULL;
	s->last_len = 0;
	s->last_type = 0;
	s->last_serial = 0;
	s->chunks_taken = 0;
	s->returned = s->held = false;
	for (int i = 0; i < TD_PF_DEPTH; i++) {
		s->pf[i].state = TD_PF_EMPTY;
		vms_error_clear(&s->pf[i].err);
	}
	s->claim_seq = s->need_seq = 0;
}

static int stream_fail_to(struct vms_error *err, const struct td_source *ts,
			  const struct td_stream *s, uint64_t off, const char *what)
{
	const char *b = ts->buffers[s->buffer].name;
	return td_fail_to(err, &ts->f, off, "CPU %u%s%s%s: %s", s->cpu, b[0] ? " of buffer '" : "",
			  b, b[0] ? "'" : "", what);
}

static int stream_fail(struct td_source *ts, struct td_stream *s, uint64_t off,
		       const char *what)
{
	s->error = stream_fail_to(&ts->src.err, ts, s, off, what);
	return s->error;
}

/* Marks the stream started (and sets its chunk cursor): shared with the pool's workers
 * (`locked`: the caller holds the pool's lock). */
static void mark_started(struct td_source *ts, struct td_stream *s, uint32_t chunks,
			 uint64_t next, bool locked)
{
	bool lock = ts->pf.running && !locked;
	if (lock)
		vms_pool_lock();
	s->chunks_left = chunks;
	s->next_chunk = next;
	s->started = true;
	ts->chunks += chunks;
	if (ts->pf.running && chunks)
		vms_pool_kick();
	if (lock)
		vms_pool_unlock();
}

int td_stream_start(struct td_source *ts, struct td_stream *s, bool locked)
{
	mark_started(ts, s, 0, 0, locked);
	if (s->data_size == 0) {
		s->done = true;
		return 0;
	}
	if (s->avail == 0)
		return stream_fail(ts, s, s->data_off < ts->f.size ? s->data_off : ts->f.size,
				   "data cut by the end of the file");
	if (!s->compressed) {
		s->region = ts->f.base + s->data_off;
		s->region_len = s->avail;
		s->region_file_off = s->data_off;
		return 0;
	}
	if (s->avail < 4) {
		if (s->data_size < 4)
			return stream_fail(ts, s, s->data_off, "compressed data too small for its "
					   "chunk count");
		return stream_fail(ts, s, s->data_off + s->avail, "data cut by the end of the file");
	}
	uint32_t count = td_rd32(&ts->f, ts->f.base + s->data_off);
	if ((uint64_t)count * 8 > s->data_size - 4)
		return stream_fail(ts, s, s->data_off, "chunk count exceeds the CPU data size");
	mark_started(ts, s, count, s->data_off + 4, locked);
	return 0;
}

int td_claim_chunk(const struct td_source *ts, struct td_stream *s, struct vms_error *err,
		   uint64_t *at_out, uint32_t *csize_out, uint32_t *usize_out)
{
	const struct td_file *f = &ts->f;
	if (!s->compressed || s->chunks_left == 0)
		return 0;
	uint64_t end_claim = s->data_off + s->data_size;
	uint64_t end_avail = s->data_off + s->avail;
	uint64_t at = s->next_chunk;
	if (at + 8 > end_claim)
		return stream_fail_to(err, ts, s, at, "chunk header runs past the CPU data");
	if (at + 8 > end_avail)
		return stream_fail_to(err, ts, s, end_avail, "data cut by the end of the file");
	uint32_t csize = td_rd32(f, f->base + at), usize = td_rd32(f, f->base + at + 4);
	if (csize > end_claim - at - 8)
		return stream_fail_to(err, ts, s, at, "chunk size runs past the CPU data");
	if (csize > end_avail - at - 8)
		return stream_fail_to(err, ts, s, end_avail, "data cut by the end of the file");
	if (usize > TD_MAX_CHUNK_USIZE || (uint64_t)usize > (uint64_t)csize * TD_MAX_RATIO + (1u << 20))
		return stream_fail_to(err, ts, s, at + 4, "chunk uncompressed size is implausible");
	s->next_chunk = at + 8 + csize;
	s->chunks_left--;
	s->claim_seq++;
	*at_out = at;
	*csize_out = csize;
	*usize_out = usize;
	return 1;
}

int td_chunk_room(struct td_source *ts, uint8_t **buf, uint32_t *cap, uint32_t n,
		  uint64_t off, struct vms_error *err)
{
	if (n <= *cap)
		return 0;
	uint64_t grow = n - *cap;
	uint64_t was = atomic_fetch_add(&ts->chunk_mem, grow);
	if (was + grow > ts->chunk_budget) {
		atomic_fetch_sub(&ts->chunk_mem, grow);
		return td_fail_to(err, &ts->f, off, "decompressed chunks would need more than %llu "
				  "MiB (the bound for a file of %llu bytes)",
				  (unsigned long long)(ts->chunk_budget >> 20),
				  (unsigned long long)ts->f.size);
	}
	uint8_t *nb = realloc(*buf, n);
	if (!nb) {
		atomic_fetch_sub(&ts->chunk_mem, grow);
		return vms_error_nomem_at(err, ts->f.path, off);
	}
	*buf = nb;
	*cap = n;
	return 0;
}

/* Next region of pages: the next decompressed chunk. 1 loaded, 0 no more, <0 error. */
int td_next_chunk(struct td_source *ts, struct td_stream *s)
{
	if (!s->compressed)
		return 0;
	uint64_t at;
	uint32_t usize;
	int r;
	if (ts->pf.running) {
		r = td_prefetch_take(ts, s, &at, &usize);
	} else {
		uint32_t csize;
		r = td_claim_chunk(ts, s, &ts->src.err, &at, &csize, &usize);
		if (r > 0) {
			int e = td_chunk_room(ts, &s->chunk, &s->chunk_cap, usize, at,
						 &ts->src.err);
			if (e == 0) {
				atomic_fetch_add(&ts->decompressions, 1);
				e = td_decompress(&ts->f, ts->f.base + at + 8, csize, s->chunk, usize,
						  at + 8);
			}
			if (e < 0)
				r = e;
		}
	}
	if (r < 0) {
		s->error = r;
		return r;
	}
	if (r == 0)
		return 0;
	s->uncomp_pos += s->region_len;
	s->chunk_off = at;
	td_file_release(&ts->f, &s->released, at);
	s->chunk_len = usize;
	s->chunks_taken++;
	s->region = s->chunk;
	s->region_len = usize;
	s->region_pos = 0;
	return 1;
}

/* File offset for messages about the current page (the chunk's when compressed). */
static uint64_t page_file_off(const struct td_stream *s, uint64_t page_start)
{
	return s->compressed ? s->chunk_off : s->region_file_off + page_start;
}

/* Load the next non-empty page. 1 loaded, 0 end of stream, <0 error. */
int td_next_page(struct td_source *ts, struct td_stream *s)
{
	struct td_file *f = &ts->f;
	const uint32_t doff = ts->fm.data_off;
	for (;;) {
		if (s->region_pos >= s->region_len) {
			if (!s->compressed) {
				if (s->avail < s->data_size)
					return stream_fail(ts, s, s->data_off + s->avail,
							   "data cut by the end of the file");
				s->done = true;
				return 0;
			}
			int r = td_next_chunk(ts, s);
			if (r <= 0) {
				if (r == 0)
					s->done = true;
				return r;
			}
			continue;
		}
		uint64_t start = s->region_pos;
		uint64_t rem = s->region_len - start;
		if (!s->compressed)
			td_file_release(f, &s->released, s->region_file_off + start);
		uint32_t plen = rem < s->page_size ? (uint32_t)rem : s->page_size;
		s->region_pos += plen;
		if (plen < doff) {
			if (!s->compressed && s->avail < s->data_size)
				return stream_fail(ts, s, s->data_off + s->avail,
						   "data cut by the end of the file");
			return stream_fail(ts, s, page_file_off(s, start), "partial page header");
		}
		const uint8_t *pg = s->region + start;
		uint64_t commit = ts->fm.commit_size == 8 ? td_rd64(f, pg + 8) : td_rd32(f, pg + 8);
		uint32_t size = (uint32_t)commit & COMMIT_MASK;
		if (size > plen - doff) {
			if (!s->compressed && s->avail < s->data_size && plen < s->page_size)
				return stream_fail(ts, s, s->data_off + s->avail,
						   "data cut by the end of the file");
			char what[96];
			snprintf(what, sizeof what, "page commit size %u exceeds the page (%u bytes)",
				 size, plen - doff);
			return stream_fail(ts, s, page_file_off(s, start) + 8, what);
		}
		s->page_index++;
		if (commit & MISSED_EVENTS) {
			s->lost_pending = true;
			if (s->page_index > s->lost_counted) {
				struct vms_trace_meta *m = &ts->src.meta;
				if ((commit & MISSED_STORED) && (uint64_t)doff + size + ts->fm.commit_size <= plen)
					m->lost_events += ts->fm.commit_size == 8
						? td_rd64(f, pg + doff + size)
						: td_rd32(f, pg + doff + size);
				else
					m->lost_events_unknown = true;
			}
		}
		if (s->page_index > s->lost_counted)
			s->lost_counted = s->page_index;
		if (size == 0)
			continue;
		s->ts = td_rd64(f, pg);
		s->page = pg + doff;
		s->page_len = size;
		s->pos = 0;
		return 1;
	}
}

static inline uint64_t get_num(const struct td_file *f, const uint8_t *rec, uint32_t len,
			       struct td_field fd)
{
	if (!(fd.flags & TD_F_PRESENT) || (uint32_t)fd.off + fd.size > len)
		return 0;
	const uint8_t *p = rec + fd.off;
	bool sg = fd.flags & TD_F_SIGNED;
	switch (fd.size) {
	case 1:
		return sg ? (uint64_t)(int64_t)(int8_t)p[0] : p[0];
	case 2: {
		uint16_t v = td_rd16(f, p);
		return sg ? (uint64_t)(int64_t)(int16_t)v : v;
	}
	case 4: {
		uint32_t v = td_rd32(f, p);
		return sg ? (uint64_t)(int64_t)(int32_t)v : v;
	}
	default:
		return td_rd64(f, p);
	}
}

static inline const char *get_str(const struct td_file *f, const uint8_t *rec, uint32_t len,
				   struct td_field fd, char *dst)
{
	if (!(fd.flags & TD_F_PRESENT))
		return NULL;
	uint32_t off = fd.off, n = fd.size;
	if (fd.flags & TD_F_DYNAMIC) {
		if (off + 4u > len)
			return NULL;
		uint32_t v = td_rd32(f, rec + off);
		n = v >> 16;
		off = (v & 0xffff) + ((fd.flags & TD_F_RELATIVE) ? off + 4u : 0u);
	}
	if (off >= len)
		return NULL;
	if (n > len - off)
		n = len - off;
	if (n > 63)
		n = 63;
	memcpy(dst, rec + off, n);
	dst[n] = '\0';
	return dst;
}

/* The event of a data record: its header fields, and its own fields when its kind is
 * wanted. `back`: its time is before the stream's previous record's. */
static inline void emit(struct td_source *ts, struct td_stream *s, uint32_t stream,
			struct vms_event *ev, uint32_t ti, const uint8_t *rec, uint32_t rlen,
			uint64_t t, uint32_t at, bool back)
{
	const struct td_file *f = &ts->f;
	const struct td_formats *fm = &ts->fm;
	const struct td_type *ty = &fm->types[ti];
	ev->ts = t;
	ev->tid = (fm->common_pid.off + 4u <= rlen)
		? (int32_t)td_rd32(f, rec + fm->common_pid.off) : -1;
	ev->cpu = s->cpu;
	ev->kind = ty->kind;
	ev->type = ti;
	ev->stream = stream;
	ev->flags = back ? VMS_EVF_TIME_BACKWARDS : 0;
	if (s->lost_pending) {
		ev->flags |= VMS_EVF_LOST_BEFORE;
		s->lost_pending = false;
	}
	/* what tell() needs to come back to this record (tracedat_seek.c) */
	s->rec_at = at;
	s->rec_lost = (ev->flags & VMS_EVF_LOST_BEFORE) != 0;
	s->prev_ts = s->last_ts;
	s->last_ts = t;
	s->last_rec = rec;
	s->last_len = rlen;
	s->last_type = ti;
	s->last_serial = ++ts->served;
	s->last_off = s->compressed ? s->chunk_off
		: s->region_file_off + (uint64_t)(rec - s->region);
	s->returned = true;
	s->held = false;
	ev->f[0] = ev->f[1] = ev->f[2] = ev->f[3] = ev->f[4] = 0;
	ev->s[0] = ev->s[1] = NULL;
	if (ty->kind != VMS_K_OTHER && ts->wanted[ty->kind]) {
		for (int i = 0; i < 5; i++)
			if (ty->f[i].flags)
				ev->f[i] = get_num(f, rec, rlen, ty->f[i]);
		if (ty->tid_from_pid)
			ev->f[0] = (uint64_t)(int64_t)ev->tid;
		if (__builtin_expect(ty->mode_plus1, 0))
			ev->f[2] = ev->f[2] ? 2 : 1;
		if (ty->s[0].flags)
			ev->s[0] = get_str(f, rec, rlen, ty->s[0], s->str[0]);
		if (ty->s[1].flags)
			ev->s[1] = get_str(f, rec, rlen, ty->s[1], s->str[1]);
	}
}

/* skip_unread: the held record outlives its page (the next one may reuse or release the
 * memory): its payload is copied once, when the page ends. */
static int hold_copy(struct td_stream *s)
{
	if (!s->held || s->held_rec == s->held_buf)
		return 0;
	if (s->held_len > s->held_cap) {
		uint8_t *nb = realloc(s->held_buf, s->held_len);
		if (!nb)
			return -1;
		s->held_buf = nb;
		s->held_cap = s->held_len;
	}
	if (s->held_len)
		memcpy(s->held_buf, s->held_rec, s->held_len);
	s->held_rec = s->held_buf;
	return 0;
}

int td_stream_next(struct vms_source *src, uint32_t stream, struct vms_event *ev)
{
	struct td_source *ts = (struct td_source *)src;
	if (stream >= ts->nr_streams)
		return vms_error_set(&src->err, VMS_ERR_USAGE, "%s: no stream %u", src->path, stream);
	struct td_stream *s = &ts->streams[stream];
	if (s->error)
		return s->error;
	if (!s->started) {
		int r = td_stream_start(ts, s, false);
		if (r < 0)
			return r;
	}
	const struct td_file *f = &ts->f;
	for (;;) {
		if (s->done)
			return 0;
		const uint8_t *pg = s->page;
		uint32_t pos = s->pos, size = s->page_len;
		uint64_t t = s->ts;
		while (pos + 4 <= size) {
			uint32_t at = pos;
			uint32_t w = td_rd32(f, pg + pos);
			uint32_t tl = w & 31, delta = w >> 5;
			const uint8_t *rec;
			uint32_t rlen;
			if (tl >= 1 && tl <= 28) {
				rlen = tl * 4;
				rec = pg + pos + 4;
				if (rlen > size - pos - 4)
					goto overrun;
				pos += 4 + rlen;
			} else if (tl == 0) {
				if (pos + 8 > size)
					goto overrun;
				uint32_t a = td_rd32(f, pg + pos + 4);
				if (a < 4 || a - 4 > size - pos - 8)
					goto overrun;
				rlen = a - 4;
				rec = pg + pos + 8;
				uint32_t step = (rlen + 3) & ~3u;
				pos += 8 + (step <= size - pos - 8 ? step : size - pos - 8);
			} else if (tl == RB_PADDING) {
				/* a discarded event (length in the next word) or the end of the
				 * page's data; like kbuffer, a padding running past the commit ends
				 * the page */
				if (pos + 8 > size) {
					pos = size;
					break;
				}
				uint32_t l = td_rd32(f, pg + pos + 4);
				t += delta;
				if (l > size - pos - 4) {
					pos = size;
					break;
				}
				pos += 4 + l;
				continue;
			} else {
				if (pos + 8 > size)
					goto overrun;
				uint64_t ext = ((uint64_t)td_rd32(f, pg + pos + 4) << TS_SHIFT) + delta;
				if (tl == RB_TIME_EXTEND)
					t += ext;
				else
					t = ext | (t & TS_MSB);
				pos += 8;
				continue;
			}
			/* a data record */
			t += delta;
			s->pos = pos;
			s->ts = t;
			struct td_formats *fm = &ts->fm;
			uint32_t id = (uint32_t)get_num(f, rec, rlen, fm->common_type);
			uint32_t ti = id < fm->nr_by_id ? fm->by_id[id] : fm->nr_types - 1;
			const struct td_type *ty = &fm->types[ti];
			if (ty->pending) {
				int r = td_formats_resolve(fm, ti, &ts->src.meta, &src->err, f->path);
				if (r < 0)
					return s->error = r;
			}
			bool back = t < s->last_ts;
			/* skip_unread: a record no analysis reads is left out (counted), but held,
			 * as it may be the stream's last; the first and one after lost events are
			 * returned */
			if (ts->skip_counts && ty->kind == VMS_K_OTHER && s->returned &&
			    !s->lost_pending) {
				ts->skip_counts[ti]++;
				(*ts->skip_total)++;
				s->held = true;
				s->held_rec = rec;
				s->held_len = rlen;
				s->held_type = ti;
				s->held_at = at;
				s->held_ts = t;
				s->prev_ts = s->last_ts;
				s->last_ts = t;
				continue;
			}
			emit(ts, s, stream, ev, ti, rec, rlen, t, at, back);
			return 1;
		}
		s->pos = pos;
		s->ts = t;
		if (hold_copy(s) < 0)
			return s->error = vms_error_nomem_at(&src->err, f->path, s->last_off);
		int r = td_next_page(ts, s);
		if (r == 0 && s->held) {
			/* the stream's last record was left out: it is returned after all */
			ts->skip_counts[s->held_type]--;
			(*ts->skip_total)--;
			s->last_ts = s->prev_ts;
			emit(ts, s, stream, ev, s->held_type, s->held_rec, s->held_len, s->held_ts,
			     s->held_at, s->held_ts < s->prev_ts);
			return 1;
		}
		if (r <= 0)
			return r;
		continue;
overrun:
		return stream_fail(ts, s, page_file_off(s, (uint64_t)(pg - s->region) - ts->fm.data_off)
				   + (s->compressed ? 0 : ts->fm.data_off + pos),
				   "ring-buffer record runs past the page commit");
	}
}

/* Records of kind VMS_K_OTHER are left out and counted by type (env VMS_TRACEDAT_SKIP=0
 * turns this off, to compare); turned off, nothing is held any more. */
void td_skip_unread(struct vms_source *src, uint64_t *type_counts, uint64_t *total)
{
	struct td_source *ts = (struct td_source *)src;
	const char *env = getenv("VMS_TRACEDAT_SKIP");
	bool on = type_counts && total && !(env && strcmp(env, "0") == 0);
	ts->skip_counts = on ? type_counts : NULL;
	ts->skip_total = on ? total : NULL;
	for (uint32_t i = 0; i < ts->nr_streams; i++)
		ts->streams[i].held = false;
}

/* Renders the stream's last record into ts->seq (one trace_seq for the source, reset per
 * record: trace_seq_init allocates 4 KiB, which was a fifth of the fuzzer's time). 0, -1
 * when libtraceevent cannot render it (the caller says "unknown event"), or VMS_ERR_NOMEM
 * with src->err set. */
static int render(struct td_source *ts, struct td_stream *s, uint32_t *used)
{
	struct tep_event *tev;
	int r = td_formats_tep_event(&ts->fm, s->last_type, &tev);
	if (r < 0)
		return vms_error_nomem_at(&ts->src.err, ts->f.path, ts->fm.types[s->last_type].off);
	if (!tev)
		return -1;
	/* a zero-padded copy: libtraceevent does not check its reads against the record size
	 * (see TD_PRINT_REC); the buffer is all zero between calls */
	if (!ts->print_rec && !(ts->print_rec = calloc(1, TD_PRINT_REC)))
		return vms_error_nomem_at(&ts->src.err, ts->f.path, s->last_off);
	if (!ts->seq_ready) {
		trace_seq_init(&ts->seq);
		ts->seq_ready = true;
	}
	trace_seq_reset(&ts->seq);
	/* at most half: the zeros after it end any string libtraceevent reads from it */
	uint32_t n = s->last_len < TD_PRINT_REC / 2 ? s->last_len : TD_PRINT_REC / 2;
	memcpy(ts->print_rec, s->last_rec, n);
	struct tep_record rec;
	memset(&rec, 0, sizeof rec);
	rec.ts = s->last_ts;
	rec.cpu = (int)s->cpu;
	rec.size = (int)n;
	rec.data = ts->print_rec;
	/* tep_print_event finds the event by the record's type as libtraceevent reads it (from
	 * the common fields of the format it parsed first), which a damaged file may make
	 * another format than the one checked above (print_arg_safe): only that one is run */
	if (tep_find_event_by_record(ts->fm.tep, &rec) == tev)
		tep_print_event(ts->fm.tep, &ts->seq, &rec, "%s: %s", TEP_PRINT_NAME,
				TEP_PRINT_INFO);
	memset(ts->print_rec, 0, n);
	trace_seq_terminate(&ts->seq);
	if (ts->seq.state != TRACE_SEQ__GOOD)
		return vms_error_nomem_at(&ts->src.err, ts->f.path, s->last_off);
	if (!ts->seq.len)
		return -1;
	*used = n;
	return 0;
}

int td_format_event(struct vms_source *src, uint32_t stream, char *buf, size_t len)
{
	struct td_source *ts = (struct td_source *)src;
	if (!buf || len == 0)
		return -1;
	buf[0] = '\0';
	if (stream >= ts->nr_streams || !ts->streams[stream].last_rec)
		return -1;
	struct td_stream *s = &ts->streams[stream];
	/* the same record asked again (a cut line rendered again into a larger buffer): the
	 * text is still in ts->seq */
	if (ts->seq_serial != s->last_serial) {
		ts->seq_serial = 0;
		int r = render(ts, s, &ts->seq_used);
		if (r == VMS_ERR_NOMEM)
			return r;
		if (r < 0) {
			snprintf(buf, len, "unknown event (%u bytes)", s->last_len);
			return 0;
		}
		ts->seq_serial = s->last_serial;
	}
	int w = snprintf(buf, len, "%s", ts->seq.buffer);
	/* a text made from part of a record, or cut to the caller's buffer, says so: a reader of
	 * `dump` must not take a cut string for the whole one */
	char note[96] = "";
	if (s->last_len > ts->seq_used)
		snprintf(note, sizeof note, " [cut: printed from the first %u of %u bytes]",
			 ts->seq_used, s->last_len);
	else if (w >= 0 && (size_t)w >= len)
		snprintf(note, sizeof note, " [cut: %d bytes of text, %zu shown]", w, len - 1);
	size_t nl = strlen(note);
	if (nl && nl < len) {
		size_t used = strlen(buf);
		if (used + nl >= len)
			used = len - 1 - nl;
		memcpy(buf + used, note, nl + 1);
	}
	return 0;
}

/* The bench's probe (bench/bench_readers.c): every chunk of every stream decompressed once
 * in this thread, with nothing parsed (the least reading a compressed file can cost); the
 * streams are rewound after. Returns the chunks, or <0 with src->err set. */
int64_t vms_tracedat_decompress_all(struct vms_source *src)
{
	struct td_source *ts = (struct td_source *)src;
	int64_t n = 0;
	for (uint32_t i = 0; i < ts->nr_streams; i++) {
		struct td_stream *s = &ts->streams[i];
		if (!s->compressed)
			continue;
		int r = s->started ? 0 : td_stream_start(ts, s, false);
		while (r >= 0 && (r = td_next_chunk(ts, s)) > 0)
			n++;
		if (r < 0)
			return r;
	}
	int r = src->ops->rewind(src);
	return r < 0 ? r : n;
}
