/* The statistics of one time range for `vmscope serve` (vmscope/serve.h: vms_serve_stats):
 * what the page's range comparison and its selection-following histograms and tables show.
 * Per row the ns of each state over [from, to) (the sinks of `vcpus`, `threads` and the fused
 * view of `pcpus`, clipped to the range) and per vCPU its VM exits by reason, as `exits
 * --from --to` counts them (published at their end), with the exit-duration histogram of the
 * page's "VM exit latency" section (bins of a quarter power of two), and who took its CPU
 * (the steal entries of `report --from --to`). A consumer of the same
 * pipeline as the window queries; nothing here interprets an event. Memory: rows x reasons x
 * bins, never the events of the range. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "vmscope/html.h"
#include "vmscope/pcpu_view.h"
#include "vmscope/serve.h"

#define ST_MAX_ROWS 4096u
#define ST_NCAT 6u
#define ST_MAX_REASONS 64u    /* per vCPU; the rest are counted as "other reasons" */
#define ST_BINS VMS_HTML_HIST_BINS   /* 2^(bin/4) ns, as the page's histograms */

enum { K_VCPU, K_PCPU, K_THREAD };

struct reason_stat {
	uint32_t isa, reason;
	uint64_t ended, unfinished, lost, total_ns, min_ns, max_ns;
	uint64_t bins[ST_BINS];
};

struct srow {
	uint8_t kind;
	uint32_t a;
	int32_t b;
	uint64_t n;                 /* intervals that overlap the range */
	uint64_t ns[ST_NCAT];
	struct reason_stat *rs;     /* vCPU: its exits' reasons */
	uint32_t nr_rs;
	uint64_t other_exits;       /* beyond ST_MAX_REASONS */
};

struct st {
	uint64_t from, to;
	struct srow *rows;
	uint32_t nr_rows, *hash;    /* 2 x ST_MAX_ROWS slots, index + 1 */
	bool oom, full;
};

static struct srow *srow_get(struct st *q, uint8_t k, uint32_t a, int32_t b)
{
	uint64_t x = (((uint64_t)k << 56) ^ ((uint64_t)a << 32) ^ (uint32_t)b) * 0x9e3779b97f4a7c15ull;
	uint32_t h = (uint32_t)(x >> 40) % (2 * ST_MAX_ROWS);
	for (uint32_t i; (i = q->hash[h]); h = (h + 1) % (2 * ST_MAX_ROWS)) {
		struct srow *r = &q->rows[i - 1];
		if (r->kind == k && r->a == a && r->b == b)
			return r;
	}
	if (q->nr_rows >= ST_MAX_ROWS) {
		q->full = true;
		return NULL;
	}
	struct srow *r = &q->rows[q->nr_rows++];
	*r = (struct srow){ .kind = k, .a = a, .b = b };
	q->hash[h] = q->nr_rows;
	return r;
}

static void take(struct st *q, struct srow *r, uint64_t s, uint64_t e, uint32_t cat)
{
	if (!r)
		return;
	s = s < q->from ? q->from : s;
	e = e > q->to ? q->to : e;
	if (s >= e)
		return;
	r->n++;
	r->ns[cat < ST_NCAT ? cat : 0] += e - s;
}

static void st_vcpu(void *ctx, const struct vms_vcpu_interval *iv)
{
	struct st *q = ctx;
	take(q, srow_get(q, K_VCPU, iv->machine, (int32_t)iv->vcpu), iv->start, iv->end,
	     (uint32_t)iv->state);
}

static void st_thread(void *ctx, const struct vms_thread_interval *iv)
{
	struct st *q = ctx;
	take(q, srow_get(q, K_THREAD, iv->machine, iv->tid), iv->start, iv->end,
	     (uint32_t)iv->reason);
}

static void st_pcpu(void *ctx, const struct vms_pcpu_interval *iv)
{
	struct st *q = ctx;
	/* 0 unknown, 1 host idle, 2 host thread, 3 guest mode: the window's categories */
	uint32_t cat = iv->guest >= 0 ? 3 : iv->tid < 0 ? 0 : iv->tid == 0 ? 1 : 2;
	take(q, srow_get(q, K_PCPU, iv->host, (int32_t)iv->cpu), iv->start, iv->end, cat);
}

