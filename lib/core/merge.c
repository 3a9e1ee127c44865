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

/* The arrays for every stream of sources[0..n), each stream named (source, stream, clock):
 * 0, or VMS_ERR_NOMEM with m freed. */
static int merge_alloc(struct vms_merge *m, struct vms_source **sources,
		       const struct vms_clock *const *clocks, uint32_t n, struct vms_error *err,
		       uint32_t *total_out)
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
		}
	}
	*total_out = total;
	return 0;
}

int vms_merge_init(struct vms_merge *m, struct vms_source **sources,
		   const struct vms_clock *const *clocks, uint32_t n, struct vms_error *err)
{
	uint32_t total;
	int r0 = merge_alloc(m, sources, clocks, n, err, &total);
	if (r0 < 0)
		return r0;
	for (uint32_t k = 0; k < total; k++) {
		struct vms_merge_stream *s = &m->streams[k];
		int r = load(m, s);
		if (r < 0) {
			vms_merge_free(m);
			return r;
		}
		if (r > 0) {
			m->heap[m->heap_len++] = s;
			m->live[s->source]++;
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

int vms_merge_tell(struct vms_merge *m, struct vms_merge_mark *marks)
{
	memset(marks, 0, m->nr_streams * sizeof *marks);
	for (uint32_t h = 0; h < m->heap_len; h++) {
		struct vms_merge_stream *s = m->heap[h];
		struct vms_merge_mark *mk = &marks[s - m->streams];
		mk->state = h == 0 && m->advance ? VMS_MARK_DELIVERED : VMS_MARK_PENDING;
		int r = vms_source_tell(s->src, s->stream, &mk->pos);
		if (r < 0)
			return vms_error_set(m->err, r, "%s", s->src->err.msg);
	}
	return 0;
}

int vms_merge_restart(struct vms_merge *m, struct vms_source **sources,
		      const struct vms_clock *const *clocks, uint32_t n,
		      const struct vms_merge_mark *marks, uint32_t nr_marks, uint64_t last_t,
		      struct vms_error *err)
{
	uint32_t total;
	int r = merge_alloc(m, sources, clocks, n, err, &total);
	if (r < 0)
		return r;
	if (nr_marks != total) {
		vms_merge_free(m);
		return vms_error_set(err, VMS_ERR_FORMAT, "checkpoint of %u streams for %u streams",
				     nr_marks, total);
	}
	uint32_t delivered = 0;
	for (uint32_t k = 0; k < total; k++) {
		struct vms_merge_stream *s = &m->streams[k];
		uint8_t st = marks[k].state;
		if (st == VMS_MARK_ENDED)
			continue;
		r = st > VMS_MARK_DELIVERED
			? vms_error_set(err, VMS_ERR_FORMAT, "checkpoint: stream %u: state %u", k, st)
			: vms_source_seek(s->src, s->stream, &marks[k].pos);
		if (r < 0 && st <= VMS_MARK_DELIVERED)
			vms_error_set(err, r, "%s", s->src->err.msg);
		if (r == 0 && (r = load(m, s)) == 0)
			r = vms_error_set(err, VMS_ERR_FORMAT, "checkpoint: stream %u: no event at its "
					  "position", k);
		if (r < 0) {
			vms_merge_free(m);
			return r;
		}
		delivered += st == VMS_MARK_DELIVERED;
		m->heap[m->heap_len++] = s;
		m->live[s->source]++;
	}
	m->nr_streams = total;
	for (uint32_t i = m->heap_len / 2; i-- > 0;)
		sift_down(m, i);
	/* keys (time, source, stream) are unique, so the stream whose event was handed out
	 * last, the earliest then, is the heap's top again: the next call advances it */
	if (delivered > 1 || (delivered == 1 && marks[m->heap[0] - m->streams].state !=
			      VMS_MARK_DELIVERED)) {
		vms_merge_free(m);
		return vms_error_set(err, VMS_ERR_FORMAT, "checkpoint: the event handed out last "
				     "is not the earliest");
	}
	m->advance = delivered == 1;
	m->last_t = last_t;
	return 0;
}
