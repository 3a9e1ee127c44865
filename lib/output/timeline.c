/* The timeline writer (timeline.h): Perfetto protobuf or Chrome JSON.
 *
 * Perfetto (perfetto_trace.proto): the file is a stream of Trace.packet records (field 1,
 * length-delimited), gathered in blocks of OUT_BUF bytes before they are written. Every track
 * is a sequence of its own (trusted_packet_sequence_id = its uuid), so that what a packet of
 * a slice repeats is the least:
 *  - the track's first packet is its TrackDescriptor and clears the sequence's incremental
 *    state (sequence_flags 1); groups are root tracks (no ProcessDescriptor: a machine has no
 *    pid) that their tracks nest under, so the UI shows one collapsible group per machine;
 *  - every event packet says it needs that state (sequence_flags 2: it uses the sequence's
 *    defaults, clock or interned names), so that a reader that lost the sequence's start
 *    drops it rather than misreads it;
 *  - before its first event, a packet at that time (on the trace clock, BOOTTIME) sets the
 *    sequence's defaults (timestamps on clock 64, events on this track) and a ClockSnapshot
 *    that says clock 64 is incremental and equal to BOOTTIME there; every later packet's
 *    timestamp is the delta from the sequence's previous one (a few bytes). A time that goes
 *    back (a slice written after a later one ended on the same track) is written absolute,
 *    on BOOTTIME, and leaves the incremental clock as it was;
 *  - names of slices, argument keys and string values are interned per sequence: written in
 *    the packet that first uses them on that track (InternedData), by number afterwards. The
 *    number is the name's id (timeline.h), the same on every sequence.
 * Slices are a BEGIN and an END event; nothing else is written per slice. Lanes (timeline.h)
 * are the exception: tracks that have no sequence of their own (nor anything kept here),
 * whose events are on their group's sequence and name their track (track_uuid).
 * docs/perfetto.md lists each rule of Perfetto's reader the file relies on, with its line.
 *
 * Chrome JSON ({"traceEvents": [...]}): groups are processes (pid = group + 1), tracks are
 * threads (tid = track + 1) named by metadata events, slices complete events ("X", ts and dur
 * in microseconds with ns decimals, written exactly), counters "C" events. */
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "model/keymap.h"
#include "pb_enc.h"
#include "timeline.h"
#include "vmscope/writers.h"

/* perfetto_trace.proto field numbers */
enum {
	TRACE_PACKET = 1,
	PKT_CLOCK_SNAPSHOT = 6, PKT_TIMESTAMP = 8, PKT_SEQ_ID = 10, PKT_TRACK_EVENT = 11,
	PKT_INTERNED = 12, PKT_SEQ_FLAGS = 13, PKT_COMPRESSED = 50, PKT_CLOCK_ID = 58,
	PKT_DEFAULTS = 59,
	PKT_TRACK_DESCRIPTOR = 60,
	TPD_CLOCK_ID = 58, TPD_TRACK_EVENT = 11, TED_TRACK_UUID = 11,
	CS_CLOCKS = 1, CLK_ID = 1, CLK_TIMESTAMP = 2, CLK_INCREMENTAL = 3,
	TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_PARENT = 5, TD_COUNTER = 8,
	TD_CHILD_ORDERING = 11, TD_SIBLING_RANK = 12,
	CD_UNIT_NAME = 6,
	TE_ANNOTATIONS = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK_UUID = 11, TE_DOUBLE_VALUE = 44,
	DA_NAME_IID = 1, DA_UINT = 3, DA_INT = 4, DA_POINTER = 7, DA_STRING_IID = 17,
	ID_EVENT_NAMES = 2, ID_ANNOTATION_NAMES = 3, ID_STRING_VALUES = 29,
	IN_IID = 1, IN_NAME = 2,   /* EventName, DebugAnnotationName, InternedString alike */
	TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_COUNTER = 4,
	ORDER_EXPLICIT = 3,
	SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2,
	CLOCK_BOOTTIME = 6, CLOCK_INCREMENTAL = 64,
};

/* what a sequence has been told (the kinds of interned data) */
enum { K_EVENT_NAME, K_ARG_NAME, K_STRING, K_COUNT };
static const uint32_t k_field[K_COUNT] = { ID_EVENT_NAMES, ID_ANNOTATION_NAMES, ID_STRING_VALUES };
#define ID_LIMIT (1u << 30)       /* name ids fit the key of `sent` */
#define SEEN_IDS 2048             /* ids below: a bit per (id, kind) on the track, else `sent` */
#define SEEN_WORDS (K_COUNT * SEEN_IDS / 64)
#define LANE_UUID (1ull << 32)    /* a lane's uuid: this + its key (other tracks': id + 1) */
#define LANE_TID 0x80000000u      /* Chrome JSON: a lane's tid, this + its key */
#define LIT_CACHE 64              /* addresses of literals remembered without hashing */

/* bounds of a packet's parts (names are at most VMS_TL_NAME_MAX bytes) */
#define ENTRY_MAX (2 * (1 + PB_VARINT_MAX) + 2 + VMS_TL_NAME_MAX + 4)
#define IDATA_MAX ((1 + 2 * VMS_TL_MAX_ARGS) * ENTRY_MAX)
#define TE_MAX 512
#define HEAD_MAX 64
#define PACKET_MAX (HEAD_MAX + IDATA_MAX + TE_MAX + 4 * PB_VARINT_MAX)
/* a packet's sequence and flags: two keys, the id (below 2^32) and the flags (< 128) */
#define SEQ_HEAD_MAX (1 + 5 + 1 + 1)
/* a packet without interned data nor arguments: timestamp and clock, sequence, a track event
 * of a type and a name (< 128: its length and the packet's are one byte) */
#define FAST_MAX (2 + 2 * PB_VARINT_MAX + 3 + SEQ_HEAD_MAX + 2 + 2 + 2 + 6)

struct names {
	struct vms_keymap map;  /* hash of the string -> id (probing on when they differ) */
	struct vms_keymap lit;  /* address of a string that never changes -> id */
	struct { const char *s; uint32_t id; } litc[LIT_CACHE];   /* in front of lit */
	char **str;             /* [id - 1] */
	uint32_t n, cap;
};

