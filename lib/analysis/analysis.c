/* The analysis stage: the layout of the vCPUs, the observers, the lifecycle, and the
 * results. Every event of the merged stream goes to the vCPU state machine (vcpu_state.c),
 * which publishes observations (vmscope/observe.h) to the built-in consumers (vcpu_time.c,
 * overlays.c, exits.c, steal.c, containment.c) and then to every observer subscribed with
 * vms_analysis_observe(); the tables are assembled from the built-in consumers at
 * vms_analysis_finish. */
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "core/grow.h"
#include "vcpu_state_snap.h"

struct vms_analysis {
	struct an_layout L;
	struct an_sm *sm;
	struct vms_observer *obs;
	uint32_t nr_obs, cap_obs;
	struct an_subs subs;       /* who has which callback, of obs */
	struct an_vtime *vtime;
	struct an_overlays *overlays;
	struct an_exits *exits;
	struct an_steal *steal;
	struct an_contain *contain;
	/* which built-in consumer has which shared callback, called behind `fused` */
	struct {
		bool vtime_state, ov_state, ex_state, st_state, ov_instead, st_instead,
			ov_exit_end, ex_exit_end;
		bool state3;       /* vtime, overlays and steal have vcpu_state, exits not (the
		                      common case: one test instead of four) */
	} fused;
	struct an_gate *gate;      /* the time window, NULL when none */
	uint64_t from;             /* its start */
	struct vms_observer gate_obs;
	struct an_subs gate_subs;  /* the gate alone: what the state machine publishes to */
	bool recording;            /* checkpoints are taken (the state machine keeps its last
	                              words) */
	struct an_subs no_subs;    /* whom a checkpoint's gate passes on to: no one */
	bool started, finished;
	uint64_t t0, t_last;
	/* results (after finish) */
	struct vms_vcpu_stats *vstats;
	struct vms_exit_stats **guest_exits; /* [nr_mach] */
	uint32_t *nr_guest_exits;
	const struct vms_gthread_stats *gstats;
	uint32_t nr_gstats;
};

void vms_analysis_wanted_kinds(bool wanted[VMS_K_COUNT])
{
	wanted[VMS_K_SCHED_SWITCH] = true;
	wanted[VMS_K_SCHED_WAKEUP] = true;
	wanted[VMS_K_KVM_ENTRY] = true;
	wanted[VMS_K_KVM_EXIT] = true;
	wanted[VMS_K_KVM_VCPU_WAKEUP] = true;
	wanted[VMS_K_KVM_NESTED_VMENTER] = true;
	wanted[VMS_K_KVM_NESTED_VMEXIT] = true;
	wanted[VMS_K_KVM_NESTED_INJECT] = true;
}

int vms_analysis_observe(struct vms_analysis *a, const struct vms_observer *o)
{
	if (a->nr_obs == a->cap_obs) {
		struct vms_observer *no = vms_grow(a->obs, &a->cap_obs, sizeof *no, 8);
		if (!no)
			return -1;
		a->obs = no;
		an_subs_build(&a->subs, a->obs, a->nr_obs); /* no growth: cannot fail */
	}
	struct vms_observer *n = &a->obs[a->nr_obs++];
	*n = *o;
	an_observer_for(n, &a->L);
	if (an_subs_build(&a->subs, a->obs, a->nr_obs) < 0) {
		a->nr_obs--;
		return -1;
	}
	return 0;
}

int vms_analysis_window(struct vms_analysis *a, uint64_t from)
{
	if (a->started || a->gate)
		return -1;
	a->gate = an_gate_new(a->L.nr_v, from, &a->subs, &a->gate_obs);
	if (!a->gate || an_subs_build(&a->gate_subs, &a->gate_obs, 1) < 0) {
		an_gate_free(a->gate);
		a->gate = NULL;
		return -1;
	}
	a->from = from;
	an_sm_set_subs(a->sm, &a->gate_subs);
	return 0;
}

