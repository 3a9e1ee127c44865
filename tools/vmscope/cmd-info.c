/* vmscope info: what a trace is — format, role, clock, CPUs, event counts per type, and the
 * options that link machines (TRACEID, GUEST, TIME_SHIFT, TSC2NSEC) — and what the traces
 * together can tell, analysis by analysis (vmscope/availability.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "vmscope/availability.h"
#include "vmscope/writers.h"

static const char usage[] =
	"usage: vmscope info [--json] [--raw] [-o FILE] [--tsc-hz HZ] [--host FILE]\n"
	"                    [--guest NAME=FILE] TRACE...\n"
	"\n"
	"For each trace: its format, the role vmscope found for its machine (from the data, not\n"
	"the file name), clock, CPUs, first and last event time, events per type, lost events,\n"
	"and the trace.dat options that link host and guests (TRACEID, GUEST, TIME_SHIFT,\n"
	"TSC2NSEC, OFFSET, DATE). Times are in the reference timebase of the analyses (seconds\n"
	"as trace-cmd prints them, and ns). A xentrace file: its physical CPUs, domains and\n"
	"vCPUs, record classes and lost records; its times are cycles unless --tsc-hz (or\n"
	"--cpu-hz) gives the CPU frequency.\n"
	"Then, for the traces together, what can be known: each analysis (vCPU states,\n"
	"preemption and steal, halted vs preempted, exits, guest thread overlays, latency blame,\n"
	"fused CPU view, clock sync) available, partial or not available, with the missing\n"
	"event or option that decides it; docs/recording.md says how to record it.\n"
	"\n"
	"  --json              one JSON object: the header (schema_version, time_unit), traces,\n"
	"                      analyses (what can be known)\n"
	"  --raw               also the first and last raw timestamps (the trace's own clock)\n"
	CLI_HELP_OUTPUT CLI_HELP_HOST_GUEST;

struct per_source {
	uint64_t events, first, last;        /* raw */
	uint64_t first_t, last_t;            /* reference */
	bool seen;
};

struct counts {
	struct per_source *ps;
};

static void count(void *ctx, const struct vms_event *ev, uint64_t t)
{
	struct counts *c = ctx;
	struct per_source *p = &c->ps[ev->machine];
	if (!p->seen) {
		p->first = ev->ts;
		p->first_t = t;
		p->seen = true;
	}
	p->last_t = t;
	if (ev->ts < p->first)
		p->first = ev->ts;
	if (ev->ts > p->last)
		p->last = ev->ts;
	p->events++;
}

static const char *role_name(unsigned role)
{
	if ((role & VMS_ROLE_HOST) && (role & VMS_ROLE_GUEST))
		return "host+guest";
	if (role & VMS_ROLE_HOST)
		return "host";
	if (role & VMS_ROLE_GUEST)
		return "guest";
	return "none (no KVM events, no host/guest options)";
}

/* The VMM processes: of this guest on its host; of every guest (traced or not) this host
 * runs. */
static void text_vmm(FILE *f, struct vms_model *model, uint32_t i)
{
	const struct vms_machine *mc = vms_model_machine_c(model, i);
	char b[192];
	if (mc->host >= 0)
		fprintf(f, "  vmm          on %s: %s\n",
			cli_text(cli_machine_name(model, (uint32_t)mc->host)),
			cli_vmm_text(model, mc, b, sizeof b));
	for (uint32_t g = 0; g < vms_model_nr_machines(model); g++) {
		const struct vms_machine *gm = vms_model_machine_c(model, g);
		if (g != i && gm->host == (int32_t)i)
			fprintf(f, "  vm           %s: %s\n", cli_text(gm->name),
				cli_vmm_text(model, gm, b, sizeof b));
	}
}

static void json_vmm(struct vms_json *j, struct vms_model *model, uint32_t i)
{
	cli_vmm_json(j, model, vms_model_machine_c(model, i));
	vms_json_begin_array(j, "vms");
	for (uint32_t g = 0; g < vms_model_nr_machines(model); g++) {
		const struct vms_machine *gm = vms_model_machine_c(model, g);
		if (g == i || gm->host != (int32_t)i)
			continue;
		vms_json_begin_object(j, NULL);
		vms_json_string(j, "machine", gm->name);
		cli_vmm_json(j, model, gm);
		vms_json_end_object(j);
	}
	vms_json_end_array(j);
}

