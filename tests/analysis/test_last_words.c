/* The state machine's last words (an_sm_keep_last_words, an_sm_last_words: what a checkpoint
 * holds of a window's gate), against an independent computation: a window gate that never
 * opens (lib/analysis/window.c) subscribed to the same machine sees every observation it
 * publishes and keeps the last of each, as a window's gate does before its start. At many
 * points of real and synthesized traces, the snapshot of a fresh gate told the last words
 * must be the same bytes as that of the gate that saw everything. A kept field the last
 * words miss, a state they hold that is stale, a CPU told in another order: each shows as
 * other bytes. Also: a CPU that cannot be kept (past AN_MAX_CPUS) makes the last words
 * refuse (-1), so that no checkpoint is taken without it. */
#include "testutil.h"
#include "synth_pair.h"

#include <stdlib.h>

#include "analysis/analysis_internal.h"
#include "vmscope/session.h"

static char *gate_bytes(const struct an_gate *g, size_t *len)
{
	char *b = NULL;
	FILE *f = open_memstream(&b, len);
	assert_non_null(f);
	assert_int_equal(an_gate_snapshot(g, f), 0);
	assert_int_equal(fclose(f), 0);
	return b;
}

struct lw {
	struct an_layout L;
	struct an_subs subs, none;
	struct vms_observer seen_obs;
	struct an_gate *seen;       /* the gate that sees every observation */
	struct an_sm *sm;
	uint64_t i, every, compared;
	bool started;
	uint64_t first_diff_at;     /* UINT64_MAX: none */
	char what[200];
};

/* The last words told to a fresh gate, against the gate that saw everything. */
static void compare_now(struct lw *r)
{
	struct vms_observer o;
	struct an_gate *told = an_gate_new(r->L.nr_v, UINT64_MAX, &r->none, &o);
	assert_non_null(told);
	assert_int_equal(an_sm_last_words(r->sm, &o), 0);
	size_t na, nb;
	char *a = gate_bytes(r->seen, &na), *b = gate_bytes(told, &nb);
	if (r->first_diff_at == UINT64_MAX && (na != nb || memcmp(a, b, na))) {
		size_t d = 0;
		while (d < na && d < nb && a[d] == b[d])
			d++;
		r->first_diff_at = r->i;
		snprintf(r->what, sizeof r->what, "%zu/%zu bytes, first difference at byte %zu", na,
			 nb, d);
	}
	r->compared++;
	free(a);
	free(b);
	an_gate_free(told);
}

static void on_ev(void *ctx, const struct vms_event *ev, uint64_t t)
{
	struct lw *r = ctx;
	if (!r->started) {
		an_sm_start(r->sm, t);
		r->started = true;
	}
	an_sm_event(r->sm, ev, t);
	if (++r->i % r->every == 0)
		compare_now(r);
}

static struct lw *run_start(const char *const *paths, uint32_t n, uint64_t every,
			    struct vms_session **sp)
{
	struct vms_error err = { 0 };
	struct vms_session_opts opts = { 0 };
	struct vms_session *s = vms_session_open(paths, n, &opts, &err);
	if (!s)
		fail_msg("%s", err.msg);
	assert_int_equal(vms_session_build_model(s, &err), 0);
	struct lw *r = calloc(1, sizeof *r);
	assert_non_null(r);
	r->every = every;
	r->first_diff_at = UINT64_MAX;
	assert_int_equal(an_layout_init(&r->L, vms_session_model(s)), 0);
	r->seen = an_gate_new(r->L.nr_v, UINT64_MAX, &r->none, &r->seen_obs);
	assert_non_null(r->seen);
	assert_int_equal(an_subs_build(&r->subs, &r->seen_obs, 1), 0);
	r->sm = an_sm_new(&r->L);
	assert_non_null(r->sm);
	an_sm_set_subs(r->sm, &r->subs);
	an_sm_follow_occupants(r->sm, true);
	assert_int_equal(an_sm_keep_last_words(r->sm), 0);
	if (vms_session_iterate(s, on_ev, r, &err) != 0)
		fail_msg("%s", err.msg);
	*sp = s;
	return r;
}

static void run_free(struct lw *r, struct vms_session *s)
{
	an_sm_free(r->sm);
	an_gate_free(r->seen);
	an_subs_free(&r->subs);
	an_layout_free(&r->L);
	free(r);
	vms_session_free(s);
}

/* Compared every `every` events and after the last. */
static void check(const char *const *paths, uint32_t n, uint64_t every)
{
	struct vms_session *s;
	struct lw *r = run_start(paths, n, every, &s);
	compare_now(r);
	if (r->first_diff_at != UINT64_MAX)
		fail_msg("%s: the last words differ from what a gate kept after event %llu: %s",
			 paths[0], (unsigned long long)r->first_diff_at, r->what);
	print_message("# %s: %llu events, compared at %llu points\n", paths[0],
		      (unsigned long long)r->i, (unsigned long long)r->compared);
	assert_true(r->compared >= 3);
	run_free(r, s);
}

