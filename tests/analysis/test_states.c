/* The analyses on small hand-written event sequences, each expected value worked out by
 * hand from the spec's transition table (docs/vm-analysis.md §3-6, §8).
 *
 * Setup: machine 0 is a host (4 CPUs), machine 1 a guest (2 vCPUs) mapped by the user:
 * vCPU 0 = host thread 10, vCPU 1 = host thread 11. Host thread 20 belongs to process 19. */
#include "an_test.h"

struct fixture {
	struct vms_trace_meta hm, gm;
	struct vms_model *m;
	struct vms_analysis *a;
	struct rec r;
};

static void setup_fx(struct fixture *fx, bool untraced)
{
	memset(fx, 0, sizeof *fx);
	struct vms_error err = {0};
	fx->hm.nr_cpus = 4;
	fx->gm.nr_cpus = 2;
	fx->m = vms_model_new();
	assert_int_equal(vms_model_add_source(fx->m, 0, "host.dat", &fx->hm, NULL, &err), 0);
	if (!untraced) {
		assert_int_equal(vms_model_add_source(fx->m, 1, "g.dat", &fx->gm, NULL, &err), 0);
		assert_int_equal(vms_model_user_map(fx->m, "g", 0, 10, &err), 0);
		assert_int_equal(vms_model_user_map(fx->m, "g", 1, 11, &err), 0);
	}
	struct vms_event e = mk(0, 0, -1, VMS_K_THREAD_NAME, 20, 19, 0);
	e.s[0] = "stealer";
	vms_model_observe(fx->m, &e);
	e = mk(0, 0, 10, VMS_K_KVM_ENTRY, 0, 0, 0);
	vms_model_observe(fx->m, &e);
	assert_int_equal(vms_model_finish(fx->m, &err), 0);
	struct vms_sinks s = rec_sinks(&fx->r);
	fx->a = vms_analysis_new(fx->m, &s);
	assert_non_null(fx->a);
}

static void feed(struct fixture *fx, uint64_t t, struct vms_event e)
{
	vms_analysis_event(fx->a, &e, t);
}

static void free_fx(struct fixture *fx)
{
	vms_analysis_free(fx->a);
	vms_model_free(fx->m);
}

static void check_iv(const struct vms_vcpu_interval *iv, uint32_t vcpu, uint64_t s, uint64_t e,
		     uint32_t status, enum vms_vcpu_state st)
{
	assert_int_equal(iv->vcpu, vcpu);
	assert_int_equal(iv->start, s);
	assert_int_equal(iv->end, e);
	assert_int_equal(iv->status, status);
	assert_int_equal(iv->state, st);
}

/* Thread 10 leaves CPU 0 runnable at 100 (20 runs), is back at 200, leaves it blocked
 * (prev_state 1 = S) at 300 (idle runs), back at 400; leaves runnable as "R+" (0x100) at
 * 500, back at 550; end 600. No guest events: base UNKNOWN.
 *   [100,200) 256 preempted  [200,300) 0  [300,400) 256 halted  [400,500) 0
 *   [500,550) 256 preempted  [550,600) 0
 * Steal: 20 ran during both preempted intervals: 100 + 50 = 150 ns, pid 19. The halted
 * interval charges nobody. */
static void test_preempted_vs_halted(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx, false);
	struct vms_event e = sw(0, 0, 10, 0, 20);
	e.s[1] = "stealer";
	feed(&fx, 100, e);
	feed(&fx, 200, sw(0, 0, 20, 0, 10));
	feed(&fx, 300, sw(0, 0, 10, 1, 0));
	feed(&fx, 400, sw(0, 0, 0, 0, 10));
	feed(&fx, 500, sw(0, 0, 10, 0x100, 20));
	feed(&fx, 550, sw(0, 0, 20, 0, 10));
	vms_analysis_finish(fx.a, 600);
	assert_int_equal(fx.r.nv, 6 + 1); /* + vCPU 1: UNKNOWN over [100,600) */
	check_iv(&fx.r.v[0], 0, 100, 200, 256, VMS_STATE_PREEMPTED);
	check_iv(&fx.r.v[1], 0, 200, 300, 0, VMS_STATE_UNKNOWN);
	check_iv(&fx.r.v[2], 0, 300, 400, 256, VMS_STATE_HALTED);
	check_iv(&fx.r.v[3], 0, 400, 500, 0, VMS_STATE_UNKNOWN);
	check_iv(&fx.r.v[4], 0, 500, 550, 256, VMS_STATE_PREEMPTED);
	check_iv(&fx.r.v[5], 0, 550, 600, 0, VMS_STATE_UNKNOWN);
	check_iv(&fx.r.v[6], 1, 100, 600, 0, VMS_STATE_UNKNOWN);
	const struct vms_vcpu_stats *vs = vms_analysis_vcpu(fx.a, 0);
	assert_int_equal(vs->ns[VMS_STATE_PREEMPTED], 150);
	assert_int_equal(vs->ns[VMS_STATE_HALTED], 100);
	assert_int_equal(vs->ns[VMS_STATE_UNKNOWN], 250);
	assert_int_equal(vs->nr_steal, 1);
	assert_int_equal(vs->steal[0].host_tid, 20);
	assert_int_equal(vs->steal[0].host_pid, 19);
	assert_int_equal(vs->steal[0].ns, 150);
	assert_string_equal(vs->steal[0].comm, "stealer");
	assert_int_equal(fx.r.nt, 0); /* no guest thread known: no overlay */
	free_fx(&fx);
}

