/* The Trace Compass OneQemuKvm scenario (../shared/traces/tracecompass-vm/OneQemuKvm/
 * {host,guest}.xml): one host, one guest with one vCPU run by host thread 31.
 *
 * Every expected value below is derived by hand from the two XML files (all on CPU 0,
 * timestamps in ns, no two events at the same time):
 *
 *   host.xml                                   guest.xml
 *     1 sched_switch 30 -> 31 (prev_state 0)     10 sched_switch 130 -> 131
 *     5 kvm_entry vcpu_id 0                      35 sched_switch 131 -> 130
 *    45 kvm_exit reason 32 isa 1                 40 vmsync_gh_guest cnt 1 vm_uid 123456
 *    50 vmsync_gh_host cnt 1 vm_uid 123456       65 vmsync_hg_guest cnt 2
 *    55 vmsync_hg_host cnt 2                     75 sched_switch 130 -> 131
 *    60 kvm_entry                               175 sched_switch 131 -> 130
 *    95 kvm_exit 32                             190 vmsync_gh_guest cnt 3
 *   100 sched_switch 31 -> 30 (prev_state 0)    215 vmsync_hg_guest cnt 4
 *   150 sched_switch 30 -> 31                   225 sched_switch 130 -> 131
 *   155 kvm_entry                               240 vmsync_gh_guest cnt 5
 *   195 kvm_exit 32                             265 vmsync_hg_guest cnt 6
 *   200 vmsync_gh_host cnt 3                    275 sched_switch 131 -> 130
 *   205 vmsync_hg_host cnt 4                    375 sched_switch 130 -> 131
 *   210 kvm_entry
 *   245 kvm_exit 32
 *   250 vmsync_gh_host cnt 5, 255 vmsync_hg_host cnt 6
 *   260 kvm_entry
 *   295 kvm_exit 32
 *   300 sched_switch 31 -> 30 (prev_state 0)
 *   350 sched_switch 30 -> 31
 *   355 kvm_entry
 *
 * Model: the host has kvm events and vmsync_*_host: host. The guest has vmsync_*_guest:
 * guest. The guest's vm_uid 123456 is the one host thread 31 (current on host CPU 0 since
 * t=1) emitted vmsync_gh_host with: guest -> host by vmsync; thread 31 has no known process,
 * so it is its own process, and it ran kvm_entry with vcpu_id 0: vCPU 0 = thread 31 by
 * kvm_entry.
 */
#include "an_test.h"
#include "onequemukvm_expected.h"

static const char *paths[2];

static int setup(void **state)
{
	(void)state;
	paths[0] = vms_test_trace("tracecompass-vm/OneQemuKvm/host.xml");
	paths[1] = vms_test_trace("tracecompass-vm/OneQemuKvm/guest.xml");
	return 0;
}

static void test_model(void **state)
{
	(void)state;
	VMS_REQUIRE_TRACE(paths[0]);
	struct rec r;
	struct vms_sinks s = rec_sinks(&r);
	struct xml_run x;
	xml_run(&x, paths, 2, &s);
	assert_int_equal(vms_model_nr_machines(x.model), 2); /* no untraced guest */
	const struct vms_machine *h = vms_model_machine_c(x.model, 0);
	const struct vms_machine *g = vms_model_machine_c(x.model, 1);
	assert_string_equal(h->name, "host");
	assert_string_equal(g->name, "guest");
	assert_int_equal(h->role, VMS_ROLE_HOST);
	assert_int_equal(g->role, VMS_ROLE_GUEST);
	assert_int_equal(vms_model_reference(x.model), 0);
	assert_int_equal(g->host, 0);
	assert_int_equal(g->host_how, VMS_LINK_VMSYNC);
	assert_int_equal(g->host_pid, -1);
	assert_int_equal(g->vm_uid, 123456);
	assert_int_equal(g->nr_vcpus, 1);
	assert_int_equal(g->vcpus[0].host_tid, 31);
	assert_int_equal(g->vcpus[0].how, VMS_LINK_KVM_ENTRY);
	uint32_t gm, vc;
	assert_int_equal(vms_model_vcpu_of(x.model, 0, 31, &gm, &vc), 0);
	assert_int_equal(gm, 1);
	assert_int_equal(vc, 0);
	assert_int_equal(vms_model_vcpu_of(x.model, 0, 30, &gm, &vc), -1);
	assert_int_equal(h->sync.method, VMS_SYNC_REFERENCE);
	assert_int_equal(g->sync.method, VMS_SYNC_NONE);
	xml_run_free(&x);
}

