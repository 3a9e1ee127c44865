/* Checkpoints of a xentrace run (issue 21) at the session: a run over the whole of
 * ../shared/traces/xen/xentrace.bin records them (the session no longer refuses a run with a
 * Xen model) and has its Xen model; a windowed run that restores the last checkpoint before
 * its window counts the window's events as the same window replayed from the start does,
 * and has no Xen model (a checkpoint holds none: it would have seen only the events after
 * it), while the replay keeps its own. The windows' answers themselves are compared byte for
 * byte by tests/serve/test_checkpoints.py. */
#include "testutil.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmscope/session.h"
#include "vmscope/xen_model.h"

struct win {
	uint64_t restored, events, first, last;
	bool xen;
};

static struct vms_session *open_one(const char *path, uint64_t from, uint64_t to)
{
	struct vms_error err = { 0 };
	struct vms_session_opts o = { 0 };
	if (to) {
		o.from = (struct vms_time_bound){ .set = true, .ns = from };
		o.to = (struct vms_time_bound){ .set = true, .ns = to };
	}
	struct vms_session *s = vms_session_open(&path, 1, &o, &err);
	if (!s)
		fail_msg("open %s: %s", path, err.msg);
	return s;
}

static struct win window(const char *path, uint64_t from, uint64_t to, const void *ck,
			 size_t len)
{
	struct vms_error err = { 0 };
	struct vms_session *s = open_one(path, from, to);
	if (ck && vms_session_use_checkpoints(s, ck, len, &err) != 0)
		fail_msg("checkpoints: %s", err.msg);
	if (vms_session_run(s, NULL, NULL, NULL, &err) != 0)
		fail_msg("window run: %s", err.msg);
	struct win w = { vms_session_restored(s), vms_session_events(s), vms_session_first_ts(s),
			 vms_session_last_ts(s), vms_session_xen_model(s, 0) != NULL };
	vms_session_free(s);
	return w;
}

static void test_shared(void **state)
{
	(void)state;
	const char *path = vms_test_trace("xen/xentrace.bin");
	if (access(path, R_OK) != 0)
		skip();
	struct vms_error err = { 0 };
	struct vms_session *s = open_one(path, 0, 0);
	vms_session_record_checkpoints(s, 7000);
	if (vms_session_run(s, NULL, NULL, NULL, &err) != 0)
		fail_msg("run: %s", err.msg);
	const struct vms_xen_model *x = vms_session_xen_model(s, 0);
	assert_non_null(x);
	assert_true(vms_xen_model_nr_vcpus(x) > 0);
	size_t len = 0;
	const void *bytes = vms_session_checkpoints(s, &len);
	assert_non_null(bytes);
	assert_true(len > 64);
	void *ck = malloc(len);
	assert_non_null(ck);
	memcpy(ck, bytes, len);
	uint64_t first = vms_session_first_ts(s), last = vms_session_last_ts(s);
	uint64_t events = vms_session_events(s);
	vms_session_free(s);
	assert_int_equal(events, 180493);
	/* windows from a tenth to nine tenths of the trace: all after a checkpoint or more */
	for (int k = 1; k <= 9; k += 2) {
		uint64_t from = first + (last - first) / 10 * (uint64_t)k;
		uint64_t to = from + (last - first) / 20;
		struct win a = window(path, from, to, ck, len);
		struct win b = window(path, from, to, NULL, 0);
		assert_true(a.restored > 0);
		assert_int_equal(a.restored % 7000, 0);
		assert_int_equal(b.restored, 0);
		assert_true(a.events > 0);
		assert_int_equal(a.events, b.events);
		assert_int_equal(a.first, b.first);
		assert_int_equal(a.last, b.last);
		assert_false(a.xen);
		assert_true(b.xen);
		print_message("# window %d/10: %" PRIu64 " events, from the checkpoint after %" PRIu64
			      "\n", k, a.events, a.restored);
	}
	free(ck);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
