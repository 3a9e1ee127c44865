/* The writer of one capture (vmscope/db.h): a consumer of the analysis, turning what the
 * other views print into rows of the schema (db_schema.c), in its column order:
 *  - vcpu_intervals, thread_intervals: the sinks `vcpus` and `threads` print;
 *  - exits: the state machine's exit_end observation (every exit, unfinished ones at the
 *    end), its guest RIP named from the guest's kernel symbols;
 *  - pcpu_intervals: the fused physical-CPU view `pcpus` prints (pcpu_view.h);
 *  - wakeups: the latency consumer's wake-ups (`latency --csv`);
 *  - after the run, from the analysis' tables: machines, vcpus, exit_stats, steal (as
 *    report --json and exits --csv give them) and the findings (report's).
 * Every text from a trace goes through vms_text_escape (docs/schema.md says why): a machine's
 * name once per capture, the rest per row; vmscope's own names need none. */
#include <stdlib.h>
#include <string.h>

#include "vmscope/analysis.h"
#include "vmscope/db.h"
#include "vmscope/findings.h"
#include "vmscope/ksyms.h"
#include "vmscope/latency.h"
#include "vmscope/model.h"
#include "vmscope/observe.h"
#include "vmscope/pcpu_view.h"
#include "vmscope/source.h"
#include "vmscope/writers.h"

#define MAX_COLS 32
#define TEXT_SLOTS 8

struct vms_db_capture {
	struct vms_db *db;
	const struct vms_model *model;
	char id[64];
	const struct vms_ksyms **ksyms;      /* per machine */
	struct vms_pcpu_view *pcpu;
	struct vms_latency *lat;
	struct vms_findings *fd;
	struct vms_observer lat_obs, fd_obs;
	/* the row being built */
	struct vms_db_value v[MAX_COLS];
	uint32_t n;
	struct { char *p; size_t cap; } text[TEXT_SLOTS];
	uint32_t nr_text;
	/* the machines' names as stored, escaped once (they are on nearly every row) */
	struct { const char *raw; char *esc; } *names;
	uint32_t nr_names;
};

static void row_begin(struct vms_db_capture *c)
{
	c->n = 0;
	c->nr_text = 0;
	c->v[c->n++] = (struct vms_db_value){ .kind = VMS_DB_V_TEXT, .s = c->id };
}

static void col_int(struct vms_db_capture *c, int64_t i)
{
	c->v[c->n++] = (struct vms_db_value){ .kind = VMS_DB_V_INT, .i = i };
}

static void col_null(struct vms_db_capture *c)
{
	c->v[c->n++] = (struct vms_db_value){ .kind = VMS_DB_NULL };
}

static void col_int_if(struct vms_db_capture *c, bool known, int64_t i)
{
	if (known)
		col_int(c, i);
	else
		col_null(c);
}

/* text from a trace, escaped; NULL stays NULL */
static void col_text(struct vms_db_capture *c, const char *s)
{
	if (!s || c->nr_text == TEXT_SLOTS) {
		col_null(c);
		return;
	}
	if (vms_text_is_safe(s)) {
		c->v[c->n++] = (struct vms_db_value){ .kind = VMS_DB_V_TEXT, .s = s };
		return;
	}
	size_t need = vms_text_escape(NULL, 0, s) + 1;
	if (need > c->text[c->nr_text].cap) {
		char *p = realloc(c->text[c->nr_text].p, need);
		if (!p) {
			col_null(c);
			return;
		}
		c->text[c->nr_text].p = p;
		c->text[c->nr_text].cap = need;
	}
	char *dst = c->text[c->nr_text++].p;
	vms_text_escape(dst, need, s);
	c->v[c->n++] = (struct vms_db_value){ .kind = VMS_DB_V_TEXT, .s = dst };
}

/* text of vmscope's own (a state's, an exit reason's, a cause's name): nothing to escape */
static void col_word(struct vms_db_capture *c, const char *s)
{
	c->v[c->n++] = (struct vms_db_value){ .kind = VMS_DB_V_TEXT, .s = s };
}

