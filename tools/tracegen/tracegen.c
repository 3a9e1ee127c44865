/* vmscope-tracegen: a QEMU-syntax trace-events file -> a C header of inline trace_NAME()
 * functions and a C file with the event table and the record writers.
 *
 *   vmscope-tracegen [--group NAME] [--include HEADER]... TRACE_EVENTS OUT.h OUT.c
 *
 * trace-events syntax (as QEMU's docs/devel/tracing.rst): one event per line,
 *   [PROPERTY...] name(type arg, ...) "format"
 * '#' comment lines and blank lines; properties before the name ("disable": the event
 * compiles to nothing; "tcg", "vcpu" accepted and ignored); "(void)" for no argument; at
 * most 10 arguments; the format is a C string that may use PRI* macros (kept verbatim).
 * Argument types: any integer type (its size and signedness come from the compiler:
 * sizeof and (T)-1 < 0, so QEMU typedefs like hwaddr work given --include of their header),
 * pointers (recorded as u64, shown in hex) and char pointers (recorded as strings). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 10
#define MAX_LINE 4096

enum kind { K_INT, K_PTR, K_STR };

struct arg {
	char type[128];
	char name[64];
	enum kind kind;
};

struct event {
	char name[128];
	bool disabled;
	int nargs;
	struct arg args[MAX_ARGS];
	char fmt[MAX_LINE];
	int line;
};

static const char *in_path;

static void die(int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "vmscope-tracegen: %s:%d: ", in_path, line);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static bool is_ident_start(int c)
{
	return isalpha(c) || c == '_';
}

static bool is_ident(int c)
{
	return isalnum(c) || c == '_';
}

static char *skip_ws(char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	return s;
}

static void trim(char *s)
{
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = 0;
}

/* "const char *name", "void* p", "uint64_t x": split into the type (normalized spacing,
 * '*' kept) and the name (the last identifier). */
static void parse_arg(char *text, struct arg *a, int line)
{
	trim(text);
	char *s = skip_ws(text);
	size_t n = strlen(s);
	if (n == 0)
		die(line, "empty argument");
	size_t e = n;
	if (!is_ident(s[e - 1]))
		die(line, "argument '%s' has no name", s);
	size_t b = e;
	while (b > 0 && is_ident(s[b - 1]))
		b--;
	if (!is_ident_start(s[b]))
		die(line, "bad argument name in '%s'", s);
	if (e - b >= sizeof a->name)
		die(line, "argument name too long");
	memcpy(a->name, s + b, e - b);
	a->name[e - b] = 0;
	/* type: s[0..b) with runs of blanks squeezed */
	char type[256];
	size_t t = 0;
	bool blank = false;
	for (size_t i = 0; i < b; i++) {
		if (isspace((unsigned char)s[i])) {
			blank = true;
			continue;
		}
		if (blank && t > 0 && t < sizeof type - 1 && s[i] != '*')
			type[t++] = ' ';
		if (blank && t > 0 && t < sizeof type - 1 && s[i] == '*' && type[t - 1] != '*')
			type[t++] = ' ';
		blank = false;
		if (t < sizeof type - 1)
			type[t++] = s[i];
	}
	type[t] = 0;
	if (t == 0)
		die(line, "argument '%s' has no type", a->name);
	if (t >= sizeof a->type)
		die(line, "argument type too long");
	strcpy(a->type, type);
	/* classify */
	char squeezed[256];
	size_t q = 0;
	for (size_t i = 0; type[i]; i++)
		if (!isspace((unsigned char)type[i]))
			squeezed[q++] = type[i];
	squeezed[q] = 0;
	int stars = 0;
	for (size_t i = 0; squeezed[i]; i++)
		stars += squeezed[i] == '*';
	if (stars == 1 && (!strcmp(squeezed, "constchar*") || !strcmp(squeezed, "char*") ||
			   !strcmp(squeezed, "charconst*") || !strcmp(squeezed, "constchar*const")))
		a->kind = K_STR;
	else if (stars > 0)
		a->kind = K_PTR;
	else if (strstr(squeezed, "float") || strstr(squeezed, "double"))
		die(line, "argument '%s': floating-point types are not supported", a->name);
	else
		a->kind = K_INT;
}

