/* The per-row summaries of `vmscope serve` (vmscope/serve.h): what answers a window too wide
 * to replay, from the index instead of the traces.
 *
 * Recorded during the page's run (the rows accumulator, serve_window.c, gives every interval
 * and exit of the whole traces): per row, time buckets of b ns from the first event (b a
 * power of two, doubled, and neighbouring buckets merged, whenever the traces outgrow the
 * buckets), each with the ns of every category, the intervals that begin in it and the exits
 * that begin in it; and, for the rows with few intervals (and vCPUs with few exits), the
 * intervals and exits themselves, while a budget allows. Memory: at most SUM_CELLS buckets
 * over all rows and SUM_LIST bytes of kept intervals and exits, whatever the traces' length.
 *
 * A window of pixels at least one bucket wide is answered from them when every row can be: a
 * row with its intervals kept gives exactly what a replay gives (its intervals that overlap
 * the window, cut at its edges; its exits that end in it, those still open at its end
 * unfinished); another row is given as per-pixel sums (each bucket's ns spread evenly over
 * the bucket, so a pixel's edge is as good as a bucket), and only when the buckets wholly in
 * the window already hold more than 2 intervals (and exits) per pixel, so that a replay would
 * have summed them too. Otherwise the window is replayed.
 *
 * Section layout (vmscope-index(1), native byte order, read back by the build that wrote it):
 *   "VMSSUM2\0", u64 origin, u64 b, u32 buckets, u32 rows, u64 events, u32 machines and each one's
 *   name (u32 length, bytes: the rows' answers name them without the model), then per row
 *   u8 kind, u8 has intervals, u8 has exits, u8 0, u32 machine, i32 vcpu/cpu/tid,
 *   u64 intervals, u64 exits, buckets x NCAT u16 (each category's share of the bucket, in
 *   1/65535), buckets x u32 intervals beginning, [vCPU] buckets x u32 exits beginning,
 *   [u64 n, u64 bytes, n intervals encoded (enc_ival)], [vCPU: u64 n, n exits] */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/byte_reader.h"
#include "model/keymap.h"
#include "serve_rows.h"

#define SUM_MAGIC "VMSSUM2"
#define SUM_CELLS (1u << 19)     /* buckets over all rows, in memory */
#define SUM_MAX_BUCKETS (1u << 16)
#define SUM_MIN_BUCKETS 256u
#define SUM_EVENTS_PER_BUCKET 1024u  /* fewer buckets than events / this at the end: finer
                                        ones would answer windows a replay answers fast */
/* The lists. A summed row answers a window only when the window holds more than 2 of its
 * intervals per pixel; a row with fewer there and no list sends the window to a replay,
 * however wide (issue 21: on the synthesized 50 M pair, guest threads of 71,000-193,000
 * intervals in all sent windows of 1.0-1.4 M events, 2-3 % of the trace, to replays of
 * 350-490 ms). So a row keeps its list while it has few (SUM_ROW_LIST) or is a small share of
 * all the rows' intervals and exits (1 / SUM_ROW_SHARE): a busier row has more than 2 per
 * pixel in any window of the SUM_REPLAY_EVENTS events the summaries answer, at up to ~3,600
 * pixels, when its activity is even and the traces make ~2.3 intervals and exits per event
 * as that pair does (400,000 x 2.3 / 128 ~ 7,200). The lists' room over all rows is at most
 * SUM_LIST bytes, the biggest given up first past it (the pair's four threads: 572,000
 * intervals, 5.8 MB encoded; its busiest CPU row of 592,000, 11.5 MB with the names, is
 * given up, which windows of that many events at px 1000 do not need). */
#define SUM_LIST (16u << 20)
#define SUM_ROW_LIST 16384u
#define SUM_ROW_SHARE 128u
/* The first intervals and exits are held, not bucketed, until they span SUM_HOLD_NS or
 * fill the hold: the buckets start 1 ns wide, and every doubling until they reach the
 * traces' span costs a pass over all rows' buckets (~30 M instructions on the synthesized
 * pair, 18 of them in a 17 s trace) though the first ones cover microseconds. Bucketed at
 * once at the hold's end, they need the doublings of their span only, over empty buckets;
 * then they are added in their order: the same buckets and lists (merging buckets is exact). */
#define SUM_HOLD 32768u
#define SUM_HOLD_NS (1ull << 30)
/* a window whose traces hold fewer events than this (estimated from the buckets' activity)
 * is replayed: from its checkpoint that is fast (about 0.1 s at the synthesized pair's cost
 * per event), and exact (vmscope/serve.h: replay_below) */
#define SUM_REPLAY_EVENTS VMS_SERVE_REPLAY_EVENTS

/* A kept interval, encoded: LEB128 varints of its start after the previous one's end and
 * its length (wrapping u64 differences), a, b, c zigzagged, isa, and for a CPU's row the
 * occupant's name (u8 length < 24, bytes). ~6 bytes a thread's, not the 56 of a struct
 * ival: the lists are in the recorder, the section and the server's memory at once. */
#define ENC_MAX (2 * 10 + 3 * 5 + 5 + 1 + 23)

static uint8_t *put_uv(uint8_t *p, uint64_t v)
{
	for (; v >= 0x80; v >>= 7)
		*p++ = (uint8_t)(v | 0x80);
	*p++ = (uint8_t)v;
	return p;
}

