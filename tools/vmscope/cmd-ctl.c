/* vmscope ctl: talk to a traced program's control socket (libvmstrace's JSON-line protocol,
 * see tracer/control.c). One request, one reply, printed as text or (--json) as received. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cmds.h"
#include "json.h"

/* The server is not trusted either: one deadline for the whole request (connect, send, the
 * reply), a bounded reply (the largest a tracer sends, the state of all 65535 possible events,
 * is under 5 MiB), and the JSON parser's bound on values. */
#define CTL_MAX_REPLY (8u << 20)
#define CTL_TIMEOUT_S 10

static const char usage[] =
	"usage: vmscope ctl [--json] [--timeout SECONDS] SOCKET COMMAND [ARGS]\n"
	"\n"
	"Send one command to the control socket of a program traced with libvmstrace\n"
	"(VMSCOPE_TRACE=...,socket=PATH) and print the reply.\n"
	"\n"
	"commands:\n"
	"   get GLOB              state of the events whose names match GLOB ('kvm_*')\n"
	"   set GLOB on|off       enable or disable the matching events\n"
	"   file on|off|flush     start or stop writing the trace, or write out what is buffered\n"
	"   file set DIR          continue the trace in a new directory\n"
	"   file status           where the trace goes and whether it is on\n"
	"   stats                 events written and dropped per thread\n"
	"   raw JSON              send a request as it is ('{\"execute\": ...}')\n"
	"\n"
	"  --json              print the reply as received (one JSON line)\n"
	"  --timeout SECONDS   give up when the whole exchange takes longer (default 10)\n"
	"\n"
	"Exit status: 0 success, 1 an error reply or no connection, 2 bad usage.\n";

static int usage_err(const char *what)
{
	fprintf(stderr, "vmscope ctl: %s\n%s", what, usage);
	return VMS_EXIT_USAGE;
}

/* Build the request line for the command, or return a usage error. */
static int build_request(int argc, char **argv, struct vmst_buf *req)
{
	const char *cmd = argv[0];
	if (!strcmp(cmd, "get")) {
		if (argc != 2)
			return usage_err("get takes one GLOB");
		vmst_buf_puts(req, "{\"execute\":\"trace-event-get-state\",\"arguments\":{\"name\":");
		vmst_buf_json_str(req, argv[1], strlen(argv[1]));
		vmst_buf_puts(req, "}}");
	} else if (!strcmp(cmd, "set")) {
		if (argc != 3)
			return usage_err("set takes GLOB and on or off");
		bool on;
		if (!strcmp(argv[2], "on"))
			on = true;
		else if (!strcmp(argv[2], "off"))
			on = false;
		else
			return usage_err("set: the state must be on or off");
		vmst_buf_puts(req, "{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":");
		vmst_buf_json_str(req, argv[1], strlen(argv[1]));
		vmst_buf_puts(req, on ? ",\"enable\":true}}" : ",\"enable\":false}}");
	} else if (!strcmp(cmd, "file")) {
		if (argc < 2)
			return usage_err("file takes on, off, flush, status or set DIR");
		const char *op = argv[1];
		bool is_set = !strcmp(op, "set");
		if (!is_set && strcmp(op, "on") && strcmp(op, "off") && strcmp(op, "flush") &&
		    strcmp(op, "status"))
			return usage_err("file takes on, off, flush, status or set DIR");
		if (argc != (is_set ? 3 : 2))
			return usage_err(is_set ? "file set takes one DIR" : "file: too many arguments");
		vmst_buf_puts(req, "{\"execute\":\"trace-file\",\"arguments\":{\"op\":");
		vmst_buf_json_str(req, op, strlen(op));
		if (is_set) {
			vmst_buf_puts(req, ",\"path\":");
			vmst_buf_json_str(req, argv[2], strlen(argv[2]));
		}
		vmst_buf_puts(req, "}}");
	} else if (!strcmp(cmd, "stats")) {
		if (argc != 1)
			return usage_err("stats takes no arguments");
		vmst_buf_puts(req, "{\"execute\":\"query-trace-stats\"}");
	} else if (!strcmp(cmd, "raw")) {
		if (argc != 2)
			return usage_err("raw takes one JSON request");
		if (strchr(argv[1], '\n'))
			return usage_err("raw: the request must be one line");
		vmst_buf_puts(req, argv[1]);
	} else {
		char msg[200];
		snprintf(msg, sizeof msg, "'%.100s' is not a ctl command", cmd);
		return usage_err(msg);
	}
	vmst_buf_puts(req, "\n");
	return req->oom ? VMS_EXIT_FAIL : VMS_EXIT_OK;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until fd is ready for `events` or the deadline passes (0: timed out). */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			return 0;
		struct pollfd p = { .fd = fd, .events = events };
		int r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r != 0)
			return r;
	}
}

