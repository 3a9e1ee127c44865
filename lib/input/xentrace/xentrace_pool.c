/* xentrace: the per-CPU streams decoded ahead by the readers' worker pool (lib/core/pool.c).
 *
 * A xentrace file is one stream per physical CPU, each decoded on its own (the vCPU current
 * on a CPU, its names, its lost-records state are the stream's): the workers decode each
 * stream's next records while the reading thread merges and the analyses run. A job is one
 * stream's next block (a queue of core/ahead.c) of up to `per_block` events, with their
 * names copied out of the stream's table (which the decoder overwrites) and the offset of
 * each record for format_event, decoded by xt_decode_next, the decoder the reading thread
 * runs when alone. A stream has at most VMS_AHEAD_DEPTH blocks decoded ahead and one being
 * read, so memory is bounded by the queues (per_block is chosen at start so that all of them
 * stay under XQ_MEM) whatever the length of the file; the mapping is given back by the
 * reading thread behind what it has taken. One job per stream at a time, so each record is
 * decoded once, in order: the events and their flags are those of reading alone. The
 * reading thread, when the block it needs is neither decoded nor claimed, decodes it itself
 * (it helps instead of sleeping); when a worker is decoding it, it waits.
 *
 * What it costs: a record decodes in tens of nanoseconds, of the order of what handing its
 * event from a worker's cache to the reading thread's and the wake-ups cost (perf: taking
 * the events and the scheduler took about what decoding took), so the pool saves little of
 * the reading thread's time and adds CPU time (8 copies of xen/xentrace.bin end to end, 31 MB, 2 cores: report
 * 0.057 s wall at --threads 1 and 2, CPU 56 -> 75 ms; without skip_unread, 0.098 -> 0.104 s
 * wall, CPU 97 -> 145 ms). So a file is read alone unless --threads N asks for workers
 * (see xt_pool_start), and files below POOL_MIN_BYTES are read alone then too.
 *
 * skip_unread (records no analysis reads left out and counted by type) changes what is
 * decoded. The counts are the reading thread's: a job counts what it leaves out before each
 * event in the block (deltas), added when that event is taken, so that the counts are those
 * of the events taken, as alone. The session turns skipping on after the merge has taken each
 * stream's first event and off at the end of the pass: a stream's first event is decoded by
 * the reading thread alone, and the workers start on it from its second, so that turning it
 * on finds nothing decoded ahead. A stream that has events decoded ahead under the other
 * setting is decoded again from its start up to where the reader was, under the old
 * setting, when next asked for (as the CTF reader's set_wanted does, ctf_pool.c). */
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/ahead.h"
#include "core/pool.h"
#include "xentrace.h"

#define XQ_URGENT 2              /* wake the workers when a stream has this few ahead */
#define XQ_MAX_EVENTS 128        /* events per block: a job of ~5-10 us */
#define XQ_MIN_EVENTS 32         /* below this the lock and wake-ups cost more than a worker */
#define XQ_MEM (32u << 20)       /* all blocks of a file together */
/* Below this a file is read in tens of ms and the pool costs more than it gives; the tests
 * put small files through it with VMS_XENTRACE_POOL_MIN=0 */
#define POOL_MIN_BYTES (8u << 20)

/* (112 bytes: what the reading thread reads of each event, from another core's cache, is
 * most of the pool's cost; the names, which few events have, are apart) */
struct xq_ent {
	struct vms_event ev;     /* its strings point to the block's names */
	struct xt_at at;         /* where its record is (format_event) and what tell says */
};

/* skip_unread: n records of type `type` were left out before event `ent` of the block (or
 * before its end when ent == the block's n) */
struct xq_delta {
	uint32_t ent, type;
	uint64_t n;
};

/* at most one delta per type between two events */
#define XQ_DELTAS_PER_EVENT VMS_XEN_T_COUNT

struct xq_block {
	uint32_t stream;
	uint32_t n;              /* events decoded */
	uint32_t nd;             /* deltas */
	int status;              /* after them: 1 more to come, 0 the end */
	bool skip;               /* decoded with skip_unread on */
	struct xq_delta *d;      /* [dcap], after e[] */
	char (*names)[24];       /* [2 * per_block], after d[] */
	struct xq_ent e[];
};

