/* bench_tracer: the cost of a trace point of the vmscope tracer library, and of the same
 * trace point with LTTng-UST in the same run.
 *
 *   bench_tracer [-n EVENTS] [-R ROUNDS] [-k] [-F]
 *
 * Disabled cost: 10^8 calls of a never-enabled trace point, timed in batches of 10^4 with
 * the TSC. Enabled cost: EVENTS (default 10 M) calls with two u64 arguments, timed in
 * batches of 1000; every 100 000 events the run pauses (untimed) to let the trace be written
 * out (vmst_flush; a 20 ms sleep for LTTng's consumer daemon) so that nothing is lost and
 * the figure is the cost of recording, not of dropping. Median and p99 are over batches.
 * Then the sustained rate: full speed for 3 s (how many are dropped), and the highest paced
 * rate that loses nothing. LTTng-UST: its own lttng-sessiond (--no-kernel --daemonize; an
 * already running one is used and left running), a session with 8 x 4 MiB sub-buffers, the
 * same loops in a child process, ROUNDS times (default 3), each followed by a round of the
 * vmscope tracer's disabled and enabled loops in this process, so that the two alternate;
 * the ratio is of the medians of the rounds; the events counted afterwards with babeltrace2.
 * Flush latency under load (also alone with -F): in a child process, 4 threads emit at full
 * speed into 64 MiB buffers (8 x 8 MiB), then 2 MiB (the default), while the main thread
 * times 20 calls of vmst_flush() 100 ms apart; printed: median and maximum, the most bytes the
 * writer wrote during one flush against the bound tracer.h states, (bufsize + sub-buffer) x
 * threads + one sub-buffer, and the writer's rate W over the run (written bytes / seconds).
 * -k keeps the traces (in /tmp/bench-tracer.XXXXXX). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-tracer.h"

#ifdef HAVE_LTTNG
#define TRACEPOINT_DEFINE
#define TRACEPOINT_CREATE_PROBES
#include "bench_tracer_lttng.h"
#endif

#define BATCH 1000
#define CHUNK 100000
#define DIS_BATCH 10000
#define DIS_CALLS 100000000ull

static double ghz;   /* TSC cycles per ns */

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void calibrate(void)
{
	uint64_t n0 = now_ns(), t0 = rdtsc();
	struct timespec d = {0, 50 * 1000 * 1000};
	nanosleep(&d, NULL);
	uint64_t n1 = now_ns(), t1 = rdtsc();
	ghz = (double)(t1 - t0) / (double)(n1 - n0);
}

struct samples {
	double *v;
	size_t n, cap;
};

static void add(struct samples *s, double x)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 4096;
		s->v = realloc(s->v, s->cap * sizeof *s->v);
		if (!s->v) {
			perror("realloc");
			exit(1);
		}
	}
	s->v[s->n++] = x;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void summary(struct samples *s, double *med, double *p99)
{
	if (!s->n) {
		*med = *p99 = 0;
		return;
	}
	qsort(s->v, s->n, sizeof *s->v, cmp_d);
	*med = s->v[s->n / 2];
	*p99 = s->v[(size_t)((double)(s->n - 1) * 0.99)];
}

/* ---- vmscope tracer ---- */

/* Ten calls per loop iteration, so that the loop's own increment and branch weigh little
 * in the per-call figure (the same for the LTTng-UST peer). */
#define TEN(call) call; call; call; call; call; call; call; call; call; call

static void vmst_disabled(struct samples *s)
{
	for (uint64_t b = 0; b < DIS_CALLS / DIS_BATCH; b++) {
		uint64_t t0 = rdtsc();
		for (uint64_t i = 0; i < DIS_BATCH; i += 10) {
			TEN(trace_bench_off(i, b));
		}
		add(s, (double)(rdtsc() - t0) / DIS_BATCH / ghz);
	}
}

static void vmst_enabled(uint64_t n, struct samples *s)
{
	for (uint64_t done = 0; done < n;) {
		for (uint64_t c = 0; c < CHUNK && done < n; c += BATCH, done += BATCH) {
			uint64_t t0 = rdtsc();
			for (uint64_t i = 0; i < BATCH; i++)
				trace_bench_ev(done + i, i);
			add(s, (double)(rdtsc() - t0) / BATCH / ghz);
		}
		vmst_flush();   /* untimed: the writer catches up */
	}
}

struct job {
	uint64_t n;
	struct samples s;
	pthread_barrier_t *bar;
};

