/* The tracer's control socket: a UNIX stream socket (mode 0600) served by a thread of its own,
 * speaking JSON lines in the manner of QEMU's QMP:
 *
 *   {"execute": "trace-event-get-state", "arguments": {"name": "kvm_*"}}
 *     -> {"return": [{"name": "kvm_exit", "state": "enabled"}, ...]}
 *   {"execute": "trace-event-set-state", "arguments": {"name": GLOB, "enable": true}}
 *     -> {"return": {"matched": N}}            (an error when nothing matches, as in QEMU)
 *   {"execute": "trace-file", "arguments": {"op": "on"|"off"|"flush"|"set"|"status",
 *                                            "path": DIR (for "set")}}
 *     -> {"return": {"enabled": BOOL, "path": STR}}
 *   {"execute": "query-trace-stats"}
 *     -> {"return": {"threads": [{"tid": T, "written": W, "dropped": D}], "written": W,
 *                    "dropped": D}}
 *   anything wrong -> {"error": {"class": "GenericError", "desc": "..."}}, nothing changed.
 * An "id" member of a request is echoed in its reply.
 *
 * The server only calls the public vmst_* functions, so it takes no lock that producers take:
 * the hot path stays as it is whether a client is connected or not. Peers are untrusted (any
 * local process of the same user): lines are bounded, JSON is parsed strictly (duplicate keys
 * found in linear time), sockets are non-blocking so that no peer can stall the others, every
 * request and every reply has a deadline (CTL_DEADLINE_MS), and idle peers cannot lock others
 * out (a newcomer evicts the connection idle the longest). Memory: at most CTL_MAX_CLIENTS x
 * (one 64 KiB request line + one reply). A request that flushes the trace or changes its
 * directory is served in this thread: others wait for it (see vmst_flush for how long). */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "vmscope/tracer.h"
#include "internal.h"
#include "json.h"

#define CTL_MAX_LINE 65536      /* longer requests are refused */
#define CTL_MAX_CLIENTS 16
#define CTL_DEADLINE_MS 5000    /* a request must arrive whole, and its reply be read, in this */
#define CTL_IDLE_MS 600000      /* an idle connection is kept at most this long */

/* A connection. Sockets are non-blocking: the server never waits for one peer. A client has
 * at most one reply queued; while it is, the server reads no more of its requests (they wait
 * in the socket), so a client's memory is bounded by one request line and one reply. */
struct client {
	int fd;
	char *buf;
	size_t len;
	bool discarding;        /* inside an overlong line: drop bytes up to its newline */
	struct vmst_buf out;    /* the reply being sent */
	size_t out_off;         /* bytes of it sent */
	uint64_t idle_since;    /* ms: connected, or last reply sent (eviction order) */
	uint64_t busy_since;    /* ms: a request begun or a reply queued (0: idle) */
};

static struct {
	pthread_mutex_t lock;   /* start/stop only */
	bool running;
	int lfd;
	int wake[2];
	pthread_t thread;
	char *path;
	dev_t dev;
	ino_t ino;
	struct client cl[CTL_MAX_CLIENTS];
} ctl = { .lock = PTHREAD_MUTEX_INITIALIZER, .lfd = -1, .wake = { -1, -1 } };

/* ---- replies ---- */

static void reply_error(struct vmst_buf *out, const struct vmst_json *id, const char *desc)
{
	vmst_buf_puts(out, "{\"error\":{\"class\":\"GenericError\",\"desc\":");
	vmst_buf_json_str(out, desc, strlen(desc));
	vmst_buf_puts(out, "}");
	if (id) {
		vmst_buf_puts(out, ",\"id\":");
		vmst_buf_json(out, id);
	}
	vmst_buf_puts(out, "}");
}

static void reply_begin(struct vmst_buf *out)
{
	vmst_buf_puts(out, "{\"return\":");
}

static void reply_end(struct vmst_buf *out, const struct vmst_json *id)
{
	if (id) {
		vmst_buf_puts(out, ",\"id\":");
		vmst_buf_json(out, id);
	}
	vmst_buf_puts(out, "}");
}

/* ---- argument checking ---- */

