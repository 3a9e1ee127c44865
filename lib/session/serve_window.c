/* The window queries of `vmscope serve` (vmscope/serve.h). Each is a consumer of the same
 * pipeline as the commands: a new session of the traces with the window set, the sinks of
 * `vcpus` and `threads`, the fused view of `pcpus` and the exit observations `exits`
 * counts. Nothing here interprets an event: the rows' contents are what those commands print
 * for the same --from/--to.
 *
 * A row keeps its intervals exactly while there are fewer than 2 per pixel; past that it
 * folds them into per-pixel sums (ns per state) and drops the list, so a query's memory is
 * bounded by rows x pixels, never by the events of the window. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model/keymap.h"
#include "serve_rows.h"
#include "vmscope/pcpu_view.h"

static const char kind_char[] = "vpt";

static uint32_t hkey(uint8_t k, uint32_t a, int32_t b)
{
	uint64_t h = ((uint64_t)k << 56) ^ ((uint64_t)a << 32) ^ (uint32_t)b;
	h *= 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 40) % (2 * MAX_ROWS);
}

void sr_row_id(char *buf, size_t len, uint8_t k, uint32_t a, int32_t b)
{
	snprintf(buf, len, "%c:%u:%d", kind_char[k], a, b);
}

struct row *sr_row_get(struct q *q, uint8_t k, uint32_t a, int32_t b)
{
	if (q->only) {
		char id[48];
		sr_row_id(id, sizeof id, k, a, b);
		if (strcmp(id, q->only))
			return NULL;
	}
	uint32_t h = hkey(k, a, b);
	for (;;) {
		uint32_t i = q->hash[h];
		if (!i)
			break;
		struct row *r = &q->rows[i - 1];
		if (r->kind == k && r->a == a && r->b == b)
			return r;
		h = (h + 1) % (2 * MAX_ROWS);
	}
	if (q->nr_rows >= MAX_ROWS) {
		q->full = true;
		return NULL;
	}
	struct row *r = &q->rows[q->nr_rows++];
	*r = (struct row){ .kind = k, .a = a, .b = b };
	q->hash[h] = q->nr_rows;
	return r;
}

/* Add ns of [s, e) to the pixels it covers, in category cat. */
void sr_fold(const struct q *q, uint64_t *sum, uint64_t s, uint64_t e, uint32_t cat)
{
	if (s < q->from)
		s = q->from;
	if (e > q->to)
		e = q->to;
	if (s >= e)
		return;
	uint64_t p = (s - q->from) / q->width;
	while (s < e && p < q->px) {
		uint64_t pe = q->from + (p + 1) * q->width;
		if (p == q->px - 1u || pe > q->to)
			pe = q->to;
		uint64_t x = e < pe ? e : pe;
		sum[p * NCAT + cat] += x - s;
		s = x;
		p++;
	}
}

void sr_add(struct q *q, struct row *r, const struct ival *v)
{
	if (!r || q->oom)
		return;
	uint64_t cap = 2ull * q->px;
	r->n++;
	if (!r->sum && r->n <= cap) {
		if (!r->iv && !(r->iv = calloc(cap, sizeof *r->iv))) {
			q->oom = true;
			return;
		}
		r->iv[r->n - 1] = *v;
		return;
	}
	if (!r->sum) {
		if (!(r->sum = calloc((size_t)q->px * NCAT, sizeof *r->sum))) {
			q->oom = true;
			return;
		}
		for (uint64_t i = 0; i < r->n - 1; i++)
			sr_fold(q, r->sum, r->iv[i].s, r->iv[i].e, sr_cat_of(r, &r->iv[i]));
		free(r->iv);
		r->iv = NULL;
	}
	sr_fold(q, r->sum, v->s, v->e, sr_cat_of(r, v));
}

struct ival sr_ival_vcpu(const struct vms_vcpu_interval *iv)
{
	return (struct ival){ .s = iv->start, .e = iv->end, .a = (int32_t)iv->status,
			      .b = (int32_t)iv->state };
}

struct ival sr_ival_thread(const struct vms_thread_interval *iv)
{
	return (struct ival){ .s = iv->start, .e = iv->end, .a = (int32_t)iv->reason,
			      .b = iv->exit_reason, .c = iv->host_tid, .isa = iv->isa };
}

