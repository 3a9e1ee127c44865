/* The session's checkpoints (checkpoints.h). The recording, native byte order (it is read
 * back by the build that wrote it: the index's key names the program):
 *   "VMSCK1\0\0", u32 sources, per source u32 event types, u32 merged streams
 *   per checkpoint: u64 length of what follows, then
 *     u64 t (the last event's reference time), u64 n (events fed so far), u64 first (the
 *     pass's first event), u64 backwards (the merge's time inversions so far)
 *     per stream: u8 mark state, VMS_POS_WORDS u64 position words (lib/core/merge.h)
 *     per source: u32 k, k x (u32 type, u64 count): the nonzero counts
 *     u64 length, the analysis's state (vms_analysis_checkpoint)
 * A loaded recording is untrusted: every length and count is checked against the bytes
 * before use, the positions by the readers' seek, the analysis's state by its restore. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints.h"
#include "core/byte_reader.h"
#include "vmscope/observe.h"

static const char magic[8] = { 'V', 'M', 'S', 'C', 'K', '1', 0, 0 };
#define MARK_BYTES (1 + 8 * VMS_POS_WORDS)

struct ck_set {
	/* recording */
	uint64_t every;
	FILE *f;
	char *buf;
	size_t len;
	bool stopped, header;
	/* both */
	uint32_t nr_src;
	uint32_t *nr_types;
	uint32_t nr_streams;
	/* loaded: where each checkpoint is, and its time */
	const uint8_t *data;
	size_t data_len;
	uint64_t nr, *at, *t;
	uint64_t first;
};

static struct ck_set *ck_alloc(uint32_t nr_src, const uint32_t *nr_types)
{
	struct ck_set *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->nr_src = nr_src;
	c->nr_types = calloc(nr_src ? nr_src : 1, sizeof *c->nr_types);
	if (!c->nr_types) {
		free(c);
		return NULL;
	}
	memcpy(c->nr_types, nr_types, nr_src * sizeof *nr_types);
	return c;
}

struct ck_set *ck_recorder(uint64_t every, uint32_t nr_src, const uint32_t *nr_types)
{
	struct ck_set *c = ck_alloc(nr_src, nr_types);
	if (!c)
		return NULL;
	c->every = every;
	c->f = open_memstream(&c->buf, &c->len);
	if (!c->f) {
		ck_free(c);
		return NULL;
	}
	return c;
}

static int put(FILE *f, const void *p, size_t n)
{
	return n && fwrite(p, 1, n, f) != n ? -1 : 0;
}

/* One checkpoint's bytes, without its length. */
static int record(FILE *f, struct vms_merge *m, struct vms_analysis *an, uint64_t t, uint64_t n,
		  uint64_t first, uint64_t *const *type_counts, const struct ck_set *c)
{
	struct vms_merge_mark *marks = calloc(m->nr_streams ? m->nr_streams : 1, sizeof *marks);
	if (!marks || vms_merge_tell(m, marks) < 0) {
		free(marks);
		return -1;
	}
	uint64_t h[4] = { t, n, first, m->backwards };
	int bad = put(f, h, sizeof h);
	for (uint32_t i = 0; i < m->nr_streams; i++)
		bad |= put(f, &marks[i].state, 1) | put(f, marks[i].pos.w, 8 * VMS_POS_WORDS);
	free(marks);
	for (uint32_t s = 0; s < c->nr_src; s++) {
		uint32_t k = 0;
		for (uint32_t i = 0; i < c->nr_types[s]; i++)
			k += type_counts[s][i] != 0;
		bad |= put(f, &k, 4);
		for (uint32_t i = 0; i < c->nr_types[s]; i++)
			if (type_counts[s][i])
				bad |= put(f, &i, 4) | put(f, &type_counts[s][i], 8);
	}
	char *ab = NULL;
	size_t al = 0;
	FILE *af = open_memstream(&ab, &al);
	if (!af)
		return -1;
	bad |= vms_analysis_checkpoint(an, af);
	bad |= fclose(af) != 0 ? -1 : 0;
	uint64_t l = al;
	bad |= put(f, &l, 8) | put(f, ab, al);
	free(ab);
	return bad ? -1 : 0;
}