/* ---- the built-in consumers' shared callbacks, behind one subscription ----
 * vcpu_state has three built-in consumers (four with nested guests), vcpu_instead and
 * exit_end two: through the subscription lists each is an indirect call per consumer per
 * publication (vcpu_state alone 845 k times on a 1 M-event pair). They are known here, so
 * one subscription calls them directly, where the compiler inlines them, in their order
 * (vtime, overlays, exits, steal: the order of their own subscriptions, which keep their
 * other callbacks). The consumers stay independent: each is called with its own context,
 * none calls another. The state machine calls these three directly when they are the first
 * subscription (AN_EACH_KNOWN): always_inline, so that with LTO each inlines there whole
 * (an indirect call to them saved and restored every register their consumers use); the
 * address each has as a callback is the compared one. */
extern inline __attribute__((flatten, always_inline)) void an_fused_state(void *ctx, const struct vms_obs_vcpu_state *o)
{
	const struct vms_analysis *a = ctx;
	if (a->fused.state3) {
		an_vtime_on_state(a->vtime, o);
		an_overlays_on_state(a->overlays, o);
		an_steal_on_state(a->steal, o);
		return;
	}
	if (a->fused.vtime_state)
		an_vtime_on_state(a->vtime, o);
	if (a->fused.ov_state)
		an_overlays_on_state(a->overlays, o);
	if (a->fused.ex_state)
		an_exits_on_state(a->exits, o);
	if (a->fused.st_state)
		an_steal_on_state(a->steal, o);
}

extern inline __attribute__((flatten, always_inline)) void an_fused_instead(void *ctx, const struct vms_obs_vcpu_instead *o)
{
	const struct vms_analysis *a = ctx;
	if (a->fused.ov_instead)
		an_overlays_on_instead(a->overlays, o);
	if (a->fused.st_instead)
		an_steal_on_instead(a->steal, o);
}

extern inline __attribute__((flatten, always_inline)) void an_fused_exit_end(void *ctx, const struct vms_obs_exit *o)
{
	const struct vms_analysis *a = ctx;
	if (a->fused.ov_exit_end)
		an_overlays_on_exit_end(a->overlays, o);
	if (a->fused.ex_exit_end)
		an_exits_on_exit_end(a->exits, o);
}

/* A built-in consumer's observer, as subscribed for the layout, without the callbacks the
 * fused subscription calls (each flag: whether it had it). */
static void take_shared(const struct vms_analysis *a, struct vms_observer *o, bool *state,
			bool *instead, bool *exit_end)
{
	an_observer_for(o, &a->L);
	if (state)
		*state = o->vcpu_state != NULL;
	if (instead)
		*instead = o->vcpu_instead != NULL;
	if (exit_end)
		*exit_end = o->exit_end != NULL;
	o->vcpu_state = state ? NULL : o->vcpu_state;
	o->vcpu_instead = instead ? NULL : o->vcpu_instead;
	o->exit_end = exit_end ? NULL : o->exit_end;
}

uint32_t vms_analysis_nr_vcpu_slots(const struct vms_analysis *a)
{
	return a->L.nr_v;
}

