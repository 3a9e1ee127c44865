/* The trace.dat reader on ../shared/traces/local/sched-syscalls-2cpu.dat (v7 zstd, 2.43 M
 * events), and on the same trace rewritten by trace-cmd as v6 and as uncompressed v7.
 *
 * Expected values come from trace-cmd 3.1.6, not from this reader:
 *   trace-cmd report -t sched-syscalls-2cpu.dat > r.txt
 *   perl -ne 'if (/\[(\d+)\]\s+(\d+)\.(\d+): ([^:\s]+):/) { $c{$4}++; $cpu{$1}++;
 *     $t=$2*1000000000+$3; $f{$1}//=$t; $l{$1}=$t } END { ... }' r.txt
 * (report prints in time order, so the first/last per CPU are that CPU's extremes);
 *   trace-cmd dump --options sched-syscalls-2cpu.dat   (TRACEID, CPUCOUNT, clock)
 * The report takes ~11 s, too slow for every test run, hence hard-coded here. */
#include "td_testutil.h"

static const struct {
	const char *name;
	uint64_t count;
} expected[] = {
	{"hrtimer_expire_entry", 10707}, {"hrtimer_expire_exit", 10707},
	{"hrtimer_start", 11462},        {"irq_handler_entry", 22281},
	{"irq_handler_exit", 22281},     {"sched_switch", 62057},
	{"sched_wakeup", 39244},         {"sched_waking", 39248},
	{"sys_enter", 1108206},          {"sys_exit", 1108210},
};

static struct td_counts want;

static void fill_want(void)
{
	memset(&want, 0, sizeof want);
	for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
		snprintf(want.name[i], sizeof want.name[i], "%s", expected[i].name);
		want.count[i] = expected[i].count;
		want.nnames++;
		want.total += expected[i].count;
	}
	want.per_cpu[0] = 1172745;
	want.first[0] = 433465564075ull;
	want.last[0] = 453821361257ull;
	want.per_cpu[1] = 1261658;
	want.first[1] = 433466236291ull;
	want.last[1] = 453821021452ull;
}

static const char *local_path(void)
{
	return vms_test_trace("local/sched-syscalls-2cpu.dat");
}

static void check_meta(struct vms_source *src, const char *format)
{
	const struct vms_trace_meta *m = &src->meta;
	assert_string_equal(m->format, format);
	assert_int_equal(m->nr_cpus, 2);
	assert_string_equal(m->clock, "local");
	assert_true(m->ts_in_ns);
	assert_true(m->has_trace_id);
	assert_int_equal(m->trace_id, 0x5CBC382B0E6ED102ull);
	assert_false(m->has_tsc2nsec);
	assert_null(m->timeshift);
	assert_int_equal(m->nr_guests, 0);
	assert_int_equal(src->ops->nr_streams(src), 2);
	assert_true(m->nr_comms > 0);
	assert_int_equal(m->lost_events, 0);
	assert_false(m->lost_events_unknown);
}

static void test_counts_v7_zstd(void **state)
{
	(void)state;
	const char *path = local_path();
	VMS_REQUIRE_TRACE(path);
	struct vms_error err = {0};
	struct vms_source *src = vms_tracedat_open(path, &err);
	if (!src)
		fail_msg("%s", err.msg);
	check_meta(src, "trace.dat v7 zstd");
	struct td_counts got;
	assert_int_equal(td_read_all(src, &got), 0);
	td_assert_same(&got, &want);
	/* rewind: the second pass sees the same events (the model pass, then analysis) */
	assert_int_equal(src->ops->rewind(src), 0);
	struct td_counts again;
	assert_int_equal(td_read_all(src, &again), 0);
	td_assert_same(&again, &want);
	vms_source_close(src);
}

/* The same with the prefetch thread off (VMS_TRACEDAT_THREADS=0): the reader then claims
 * and decompresses every chunk itself. */
static void test_counts_single_thread(void **state)
{
	(void)state;
	const char *path = local_path();
	VMS_REQUIRE_TRACE(path);
	setenv("VMS_TRACEDAT_THREADS", "0", 1);
	struct vms_error err = {0};
	struct vms_source *src = vms_tracedat_open(path, &err);
	unsetenv("VMS_TRACEDAT_THREADS");
	if (!src)
		fail_msg("%s", err.msg);
	struct td_counts got;
	assert_int_equal(td_read_all(src, &got), 0);
	td_assert_same(&got, &want);
	vms_source_close(src);
}

/* The first sched_switch of each CPU, as `trace-cmd report` prints them:
 *   bash-10086 [000] 433.466450558: sched_switch: bash:10086 [120] S ==> swapper/0:0 [120]
 *   bash-10088 [001] 433.468250153: sched_switch: bash:10088 [120] S ==> bash:10089 [120] */
