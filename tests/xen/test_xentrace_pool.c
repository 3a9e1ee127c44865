/* The xentrace reader with the readers' worker pool (lib/input/xentrace/xentrace_pool.c) at
 * 1, 2 and 4 threads, on ../shared/traces/xen/xentrace.bin (8 CPUs) and a longer file made
 * of copies of it end to end by bench/xen_big.py (8 CPUs a copy; VMS_XEN_POOL_TEST_COPIES,
 * 4 by default).
 *
 * Expected values, not from this reader's pool:
 *  - the events of a pass without skip_unread: one per record and one lost-records end per
 *    marker (the walk's counts, vms_xentrace_info, made at open before any stream is read);
 *    with skip_unread, the events taken and the records counted as left out add up to it;
 *  - each event is decoded exactly once per pass, whatever the threads (the reader's decode
 *    counter), when skip_unread is set as the session sets it (after each stream's first);
 *  - every event (time, kind, type, CPU, tid, flags, fields, strings), the counts by type
 *    of what was left out, format_event's text of each stream's last event, and the events
 *    after skip_unread is turned on or off in mid-read: as read by the reading thread alone
 *    (--threads 1), which test_xentrace.c and the xenalyze tests check.
 * The streams are read merged by time (as the merge does), so that the reader needs blocks of
 * every stream in turn while the workers decode ahead. VMS_XENTRACE_POOL_MIN=0 (the files are
 * below the pool's size threshold, and by default a xentrace file is read alone: test_rule). Registered in suites xen and threads (ThreadSanitizer,
 * scripts/test.sh). */
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "pool_digest.h"
#include "vmscope/xentrace.h"

void vms_xentrace_counters(const struct vms_source *src, uint64_t *decoded, bool *pooled);

#define MAXS 256

static char big[2200];

struct digest {
	uint64_t n, hash, skipped;
	uint64_t counts[VMS_XEN_T_COUNT];
	char last_text[MAXS][256];
};

static struct vms_source *open_at(const char *trace, unsigned threads)
{
	return vms_test_open_pooled(trace, threads, vms_xentrace_counters);
}

/* How a pass sets skip_unread: never; after each stream's first event (as the session does);
 * or that, then off after `toggle_at` events; or off first, then on after toggle_at. */
enum { NO_SKIP, SKIP, SKIP_THEN_OFF, OFF_THEN_SKIP };

struct reading {
	struct digest *g;
	int how;
	uint64_t toggle_at;
};

static void on_event(void *ctx, struct vms_source *src, const struct vms_event *ev)
{
	struct reading *rd = ctx;
	struct digest *g = rd->g;
	if (!ev) {
		if (rd->how == SKIP || rd->how == SKIP_THEN_OFF)
			src->ops->skip_unread(src, g->counts, &g->skipped);
		return;
	}
	assert_true(ev->stream < MAXS);
	g->hash = vms_test_mix_event(g->hash, ev);
	if (++g->n == rd->toggle_at && rd->how == SKIP_THEN_OFF)
		src->ops->skip_unread(src, NULL, NULL);
	if (g->n == rd->toggle_at && rd->how == OFF_THEN_SKIP)
		src->ops->skip_unread(src, g->counts, &g->skipped);
	/* the event's text before the stream moves on: the last one of each stays */
	src->ops->format_event(src, ev->stream, g->last_text[ev->stream],
			       sizeof g->last_text[ev->stream]);
}

/* Reads the streams merged by time into *g, skip_unread set as `how` says. The last event of
 * each stream is rendered by format_event. */
static void read_merged(struct vms_source *src, struct digest *g, int how, uint64_t toggle_at)
{
	memset(g, 0, sizeof *g);
	struct reading rd = { g, how, toggle_at };
	vms_test_read_merged(src, on_event, &rd);
	src->ops->skip_unread(src, NULL, NULL);
}

static void same(const struct digest *a, const struct digest *b)
{
	assert_int_equal(a->n, b->n);
	assert_true(a->hash == b->hash);
	assert_int_equal(a->skipped, b->skipped);
	for (uint32_t t = 0; t < VMS_XEN_T_COUNT; t++)
		assert_int_equal(a->counts[t], b->counts[t]);
	for (uint32_t s = 0; s < MAXS; s++)
		assert_string_equal(a->last_text[s], b->last_text[s]);
}

static void once_and_same(const char *trace)
{
	static struct digest alone[2], g;
	for (unsigned t = 1; t <= 4; t *= 2) {
		struct vms_source *src = open_at(trace, t);
		const struct vms_xen_info *in = vms_xentrace_info(src);
		uint64_t all = in->records + in->lost_markers;
		for (int pass = 0; pass < 4; pass++) { /* each after a rewind */
			int how = pass % 2 ? SKIP : NO_SKIP;
			uint64_t before, after;
			bool pooled;
			vms_xentrace_counters(src, &before, &pooled);
			read_merged(src, &g, how, 0);
			vms_xentrace_counters(src, &after, &pooled);
			assert_int_equal(g.n + g.skipped, all);
			if (how == NO_SKIP)
				assert_int_equal(g.skipped, 0);
			else
				assert_true(g.skipped > 0);
			if (pooled)
				assert_int_equal(after - before, g.n); /* each event decoded once */
			if (t == 1 && pass < 2)
				alone[how == SKIP] = g;
			same(&g, &alone[how == SKIP]);
			assert_int_equal(src->ops->rewind(src), 0);
		}
		print_message("# --threads %u: %" PRIu64 " events (%" PRIu64 " with skip_unread, %"
			      PRIu64 " left out), each decoded once, as alone\n", t, alone[0].n,
			      alone[1].n, alone[1].skipped);
		vms_source_close(src);
	}
}

