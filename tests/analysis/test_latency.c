/* Wake-up latency decomposed (include/vmscope/latency.h) on a small host + guest pair written
 * here as Trace Compass XML stubs, each breakdown worked out by hand below.
 *
 * The host: CPU 0 runs host thread 10 (vCPU 0), CPU 1 runs 11 (vCPU 1), both switched in at
 * 0 and entering guest mode at 1 (--map g:0=10,1=11). No vmsync: the two traces keep their
 * own clocks (both in ns). The host trace's last event is at 112.
 *
 *   wake-up  thread  target  what the target vCPU did in [wakeup, run)         breakdown
 *   20..30   200 a   vCPU 0  worker (100) runs                                 guest-runqueue 10
 *   40..55   300 b   vCPU 0  a runs [40,42), host 'stress' (20) takes CPU 0     guest-runqueue 7,
 *                            [42,50) (thread 10 left runnable), a again         preempted 8
 *   60..73   400 c   vCPU 0  b runs [60,62), EPT_VIOLATION exit [62,70),        guest-runqueue 5,
 *                            b again [70,73)                                    exits 8
 *   90..100  600 d   vCPU 1  woken from vCPU 0 (cross-vCPU); vCPU 1 went idle   halted-wakeup 7,
 *                            at 80, HLT exit at 82; kvm_vcpu_wakeup at 95 with   guest-runqueue 3
 *                            ns 10 (polling): halted [85,95), HLT handling
 *                            [95,97); idle in the guest [97,100)
 *   110..120 700 e   vCPU 1  d runs [110,112); the host's trace ends at 112:     guest-runqueue 2,
 *                            nothing known [112,120)                            unknown 8
 *   75..78   300 b   vCPU 0  c runs [75,78); b was woken at 65 too, while it    guest-runqueue 3
 *                            was running: the kernel's wake-up of a task that
 *                            has not yet left its CPU is no wait (perf sched
 *                            latency ignores it too); counted from 65 the
 *                            latency would be 13
 */
#include <stdio.h>
#include <string.h>

#include "an_test.h"
#include "vmscope/latency.h"
#include "vmscope/session.h"

static void ev_switch(FILE *f, uint64_t t, int cpu, int prev, int state, int next, const char *nc)
{
	fprintf(f, "<event timestamp=\"%llu\" name=\"sched_switch\">\n"
		"<field name=\"cpu\" value=\"%d\" type=\"int\" />\n"
		"<field name=\"prev_comm\" value=\"p\" type=\"string\" />\n"
		"<field name=\"prev_tid\" value=\"%d\" type=\"long\" />\n"
		"<field name=\"prev_state\" value=\"%d\" type=\"long\" />\n"
		"<field name=\"next_comm\" value=\"%s\" type=\"string\" />\n"
		"<field name=\"next_tid\" value=\"%d\" type=\"long\" />\n</event>\n",
		(unsigned long long)t, cpu, prev, state, nc, next);
}

static void ev_kvm(FILE *f, uint64_t t, int cpu, const char *name, int reason)
{
	fprintf(f, "<event timestamp=\"%llu\" name=\"%s\">\n"
		"<field name=\"cpu\" value=\"%d\" type=\"int\" />\n"
		"<field name=\"vcpu_id\" value=\"%d\" type=\"long\" />\n"
		"<field name=\"exit_reason\" value=\"%d\" type=\"long\" />\n"
		"<field name=\"isa\" value=\"1\" type=\"int\" />\n</event>\n",
		(unsigned long long)t, name, cpu, cpu, reason);
}

static void ev_wakeup(FILE *f, uint64_t t, int cpu, int tid, const char *comm, int target)
{
	fprintf(f, "<event timestamp=\"%llu\" name=\"sched_wakeup\">\n"
		"<field name=\"cpu\" value=\"%d\" type=\"int\" />\n"
		"<field name=\"tid\" value=\"%d\" type=\"long\" />\n"
		"<field name=\"comm\" value=\"%s\" type=\"string\" />\n"
		"<field name=\"target_cpu\" value=\"%d\" type=\"long\" />\n</event>\n",
		(unsigned long long)t, cpu, tid, comm, target);
}

