/* The control socket (tracer/control.c) against a fake tracer whose state the test sets and
 * inspects: socket mode, every command and its effect, globs, and malformed input — which must
 * get an error reply and change nothing. Expected replies are written out by hand from the
 * protocol (see tracer/control.c) and the fake's state. */
#include <fcntl.h>
#include <sys/stat.h>

#include "testutil.h"
#include "fake_tracer.h"
#include "ctl_client.h"

static const char *sock_path;

static int setup(void **state)
{
	(void)state;
	fake_reset();
	sock_path = ctl_test_path("control.sock");
	return vmst_control_start(sock_path) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	vmst_control_stop();
	return 0;
}

static void expect_reply(const char *req, const char *want)
{
	char *r = ctl_roundtrip(sock_path, req);
	assert_non_null(r);
	assert_string_equal(r, want);
	free(r);
}

static void expect_error(const char *req)
{
	char *r = ctl_roundtrip(sock_path, req);
	assert_non_null(r);
	if (strncmp(r, "{\"error\":{\"class\":\"GenericError\",\"desc\":\"", 41) != 0)
		fail_msg("request %s: reply %s is not an error", req, r);
	free(r);
}

static void test_socket_mode(void **state)
{
	(void)state;
	struct stat st;
	assert_int_equal(lstat(sock_path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, getuid());
}

static void test_start_twice_and_stop_removes(void **state)
{
	(void)state;
	assert_int_equal(vmst_control_start(sock_path), -EALREADY);
	vmst_control_stop();
	struct stat st;
	assert_int_not_equal(lstat(sock_path, &st), 0);
	/* a leftover socket of a dead server is replaced */
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	close(fd);
	assert_int_equal(vmst_control_start(sock_path), 0);
	expect_reply("{\"execute\":\"trace-event-get-state\",\"arguments\":{\"name\":\"vcpu_run\"}}",
		     "{\"return\":[{\"name\":\"vcpu_run\",\"state\":\"disabled\"}]}");
}

static void test_refuses_non_socket(void **state)
{
	(void)state;
	const char *path = ctl_test_path("plain-file");
	unlink(path);
	int fd = open(path, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "keep", 4), 4);
	close(fd);
	vmst_control_stop();
	assert_int_equal(vmst_control_start(path), -EEXIST);
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_size, 4);
	unlink(path);
	/* a live server's socket is not taken over either */
	const char *live = ctl_test_path("live.sock");
	unlink(live);
	int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, live, strlen(live) + 1);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(vmst_control_start(live), -EADDRINUSE);
	assert_int_equal(lstat(live, &st), 0);
	close(lfd);
	unlink(live);
	assert_int_equal(vmst_control_start(sock_path), 0);
}

static void test_get_state(void **state)
{
	(void)state;
	expect_reply("{\"execute\":\"trace-event-get-state\",\"arguments\":{\"name\":\"kvm_*\"}}",
		     "{\"return\":[{\"name\":\"kvm_entry\",\"state\":\"enabled\"},"
		     "{\"name\":\"kvm_exit\",\"state\":\"enabled\"},"
		     "{\"name\":\"kvm_msr\",\"state\":\"enabled\"}]}");
	expect_reply("{\"execute\":\"trace-event-get-state\",\"arguments\":{\"name\":\"v*_[nr]*\"}}",
		     "{\"return\":[{\"name\":\"virtio_notify\",\"state\":\"disabled\"},"
		     "{\"name\":\"vcpu_run\",\"state\":\"disabled\"}]}");
	expect_reply("{\"execute\":\"trace-event-get-state\",\"arguments\":{\"name\":\"kvm_e?i?\"}}",
		     "{\"return\":[{\"name\":\"kvm_exit\",\"state\":\"enabled\"}]}");
	/* a pattern matching nothing is an empty list; an unknown plain name is an error */
	expect_reply("{\"execute\":\"trace-event-get-state\",\"arguments\":{\"name\":\"xen_*\"}}",
		     "{\"return\":[]}");
	expect_error("{\"execute\":\"trace-event-get-state\",\"arguments\":{\"name\":\"kvm\"}}");
	/* the id is echoed */
	expect_reply("{\"execute\":\"trace-event-get-state\",\"arguments\":{\"name\":\"vcpu_run\"},"
		     "\"id\":{\"n\":[1,2.5e3,\"x\"]}}",
		     "{\"return\":[{\"name\":\"vcpu_run\",\"state\":\"disabled\"}],"
		     "\"id\":{\"n\":[1,2.5e3,\"x\"]}}");
}