static void test_shared(void **state)
{
	(void)state;
	const char *trace = vms_test_trace("xen/xentrace.bin");
	VMS_REQUIRE_TRACE(trace);
	once_and_same(trace);
}

static void test_copies(void **state)
{
	(void)state;
	if (!big[0])
		skip();
	once_and_same(big);
}

/* The rule (xt_pool_start): with the threads taken from the online CPUs a xentrace file is
 * read alone whatever its size; with --threads 2 one of 8 MiB or more has a worker. The
 * copies (4 by default: 15.6 MB) with VMS_XENTRACE_POOL_MIN unset, as the CLI runs. */
static void test_rule(void **state)
{
	(void)state;
	struct stat st;
	if (!big[0] || stat(big, &st) != 0 || st.st_size < (8 << 20))
		skip();
	unsetenv("VMS_XENTRACE_POOL_MIN");
	struct vms_error err = { 0 };
	uint64_t d;
	bool pooled;
	for (unsigned threads = 0; threads <= 2; threads += 2) {
		vms_pool_set_threads(threads);
		struct vms_source *src = vms_source_open(big, &err);
		if (!src)
			fail_msg("open %s: %s", big, err.msg);
		vms_xentrace_counters(src, &d, &pooled);
		vms_source_close(src);
		if (threads == 0)
			assert_false(pooled);
		else
			assert_int_equal(pooled, vms_pool_threads() > 1);
	}
	vms_pool_set_threads(0);
	setenv("VMS_XENTRACE_POOL_MIN", "0", 1);
}

/* Rewound in mid-read (blocks decoded ahead are dropped): the next pass is whole. */
static void test_rewind_midway(void **state)
{
	(void)state;
	const char *trace = vms_test_trace("xen/xentrace.bin");
	VMS_REQUIRE_TRACE(trace);
	static struct digest alone, g;
	struct vms_source *src = open_at(trace, 1);
	read_merged(src, &alone, SKIP, 0);
	vms_source_close(src);
	src = open_at(trace, 2);
	struct vms_event ev;
	uint32_t ns = src->ops->nr_streams(src);
	for (int i = 0; i < 5000; i++) /* some of each stream */
		assert_true(src->ops->next(src, (uint32_t)i % ns, &ev) >= 0);
	assert_int_equal(src->ops->rewind(src), 0);
	read_merged(src, &g, SKIP, 0);
	same(&g, &alone);
	vms_source_close(src);
}

/* skip_unread turned off or on in mid-read, with blocks decoded ahead under the other
 * setting: the events after it, and the counts, are those reading alone gives. */
static void test_skip_midway(void **state)
{
	(void)state;
	const char *trace = vms_test_trace("xen/xentrace.bin");
	VMS_REQUIRE_TRACE(trace);
	static struct digest alone, g;
	for (int how = SKIP_THEN_OFF; how <= OFF_THEN_SKIP; how++) {
		for (uint64_t at = 1000; at <= 30000; at *= 30) {
			struct vms_source *src = open_at(trace, 1);
			read_merged(src, &alone, how, at);
			vms_source_close(src);
			src = open_at(trace, 2);
			read_merged(src, &g, how, at);
			same(&g, &alone);
			uint64_t decoded;
			bool pooled;
			vms_xentrace_counters(src, &decoded, &pooled);
			/* streams ahead under the old setting were decoded again (the path tested) */
			assert_true(decoded > g.n);
			vms_source_close(src);
		}
	}
}

/* bench/xen_big.py's copies of the shared file (a file of 8 CPUs a copy) */
static int make_big(void **state)
{
	(void)state;
	const char *trace = vms_test_trace("xen/xentrace.bin");
	if (access(trace, R_OK) != 0)
		return 0;
	const char *e = getenv("VMS_XEN_POOL_TEST_COPIES");
	unsigned copies = e && *e ? (unsigned)strtoul(e, NULL, 10) : 4;
	const char *dir = vms_test_tmpdir("xentrace-pool");
	char cmd[4600];
	snprintf(big, sizeof big, "%s/xentrace-x%u.bin", dir, copies);
	snprintf(cmd, sizeof cmd, "python3 '%s/bench/xen_big.py' '%s' '%s' %u", VMS_SOURCE_DIR,
		 trace, big, copies);
	if (system(cmd) != 0) {
		print_message("# %s failed: the copies are skipped\n", cmd);
		big[0] = '\0';
	}
	return 0;
}

int main(void)
{
	setenv("VMS_XENTRACE_POOL_MIN", "0", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared),
		cmocka_unit_test(test_copies),
		cmocka_unit_test(test_rewind_midway),
		cmocka_unit_test(test_skip_midway),
		cmocka_unit_test(test_rule),
	};
	return cmocka_run_group_tests(tests, make_big, NULL);
}
