/* bench_simpletrace: `vmscope dump` on a large QEMU simpletrace v4 file, against QEMU's
 * scripts/simpletrace.py on the same file in the same run.
 *
 * It writes a file of realistic QEMU records (pointer, integer and string arguments, in the
 * layout of trace/simple.c) and its trace-events, then runs the given vmscope binary as
 * `vmscope dump --events EVENTS FILE > /dev/null` and, with -p, `python3 SIMPLETRACE_PY
 * EVENTS FILE > /dev/null` (QEMU's script needs its tracetool package beside it, as in a QEMU
 * source tree), alternating, R runs each, and prints the wall and CPU time of each (medians
 * and least), the input MB/s and the ratios by each (bench_child.h). Without -p the peer is
 * not run, and said so: no figure is taken from elsewhere. The goal is a ratio of at least 20.
 *
 * Before the timed runs, each tool is run once more with its output read here and its lines
 * counted (these runs also warm the page cache): both must print one line per event record of
 * the file, counted here from the records' headers, or the bench stops, so that the two read
 * the same events. (QEMU's script as of qemu/qemu 1990fb9 is `simpletrace.py [--no-header]
 * trace-events trace-file`, log format 4 only; it prints string arguments as Python bytes,
 * file=b'...', where vmscope prints file=..., and is otherwise the same line for line.)
 *
 * usage: bench_simpletrace [-r RUNS] [-m MB] [-d DIR] [-p SIMPLETRACE_PY] VMSCOPE */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_child.h"

static const char events_text[] =
	"virtio_queue_notify(void *vdev, int n, void *vq) \"vdev %p n %d vq %p\"\n"
	"kvm_run_exit(int cpu_index, uint32_t reason) \"cpu_index %d, reason %d\"\n"
	"qemu_mutex_lock(void *mutex, const char *file, const int line) \"waiting on mutex %p (%s:%d)\"\n"
	"qemu_mutex_unlock(void *mutex, const char *file, const int line) \"released mutex %p (%s:%d)\"\n"
	"memory_region_ops_read(int cpu_index, void *mr, uint64_t addr, uint64_t value, unsigned size, const char *name) \"cpu %d mr %p addr 0x%\"PRIx64\" value 0x%\"PRIx64\" size %u name '%s'\"\n"
	"virtio_blk_rw_complete(void *vdev, void *req, int ret) \"vdev %p req %p ret %d\"\n";

static const char *const names[] = { "virtio_queue_notify", "kvm_run_exit", "qemu_mutex_lock",
				     "qemu_mutex_unlock", "memory_region_ops_read",
				     "virtio_blk_rw_complete" };

struct wbuf {
	uint8_t *p;
	size_t len, cap;
	FILE *f;
};

static void wb(struct wbuf *w, const void *s, size_t n)
{
	if (w->len + n > w->cap) {
		fwrite(w->p, 1, w->len, w->f);
		w->len = 0;
	}
	memcpy(w->p + w->len, s, n);
	w->len += n;
}

static void w64(struct wbuf *w, uint64_t v) { wb(w, &v, 8); }
static void w32(struct wbuf *w, uint32_t v) { wb(w, &v, 4); }
static void wstr(struct wbuf *w, const char *s) { w32(w, (uint32_t)strlen(s)); wb(w, s, strlen(s)); }

/* trace/simple.c's record: type, id, ts, length (24 + args), pid, args */
static void rec_head(struct wbuf *w, uint64_t id, uint64_t ts, uint32_t argbytes)
{
	w64(w, 1);
	w64(w, id);
	w64(w, ts);
	w32(w, 24 + argbytes);
	w32(w, 31337);
}

/* The event records in the file (type 1; the mapping records, type 0, print nothing), read
 * from the headers alone; -1 if the file is not whole. */
