/* CTF: the streams decoded ahead by the readers' worker pool (lib/core/pool.c).
 *
 * An LTTng trace is a stream file per CPU and channel (and per user-space buffer), each
 * decoded on its own: the workers decode every stream's next events while the reading
 * thread merges and the analyses run. A job is one stream's next block (core/ahead.c's queue) of up to
 * `per_block` events (their strings and where each lies, for format_event), decoded with
 * the worker's own registers into a free block of the stream's queue; a stream has at most
 * VMS_AHEAD_DEPTH blocks decoded ahead and one being read, so memory is bounded by the queues
 * (per_block is chosen at open so that all of them stay under CQ_MEM), whatever the length
 * of the trace. One job per stream at a time, so each event is decoded once, in order, by
 * the decoder the reading thread runs when alone (ctf_decode_next): the events, their
 * flags and errors are the same. The reading thread, when the block it needs is neither
 * decoded nor claimed, claims and decodes it itself; when a worker is decoding it, it waits.
 *
 * Per event the reading thread only copies the event out (ctf_pool_next): the lock, the
 * count of events taken (for a replay) and the position of the last event handed out (for
 * tell and format_event) are done once per block (next_block), or when asked for
 * (ctf_pool_last: a block keeps each event's start, and its packets' part once per packet,
 * struct cq_run; a copy of the whole position with each event, and out of the block with
 * it, cost ~45 of ~566 instructions per event, callgrind on bench_ctf_read -m).
 *
 * The filter (set_wanted) decides what is decoded: it changes only with no job running,
 * and a stream that has events decoded ahead under the old one is read again from its
 * start up to where the reader was, under the old filter, when next asked for (the
 * session calls set_wanted at the start and the end of a pass, where no stream has any). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ctf_source.h"

#define CQ_KICK 2                /* wake the workers when a stream has this few ahead */
#define CQ_MAX_EVENTS 256        /* events per block: a job of ~10-20 us */
#define CQ_MIN_EVENTS 32         /* below this the lock and wake-ups cost more than a worker */
#define CQ_MEM (32u << 20)       /* all blocks of a source together */
/* Below this a trace reads in tens of ms and the pool costs more than it gives (bench_lttng,
 * report on scp_src, 2.4 MB: 0.014 s alone, 0.017 s with a worker). */
#define POOL_MIN_BYTES (8u << 20)

/* The packet of a run of a block's events: those from `first` to the next run's first lie
 * in it, event `first` at index k0. Runs start at different events, the first at event 0,
 * so a block has at most as many as events (per_block, the room made for them). */
struct cq_run {
	uint32_t first;
	const struct sclass *sc;
	uint64_t pkt_off, end, k0;
	struct ctf_pkt_state pk;
};

/* The events apart from the rest: what the reading thread reads of each, from the worker's
 * core, is its 88 bytes one after the other; their starts (tell, format_event), strings (few
 * events have any) and packets (a few per block) follow. */
struct cq_block {
	uint32_t stream;
	uint32_t n;                   /* events decoded */
	uint32_t nrun;                /* runs: >= 1 when n > 0 */
	int status;                   /* after them: 1 more to come, 0 the end, <0 an error */
	struct ctf_at *at;            /* event i's start; these four per_block, after ev[] */
	struct cq_run *run;
	char (*sb)[2][64];            /* event i's strings (its ev's point to them) */
	struct vms_event ev[];
};

/* what a block holds per event it has room for */
#define CQ_SLOT (sizeof(struct vms_event) + sizeof(struct ctf_at) + sizeof(struct cq_run) + \
		 sizeof(char[2][64]))

struct ctf_pool {
	struct vms_pool_client pc;
	struct ctf *c;
	struct plan_rf *rf;           /* one per worker */
	unsigned nr_rf;
	uint32_t rr;                  /* the stream the workers look at first */
	uint32_t per_block;
	struct vms_ahead_ops ops;
};

static struct ctf_pool *client_pool(struct vms_pool_client *c)
{
	return (struct ctf_pool *)((char *)c - offsetof(struct ctf_pool, pc));
}

/* Under the lock: b is to hold the stream's next events. */
static void prepare(void *ctx, uint32_t stream, void *block)
{
	const struct ctf_pool *p = ctx;
	struct cq_block *b = block;
	b->stream = stream;
	b->at = (struct ctf_at *)(void *)&b->ev[p->per_block];
	b->run = (struct cq_run *)(void *)&b->at[p->per_block];
	b->sb = (char (*)[2][64])(void *)&b->run[p->per_block];
}

