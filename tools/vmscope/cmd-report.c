/* vmscope report: the human summary per guest and vCPU (what the guest could not see), and
 * --json for the same data. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "vmscope/containers.h"
#include "vmscope/findings.h"
#include "vmscope/latency.h"
#include "vmscope/writers.h"

static const char usage[] =
	"usage: vmscope report [--json] [--top N] [-o FILE] [--tsc-hz HZ] [--host FILE]\n"
	"                      [--guest NAME=FILE] [--map NAME:VCPU=TID,...]\n"
	"                      [--map NAME:dom=N] TRACE...\n"
	"\n"
	"Per guest and vCPU: the share of time running, idle, in the hypervisor (VMM), preempted\n"
	"by the host and halted; the top VM exit reasons with their cost (p50, p99); which host\n"
	"threads took the CPU; the run-queue latency of the vCPU thread; how the guest's clock was\n"
	"synchronized and the containment check. Then the guest threads that lost the most time.\n"
	"\n"
	"  --json              the same data as one JSON object (schema_version, time_unit)\n"
	"  --top N             rows per table: exit reasons, stealing threads, guest threads\n"
	"                      (default 10)\n"
	CLI_HELP_OUTPUT CLI_HELP_ROLES CLI_HELP_WINDOW;

static const enum vms_vcpu_state shown[] = {
	VMS_STATE_RUNNING, VMS_STATE_IDLE, VMS_STATE_VMM, VMS_STATE_PREEMPTED, VMS_STATE_HALTED,
	VMS_STATE_UNKNOWN,
};

static uint64_t span_of(const struct vms_vcpu_stats *v)
{
	uint64_t t = 0;
	for (int k = 0; k < VMS_STATE_COUNT; k++)
		t += v->ns[k];
	return t;
}

static void json_uint_seen(struct vms_json *j, const char *key, uint64_t v, bool seen)
{
	if (seen)
		vms_json_uint(j, key, v);
	else
		vms_json_null(j, key);
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

static const char *role_name(unsigned role)
{
	if ((role & VMS_ROLE_HOST) && (role & VMS_ROLE_GUEST))
		return "host+guest";
	if (role & VMS_ROLE_HOST)
		return "host";
	if (role & VMS_ROLE_GUEST)
		return "guest";
	return "unknown";
}

static void reason_name(uint32_t isa, uint32_t reason, char *buf, size_t len)
{
	const char *n = vms_exit_reason_name(isa, reason);
	if (n)
		snprintf(buf, len, "%s", n);
	else
		snprintf(buf, len, "%u", reason);
}

/* ---------------- text ---------------- */

/* An exit table as text, indented by `in`. hyp: the time the hypervisor spent handling
 * these exits (halted and preempted time inside exits is not the hypervisor's). Every
 * kvm_exit is counted; the times are those of the exits whose end is known. */
static void text_exits(FILE *f, const char *in, const struct vms_exit_stats *ex, uint32_t nr,
		       unsigned top, uint64_t hyp)
{
	if (!nr)
		return;
	char b[4][32];
	uint64_t n_all = 0, t_all = 0, unfinished = 0;
	for (uint32_t k = 0; k < nr; k++) {
		n_all += ex[k].count;
		t_all += vms_dist_sum(ex[k].dist);
		unfinished += ex[k].unfinished;
	}
	fprintf(f, "%sVM exits: %llu, %s inside exits, of which %s in the hypervisor (the rest "
		"halted or preempted)\n", in, (unsigned long long)n_all, cli_ns(t_all, b[0], 32),
		cli_ns(hyp, b[1], 32));
	fprintf(f, "%s  %-24s %9s %6s %12s %6s %10s %10s %10s\n", in, "reason", "count", "%",
		"total", "%", "mean", "p50", "p99");
	for (uint32_t k = 0; k < nr && k < top; k++) {
		const struct vms_exit_stats *e = &ex[k];
		char name[48];
		reason_name(e->isa, e->reason, name, sizeof name);
		uint64_t n = vms_dist_count(e->dist), sum = vms_dist_sum(e->dist);
		char p99[40];
		bool exact = vms_dist_exact(e->dist);
		snprintf(p99, sizeof p99, "%s%s", exact ? "" : "≈ ",
			 cli_ns(vms_dist_percentile(e->dist, 99), b[3], 32));
		/* "≈" is 3 bytes in 1 column: 2 more bytes keep the column aligned */
		fprintf(f, "%s  %-24s %9llu %5.1f%% %12s %5.1f%% %10s %10s %*s\n", in, name,
			(unsigned long long)e->count, pct(e->count, n_all), cli_ns(sum, b[0], 32),
			pct(sum, t_all), cli_ns(n ? (sum + n / 2) / n : 0, b[1], 32),
			cli_ns(vms_dist_percentile(e->dist, 50), b[2], 32), exact ? 10 : 12, p99);
	}
	if (nr > top)
		fprintf(f, "%s  (%u more reasons)\n", in, nr - top);
	if (unfinished)
		fprintf(f, "%s  note: %llu %s no known end (the trace ended, or events were "
			"lost): counted, not in the times\n", in, (unsigned long long)unfinished,
			unfinished == 1 ? "exit has" : "exits have");
}

