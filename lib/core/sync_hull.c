/* The convex hulls of one pair of machines and the lines that separate them (vmscope/sync.h).
 *
 * Points arrive in any order of x (a message is matched when its later event is read, and a
 * long-delayed message comes after shorter ones sent later), so each hull is a sorted array
 * into which a point is inserted where its x belongs, after which the neighbours it makes
 * non-convex are removed. Only the lower hull of the points above the line and the upper hull
 * of the points below can support a separating line, so everything else is dropped at once:
 * the hulls stay small (a few points for the scp traces, tens for thousands of random
 * latencies) while the pairs grow. Only data made to defeat this (every point a vertex) grows
 * them; they stop at VMS_HULL_MAX_POINTS, which bounds memory and the O(n) insertion.
 *
 * The separating lines are found exactly. A line y = alpha x + beta separates the two sets iff
 * for every point b below and a above, alpha (x_a - x_b) <= y_a - y_b. So the feasible slopes
 * are [alpha_min, alpha_max] with
 *   alpha_max = min over (b, a), x_b < x_a, of slope(b, a)   (the steepest line, Lmax)
 *   alpha_min = max over (a, b), x_a < x_b, of slope(a, b)   (the flattest line, Lmin)
 * and a pair with x_a = x_b, y_b > y_a makes it empty. The extremes are attained on the hulls;
 * slopes are compared as fractions with 128-bit cross products, and each extreme is found from
 * tangents to the hulls (bisection), in O(n log n) for hulls of n points. */
#include <stdlib.h>
#include <string.h>

#include "vmscope/sync.h"
#include "core/grow.h"

typedef __int128 s128;

#define RANGE ((int64_t)1 << 62) /* coordinates kept within +-2^62 of the origin */

void vms_hull_init(struct vms_hull *h)
{
	memset(h, 0, sizeof *h);
}

void vms_hull_free(struct vms_hull *h)
{
	free(h->lo);
	free(h->up);
	memset(h, 0, sizeof *h);
}

/* (a - o) x (b - o): > 0 when o, a, b turn counter-clockwise */
static s128 cross(struct vms_hull_pt o, struct vms_hull_pt a, struct vms_hull_pt b)
{
	return (s128)(a.x - o.x) * (b.y - o.y) - (s128)(a.y - o.y) * (b.x - o.x);
}

static void remove_at(struct vms_hull_pt *p, uint32_t *n, uint32_t i)
{
	memmove(&p[i], &p[i + 1], (size_t)(*n - i - 1) * sizeof *p);
	(*n)--;
}

/* Insert q into the lower hull p[0..n) (sorted by x, every turn counter-clockwise).
 * Returns 0, 1 when the hull is full (q dropped), -1 when out of memory. */
static int lower_insert(struct vms_hull_pt **pp, uint32_t *n, uint32_t *cap, struct vms_hull_pt q)
{
	struct vms_hull_pt *p = *pp;
	uint32_t lo = 0, hi = *n; /* pos = first index with x > q.x */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (p[mid].x <= q.x)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t pos = lo;
	if (pos > 0 && p[pos - 1].x == q.x) {
		if (p[pos - 1].y <= q.y)
			return 0; /* not lower than the point already there */
		remove_at(p, n, --pos);
	}
	if (pos > 0 && pos < *n && cross(p[pos - 1], p[pos], q) >= 0)
		return 0; /* on or above the hull */
	if (*n >= VMS_HULL_MAX_POINTS)
		return 1; /* a hull this size is no clock: hostile data; the point is dropped */
	if (*n == *cap) {
		struct vms_hull_pt *np = vms_grow(p, cap, sizeof *np, 16);
		if (!np)
			return -1;
		*pp = p = np;
	}
	memmove(&p[pos + 1], &p[pos], (size_t)(*n - pos) * sizeof *p);
	p[pos] = q;
	(*n)++;
	while (pos >= 2 && cross(p[pos - 2], p[pos - 1], q) <= 0) {
		remove_at(p, n, pos - 1);
		pos--;
	}
	while (pos + 2 < *n && cross(q, p[pos + 1], p[pos + 2]) <= 0)
		remove_at(p, n, pos + 1);
	return 0;
}

