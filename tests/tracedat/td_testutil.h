/* Helpers of the trace.dat reader tests: read a whole source into counts, read
 * `trace-cmd report` output into the same counts (the independent reference), and check the
 * "PATH: WHAT at byte offset N" error shape. */
#ifndef TD_TESTUTIL_H
#define TD_TESTUTIL_H

#include "testutil.h"

#include <ctype.h>
#include <inttypes.h>

#include "vmscope/source.h"

const char *vms_tracedat_stream_buffer(const struct vms_source *src, uint32_t stream);

#define TD_MAX_NAMES 512
#define TD_MAX_CPU 64

struct td_counts {
	uint32_t nnames;
	char name[TD_MAX_NAMES][64]; /* event name without its system */
	uint64_t count[TD_MAX_NAMES];
	uint64_t per_cpu[TD_MAX_CPU];
	uint64_t first[TD_MAX_CPU], last[TD_MAX_CPU];
	uint64_t total;
	uint64_t lost;      /* from "[N EVENTS DROPPED]" (report) or meta (reader) */
	uint64_t lost_marks; /* events flagged LOST_BEFORE (reader) / DROPPED lines (report) */
};

static inline void td_count_name(struct td_counts *c, const char *name, size_t len)
{
	if (len >= 64)
		len = 63;
	for (uint32_t i = 0; i < c->nnames; i++)
		if (strlen(c->name[i]) == len && memcmp(c->name[i], name, len) == 0) {
			c->count[i]++;
			return;
		}
	assert_true(c->nnames < TD_MAX_NAMES);
	memcpy(c->name[c->nnames], name, len);
	c->name[c->nnames][len] = '\0';
	c->count[c->nnames++] = 1;
}

static inline uint64_t td_count_of(const struct td_counts *c, const char *name)
{
	for (uint32_t i = 0; i < c->nnames; i++)
		if (strcmp(c->name[i], name) == 0)
			return c->count[i];
	return 0;
}

static inline void td_note_cpu(struct td_counts *c, uint32_t cpu, uint64_t ts)
{
	assert_true(cpu < TD_MAX_CPU);
	if (!c->per_cpu[cpu] || ts < c->first[cpu])
		c->first[cpu] = ts;
	if (ts > c->last[cpu])
		c->last[cpu] = ts;
	c->per_cpu[cpu]++;
	c->total++;
}

/* Read every stream of src to its end. Asserts per-stream time order. Returns the status of
 * the first stream that failed (0 when all ended cleanly). */
static inline int td_read_all(struct vms_source *src, struct td_counts *c)
{
	memset(c, 0, sizeof *c);
	uint32_t ns = src->ops->nr_streams(src);
	int status = 0;
	for (uint32_t s = 0; s < ns; s++) {
		struct vms_event ev;
		uint64_t prev = 0;
		int r;
		while ((r = src->ops->next(src, s, &ev)) == 1) {
			assert_int_equal(ev.stream, s);
			assert_true(ev.ts >= prev);
			assert_false(ev.flags & VMS_EVF_TIME_BACKWARDS);
			prev = ev.ts;
			assert_true(ev.type < src->meta.nr_types);
			assert_int_equal(ev.kind, src->meta.type_kinds[ev.type]);
			const char *full = src->meta.type_names[ev.type];
			const char *colon = strchr(full, ':');
			const char *name = colon ? colon + 1 : full;
			td_count_name(c, name, strlen(name));
			td_note_cpu(c, ev.cpu, ev.ts);
			if (ev.flags & VMS_EVF_LOST_BEFORE)
				c->lost_marks++;
		}
		if (r < 0 && !status)
			status = r;
	}
	c->lost = src->meta.lost_events;
	return status;
}

/* `trace-cmd report -t --nodate FILE` (raw times, no DATE offset) into counts: lines "comm-pid [CPU] SEC.NSEC: name: ..." and
 * "CPU:N [M EVENTS DROPPED]". Returns false when trace-cmd could not be run. */
