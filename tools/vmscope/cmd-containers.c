/* vmscope containers: a machine's threads grouped by container (PID namespace), with the time
 * they ran and the time they lost to each layer below (include/vmscope/containers.h). Also
 * the writers of report's "Containers" section and its JSON "containers" array.
 * CSV header (a contract): machine,container,level,parent,tid,comm,running_ns,runqueue_ns,
 * vmm_ns,preempted_ns (_cycles for a counter clock without its rate; vmm and preempted empty
 * when unknown); in a nested model four more at the end: layer (the guest's host, whose
 * hypervisor and scheduler vmm and preempted are at), below_layer (a nested guest's host's
 * host, L0), below_vmm_ns, below_preempted_ns (the part of them at below_layer). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "vmscope/containers.h"
#include "vmscope/writers.h"

static const char usage[] =
	"usage: vmscope containers [--csv | --json] [-o FILE] [--tsc-hz HZ] [--host FILE]\n"
	"                          [--guest NAME=FILE] [--map NAME:VCPU=TID,...] TRACE...\n"
	"\n"
	"A machine's threads grouped by container: a PID namespace other than the root one, as\n"
	"LTTng's statedump and sched_process_fork record them (ns_inum, ns_level, vtids); a\n"
	"thread belongs to its deepest namespace, and nested containers name their parent. Per\n"
	"container and per thread: running (sched_switch in to out, from each CPU's first\n"
	"sched_switch), runqueue (waiting in the machine's own run queue: from a wake-up, a fork\n"
	"or a switch that left it runnable, to the switch that runs it), and for a guest whose\n"
	"host was traced, of its running time: vmm (its vCPU was in a VM exit) and preempted (its\n"
	"vCPU's host thread was preempted); without the host they are unknown. For a nested\n"
	"guest (L2, whose host L1 is a guest of L0), the part of vmm and preempted at L0 (the L1\n"
	"vCPU in L0's exit or preempted by L0's scheduler), the layer named. Times are integer\n"
	"ns in the reference timebase (cycles when a trace counts cycles with no rate).\n"
	"\n"
	"  --csv               CSV: machine,container,level,parent,tid,comm,running_ns,\n"
	"                      runqueue_ns,vmm_ns,preempted_ns (one row per thread); nested:\n"
	"                      + layer,below_layer,below_vmm_ns,below_preempted_ns\n"
	"  --json              a JSON document: the header, then \"containers\"\n"
	CLI_HELP_OUTPUT CLI_HELP_ROLES;

static const char *below(uint64_t v, bool known, char *buf, size_t len)
{
	return known ? cli_ns(v, buf, len) : "unknown";
}

/* One row of times; `nested`: the model is, so the two columns of the layer below follow
 * (blank for a machine that is no nested guest) */
static void text_row(FILE *f, const char *what, const char *comm, uint64_t run, uint64_t rq,
		     uint64_t vmm, uint64_t pre, uint64_t vmm_b, uint64_t pre_b,
		     const struct vms_container *k, bool nested)
{
	char b[6][32];
	fprintf(f, "    %-28s %-16s %12s %12s %12s %12s", what, cli_text(comm),
		cli_ns(run, b[0], 32), cli_ns(rq, b[1], 32), below(vmm, k->below_known, b[2], 32),
		below(pre, k->below_known, b[3], 32));
	if (nested && k->below_layer >= 0)
		fprintf(f, " %12s %12s", cli_ns(vmm_b, b[4], 32), cli_ns(pre_b, b[5], 32));
	fputc('\n', f);
}

void cli_containers_text(FILE *f, struct vms_model *m, const struct vms_containers *c)
{
	uint32_t n = vms_containers_count(c);
	if (!n)
		return;
	fprintf(f, "\nContainers (PID namespaces below the root; vmm and preempted: of the running "
		   "time)\n");
	bool nested = vms_model_nested(m);
	fprintf(f, "    %-28s %-16s %12s %12s %12s %12s", "container / tid", "comm", "running",
		"runqueue", "vmm", "preempted");
	if (nested)
		fprintf(f, " %12s %12s", "vmm below", "pre. below");
	fputc('\n', f);
	for (uint32_t i = 0; i < n; i++) {
		const struct vms_container *k = vms_containers_get(c, i);
		char what[96], par[24] = "root";
		if (k->parent)
			snprintf(par, sizeof par, "%llu", (unsigned long long)k->parent);
		else if (k->level > 1)
			snprintf(par, sizeof par, "?");
		fprintf(f, "  %s: container %llu (level %u, in %s), %u thread%s",
			cli_text(cli_machine_name(m, k->machine)), (unsigned long long)k->inum, k->level,
			par, k->nr_threads, k->nr_threads == 1 ? "" : "s");
		if (nested && k->below_layer >= 0) {
			const struct vms_machine *mc = vms_model_machine_c(m, k->machine);
			fprintf(f, "; vmm and preempted at %s", cli_text(cli_machine_name(m, (uint32_t)mc->host)));
			fprintf(f, " or below, the part below at %s",
				cli_text(cli_machine_name(m, (uint32_t)k->below_layer)));
		}
		fputc('\n', f);
		for (uint32_t t = 0; t < k->nr_threads; t++) {
			const struct vms_container_thread *x = &k->threads[t];
			snprintf(what, sizeof what, "%d", x->tid);
			text_row(f, what, x->comm, x->running, x->runqueue, x->vmm, x->preempted,
				 x->vmm_below, x->preempted_below, k, nested);
		}
		if (k->nr_threads > 1)
			text_row(f, "all", "", k->running, k->runqueue, k->vmm, k->preempted,
				 k->vmm_below, k->preempted_below, k, nested);
	}
}