static uint32_t zz(int32_t v)   /* (zigzag: -1 is 1, small either side is small) */
{
	uint32_t u = (uint32_t)v;
	return (u << 1) ^ (0u - (u >> 31));
}

static size_t enc_ival(uint8_t *out, const struct ival *v, uint64_t prev_e, bool pcpu)
{
	uint8_t *p = put_uv(out, v->s - prev_e);
	p = put_uv(p, v->e - v->s);
	p = put_uv(p, zz(v->a));
	p = put_uv(p, zz(v->b));
	p = put_uv(p, zz(v->c));
	p = put_uv(p, v->isa);
	if (pcpu) {
		size_t l = strnlen(v->comm, sizeof v->comm - 1);
		*p++ = (uint8_t)l;
		memcpy(p, v->comm, l);
		p += l;
	}
	return (size_t)(p - out);
}

/* The bytes of a list as they are read (untrusted: every step checked) */
struct dec {
	const uint8_t *p;
	size_t left;
	uint64_t prev_e;
};

static bool get_uv(struct dec *d, uint64_t *v, unsigned most)
{
	*v = 0;
	for (unsigned i = 0; i < most && d->left; i++) {
		uint8_t b = *d->p++;
		d->left--;
		*v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return true;
	}
	return false;
}

static bool get_i32(struct dec *d, int32_t *v)
{
	uint64_t u;
	if (!get_uv(d, &u, 5) || u > UINT32_MAX)
		return false;
	*v = (int32_t)((uint32_t)(u >> 1) ^ (0u - (uint32_t)(u & 1)));
	return true;
}

static bool dec_ival(struct dec *d, struct ival *v, bool pcpu)
{
	uint64_t ds, len, isa;
	*v = (struct ival){ 0 };
	if (!get_uv(d, &ds, 10) || !get_uv(d, &len, 10) || !get_i32(d, &v->a) ||
	    !get_i32(d, &v->b) || !get_i32(d, &v->c) || !get_uv(d, &isa, 5) || isa > UINT32_MAX)
		return false;
	v->s = d->prev_e + ds;
	v->e = v->s + len;
	v->isa = (uint32_t)isa;
	d->prev_e = v->e;
	if (pcpu) {
		if (!d->left || *d->p >= sizeof v->comm || d->left - 1 < *d->p)
			return false;
		size_t l = *d->p++;
		memcpy(v->comm, d->p, l);
		d->p += l;
		d->left -= l + 1;
	}
	return true;
}

struct srow_rec {
	uint8_t kind;
	uint32_t a;
	int32_t b;
	uint64_t n, nx;
	uint64_t *ns;            /* B x NCAT */
	uint32_t *starts, *xstarts;
	uint8_t *list;           /* nlist intervals, enc_ival, in len_list bytes */
	uint64_t nlist, len_list, cap_list, prev_e;
	struct xslice *xlist;
	uint64_t nxlist, len_xlist, cap_xlist;   /* (len and cap in bytes) */
	bool dropped, xdropped;
};

struct vms_serve_summary_rec {
	bool started, oom;
	uint64_t origin, b;
	unsigned lb;             /* log2 b (b is a power of two: the buckets' divisions shift) */
	uint32_t B;              /* buckets per row */
	uint32_t hi;             /* buckets [0, hi) may hold something (all rows) */
	uint64_t lim;            /* no time below it needs a coarsen (set_lim; UINT64_MAX: the
	                            buckets reach every time there may be but that one) */
	struct srow_rec *rows;
	uint32_t nr, cap;
	struct vms_keymap idx;   /* row key -> index */
	uint64_t kept;           /* the lists' bytes (their room) over all rows */
	uint64_t acts;           /* intervals and exits bucketed so far, over all rows */
	/* the hold (SUM_HOLD): until released, intervals and exits wait in it */
	bool released;
	struct held {
		int32_t row;
		bool exit;
		union {
			struct ival v;
			struct xslice x;
		} u;
	} *hold;
	uint32_t nhold;
	uint64_t hold_t;         /* the latest time the held ones reach */
};


/* r->lim from the origin, the width and the buckets: the first time t whose bucket is past
 * the last, origin + B b (reach's test, one compare per interval instead of a shift and two) */
static void set_lim(struct vms_serve_summary_rec *r)
{
	uint64_t span = r->lb < 64 - 17 ? (uint64_t)r->B << r->lb : UINT64_MAX;   /* (B <= 2^16) */
	r->lim = span <= UINT64_MAX - r->origin ? r->origin + span : UINT64_MAX;
}

struct vms_serve_summary_rec *vms_serve_summary_rec_new(void)
{
	struct vms_serve_summary_rec *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->B = SUM_MAX_BUCKETS;
	r->b = 1;
	set_lim(r);
	vms_keymap_init(&r->idx);
	return r;
}

static void row_free(struct srow_rec *w)
{
	free(w->ns);
	free(w->starts);
	free(w->xstarts);
	free(w->list);
	free(w->xlist);
}

void vms_serve_summary_rec_free(struct vms_serve_summary_rec *r)
{
	if (!r)
		return;
	for (uint32_t i = 0; i < r->nr; i++)
		row_free(&r->rows[i]);
	free(r->hold);
	free(r->rows);
	vms_keymap_free(&r->idx);
	free(r);
}