struct ival sr_ival_pcpu(const struct vms_pcpu_interval *iv)
{
	struct ival v = { .s = iv->start, .e = iv->end, .a = iv->guest, .b = iv->vcpu,
			  .c = iv->tid };
	memcpy(v.comm, iv->comm, sizeof v.comm);
	v.comm[sizeof v.comm - 1] = 0;
	return v;
}

struct xslice sr_xslice(const struct vms_obs_exit *o)
{
	return (struct xslice){
		.begin = o->begin, .end = o->how == VMS_EXIT_ENDED ? o->t : 0, .t = o->t,
		.rip = o->guest_rip, .info1 = o->info1, .info2 = o->info2, .isa = o->isa,
		.reason = o->reason, .host_cpu = o->host_cpu, .host_tid = o->host_tid,
		.gtid = o->gtid, .how = (int)o->how };
}

static void on_vcpu(void *ctx, const struct vms_vcpu_interval *iv)
{
	struct q *q = ctx;
	struct ival v = sr_ival_vcpu(iv);
	sr_add(q, sr_row_get(q, ROW_VCPU, iv->machine, (int32_t)iv->vcpu), &v);
}

static void on_thread(void *ctx, const struct vms_thread_interval *iv)
{
	struct q *q = ctx;
	struct ival v = sr_ival_thread(iv);
	sr_add(q, sr_row_get(q, ROW_THREAD, iv->machine, iv->tid), &v);
}

static void on_pcpu(void *ctx, const struct vms_pcpu_interval *iv)
{
	struct q *q = ctx;
	struct ival v = sr_ival_pcpu(iv);
	sr_add(q, sr_row_get(q, ROW_PCPU, iv->host, (int32_t)iv->cpu), &v);
}

void sr_add_exit(struct q *q, struct row *r, const struct xslice *x)
{
	if (!r || q->oom)
		return;
	uint64_t cap = 2ull * q->px;
	r->nx++;
	if (!r->xcount && r->nx <= cap) {
		if (!r->xs && !(r->xs = calloc(cap, sizeof *r->xs))) {
			q->oom = true;
			return;
		}
		r->xs[r->nx - 1] = *x;
		return;
	}
	if (!r->xcount) {
		if (!(r->xcount = calloc(q->px, sizeof *r->xcount))) {
			q->oom = true;
			return;
		}
		for (uint64_t i = 0; i < r->nx - 1; i++) {
			uint64_t b = r->xs[i].begin < q->from ? q->from : r->xs[i].begin;
			uint64_t p = (b - q->from) / q->width;
			r->xcount[p < q->px ? p : q->px - 1]++;
		}
		free(r->xs);
		r->xs = NULL;
	}
	uint64_t b = x->begin < q->from ? q->from : x->begin;
	uint64_t p = (b - q->from) / q->width;
	r->xcount[p < q->px ? p : q->px - 1]++;
}

/* Every exit `exits --from --to` counts: published at its end (closed, unfinished or lost). */
static void on_exit_end(void *ctx, const struct vms_obs_exit *o)
{
	struct q *q = ctx;
	struct xslice x = sr_xslice(o);
	sr_add_exit(q, sr_row_get(q, ROW_VCPU, o->machine, (int32_t)o->vcpu), &x);
}

const char *sr_how_name(int how)
{
	return how == VMS_EXIT_ENDED ? "ended" : how == VMS_EXIT_UNFINISHED ? "unfinished" : "lost";
}

const char *sr_machine_name(struct vms_model *m, uint32_t i)
{
	const struct vms_machine *mc = vms_model_machine_c(m, i);
	return mc && mc->name ? mc->name : "?";
}

void sr_put_str(FILE *f, const char *key, const char *v)
{
	fprintf(f, "\"%s\":\"", key);
	vms_http_json_escape(f, v);
	fputc('"', f);
}