struct pending {                /* Chrome JSON: the open slice, written at its close */
	uint64_t t;
	uint32_t name;
	struct vms_tl_arg args[VMS_TL_MAX_ARGS];
	char sval[VMS_TL_MAX_ARGS][32];
	unsigned nargs;
};

struct track {
	uint32_t group;         /* UINT32_MAX for a group itself */
	bool counter, open;
	bool clocked;           /* Perfetto: its clock snapshot is written, last_t is its clock */
	bool fast;              /* Perfetto: a slice track, clocked (vms_tl_slice's checks, one) */
	uint8_t nseq;
	uint8_t seq[SEQ_HEAD_MAX]; /* Perfetto: its trusted_packet_sequence_id and sequence_flags
	                           SEQ_NEEDS_INCREMENTAL_STATE, encoded: what an event packet
	                           says of its sequence (docs/perfetto.md) */
	uint64_t last_t;
	uint64_t *seen;         /* Perfetto: bit id * K_COUNT + k, name id of kind k interned on
	                           its sequence; [nseen] words, grown to the highest id the track
	                           uses (none on a counter; a vCPU's states: one word) */
	union {
		char *name;     /* Chrome JSON: a counter's, named in every event */
		struct pending *p;   /* Chrome JSON: a slice track's open slice */
	} j;
	uint8_t nseen;
};

/* a block of packets; deflated, it is one packet of compressed_packets, which Perfetto wants
 * below 512 KiB (compressBound(256 KiB) is 256 KiB + 80 bytes) */
#define OUT_BUF (256 * 1024)

struct vms_tl {
	FILE *f;
	uint8_t *out;           /* Perfetto: packets gathered here, written in big pieces */
	size_t nout;
	uint8_t *zout;          /* deflate: a block compressed (compressBound(OUT_BUF)) */
	enum vms_tl_format fmt;
	bool failed;
	struct names names;
	struct vms_keymap sent; /* (sequence, kind, id): interned on that sequence */
	struct track *t;
	uint32_t nr, cap;
	struct vms_json j;
};

/* ---- names ---- */

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* A name as the trace packets carry it: protobuf strings are UTF-8 (the JSON writer's rule
 * too), and a name comes from a trace, so a byte that does not start a valid sequence becomes
 * U+FFFD; at most VMS_TL_NAME_MAX bytes, never cutting a sequence. s itself when it is already
 * so (ASCII of that length: the usual case, one pass), else the name made in buf. */
static const char *tl_clean(const char *s, char buf[VMS_TL_NAME_MAX + 1])
{
	if (!s)
		return "";
	size_t n = 0;
	while (s[n] && !(s[n] & 0x80) && n <= VMS_TL_NAME_MAX)
		n++;
	if (!s[n] && n <= VMS_TL_NAME_MAX)
		return s;
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		uint32_t cp;
		int k = vms_utf8_seq(p, &cp);
		const char *src = k > 0 ? (const char *)p : "\xef\xbf\xbd";
		size_t len = k > 0 ? (size_t)k : 3;
		if (o + len > VMS_TL_NAME_MAX)
			break;
		memcpy(buf + o, src, len);
		o += len;
		p += k > 0 ? k : 1;
	}
	buf[o] = '\0';
	return buf;
}

uint32_t vms_tl_name(struct vms_tl *tl, const char *s)
{
	char cut[VMS_TL_NAME_MAX + 1];
	s = tl_clean(s, cut);
	struct names *in = &tl->names;
	for (uint64_t k = fnv1a(s);; k++) {
		if (k == VMS_KEYMAP_EMPTY)
			continue;
		uint64_t *v = vms_keymap_get(&in->map, k);
		if (v && !strcmp(in->str[*v - 1], s))
			return (uint32_t)*v;
		if (v)
			continue;   /* another string with this hash: probe on */
		if (in->n + 1 >= ID_LIMIT)
			goto fail;
		if (in->n == in->cap) {
			uint32_t cap = in->cap ? in->cap * 2 : 64;
			char **ns = realloc(in->str, cap * sizeof *ns);
			if (!ns)
				goto fail;
			in->str = ns;
			in->cap = cap;
		}
		char *copy = strdup(s);
		if (!copy || !vms_keymap_put(&in->map, k, in->n + 1, NULL)) {
			free(copy);
			goto fail;
		}
		in->str[in->n++] = copy;
		return in->n;
	}
fail:
	tl->failed = true;
	return 0;
}

uint32_t vms_tl_name_lit(struct vms_tl *tl, const char *s)
{
	/* (literals lie a few bytes apart: a multiplicative hash spreads them) */
	unsigned c = (unsigned)(((uint64_t)(uintptr_t)s * 0x9e3779b97f4a7c15ull) >> 58) % LIT_CACHE;
	if (tl->names.litc[c].s == s)
		return tl->names.litc[c].id;
	uint64_t *v = vms_keymap_get(&tl->names.lit, (uint64_t)(uintptr_t)s);
	uint32_t id = v ? (uint32_t)*v : vms_tl_name(tl, s);
	if (!v && id && !vms_keymap_put(&tl->names.lit, (uint64_t)(uintptr_t)s, id, NULL)) {
		tl->failed = true;
		return 0;
	}
	if (id) {
		tl->names.litc[c].s = s;
		tl->names.litc[c].id = id;
	}
	return id;
}

static const char *name_of(const struct vms_tl *tl, uint32_t id)
{
	return id && id <= tl->names.n ? tl->names.str[id - 1] : "";
}

static void names_free(struct names *in)
{
	for (uint32_t i = 0; i < in->n; i++)
		free(in->str[i]);
	free(in->str);
	vms_keymap_free(&in->map);
	vms_keymap_free(&in->lit);
}

/* ---- Perfetto packets ---- */

/* Write the block: as it is, or (deflate) as one TracePacket whose compressed_packets are
 * the block's packets deflated (zlib format, at the fastest level: Perfetto's own). */
