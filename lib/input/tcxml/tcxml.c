/* The Trace Compass XML stub source.
 *
 * At open, one validating pass over the whole file (streaming, nothing kept but the event
 * names and the highest CPU): a damaged file is refused at once with its position instead
 * of half-analysed, meta.type_names is complete, and we learn whether the events are in
 * time order. If they are (the usual case), the file is one stream; if not, it is one stream
 * per CPU (each CPU's events must then be in order: those that are not are flagged
 * VMS_EVF_TIME_BACKWARDS). The file is then still parsed once: a stream that needs its next
 * event parses on, queueing the other CPUs' events for their streams (re-parsing the file
 * once per CPU took 17 s and 395 MB for 4,096 CPUs). The queues together hold at most
 * TCXML_QUEUE_MAX bytes: a reader that takes the streams one after the other from a file
 * bigger than that is told so, not given unbounded memory.
 *
 * The format has no thread id: the thread of an event is the one the last sched_switch on
 * its CPU switched in (-1 before any), and a sched_switch itself belongs to prev_tid. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcxml.h"
#include "vmscope/source.h"

/* One event parsed for another CPU's stream, waiting: its raw text (the arena up to `used`)
 * and where its strings were in it. */
struct tcxml_queued {
	struct tcxml_queued *next;
	uint64_t ts;
	uint32_t line, nr_fields, used;
	long offset;
	uint32_t name_off;
	uint32_t off[];           /* [2 * nr_fields]: field names and values, then the arena */
};

#define TCXML_QUEUE_MAX (256u << 20)

struct tcxml_stream {
	struct tcxml_parser p;   /* open while the stream is being read (one stream) */
	struct tcxml_queued *qhead, *qtail;
	bool done;
	bool have_last;
	uint64_t last_ts;
	int32_t *cur_tid;        /* [nr_cpus] */
	struct tcxml_raw *raw;   /* the last event read (strings of vms_event point into it) */
};

struct tcxml {
	uint32_t nr_cpus;
	uint32_t nr_streams;
	struct tcxml_stream *st;
	/* several streams (one per CPU): the one parser they share */
	struct tcxml_parser p;
	struct tcxml_raw *raw;
	bool parsed_all;
	uint64_t queued;          /* bytes in all queues */
};

static struct tcxml *impl(struct vms_source *src)
{
	return src->impl;
}

static int32_t type_index(const struct vms_trace_meta *meta, const char *name)
{
	for (uint32_t i = 0; i < meta->nr_types; i++)
		if (strcmp(meta->type_names[i], name) == 0)
			return (int32_t)i;
	return -1;
}

static int add_type(struct vms_source *src, const char *name, uint32_t line, long offset)
{
	struct vms_trace_meta *m = &src->meta;
	if (m->nr_types == TCXML_MAX_TYPES)
		return vms_error_set(&src->err, VMS_ERR_FORMAT,
				     "%s: more than %d distinct event names (line %u) at byte offset %ld",
				     src->path, TCXML_MAX_TYPES, line, offset);
	char **names = realloc(m->type_names, (m->nr_types + 1) * sizeof *names);
	if (!names)
		return vms_error_nomem_at(&src->err, src->path, offset > 0 ? (uint64_t)offset : 0);
	m->type_names = names;
	uint16_t *kinds = realloc(m->type_kinds, (m->nr_types + 1) * sizeof *kinds);
	if (!kinds)
		return vms_error_nomem_at(&src->err, src->path, offset > 0 ? (uint64_t)offset : 0);
	m->type_kinds = kinds;
	if (!(names[m->nr_types] = strdup(name)))
		return vms_error_nomem_at(&src->err, src->path, offset > 0 ? (uint64_t)offset : 0);
	kinds[m->nr_types] = (uint16_t)tcxml_kind_of(name);
	m->nr_types++;
	return 0;
}