/* `layers`: the model is nested, so the part at the layer below follows (null when vmm and
 * preempted are unknown, 0 for a guest of the root) */
static void json_times(struct vms_json *j, uint64_t run, uint64_t rq, uint64_t vmm, uint64_t pre,
		       uint64_t vmm_b, uint64_t pre_b, const struct vms_container *k, bool layers)
{
	vms_json_uint(j, cli_key("running"), run);
	vms_json_uint(j, cli_key("runqueue"), rq);
	if (k->below_known) {
		vms_json_uint(j, cli_key("vmm"), vmm);
		vms_json_uint(j, cli_key("preempted"), pre);
	} else {
		vms_json_null(j, cli_key("vmm"));
		vms_json_null(j, cli_key("preempted"));
	}
	if (!layers)
		return;
	if (k->below_known) { /* 0 when no layer is below the host */
		vms_json_uint(j, cli_key("below_vmm"), vmm_b);
		vms_json_uint(j, cli_key("below_preempted"), pre_b);
	} else {
		vms_json_null(j, cli_key("below_vmm"));
		vms_json_null(j, cli_key("below_preempted"));
	}
}

/* A nested model's layer names of container k: its machine's host and the one below */
static void layer_names(struct vms_model *m, const struct vms_container *k, const char **layer,
			const char **below)
{
	const struct vms_machine *mc = vms_model_machine_c(m, k->machine);
	*layer = k->below_known ? cli_machine_name(m, (uint32_t)mc->host) : NULL;
	*below = k->below_layer >= 0 ? cli_machine_name(m, (uint32_t)k->below_layer) : NULL;
}

void cli_containers_json(struct vms_json *j, struct vms_model *m, const struct vms_containers *c)
{
	bool nested = vms_model_nested(m);
	vms_json_begin_array(j, "containers");
	for (uint32_t i = 0; i < vms_containers_count(c); i++) {
		const struct vms_container *k = vms_containers_get(c, i);
		const char *layer, *below_at;
		layer_names(m, k, &layer, &below_at);
		vms_json_begin_object(j, NULL);
		vms_json_string(j, "machine", cli_machine_name(m, k->machine));
		vms_json_uint(j, "ns_inum", k->inum);
		vms_json_uint(j, "ns_level", k->level);
		if (k->parent)
			vms_json_uint(j, "parent", k->parent);
		else
			vms_json_null(j, "parent"); /* the root, or not recorded (level > 1) */
		vms_json_bool(j, "below_known", k->below_known);
		if (nested) {
			if (layer)
				vms_json_string(j, "layer", layer);
			else
				vms_json_null(j, "layer");
			if (below_at)
				vms_json_string(j, "below_layer", below_at);
			else
				vms_json_null(j, "below_layer");
		}
		json_times(j, k->running, k->runqueue, k->vmm, k->preempted, k->vmm_below,
			   k->preempted_below, k, nested);
		vms_json_begin_array(j, "threads");
		for (uint32_t t = 0; t < k->nr_threads; t++) {
			const struct vms_container_thread *x = &k->threads[t];
			vms_json_begin_object(j, NULL);
			vms_json_int(j, "tid", x->tid);
			vms_json_string(j, "comm", x->comm);
			json_times(j, x->running, x->runqueue, x->vmm, x->preempted, x->vmm_below,
				   x->preempted_below, k, nested);
			vms_json_end_object(j);
		}
		vms_json_end_array(j);
		vms_json_end_object(j);
	}
	vms_json_end_array(j);
}

void cli_containers_warn(const char *cmd, struct vms_model *m, const struct vms_containers *c)
{
	uint32_t last = UINT32_MAX;
	for (uint32_t i = 0; i < vms_containers_count(c); i++) {
		const struct vms_container *k = vms_containers_get(c, i);
		if (k->below_known || k->machine == last)
			continue;
		last = k->machine;
		fprintf(stderr, "vmscope %s: warning: %s: not a guest with its host's trace: the time "
				"its containers lost to the VMM and to host preemption is unknown\n",
			cmd, cli_text(cli_machine_name(m, k->machine)));
	}
}

