/* bench_readers: how near `vmscope report` comes to the limit of reading a compressed
 * trace.dat (issue 24), at --threads 1 and 2, in one run, alternating.
 *
 * The limit is the project's own probe, in forked children, each timed around its work only
 * (opening excluded):
 *   decompress alone: every chunk of every stream decompressed once, in one thread, nothing
 *                     parsed (vms_tracedat_decompress_all: libzstd/zlib, as the reader calls it);
 *   iterate alone:    every event of the same trace rewritten uncompressed (trace-cmd convert
 *                     --compression none, made once in -d DIR) read through the reader at
 *                     --threads 1: the records parsed, nothing decompressed.
 * Then `vmscope report FILE` (stdout to /dev/null) at --threads 1 and --threads 2, timed from
 * fork to wait4 (wall) and by the child's rusage (user + system CPU). Each round runs the four
 * in turn; medians of R rounds. Ratios: limit wall / report wall (1 = at the limit) and
 * report CPU / limit CPU (1 = no CPU beyond the limit's).
 *
 * usage: bench_readers [-r RUNS] [-d DIR] -x path/to/vmscope FILE.dat */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/pool.h"
#include "vmscope/source.h"

int64_t vms_tracedat_decompress_all(struct vms_source *src);

struct sample {
	double wall, cpu;
	int64_t count;
	int ok;
};

static double clock_s(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Opens path, times work(src) alone (wall and this process's CPU), prints the figures. */
static int64_t timed(const char *path, int64_t (*work)(struct vms_source *))
{
	struct vms_error err = { 0 };
	struct vms_source *src = vms_tracedat_open(path, &err);
	if (!src)
		return -1;
	double w = clock_s(CLOCK_MONOTONIC), c = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	int64_t n = work(src);
	w = clock_s(CLOCK_MONOTONIC) - w;
	c = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c;
	vms_source_close(src);
	printf("%.9f %.9f %lld\n", w, c, (long long)n);
	return n;
}

static int64_t iterate_all(struct vms_source *src)
{
	int64_t n = 0;
	uint32_t ns = src->ops->nr_streams(src);
	struct vms_event ev;
	for (uint32_t s = 0; s < ns; s++) {
		int r;
		while ((r = src->ops->next(src, s, &ev)) == 1)
			n++;
		if (r < 0)
			return -1;
	}
	return n;
}

/* A probe in a child (threads 1): its own timing comes back on its stdout. */
static struct sample probe(int64_t (*work)(struct vms_source *), const char *path)
{
	struct sample res = { 0 };
	int p[2];
	if (pipe(p) < 0)
		return res;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		dup2(p[1], STDOUT_FILENO);
		vms_pool_set_threads(1);
		int r = timed(path, work) < 0 ? 1 : 0;
		fflush(stdout);
		_exit(r);
	}
	close(p[1]);
	char buf[128] = "";
	ssize_t k = read(p[0], buf, sizeof buf - 1);
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	long long n;
	if (k > 0 && sscanf(buf, "%lf %lf %lld", &res.wall, &res.cpu, &n) == 3 && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 0) {
		res.count = n;
		res.ok = 1;
	}
	return res;
}

static struct sample report(const char *vms, const char *path, const char *threads)
{
	struct sample res = { 0 };
	double w = clock_s(CLOCK_MONOTONIC);
	pid_t pid = fork();
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
			_exit(127);
		execl(vms, vms, "report", "--threads", threads, path, (char *)NULL);
		_exit(127);
	}
	int st;
	struct rusage ru;
	if (wait4(pid, &st, 0, &ru) != pid)
		return res;
	res.wall = clock_s(CLOCK_MONOTONIC) - w;
	res.cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
		  (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	res.ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	return res;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof v[0], cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum { DEC, ITER, REP1, REP2, NR };

int main(int argc, char **argv)
{
	int runs = 7, o;
	const char *dir = "/tmp", *vms = NULL;
	while ((o = getopt(argc, argv, "r:d:x:")) != -1) {
		if (o == 'r')
			runs = atoi(optarg);
		else if (o == 'd')
			dir = optarg;
		else if (o == 'x')
			vms = optarg;
		else
			runs = 0;
	}
	if (optind + 1 != argc || runs < 1 || runs > 99 || !vms) {
		fprintf(stderr, "usage: bench_readers [-r RUNS] [-d DIR] -x path/to/vmscope FILE.dat\n");
		return 2;
	}
	const char *path = argv[optind];
	char plain[4096], cmd[9000];
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	/* (gcc -O2 -fsanitize=undefined takes base for a possible NULL: -Wformat-truncation) */
	snprintf(plain, sizeof plain, "%s/%s.none.dat", dir, base ? base : "");
	struct stat sp, sn;
	if (stat(path, &sp) != 0) {
		perror(path);
		return 2;
	}
	if (stat(plain, &sn) != 0 || sn.st_mtime < sp.st_mtime) {
		snprintf(cmd, sizeof cmd, "trace-cmd convert --compression none -i '%s' -o '%s' "
			 ">/dev/null 2>&1", path, plain);
		if (system(cmd) != 0) {
			fprintf(stderr, "bench_readers: %s failed\n", cmd);
			return 1;
		}
	}
	double wall[NR][99], cpu[NR][99];
	int64_t chunks = 0, events = 0;
	for (int r = 0; r < runs; r++) {
		struct sample s[NR] = {
			[DEC] = probe(vms_tracedat_decompress_all, path),
			[ITER] = probe(iterate_all, plain),
			[REP1] = report(vms, path, "1"),
			[REP2] = report(vms, path, "2"),
		};
		for (int k = 0; k < NR; k++) {
			if (!s[k].ok) {
				fprintf(stderr, "bench_readers: measurement %d failed\n", k);
				return 1;
			}
			wall[k][r] = s[k].wall;
			cpu[k][r] = s[k].cpu;
		}
		chunks = s[DEC].count;
		events = s[ITER].count;
	}
	double mw[NR], mc[NR];
	for (int k = 0; k < NR; k++) {
		mw[k] = median(wall[k], runs);
		mc[k] = median(cpu[k], runs);
	}
	double lw = mw[DEC] + mw[ITER], lc = mc[DEC] + mc[ITER];
	printf("file: %s (%lld chunks, %lld events); median of %d alternating rounds; %ld CPUs online\n",
	       path, (long long)chunks, (long long)events, runs, sysconf(_SC_NPROCESSORS_ONLN));
	printf("%-36s %10s %10s %14s %14s\n", "", "wall s", "CPU s", "limit/wall", "CPU/limit's");
	printf("%-36s %10.3f %10.3f\n", "decompress alone (1 thread)", mw[DEC], mc[DEC]);
	printf("%-36s %10.3f %10.3f\n", "iterate alone (uncompressed copy)", mw[ITER], mc[ITER]);
	printf("%-36s %10.3f %10.3f %14.2f %14.2f\n", "limit (the sum)", lw, lc, 1.0, 1.0);
	printf("%-36s %10.3f %10.3f %14.2f %14.2f\n", "report --threads 1", mw[REP1], mc[REP1],
	       lw / mw[REP1], mc[REP1] / lc);
	printf("%-36s %10.3f %10.3f %14.2f %14.2f\n", "report --threads 2", mw[REP2], mc[REP2],
	       lw / mw[REP2], mc[REP2] / lc);
	printf("(report's figures include opening the file and the analyses; the goal: limit/wall "
	       ">= 0.9, CPU/limit's <= 1.1)\n");
	return 0;
}