static void out_flush(struct vms_tl *tl)
{
	if (!tl->nout)
		return;
	if (!tl->zout) {
		if (fwrite(tl->out, 1, tl->nout, tl->f) != tl->nout)
			tl->failed = true;
		tl->nout = 0;
		return;
	}
	uLongf zlen = compressBound(OUT_BUF);
	if (compress2(tl->zout, &zlen, tl->out, tl->nout, Z_BEST_SPEED) != Z_OK) {
		tl->failed = true;
		tl->nout = 0;
		return;
	}
	uint8_t head[4 * (1 + PB_VARINT_MAX)], inner[2 * (1 + PB_VARINT_MAX)];
	size_t ninner = (size_t)(pb_varint(pb_key(inner, PKT_COMPRESSED, 2), zlen) - inner);
	uint8_t *h = pb_varint(pb_key(head, TRACE_PACKET, 2), ninner + zlen);
	memcpy(h, inner, ninner);
	h += ninner;
	size_t nhead = (size_t)(h - head);
	if (fwrite(head, 1, nhead, tl->f) != nhead || fwrite(tl->zout, 1, zlen, tl->f) != zlen)
		tl->failed = true;
	tl->nout = 0;
}

/* A length-delimited field's length, written once its contents are: at `len` one byte was
 * left for it; when the contents are 128 bytes or more (rare: long names interned, many
 * arguments), they move up to make room for a longer varint. Returns the new end. */
static uint8_t *close_len(uint8_t *len, uint8_t *end)
{
	size_t n = (size_t)(end - len - 1);
	if (n < 0x80) {
		*len = (uint8_t)n;
		return end;
	}
	uint8_t v[PB_VARINT_MAX];
	size_t k = (size_t)(pb_varint(v, n) - v);
	memmove(len + k, len + 1, n);
	memcpy(len, v, k);
	return end + k - 1;
}

/* A Trace.packet made of parts (each already encoded), written to the block. */
static void emit(struct vms_tl *tl, const uint8_t *head, size_t nhead)
{
	if (tl->nout + nhead + 1 + PB_VARINT_MAX > OUT_BUF)
		out_flush(tl);
	uint8_t *p = pb_bytes(tl->out + tl->nout, TRACE_PACKET, head, nhead);
	tl->nout = (size_t)(p - tl->out);
}

static uint8_t *cut_string(uint8_t *p, uint32_t field, const char *s)
{
	char cut[VMS_TL_NAME_MAX + 1];
	s = tl_clean(s, cut);
	return pb_bytes(p, field, s, strlen(s));
}

/* The descriptor of track uuid (in group, UINT32_MAX for a group itself), written on
 * sequence seq + 1: a track's own, which it begins, or a lane's group's. */
static void pb_descriptor(struct vms_tl *tl, uint32_t seq, uint64_t uuid, uint32_t group,
			  bool counter, const char *name, const char *unit, int32_t rank)
{
	uint8_t inner[2 * VMS_TL_NAME_MAX + 64], td[3 * VMS_TL_NAME_MAX + 128];
	uint8_t head[HEAD_MAX + sizeof td], *p = td;
	p = pb_uint(p, TD_UUID, uuid);
	if (group == UINT32_MAX) {
		/* a root track, not a process: a machine has no pid, and one made up would be
		 * taken for a real process (docs/perfetto.md) */
		p = cut_string(p, TD_NAME, name);
		p = pb_uint(p, TD_CHILD_ORDERING, ORDER_EXPLICIT);
	} else {
		p = pb_uint(p, TD_PARENT, group + 1);
		p = cut_string(p, TD_NAME, name);
		if (counter) {
			uint8_t *q = cut_string(inner, CD_UNIT_NAME, unit);
			p = pb_bytes(p, TD_COUNTER, inner, (size_t)(q - inner));
		}
	}
	p = pb_int(p, TD_SIBLING_RANK, rank);
	uint8_t *h = pb_uint(head, PKT_SEQ_ID, seq + 1);
	if (uuid == (uint64_t)seq + 1)
		h = pb_uint(h, PKT_SEQ_FLAGS, SEQ_CLEARED);
	h = pb_bytes(h, PKT_TRACK_DESCRIPTOR, td, (size_t)(p - td));
	emit(tl, head, (size_t)(h - head));
}

/* The sequence's defaults and its incremental clock, starting at t. */
static void pb_clock(struct vms_tl *tl, uint32_t id, uint64_t t)
{
	uint8_t ted[16], def[32], c1[32], c2[32], cs[80], head[192], *p;
	size_t nted = (size_t)(pb_uint(ted, TED_TRACK_UUID, id + 1) - ted);
	p = pb_uint(def, TPD_CLOCK_ID, CLOCK_INCREMENTAL);
	size_t ndef = (size_t)(pb_bytes(p, TPD_TRACK_EVENT, ted, nted) - def);
	p = pb_uint(c1, CLK_ID, CLOCK_BOOTTIME);
	size_t n1 = (size_t)(pb_uint(p, CLK_TIMESTAMP, t) - c1);
	p = pb_uint(c2, CLK_ID, CLOCK_INCREMENTAL);
	p = pb_uint(p, CLK_TIMESTAMP, t);
	size_t n2 = (size_t)(pb_uint(p, CLK_INCREMENTAL, 1) - c2);
	p = pb_bytes(cs, CS_CLOCKS, c1, n1);
	size_t ncs = (size_t)(pb_bytes(p, CS_CLOCKS, c2, n2) - cs);
	p = pb_uint(head, PKT_TIMESTAMP, t);
	p = pb_uint(p, PKT_CLOCK_ID, CLOCK_BOOTTIME);
	p = pb_uint(p, PKT_SEQ_ID, id + 1);
	p = pb_bytes(p, PKT_DEFAULTS, def, ndef);
	p = pb_bytes(p, PKT_CLOCK_SNAPSHOT, cs, ncs);
	emit(tl, head, (size_t)(p - head));
	tl->t[id].clocked = true;
	tl->t[id].fast = tl->t[id].group != UINT32_MAX && !tl->t[id].counter;
	tl->t[id].last_t = t;
}