/* A stream's queue (aq: under the pool's lock but its cur; its stale means decoded ahead
 * under the other skip setting) and the reading thread's place in it.
 *
 * What the reading thread reads and writes at every event is on cache lines of its own,
 * apart from aq, which the workers' claim reads for every stream and their finish writes:
 * when the reading thread counted its events in aq.taken and read aq.cur and aq.stale there
 * (and the stream's seek_status, in a line the worker decoding it writes), its loads missed
 * at each event, the lines going back and forth between the cores (perf record, report on
 * 10 copies of xen/xentrace.bin: xt_next 2,543 samples against 496 alone, a quarter of them
 * on seek_status's load). */
struct xq {
	struct vms_ahead aq;
	/* the reading thread's alone: */
	_Alignas(64) const struct xq_block *blk; /* aq.cur, as vms_ahead_next left it */
	uint32_t cur_i, cur_d;   /* the next event and delta of blk */
	uint64_t taken;          /* events taken since the rewind (or the seek) */
	bool primed;             /* the first event was taken (decoded by the reading thread) */
	bool stale;              /* aq.stale, set by the reading thread's set_skip */
	bool replay_skip;        /* when stale: the setting the events taken were decoded with */
	struct xt_at shown;      /* of the event taken last (its off: format_event's record) */
	/* after a seek: where (taken counts from it; a replay starts there, not at the start) */
	bool sought;
	struct vms_stream_pos from;
};

/* (what the workers write at each job, the pool's client fields, rr and decoded_pool, apart
 * from what the reading thread reads at each event) */
struct xt_pool {
	struct vms_pool_client pc;
	uint32_t rr;                 /* the stream the workers look at first */
	_Atomic uint64_t decoded_pool; /* events decoded by jobs, for the tests */
	_Alignas(64) struct xt_reader *r;
	struct xq *q;                /* [r->nr_st] */
	struct vms_ahead_ops ops;
	bool skip;                   /* skip_unread's setting, under the lock */
	uint32_t per_block, dcap;
	uint32_t since_kick;         /* blocks the reading thread took since it woke the workers */
	uint32_t kick_every;
	uint64_t decoded_alone;        /* by the reading thread outside jobs (first, replays) */
};

static struct xt_pool *client_pool(struct vms_pool_client *c)
{
	return (struct xt_pool *)((char *)c - offsetof(struct xt_pool, pc));
}

/* Under the lock: b is to hold the stream's next events, skipped as set now. */
static void prepare(void *ctx, uint32_t stream, void *block)
{
	struct xt_pool *p = ctx;
	struct xq_block *b = block;
	b->stream = stream;
	b->skip = p->skip;
	b->d = (struct xq_delta *)((char *)b->e + (size_t)p->per_block * sizeof b->e[0]);
	b->names = (char (*)[24])(b->d + p->dcap);
}

static bool block_last(const void *b)
{
	return ((const struct xq_block *)b)->status != 1;
}

static int pool_claim(struct vms_pool_client *pc, void **job)
{
	struct xt_pool *p = client_pool(pc);
	uint32_t stream;
	return vms_ahead_claim(&p->q[0].aq, sizeof p->q[0], p->r->nr_st, &p->rr, &p->ops, &stream,
			       job);
}

/* A name of the stream's table copied into the block (the decoder overwrites the table)
 * whole, 24 bytes, as the table's entries are; a name that is not the table's (a string
 * constant: "") is kept as it is */
static const char *keep_name(const struct xt_stream *s, char dst[24], const char *src)
{
	const char *lo = (const char *)s, *hi = lo + sizeof *s;
	if (src < lo || src >= hi || (size_t)(hi - src) < 24)
		return src;
	memcpy(dst, src, 24);
	dst[23] = '\0';
	return dst;
}

/* The order fill_block looks at the counts in: the scheduler's records, most of what is
 * left out, first, so that the look stops after one or two types (all of them were looked
 * at after every event: a third of fill_block's instructions) */
