/* Damaged trace.dat files: truncations and byte flips of the shared traces (copies in the
 * build's temp dir, never in shared/). Each open + full iteration must end cleanly or with
 * one error shaped "PATH: WHAT at byte offset N" — never a crash, a hang or a huge
 * allocation (ASan/UBSan in CI watch for the first and the last). */
#include "td_testutil.h"

#include <fcntl.h>
#include <sys/stat.h>

#define MAX_EVENTS_PER_RUN 20000000ull

/* Open and read everything; returns events read. Asserts the outcome's shape. */
static uint64_t max_events = MAX_EVENTS_PER_RUN; /* a budget for walks over big files */

static uint64_t run_one(const char *path, uint64_t damaged_at, bool *failed)
{
	struct vms_error err = {0};
	struct vms_source *src = vms_tracedat_open(path, &err);
	*failed = false;
	if (!src) {
		if (err.status == 0) {
			/* "not a trace.dat": only when the magic itself was damaged */
			if (damaged_at >= 10)
				fail_msg("damage at %llu made the file 'not a trace.dat'",
					 (unsigned long long)damaged_at);
		} else {
			td_assert_error_shape(&err, path);
		}
		*failed = true;
		return 0;
	}
	uint64_t n = 0;
	uint32_t ns = src->ops->nr_streams(src);
	int status = 0;
	char buf[256];
	for (uint32_t s = 0; s < ns; s++) {
		struct vms_event ev;
		int r;
		while ((r = src->ops->next(src, s, &ev)) == 1) {
			assert_true(ev.type < src->meta.nr_types);
			if (ev.s[0])
				assert_true(strlen(ev.s[0]) < 64);
			if (ev.s[1])
				assert_true(strlen(ev.s[1]) < 64);
			if (++n > MAX_EVENTS_PER_RUN)
				fail_msg("runaway iteration");
			if (n >= max_events)
				break;
			if ((n & 1023) == 1) /* the dump path too, now and then */
				src->ops->format_event(src, s, buf, sizeof buf);
		}
		if (n >= max_events)
			break;
		if (r < 0) {
			status = r;
			/* a failed stream stays failed */
			assert_true(src->ops->next(src, s, &ev) < 0);
		}
	}
	if (status < 0) {
		td_assert_error_shape(&src->err, path);
		*failed = true;
	}
	vms_source_close(src);
	return n;
}

static void copy_file(const char *from, const char *to)
{
	if (td_run("cp '%s' '%s' && chmod u+w '%s'", from, to, to) != 0)
		fail_msg("cannot copy %s", from);
}

static uint64_t file_size(const char *p)
{
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	return (uint64_t)st.st_size;
}

/* Truncation points: every byte of the first `head` bytes, every `stride` bytes, and
 * every byte of the last `tail` bytes (where v7 writes its last options sections). A run
 * reads at most `budget` events (cuts that leave the data intact would otherwise read the
 * whole trace again and again; the full reads are in the other tests). */
static void walk_truncations(const char *shared, const char *name, uint64_t head,
			     uint64_t stride, uint64_t tail, uint64_t budget)
{
	VMS_REQUIRE_TRACE(shared);
	const char *dir = td_tmpdir(name);
	char p[4300];
	snprintf(p, sizeof p, "%s/t.dat", dir);
	copy_file(shared, p);
	uint64_t size = file_size(p);
	bool failed;
	max_events = budget;
	uint64_t full = run_one(p, UINT64_MAX, &failed);
	assert_false(failed);
	/* from the longest to the shortest, so one copy is cut step by step */
	uint64_t cut = size, runs = 0, ok = 0;
	while (cut > 0) {
		cut--;
		if (!(cut < head || cut % stride == 0 || cut + tail >= size))
			continue;
		assert_int_equal(truncate(p, (off_t)cut), 0);
		uint64_t n = run_one(p, cut, &failed);
		/* a cut that is not noticed must not have lost anything */
		if (!failed && n != full)
			fail_msg("cut at %llu: %llu events and no error (full file: %llu)",
				 (unsigned long long)cut, (unsigned long long)n,
				 (unsigned long long)full);
		ok += !failed;
		runs++;
	}
	max_events = MAX_EVENTS_PER_RUN;
	print_message("# %s: %llu truncations, %llu read without error\n", name,
		      (unsigned long long)runs, (unsigned long long)ok);
	unlink(p);
}

