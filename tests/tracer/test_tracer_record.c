/* Recording with the tracer library, checked by two independent readers: babeltrace2 (run
 * at test time; its text output parsed) and vmscope's CTF reader. Each scenario runs in a
 * child process (the tracer is process-wide state, and some scenarios end the process):
 * producers emit vmst_test_seq(thread, seq) for known (thread, seq) pairs, and the readers
 * must find each exactly once, with drop counts adding up when buffers overflow. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "trace-qemu-style.h"
#ifndef VMST_NO_READER
#include "vmscope/source.h"
#endif

#define MAXT 8

/* ---- the producers (in the child) ---- */

struct prod {
	uint32_t t, n;
};

static void *produce(void *arg)
{
	struct prod *p = arg;
	char name[16];
	snprintf(name, sizeof name, "vmst-prod-%u", p->t);
	pthread_setname_np(pthread_self(), name);
	for (uint32_t i = 0; i < p->n; i++)
		trace_vmst_test_seq(p->t, i);
	return NULL;
}

static void run_threads(uint32_t nt, uint32_t per)
{
	pthread_t th[MAXT];
	struct prod p[MAXT];
	for (uint32_t t = 0; t < nt; t++) {
		p[t] = (struct prod){t, per};
		if (pthread_create(&th[t], NULL, produce, &p[t]))
			_exit(90);
	}
	for (uint32_t t = 0; t < nt; t++)
		pthread_join(th[t], NULL);
}

static void must_init(const char *config)
{
	if (vmst_init(config) != 0)
		_exit(91);
}

static int run_child(void (*fn)(const char *dir), const char *dir)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fn(dir);
		exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

/* ---- what the readers found ---- */

struct found {
	uint32_t nt, per;
	uint8_t seen[MAXT][20000];
	uint64_t events, dupes, strays, discarded;
	int32_t tid[MAXT];
	bool tid_mixed;
};

static void found_init(struct found *f, uint32_t nt, uint32_t per)
{
	memset(f, 0, sizeof *f);
	f->nt = nt;
	f->per = per;
	for (uint32_t t = 0; t < MAXT; t++)
		f->tid[t] = -1;
}

static void mark(struct found *f, uint64_t t, uint64_t s, int32_t tid)
{
	if (t >= f->nt || s >= f->per) {
		f->strays++;
		return;
	}
	if (f->seen[t][s]++)
		f->dupes++;
	f->events++;
	if (f->tid[t] == -1)
		f->tid[t] = tid;
	else if (f->tid[t] != tid)
		f->tid_mixed = true;
}

static uint64_t count_missing(const struct found *f)
{
	uint64_t m = 0;
	for (uint32_t t = 0; t < f->nt; t++)
		for (uint32_t s = 0; s < f->per; s++)
			m += f->seen[t][s] == 0;
	return m;
}

/* babeltrace2 DIR: "... vmst_test_seq: { cpu_id = C, vtid = V }, { thread = T, seq = S }"
 * on stdout, "WARNING: Tracer discarded N events ..." on stderr. */
static void read_babeltrace(const char *dir, struct found *f)
{
	if (system("babeltrace2 --version >/dev/null 2>&1") != 0) {
		print_message("# babeltrace2 is not installed (Debian: babeltrace2): skipped\n");
		skip();
	}
	char cmd[8300], errf[4200];
	snprintf(errf, sizeof errf, "%s.bt-stderr", dir);
	snprintf(cmd, sizeof cmd, "babeltrace2 '%s' 2>'%s'", dir, errf);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char line[1024];
	while (fgets(line, sizeof line, p)) {
		const char *e = strstr(line, " vmst_test_seq: ");
		if (!e) {
			f->strays++;
			continue;
		}
		const char *v = strstr(e, "vtid = ");
		const char *a = strstr(e, "{ thread = ");
		unsigned long long t, s;
		int tid;
		if (!v || !a || sscanf(v, "vtid = %d", &tid) != 1 ||
		    sscanf(a, "{ thread = %llu, seq = %llu }", &t, &s) != 2) {
			f->strays++;
			continue;
		}
		mark(f, t, s, tid);
	}
	int st = pclose(p);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) != 0) {
		char c2[8400];
		snprintf(c2, sizeof c2, "cat '%s' >&2", errf);
		assert_int_equal(system(c2), 0);
	}
	assert_int_equal(WEXITSTATUS(st), 0);
	FILE *e = fopen(errf, "r");
	assert_non_null(e);
	while (fgets(line, sizeof line, e)) {
		const char *d = strstr(line, "Tracer discarded ");
		unsigned long long n;
		if (d && sscanf(d, "Tracer discarded %llu event", &n) == 1)
			f->discarded += n;
	}
	fclose(e);
}

