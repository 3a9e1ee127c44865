/* Clock sync from matched events (vmscope/sync.h): the hull on hand-made point sets (each
 * quality, FAIL), the hull against a brute force over every point written here, insertion
 * order, the matcher's rules and bound, the spanning tree; the clock model's known-slope fit
 * and drift bound.
 *
 * Points are (x, y): x the time on machine a, y on machine b. "above" = a message a -> b
 * (send on a at x, receipt on b at y), "below" = b -> a (receipt on a at x, send on b at y). */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vmscope/sync.h"

static void add_all(struct vms_hull *h, const int64_t (*p)[3], size_t n)
{
	for (size_t i = 0; i < n; i++)
		vms_hull_add(h, (uint64_t)p[i][0], (uint64_t)p[i][1], p[i][2] != 0);
}

#define NEAR(a, b) assert_true(fabsl((long double)(a) - (long double)(b)) < 1e-12L)

/* The OneQemuKvm vmsync messages (host = a = x, guest = b = y; same clock, 10 ns each way):
 * below (guest -> host): (50,40) (200,190) (250,240); above (host -> guest): (55,65)
 * (205,215) (255,265). By hand:
 *   alpha_max = min over (b left of a) = slope((50,40),(255,265)) = 225/205 = 45/41
 *   alpha_min = max over (a left of b) = slope((55,65),(250,240)) = 175/195 = 35/39
 *   beta_min = 40 - 50 * 45/41, beta_max = 65 - 55 * 35/39 (absolute coordinates)
 * The fit's betas are relative to the origin (x0, y0) = the first point, (50, 40). */
static const int64_t oqk_points[][3] = { { 50, 40, 0 },   { 55, 65, 1 },   { 200, 190, 0 },
					 { 205, 215, 1 }, { 250, 240, 0 }, { 255, 265, 1 } };

static void test_hull_accurate(void **state)
{
	(void)state;
	struct vms_hull h;
	vms_hull_init(&h);
	add_all(&h, oqk_points, 6);
	struct vms_hull_fit f;
	vms_hull_solve(&h, false, &f);
	assert_int_equal(f.quality, VMS_SYNC_Q_ACCURATE);
	assert_int_equal(f.pairs, 6);
	NEAR(f.alpha_max, 45.0L / 41);
	NEAR(f.alpha_min, 35.0L / 39);
	NEAR(f.accuracy, 45.0L / 41 - 35.0L / 39);
	long double bmin = 40 - 50 * 45.0L / 41, bmax = 65 - 55 * 35.0L / 39;
	/* relative coordinates: beta_rel = beta_abs + alpha * x0 - y0 */
	NEAR(f.beta_min, bmin + 45.0L / 41 * 50 - 40);
	NEAR(f.beta_max, bmax + 35.0L / 39 * 50 - 40);
	NEAR(f.alpha, (45.0L / 41 + 35.0L / 39) / 2);
	/* the three above points are collinear: the middle one is not on the hull */
	assert_int_equal(f.hull_above, 2);
	assert_int_equal(f.hull_below, 2);
	/* the transform guest -> host: t = (t_g - beta) / alpha in absolute coordinates */
	struct vms_linear l;
	assert_int_equal(vms_hull_fit_linear(&f, &l), 0);
	long double alpha = (45.0L / 41 + 35.0L / 39) / 2, beta = (bmin + bmax) / 2;
	for (uint64_t t = 0; t < 400; t += 7) {
		long double want = ((long double)t - beta) / alpha;
		assert_true(fabsl((long double)vms_linear_apply(&l, t) - want) <= 0.5L + 1e-9L);
	}
	/* in fractions: alpha = 1595/1599, beta = (610/39 - 610/41) / 2 = 610/1599, so the guest's
	 * t is the host's round((1599 t - 610) / 1595): 375 -> round(375.558) = 376, 10 -> 10 */
	assert_int_equal(vms_linear_apply(&l, 375), 376);
	assert_int_equal(vms_linear_apply(&l, 10), 10);
	assert_int_equal(vms_linear_apply(&l, 175), 175);
	/* the other orientation: the lines of the swapped frame are the same lines, inverted:
	 * its alpha_max is 1 / alpha_min and its alpha_min 1 / alpha_max */
	struct vms_hull_fit g;
	vms_hull_solve(&h, true, &g);
	assert_int_equal(g.quality, VMS_SYNC_Q_ACCURATE);
	NEAR(g.alpha_max, 39.0L / 35);
	NEAR(g.alpha_min, 41.0L / 45);
	vms_hull_free(&h);
}