/* Can this source record PID namespaces? LTTng's statedump, or a fork outside trace.dat
 * (ftrace's sched_process_fork has no namespace fields). */
static bool may_record_namespaces(const struct vms_source *src)
{
	bool tracedat = !strncmp(src->meta.format, "trace.dat", 9);
	for (uint32_t i = 0; i < src->meta.nr_types; i++) {
		const char *n = src->meta.type_names[i], *colon = strrchr(n, ':');
		n = colon ? colon + 1 : n;
		if (!strcmp(n, "lttng_statedump_process_state") ||
		    !strcmp(n, "lttng_statedump_process_pid_ns") ||
		    (!tracedat && !strcmp(n, "sched_process_fork")))
			return true;
	}
	return false;
}

int cli_containers_observe(struct vms_session *s, struct vms_containers **out)
{
	*out = NULL;
	struct vms_observer o;
	struct vms_containers *c = NULL;
	for (uint32_t i = 0; i < vms_session_nr_sources(s); i++) {
		if (!may_record_namespaces(vms_session_source(s, i)))
			continue;
		if ((!c && !(c = vms_containers_new(&o))) || vms_containers_watch(c, i) != 0) {
			vms_containers_free(c);
			return -1;
		}
	}
	if (c && vms_session_observe(s, &o) != 0) {
		vms_containers_free(c);
		return -1;
	}
	*out = c;
	return 0;
}

static void csv_below(FILE *f, uint64_t v, bool known)
{
	if (known)
		fprintf(f, ",%llu", (unsigned long long)v);
	else
		fputc(',', f);
}

static void csv(FILE *f, struct vms_model *m, const struct vms_containers *c)
{
	bool nested = vms_model_nested(m);
	fprintf(f, "machine,container,level,parent,tid,comm,%s,%s,%s,%s", cli_key("running"),
		cli_key("runqueue"), cli_key("vmm"), cli_key("preempted"));
	if (nested)
		fprintf(f, ",layer,below_layer,%s,%s", cli_key("below_vmm"),
			cli_key("below_preempted"));
	fputc('\n', f);
	for (uint32_t i = 0; i < vms_containers_count(c); i++) {
		const struct vms_container *k = vms_containers_get(c, i);
		const char *layer, *below_at;
		layer_names(m, k, &layer, &below_at);
		for (uint32_t t = 0; t < k->nr_threads; t++) {
			const struct vms_container_thread *x = &k->threads[t];
			vms_csv_string(f, cli_machine_name(m, k->machine));
			fprintf(f, ",%llu,%u,", (unsigned long long)k->inum, k->level);
			if (k->parent)
				fprintf(f, "%llu", (unsigned long long)k->parent);
			fprintf(f, ",%d,", x->tid);
			vms_csv_string(f, x->comm);
			fprintf(f, ",%llu,%llu", (unsigned long long)x->running,
				(unsigned long long)x->runqueue);
			csv_below(f, x->vmm, k->below_known);
			csv_below(f, x->preempted, k->below_known);
			if (nested) {
				fputc(',', f);
				if (layer)
					vms_csv_string(f, layer);
				fputc(',', f);
				if (below_at)
					vms_csv_string(f, below_at);
				csv_below(f, x->vmm_below, k->below_known);
				csv_below(f, x->preempted_below, k->below_known);
			}
			fputc('\n', f);
		}
	}
}

int cmd_containers(int argc, char **argv)
{
	struct cli c;
	int st = cli_begin(&c, argc, argv, CLI_JSON | CLI_CSV | CLI_ROLES | CLI_OUT, usage);
	if (st != CLI_GO)
		return st;
	struct vms_containers *ct;
	if (cli_containers_observe(c.s, &ct) != 0) {
		fprintf(stderr, "vmscope %s: out of memory\n", c.cmd);
		st = VMS_EXIT_FAIL;
	} else {
		st = cli_run(&c, NULL);
	}
	if (!st) {
		struct vms_model *m = vms_session_model(c.s);
		if (c.json) {
			struct vms_json j;
			vms_json_init(&j, c.f, true);
			vms_json_begin_object(&j, NULL);
			cli_json_header(&j, "containers");
			cli_containers_json(&j, m, ct);
			vms_json_end_object(&j);
			vms_json_finish(&j);
		} else if (c.csv) {
			csv(c.f, m, ct);
		} else if (vms_containers_count(ct)) {
			cli_containers_text(c.f, m, ct);
		} else {
			fprintf(c.f, "no containers: the traces record no PID namespace below the root\n");
		}
		cli_containers_warn(c.cmd, m, ct);
	}
	st = cli_end(&c, st);
	vms_containers_free(ct);
	return st;
}
