/* A hand-made three-layer recording (nested KVM), written with vmscope's own trace.dat writer:
 * L0 (the physical host), L1 (a guest of L0 that is the hypervisor of L2), L2 (L1's guest).
 * Every value tests/nested/test_nested.sh expects is derived by hand there from the events
 * below. Times are given in L0 nanoseconds t; each file records its own TSC:
 *
 *   L0  TRACEID 0x10, TSC2NSEC mult 1 shift 0 (a tick is a ns), GUEST "l1" (0x11): vCPU 0 is
 *       thread 3001. raw = t.
 *   L1  TRACEID 0x11, TSC2NSEC 1/0, TIME_SHIFT to 0x10: offset -1000000, scaling 1, frac 0
 *       (L1's TSC = L0's + 1000000), GUEST "l2" (0x12): vCPU 0 is thread 4001.
 *       raw = t + 1000000.
 *   L2  TRACEID 0x12, TSC2NSEC mult 1 shift 1 (its own ns: a tick is half a ns), TIME_SHIFT
 *       to 0x11: offset -500000, scaling 2, frac 0 (L2's TSC = 2 x L1's + 500000).
 *       raw = 2 (t + 1000000) + 500000 = 2t + 2500000.
 *
 * One CPU each. The events (t):
 *   L0 1000 switch 0 -> 3001          L0 1100 kvm_entry 3001
 *   L1 2000 switch 0 -> 4001          L1 2100 kvm_entry 4001
 *   L2 2500 switch 0 -> 200
 *   L0 3000 kvm_exit 3001 (48 EPT_VIOLATION)   L0 3400 kvm_entry 3001
 *   L0 4000 kvm_exit 3001 (1 EXTERNAL_INTERRUPT) L0 4200 kvm_entry 3001
 *   L1 4300 kvm_exit 4001 (1)
 *   L0 4500 kvm_exit 3001 (23 VMREAD)         L0 4700 kvm_entry 3001
 *   L1 5000 kvm_entry 4001
 *   L0 6000 kvm_exit 3001 (1)   L0 6100 switch 3001 -> 77 (R)   L0 7000 switch 77 -> 3001
 *   L0 7100 kvm_entry 3001
 *   L1 8000 kvm_exit 4001 (1)   L1 8100 switch 4001 -> 77 (R)   L1 9000 switch 77 -> 4001
 *   L1 9100 kvm_entry 4001
 *   L2 9500 switch 200 -> 0     L2 10500 switch 0 -> 200 (L2's last event)
 *   L1 11000 kvm_exit 4001 (30 IO_INSTRUCTION) (L1's last event)
 *   L0 12000 kvm_exit 3001 (1) (L0's last event)
 *
 *
 * DIR/l0n.dat is L0 again with the nested events a kernel since 6.8 records (kvm_entry's
 * guest_mode, written [g] for 1, [h] for 0; kvm_nested_vmexit, kvm_nested_vmexit_inject,
 * kvm_nested_intr_vmexit, kvm_nested_vmenter) and the exits around L1's VMLAUNCH/VMRESUME
 * (20 VMLAUNCH, 24 VMRESUME) that L1's kvm_entry implies:
 *   1000 switch 0 -> 3001   1100 kvm_entry [h]
 *   2150 kvm_exit (20)   2200 kvm_nested_vmenter   2250 kvm_entry [g]
 *   3000 kvm_exit (48) + kvm_nested_vmexit (48)   3400 kvm_entry [g]
 *   4000 kvm_exit (1) + kvm_nested_vmexit (1)   4100 kvm_nested_vmexit_inject (1)
 *   4200 kvm_entry [h]
 *   4500 kvm_exit (23)   4700 kvm_entry [h]
 *   5050 kvm_exit (24)   5100 kvm_nested_vmenter   5150 kvm_entry [g]
 *   6000 kvm_exit (1) + kvm_nested_vmexit (1)   6100 switch 3001 -> 77   7000 switch 77 -> 3001
 *   7100 kvm_entry [g]
 *   7900 kvm_exit (1) + kvm_nested_vmexit (1)   7950 kvm_nested_intr_vmexit   7980 kvm_entry [h]
 *   9150 kvm_exit (24)   9200 kvm_nested_vmenter   9250 kvm_entry [g]
 *   12000 kvm_exit (1)
 *
 *
 * DIR/l2w.dat is L2 again with a wake-up for `latency`: L2 5900 sched_wakeup of tid 300
 * (target CPU 0), 9500 switch 200 -> 300 (not to idle), 10500 switch 300 -> 200.
 *
 * DIR/l2u.dat is L2 unlinked: the same events, TRACEID 0x22 (L1's GUEST option names 0x12)
 * and no TIME_SHIFT, so nothing in the files says it is L1's guest; its own clock (TSC2NSEC
 * mult 1 shift 1) reads raw / 2 = t + 1250000 ns. The user says it: --map l2u@l1:0=4001
 * --offset l2u=-1250000.
 *
 * DIR/l0c/ is l0n as LTTng records it: a CTF kernel trace (vmscope's LTTng-style writer,
 * hostname l0c, clock in ns: raw = t) with lttng-modules' event and field names
 * (include/instrumentation/events/arch/x86/kvm/trace.h): kvm_x86_entry (vcpu_id only: no
 * guest_mode), kvm_x86_exit, kvm_x86_nested_vmrun (LTTng has no kvm_nested_vmenter: its
 * VMX entry to L2 is not instrumented, AMD's VMRUN is), kvm_x86_nested_vmexit (rip,
 * exit_code, ..., isa), kvm_x86_nested_vmexit_inject (exit_code, ..., isa),
 * kvm_x86_nested_intr_vmexit (rip), sched_switch; thread 3001 on CPU 0, l0n's times.
 *
 * DIR/l2c/ is l2w as LTTng records it in a guest with containers: a CTF kernel trace
 * (hostname l2c, its clock in ns: raw = t; no TIME_SHIFT: --map l2c@l1:0=4001 --offset
 * l2c=0) on CPU 0:
 *   2500 switch 0 -> 200, then at 2500 the statedump: task-200 (pid 200) in PID namespace
 *        4026532100 (level 1, in the root 4026531836), task-300 (pid 300) in 4026532200
 *        (level 1): lttng_statedump_process_state and one _process_pid_ns per level
 *   5900 sched_wakeup of 300   9500 switch 200 (S) -> 300   10500 switch 300 (S) -> 200
 *
 * DIR/l0s.dat, l1s.dat, l2s.dat are l0, l1, l2 with each preemption by a crowd: L0's
 * [6100, 7000) of thread 3001 and L1's [8100, 9000) of thread 4001 are taken by 300 threads
 * in turn, tids 1000 .. 1299 (the same numbers on both machines), 3 ns each.
 *
 *   mk_nested DIR   writes DIR/l0.dat, DIR/l1.dat, DIR/l2.dat, DIR/l0n.dat, DIR/l2w.dat,
 *                   DIR/l2u.dat, DIR/l0c/, DIR/l2c/, DIR/l0s.dat, DIR/l1s.dat, DIR/l2s.dat */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "mk_events.h"
