/* The generator's own PRNG: xoshiro256** seeded through splitmix64 (Blackman & Vigna), so that
 * a seed gives the same files on every machine and libc. */
#ifndef VMS_SYNTH_PRNG_H
#define VMS_SYNTH_PRNG_H

#include <stdint.h>

#define VMS_PRNG_LN_TABLE 256

struct vms_prng {
	uint64_t s[4];
	double ln1p[VMS_PRNG_LN_TABLE + 1]; /* ln(1 + i/256), for exponential draws */
};

static inline uint64_t vms_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ln(x) for x > 0 without libm: exponent + atanh series of the mantissa (relative error
 * below 1e-5, plenty for sampling). Plain IEEE arithmetic, so every machine draws the same
 * numbers, and several times cheaper than log(). */
static inline double vms_fast_ln(double x)
{
	union { double d; uint64_t u; } v = { x };
	int e = (int)((v.u >> 52) & 0x7ff) - 1023;
	v.u = (v.u & 0x000fffffffffffffull) | 0x3ff0000000000000ull; /* mantissa in [1, 2) */
	double m = v.d;
	if (m > 1.4142135623730951) { /* keep t small: m in [0.707, 1.414) */
		m *= 0.5;
		e++;
	}
	double t = (m - 1.0) / (m + 1.0), t2 = t * t;
	return e * 0.6931471805599453 +
	       2.0 * t * (1.0 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 + t2 / 9))));
}

static inline void vms_prng_seed(struct vms_prng *r, uint64_t seed)
{
	uint64_t x = seed;
	for (int i = 0; i < 4; i++)
		r->s[i] = vms_splitmix64(&x);
	for (int i = 0; i <= VMS_PRNG_LN_TABLE; i++)
		r->ln1p[i] = vms_fast_ln(1.0 + (double)i / VMS_PRNG_LN_TABLE);
}

static inline uint64_t vms_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t vms_prng_next(struct vms_prng *r)
{
	uint64_t *s = r->s;
	uint64_t result = vms_rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = vms_rotl(s[3], 45);
	return result;
}

/* Uniform in [0, 1) with 53 bits. */
static inline double vms_prng_unit(struct vms_prng *r)
{
	return (double)(vms_prng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n): the high half of a 64x64 product (Lemire), no division; the
 * bias is below n / 2^64. */
static inline uint64_t vms_prng_below(struct vms_prng *r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)vms_prng_next(r) * n) >> 64);
}

/* Exponential with the given mean (any unit): -mean * ln(u) for a uniform u = x / 2^64,
 * written u = 2^-(k+1) * (1 + f) with k the leading zeros of x, so that
 * -ln(u) = (k + 1) ln 2 - ln(1 + f), the last term from a table with linear interpolation
 * (error below 1e-5). No division and no libm on the generator's hottest path. */
static inline double vms_prng_exp(struct vms_prng *r, double mean)
{
	uint64_t x = vms_prng_next(r);
	if (!x)
		return mean * 44.3614195558365; /* ln 2^64 */
	int k = __builtin_clzll(x);
	uint64_t f = (x << k) << 1;     /* the bits after the leading one */
	double pos = (double)(f >> 11) * (VMS_PRNG_LN_TABLE / 9007199254740992.0);
	int i = (int)pos;
	double l = r->ln1p[i] + (r->ln1p[i + 1] - r->ln1p[i]) * (pos - i);
	return mean * ((k + 1) * 0.6931471805599453 - l);
}

#endif