static void test_vcpu_intervals(void **state)
{
	(void)state;
	VMS_REQUIRE_TRACE(paths[0]);
	struct rec r;
	struct vms_sinks s = rec_sinks(&r);
	struct xml_run x;
	xml_run(&x, paths, 2, &s);
	assert_int_equal(x.events, 35); /* 22 host + 13 guest */
	assert_int_equal(r.nv, sizeof want_v / sizeof want_v[0]);
	for (uint32_t i = 0; i < r.nv; i++) {
		assert_int_equal(r.v[i].machine, 1);
		assert_int_equal(r.v[i].vcpu, 0);
		assert_int_equal(r.v[i].start, want_v[i].s);
		assert_int_equal(r.v[i].end, want_v[i].e);
		assert_int_equal(r.v[i].status, want_v[i].status);
		assert_int_equal(r.v[i].state, want_v[i].st);
	}
	/* totals per shown state: unknown 9; running 35+35+40+35+35+20 = 200;
	 * vmm 15+5+5+15+15+5+5 = 65; preempted 50+50 = 100; sum 374 = 375 - 1 */
	assert_int_equal(vms_analysis_nr_vcpus(x.an), 1);
	const struct vms_vcpu_stats *vs = vms_analysis_vcpu(x.an, 0);
	assert_int_equal(vs->ns[VMS_STATE_UNKNOWN], 9);
	assert_int_equal(vs->ns[VMS_STATE_IDLE], 0);
	assert_int_equal(vs->ns[VMS_STATE_RUNNING], 200);
	assert_int_equal(vs->ns[VMS_STATE_VMM], 65);
	assert_int_equal(vs->ns[VMS_STATE_PREEMPTED], 100);
	assert_int_equal(vs->ns[VMS_STATE_HALTED], 0);
	assert_int_equal(vs->first, 1);
	assert_int_equal(vs->last, 375);
	assert_int_equal(vs->host_tid, 31);
	xml_run_free(&x);
}

static void test_thread_overlays(void **state)
{
	(void)state;
	VMS_REQUIRE_TRACE(paths[0]);
	struct rec r;
	struct vms_sinks s = rec_sinks(&r);
	struct xml_run x;
	xml_run(&x, paths, 2, &s);
	assert_int_equal(r.nt, sizeof want_t / sizeof want_t[0]);
	for (uint32_t i = 0; i < r.nt; i++) {
		assert_int_equal(r.t[i].machine, 1);
		assert_int_equal(r.t[i].vcpu, 0);
		assert_int_equal(r.t[i].tid, want_t[i].tid);
		assert_int_equal(r.t[i].start, want_t[i].s);
		assert_int_equal(r.t[i].end, want_t[i].e);
		assert_int_equal(r.t[i].reason, want_t[i].why);
		assert_int_equal(r.t[i].host_tid, want_t[i].host);
		if (want_t[i].why == VMS_OVERLAY_VMM) {
			assert_int_equal(r.t[i].exit_reason, 32);
			assert_int_equal(r.t[i].isa, 1);
		} else {
			assert_int_equal(r.t[i].exit_reason, -1);
		}
	}
	/* totals: 130 is current for 40 + 50 + 100 = 190 ns: vmm 15+15+5+5 = 40, preempted 50,
	 * running 190 - 90 = 100. 131: 25 + 100 + 50 + 0 = 175 ns: vmm 5+5+15 = 25,
	 * preempted 50, running 100. Exits while current: 130 at 45, 195, 295 (3); 131 at 95,
	 * 245 (2). */
	assert_int_equal(vms_analysis_nr_gthreads(x.an), 2);
	const struct vms_gthread_stats *t130 = vms_analysis_gthread(x.an, 0);
	const struct vms_gthread_stats *t131 = vms_analysis_gthread(x.an, 1);
	assert_int_equal(t130->tid, 130);
	assert_string_equal(t130->comm, "any");
	assert_int_equal(t130->ns_running, 100);
	assert_int_equal(t130->ns_vmm, 40);
	assert_int_equal(t130->ns_preempted, 50);
	assert_int_equal(t130->ns_halted, 0);
	assert_int_equal(t130->nr_reasons, 1);
	assert_int_equal(t130->reasons[0].reason, 32);
	assert_int_equal(t130->reasons[0].ns, 40);
	assert_int_equal(t130->reasons[0].count, 3);
	assert_int_equal(t131->tid, 131);
	assert_string_equal(t131->comm, "any2");
	assert_int_equal(t131->ns_running, 100);
	assert_int_equal(t131->ns_vmm, 25);
	assert_int_equal(t131->ns_preempted, 50);
	assert_int_equal(t131->reasons[0].ns, 25);
	assert_int_equal(t131->reasons[0].count, 2);
	xml_run_free(&x);
}