#include "output/ctf_writer.h"

static int entry(struct vms_tdw *w, uint64_t ts, int tid, struct vms_error *err)
{
	return mk_entry(w, 0, ts, tid, err);
}

static int vmexit(struct vms_tdw *w, uint64_t ts, int tid, uint32_t reason, struct vms_error *err)
{
	return mk_exit(w, 0, ts, tid, reason, err);
}

static int sw(struct vms_tdw *w, uint64_t ts, int prev, int next, struct vms_error *err)
{
	return mk_switch(w, 0, ts, prev, next, err);
}

/* The nested events' formats as arch/x86/kvm/trace.h (6.8+) lays them out; ids 116-120 */
#define COMMON "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
static const char fmt_entry_gm[] = COMMON
	"\tfield:unsigned int vcpu_id;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long rip;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:u32 inj_info;\toffset:24;\tsize:4;\tsigned:0;\n"
	"\tfield:u32 inj_info_err;\toffset:28;\tsize:4;\tsigned:0;\n"
	"\tfield:bool guest_mode;\toffset:32;\tsize:1;\tsigned:0;\n"
	"\tfield:bool req_imm_exit;\toffset:33;\tsize:1;\tsigned:0;\n\n"
	"print fmt: \"vcpu %u, rip 0x%lx%s\", REC->vcpu_id, REC->rip, REC->guest_mode ? \" [guest]\" : \"\"\n";
