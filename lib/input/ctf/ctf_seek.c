/* CTF: a stream's position and the way back to it, for checkpoints (issue 21: a window
 * replays from the nearest checkpoint instead of from the start of the trace).
 *
 * A position names the event next() returned last on the stream by its packet (the
 * packet's byte offset in the stream file) and its index in that packet, with what the
 * stream carried into the packet's first event (struct ctf_pkt_state: the clock after the
 * packet's header and context, the previous event's time and whether there was one,
 * events_discarded so far and whether a loss is still to be flagged, sched_switch's thread,
 * the CPU carried from packets before). Seek enters that packet again (read and checked as
 * reading checks it), restores that state and decodes the packet's first k events again,
 * discarding them: an event's start is only known by decoding the events before it, and
 * the clock (whose upper bits a compact header leaves out) and the thread are what those
 * events leave. The pool's workers decode ahead of the reader, so each event's start is
 * kept as it is decoded and its packet's part once per packet of a block (ctf_pool.c), and
 * tell puts together the one of the event returned last.
 *
 * Words: w[0] CTF_POS_TAG | stream << 8 | flags, w[1] the packet's offset, w[2] the event's
 * index in the packet, w[3] the clock after the packet's header and context, w[4] the
 * previous event's time, w[5] events_discarded so far, w[6] cpu | cur_tid << 32, w[7] the
 * event's start (bits from the packet's start). A position read back from a file is
 * untrusted: the packet must be one the open's walk found in that stream file, the words
 * the packet's context gives must be its own, and the k events decoded again must end where
 * the event starts. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctf_source.h"

#define CTF_POS_TAG (0x63746670ULL << 32) /* "ctfp" */
#define CTF_POS_TAG_MASK (0xffffffffULL << 32)
#define CTF_POS_STARTED 1u
#define CTF_POS_HAVE_LAST_TS 2u
#define CTF_POS_LOST_PENDING 4u
#define CTF_POS_FLAGS 7u

static void put(struct vms_stream_pos *pos, uint32_t stream, const struct ctf_pos *at)
{
	const struct ctf_pkt_state *pk = &at->pk;
	pos->w[0] = CTF_POS_TAG | (uint64_t)stream << 8 | CTF_POS_STARTED |
		    (pk->have_last_ts ? CTF_POS_HAVE_LAST_TS : 0) |
		    (pk->lost_pending ? CTF_POS_LOST_PENDING : 0);
	pos->w[1] = at->pkt_off;
	pos->w[2] = at->k;
	pos->w[3] = pk->clock;
	pos->w[4] = pk->have_last_ts ? pk->last_ts : 0;
	pos->w[5] = pk->disc_prev;
	pos->w[6] = pk->cpu | (uint64_t)(uint32_t)pk->cur_tid << 32;
	pos->w[7] = at->at.pos;
}

int ctf_tell(struct vms_source *src, uint32_t stream, struct vms_stream_pos *pos)
{
	struct ctf *c = src->impl;
	memset(pos, 0, sizeof *pos);
	if (stream >= c->n)
		return vms_error_set(&src->err, VMS_ERR_USAGE, "%s: no stream %u", src->path, stream);
	struct cstream *s = &c->st[stream];
	if (s->at_seek) {
		*pos = s->at;
	} else if (s->told) {
		put(pos, stream, c->pool ? ctf_pool_last(s) : &s->last);
	} else {
		pos->w[0] = CTF_POS_TAG | (uint64_t)stream << 8; /* its start */
	}
	return 0;
}

static int bad(struct vms_error *err, const struct cstream *s, uint32_t stream, const char *what)
{
	return vms_error_set(err, VMS_ERR_FORMAT, "%s: stream %u: bad position: %s", s->path,
			     stream, what);
}

