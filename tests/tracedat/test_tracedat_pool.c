/* The trace.dat reader with the readers' worker pool (lib/core/pool.c) at 1, 2 and 4
 * threads (3 in the rewinds, 4 with two sources), on
 * ../shared/traces/local/sched-syscalls-2cpu.dat (v7 zstd, 2.43 M events).
 *
 * Expected values, not from this reader:
 *  - chunks: `trace-cmd dump --flyrecord` gives the CPUs' data offsets (1142784, 8486912);
 *    the chunk count word at each is 1399 and 1470 (python3 struct.unpack_from('<I')),
 *    2869 in all: each is decompressed exactly once per pass, whatever the threads;
 *  - events per CPU and the first/last time stamps: trace-cmd report (as in
 *    test_tracedat_local.c).
 * The streams are read merged by time stamp (as the merge does), so that the reader needs
 * chunks of both streams in turn while the workers decompress ahead. Registered in suites
 * tracedat and threads (ThreadSanitizer, scripts/test.sh). */
#include "td_testutil.h"

#include "core/pool.h"

void vms_tracedat_counters(const struct vms_source *src, uint64_t *chunks,
			   uint64_t *decompressions);

#define CHUNKS 2869u
static const uint64_t per_cpu[2] = { 1172745, 1261658 };
static const uint64_t first_ts[2] = { 433465564075ull, 433466236291ull };
static const uint64_t last_ts[2] = { 453821361257ull, 453821021452ull };

struct merged {
	uint64_t n[2], first[2], last[2];
};

/* Reads up to `limit` events of both streams in time order (UINT64_MAX: all). */
static int read_merged(struct vms_source *src, struct merged *m, uint64_t limit)
{
	memset(m, 0, sizeof *m);
	struct vms_event ev[2];
	int have[2];
	for (uint32_t s = 0; s < 2; s++)
		have[s] = src->ops->next(src, s, &ev[s]);
	for (uint64_t k = 0; k < limit; k++) {
		int s;
		if (have[0] == 1 && have[1] == 1)
			s = ev[1].ts < ev[0].ts;
		else if (have[0] == 1)
			s = 0;
		else if (have[1] == 1)
			s = 1;
		else
			break;
		assert_int_equal(ev[s].cpu, (uint32_t)s);
		if (m->n[s] == 0)
			m->first[s] = ev[s].ts;
		assert_true(ev[s].ts >= m->last[s]);
		m->last[s] = ev[s].ts;
		m->n[s]++;
		have[s] = src->ops->next(src, (uint32_t)s, &ev[s]);
	}
	return have[0] < 0 ? have[0] : have[1] < 0 ? have[1] : 0;
}

static void assert_whole(const struct merged *m)
{
	for (int s = 0; s < 2; s++) {
		assert_int_equal(m->n[s], per_cpu[s]);
		assert_int_equal(m->first[s], first_ts[s]);
		assert_int_equal(m->last[s], last_ts[s]);
	}
}

static struct vms_source *open_local(void)
{
	const char *path = vms_test_trace("local/sched-syscalls-2cpu.dat");
	if (access(path, R_OK) != 0)
		return NULL;
	struct vms_error err = { 0 };
	struct vms_source *src = vms_tracedat_open(path, &err);
	if (!src)
		fail_msg("%s", err.msg);
	return src;
}

/* Every chunk decompressed once per pass, at every thread count, in both passes. */
static void test_decompressed_once(void **state)
{
	(void)state;
	VMS_REQUIRE_TRACE(vms_test_trace("local/sched-syscalls-2cpu.dat"));
	static const unsigned threads[] = { 1, 2, 4 };
	for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
		vms_pool_set_threads(threads[i]);
		struct vms_source *src = open_local();
		struct merged m;
		uint64_t chunks, dec;
		assert_int_equal(read_merged(src, &m, UINT64_MAX), 0);
		assert_whole(&m);
		vms_tracedat_counters(src, &chunks, &dec);
		assert_int_equal(chunks, CHUNKS);
		assert_int_equal(dec, CHUNKS);
		/* a second pass (the model pass, then the analysis) */
		assert_int_equal(src->ops->rewind(src), 0);
		assert_int_equal(read_merged(src, &m, UINT64_MAX), 0);
		assert_whole(&m);
		vms_tracedat_counters(src, &chunks, &dec);
		assert_int_equal(chunks, 2 * CHUNKS);
		assert_int_equal(dec, 2 * CHUNKS);
		vms_source_close(src);
	}
	vms_pool_set_threads(0);
}

/* A rewind while the workers are ahead (chunks ready and in flight) starts over cleanly. */
static void test_rewind_midway(void **state)
{
	(void)state;
	VMS_REQUIRE_TRACE(vms_test_trace("local/sched-syscalls-2cpu.dat"));
	vms_pool_set_threads(3);
	struct vms_source *src = open_local();
	struct merged m;
	for (uint64_t cut = 1; cut < 2000000; cut *= 37) {
		assert_int_equal(read_merged(src, &m, cut), 0);
		assert_int_equal(m.n[0] + m.n[1], cut);
		assert_int_equal(src->ops->rewind(src), 0);
	}
	assert_int_equal(read_merged(src, &m, UINT64_MAX), 0);
	assert_whole(&m);
	vms_source_close(src);
	vms_pool_set_threads(0);
}

/* Two sources share the pool (a host and a guest): each read whole, each chunk once. */
static void test_two_sources(void **state)
{
	(void)state;
	VMS_REQUIRE_TRACE(vms_test_trace("local/sched-syscalls-2cpu.dat"));
	vms_pool_set_threads(4);
	struct vms_source *a = open_local(), *b = open_local();
	struct merged ma, mb;
	/* interleaved: a part of a, all of b, the rest of a */
	assert_int_equal(read_merged(a, &ma, 1000000), 0);
	assert_int_equal(read_merged(b, &mb, UINT64_MAX), 0);
	assert_whole(&mb);
	vms_source_close(b);
	assert_int_equal(a->ops->rewind(a), 0);
	assert_int_equal(read_merged(a, &ma, UINT64_MAX), 0);
	assert_whole(&ma);
	vms_source_close(a);
	vms_pool_set_threads(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decompressed_once),
		cmocka_unit_test(test_rewind_midway),
		cmocka_unit_test(test_two_sources),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
