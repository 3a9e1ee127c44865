/* The one schema of vmscope's tables (include/vmscope/db.h): every backend creates its
 * tables from it, `vmscope db --schema` prints it as docs/schema.md, and the tests read it.
 * Times are integers in the capture's time_unit (captures.time_unit: "ns", or "cycles" for a
 * trace that counts cycles with no known rate), reference timebase, intervals [start, end). */
#include "vmscope/db.h"

#define I(n, u, d) { n, VMS_DB_INT, false, u, d }
#define IN(n, u, d) { n, VMS_DB_INT, true, u, d }
#define T(n, d) { n, VMS_DB_TEXT, false, NULL, d }
#define TN(n, d) { n, VMS_DB_TEXT, true, NULL, d }
#define CAPTURE T("capture", "the capture (captures.capture)")
#define ARRAY_N(a) (uint32_t)(sizeof a / sizeof a[0])

static const struct vms_db_column captures[] = {
	CAPTURE,
	T("host", "the host's name (db --host-name, else the host machine's name)"),
	TN("kernel", "the host's kernel, as given with db --kernel (NULL: not given)"),
	T("files", "the trace files, one per line"),
	T("time_unit", "\"ns\", or \"cycles\" (a counter clock with no known rate)"),
	I("first_ns", "time_unit", "the first event's time"),
	I("last_ns", "time_unit", "the last event's time"),
	I("events", "count", "events read"),
	T("vmscope_version", "the vmscope that wrote it"),
};
static const struct vms_db_column machines[] = {
	CAPTURE,
	T("machine", "its name"),
	T("roles", "host, guest or host+guest"),
	I("traced", "bool", "1: a trace of its own was read"),
	TN("path", "its trace"),
	TN("format", "its trace's format"),
	IN("cpus", "count", "CPUs of its trace"),
	IN("lost_events", "count", "events its trace lost"),
	TN("host", "a guest's host machine"),
	IN("host_pid", NULL, "a guest's VMM process id on its host"),
};
static const struct vms_db_column vcpus[] = {
	CAPTURE,
	T("machine", "the guest"),
	I("vcpu", NULL, "the vCPU number"),
	IN("host_tid", NULL, "its host thread"),
	T("link", "how the vCPU was linked to its host thread"),
	I("first_ns", "time_unit", "span analysed: start"),
	I("last_ns", "time_unit", "span analysed: end"),
	I("unknown_ns", "time_unit", "outside the traces' coverage"),
	IN("idle_ns", "time_unit", "idle (NULL: the guest was not traced)"),
	IN("running_ns", "time_unit", "running guest code (NULL: the guest was not traced)"),
	IN("vmm_ns", "time_unit", "in the hypervisor (NULL: no host trace)"),
	IN("preempted_ns", "time_unit", "runnable, off its CPU (NULL: not visible)"),
	IN("halted_ns", "time_unit", "halted (NULL: no host trace)"),
	IN("halt_poll_ns", "time_unit", "of halted_ns: halt-polling (NULL: no host trace)"),
	IN("hypervisor_ns", "time_unit", "time handling exits (NULL: no host trace)"),
	I("host_visible", "bool", "a host trace covers it"),
	I("preempt_visible", "bool", "its host recorded sched_switch"),
	I("exits", "count", "every kvm_exit"),
	I("exits_unfinished", "count", "exits with no known end"),
	I("runq_count", "count", "host run-queue waits of its thread"),
	IN("runq_p99_ns", "time_unit", "their p99 (NULL: none)"),
	IN("contained", "count", "guest events inside a guest-mode window (NULL: not checked)"),
	IN("contain_total", "count", "guest events checked (NULL: not checked)"),
};
static const struct vms_db_column vcpu_intervals[] = {
	CAPTURE,
	T("machine", "the guest"),
	I("vcpu", NULL, "the vCPU"),
	I("start_ns", "time_unit", "start"),
	I("end_ns", "time_unit", "end (exclusive)"),
	I("status", NULL, "Trace Compass's encoding: 0 unknown, 1 idle, 2 running, +128 VMM, "
			  "+256 preempted"),
	T("state", "unknown, idle, running, vmm, preempted or halted"),
};
static const struct vms_db_column thread_intervals[] = {
	CAPTURE,
	T("machine", "the guest"),
	I("tid", NULL, "the guest thread"),
	I("vcpu", NULL, "the vCPU it was on"),
	I("start_ns", "time_unit", "start"),
	I("end_ns", "time_unit", "end (exclusive)"),
	T("reason", "vmm, preempted or halted"),
	TN("exit_reason", "vmm: the exit's name"),
	IN("host_tid", NULL, "the host thread that ran instead (NULL: not known)"),
};
static const struct vms_db_column pcpu_intervals[] = {
	CAPTURE,
	T("host", "the host"),
	I("cpu", NULL, "its physical CPU"),
	I("start_ns", "time_unit", "start"),
	I("end_ns", "time_unit", "end (exclusive)"),
	TN("machine", "the host (a host thread ran) or the guest in guest mode (NULL: who ran is "
		      "not known; pcpus prints unknown)"),
	IN("vcpu", NULL, "the guest's vCPU (NULL: a host thread)"),
	IN("tid", NULL, "the thread (0: idle; NULL: not known yet)"),
	TN("comm", "its name"),
};
static const struct vms_db_column exits[] = {
	CAPTURE,
	T("machine", "the guest"),
	I("vcpu", NULL, "the vCPU"),
	I("start_ns", "time_unit", "the kvm_exit"),
	IN("duration_ns", "time_unit", "to its kvm_entry (NULL: unfinished or lost)"),
	T("outcome", "ended, unfinished (the trace ended) or lost (a gap closed it)"),
	I("isa", NULL, "1 VMX, 2 SVM, 0 unknown"),
	I("reason", NULL, "the exit reason's code"),
	T("name", "its name (the code when unknown)"),
	I("guest_rip", NULL, "the guest's RIP at the exit (a 64-bit address, two's complement)"),
	TN("symbol", "the guest kernel symbol at guest_rip (NULL: not known)"),
	I("host_cpu", NULL, "the physical CPU of the kvm_exit"),
	I("host_tid", NULL, "the vCPU thread"),
	IN("gtid", NULL, "the guest thread current on the vCPU (NULL: not known)"),
};
static const struct vms_db_column exit_stats[] = {
	CAPTURE,
	T("machine", "the guest"),
	I("vcpu", NULL, "the vCPU"),
	I("isa", NULL, "1 VMX, 2 SVM"),
	I("reason", NULL, "the reason's code"),
	T("name", "its name"),
	I("count", "count", "every kvm_exit"),
	I("unfinished", "count", "of them, with no known end (not in the times)"),
	I("total_ns", "time_unit", "time of the finished ones"),
	I("min_ns", "time_unit", "shortest"),
	I("max_ns", "time_unit", "longest"),
	I("mean_ns", "time_unit", "mean, rounded"),
	I("p50_ns", "time_unit", "median (nearest rank)"),
	I("p90_ns", "time_unit", "90th percentile"),
	I("p99_ns", "time_unit", "99th percentile"),
	I("approximate", "bool", "1: percentiles from the histogram (relative error < 0.4%)"),
};
static const struct vms_db_column steal[] = {
	CAPTURE,
	T("machine", "the guest"),
	I("vcpu", NULL, "the vCPU"),
	T("kind", "thread, unattributed or other threads"),
	IN("host_tid", NULL, "the host thread (kind thread)"),
	IN("host_pid", NULL, "its process (NULL: not known)"),
	TN("layer", "the machine whose scheduler ran it (report --json's layer): the vCPU's "
		    "host, or for a nested guest's vCPU preempted at the layer below, that layer "
		    "(L0); NULL: unattributed"),
	T("comm", "its name"),
	I("ns", "time_unit", "time it ran while the vCPU was preempted"),
	IN("threads", "count", "other threads: how many"),
};
static const struct vms_db_column wakeups[] = {
	CAPTURE,
	T("machine", "the guest"),
	I("tid", NULL, "the guest thread woken"),
	T("comm", "its name"),
	I("vcpu", NULL, "the vCPU it was woken onto"),
	IN("waker_vcpu", NULL, "the vCPU the wake-up was recorded on (NULL: not known)"),
	I("wakeup_ns", "time_unit", "the wake-up"),
	I("run_ns", "time_unit", "when it ran"),
	I("latency_ns", "time_unit", "run_ns - wakeup_ns, the sum of the five causes"),
	I("guest_runqueue_ns", "time_unit", "another guest thread had the vCPU"),
	I("preempted_ns", "time_unit", "the vCPU's thread was preempted on the host"),
	I("exits_ns", "time_unit", "VM exits"),
	I("halted_wakeup_ns", "time_unit", "the host had to wake the halted vCPU"),
	I("unknown_ns", "time_unit", "outside the traces"),
	T("top_cause", "the largest cause"),
	T("culprit", "who, for the top cause"),
};
static const struct vms_db_column findings[] = {
	CAPTURE,
	I("rank", NULL, "1 = the costliest"),
	T("kind", "steal, latency, exit-storm, halt-poll, sync or lost"),
	T("machine", "the machine it is about"),
	IN("vcpu", NULL, "the vCPU (NULL: not about one)"),
	IN("tid", NULL, "the thread (NULL: not about one)"),
	IN("start_ns", "time_unit", "when (NULL: the whole trace)"),
	IN("end_ns", "time_unit", "until"),
	I("score_ns", "time_unit", "the time it cost (the ranking)"),
	T("text", "the sentence report prints"),
};

