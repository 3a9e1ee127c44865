/* The page's rows and summaries (lib/session/serve_window.c's accumulator, which `vmscope
 * index` and `serve` feed from the page's run) in the session's checked single pass: the
 * traces are read once when the metadata's model links what the events link (the synthesized
 * pair: complete GUEST options), and read again when it does not (kvm-hip24, whose host runs
 * two untraced guests): then the accumulator's reset takes back what the first pass gave.
 * Either way the rows and the summaries must be byte for byte those of a run after a model
 * pass of its own (vms_session_build_model first: the session's other route). */
#include "testutil.h"
#include "synth_pair.h"

#include <stdlib.h>
#include <string.h>

#include "vmscope/serve.h"
#include "vmscope/session.h"

struct out {
	char *rows, *sum;
	size_t rows_len, sum_len;
	uint64_t passes;
};

static struct out run(const char *const *paths, uint32_t n, bool model_first)
{
	struct vms_error err = { 0 };
	struct vms_session_opts o = { 0 };
	struct vms_session *s = vms_session_open(paths, n, &o, &err);
	if (!s)
		fail_msg("open: %s", err.msg);
	if (model_first && vms_session_build_model(s, &err) != 0)
		fail_msg("model: %s", err.msg);
	struct vms_sinks sinks;
	struct vms_serve_rows_acc *a = vms_serve_rows_begin(s, &sinks, false, &err);
	if (!a)
		fail_msg("begin: %s", err.msg);
	assert_true(sinks.reset_with_observer);
	if (vms_session_run(s, &sinks, NULL, NULL, &err) != 0)
		fail_msg("run: %s", err.msg);
	struct out r = { 0 };
	FILE *f = open_memstream(&r.rows, &r.rows_len);
	assert_non_null(f);
	vms_serve_rows_write(a, s, f);
	assert_int_equal(fclose(f), 0);
	f = open_memstream(&r.sum, &r.sum_len);
	assert_non_null(f);
	assert_int_equal(vms_serve_rows_write_summary(a, s, f), 0);
	assert_int_equal(fclose(f), 0);
	r.passes = vms_session_passes(s);
	vms_serve_rows_free(a);
	vms_session_free(s);
	return r;
}

static void same(const char *const *paths, uint32_t n, uint64_t single_passes)
{
	struct out one = run(paths, n, false), two = run(paths, n, true);
	assert_int_equal(one.passes, single_passes);
	assert_int_equal(two.passes, 2);
	assert_true(one.rows_len > 2 && one.sum_len > 64);
	assert_int_equal(one.rows_len, two.rows_len);
	assert_memory_equal(one.rows, two.rows, one.rows_len);
	assert_int_equal(one.sum_len, two.sum_len);
	assert_memory_equal(one.sum, two.sum, one.sum_len);
	free(one.rows);
	free(one.sum);
	free(two.rows);
	free(two.sum);
}

static void test_synth_read_once(void **state)
{
	(void)state;
	const char *paths[2];
	vms_test_synth_pair("rows-pass", 11, 30000, paths);
	same(paths, 2, 1);
}

static void test_kvm_hip24_read_again(void **state)
{
	(void)state;
	const char *paths[2] = { vms_test_trace("kvm-hip24/host.dat"),
				 vms_test_trace("kvm-hip24/guest-Salamander4.dat") };
	VMS_REQUIRE_TRACE(paths[0]);
	same(paths, 2, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synth_read_once),
		cmocka_unit_test(test_kvm_hip24_read_again),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
