/* The k-way merge, on a fake source whose streams are arrays: the expected order is the
 * arrays' events sorted by (time, source, stream), computed in the test by qsort. */
#include "testutil.h"

#include "../../lib/core/merge.h"
#include "vmscope/clock.h"

struct fake {
	uint32_t nr_streams;
	uint32_t len[4];
	uint64_t ts[4][64];
	uint32_t pos[4];
	int fail_at;   /* return an error at this stream position of stream 0, -1 never */
};

static uint32_t f_nr(struct vms_source *s) { return ((struct fake *)s->impl)->nr_streams; }
static int f_next(struct vms_source *s, uint32_t st, struct vms_event *ev)
{
	struct fake *f = s->impl;
	if (st == 0 && f->fail_at >= 0 && f->pos[0] == (uint32_t)f->fail_at)
		return vms_error_set(&s->err, VMS_ERR_FORMAT, "fake: damaged at byte offset %u", f->pos[0]);
	if (f->pos[st] >= f->len[st])
		return 0;
	memset(ev, 0, sizeof *ev);
	ev->ts = f->ts[st][f->pos[st]++];
	ev->cpu = st;
	ev->f[0] = ev->ts;
	return 1;
}
static int f_rewind(struct vms_source *s)
{
	memset(((struct fake *)s->impl)->pos, 0, sizeof ((struct fake *)s->impl)->pos);
	return 0;
}
static const struct vms_source_ops fake_ops = { .name = "fake", .nr_streams = f_nr, .next = f_next, .rewind = f_rewind };

struct item { uint64_t t; uint32_t src, stream; };
static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	if (x->t != y->t) return x->t < y->t ? -1 : 1;
	if (x->src != y->src) return x->src < y->src ? -1 : 1;
	return (x->stream > y->stream) - (x->stream < y->stream);
}

static void test_order(void **state)
{
	(void)state;
	static struct fake f[2];
	memset(f, 0, sizeof f);
	struct vms_source src[2] = { 0 };
	struct item expect[512];
	size_t n = 0;
	uint64_t seed = 12345;
	for (int s = 0; s < 2; s++) {
		f[s].nr_streams = 3 + (uint32_t)s;
		f[s].fail_at = -1;
		for (uint32_t st = 0; st < f[s].nr_streams; st++) {
			uint64_t t = 0;
			f[s].len[st] = 10 + st * 7;
			for (uint32_t k = 0; k < f[s].len[st]; k++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				t += (seed >> 60); /* small steps: many ties across streams */
				f[s].ts[st][k] = t;
				expect[n++] = (struct item){ t, (uint32_t)s, st };
			}
		}
		src[s].ops = &fake_ops;
		src[s].impl = &f[s];
	}
	qsort(expect, n, sizeof expect[0], cmp_item);
	struct vms_clock c0, c1;
	vms_clock_init(&c0);
	vms_clock_init(&c1);
	struct vms_source *sp[2] = { &src[0], &src[1] };
	const struct vms_clock *cl[2] = { &c0, &c1 };
	struct vms_error err = { 0 };
	struct vms_merge m;
	assert_int_equal(vms_merge_init(&m, sp, cl, 2, &err), 0);
	const struct vms_event *ev = NULL; /* (vms_merge_next is inline: set when it returns 1) */
	uint64_t t;
	size_t k = 0;
	while (vms_merge_next(&m, &ev, &t) > 0) {
		assert_true(k < n);
		assert_int_equal(t, expect[k].t);
		assert_int_equal(ev->machine, expect[k].src);
		assert_int_equal(ev->stream, expect[k].stream);
		k++;
	}
	assert_int_equal(k, n);
	assert_int_equal(m.backwards, 0);
	vms_merge_free(&m);
}

/* A clock moves a whole source: with offset +100 ns, source 1's event at 50 comes after
 * source 0's at 120. */