/* Every member of args must be one of the allowed names. */
static const char *check_members(const struct vmst_json *args, const char *const *allowed)
{
	if (!args)
		return NULL;
	for (size_t i = 0; i < args->n; i++) {
		size_t k = 0;
		while (allowed[k] && strcmp(allowed[k], args->key[i]))
			k++;
		if (!allowed[k])
			return args->key[i];
	}
	return NULL;
}

static bool is_pattern(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* ---- commands ---- */

typedef int (*cmd_fn)(const struct vmst_json *args, struct vmst_buf *out,
		      const struct vmst_json *id, char *why, size_t whylen);

static const char *name_arg(const struct vmst_json *args, char *why, size_t whylen)
{
	const struct vmst_json *n = vmst_json_get(args, "name");
	if (!n) {
		snprintf(why, whylen, "parameter 'name' is missing");
		return NULL;
	}
	const char *s = vmst_json_cstr(n);
	if (!s || !*s) {
		snprintf(why, whylen, "parameter 'name' must be a non-empty string");
		return NULL;
	}
	return s;
}

static int cmd_get_state(const struct vmst_json *args, struct vmst_buf *out,
			 const struct vmst_json *id, char *why, size_t whylen)
{
	static const char *const allowed[] = { "name", NULL };
	const char *bad = check_members(args, allowed);
	if (bad)
		return snprintf(why, whylen, "parameter '%s' is unexpected", bad), -1;
	const char *glob = name_arg(args, why, whylen);
	if (!glob)
		return -1;
	size_t n = vmst_event_count(), found = 0;
	for (size_t i = 0; i < n; i++) {
		const char *nm = vmst_event_name(i);
		if (nm && fnmatch(glob, nm, 0) == 0)
			found++;
	}
	if (!found && !is_pattern(glob))
		return snprintf(why, whylen, "no event named '%s'", glob), -1;
	reply_begin(out);
	vmst_buf_puts(out, "[");
	bool first = true;
	for (size_t i = 0; i < n; i++) {
		const char *nm = vmst_event_name(i);
		if (!nm || fnmatch(glob, nm, 0) != 0)
			continue;
		if (!first)
			vmst_buf_puts(out, ",");
		first = false;
		vmst_buf_puts(out, "{\"name\":");
		vmst_buf_json_str(out, nm, strlen(nm));
		vmst_buf_puts(out, vmst_event_get(i) ? ",\"state\":\"enabled\"}" : ",\"state\":\"disabled\"}");
	}
	vmst_buf_puts(out, "]");
	reply_end(out, id);
	return 0;
}

static int cmd_set_state(const struct vmst_json *args, struct vmst_buf *out,
			 const struct vmst_json *id, char *why, size_t whylen)
{
	static const char *const allowed[] = { "name", "enable", NULL };
	const char *bad = check_members(args, allowed);
	if (bad)
		return snprintf(why, whylen, "parameter '%s' is unexpected", bad), -1;
	const char *glob = name_arg(args, why, whylen);
	if (!glob)
		return -1;
	const struct vmst_json *en = vmst_json_get(args, "enable");
	if (!en)
		return snprintf(why, whylen, "parameter 'enable' is missing"), -1;
	if (en->type != VMST_JSON_BOOL)
		return snprintf(why, whylen, "parameter 'enable' must be a boolean"), -1;
	size_t n = vmst_event_count(), found = 0;
	for (size_t i = 0; i < n; i++) {
		const char *nm = vmst_event_name(i);
		if (nm && fnmatch(glob, nm, 0) == 0)
			found++;
	}
	if (!found)
		return snprintf(why, whylen, "no event matches '%s'", glob), -1;
	int matched = vmst_event_set_glob(glob, en->b);
	if (matched < 0)
		return snprintf(why, whylen, "cannot set '%s': %s", glob, strerror(-matched)), -1;
	reply_begin(out);
	vmst_buf_printf(out, "{\"matched\":%d}", matched);
	reply_end(out, id);
	return 0;
}

static int cmd_trace_file(const struct vmst_json *args, struct vmst_buf *out,
			  const struct vmst_json *id, char *why, size_t whylen)
{
	static const char *const allowed[] = { "op", "path", NULL };
	const char *bad = check_members(args, allowed);
	if (bad)
		return snprintf(why, whylen, "parameter '%s' is unexpected", bad), -1;
	const struct vmst_json *opj = vmst_json_get(args, "op");
	if (!opj)
		return snprintf(why, whylen, "parameter 'op' is missing"), -1;
	const char *op = vmst_json_cstr(opj);
	if (!op)
		return snprintf(why, whylen, "parameter 'op' must be a string"), -1;
	const struct vmst_json *pj = vmst_json_get(args, "path");
	const char *path = NULL;
	if (pj) {
		path = vmst_json_cstr(pj);
		if (!path || !*path)
			return snprintf(why, whylen, "parameter 'path' must be a non-empty string"), -1;
	}
	bool is_set = !strcmp(op, "set");
	if (!is_set && strcmp(op, "on") && strcmp(op, "off") && strcmp(op, "flush") &&
	    strcmp(op, "status"))
		return snprintf(why, whylen, "parameter 'op' must be on, off, flush, set or status"), -1;
	if (is_set && !path)
		return snprintf(why, whylen, "parameter 'path' is missing (needed by op 'set')"), -1;
	if (!is_set && path)
		return snprintf(why, whylen, "parameter 'path' is only for op 'set'"), -1;
	int rc = 0;
	if (is_set)
		rc = vmst_file_set(path);
	else if (!strcmp(op, "on"))
		rc = vmst_file_enable(true);
	else if (!strcmp(op, "off"))
		rc = vmst_file_enable(false);
	else if (!strcmp(op, "flush"))
		rc = vmst_flush();
	if (rc < 0)
		return snprintf(why, whylen, "trace-file %s failed: %s", op, strerror(-rc)), -1;
	reply_begin(out);
	vmst_buf_puts(out, vmst_file_enabled() ? "{\"enabled\":true,\"path\":" : "{\"enabled\":false,\"path\":");
	const char *cur = vmst_file_get();
	if (cur)
		vmst_buf_json_str(out, cur, strlen(cur));
	else
		vmst_buf_puts(out, "null");
	vmst_buf_puts(out, "}");
	reply_end(out, id);
	return 0;
}

static int cmd_stats(const struct vmst_json *args, struct vmst_buf *out,
		     const struct vmst_json *id, char *why, size_t whylen)
{
	static const char *const allowed[] = { NULL };
	const char *bad = check_members(args, allowed);
	if (bad)
		return snprintf(why, whylen, "parameter '%s' is unexpected", bad), -1;
	struct vmst_thread_stats small[64];
	struct vmst_thread_stats *st = small;
	size_t cap = 64, n = vmst_stats(st, cap);
	/* threads may appear meanwhile: retry a few times with room to spare */
	for (int tries = 0; n > cap && tries < 4; tries++) {
		if (st != small)
			free(st);
		cap = n + 64;
		st = malloc(cap * sizeof *st);
		if (!st)
			return snprintf(why, whylen, "out of memory"), -1;
		n = vmst_stats(st, cap);
	}
	if (n > cap)
		n = cap;
	uint64_t written = 0, dropped = 0;
	reply_begin(out);
	vmst_buf_puts(out, "{\"threads\":[");
	for (size_t i = 0; i < n; i++) {
		vmst_buf_printf(out, "%s{\"tid\":%d,\"written\":%llu,\"dropped\":%llu}", i ? "," : "",
				(int)st[i].tid, (unsigned long long)st[i].written,
				(unsigned long long)st[i].dropped);
		written += st[i].written;
		dropped += st[i].dropped;
	}
	vmst_buf_printf(out, "],\"written\":%llu,\"dropped\":%llu}", (unsigned long long)written,
			(unsigned long long)dropped);
	reply_end(out, id);
	if (st != small)
		free(st);
	return 0;
}

static const struct {
	const char *name;
	cmd_fn fn;
} commands[] = {
	{ "trace-event-get-state", cmd_get_state },
	{ "trace-event-set-state", cmd_set_state },
	{ "trace-file", cmd_trace_file },
	{ "query-trace-stats", cmd_stats },
};

/* One request line -> one reply (without its newline) in out. */
static void handle_line(const char *line, size_t len, struct vmst_buf *out)
{
	struct vmst_json req;
	char why[256];
	if (vmst_json_parse(line, len, &req, why, sizeof why) < 0) {
		char desc[300];
		snprintf(desc, sizeof desc, "invalid JSON: %s", why);
		reply_error(out, NULL, desc);
		return;
	}
	const struct vmst_json *id = NULL;
	if (req.type != VMST_JSON_OBJECT) {
		reply_error(out, NULL, "a request must be a JSON object");
		goto done;
	}
	id = vmst_json_get(&req, "id");
	static const char *const top[] = { "execute", "arguments", "id", NULL };
	const char *bad = check_members(&req, top);
	if (bad) {
		snprintf(why, sizeof why, "member '%s' is unexpected in a request", bad);
		reply_error(out, id, why);
		goto done;
	}
	const struct vmst_json *ex = vmst_json_get(&req, "execute");
	const char *name = vmst_json_cstr(ex);
	if (!name) {
		reply_error(out, id, ex ? "'execute' must be a string" : "member 'execute' is missing");
		goto done;
	}
	const struct vmst_json *args = vmst_json_get(&req, "arguments");
	if (args && args->type != VMST_JSON_OBJECT) {
		reply_error(out, id, "'arguments' must be an object");
		goto done;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		if (strcmp(commands[i].name, name))
			continue;
		struct vmst_buf tmp = { 0 };
		if (commands[i].fn(args, &tmp, id, why, sizeof why) < 0)
			reply_error(out, id, why);
		else if (tmp.oom)
			reply_error(out, id, "out of memory");
		else
			vmst_buf_put(out, tmp.p, tmp.len);
		vmst_buf_free(&tmp);
		goto done;
	}
	char desc[300];
	snprintf(desc, sizeof desc, "the command '%.200s' is not known", name);
	reply_error(out, id, desc);
done:
	vmst_json_free(&req);
}

/* ---- the server thread ---- */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void client_close(struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	vmst_buf_free(&c->out);
	*c = (struct client){ .fd = -1 };
}

static bool out_pending(const struct client *c)
{
	return c->out_off < c->out.len;
}

/* When the client is dropped: a reply or a begun request must be done within the deadline
 * from when it began; an idle connection lasts CTL_IDLE_MS. */
static uint64_t client_deadline(struct client *c, uint64_t now)
{
	bool busy = out_pending(c) || c->len || c->discarding;
	if (!busy)
		c->busy_since = 0;
	else if (!c->busy_since)
		c->busy_since = now;
	return busy ? c->busy_since + CTL_DEADLINE_MS : c->idle_since + CTL_IDLE_MS;
}

/* Send what the socket takes now. Returns -1 when the client must go. */
static int client_flush(struct client *c)
{
	while (out_pending(c)) {
		ssize_t w = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		}
		c->out_off += (size_t)w;
	}
	vmst_buf_free(&c->out);
	c->out_off = 0;
	c->idle_since = now_ms();
	c->busy_since = 0;
	return 0;
}