_Static_assert(VMS_XEN_T_COUNT == 18, "delta_order names every type once");
static const uint8_t delta_order[VMS_XEN_T_COUNT] = {
	VMS_XEN_T_SCHED, VMS_XEN_T_SCHED_SWITCH, VMS_XEN_T_HVM, VMS_XEN_T_PV, VMS_XEN_T_SHADOW,
	VMS_XEN_T_MEM, VMS_XEN_T_HW, VMS_XEN_T_GEN, VMS_XEN_T_DOM0OP, VMS_XEN_T_GUEST,
	VMS_XEN_T_UNKNOWN, VMS_XEN_T_LOST_RECORDS, VMS_XEN_T_WRAP_BUFFER, VMS_XEN_T_LOST_END,
	VMS_XEN_T_RUNSTATE_CHANGE, VMS_XEN_T_RUNSTATE_CONTINUE, VMS_XEN_T_VMENTRY,
	VMS_XEN_T_VMEXIT,
};

/* Without the lock, by the job's holder: the stream's next events into b. */
static void fill_block(void *ctx, void *block)
{
	struct xt_pool *p = ctx;
	struct xq_block *b = block;
	struct xt_reader *r = p->r;
	struct xt_stream *s = &r->st[b->stream];
	uint64_t cnt[VMS_XEN_T_COUNT] = { 0 }, total = 0, flushed = 0;
	s->skc = b->skip ? cnt : NULL;
	s->skt = &total;
	uint32_t i = 0, nd = 0, nn = 0;
	int st = 1;
	/* room for the deltas of one more event is left before each decode */
	while (i < p->per_block && nd + XQ_DELTAS_PER_EVENT <= p->dcap) {
		struct xq_ent *e = &b->e[i];
		st = xt_decode_next(r, s, b->stream, &e->ev);
		/* (each record left out adds 1 to total and to one type's count) */
		for (uint32_t k = 0; total != flushed && k < VMS_XEN_T_COUNT; k++) {
			uint32_t t = delta_order[k];
			if (cnt[t]) {
				b->d[nd++] = (struct xq_delta){ .ent = i, .type = t, .n = cnt[t] };
				flushed += cnt[t];
				cnt[t] = 0;
			}
		}
		flushed = total; /* (the same, unless the counts were not kept as said) */
		if (st != 1)
			break;
		e->at = s->at;
		for (int k = 0; k < 2; k++)
			if (e->ev.s[k])
				e->ev.s[k] = keep_name(s, b->names[nn++], e->ev.s[k]);
		i++;
	}
	s->skc = s->skt = NULL;
	b->n = i;
	b->nd = nd;
	b->status = st;
	atomic_fetch_add_explicit(&p->decoded_pool, i, memory_order_relaxed);
}

static void pool_run(struct vms_pool_client *pc, void *job, unsigned worker)
{
	(void)worker; /* (a stream's decoder is all a job needs: no per-worker state) */
	fill_block(client_pool(pc), job);
}

/* Under the lock: the job's block joins its stream's queue. */
static void pool_finish(struct vms_pool_client *pc, void *job)
{
	struct xt_pool *p = client_pool(pc);
	struct xq_block *b = job;
	vms_ahead_push(&p->q[b->stream].aq, &p->ops, b);
}

static void free_pool(struct xt_pool *p, uint32_t nq)
{
	for (uint32_t k = 0; p->q && k < nq; k++)
		vms_ahead_free(&p->q[k].aq);
	free(p->q);
	free(p);
}

