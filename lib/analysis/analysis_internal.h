/* vmscope internal: the analysis stage (include/vmscope/analysis.h and observe.h are the
 * contract).
 *
 * One publisher, many consumers. vcpu_state.c is the vCPU state machine: the only code that
 * interprets host and guest scheduler and KVM events; it publishes observations
 * (vmscope/observe.h) to every subscribed observer. The built-in analyses are consumers like
 * any other, each in its own file with its own state, and none calls back into the state
 * machine or into another consumer:
 *   vcpu_time.c    time per shown state, vCPU intervals to the sinks
 *   overlays.c     guest-thread overlays and totals (§4)
 *   exits.c        VM exit tables (§5)
 *   steal.c        who took the CPU, run-queue latency (§6)
 *   containment.c  the containment check (§8)
 * analysis.c owns the observer list and the lifecycle, and assembles the results tables
 * from the consumers at finish; an_common.c holds what they all use (the layout of the
 * vCPUs, the subscriptions), so that no consumer calls into analysis.c.
 * Everything here is sized by the model (machines, vCPUs, CPUs, threads, exit reasons),
 * never by the number of events. */
#ifndef VMS_ANALYSIS_INTERNAL_H
#define VMS_ANALYSIS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "model/keymap.h"
#include "vmscope/analysis.h"
#include "vmscope/error.h"
#include "vmscope/observe.h"

#define AN_MAX_CPUS 4096   /* physical CPUs of one host tracked; beyond is damage */
/* host threads followed to the CPU they were last seen on (the occupants: a thread is on one
 * CPU at a time); beyond, a new thread is not followed: vms_analysis_threads_unfollowed */
#define AN_OCC_THREADS_MAX VMS_OCC_THREADS_MAX

/* ---- shared by the stage's files (an_common.c) ----
 * Which machine has which vCPUs: read-only after vms_analysis_new, shared by all. */
struct an_layout_machine {
	bool host, guest;
	uint32_t vcpu_base, nr_vcpus; /* its vCPUs as a guest: vidx vcpu_base.. */
};
struct an_layout_vcpu {
	uint32_t machine, vcpu;
	int32_t host;              /* host machine, -1 none */
	int32_t host_tid;          /* main host thread (from the model), -1 unknown */
};
struct an_layout {
	struct vms_model *model;
	uint32_t nr_mach, nr_v;
	struct an_layout_machine *mach;
	struct an_layout_vcpu *v;
	/* a guest has a trace of its own: without one (a Xen host's domains, a VM whose host
	 * alone was traced) no guest event, guest thread or guest switch can come, and the
	 * consumers that only look at those subscribe to nothing */
	bool traced_guest;
	/* some guest's host is itself a guest (vms_model_nested): the exits consumer then splits
	 * each exit's cost by layer */
	bool nested;
};

/* The layout of model's vCPUs; 0, or -1 when out of memory (free it then too) */
int an_layout_init(struct an_layout *L, struct vms_model *model);
void an_layout_free(struct an_layout *L);
/* o as subscribed for layout L: without a traced guest, a traced_guests_only observer's vCPU
 * callbacks are left out (vmscope/observe.h) */
void an_observer_for(struct vms_observer *o, const struct an_layout *L);

/* Copy a thread name into a 24-byte field (snprintf costs too much per event). */
static inline void an_copy_comm(char dst[24], const char *src)
{
	size_t i = 0;
	if (src)
		for (; i < 23 && src[i]; i++)
			dst[i] = src[i];
	dst[i] = '\0';
}

/* A vcpu_instead's comm (24 bytes that may all be read, vmscope/observe.h): copied whole,
 * three moves, not a byte loop (steal and findings copy one at every vcpu_instead) */
static inline void an_copy_comm24(char dst[24], const char *src)
{
	memcpy(dst, src, 24);
}

