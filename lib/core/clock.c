/* Clock transforms: raw timestamps of a machine -> reference nanoseconds.
 *
 * trace-cmd's own correction applies TIME_SHIFT as ((ts * scaling) >> frac) + offset, which is
 * exact only when scaling is 1. KVM defines guest_tsc = ((host_tsc * ratio) >> frac) +
 * tsc_offset, and trace-cmd stores offset = -tsc_offset, so the inverse (vm-analysis.md §8.1) is
 *   host_tsc = ((guest_tsc + offset) << frac) / ratio
 * in 128-bit integers, rounding down: of the host TSC values a guest reading can stand for, the
 * one the host's counter showed for most of that guest tick. (It is the largest h with
 * ((h * ratio) >> frac) + tsc_offset <= guest_tsc in the continuous sense, h * ratio <=
 * (guest_tsc - tsc_offset) << frac.) */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vmscope/clock.h"

typedef unsigned __int128 u128;
typedef __int128 s128;

void vms_linear_identity(struct vms_linear *l)
{
	*l = (struct vms_linear){ .in0 = 0, .out0 = 0, .num = 1, .den = 1, .frac = 0 };
}

/* floor(n / d) for d > 0 (C division truncates toward zero) */
static s128 floor_div(s128 n, s128 d)
{
	s128 q = n / d;
	if (n % d != 0 && n < 0)
		q--;
	return q;
}

/* The map with R(in0) = base + fraction, base an integer, fraction a long double. */
static int linear_set_split(struct vms_linear *l, long double slope, uint64_t in0, s128 base,
			    long double fraction)
{
	if (!(slope > 0) || !isfinite(slope) || slope >= 0x1p62L || !isfinite(fraction))
		return -1;
	/* den = 2^k, the largest k <= 62 with num = slope * 2^k < 2^63 */
	int k = 62;
	while (k > 0 && slope * ldexpl(1.0L, k) >= 0x1p63L)
		k--;
	long double scaled = roundl(slope * ldexpl(1.0L, k));
	if (scaled < 1.0L)
		scaled = 1.0L; /* slopes below 2^-63: the smallest representable */
	uint64_t den = 1ull << k;
	long double fl = floorl(fraction);
	base += (s128)fl;
	long double fr = roundl((fraction - fl) * (long double)den);
	uint64_t frac = (uint64_t)fr;
	if (frac >= den) {
		frac -= den;
		base++;
	}
	if (base < INT64_MIN || base > INT64_MAX)
		return -1;
	l->in0 = in0;
	l->out0 = (int64_t)base;
	l->num = (uint64_t)scaled;
	l->den = den;
	l->frac = frac;
	return 0;
}

int vms_linear_set(struct vms_linear *l, long double slope, uint64_t in0, long double out_at_in0)
{
	if (!isfinite(out_at_in0) || out_at_in0 >= 0x1p63L || out_at_in0 < -0x1p63L)
		return -1;
	long double b = floorl(out_at_in0);
	return linear_set_split(l, slope, in0, (s128)b, out_at_in0 - b);
}

int vms_linear_set_base(struct vms_linear *l, long double slope, uint64_t in0, int64_t base,
			long double delta)
{
	return linear_set_split(l, slope, in0, (s128)base, delta);
}

int vms_linear_set_slope_offset(struct vms_linear *l, long double slope, long double offset)
{
	return vms_linear_set(l, slope, 0, offset);
}

uint64_t vms_linear_apply(const struct vms_linear *l, uint64_t t)
{
	s128 d = (s128)t - (s128)l->in0;  /* |d| < 2^64, num < 2^63: the product fits */
	s128 n = d * (s128)l->num + (s128)l->frac + (s128)(l->den / 2);
	s128 r = (s128)l->out0 + floor_div(n, (s128)l->den);
	if (r < 0)
		return 0;
	if (r > (s128)UINT64_MAX)
		return UINT64_MAX;
	return (uint64_t)r;
}

long double vms_linear_slope(const struct vms_linear *l)
{
	return (long double)l->num / (long double)l->den;
}

long double vms_linear_eval(const struct vms_linear *l, long double t)
{
	return (long double)l->out0 + (long double)l->frac / (long double)l->den +
	       vms_linear_slope(l) * (t - (long double)l->in0);
}

long double vms_linear_offset(const struct vms_linear *l)
{
	return vms_linear_eval(l, 0.0L);
}

int vms_linear_compose(struct vms_linear *out, const struct vms_linear *outer,
		       const struct vms_linear *inner)
{
	/* outer(R_inner(in0)) with R_inner(in0) = inner.out0 + inner.frac / inner.den: the
	 * integer parts in 128-bit integers, only the fractions in long double */
	s128 d = (s128)inner->out0 - (s128)outer->in0;
	if (d >= ((s128)1 << 64) || d <= -((s128)1 << 64))
		return -1;
	s128 p = d * (s128)outer->num + (s128)outer->frac;
	s128 q = floor_div(p, (s128)outer->den);
	s128 rem = p - q * (s128)outer->den;
	long double fraction = ((long double)rem + (long double)inner->frac /
				(long double)inner->den * (long double)outer->num) /
			       (long double)outer->den;
	struct vms_linear r;
	if (linear_set_split(&r, vms_linear_slope(outer) * vms_linear_slope(inner), inner->in0,
			     (s128)outer->out0 + q, fraction) < 0)
		return -1;
	*out = r;
	return 0;
}