void xt_pool_start(struct xt_reader *r)
{
	/* VMS_XENTRACE_POOL_MIN=BYTES: the tests put small (and hostile) files through the pool */
	const char *env = getenv("VMS_XENTRACE_POOL_MIN");
	/* The rule: with the threads taken from the online CPUs (no --threads N) a xentrace
	 * file is read alone, whatever its size; with --threads N > 1, from POOL_MIN_BYTES.
	 * A returned event costs ~320 instructions to decode (the ~4 records skip_unread hops
	 * over for it included), ~50 ns; handing it over costs the reading thread ~80 more
	 * instructions and the event's two cache lines from the worker's core, the worker ~90
	 * and the wake-ups: the reading thread (the merge, the analyses, the open's walk) keeps
	 * four fifths of the work, and what it gives away it mostly pays back. Report on 10
	 * copies of xen/xentrace.bin (39 MB, 80 CPUs) at load 0.4 on the 2 cores, 21 runs
	 * alternating, with the pool's lines apart and the wake-ups outside the lock: CPU
	 * median 135.1 ms (least 86.5) with a worker against 104.7 (61.2) alone, wall 103.2
	 * (64.0) against 105.1 (61.5): a third more CPU for no wall time (docs/DESIGN.md) */
	uint64_t min = env && *env ? strtoull(env, NULL, 10)
		       : vms_pool_threads_given() ? POOL_MIN_BYTES : UINT64_MAX;
	if (r->valid_end < min || r->nr_st == 0 || vms_pool_threads() < 2)
		return;
	uint64_t per_ent = sizeof(struct xq_ent) + sizeof(struct xq_delta) * 2 + 2 * 24;
	uint64_t per = XQ_MEM / ((uint64_t)r->nr_st * (VMS_AHEAD_DEPTH + 1) * per_ent);
	if (per < XQ_MIN_EVENTS)
		return; /* thousands of CPUs: read alone, in the memory of one */
	/* (aligned as their types say: the lines the workers write apart from the reading
	 * thread's; sizeof is a multiple of the alignment) */
	struct xt_pool *p = aligned_alloc(_Alignof(struct xt_pool), sizeof *p);
	if (!p)
		return;
	memset(p, 0, sizeof *p);
	size_t qbytes = (size_t)r->nr_st * sizeof *p->q;
	if (!(p->q = aligned_alloc(_Alignof(struct xq), qbytes))) {
		free(p);
		return;
	}
	memset(p->q, 0, qbytes);
	p->r = r;
	p->per_block = per < XQ_MAX_EVENTS ? (uint32_t)per : XQ_MAX_EVENTS;
	p->kick_every = r->nr_st / 4 ? r->nr_st / 4 : 1;
	/* two deltas an event on average (a skipped run is mostly scheduler records: one or
	 * two types), and always room for one event's worst */
	p->dcap = 2 * p->per_block + XQ_DELTAS_PER_EVENT;
	atomic_init(&p->decoded_pool, 0);
	size_t ents = (size_t)p->per_block * sizeof(struct xq_ent);
	p->ops = (struct vms_ahead_ops){
		.block_bytes = sizeof(struct xq_block) + ents + (size_t)p->dcap * sizeof(struct xq_delta)
			       + 2 * (size_t)p->per_block * 24,
		.prepare = prepare, .fill = fill_block, .last = block_last, .ctx = p };
	p->pc.claim = pool_claim;
	p->pc.run = pool_run;
	p->pc.finish = pool_finish;
	/* set before the workers can run a job: they read it in next_block */
	r->pool = p;
	if (vms_pool_join(&p->pc) == 0) {
		r->pool = NULL; /* no worker: alone */
		free_pool(p, r->nr_st);
	}
}

void xt_pool_stop(struct xt_reader *r)
{
	struct xt_pool *p = r->pool;
	if (!p)
		return;
	vms_pool_leave(&p->pc);
	r->pool = NULL;
	free_pool(p, r->nr_st);
}

/* Under the lock, no job of the file running: q empty, its stream at its start. */
static void reset_queue(struct xt_reader *r, uint32_t k)
{
	struct xq *q = &r->pool->q[k];
	vms_ahead_reset(&q->aq);
	q->blk = NULL;
	q->cur_i = q->cur_d = 0;
	q->taken = 0;
	q->primed = q->stale = false;
	q->shown = (struct xt_at){ 0 };
	q->sought = false;
	xt_stream_reset(&r->st[k]);
}

void xt_pool_rewind(struct xt_reader *r)
{
	struct xt_pool *p = r->pool;
	vms_pool_lock();
	vms_pool_quiesce(&p->pc);
	if (r->dropped) {
		madvise((void *)r->map, r->dropped, MADV_DONTNEED);
		r->dropped = 0;
	}
	for (uint32_t k = 0; k < r->nr_st; k++)
		reset_queue(r, k);
	vms_pool_resume(&p->pc);
	vms_pool_unlock();
}

/* Has q events decoded that the reader has not taken (or counts not yet added)? */
static bool ahead(const struct xq *q)
{
	const struct xq_block *cur = q->blk;
	return vms_ahead_ahead(&q->aq, cur && (q->cur_i < cur->n || q->cur_d < cur->nd));
}

