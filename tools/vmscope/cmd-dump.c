/* vmscope dump: the events of one trace as text, one per line, in time order.
 *
 * QEMU simpletrace files print like QEMU's simpletrace.py (name, microseconds since the
 * previous event, pid, arguments named from --events FILE). Other formats print
 * "TS cpu=C tid=T " and then their reader's format_event text when it has one, else
 * "TS cpu=C tid=T TYPE (KIND) f=[...]".
 * Output goes through one large buffer written with write(2), and the simpletrace reader
 * formats straight into it: dumping is meant to run at the speed of the disk. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "vmscope/session.h"
#include "vmscope/simpletrace.h"
#include "vmscope/source.h"
#include "vmscope/writers.h"

#define OUT_CAP (1u << 20)
#define OUT_MIN_ROOM (64u << 10)   /* below this, flush before formatting a line */

static const char usage[] =
	"usage: vmscope dump [--events FILE] [--limit N] [--raw] [--from T] [--to T]\n"
	"                    [--tsc-hz HZ | --cpu-hz HZ] [--threads N] TRACE...\n"
	"\n"
	"Print the events of the traces as text, one per line, merged in time order.\n"
	"\n"
	"  --events FILE   QEMU's trace-events-all, for the argument names and types of a QEMU\n"
	"                  simpletrace file (without it, simpletrace arguments are not decoded)\n"
	"  --limit N       stop after N events\n"
	"  --raw           print each event's raw timestamp (the trace's own clock) instead of\n"
	"                  the reference time\n"
	"  --tsc-hz HZ     the TSC rate of a trace that counts cycles without TSC2NSEC\n"
	"  --cpu-hz HZ     the same, under xenalyze's name (a xentrace file counts CPU cycles)\n"
	"  --threads N     threads that read the traces (default: one per online CPU; 1: the\n"
	"                  reading thread alone); the output is the same at any N\n"
	CLI_HELP_TIMES
	"\n"
	"Times are the reference timebase of the analyses (the first host's clock, guests\n"
	"brought onto it), in seconds as trace-cmd prints them (22149.948193); with several\n"
	"traces each line names its machine. A clock that counts cycles with no known rate\n"
	"prints cycles. A single simpletrace file prints as simpletrace.py does: NAME DELTA_US\n"
	"pid=PID ARG=VALUE... Other formats print time, machine, CPU, thread, event and fields.\n";

struct out {
	char *buf;
	size_t len;
	int failed;
	char *line;         /* a line that needs escaping or is longer than buf: its own copy */
	size_t line_cap;
	struct vms_source *nomem;  /* a reader ran out of memory rendering an event (its err) */
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
				cli_write_failed("dump", errno);
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
			size_t len, const char *prefix)
{
	const struct vms_trace_meta *m = &src->meta;
	const char *type = ev->type < m->nr_types && m->type_names ? m->type_names[ev->type] : "?";
	int n = prefix ? snprintf(buf, len, "%s", prefix)
		       : snprintf(buf, len, "%" PRIu64 " cpu=%u tid=%d ", ev->ts, ev->cpu, ev->tid);
	if (n < 0 || (size_t)n >= len)
		return -1;
	n += snprintf(buf + n, len - (size_t)n,
		      "%s (%s) f=[%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", type,
		      vms_kind_name((enum vms_kind)ev->kind), ev->f[0], ev->f[1], ev->f[2], ev->f[3],
		      ev->f[4]);
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
		  char *buf, size_t len, bool complete, const char *prefix)
{
	if (src->ops->format_event) {
		size_t pre = 0;
		if (!complete) {
			int p = prefix ? snprintf(buf, len, "%s", prefix)
				       : snprintf(buf, len, "%" PRIu64 " cpu=%u tid=%d ", ev->ts, ev->cpu,
						  ev->tid);
			if (p < 0 || (size_t)p >= len)
				return -1;
			pre = (size_t)p;
		}
		int r = src->ops->format_event(src, stream, buf + pre, len - pre);
		if (r == VMS_ERR_NOMEM)
			return r;
		if (complete && r >= 0)
			return r;   /* simpletrace returns the length like snprintf */
		if (r >= 0) {
			size_t n = pre + strnlen(buf + pre, len - pre);
			if (n > pre)
				return (int)n;
		}
	}
	return generic_line(src, ev, buf, len, prefix);
}

/* A line that does not fit the output buffer is rendered again into a larger one of its own
 * (every field is printed whole, never cut); past this size, which no reader's record
 * reaches (a CTF packet is at most 64 MiB), it is cut and says so. */
#define LINE_MAX_BYTES (1u << 30)
#define ESCAPE_PIECE 4096u   /* bytes escaped at a time: at most 4x that written */

