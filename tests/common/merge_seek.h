/* The merge's checkpoints over a reader's sources (tests/tracedat/test_tracedat_seek.c,
 * tests/ctf/test_ctf_seek.c): the merge's marks (every stream's source position) taken after
 * event k for many k, serialised to bytes, read back into fresh sources and a fresh merge:
 * the events after k (machine, stream, cpu, time stamp, type, kind, tid, flags, fields, the
 * merged order across streams and sources, and for the first MS_TEXTS events the text
 * format_event renders) must equal the uninterrupted read's. */
#ifndef VMS_TEST_MERGE_SEEK_H
#define VMS_TEST_MERGE_SEEK_H

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "core/merge.h"
#include "vmscope/clock.h"
#include "vmscope/source.h"

#define MS_MAX_CK 48
#define MS_MAX_ST 64
#define MS_WINDOW 30000 /* events compared after each checkpoint (ASan: the whole rest is slow) */
#define MS_TEXTS 16 /* events after each checkpoint whose text (libtraceevent's) is compared */
#define MS_MARK_BYTES (1 + 8 * VMS_POS_WORDS)

struct ms_ck {
	uint64_t k;          /* the checkpoint is after event k (0-based) */
	uint64_t last_t;
	uint32_t nr;
	uint8_t bytes[MS_MAX_ST][MS_MARK_BYTES]; /* serialised marks */
	uint64_t text[MS_TEXTS];  /* hashes of the next events' format_event text */
	uint32_t nr_text;
};

