/* Clock sync from matched events (vmscope/sync.h): the matcher and the hulls alone, on
 * simulated TCP traffic between two machines (clock drift 20 ppm, offset -o NS (default
 * 5 ms, NTP-like; the matcher's bound needs rate x offset < 131072 waiting events), latencies
 * 20-200 us, each message's two events in own-time order as the model pass reads them, with
 * 1 % of them lost on the way). Prints events per second, pairs, hull sizes and the time of
 * the final fit, median of the runs. No peer: Trace Compass's implementation is Java.
 * usage: bench_sync [-n MESSAGES] [-r RUNS] [-o OFFSET_NS] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vmscope/sync.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* CPU time: the machine is shared */
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct ev {
	uint64_t t, seq;     /* t: own ns of its machine; the merge order is by t */
	uint32_t machine;
	uint16_t kind;
};

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	uint64_t n = 5000000, off = 5000000;
	int runs = 5, o;
	while ((o = getopt(argc, argv, "n:r:o:")) != -1) {
		if (o == 'n')
			n = strtoull(optarg, NULL, 0);
		else if (o == 'o')
			off = strtoull(optarg, NULL, 0);
		else if (o == 'r')
			runs = atoi(optarg);
		else
			return 2;
	}
	struct ev *e = malloc(2 * n * sizeof *e);
	if (!e)
		return 1;
	uint64_t s = 12345, m = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t = 1700000000000000000ull + i * 2000 + rnd(&s) % 1000; /* 500 k msg/s */
		uint64_t lat = 20000 + rnd(&s) % 180000;
		int dir = rnd(&s) & 1;
		uint32_t a = dir, b = !dir;
		/* machine 1's clock: t * (1 + 20e-6) + off (the drift counted from the start) */
		uint64_t t0 = 1700000000000000000ull;
		uint64_t ta = a ? t + (t - t0) / 50000 + off : t;
		uint64_t tb = b ? (t + lat) + (t + lat - t0) / 50000 + off : t + lat;
		e[m++] = (struct ev){ ta, i, a, VMS_K_NET_SEND };
		if (rnd(&s) % 100)
			e[m++] = (struct ev){ tb, i, b, VMS_K_NET_RECV };
	}
	qsort(e, m, sizeof *e, cmp_ev);
	double *rate = calloc((size_t)runs, sizeof *rate), *solve = calloc((size_t)runs, sizeof *solve);
	struct vms_hull_fit fit;
	uint64_t pairs = 0, expired = 0;
	for (int r = 0; r < runs; r++) {
		struct vms_sync_set *set = vms_sync_set_new(2, VMS_MATCH_DEFAULT_CAP);
		double t0 = now();
		struct vms_sync_pair p;
		for (uint64_t i = 0; i < m; i++) {
			uint64_t f[3] = { e[i].seq, e[i].seq * 7, 0x18 };
			vms_sync_set_event(set, e[i].machine, (enum vms_kind)e[i].kind, f, e[i].t, &p);
		}
		double t1 = now();
		vms_hull_solve(vms_sync_set_hull(set, 0, 1), false, &fit);
		double t2 = now();
		rate[r] = (double)m / (t1 - t0);
		solve[r] = t2 - t1;
		pairs = vms_sync_set_stats(set)->matched;
		expired = vms_sync_set_stats(set)->expired;
		vms_sync_set_free(set);
	}
	qsort(rate, (size_t)runs, sizeof *rate, cmp_d);
	qsort(solve, (size_t)runs, sizeof *solve, cmp_d);
	printf("offset %llu ns, events %llu, pairs %llu, expired %llu, quality %s, hulls %u/%u points\n",
	       (unsigned long long)off, (unsigned long long)m, (unsigned long long)pairs, (unsigned long long)expired,
	       vms_sync_quality_name(fit.quality), fit.hull_above, fit.hull_below);
	printf("matching + hulls: %.1f M events per CPU second (median of %d); final fit %.3f ms CPU\n",
	       rate[runs / 2] / 1e6, runs, solve[runs / 2] * 1e3);
	free(rate);
	free(solve);
	free(e);
	return 0;
}
