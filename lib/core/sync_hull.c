/* The convex hulls of one pair of machines and the lines that separate them (vmscope/sync.h).
 *
 * Points arrive in any order of x (a message is matched when its later event is read, and a
 * long-delayed message comes after shorter ones sent later), so each hull is a sorted array
 * into which a point is inserted where its x belongs, after which the neighbours it makes
 * non-convex are removed. Only the lower hull of the points above the line and the upper hull
 * of the points below can support a separating line, so everything else is dropped at once:
 * the hulls stay small (a few tens of points for the scp traces) while the pairs grow.
 *
 * The separating lines are found exactly. A line y = alpha x + beta separates the two sets iff
 * for every point b below and a above, alpha (x_a - x_b) <= y_a - y_b. So the feasible slopes
 * are [alpha_min, alpha_max] with
 *   alpha_max = min over (b, a), x_b < x_a, of slope(b, a)   (the steepest line, Lmax)
 *   alpha_min = max over (a, b), x_a < x_b, of slope(a, b)   (the flattest line, Lmin)
 * and a pair with x_a = x_b, y_b > y_a makes it empty. The extremes are attained on the hulls;
 * slopes are compared as fractions with 128-bit cross products. The quadratic scan over the
 * two hulls is cheap at their sizes. */
#include <stdlib.h>
#include <string.h>

#include "vmscope/sync.h"

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

/* Insert q into the lower hull p[0..n) (sorted by x, every turn counter-clockwise). */
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
	if (*n == *cap) {
		uint32_t ncap = *cap ? *cap * 2 : 16;
		struct vms_hull_pt *np = realloc(p, (size_t)ncap * sizeof *np);
		if (!np)
			return -1;
		*pp = p = np;
		*cap = ncap;
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

/* The points of the chosen frame: A above the line, B below, in real (not mirrored) y. */
struct frame {
	struct vms_hull_pt *a, *b;
	uint32_t na, nb;
};

static int frame_make(const struct vms_hull *h, bool swap, struct frame *f)
{
	f->na = swap ? h->nup : h->nlo;
	f->nb = swap ? h->nlo : h->nup;
	f->a = malloc(((size_t)f->na + 1) * sizeof *f->a);
	f->b = malloc(((size_t)f->nb + 1) * sizeof *f->b);
	if (!f->a || !f->b) {
		free(f->a);
		free(f->b);
		return -1;
	}
	/* swapping the axes turns the points above into points below and back */
	for (uint32_t i = 0; i < h->nlo; i++) {
		struct vms_hull_pt p = h->lo[i];
		if (swap)
			f->b[i] = (struct vms_hull_pt){ p.y, p.x };
		else
			f->a[i] = p;
	}
	for (uint32_t i = 0; i < h->nup; i++) {
		struct vms_hull_pt p = { h->up[i].x, -h->up[i].y };
		if (swap)
			f->a[i] = (struct vms_hull_pt){ p.y, p.x };
		else
			f->b[i] = p;
	}
	return 0;
}

/* beta range at slope alpha: max_b (y_b - alpha x_b) <= beta <= min_a (y_a - alpha x_a) */
static void beta_range(const struct frame *f, long double alpha, long double *lo, long double *hi)
{
	long double l = -1e300L, u = 1e300L;
	for (uint32_t i = 0; i < f->nb; i++) {
		long double v = (long double)f->b[i].y - alpha * (long double)f->b[i].x;
		if (v > l)
			l = v;
	}
	for (uint32_t i = 0; i < f->na; i++) {
		long double v = (long double)f->a[i].y - alpha * (long double)f->a[i].x;
		if (v < u)
			u = v;
	}
	*lo = l;
	*hi = u;
}

void vms_hull_solve(const struct vms_hull *h, bool swap, struct vms_hull_fit *fit)
{
	memset(fit, 0, sizeof *fit);
	fit->quality = VMS_SYNC_Q_ABSENT;
	fit->alpha = fit->alpha_max = fit->alpha_min = 1.0L;
	fit->x0 = swap ? h->y0 : h->x0;
	fit->y0 = swap ? h->x0 : h->y0;
	fit->pairs = h->above + h->below;
	fit->hull_above = swap ? h->nup : h->nlo;
	fit->hull_below = swap ? h->nlo : h->nup;
	struct frame f;
	if (fit->pairs == 0 || frame_make(h, swap, &f) < 0)
		return;
	if (f.na == 0 || f.nb == 0) {
		/* one direction only: a bound on the offset, no estimate (slope 1 through the
		 * tightest point, for information) */
		fit->quality = VMS_SYNC_Q_INCOMPLETE;
		long double lo, hi;
		beta_range(&f, 1.0L, &lo, &hi);
		fit->beta = f.na ? hi : lo;
		goto out;
	}
	bool has_max = false, has_min = false, conflict = false;
	struct frac amax = { 0, 1 }, amin = { 0, 1 };
	uint32_t bmax_b = 0, bmin_a = 0; /* a point on each line */
	for (uint32_t i = 0; i < f.nb; i++) {
		struct vms_hull_pt b = f.b[i];
		for (uint32_t j = 0; j < f.na; j++) {
			struct vms_hull_pt a = f.a[j];
			if (b.x < a.x) {
				struct frac s = { (s128)a.y - b.y, (s128)a.x - b.x };
				if (!has_max || frac_less(s, amax)) {
					amax = s;
					bmax_b = i;
					has_max = true;
				}
			} else if (a.x < b.x) {
				struct frac s = { (s128)b.y - a.y, (s128)b.x - a.x };
				if (!has_min || frac_less(amin, s)) {
					amin = s;
					bmin_a = j;
					has_min = true;
				}
			} else if (b.y > a.y) {
				conflict = true;
			}
		}
	}
	if (has_max && has_min) {
		fit->alpha_max = frac_ld(amax);
		fit->alpha_min = frac_ld(amin);
		fit->beta_min = (long double)f.b[bmax_b].y - fit->alpha_max * (long double)f.b[bmax_b].x;
		fit->beta_max = (long double)f.a[bmin_a].y - fit->alpha_min * (long double)f.a[bmin_a].x;
		fit->alpha = (fit->alpha_max + fit->alpha_min) / 2;
		fit->beta = (fit->beta_min + fit->beta_max) / 2;
		fit->accuracy = fit->alpha_max - fit->alpha_min;
		fit->quality = !conflict && frac_less(amin, amax) ? VMS_SYNC_Q_ACCURATE : VMS_SYNC_Q_FAIL;
	} else {
		/* both directions, but one of the lines is not bounded yet (all the points of one
		 * direction lie on one side of the other's): slope 1 where that is feasible, else
		 * the nearest bound; the offset halfway between the hulls */
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
		beta_range(&f, alpha, &lo, &hi);
		fit->beta = (lo + hi) / 2;
		fit->beta_min = lo;
		fit->beta_max = hi;
		fit->quality = !conflict && lo <= hi ? VMS_SYNC_Q_APPROXIMATE : VMS_SYNC_Q_FAIL;
	}
	if (fit->quality != VMS_SYNC_Q_FAIL) {
		beta_range(&f, fit->alpha, &fit->beta_lo, &fit->beta_hi);
		fit->has_range = fit->beta_lo <= fit->beta_hi;
	}
out:
	free(f.a);
	free(f.b);
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