/* Send the request, read one reply line into *reply (without its newline), all before
 * `timeout_ms` has passed. Returns 0, or -1 with a message on stderr. */
static int exchange(const char *path, const struct vmst_buf *req, struct vmst_buf *reply,
		    int64_t timeout_ms)
{
	int64_t deadline = mono_ms() + timeout_ms;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path) {
		fprintf(stderr, "vmscope ctl: %s: socket path too long\n", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		fprintf(stderr, "vmscope ctl: %s: cannot connect: %s\n", path, strerror(errno));
		return -1;
	}
	/* a UNIX socket connects at once, or says EAGAIN while the server's queue is full */
	while (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		if (errno != EAGAIN && errno != EINTR) {
			fprintf(stderr, "vmscope ctl: %s: cannot connect: %s\n", path, strerror(errno));
			close(fd);
			return -1;
		}
		if (mono_ms() >= deadline) {
			fprintf(stderr, "vmscope ctl: %s: cannot connect: timed out\n", path);
			close(fd);
			return -1;
		}
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	const char *what = "timed out";
	const char *p = req->p;
	size_t n = req->len;
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (wait_fd(fd, POLLOUT, deadline) > 0)
				continue;
		} else if (w >= 0) {
			p += w;
			n -= (size_t)w;
			continue;
		} else {
			what = strerror(errno);
		}
		fprintf(stderr, "vmscope ctl: %s: cannot send: %s\n", path, what);
		close(fd);
		return -1;
	}
	char buf[65536];
	for (;;) {
		ssize_t r = recv(fd, buf, sizeof buf, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
		    wait_fd(fd, POLLIN, deadline) > 0)
			continue;
		if (r < 0) {
			fprintf(stderr, "vmscope ctl: %s: no reply: %s\n", path,
				errno == EAGAIN || errno == EWOULDBLOCK ? "timed out" : strerror(errno));
			close(fd);
			return -1;
		}
		if (r == 0) {
			fprintf(stderr, "vmscope ctl: %s: connection closed before the reply ended\n", path);
			close(fd);
			return -1;
		}
		char *nl = memchr(buf, '\n', (size_t)r);
		size_t take = nl ? (size_t)(nl - buf) : (size_t)r;
		if (reply->len + take > CTL_MAX_REPLY) {
			fprintf(stderr, "vmscope ctl: %s: reply longer than %u bytes\n", path,
				CTL_MAX_REPLY);
			close(fd);
			return -1;
		}
		vmst_buf_put(reply, buf, take);
		if (reply->oom) {
			fprintf(stderr, "vmscope ctl: %s: out of memory for the reply\n", path);
			close(fd);
			return -1;
		}
		if (nl)
			break;
	}
	close(fd);
	return 0;
}

static const char *str_of(const struct vmst_json *obj, const char *key)
{
	const char *s = vmst_json_cstr(vmst_json_get(obj, key));
	return s ? s : "?";
}

static const char *num_of(const struct vmst_json *obj, const char *key)
{
	const struct vmst_json *v = vmst_json_get(obj, key);
	return v && v->type == VMST_JSON_NUMBER ? v->str : "?";
}

/* Text from the server as it is, but for control characters (C0, DEL, and C1 written in
 * UTF-8), which become '?': a server cannot drive the terminal or fake lines. */
static void put_safe(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			fputc('?', f);
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			fputc('?', f), p++;
		else
			fputc(*p, f);
	}
}

