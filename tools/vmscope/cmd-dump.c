/* vmscope dump: the events of one trace as text, one per line, in time order.
 *
 * QEMU simpletrace files print like QEMU's simpletrace.py (name, microseconds since the
 * previous event, pid, arguments named from --events FILE). Other formats print
 * "TS cpu=C tid=T " and then their reader's format_event text when it has one, else
 * "TS cpu=C tid=T TYPE (KIND) f=[...]".
 * Output goes through one large buffer written with write(2), and the simpletrace reader
 * formats straight into it: dumping is meant to run at the speed of the disk. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "vmscope/simpletrace.h"
#include "vmscope/source.h"
#include "vmscope/writers.h"

#define OUT_CAP (1u << 20)
#define OUT_MIN_ROOM (64u << 10)   /* below this, flush before formatting a line */

static const char usage[] =
	"usage: vmscope dump [--events FILE] [--limit N] TRACE\n"
	"\n"
	"Print the events of TRACE as text, one per line, in time order.\n"
	"\n"
	"  --events FILE   QEMU's trace-events-all, for the argument names and types of a QEMU\n"
	"                  simpletrace file (without it, simpletrace arguments are not decoded)\n"
	"  --limit N       stop after N events\n"
	"\n"
	"A simpletrace event prints as simpletrace.py does: NAME DELTA_US pid=PID ARG=VALUE...\n"
	"Other formats print TIMESTAMP, CPU, thread, event type and fields.\n";

struct out {
	char *buf;
	size_t len;
	int failed;
};

static int out_flush(struct out *o)
{
	size_t off = 0;
	while (off < o->len) {
		ssize_t w = write(STDOUT_FILENO, o->buf + off, o->len - off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (!o->failed)
				fprintf(stderr, "vmscope dump: cannot write the output: %s\n", strerror(errno));
			o->failed = 1;
			o->len = 0;
			return -1;
		}
		off += (size_t)w;
	}
	o->len = 0;
	return 0;
}

/* The fallback rendering for readers without format_event. */
static int generic_line(const struct vms_source *src, const struct vms_event *ev, char *buf,
			size_t len)
{
	const struct vms_trace_meta *m = &src->meta;
	const char *type = ev->type < m->nr_types && m->type_names ? m->type_names[ev->type] : "?";
	int n = snprintf(buf, len,
			 "%" PRIu64 " cpu=%u tid=%d %s (%s) f=[%" PRIu64 ",%" PRIu64 ",%" PRIu64
			 ",%" PRIu64 ",%" PRIu64 "]",
			 ev->ts, ev->cpu, ev->tid, type, vms_kind_name((enum vms_kind)ev->kind), ev->f[0],
			 ev->f[1], ev->f[2], ev->f[3], ev->f[4]);
	for (int i = 0; i < 2 && n >= 0 && (size_t)n < len; i++)
		if (ev->s[i])
			n += snprintf(buf + n, len - (size_t)n, " s%d=\"%s\"", i, ev->s[i]);
	if (n >= 0 && (size_t)n < len && (ev->flags & VMS_EVF_LOST_BEFORE))
		n += snprintf(buf + n, len - (size_t)n, " [lost events before]");
	return n;
}

/* One line into buf (NUL-terminated); returns its length, or -1. Readers differ in what
 * format_event returns (0, or the length as snprintf), so the length is taken from the text.
 * A simpletrace line is complete as it is (simpletrace.py's shape); other readers render the
 * event's name and fields, and the line starts with its time, CPU and thread. */
static int render(struct vms_source *src, uint32_t stream, const struct vms_event *ev,
		  char *buf, size_t len, bool complete)
{
	if (src->ops->format_event) {
		size_t pre = 0;
		if (!complete) {
			int p = snprintf(buf, len, "%" PRIu64 " cpu=%u tid=%d ", ev->ts, ev->cpu, ev->tid);
			if (p < 0 || (size_t)p >= len)
				return -1;
			pre = (size_t)p;
		}
		int r = src->ops->format_event(src, stream, buf + pre, len - pre);
		if (complete && r >= 0)
			return r;   /* simpletrace returns the length like snprintf */
		if (r >= 0) {
			size_t n = pre + strnlen(buf + pre, len - pre);
			if (n > pre)
				return (int)n;
		}
	}
	return generic_line(src, ev, buf, len);
}