/* The host's coverage begins at 0 (a switch on CPU 3). Guest thread 5 runs on vCPU 0 from
 * 0. kvm_exit (EPT_VIOLATION, 48) at 10; the vCPU thread is preempted at 20 (20 runs), back
 * at 30 still in the hypervisor, kvm_entry at 40; end 50.
 *   [0,10) 2  [10,20) 130 vmm  [20,30) 386 preempted (VMM kept under it)  [30,40) 130
 *   [40,50) 2
 * Overlays of thread 5: [10,20) vmm 48 by 10, [20,30) preempted by 20, [30,40) vmm 48.
 * Totals of 5: running 20, vmm 20, preempted 10; EPT_VIOLATION: 20 ns, 1 exit. Exit cost 30. */
static void test_vmm_inside_preempted(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx, false);
	feed(&fx, 0, sw(0, 3, 0, 0, 33));
	struct vms_event g = sw(1, 0, 0, 0, 5);
	g.s[1] = "worker";
	feed(&fx, 0, g);
	feed(&fx, 10, mk(0, 0, 10, VMS_K_KVM_EXIT, 48, 1, 0));
	feed(&fx, 20, sw(0, 0, 10, 0, 20));
	feed(&fx, 30, sw(0, 0, 20, 0, 10));
	feed(&fx, 40, mk(0, 0, 10, VMS_K_KVM_ENTRY, 0, 0, 0));
	vms_analysis_finish(fx.a, 50);
	check_iv(&fx.r.v[0], 0, 0, 10, 2, VMS_STATE_RUNNING);
	check_iv(&fx.r.v[1], 0, 10, 20, 130, VMS_STATE_VMM);
	check_iv(&fx.r.v[2], 0, 20, 30, 386, VMS_STATE_PREEMPTED);
	check_iv(&fx.r.v[3], 0, 30, 40, 130, VMS_STATE_VMM);
	check_iv(&fx.r.v[4], 0, 40, 50, 2, VMS_STATE_RUNNING);
	assert_int_equal(fx.r.nt, 3);
	static const struct { uint64_t s, e; enum vms_overlay_reason why; int32_t er, host; } w[] = {
		{10, 20, VMS_OVERLAY_VMM, 48, 10},
		{20, 30, VMS_OVERLAY_PREEMPTED, -1, 20},
		{30, 40, VMS_OVERLAY_VMM, 48, 10},
	};
	for (int i = 0; i < 3; i++) {
		assert_int_equal(fx.r.t[i].tid, 5);
		assert_int_equal(fx.r.t[i].start, w[i].s);
		assert_int_equal(fx.r.t[i].end, w[i].e);
		assert_int_equal(fx.r.t[i].reason, w[i].why);
		assert_int_equal(fx.r.t[i].exit_reason, w[i].er);
		assert_int_equal(fx.r.t[i].host_tid, w[i].host);
	}
	const struct vms_gthread_stats *t5 = vms_analysis_gthread(fx.a, 0);
	assert_int_equal(vms_analysis_nr_gthreads(fx.a), 1);
	assert_int_equal(t5->tid, 5);
	assert_string_equal(t5->comm, "worker");
	assert_int_equal(t5->ns_running, 20);
	assert_int_equal(t5->ns_vmm, 20);
	assert_int_equal(t5->ns_preempted, 10);
	assert_int_equal(t5->nr_reasons, 1);
	assert_int_equal(t5->reasons[0].reason, 48);
	assert_int_equal(t5->reasons[0].ns, 20);
	assert_int_equal(t5->reasons[0].count, 1);
	const struct vms_vcpu_stats *vs = vms_analysis_vcpu(fx.a, 0);
	assert_int_equal(vs->nr_exits, 1);
	assert_int_equal(vms_dist_sum(vs->exits[0].dist), 30);
	free_fx(&fx);
}

/* Pairing: vCPU 0: exit 30 at 0, exit 48 at 10 (the first lost its entry: unfinished),
 * entry at 25 (EPT_VIOLATION costs 15), exit 30 at 40, entry 42 (IO 2 ns), exit 1 at 50
 * never entered (unfinished). vCPU 1: exit 30 at 5, entry at 9 (4 ns).
 * Every kvm_exit is counted: vCPU 0 table sorted by total: EPT_VIOLATION 15 (1 exit),
 * IO_INSTRUCTION 2 (2 exits, 1 unfinished), EXTERNAL_INTERRUPT 0 (1 exit, unfinished).
 * Guest table: EPT 15, IO 2 + 4 = 6 (2 finished exits, 3 in all), EXTERNAL_INTERRUPT. */
