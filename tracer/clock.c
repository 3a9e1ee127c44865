/* The trace clock: the TSC when the CPU says it is invariant (constant rate, runs in every
 * C-state, synchronized by the kernel across CPUs), else CLOCK_MONOTONIC through the vDSO.
 * The TSC frequency is calibrated against CLOCK_MONOTONIC_RAW at start-up (10 ms), which the
 * CTF clock description then carries with the offset to the real-time clock. */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "internal.h"

int vmst__clock_is_tsc;
struct vmst_clockinfo vmst__clockinfo;

static bool invariant_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return false;
	__cpuid(0x80000007u, a, b, c, d);
	return (d >> 8) & 1;
#else
	return false;
#endif
}

static uint64_t ns_of(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t vmst__now_slow(void)
{
	return ns_of(CLOCK_MONOTONIC);
}

uint16_t vmst__cpu_slow(void)
{
	int c = sched_getcpu();
	return c < 0 ? UINT16_MAX : (uint16_t)c;
}

#if defined(__x86_64__) || defined(__i386__)
static uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* One (tsc, clock) pair: the TSC read between two clock reads, best of a few tries. */
static void pair(clockid_t id, uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 16; i++) {
		uint64_t a = ns_of(id), t = rdtsc(), b = ns_of(id);
		if (b - a < best) {
			best = b - a;
			*tsc = t;
			*ns = a + (b - a) / 2;
		}
	}
}
#endif

void vmst_clock_setup(int mode, struct vmst_clockinfo *ci)
{
	memset(ci, 0, sizeof *ci);
	bool inv = invariant_tsc();
	ci->tsc = mode == 1 || (mode == -1 && inv);
#if !defined(__x86_64__) && !defined(__i386__)
	ci->tsc = false;
#endif
	uint64_t value0 = 0, real0 = 0;
	if (ci->tsc) {
#if defined(__x86_64__) || defined(__i386__)
		uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0;
		pair(CLOCK_MONOTONIC_RAW, &t0, &n0);
		struct timespec d = {0, 10 * 1000 * 1000};
		nanosleep(&d, NULL);
		pair(CLOCK_MONOTONIC_RAW, &t1, &n1);
		ci->freq = (uint64_t)((double)(t1 - t0) * 1e9 / (double)(n1 - n0) + 0.5);
		pair(CLOCK_REALTIME, &value0, &real0);
		snprintf(ci->description, sizeof ci->description,
			 "x86 TSC%s, %.6f GHz calibrated against CLOCK_MONOTONIC_RAW",
			 inv ? " (invariant)" : " (NOT invariant: forced by clock=tsc)",
			 (double)ci->freq / 1e9);
#endif
	} else {
		ci->freq = 1000000000u;
		uint64_t best = UINT64_MAX;
		for (int i = 0; i < 16; i++) {
			uint64_t a = ns_of(CLOCK_MONOTONIC), r = ns_of(CLOCK_REALTIME),
				 b = ns_of(CLOCK_MONOTONIC);
			if (b - a < best) {
				best = b - a;
				value0 = a + (b - a) / 2;
				real0 = r;
			}
		}
		snprintf(ci->description, sizeof ci->description,
			 "CLOCK_MONOTONIC in nanoseconds%s",
			 inv ? "" : " (no invariant TSC)");
	}
	/* realtime at clock value 0, as seconds + cycles below one second */
	double v0_ns = (double)value0 * 1e9 / (double)ci->freq;
	int64_t origin_ns = (int64_t)real0 - (int64_t)v0_ns;
	ci->offset_s = origin_ns / 1000000000;
	int64_t rem = origin_ns % 1000000000;
	if (rem < 0) {
		rem += 1000000000;
		ci->offset_s--;
	}
	ci->offset = (uint64_t)((double)rem * (double)ci->freq / 1e9);
	if (ci->offset >= ci->freq)
		ci->offset = ci->freq - 1;
	__atomic_store_n(&vmst__clock_is_tsc, ci->tsc ? 1 : 0, __ATOMIC_RELEASE);
}

const char *vmst_clock_name(void)
{
	return vmst__clockinfo.tsc ? "tsc" : "monotonic";
}

uint64_t vmst_clock_freq(void)
{
	return vmst__clockinfo.freq;
}
