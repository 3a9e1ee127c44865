/* The Xen model's tables (vmscope/xen_model.h) in report's text and JSON: per domain and vCPU,
 * the runstates and HVM exits as xenalyze --summary counts them, in cycles and in ns at the
 * frequency in use. */
#include <inttypes.h>
#include <stdio.h>

#include "cli.h"
#include "vmscope/analysis.h"
#include "vmscope/model.h"
#include "vmscope/session.h"
#include "vmscope/writers.h"
#include "vmscope/xen_model.h"
#include "vmscope/xentrace.h"

static const unsigned shown_rs[] = { VMS_XEN_RS_RUNNING, VMS_XEN_RS_RUNNABLE, VMS_XEN_RS_BLOCKED,
				     VMS_XEN_RS_OFFLINE, VMS_XEN_RS_LOST };

static void exit_name(uint32_t isa, uint32_t reason, char *buf, size_t len)
{
	const char *n = vms_exit_reason_name(isa, reason);
	if (n)
		snprintf(buf, len, "%s", n);
	else
		snprintf(buf, len, "%u", reason);
}

static void text_row(FILE *f, const char *who, const char *what, const struct vms_xen_cycles *c,
		     uint64_t n, uint64_t hz)
{
	char b[32];
	/* without a frequency the time stays cycles (cli_ns then says "cycles") */
	fprintf(f, "    %-9s %-22s %8" PRIu64 " %16s %14" PRIu64 "\n", who, what, n,
		cli_ns(hz ? vms_xen_cycles_to_ns(c->cycles, hz) : c->cycles, b, sizeof b),
		c->count ? c->cycles / c->count : 0);
}

void cli_xen_text(FILE *f, struct vms_session *s, uint32_t source)
{
	const struct vms_xen_model *x = vms_session_xen_model(s, source);
	const struct vms_xen_info *xi = vms_xentrace_info(vms_session_source(s, source));
	if (!x || !xi)
		return;
	uint64_t hz = xi->cpu_hz;
	fprintf(f, "  Xen: %u physical CPUs, %u domains, %" PRIu64 " records, %" PRIu64 " lost; ",
		xi->nr_pcpus, xi->nr_domains, xi->records, xi->lost_records);
	if (hz)
		fprintf(f, "time from cycles at %.6g GHz\n", (double)hz / 1e9);
	else
		fprintf(f, "times in cycles (no --cpu-hz)\n");
	if (vms_xen_model_anomalies(x) || vms_xen_model_skews(x))
		fprintf(f, "  WARNING: %" PRIu64 " scheduler records contradict the others (xenalyze "
			"would stop), %" PRIu64 " TSC skews between CPUs\n", vms_xen_model_anomalies(x),
			vms_xen_model_skews(x));
	fprintf(f, "  Xen runstates per vCPU (xenalyze's accounting):\n");
	fprintf(f, "    %-9s %-22s %8s %16s %14s\n", "vCPU", "runstate", "count", "time",
		"mean cycles");
	char who[32];
	for (uint32_t i = 0; i < vms_xen_model_nr_vcpus(x); i++) {
		const struct vms_xen_vcpu_acct *v = vms_xen_model_vcpu(x, i);
		snprintf(who, sizeof who, "d%uv%u", v->dom, v->vcpu);
		for (size_t k = 0; k < sizeof shown_rs / sizeof shown_rs[0]; k++) {
			const struct vms_xen_cycles *c = &v->rs[shown_rs[k]];
			if (!c->count)
				continue;
			text_row(f, who, vms_xen_rs_name(shown_rs[k]), c, c->count, hz);
			for (unsigned r = VMS_XEN_RUNNABLE_WAKE;
			     shown_rs[k] == VMS_XEN_RS_RUNNABLE && r < VMS_XEN_NR_RUNNABLE; r++) {
				char what[32];
				snprintf(what, sizeof what, "  %s", vms_xen_runnable_name(r));
				if (v->runnable[r].count)
					text_row(f, who, what, &v->runnable[r], v->runnable[r].count, hz);
			}
		}
	}
	/* xenalyze's rule, said on the table: the guests' exit tables below use another one */
	fprintf(f, "  Xen HVM exits per vCPU, xenalyze's rule: from VMEXIT to VMENTRY, or to the vCPU "
		"becoming runnable;\n    an exit with no end is not counted (the guests' exit tables "
		"below time each exit to its VMENTRY)\n");
	fprintf(f, "    %-9s %-22s %8s %16s %14s\n", "vCPU", "reason", "count", "time",
		"mean cycles");
	for (uint32_t i = 0; i < vms_xen_model_nr_vcpus(x); i++) {
		const struct vms_xen_vcpu_acct *v = vms_xen_model_vcpu(x, i);
		snprintf(who, sizeof who, "d%uv%u", v->dom, v->vcpu);
		for (uint32_t k = 0; k < v->nr_exits; k++) {
			char name[48];
			exit_name(xi->isa, v->exits[k].reason, name, sizeof name);
			text_row(f, who, name, &v->exits[k].c, v->exits[k].c.events, hz);
		}
	}
}

