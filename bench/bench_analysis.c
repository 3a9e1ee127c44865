/* bench_analysis: vmscope's whole analysis against libtracecmd's bare iteration, same files.
 *
 * Each side runs in a process of its own (forked), so its wall and CPU time and its peak
 * memory (from wait4) are its own; the two alternate, R runs each, and the ratio is printed by
 * wall and by CPU time (bench_child.h). The peer reads the files with tracecmd_iterate_events (or _multi
 * for several files) and an empty callback: the least any libtracecmd-based tool can do. The
 * vmscope side opens a session and runs everything (model pass when needed, clocks, merge,
 * vCPU states, overlays, exits, steal, containment) with no output.
 *
 * usage: bench_analysis [-r RUNS] FILE...        prints both sides and the ratios peer/vmscope */
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

#include "bench_child.h"
#include "vmscope/session.h"

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

/* Run fn in a child (bench_child.h: wall, CPU and peak memory from wait4); its event count
 * comes back through a pipe. */
struct job {
	int (*fn)(char **, int, uint64_t *);
	char **files;
	int n;
	int fd;
};

static int child(void *arg)
{
	struct job *j = arg;
	uint64_t ev = 0;
	int r = j->fn(j->files, j->n, &ev);
	if (write(j->fd, &ev, sizeof ev) != (ssize_t)sizeof ev)
		return -1;
	return r;
}

static struct bench_child measure(int (*fn)(char **, int, uint64_t *), char **files, int n,
				  uint64_t *events)
{
	struct bench_child res = { 0 };
	int p[2];
	if (pipe(p) < 0)
		return res;
	struct job j = { fn, files, n, p[1] };
	res = bench_child_run(child, &j);
	close(p[1]);
	if (read(p[0], events, sizeof *events) != (ssize_t)sizeof *events)
		res.ok = 0;
	close(p[0]);
	return res;
}

int main(int argc, char **argv)
{
	int runs = 3, i = 1;
	if (argc > 2 && !strcmp(argv[1], "-r")) {
		runs = atoi(argv[2]);
		i = 3;
	}
	if (i >= argc || runs < 1 || runs > BENCH_MAX_RUNS) {
		fprintf(stderr, "usage: bench_analysis [-r RUNS] FILE...\n");
		return 2;
	}
	char **files = argv + i;
	int n = argc - i;
	struct bench_side peer = { .name = "libtracecmd" }, ours = { .name = "vmscope" };
	uint64_t pev = 0, vev = 0;
	bool peer_ok = true;
	for (int r = 0; r < runs; r++) {
		if (peer_ok) {
			struct bench_child c = measure(run_tracecmd, files, n, &pev);
			if (c.ok)
				bench_side_add(&peer, c);
			else
				peer_ok = false;
		}
		struct bench_child c = measure(run_vmscope, files, n, &vev);
		if (!c.ok) {
			fprintf(stderr, "bench_analysis: vmscope failed\n");
			return 1;
		}
		bench_side_add(&ours, c);
	}
	printf("files:");
	for (int k = 0; k < n; k++)
		printf(" %s", files[k]);
	printf("\n  %d runs each, alternating (libtracecmd, vmscope, ...)\n", runs);
	bench_load_print();
	if (peer_ok) {
		bench_side_print(&peer);
		printf("    (libtracecmd iterate, empty callback: %llu events, %.0f events/s of CPU)\n",
		       (unsigned long long)pev, (double)pev / bench_median(peer.cpu, peer.n));
	} else {
		printf("  libtracecmd: cannot open the files\n");
	}
	bench_side_print(&ours);
	printf("    (vmscope's whole analysis: %llu events, %.0f events/s of CPU)\n",
	       (unsigned long long)vev, (double)vev / bench_median(ours.cpu, ours.n));
	if (peer_ok)
		bench_ratio_print(&peer, &ours);
	return 0;
}
