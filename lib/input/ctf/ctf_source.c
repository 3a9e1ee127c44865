/* The CTF 1.8 source: one machine from a CTF trace directory (metadata + stream files) or
 * an LTTng session directory holding several (kernel/, ust/uid/N/64-bit/, ...), read with
 * plans compiled from each trace's metadata (plan.h). One vms stream per stream file.
 *
 * Files are mapped, not copied: a packet costs no heap whatever size it claims, memory is
 * bounded by the files' real sizes, and pages 2 MiB behind each stream's cursor are given
 * back (they stay in the page cache), so the resident set does not grow with the trace.
 * At open every packet header and context is decoded once (sizes within the file, magic,
 * UUID, stream class), which gives the CPUs and the drop totals and refuses damage before
 * any analysis. A stream's events are returned in file order; a timestamp below its
 * predecessor's is flagged (VMS_EVF_TIME_BACKWARDS), never refused: the merge reports it.
 * A packet's events_discarded growth marks its first event VMS_EVF_LOST_BEFORE. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/grow.h"
#include "ctf_kinds.h"
#include "ctf_source.h"
#include "plan.h"
#include "tsdl_lex.h"
#include "tsdl.h"
#include "vmscope/source.h"

#define CTF_MAGIC 0xC1FC1FC1u
#define MAX_METADATA (16u << 20)
#define MAX_STREAMS 65536
#define MAX_TRACES 256
#define OP_BUDGET (4u << 20)       /* plan operations of all classes of a machine */
#define GIVE_BACK (2u << 20)       /* bytes kept mapped behind a stream's cursor */
#define NOREG PLAN_NOREG

/* LTTng's large event header, recognised in its lean plan: id (uint16, 65535: extended)
 * then a 32-bit timestamp, or a 32-bit id and a 64-bit timestamp; this machine's byte
 * order. Its registers are still written (a length could name them). */
struct lttng_header {
	bool large;
	uint32_t r_tag, r_ts32, r_id32, r_ts64;
};

/* A stream class whose lean event header is one fixed run after one alignment, holding its
 * one id and its one clock field (vmstrace's: a 16-bit id and a 64-bit timestamp): read
 * inline, as the plan would (the run's stored registers are written too: a length could
 * name them). */
struct fixed_header {
	bool on;
	uint64_t align;                /* bits, a power of two */
	uint64_t bits;                 /* the run's */
	uint32_t nf;                   /* fields stored: f[0 .. nf) */
	struct plan_fx f[4];
	int8_t id, clk;                /* which of f[] is the id, the clock (-1: none) */
	uint32_t clk_bits;
};

/* An event class whose lean body is one fixed run after one alignment (every LTTng kernel
 * event of fixed size): where the fields fill() reads lie in that run, read straight from
 * the packet, no register written. */
struct direct {
	bool on;
	uint64_t align;                /* bits, a power of two */
	uint64_t bits;                 /* the run's */
	uint8_t nf;                    /* f[0 .. nf) fill ev->f[slot[i]] */
	uint8_t slot[5];
	uint8_t has_s;                 /* bit k: s[k] is in the run */
	bool has_tid, has_cpu;
	struct plan_fx f[5], s[2], tid, cpu;
};

struct sclass {
	uint64_t id;
	struct plan ph, pc, eh, sec;
	struct plan eh_l;              /* lean (plan_lean): what reading events runs */
	struct lttng_header hdr;       /* LTTng's header, read inline when hdr.large */
	struct fixed_header fh;        /* a fixed-layout header, read inline when fh.on */
	uint32_t mark;                 /* first register of the event classes */
	uint32_t r_magic, r_uuid, r_sid, r_ts_begin, r_content, r_packet, r_disc, r_cpu, r_ptid;
	uint32_t r_id[4], n_id, r_clk[4], clk_bits[4], n_clk;
	uint32_t r_tid, r_vtid, r_ecpu;
	/* event id -> class: dense table when the ids are small, else sorted pairs */
	uint32_t *dense;
	uint32_t ndense;
	uint64_t *sorted;              /* id << 24 | class index */
	uint32_t nsorted;
	uint32_t nr_classes;
	uint32_t only;                 /* the class when there is exactly one */
};

struct eclass {
	const char *name;
	uint64_t id;
	uint32_t type;                 /* index into meta.type_names */
	struct plan ec, ef;            /* full: every field in a register (format_event) */
	/* lean, the stream's event context, the event's context and fields as one plan: */
	struct plan body;              /* the fields the map and the tid need */
	struct plan body_skip;         /* only the tid and CPU (a kind that is not wanted) */
	struct direct direct;
	struct plan_reg *regs;         /* descriptors of registers [reg_first, reg_end) */
	uint32_t reg_first, reg_end;
	uint32_t r_tid, r_vtid, r_ecpu;
	struct ctf_evmap map;
};

struct trace {
	char *path;
	struct tsdl_trace t;
	enum ctf_domain dom;
	struct sclass *sc;
	uint32_t nsc;
	struct eclass *ec;
	uint32_t nec;
	int64_t adjust;                /* raw ticks added to its clock: the machine's timebase */
	uint32_t clock;                /* the clock the event headers map to */
	bool strict_end;               /* a cut last packet is damage (vmstrace, closed) */
};

static int fail(struct vms_error *err, const char *path, uint64_t off, const char *what)
{
	return vms_error_set(err, VMS_ERR_FORMAT, "%s: %s at byte offset %llu", path, what,
			     (unsigned long long)off);
}

/* ---- compiling a trace's metadata ---- */

static int by_id(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a >> 24, y = *(const uint64_t *)b >> 24;
	return x < y ? -1 : x > y;
}

static void find_roles(struct sclass *s, const struct plan_regs *r)
{
	s->r_magic = plan_find(r, 0, PLAN_PH, "magic", true);
	s->r_uuid = plan_find(r, 0, PLAN_PH, "uuid", true);
	s->r_sid = plan_find(r, 0, PLAN_PH, "stream_id", true);
	s->r_ts_begin = plan_find(r, 0, PLAN_PC, "timestamp_begin", true);
	s->r_content = plan_find(r, 0, PLAN_PC, "content_size", true);
	s->r_packet = plan_find(r, 0, PLAN_PC, "packet_size", true);
	s->r_disc = plan_find(r, 0, PLAN_PC, "events_discarded", true);
	s->r_cpu = plan_find(r, 0, PLAN_PC, "cpu_id", true);
	s->r_ptid = plan_find(r, 0, PLAN_PC, "vtid", true);
	if (s->r_ptid == NOREG)
		s->r_ptid = plan_find(r, 0, PLAN_PC, "tid", true);
	s->n_id = s->n_clk = 0;
	for (uint32_t i = 0; i < r->n; i++) {
		const struct plan_reg *g = &r->r[i];
		if (g->scope != PLAN_EH || g->in_loop)
			continue;
		if (!strcmp(g->name, "id") && s->n_id < 4)
			s->r_id[s->n_id++] = i;
		if (g->type->kind == TSDL_INT && (g->type->clock || !strcmp(g->name, "timestamp")) &&
		    s->n_clk < 4) {
			s->clk_bits[s->n_clk] = g->type->size;
			s->r_clk[s->n_clk++] = i;
		}
	}
	s->r_tid = plan_find(r, 0, PLAN_SEC, "tid", false);
	s->r_vtid = plan_find(r, 0, PLAN_SEC, "vtid", false);
	s->r_ecpu = plan_find(r, 0, PLAN_SEC, "cpu_id", false);
}

static void keep_reg(bool *keep, uint32_t r)
{
	if (r != NOREG)
		keep[r] = true;
}

/* Is the lean header plan LTTng's large header (struct lttng_header)? */
static bool find_lttng_header(const struct plan *h, struct lttng_header *out)
{
	const struct plan_op *o = h->ops;
	uint32_t i = 1;
	if (h->nops == 0 || o[0].code != PLAN_ALIGN || o[0].a != 8)
		return false;
	if (h->nops != i + 4 || o[i].code != PLAN_FIXED || o[i].n != 16 || o[i].b != 1 ||
	    o[i + 1].code != PLAN_VARIANT || o[i + 1].b != 2 || o[i + 1].end != i + 4)
		return false;
	const struct plan_fx *tag = &h->fx[o[i].a];
	const struct plan_vopt *v = &h->vopts[o[i + 1].n];
	if (tag->how != FX_16 || tag->off != 0 || tag->flags & PLAN_SIGNED ||
	    o[i + 1].a != tag->reg || v[0].lo != 0 || v[0].hi != 65534 || v[0].start != i + 2 ||
	    v[0].end != i + 3 || v[1].lo != 65535 || v[1].hi != 65535 || v[1].start != i + 3 ||
	    v[1].end != i + 4)
		return false;
	const struct plan_op *c = &o[i + 2], *x = &o[i + 3];
	if (c->code != PLAN_FIXED || c->n != 32 || c->b != 1 || x->code != PLAN_FIXED ||
	    x->n != 96 || x->b != 2)
		return false;
	const struct plan_fx *ts32 = &h->fx[c->a], *id32 = &h->fx[x->a], *ts64 = id32 + 1;
	if (ts32->how != FX_32 || ts32->off != 0 || id32->how != FX_32 || id32->off != 0 ||
	    ts64->how != FX_64 || ts64->off != 32)
		return false;
	*out = (struct lttng_header){true, tag->reg, ts32->reg, id32->reg, ts64->reg};
	return true;
}