/* Is off the start of one of the stream's complete packets? */
static bool is_packet(const struct cstream *s, uint64_t off)
{
	uint64_t lo = 0, hi = s->npkts;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (s->pkts[mid] == off)
			return true;
		if (s->pkts[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

int ctf_position(struct ctf *c, uint32_t stream, const struct vms_stream_pos *pos,
		 const struct ctf_filter *flt, struct vms_error *err)
{
	struct cstream *s = &c->st[stream];
	const uint64_t *w = pos->w;
	if ((w[0] & CTF_POS_TAG_MASK) != CTF_POS_TAG)
		return bad(err, s, stream, "not a CTF position");
	if (((w[0] >> 8) & 0xffffffu) != stream)
		return bad(err, s, stream, "the position of another stream");
	if (w[0] & 0xff & ~CTF_POS_FLAGS)
		return bad(err, s, stream, "unknown flags");
	/* pages given back come again from the file: only those behind the packet are still
	 * to give back (seeking forward, the next give_back releases everything behind) */
	uint64_t given_back = s->given_back;
	ctf_reset_stream(s);
	if (!(w[0] & CTF_POS_STARTED)) {
		bool any = w[0] & 0xff;
		for (int i = 1; i < VMS_POS_WORDS; i++)
			any |= w[i] != 0;
		if (any)
			return bad(err, s, stream, "the start of a stream with a place in it");
		s->given_back = 0;
		return 0;
	}
	uint64_t off = w[1], k = w[2];
	uint32_t cpu = (uint32_t)w[6];
	if (off >= s->valid_end || !is_packet(s, off))
		return bad(err, s, stream, "not the start of a packet of the stream");
	if (cpu >= 4096)
		return bad(err, s, stream, "CPU out of range");
	if (!(w[0] & CTF_POS_HAVE_LAST_TS) && w[4])
		return bad(err, s, stream, "a previous event's time without one");
	long page = sysconf(_SC_PAGESIZE);
	uint64_t pg = page > 0 ? (uint64_t)page : 4096;
	s->given_back = given_back < off ? given_back : off / pg * pg;
	/* the state carried into the packet, as entering it leaves it: what its context gives
	 * (timestamp_begin, cpu_id, events_discarded) must be what the position says */
	s->clock = w[3];
	s->cpu = cpu;
	s->disc_prev = w[5];
	bool lost = w[0] & CTF_POS_LOST_PENDING;
	s->lost_pending = lost;
	s->have_last_ts = w[0] & CTF_POS_HAVE_LAST_TS;
	s->last_ts = w[4];
	s->cur_tid = (int32_t)(uint32_t)(w[6] >> 32);
	int rc = ctf_enter_packet_at(err, &c->rf, s, off);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return bad(err, s, stream, "a packet without events");
	if (s->clock != w[3] || s->cpu != cpu || s->disc_prev != w[5] || s->lost_pending != lost)
		return bad(err, s, stream, "the packet's context differs");
	/* the events before it, decoded and dropped (k is bounded by the packet's events: each
	 * takes at least a bit, or ctf_decode_next fails) */
	struct vms_event ev;
	struct ctf_at at;
	char sb[2][64];
	for (uint64_t i = 0; i < k; i++) {
		if (s->pos >= s->end)
			return bad(err, s, stream, "event index past the packet's events");
		rc = ctf_decode_next(s, stream, &c->rf, flt, err, &ev, sb, &at);
		if (rc <= 0)
			return rc < 0 ? rc : bad(err, s, stream, "event index past the stream");
		c->decoded_alone++;
	}
	if (s->pos >= s->end || s->pos != w[7])
		return bad(err, s, stream, "not where the packet's event starts");
	return 0;
}

int ctf_seek(struct vms_source *src, uint32_t stream, const struct vms_stream_pos *pos)
{
	struct ctf *c = src->impl;
	if (stream >= c->n)
		return vms_error_set(&src->err, VMS_ERR_USAGE, "%s: no stream %u", src->path, stream);
	struct cstream *s = &c->st[stream];
	int rc = c->pool ? ctf_pool_seek(src, c, stream, pos)
			 : ctf_position(c, stream, pos, &c->flt, &src->err);
	if (rc < 0) {
		/* the stream is nowhere: it fails until a seek or a rewind puts it somewhere */
		ctf_reset_stream(s);
		s->seek_status = rc;
		s->told = s->at_seek = false;
		return rc;
	}
	s->seek_status = 0;
	s->have_last = false;
	if (!c->pool)
		ctf_keep_packet(s); /* the next event's, when in the packet entered */
	s->at = *pos;
	s->at_seek = true;
	return 0;
}