/* Names, comms and string arguments come from the trace: a line holding a control character,
 * an escape sequence or bytes that are not UTF-8 is shown escaped (vms_text_escape), so that
 * a trace can neither fake lines nor drive the terminal. At most `max` bytes are kept. */
static size_t escape_line(char *line, size_t n, size_t max)
{
	size_t i = 0;
	while (i < n && (unsigned char)line[i] >= 0x20 && (unsigned char)line[i] < 0x7f &&
	       line[i] != '\\')
		i++;
	if (i == n)
		return n;
	line[n] = '\0';
	char *tmp = malloc(4 * n + 1);
	if (!tmp) {
		/* no room to escape: keep the safe part only */
		return i;
	}
	size_t e = vms_text_escape(tmp, 4 * n + 1, line);
	if (e > max)
		e = max;
	memcpy(line, tmp, e);
	free(tmp);
	return e;
}

/* Append one event's line (with its newline). */
static void emit(struct out *o, struct vms_source *src, uint32_t stream, const struct vms_event *ev,
		 bool complete)
{
	if (OUT_CAP - o->len < OUT_MIN_ROOM)
		out_flush(o);
	size_t room = OUT_CAP - o->len;
	int n = render(src, stream, ev, o->buf + o->len, room, complete);
	if (n < 0)
		return;
	if ((size_t)n >= room - 1 && o->len > 0) {
		/* a very long line (maybe cut): start it in an empty buffer */
		out_flush(o);
		room = OUT_CAP;
		n = render(src, stream, ev, o->buf, room, complete);
		if (n < 0)
			return;
	}
	if ((size_t)n >= room - 1)
		n = (int)(room - 2);   /* cut at OUT_CAP */
	if (!complete)   /* simpletrace escapes its strings itself (as simpletrace.py) */
		n = (int)escape_line(o->buf + o->len, (size_t)n, room - 2);
	o->len += (size_t)n;
	o->buf[o->len++] = '\n';
}

struct heap {
	uint32_t *idx;
	const struct vms_event *head;
	uint32_t n;
};

static bool before(const struct heap *h, uint32_t a, uint32_t b)
{
	uint64_t ta = h->head[a].ts, tb = h->head[b].ts;
	return ta < tb || (ta == tb && a < b);
}

static void heap_down(struct heap *h, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < h->n && before(h, h->idx[l], h->idx[m]))
			m = l;
		if (r < h->n && before(h, h->idx[r], h->idx[m]))
			m = r;
		if (m == i)
			return;
		uint32_t t = h->idx[i];
		h->idx[i] = h->idx[m];
		h->idx[m] = t;
		i = m;
	}
}

static void heap_push(struct heap *h, uint32_t s)
{
	uint32_t i = h->n++;
	h->idx[i] = s;
	while (i > 0 && before(h, h->idx[i], h->idx[(i - 1) / 2])) {
		uint32_t p = (i - 1) / 2, t = h->idx[i];
		h->idx[i] = h->idx[p];
		h->idx[p] = t;
		i = p;
	}
}

static void heap_pop(struct heap *h)
{
	h->idx[0] = h->idx[--h->n];
	heap_down(h, 0);
}

static int exit_for(int status)
{
	return status == VMS_ERR_FORMAT || status == VMS_ERR_USAGE ? VMS_EXIT_USAGE : VMS_EXIT_FAIL;
}

