/* Time per shown state of every vCPU, and the vCPU intervals streamed to the sinks: a
 * consumer of the state machine's vcpu_state observations. Every vCPU's first interval
 * starts at the first event (UNKNOWN until something is known); consecutive observations
 * of one vCPU bound maximal intervals; zero-length intervals are not emitted. */
#include <stdlib.h>

#include "analysis_internal.h"

struct vt_vcpu {
	uint64_t iv_start;
	uint32_t status;
	enum vms_vcpu_state state;
	int32_t layer;
	bool polling;
	uint64_t ns[VMS_STATE_COUNT];
	uint64_t below_ns[VMS_STATE_COUNT]; /* nested: at the layer below its host */
	uint64_t poll_ns;
};

struct an_vtime {
	const struct an_layout *L;
	struct vms_sinks sinks;
	struct vt_vcpu *v;
};

static __attribute__((noinline)) void emit_interval(struct an_vtime *vt, uint32_t vidx,
						     uint64_t end)
{
	const struct vt_vcpu *v = &vt->v[vidx];
	struct vms_vcpu_interval iv = {
		.machine = vt->L->v[vidx].machine, .vcpu = vt->L->v[vidx].vcpu,
		.start = v->iv_start, .end = end, .status = v->status, .state = v->state,
		.layer = v->layer,
	};
	vt->sinks.vcpu_interval(vt->sinks.ctx, &iv);
}

/* (inline in an_vtime_on_state, every vCPU state change; the sink's interval, which report does
 * not ask for, out of line) */
static inline __attribute__((always_inline)) void emit(struct an_vtime *vt, uint32_t vidx,
						       uint64_t end)
{
	struct vt_vcpu *v = &vt->v[vidx];
	if (end <= v->iv_start)
		return;
	v->ns[v->state] += end - v->iv_start;
	if (v->layer >= 0 && v->layer != vt->L->v[vidx].host)
		v->below_ns[v->state] += end - v->iv_start;
	if (v->polling)
		v->poll_ns += end - v->iv_start;
	if (vt->sinks.vcpu_interval)
		emit_interval(vt, vidx, end);
	v->iv_start = end;
}

static void on_start(void *ctx, uint64_t t0)
{
	struct an_vtime *vt = ctx;
	for (uint32_t i = 0; i < vt->L->nr_v; i++) {
		vt->v[i].iv_start = t0;
		vt->v[i].layer = -1;
	}
}

void an_vtime_on_state(void *ctx, const struct vms_obs_vcpu_state *o)
{
	struct an_vtime *vt = ctx;
	emit(vt, o->vidx, o->t);
	vt->v[o->vidx].status = o->status;
	vt->v[o->vidx].state = o->state;
	vt->v[o->vidx].layer = o->layer;
	vt->v[o->vidx].polling = o->halt_polling;
}

static void on_finish(void *ctx, uint64_t t_end)
{
	struct an_vtime *vt = ctx;
	for (uint32_t i = 0; i < vt->L->nr_v; i++)
		emit(vt, i, t_end);
}

struct an_vtime *an_vtime_new(const struct an_layout *L, const struct vms_sinks *sinks,
			      struct vms_observer *o)
{
	struct an_vtime *vt = calloc(1, sizeof *vt);
	if (!vt)
		return NULL;
	vt->L = L;
	if (sinks)
		vt->sinks = *sinks;
	vt->v = calloc(L->nr_v ? L->nr_v : 1, sizeof *vt->v);
	if (!vt->v) {
		free(vt);
		return NULL;
	}
	*o = (struct vms_observer){ .ctx = vt, .start = on_start, .vcpu_state = an_vtime_on_state,
				    .finish = on_finish };
	return vt;
}

const uint64_t *an_vtime_ns(const struct an_vtime *vt, uint32_t vidx)
{
	return vt->v[vidx].ns;
}

const uint64_t *an_vtime_below_ns(const struct an_vtime *vt, uint32_t vidx)
{
	return vt->v[vidx].below_ns;
}

uint64_t an_vtime_poll_ns(const struct an_vtime *vt, uint32_t vidx)
{
	return vt->v[vidx].poll_ns;
}

void an_vtime_free(struct an_vtime *vt)
{
	if (!vt)
		return;
	free(vt->v);
	free(vt);
}