#ifndef VMST_NO_READER
/* vmscope's reader: the same pairs from f[0], f[1] of the VMS_K_TRACEPOINT events. */
static void read_vmscope(const char *dir, struct found *f, bool *abrupt)
{
	struct vms_error err = {0};
	struct vms_source *src = vms_ctf_open(dir, &err);
	if (!src)
		fail_msg("vms_ctf_open: %s", err.msg);
	int32_t seq_type = -1;
	for (uint32_t i = 0; i < src->meta.nr_types; i++)
		if (!strcmp(src->meta.type_names[i], "vmst_test_seq"))
			seq_type = (int32_t)i;
	assert_true(seq_type >= 0);
	for (uint32_t s = 0; s < src->ops->nr_streams(src); s++) {
		struct vms_event ev;
		int rc;
		while ((rc = src->ops->next(src, s, &ev)) == 1) {
			assert_int_equal(ev.kind, VMS_K_TRACEPOINT);
			if ((int32_t)ev.type == seq_type)
				mark(f, ev.f[0], ev.f[1], ev.tid);
			else
				f->strays++;
		}
		if (rc < 0)
			fail_msg("reader: %s", src->err.msg);
	}
	f->discarded = src->meta.lost_events;
	*abrupt = src->meta.ended_abruptly;
	vms_source_close(src);
}
#endif

static bool closed_cleanly(const char *dir)
{
	char p[4200];
	snprintf(p, sizeof p, "%s/.vmst-closed", dir);
	return access(p, F_OK) == 0;
}

/* Both readers must find exactly the pairs (t < nt, s < per), once each. */
static void expect_all(const char *dir, uint32_t nt, uint32_t per, bool abrupt_expected)
{
	static struct found f;
	found_init(&f, nt, per);
	read_babeltrace(dir, &f);
	assert_int_equal(f.strays, 0);
	assert_int_equal(f.dupes, 0);
	assert_int_equal(count_missing(&f), 0);
	assert_int_equal(f.discarded, 0);
	assert_false(f.tid_mixed);
	for (uint32_t a = 0; a < nt; a++)
		for (uint32_t b = 0; b < a; b++)
			assert_int_not_equal(f.tid[a], f.tid[b]);
#ifndef VMST_NO_READER
	bool abrupt;
	found_init(&f, nt, per);
	read_vmscope(dir, &f, &abrupt);
	assert_int_equal(f.strays, 0);
	assert_int_equal(f.dupes, 0);
	assert_int_equal(count_missing(&f), 0);
	assert_int_equal(f.discarded, 0);
	assert_false(f.tid_mixed);
	assert_int_equal(abrupt, abrupt_expected);
#endif
	assert_int_equal(closed_cleanly(dir), !abrupt_expected);
}

/* ---- scenarios ---- */

static char cfg[8192];

static void child_threads_exit(const char *dir)
{
	snprintf(cfg, sizeof cfg, "file=%s,enable=vmst_test_seq", dir);
	must_init(cfg);
	run_threads(4, 5000);
	/* exit() runs the tracer's atexit handler: everything written, marked closed */
}