static void test_set_state(void **state)
{
	(void)state;
	expect_reply("{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"virtio_*\","
		     "\"enable\":true}}",
		     "{\"return\":{\"matched\":2}}");
	assert_true(fake.state[3]);
	assert_true(fake.state[4]);
	assert_false(fake.state[5]);
	expect_reply("{\"execute\":\"trace-event-set-state\",\"arguments\":{\"enable\":false,"
		     "\"name\":\"kvm_exit\"}}",
		     "{\"return\":{\"matched\":1}}");
	assert_true(fake.state[0]);
	assert_false(fake.state[1]);
	assert_true(fake.state[2]);
	/* nothing matches: an error, and nothing changes */
	expect_error("{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"xen_*\","
		     "\"enable\":false}}");
	bool want[6] = { true, false, true, true, true, false };
	for (int i = 0; i < 6; i++)
		assert_int_equal(fake.state[i], want[i]);
}

static void test_trace_file(void **state)
{
	(void)state;
	expect_reply("{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"status\"}}",
		     "{\"return\":{\"enabled\":false,\"path\":\"trace-dir\"}}");
	expect_reply("{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"on\"}}",
		     "{\"return\":{\"enabled\":true,\"path\":\"trace-dir\"}}");
	assert_true(fake.file_on);
	expect_reply("{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"flush\"}}",
		     "{\"return\":{\"enabled\":true,\"path\":\"trace-dir\"}}");
	assert_int_equal(fake.flushes, 1);
	expect_reply("{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"set\",\"path\":\"/tmp/a \\\"b\\\"\"}}",
		     "{\"return\":{\"enabled\":true,\"path\":\"/tmp/a \\\"b\\\"\"}}");
	assert_string_equal(fake.file_path, "/tmp/a \"b\"");
	expect_reply("{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"off\"}}",
		     "{\"return\":{\"enabled\":false,\"path\":\"/tmp/a \\\"b\\\"\"}}");
	assert_false(fake.file_on);
	/* a failing operation is reported */
	fake.fail_next_file_op = -ENOSPC;
	char *r = ctl_roundtrip(sock_path, "{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"on\"}}");
	assert_non_null(r);
	assert_non_null(strstr(r, "\"error\""));
	assert_non_null(strstr(r, strerror(ENOSPC)));
	free(r);
	assert_false(fake.file_on);
}

static void test_stats(void **state)
{
	(void)state;
	/* totals: 1000 + 250 written, 3 + 0 dropped (the fake's threads) */
	expect_reply("{\"execute\":\"query-trace-stats\"}",
		     "{\"return\":{\"threads\":[{\"tid\":101,\"written\":1000,\"dropped\":3},"
		     "{\"tid\":102,\"written\":250,\"dropped\":0}],\"written\":1250,\"dropped\":3}}");
	expect_reply("{\"execute\":\"query-trace-stats\",\"arguments\":{}}",
		     "{\"return\":{\"threads\":[{\"tid\":101,\"written\":1000,\"dropped\":3},"
		     "{\"tid\":102,\"written\":250,\"dropped\":0}],\"written\":1250,\"dropped\":3}}");
}

/* A snapshot of everything a request could change. */
struct snap {
	bool state[FAKE_MAX_EVENTS];
	bool file_on;
	char path[256];
	int flushes, sets, enables;
};