static bool block_last(const void *b)
{
	return ((const struct cq_block *)b)->status != 1;
}

static int pool_claim(struct vms_pool_client *pc, void **job)
{
	struct ctf_pool *p = client_pool(pc);
	struct ctf *c = p->c;
	uint32_t stream;
	return vms_ahead_claim(&c->st[0].q.aq, sizeof c->st[0], c->n, &p->rr, &p->ops, &stream,
			       job);
}

/* From event i of b on, the events lie in s's current packet, event i at index k0. */
static void add_run(struct cq_block *b, const struct cstream *s, uint32_t i, uint64_t k0)
{
	/* a run with no event (the one fill_block starts with, when its first event opens a
	 * packet) is replaced: so runs start at different events, at most one per event */
	if (b->nrun && b->run[b->nrun - 1].first == i)
		b->nrun--;
	b->run[b->nrun++] = (struct cq_run){ .first = i, .sc = s->sc, .pkt_off = s->pkt_off,
					     .end = s->end, .k0 = k0, .pk = s->pk };
}

/* Without the lock, by the job's holder: the stream's next events into b. */
static void fill_block(struct ctf_pool *p, struct cq_block *b, struct plan_rf *rf)
{
	struct ctf *c = p->c;
	struct cstream *s = &c->st[b->stream];
	uint32_t i = 0;
	int r = 1;
	b->nrun = 0;
	/* the packet the stream is in holds the events until one opens another (after a seek,
	 * or a block that ended inside a packet, the first ones) */
	add_run(b, s, 0, s->pkt_k);
	while (i < p->per_block) {
		r = ctf_decode_next(s, b->stream, rf, &c->flt, &s->q.err, &b->ev[i], b->sb[i],
				    &b->at[i]);
		if (r != 1) {
			if (r != CTF_NEW_PACKET)
				break;
			add_run(b, s, i, 0);
		}
		i++;
	}
	b->n = i;
	b->status = r > 0 ? 1 : r;
	atomic_fetch_add_explicit(&c->decoded_pool, i, memory_order_relaxed);
}

static void pool_run(struct vms_pool_client *pc, void *job, unsigned worker)
{
	struct ctf_pool *p = client_pool(pc);
	fill_block(p, job, &p->rf[worker]);
}

/* The reading thread's fill, with its own registers. */
static void fill_here(void *ctx, void *b)
{
	struct ctf_pool *p = ctx;
	fill_block(p, b, &p->c->rf);
}

/* Under the lock: the job's block joins its stream's queue. */
static void pool_finish(struct vms_pool_client *pc, void *job)
{
	struct ctf_pool *p = client_pool(pc);
	struct cq_block *b = job;
	vms_ahead_push(&p->c->st[b->stream].q.aq, &p->ops, b);
}

static void free_queue(struct ctf_queue *q)
{
	vms_ahead_free(&q->aq);
	memset(q, 0, sizeof *q);
}

void ctf_pool_start(struct ctf *c)
{
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < c->n; i++)
		bytes += c->st[i].valid_end;
	/* VMS_CTF_POOL_MIN=BYTES: the tests put small (hostile) traces through the pool */
	const char *env = getenv("VMS_CTF_POOL_MIN");
	uint64_t min = env && *env ? strtoull(env, NULL, 10) : POOL_MIN_BYTES;
	if (bytes < min || c->n == 0 || vms_pool_threads() < 2)
		return;
	uint64_t per = CQ_MEM / ((uint64_t)c->n * (VMS_AHEAD_DEPTH + 1) * CQ_SLOT);
	if (per < CQ_MIN_EVENTS)
		return; /* thousands of streams: read alone, in the memory of one */
	struct ctf_pool *p = calloc(1, sizeof *p);
	unsigned most = vms_pool_threads() - 1;
	if (!p || !(p->rf = calloc(most, sizeof *p->rf)))
		goto alone;
	p->nr_rf = most;
	for (unsigned i = 0; i < most; i++)
		if (ctf_rf_init(&p->rf[i], c->rf.n))
			goto alone;
	p->c = c;
	p->per_block = per < CQ_MAX_EVENTS ? (uint32_t)per : CQ_MAX_EVENTS;
	p->ops = (struct vms_ahead_ops){
		.block_bytes = sizeof(struct cq_block) + p->per_block * CQ_SLOT,
		.prepare = prepare, .fill = fill_here, .last = block_last, .ctx = p };
	p->pc.claim = pool_claim;
	p->pc.run = pool_run;
	p->pc.finish = pool_finish;
	unsigned n = vms_pool_join(&p->pc);
	if (n == 0 || n > most) {
		/* no worker, or a pool started earlier with more workers than registers made */
		vms_pool_leave(&p->pc);
		goto alone;
	}
	c->pool = p;
	return;