static void *vmst_enabled_thread(void *arg)
{
	struct job *j = arg;
	trace_bench_ev(0, 0);   /* first event: the thread's buffer is set up (untimed) */
	vmst_flush();
	pthread_barrier_wait(j->bar);
	vmst_enabled(j->n, &j->s);
	return NULL;
}

static void totals(uint64_t *written, uint64_t *dropped)
{
	struct vmst_thread_stats st[64];
	size_t n = vmst_stats(st, 64);
	*written = *dropped = 0;
	for (size_t i = 0; i < n && i < 64; i++) {
		*written += st[i].written;
		*dropped += st[i].dropped;
	}
}

/* Emit at `rate` events/s (0 = full speed) for `secs`; returns events emitted. */
static uint64_t paced(double rate, double secs)
{
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)(secs * 1e9), n = 0;
	for (;;) {
		for (uint64_t i = 0; i < BATCH; i++)
			trace_bench_ev(n + i, i);
		n += BATCH;
		uint64_t t = now_ns();
		if (t >= end)
			break;
		if (rate > 0) {
			uint64_t due = t0 + (uint64_t)((double)n / rate * 1e9);
			while (now_ns() < due)
				;
		}
	}
	return n;
}

/* ---- LTTng-UST ---- */

#ifdef HAVE_LTTNG
static int lttng_child(uint64_t n)
{
	/* the session daemon enables the event when this process registers */
	for (int i = 0; i < 1000 && !tracepoint_enabled(bench_lttng, ev); i++) {
		struct timespec d = {0, 10 * 1000 * 1000};
		nanosleep(&d, NULL);
	}
	if (!tracepoint_enabled(bench_lttng, ev)) {
		printf("LTTNG-NOT-ENABLED\n");
		return 1;
	}
	struct samples dis = {0}, en = {0};
	for (uint64_t b = 0; b < DIS_CALLS / DIS_BATCH; b++) {
		uint64_t t0 = rdtsc();
		for (uint64_t i = 0; i < DIS_BATCH; i += 10) {
			TEN(tracepoint(bench_lttng, off, i, b));
		}
		add(&dis, (double)(rdtsc() - t0) / DIS_BATCH / ghz);
	}
	for (uint64_t done = 0; done < n;) {
		for (uint64_t c = 0; c < CHUNK && done < n; c += BATCH, done += BATCH) {
			uint64_t t0 = rdtsc();
			for (uint64_t i = 0; i < BATCH; i++)
				tracepoint(bench_lttng, ev, done + i, i);
			add(&en, (double)(rdtsc() - t0) / BATCH / ghz);
		}
		struct timespec d = {0, 20 * 1000 * 1000};
		nanosleep(&d, NULL);   /* untimed: the consumer daemon catches up */
	}
	double dm, dp, em, ep;
	summary(&dis, &dm, &dp);
	summary(&en, &em, &ep);
	printf("LTTNG %.4f %.4f %.3f %.3f\n", dm, dp, em, ep);
	free(dis.v);
	free(en.v);
	return 0;
}