static void take(struct snap *s)
{
	memset(s, 0, sizeof *s);
	memcpy(s->state, fake.state, sizeof s->state);
	s->file_on = fake.file_on;
	memcpy(s->path, fake.file_path, sizeof s->path);
	s->flushes = fake.flushes;
	s->sets = fake.file_sets;
	s->enables = fake.file_enables;
}

static void test_malformed(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"{",
		"}",
		"[]",
		"42",
		"\"trace-file\"",
		"null",
		"{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"kvm_*\",\"enable\":false}",
		"{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"kvm_*\",\"enable\":false}}}",
		"{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"kvm_*\",\"enable\":false},}",
		"{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"kvm_*\",\"enable\":0}}",
		"{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"kvm_*\",\"enable\":\"false\"}}",
		"{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"kvm_*\"}}",
		"{\"execute\":\"trace-event-set-state\",\"arguments\":{\"enable\":false}}",
		"{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":7,\"enable\":false}}",
		"{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"\",\"enable\":false}}",
		"{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"kvm_\\u0000*\",\"enable\":false}}",
		"{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"kvm_*\",\"enable\":false,\"vcpu\":1}}",
		"{\"execute\":\"trace-event-set-state\",\"arguments\":[\"kvm_*\",false]}",
		"{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"kvm_*\",\"name\":\"x\",\"enable\":false}}",
		"{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"kvm_*\",\"enable\":false},\"extra\":1}",
		"{'execute':'trace-event-set-state'}",
		"{\"execute\":\"trace-event-set-stat\",\"arguments\":{\"name\":\"kvm_*\",\"enable\":false}}",
		"{\"execute\":\"TRACE-EVENT-SET-STATE\",\"arguments\":{\"name\":\"kvm_*\",\"enable\":false}}",
		"{\"execute\":null}",
		"{\"execute\":[\"trace-file\"]}",
		"{\"arguments\":{\"op\":\"off\"}}",
		"{\"execute\":\"trace-file\"}",
		"{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"of\"}}",
		"{\"execute\":\"trace-file\",\"arguments\":{\"op\":true}}",
		"{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"set\"}}",
		"{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"set\",\"path\":\"\"}}",
		"{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"set\",\"path\":5}}",
		"{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"on\",\"path\":\"/tmp/x\"}}",
		"{\"execute\":\"query-trace-stats\",\"arguments\":{\"verbose\":true}}",
		"{\"execute\":\"query-trace-stats\",\"arguments\":null}",
		"{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"on\"}} x",
		"{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"o\\n\"}}",
		"{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"on\\x\"}}",
		"{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"\\ud800\"}}",
		"{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"\xc3\x28\"}}",
		"{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"\xed\xa0\x80\"}}",
		"{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"\xc0\xaf\"}}",
		"{\"execute\":\"query-trace-stats\",\"id\":01}",
		"{\"execute\":\"query-trace-stats\",\"id\":1.}",
		"{\"execute\":\"query-trace-stats\",\"id\":-}",
		"{\"execute\":\"query-trace-stats\",\"id\":tru}",
		"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
	};
	struct snap before, after;
	take(&before);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		expect_error(bad[i]);
	take(&after);
	assert_memory_equal(&before, &after, sizeof before);
}