static void write_pair(const char *dir, char *host, char *guest, size_t len)
{
	snprintf(host, len, "%s/host.xml", dir);
	snprintf(guest, len, "%s/guest.xml", dir);
	FILE *h = fopen(host, "w"), *g = fopen(guest, "w");
	assert_non_null(h);
	assert_non_null(g);
	fputs("<trace>\n", h);
	ev_switch(h, 0, 0, 0, 0, 10, "CPU 0/KVM");
	ev_switch(h, 0, 1, 0, 0, 11, "CPU 1/KVM");
	ev_kvm(h, 1, 0, "kvm_entry", 0);
	ev_kvm(h, 1, 1, "kvm_entry", 0);
	ev_switch(h, 42, 0, 10, 0, 20, "stress");
	ev_switch(h, 50, 0, 20, 1, 10, "CPU 0/KVM");
	ev_kvm(h, 62, 0, "kvm_exit", 48);
	ev_kvm(h, 70, 0, "kvm_entry", 0);
	ev_kvm(h, 82, 1, "kvm_exit", 12);
	fputs("<event timestamp=\"95\" name=\"kvm_vcpu_wakeup\">\n"
	      "<field name=\"cpu\" value=\"1\" type=\"int\" />\n"
	      "<field name=\"ns\" value=\"10\" type=\"long\" />\n"
	      "<field name=\"waited\" value=\"0\" type=\"int\" />\n"
	      "<field name=\"valid\" value=\"1\" type=\"int\" />\n</event>\n", h);
	ev_kvm(h, 97, 1, "kvm_entry", 0);
	ev_switch(h, 112, 3, 0, 0, 30, "other");
	fputs("</trace>\n", h);
	fputs("<trace>\n", g);
	ev_switch(g, 10, 0, 0, 0, 100, "worker");
	ev_switch(g, 10, 1, 0, 0, 500, "db");
	ev_wakeup(g, 20, 0, 200, "a", 0);
	ev_switch(g, 30, 0, 100, 1, 200, "a");
	ev_wakeup(g, 40, 0, 300, "b", 0);
	ev_switch(g, 55, 0, 200, 1, 300, "b");
	ev_wakeup(g, 60, 0, 400, "c", 0);
	ev_wakeup(g, 65, 0, 300, "b", 0);
	ev_switch(g, 73, 0, 300, 1, 400, "c");
	ev_wakeup(g, 75, 0, 300, "b", 0);
	ev_switch(g, 78, 0, 400, 1, 300, "b");
	ev_switch(g, 80, 1, 500, 1, 0, "swapper/1");
	ev_wakeup(g, 90, 0, 600, "d", 1);
	ev_switch(g, 100, 1, 0, 0, 600, "d");
	ev_wakeup(g, 110, 1, 700, "e", 1);
	ev_switch(g, 120, 1, 600, 1, 700, "e");
	fputs("</trace>\n", g);
	fclose(h);
	fclose(g);
}

#define MAXW 16
struct got {
	struct vms_wakeup w[MAXW];
	uint32_t n;
};

static void collect(void *ctx, const struct vms_wakeup *w)
{
	struct got *g = ctx;
	assert_true(g->n < MAXW);
	g->w[g->n++] = *w;
}

static const struct vms_wakeup *find_at(const struct got *g, int32_t tid, uint64_t from)
{
	for (uint32_t i = 0; i < g->n; i++)
		if (g->w[i].tid == tid && g->w[i].wakeup >= from)
			return &g->w[i];
	fail_msg("no wake-up of thread %d from %llu on", tid, (unsigned long long)from);
	return NULL;
}

static const struct vms_wakeup *find(const struct got *g, int32_t tid)
{
	return find_at(g, tid, 0);
}