static inline bool fresh(struct vms_tl *tl, uint32_t track, unsigned k, uint32_t id);

/* fresh() for an id beyond the track's bits: they grow to cover it (doubling), or, for ids
 * from SEEN_IDS on, `sent` is asked. */
static __attribute__((noinline)) bool fresh_slow(struct vms_tl *tl, uint32_t track, unsigned k,
						  uint32_t id)
{
	struct track *tr = &tl->t[track];
	if (id < SEEN_IDS) {
		unsigned need = (id * K_COUNT + k) / 64 + 1, n = tr->nseen ? tr->nseen : 1;
		while (n < need)
			n *= 2;
		if (n > SEEN_WORDS)
			n = SEEN_WORDS;
		uint64_t *s = realloc(tr->seen, n * sizeof *s);
		if (s) {
			memset(s + tr->nseen, 0, (n - tr->nseen) * sizeof *s);
			tr->seen = s;
			tr->nseen = (uint8_t)n;
			return fresh(tl, track, k, id);
		}
		tl->failed = true;   /* (`sent` then) */
	}
	bool inserted = false;
	uint64_t key = (uint64_t)(track + 1) << 32 | (uint64_t)k << 30 | id;
	if (!vms_keymap_put(&tl->sent, key, 1, &inserted)) {
		tl->failed = true;
		return false;
	}
	return inserted;
}

/* Whether name `id` of kind k must be interned on track tr's sequence now (it is then taken
 * as done). */
static inline bool fresh(struct vms_tl *tl, uint32_t track, unsigned k, uint32_t id)
{
	struct track *tr = &tl->t[track];
	uint64_t bit = (uint64_t)id * K_COUNT + k;
	if (__builtin_expect(bit / 64 < tr->nseen, 1)) {
		uint64_t m = 1ull << (bit % 64);
		if (tr->seen[bit / 64] & m)
			return false;
		tr->seen[bit / 64] |= m;
		return true;
	}
	return fresh_slow(tl, track, k, id);
}

static uint8_t *intern_entry(struct vms_tl *tl, uint8_t *p, unsigned k, uint32_t id)
{
	uint8_t *q = pb_key(p, k_field[k], 2), *len = q++;
	q = pb_uint(q, IN_IID, id);
	q = cut_string(q, IN_NAME, name_of(tl, id));
	return close_len(len, q);
}

/* A packet's time and sequence: the time as a delta on the track's incremental clock, or,
 * when it goes back, absolute on BOOTTIME (the incremental clock left as it was); then the
 * sequence and its flags (encoded once, at the track's making: SEQ_HEAD_MAX bytes copied,
 * nseq kept). */
static inline uint8_t *pb_when(uint8_t *p, struct track *tr, uint64_t t)
{
	*p++ = PKT_TIMESTAMP << 3;
	if (t >= tr->last_t) {
		p = pb_varint(p, t - tr->last_t);
		tr->last_t = t;
	} else {
		p = pb_varint(p, t);
		p = pb_uint(p, PKT_CLOCK_ID, CLOCK_BOOTTIME);
	}
	memcpy(p, tr->seq, sizeof tr->seq);
	return p + tr->nseq;
}

/* A packet with interned data, arguments or a counter's value, or on another track than
 * its sequence's (uuid: a lane's; 0 none), written in place (lengths closed afterwards,
 * close_len). Arguments whose key or string value has no name are left out. (Not inlined:
 * the common packet's path stays small.) */
static __attribute__((noinline)) void pb_event_full(struct vms_tl *tl, uint32_t id, uint64_t t,
						    int type, uint32_t name, bool new_name,
						    const struct vms_tl_arg *args, unsigned nargs,
						    double value, uint64_t uuid)
{
	struct track *tr = &tl->t[id];
	uint32_t sv[VMS_TL_MAX_ARGS];
	bool fresh_key[VMS_TL_MAX_ARGS], fresh_sv[VMS_TL_MAX_ARGS], any = new_name;
	for (unsigned i = 0; i < nargs; i++) {
		uint32_t key = args[i].key <= tl->names.n ? args[i].key : 0;
		sv[i] = 0;
		if (args[i].type == VMS_TL_STR)
			sv[i] = vms_tl_name(tl, args[i].s);
		else if (args[i].type == VMS_TL_NAME)
			sv[i] = args[i].u <= tl->names.n ? (uint32_t)args[i].u : 0;
		fresh_key[i] = fresh_sv[i] = false;
		if (!key || ((args[i].type == VMS_TL_STR || args[i].type == VMS_TL_NAME) && !sv[i])) {
			sv[i] = UINT32_MAX;   /* left out */
			continue;
		}
		any |= fresh_key[i] = fresh(tl, id, K_ARG_NAME, key);
		any |= fresh_sv[i] = sv[i] && fresh(tl, id, K_STRING, sv[i]);
	}
	if (tl->nout + PACKET_MAX > OUT_BUF)
		out_flush(tl);
	uint8_t *pk = tl->out + tl->nout, *p = pk + 2, *len;
	p = pb_when(p, tr, t);
	if (any) {
		p = pb_key(p, PKT_INTERNED, 2);
		len = p++;
		if (new_name)
			p = intern_entry(tl, p, K_EVENT_NAME, name);
		for (unsigned i = 0; i < nargs; i++) {
			if (fresh_key[i])
				p = intern_entry(tl, p, K_ARG_NAME, args[i].key);
			if (fresh_sv[i])
				p = intern_entry(tl, p, K_STRING, sv[i]);
		}
		p = close_len(len, p);
	}
	p = pb_key(p, PKT_TRACK_EVENT, 2);
	len = p++;
	p = pb_uint(p, TE_TYPE, (uint64_t)type);
	if (uuid)
		p = pb_uint(p, TE_TRACK_UUID, uuid);
	if (name)
		p = pb_uint(p, TE_NAME_IID, name);
	for (unsigned i = 0; i < nargs; i++) {
		if (sv[i] == UINT32_MAX)
			continue;
		*p++ = TE_ANNOTATIONS << 3 | 2;
		uint8_t *alen = p++;   /* an annotation is at most 4 varints: < 128 bytes */
		p = pb_uint(p, DA_NAME_IID, args[i].key);
		switch (args[i].type) {
		case VMS_TL_UINT: p = pb_uint(p, DA_UINT, args[i].u); break;
		case VMS_TL_INT: p = pb_int(p, DA_INT, args[i].i); break;
		case VMS_TL_HEX: p = pb_uint(p, DA_POINTER, args[i].u); break;
		case VMS_TL_STR: case VMS_TL_NAME: p = pb_uint(p, DA_STRING_IID, sv[i]); break;
		}
		*alen = (uint8_t)(p - alen - 1);
	}
	if (type == TYPE_COUNTER)
		p = pb_double(p, TE_DOUBLE_VALUE, value);
	p = close_len(len, p);
	pk[0] = TRACE_PACKET << 3 | 2;
	p = close_len(pk + 1, p);
	tl->nout = (size_t)(p - tl->out);
}

