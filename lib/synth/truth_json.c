/* The ground truth as JSON, for `vmscope synth --truth FILE` and the round-trip tests. */
#include <inttypes.h>

#include "vmscope/synth.h"
#include "synth/truth_json.h"

/* A JSON string: paths come from the command line and may hold anything. */
void vms_synth_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void vms_synth_file_json(FILE *f, const char *key, const struct vms_synth_file_truth *ft)
{
	fprintf(f, "    \"%s\": {\"path\": ", key);
	vms_synth_json_str(f, ft->path);
	fprintf(f, ", \"trace_id\": \"0x%016" PRIx64 "\", \"cpus\": %u, "
		"\"first_ts\": %" PRIu64 ", \"last_ts\": %" PRIu64 ", \"total\": %" PRIu64 ", \"events\": {",
		ft->trace_id, ft->nr_cpus, ft->first_ts, ft->last_ts, ft->total);
	int first = 1;
	for (int e = 0; e < VMS_SYNTH_NEVENTS; e++) {
		if (!ft->count[e])
			continue;
		fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", vms_synth_event_name(e), ft->count[e]);
		first = 0;
	}
	fprintf(f, "}}");
}

/* One vCPU's object of a guest's "vcpus" (also the cloud-host scenario's). */
void vms_synth_vcpu_json(FILE *f, const struct vms_synth_vcpu_truth *vt, bool last)
{
	fprintf(f, "      {\"vcpu\": %u, \"host_tid\": %d, \"host_cpu\": %u,\n       \"ns\": {",
		vt->vcpu, vt->host_tid, vt->host_cpu);
	for (int s = 0; s < VMS_SYNTH_NSTATES; s++)
		fprintf(f, "%s\"%s\": %" PRIu64, s ? ", " : "", vms_synth_state_name(s), vt->ns[s]);
	fprintf(f, "}, \"halt_poll_ns\": %" PRIu64 ", \"guest_end_ns\": %" PRIu64 ",\n"
		"       \"exits\": [", vt->halt_poll_ns, vt->guest_end_ns);
	for (uint32_t i = 0; i < vt->nr_exits; i++)
		fprintf(f, "%s{\"reason\": %u, \"name\": \"%s\", \"count\": %" PRIu64 ", \"total_ns\": %"
			PRIu64 "}", i ? ", " : "", vt->exits[i].reason, vt->exits[i].name,
			vt->exits[i].count, vt->exits[i].total_ns);
	fprintf(f, "],\n       \"steal\": [");
	for (uint32_t i = 0; i < vt->nr_steal; i++)
		fprintf(f, "%s{\"tid\": %d, \"comm\": \"%s\", \"ns\": %" PRIu64 "}", i ? ", " : "",
			vt->steal[i].tid, vt->steal[i].comm, vt->steal[i].ns);
	fprintf(f, "],\n       \"preemptions\": %" PRIu64 ", \"halts\": %" PRIu64
		", \"wakeups\": %" PRIu64 ", \"runq_latency_ns\": %" PRIu64 ",\n",
		vt->preemptions, vt->halts, vt->wakeups, vt->runq_latency_ns);
	fprintf(f, "       \"time_shift\": {\"offset\": %" PRId64 ", \"scaling\": %" PRIu64
		", \"frac\": %" PRIu64 "}}%s\n", vt->ts_offset, vt->ts_scaling, vt->ts_frac,
		last ? "" : ",");
}

/* Wake-up scenarios: the wake-ups' causes summed, and the findings report should make, the
 * one it should lead with first. */
static void wakeups_json(FILE *f, const struct vms_synth_truth *t)
{
	fprintf(f, ",\n  \"wakeups\": {\"count\": %" PRIu64 ", \"ns\": {", t->nr_wakeups);
	for (int c = 0; c < VMS_SYNTH_NCAUSES; c++)
		fprintf(f, "%s\"%s\": %" PRIu64, c ? ", " : "", vms_synth_cause_name(c), t->wakeup_ns[c]);
	fprintf(f, "}},\n  \"findings\": [");
	for (uint32_t i = 0; i < t->nr_findings; i++) {
		const struct vms_synth_finding *x = &t->finding[i];
		fprintf(f, "%s\n    {\"kind\": \"%s\", \"vcpu\": ", i ? "," : "", x->kind);
		if (x->vcpu >= 0)
			fprintf(f, "%d", x->vcpu);
		else
			fprintf(f, "null");
		fprintf(f, ", \"tid\": ");
		if (x->tid >= 0)
			fprintf(f, "%d", x->tid);
		else
			fprintf(f, "null");
		fprintf(f, ", \"names\": ");
		vms_synth_json_str(f, x->names);
		if (x->count)
			fprintf(f, ", \"count\": %" PRIu64, x->count);
		fprintf(f, "}");
	}
	fprintf(f, "\n  ]");
}