static void test_exit_pairing(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx, false);
	feed(&fx, 0, mk(0, 0, 10, VMS_K_KVM_EXIT, 30, 1, 0));
	feed(&fx, 5, mk(0, 1, 11, VMS_K_KVM_EXIT, 30, 1, 0));
	feed(&fx, 9, mk(0, 1, 11, VMS_K_KVM_ENTRY, 1, 0, 0));
	feed(&fx, 10, mk(0, 0, 10, VMS_K_KVM_EXIT, 48, 1, 0));
	feed(&fx, 25, mk(0, 0, 10, VMS_K_KVM_ENTRY, 0, 0, 0));
	feed(&fx, 40, mk(0, 0, 10, VMS_K_KVM_EXIT, 30, 1, 0));
	feed(&fx, 42, mk(0, 0, 10, VMS_K_KVM_ENTRY, 0, 0, 0));
	feed(&fx, 50, mk(0, 0, 10, VMS_K_KVM_EXIT, 1, 1, 0));
	vms_analysis_finish(fx.a, 60);
	const struct vms_vcpu_stats *v0 = vms_analysis_vcpu(fx.a, 0);
	assert_int_equal(v0->exits_unpaired, 2);
	assert_int_equal(v0->nr_exits, 3);
	assert_int_equal(v0->exits[2].reason, 1);
	assert_int_equal(v0->exits[2].count, 1);
	assert_int_equal(v0->exits[2].unfinished, 1);
	assert_int_equal(vms_dist_count(v0->exits[2].dist), 0);
	assert_int_equal(v0->exits[1].count, 2);
	assert_int_equal(v0->exits[1].unfinished, 1);
	assert_int_equal(v0->exits[0].reason, 48);
	assert_string_equal(vms_exit_reason_name(v0->exits[0].isa, v0->exits[0].reason),
			    "EPT_VIOLATION");
	assert_int_equal(vms_dist_sum(v0->exits[0].dist), 15);
	assert_int_equal(v0->exits[1].reason, 30);
	assert_int_equal(vms_dist_sum(v0->exits[1].dist), 2);
	uint32_t n;
	const struct vms_exit_stats *ge = vms_analysis_guest_exits(fx.a, 1, &n);
	assert_int_equal(n, 3);
	assert_int_equal(ge[0].reason, 48);
	assert_int_equal(ge[1].reason, 30);
	assert_int_equal(ge[1].count, 3);
	assert_int_equal(ge[1].unfinished, 1);
	assert_int_equal(vms_dist_count(ge[1].dist), 2);
	assert_int_equal(vms_dist_sum(ge[1].dist), 6);
	assert_int_equal(vms_dist_min(ge[1].dist), 2);
	assert_int_equal(vms_dist_max(ge[1].dist), 4);
	assert_null(vms_analysis_guest_exits(fx.a, 0, &n));
	assert_int_equal(n, 0);
	free_fx(&fx);
}

/* Steal: thread 10 leaves CPU 2 runnable at 100 (20 "stealer" in), 21 "b" replaces 20 at
 * 150, 22 "c" replaces 21 at 170, 10 comes back at 200 on CPU 3 (migrated; 22 goes on
 * running on CPU 2). A switch on CPU 1 at 160 changes nothing. Woken at 180, switched in at
 * 200: run-queue latency 20.
 *   20: [100,150) 50   22: [170,200) 30   21: [150,170) 20   -> sorted 20, 22, 21 */
static void test_steal_attribution(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx, false);
	struct vms_event e = sw(0, 2, 10, 0, 20);
	e.s[1] = "stealer";
	feed(&fx, 100, e);
	e = sw(0, 2, 20, 0, 21);
	e.s[1] = "b";
	feed(&fx, 150, e);
	feed(&fx, 160, sw(0, 1, 0, 0, 33));
	e = sw(0, 2, 21, 1, 22);
	e.s[1] = "c";
	feed(&fx, 170, e);
	feed(&fx, 180, mk(0, 0, 33, VMS_K_SCHED_WAKEUP, 10, 3, 120));
	feed(&fx, 200, sw(0, 3, 0, 0, 10));
	vms_analysis_finish(fx.a, 300);
	const struct vms_vcpu_stats *vs = vms_analysis_vcpu(fx.a, 0);
	assert_int_equal(vs->nr_steal, 3);
	assert_int_equal(vs->steal[0].host_tid, 20);
	assert_int_equal(vs->steal[0].ns, 50);
	assert_int_equal(vs->steal[0].host_pid, 19);
	assert_int_equal(vs->steal[1].host_tid, 22);
	assert_int_equal(vs->steal[1].ns, 30);
	assert_string_equal(vs->steal[1].comm, "c");
	assert_int_equal(vs->steal[1].host_pid, -1);
	assert_int_equal(vs->steal[2].host_tid, 21);
	assert_int_equal(vs->steal[2].ns, 20);
	assert_int_equal(vms_dist_count(vs->runq_latency), 1);
	assert_int_equal(vms_dist_max(vs->runq_latency), 20);
	assert_int_equal(vs->ns[VMS_STATE_PREEMPTED], 100);
	free_fx(&fx);
}