/* The same, NUL-padded to the 24 bytes (a consumer may compare it whole); NULL gives "". */
static inline void an_copy_padded(char dst[24], const char *src)
{
	size_t i = 0;
	for (; src && i < 23 && src[i]; i++)
		dst[i] = src[i];
	memset(dst + i, 0, 24 - i);
}

/* ---- rows per (table, isa, reason) (reason_index.c) ----
 * A map per consumer: the row of (table, isa, reason), UINT32_MAX when not added,
 * AN_REASON_UNINDEXED for a key that cannot be indexed (table >= 2^30, isa > 3): the caller
 * then scans its rows (and does not add). add returns false when out of memory. */
#define AN_REASON_UNINDEXED (UINT32_MAX - 1)
uint32_t an_reason_find(const struct vms_keymap *x, uint32_t table, uint32_t isa,
			uint32_t reason);
bool an_reason_add(struct vms_keymap *x, uint32_t table, uint32_t isa, uint32_t reason,
		   uint32_t row);

/* ---- who subscribed to what (an_common.c; analysis.c builds it) ----
 * Per callback, the observers that have it, in subscription order: a publication calls just
 * those, instead of asking every observer whether it has the callback (most have a few). */
enum an_cb {
	AN_CB_vcpu_state, AN_CB_guest_switch, AN_CB_exit_begin, AN_CB_exit_end, AN_CB_cpu_run,
	AN_CB_vcpu_mode, AN_CB_vcpu_wakeup, AN_CB_vcpu_instead, AN_CB_guest_wakeup,
	AN_CB_cpu_occupant, AN_CB_event,
	AN_CB_start, AN_CB_finish,
	AN_CB_host_event,   /* `event` for a host's events: those without guest_events_only */
	AN_CB_COUNT
};
/* One subscription: the callback (cast back to its own type by AN_EACH) and its context,
 * side by side, so that a publication loads each pair from one array and not through the
 * observer (two dependent loads less per call; 4.2 M vcpu_state calls on a 1 M-event pair). */
struct an_call {
	void (*fn)(void);
	void *ctx;
};
struct an_subs {
	struct an_call *by[AN_CB_COUNT];
	uint32_t n[AN_CB_COUNT];
	struct an_call *all;               /* the storage of by[]: AN_CB_COUNT x cap */
	uint32_t cap;
};
/* (Re)build from the observer list (after every change of it). Returns 0, or -1 when out of
 * memory (s unchanged). */
int an_subs_build(struct an_subs *s, const struct vms_observer *obs, uint32_t nr);
void an_subs_free(struct an_subs *s);
/* Call callback cb of every observer that has it: AN_EACH(subs, vcpu_state, &o). */
#define AN_EACH(subs, cb, ...) AN_EACH_IN(subs, AN_CB_##cb, cb, __VA_ARGS__)
/* The same for the subscribers in list `list` (an enum an_cb), called as callback cb, in
 * their order. The first AN_EACH_SITES subscribers each have a call site of their own: one
 * indirect call in a loop over three subscribers (report with latency and findings: the
 * built-in consumers' fused subscription, then those two) changes target at every call, and
 * a branch predictor that keys on the call's address then misses nearly all of them (1 M
 * events: 4.1 M of 7.4 M indirect calls, against 0.27 M with one subscriber). A site per
 * subscriber always calls the same callback. */
#define AN_EACH_SITES 4
#define AN_CALL_(cb, c, ...) \
	((__typeof__(((struct vms_observer *)0)->cb))(c).fn)((c).ctx, __VA_ARGS__)
#define AN_EACH_IN(subs, list, cb, ...)                                               \
	do {                                                                          \
		const struct an_subs *s_ = (subs);                                    \
		const struct an_call *c_ = s_->by[list];                              \
		uint32_t n_ = s_->n[list];                                            \
		if (n_ > 0)                                                           \
			AN_CALL_(cb, c_[0], __VA_ARGS__);                             \
		if (n_ > 1)                                                           \
			AN_CALL_(cb, c_[1], __VA_ARGS__);                             \
		if (n_ > 2)                                                           \
			AN_CALL_(cb, c_[2], __VA_ARGS__);                             \
		AN_EACH_REST_(cb, c_, n_, __VA_ARGS__);                               \
	} while (0)
