/* Round trip: what `vmscope synth` planted is what the analysis reports.
 *
 * The synthesizer keeps its own books while it generates (per vCPU: ns per state with the
 * spec's precedence, exits per reason, steal per host thread; per guest thread: running, vmm,
 * preempted, halted; event counts per type) without ever reading the files back. The
 * analysis only sees the two trace.dat files. Both sides must agree exactly. */
#include "testutil.h"

#include "vmscope/session.h"
#include "vmscope/synth.h"

struct pair {
	char host[4096], guest[4096];
	struct vms_synth_truth truth;
};

static struct pair *make_pair(const char *scenario, uint64_t seed, uint64_t events,
			      bool scaling)
{
	struct pair *p = calloc(1, sizeof *p);
	char name[64];
	snprintf(name, sizeof name, "roundtrip-%s-%llu", scenario, (unsigned long long)seed);
	const char *dir = vms_test_tmpdir(name);
	snprintf(p->host, sizeof p->host, "%.2048s/host.dat", dir);
	snprintf(p->guest, sizeof p->guest, "%.2048s/guest.dat", dir);
	struct vms_synth_config cfg;
	vms_synth_config_init(&cfg);
	cfg.scenario = scenario;
	cfg.seed = seed;
	cfg.events = events;
	cfg.host_path = p->host;
	cfg.guest_path = p->guest;
	cfg.tsc_scaling = scaling;
	struct vms_error err = { 0 };
	if (vms_synth_run(&cfg, &p->truth, &err) < 0)
		fail_msg("synth: %s", err.msg);
	return p;
}

static const struct vms_gthread_stats *find_gthread(struct vms_analysis *a, uint32_t machine,
						     int32_t tid)
{
	for (uint32_t i = 0; i < vms_analysis_nr_gthreads(a); i++) {
		const struct vms_gthread_stats *t = vms_analysis_gthread(a, i);
		if (t->machine == machine && t->tid == tid)
			return t;
	}
	return NULL;
}

