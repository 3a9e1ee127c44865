/* The HTML report's multi-resolution timeline summary (see html_summary.h). */
#include "html_summary.h"

#include <stdlib.h>
#include <string.h>

void hs_init(struct hs_summary *s)
{
	memset(s, 0, sizeof *s);
	s->width = 1;
	s->nb = HS_BUCKETS;
}

void hs_free(struct hs_summary *s)
{
	for (uint32_t i = 0; i < s->nr_rows; i++) {
		free(s->rows[i]->b);
		free(s->rows[i]);
	}
	free(s->rows);
	memset(s, 0, sizeof *s);
}

void hs_start(struct hs_summary *s, uint64_t t0)
{
	if (!s->started) {
		s->t0 = t0;
		s->t_max = t0;
		s->started = 1;
	}
}

/* Bucket a + bucket b, merged (one of twice the width). */
static struct hs_bucket merge2(const struct hs_bucket *a, const struct hs_bucket *b)
{
	struct hs_bucket m;
	for (unsigned k = 0; k < HS_STATES; k++)
		m.ns[k] = a->ns[k] + b->ns[k];
	m.count = a->count + b->count;
	if (b->longest > a->longest) {
		m.who = b->who;
		m.longest = b->longest;
	} else {
		m.who = a->who;
		m.longest = a->longest;
	}
	return m;
}

/* Halve every row's resolution: bucket i becomes buckets 2i and 2i+1 merged. When the
 * width passes 2^31 units, stored times are halved too (shift + 1) so that a bucket's time
 * fits its 32 bits. */
static void coarsen(struct hs_summary *s)
{
	int halve = (s->width >> s->shift) >= (1u << 30);
	for (uint32_t r = 0; r < s->nr_rows; r++) {
		struct hs_bucket *b = s->rows[r]->b;
		for (uint32_t i = 0; i < s->nb / 2; i++) {
			struct hs_bucket m = merge2(&b[2 * i], &b[2 * i + 1]);
			if (halve) {
				for (unsigned k = 0; k < HS_STATES; k++)
					m.ns[k] >>= 1;
				m.longest >>= 1;
			}
			b[i] = m;
		}
		memset(b + s->nb / 2, 0, s->nb / 2 * sizeof *b);
	}
	s->width *= 2;
	s->lw++;
	s->shift += (unsigned)halve;
}

/* Halve the number of buckets per row: the same span in buckets of twice the width (the
 * upper half, zero after coarsen, given back). */
static void shrink(struct hs_summary *s)
{
	coarsen(s);
	s->nb /= 2;
	for (uint32_t r = 0; r < s->nr_rows; r++) {
		struct hs_bucket *b = realloc(s->rows[r]->b, s->nb * sizeof *b);
		if (b)   /* (a smaller block: if realloc fails, the larger one stays, unused) */
			s->rows[r]->b = b;
	}
}

int hs_add_row(struct hs_summary *s)
{
	if (s->nr_rows == s->cap_rows) {
		uint32_t cap = s->cap_rows ? s->cap_rows * 2 : 16;
		struct hs_row **r = realloc(s->rows, cap * sizeof *r);
		if (!r)
			return -1;
		s->rows = r;
		s->cap_rows = cap;
	}
	while ((uint64_t)(s->nr_rows + 1) * s->nb > HS_BUDGET && s->nb > HS_MIN_BUCKETS)
		shrink(s);
	struct hs_row *row = calloc(1, sizeof *row);
	if (!row || !(row->b = calloc(s->nb, sizeof *row->b))) {
		free(row);
		return -1;
	}
	row->last_state = -1;
	s->rows[s->nr_rows] = row;
	return (int)s->nr_rows++;
}

void hs_add(struct hs_summary *s, uint32_t row_i, uint64_t start, uint64_t end, unsigned state,
	    uint32_t who)
{
	if (row_i >= s->nr_rows || state >= HS_STATES)
		return;
	if (__builtin_expect(!s->started, 0))
		hs_start(s, start);
	struct hs_row *row = s->rows[row_i];
	if (start < row->last_end)
		start = row->last_end;
	if (start < s->t0)
		start = s->t0;
	if (end <= start)
		return;
	/* (the width is 2^lw: shifts, not divisions, on every piece) */
	while (end - s->t0 > (uint64_t)s->nb << s->lw)
		coarsen(s);
	if (end > s->t_max)
		s->t_max = end;
	int begins = !(row->last_state == (int)state && row->last_end == start);
	row->last_end = end;
	row->last_state = (int)state;
	uint64_t i = (start - s->t0) >> s->lw;
	if (begins) {
		row->b[i].count++;
		row->slices++;
	}
	for (uint64_t t = start; t < end; i++) {
		uint64_t b_end = s->t0 + ((i + 1) << s->lw);
		uint64_t e = end < b_end ? end : b_end;
		struct hs_bucket *b = &row->b[i];
		uint32_t d = (uint32_t)((e - t) >> s->shift);
		b->ns[state] += d;
		if (d >= b->longest) {
			b->longest = d;
			b->who = who;
		}
		t = e;
	}
}

uint32_t hs_used(const struct hs_summary *s)
{
	if (!s->started || s->t_max <= s->t0)
		return 0;
	uint64_t n = (s->t_max - s->t0 + s->width - 1) / s->width;
	return n > s->nb ? s->nb : (uint32_t)n;
}

unsigned hs_levels(const struct hs_summary *s)
{
	uint32_t n = hs_used(s);
	unsigned l = 1;
	while (n > HS_COARSEST) {
		n = (n + 1) / 2;
		l++;
	}
	return l;
}

