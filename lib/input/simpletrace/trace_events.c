/* QEMU trace-events parsing, following scripts/tracetool/__init__.py: an event line is
 * optional property words, the name, the argument list up to the first ')', then the format.
 * An argument containing '*' splits at its last '*' (type keeps the '*'), otherwise at its
 * last blank; "void" alone means no argument. A type is a string when it starts with
 * "const char*", "char*", "const char *" or "char *" (tracetool/backend/simple.py), which is
 * exactly when simpletrace wrote a u32 length and the bytes instead of a u64. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_events.h"

static int is_word(int c)
{
	return isalnum(c) || c == '_';
}

static char *dup_range(const char *b, const char *e)
{
	char *s = malloc((size_t)(e - b) + 1);
	if (s) {
		memcpy(s, b, (size_t)(e - b));
		s[e - b] = '\0';
	}
	return s;
}

void vms_st_desc_free(struct vms_st_desc *d)
{
	free(d->name);
	for (uint32_t i = 0; i < d->nargs; i++)
		free(d->arg_name[i]);
	memset(d, 0, sizeof *d);
}

static int is_string_type(const char *b, const char *e)
{
	static const char *const prefixes[] = { "const char*", "char*", "const char *", "char *" };
	while (b < e && isspace((unsigned char)*b))
		b++;
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
		size_t n = strlen(prefixes[i]);
		if ((size_t)(e - b) >= n && !memcmp(b, prefixes[i], n))
			return 1;
	}
	return 0;
}

/* One argument "type name" in [b, e), already trimmed. */
static int parse_arg(const char *b, const char *e, struct vms_st_desc *d, const char **why)
{
	const char *star = NULL;
	for (const char *p = b; p < e; p++)
		if (*p == '*')
			star = p;
	const char *tb = b, *te, *nb;
	if (star) {
		te = star + 1;
		nb = star + 1;
	} else {
		const char *p = e;
		while (p > b && !isspace((unsigned char)p[-1]))
			p--;
		if (p == b)
			return *why = "argument without a type", -1;
		te = p;
		nb = p;
	}
	while (nb < e && isspace((unsigned char)*nb))
		nb++;
	if (nb == e)
		return *why = "argument without a name", -1;
	for (const char *p = nb; p < e; p++)
		if (!is_word((unsigned char)*p))
			return *why = "argument name is not an identifier", -1;
	if (d->nargs == VMS_ST_MAX_ARGS)
		return *why = "more than 10 arguments", -1;
	uint32_t i = d->nargs;
	d->arg_name[i] = dup_range(nb, e);
	if (!d->arg_name[i])
		return *why = NULL, VMS_ERR_NOMEM;
	d->arg_name_len[i] = (uint32_t)(e - nb);
	if (is_string_type(tb, te))
		d->str_mask |= 1u << i;
	d->nargs++;
	return 0;
}

int vms_st_events_parse_line(const char *line, struct vms_st_desc *d, const char **why)
{
	memset(d, 0, sizeof *d);
	const char *p = line;
	while (*p && isspace((unsigned char)*p))
		p++;
	if (!*p || *p == '#')
		return 0;
	const char *open = strchr(p, '(');
	if (!open)
		return *why = "no '(' after the event name", -1;
	/* before '(': property words and the name, word characters and blanks only */
	for (const char *q = p; q < open; q++)
		if (!is_word((unsigned char)*q) && !isspace((unsigned char)*q))
			return *why = "event name is not an identifier", -1;
	const char *ne = open, *nb = open;
	while (nb > p && is_word((unsigned char)nb[-1]))
		nb--;
	if (nb == ne)
		return *why = "no event name before '('", -1;
	const char *close = strchr(open, ')');
	if (!close)
		return *why = "no ')' after the arguments", -1;
	d->name = dup_range(nb, ne);
	if (!d->name)
		return *why = NULL, VMS_ERR_NOMEM;
	const char *a = open + 1;
	while (a <= close) {
		const char *c = a;
		while (c < close && *c != ',')
			c++;
		const char *b = a, *e = c;
		while (b < e && isspace((unsigned char)*b))
			b++;
		while (e > b && isspace((unsigned char)e[-1]))
			e--;
		if (b == e) {
			if (c == close && a == open + 1)   /* "name()" */
				break;
			vms_st_desc_free(d);
			return *why = "empty argument", -1;
		}
		int ra = e - b == 4 && !memcmp(b, "void", 4) ? 0 : parse_arg(b, e, d, why);
		if (ra < 0) {
			vms_st_desc_free(d);
			return ra;
		}
		a = c + 1;
	}
	return 1;
}

static int cmp_desc(const void *a, const void *b)
{
	return strcmp(((const struct vms_st_desc *)a)->name, ((const struct vms_st_desc *)b)->name);
}

int vms_st_events_load(struct vms_st_events *ev, const char *path, struct vms_error *err)
{
	memset(ev, 0, sizeof *ev);
	FILE *f = fopen(path, "r");
	if (!f)
		return vms_error_open(err, path, errno, 0);
	char *line = NULL;
	size_t cap = 0, alloc = 0;
	ssize_t n;
	unsigned long lineno = 0;
	uint64_t off = 0, next = 0; /* the line's byte offset, for an out-of-memory message */
	int rc = 0;
	while ((n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		off = next;
		next += (uint64_t)n;
		if ((size_t)n != strlen(line)) {
			rc = vms_error_set(err, VMS_ERR_FORMAT, "%s: NUL byte at line %lu", path, lineno);
			break;
		}
		struct vms_st_desc d;
		const char *why = NULL;
		int r = vms_st_events_parse_line(line, &d, &why);
		if (r == VMS_ERR_NOMEM) {
			rc = vms_error_nomem_at(err, path, off);
			break;
		}
		if (r < 0) {
			rc = vms_error_set(err, VMS_ERR_FORMAT, "%s: %s at line %lu", path, why, lineno);
			break;
		}
		if (r == 0)
			continue;
		if (ev->n == alloc) {
			size_t na = alloc ? alloc * 2 : 256;
			struct vms_st_desc *nd = realloc(ev->desc, na * sizeof *nd);
			if (!nd) {
				vms_st_desc_free(&d);
				rc = vms_error_nomem_at(err, path, off);
				break;
			}
			ev->desc = nd;
			alloc = na;
		}
		ev->desc[ev->n++] = d;
	}
	if (!rc && ferror(f))
		rc = vms_error_set(err, VMS_ERR_IO, "%s: read error", path);
	free(line);
	fclose(f);
	if (rc) {
		vms_st_events_free(ev);
		return rc;
	}
	qsort(ev->desc, ev->n, sizeof *ev->desc, cmp_desc);
	return 0;
}

const struct vms_st_desc *vms_st_events_find(const struct vms_st_events *ev, const char *name,
					     size_t len)
{
	size_t lo = 0, hi = ev->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *m = ev->desc[mid].name;
		int c = strncmp(m, name, len);
		if (c == 0 && m[len] != '\0')
			c = 1;
		if (c == 0)
			return &ev->desc[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void vms_st_events_free(struct vms_st_events *ev)
{
	for (size_t i = 0; i < ev->n; i++)
		vms_st_desc_free(&ev->desc[i]);
	free(ev->desc);
	memset(ev, 0, sizeof *ev);
}