static void test_threads_all_found_once(void **state)
{
	(void)state;
	const char *dir = vms_test_tmpdir("tracer-threads");
	int st = run_child(child_threads_exit, dir);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	expect_all(dir, 4, 5000, false);
#ifndef VMST_NO_READER
	/* the thread names set by the producers, by the tids babeltrace2 shows (vtid) */
	static struct found f;
	found_init(&f, 4, 5000);
	read_babeltrace(dir, &f);
	struct vms_error err = {0};
	struct vms_source *src = vms_ctf_open(dir, &err);
	assert_non_null(src);
	for (uint32_t t = 0; t < 4; t++) {
		char want[16];
		snprintf(want, sizeof want, "vmst-prod-%u", t);
		bool seen = false;
		for (uint32_t i = 0; i < src->meta.nr_comms; i++)
			if (src->meta.comm_tid[i] == f.tid[t]) {
				assert_string_equal(src->meta.comm_name[i], want);
				seen = true;
			}
		assert_true(seen);
	}
	vms_source_close(src);
#endif
}

/* Tiny buffers and a stalled writer: most events are dropped; every event is either in the
 * trace once or counted as dropped, and the counts the library reports agree. */
static void child_overflow(const char *dir)
{
	snprintf(cfg, sizeof cfg, "file=%s,enable=vmst_test_seq,bufsize=2048,subbufs=4", dir);
	must_init(cfg);
	vmst_debug_pause_writer(true);
	run_threads(3, 2000);
	vmst_debug_pause_writer(false);
	if (vmst_flush() != 0)
		_exit(92);
	/* the library's own counts, for the parent */
	char p[4200];
	snprintf(p, sizeof p, "%s.stats", dir);
	FILE *f = fopen(p, "w");
	struct vmst_thread_stats s[16];
	size_t n = vmst_stats(s, 16);
	uint64_t w = 0, d = 0;
	for (size_t i = 0; i < n && i < 16; i++) {
		w += s[i].written;
		d += s[i].dropped;
	}
	fprintf(f, "%zu %" PRIu64 " %" PRIu64 "\n", n, w, d);
	fclose(f);
}

static void test_overflow_counts_add_up(void **state)
{
	(void)state;
	const char *dir = vms_test_tmpdir("tracer-overflow");
	int st = run_child(child_overflow, dir);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	char p[4200];
	snprintf(p, sizeof p, "%s.stats", dir);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	size_t nthreads;
	uint64_t lib_w, lib_d;
	assert_int_equal(fscanf(f, "%zu %" SCNu64 " %" SCNu64, &nthreads, &lib_w, &lib_d), 3);
	fclose(f);
	assert_int_equal(nthreads, 3);
	assert_int_equal(lib_w + lib_d, 3 * 2000);
	assert_true(lib_d > 0);

	static struct found f1;
	found_init(&f1, 3, 2000);
	read_babeltrace(dir, &f1);
	assert_int_equal(f1.strays, 0);
	assert_int_equal(f1.dupes, 0);
	assert_true(f1.events > 0);
	assert_int_equal(f1.events, lib_w);
	assert_int_equal(f1.discarded, lib_d);
	assert_int_equal(f1.events + f1.discarded, 3 * 2000);
	/* a producer drops only when its buffer is full: its first events are all there */
	for (uint32_t t = 0; t < 3; t++)
		assert_int_equal(f1.seen[t][0], 1);
#ifndef VMST_NO_READER
	static struct found f2;
	bool abrupt;
	found_init(&f2, 3, 2000);
	read_vmscope(dir, &f2, &abrupt);
	assert_int_equal(f2.events, lib_w);
	assert_int_equal(f2.discarded, lib_d);
	assert_int_equal(f2.dupes, 0);
	assert_false(abrupt);
	assert_int_equal(memcmp(f1.seen, f2.seen, sizeof f1.seen), 0);
#endif
}

