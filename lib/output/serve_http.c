/* The HTTP transport of `vmscope serve` (vmscope/serve.h): a loopback listener, the token,
 * and the checks that refuse a request before any handler sees it. Every byte of a request is
 * untrusted (any local program, or a page of another site through the browser, can send
 * one): bounded reads with a deadline, nothing allocated from what the request claims. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "vmscope/serve.h"

struct vms_server {
	int fd;
	uint16_t port;
	char token[33];
	struct vms_http_req req;   /* the request being served (12 KiB: not on the stack) */
};

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decode s[0, n) into out (cap bytes with the NUL); plus is a space in a query.
 * false when an escape is malformed, decodes to NUL, or the result does not fit. */
static bool decode(const char *s, size_t n, bool query, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];
		if (c == '%') {
			if (i + 2 >= n)
				return false;
			int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
			if (h < 0 || l < 0)
				return false;
			c = h * 16 + l;
			i += 2;
		} else if (c == '+' && query) {
			c = ' ';
		}
		if (c == 0 || o + 1 >= cap)
			return false;
		out[o++] = (char)c;
	}
	out[o] = 0;
	return true;
}

const char *vms_http_param(const struct vms_http_req *r, const char *key)
{
	for (uint32_t i = 0; i < r->nr_params; i++)
		if (!strcmp(r->key[i], key))
			return r->val[i];
	return NULL;
}

void vms_http_json_escape(FILE *f, const char *v)
{
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f || *p >= 0x80)
			fprintf(f, "\\u%04x", *p);   /* bytes from a trace: never invalid UTF-8 */
		else
			fputc(*p, f);
	}
}

struct vms_server *vms_server_new(uint16_t port, struct vms_error *err)
{
	struct vms_server *s = calloc(1, sizeof *s);
	if (!s) {
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	unsigned char rnd[16];
	size_t got = 0;
	while (got < sizeof rnd) {
		ssize_t r = getrandom(rnd + got, sizeof rnd - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			vms_error_set(err, VMS_ERR_IO, "no random token: getrandom: %s", strerror(errno));
			free(s);
			return NULL;
		}
		got += (size_t)r;
	}
	for (size_t i = 0; i < sizeof rnd; i++)
		snprintf(s->token + 2 * i, 3, "%02x", rnd[i]);
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	if (s->fd < 0 || setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(s->fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(s->fd, 16) < 0 ||
	    getsockname(s->fd, (struct sockaddr *)&a, &al) < 0) {
		vms_error_set(err, errno == EADDRINUSE || errno == EACCES ? VMS_ERR_USAGE : VMS_ERR_IO,
			      "cannot listen on 127.0.0.1:%u: %s", port, strerror(errno));
		if (s->fd >= 0)
			close(s->fd);
		free(s);
		return NULL;
	}
	s->port = ntohs(a.sin_port);
	return s;
}

void vms_server_free(struct vms_server *s)
{
	if (!s)
		return;
	close(s->fd);
	free(s);
}

uint16_t vms_server_port(const struct vms_server *s) { return s->port; }
const char *vms_server_token(const struct vms_server *s) { return s->token; }

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void send_all(int fd, const char *p, size_t n)
{
	int64_t deadline = now_ms() + VMS_HTTP_TIMEOUT_MS;
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && (errno == EINTR))
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int64_t left = deadline - now_ms();
			struct pollfd pf = { .fd = fd, .events = POLLOUT };
			if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
				return;   /* a reader that does not read: dropped */
			continue;
		}
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static const char *reason_of(int st)
{
	switch (st) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 414: return "URI Too Long";
	case 421: return "Misdirected Request";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "Error";
	}
}

static void respond(int fd, int st, const char *type, const char *body, size_t n, bool head)
{
	char h[512];
	int hn = snprintf(h, sizeof h,
			  "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			  "Connection: close\r\nCache-Control: no-store\r\n"
			  "X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n"
			  "Content-Security-Policy: default-src 'self'; script-src 'unsafe-inline'; "
			  "style-src 'unsafe-inline'; img-src data:; connect-src 'self'\r\n\r\n",
			  st, reason_of(st), type, n);
	send_all(fd, h, (size_t)hn);
	if (!head && n)
		send_all(fd, body, n);
}

