/* The small CPU scheduler model: see sched_model.h. */
#include "synth/sched_model.h"
#include "synth/kernel_formats.h"

void vms_sched_init(struct vms_sched *s, struct vms_prng *rng, double cyc_per_ns, double slice_ns)
{
	*s = (struct vms_sched){ 0 };
	s->cur = -1;
	s->rng = rng;
	s->cyc_per_ns = cyc_per_ns;
	s->slice = (uint64_t)(slice_ns * cyc_per_ns);
	s->phase_len = (uint64_t)(500e6 * cyc_per_ns);
	s->busy_factor = 0.6;
	s->calm_factor = 4.0;
}

static uint64_t cycles(const struct vms_sched *s, double ns)
{
	uint64_t c = (uint64_t)(int64_t)(ns * s->cyc_per_ns);
	return c ? c : 1;
}

static double load_factor(const struct vms_sched *s, uint64_t now)
{
	return ((now / s->phase_len) & 1) ? s->calm_factor : s->busy_factor;
}

static uint64_t sleep_for(struct vms_sched *s, const struct vms_sthread *t, uint64_t now)
{
	return cycles(s, vms_prng_exp(s->rng, t->sleep_ns * load_factor(s, now)));
}

void vms_sched_add(struct vms_sched *s, const struct vms_task *t, double burst_ns, double sleep_ns,
		   int32_t truth, uint64_t now)
{
	struct vms_sthread *th = &s->th[s->n++];
	*th = (struct vms_sthread){ .task = *t, .burst_ns = burst_ns, .sleep_ns = sleep_ns,
				    .state = VMS_ST_SLEEPING, .truth = truth };
	th->wake_at = now + cycles(s, vms_prng_unit(s->rng) * sleep_ns + 1000.0);
}

static int earliest_wake(const struct vms_sched *s)
{
	int k = -1;
	for (uint32_t i = 0; i < s->n; i++)
		if (s->th[i].state == VMS_ST_SLEEPING && (k < 0 || s->th[i].wake_at < s->th[k].wake_at))
			k = (int)i;
	return k;
}

uint64_t vms_sched_next(const struct vms_sched *s)
{
	int k = earliest_wake(s);
	uint64_t t = k >= 0 ? s->th[k].wake_at : UINT64_MAX;
	if (s->cur >= 0 && s->cur_end < t)
		t = s->cur_end;
	return t;
}

/* Start running thread `i` at `now`. */
static void run(struct vms_sched *s, int i, uint64_t now)
{
	struct vms_sthread *t = &s->th[i];
	t->state = VMS_ST_RUNNING;
	if (!t->left)
		t->left = cycles(s, vms_prng_exp(s->rng, t->burst_ns));
	s->cur = i;
	s->cur_start = now;
	s->cur_end = now + t->left;
	if (s->nrq && s->cur_end > now + s->slice)
		s->cur_end = now + s->slice;
}

uint64_t vms_sched_step(struct vms_sched *s, uint64_t now, const struct vms_sched_ops *ops,
			void *ctx)
{
	int k = earliest_wake(s);
	if (s->cur >= 0 && (k < 0 || s->cur_end <= s->th[k].wake_at)) {
		/* the running thread's burst (or slice) is over */
		struct vms_sthread *t = &s->th[s->cur];
		uint64_t ran = now - s->cur_start;
		t->left = ran >= t->left ? 0 : t->left - ran;
		int64_t state;
		if (t->left && s->nrq) {
			t->state = VMS_ST_RUNNABLE;
			s->rq[s->nrq++] = s->cur;
			state = VMS_TASK_PREEMPTED;
		} else {
			t->left = 0;
			t->state = VMS_ST_SLEEPING;
			t->wake_at = now + sleep_for(s, t, now);
			state = VMS_TASK_INTERRUPTIBLE;
		}
		int next = -1;
		if (s->nrq) {
			next = s->rq[0];
			for (uint32_t i = 1; i < s->nrq; i++)
				s->rq[i - 1] = s->rq[i];
			s->nrq--;
		}
		ops->on_switch(ctx, now, t, state, next >= 0 ? &s->th[next] : NULL);
		if (next >= 0)
			run(s, next, now);
		else
			s->cur = -1;
		return now;
	}
	if (k < 0)
		return now;
	/* a wake-up */
	struct vms_sthread *w = &s->th[k];
	ops->on_wakeup(ctx, now, s->cur >= 0 ? &s->th[s->cur] : NULL, w);
	if (s->cur < 0) {
		uint64_t t2 = now + cycles(s, 1000.0 + vms_prng_unit(s->rng) * 2000.0);
		ops->on_switch(ctx, t2, NULL, VMS_TASK_RUNNING, w);
		run(s, k, t2);
		return t2;
	}
	w->state = VMS_ST_RUNNABLE;
	s->rq[s->nrq++] = k;
	if (s->cur_end > now + s->slice)
		s->cur_end = now + s->slice;
	return now;
}

void vms_sched_stall(struct vms_sched *s, uint64_t from, uint64_t to)
{
	if (s->cur >= 0 && to > from) {
		s->cur_end += to - from;
		s->cur_start += to - from; /* the stall is not time the burst ran */
	}
}
