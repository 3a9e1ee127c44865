/* `vmscope ctl` end to end: this program serves a control socket (tracer/control.c over the
 * fake tracer) and runs the built vmscope binary against it. The expected text is written by
 * hand from the fake's state and the output shapes of tools/vmscope/cmd-ctl.c. */
#include <sys/wait.h>

#include "testutil.h"
#include "fake_tracer.h"
#include "ctl_client.h"

static const char *sock_path;
static char vmscope[4200];

static int setup(void **state)
{
	(void)state;
	fake_reset();
	sock_path = ctl_test_path("cli.sock");
	snprintf(vmscope, sizeof vmscope, "%s/tools/vmscope/vmscope", vms_test_build());
	return vmst_control_start(sock_path) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	vmst_control_stop();
	return 0;
}

/* The server thread changed the fake's state for a client in another process, which gives
 * this thread no happens-before edge (ThreadSanitizer rightly sees a race when the test then
 * reads the state). One request of our own over the socket makes the edge: the server
 * answers it after every earlier request, and a socket's write and read synchronize. */
static void sync_with_server(void)
{
	char *reply = ctl_roundtrip(sock_path, "{\"execute\": \"query-trace-stats\"}");
	assert_non_null(reply);
	free(reply);
}

/* Run `vmscope ctl ARGS` (args already shell-quoted); returns the exit status, stdout in out. */
static int ctl(const char *args, char *out, size_t cap)
{
	char cmd[9000];
	snprintf(cmd, sizeof cmd, "'%s' ctl %s 2>/dev/null", vmscope, args);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	int st = pclose(p);
	assert_true(WIFEXITED(st));
	sync_with_server();
	return WEXITSTATUS(st);
}

static void test_get_set(void **state)
{
	(void)state;
	char out[8192], args[4400];
	snprintf(args, sizeof args, "'%s' get 'kvm_*'", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 0);
	assert_string_equal(out, "kvm_entry enabled\nkvm_exit enabled\nkvm_msr enabled\n");

	snprintf(args, sizeof args, "'%s' set 'virtio_*' on", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 0);
	assert_string_equal(out, "2 events enabled\n");
	assert_true(fake.state[3] && fake.state[4]);

	snprintf(args, sizeof args, "'%s' set vcpu_run off", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 0);
	assert_string_equal(out, "1 event disabled\n");

	/* an error reply: exit 1, nothing printed on stdout, nothing changed */
	snprintf(args, sizeof args, "'%s' set 'xen_*' on", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 1);
	assert_string_equal(out, "");

	snprintf(args, sizeof args, "--json '%s' get vcpu_run", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 0);
	assert_string_equal(out, "{\"return\":[{\"name\":\"vcpu_run\",\"state\":\"disabled\"}]}\n");
}

static void test_file_stats_raw(void **state)
{
	(void)state;
	char out[8192], args[4400];
	snprintf(args, sizeof args, "'%s' file on", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 0);
	assert_string_equal(out, "trace file trace-dir: on\n");
	assert_true(fake.file_on);

	snprintf(args, sizeof args, "'%s' file set /tmp/new-dir", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 0);
	assert_string_equal(out, "trace file /tmp/new-dir: on\n");
	assert_string_equal(fake.file_path, "/tmp/new-dir");

	snprintf(args, sizeof args, "'%s' file flush", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 0);
	assert_int_equal(fake.flushes, 1);

	snprintf(args, sizeof args, "'%s' file off", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 0);
	assert_string_equal(out, "trace file /tmp/new-dir: off\n");

	snprintf(args, sizeof args, "'%s' stats", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 0);
	assert_string_equal(out,
			    "       tid        written        dropped\n"
			    "       101           1000              3\n"
			    "       102            250              0\n"
			    "     total           1250              3\n");

	snprintf(args, sizeof args, "'%s' raw '{\"execute\":\"query-trace-stats\",\"id\":7}'", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 0);
	assert_string_equal(out, "{\"return\":{\"threads\":[{\"tid\":101,\"written\":1000,\"dropped\":3},"
				 "{\"tid\":102,\"written\":250,\"dropped\":0}],\"written\":1250,"
				 "\"dropped\":3},\"id\":7}\n");

	snprintf(args, sizeof args, "'%s' raw '{\"execute\":\"nope\"}'", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 1);
	assert_non_null(strstr(out, "\"error\""));
}

static void test_exit_codes(void **state)
{
	(void)state;
	char out[8192], args[4400];
	/* usage */
	assert_int_equal(ctl("", out, sizeof out), 2);
	snprintf(args, sizeof args, "'%s'", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 2);
	snprintf(args, sizeof args, "'%s' frobnicate", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 2);
	snprintf(args, sizeof args, "'%s' set 'kvm_*' maybe", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 2);
	snprintf(args, sizeof args, "'%s' file set", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 2);
	snprintf(args, sizeof args, "'%s' get", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 2);
	assert_int_equal(ctl("--help", out, sizeof out), 0);
	assert_non_null(strstr(out, "usage: vmscope ctl"));
	/* no server there */
	snprintf(args, sizeof args, "'%s.none' stats", sock_path);
	assert_int_equal(ctl(args, out, sizeof out), 1);
	/* nothing changed by any of these */
	for (int i = 0; i < 6; i++)
		assert_int_equal(fake.state[i], i < 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_get_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_stats_raw, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_codes, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