/* A varint, the one-byte case first (most deltas and names) */
static inline uint8_t *varint_short(uint8_t *p, uint64_t v)
{
	if (__builtin_expect(v < 0x80, 1)) {
		*p = (uint8_t)v;
		return p + 1;
	}
	return pb_varint(p, v);
}

/* Whether name id of kind k was interned on the track (by its bits only: false when it is
 * not in them, which sends the caller to the path that asks `sent` too). */
static inline bool seen_bit(const struct track *tr, unsigned k, uint64_t id)
{
	uint64_t bit = id * K_COUNT + k;   /* (ids here are below 2^32 or checked: no overflow) */
	return bit / 64 < tr->nseen && (tr->seen[bit / 64] >> (bit % 64) & 1);
}

/* A slice's BEGIN whose name, argument keys and string values the track was told, written
 * in place in one pass (exits, overlays): the bytes pb_event_full writes for it. false, and
 * nothing written (the block's end is left where it was), when something must be interned
 * first. */
static bool pb_args_fast(struct vms_tl *tl, struct track *tr, uint64_t t, uint32_t name,
			 const struct vms_tl_arg *args, unsigned nargs)
{
	if (tl->nout + PACKET_MAX > OUT_BUF)
		out_flush(tl);
	uint8_t *pk = tl->out + tl->nout, *p = pk + 2, *len;
	uint64_t last_t = tr->last_t;
	p = pb_when(p, tr, t);
	p[0] = PKT_TRACK_EVENT << 3 | 2;
	len = p + 1;
	p[2] = TE_TYPE << 3;
	p[3] = TYPE_SLICE_BEGIN;
	p[4] = TE_NAME_IID << 3;
	p = varint_short(p + 5, name);
	for (unsigned i = 0; i < nargs; i++) {
		if (!seen_bit(tr, K_ARG_NAME, args[i].key))
			goto undo;
		uint8_t *alen = p + 1;   /* an annotation is at most 4 varints: < 128 bytes */
		p[0] = TE_ANNOTATIONS << 3 | 2;
		p[2] = DA_NAME_IID << 3;
		p = varint_short(p + 3, args[i].key);
		switch (args[i].type) {
		case VMS_TL_UINT: *p++ = DA_UINT << 3; p = pb_varint(p, args[i].u); break;
		case VMS_TL_INT: *p++ = DA_INT << 3; p = pb_varint(p, (uint64_t)args[i].i); break;
		case VMS_TL_HEX: *p++ = DA_POINTER << 3; p = pb_varint(p, args[i].u); break;
		case VMS_TL_NAME:
			if (args[i].u > tl->names.n || !args[i].u ||
			    !seen_bit(tr, K_STRING, args[i].u))
				goto undo;
			p = pb_uint(p, DA_STRING_IID, args[i].u);
			break;
		default:
			goto undo;   /* (a string: its id is made by pb_event_full) */
		}
		*alen = (uint8_t)(p - alen - 1);
	}
	p = close_len(len, p);
	pk[0] = TRACE_PACKET << 3 | 2;
	p = close_len(pk + 1, p);
	tl->nout = (size_t)(p - tl->out);
	return true;
undo:
	tr->last_t = last_t;   /* (pb_when moved it) */
	return false;
}

/* The track's first event: its clock. */
static __attribute__((noinline)) void pb_first(struct vms_tl *tl, uint32_t id, uint64_t t)
{
	pb_clock(tl, id, t);
}

/* A slice's BEGIN with a name the track knows (name != 0), or its END (name 0), written in
 * place: at most FAST_MAX bytes, so the lengths are one byte each. */
static inline void pb_fast(struct vms_tl *tl, struct track *tr, uint64_t t, uint32_t name)
{
	if (tl->nout + 2 + FAST_MAX > OUT_BUF)
		out_flush(tl);
	uint8_t *pk = tl->out + tl->nout, *p = pk + 2, *te;
	p = pb_when(p, tr, t);
	*p++ = PKT_TRACK_EVENT << 3 | 2;
	te = p++;
	*p++ = TE_TYPE << 3;
	if (name) {
		*p++ = TYPE_SLICE_BEGIN;
		*p++ = TE_NAME_IID << 3;
		p = pb_varint(p, name);
	} else {
		*p++ = TYPE_SLICE_END;
	}
	*te = (uint8_t)(p - te - 1);
	pk[0] = TRACE_PACKET << 3 | 2;
	pk[1] = (uint8_t)(p - pk - 2);
	tl->nout = (size_t)(p - tl->out);
}

/* A slice BEGIN (name) or END (name 0) on a track, or a counter's value. */
static inline void pb_event(struct vms_tl *tl, uint32_t id, uint64_t t, int type, uint32_t name,
			    const struct vms_tl_arg *args, unsigned nargs, double value)
{
	struct track *tr = &tl->t[id];
	if (__builtin_expect(!tr->clocked, 0))
		pb_first(tl, id, t);
	bool new_name = name && fresh(tl, id, K_EVENT_NAME, name);
	if (!new_name && !nargs && type != TYPE_COUNTER)
		pb_fast(tl, tr, t, name);
	else if (new_name || type != TYPE_SLICE_BEGIN || !pb_args_fast(tl, tr, t, name, args, nargs))
		pb_event_full(tl, id, t, type, name, new_name, args, nargs, value, 0);
}