/* (the subscribers from the fourth on: a site for the fourth, a loop for the rest) */
#define AN_EACH_REST_(cb, c_, n_, ...)                                                \
	do {                                                                          \
		if ((n_) > 3)                                                         \
			AN_CALL_(cb, (c_)[3], __VA_ARGS__);                           \
		for (uint32_t i_ = AN_EACH_SITES; i_ < (n_); i_++)                    \
			AN_CALL_(cb, (c_)[i_], __VA_ARGS__);                          \
	} while (0)

/* The same, with the callback each of the first three subscribers is expected to be (k0,
 * k1, k2: the built-in consumers' fused subscription, then report's latency and findings):
 * where it is (compared, not assumed: behind a window the gate is first, and other commands
 * subscribe others), called directly, so that with LTO the whole of it inlines into the
 * publisher instead of an indirect call to a function that saves and restores every
 * register it then uses; elsewhere, through its pointer, as AN_EACH. Each expected callback
 * is extern inline, always_inline (an external definition, whose address is the compared
 * one). */
void an_fused_state(void *ctx, const struct vms_obs_vcpu_state *o);
void an_fused_instead(void *ctx, const struct vms_obs_vcpu_instead *o);
void an_fused_exit_end(void *ctx, const struct vms_obs_exit *o);
void an_overlays_on_exit_begin(void *ctx, const struct vms_obs_exit *o);
void an_latency_on_state(void *ctx, const struct vms_obs_vcpu_state *o);
void an_latency_on_instead(void *ctx, const struct vms_obs_vcpu_instead *o);
void an_latency_on_exit_begin(void *ctx, const struct vms_obs_exit *o);
void an_findings_on_state(void *ctx, const struct vms_obs_vcpu_state *o);
void an_findings_on_instead(void *ctx, const struct vms_obs_vcpu_instead *o);
void an_findings_on_exit_begin(void *ctx, const struct vms_obs_exit *o);
void an_overlays_on_guest_switch(void *ctx, const struct vms_obs_guest_switch *o);
void an_latency_on_guest_switch(void *ctx, const struct vms_obs_guest_switch *o);
void an_latency_on_guest_wakeup(void *ctx, const struct vms_obs_guest_wakeup *o);
void an_contain_on_mode(void *ctx, const struct vms_obs_vcpu_mode *o);
void an_steal_on_cpu_run(void *ctx, const struct vms_obs_cpu_run *o);
void an_steal_on_wakeup(void *ctx, const struct vms_obs_vcpu_wakeup *o);
#define AN_CALL_AS_(cb, c, k, o) \
	((c).fn == (void (*)(void))(k) ? (k)((c).ctx, (o)) : AN_CALL_(cb, c, (o)))
