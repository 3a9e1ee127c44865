/* The TSDL subset vmstrace writes: a tokenizer and a parser of its blocks (trace, clock,
 * stream, event). The fixed parts (packet header and context, event header) are compared
 * with the layout this reader decodes; a trace that differs is refused with the place. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctf.h"

struct lex {
	const char *path;
	const char *s, *end, *start;
	char tok[256];
	bool is_str;
	struct vms_error *err;
};

static int lex_fail(struct lex *l, const char *what)
{
	return vms_error_set(l->err, VMS_ERR_FORMAT, "%s/metadata: %s at byte offset %zu", l->path,
			     what, (size_t)(l->s - l->start));
}

/* Next token into l->tok; returns 1, 0 at the end, or a negative status. */
static int next(struct lex *l)
{
	for (;;) {
		while (l->s < l->end && isspace((unsigned char)*l->s))
			l->s++;
		if (l->s + 1 < l->end && l->s[0] == '/' && l->s[1] == '*') {
			const char *e = l->s + 2;
			while (e + 1 < l->end && !(e[0] == '*' && e[1] == '/'))
				e++;
			if (e + 1 >= l->end)
				return lex_fail(l, "unterminated comment");
			l->s = e + 2;
			continue;
		}
		if (l->s + 1 < l->end && l->s[0] == '/' && l->s[1] == '/') {
			while (l->s < l->end && *l->s != '\n')
				l->s++;
			continue;
		}
		break;
	}
	l->is_str = false;
	if (l->s >= l->end)
		return 0;
	size_t n = 0;
	char c = *l->s;
	if (c == '"') {
		l->s++;
		while (l->s < l->end && *l->s != '"') {
			if (*l->s == '\\' && l->s + 1 < l->end)
				l->s++;
			if (n < sizeof l->tok - 1)
				l->tok[n++] = *l->s;
			l->s++;
		}
		if (l->s >= l->end)
			return lex_fail(l, "unterminated string");
		l->s++;
		l->tok[n] = 0;
		l->is_str = true;
		return 1;
	}
	if (isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-') {
		while (l->s < l->end && (isalnum((unsigned char)*l->s) || *l->s == '_' ||
					 *l->s == '.' || *l->s == '-')) {
			if (n >= sizeof l->tok - 1)
				return lex_fail(l, "token too long");
			l->tok[n++] = *l->s++;
		}
		l->tok[n] = 0;
		return 1;
	}
	if (c == ':' && l->s + 1 < l->end && l->s[1] == '=') {
		strcpy(l->tok, ":=");
		l->s += 2;
		return 1;
	}
	l->tok[0] = c;
	l->tok[1] = 0;
	l->s++;
	return 1;
}

static int expect(struct lex *l, const char *tok)
{
	int rc = next(l);
	if (rc < 0)
		return rc;
	if (rc == 0 || l->is_str || strcmp(l->tok, tok) != 0) {
		char m[320];
		snprintf(m, sizeof m, "expected '%s'", tok);
		return lex_fail(l, m);
	}
	return 0;
}

/* Skip to the end of a balanced { ... } block (the '{' already read) */
static int skip_block(struct lex *l)
{
	int depth = 1;
	while (depth > 0) {
		int rc = next(l);
		if (rc < 0)
			return rc;
		if (rc == 0)
			return lex_fail(l, "unterminated block");
		if (!l->is_str && !strcmp(l->tok, "{"))
			depth++;
		else if (!l->is_str && !strcmp(l->tok, "}"))
			depth--;
	}
	return 0;
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *e;
	if (!*s || *s == '-')
		return false;
	unsigned long long v = strtoull(s, &e, 0);
	if (*e)
		return false;
	*out = v;
	return true;
}

static bool parse_i64(const char *s, int64_t *out)
{
	char *e;
	if (!*s)
		return false;
	long long v = strtoll(s, &e, 0);
	if (*e)
		return false;
	*out = v;
	return true;
}

