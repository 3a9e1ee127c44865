/* vmscope: the guest threads' overlays (docs/vm-analysis.md §4) on their own, outside an
 * analysis: the consumer that, inside vms_analysis, streams the thread_interval sink (why a
 * guest thread that its guest ran did not run: VMM, preempted, halted), for a consumer that
 * receives the state machine's observations by another way and wants the same intervals
 * (the export's second stage, lib/output/export.c, which gets them through a queue: the
 * analysis then does not make them in the thread that reads the traces).
 *
 * Make it for the model of the pass, give it the observations in their order (with vidx as
 * vms_overlays_vidx numbers the vCPUs: vmscope/observe.h), and it calls
 * sinks->thread_interval as the analysis would, with the same intervals in the same order
 * relative to those observations. Memory is bounded by the model and the guest threads. */
#ifndef VMSCOPE_OVERLAYS_H
#define VMSCOPE_OVERLAYS_H

#include <stdint.h>

#include "vmscope/model.h"
#include "vmscope/observe.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vms_overlays;

/* NULL when out of memory; the model is read, never written, and must outlive it */
struct vms_overlays *vms_overlays_new(const struct vms_model *model, const struct vms_sinks *sinks);
/* its callbacks (start, vcpu_state, vcpu_instead, guest_switch, exit_begin, exit_end, finish) */
struct vms_observer vms_overlays_observer(struct vms_overlays *ov);
/* vidx of guest machine's vCPU, UINT32_MAX when it has none */
uint32_t vms_overlays_vidx(const struct vms_overlays *ov, uint32_t machine, uint32_t vcpu);
void vms_overlays_free(struct vms_overlays *ov);

#ifdef __cplusplus
}
#endif
#endif