static const char fmt_inject[] = COMMON
	"\tfield:__u32 exit_code;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:__u64 exit_info1;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:__u64 exit_info2;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\tfield:__u32 exit_int_info;\toffset:32;\tsize:4;\tsigned:0;\n"
	"\tfield:__u32 exit_int_info_err;\toffset:36;\tsize:4;\tsigned:0;\n"
	"\tfield:__u32 isa;\toffset:40;\tsize:4;\tsigned:0;\n\n"
	"print fmt: \"reason: %u\", REC->exit_code\n";
static const char fmt_rip[] = COMMON
	"\tfield:__u64 rip;\toffset:8;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"rip: 0x%016llx\", REC->rip\n";
enum { ID_ENTRY_GM = 116, ID_NVMEXIT, ID_INJECT, ID_INTR, ID_VMENTER };

/* One record of the nested formats: the common header, then u32 a at 8, u32 isa at 40 (for
 * the inject), guest_mode at 32 (for the entry) */
static int rec(struct vms_tdw *w, uint64_t ts, unsigned type, uint32_t a, int gm,
	       struct vms_error *err)
{
	uint8_t b[48];
	memset(b, 0, sizeof b);
	struct vms_ev_common c = { .type = (uint16_t)type, .pid = 3001 };
	memcpy(b, &c, sizeof c);
	size_t len = 16;
	if (type == ID_ENTRY_GM) {
		b[32] = (uint8_t)gm;
		len = 40;
	} else if (type == ID_INJECT) {
		memcpy(b + 8, &a, 4);
		uint32_t isa = 1;
		memcpy(b + 40, &isa, 4);
		len = 44;
	}
	return vms_tdw_event(w, 0, ts, b, len, err);
}

static struct vms_tdw *open_one(const char *dir, const char *name, uint64_t id,
				struct vms_error *err)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s.dat", dir, name);
	struct vms_tdw_config c = {
		.path = path, .compression = VMS_TDW_NONE, .nr_cpus = 1,
		.header_page = vms_synth_header_page, .header_event = vms_synth_header_event,
		.buffer_clock = "tsc2nsec",
		.trace_clock = "local global counter uptime perf mono mono_raw boot [x86-tsc]\n",
		.uname = "Linux test 6.1.0 x86_64", .version = "test", .trace_id = id,
	};
	struct vms_tdw *w;
	if (vms_tdw_open(&w, &c, err))
		return NULL;
	if (mk_fmt(w, "sched", "sched_switch", 372, vms_synth_fmt_sched_switch, err) ||
	    mk_fmt(w, "kvm", "kvm_entry", 115, vms_synth_fmt_kvm_entry, err) ||
	    mk_fmt(w, "kvm", "kvm_exit", 103, vms_synth_fmt_kvm_exit, err)) {
		vms_tdw_discard(w);
		return NULL;
	}
	if (strcmp(name, "l0n") == 0 &&
	    (mk_fmt(w, "kvm", "kvm_entry", ID_ENTRY_GM, fmt_entry_gm, err) ||
	     mk_fmt(w, "kvm", "kvm_nested_vmexit", ID_NVMEXIT, vms_synth_fmt_kvm_exit, err) ||
	     mk_fmt(w, "kvm", "kvm_nested_vmexit_inject", ID_INJECT, fmt_inject, err) ||
	     mk_fmt(w, "kvm", "kvm_nested_intr_vmexit", ID_INTR, fmt_rip, err) ||
	     mk_fmt(w, "kvm", "kvm_nested_vmenter", ID_VMENTER, fmt_rip, err))) {
		vms_tdw_discard(w);
		return NULL;
	}
	return w;
}

