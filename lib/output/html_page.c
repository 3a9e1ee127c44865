/* The HTML report's page: one self-contained file. Its style and script are the repository's
 * lib/output/html/style.css and timeline.js, embedded at build time (html_assets.c, made by
 * lib/output/html/embed.py); the data is a JSON object (rows, names, time axis) and one
 * base64 block holding every row's encoded summary (html_summary.h). A Content Security
 * Policy forbids every fetch: the page cannot use the network. */
#include <stdlib.h>
#include <string.h>

#include "html_internal.h"
#include "vmscope/clock.h"
#include "vmscope/writers.h"

extern const char vms_html_css[];
extern const char vms_html_js[];
extern const char vms_html_serve_js[];

uint64_t vms_html_row_bound(void)
{
	/* base64: 4 characters per 3 bytes, a line break every 76 */
	uint64_t chars = ((uint64_t)hs_row_bound() + 2) / 3 * 4;
	return chars + chars / 76 + 1;
}

/* The static page holds the exact records (the server's page asks the server instead) */
static bool exact_held(const struct vms_html *h, const struct vms_html_page *pg)
{
	return !(pg && pg->serve) && !h->exact.over;
}

/* The page's size, bounded by the model and the writer's caps, never by the trace's length:
 * what is written below, section by section, at its largest. A byte of text from a trace
 * takes at most 6 bytes once escaped (HTML "&quot;", JSON "\u00XX" or "\ufffd"). */
#define PAGE_TEXT_BOUND 16384u    /* the page's own words, tags and numbers outside sections */
#define ROW_JSON_BOUND 512u       /* a row's entry in the data but its label and machine */
#define HIST_BOUND (HTML_HIST_BINS * 160u + 2048u)  /* one histogram's figure, its name
                                                       (exit reasons are the tool's) */
#define STEAL_ROW_BOUND (6u * VMS_HTML_NAME_MAX + 256u)

static uint64_t page_bound(const struct vms_html *h, const struct vms_html_page *pg,
			   const struct vms_analysis *a)
{
	bool exact = exact_held(h, pg);
	uint64_t b = PAGE_TEXT_BOUND + strlen(vms_html_css) + strlen(vms_html_js) +
		     (pg && pg->serve ? strlen(vms_html_serve_js) + 4096 : 0);
	if (exact)   /* the drill-down and its records */
		b += strlen(vms_html_serve_js) + 4096 + 64 * (uint64_t)h->nr_hists +
		     h->exact.np * (uint64_t)VMS_HTML_EXACT_PIECE_BYTES +
		     h->exact.nx * (uint64_t)VMS_HTML_EXACT_EXIT_BYTES;
	b += 6 * 3 * (uint64_t)strlen(pg && pg->title ? pg->title : "");   /* title, header, data */
	b += 6 * (uint64_t)strlen(pg && pg->summary ? pg->summary : "");
	for (uint32_t i = 0; i < h->nr_rows; i++) {
		const struct vms_machine *mc = vms_model_machine_c(h->model, h->rows[i].machine);
		b += vms_html_row_bound() + ROW_JSON_BOUND + 6 * VMS_HTML_NAME_MAX +
		     6 * (uint64_t)strlen(mc && mc->name ? mc->name : "?");
	}
	b += (uint64_t)h->nr_names * (6 * VMS_HTML_NAME_MAX + 4);
	/* histograms: at most VMS_HTML_MAX_REASONS drawn per guest, a heading per guest */
	uint32_t nm = vms_model_nr_machines(h->model);
	for (uint32_t m = 0; m < nm; m++) {
		uint32_t n = 0;
		for (uint32_t i = 0; i < h->nr_hists; i++)
			n += h->hists[i].machine == m;
		const struct vms_machine *mc = vms_model_machine_c(h->model, m);
		uint64_t name = 6 * (uint64_t)strlen(mc && mc->name ? mc->name : "?");
		if (n)
			b += 512 + name + (uint64_t)(n < VMS_HTML_MAX_REASONS ? n : VMS_HTML_MAX_REASONS) *
				(HIST_BOUND + 2 * name);
	}
	/* steal: per vCPU a caption and at most 24 rows (20 threads, "more", the buckets: one
	 * unattributed, "other threads" per layer, two for a nested guest), each naming its
	 * layer in a nested model */
	uint64_t layer = 0;
	for (uint32_t m = 0; h->nested && m < nm; m++) {
		const struct vms_machine *mc = vms_model_machine_c(h->model, m);
		uint64_t len = 6 * (uint64_t)strlen(mc && mc->name ? mc->name : "?") + 8;
		layer = len > layer ? len : layer;
	}
	for (uint32_t i = 0; a && i < vms_analysis_nr_vcpus(a); i++) {
		const struct vms_vcpu_stats *v = vms_analysis_vcpu(a, i);
		const struct vms_machine *mc = vms_model_machine_c(h->model, v->machine);
		b += 512 + 6 * (uint64_t)strlen(mc && mc->name ? mc->name : "?") +
		     24 * (STEAL_ROW_BOUND + layer);
	}
	return b;
}

/* Text as HTML: & < > " escaped; tab and newline kept (the summary is lines of text); what
 * the text writers escape (controls, direction overrides, bytes that are not UTF-8, which
 * would make the page invalid UTF-8) shown as they show it, \xHH per byte. */
static void put_text(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	while (*p) {
		uint32_t cp;
		int k = vms_utf8_seq(p, &cp);
		if (*p == '&')
			fputs("&amp;", f);
		else if (*p == '<')
			fputs("&lt;", f);
		else if (*p == '>')
			fputs("&gt;", f);
		else if (*p == '"')
			fputs("&quot;", f);
		else if (*p == '\n' || *p == '\t' || (k > 0 && !vms_text_char_unsafe(cp)))
			fwrite(p, 1, k > 0 ? (size_t)k : 1, f);
		else
			for (int i = 0; i < (k > 0 ? k : 1); i++)
				fprintf(f, "\\x%02x", p[i]);
		p += k > 0 ? k : 1;
	}
}

/* A JSON text inside a <script> element: '<' written as \u003c (JSON text outside strings
 * has no '<'), so no "</script>" in a thread's name can end the element. */
static void put_script_json(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '<')
			fputs("\\u003c", f);
		else
			fputc(s[i], f);
	}
}