static void text_source(FILE *f, struct vms_session *s, uint32_t i, const struct per_source *p,
			bool raw)
{
	struct vms_source *src = vms_session_source(s, i);
	const struct vms_trace_meta *m = &src->meta;
	struct vms_model *model = vms_session_model(s);
	const struct vms_machine *mc = vms_model_machine_c(model, i);
	fprintf(f, "%s\n", cli_text(src->path));
	fprintf(f, "  format       %s\n", cli_text(m->format));
	fprintf(f, "  machine      %s\n", cli_text(mc->name));
	fprintf(f, "  role         %s\n", role_name(mc->role));
	fprintf(f, "  clock        %s%s\n", m->clock[0] ? cli_text(m->clock) : "?",
		m->ts_in_ns ? " (nanoseconds)" : " (counter ticks)");
	if (m->has_tsc2nsec)
		fprintf(f, "  tsc2nsec     mult %u shift %u offset %" PRIu64 " (%.6f GHz)\n", m->tsc_mult,
			m->tsc_shift, m->tsc_offset,
			m->tsc_mult ? (double)(1ull << (m->tsc_shift < 63 ? m->tsc_shift : 63)) /
					      (double)m->tsc_mult
				    : 0.0);
	if (m->offset_ns)
		fprintf(f, "  offset       %" PRId64 " ns\n", m->offset_ns);
	if (m->has_date)
		fprintf(f, "  date offset  %" PRId64 " ns\n", m->date_offset_ns);
	fprintf(f, "  cpus         %u\n", m->nr_cpus);
	fprintf(f, "  streams      %u\n", src->ops->nr_streams(src));
	if (m->has_trace_id)
		fprintf(f, "  trace id     0x%016" PRIx64 "\n", m->trace_id);
	for (uint32_t g = 0; g < m->nr_guests; g++) {
		const struct vms_guest_map *gm = &m->guests[g];
		fprintf(f, "  guest        \"%s\" trace id 0x%016" PRIx64 ", %u vCPUs:", cli_text(gm->name),
			gm->trace_id,
			gm->nr_vcpus);
		for (uint32_t k = 0; k < gm->nr_vcpus; k++)
			fprintf(f, " %u->%d", gm->vcpu[k], gm->host_tid[k]);
		fputc('\n', f);
	}
	text_vmm(f, model, i);
	if (m->timeshift) {
		const struct vms_timeshift *ts = m->timeshift;
		fprintf(f, "  time shift   peer 0x%016" PRIx64 ", flags %u%s, %u CPUs\n", ts->peer_trace_id,
			ts->flags, ts->flags & VMS_TIMESHIFT_INTERPOLATE ? " (interpolate)" : "", ts->nr_cpus);
		for (uint32_t c = 0; c < ts->nr_cpus; c++)
			for (uint32_t k = 0; k < ts->cpu[c].n; k++)
				fprintf(f, "    cpu %u sample %u: time %" PRIu64 " offset %" PRId64
					   " scaling %" PRIu64 " frac %" PRIu64 "\n",
					c, k, ts->cpu[c].time[k], ts->cpu[c].offset[k], ts->cpu[c].scaling[k],
					ts->cpu[c].frac ? ts->cpu[c].frac[k] : 0);
	}
	fprintf(f, "  events       %" PRIu64 "\n", p->events);
	if (p->seen && cli_cycles()) {
		fprintf(f, "  time         %" PRIu64 " .. %" PRIu64 " cycles (no rate known: --tsc-hz)\n",
			p->first_t, p->last_t);
	} else if (p->seen) {
		char a[48], b[48], d[32];
		cli_seconds(p->first_t, a, sizeof a);
		cli_seconds(p->last_t, b, sizeof b);
		fprintf(f, "  time         %s .. %s (%s; reference ns %" PRIu64 " .. %" PRIu64 ")\n", a,
			b, cli_ns(p->last_t - p->first_t, d, sizeof d), p->first_t, p->last_t);
	}
	if (p->seen && raw)
		fprintf(f, "  raw time     %" PRIu64 " .. %" PRIu64 "\n", p->first, p->last);
	if (m->lost_events || m->lost_events_unknown)
		fprintf(f, "  lost         %s%" PRIu64 "\n", m->lost_events_unknown ? "at least " : "",
			m->lost_events);
	if (m->ended_abruptly)
		fprintf(f, "  ended        abruptly (the traced program did not close the trace: killed or "
			   "crashed); what was flushed before is all here\n");
	cli_xen_info_text(f, src);
	fprintf(f, "  event types  (with events)\n");
	for (uint32_t t = 0; t < m->nr_types; t++) {
		uint64_t n = vms_session_type_count(s, i, t);
		if (n)
			fprintf(f, "    %12" PRIu64 "  %s\n", n, cli_text(m->type_names[t]));
	}
}