static int parse_uuid(struct lex *l, uint8_t out[16])
{
	const char *s = l->tok;
	int n = 0;
	for (; *s && n < 32; s++) {
		if (*s == '-')
			continue;
		if (!isxdigit((unsigned char)*s))
			return lex_fail(l, "bad UUID");
		int v = isdigit((unsigned char)*s) ? *s - '0' : (tolower((unsigned char)*s) - 'a' + 10);
		if (n % 2 == 0)
			out[n / 2] = (uint8_t)(v << 4);
		else
			out[n / 2] |= (uint8_t)v;
		n++;
	}
	if (n != 32 || *s)
		return lex_fail(l, "bad UUID");
	return 0;
}

/* `struct { TYPE NAME; ... } [align(8)];` with single-token types, compared with the
 * expected list "TYPE NAME" pairs. The 'struct' token is already read. */
static int check_struct(struct lex *l, const char *const *want, size_t nwant, const char *what)
{
	int rc = expect(l, "{");
	if (rc)
		return rc;
	for (size_t i = 0; i < nwant; i++) {
		char type[256];
		if ((rc = next(l)) <= 0)
			return rc < 0 ? rc : lex_fail(l, "unexpected end");
		snprintf(type, sizeof type, "%s", l->tok);
		if ((rc = next(l)) <= 0)
			return rc < 0 ? rc : lex_fail(l, "unexpected end");
		char pair[520];
		snprintf(pair, sizeof pair, "%s %s", type, l->tok);
		if (strcmp(pair, want[i]) != 0) {
			char m[700];
			snprintf(m, sizeof m, "%s is not the layout this reader knows ('%s', expected "
				 "'%s')", what, pair, want[i]);
			return lex_fail(l, m);
		}
		if ((rc = expect(l, ";")))
			return rc;
	}
	if ((rc = expect(l, "}")))
		return rc;
	/* align(8) ; */
	if ((rc = next(l)) <= 0)
		return rc < 0 ? rc : lex_fail(l, "unexpected end");
	if (!strcmp(l->tok, "align")) {
		if ((rc = expect(l, "(")) || (rc = expect(l, "8")) || (rc = expect(l, ")")) ||
		    (rc = expect(l, ";")))
			return rc;
		return 0;
	}
	if (strcmp(l->tok, ";"))
		return lex_fail(l, "expected ';'");
	return 0;
}

/* The next "KEY <token>" of a { ... } block: 1 with the key in key[] and l->tok the token
 * after it, 0 at the closing brace, or a negative status ("unterminated" names the block). */
static int block_key(struct lex *l, char *key, size_t len, const char *unterminated)
{
	int rc = next(l);
	if (rc <= 0)
		return rc < 0 ? rc : lex_fail(l, unterminated);
	if (!strcmp(l->tok, "}"))
		return 0;
	snprintf(key, len, "%s", l->tok);
	if ((rc = next(l)) <= 0)
		return rc < 0 ? rc : lex_fail(l, "unexpected end");
	return 1;
}

static int parse_stream(struct lex *l)
{
	static const char *const ctx[] = {
		"vmst_clock_t timestamp_begin", "vmst_clock_t timestamp_end",
		"uint64_t content_size",        "uint64_t packet_size",
		"uint64_t packet_seq_num",      "uint64_t events_discarded",
		"uint32_t cpu_id",              "int32_t vtid",
	};
	static const char *const hdr[] = {"uint16_t id", "vmst_clock_t timestamp"};
	static const char *const ectx[] = {"uint16_t cpu_id"};
	int rc, seen = 0;
	if ((rc = expect(l, "{")))
		return rc;
	char key[256];
	while ((rc = block_key(l, key, sizeof key, "unterminated stream block")) > 0) {
		if (!strcmp(key, "id") && !strcmp(l->tok, "=")) {
			if ((rc = expect(l, "0")) || (rc = expect(l, ";")))
				return rc;
			continue;
		}
		if (strcmp(l->tok, ":=") || (rc = expect(l, "struct")))
			return rc ? rc : lex_fail(l, "unexpected stream attribute");
		if (!strcmp(key, "packet.context")) {
			if ((rc = check_struct(l, ctx, 8, "packet.context")))
				return rc;
			seen |= 1;
		} else if (!strcmp(key, "event.header")) {
			if ((rc = check_struct(l, hdr, 2, "event.header")))
				return rc;
			seen |= 2;
		} else if (!strcmp(key, "event.context")) {
			if ((rc = check_struct(l, ectx, 1, "event.context")))
				return rc;
			seen |= 4;
		} else {
			return lex_fail(l, "unexpected stream attribute");
		}
	}
	if (rc < 0)
		return rc;
	if (seen != 7)
		return lex_fail(l, "stream block without packet.context, event.header or event.context");
	return expect(l, ";");
}

