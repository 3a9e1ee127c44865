/* vmscope: findings first. A ranked list of what went wrong, each one sentence with its
 * evidence, machine, vCPU, thread and time range, for `report` to lead with.
 *
 * The rules (also in vmscope-report(1)); each finding's score is the time it cost (ns), and
 * the list is sorted by it:
 *  steal        a host thread took >= 5% (and >= 1 ms) of a vCPU's time while it was runnable
 *  latency      a guest thread with >= 20 wake-ups whose p99 wake-up latency is >= 1 ms, or
 *               >= 200 us and >= 10x its p50: which cause makes the tail (above p99), and who
 *  exit-storm   >= 5,000 exits of one reason in one 100 ms window (50,000/s) in a guest,
 *               with the guest RIP most of them came from
 *  halt-poll    halt-polling kept a host CPU busy for >= 5% of a vCPU's time
 *  sync         a guest's containment below 99%: its times may be off
 *  lost         a trace lost events, or ended abruptly
 * A consumer of observations for what the tables do not keep (when a thief stole, when a
 * storm raged, on which CPU polling burnt); the rest comes from the analysis' tables and the
 * latency consumer at the end. */
#ifndef VMSCOPE_FINDINGS_H
#define VMSCOPE_FINDINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "vmscope/analysis.h"
#include "vmscope/latency.h"
#include "vmscope/model.h"
#include "vmscope/observe.h"
#include "vmscope/source.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vms_finding {
	const char *kind;             /* "steal", "latency", "exit-storm", "halt-poll", "sync",
	                                 "lost" */
	char text[320];               /* one sentence; times in s/ms/us/ns, or in cycles after
	                                 vms_findings_time_unit(f, true) */
	uint32_t machine;             /* the guest (or the machine whose trace it is) */
	int32_t vcpu, tid;            /* -1 when not about one */
	uint64_t start, end;          /* reference ns; 0, 0 when it is about the whole trace */
	uint64_t score;               /* ns the problem cost, for ranking */
};

struct vms_findings;
/* The consumer; *o to subscribe before the run. */
struct vms_findings *vms_findings_new(const struct vms_model *model, struct vms_observer *o);
void vms_findings_free(struct vms_findings *f);
/* The reference times are clock cycles of an unknown rate (a trace with no TSC2NSEC and no
 * --tsc-hz): the sentences then say cycles, never seconds, and the thresholds above apply to
 * cycles. Default: nanoseconds. */
void vms_findings_time_unit(struct vms_findings *f, bool cycles);
/* After the run: apply the rules (lat may be NULL; srcs[i] the source of machine i or NULL).
 * Returns the number of findings. */
uint32_t vms_findings_compute(struct vms_findings *f, const struct vms_analysis *a,
			      const struct vms_latency *lat, struct vms_source *const *srcs,
			      uint32_t nr_srcs);
uint32_t vms_findings_count(const struct vms_findings *f);
const struct vms_finding *vms_findings_get(const struct vms_findings *f, uint32_t i);

#ifdef __cplusplus
}
#endif
#endif
