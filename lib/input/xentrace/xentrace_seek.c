/* xentrace: a stream's position and the way back to it, for checkpoints (issue 21: a window
 * replays from the nearest checkpoint instead of from the start of the trace).
 *
 * A stream is one physical CPU's records, in the blocks of that CPU along the file's chain
 * of blocks. A position names the record next() returned last on it by its byte offset,
 * with what the stream carries from record to record into it (struct xt_at): the last TSC
 * before it (records without one take it), the vCPU current on the CPU (the thread of HVM
 * records, followed from the runstate records), whether a lost-records marker is still to be
 * flagged on it, once_done (what skip_unread leaves out after it), whether the switch before
 * it announced it, and whether the event returned last was the LOST_END that follows a
 * lost-records record rather than the record itself. Seek puts the stream in the record's
 * block with that state, so that the next decode is that record's again (the LOST_END case:
 * the record is decoded and dropped, and LOST_END comes next); the names the events point to
 * are those of the stream's table, which starts empty: their text is the same.
 *
 * Words: w[0] XT_POS_TAG | stream << 8 | XT_AT_* << 1 | started, w[1] the record's offset,
 * w[2] the TSC before it, w[3] the current vCPU's thread (u32); the others 0. A position
 * read back from a file is untrusted: the offset must be a record of that CPU's blocks,
 * which is checked by hopping block headers from the nearest of the marks the open's walk
 * left (every XT_MARK_EVERY-th block) to the record's block and then its records from the
 * block's start (the open's walk found the chain and every block's records whole up to
 * valid_end); the state words are checked against what that block shows: the TSC of the
 * records before it in the block, the record before it for the lost-records flag and for an
 * announcing switch, and a thread that a runstate record can name. */
#include <string.h>
#include <sys/mman.h>

#include "xentrace.h"

#define XT_POS_TAG (0x78747073ULL << 32) /* "xtps" */
#define XT_POS_TAG_MASK (0xffffffffULL << 32)
#define XT_POS_STARTED 1u
#define XT_POS_FLAGS (1u | XT_AT_FLAGS << 1)

static void put(struct vms_stream_pos *pos, uint32_t stream, const struct xt_at *a)
{
	memset(pos, 0, sizeof *pos);
	pos->w[0] = XT_POS_TAG | (uint64_t)stream << 8;
	if (!a->off)
		return; /* nothing returned yet: the start of the stream */
	pos->w[0] |= XT_POS_STARTED | (uint64_t)a->flags << 1;
	pos->w[1] = a->off;
	pos->w[2] = a->tsc;
	pos->w[3] = (uint32_t)a->cur;
}

int xt_tell(struct vms_source *src, uint32_t stream, struct vms_stream_pos *pos)
{
	struct xt_reader *r = src->impl;
	memset(pos, 0, sizeof *pos);
	if (stream >= r->nr_st)
		return vms_error_set(&src->err, VMS_ERR_USAGE, "%s: no stream %u", src->path, stream);
	/* (with the pool the stream's decoder is ahead of what was taken) */
	put(pos, stream, r->pool ? xt_pool_shown(r, stream) : &r->st[stream].at);
	return 0;
}

static int bad(struct vms_error *err, const char *path, uint32_t stream, const char *what)
{
	return vms_error_set(err, VMS_ERR_FORMAT, "%s: stream %u: bad position: %s", path, stream,
			     what);
}

/* The block holding off (its header's offset), UINT64_MAX when off is in none: hopped from
 * the last mark at or before off, at most XT_MARK_EVERY headers. */