/* Two vCPU threads leave the same CPU 2: 10 -> 11 at 100 (vCPU 0 off, its CPU taken by the
 * other vCPU's thread), 11 -> 20 at 120 (vCPU 1 off too; 20 now runs instead of both),
 * 20 -> 10 at 150 (vCPU 0 back; 10 runs instead of vCPU 1), 11 back on CPU 3 at 170.
 *   vCPU 0: 11 [100,120) 20 ns, 20 [120,150) 30 ns
 *   vCPU 1: 20 [120,150) 30 ns, 10 [150,170) 20 ns */
static void test_steal_shared_cpu(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx, false);
	feed(&fx, 100, sw(0, 2, 10, 0, 11));
	feed(&fx, 120, sw(0, 2, 11, 0, 20));
	feed(&fx, 150, sw(0, 2, 20, 0, 10));
	feed(&fx, 170, sw(0, 3, 0, 0, 11));
	vms_analysis_finish(fx.a, 200);
	const struct vms_vcpu_stats *v0 = vms_analysis_vcpu(fx.a, 0);
	const struct vms_vcpu_stats *v1 = vms_analysis_vcpu(fx.a, 1);
	assert_int_equal(v0->nr_steal, 2);
	assert_int_equal(v0->steal[0].host_tid, 20);
	assert_int_equal(v0->steal[0].ns, 30);
	assert_int_equal(v0->steal[1].host_tid, 11);
	assert_int_equal(v0->steal[1].ns, 20);
	assert_int_equal(v1->nr_steal, 2);
	assert_int_equal(v1->steal[0].host_tid, 20);
	assert_int_equal(v1->steal[0].ns, 30);
	assert_int_equal(v1->steal[1].host_tid, 10);
	assert_int_equal(v1->steal[1].ns, 20);
	assert_int_equal(v0->ns[VMS_STATE_PREEMPTED], 50);
	assert_int_equal(v1->ns[VMS_STATE_PREEMPTED], 50);
	free_fx(&fx);
}

/* Containment: guest events on vCPU 0 at 50 (thread 10's mode not known yet: not
 * counted), 150 (inside kvm_entry 100 -> kvm_exit 200), 250 (outside): 1 of 2. Events on
 * vCPU 1, whose thread never entered, are not counted. */
static void test_containment(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx, false);
	feed(&fx, 50, mk(1, 0, 7, VMS_K_OTHER, 0, 0, 0));
	feed(&fx, 100, mk(0, 0, 10, VMS_K_KVM_ENTRY, 0, 0, 0));
	feed(&fx, 150, mk(1, 0, 7, VMS_K_OTHER, 0, 0, 0));
	feed(&fx, 160, mk(1, 1, 7, VMS_K_OTHER, 0, 0, 0));
	feed(&fx, 200, mk(0, 0, 10, VMS_K_KVM_EXIT, 1, 1, 0));
	feed(&fx, 250, mk(1, 0, 7, VMS_K_OTHER, 0, 0, 0));
	vms_analysis_finish(fx.a, 300);
	const struct vms_vcpu_stats *v0 = vms_analysis_vcpu(fx.a, 0);
	assert_int_equal(v0->contained, 1);
	assert_int_equal(v0->contain_total, 2);
	assert_int_equal(vms_analysis_vcpu(fx.a, 1)->contain_total, 0);
	const struct vms_machine *g = vms_model_machine_c(fx.m, 1);
	assert_true(g->sync.has_containment);
	assert_int_equal(g->sync.contained, 1);
	assert_int_equal(g->sync.contain_total, 2);
	free_fx(&fx);
}

/* A lone host: thread 10 ran kvm_entry vcpu_id 0 and no traced guest claims it, so it is
 * untraced guest "tid-10", vCPU 0. Its states have base UNKNOWN with the flags:
 *   [0,10) 0  [10,20) 128 vmm  [20,40) 384 preempted  [40,45) 128  [45,50) 0
 * and its exit (reason 30 at 10, entry at 45) costs 35; 20 stole [20,40). */