struct vms_analysis *vms_analysis_new(struct vms_model *model, const struct vms_sinks *sinks)
{
	struct vms_analysis *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	if (an_layout_init(&a->L, model) < 0 || !(a->sm = an_sm_new(&a->L)))
		goto fail;
	an_sm_set_subs(a->sm, &a->subs);
	/* the built-in consumers first, in a fixed order; the callbacks several of them share
	 * behind one subscription, before theirs (an_fused_state) */
	struct vms_observer o;
	bool tables = !sinks || !sinks->intervals_only;   /* the exit tables, the times */
	if (vms_analysis_observe(a, &(struct vms_observer){ .ctx = a }) < 0)
		goto fail;
	/* (the vCPU times make the vcpu_interval sink's intervals too) */
	if (tables || sinks->vcpu_interval) {
		if (!(a->vtime = an_vtime_new(&a->L, sinks, &o)))
			goto fail;
		take_shared(a, &o, &a->fused.vtime_state, NULL, NULL);
		if (vms_analysis_observe(a, &o) < 0)
			goto fail;
	}
	/* (the guest threads' totals and the thread_interval sink's overlays) */
	if (tables || sinks->thread_interval) {
		if (!(a->overlays = an_overlays_new(&a->L, sinks, &o)))
			goto fail;
		take_shared(a, &o, &a->fused.ov_state, &a->fused.ov_instead,
			    &a->fused.ov_exit_end);
		if (vms_analysis_observe(a, &o) < 0)
			goto fail;
	}
	if (tables) {
		if (!(a->exits = an_exits_new(&a->L, &o)))
			goto fail;
		take_shared(a, &o, &a->fused.ex_state, NULL, &a->fused.ex_exit_end);
		if (vms_analysis_observe(a, &o) < 0)
			goto fail;
	}
	if (!(a->steal = an_steal_new(&a->L, tables, &o)))
		goto fail;
	take_shared(a, &o, &a->fused.st_state, &a->fused.st_instead, NULL);
	if (vms_analysis_observe(a, &o) < 0)
		goto fail;
	if (!(a->contain = an_contain_new(&a->L, &o)) || vms_analysis_observe(a, &o) < 0)
		goto fail;
	/* the fused subscription (the first observer) has a callback when a consumer has it */
	struct vms_observer *f = &a->obs[0];
	a->fused.state3 = a->fused.vtime_state && a->fused.ov_state && a->fused.st_state &&
			  !a->fused.ex_state;
	if (a->fused.vtime_state || a->fused.ov_state || a->fused.ex_state || a->fused.st_state)
		f->vcpu_state = an_fused_state;
	if (a->fused.ov_instead || a->fused.st_instead)
		f->vcpu_instead = an_fused_instead;
	if (a->fused.ov_exit_end || a->fused.ex_exit_end)
		f->exit_end = an_fused_exit_end;
	if (an_subs_build(&a->subs, a->obs, a->nr_obs) < 0)
		goto fail;
	return a;
fail:
	vms_analysis_free(a);
	return NULL;
}

uint64_t vms_analysis_threads_unfollowed(const struct vms_analysis *a)
{
	return an_sm_occ_unfollowed(a->sm);
}

void vms_analysis_host_unscheduled(struct vms_analysis *a, uint32_t machine)
{
	if (!a->started)
		an_sm_host_unscheduled(a->sm, machine);
}

/* Does a consumer read the host CPUs' occupants? */
static bool follows_occupants(const struct vms_analysis *a)
{
	return a->subs.n[AN_CB_cpu_occupant] > 0;
}

/* The first event (or the finish of a run without any): the state machine follows host CPU
 * occupants only when a consumer (behind the window's gate or not) reads them. */
static void start(struct vms_analysis *a, uint64_t t)
{
	a->started = true;
	a->t0 = a->t_last = t;
	an_sm_follow_occupants(a->sm, follows_occupants(a));
	an_sm_start(a->sm, t);
}

void vms_analysis_event(struct vms_analysis *a, const struct vms_event *ev, uint64_t t)
{
	if (a->finished)
		return;
	if (!a->started)
		start(a, t);
	/* the merge delivers reference-time order; never let a stray inversion make a
	 * negative duration */
	if (t < a->t_last)
		t = a->t_last;
	a->t_last = t;
	an_sm_event(a->sm, ev, t);
}

void vms_analysis_stream_end(struct vms_analysis *a, uint32_t machine, uint32_t stream,
			     uint64_t t)
{
	if (a->finished || !a->started)
		return;
	an_sm_stream_end(a->sm, machine, stream, t > a->t_last ? t : a->t_last);
}

void vms_analysis_machine_end(struct vms_analysis *a, uint32_t machine, uint64_t t)
{
	if (a->finished || !a->started)
		return;
	an_sm_machine_end(a->sm, machine, t > a->t_last ? t : a->t_last);
}

