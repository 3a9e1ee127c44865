/* The HTML report's timeline summary: per row, a fixed number of time buckets that keep,
 * for each state, the time spent in it, the number of slices that begin in the bucket and
 * the name of the longest piece of a slice in it. The page draws from this summary at every
 * zoom level; it never holds the events themselves.
 *
 * Why buckets and not intervals: a page must open in about a second whatever the length of
 * the trace, so its size must not grow with the trace. The summary starts with 1 ns buckets
 * and doubles the width of every row's buckets (merging them in pairs) whenever the time
 * reaches past the last bucket, so memory is rows x buckets whatever the trace length,
 * and the span does not need to be known in advance (the observations stream).
 *
 * Why the number of buckets per row shrinks as rows are added: 16384 buckets of 36 bytes
 * are 576 KiB per row, and a page may draw 2,176 rows (1,024 vCPUs, 1,024 CPUs, 128
 * threads: 1.2 GiB). The summary keeps at
 * most HS_BUDGET buckets over all rows: a row past that halves every row's buckets (merged in
 * pairs, the width doubled, as when the time runs past the end), down to HS_MIN_BUCKETS per
 * row. Up to 256 rows keep all 16384; 2,176 rows keep 1,024 each (80 MiB).
 *
 * Pieces must be added in time order within a row (rows are independent of each other). */
#ifndef VMS_HTML_SUMMARY_H
#define VMS_HTML_SUMMARY_H

#include <stdint.h>
#include <stdio.h>

#define HS_BUCKETS 16384u      /* buckets per row at the finest level, at most (a power of two) */
#define HS_MIN_BUCKETS 1024u   /* ... and at least, however many rows */
#define HS_BUDGET (1u << 22)   /* buckets over all rows, at most (while rows x HS_MIN_BUCKETS fit) */
#define HS_STATES 6u           /* states per row (their meaning is the row kind's) */
#define HS_COARSEST 256u       /* the coarsest level written has at most this many buckets */
#define HS_NO_WHO 0u           /* who index meaning "nothing" (index 0 of the name table) */

struct hs_bucket {
	uint32_t ns[HS_STATES];  /* time per state, in units of 2^shift ns */
	uint32_t count;          /* slices (maximal runs of one state) beginning here */
	uint32_t who;            /* name of the longest piece here */
	uint32_t longest;        /* its length, in units of 2^shift ns */
};

struct hs_row {
	struct hs_bucket *b;     /* nb of the summary */
	uint64_t last_end;       /* end of the last piece added, 0 before any */
	int last_state;          /* state of the last piece, -1 before any */
	uint64_t slices;         /* slices begun in this row */
};

struct hs_summary {
	uint64_t t0;             /* time of bucket 0's start (reference ns) */
	uint64_t width;          /* bucket width, ns (a power of two) */
	unsigned lw;             /* log2 width */
	uint32_t nb;             /* buckets per row now (a power of two, HS_MIN_BUCKETS..HS_BUCKETS) */
	unsigned shift;          /* stored times are ns >> shift (keeps them in 32 bits) */
	int started;
	uint64_t t_max;          /* the latest end seen */
	uint32_t nr_rows, cap_rows;
	struct hs_row **rows;
};

void hs_init(struct hs_summary *s);
void hs_free(struct hs_summary *s);
/* Start the time axis at t0 (before any piece); without it, the first piece's start is t0. */
void hs_start(struct hs_summary *s, uint64_t t0);
/* A new row; its index, or -1 when out of memory. */
int hs_add_row(struct hs_summary *s);
/* [start, end) of `row` was in `state` (< HS_STATES), named `who`. A piece that continues the
 * row's previous one (start == its end) in the same state continues its slice; anything else
 * begins a slice. Empty pieces are ignored; a piece starting before the previous one's end
 * is clipped to it (rows are drawn left to right). */
void hs_add(struct hs_summary *s, uint32_t row, uint64_t start, uint64_t end, unsigned state,
	    uint32_t who);

/* The number of buckets the data covers at the finest level (up to t_max). */
uint32_t hs_used(const struct hs_summary *s);
/* The levels written: level l has buckets of width << l; the last level has at most
 * HS_COARSEST buckets. */
unsigned hs_levels(const struct hs_summary *s);
/* The encoded bytes of one row (all levels, then the finest level's shares), appended to
 * *buf (realloc'd; *len updated). Format (the page's timeline.js decodes it):
 *   for each level l = 0 .. levels-1: varint n_runs, then n_runs runs of
 *       varint run_length, u8 state (7 = no data), varint count, varint who
 *     (a run = consecutive buckets with the same dominant state, count and who)
 *   then the finest level's shares: varint n_runs, runs of
 *       varint run_length, u8 mask of states present, one u8 per state in the mask:
 *       its share of the bucket width in 1/255.
 * Returns 0, or -1 when out of memory. */
int hs_encode_row(const struct hs_summary *s, uint32_t row, uint8_t **buf, size_t *len,
		  size_t *cap, size_t *section);
/* hs_encode_row's `section` (may be NULL) receives HS_MAX_LEVELS + 1 offsets: where each
 * level's runs begin, then where the shares begin, relative to the row's first byte (the page
 * decodes only the levels it draws). */
#define HS_MAX_LEVELS 16u
/* The bound of hs_encode_row's output for one row, in bytes (whatever the trace). */
size_t hs_row_bound(void);

/* For tests: the merged bucket i of `row` at `level` (dominant state via *state, -1 when
 * empty). */
struct hs_bucket hs_bucket_at(const struct hs_summary *s, uint32_t row, unsigned level,
			      uint32_t i, int *state);

#endif