static void test_untraced_guest_states(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx, true);
	assert_int_equal(vms_model_nr_machines(fx.m), 2);
	assert_string_equal(vms_model_machine_c(fx.m, 1)->name, "tid-10");
	feed(&fx, 0, mk(0, 0, 10, VMS_K_KVM_ENTRY, 0, 0, 0));
	feed(&fx, 10, mk(0, 0, 10, VMS_K_KVM_EXIT, 30, 1, 0));
	feed(&fx, 20, sw(0, 0, 10, 0, 20));
	feed(&fx, 40, sw(0, 0, 20, 0, 10));
	feed(&fx, 45, mk(0, 0, 10, VMS_K_KVM_ENTRY, 0, 0, 0));
	vms_analysis_finish(fx.a, 50);
	assert_int_equal(fx.r.nv, 5);
	check_iv(&fx.r.v[0], 0, 0, 10, 0, VMS_STATE_UNKNOWN);
	check_iv(&fx.r.v[1], 0, 10, 20, 128, VMS_STATE_VMM);
	check_iv(&fx.r.v[2], 0, 20, 40, 384, VMS_STATE_PREEMPTED);
	check_iv(&fx.r.v[3], 0, 40, 45, 128, VMS_STATE_VMM);
	check_iv(&fx.r.v[4], 0, 45, 50, 0, VMS_STATE_UNKNOWN);
	const struct vms_vcpu_stats *vs = vms_analysis_vcpu(fx.a, 0);
	assert_int_equal(vs->machine, 1);
	assert_int_equal(vs->host_tid, 10);
	assert_int_equal(vs->nr_exits, 1);
	assert_int_equal(vms_dist_sum(vs->exits[0].dist), 35);
	assert_int_equal(vs->steal[0].ns, 20);
	free_fx(&fx);
}


/* vCPU 0's intervals, in order (the recorder holds every vCPU's, interleaved). */
static uint32_t vcpu0(const struct fixture *fx, struct vms_vcpu_interval *out, uint32_t max)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < fx->r.nv && n < max; i++)
		if (fx->r.v[i].vcpu == 0)
			out[n++] = fx->r.v[i];
	return n;
}

struct want_iv { uint64_t s, e; uint32_t status; enum vms_vcpu_state st; };

static void check_vcpu0(const struct fixture *fx, const struct want_iv *w, uint32_t nw)
{
	struct vms_vcpu_interval iv[32];
	uint32_t n = vcpu0(fx, iv, 32);
	for (uint32_t i = 0; i < n; i++)
		print_message("# vCPU 0 [%llu,%llu) %u %s\n", (unsigned long long)iv[i].start,
			      (unsigned long long)iv[i].end, iv[i].status,
			      vms_vcpu_state_name(iv[i].state));
	assert_int_equal(n, nw);
	for (uint32_t i = 0; i < nw; i++)
		check_iv(&iv[i], 0, w[i].s, w[i].e, w[i].status, w[i].st);
}

/* The guest's thread 5 runs on vCPU 0 from 0, the guest goes idle at 5 (next_tid 0). */
static void guest_then_idle(struct fixture *fx)
{
	feed(fx, 0, sw(1, 0, 0, 0, 5));
	feed(fx, 5, sw(1, 0, 5, 1, 0));
}

/* HLT (12) at 10, kvm_entry at 100, the guest runs 5 again at 105; end 120. The host
 * recorded nothing of how the halt went (no sched_switch of thread 10, no
 * kvm_vcpu_wakeup): the whole exit is halted, none of it the hypervisor's.
 * Host coverage from 0 (a switch on CPU 3).
 *   [0,5) 2 running  [5,10) 1 idle  [10,100) 129 halted  [100,105) 1 idle  [105,120) 2
 * HLT keeps its row: 1 exit, 90 ns. Hypervisor time 0. */
static void test_hlt_unrecorded(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx, false);
	feed(&fx, 0, sw(0, 3, 0, 0, 33));
	guest_then_idle(&fx);
	feed(&fx, 10, mk(0, 0, 10, VMS_K_KVM_EXIT, 12, 1, 0));
	feed(&fx, 100, mk(0, 0, 10, VMS_K_KVM_ENTRY, 0, 0, 0));
	feed(&fx, 105, sw(1, 0, 0, 0, 5));
	vms_analysis_finish(fx.a, 120);
	static const struct want_iv w[] = {
		{0, 5, 2, VMS_STATE_RUNNING}, {5, 10, 1, VMS_STATE_IDLE},
		{10, 100, 129, VMS_STATE_HALTED}, {100, 105, 1, VMS_STATE_IDLE},
		{105, 120, 2, VMS_STATE_RUNNING},
	};
	check_vcpu0(&fx, w, 5);
	const struct vms_vcpu_stats *vs = vms_analysis_vcpu(fx.a, 0);
	assert_int_equal(vs->ns[VMS_STATE_HALTED], 90);
	assert_int_equal(vs->ns[VMS_STATE_VMM], 0);
	assert_int_equal(vs->hypervisor_ns, 0);
	assert_int_equal(vs->halt_poll_ns, 0);
	assert_true(vs->preempt_visible);
	assert_int_equal(vs->nr_exits, 1);
	assert_string_equal(vms_exit_reason_name(vs->exits[0].isa, vs->exits[0].reason), "HLT");
	assert_int_equal(vs->exits[0].count, 1);
	assert_int_equal(vms_dist_sum(vs->exits[0].dist), 90);
	free_fx(&fx);
}