static void text_vcpu(FILE *f, struct vms_session *s, const struct vms_vcpu_stats *v, unsigned top)
{
	char b[8][32];
	struct vms_model *m = vms_session_model(s);
	const struct vms_machine *g = vms_model_machine_c(m, v->machine);
	int32_t host = g ? g->host : -1;
	const struct vms_thread_info *ht =
		(host >= 0 && v->host_tid >= 0) ? vms_model_thread(m, (uint32_t)host, v->host_tid) : NULL;
	/* a Xen domain's vCPU is no host thread: it is said in Xen's words (dNvM) */
	bool xen = cli_xen_domain(s, g) >= 0;
	fprintf(f, "  vCPU %u", v->vcpu);
	if (v->host_tid >= 0 && xen)
		fprintf(f, "  Xen vCPU %s", ht && ht->comm[0] ? cli_text(ht->comm) : "?");
	else if (v->host_tid >= 0)
		fprintf(f, "  host thread %d%s%s%s", v->host_tid, ht && ht->comm[0] ? " (" : "",
			ht && ht->comm[0] ? cli_text(ht->comm) : "", ht && ht->comm[0] ? ")" : "");
	if (g && v->vcpu < g->nr_vcpus)
		fprintf(f, "  linked by %s", vms_link_how_name(g->vcpus[v->vcpu].how));
	fputc('\n', f);
	uint64_t span = span_of(v);
	bool traced = g && g->source >= 0;
	fprintf(f, "    time %s:", cli_ns(span, b[0], 32));
	for (size_t k = 0; k < sizeof shown / sizeof shown[0]; k++) {
		enum vms_vcpu_state st = shown[k];
		uint64_t ns = v->ns[st];
		/* say what cannot be seen instead of a confident zero */
		if (!traced && (st == VMS_STATE_RUNNING || st == VMS_STATE_IDLE))
			continue; /* its guest was not traced: guest mode is all that is known */
		if (vms_vcpu_state_unseen(traced, v->host_visible, v->preempt_visible, st)) {
			fprintf(f, "  %s unknown", vms_vcpu_state_name(st));
			continue;
		}
		if (st == VMS_STATE_UNKNOWN && ns == 0)
			continue;
		fprintf(f, "  %s %.1f%%", st == VMS_STATE_UNKNOWN && !traced ? "in guest mode"
					  : vms_vcpu_state_name(st), pct(ns, span));
		if (st == VMS_STATE_HALTED && v->halt_poll_ns)
			fprintf(f, " (halt-polling %.1f%%: its host CPU kept busy for the guest)",
				pct(v->halt_poll_ns, span));
	}
	fputc('\n', f);
	uint64_t below = 0;
	for (int k = 0; k < VMS_STATE_COUNT; k++)
		below += v->below_ns[k];
	if (below) {
		/* nested: what the layer below its host took (L0, for an L2 vCPU) */
		const struct vms_machine *hm = host >= 0 ? vms_model_machine_c(m, (uint32_t)host) : NULL;
		const char *lo = hm && hm->host >= 0 ? cli_machine_name(m, (uint32_t)hm->host) : "?";
		fprintf(f, "    of which at %s (the layer below %s):", cli_text(lo),
			hm ? cli_text(cli_machine_name(m, (uint32_t)host)) : "its host");
		static const enum vms_vcpu_state at[] = { VMS_STATE_VMM, VMS_STATE_PREEMPTED,
							  VMS_STATE_HALTED };
		for (unsigned k = 0; k < sizeof at / sizeof at[0]; k++)
			fprintf(f, "  %s %s", vms_vcpu_state_name(at[k]),
				cli_ns(v->below_ns[at[k]], b[0], 32));
		fputc('\n', f);
	}
	if (v->ns[VMS_STATE_UNKNOWN] && traced)
		fprintf(f, "    unknown: %s outside the traces' coverage (before or after a trace, or "
			"before anything was known)\n", cli_ns(v->ns[VMS_STATE_UNKNOWN], b[1], 32));
	if (!v->host_visible)
		fprintf(f, "    no host trace: time in the hypervisor and preemption cannot be seen\n");
	else if (!v->preempt_visible) {
		/* the availability table's wording (lib/session/availability.c) and its pointer to
		 * the recipes: a bare trace-cmd line would record no guest */
		const struct vms_machine *hm = vms_model_machine_c(m, (uint32_t)host);
		fprintf(f, "    preemption and steal not available: %s recorded no sched_switch: "
			"when its vCPU threads were preempted cannot be seen (docs/recording.md says "
			"how to record it)\n",
			hm && hm->name && *hm->name ? cli_text(hm->name) : "the host");
	}
	text_exits(f, "    ", v->exits, v->nr_exits, top, v->hypervisor_ns);
	if (xen)
		cli_xen_exit_rule(f, s, g, (int32_t)v->vcpu, "    ", v->exits, v->nr_exits);
	if (v->nr_steal && xen)
		fprintf(f, "    while it was preempted (%s), its physical CPU ran:\n",
			cli_ns(v->ns[VMS_STATE_PREEMPTED], b[0], 32));
	else if (v->nr_steal)
		fprintf(f, "    the CPU was taken by:\n");
	if (v->nr_steal) {
		for (uint32_t k = 0, shown = 0; k < v->nr_steal; k++) {
			const struct vms_steal_entry *e = &v->steal[k];
			/* the buckets (after the threads) are shown always: they say what the
			 * table leaves out */
			if (e->kind == VMS_STEAL_THREAD && shown++ >= top)
				continue;
			/* what is known: the pid when the trace told it, else the tid alone */
			char who[40];
			if (e->kind == VMS_STEAL_UNATTRIBUTED)
				snprintf(who, sizeof who, "(> %d vCPUs waited)", VMS_INSTEAD_MAX_WAITERS);
			else if (e->kind == VMS_STEAL_OTHERS)
				snprintf(who, sizeof who, "(%s%llu distinct)",
					 e->threads_at_least ? "at least " : "",
					 (unsigned long long)e->threads);
			else if (xen)   /* a Xen vCPU: its name says it all (dNvM; tid 0: the idle) */
				who[0] = '\0';
			else if (e->host_pid >= 0)
				snprintf(who, sizeof who, "pid %d tid %d", e->host_pid, e->host_tid);
			else
				snprintf(who, sizeof who, "tid %d", e->host_tid);
			const char *name = e->comm[0] ? cli_text(e->comm) : "(no name)";
			if (xen && e->kind == VMS_STEAL_THREAD && e->host_tid == 0)
				name = "Xen's idle vCPU";
			fprintf(f, "      %-20s %-22s %12s  %.1f%% of the time", name, who,
				cli_ns(e->ns, b[0], 32), pct(e->ns, span));
			/* nested: the layer whose scheduler ran it (or them: "other threads" are
			 * per layer) */
			if (vms_model_nested(m) && e->kind != VMS_STEAL_UNATTRIBUTED)
				fprintf(f, "  (%s)", cli_text(cli_machine_name(m, e->host)));
			fputc('\n', f);
		}
	}
	if (v->runq_latency && vms_dist_count(v->runq_latency)) {
		const struct vms_dist *d = v->runq_latency;
		fprintf(f, "    run-queue latency of the vCPU%s: p50 %s  p99 %s  max %s  (%llu wake-ups)\n",
			xen ? " (wake-up to running)" : " thread",
			cli_ns(vms_dist_percentile(d, 50), b[0], 32),
			cli_ns(vms_dist_percentile(d, 99), b[1], 32), cli_ns(vms_dist_max(d), b[2], 32),
			(unsigned long long)vms_dist_count(d));
	}
}