void sr_put_row(FILE *f, const struct q *q, struct vms_model *m, const struct row *r)
{
	char id[48];
	sr_row_id(id, sizeof id, r->kind, r->a, r->b);
	fprintf(f, "{\"id\":\"%s\",\"count\":%" PRIu64 ",\"exact\":%s", id, r->n,
		r->sum ? "false" : "true");
	if (!r->sum) {
		fputs(",\"intervals\":[", f);
		for (uint64_t i = 0; i < r->n; i++) {
			const struct ival *v = &r->iv[i];
			fprintf(f, "%s{\"start\":%" PRIu64 ",\"end\":%" PRIu64, i ? "," : "", v->s, v->e);
			if (r->kind == ROW_VCPU) {
				fprintf(f, ",\"status\":%d,", v->a);
				sr_put_str(f, "state", vms_vcpu_state_name((enum vms_vcpu_state)v->b));
			} else if (r->kind == ROW_THREAD) {
				fputc(',', f);
				sr_put_str(f, "reason", vms_overlay_reason_name((enum vms_overlay_reason)v->a));
				const char *en = v->b >= 0 ? vms_exit_reason_name(v->isa, (uint32_t)v->b) : NULL;
				if (v->b >= 0 && en) {
					fputc(',', f);
					sr_put_str(f, "exit_reason", en);
				} else if (v->b >= 0) {
					fprintf(f, ",\"exit_reason\":\"%d\"", v->b);
				}
				fprintf(f, ",\"host_tid\":%d", v->c);
			} else {
				if (v->a >= 0) {
					fputc(',', f);
					sr_put_str(f, "machine", m ? sr_machine_name(m, (uint32_t)v->a)
						 : (uint32_t)v->a < q->nr_names ? q->names[v->a] : "?");
					fprintf(f, ",\"vcpu\":%d", v->b);
				}
				fprintf(f, ",\"tid\":%d,", v->c);
				sr_put_str(f, "comm", v->comm);
			}
			fputc('}', f);
		}
		fputc(']', f);
	} else {
		static const char *const cats[3][NCAT] = {
			{ "unknown", "idle", "running", "vmm", "preempted", "halted" },
			{ "", "vmm", "preempted", "halted", "", "" },
			{ "unknown", "host idle", "host thread", "guest", "", "" },
		};
		uint32_t ci = r->kind == ROW_VCPU ? 0 : r->kind == ROW_THREAD ? 1 : 2;
		fputs(",\"categories\":[", f);
		for (uint32_t c = 0; c < NCAT; c++)
			fprintf(f, "%s\"%s\"", c ? "," : "", cats[ci][c]);
		fputs("],\"pixels_ns\":[", f);
		for (uint32_t p = 0; p < q->px; p++) {
			fputs(p ? ",[" : "[", f);
			for (uint32_t c = 0; c < NCAT; c++)
				fprintf(f, "%s%" PRIu64, c ? "," : "", r->sum[(size_t)p * NCAT + c]);
			fputc(']', f);
		}
		fputc(']', f);
	}
	if (r->kind == ROW_VCPU) {
		fprintf(f, ",\"exits\":{\"count\":%" PRIu64 ",\"exact\":%s", r->nx,
			r->xcount ? "false" : "true");
		if (!r->xcount) {
			fputs(",\"slices\":[", f);
			for (uint64_t i = 0; i < r->nx; i++) {
				const struct xslice *x = &r->xs[i];
				const char *n = vms_exit_reason_name(x->isa, x->reason);
				char num[16];
				snprintf(num, sizeof num, "%u", x->reason);
				fprintf(f, "%s{\"begin\":%" PRIu64 ",", i ? "," : "", x->begin);
				if (x->how == VMS_EXIT_ENDED)
					fprintf(f, "\"end\":%" PRIu64 ",\"duration\":%" PRIu64 ",", x->end,
						x->end - x->begin);
				else
					fputs("\"end\":null,\"duration\":null,", f);
				sr_put_str(f, "how", sr_how_name(x->how));
				fprintf(f, ",\"isa\":%u,\"reason\":%u,", x->isa, x->reason);
				sr_put_str(f, "name", n ? n : num);
				fprintf(f, ",\"guest_rip\":\"0x%" PRIx64 "\",\"info1\":\"0x%" PRIx64
					"\",\"info2\":\"0x%" PRIx64 "\",\"host_cpu\":%u,\"host_tid\":%d,"
					"\"guest_tid\":%d}", x->rip, x->info1, x->info2, x->host_cpu,
					x->host_tid, x->gtid);
			}
			fputc(']', f);
		} else {
			fputs(",\"pixels\":[", f);
			for (uint32_t p = 0; p < q->px; p++)
				fprintf(f, "%s%" PRIu64, p ? "," : "", r->xcount[p]);
			fputc(']', f);
		}
		fputc('}', f);
	}
	fputc('}', f);
}

