#include <stdlib.h>
#include <string.h>

#include "merge.h"

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
		if (l + 1 < n && vms_merge_before(h[l + 1], h[l]))
			c = l + 1;
		if (!vms_merge_before(h[c], x))
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
	s->t = vms_merge_stream_time(s);
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
			s->raw_ns = !s->clock->timeshift && !s->clock->linear &&
				    !s->clock->tsc2nsec && s->clock->add_ns == 0;
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

/* vms_merge_next's rare paths (merge.h has the common one inline): the stream handed out
 * last was advanced with result r; r > 0: it has a new event, which may no longer be the
 * earliest (sift); r == 0: it ended; r < 0: a read error. Returns what vms_merge_next does
 * then when no event is left (0) or on error, else 1 with heap[0] the earliest. */
int vms_merge_settle(struct vms_merge *m, int r)
{
	struct vms_merge_stream *top = m->heap[0];
	if (r < 0) {
		vms_error_set(m->err, top->src->err.status ? top->src->err.status : VMS_ERR_FORMAT,
			      "%s", top->src->err.msg[0] ? top->src->err.msg : "read error");
		return r;
	}
	if (r > 0) {
		sift_down(m, 0);
		return 1;
	}
	bool done = --m->live[top->source] == 0;
	if (m->on_end)
		m->on_end(m->end_ctx, top->source, top->stream, m->last_t, done);
	m->heap[0] = m->heap[--m->heap_len];
	if (m->heap_len == 0)
		return 0;
	sift_down(m, 0);
	return 1;
}