static const char *mname(const struct vms_db_capture *c, uint32_t m);

/* machine m's name, escaped the first time it is seen */
static void col_machine(struct vms_db_capture *c, uint32_t m)
{
	const char *raw = mname(c, m);
	if (m >= c->nr_names) {
		col_text(c, raw);
		return;
	}
	if (c->names[m].raw != raw) {
		free(c->names[m].esc);
		c->names[m].esc = NULL;
		c->names[m].raw = NULL;
		if (!vms_text_is_safe(raw)) {
			size_t need = vms_text_escape(NULL, 0, raw) + 1;
			if (!(c->names[m].esc = malloc(need))) {
				col_null(c);
				return;
			}
			vms_text_escape(c->names[m].esc, need, raw);
		}
		c->names[m].raw = raw;
	}
	col_word(c, c->names[m].esc ? c->names[m].esc : raw);
}

static void row_end(struct vms_db_capture *c, enum vms_db_table_id t)
{
	if (c->n == vms_db_table(t)->nr_cols)
		vms_db_row(c->db, t, c->v);
}

static const char *mname(const struct vms_db_capture *c, uint32_t m)
{
	const struct vms_machine *mc = vms_model_machine_c(c->model, m);
	return mc && mc->name ? mc->name : "?";
}

/* an exit reason's name, else its number */
static const char *reason_name(uint32_t isa, uint32_t reason, char *buf, size_t len)
{
	const char *n = vms_exit_reason_name(isa, reason);
	if (n)
		return n;
	snprintf(buf, len, "%u", reason);
	return buf;
}

static void on_vcpu_interval(void *ctx, const struct vms_vcpu_interval *iv)
{
	struct vms_db_capture *c = ctx;
	row_begin(c);
	col_machine(c, iv->machine);
	col_int(c, iv->vcpu);
	col_int(c, (int64_t)iv->start);
	col_int(c, (int64_t)iv->end);
	col_int(c, iv->status);
	col_word(c, vms_vcpu_state_name(iv->state));
	row_end(c, VMS_DB_VCPU_INTERVALS);
}

static void on_thread_interval(void *ctx, const struct vms_thread_interval *iv)
{
	struct vms_db_capture *c = ctx;
	char rb[16];
	row_begin(c);
	col_machine(c, iv->machine);
	col_int(c, iv->tid);
	col_int(c, iv->vcpu);
	col_int(c, (int64_t)iv->start);
	col_int(c, (int64_t)iv->end);
	col_word(c, vms_overlay_reason_name(iv->reason));
	if (iv->reason == VMS_OVERLAY_VMM && iv->exit_reason >= 0)
		col_word(c, reason_name(iv->isa, (uint32_t)iv->exit_reason, rb, sizeof rb));
	else
		col_null(c);
	col_int_if(c, iv->host_tid >= 0, iv->host_tid);
	row_end(c, VMS_DB_THREAD_INTERVALS);
}

static void on_exit_end(void *ctx, const struct vms_obs_exit *o)
{
	struct vms_db_capture *c = ctx;
	char rb[16], sym[160];
	static const char *const how[] = { "ended", "unfinished", "lost" };
	row_begin(c);
	col_machine(c, o->machine);
	col_int(c, o->vcpu);
	col_int(c, (int64_t)o->begin);
	col_int_if(c, o->how == VMS_EXIT_ENDED, (int64_t)(o->t - o->begin));
	col_word(c, (unsigned)o->how < 3 ? how[o->how] : "?");
	col_int(c, o->isa);
	col_int(c, o->reason);
	col_word(c, reason_name(o->isa, o->reason, rb, sizeof rb));
	col_int(c, (int64_t)o->guest_rip);
	const struct vms_ksyms *k = o->machine < vms_model_nr_machines(c->model) ? c->ksyms[o->machine]
									      : NULL;
	uint64_t off;
	const char *name = k ? vms_ksyms_lookup(k, o->guest_rip, &off) : NULL;
	if (name)
		snprintf(sym, sizeof sym, off ? "%s+0x%llx" : "%s", name, (unsigned long long)off);
	col_text(c, name ? sym : NULL);
	col_int(c, o->host_cpu);
	col_int(c, o->host_tid);
	col_int_if(c, o->gtid >= 0, o->gtid);
	row_end(c, VMS_DB_EXITS);
}

