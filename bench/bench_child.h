/* Run a function in a child process and take its cost from the kernel: CPU time (user +
 * system) and peak memory (ru_maxrss) from wait4, so that the figures are the child's own and
 * CPU time, unlike wall time, holds on a loaded machine. Header-only, for the benchmarks. */
#ifndef BENCH_CHILD_H
#define BENCH_CHILD_H

#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct bench_child {
	double cpu_s;      /* user + system */
	double wall_s;
	long maxrss_kib;
	int ok;            /* the function returned 0 */
};

static inline double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline struct bench_child bench_child_run(int (*fn)(void *), void *arg)
{
	struct bench_child r = { 0 };
	double t0 = bench_now();
	pid_t pid = fork();
	if (pid < 0)
		return r;
	if (pid == 0)
		_exit(fn(arg) == 0 ? 0 : 1);
	int st;
	struct rusage ru;
	if (wait4(pid, &st, 0, &ru) != pid)
		return r;
	r.wall_s = bench_now() - t0;
	r.cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
		  (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	r.maxrss_kib = ru.ru_maxrss;
	r.ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	return r;
}

#endif