void vms_hull_add(struct vms_hull *h, uint64_t x, uint64_t y, bool above)
{
	if (!h->has_origin) {
		h->has_origin = true;
		h->x0 = x;
		h->y0 = y;
	}
	s128 dx = (s128)x - (s128)h->x0, dy = (s128)y - (s128)h->y0;
	if (dx >= RANGE || dx <= -RANGE || dy >= RANGE || dy <= -RANGE) {
		h->out_of_range++;
		return;
	}
	struct vms_hull_pt q = { (int64_t)dx, (int64_t)dy };
	int r;
	if (above) {
		h->above++;
		r = lower_insert(&h->lo, &h->nlo, &h->caplo, q);
	} else {
		h->below++;
		q.y = -q.y; /* the upper hull is the lower hull of the mirrored points */
		r = lower_insert(&h->up, &h->nup, &h->capup, q);
	}
	if (r < 0)
		h->nomem = true;
	else if (r > 0)
		h->dropped++;
}

/* A slope dy/dx with dx > 0. */
struct frac {
	s128 dy, dx;
};

static bool frac_less(struct frac a, struct frac b)
{
	return a.dy * b.dx < b.dy * a.dx; /* |dy|, dx < 2^63: products < 2^126 */
}

static long double frac_ld(struct frac f)
{
	return (long double)f.dy / (long double)f.dx;
}

/* A hull's point i with y as stored (sign +1) or negated (-1). */
static struct vms_hull_pt pt(const struct vms_hull_pt *p, uint32_t i, int sign)
{
	return (struct vms_hull_pt){ p[i].x, sign * p[i].y };
}

static struct frac slope(struct vms_hull_pt p, struct vms_hull_pt q)
{
	return (struct frac){ (s128)q.y - p.y, (s128)q.x - p.x };
}

/* Number of points of p[0..n) with x < bound (p sorted by x). */
static uint32_t count_left(const struct vms_hull_pt *p, uint32_t n, int64_t bound)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (p[mid].x < bound)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The point of the concave chain c[0..k) (sorted by x, all left of q) from which the slope
 * to q is smallest: the upper tangent from q, found by bisection since the slopes to q fall
 * and then rise along the chain (a tie means the points and q are collinear, with every
 * later point below that line: the minimum is reached at once). */
