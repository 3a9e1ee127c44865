/* The fused physical-CPU view (lib/analysis/pcpu_view.c) over events written by hand, fed
 * to the analysis stage: the vCPU state machine follows the host CPUs' occupants and
 * publishes them (cpu_occupant, vmscope/observe.h), the view makes the intervals. Every
 * expected interval is worked out by hand in the comment above its test.
 *
 * Model: machine 0 "host" is a host, machine 1 "g" a guest with 2 vCPUs mapped by the user
 * (vCPU 0 = host thread 10, vCPU 1 = host thread 11); host thread 50 is named "bash", guest
 * thread 7 "worker". */
#include "an_test.h"

#include "vmscope/pcpu_view.h"
#include "vmscope/session.h"
#include "vmscope/sync.h"

#define PV_MAX 64

struct pv_rec {
	struct vms_pcpu_interval iv[PV_MAX];
	char comm[PV_MAX][24];
	uint32_t n;
};

static void rec_pcpu(void *ctx, const struct vms_pcpu_interval *iv)
{
	struct pv_rec *r = ctx;
	assert_true(r->n < PV_MAX);
	r->iv[r->n] = *iv;
	snprintf(r->comm[r->n], 24, "%s", iv->comm);
	r->iv[r->n].comm = r->comm[r->n];
	r->n++;
}

struct fixture {
	struct vms_trace_meta hm, gm;
	struct vms_model *m;
	struct vms_pcpu_view *pv;
	struct vms_observer o;
	struct vms_analysis *an;
	struct pv_rec r;
};

static void setup_fx(struct fixture *fx)
{
	memset(fx, 0, sizeof *fx);
	struct vms_error err = {0};
	fx->hm.nr_cpus = 2;
	fx->gm.nr_cpus = 2;
	fx->m = vms_model_new();
	assert_int_equal(vms_model_add_source(fx->m, 0, "host.dat", &fx->hm, NULL, &err), 0);
	assert_int_equal(vms_model_add_source(fx->m, 1, "g.dat", &fx->gm, NULL, &err), 0);
	assert_int_equal(vms_model_user_map(fx->m, "g", 0, 10, &err), 0);
	assert_int_equal(vms_model_user_map(fx->m, "g", 1, 11, &err), 0);
	struct vms_event e = mk(0, 0, -1, VMS_K_THREAD_NAME, 50, 50, 0);
	e.s[0] = "bash";
	vms_model_observe(fx->m, &e);
	e = mk(1, 0, -1, VMS_K_THREAD_NAME, 7, 7, 0);
	e.s[0] = "worker";
	vms_model_observe(fx->m, &e);
	e = mk(0, 0, 10, VMS_K_KVM_ENTRY, 0, 0, 0);
	vms_model_observe(fx->m, &e);
	assert_int_equal(vms_model_finish(fx->m, &err), 0);
	assert_true(vms_model_machine_c(fx->m, 0)->role & VMS_ROLE_HOST);
	assert_int_equal(vms_model_machine_c(fx->m, 1)->nr_vcpus, 2);
	fx->pv = vms_pcpu_view_new(fx->m, rec_pcpu, &fx->r);
	assert_non_null(fx->pv);
	fx->o = vms_pcpu_view_observer(fx->pv);
	assert_ptr_equal(fx->o.ctx, fx->pv);
	fx->an = vms_analysis_new(fx->m, NULL);
	assert_non_null(fx->an);
	assert_int_equal(vms_analysis_observe(fx->an, &fx->o), 0);
}

static void free_fx(struct fixture *fx)
{
	vms_analysis_free(fx->an);
	vms_pcpu_view_free(fx->pv);
	vms_model_free(fx->m);
}

static void raw(struct fixture *fx, uint64_t t, uint32_t machine, uint32_t cpu, int32_t tid,
		uint16_t flags)
{
	struct vms_event e = mk(machine, cpu, tid, VMS_K_OTHER, 0, 0, 0);
	e.flags = flags;
	vms_analysis_event(fx->an, &e, t);
}

