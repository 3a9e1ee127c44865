/* Test helpers: a raw client of the control socket (connect, send bytes, read one line). */
#ifndef CTL_CLIENT_H
#define CTL_CLIENT_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

static inline int ctl_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(path);
	if (n >= sizeof sa.sun_path)
		return -1;
	memcpy(sa.sun_path, path, n + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		close(fd);
		return -1;
	}
	struct timeval tv = { 5, 0 };   /* a hung server fails the test instead of hanging it */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	return fd;
}

static inline int ctl_send(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One reply line (malloc'd, without the newline), or NULL on EOF/timeout. */
static inline char *ctl_read_line(int fd)
{
	size_t cap = 256, len = 0;
	char *s = malloc(cap);
	for (;;) {
		char c;
		ssize_t r = recv(fd, &c, 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(s);
			return NULL;
		}
		if (c == '\n')
			break;
		if (len + 2 > cap)
			s = realloc(s, cap *= 2);
		s[len++] = c;
	}
	s[len] = '\0';
	return s;
}

/* Connect, send line + "\n", read the reply, close. */
static inline char *ctl_roundtrip(const char *path, const char *line)
{
	int fd = ctl_connect(path);
	if (fd < 0)
		return NULL;
	char *r = NULL;
	if (ctl_send(fd, line, strlen(line)) == 0 && ctl_send(fd, "\n", 1) == 0)
		r = ctl_read_line(fd);
	close(fd);
	return r;
}

/* A socket path of its own in /tmp: a build directory can be deeper than the 108 bytes a
 * UNIX socket address holds. */
static inline const char *ctl_test_path(const char *tag)
{
	static char buf[4][100];
	static int slot;
	slot = (slot + 1) & 3;
	snprintf(buf[slot], sizeof buf[slot], "/tmp/vmst-test-%d-%.40s", (int)getpid(), tag);
	return buf[slot];
}

#endif