static int sh(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* One round of the vmscope tracer's side, between LTTng's: disabled and enabled medians. */
static void vmst_round(uint64_t n, double *dm, double *em)
{
	struct samples d = {0}, e = {0};
	double p;
	vmst_disabled(&d);
	summary(&d, dm, &p);
	vmst_enabled(n, &e);
	summary(&e, em, &p);
	free(d.v);
	free(e.v);
}

static double median_of(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* LTTng-UST in `rounds` child processes of n events each, alternating with rounds of the
 * vmscope tracer in this process (vmst_round), so that a change of the machine's load falls
 * on both; the ratio is of the medians of the rounds' medians. */
static void lttng_peer(const char *tmp, uint64_t n, int rounds)
{
	char home[4200], out[4300], cmd[9000], session[64];
	char line[256] = "";
	double dm = 0, dp = 0, em = 0, ep = 0;
	double l_dm[16], l_em[16], v_dm[16], v_em[16];
	int done = 0;
	bool ok = false;
	snprintf(home, sizeof home, "%s/lttng-home", tmp);
	snprintf(out, sizeof out, "%s/lttng-trace", tmp);
	snprintf(session, sizeof session, "vmstbench%d", (int)getpid());
	mkdir(home, 0700);
	setenv("LTTNG_HOME", home, 1);
	bool started = false;
	if (sh("lttng list >/dev/null 2>&1") != 0) {
		if (sh("lttng-sessiond --no-kernel --daemonize >/dev/null 2>&1") != 0) {
			printf("LTTng-UST: cannot start lttng-sessiond: peer not measured\n");
			return;
		}
		started = true;
	} else {
		printf("LTTng-UST: using the session daemon already running\n");
	}
	snprintf(cmd, sizeof cmd,
		 "lttng create %s --output='%s' >/dev/null && "
		 "lttng enable-channel -u -s %s ch --subbuf-size=4M --num-subbuf=8 >/dev/null && "
		 "lttng enable-event -u -s %s -c ch bench_lttng:ev >/dev/null && "
		 "lttng start %s >/dev/null",
		 session, out, session, session, session);
	if (sh(cmd) != 0) {
		printf("LTTng-UST: cannot set up the session: peer not measured\n");
		goto stop_daemon;
	}
	for (int r = 0; r < rounds; r++) {
		int pfd[2];
		if (pipe(pfd) != 0)
			goto destroy;
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0) {
			dup2(pfd[1], 1);
			close(pfd[0]);
			char nbuf[32];
			snprintf(nbuf, sizeof nbuf, "%" PRIu64, n);
			execl("/proc/self/exe", "bench_tracer", "--lttng-child", nbuf, (char *)NULL);
			_exit(127);
		}
		close(pfd[1]);
		FILE *f = fdopen(pfd[0], "r");
		ok = false;
		while (f && fgets(line, sizeof line, f))
			if (sscanf(line, "LTTNG %lf %lf %lf %lf", &dm, &dp, &em, &ep) == 4)
				ok = true;
		if (f)
			fclose(f);
		int st;
		waitpid(pid, &st, 0);
		if (!ok)
			break;
		l_dm[done] = dm;
		l_em[done] = em;
		vmst_round(n, &v_dm[done], &v_em[done]);
		printf("  round %d: LTTng-UST enabled %.2f ns, disabled %.3f ns; vmscope tracer "
		       "enabled %.2f ns, disabled %.3f ns (medians over batches)\n", r + 1, em, dm,
		       v_em[done], v_dm[done]);
		done++;
	}
	ok = done > 0;
destroy:
	snprintf(cmd, sizeof cmd, "lttng stop %s >/dev/null 2>&1; lttng destroy %s >/dev/null 2>&1",
		 session, session);
	sh(cmd);
	if (ok) {
		/* count what LTTng wrote */
		snprintf(cmd, sizeof cmd, "babeltrace2 '%s' -c sink.utils.counter 2>/dev/null", out);
		FILE *p = popen(cmd, "r");
		unsigned long long events = 0, disc_msgs = 0, v;
		char what[128];
		while (p && fgets(line, sizeof line, p)) {
			if (sscanf(line, " %llu %127[^\n]", &v, what) == 2) {
				if (!strcmp(what, "Event messages"))
					events = v;
				else if (!strcmp(what, "Discarded event messages"))
					disc_msgs = v;
			}
		}
		if (p)
			pclose(p);
		printf("\nLTTng-UST %s, same trace point, %d rounds alternating with the vmscope "
		       "tracer's (8 x 4 MiB sub-buffers):\n", "2.13", done);
		printf("  disabled            median %.3f ns   p99 %.3f ns   (last round)\n", dm, dp);
		printf("  enabled, 1 thread   median %.2f ns   p99 %.2f ns   (last round; %llu of %"
		       PRIu64 " events in its trace, %llu discard notices)\n",
		       em, ep, events, n * (uint64_t)done, disc_msgs);
		double le = median_of(l_em, done), ld = median_of(l_dm, done);
		double ve = median_of(v_em, done), vd = median_of(v_dm, done);
		printf("\nratio LTTng-UST / vmscope tracer (medians of the %d rounds; times per call "
		       "by the TSC, i.e. wall time, on one busy thread: its CPU time): enabled %.2f / "
		       "%.2f ns = %.1fx, disabled %.3f / %.3f ns = %.2fx\n", done, le, ve, le / ve,
		       ld, vd, ld / vd);
	} else {
		printf("LTTng-UST: the child did not report (event not enabled?): %s", line);
	}
stop_daemon:
	if (started) {
		char pidf[4300];
		if (geteuid() == 0)
			snprintf(pidf, sizeof pidf, "/var/run/lttng/lttng-sessiond.pid");
		else
			snprintf(pidf, sizeof pidf, "%s/.lttng/lttng-sessiond.pid", home);
		FILE *pf = fopen(pidf, "r");
		int spid = 0;
		if (pf && fscanf(pf, "%d", &spid) == 1 && spid > 1)
			kill(spid, SIGTERM);
		if (pf)
			fclose(pf);
		printf("(lttng-sessiond started for this run and stopped, pid %d)\n", spid);
	}
}
#endif

/* ---- flush latency under load ---- */

static uint32_t flood_stop;

static void *flood(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; !__atomic_load_n(&flood_stop, __ATOMIC_RELAXED); i += 10) {
		TEN(trace_bench_ev(i, i));
	}
	return NULL;
}