/* No host sched_switch at all: the host's coverage begins with its first event, the HLT
 * exit at 10. kvm_vcpu_wakeup at 60 by thread 10: ns 45, waited 0 (halt-polling found the
 * guest's timer): the halt is [15,60), the thread spinning on its CPU; [10,15) and
 * [60,100) are the hypervisor's handling.
 *   [0,5) 2 unknown  [5,10) 1 unknown  [10,15) 129 vmm  [15,60) 129 halted (polling)
 *   [60,100) 129 vmm  [100,105) 1 idle  [105,120) 2 running
 * vmm 5 + 40 = 45, halted 45 of which polling 45; preemption cannot be seen. */
static void test_hlt_polling(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx, false);
	guest_then_idle(&fx);
	feed(&fx, 10, mk(0, 0, 10, VMS_K_KVM_EXIT, 12, 1, 0));
	feed(&fx, 60, mk(0, 0, 10, VMS_K_KVM_VCPU_WAKEUP, 45, 0, 1));
	feed(&fx, 100, mk(0, 0, 10, VMS_K_KVM_ENTRY, 0, 0, 0));
	feed(&fx, 105, sw(1, 0, 0, 0, 5));
	vms_analysis_finish(fx.a, 120);
	static const struct want_iv w[] = {
		{0, 5, 2, VMS_STATE_UNKNOWN}, {5, 10, 1, VMS_STATE_UNKNOWN},
		{10, 15, 129, VMS_STATE_VMM}, {15, 60, 129, VMS_STATE_HALTED},
		{60, 100, 129, VMS_STATE_VMM}, {100, 105, 1, VMS_STATE_IDLE},
		{105, 120, 2, VMS_STATE_RUNNING},
	};
	check_vcpu0(&fx, w, 7);
	const struct vms_vcpu_stats *vs = vms_analysis_vcpu(fx.a, 0);
	assert_int_equal(vs->ns[VMS_STATE_VMM], 45);
	assert_int_equal(vs->hypervisor_ns, 45);
	assert_int_equal(vs->ns[VMS_STATE_HALTED], 45);
	assert_int_equal(vs->halt_poll_ns, 45);
	assert_int_equal(vs->ns[VMS_STATE_UNKNOWN], 10);
	assert_false(vs->preempt_visible);
	assert_int_equal(vms_dist_sum(vs->exits[0].dist), 90);
	free_fx(&fx);
}

/* HLT at 10; the thread polls, then blocks: sched_switch out (prev_state S) at 30, back at
 * 80; kvm_vcpu_wakeup at 85 (ns 73, waited 1): the halt is [12,85); kvm_entry at 100.
 *   ... [10,12) 129 vmm  [12,30) 129 halted (polling)  [30,80) 385 halted (blocked)
 *   [80,85) 129 halted  [85,100) 129 vmm  [100,105) 1 idle  [105,120) 2
 * halted 18 + 50 + 5 = 73, of which polling 18; vmm 2 + 15 = 17. */
static void test_hlt_blocked_with_wakeup(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx, false);
	feed(&fx, 0, sw(0, 3, 0, 0, 33));
	guest_then_idle(&fx);
	feed(&fx, 10, mk(0, 0, 10, VMS_K_KVM_EXIT, 12, 1, 0));
	feed(&fx, 30, sw(0, 0, 10, 1, 0));
	feed(&fx, 80, sw(0, 0, 0, 0, 10));
	feed(&fx, 85, mk(0, 0, 10, VMS_K_KVM_VCPU_WAKEUP, 73, 1, 1));
	feed(&fx, 100, mk(0, 0, 10, VMS_K_KVM_ENTRY, 0, 0, 0));
	feed(&fx, 105, sw(1, 0, 0, 0, 5));
	vms_analysis_finish(fx.a, 120);
	static const struct want_iv w[] = {
		{0, 5, 2, VMS_STATE_RUNNING}, {5, 10, 1, VMS_STATE_IDLE},
		{10, 12, 129, VMS_STATE_VMM}, {12, 30, 129, VMS_STATE_HALTED},
		{30, 80, 385, VMS_STATE_HALTED}, {80, 85, 129, VMS_STATE_HALTED},
		{85, 100, 129, VMS_STATE_VMM}, {100, 105, 1, VMS_STATE_IDLE},
		{105, 120, 2, VMS_STATE_RUNNING},
	};
	check_vcpu0(&fx, w, 9);
	const struct vms_vcpu_stats *vs = vms_analysis_vcpu(fx.a, 0);
	assert_int_equal(vs->ns[VMS_STATE_HALTED], 73);
	assert_int_equal(vs->halt_poll_ns, 18);
	assert_int_equal(vs->ns[VMS_STATE_VMM], 17);
	assert_int_equal(vs->nr_steal, 0); /* halted time is nobody's theft */
	free_fx(&fx);
}

/* The same without kvm_vcpu_wakeup: the halt is the blocked stay off the CPU, [30,80).
 *   ... [10,30) 129 vmm  [30,80) 385 halted  [80,100) 129 vmm  ... */