void vms_clock_init(struct vms_clock *c)
{
	memset(c, 0, sizeof *c);
	vms_linear_identity(&c->lin);
}

void vms_clock_from_meta(struct vms_clock *c, const struct vms_trace_meta *meta,
			 bool apply_timeshift, const struct vms_trace_meta *host_meta)
{
	vms_clock_init(c);
	/* The guest's timestamps become host TSC after the shift, so the host's TSC2NSEC is the
	 * one that applies to them; the guest's own copy is used only without a host. */
	const struct vms_trace_meta *ns_meta = meta;
	if (apply_timeshift && meta->timeshift) {
		c->timeshift = meta->timeshift;
		if (host_meta && host_meta->has_tsc2nsec)
			ns_meta = host_meta;
	}
	if (ns_meta->has_tsc2nsec && ns_meta->tsc_mult != 0 && ns_meta->tsc_shift < 64) {
		c->tsc2nsec = true;
		c->mult = ns_meta->tsc_mult;
		c->shift = ns_meta->tsc_shift;
		c->tsc_offset = ns_meta->tsc_offset;
	}
	/* readers refuse an OFFSET + DATE that does not fit (tracedat_open.c); saturate for any
	 * other source of meta rather than overflow */
	if (__builtin_add_overflow(meta->offset_ns, meta->has_date ? meta->date_offset_ns : 0,
				   &c->add_ns))
		c->add_ns = meta->offset_ns < 0 ? INT64_MIN : INT64_MAX;
}

uint64_t vms_timeshift_to_guest(int64_t offset, uint64_t scaling, uint64_t frac,
				uint64_t host_tsc)
{
	if (scaling == 0)
		scaling = 1;
	if (frac > 127)
		frac = 127;
	u128 scaled = ((u128)host_tsc * scaling) >> frac;
	s128 g = (s128)scaled - (s128)offset;  /* + tsc_offset, tsc_offset = -offset */
	if (g < 0)
		return 0;
	if (g > (s128)UINT64_MAX)
		return UINT64_MAX;
	return (uint64_t)g;
}

/* Exact inverse of one sample, saturating at the ends of the u64 range. */
static uint64_t inverse(uint64_t guest, int64_t offset, uint64_t scaling, uint64_t frac)
{
	if (scaling == 0)
		scaling = 1;
	s128 shifted = (s128)guest + offset;
	if (shifted <= 0)
		return 0;
	if (frac == 0 && scaling == 1)
		return shifted > (s128)UINT64_MAX ? UINT64_MAX : (uint64_t)shifted;
	if (frac > 63)
		frac = 63; /* (2^64 << 63) still fits in 128 bits */
	u128 num = (u128)shifted << frac;
	u128 h = num / scaling;
	return h > (u128)UINT64_MAX ? UINT64_MAX : (uint64_t)h;
}

/* d * num / den, rounded toward zero like C's division, for num <= den (samples out of order
 * in a hostile file give num > den: no extrapolation past the next sample): |d| < 2^65 and
 * num < 2^64, so d * num itself may not fit in 128 bits; split d = q * den + r instead. */
static s128 scale_between(s128 d, uint64_t num, uint64_t den)
{
	if (num > den)
		num = den;
	u128 a = d < 0 ? (u128)0 - (u128)d : (u128)d;
	u128 q = a / den, r = a % den;
	u128 v = q * num + r * num / den;   /* q * num < 2^65, r * num < 2^128 */
	return d < 0 ? -(s128)v : (s128)v;
}

/* The sample in force at tsc: the last whose time is <= tsc, the first when none is (c->n
 * > 0) */