/* Exits: 45->60 (15), 95->155 (60), 195->210 (15), 245->260 (15), 295->355 (60); all
 * VMX MSR_WRITE (32). count 5, total 165, min 15, max 60; nearest rank on
 * [15,15,15,60,60]: p50 = rank 3 = 15, p90 = rank 5 = 60, p99 = 60.
 * Steal: preempted [100,150) and [300,350), host thread 30 ("any") on CPU 0: 100 ns.
 * No sched_wakeup: no run-queue latency. Containment: the guest's 13 events all fall in a
 * kvm_entry -> kvm_exit window of thread 31 (5-45, 60-95, 155-195, 210-245, 260-295,
 * 355-end): 13 / 13. */
static void test_exits_steal_containment(void **state)
{
	(void)state;
	VMS_REQUIRE_TRACE(paths[0]);
	struct xml_run x;
	xml_run(&x, paths, 2, NULL);
	const struct vms_vcpu_stats *vs = vms_analysis_vcpu(x.an, 0);
	assert_int_equal(vs->nr_exits, 1);
	assert_int_equal(vs->exits[0].isa, 1);
	assert_int_equal(vs->exits[0].reason, 32);
	assert_string_equal(vms_exit_reason_name(1, 32), "MSR_WRITE");
	const struct vms_dist *d = vs->exits[0].dist;
	assert_int_equal(vms_dist_count(d), 5);
	assert_int_equal(vms_dist_sum(d), 165);
	assert_int_equal(vms_dist_min(d), 15);
	assert_int_equal(vms_dist_max(d), 60);
	assert_int_equal(vms_dist_percentile(d, 50), 15);
	assert_int_equal(vms_dist_percentile(d, 90), 60);
	assert_int_equal(vms_dist_percentile(d, 99), 60);
	assert_int_equal(vs->exits_unpaired, 0);
	uint32_t ng;
	const struct vms_exit_stats *ge = vms_analysis_guest_exits(x.an, 1, &ng);
	assert_int_equal(ng, 1);
	assert_int_equal(vms_dist_sum(ge[0].dist), 165);
	assert_int_equal(vs->nr_steal, 1);
	assert_int_equal(vs->steal[0].host_tid, 30);
	assert_string_equal(vs->steal[0].comm, "any");
	assert_int_equal(vs->steal[0].ns, 100);
	assert_int_equal(vms_dist_count(vs->runq_latency), 0);
	assert_int_equal(vs->contained, 13);
	assert_int_equal(vs->contain_total, 13);
	const struct vms_machine *g = vms_model_machine_c(x.model, 1);
	assert_true(g->sync.has_containment);
	assert_int_equal(g->sync.contained, 13);
	assert_int_equal(g->sync.contain_total, 13);
	xml_run_free(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_model, setup),
		cmocka_unit_test_setup(test_vcpu_intervals, setup),
		cmocka_unit_test_setup(test_thread_overlays, setup),
		cmocka_unit_test_setup(test_exits_steal_containment, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