/* an L0 exit of L2's code: kvm_exit and kvm_nested_vmexit (its record is kvm_exit's) */
static int l2exit(struct vms_tdw *w, uint64_t ts, uint32_t reason, struct vms_error *err)
{
	struct vms_ev_kvm_exit e;
	memset(&e, 0, sizeof e);
	e.c.type = ID_NVMEXIT;
	e.c.pid = 3001;
	e.exit_reason = reason;
	e.isa = 1;
	return vmexit(w, ts, 3001, reason, err) || vms_tdw_event(w, 0, ts, &e, sizeof e, err);
}

/* DIR/l0n.dat: the events listed above */
static int write_l0n(const char *dir, struct vms_error *err)
{
	struct vms_tdw *w = open_one(dir, "l0n", 0x10, err);
	if (!w)
		return 1;
	int32_t t1 = 3001;
	enum { H = 0, G = 1 };
	if (vms_tdw_add_tsc2nsec(w, 1, 0, 0, err) ||
	    vms_tdw_add_guest(w, "l1", 0x11, 1, &t1, err) ||
	    vms_tdw_add_cmdline(w, 3001, "CPU 0/KVM", err) ||
	    sw(w, 1000, 0, 3001, err) || rec(w, 1100, ID_ENTRY_GM, 0, H, err) ||
	    vmexit(w, 2150, 3001, 20, err) || rec(w, 2200, ID_VMENTER, 0, 0, err) ||
	    rec(w, 2250, ID_ENTRY_GM, 0, G, err) ||
	    l2exit(w, 3000, 48, err) || rec(w, 3400, ID_ENTRY_GM, 0, G, err) ||
	    l2exit(w, 4000, 1, err) || rec(w, 4100, ID_INJECT, 1, 0, err) ||
	    rec(w, 4200, ID_ENTRY_GM, 0, H, err) ||
	    vmexit(w, 4500, 3001, 23, err) || rec(w, 4700, ID_ENTRY_GM, 0, H, err) ||
	    vmexit(w, 5050, 3001, 24, err) || rec(w, 5100, ID_VMENTER, 0, 0, err) ||
	    rec(w, 5150, ID_ENTRY_GM, 0, G, err) ||
	    l2exit(w, 6000, 1, err) || sw(w, 6100, 3001, 77, err) || sw(w, 7000, 77, 3001, err) ||
	    rec(w, 7100, ID_ENTRY_GM, 0, G, err) ||
	    l2exit(w, 7900, 1, err) || rec(w, 7950, ID_INTR, 0, 0, err) ||
	    rec(w, 7980, ID_ENTRY_GM, 0, H, err) ||
	    vmexit(w, 9150, 3001, 24, err) || rec(w, 9200, ID_VMENTER, 0, 0, err) ||
	    rec(w, 9250, ID_ENTRY_GM, 0, G, err) ||
	    vmexit(w, 12000, 3001, 1, err)) {
		vms_tdw_discard(w);
		return 1;
	}
	return vms_tdw_close(w, err) ? 1 : 0;
}

static int time_shift(struct vms_tdw *w, uint64_t peer, int64_t offset, uint64_t scaling,
		      struct vms_error *err)
{
	uint64_t time = 0, frac = 0;
	struct vms_tdw_ts_cpu c = { 1, &time, &offset, &scaling, &frac };
	return vms_tdw_add_time_shift(w, peer, 0, 1, &c, err);
}

#define L1(t) ((t) + 1000000u)
#define L2(t) (2u * (t) + 2500000u)

/* DIR/l2w.dat: L2 with the wake-up listed above */
static int write_l2w(const char *dir, struct vms_error *err)
{
	struct vms_tdw *w = open_one(dir, "l2w", 0x12, err);
	if (!w)
		return 1;
	struct vms_ev_sched_wakeup e;
	memset(&e, 0, sizeof e);
	e.c.type = 374;
	e.c.pid = 200;
	snprintf(e.comm, sizeof e.comm, "task-300");
	e.pid = 300;
	e.prio = 120;
	e.target_cpu = 0;
	if (mk_fmt(w, "sched", "sched_wakeup", 374, vms_synth_fmt_sched_wakeup, err) ||
	    vms_tdw_add_tsc2nsec(w, 1, 1, 0, err) || time_shift(w, 0x11, -500000, 2, err) ||
	    sw(w, L2(2500), 0, 200, err) || vms_tdw_event(w, 0, L2(5900), &e, sizeof e, err) ||
	    sw(w, L2(9500), 200, 300, err) || sw(w, L2(10500), 300, 200, err)) {
		vms_tdw_discard(w);
		return 1;
	}
	return vms_tdw_close(w, err) ? 1 : 0;
}