static void test_synth(void **state)
{
	(void)state;
	const char *paths[2];
	vms_test_synth_pair("lw-synth", 7, 60000, paths);
	check(paths, 2, 997);
}

static void test_wakeup_scenarios(void **state)
{
	(void)state;
	static const char *const scen[] = { "halted-wakeup", "exit-storm", "oversubscribed" };
	for (size_t i = 0; i < sizeof scen / sizeof *scen; i++) {
		const char *dir = vms_test_tmpdir(scen[i]);
		char host[2300], guest[2300];
		snprintf(host, sizeof host, "%s/host.dat", dir);
		snprintf(guest, sizeof guest, "%s/guest.dat", dir);
		struct vms_synth_config cfg = { .scenario = scen[i], .seed = 3, .events = 40000,
						.host_path = host, .guest_path = guest,
						.tsc_scaling = true };
		struct vms_error err = { 0 };
		if (vms_synth_run(&cfg, NULL, &err) != 0)
			fail_msg("%s", err.msg);
		const char *paths[2] = { host, guest };
		check(paths, 2, 1009);
	}
}

/* L2 vCPUs composed with the L1 vCPUs they run on: their vcpu_instead told of L0's CPU */
static void test_nested(void **state)
{
	(void)state;
	const char *dir = vms_test_tmpdir("lw-nested");
	struct vms_synth_config cfg = { .seed = 5, .events = 40000, .nested_vcpus = 3 };
	struct vms_error err = { 0 };
	uint64_t events;
	if (vms_synth_nested_run(&cfg, dir, NULL, &events, &err) != 0)
		fail_msg("%s", err.msg);
	static char p[3][2300];
	snprintf(p[0], sizeof p[0], "%s/host.dat", dir);
	snprintf(p[1], sizeof p[1], "%s/l1.dat", dir);
	snprintf(p[2], sizeof p[2], "%s/l2.dat", dir);
	const char *paths[3] = { p[0], p[1], p[2] };
	check(paths, 3, 499);
}

static void test_kvm_hip24(void **state)
{
	(void)state;
	const char *paths[2] = { vms_test_trace("kvm-hip24/host.dat"),
				 vms_test_trace("kvm-hip24/guest-Salamander4.dat") };
	VMS_REQUIRE_TRACE(paths[0]);
	check(paths, 2, 5003);
}

static void test_xentrace(void **state)
{
	(void)state;
	const char *paths[1] = { vms_test_trace("xen/xentrace.bin") };
	VMS_REQUIRE_TRACE(paths[0]);
	check(paths, 1, 20011);
}

static void test_onequemukvm(void **state)
{
	(void)state;
	const char *paths[2] = { vms_test_trace("tracecompass-vm/OneQemuKvm/host.xml"),
				 vms_test_trace("tracecompass-vm/OneQemuKvm/guest.xml") };
	VMS_REQUIRE_TRACE(paths[0]);
	check(paths, 2, 3);
}

/* A host CPU past what the state machine keeps (damage, or a 4097-CPU host): the gate would
 * keep it, the last words cannot, so they refuse rather than tell a state without it. */
static void test_cpu_not_kept(void **state)
{
	(void)state;
	const char *paths[2];
	vms_test_synth_pair("lw-cpu", 9, 5000, paths);
	struct vms_session *s;
	struct lw *r = run_start(paths, 2, 1000, &s);
	compare_now(r);
	assert_true(r->first_diff_at == UINT64_MAX);
	uint32_t h = 0;
	while (h < r->L.nr_mach && !r->L.mach[h].host)
		h++;
	assert_true(h < r->L.nr_mach);
	struct vms_event ev = { .kind = VMS_K_SCHED_SWITCH, .machine = h, .cpu = AN_MAX_CPUS,
				.tid = -1, .f = { 1, 0, 2 }, .s = { "a", "b" } };
	an_sm_event(r->sm, &ev, 1);
	struct vms_observer o;
	struct an_gate *told = an_gate_new(r->L.nr_v, UINT64_MAX, &r->none, &o);
	assert_non_null(told);
	assert_int_equal(an_sm_last_words(r->sm, &o), -1);
	an_gate_free(told);
	run_free(r, s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synth),
		cmocka_unit_test(test_wakeup_scenarios),
		cmocka_unit_test(test_nested),
		cmocka_unit_test(test_kvm_hip24),
		cmocka_unit_test(test_xentrace),
		cmocka_unit_test(test_onequemukvm),
		cmocka_unit_test(test_cpu_not_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