static int parse_trace(struct lex *l, struct ctf_meta *m, int *seen)
{
	static const char *const ph[] = {"uint32_t magic", "uint8_t uuid", "uint32_t stream_id"};
	int rc;
	if ((rc = expect(l, "{")))
		return rc;
	char key[256];
	while ((rc = block_key(l, key, sizeof key, "unterminated trace block")) > 0) {
		if (!strcmp(key, "packet.header") && !strcmp(l->tok, ":=")) {
			/* uint8_t uuid[16] has an array suffix: check it by hand */
			if ((rc = expect(l, "struct")) || (rc = expect(l, "{")) ||
			    (rc = expect(l, "uint32_t")) || (rc = expect(l, "magic")) ||
			    (rc = expect(l, ";")) || (rc = expect(l, "uint8_t")) ||
			    (rc = expect(l, "uuid")) || (rc = expect(l, "[")) ||
			    (rc = expect(l, "16")) || (rc = expect(l, "]")) || (rc = expect(l, ";")) ||
			    (rc = expect(l, "uint32_t")) || (rc = expect(l, "stream_id")) ||
			    (rc = expect(l, ";")) || (rc = expect(l, "}")) ||
			    (rc = expect(l, "align")) || (rc = expect(l, "(")) ||
			    (rc = expect(l, "8")) || (rc = expect(l, ")")) || (rc = expect(l, ";")))
				return rc;
			(void)ph;
			*seen |= 4;
			continue;
		}
		if (strcmp(l->tok, "="))
			return lex_fail(l, "expected '='");
		if ((rc = next(l)) <= 0)
			return rc < 0 ? rc : lex_fail(l, "unexpected end");
		if (!strcmp(key, "major") && strcmp(l->tok, "1"))
			return lex_fail(l, "not CTF major version 1");
		if (!strcmp(key, "uuid")) {
			if ((rc = parse_uuid(l, m->uuid)))
				return rc;
			*seen |= 8;
		}
		if (!strcmp(key, "byte_order")) {
			union {
				uint16_t u;
				uint8_t b[2];
			} bo = {.u = 1};
			if (strcmp(l->tok, bo.b[0] ? "le" : "be"))
				return lex_fail(l, "byte order other than this machine's: not supported");
		}
		if ((rc = expect(l, ";")))
			return rc;
	}
	if (rc < 0)
		return rc;
	return expect(l, ";");
}

static int parse_clock(struct lex *l, struct ctf_meta *m)
{
	int rc;
	if ((rc = expect(l, "{")))
		return rc;
	char key[256];
	while ((rc = block_key(l, key, sizeof key, "unterminated clock block")) > 0) {
		if (strcmp(l->tok, "="))
			return lex_fail(l, "expected '='");
		if ((rc = next(l)) <= 0)
			return rc < 0 ? rc : lex_fail(l, "unexpected end");
		if (!strcmp(key, "freq") && (!parse_u64(l->tok, &m->freq) || m->freq == 0 ||
					     m->freq > 100000000000ull))
			return lex_fail(l, "bad clock frequency");
		if (!strcmp(key, "offset_s") && !parse_i64(l->tok, &m->offset_s))
			return lex_fail(l, "bad clock offset_s");
		if (!strcmp(key, "offset") && !parse_u64(l->tok, &m->offset))
			return lex_fail(l, "bad clock offset");
		if (!strcmp(key, "description"))
			m->tsc = strstr(l->tok, "TSC") != NULL;
		if ((rc = expect(l, ";")))
			return rc;
	}
	if (rc < 0)
		return rc;
	/* The reader turns the offset into int64 ns: |offset_s| and offset / freq each below
	 * 2^32 s keep the sum representable (an epoch offset is ~2^31; found by fuzzing). */
	if (m->offset_s < -(1ll << 32) || m->offset_s > (1ll << 32) ||
	    (m->freq && (long double)m->offset / (long double)m->freq > 4294967296.0L))
		return lex_fail(l, "clock offset out of range");
	return expect(l, ";");
}