/* A whole slice, BEGIN (name known on the track) and END, written in place: the packets of
 * most slices (CPU occupants, vCPU states). The bytes are those of pb_fast, twice. */
static inline void pb_slice_fast(struct vms_tl *tl, struct track *tr, uint64_t start,
				 uint64_t end, uint32_t name)
{
	if (tl->nout + 2 * (2 + FAST_MAX) > OUT_BUF)
		out_flush(tl);
	uint8_t *pk = tl->out + tl->nout, *p = pk + 2;
	if (__builtin_expect(start < tr->last_t || end < start, 0)) {   /* (time goes back) */
		pb_fast(tl, tr, start, name);
		pb_fast(tl, tr, end, 0);
		return;
	}
	*p++ = PKT_TIMESTAMP << 3;
	p = varint_short(p, start - tr->last_t);
	memcpy(p, tr->seq, sizeof tr->seq);
	p += tr->nseq;
	uint8_t *te = p + 1;
	p[0] = PKT_TRACK_EVENT << 3 | 2;
	p[2] = TE_TYPE << 3;
	p[3] = TYPE_SLICE_BEGIN;
	p[4] = TE_NAME_IID << 3;
	p = varint_short(p + 5, name);
	*te = (uint8_t)(p - te - 1);
	pk[0] = TRACE_PACKET << 3 | 2;
	pk[1] = (uint8_t)(p - pk - 2);
	pk = p;
	p += 2;
	*p++ = PKT_TIMESTAMP << 3;
	p = varint_short(p, end - start);
	memcpy(p, tr->seq, sizeof tr->seq);
	p += tr->nseq;
	static const uint8_t end_ev[] = { PKT_TRACK_EVENT << 3 | 2, 2, TE_TYPE << 3, TYPE_SLICE_END };
	memcpy(p, end_ev, sizeof end_ev);
	p += sizeof end_ev;
	pk[0] = TRACE_PACKET << 3 | 2;
	pk[1] = (uint8_t)(p - pk - 2);
	tr->last_t = end;
	tl->nout = (size_t)(p - tl->out);
}

/* ---- Chrome JSON ---- */

static void json_us(struct vms_json *j, const char *key, uint64_t ns)
{
	char b[32];
	snprintf(b, sizeof b, "%llu.%03llu", (unsigned long long)(ns / 1000),
		 (unsigned long long)(ns % 1000));
	vms_json_raw(j, key, b);
}

/* An event's pid and tid: a track's (id), or a lane's (LANE_TID + its key, in its group) */
struct json_who {
	uint32_t pid, tid;
};

static struct json_who json_who(const struct vms_tl *tl, uint32_t id)
{
	const struct track *tr = &tl->t[id];
	uint32_t group = tr->group == UINT32_MAX ? id : tr->group;
	return (struct json_who){ group + 1,
				  tr->group == UINT32_MAX || tr->counter ? 0 : id + 1 };
}

static void json_head(struct vms_tl *tl, const char *ph, struct json_who w)
{
	vms_json_begin_object(&tl->j, NULL);
	vms_json_string(&tl->j, "ph", ph);
	vms_json_uint(&tl->j, "pid", w.pid);
	vms_json_uint(&tl->j, "tid", w.tid);
}

static void json_meta(struct vms_tl *tl, struct json_who w, const char *what, const char *key,
		      const char *s, int64_t v)
{
	json_head(tl, "M", w);
	vms_json_string(&tl->j, "name", what);
	vms_json_begin_object(&tl->j, "args");
	if (s)
		vms_json_string(&tl->j, key, s);
	else
		vms_json_int(&tl->j, key, v);
	vms_json_end_object(&tl->j);
	vms_json_end_object(&tl->j);
}

static void json_slice(struct vms_tl *tl, struct json_who w, uint64_t start, uint64_t end,
		       uint32_t name, const struct vms_tl_arg *args, unsigned nargs)
{
	json_head(tl, "X", w);
	json_us(&tl->j, "ts", start);
	json_us(&tl->j, "dur", end > start ? end - start : 0);
	vms_json_string(&tl->j, "name", name_of(tl, name));
	if (nargs) {
		vms_json_begin_object(&tl->j, "args");
		for (unsigned i = 0; i < nargs; i++) {
			char b[24];
			const char *key = name_of(tl, args[i].key);
			switch (args[i].type) {
			case VMS_TL_UINT: vms_json_uint(&tl->j, key, args[i].u); break;
			case VMS_TL_INT: vms_json_int(&tl->j, key, args[i].i); break;
			case VMS_TL_HEX:
				snprintf(b, sizeof b, "0x%llx", (unsigned long long)args[i].u);
				vms_json_string(&tl->j, key, b);
				break;
			case VMS_TL_STR: vms_json_string(&tl->j, key, args[i].s); break;
			case VMS_TL_NAME:
				vms_json_string(&tl->j, key, name_of(tl, (uint32_t)args[i].u));
				break;
			}
		}
		vms_json_end_object(&tl->j);
	}
	vms_json_end_object(&tl->j);
}

/* ---- tracks ---- */

static uint32_t add_track(struct vms_tl *tl, uint32_t group, bool counter, const char *name)
{
	if (tl->nr == tl->cap) {
		uint32_t cap = tl->cap ? tl->cap * 2 : 64;
		struct track *nt = realloc(tl->t, cap * sizeof *nt);
		if (!nt) {
			tl->failed = true;
			return UINT32_MAX;
		}
		tl->t = nt;
		tl->cap = cap;
	}
	struct track *tr = &tl->t[tl->nr];
	memset(tr, 0, sizeof *tr);
	tr->group = group;
	tr->counter = counter;
	uint8_t *q = pb_uint(tr->seq, PKT_SEQ_ID, tl->nr + 1);
	tr->nseq = (uint8_t)(pb_uint(q, PKT_SEQ_FLAGS, SEQ_NEEDS_STATE) - tr->seq);
	if (tl->fmt == VMS_TL_CHROME_JSON &&
	    ((counter && !(tr->j.name = strdup(name))) ||
	     (!counter && group != UINT32_MAX && !(tr->j.p = calloc(1, sizeof *tr->j.p))))) {
		tl->failed = true;
		return UINT32_MAX;
	}
	return tl->nr++;
}