/* Halve the buckets of every row: each pair merged, b doubled. */
static void coarsen(struct vms_serve_summary_rec *r)
{
	/* (only the buckets written yet: the traces' time grows, so early on most are empty) */
	uint32_t hi = r->hi, h = (hi + 1) / 2;
	for (uint32_t i = 0; i < r->nr; i++) {
		struct srow_rec *w = &r->rows[i];
		for (uint32_t k = 0; k < h; k++) {
			uint32_t k1 = 2 * k + 1 < hi ? 2 * k + 1 : 2 * k;   /* (past hi: zero) */
			for (uint32_t c = 0; c < NCAT; c++)
				w->ns[k * NCAT + c] = w->ns[2 * k * NCAT + c] +
						      (k1 != 2 * k ? w->ns[k1 * NCAT + c] : 0);
			w->starts[k] = w->starts[2 * k] + (k1 != 2 * k ? w->starts[k1] : 0);
			if (w->xstarts)
				w->xstarts[k] = w->xstarts[2 * k] + (k1 != 2 * k ? w->xstarts[k1] : 0);
		}
		memset(w->ns + (size_t)h * NCAT, 0, (size_t)(hi - h) * NCAT * sizeof *w->ns);
		memset(w->starts + h, 0, (hi - h) * sizeof *w->starts);
		if (w->xstarts)
			memset(w->xstarts + h, 0, (hi - h) * sizeof *w->xstarts);
	}
	r->hi = h;
	r->b *= 2;
	r->lb++;
	set_lim(r);
}

/* The buckets reach time t (coarser as long as they do not). */
static __attribute__((noinline)) void reach_more(struct vms_serve_summary_rec *r, uint64_t t)
{
	while (t > r->origin && (t - r->origin) >> r->lb >= r->B)
		coarsen(r);
}

static inline void reach(struct vms_serve_summary_rec *r, uint64_t t)
{
	if (__builtin_expect(t >= r->lim, 0))   /* (below it the test above is false) */
		reach_more(r, t);
}

/* Fewer buckets per row (the pairs merged in place, as many as before): rows x B <= cells. */
static void shrink(struct vms_serve_summary_rec *r)
{
	while (r->B > SUM_MIN_BUCKETS && (uint64_t)r->nr * r->B > SUM_CELLS) {
		/* a row's buckets [0, B) become [0, B/2) at twice the width: first coarsen, which
		 * keeps B, then drop the upper (empty) half */
		coarsen(r);
		r->B /= 2;
		set_lim(r);
	}
}

static struct srow_rec *row_of(struct vms_serve_summary_rec *r, uint8_t k, uint32_t a, int32_t b,
			       bool vcpu)
{
	if (r->oom)
		return NULL;
	bool ins;
	uint64_t *v = vms_keymap_put(&r->idx, sr_row_key(k, a, b), r->nr, &ins);
	if (!v) {
		r->oom = true;
		return NULL;
	}
	if (!ins)
		return &r->rows[*v];
	if (r->nr >= MAX_ROWS) {
		*v = UINT64_MAX;
		r->oom = true;   /* (more rows than an answer holds: no summary) */
		return NULL;
	}
	if (r->nr == r->cap) {
		uint32_t nc = r->cap ? 2 * r->cap : 16;
		struct srow_rec *nr = realloc(r->rows, nc * sizeof *nr);
		if (!nr) {
			r->oom = true;
			return NULL;
		}
		r->rows = nr;
		r->cap = nc;
	}
	struct srow_rec *w = &r->rows[r->nr++];
	*w = (struct srow_rec){ .kind = k, .a = a, .b = b };
	w->ns = calloc((size_t)r->B * NCAT, sizeof *w->ns);
	w->starts = calloc(r->B, sizeof *w->starts);
	w->xstarts = vcpu ? calloc(r->B, sizeof *w->xstarts) : NULL;
	if (!w->ns || !w->starts || (vcpu && !w->xstarts)) {
		r->oom = true;
		return NULL;
	}
	shrink(r);
	return w;
}

static uint64_t room(const struct srow_rec *w)
{
	return w->cap_list + w->cap_xlist;
}

/* Over budget: the biggest kept lists are given up (their row is summed only). */
static void over_budget(struct vms_serve_summary_rec *r)
{
	while (r->kept > SUM_LIST) {
		struct srow_rec *big = NULL;
		uint64_t most = 0;
		for (uint32_t i = 0; i < r->nr; i++) {
			if (room(&r->rows[i]) > most) {
				most = room(&r->rows[i]);
				big = &r->rows[i];
			}
		}
		if (!big)
			return;
		r->kept -= most;
		free(big->list);
		free(big->xlist);
		big->list = NULL;
		big->xlist = NULL;
		big->nlist = big->nxlist = big->len_list = big->len_xlist = 0;
		big->cap_list = big->cap_xlist = 0;
		big->dropped = big->xdropped = true;
	}
}

/* size bytes more at len of *arr (cap bytes of room) */
static bool push(void *arr, uint64_t *len, uint64_t *cap, size_t size, const void *v)
{
	void **a = arr;
	if (*len + size > *cap) {
		uint64_t nc = *cap ? 2 * *cap : 4096;
		void *na = realloc(*a, nc);
		if (!na)
			return false;
		*a = na;
		*cap = nc;
	}
	memcpy((char *)*a + *len, v, size);
	*len += size;
	return true;
}