static void check_pair(const struct pair *p)
{
	const struct vms_synth_truth *tr = &p->truth;
	const char *paths[2] = { p->host, p->guest };
	struct vms_error err = { 0 };
	struct vms_session *s = vms_session_open(paths, 2, NULL, &err);
	if (!s)
		fail_msg("open: %s", err.msg);
	if (vms_session_run(s, NULL, NULL, NULL, &err) < 0)
		fail_msg("run: %s", err.msg);
	struct vms_model *m = vms_session_model(s);
	struct vms_analysis *a = vms_session_analysis(s);

	/* every event read, per type */
	uint64_t total = vms_session_events(s);
	assert_int_equal(total, tr->host.total + tr->guest.total);

	/* the model: roles, the guest's name from the GUEST option, the vCPU map */
	const struct vms_machine *host = vms_model_machine_c(m, 0);
	const struct vms_machine *guest = vms_model_machine_c(m, 1);
	assert_true(host->role & VMS_ROLE_HOST);
	assert_true(guest->role & VMS_ROLE_GUEST);
	assert_string_equal(guest->name, tr->guest_name);
	assert_int_equal(guest->host, 0);
	assert_int_equal(guest->nr_vcpus, tr->nr_vcpus);
	for (uint32_t v = 0; v < tr->nr_vcpus; v++) {
		assert_int_equal(guest->vcpus[v].host_tid, tr->vcpu[v].host_tid);
		assert_int_equal(guest->vcpus[v].how, VMS_LINK_GUEST_OPTION);
	}
	/* time: TIME_SHIFT, and every guest event inside its guest-mode window */
	assert_int_equal(guest->sync.method, VMS_SYNC_TIMESHIFT);
	assert_true(guest->sync.has_containment);
	assert_int_equal(guest->sync.contained, guest->sync.contain_total);
	assert_true(guest->sync.contain_total > 0);

	/* per vCPU: states, exits, steal */
	uint32_t seen = 0;
	for (uint32_t i = 0; i < vms_analysis_nr_vcpus(a); i++) {
		const struct vms_vcpu_stats *vs = vms_analysis_vcpu(a, i);
		if (vs->machine != 1)
			continue;
		seen++;
		const struct vms_synth_vcpu_truth *vt = &tr->vcpu[vs->vcpu];
		static const struct { enum vms_vcpu_state a; enum vms_synth_state t; } map[] = {
			{ VMS_STATE_UNKNOWN, VMS_SYNTH_UNKNOWN }, { VMS_STATE_IDLE, VMS_SYNTH_IDLE },
			{ VMS_STATE_RUNNING, VMS_SYNTH_RUNNING }, { VMS_STATE_VMM, VMS_SYNTH_VMM },
			{ VMS_STATE_PREEMPTED, VMS_SYNTH_PREEMPTED }, { VMS_STATE_HALTED, VMS_SYNTH_HALTED },
		};
		for (size_t k = 0; k < sizeof map / sizeof map[0]; k++) {
			if (vs->ns[map[k].a] != vt->ns[map[k].t])
				fail_msg("vCPU %u %s: analysis %llu ns, planted %llu ns", vs->vcpu,
					 vms_vcpu_state_name(map[k].a), (unsigned long long)vs->ns[map[k].a],
					 (unsigned long long)vt->ns[map[k].t]);
		}
		for (uint32_t r = 0; r < vt->nr_exits; r++) {
			const struct vms_synth_exit_stat *te = &vt->exits[r];
			const struct vms_exit_stats *ae = NULL;
			for (uint32_t k = 0; k < vs->nr_exits; k++)
				if (vs->exits[k].isa == 1 && vs->exits[k].reason == te->reason)
					ae = &vs->exits[k];
			if (te->count == 0)
				continue;
			if (!ae)
				fail_msg("vCPU %u: exit %s planted, not reported", vs->vcpu, te->name);
			assert_int_equal(vms_dist_count(ae->dist), te->count);
			assert_int_equal(vms_dist_sum(ae->dist), te->total_ns);
		}
		for (uint32_t k = 0; k < vt->nr_steal; k++) {
			const struct vms_steal_entry *ae = NULL;
			for (uint32_t j = 0; j < vs->nr_steal; j++)
				if (vs->steal[j].host_tid == vt->steal[k].tid)
					ae = &vs->steal[j];
			if (vt->steal[k].ns == 0)
				continue;
			if (!ae)
				fail_msg("vCPU %u: steal by %d planted, not reported", vs->vcpu, vt->steal[k].tid);
			assert_int_equal(ae->ns, vt->steal[k].ns);
		}
		if (vt->wakeups)
			assert_int_equal(vms_dist_count(vs->runq_latency), vt->wakeups);
		if (vt->wakeups)
			assert_int_equal(vms_dist_sum(vs->runq_latency), vt->runq_latency_ns);
	}
	assert_int_equal(seen, tr->nr_vcpus);

	/* per guest thread */
	for (uint32_t i = 0; i < tr->nr_gthreads; i++) {
		const struct vms_synth_gthread_truth *gt = &tr->gthread[i];
		const struct vms_gthread_stats *at = find_gthread(a, 1, gt->tid);
		if (!at)
			fail_msg("guest thread %d planted, not reported", gt->tid);
		assert_int_equal(at->ns_running, gt->running_ns);
		assert_int_equal(at->ns_vmm, gt->vmm_ns);
		assert_int_equal(at->ns_preempted, gt->preempted_ns);
		assert_int_equal(at->ns_halted, gt->halted_ns);
	}
	vms_session_free(s);
}

static void test_noisy_neighbour_scaled(void **state)
{
	(void)state;
	struct pair *p = make_pair("noisy-neighbour", 1, 40000, true);
	check_pair(p);
	free(p);
}

static void test_noisy_neighbour_other_seed(void **state)
{
	(void)state;
	struct pair *p = make_pair("noisy-neighbour", 977, 60000, true);
	check_pair(p);
	free(p);
}

