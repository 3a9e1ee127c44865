/* The fuzz target bodies (see fuzz_harness.h). Inputs are handed to the readers the way a user
 * would: a path. One memfd (or temporary directory for CTF) per process is rewritten for each
 * input, so that a fuzzer running at thousands of inputs a second does not churn the file
 * system. */
#include "fuzz_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmscope/model.h"
#include "vmscope/simpletrace.h"
#include "vmscope/source.h"
#include "vmscope/xen_model.h"
#include "vmscope/xentrace.h"

/* Bounds that keep one input's run short: a reader that loops forever on a small input is a
 * hang, and libFuzzer's -timeout reports it; these budgets only stop legitimately long inputs
 * (a compressed trace.dat or a CTF packet can hold millions of events, and an input that
 * takes seconds stalls the fuzzer as much as a hang). Per input 65,536 events (the
 * environment's VMS_FUZZ_MAX_EVENTS instead, for a longer look at one input), per stream in
 * the first pass a sixteenth of that, so that the first streams do not take the whole budget,
 * and in the second pass a sixteenth of the stream's. */
#define MAX_EVENTS_DEFAULT 65536
#define FORMAT_EVERY 61

static uint64_t max_events(void)
{
	static uint64_t max;
	if (!max) {
		const char *e = getenv("VMS_FUZZ_MAX_EVENTS");
		max = e && *e ? strtoull(e, NULL, 10) : 0;
		if (!max)
			max = MAX_EVENTS_DEFAULT;
	}
	return max;
}

static uint64_t max_stream_events(void)
{
	uint64_t m = max_events() / 16;
	return m ? m : 1;
}

/* The second pass (after rewind, with set_wanted) checks that a stream starts over and that
 * skipping the unwanted kinds decodes the same records: its first events show that; reading
 * everything again only doubled the time per input */
static uint64_t second_pass_events(void)
{
	uint64_t m = max_stream_events() / 16;
	return m ? m : 1;
}

static void contract(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "reader contract broken: %s\n", what);
		abort();
	}
}

/* A negative status must come with the error recorded and a message to show. */
static void check_err(const struct vms_error *err, int rc)
{
	contract(err->status != 0, "negative status but err->status is 0");
	contract(err->msg[0] != 0, "error without a message");
	(void)rc;
}

/* One event of a stream with the contract checked: 1 with *ev filled, 0 at the stream's end
 * or when the reader has said what is wrong (the source is still closed cleanly, the next
 * stream may be read; *failed then says so) */
static int next_checked(struct vms_source *src, uint32_t s, struct vms_event *ev, bool *failed)
{
	memset(ev, 0, sizeof *ev);
	int rc = src->ops->next(src, s, ev);
	if (rc < 0) {
		check_err(&src->err, rc);
		*failed = true;
		return 0;
	}
	contract(rc <= 1, "next() returned more than 1");
	return rc;
}

/* What a target does besides reading: each event of the first pass also goes to `event`, and
 * `end` runs after that pass (xentrace's Xen model; a pass of its own would cost as much as
 * reading again) */
struct first_pass {
	void (*event)(void *ctx, struct vms_event *ev);
	void (*end)(void *ctx);
	void *ctx;
};

/* Renders the first 4 events of each stream (also into an 8-byte buffer) and, when
 * `every`, each FORMAT_EVERY-th into the full buffer: rendering a trace.dat event is
 * libtraceevent's tep_print_event, several 4 KiB allocations each, which made most of
 * fuzz_tracedat's time when every rendered event was rendered twice and in both passes */
static void read_all(struct vms_source *src, uint64_t *budget, uint64_t per_stream,
		     bool every, const struct first_pass *fp)
{
	uint32_t n = src->ops->nr_streams(src);
	char buf[512];
	for (uint32_t s = 0; s < n; s++) {
		struct vms_event ev;
		uint64_t i = 0;
		for (;;) {
			if (*budget == 0)
				return;
			if (i >= per_stream)
				break;
			bool failed = false;
			if (!next_checked(src, s, &ev, &failed))
				break;
			(*budget)--;
			if (fp && fp->event)
				fp->event(fp->ctx, &ev);
			if (src->ops->format_event && (i < 4 || (every && i % FORMAT_EVERY == 0))) {
				int len = src->ops->format_event(src, s, buf, sizeof buf);
				contract(memchr(buf, 0, sizeof buf) != NULL || len < 0,
					 "format_event left the buffer unterminated");
			}
			if (src->ops->format_event && i < 4) {
				/* a tiny buffer: the text must be cut, not overflow */
				char small[8];
				int len = src->ops->format_event(src, s, small, sizeof small);
				contract(memchr(small, 0, sizeof small) != NULL || len < 0,
					 "format_event left a short buffer unterminated");
			}
			i++;
		}
	}
}