static void put_base64(FILE *f, const uint8_t *p, size_t n)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);
		char o[4] = { tab[v >> 18 & 63], tab[v >> 12 & 63],
			      i + 1 < n ? tab[v >> 6 & 63] : '=', i + 2 < n ? tab[v & 63] : '=' };
		fwrite(o, 1, 4, f);
		if (i % 57 == 54)
			fputc('\n', f);
	}
}

/* "1.23 ms"; or, when the trace's times are cycles (never shown as seconds), the cycles as
 * every other output writes them (vms_fmt_cycles) */
static const char *fmt_ns(const struct vms_html *h, double ns, char *buf, size_t len)
{
	if (h->cycles)
		return vms_fmt_cycles(ns > 0 ? (uint64_t)(ns + 0.5) : 0, buf, len);
	if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.3g us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.3g ms", ns / 1e6);
	else
		snprintf(buf, len, "%.4g s", ns / 1e9);
	return buf;
}

static const char *row_kind_name(enum html_row_kind k)
{
	return k == HTML_ROW_VCPU ? "vcpu" : k == HTML_ROW_PCPU ? "pcpu" : "thread";
}

static const struct vms_html *sort_ctx;

/* Display order: the vCPUs, the physical CPUs, the guest threads; each by machine, then
 * number. */
