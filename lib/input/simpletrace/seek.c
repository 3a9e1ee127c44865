/* simpletrace: the stream's position and the way back to it, for checkpoints (issue 21: a
 * window replays from the nearest checkpoint instead of from the start of the trace).
 *
 * Records are of variable length and an event id means what the latest mapping record
 * before it says (mappings may come anywhere in the file, and an id may be mapped again),
 * so a position is the event record's byte offset with what walking carries to it: the
 * number of mapping records before it (the id tables are those records applied in order:
 * maps[], kept from the open's walk, holds them all), whether a dropped-events record is
 * still to be flagged on the next event, and the previous event's time. Nothing in the
 * words is trusted: the offset must be an event record's among those the open's walk framed.
 * That is checked by walking the framing from the nearest of the sparse marks the walk left
 * (every VMS_ST_MARK_EVERY-th record, reader.h) to the offset, which also gives the number
 * of mappings before it, to be the position's.
 *
 * Words: w[0] ST_POS_TAG | flags, w[1] the record's offset, w[2] the mapping records before
 * it, w[3] the previous event's time; the others 0. */
#include <string.h>

#include "reader.h"

#define ST_POS_TAG (0x73747073ULL << 32) /* "stps" */
#define ST_POS_TAG_MASK (0xffffffffULL << 32)
#define ST_POS_STARTED 1u
#define ST_POS_LOST_PENDING 2u
#define ST_POS_HAVE_PREV 4u
#define ST_POS_FLAGS 7u

int vms_st_tell(struct vms_source *src, uint32_t stream, struct vms_stream_pos *pos)
{
	struct vms_st_reader *r = src->impl;
	memset(pos, 0, sizeof *pos);
	if (stream != 0)
		return vms_error_set(&src->err, VMS_ERR_USAGE, "%s: no stream %u", src->path, stream);
	pos->w[0] = ST_POS_TAG;
	if (!r->told)
		return 0; /* nothing returned yet: the start of the stream */
	const struct vms_st_at *a = &r->at;
	pos->w[0] |= ST_POS_STARTED | (a->lost_pending ? ST_POS_LOST_PENDING : 0) |
		     (a->have_prev ? ST_POS_HAVE_PREV : 0);
	pos->w[1] = a->pos;
	pos->w[2] = a->map_pos;
	pos->w[3] = a->have_prev ? a->prev_ts : 0;
	return 0;
}

static int bad(struct vms_source *src, struct vms_st_reader *r, const char *what)
{
	r->failed = true; /* next() fails until a good seek or a rewind */
	r->told = false;
	return vms_error_set(&src->err, VMS_ERR_FORMAT, "%s: bad position: %s", src->path, what);
}

/* The last mark at or before off (the first is the first record's). */
static const struct vms_st_mark *mark_before(const struct vms_st_reader *r, uint64_t off)
{
	size_t lo = 0, hi = r->nr_marks;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->marks[mid].off <= off)
			lo = mid;
		else
			hi = mid;
	}
	return &r->marks[lo];
}

int vms_st_seek(struct vms_source *src, uint32_t stream, const struct vms_stream_pos *pos)
{
	struct vms_st_reader *r = src->impl;
	if (stream != 0)
		return vms_error_set(&src->err, VMS_ERR_USAGE, "%s: no stream %u", src->path, stream);
	const uint64_t *w = pos->w;
	if ((w[0] & ST_POS_TAG_MASK) != ST_POS_TAG)
		return bad(src, r, "not a simpletrace position");
	if (w[0] & ~(ST_POS_TAG_MASK | ST_POS_FLAGS))
		return bad(src, r, "unknown flags");
	for (int i = 4; i < VMS_POS_WORDS; i++)
		if (w[i])
			return bad(src, r, "unknown words");
	r->have_cur = false;
	if (!(w[0] & ST_POS_STARTED)) {
		if (w[0] & ST_POS_FLAGS || w[1] || w[2] || w[3])
			return bad(src, r, "the start of the stream with a place in it");
		r->pos = VMS_ST_HEADER_SIZE;
		r->map_pos = 0;
		r->lost_pending = r->have_prev = false;
		r->failed = r->told = false;
		vms_st_apply_maps(r, 0); /* (no mapping applied: cannot fail) */
		return 0;
	}
	bool have_prev = w[0] & ST_POS_HAVE_PREV;
	uint64_t off = w[1];
	if (!have_prev && w[3])
		return bad(src, r, "a previous event's time without one");
	if (off < VMS_ST_HEADER_SIZE || off >= r->good_end || r->nr_marks == 0)
		return bad(src, r, "offset outside the records");
	/* the framing from the mark to the offset (checked by the open's walk for every record
	 * before good_end): at most VMS_ST_MARK_EVERY records */
	const struct vms_st_mark *m = mark_before(r, off);
	uint64_t at = m->off;
	uint32_t maps = m->map_pos;
	uint64_t type = 0;
	while (at < off) {
		at += vms_st_record_size(r, (size_t)at, &type);
		maps += type == VMS_ST_REC_MAPPING;
	}
	if (at != off)
		return bad(src, r, "not at a record");
	vms_st_record_size(r, (size_t)off, &type);
	if (type != VMS_ST_REC_EVENT)
		return bad(src, r, "not at an event record");
	if (w[2] != maps)
		return bad(src, r, "mapping records before it differ");
	if (vms_st_apply_maps(r, maps) < 0) {
		r->failed = true;
		return vms_error_nomem_at(&src->err, src->path, off);
	}
	r->pos = (size_t)off;
	r->map_pos = maps;
	r->lost_pending = w[0] & ST_POS_LOST_PENDING;
	r->have_prev = have_prev;
	r->prev_ts = w[3];
	r->failed = false;
	/* told again as it is: the event next() returns */
	r->at = (struct vms_st_at){ off, maps, r->lost_pending, have_prev, r->prev_ts };
	r->told = true;
	return 0;
}