static void refuse(int fd, int st, const char *why)
{
	char b[256];
	int n = snprintf(b, sizeof b, "{\"error\":\"%s\",\"status\":%d}\n", why, st);
	respond(fd, st, "application/json", b, (size_t)n, false);
}

/* Read the request head (up to the empty line) into buf; its length, or -status. */
static int read_head(int fd, char *buf, size_t cap, size_t *len)
{
	int64_t deadline = now_ms() + VMS_HTTP_TIMEOUT_MS;
	size_t n = 0;
	for (;;) {
		int64_t left = deadline - now_ms();
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		if (left <= 0)
			return -408;
		int pr = poll(&pf, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return -408;
		ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			return n ? -400 : 0;   /* closed without a request: nothing to answer */
		n += (size_t)r;
		buf[n] = 0;
		char *eol = memchr(buf, '\n', n);
		if (!eol && n > VMS_HTTP_LINE_MAX)
			return -414;
		if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n")) {
			*len = n;
			return 1;
		}
		if (n >= cap - 1)
			return eol && (size_t)(eol - buf) > VMS_HTTP_LINE_MAX ? -414 : -431;
	}
}

/* Split the query into the request's parameters; a status on refusal, else 0. */
static int parse_query(struct vms_http_req *r, const char *q, size_t n)
{
	size_t i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && q[j] != '&')
			j++;
		if (j > i) {
			if (r->nr_params >= VMS_HTTP_MAX_PARAMS)
				return 400;
			const char *eq = memchr(q + i, '=', j - i);
			size_t kl = eq ? (size_t)(eq - (q + i)) : j - i;
			if (!decode(q + i, kl, true, r->key[r->nr_params], VMS_HTTP_PARAM_MAX + 1))
				return 400;
			const char *v = eq ? eq + 1 : q + j;
			if (!decode(v, (size_t)(q + j - v), true, r->val[r->nr_params],
				    VMS_HTTP_PARAM_MAX + 1))
				return 400;
			for (uint32_t k = 0; k < r->nr_params; k++)
				if (!strcmp(r->key[k], r->key[r->nr_params]))
					return 400;   /* a parameter twice: which one counts is a guess */
			r->nr_params++;
		}
		i = j + 1;
	}
	return 0;
}

