/* Run a function in a child process and take its cost from the kernel: CPU time (user +
 * system) and peak memory (ru_maxrss) from wait4, so that the figures are the child's own and
 * CPU time, unlike wall time, holds on a loaded machine. Header-only, for the benchmarks. */
#ifndef BENCH_CHILD_H
#define BENCH_CHILD_H

#include <stdbool.h>
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

/* ---- the one way every bench prints a peer against vmscope ----
 * Runs alternate (peer, vmscope, peer, ...) so that a change of the machine's load falls on
 * both; each side's wall and CPU time are kept per run, and printed as medians and least
 * times with the ratio by each (the machine is shared: CPU time is the steadier figure, the
 * least times say what interference only adds to). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_MAX_RUNS 100

struct bench_side {
	const char *name;
	double wall[BENCH_MAX_RUNS], cpu[BENCH_MAX_RUNS];
	long maxrss_kib;    /* the largest of the runs */
	int n;
};

static inline void bench_side_add(struct bench_side *s, struct bench_child c)
{
	if (s->n >= BENCH_MAX_RUNS)
		return;
	s->wall[s->n] = c.wall_s;
	s->cpu[s->n] = c.cpu_s;
	s->n++;
	if (c.maxrss_kib > s->maxrss_kib)
		s->maxrss_kib = c.maxrss_kib;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of v[0..n) (v itself left as it is). */
static inline double bench_median(const double *v, int n)
{
	double t[BENCH_MAX_RUNS];
	if (n <= 0)
		return 0;
	memcpy(t, v, (size_t)n * sizeof *t);
	qsort(t, (size_t)n, sizeof *t, bench_cmp_double);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static inline double bench_least(const double *v, int n)
{
	double m = n > 0 ? v[0] : 0;
	for (int i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

static inline void bench_side_print(const struct bench_side *s)
{
	printf("  %-46s wall %8.3f s (least %.3f)  CPU %8.3f s (least %.3f)  peak %6.1f MiB\n",
	       s->name, bench_median(s->wall, s->n), bench_least(s->wall, s->n),
	       bench_median(s->cpu, s->n), bench_least(s->cpu, s->n),
	       (double)s->maxrss_kib / 1024.0);
}

/* "ratio peer / vmscope: wall Ax, CPU Bx (medians of N alternating runs each; least ...)" */
static inline void bench_ratio_print(const struct bench_side *peer, const struct bench_side *ours)
{
	double vw = bench_median(ours->wall, ours->n), vc = bench_median(ours->cpu, ours->n);
	double lw = bench_least(ours->wall, ours->n), lc = bench_least(ours->cpu, ours->n);
	printf("  ratio %s / %s: wall %.2fx, CPU %.2fx (medians of %d alternating runs each; "
	       "least times: wall %.2fx, CPU %.2fx)\n",
	       peer->name, ours->name, bench_median(peer->wall, peer->n) / vw,
	       bench_median(peer->cpu, peer->n) / vc, ours->n,
	       bench_least(peer->wall, peer->n) / lw, bench_least(peer->cpu, peer->n) / lc);
}

static inline void bench_load_print(void)
{
	double l[3] = { -1, -1, -1 };
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf %lf %lf", &l[0], &l[1], &l[2]) != 3)
			l[0] = l[1] = l[2] = -1;
		fclose(f);
	}
	printf("  load average %.2f %.2f %.2f on %ld cores\n", l[0], l[1], l[2],
	       sysconf(_SC_NPROCESSORS_ONLN));
}

/* For bench_child_run: exec argv (a NULL-terminated char *[]), its output to /dev/null. */
static inline int bench_exec_quiet(void *arg)
{
	char *const *argv = arg;
	int fd = open("/dev/null", O_WRONLY);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	execvp(argv[0], argv);
	return -1;
}

#endif