static uint32_t make(struct vms_tl *tl, uint32_t group, bool counter, const char *name,
		     const char *unit, int32_t rank)
{
	if (group != UINT32_MAX && group >= tl->nr)
		return UINT32_MAX;
	uint32_t id = add_track(tl, group, counter, name);
	if (id == UINT32_MAX)
		return id;
	if (tl->fmt == VMS_TL_PERFETTO) {
		pb_descriptor(tl, id, id + 1, group, counter, name, unit, rank);
	} else if (group == UINT32_MAX) {
		json_meta(tl, json_who(tl, id), "process_name", "name", name, 0);
		json_meta(tl, json_who(tl, id), "process_sort_index", "sort_index", NULL, rank);
	} else if (!counter) {
		json_meta(tl, json_who(tl, id), "thread_name", "name", name, 0);
		json_meta(tl, json_who(tl, id), "thread_sort_index", "sort_index", NULL, rank);
	}
	return id;
}

uint32_t vms_tl_group(struct vms_tl *tl, const char *name, int32_t rank)
{
	return make(tl, UINT32_MAX, false, name, NULL, rank);
}

uint32_t vms_tl_track(struct vms_tl *tl, uint32_t group, const char *name, int32_t rank)
{
	return group == UINT32_MAX ? UINT32_MAX : make(tl, group, false, name, NULL, rank);
}

uint32_t vms_tl_counter(struct vms_tl *tl, uint32_t group, const char *name, const char *unit,
			int32_t rank)
{
	return group == UINT32_MAX ? UINT32_MAX : make(tl, group, true, name, unit, rank);
}

static bool slice_track(const struct vms_tl *tl, uint32_t id)
{
	return id < tl->nr && tl->t[id].group != UINT32_MAX && !tl->t[id].counter;
}

void vms_tl_close(struct vms_tl *tl, uint32_t id, uint64_t t, const struct vms_tl_arg *args,
		  unsigned nargs)
{
	if (__builtin_expect(id < tl->nr && tl->t[id].fast && tl->t[id].open && !nargs, 1)) {
		tl->t[id].open = false;
		pb_fast(tl, &tl->t[id], t, 0);
		return;
	}
	if (!slice_track(tl, id) || !tl->t[id].open)
		return;
	struct track *tr = &tl->t[id];
	tr->open = false;
	if (tl->fmt == VMS_TL_PERFETTO) {
		pb_event(tl, id, t, TYPE_SLICE_END, 0, args,
			 nargs > VMS_TL_MAX_ARGS ? VMS_TL_MAX_ARGS : nargs, 0);
		return;
	}
	struct pending *p = tr->j.p;
	for (unsigned i = 0; i < nargs && p->nargs < VMS_TL_MAX_ARGS; i++)
		p->args[p->nargs++] = args[i];   /* used right now: no copy needed */
	json_slice(tl, json_who(tl, id), p->t, t, p->name, p->args, p->nargs);
}

void vms_tl_open(struct vms_tl *tl, uint32_t id, uint64_t t, uint32_t name,
		 const struct vms_tl_arg *args, unsigned nargs)
{
	/* most: a clocked Perfetto slice track with nothing open, a name and argument keys it
	 * was told (vms_tl_slice's fast path) */
	if (__builtin_expect(id < tl->nr, 1)) {
		struct track *tr = &tl->t[id];
		if (__builtin_expect(tr->fast && !tr->open && name &&
				     seen_bit(tr, K_EVENT_NAME, name), 1)) {
			if (!nargs) {
				pb_fast(tl, tr, t, name);
				tr->open = true;
				return;
			}
			if (nargs <= VMS_TL_MAX_ARGS && pb_args_fast(tl, tr, t, name, args, nargs)) {
				tr->open = true;
				return;
			}
		}
	}
	if (!slice_track(tl, id) || !name)
		return;
	if (tl->t[id].open)
		vms_tl_close(tl, id, t, NULL, 0);
	if (nargs > VMS_TL_MAX_ARGS)
		nargs = VMS_TL_MAX_ARGS;
	struct track *tr = &tl->t[id];
	tr->open = true;
	if (tl->fmt == VMS_TL_PERFETTO) {
		pb_event(tl, id, t, TYPE_SLICE_BEGIN, name, args, nargs, 0);
		return;
	}
	struct pending *p = tr->j.p;
	p->t = t;
	p->name = name;
	p->nargs = nargs;
	for (unsigned i = 0; i < nargs; i++) {
		p->args[i] = args[i];
		if (args[i].type == VMS_TL_STR) {
			snprintf(p->sval[i], sizeof p->sval[i], "%s", args[i].s ? args[i].s : "");
			p->args[i].s = p->sval[i];
		}
	}
}

static __attribute__((noinline)) void slice_slow(struct vms_tl *tl, uint32_t id, uint64_t start,
						  uint64_t end, uint32_t name,
						  const struct vms_tl_arg *args, unsigned nargs);

void vms_tl_slice(struct vms_tl *tl, uint32_t id, uint64_t start, uint64_t end,
		  uint32_t name, const struct vms_tl_arg *args, unsigned nargs)
{
	/* most slices: a Perfetto slice track already clocked, a name it was told, arguments
	 * whose keys it knows (most have none) */
	if (__builtin_expect(id < tl->nr, 1)) {
		struct track *tr = &tl->t[id];
		if (__builtin_expect(tr->fast && name && seen_bit(tr, K_EVENT_NAME, name), 1)) {
			if (!nargs) {
				pb_slice_fast(tl, tr, start, end, name);
				return;
			}
			if (nargs <= VMS_TL_MAX_ARGS && pb_args_fast(tl, tr, start, name, args, nargs)) {
				pb_fast(tl, tr, end, 0);
				return;
			}
		}
	}
	slice_slow(tl, id, start, end, name, args, nargs);
}

