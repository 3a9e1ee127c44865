/* trace.dat: the container (versions 6 and 7) -> streams and vms_trace_meta.
 *
 * v6 is one fixed sequence of parts; v7 is a header plus sections found through chained
 * options sections. Both end up in the same place: event formats in libtraceevent (then in
 * td_formats), the options in meta, and one stream per CPU of each buffer (top buffer first,
 * then the instances in the order of their BUFFER options). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include <traceevent/event-parse.h>

#include "tracedat.h"

/* v7 option / section ids (trace-cmd.dat.v7(5)) */
enum {
	OPT_DONE = 0, OPT_DATE = 1, OPT_CPUSTAT = 2, OPT_BUFFER = 3, OPT_TRACECLOCK = 4,
	OPT_UNAME = 5, OPT_HOOK = 6, OPT_OFFSET = 7, OPT_CPUCOUNT = 8, OPT_VERSION = 9,
	OPT_PROCMAPS = 10, OPT_TRACEID = 11, OPT_TIME_SHIFT = 12, OPT_GUEST = 13,
	OPT_TSC2NSEC = 14, OPT_STRINGS = 15, OPT_HEADER_INFO = 16, OPT_FTRACE_EVENTS = 17,
	OPT_EVENT_FORMATS = 18, OPT_KALLSYMS = 19, OPT_PRINTK = 20, OPT_CMDLINES = 21,
	OPT_BUFFER_TEXT = 22, OPT_MAX = 23,
};

#define MAX_OPTION_SECTIONS 64

struct bufopt {
	uint64_t off;       /* v7: BUFFER FLYRECORD section; v6: its per-CPU table */
	uint64_t opt_off;   /* where the option is, for messages */
	char *name, *clock;
	uint32_t page_size, ncpu;
	uint32_t *cpu;
	uint64_t *doff, *dsize;
};

struct opener {
	struct td_source *ts;
	struct td_file *f;
	struct vms_trace_meta *m;
	int version;
	uint64_t sec[OPT_MAX];
	bool has_sec[OPT_MAX];
	struct bufopt *bufs;
	uint32_t nbufs;
	char traceclock[32];
	bool has_cpucount;
	uint32_t cpucount;
	uint32_t v6_cpus;
	uint32_t comms_cap;  /* entries allocated in meta.comm_tid/comm_name */
	uint64_t text_off;   /* the cmdlines or printk text being read line by line */
};

/* out of memory while reading the part of the file at OFF */
static int nomem(struct opener *o, uint64_t off)
{
	return vms_error_nomem_at(o->f->err, o->f->path, off);
}

/* An ASCII number option (DATE, OFFSET): parsed from a bounded NUL-terminated copy. */
static int64_t ascii_number(const uint8_t *p, uint32_t n)
{
	char tmp[64];
	uint32_t k = n < sizeof tmp - 1 ? n : (uint32_t)sizeof tmp - 1;
	memcpy(tmp, p, k);
	tmp[k] = '\0';
	return strtoll(tmp, NULL, 0);
}

static int opt_buffer(struct opener *o, struct td_cur *c)
{
	if (o->nbufs >= TD_MAX_BUFFERS)
		return td_fail(o->f, td_cur_off(c), "more than %u BUFFER options", TD_MAX_BUFFERS);
	struct bufopt *nb = realloc(o->bufs, (o->nbufs + 1) * sizeof *nb);
	if (!nb)
		return nomem(o, td_cur_off(c));
	o->bufs = nb;
	struct bufopt *b = &o->bufs[o->nbufs];
	memset(b, 0, sizeof *b);
	b->opt_off = td_cur_off(c);
	const char *name, *clock = "";
	int r;
	if ((r = td_cur_u64(c, &b->off, "BUFFER option offset")) < 0 ||
	    (r = td_cur_str(c, &name, "BUFFER option name")) < 0)
		return r;
	if (o->version >= 7) {
		uint32_t ps, n;
		if ((r = td_cur_str(c, &clock, "BUFFER option clock")) < 0 ||
		    (r = td_cur_u32(c, &ps, "BUFFER option page size")) < 0 ||
		    (r = td_cur_u32(c, &n, "BUFFER option CPU count")) < 0)
			return r;
		if (ps < 64 || ps > (1u << 24) || (ps & 3))
			return td_fail(o->f, td_cur_off(c), "BUFFER page size %u is implausible", ps);
		if (n > TD_MAX_CPUS || (uint64_t)n * 20 > c->len - c->pos)
			return td_fail(o->f, td_cur_off(c), "BUFFER option CPU count %u exceeds the "
				       "option", n);
		b->page_size = ps;
		b->ncpu = n;
		b->cpu = calloc(n ? n : 1, sizeof *b->cpu);
		b->doff = calloc(n ? n : 1, sizeof *b->doff);
		b->dsize = calloc(n ? n : 1, sizeof *b->dsize);
		if (!b->cpu || !b->doff || !b->dsize) {
			free(b->cpu), free(b->doff), free(b->dsize);
			return nomem(o, td_cur_off(c));
		}
		for (uint32_t i = 0; i < n; i++) {
			td_cur_u32(c, &b->cpu[i], "BUFFER CPU id");
			td_cur_u64(c, &b->doff[i], "BUFFER CPU offset");
			td_cur_u64(c, &b->dsize[i], "BUFFER CPU size");
			uint32_t cpu = b->cpu[i];
			if (cpu >= TD_MAX_CPUS) {
				free(b->cpu), free(b->doff), free(b->dsize);
				return td_fail(o->f, td_cur_off(c), "BUFFER CPU id %u is implausible",
					       cpu);
			}
		}
	}
	b->name = strdup(name);
	b->clock = strdup(clock);
	o->nbufs++;
	if (!b->name || !b->clock)
		return nomem(o, td_cur_off(c));
	return 0;
}