/* The lean body of event class c: its scopes' full plans as one, leaned with keep[]. */
static int lean_body(const struct sclass *s, const struct eclass *c, const bool *keep,
		     struct plan *out)
{
	const struct plan *parts[3] = {&s->sec, &c->ec, &c->ef};
	struct plan all;
	if (plan_concat(parts, 3, &all))
		return -1;
	int rc = plan_lean(&all, keep, out);
	plan_free(&all);
	return rc;
}

/* The field of register `reg` in the fixed run op (of plan pl), or NULL. */
static const struct plan_fx *run_field(const struct plan *pl, const struct plan_op *op, uint32_t reg)
{
	for (uint32_t k = 0; k < op->minbits; k++)
		if (pl->fx[op->reg + k].reg == reg)
			return &pl->fx[op->reg + k];
	return NULL;
}

/* The first of n registers that is declared (plan_get's order in fill()), or NOREG. */
static uint32_t first_declared(const uint32_t *r, int n)
{
	for (int i = 0; i < n; i++)
		if (r[i] != NOREG)
			return r[i];
	return NOREG;
}

/* c->direct, when c's lean body is [ALIGN] FIXED: every field is then always read, so the
 * first candidate of each map slot is the one fill() takes. */
static void find_direct(const struct sclass *s, struct eclass *c)
{
	const struct plan *b = &c->body;
	struct direct *d = &c->direct;
	memset(d, 0, sizeof *d);
	const struct plan_op *op;
	if (!plan_fixed_layout(b, &d->align, &op))
		return;
	uint32_t i = (uint32_t)(op - b->ops);
	d->bits = op->n;
	const struct plan_fx *f;
	for (int k = 0; k < 5; k++) {
		if (!c->map.nf[k])
			continue;
		if (!(f = run_field(b, op, c->map.f[k][0])) || f->how == FX_BYTES)
			return;
		d->slot[d->nf] = (uint8_t)k;
		d->f[d->nf++] = *f;
	}
	for (int k = 0; k < 2; k++) {
		if (!c->map.ns[k])
			continue;
		if (!(f = run_field(b, op, c->map.s[k][0])) || f->how != FX_BYTES)
			return;
		d->s[k] = *f;
		d->has_s |= (uint8_t)(1u << k);
	}
	const uint32_t tids[4] = {c->r_tid, s->r_tid, c->r_vtid, s->r_vtid};
	const uint32_t cpus[2] = {c->r_ecpu, s->r_ecpu};
	uint32_t r = first_declared(tids, 4);
	if (r != NOREG) {
		if (!(f = run_field(b, op, r)) || f->how == FX_BYTES)
			return;
		d->tid = *f;
		d->has_tid = true;
	}
	if ((r = first_declared(cpus, 2)) != NOREG) {
		if (!(f = run_field(b, op, r)) || f->how == FX_BYTES)
			return;
		d->cpu = *f;
		d->has_cpu = true;
	}
	/* the skipping plan moves as the reading one */
	const struct plan *k = &c->body_skip;
	d->on = k->nops == b->nops && k->ops[i].code == PLAN_FIXED && k->ops[i].n == op->n &&
		(!i || (k->ops[0].code == PLAN_ALIGN && k->ops[0].a == d->align));
}

/* s->fh, when s's lean header is [ALIGN] FIXED with at most one id and one clock among the
 * fields it stores (decode() takes the id and updates the clock as the plan's registers
 * would give them). */
static void find_fixed_header(struct sclass *s)
{
	struct fixed_header *h = &s->fh;
	const struct plan *pl = &s->eh_l;
	const struct plan_op *op;
	memset(h, 0, sizeof *h);
	if (s->n_id > 1 || s->n_clk > 1 || !plan_fixed_layout(pl, &h->align, &op) || op->b > 4)
		return;
	h->bits = op->n;
	h->id = h->clk = -1;
	for (uint32_t k = 0; k < op->b; k++) {
		const struct plan_fx *f = &pl->fx[op->a + k];
		if (f->how == FX_BYTES || (f->flags & PLAN_FLOAT))
			return;
		h->f[h->nf] = *f;
		if (s->n_id && f->reg == s->r_id[0])
			h->id = (int8_t)h->nf;
		if (s->n_clk && f->reg == s->r_clk[0]) {
			h->clk = (int8_t)h->nf;
			h->clk_bits = s->clk_bits[0];
		}
		h->nf++;
	}
	/* an id or clock register outside the run (not stored, or in no run) would be unset */
	h->on = (h->id >= 0) == (s->n_id == 1) && (h->clk >= 0) == (s->n_clk == 1);
}

/* The lean plans of stream class `i` and its event classes: registers kept are those read
 * by name (find_roles, the kinds' maps, tids and CPUs) and lengths and tags. */
static int lean_class(struct trace *tr, uint32_t i, uint32_t nregs, struct vms_error *err)
{
	struct sclass *s = &tr->sc[i];
	bool *keep = calloc(nregs ? nregs : 1, sizeof *keep);
	if (!keep)
		return tsdl_nomem_at(err, tr->path, 0);
	int rc = 0;
	for (uint32_t k = 0; k < s->n_id; k++)
		keep_reg(keep, s->r_id[k]);
	for (uint32_t k = 0; k < s->n_clk; k++)
		keep_reg(keep, s->r_clk[k]);
	keep_reg(keep, s->r_tid);
	keep_reg(keep, s->r_vtid);
	keep_reg(keep, s->r_ecpu);
	plan_mark_refs(&s->eh, keep);
	plan_mark_refs(&s->sec, keep);
	for (uint32_t e = 0; e < tr->t.nr_events; e++)
		if (tr->t.events[e].stream_id == s->id) {
			plan_mark_refs(&tr->ec[e].ec, keep);
			plan_mark_refs(&tr->ec[e].ef, keep);
		}
	if (plan_lean(&s->eh, keep, &s->eh_l))
		rc = -1;
	else if (find_lttng_header(&s->eh_l, &s->hdr)) {
		/* as the plan would read it: the tag and the 32-bit id are the ids (the latter
		 * last), the two timestamps the clocks */
		const struct lttng_header *h = &s->hdr;
		bool ids = s->n_id == 2 && s->r_id[0] == h->r_tag && s->r_id[1] == h->r_id32;
		bool clks = s->n_clk == 2 && s->r_clk[0] == h->r_ts32 && s->clk_bits[0] == 32 &&
			    s->r_clk[1] == h->r_ts64 && s->clk_bits[1] == 64;
		s->hdr.large = ids && clks;
	}
	if (!rc && !s->hdr.large)
		find_fixed_header(s);
	for (uint32_t e = 0; e < tr->t.nr_events && !rc; e++) {
		struct eclass *c = &tr->ec[e];
		if (tr->t.events[e].stream_id != s->id)
			continue;
		memset(keep + s->mark, 0, (nregs - s->mark) * sizeof *keep);
		plan_mark_refs(&c->ec, keep);
		plan_mark_refs(&c->ef, keep);
		keep_reg(keep, c->r_tid);
		keep_reg(keep, c->r_vtid);
		keep_reg(keep, c->r_ecpu);
		if (lean_body(s, c, keep, &c->body_skip)) {
			rc = -1;
			break;
		}
		for (int k = 0; k < 5; k++)
			for (uint8_t j = 0; j < c->map.nf[k]; j++)
				keep_reg(keep, c->map.f[k][j]);
		for (int k = 0; k < 2; k++)
			for (uint8_t j = 0; j < c->map.ns[k]; j++)
				keep_reg(keep, c->map.s[k][j]);
		if (lean_body(s, c, keep, &c->body))
			rc = -1;
		else
			find_direct(s, c);
	}
	free(keep);
	return rc ? tsdl_nomem_at(err, tr->path, 0) : 0;
}

