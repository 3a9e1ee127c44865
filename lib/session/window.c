/* Time bounds of the window (vmscope/filter.h): parsing and resolution. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vmscope/filter.h"

int vms_time_bound_parse(const char *s, struct vms_time_bound *b)
{
	memset(b, 0, sizeof *b);
	if (!s || !*s)
		return -1;
	if (*s != '+') {   /* absolute: integer ns */
		char *end;
		errno = 0;
		unsigned long long v = strtoull(s, &end, 10);
		if (errno || end == s || *s == '-' || (*end && strcmp(end, "ns")))
			return -1;
		b->set = true;
		b->ns = v;
		return 0;
	}
	char *end;
	errno = 0;
	double v = strtod(s + 1, &end);
	if (errno || end == s + 1 || !isfinite(v) || v < 0 || s[1] == '-')
		return -1;
	static const struct { const char *unit; double ns; } units[] = {
		{ "", 1e9 }, { "s", 1e9 }, { "ms", 1e6 }, { "us", 1e3 }, { "ns", 1 },
	};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (!strcmp(end, units[i].unit)) {
			double ns = v * units[i].ns;
			if (ns >= 1.8e19)
				return -1;
			b->set = b->relative = true;
			b->ns = (uint64_t)llround(ns);
			return 0;
		}
	return -1;
}

uint64_t vms_time_bound_at(const struct vms_time_bound *b, uint64_t first)
{
	if (!b->relative)
		return b->ns;
	return first + b->ns < first ? UINT64_MAX : first + b->ns;
}