alone:
	for (uint32_t i = 0; i < c->n; i++)
		free_queue(&c->st[i].q);
	if (p) {
		for (unsigned i = 0; i < p->nr_rf; i++)
			ctf_rf_free(&p->rf[i]);
		free(p->rf);
	}
	free(p);
}

void ctf_pool_stop(struct ctf *c)
{
	struct ctf_pool *p = c->pool;
	if (!p)
		return;
	vms_pool_leave(&p->pc);
	for (uint32_t i = 0; i < c->n; i++)
		free_queue(&c->st[i].q);
	for (unsigned i = 0; i < p->nr_rf; i++)
		ctf_rf_free(&p->rf[i]);
	free(p->rf);
	free(p);
	c->pool = NULL;
}

/* Under the lock, no job of the source running: q empty, its stream at its start. */
static void reset_queue(struct cstream *s)
{
	struct ctf_queue *q = &s->q;
	vms_ahead_reset(&q->aq);
	q->cur_i = q->cur_n = 0;
	vms_error_clear(&q->err);
	ctf_reset_stream(s);
}

void ctf_pool_rewind(struct ctf *c)
{
	struct ctf_pool *p = c->pool;
	vms_pool_lock();
	vms_pool_quiesce(&p->pc);
	for (uint32_t i = 0; i < c->n; i++) {
		reset_queue(&c->st[i]);
		c->st[i].q.sought = false;
		c->st[i].given_back = 0; /* released pages come back from the file on access */
	}
	vms_pool_resume(&p->pc);
	vms_pool_unlock();
}

/* Has q events decoded that the reader has not taken (or a decoder past them)? */
static bool ahead(const struct ctf_queue *q)
{
	const struct cq_block *cur = q->aq.cur;
	return vms_ahead_ahead(&q->aq, cur && q->cur_i < cur->n);
}

void ctf_pool_set_wanted(struct ctf *c, const bool *wanted)
{
	struct ctf_pool *p = c->pool;
	struct ctf_filter nf = {.on = wanted != NULL};
	if (wanted)
		memcpy(nf.wanted, wanted, sizeof nf.wanted);
	vms_pool_lock();
	vms_pool_quiesce(&p->pc);
	if (memcmp(&nf, &c->flt, sizeof nf) != 0) {
		for (uint32_t i = 0; i < c->n; i++) {
			struct ctf_queue *q = &c->st[i].q;
			if (ahead(q)) {
				/* a worker may have read past the reader under the old filter: its
				 * decoding of the events after them may differ (fields, the tid a
				 * sched_switch gives) */
				q->aq.stale = true;
				q->replay = c->flt;
				q->cur_n = 0; /* the reader's next() replays first */
			}
		}
		c->flt = nf;
	}
	vms_pool_resume(&p->pc);
	vms_pool_unlock();
}

/* The reading thread, a stream stale after set_wanted: decoded again from its start to the
 * event after the last one taken, as reading alone would have left it. */
static int replay(struct vms_source *src, struct ctf *c, uint32_t stream)
{
	struct cstream *s = &c->st[stream];
	struct ctf_queue *q = &s->q;
	uint64_t taken = q->aq.taken + q->cur_i;
	struct ctf_filter old = q->replay;
	ctf_pool_last(s); /* kept: its block goes, and the stream may end before another */
	vms_pool_lock();
	reset_queue(s);
	vms_pool_unlock();
	if (q->sought) {
		/* the events taken count from the position sought */
		int r = ctf_position(c, stream, &q->from, &old, &src->err);
		if (r < 0)
			return r;
	}
	struct vms_event ev;
	struct ctf_at at;
	for (uint64_t i = 0; i < taken; i++) {
		int r = ctf_decode_next(s, stream, &c->rf, &old, &src->err, &ev, s->sbuf, &at);
		if (r <= 0)
			return r; /* it was read before: cannot happen unless the file changed */
		c->decoded_alone++;
	}
	vms_pool_lock();
	q->aq.taken = taken;
	q->aq.started = true;
	vms_pool_unlock();
	return 1;
}

