/* The timeline writer (timeline.h): Perfetto protobuf or Chrome JSON.
 *
 * Perfetto (perfetto_trace.proto): the file is a stream of Trace.packet records (field 1,
 * length-delimited), each written as soon as it is built. All packets are on one sequence
 * (trusted_packet_sequence_id 1); the first says the sequence's incremental state is cleared
 * (sequence_flags 3), every track event says it uses it (2): slice and argument names are
 * interned (InternedData in the packet that first uses a name, its iid afterwards). A track
 * is a TrackDescriptor written when the track is made, before its first event; groups are
 * process tracks, so the UI shows one collapsible group per machine.
 *
 * Chrome JSON ({"traceEvents": [...]}): groups are processes (pid = group + 1), tracks are
 * threads (tid = track + 1) named by metadata events, slices complete events ("X", ts and dur
 * in microseconds with ns decimals, written exactly), counters "C" events. */
#include <stdlib.h>
#include <string.h>

#include "model/keymap.h"
#include "pb_wire.h"
#include "timeline.h"
#include "vmscope/writers.h"

/* perfetto_trace.proto field numbers */
enum {
	TRACE_PACKET = 1,
	PKT_TIMESTAMP = 8, PKT_SEQ_ID = 10, PKT_TRACK_EVENT = 11, PKT_INTERNED = 12,
	PKT_SEQ_FLAGS = 13, PKT_TRACK_DESCRIPTOR = 60,
	TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_PARENT = 5, TD_COUNTER = 8,
	TD_CHILD_ORDERING = 11, TD_SIBLING_RANK = 12,
	PD_PID = 1, PD_NAME = 6,
	CD_UNIT_NAME = 6,
	TE_ANNOTATIONS = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK_UUID = 11, TE_DOUBLE_VALUE = 44,
	DA_NAME_IID = 1, DA_UINT = 3, DA_INT = 4, DA_STRING = 6, DA_POINTER = 7,
	ID_EVENT_NAMES = 2, ID_ANNOTATION_NAMES = 3, IN_IID = 1, IN_NAME = 2,
	TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_COUNTER = 4,
	ORDER_EXPLICIT = 3,
	SEQ_CLEARED = 1, SEQ_NEEDS = 2,
};

#define NAME_MAX_LEN 96

struct intern {
	struct vms_keymap map;  /* hash of the string -> iid */
	char **str;             /* [iid - 1] */
	uint32_t n, cap;
};

struct pending {                /* Chrome JSON: the open slice, written at its close */
	uint64_t t;
	char name[NAME_MAX_LEN];
	struct vms_tl_arg args[VMS_TL_MAX_ARGS];
	char sval[VMS_TL_MAX_ARGS][32];
	unsigned nargs;
};

struct track {
	uint32_t group;         /* UINT32_MAX for a group itself */
	bool counter, open;
	char *name;             /* Chrome JSON counters are named in every event */
	struct pending *p;      /* Chrome JSON only */
};

#define OUT_BUF (256 * 1024)

struct vms_tl {
	FILE *f;
	uint8_t *out;           /* Perfetto: packets gathered here, written in big pieces */
	size_t nout;
	enum vms_tl_format fmt;
	bool failed;
	struct vms_pb pb;
	bool first_packet;
	struct intern names, keys;
	struct track *t;
	uint32_t nr, cap;
	struct vms_json j;
};

/* ---- interning ---- */

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The iid of s (from 1); *fresh when it was just made. 0 when out of memory. */
static uint64_t intern(struct intern *in, const char *s, bool *fresh)
{
	*fresh = false;
	for (uint64_t k = fnv1a(s);; k++) {
		if (k == VMS_KEYMAP_EMPTY)
			continue;
		uint64_t *v = vms_keymap_get(&in->map, k);
		if (v && !strcmp(in->str[*v - 1], s))
			return *v;
		if (v)
			continue;   /* another string with this hash: probe on */
		if (in->n == in->cap) {
			uint32_t cap = in->cap ? in->cap * 2 : 64;
			char **ns = realloc(in->str, cap * sizeof *ns);
			if (!ns)
				return 0;
			in->str = ns;
			in->cap = cap;
		}
		char *copy = strdup(s);
		if (!copy || !vms_keymap_put(&in->map, k, in->n + 1, NULL)) {
			free(copy);
			return 0;
		}
		in->str[in->n++] = copy;
		*fresh = true;
		return in->n;
	}
}