/* The validating pass: names, CPUs, numbers, order. */
static int prescan(struct vms_source *src, bool *ordered)
{
	struct tcxml_parser p;
	struct tcxml_raw *raw = malloc(sizeof *raw);
	uint64_t *cpu_last = calloc(TCXML_MAX_CPUS, sizeof *cpu_last);
	int rc = 0;
	uint32_t max_cpu = 0;
	uint64_t last = 0;
	*ordered = true;
	if (!raw || !cpu_last) {
		rc = vms_error_nomem_at(&src->err, src->path, 0);
		goto out;
	}
	if ((rc = tcxml_parser_open(&p, src->path, &src->err)) != 0)
		goto out;
	for (;;) {
		rc = tcxml_parser_next(&p, raw, &src->err);
		if (rc <= 0)
			break;
		uint32_t cpu;
		struct vms_event ev;
		if ((rc = tcxml_cpu(src->path, raw, &cpu, &src->err)) != 0)
			break;
		int32_t type = type_index(&src->meta, raw->name);
		if (type < 0) {
			if ((rc = add_type(src, raw->name, raw->line, raw->offset)) != 0)
				break;
			type = (int32_t)src->meta.nr_types - 1;
		}
		rc = tcxml_decode(src->path, raw, (enum vms_kind)src->meta.type_kinds[type], &ev,
				  &src->err);
		if (rc != 0)
			break;
		if (raw->ts < last)
			*ordered = false;
		last = raw->ts;
		cpu_last[cpu] = raw->ts;
		if (cpu > max_cpu)
			max_cpu = cpu;
	}
	tcxml_parser_close(&p);
	src->meta.nr_cpus = max_cpu + 1;
out:
	free(raw);
	free(cpu_last);
	return rc;
}

static uint32_t tc_nr_streams(struct vms_source *src)
{
	return impl(src)->nr_streams;
}

static void queue_drop(struct tcxml *t, struct tcxml_stream *s)
{
	while (s->qhead) {
		struct tcxml_queued *q = s->qhead;
		s->qhead = q->next;
		t->queued -= sizeof *q + 2 * q->nr_fields * sizeof q->off[0] + q->used;
		free(q);
	}
	s->qtail = NULL;
}

/* Queue the shared parser's event (of CPU `cpu`) for that CPU's stream. */
static int queue_push(struct vms_source *src, struct tcxml *t, uint32_t cpu)
{
	const struct tcxml_raw *r = t->raw;
	size_t offs = 2 * (size_t)r->nr_fields * sizeof(uint32_t);
	size_t size = sizeof(struct tcxml_queued) + offs + r->used;
	if (t->queued + size > TCXML_QUEUE_MAX)
		return vms_error_set(&src->err, VMS_ERR_NOMEM,
				     "%s: events out of time order need more than %u MiB of "
				     "queues when the CPUs' streams are read one after the other "
				     "(line %u) at byte offset %ld", src->path,
				     TCXML_QUEUE_MAX >> 20, r->line, r->offset);
	struct tcxml_queued *q = malloc(size);
	if (!q)
		return vms_error_nomem_at(&src->err, src->path, r->offset > 0 ? (uint64_t)r->offset : 0);
	q->next = NULL;
	q->ts = r->ts;
	q->line = r->line;
	q->offset = r->offset;
	q->nr_fields = r->nr_fields;
	q->used = (uint32_t)r->used;
	q->name_off = (uint32_t)(r->name - r->arena);
	for (uint32_t i = 0; i < r->nr_fields; i++) {
		q->off[2 * i] = (uint32_t)(r->fname[i] - r->arena);
		q->off[2 * i + 1] = (uint32_t)(r->fvalue[i] - r->arena);
	}
	memcpy((char *)q->off + offs, r->arena, r->used);
	struct tcxml_stream *s = &t->st[cpu];
	if (s->qtail)
		s->qtail->next = q;
	else
		s->qhead = q;
	s->qtail = q;
	t->queued += size;
	return 0;
}

/* The stream's next queued event into its raw; false when its queue is empty. */
static bool queue_pop(struct tcxml *t, struct tcxml_stream *s)
{
	struct tcxml_queued *q = s->qhead;
	if (!q)
		return false;
	struct tcxml_raw *r = s->raw;
	size_t offs = 2 * (size_t)q->nr_fields * sizeof(uint32_t);
	memcpy(r->arena, (char *)q->off + offs, q->used);
	r->used = q->used;
	r->ts = q->ts;
	r->line = q->line;
	r->offset = q->offset;
	r->nr_fields = q->nr_fields;
	r->name = r->arena + q->name_off;
	for (uint32_t i = 0; i < q->nr_fields; i++) {
		r->fname[i] = r->arena + q->off[2 * i];
		r->fvalue[i] = r->arena + q->off[2 * i + 1];
	}
	s->qhead = q->next;
	if (!s->qhead)
		s->qtail = NULL;
	t->queued -= sizeof *q + offs + q->used;
	free(q);
	return true;
}

