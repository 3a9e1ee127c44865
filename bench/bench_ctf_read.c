/* bench_ctf_read: reading the tracer's CTF, vmscope's direct decoder against libbabeltrace2.
 *
 * The tracer's traces are read by vmscope through a decoder of their one layout (lib/input/ctf)
 * rather than libbabeltrace2, because it is faster; this shows by how much, on the same trace
 * in the same run. The trace is recorded first (N events of the two-integer bench_ev trace
 * point, one thread, flushed as it goes so that nothing is dropped); then each side reads it
 * in a process of its own: `babeltrace2 DIR -c sink.utils.dummy` (source.ctf.fs, the muxer, a
 * sink that does nothing) and vmscope's reader decoding every event, the two alternating, R
 * runs each: wall and CPU time of each (medians and least) and the ratios by each
 * (bench_child.h). -m DIR reads DIR once in this process, for callgrind (recording -n events into it
 * first if it does not exist).
 *
 * usage: bench_ctf_read [-n EVENTS] [-r RUNS] [-m DIR] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-tracer.h"
#include "bench_child.h"
#include "vmscope/source.h"

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

struct job {
	const char *dir;
	uint64_t events;
};

static int read_child(void *arg)
{
	struct job *j = arg;
	return read_vmscope(j->dir, &j->events);
}

int main(int argc, char **argv)
{
	uint64_t n = 10000000;
	int runs = 3;
	const char *mode = NULL;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-n"))
			n = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "-r"))
			runs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-m"))
			mode = argv[i + 1];
	}
	if (runs < 1 || runs > BENCH_MAX_RUNS || n == 0) {
		fprintf(stderr, "usage: bench_ctf_read [-n EVENTS] [-r RUNS] [-m DIR]\n");
		return 2;
	}
	if (mode) { /* -m DIR: read DIR once in this process (for valgrind --tool=callgrind),
		     * after recording N events into it if it does not exist yet */
		uint64_t ev = 0;
		if (access(mode, F_OK) != 0 && (mkdir(mode, 0755) != 0 || record(mode, n) < 0)) {
			fprintf(stderr, "bench_ctf_read: cannot record into %s\n", mode);
			return 1;
		}
		if (read_vmscope(mode, &ev) < 0)
			return 1;
		printf("%llu events\n", (unsigned long long)ev);
		return 0;
	}
	char dir[] = "/tmp/vmscope-bench-ctf-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	if (record(dir, n) < 0) {
		fprintf(stderr, "bench_ctf_read: recording failed\n");
		return 1;
	}
	struct job j = { dir, 0 };
	if (read_vmscope(dir, &j.events) < 0) /* also warms the page cache for both */
		return 1;
	bool have_bt = system("babeltrace2 --version >/dev/null 2>&1") == 0;
	char *bt_argv[] = { "babeltrace2", dir, "-c", "sink.utils.dummy", NULL };
	struct bench_side bt = { .name = "babeltrace2" }, vms = { .name = "vmscope" };
	for (int r = 0; r < runs; r++) {
		if (have_bt) {
			struct bench_child c = bench_child_run(bench_exec_quiet, bt_argv);
			if (c.ok)
				bench_side_add(&bt, c);
			else
				have_bt = false;
		}
		struct bench_child c = bench_child_run(read_child, &j);
		if (!c.ok)
			return 1;
		bench_side_add(&vms, c);
	}
	printf("CTF trace of %llu events (tracer bench_ev: two u64), %d runs each, alternating\n",
	       (unsigned long long)j.events, runs);
	bench_load_print();
	if (have_bt) {
		bench_side_print(&bt);
		printf("    (babeltrace2 source.ctf.fs -> muxer -> sink.utils.dummy)\n");
	} else {
		printf("  babeltrace2: not installed or failed\n");
	}
	bench_side_print(&vms);
	printf("    (vmscope's CTF reader, every event decoded: %.1f M events/s of CPU)\n",
	       (double)j.events / bench_median(vms.cpu, vms.n) / 1e6);
	if (have_bt)
		bench_ratio_print(&bt, &vms);
	char rm[4200];
	snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
	return system(rm) == 0 ? 0 : 1;
}