static void on_pcpu(void *ctx, const struct vms_pcpu_interval *iv)
{
	struct vms_db_capture *c = ctx;
	row_begin(c);
	col_machine(c, iv->host);
	col_int(c, iv->cpu);
	col_int(c, (int64_t)iv->start);
	col_int(c, (int64_t)iv->end);
	/* a stretch of the CPU where who ran is not known (no sched_switch, or past the host's
	 * trace): machine NULL, as pcpus prints "unknown" */
	bool unknown = iv->guest < 0 && iv->tid < 0;
	if (unknown)
		col_null(c);
	else
		col_machine(c, iv->guest >= 0 ? (uint32_t)iv->guest : iv->host);
	col_int_if(c, iv->guest >= 0, iv->vcpu);
	col_int_if(c, iv->tid >= 0, iv->tid);
	col_text(c, iv->tid >= 0 ? iv->comm : NULL);
	row_end(c, VMS_DB_PCPU_INTERVALS);
}

static void on_wakeup(void *ctx, const struct vms_wakeup *w)
{
	struct vms_db_capture *c = ctx;
	row_begin(c);
	col_machine(c, w->machine);
	col_int(c, w->tid);
	col_text(c, w->comm);
	col_int(c, w->vcpu);
	col_int_if(c, w->waker_vcpu >= 0, w->waker_vcpu);
	col_int(c, (int64_t)w->wakeup);
	col_int(c, (int64_t)w->run);
	col_int(c, (int64_t)w->latency);
	for (int k = 0; k < VMS_CAUSE_COUNT; k++)
		col_int(c, (int64_t)w->ns[k]);
	col_word(c, vms_cause_name(w->top));
	col_text(c, w->culprit);
	row_end(c, VMS_DB_WAKEUPS);
}

struct vms_db_capture *vms_db_capture_new(struct vms_db *db, const struct vms_model *model,
					  const char *capture_id,
					  const struct vms_ksyms *const *ksyms)
{
	struct vms_db_capture *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->db = db;
	c->model = model;
	snprintf(c->id, sizeof c->id, "%s", capture_id);
	uint32_t nm = vms_model_nr_machines(model);
	c->ksyms = calloc(nm ? nm : 1, sizeof *c->ksyms);
	if (c->ksyms && ksyms)
		memcpy(c->ksyms, ksyms, nm * sizeof *c->ksyms);
	c->names = calloc(nm ? nm : 1, sizeof *c->names);
	c->nr_names = c->names ? nm : 0;
	c->pcpu = vms_pcpu_view_new(model, on_pcpu, c);
	c->lat = vms_latency_new(model, on_wakeup, c, &c->lat_obs);
	c->fd = vms_findings_new(model, &c->fd_obs);
	if (!c->ksyms || !c->pcpu || !c->lat || !c->fd) {
		vms_db_capture_free(c);
		return NULL;
	}
	return c;
}

struct vms_sinks vms_db_capture_sinks(struct vms_db_capture *c)
{
	return (struct vms_sinks){ .ctx = c, .vcpu_interval = on_vcpu_interval,
				   .thread_interval = on_thread_interval };
}

uint32_t vms_db_capture_observers(struct vms_db_capture *c, struct vms_observer *obs)
{
	obs[0] = (struct vms_observer){ .ctx = c, .exit_end = on_exit_end };
	obs[1] = vms_pcpu_view_observer(c->pcpu);
	obs[2] = c->lat_obs;
	obs[3] = c->fd_obs;
	return 4;
}