static int opt_guest(struct opener *o, struct td_cur *c)
{
	struct vms_trace_meta *m = o->m;
	const char *name;
	uint64_t id;
	uint32_t n;
	int r;
	if ((r = td_cur_str(c, &name, "GUEST option name")) < 0 ||
	    (r = td_cur_u64(c, &id, "GUEST option trace id")) < 0 ||
	    (r = td_cur_u32(c, &n, "GUEST option vCPU count")) < 0)
		return r;
	if ((uint64_t)n * 8 > c->len - c->pos)
		return td_fail(o->f, td_cur_off(c), "GUEST option vCPU count %u exceeds the option", n);
	if (m->nr_guests >= 4096)
		return td_fail(o->f, td_cur_off(c), "too many GUEST options");
	struct vms_guest_map *ng = realloc(m->guests, (m->nr_guests + 1) * sizeof *ng);
	if (!ng)
		return nomem(o, td_cur_off(c));
	m->guests = ng;
	struct vms_guest_map *g = &m->guests[m->nr_guests];
	memset(g, 0, sizeof *g);
	g->name = strdup(name);
	g->vcpu = calloc(n ? n : 1, sizeof *g->vcpu);
	g->host_tid = calloc(n ? n : 1, sizeof *g->host_tid);
	m->nr_guests++; /* counted now so that meta_free releases what was allocated */
	if (!g->name || !g->vcpu || !g->host_tid)
		return nomem(o, td_cur_off(c));
	g->trace_id = id;
	g->nr_vcpus = n;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v, t;
		td_cur_u32(c, &v, "GUEST vCPU");
		td_cur_u32(c, &t, "GUEST host tid");
		g->vcpu[i] = v;
		g->host_tid[i] = (int32_t)t;
	}
	return 0;
}

static int opt_time_shift(struct opener *o, struct td_cur *c)
{
	struct vms_trace_meta *m = o->m;
	if (m->timeshift)
		return 0; /* one per file; a second one is ignored like trace-cmd overwrites */
	uint64_t peer;
	uint32_t flags, ncpu;
	int r;
	if ((r = td_cur_u64(c, &peer, "TIME_SHIFT peer id")) < 0 ||
	    (r = td_cur_u32(c, &flags, "TIME_SHIFT flags")) < 0 ||
	    (r = td_cur_u32(c, &ncpu, "TIME_SHIFT CPU count")) < 0)
		return r;
	if ((uint64_t)ncpu * 4 > c->len - c->pos)
		return td_fail(o->f, td_cur_off(c), "TIME_SHIFT CPU count %u exceeds the option",
			       ncpu);
	struct vms_timeshift *t = calloc(1, sizeof *t);
	if (!t)
		return nomem(o, td_cur_off(c));
	m->timeshift = t;
	t->peer_trace_id = peer;
	t->flags = flags;
	t->cpu = calloc(ncpu ? ncpu : 1, sizeof *t->cpu);
	if (!t->cpu)
		return nomem(o, td_cur_off(c));
	for (uint32_t i = 0; i < ncpu; i++) {
		uint32_t n;
		if ((r = td_cur_u32(c, &n, "TIME_SHIFT sample count")) < 0)
			return r;
		if ((uint64_t)n * 24 > c->len - c->pos)
			return td_fail(o->f, td_cur_off(c), "TIME_SHIFT sample count %u exceeds the "
				       "option", n);
		struct vms_timeshift_cpu *tc = &t->cpu[i];
		t->nr_cpus = i + 1;
		tc->time = calloc(n ? n : 1, sizeof *tc->time);
		tc->offset = calloc(n ? n : 1, sizeof *tc->offset);
		tc->scaling = calloc(n ? n : 1, sizeof *tc->scaling);
		tc->frac = calloc(n ? n : 1, sizeof *tc->frac);
		if (!tc->time || !tc->offset || !tc->scaling || !tc->frac)
			return nomem(o, td_cur_off(c));
		tc->n = n;
		uint64_t v;
		for (uint32_t k = 0; k < n; k++)
			td_cur_u64(c, &tc->time[k], "TIME_SHIFT time");
		for (uint32_t k = 0; k < n; k++) {
			td_cur_u64(c, &v, "TIME_SHIFT offset");
			tc->offset[k] = (int64_t)v;
		}
		for (uint32_t k = 0; k < n; k++)
			td_cur_u64(c, &tc->scaling[k], "TIME_SHIFT scaling");
	}
	/* the fraction trailer (trace-cmd >= 3.0) only when bytes remain */
	for (uint32_t i = 0; i < t->nr_cpus; i++) {
		struct vms_timeshift_cpu *tc = &t->cpu[i];
		if ((uint64_t)tc->n * 8 > c->len - c->pos)
			break;
		for (uint32_t k = 0; k < tc->n; k++)
			td_cur_u64(c, &tc->frac[k], "TIME_SHIFT fraction");
	}
	return 0;
}

static void parse_traceclock(char *dst, size_t dl, const uint8_t *p, uint32_t n)
{
	const uint8_t *lb = memchr(p, '[', n);
	if (!lb)
		return;
	const uint8_t *rb = memchr(lb, ']', n - (uint32_t)(lb - p));
	if (!rb || (size_t)(rb - lb - 1) >= dl)
		return;
	memcpy(dst, lb + 1, (size_t)(rb - lb - 1));
	dst[rb - lb - 1] = '\0';
}

/* OFFSET + DATE, which every time stamp of the file gets added, fits in 64 bits. */
static int clock_sum_ok(struct opener *o, struct td_cur *c)
{
	int64_t sum;
	if (__builtin_add_overflow(o->m->offset_ns, o->m->has_date ? o->m->date_offset_ns : 0,
				   &sum))
		return td_fail(o->f, td_cur_off(c), "OFFSET and DATE options together out of range "
			       "(the clock cannot be represented in 64-bit nanoseconds)");
	return 0;
}