int ck_take(struct ck_set *c, struct vms_merge *m, struct vms_analysis *an, uint64_t t,
	    uint64_t n, uint64_t first, uint64_t *const *type_counts)
{
	if (c->stopped || !c->f)
		return -1;
	if (!c->header) {
		c->nr_streams = m->nr_streams;
		int bad = put(c->f, magic, sizeof magic) | put(c->f, &c->nr_src, 4) |
			  put(c->f, c->nr_types, 4 * (size_t)c->nr_src) |
			  put(c->f, &c->nr_streams, 4);
		c->header = true;
		if (bad)
			goto stop;
	}
	char *rb = NULL;
	size_t rl = 0;
	FILE *rf = open_memstream(&rb, &rl);
	if (!rf)
		goto stop;
	int bad = record(rf, m, an, t, n, first, type_counts, c);
	bad |= fclose(rf) != 0 ? -1 : 0;
	uint64_t l = rl;
	if (!bad)
		bad = put(c->f, &l, 8) | put(c->f, rb, rl);
	free(rb);
	if (bad)
		goto stop;
	c->nr++;
	return 0;
stop:
	/* what was written is dropped: a recording is whole or none */
	c->stopped = true;
	return -1;
}

const void *ck_bytes(struct ck_set *c, size_t *len)
{
	*len = 0;
	if (!c || c->stopped || !c->f || !c->nr)
		return NULL;
	if (fflush(c->f) != 0)
		return NULL;
	*len = c->len;
	return c->buf;
}

static int bad_at(struct vms_error *err, size_t off, const char *what)
{
	return vms_error_set(err, VMS_ERR_FORMAT, "checkpoints: %s at byte offset %zu", what, off);
}

