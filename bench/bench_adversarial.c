/* bench_adversarial: the hostile trace shapes of issue 7 at sizes that were quadratic or took
 * gigabytes before, each written by tests/common/hostile_shapes.c and given to the vmscope
 * binary (a child process), with its CPU time (user + system) and peak memory (ru_maxrss of
 * the child)
 * against a stated bound. A benchmark, not a test: run it on a release build,
 *
 *   bench_adversarial [-d DIR] [-s SHAPE] [-n N] path/to/vmscope
 *
 * and it prints one line per shape and "all within bounds" or what exceeded them (exit 1).
 * Not here: the CTF thread-name cap of issue 20.8 (its directory comes from the tracer; test
 * bounds-cli makes it) and the mapping limit (hostile's test_ctf_map_limit).
 * The bounds are what "near-linear in the input" means here: at most 10 CPU s and 300 MiB for
 * a shape whose model stays small (the files are at most tens of MB); the chunk bomb's memory
 * is allowed up to the reader's chunk budget (64 MiB + 32 x the file size); where the model
 * or the output grows with N, so much more per unit of N (see runs[]). CPU time, not wall
 * time, so that a shared machine's load does not count; compare a shape at N and 2N
 * (-s SHAPE -n N) to see the slope. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hostile_shapes.h"

struct run {
	const char *shape;
	const char *cmd;      /* the vmscope command the shape is aimed at */
	double max_s;
	double max_mib;       /* 0: the chunk budget of the file */
	double per_n_us;      /* and so much more per unit of N (the model grows with N) */
	double per_n_kib;
};

/* Which command each shape stresses (the reproduction) */
static const struct run runs[] = {
	{"fmt-nested", "info", 10, 300, 0, 0},
	{"fmt-op-chain", "info", 10, 300, 0, 0},
	{"fmt-many-refs", "info", 10, 300, 0, 0},
	{"cpu-overlap", "info", 10, 300, 0, 0},
	{"chunk-bomb", "report", 10, 0, 0, 0},
	{"section-bomb", "info", 10, 300, 0, 0},
	{"guest-vcpus", "report", 10, 300, 0, 0},
	/* one untraced guest per thread, at most VMS_MODEL_MAX_UNTRACED (4096) of them, the rest
	 * counted (issue 20.8: each was a machine of ~2.5 KiB: 2.5 GB at N 1,000,000; now 67.5 MiB
	 * and 0.8 s, 22 MiB at 200,000) */
	{"entry-tids", "report", 10, 64, 5, 0.1},
	/* N CPUs, 101 N events */
	{"many-streams", "dump", 10, 300, 101 * 40, 0},
	/* N CPUs of 100 events, CPU after CPU: parsed once, the other CPUs' events queued */
	{"xml-unordered", "dump", 10, 300, 100 * 40, 0},
	/* N mapped ids >= 65536, 10 N events: a hashed lookup (was linear in the ids) */
	{"st-big-ids", "dump", 10, 300, 10, 0},
	/* N events of 1 MiB strings in pages of 2 MiB (was 0.35 s per event): at most 0.1 s
	 * and nothing kept per event */
	{"print-big", "dump", 10, 300, 1e5, 0},
	/* 16 hard links and 2,000 symlinks to one CTF stream file of one packet of N MiB: one
	 * stream (issue 20.8: each name was a stream, decoded in full: past 60 s at 64), 17,476 N
	 * events; it keeps about 4 MiB of its file mapped behind its cursor (issue 7.6: was the
	 * whole packet per stream: 1 GB at 64) */
	{"ctf-shared-packet", "report", 10, 300, 2e5, 0},
	/* 30,000 vCPUs, N lost-records markers: each marker's work is what changed since the
	 * one before (was 30,000 vCPU updates per marker) */
	{"xen-lost-markers", "report", 10, 300, 0, 0},
	/* issue 20.8: N domains each running vCPU 4095 (48 bytes a domain): one vCPU each (a
	 * domain had 4,096: 100 domains took 1.4 GB); a guest machine per domain */
	{"xen-high-vcpus", "report", 10, 64, 60, 4},
	/* as entry-tids, from XML (93 MB at 200,000: 6.4 s CPU, 46 MiB) */
	{"xml-entry-tids", "report", 10, 64, 60, 0.5},
	/* an attribute of N MiB in the second <event>: refused by libxml2 past 10,000,000 bytes,
	 * the <event>'s byte offset named (issue 20.8) */
	{"xml-huge-attr", "info", 10, 300, 0, 0},
	/* N exit-table rows of two tables (the vCPU's, the guest's) and exit storms: ~2 KiB
	 * each */
	{"xml-exit-reasons", "report", 10, 64, 30, 2.5},
	/* the Perfetto export (to /dev/null) of the model shapes: per unnamed guest its group,
	 * vCPU tracks and names (~0.5 KiB over report's model). xml-entry-tids: each host thread
	 * runs instead of the 64 waiting vCPUs, 64 lanes of it, 64 N in all, of which the
	 * writer keeps nothing (each track kept 0.8 KiB: 1.2 GB at N 20,000, 5.7 GB at 200,000) */
	{"entry-tids", "export", 10, 64, 5, 0.1},
	{"xml-entry-tids", "export", 10, 64, 60, 0.5},
	{"xml-exit-reasons", "export", 10, 64, 30, 2.5},
	/* the HTML page of the model shapes: report's model, plus 2,176 timeline rows at most,
	 * whose summaries share a budget of 2^22 buckets (151 MiB; each row had 16,384 buckets
	 * of 36 bytes: 1,126-1,170 MiB at N 200,000, now 693-709 MiB) */
	{"entry-tids", "html", 10, 220, 5, 0.1},
	{"xml-entry-tids", "html", 10, 220, 60, 0.5},
};

