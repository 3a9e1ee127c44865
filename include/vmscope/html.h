/* vmscope: the HTML report, one self-contained page (no network, no third-party code): the
 * text summary of `vmscope report`, an interactive timeline (the vCPUs with Trace Compass's
 * colours, the fused physical-CPU view, the guest threads), VM exit latency histograms per
 * reason and the table of who took the CPU.
 *
 * The writer is a consumer of the vCPU state machine's observations (vmscope/observe.h) and
 * of the fused view's intervals (vmscope/pcpu_view.h). It keeps a multi-resolution summary,
 * never the events: per row a fixed number of time buckets (lib/output/html_summary.h), so
 * its memory and the page's size are bounded whatever the length of the trace:
 * at most vms_html_row_bound() bytes per timeline row, at most VMS_HTML_MAX_THREAD_ROWS
 * guest-thread rows and VMS_HTML_MAX_NAMES names. The whole page is at most
 *   16 KiB + the script and style + 18 x the title + 6 x the summary
 *   + per row (vCPUs, physical CPUs, <= 128 guest threads): the row bound + 896 bytes
 *     + 6 x its machine's name
 *   + per name (<= 16384): 388 bytes
 *   + per guest with exits: <= 16 histograms of 27 KiB + 12 x its name
 *   + per vCPU: a steal table of <= 13952 bytes + 6 x its machine's name
 *   + when the trace has at most VMS_HTML_EXACT_MAX (or opts.exact_max) pieces and exits,
 *     those exactly (html_exact.c), each within VMS_HTML_EXACT_PIECE_BYTES/_EXIT_BYTES, and
 *     the drill-down's script
 * (html_page.c: page_bound), a bound set by the machines and their CPUs (and the budget),
 * never by the trace's length; the page states it (data "page_bound_bytes"). */
#ifndef VMSCOPE_HTML_H
#define VMSCOPE_HTML_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vmscope/analysis.h"
#include "vmscope/model.h"
#include "vmscope/observe.h"
#include "vmscope/pcpu_view.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VMS_HTML_MAX_THREAD_ROWS 128u   /* guest threads drawn: the first ones seen running */
/* vCPUs (in the model's order) and physical CPUs (the first seen) drawn: a row holds up to
 * vms_html_row_bound() bytes while the page is made, so a small hostile trace naming 200,000
 * vCPU threads would otherwise ask for 100 GiB (issue 7.5); --machine/--vcpu choose others */
#define VMS_HTML_MAX_VCPU_ROWS 1024u
#define VMS_HTML_MAX_PCPU_ROWS 1024u
#define VMS_HTML_MAX_NAMES 16384u       /* distinct slice names (threads, exit reasons) */
#define VMS_HTML_NAME_MAX 64u           /* bytes of a name (longer ones are cut) */
#define VMS_HTML_MAX_REASONS 16u        /* exit latency histograms drawn per guest */
/* The static page holds the exact intervals (every piece of every row and every VM exit,
 * about 40 bytes each in the page: kvm-hip24's 43,673 take 1.8 MB) while the trace has at
 * most this many, else its summary alone. A record's bound in the page (page_bound): a
 * piece two 20-digit times, its state and name; an exit also its reason, RIP, info fields,
 * CPU and threads. */
#define VMS_HTML_EXACT_MAX 250000u
#define VMS_HTML_EXACT_PIECE_BYTES 56u
#define VMS_HTML_EXACT_EXIT_BYTES 192u

/* The page's exit-duration histograms (and `vmscope serve`'s /api/stats): bin b holds
 * [2^(b/4), 2^((b+1)/4)) ns, found from the exponent and the two bits below it; up to 2^40
 * ns (18 minutes), longer in the last bin. */
#define VMS_HTML_HIST_BINS 160u
static inline unsigned vms_html_hist_bin(uint64_t ns)
{
	if (ns < 2)
		return 0;
	unsigned e = 63u - (unsigned)__builtin_clzll(ns);
	unsigned frac = (unsigned)((e >= 2 ? ns >> (e - 2) : ns << (2 - e)) & 3u);
	unsigned b = 4 * e + frac;
	return b < VMS_HTML_HIST_BINS ? b : VMS_HTML_HIST_BINS - 1;
}

struct vms_html;

/* The rows to keep (--machine, --vcpu; vmscope/filter.h), resolved in the model of each
 * pass: machine NULL and vcpu -1 keep everything. */
struct vms_html_opts {
	const char *machine;           /* a machine's name (must outlive the writer), or NULL */
	int32_t vcpu;                  /* a vCPU number, or -1 */
	uint64_t exact_max;            /* the static page's budget of exact pieces and exits
	                                  (0: VMS_HTML_EXACT_MAX) */
	bool summary_only;             /* no exact intervals, whatever the trace's size */
	bool served;                   /* the page is served (vmscope serve): its drill-down,
	                                  asking the server, is its timeline, so the writer keeps
	                                  no summary timeline nor fused view, only the exit
	                                  histograms and the steal tables */
};

/* A writer (opts NULL: everything). With a model (built, complete; it must outlive the
 * writer) it is ready for vms_analysis_observe; without, the observer's reset gives it the
 * model of each pass, which is what a session does. NULL when out of memory. */
struct vms_html *vms_html_new(const struct vms_model *model, const struct vms_html_opts *opts);
void vms_html_free(struct vms_html *h);
/* The observer to subscribe (ctx = the writer). It embeds the fused physical-CPU view and
 * has a reset (everything is kept until vms_html_write), so it takes part in a session's
 * checked single pass: the traces are read once when their metadata links them. */
struct vms_observer vms_html_observer(struct vms_html *h);

/* What the page shows besides the timeline (all may be NULL / 0). */
struct vms_html_page {
	const char *title;             /* the page's title (e.g. the trace files) */
	const char *summary;           /* the text of `vmscope report` */
	const struct vms_analysis *analysis; /* finished: the steal tables */
	uint64_t events;               /* events read */
	const char *time_unit;         /* "ns" (NULL) or "cycles": the unit of every time */
	bool serve;                    /* served by `vmscope serve`: the page may ask its server
	                                  (same origin) for exact windows (html/serve.js) */
};

/* Write the page (after the run has finished). Returns 0, VMS_ERR_NOMEM when out of memory
 * (the page's data is built in memory first) or VMS_ERR_IO on a write error: the two are
 * told apart so that running out of memory is never said as "cannot write". */
int vms_html_write(struct vms_html *h, FILE *f, const struct vms_html_page *page);

/* The bound of one timeline row in the page, bytes (base64 included). */
uint64_t vms_html_row_bound(void);

#ifdef __cplusplus
}
#endif
#endif