/* exit() called by another thread while the main thread is blocked. */
static void *exiter(void *arg)
{
	(void)arg;
	for (uint32_t i = 0; i < 300; i++)
		trace_vmst_test_seq(1, i);
	exit(0);
}

static void child_exit_other_thread(const char *dir)
{
	snprintf(cfg, sizeof cfg, "file=%s,enable=vmst_test_seq", dir);
	must_init(cfg);
	for (uint32_t i = 0; i < 300; i++)
		trace_vmst_test_seq(0, i);
	pthread_t th;
	pthread_create(&th, NULL, exiter, NULL);
	for (;;)
		pause();
}

static void test_exit_from_another_thread_flushes(void **state)
{
	(void)state;
	const char *dir = vms_test_tmpdir("tracer-exit-thread");
	int st = run_child(child_exit_other_thread, dir);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	expect_all(dir, 2, 300, false);
}

/* Return from main, configured only by VMSCOPE_TRACE (the generated constructor starts the
 * tracer): this test program run again with --child-return. */
static int child_return_main(void)
{
	run_threads(2, 1000);
	for (uint32_t i = 0; i < 1000; i++)
		trace_vmst_test_seq(2, i);
	return 0;
}

static void test_return_from_main_with_env_config(void **state)
{
	(void)state;
	const char *dir = vms_test_tmpdir("tracer-return");
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char env[4300];
		snprintf(env, sizeof env, "file=%s,enable=vmst_test_*,period=10", dir);
		setenv("VMSCOPE_TRACE", env, 1);
		execl("/proc/self/exe", "test_tracer_record", "--child-return", (char *)NULL);
		_exit(127);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	expect_all(dir, 3, 1000, false);
}

/* SIGKILL after vmst_flush: what was flushed is all readable; the trace says it ended
 * abruptly (no clean-close mark). */
static void child_killed(const char *dir)
{
	snprintf(cfg, sizeof cfg, "file=%s,enable=vmst_test_seq", dir);
	must_init(cfg);
	run_threads(2, 3000);
	for (uint32_t i = 0; i < 3000; i++)
		trace_vmst_test_seq(2, i);
	if (vmst_flush() != 0)
		_exit(93);
	raise(SIGKILL);
}

static void test_sigkill_after_flush(void **state)
{
	(void)state;
	const char *dir = vms_test_tmpdir("tracer-killed");
	int st = run_child(child_killed, dir);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	expect_all(dir, 3, 3000, true);
}

/* events=FILE globs in order, '-' disables; vmst_file_enable(false) records nothing;
 * vmst_file_set continues in a new directory. */
static void child_switches(const char *dir)
{
	char evf[4200], d2[4200];
	snprintf(evf, sizeof evf, "%s.events", dir);
	snprintf(d2, sizeof d2, "%s/second", dir);
	FILE *f = fopen(evf, "w");
	fputs("# enable the test events but not void and ints\nvmst_test_*\n\n"
	      "-vmst_test_void\n  -vmst_test_in*  \n", f);
	fclose(f);
	snprintf(cfg, sizeof cfg, "file=%s/first,events=%s,clock=monotonic", dir, evf);
	must_init(cfg);
	if (strcmp(vmst_clock_name(), "monotonic") || vmst_clock_freq() != 1000000000u)
		_exit(94);
	int bad = 0;
	for (size_t i = 0; i < vmst_event_count(); i++) {
		const char *n = vmst_event_name(i);
		bool want = !strncmp(n, "vmst_test_", 10) && strcmp(n, "vmst_test_void") &&
			    strcmp(n, "vmst_test_ints") && strcmp(n, "vmst_test_indented");
		bad += vmst_event_get(i) != want;
	}
	if (bad)
		_exit(95);
	for (uint32_t i = 0; i < 10; i++) {
		trace_vmst_test_seq(0, i);
		trace_vmst_test_void();   /* disabled: not recorded */
	}
	vmst_file_enable(false);
	for (uint32_t i = 0; i < 10; i++)
		trace_vmst_test_seq(0, 100 + i);   /* off: not recorded */
	vmst_file_enable(true);
	if (vmst_file_set(d2) != 0 || strcmp(vmst_file_get(), d2))
		_exit(96);
	for (uint32_t i = 0; i < 20; i++)
		trace_vmst_test_seq(0, i);
}

