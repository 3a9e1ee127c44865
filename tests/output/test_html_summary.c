/* The HTML report's multi-resolution timeline summary (lib/output/html_summary.c).
 * Expected values: small cases derived by hand (in the comments); a long random stream
 * checked against a brute-force computation in this file (time per state per bucket from the
 * pieces themselves, at the width the summary ended with), decoded from the encoded bytes by
 * a decoder written here from the format documented in html_summary.h; and the size bound. */
#include "testutil.h"

#include "output/html_summary.h"

/* Hand-derived: width stays 1 ns (20 ns < 16384 buckets). Pieces of row 0:
 * [0,10) state 2, [10,13) state 3, [13,20) state 2 -> three slices.
 * Level 0, bucket 11: state 3 (1 ns), no slice begins there; bucket 10: a slice begins.
 * Level 2 (4 ns buckets): bucket 2 = [8,12): state 2 2 ns, state 3 2 ns, a tie: the lower
 * state wins (2); 1 slice begins (at 10). Bucket 3 = [12,16): 3 ns of state 2, 1 of state 3:
 * state 2, 1 slice (at 13). Level 4 (16 ns): bucket 0 = [0,16): 13 ns of 2, 3 of 3, 3 slices;
 * longest piece: [0,10) (10 ns) named 5. */
static void hand_derived(void **state)
{
	(void)state;
	struct hs_summary s;
	hs_init(&s);
	assert_int_equal(hs_add_row(&s), 0);
	hs_add(&s, 0, 0, 10, 2, 5);
	hs_add(&s, 0, 10, 13, 3, 6);
	hs_add(&s, 0, 13, 20, 2, 5);
	assert_int_equal(s.width, 1);
	assert_int_equal(hs_used(&s), 20);
	int st;
	struct hs_bucket b = hs_bucket_at(&s, 0, 0, 11, &st);
	assert_int_equal(st, 3);
	assert_int_equal(b.ns[3], 1);
	assert_int_equal(b.count, 0);
	b = hs_bucket_at(&s, 0, 0, 10, &st);
	assert_int_equal(b.count, 1);
	b = hs_bucket_at(&s, 0, 2, 2, &st);
	assert_int_equal(st, 2);
	assert_int_equal(b.ns[2], 2);
	assert_int_equal(b.ns[3], 2);
	assert_int_equal(b.count, 1);
	b = hs_bucket_at(&s, 0, 2, 3, &st);
	assert_int_equal(st, 2);
	assert_int_equal(b.ns[2], 3);
	assert_int_equal(b.count, 1);
	b = hs_bucket_at(&s, 0, 4, 0, &st);
	assert_int_equal(st, 2);
	assert_int_equal(b.ns[2], 13);
	assert_int_equal(b.ns[3], 3);
	assert_int_equal(b.count, 3);
	assert_int_equal(b.who, 5);
	assert_int_equal(s.rows[0]->slices, 3);
	/* a piece continuing the last one in the same state is the same slice; a gap is not */
	hs_add(&s, 0, 20, 25, 2, 5);
	assert_int_equal(s.rows[0]->slices, 3);
	hs_add(&s, 0, 30, 31, 2, 5);
	assert_int_equal(s.rows[0]->slices, 4);
	hs_free(&s);
}

/* Coarsening: row 1 holds [0, 16384) in state 2; then row 0 gets [0, 3 x 16384) in state 1.
 * The smallest power-of-two width with 16384 buckets covering 49152 ns is 4 ns, so 12288
 * buckets are used; row 1's buckets 0..4095 hold 4 ns of state 2 each, the rest nothing. */
static void coarsening(void **state)
{
	(void)state;
	struct hs_summary s;
	hs_init(&s);
	assert_int_equal(hs_add_row(&s), 0);
	assert_int_equal(hs_add_row(&s), 1);
	hs_add(&s, 1, 0, HS_BUCKETS, 2, 7);
	hs_add(&s, 0, 0, 3 * HS_BUCKETS, 1, 8);
	assert_int_equal(s.width, 4);
	assert_int_equal(hs_used(&s), 12288);
	int st;
	struct hs_bucket b = hs_bucket_at(&s, 1, 0, 4095, &st);
	assert_int_equal(st, 2);
	assert_int_equal(b.ns[2], 4);
	b = hs_bucket_at(&s, 1, 0, 4096, &st);
	assert_int_equal(st, -1);
	b = hs_bucket_at(&s, 0, 0, 12287, &st);
	assert_int_equal(st, 1);
	assert_int_equal(b.ns[1], 4);
	assert_int_equal(b.who, 8);
	b = hs_bucket_at(&s, 0, 0, 0, &st);
	assert_int_equal(b.count, 1);
	/* levels: 12288 -> 6144 -> ... -> 192 (<= 256): 7 levels */
	assert_int_equal(hs_levels(&s), 7);
	hs_free(&s);
}