static void machines(struct vms_db_capture *c, struct vms_source *const *srcs, uint32_t nr_srcs)
{
	for (uint32_t i = 0; i < vms_model_nr_machines(c->model); i++) {
		const struct vms_machine *mc = vms_model_machine_c(c->model, i);
		struct vms_source *src = mc->source >= 0 && (uint32_t)mc->source < nr_srcs
					 ? srcs[mc->source] : NULL;
		bool host = mc->role & VMS_ROLE_HOST, guest = mc->role & VMS_ROLE_GUEST;
		row_begin(c);
		col_machine(c, i);
		col_text(c, host && guest ? "host+guest" : host ? "host" : guest ? "guest" : "none");
		col_int(c, src != NULL);
		col_text(c, src ? src->path : NULL);
		col_text(c, src ? src->meta.format : NULL);
		col_int_if(c, src, src ? src->meta.nr_cpus : 0);
		col_int_if(c, src, src ? (int64_t)src->meta.lost_events : 0);
		col_text(c, mc->host >= 0 ? mname(c, (uint32_t)mc->host) : NULL);
		col_int_if(c, mc->host >= 0 && mc->host_pid >= 0, mc->host_pid);
		row_end(c, VMS_DB_MACHINES);
	}
}

static void vcpu_row(struct vms_db_capture *c, const struct vms_vcpu_stats *v)
{
	const struct vms_machine *g = vms_model_machine_c(c->model, v->machine);
	bool traced = g && g->source >= 0;
	uint64_t exits = 0;
	for (uint32_t k = 0; k < v->nr_exits; k++)
		exits += v->exits[k].count;
	row_begin(c);
	col_machine(c, v->machine);
	col_int(c, v->vcpu);
	col_int_if(c, v->host_tid >= 0, v->host_tid);
	col_text(c, vms_link_how_name(g && v->vcpu < g->nr_vcpus ? g->vcpus[v->vcpu].how
							      : VMS_LINK_NONE));
	col_int(c, (int64_t)v->first);
	col_int(c, (int64_t)v->last);
	for (int k = 0; k < VMS_STATE_COUNT; k++)
		col_int_if(c, !vms_vcpu_state_unseen(traced, v->host_visible, v->preempt_visible,
						     (enum vms_vcpu_state)k), (int64_t)v->ns[k]);
	col_int_if(c, v->host_visible, (int64_t)v->halt_poll_ns);
	col_int_if(c, v->host_visible, (int64_t)v->hypervisor_ns);
	col_int(c, v->host_visible);
	col_int(c, v->preempt_visible);
	col_int(c, (int64_t)exits);
	col_int(c, (int64_t)v->exits_unpaired);
	uint64_t rq = v->runq_latency ? vms_dist_count(v->runq_latency) : 0;
	col_int(c, (int64_t)rq);
	col_int_if(c, rq, rq ? (int64_t)vms_dist_percentile(v->runq_latency, 99) : 0);
	col_int_if(c, v->contain_total, (int64_t)v->contained);
	col_int_if(c, v->contain_total, (int64_t)v->contain_total);
	row_end(c, VMS_DB_VCPUS);
}

static void exit_stats_rows(struct vms_db_capture *c, const struct vms_vcpu_stats *v)
{
	for (uint32_t k = 0; k < v->nr_exits; k++) {
		const struct vms_exit_stats *e = &v->exits[k];
		char rb[16];
		uint64_t n = vms_dist_count(e->dist), sum = vms_dist_sum(e->dist);
		row_begin(c);
		col_machine(c, v->machine);
		col_int(c, v->vcpu);
		col_int(c, e->isa);
		col_int(c, e->reason);
		col_word(c, reason_name(e->isa, e->reason, rb, sizeof rb));
		col_int(c, (int64_t)e->count);
		col_int(c, (int64_t)e->unfinished);
		col_int(c, (int64_t)sum);
		col_int(c, (int64_t)vms_dist_min(e->dist));
		col_int(c, (int64_t)vms_dist_max(e->dist));
		col_int(c, (int64_t)(n ? (sum + n / 2) / n : 0));
		col_int(c, (int64_t)vms_dist_percentile(e->dist, 50));
		col_int(c, (int64_t)vms_dist_percentile(e->dist, 90));
		col_int(c, (int64_t)vms_dist_percentile(e->dist, 99));
		col_int(c, !vms_dist_exact(e->dist));
		row_end(c, VMS_DB_EXIT_STATS);
	}
}