static long count_records(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	long n = 0;
	uint64_t h[3], type;
	if (fread(h, 8, 3, f) != 3)
		n = -1;
	while (n >= 0 && fread(&type, 8, 1, f) == 1) {
		uint64_t id;
		uint32_t len;
		if (type == 0) {
			if (fread(&id, 8, 1, f) != 1 || fread(&len, 4, 1, f) != 1 ||
			    fseeko(f, len, SEEK_CUR) != 0)
				n = -1;
			continue;
		}
		uint64_t ts;
		uint32_t pid;
		if (fread(&id, 8, 1, f) != 1 || fread(&ts, 8, 1, f) != 1 || fread(&len, 4, 1, f) != 1 ||
		    fread(&pid, 4, 1, f) != 1 || len < 24 || fseeko(f, len - 24, SEEK_CUR) != 0) {
			n = -1;
			break;
		}
		n++;
	}
	fclose(f);
	return n;
}

/* Runs argv with its standard output into a pipe read here (its errors to /dev/null) and
 * returns the lines it printed; -1 if it could not run or did not exit 0. */
static long count_lines(char **argv)
{
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(fd[0]);
		dup2(fd[1], 1);
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	static char buf[1 << 16];
	long n = 0;
	for (;;) {
		ssize_t k = read(fd[0], buf, sizeof buf);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		for (ssize_t i = 0; i < k; i++)
			n += buf[i] == '\n';
	}
	close(fd[0]);
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	return n;
}

static int generate(const char *path, uint64_t bytes)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	struct wbuf w = { malloc(1 << 20), 0, 1 << 20, f };
	w64(&w, ~(uint64_t)0);
	w64(&w, 0xf2b177cb0aa429b4ULL);
	w64(&w, 4);
	for (uint64_t id = 0; id < 6; id++) {
		w64(&w, 0);
		w64(&w, id);
		wstr(&w, names[id]);
	}
	static const char *const file = "../util/qemu-thread-posix.c";
	static const char *const mr = "virtio-pci-common-virtio-blk";
	uint64_t ts = 1000000000, x = 88172645463325252ULL, total = 0;
	while (total < bytes) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		ts += 50 + (x & 1023);
		uint64_t ev = x % 6;
		uint64_t ts_rec = (x & 0xf000) == 0 ? ts - 40 : ts;   /* now and then a little back */
		switch (ev) {
		case 0:
			rec_head(&w, 0, ts_rec, 24);
			w64(&w, 0x55d0c8a3e000 + (x & 0xff0));
			w64(&w, x >> 60);
			w64(&w, 0x55d0c8a41230);
			break;
		case 1:
			rec_head(&w, 1, ts_rec, 16);
			w64(&w, x >> 62);
			w64(&w, 2 + (x >> 59));
			break;
		case 2:
		case 3:
			rec_head(&w, ev, ts_rec, (uint32_t)(8 + 4 + strlen(file) + 8));
			w64(&w, 0x55d0c77e1a80);
			wstr(&w, file);
			w64(&w, 200 + (x >> 56));
			break;
		case 4:
			rec_head(&w, 4, ts_rec, (uint32_t)(8 * 5 + 4 + strlen(mr)));
			w64(&w, x >> 62);
			w64(&w, 0x55d0c9011b00);
			w64(&w, 0x14 + (x >> 58));
			w64(&w, x >> 32);
			w64(&w, 4);
			wstr(&w, mr);
			break;
		default:
			rec_head(&w, 5, ts_rec, 24);
			w64(&w, 0x55d0c8a3e000);
			w64(&w, 0x7f12a4001230 + (x & 0xfff0));
			w64(&w, 0);
			break;
		}
		total = (uint64_t)ftello(f) + w.len;
	}
	fwrite(w.p, 1, w.len, f);
	free(w.p);
	return fclose(f);
}