static int compile_trace(struct vms_source *src, struct trace *tr, uint32_t type_base,
			 uint32_t *max_regs, uint64_t *budget, struct vms_error *err)
{
	struct tsdl_trace *t = &tr->t;
	struct plan_regs regs = {0};
	int rc = 0;
	tr->sc = calloc(t->nr_streams, sizeof *tr->sc);
	tr->ec = calloc(t->nr_events ? t->nr_events : 1, sizeof *tr->ec);
	if (!tr->sc || !tr->ec)
		return tsdl_nomem_at(err, tr->path, 0);
	bool no_wakeup = true;
	for (uint32_t e = 0; e < t->nr_events; e++)
		if (!strcmp(t->events[e].name, "sched_wakeup"))
			no_wakeup = false;
	for (uint32_t i = 0; i < t->nr_streams && !rc; i++) {
		const struct tsdl_stream *ts = &t->streams[i];
		struct sclass *s = &tr->sc[i];
		tr->nsc++;
		s->id = ts->id;
		regs.n = 0;
		if ((rc = plan_compile(&s->ph, t->packet_header, PLAN_PH, t->order, &regs, budget,
				       tr->path, "trace.packet.header", err)) ||
		    (rc = plan_compile(&s->pc, ts->packet_context, PLAN_PC, t->order, &regs, budget,
				       tr->path, "stream.packet.context", err)) ||
		    (rc = plan_compile(&s->eh, ts->event_header, PLAN_EH, t->order, &regs, budget,
				       tr->path, "stream.event.header", err)) ||
		    (rc = plan_compile(&s->sec, ts->event_context, PLAN_SEC, t->order, &regs,
				       budget, tr->path, "stream.event.context", err)))
			break;
		s->mark = regs.n;
		find_roles(s, &regs);
		for (uint32_t k = 0; k < s->n_clk; k++) {
			const char *name = regs.r[s->r_clk[k]].type->clock;
			if (!name)
				continue;
			uint32_t ci = 0;
			while (ci < t->nr_clocks && strcmp(t->clocks[ci].name, name))
				ci++;
			if (ci == t->nr_clocks) {
				rc = vms_error_set(err, VMS_ERR_FORMAT, "%s/metadata: map to an "
						   "undeclared clock '%s' at byte offset 0", tr->path,
						   name);
				break;
			}
			if (i == 0 && k == 0)
				tr->clock = ci;
		}
		if (rc)
			break;
		uint64_t max_id = 0;
		for (uint32_t e = 0; e < t->nr_events && !rc; e++) {
			const struct tsdl_event *te = &t->events[e];
			if (te->stream_id != ts->id)
				continue;
			struct eclass *c = &tr->ec[e];
			regs.n = s->mark;
			if ((rc = plan_compile(&c->ec, te->context, PLAN_EC, t->order, &regs, budget,
					       tr->path, te->name, err)) ||
			    (rc = plan_compile(&c->ef, te->fields, PLAN_EF, t->order, &regs, budget,
					       tr->path, te->name, err)))
				break;
			c->name = te->name;
			c->id = te->id;
			c->type = type_base + e;
			c->reg_first = s->mark;
			c->reg_end = regs.n;
			c->regs = malloc((regs.n - s->mark + 1) * sizeof *c->regs);
			if (!c->regs) {
				rc = tsdl_nomem_at(err, tr->path, 0);
				break;
			}
			memcpy(c->regs, regs.r + s->mark, (regs.n - s->mark) * sizeof *c->regs);
			c->r_tid = plan_find(&regs, s->mark, PLAN_EC, "tid", false);
			c->r_vtid = plan_find(&regs, s->mark, PLAN_EC, "vtid", false);
			c->r_ecpu = plan_find(&regs, s->mark, PLAN_EC, "cpu_id", false);
			ctf_map_event(te->name, &regs, s->mark, tr->dom, no_wakeup, &c->map);
			if (regs.n > *max_regs)
				*max_regs = regs.n;
			if (te->id > max_id)
				max_id = te->id;
			s->nr_classes++;
			s->only = e;
		}
		if (rc)
			break;
		if (regs.n > *max_regs)
			*max_regs = regs.n;
		if (s->nr_classes && max_id < 65536) {
			s->ndense = (uint32_t)max_id + 1;
			s->dense = malloc(s->ndense * sizeof *s->dense);
			if (!s->dense) {
				rc = tsdl_nomem_at(err, tr->path, 0);
				break;
			}
			memset(s->dense, 0xff, s->ndense * sizeof *s->dense);
		} else if (s->nr_classes) {
			s->sorted = malloc(s->nr_classes * sizeof *s->sorted);
			if (!s->sorted) {
				rc = tsdl_nomem_at(err, tr->path, 0);
				break;
			}
		}
		for (uint32_t e = 0; e < t->nr_events; e++) {
			const struct tsdl_event *te = &t->events[e];
			if (te->stream_id != ts->id)
				continue;
			if (s->dense) {
				if (s->dense[te->id] != UINT32_MAX) {
					rc = vms_error_set(err, VMS_ERR_FORMAT, "%s/metadata: two events "
							   "of id %llu at byte offset 0", tr->path,
							   (unsigned long long)te->id);
					break;
				}
				s->dense[te->id] = e;
			} else if (s->sorted) {
				if (te->id >= (1ull << 40)) {
					rc = vms_error_set(err, VMS_ERR_FORMAT, "%s/metadata: event id "
							   "too large at byte offset 0", tr->path);
					break;
				}
				s->sorted[s->nsorted++] = te->id << 24 | e;
			}
		}
		if (s->sorted)
			qsort(s->sorted, s->nsorted, sizeof *s->sorted, by_id);
		if (!rc)
			rc = lean_class(tr, i, regs.n > *max_regs ? regs.n : *max_regs, err);
	}
	(void)src;
	plan_regs_free(&regs);
	return rc;
}

static uint32_t class_of(const struct sclass *s, uint64_t id)
{
	if (s->dense)
		return id < s->ndense ? s->dense[id] : UINT32_MAX;
	uint32_t lo = 0, hi = s->nsorted;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		uint64_t v = s->sorted[mid] >> 24;
		if (v == id)
			return (uint32_t)(s->sorted[mid] & 0xffffff);
		if (v < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return UINT32_MAX;
}

/* ---- packets ---- */

struct pktinfo {
	const struct sclass *sc;
	uint64_t packet_bytes, content_bits, header_bits;
	bool has_ts, has_disc, has_cpu, has_ptid;
	uint64_t ts_begin, disc, cpu, ptid;
};

/* Decode the packet header and context at `off`: 1 with *pi, 0 when the packet does not fit
 * in the `limit` bytes (a cut packet), or a negative status. */
static int read_packet(struct vms_error *err, struct plan_rf *rf, struct cstream *s,
		       uint64_t off, uint64_t limit, struct pktinfo *pi)
{
	struct trace *tr = s->tr;
	const uint8_t *buf = s->map + off;
	uint64_t avail = limit - off;
	uint64_t end = avail > (UINT64_MAX >> 4) ? UINT64_MAX >> 1 : avail * 8, pos = 0;
	plan_next_gen(rf);
	const struct sclass *sc = &tr->sc[0];
	int rc = plan_exec(&sc->ph, buf, &pos, end, rf);
	if (rc == PLAN_E_END && avail < 4096)
		return 0;
	if (rc)
		return fail(err, s->path, off + pos / 8, plan_err_text(rc));
	uint64_t v;
	if (plan_get(rf, sc->r_magic, &v) && v != CTF_MAGIC)
		return fail(err, s->path, off, "bad packet magic");
	if (tr->t.has_uuid && sc->r_uuid != NOREG && rf->gen[sc->r_uuid] == rf->cur &&
	    (rf->aux[sc->r_uuid] != 16 || memcmp(buf + rf->val[sc->r_uuid], tr->t.uuid, 16)))
		return fail(err, s->path, off + rf->val[sc->r_uuid],
			    "packet of another trace (UUID differs)");
	if (plan_get(rf, sc->r_sid, &v)) {
		sc = NULL;
		for (uint32_t i = 0; i < tr->nsc; i++)
			if (tr->sc[i].id == v)
				sc = &tr->sc[i];
		if (!sc)
			return fail(err, s->path, off, "unknown stream id");
	} else if (tr->nsc != 1) {
		return fail(err, s->path, off, "packet without a stream id in a trace of several "
			    "stream classes");
	}
	uint64_t at = pos;
	rc = plan_exec(&sc->pc, buf, &pos, end, rf);
	if (rc == PLAN_E_END && avail < 4096)
		return 0;
	if (rc)
		return fail(err, s->path, off + pos / 8, plan_err_text(rc));
	memset(pi, 0, sizeof *pi);
	pi->sc = sc;
	pi->header_bits = pos;
	uint64_t psize = 0, csize = 0;
	bool has_p = plan_get(rf, sc->r_packet, &psize), has_c = plan_get(rf, sc->r_content, &csize);
	if (!has_p)
		psize = has_c ? (csize + 7) & ~7ull : avail * 8;
	if (!has_c)
		csize = psize;
	if (psize % 8 || csize > psize || csize < pos || psize == 0) {
		/* name the field that is wrong: content_size when it is, else packet_size */
		uint32_t r = has_c && (csize > psize || csize < pos) ? sc->r_content
			     : has_p ? sc->r_packet : NOREG;
		return fail(err, s->path, off + (r != NOREG ? rf->aux[r] : at / 8),
			    "bad packet size");
	}
	if (psize / 8 > avail)
		return 0;
	pi->packet_bytes = psize / 8;
	pi->content_bits = csize;
	pi->has_ts = plan_get(rf, sc->r_ts_begin, &pi->ts_begin);
	pi->has_disc = plan_get(rf, sc->r_disc, &pi->disc);
	pi->has_cpu = plan_get(rf, sc->r_cpu, &pi->cpu);
	pi->has_ptid = plan_get(rf, sc->r_ptid, &pi->ptid);
	return 1;
}

/* A number from a /proc or /sys file of one line, 0 when it cannot be read */
static uint64_t proc_number(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned long long v = 0;
	if (f && fscanf(f, "%llu", &v) != 1)
		v = 0;
	if (f)
		fclose(f);
	return v;
}

/* The process's memory mappings (the lines of /proc/self/maps), 0 when unknown */
static uint64_t mappings_now(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return 0;
	uint64_t n = 0;
	int ch;
	while ((ch = getc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

/* mmap said ENOMEM: the kernel's limit on a process's mappings (vm.max_map_count, 65,530 by
 * default: a directory of 65,536 stream files reaches it) is named as the cause when the
 * process is at it, else it is out of memory */
static int map_failed_nomem(struct vms_source *src, const struct cstream *s, uint32_t streams)
{
	uint64_t max = proc_number("/proc/sys/vm/max_map_count"), now = mappings_now();
	if (max && now + 16 >= max)
		return vms_error_set(&src->err, VMS_ERR_NOMEM, "%s: too many stream files (%u "
				     "mapped): the kernel's limit on memory mappings "
				     "(vm.max_map_count %llu) at byte offset 0", s->path, streams,
				     (unsigned long long)max);
	return vms_error_open(&src->err, s->path, ENOMEM, 0);
}

/* The stream file mapped, its descriptor closed: a trace of thousands of stream files (one
 * per CPU or thread) must not need as many descriptors (issue 7.7). `streams`: those mapped
 * before it. */
static int map_stream(struct vms_source *src, struct cstream *s, uint32_t streams)
{
	int fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return vms_error_open(&src->err, s->path, errno, 0);
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) != 0) {
		rc = vms_error_set(&src->err, VMS_ERR_IO, "%s: cannot stat", s->path);
	} else if ((s->size = (uint64_t)st.st_size) != 0) {
		void *m = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED)
			rc = errno == ENOMEM ? map_failed_nomem(src, s, streams)
					     : vms_error_set(&src->err, VMS_ERR_IO, "%s: cannot map: %s",
							     s->path, strerror(errno));
		else
			s->map = m;
	}
	close(fd);
	return rc;
}

static int scan_stream(struct vms_source *src, struct ctf *c, struct cstream *s)
{
	uint64_t off = 0, disc = 0, npkts_cap = 0;
	while (off < s->size) {
		struct pktinfo pi;
		int rc = read_packet(&src->err, &c->rf, s, off, s->size, &pi);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			if (s->tr->strict_end)
				return fail(&src->err, s->path, off, "truncated packet");
			src->meta.ended_abruptly = true;
			break;
		}
		if (s->npkts == npkts_cap) {
			/* (as many as the file holds: a packet is at least its header) */
			uint64_t *n = realloc(s->pkts, (npkts_cap = npkts_cap ? 2 * npkts_cap : 64) *
					      sizeof *n);
			if (!n)
				return vms_error_nomem_at(&src->err, s->path, off);
			s->pkts = n;
		}
		s->pkts[s->npkts++] = off;
		if (pi.has_disc)
			disc = pi.disc;
		if (pi.has_cpu && pi.cpu < 4096 && pi.cpu + 1 > src->meta.nr_cpus)
			src->meta.nr_cpus = (uint32_t)pi.cpu + 1;
		off += pi.packet_bytes;
	}
	s->valid_end = off;
	src->meta.lost_events += disc;
	/* the walk faulted in pages around every header (fault-around, read-around): give them
	 * back now, the reading maps what it needs */
	if (s->map)
		madvise((void *)s->map, s->size, MADV_DONTNEED);
	return 0;
}