static void steal_rows(struct vms_db_capture *c, const struct vms_vcpu_stats *v)
{
	for (uint32_t k = 0; k < v->nr_steal; k++) {
		const struct vms_steal_entry *e = &v->steal[k];
		char comm[sizeof e->comm + 1];
		memcpy(comm, e->comm, sizeof e->comm);
		comm[sizeof e->comm] = '\0';
		row_begin(c);
		col_machine(c, v->machine);
		col_int(c, v->vcpu);
		col_text(c, vms_steal_kind_name(e->kind));
		col_int_if(c, e->kind == VMS_STEAL_THREAD, e->host_tid);
		col_int_if(c, e->host_pid >= 0, e->host_pid);
		/* a nested vCPU has an "other threads" row per layer, and a tid is one layer's */
		if (e->kind == VMS_STEAL_UNATTRIBUTED)
			col_null(c);
		else
			col_machine(c, e->host);
		col_text(c, comm);
		col_int(c, (int64_t)e->ns);
		col_int_if(c, e->kind == VMS_STEAL_OTHERS, (int64_t)e->threads);
		row_end(c, VMS_DB_STEAL);
	}
}

static void findings_rows(struct vms_db_capture *c)
{
	for (uint32_t i = 0; i < vms_findings_count(c->fd); i++) {
		const struct vms_finding *x = vms_findings_get(c->fd, i);
		bool whole = !x->start && !x->end;
		row_begin(c);
		col_int(c, i + 1);
		col_text(c, x->kind);
		col_machine(c, x->machine);
		col_int_if(c, x->vcpu >= 0, x->vcpu);
		col_int_if(c, x->tid >= 0, x->tid);
		col_int_if(c, !whole, (int64_t)x->start);
		col_int_if(c, !whole, (int64_t)x->end);
		col_int(c, (int64_t)x->score);
		col_text(c, x->text);
		row_end(c, VMS_DB_FINDINGS);
	}
}

int vms_db_capture_tables(struct vms_db_capture *c, const struct vms_analysis *a,
			  struct vms_source *const *srcs, uint32_t nr_srcs, bool cycles)
{
	machines(c, srcs, nr_srcs);
	for (uint32_t i = 0; i < vms_analysis_nr_vcpus(a); i++) {
		const struct vms_vcpu_stats *v = vms_analysis_vcpu(a, i);
		vcpu_row(c, v);
		exit_stats_rows(c, v);
		steal_rows(c, v);
	}
	vms_findings_time_unit(c->fd, cycles);
	vms_findings_compute(c->fd, a, c->lat, srcs, nr_srcs);
	findings_rows(c);
	return vms_db_error(c->db)[0] ? -1 : 0;
}

int vms_db_capture_commit(struct vms_db_capture *c, const struct vms_db_capture_info *info)
{
	row_begin(c);
	col_text(c, info->host);
	col_text(c, info->kernel);
	col_text(c, info->files);
	col_text(c, info->time_unit);
	col_int(c, (int64_t)info->first);
	col_int(c, (int64_t)info->last);
	col_int(c, (int64_t)info->events);
	col_text(c, info->version);
	if (c->n != vms_db_table(VMS_DB_CAPTURES)->nr_cols)
		return -1;
	return vms_db_commit(c->db, c->v);
}

void vms_db_capture_free(struct vms_db_capture *c)
{
	if (!c)
		return;
	vms_pcpu_view_free(c->pcpu);
	vms_latency_free(c->lat);
	vms_findings_free(c->fd);
	for (int k = 0; k < TEXT_SLOTS; k++)
		free(c->text[k].p);
	for (uint32_t m = 0; m < c->nr_names; m++)
		free(c->names[m].esc);
	free(c->names);
	free(c->ksyms);
	free(c);
}
