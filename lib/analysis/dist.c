/* A distribution of durations in bounded memory.
 *
 * Up to DIST_EXACT samples are kept as they are, so small populations (most exit reasons of
 * a short trace) get exact percentiles. Beyond that the samples move into a log-linear
 * histogram: values below 128 have one bucket each (exact), larger ones 128 buckets per
 * power of two, so a bucket [lo, lo + w) has w / lo <= 1/128 and its middle is within
 * 1/256 (< 0.4 %) of any value in it. Groups of 128 counters are allocated only for the
 * powers of two that occur (a few KiB per distribution in practice, 58 KiB at most).
 *
 * Percentiles use the nearest-rank method: the p-th percentile of n samples is the sample
 * of rank ceil(p/100 * n) in ascending order (rank 1 for p = 0), an actual sample, never an
 * interpolation. From the histogram it is the middle of the bucket holding that rank,
 * clamped to [min, max]; ranks 1 and n give min and max exactly. */
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "core/grow.h"

#define DIST_EXACT 4096
#define SUB 128            /* buckets per power of two */
#define GROUPS 58          /* group 0: values 0..127; group g >= 1: [2^(g+6), 2^(g+7)) */

struct vms_dist {
	uint64_t count, sum, min, max;
	uint64_t *exact;       /* while !hist: the samples (sorted lazily) */
	uint32_t nexact, cap;
	bool sorted;
	bool hist;
	uint64_t *group[GROUPS];
};

struct vms_dist *vms_dist_new(void)
{
	return calloc(1, sizeof(struct vms_dist));
}

void vms_dist_free(struct vms_dist *d)
{
	if (!d)
		return;
	free(d->exact);
	for (int g = 0; g < GROUPS; g++)
		free(d->group[g]);
	free(d);
}

static void bucket_of(uint64_t v, unsigned *g, unsigned *b)
{
	if (v < SUB) {
		*g = 0;
		*b = (unsigned)v;
		return;
	}
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* 7..63 */
	*g = e - 6;
	*b = (unsigned)(v >> (e - 7)) & (SUB - 1);
}

static uint64_t bucket_mid(unsigned g, unsigned b)
{
	if (g == 0)
		return b;
	unsigned shift = g - 1; /* e - 7 */
	uint64_t lo = (uint64_t)(SUB + b) << shift;
	return lo + ((shift ? (1ull << shift) : 1ull) >> 1);
}

static int hist_add(struct vms_dist *d, uint64_t v, uint64_t n)
{
	unsigned g, b;
	bucket_of(v, &g, &b);
	if (!d->group[g] && !(d->group[g] = calloc(SUB, sizeof(uint64_t))))
		return -1;
	d->group[g][b] += n;
	return 0;
}

/* Move the exact samples into the histogram (at DIST_EXACT, or when memory runs out). */
static void to_hist(struct vms_dist *d)
{
	for (uint32_t i = 0; i < d->nexact; i++)
		hist_add(d, d->exact[i], 1);
	free(d->exact);
	d->exact = NULL;
	d->nexact = d->cap = 0;
	d->hist = true;
}

void vms_dist_add(struct vms_dist *d, uint64_t v)
{
	if (d->count == 0 || v < d->min)
		d->min = v;
	if (d->count == 0 || v > d->max)
		d->max = v;
	d->count++;
	d->sum += v;
	if (!d->hist) {
		if (d->nexact == d->cap && d->cap < DIST_EXACT) {
			uint64_t *ne = vms_grow(d->exact, &d->cap, sizeof *ne, 16);
			if (ne)
				d->exact = ne;
		}
		if (d->nexact < d->cap) {
			d->exact[d->nexact++] = v;
			d->sorted = false;
			return;
		}
		to_hist(d);
	}
	hist_add(d, v, 1);
}