static bool line_is_plain(const char *line, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] >= 0x7f || line[i] == '\\')
			return false;
	return true;
}

/* Room for at least `need` more bytes in o->buf (flushing); false once writing failed. */
static bool out_room(struct out *o, size_t need)
{
	if (OUT_CAP - o->len < need)
		out_flush(o);
	return !o->failed;
}

/* Append n bytes of a line (NUL-terminated at n, writable) to the output. Names, comms and
 * string arguments come from the trace: a line holding a control character, an escape
 * sequence or bytes that are not UTF-8 is shown escaped (vms_text_escape: \xHH, and \\ for
 * a backslash), so that a trace can neither fake lines nor drive the terminal. The escaping
 * goes piece by piece of whole characters, so a line of any length is written whole. */
static void out_line(struct out *o, char *line, size_t n, bool escape)
{
	if (!escape || line_is_plain(line, n)) {
		for (size_t off = 0; off < n && out_room(o, 1);) {
			size_t k = n - off < OUT_CAP - o->len ? n - off : OUT_CAP - o->len;
			memcpy(o->buf + o->len, line + off, k);
			o->len += k;
			off += k;
		}
	} else {
		for (size_t off = 0; off < n && out_room(o, 4 * ESCAPE_PIECE + 32);) {
			size_t k = 0;
			uint32_t cp;
			while (off + k < n && k < ESCAPE_PIECE) {
				int l = vms_utf8_seq((const unsigned char *)line + off + k, &cp);
				k += l > 0 ? (size_t)l : 1;
			}
			char keep = line[off + k];
			line[off + k] = '\0';
			o->len += vms_text_escape(o->buf + o->len, OUT_CAP - o->len, line + off);
			line[off + k] = keep;
			off += k;
		}
	}
	if (out_room(o, 1))
		o->buf[o->len++] = '\n';
}

/* The event's line rendered alone into o->line, grown until the line fits; its length, or
 * a negative status. */
static int render_whole(struct out *o, struct vms_source *src, uint32_t stream,
			const struct vms_event *ev, bool complete, const char *prefix, size_t cap)
{
	for (;;) {
		if (cap > o->line_cap) {
			char *p = realloc(o->line, cap);
			if (!p) {
				vms_error_nomem_at(&src->err, src->path, 0);
				return VMS_ERR_NOMEM;
			}
			o->line = p;
			o->line_cap = cap;
		}
		int n = render(src, stream, ev, o->line, cap, complete, prefix);
		if (n < 0 || (size_t)n < cap - 1)
			return n;
		if (cap >= LINE_MAX_BYTES) {
			static const char note[] = " [cut: line longer than 1 GiB]";
			memcpy(o->line + cap - sizeof note, note, sizeof note);
			return (int)(cap - 1);
		}
		/* simpletrace returns the length it needs; the others filled the buffer */
		size_t want = complete && (size_t)n + 2 > cap ? (size_t)n + 2 : 2 * cap;
		cap = want < LINE_MAX_BYTES ? want : LINE_MAX_BYTES;
	}
}

/* Append one event's line (with its newline). */
static void emit(struct out *o, struct vms_source *src, uint32_t stream, const struct vms_event *ev,
		 bool complete, const char *prefix)
{
	if (OUT_CAP - o->len < OUT_MIN_ROOM)
		out_flush(o);
	size_t room = OUT_CAP - o->len;
	char *at = o->buf + o->len;
	int n = render(src, stream, ev, at, room - 1, complete, prefix);
	if (n >= 0 && (size_t)n < room - 2) {
		/* the usual case: the line fits, rendered in place */
		if (complete || line_is_plain(at, (size_t)n)) {
			o->len += (size_t)n;
			o->buf[o->len++] = '\n';
			return;
		}
		if ((size_t)n + 1 > o->line_cap) {
			char *p = realloc(o->line, (size_t)n + 1);
			if (!p) {
				vms_error_nomem_at(&src->err, src->path, 0);
				n = VMS_ERR_NOMEM;
			} else {
				o->line = p;
				o->line_cap = (size_t)n + 1;
			}
		}
		if (n >= 0)
			memcpy(o->line, at, (size_t)n + 1);
	} else if (n >= 0) {
		/* a long line (maybe cut): rendered again, whole, on its own */
		n = render_whole(o, src, stream, ev, complete, prefix, 2 * OUT_CAP);
	}
	if (n == VMS_ERR_NOMEM)
		o->nomem = src;   /* said by the caller, which stops */
	if (n < 0)
		return;
	/* simpletrace escapes its strings itself (as simpletrace.py) */
	out_line(o, o->line, (size_t)n, !complete);
}