static uint32_t sample_at(const struct vms_timeshift_cpu *c, uint64_t tsc)
{
	if (c->n <= 1 || tsc <= c->time[0])
		return 0;
	uint32_t lo = 0, hi = c->n - 1;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		if (c->time[mid] <= tsc)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

uint64_t vms_timeshift_to_host(const struct vms_timeshift *ts, uint32_t cpu, uint64_t tsc)
{
	if (!ts || ts->nr_cpus == 0)
		return tsc;
	if (cpu >= ts->nr_cpus)
		cpu = 0;
	const struct vms_timeshift_cpu *c = &ts->cpu[cpu];
	if (c->n == 0)
		return tsc;
	uint32_t i = sample_at(c, tsc);
	uint64_t frac = c->frac ? c->frac[i] : 0;
	if ((ts->flags & VMS_TIMESHIFT_INTERPOLATE) && i + 1 < c->n && tsc > c->time[i] &&
	    c->time[i + 1] > c->time[i]) {
		/* offset interpolated linearly between the two samples around tsc (trace-cmd's
		 * INTERPOLATE); scaling from the earlier sample */
		s128 d_off = (s128)c->offset[i + 1] - c->offset[i];
		s128 off = c->offset[i] + scale_between(d_off, tsc - c->time[i],
							c->time[i + 1] - c->time[i]);
		if (off > INT64_MAX)
			off = INT64_MAX;
		if (off < INT64_MIN)
			off = INT64_MIN;
		return inverse(tsc, (int64_t)off, c->scaling[i], frac);
	}
	return inverse(tsc, c->offset[i], c->scaling[i], frac);
}

/* The stages after the TIME_SHIFT of the guest itself: its hosts' hops, TSC2NSEC, OFFSET/DATE
 * (inline: the memo's path below shares it with vms_clock_to_ns) */
static inline uint64_t after_shift(const struct vms_clock *c, uint64_t t)
{
	for (uint32_t i = 0; i < c->nr_up && i < VMS_CLOCK_MAX_HOPS; i++)
		t = vms_timeshift_to_host(c->up[i], 0, t);
	if (c->tsc2nsec) {
		t = t > c->tsc_offset ? t - c->tsc_offset : 0;
		t = (uint64_t)(((u128)t * c->mult) >> c->shift);
	}
	if (c->add_ns) {
		s128 s = (s128)t + c->add_ns;
		t = s < 0 ? 0 : s > (s128)UINT64_MAX ? UINT64_MAX : (uint64_t)s;
	}
	return t;
}

uint64_t vms_clock_to_ns(const struct vms_clock *c, uint32_t cpu, uint64_t raw)
{
	uint64_t t = raw;
	if (c->timeshift)
		t = vms_timeshift_to_host(c->timeshift, cpu, t);
	return after_shift(c, t);
}

uint64_t vms_clock_to_ref(const struct vms_clock *c, uint32_t cpu, uint64_t raw)
{
	uint64_t t = vms_clock_to_ns(c, cpu, raw);
	return c->linear ? vms_linear_apply(&c->lin, t) : t;
}

/* The sample vms_timeshift_to_host takes for raw on cpu, and the raw times [lo, hi) for which
 * it takes that one too: when the CPU's sample times rise strictly (else its search could
 * pick another for a time in between) and without INTERPOLATE (the offset moves between
 * samples). false: no memo for this clock (mm->off). */
static bool memo_fill(const struct vms_timeshift *ts, uint32_t cpu, uint64_t raw,
		      struct vms_clock_memo *mm)
{
	if (ts->nr_cpus == 0 || (ts->flags & VMS_TIMESHIFT_INTERPOLATE))
		return false;
	const struct vms_timeshift_cpu *c = &ts->cpu[cpu >= ts->nr_cpus ? 0 : cpu];
	if (c->n == 0)
		return false;
	if (mm->sorted != cpu + 1)   /* (checked once per CPU, not at every sample) */
		for (uint32_t k = 1; k < c->n; k++)
			if (c->time[k] <= c->time[k - 1])
				return false;
	uint32_t i = sample_at(c, raw);
	*mm = (struct vms_clock_memo){
		.lo = i == 0 ? 0 : c->time[i], .hi = i + 1 < c->n ? c->time[i + 1] : UINT64_MAX,
		.cpu = cpu, .sorted = cpu + 1, .offset = c->offset[i], .scaling = c->scaling[i],
		.frac = c->frac ? c->frac[i] : 0,
	};
	return true;
}

uint64_t vms_clock_to_ref_memo(const struct vms_clock *c, uint32_t cpu, uint64_t raw,
			       struct vms_clock_memo *mm)
{
	if (!c->timeshift || mm->off)
		return vms_clock_to_ref(c, cpu, raw);
	if (__builtin_expect(!(mm->hi && cpu == mm->cpu && raw >= mm->lo && raw < mm->hi), 0) &&
	    !memo_fill(c->timeshift, cpu, raw, mm)) {
		mm->off = true;
		return vms_clock_to_ref(c, cpu, raw);
	}
	uint64_t t = after_shift(c, inverse(raw, mm->offset, mm->scaling, mm->frac));
	return c->linear ? vms_linear_apply(&c->lin, t) : t;
}

const char *vms_fmt_cycles(uint64_t c, char *buf, size_t len)
{
	if (c < 10000)
		snprintf(buf, len, "%llu cycles", (unsigned long long)c);
	else if (c < 10000000)
		snprintf(buf, len, "%.2f k cycles", (double)c / 1e3);
	else if (c < 10000000000ull)
		snprintf(buf, len, "%.2f M cycles", (double)c / 1e6);
	else
		snprintf(buf, len, "%.3f G cycles", (double)c / 1e9);
	return buf;
}