static void test_hull_absent_incomplete(void **state)
{
	(void)state;
	struct vms_hull h;
	vms_hull_init(&h);
	struct vms_hull_fit f;
	vms_hull_solve(&h, false, &f);
	assert_int_equal(f.quality, VMS_SYNC_Q_ABSENT);
	struct vms_linear l;
	assert_int_equal(vms_hull_fit_linear(&f, &l), -1);
	/* one direction only (a -> b, latencies 7, 3, 9): a bound, beta <= min(y - x) = 3 */
	vms_hull_add(&h, 100, 107, true);
	vms_hull_add(&h, 200, 203, true);
	vms_hull_add(&h, 300, 309, true);
	vms_hull_solve(&h, false, &f);
	assert_int_equal(f.quality, VMS_SYNC_Q_INCOMPLETE);
	NEAR(f.beta, 3 - (107 - 100)); /* relative to (100, 107) */
	assert_int_equal(vms_hull_fit_linear(&f, &l), -1); /* not used */
	vms_hull_free(&h);
}

/* Both directions, but every message b -> a is later than every a -> b: the steepest line is
 * unbounded. above (0,10); below (100,95): alpha_min = (95 - 10) / 100 = 0.85, so slope 1 is
 * feasible; at slope 1, beta in [95 - 100, 10 - 0] = [-5, 10], bisected: 2.5 (absolute), i.e.
 * -7.5 relative to the origin (0, 10). */
static void test_hull_approximate(void **state)
{
	(void)state;
	struct vms_hull h;
	vms_hull_init(&h);
	vms_hull_add(&h, 0, 10, true);
	vms_hull_add(&h, 100, 95, false);
	struct vms_hull_fit f;
	vms_hull_solve(&h, false, &f);
	assert_int_equal(f.quality, VMS_SYNC_Q_APPROXIMATE);
	NEAR(f.alpha, 1.0L);
	NEAR(f.alpha_min, 0.85L);
	NEAR(f.beta, 2.5L - 10);
	assert_true(f.has_range);
	NEAR(f.beta_lo, -5.0L - 10);
	NEAR(f.beta_hi, 10.0L - 10);
	struct vms_linear l;
	assert_int_equal(vms_hull_fit_linear(&f, &l), 0);
	assert_int_equal(vms_linear_apply(&l, 1000), 998); /* 1000 - 2.5 rounded to nearest */
	vms_hull_free(&h);
}

/* The hulls cross: above (0,10), (100,110); below (50,70), above the line through them.
 * alpha_max = slope((50,70),(100,110)) = 0.8 < alpha_min = slope((0,10),(50,70)) = 1.2. */
static void test_hull_fail(void **state)
{
	(void)state;
	struct vms_hull h;
	vms_hull_init(&h);
	vms_hull_add(&h, 0, 10, true);
	vms_hull_add(&h, 100, 110, true);
	vms_hull_add(&h, 50, 70, false);
	struct vms_hull_fit f;
	vms_hull_solve(&h, false, &f);
	assert_int_equal(f.quality, VMS_SYNC_Q_FAIL);
	NEAR(f.alpha_max, 0.8L);
	NEAR(f.alpha_min, 1.2L);
	struct vms_linear l;
	assert_int_equal(vms_hull_fit_linear(&f, &l), -1);
	vms_hull_free(&h);
	/* a message received before it was sent at the same instant of x: no line at all */
	vms_hull_init(&h);
	vms_hull_add(&h, 100, 50, true);
	vms_hull_add(&h, 100, 60, false);
	vms_hull_solve(&h, false, &f);
	assert_int_equal(f.quality, VMS_SYNC_Q_FAIL);
	vms_hull_free(&h);
}

/* xorshift, for reproducible point sets */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* exact slope comparisons for the brute force: dy1/dx1 < dy2/dx2 */
static bool less(__int128 dy1, __int128 dx1, __int128 dy2, __int128 dx2)
{
	return dy1 * dx2 < dy2 * dx1;
}