/* The position of event i of b (b->nrun >= 1: i < b->n). */
static void pos_of(const struct cq_block *b, uint32_t i, struct ctf_pos *at)
{
	uint32_t lo = 0, hi = b->nrun; /* the last run whose first <= i: run 0's first is 0 */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (b->run[mid].first <= i)
			lo = mid;
		else
			hi = mid;
	}
	const struct cq_run *r = &b->run[lo];
	*at = (struct ctf_pos){ .sc = r->sc, .pkt_off = r->pkt_off, .end = r->end,
				.k = r->k0 + (i - r->first), .at = b->at[i], .pk = r->pk };
}

const struct ctf_pos *ctf_pool_last(struct cstream *s)
{
	const struct cq_block *cur = s->q.aq.cur;
	if (cur && s->q.cur_i > 0)
		pos_of(cur, s->q.cur_i - 1, &s->last);
	/* else none handed out of cur: the last one was of the block before, kept */
	return &s->last;
}

/* The reading thread, aq.cur handed out (or none, or a replay due): its end or error again,
 * else the next block's first event. What was taken of the block given back is counted
 * here (aq.taken: the events of the blocks given back since the rewind, cur_i those of
 * cur) and its last event's position kept, once per block. */
static __attribute__((noinline)) int next_block(struct vms_source *src, struct ctf *c,
						uint32_t stream, struct vms_event *ev)
{
	struct cstream *s = &c->st[stream];
	struct ctf_queue *q = &s->q;
	if (q->aq.stale) {
		int r = replay(src, c, stream);
		if (r <= 0) {
			s->have_last = false;
			return r;
		}
	}
	const struct cq_block *cur = q->aq.cur;
	if (cur && cur->status != 1) {
		/* the end, or the error, again (as reading alone repeats it) */
		s->have_last = false;
		if (cur->status == 0)
			return 0;
		return vms_error_set(&src->err, q->err.status ? q->err.status : VMS_ERR_FORMAT,
				     "%s", q->err.msg);
	}
	if (cur) {
		ctf_pool_last(s); /* the next block may hold none (the end) */
		q->aq.taken += q->cur_i;
	}
	q->cur_i = q->cur_n = 0;
	vms_pool_lock();
	bool got = vms_ahead_next(&q->aq, &c->pool->ops, stream);
	if (got && q->aq.nready <= CQ_KICK && !q->aq.ended)
		vms_pool_kick(); /* a few blocks per wake-up, not one */
	if (!got) {
		/* no job on the stream: its cursor is still */
		uint64_t at = s->next_pkt;
		vms_pool_unlock();
		s->have_last = false;
		return vms_error_nomem_at(&src->err, s->path, at);
	}
	vms_pool_unlock();
	cur = q->aq.cur;
	if (cur->n == 0)
		return next_block(src, c, stream, ev); /* an end or error right away */
	q->cur_n = cur->n;
	q->cur_i = 1;
	*ev = cur->ev[0];
	s->have_last = true; /* and so while cur_i < cur_n (reset_queue, set_wanted zero it) */
	return 1;
}

int ctf_pool_next(struct vms_source *src, struct ctf *c, uint32_t stream, struct vms_event *ev)
{
	struct ctf_queue *q = &c->st[stream].q;
	if (q->cur_i < q->cur_n) {
		const struct cq_block *cur = q->aq.cur;
		*ev = cur->ev[q->cur_i++];
		return 1;
	}
	return next_block(src, c, stream, ev);
}

/* The stream's jobs stopped (none runs while the source is quiesced) and its queue emptied,
 * so that nothing decoded from where it was is handed out; positioned by the reading thread
 * alone with the stream not started (no worker claims it until next() asks for a block). */
int ctf_pool_seek(struct vms_source *src, struct ctf *c, uint32_t stream,
		  const struct vms_stream_pos *pos)
{
	struct ctf_pool *p = c->pool;
	struct cstream *s = &c->st[stream];
	vms_pool_lock();
	vms_pool_quiesce(&p->pc);
	reset_queue(s);
	s->q.sought = false;
	vms_pool_resume(&p->pc);
	vms_pool_unlock();
	int r = ctf_position(c, stream, pos, &c->flt, &src->err);
	if (r == 0) {
		s->q.sought = true;
		s->q.from = *pos;
	}
	return r;
}