static void flip(const char *p, uint64_t off, uint8_t mask)
{
	int fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	uint8_t b;
	assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
	b ^= mask;
	assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
	close(fd);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Byte flips at deterministic pseudo-random offsets in [lo, hi), one at a time.
 * TD_FUZZ_SCALE=N in the environment multiplies the counts (for a longer hunt by hand). */
static void walk_flips(const char *p, uint64_t lo, uint64_t hi, unsigned count)
{
	const char *scale = getenv("TD_FUZZ_SCALE");
	if (scale && atoi(scale) > 1)
		count *= (unsigned)atoi(scale);
	unsigned failed_n = 0;
	for (unsigned i = 0; i < count; i++) {
		uint64_t off = lo + next_rand() % (hi - lo);
		uint8_t mask = (uint8_t)(1u << (next_rand() % 8));
		if (i % 3 == 0)
			mask = 0xff;
		flip(p, off, mask);
		bool failed;
		run_one(p, off, &failed);
		failed_n += failed;
		flip(p, off, mask);
	}
	print_message("# %s: %u flips in [%llu, %llu), %u gave an error\n", p, count,
		      (unsigned long long)lo, (unsigned long long)hi, failed_n);
}

static void test_truncate_host(void **state)
{
	(void)state;
	walk_truncations(vms_test_trace("kvm-hip24/host.dat"), "td-trunc-host", 2048, 8191, 1024,
			 5000);
}

static void test_truncate_guest(void **state)
{
	(void)state;
	walk_truncations(vms_test_trace("kvm-hip24/guest-Salamander4.dat"), "td-trunc-guest", 512,
			 16381, 512, 5000);
}

static void test_truncate_local(void **state)
{
	(void)state;
	walk_truncations(vms_test_trace("local/sched-syscalls-2cpu.dat"), "td-trunc-local", 1024,
			 65521, 512, 5000);
}

static void flips_of(const char *shared, const char *name, unsigned head_flips,
		     unsigned all_flips)
{
	VMS_REQUIRE_TRACE(shared);
	const char *dir = td_tmpdir(name);
	char p[4300];
	snprintf(p, sizeof p, "%s/f.dat", dir);
	copy_file(shared, p);
	uint64_t size = file_size(p);
	walk_flips(p, 0, size < 4096 ? size : 4096, head_flips);
	walk_flips(p, 0, size, all_flips);
	/* the last options sections (BUFFER, ...) */
	walk_flips(p, size > 2048 ? size - 2048 : 0, size, head_flips);
	unlink(p);
}

static void test_flips_host(void **state)
{
	(void)state;
	flips_of(vms_test_trace("kvm-hip24/host.dat"), "td-flip-host", 80, 100);
}

static void test_flips_guest(void **state)
{
	(void)state;
	flips_of(vms_test_trace("kvm-hip24/guest-Salamander4.dat"), "td-flip-guest", 30, 40);
}

static void test_flips_local(void **state)
{
	(void)state;
	/* a full read of this file is 2.43 M events: few flips */
	flips_of(vms_test_trace("local/sched-syscalls-2cpu.dat"), "td-flip-local", 2, 2);
}

/* The ring-buffer page parser on raw (uncompressed) pages: the local trace rewritten as v6
 * by trace-cmd, cut to 256 KiB of CPU 0's data (so each run is short: the events before
 * the cut, then an error), with flips inside those pages. */
static void test_flips_v6_pages(void **state)
{
	(void)state;
	const char *shared = vms_test_trace("local/sched-syscalls-2cpu.dat");
	VMS_REQUIRE_TRACE(shared);
	if (!td_have_trace_cmd()) {
		print_message("# trace-cmd missing: skipped\n");
		skip();
	}
	const char *dir = td_tmpdir("td-flip-v6");
	char p[4300];
	snprintf(p, sizeof p, "%s/v6.dat", dir);
	if (td_run("trace-cmd convert --file-version 6 -i '%s' -o '%s' >/dev/null 2>&1", shared,
		   p) != 0)
		fail_msg("trace-cmd convert failed");
	/* CPU 0's data offset: the u64 after the "flyrecord\0" tag (v6 layout) */
	FILE *f = fopen(p, "rb");
	assert_non_null(f);
	static uint8_t head[8 << 20];
	size_t n = fread(head, 1, sizeof head, f);
	fclose(f);
	uint64_t cpu0 = 0;
	for (size_t i = 0; i + 18 < n; i++)
		if (memcmp(head + i, "flyrecord", 10) == 0) {
			memcpy(&cpu0, head + i + 10, 8);
			break;
		}
	assert_true(cpu0 > 0 && cpu0 < file_size(p));
	uint64_t cut = cpu0 + (256u << 10) + 1000; /* mid-page */
	assert_int_equal(truncate(p, (off_t)cut), 0);
	bool failed;
	uint64_t before = run_one(p, UINT64_MAX, &failed);
	assert_true(failed);       /* the cut is reported ... */
	assert_true(before > 1000); /* ... after the events before it */
	walk_flips(p, cpu0, cut, 200);
	/* and the metadata before the pages: header_page, format texts (uncompressed in v6) */
	walk_flips(p, 0, cpu0 < (1u << 20) ? cpu0 : (1u << 20), 60);
	unlink(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_truncate_host),
		cmocka_unit_test(test_truncate_guest),
		cmocka_unit_test(test_truncate_local),
		cmocka_unit_test(test_flips_host),
		cmocka_unit_test(test_flips_guest),
		cmocka_unit_test(test_flips_local),
		cmocka_unit_test(test_flips_v6_pages),
	};
	if (getenv("TD_FILTER")) /* run one test by name, when looking at one */
		cmocka_set_test_filter(getenv("TD_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
