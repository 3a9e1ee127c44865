/* bench_analysis: vmscope's whole analysis against libtracecmd's bare iteration, same files.
 *
 * Each side runs in a process of its own (forked), so its time and its peak memory (ru_maxrss
 * from wait4) are its own. The peer reads the files with tracecmd_iterate_events (or _multi
 * for several files) and an empty callback: the least any libtracecmd-based tool can do. The
 * vmscope side opens a session and runs everything (model pass when needed, clocks, merge,
 * vCPU states, overlays, exits, steal, containment) with no output. Median of R runs.
 *
 * usage: bench_analysis [-r RUNS] FILE...        prints a table and the ratio peer/vmscope */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <trace-cmd/trace-cmd.h>

#include "vmscope/session.h"

struct result {
	double seconds;
	uint64_t events;
	long maxrss_kib;
	int ok;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int empty_cb(struct tracecmd_input *h, struct tep_record *r, int cpu, void *data)
{
	(void)h;
	(void)r;
	(void)cpu;
	(*(uint64_t *)data)++;
	return 0;
}

static int run_tracecmd(char **files, int n, uint64_t *events)
{
	struct tracecmd_input *h[16];
	if (n > 16)
		return -1;
	tracecmd_set_loglevel(TEP_LOG_NONE);
	for (int i = 0; i < n; i++) {
		h[i] = tracecmd_open(files[i], 0);
		if (!h[i])
			return -1;
	}
	*events = 0;
	int r = n == 1 ? tracecmd_iterate_events(h[0], NULL, 0, empty_cb, events)
		       : tracecmd_iterate_events_multi(h, n, empty_cb, events);
	for (int i = 0; i < n; i++)
		tracecmd_close(h[i]);
	return r < 0 ? -1 : 0;
}

static int run_vmscope(char **files, int n, uint64_t *events)
{
	struct vms_error err = { 0 };
	struct vms_session *s = vms_session_open((const char *const *)files, (uint32_t)n, NULL, &err);
	if (!s) {
		fprintf(stderr, "vmscope: %s\n", err.msg);
		return -1;
	}
	int r = vms_session_run(s, NULL, NULL, NULL, &err);
	if (r < 0)
		fprintf(stderr, "vmscope: %s\n", err.msg);
	*events = vms_session_events(s);
	vms_session_free(s);
	return r < 0 ? -1 : 0;
}

/* Run fn in a child; its timing comes back through a pipe, its peak memory from wait4. */
static struct result measure(int (*fn)(char **, int, uint64_t *), char **files, int n)
{
	struct result res = { 0 };
	int p[2];
	if (pipe(p) < 0)
		return res;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		uint64_t ev = 0;
		double t0 = now();
		int r = fn(files, n, &ev);
		double t = now() - t0;
		struct result out = { t, ev, 0, r == 0 };
		if (write(p[1], &out, sizeof out) != (ssize_t)sizeof out)
			_exit(2);
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &res, sizeof res) != (ssize_t)sizeof res)
		res.ok = 0;
	close(p[0]);
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) == pid)
		res.maxrss_kib = ru.ru_maxrss;
	return res;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int runs = 3, i = 1;
	if (argc > 2 && !strcmp(argv[1], "-r")) {
		runs = atoi(argv[2]);
		i = 3;
	}
	if (i >= argc || runs < 1 || runs > 50) {
		fprintf(stderr, "usage: bench_analysis [-r RUNS] FILE...\n");
		return 2;
	}
	char **files = argv + i;
	int n = argc - i;
	double tp[50], tv[50];
	struct result peer = { 0 }, ours = { 0 };
	for (int r = 0; r < runs; r++) {
		peer = measure(run_tracecmd, files, n);
		ours = measure(run_vmscope, files, n);
		if (!ours.ok) {
			fprintf(stderr, "bench_analysis: vmscope failed\n");
			return 1;
		}
		tp[r] = peer.seconds;
		tv[r] = ours.seconds;
	}
	qsort(tp, (size_t)runs, sizeof tp[0], cmp_double);
	qsort(tv, (size_t)runs, sizeof tv[0], cmp_double);
	double mp = tp[runs / 2], mv = tv[runs / 2];
	printf("files:");
	for (int k = 0; k < n; k++)
		printf(" %s", files[k]);
	printf("\n%-44s %10s %12s %14s %12s\n", "", "seconds", "events", "events/s", "peak MiB");
	if (peer.ok)
		printf("%-44s %10.3f %12llu %14.0f %12.1f\n", "libtracecmd iterate, empty callback", mp,
		       (unsigned long long)peer.events, (double)peer.events / mp,
		       (double)peer.maxrss_kib / 1024.0);
	else
		printf("%-44s %10s\n", "libtracecmd iterate, empty callback", "cannot open the files");
	printf("%-44s %10.3f %12llu %14.0f %12.1f\n", "vmscope full analysis", mv,
	       (unsigned long long)ours.events, (double)ours.events / mv,
	       (double)ours.maxrss_kib / 1024.0);
	if (peer.ok)
		printf("ratio: vmscope's whole analysis is %.2fx faster than libtracecmd's bare iteration "
		       "(goal: >= 3x); median of %d runs\n", mp / mv, runs);
	return 0;
}
