/* The readers' worker-pool tests (tests/ctf/test_ctf_pool.c, tests/xen/test_xentrace_pool.c):
 * a source opened at a number of threads, its streams read merged by time as the merge reads
 * them, and a digest of every field of the events, to compare a pass with the pool to one by
 * the reading thread alone. */
#ifndef VMS_TEST_POOL_DIGEST_H
#define VMS_TEST_POOL_DIGEST_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "core/pool.h"
#include "vmscope/source.h"

static inline uint64_t vms_test_mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* every field but the machine (the session's), the strings by their text */
static inline uint64_t vms_test_mix_event(uint64_t h, const struct vms_event *e)
{
	h = vms_test_mix(h, &e->ts, sizeof e->ts);
	h = vms_test_mix(h, e->f, sizeof e->f);
	h = vms_test_mix(h, &e->tid, sizeof e->tid);
	h = vms_test_mix(h, &e->cpu, sizeof e->cpu);
	h = vms_test_mix(h, &e->kind, sizeof e->kind);
	h = vms_test_mix(h, &e->flags, sizeof e->flags);
	h = vms_test_mix(h, &e->type, sizeof e->type);
	h = vms_test_mix(h, &e->stream, sizeof e->stream);
	for (int k = 0; k < 2; k++)
		h = e->s[k] ? vms_test_mix(h, e->s[k], strlen(e->s[k]) + 1) : vms_test_mix(h, "", 1);
	return h;
}

/* trace opened with the pool at `threads`; the reader's counters say that the pool reads it
 * exactly when there are workers (the pool is what is tested) */
static inline struct vms_source *
vms_test_open_pooled(const char *trace, unsigned threads,
		     void (*counters)(const struct vms_source *, uint64_t *, bool *))
{
	vms_pool_set_threads(threads);
	struct vms_error err = {0};
	struct vms_source *src = vms_source_open(trace, &err);
	if (!src)
		fail_msg("open %s: %s", trace, err.msg);
	uint64_t d;
	bool pooled;
	counters(src, &d, &pooled);
	assert_int_equal(pooled, threads > 1);
	return src;
}

/* Each event of src's streams, merged by time (lowest stream first on a tie), given to fn
 * before its stream moves on; fn(ctx, src, NULL) once before, when every stream's first
 * event has been read (as the merge reads them all at its start). */
static inline void vms_test_read_merged(struct vms_source *src,
					void (*fn)(void *ctx, struct vms_source *src,
						   const struct vms_event *ev),
					void *ctx)
{
	uint32_t ns = src->ops->nr_streams(src);
	struct vms_event *ev = calloc(ns ? ns : 1, sizeof *ev);
	int *have = calloc(ns ? ns : 1, sizeof *have);
	assert_true(ev && have);
	for (uint32_t s = 0; s < ns; s++)
		have[s] = src->ops->next(src, s, &ev[s]);
	fn(ctx, src, NULL);
	for (;;) {
		uint32_t best = UINT32_MAX;
		for (uint32_t s = 0; s < ns; s++) {
			assert_true(have[s] >= 0);
			if (have[s] == 1 && (best == UINT32_MAX || ev[s].ts < ev[best].ts))
				best = s;
		}
		if (best == UINT32_MAX)
			break;
		fn(ctx, src, &ev[best]);
		have[best] = src->ops->next(src, best, &ev[best]);
	}
	free(ev);
	free(have);
}

#endif