#define AN_EACH_KNOWN(subs, cb, k0, k1, k2, o)                                        \
	do {                                                                          \
		const struct an_subs *k_ = (subs);                                    \
		const struct an_call *kc_ = k_->by[AN_CB_##cb];                       \
		uint32_t kn_ = k_->n[AN_CB_##cb];                                     \
		if (kn_ > 0)                                                          \
			AN_CALL_AS_(cb, kc_[0], k0, o);                               \
		if (kn_ > 1)                                                          \
			AN_CALL_AS_(cb, kc_[1], k1, o);                               \
		if (kn_ > 2)                                                          \
			AN_CALL_AS_(cb, kc_[2], k2, o);                               \
		AN_EACH_REST_(cb, kc_, kn_, (o));                                     \
	} while (0)

/* The same with one expected callback, of the only subscriber report has */
#define AN_EACH_KNOWN1(subs, cb, k, o) AN_EACH_KNOWN(subs, cb, k, k, k, o)

/* dist.c: d gets s's samples, as if each were added to it (count, sum, min, max, the
 * exact samples or the histogram's counts alike) */
void an_dist_merge(struct vms_dist *d, const struct vms_dist *s);

/* ---- the publisher: vcpu_state.c ---- */
struct an_sm;
struct an_sm *an_sm_new(const struct an_layout *L);
void an_sm_free(struct an_sm *sm);
/* whom it publishes to (owned by analysis.c, rebuilt in place until the first event) */
void an_sm_set_subs(struct an_sm *sm, const struct an_subs *subs);
void an_sm_event(struct an_sm *sm, const struct vms_event *ev, uint64_t t);
/* whether to follow and publish host CPU occupants (cpu_occupant): before the first event */
void an_sm_follow_occupants(struct an_sm *sm, bool on);
/* host m records no sched_switch: its host-mode occupants are unknown (before the first
 * event; vms_analysis_host_unscheduled) */
void an_sm_host_unscheduled(struct an_sm *sm, uint32_t m);
/* the host threads seen past AN_OCC_THREADS_MAX, not followed to their CPUs */
uint64_t an_sm_occ_unfollowed(const struct an_sm *sm);
void an_sm_start(struct an_sm *sm, uint64_t t0);
void an_sm_finish(struct an_sm *sm, uint64_t t_end);
/* Checkpoints: from now (before the first event) the state machine keeps its last words,
 * what a window's gate keeps before its window (window.c); an_sm_last_words tells them to o
 * (a gate that never opens, whose snapshot is then a checkpoint's) as if o had seen every
 * observation so far: the CPUs in the order first told of, then each vCPU. keep: 0, or -1
 * out of memory; last words: 0, or -1 when not kept or something told could not be. */
int an_sm_keep_last_words(struct an_sm *sm);
int an_sm_last_words(struct an_sm *sm, const struct vms_observer *o);
void an_sm_stream_end(struct an_sm *sm, uint32_t machine, uint32_t stream, uint64_t t);
void an_sm_machine_end(struct an_sm *sm, uint32_t machine, uint64_t t);
/* does the vCPU's host record sched_switch (can preemption be seen)? */
bool an_sm_preempt_visible(const struct an_sm *sm, uint32_t vidx);
/* "runnable" from a sched_switch prev_state */
bool an_prev_state_runnable(uint64_t prev_state);

/* ---- consumers: each new() fills *o with its callbacks ---- */
/* (the callbacks that several built-in consumers share: analysis.c calls them directly,
 * behind one subscription of its own; each new() still puts them in *o) */
void an_vtime_on_state(void *ctx, const struct vms_obs_vcpu_state *o);
void an_overlays_on_state(void *ctx, const struct vms_obs_vcpu_state *o);
void an_overlays_on_instead(void *ctx, const struct vms_obs_vcpu_instead *o);
void an_overlays_on_exit_end(void *ctx, const struct vms_obs_exit *o);
void an_exits_on_state(void *ctx, const struct vms_obs_vcpu_state *o);
void an_exits_on_exit_end(void *ctx, const struct vms_obs_exit *o);
void an_steal_on_state(void *ctx, const struct vms_obs_vcpu_state *o);
void an_steal_on_instead(void *ctx, const struct vms_obs_vcpu_instead *o);
struct an_vtime;     /* vcpu_time.c */
struct an_vtime *an_vtime_new(const struct an_layout *L, const struct vms_sinks *sinks,
			      struct vms_observer *o);
const uint64_t *an_vtime_ns(const struct an_vtime *vt, uint32_t vidx); /* [VMS_STATE_COUNT] */
const uint64_t *an_vtime_below_ns(const struct an_vtime *vt, uint32_t vidx);
uint64_t an_vtime_poll_ns(const struct an_vtime *vt, uint32_t vidx);
void an_vtime_free(struct an_vtime *vt);

struct an_overlays;  /* overlays.c */
struct an_overlays *an_overlays_new(const struct an_layout *L, const struct vms_sinks *sinks,
				    struct vms_observer *o);
/* after finish: guest threads ordered by machine then tid (valid until free) */
int an_overlays_results(struct an_overlays *ov, const struct vms_gthread_stats **out,
			uint32_t *n);
void an_overlays_free(struct an_overlays *ov);

struct an_exits;     /* exits.c */
struct an_exits *an_exits_new(const struct an_layout *L, struct vms_observer *o);
/* after finish: sorted tables (caller frees the array, not the dists) */
int an_exits_vcpu(const struct an_exits *ex, uint32_t vidx, struct vms_exit_stats **out,
		  uint32_t *n);
int an_exits_guest(const struct an_exits *ex, uint32_t machine, struct vms_exit_stats **out,
		   uint32_t *n);
uint64_t an_exits_unpaired(const struct an_exits *ex, uint32_t vidx);
void an_exits_free(struct an_exits *ex);

struct an_steal;     /* steal.c */
/* tables: the thieves (an_steal_entries) and the run-queue latencies; without, only the
 * unattributed waits are counted (an_steal_unattributed, and their bucket in the entries;
 * an_steal_runq NULL) */
struct an_steal *an_steal_new(const struct an_layout *L, bool tables, struct vms_observer *o);
/* after finish: sorted by ns descending (valid until free) */
const struct vms_steal_entry *an_steal_entries(const struct an_steal *st, uint32_t vidx,
					       uint32_t *n);
const struct vms_dist *an_steal_runq(const struct an_steal *st, uint32_t vidx);
const struct vms_unattributed *an_steal_unattributed(const struct an_steal *st, uint32_t *n);
void an_steal_free(struct an_steal *st);

struct an_contain;   /* containment.c */
struct an_contain *an_contain_new(const struct an_layout *L, struct vms_observer *o);
void an_contain_get(const struct an_contain *c, uint32_t vidx, uint64_t *in, uint64_t *total);
/* the per-guest sums into the model's sync info */
void an_contain_to_model(const struct an_contain *c);
void an_contain_free(struct an_contain *c);

/* exit tables shared by exits.c (per vCPU and per guest) */
struct an_exit_row {
	uint32_t isa, reason;
	struct vms_dist *dist;
	uint64_t unfinished;
	uint64_t below_ns;         /* of the finished exits' costs, the layer below's part */
};
struct an_exit_table {
	struct an_exit_row *row;
	uint32_t n, cap;
	uint32_t last;             /* index of the last hit: exits come in runs of one reason */
	uint32_t near[64];         /* row + 1 by reason % 64, 0 none: a vCPU's few reasons alternate
				    * (HLT, I/O, interrupts), so `last` misses half the exits; VMX's
				    * basic reasons are below 64 and SVM's common intercepts differ in
				    * their low 6 bits, so each has a slot (by % 8, the synthesized
				    * pair's 1/49, 32/40/48 and 12/52 shared one) */
};

/* window.c: the time window's gate between the state machine and the consumers */
struct an_gate;
/* consumers: whom the gate passes on to (rebuilt in place by analysis.c) */
struct an_gate *an_gate_new(uint32_t nr_v, uint64_t from, const struct an_subs *consumers,
			    struct vms_observer *out);
void an_gate_free(struct an_gate *g);
/* What the gate keeps before `from` (the last word on each CPU and vCPU), for a checkpoint:
 * written by a gate that never opens (the shadow of a recording run, analysis.c), read back
 * into a new gate of the same layout, which then behaves as if it had seen the run up to
 * there. restore: 0 (*used: the bytes it took), or <0 with err set (another layout or build,
 * cut, or values no run makes). */
int an_gate_snapshot(const struct an_gate *g, FILE *f);
int an_gate_restore(struct an_gate *g, const struct an_layout *L, const void *buf, size_t len,
		    size_t *used, struct vms_error *err);

#endif