/* host sched_switch prev -> tid ("comm") on CPU cpu, prev runnable */
static void run(struct fixture *fx, uint64_t t, uint32_t cpu, int32_t prev, int32_t tid,
		const char *comm)
{
	struct vms_event e = sw(0, cpu, prev, 0, tid);
	e.s[1] = comm;
	vms_analysis_event(fx->an, &e, t);
}

/* kvm_entry (guest_mode) or kvm_exit (reason 0: not a HLT) of vCPU vcpu's thread */
static void mode(struct fixture *fx, uint64_t t, uint32_t vcpu, uint32_t cpu, bool guest_mode)
{
	struct vms_event e = mk(0, cpu, 10 + (int32_t)vcpu,
				guest_mode ? VMS_K_KVM_ENTRY : VMS_K_KVM_EXIT, 0, 1, 0);
	vms_analysis_event(fx->an, &e, t);
}

/* guest sched_switch prev -> next ("next_comm") on guest CPU vcpu */
static void gswitch(struct fixture *fx, uint64_t t, uint32_t vcpu, int32_t prev, int32_t next,
		    const char *next_comm)
{
	struct vms_event e = sw(1, vcpu, prev, 0, next);
	e.s[1] = next_comm;
	vms_analysis_event(fx->an, &e, t);
}

static int by_cpu_start(const void *a, const void *b)
{
	const struct vms_pcpu_interval *x = a, *y = b;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static void check(const struct vms_pcpu_interval *iv, uint32_t cpu, uint64_t s, uint64_t e,
		  int32_t guest, int32_t vcpu, int32_t tid, const char *comm)
{
	print_message("# cpu %u [%llu,%llu) guest %d vcpu %d tid %d '%s'\n", iv->cpu,
		      (unsigned long long)iv->start, (unsigned long long)iv->end, iv->guest,
		      iv->vcpu, iv->tid, iv->comm);
	assert_int_equal(iv->host, 0);
	assert_int_equal(iv->cpu, cpu);
	assert_int_equal(iv->start, s);
	assert_int_equal(iv->end, e);
	assert_int_equal(iv->guest, guest);
	assert_int_equal(iv->vcpu, vcpu);
	assert_int_equal(iv->tid, tid);
	assert_string_equal(iv->comm, comm);
}

/* CPU 0:
 *   100 an event of host thread 50, the first on CPU 0: bash runs from 100
 *   110 sched_switch 50 -> 10 ("CPU 0/KVM")           -> [100,110) host 50 bash
 *   120 kvm_entry of vCPU 0                           -> [110,120) host 10 CPU 0/KVM
 *   130 the guest's first event on vCPU 0, by thread 7 -> [120,130) g/0, thread unknown (-1)
 *   140 guest sched_switch 7 -> 0 (idle)              -> [130,140) g/0 7 worker
 *   150 kvm_exit and, at the same time, kvm_entry: the host interval is empty, so the idle
 *       one goes on
 *   160 guest sched_switch 0 -> 7                     -> [140,160) g/0 0 idle (one interval)
 *   finish 180                                        -> [160,180) g/0 7 worker
 * CPU 1:
 *   105 an event of tid 0, the first on CPU 1: the host's idle ("idle", no name known)
 *   108 another one                  (the last event before a gap)
 *   170 an event of thread 60 with events lost before it: the idle interval ends at 108,
 *       nothing is known of [108,170), thread 60 (no name) runs from 170
 *                                                     -> [105,108) host 0 idle
 *                                                     -> [108,170) unknown (-1, -1, -1, "")
 *   finish 180                                        -> [170,180) host 60 "" */
static void test_by_hand(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx);
	raw(&fx, 100, 0, 0, 50, 0);
	raw(&fx, 105, 0, 1, 0, 0);
	raw(&fx, 108, 0, 1, 0, 0);
	run(&fx, 110, 0, 50, 10, "CPU 0/KVM");
	mode(&fx, 120, 0, 0, true);
	raw(&fx, 130, 1, 0, 7, 0);
	gswitch(&fx, 140, 0, 7, 0, "swapper/0");
	mode(&fx, 150, 0, 0, false);
	mode(&fx, 150, 0, 0, true);
	gswitch(&fx, 160, 0, 0, 7, "worker");
	raw(&fx, 170, 0, 1, 60, VMS_EVF_LOST_BEFORE);
	vms_analysis_finish(fx.an, 180);
	assert_int_equal(fx.r.n, 9);
	qsort(fx.r.iv, fx.r.n, sizeof fx.r.iv[0], by_cpu_start);
	check(&fx.r.iv[0], 0, 100, 110, -1, -1, 50, "bash");
	check(&fx.r.iv[1], 0, 110, 120, -1, -1, 10, "CPU 0/KVM");
	check(&fx.r.iv[2], 0, 120, 130, 1, 0, -1, "");
	check(&fx.r.iv[3], 0, 130, 140, 1, 0, 7, "worker");
	check(&fx.r.iv[4], 0, 140, 160, 1, 0, 0, "idle");
	check(&fx.r.iv[5], 0, 160, 180, 1, 0, 7, "worker");
	check(&fx.r.iv[6], 1, 105, 108, -1, -1, 0, "idle");
	check(&fx.r.iv[7], 1, 108, 170, -1, -1, -1, "");
	check(&fx.r.iv[8], 1, 170, 180, -1, -1, 60, "");
	free_fx(&fx);
}