static bool parse_line(char *line, struct event *ev, int lineno)
{
	memset(ev, 0, sizeof *ev);
	ev->line = lineno;
	char *s = skip_ws(line);
	trim(s);
	if (!*s || *s == '#')
		return false;
	/* properties, then the name: identifiers up to the '(' */
	char *paren = strchr(s, '(');
	if (!paren)
		die(lineno, "expected 'name(args) \"format\"'");
	char head[512];
	size_t hl = (size_t)(paren - s);
	if (hl >= sizeof head)
		die(lineno, "line too long before '('");
	memcpy(head, s, hl);
	head[hl] = 0;
	char *words[16];
	int nw = 0;
	char *save = NULL;
	for (char *w = strtok_r(head, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (nw == 16)
			die(lineno, "too many properties");
		words[nw++] = w;
	}
	if (nw == 0)
		die(lineno, "event without a name");
	for (int i = 0; i < nw - 1; i++) {
		if (!strcmp(words[i], "disable"))
			ev->disabled = true;
		else if (strcmp(words[i], "tcg") && strcmp(words[i], "vcpu"))
			die(lineno, "unknown property '%s'", words[i]);
	}
	const char *name = words[nw - 1];
	if (!is_ident_start((unsigned char)name[0]))
		die(lineno, "bad event name '%s'", name);
	for (const char *c = name; *c; c++)
		if (!is_ident((unsigned char)*c))
			die(lineno, "bad event name '%s'", name);
	if (strlen(name) >= sizeof ev->name)
		die(lineno, "event name too long");
	strcpy(ev->name, name);
	char *close = strchr(paren, ')');
	if (!close)
		die(lineno, "missing ')'");
	*close = 0;
	char *args = skip_ws(paren + 1);
	trim(args);
	if (*args && strcmp(args, "void") != 0) {
		char *p = args;
		for (;;) {
			char *comma = strchr(p, ',');
			if (comma)
				*comma = 0;
			if (ev->nargs == MAX_ARGS)
				die(lineno, "event '%s' has more than %d arguments", ev->name, MAX_ARGS);
			parse_arg(p, &ev->args[ev->nargs++], lineno);
			if (!comma)
				break;
			p = comma + 1;
		}
	}
	for (int i = 0; i < ev->nargs; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(ev->args[i].name, ev->args[j].name))
				die(lineno, "argument '%s' appears twice", ev->args[i].name);
	char *fmt = skip_ws(close + 1);
	if (*fmt && *fmt != '"')
		die(lineno, "the format must be a C string");
	snprintf(ev->fmt, sizeof ev->fmt, "%s", *fmt ? fmt : "\"\"");
	return true;
}

static void params(FILE *f, const struct event *ev)
{
	if (ev->nargs == 0) {
		fprintf(f, "void");
		return;
	}
	for (int i = 0; i < ev->nargs; i++)
		fprintf(f, "%s%s%s%s", i ? ", " : "", ev->args[i].type,
			ev->args[i].type[strlen(ev->args[i].type) - 1] == '*' ? "" : " ",
			ev->args[i].name);
}

static void write_header(FILE *f, const char *group, struct event *evs, int n, int nen,
			 char **incs, int ninc)
{
	fprintf(f, "/* Generated by vmscope-tracegen from %s: do not edit. */\n", in_path);
	fprintf(f, "#ifndef VMST_GENERATED_%s_H\n#define VMST_GENERATED_%s_H\n\n", group, group);
	fprintf(f, "#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n");
	fprintf(f, "#include <vmscope/tracer-gen.h>\n");
	for (int i = 0; i < ninc; i++)
		fprintf(f, "#include %s\n", incs[i]);
	fprintf(f, "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
	fprintf(f, "extern uint8_t vmst_state_%s[%d];\n", group, nen ? nen : 1);
	fprintf(f, "extern struct vmst_table vmst_table_%s;\n\n", group);
	int idx = 0;
	for (int i = 0; i < n; i++) {
		struct event *ev = &evs[i];
		char upper[sizeof ev->name];
		for (size_t c = 0; c <= strlen(ev->name); c++)
			upper[c] = (char)toupper((unsigned char)ev->name[c]);
		if (ev->disabled) {
			fprintf(f, "#define TRACE_%s_ENABLED 0\n", upper);
			fprintf(f, "static inline bool trace_event_get_state_%s(void)\n{\n"
				   "\treturn false;\n}\n", ev->name);
			fprintf(f, "static inline void trace_%s(", ev->name);
			params(f, ev);
			fprintf(f, ")\n{\n");
			for (int a = 0; a < ev->nargs; a++)
				fprintf(f, "\t(void)%s;\n", ev->args[a].name);
			fprintf(f, "}\n\n");
			continue;
		}
		fprintf(f, "#define TRACE_%s_ENABLED 1\n", upper);
		fprintf(f, "void vmst_emit_%s_%s(", group, ev->name);
		params(f, ev);
		fprintf(f, ");\n");
		fprintf(f, "static inline bool trace_event_get_state_%s(void)\n{\n"
			   "\treturn __atomic_load_n(&vmst_state_%s[%d], __ATOMIC_RELAXED) != 0;\n}\n",
			ev->name, group, idx);
		fprintf(f, "static inline void trace_%s(", ev->name);
		params(f, ev);
		fprintf(f, ")\n{\n\tif (__builtin_expect(__atomic_load_n(&vmst_state_%s[%d], "
			   "__ATOMIC_RELAXED), 0))\n\t\tvmst_emit_%s_%s(",
			group, idx, group, ev->name);
		for (int a = 0; a < ev->nargs; a++)
			fprintf(f, "%s%s", a ? ", " : "", ev->args[a].name);
		fprintf(f, ");\n}\n\n");
		idx++;
	}
	fprintf(f, "#ifdef __cplusplus\n}\n#endif\n#endif\n");
}

static void write_source(FILE *f, const char *group, const char *hname, struct event *evs,
			 int n, int nen)
{
	fprintf(f, "/* Generated by vmscope-tracegen from %s: do not edit. */\n", in_path);
	fprintf(f, "#include <string.h>\n#include \"%s\"\n\n", hname);
	fprintf(f, "uint8_t vmst_state_%s[%d];\n\n", group, nen ? nen : 1);
	int idx = 0;
	for (int i = 0; i < n; i++) {
		struct event *ev = &evs[i];
		if (ev->disabled)
			continue;
		if (ev->nargs) {
			fprintf(f, "static const struct vmst_arg_desc vmst_args_%s_%s[] = {\n", group,
				ev->name);
			for (int a = 0; a < ev->nargs; a++) {
				struct arg *ar = &ev->args[a];
				if (ar->kind == K_INT)
					fprintf(f, "\t{\"%s\", \"%s\", VMST_ARG_INT, sizeof(%s), "
						   "VMST_SIGNED(%s)},\n",
						ar->name, ar->type, ar->type, ar->type);
				else if (ar->kind == K_PTR)
					fprintf(f, "\t{\"%s\", \"%s\", VMST_ARG_PTR, 8, 0},\n", ar->name,
						ar->type);
				else
					fprintf(f, "\t{\"%s\", \"%s\", VMST_ARG_STR, 0, 0},\n", ar->name,
						ar->type);
			}
			fprintf(f, "};\n");
		}
		/* the record writer */
		fprintf(f, "\nvoid vmst_emit_%s_%s(", group, ev->name);
		params(f, ev);
		fprintf(f, ")\n{\n");
		for (int a = 0; a < ev->nargs; a++) {
			struct arg *ar = &ev->args[a];
			if (ar->kind == K_INT)
				fprintf(f, "\t_Static_assert(sizeof(%s) <= 8, \"%s: integer types "
					   "only\");\n", ar->type, ar->name);
			if (ar->kind == K_STR)
				fprintf(f, "\tsize_t vmst__l%d = vmst__strlen(%s);\n", a, ar->name);
		}
		fprintf(f, "\tuint32_t vmst__len = VMST_EVENT_HEADER_SIZE");
		for (int a = 0; a < ev->nargs; a++) {
			struct arg *ar = &ev->args[a];
			if (ar->kind == K_INT)
				fprintf(f, " + (uint32_t)sizeof(%s)", ar->type);
			else if (ar->kind == K_PTR)
				fprintf(f, " + 8u");
			else
				fprintf(f, " + (uint32_t)vmst__l%d + 1u", a);
		}
		fprintf(f, ";\n\tstruct vmst_producer *vmst__p;\n"
			   "\tuint8_t *vmst__w0 = vmst__reserve(vmst__len, &vmst__p);\n"
			   "\tif (__builtin_expect(vmst__w0 == NULL, 0))\n\t\treturn;\n"
			   "\tuint8_t *vmst__w = vmst__put_header(vmst__w0, vmst_table_%s.base + %du);\n",
			group, idx);
		for (int a = 0; a < ev->nargs; a++) {
			struct arg *ar = &ev->args[a];
			if (ar->kind == K_INT)
				fprintf(f, "\t{\n\t\t%s vmst__v = %s;\n\t\tmemcpy(vmst__w, &vmst__v, "
					   "sizeof vmst__v);\n\t\tvmst__w += sizeof vmst__v;\n\t}\n",
					ar->type, ar->name);
			else if (ar->kind == K_PTR)
				fprintf(f, "\t{\n\t\tuint64_t vmst__v = (uint64_t)(uintptr_t)%s;\n"
					   "\t\tmemcpy(vmst__w, &vmst__v, 8);\n\t\tvmst__w += 8;\n\t}\n",
					ar->name);
			else
				fprintf(f, "\tvmst__w = vmst__put_str(vmst__w, %s, vmst__l%d);\n",
					ar->name, a);
		}
		fprintf(f, "\tvmst__commit(vmst__p, vmst__w0, vmst__w);\n}\n\n");
		idx++;
	}
	fprintf(f, "static const struct vmst_event_desc vmst_events_%s[] = {\n", group);
	for (int i = 0; i < n; i++) {
		struct event *ev = &evs[i];
		if (ev->disabled)
			continue;
		if (ev->nargs)
			fprintf(f, "\t{\"%s\", %s, %d, vmst_args_%s_%s},\n", ev->name, ev->fmt,
				ev->nargs, group, ev->name);
		else
			fprintf(f, "\t{\"%s\", %s, 0, NULL},\n", ev->name, ev->fmt);
	}
	if (nen == 0)
		fprintf(f, "\t{\"\", \"\", 0, NULL},\n");
	fprintf(f, "};\n\n");
	fprintf(f, "struct vmst_table vmst_table_%s = {\n\t.group = \"%s\",\n\t.n = %d,\n"
		   "\t.events = vmst_events_%s,\n\t.state = vmst_state_%s,\n};\n\n",
		group, group, nen, group, group);
	fprintf(f, "__attribute__((constructor)) static void vmst_register_%s(void)\n{\n"
		   "\tvmst_register(&vmst_table_%s);\n}\n", group, group);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: vmscope-tracegen [--group NAME] [--include HEADER]... "
		   "TRACE_EVENTS OUT.h OUT.c\n"
		   "Writes inline trace_NAME() functions (OUT.h) and the event table (OUT.c)\n"
		   "for the vmscope tracer library from a QEMU-syntax trace-events file.\n"
		   "  --group NAME      prefix of the generated symbols (default: from OUT.h)\n"
		   "  --include HEADER  add #include HEADER (\"x.h\" or <x.h>) to OUT.h, for the\n"
		   "                    types the events use\n");
}

/* "dir/trace-foo.h" -> "trace_foo" */
static void group_from(const char *path, char *out, size_t len)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t i = 0;
	for (; b[i] && b[i] != '.' && i < len - 1; i++)
		out[i] = is_ident((unsigned char)b[i]) ? b[i] : '_';
	out[i] = 0;
	if (!i || isdigit((unsigned char)out[0]))
		snprintf(out, len, "events");
}

