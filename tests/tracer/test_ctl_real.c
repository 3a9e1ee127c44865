/* The control socket inside the real libvmstrace: started by vmst_init's socket= item, it
 * reports and changes what the library's own C API reports (the expected values come from
 * vmst_event_get, vmst_file_enabled and the number of events this test emitted), and the
 * statistics count the events this thread recorded. */
#include <sys/stat.h>
#include <sys/syscall.h>

#include "testutil.h"
#include "trace-qemu-style.h"
#include "ctl_client.h"

static const char *sock;

static char *req(const char *line)
{
	char *r = ctl_roundtrip(sock, line);
	if (!r)
		fail_msg("no reply to %s", line);
	return r;
}

static size_t index_of(const char *name)
{
	for (size_t i = 0; i < vmst_event_count(); i++)
		if (!strcmp(vmst_event_name(i), name))
			return i;
	fail_msg("no event %s", name);
	return 0;
}

static void test_real_library(void **state)
{
	(void)state;
	char dir[8192], cfg[9000];
	snprintf(dir, sizeof dir, "%s/test-tmp/ctl-real-%d", vms_test_build(), (int)getpid());
	sock = ctl_test_path("real.sock");
	snprintf(cfg, sizeof cfg, "enable=vmst_test_seq,file=%s,socket=%s", dir, sock);
	assert_int_equal(vmst_init(cfg), 0);

	struct stat st;
	assert_int_equal(lstat(sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);

	/* get: one entry per matching event, in the state the C API says */
	char *r = req("{\"execute\":\"trace-event-get-state\",\"arguments\":{\"name\":\"vmst_test_*\"}}");
	size_t matching = 0;
	for (size_t i = 0; i < vmst_event_count(); i++) {
		const char *nm = vmst_event_name(i);
		if (strncmp(nm, "vmst_test_", 10) != 0)
			continue;
		matching++;
		char want[256];
		snprintf(want, sizeof want, "{\"name\":\"%s\",\"state\":\"%s\"}", nm,
			 vmst_event_get(i) ? "enabled" : "disabled");
		if (!strstr(r, want))
			fail_msg("%s missing from %s", want, r);
	}
	assert_true(matching >= 5);
	assert_non_null(strstr(r, "{\"name\":\"vmst_test_seq\",\"state\":\"enabled\"}"));
	assert_non_null(strstr(r, "{\"name\":\"vmst_test_void\",\"state\":\"disabled\"}"));
	free(r);

	/* set */
	r = req("{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"vmst_test_void\",\"enable\":true}}");
	assert_string_equal(r, "{\"return\":{\"matched\":1}}");
	free(r);
	assert_true(vmst_event_get(index_of("vmst_test_void")));
	r = req("{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"vmst_test_void\",\"enable\":false}}");
	free(r);
	assert_false(vmst_event_get(index_of("vmst_test_void")));

	/* record 1000 events here, flush through the socket, read the statistics */
	for (uint64_t i = 0; i < 1000; i++)
		trace_vmst_test_seq(0, i);
	r = req("{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"flush\"}}");
	assert_non_null(strstr(r, "\"return\""));
	free(r);
	r = req("{\"execute\":\"query-trace-stats\"}");
	char want[128];
	snprintf(want, sizeof want, "{\"tid\":%ld,\"written\":1000,\"dropped\":0}", (long)syscall(SYS_gettid));
	if (!strstr(r, want))
		fail_msg("%s missing from %s", want, r);
	free(r);

	/* file off / on as the C API sees it */
	r = req("{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"off\"}}");
	assert_non_null(strstr(r, "\"enabled\":false"));
	free(r);
	assert_false(vmst_file_enabled());
	r = req("{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"on\"}}");
	assert_non_null(strstr(r, "\"enabled\":true"));
	free(r);
	assert_true(vmst_file_enabled());

	vmst_shutdown();
	assert_int_not_equal(lstat(sock, &st), 0);   /* the socket went with the tracer */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_library),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