/* A shape's file, or its directory (CTF) with the files in it. */
static void remove_shape(const char *path)
{
	DIR *d = opendir(path);
	if (!d) {
		unlink(path);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		char p[1024];
		if (e->d_name[0] != '.' && snprintf(p, sizeof p, "%s/%s", path, e->d_name) < (int)sizeof p)
			unlink(p);
	}
	closedir(d);
	rmdir(path);
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Runs vmscope CMD FILE with stdout to /dev/null; its exit status, CPU seconds and peak MiB. */
static int run_vmscope(const char *vmscope, const char *cmd, const char *file, double *secs,
		       double *mib)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (strcmp(cmd, "export") == 0 || strcmp(cmd, "html") == 0)
			execl(vmscope, vmscope, cmd, "-o", "/dev/null", file, (char *)NULL);
		else
			execl(vmscope, vmscope, cmd, file, (char *)NULL);
		_exit(127);
	}
	int st;
	struct rusage ru;
	if (wait4(pid, &st, 0, &ru) < 0)
		return -1;
	/* CPU time (user + system) of the child: the machine is shared, wall time is not the
	 * shape's */
	*secs = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	*mib = (double)ru.ru_maxrss / 1024.0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *only = NULL;
	unsigned long long n_override = 0;
	int c;
	while ((c = getopt(argc, argv, "d:s:n:")) != -1) {
		if (c == 'd')
			dir = optarg;
		else if (c == 's')
			only = optarg;
		else if (c == 'n')
			n_override = strtoull(optarg, NULL, 10);
		else
			return 2;
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "usage: bench_adversarial [-d DIR] [-s SHAPE] [-n N] path/to/vmscope\n");
		return 2;
	}
	const char *vmscope = argv[optind];
	char tmpl[] = "/tmp/vms-adversarial-XXXXXX";
	if (!dir && !(dir = mkdtemp(tmpl))) {
		perror("mkdtemp");
		return 1;
	}
	printf("%-16s %9s %10s %-7s %4s %9s %9s %9s %9s  %s\n", "shape", "N", "file", "command",
	       "exit", "CPU s", "bound s", "peak MiB", "bound", "verdict");
	int bad = 0;
	for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
		const struct run *r = &runs[i];
		if (only && strcmp(only, r->shape) != 0)
			continue;
		const struct hostile_shape *s = hostile_shape(r->shape);
		uint64_t n = n_override ? n_override : s->large;
		char path[512];
		snprintf(path, sizeof path, "%s/%s.dat", dir, r->shape);
		double g0 = now();
		if (s->write(path, n) != 0) {
			printf("%-16s cannot be written\n", r->shape);
			bad = 1;
			continue;
		}
		double gen = now() - g0;
		struct stat st;
		stat(path, &st);
		double secs = 0, mib = 0;
		int rc = run_vmscope(vmscope, r->cmd, path, &secs, &mib);
		double bound = r->max_mib ? r->max_mib + r->per_n_kib * (double)n / 1024
					  : (64.0 * 1048576 + 32.0 * (double)st.st_size) / 1048576 + 64;
		double max_s = r->max_s + r->per_n_us * (double)n / 1e6;
		bool ok = rc >= 0 && rc <= 2 && secs <= max_s && mib <= bound;
		bad |= !ok;
		printf("%-16s %9llu %9.1fK %-7s %4d %9.2f %9.0f %9.1f %9.0f  %s (written in %.1f s)\n",
		       r->shape, (unsigned long long)n, (double)st.st_size / 1024, r->cmd, rc, secs,
		       max_s, mib, bound, ok ? "ok" : "EXCEEDED", gen);
		fflush(stdout);
		remove_shape(path);
	}
	printf(bad ? "some shapes exceeded their bounds\n" : "all within bounds\n");
	if (dir == tmpl)
		rmdir(dir);
	return bad;
}
