/* vmscope internal: the rows of `vmscope serve`'s answers (serve_window.c), shared with the
 * summaries (serve_summary.c), which answer wide windows with the same rows from the index. */
#ifndef VMS_SERVE_ROWS_H
#define VMS_SERVE_ROWS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vmscope/pcpu_view.h"
#include "vmscope/serve.h"

#define MAX_PX 4096u
#define MAX_ROWS 4096u   /* rows of one answer (vCPUs + CPUs + guest threads) */
#define NCAT 6u          /* categories of a row's summary (vCPU states: the most) */

enum row_kind { ROW_VCPU, ROW_PCPU, ROW_THREAD };

struct ival {
	uint64_t s, e;
	int32_t a, b, c;        /* vCPU: status, state; thread: reason, exit reason, host tid;
	                           pCPU: guest, vcpu, tid */
	uint32_t isa;
	char comm[24];          /* pCPU: the occupant's name */
};

struct xslice {
	uint64_t begin, end;    /* end 0 unless ended */
	uint64_t t;             /* when it was published (its end, or the gap that lost it) */
	uint64_t rip, info1, info2;
	uint32_t isa, reason, host_cpu;
	int32_t host_tid, gtid;
	int how;
};

struct row {
	uint8_t kind;
	uint32_t a;             /* machine / host */
	int32_t b;              /* vcpu / cpu / tid */
	uint64_t n;             /* intervals in the window */
	struct ival *iv;        /* exact while n <= 2 px */
	uint64_t *sum;          /* else px x NCAT ns */
	uint64_t nx;            /* exits */
	struct xslice *xs;      /* exact while nx <= 2 px */
	uint64_t *xcount;       /* else per pixel */
};

struct q {
	uint64_t from, to, width;
	uint32_t px;
	const char *only;       /* a row id, or NULL */
	struct row *rows;
	uint32_t nr_rows;
	uint32_t *hash;         /* 2 x MAX_ROWS slots, index + 1 */
	bool oom, full;
	struct vms_session *s;
	const char *const *names;  /* the machines' names when there is no model (summaries) */
	uint32_t nr_names;
};


/* A row's key in a map or cache: kind, machine, vcpu/cpu/tid */
static inline uint64_t sr_row_key(uint8_t k, uint32_t a, int32_t b)
{
	return (uint64_t)k << 62 | (uint64_t)(a & 0x3fffffffu) << 32 | (uint32_t)b;
}

/* What a row keeps of the pipeline's intervals and exits (the window's and the summary's). */
struct ival sr_ival_vcpu(const struct vms_vcpu_interval *iv);
struct ival sr_ival_thread(const struct vms_thread_interval *iv);
struct ival sr_ival_pcpu(const struct vms_pcpu_interval *iv);
struct xslice sr_xslice(const struct vms_obs_exit *o);
const char *sr_how_name(int how);
void sr_row_id(char *buf, size_t len, uint8_t k, uint32_t a, int32_t b);
/* The row (k, a, b) of q, made when new; NULL when q has another one only, or is full. */
struct row *sr_row_get(struct q *q, uint8_t k, uint32_t a, int32_t b);
/* Add ns of [s, e) to the pixels it covers, in category cat. */
void sr_fold(const struct q *q, uint64_t *sum, uint64_t s, uint64_t e, uint32_t cat);
/* The summary category of an interval of row r (every interval of a run asks: inline) */
static inline uint32_t sr_cat_of(const struct row *r, const struct ival *v)
{
	if (r->kind == ROW_VCPU)
		return (uint32_t)v->b < NCAT ? (uint32_t)v->b : 0;
	if (r->kind == ROW_THREAD)
		return (uint32_t)v->a < NCAT ? (uint32_t)v->a : 0;
	/* pCPU: 0 unknown, 1 host idle, 2 host thread, 3 guest mode */
	return v->a >= 0 ? 3 : v->c < 0 ? 0 : v->c == 0 ? 1 : 2;
}
/* An interval of the window: kept exactly while there are at most 2 per pixel, then folded. */
void sr_add(struct q *q, struct row *r, const struct ival *v);
/* An exit of the window, likewise (counts per pixel past 2 per pixel). */
void sr_add_exit(struct q *q, struct row *r, const struct xslice *x);
const char *sr_machine_name(struct vms_model *m, uint32_t i);
void sr_put_str(FILE *f, const char *key, const char *v);
/* m: the model, for the machines' names; NULL: q's names */
void sr_put_row(FILE *f, const struct q *q, struct vms_model *m, const struct row *r);
void sr_q_free(struct q *q);
/* qsort: rows by kind, machine, then vCPU / CPU / tid */
int sr_row_cmp(const void *x, const void *y);

/* serve_summary.c: the recorder the rows accumulator feeds (vmscope/serve.h has the rest) */
struct vms_serve_summary_rec;
struct vms_serve_summary_rec *vms_serve_summary_rec_new(void);
void vms_serve_summary_rec_free(struct vms_serve_summary_rec *r);
void vms_serve_summary_rec_start(struct vms_serve_summary_rec *r, uint64_t t0);
/* Out of memory: the recorder writes no summary. */
void vms_serve_summary_rec_fail(struct vms_serve_summary_rec *r);
/* The recorder's row (kind, a, b), made when new; -1 before the start, when out of memory
 * or with too many rows. Rows are looked up once and the index kept (the accumulator's
 * cache): an interval costs its buckets, not a map's probe. */
int32_t vms_serve_summary_rec_row(struct vms_serve_summary_rec *r, uint8_t kind, uint32_t a,
				  int32_t b);
/* An interval (an exit: row a vCPU's) of that row; nothing for row -1 or an empty interval */
void vms_serve_summary_rec_ival_at(struct vms_serve_summary_rec *r, int32_t row,
				   const struct ival *v);
void vms_serve_summary_rec_exit_at(struct vms_serve_summary_rec *r, int32_t row,
				   const struct xslice *x);
/* 0 written, 1 nothing to write (no rows, too many), -1 the write failed */
int vms_serve_summary_rec_write(struct vms_serve_summary_rec *r, uint64_t events,
				struct vms_model *m, FILE *f);

#endif