/* vCPU 0's thread (10) moves from CPU 0 to CPU 1 and back, and no switch says so: the events
 * of test_moved. unscheduled: the host records no sched_switch (vms_analysis_host_unscheduled).
 *   100 an event of host thread 50 on CPU 0           (proves 50 there at 100 only)
 *   110 kvm_entry of vCPU 0 on CPU 0                  guest mode, guest thread not known
 *   120 the guest's first event on vCPU 0, thread 7   -> CPU 0 [110,120) g/0 -1
 *   130 kvm_exit on CPU 0                             -> CPU 0 [120,130) g/0 7 worker
 *   140 an event of thread 10 on CPU 0                (proves 10 there at 140)
 *   150 kvm_entry of vCPU 0 on CPU 1                  (10 left CPU 0 between 140 and 150)
 *   160 kvm_exit on CPU 1                             -> CPU 1 [150,160) g/0 7 worker
 *   170 kvm_entry of vCPU 0 on CPU 0 again            (10 left CPU 1 after 160)
 *   finish 200                                        -> CPU 0 [170,200) g/0 7 worker
 * Without sched_switch only the guest-mode windows are known: CPU 0 [130,170) and CPU 1
 * [160,200) are unknown. With sched_switch recorded (but its switches here lost), what CPU 0
 * showed from the kvm_exit at 130, thread 10 in host mode, is carried to its last event
 * there (140), then unknown until 170, since 10 was seen on CPU 1 at 150; CPU 1 shows 10 in
 * host mode from 160 until its last event there (160), so [160,200) is unknown. In neither
 * is thread 10 or vCPU 0 on two CPUs at once. */
