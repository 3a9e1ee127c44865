/* The static page's exact intervals: every piece of every timeline row and every VM exit,
 * kept while the trace fits the page's budget (VMS_HTML_EXACT_MAX pieces and exits, or the
 * option's), so that the page's drill-down (html/serve.js, answering itself from them) reaches
 * single events with no server. Past the budget they are dropped at once and only counted:
 * the page holds its summary and says how to drill down (`vmscope serve`). Memory: the
 * budget x 72 bytes at most, never the trace. */
#include <inttypes.h>
#include <stdlib.h>

#include "html_internal.h"
#include "core/grow.h"

static void drop(struct html_exact *x)
{
	free(x->p);
	free(x->x);
	x->p = NULL;
	x->x = NULL;
	x->np = x->nx = 0;
	x->capp = x->capx = 0;
	x->over = true;
}

/* Room for one more record; false when the budget is passed (or memory is short: the page
 * then holds its summary, as past the budget, and says so). */
static bool room(struct vms_html *h)
{
	struct html_exact *x = &h->exact;
	x->seen++;
	if (x->over)
		return false;
	if (x->seen > x->max) {
		drop(x);
		return false;
	}
	return true;
}

void html_exact_piece(struct vms_html *h, uint32_t row, uint64_t s, uint64_t e, unsigned state,
		      uint32_t who)
{
	struct html_exact *x = &h->exact;
	if (e <= s || !room(h))
		return;
	if (x->np == x->capp) {
		struct html_piece *p = vms_grow(x->p, &x->capp, sizeof *p, 1024);
		if (!p) {
			x->oom = true;
			drop(x);
			return;
		}
		x->p = p;
	}
	x->p[x->np++] = (struct html_piece){ .row = row, .state = (uint8_t)state, .who = who,
					     .s = s, .e = e };
}

void html_exact_exit(struct vms_html *h, uint32_t row, const struct vms_obs_exit *o)
{
	struct html_exact *x = &h->exact;
	if (!room(h))
		return;
	if (x->nx == x->capx) {
		struct html_xrec *p = vms_grow(x->x, &x->capx, sizeof *p, 256);
		if (!p) {
			x->oom = true;
			drop(x);
			return;
		}
		x->x = p;
	}
	x->x[x->nx++] = (struct html_xrec){
		.row = row, .begin = o->begin, .end = o->how == VMS_EXIT_ENDED ? o->t : 0,
		.how = (uint8_t)o->how, .isa = o->isa, .reason = o->reason, .host_cpu = o->host_cpu,
		.host_tid = o->host_tid, .gtid = o->gtid, .rip = o->guest_rip, .info1 = o->info1,
		.info2 = o->info2 };
}

void html_exact_free(struct html_exact *x)
{
	free(x->p);
	free(x->x);
}

/* The records as the JSON the script reads ("exact"): per row (by its place in the page,
 * order[]) a flat list [start, end, state, name index, ...] in reference ns, and the exits
 * [row, begin, end or null, isa, reason, "rip", "info1", "info2", host CPU, host tid, guest
 * tid]. Absolute ns stay exact in a JS number up to 2^53 (104 days). */
void html_exact_json(struct vms_html *h, FILE *f, const uint32_t *order)
{
	struct html_exact *x = &h->exact;
	uint32_t *place = calloc(h->nr_rows ? h->nr_rows : 1, sizeof *place);
	if (!place) {
		h->oom = 1;
		return;
	}
	for (uint32_t k = 0; k < h->nr_rows; k++)
		place[order[k]] = k;
	fprintf(f, "{\"max\":%" PRIu64 ",\"records\":%" PRIu64 ",\"held\":%s,\"rows\":[",
		x->max, x->seen, x->over ? "false" : "true");
	for (uint32_t k = 0; k < h->nr_rows && !x->over; k++) {
		fputs(k ? ",[" : "[", f);
		uint32_t i = order[k];
		bool first = true;
		/* a row's pieces close in time order; the page sorts what it needs */
		for (size_t j = 0; j < x->np; j++) {
			const struct html_piece *p = &x->p[j];
			if (p->row != i)
				continue;
			fprintf(f, "%s%" PRIu64 ",%" PRIu64 ",%u,%u", first ? "" : ",", p->s, p->e,
				p->state, p->who);
			first = false;
		}
		fputc(']', f);
	}
	fputs("],\"exits\":[", f);
	for (size_t j = 0; j < x->nx && !x->over; j++) {
		const struct html_xrec *r = &x->x[j];
		fprintf(f, "%s[%u,%" PRIu64 ",", j ? "," : "", place[r->row], r->begin);
		if (r->how == VMS_EXIT_ENDED)
			fprintf(f, "%" PRIu64, r->end);
		else
			fputs(r->how == VMS_EXIT_UNFINISHED ? "\"unfinished\"" : "\"lost\"", f);
		fprintf(f, ",%u,%u,\"0x%" PRIx64 "\",\"0x%" PRIx64 "\",\"0x%" PRIx64 "\",%u,%d,%d]",
			r->isa, r->reason, r->rip, r->info1, r->info2, r->host_cpu, r->host_tid,
			r->gtid);
	}
	/* the names of the exits' reasons (every (isa, reason) has a histogram) */
	fputs("],\"reason_names\":[", f);
	for (uint32_t i = 0, k = 0; i < h->nr_hists && !x->over; i++) {
		const struct html_hist *hs = &h->hists[i];
		bool dup = false;
		for (uint32_t j = 0; j < i && !dup; j++)
			dup = h->hists[j].isa == hs->isa && h->hists[j].reason == hs->reason;
		const char *n = vms_exit_reason_name(hs->isa, hs->reason);
		if (dup)
			continue;
		fprintf(f, "%s[%u,%u,\"", k++ ? "," : "", hs->isa, hs->reason);
		if (n)
			fputs(n, f);   /* the tool's own names: letters, digits, '_' */
		else
			fprintf(f, "%u", hs->reason);
		fputs("\"]", f);
	}
	fputs("]}", f);
	free(place);
}
