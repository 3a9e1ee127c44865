#include <math.h>
#include <string.h>

#include "vmscope/writers.h"

void vms_json_init(struct vms_json *j, FILE *f, bool pretty)
{
	memset(j, 0, sizeof *j);
	j->f = f;
	j->pretty = pretty;
	j->first[0] = true;
}

static void indent(struct vms_json *j)
{
	if (!j->pretty)
		return;
	fputc('\n', j->f);
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->f);
}

static void put_escaped(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

/* comma, newline/indent and key before a value */
static void prefix(struct vms_json *j, const char *key)
{
	if (j->depth > 0) {
		if (!j->first[j->depth])
			fputc(',', j->f);
		j->first[j->depth] = false;
		indent(j);
	}
	if (key) {
		put_escaped(j->f, key);
		fputs(j->pretty ? ": " : ":", j->f);
	}
}

static void open_(struct vms_json *j, const char *key, char c)
{
	prefix(j, key);
	fputc(c, j->f);
	if (j->depth < 63)
		j->depth++;
	j->first[j->depth] = true;
}

static void close_(struct vms_json *j, char c)
{
	bool empty = j->first[j->depth];
	if (j->depth > 0)
		j->depth--;
	if (!empty)
		indent(j);
	fputc(c, j->f);
}

void vms_json_begin_object(struct vms_json *j, const char *key) { open_(j, key, '{'); }
void vms_json_end_object(struct vms_json *j) { close_(j, '}'); }
void vms_json_begin_array(struct vms_json *j, const char *key) { open_(j, key, '['); }
void vms_json_end_array(struct vms_json *j) { close_(j, ']'); }

void vms_json_string(struct vms_json *j, const char *key, const char *v)
{
	prefix(j, key);
	if (v)
		put_escaped(j->f, v);
	else
		fputs("null", j->f);
}

void vms_json_uint(struct vms_json *j, const char *key, uint64_t v)
{
	prefix(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void vms_json_int(struct vms_json *j, const char *key, int64_t v)
{
	prefix(j, key);
	fprintf(j->f, "%lld", (long long)v);
}

void vms_json_double(struct vms_json *j, const char *key, double v)
{
	prefix(j, key);
	if (!isfinite(v)) {
		fputs("null", j->f);
		return;
	}
	/* a float stays a float: 1.0 is written "1.0", not "1" (one type per field) */
	char buf[40];
	snprintf(buf, sizeof buf, "%.17g", v);
	fputs(buf, j->f);
	if (!strpbrk(buf, ".eE"))
		fputs(".0", j->f);
}

void vms_json_bool(struct vms_json *j, const char *key, bool v)
{
	prefix(j, key);
	fputs(v ? "true" : "false", j->f);
}

void vms_json_null(struct vms_json *j, const char *key)
{
	prefix(j, key);
	fputs("null", j->f);
}

void vms_json_finish(struct vms_json *j)
{
	fputc('\n', j->f);
}