/* open, read all, rewind, read all again as the model pass does (only some kinds' fields,
 * where the reader can skip the others: set_wanted), close */
static void drive(struct vms_source *src, const struct vms_error *err,
		  const struct first_pass *fp)
{
	if (!src) {
		if (err->status != 0)
			contract(err->msg[0] != 0, "failed open without a message");
		return;
	}
	uint64_t budget = max_events();
	/* the symbol section is parsed only on demand: ask, so that it is fuzzed too */
	vms_source_ksyms(src);
	read_all(src, &budget, max_stream_events(), true, fp);
	if (fp && fp->end)
		fp->end(fp->ctx);
	int rc = src->ops->rewind(src);
	if (rc < 0) {
		check_err(&src->err, rc);
	} else {
		if (src->ops->set_wanted) {
			bool wanted[VMS_K_COUNT] = {false};
			wanted[VMS_K_KVM_ENTRY] = wanted[VMS_K_THREAD_NAME] = true;
			src->ops->set_wanted(src, wanted);
		}
		read_all(src, &budget, second_pass_events(), false, NULL);
	}
	vms_source_close(src);
}

/* one memfd per process, truncated and rewritten for each input */
static int file_fd = -1;
static char file_path[64];

static const char *as_file(const uint8_t *data, size_t size)
{
	if (file_fd < 0) {
		file_fd = memfd_create("vms-fuzz", MFD_CLOEXEC);
		if (file_fd < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(file_path, sizeof file_path, "/proc/self/fd/%d", file_fd);
	}
	if (ftruncate(file_fd, 0) != 0) {
		perror("ftruncate");
		abort();
	}
	size_t off = 0;
	while (off < size) {
		ssize_t w = pwrite(file_fd, data + off, size - off, (off_t)off);
		if (w <= 0) {
			perror("pwrite");
			abort();
		}
		off += (size_t)w;
	}
	return file_path;
}

int vms_fuzz_tracedat(const uint8_t *data, size_t size)
{
	struct vms_error err = { 0 };
	struct vms_source *src = vms_tracedat_open(as_file(data, size), &err);
	drive(src, &err, NULL);
	return 0;
}

int vms_fuzz_tcxml(const uint8_t *data, size_t size)
{
	struct vms_error err = { 0 };
	struct vms_source *src = vms_tcxml_open(as_file(data, size), &err);
	drive(src, &err, NULL);
	return 0;
}

/* The trace-events file of the simpletrace seeds (make-corpus.sh writes events with these
 * names): every argument type the reader decodes. */
static const char st_events[] =
	"disable foo_start(int fd, const char *path, uint64_t size) \"fd %d path %s size %\" PRIu64\n"
	"bar_tick(void) \"tick\"\n"
	"vcpu baz_ptr(void *opaque, unsigned int n) \"opaque %p n %u\"\n"
	"name_pair(const char* a, char *b) \"%s (%s)\"\n"
	"ten(int a0, int a1, int a2, int a3, int a4, int a5, int a6, int a7, int a8, uint64_t a9) \"%d %d %d %d %d %d %d %d %d %\" PRIu64\n"
	"strs(const char *a, const char *b, const char *c) \"%s %s %s\"\n";

static char st_events_path[PATH_MAX];

static const char *events_file(void)
{
	if (st_events_path[0])
		return st_events_path;
	const char *tmp = getenv("TMPDIR");
	snprintf(st_events_path, sizeof st_events_path, "%s/vms-fuzz-events-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	int fd = mkstemp(st_events_path);
	if (fd < 0 || write(fd, st_events, sizeof st_events - 1) != (ssize_t)(sizeof st_events - 1)) {
		perror("events file");
		abort();
	}
	close(fd);
	return st_events_path;
}

static void remove_events_file(void)
{
	if (st_events_path[0])
		unlink(st_events_path);
}

int vms_fuzz_simpletrace(const uint8_t *data, size_t size)
{
	static bool registered;
	if (!registered) {
		atexit(remove_events_file);
		registered = true;
	}
	const char *path = as_file(data, size);
	for (int with_events = 0; with_events < 2; with_events++) {
		struct vms_error err = { 0 };
		struct vms_source *src =
			vms_simpletrace_open(path, with_events ? events_file() : NULL, &err);
		drive(src, &err, NULL);
	}
	return 0;
}

/* CTF: one temporary directory per process */
static char ctf_dir[PATH_MAX];

static void ctf_path(char *p, size_t len, const char *name)
{
	snprintf(p, len, "%s/%s", ctf_dir, name);
}

static void ctf_clean(void)
{
	static const char *const names[] = { "metadata", ".vmst-threads", ".vmst-closed",
					     "stream-100-0", "stream-200-0" };
	char p[PATH_MAX + 32];
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		ctf_path(p, sizeof p, names[i]);
		unlink(p);
	}
}

static void ctf_unlink(const char *name)
{
	char p[PATH_MAX + 32];
	ctf_path(p, sizeof p, name);
	unlink(p);
}

static void ctf_remove_dir(void)
{
	if (ctf_dir[0]) {
		ctf_clean();
		rmdir(ctf_dir);
	}
}

static void ctf_write(const char *name, const uint8_t *data, size_t size)
{
	char p[PATH_MAX + 32];
	ctf_path(p, sizeof p, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		perror(p);
		abort();
	}
	size_t off = 0;
	while (off < size) {
		ssize_t w = write(fd, data + off, size - off);
		if (w <= 0) {
			perror(p);
			abort();
		}
		off += (size_t)w;
	}
	close(fd);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int vms_fuzz_ctf(const uint8_t *data, size_t size)
{
	if (!ctf_dir[0]) {
		/* in memory where there is a tmpfs for it (the files are rewritten per input) */
		const char *tmp = getenv("TMPDIR");
		struct stat st;
		if (!(tmp && *tmp))
			tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
				      access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		snprintf(ctf_dir, sizeof ctf_dir, "%s/vms-fuzz-ctf-XXXXXX", tmp);
		if (!mkdtemp(ctf_dir)) {
			perror("mkdtemp");
			abort();
		}
		atexit(ctf_remove_dir);
	}
	if (size < VMS_FUZZ_CTF_HEADER)
		return 0;
	size_t mlen = le32(data), tlen = le32(data + 4), s1len = le32(data + 9);
	uint8_t flags = data[8];
	const uint8_t *p = data + VMS_FUZZ_CTF_HEADER;
	size_t left = size - VMS_FUZZ_CTF_HEADER;
	if (mlen > left)
		mlen = left;
	const uint8_t *meta = p;
	p += mlen;
	left -= mlen;
	if (tlen > left)
		tlen = left;
	const uint8_t *threads = p;
	p += tlen;
	left -= tlen;
	if (!(flags & 2) || s1len > left)
		s1len = left;

	/* files are rewritten in place and only those this input does not have are removed:
	 * creating and unlinking five files per input was a third of the time (inode
	 * allocation) */
	ctf_write("metadata", meta, mlen);
	if (tlen)
		ctf_write(".vmst-threads", threads, tlen);
	else
		ctf_unlink(".vmst-threads");
	if (flags & 1)
		ctf_write(".vmst-closed", NULL, 0);
	else
		ctf_unlink(".vmst-closed");
	ctf_write("stream-100-0", p, s1len);
	if (flags & 2)
		ctf_write("stream-200-0", p + s1len, left - s1len);
	else
		ctf_unlink("stream-200-0");

	struct vms_error err = { 0 };
	struct vms_source *src = vms_ctf_open(ctf_dir, &err);
	drive(src, &err, NULL);
	return 0;
}

static void xen_model_event(void *ctx, struct vms_event *ev)
{
	ev->machine = 0;
	vms_xen_model_event(ctx, ev);
}

static void xen_model_end(void *ctx)
{
	struct vms_xen_model *x = ctx;
	vms_xen_model_finish(x);
	for (uint32_t i = 0; i < vms_xen_model_nr_vcpus(x); i++)
		contract(vms_xen_model_vcpu(x, i) != NULL, "a listed vCPU is missing");
}

/* One read of every stream, counting what came back; the Xen model, when given, sees each
 * event and each stream's end (the session's cpu_end) as the analysis pass feeds it */
static uint64_t xt_read_counted(struct vms_source *src, struct vms_xen_model *x, uint64_t *budget,
				bool *complete)
{
	const struct vms_xen_info *xi = vms_xentrace_info(src);
	uint32_t n = src->ops->nr_streams(src);
	uint64_t got = 0;
	for (uint32_t s = 0; s < n; s++) {
		struct vms_event ev;
		for (uint64_t i = 0;; i++) {
			if (*budget == 0 || i >= max_stream_events()) {
				*complete = false;
				return got;
			}
			bool failed = false;
			int rc = next_checked(src, s, &ev, &failed);
			*complete = *complete && !failed;
			if (!rc)
				break;
			contract(ev.stream == s, "an event of another stream");
			(*budget)--;
			got++;
			if (x)
				xen_model_event(x, &ev);
		}
		if (x && s < xi->nr_pcpus)
			vms_xen_model_cpu_end(x, xi->pcpu[s]);
	}
	return got;
}

/* The path `vmscope report` takes (lib/session): a linking pass with only the model's kinds
 * wanted, rewind, then the analysis pass with skip_unread on (the stream reads headers only,
 * trusting the framing the walk checked at open), feeding the Xen model. The records returned
 * plus those left out must be the records of a plain read, and the counts by type must add up
 * to those left out. */
static void xt_drive_as_report(struct vms_source *src, uint64_t plain, bool plain_complete)
{
	uint64_t budget = max_events();
	bool complete = true;
	bool wanted[VMS_K_COUNT] = { false };
	vms_model_wanted_kinds(wanted);
	if (src->ops->set_wanted)
		src->ops->set_wanted(src, wanted);
	xt_read_counted(src, NULL, &budget, &complete);
	if (src->ops->set_wanted)
		src->ops->set_wanted(src, NULL);
	if (src->ops->rewind(src) < 0) {
		check_err(&src->err, -1);
		return;
	}
	const struct vms_xen_info *xi = vms_xentrace_info(src);
	struct vms_xen_model *x = vms_xen_model_new(0, xi->isa);
	uint32_t nt = src->meta.nr_types ? src->meta.nr_types : 1;
	uint64_t *counts = calloc(nt, sizeof *counts), skipped = 0;
	contract(x && counts, "out of memory");
	src->ops->skip_unread(src, counts, &skipped);
	budget = max_events();
	complete = true;
	uint64_t kept = xt_read_counted(src, x, &budget, &complete);
	src->ops->skip_unread(src, NULL, NULL);
	xen_model_end(x);
	uint64_t by_type = 0;
	for (uint32_t t = 0; t < nt; t++)
		by_type += counts[t];
	contract(by_type == skipped, "skip_unread's counts by type do not add up to its total");
	if (complete && plain_complete)
		contract(kept + skipped == plain,
			 "skip_unread: records returned and left out differ from a plain read");
	free(counts);
	vms_xen_model_free(x);
	/* and everything again after the skipping, as `dump` after `report` would */
	if (src->ops->rewind(src) < 0) {
		check_err(&src->err, -1);
		return;
	}
	budget = max_events();
	complete = true;
	uint64_t again = xt_read_counted(src, NULL, &budget, &complete);
	if (complete && plain_complete)
		contract(again == plain, "a plain read after skip_unread differs");
}

/* The first pass of the reading also feeds the Xen model, stream after stream (as `dump` and
 * `info` read); then the file is opened again and read as `report` does */
int vms_fuzz_xentrace(const uint8_t *data, size_t size)
{
	const char *path = as_file(data, size);
	struct vms_error err = { 0 };
	struct vms_source *src = vms_xentrace_open(path, &err);
	struct vms_xen_model *x = NULL;
	if (!src) {
		drive(NULL, &err, NULL);
		return 0;
	}
	const struct vms_xen_info *xi = vms_xentrace_info(src);
	contract(xi != NULL, "a xentrace source without its info");
	contract(src->ops->skip_unread != NULL, "xentrace without skip_unread");
	x = vms_xen_model_new(0, xi->isa);
	struct first_pass fp = { xen_model_event, xen_model_end, x };
	drive(src, &err, x ? &fp : NULL);
	vms_xen_model_free(x);

	src = vms_xentrace_open(path, &err);
	contract(src != NULL, "a xentrace file opened once fails the second time");
	uint64_t budget = max_events();
	bool complete = true;
	uint64_t plain = xt_read_counted(src, NULL, &budget, &complete);
	if (src->ops->rewind(src) < 0)
		check_err(&src->err, -1);
	else
		xt_drive_as_report(src, plain, complete);
	vms_source_close(src);
	return 0;
}