static int cmp_rows(const void *a, const void *b)
{
	const struct html_row *x = &sort_ctx->rows[*(const uint32_t *)a];
	const struct html_row *y = &sort_ctx->rows[*(const uint32_t *)b];
	int kx = x->kind == HTML_ROW_VCPU ? 0 : x->kind == HTML_ROW_PCPU ? 1 : 2;
	int ky = y->kind == HTML_ROW_VCPU ? 0 : y->kind == HTML_ROW_PCPU ? 1 : 2;
	if (kx != ky)
		return kx - ky;
	if (x->machine != y->machine)
		return x->machine < y->machine ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

static const char *machine_name(const struct vms_html *h, uint32_t m)
{
	const struct vms_machine *mc = vms_model_machine_c(h->model, m);
	return mc && mc->name ? mc->name : "?";
}

/* The JSON object the script reads; the rows' bytes are appended to *blob. */
static int write_data(struct vms_html *h, FILE *f, const struct vms_html_page *pg,
		      uint8_t **blob, size_t *blen, size_t *bcap, FILE *xf)
{
	uint32_t *order = malloc((h->nr_rows ? h->nr_rows : 1) * sizeof *order);
	if (!order)
		return -1;
	for (uint32_t i = 0; i < h->nr_rows; i++)
		order[i] = i;
	sort_ctx = h;
	qsort(order, h->nr_rows, sizeof *order, cmp_rows);
	struct vms_json j;
	vms_json_init(&j, f, false);
	vms_json_begin_object(&j, NULL);
	vms_json_string(&j, "tool", "vmscope");
	vms_json_string(&j, "title", pg && pg->title ? pg->title : "");
	vms_json_uint(&j, "events", pg ? pg->events : 0);
	vms_json_string(&j, "time_unit", pg && pg->time_unit ? pg->time_unit : "ns");
	/* times in the page are ns relative to t0 (a JS number is exact to 2^53 ns = 104 days);
	 * t0 itself as a string */
	char t0[32];
	snprintf(t0, sizeof t0, "%llu", (unsigned long long)h->sum.t0);
	vms_json_string(&j, "t0_ns", t0);
	uint64_t end = h->t_end > h->sum.t_max ? h->t_end : h->sum.t_max;
	vms_json_uint(&j, "first_ns", h->t_first > h->sum.t0 ? h->t_first - h->sum.t0 : 0);
	vms_json_uint(&j, "end_ns", end > h->sum.t0 ? end - h->sum.t0 : 0);
	vms_json_uint(&j, "bucket_ns", h->sum.width);
	vms_json_uint(&j, "buckets", hs_used(&h->sum));
	vms_json_uint(&j, "levels", hs_levels(&h->sum));
	vms_json_uint(&j, "row_bound_bytes", vms_html_row_bound());
	vms_json_uint(&j, "page_bound_bytes", h->page_bound);
	vms_json_uint(&j, "threads_omitted", h->threads_omitted);
	vms_json_uint(&j, "max_thread_rows", VMS_HTML_MAX_THREAD_ROWS);
	vms_json_uint(&j, "vcpus_omitted", h->vcpus_omitted);
	vms_json_uint(&j, "pcpus_omitted", h->pcpus_omitted);
	vms_json_uint(&j, "names_dropped", h->names_dropped);
	vms_json_begin_array(&j, "rows");
	int err = 0;
	for (uint32_t k = 0; k < h->nr_rows && !err; k++) {
		uint32_t i = order[k];
		const struct html_row *r = &h->rows[i];
		size_t off = *blen, section[HS_MAX_LEVELS + 1];
		err = hs_encode_row(&h->sum, i, blob, blen, bcap, section);
		vms_json_begin_object(&j, NULL);
		vms_json_string(&j, "kind", row_kind_name(r->kind));
		vms_json_string(&j, "machine", machine_name(h, r->machine));
		vms_json_int(&j, "id", r->id);
		vms_json_string(&j, "label", h->names[r->label]);
		vms_json_uint(&j, "slices", h->sum.rows[i]->slices);
		vms_json_uint(&j, "off", off);
		vms_json_uint(&j, "len", *blen - off);
		vms_json_begin_array(&j, "sections");
		for (unsigned l = 0; !err && l <= hs_levels(&h->sum); l++)
			vms_json_uint(&j, NULL, section[l]);
		vms_json_end_array(&j);
		vms_json_end_object(&j);
	}
	vms_json_end_array(&j);
	vms_json_begin_array(&j, "names");
	for (uint32_t i = 0; i < h->nr_names; i++)
		vms_json_string(&j, NULL, h->names[i]);
	vms_json_end_array(&j);
	vms_json_end_object(&j);
	if (xf && !err)
		html_exact_json(h, xf, order);
	free(order);
	return err || h->oom ? -1 : 0;
}

/* ---- exit latency histograms (SVG, drawn here: no script needed) ---- */

static int cmp_hist(const void *a, const void *b)
{
	const struct html_hist *x = a, *y = b;
	if (x->machine != y->machine)
		return x->machine < y->machine ? -1 : 1;
	return x->count < y->count ? 1 : x->count > y->count ? -1 : (x->reason > y->reason) - (x->reason < y->reason);
}

/* The lower edge of bin b: 2^(b/4) ns */
static double bin_ns(unsigned b)
{
	double v = (double)(1ull << (b / 4));
	static const double q[4] = { 1.0, 1.189207115, 1.414213562, 1.681792831 };
	return v * q[b % 4];
}

static void write_hist(FILE *f, struct vms_html *h, const struct html_hist *x)
{
	char name[64], a[32], b[32];
	const char *n = vms_exit_reason_name(x->isa, x->reason);
	if (n)
		snprintf(name, sizeof name, "%s", n);
	else
		snprintf(name, sizeof name, "reason %u", x->reason);
	unsigned lo = HTML_HIST_BINS, hi = 0;
	uint64_t peak = 0;
	for (unsigned i = 0; i < HTML_HIST_BINS; i++) {
		if (!x->bins[i])
			continue;
		lo = i < lo ? i : lo;
		hi = i;
		peak = x->bins[i] > peak ? x->bins[i] : peak;
	}
	fprintf(f, "<figure class=\"hist\" data-machine=\"");
	put_text(f, machine_name(h, x->machine));
	fprintf(f, "\" data-reason=\"");
	put_text(f, name);
	fprintf(f, "\"><figcaption><b>");
	put_text(f, name);
	fprintf(f, "</b> &middot; %llu exits", (unsigned long long)x->count);
	if (x->unfinished)
		fprintf(f, ", %llu unfinished at the end", (unsigned long long)x->unfinished);
	if (x->lost)
		fprintf(f, ", %llu closed by lost events (no duration)", (unsigned long long)x->lost);
	fprintf(f, "</figcaption>\n");
	if (!peak) {
		fprintf(f, "</figure>\n");
		return;
	}
	const int W = 320, H = 90, nb = (int)(hi - lo + 1);
	double bw = (double)W / nb;
	fprintf(f, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">", W,
		H + 16, W, H + 16);
	for (unsigned i = lo; i <= hi; i++) {
		if (!x->bins[i])
			continue;
		double bh = (double)H * (double)x->bins[i] / (double)peak;
		if (bh < 1)
			bh = 1;
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>%s - %s: "
			   "%llu</title></rect>",
			(i - lo) * bw, H - bh, bw > 1.5 ? bw - 0.5 : bw, bh,
			fmt_ns(h, bin_ns(i), a, sizeof a), fmt_ns(h, bin_ns(i + 1), b, sizeof b),
			(unsigned long long)x->bins[i]);
	}
	fprintf(f, "<text x=\"0\" y=\"%d\">%s</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>",
		H + 13, fmt_ns(h, bin_ns(lo), a, sizeof a), W, H + 13, fmt_ns(h, bin_ns(hi + 1), b, sizeof b));
	fprintf(f, "</svg></figure>\n");
}