static void text_sync(FILE *f, struct vms_model *m, const struct vms_machine *mc)
{
	const struct vms_sync_info *si = &mc->sync;
	if (si->method == VMS_SYNC_REFERENCE) {
		fprintf(f, "  clock: the reference timebase\n");
		return;
	}
	fprintf(f, "  clock: %s to %s", vms_sync_method_name(si->method),
		cli_text(cli_machine_name(m, si->reference)));
	/* a nested guest's TIME_SHIFT chain: its host's hop, and that host's, to the reference */
	if (si->method == VMS_SYNC_TIMESHIFT && si->parent >= 0 &&
	    (uint32_t)si->parent != si->reference)
		fprintf(f, " via %s", cli_text(cli_machine_name(m, (uint32_t)si->parent)));
	fprintf(f, " (quality %s", vms_sync_quality_name(si->quality));
	if (si->method == VMS_SYNC_USER)
		fprintf(f, ", offset %+.0f ns given", si->offset_ns);
	if (si->pairs)
		fprintf(f, ", %llu %s", (unsigned long long)si->pairs,
			si->method == VMS_SYNC_TIMESHIFT ? "samples" : "pairs");
	fputc(')', f);
	if (si->has_containment && si->contain_total) {
		double p = pct(si->contained, si->contain_total);
		fprintf(f, ", containment %.2f%% of %llu guest events", p,
			(unsigned long long)si->contain_total);
		if (p < 90.0)
			fprintf(f, "\n  WARNING: few guest events fall inside guest mode: the clock sync is "
				   "probably wrong and the timeline below cannot be trusted");
	}
	fputc('\n', f);
}

static int cmp_gthread(const void *a, const void *b)
{
	const struct vms_gthread_stats *x = *(const struct vms_gthread_stats *const *)a;
	const struct vms_gthread_stats *y = *(const struct vms_gthread_stats *const *)b;
	uint64_t lx = x->ns_vmm + x->ns_preempted, ly = y->ns_vmm + y->ns_preempted;
	return lx < ly ? 1 : lx > ly ? -1 : (x->tid > y->tid) - (x->tid < y->tid);
}

/* The vCPU and guest-thread rows of each machine, grouped once (a stable counting sort):
 * per-machine loops over all rows were quadratic with a hostile host whose 200,000 vCPU
 * threads are 200,000 untraced guests. Rows of machine i: idx[start[i] .. start[i + 1]). */
struct rows {
	uint32_t *vstart, *vidx, *gstart, *gidx;
};

static void group(uint32_t nr_mach, uint32_t n, uint32_t (*machine_of)(struct vms_analysis *,
		  uint32_t), struct vms_analysis *a, uint32_t *start, uint32_t *idx)
{
	for (uint32_t k = 0; k < n; k++) {
		uint32_t mc = machine_of(a, k);
		if (mc < nr_mach)
			start[mc + 1]++;
	}
	for (uint32_t i = 0; i < nr_mach; i++)
		start[i + 1] += start[i];
	uint32_t *fill = idx + n;   /* scratch: the next free place of each machine */
	memcpy(fill, start, nr_mach * sizeof *fill);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t mc = machine_of(a, k);
		if (mc < nr_mach)
			idx[fill[mc]++] = k;
	}
}