static void test_clock_applied(void **state)
{
	(void)state;
	static struct fake f[2];
	memset(f, 0, sizeof f);
	f[0] = (struct fake){ .nr_streams = 1, .len = { 1 }, .ts = { { 120 } }, .fail_at = -1 };
	f[1] = (struct fake){ .nr_streams = 1, .len = { 1 }, .ts = { { 50 } }, .fail_at = -1 };
	struct vms_source src[2] = { { .ops = &fake_ops, .impl = &f[0] }, { .ops = &fake_ops, .impl = &f[1] } };
	struct vms_clock c0, c1;
	vms_clock_init(&c0);
	vms_clock_init(&c1);
	c1.linear = true;
	assert_int_equal(vms_linear_set_slope_offset(&c1.lin, 1.0L, 100.0L), 0);
	struct vms_source *sp[2] = { &src[0], &src[1] };
	const struct vms_clock *cl[2] = { &c0, &c1 };
	struct vms_error err = { 0 };
	struct vms_merge m;
	assert_int_equal(vms_merge_init(&m, sp, cl, 2, &err), 0);
	const struct vms_event *ev = NULL; /* (vms_merge_next is inline: set when it returns 1) */
	uint64_t t;
	assert_int_equal(vms_merge_next(&m, &ev, &t), 1);
	assert_int_equal(ev->machine, 0);
	assert_int_equal(t, 120);
	assert_int_equal(vms_merge_next(&m, &ev, &t), 1);
	assert_int_equal(ev->machine, 1);
	assert_int_equal(t, 150);
	assert_int_equal(vms_merge_next(&m, &ev, &t), 0);
	vms_merge_free(&m);
}

/* A stream that goes backwards is delivered at the last time, flagged and counted. */
static void test_backwards(void **state)
{
	(void)state;
	static struct fake f;
	f = (struct fake){ .nr_streams = 1, .len = { 4 }, .ts = { { 10, 30, 20, 40 } }, .fail_at = -1 };
	struct vms_source src = { .ops = &fake_ops, .impl = &f };
	struct vms_clock c;
	vms_clock_init(&c);
	struct vms_source *sp[1] = { &src };
	const struct vms_clock *cl[1] = { &c };
	struct vms_error err = { 0 };
	struct vms_merge m;
	assert_int_equal(vms_merge_init(&m, sp, cl, 1, &err), 0);
	const struct vms_event *ev = NULL; /* (vms_merge_next is inline: set when it returns 1) */
	uint64_t t, want_t[4] = { 10, 30, 30, 40 };
	for (int k = 0; k < 4; k++) {
		assert_int_equal(vms_merge_next(&m, &ev, &t), 1);
		assert_int_equal(t, want_t[k]);
		assert_int_equal(!!(ev->flags & VMS_EVF_TIME_BACKWARDS), k == 2);
	}
	assert_int_equal(m.backwards, 1);
	vms_merge_free(&m);
}

/* A reader error stops the merge with the reader's message. */
static void test_error(void **state)
{
	(void)state;
	static struct fake f;
	f = (struct fake){ .nr_streams = 1, .len = { 4 }, .ts = { { 1, 2, 3, 4 } }, .fail_at = 2 };
	struct vms_source src = { .ops = &fake_ops, .impl = &f };
	struct vms_clock c;
	vms_clock_init(&c);
	struct vms_source *sp[1] = { &src };
	const struct vms_clock *cl[1] = { &c };
	struct vms_error err = { 0 };
	struct vms_merge m;
	assert_int_equal(vms_merge_init(&m, sp, cl, 1, &err), 0);
	const struct vms_event *ev = NULL; /* (vms_merge_next is inline: set when it returns 1) */
	uint64_t t;
	assert_int_equal(vms_merge_next(&m, &ev, &t), 1);
	assert_int_equal(vms_merge_next(&m, &ev, &t), 1);
	assert_true(vms_merge_next(&m, &ev, &t) < 0);
	assert_string_equal(err.msg, "fake: damaged at byte offset 2");
	vms_merge_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_clock_applied),
		cmocka_unit_test(test_backwards),
		cmocka_unit_test(test_error),
	};
	return cmocka_run_group_tests_name("merge", tests, NULL, NULL);
}