int32_t cli_xen_domain(struct vms_session *s, const struct vms_machine *g)
{
	/* a domain of a xentrace host: linked by xentrace, or by the user (--map NAME:dom=N) */
	struct vms_model *m = vms_session_model(s);
	const struct vms_machine *h = g && g->host >= 0 ? vms_model_machine_c(m, (uint32_t)g->host)
						       : NULL;
	if (!h || h->source < 0 || !vms_xentrace_info(vms_session_source(s, (uint32_t)h->source)))
		return -1;
	for (uint32_t v = 0; v < g->nr_vcpus; v++)
		if (g->vcpus[v].host_tid > 0)
			return (int32_t)vms_xen_tid_dom(g->vcpus[v].host_tid);
	return -1;
}

/* Two rules give two exit tables for a Xen guest: the common one (lib/analysis/exits.c, as
 * for KVM: VMEXIT to VMENTRY; an exit with no known end counted, not timed) and xenalyze's
 * (the Xen model: an exit also ends when its vCPU becomes runnable, so the wait for a CPU
 * after a wake-up or a preemption inside the exit is not charged to it; an exit with no end
 * not counted). Said under the common table, with how its totals come from xenalyze's. */
void cli_xen_exit_rule(FILE *f, struct vms_session *s, const struct vms_machine *g, int32_t vcpu,
		       const char *in, const struct vms_exit_stats *ex, uint32_t nr)
{
	int32_t dom = cli_xen_domain(s, g);
	const struct vms_machine *h = dom >= 0 ?
		vms_model_machine_c(vms_session_model(s), (uint32_t)g->host) : NULL;
	const struct vms_xen_model *x = h ? vms_session_xen_model(s, (uint32_t)h->source) : NULL;
	const struct vms_xen_info *xi = x ? vms_xentrace_info(vms_session_source(s, (uint32_t)h->source)) : NULL;
	if (!xi || !nr)
		return;
	uint64_t n = 0, t = 0, unfinished = 0, xn = 0, xc = 0;
	for (uint32_t k = 0; k < nr; k++) {
		n += ex[k].count;
		t += vms_dist_sum(ex[k].dist);
		unfinished += ex[k].unfinished;
	}
	for (uint32_t i = 0; i < vms_xen_model_nr_vcpus(x); i++) {
		const struct vms_xen_vcpu_acct *v = vms_xen_model_vcpu(x, i);
		if (v->dom != (uint32_t)dom || (vcpu >= 0 && v->vcpu != (uint32_t)vcpu))
			continue;
		for (uint32_t k = 0; k < v->nr_exits; k++) {
			xn += v->exits[k].c.events;
			xc += v->exits[k].c.cycles;
		}
	}
	uint64_t xt = xi->cpu_hz ? vms_xen_cycles_to_ns(xc, xi->cpu_hz) : xc;
	char b[3][32];
	fprintf(f, "%s  rule: each exit from VMEXIT to its VMENTRY (vmscope's rule on every "
		"hypervisor); xenalyze's table above\n%s    also ends an exit when its vCPU becomes "
		"runnable, and counts no exit without an end\n", in, in);
	int64_t dn = (int64_t)(n - unfinished - xn);
	fprintf(f, "%s  so: %llu exits = %llu in xenalyze's table + %llu with no known end", in,
		(unsigned long long)n, (unsigned long long)xn, (unsigned long long)unfinished);
	if (dn)
		fprintf(f, " %s %lld other", dn > 0 ? "+" : "-", (long long)(dn > 0 ? dn : -dn));
	bool more = t >= xt;
	fprintf(f, "; %s = %s in xenalyze's %s %s from becoming runnable to VMENTRY\n",
		cli_ns(t, b[0], 32), cli_ns(xt, b[1], 32), more ? "+" : "-",
		cli_ns(more ? t - xt : xt - t, b[2], 32));
}