static const struct vms_db_table tables[VMS_DB_NR_TABLES] = {
	[VMS_DB_CAPTURES] = { "captures", "one run of vmscope over one host's traces; written "
				"last, so a capture listed here is complete",
			      captures, ARRAY_N(captures), "capture" },
	[VMS_DB_MACHINES] = { "machines", "the machines of a capture (report --json's machines)",
			      machines, ARRAY_N(machines), "capture, machine" },
	[VMS_DB_VCPUS] = { "vcpus", "per-vCPU totals by state (report --json's vcpus)", vcpus,
			   ARRAY_N(vcpus), "capture, machine, vcpu" },
	[VMS_DB_VCPU_INTERVALS] = { "vcpu_intervals", "vCPU state intervals (vmscope vcpus)",
				    vcpu_intervals, ARRAY_N(vcpu_intervals),
				    "capture, machine, vcpu, start_ns" },
	[VMS_DB_THREAD_INTERVALS] = { "thread_intervals", "guest threads stopped while their guest "
				      "thought them running (vmscope threads)", thread_intervals,
				      ARRAY_N(thread_intervals), "capture, machine, vcpu, start_ns" },
	[VMS_DB_PCPU_INTERVALS] = { "pcpu_intervals", "what ran on each physical CPU (vmscope "
				    "pcpus)", pcpu_intervals, ARRAY_N(pcpu_intervals),
				    "capture, host, cpu, start_ns" },
	[VMS_DB_EXITS] = { "exits", "every VM exit", exits, ARRAY_N(exits),
			   "capture, machine, vcpu, start_ns" },
	[VMS_DB_EXIT_STATS] = { "exit_stats", "exits per vCPU and reason (vmscope exits --csv)",
				exit_stats, ARRAY_N(exit_stats), "capture, machine, vcpu, isa, reason" },
	[VMS_DB_STEAL] = { "steal", "who took a vCPU's CPU (report --json's steal)", steal,
			   ARRAY_N(steal), "capture, machine, vcpu, kind" },
	[VMS_DB_WAKEUPS] = { "wakeups", "guest thread wake-ups split into causes (vmscope "
			     "latency --csv)", wakeups, ARRAY_N(wakeups),
			     "capture, machine, vcpu, wakeup_ns" },
	[VMS_DB_FINDINGS] = { "findings", "what went wrong, ranked (report's findings)", findings,
			      ARRAY_N(findings), "capture, rank" },
};