/* One more interval (exit) kept whole for its row, while the row has few (SUM_ROW_LIST, or
 * a small share of all: SUM_ROW_SHARE) and the budget lasts; else, or out of memory, the
 * row's list is given up. */
static void keep(struct vms_serve_summary_rec *r, void *list, uint64_t *n, uint64_t *len,
		 uint64_t *cap, bool *dropped, size_t size, const void *v)
{
	if (*dropped)
		return;
	uint64_t was = *cap;
	if ((*n >= SUM_ROW_LIST && *n * SUM_ROW_SHARE > r->acts) ||
	    !push(list, len, cap, size, v)) {
		r->kept -= was;
		free(*(void **)list);
		*(void **)list = NULL;
		*n = *len = *cap = 0;
		*dropped = true;
		return;
	}
	(*n)++;
	if ((r->kept += *cap - was) > SUM_LIST)
		over_budget(r);
}

void vms_serve_summary_rec_fail(struct vms_serve_summary_rec *r)
{
	r->oom = true;
}

void vms_serve_summary_rec_start(struct vms_serve_summary_rec *r, uint64_t t0)
{
	if (!r->started) {
		r->started = true;
		r->origin = t0;
		set_lim(r);
	}
}

int32_t vms_serve_summary_rec_row(struct vms_serve_summary_rec *r, uint8_t kind, uint32_t a,
				  int32_t b)
{
	if (!r->started || r->oom)
		return -1;
	struct srow_rec *w = row_of(r, kind, a, b, kind == ROW_VCPU);
	return w ? (int32_t)(w - r->rows) : -1;
}

/* ival_now's list part: a row still kept whole (the busy rows are given up early, so most
 * intervals skip it; out of line, the bucketing's registers stay few) */
static __attribute__((noinline)) void keep_ival(struct vms_serve_summary_rec *r,
						struct srow_rec *w, const struct ival *v)
{
	uint8_t e[ENC_MAX];
	size_t l = enc_ival(e, v, w->prev_e, w->kind == ROW_PCPU);
	keep(r, &w->list, &w->nlist, &w->len_list, &w->cap_list, &w->dropped, l, e);
	w->prev_e = v->e;
}

/* An interval into its row's buckets: checked (ival_ok) by the caller. */
static inline bool ival_ok(const struct vms_serve_summary_rec *r, int32_t row,
			   const struct ival *v)
{
	return !r->oom && row >= 0 && (uint32_t)row < r->nr && v->e > v->s;
}

static inline void ival_add(struct vms_serve_summary_rec *r, int32_t row, const struct ival *v)
{
	struct srow_rec *w = &r->rows[row];
	reach(r, v->e - 1);
	w->n++;
	r->acts++;
	struct row tmp = { .kind = w->kind };
	uint32_t cat = sr_cat_of(&tmp, v);
	uint64_t s = v->s < r->origin ? r->origin : v->s;
	uint64_t k = (s - r->origin) >> r->lb;
	w->starts[k]++;
	if (s < v->e && v->e - r->origin <= (k + 1) << r->lb) {
		/* within one bucket (most are: a bucket holds 1024 events or more) */
		w->ns[k * NCAT + cat] += v->e - s;
		s = v->e;
		k++;
	}
	while (s < v->e && k < r->B) {
		uint64_t be = r->origin + ((k + 1) << r->lb);
		uint64_t x = v->e < be ? v->e : be;
		w->ns[k * NCAT + cat] += x - s;
		s = x;
		k++;
	}
	if (k > r->hi)
		r->hi = (uint32_t)k;
	if (!w->dropped)
		keep_ival(r, w, v);
}

static void ival_now(struct vms_serve_summary_rec *r, int32_t row, const struct ival *v)
{
	if (ival_ok(r, row, v))
		ival_add(r, row, v);
}

static inline bool exit_ok(const struct vms_serve_summary_rec *r, int32_t row)
{
	return !r->oom && row >= 0 && (uint32_t)row < r->nr && r->rows[row].xstarts;
}

/* An exit into its row's buckets: checked (exit_ok) by the caller. */
static inline void exit_add(struct vms_serve_summary_rec *r, int32_t row, const struct xslice *x)
{
	struct srow_rec *w = &r->rows[row];
	uint64_t bt = x->begin < r->origin ? r->origin : x->begin;
	reach(r, bt > x->t ? bt : x->t);
	w->nx++;
	r->acts++;
	uint64_t k = (bt - r->origin) >> r->lb;
	w->xstarts[k]++;
	if (k + 1 > r->hi)
		r->hi = (uint32_t)(k + 1);
	if (!w->xdropped)
		keep(r, &w->xlist, &w->nxlist, &w->len_xlist, &w->cap_xlist, &w->xdropped, sizeof *x, x);
}

static void exit_now(struct vms_serve_summary_rec *r, int32_t row, const struct xslice *x)
{
	if (exit_ok(r, row))
		exit_add(r, row, x);
}

/* The hold's end: the buckets made as wide as its span needs (doublings over empty
 * buckets), then what it held added in its order. */