static void test_overlong_and_garbage(void **state)
{
	(void)state;
	struct snap before, after;
	take(&before);
	int fd = ctl_connect(sock_path);
	assert_true(fd >= 0);
	/* 200 KiB without a newline, then the newline: one error for the whole line */
	size_t n = 200 * 1024;
	char *big = malloc(n);
	memset(big, 'a', n);
	memcpy(big, "{\"execute\":\"trace-file\",\"arguments\":{\"op\":\"off\"},\"id\":\"", 55);
	assert_int_equal(ctl_send(fd, big, n), 0);
	char *r = ctl_read_line(fd);
	assert_non_null(r);
	assert_non_null(strstr(r, "longer than 65536"));
	free(r);
	assert_int_equal(ctl_send(fd, "\"}\n", 3), 0);
	free(big);
	/* the same connection still serves the next request */
	const char *ok = "{\"execute\":\"trace-event-get-state\",\"arguments\":{\"name\":\"vcpu_run\"}}\n";
	assert_int_equal(ctl_send(fd, ok, strlen(ok)), 0);
	r = ctl_read_line(fd);
	assert_non_null(r);
	assert_string_equal(r, "{\"return\":[{\"name\":\"vcpu_run\",\"state\":\"disabled\"}]}");
	free(r);

	/* binary garbage: deterministic pseudo-random lines, each answered with an error */
	uint32_t x = 12345;
	for (int line = 0; line < 200; line++) {
		char g[300];
		size_t len = 1 + (x % 290);
		for (size_t i = 0; i < len; i++) {
			x = x * 1103515245u + 12345u;
			g[i] = (char)(x >> 16);
			if (g[i] == '\n')
				g[i] = '{';
		}
		/* a line of only blanks gets no reply by design: make it not blank */
		g[0] = '\x01';
		g[len] = '\n';
		assert_int_equal(ctl_send(fd, g, len + 1), 0);
		r = ctl_read_line(fd);
		assert_non_null(r);
		if (strncmp(r, "{\"error\":", 9) != 0)
			fail_msg("garbage line %d: reply %s", line, r);
		free(r);
	}
	close(fd);
	/* many clients at once, some leaving without reading */
	int fds[12];
	for (int i = 0; i < 12; i++)
		fds[i] = ctl_connect(sock_path);
	for (int i = 0; i < 12; i++)
		if (fds[i] >= 0) {
			ctl_send(fds[i], ok, strlen(ok));
			close(fds[i]);
		}
	take(&after);
	assert_memory_equal(&before, &after, sizeof before);
	expect_reply("{\"execute\":\"trace-event-get-state\",\"arguments\":{\"name\":\"kvm_msr\"}}",
		     "{\"return\":[{\"name\":\"kvm_msr\",\"state\":\"enabled\"}]}");
}

static void test_pipelined_and_last_line(void **state)
{
	(void)state;
	int fd = ctl_connect(sock_path);
	assert_true(fd >= 0);
	const char *two =
		"{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"vcpu_run\",\"enable\":true}}\n"
		"\n   \r\n"
		"{\"execute\":\"trace-event-get-state\",\"arguments\":{\"name\":\"vcpu_run\"}}";
	assert_int_equal(ctl_send(fd, two, strlen(two)), 0);
	shutdown(fd, SHUT_WR);   /* the last request has no newline: served at end of input */
	char *r = ctl_read_line(fd);
	assert_string_equal(r, "{\"return\":{\"matched\":1}}");
	free(r);
	r = ctl_read_line(fd);
	assert_string_equal(r, "{\"return\":[{\"name\":\"vcpu_run\",\"state\":\"enabled\"}]}");
	free(r);
	close(fd);
}

/* ---- peers that misbehave ---- */

/* Read one line with a buffer of our own (the replies below are hundreds of KiB). */
static char *read_line_fast(int fd, char *rest, size_t *nrest)
{
	size_t cap = 1 << 20, len = 0;
	char *s = malloc(cap);
	assert_non_null(s);
	for (;;) {
		char *nl = memchr(rest, '\n', *nrest);
		size_t take = nl ? (size_t)(nl - rest) : *nrest;
		while (len + take + 1 > cap)
			assert_non_null(s = realloc(s, cap *= 2));
		memcpy(s + len, rest, take);
		len += take;
		if (nl) {
			*nrest -= take + 1;
			memmove(rest, nl + 1, *nrest);
			s[len] = 0;
			return s;
		}
		*nrest = 0;
		ssize_t r = recv(fd, rest, 65536, 0);
		if (r <= 0) {
			free(s);
			return NULL;
		}
		*nrest = (size_t)r;
	}
}