static void st_exit_end(void *ctx, const struct vms_obs_exit *o)
{
	struct st *q = ctx;
	struct srow *r = srow_get(q, K_VCPU, o->machine, (int32_t)o->vcpu);
	if (!r || q->oom)
		return;
	struct reason_stat *x = NULL;
	for (uint32_t i = 0; i < r->nr_rs && !x; i++)
		if (r->rs[i].isa == o->isa && r->rs[i].reason == o->reason)
			x = &r->rs[i];
	if (!x && r->nr_rs >= ST_MAX_REASONS) {
		r->other_exits++;
		return;
	}
	if (!x) {
		if (!r->rs && !(r->rs = calloc(ST_MAX_REASONS, sizeof *r->rs))) {
			q->oom = true;
			return;
		}
		x = &r->rs[r->nr_rs++];
		x->isa = o->isa;
		x->reason = o->reason;
		x->min_ns = UINT64_MAX;
	}
	if (o->how == VMS_EXIT_ENDED) {
		uint64_t d = o->t - o->begin;
		x->ended++;
		x->total_ns += d;
		x->min_ns = d < x->min_ns ? d : x->min_ns;
		x->max_ns = d > x->max_ns ? d : x->max_ns;
		x->bins[vms_html_hist_bin(d)]++;
	} else if (o->how == VMS_EXIT_UNFINISHED) {
		x->unfinished++;
	} else {
		x->lost++;
	}
}

static int rs_cmp(const void *x, const void *y)
{
	const struct reason_stat *a = x, *b = y;
	uint64_t na = a->ended + a->unfinished + a->lost, nb = b->ended + b->unfinished + b->lost;
	if (na != nb)
		return na < nb ? 1 : -1;
	return (a->reason > b->reason) - (a->reason < b->reason);
}

/* Who took the vCPU's CPU in the range: the steal entries of `report --from --to --json`
 * (vms_vcpu_stats.steal, the analysis' own consumer, behind the window's gate like every
 * other), with the layer whose scheduler ran the thread in a nested capture. */
static void put_steal(FILE *f, struct vms_session *s, const struct srow *r)
{
	struct vms_analysis *an = vms_session_analysis(s);
	struct vms_model *m = vms_session_model(s);
	const struct vms_vcpu_stats *v = NULL;
	for (uint32_t i = 0; an && i < vms_analysis_nr_vcpus(an) && !v; i++) {
		const struct vms_vcpu_stats *x = vms_analysis_vcpu(an, i);
		if (x->machine == r->a && (int32_t)x->vcpu == r->b)
			v = x;
	}
	/* (no sched_switch from its host: who ran instead is unknown, not "nobody") */
	fprintf(f, ",\"preempt_visible\":%s,\"steal\":", v && v->preempt_visible ? "true" : "false");
	if (!v || !v->preempt_visible) {
		fputs("null", f);
		return;
	}
	fputc('[', f);
	for (uint32_t k = 0; v && k < v->nr_steal; k++) {
		const struct vms_steal_entry *e = &v->steal[k];
		fprintf(f, "%s{\"kind\":\"%s\",\"tid\":", k ? "," : "",
			vms_steal_kind_name(e->kind));
		if (e->kind == VMS_STEAL_THREAD)
			fprintf(f, "%d", e->host_tid);
		else
			fputs("null", f);
		fputs(",\"pid\":", f);
		if (e->host_pid >= 0)
			fprintf(f, "%d", e->host_pid);
		else
			fputs("null", f);
		char comm[sizeof e->comm + 1];
		memcpy(comm, e->comm, sizeof e->comm);
		comm[sizeof e->comm] = 0;
		fputs(",\"comm\":\"", f);
		vms_http_json_escape(f, comm);
		fputc('"', f);
		const struct vms_machine *hm = vms_model_machine_c(m, e->host);
		if (vms_model_nested(m) && e->kind != VMS_STEAL_UNATTRIBUTED) {
			fputs(",\"layer\":\"", f);
			vms_http_json_escape(f, hm && hm->name ? hm->name : "?");
			fputc('"', f);
		}
		fprintf(f, ",\"ns\":%" PRIu64, e->ns);
		if (e->kind == VMS_STEAL_OTHERS)
			fprintf(f, ",\"threads\":%" PRIu64 ",\"threads_at_least\":%s", e->threads,
				e->threads_at_least ? "true" : "false");
		fputc('}', f);
	}
	fputc(']', f);
}