static void test_sched_switch_fields(void **state)
{
	(void)state;
	const char *path = local_path();
	VMS_REQUIRE_TRACE(path);
	struct vms_error err = {0};
	struct vms_source *src = vms_tracedat_open(path, &err);
	if (!src)
		fail_msg("%s", err.msg);
	static const struct {
		uint64_t ts;
		int32_t prev, next;
		const char *pc, *nc;
	} first[2] = {
		{433466450558ull, 10086, 0, "bash", "swapper/0"},
		{433468250153ull, 10088, 10089, "bash", "bash"},
	};
	for (uint32_t s = 0; s < 2; s++) {
		struct vms_event ev;
		int r;
		while ((r = src->ops->next(src, s, &ev)) == 1 && ev.kind != VMS_K_SCHED_SWITCH) {
			assert_int_equal(ev.f[0], 0); /* kinds without fields: zeros */
			assert_null(ev.s[0]);
		}
		assert_int_equal(r, 1);
		assert_int_equal(ev.cpu, s);
		assert_int_equal(ev.ts, first[s].ts);
		assert_string_equal(src->meta.type_names[ev.type], "sched:sched_switch");
		assert_int_equal(ev.tid, first[s].prev);
		assert_int_equal((int32_t)ev.f[0], first[s].prev);
		assert_int_equal(ev.f[1], 1); /* S = TASK_INTERRUPTIBLE */
		assert_int_equal((int32_t)ev.f[2], first[s].next);
		assert_int_equal(ev.f[3], 120);
		assert_int_equal(ev.f[4], 120);
		assert_non_null(ev.s[0]);
		assert_non_null(ev.s[1]);
		assert_string_equal(ev.s[0], first[s].pc);
		assert_string_equal(ev.s[1], first[s].nc);
		char buf[256];
		assert_int_equal(src->ops->format_event(src, s, buf, sizeof buf), 0);
		assert_non_null(strstr(buf, "sched_switch"));
		assert_non_null(strstr(buf, "==>"));
	}
	vms_source_close(src);
}

/* set_wanted: unwanted kinds are still produced (kind, type, ts, tid, cpu) but not decoded. */
static void test_set_wanted(void **state)
{
	(void)state;
	const char *path = local_path();
	VMS_REQUIRE_TRACE(path);
	struct vms_error err = {0};
	struct vms_source *src = vms_tracedat_open(path, &err);
	if (!src)
		fail_msg("%s", err.msg);
	bool wanted[VMS_K_COUNT] = {0};
	wanted[VMS_K_SCHED_WAKEUP] = true;
	src->ops->set_wanted(src, wanted);
	uint64_t switches = 0, wakeups = 0;
	struct vms_event ev;
	int r;
	while ((r = src->ops->next(src, 0, &ev)) == 1) {
		if (ev.kind == VMS_K_SCHED_SWITCH) {
			switches++;
			assert_null(ev.s[0]);
			assert_int_equal(ev.f[0], 0);
			assert_true(ev.tid >= 0);
		} else if (ev.kind == VMS_K_SCHED_WAKEUP) {
			/* the first one, as trace-cmd report prints it:
			 * <idle>-0 [000] 433.473427080: sched_wakeup: bash:10088 [120] CPU:000 */
			if (wakeups++ == 0) {
				assert_int_equal(ev.ts, 433473427080ull);
				assert_int_equal(ev.tid, 0);
				assert_int_equal(ev.f[0], 10088);
				assert_int_equal(ev.f[1], 0);
				assert_int_equal(ev.f[2], 120);
				assert_non_null(ev.s[0]);
				assert_string_equal(ev.s[0], "bash");
			}
			assert_non_null(ev.s[0]);
		}
	}
	assert_int_equal(r, 0);
	assert_true(switches > 0 && wakeups > 0);
	vms_source_close(src);
}

/* trace-cmd itself rewrites the trace as v6 and as uncompressed v7: the same events. */
static void check_converted(const char *args, const char *name, const char *format)
{
	const char *path = local_path();
	VMS_REQUIRE_TRACE(path);
	if (!td_have_trace_cmd()) {
		print_message("# trace-cmd missing: skipped\n");
		skip();
	}
	const char *dir = td_tmpdir(name);
	char out[4200];
	snprintf(out, sizeof out, "%s/%s.dat", dir, name);
	if (td_run("trace-cmd convert %s -i '%s' -o '%s' >/dev/null 2>&1", args, path, out) != 0)
		fail_msg("trace-cmd convert %s failed", args);
	struct vms_error err = {0};
	struct vms_source *src = vms_tracedat_open(out, &err);
	if (!src)
		fail_msg("%s", err.msg);
	check_meta(src, format);
	struct td_counts got;
	assert_int_equal(td_read_all(src, &got), 0);
	td_assert_same(&got, &want);
	vms_source_close(src);
	unlink(out);
}

static void test_v6(void **state)
{
	(void)state;
	check_converted("--file-version 6", "local-v6", "trace.dat v6 none");
}

static void test_v7_none(void **state)
{
	(void)state;
	check_converted("--compression none", "local-v7-none", "trace.dat v7 none");
}

static void test_not_a_trace(void **state)
{
	(void)state;
	const char *dir = td_tmpdir("tracedat-not");
	char p[4200];
	snprintf(p, sizeof p, "%s/x.xml", dir);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs("<trace></trace>\n", f);
	fclose(f);
	struct vms_error err = {0};
	assert_null(vms_tracedat_open(p, &err));
	assert_int_equal(err.status, 0);
	assert_null(vms_tracedat_open(dir, &err)); /* a directory (CTF) is not ours either */
	assert_int_equal(err.status, 0);
	/* right magic, unknown version: ours, damaged */
	f = fopen(p, "w");
	assert_non_null(f);
	fwrite("\x17\x08\x44tracing9\0\0\x08\0\x10\0\0", 1, 18, f);
	fclose(f);
	assert_null(vms_tracedat_open(p, &err));
	td_assert_error_shape(&err, p);
}

int main(void)
{
	fill_want();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_v7_zstd),
		cmocka_unit_test(test_counts_single_thread),
		cmocka_unit_test(test_sched_switch_fields),
		cmocka_unit_test(test_set_wanted),
		cmocka_unit_test(test_v6),
		cmocka_unit_test(test_v7_none),
		cmocka_unit_test(test_not_a_trace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