static void test_hlt_blocked_no_wakeup(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx, false);
	feed(&fx, 0, sw(0, 3, 0, 0, 33));
	guest_then_idle(&fx);
	feed(&fx, 10, mk(0, 0, 10, VMS_K_KVM_EXIT, 12, 1, 0));
	feed(&fx, 30, sw(0, 0, 10, 1, 0));
	feed(&fx, 80, sw(0, 0, 0, 0, 10));
	feed(&fx, 100, mk(0, 0, 10, VMS_K_KVM_ENTRY, 0, 0, 0));
	feed(&fx, 105, sw(1, 0, 0, 0, 5));
	vms_analysis_finish(fx.a, 120);
	static const struct want_iv w[] = {
		{0, 5, 2, VMS_STATE_RUNNING}, {5, 10, 1, VMS_STATE_IDLE},
		{10, 30, 129, VMS_STATE_VMM}, {30, 80, 385, VMS_STATE_HALTED},
		{80, 100, 129, VMS_STATE_VMM}, {100, 105, 1, VMS_STATE_IDLE},
		{105, 120, 2, VMS_STATE_RUNNING},
	};
	check_vcpu0(&fx, w, 7);
	const struct vms_vcpu_stats *vs = vms_analysis_vcpu(fx.a, 0);
	assert_int_equal(vs->ns[VMS_STATE_HALTED], 50);
	assert_int_equal(vs->halt_poll_ns, 0);
	assert_int_equal(vs->ns[VMS_STATE_VMM], 40);
	free_fx(&fx);
}

/* Lost events: APIC_WRITE (56) exit at 10; its entry, a HLT exit and its halt were lost;
 * kvm_vcpu_wakeup at 50 (ns 30, waited 1) is outside any halt: the APIC_WRITE exit is closed
 * as lost (counted, no cost), the thread is in the hypervisor for a reason not recorded
 * until its kvm_entry at 60.
 *   [10,60) 130 vmm (one interval: the state does not change)  [60,70) 2 running */
static void test_gap_wakeup_outside_halt(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx, false);
	feed(&fx, 0, sw(0, 3, 0, 0, 33));
	feed(&fx, 0, sw(1, 0, 0, 0, 5));
	feed(&fx, 10, mk(0, 0, 10, VMS_K_KVM_EXIT, 56, 1, 0));
	feed(&fx, 50, mk(0, 0, 10, VMS_K_KVM_VCPU_WAKEUP, 30, 1, 1));
	feed(&fx, 60, mk(0, 0, 10, VMS_K_KVM_ENTRY, 0, 0, 0));
	vms_analysis_finish(fx.a, 70);
	static const struct want_iv w[] = {
		{0, 10, 2, VMS_STATE_RUNNING}, {10, 60, 130, VMS_STATE_VMM},
		{60, 70, 2, VMS_STATE_RUNNING},
	};
	check_vcpu0(&fx, w, 3);
	const struct vms_vcpu_stats *vs = vms_analysis_vcpu(fx.a, 0);
	assert_int_equal(vs->exits_unpaired, 1);
	assert_int_equal(vs->nr_exits, 1);
	assert_int_equal(vs->exits[0].reason, 56);
	assert_int_equal(vs->exits[0].count, 1);
	assert_int_equal(vs->exits[0].unfinished, 1);
	assert_int_equal(vms_dist_count(vs->exits[0].dist), 0);
	/* the overlays of thread 5: [10,50) for APIC_WRITE, [50,60) for a reason not known */
	assert_int_equal(fx.r.nt, 2);
	assert_int_equal(fx.r.t[0].exit_reason, 56);
	assert_int_equal(fx.r.t[0].end, 50);
	assert_int_equal(fx.r.t[1].exit_reason, -1);
	free_fx(&fx);
}

/* Lost events: thread 10 switched in on CPU 0 at 0; EPT_VIOLATION exit on CPU 0 at 10; its
 * next event, a kvm_entry, is on CPU 2 at 50 with no sched_switch between: events were lost,
 * the exit is closed as lost instead of costing 40. IO exit on CPU 2 at 60, entry at 62. */
static void test_gap_other_cpu(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx, false);
	feed(&fx, 0, sw(0, 0, 0, 0, 10));
	feed(&fx, 10, mk(0, 0, 10, VMS_K_KVM_EXIT, 48, 1, 0));
	feed(&fx, 50, mk(0, 2, 10, VMS_K_KVM_ENTRY, 0, 0, 0));
	feed(&fx, 60, mk(0, 2, 10, VMS_K_KVM_EXIT, 30, 1, 0));
	feed(&fx, 62, mk(0, 2, 10, VMS_K_KVM_ENTRY, 0, 0, 0));
	vms_analysis_finish(fx.a, 70);
	const struct vms_vcpu_stats *vs = vms_analysis_vcpu(fx.a, 0);
	assert_int_equal(vs->exits_unpaired, 1);
	assert_int_equal(vs->nr_exits, 2);
	assert_int_equal(vs->exits[0].reason, 30); /* 2 ns, before EPT's 0 */
	assert_int_equal(vms_dist_sum(vs->exits[0].dist), 2);
	assert_int_equal(vs->exits[1].reason, 48);
	assert_int_equal(vs->exits[1].unfinished, 1);
	free_fx(&fx);
}