static void expect(const struct vms_wakeup *w, uint64_t wake, uint64_t run, uint32_t vcpu,
		   int32_t waker, const uint64_t ns[VMS_CAUSE_COUNT], enum vms_cause top,
		   const char *culprit)
{
	print_message("# tid %d [%llu,%llu) vCPU %u waker %d: rq %llu pre %llu ex %llu halt %llu "
		      "unk %llu, top %s, culprit '%s'\n", w->tid, (unsigned long long)w->wakeup,
		      (unsigned long long)w->run, w->vcpu, w->waker_vcpu,
		      (unsigned long long)w->ns[0], (unsigned long long)w->ns[1],
		      (unsigned long long)w->ns[2], (unsigned long long)w->ns[3],
		      (unsigned long long)w->ns[4], vms_cause_name(w->top), w->culprit);
	assert_int_equal(w->wakeup, wake);
	assert_int_equal(w->run, run);
	assert_int_equal(w->latency, run - wake);
	assert_int_equal(w->vcpu, vcpu);
	assert_int_equal(w->waker_vcpu, waker);
	uint64_t sum = 0;
	for (int k = 0; k < VMS_CAUSE_COUNT; k++) {
		assert_int_equal(w->ns[k], ns[k]);
		sum += w->ns[k];
	}
	assert_int_equal(sum, w->latency);
	assert_int_equal(w->top, top);
	assert_string_equal(w->culprit, culprit);
}

static void test_breakdowns(void **state)
{
	(void)state;
	const char *dir = vms_test_tmpdir("latency");
	char host[2100], guest[2100];
	write_pair(dir, host, guest, sizeof host);
	const char *paths[1] = { host };
	const char *gn[1] = { "g" }, *gp[1] = { guest }, *mg[2] = { "g", "g" };
	uint32_t mv[2] = { 0, 1 };
	int32_t mt[2] = { 10, 11 };
	struct vms_session_opts o = { .nr_guests = 1, .guest_names = gn, .guest_paths = gp,
				      .nr_maps = 2, .map_guest = mg, .map_vcpu = mv, .map_tid = mt };
	struct vms_error err = { 0 };
	struct vms_session *s = vms_session_open(paths, 1, &o, &err);
	if (!s)
		fail_msg("%s", err.msg);
	assert_int_equal(vms_session_build_model(s, &err), 0);
	struct got got = { .n = 0 };
	struct vms_observer obs;
	struct vms_latency *l = vms_latency_new(vms_session_model(s), collect, &got, &obs);
	assert_non_null(l);
	assert_int_equal(vms_session_observe(s, &obs), 0);
	if (vms_session_run(s, NULL, NULL, NULL, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(got.n, 6);
	/*                              rq  pre  ex  halt unk */
	static const uint64_t a[] = { 10, 0, 0, 0, 0 }, b[] = { 7, 8, 0, 0, 0 },
			      c[] = { 5, 0, 8, 0, 0 }, d[] = { 3, 0, 0, 7, 0 },
			      e[] = { 2, 0, 0, 0, 8 }, b2[] = { 3, 0, 0, 0, 0 };
	expect(find(&got, 200), 20, 30, 0, 0, a, VMS_CAUSE_GUEST_RUNQUEUE, "worker (tid 100)");
	expect(find(&got, 300), 40, 55, 0, 0, b, VMS_CAUSE_PREEMPTED, "host stress (tid 20)");
	expect(find(&got, 400), 60, 73, 0, 0, c, VMS_CAUSE_EXITS, "exit:EPT_VIOLATION");
	assert_int_equal(find(&got, 400)->exit_reason, 48);
	expect(find(&got, 600), 90, 100, 1, 0, d, VMS_CAUSE_HALTED_WAKEUP, "halted vCPU");
	expect(find(&got, 700), 110, 120, 1, 1, e, VMS_CAUSE_UNKNOWN, "");
	expect(find_at(&got, 300, 56), 75, 78, 0, 0, b2, VMS_CAUSE_GUEST_RUNQUEUE, "c (tid 400)");
	/* per thread: one wake-up each (b two); the tail (above p99) is empty */
	assert_int_equal(vms_latency_nr_threads(l), 5);
	const struct vms_latency_thread *t = vms_latency_thread(l, 1);
	assert_int_equal(t->tid, 300);
	assert_string_equal(t->comm, "b");
	assert_int_equal(vms_dist_count(t->dist), 2);
	assert_int_equal(vms_dist_max(t->dist), 15);
	assert_int_equal(t->tail_count, 0);
	vms_session_free(s);
	vms_latency_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_breakdowns),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