static void give_back(struct cstream *s, uint64_t upto)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t pg = page > 0 ? (uint64_t)page : 4096;
	if (upto > s->size)   /* never past the mapping (see xt_give_back) */
		upto = s->size;
	if (upto < s->given_back + GIVE_BACK + pg)
		return;
	uint64_t to = (upto - GIVE_BACK) / pg * pg;
	if (to > s->given_back) {
		madvise((void *)(s->map + s->given_back), to - s->given_back, MADV_DONTNEED);
		s->given_back = to;
	}
}

int ctf_enter_packet_at(struct vms_error *err, struct plan_rf *rf, struct cstream *s,
			uint64_t off)
{
	struct pktinfo pi;
	int rc = read_packet(err, rf, s, off, s->valid_end, &pi);
	if (rc <= 0)
		return rc < 0 ? rc : fail(err, s->path, off, "packet changed since open");
	give_back(s, off);
	s->sc = pi.sc;
	s->pkt_off = off;
	s->next_pkt = off + pi.packet_bytes;
	s->pos = pi.header_bits;
	s->end = pi.content_bits;
	if (pi.has_ts)
		s->clock = pi.ts_begin;
	if (pi.has_cpu)
		s->cpu = pi.cpu < 4096 ? (uint32_t)pi.cpu : 4095;
	s->ptid = pi.has_ptid ? (int32_t)pi.ptid : -1;
	if (pi.has_disc) {
		if (pi.disc != s->disc_prev)
			s->lost_pending = true;
		s->disc_prev = pi.disc;
	}
	if (s->end <= s->pos)
		return 0;
	/* what its first event starts from, for tell */
	s->pk = (struct ctf_pkt_state){ .clock = s->clock, .last_ts = s->last_ts,
					.disc_prev = s->disc_prev, .cur_tid = s->cur_tid,
					.cpu = s->cpu, .have_last_ts = s->have_last_ts,
					.lost_pending = s->lost_pending };
	s->pkt_k = 0;
	return 1;
}