static void close_guest_hists(FILE *f, uint32_t more)
{
	fprintf(f, "</div>\n");
	if (more)
		fprintf(f, "<p class=\"note\">%u less frequent reasons are not drawn: "
			   "<code>vmscope exits</code> lists them all.</p>\n", more);
}

static void write_exits(FILE *f, struct vms_html *h)
{
	fprintf(f, "<section id=\"exits\"><h2>VM exit latency per reason</h2>\n"
		   "<p class=\"note\">Time from each <code>kvm_exit</code> to the <code>kvm_entry</code> "
		   "that closes it, in bins of a quarter power of two (log scale), per guest and exit "
		   "reason, most frequent first. Hover a bar for its range and count.</p>\n");
	if (!h->nr_hists)
		fprintf(f, "<p>No VM exit in the traces.</p>\n");
	if (h->nr_hists > 1) /* (qsort of NULL is undefined) */
		qsort(h->hists, h->nr_hists, sizeof *h->hists, cmp_hist);
	uint32_t shown = 0, more = 0;
	for (uint32_t i = 0; i < h->nr_hists; i++) {
		if (!i || h->hists[i].machine != h->hists[i - 1].machine) {
			if (i)
				close_guest_hists(f, more);
			fprintf(f, "<h3>");
			put_text(f, machine_name(h, h->hists[i].machine));
			fprintf(f, "</h3><div class=\"hists\">\n");
			shown = more = 0;
		}
		/* the page's size must not depend on how many reason codes a trace invents */
		if (shown++ < VMS_HTML_MAX_REASONS)
			write_hist(f, h, &h->hists[i]);
		else
			more++;
	}
	if (h->nr_hists)
		close_guest_hists(f, more);
	fprintf(f, "</section>\n");
}

