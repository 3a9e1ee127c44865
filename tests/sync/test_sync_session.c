/* The model pass with matched events, through the session: two machines whose own clocks
 * are two hours apart (a guest's boot clock, say), 400 messages at 1 ms, and a matcher that
 * may keep only 16 unmatched events. Read in their own clocks' order, every message's two
 * events would be two hours apart and all but 16 forgotten; the model pass reads them aligned
 * on their starts, so all 400 pair up (none expired) and the hull is accurate, with the
 * offset the messages were written with (within the 10-50 us latencies).
 *
 * Then the clock model on OneQemuKvm (../shared/traces/tracecompass-vm), through the session:
 * its guest and host, by hand (the derivation is in tests/analysis/test_pcpu_view.c):
 * feasible offsets [-10, 10] ns, all 13 guest events inside guest mode for [-5, 5], offset
 * 0, found by one pass of its own after the model pass. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmscope/session.h"
#include "vmscope/sync.h"

#define OFFSET 7200000000000ull /* B = A + 2 h */

static void event(FILE *f, uint64_t ts, const char *name, uint64_t seq)
{
	fprintf(f, "<event timestamp=\"%llu\" name=\"%s\">\n<field name=\"cpu\" value=\"0\" type=\"int\" />\n"
		   "<field name=\"seq\" value=\"%llu\" type=\"long\" />\n<field name=\"ack_seq\" value=\"1\" "
		   "type=\"long\" />\n<field name=\"flags\" value=\"24\" type=\"long\" />\n</event>\n",
		(unsigned long long)ts, name, (unsigned long long)seq);
}

static void test_offset_clocks(void **state)
{
	(void)state;
	char dir[] = "/tmp/vms-sync-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char pa[64], pb[64];
	snprintf(pa, sizeof pa, "%s/A.xml", dir);
	snprintf(pb, sizeof pb, "%s/B.xml", dir);
	FILE *a = fopen(pa, "w"), *b = fopen(pb, "w");
	assert_true(a && b);
	fputs("<trace>\n", a);
	fputs("<trace>\n", b);
	/* message i at A time 1e9 + i ms: even ones A -> B (latency 10 us + i ns), odd ones
	 * B -> A (latency 50 us - i ns); in each file, times increase */
	for (uint64_t i = 0; i < 400; i++) {
		uint64_t t = 1000000000ull + i * 1000000;
		if (i % 2 == 0) {
			event(a, t, "inet_sock_local_out", i);
			event(b, t + 10000 + i + OFFSET, "inet_sock_local_in", i);
		} else {
			event(b, t + OFFSET, "inet_sock_local_out", i);
			event(a, t + 50000 - i, "inet_sock_local_in", i);
		}
	}
	fputs("</trace>\n", a);
	fputs("</trace>\n", b);
	assert_int_equal(fclose(a), 0);
	assert_int_equal(fclose(b), 0);
	const char *paths[2] = { pa, pb };
	struct vms_session_opts o = { .match_cap = 16 };
	struct vms_error err = { 0 };
	struct vms_session *s = vms_session_open(paths, 2, &o, &err);
	if (!s)
		fail_msg("%s", err.msg);
	if (vms_session_build_model(s, &err) < 0)
		fail_msg("%s", err.msg);
	struct vms_model *m = vms_session_model(s);
	const struct vms_match_stats *st = vms_model_match_stats(m);
	assert_non_null(st);
	assert_int_equal(st->matched, 400);
	assert_int_equal(st->expired, 0);
	const struct vms_machine *mb = vms_model_machine_c(m, 1);
	assert_int_equal(mb->sync.method, VMS_SYNC_HULL);
	assert_int_equal(mb->sync.quality, VMS_SYNC_Q_ACCURATE);
	assert_int_equal(mb->sync.pairs, 400);
	/* B's time of A's 1.2 s is 1.2 s + 2 h; the transform brings it back within the
	 * latencies (10-50 us) */
	uint64_t t = vms_clock_to_ref(&mb->clock, 0, 1200000000ull + OFFSET);
	assert_true(t > 1200000000ull - 50000 && t < 1200000000ull + 50000);
	vms_session_free(s);
	unlink(pa);
	unlink(pb);
	rmdir(dir);
}

static void test_onequemukvm_offset(void **state)
{
	(void)state;
	const char *paths[2] = { vms_test_trace("tracecompass-vm/OneQemuKvm/host.xml"),
				 vms_test_trace("tracecompass-vm/OneQemuKvm/guest.xml") };
	VMS_REQUIRE_TRACE(paths[0]);
	VMS_REQUIRE_TRACE(paths[1]);
	struct vms_error err = { 0 };
	struct vms_session *s = vms_session_open(paths, 2, NULL, &err);
	if (!s)
		fail_msg("%s", err.msg);
	if (vms_session_build_model(s, &err) < 0)
		fail_msg("%s", err.msg);
	/* the model pass, then the offset search's own */
	assert_int_equal(vms_session_passes(s), 2);
	struct vms_model *m = vms_session_model(s);
	const struct vms_machine *g = vms_model_machine_c(m, 1);
	const struct vms_sync_info *si = &g->sync;
	assert_int_equal(si->method, VMS_SYNC_HULL);
	assert_true(si->offset_only && si->applied);
	assert_int_equal(si->offset_how, VMS_OFFSET_SEARCHED);
	assert_true(si->feasible_lo_ns == -10.0 && si->feasible_hi_ns == 10.0);
	assert_true(si->search_lo_ns == -5.0 && si->search_hi_ns == 5.0);
	assert_int_equal(si->search_inside, 13);
	assert_true(si->offset_ns == 0.0 && si->slope == 1.0);
	for (uint64_t t = 0; t < 400; t++)
		assert_int_equal(vms_clock_to_ref(&g->clock, 0, t), t);
	if (vms_session_run(s, NULL, NULL, NULL, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(si->contained, 13);
	assert_int_equal(si->contain_total, 13);
	vms_session_free(s);
	/* --clock-model linear: the hull, as Trace Compass (no search pass) */
	struct vms_session_opts o = { .clock_model = VMS_CLOCK_MODEL_LINEAR };
	s = vms_session_open(paths, 2, &o, &err);
	if (!s || vms_session_build_model(s, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(vms_session_passes(s), 1);
	g = vms_model_machine_c(vms_session_model(s), 1);
	assert_false(g->sync.offset_only);
	assert_int_equal(vms_clock_to_ref(&g->clock, 0, 375), 376);
	vms_session_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offset_clocks),
		cmocka_unit_test(test_onequemukvm_offset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