static uint32_t tangent(const struct vms_hull_pt *c, uint32_t k, int sign, struct vms_hull_pt q)
{
	uint32_t lo = 0, hi = k - 1;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (!frac_less(slope(pt(c, mid, sign), q), slope(pt(c, mid + 1, sign), q)))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* beta range at slope alpha: max_b (y_b - alpha x_b) <= beta <= min_a (y_a - alpha x_a) */
static void beta_range(const struct vms_hull *h, long double alpha, long double *lo, long double *hi)
{
	long double l = -1e300L, u = 1e300L;
	for (uint32_t i = 0; i < h->nup; i++) {
		long double v = -(long double)h->up[i].y - alpha * (long double)h->up[i].x;
		if (v > l)
			l = v;
	}
	for (uint32_t i = 0; i < h->nlo; i++) {
		long double v = (long double)h->lo[i].y - alpha * (long double)h->lo[i].x;
		if (v < u)
			u = v;
	}
	*lo = l;
	*hi = u;
}

/* The fit in the hull's own frame (x = machine a). A = h->lo (lower hull of the points above,
 * a convex chain), B = the upper hull of the points below (h->up holds it with y negated).
 *   alpha_max = min over a in A of the slope from the upper tangent of B left of a;
 *   alpha_min = max over b in B of the slope from the lower tangent of A left of b, i.e.
 *     minus the min slope to (b.x, -b.y) from A mirrored (a concave chain);
 * so O((|A| + |B|) log) whatever the hulls' sizes. */
static void solve_own(const struct vms_hull *h, struct vms_hull_fit *fit)
{
	if (h->nlo == 0 || h->nup == 0) {
		/* one direction only: a bound on the offset, no estimate (slope 1 through the
		 * tightest point, for information) */
		fit->quality = VMS_SYNC_Q_INCOMPLETE;
		long double lo, hi;
		beta_range(h, 1.0L, &lo, &hi);
		fit->beta = h->nlo ? hi : lo;
		return;
	}
	bool has_max = false, has_min = false, conflict = false;
	struct frac amax = { 0, 1 }, amin = { 0, 1 };
	struct vms_hull_pt pmax = { 0, 0 }, pmin = { 0, 0 }; /* a point on each line */
	for (uint32_t j = 0; j < h->nlo; j++) {
		struct vms_hull_pt a = h->lo[j];
		uint32_t k = count_left(h->up, h->nup, a.x);
		if (k < h->nup && h->up[k].x == a.x && -h->up[k].y > a.y)
			conflict = true; /* received before it was sent, at the same x */
		if (k == 0)
			continue;
		struct vms_hull_pt b = pt(h->up, tangent(h->up, k, -1, a), -1);
		struct frac sl = slope(b, a);
		if (!has_max || frac_less(sl, amax)) {
			amax = sl;
			pmax = b;
			has_max = true;
		}
	}
	for (uint32_t i = 0; i < h->nup; i++) {
		struct vms_hull_pt b = h->up[i]; /* mirrored: (x, -y) */
		uint32_t k = count_left(h->lo, h->nlo, b.x);
		if (k == 0)
			continue;
		struct vms_hull_pt a = h->lo[tangent(h->lo, k, -1, b)];
		struct frac sl = slope(a, pt(h->up, i, -1));
		if (!has_min || frac_less(amin, sl)) {
			amin = sl;
			pmin = a;
			has_min = true;
		}
	}
	if (has_max && has_min) {
		fit->alpha_max = frac_ld(amax);
		fit->alpha_min = frac_ld(amin);
		fit->beta_min = (long double)pmax.y - fit->alpha_max * (long double)pmax.x;
		fit->beta_max = (long double)pmin.y - fit->alpha_min * (long double)pmin.x;
		fit->alpha = (fit->alpha_max + fit->alpha_min) / 2;
		fit->beta = (fit->beta_min + fit->beta_max) / 2;
		fit->accuracy = fit->alpha_max - fit->alpha_min;
		fit->quality = !conflict && frac_less(amin, amax) ? VMS_SYNC_Q_ACCURATE : VMS_SYNC_Q_FAIL;
		return;
	}
	/* both directions, but one of the lines is not bounded yet (all the points of one
	 * direction lie on one side of the other's): slope 1 where that is feasible, else the
	 * nearest bound; the offset halfway between the hulls */
	long double alpha = 1.0L;
	if (has_min && frac_ld(amin) > alpha)
		alpha = frac_ld(amin);
	if (has_max && frac_ld(amax) < alpha)
		alpha = frac_ld(amax);
	fit->alpha = fit->alpha_max = fit->alpha_min = alpha;
	if (has_max)
		fit->alpha_max = frac_ld(amax);
	if (has_min)
		fit->alpha_min = frac_ld(amin);
	long double lo, hi;
	beta_range(h, alpha, &lo, &hi);
	fit->beta = (lo + hi) / 2;
	fit->beta_min = lo;
	fit->beta_max = hi;
	fit->quality = !conflict && lo <= hi ? VMS_SYNC_Q_APPROXIMATE : VMS_SYNC_Q_FAIL;
}

void vms_hull_solve(const struct vms_hull *h, bool swap, struct vms_hull_fit *fit)
{
	memset(fit, 0, sizeof *fit);
	fit->quality = VMS_SYNC_Q_ABSENT;
	fit->alpha = fit->alpha_max = fit->alpha_min = 1.0L;
	fit->x0 = h->x0;
	fit->y0 = h->y0;
	fit->pairs = h->above + h->below;
	fit->hull_above = h->nlo;
	fit->hull_below = h->nup;
	if (h->nlo + h->nup == 0)
		return;
	solve_own(h, fit);
	if (fit->quality != VMS_SYNC_Q_FAIL && fit->quality != VMS_SYNC_Q_INCOMPLETE) {
		beta_range(h, fit->alpha, &fit->beta_lo, &fit->beta_hi);
		fit->has_range = fit->beta_lo <= fit->beta_hi;
	}
	if (!swap)
		return;
	/* The other orientation (x = machine b): the same lines, y = alpha x + beta becoming
	 * x = y / alpha - beta / alpha. The steepest line becomes the flattest and back, the
	 * points above become the points below; only the bisector differs (it is not symmetric),
	 * so it is taken again from the swapped lines. */
	struct vms_hull_fit f = *fit;
	fit->x0 = f.y0;
	fit->y0 = f.x0;
	fit->hull_above = f.hull_below;
	fit->hull_below = f.hull_above;
	if (f.quality == VMS_SYNC_Q_INCOMPLETE) {
		fit->beta = -f.beta;
		return;
	}
	if (f.quality == VMS_SYNC_Q_ACCURATE || (f.quality == VMS_SYNC_Q_FAIL && f.accuracy != 0)) {
		fit->alpha_max = 1 / f.alpha_min;
		fit->beta_min = -f.beta_max / f.alpha_min;
		fit->alpha_min = 1 / f.alpha_max;
		fit->beta_max = -f.beta_min / f.alpha_max;
		fit->alpha = (fit->alpha_max + fit->alpha_min) / 2;
		fit->beta = (fit->beta_min + fit->beta_max) / 2;
		fit->accuracy = fit->alpha_max - fit->alpha_min;
	} else {
		/* approximate: the same slope, inverted, and the middle of the offsets */
		fit->alpha = fit->alpha_max = fit->alpha_min = 1 / f.alpha;
		fit->beta = -f.beta / f.alpha;
		fit->beta_min = -f.beta_max / f.alpha;
		fit->beta_max = -f.beta_min / f.alpha;
	}
	if (f.has_range) {
		/* beta in [lo, hi] at alpha  <=>  beta' = -beta / alpha at 1 / alpha */
		fit->beta_lo = -f.beta_hi / f.alpha;
		fit->beta_hi = -f.beta_lo / f.alpha;
		if (fit->alpha != 1 / f.alpha) {
			/* the bisector's slope differs in this frame: the range at that slope */
			long double lo = -1e300L, hi = 1e300L;
			for (uint32_t i = 0; i < h->nlo; i++) { /* now below: (y, x) */
				long double v = (long double)h->lo[i].x - fit->alpha * (long double)h->lo[i].y;
				if (v > lo)
					lo = v;
			}
			for (uint32_t i = 0; i < h->nup; i++) { /* now above */
				long double v = (long double)h->up[i].x + fit->alpha * (long double)h->up[i].y;
				if (v < hi)
					hi = v;
			}
			fit->beta_lo = lo;
			fit->beta_hi = hi;
			fit->has_range = lo <= hi;
		}
	}
}

int vms_hull_fit_linear(const struct vms_hull_fit *fit, struct vms_linear *l)
{
	if ((fit->quality != VMS_SYNC_Q_ACCURATE && fit->quality != VMS_SYNC_Q_APPROXIMATE) ||
	    !(fit->alpha > 0) || fit->x0 > (uint64_t)INT64_MAX)
		return -1;
	/* t_parent = x0 + (t - y0 - beta) / alpha: at t = y0 it is x0 - beta / alpha */
	return vms_linear_set_base(l, 1.0L / fit->alpha, fit->y0, (int64_t)fit->x0,
				   -fit->beta / fit->alpha);
}

void vms_hull_solve_slope(const struct vms_hull *h, bool swap, long double alpha,
			  struct vms_hull_fit *fit)
{
	memset(fit, 0, sizeof *fit);
	fit->quality = VMS_SYNC_Q_ABSENT;
	fit->alpha = fit->alpha_max = fit->alpha_min = alpha;
	fit->offset_only = true;
	fit->x0 = swap ? h->y0 : h->x0;
	fit->y0 = swap ? h->x0 : h->y0;
	fit->pairs = h->above + h->below;
	fit->hull_above = swap ? h->nup : h->nlo;
	fit->hull_below = swap ? h->nlo : h->nup;
	if (h->nlo + h->nup == 0)
		return;
	/* lo: the messages y -> x (below the line), hi: the messages x -> y (above); in the
	 * swapped frame a point (x, y) is (y, x) and the two directions trade places */
	long double lo = -1e300L, hi = 1e300L;
	for (uint32_t i = 0; i < h->nup; i++) { /* own below: (x, -up.y) */
		long double v = swap ? (long double)h->up[i].x + alpha * (long double)h->up[i].y
				     : -(long double)h->up[i].y - alpha * (long double)h->up[i].x;
		if (swap && v < hi)
			hi = v;
		else if (!swap && v > lo)
			lo = v;
	}
	for (uint32_t i = 0; i < h->nlo; i++) { /* own above */
		long double v = swap ? (long double)h->lo[i].x - alpha * (long double)h->lo[i].y
				     : (long double)h->lo[i].y - alpha * (long double)h->lo[i].x;
		if (swap && v > lo)
			lo = v;
		else if (!swap && v < hi)
			hi = v;
	}
	fit->beta_lo = fit->beta_min = lo;
	fit->beta_hi = fit->beta_max = hi;
	if (h->nlo == 0 || h->nup == 0) {
		fit->quality = VMS_SYNC_Q_INCOMPLETE; /* a bound on one side only */
		fit->beta = h->nlo ? (swap ? lo : hi) : (swap ? hi : lo);
		return;
	}
	fit->beta = (lo + hi) / 2;
	fit->has_range = lo <= hi;
	fit->quality = lo <= hi ? VMS_SYNC_Q_ACCURATE : VMS_SYNC_Q_FAIL;
}