/* The members every truth starts with: what it is, the seed, the clocks, the window. */
void vms_synth_truth_head_json(FILE *f, const struct vms_synth_truth *t)
{
	/* schema_version: raised when a member changes meaning or goes away */
	fprintf(f, "{\n  \"simulated\": true,\n  \"schema_version\": 1,\n  \"command\": \"synth-truth\",\n"
		   "  \"generator\": \"vmscope synth\",\n");
	fprintf(f, "  \"scenario\": \"%s\",\n  \"seed\": %" PRIu64 ",\n", t->scenario, t->seed);
	fprintf(f, "  \"timebase\": \"host ns = (host_tsc * mult) >> shift; guest events at the exact "
		"inverse of their guest TSC\",\n");
	fprintf(f, "  \"tsc_hz\": %" PRIu64 ",\n  \"tsc2nsec\": {\"mult\": %u, \"shift\": %u},\n",
		t->tsc_hz, t->mult, t->shift);
	fprintf(f, "  \"window\": {\"start_ns\": %" PRIu64 ", \"end_ns\": %" PRIu64 ", \"start_tsc\": %"
		PRIu64 ", \"end_tsc\": %" PRIu64 "},\n", t->window_start_ns, t->window_end_ns,
		t->window_start_tsc, t->window_end_tsc);
}

int vms_synth_truth_write_json(const struct vms_synth_truth *t, FILE *f)
{
	vms_synth_truth_head_json(f, t);
	fprintf(f, "  \"files\": {\n");
	vms_synth_file_json(f, "host", &t->host);
	fprintf(f, ",\n");
	vms_synth_file_json(f, "guest", &t->guest);
	fprintf(f, "\n  },\n");
	fprintf(f, "  \"guests\": [{\n    \"name\": \"%s\", \"trace_id\": \"0x%016" PRIx64 "\", "
		"\"qemu_pid\": %d, \"qemu_pid_source\": \"%s\",\n    \"vcpus\": [\n", t->guest_name,
		t->guest.trace_id, t->qemu_pid, t->qemu_pid_how ? t->qemu_pid_how : "none");
	for (uint32_t v = 0; v < t->nr_vcpus; v++)
		vms_synth_vcpu_json(f, &t->vcpu[v], v + 1 == t->nr_vcpus);
	fprintf(f, "    ],\n    \"threads\": [\n");
	for (uint32_t i = 0; i < t->nr_gthreads; i++) {
		const struct vms_synth_gthread_truth *g = &t->gthread[i];
		fprintf(f, "      {\"tid\": %d, \"comm\": \"%s\", \"vcpu\": %u, \"running_ns\": %" PRIu64
			", \"vmm_ns\": %" PRIu64 ", \"preempted_ns\": %" PRIu64 ", \"halted_ns\": %" PRIu64
			"}%s\n", g->tid, g->comm, g->vcpu, g->running_ns, g->vmm_ns, g->preempted_ns,
			g->halted_ns, i + 1 < t->nr_gthreads ? "," : "");
	}
	fprintf(f, "    ]\n  }],\n  \"sync_samples\": [\n");
	for (uint32_t i = 0; i < t->nr_samples; i++) {
		const struct vms_synth_sync_sample *s = &t->sample[i];
		fprintf(f, "    {\"vcpu\": %u, \"guest_tsc\": %" PRIu64 ", \"host_tsc\": %" PRIu64
			", \"entry_tsc\": %" PRIu64 ", \"exit_tsc\": %" PRIu64 "}%s\n", s->vcpu,
			s->guest_tsc, s->host_tsc, s->entry_tsc, s->exit_tsc,
			i + 1 < t->nr_samples ? "," : "");
	}
	fprintf(f, "  ]");
	if (t->lttng)
		fprintf(f, ",\n  \"lttng\": {\"guest_boot_ns\": %" PRIu64 ", \"host_epoch_ns\": %" PRId64
			", \"clock_error_ns\": %" PRId64 ", \"vm_uid\": %" PRIu64
			", \"vmsync_pairs\": %" PRIu64 "}", t->guest_boot_ns, t->host_epoch_ns,
			t->clock_error_ns, t->vm_uid, t->vmsync_pairs);
	if (t->nr_wakeups || t->nr_findings)
		wakeups_json(f, t);
	fprintf(f, "\n}\n");
	return ferror(f) ? VMS_ERR_IO : VMS_OK;
}