static uint32_t vcpu_machine(struct vms_analysis *a, uint32_t k)
{
	return vms_analysis_vcpu(a, k)->machine;
}

static uint32_t gthread_machine(struct vms_analysis *a, uint32_t k)
{
	return vms_analysis_gthread(a, k)->machine;
}

static int rows_group(struct rows *r, struct vms_analysis *a, uint32_t nr_mach)
{
	uint32_t nv = vms_analysis_nr_vcpus(a), ng = vms_analysis_nr_gthreads(a);
	r->vstart = calloc(nr_mach + 1, sizeof *r->vstart);
	r->gstart = calloc(nr_mach + 1, sizeof *r->gstart);
	r->vidx = malloc((nv + nr_mach + 1) * sizeof *r->vidx);
	r->gidx = malloc((ng + nr_mach + 1) * sizeof *r->gidx);
	if (!r->vstart || !r->gstart || !r->vidx || !r->gidx)
		return -1;
	group(nr_mach, nv, vcpu_machine, a, r->vstart, r->vidx);
	group(nr_mach, ng, gthread_machine, a, r->gstart, r->gidx);
	return 0;
}

static void rows_free(struct rows *r)
{
	free(r->vstart), free(r->vidx), free(r->gstart), free(r->gidx);
}

/* A machine's guest threads: the host sees them if it sees any of the machine's vCPUs. */
static void machine_visibility(struct vms_analysis *a, const struct rows *rows, uint32_t machine,
			       bool *host_seen, bool *preempt_seen)
{
	*host_seen = *preempt_seen = false;
	for (uint32_t k = rows->vstart[machine]; k < rows->vstart[machine + 1]; k++) {
		/* this machine's vCPUs only: a scan of all vCPUs per machine was quadratic */
		const struct vms_vcpu_stats *v = vms_analysis_vcpu(a, rows->vidx[k]);
		*host_seen |= v->host_visible;
		*preempt_seen |= v->preempt_visible;
	}
}

static void text_threads(FILE *f, struct vms_analysis *a, const struct rows *rows,
			 uint32_t machine, unsigned top)
{
	uint32_t n = 0, total = rows->gstart[machine + 1] - rows->gstart[machine];
	const struct vms_gthread_stats **list = calloc(total ? total : 1, sizeof *list);
	if (!list)
		return;
	for (uint32_t k = rows->gstart[machine]; k < rows->gstart[machine + 1]; k++) {
		const struct vms_gthread_stats *t = vms_analysis_gthread(a, rows->gidx[k]);
		if (t->tid != 0)
			list[n++] = t;
	}
	bool host_seen, preempt_seen;
	machine_visibility(a, rows, machine, &host_seen, &preempt_seen);
	if (n) {
		qsort(list, n, sizeof *list, cmp_gthread);
		char b[4][32];
		fprintf(f, "  guest threads, by time lost to the host:\n");
		fprintf(f, "    %-8s %-16s %12s %12s %12s %12s  %s\n", "tid", "comm", "running", "vmm",
			"preempted", "halted", "top exit");
		for (uint32_t i = 0; i < n && i < top; i++) {
			const struct vms_gthread_stats *t = list[i];
			char ex[48] = "-";
			if (t->nr_reasons)
				reason_name(t->reasons[0].isa, t->reasons[0].reason, ex, sizeof ex);
			fprintf(f, "    %-8d %-16s %12s %12s %12s %12s  %s\n", t->tid,
				t->comm[0] ? cli_text(t->comm) : "?", cli_ns(t->ns_running, b[0], 32),
				host_seen ? cli_ns(t->ns_vmm, b[1], 32) : "unknown",
				preempt_seen ? cli_ns(t->ns_preempted, b[2], 32) : "unknown",
				host_seen ? cli_ns(t->ns_halted, b[3], 32) : "unknown", ex);
		}
	}
	free(list);
}

/* The findings, ranked (include/vmscope/findings.h has the rules). */
static void text_findings(FILE *f, const struct vms_findings *fd, unsigned top)
{
	if (!fd)
		return;
	uint32_t n = vms_findings_count(fd);
	if (!n) {
		fprintf(f, "\nFindings: nothing stands out (no steal, exit storm, halt polling, wake-up "
			   "latency tail, sync doubt or lost events above the thresholds of "
			   "vmscope-report(1))\n");
		return;
	}
	fprintf(f, "\nFindings, the costliest first:\n");
	for (uint32_t i = 0; i < n && i < top; i++) {
		/* a finding names threads and machines of the traces: escaped whole (up to 4
		 * bytes per byte, more than cli_text's buffers hold) */
		fprintf(f, "  %u. ", i + 1);
		vms_text_string(f, vms_findings_get(fd, i)->text);
		fputc('\n', f);
	}
	if (n > top)
		fprintf(f, "  (%u more; --top N)\n", n - top);
}