/* The next raw event of stream `stream` (one stream per CPU): from its queue, or parsed on,
 * queueing the other CPUs' events. 1, 0 at the end, negative with err set. */
static int shared_next(struct vms_source *src, struct tcxml *t, uint32_t stream)
{
	struct tcxml_stream *s = &t->st[stream];
	if (queue_pop(t, s))
		return 1;
	if (t->parsed_all)
		return 0;
	if (!t->p.r) {
		int rc = tcxml_parser_open(&t->p, src->path, &src->err);
		if (rc != 0)
			return rc;
	}
	for (;;) {
		int rc = tcxml_parser_next(&t->p, t->raw, &src->err);
		if (rc <= 0) {
			tcxml_parser_close(&t->p);
			t->parsed_all = rc == 0;
			return rc;
		}
		uint32_t cpu;
		if ((rc = tcxml_cpu(src->path, t->raw, &cpu, &src->err)) != 0)
			return rc;
		if (cpu >= t->nr_streams)
			return vms_error_set(&src->err, VMS_ERR_FORMAT,
					     "%s: file changed while being read (line %u) at byte "
					     "offset %ld", src->path, t->raw->line, t->raw->offset);
		if ((rc = queue_push(src, t, cpu)) != 0)
			return rc;
		if (cpu == stream) {
			queue_pop(t, s);
			return 1;
		}
	}
}

/* The next raw event of the stream into s->raw: 1, 0 at the end, negative with err set. */
static int raw_next(struct vms_source *src, struct tcxml *t, uint32_t stream)
{
	struct tcxml_stream *s = &t->st[stream];
	if (t->nr_streams > 1)
		return shared_next(src, t, stream);
	if (!s->p.r) {
		int rc = tcxml_parser_open(&s->p, src->path, &src->err);
		if (rc != 0)
			return rc;
	}
	int rc = tcxml_parser_next(&s->p, s->raw, &src->err);
	if (rc <= 0)
		tcxml_parser_close(&s->p);
	return rc;
}

static void stream_reset(struct tcxml *t, struct tcxml_stream *s)
{
	queue_drop(t, s);
	tcxml_parser_close(&s->p);
	s->done = false;
	s->have_last = false;
	s->last_ts = 0;
	for (uint32_t c = 0; c < t->nr_cpus; c++)
		s->cur_tid[c] = -1;
}

static int tc_next(struct vms_source *src, uint32_t stream, struct vms_event *ev)
{
	struct tcxml *t = impl(src);
	if (stream >= t->nr_streams)
		return vms_error_set(&src->err, VMS_ERR_USAGE, "%s: no stream %u", src->path,
				     stream);
	struct tcxml_stream *s = &t->st[stream];
	if (s->done)
		return 0;
	int rc = raw_next(src, t, stream);
	if (rc <= 0) {
		s->done = rc == 0;
		return rc;
	}
	uint32_t cpu;
	if ((rc = tcxml_cpu(src->path, s->raw, &cpu, &src->err)) != 0)
		return rc;
	int32_t type = type_index(&src->meta, s->raw->name);
	if (type < 0 || cpu >= t->nr_cpus)
		return vms_error_set(&src->err, VMS_ERR_FORMAT,
				     "%s: file changed while being read (line %u) at byte "
				     "offset %ld", src->path, s->raw->line, s->raw->offset);
	enum vms_kind kind = (enum vms_kind)src->meta.type_kinds[type];
	memset(ev, 0, sizeof *ev);
	if ((rc = tcxml_decode(src->path, s->raw, kind, ev, &src->err)) != 0)
		return rc;
	ev->ts = s->raw->ts;
	ev->cpu = cpu;
	ev->kind = (uint16_t)kind;
	ev->type = (uint32_t)type;
	ev->stream = stream;
	ev->tid = s->cur_tid[cpu];
	if (kind == VMS_K_SCHED_SWITCH) {
		ev->tid = (int32_t)ev->f[0];
		s->cur_tid[cpu] = (int32_t)ev->f[2];
	}
	if (s->have_last && ev->ts < s->last_ts)
		ev->flags |= VMS_EVF_TIME_BACKWARDS;
	s->have_last = true;
	s->last_ts = ev->ts;
	return 1;
}