/* The row budget: row 0 holds [0, 10000) in state 1 (who 5) and [10000, 10001) in state 2,
 * in 1 ns buckets. Each time rows x buckets would pass HS_BUDGET (2^22), the buckets per row
 * halve and their width doubles: at 257 rows 8192 of 2 ns, at 513 4096 of 4 ns, at 1025 2048
 * of 8 ns, at 2049 1024 of 16 ns, then no fewer than HS_MIN_BUCKETS (1024) however many. By
 * hand at 16 ns: bucket 0 and bucket 624 ([9984, 10000)) hold 16 ns of state 1, bucket 625
 * ([10000, 10016)) 1 ns of state 2 and one slice begun, and 626 buckets are used. */
static void row_budget(void **state)
{
	(void)state;
	struct hs_summary s;
	hs_init(&s);
	assert_int_equal(hs_add_row(&s), 0);
	hs_add(&s, 0, 0, 10000, 1, 5);
	hs_add(&s, 0, 10000, 10001, 2, 6);
	assert_int_equal(s.nb, 16384);
	static const struct { uint32_t rows, nb, width; } steps[] = {
		{256, 16384, 1}, {257, 8192, 2}, {512, 8192, 2}, {513, 4096, 4}, {1025, 2048, 8},
		{2048, 2048, 8}, {2049, 1024, 16}, {3073, 1024, 16},
	};
	for (unsigned k = 0; k < sizeof steps / sizeof *steps; k++) {
		while (s.nr_rows < steps[k].rows)
			assert_int_equal(hs_add_row(&s), (int)s.nr_rows);
		assert_int_equal(s.nb, steps[k].nb);
		assert_int_equal(s.width, steps[k].width);
	}
	int st;
	struct hs_bucket b = hs_bucket_at(&s, 0, 0, 0, &st);
	assert_int_equal(st, 1);
	assert_int_equal(b.ns[1], 16);
	assert_int_equal(b.count, 1);
	assert_int_equal(b.who, 5);
	b = hs_bucket_at(&s, 0, 0, 624, &st);
	assert_int_equal(b.ns[1], 16);
	assert_int_equal(b.count, 0);
	b = hs_bucket_at(&s, 0, 0, 625, &st);
	assert_int_equal(st, 2);
	assert_int_equal(b.ns[1], 0);
	assert_int_equal(b.ns[2], 1);
	assert_int_equal(b.count, 1);
	assert_int_equal(hs_used(&s), 626);
	/* the last row added takes pieces on the coarse axis: [0, 16384) is exactly 1024 buckets */
	hs_add(&s, 3072, 0, 16384, 3, 9);
	assert_int_equal(s.width, 16);
	b = hs_bucket_at(&s, 3072, 0, 1023, &st);
	assert_int_equal(st, 3);
	assert_int_equal(b.ns[3], 16);
	hs_free(&s);
}

/* ---- a decoder of the documented format ---- */

struct dec {
	const uint8_t *p, *end;
};

static uint64_t dvarint(struct dec *d)
{
	uint64_t v = 0;
	for (unsigned sh = 0;; sh += 7) {
		assert_true(d->p < d->end);
		uint8_t b = *d->p++;
		v |= (uint64_t)(b & 127) << sh;
		if (!(b & 128))
			return v;
	}
}

static uint64_t lcg_state = 12345;
static uint64_t lcg(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return lcg_state >> 17;
}

/* 300000 random pieces (lengths 1 ns .. 100 us, random states, gaps now and then) in one
 * row; the shares decoded from the encoding equal, within the 1/255 quantization, each
 * state's time per finest bucket computed here from the pieces. */