/* Coverage: the guest's stream (stream 0) ends at 30. Host from 0. Thread 5 runs on vCPU 0
 * from 0; EPT_VIOLATION exit [10,20); after 30 nothing is known of the guest: its base is
 * unknown and thread 5 gets no overlay for the host's HLT exit [40,90).
 *   [0,10) 2  [10,20) 130 vmm  [20,30) 2  [30,40) 0 unknown  [40,90) 128 halted
 *   [90,100) 0 unknown
 * Thread 5: running 20, vmm 10, one overlay. */
static void test_coverage_guest_ends(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx, false);
	feed(&fx, 0, sw(0, 3, 0, 0, 33));
	feed(&fx, 0, sw(1, 0, 0, 0, 5));
	feed(&fx, 10, mk(0, 0, 10, VMS_K_KVM_EXIT, 48, 1, 0));
	feed(&fx, 20, mk(0, 0, 10, VMS_K_KVM_ENTRY, 0, 0, 0));
	vms_analysis_stream_end(fx.a, 1, 0, 30);
	feed(&fx, 40, mk(0, 0, 10, VMS_K_KVM_EXIT, 12, 1, 0));
	feed(&fx, 90, mk(0, 0, 10, VMS_K_KVM_ENTRY, 0, 0, 0));
	vms_analysis_finish(fx.a, 100);
	static const struct want_iv w[] = {
		{0, 10, 2, VMS_STATE_RUNNING}, {10, 20, 130, VMS_STATE_VMM},
		{20, 30, 2, VMS_STATE_RUNNING}, {30, 40, 0, VMS_STATE_UNKNOWN},
		{40, 90, 128, VMS_STATE_HALTED}, {90, 100, 0, VMS_STATE_UNKNOWN},
	};
	check_vcpu0(&fx, w, 6);
	assert_int_equal(fx.r.nt, 1);
	const struct vms_gthread_stats *t5 = vms_analysis_gthread(fx.a, 0);
	assert_int_equal(t5->ns_running, 20);
	assert_int_equal(t5->ns_vmm, 10);
	assert_int_equal(t5->ns_halted, 0);
	free_fx(&fx);
}

/* Coverage: the host's trace ends at 20 with an EPT_VIOLATION exit open since 10. After 20
 * nothing is known of the vCPU thread: the state is unknown (the guest's base, running, is
 * kept in the status), the exit is counted as unfinished, not as 50 ns of hypervisor time.
 *   [0,10) 2 running  [10,20) 130 vmm  [20,60) 2 unknown */
static void test_coverage_host_ends(void **state)
{
	(void)state;
	struct fixture fx;
	setup_fx(&fx, false);
	feed(&fx, 0, sw(0, 3, 0, 0, 33));
	feed(&fx, 0, sw(1, 0, 0, 0, 5));
	feed(&fx, 10, mk(0, 0, 10, VMS_K_KVM_EXIT, 48, 1, 0));
	vms_analysis_machine_end(fx.a, 0, 20);
	feed(&fx, 50, sw(1, 0, 5, 0, 6));
	vms_analysis_finish(fx.a, 60);
	static const struct want_iv w[] = {
		{0, 10, 2, VMS_STATE_RUNNING}, {10, 20, 130, VMS_STATE_VMM},
		{20, 60, 2, VMS_STATE_UNKNOWN},
	};
	check_vcpu0(&fx, w, 3);
	const struct vms_vcpu_stats *vs = vms_analysis_vcpu(fx.a, 0);
	assert_int_equal(vs->exits_unpaired, 1);
	assert_int_equal(vs->exits[0].count, 1);
	assert_int_equal(vms_dist_count(vs->exits[0].dist), 0);
	assert_int_equal(vs->ns[VMS_STATE_VMM], 10);
	free_fx(&fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_preempted_vs_halted),
		cmocka_unit_test(test_vmm_inside_preempted),
		cmocka_unit_test(test_exit_pairing),
		cmocka_unit_test(test_steal_attribution),
		cmocka_unit_test(test_steal_shared_cpu),
		cmocka_unit_test(test_containment),
		cmocka_unit_test(test_untraced_guest_states),
		cmocka_unit_test(test_hlt_unrecorded),
		cmocka_unit_test(test_hlt_polling),
		cmocka_unit_test(test_hlt_blocked_with_wakeup),
		cmocka_unit_test(test_hlt_blocked_no_wakeup),
		cmocka_unit_test(test_gap_wakeup_outside_halt),
		cmocka_unit_test(test_gap_other_cpu),
		cmocka_unit_test(test_coverage_guest_ends),
		cmocka_unit_test(test_coverage_host_ends),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