static void release(struct vms_serve_summary_rec *r)
{
	r->released = true;
	if (r->nhold)
		reach(r, r->hold_t);
	for (uint32_t i = 0; i < r->nhold; i++) {
		const struct held *h = &r->hold[i];
		if (h->exit)
			exit_now(r, h->row, &h->u.x);
		else
			ival_now(r, h->row, &h->u.v);
	}
	free(r->hold);
	r->hold = NULL;
	r->nhold = 0;
}

/* Held (true), or to be added now (false: released, or no room for the hold). */
static bool hold(struct vms_serve_summary_rec *r, int32_t row, bool exit, const void *p,
		 uint64_t t)
{
	if (r->released)
		return false;
	if (!r->hold && !(r->hold = malloc(SUM_HOLD * sizeof *r->hold))) {
		release(r);
		return false;
	}
	struct held *h = &r->hold[r->nhold++];
	h->row = row;
	h->exit = exit;
	if (exit)
		h->u.x = *(const struct xslice *)p;
	else
		h->u.v = *(const struct ival *)p;
	if (t > r->hold_t)
		r->hold_t = t;
	if (r->nhold == SUM_HOLD || (r->hold_t > r->origin && r->hold_t - r->origin >= SUM_HOLD_NS))
		release(r);
	return true;
}

void vms_serve_summary_rec_ival_at(struct vms_serve_summary_rec *r, int32_t row,
				   const struct ival *v)
{
	if (!ival_ok(r, row, v))
		return;
	/* (after the hold's release, every call: tested here) */
	if (r->released || !hold(r, row, false, v, v->e - 1))
		ival_add(r, row, v);
}

void vms_serve_summary_rec_exit_at(struct vms_serve_summary_rec *r, int32_t row,
				   const struct xslice *x)
{
	if (!exit_ok(r, row))
		return;
	uint64_t bt = x->begin < r->origin ? r->origin : x->begin;
	if (r->released || !hold(r, row, true, x, bt > x->t ? bt : x->t))
		exit_add(r, row, x);
}

static int put(FILE *f, const void *p, size_t n)
{
	return n && fwrite(p, 1, n, f) != n ? -1 : 0;
}

int vms_serve_summary_rec_write(struct vms_serve_summary_rec *r, uint64_t events,
				 struct vms_model *m, FILE *f)
{
	if (!r->released)
		release(r);
	if (!r->started || r->oom || !r->nr)
		return 1;
	/* no finer than one bucket per SUM_EVENTS_PER_BUCKET events (the used span's buckets) */
	uint64_t used = 0;
	for (uint32_t i = 0; i < r->nr; i++)
		for (uint32_t k = r->hi; k-- > used;)
			if (r->rows[i].starts[k] || r->rows[i].ns[k * NCAT] || r->rows[i].ns[k * NCAT + 1] ||
			    r->rows[i].ns[k * NCAT + 2] || r->rows[i].ns[k * NCAT + 3] ||
			    r->rows[i].ns[k * NCAT + 4] || r->rows[i].ns[k * NCAT + 5] ||
			    (r->rows[i].xstarts && r->rows[i].xstarts[k])) {
				used = k + 1;
				break;
			}
	while (used > SUM_MIN_BUCKETS && used > events / SUM_EVENTS_PER_BUCKET + 1) {
		coarsen(r);
		used = (used + 1) / 2;
	}
	uint32_t B = (uint32_t)used;
	char magic[8] = SUM_MAGIC;
	uint32_t h[2] = { B, r->nr };
	int bad = put(f, magic, 8) | put(f, &r->origin, 8) | put(f, &r->b, 8) | put(f, h, 8) |
		  put(f, &events, 8);
	uint32_t nm = vms_model_nr_machines(m);
	bad |= put(f, &nm, 4);
	for (uint32_t i = 0; i < nm; i++) {
		const char *name = sr_machine_name(m, i);
		uint32_t l = (uint32_t)strlen(name);
		bad |= put(f, &l, 4) | put(f, name, l);
	}
	uint16_t *frac = malloc((size_t)B * NCAT * sizeof *frac);
	if (!frac)
		return -1;
	for (uint32_t i = 0; i < r->nr && !bad; i++) {
		const struct srow_rec *w = &r->rows[i];
		uint8_t hb[4] = { w->kind, !w->dropped, w->kind == ROW_VCPU && !w->xdropped, 0 };
		bad |= put(f, hb, 4) | put(f, &w->a, 4) | put(f, &w->b, 4) | put(f, &w->n, 8) |
		       put(f, &w->nx, 8);
		for (size_t k = 0; k < (size_t)B * NCAT; k++) {
			uint64_t v = w->ns[k] > r->b ? r->b : w->ns[k];
			frac[k] = (uint16_t)((v * 65535u + r->b / 2) / r->b);
		}
		bad |= put(f, frac, (size_t)B * NCAT * sizeof *frac);
		bad |= put(f, w->starts, (size_t)B * 4);
		if (w->kind == ROW_VCPU)
			bad |= put(f, w->xstarts, (size_t)B * 4);
		if (hb[1])
			bad |= put(f, &w->nlist, 8) | put(f, &w->len_list, 8) |
			       put(f, w->list, w->len_list);
		if (hb[2])
			bad |= put(f, &w->nxlist, 8) | put(f, w->xlist, w->nxlist * sizeof *w->xlist);
	}
	free(frac);
	return bad ? -1 : 0;
}