static void moved_and_check(bool unscheduled)
{
	struct fixture fx;
	setup_fx(&fx);
	if (unscheduled)
		vms_analysis_host_unscheduled(fx.an, 0);
	raw(&fx, 100, 0, 0, 50, 0);
	mode(&fx, 110, 0, 0, true);
	raw(&fx, 120, 1, 0, 7, 0);
	mode(&fx, 130, 0, 0, false);
	raw(&fx, 140, 0, 0, 10, 0);
	mode(&fx, 150, 0, 1, true);
	mode(&fx, 160, 0, 1, false);
	mode(&fx, 170, 0, 0, true);
	vms_analysis_finish(fx.an, 200);
	qsort(fx.r.iv, fx.r.n, sizeof fx.r.iv[0], by_cpu_start);
	uint32_t i = 0;
	if (!unscheduled)   /* (the first event on CPU 0: thread 50 runs there until 110) */
		check(&fx.r.iv[i++], 0, 100, 110, -1, -1, 50, "bash");
	check(&fx.r.iv[i++], 0, 110, 120, 1, 0, -1, "");
	check(&fx.r.iv[i++], 0, 120, 130, 1, 0, 7, "worker");
	if (unscheduled) {
		check(&fx.r.iv[i++], 0, 130, 170, -1, -1, -1, "");
	} else {
		check(&fx.r.iv[i++], 0, 130, 140, -1, -1, 10, "");
		check(&fx.r.iv[i++], 0, 140, 170, -1, -1, -1, "");
	}
	check(&fx.r.iv[i++], 0, 170, 200, 1, 0, 7, "worker");
	check(&fx.r.iv[i++], 1, 150, 160, 1, 0, 7, "worker");
	check(&fx.r.iv[i++], 1, 160, 200, -1, -1, -1, "");
	assert_int_equal(fx.r.n, i);
	free_fx(&fx);
}

/* With sched_switch recorded, vCPU 0's kvm_exit on CPU 0 and its thread's switches lost:
 *   110 kvm_entry of vCPU 0 on CPU 0, 120 the guest's first event (thread 7)
 *   150 kvm_exit of vCPU 0 on CPU 1                   (10 left CPU 0 by 150)
 *   finish 200
 * CPU 0: [110,120) g/0 -1, [120,150) g/0 7 worker, then [150,200) unknown (not thread 10 in
 * host mode: it is on CPU 1); CPU 1: thread 10 in host mode from 150. */
static void test_exit_elsewhere(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx);
	mode(&fx, 110, 0, 0, true);
	raw(&fx, 120, 1, 0, 7, 0);
	mode(&fx, 150, 0, 1, false);
	vms_analysis_finish(fx.an, 200);
	qsort(fx.r.iv, fx.r.n, sizeof fx.r.iv[0], by_cpu_start);
	assert_int_equal(fx.r.n, 4);
	check(&fx.r.iv[0], 0, 110, 120, 1, 0, -1, "");
	check(&fx.r.iv[1], 0, 120, 150, 1, 0, 7, "worker");
	check(&fx.r.iv[2], 0, 150, 200, -1, -1, -1, "");
	check(&fx.r.iv[3], 1, 150, 200, -1, -1, 10, "");
	free_fx(&fx);
}

static void test_moved_unscheduled(void **state)
{
	(void)state;
	moved_and_check(true);
}

static void test_moved_scheduled(void **state)
{
	(void)state;
	moved_and_check(false);
}

/* The events of test_migration and test_window, played into fx, and the intervals both
 * expect; CPU 0's first one starts at first (10, or the window's start). Frees fx. */
static void migrate_and_check(struct fixture *fx, uint64_t first)
{
	raw(fx, 5, 1, 1, 5, 0);
	mode(fx, 10, 1, 0, true);
	run(fx, 20, 0, 11, 99, "other");
	mode(fx, 30, 1, 1, true);
	vms_analysis_finish(fx->an, 40);
	assert_int_equal(fx->r.n, 3);
	qsort(fx->r.iv, fx->r.n, sizeof fx->r.iv[0], by_cpu_start);
	check(&fx->r.iv[0], 0, first, 20, 1, 1, 5, "");
	check(&fx->r.iv[1], 0, 20, 40, -1, -1, 99, "other");
	check(&fx->r.iv[2], 1, 30, 40, 1, 1, 5, "");
	free_fx(fx);
}

/* A vCPU that migrates: vCPU 1 (thread 11) enters guest mode on CPU 0 at 10, its thread is
 * switched out there at 20 without a kvm_exit seen (events lost on the host), and it enters
 * guest mode on CPU 1 at 30; guest thread 5 ("") is current from the guest's first event at
 * 5. Expected: CPU 0 [10,20) g/1 5, then [20,40) host 99; CPU 1 [30,40) g/1 5 (its occupant
 * was thread 11 from the kvm_entry, the first event on CPU 1). Never on two CPUs at once. */