void cli_findings_json(struct vms_json *j, struct vms_model *m, const struct vms_findings *fd)
{
	vms_json_begin_array(j, "findings");
	for (uint32_t i = 0; i < vms_findings_count(fd); i++) {
		const struct vms_finding *x = vms_findings_get(fd, i);
		vms_json_begin_object(j, NULL);
		vms_json_string(j, "kind", x->kind);
		vms_json_string(j, "text", x->text);
		vms_json_string(j, "machine", cli_machine_name(m, x->machine));
		if (x->vcpu >= 0)
			vms_json_int(j, "vcpu", x->vcpu);
		else
			vms_json_null(j, "vcpu");
		if (x->tid >= 0)
			vms_json_int(j, "tid", x->tid);
		else
			vms_json_null(j, "tid");
		if (x->end) {
			vms_json_uint(j, cli_key("start"), x->start);
			vms_json_uint(j, cli_key("end"), x->end);
		} else {
			vms_json_null(j, cli_key("start"));
			vms_json_null(j, cli_key("end"));
		}
		vms_json_end_object(j);
	}
	vms_json_end_array(j);
}

static void text_report(FILE *f, struct vms_session *s, unsigned top, const struct vms_findings *fd,
			const struct vms_containers *ct)
{
	struct vms_model *m = vms_session_model(s);
	struct vms_analysis *a = vms_session_analysis(s);
	char b[2][32];
	uint64_t first = vms_session_first_ts(s), last = vms_session_last_ts(s);
	fprintf(f, "vmscope report: %u machine%s, %llu events over %s\n", vms_model_nr_machines(m),
		vms_model_nr_machines(m) == 1 ? "" : "s", (unsigned long long)vms_session_events(s),
		cli_ns(last - first, b[0], 32));
	if (cli_cycles())
		fprintf(f, "times are clock cycles: a trace counts cycles and does not say their rate "
			   "(no TSC2NSEC); --tsc-hz HZ gives seconds\n");
	if (vms_session_backwards(s))
		fprintf(f, "note: %llu events had timestamps earlier than their predecessor's\n",
			(unsigned long long)vms_session_backwards(s));
	text_findings(f, fd, top);
	const struct vms_filter *flt = vms_session_filter(s);
	struct rows rows = {0};
	if (rows_group(&rows, a, vms_model_nr_machines(m)) != 0) {
		rows_free(&rows);
		fprintf(stderr, "vmscope report: out of memory\n");
		return;
	}
	for (uint32_t i = 0; i < vms_model_nr_machines(m); i++) {
		const struct vms_machine *mc = vms_model_machine_c(m, i);
		if (!vms_filter_machine(flt, i))
			continue;
		struct vms_source *src = mc->source >= 0 ? vms_session_source(s, (uint32_t)mc->source) : NULL;
		fprintf(f, "\n%s (%s", cli_text(mc->name), role_name(mc->role));
		if (src)
			fprintf(f, ", %s, %s, %u CPUs, clock %s)", cli_text(src->path),
				cli_text(src->meta.format), src->meta.nr_cpus,
				src->meta.clock[0] ? cli_text(src->meta.clock) : "?");
		else if (cli_xen_domain(s, mc) >= 0)
			fprintf(f, ", not traced: seen from its Xen host's records of its vCPUs)");
		else
			fprintf(f, ", not traced: seen from its host's vCPU threads)");
		fputc('\n', f);
		if (src && (src->meta.lost_events || src->meta.lost_events_unknown))
			fprintf(f, "  WARNING: the trace lost %s%llu events\n",
				src->meta.lost_events_unknown ? "at least " : "",
				(unsigned long long)src->meta.lost_events);
		if (src && src->meta.ended_abruptly)
			fprintf(f, "  WARNING: the trace ended abruptly (its writer was killed or crashed)\n");
		uint64_t og = 0, ot = 0;
		if (vms_model_untraced_omitted(m, i, &og, &ot) == 0 && og)
			fprintf(f, "  untraced guests beyond the first %u: %llu more (%llu vCPU threads), "
				"not shown one by one: their threads count as host threads\n",
				VMS_MODEL_MAX_UNTRACED, (unsigned long long)og, (unsigned long long)ot);
		if (mc->role & VMS_ROLE_GUEST || mc->source < 0) {
			if (mc->host >= 0) {
				char proc[192];
				int32_t dom = cli_xen_domain(s, mc);
				if (dom >= 0)   /* a Xen domain: no process, no pid */
					snprintf(proc, sizeof proc, "Xen domain %d", dom);
				fprintf(f, "  runs on %s as %s (linked by %s)\n",
					cli_text(cli_machine_name(m, (uint32_t)mc->host)),
					dom >= 0 ? proc : cli_vmm_text(m, mc, proc, sizeof proc),
					vms_link_how_name(mc->host_how));
			} else
				fprintf(f, "  its host is not in the traces given\n");
		}
		text_sync(f, m, mc);
		if (src)
			cli_xen_text(f, s, (uint32_t)mc->source);
		uint32_t nr_gx = 0, nv = rows.vstart[i + 1] - rows.vstart[i];
		uint64_t hyp = 0;
		const struct vms_exit_stats *gx = vms_analysis_guest_exits(a, i, &nr_gx);
		for (uint32_t k = rows.vstart[i]; k < rows.vstart[i + 1]; k++)
			hyp += vms_analysis_vcpu(a, rows.vidx[k])->hypervisor_ns;
		if (nv > 1 && nr_gx) {
			fprintf(f, "  all %u vCPUs together:\n", nv);
			text_exits(f, "    ", gx, nr_gx, top, hyp);
			cli_xen_exit_rule(f, s, mc, -1, "    ", gx, nr_gx);
		}
		for (uint32_t k = rows.vstart[i]; k < rows.vstart[i + 1]; k++) {
			const struct vms_vcpu_stats *v = vms_analysis_vcpu(a, rows.vidx[k]);
			if (vms_filter_vcpu(flt, i, v->vcpu))
				text_vcpu(f, s, v, top);
		}
		text_threads(f, a, &rows, i, top);
	}
	rows_free(&rows);
	cli_containers_text(f, m, ct); /* nothing without namespaces */
}