struct hs_bucket hs_bucket_at(const struct hs_summary *s, uint32_t row, unsigned level,
			      uint32_t i, int *state)
{
	struct hs_bucket m;
	memset(&m, 0, sizeof m);
	const struct hs_bucket *b = s->rows[row]->b;
	uint64_t lo = (uint64_t)i << level, hi = lo + (1ull << level);
	for (uint64_t k = lo; k < hi && k < s->nb; k++)
		m = merge2(&m, &b[k]);
	int best = -1;
	for (unsigned k = 0; k < HS_STATES; k++)
		if (m.ns[k] && (best < 0 || m.ns[k] > m.ns[best]))
			best = (int)k;
	/* a bucket whose only slices are shorter than a stored unit still has a state */
	if (best < 0 && m.count)
		best = 0;
	*state = best;
	return m;
}

/* ---- encoding ---- */

struct buf {
	uint8_t **p;
	size_t *len, *cap;
	int err;
};

static void put(struct buf *b, uint8_t v)
{
	if (b->err)
		return;
	if (*b->len == *b->cap) {
		size_t cap = *b->cap ? *b->cap * 2 : 4096;
		uint8_t *p = realloc(*b->p, cap);
		if (!p) {
			b->err = 1;
			return;
		}
		*b->p = p;
		*b->cap = cap;
	}
	(*b->p)[(*b->len)++] = v;
}

static void varint(struct buf *b, uint64_t v)
{
	while (v >= 0x80) {
		put(b, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	put(b, (uint8_t)v);
}

/* Runs are gathered first (their number precedes them). */
struct run {
	uint32_t len, count, who;
	uint8_t state;
	uint8_t mask, share[HS_STATES];
};

static int same_level_run(const struct run *a, const struct run *b)
{
	return a->state == b->state && a->count == b->count && a->who == b->who;
}

static int same_share_run(const struct run *a, const struct run *b)
{
	return a->mask == b->mask && !memcmp(a->share, b->share, sizeof a->share);
}

/* Extend the last run with r when they are the same, else append r; the new count */
static uint32_t push_run(struct run *runs, uint32_t nr, const struct run *r,
			 int (*same)(const struct run *, const struct run *))
{
	if (nr && same(&runs[nr - 1], r)) {
		runs[nr - 1].len++;
		return nr;
	}
	runs[nr] = *r;
	return nr + 1;
}

int hs_encode_row(const struct hs_summary *s, uint32_t row, uint8_t **out, size_t *len,
		  size_t *cap, size_t *section)
{
	size_t base = *len;
	struct buf b = { out, len, cap, 0 };
	uint32_t used = hs_used(s);
	unsigned levels = hs_levels(s);
	struct run *runs = malloc((used ? used : 1) * sizeof *runs);
	if (!runs)
		return -1;
	for (unsigned l = 0; l < levels; l++) {
		if (section)
			section[l] = *len - base;
		uint32_t n = (uint32_t)((used + (1u << l) - 1) >> l), nr = 0;
		for (uint32_t i = 0; i < n; i++) {
			int st;
			struct hs_bucket m = hs_bucket_at(s, row, l, i, &st);
			struct run r = { .len = 1, .count = m.count, .who = m.who,
					 .state = (uint8_t)(st < 0 ? 7 : st) };
			nr = push_run(runs, nr, &r, same_level_run);
		}
		varint(&b, nr);
		for (uint32_t k = 0; k < nr; k++) {
			varint(&b, runs[k].len);
			put(&b, runs[k].state);
			varint(&b, runs[k].count);
			varint(&b, runs[k].who);
		}
	}
	/* the finest level's shares of each state, in 1/255 of the bucket width */
	if (section)
		section[levels] = *len - base;
	uint32_t nr = 0;
	double unit = (double)(s->width >> s->shift);
	for (uint32_t i = 0; i < used; i++) {
		const struct hs_bucket *bk = &s->rows[row]->b[i];
		struct run r;
		memset(&r, 0, sizeof r);
		r.len = 1;
		for (unsigned k = 0; k < HS_STATES; k++) {
			if (!bk->ns[k])
				continue;
			double q = (double)bk->ns[k] * 255.0 / unit + 0.5;
			r.share[k] = (uint8_t)(q > 255 ? 255 : q < 1 ? 1 : q);
			r.mask |= (uint8_t)(1u << k);
		}
		nr = push_run(runs, nr, &r, same_share_run);
	}
	varint(&b, nr);
	for (uint32_t k = 0; k < nr; k++) {
		varint(&b, runs[k].len);
		put(&b, runs[k].mask);
		for (unsigned j = 0; j < HS_STATES; j++)
			if (runs[k].mask & (1u << j))
				put(&b, runs[k].share[j]);
	}
	free(runs);
	return b.err ? -1 : 0;
}

size_t hs_row_bound(void)
{
	/* per level run: run length (<= 3 varint bytes for <= 16384), state, count (<= 5),
	 * who (<= 5); all levels together hold at most 2 x HS_BUCKETS + levels buckets; the shares:
	 * run length, mask, one byte per state; plus one run count per level (<= 3 bytes). */
	size_t level_runs = (2 * (size_t)HS_BUCKETS + 16) * (3 + 1 + 5 + 5);
	size_t share_runs = (size_t)HS_BUCKETS * (3 + 1 + HS_STATES);
	return level_runs + share_runs + 3 * (8 + 1);
}
