/* A synthesized fleet's plan (vmscope/synth.h): which host gets which scenario, seed, name
 * and kernel label, and the truth the fleet queries must find (docs/fleet.md). */
#include <stdio.h>

#include "vmscope/synth.h"
#include "vmscope/writers.h"

void vms_synth_fleet_host(uint32_t i, uint64_t seed, struct vms_synth_fleet_host *h)
{
	snprintf(h->name, sizeof h->name, "host-%03u", i);
	h->seed = seed + i;
	h->noisy = i % 4 == 1;
	h->storm = i % 4 == 3;
	h->scenario = h->noisy ? "noisy-neighbour" : h->storm ? "exit-storm" : "quiet";
	h->kernel = i % 2 ? "6.6" : "6.1";
}

static void names(struct vms_json *j, const char *key, uint32_t n, uint64_t seed, bool storm)
{
	vms_json_begin_array(j, key);
	for (uint32_t i = 0; i < n; i++) {
		struct vms_synth_fleet_host h;
		vms_synth_fleet_host(i, seed, &h);
		if (storm ? h.storm : h.noisy)
			vms_json_string(j, NULL, h.name);
	}
	vms_json_end_array(j);
}

int vms_synth_fleet_truth_json(uint32_t n, uint64_t seed, FILE *f)
{
	struct vms_json j;
	vms_json_init(&j, f, true);
	vms_json_begin_object(&j, NULL);
	vms_json_string(&j, "note", "SIMULATED fleet (vmscope synth --hosts)");
	vms_json_begin_array(&j, "hosts");
	for (uint32_t i = 0; i < n; i++) {
		struct vms_synth_fleet_host h;
		vms_synth_fleet_host(i, seed, &h);
		vms_json_begin_object(&j, NULL);
		vms_json_string(&j, "name", h.name);
		vms_json_string(&j, "dir", h.name);
		vms_json_uint(&j, "seed", h.seed);
		vms_json_string(&j, "scenario", h.scenario);
		vms_json_string(&j, "kernel", h.kernel);
		vms_json_bool(&j, "noisy", h.noisy);
		vms_json_bool(&j, "storm", h.storm);
		vms_json_end_object(&j);
	}
	vms_json_end_array(&j);
	names(&j, "noisy", n, seed, false);
	names(&j, "storms", n, seed, true);
	vms_json_end_object(&j);
	vms_json_finish(&j);
	return ferror(f) ? -1 : 0;
}