static void test_migration(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx);
	migrate_and_check(&fx, 10);
}

/* The same migration seen through a time window from 15 (vms_analysis_window): before it
 * nothing is published, and at 15 the gate repeats what the state machine knew then, the
 * occupant of CPU 0 included: vCPU 1 in guest mode since 10, running guest thread 5, known
 * from the guest's first event at 5 (dropped by the gate, like every raw event before the
 * window: the occupant, not the event, carries it). Expected: CPU 0 [15,20) g/1 5, then
 * [20,40) host 99 "other"; CPU 1 [30,40) g/1 5. */
static void test_window(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx);
	assert_int_equal(vms_analysis_window(fx.an, 15), 0);
	migrate_and_check(&fx, 15);
}

/* Trace Compass's OneQemuKvm pair through the whole pipeline (session, state machine,
 * observations). Derived by hand from ../shared/traces/tracecompass-vm/OneQemuKvm/{host,
 * guest}.xml (the event list is in test_onequemukvm.c; every event is on CPU 0, the guest's
 * clock is the host's: no sync pairs, offset 0, so t_ref = t). Host thread 31 "qemucpu1"
 * runs guest "guest"'s vCPU 0; host thread 30 is "any"; guest threads 130 "any" and
 * 131 "any2".
 *
 *   t=1   host sched_switch 30 -> 31, the first host event: CPU 0 runs 31 from 1
 *   t=5   kvm_entry: guest mode; the guest has recorded nothing yet: thread unknown
 *   t=10  the guest's first event, sched_switch 130 -> 131: 131 from 10
 *   t=35  guest 131 -> 130          t=45  kvm_exit: host thread 31
 *   t=60  kvm_entry (130 current)   t=75  guest 130 -> 131    t=95  kvm_exit
 *   t=100 host 31 -> 30             t=150 host 30 -> 31       t=155 kvm_entry (131 current)
 *   t=175 guest 131 -> 130          t=195 kvm_exit            t=210 kvm_entry
 *   t=225 guest 130 -> 131          t=245 kvm_exit            t=260 kvm_entry
 *   t=275 guest 131 -> 130          t=295 kvm_exit            t=300 host 31 -> 30
 *   t=350 host 30 -> 31             t=355 kvm_entry (130)     t=375 guest 130 -> 131, the
 *   last event: the trace ends at 375 (the switch at 375 makes only an empty interval).
 *   The guest's clock comes from its 6 vmsync pairs. By default (--clock-model auto) the
 *   guest runs on this host's clock: slope 1, and the offset d (t_ref = t + d) is bounded by
 *   the pairs (guest -> host 40->50, 190->200, 240->250; host -> guest 55->65, 205->215,
 *   255->265) to [max(h_send - g_recv), min(h_recv - g_send)] = [-10, 10]. The guest's 13
 *   events (switches at 10 35 75 175 225 275 375, vmsync at 40 65 190 215 240 265) are all
 *   inside the host thread's guest-mode windows [5,45] [60,95] [155,195] [210,245] [260,295]
 *   [355,..) (the search counts both ends: lib/session/offset_fit.c) exactly for d in
 *   [-5, 5] (10 -> 5 needs d >= -5, 40 -> 45 needs d <= 5; the other events allow more);
 *   the middle is d = 0: every guest time maps to itself. With --clock-model linear (Trace Compass's convex hull, accurate):
 *   t_ref = 1.0025078369905955 t - 0.3824 (vmscope sync), rounded to the nearest ns; it moves
 *   only the guest's switch at 375 (-> 375.56 -> 376); every other guest time maps to itself.
 *   The host's last event is the kvm_entry at 355 (`grep timestamp host.xml`): its coverage
 *   ends there while the guest's goes on (to 375; 376 with --clock-model linear), so from 355
 *   who runs on CPU 0 is unknown (§7: never the vCPU carried forward past the host's trace),
 *   the guest mode entered at 355 an empty interval.
 * So CPU 0 of the host shows (guest rows: machine "guest" = 1, vCPU 0; the last row, unknown,
 * ends at 375, and at 376 with --clock-model linear): */
