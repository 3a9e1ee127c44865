/* The wake-up scenarios of `vmscope synth` (latency blame): scripted episodes on the default
 * scenario's machines, each planting guest thread wake-ups whose causes are known, with the
 * ground truth of every wake-up's breakdown and of the findings `vmscope report` should make. */
#ifndef VMS_SYNTH_WAKEUP_SCENARIOS_H
#define VMS_SYNTH_WAKEUP_SCENARIOS_H

#include <stdbool.h>
#include <stdint.h>

#include "vmscope/synth.h"
#include "synth/synth_context.h"

bool vms_synth_is_wakeup_scenario(const char *name);
int vms_synth_wakeup_run(const struct vms_synth_config *cfg, struct vms_synth_truth *truth,
			 struct vms_error *err);

/* synth.c: open the trace.dat pair (4 host CPUs, 2 vCPUs) into x->host.w / x->guest.w, with
 * the event formats and ids of the default scenario. */
int vms_synth_open_tracedat(struct vms_synth_ctx *x, const struct vms_synth_config *cfg,
			    uint64_t host_id, uint64_t guest_id, struct vms_error *err);

#endif