/* integer { size = N; align = 8; signed = B; base = B; } or string { encoding = UTF8; } */
static int parse_field_type(struct lex *l, struct ctf_field *f, bool is_int)
{
	int rc;
	if ((rc = expect(l, "{")))
		return rc;
	uint64_t size = 0, align = 8, base = 10;
	f->is_signed = false;
	char key[256];
	while ((rc = block_key(l, key, sizeof key, "unterminated field type")) > 0) {
		if (strcmp(l->tok, "="))
			return lex_fail(l, "expected '='");
		if ((rc = next(l)) <= 0)
			return rc < 0 ? rc : lex_fail(l, "unexpected end");
		bool ok = true;
		if (!strcmp(key, "size"))
			ok = parse_u64(l->tok, &size);
		else if (!strcmp(key, "align"))
			ok = parse_u64(l->tok, &align);
		else if (!strcmp(key, "base"))
			ok = parse_u64(l->tok, &base);
		else if (!strcmp(key, "signed"))
			f->is_signed = !strcmp(l->tok, "true") || !strcmp(l->tok, "1");
		else if (!strcmp(key, "encoding"))
			ok = !is_int;
		else
			ok = false;
		if (!ok)
			return lex_fail(l, "field type this reader does not know");
		if ((rc = expect(l, ";")))
			return rc;
	}
	if (rc < 0)
		return rc;
	if (is_int) {
		if ((size != 8 && size != 16 && size != 32 && size != 64) || align != 8)
			return lex_fail(l, "integer field other than 8/16/32/64 bits byte-aligned");
		f->kind = CTF_F_INT;
		f->size = (uint8_t)(size / 8);
		f->base = base == 16 ? 16 : 10;
	} else {
		f->kind = CTF_F_STR;
	}
	return 0;
}

static int parse_event(struct lex *l, struct ctf_meta *m)
{
	int rc;
	if ((rc = expect(l, "{")))
		return rc;
	char name[256] = "";
	int64_t id = -1;
	struct ctf_event_class ec;
	memset(&ec, 0, sizeof ec);
	char key[256];
	while ((rc = block_key(l, key, sizeof key, "unterminated event block")) > 0) {
		if (!strcmp(key, "fields") && !strcmp(l->tok, ":=")) {
			if ((rc = expect(l, "struct")) || (rc = expect(l, "{")))
				return rc;
			for (;;) {
				if ((rc = next(l)) <= 0)
					return rc < 0 ? rc : lex_fail(l, "unterminated fields");
				if (!strcmp(l->tok, "}"))
					break;
				bool is_int = !strcmp(l->tok, "integer");
				if (!is_int && strcmp(l->tok, "string"))
					return lex_fail(l, "field type this reader does not know");
				if (ec.nfields == CTF_MAX_FIELDS)
					return lex_fail(l, "more than 10 fields in an event");
				struct ctf_field *f = &ec.fields[ec.nfields++];
				if ((rc = parse_field_type(l, f, is_int)))
					return rc;
				if ((rc = next(l)) <= 0)
					return rc < 0 ? rc : lex_fail(l, "unexpected end");
				/* CTF strips one leading underscore */
				const char *fn = l->tok[0] == '_' ? l->tok + 1 : l->tok;
				if (strlen(fn) >= sizeof f->name)
					return lex_fail(l, "field name too long");
				memcpy(f->name, fn, strlen(fn) + 1);
				if ((rc = expect(l, ";")))
					return rc;
			}
			if ((rc = expect(l, ";")))
				return rc;
			continue;
		}
		if (strcmp(l->tok, "="))
			return lex_fail(l, "expected '='");
		if ((rc = next(l)) <= 0)
			return rc < 0 ? rc : lex_fail(l, "unexpected end");
		if (!strcmp(key, "name"))
			snprintf(name, sizeof name, "%s", l->tok);
		else if (!strcmp(key, "id") && (!parse_i64(l->tok, &id) || id < 0 ||
						id >= CTF_MAX_EVENTS))
			return lex_fail(l, "bad event id");
		else if (!strcmp(key, "stream_id") && strcmp(l->tok, "0"))
			return lex_fail(l, "event of a stream other than 0");
		if ((rc = expect(l, ";")))
			return rc;
	}
	if (rc < 0)
		return rc;
	if ((rc = expect(l, ";")))
		return rc;
	if (id < 0 || !name[0])
		return lex_fail(l, "event without name or id");
	if ((uint64_t)id >= m->nr_classes) {
		struct ctf_event_class *c = realloc(m->classes, (size_t)(id + 1) * sizeof *c);
		if (!c)
			return vms_error_set(l->err, VMS_ERR_NOMEM, "out of memory");
		memset(c + m->nr_classes, 0, (size_t)(id + 1 - m->nr_classes) * sizeof *c);
		m->classes = c;
		m->nr_classes = (uint32_t)id + 1;
	}
	if (m->classes[id].name)
		return lex_fail(l, "two events with the same id");
	ec.name = strdup(name);
	if (!ec.name)
		return vms_error_set(l->err, VMS_ERR_NOMEM, "out of memory");
	m->classes[id] = ec;
	return 0;
}