/* Random messages between clocks y = x * (1 + 50e-6) + 3e9 (epoch-sized x), latencies
 * 5-100 us, inserted in random order; the brute force over every pair of points (not only the
 * hulls) gives the same extreme slopes, and the sorted insertion the same hulls. */
static void test_hull_brute_force(void **state)
{
	(void)state;
	enum { N = 600 };
	static int64_t p[N][3];
	uint64_t s = 88172645463325252ull;
	const int64_t base = 1700000000000000000ll;
	for (int i = 0; i < N; i++) {
		int64_t x = base + (int64_t)(rnd(&s) % 10000000000ull); /* 10 s */
		int64_t lat = 5000 + (int64_t)(rnd(&s) % 95000);
		bool above = rnd(&s) & 1;
		/* y of the same instant on b */
		int64_t y = x + (x - base) / 20000 + 3000000000ll;
		if (above) /* sent by a at x, received by b later */
			p[i][0] = x, p[i][1] = y + lat, p[i][2] = 1;
		else /* sent by b at y, received by a later */
			p[i][0] = x + lat, p[i][1] = y, p[i][2] = 0;
	}
	struct vms_hull h1, h2;
	vms_hull_init(&h1);
	vms_hull_init(&h2);
	add_all(&h1, (const int64_t(*)[3])p, N);
	/* sorted by x */
	int64_t (*q)[3] = malloc(sizeof p);
	assert_non_null(q);
	memcpy(q, p, sizeof p);
	for (int i = 1; i < N; i++)
		for (int j = i; j > 0 && q[j - 1][0] > q[j][0]; j--) {
			int64_t t[3];
			memcpy(t, q[j], sizeof t);
			memcpy(q[j], q[j - 1], sizeof t);
			memcpy(q[j - 1], t, sizeof t);
		}
	add_all(&h2, (const int64_t(*)[3])q, N);
	free(q);
	struct vms_hull_fit f1, f2;
	vms_hull_solve(&h1, false, &f1);
	vms_hull_solve(&h2, false, &f2);
	assert_int_equal(f1.quality, VMS_SYNC_Q_ACCURATE);
	assert_int_equal(f1.hull_above, f2.hull_above);
	assert_int_equal(f1.hull_below, f2.hull_below);
	assert_true(f1.hull_above < 40 && f1.hull_below < 40);
	/* brute force over all N^2 pairs */
	__int128 mxy = 0, mxx = 0, mny = 0, mnx = 0;
	bool hmx = false, hmn = false;
	for (int i = 0; i < N; i++) {
		if (p[i][2])
			continue;
		for (int j = 0; j < N; j++) {
			if (!p[j][2])
				continue;
			__int128 dx = (__int128)p[j][0] - p[i][0], dy = (__int128)p[j][1] - p[i][1];
			if (dx > 0 && (!hmx || less(dy, dx, mxy, mxx)))
				mxy = dy, mxx = dx, hmx = true;
			if (dx < 0 && (!hmn || less(mny, mnx, -dy, -dx)))
				mny = -dy, mnx = -dx, hmn = true;
		}
	}
	assert_true(hmx && hmn);
	NEAR(f1.alpha_max, (long double)mxy / (long double)mxx);
	NEAR(f1.alpha_min, (long double)mny / (long double)mnx);
	NEAR(f2.alpha_max, f1.alpha_max);
	/* the true slope lies between them */
	assert_true(f1.alpha_min < 1.00005L && 1.00005L < f1.alpha_max);
	/* every message, transformed, is received after it was sent */
	struct vms_linear l;
	assert_int_equal(vms_hull_fit_linear(&f1, &l), 0);
	for (int i = 0; i < N; i++) {
		uint64_t ta = (uint64_t)p[i][0], tb = vms_linear_apply(&l, (uint64_t)p[i][1]);
		if (p[i][2])
			assert_true(tb >= ta);
		else
			assert_true(ta >= tb);
	}
	vms_hull_free(&h1);
	vms_hull_free(&h2);
}

/* Hulls as large as the points: the points above on a convex curve, those below on a concave
 * one (every point is a vertex), inserted in reverse order; against the brute force. */