static inline bool td_report_counts(const char *path, struct td_counts *c)
{
	memset(c, 0, sizeof *c);
	char cmd[8400];
	snprintf(cmd, sizeof cmd, "trace-cmd report -t --nodate '%.8000s' 2>/dev/null", path);
	FILE *p = popen(cmd, "r");
	if (!p)
		return false;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, p)) > 0) {
		char *d = strstr(line, " EVENTS DROPPED]");
		if (d) {
			char *b = d;
			while (b > line && isdigit((unsigned char)b[-1]))
				b--;
			c->lost += strtoull(b, NULL, 10);
			c->lost_marks++;
			continue;
		}
		/* find "[digits]" followed by spaces, "sec.nsec: name:" */
		for (char *q = strchr(line, '['); q; q = strchr(q + 1, '[')) {
			char *e;
			unsigned long cpu = strtoul(q + 1, &e, 10);
			if (e == q + 1 || *e != ']')
				continue;
			char *t = e + 1;
			while (*t == ' ')
				t++;
			char *dot;
			unsigned long long sec = strtoull(t, &dot, 10);
			if (dot == t || *dot != '.')
				continue;
			char *colon;
			unsigned long long nsec = strtoull(dot + 1, &colon, 10);
			if (colon - dot != 10 || *colon != ':')
				continue;
			char *nm = colon + 1;
			while (*nm == ' ')
				nm++;
			char *ne = nm;
			while (*ne && *ne != ':' && *ne != ' ')
				ne++;
			if (*ne != ':')
				continue;
			td_count_name(c, nm, (size_t)(ne - nm));
			td_note_cpu(c, (uint32_t)cpu, sec * 1000000000ull + nsec);
			break;
		}
	}
	free(line);
	int st = pclose(p);
	return st == 0 && c->total > 0;
}

static inline bool td_have_trace_cmd(void)
{
	return system("trace-cmd --version >/dev/null 2>&1") == 0 ||
	       system("command -v trace-cmd >/dev/null 2>&1") == 0;
}

/* The same counts (by event name, per CPU, first/last time stamps, total). */
static inline void td_assert_same(const struct td_counts *got, const struct td_counts *want)
{
	assert_int_equal(got->total, want->total);
	for (uint32_t i = 0; i < want->nnames; i++) {
		if (td_count_of(got, want->name[i]) != want->count[i])
			print_message("# event %s: reader %" PRIu64 ", reference %" PRIu64 "\n",
				      want->name[i], td_count_of(got, want->name[i]), want->count[i]);
		assert_int_equal(td_count_of(got, want->name[i]), want->count[i]);
	}
	assert_int_equal(got->nnames, want->nnames);
	for (uint32_t cpu = 0; cpu < TD_MAX_CPU; cpu++) {
		assert_int_equal(got->per_cpu[cpu], want->per_cpu[cpu]);
		if (want->per_cpu[cpu]) {
			assert_int_equal(got->first[cpu], want->first[cpu]);
			assert_int_equal(got->last[cpu], want->last[cpu]);
		}
	}
}

/* "PATH: WHAT at byte offset N" */
static inline void td_assert_error_shape(const struct vms_error *e, const char *path)
{
	assert_true(e->status < 0);
	size_t pl = strlen(path);
	if (strncmp(e->msg, path, pl) != 0 || e->msg[pl] != ':')
		fail_msg("error does not start with the path: %s", e->msg);
	const char *at = strstr(e->msg, " at byte offset ");
	if (!at)
		fail_msg("error without a byte offset: %s", e->msg);
	const char *d = at + strlen(" at byte offset ");
	if (!isdigit((unsigned char)*d))
		fail_msg("error offset not a number: %s", e->msg);
	while (isdigit((unsigned char)*d))
		d++;
	if (*d != '\0')
		fail_msg("error does not end with the offset: %s", e->msg);
}

/* A fresh temporary directory under the build dir (like vms_test_tmpdir, with buffers
 * large enough for -Wformat-truncation at -O2). */
static inline const char *td_tmpdir(const char *name)
{
	static char buf[4096];
	snprintf(buf, sizeof buf, "%.3900s/test-tmp/%.100s", vms_test_build(), name);
	char cmd[8300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", buf, buf);
	if (system(cmd) != 0)
		fail_msg("cannot make %s", buf);
	return buf;
}

static inline int td_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int td_run(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return system(cmd);
}

#endif