/* The reply as text, per command. */
static void print_text(const char *cmd, char **argv, const struct vmst_json *ret)
{
	if (!strcmp(cmd, "get") && ret->type == VMST_JSON_ARRAY) {
		for (size_t i = 0; i < ret->n; i++) {
			put_safe(stdout, str_of(&ret->item[i], "name"));
			putchar(' ');
			put_safe(stdout, str_of(&ret->item[i], "state"));
			putchar('\n');
		}
	} else if (!strcmp(cmd, "set")) {
		const char *m = num_of(ret, "matched");
		printf("%s event%s %s\n", m, strcmp(m, "1") ? "s" : "",
		       !strcmp(argv[2], "on") ? "enabled" : "disabled");
	} else if (!strcmp(cmd, "file")) {
		const struct vmst_json *en = vmst_json_get(ret, "enabled");
		const char *path = vmst_json_cstr(vmst_json_get(ret, "path"));
		fputs("trace file ", stdout);
		put_safe(stdout, path ? path : "(none)");
		printf(": %s\n", en && en->type == VMST_JSON_BOOL && en->b ? "on" : "off");
	} else if (!strcmp(cmd, "stats")) {
		const struct vmst_json *th = vmst_json_get(ret, "threads");
		printf("%10s %14s %14s\n", "tid", "written", "dropped");
		for (size_t i = 0; th && th->type == VMST_JSON_ARRAY && i < th->n; i++)
			printf("%10s %14s %14s\n", num_of(&th->item[i], "tid"),
			       num_of(&th->item[i], "written"), num_of(&th->item[i], "dropped"));
		printf("%10s %14s %14s\n", "total", num_of(ret, "written"), num_of(ret, "dropped"));
	} else {
		struct vmst_buf b = { 0 };
		vmst_buf_json(&b, ret);
		if (b.p) {
			put_safe(stdout, b.p);
			putchar('\n');
		}
		vmst_buf_free(&b);
	}
}

int cmd_ctl(int argc, char **argv)
{
	bool json = false;
	double timeout_s = CTL_TIMEOUT_S;
	char *pos[8];
	int npos = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return VMS_EXIT_OK;
		}
		if (!strcmp(argv[i], "--json")) {
			json = true;
			continue;
		}
		if (!strcmp(argv[i], "--timeout") || !strncmp(argv[i], "--timeout=", 10)) {
			const char *v = argv[i][9] == '=' ? argv[i] + 10 : i + 1 < argc ? argv[++i] : NULL;
			char *end;
			timeout_s = v ? strtod(v, &end) : 0;
			if (!v || !*v || *end || !(timeout_s > 0 && timeout_s <= 86400))
				return usage_err("--timeout takes a number of seconds, above 0 and at most 86400");
			continue;
		}
		if (!strcmp(argv[i], "--")) {
			while (++i < argc && npos < 8)
				pos[npos++] = argv[i];
			if (i < argc)
				return usage_err("too many arguments");
			break;
		}
		if (argv[i][0] == '-' && argv[i][1] && npos < 2) {
			char what[300];
			snprintf(what, sizeof what, "unknown option '%.200s'", argv[i]);
			return usage_err(what);
		}
		if (npos == 8)
			return usage_err("too many arguments");
		pos[npos++] = argv[i];
	}
	if (npos < 2)
		return usage_err("SOCKET and COMMAND are needed");
	const char *path = pos[0];
	struct vmst_buf req = { 0 }, reply = { 0 };
	int rc = build_request(npos - 1, pos + 1, &req);
	if (rc != VMS_EXIT_OK) {
		vmst_buf_free(&req);
		return rc;
	}
	if (exchange(path, &req, &reply, (int64_t)(timeout_s * 1000 + 0.5)) < 0) {
		vmst_buf_free(&req);
		vmst_buf_free(&reply);
		return VMS_EXIT_FAIL;
	}
	vmst_buf_free(&req);

	struct vmst_json r;
	char why[256];
	if (vmst_json_parse(reply.p ? reply.p : "", reply.len, &r, why, sizeof why) < 0 ||
	    r.type != VMST_JSON_OBJECT) {
		if (r.type == VMST_JSON_NULL && why[0])
			fprintf(stderr, "vmscope ctl: %s: reply is not valid JSON: %s\n", path, why);
		else
			fprintf(stderr, "vmscope ctl: %s: reply is not a JSON object\n", path);
		vmst_json_free(&r);
		vmst_buf_free(&reply);
		return VMS_EXIT_FAIL;
	}
	const struct vmst_json *err = vmst_json_get(&r, "error");
	const struct vmst_json *ret = vmst_json_get(&r, "return");
	if (json || !strcmp(pos[1], "raw"))
		printf("%s\n", reply.p);
	if (err) {
		const char *desc = vmst_json_cstr(vmst_json_get(err, "desc"));
		fputs("vmscope ctl: ", stderr);
		put_safe(stderr, desc ? desc : "error reply without a description");
		fputc('\n', stderr);
		rc = VMS_EXIT_FAIL;
	} else if (!ret) {
		fprintf(stderr, "vmscope ctl: %s: reply has neither 'return' nor 'error'\n", path);
		rc = VMS_EXIT_FAIL;
	} else if (!json && strcmp(pos[1], "raw")) {
		print_text(pos[1], pos + 1, ret);
	}
	vmst_json_free(&r);
	vmst_buf_free(&reply);
	return rc;
}
