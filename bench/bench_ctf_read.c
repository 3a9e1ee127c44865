/* bench_ctf_read: reading the tracer's CTF, vmscope's direct decoder against libbabeltrace2.
 *
 * The tracer's traces are read by vmscope through a decoder of their one layout (lib/input/ctf)
 * rather than libbabeltrace2, because it is faster; this shows by how much, on the same trace
 * in the same run. The trace is recorded first (N events of the two-integer bench_ev trace
 * point, one thread, flushed as it goes so that nothing is dropped); then each side reads it
 * in a process of its own: `babeltrace2 DIR -c sink.utils.dummy` (source.ctf.fs, the muxer, a
 * sink that does nothing) and vmscope's reader decoding every event. Median of R runs.
 *
 * usage: bench_ctf_read [-n EVENTS] [-r RUNS] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-tracer.h"
#include "vmscope/source.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Record n events into dir (a child process: the tracer's exit flush closes the trace). */
static int record(const char *dir, uint64_t n)
{
	pid_t pid = fork();
	if (pid == 0) {
		char cfg[4200];
		snprintf(cfg, sizeof cfg, "file=%s,enable=bench_ev,bufsize=32M,subbufs=16", dir);
		if (vmst_init(cfg))
			_exit(1);
		for (uint64_t i = 0; i < n; i++) {
			trace_bench_ev(i, n - i);
			if ((i & ((1u << 20) - 1)) == 0)
				vmst_flush();
		}
		exit(0);
	}
	int st;
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int read_vmscope(const char *dir, uint64_t *events)
{
	struct vms_error err = { 0 };
	struct vms_source *s = vms_source_open(dir, &err);
	if (!s) {
		fprintf(stderr, "vmscope: %s\n", err.msg);
		return -1;
	}
	uint64_t n = 0, sum = 0;
	struct vms_event ev;
	for (uint32_t k = 0; k < s->ops->nr_streams(s); k++) {
		int r;
		while ((r = s->ops->next(s, k, &ev)) > 0) {
			n++;
			sum += ev.f[0] + ev.ts;
		}
		if (r < 0) {
			fprintf(stderr, "vmscope: %s\n", s->err.msg);
			vms_source_close(s);
			return -1;
		}
	}
	vms_source_close(s);
	*events = n + (sum == 42); /* keep the decode from being optimized away */
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t n = 10000000;
	int runs = 3;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-n"))
			n = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "-r"))
			runs = atoi(argv[i + 1]);
	}
	if (runs < 1 || runs > 20 || n == 0) {
		fprintf(stderr, "usage: bench_ctf_read [-n EVENTS] [-r RUNS]\n");
		return 2;
	}
	char dir[] = "/tmp/vmscope-bench-ctf-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	if (record(dir, n) < 0) {
		fprintf(stderr, "bench_ctf_read: recording failed\n");
		return 1;
	}
	double tb[20], tv[20];
	uint64_t ev = 0;
	bool have_bt = system("babeltrace2 --version >/dev/null 2>&1") == 0;
	for (int r = 0; r < runs; r++) {
		char cmd[4200];
		snprintf(cmd, sizeof cmd, "babeltrace2 '%s' -c sink.utils.dummy >/dev/null 2>&1", dir);
		double t0 = now();
		if (have_bt && system(cmd) != 0)
			have_bt = false;
		tb[r] = now() - t0;
		t0 = now();
		if (read_vmscope(dir, &ev) < 0)
			return 1;
		tv[r] = now() - t0;
	}
	qsort(tb, (size_t)runs, sizeof tb[0], cmp_d);
	qsort(tv, (size_t)runs, sizeof tv[0], cmp_d);
	double mb = tb[runs / 2], mv = tv[runs / 2];
	printf("CTF trace of %llu events (tracer bench_ev: two u64), median of %d runs\n",
	       (unsigned long long)ev, runs);
	if (have_bt)
		printf("  babeltrace2 source.ctf.fs -> muxer -> sink.utils.dummy   %.3f s  %.1f M events/s\n",
		       mb, (double)ev / mb / 1e6);
	else
		printf("  babeltrace2: not installed or failed\n");
	printf("  vmscope CTF reader, every event decoded          %.3f s  %.1f M events/s\n", mv,
	       (double)ev / mv / 1e6);
	if (have_bt)
		printf("ratio: vmscope's reader is %.1fx faster than babeltrace2 on the same trace\n",
		       mb / mv);
	char rm[4200];
	snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
	return system(rm) == 0 ? 0 : 1;
}