static void test_hull_all_vertices(void **state)
{
	(void)state;
	enum { N = 1500 };
	struct vms_hull h;
	vms_hull_init(&h);
	static int64_t p[2 * N][3];
	for (int i = N - 1; i >= 0; i--) {
		int64_t x = (int64_t)i * 1000, d = (int64_t)(i - N / 2) * (i - N / 2);
		p[2 * i][0] = x, p[2 * i][1] = x + 50000 + d, p[2 * i][2] = 1;
		p[2 * i + 1][0] = x + 7, p[2 * i + 1][1] = x - 50000 - d, p[2 * i + 1][2] = 0;
		vms_hull_add(&h, (uint64_t)x + (1ull << 40), (uint64_t)(x + 50000 + d) + (1ull << 41), true);
		vms_hull_add(&h, (uint64_t)x + 7 + (1ull << 40), (uint64_t)(x - 50000 - d) + (1ull << 41), false);
	}
	struct vms_hull_fit f;
	vms_hull_solve(&h, false, &f);
	assert_int_equal(f.hull_above, N);
	assert_int_equal(f.hull_below, N);
	assert_int_equal(f.quality, VMS_SYNC_Q_ACCURATE);
	__int128 mxy = 0, mxx = 0, mny = 0, mnx = 0;
	bool hmx = false, hmn = false;
	for (int i = 1; i < 2 * N; i += 2)
		for (int j = 0; j < 2 * N; j += 2) {
			__int128 dx = (__int128)p[j][0] - p[i][0], dy = (__int128)p[j][1] - p[i][1];
			if (dx > 0 && (!hmx || less(dy, dx, mxy, mxx)))
				mxy = dy, mxx = dx, hmx = true;
			if (dx < 0 && (!hmn || less(mny, mnx, -dy, -dx)))
				mny = -dy, mnx = -dx, hmn = true;
		}
	NEAR(f.alpha_max, (long double)mxy / (long double)mxx);
	NEAR(f.alpha_min, (long double)mny / (long double)mnx);
	vms_hull_free(&h);
}

static void test_matcher_rules(void **state)
{
	(void)state;
	struct vms_matcher *m = vms_matcher_new(16);
	assert_non_null(m);
	struct vms_sync_pair p;
	const uint64_t k1[3] = { 1000, 2000, 0x18 }, k2[3] = { 1001, 2000, 0x18 };
	/* the effect may come first */
	assert_int_equal(vms_matcher_event(m, 1, VMS_K_NET_RECV, k1, 500, &p), 0);
	assert_int_equal(vms_matcher_event(m, 0, VMS_K_NET_SEND, k1, 400, &p), 1);
	assert_int_equal(p.from, 0);
	assert_int_equal(p.to, 1);
	assert_int_equal(p.t_send, 400);
	assert_int_equal(p.t_recv, 500);
	/* the first event for a key wins: the retransmission at 610 waits ignored */
	assert_int_equal(vms_matcher_event(m, 0, VMS_K_NET_SEND, k2, 600, &p), 0);
	assert_int_equal(vms_matcher_event(m, 0, VMS_K_NET_SEND, k2, 610, &p), 0);
	assert_int_equal(vms_matcher_event(m, 1, VMS_K_NET_RECV, k2, 700, &p), 1);
	assert_int_equal(p.t_send, 600);
	/* within one machine: consumed, ignored */
	assert_int_equal(vms_matcher_event(m, 2, VMS_K_NET_SEND, k1, 800, &p), 0);
	assert_int_equal(vms_matcher_event(m, 2, VMS_K_NET_RECV, k1, 801, &p), 0);
	/* vmsync: gh and hg are different keys even with the same (vm_uid, cnt) */
	const uint64_t v[3] = { 123456, 1, 0 };
	assert_int_equal(vms_matcher_event(m, 1, VMS_K_VMSYNC_GH_GUEST, v, 40, &p), 0);
	assert_int_equal(vms_matcher_event(m, 1, VMS_K_VMSYNC_HG_GUEST, v, 45, &p), 0);
	assert_int_equal(vms_matcher_event(m, 0, VMS_K_VMSYNC_GH_HOST, v, 50, &p), 1);
	assert_int_equal(p.from, 1);
	assert_int_equal(p.t_send, 40);
	assert_int_equal(p.t_recv, 50);
	assert_int_equal(vms_matcher_event(m, 0, VMS_K_VMSYNC_HG_HOST, v, 42, &p), 1);
	assert_int_equal(p.from, 0);
	assert_int_equal(p.t_recv, 45);
	const struct vms_match_stats *st = vms_matcher_stats(m);
	assert_int_equal(st->matched, 4);
	assert_int_equal(st->same_machine, 1);
	assert_int_equal(st->duplicates, 1);
	assert_int_equal(st->expired, 0);
	vms_matcher_free(m);
}