/* Load the next packet with events; 0 at the end of the stream. */
static int load_packet(struct vms_error *err, struct plan_rf *rf, struct cstream *s)
{
	while (s->next_pkt < s->valid_end) {
		int rc = ctf_enter_packet_at(err, rf, s, s->next_pkt);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ---- events ---- */

static void update_clock(struct cstream *s, uint64_t v, uint32_t bits)
{
	if (bits >= 64) {
		s->clock = v;
		return;
	}
	uint64_t mask = (1ull << bits) - 1;
	if (v < (s->clock & mask))
		s->clock += mask + 1;
	s->clock = (s->clock & ~mask) | v;
}

static inline void set_reg(struct plan_rf *rf, uint32_t reg, uint64_t v, uint64_t at)
{
	rf->val[reg] = v;
	rf->aux[reg] = (uint32_t)at;
	rf->gen[reg] = rf->cur;
}

/* LTTng's large header at s->pos, inline: the id, and the clock updated; false (nothing
 * read) when the packet ends inside it, for the plan to say where. */
static inline bool read_lttng_header(const struct sclass *sc, const uint8_t *buf,
				     struct cstream *s, struct plan_rf *rf, uint64_t *id)
{
	const struct lttng_header *h = &sc->hdr;
	uint64_t p = (s->pos + 7) & ~7ull;
	if (p > s->end || s->end - p < 48)
		return false;
	const uint8_t *q = buf + p / 8;
	uint16_t tag;
	uint32_t x;
	memcpy(&tag, q, 2);
	memcpy(&x, q + 2, 4);
	if (tag != 65535) {
		set_reg(rf, h->r_tag, tag, p / 8);
		set_reg(rf, h->r_ts32, x, p / 8 + 2);
		update_clock(s, x, 32);
		*id = tag;
		s->pos = p + 48;
		return true;
	}
	if (s->end - p < 112)
		return false;
	uint64_t ts;
	memcpy(&ts, q + 6, 8);
	set_reg(rf, h->r_tag, tag, p / 8);
	set_reg(rf, h->r_id32, x, p / 8 + 2);
	set_reg(rf, h->r_ts64, ts, p / 8 + 6);
	update_clock(s, ts, 64);
	*id = x;
	s->pos = p + 112;
	return true;
}

/* A field of a fixed run read inline (a direct body, a fixed header): the usual 16-, 32- and
 * 64-bit little-endian integers first. */
static inline uint64_t direct_read(const uint8_t *buf, uint64_t run, const struct plan_fx *f)
{
	uint64_t q = run + f->off;
	if (f->how == FX_32) {
		uint32_t x;
		memcpy(&x, buf + (q >> 3), 4);
		return f->flags & PLAN_SIGNED ? (uint64_t)(int64_t)(int32_t)x : x;
	}
	if (f->how == FX_16 && !(f->flags & PLAN_SIGNED)) {
		uint16_t x;
		memcpy(&x, buf + (q >> 3), 2);
		return x;
	}
	if (f->how == FX_64) {
		uint64_t x;
		memcpy(&x, buf + (q >> 3), 8);
		return x;
	}
	return plan_fx_read(buf, q, f);
}

/* A fixed-layout header (struct fixed_header) at s->pos, inline: false (nothing read) when
 * the packet ends inside it, for the plan to say where. */
static inline bool read_fixed_header(const struct sclass *sc, const uint8_t *buf,
				     struct cstream *s, struct plan_rf *rf, uint64_t *id,
				     bool *have_id)
{
	const struct fixed_header *h = &sc->fh;
	uint64_t p = (s->pos + h->align - 1) & ~(h->align - 1);
	if (p > s->end || s->end - p < h->bits)
		return false;
	for (uint32_t k = 0; k < h->nf; k++) {
		uint64_t v = direct_read(buf, p, &h->f[k]);
		set_reg(rf, h->f[k].reg, v, (p + h->f[k].off) / 8);
		if ((int)k == h->clk)
			update_clock(s, v, h->clk_bits);
		if ((int)k == h->id) {
			*id = v;
			*have_id = true;
		}
	}
	s->pos = p + h->bits;
	return true;
}

/* Must the fields of an event of class `ec` be decoded? Not when its kind is OTHER or not
 * wanted, except a sched_switch that gives the tid of the events after it. */
static bool fields_wanted(const struct ctf_filter *flt, const struct sclass *sc,
			  const struct eclass *ec)
{
	uint16_t k = ec->map.kind;
	if (k == VMS_K_OTHER)
		return false;
	if (!flt->on || flt->wanted[k])
		return true;
	return k == VMS_K_SCHED_SWITCH && sc->r_tid == NOREG && sc->r_vtid == NOREG;
}

/* Decode the event at s->pos: its class (or NULL with an error). `full`: every field into
 * the registers (format_event), else the lean plans; *fields: whether its mapped fields were
 * decoded. */
static const struct eclass *decode(struct vms_error *err, struct plan_rf *rf,
				   const struct ctf_filter *flt, struct cstream *s, bool full,
				   bool *fields)
{
	const struct sclass *sc = s->sc;
	struct trace *tr = s->tr;
	const uint8_t *buf = s->map + s->pkt_off;
	uint64_t start = s->pos;
	plan_next_gen(rf);
	uint64_t id = 0, v;
	bool have_id = false;
	if (!full && sc->hdr.large && read_lttng_header(sc, buf, s, rf, &id)) {
		have_id = true;
	} else if (!full && sc->fh.on && read_fixed_header(sc, buf, s, rf, &id, &have_id)) {
		/* read */
	} else {
		int rc = plan_exec(full ? &sc->eh : &sc->eh_l, buf, &s->pos, s->end, rf);
		if (rc) {
			fail(err, s->path, s->pkt_off + s->pos / 8, plan_err_text(rc));
			return NULL;
		}
		for (uint32_t i = 0; i < sc->n_id; i++)
			if (plan_get(rf, sc->r_id[i], &v)) {
				id = v;
				have_id = true;
			}
		for (uint32_t i = 0; i < sc->n_clk; i++)
			if (plan_get(rf, sc->r_clk[i], &v))
				update_clock(s, v, sc->clk_bits[i]);
	}
	int rc;
	uint32_t e = have_id ? class_of(sc, id) : sc->nr_classes == 1 ? sc->only : UINT32_MAX;
	if (e == UINT32_MAX) {
		fail(err, s->path, s->pkt_off + start / 8, "unknown event id");
		return NULL;
	}
	const struct eclass *ec = &tr->ec[e];
	*fields = full || fields_wanted(flt, sc, ec);
	s->direct = false;
	if (!full && ec->direct.on) {
		uint64_t a = ec->direct.align, p = (s->pos + a - 1) & ~(a - 1);
		if (p <= s->end && s->end - p >= ec->direct.bits) {
			s->direct = true;
			s->run = p;
			s->pos = p + ec->direct.bits;
			return ec;
		}
		/* the packet ends in it: the plan says where */
	}
	if (full ? (rc = plan_exec(&sc->sec, buf, &s->pos, s->end, rf)) ||
		   (rc = plan_exec(&ec->ec, buf, &s->pos, s->end, rf)) ||
		   (rc = plan_exec(&ec->ef, buf, &s->pos, s->end, rf))
		 : (rc = plan_exec(*fields ? &ec->body : &ec->body_skip, buf, &s->pos, s->end,
				   rf))) {
		fail(err, s->path, s->pkt_off + s->pos / 8, plan_err_text(rc));
		return NULL;
	}
	return ec;
}

/* A text field (byte `at` of the packet, n bytes) into dst, 64 bytes (char arrays need not
 * end with a NUL; strings do). */
static const char *text_at(const struct cstream *s, uint64_t at, size_t n, char *dst,
			   bool basename)
{
	const char *p = (const char *)s->map + s->pkt_off + at;
	const char *nul = memchr(p, 0, n);
	if (nul)
		n = (size_t)(nul - p);
	if (basename) {
		const char *slash = memrchr(p, '/', n);
		if (slash) {
			n -= (size_t)(slash + 1 - p);
			p = slash + 1;
		}
		if (n > 15)
			n = 15; /* the kernel's comm after exec: TASK_COMM_LEN - 1 */
	}
	if (n >= sizeof s->sbuf[0])
		n = sizeof s->sbuf[0] - 1;
	memcpy(dst, p, n);
	dst[n] = 0;
	return dst;
}

static bool first_set(const struct plan_rf *rf, const uint32_t *cand, uint8_t n, uint32_t *reg)
{
	for (uint8_t i = 0; i < n; i++)
		if (rf->gen[cand[i]] == rf->cur) {
			*reg = cand[i];
			return true;
		}
	return false;
}

/* The thread and CPU of an event (both fills): its context's tid, else the packet's, else
 * sched_switch's; its own CPU, else the packet's. */
static void finish(struct cstream *s, bool have_tid, uint64_t tid, bool have_cpu, uint64_t cpu,
		   bool fields, struct vms_event *ev)
{
	if (have_tid)
		ev->tid = (int32_t)tid;
	else if (s->ptid >= 0)
		ev->tid = s->ptid;
	else if (ev->kind == VMS_K_SCHED_SWITCH)
		ev->tid = (int32_t)ev->f[0];
	else
		ev->tid = s->cur_tid;
	if (ev->kind == VMS_K_SCHED_SWITCH && fields)
		s->cur_tid = (int32_t)ev->f[2];
	/* the record's own CPU (vmstrace writes UINT16_MAX when it had none), else the packet's */
	if (have_cpu && cpu < 4096)
		ev->cpu = (uint32_t)cpu;
	else
		ev->cpu = s->cpu;
}

static void fill(const struct plan_rf *rf, struct cstream *s, const struct eclass *ec,
		 uint32_t stream, bool fields, struct vms_event *ev, char (*sb)[64])
{
	const struct sclass *sc = s->sc;
	const struct ctf_evmap *m = &ec->map;
	memset(ev, 0, sizeof *ev);
	ev->ts = s->clock + (uint64_t)s->tr->adjust;
	ev->type = ec->type;
	ev->stream = stream;
	ev->kind = m->kind;
	uint32_t reg;
	for (int k = 0; k < 5 && fields; k++) {
		if (first_set(rf, m->f[k], m->nf[k], &reg))
			ev->f[k] = rf->val[reg];
		else if (m->required >> k & 1)
			ev->kind = VMS_K_OTHER; /* e.g. a packet without a TCP header */
	}
	for (int k = 0; k < 2 && fields; k++)
		if (first_set(rf, m->s[k], m->ns[k], &reg))
			ev->s[k] = text_at(s, rf->val[reg], rf->aux[reg], sb[k], m->basename && k == 0);
	uint64_t tid = 0, cpu = 0;
	bool have_tid = plan_get(rf, ec->r_tid, &tid) || plan_get(rf, sc->r_tid, &tid) ||
			plan_get(rf, ec->r_vtid, &tid) || plan_get(rf, sc->r_vtid, &tid);
	bool have_cpu = plan_get(rf, ec->r_ecpu, &cpu) || plan_get(rf, sc->r_ecpu, &cpu);
	finish(s, have_tid, tid, have_cpu, cpu, fields, ev);
}

/* fill() from a direct read (struct direct): the same, the fields taken from the packet. */
static void fill_direct(struct cstream *s, const struct eclass *ec, uint32_t stream,
			bool fields, struct vms_event *ev, char (*sb)[64])
{
	const struct direct *d = &ec->direct;
	const struct ctf_evmap *m = &ec->map;
	const uint8_t *buf = s->map + s->pkt_off;
	memset(ev, 0, sizeof *ev);
	ev->ts = s->clock + (uint64_t)s->tr->adjust;
	ev->type = ec->type;
	ev->stream = stream;
	ev->kind = m->kind;
	if (fields) {
		for (uint32_t i = 0; i < d->nf; i++)
			ev->f[d->slot[i]] = direct_read(buf, s->run, &d->f[i]);
		for (int k = 0; k < 2; k++)
			if (d->has_s >> k & 1)
				ev->s[k] = text_at(s, (s->run + d->s[k].off) / 8, d->s[k].size / 8,
						   sb[k], m->basename && k == 0);
	}
	uint64_t tid = d->has_tid ? direct_read(buf, s->run, &d->tid) : 0;
	uint64_t cpu = d->has_cpu ? direct_read(buf, s->run, &d->cpu) : 0;
	finish(s, d->has_tid, tid, d->has_cpu, cpu, fields, ev);
}

static uint32_t ctf_nr_streams(struct vms_source *src)
{
	return ((struct ctf *)src->impl)->n;
}

int ctf_decode_next(struct cstream *s, uint32_t stream, struct plan_rf *rf,
		    const struct ctf_filter *flt, struct vms_error *err, struct vms_event *ev,
		    char (*sb)[64], struct ctf_at *at)
{
	int ok = 1;
	if (s->pos >= s->end || !s->sc) {
		int rc = load_packet(err, rf, s);
		if (rc <= 0)
			return rc;
		ok = CTF_NEW_PACKET;
	}
	s->pkt_k++;
	at->pos = s->pos;
	at->clock = s->clock;
	bool fields;
	const struct eclass *ec = decode(err, rf, flt, s, false, &fields);
	if (!ec)
		return err->status ? err->status : VMS_ERR_FORMAT;
	if (s->pos == at->pos)
		/* a header and body of no bits: the packet would hold endless events */
		return fail(err, s->path, s->pkt_off + s->pos / 8, "event of no bits");
	/* a packet may be up to 64 MiB and every stream is partway through one: the pages
	 * behind the cursor are given back inside a packet too, so that a stream keeps about
	 * GIVE_BACK of its file mapped (16 streams sharing one 64 MiB packet took 1 GB). Pages
	 * given back come again from the file if touched, so this costs no correctness. */
	uint64_t off = s->pkt_off + s->pos / 8;
	if (off >= s->given_back + 2 * GIVE_BACK)
		give_back(s, off);
	if (s->direct)
		fill_direct(s, ec, stream, fields, ev, sb);
	else
		fill(rf, s, ec, stream, fields, ev, sb);
	if (s->have_last_ts && ev->ts < s->last_ts)
		ev->flags |= VMS_EVF_TIME_BACKWARDS;
	if (s->lost_pending) {
		ev->flags |= VMS_EVF_LOST_BEFORE;
		s->lost_pending = false;
	}
	s->last_ts = ev->ts;
	s->have_last_ts = true;
	return ok;
}

static int ctf_next(struct vms_source *src, uint32_t stream, struct vms_event *ev)
{
	struct ctf *c = src->impl;
	if (stream >= c->n)
		return vms_error_set(&src->err, VMS_ERR_USAGE, "no stream %u", stream);
	struct cstream *s = &c->st[stream];
	if (s->seek_status)
		return s->seek_status;
	int rc;
	if (c->pool) {
		rc = ctf_pool_next(src, c, stream, ev);
	} else {
		/* the event's place kept when it is returned (tell names the event returned
		 * last), its packet's part once per packet */
		struct ctf_at at;
		rc = ctf_decode_next(s, stream, &c->rf, &c->flt, &src->err, ev, s->sbuf, &at);
		if (rc > 0) {
			if (rc == CTF_NEW_PACKET)
				ctf_keep_packet(s);
			rc = 1;
			s->last.at = at;
			s->last.k = s->pkt_k - 1;
		}
		s->have_last = rc == 1;
		c->decoded_alone += rc == 1;
	}
	if (rc == 1) {
		s->told = true;
		s->at_seek = false;
	}
	return rc;
}

/* For the tests: the events decoded since open, and whether the pool decodes them. */
void vms_ctf_counters(const struct vms_source *src, uint64_t *decoded, bool *pooled);
void vms_ctf_counters(const struct vms_source *src, uint64_t *decoded, bool *pooled)
{
	const struct ctf *c = src->impl;
	*decoded = c->decoded_alone + atomic_load(&c->decoded_pool);
	*pooled = c->pool != NULL;
}

void ctf_keep_packet(struct cstream *s)
{
	s->last.sc = s->sc;
	s->last.pkt_off = s->pkt_off;
	s->last.end = s->end;
	s->last.pk = s->pk;
}

void ctf_reset_stream(struct cstream *s)
{
	s->next_pkt = 0;
	s->sc = NULL;
	s->pos = s->end = 0;
	s->clock = 0;
	s->cpu = 0;
	s->ptid = -1;
	s->cur_tid = -1;
	s->disc_prev = 0;
	s->lost_pending = false;
	s->have_last_ts = false;
	s->have_last = false;
	s->pkt_k = 0;
}

static int ctf_rewind(struct vms_source *src)
{
	struct ctf *c = src->impl;
	for (uint32_t i = 0; i < c->n; i++) {
		struct cstream *s = &c->st[i];
		s->told = s->at_seek = false;
		s->seek_status = 0;
	}
	if (c->pool) {
		ctf_pool_rewind(c);
		return 0;
	}
	for (uint32_t i = 0; i < c->n; i++) {
		struct cstream *s = &c->st[i];
		ctf_reset_stream(s);
		s->given_back = 0; /* released pages come back from the file on access */
	}
	return 0;
}

/* The last event again, decoded into the registers, then printed: "name: f=v ...". */
static int ctf_format(struct vms_source *src, uint32_t stream, char *buf, size_t len)
{
	struct ctf *c = src->impl;
	if (!len)
		return 0;
	buf[0] = 0;
	if (stream >= c->n || !c->st[stream].have_last)
		return 0;
	/* a cursor of its own at the event: the stream's may be a worker's, ahead */
	struct cstream *st = &c->st[stream];
	const struct ctf_pos *last = c->pool ? ctf_pool_last(st) : &st->last;
	struct cstream at = {.path = st->path, .tr = st->tr, .map = st->map, .size = st->size,
			     .sc = last->sc, .pkt_off = last->pkt_off, .end = last->end,
			     .pos = last->at.pos, .clock = last->at.clock};
	struct cstream *s = &at;
	bool fields;
	const struct eclass *ec = decode(&src->err, &c->rf, &c->flt, s, true, &fields);
	if (!ec)
		return 0;
	const struct plan_rf *rf = &c->rf;
	size_t n = (size_t)snprintf(buf, len, "%s:", ec->name);
	for (uint32_t r = ec->reg_first; r < ec->reg_end && n < len; r++) {
		const struct plan_reg *g = &ec->regs[r - ec->reg_first];
		if (g->in_loop || rf->gen[r] != rf->cur)
			continue;
		const struct tsdl_type *t = g->type;
		uint64_t v = rf->val[r];
		if (t->kind == TSDL_STRING || ((t->kind == TSDL_ARRAY || t->kind == TSDL_SEQ) &&
					       t->elem->text)) {
			/* whole, as babeltrace2 prints it (a char array up to its first NUL); a
			 * text that does not fit fills buf, and dump renders it again larger */
			const char *p = (const char *)s->map + s->pkt_off + v;
			const char *nul = memchr(p, 0, rf->aux[r]);
			size_t k = nul ? (size_t)(nul - p) : rf->aux[r];
			if (k > INT_MAX)
				k = INT_MAX;
			n += (size_t)snprintf(buf + n, len - n,  " %s=\"%.*s\"", g->name, (int)k, p);
		} else if (t->kind == TSDL_ARRAY || t->kind == TSDL_SEQ) {
			n += (size_t)snprintf(buf + n, len - n, " %s=[%u bytes]", g->name, rf->aux[r]);
		} else if (t->kind == TSDL_FLOAT) {
			double d;
			if (t->size == 32) {
				float f;
				uint32_t x = (uint32_t)v;
				memcpy(&f, &x, 4);
				d = f;
			} else {
				memcpy(&d, &v, 8);
			}
			n += (size_t)snprintf(buf + n, len - n, " %s=%g", g->name, d);
		} else if (t->base == 16) {
			n += (size_t)snprintf(buf + n, len - n, " %s=0x%llx", g->name,
					      (unsigned long long)v);
		} else if (t->is_signed) {
			n += (size_t)snprintf(buf + n, len - n, " %s=%lld", g->name, (long long)v);
		} else {
			n += (size_t)snprintf(buf + n, len - n, " %s=%llu", g->name,
					      (unsigned long long)v);
		}
	}
	return 0;
}

static void free_trace(struct trace *tr)
{
	for (uint32_t i = 0; i < tr->nsc; i++) {
		struct sclass *s = &tr->sc[i];
		plan_free(&s->ph);
		plan_free(&s->pc);
		plan_free(&s->eh);
		plan_free(&s->sec);
		plan_free(&s->eh_l);
		free(s->dense);
		free(s->sorted);
	}
	for (uint32_t i = 0; i < tr->t.nr_events && tr->ec; i++) {
		plan_free(&tr->ec[i].ec);
		plan_free(&tr->ec[i].ef);
		plan_free(&tr->ec[i].body);
		plan_free(&tr->ec[i].body_skip);
		free(tr->ec[i].regs);
	}
	free(tr->sc);
	free(tr->ec);
	tsdl_free(&tr->t);
	free(tr->path);
}

static void ctf_close(struct vms_source *src)
{
	if (!src)
		return;
	struct ctf *c = src->impl;
	if (c) {
		ctf_pool_stop(c);
		for (uint32_t i = 0; i < c->n; i++) {
			struct cstream *s = &c->st[i];
			if (s->map)
				munmap((void *)s->map, s->size);
			free(s->path);
			free(s->pkts);
		}
		free(c->st);
		for (uint32_t i = 0; i < c->nt; i++)
			free_trace(&c->tr[i]);
		free(c->tr);
		ctf_rf_free(&c->rf);
		free(c);
	}
	vms_trace_meta_free(&src->meta);
	free(src->path);
	free(src);
}

/* Unwanted kinds keep their class, time, tid and CPU; their fields are skipped over. */
static void ctf_set_wanted(struct vms_source *src, const bool *wanted)
{
	struct ctf *c = src->impl;
	if (c->pool) {
		ctf_pool_set_wanted(c, wanted);
		return;
	}
	c->flt.on = wanted != NULL;
	if (wanted)
		memcpy(c->flt.wanted, wanted, sizeof c->flt.wanted);
}

static const struct vms_source_ops ctf_ops = {
	.name = "ctf",
	.nr_streams = ctf_nr_streams,
	.next = ctf_next,
	.rewind = ctf_rewind,
	.set_wanted = ctf_set_wanted,
	.format_event = ctf_format,
	.tell = ctf_tell,
	.seek = ctf_seek,
	.close = ctf_close,
};

/* ---- opening ---- */

/* DIR/.vmst-threads: "TID NAME" lines written by the tracer when a thread's stream file is
 * created. Optional; a line that does not parse is damage, and so are names past the cap (a
 * name per thread that had a stream file: a million is far beyond any tracer's run). */
#define VMS_CTF_MAX_THREAD_NAMES 1000000u

static int read_thread_names(struct vms_source *src, const char *path)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/.vmst-threads", path);
	FILE *f = fopen(p, "r");
	if (!f)
		return 0;
	struct vms_trace_meta *m = &src->meta;
	char line[256];
	uint64_t off = 0;
	uint32_t cap = m->nr_comms; /* (the arrays hold nr_comms: none before this) */
	int rc = 0;
	while (fgets(line, sizeof line, f)) {
		size_t len = strlen(line);
		int tid, name_at = 0;
		if (len == 0 || line[len - 1] != '\n' || sscanf(line, "%d %n", &tid, &name_at) != 1 ||
		    name_at == 0) {
			rc = vms_error_set(&src->err, VMS_ERR_FORMAT, "%s: bad line at byte offset "
					   "%llu", p, (unsigned long long)off);
			break;
		}
		if (m->nr_comms >= VMS_CTF_MAX_THREAD_NAMES) {
			/* (a line that parses: the cause is the cap, not the line) */
			rc = vms_error_set(&src->err, VMS_ERR_FORMAT, "%s: more than %u thread names "
					   "(the cap) at byte offset %llu", p, VMS_CTF_MAX_THREAD_NAMES,
					   (unsigned long long)off);
			break;
		}
		off += len;
		line[len - 1] = 0;
		/* (doubling: grown by one a line, a million lines took more than 10 minutes) */
		bool room = m->nr_comms < cap;
		if (!room) {
			uint32_t c1 = cap, c2 = cap;
			int32_t *t = vms_grow(m->comm_tid, &c1, sizeof *t, 64);
			if (t)
				m->comm_tid = t;
			char **n = vms_grow(m->comm_name, &c2, sizeof *n, 64);
			if (n)
				m->comm_name = n;
			room = t && n;
			if (room)
				cap = c1;
		}
		char *name = room ? strdup(line + name_at) : NULL;
		if (!name) {
			free(name);
			rc = vms_error_nomem_at(&src->err, p, off - len); /* (the line) */
			break;
		}
		m->comm_tid[m->nr_comms] = tid;
		m->comm_name[m->nr_comms] = name;
		m->nr_comms++;
	}
	fclose(f);
	return rc;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct names {
	char **v;
	size_t n, cap;
};

static int names_add(struct names *ns, const char *s)
{
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? 2 * ns->cap : 16;
		char **n = realloc(ns->v, cap * sizeof *n);
		if (!n)
			return -1;
		ns->v = n;
		ns->cap = cap;
	}
	if (!(ns->v[ns->n] = strdup(s)))
		return -1;
	ns->n++;
	return 0;
}

static void names_free(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
}

static bool has_metadata(const char *dir)
{
	char p[PATH_MAX];
	struct stat st;
	return snprintf(p, sizeof p, "%s/metadata", dir) < (int)sizeof p && stat(p, &st) == 0 &&
	       S_ISREG(st.st_mode);
}

/* The trace directories under an LTTng session directory (kernel/, ust/uid/1000/64-bit/,
 * ...): the directories holding a metadata file, a few levels down, in name order. */
static int find_traces(const char *dir, int depth, struct names *out)
{
	if (has_metadata(dir))
		return names_add(out, dir);
	if (depth == 0 || out->n >= MAX_TRACES)
		return 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct names subs = {0};
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d)) && !rc) {
		if (e->d_name[0] == '.')
			continue;
		char p[PATH_MAX];
		struct stat st;
		if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p ||
		    stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
			continue;
		rc = names_add(&subs, p);
	}
	closedir(d);
	if (subs.n)
		qsort(subs.v, subs.n, sizeof *subs.v, by_name);
	for (size_t i = 0; i < subs.n && !rc && out->n < MAX_TRACES; i++)
		rc = find_traces(subs.v[i], depth - 1, out);
	names_free(&subs);
	return rc;
}