static void test_event_file_switch_and_new_dir(void **state)
{
	(void)state;
	const char *dir = vms_test_tmpdir("tracer-switches");
	int st = run_child(child_switches, dir);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	char d1[4200], d2[4200];
	snprintf(d1, sizeof d1, "%s/first", dir);
	snprintf(d2, sizeof d2, "%s/second", dir);
	expect_all(d1, 1, 10, false);
	expect_all(d2, 1, 20, false);
}

/* fork() in a traced process: the child records nothing unless it starts the tracer itself,
 * and then only its own events, under its own tid: the parent's 100 events buffered at the
 * fork (the period is a minute, so none is written out before it) are not in the child's
 * trace; the parent's trace goes on, each of its events once. */
static void child_forks(const char *dir)
{
	snprintf(cfg, sizeof cfg, "file=%s/parent,enable=vmst_test_seq,period=60000", dir);
	must_init(cfg);
	for (uint32_t i = 0; i < 100; i++)
		trace_vmst_test_seq(0, i);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(20);   /* a hang at exit fails the test instead of blocking it */
		for (uint32_t i = 0; i < 50; i++)
			trace_vmst_test_seq(1, i);   /* not started in the child: not recorded */
		snprintf(cfg, sizeof cfg, "file=%s/child,enable=vmst_test_seq", dir);
		if (vmst_init(cfg) != 0)
			_exit(98);
		for (uint32_t i = 0; i < 50; i++)
			trace_vmst_test_seq(0, i);
		char p[4200];
		snprintf(p, sizeof p, "%s/child.pid", dir);
		FILE *f = fopen(p, "w");
		if (!f)
			_exit(99);
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
		exit(0);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		_exit(97);
	for (uint32_t i = 100; i < 200; i++)
		trace_vmst_test_seq(0, i);
}

static void test_fork_in_traced_process(void **state)
{
	(void)state;
	const char *dir = vms_test_tmpdir("tracer-fork");
	int st = run_child(child_forks, dir);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	char d[4200];
	snprintf(d, sizeof d, "%s/parent", dir);
	expect_all(d, 1, 200, false);
	/* the child's trace: its 50 events exactly (a parent's event would be a duplicate of
	 * seq < 50 or a stray with seq >= 50), all under the child's tid (its pid) */
	snprintf(d, sizeof d, "%s/child", dir);
	expect_all(d, 1, 50, false);
	char p[4200];
	snprintf(p, sizeof p, "%s/child.pid", dir);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	int child_pid = 0;
	assert_int_equal(fscanf(f, "%d", &child_pid), 1);
	fclose(f);
	static struct found fb;
	found_init(&fb, 1, 50);
	read_babeltrace(d, &fb);
	assert_int_equal(fb.tid[0], child_pid);
#ifndef VMST_NO_READER
	static struct found fv;
	bool abrupt;
	found_init(&fv, 1, 50);
	read_vmscope(d, &fv, &abrupt);
	assert_int_equal(fv.tid[0], child_pid);
#endif
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child-return"))
		return child_return_main();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_all_found_once),
		cmocka_unit_test(test_overflow_counts_add_up),
		cmocka_unit_test(test_exit_from_another_thread_flushes),
		cmocka_unit_test(test_return_from_main_with_env_config),
		cmocka_unit_test(test_sigkill_after_flush),
		cmocka_unit_test(test_event_file_switch_and_new_dir),
		cmocka_unit_test(test_fork_in_traced_process),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