/* The bound: with room for 16 waiting events, 100 unmatched sends keep only the newest 16
 * (minus the one entry still held by the earlier retransmission... none here): the first 84
 * are forgotten, the last ones still match. */
static void test_matcher_bound(void **state)
{
	(void)state;
	struct vms_matcher *m = vms_matcher_new(16);
	struct vms_sync_pair p;
	for (uint64_t i = 0; i < 100; i++) {
		const uint64_t k[3] = { i, 0, 0 };
		assert_int_equal(vms_matcher_event(m, 0, VMS_K_NET_SEND, k, i, &p), 0);
	}
	assert_int_equal(vms_matcher_stats(m)->expired, 84);
	const uint64_t old[3] = { 10, 0, 0 }, young[3] = { 90, 0, 0 };
	assert_int_equal(vms_matcher_event(m, 1, VMS_K_NET_RECV, old, 1000, &p), 0);
	assert_int_equal(vms_matcher_event(m, 1, VMS_K_NET_RECV, young, 1000, &p), 1);
	assert_int_equal(p.t_send, 90);
	vms_matcher_free(m);
}

/* Three machines: 0 <-> 1 and 1 <-> 2 exchange messages, 0 and 2 none: 2 is reached through
 * 1, and its transform is the composition. Clocks: t1 = t0 + 1000, t2 = t1 - 500 (slopes 1),
 * latency 10 each way. */
static void test_tree(void **state)
{
	(void)state;
	struct vms_sync_set *s = vms_sync_set_new(3, 64);
	assert_non_null(s);
	for (uint64_t t = 100000; t < 200000; t += 1000) {
		/* 0 -> 1 at t (0's clock), 1 -> 0 */
		vms_sync_set_pair(s, &(struct vms_sync_pair){ 0, 1, t, t + 1000 + 10 });
		vms_sync_set_pair(s, &(struct vms_sync_pair){ 1, 0, t + 1000 + 500, t + 500 + 10 });
		/* 1 -> 2 at u (1's clock), 2 -> 1 */
		uint64_t u = t + 1000 + 200;
		vms_sync_set_pair(s, &(struct vms_sync_pair){ 1, 2, u, u - 500 + 10 });
		vms_sync_set_pair(s, &(struct vms_sync_pair){ 2, 1, u - 500 + 300, u + 300 + 10 });
	}
	struct vms_sync_tree t;
	assert_int_equal(vms_sync_tree_build(s, 0, NULL, &t), 0);
	assert_int_equal(t.parent[0], -1);
	assert_int_equal(t.parent[1], 0);
	assert_int_equal(t.parent[2], 1);
	assert_int_equal(t.depth[2], 2);
	assert_true(t.has_lin[1] && t.has_lin[2]);
	/* symmetric latencies: the bisector is the true line, slope 1 */
	assert_int_equal(vms_linear_apply(&t.lin[1], 151000), 150000);
	assert_int_equal(vms_linear_apply(&t.lin[2], 150500), 150000);
	vms_sync_tree_free(&t);
	/* from machine 2 as the reference, machine 0 maps the other way */
	assert_int_equal(vms_sync_tree_build(s, 2, NULL, &t), 0);
	assert_int_equal(t.parent[0], 1);
	assert_int_equal(vms_linear_apply(&t.lin[0], 150000), 150500);
	vms_sync_tree_free(&t);
	/* a machine fixed by other means (TIME_SHIFT) is not reached through */
	bool fixed[3] = { false, true, false };
	assert_int_equal(vms_sync_tree_build(s, 0, fixed, &t), 0);
	assert_false(t.has_lin[2]);
	assert_int_equal(t.parent[2], -1);
	vms_sync_tree_free(&t);
	vms_sync_set_free(s);
}