static void intern_free(struct intern *in)
{
	for (uint32_t i = 0; i < in->n; i++)
		free(in->str[i]);
	free(in->str);
	vms_keymap_free(&in->map);
}

/* ---- Perfetto packets ---- */

static void packet_begin(struct vms_tl *tl)
{
	vms_pb_reset(&tl->pb);
	vms_pb_begin(&tl->pb, TRACE_PACKET);
	vms_pb_uint(&tl->pb, PKT_SEQ_ID, 1);
	if (tl->first_packet) {
		vms_pb_uint(&tl->pb, PKT_SEQ_FLAGS, SEQ_CLEARED | SEQ_NEEDS);
		tl->first_packet = false;
	}
}

static void out_flush(struct vms_tl *tl)
{
	if (tl->nout && fwrite(tl->out, 1, tl->nout, tl->f) != tl->nout)
		tl->failed = true;
	tl->nout = 0;
}

static void out_write(struct vms_tl *tl, const uint8_t *b, size_t n)
{
	if (tl->nout + n > OUT_BUF)
		out_flush(tl);
	if (n > OUT_BUF) {
		if (fwrite(b, 1, n, tl->f) != n)
			tl->failed = true;
		return;
	}
	memcpy(tl->out + tl->nout, b, n);
	tl->nout += n;
}

static void packet_end(struct vms_tl *tl)
{
	vms_pb_end(&tl->pb);
	vms_pb_compact(&tl->pb);
	if (tl->pb.failed) {
		tl->failed = true;
		return;
	}
	out_write(tl, tl->pb.buf, tl->pb.len);
}

