/* The summaries' rule for which rows keep their intervals whole (lib/session/serve_summary.c:
 * SUM_ROW_LIST, SUM_ROW_SHARE): a row keeps its list while it has at most 16,384 intervals,
 * or while it is at most 1/128 of all the rows' intervals and exits; past both, the list is
 * given up and the row is answered from its buckets only. What a list buys is seen from
 * outside: a window where the row has fewer than 2 intervals per pixel is answered from the
 * summaries (exact, the intervals that were fed) when the row kept its list, and sent to a
 * replay (0) when it did not.
 *
 * The recorder is fed by hand, so the counts are known: one interval per 1 us step,
 * 500 ns long.
 *   phase 1, alternating: D 16,384 intervals (never past the count: kept, though it is half
 *     of everything then), E 16,385 (its last one is past the count while it is half: given up);
 *   phase 2, 4,000,000 steps of B (busy: given up at once past the count), and on every
 *     200th step A (20,000 in all, 1/200 of the activity: kept past the count) and on every
 *     100th C (40,000, 1/100: given up). */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "session/serve_rows.h"
#include "vmscope/model.h"
#include "vmscope/serve.h"

#define STEP 1000u
#define LEN 500u
#define T0 1000000u
#define P1 (16384u + 16385u)
#define P2 4000000u

struct fed {
	struct vms_serve_summary_rec *r;
	int32_t A, B, C, D, E;
	uint64_t t;   /* the next step's start */
	uint64_t acts;
};

static void one(struct fed *f, int32_t row, uint64_t s)
{
	struct ival v = { .s = s, .e = s + LEN, .a = 1 /* vmm */, .b = -1, .c = 7 };
	vms_serve_summary_rec_ival_at(f->r, row, &v);
	f->acts++;
}

struct loaded {
	char *buf;
	size_t len;
	struct vms_serve_summary *s;
};

static struct loaded *build(void)
{
	static struct loaded L;
	if (L.s)
		return &L;
	struct fed f = { .r = vms_serve_summary_rec_new(), .t = T0 };
	assert_non_null(f.r);
	vms_serve_summary_rec_start(f.r, T0);
	f.A = vms_serve_summary_rec_row(f.r, ROW_THREAD, 0, 100);
	f.B = vms_serve_summary_rec_row(f.r, ROW_THREAD, 0, 101);
	f.C = vms_serve_summary_rec_row(f.r, ROW_THREAD, 0, 102);
	f.D = vms_serve_summary_rec_row(f.r, ROW_THREAD, 0, 103);
	f.E = vms_serve_summary_rec_row(f.r, ROW_THREAD, 0, 104);
	assert_true(f.A >= 0 && f.B >= 0 && f.C >= 0 && f.D >= 0 && f.E >= 0);
	for (uint32_t i = 0; i < P1; i++, f.t += STEP)
		one(&f, i + 1 == P1 || i % 2 ? f.E : f.D, f.t);
	for (uint32_t i = 0; i < P2; i++, f.t += STEP) {
		one(&f, f.B, f.t);
		/* A and C on the same step, later in it (rows of their own: no overlap) */
		if (i % 200 == 0)
			one(&f, f.A, f.t + LEN);
		if (i % 100 == 0)
			one(&f, f.C, f.t + LEN);
	}
	struct vms_model *m = vms_model_new();
	assert_non_null(m);
	FILE *mf = open_memstream(&L.buf, &L.len);
	assert_non_null(mf);
	assert_int_equal(vms_serve_summary_rec_write(f.r, f.acts, m, mf), 0);
	assert_int_equal(fclose(mf), 0);
	vms_model_free(m);
	vms_serve_summary_rec_free(f.r);
	struct vms_error err = { 0 };
	L.s = vms_serve_summary_load(L.buf, L.len, &err);
	if (!L.s)
		fail_msg("load: %s", err.msg);
	return &L;
}

/* The window [from, to) at 1000 px for row tid alone: 1 answered (the answer in *out), 0 sent
 * to a replay. */