/* One option (id, its data as a cursor). */
static int handle_option(struct opener *o, uint16_t id, struct td_cur *c)
{
	struct vms_trace_meta *m = o->m;
	uint32_t size = (uint32_t)c->len;
	uint64_t v64;
	uint32_t v32;
	switch (id) {
	case OPT_DATE:
		/* microseconds; the clock adds OFFSET and DATE to every time stamp, so both and
		 * their sum must be representable in signed 64-bit nanoseconds */
		if (__builtin_mul_overflow(ascii_number(c->buf, size), 1000, &m->date_offset_ns))
			return td_fail(o->f, td_cur_off(c), "DATE option out of range (more than "
				       "292 years in nanoseconds)");
		m->has_date = true;
		return clock_sum_ok(o, c);
	case OPT_OFFSET:
		if (__builtin_add_overflow(m->offset_ns, ascii_number(c->buf, size), &m->offset_ns))
			return td_fail(o->f, td_cur_off(c), "OFFSET options out of range (more than "
				       "292 years in nanoseconds)");
		return clock_sum_ok(o, c);
	case OPT_BUFFER:
		return opt_buffer(o, c);
	case OPT_TRACECLOCK:
		parse_traceclock(o->traceclock, sizeof o->traceclock, c->buf, size);
		return 0;
	case OPT_CPUCOUNT:
		if (td_cur_u32(c, &v32, "CPUCOUNT option") < 0)
			return o->f->err->status;
		if (v32 > TD_MAX_CPUS)
			return td_fail(o->f, td_cur_off(c), "CPUCOUNT %u is implausible", v32);
		o->has_cpucount = true;
		o->cpucount = v32;
		return 0;
	case OPT_TRACEID:
		if (td_cur_u64(c, &v64, "TRACEID option") < 0)
			return o->f->err->status;
		m->has_trace_id = true;
		m->trace_id = v64;
		return 0;
	case OPT_TIME_SHIFT:
		return opt_time_shift(o, c);
	case OPT_GUEST:
		return opt_guest(o, c);
	case OPT_TSC2NSEC: {
		uint32_t mult, shift;
		if (td_cur_u32(c, &mult, "TSC2NSEC mult") < 0 ||
		    td_cur_u32(c, &shift, "TSC2NSEC shift") < 0 ||
		    td_cur_u64(c, &v64, "TSC2NSEC offset") < 0)
			return o->f->err->status;
		if (shift > 63)
			return td_fail(o->f, td_cur_off(c), "TSC2NSEC shift %u is implausible", shift);
		m->has_tsc2nsec = true;
		m->tsc_mult = mult;
		m->tsc_shift = shift;
		m->tsc_offset = v64;
		return 0;
	}
	case OPT_HEADER_INFO: case OPT_FTRACE_EVENTS: case OPT_EVENT_FORMATS:
	case OPT_KALLSYMS: case OPT_PRINTK: case OPT_CMDLINES:
		if (o->version < 7)
			return 0;
		if (td_cur_u64(c, &v64, "section offset option") < 0)
			return o->f->err->status;
		o->sec[id] = v64;
		o->has_sec[id] = true;
		return 0;
	default:
		return 0; /* CPUSTAT, UNAME, VERSION, HOOK, PROCMAPS, BUFFER_TEXT, unknown */
	}
}

/* Options list of one section (v7) or of the v6 file: `u16 id, u32 size, data`. Returns
 * the DONE option's next-section offset through *next (v7). */
static int read_options(struct opener *o, struct td_cur *c, uint64_t *next)
{
	*next = 0;
	for (;;) {
		uint16_t id;
		uint32_t size;
		const uint8_t *data;
		int r;
		if ((r = td_cur_u16(c, &id, "option id")) < 0)
			return r;
		if (o->version < 7 && id == OPT_DONE)
			return 0;
		uint64_t at = td_cur_off(c);
		if ((r = td_cur_u32(c, &size, "option size")) < 0 ||
		    (r = td_cur_bytes(c, size, &data, "option data")) < 0)
			return r;
		struct td_cur oc = {.f = o->f, .buf = data, .len = size, .pos = 0,
				    .base_off = c->in_comp ? c->base_off : at + 4,
				    .in_comp = c->in_comp};
		if (id == OPT_DONE) {
			if (size < 8)
				return td_fail(o->f, at, "options DONE of %u bytes", size);
			*next = td_rd64(o->f, data);
			return 0;
		}
		if ((r = handle_option(o, id, &oc)) < 0)
			return r;
	}
}

static int parse_header_info(struct opener *o, struct td_cur *c)
{
	const uint8_t *p;
	uint64_t n;
	int r;
	if ((r = td_cur_bytes(c, 12, &p, "header_page tag")) < 0)
		return r;
	if (memcmp(p, "header_page", 12) != 0)
		return td_fail(o->f, td_cur_off(c) - (c->in_comp ? 0 : 12), "missing header_page tag");
	if ((r = td_cur_u64(c, &n, "header_page size")) < 0)
		return r;
	uint64_t at = td_cur_off(c);
	if ((r = td_cur_bytes(c, n, &p, "header_page text")) < 0)
		return r;
	if ((r = td_formats_header_page(&o->ts->fm, o->f, p, n, at)) < 0)
		return r;
	if ((r = td_cur_bytes(c, 13, &p, "header_event tag")) < 0)
		return r;
	if (memcmp(p, "header_event", 13) != 0)
		return td_fail(o->f, td_cur_off(c) - (c->in_comp ? 0 : 13), "missing header_event tag");
	if ((r = td_cur_u64(c, &n, "header_event size")) < 0)
		return r;
	return td_cur_bytes(c, n, &p, "header_event text");
}