static const struct { uint64_t s, e; int32_t guest, tid; const char *comm; } want_oqk[] = {
	{1, 5, -1, 31, "qemucpu1"},
	{5, 10, 1, -1, ""},
	{10, 35, 1, 131, "any2"},
	{35, 45, 1, 130, "any"},
	{45, 60, -1, 31, "qemucpu1"},
	{60, 75, 1, 130, "any"},
	{75, 95, 1, 131, "any2"},
	{95, 100, -1, 31, "qemucpu1"},
	{100, 150, -1, 30, "any"},
	{150, 155, -1, 31, "qemucpu1"},
	{155, 175, 1, 131, "any2"},
	{175, 195, 1, 130, "any"},
	{195, 210, -1, 31, "qemucpu1"},
	{210, 225, 1, 130, "any"},
	{225, 245, 1, 131, "any2"},
	{245, 260, -1, 31, "qemucpu1"},
	{260, 275, 1, 131, "any2"},
	{275, 295, 1, 130, "any"},
	{295, 300, -1, 31, "qemucpu1"},
	{300, 350, -1, 30, "any"},
	{350, 355, -1, 31, "qemucpu1"},
	{355, 375, -1, -1, ""},   /* after the host's trace: unknown */
};

static void run_onequemukvm(enum vms_clock_model model, uint64_t last_end)
{
	const char *paths[2] = {vms_test_trace("tracecompass-vm/OneQemuKvm/host.xml"),
				vms_test_trace("tracecompass-vm/OneQemuKvm/guest.xml")};
	VMS_REQUIRE_TRACE(paths[0]);
	VMS_REQUIRE_TRACE(paths[1]);
	struct vms_error err = {0};
	struct vms_session_opts opts = { .clock_model = (int)model };
	struct vms_session *s = vms_session_open(paths, 2, &opts, &err);
	if (!s)
		fail_msg("%s", err.msg);
	assert_int_equal(vms_session_build_model(s, &err), 0);
	static struct pv_rec r;
	memset(&r, 0, sizeof r);
	struct vms_pcpu_view *pv = vms_pcpu_view_new(vms_session_model(s), rec_pcpu, &r);
	assert_non_null(pv);
	struct vms_observer o = vms_pcpu_view_observer(pv);
	assert_int_equal(vms_session_observe(s, &o), 0);
	if (vms_session_run(s, NULL, NULL, NULL, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(r.n, sizeof want_oqk / sizeof want_oqk[0]);
	for (uint32_t i = 0; i < r.n; i++) {
		int32_t g = want_oqk[i].guest;
		bool last = i + 1 == r.n;
		check(&r.iv[i], 0, want_oqk[i].s, last ? last_end : want_oqk[i].e, g, g < 0 ? -1 : 0,
		      want_oqk[i].tid, want_oqk[i].comm);
	}
	vms_pcpu_view_free(pv);
	vms_session_free(s);
}

static void test_onequemukvm(void **state)
{
	(void)state;
	run_onequemukvm(VMS_CLOCK_MODEL_AUTO, 375);
}

static void test_onequemukvm_linear(void **state)
{
	(void)state;
	run_onequemukvm(VMS_CLOCK_MODEL_LINEAR, 376);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_by_hand),
		cmocka_unit_test(test_moved_unscheduled),
		cmocka_unit_test(test_moved_scheduled),
		cmocka_unit_test(test_exit_elsewhere),
		cmocka_unit_test(test_migration),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_onequemukvm),
		cmocka_unit_test(test_onequemukvm_linear),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
