/* `vmscope ctl` end to end: this program serves a control socket (tracer/control.c over the
 * fake tracer) and runs the built vmscope binary against it. The expected text is written by
 * hand from the fake's state and the output shapes of tools/vmscope/cmd-ctl.c. */
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

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

/* ---- hostile servers ---- */

enum hostile { TRICKLE, HUGE, MANY_KEYS, ESCAPES };

struct hostile_server {
	enum hostile mode;
	int lfd;
	pthread_t th;
};

static int send_str(int fd, const char *s, size_t n)
{
	return ctl_send(fd, s, n);
}

static void *hostile_main(void *arg)
{
	struct hostile_server *h = arg;
	int fd = accept4(h->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return NULL;
	char c;
	while (recv(fd, &c, 1, 0) == 1 && c != '\n')
		;
	if (h->mode == TRICKLE) {
		/* one byte every 200 ms, for at most 30 s */
		for (int i = 0; i < 150; i++) {
			if (send(fd, i ? "1," : "[", i ? 2 : 1, MSG_NOSIGNAL) < 0)
				break;
			struct timespec ts = { 0, 200000000 };
			nanosleep(&ts, NULL);
		}
	} else if (h->mode == HUGE) {
		/* {"return":[1,1,1,...]} of 60 MB: 30 million values */
		static char chunk[1 << 16];
		for (size_t i = 0; i < sizeof chunk; i += 2)
			memcpy(chunk + i, "1,", 2);
		if (send_str(fd, "{\"return\":[", 11) == 0)
			for (int i = 0; i < 915; i++)
				if (send_str(fd, chunk, sizeof chunk) < 0)
					break;
		send_str(fd, "1]}\n", 4);
	} else if (h->mode == MANY_KEYS) {
		/* {"return":{"k0":0,...,"k199999":0}}: 200,000 distinct keys */
		static char buf[4 << 20];
		size_t n = (size_t)snprintf(buf, sizeof buf, "{\"return\":{");
		for (int i = 0; i < 200000; i++)
			n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\"k%d\":0", i ? "," : "", i);
		n += (size_t)snprintf(buf + n, sizeof buf - n, "}}\n");
		send_str(fd, buf, n);
	} else {
		/* names with a terminal escape (ESC [2J, as \u001b), a C1 CSI (U+009B) and a newline */
		static const char r[] = "{\"return\":[{\"name\":\"a\\u001b[2Jb\\u009bc\\nd\","
					"\"state\":\"enabled\"}]}\n";
		send_str(fd, r, sizeof r - 1);
	}
	close(fd);
	return NULL;
}

static void hostile_start(struct hostile_server *h, enum hostile mode, const char *path)
{
	h->mode = mode;
	unlink(path);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, path, strlen(path) + 1);
	h->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(h->lfd >= 0);
	assert_int_equal(bind(h->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(h->lfd, 4), 0);
	assert_int_equal(pthread_create(&h->th, NULL, hostile_main, h), 0);
}

static void hostile_stop(struct hostile_server *h, const char *path)
{
	pthread_join(h->th, NULL);
	close(h->lfd);
	unlink(path);
}

/* Run vmscope ctl with argv (NULL-terminated after "ctl"); stdout and stderr into files;
 * returns the exit status and the child's peak RSS in KiB. */
static int run_ctl(const char *const *args, const char *outf, const char *errf, long *rss_kb)
{
	const char *argv[16] = { vmscope, "ctl" };
	int n = 2;
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int o = open(outf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(126);
		execv(vmscope, (char *const *)argv);
		_exit(127);
	}
	int st;
	struct rusage ru;
	assert_int_equal(wait4(pid, &st, 0, &ru), pid);
	*rss_kb = ru.ru_maxrss;
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* Run `vmscope ctl ARGS...` (PATH stands for the socket) against a hostile server of the
 * given kind; its stdout and stderr (static buffers) and its exit status. */
struct ctl_run {
	int status;
	long rss_kb;
	char out[1 << 16], err[1 << 16];
};

static void against(enum hostile mode, const char *tag, const char *const *args,
		    struct ctl_run *r)
{
	const char *path = ctl_test_path(tag);
	struct hostile_server h;
	hostile_start(&h, mode, path);
	char outf[4200], errf[4200];
	snprintf(outf, sizeof outf, "%s.out", path);
	snprintf(errf, sizeof errf, "%s.err", path);
	const char *a[16];
	int n = 0;
	for (; args[n] && n < 15; n++)
		a[n] = strcmp(args[n], "PATH") ? args[n] : path;
	a[n] = NULL;
	r->status = run_ctl(a, outf, errf, &r->rss_kb);
	snprintf(r->out, sizeof r->out, "%s", slurp(outf));
	snprintf(r->err, sizeof r->err, "%s", slurp(errf));
	hostile_stop(&h, path);
	unlink(outf);
	unlink(errf);
}

/* A server that sends a byte every 200 ms never ends its reply: the client's deadline is for
 * the whole exchange, so it gives up (the old client waited up to 10 s per read, forever). */
static void test_server_trickles(void **state)
{
	(void)state;
	static struct ctl_run r;
	against(TRICKLE, "trickle.sock", (const char *[]){ "--timeout", "1", "PATH", "stats", NULL }, &r);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "no reply: timed out"));
}

/* A 60 MB reply of 30 million values is refused at 8 MiB, and the client stays small (the old
 * client read it whole and built a 2.6 GB tree). The bound on peak memory: the reply buffer
 * (at most 16 MiB as it doubles) plus the program and the sanitizers' own. */
static void test_server_sends_huge_reply(void **state)
{
	(void)state;
	static struct ctl_run r;
	against(HUGE, "huge.sock", (const char *[]){ "PATH", "stats", NULL }, &r);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "reply longer than 8388608 bytes"));
	print_message("# peak RSS of vmscope ctl against a 60 MB reply: %ld KiB\n", r.rss_kb);
	assert_true(r.rss_kb < 256 * 1024);
}

/* 200,000 distinct keys in one object are accepted (the duplicate check is linear; the old
 * one compared every pair: 38 s); the reply is printed as received. */
static void test_server_sends_many_keys(void **state)
{
	(void)state;
	static struct ctl_run r;
	against(MANY_KEYS, "keys.sock",
		(const char *[]){ "PATH", "raw", "{\"execute\":\"query-trace-stats\"}", NULL }, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(strncmp(r.out, "{\"return\":{\"k0\":0,\"k1\":0,", 25), 0);
}

/* Names from the server cannot drive the terminal or fake lines: ESC, the C1 CSI and the
 * newline are printed as '?'. */
static void test_server_sends_escapes(void **state)
{
	(void)state;
	static struct ctl_run r;
	against(ESCAPES, "esc.sock", (const char *[]){ "PATH", "get", "*", NULL }, &r);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "a?[2Jb?c?d enabled\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_get_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_stats_raw, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_codes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_server_trickles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_server_sends_huge_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_server_sends_many_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_server_sends_escapes, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