static int parse_ftrace_formats(struct opener *o, struct td_cur *c)
{
	uint32_t count;
	int r;
	if ((r = td_cur_u32(c, &count, "ftrace format count")) < 0)
		return r;
	for (uint32_t i = 0; i < count; i++) {
		uint64_t n;
		const uint8_t *p;
		if ((r = td_cur_u64(c, &n, "ftrace format size")) < 0)
			return r;
		uint64_t at = td_cur_off(c);
		if ((r = td_cur_bytes(c, n, &p, "ftrace format text")) < 0)
			return r;
		if ((r = td_formats_parse(&o->ts->fm, o->f, p, n, "ftrace", at)) < 0)
			return r;
	}
	return 0;
}

static int parse_event_formats(struct opener *o, struct td_cur *c)
{
	uint32_t nsys;
	int r;
	if ((r = td_cur_u32(c, &nsys, "event system count")) < 0)
		return r;
	for (uint32_t s = 0; s < nsys; s++) {
		const char *sys;
		uint32_t count;
		if ((r = td_cur_str(c, &sys, "event system name")) < 0 ||
		    (r = td_cur_u32(c, &count, "event format count")) < 0)
			return r;
		for (uint32_t i = 0; i < count; i++) {
			uint64_t n;
			const uint8_t *p;
			if ((r = td_cur_u64(c, &n, "event format size")) < 0)
				return r;
			uint64_t at = td_cur_off(c);
			if ((r = td_cur_bytes(c, n, &p, "event format text")) < 0)
				return r;
			if ((r = td_formats_parse(&o->ts->fm, o->f, p, n, sys, at)) < 0)
				return r;
		}
	}
	return 0;
}

/* saved_cmdlines text: "pid comm\n" per line, given line by line (the arrays grow: the
 * text is never held whole) */
#define TD_MAX_COMMS (1u << 24)

static int cmdline_line(void *ctx, const uint8_t *p, size_t e)
{
	struct opener *o = ctx;
	struct vms_trace_meta *m = o->m;
	size_t k = 0;
	long pid = 0;
	bool digits = false, neg = false;
	if (k < e && p[k] == '-')
		neg = true, k++;
	while (k < e && p[k] >= '0' && p[k] <= '9' && pid < 100000000)
		pid = pid * 10 + (p[k++] - '0'), digits = true;
	if (!digits || k >= e || p[k] != ' ' || m->nr_comms >= TD_MAX_COMMS)
		return 0;
	k++;
	if (m->nr_comms == o->comms_cap) {
		uint32_t cap = o->comms_cap ? o->comms_cap * 2 : 256;
		int32_t *tid = realloc(m->comm_tid, cap * sizeof *tid);
		if (tid)
			m->comm_tid = tid;
		char **name = tid ? realloc(m->comm_name, cap * sizeof *name) : NULL;
		if (!name)
			return nomem(o, o->text_off);
		m->comm_name = name;
		o->comms_cap = cap;
	}
	size_t l = e - k;
	if (l > 255)
		l = 255;
	char *name = malloc(l + 1);
	if (!name)
		return nomem(o, o->text_off);
	memcpy(name, p + k, l);
	name[l] = '\0';
	m->comm_tid[m->nr_comms] = (int32_t)(neg ? -pid : pid);
	m->comm_name[m->nr_comms++] = name;
	return 0;
}

/* A printk format line as the kernel writes it: ADDR : "TEXT" with at least two bytes of
 * TEXT. libtraceevent 1.7 reads and writes outside its copy of a shorter or otherwise shaped
 * line (found by fuzzing), so only such lines are given to it. */
#define TD_PRINTK_MAX_LINE 4096u
static bool printk_line_ok(const uint8_t *l, uint64_t n)
{
	uint64_t k = 0;
	while (k < n && (isxdigit(l[k]) || l[k] == 'x'))
		k++;
	/* and not longer than a kernel's: libtraceevent renders the whole format string for
	 * every bprint event that names it (a 1 MB one cost 0.35 s per event in dump) */
	return k > 0 && n >= k + 3 + 4 && n <= TD_PRINTK_MAX_LINE &&
	       memcmp(l + k, " : \"", 4) == 0 && l[n - 1] == '"';
}

/* printk lines that printk_line_ok accepts, handed to libtraceevent a batch at a time
 * (only for format_event's rendering of bprint events) */
struct printk_batch {
	struct opener *o;
	char *t;
	size_t n, cap;
};

static void printk_flush(struct printk_batch *b)
{
	if (!b->n)
		return;
	b->t[b->n] = '\0';
	tep_parse_printk_formats(b->o->ts->fm.tep, b->t);
	b->n = 0;
}

static int printk_line(void *ctx, const uint8_t *p, size_t n)
{
	struct printk_batch *b = ctx;
	if (!printk_line_ok(p, n))
		return 0;
	if (b->n + n + 2 > b->cap)
		printk_flush(b);
	if (!b->t && !(b->t = malloc(b->cap)))
		return nomem(b->o, b->o->text_off);
	memcpy(b->t + b->n, p, n);
	b->n += n;
	b->t[b->n++] = '\n';
	return 0;
}

/* printk lines from a section (v7) or the mapping (v6) */
static int parse_printk(struct opener *o, uint64_t sec_off, const uint8_t *p, uint64_t n)
{
	struct printk_batch b = {.o = o, .cap = TD_LINE_WINDOW + TD_PRINTK_MAX_LINE + 2};
	o->text_off = p ? (uint64_t)(p - o->f->base) : sec_off;
	int r = p ? td_text_lines(p, n, printk_line, &b)
		  : td_section_lines(o->f, sec_off, OPT_PRINTK, "printk formats", 4, printk_line,
				     &b);
	if (r == 0)
		printk_flush(&b);
	free(b.t);
	return r;
}

/* The kallsyms text names guest code addresses (exits --by rip). A host's is megabytes, so
 * open only notes where it is; td_load_ksyms parses it when someone asks, line by line
 * (a compressed section through a window, never whole). */