/* ---- who took the CPU ---- */

static void write_steal(FILE *f, struct vms_html *h, const struct vms_analysis *a)
{
	fprintf(f, "<section id=\"steal\"><h2>Who took the CPU</h2>\n"
		   "<p class=\"note\">Per vCPU, the host threads that ran on the physical CPU its "
		   "thread had left while it was runnable (preempted; halted time is not steal), "
		   "and their share of the vCPU's analysed time.</p>\n");
	/* the vCPUs whose host recorded no sched_switch: who ran instead is unknown (§7), never
	 * "not preempted" */
	uint32_t shown = 0, unseen = 0, vcpus = 0;
	for (uint32_t i = 0; a && i < vms_analysis_nr_vcpus(a); i++) {
		const struct vms_vcpu_stats *v = vms_analysis_vcpu(a, i);
		if (!vms_filter_vcpu(&h->filter, v->machine, v->vcpu))
			continue;
		vcpus++;
		if (v->preempt_visible)
			continue;
		fprintf(f, unseen++ ? ", " : "<p class=\"unknown\" id=\"steal-unknown\">Unknown for ");
		put_text(f, machine_name(h, v->machine));
		fprintf(f, " vCPU %u", v->vcpu);
	}
	if (unseen)
		fprintf(f, ": the host recorded no sched_switch, so when the vCPU thread was off its "
			   "CPU, and who ran there, cannot be seen.</p>\n");
	for (uint32_t i = 0; a && i < vms_analysis_nr_vcpus(a); i++) {
		const struct vms_vcpu_stats *v = vms_analysis_vcpu(a, i);
		if (!v->nr_steal || !v->preempt_visible ||
		    !vms_filter_vcpu(&h->filter, v->machine, v->vcpu))
			continue;
		uint64_t span = 0;
		for (int k = 0; k < VMS_STATE_COUNT; k++)
			span += v->ns[k];
		char d[32];
		fprintf(f, "<table class=\"steal\"><caption>");
		put_text(f, machine_name(h, v->machine));
		fprintf(f, " vCPU %u: preempted %s</caption>\n<tr><th>host thread</th><th>pid</th>"
			   "<th>tid</th><th>time</th><th>share</th></tr>\n",
			v->vcpu, fmt_ns(h, (double)v->ns[VMS_STATE_PREEMPTED], d, sizeof d));
		uint32_t threads = 0;
		for (uint32_t k = 0; k < v->nr_steal; k++) {
			const struct vms_steal_entry *e = &v->steal[k];
			/* the buckets (after the threads) are shown always */
			if (e->kind == VMS_STEAL_THREAD && threads++ >= 20)
				continue;
			fprintf(f, "<tr><td>");
			put_text(f, e->comm[0] ? e->comm : "?");
			/* nested: the layer whose scheduler ran it (or them: "other threads" are
			 * per layer), as the text report's "(l0)" */
			if (h->nested && e->kind != VMS_STEAL_UNATTRIBUTED) {
				fprintf(f, " <span class=\"layer\">(");
				put_text(f, machine_name(h, e->host));
				fprintf(f, ")</span>");
			}
			if (e->kind == VMS_STEAL_UNATTRIBUTED)
				fprintf(f, "</td><td colspan=\"2\">more than %d vCPUs waited on the CPU: "
					   "who ran is not followed", VMS_INSTEAD_MAX_WAITERS);
			else if (e->kind == VMS_STEAL_OTHERS)
				fprintf(f, "</td><td colspan=\"2\">%s%llu distinct threads beyond the "
					   "first %d", e->threads_at_least ? "at least " : "",
					(unsigned long long)e->threads, VMS_STEAL_MAX_THIEVES);
			else if (e->host_pid >= 0)
				fprintf(f, "</td><td>%d", e->host_pid);
			else
				fprintf(f, "</td><td>not recorded");
			if (e->kind == VMS_STEAL_THREAD)
				fprintf(f, "</td><td>%d", e->host_tid);
			fprintf(f, "</td><td>%s</td><td>%.2f%%</td></tr>\n",
				fmt_ns(h, (double)e->ns, d, sizeof d),
				span ? 100.0 * (double)e->ns / (double)span : 0.0);
		}
		if (threads > 20)
			fprintf(f, "<tr><td colspan=\"5\">(%u more threads)</td></tr>\n", threads - 20);
		fprintf(f, "</table>\n");
		shown++;
	}
	if (!shown && (!a || vcpus > unseen))
		fprintf(f, "<p>No vCPU was preempted by another host thread%s.</p>\n",
			a ? "" : " (not computed)");
	fprintf(f, "</section>\n");
}