/* DIR/l2u.dat: L2 with no link to L1 (above) */
static int write_l2u(const char *dir, struct vms_error *err)
{
	struct vms_tdw *w = open_one(dir, "l2u", 0x22, err);
	if (!w)
		return 1;
	if (vms_tdw_add_tsc2nsec(w, 1, 1, 0, err) || sw(w, L2(2500), 0, 200, err) ||
	    sw(w, L2(9500), 200, 0, err) || sw(w, L2(10500), 0, 200, err)) {
		vms_tdw_discard(w);
		return 1;
	}
	return vms_tdw_close(w, err) ? 1 : 0;
}

/* LTTng's sched_switch, in both CTF traces */
static const struct vms_ctfw_field ctf_switch[] = {
	{ "prev_comm", VMS_CTFW_COMM }, { "prev_tid", VMS_CTFW_S32 }, { "prev_prio", VMS_CTFW_S32 },
	{ "prev_state", VMS_CTFW_S64 }, { "next_comm", VMS_CTFW_COMM }, { "next_tid", VMS_CTFW_S32 },
	{ "next_prio", VMS_CTFW_S32 } };

enum { C_SWITCH, C_ENTRY, C_EXIT, C_VMRUN, C_NVMEXIT, C_INJECT, C_INTR, C_N };

/* one event of DIR/l0c on CPU 0: the class's integers in field order (sched_switch: prev,
 * next; kvm_x86_exit / kvm_x86_nested_vmexit / _inject: the exit reason) */
static int cev(struct vms_ctfw *w, const uint32_t *id, uint64_t ts, int c, int64_t a, int64_t b,
	       struct vms_error *err)
{
	uint64_t v[8] = { 0 };
	const char *comm[2] = { "", "" };
	int32_t tid = 3001;
	switch (c) {
	case C_SWITCH: /* prev_comm, prev_tid, prev_prio, prev_state, next_comm, next_tid, prio */
		v[0] = (uint64_t)a, v[1] = 120, v[3] = (uint64_t)b, v[4] = 120; /* state 0: R */
		comm[0] = a == 3001 ? "CPU 0/KVM" : a ? "task-77" : "swapper/0";
		comm[1] = b == 3001 ? "CPU 0/KVM" : b ? "task-77" : "swapper/0";
		tid = (int32_t)a;
		break;
	case C_EXIT: /* exit_reason, guest_rip, isa, info1, info2 */
		v[0] = (uint64_t)a, v[2] = 1;
		break;
	case C_NVMEXIT: /* rip, exit_code, exit_info1, exit_info2, exit_int_info, _err, isa */
		v[1] = (uint64_t)a, v[6] = 1;
		break;
	case C_INJECT: /* exit_code, exit_info1, exit_info2, exit_int_info, _err, isa */
		v[0] = (uint64_t)a, v[5] = 1;
		break;
	}
	return vms_ctfw_event(w, 0, ts, id[c], tid, v, comm, err);
}