/* Queue a reply (one line) and send what can be sent now. */
static int queue_reply(struct client *c, struct vmst_buf *out)
{
	if (out->oom) {
		vmst_buf_free(out);
		reply_error(out, NULL, "out of memory");
	}
	vmst_buf_put(out, "\n", 1);
	if (out->oom) {
		vmst_buf_free(out);
		return -1;
	}
	c->out = *out;
	c->out_off = 0;
	*out = (struct vmst_buf){ 0 };
	return client_flush(c);
}

static bool blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			return false;
	return true;
}

/* Serve the complete lines in the client's buffer, one at a time, as long as each reply
 * goes out at once. Returns -1 when the client must go. */
static int client_lines(struct client *c)
{
	size_t start = 0;
	int rc = 0;
	while (!out_pending(c)) {
		char *nl = memchr(c->buf + start, '\n', c->len - start);
		if (!nl)
			break;
		size_t n = (size_t)(nl - (c->buf + start));
		bool serve = !c->discarding && !blank(c->buf + start, n);
		c->discarding = false;   /* an overlong line ends here */
		if (serve) {
			struct vmst_buf out = { 0 };
			handle_line(c->buf + start, n, &out);
			rc = queue_reply(c, &out);
		}
		start += n + 1;
		if (rc < 0)
			return -1;
	}
	memmove(c->buf, c->buf + start, c->len - start);
	c->len -= start;
	if (c->len == CTL_MAX_LINE && !c->discarding && !out_pending(c)) {
		/* a full buffer without a newline: refuse the line once, drop the rest of it */
		struct vmst_buf out = { 0 };
		char desc[100];
		snprintf(desc, sizeof desc, "request line longer than %d bytes", CTL_MAX_LINE);
		reply_error(&out, NULL, desc);
		c->len = 0;
		c->discarding = true;
		if (queue_reply(c, &out) < 0)
			return -1;
	}
	if (c->discarding)
		c->len = 0;
	return 0;
}

