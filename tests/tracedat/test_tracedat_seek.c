/* Checkpoints of the trace.dat reader and the merge (issue 21): the merge's marks (every
 * stream's source position, lib/input/tracedat/tracedat_seek.c) taken after event k for many
 * k, serialised to bytes, read back into a fresh source and merge: the events after k (cpu,
 * time stamp, type, kind, tid, flags, decoded fields, merged order across streams and
 * sources, and for the first 16 events the text libtraceevent renders from the record's
 * bytes) equal the uninterrupted read's. Expected values come from that uninterrupted read
 * of the same files (the reader's counts themselves are checked against trace-cmd report in
 * test_tracedat_local/kvm). Traces: ../shared/traces/local/sched-syscalls-2cpu.dat (v7 zstd,
 * at 1 and 2 threads: the worker pool's prefetch restarts at the sought chunk) and the
 * kvm-hip24 host + guest pair (v7 zlib) merged, a synthesized pair uncompressed and zstd
 * (the check: tests/common/merge_seek.h). Also hostile positions, rejected with an error. */
#include "td_testutil.h"

#include "core/merge.h"
#include "core/pool.h"
#include "merge_seek.h"

static void test_local_threads(void **state)
{
	(void)state;
	VMS_REQUIRE_TRACE(vms_test_trace("local/sched-syscalls-2cpu.dat"));
	for (unsigned th = 1; th <= 2; th++) {
		vms_pool_set_threads(th);
		struct merge_run r = { .paths = { vms_test_trace("local/sched-syscalls-2cpu.dat") },
				 .n = 1, .open = vms_tracedat_open };
		merge_seek_check(&r);
	}
	vms_pool_set_threads(0);
}

static void test_kvm_pair(void **state)
{
	(void)state;
	VMS_REQUIRE_TRACE(vms_test_trace("kvm-hip24/host.dat"));
	char host[4096], guest[4096];
	snprintf(host, sizeof host, "%s", vms_test_trace("kvm-hip24/host.dat"));
	snprintf(guest, sizeof guest, "%s", vms_test_trace("kvm-hip24/guest-Salamander4.dat"));
	struct merge_run r = { .paths = { host, guest }, .n = 2, .open = vms_tracedat_open };
	merge_seek_check(&r);
}

/* A synthesized host + guest pair (vmscope synth in a temporary directory), uncompressed (the
 * pages in place in the mapping) and zstd. */
static void synth_pair(const char *comp)
{
	char dir[] = "/tmp/vms-seek-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char cmd[8192];
	snprintf(cmd, sizeof cmd, "'%s/tools/vmscope/vmscope' synth --seed 21 --events 40000 "
		 "--compression %s --out '%s' >/dev/null", vms_test_build(), comp, dir);
	assert_int_equal(system(cmd), 0);
	char host[4096], guest[4096];
	snprintf(host, sizeof host, "%s/host.dat", dir);
	snprintf(guest, sizeof guest, "%s/guest.dat", dir);
	struct merge_run r = { .paths = { host, guest }, .n = 2, .open = vms_tracedat_open };
	merge_seek_check(&r);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_synth_none(void **state)
{
	(void)state;
	synth_pair("none");
}

static void test_synth_zstd(void **state)
{
	(void)state;
	synth_pair("zstd");
}

/* Positions from a damaged index: each one an error, never a crash; a good one after. */
static void test_hostile(void **state)
{
	(void)state;
	const char *path = vms_test_trace("local/sched-syscalls-2cpu.dat");
	VMS_REQUIRE_TRACE(path);
	struct vms_error err = { 0 };
	struct vms_source *src = vms_tracedat_open(path, &err);
	assert_non_null(src);
	struct vms_event ev;
	for (int i = 0; i < 5000; i++)
		assert_int_equal(src->ops->next(src, 0, &ev), 1);
	uint64_t want_ts = ev.ts;
	struct vms_stream_pos good, p;
	assert_int_equal(vms_source_tell(src, 0, &good), 0);
	assert_true(good.w[0] != 0);
	struct { int word; uint64_t val; } bad[] = {
		{ 1, 1000000 },      /* chunk far past the stream's 1399 */
		{ 1, 1399 },         /* one past the last chunk */
		{ 3, 1u << 20 },     /* record offset past the page */
		{ 3, 2 },            /* not at a record word */
		{ 2, 1 },            /* page offset not at a page */
		{ 2, 1ull << 40 },   /* page offset past the chunk */
		{ 6, 0 },            /* page number 0 */
		{ 7, 2 },            /* lost flag neither 0 nor 1 */
		{ 0, 0 },            /* not a trace.dat position */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		p = good;
		p.w[bad[i].word] = bad[i].val;
		vms_error_clear(&src->err);
		assert_true(vms_source_seek(src, 0, &p) < 0);
		assert_true(src->err.status < 0);
		assert_non_null(strstr(src->err.msg, path));
		assert_true(src->ops->next(src, 0, &ev) < 0); /* the stream stays in error */
	}
	/* the position of stream 0 given to stream 1 */
	assert_true(vms_source_seek(src, 1, &good) < 0);
	vms_error_clear(&src->err);
	assert_int_equal(vms_source_seek(src, 0, &good), 0);
	assert_int_equal(src->ops->next(src, 0, &ev), 1);
	assert_int_equal(ev.ts, want_ts);
	/* a merge checkpoint for another number of streams */
	struct vms_clock c;
	vms_clock_init(&c);
	const struct vms_clock *cl = &c;
	struct vms_merge_mark mk[3] = { { .state = VMS_MARK_PENDING, .pos = good } };
	struct vms_merge m;
	assert_true(vms_merge_restart(&m, &src, &cl, 1, mk, 3, 0, &err) < 0);
	assert_non_null(strstr(err.msg, "3 streams for 2"));
	mk[1].state = 7;
	assert_true(vms_merge_restart(&m, &src, &cl, 1, mk, 2, 0, &err) < 0);
	vms_source_close(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_kvm_pair),
		cmocka_unit_test(test_synth_none),
		cmocka_unit_test(test_synth_zstd),
		cmocka_unit_test(test_local_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