static void test_quiet_unscaled(void **state)
{
	(void)state;
	struct pair *p = make_pair("quiet", 3, 30000, false);
	check_pair(p);
	free(p);
}

/* The checked single pass and the model pass give the same results; the single pass reads
 * the data once when the metadata already links everything, twice when the events link
 * more (the analysis is run again). Expected pass counts: the synthesized pair has complete
 * GUEST options (1 pass); kvm-hip24's host runs two untraced guests that only kvm_entry
 * reveals (2); the local trace has no KVM events at all (1). */
static void compare_routes(const char *const *paths, uint32_t n, uint64_t want_passes)
{
	struct vms_error err = { 0 };
	struct vms_session *a = vms_session_open(paths, n, NULL, &err);
	struct vms_session *b = vms_session_open(paths, n, NULL, &err);
	if (!a || !b)
		fail_msg("open: %s", err.msg);
	if (vms_session_run(a, NULL, NULL, NULL, &err) < 0)
		fail_msg("run: %s", err.msg);
	assert_int_equal(vms_session_passes(a), want_passes);
	if (vms_session_build_model(b, &err) < 0 || vms_session_run(b, NULL, NULL, NULL, &err) < 0)
		fail_msg("run: %s", err.msg);
	struct vms_analysis *x = vms_session_analysis(a), *y = vms_session_analysis(b);
	assert_int_equal(vms_model_nr_machines(vms_session_model(a)),
			 vms_model_nr_machines(vms_session_model(b)));
	assert_int_equal(vms_analysis_nr_vcpus(x), vms_analysis_nr_vcpus(y));
	for (uint32_t i = 0; i < vms_analysis_nr_vcpus(x); i++) {
		const struct vms_vcpu_stats *u = vms_analysis_vcpu(x, i), *v = vms_analysis_vcpu(y, i);
		assert_int_equal(u->machine, v->machine);
		assert_int_equal(u->vcpu, v->vcpu);
		assert_int_equal(u->host_tid, v->host_tid);
		assert_memory_equal(u->ns, v->ns, sizeof u->ns);
		assert_int_equal(u->nr_exits, v->nr_exits);
		for (uint32_t k = 0; k < u->nr_exits; k++) {
			assert_int_equal(vms_dist_count(u->exits[k].dist), vms_dist_count(v->exits[k].dist));
			assert_int_equal(vms_dist_sum(u->exits[k].dist), vms_dist_sum(v->exits[k].dist));
		}
		assert_int_equal(u->contained, v->contained);
		assert_int_equal(u->contain_total, v->contain_total);
	}
	vms_session_free(a);
	vms_session_free(b);
}

static void test_routes_synth(void **state)
{
	(void)state;
	struct pair *p = make_pair("noisy-neighbour", 5, 30000, true);
	const char *paths[2] = { p->host, p->guest };
	compare_routes(paths, 2, 1);
	free(p);
}

static void test_routes_kvm_hip24(void **state)
{
	(void)state;
	const char *paths[2] = { vms_test_trace("kvm-hip24/host.dat"),
				 vms_test_trace("kvm-hip24/guest-Salamander4.dat") };
	VMS_REQUIRE_TRACE(paths[0]);
	compare_routes(paths, 2, 2);
}

static void test_routes_local(void **state)
{
	(void)state;
	const char *paths[1] = { vms_test_trace("local/sched-syscalls-2cpu.dat") };
	VMS_REQUIRE_TRACE(paths[0]);
	compare_routes(paths, 1, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_noisy_neighbour_scaled),
		cmocka_unit_test(test_noisy_neighbour_other_seed),
		cmocka_unit_test(test_quiet_unscaled),
		cmocka_unit_test(test_routes_synth),
		cmocka_unit_test(test_routes_kvm_hip24),
		cmocka_unit_test(test_routes_local),
	};
	return cmocka_run_group_tests_name("integration", tests, NULL, NULL);
}
