/* Prints exact linear transforms (vms_linear) and what vmscope computes with them, for
 * test_linear_exact.py to check against its own big-integer / rational arithmetic:
 *   L id in0 out0 num den frac              a transform
 *   S id slope_hex in0 value_hex            how it was built (vms_linear_set), long doubles
 *   C id outer_id inner_id                  built as outer o inner (vms_linear_compose)
 *   A id t applied                          vms_linear_apply(id, t) */
#include <inttypes.h>
#include <stdio.h>

#include "vmscope/clock.h"

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void print_l(int id, const struct vms_linear *l)
{
	printf("L %d %" PRIu64 " %" PRId64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", id, l->in0,
	       l->out0, l->num, l->den, l->frac);
}

/* timestamps over a day around in0, and the ends of the range */
static void apply_all(int id, const struct vms_linear *l, uint64_t *s)
{
	const uint64_t day = 86400000000000ull;
	for (int i = 0; i < 200; i++) {
		uint64_t t = l->in0 + rnd(s) % day;
		printf("A %d %" PRIu64 " %" PRIu64 "\n", id, t, vms_linear_apply(l, t));
	}
	uint64_t edges[] = { 0, 1, l->in0, l->in0 + day, UINT64_MAX, UINT64_MAX / 2 };
	for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
		printf("A %d %" PRIu64 " %" PRIu64 "\n", id, edges[i], vms_linear_apply(l, edges[i]));
}

int main(void)
{
	uint64_t s = 0x2545F4914F6CDD1Dull;
	struct vms_linear l[64];
	int n = 0;
	/* slopes near 1 (clock drift up to 100 ppm), epoch-sized and small origins, values with
	 * fractions; one slope far from 1 (a TSC at 2.5 GHz read as ns) */
	for (int i = 0; i < 24; i++) {
		long double slope = 1.0L + ((long double)(int64_t)(rnd(&s) % 200001) - 100000) * 1e-9L;
		if (i == 23)
			slope = 0.4L;
		uint64_t in0 = (i % 2) ? 1700000000000000000ull + rnd(&s) % 1000000000000ull
				       : rnd(&s) % 1000000000000ull;
		long double v = (long double)in0 + ((long double)(int64_t)(rnd(&s) % 2000000001) - 1000000000) +
				(long double)(rnd(&s) % 1000) / 1000.0L;
		if (vms_linear_set(&l[n], slope, in0, v) != 0)
			return 1;
		print_l(n, &l[n]);
		printf("S %d %La %" PRIu64 " %La\n", n, slope, in0, v);
		apply_all(n, &l[n], &s);
		n++;
	}
	/* compositions of pairs (outer o inner) whose ranges meet: inner maps to near outer.in0 */
	for (int i = 0; i + 1 < 24; i += 2) {
		struct vms_linear inner, c;
		long double slope = 1.0L + 37e-6L;
		if (vms_linear_set(&inner, slope, 123456789, (long double)l[i + 1].in0 + 0.25L) != 0)
			return 1;
		print_l(n, &inner);
		printf("S %d %La %" PRIu64 " %La\n", n, slope, (uint64_t)123456789, (long double)l[i + 1].in0 + 0.25L);
		apply_all(n, &inner, &s);
		int in_id = n++;
		if (vms_linear_compose(&c, &l[i + 1], &inner) != 0)
			return 1;
		print_l(n, &c);
		printf("C %d %d %d\n", n, i + 1, in_id);
		apply_all(n, &c, &s);
		n++;
	}
	return 0;
}