static int exit_for(int status)
{
	return status == VMS_ERR_FORMAT || status == VMS_ERR_USAGE ? VMS_EXIT_USAGE : VMS_EXIT_FAIL;
}

/* A QEMU simpletrace file alone: read straight from its reader, printed as simpletrace.py
 * prints it (the line holds its own time: microseconds since the previous event). */
static int dump_simpletrace(struct vms_source *src, uint64_t limit)
{
	struct out o = { .buf = malloc(OUT_CAP) };
	struct vms_event ev;
	int rc = VMS_EXIT_OK, st = 0;
	if (!o.buf) {
		fprintf(stderr, "vmscope dump: out of memory\n");
		vms_source_close(src);
		return VMS_EXIT_FAIL;
	}
	if (src->ops->set_wanted) {
		/* the line comes from format_event alone: the reader need not copy strings out */
		bool none[VMS_K_COUNT] = { false };
		src->ops->set_wanted(src, none);
	}
	for (uint64_t printed = 0; printed < limit && !o.failed && !o.nomem &&
				   (st = src->ops->next(src, 0, &ev)) > 0; printed++)
		emit(&o, src, 0, &ev, true, NULL);
	out_flush(&o);
	if (o.nomem) {
		fprintf(stderr, "vmscope dump: %s\n", src->err.msg);
		rc = VMS_EXIT_FAIL;
	} else if (st < 0) {
		fprintf(stderr, "vmscope dump: %s\n", src->err.msg[0] ? src->err.msg : "read error");
		rc = exit_for(st);
	} else if (o.failed) {
		rc = VMS_EXIT_FAIL;
	} else if (src->meta.ended_abruptly) {
		fprintf(stderr, "vmscope dump: note: %s ended abruptly (its writer was killed or crashed); "
				"everything flushed before is shown\n", src->path);
	}
	free(o.buf);
	free(o.line);
	vms_source_close(src);
	return rc;
}

struct merged {
	struct out o;
	struct vms_session *s;
	uint64_t limit, printed;
	bool raw, several, cycles;
};

/* One event of the merged stream: "SECONDS [machine] cpu=C tid=T TEXT". */
static void merged_event(void *ctx, const struct vms_event *ev, uint64_t t)
{
	struct merged *d = ctx;
	if (d->printed >= d->limit || d->o.failed)
		return;
	char pre[160];
	int n;
	if (d->raw)
		n = snprintf(pre, sizeof pre, "%" PRIu64, ev->ts);
	else if (d->cycles)
		n = snprintf(pre, sizeof pre, "%" PRIu64 "c", t);
	else
		n = cli_seconds(t, pre, sizeof pre);
	if (d->several)
		n += snprintf(pre + n, sizeof pre - (size_t)n, " %.60s",
			      cli_machine_name(vms_session_model(d->s), ev->machine));
	snprintf(pre + n, sizeof pre - (size_t)n, " cpu=%u tid=%d ", ev->cpu, ev->tid);
	emit(&d->o, vms_session_source(d->s, ev->machine), ev->stream, ev, false, pre);
	if (++d->printed >= d->limit || d->o.failed || d->o.nomem)
		vms_session_stop(d->s);
}

