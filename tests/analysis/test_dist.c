/* vms_dist against an independent computation: the nearest-rank percentile of a sorted
 * copy of the samples (rank = ceil(p/100 * n), done here in integers on tenths of a
 * percent). Exact up to 4096 samples, within 1% beyond. A merge of distributions against
 * the same samples added one by one (exits.c makes each guest's table so). And the exit reason tables against
 * the values of the kernel's uapi headers (arch/x86/include/uapi/asm/vmx.h, svm.h). */
#include "an_test.h"
#include "analysis/analysis_internal.h"

static uint64_t lcg_state;
static uint64_t lcg(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return lcg_state >> 11;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* p in tenths of a percent */
static uint64_t nearest_rank(const uint64_t *sorted, uint64_t n, uint64_t p10)
{
	uint64_t rank = (p10 * n + 999) / 1000;
	if (rank < 1)
		rank = 1;
	return sorted[rank - 1];
}

static const uint64_t ps[] = {0, 1, 5, 100, 250, 500, 750, 900, 950, 990, 999, 1000};

static void check(uint64_t n, uint64_t (*gen)(void), double tol)
{
	uint64_t *v = malloc(n * sizeof *v);
	assert_non_null(v);
	struct vms_dist *d = vms_dist_new();
	uint64_t sum = 0;
	for (uint64_t i = 0; i < n; i++) {
		v[i] = gen();
		sum += v[i];
		vms_dist_add(d, v[i]);
	}
	qsort(v, n, sizeof *v, cmp);
	assert_int_equal(vms_dist_count(d), n);
	assert_int_equal(vms_dist_sum(d), sum);
	assert_int_equal(vms_dist_min(d), v[0]);
	assert_int_equal(vms_dist_max(d), v[n - 1]);
	for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
		uint64_t want = nearest_rank(v, n, ps[i]);
		uint64_t got = vms_dist_percentile(d, (double)ps[i] / 10.0);
		if (tol == 0) {
			assert_int_equal(got, want);
		} else {
			double err = want ? ((double)got - (double)want) / (double)want : (double)got;
			if (err < -tol || err > tol)
				fail_msg("n=%llu p=%.1f: got %llu want %llu", (unsigned long long)n,
					 ps[i] / 10.0, (unsigned long long)got, (unsigned long long)want);
		}
	}
	vms_dist_free(d);
	free(v);
}

static uint64_t gen_uniform(void) { return lcg() % 1000000; }
static uint64_t gen_small(void) { return lcg() % 100; }
static uint64_t gen_logwide(void)
{
	/* log-uniform over [1, 2^40): exercises many powers of two */
	unsigned e = (unsigned)(lcg() % 40);
	return (1ull << e) + lcg() % (1ull << e);
}

static void test_small_known(void **state)
{
	(void)state;
	struct vms_dist *d = vms_dist_new();
	assert_int_equal(vms_dist_percentile(d, 50), 0);
	assert_int_equal(vms_dist_count(d), 0);
	for (uint64_t i = 1; i <= 10; i++)
		vms_dist_add(d, 11 - i); /* 10..1, unsorted input */
	/* nearest rank on 1..10: p0 -> 1, p50 -> rank 5 -> 5, p90 -> 9, p91 -> rank 10 -> 10 */
	assert_int_equal(vms_dist_percentile(d, 0), 1);
	assert_int_equal(vms_dist_percentile(d, 50), 5);
	assert_int_equal(vms_dist_percentile(d, 90), 9);
	assert_int_equal(vms_dist_percentile(d, 91), 10);
	assert_int_equal(vms_dist_percentile(d, 100), 10);
	assert_int_equal(vms_dist_percentile(d, 250), 10); /* clamped */
	assert_int_equal(vms_dist_percentile(d, -3), 1);
	vms_dist_free(d);
}

static void test_exact(void **state)
{
	(void)state;
	lcg_state = 1;
	check(1000, gen_uniform, 0);
	check(4096, gen_uniform, 0);
	/* the sort of the kept samples (a radix sort by the bytes that differ): values over
	 * many powers of two, values spanning all 53 bits, and a few (under its cut-over) */
	check(3000, gen_logwide, 0);
	check(500, lcg, 0);
	check(20, gen_uniform, 0);
}

static void test_histogram(void **state)
{
	(void)state;
	lcg_state = 7;
	check(100000, gen_uniform, 0.01);
	check(100000, gen_logwide, 0.01);
	check(50000, gen_small, 0); /* values < 128 have exact buckets */
}

/* parts of sizes na and nb merged into d (a third part empty), against one dist that took
 * every sample: the same count, sum, min, max, exactness and percentiles */