void an_dist_merge(struct vms_dist *d, const struct vms_dist *s)
{
	if (!s || !s->count)
		return;
	if (!s->hist) {
		/* exact: the samples appended in one copy while d stays exact (at most DIST_EXACT,
		 * in an array grown as the adds would have grown it); else one by one */
		uint32_t need = d->nexact + s->nexact;
		while (!d->hist && need <= DIST_EXACT && d->cap < need) {
			uint64_t *ne = vms_grow(d->exact, &d->cap, sizeof *ne, 16);
			if (!ne)
				break;
			d->exact = ne;
		}
		if (d->hist || need > DIST_EXACT || d->cap < need) {
			for (uint32_t i = 0; i < s->nexact; i++)
				vms_dist_add(d, s->exact[i]);
			return;
		}
		memcpy(d->exact + d->nexact, s->exact, s->nexact * sizeof *d->exact);
		d->nexact = need;
		d->sorted = false;
	} else {
		/* a histogram's counts: d has more samples than s, so is a histogram too */
		if (!d->hist)
			to_hist(d);
		for (unsigned g = 0; g < GROUPS; g++)
			for (unsigned b = 0; s->group[g] && b < SUB; b++)
				if (s->group[g][b])
					hist_add(d, bucket_mid(g, b), s->group[g][b]);
	}
	if (d->count == 0 || s->min < d->min)
		d->min = s->min;
	if (d->count == 0 || s->max > d->max)
		d->max = s->max;
	d->count += s->count;
	d->sum += s->sum;
}

uint64_t vms_dist_count(const struct vms_dist *d) { return d ? d->count : 0; }
uint64_t vms_dist_sum(const struct vms_dist *d) { return d ? d->sum : 0; }
uint64_t vms_dist_min(const struct vms_dist *d) { return d && d->count ? d->min : 0; }
uint64_t vms_dist_max(const struct vms_dist *d) { return d && d->count ? d->max : 0; }
bool vms_dist_exact(const struct vms_dist *d) { return !d || !d->hist; }

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Ascending, in place: LSD radix sort by bytes, skipping the bytes every sample shares (the
 * durations of one table differ in a few low bytes); qsort for a handful of samples or when
 * out of memory. report sorts hundreds of these: qsort's calls per comparison were most of
 * the cost. */
static void sort_u64(uint64_t *a, uint32_t n)
{
	uint64_t *tmp = n >= 64 ? malloc(n * sizeof *tmp) : NULL;
	if (!tmp) {
		qsort(a, n, sizeof *a, cmp_u64);
		return;
	}
	uint64_t all_or = 0, all_and = UINT64_MAX;
	for (uint32_t i = 0; i < n; i++) {
		all_or |= a[i];
		all_and &= a[i];
	}
	uint64_t differ = all_or ^ all_and;
	uint64_t *src = a, *dst = tmp;
	for (unsigned shift = 0; shift < 64; shift += 8) {
		if (!((differ >> shift) & 0xff))
			continue;
		uint32_t cnt[256] = { 0 };
		for (uint32_t i = 0; i < n; i++)
			cnt[(src[i] >> shift) & 0xff]++;
		uint32_t sum = 0;
		for (unsigned k = 0; k < 256; k++) {
			uint32_t c = cnt[k];
			cnt[k] = sum;
			sum += c;
		}
		for (uint32_t i = 0; i < n; i++)
			dst[cnt[(src[i] >> shift) & 0xff]++] = src[i];
		uint64_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof *a);
	free(tmp);
}

uint64_t vms_dist_percentile(const struct vms_dist *d, double p)
{
	if (!d || d->count == 0)
		return 0;
	if (!(p > 0)) /* also NaN */
		p = 0;
	if (p > 100)
		p = 100;
	/* rank = ceil(p * n / 100), computed so that exact products (90 * 10 / 100 = 9) are
	 * not pushed up by rounding */
	double x = p * (double)d->count / 100.0;
	uint64_t rank = (uint64_t)x;
	if ((double)rank < x - 1e-9 * (x > 1 ? x : 1))
		rank++;
	if (rank < 1)
		rank = 1;
	if (rank > d->count)
		rank = d->count;
	if (rank == 1)
		return d->min;
	if (rank == d->count)
		return d->max;
	if (!d->hist) {
		/* sorting is a cache of the const object's content: the samples do not change */
		struct vms_dist *w = (struct vms_dist *)d;
		if (!w->sorted) {
			sort_u64(w->exact, w->nexact);
			w->sorted = true;
		}
		return d->exact[rank - 1];
	}
	uint64_t cum = 0;
	for (unsigned g = 0; g < GROUPS; g++) {
		if (!d->group[g])
			continue;
		for (unsigned b = 0; b < SUB; b++) {
			cum += d->group[g][b];
			if (cum >= rank) {
				uint64_t v = bucket_mid(g, b);
				return v < d->min ? d->min : v > d->max ? d->max : v;
			}
		}
	}
	return d->max;
}