int cmd_dump(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "events", required_argument, NULL, 'e' },
		{ "limit", required_argument, NULL, 'l' },
		{ "raw", no_argument, NULL, 'r' },
		{ "tsc-hz", required_argument, NULL, 'z' },
		{ "cpu-hz", required_argument, NULL, 'Z' }, /* xenalyze's name, as in cli.c */
		{ "from", required_argument, NULL, 'F' },
		{ "to", required_argument, NULL, 'T' },
		{ "threads", required_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *events = NULL;
	uint64_t limit = UINT64_MAX;
	struct vms_session_opts sopts = { 0 };
	bool raw = false;
	int c;
	optind = 1;
	opterr = 0;
	char ob[8];   /* cli_bad_option's "-c" */
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage, stdout);
			return VMS_EXIT_OK;
		case 'e':
			events = optarg;
			break;
		case 'r':
			raw = true;
			break;
		case 'j':
			if (!cli_parse_threads("dump", optarg, &sopts.threads))
				return VMS_EXIT_USAGE;
			break;
		case 'F':
		case 'T':
			if (!cli_time_bound("dump", c == 'F' ? "--from" : "--to", optarg,
					    c == 'F' ? &sopts.from : &sopts.to))
				return VMS_EXIT_USAGE;
			break;
		case 'z':
		case 'Z':
			if (!cli_parse_hz(optarg, &sopts.tsc_hz)) {
				fprintf(stderr, "vmscope dump: %s wants a rate in Hz from 1 kHz to 1 THz, "
						"not '%s'\n", c == 'Z' ? "--cpu-hz" : "--tsc-hz", optarg);
				return VMS_EXIT_USAGE;
			}
			break;
		case 'l': {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(optarg, &end, 10);
			if (!*optarg || *end || errno || optarg[0] == '-') {
				fprintf(stderr, "vmscope dump: --limit wants a number, not '%s'\n%s", optarg,
					usage);
				return VMS_EXIT_USAGE;
			}
			limit = v;
			break;
		}
		case ':':
			fprintf(stderr, "vmscope dump: option '%s' wants a value\n%s",
				cli_bad_option(argv, ob, sizeof ob), usage);
			return VMS_EXIT_USAGE;
		default:
			fprintf(stderr, "vmscope dump: unknown option '%s'\n%s",
				cli_bad_option(argv, ob, sizeof ob), usage);
			return VMS_EXIT_USAGE;
		}
	}
	const char **paths = (const char **)(argv + optind);
	uint32_t nr = (uint32_t)(argc - optind);
	if (nr == 0) {
		fprintf(stderr, "vmscope dump: no TRACE given\n%s", usage);
		return VMS_EXIT_USAGE;
	}
	struct vms_error err = { 0 };
	if (nr == 1 && !raw && !sopts.from.set && !sopts.to.set) {
		/* a missing file (the trace or --events) is bad input, as in every command */
		struct stat st;
		for (int k = 0; k < 2; k++) {
			const char *p = k ? events : paths[0];
			if (p && stat(p, &st) != 0) {
				int e = errno;
				fprintf(stderr, "vmscope dump: %s: cannot open: %s\n", p, strerror(e));
				return e == ENOENT || e == ENOTDIR ? VMS_EXIT_USAGE : VMS_EXIT_FAIL;
			}
		}
		struct vms_source *src = vms_simpletrace_open(paths[0], events, &err);
		if (src)
			return dump_simpletrace(src, limit);
		if (err.status) {
			fprintf(stderr, "vmscope dump: %s\n", err.msg);
			return exit_for(err.status);
		}
	}
	if (events) {
		fprintf(stderr, "vmscope dump: --events is for a QEMU simpletrace file given alone, and "
				"this is not one\n");
		return VMS_EXIT_USAGE;
	}
	struct merged d = { .limit = limit, .raw = raw, .several = nr > 1 };
	sopts.progress = false;
	d.s = vms_session_open(paths, nr, &sopts, &err);
	if (!d.s) {
		fprintf(stderr, "vmscope dump: %s\n", err.msg[0] ? err.msg : "cannot open the trace");
		return exit_for(err.status ? err.status : VMS_ERR_IO);
	}
	for (uint32_t i = 0; i < nr; i++) {
		const struct vms_trace_meta *m = &vms_session_source(d.s, i)->meta;
		if (!m->ts_in_ns && !m->has_tsc2nsec && !raw) {
			d.cycles = true;
			fprintf(stderr, "vmscope dump: note: %s counts clock cycles with no known rate: times "
					"are cycles (suffix c); give --tsc-hz HZ for seconds\n",
				vms_session_source(d.s, i)->path);
		}
	}
	int rc = VMS_EXIT_OK;
	d.o.buf = malloc(OUT_CAP);
	if (!d.o.buf) {
		fprintf(stderr, "vmscope dump: out of memory\n");
		rc = VMS_EXIT_FAIL;
	} else if (vms_session_build_model(d.s, &err) < 0 ||
		   vms_session_iterate(d.s, merged_event, &d, &err) < 0) {
		out_flush(&d.o);
		fprintf(stderr, "vmscope dump: %s\n", err.msg[0] ? err.msg : "read error");
		rc = exit_for(err.status);
	} else {
		out_flush(&d.o);
		if (d.o.nomem) {
			fprintf(stderr, "vmscope dump: %s\n", d.o.nomem->err.msg);
			rc = VMS_EXIT_FAIL;
		} else if (d.o.failed) {
			rc = VMS_EXIT_FAIL;
		}
		for (uint32_t i = 0; i < nr && rc == VMS_EXIT_OK; i++)
			if (vms_session_source(d.s, i)->meta.ended_abruptly)
				fprintf(stderr, "vmscope dump: note: %s ended abruptly (its writer was killed or "
						"crashed); everything flushed before is shown\n",
					vms_session_source(d.s, i)->path);
	}
	free(d.o.buf);
	free(d.o.line);
	/* after reading: a reader may find a format it cannot read on its first event */
	cli_warn_formats("dump", d.s);
	vms_session_free(d.s);
	return rc;
}