const struct vms_db_table *vms_db_table(enum vms_db_table_id id)
{
	return (unsigned)id < VMS_DB_NR_TABLES ? &tables[id] : NULL;
}

static const char *type_name(const struct vms_db_column *c)
{
	return c->type == VMS_DB_INT ? "integer" : c->type == VMS_DB_TEXT ? "text" : "real";
}

void vms_db_schema_markdown(FILE *f)
{
	fputs("# vmscope's tables\n\n"
	      "Generated by `vmscope db --schema` (lib/output/db_schema.c); a test checks that\n"
	      "this file is what it prints. The same tables in SQLite and ClickHouse. Every row\n"
	      "carries its capture (the first column): one run of vmscope over one host's traces,\n"
	      "so many hosts' captures live in one database. A capture is complete once its row is\n"
	      "in `captures` (written last): queries join `captures` to see complete ones only.\n"
	      "Times are integers in the capture's `time_unit` (`ns`, or `cycles` when a trace\n"
	      "counts cycles with no known rate), in the reference timebase; intervals are\n"
	      "[start, end). NULL means not known, never 0. Text from a trace is stored escaped as\n"
	      "vmscope's text writers escape it (bytes that are not UTF-8 and control characters\n"
	      "as \\xHH, a backslash doubled). Types: integer is SQLite INTEGER / ClickHouse Int64,\n"
	      "text TEXT / String, real REAL / Float64; nullable columns are Nullable(...) in\n"
	      "ClickHouse. On a ClickHouse cluster (`db --cluster NAME`), each shard holds these\n"
	      "tables and the first server the Distributed tables <t>_all over them: write and\n"
	      "query <t>_all.\n", f);
	for (int t = 0; t < VMS_DB_NR_TABLES; t++) {
		const struct vms_db_table *tb = &tables[t];
		fprintf(f, "\n## %s\n\n%s. Sort key (ClickHouse ORDER BY): (%s).\n\n", tb->name,
			tb->doc, tb->key);
		fputs("| column | type | unit | null | meaning |\n|---|---|---|---|---|\n", f);
		for (uint32_t c = 0; c < tb->nr_cols; c++) {
			const struct vms_db_column *col = &tb->cols[c];
			fprintf(f, "| %s | %s | %s | %s | %s |\n", col->name, type_name(col),
				col->unit ? col->unit : "", col->nullable ? "yes" : "", col->doc);
		}
	}
}