static void flush_latency(const char *tmp, unsigned mib)
{
	enum { THREADS = 4, FLUSHES = 20 };
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		char cfg[4300];
		snprintf(cfg, sizeof cfg, "file=%s/flush-%u,enable=bench_ev,bufsize=%uM,subbufs=8",
			 tmp, mib, mib);
		if (vmst_init(cfg) != 0)
			_exit(1);
		pthread_t th[THREADS];
		for (int i = 0; i < THREADS; i++)
			pthread_create(&th[i], NULL, flood, NULL);
		uint64_t t0 = now_ns();
		struct timespec d = { 0, 500 * 1000 * 1000 };
		nanosleep(&d, NULL);   /* every buffer full, the writer at its pace */
		struct samples lat = { 0 };
		uint64_t most = 0;   /* bytes written during one flush, at most */
		for (int k = 0; k < FLUSHES; k++) {
			uint64_t a = now_ns();
			vmst_flush();
			add(&lat, (double)(now_ns() - a) / 1e6);
			uint64_t b = vmst_debug_flush_written_bytes();
			most = b > most ? b : most;
			d.tv_nsec = 100 * 1000 * 1000;
			nanosleep(&d, NULL);
		}
		__atomic_store_n(&flood_stop, 1, __ATOMIC_RELAXED);
		for (int i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
		double secs = (double)(now_ns() - t0) / 1e9;
		double med, p99;
		summary(&lat, &med, &p99);
		qsort(lat.v, lat.n, sizeof *lat.v, cmp_d);
		double w = (double)vmst_debug_written_bytes() / secs;   /* bytes/s */
		double bound_b = ((mib + mib / 8.0) * THREADS + mib / 8.0) * 1048576.0;
		printf("  %2u MiB buffers: flush median %.1f ms, max %.1f ms (%d flushes); "
		       "at most %.1f MiB written during one flush, bound %.3g MiB x %d + %.3g = %.4g "
		       "MiB; writer W = %.0f MB/s, bound / W = %.0f ms\n", mib, med,
		       lat.v[lat.n - 1], FLUSHES, (double)most / 1048576.0, mib + mib / 8.0, THREADS,
		       mib / 8.0, bound_b / 1048576.0, w / 1e6, bound_b / w * 1e3);
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
}

static void flush_section(const char *tmp)
{
	printf("\nflush latency under load (4 threads at full speed, 8 sub-buffers):\n");
	flush_latency(tmp, 64);
	flush_latency(tmp, 2);
}

int main(int argc, char **argv)
{
	uint64_t n = 10000000;
	bool keep = false, flush_only = false;
	calibrate();
#ifdef HAVE_LTTNG
	if (argc == 3 && !strcmp(argv[1], "--lttng-child"))
		return lttng_child(strtoull(argv[2], NULL, 10));
#endif
	int opt;
	int rounds = 3;
	while ((opt = getopt(argc, argv, "n:R:kFh")) != -1) {
		if (opt == 'n')
			n = strtoull(optarg, NULL, 10);
		else if (opt == 'R')
			rounds = atoi(optarg);
		else if (opt == 'k')
			keep = true;
		else if (opt == 'F')
			flush_only = true;
		else {
			fprintf(stderr, "usage: bench_tracer [-n EVENTS] [-R ROUNDS] [-k] [-F]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (rounds < 1 || rounds > 16) {
		fprintf(stderr, "bench_tracer: -R takes 1 to 16 rounds\n");
		return 2;
	}
	n = (n + BATCH - 1) / BATCH * BATCH;
	char tmp[] = "/tmp/bench-tracer.XXXXXX";
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	if (flush_only) {
		flush_section(tmp);
		goto cleanup;
	}
	printf("bench_tracer: TSC %.3f GHz, %" PRIu64 " events per enabled run\n", ghz, n);

	struct samples dis = {0}, en1 = {0};
	double dm, dp, e1m, e1p, e2m, e2p;
	vmst_disabled(&dis);
	summary(&dis, &dm, &dp);

	char cfg[4300];
	snprintf(cfg, sizeof cfg, "file=%s/vmst,enable=bench_ev,bufsize=32M,subbufs=8", tmp);
	if (vmst_init(cfg) != 0) {
		fprintf(stderr, "vmst_init failed\n");
		return 1;
	}
	/* the floor: reading the clock the tracer uses, alone */
	struct samples clk = {0};
	double cm, cp;
	uint64_t sink = 0;
	for (int b = 0; b < 10000; b++) {
		uint64_t t0 = rdtsc();
		for (int i = 0; i < BATCH; i++)
			sink += vmst__now();
		add(&clk, (double)(rdtsc() - t0) / BATCH / ghz);
	}
	summary(&clk, &cm, &cp);
	free(clk.v);

	uint64_t w0, d0, w1, d1;
	totals(&w0, &d0);
	vmst_enabled(n, &en1);
	summary(&en1, &e1m, &e1p);
	totals(&w1, &d1);
	uint64_t lost1 = d1 - d0;

	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, 2);
	struct job j[2] = {{n / 2, {0}, &bar}, {n / 2, {0}, &bar}};
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, vmst_enabled_thread, &j[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	struct samples en2 = {0};
	for (int i = 0; i < 2; i++) {
		for (size_t k = 0; k < j[i].s.n; k++)
			add(&en2, j[i].s.v[k]);
		free(j[i].s.v);
	}
	summary(&en2, &e2m, &e2p);
	totals(&w0, &d0);
	uint64_t lost2 = d0 - d1;

	/* full speed for 3 s: what the writer keeps up with */
	vmst_flush();
	totals(&w0, &d0);
	uint64_t t0 = now_ns();
	uint64_t full = paced(0, 3.0);
	double full_s = (double)(now_ns() - t0) / 1e9;
	vmst_flush();
	totals(&w1, &d1);
	uint64_t full_drop = d1 - d0;
	double written_rate = (double)(full - full_drop) / full_s;
	/* the highest paced rate without loss, starting from what was written at full speed */
	double rate = full_drop ? written_rate * 0.9 : (double)full / full_s, ok_rate = 0;
	for (int attempt = 0; attempt < 5 && !ok_rate; attempt++) {
		totals(&w0, &d0);
		uint64_t e = paced(full_drop ? rate : 0, 1.5);
		vmst_flush();
		totals(&w1, &d1);
		(void)e;
		if (d1 == d0)
			ok_rate = rate;
		else
			rate *= 0.7;
	}
	printf("\nLTTng-UST and the vmscope tracer, alternating rounds of %" PRIu64 " events:\n", n);
	fflush(stdout);
#ifdef HAVE_LTTNG
	lttng_peer(tmp, n, rounds);
#else
	printf("\nLTTng-UST: not built (liblttng-ust-dev missing): peer not measured\n");
	(void)rounds;
#endif
	vmst_shutdown();

	printf("\nvmscope tracer (clock %s, 8 x 4 MiB sub-buffers per thread):\n", vmst_clock_name());
	printf("  disabled            median %.3f ns   p99 %.3f ns   (%llu calls)\n", dm, dp,
	       (unsigned long long)DIS_CALLS);
	printf("  clock read alone    median %.2f ns   p99 %.2f ns   (the floor of an enabled "
	       "event on this machine)%s\n", cm, cp, sink == 1 ? " " : "");
	printf("  enabled, 1 thread   median %.2f ns   p99 %.2f ns   (%" PRIu64 " lost)\n", e1m,
	       e1p, lost1);
	printf("  enabled, 2 threads  median %.2f ns   p99 %.2f ns   (%" PRIu64 " lost)\n", e2m,
	       e2p, lost2);
	printf("  full speed, 1 thread, 3 s: %.1f M events/s produced, %.1f M/s written, "
	       "%.1f%% dropped\n",
	       (double)full / full_s / 1e6, written_rate / 1e6,
	       full ? 100.0 * (double)full_drop / (double)full : 0.0);
	if (ok_rate > 0)
		printf("  sustained without loss (paced, 1.5 s): %.1f M events/s (%.0f MB/s of "
		       "trace)\n", ok_rate / 1e6, ok_rate * 26 / 1e6);
	else
		printf("  sustained without loss: not found in 5 attempts\n");

	flush_section(tmp);

	free(dis.v);
	free(en1.v);
	free(en2.v);
cleanup:
	if (!keep) {
		char cmd[4400];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", tmp);
	} else {
		printf("traces kept in %s\n", tmp);
	}
	return 0;
}