/* A stream file's identity: names that are links to one file (symlinks, hard links) are one
 * stream, read once (2,000 links to one 64 MiB packet were each decoded in full: past 60 s) */
struct file_id {
	dev_t dev;
	ino_t ino;
	size_t name;                   /* index in the names */
};

static int by_file_then_name(const void *a, const void *b, void *arg)
{
	const struct file_id *x = a, *y = b;
	char *const *v = arg;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return strcmp(v[x->name], v[y->name]);
}

/* Of the names out->v[first..] (ids in the same order), each file's first name in name order
 * is kept, the others freed; how many were dropped. */
static size_t drop_links(struct names *out, size_t first, struct file_id *ids)
{
	size_t n = out->n - first;
	qsort_r(ids, n, sizeof *ids, by_file_then_name, out->v);
	size_t dropped = 0;
	for (size_t i = 1; i < n; i++)
		if (ids[i].dev == ids[i - 1].dev && ids[i].ino == ids[i - 1].ino) {
			free(out->v[ids[i].name]);
			out->v[ids[i].name] = NULL;
			dropped++;
		}
	size_t k = first;
	for (size_t i = first; i < out->n; i++)
		if (out->v[i])
			out->v[k++] = out->v[i];
	out->n = k;
	return dropped;
}

/* The stream files of a trace directory: every regular file but the metadata and hidden
 * files (LTTng's index/ is a directory), each file once, in name order. */
