/* The trace.dat reader against `trace-cmd report` on a trace recorded by the test itself:
 * the top buffer (sched events, task_rename) plus an instance with a tiny buffer that
 * overflows (raw syscalls: missed events), extracted with `trace-cmd extract -t -a` (v7
 * zstd) and rewritten by `trace-cmd convert` as v6 and as uncompressed v7.
 *
 * Needs root and trace-cmd (CI has them; see ../shared/README.md); mounts tracefs itself
 * when it is not mounted yet (a fresh machine) and unmounts it again afterwards; skips
 * otherwise. Every expected value comes from trace-cmd's report of the same file. */
#include "td_testutil.h"

#include <sys/mount.h>
#include <sys/stat.h>

#define TRACEFS "/sys/kernel/tracing"

static char dir[4096], inst[64], recorded[4200];
static bool we_mounted;

static bool tracefs_ready(void)
{
	struct stat st;
	return stat(TRACEFS "/instances", &st) == 0 && access(TRACEFS "/set_event", W_OK) == 0;
}

static bool can_record(void)
{
	if (geteuid() != 0 || !td_have_trace_cmd())
		return false;
	if (!tracefs_ready() && mount("nodev", TRACEFS, "tracefs", 0, NULL) == 0)
		we_mounted = true;
	return tracefs_ready();
}

static int teardown(void **state)
{
	(void)state;
	if (we_mounted && umount(TRACEFS) != 0)
		print_message("# could not unmount the tracefs this test mounted at " TRACEFS "\n");
	return 0;
}

static int setup(void **state)
{
	(void)state;
	if (!can_record())
		return 0;
	snprintf(dir, sizeof dir, "%s", td_tmpdir("tracedat-record"));
	snprintf(inst, sizeof inst, "vmscope-test-%d", (int)getpid());
	snprintf(recorded, sizeof recorded, "%s/rec.dat", dir);
	int r = td_run(
		"set -e; T=" TRACEFS "; I=$T/instances/%s;"
		"echo 0 > $T/tracing_on; echo > $T/trace; echo 512 > $T/buffer_size_kb;"
		"echo 'sched:sched_switch sched:sched_wakeup sched:sched_wakeup_new "
		"sched:sched_process_fork sched:sched_process_exec sched:sched_process_exit "
		"task:task_rename' > $T/set_event;"
		"mkdir -p $I; echo 0 > $I/tracing_on; echo 8 > $I/buffer_size_kb;"
		"echo 'raw_syscalls:sys_enter raw_syscalls:sys_exit' > $I/set_event;"
		"echo 1 > $I/tracing_on; echo 1 > $T/tracing_on;"
		"for i in $(seq 1 20); do /bin/true; "
		"  sh -c 'printf renamed-xyz > /proc/self/comm; sleep 0.01'; done;"
		"echo 0 > $T/tracing_on; echo 0 > $I/tracing_on;"
		"trace-cmd extract --date -t -a -o '%s' >/dev/null 2>&1;"
		/* (trace-cmd extract may already have removed the instance) */
		"echo > $T/set_event; (echo > $I/set_event; rmdir $I) 2>/dev/null || true;"
		"trace-cmd convert --file-version 6 -i '%s' -o '%s/rec-v6.dat' >/dev/null 2>&1;"
		"trace-cmd convert --compression none -i '%s' -o '%s/rec-none.dat' >/dev/null 2>&1",
		inst, recorded, recorded, dir, recorded, dir);
	if (r != 0) {
		td_run("rmdir " TRACEFS "/instances/%s 2>/dev/null", inst);
		recorded[0] = '\0';
	}
	return 0;
}