static void json_cycles(struct vms_json *j, const char *key, const struct vms_xen_cycles *c,
			uint64_t hz)
{
	vms_json_begin_object(j, key);
	vms_json_uint(j, "count", c->count);
	vms_json_uint(j, "events", c->events);
	vms_json_uint(j, "cycles", c->cycles);
	if (hz)
		vms_json_uint(j, "ns", vms_xen_cycles_to_ns(c->cycles, hz));
	else
		vms_json_null(j, "ns");
	vms_json_end_object(j);
}

void cli_xen_json(struct vms_json *j, struct vms_session *s, uint32_t source)
{
	const struct vms_xen_model *x = vms_session_xen_model(s, source);
	const struct vms_xen_info *xi = vms_xentrace_info(vms_session_source(s, source));
	if (!x || !xi)
		return;
	uint64_t hz = xi->cpu_hz;
	vms_json_begin_object(j, "xen");
	vms_json_uint(j, "cpu_hz", hz);
	vms_json_bool(j, "cpu_hz_given", xi->cpu_hz_given);
	vms_json_uint(j, "records", xi->records);
	vms_json_uint(j, "lost_records", xi->lost_records);
	vms_json_uint(j, "anomalies", vms_xen_model_anomalies(x));
	vms_json_uint(j, "tsc_skews", vms_xen_model_skews(x));
	vms_json_begin_array(j, "vcpus");
	for (uint32_t i = 0; i < vms_xen_model_nr_vcpus(x); i++) {
		const struct vms_xen_vcpu_acct *v = vms_xen_model_vcpu(x, i);
		vms_json_begin_object(j, NULL);
		vms_json_uint(j, "domain", v->dom);
		vms_json_uint(j, "vcpu", v->vcpu);
		vms_json_bool(j, "hvm", v->hvm);
		vms_json_begin_object(j, "runstates");
		for (size_t k = 0; k < sizeof shown_rs / sizeof shown_rs[0]; k++)
			json_cycles(j, vms_xen_rs_name(shown_rs[k]), &v->rs[shown_rs[k]], hz);
		vms_json_end_object(j);
		vms_json_begin_object(j, "runnable");
		for (unsigned r = VMS_XEN_RUNNABLE_WAKE; r < VMS_XEN_NR_RUNNABLE; r++)
			json_cycles(j, vms_xen_runnable_name(r), &v->runnable[r], hz);
		vms_json_end_object(j);
		vms_json_begin_array(j, "exits");
		for (uint32_t k = 0; k < v->nr_exits; k++) {
			char name[48];
			exit_name(xi->isa, v->exits[k].reason, name, sizeof name);
			vms_json_begin_object(j, NULL);
			vms_json_uint(j, "reason", v->exits[k].reason);
			vms_json_string(j, "name", name);
			vms_json_uint(j, "count", v->exits[k].c.events);
			vms_json_uint(j, "timed", v->exits[k].c.count);
			vms_json_uint(j, "cycles", v->exits[k].c.cycles);
			if (hz)
				vms_json_uint(j, "ns", vms_xen_cycles_to_ns(v->exits[k].c.cycles, hz));
			else
				vms_json_null(j, "ns");
			vms_json_end_object(j);
		}
		vms_json_end_array(j);
		vms_json_end_object(j);
	}
	vms_json_end_array(j);
	vms_json_end_object(j);
}

/* ---- info: what the reader found in a xentrace file ---- */