static void put_srow(FILE *f, struct vms_session *s, const struct srow *r)
{
	static const char *const cats[3][ST_NCAT] = {
		{ "unknown", "idle", "running", "vmm", "preempted", "halted" },
		{ "unknown", "host idle", "host thread", "guest", "", "" },
		{ "", "vmm", "preempted", "halted", "", "" },
	};
	static const char kc[] = "vpt";
	static const char *const kn[] = { "vcpu", "pcpu", "thread" };
	fprintf(f, "{\"id\":\"%c:%u:%d\",\"kind\":\"%s\",\"intervals\":%" PRIu64
		",\"categories\":[", kc[r->kind], r->a, r->b, kn[r->kind], r->n);
	for (uint32_t c = 0; c < ST_NCAT; c++)
		fprintf(f, "%s\"%s\"", c ? "," : "", cats[r->kind][c]);
	fputs("],\"state_ns\":[", f);
	for (uint32_t c = 0; c < ST_NCAT; c++)
		fprintf(f, "%s%" PRIu64, c ? "," : "", r->ns[c]);
	fputc(']', f);
	if (r->kind == K_VCPU) {
		fprintf(f, ",\"other_reasons_exits\":%" PRIu64 ",\"exits\":[", r->other_exits);
		for (uint32_t i = 0; i < r->nr_rs; i++) {
			const struct reason_stat *x = &r->rs[i];
			const char *n = vms_exit_reason_name(x->isa, x->reason);
			fprintf(f, "%s{\"isa\":%u,\"reason\":%u,\"name\":\"", i ? "," : "", x->isa,
				x->reason);
			if (n)
				vms_http_json_escape(f, n);
			else
				fprintf(f, "%u", x->reason);
			fprintf(f, "\",\"count\":%" PRIu64 ",\"ended\":%" PRIu64 ",\"unfinished\":%" PRIu64
				",\"lost\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"min_ns\":", x->ended +
				x->unfinished + x->lost, x->ended, x->unfinished, x->lost, x->total_ns);
			if (x->ended)
				fprintf(f, "%" PRIu64 ",\"max_ns\":%" PRIu64, x->min_ns, x->max_ns);
			else
				fputs("null,\"max_ns\":null", f);
			fputs(",\"bins\":[", f);
			for (uint32_t b = 0, k = 0; b < ST_BINS; b++)
				if (x->bins[b])
					fprintf(f, "%s[%u,%" PRIu64 "]", k++ ? "," : "", b, x->bins[b]);
			fputs("]}", f);
		}
		fputc(']', f);
		put_steal(f, s, r);
	}
	fputc('}', f);
}

static int srow_cmp(const void *x, const void *y)
{
	const struct srow *a = x, *b = y;
	if (a->kind != b->kind)
		return a->kind - b->kind;
	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	return (a->b > b->b) - (a->b < b->b);
}

int vms_serve_stats(const struct vms_serve_traces *t, uint64_t from, uint64_t to, FILE *f,
		    struct vms_error *err)
{
	if (from >= to)
		return vms_error_set(err, VMS_ERR_USAGE, "from < to");
	struct st q = { .from = from, .to = to };
	q.rows = calloc(ST_MAX_ROWS, sizeof *q.rows);
	q.hash = calloc(2 * ST_MAX_ROWS, sizeof *q.hash);
	struct vms_session *s = q.rows && q.hash ? vms_serve_session(t, from, to, err) : NULL;
	struct vms_pcpu_view *pv = NULL;
	int st = -1;
	if (!q.rows || !q.hash) {
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (!s || vms_session_build_model(s, err) != 0)
		goto out;
	pv = vms_pcpu_view_new(vms_session_model(s), st_pcpu, &q);
	struct vms_observer po = pv ? vms_pcpu_view_observer(pv) : (struct vms_observer){ 0 };
	struct vms_observer xo = { .ctx = &q, .exit_end = st_exit_end };
	if (!pv || vms_session_observe(s, &po) != 0 || vms_session_observe(s, &xo) != 0) {
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		goto out;
	}
	struct vms_sinks sinks = { .ctx = &q, .vcpu_interval = st_vcpu, .thread_interval = st_thread };
	if (vms_session_run(s, &sinks, NULL, NULL, err) < 0)
		goto out;
	if (q.oom) {
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* the hash points into rows: sorted only once nothing is added */
	qsort(q.rows, q.nr_rows, sizeof *q.rows, srow_cmp);
	fprintf(f, "{\"from\":%" PRIu64 ",\"to\":%" PRIu64 ",\"rows_truncated\":%s,"
		"\"checkpoint_events\":%" PRIu64 ",\"rows\":[", from, to, q.full ? "true" : "false",
		vms_session_restored(s));
	for (uint32_t i = 0; i < q.nr_rows; i++) {
		struct srow *r = &q.rows[i];
		if (r->rs && r->nr_rs > 1)
			qsort(r->rs, r->nr_rs, sizeof *r->rs, rs_cmp);
		if (i)
			fputc(',', f);
		put_srow(f, s, r);
	}
	fputs("]}\n", f);
	st = 0;
out:
	vms_session_free(s);
	vms_pcpu_view_free(pv);
	for (uint32_t i = 0; q.rows && i < q.nr_rows; i++)
		free(q.rows[i].rs);
	free(q.rows);
	free(q.hash);
	return st;
}
