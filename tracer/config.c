/* The VMSCOPE_TRACE configuration string (QEMU's -trace shape) and events=FILE lists. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int add_pattern(struct vmst_config *cfg, const char *text)
{
	bool enable = true;
	if (*text == '-') {
		enable = false;
		text++;
	}
	if (!*text)
		return 0;
	struct vmst_pattern *p = realloc(cfg->pat, (cfg->npat + 1) * sizeof *p);
	if (!p)
		return -ENOMEM;
	cfg->pat = p;
	p[cfg->npat].glob = strdup(text);
	if (!p[cfg->npat].glob)
		return -ENOMEM;
	p[cfg->npat].enable = enable;
	cfg->npat++;
	return 0;
}

/* events=FILE: one glob per line, '-' prefix disables, '#' comments, blank lines. */
static int read_events_file(struct vmst_config *cfg, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		int e = errno;
		fprintf(stderr, "vmstrace: events=%s: %s\n", path, strerror(e));
		return -e;
	}
	char line[1024];
	int rc = 0;
	while (rc == 0 && fgets(line, sizeof line, f)) {
		char *s = line;
		while (isspace((unsigned char)*s))
			s++;
		size_t n = strlen(s);
		while (n && isspace((unsigned char)s[n - 1]))
			s[--n] = 0;
		if (!*s || *s == '#')
			continue;
		rc = add_pattern(cfg, s);
	}
	fclose(f);
	return rc;
}

static int parse_size(const char *v, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || end == v)
		return -EINVAL;
	if (*end == 'k' || *end == 'K')
		x <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		x <<= 20, end++;
	if (*end)
		return -EINVAL;
	*out = x;
	return 0;
}

int vmst_config_parse(const char *text, struct vmst_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->period_ms = 100;
	cfg->bufsize = 2u << 20;
	cfg->subbufs = 8;
	cfg->clock = -1;
	if (!text)
		text = "";
	char *copy = strdup(text);
	if (!copy)
		return -ENOMEM;
	int rc = 0;
	char *save = NULL;
	for (char *item = strtok_r(copy, ",", &save); item && rc == 0;
	     item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		if (!eq) {
			/* QEMU accepts a bare pattern as enable=PATTERN */
			rc = add_pattern(cfg, item);
			continue;
		}
		*eq = 0;
		const char *k = item, *v = eq + 1;
		uint64_t x;
		if (!strcmp(k, "enable")) {
			rc = add_pattern(cfg, v);
		} else if (!strcmp(k, "events")) {
			rc = read_events_file(cfg, v);
		} else if (!strcmp(k, "file")) {
			free(cfg->dir);
			cfg->dir = strdup(v);
		} else if (!strcmp(k, "socket")) {
			free(cfg->socket);
			cfg->socket = strdup(v);
		} else if (!strcmp(k, "period")) {
			if (parse_size(v, &x) || x == 0 || x > 3600000)
				goto bad;
			cfg->period_ms = (uint32_t)x;
		} else if (!strcmp(k, "bufsize")) {
			if (parse_size(v, &x) || x < 1024 || x > (1ull << 32))
				goto bad;
			cfg->bufsize = x;
		} else if (!strcmp(k, "subbufs")) {
			if (parse_size(v, &x) || x < 2 || x > 1024)
				goto bad;
			cfg->subbufs = (uint32_t)x;
		} else if (!strcmp(k, "clock")) {
			if (!strcmp(v, "tsc"))
				cfg->clock = 1;
			else if (!strcmp(v, "monotonic"))
				cfg->clock = 0;
			else
				goto bad;
		} else {
			fprintf(stderr, "vmstrace: VMSCOPE_TRACE: unknown key '%s'\n", k);
			rc = -EINVAL;
		}
		continue;
bad:
		fprintf(stderr, "vmstrace: VMSCOPE_TRACE: bad value for %s: '%s'\n", k, v);
		rc = -EINVAL;
	}
	free(copy);
	if (rc == 0 && cfg->bufsize / cfg->subbufs > (16u << 20)) {
		fprintf(stderr, "vmstrace: VMSCOPE_TRACE: sub-buffers are limited to 16 MiB\n");
		rc = -EINVAL;
	}
	if (rc == 0 && cfg->bufsize / cfg->subbufs < 256) {
		fprintf(stderr, "vmstrace: VMSCOPE_TRACE: sub-buffers must hold 256 bytes\n");
		rc = -EINVAL;
	}
	if (rc)
		vmst_config_free(cfg);
	return rc;
}

void vmst_config_free(struct vmst_config *cfg)
{
	for (size_t i = 0; i < cfg->npat; i++)
		free(cfg->pat[i].glob);
	free(cfg->pat);
	free(cfg->dir);
	free(cfg->socket);
	memset(cfg, 0, sizeof *cfg);
}