static void check_file(const char *name, const char *format_prefix)
{
	if (!recorded[0]) {
		print_message("# cannot record with tracefs + trace-cmd here (needs root): skipped\n");
		skip();
	}
	char path[4300];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	struct vms_error err = {0};
	struct vms_source *src = vms_tracedat_open(path, &err);
	if (!src)
		fail_msg("%s", err.msg);
	const struct vms_trace_meta *m = &src->meta;
	assert_memory_equal(m->format, format_prefix, strlen(format_prefix));
	char bufs[128];
	snprintf(bufs, sizeof bufs, ", buffers: top %s", inst);
	/* (a copy: GCC's LTO takes m->format for an empty region and warns on strstr) */
	char fmt[sizeof m->format];
	memcpy(fmt, m->format, sizeof fmt);
	fmt[sizeof fmt - 1] = 0;
	assert_non_null(strstr(fmt, bufs));
	assert_string_equal(m->clock, "local");
	assert_true(m->ts_in_ns);
	assert_true(m->nr_comms > 0);

	/* streams: the top buffer's CPUs first, then the instance's */
	uint32_t ns = src->ops->nr_streams(src);
	assert_true(ns >= 2 && ns % 2 == 0);
	for (uint32_t s = 0; s < ns; s++)
		assert_string_equal(vms_tracedat_stream_buffer(src, s), s < ns / 2 ? "" : inst);

	/* DATE (extract --date): `trace-cmd dump --options` prints the value on the line after
	 * "[Option DATE, N bytes]"; the reader keeps it in ns (trace-cmd: microseconds) */
	char cmd0[8400];
	snprintf(cmd0, sizeof cmd0, "trace-cmd dump --options '%.8000s' 2>/dev/null | "
		 "grep -A1 'Option DATE' | tail -1", path);
	FILE *dp = popen(cmd0, "r");
	assert_non_null(dp);
	char dline[128] = "";
	assert_non_null(fgets(dline, sizeof dline, dp));
	pclose(dp);
	assert_true(m->has_date);
	assert_int_equal(m->date_offset_ns, strtoll(dline, NULL, 0) * 1000);

	struct td_counts got, want;
	assert_int_equal(td_read_all(src, &got), 0);
	if (!td_report_counts(path, &want))
		fail_msg("trace-cmd report %s failed", path);
	td_assert_same(&got, &want);
	/* missed events: the stored counts and where they are flagged */
	assert_true(want.lost > 0);
	assert_int_equal(got.lost, want.lost);
	assert_int_equal(got.lost_marks, want.lost_marks);
	assert_false(m->lost_events_unknown);

	/* kinds with strings: task_rename -> THREAD_NAME "renamed-xyz"; fork child comm */
	assert_int_equal(src->ops->rewind(src), 0);
	uint64_t renames = 0, named = 0, forks = 0, execs = 0, switches = 0;
	for (uint32_t s = 0; s < ns; s++) {
		struct vms_event ev;
		while (src->ops->next(src, s, &ev) == 1) {
			if (ev.kind == VMS_K_THREAD_NAME) {
				/* task_rename only: exec is a kind of its own */
				assert_non_null(ev.s[0]);
				assert_true((int32_t)ev.f[0] > 0);
				renames++;
				named += strcmp(ev.s[0], "renamed-xyz") == 0;
			} else if (ev.kind == VMS_K_PROCESS_EXEC) {
				/* the loop runs seq, sleep, ...: a path, and the pid of the exec */
				assert_non_null(ev.s[0]);
				assert_non_null(strchr(ev.s[0], '/'));
				assert_true((int32_t)ev.f[0] > 0);
				assert_int_equal((int32_t)ev.f[0], ev.tid);
				execs++;
			} else if (ev.kind == VMS_K_PROCESS_FORK) {
				assert_non_null(ev.s[0]);
				assert_true((int32_t)ev.f[1] > (int32_t)0);
				forks++;
			} else if (ev.kind == VMS_K_SCHED_SWITCH) {
				assert_non_null(ev.s[0]);
				assert_non_null(ev.s[1]);
				assert_int_equal((int32_t)ev.f[0], ev.tid);
				switches++;
			}
		}
	}
	assert_int_equal(renames, td_count_of(&want, "task_rename"));
	/* the loop's `printf renamed-xyz > /proc/self/comm`, as many as trace-cmd shows */
	char cmd[8400];
	snprintf(cmd, sizeof cmd, "trace-cmd report '%.8000s' 2>/dev/null | grep -c "
		 "'task_rename:.*newcomm=renamed-xyz '", path);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	unsigned long long want_named = 0;
	assert_int_equal(fscanf(p, "%llu", &want_named), 1);
	pclose(p);
	assert_true(named > 0);
	assert_int_equal(named, want_named);
	assert_int_equal(forks, td_count_of(&want, "sched_process_fork"));
	assert_true(execs > 0); /* /bin/true, sh and sleep, 20 times */
	assert_int_equal(execs, td_count_of(&want, "sched_process_exec"));
	assert_int_equal(switches, td_count_of(&want, "sched_switch"));
	vms_source_close(src);
}

static void test_v7_zstd(void **state)
{
	(void)state;
	check_file("rec.dat", "trace.dat v7 zstd");
}

static void test_v6(void **state)
{
	(void)state;
	check_file("rec-v6.dat", "trace.dat v6 none");
}

static void test_v7_none(void **state)
{
	(void)state;
	check_file("rec-none.dat", "trace.dat v7 none");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v7_zstd),
		cmocka_unit_test(test_v6),
		cmocka_unit_test(test_v7_none),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