void vms_analysis_finish(struct vms_analysis *a, uint64_t t_end)
{
	if (a->finished)
		return;
	if (!a->started)
		start(a, t_end);
	if (t_end < a->t_last)
		t_end = a->t_last;
	an_sm_finish(a->sm, t_end);
	a->finished = true;
	const struct an_layout *L = &a->L;
	a->vstats = calloc(L->nr_v ? L->nr_v : 1, sizeof *a->vstats);
	a->guest_exits = calloc(L->nr_mach ? L->nr_mach : 1, sizeof *a->guest_exits);
	a->nr_guest_exits = calloc(L->nr_mach ? L->nr_mach : 1, sizeof *a->nr_guest_exits);
	for (uint32_t i = 0; a->vstats && i < L->nr_v; i++) {
		struct vms_vcpu_stats *s = &a->vstats[i];
		s->machine = L->v[i].machine;
		s->vcpu = L->v[i].vcpu;
		s->host_tid = L->v[i].host_tid;
		s->first = a->gate && a->from > a->t0 ? (a->from < t_end ? a->from : t_end) : a->t0;
		s->last = t_end;
		if (a->vtime) {
			memcpy(s->ns, an_vtime_ns(a->vtime, i), sizeof s->ns);
			s->halt_poll_ns = an_vtime_poll_ns(a->vtime, i);
			memcpy(s->below_ns, an_vtime_below_ns(a->vtime, i), sizeof s->below_ns);
			s->hypervisor_ns = s->ns[VMS_STATE_VMM];
		}
		s->preempt_visible = an_sm_preempt_visible(a->sm, i);
		s->host_visible = L->v[i].host >= 0;
		if (a->exits) {
			an_exits_vcpu(a->exits, i, &s->exits, &s->nr_exits);
			s->exits_unpaired = an_exits_unpaired(a->exits, i);
		}
		s->steal = (struct vms_steal_entry *)an_steal_entries(a->steal, i, &s->nr_steal);
		s->runq_latency = an_steal_runq(a->steal, i);
		an_contain_get(a->contain, i, &s->contained, &s->contain_total);
	}
	for (uint32_t m = 0; a->exits && a->guest_exits && a->nr_guest_exits && m < L->nr_mach; m++)
		an_exits_guest(a->exits, m, &a->guest_exits[m], &a->nr_guest_exits[m]);
	if (a->overlays)
		an_overlays_results(a->overlays, &a->gstats, &a->nr_gstats);
	an_contain_to_model(a->contain);
}

void vms_analysis_free(struct vms_analysis *a)
{
	if (!a)
		return;
	an_gate_free(a->gate);
	for (uint32_t i = 0; a->vstats && i < a->L.nr_v; i++)
		free(a->vstats[i].exits);
	for (uint32_t m = 0; a->guest_exits && m < a->L.nr_mach; m++)
		free(a->guest_exits[m]);
	free(a->guest_exits);
	free(a->nr_guest_exits);
	free(a->vstats);
	an_vtime_free(a->vtime);
	an_overlays_free(a->overlays);
	an_exits_free(a->exits);
	an_steal_free(a->steal);
	an_contain_free(a->contain);
	an_sm_free(a->sm);
	an_subs_free(&a->subs);
	an_subs_free(&a->gate_subs);
	free(a->obs);
	an_layout_free(&a->L);
	free(a);
}

uint32_t vms_analysis_nr_vcpus(const struct vms_analysis *a)
{
	return a->vstats ? a->L.nr_v : 0;
}

const struct vms_vcpu_stats *vms_analysis_vcpu(const struct vms_analysis *a, uint32_t i)
{
	return a->vstats && i < a->L.nr_v ? &a->vstats[i] : NULL;
}

const struct vms_unattributed *vms_analysis_unattributed(const struct vms_analysis *a,
							 uint32_t *n)
{
	*n = 0;
	if (!a->finished || !a->steal)
		return NULL;
	return an_steal_unattributed(a->steal, n);
}

uint32_t vms_analysis_nr_gthreads(const struct vms_analysis *a)
{
	return a->gstats ? a->nr_gstats : 0;
}

const struct vms_gthread_stats *vms_analysis_gthread(const struct vms_analysis *a, uint32_t i)
{
	return a->gstats && i < a->nr_gstats ? &a->gstats[i] : NULL;
}

const struct vms_exit_stats *vms_analysis_guest_exits(const struct vms_analysis *a,
						      uint32_t machine, uint32_t *nr)
{
	*nr = 0;
	if (!a->guest_exits || !a->nr_guest_exits || machine >= a->L.nr_mach)
		return NULL;
	*nr = a->nr_guest_exits[machine];
	return a->guest_exits[machine];
}

