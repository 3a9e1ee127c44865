/* The trace.dat reader's skip_unread (issue 24): an analysis pass over a host trace leaves
 * out the records no analysis reads (kind VMS_K_OTHER), counting them by type. The expected
 * values come from the same source read whole (skip off), which test_tracedat_local/kvm
 * check against trace-cmd report: with skip on, each stream returns exactly the records of
 * the whole read that are of an analysed kind, or its first or last, or the one after lost
 * events, in the same order with the same fields; every record left out is counted under its
 * type, so returned + left out = the whole read's counts; and something is left out (the
 * check cannot pass by skipping nothing). Traces: ../shared/traces/local/sched-syscalls-2cpu.dat
 * (v7 zstd, 2.4 M records, 91 % raw_syscalls) at 1 and 2 threads and uncompressed, and
 * kvm-hip24's guest (zlib). */
#include "td_testutil.h"

#include "core/pool.h"

static uint64_t ev_hash(const struct vms_event *ev)
{
	uint64_t v[] = { ev->stream, ev->cpu, ev->ts, ev->type, ev->kind,
			 (uint64_t)(int64_t)ev->tid, ev->flags, ev->f[0], ev->f[1], ev->f[2],
			 ev->f[3], ev->f[4] };
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		h = (h ^ v[i]) * 1099511628211ull, h ^= h >> 29;
	for (int i = 0; i < 2; i++)
		for (const char *p = ev->s[i]; p && *p; p++)
			h = (h ^ (uint8_t)*p) * 1099511628211ull;
	return h;
}

struct kept {
	uint64_t *h;
	uint64_t n, cap;
};

static void push(struct kept *k, uint64_t h)
{
	if (k->n == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 4096;
		k->h = realloc(k->h, k->cap * sizeof *k->h);
		assert_non_null(k->h);
	}
	k->h[k->n++] = h;
}

static void check_source(const char *path)
{
	struct vms_error err = { 0 };
	struct vms_source *src = vms_source_open(path, &err);
	assert_non_null(src);
	assert_non_null(src->ops->skip_unread);
	uint32_t nt = src->meta.nr_types ? src->meta.nr_types : 1;
	uint64_t *whole = calloc(nt, sizeof *whole), *counts = calloc(nt, sizeof *counts);
	assert_true(whole && counts);
	uint32_t ns = src->ops->nr_streams(src);
	uint64_t total = 0, left_out = 0, returned = 0, ev_count = 0;
	for (uint32_t st = 0; st < ns; st++) {
		/* the whole stream: what skip must return, by the rule */
		struct kept want = { 0 };
		struct vms_event ev;
		uint64_t n = 0, last_h = 0;
		bool last_kept = true;
		int r;
		while ((r = src->ops->next(src, st, &ev)) > 0) {
			assert_true(ev.type < nt);
			whole[ev.type]++;
			uint64_t h = ev_hash(&ev);
			bool keep = n == 0 || ev.kind != VMS_K_OTHER || (ev.flags & VMS_EVF_LOST_BEFORE);
			if (keep)
				push(&want, h);
			last_h = h;
			last_kept = keep;
			n++;
		}
		assert_int_equal(r, 0);
		if (n && !last_kept)
			push(&want, last_h);   /* the stream's last */
		total += n;
		assert_int_equal(src->ops->rewind(src), 0);
		/* the same stream with skip on */
		src->ops->skip_unread(src, counts, &left_out);
		uint64_t i = 0;
		while ((r = src->ops->next(src, st, &ev)) > 0) {
			assert_true(i < want.n);
			assert_true(ev.type < nt);
			assert_true(ev_hash(&ev) == want.h[i]);
			counts[ev.type]++;
			i++;
		}
		assert_int_equal(r, 0);
		assert_int_equal(i, want.n);
		returned += i;
		src->ops->skip_unread(src, NULL, NULL);
		assert_int_equal(src->ops->rewind(src), 0);
		/* off again: every record once more */
		uint64_t again = 0;
		while (src->ops->next(src, st, &ev) > 0)
			again++;
		assert_int_equal(again, n);
		assert_int_equal(src->ops->rewind(src), 0);
		ev_count += n;
		free(want.h);
	}
	assert_int_equal(returned + left_out, total);
	assert_true(left_out > 0);
	for (uint32_t t = 0; t < nt; t++)
		assert_int_equal(counts[t], whole[t]);
	(void)ev_count;
	free(whole);
	free(counts);
	src->ops->close(src);
}

static void test_local(void **state)
{
	(void)state;
	VMS_REQUIRE_TRACE(vms_test_trace("local/sched-syscalls-2cpu.dat"));
	for (unsigned th = 1; th <= 2; th++) {
		vms_pool_set_threads(th);
		check_source(vms_test_trace("local/sched-syscalls-2cpu.dat"));
	}
	vms_pool_set_threads(0);
}

/* A guest's trace (the reader does not know whose it is; the session never asks a guest's
 * source to skip, as the containment check counts its every event), zlib. */
static void test_kvm_guest(void **state)
{
	(void)state;
	VMS_REQUIRE_TRACE(vms_test_trace("kvm-hip24/guest-Salamander4.dat"));
	check_source(vms_test_trace("kvm-hip24/guest-Salamander4.dat"));
}

/* sched-syscalls rewritten uncompressed by trace-cmd (which cannot read zlib files): the
 * pages in place in the mapping, so the held last record is copied before its page goes. */
static void test_uncompressed(void **state)
{
	(void)state;
	VMS_REQUIRE_TRACE(vms_test_trace("local/sched-syscalls-2cpu.dat"));
	if (system("trace-cmd -h >/dev/null 2>&1") == -1 ||
	    system("command -v trace-cmd >/dev/null 2>&1") != 0)
		skip();
	char dir[] = "/tmp/vms-skip-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char cmd[8192], out[4096];
	snprintf(out, sizeof out, "%s/none.dat", dir);
	snprintf(cmd, sizeof cmd, "trace-cmd convert --compression none -i '%s' -o '%s' "
		 ">/dev/null 2>&1", vms_test_trace("local/sched-syscalls-2cpu.dat"), out);
	assert_int_equal(system(cmd), 0);
	check_source(out);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_local),
		cmocka_unit_test(test_kvm_guest),
		cmocka_unit_test(test_uncompressed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