/* ---- answering ---- */

struct srow_idx {
	uint8_t kind, has_list, has_xlist;
	uint32_t a;
	int32_t b;
	uint64_t n, nx;
	const uint16_t *frac;
	const uint32_t *starts, *xstarts;   /* (unaligned in the file: read with memcpy) */
	const uint8_t *list;     /* nlist, enc_ival, in len_list bytes */
	uint64_t nlist, len_list;
	const struct xslice *xlist;
	uint64_t nxlist;
};

struct vms_serve_summary {
	uint64_t origin, b;
	uint32_t B, nr;
	struct srow_idx *rows;
	char **names;
	uint32_t nr_names;
	uint64_t events;
	uint64_t *act;           /* B + 1: intervals and exits beginning before bucket k, all rows */
};

void vms_serve_summary_free(struct vms_serve_summary *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->nr_names; i++)
		free(s->names[i]);
	free(s->names);
	free(s->rows);
	free(s->act);
	free(s);
}

static uint32_t u32_at(const uint32_t *p, uint64_t k)
{
	uint32_t v;
	memcpy(&v, (const char *)p + 4 * k, 4);
	return v;
}

static struct vms_serve_summary *load_bad(struct vms_serve_summary *s, struct vms_error *err,
					  size_t off, const char *what)
{
	vms_serve_summary_free(s);
	vms_error_set(err, VMS_ERR_FORMAT, "summaries: %s at byte offset %zu", what, off);
	return NULL;
}

