/* A small CPU scheduler model: a few threads on one CPU that run bursts, sleep, wake up and
 * take turns (a round-robin time slice when several are runnable), and the idle task. It
 * drives a guest vCPU's scheduler (only while the vCPU is in guest mode: the lane decides when
 * steps happen) and the host's housekeeping CPUs. Times are host TSC cycles. */
#ifndef VMS_SYNTH_SCHED_MODEL_H
#define VMS_SYNTH_SCHED_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "synth/event_emit.h"
#include "synth/prng.h"

#define VMS_SCHED_MAX_THREADS 6

enum { VMS_ST_SLEEPING = 0, VMS_ST_RUNNABLE, VMS_ST_RUNNING };

struct vms_sthread {
	struct vms_task task;
	double burst_ns, sleep_ns;  /* means */
	uint8_t state;
	uint64_t wake_at;           /* when SLEEPING */
	uint64_t left;              /* cycles of the current burst still to run */
	int32_t truth;              /* index in the truth's guest threads, -1 when none */
};

/* What a step did, for the caller to write and account. */
struct vms_sched_ops {
	void (*on_switch)(void *ctx, uint64_t ts, const struct vms_sthread *prev, int64_t prev_state,
			  const struct vms_sthread *next);  /* NULL = the idle task */
	void (*on_wakeup)(void *ctx, uint64_t ts, const struct vms_sthread *waker,
			  const struct vms_sthread *woken);
};

struct vms_sched {
	uint32_t n;
	struct vms_sthread th[VMS_SCHED_MAX_THREADS];
	int cur;                    /* running thread, -1 = idle */
	uint64_t cur_start, cur_end;
	int rq[VMS_SCHED_MAX_THREADS];
	uint32_t nrq;
	double cyc_per_ns;
	uint64_t slice;             /* cycles */
	uint64_t phase_len;         /* load phases: busy / calm, alternating */
	double busy_factor, calm_factor;
	struct vms_prng *rng;
};

void vms_sched_init(struct vms_sched *s, struct vms_prng *rng, double cyc_per_ns, double slice_ns);
void vms_sched_add(struct vms_sched *s, const struct vms_task *t, double burst_ns, double sleep_ns,
		   int32_t truth, uint64_t now);
/* Earliest planned action (a burst or slice end, or a wake-up); UINT64_MAX when none. */
uint64_t vms_sched_next(const struct vms_sched *s);
/* Do the earliest action at `now` (>= the planned time: the CPU may have been unavailable).
 * Returns the time of the last event it produced. */
uint64_t vms_sched_step(struct vms_sched *s, uint64_t now, const struct vms_sched_ops *ops,
			void *ctx);
/* The CPU was taken away from `from` to `to`: the running thread's burst ends that much later. */
void vms_sched_stall(struct vms_sched *s, uint64_t from, uint64_t to);

#endif