static inline uint64_t ms_text_hash(struct vms_source *src, const struct vms_event *ev)
{
	char buf[1024];
	assert_true(src->ops->format_event(src, ev->stream, buf, sizeof buf) >= 0);
	assert_true(buf[0] != '\0');
	uint64_t h = 1469598103934665603ull;
	for (const char *p = buf; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	return h;
}

static inline uint64_t ms_ev_hash(const struct vms_event *ev, uint64_t t)
{
	uint64_t v[] = { ev->machine, ev->stream, ev->cpu, ev->ts, ev->type, ev->kind,
			 (uint64_t)(int64_t)ev->tid, ev->flags, ev->f[0],
			 ev->f[1], ev->f[2], ev->f[3], ev->f[4], t };
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		h = (h ^ v[i]) * 1099511628211ull, h ^= h >> 29;
	return h;
}

static inline void ms_put_mark(uint8_t *b, const struct vms_merge_mark *mk)
{
	b[0] = mk->state;
	for (int i = 0; i < VMS_POS_WORDS; i++)
		for (int j = 0; j < 8; j++)
			b[1 + 8 * i + j] = (uint8_t)(mk->pos.w[i] >> (8 * j));
}

static inline void ms_get_mark(const uint8_t *b, struct vms_merge_mark *mk)
{
	memset(mk, 0, sizeof *mk);
	mk->state = b[0];
	for (int i = 0; i < VMS_POS_WORDS; i++)
		for (int j = 0; j < 8; j++)
			mk->pos.w[i] |= (uint64_t)b[1 + 8 * i + j] << (8 * j);
}

struct merge_run {
	const char *paths[2];
	uint32_t n;
	struct vms_source *(*open)(const char *path, struct vms_error *err);
	struct vms_source *src[2];
	struct vms_clock clk[2];
	const struct vms_clock *cl[2];
};

static inline void ms_open(struct merge_run *r)
{
	for (uint32_t i = 0; i < r->n; i++) {
		struct vms_error err = { 0 };
		r->src[i] = r->open(r->paths[i], &err);
		if (!r->src[i])
			fail_msg("%s", err.msg);
		vms_clock_init(&r->clk[i]);
		r->cl[i] = &r->clk[i];
	}
}

static inline void ms_close(struct merge_run *r)
{
	for (uint32_t i = 0; i < r->n; i++)
		vms_source_close(r->src[i]);
}

/* The uninterrupted read: every event's hash, and checkpoints at k = 0, 1, 2, the first
 * events after the first chunk and page changes of any stream, pseudo-random k, the last. */
static inline uint64_t *ms_reference(struct merge_run *r, struct ms_ck *cks, uint32_t *nck,
				     uint64_t *total)
{
	ms_open(r);
	struct vms_error err = { 0 };
	struct vms_merge m;
	assert_int_equal(vms_merge_init(&m, r->src, r->cl, r->n, &err), 0);
	assert_true(m.nr_streams <= MS_MAX_ST);
	size_t cap = 1 << 16;
	uint64_t *h = malloc(cap * sizeof *h);
	assert_non_null(h);
	const struct vms_event *ev = NULL;
	uint64_t t, k = 0, seed = 12345;
	struct vms_merge_mark mk[MS_MAX_ST], prev[MS_MAX_ST];
	uint32_t chunk_changes = 0, page_changes = 0;
	memset(prev, 0, sizeof prev);
	*nck = 0;
	while (vms_merge_next(&m, &ev, &t) > 0) {
		if (k == cap) {
			cap *= 2;
			h = realloc(h, cap * sizeof *h);
			assert_non_null(h);
		}
		h[k] = ms_ev_hash(ev, t);
		for (uint32_t i = 0; i < *nck; i++)
			if (cks[i].nr_text < MS_TEXTS && k > cks[i].k)
				cks[i].text[cks[i].nr_text++] = ms_text_hash(r->src[ev->machine], ev);
		assert_int_equal(vms_merge_tell(&m, mk), 0);
		bool chunk = false, page = false;
		for (uint32_t s = 0; k > 0 && s < m.nr_streams; s++) {
			chunk |= mk[s].pos.w[1] != prev[s].pos.w[1] && prev[s].pos.w[0];
			page |= mk[s].pos.w[2] != prev[s].pos.w[2] && prev[s].pos.w[0];
		}
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		bool take = k <= 2 || (chunk && chunk_changes++ < 4) || (page && page_changes++ < 4)
			|| (seed >> 54) == 0;
		if (take && *nck < MS_MAX_CK - 1) {
			struct ms_ck *c = &cks[(*nck)++];
			c->k = k;
			c->last_t = m.last_t;
			c->nr = m.nr_streams;
			c->nr_text = 0;
			for (uint32_t s = 0; s < m.nr_streams; s++)
				ms_put_mark(c->bytes[s], &mk[s]);
		}
		memcpy(prev, mk, sizeof prev);
		k++;
	}
	assert_int_equal(err.status, 0);
	/* the last event: a checkpoint after which nothing follows */
	struct ms_ck *c = &cks[(*nck)++];
	c->k = k - 1;
	c->nr_text = 0;
	c->last_t = m.last_t;
	c->nr = m.nr_streams;
	for (uint32_t s = 0; s < m.nr_streams; s++)
		ms_put_mark(c->bytes[s], &prev[s]);
	vms_merge_free(&m);
	ms_close(r);
	*total = k;
	assert_true(chunk_changes > 0 || page_changes > 0);
	return h;
}

/* A fresh source and merge from checkpoint c: the next events are the reference's. */
static inline void ms_replay(struct merge_run *r, const struct ms_ck *c, const uint64_t *h,
			     uint64_t total, uint64_t window)
{
	ms_open(r);
	struct vms_merge_mark mk[MS_MAX_ST];
	for (uint32_t s = 0; s < c->nr; s++)
		ms_get_mark(c->bytes[s], &mk[s]);
	struct vms_error err = { 0 };
	struct vms_merge m;
	int rc = vms_merge_restart(&m, r->src, r->cl, r->n, mk, c->nr, c->last_t, &err);
	if (rc != 0)
		fail_msg("k=%" PRIu64 ": %s", c->k, err.msg);
	const struct vms_event *ev = NULL;
	uint64_t t = 0, k = c->k + 1, end = window && c->k + 1 + window < total ? c->k + 1 + window
					: total;
	for (; k < end; k++) {
		assert_int_equal(vms_merge_next(&m, &ev, &t), 1);
		if (ms_ev_hash(ev, t) != h[k])
			fail_msg("checkpoint after %" PRIu64 ": event %" PRIu64 " differs (stream %u "
				 "ts %" PRIu64 ")", c->k, k, ev->stream, ev->ts);
		if (k - c->k - 1 < c->nr_text && ms_text_hash(r->src[ev->machine], ev) !=
		    c->text[k - c->k - 1])
			fail_msg("checkpoint after %" PRIu64 ": event %" PRIu64 "'s text differs",
				 c->k, k);
	}
	if (end == total)
		assert_int_equal(vms_merge_next(&m, &ev, &t), 0);
	vms_merge_free(&m);
	ms_close(r);
}

static inline void merge_seek_check(struct merge_run *r)
{
	static struct ms_ck cks[MS_MAX_CK];
	uint32_t nck;
	uint64_t total;
	uint64_t *h = ms_reference(r, cks, &nck, &total);
	assert_true(nck >= 8);
	assert_int_equal(cks[0].nr_text, MS_TEXTS);
	for (uint32_t i = 0; i < nck; i++)
		ms_replay(r, &cks[i], h, total, i == 1 ? 0 : MS_WINDOW); /* after event 1: all the rest */
	free(h);
}

#endif