/* 2048 events with 100-byte names: each element {"name":"N","state":"disabled"} of a
 * "get *" reply is 9 + 100 + 21 = 130 bytes, with 2047 commas between and {"return":[ ]}
 * (11 + 2) around: 2048 * 130 + 2047 + 13 = 268,300 bytes, more than a UNIX socket buffers. */
static void many_events(void)
{
	static char names[2048][101];
	for (size_t i = 0; i < 2048; i++) {
		snprintf(names[i], sizeof names[i], "ev%04zu_", i);
		memset(names[i] + 7, 'x', 93);
		names[i][100] = 0;
		fake.name[i] = names[i];
		fake.state[i] = false;
	}
	fake.nr_events = 2048;
}

/* A client that sends requests and never reads its replies: the server must go on serving
 * others at once, and keep that client's replies for it (it is only slow, not gone). The old
 * server blocked in send() to it for 2 s and then dropped it. */
static void test_client_that_does_not_read(void **state)
{
	(void)state;
	many_events();
	int a = ctl_connect(sock_path);
	assert_true(a >= 0);
	static const char get_all[] = "{\"execute\":\"trace-event-get-state\",\"arguments\":{\"name\":\"*\"}}\n";
	for (int i = 0; i < 8; i++)
		assert_int_equal(ctl_send(a, get_all, sizeof get_all - 1), 0);
	/* meanwhile another client is served */
	char want[300];
	snprintf(want, sizeof want, "{\"return\":[{\"name\":\"%s\",\"state\":\"disabled\"}]}",
		 fake.name[7]);
	char req[300];
	snprintf(req, sizeof req,
		 "{\"execute\":\"trace-event-get-state\",\"arguments\":{\"name\":\"%s\"}}", fake.name[7]);
	expect_reply(req, want);
	/* and the first one still gets its 8 replies, whole */
	static char rest[65536];
	size_t nrest = 0;
	for (int i = 0; i < 8; i++) {
		char *r = read_line_fast(a, rest, &nrest);
		if (!r)
			fail_msg("reply %d of the slow client is missing: it was dropped", i);
		assert_int_equal(strlen(r), 268300);
		assert_int_equal(strncmp(r, "{\"return\":[{\"name\":\"ev0000_xxx", 30), 0);
		assert_string_equal(r + strlen(r) - 21, "\"state\":\"disabled\"}]}");
		free(r);
	}
	close(a);
}

/* More idle connections than the server has places: a newcomer is still served (the
 * connection idle the longest makes room; it sees the end of its connection). */
static void test_idle_clients_do_not_lock_out(void **state)
{
	(void)state;
	int idle[40];
	for (int i = 0; i < 40; i++) {
		idle[i] = ctl_connect(sock_path);
		assert_true(idle[i] >= 0);
	}
	expect_reply("{\"execute\":\"trace-event-get-state\",\"arguments\":{\"name\":\"vcpu_run\"}}",
		     "{\"return\":[{\"name\":\"vcpu_run\",\"state\":\"disabled\"}]}");
	char c;
	assert_int_equal(recv(idle[0], &c, 1, 0), 0);   /* evicted: end of file */
	for (int i = 0; i < 40; i++)
		close(idle[i]);
}

/* A request that never ends (a byte, then nothing): the server drops that client after its
 * deadline (5 s) instead of keeping a place for it forever. */
static void test_unfinished_request_is_dropped(void **state)
{
	(void)state;
	int a = ctl_connect(sock_path);
	assert_true(a >= 0);
	struct timeval tv = { 30, 0 };   /* longer than the server's deadline */
	setsockopt(a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	assert_int_equal(ctl_send(a, "{\"exe", 5), 0);
	char c;
	assert_int_equal(recv(a, &c, 1, 0), 0);
	close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_socket_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_twice_and_stop_removes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refuses_non_socket, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trace_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlong_and_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipelined_and_last_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_that_does_not_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_clients_do_not_lock_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unfinished_request_is_dropped, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