/* ---------------- JSON ---------------- */

static void json_dist(struct vms_json *j, const char *key, const struct vms_dist *d)
{
	vms_json_begin_object(j, key);
	uint64_t n = d ? vms_dist_count(d) : 0;
	vms_json_uint(j, "count", n);
	if (n) {
		vms_json_uint(j, cli_key("total"), vms_dist_sum(d));
		vms_json_uint(j, cli_key("min"), vms_dist_min(d));
		vms_json_uint(j, cli_key("max"), vms_dist_max(d));
		vms_json_uint(j, cli_key("mean"), (vms_dist_sum(d) + n / 2) / n);
		vms_json_uint(j, cli_key("p50"), vms_dist_percentile(d, 50));
		vms_json_uint(j, cli_key("p90"), vms_dist_percentile(d, 90));
		vms_json_uint(j, cli_key("p99"), vms_dist_percentile(d, 99));
	}
	vms_json_end_object(j);
}

/* An exit table: per (isa, reason), with its shares of the table's count and time. */
static void json_exits(struct vms_json *j, const char *key, const struct vms_exit_stats *ex,
		       uint32_t nr)
{
	uint64_t n_all = 0, t_all = 0;
	for (uint32_t k = 0; k < nr; k++) {
		n_all += ex[k].count;
		t_all += vms_dist_sum(ex[k].dist);
	}
	vms_json_begin_array(j, key);
	for (uint32_t k = 0; k < nr; k++) {
		const struct vms_exit_stats *e = &ex[k];
		char name[48];
		reason_name(e->isa, e->reason, name, sizeof name);
		uint64_t n = vms_dist_count(e->dist), sum = vms_dist_sum(e->dist);
		vms_json_begin_object(j, NULL);
		vms_json_uint(j, "isa", e->isa);
		vms_json_uint(j, "reason", e->reason);
		vms_json_string(j, "name", name);
		vms_json_uint(j, "count", e->count);
		vms_json_uint(j, "unfinished", e->unfinished);
		vms_json_double(j, "count_share", n_all ? (double)e->count / (double)n_all : 0.0);
		vms_json_uint(j, cli_key("total"), sum);
		vms_json_double(j, "time_share", t_all ? (double)sum / (double)t_all : 0.0);
		vms_json_uint(j, cli_key("min"), vms_dist_min(e->dist));
		vms_json_uint(j, cli_key("max"), vms_dist_max(e->dist));
		vms_json_uint(j, cli_key("mean"), n ? (sum + n / 2) / n : 0);
		vms_json_uint(j, cli_key("p50"), vms_dist_percentile(e->dist, 50));
		vms_json_uint(j, cli_key("p90"), vms_dist_percentile(e->dist, 90));
		vms_json_uint(j, cli_key("p99"), vms_dist_percentile(e->dist, 99));
		vms_json_bool(j, "percentiles_approximate", !vms_dist_exact(e->dist));
		vms_json_end_object(j);
	}
	vms_json_end_array(j);
}