/* ---- checkpoints (vmscope/observe.h) ----
 * Layout: u32 magic "ANC1", u8 whether the state machine follows occupants, u64 t0,
 * u64 t_last, u64 length of the state machine's snapshot, its bytes (vcpu_state_snap.c),
 * the kept state of a gate that never opens told the state machine's last words
 * (an_sm_last_words; window.c's snapshot), nothing after. The gate is made at each
 * checkpoint: one that saw every observation of the run (a "shadow", until 2026-12) cost the
 * reading thread a call and a copy of each. */
#define CKPT_MAGIC 0x31434e41u   /* "ANC1" */

int vms_analysis_record_checkpoints(struct vms_analysis *a)
{
	if (a->started || a->recording || an_sm_keep_last_words(a->sm) < 0)
		return -1;
	a->recording = true;
	return 0;
}

/* The gate a window starting now would have before its start, written (window.c). */
static int gate_now(struct vms_analysis *a, FILE *f)
{
	struct vms_observer o;
	struct an_gate *g = an_gate_new(a->L.nr_v, UINT64_MAX, &a->no_subs, &o);
	int bad = !g || an_sm_last_words(a->sm, &o) < 0 ? -1 : an_gate_snapshot(g, f);
	an_gate_free(g);
	return bad;
}

int vms_analysis_checkpoint(struct vms_analysis *a, FILE *f)
{
	if (!a->recording || !a->started || a->finished)
		return -1;
	char *sm = NULL;
	size_t sm_len = 0;
	FILE *mf = open_memstream(&sm, &sm_len);
	if (!mf)
		return -1;
	int bad = an_sm_snapshot(a->sm, mf);
	bad |= fclose(mf) != 0 ? -1 : 0;
	uint32_t magic = CKPT_MAGIC;
	uint8_t occ = an_sm_parts(a->sm).occ[0];
	uint64_t len = sm_len;
	bad |= fwrite(&magic, 4, 1, f) != 1 || fwrite(&occ, 1, 1, f) != 1 ||
	       fwrite(&a->t0, 8, 1, f) != 1 || fwrite(&a->t_last, 8, 1, f) != 1 ||
	       fwrite(&len, 8, 1, f) != 1 || (len && fwrite(sm, 1, len, f) != len) ? -1 : 0;
	free(sm);
	bad |= gate_now(a, f);
	return bad ? -1 : 0;
}

int vms_analysis_restore(struct vms_analysis *a, const void *buf, size_t len,
			 struct vms_error *err)
{
	const uint8_t *p = buf;
	if (a->started || !a->gate)
		return vms_error_set(err, VMS_ERR_INTERNAL, "checkpoint restored too late or "
				     "without a window");
	uint32_t magic;
	uint8_t occ;
	uint64_t t0, t_last, sm_len;
	if (len < 29)
		return vms_error_set(err, VMS_ERR_FORMAT, "analysis checkpoint: header cut at byte "
				     "offset %zu", len);
	memcpy(&magic, p, 4);
	memcpy(&occ, p + 4, 1);
	memcpy(&t0, p + 5, 8);
	memcpy(&t_last, p + 13, 8);
	memcpy(&sm_len, p + 21, 8);
	if (magic != CKPT_MAGIC || occ > 1 || t0 > t_last || sm_len > len - 29)
		return vms_error_set(err, VMS_ERR_FORMAT, "analysis checkpoint: bad header at byte "
				     "offset 0");
	if ((bool)occ != follows_occupants(a))
		return 1;
	int r = an_sm_restore(a->sm, p + 29, (size_t)sm_len, err);
	size_t used = 0;
	if (r == 0)
		r = an_gate_restore(a->gate, &a->L, p + 29 + sm_len, len - 29 - (size_t)sm_len,
				    &used, err);
	if (r == 0 && used != len - 29 - sm_len)
		r = vms_error_set(err, VMS_ERR_FORMAT, "analysis checkpoint: bytes after the state "
				  "at byte offset %zu", (size_t)(29 + sm_len + used));
	if (r < 0)
		return r;
	a->started = true;
	a->t0 = t0;
	a->t_last = t_last;
	return 0;
}