/* A known slope (--clock-model auto: a guest and its own host), only the offset fitted.
 * The OneQemuKvm messages again (x = host, y = guest): at slope 1, y - x is -10 for every
 * message guest -> host (below) and +10 for every message host -> guest (above), so the
 * offset beta (y = x + beta) is in [max below, min above] = [-10, 10], absolute; relative to
 * the origin (50, 40), beta_rel = beta + 1 * 50 - 40: [0, 20]. The middle, 0 absolute, maps
 * every guest time to itself. Swapped (x = guest, y = host): host = guest + [-10, 10],
 * relative to (40, 50): [-20, 0]. */
static void test_hull_known_slope(void **state)
{
	(void)state;
	struct vms_hull h;
	vms_hull_init(&h);
	add_all(&h, oqk_points, 6);
	struct vms_hull_fit f;
	vms_hull_solve_slope(&h, false, 1.0L, &f);
	assert_int_equal(f.quality, VMS_SYNC_Q_ACCURATE);
	assert_true(f.offset_only && f.has_range);
	NEAR(f.alpha, 1);
	NEAR(f.beta_lo, 0);
	NEAR(f.beta_hi, 20);
	NEAR(f.beta, 10);
	struct vms_linear l;
	assert_int_equal(vms_hull_fit_linear(&f, &l), 0);
	for (uint64_t t = 0; t < 400; t += 5)
		assert_int_equal(vms_linear_apply(&l, t), t);
	vms_hull_solve_slope(&h, true, 1.0L, &f);
	assert_int_equal(f.quality, VMS_SYNC_Q_ACCURATE);
	assert_int_equal(f.x0, 40);
	assert_int_equal(f.y0, 50);
	NEAR(f.beta_lo, -20);
	NEAR(f.beta_hi, 0);
	vms_hull_free(&h);

	/* slope 2 (y = 2 x + beta): a -> b sent at x = 10, received at y = 2 * 11 = 22 (y - 2x =
	 * 2); b -> a sent at y = 40 (x 20), received at x = 21 (y - 2x = -2): beta in [-2, 2],
	 * relative to (10, 22) beta + 2 * 10 - 22: [-4, 0]. Swapped at slope 1/2 (x = b): the
	 * message b -> a is (40, 21), 21 - 40 / 2 = 1; a -> b (22, 10), 10 - 22 / 2 = -1: [-1, 1],
	 * relative to (22, 10) beta + 22 / 2 - 10: [0, 2]. */
	vms_hull_init(&h);
	vms_hull_add(&h, 10, 22, true);
	vms_hull_add(&h, 21, 40, false);
	vms_hull_solve_slope(&h, false, 2.0L, &f);
	assert_int_equal(f.quality, VMS_SYNC_Q_ACCURATE);
	NEAR(f.beta_lo, -4);
	NEAR(f.beta_hi, 0);
	vms_hull_solve_slope(&h, true, 0.5L, &f);
	assert_int_equal(f.quality, VMS_SYNC_Q_ACCURATE);
	NEAR(f.beta_lo, 0);
	NEAR(f.beta_hi, 2);
	vms_hull_free(&h);

	/* messages that contradict slope 1 (received 5 before sent, both ways): y - x is -5
	 * above and +5 below, lo 5 > hi -5: FAIL, no transform; one direction: INCOMPLETE */
	vms_hull_init(&h);
	vms_hull_add(&h, 100, 95, true);
	vms_hull_solve_slope(&h, false, 1.0L, &f);
	assert_int_equal(f.quality, VMS_SYNC_Q_INCOMPLETE);
	assert_int_equal(vms_hull_fit_linear(&f, &l), -1);
	vms_hull_add(&h, 200, 205, false);
	vms_hull_solve_slope(&h, false, 1.0L, &f);
	assert_int_equal(f.quality, VMS_SYNC_Q_FAIL);
	assert_false(f.has_range);
	assert_int_equal(vms_hull_fit_linear(&f, &l), -1);
	vms_hull_free(&h);
}

