/* SIGKILL at many points while the tracer writes: every trace left behind must be read by
 * babeltrace2 (exit status 0) and by vmscope's CTF reader, and both must find the same events.
 *
 * Each round forks a producer: 4 threads emitting vmst_test_seq(thread, 0, 1, 2, ...) as fast
 * as they can, with a vmst_test_str of three 100-byte strings every 8th event so that the
 * writer has megabytes to write; every third round the main thread also calls vmst_flush() in
 * a loop. The buffer size goes round 64 KiB .. 64 MiB, the write-out period 1 .. 100 ms, and
 * the kill comes 1 .. 40 ms after every thread has emitted 10000 events (a fixed
 * pseudo-random sequence, so a failure is reproducible by its round number). The expected values are not computed by the
 * tracer: two independent readers must agree with each other, each thread's numbers must
 * strictly increase in each reader's output (no packet read twice, none torn), and no line
 * may be anything but the two events. */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "trace-qemu-style.h"
#include "vmscope/source.h"

#define ROUNDS 52
#define NT 4

/* ---- the producer (in the child) ---- */

static uint32_t warm;   /* threads that have emitted their first 10000 events */

static void *produce(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	char s[101];
	memset(s, 'a' + (int)t, 100);
	s[100] = 0;
	for (uint64_t i = 0;; i++) {
		trace_vmst_test_seq(t, i);
		if (i % 8 == 0)
			trace_vmst_test_str(s, s, s);
		if (i == 10000)
			__atomic_add_fetch(&warm, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void child(const char *dir, int round, int ready_fd)
{
	static const char *const bufsize[] = { "64k", "256k", "2M", "16M", "64M" };
	static const unsigned period[] = { 1, 5, 20, 100 };
	char cfg[4300];
	snprintf(cfg, sizeof cfg, "file=%s,enable=vmst_test_seq,enable=vmst_test_str,bufsize=%s,"
		 "subbufs=%d,period=%u", dir, bufsize[round % 5], 4 + 4 * (round % 2),
		 period[(round / 5) % 4]);
	if (vmst_init(cfg) != 0)
		_exit(91);
	pthread_t th;
	for (uint32_t t = 0; t < NT; t++)
		if (pthread_create(&th, NULL, produce, (void *)(uintptr_t)t))
			_exit(90);
	while (__atomic_load_n(&warm, __ATOMIC_ACQUIRE) < NT)
		sched_yield();
	if (write(ready_fd, "r", 1) != 1)
		_exit(92);
	for (;;) {
		if (round % 3 == 0)
			vmst_flush();
		else
			pause();
	}
}

/* ---- what a reader found ---- */

struct found {
	uint64_t events, sum, mix, strings, strays, disorder;
	int64_t last[NT];
};

static void found_init(struct found *f)
{
	memset(f, 0, sizeof *f);
	for (int t = 0; t < NT; t++)
		f->last[t] = -1;
}

static void mark(struct found *f, uint64_t t, uint64_t s)
{
	if (t >= NT) {
		f->strays++;
		return;
	}
	if ((int64_t)s <= f->last[t])
		f->disorder++;
	f->last[t] = (int64_t)s;
	uint64_t v = t << 48 | s;
	f->events++;
	f->sum += v;
	v *= 0x9e3779b97f4a7c15u;
	f->mix ^= v ^ (v >> 29);
}

/* babeltrace2 DIR: "... vmst_test_seq: { cpu_id = C }, { thread = T, seq = S }" */
static int read_babeltrace(const char *dir, struct found *f)
{
	char cmd[4400];
	snprintf(cmd, sizeof cmd, "babeltrace2 '%s' 2>'%s.bt-stderr'", dir, dir);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, p) > 0) {
		if (strstr(line, " vmst_test_str: ")) {
			f->strings++;
			continue;
		}
		const char *a = strstr(line, " vmst_test_seq: ") ? strstr(line, "{ thread = ") : NULL;
		unsigned long long t, s;
		if (!a || sscanf(a, "{ thread = %llu, seq = %llu }", &t, &s) != 2) {
			f->strays++;
			continue;
		}
		mark(f, t, s);
	}
	free(line);
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void read_vmscope(const char *dir, struct found *f)
{
	struct vms_error err = { 0 };
	struct vms_source *src = vms_ctf_open(dir, &err);
	if (!src)
		fail_msg("vms_ctf_open %s: %s", dir, err.msg);
	int32_t seq_type = -1, str_type = -1;
	for (uint32_t i = 0; i < src->meta.nr_types; i++) {
		if (!strcmp(src->meta.type_names[i], "vmst_test_seq"))
			seq_type = (int32_t)i;
		if (!strcmp(src->meta.type_names[i], "vmst_test_str"))
			str_type = (int32_t)i;
	}
	assert_true(seq_type >= 0 && str_type >= 0);
	for (uint32_t s = 0; s < src->ops->nr_streams(src); s++) {
		struct vms_event ev;
		int rc;
		while ((rc = src->ops->next(src, s, &ev)) == 1) {
			if ((int32_t)ev.type == seq_type)
				mark(f, ev.f[0], ev.f[1]);
			else if ((int32_t)ev.type == str_type)
				f->strings++;
			else
				f->strays++;
		}
		if (rc < 0)
			fail_msg("vmscope reader on %s: %s", dir, src->err.msg);
	}
	/* no clean-close mark: the reader says the trace ended abruptly */
	assert_true(src->meta.ended_abruptly);
	vms_source_close(src);
}

static void test_sigkill_while_writing(void **state)
{
	(void)state;
	if (system("babeltrace2 --version >/dev/null 2>&1") != 0) {
		print_message("# babeltrace2 is not installed (Debian: babeltrace2): skipped\n");
		skip();
	}
	char base[2100];
	snprintf(base, sizeof base, "%s", vms_test_tmpdir("tracer-kill"));
	uint32_t lcg = 12345;
	int bt_failures = 0;
	uint64_t total_events = 0;
	for (int round = 0; round < ROUNDS; round++) {
		lcg = lcg * 1103515245u + 12345u;
		unsigned delay_ms = 1 + (lcg >> 16) % 40;
		char dir[2200];
		snprintf(dir, sizeof dir, "%s/r%02d", base, round);
		int pfd[2];
		assert_int_equal(pipe(pfd), 0);
		fflush(NULL);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(pfd[0]);
			alarm(30);   /* never outlive a broken parent */
			child(dir, round, pfd[1]);
		}
		close(pfd[1]);
		char c;
		ssize_t r = read(pfd[0], &c, 1);
		close(pfd[0]);
		struct timespec ts = { 0, (long)delay_ms * 1000000L };
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		if (r != 1)
			fail_msg("round %d: the producer did not start (status %d)", round, st);
		assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);

		static struct found fb, fv;
		found_init(&fb);
		found_init(&fv);
		int bt = read_babeltrace(dir, &fb);
		if (bt != 0) {
			bt_failures++;
			print_message("# round %d (kill after %u ms): babeltrace2 exit %d:\n", round,
				      delay_ms, bt);
			char cmd[4400];
			snprintf(cmd, sizeof cmd, "head -c 600 '%s.bt-stderr' | sed 's/^/# /'; echo", dir);
			if (system(cmd) != 0)
				print_message("# (no stderr)\n");
			continue;
		}
		read_vmscope(dir, &fv);
		if (fb.strays || fb.disorder || fv.strays || fv.disorder || fb.events != fv.events ||
		    fb.sum != fv.sum || fb.mix != fv.mix || fb.strings != fv.strings)
			fail_msg("round %d: babeltrace2 %" PRIu64 " events (%" PRIu64 " strings, %" PRIu64
				 " strays, %" PRIu64 " out of order), vmscope %" PRIu64 " (%" PRIu64
				 " strings, %" PRIu64 " strays, %" PRIu64 " out of order)", round,
				 fb.events, fb.strings, fb.strays, fb.disorder, fv.events, fv.strings,
				 fv.strays, fv.disorder);
		total_events += fb.events;
		print_message("# round %d: kill after %u ms, %" PRIu64 " events\n", round, delay_ms,
			      fb.events);
		char cmd[4400];
		snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s.bt-stderr'", dir, dir);
		assert_int_equal(system(cmd), 0);
	}
	print_message("# %d kills, %d traces babeltrace2 refused, %" PRIu64
		      " vmst_test_seq events read by both readers\n", ROUNDS, bt_failures,
		      total_events);
	assert_int_equal(bt_failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigkill_while_writing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
