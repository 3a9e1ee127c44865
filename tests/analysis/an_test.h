/* Helpers of the analysis tests: sinks that record what the analyses stream, a builder of
 * hand-written events, a model over fake sources, and a tiny k-way merge of real sources
 * (tcxml files hold ns timestamps, so reference time = raw time). */
#ifndef VMS_AN_TEST_H
#define VMS_AN_TEST_H

#include "testutil.h"

#include "vmscope/analysis.h"
#include "vmscope/model.h"
#include "vmscope/source.h"

#define REC_MAX 512

struct rec {
	struct vms_vcpu_interval v[REC_MAX];
	uint32_t nv;
	struct vms_thread_interval t[REC_MAX];
	uint32_t nt;
};

static void rec_vcpu(void *ctx, const struct vms_vcpu_interval *iv)
{
	struct rec *r = ctx;
	assert_true(r->nv < REC_MAX);
	r->v[r->nv++] = *iv;
}

static void rec_thread(void *ctx, const struct vms_thread_interval *iv)
{
	struct rec *r = ctx;
	assert_true(r->nt < REC_MAX);
	r->t[r->nt++] = *iv;
}

static inline struct vms_sinks rec_sinks(struct rec *r)
{
	memset(r, 0, sizeof *r);
	return (struct vms_sinks){ .ctx = r, .vcpu_interval = rec_vcpu, .thread_interval = rec_thread };
}

/* One hand-written event. */
static inline struct vms_event mk(uint32_t machine, uint32_t cpu, int32_t tid, enum vms_kind kind,
				  uint64_t f0, uint64_t f1, uint64_t f2)
{
	struct vms_event e;
	memset(&e, 0, sizeof e);
	e.machine = machine;
	e.cpu = cpu;
	e.tid = tid;
	e.kind = (uint16_t)kind;
	e.f[0] = f0;
	e.f[1] = f1;
	e.f[2] = f2;
	return e;
}

static inline struct vms_event sw(uint32_t machine, uint32_t cpu, int32_t prev, uint64_t prev_state,
				  int32_t next)
{
	return mk(machine, cpu, prev, VMS_K_SCHED_SWITCH, (uint64_t)prev, prev_state, (uint64_t)next);
}

/* Open every tcxml file, build the model exactly as the session does (add sources, first
 * pass over the wanted kinds, finish), then merge every stream by time into the analysis.
 * Sources are returned so that meta outlives the model. */
struct xml_run {
	struct vms_source *src[4];
	uint32_t n;
	struct vms_model *model;
	struct vms_analysis *an;
	uint64_t events;
};

static inline void xml_run(struct xml_run *x, const char *const *paths, uint32_t n,
			   const struct vms_sinks *sinks)
{
	struct vms_error err = {0};
	memset(x, 0, sizeof *x);
	x->n = n;
	x->model = vms_model_new();
	assert_non_null(x->model);
	/* Trace Compass's expectations are those of an unsynchronized experiment */
	vms_model_set_hull(x->model, false);
	for (uint32_t i = 0; i < n; i++) {
		x->src[i] = vms_tcxml_open(paths[i], &err);
		if (!x->src[i])
			fail_msg("open %s: %s", paths[i], err.msg);
		assert_int_equal(vms_model_add_source(x->model, i, paths[i], &x->src[i]->meta, NULL,
						      &err), 0);
	}
	bool wanted[VMS_K_COUNT] = {false};
	vms_model_wanted_kinds(wanted);
	for (uint32_t i = 0; i < n; i++) {
		struct vms_source *s = x->src[i];
		for (uint32_t st = 0; st < s->ops->nr_streams(s); st++) {
			struct vms_event ev;
			int r;
			while ((r = s->ops->next(s, st, &ev)) > 0) {
				ev.machine = i;
				if (wanted[ev.kind])
					vms_model_observe(x->model, &ev);
			}
			assert_int_equal(r, 0);
		}
		assert_int_equal(s->ops->rewind(s), 0);
	}
	if (vms_model_finish(x->model, &err) != 0)
		fail_msg("model: %s", err.msg);
	x->an = vms_analysis_new(x->model, sinks);
	assert_non_null(x->an);
	/* k-way merge: heads of every stream; ties go to the lower source, then stream */
	struct head { struct vms_event ev; bool ok; } h[4][8];
	uint32_t ns[4];
	for (uint32_t i = 0; i < n; i++) {
		ns[i] = x->src[i]->ops->nr_streams(x->src[i]);
		assert_true(ns[i] <= 8);
		for (uint32_t st = 0; st < ns[i]; st++)
			h[i][st].ok = x->src[i]->ops->next(x->src[i], st, &h[i][st].ev) > 0;
	}
	uint64_t last = 0;
	for (;;) {
		int bi = -1, bs = -1;
		for (uint32_t i = 0; i < n; i++)
			for (uint32_t st = 0; st < ns[i]; st++)
				if (h[i][st].ok && (bi < 0 || h[i][st].ev.ts < h[bi][bs].ev.ts)) {
					bi = (int)i;
					bs = (int)st;
				}
		if (bi < 0)
			break;
		struct vms_event *e = &h[bi][bs].ev;
		e->machine = (uint32_t)bi;
		const struct vms_machine *mc = vms_model_machine_c(x->model, (uint32_t)bi);
		uint64_t t = vms_clock_to_ref(&mc->clock, e->cpu, e->ts);
		vms_analysis_event(x->an, e, t);
		last = t;
		x->events++;
		h[bi][bs].ok = x->src[bi]->ops->next(x->src[bi], (uint32_t)bs, e) > 0;
	}
	vms_analysis_finish(x->an, last);
}

static inline void xml_run_free(struct xml_run *x)
{
	vms_analysis_free(x->an);
	vms_model_free(x->model);
	for (uint32_t i = 0; i < x->n; i++)
		x->src[i]->ops->close(x->src[i]);
}

#endif
