/* Hand-made host trace.dat files for the CLI tests, written with vmscope's own trace.dat
 * writer (its output is checked against trace-cmd in tests/synth). Every value the tests
 * expect is derived by hand from the events below.
 *
 *   mk_trace tsc FILE   clock x86-tsc with no TSC2NSEC: timestamps are TSC ticks of an
 *                       unknown rate. One CPU, vCPU 0 of one VM on host thread 2001:
 *                         entry 1000, exit IO_INSTRUCTION (30) 5000, entry 7000,
 *                         exit EXTERNAL_INTERRUPT (1) 10000, entry 16000,
 *                         exit IO_INSTRUCTION 20000, entry 21000.
 *                       Exits: IO_INSTRUCTION 2 (2000 + 1000 = 3000 ticks, min 1000, max 2000),
 *                       EXTERNAL_INTERRUPT 1 (6000 ticks). At --tsc-hz 2G a tick is 0.5 ns.
 *   mk_trace ns FILE    the same events with the "local" clock (nanoseconds), and a saved
 *                       cmdline for thread 2001 named "CPU 0/KVM", as QEMU names vCPU threads.
 *   mk_trace nokvm FILE two sched_switch events and no KVM event at all.
 *   mk_trace tscsteal FILE  x86-tsc ticks, no TSC2NSEC: vCPU 0 (thread 2001) enters at 1000,
 *                       exits EXTERNAL_INTERRUPT at 2999000; host thread 77 (task-77) takes
 *                       the CPU at 3000000 while 2001 stays runnable, gives it back at
 *                       5000000; entry 5001000, exit IO_INSTRUCTION 10000000, entry 10001000.
 *                       The vCPU's span is 10001000 - 1000 = 10 M ticks, 77 stole 2 M of them
 *                       (20%), from tick 2999000 to 4999000 after the first event: a steal
 *                       finding, in cycles.
 *   mk_trace moving FILE  the "local" clock (ns), two CPUs, no sched_switch format at all
 *                       (kvm_entry and kvm_exit only, as kvm-hip24's host): vCPU 0's thread
 *                       2001 ("CPU 0/KVM") enters on CPU 0 at 1000, exits 5000, enters 7000,
 *                       exits 10000; then, with no switch recorded, enters on CPU 1 at 16000,
 *                       exits 20000, enters 21000, exits 25000; back on CPU 0, enters 30000,
 *                       exits 32000 (the last event). What is known (tests/views/test_pcpus.sh):
 *                       CPU 0 guest mode [1000,5000) [7000,10000) [30000,32000), unknown
 *                       [5000,7000) [10000,30000); CPU 1 guest mode [16000,20000)
 *                       [21000,25000), unknown [20000,21000) [25000,32000). Unknown:
 *                       22000 of CPU 0's 31000 ns, 8000 of CPU 1's 16000, 30000 of 47000
 *                       (63.83%).
 *   mk_trace lostswitch FILE  the "local" clock (ns), two CPUs, with sched_switch; thread 77
 *                       ("task-77") comes on CPU 1 while CPU 0, whose switch away from it
 *                       was lost, still shows it. CPU 0: switch 0 -> 77 at 1000, 77 wakes
 *                       2001 at 3000, switch 88 -> 0 at 7000. CPU 1: switch 0 -> 2001 at
 *                       2000, kvm_entry 2500, kvm_exit 4000, switch 2001 -> 77 at 4500,
 *                       77 -> 2001 at 6000, kvm_entry 6500, kvm_exit 8000 (the last event).
 *                       What is known (tests/views/test_pcpus.sh): CPU 0 runs 77 [1000,3000)
 *                       (3000: its last event there), unknown [3000,7000), idle [7000,8000);
 *                       CPU 1 runs 2001 [2000,2500), guest mode [2500,4000), 2001
 *                       [4000,4500), 77 [4500,6000), 2001 [6000,6500), guest mode
 *                       [6500,8000). Unknown: 4000 of CPU 0's 7000 ns, none of CPU 1's 6000,
 *                       4000 of 13000 (30.77%). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "mk_events.h"

#define fmt mk_fmt

static int entry_on(struct vms_tdw *w, uint32_t cpu, uint64_t ts, struct vms_error *err)
{
	return mk_entry(w, cpu, ts, 2001, err);
}

static int vmexit_on(struct vms_tdw *w, uint32_t cpu, uint64_t ts, uint32_t reason,
		     struct vms_error *err)
{
	return mk_exit(w, cpu, ts, 2001, reason, err);
}

static int entry(struct vms_tdw *w, uint64_t ts, struct vms_error *err)
{
	return entry_on(w, 0, ts, err);
}

static int vmexit(struct vms_tdw *w, uint64_t ts, uint32_t reason, struct vms_error *err)
{
	return vmexit_on(w, 0, ts, reason, err);
}

#define sw_on mk_switch

static int sw(struct vms_tdw *w, uint64_t ts, int prev, int next, struct vms_error *err)
{
	return sw_on(w, 0, ts, prev, next, err);
}

/* thread `by` on CPU cpu wakes thread `pid` */
static int wakeup_on(struct vms_tdw *w, uint32_t cpu, uint64_t ts, int by, int pid,
		     struct vms_error *err)
{
	struct vms_ev_sched_wakeup e;
	memset(&e, 0, sizeof e);
	e.c.type = 374;
	e.c.pid = by;
	snprintf(e.comm, 16, "task-%d", pid);
	e.pid = pid;
	e.prio = 120;
	e.target_cpu = 1;
	return vms_tdw_event(w, cpu, ts, &e, sizeof e, err);
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "tsc") && strcmp(argv[1], "ns") && strcmp(argv[1], "nokvm") &&
			  strcmp(argv[1], "tscsteal") && strcmp(argv[1], "moving") &&
			  strcmp(argv[1], "lostswitch"))) {
		fprintf(stderr, "usage: mk_trace tsc|ns|nokvm|tscsteal|moving|lostswitch FILE\n");
		return 2;
	}
	bool steal = !strcmp(argv[1], "tscsteal"), moving = !strcmp(argv[1], "moving");
	bool lost = !strcmp(argv[1], "lostswitch");
	bool tsc = steal || !strcmp(argv[1], "tsc"), kvm = strcmp(argv[1], "nokvm") != 0;
	struct vms_tdw_config c = {
		.path = argv[2], .compression = VMS_TDW_NONE, .nr_cpus = moving || lost ? 2 : 1,
		.header_page = vms_synth_header_page, .header_event = vms_synth_header_event,
		.buffer_clock = tsc ? "x86-tsc" : "local",
		.trace_clock = tsc ? "local global counter uptime perf mono mono_raw boot [x86-tsc]\n"
				   : "[local] global counter uptime perf mono mono_raw boot x86-tsc\n",
		.uname = "Linux test 6.1.0 x86_64", .version = "test",
	};
	struct vms_tdw *w;
	struct vms_error err = { 0 };
	if (vms_tdw_open(&w, &c, &err))
		goto fail;
	if ((!moving && fmt(w, "sched", "sched_switch", 372, vms_synth_fmt_sched_switch, &err)) ||
	    fmt(w, "kvm", "kvm_entry", 115, vms_synth_fmt_kvm_entry, &err) ||
	    fmt(w, "kvm", "kvm_exit", 103, vms_synth_fmt_kvm_exit, &err) ||
	    (lost && fmt(w, "sched", "sched_wakeup", 374, vms_synth_fmt_sched_wakeup, &err)))
		goto fail_w;
	if (!tsc && vms_tdw_add_cmdline(w, 2001, "CPU 0/KVM", &err))
		goto fail_w;
	if (moving) {
		if (entry_on(w, 0, 1000, &err) || vmexit_on(w, 0, 5000, 30, &err) ||
		    entry_on(w, 0, 7000, &err) || vmexit_on(w, 0, 10000, 1, &err) ||
		    entry_on(w, 1, 16000, &err) || vmexit_on(w, 1, 20000, 30, &err) ||
		    entry_on(w, 1, 21000, &err) || vmexit_on(w, 1, 25000, 1, &err) ||
		    entry_on(w, 0, 30000, &err) || vmexit_on(w, 0, 32000, 30, &err))
			goto fail_w;
	} else if (lost) {
		if (sw_on(w, 0, 1000, 0, 77, &err) || sw_on(w, 1, 2000, 0, 2001, &err) ||
		    entry_on(w, 1, 2500, &err) || wakeup_on(w, 0, 3000, 77, 2001, &err) ||
		    vmexit_on(w, 1, 4000, 1, &err) || sw_on(w, 1, 4500, 2001, 77, &err) ||
		    sw_on(w, 1, 6000, 77, 2001, &err) || entry_on(w, 1, 6500, &err) ||
		    sw_on(w, 0, 7000, 88, 0, &err) || vmexit_on(w, 1, 8000, 30, &err))
			goto fail_w;
	} else if (steal) {
		if (entry(w, 1000, &err) || vmexit(w, 2999000, 1, &err) || sw(w, 3000000, 2001, 77, &err) ||
		    sw(w, 5000000, 77, 2001, &err) || entry(w, 5001000, &err) ||
		    vmexit(w, 10000000, 30, &err) || entry(w, 10001000, &err))
			goto fail_w;
	} else if (kvm) {
		if (entry(w, 1000, &err) || vmexit(w, 5000, 30, &err) || entry(w, 7000, &err) ||
		    vmexit(w, 10000, 1, &err) || entry(w, 16000, &err) || vmexit(w, 20000, 30, &err) ||
		    entry(w, 21000, &err))
			goto fail_w;
	} else if (sw(w, 1000, 0, 77, &err) || sw(w, 5000, 77, 0, &err)) {
		goto fail_w;
	}
	if (vms_tdw_close(w, &err))
		goto fail;
	return 0;
fail_w:
	vms_tdw_discard(w);
fail:
	fprintf(stderr, "mk_trace: %s\n", err.msg);
	return 1;
}