static uint64_t block_of(const struct xt_reader *r, uint64_t off)
{
	uint64_t lo = 0, hi = r->nr_marks;
	if (!hi || r->marks[0] > off)
		return UINT64_MAX;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (r->marks[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	uint64_t b = r->marks[lo];
	for (int i = 0; i <= XT_MARK_EVERY && b + 12 <= r->size && b < r->valid_end; i++) {
		uint64_t end = b + 12 + (uint64_t)xt_rd32(r->map + b + 8);
		if (off < end)
			return b;
		b = end;
	}
	return UINT64_MAX;
}

/* a thread the stream can have as current: unknown, idle, or a vCPU a runstate names */
static bool thread_ok(int32_t tid)
{
	if (tid == -1 || tid == 0)
		return true;
	return tid > 0 && vms_xen_tid_dom(tid) < VMS_XEN_IDLE_DOMAIN &&
	       vms_xen_tid_vcpu(tid) < XT_MAX_VCPUS;
}

int xt_position(struct xt_reader *r, uint32_t stream, const struct vms_stream_pos *pos,
		const char *path, struct vms_error *err)
{
	struct xt_stream *s = &r->st[stream];
	const uint64_t *w = pos->w;
	xt_stream_reset(s);
	if ((w[0] & XT_POS_TAG_MASK) != XT_POS_TAG)
		return bad(err, path, stream, "not a xentrace position");
	if (((w[0] >> 8) & 0xffffffu) != stream)
		return bad(err, path, stream, "the position of another stream");
	if (w[0] & 0xff & ~XT_POS_FLAGS)
		return bad(err, path, stream, "unknown flags");
	for (int i = 4; i < VMS_POS_WORDS; i++)
		if (w[i])
			return bad(err, path, stream, "unknown words");
	if (!(w[0] & XT_POS_STARTED)) {
		if (w[0] & 0xff || w[1] || w[2] || w[3])
			return bad(err, path, stream, "the start of a stream with a place in it");
		return 0;
	}
	uint64_t off = w[1];
	uint32_t flags = (uint32_t)(w[0] >> 1) & XT_AT_FLAGS;
	if (w[3] > UINT32_MAX || !thread_ok((int32_t)(uint32_t)w[3]))
		return bad(err, path, stream, "not a thread a CPU runs");
	if (off >= r->valid_end || off > s->final_off || off < s->first_blk)
		return bad(err, path, stream, "offset outside the CPU's records");
	uint64_t b = block_of(r, off);
	if (b == UINT64_MAX || xt_rd32(r->map + b + 4) != s->cpu)
		return bad(err, path, stream, "not in a block of the stream's CPU");
	uint64_t body = b + 12, end = body + (uint64_t)xt_rd32(r->map + b + 8);
	if (end > r->valid_end)
		end = r->valid_end;
	/* the block's records up to off (whole: checked at open), with what they leave */
	uint64_t q = body, prev = UINT64_MAX, tsc_at = UINT64_MAX;
	while (q < off && end - q >= 4) {
		uint32_t h = xt_rd32(r->map + q);
		if (xt_size(h) > end - q)
			break;
		prev = q;
		tsc_at = h >> 31 ? q : tsc_at;
		q += xt_size(h);
	}
	if (q != off || end - off < 4 || xt_size(xt_rd32(r->map + off)) > end - off)
		return bad(err, path, stream, "not at a record of the block");
	struct xt_rec rec, before;
	xt_decode(r->map + off, &rec);
	if (tsc_at != UINT64_MAX && w[2] != xt_rd64(r->map + tsc_at + 4))
		return bad(err, path, stream, "not the TSC before the record");
	if (prev != UINT64_MAX) {
		xt_decode(r->map + prev, &before);
		if (!(flags & XT_AT_LOST_PENDING) != (before.event != VMS_XEN_TRC_LOST_RECORDS))
			return bad(err, path, stream, "lost records flagged otherwise");
	}
	if (flags & XT_AT_ANNOUNCED) {
		/* a switch away from running, then a runstate change to running (entering_at) */
		bool ok = prev != UINT64_MAX && xt_is_runstate_change(before.event) &&
			  ((before.event >> 8) & 0xf) == VMS_XEN_RUNNING &&
			  ((before.event >> 4) & 0xf) != VMS_XEN_RUNNING &&
			  xt_is_runstate_change(rec.event) && rec.extra >= 1 &&
			  ((rec.event >> 4) & 0xf) == VMS_XEN_RUNNING;
		if (!ok || (flags & XT_AT_LOST_PENDING))
			return bad(err, path, stream, "announced by no switch");
	}
	if ((flags & XT_AT_LOST_END) && rec.event != VMS_XEN_TRC_LOST_RECORDS)
		return bad(err, path, stream, "a lost-records end after another record");
	/* pages given back come again from the file: from here on they are given back again
	 * (xt_give_back releases from r->dropped up) */
	const uint64_t keep = 2u << 20;
	if (r->dropped > off)
		r->dropped = off & ~(keep - 1);
	s->next_blk = body + (uint64_t)xt_rd32(r->map + b + 8);
	s->pos = off;
	s->end = end;
	s->in_block = true;
	s->last_tsc = w[2];
	s->cur = (int32_t)(uint32_t)w[3];
	s->lost_pending = flags & XT_AT_LOST_PENDING;
	s->once_done = flags & XT_AT_ONCE_DONE;
	s->announced_off = flags & XT_AT_ANNOUNCED ? off : 0;
	/* returned stays false: the record is decoded again even where skip_unread would leave
	 * out a record after the first (it was returned: it is returned again) */
	if (flags & XT_AT_LOST_END) {
		/* the record decoded and dropped: LOST_END is next */
		struct vms_event ev;
		s->skc = s->skt = NULL;
		xt_decode_next(r, s, stream, &ev);
	}
	s->at = (struct xt_at){ .off = off, .tsc = w[2], .cur = (int32_t)(uint32_t)w[3],
				.flags = flags };
	return 0;
}

int xt_seek(struct vms_source *src, uint32_t stream, const struct vms_stream_pos *pos)
{
	struct xt_reader *r = src->impl;
	if (stream >= r->nr_st)
		return vms_error_set(&src->err, VMS_ERR_USAGE, "%s: no stream %u", src->path, stream);
	int rc = r->pool ? xt_pool_seek(r, stream, pos, src->path, &src->err)
			 : xt_position(r, stream, pos, src->path, &src->err);
	struct xt_stream *s = &r->st[stream];
	if (rc < 0) {
		/* the stream is nowhere: it fails until a seek or a rewind puts it somewhere */
		xt_stream_reset(s);
		s->seek_status = rc;
		r->seek_failed = true;
	}
	return rc;
}
