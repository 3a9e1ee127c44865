/* Running Debian's trace-cmd on the files we write, and reading its text back: the independent
 * reader of these tests. Tests skip (with a message) when trace-cmd is not installed. */
#ifndef VMS_TEST_TRACECMD_UTIL_H
#define VMS_TEST_TRACECMD_UTIL_H

#include "testutil.h"

#define VMS_REQUIRE_TRACECMD()                                                          \
	do {                                                                            \
		if (system("command -v trace-cmd >/dev/null 2>&1") != 0) {               \
			print_message("# trace-cmd is not installed: skipped\n");         \
			skip();                                                         \
		}                                                                       \
	} while (0)

/* Output of a shell command (stdout; stderr to a file whose size goes to *err_bytes), with
 * every run of blanks collapsed to one space, and none after a ']', so that column padding
 * does not matter. */
static inline char *run_capture(const char *cmd, int *status, long *err_bytes)
{
	char errfile[4200], full[16800];
	snprintf(errfile, sizeof errfile, "%s/test-tmp/stderr-%d.txt", vms_test_build(), (int)getpid());
	snprintf(full, sizeof full, "%s 2>'%s'", cmd, errfile);
	FILE *p = popen(full, "r");
	if (!p)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	int c, blank = 0, prev = 0;
	while (buf && (c = fgetc(p)) != EOF) {
		if (c == ' ' || c == '\t') {
			if (blank || prev == ']') /* "[001]   777:" -> "[001]777:" */
				continue;
			blank = 1;
			c = ' ';
		} else {
			blank = 0;
		}
		if (n + 2 > cap) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
		}
		buf[n++] = (char)c;
		prev = c;
	}
	if (buf)
		buf[n] = '\0';
	int st = pclose(p);
	if (status)
		*status = st;
	if (err_bytes) {
		FILE *e = fopen(errfile, "r");
		*err_bytes = -1;
		if (e) {
			fseek(e, 0, SEEK_END);
			*err_bytes = ftell(e);
			fclose(e);
		}
	}
	unlink(errfile);
	return buf;
}

/* Number of occurrences of `needle` in `hay`. A plain loop: the sanitizers' strstr computes
 * strlen(hay) on every call, which makes repeated searches in a large report quadratic. */
static inline size_t count_str(const char *hay, const char *needle)
{
	size_t n = 0, l = strlen(needle);
	for (const char *p = hay; *p; p++)
		if (*p == *needle && !strncmp(p, needle, l)) {
			n++;
			p += l - 1;
		}
	return n;
}

/* One line of `trace-cmd report --raw-ts`: "COMM-PID [CPU]TS: EVENT: FIELDS". */
struct tc_line {
	int pid;
	int cpu;
	unsigned long long ts;
	char event[32];
	const char *fields; /* into the buffer, up to the end of the line */
};

/* Parse the line starting at *pos; advance *pos. Returns 0 at the end, -1 for a line that is
 * not an event (headers), 1 for an event. */
static inline int tc_next(char **pos, struct tc_line *l)
{
	char *s = *pos;
	if (!*s)
		return 0;
	char *eol = s;
	while (*eol && *eol != '\n') /* not strchr: see count_str */
		eol++;
	*pos = *eol ? eol + 1 : eol;
	*eol = '\0';
	char *br = strstr(s, " [");
	char *close = br ? strchr(br, ']') : NULL;
	if (!br || !close)
		return -1;
	char *dash = br;
	while (dash > s && dash[-1] != '-')
		dash--;
	if (dash == s)
		return -1;
	l->pid = atoi(dash);
	l->cpu = atoi(br + 2);
	char *end;
	l->ts = strtoull(close + 1, &end, 10);
	if (*end != ':')
		return -1;
	char *ev = end + 1;
	while (*ev == ' ')
		ev++;
	char *colon = strchr(ev, ':');
	if (!colon || colon - ev >= (long)sizeof l->event)
		return -1;
	memcpy(l->event, ev, (size_t)(colon - ev));
	l->event[colon - ev] = '\0';
	l->fields = colon + 1;
	while (*l->fields == ' ')
		l->fields++;
	return 1;
}

#endif