static void json_vcpu(struct vms_json *j, struct vms_model *m, const struct vms_machine *g,
		      const struct vms_vcpu_stats *v)
{
	vms_json_begin_object(j, NULL);
	vms_json_uint(j, "vcpu", v->vcpu);
	if (v->host_tid >= 0)
		vms_json_int(j, "host_tid", v->host_tid);
	else
		vms_json_null(j, "host_tid");
	vms_json_string(j, "link", g && v->vcpu < g->nr_vcpus ? vms_link_how_name(g->vcpus[v->vcpu].how)
							       : vms_link_how_name(VMS_LINK_NONE));
	vms_json_uint(j, cli_key("first"), v->first);
	vms_json_uint(j, cli_key("last"), v->last);
	uint64_t span = span_of(v);
	bool traced = g && g->source >= 0;
	/* a state that cannot be seen is null, not 0: no host trace (vmm, preempted, halted), or
	 * a host that recorded no sched_switch (preempted) */
	vms_json_begin_object(j, cli_unit());
	for (int k = 0; k < VMS_STATE_COUNT; k++) {
		const char *name = vms_vcpu_state_name((enum vms_vcpu_state)k);
		if (vms_vcpu_state_unseen(traced, v->host_visible, v->preempt_visible,
					  (enum vms_vcpu_state)k))
			vms_json_null(j, name);
		else
			vms_json_uint(j, name, v->ns[k]);
	}
	vms_json_end_object(j);
	json_uint_seen(j, cli_key("halt_poll"), v->halt_poll_ns, v->host_visible);
	json_uint_seen(j, cli_key("hypervisor"), v->hypervisor_ns, v->host_visible);
	vms_json_bool(j, "host_visible", v->host_visible);
	vms_json_bool(j, "preempt_visible", v->preempt_visible);
	vms_json_uint(j, "exits_unfinished", v->exits_unpaired);
	vms_json_begin_object(j, "share"); /* null where ns is: unknown is not a 0 % share */
	for (int k = 0; k < VMS_STATE_COUNT; k++) {
		const char *name = vms_vcpu_state_name((enum vms_vcpu_state)k);
		if (vms_vcpu_state_unseen(traced, v->host_visible, v->preempt_visible,
					  (enum vms_vcpu_state)k))
			vms_json_null(j, name);
		else
			vms_json_double(j, name, span ? (double)v->ns[k] / (double)span : 0.0);
	}
	vms_json_end_object(j);
	json_exits(j, "exits", v->exits, v->nr_exits);
	vms_json_begin_array(j, "steal");
	for (uint32_t k = 0; k < v->nr_steal; k++) {
		const struct vms_steal_entry *e = &v->steal[k];
		vms_json_begin_object(j, NULL);
		vms_json_string(j, "kind", vms_steal_kind_name(e->kind));
		if (e->kind == VMS_STEAL_THREAD)
			vms_json_int(j, "tid", e->host_tid);
		else
			vms_json_null(j, "tid");
		if (e->host_pid >= 0)
			vms_json_int(j, "pid", e->host_pid);
		else
			vms_json_null(j, "pid");
		vms_json_string(j, "comm", e->comm);
		/* nested: the layer whose scheduler ran the thread, as the text report's "(l0)";
		 * one-layer documents keep their keys */
		if (vms_model_nested(m) && e->kind != VMS_STEAL_UNATTRIBUTED)
			vms_json_string(j, "layer", cli_machine_name(m, e->host));
		vms_json_uint(j, cli_unit(), e->ns);
		if (e->kind == VMS_STEAL_OTHERS) {
			vms_json_uint(j, "threads", e->threads);
			vms_json_bool(j, "threads_at_least", e->threads_at_least);
		}
		vms_json_end_object(j);
	}
	vms_json_end_array(j);
	json_dist(j, "runq_latency", v->runq_latency);
	if (v->contain_total) {
		vms_json_begin_object(j, "containment");
		vms_json_uint(j, "inside", v->contained);
		vms_json_uint(j, "total", v->contain_total);
		vms_json_end_object(j);
	} else {
		vms_json_null(j, "containment");
	}
	vms_json_end_object(j);
}

/* The text report without its findings (the HTML page's summary). */
void cli_report_text(FILE *f, struct vms_session *s, unsigned top)
{
	text_report(f, s, top, NULL, NULL);
}