static void slice_slow(struct vms_tl *tl, uint32_t id, uint64_t start, uint64_t end,
		       uint32_t name, const struct vms_tl_arg *args, unsigned nargs)
{
	if (!slice_track(tl, id) || !name)
		return;
	if (nargs > VMS_TL_MAX_ARGS)
		nargs = VMS_TL_MAX_ARGS;
	if (tl->fmt == VMS_TL_PERFETTO) {
		struct track *tr = &tl->t[id];
		if (__builtin_expect(tr->clocked && !nargs, 1)) {
			if (!fresh(tl, id, K_EVENT_NAME, name))
				pb_slice_fast(tl, tr, start, end, name);
			else {   /* (fresh took it as interned: this packet does it) */
				pb_event_full(tl, id, start, TYPE_SLICE_BEGIN, name, true, NULL, 0, 0,
					      0);
				pb_fast(tl, tr, end, 0);
			}
			return;
		}
		pb_event(tl, id, start, TYPE_SLICE_BEGIN, name, args, nargs, 0);
		pb_event(tl, id, end, TYPE_SLICE_END, 0, NULL, 0, 0);
	} else {
		json_slice(tl, json_who(tl, id), start, end, name, args, nargs);
	}
}

/* ---- lanes: tracks that keep nothing here ---- */

static bool lane_ok(const struct vms_tl *tl, uint32_t group, uint32_t key)
{
	return group < tl->nr && tl->t[group].group == UINT32_MAX && key < VMS_TL_LANE_KEYS;
}

int vms_tl_lane(struct vms_tl *tl, uint32_t group, uint32_t key, const char *name, int32_t rank)
{
	if (!lane_ok(tl, group, key))
		return -1;
	if (tl->fmt == VMS_TL_PERFETTO) {
		pb_descriptor(tl, group, LANE_UUID + key, group, false, name, NULL, rank);
	} else {
		struct json_who w = { group + 1, LANE_TID + key };
		json_meta(tl, w, "thread_name", "name", name, 0);
		json_meta(tl, w, "thread_sort_index", "sort_index", NULL, rank);
	}
	return 0;
}

void vms_tl_lane_slice(struct vms_tl *tl, uint32_t group, uint32_t key, uint64_t start,
		       uint64_t end, uint32_t name)
{
	if (!lane_ok(tl, group, key) || !name)
		return;
	if (tl->fmt == VMS_TL_CHROME_JSON) {
		json_slice(tl, (struct json_who){ group + 1, LANE_TID + key }, start, end, name,
			   NULL, 0);
		return;
	}
	/* on the group's sequence (its clock and what it was told), naming the lane */
	if (!tl->t[group].clocked)
		pb_first(tl, group, start);
	bool new_name = fresh(tl, group, K_EVENT_NAME, name);
	pb_event_full(tl, group, start, TYPE_SLICE_BEGIN, name, new_name, NULL, 0, 0,
		      LANE_UUID + key);
	pb_event_full(tl, group, end, TYPE_SLICE_END, 0, false, NULL, 0, 0, LANE_UUID + key);
}

void vms_tl_count(struct vms_tl *tl, uint32_t id, uint64_t t, double v)
{
	if (id >= tl->nr || !tl->t[id].counter)
		return;
	if (tl->fmt == VMS_TL_PERFETTO) {
		pb_event(tl, id, t, TYPE_COUNTER, 0, NULL, 0, v);
		return;
	}
	json_head(tl, "C", json_who(tl, id));
	json_us(&tl->j, "ts", t);
	vms_json_string(&tl->j, "name", tl->t[id].j.name);
	vms_json_begin_object(&tl->j, "args");
	vms_json_double(&tl->j, "value", v);
	vms_json_end_object(&tl->j);
	vms_json_end_object(&tl->j);
}

/* ---- life ---- */

struct vms_tl *vms_tl_new(FILE *f, enum vms_tl_format fmt, bool deflate)
{
	struct vms_tl *tl = calloc(1, sizeof *tl);
	if (!tl)
		return NULL;
	tl->f = f;
	tl->fmt = fmt;
	if (fmt == VMS_TL_PERFETTO &&
	    (!(tl->out = malloc(OUT_BUF + 16)) ||   /* (pb_when copies SEQ_HEAD_MAX bytes) */
	     (deflate && !(tl->zout = malloc(compressBound(OUT_BUF)))))) {
		free(tl->out);
		free(tl);
		return NULL;
	}
	vms_keymap_init(&tl->names.map);
	vms_keymap_init(&tl->names.lit);
	vms_keymap_init(&tl->sent);
	if (fmt == VMS_TL_CHROME_JSON) {
		vms_json_init(&tl->j, f, false);
		vms_json_begin_object(&tl->j, NULL);
		vms_json_string(&tl->j, "displayTimeUnit", "ns");
		vms_json_begin_array(&tl->j, "traceEvents");
	}
	return tl;
}

int vms_tl_finish(struct vms_tl *tl, uint64_t t_end)
{
	for (uint32_t id = 0; id < tl->nr; id++)
		vms_tl_close(tl, id, t_end, NULL, 0);
	if (tl->fmt == VMS_TL_CHROME_JSON) {
		vms_json_end_array(&tl->j);
		vms_json_end_object(&tl->j);
		vms_json_finish(&tl->j);
	}
	out_flush(tl);
	if (fflush(tl->f) != 0 || ferror(tl->f))
		tl->failed = true;
	return tl->failed ? -1 : 0;
}

void vms_tl_free(struct vms_tl *tl)
{
	if (!tl)
		return;
	for (uint32_t i = 0; i < tl->nr; i++) {
		free(tl->t[i].seen);
		free(tl->t[i].j.name);   /* (or j.p) */
	}
	free(tl->t);
	names_free(&tl->names);
	vms_keymap_free(&tl->sent);
	free(tl->out);
	free(tl->zout);
	free(tl);
}
