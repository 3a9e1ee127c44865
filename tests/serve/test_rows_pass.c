/* The page's rows and summaries (lib/session/serve_rows_acc.c's accumulator, which `vmscope
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

#include "vmscope/analysis.h"
#include "vmscope/observe.h"
#include "vmscope/serve.h"
#include "vmscope/session.h"

struct out {
	char *rows, *sum;
	size_t rows_len, sum_len;
	uint64_t passes;
	uint64_t teed, teed_ended, counted, counted_ended;   /* exits */
};

/* The exits the rows' thread gives another consumer (vms_serve_rows_tee_exits), counted
 * since the pass's start (a reset's pass again from 0: the rows take back the first pass). */
struct tee {
	uint64_t n, ended;
};

static void tee_exit(void *ctx, const struct vms_obs_exit *o)
{
	struct tee *t = ctx;
	t->n++;
	t->ended += o->how == VMS_EXIT_ENDED;
}

static void tee_reset(void *ctx, const struct vms_model *m)
{
	(void)m;
	*(struct tee *)ctx = (struct tee){ 0 };
}

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
	struct vms_serve_rows_acc *a = vms_serve_rows_begin(s, &sinks, &err);
	if (!a)
		fail_msg("begin: %s", err.msg);
	assert_true(sinks.reset_with_observer);
	struct tee tee = { 0 };
	vms_serve_rows_tee_exits(a, tee_exit, &tee);
	struct vms_observer to = { .ctx = &tee, .reset = tee_reset };
	assert_int_equal(vms_session_observe(s, &to), 0);
	if (vms_session_run(s, &sinks, NULL, NULL, &err) != 0)
		fail_msg("run: %s", err.msg);
	struct out r = { .teed = tee.n, .teed_ended = tee.ended };
	/* the analysis's own exit tables, independently of the rows */
	struct vms_analysis *an = vms_session_analysis(s);
	for (uint32_t i = 0; i < vms_analysis_nr_vcpus(an); i++) {
		const struct vms_vcpu_stats *vs = vms_analysis_vcpu(an, i);
		for (uint32_t k = 0; k < vs->nr_exits; k++) {
			r.counted += vs->exits[k].count;
			r.counted_ended += vms_dist_count(vs->exits[k].dist);
		}
	}
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

static void same_bytes(const struct out *a, const struct out *b)
{
	assert_int_equal(a->rows_len, b->rows_len);
	assert_memory_equal(a->rows, b->rows, a->rows_len);
	assert_int_equal(a->sum_len, b->sum_len);
	assert_memory_equal(a->sum, b->sum, a->sum_len);
}

/* Each route, with the accumulator's second stage (its thread, the default) and without
 * (VMS_SERVE_ROWS_THREADS=0: every record played at once): four runs, the same bytes. */
static void same(const char *const *paths, uint32_t n, uint64_t single_passes)
{
	struct out one = run(paths, n, false), two = run(paths, n, true);
	setenv("VMS_SERVE_ROWS_THREADS", "0", 1);
	struct out one0 = run(paths, n, false), two0 = run(paths, n, true);
	unsetenv("VMS_SERVE_ROWS_THREADS");
	assert_int_equal(one.passes, single_passes);
	assert_int_equal(one0.passes, single_passes);
	assert_int_equal(two.passes, 2);
	assert_true(one.rows_len > 2 && one.sum_len > 64);
	/* (pCPU rows too: the accumulator's own fused view) */
	assert_non_null(strstr(one.rows, "\"kind\":\"pcpu\""));
	same_bytes(&one, &two);
	same_bytes(&one, &one0);
	struct out *each[] = { &one, &two, &one0, &two0 };
	for (unsigned i = 0; i < 4; i++) {
		assert_true(each[i]->counted > 100);
		assert_int_equal(each[i]->teed, each[i]->counted);
		assert_int_equal(each[i]->teed_ended, each[i]->counted_ended);
	}
	same_bytes(&one, &two0);
	struct out *all[] = { &one, &two, &one0, &two0 };
	for (unsigned i = 0; i < 4; i++) {
		free(all[i]->rows);
		free(all[i]->sum);
	}
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