void xt_pool_set_skip(struct xt_reader *r, bool on)
{
	struct xt_pool *p = r->pool;
	vms_pool_lock();
	vms_pool_quiesce(&p->pc);
	if (on != p->skip) {
		for (uint32_t k = 0; k < r->nr_st; k++) {
			struct xq *q = &p->q[k];
			if (ahead(q)) {
				q->aq.stale = q->stale = true;
				q->replay_skip = p->skip;
			}
		}
		p->skip = on;
	}
	vms_pool_resume(&p->pc);
	vms_pool_unlock();
}

uint64_t xt_pool_shown_off(const struct xt_reader *r, uint32_t stream)
{
	return r->pool->q[stream].shown.off;
}

const struct xt_at *xt_pool_shown(const struct xt_reader *r, uint32_t stream)
{
	return &r->pool->q[stream].shown;
}

/* The reading thread, on a stream with no job: one event decoded here, skipping as set now
 * (counted straight into the session's counts). */
static int decode_alone(struct xt_reader *r, uint32_t stream, struct vms_event *ev)
{
	struct xt_stream *s = &r->st[stream];
	s->skc = r->skip_counts;
	s->skt = r->skip_total;
	int st = xt_decode_next(r, s, stream, ev);
	s->skc = s->skt = NULL;
	if (st == 1) {
		r->pool->decoded_alone++;
		r->pool->q[stream].shown = s->at;
	}
	return st;
}

/* The reading thread, a stream stale after set_skip: decoded again from its start (or from
 * where it was sought) to the event after the last one taken under the old setting (its
 * counts were added when taken: they go to a scratch array), as reading alone would have
 * left it. */
static void replay(struct xt_reader *r, uint32_t stream)
{
	struct xt_pool *p = r->pool;
	struct xq *q = &p->q[stream];
	struct xt_stream *s = &r->st[stream];
	uint64_t taken = q->taken;
	struct xt_at shown = q->shown;
	bool old = q->replay_skip, sought = q->sought;
	struct vms_stream_pos from = q->from;
	vms_pool_lock();
	reset_queue(r, stream);
	vms_pool_unlock();
	struct vms_error scratch_err = { 0 };
	if (sought && xt_position(r, stream, &from, "", &scratch_err) < 0)
		taken = 0; /* (it was positioned there before: cannot happen) */
	uint64_t scratch[VMS_XEN_T_COUNT], total = 0;
	struct vms_event ev;
	for (uint64_t i = 0; i < taken; i++) {
		s->skc = old ? scratch : NULL;
		s->skt = &total;
		int st = xt_decode_next(r, s, stream, &ev);
		if (st != 1)
			break; /* (it was read before: cannot happen) */
		p->decoded_alone++;
	}
	s->skc = s->skt = NULL;
	vms_pool_lock();
	q->taken = taken;
	q->shown = shown;
	q->sought = sought;
	q->from = from;
	q->primed = taken > 0;
	q->aq.started = taken > 0;
	vms_pool_unlock();
}

/* The reading thread: give the mapping back behind the records it has taken (the workers
 * are ahead of them; what they touch again comes back from the page cache). */
static void give_back_taken(struct xt_reader *r)
{
	uint64_t low = UINT64_MAX;
	for (uint32_t k = 0; k < r->nr_st; k++) {
		const struct xq *q = &r->pool->q[k];
		const struct xq_block *cur = q->blk;
		if (cur && cur->status != 1 && q->cur_i >= cur->n)
			continue; /* at its end */
		uint64_t at = q->shown.off ? q->shown.off : r->st[k].first_blk;
		if (at < low)
			low = at;
	}
	xt_give_back(r, low == UINT64_MAX ? r->valid_end : low);
}

/* The reading thread: the deltas of cur before event `ent` added to the session's counts. */
static void add_deltas(struct xt_reader *r, struct xq *q, uint32_t ent)
{
	const struct xq_block *b = q->blk;
	while (q->cur_d < b->nd && b->d[q->cur_d].ent <= ent) {
		const struct xq_delta *d = &b->d[q->cur_d++];
		if (r->skip_counts) {
			r->skip_counts[d->type] += d->n;
			*r->skip_total += d->n;
		}
	}
}