static void json_source(struct vms_json *j, struct vms_session *s, uint32_t i,
			const struct per_source *p)
{
	struct vms_source *src = vms_session_source(s, i);
	const struct vms_trace_meta *m = &src->meta;
	const struct vms_machine *mc = vms_model_machine_c(vms_session_model(s), i);
	vms_json_begin_object(j, NULL);
	vms_json_string(j, "path", src->path);
	vms_json_string(j, "format", m->format);
	vms_json_string(j, "machine", mc->name);
	vms_json_begin_array(j, "roles");
	if (mc->role & VMS_ROLE_HOST)
		vms_json_string(j, NULL, "host");
	if (mc->role & VMS_ROLE_GUEST)
		vms_json_string(j, NULL, "guest");
	vms_json_end_array(j);
	vms_json_string(j, "clock", m->clock);
	vms_json_bool(j, "ts_in_ns", m->ts_in_ns);
	vms_json_uint(j, "cpus", m->nr_cpus);
	vms_json_uint(j, "streams", src->ops->nr_streams(src));
	if (m->has_trace_id) {
		char id[24];
		snprintf(id, sizeof id, "0x%016" PRIx64, m->trace_id);
		vms_json_string(j, "trace_id", id);
	}
	if (m->has_tsc2nsec) {
		vms_json_begin_object(j, "tsc2nsec");
		vms_json_uint(j, "mult", m->tsc_mult);
		vms_json_uint(j, "shift", m->tsc_shift);
		vms_json_uint(j, "offset", m->tsc_offset);
		vms_json_end_object(j);
	}
	vms_json_int(j, "offset_ns", m->offset_ns);
	vms_json_begin_array(j, "guests");
	for (uint32_t g = 0; g < m->nr_guests; g++) {
		const struct vms_guest_map *gm = &m->guests[g];
		char id[24];
		snprintf(id, sizeof id, "0x%016" PRIx64, gm->trace_id);
		vms_json_begin_object(j, NULL);
		vms_json_string(j, "name", gm->name);
		vms_json_string(j, "trace_id", id);
		vms_json_begin_array(j, "vcpus");
		for (uint32_t k = 0; k < gm->nr_vcpus; k++) {
			vms_json_begin_object(j, NULL);
			vms_json_uint(j, "vcpu", gm->vcpu[k]);
			vms_json_int(j, "host_tid", gm->host_tid[k]);
			vms_json_end_object(j);
		}
		vms_json_end_array(j);
		vms_json_end_object(j);
	}
	vms_json_end_array(j);
	if (m->timeshift) {
		const struct vms_timeshift *ts = m->timeshift;
		char id[24];
		snprintf(id, sizeof id, "0x%016" PRIx64, ts->peer_trace_id);
		vms_json_begin_object(j, "time_shift");
		vms_json_string(j, "peer_trace_id", id);
		vms_json_uint(j, "flags", ts->flags);
		vms_json_begin_array(j, "cpus");
		for (uint32_t c = 0; c < ts->nr_cpus; c++) {
			vms_json_begin_array(j, NULL);
			for (uint32_t k = 0; k < ts->cpu[c].n; k++) {
				vms_json_begin_object(j, NULL);
				vms_json_uint(j, "time", ts->cpu[c].time[k]);
				vms_json_int(j, "offset", ts->cpu[c].offset[k]);
				vms_json_uint(j, "scaling", ts->cpu[c].scaling[k]);
				vms_json_uint(j, "frac", ts->cpu[c].frac ? ts->cpu[c].frac[k] : 0);
				vms_json_end_object(j);
			}
			vms_json_end_array(j);
		}
		vms_json_end_array(j);
		vms_json_end_object(j);
	} else {
		vms_json_null(j, "time_shift");
	}
	json_vmm(j, vms_session_model(s), i);
	vms_json_uint(j, "events", p->events);
	if (p->seen) {
		vms_json_uint(j, cli_key("first"), p->first_t);
		vms_json_uint(j, cli_key("last"), p->last_t);
	} else {
		vms_json_null(j, cli_key("first"));
		vms_json_null(j, cli_key("last"));
	}
	vms_json_uint(j, "first_raw", p->first);
	vms_json_uint(j, "last_raw", p->last);
	vms_json_uint(j, "lost_events", m->lost_events);
	vms_json_bool(j, "lost_events_unknown", m->lost_events_unknown);
	vms_json_bool(j, "ended_abruptly", m->ended_abruptly);
	cli_xen_info_json(j, src);
	vms_json_begin_object(j, "event_counts");
	for (uint32_t t = 0; t < m->nr_types; t++) {
		uint64_t n = vms_session_type_count(s, i, t);
		if (n)
			vms_json_uint(j, m->type_names[t], n);
	}
	vms_json_end_object(j);
	vms_json_end_object(j);
}

