#include <stdlib.h>
#include <string.h>

#include "merge.h"

static inline bool before(const struct vms_merge_stream *a, const struct vms_merge_stream *b)
{
	if (a->t != b->t)
		return a->t < b->t;
	if (a->source != b->source)
		return a->source < b->source;
	return a->stream < b->stream;
}

static inline void sift_down(struct vms_merge *m, uint32_t i)
{
	struct vms_merge_stream **h = m->heap;
	uint32_t n = m->heap_len;
	struct vms_merge_stream *x = h[i];
	for (;;) {
		uint32_t l = 2 * i + 1;
		if (l >= n)
			break;
		uint32_t c = l;
		if (l + 1 < n && before(h[l + 1], h[l]))
			c = l + 1;
		if (!before(h[c], x))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/* Load the next event of a stream: 1 loaded, 0 stream ended, <0 error. */
static inline int load(struct vms_merge *m, struct vms_merge_stream *s)
{
	int r = s->src->ops->next(s->src, s->stream, &s->ev);
	if (r <= 0) {
		if (r < 0)
			vms_error_set(m->err, s->src->err.status ? s->src->err.status : VMS_ERR_FORMAT,
				      "%s", s->src->err.msg[0] ? s->src->err.msg : "read error");
		return r;
	}
	s->ev.machine = s->source;
	s->ev.stream = s->stream;
	s->t = vms_clock_to_ref_fast(s->clock, s->ev.cpu, s->ev.ts);
	return 1;
}

int vms_merge_init(struct vms_merge *m, struct vms_source **sources,
		   const struct vms_clock *const *clocks, uint32_t n, struct vms_error *err)
{
	memset(m, 0, sizeof *m);
	m->err = err;
	uint32_t total = 0;
	for (uint32_t i = 0; i < n; i++)
		total += sources[i]->ops->nr_streams(sources[i]);
	m->streams = calloc(total ? total : 1, sizeof *m->streams);
	m->heap = calloc(total ? total : 1, sizeof *m->heap);
	m->live = calloc(n ? n : 1, sizeof *m->live);
	m->nr_sources = n;
	if (!m->streams || !m->heap || !m->live) {
		vms_merge_free(m);
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory for %u streams", total);
	}
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t ns = sources[i]->ops->nr_streams(sources[i]);
		for (uint32_t j = 0; j < ns; j++, k++) {
			struct vms_merge_stream *s = &m->streams[k];
			s->src = sources[i];
			s->clock = clocks[i];
			s->source = i;
			s->stream = j;
			int r = load(m, s);
			if (r < 0) {
				vms_merge_free(m);
				return r;
			}
			if (r > 0) {
				m->heap[m->heap_len++] = s;
				m->live[i]++;
			}
		}
	}
	m->nr_streams = total;
	for (uint32_t i = m->heap_len / 2; i-- > 0;)
		sift_down(m, i);
	return 0;
}

void vms_merge_free(struct vms_merge *m)
{
	free(m->streams);
	free(m->heap);
	free(m->live);
	m->streams = NULL;
	m->heap = NULL;
	m->live = NULL;
	m->heap_len = 0;
}

/* The event handed out last stays in its stream's slot until the next call, which then
 * advances that stream: so strings inside it stay valid for the caller. */
int vms_merge_next(struct vms_merge *m, const struct vms_event **ev, uint64_t *t)
{
	if (m->heap_len == 0)
		return 0;
	struct vms_merge_stream *top = m->heap[0];
	if (m->advance) {
		m->advance = false;
		/* advance the stream delivered last time */
		int r = load(m, top);
		if (r < 0)
			return r;
		if (r == 0) {
			bool done = --m->live[top->source] == 0;
			if (m->on_end)
				m->on_end(m->end_ctx, top->source, top->stream, m->last_t, done);
			m->heap[0] = m->heap[--m->heap_len];
			if (m->heap_len == 0)
				return 0;
			sift_down(m, 0);
		} else if (m->heap_len > 1) {
			/* most of the time the same stream is still the earliest: check the two
			 * children before paying for a sift */
			struct vms_merge_stream *c = m->heap[1];
			if (m->heap_len > 2 && before(m->heap[2], c))
				c = m->heap[2];
			if (before(c, top))
				sift_down(m, 0);
		}
		top = m->heap[0];
	}
	uint64_t tt = top->t;
	if (tt < m->last_t) {
		m->backwards++;
		top->ev.flags |= VMS_EVF_TIME_BACKWARDS;
		tt = m->last_t;
	}
	m->last_t = tt;
	m->advance = true;
	*ev = &top->ev;
	*t = tt;
	return 1;
}