static void merge_case(uint32_t na, uint32_t nb, uint64_t (*gen)(void))
{
	struct vms_dist *all = vms_dist_new(), *a = vms_dist_new(), *b = vms_dist_new();
	struct vms_dist *none = vms_dist_new();
	assert_non_null(all), assert_non_null(a), assert_non_null(b), assert_non_null(none);
	for (uint32_t i = 0; i < na + nb; i++) {
		uint64_t v = gen();
		vms_dist_add(all, v);
		vms_dist_add(i < na ? a : b, v);
	}
	an_dist_merge(a, none);
	an_dist_merge(a, b);
	assert_int_equal(vms_dist_count(a), na + nb);
	assert_int_equal(vms_dist_count(a), vms_dist_count(all));
	assert_int_equal(vms_dist_sum(a), vms_dist_sum(all));
	assert_int_equal(vms_dist_min(a), vms_dist_min(all));
	assert_int_equal(vms_dist_max(a), vms_dist_max(all));
	assert_int_equal(vms_dist_exact(a), na + nb <= 4096);
	assert_int_equal(vms_dist_exact(a), vms_dist_exact(all));
	for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++)
		assert_int_equal(vms_dist_percentile(a, ps[k] / 10.0),
				 vms_dist_percentile(all, ps[k] / 10.0));
	vms_dist_free(all), vms_dist_free(a), vms_dist_free(b), vms_dist_free(none);
}

static void test_merge(void **state)
{
	(void)state;
	lcg_state = 3;
	merge_case(0, 0, gen_uniform);
	merge_case(0, 700, gen_uniform);      /* into an empty one */
	merge_case(700, 0, gen_uniform);
	merge_case(1000, 3096, gen_logwide);  /* exact, 4096 in all: still exact */
	merge_case(1000, 3097, gen_logwide);  /* one more: a histogram */
	merge_case(5000, 300, gen_uniform);   /* a histogram takes exact samples */
	merge_case(300, 5000, gen_logwide);   /* exact takes a histogram's counts */
	merge_case(6000, 9000, gen_small);    /* two histograms, values < 128 exact */
	merge_case(6000, 9000, gen_logwide);
}

static void test_exit_names(void **state)
{
	(void)state;
	/* VMX (isa 1): EXIT_REASON_* of uapi vmx.h */
	assert_string_equal(vms_exit_reason_name(1, 0), "EXCEPTION_NMI");
	assert_string_equal(vms_exit_reason_name(1, 1), "EXTERNAL_INTERRUPT");
	assert_string_equal(vms_exit_reason_name(1, 7), "INTERRUPT_WINDOW");
	assert_string_equal(vms_exit_reason_name(1, 10), "CPUID");
	assert_string_equal(vms_exit_reason_name(1, 12), "HLT");
	assert_string_equal(vms_exit_reason_name(1, 30), "IO_INSTRUCTION");
	assert_string_equal(vms_exit_reason_name(1, 31), "MSR_READ");
	assert_string_equal(vms_exit_reason_name(1, 32), "MSR_WRITE");
	assert_string_equal(vms_exit_reason_name(1, 48), "EPT_VIOLATION");
	assert_string_equal(vms_exit_reason_name(1, 49), "EPT_MISCONFIG");
	assert_string_equal(vms_exit_reason_name(1, 52), "PREEMPTION_TIMER");
	assert_string_equal(vms_exit_reason_name(1, 74), "BUS_LOCK");
	/* VMX_EXIT_REASONS_FAILED_VMENTRY (bit 31) | INVALID_STATE (33) */
	assert_string_equal(vms_exit_reason_name(1, 0x80000021u), "INVALID_STATE");
	assert_null(vms_exit_reason_name(1, 5));
	assert_null(vms_exit_reason_name(1, 35));
	assert_null(vms_exit_reason_name(1, 200));
	/* SVM (isa 2): SVM_EXIT_* of uapi svm.h */
	assert_string_equal(vms_exit_reason_name(2, 0x060), "interrupt");
	assert_string_equal(vms_exit_reason_name(2, 0x04e), "PF excp");
	assert_string_equal(vms_exit_reason_name(2, 0x078), "hlt");
	assert_string_equal(vms_exit_reason_name(2, 0x07b), "io");
	assert_string_equal(vms_exit_reason_name(2, 0x07c), "msr");
	assert_string_equal(vms_exit_reason_name(2, 0x081), "hypercall");
	assert_string_equal(vms_exit_reason_name(2, 0x400), "npf");
	assert_string_equal(vms_exit_reason_name(2, 0xffffffffu), "invalid_guest_state");
	assert_null(vms_exit_reason_name(2, 0x999));
	assert_null(vms_exit_reason_name(0, 12));
	assert_null(vms_exit_reason_name(3, 12));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_known),
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_exit_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