static int list_streams(struct vms_source *src, const char *dir, struct names *out)
{
	DIR *d = opendir(dir);
	if (!d && (errno == EMFILE || errno == ENFILE || errno == ENOMEM))
		return vms_error_open(&src->err, dir, errno, 0);
	if (!d)
		return vms_error_set(&src->err, VMS_ERR_IO, "%s: cannot open the directory", dir);
	struct dirent *e;
	size_t first = out->n, nids = 0, cap = 0;
	struct file_id *ids = NULL;
	int rc = 0;
	while ((e = readdir(d)) && !rc) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "metadata"))
			continue;
		char p[PATH_MAX];
		struct stat st;
		if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p ||
		    stat(p, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (nids == cap) {
			struct file_id *ni = realloc(ids, (cap = cap ? 2 * cap : 64) * sizeof *ni);
			if (!ni) {
				rc = vms_error_nomem_at(&src->err, p, 0);
				break;
			}
			ids = ni;
		}
		if (out->n >= MAX_STREAMS)
			rc = vms_error_set(&src->err, VMS_ERR_FORMAT, "%s: more than %d stream files",
					   dir, MAX_STREAMS);
		else if (names_add(out, p))
			rc = vms_error_nomem_at(&src->err, p, 0);
		else
			ids[nids++] = (struct file_id){ st.st_dev, st.st_ino, out->n - 1 };
	}
	closedir(d);
	size_t dropped = rc || out->n == first ? 0 : drop_links(out, first, ids);
	free(ids);
	if (dropped)
		fprintf(stderr, "vmscope: warning: %s: %zu stream file %s to a file named "
			"already: each file is read once\n", dir, dropped,
			dropped == 1 ? "name is a link" : "names are links");
	if (out->n > first)
		qsort(out->v + first, out->n - first, sizeof *out->v, by_name);
	return rc;
}