struct vms_serve_summary *vms_serve_summary_load(const void *buf, size_t len,
						 struct vms_error *err)
{
	struct vms_rd r = { buf, len, 0 };
	char magic[8];
	uint32_t h[2];
	struct vms_serve_summary *s = calloc(1, sizeof *s);
	if (!s) {
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	if (!vms_rd_take(&r, magic, 8) || memcmp(magic, SUM_MAGIC, 8) ||
	    !vms_rd_take(&r, &s->origin, 8) || !vms_rd_take(&r, &s->b, 8) || !vms_rd_take(&r, h, 8) ||
	    !vms_rd_take(&r, &s->events, 8))
		return load_bad(s, err, r.off, "header cut");
	s->B = h[0];
	s->nr = h[1];
	if (!s->b || !s->B || s->B > SUM_MAX_BUCKETS || s->nr > MAX_ROWS ||
	    s->origin + (uint64_t)s->B * s->b < s->origin || s->b > UINT64_MAX / s->B)
		return load_bad(s, err, r.off, "bad header");
	uint32_t nm;
	if (!vms_rd_take(&r, &nm, 4) || nm > r.left / 4)
		return load_bad(s, err, r.off, "names cut");
	s->names = calloc(nm ? nm : 1, sizeof *s->names);
	if (!s->names) {
		vms_serve_summary_free(s);
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	for (uint32_t i = 0; i < nm; i++) {
		uint32_t l;
		if (!vms_rd_take(&r, &l, 4) || l > r.left || l > 4096)
			return load_bad(s, err, r.off, "names cut");
		if (!(s->names[i] = calloc(1, (size_t)l + 1))) {
			vms_serve_summary_free(s);
			vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
			return NULL;
		}
		s->nr_names = i + 1;
		vms_rd_take(&r, s->names[i], l);
	}
	s->rows = calloc(s->nr ? s->nr : 1, sizeof *s->rows);
	if (!s->rows) {
		vms_serve_summary_free(s);
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	for (uint32_t i = 0; i < s->nr; i++) {
		struct srow_idx *w = &s->rows[i];
		uint8_t hb[4];
		if (!vms_rd_take(&r, hb, 4) || !vms_rd_take(&r, &w->a, 4) || !vms_rd_take(&r, &w->b, 4) ||
		    !vms_rd_take(&r, &w->n, 8) || !vms_rd_take(&r, &w->nx, 8))
			return load_bad(s, err, r.off, "row cut");
		if (hb[0] > ROW_THREAD || hb[1] > 1 || hb[2] > 1 || hb[3] ||
		    (hb[2] && hb[0] != ROW_VCPU))
			return load_bad(s, err, r.off, "bad row header");
		w->kind = hb[0];
		w->has_list = hb[1];
		w->has_xlist = hb[2];
		w->frac = (const uint16_t *)r.p;
		if (!vms_rd_take(&r, NULL, (size_t)s->B * NCAT * 2))
			return load_bad(s, err, r.off, "buckets cut");
		w->starts = (const uint32_t *)r.p;
		if (!vms_rd_take(&r, NULL, (size_t)s->B * 4))
			return load_bad(s, err, r.off, "buckets cut");
		if (w->kind == ROW_VCPU) {
			w->xstarts = (const uint32_t *)r.p;
			if (!vms_rd_take(&r, NULL, (size_t)s->B * 4))
				return load_bad(s, err, r.off, "buckets cut");
		}
		if (w->has_list) {
			if (!vms_rd_take(&r, &w->nlist, 8) || !vms_rd_take(&r, &w->len_list, 8) ||
			    w->len_list > r.left)
				return load_bad(s, err, r.off, "intervals cut");
			/* read through once: exact_row then trusts them */
			struct dec d = { r.p, (size_t)w->len_list, 0 };
			struct ival v;
			for (uint64_t k = 0; k < w->nlist; k++)
				if (!dec_ival(&d, &v, w->kind == ROW_PCPU))
					return load_bad(s, err, r.off, "intervals cut");
			if (d.left)
				return load_bad(s, err, r.off, "bytes after the intervals");
			w->list = r.p;
			vms_rd_take(&r, NULL, (size_t)w->len_list);
		}
		if (w->has_xlist) {
			if (!vms_rd_take(&r, &w->nxlist, 8) || w->nxlist > r.left / sizeof(struct xslice))
				return load_bad(s, err, r.off, "exits cut");
			w->xlist = (const struct xslice *)r.p;
			vms_rd_take(&r, NULL, w->nxlist * sizeof(struct xslice));
		}
	}
	if (r.left)
		return load_bad(s, err, r.off, "bytes after the rows");
	if (!(s->act = calloc((size_t)s->B + 1, sizeof *s->act))) {
		vms_serve_summary_free(s);
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	for (uint32_t k = 0; k < s->B; k++) {
		uint64_t a = 0;
		for (uint32_t i = 0; i < s->nr; i++)
			a += u32_at(s->rows[i].starts, k) +
			     (s->rows[i].xstarts ? u32_at(s->rows[i].xstarts, k) : 0);
		s->act[k + 1] = s->act[k] + a;
	}
	return s;
}

/* buckets [k0, k1) wholly inside [from, to) */
static void inner(const struct vms_serve_summary *s, uint64_t from, uint64_t to, uint64_t *k0,
		  uint64_t *k1)
{
	*k0 = from <= s->origin ? 0 : (from - s->origin + s->b - 1) / s->b;
	*k1 = to <= s->origin ? 0 : (to - s->origin) / s->b;
	if (*k1 > s->B)
		*k1 = s->B;
	if (*k0 > *k1)
		*k0 = *k1;
}

static uint64_t sum_range(const uint32_t *p, uint64_t k0, uint64_t k1)
{
	uint64_t n = 0;
	for (uint64_t k = k0; k < k1; k++)
		n += u32_at(p, k);
	return n;
}

/* Can row w be answered for q? A kept row always; a summed one when its buckets wholly in
 * the window hold more than 2 per pixel (a replay would have summed it too). */
static bool answerable(const struct vms_serve_summary *s, const struct srow_idx *w,
		       const struct q *q)
{
	uint64_t k0, k1;
	inner(s, q->from, q->to, &k0, &k1);
	uint64_t cap = 2ull * q->px;
	if (!w->has_list && sum_range(w->starts, k0, k1) <= cap)
		return false;
	if (w->kind == ROW_VCPU && !w->has_xlist && sum_range(w->xstarts, k0, k1) <= cap)
		return false;
	return true;
}

/* The buckets' share of [from, to), spread evenly over each bucket, into the row's pixels. */
static int sum_row(const struct vms_serve_summary *s, const struct srow_idx *w, struct q *q,
		   struct row *r)
{
	if (!(r->sum = calloc((size_t)q->px * NCAT, sizeof *r->sum)))
		return -1;
	uint64_t kf = q->from <= s->origin ? 0 : (q->from - s->origin) / s->b;
	uint64_t n = 0;
	for (uint64_t k = kf; k < s->B; k++) {
		uint64_t bs = s->origin + k * s->b, be = bs + s->b;
		if (bs >= q->to)
			break;
		uint64_t lo = bs < q->from ? q->from : bs, hi = be > q->to ? q->to : be;
		if (lo >= hi)
			continue;
		n += ((uint64_t)u32_at(w->starts, k) * (hi - lo) + s->b / 2) / s->b;
		for (uint32_t c = 0; c < NCAT; c++) {
			uint16_t fr;
			memcpy(&fr, (const char *)w->frac + 2 * (k * NCAT + c), 2);
			if (!fr)
				continue;
			/* this category's ns per ns of the bucket, over [lo, hi) pixel by pixel */
			uint64_t p = (lo - q->from) / q->width, x = lo;
			while (x < hi && p < q->px) {
				uint64_t pe = q->from + (p + 1) * q->width;
				if (p == q->px - 1u || pe > hi)
					pe = hi;
				r->sum[p * NCAT + c] += (uint64_t)((double)(pe - x) * fr / 65535.0 + 0.5);
				x = pe;
				p++;
			}
		}
	}
	r->n = n ? n : 1;
	return 0;
}

static int xcount_row(const struct vms_serve_summary *s, const struct srow_idx *w, struct q *q,
		      struct row *r)
{
	if (!(r->xcount = calloc(q->px, sizeof *r->xcount)))
		return -1;
	for (uint64_t k = 0; k < s->B; k++) {
		uint64_t bs = s->origin + k * s->b;
		if (bs >= q->to)
			break;
		uint64_t c = u32_at(w->xstarts, k);
		if (!c || bs + s->b <= q->from)
			continue;
		/* a bucket cut by the window's edge: its share of the exits, as of the ns */
		uint64_t at = bs < q->from ? q->from : bs;
		uint64_t end = bs + s->b > q->to ? q->to : bs + s->b;
		c = (c * (end - at) + s->b / 2) / s->b;
		uint64_t p = (at - q->from) / q->width;
		r->xcount[p < q->px ? p : q->px - 1] += c;
		r->nx += c;
	}
	return 0;
}

/* A kept row: what a replay of [from, to) gives it (serve_window.c's on_* and on_exit_end). */
static void exact_row(const struct srow_idx *w, struct q *q, struct row *r)
{
	struct dec d = { w->list, (size_t)w->len_list, 0 };
	struct ival v;
	for (uint64_t i = 0; i < w->nlist && dec_ival(&d, &v, w->kind == ROW_PCPU); i++) {
		if (v.e <= q->from || v.s >= q->to)
			continue;
		if (v.s < q->from)
			v.s = q->from;
		if (v.e > q->to)
			v.e = q->to;
		v.comm[sizeof v.comm - 1] = 0;
		sr_add(q, r, &v);
	}
	for (uint64_t i = 0; w->has_xlist && i < w->nxlist; i++) {
		struct xslice x;
		memcpy(&x, &w->xlist[i], sizeof x);
		/* published in the window: its end (or gap) in it, or still open at its end */
		if (x.t < q->from || x.begin >= q->to)
			continue;
		if (x.t >= q->to && x.how != VMS_EXIT_UNFINISHED) {
			x.how = VMS_EXIT_UNFINISHED;
			x.end = 0;
		}
		sr_add_exit(q, r, &x);
	}
}

int vms_serve_summary_window(const struct vms_serve_summary *s, uint64_t from, uint64_t to,
			     uint32_t px, const char *only, uint64_t replay_below, FILE *f,
			     struct vms_error *err)
{
	/* (before the first event a replay knows the vCPUs' states unknown from the window's
	 * start: the buckets begin at the first event) */
	if (!s || !px || px > MAX_PX || from >= to || from < s->origin)
		return 0;
	struct q q = { .from = from, .to = to, .px = px, .only = only,
		       .names = (const char *const *)s->names, .nr_names = s->nr_names };
	q.width = (to - from + px - 1) / px;
	/* the events of the window, estimated by the buckets it overlaps: few are replayed */
	uint64_t k0 = from <= s->origin ? 0 : (from - s->origin) / s->b;
	uint64_t k1 = to <= s->origin ? 0 : (to - s->origin + s->b - 1) / s->b;
	k0 = k0 > s->B ? s->B : k0;
	k1 = k1 > s->B ? s->B : k1 < k0 ? k0 : k1;
	double share = s->act[s->B] ? (double)(s->act[k1] - s->act[k0]) / (double)s->act[s->B] : 0;
	if (share * (double)s->events < (double)(replay_below ? replay_below : SUM_REPLAY_EVENTS))
		return 0;
	for (uint32_t i = 0; i < s->nr; i++) {
		char id[48];
		sr_row_id(id, sizeof id, s->rows[i].kind, s->rows[i].a, s->rows[i].b);
		if ((!only || !strcmp(id, only)) && !answerable(s, &s->rows[i], &q))
			return 0;
	}
	q.rows = calloc(MAX_ROWS, sizeof *q.rows);
	q.hash = calloc(2 * MAX_ROWS, sizeof *q.hash);
	int st = -1;
	if (!q.rows || !q.hash)
		goto oom;
	for (uint32_t i = 0; i < s->nr; i++) {
		const struct srow_idx *w = &s->rows[i];
		struct row *r = sr_row_get(&q, w->kind, w->a, w->b);
		if (!r)
			continue;
		if (w->has_list || w->has_xlist)
			exact_row(w, &q, r);
		if (!w->has_list && sum_row(s, w, &q, r) < 0)
			goto oom;
		if (w->kind == ROW_VCPU && !w->has_xlist && xcount_row(s, w, &q, r) < 0)
			goto oom;
		if (q.oom)
			goto oom;
	}
	/* rows with nothing in the window are not the window's */
	uint32_t kept = 0;
	for (uint32_t i = 0; i < q.nr_rows; i++) {
		struct row *r = &q.rows[i];
		bool any = r->n || r->nx;
		if (r->sum && !r->iv) {
			any = false;
			for (size_t k = 0; k < (size_t)px * NCAT && !any; k++)
				any = r->sum[k] != 0;
			any |= r->nx != 0;
		}
		if (any)
			q.rows[kept++] = *r;
		else {
			free(r->iv);
			free(r->sum);
			free(r->xs);
			free(r->xcount);
		}
	}
	q.nr_rows = kept;
	qsort(q.rows, q.nr_rows, sizeof *q.rows, sr_row_cmp);
	fprintf(f, "{\"from\":%" PRIu64 ",\"to\":%" PRIu64 ",\"px\":%u,\"pixel_ns\":%" PRIu64
		",\"rows_truncated\":false,\"checkpoint_events\":0,\"summary_ns\":%" PRIu64
		",\"rows\":[", from, to, px, q.width, s->b);
	for (uint32_t i = 0; i < q.nr_rows; i++) {
		if (i)
			fputc(',', f);
		sr_put_row(f, &q, NULL, &q.rows[i]);
	}
	fputs("]}\n", f);
	st = 1;
	goto out;
oom:
	vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
out:
	sr_q_free(&q);
	return st;
}