/* DIR/l0c/: the CTF L0 (above) */
static int write_l0c(const char *dir, struct vms_error *err)
{
#define FL(n, t) { n, VMS_CTFW_##t }
	static const struct vms_ctfw_field en[] = { FL("vcpu_id", U32) };
	static const struct vms_ctfw_field ex[] = { FL("exit_reason", U32), FL("guest_rip", U64),
		FL("isa", U32), FL("info1", U64), FL("info2", U64) };
	static const struct vms_ctfw_field run[] = { FL("rip", U64), FL("vmcb", U64),
		FL("nested_rip", U64), FL("int_ctl", U32), FL("event_inj", U32), FL("npt", U8) };
	static const struct vms_ctfw_field nx[] = { FL("rip", U64), FL("exit_code", U32),
		FL("exit_info1", U64), FL("exit_info2", U64), FL("exit_int_info", U32),
		FL("exit_int_info_err", U32), FL("isa", U32) };
	static const struct vms_ctfw_field inj[] = { FL("exit_code", U32), FL("exit_info1", U64),
		FL("exit_info2", U64), FL("exit_int_info", U32), FL("exit_int_info_err", U32),
		FL("isa", U32) };
	static const struct vms_ctfw_field intr[] = { FL("rip", U64) };
#undef FL
	static const struct {
		const char *name;
		const struct vms_ctfw_field *f;
		uint32_t n;
	} cl[C_N] = {
		{ "sched_switch", ctf_switch, 7 }, { "kvm_x86_entry", en, 1 }, { "kvm_x86_exit", ex, 5 },
		{ "kvm_x86_nested_vmrun", run, 6 }, { "kvm_x86_nested_vmexit", nx, 7 },
		{ "kvm_x86_nested_vmexit_inject", inj, 6 }, { "kvm_x86_nested_intr_vmexit", intr, 1 },
	};
	char path[4096];
	snprintf(path, sizeof path, "%s/l0c", dir);
	struct vms_ctfw_config c = { .dir = path, .hostname = "l0c", .kernel_release = "6.1.0",
				     .nr_cpus = 1, .uuid_seed = 0x10 };
	struct vms_ctfw *w;
	uint32_t id[C_N];
	if (vms_ctfw_open(&w, &c, err))
		return 1;
	for (int i = 0; i < C_N; i++)
		if (vms_ctfw_add_event(w, cl[i].name, cl[i].f, cl[i].n, &id[i], err)) {
			vms_ctfw_discard(w);
			return 1;
		}
	/* l0n's events, an L2 exit being kvm_x86_exit then kvm_x86_nested_vmexit */
	static const struct { uint64_t t; int c; int64_t a, b; } evs[] = {
		{ 1000, C_SWITCH, 0, 3001 }, { 1100, C_ENTRY, 0, 0 },
		{ 2150, C_EXIT, 20, 0 }, { 2200, C_VMRUN, 0, 0 }, { 2250, C_ENTRY, 0, 0 },
		{ 3000, C_EXIT, 48, 0 }, { 3000, C_NVMEXIT, 48, 0 }, { 3400, C_ENTRY, 0, 0 },
		{ 4000, C_EXIT, 1, 0 }, { 4000, C_NVMEXIT, 1, 0 }, { 4100, C_INJECT, 1, 0 },
		{ 4200, C_ENTRY, 0, 0 },
		{ 4500, C_EXIT, 23, 0 }, { 4700, C_ENTRY, 0, 0 },
		{ 5050, C_EXIT, 24, 0 }, { 5100, C_VMRUN, 0, 0 }, { 5150, C_ENTRY, 0, 0 },
		{ 6000, C_EXIT, 1, 0 }, { 6000, C_NVMEXIT, 1, 0 }, { 6100, C_SWITCH, 3001, 77 },
		{ 7000, C_SWITCH, 77, 3001 }, { 7100, C_ENTRY, 0, 0 },
		{ 7900, C_EXIT, 1, 0 }, { 7900, C_NVMEXIT, 1, 0 }, { 7950, C_INTR, 0, 0 },
		{ 7980, C_ENTRY, 0, 0 },
		{ 9150, C_EXIT, 24, 0 }, { 9200, C_VMRUN, 0, 0 }, { 9250, C_ENTRY, 0, 0 },
		{ 12000, C_EXIT, 1, 0 },
	};
	for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
		if (cev(w, id, evs[i].t, evs[i].c, evs[i].a, evs[i].b, err)) {
			vms_ctfw_discard(w);
			return 1;
		}
	return vms_ctfw_close(w, err) ? 1 : 0;
}