static struct vms_session *open_window(const struct vms_serve_traces *t, uint64_t from,
				       uint64_t to, struct vms_error *err)
{
	struct vms_session_opts o = *t->opts;
	o.machine = NULL;
	o.has_vcpu = false;
	o.progress = false;
	memset(&o.from, 0, sizeof o.from);
	memset(&o.to, 0, sizeof o.to);
	if (from || to != UINT64_MAX) {
		o.from = (struct vms_time_bound){ .set = true, .ns = from };
		o.to = (struct vms_time_bound){ .set = true, .ns = to };
	}
	struct vms_session *s = vms_session_open(t->paths, t->nr_paths, &o, err);
	if (!s)
		return NULL;
	if (t->model)
		vms_session_borrow_model(s, t->model);
	if (o.from.set && vms_session_use_checkpoints(s, t->ckpt, t->ckpt_len, err) < 0) {
		vms_session_free(s);
		return NULL;
	}
	return s;
}

int vms_serve_window(const struct vms_serve_traces *t, uint64_t from, uint64_t to, uint32_t px,
		     const char *row, FILE *f, struct vms_error *err)
{
	if (!px || px > MAX_PX || from >= to)
		return vms_error_set(err, VMS_ERR_USAGE, "px must be 1..%u and from < to", MAX_PX);
	struct q q = { .from = from, .to = to, .px = px, .only = row };
	q.width = (to - from + px - 1) / px;
	q.rows = calloc(MAX_ROWS, sizeof *q.rows);
	q.hash = calloc(2 * MAX_ROWS, sizeof *q.hash);
	struct vms_session *s = q.rows && q.hash ? open_window(t, from, to, err) : NULL;
	int st = -1;
	struct vms_pcpu_view *pv = NULL;
	if (!q.rows || !q.hash) {
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (!s)
		goto out;
	if (vms_session_build_model(s, err) != 0)
		goto out;
	struct vms_model *m = vms_session_model(s);
	pv = vms_pcpu_view_new(m, on_pcpu, &q);
	struct vms_observer po = pv ? vms_pcpu_view_observer(pv) : (struct vms_observer){ 0 };
	struct vms_observer xo = { .ctx = &q, .exit_end = on_exit_end };
	if (!pv || vms_session_observe(s, &po) != 0 || vms_session_observe(s, &xo) != 0) {
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		goto out;
	}
	struct vms_sinks sinks = { .ctx = &q, .vcpu_interval = on_vcpu, .thread_interval = on_thread };
	if (vms_session_run(s, &sinks, NULL, NULL, err) < 0)
		goto out;
	if (q.oom) {
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* VMS_SERVE_WINDOW_STATS=1: what each replay cost, on stderr (bench/bench_index.sh says
	 * the slowest windows' events with it); the answer itself is the same either way */
	if (getenv("VMS_SERVE_WINDOW_STATS"))
		fprintf(stderr, "vmscope window: [%" PRIu64 ", %" PRIu64 ") px %u replayed: %" PRIu64
			" events in it, from the checkpoint of %" PRIu64 " events\n", from, to, px,
			vms_session_events(s), vms_session_restored(s));
	fprintf(f, "{\"from\":%" PRIu64 ",\"to\":%" PRIu64 ",\"px\":%u,\"pixel_ns\":%" PRIu64
		",\"rows_truncated\":%s,\"checkpoint_events\":%" PRIu64 ",\"rows\":[", from, to,
		px, q.width, q.full ? "true" : "false", vms_session_restored(s));
	for (uint32_t i = 0; i < q.nr_rows; i++) {
		if (i)
			fputc(',', f);
		sr_put_row(f, &q, m, &q.rows[i]);
	}
	fputs("]}\n", f);
	st = 0;
out:
	vms_session_free(s);
	vms_pcpu_view_free(pv);
	sr_q_free(&q);
	return st;
}

void sr_q_free(struct q *q)
{
	for (uint32_t i = 0; q->rows && i < q->nr_rows; i++) {
		free(q->rows[i].iv);
		free(q->rows[i].sum);
		free(q->rows[i].xs);
		free(q->rows[i].xcount);
	}
	free(q->rows);
	free(q->hash);
	q->rows = NULL;
	q->hash = NULL;
}

int sr_row_cmp(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	if (a->kind != b->kind)
		return a->kind - b->kind;
	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	return a->b < b->b ? -1 : a->b > b->b;
}

int vms_serve_rows(const struct vms_serve_traces *t, FILE *f, struct vms_error *err)
{
	struct vms_session *s = open_window(t, 0, UINT64_MAX, err);
	struct vms_sinks sinks;
	struct vms_serve_rows_acc *a = s ? vms_serve_rows_begin(s, &sinks, err) : NULL;
	int st = -1;
	if (a && vms_session_run(s, &sinks, NULL, NULL, err) == 0) {
		vms_serve_rows_write(a, s, f);
		st = 0;
	}
	vms_serve_rows_free(a);
	vms_session_free(s);
	return st;
}

/* ---- search ---- */

struct sq {
	const char *what;
	bool numeric;
	long long num;
	uint32_t max, n;
	bool truncated;
	FILE *f;
	struct vms_session *s;
};

static void match(struct sq *sq, uint64_t t, uint8_t k, uint32_t a, int32_t b, const char *what)
{
	if (sq->n >= sq->max) {
		sq->truncated = true;
		vms_session_stop(sq->s);
		return;
	}
	char id[48];
	sr_row_id(id, sizeof id, k, a, b);
	fprintf(sq->f, "%s{\"t\":%" PRIu64 ",\"row\":\"%s\",", sq->n++ ? "," : "", t, id);
	sr_put_str(sq->f, "what", what);
	fputc('}', sq->f);
}

static void s_switch(void *ctx, const struct vms_obs_guest_switch *o)
{
	struct sq *sq = ctx;
	if (o->next_tid <= 0)
		return;
	if ((sq->numeric && o->next_tid == sq->num) ||
	    (o->next_comm && !strcmp(o->next_comm, sq->what))) {
		char w[64];
		snprintf(w, sizeof w, "%.23s %d switched in", o->next_comm ? o->next_comm : "",
			 o->next_tid);
		match(sq, o->t, ROW_VCPU, o->machine, (int32_t)o->vcpu, w);
	}
}

static void s_exit(void *ctx, const struct vms_obs_exit *o)
{
	struct sq *sq = ctx;
	const char *n = vms_exit_reason_name(o->isa, o->reason);
	if ((n && !strcasecmp(n, sq->what)) || (sq->numeric && o->reason == sq->num)) {
		char w[64];
		snprintf(w, sizeof w, "kvm_exit %s", n ? n : sq->what);
		match(sq, o->t, ROW_VCPU, o->machine, (int32_t)o->vcpu, w);
	}
}

static void s_event(void *ctx, const struct vms_event *ev, uint64_t t)
{
	struct sq *sq = ctx;
	struct vms_source *src = vms_session_source(sq->s, ev->machine);
	if (!src || ev->type >= src->meta.nr_types || !src->meta.type_names[ev->type])
		return;
	const char *tn = src->meta.type_names[ev->type];
	const char *colon = strchr(tn, ':');
	if (!strcmp(tn, sq->what) || (colon && !strcmp(colon + 1, sq->what)))
		match(sq, t, ROW_PCPU, ev->machine, (int32_t)ev->cpu, tn);
}

int vms_serve_search(const struct vms_serve_traces *t, const char *what, uint32_t max, FILE *f,
		     struct vms_error *err)
{
	if (!what || !*what)
		return vms_error_set(err, VMS_ERR_USAGE, "nothing to search for");
	struct sq sq = { .what = what, .max = max, .f = f };
	char *end;
	sq.num = strtoll(what, &end, 10);
	sq.numeric = !*end && sq.num >= 0;
	struct vms_session *s = open_window(t, 0, UINT64_MAX, err);
	if (!s)
		return -1;
	sq.s = s;
	int st = -1;
	struct vms_observer o = { .ctx = &sq, .guest_switch = s_switch, .exit_begin = s_exit,
				  .event = s_event };
	if (vms_session_observe(s, &o) != 0) {
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		goto out;
	}
	fputs("{\"matches\":[", f);
	struct vms_sinks sinks = { 0 };
	if (vms_session_run(s, &sinks, NULL, NULL, err) < 0)
		goto out;
	fprintf(f, "],\"truncated\":%s}\n", sq.truncated ? "true" : "false");
	st = 0;
out:
	vms_session_free(s);
	return st;
}

struct vms_session *vms_serve_session(const struct vms_serve_traces *t, uint64_t from,
				      uint64_t to, struct vms_error *err)
{
	return open_window(t, from, to, err);
}
