/* vmscope internal: the HTML report writer's state, shared by html_observer.c (what the
 * observations make of the rows) and html_page.c (the page). include/vmscope/html.h is the
 * contract. */
#ifndef VMS_HTML_INTERNAL_H
#define VMS_HTML_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "html_summary.h"
#include "model/keymap.h"
#include "vmscope/filter.h"
#include "vmscope/html.h"

enum html_row_kind { HTML_ROW_VCPU, HTML_ROW_PCPU, HTML_ROW_THREAD };

/* States of a physical-CPU row (the fused view) */
enum html_pcpu_state {
	HTML_PCPU_UNKNOWN, HTML_PCPU_IDLE, HTML_PCPU_HOST, HTML_PCPU_VMM, HTML_PCPU_GUEST,
	HTML_PCPU_GUEST_IDLE
};
/* vCPU and thread rows use enum vms_vcpu_state (a thread's row shows its vCPU's state while
 * the thread is current on it); a thread's row uses IDLE, which a thread never is, for the
 * time it is on no vCPU. */
#define HTML_THREAD_OFF VMS_STATE_IDLE

/* A row being drawn: the piece open since `since` in `state`, named `who`. */
struct html_row {
	enum html_row_kind kind;
	uint32_t machine;        /* vCPU, thread: the guest; pCPU: the host */
	int32_t id;              /* vCPU number, CPU number or guest tid */
	uint32_t label;          /* name index of the row's label */
	int open;
	uint64_t since;
	unsigned state;
	uint32_t who;
};

/* The per-vCPU tracking of the observer */
struct html_vcpu {
	int32_t row;             /* row index, -1 when the vCPU is beyond the model */
	unsigned state;          /* enum vms_vcpu_state shown now */
	int32_t gtid;            /* guest thread current, -1 unknown */
	uint32_t gname;          /* its name index */
	int32_t trow;            /* the row of that guest thread, -1 none */
	uint32_t who;            /* the vCPU's slice name now */
	int32_t layer;           /* the machine of its state's cause (observe.h), -1 none */
};

/* Exit latency histogram of one (guest, isa, reason): bins of a quarter power of two */
#define HTML_HIST_BINS VMS_HTML_HIST_BINS   /* 2^(bin/4) ns (vmscope/html.h) */
struct html_hist {
	uint32_t machine, isa, reason;
	uint64_t count, unfinished, lost;
	uint64_t bins[HTML_HIST_BINS];
};

/* The exact records of the static page (html_exact.c) */
struct html_piece {
	uint64_t s, e;
	uint32_t row, who;
	uint8_t state;
};
struct html_xrec {
	uint64_t begin, end, rip, info1, info2;
	uint32_t row, isa, reason, host_cpu;
	int32_t host_tid, gtid;
	uint8_t how;
};
struct html_exact {
	uint64_t max;                /* pieces and exits held at most */
	uint64_t seen;               /* pieces and exits of the run */
	bool over, oom;              /* past the budget (or short of memory): none held */
	struct html_piece *p;
	struct html_xrec *x;
	size_t np, nx;
	uint32_t capp, capx;
};

struct vms_html {
	struct vms_html_opts opts;
	struct vms_filter filter;    /* opts resolved in the current model */
	struct vms_pcpu_view *pv;    /* the fused view, fed by this writer's observer */
	struct vms_observer pvo;
	const struct vms_model *model;
	bool nested;                 /* vms_model_nested: slices name the layer of their cause */
	struct hs_summary sum;
	struct html_row *rows;       /* parallel to sum.rows */
	uint32_t nr_rows, cap_rows;
	/* vCPUs: index = vcpu_base[machine] + vcpu */
	uint32_t *vcpu_base, nr_vcpus;
	struct html_vcpu *vcpus;
	/* (machine, tid) -> row + 1 of guest threads; UINT64_MAX - 1 marks one over the cap */
	struct vms_keymap threads;
	uint32_t nr_thread_rows, threads_omitted;
	uint32_t nr_vcpu_rows, vcpus_omitted, nr_pcpu_rows, pcpus_omitted;
	/* (host, cpu) -> row + 1 of physical CPUs */
	struct vms_keymap pcpus;
	/* names: index 0 is "" */
	char **names;
	uint32_t nr_names, cap_names, names_dropped;
	struct vms_keymap name_index;   /* FNV-1a hash -> index */
	struct vms_keymap name_cache;   /* a name's parts -> index (html_observer.c) */
	/* in front of name_cache and pcpus, direct-mapped (key + 1, value): nearly every
	 * observation asks them, and a map's probe cost more than what it is asked for */
	struct html_recent { uint64_t key1, val; } name_recent[256], pcpu_recent[64];
	uint32_t n_idle, n_off, n_instead_idle, n_polling, n_host_idle, n_hyp, n_unknown_thread,
		 n_unattributed;
	struct html_hist *hists;
	uint32_t nr_hists, cap_hists;
	uint64_t t_first, t_end;
	int started, oom;
	uint64_t page_bound;         /* the page's size at most (html_page.c) */
	bool cycles;                 /* times are cycles, not ns (the page says so) */
	struct html_exact exact;     /* the static page's exact intervals, within the budget */
};

/* The name's index (interned), 0 when the table is full or out of memory. */
uint32_t html_name(struct vms_html *h, const char *s);
uint32_t html_namef(struct vms_html *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Rows: add one; move a row's open piece to a new state at t; close it at t. */
int html_row_new(struct vms_html *h, enum html_row_kind kind, uint32_t machine, int32_t id,
		 uint32_t label);
void html_row_set(struct vms_html *h, uint32_t row, uint64_t t, unsigned state, uint32_t who);
void html_row_close(struct vms_html *h, uint32_t row, uint64_t t);
/* The exact records (html_exact.c): a row's piece [s, e); a VM exit of a vCPU row; the
 * JSON the page reads, rows in the page's order (order[k]: the k-th row drawn). */
void html_exact_piece(struct vms_html *h, uint32_t row, uint64_t s, uint64_t e, unsigned state,
		      uint32_t who);
void html_exact_exit(struct vms_html *h, uint32_t row, const struct vms_obs_exit *o);
void html_exact_json(struct vms_html *h, FILE *f, const uint32_t *order);
void html_exact_free(struct html_exact *x);
/* The fused view's sink (ctx = the writer) */
void vms_html_pcpu_interval(void *h, const struct vms_pcpu_interval *iv);

#endif