/* What the page holds (exact intervals or the summary) and how to drill down further */
static void write_exact_note(FILE *f, struct vms_html *h, const struct vms_html_page *pg)
{
	const struct html_exact *x = &h->exact;
	const char *files = pg && pg->title && *pg->title ? pg->title : "TRACE...";
	fprintf(f, "<p class=\"note\" id=\"exact-note\" data-held=\"%s\" data-records=\"%llu\" "
		   "data-max=\"%llu\">", exact_held(h, pg) ? "1" : "0",
		(unsigned long long)x->seen, (unsigned long long)x->max);
	if (exact_held(h, pg))
		fprintf(f, "This trace fits the page's budget of exact intervals (%llu pieces of rows "
			   "and VM exits, at most %llu; <code>vmscope html --exact-max N</code> changes it): "
			   "the page holds them all, and its drill-down below draws every VM exit, guest "
			   "thread switch and host preemption with its exact ns, with no server. The events "
			   "themselves (the lines of <code>vmscope dump</code>) are not in the page: ",
			(unsigned long long)x->seen, (unsigned long long)x->max);
	else if (h->opts.summary_only)
		fprintf(f, "This page holds the summary only (<code>--exact-max 0</code>). To drill down "
			   "to single events: ");
	else
		fprintf(f, "This trace has %llu%s pieces of rows and VM exits, more than the page's budget "
			   "of %llu exact ones (<code>vmscope html --exact-max N</code>): the page holds the "
			   "summary only. To drill down to single events: ",
			(unsigned long long)x->seen, x->oom ? " (or more: memory ran short)" : "",
			(unsigned long long)x->max);
	fprintf(f, "<code>vmscope serve ");
	/* the title lists the files "a, b": a command line separates them by spaces */
	for (const char *p = files; *p;) {
		const char *q = strstr(p, ", ");
		size_t n = q ? (size_t)(q - p) : strlen(p);
		char part[4096];
		snprintf(part, sizeof part, "%.*s", (int)(n < sizeof part - 1 ? n : sizeof part - 1), p);
		put_text(f, part);
		if (!q)
			break;
		fputc(' ', f);
		p = q + 2;
	}
	fprintf(f, "</code> serves this page with a drill-down that asks the traces for any window, "
		   "down to single events, their <code>dump</code> lines and searches.</p>\n");
}