static void random_stream(void **state)
{
	(void)state;
	enum { N = 300000 };
	uint64_t *ps = malloc(N * sizeof *ps), *pe = malloc(N * sizeof *pe);
	unsigned *pst = malloc(N * sizeof *pst);
	assert_non_null(ps);
	assert_non_null(pe);
	assert_non_null(pst);
	struct hs_summary s;
	hs_init(&s);
	assert_int_equal(hs_add_row(&s), 0);
	uint64_t t = 1000000;
	uint64_t slices = 0;
	int last = -1;
	uint64_t last_end = 0;
	for (int i = 0; i < N; i++) {
		if (lcg() % 10 == 0)
			t += lcg() % 5000;   /* a gap */
		uint64_t len = 1 + lcg() % (lcg() % 4 ? 2000 : 100000);
		unsigned st = (unsigned)(lcg() % HS_STATES);
		ps[i] = t;
		pe[i] = t + len;
		pst[i] = st;
		slices += !(last == (int)st && last_end == t);
		last = (int)st;
		last_end = t + len;
		hs_add(&s, 0, t, t + len, st, (uint32_t)(lcg() % 16384));
		t += len;
	}
	assert_int_equal(s.rows[0]->slices, slices);
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	assert_int_equal(hs_encode_row(&s, 0, &buf, &len, &cap, NULL), 0);
	assert_true(len <= hs_row_bound());
	print_message("# %zu bytes encoded (bound %zu), width %llu ns, %u levels\n", len,
		      hs_row_bound(), (unsigned long long)s.width, hs_levels(&s));
	/* decode: every level's run list covers exactly the used buckets; the counts of level
	 * 0 add up to the slices */
	struct dec d = { buf, buf + len };
	uint32_t used = hs_used(&s);
	for (unsigned l = 0; l < hs_levels(&s); l++) {
		uint64_t runs = dvarint(&d), covered = 0, count = 0;
		for (uint64_t k = 0; k < runs; k++) {
			uint64_t rl = dvarint(&d);
			uint8_t st = *d.p++;
			assert_true(st < HS_STATES || st == 7);
			uint64_t c = dvarint(&d);
			dvarint(&d);
			covered += rl;
			count += rl * c;
		}
		assert_int_equal(covered, (used + (1u << l) - 1) >> l);
		assert_int_equal(count, slices);
	}
	/* the shares, against the brute force */
	uint64_t w = s.width, t0 = s.t0;
	double *want = calloc((size_t)used * HS_STATES, sizeof *want);
	assert_non_null(want);
	for (int i = 0; i < N; i++)
		for (uint64_t a = ps[i]; a < pe[i];) {
			uint64_t b = (a - t0) / w, e = t0 + (b + 1) * w;
			if (e > pe[i])
				e = pe[i];
			want[b * HS_STATES + pst[i]] += (double)(e - a);
			a = e;
		}
	uint64_t runs = dvarint(&d), bucket = 0, worst = 0;
	for (uint64_t k = 0; k < runs; k++) {
		uint64_t rl = dvarint(&d);
		uint8_t mask = *d.p++, q[HS_STATES] = { 0 };
		for (unsigned j = 0; j < HS_STATES; j++)
			if (mask & (1u << j))
				q[j] = *d.p++;
		for (uint64_t r = 0; r < rl; r++, bucket++)
			for (unsigned j = 0; j < HS_STATES; j++) {
				double got = (double)q[j] * (double)w / 255.0;
				double diff = got - want[bucket * HS_STATES + j];
				if (diff < 0)
					diff = -diff;
				/* quantized to 1/255 of the width; a present state is at least 1/255 */
				assert_true(diff <= (double)w / 255.0 + 1e-9);
				if ((uint64_t)diff > worst)
					worst = (uint64_t)diff;
			}
	}
	assert_int_equal(bucket, used);
	assert_true(d.p == d.end);
	free(want);
	free(buf);
	free(ps);
	free(pe);
	free(pst);
	hs_free(&s);
}

/* The worst case for the size: every finest bucket different (one piece per bucket with a
 * state, count and name that change each time) still fits the bound. */
static void size_bound(void **state)
{
	(void)state;
	struct hs_summary s;
	hs_init(&s);
	assert_int_equal(hs_add_row(&s), 0);
	for (uint64_t i = 0; i < HS_BUCKETS; i++)
		for (uint64_t k = 0; k <= i % 3; k++)
			hs_add(&s, 0, i * 3 + k, i * 3 + k + 1, (unsigned)((i + k) % HS_STATES),
			       (uint32_t)(i * 7 + k) % 16384);
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	assert_int_equal(hs_encode_row(&s, 0, &buf, &len, &cap, NULL), 0);
	print_message("# worst-case-ish row: %zu bytes (bound %zu)\n", len, hs_row_bound());
	assert_true(len <= hs_row_bound());
	free(buf);
	hs_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hand_derived),
		cmocka_unit_test(coarsening),
		cmocka_unit_test(row_budget),
		cmocka_unit_test(random_stream),
		cmocka_unit_test(size_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