static int ksyms_line(void *ctx, const uint8_t *p, size_t n)
{
	return vms_ksyms_add_line(ctx, (const char *)p, n) < 0 ? VMS_ERR_NOMEM : 0;
}

static struct vms_ksyms *td_load_ksyms(struct vms_source *src)
{
	struct td_source *ts = src->impl;
	if (!ts->has_ksyms)
		return NULL;
	struct vms_ksyms *k = vms_ksyms_new();
	int r = !k ? VMS_ERR_NOMEM
		: ts->version < 7 /* v6: the text itself, checked against the file at open */
		? td_text_lines(ts->f.base + ts->ksyms_off, ts->ksyms_len, ksyms_line, k)
		: td_section_lines(&ts->f, ts->ksyms_off, OPT_KALLSYMS, "kallsyms", 4, ksyms_line,
				   k);
	if (r == VMS_ERR_NOMEM)
		vms_error_nomem_at(&ts->src.err, ts->f.path, ts->ksyms_off);
	if (r < 0 || !vms_ksyms_count(k)) {
		vms_ksyms_free(k);
		return NULL;
	}
	vms_ksyms_done(k);
	return k;
}

/* ---- v6: one fixed sequence ---- */
static int open_v6(struct opener *o, uint64_t pos)
{
	struct td_file *f = o->f;
	struct td_cur c = {.f = f, .buf = f->base, .len = f->size, .pos = pos};
	int r;
	uint32_t n32;
	uint64_t n64;
	const uint8_t *p;
	if ((r = parse_header_info(o, &c)) < 0 || (r = parse_ftrace_formats(o, &c)) < 0 ||
	    (r = parse_event_formats(o, &c)) < 0)
		return r;
	if ((r = td_cur_u32(&c, &n32, "kallsyms size")) < 0 ||
	    (r = td_cur_bytes(&c, n32, &p, "kallsyms")) < 0)
		return r;
	o->ts->has_ksyms = n32 > 0;
	o->ts->ksyms_off = (uint64_t)(p - f->base);
	o->ts->ksyms_len = n32;
	if ((r = td_cur_u32(&c, &n32, "printk size")) < 0 ||
	    (r = td_cur_bytes(&c, n32, &p, "printk formats")) < 0 ||
	    (r = parse_printk(o, 0, p, n32)) < 0)
		return r;
	if ((r = td_cur_u64(&c, &n64, "cmdlines size")) < 0 ||
	    (r = td_cur_bytes(&c, n64, &p, "cmdlines")) < 0 ||
	    (o->text_off = (uint64_t)(p - f->base), (r = td_text_lines(p, n64, cmdline_line, o))) < 0)
		return r;
	if ((r = td_cur_u32(&c, &o->v6_cpus, "CPU count")) < 0)
		return r;
	if (o->v6_cpus > TD_MAX_CPUS)
		return td_fail(f, c.pos - 4, "CPU count %u is implausible", o->v6_cpus);
	if ((r = td_cur_bytes(&c, 10, &p, "options tag")) < 0)
		return r;
	if (memcmp(p, "options  ", 10) == 0) {
		uint64_t next;
		if ((r = read_options(o, &c, &next)) < 0)
			return r;
		if ((r = td_cur_bytes(&c, 10, &p, "flyrecord tag")) < 0)
			return r;
	}
	if (memcmp(p, "latency  ", 10) == 0)
		return td_fail(f, c.pos - 10, "latency (text) traces are not supported");
	if (memcmp(p, "flyrecord", 10) != 0)
		return td_fail(f, c.pos - 10, "expected the flyrecord tag");
	/* the top buffer: nr_cpus x {u64 offset, u64 size} right here */
	struct bufopt top = {.off = c.pos, .opt_off = c.pos};
	struct bufopt *nb = realloc(o->bufs, (o->nbufs + 1) * sizeof *nb);
	if (!nb)
		return nomem(o, td_cur_off(&c));
	o->bufs = nb;
	memmove(o->bufs + 1, o->bufs, o->nbufs * sizeof *nb);
	top.name = strdup("");
	top.clock = strdup(o->traceclock[0] ? o->traceclock : "local");
	o->bufs[0] = top;
	o->nbufs++;
	if (!top.name || !top.clock)
		return nomem(o, td_cur_off(&c));
	/* every buffer (top and v6 instances) has the per-CPU table at its offset */
	for (uint32_t b = 0; b < o->nbufs; b++) {
		struct bufopt *bo = &o->bufs[b];
		struct td_cur t = {.f = f, .buf = f->base, .len = f->size, .pos = bo->off};
		if (bo->off > f->size)
			return td_fail(f, bo->opt_off, "buffer '%s' data offset %llu is past the end "
				       "of the file", bo->name, (unsigned long long)bo->off);
		if (b > 0 && f->size - t.pos >= 10 && memcmp(f->base + t.pos, "flyrecord", 10) == 0)
			t.pos += 10;
		bo->page_size = f->page_size;
		bo->ncpu = o->v6_cpus;
		bo->cpu = calloc(o->v6_cpus ? o->v6_cpus : 1, sizeof *bo->cpu);
		bo->doff = calloc(o->v6_cpus ? o->v6_cpus : 1, sizeof *bo->doff);
		bo->dsize = calloc(o->v6_cpus ? o->v6_cpus : 1, sizeof *bo->dsize);
		if (!bo->cpu || !bo->doff || !bo->dsize)
			return nomem(o, td_cur_off(&c));
		for (uint32_t i = 0; i < o->v6_cpus; i++) {
			bo->cpu[i] = i;
			if ((r = td_cur_u64(&t, &bo->doff[i], "CPU data offset")) < 0 ||
			    (r = td_cur_u64(&t, &bo->dsize[i], "CPU data size")) < 0)
				return r;
		}
	}
	return 0;
}

