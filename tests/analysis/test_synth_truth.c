/* The analyses against an independent implementation: `vmscope synth` (lib/synth, written
 * by another hand from the same spec) plants vCPU states, exits, steal and run-queue
 * waits in a simulated trace-cmd host + guest pair and records what it planted (struct
 * vms_synth_truth, host ns). vmscope reads the files back through the whole pipeline
 * (trace.dat reader, TIME_SHIFT clocks, merge) and must find the same numbers. */
#include <sys/stat.h>

#include "an_test.h"
#include "vmscope/session.h"
#include "vmscope/synth.h"

static const struct { enum vms_synth_state s; enum vms_vcpu_state v; } state_map[] = {
	{VMS_SYNTH_UNKNOWN, VMS_STATE_UNKNOWN}, {VMS_SYNTH_IDLE, VMS_STATE_IDLE},
	{VMS_SYNTH_RUNNING, VMS_STATE_RUNNING}, {VMS_SYNTH_VMM, VMS_STATE_VMM},
	{VMS_SYNTH_PREEMPTED, VMS_STATE_PREEMPTED}, {VMS_SYNTH_HALTED, VMS_STATE_HALTED},
};

static void run_scenario(const char *scenario, uint64_t seed)
{
	char dir[2048], host[2100], guest[2100];
	snprintf(dir, sizeof dir, "%s/test-tmp", vms_test_build());
	mkdir(dir, 0777);
	snprintf(dir, sizeof dir, "%s/test-tmp/synth-truth-%s", vms_test_build(), scenario);
	mkdir(dir, 0777);
	snprintf(host, sizeof host, "%s/host.dat", dir);
	snprintf(guest, sizeof guest, "%s/guest.dat", dir);
	struct vms_synth_config cfg;
	vms_synth_config_init(&cfg);
	cfg.scenario = scenario;
	cfg.seed = seed;
	cfg.events = 60000;
	cfg.host_path = host;
	cfg.guest_path = guest;
	static struct vms_synth_truth tr;
	struct vms_error err = {0};
	if (vms_synth_run(&cfg, &tr, &err) != 0)
		fail_msg("synth: %s", err.msg);
	const char *paths[2] = {host, guest};
	struct vms_session *s = vms_session_open(paths, 2, NULL, &err);
	if (!s)
		fail_msg("%s", err.msg);
	if (vms_session_run(s, NULL, NULL, NULL, &err) != 0)
		fail_msg("%s", err.msg);
	struct vms_model *m = vms_session_model(s);
	struct vms_analysis *an = vms_session_analysis(s);
	assert_int_equal(vms_model_nr_machines(m), 2);
	const struct vms_machine *g = vms_model_machine_c(m, 1);
	assert_string_equal(g->name, tr.guest_name);
	assert_int_equal(g->nr_vcpus, tr.nr_vcpus);
	/* the VMM's process: the recording shows QEMU's exec and its vCPU threads' creation (the
	 * trace.dat has no tgid anywhere, so nothing else could name it) */
	assert_int_equal(g->host_pid, tr.qemu_pid);
	assert_string_equal(tr.qemu_pid_how, "exec");
	assert_int_equal(g->host_pid_how, VMS_PID_EXEC);
	assert_int_equal(g->sync.contained, g->sync.contain_total);
	assert_int_equal(g->sync.contain_total, tr.guest.total);
	assert_int_equal(vms_analysis_nr_vcpus(an), tr.nr_vcpus);
	for (uint32_t i = 0; i < tr.nr_vcpus; i++) {
		const struct vms_synth_vcpu_truth *tv = &tr.vcpu[i];
		const struct vms_vcpu_stats *vs = vms_analysis_vcpu(an, i);
		assert_int_equal(vs->vcpu, tv->vcpu);
		assert_int_equal(vs->host_tid, tv->host_tid);
		assert_int_equal(vs->first, tr.window_start_ns);
		assert_int_equal(vs->last, tr.window_end_ns);
		for (size_t k = 0; k < sizeof state_map / sizeof state_map[0]; k++)
			if (vs->ns[state_map[k].v] != tv->ns[state_map[k].s])
				fail_msg("vCPU %u %s: %llu, planted %llu", i,
					 vms_vcpu_state_name(state_map[k].v),
					 (unsigned long long)vs->ns[state_map[k].v],
					 (unsigned long long)tv->ns[state_map[k].s]);
		/* halted, not the hypervisor's: the polling part of the halts, and the time in
		 * exits; the guest's recording stopped before the host's */
		assert_int_equal(vs->halt_poll_ns, tv->halt_poll_ns);
		assert_true(tv->halt_poll_ns > 0);
		assert_int_equal(vs->hypervisor_ns, tv->ns[VMS_SYNTH_VMM]);
		assert_true(tv->guest_end_ns > 0 && tv->guest_end_ns < tr.window_end_ns);
		assert_true(tv->ns[VMS_SYNTH_UNKNOWN] > 0);
		assert_int_equal(vs->nr_exits, tv->nr_exits);
		for (uint32_t k = 0; k < tv->nr_exits; k++) {
			const struct vms_exit_stats *e = NULL;
			for (uint32_t j = 0; j < vs->nr_exits; j++)
				if (vs->exits[j].reason == tv->exits[k].reason)
					e = &vs->exits[j];
			assert_non_null(e);
			assert_int_equal(e->isa, 1);
			assert_string_equal(vms_exit_reason_name(1, e->reason), tv->exits[k].name);
			assert_int_equal(vms_dist_count(e->dist), tv->exits[k].count);
			assert_int_equal(e->count, tv->exits[k].count);
			assert_int_equal(e->unfinished, 0);
			assert_int_equal(vms_dist_sum(e->dist), tv->exits[k].total_ns);
		}
		assert_int_equal(vs->nr_steal, tv->nr_steal);
		for (uint32_t k = 0; k < tv->nr_steal; k++) {
			const struct vms_steal_entry *st = NULL;
			for (uint32_t j = 0; j < vs->nr_steal; j++)
				if (vs->steal[j].host_tid == tv->steal[k].tid)
					st = &vs->steal[j];
			assert_non_null(st);
			assert_string_equal(st->comm, tv->steal[k].comm);
			assert_int_equal(st->ns, tv->steal[k].ns);
		}
		assert_int_equal(vms_dist_count(vs->runq_latency), tv->wakeups);
		assert_int_equal(vms_dist_sum(vs->runq_latency), tv->runq_latency_ns);
	}
	for (uint32_t k = 0; k < tr.nr_gthreads; k++) {
		const struct vms_synth_gthread_truth *tg = &tr.gthread[k];
		const struct vms_gthread_stats *gs = NULL;
		for (uint32_t j = 0; j < vms_analysis_nr_gthreads(an); j++)
			if (vms_analysis_gthread(an, j)->tid == tg->tid)
				gs = vms_analysis_gthread(an, j);
		if (!gs)
			fail_msg("guest thread %d not found", tg->tid);
		assert_string_equal(gs->comm, tg->comm);
		assert_int_equal(gs->ns_running, tg->running_ns);
		assert_int_equal(gs->ns_vmm, tg->vmm_ns);
		assert_int_equal(gs->ns_preempted, tg->preempted_ns);
		assert_int_equal(gs->ns_halted, tg->halted_ns);
	}
	vms_session_free(s);
}

static void test_noisy_neighbour(void **state)
{
	(void)state;
	run_scenario("noisy-neighbour", 11);
}

static void test_quiet(void **state)
{
	(void)state;
	run_scenario("quiet", 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_noisy_neighbour),
		cmocka_unit_test(test_quiet),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