static const char *domain_kind(const struct vms_xen_domain *d)
{
	if (d->id == VMS_XEN_IDLE_DOMAIN)
		return "idle";
	return d->hvm ? "HVM" : "no VM exits (PV, or HVM without exits traced)";
}

void cli_xen_info_text(FILE *f, const struct vms_source *src)
{
	const struct vms_xen_info *xi = vms_xentrace_info(src);
	if (!xi)
		return;
	if (xi->cpu_hz)
		fprintf(f, "  cpu hz       %" PRIu64 " (given)\n", xi->cpu_hz);
	else
		fprintf(f, "  cpu hz       unknown (not in a xentrace file): times in cycles; give "
			   "--cpu-hz (xenalyze assumes 2.4 GHz)\n");
	fprintf(f, "  pcpus        %u:", xi->nr_pcpus);
	for (uint32_t i = 0; i < xi->nr_pcpus; i++)
		fprintf(f, " %u", xi->pcpu[i]);
	fputc('\n', f);
	fprintf(f, "  domains      %u\n", xi->nr_domains);
	for (uint32_t i = 0; i < xi->nr_domains; i++)
		fprintf(f, "    d%-5u %u vCPUs, %s\n", xi->domains[i].id, xi->domains[i].nr_vcpus,
			domain_kind(&xi->domains[i]));
	fprintf(f, "  records      %" PRIu64 " in %" PRIu64 " per-CPU blocks, %" PRIu64
		" without a TSC of their own\n", xi->records, xi->blocks, xi->notsc_records);
	fprintf(f, "  classes     ");
	for (uint32_t c = 0; c < VMS_XEN_NR_CLASSES; c++)
		if (xi->class_records[c])
			fprintf(f, " %s %" PRIu64, vms_xen_class_name(c), xi->class_records[c]);
	fputc('\n', f);
	fprintf(f, "  lost records %" PRIu64 " in %" PRIu64 " markers; %" PRIu64 " buffer wraps\n",
		xi->lost_records, xi->lost_markers, xi->wraps);
	if (xi->truncated)
		fprintf(f, "  truncated    at byte offset %" PRIu64 " (the last block is incomplete)\n",
			xi->truncated_at);
}

void cli_xen_info_json(struct vms_json *j, const struct vms_source *src)
{
	const struct vms_xen_info *xi = vms_xentrace_info(src);
	if (!xi)
		return;
	vms_json_begin_object(j, "xen");
	vms_json_uint(j, "cpu_hz", xi->cpu_hz);
	vms_json_bool(j, "cpu_hz_given", xi->cpu_hz_given);
	vms_json_begin_array(j, "pcpus");
	for (uint32_t i = 0; i < xi->nr_pcpus; i++)
		vms_json_uint(j, NULL, xi->pcpu[i]);
	vms_json_end_array(j);
	vms_json_begin_array(j, "domains");
	for (uint32_t i = 0; i < xi->nr_domains; i++) {
		vms_json_begin_object(j, NULL);
		vms_json_uint(j, "id", xi->domains[i].id);
		vms_json_uint(j, "vcpus", xi->domains[i].nr_vcpus);
		vms_json_bool(j, "hvm", xi->domains[i].hvm);
		vms_json_bool(j, "idle", xi->domains[i].id == VMS_XEN_IDLE_DOMAIN);
		vms_json_end_object(j);
	}
	vms_json_end_array(j);
	vms_json_uint(j, "records", xi->records);
	vms_json_uint(j, "blocks", xi->blocks);
	vms_json_uint(j, "records_without_tsc", xi->notsc_records);
	vms_json_begin_object(j, "classes");
	for (uint32_t c = 0; c < VMS_XEN_NR_CLASSES; c++)
		vms_json_uint(j, vms_xen_class_name(c), xi->class_records[c]);
	vms_json_end_object(j);
	vms_json_uint(j, "lost_markers", xi->lost_markers);
	vms_json_uint(j, "lost_records", xi->lost_records);
	vms_json_uint(j, "wraps", xi->wraps);
	vms_json_bool(j, "truncated", xi->truncated);
	vms_json_end_object(j);
}
