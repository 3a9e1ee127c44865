/* The clock transforms. Expected values come from KVM's definition of the guest TSC
 * (guest = ((host * ratio) >> frac) + tsc_offset, computed here on its own in 128 bits) and
 * from hand-computed TSC2NSEC conversions. */
#include "testutil.h"

#include "vmscope/clock.h"

typedef unsigned __int128 u128;

/* KVM's forward direction, written independently of lib/core/clock.c */
static uint64_t kvm_guest_tsc(uint64_t host, uint64_t ratio, unsigned frac, int64_t tsc_offset)
{
	u128 scaled = ((u128)host * ratio) >> frac;
	return (uint64_t)((__int128)scaled + tsc_offset);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static struct vms_timeshift *one_sample(int64_t offset, uint64_t scaling, uint64_t frac)
{
	static struct vms_timeshift ts;
	static struct vms_timeshift_cpu cpu;
	static uint64_t time0, sc;
	static int64_t off;
	static uint64_t fr;
	time0 = 0;
	off = offset;
	sc = scaling;
	fr = frac;
	cpu = (struct vms_timeshift_cpu){ 1, &time0, &off, &sc, &fr };
	ts = (struct vms_timeshift){ 0x1234, 0, 1, &cpu };
	return &ts;
}

/* Scaling 1: host = guest + offset (trace-cmd stores offset = -tsc_offset). */
static void test_unscaled(void **state)
{
	(void)state;
	struct vms_timeshift *ts = one_sample(-5000, 1, 0);
	assert_int_equal(vms_timeshift_to_host(ts, 0, 1000000), 995000);
	ts = one_sample(123456789, 1, 0);
	assert_int_equal(vms_timeshift_to_host(ts, 0, 1), 123456790);
}

/* With TSC scaling, the inverse of vm-analysis.md §8.1 recovers the host TSC from KVM's guest
 * TSC to within the rounding of one tick. */
static void test_scaled_roundtrip(void **state)
{
	(void)state;
	for (int i = 0; i < 20000; i++) {
		unsigned frac = 48;
		/* ratio between 0.5 and 2.0 in 48-bit fixed point */
		uint64_t ratio = (1ull << 47) + rnd() % (3ull << 47);
		int64_t tsc_offset = (int64_t)(rnd() % (1ull << 50)) - (1ll << 38); /* guest stays > 0 */
		uint64_t host = (1ull << 40) + rnd() % (1ull << 52);
		uint64_t guest = kvm_guest_tsc(host, ratio, frac, tsc_offset);
		struct vms_timeshift *ts = one_sample(-tsc_offset, ratio, frac);
		uint64_t back = vms_timeshift_to_host(ts, 0, guest);
		/* back is the largest h with h * ratio <= (guest - tsc_offset) << frac: the host
		 * counter's value for (most of) the guest tick */
		u128 target = (u128)(uint64_t)((__int128)guest - tsc_offset) << frac;
		assert_true((u128)back * ratio <= target);
		assert_true((u128)(back + 1) * ratio > target);
		/* and so within one guest tick of the host TSC the reading came from: host ticks per
		 * guest tick = 2^frac / ratio */
		uint64_t span = ((1ull << frac) + ratio - 1) / ratio;
		assert_true(back <= host + 1);
		assert_true(host <= back + span);
	}
}

/* The library's forward helper agrees with KVM's definition. */
static void test_forward_helper(void **state)
{
	(void)state;
	for (int i = 0; i < 1000; i++) {
		uint64_t ratio = (1ull << 47) + rnd() % (1ull << 48);
		int64_t tsc_offset = (int64_t)(rnd() % (1ull << 40));
		uint64_t host = rnd() % (1ull << 55);
		assert_int_equal(vms_timeshift_to_guest(-tsc_offset, ratio, 48, host),
				 kvm_guest_tsc(host, ratio, 48, tsc_offset));
	}
}

/* Sample selection: the sample in force, or the interpolation between two. */
static void test_samples(void **state)
{
	(void)state;
	uint64_t time[3] = { 1000, 2000, 3000 };
	int64_t off[3] = { 100, 200, 400 };
	uint64_t sc[3] = { 1, 1, 1 };
	uint64_t fr[3] = { 0, 0, 0 };
	struct vms_timeshift_cpu cpu = { 3, time, off, sc, fr };
	struct vms_timeshift ts = { 1, 0, 1, &cpu };
	assert_int_equal(vms_timeshift_to_host(&ts, 0, 500), 600);    /* before: first sample */
	assert_int_equal(vms_timeshift_to_host(&ts, 0, 1500), 1600);   /* sample 0 in force */
	assert_int_equal(vms_timeshift_to_host(&ts, 0, 2000), 2200);   /* sample 1 from its time */
	assert_int_equal(vms_timeshift_to_host(&ts, 0, 9000), 9400);   /* after: last sample */
	ts.flags = VMS_TIMESHIFT_INTERPOLATE;
	assert_int_equal(vms_timeshift_to_host(&ts, 0, 1500), 1650);   /* 100 + 500*100/1000 */
	assert_int_equal(vms_timeshift_to_host(&ts, 0, 2500), 2800);   /* 200 + 500*200/1000 */
	/* a CPU beyond the table uses CPU 0's samples */
	assert_int_equal(vms_timeshift_to_host(&ts, 0, 2500), vms_timeshift_to_host(&ts, 7, 2500));
}

/* TSC2NSEC as in the kvm-hip24 host: mult 735842807, shift 31 (about 2.918 GHz). */
static void test_tsc2nsec(void **state)
{
	(void)state;
	struct vms_trace_meta meta = { 0 };
	meta.has_tsc2nsec = true;
	meta.tsc_mult = 735842807;
	meta.tsc_shift = 31;
	struct vms_clock c;
	vms_clock_from_meta(&c, &meta, false, NULL);
	/* 2^31 cycles -> exactly mult ns */
	assert_int_equal(vms_clock_to_ref(&c, 0, 1ull << 31), 735842807);
	/* 1e12 cycles: floor(1e12 * 735842807 / 2^31) computed by hand with bc */
	assert_int_equal(vms_clock_to_ref(&c, 0, 1000000000000ull), 342653508763ull);
	/* a guest: TIME_SHIFT first, then the host's TSC2NSEC */
	struct vms_trace_meta g = { 0 };
	g.timeshift = one_sample(-(1ll << 31), 1, 0);
	g.has_tsc2nsec = true;
	g.tsc_mult = 1; /* the guest's own copy is not used when the host's is known */
	g.tsc_shift = 0;
	vms_clock_from_meta(&c, &g, true, &meta);
	assert_int_equal(vms_clock_to_ref(&c, 0, 2ull << 31), 735842807);
}

static void test_linear(void **state)
{
	(void)state;
	struct vms_clock c;
	vms_clock_init(&c);
	assert_int_equal(vms_clock_to_ref(&c, 0, 42), 42);
	c.linear = true;
	assert_int_equal(vms_linear_set_slope_offset(&c.lin, 1.0L + 1e-6L, -1000.0L), 0);
	/* 1e9 * (1 + 1e-6) - 1000 = 1000000000 */
	assert_int_equal(vms_clock_to_ref(&c, 0, 1000000000ull), 1000000000ull);
	assert_int_equal(vms_linear_set_slope_offset(&c.lin, 1.0L + 1e-6L, -5e9L), 0);
	assert_int_equal(vms_clock_to_ref(&c, 0, 1), 0); /* clamps at 0 */
	struct vms_trace_meta m = { 0 };
	m.offset_ns = 500;
	m.has_date = true;
	m.date_offset_ns = 1000;
	vms_clock_from_meta(&c, &m, false, NULL);
	assert_int_equal(vms_clock_to_ref(&c, 0, 1), 1501);
}

/* Issue 7.8: values at the ends of the 64-bit ranges, which overflowed 128-bit arithmetic (UB
 * under UBSan) before. Expected values by hand: */
static void test_extremes(void **state)
{
	(void)state;
	/* INTERPOLATE from INT64_MAX at t=0 to INT64_MIN at t=2^64-1 (the offset difference times
	 * the elapsed time is ~2^128): at t=2^64-2 the offset is INT64_MAX - (2^64-1) * (2^64-2) /
	 * (2^64-1) = 2^63-1 - 2^64+2 = -2^63+1, so host = 2^64-2 - 2^63+1 = 2^63-1 */
	uint64_t time[2] = { 0, UINT64_MAX };
	int64_t off[2] = { INT64_MAX, INT64_MIN };
	uint64_t sc[2] = { 1, 1 }, fr[2] = { 0, 0 };
	struct vms_timeshift_cpu cpu = { 2, time, off, sc, fr };
	struct vms_timeshift ts = { 1, VMS_TIMESHIFT_INTERPOLATE, 1, &cpu };
	assert_int_equal(vms_timeshift_to_host(&ts, 0, UINT64_MAX - 1), (uint64_t)INT64_MAX);
	/* samples out of order ({0, 4, 2}): at t=3 sample 0 is in force, interpolated towards
	 * sample 1 (4, 4000): offset 3000, host 3003 */
	uint64_t t2[3] = { 0, 4, 2 };
	int64_t o2[3] = { 0, 4000, INT64_MAX };
	uint64_t s2[3] = { 1, 1, 1 }, f2[3] = { 0, 0, 0 };
	struct vms_timeshift_cpu c2 = { 3, t2, o2, s2, f2 };
	struct vms_timeshift ts2 = { 1, VMS_TIMESHIFT_INTERPOLATE, 1, &c2 };
	uint64_t h = vms_timeshift_to_host(&ts2, 0, 3);   /* sample 0 or 1 in force: 3 + 3000 */
	assert_int_equal(h, 3003);
	/* OFFSET + DATE that do not fit in 64 bits saturate instead of overflowing */
	struct vms_trace_meta m = { 0 };
	m.offset_ns = INT64_MAX;
	m.has_date = true;
	m.date_offset_ns = INT64_MAX;
	struct vms_clock c;
	vms_clock_from_meta(&c, &m, false, NULL);
	assert_int_equal(vms_clock_to_ref(&c, 0, UINT64_MAX), UINT64_MAX);
	m.offset_ns = INT64_MIN;
	m.date_offset_ns = -1;
	vms_clock_from_meta(&c, &m, false, NULL);
	assert_int_equal(vms_clock_to_ref(&c, 0, 5), 0);
}

/* The merge's inline conversion equals vms_clock_to_ref wherever it does not defer to it:
 * epoch offsets of either sign (saturating at 0 and at 2^64 - 1), with and without TSC2NSEC;
 * the expected values are the 128-bit sums written here. */
static void test_fast_offset(void **state)
{
	(void)state;
	static const int64_t adds[] = {0, 1764547200000000000ll, -1764547200000000000ll, INT64_MAX,
				       INT64_MIN, -1, 1};
	static const uint64_t raws[] = {0, 1, 12345678901234567ull, UINT64_MAX / 2, UINT64_MAX - 1,
					UINT64_MAX};
	for (int tsc = 0; tsc < 2; tsc++)
		for (size_t i = 0; i < sizeof adds / sizeof adds[0]; i++)
			for (size_t j = 0; j < sizeof raws / sizeof raws[0]; j++) {
				struct vms_clock c;
				vms_clock_init(&c);
				c.add_ns = adds[i];
				c.tsc2nsec = tsc;
				c.mult = 3;
				c.shift = 1;
				c.tsc_offset = 7;
				uint64_t ns = raws[j];
				if (tsc)
					ns = (uint64_t)(((u128)(ns > 7 ? ns - 7 : 0) * 3) >> 1);
				__int128 want = (__int128)ns + adds[i];
				uint64_t w = want < 0 ? 0 : want > (__int128)UINT64_MAX ? UINT64_MAX
										 : (uint64_t)want;
				assert_int_equal(vms_clock_to_ref_fast(&c, 0, raws[j]), w);
				assert_int_equal(vms_clock_to_ref(&c, 0, raws[j]), w);
			}
}

/* The memo gives vms_clock_to_ref's answer whatever the order of the times asked: across
 * the samples' boundaries (each side of each), going back, another CPU (and one beyond the
 * table), samples out of order and INTERPOLATE (no memo: converted every time), with
 * TSC2NSEC, an offset and a nested hop after the shift. */
static void test_memo(void **state)
{
	(void)state;
	uint64_t time[3] = { 1000, 2000, 3000 }, sc[3] = { 3, 5, 7 }, fr[3] = { 2, 2, 3 };
	int64_t off[3] = { 100, -50, 400 };
	uint64_t t2[3] = { 0, 4000, 2000 }, s2[3] = { 1, 1, 1 }, f2[3] = { 0, 0, 0 };
	int64_t o2[3] = { 10, 20, 30 };
	struct vms_timeshift_cpu cpus[2] = { { 3, time, off, sc, fr }, { 3, t2, o2, s2, f2 } };
	struct vms_timeshift up_ts = { 1, 0, 1, &cpus[0] };
	static const uint64_t raws[] = { 0, 999, 1000, 1001, 1999, 2000, 2001, 2999, 3000,
					 3001, 2500, 1500, 500, 4000, 4001, UINT64_MAX - 1,
					 UINT64_MAX, 1000 };
	for (int variant = 0; variant < 4; variant++) {
		struct vms_timeshift ts = { 1, variant == 1 ? VMS_TIMESHIFT_INTERPOLATE : 0, 2, cpus };
		struct vms_clock c;
		vms_clock_init(&c);
		c.timeshift = &ts;
		if (variant >= 2) {
			c.tsc2nsec = true;
			c.mult = 3;
			c.shift = 1;
			c.tsc_offset = 7;
			c.add_ns = -20;
		}
		if (variant == 3) {
			c.up[0] = &up_ts;
			c.nr_up = 1;
		}
		/* CPU 9 (beyond the table: CPU 0's samples) before CPU 1 (out of order: no memo
		 * from then on) */
		static const uint32_t cpu_of[3] = { 0, 9, 1 };
		struct vms_clock_memo mm = { 0 };
		for (uint32_t k = 0; k < 3; k++)
			for (size_t j = 0; j < sizeof raws / sizeof raws[0]; j++)
				assert_int_equal(vms_clock_to_ref_memo(&c, cpu_of[k], raws[j], &mm),
						 vms_clock_to_ref(&c, cpu_of[k], raws[j]));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extremes),
		cmocka_unit_test(test_unscaled),
		cmocka_unit_test(test_scaled_roundtrip),
		cmocka_unit_test(test_forward_helper),
		cmocka_unit_test(test_samples),
		cmocka_unit_test(test_tsc2nsec),
		cmocka_unit_test(test_linear),
		cmocka_unit_test(test_fast_offset),
		cmocka_unit_test(test_memo),
	};
	return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