struct ck_set *ck_load(const void *buf, size_t len, uint32_t nr_src, const uint32_t *nr_types,
		       uint32_t nr_streams, struct vms_error *err)
{
	struct ck_set *c = ck_alloc(nr_src, nr_types);
	if (!c) {
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	struct vms_rd r = { buf, len, 0 };
	char mg[8];
	uint32_t ns;
	if (!vms_rd_take(&r, mg, 8) || memcmp(mg, magic, 8) || !vms_rd_take(&r, &ns, 4) || ns != nr_src) {
		bad_at(err, r.off, "not a recording of these traces");
		goto fail;
	}
	for (uint32_t i = 0; i < nr_src; i++) {
		uint32_t nt;
		if (!vms_rd_take(&r, &nt, 4) || nt != nr_types[i]) {
			bad_at(err, r.off, "not a recording of these traces");
			goto fail;
		}
	}
	if (!vms_rd_take(&r, &c->nr_streams, 4) || c->nr_streams != nr_streams) {
		bad_at(err, r.off, "not a recording of these traces' streams");
		goto fail;
	}
	/* the checkpoints: sized by what the bytes hold (each at least its fixed part) */
	size_t fixed = 8 + 32 + (size_t)c->nr_streams * MARK_BYTES + 4 * (size_t)nr_src + 8;
	uint64_t most = r.left / fixed + 1;
	c->at = calloc(most, sizeof *c->at);
	c->t = calloc(most, sizeof *c->t);
	if (!c->at || !c->t) {
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		goto fail;
	}
	uint64_t prev_n = 0;
	while (r.left) {
		uint64_t l, h[4];
		size_t at = r.off;
		if (!vms_rd_take(&r, &l, 8) || l > r.left || l < fixed - 8 || c->nr >= most) {
			bad_at(err, at, "a checkpoint cut");
			goto fail;
		}
		memcpy(h, r.p, sizeof h);
		if (h[1] <= prev_n || (c->nr && (h[0] < c->t[c->nr - 1] || h[2] != c->first)) ||
		    h[0] < h[2]) {
			bad_at(err, at, "checkpoints out of order");
			goto fail;
		}
		prev_n = h[1];
		c->first = h[2];
		c->at[c->nr] = at + 8;
		c->t[c->nr++] = h[0];
		vms_rd_take(&r, NULL, (size_t)l);
	}
	c->data = buf;
	c->data_len = len;
	return c;
fail:
	ck_free(c);
	return NULL;
}

bool ck_first(const struct ck_set *c, uint64_t *first)
{
	*first = c->first;
	return c->nr > 0;
}

int ck_pick(const struct ck_set *c, uint64_t lo, struct ck_view *v, struct vms_error *err)
{
	memset(v, 0, sizeof *v);
	/* the last one whose time is before lo: every event at or after lo comes after it (the
	 * merge hands out times that never decrease) */
	uint64_t a = 0, b = c->nr;
	while (a < b) {
		uint64_t mid = a + (b - a) / 2;
		if (c->t[mid] < lo)
			a = mid + 1;
		else
			b = mid;
	}
	if (a == 0)
		return 0;
	struct vms_rd r = { c->data + c->at[a - 1], 0, c->at[a - 1] };
	uint64_t l;
	memcpy(&l, c->data + c->at[a - 1] - 8, 8);
	r.left = (size_t)l;
	uint64_t h[4];
	vms_rd_take(&r, h, sizeof h);
	v->t = h[0];
	v->n = h[1];
	v->first = h[2];
	v->backwards = h[3];
	v->nr_marks = c->nr_streams;
	v->marks = calloc(c->nr_streams ? c->nr_streams : 1, sizeof *v->marks);
	if (!v->marks)
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	for (uint32_t i = 0; i < c->nr_streams; i++) {
		vms_rd_take(&r, &v->marks[i].state, 1);
		vms_rd_take(&r, v->marks[i].pos.w, 8 * VMS_POS_WORDS);
	}
	v->counts = r.p;
	size_t before = r.off;
	for (uint32_t s = 0; s < c->nr_src; s++) {
		uint32_t k;
		if (!vms_rd_take(&r, &k, 4) || k > c->nr_types[s] || (uint64_t)k * 12 > r.left) {
			ck_view_free(v);
			return bad_at(err, r.off, "type counts cut");
		}
		vms_rd_take(&r, NULL, (size_t)k * 12);
	}
	v->counts_len = r.off - before;
	uint64_t al;
	if (!vms_rd_take(&r, &al, 8) || al != r.left) {
		ck_view_free(v);
		return bad_at(err, r.off, "analysis state cut");
	}
	v->an = r.p;
	v->an_len = (size_t)al;
	return 1;
}

int ck_view_counts(const struct ck_set *c, const struct ck_view *v, uint64_t *const *type_counts,
		   struct vms_error *err)
{
	struct vms_rd r = { v->counts, v->counts_len, (size_t)(v->counts - c->data) };
	for (uint32_t s = 0; s < c->nr_src; s++) {
		uint32_t k = 0;
		vms_rd_take(&r, &k, 4);   /* (ck_pick checked the lengths) */
		uint32_t prev = 0;
		for (uint32_t i = 0; i < k; i++) {
			uint32_t ty = 0;
			uint64_t n = 0;
			vms_rd_take(&r, &ty, 4);
			vms_rd_take(&r, &n, 8);
			if (ty >= c->nr_types[s] || (i && ty <= prev) || !n)
				return bad_at(err, r.off, "type counts out of order");
			prev = ty;
			type_counts[s][ty] = n;
		}
	}
	return 0;
}

void ck_view_free(struct ck_view *v)
{
	free(v->marks);
	v->marks = NULL;
}

void ck_free(struct ck_set *c)
{
	if (!c)
		return;
	if (c->f)
		fclose(c->f);
	free(c->buf);
	free(c->nr_types);
	free(c->at);
	free(c->t);
	free(c);
}