int main(int argc, char **argv)
{
	int runs = 5, opt;
	long mb = 200;
	const char *dir = "bench-data", *peer = NULL;
	while ((opt = getopt(argc, argv, "r:m:d:p:")) != -1) {
		if (opt == 'r')
			runs = atoi(optarg);
		else if (opt == 'm')
			mb = atol(optarg);
		else if (opt == 'd')
			dir = optarg;
		else if (opt == 'p')
			peer = optarg;
		else
			return 2;
	}
	if (optind != argc - 1 || runs < 1 || runs > BENCH_MAX_RUNS || mb < 1) {
		fprintf(stderr, "usage: bench_simpletrace [-r RUNS] [-m MB] [-d DIR] [-p SIMPLETRACE_PY] "
			"VMSCOPE\n");
		return 2;
	}
	const char *vmscope = argv[optind];
	mkdir(dir, 0755);
	char trace[4096], events[4096];
	snprintf(trace, sizeof trace, "%s/simpletrace-%ldMB.st", dir, mb);
	snprintf(events, sizeof events, "%s/trace-events-bench", dir);
	FILE *ef = fopen(events, "w");
	if (!ef || fputs(events_text, ef) < 0 || fclose(ef) != 0) {
		fprintf(stderr, "bench_simpletrace: cannot write %s\n", events);
		return 1;
	}
	struct stat st;
	if (stat(trace, &st) != 0) {
		if (generate(trace, (uint64_t)mb << 20) != 0 || stat(trace, &st) != 0) {
			fprintf(stderr, "bench_simpletrace: cannot write %s: %s\n", trace, strerror(errno));
			return 1;
		}
	}
	/* one counted run of each, untimed: the same events from both (and the page cache warm) */
	char *vms_argv[] = { (char *)vmscope, "dump", "--events", events, trace, NULL };
	char *py_argv[] = { "python3", (char *)peer, events, trace, NULL };
	long records = count_records(trace), vms_lines = count_lines(vms_argv);
	long py_lines = peer ? count_lines(py_argv) : 0;
	if (records < 0) {
		fprintf(stderr, "bench_simpletrace: %s is not a whole simpletrace file\n", trace);
		return 1;
	}
	if (vms_lines < 0) {
		fprintf(stderr, "bench_simpletrace: %s dump failed\n", vmscope);
		return 1;
	}
	if (py_lines < 0) {
		fprintf(stderr, "bench_simpletrace: python3 %s failed\n", peer);
		return 1;
	}
	if (vms_lines != records || (peer && py_lines != records)) {
		fprintf(stderr, "bench_simpletrace: the outputs disagree: %ld event records in %s, "
			"vmscope dump printed %ld lines", records, trace, vms_lines);
		if (peer)
			fprintf(stderr, ", simpletrace.py %ld", py_lines);
		fprintf(stderr, "\n");
		return 1;
	}
	struct bench_side py = { .name = "simpletrace.py" }, vms = { .name = "vmscope dump" };
	for (int i = 0; i < runs; i++) {
		if (peer) {
			struct bench_child c = bench_child_run(bench_exec_quiet, py_argv);
			if (!c.ok) {
				fprintf(stderr, "bench_simpletrace: python3 %s failed\n", peer);
				return 1;
			}
			bench_side_add(&py, c);
		}
		struct bench_child c = bench_child_run(bench_exec_quiet, vms_argv);
		if (!c.ok)
			return 1;
		bench_side_add(&vms, c);
	}
	double size_mb = (double)st.st_size / (1 << 20);
	printf("simpletrace input %.1f MB (%s), %d runs each%s\n", size_mb, trace, runs,
	       peer ? ", alternating" : "");
	if (peer)
		printf("  the same events from both: %ld records in the file, %ld lines printed by each\n",
		       records, records);
	else
		printf("  %ld records in the file, %ld lines printed by vmscope dump\n", records, records);
	bench_load_print();
	struct bench_side *sides[2] = { peer ? &py : NULL, &vms };
	for (int k = 0; k < 2; k++) {
		if (!sides[k])
			continue;
		bench_side_print(sides[k]);
		printf("    (%.1f MB/s by wall time, %.1f MB/s by CPU time, medians)\n",
		       size_mb / bench_median(sides[k]->wall, sides[k]->n),
		       size_mb / bench_median(sides[k]->cpu, sides[k]->n));
	}
	if (peer)
		bench_ratio_print(&py, &vms);
	else
		printf("  simpletrace.py: not run (give -p path/to/qemu/scripts/simpletrace.py)\n");
	return 0;
}
