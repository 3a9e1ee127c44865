/* bench_cores: what vmscope's whole analysis would take on N cores, read off the CPU time of
 * each of its threads (issue 24: "on a synthesized 64-CPU host, each thread's CPU time and the
 * critical path, so that the time on N cores can be read off; this machine shows only 2").
 *
 * For each thread count T (--threads T: the reading thread and T - 1 pool workers that
 * decompress the streams' chunks), a forked child opens a session of the files and runs the
 * analysis with no output, as bench_analysis does; it reports its wall time, the reading
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID: parsing, the merge, the analyses, and the chunks
 * it decompresses itself) and each worker's (vms_pool_worker_cpu). The reading thread is the
 * critical path: nothing else can take its work. On T cores the run takes at least
 *   max(reading thread's CPU, all threads' CPU / T)
 * which is the estimate printed; the wall time measured here says only what 2 shared cores
 * gave. Runs alternate over the thread counts, R rounds; medians.
 *
 * usage: bench_cores [-r RUNS] [-t "1 2 4 8 16 64"] FILE...
 * A 64-CPU host: vmscope synth --scenario cloud-host --guests 8 --vcpus 8 --host-cpus 64
 *                --traced 1 --events 10000000 --out DIR   (DIR/host.dat, DIR/guest-0.dat)
 * (bench/run.sh makes it and runs this.)
 *
 * 2026-12-02 23:12 UTC, release build, load 1.1, `bench_cores -r 3` on that host (64 CPU
 * streams, 67 MB zstd) and its traced guest, 10.0 M events:
 *   threads  wall s  reader CPU s  workers CPU s (n, busiest)  all CPU s  on T cores >= s
 *         1   3.051         3.050          0.000 ( 0, 0.000)       3.050           3.050
 *         2   2.621         2.617          0.689 ( 1, 0.689)       3.315           2.617
 *         4   2.634         2.617          0.697 ( 3, 0.240)       3.325           2.617
 *        16   2.700         2.642          0.741 (15, 0.058)       3.383           2.642
 *        64   2.897         2.740          1.098 (63, 0.026)       3.852           2.740
 * Decompression (0.7 s) spreads over the workers; the reading thread's 2.6 s (parsing 64
 * streams, the merge and the analysis of 64 vCPUs: 262 ns per event) does not, so two cores
 * already give all there is: the analysis, one thread for all the guests of a host, is the
 * critical path (docs/DESIGN.md says why it is one). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/pool.h"
#include "vmscope/session.h"

#define MAX_T 64
#define MAX_R 31

struct sample {
	double wall, reader, workers, worst; /* s: wall, reading thread, all workers, busiest one */
	uint64_t events;
	uint32_t nr_workers;
	int ok;
};

static double now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void child(char **files, int n, unsigned threads, int fd)
{
	struct sample r = { 0 };
	struct vms_session_opts opts = { 0 };
	opts.threads = threads;     /* (the session sets the pool's threads from its options) */
	double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
	struct vms_error err = { 0 };
	struct vms_session *s = vms_session_open((const char *const *)files, (uint32_t)n, &opts, &err);
	int rc = s ? vms_session_run(s, NULL, NULL, NULL, &err) : -1;
	if (rc < 0)
		fprintf(stderr, "vmscope: %s\n", err.msg);
	r.events = s ? vms_session_events(s) : 0;
	vms_session_free(s);   /* the last source closed stops the workers: their times are in */
	r.reader = now(CLOCK_THREAD_CPUTIME_ID) - c0;
	r.wall = now(CLOCK_MONOTONIC) - w0;
	uint64_t ns[MAX_T];
	r.nr_workers = vms_pool_worker_cpu(ns, MAX_T);
	for (uint32_t i = 0; i < r.nr_workers; i++) {
		r.workers += (double)ns[i] * 1e-9;
		if ((double)ns[i] * 1e-9 > r.worst)
			r.worst = (double)ns[i] * 1e-9;
	}
	r.ok = rc >= 0;
	if (write(fd, &r, sizeof r) != (ssize_t)sizeof r)
		_exit(1);
	_exit(r.ok ? 0 : 1);
}

static struct sample measure(char **files, int n, unsigned threads)
{
	struct sample r = { 0 };
	int p[2];
	if (pipe(p) < 0)
		return r;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		child(files, n, threads, p[1]);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &r, sizeof r) != (ssize_t)sizeof r)
		r.ok = 0;
	close(p[0]);
	int st;
	if (pid > 0)
		waitpid(pid, &st, 0);
	return r;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int runs = 3, opt;
	const char *tlist = "1 2 4 8 16 64";
	while ((opt = getopt(argc, argv, "r:t:")) != -1) {
		if (opt == 'r')
			runs = atoi(optarg);
		else if (opt == 't')
			tlist = optarg;
		else
			goto usage;
	}
	if (optind >= argc || runs < 1 || runs > MAX_R)
		goto usage;
	unsigned ts[MAX_T];
	int nt = 0;
	char *dup = strdup(tlist);
	for (char *tok = strtok(dup, " ,"); tok && nt < MAX_T; tok = strtok(NULL, " ,")) {
		int t = atoi(tok);
		if (t < 1 || t > MAX_T + 1)
			goto usage;
		ts[nt++] = (unsigned)t;
	}
	free(dup);
	if (!nt)
		goto usage;
	static struct sample s[MAX_T][MAX_R];
	for (int r = 0; r < runs; r++)
		for (int i = 0; i < nt; i++) {
			s[i][r] = measure(argv + optind, argc - optind, ts[i]);
			if (!s[i][r].ok) {
				fprintf(stderr, "bench_cores: the run at --threads %u failed\n", ts[i]);
				return 1;
			}
		}
	double load[3] = { 0 };
	if (getloadavg(load, 3) < 0)
		load[0] = -1;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	printf("files:");
	for (int i = optind; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n%" PRIu64 " events; medians of %d alternating rounds; %ld CPUs online, load %.2f\n",
	       s[0][0].events, runs, cpus, load[0]);
	printf("threads  wall s   reader CPU s  workers CPU s (n, busiest)  all CPU s   on T cores >= s\n");
	for (int i = 0; i < nt; i++) {
		double w[MAX_R], rd[MAX_R], wk[MAX_R], worst[MAX_R], all[MAX_R], est[MAX_R];
		for (int r = 0; r < runs; r++) {
			w[r] = s[i][r].wall;
			rd[r] = s[i][r].reader;
			wk[r] = s[i][r].workers;
			worst[r] = s[i][r].worst;
			all[r] = rd[r] + wk[r];
			double par = all[r] / ts[i];
			est[r] = rd[r] > par ? rd[r] : par;
		}
		printf("%7u  %6.3f   %12.3f  %13.3f (%2u, %.3f)    %9.3f   %15.3f\n", ts[i],
		       median(w, runs), median(rd, runs), median(wk, runs), s[i][0].nr_workers,
		       median(worst, runs), median(all, runs), median(est, runs));
	}
	printf("(reader: the reading thread, the critical path; on T cores the run takes at least the\n"
	       " larger of its CPU and all threads' CPU / T; wall is what %ld shared CPUs gave)\n", cpus);
	return 0;
usage:
	fprintf(stderr, "usage: bench_cores [-r RUNS] [-t \"1 2 4 8 16 64\"] FILE...\n");
	return 2;
}