static void json_report(FILE *f, struct vms_session *s, const struct vms_findings *fd,
			const struct vms_containers *ct)
{
	struct vms_model *m = vms_session_model(s);
	struct vms_analysis *a = vms_session_analysis(s);
	struct vms_json j;
	vms_json_init(&j, f, true);
	vms_json_begin_object(&j, NULL);
	cli_json_header(&j, "report");
	vms_json_uint(&j, "events", vms_session_events(s));
	vms_json_uint(&j, "backwards", vms_session_backwards(s));
	vms_json_uint(&j, cli_key("first"), vms_session_first_ts(s));
	vms_json_uint(&j, cli_key("last"), vms_session_last_ts(s));
	cli_findings_json(&j, m, fd);
	vms_json_begin_array(&j, "machines");
	const struct vms_filter *flt = vms_session_filter(s);
	struct rows rows = {0};
	if (rows_group(&rows, a, vms_model_nr_machines(m)) != 0) {
		rows_free(&rows);
		fprintf(stderr, "vmscope report: out of memory\n");
		return;
	}
	for (uint32_t i = 0; i < vms_model_nr_machines(m); i++) {
		const struct vms_machine *mc = vms_model_machine_c(m, i);
		if (!vms_filter_machine(flt, i))
			continue;
		struct vms_source *src = mc->source >= 0 ? vms_session_source(s, (uint32_t)mc->source) : NULL;
		vms_json_begin_object(&j, NULL);
		vms_json_string(&j, "name", mc->name);
		vms_json_begin_array(&j, "roles");
		if (mc->role & VMS_ROLE_HOST)
			vms_json_string(&j, NULL, "host");
		if (mc->role & VMS_ROLE_GUEST)
			vms_json_string(&j, NULL, "guest");
		vms_json_end_array(&j);
		vms_json_bool(&j, "traced", src != NULL);
		vms_json_string(&j, "path", src ? src->path : NULL);
		vms_json_string(&j, "format", src ? src->meta.format : NULL);
		if (src) {
			vms_json_uint(&j, "cpus", src->meta.nr_cpus);
			vms_json_uint(&j, "lost_events", src->meta.lost_events);
			vms_json_bool(&j, "ended_abruptly", src->meta.ended_abruptly);
			uint64_t og = 0, ot = 0;
			if (vms_model_untraced_omitted(m, i, &og, &ot) == 0 && og) {
				/* (only then: other outputs stay as they were) */
				vms_json_begin_object(&j, "untraced_guests_omitted");
				vms_json_uint(&j, "after", VMS_MODEL_MAX_UNTRACED);
				vms_json_uint(&j, "guests", og);
				vms_json_uint(&j, "vcpu_threads", ot);
				vms_json_end_object(&j);
			}
			cli_xen_json(&j, s, (uint32_t)mc->source);
		}
		if (mc->host >= 0) {
			vms_json_string(&j, "host", cli_machine_name(m, (uint32_t)mc->host));
			if (mc->host_pid >= 0)
				vms_json_int(&j, "host_pid", mc->host_pid);
			else
				vms_json_null(&j, "host_pid");
			vms_json_string(&j, "host_link", vms_link_how_name(mc->host_how));
			cli_vmm_json(&j, m, mc);
		}
		vms_json_begin_object(&j, "sync");
		cli_json_sync_members(&j, m, &mc->sync);
		vms_json_end_object(&j);
		uint32_t nr_gx = 0;
		const struct vms_exit_stats *gx = vms_analysis_guest_exits(a, i, &nr_gx);
		json_exits(&j, "exits", gx, nr_gx);
		vms_json_begin_array(&j, "vcpus");
		for (uint32_t k = rows.vstart[i]; k < rows.vstart[i + 1]; k++) {
			const struct vms_vcpu_stats *v = vms_analysis_vcpu(a, rows.vidx[k]);
			if (vms_filter_vcpu(flt, i, v->vcpu))
				json_vcpu(&j, m, mc, v);
		}
		vms_json_end_array(&j);
		bool host_seen, preempt_seen;
		machine_visibility(a, &rows, i, &host_seen, &preempt_seen);
		vms_json_begin_array(&j, "threads");
		for (uint32_t k = rows.gstart[i]; k < rows.gstart[i + 1]; k++) {
			const struct vms_gthread_stats *t = vms_analysis_gthread(a, rows.gidx[k]);
			vms_json_begin_object(&j, NULL);
			vms_json_int(&j, "tid", t->tid);
			vms_json_string(&j, "comm", t->comm);
			vms_json_uint(&j, cli_key("running"), t->ns_running);
			json_uint_seen(&j, cli_key("vmm"), t->ns_vmm, host_seen);
			json_uint_seen(&j, cli_key("preempted"), t->ns_preempted, preempt_seen);
			json_uint_seen(&j, cli_key("halted"), t->ns_halted, host_seen);
			vms_json_begin_array(&j, "exits");
			for (uint32_t r = 0; r < t->nr_reasons; r++) {
				char name[48];
				reason_name(t->reasons[r].isa, t->reasons[r].reason, name, sizeof name);
				vms_json_begin_object(&j, NULL);
				vms_json_uint(&j, "isa", t->reasons[r].isa);
				vms_json_uint(&j, "reason", t->reasons[r].reason);
				vms_json_string(&j, "name", name);
				vms_json_uint(&j, "count", t->reasons[r].count);
				vms_json_uint(&j, cli_unit(), t->reasons[r].ns);
				vms_json_end_object(&j);
			}
			vms_json_end_array(&j);
			vms_json_end_object(&j);
		}
		vms_json_end_array(&j);
		vms_json_end_object(&j);
	}
	vms_json_end_array(&j);
	if (vms_containers_count(ct)) /* only where a trace records namespaces */
		cli_containers_json(&j, m, ct);
	vms_json_end_object(&j);
	rows_free(&rows);
	vms_json_finish(&j);
}

void cli_findings_compute(struct vms_session *s, struct vms_findings *fd,
			  const struct vms_latency *lat)
{
	uint32_t ns = vms_session_nr_sources(s);
	struct vms_source **srcs = calloc(ns ? ns : 1, sizeof *srcs);
	for (uint32_t i = 0; srcs && i < ns; i++)
		srcs[i] = vms_session_source(s, i);
	vms_findings_compute(fd, vms_session_analysis(s), lat, srcs, srcs ? ns : 0);
	free(srcs);
}

int cmd_report(int argc, char **argv)
{
	struct cli c;
	int st = cli_begin(&c, argc, argv, CLI_JSON | CLI_ROLES | CLI_TOP | CLI_OUT | CLI_WINDOW, usage);
	if (st != CLI_GO)
		return st;
	/* findings first: the latency consumer and the findings' own, made for each pass */
	struct vms_observer lo, fo;
	struct vms_latency *lat = vms_latency_new(NULL, NULL, NULL, &lo);
	struct vms_findings *fd = vms_findings_new(NULL, &fo);
	struct vms_containers *ct = NULL;
	if (!lat || !fd || vms_session_observe(c.s, &lo) || vms_session_observe(c.s, &fo) ||
	    cli_containers_observe(c.s, &ct)) {
		fprintf(stderr, "vmscope %s: out of memory\n", c.cmd);
		st = VMS_EXIT_FAIL;
	} else {
		vms_findings_time_unit(fd, cli_cycles());
		st = cli_run(&c, NULL);
	}
	if (!st) {
		struct vms_session *s = c.s;
		cli_findings_compute(s, fd, lat);
		if (c.json)
			json_report(c.f, s, fd, ct);
		else
			text_report(c.f, s, c.top, fd, ct);
		cli_containers_warn(c.cmd, vms_session_model(s), ct);
	}
	st = cli_end(&c, st);
	vms_containers_free(ct);
	vms_latency_free(lat);
	vms_findings_free(fd);
	return st;
}