int ctf_meta_parse(const char *path, const char *text, size_t len, struct ctf_meta *m,
		   struct vms_error *err)
{
	memset(m, 0, sizeof *m);
	static const char magic[] = "/* CTF 1.8 */";
	if (len < sizeof magic - 1 || memcmp(text, magic, sizeof magic - 1) != 0)
		return 0;
	/* the writer's signature comment, within the first lines */
	size_t probe = len < 256 ? len : 256;
	if (!memmem(text, probe, "/* vmstrace:", 12))
		return 0;
	struct lex l = {.path = path, .s = text, .end = text + len, .start = text, .err = err};
	int seen = 0, rc;
	while ((rc = next(&l)) > 0) {
		if (!strcmp(l.tok, "typealias") || !strcmp(l.tok, "env")) {
			/* typealias ... := name;  env { ... }; */
			while ((rc = next(&l)) > 0 && strcmp(l.tok, ";") && strcmp(l.tok, "{"))
				;
			if (rc > 0 && !strcmp(l.tok, "{")) {
				if ((rc = skip_block(&l)))
					goto fail;
				/* up to the ';' after the block (typealias ... := NAME;) */
				while ((rc = next(&l)) > 0 && strcmp(l.tok, ";"))
					;
			}
			if (rc <= 0) {
				rc = rc < 0 ? rc : lex_fail(&l, "unexpected end");
				goto fail;
			}
		} else if (!strcmp(l.tok, "trace")) {
			if ((rc = parse_trace(&l, m, &seen)))
				goto fail;
			seen |= 1;
		} else if (!strcmp(l.tok, "clock")) {
			if ((rc = parse_clock(&l, m)))
				goto fail;
			seen |= 2;
		} else if (!strcmp(l.tok, "stream")) {
			if ((rc = parse_stream(&l)))
				goto fail;
			seen |= 16;
		} else if (!strcmp(l.tok, "event")) {
			if ((rc = parse_event(&l, m)))
				goto fail;
		} else {
			rc = lex_fail(&l, "unexpected top-level block");
			goto fail;
		}
	}
	if (rc < 0)
		goto fail;
	if ((seen & 31) != 31 || m->freq == 0) {
		rc = vms_error_set(err, VMS_ERR_FORMAT,
				   "%s/metadata: trace, clock, packet.header or stream block missing "
				   "at byte offset %zu", path, len);
		goto fail;
	}
	return 1;
fail:
	ctf_meta_free(m);
	return rc < 0 ? rc : VMS_ERR_FORMAT;
}

void ctf_meta_free(struct ctf_meta *m)
{
	for (uint32_t i = 0; i < m->nr_classes; i++)
		free(m->classes[i].name);
	free(m->classes);
	memset(m, 0, sizeof *m);
}