static int window(uint64_t from, uint64_t to, int32_t tid, char **out)
{
	char id[48];
	sr_row_id(id, sizeof id, ROW_THREAD, 0, tid);
	size_t len = 0;
	*out = NULL;
	FILE *f = open_memstream(out, &len);
	assert_non_null(f);
	struct vms_error err = { 0 };
	int st = vms_serve_summary_window(build()->s, from, to, 1000, id, 1, f, &err);
	assert_int_equal(fclose(f), 0);
	if (st < 0)
		fail_msg("window: %s", err.msg);
	return st;
}

static unsigned count_of(const char *s, const char *what)
{
	unsigned n = 0;
	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* An answer holding row tid exactly, with the n intervals starting at first, first + gap, ... */
static void assert_exact(const char *js, int32_t tid, unsigned n, uint64_t first, uint64_t gap)
{
	char want[64];
	snprintf(want, sizeof want, "\"id\":\"t:0:%d\",\"count\":%u,\"exact\":true", tid, n);
	if (!strstr(js, want))
		fail_msg("no %s in %.300s", want, js);
	assert_int_equal(count_of(js, "\"start\":"), n);
	for (unsigned i = 0; i < n; i++) {
		snprintf(want, sizeof want, "{\"start\":%llu,\"end\":%llu,",
			 (unsigned long long)(first + i * gap),
			 (unsigned long long)(first + i * gap + LEN));
		if (!strstr(js, want))
			fail_msg("interval %u (%s) not in the answer", i, want);
	}
}

/* D: 16,384 intervals, half of all while they came: kept (the count alone keeps a row);
 * E, one more: given up. A window of 100 of D's (200 steps) at 1000 px. */
static void test_the_count(void **st)
{
	(void)st;
	uint64_t from = T0 + 10000ull * STEP, to = from + 200ull * STEP;
	char *js;
	assert_int_equal(window(from, to, 103, &js), 1);
	assert_exact(js, 103, 100, from, 2 * STEP);
	free(js);
	assert_int_equal(window(from, to, 104, &js), 0);
	free(js);
	/* and before E's last interval, while E had 16,384 too: the list was whole then, but
	 * the row's list is one for the trace */
	assert_int_equal(window(T0, T0 + 200ull * STEP, 104, &js), 0);
	free(js);
}

/* A: 20,000 intervals, 1/200 of the activity: kept past the count; C: 40,000, 1/100: given
 * up. Windows of 20,000 steps hold 100 of A's and 200 of C's: under 2 per pixel. Late in the
 * trace (A's 16,385th came at step 3,276,800 of phase 2) and early. */
static void test_the_share(void **st)
{
	(void)st;
	uint64_t p2 = T0 + (uint64_t)P1 * STEP;
	for (unsigned w = 0; w < 2; w++) {
		uint64_t k = w ? 3980000u : 400000u;   /* a multiple of 200: A's step */
		uint64_t from = p2 + k * STEP, to = from + 20000ull * STEP;
		char *js;
		assert_int_equal(window(from, to, 100, &js), 1);
		assert_exact(js, 100, 100, from + LEN, 200ull * STEP);
		free(js);
		assert_int_equal(window(from, to, 102, &js), 0);
		free(js);
	}
}

/* B, the busy row, has no list but 20 intervals per pixel in a window of 20,000 of its steps:
 * answered from its buckets (not exact), all its vmm time there. In a window of 100 steps
 * (fewer than 2 per pixel): replayed. */
static void test_busy_row(void **st)
{
	(void)st;
	uint64_t p2 = T0 + (uint64_t)P1 * STEP;
	uint64_t from = p2 + 1000000ull * STEP, to = from + 20000ull * STEP;
	char *js;
	assert_int_equal(window(from, to, 101, &js), 1);
	assert_non_null(strstr(js, "\"id\":\"t:0:101\",\"count\":20000,\"exact\":false"));
	free(js);
	assert_int_equal(window(from, from + 100ull * STEP, 101, &js), 0);
	free(js);
}

static int teardown(void **st)
{
	(void)st;
	struct loaded *L = build();
	vms_serve_summary_free(L->s);
	free(L->buf);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_count),
		cmocka_unit_test(test_the_share),
		cmocka_unit_test(test_busy_row),
	};
	return cmocka_run_group_tests(tests, NULL, teardown);
}