int main(int argc, char **argv)
{
	char group[64] = "";
	char *incs[64];
	int ninc = 0;
	int i = 1;
	for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
		if (!strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--group") && i + 1 < argc) {
			snprintf(group, sizeof group, "%s", argv[++i]);
			for (char *c = group; *c; c++)
				if (!is_ident((unsigned char)*c))
					*c = '_';
		} else if (!strcmp(argv[i], "--include") && i + 1 < argc && ninc < 64) {
			incs[ninc++] = argv[++i];
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (argc - i != 3) {
		usage(stderr);
		return 2;
	}
	in_path = argv[i];
	const char *out_h = argv[i + 1], *out_c = argv[i + 2];
	if (!group[0])
		group_from(out_h, group, sizeof group);

	FILE *in = fopen(in_path, "r");
	if (!in) {
		fprintf(stderr, "vmscope-tracegen: %s: %s\n", in_path, strerror(errno));
		return 1;
	}
	struct event *evs = NULL;
	int n = 0, cap = 0, nen = 0, lineno = 0;
	char line[MAX_LINE];
	while (fgets(line, sizeof line, in)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(in))
			die(lineno, "line longer than %d bytes", MAX_LINE - 1);
		struct event ev;
		if (!parse_line(line, &ev, lineno))
			continue;
		for (int k = 0; k < n; k++)
			if (!strcmp(evs[k].name, ev.name))
				die(lineno, "event '%s' already defined on line %d", ev.name,
				    evs[k].line);
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			evs = realloc(evs, (size_t)cap * sizeof *evs);
			if (!evs) {
				fprintf(stderr, "vmscope-tracegen: out of memory\n");
				return 1;
			}
		}
		evs[n++] = ev;
		nen += !ev.disabled;
	}
	fclose(in);
	if (nen > 65535)
		die(lineno, "more than 65535 events");

	const char *hbase = strrchr(out_h, '/');
	hbase = hbase ? hbase + 1 : out_h;
	FILE *fh = fopen(out_h, "w");
	FILE *fc = fopen(out_c, "w");
	if (!fh || !fc) {
		fprintf(stderr, "vmscope-tracegen: cannot write %s\n", fh ? out_c : out_h);
		return 1;
	}
	write_header(fh, group, evs, n, nen, incs, ninc);
	write_source(fc, group, hbase, evs, n, nen);
	int rc = 0;
	if (fclose(fh) != 0 || fclose(fc) != 0) {
		fprintf(stderr, "vmscope-tracegen: write error\n");
		rc = 1;
	}
	free(evs);
	return rc;
}