/* Read and parse DIR/metadata. 1 when parsed, 0 when it is not CTF, or a negative status. */
static int load_metadata(struct vms_source *src, struct trace *tr)
{
	char mpath[PATH_MAX];
	snprintf(mpath, sizeof mpath, "%s/metadata", tr->path);
	int fd = open(mpath, O_RDONLY | O_CLOEXEC);
	if (fd < 0)   /* no metadata: not CTF; out of descriptors or memory: said as such */
		return errno == EMFILE || errno == ENFILE || errno == ENOMEM
			       ? vms_error_open(&src->err, mpath, errno, 0) : 0;
	struct stat ms;
	if (fstat(fd, &ms) != 0 || ms.st_size > MAX_METADATA) {
		close(fd);
		return vms_error_set(&src->err, VMS_ERR_FORMAT, "%s: metadata larger than %u bytes "
				     "at byte offset 0", mpath, MAX_METADATA);
	}
	size_t len = (size_t)ms.st_size;
	uint8_t *raw = malloc(len + 1);
	size_t got = 0;
	while (raw && got < len) {
		ssize_t r = pread(fd, raw + got, len - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (!raw)
		return vms_error_nomem_at(&src->err, mpath, 0);
	if (got < len) {
		free(raw);
		return vms_error_set(&src->err, VMS_ERR_IO, "%s: cannot read", mpath);
	}
	char *text;
	size_t tlen;
	int rc = tsdl_read_text(tr->path, raw, len, &text, &tlen, &src->err);
	free(raw);
	if (rc < 0)
		return rc;
	if (!text)
		return 0;
	rc = tsdl_parse(tr->path, text, tlen, &tr->t, &src->err);
	free(text);
	if (rc < 0)
		return rc;
	const char *tracer = tsdl_env(&tr->t, "tracer_name");
	const char *domain = tsdl_env(&tr->t, "domain");
	if (tracer && !strcmp(tracer, "vmstrace"))
		tr->dom = CTF_DOM_VMSTRACE;
	else if ((domain && !strcmp(domain, "kernel")) ||
		 (tracer && !strcmp(tracer, "lttng-modules")))
		tr->dom = CTF_DOM_KERNEL;
	else
		tr->dom = CTF_DOM_UST;
	if (tr->t.nr_clocks == 0)
		return vms_error_set(&src->err, VMS_ERR_FORMAT, "%s/metadata: no clock at byte "
				     "offset %zu", tr->path, tlen);
	return 1;
}

/* The machine's clock from its traces' (the first one's; the others shifted onto it). */
static int set_clock(struct vms_source *src, struct ctf *c)
{
	struct vms_trace_meta *m = &src->meta;
	const struct tsdl_clock *k0 = &c->tr[0].t.clocks[c->tr[0].clock];
	__int128 base = (__int128)k0->offset_s * k0->freq + k0->offset;
	for (uint32_t i = 1; i < c->nt; i++) {
		const struct tsdl_clock *k = &c->tr[i].t.clocks[c->tr[i].clock];
		if (k->freq != k0->freq)
			return vms_error_set(&src->err, VMS_ERR_FORMAT, "%s/metadata: a clock of "
					     "%llu Hz in a session whose first trace's is %llu Hz "
					     "at byte offset 0", c->tr[i].path,
					     (unsigned long long)k->freq,
					     (unsigned long long)k0->freq);
		__int128 d = (__int128)k->offset_s * k->freq + k->offset - base;
		if (d > INT64_MAX / 2 || d < -(INT64_MAX / 2))
			return vms_error_set(&src->err, VMS_ERR_FORMAT, "%s/metadata: clock offset "
					     "out of range at byte offset 0", c->tr[i].path);
		c->tr[i].adjust = (int64_t)d;
	}
	snprintf(m->clock, sizeof m->clock, "%.31s", k0->name);
	if (k0->freq == 1000000000u) {
		m->ts_in_ns = true;
	} else {
		/* ns = ticks * mult >> shift, with mult below 2^32 */
		uint32_t shift = 32;
		long double mult = 1e9L * (long double)(1ull << shift) / (long double)k0->freq;
		while (mult >= 4294967296.0L && shift > 0) {
			shift--;
			mult /= 2;
		}
		m->has_tsc2nsec = true;
		m->tsc_mult = (uint32_t)(mult + 0.5L);
		m->tsc_shift = shift;
	}
	m->offset_ns = k0->offset_s * 1000000000ll +
		       (int64_t)((long double)k0->offset * 1e9L / (long double)k0->freq);
	return 0;
}

static int set_types(struct vms_source *src, struct ctf *c)
{
	struct vms_trace_meta *m = &src->meta;
	uint32_t n = 0;
	for (uint32_t i = 0; i < c->nt; i++)
		n += c->tr[i].t.nr_events;
	m->type_names = calloc(n ? n : 1, sizeof *m->type_names);
	m->type_kinds = calloc(n ? n : 1, sizeof *m->type_kinds);
	if (!m->type_names || !m->type_kinds)
		return tsdl_nomem_at(&src->err, c->nt ? c->tr[0].path : src->path, 0);
	m->nr_types = n; /* (only now: close frees nr_types names) */
	for (uint32_t i = 0, k = 0; i < c->nt; i++)
		for (uint32_t e = 0; e < c->tr[i].t.nr_events; e++, k++) {
			m->type_names[k] = strdup(c->tr[i].t.events[e].name);
			m->type_kinds[k] = c->tr[i].ec[e].map.kind;
			if (!m->type_names[k])
				return tsdl_nomem_at(&src->err, c->tr[i].path, 0);
		}
	return 0;
}

static const char *domain_name(enum ctf_domain d)
{
	return d == CTF_DOM_KERNEL ? "LTTng kernel" : d == CTF_DOM_VMSTRACE ? "vmstrace" : "UST";
}

/* Returns 1 when opened, 0 when a directory is not CTF, or a negative status. */
int ctf_rf_init(struct plan_rf *rf, uint32_t n)
{
	rf->n = n;
	rf->cur = rf->spin = 0;
	rf->val = calloc(n, sizeof *rf->val);
	rf->aux = calloc(n, sizeof *rf->aux);
	rf->gen = calloc(n, sizeof *rf->gen);
	return rf->val && rf->aux && rf->gen ? 0 : -1;
}

void ctf_rf_free(struct plan_rf *rf)
{
	free(rf->val);
	free(rf->aux);
	free(rf->gen);
	rf->val = NULL;
	rf->aux = NULL;
	rf->gen = NULL;
}

static int open_all(struct vms_source *src, struct ctf *c, const struct names *dirs)
{
	int rc = 0;
	uint32_t max_regs = 1, type_base = 0;
	uint64_t budget = OP_BUDGET;
	c->tr = calloc(dirs->n, sizeof *c->tr);
	if (!c->tr)
		return tsdl_nomem_at(&src->err, dirs->n ? dirs->v[0] : src->path, 0);
	for (size_t i = 0; i < dirs->n && !rc; i++) {
		struct trace *tr = &c->tr[c->nt++];
		if (!(tr->path = strdup(dirs->v[i])))
			return tsdl_nomem_at(&src->err, dirs->v[i], 0);
		rc = load_metadata(src, tr);
		if (rc == 0)
			return 0; /* not CTF */
		if (rc < 0)
			return rc;
		rc = compile_trace(src, tr, type_base, &max_regs, &budget, &src->err);
		type_base += tr->t.nr_events;
		if (!rc && tr->dom == CTF_DOM_VMSTRACE) {
			char p[PATH_MAX];
			snprintf(p, sizeof p, "%s/.vmst-closed", tr->path);
			tr->strict_end = access(p, F_OK) == 0;
			if (!tr->strict_end)
				src->meta.ended_abruptly = true;
			rc = read_thread_names(src, tr->path);
		}
	}
	if (rc)
		return rc;
	if (ctf_rf_init(&c->rf, max_regs)) /* (the registers of the metadata's fields) */
		return tsdl_nomem_at(&src->err, c->nt ? c->tr[0].path : src->path, 0);
	if ((rc = set_clock(src, c)) || (rc = set_types(src, c)))
		return rc;
	struct vms_trace_meta *m = &src->meta;
	if (c->nt == 1)
		snprintf(m->format, sizeof m->format, "CTF 1.8 (%s)", domain_name(c->tr[0].dom));
	else
		snprintf(m->format, sizeof m->format, "CTF 1.8 (LTTng session, %u traces)", c->nt);
	/* the streams of every trace */
	struct names files = {0};
	uint32_t *owner = NULL;
	for (uint32_t i = 0; i < c->nt && !rc; i++) {
		size_t before = files.n;
		rc = list_streams(src, c->tr[i].path, &files);
		uint32_t *o = realloc(owner, (files.n ? files.n : 1) * sizeof *o);
		if (!o) {
			rc = vms_error_nomem_at(&src->err, files.n ? files.v[files.n - 1] : c->tr[i].path, 0);
			break;
		}
		owner = o;
		for (size_t k = before; k < files.n; k++)
			owner[k] = i;
	}
	if (!rc && !(c->st = calloc(files.n ? files.n : 1, sizeof *c->st)))
		rc = vms_error_nomem_at(&src->err, files.n ? files.v[0] : src->path, 0);
	for (size_t i = 0; i < files.n && !rc; i++) {
		struct cstream *s = &c->st[c->n++];
		s->tr = &c->tr[owner[i]];
		ctf_reset_stream(s);
		if (!(s->path = strdup(files.v[i]))) {
			rc = vms_error_nomem_at(&src->err, files.v[i], 0);
			break;
		}
		if (!(rc = map_stream(src, s, c->n - 1)))
			rc = scan_stream(src, c, s);
	}
	free(owner);
	names_free(&files);
	if (m->nr_cpus == 0)
		m->nr_cpus = 1;
	return rc < 0 ? rc : 1;
}

struct vms_source *vms_ctf_open(const char *path, struct vms_error *err)
{
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return NULL;
	struct names dirs = {0};
	if (find_traces(path, 4, &dirs)) {
		names_free(&dirs);
		vms_error_nomem_at(err, path, 0);
		return NULL;
	}
	if (dirs.n == 0)
		return NULL;
	struct vms_source *src = calloc(1, sizeof *src);
	struct ctf *c = calloc(1, sizeof *c);
	if (!src || !c || !(src->path = strdup(path))) {
		free(src);
		free(c);
		names_free(&dirs);
		vms_error_nomem_at(err, path, 0);
		return NULL;
	}
	src->ops = &ctf_ops;
	src->impl = c;
	int rc = open_all(src, c, &dirs);
	names_free(&dirs);
	if (rc < 0) {
		vms_error_set(err, src->err.status ? src->err.status : rc, "%s", src->err.msg);
		ctf_close(src);
		return NULL;
	}
	if (rc == 0) {
		ctf_close(src);
		return NULL; /* not CTF: err untouched */
	}
	ctf_pool_start(c);
	return src;
}