int xt_pool_next(struct xt_reader *r, uint32_t stream, struct vms_event *ev)
{
	struct xt_pool *p = r->pool;
	struct xq *q = &p->q[stream];
	if (q->stale)
		replay(r, stream);
	if (!q->primed) {
		/* the merge's first look at the stream, before the session sets skip_unread:
		 * decoded here, the workers not yet started on it (nothing is decoded ahead) */
		int st = decode_alone(r, stream, ev);
		if (st == 1) {
			q->primed = true;
			q->taken++;
		}
		return st;
	}
	const struct xq_block *cur = q->blk;
	if (!cur || q->cur_i >= cur->n) {
		if (cur && cur->status != 1) {
			add_deltas(r, q, cur->n); /* (what was left out before the end, once) */
			return 0; /* the end, again (as reading alone repeats it) */
		}
		vms_pool_lock();
		bool got = vms_ahead_next(&q->aq, &p->ops, stream);
		q->blk = q->aq.cur;
		/* the workers are woken every quarter round of the streams, to decode a few blocks
		 * each time, or when this stream has XQ_URGENT blocks left ahead: a block is a few
		 * microseconds of decoding, less than a worker's wake-up costs (woken at each
		 * block taken, report without skip_unread on 8 copies of xen/xentrace.bin took
		 * 1.8 x the CPU time of --threads 1; so, 1.5 x). With one block left the reading
		 * thread decoded 718-1,076 of the 3,000 blocks of report on 10 copies itself (the
		 * worker woken too late, at load 6-7), with two 205-279 */
		bool kick = got && !q->aq.ended &&
			    (q->aq.nready <= XQ_URGENT || ++p->since_kick >= p->kick_every);
		if (kick)
			p->since_kick = 0;
		q->cur_i = q->cur_d = 0;
		if (!got) {
			/* out of memory for a block: decoded here, one event, with the stream held
			 * (busy) so that no worker claims it meanwhile */
			q->aq.busy = true;
			vms_pool_unlock();
			int st = decode_alone(r, stream, ev);
			vms_pool_lock();
			q->aq.busy = false;
			if (st != 1)
				q->aq.ended = true;
			vms_pool_unlock();
			q->taken += st == 1;
			return st;
		}
		vms_pool_unlock();
		/* (with the lock let go: a worker woken under it found it held and slept on it
		 * again, the reading thread then waking it a second time as it let go: strace -f
		 * of report on the 10-copy file, 438 waits of the worker on the lock for 222
		 * wake-ups) */
		if (kick)
			vms_pool_kick();
		give_back_taken(r);
		cur = q->blk;
		if (cur->n == 0)
			return xt_pool_next(r, stream, ev); /* the end right away */
	}
	add_deltas(r, q, q->cur_i);
	const struct xq_ent *e = &cur->e[q->cur_i++];
	*ev = e->ev;
	q->shown = e->at;
	q->taken++;
	return 1;
}

/* The stream's jobs stopped (none runs while the file's are quiesced) and its queue
 * emptied, so that nothing decoded from where it was is handed out; positioned by the
 * reading thread with the stream not started and not primed: its next event (the one
 * sought) is decoded by the reading thread, and the workers go on from the one after. */
int xt_pool_seek(struct xt_reader *r, uint32_t stream, const struct vms_stream_pos *pos,
		 const char *path, struct vms_error *err)
{
	struct xt_pool *p = r->pool;
	struct xq *q = &p->q[stream];
	vms_pool_lock();
	vms_pool_quiesce(&p->pc);
	reset_queue(r, stream);
	vms_pool_resume(&p->pc);
	vms_pool_unlock();
	int rc = xt_position(r, stream, pos, path, err);
	if (rc == 0) {
		q->shown = r->st[stream].at;
		q->sought = true;
		q->from = *pos;
	}
	return rc;
}

/* For the tests: the events decoded since open, and whether the pool decodes them. */
void vms_xentrace_counters(const struct vms_source *src, uint64_t *decoded, bool *pooled);
void vms_xentrace_counters(const struct vms_source *src, uint64_t *decoded, bool *pooled)
{
	const struct xt_reader *r = src->impl;
	const struct xt_pool *p = r->pool;
	*decoded = p ? p->decoded_alone + atomic_load(&p->decoded_pool) : 0;
	*pooled = p != NULL;
}
