/* The readers' checkpoint tests (tests/ctf/test_ctf_seek.c, tests/simpletrace/test_st_seek.c):
 * one stream read whole with tell() after the events a test picks and before any, then a
 * seek to each position, after which the events to the end of the stream (by the test's
 * digest of each) and the final status must be those of the uninterrupted read, and tell
 * must give the same words again (right after the seek, and after the event told). */
#ifndef VMS_TEST_SEEK_CHECK_H
#define VMS_TEST_SEEK_CHECK_H

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "vmscope/source.h"

#define VMS_SEEK_MAX_CK 48

struct vms_seek_ck {
	uint64_t k;                  /* after event k; UINT64_MAX: before any */
	struct vms_stream_pos pos;
};

/* an event's digest (read before the stream moves on) */
typedef uint64_t (*vms_seek_digest_fn)(struct vms_source *src, uint32_t stream,
				       const struct vms_event *ev);
/* keep a checkpoint after event k (pos: its position, prev: the one before)? */
typedef bool (*vms_seek_take_fn)(void *ctx, uint64_t k, const struct vms_event *ev,
				 const struct vms_stream_pos *pos,
				 const struct vms_stream_pos *prev);

struct vms_seek_ref {
	uint64_t n, cap;
	uint64_t *h;                 /* every event's digest */
	int end;                     /* next()'s final status */
	struct vms_seek_ck ck[VMS_SEEK_MAX_CK];
	uint32_t nck;
};

static inline void vms_seek_add(struct vms_seek_ref *r, uint64_t k,
				const struct vms_stream_pos *pos)
{
	if (r->nck < VMS_SEEK_MAX_CK)
		r->ck[r->nck++] = (struct vms_seek_ck){ k, *pos };
}

/* The uninterrupted read of one stream: its digests and checkpoints (the start, those take
 * picks, the last event). */
static inline void vms_seek_reference(struct vms_source *src, uint32_t stream,
				      struct vms_seek_ref *r, vms_seek_digest_fn digest,
				      vms_seek_take_fn take, void *ctx)
{
	memset(r, 0, sizeof *r);
	struct vms_stream_pos pos, prev = { { 0 } };
	assert_int_equal(vms_source_tell(src, stream, &pos), 0);
	vms_seek_add(r, UINT64_MAX, &pos);
	struct vms_event ev;
	int rc;
	while ((rc = src->ops->next(src, stream, &ev)) == 1) {
		if (r->n == r->cap) {
			r->cap = r->cap ? 2 * r->cap : 4096;
			r->h = realloc(r->h, r->cap * sizeof *r->h);
			assert_non_null(r->h);
		}
		uint64_t k = r->n++;
		r->h[k] = digest(src, stream, &ev);
		assert_int_equal(vms_source_tell(src, stream, &pos), 0);
		if (take(ctx, k, &ev, &pos, &prev))
			vms_seek_add(r, k, &pos);
		prev = pos;
	}
	r->end = rc;
	assert_true(r->n > 0);
	if (r->ck[r->nck - 1].k != r->n - 1) {
		if (r->nck == VMS_SEEK_MAX_CK)
			r->nck--;
		vms_seek_add(r, r->n - 1, &prev);
	}
}

/* The checkpoints in a pseudo-random order: seeks backwards and forwards. */
static inline void vms_seek_shuffle(struct vms_seek_ref *r, uint64_t seed)
{
	for (uint32_t i = r->nck; i > 1; i--) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t j = (uint32_t)((seed >> 33) % i);
		struct vms_seek_ck tmp = r->ck[i - 1];
		r->ck[i - 1] = r->ck[j];
		r->ck[j] = tmp;
	}
}

/* Seek to c: the events from it are the reference's to the end of the stream. */
static inline void vms_seek_check_from(struct vms_source *src, uint32_t stream,
				       const struct vms_seek_ref *r, const struct vms_seek_ck *c,
				       vms_seek_digest_fn digest)
{
	vms_error_clear(&src->err);
	if (vms_source_seek(src, stream, &c->pos) != 0)
		fail_msg("stream %u, after event %" PRIu64 ": %s", stream, c->k, src->err.msg);
	struct vms_stream_pos again;
	assert_int_equal(vms_source_tell(src, stream, &again), 0);
	assert_memory_equal(&again, &c->pos, sizeof again);
	struct vms_event ev;
	uint64_t k = c->k == UINT64_MAX ? 0 : c->k;
	for (; k < r->n; k++) {
		if (src->ops->next(src, stream, &ev) != 1)
			fail_msg("stream %u, from event %" PRIu64 ": no event %" PRIu64 ": %s",
				 stream, c->k, k, src->err.msg);
		if (digest(src, stream, &ev) != r->h[k])
			fail_msg("stream %u, from event %" PRIu64 ": event %" PRIu64 " differs "
				 "(ts %" PRIu64 ")", stream, c->k, k, ev.ts);
		if (k == c->k) {
			/* the event told again: the same position */
			assert_int_equal(vms_source_tell(src, stream, &again), 0);
			assert_memory_equal(&again, &c->pos, sizeof again);
		}
	}
	assert_int_equal(src->ops->next(src, stream, &ev), r->end);
}

#endif
