/* bench_findings: what the wake-up latency analysis and the findings add to `vmscope report`
 * (issue 10: at most 20 % of report's time on the 50 M-event synthesized pair, memory flat).
 *
 * Two ways of running report's pass over the same files, each in a child process of its own
 * (bench_child.h: CPU time and peak memory from wait4; CPU time, not wall time, because the
 * machine may be shared):
 *   base      the session's analysis as report runs it, no latency, no findings
 *   findings  the same with the latency consumer and the findings' consumer subscribed, and
 *             the findings computed at the end: what report does (tools/vmscope/cmd-report.c)
 * With -x VMSCOPE, also `VMSCOPE report -o /dev/null FILE...` itself (everything report does,
 * its text included), to show that the library figures are the command's.
 * R runs each, interleaved (a change in the machine's load hits both); the least CPU time
 * of the runs is the figure (interference from other processes only adds), the median says
 * how noisy the machine was.
 * -m base|findings runs that one once, in this process (for valgrind --tool=callgrind).
 *
 * usage: bench_findings [-r RUNS] [-x VMSCOPE] [-m MODE] FILE... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_child.h"
#include "vmscope/findings.h"
#include "vmscope/latency.h"
#include "vmscope/session.h"

struct job {
	char **files;
	int n;
	bool findings;
	const char *vmscope;
};

static int run_pass(void *arg)
{
	const struct job *j = arg;
	struct vms_error err = { 0 };
	struct vms_session *s = vms_session_open((const char *const *)j->files, (uint32_t)j->n,
						 NULL, &err);
	if (!s) {
		fprintf(stderr, "bench_findings: %s\n", err.msg);
		return -1;
	}
	struct vms_latency *lat = NULL;
	struct vms_findings *fd = NULL;
	int r = 0;
	if (j->findings) {
		struct vms_observer lo, fo;
		lat = vms_latency_new(NULL, NULL, NULL, &lo);
		fd = vms_findings_new(NULL, &fo);
		if (!lat || !fd || vms_session_observe(s, &lo) || vms_session_observe(s, &fo))
			r = -1;
	}
	if (!r && vms_session_run(s, NULL, NULL, NULL, &err) < 0) {
		fprintf(stderr, "bench_findings: %s\n", err.msg);
		r = -1;
	}
	if (!r && fd) {
		uint32_t ns = vms_session_nr_sources(s);
		struct vms_source *srcs[16] = { 0 };
		for (uint32_t i = 0; i < ns && i < 16; i++)
			srcs[i] = vms_session_source(s, i);
		uint32_t nf = vms_findings_compute(fd, vms_session_analysis(s), lat, srcs,
						   ns < 16 ? ns : 16);
		if (getenv("BENCH_VERBOSE"))
			fprintf(stderr, "%u findings, %u threads with wake-ups\n", nf,
				vms_latency_nr_threads(lat));
	}
	if (!r && getenv("BENCH_VERBOSE"))
		fprintf(stderr, "%llu events, %llu passes\n",
			(unsigned long long)vms_session_events(s),
			(unsigned long long)vms_session_passes(s));
	vms_latency_free(lat);
	vms_findings_free(fd);
	vms_session_free(s);
	return r;
}

static int run_cli(void *arg)
{
	const struct job *j = arg;
	char **argv = calloc((size_t)j->n + 5, sizeof *argv);
	if (!argv)
		return -1;
	argv[0] = (char *)j->vmscope;
	argv[1] = "report";
	argv[2] = "-o";
	argv[3] = "/dev/null";
	for (int i = 0; i < j->n; i++)
		argv[4 + i] = j->files[i];
	execv(j->vmscope, argv);
	perror(j->vmscope);
	return -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct series {
	const char *name;
	double cpu[50], wall[50];
	long rss;
};

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int runs = 3, opt;
	const char *vmscope = NULL, *mode = NULL;
	while ((opt = getopt(argc, argv, "r:x:m:")) != -1) {
		switch (opt) {
		case 'r': runs = atoi(optarg); break;
		case 'x': vmscope = optarg; break;
		case 'm': mode = optarg; break;
		default: goto usage;
		}
	}
	if (optind >= argc || runs < 1 || runs > 50)
		goto usage;
	struct job base = { argv + optind, argc - optind, false, vmscope };
	struct job with = base;
	with.findings = true;
	if (mode) {
		if (strcmp(mode, "base") && strcmp(mode, "findings"))
			goto usage;
		return run_pass(!strcmp(mode, "base") ? &base : &with) ? 1 : 0;
	}
	struct series s[3] = { { .name = "report's pass, no latency, no findings" },
			       { .name = "+ latency + findings (as report runs)" },
			       { .name = "vmscope report -o /dev/null" } };
	int nmodes = vmscope ? 3 : 2;
	for (int r = 0; r < runs; r++)
		for (int k = 0; k < nmodes; k++) {
			struct bench_child c = k == 2 ? bench_child_run(run_cli, &base)
						      : bench_child_run(run_pass, k ? &with : &base);
			if (!c.ok) {
				fprintf(stderr, "bench_findings: %s failed\n", s[k].name);
				return 1;
			}
			s[k].cpu[r] = c.cpu_s;
			s[k].wall[r] = c.wall_s;
			if (c.maxrss_kib > s[k].rss)
				s[k].rss = c.maxrss_kib;
		}
	double cpu[3];
	printf("%-42s %9s %11s %11s %9s   (%d runs)\n", "", "CPU s min", "CPU median",
	       "wall median", "peak MiB", runs);
	for (int k = 0; k < nmodes; k++) {
		cpu[k] = s[k].cpu[0];
		for (int r = 1; r < runs; r++)
			if (s[k].cpu[r] < cpu[k])
				cpu[k] = s[k].cpu[r];
		printf("%-42s %9.2f %11.2f %11.2f %9.1f\n", s[k].name, cpu[k],
		       median(s[k].cpu, runs), median(s[k].wall, runs), (double)s[k].rss / 1024.0);
	}
	printf("latency + findings add %+.1f%% CPU time (least of each; goal: at most +20%%), "
	       "%+.1f MiB peak\n",
	       100.0 * (cpu[1] - cpu[0]) / cpu[0], (double)(s[1].rss - s[0].rss) / 1024.0);
	printf("ratio with / without: wall %.3fx, CPU %.3fx (medians of %d alternating runs each)\n",
	       median(s[1].wall, runs) / median(s[0].wall, runs),
	       median(s[1].cpu, runs) / median(s[0].cpu, runs), runs);
	bench_load_print();
	return 0;
usage:
	fprintf(stderr, "usage: bench_findings [-r RUNS] [-x VMSCOPE] [-m base|findings] FILE...\n");
	return 2;
}