/* DIR/l2c/: L2 with two containers (above) */
static int write_l2c(const char *dir, struct vms_error *err)
{
#define FL(n, t) { n, VMS_CTFW_##t }
	static const struct vms_ctfw_field wk[] = { FL("comm", COMM), FL("tid", S32),
		FL("prio", S32), FL("target_cpu", S32) };
	static const struct vms_ctfw_field st[] = { FL("tid", S32), FL("vtid", S32),
		FL("pid", S32), FL("vpid", S32), FL("ppid", S32), FL("vppid", S32),
		FL("name", COMM), FL("type", S32), FL("mode", S32), FL("submode", S32),
		FL("status", S32), FL("cpu", S32) };
	static const struct vms_ctfw_field ns[] = { FL("tid", S32), FL("vtid", S32),
		FL("vpid", S32), FL("vppid", S32), FL("ns_level", S32), FL("ns_inum", U32) };
#undef FL
	char path[4096];
	snprintf(path, sizeof path, "%s/l2c", dir);
	struct vms_ctfw_config c = { .dir = path, .hostname = "l2c", .kernel_release = "6.1.0",
				     .nr_cpus = 1, .uuid_seed = 0x12 };
	struct vms_ctfw *w;
	uint32_t isw, iwk, ist, ins;
	if (vms_ctfw_open(&w, &c, err))
		return 1;
	const char *c200[] = { "task-200", "task-300" }, *c300[] = { "task-300", "task-200" };
	const char *c0[] = { "swapper/0", "task-200" };
	uint64_t s0[] = { 0, 120, 0, 200, 120 }, s1[] = { 200, 120, 1, 300, 120 },
		 s2[] = { 300, 120, 1, 200, 120 }, wake[] = { 300, 120, 0 };
	int rc = vms_ctfw_add_event(w, "sched_switch", ctf_switch, 7, &isw, err) ||
		 vms_ctfw_add_event(w, "sched_wakeup", wk, 4, &iwk, err) ||
		 vms_ctfw_add_event(w, "lttng_statedump_process_state", st, 12, &ist, err) ||
		 vms_ctfw_add_event(w, "lttng_statedump_process_pid_ns", ns, 6, &ins, err) ||
		 vms_ctfw_event(w, 0, 2500, isw, 0, s0, c0, err);
	for (int k = 0; k < 2 && !rc; k++) {
		uint64_t tid = k ? 300 : 200, inum = k ? 4026532200u : 4026532100u;
		/* tid, vtid, pid, vpid, ppid, vppid, type 1, mode 5, submode 0, status 5, cpu 0 */
		uint64_t sv[] = { tid, 1, tid, 1, 1, 0, 1, 5, 0, 5, 0 };
		uint64_t root[] = { tid, tid, tid, 1, 0, 4026531836u }, own[] = { tid, 1, 1, 0, 1, inum };
		const char *nm[] = { k ? "task-300" : "task-200" };
		rc = vms_ctfw_event(w, 0, 2500, ist, 200, sv, nm, err) ||
		     vms_ctfw_event(w, 0, 2500, ins, 200, root, NULL, err) ||
		     vms_ctfw_event(w, 0, 2500, ins, 200, own, NULL, err);
	}
	rc = rc || vms_ctfw_event(w, 0, 5900, iwk, 200, wake, c300, err) ||
	     vms_ctfw_event(w, 0, 9500, isw, 200, s1, c200, err) ||
	     vms_ctfw_event(w, 0, 10500, isw, 300, s2, c300, err);
	if (rc) {
		vms_ctfw_discard(w);
		return 1;
	}
	return vms_ctfw_close(w, err) ? 1 : 0;
}

/* A preemption of thread vt for [t, t + 900) (+ off, the file's clock): by task-77, or with
 * `crowd` by 300 threads in turn, tids 1000 .. 1299, 3 ns each */
static int preempt(struct vms_tdw *w, uint64_t off, uint64_t t, int vt, bool crowd,
		   struct vms_error *err)
{
	if (!crowd)
		return sw(w, off + t, vt, 77, err) || sw(w, off + t + 900, 77, vt, err);
	int prev = vt;
	for (int k = 0; k < 300; prev = 1000 + k, k++)
		if (sw(w, off + t + 3 * (uint64_t)k, prev, 1000 + k, err))
			return 1;
	return sw(w, off + t + 900, prev, vt, err);
}