int cmd_dump(int argc, char **argv)
{
	const char *path = NULL, *events = NULL;
	uint64_t limit = UINT64_MAX;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return VMS_EXIT_OK;
		} else if (!strcmp(argv[i], "--events") && i + 1 < argc) {
			events = argv[++i];
		} else if (!strcmp(argv[i], "--limit") && i + 1 < argc) {
			char *end;
			errno = 0;
			const char *s = argv[++i];
			unsigned long long v = strtoull(s, &end, 10);
			if (!*s || *end || errno || s[0] == '-') {
				fprintf(stderr, "vmscope dump: --limit wants a number, not '%s'\n%s", s, usage);
				return VMS_EXIT_USAGE;
			}
			limit = v;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "vmscope dump: unknown option or missing value: %s\n%s", argv[i], usage);
			return VMS_EXIT_USAGE;
		} else if (!path) {
			path = argv[i];
		} else {
			fprintf(stderr, "vmscope dump: one TRACE only\n%s", usage);
			return VMS_EXIT_USAGE;
		}
	}
	if (!path) {
		fprintf(stderr, "vmscope dump: no TRACE given\n%s", usage);
		return VMS_EXIT_USAGE;
	}

	struct vms_error err = { 0 };
	struct vms_source *src = vms_simpletrace_open(path, events, &err);
	if (!src && err.status == 0) {
		if (events) {
			fprintf(stderr, "vmscope dump: %s: --events is for QEMU simpletrace files, and this "
					"is not one\n", path);
			return VMS_EXIT_USAGE;
		}
		src = vms_source_open(path, &err);
	}
	if (!src) {
		fprintf(stderr, "vmscope dump: %s\n", err.msg[0] ? err.msg : "cannot open the trace");
		return exit_for(err.status ? err.status : VMS_ERR_IO);
	}

	struct out o = { malloc(OUT_CAP), 0, 0 };
	uint32_t ns = src->ops->nr_streams(src);
	struct vms_event *head = calloc(ns ? ns : 1, sizeof *head);
	uint32_t *heap_idx = calloc(ns ? ns : 1, sizeof *heap_idx);
	int rc = VMS_EXIT_OK, st = 0;
	if (!o.buf || !head || !heap_idx) {
		fprintf(stderr, "vmscope dump: out of memory\n");
		rc = VMS_EXIT_FAIL;
		goto done;
	}
	uint64_t printed = 0;
	bool complete = !strcmp(src->ops->name, "simpletrace");
	if (complete && src->ops->set_wanted) {
		/* the line comes from format_event alone: the reader need not copy strings out */
		bool none[VMS_K_COUNT] = { false };
		src->ops->set_wanted(src, none);
	}
	if (ns == 1) {
		/* one stream (simpletrace, xentrace...): no merging needed */
		while (printed < limit && !o.failed && (st = src->ops->next(src, 0, &head[0])) > 0) {
			emit(&o, src, 0, &head[0], complete);
			printed++;
		}
	} else {
		/* a min-heap of the live streams by their head's time (ties: the lower stream),
		 * O(log streams) per event: a trace may have thousands of CPUs */
		struct heap h = {heap_idx, head, 0};
		for (uint32_t s = 0; s < ns && st >= 0; s++) {
			st = src->ops->next(src, s, &head[s]);
			if (st > 0)
				heap_push(&h, s);
		}
		while (st >= 0 && printed < limit && !o.failed && h.n) {
			uint32_t best = h.idx[0];
			emit(&o, src, best, &head[best], complete);
			printed++;
			st = src->ops->next(src, best, &head[best]);
			if (st > 0)
				heap_down(&h, 0);
			else
				heap_pop(&h);
		}
	}
	out_flush(&o);
	if (st < 0) {
		fprintf(stderr, "vmscope dump: %s\n", src->err.msg[0] ? src->err.msg : "read error");
		rc = exit_for(st);
	} else if (o.failed) {
		rc = VMS_EXIT_FAIL;
	} else if (src->meta.ended_abruptly) {
		fprintf(stderr, "vmscope dump: note: %s ended abruptly (its writer was killed or crashed); "
				"everything flushed before is shown\n", src->path);
	}
done:
	free(o.buf);
	free(head);
	free(heap_idx);
	vms_source_close(src);
	return rc;
}
