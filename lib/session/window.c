/* Time bounds of the window (vmscope/filter.h): parsing, resolution, and the checks that
 * make a window that holds no time a usage error instead of a report of zeros. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmscope/error.h"
#include "vmscope/filter.h"

/* A number with an optional unit: ns = value * the unit's ns; false when s is not one, or
 * is negative or beyond 2^64 ns. `plain` is the ns of a number without a unit. */
static bool parse_with_unit(const char *s, double plain, uint64_t *ns)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0 || *s == '-' || *s == '+')
		return false;
	static const struct { const char *unit; double ns; } units[] = {
		{ "s", 1e9 }, { "ms", 1e6 }, { "us", 1e3 }, { "ns", 1 },
	};
	double mul = *end ? 0 : plain;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (!strcmp(end, units[i].unit))
			mul = units[i].ns;
	if (!mul || v * mul >= 1.8e19)
		return false;
	*ns = (uint64_t)llround(v * mul);
	return true;
}

int vms_time_bound_parse(const char *s, struct vms_time_bound *b)
{
	memset(b, 0, sizeof *b);
	if (!s || !*s)
		return -1;
	if (*s == '+') {   /* after the first event: seconds unless a unit says otherwise */
		if (!parse_with_unit(s + 1, 1e9, &b->ns))
			return -1;
		b->set = b->relative = b->timed = true;
		return 0;
	}
	/* absolute: an integer is ns (22149949585938) and kept exact; a number with a decimal
	 * point is seconds, as info and dump print times (22150.5) */
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!errno && end != s && *s != '-' && (!*end || !strcmp(end, "ns"))) {
		b->ns = v;
	} else if (parse_with_unit(s, strchr(s, '.') ? 1e9 : 0, &b->ns)) {
		b->timed = true;
	} else {
		return -1;
	}
	b->set = true;
	return 0;
}

uint64_t vms_time_bound_at(const struct vms_time_bound *b, uint64_t first)
{
	if (!b->relative)
		return b->ns;
	return first + b->ns < first ? UINT64_MAX : first + b->ns;
}

/* "22150.449586 s" (seconds as dump prints them, microseconds rounded), or "N cycles" for a
 * clock with no known rate (ticks are never shown as seconds). */
static const char *fmt_time(uint64_t t, bool cycles, char *buf, size_t len)
{
	if (cycles) {
		snprintf(buf, len, "%" PRIu64 " cycles", t);
	} else {
		uint64_t us = t / 1000u + (t % 1000u >= 500u);
		snprintf(buf, len, "%" PRIu64 ".%06" PRIu64 " s", us / 1000000u, us % 1000000u);
	}
	return buf;
}

int vms_window_resolve(const struct vms_time_bound *from, const struct vms_time_bound *to,
		       uint64_t first, bool cycles, uint64_t *lo, uint64_t *hi,
		       struct vms_error *err)
{
	char a[40], b[40];
	for (int i = 0; i < 2 && cycles; i++) {
		const struct vms_time_bound *x = i ? to : from;
		if (x->set && x->timed)
			return vms_error_set(err, VMS_ERR_USAGE, "%s is a time, but the times of these "
					     "traces are clock cycles of no known rate (no TSC2NSEC): "
					     "give it in cycles (an integer, as dump prints them), or "
					     "give the rate (--tsc-hz, --cpu-hz)", i ? "--to" : "--from");
	}
	*lo = from->set ? vms_time_bound_at(from, first) : 0;
	*hi = to->set ? vms_time_bound_at(to, first) : UINT64_MAX;
	if (from->set && to->set && *lo >= *hi)
		return vms_error_set(err, VMS_ERR_USAGE, "the window is empty: --from (%s) is not "
				     "before --to (%s)", fmt_time(*lo, cycles, a, sizeof a),
				     fmt_time(*hi, cycles, b, sizeof b));
	if (to->set && *hi <= first)
		return vms_error_set(err, VMS_ERR_USAGE, "the window is empty: --to (%s) is not after "
				     "the first event (%s)", fmt_time(*hi, cycles, a, sizeof a),
				     fmt_time(first, cycles, b, sizeof b));
	return 0;
}

int vms_window_check_end(const struct vms_time_bound *from, uint64_t lo, uint64_t last,
			 bool cycles, struct vms_error *err)
{
	char a[40], b[40];
	if (from->set && lo > last)
		return vms_error_set(err, VMS_ERR_USAGE, "the window is empty: --from (%s) is after "
				     "the last event (%s)", fmt_time(lo, cycles, a, sizeof a),
				     fmt_time(last, cycles, b, sizeof b));
	return 0;
}