static bool token_eq(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned diff = la != lb;
	for (size_t i = 0; i < la && i < lb; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return !diff;
}

/* One connection: one request, one answer. */
static void serve_one(struct vms_server *s, int fd, vms_http_handler fn, void *ctx)
{
	char buf[VMS_HTTP_HEAD_MAX + 1];
	size_t n = 0;
	int r = read_head(fd, buf, sizeof buf, &n);
	if (r <= 0) {
		if (r < 0)
			refuse(fd, -r, r == -408 ? "request timeout" : r == -414 ? "request line too long"
				       : r == -431 ? "request head too large" : "malformed request");
		return;
	}
	char *line_end = strpbrk(buf, "\r\n");
	*line_end = 0;
	if ((size_t)(line_end - buf) > VMS_HTTP_LINE_MAX)
		return refuse(fd, 414, "request line too long");
	/* METHOD SP target SP HTTP/1.x */
	char *sp1 = strchr(buf, ' ');
	char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	if (!sp1 || !sp2 || strchr(sp2 + 1, ' ') || strncmp(sp2 + 1, "HTTP/1.", 7) ||
	    (sp2[8] != '0' && sp2[8] != '1') || sp2[9])
		return refuse(fd, 400, "malformed request line");
	*sp1 = *sp2 = 0;
	bool head = !strcmp(buf, "HEAD");
	if (strcmp(buf, "GET") && !head)
		return refuse(fd, 405, "only GET");
	char *target = sp1 + 1;
	if (*target != '/')
		return refuse(fd, 400, "the target is not a path");
	for (char *p = target; *p; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return refuse(fd, 400, "bytes not allowed in a target");
	/* headers: Host (exactly one), no body */
	char host[300] = "";
	int nr_host = 0;
	char *p = line_end + 1;
	if (*p == '\n')
		p++;
	while (*p && *p != '\r' && *p != '\n') {
		char *e = strpbrk(p, "\r\n");
		if (!e)
			return refuse(fd, 400, "malformed header");
		*e = 0;
		char *colon = strchr(p, ':');
		if (!colon || colon == p)
			return refuse(fd, 400, "malformed header");
		*colon = 0;
		char *v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		size_t vl = strlen(v);
		while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
			v[--vl] = 0;
		if (!strcasecmp(p, "Host")) {
			if (nr_host++ || vl >= sizeof host)
				return refuse(fd, 400, "bad Host header");
			memcpy(host, v, vl + 1);
		} else if (!strcasecmp(p, "Content-Length")) {
			if (strcmp(v, "0"))
				return refuse(fd, 400, "a request has no body here");
		} else if (!strcasecmp(p, "Transfer-Encoding")) {
			return refuse(fd, 400, "a request has no body here");
		}
		p = e + 1;
		if (*p == '\n')
			p++;
	}
	if (!nr_host)
		return refuse(fd, 400, "no Host header");
	char a1[40], a2[40];
	snprintf(a1, sizeof a1, "127.0.0.1:%u", s->port);
	snprintf(a2, sizeof a2, "localhost:%u", s->port);
	if (strcmp(host, a1) && strcasecmp(host, a2))
		return refuse(fd, 421, "not this server's host");
	struct vms_http_req *req = &s->req;
	memset(req, 0, sizeof *req);
	char *q = strchr(target, '?');
	size_t plen = q ? (size_t)(q - target) : strlen(target);
	if (!decode(target, plen, false, req->path, sizeof req->path))
		return refuse(fd, 400, "malformed path");
	int qs = q ? parse_query(req, q + 1, strlen(q + 1)) : 0;
	if (qs)
		return refuse(fd, qs, "malformed or too many parameters");
	const char *tok = vms_http_param(req, "token");
	if (!tok || !token_eq(tok, s->token))
		return refuse(fd, 403, "no or wrong token");
	char *out = NULL;
	size_t olen = 0;
	struct vms_http_resp resp = { .status = 404, .content_type = "application/json" };
	resp.body = open_memstream(&out, &olen);
	if (!resp.body)
		return refuse(fd, 503, "out of memory");
	fn(ctx, req, &resp);
	if (fclose(resp.body) != 0) {
		free(out);
		return refuse(fd, 503, "out of memory");
	}
	if (resp.status == 404 && !olen)
		refuse(fd, 404, "no such page");
	else
		respond(fd, resp.status, resp.content_type, out, olen, head);
	free(out);
}

/* Read what the client still sends (a refused request's rest) for a short while: closing a
 * socket with unread bytes resets the connection, and the client may lose the answer. */
static void drain(int fd)
{
	char b[4096];
	int64_t deadline = now_ms() + 200;
	size_t total = 0;
	while (total < (256u << 10)) {
		int64_t left = deadline - now_ms();
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
			return;
		ssize_t r = recv(fd, b, sizeof b, 0);
		if (r <= 0)
			return;
		total += (size_t)r;
	}
}

int vms_server_run(struct vms_server *s, vms_http_handler fn, void *ctx,
		   volatile sig_atomic_t *stop, struct vms_error *err)
{
	while (!*stop) {
		struct pollfd pf = { .fd = s->fd, .events = POLLIN };
		int pr = poll(&pf, 1, 500);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return vms_error_set(err, VMS_ERR_IO, "poll: %s", strerror(errno));
		if (!pr)
			continue;
		int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (c < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED ||
			    errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				continue;
			return vms_error_set(err, VMS_ERR_IO, "accept: %s", strerror(errno));
		}
		serve_one(s, c, fn, ctx);
		shutdown(c, SHUT_WR);
		drain(c);
		close(c);
	}
	return 0;
}
