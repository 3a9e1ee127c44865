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
 *   mk_nested DIR   writes DIR/l0.dat, DIR/l1.dat, DIR/l2.dat */
#include <stdio.h>
#include <string.h>

#include "mk_events.h"

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
	return w;
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

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mk_nested DIR\n");
		return 2;
	}
	struct vms_error err = { 0 };
	struct vms_tdw *w0 = open_one(argv[1], "l0", 0x10, &err), *w1 = NULL, *w2 = NULL;
	if (w0)
		w1 = open_one(argv[1], "l1", 0x11, &err);
	if (w1)
		w2 = open_one(argv[1], "l2", 0x12, &err);
	if (!w2)
		goto fail;
	int32_t t1 = 3001, t2 = 4001;
	if (vms_tdw_add_tsc2nsec(w0, 1, 0, 0, &err) ||
	    vms_tdw_add_guest(w0, "l1", 0x11, 1, &t1, &err) ||
	    vms_tdw_add_tsc2nsec(w1, 1, 0, 0, &err) || time_shift(w1, 0x10, -1000000, 1, &err) ||
	    vms_tdw_add_guest(w1, "l2", 0x12, 1, &t2, &err) ||
	    vms_tdw_add_tsc2nsec(w2, 1, 1, 0, &err) || time_shift(w2, 0x11, -500000, 2, &err) ||
	    vms_tdw_add_cmdline(w0, 3001, "CPU 0/KVM", &err) ||
	    vms_tdw_add_cmdline(w1, 4001, "CPU 0/KVM", &err))
		goto fail;
	/* L0 */
	if (sw(w0, 1000, 0, 3001, &err) || entry(w0, 1100, 3001, &err) ||
	    vmexit(w0, 3000, 3001, 48, &err) || entry(w0, 3400, 3001, &err) ||
	    vmexit(w0, 4000, 3001, 1, &err) || entry(w0, 4200, 3001, &err) ||
	    vmexit(w0, 4500, 3001, 23, &err) || entry(w0, 4700, 3001, &err) ||
	    vmexit(w0, 6000, 3001, 1, &err) || sw(w0, 6100, 3001, 77, &err) ||
	    sw(w0, 7000, 77, 3001, &err) || entry(w0, 7100, 3001, &err) ||
	    vmexit(w0, 12000, 3001, 1, &err))
		goto fail;
	/* L1 */
	if (sw(w1, L1(2000), 0, 4001, &err) || entry(w1, L1(2100), 4001, &err) ||
	    vmexit(w1, L1(4300), 4001, 1, &err) || entry(w1, L1(5000), 4001, &err) ||
	    vmexit(w1, L1(8000), 4001, 1, &err) || sw(w1, L1(8100), 4001, 77, &err) ||
	    sw(w1, L1(9000), 77, 4001, &err) || entry(w1, L1(9100), 4001, &err) ||
	    vmexit(w1, L1(11000), 4001, 30, &err))
		goto fail;
	/* L2 */
	if (sw(w2, L2(2500), 0, 200, &err) || sw(w2, L2(9500), 200, 0, &err) ||
	    sw(w2, L2(10500), 0, 200, &err))
		goto fail;
	struct vms_tdw *ws[3] = { w0, w1, w2 };
	w0 = w1 = w2 = NULL;
	int rc = 0;
	for (int i = 0; i < 3; i++)
		if (vms_tdw_close(ws[i], &err))
			rc = 1;
	if (!rc)
		return 0;
	fprintf(stderr, "mk_nested: %s\n", err.msg);
	return 1;
fail:
	fprintf(stderr, "mk_nested: %s\n", err.msg);
	if (w0)
		vms_tdw_discard(w0);
	if (w1)
		vms_tdw_discard(w1);
	if (w2)
		vms_tdw_discard(w2);
	return 1;
}
