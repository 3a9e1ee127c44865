/* Pieces of the truth's JSON that the scenarios share (truth_json.c). */
#ifndef VMS_SYNTH_TRUTH_JSON_H
#define VMS_SYNTH_TRUTH_JSON_H

#include <stdbool.h>
#include <stdio.h>

#include "vmscope/synth.h"

void vms_synth_json_str(FILE *f, const char *s);
/* "{" then simulated, schema_version, command, generator, scenario, seed, timebase, tsc_hz,
 * tsc2nsec, window, each line ending with a comma. */
void vms_synth_truth_head_json(FILE *f, const struct vms_synth_truth *t);
/* "    KEY": {path, trace_id, cpus, first_ts, last_ts, total, events} */
void vms_synth_file_json(FILE *f, const char *key, const struct vms_synth_file_truth *ft);
/* One vCPU's object in a guest's "vcpus" array; a comma after it unless last. */
void vms_synth_vcpu_json(FILE *f, const struct vms_synth_vcpu_truth *vt, bool last);

#endif