/* ---- v7: sections found through options ---- */
static int with_section(struct opener *o, int id, const char *what,
			int (*fn)(struct opener *, struct td_cur *))
{
	if (!o->has_sec[id])
		return 0;
	struct td_cur c;
	uint8_t *owned;
	int r = td_section(o->f, o->sec[id], id, what, &c, &owned, NULL);
	if (r == 0)
		r = fn(o, &c);
	/* format texts stay referenced by td_formats: keep those sections */
	struct td_formats *fm = &o->ts->fm;
	if (owned && (id == OPT_FTRACE_EVENTS || id == OPT_EVENT_FORMATS) &&
	    fm->nr_keep < sizeof fm->keep / sizeof fm->keep[0])
		fm->keep[fm->nr_keep++] = owned;
	else
		free(owned);
	return r;
}

static int open_v7(struct opener *o, uint64_t first)
{
	struct td_file *f = o->f;
	uint64_t off = first, seen[MAX_OPTION_SECTIONS];
	uint32_t nsec = 0;
	int r;
	while (off) {
		for (uint32_t i = 0; i < nsec; i++)
			if (seen[i] == off)
				return td_fail(f, off, "options sections chain back to themselves");
		if (nsec >= MAX_OPTION_SECTIONS)
			return td_fail(f, off, "more than %d options sections", MAX_OPTION_SECTIONS);
		seen[nsec++] = off;
		struct td_cur c;
		uint8_t *owned;
		if ((r = td_section(f, off, OPT_DONE, "options", &c, &owned, NULL)) < 0)
			return r;
		uint64_t next;
		r = read_options(o, &c, &next);
		free(owned);
		if (r < 0)
			return r;
		off = next;
	}
	if (!o->has_sec[OPT_HEADER_INFO])
		return td_fail(f, first, "no HEADER_INFO section in the options");
	if ((r = with_section(o, OPT_HEADER_INFO, "header info", parse_header_info)) < 0 ||
	    (r = with_section(o, OPT_FTRACE_EVENTS, "ftrace formats", parse_ftrace_formats)) < 0 ||
	    (r = with_section(o, OPT_EVENT_FORMATS, "event formats", parse_event_formats)) < 0 ||
	    (o->has_sec[OPT_PRINTK] && (r = parse_printk(o, o->sec[OPT_PRINTK], NULL, 0)) < 0) ||
	    (o->has_sec[OPT_CMDLINES] && (o->text_off = o->sec[OPT_CMDLINES], 1) &&
	     (r = td_section_lines(f, o->sec[OPT_CMDLINES], OPT_CMDLINES, "cmdlines", 8,
				   cmdline_line, o)) < 0))
		return r;
	o->ts->has_ksyms = o->has_sec[OPT_KALLSYMS];
	o->ts->ksyms_off = o->sec[OPT_KALLSYMS];
	/* top buffer first */
	for (uint32_t i = 1; i < o->nbufs; i++)
		if (o->bufs[i].name[0] == '\0') {
			struct bufopt t = o->bufs[i];
			memmove(o->bufs + 1, o->bufs, i * sizeof t);
			o->bufs[0] = t;
			break;
		}
	return 0;
}

struct region {
	uint64_t off, end;
	uint32_t stream;
};