static size_t put_varint(uint8_t *b, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		b[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b[n++] = (uint8_t)v;
	return n;
}

/* The two packets of most slices, written directly (the same bytes the general path makes,
 * without its bookkeeping): a slice's end, and a begin whose name is interned already and
 * that has no arguments. name_iid 0: an end. */
static void pb_fast(struct vms_tl *tl, uint32_t id, uint64_t t, uint64_t name_iid)
{
	uint8_t te[32], pk[64];
	size_t m = 0, n = 0;
	te[m++] = TE_TYPE << 3;
	te[m++] = name_iid ? TYPE_SLICE_BEGIN : TYPE_SLICE_END;
	te[m++] = TE_TRACK_UUID << 3;
	m += put_varint(te + m, (uint64_t)id + 1);
	if (name_iid) {
		te[m++] = TE_NAME_IID << 3;
		m += put_varint(te + m, name_iid);
	}
	pk[n++] = PKT_TIMESTAMP << 3;
	n += put_varint(pk + n, t);
	pk[n++] = PKT_SEQ_ID << 3;
	pk[n++] = 1;
	pk[n++] = PKT_SEQ_FLAGS << 3;
	pk[n++] = SEQ_NEEDS;
	pk[n++] = PKT_TRACK_EVENT << 3 | 2;
	pk[n++] = (uint8_t)m;            /* m < 128 */
	memcpy(pk + n, te, m);
	n += m;
	uint8_t head[2] = { TRACE_PACKET << 3 | 2, (uint8_t)n };   /* n < 128 */
	out_write(tl, head, 2);
	out_write(tl, pk, n);
}

static void pb_descriptor(struct vms_tl *tl, uint32_t id, const char *name, const char *unit,
			  int32_t rank)
{
	const struct track *tr = &tl->t[id];
	packet_begin(tl);
	vms_pb_begin(&tl->pb, PKT_TRACK_DESCRIPTOR);
	vms_pb_uint(&tl->pb, TD_UUID, id + 1);
	if (tr->group == UINT32_MAX) {
		vms_pb_begin(&tl->pb, TD_PROCESS);
		vms_pb_int(&tl->pb, PD_PID, (int64_t)id + 1);
		vms_pb_string(&tl->pb, PD_NAME, name);
		vms_pb_end(&tl->pb);
		vms_pb_uint(&tl->pb, TD_CHILD_ORDERING, ORDER_EXPLICIT);
	} else {
		vms_pb_uint(&tl->pb, TD_PARENT, tr->group + 1);
		vms_pb_string(&tl->pb, TD_NAME, name);
		if (tr->counter) {
			vms_pb_begin(&tl->pb, TD_COUNTER);
			vms_pb_string(&tl->pb, CD_UNIT_NAME, unit);
			vms_pb_end(&tl->pb);
		}
	}
	vms_pb_int(&tl->pb, TD_SIBLING_RANK, rank);
	vms_pb_end(&tl->pb);
	packet_end(tl);
}

/* A slice begin (name != NULL) or end on a track, or a counter value (name NULL, counter). */
static void pb_event(struct vms_tl *tl, uint32_t id, uint64_t t, int type, const char *name,
		     const struct vms_tl_arg *args, unsigned nargs, double value)
{
	bool fresh_name = false, fresh_key[VMS_TL_MAX_ARGS] = { false };
	uint64_t name_iid = 0, key_iid[VMS_TL_MAX_ARGS] = { 0 };
	bool any_fresh = false;
	if (name) {
		name_iid = intern(&tl->names, name, &fresh_name);
		any_fresh |= fresh_name;
	}
	for (unsigned i = 0; i < nargs; i++) {
		key_iid[i] = intern(&tl->keys, args[i].key, &fresh_key[i]);
		any_fresh |= fresh_key[i];
	}
	if ((name && !name_iid)) {
		tl->failed = true;
		return;
	}
	if (!any_fresh && !nargs && type != TYPE_COUNTER && !tl->first_packet) {
		pb_fast(tl, id, t, name ? name_iid : 0);
		return;
	}
	packet_begin(tl);
	vms_pb_uint(&tl->pb, PKT_TIMESTAMP, t);
	vms_pb_uint(&tl->pb, PKT_SEQ_FLAGS, SEQ_NEEDS);
	if (any_fresh) {
		vms_pb_begin(&tl->pb, PKT_INTERNED);
		if (fresh_name) {
			vms_pb_begin(&tl->pb, ID_EVENT_NAMES);
			vms_pb_uint(&tl->pb, IN_IID, name_iid);
			vms_pb_string(&tl->pb, IN_NAME, name);
			vms_pb_end(&tl->pb);
		}
		for (unsigned i = 0; i < nargs; i++)
			if (fresh_key[i]) {
				vms_pb_begin(&tl->pb, ID_ANNOTATION_NAMES);
				vms_pb_uint(&tl->pb, IN_IID, key_iid[i]);
				vms_pb_string(&tl->pb, IN_NAME, args[i].key);
				vms_pb_end(&tl->pb);
			}
		vms_pb_end(&tl->pb);
	}
	vms_pb_begin(&tl->pb, PKT_TRACK_EVENT);
	vms_pb_uint(&tl->pb, TE_TYPE, (uint64_t)type);
	vms_pb_uint(&tl->pb, TE_TRACK_UUID, id + 1);
	if (name)
		vms_pb_uint(&tl->pb, TE_NAME_IID, name_iid);
	for (unsigned i = 0; i < nargs; i++) {
		if (!key_iid[i])
			continue;
		vms_pb_begin(&tl->pb, TE_ANNOTATIONS);
		vms_pb_uint(&tl->pb, DA_NAME_IID, key_iid[i]);
		switch (args[i].type) {
		case VMS_TL_UINT: vms_pb_uint(&tl->pb, DA_UINT, args[i].u); break;
		case VMS_TL_INT: vms_pb_int(&tl->pb, DA_INT, args[i].i); break;
		case VMS_TL_HEX: vms_pb_uint(&tl->pb, DA_POINTER, args[i].u); break;
		case VMS_TL_STR: vms_pb_string(&tl->pb, DA_STRING, args[i].s ? args[i].s : ""); break;
		}
		vms_pb_end(&tl->pb);
	}
	if (type == TYPE_COUNTER)
		vms_pb_double(&tl->pb, TE_DOUBLE_VALUE, value);
	vms_pb_end(&tl->pb);
	packet_end(tl);
}

/* ---- Chrome JSON ---- */

static void json_us(struct vms_json *j, const char *key, uint64_t ns)
{
	char b[32];
	snprintf(b, sizeof b, "%llu.%03llu", (unsigned long long)(ns / 1000),
		 (unsigned long long)(ns % 1000));
	vms_json_raw(j, key, b);
}

static void json_head(struct vms_tl *tl, const char *ph, uint32_t id)
{
	const struct track *tr = &tl->t[id];
	uint32_t group = tr->group == UINT32_MAX ? id : tr->group;
	vms_json_begin_object(&tl->j, NULL);
	vms_json_string(&tl->j, "ph", ph);
	vms_json_uint(&tl->j, "pid", group + 1);
	vms_json_uint(&tl->j, "tid", tr->group == UINT32_MAX || tr->counter ? 0 : id + 1);
}

static void json_meta(struct vms_tl *tl, uint32_t id, const char *what, const char *key,
		      const char *s, int64_t v)
{
	json_head(tl, "M", id);
	vms_json_string(&tl->j, "name", what);
	vms_json_begin_object(&tl->j, "args");
	if (s)
		vms_json_string(&tl->j, key, s);
	else
		vms_json_int(&tl->j, key, v);
	vms_json_end_object(&tl->j);
	vms_json_end_object(&tl->j);
}

static void json_slice(struct vms_tl *tl, uint32_t id, uint64_t start, uint64_t end,
		       const char *name, const struct vms_tl_arg *args, unsigned nargs)
{
	json_head(tl, "X", id);
	json_us(&tl->j, "ts", start);
	json_us(&tl->j, "dur", end > start ? end - start : 0);
	vms_json_string(&tl->j, "name", name);
	if (nargs) {
		vms_json_begin_object(&tl->j, "args");
		for (unsigned i = 0; i < nargs; i++) {
			char b[24];
			switch (args[i].type) {
			case VMS_TL_UINT: vms_json_uint(&tl->j, args[i].key, args[i].u); break;
			case VMS_TL_INT: vms_json_int(&tl->j, args[i].key, args[i].i); break;
			case VMS_TL_HEX:
				snprintf(b, sizeof b, "0x%llx", (unsigned long long)args[i].u);
				vms_json_string(&tl->j, args[i].key, b);
				break;
			case VMS_TL_STR: vms_json_string(&tl->j, args[i].key, args[i].s); break;
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
	if (counter && !(tr->name = strdup(name))) {
		tl->failed = true;
		return UINT32_MAX;
	}
	if (tl->fmt == VMS_TL_CHROME_JSON && !counter && group != UINT32_MAX &&
	    !(tr->p = calloc(1, sizeof *tr->p))) {
		free(tr->name);
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
		pb_descriptor(tl, id, name, unit, rank);
	} else if (group == UINT32_MAX) {
		json_meta(tl, id, "process_name", "name", name, 0);
		json_meta(tl, id, "process_sort_index", "sort_index", NULL, rank);
	} else if (!counter) {
		json_meta(tl, id, "thread_name", "name", name, 0);
		json_meta(tl, id, "thread_sort_index", "sort_index", NULL, rank);
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
	if (!slice_track(tl, id) || !tl->t[id].open)
		return;
	struct track *tr = &tl->t[id];
	tr->open = false;
	if (tl->fmt == VMS_TL_PERFETTO) {
		pb_event(tl, id, t, TYPE_SLICE_END, NULL, args,
			 nargs > VMS_TL_MAX_ARGS ? VMS_TL_MAX_ARGS : nargs, 0);
		return;
	}
	struct pending *p = tr->p;
	for (unsigned i = 0; i < nargs && p->nargs < VMS_TL_MAX_ARGS; i++)
		p->args[p->nargs++] = args[i];   /* used right now: no copy needed */
	json_slice(tl, id, p->t, t, p->name, p->args, p->nargs);
}

void vms_tl_open(struct vms_tl *tl, uint32_t id, uint64_t t, const char *name,
		 const struct vms_tl_arg *args, unsigned nargs)
{
	if (!slice_track(tl, id))
		return;
	vms_tl_close(tl, id, t, NULL, 0);
	if (nargs > VMS_TL_MAX_ARGS)
		nargs = VMS_TL_MAX_ARGS;
	struct track *tr = &tl->t[id];
	tr->open = true;
	if (tl->fmt == VMS_TL_PERFETTO) {
		pb_event(tl, id, t, TYPE_SLICE_BEGIN, name, args, nargs, 0);
		return;
	}
	struct pending *p = tr->p;
	p->t = t;
	snprintf(p->name, sizeof p->name, "%s", name);
	p->nargs = nargs;
	for (unsigned i = 0; i < nargs; i++) {
		p->args[i] = args[i];
		if (args[i].type == VMS_TL_STR) {
			snprintf(p->sval[i], sizeof p->sval[i], "%s", args[i].s ? args[i].s : "");
			p->args[i].s = p->sval[i];
		}
	}
}

void vms_tl_slice(struct vms_tl *tl, uint32_t id, uint64_t start, uint64_t end,
		  const char *name, const struct vms_tl_arg *args, unsigned nargs)
{
	if (!slice_track(tl, id))
		return;
	if (nargs > VMS_TL_MAX_ARGS)
		nargs = VMS_TL_MAX_ARGS;
	if (tl->fmt == VMS_TL_PERFETTO) {
		pb_event(tl, id, start, TYPE_SLICE_BEGIN, name, args, nargs, 0);
		pb_event(tl, id, end, TYPE_SLICE_END, NULL, NULL, 0, 0);
	} else {
		json_slice(tl, id, start, end, name, args, nargs);
	}
}

void vms_tl_count(struct vms_tl *tl, uint32_t id, uint64_t t, double v)
{
	if (id >= tl->nr || !tl->t[id].counter)
		return;
	if (tl->fmt == VMS_TL_PERFETTO) {
		pb_event(tl, id, t, TYPE_COUNTER, NULL, NULL, 0, v);
		return;
	}
	json_head(tl, "C", id);
	json_us(&tl->j, "ts", t);
	vms_json_string(&tl->j, "name", tl->t[id].name);
	vms_json_begin_object(&tl->j, "args");
	vms_json_double(&tl->j, "value", v);
	vms_json_end_object(&tl->j);
	vms_json_end_object(&tl->j);
}

/* ---- life ---- */

struct vms_tl *vms_tl_new(FILE *f, enum vms_tl_format fmt)
{
	struct vms_tl *tl = calloc(1, sizeof *tl);
	if (!tl)
		return NULL;
	tl->f = f;
	tl->fmt = fmt;
	tl->first_packet = true;
	vms_pb_init(&tl->pb);
	if (fmt == VMS_TL_PERFETTO && !(tl->out = malloc(OUT_BUF))) {
		free(tl);
		return NULL;
	}
	vms_keymap_init(&tl->names.map);
	vms_keymap_init(&tl->keys.map);
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
		free(tl->t[i].name);
		free(tl->t[i].p);
	}
	free(tl->t);
	intern_free(&tl->names);
	intern_free(&tl->keys);
	vms_pb_free(&tl->pb);
	free(tl->out);
	free(tl);
}