/* DIR/l0.dat, l1.dat, l2.dat (the events above); with `crowd` DIR/l0s.dat, l1s.dat, l2s.dat,
 * the two preemptions by 300 threads each (preempt) */
static int write_three(const char *dir, bool crowd, struct vms_error *err)
{
	struct vms_tdw *w0 = open_one(dir, crowd ? "l0s" : "l0", 0x10, err), *w1 = NULL, *w2 = NULL;
	if (w0)
		w1 = open_one(dir, crowd ? "l1s" : "l1", 0x11, err);
	if (w1)
		w2 = open_one(dir, crowd ? "l2s" : "l2", 0x12, err);
	if (!w2)
		goto fail;
	int32_t t1 = 3001, t2 = 4001;
	if (vms_tdw_add_tsc2nsec(w0, 1, 0, 0, err) ||
	    vms_tdw_add_guest(w0, "l1", 0x11, 1, &t1, err) ||
	    vms_tdw_add_tsc2nsec(w1, 1, 0, 0, err) || time_shift(w1, 0x10, -1000000, 1, err) ||
	    vms_tdw_add_guest(w1, "l2", 0x12, 1, &t2, err) ||
	    vms_tdw_add_tsc2nsec(w2, 1, 1, 0, err) || time_shift(w2, 0x11, -500000, 2, err) ||
	    vms_tdw_add_cmdline(w0, 3001, "CPU 0/KVM", err) ||
	    vms_tdw_add_cmdline(w1, 4001, "CPU 0/KVM", err))
		goto fail;
	/* L0 */
	if (sw(w0, 1000, 0, 3001, err) || entry(w0, 1100, 3001, err) ||
	    vmexit(w0, 3000, 3001, 48, err) || entry(w0, 3400, 3001, err) ||
	    vmexit(w0, 4000, 3001, 1, err) || entry(w0, 4200, 3001, err) ||
	    vmexit(w0, 4500, 3001, 23, err) || entry(w0, 4700, 3001, err) ||
	    vmexit(w0, 6000, 3001, 1, err) || preempt(w0, 0, 6100, 3001, crowd, err) ||
	    entry(w0, 7100, 3001, err) || vmexit(w0, 12000, 3001, 1, err))
		goto fail;
	/* L1 */
	if (sw(w1, L1(2000), 0, 4001, err) || entry(w1, L1(2100), 4001, err) ||
	    vmexit(w1, L1(4300), 4001, 1, err) || entry(w1, L1(5000), 4001, err) ||
	    vmexit(w1, L1(8000), 4001, 1, err) || preempt(w1, L1(0), 8100, 4001, crowd, err) ||
	    entry(w1, L1(9100), 4001, err) || vmexit(w1, L1(11000), 4001, 30, err))
		goto fail;
	/* L2 */
	if (sw(w2, L2(2500), 0, 200, err) || sw(w2, L2(9500), 200, 0, err) ||
	    sw(w2, L2(10500), 0, 200, err))
		goto fail;
	struct vms_tdw *ws[3] = { w0, w1, w2 };
	int rc = 0;
	for (int i = 0; i < 3; i++)
		if (vms_tdw_close(ws[i], err))
			rc = 1;
	return rc;
fail:
	if (w0)
		vms_tdw_discard(w0);
	if (w1)
		vms_tdw_discard(w1);
	if (w2)
		vms_tdw_discard(w2);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mk_nested DIR\n");
		return 2;
	}
	struct vms_error err = { 0 };
	if (write_three(argv[1], false, &err) == 0 && write_three(argv[1], true, &err) == 0 &&
	    write_l0n(argv[1], &err) == 0 && write_l2w(argv[1], &err) == 0 &&
	    write_l2u(argv[1], &err) == 0 && write_l0c(argv[1], &err) == 0 &&
	    write_l2c(argv[1], &err) == 0)
		return 0;
	fprintf(stderr, "mk_nested: %s\n", err.msg);
	return 1;
}