static int by_offset(const void *a, const void *b)
{
	const struct region *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Two CPUs whose data overlap are not a trace-cmd file: each stream would decompress (and
 * keep a buffer for) the same bytes again, so that a small file could claim the chunk
 * memory of thousands of streams. Refused; O(n log n). */
static int refuse_overlaps(struct opener *o)
{
	struct td_source *ts = o->ts;
	struct region *r = malloc((ts->nr_streams ? ts->nr_streams : 1) * sizeof *r);
	if (!r)
		return nomem(o, o->nbufs ? o->bufs[0].opt_off : 0);
	uint32_t n = 0;
	for (uint32_t i = 0; i < ts->nr_streams; i++)
		if (ts->streams[i].avail)
			r[n++] = (struct region){ts->streams[i].data_off,
						 ts->streams[i].data_off + ts->streams[i].avail, i};
	qsort(r, n, sizeof *r, by_offset);
	for (uint32_t i = 1; i < n; i++)
		if (r[i].off < r[i - 1].end) {
			const struct td_stream *a = &ts->streams[r[i - 1].stream];
			const struct td_stream *b = &ts->streams[r[i].stream];
			uint64_t at = r[i].off;
			free(r);
			return td_fail(o->f, at, "data of CPU %u (buffer '%s') overlaps the data of CPU "
				       "%u (buffer '%s')", b->cpu, ts->buffers[b->buffer].name, a->cpu,
				       ts->buffers[a->buffer].name);
		}
	free(r);
	return 0;
}

/* Streams from the buffers: one per CPU entry; CPU data is checked against the file here
 * (offset inside the file; what lies past the end is kept as "cut" and reported when the
 * stream reaches it, after the events before the cut). */
static int make_streams(struct opener *o)
{
	struct td_source *ts = o->ts;
	struct td_file *f = o->f;
	uint64_t total = 0;
	for (uint32_t b = 0; b < o->nbufs; b++)
		total += o->bufs[b].ncpu;
	if (total > TD_MAX_STREAMS)
		return td_fail(f, o->nbufs ? o->bufs[0].opt_off : 0, "%llu CPU streams in the "
			       "buffers (more than %u)", (unsigned long long)total, TD_MAX_STREAMS);
	ts->streams = calloc(total ? total : 1, sizeof *ts->streams);
	ts->buffers = calloc(o->nbufs ? o->nbufs : 1, sizeof *ts->buffers);
	if (!ts->streams || !ts->buffers)
		return nomem(o, o->nbufs ? o->bufs[0].opt_off : 0);
	uint32_t maxcpu = 0;
	bool any = false;
	for (uint32_t b = 0; b < o->nbufs; b++) {
		struct bufopt *bo = &o->bufs[b];
		ts->buffers[b].name = bo->name;
		ts->buffers[b].clock = bo->clock;
		bo->name = bo->clock = NULL;
		ts->nr_buffers++;
		bool compressed = false;
		if (o->version >= 7) {
			if (bo->off > f->size || f->size - bo->off < 16)
				return td_fail(f, bo->opt_off, "buffer '%s' section offset %llu is past "
					       "the end of the file", ts->buffers[b].name,
					       (unsigned long long)bo->off);
			uint16_t id = td_rd16(f, f->base + bo->off);
			uint16_t flags = td_rd16(f, f->base + bo->off + 2);
			if (id != OPT_BUFFER)
				return td_fail(f, bo->off, "buffer '%s' section has id %u, expected %d",
					       ts->buffers[b].name, id, OPT_BUFFER);
			compressed = flags & 1;
			if (compressed && f->comp == TD_COMP_NONE)
				return td_fail(f, bo->off + 2, "buffer flagged compressed in an "
					       "uncompressed file");
		}
		for (uint32_t i = 0; i < bo->ncpu; i++) {
			struct td_stream *s = &ts->streams[ts->nr_streams++];
			s->cpu = bo->cpu[i];
			s->buffer = b;
			s->page_size = bo->page_size;
			s->compressed = compressed;
			s->data_off = bo->doff[i];
			s->data_size = bo->dsize[i];
			/* trace-cmd's size of compressed CPU data counts the chunks but not
			 * the u32 chunk count in front of them */
			if (compressed && s->data_size && s->data_size <= UINT64_MAX - 4)
				s->data_size += 4;
			/* data past the end of the file: reported by the stream when it gets
			 * there, so that the other CPUs' events are still read */
			uint64_t room = s->data_size && s->data_off < f->size ? f->size - s->data_off : 0;
			s->avail = s->data_size < room ? s->data_size : room;
			if (s->page_size <= ts->fm.data_off)
				return td_fail(f, bo->opt_off, "page size %u smaller than its header",
					       s->page_size);
			if (!any || s->cpu > maxcpu)
				maxcpu = s->cpu;
			any = true;
			td_stream_reset(s);
		}
	}
	int r = refuse_overlaps(o);
	if (r < 0)
		return r;
	o->m->nr_cpus = o->has_cpucount ? o->cpucount : any ? maxcpu + 1 : 0;
	if (o->has_cpucount && any && maxcpu + 1 > o->cpucount)
		o->m->nr_cpus = maxcpu + 1;
	return 0;
}

static bool clock_is_counter(const char *c)
{
	/* clocks whose raw values are not nanoseconds: CPU cycle counters and plain counters */
	static const char *const raw[] = {"tsc2nsec", "x86-tsc", "counter", "uptime", "ppc-tb",
					   NULL};
	for (const char *const *p = raw; *p; p++)
		if (strcmp(c, *p) == 0)
			return true;
	return false;
}

static void fill_format(struct opener *o)
{
	struct td_source *ts = o->ts;
	static const char *const comp[] = {"none", "zlib", "zstd"};
	char *d = o->m->format;
	size_t dl = sizeof o->m->format;
	int n = snprintf(d, dl, "trace.dat v%d %s", o->version, o->version >= 7 ? comp[o->f->comp]
			 : "none");
	for (uint32_t b = 1; b < ts->nr_buffers && n > 0 && (size_t)n < dl; b++)
		n += snprintf(d + n, dl - (size_t)n, "%s%s", b == 1 ? ", buffers: top " : " ",
			      ts->buffers[b].name);
}

static uint32_t td_nr_streams(struct vms_source *src)
{
	return ((struct td_source *)src)->nr_streams;
}

static int td_rewind(struct vms_source *src)
{
	struct td_source *ts = (struct td_source *)src;
	if (src->err.status)
		return src->err.status;
	td_prefetch_rewind(ts);
	return 0;
}

static void td_set_wanted(struct vms_source *src, const bool *wanted)
{
	struct td_source *ts = (struct td_source *)src;
	for (int k = 0; k < VMS_K_COUNT; k++)
		ts->wanted[k] = wanted ? wanted[k] : true;
}

static void td_close(struct vms_source *src)
{
	if (!src)
		return;
	struct td_source *ts = (struct td_source *)src;
	td_prefetch_stop(ts);
	for (uint32_t i = 0; i < ts->nr_streams; i++) {
		free(ts->streams[i].chunk);
		free(ts->streams[i].held_buf);
		for (int k = 0; k < TD_PF_DEPTH; k++)
			free(ts->streams[i].pf[k].buf);
	}
	free(ts->streams);
	for (uint32_t b = 0; b < ts->nr_buffers; b++) {
		free(ts->buffers[b].name);
		free(ts->buffers[b].clock);
	}
	free(ts->buffers);
	free(ts->print_rec);
	if (ts->seq_ready)
		trace_seq_destroy(&ts->seq);
	td_formats_free(&ts->fm);
	td_file_close(&ts->f);
	vms_trace_meta_free(&src->meta);
	free(src->path);
	free(ts);
}

const char *vms_tracedat_stream_buffer(const struct vms_source *src, uint32_t stream)
{
	const struct td_source *ts = (const struct td_source *)src;
	if (!src || src->ops->close != td_close || stream >= ts->nr_streams)
		return NULL;
	return ts->buffers[ts->streams[stream].buffer].name;
}

void vms_tracedat_counters(const struct vms_source *src, uint64_t *chunks,
			   uint64_t *decompressions)
{
	const struct td_source *ts = (const struct td_source *)src;
	bool ours = src && src->ops->close == td_close;
	*chunks = ours ? ts->chunks : 0;
	*decompressions = ours ? atomic_load(&ts->decompressions) : 0;
}

static const struct vms_source_ops td_ops = {
	.name = "tracedat",
	.nr_streams = td_nr_streams,
	.next = td_stream_next,
	.rewind = td_rewind,
	.set_wanted = td_set_wanted,
	.skip_unread = td_skip_unread,
	.format_event = td_format_event,
	.load_ksyms = td_load_ksyms,
	.tell = td_tell,
	.seek = td_seek,
	.close = td_close,
};

static void free_bufopts(struct opener *o)
{
	for (uint32_t b = 0; b < o->nbufs; b++) {
		free(o->bufs[b].name);
		free(o->bufs[b].clock);
		free(o->bufs[b].cpu);
		free(o->bufs[b].doff);
		free(o->bufs[b].dsize);
	}
	free(o->bufs);
}

struct vms_source *vms_tracedat_open(const char *path, struct vms_error *err)
{
	struct td_file f;
	int r = td_file_open(&f, path, err);
	if (r != 0)
		return NULL; /* 1: not a regular non-empty file, so not ours; <0: err set */
	if (f.size < 10 || memcmp(f.base, "\x17\x08\x44tracing", 10) != 0) {
		td_file_close(&f);
		return NULL;
	}
	struct td_source *ts = calloc(1, sizeof *ts);
	if (!ts) {
		td_file_close(&f);
		vms_error_nomem_at(err, path, 0);
		return NULL;
	}
	ts->f = f;
	ts->src.ops = &td_ops;
	ts->src.impl = ts;
	ts->src.path = strdup(path);
	f.path = ts->src.path ? ts->src.path : path;
	ts->f.path = f.path;
	ts->f.err = err; /* during open errors go to the caller; later to src->err */
	ts->chunk_budget = TD_CHUNK_MEM_BASE + TD_CHUNK_MEM_PER_BYTE * ts->f.size;
	if (ts->chunk_budget > TD_CHUNK_MEM_MAX)
		ts->chunk_budget = TD_CHUNK_MEM_MAX;
	for (int k = 0; k < VMS_K_COUNT; k++)
		ts->wanted[k] = true;
	struct opener o = {.ts = ts, .f = &ts->f, .m = &ts->src.meta};
	struct td_file *fp = &ts->f;
	const uint8_t *b = fp->base;
	uint64_t pos = 10;
	const uint8_t *nul = memchr(b + pos, '\0', fp->size - pos < 16 ? fp->size - pos : 16);
	if (!ts->src.path) {
		r = nomem(&o, 0);
		goto fail;
	}
	if (!nul) {
		r = td_fail(fp, pos, "version string not terminated");
		goto fail;
	}
	o.version = atoi((const char *)b + pos);
	if (o.version != 6 && o.version != 7) {
		r = td_fail(fp, pos, "trace.dat version '%.*s' is not supported (6 and 7 are)",
			    (int)(nul - (b + pos)), b + pos);
		goto fail;
	}
	ts->version = o.version;
	pos = (uint64_t)(nul - b) + 1;
	if (fp->size - pos < 6) {
		r = td_fail(fp, pos, "file header cut short");
		goto fail;
	}
	bool big = b[pos] != 0;
	fp->swap = big != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
	fp->long_size = b[pos + 1];
	if (fp->long_size != 4 && fp->long_size != 8) {
		r = td_fail(fp, pos + 1, "long size %d is not 4 or 8", fp->long_size);
		goto fail;
	}
	fp->page_size = td_rd32(fp, b + pos + 2);
	if (fp->page_size < 64 || fp->page_size > (1u << 24) || (fp->page_size & 3)) {
		r = td_fail(fp, pos + 2, "page size %u is implausible", fp->page_size);
		goto fail;
	}
	pos += 6;
	uint64_t formats_off = pos; /* the header sections (v6) or options (v7) start here */
	if ((r = td_formats_init(&ts->fm, fp, &ts->src.meta)) < 0)
		goto fail;
	if (o.version >= 7) {
		struct td_cur c = {.f = fp, .buf = b, .len = fp->size, .pos = pos};
		const char *cname, *cver;
		uint64_t first;
		if ((r = td_cur_str(&c, &cname, "compression name")) < 0 ||
		    (r = td_cur_str(&c, &cver, "compression version")) < 0 ||
		    (r = td_cur_u64(&c, &first, "first options offset")) < 0)
			goto fail;
		if (strcmp(cname, "none") == 0)
			fp->comp = TD_COMP_NONE;
		else if (strcmp(cname, "zlib") == 0)
			fp->comp = TD_COMP_ZLIB;
		else if (strcmp(cname, "zstd") == 0)
			fp->comp = TD_COMP_ZSTD;
		else {
			r = td_fail(fp, pos, "compression '%.32s' is not supported", cname);
			goto fail;
		}
		if ((r = open_v7(&o, first)) < 0)
			goto fail;
	} else if ((r = open_v6(&o, pos)) < 0) {
		goto fail;
	}
	if ((r = td_formats_finish(&ts->fm, fp, &ts->src.meta, formats_off)) < 0 || (r = make_streams(&o)) < 0)
		goto fail;
	struct vms_trace_meta *m = &ts->src.meta;
	const char *clock = ts->nr_buffers && ts->buffers[0].clock && ts->buffers[0].clock[0]
		? ts->buffers[0].clock : o.traceclock[0] ? o.traceclock : "local";
	snprintf(m->clock, sizeof m->clock, "%s", clock);
	m->ts_in_ns = !clock_is_counter(m->clock);
	fill_format(&o);
	free_bufopts(&o);
	ts->f.err = &ts->src.err;
	td_prefetch_start(ts);
	return &ts->src;
fail:
	(void)r;
	free_bufopts(&o);
	if (err->status == 0)
		vms_error_set(err, VMS_ERR_FORMAT, "%s: cannot be read at byte offset 0", path);
	/* td_close frees meta, formats and file; error text was set through fp->err */
	td_close(&ts->src);
	return NULL;
}