static void client_read(struct client *c)
{
	if (out_pending(c))
		return;   /* its requests wait until it has read its reply */
	ssize_t r = recv(c->fd, c->buf + c->len, CTL_MAX_LINE - c->len, MSG_DONTWAIT);
	if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (r <= 0) {
		/* end of the requests: serve a last line without its newline, then go */
		if (r == 0 && c->len && !c->discarding && !blank(c->buf, c->len)) {
			struct vmst_buf out = { 0 };
			handle_line(c->buf, c->len, &out);
			c->len = 0;
			if (queue_reply(c, &out) == 0 && out_pending(c)) {
				shutdown(c->fd, SHUT_RD);
				return;   /* the rest of the reply goes out before the close */
			}
		}
		client_close(c);
		return;
	}
	c->len += (size_t)r;
	if (client_lines(c) < 0)
		client_close(c);
}

/* A newcomer is always let in: when every place is taken, the connection idle the longest
 * (or, if none is idle, the one nearest its deadline) makes room. So idle peers cannot lock
 * the socket; a peer can only keep a place by using it. */
static void client_accept(uint64_t now)
{
	int fd = accept4(ctl.lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	char *buf = malloc(CTL_MAX_LINE);
	if (!buf) {
		close(fd);
		return;
	}
	struct client *c = NULL, *victim = NULL;
	uint64_t victim_key = UINT64_MAX;
	for (int i = 0; i < CTL_MAX_CLIENTS && !c; i++) {
		struct client *o = &ctl.cl[i];
		if (o->fd < 0) {
			c = o;
			continue;
		}
		bool idle = !out_pending(o) && !o->len && !o->discarding;
		uint64_t key = idle ? o->idle_since : (uint64_t)1 << 62 | client_deadline(o, now);
		if (key < victim_key) {
			victim_key = key;
			victim = o;
		}
	}
	if (!c) {
		client_close(victim);
		c = victim;
	}
	*c = (struct client){ .fd = fd, .buf = buf, .idle_since = now };
}

static void *server(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd pfd[2 + CTL_MAX_CLIENTS];
		int idx[CTL_MAX_CLIENTS];
		nfds_t n = 0;
		pfd[n++] = (struct pollfd){ .fd = ctl.wake[0], .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = ctl.lfd, .events = POLLIN };
		uint64_t now = now_ms(), next = UINT64_MAX;
		int nc = 0;
		for (int i = 0; i < CTL_MAX_CLIENTS; i++) {
			struct client *c = &ctl.cl[i];
			if (c->fd < 0)
				continue;
			uint64_t dl = client_deadline(c, now);
			if (dl <= now) {
				client_close(c);   /* too slow: a request, a reply or idleness */
				continue;
			}
			next = dl < next ? dl : next;
			idx[nc++] = i;
			pfd[n++] = (struct pollfd){ .fd = c->fd,
						    .events = out_pending(c) ? POLLOUT : POLLIN };
		}
		int timeout = next == UINT64_MAX ? -1 : (int)(next - now < 60000 ? next - now : 60000);
		if (poll(pfd, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[0].revents)
			break;
		for (int k = 0; k < nc; k++) {
			struct client *c = &ctl.cl[idx[k]];
			short re = pfd[2 + k].revents;
			if (!re || c->fd < 0)
				continue;
			if (out_pending(c)) {
				if (client_flush(c) < 0 || (re & (POLLERR | POLLHUP) && out_pending(c))) {
					client_close(c);
					continue;
				}
				if (out_pending(c))
					continue;
				/* the reply is out: serve the requests already buffered */
				if (client_lines(c) < 0)
					client_close(c);
			} else {
				client_read(c);
			}
		}
		if (pfd[1].revents & POLLIN)
			client_accept(now_ms());
	}
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		client_close(&ctl.cl[i]);
	return NULL;
}

/* ---- life cycle ---- */

static void cleanup_locked(void)
{
	if (ctl.lfd >= 0)
		close(ctl.lfd);
	for (int i = 0; i < 2; i++)
		if (ctl.wake[i] >= 0)
			close(ctl.wake[i]);
	ctl.lfd = ctl.wake[0] = ctl.wake[1] = -1;
	if (ctl.path) {
		/* remove the socket file only if it is still ours */
		struct stat st;
		if (lstat(ctl.path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == ctl.dev &&
		    st.st_ino == ctl.ino)
			unlink(ctl.path);
		free(ctl.path);
		ctl.path = NULL;
	}
}

int vmst_control_start(const char *path)
{
	if (!path || !*path)
		return -EINVAL;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);

	pthread_mutex_lock(&ctl.lock);
	int rc = 0;
	if (ctl.running) {
		rc = -EALREADY;
		goto out;
	}
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		ctl.cl[i] = (struct client){ .fd = -1 };

	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			rc = -EEXIST;   /* never replace a file that is not a socket */
			goto out;
		}
		/* a socket: in use by a live server, or left over by a dead one */
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe < 0) {
			rc = -errno;
			goto out;
		}
		int live = connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0;
		close(probe);
		if (live) {
			rc = -EADDRINUSE;
			goto out;
		}
		if (unlink(path) != 0 && errno != ENOENT) {
			rc = -errno;
			goto out;
		}
	}

	ctl.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ctl.lfd < 0) {
		rc = -errno;
		goto fail;
	}
	if (bind(ctl.lfd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		rc = -errno;
		goto fail;
	}
	ctl.path = strdup(path);
	if (!ctl.path) {
		unlink(path);
		rc = -ENOMEM;
		goto fail;
	}
	/* Owner only. Nobody can connect before listen(), so tightening the mode here leaves no
	 * window, without touching the process-wide umask under other threads' feet. */
	if (chmod(path, 0600) != 0 || lstat(path, &st) != 0) {
		rc = -errno;
		unlink(path);
		goto fail;
	}
	ctl.dev = st.st_dev;
	ctl.ino = st.st_ino;
	if (listen(ctl.lfd, 8) != 0 || pipe2(ctl.wake, O_CLOEXEC) != 0) {
		rc = -errno;
		goto fail;
	}

	/* the server thread takes no signal meant for the program */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&ctl.thread, NULL, server, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0) {
		rc = -e;
		goto fail;
	}
	ctl.running = true;
	goto out;
fail:
	cleanup_locked();
out:
	pthread_mutex_unlock(&ctl.lock);
	return rc;
}

void vmst_control_after_fork(void)
{
	pthread_mutex_init(&ctl.lock, NULL);
	if (!ctl.running)
		return;
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		client_close(&ctl.cl[i]);
	free(ctl.path);   /* the socket file stays: it is the parent's */
	ctl.path = NULL;
	cleanup_locked();
	ctl.running = false;
}

void vmst_control_stop(void)
{
	pthread_mutex_lock(&ctl.lock);
	if (ctl.running) {
		char c = 1;
		ssize_t w;
		do
			w = write(ctl.wake[1], &c, 1);
		while (w < 0 && errno == EINTR);
		pthread_join(ctl.thread, NULL);
		ctl.running = false;
		cleanup_locked();
	}
	pthread_mutex_unlock(&ctl.lock);
}