/* The clock model's rules on an edge. Two machines whose clocks run 2,000 ppm apart
 * (t_1 = 1.002 t_0, latency 1,000 ns of 0's time each way): as two hosts, auto refuses the
 * hull (beyond 1,000 ppm) and the tree does not use it; linear takes it (slope ~1.002);
 * with machine 1 a guest of machine 0 at a known slope of 1 the messages contradict
 * each other (FAIL: y - x grows by 2 ns per us, 20 us over the 10 ms the messages span,
 * more than the 2 us of the two latencies); at the true slope 1.002 the offset is bounded
 * (y - 1.002 x within +-1,002 ns). */
static void test_clock_model_rules(void **state)
{
	(void)state;
	struct vms_sync_set *s = vms_sync_set_new(2, 64);
	assert_non_null(s);
	for (uint64_t t = 1000000; t < 11000000; t += 500000) {
		uint64_t r = t + 1000;
		vms_sync_set_pair(s, &(struct vms_sync_pair){ 0, 1, t, r + r / 500 });
		uint64_t u = t + 20000;
		vms_sync_set_pair(s, &(struct vms_sync_pair){ 1, 0, u + u / 500, u + 1000 });
	}
	int32_t host[2] = { -1, -1 };
	long double slope[2] = { 1, 1 };
	struct vms_sync_rules rules = { VMS_CLOCK_MODEL_AUTO, host, slope };
	struct vms_hull_fit f;
	vms_sync_edge_fit(s, &rules, 0, 1, &f);
	assert_int_equal(f.quality, VMS_SYNC_Q_ACCURATE);
	assert_true(f.refused && !vms_sync_edge_usable(&f));
	assert_true(fabsl(f.alpha - 1.002L) < 1e-4L);
	struct vms_sync_tree t;
	assert_int_equal(vms_sync_tree_build_rules(s, 0, NULL, &rules, &t), 0);
	assert_false(t.has_lin[1]);
	assert_true(t.has_fit[1] && t.fit[1].refused);
	vms_sync_tree_free(&t);
	rules.model = VMS_CLOCK_MODEL_LINEAR;
	vms_sync_edge_fit(s, &rules, 0, 1, &f);
	assert_false(f.refused);
	assert_true(vms_sync_edge_usable(&f));
	assert_int_equal(vms_sync_tree_build_rules(s, 0, NULL, &rules, &t), 0);
	assert_true(t.has_lin[1]);
	vms_sync_tree_free(&t);
	rules.model = VMS_CLOCK_MODEL_AUTO;
	host[1] = 0;
	vms_sync_edge_fit(s, &rules, 0, 1, &f);
	assert_true(f.offset_only);
	assert_int_equal(f.quality, VMS_SYNC_Q_FAIL);
	/* at the true slope the offset is bounded: 1.002 is the guest's ns per the host's */
	slope[1] = 1.002L;
	vms_sync_edge_fit(s, &rules, 0, 1, &f);
	assert_int_equal(f.quality, VMS_SYNC_Q_ACCURATE);
	assert_true(f.beta_hi - f.beta_lo > 2003 && f.beta_hi - f.beta_lo < 2005);
	/* from the guest as parent the slope is inverted */
	vms_sync_edge_fit(s, &rules, 1, 0, &f);
	assert_int_equal(f.quality, VMS_SYNC_Q_ACCURATE);
	NEAR(f.alpha, 1 / 1.002L);
	vms_sync_set_free(s);
	enum vms_clock_model cm;
	assert_int_equal(vms_clock_model_parse("linear", &cm), 0);
	assert_int_equal(cm, VMS_CLOCK_MODEL_LINEAR);
	assert_int_equal(vms_clock_model_parse("auto", &cm), 0);
	assert_int_equal(cm, VMS_CLOCK_MODEL_AUTO);
	assert_int_equal(vms_clock_model_parse("hull", &cm), -1);
	assert_string_equal(vms_clock_model_name(VMS_CLOCK_MODEL_LINEAR), "linear");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hull_accurate),
		cmocka_unit_test(test_hull_absent_incomplete),
		cmocka_unit_test(test_hull_approximate),
		cmocka_unit_test(test_hull_fail),
		cmocka_unit_test(test_hull_brute_force),
		cmocka_unit_test(test_hull_all_vertices),
		cmocka_unit_test(test_matcher_rules),
		cmocka_unit_test(test_matcher_bound),
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_hull_known_slope),
		cmocka_unit_test(test_clock_model_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