/* What the traces together can tell (the same rows as the warnings of every command) */
static void text_availability(FILE *f, struct vms_session *s)
{
	struct vms_avail_row rows[VMS_AV_COUNT];
	vms_session_availability(s, rows);
	fprintf(f, "\nwhat can be known (docs/recording.md: how to record what is missing)\n");
	for (int i = 0; i < VMS_AV_COUNT; i++)
		fprintf(f, "  %-22s %-14s %s\n", vms_avail_what_name(i),
			vms_avail_level_name(rows[i].level), cli_text(rows[i].why));
}

static void json_availability(struct vms_json *j, struct vms_session *s)
{
	struct vms_avail_row rows[VMS_AV_COUNT];
	vms_session_availability(s, rows);
	vms_json_begin_array(j, "analyses");
	for (int i = 0; i < VMS_AV_COUNT; i++) {
		vms_json_begin_object(j, NULL);
		vms_json_string(j, "analysis", vms_avail_what_key(i));
		vms_json_string(j, "name", vms_avail_what_name(i));
		vms_json_string(j, "availability", vms_avail_level_name(rows[i].level));
		if (rows[i].missing[0])
			vms_json_string(j, "missing", rows[i].missing);
		else
			vms_json_null(j, "missing");
		vms_json_string(j, "why", rows[i].why);
		vms_json_end_object(j);
	}
	vms_json_end_array(j);
}

int cmd_info(int argc, char **argv)
{
	struct cli c;
	int st = cli_begin(&c, argc, argv, CLI_JSON | CLI_ROLES | CLI_OUT | CLI_RAW, usage);
	if (st != CLI_GO)
		return st;
	struct vms_session *s = c.s;
	uint32_t n = vms_session_nr_sources(s);
	struct counts cnt = { .ps = calloc(n, sizeof *cnt.ps) };
	struct vms_error err = { 0 };
	if (!cnt.ps)
		vms_error_set(&err, VMS_ERR_NOMEM, "out of memory");
	/* the model first, so that times are in the reference timebase of the analyses */
	if (!cnt.ps || vms_session_build_model(s, &err) < 0 ||
	    vms_session_iterate(s, count, &cnt, &err) < 0) {
		free(cnt.ps);
		return cli_end(&c, cli_fail(&c, &err));
	}
	cli_warn_model(&c);
	if (c.json) {
		struct vms_json j;
		vms_json_init(&j, c.f, true);
		vms_json_begin_object(&j, NULL);
		cli_json_header(&j, "info");
		vms_json_begin_array(&j, "traces");
		for (uint32_t i = 0; i < n; i++)
			json_source(&j, s, i, &cnt.ps[i]);
		vms_json_end_array(&j);
		json_availability(&j, s);
		vms_json_end_object(&j);
		vms_json_finish(&j);
	} else {
		for (uint32_t i = 0; i < n; i++) {
			if (i)
				fputc('\n', c.f);
			text_source(c.f, s, i, &cnt.ps[i], c.raw);
		}
		text_availability(c.f, s);
	}
	free(cnt.ps);
	return cli_end(&c, VMS_EXIT_OK);
}