/* The drill-down: asking the server (serve) or the page's own exact intervals (static) */
static void write_drill(FILE *f, bool served)
{
	/* (served, it is the page's only timeline) */
	fprintf(f, "<section id=\"drill-section\"><h2>%s</h2>\n"
		   "<p class=\"help\">Exact, %s: the intervals of each row and "
		   "every VM exit (the thin lane under a vCPU) once they are wider than a pixel, "
		   "else per-pixel sums. Click the drill-down, then: wheel or <kbd>+</kbd>/<kbd>-</kbd> "
		   "zoom, arrows pan, <kbd>0</kbd> everything, click a slice for its details, "
		   "<kbd>z</kbd> zoom to it, <kbd>.</kbd>/<kbd>,</kbd> next/previous state change "
		   "of the selected row, <kbd>m</kbd> a marker at the cursor, <kbd>Backspace</kbd> "
		   "(with Shift: forward) past views, <kbd>Ctrl</kbd>+<kbd>F</kbd> search a thread%s "
		   "(<kbd>Enter</kbd> next, Shift+<kbd>Enter</kbd> "
		   "previous). The view and markers are in the URL. Shift+drag selects a range: "
		   "its statistics (time by state, exits by reason and their durations) follow it, "
		   "the exit latency histograms too; <kbd>Shift</kbd>+<kbd>A</kbd> and "
		   "<kbd>Shift</kbd>+<kbd>B</kbd> store the selection (else the view) as range A "
		   "and range B, compared side by side for the picked rows (click a row, "
		   "<kbd>Ctrl</kbd>+click more; none: every vCPU).%s</p>\n"
		   "<div id=\"drill-findings\"></div>\n"
		   "<input id=\"drill-search\" placeholder=\"search: thread name or tid, exit "
		   "reason%s\" size=\"50\"> <span id=\"drill-status\"></span>\n"
		   "<div id=\"drill-markers\"></div>\n"
		   "<div id=\"drill\" tabindex=\"0\"><canvas id=\"drill-canvas\" "
		   "style=\"width:100%%;display:block\"></canvas></div>\n"
		   "<div id=\"drill-tip\" class=\"tooltip\" hidden style=\"position:absolute;"
		   "background:#fff;border:1px solid #888;padding:4px;font-size:12px\"></div>\n"
		   "<div id=\"drill-details\"></div>\n<div id=\"drill-selstats\"></div>\n"
		   "<div id=\"drill-compare\"></div>\n<h3>Events of the view</h3>\n"
		   "<div id=\"drill-events\" style=\"font-family:monospace;font-size:12px;"
		   "max-height:20em;overflow:auto;white-space:pre\"></div>\n</section>\n",
		served ? "Timeline" : "Drill down",
		served ? "from the server" : "from the exact intervals this page holds",
		served ? ", an exit reason or an event" : " or an exit reason",
		served ? " Click a line of the event list to put the cursor there." : "",
		served ? ", event name" : "");
}

/* The summary timeline of the static page (timeline.js draws it from #vms-rows) */
static void write_timeline(FILE *f, struct vms_html *h, const struct vms_html_page *pg)
{
	char d[32];
	fprintf(f, "<section id=\"timeline-section\"><h2>Timeline</h2>\n"
		   "<p class=\"note\" id=\"summary-note\">This page holds a summary of the trace, not "
		   "its events: per row and zoom level, the dominant state, the number of slices and "
		   "the longest slice's name in buckets of %s at the finest level (%u buckets per row, "
		   "%u levels), so its size does not grow with the trace (at most %llu bytes per row; "
		   "this page at most %llu bytes, a bound set by the machines, CPUs and vCPUs). "
		   "Statistics of a selection are exact to a bucket at its edges. Zooming below one "
		   "bucket per pixel shows wider buckets, not more detail.</p>\n",
		fmt_ns(h, (double)h->sum.width, d, sizeof d), h->sum.nb, hs_levels(&h->sum),
		(unsigned long long)vms_html_row_bound(), (unsigned long long)h->page_bound);
	write_exact_note(f, h, pg);
	if (h->threads_omitted)
		fprintf(f, "<p class=\"warn\">%u more guest threads ran but are not drawn (the page "
			   "draws the first %u seen).</p>\n", h->threads_omitted, VMS_HTML_MAX_THREAD_ROWS);
	if (h->vcpus_omitted)
		fprintf(f, "<p class=\"warn\">%u more vCPUs are not drawn (the page draws the first "
			   "%u; --machine and --vcpu choose which).</p>\n", h->vcpus_omitted,
			VMS_HTML_MAX_VCPU_ROWS);
	if (h->pcpus_omitted)
		fprintf(f, "<p class=\"warn\">%u more physical CPUs are not drawn (the page draws the "
			   "first %u seen; --machine chooses a host).</p>\n", h->pcpus_omitted,
			VMS_HTML_MAX_PCPU_ROWS);
	fprintf(f, "<p class=\"help\">Wheel or <kbd>+</kbd>/<kbd>-</kbd> (<kbd>w</kbd>/<kbd>s</kbd>) "
		   "zoom; <kbd>&larr;</kbd>/<kbd>&rarr;</kbd> (<kbd>a</kbd>/<kbd>d</kbd>), shift+wheel "
		   "or dragging the time axis pan; <kbd>0</kbd> shows everything; drag over the rows to "
		   "select a range; hover a slice for its details.</p>\n"
		   "<div id=\"legend\"></div>\n<div id=\"range\"></div>\n"
		   "<div id=\"timeline\" tabindex=\"0\"><div id=\"labels\"></div>"
		   "<div id=\"plot\"><canvas id=\"axis\"></canvas><canvas id=\"canvas\"></canvas></div></div>\n"
		   "<div id=\"tooltip\" hidden></div>\n<div id=\"selection\"></div>\n</section>\n");
}