static int tc_rewind(struct vms_source *src)
{
	struct tcxml *t = impl(src);
	for (uint32_t i = 0; i < t->nr_streams; i++)
		stream_reset(t, &t->st[i]);
	tcxml_parser_close(&t->p);
	t->parsed_all = false;
	return 0;
}

static int tc_format_event(struct vms_source *src, uint32_t stream, char *buf, size_t len)
{
	struct tcxml *t = impl(src);
	if (!len)
		return 0;
	buf[0] = '\0';
	if (stream >= t->nr_streams || !t->st[stream].raw->name)
		return 0;
	const struct tcxml_raw *r = t->st[stream].raw;
	size_t n = (size_t)snprintf(buf, len, "%s:", r->name);
	for (uint32_t i = 0; i < r->nr_fields && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, " %s=%s", r->fname[i], r->fvalue[i]);
	return 0;
}

static void tc_close(struct vms_source *src)
{
	struct tcxml *t = impl(src);
	if (t) {
		tcxml_parser_close(&t->p);
		free(t->raw);
		for (uint32_t i = 0; i < t->nr_streams; i++) {
			queue_drop(t, &t->st[i]);
			tcxml_parser_close(&t->st[i].p);
			free(t->st[i].cur_tid);
			free(t->st[i].raw);
		}
		free(t->st);
		free(t);
	}
	vms_trace_meta_free(&src->meta);
	free(src->path);
	free(src);
}

static const struct vms_source_ops tcxml_ops = {
	.name = "tcxml",
	.nr_streams = tc_nr_streams,
	.next = tc_next,
	.rewind = tc_rewind,
	.set_wanted = NULL,
	.format_event = tc_format_event,
	.close = tc_close,
};

struct vms_source *vms_tcxml_open(const char *path, struct vms_error *err)
{
	int rc = tcxml_sniff(path, err);
	if (rc <= 0)
		return NULL; /* 0: not this format (err untouched); < 0: err set */
	struct vms_source *src = calloc(1, sizeof *src);
	struct tcxml *t = calloc(1, sizeof *t);
	if (!src || !t || !(src->path = strdup(path))) {
		free(t);
		if (src)
			free(src->path);
		free(src);
		vms_error_nomem_at(err, path, 0);
		return NULL;
	}
	src->ops = &tcxml_ops;
	src->impl = t;
	snprintf(src->meta.format, sizeof src->meta.format, "Trace Compass XML");
	snprintf(src->meta.clock, sizeof src->meta.clock, "ns");
	src->meta.ts_in_ns = true;
	bool ordered;
	if (prescan(src, &ordered) != 0)
		goto fail;
	t->nr_cpus = src->meta.nr_cpus;
	uint32_t nr = ordered ? 1 : t->nr_cpus;
	if (!(t->st = calloc(nr, sizeof *t->st))) {
		vms_error_nomem_at(&src->err, src->path, 0); /* (the streams start there) */
		goto fail;
	}
	t->nr_streams = nr;
	if (nr > 1 && !(t->raw = calloc(1, sizeof *t->raw))) {
		vms_error_nomem_at(&src->err, src->path, 0); /* (the streams start there) */
		goto fail;
	}
	for (uint32_t i = 0; i < t->nr_streams; i++) {
		struct tcxml_stream *s = &t->st[i];
		s->cur_tid = malloc(t->nr_cpus * sizeof *s->cur_tid);
		s->raw = calloc(1, sizeof *s->raw);
		if (!s->cur_tid || !s->raw) {
			vms_error_nomem_at(&src->err, src->path, 0);
			goto fail;
		}
		stream_reset(t, s);
	}
	return src;
fail:
	*err = src->err;
	tc_close(src);
	return NULL;
}