int vms_html_write(struct vms_html *h, FILE *f, const struct vms_html_page *pg)
{
	if (h->oom)
		return VMS_ERR_NOMEM;
	h->cycles = pg && pg->time_unit && !strcmp(pg->time_unit, "cycles");
	h->page_bound = page_bound(h, pg, pg ? pg->analysis : NULL);
	const char *title = pg && pg->title ? pg->title : "";
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		   "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		   "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:%s\">\n"
		   "<meta name=\"viewport\" content=\"width=device-width\">\n<title>vmscope: ",
		/* served: the drill-down asks its own server (serve.js), nothing else */
		pg && pg->serve ? "; connect-src 'self'" : "");
	put_text(f, title);
	fprintf(f, "</title>\n<style>\n%s</style>\n</head><body>\n", vms_html_css);
	fprintf(f, "<header><h1>vmscope report</h1><p class=\"files\">");
	put_text(f, title);
	fprintf(f, "</p></header>\n");
	fprintf(f, "<section id=\"summary\"><h2>Summary</h2><pre>");
	put_text(f, pg && pg->summary ? pg->summary : "");
	fprintf(f, "</pre></section>\n");
	/* served: the drill-down, asking the server at any zoom, is the page's timeline; the
	 * summary timeline would be a second, coarser view of the same rows (and the writer of
	 * a served page keeps none: vms_html_opts.served) */
	bool served = pg && pg->serve;
	if (!served)
		write_timeline(f, h, pg);
	else
		write_drill(f, true);
	if (!served && exact_held(h, pg))
		write_drill(f, false);
	write_exits(f, h);
	write_steal(f, h, pg ? pg->analysis : NULL);
	if (served) {
		fprintf(f, "<script>\n%s</script>\n</body></html>\n", vms_html_serve_js);
		return ferror(f) ? VMS_ERR_IO : 0;
	}
	/* the data */
	uint8_t *blob = NULL;
	size_t blen = 0, bcap = 0;
	char *json = NULL;
	size_t jlen = 0;
	char *xjson = NULL;
	size_t xlen = 0;
	FILE *js = open_memstream(&json, &jlen);
	FILE *xs = exact_held(h, pg) ? open_memstream(&xjson, &xlen) : NULL;
	int err = js && (xs || !exact_held(h, pg)) ? write_data(h, js, pg, &blob, &blen, &bcap, xs) : -1;
	if (js && fclose(js) != 0)   /* a memory stream fails only for want of memory */
		err = -1;
	if (xs && fclose(xs) != 0)
		err = -1;
	if (!err) {
		fprintf(f, "<script type=\"application/json\" id=\"vms-data\">");
		put_script_json(f, json, jlen);
		fprintf(f, "</script>\n<script type=\"text/plain\" id=\"vms-rows\">\n");
		put_base64(f, blob, blen);
		fprintf(f, "\n</script>\n");
		if (xjson) {
			fprintf(f, "<script type=\"application/json\" id=\"vms-exact\">");
			put_script_json(f, xjson, xlen);
			fprintf(f, "</script>\n");
		}
		fprintf(f, "<script>\n%s</script>\n", vms_html_js);
		if (xjson)
			fprintf(f, "<script>\n%s</script>\n", vms_html_serve_js);
		fprintf(f, "</body></html>\n");
	}
	free(json);
	free(xjson);
	free(blob);
	return err ? VMS_ERR_NOMEM : ferror(f) ? VMS_ERR_IO : 0;
}
