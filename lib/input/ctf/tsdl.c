/* The TSDL parser (tsdl.h): recursive descent over tsdl_lex tokens, one namespace of type
 * names (typealias, typedef, "struct NAME", "enum NAME", "variant NAME"), and the top-level
 * blocks trace, env, clock, stream, event (callsite and unknown blocks are skipped). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsdl.h"
#include "tsdl_lex.h"

#define MAX_DEPTH 48
#define MAX_ALIASES 1000000
#define MAX_MEMBERS 65536

/* ---- the arena: every node and string of one trace, freed at once ---- */

struct tsdl_arena {
	struct tsdl_arena *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

static void *arena_alloc(struct tsdl_trace *t, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	struct tsdl_arena *a = t->arena;
	if (!a || a->cap - a->used < n) {
		size_t cap = n > 65536 ? n : 65536;
		a = malloc(sizeof *a + cap);
		if (!a)
			return NULL;
		a->next = t->arena;
		a->used = 0;
		a->cap = cap;
		t->arena = a;
	}
	void *p = a->data + a->used;
	a->used += n;
	memset(p, 0, n);
	return p;
}

static char *arena_str(struct tsdl_trace *t, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = arena_alloc(t, n);
	if (p)
		memcpy(p, s, n);
	return p;
}

/* ---- the parser ---- */

struct alias {
	const char *name;
	struct tsdl_type *type;
};

struct parser {
	struct tsdl_lex l;
	struct tsdl_trace *t;
	struct alias *al;
	size_t nal, capal;
	bool pushed;      /* l.tok is to be returned again by tok() */
	int depth;
};

static int oom(struct parser *p)
{
	return tsdl_nomem_at(p->l.err, p->l.path, (size_t)(p->l.s - p->l.start));
}

/* Next token; the end of the text is an error here. */
static int tok(struct parser *p)
{
	if (p->pushed) {
		p->pushed = false;
		return 0;
	}
	int rc = tsdl_next(&p->l);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return tsdl_fail(&p->l, "unexpected end of metadata");
	return 0;
}

static bool is(const struct parser *p, const char *s)
{
	return !p->l.is_str && !strcmp(p->l.tok, s);
}

static int want(struct parser *p, const char *s)
{
	int rc = tok(p);
	if (rc)
		return rc;
	if (!is(p, s)) {
		char m[300];
		snprintf(m, sizeof m, "expected '%s'", s);
		return tsdl_fail(&p->l, m);
	}
	return 0;
}

static bool is_ident(const struct parser *p)
{
	char c = p->l.tok[0];
	return !p->l.is_str && (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));
}

static struct tsdl_type *lookup(struct parser *p, const char *name)
{
	for (size_t i = p->nal; i-- > 0;)
		if (!strcmp(p->al[i].name, name))
			return p->al[i].type;
	return NULL;
}

static int add_alias(struct parser *p, const char *name, struct tsdl_type *ty)
{
	if (p->nal == MAX_ALIASES)
		return tsdl_fail(&p->l, "too many type names");
	if (p->nal == p->capal) {
		size_t cap = p->capal ? 2 * p->capal : 64;
		struct alias *n = realloc(p->al, cap * sizeof *n);
		if (!n)
			return oom(p);
		p->al = n;
		p->capal = cap;
	}
	const char *s = arena_str(p->t, name);
	if (!s)
		return oom(p);
	p->al[p->nal++] = (struct alias){s, ty};
	return 0;
}

static struct tsdl_type *new_type(struct parser *p, enum tsdl_kind k)
{
	struct tsdl_type *ty = arena_alloc(p->t, sizeof *ty);
	if (ty) {
		ty->kind = (uint8_t)k;
		ty->base = 10;
		ty->align = 8;
	}
	return ty;
}

static int value_u64(struct parser *p, uint64_t *v, const char *what)
{
	int rc = tok(p);
	if (rc)
		return rc;
	if (p->l.is_str || !tsdl_u64(p->l.tok, v)) {
		char m[300];
		snprintf(m, sizeof m, "bad %s", what);
		return tsdl_fail(&p->l, m);
	}
	return 0;
}

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static int parse_order(struct parser *p, uint8_t *order)
{
	if (is(p, "le") || is(p, "little"))
		*order = TSDL_LE;
	else if (is(p, "be") || is(p, "big") || is(p, "network"))
		*order = TSDL_BE;
	else if (is(p, "native"))
		*order = TSDL_NATIVE;
	else
		return tsdl_fail(&p->l, "bad byte_order");
	return 0;
}

/* map = clock.NAME.value: the name (the clock may be declared after the type) */
static int map_clock(struct parser *p, const char *map, const char **out)
{
	if (strncmp(map, "clock.", 6))
		return tsdl_fail(&p->l, "bad map (not clock.NAME.value)");
	const char *name = map + 6, *dot = strrchr(name, '.');
	if (!dot || strcmp(dot, ".value") || dot == name)
		return tsdl_fail(&p->l, "bad map (not clock.NAME.value)");
	char n[256];
	snprintf(n, sizeof n, "%.*s", (int)(dot - name), name);
	if (!(*out = arena_str(p->t, n)))
		return oom(p);
	return 0;
}

/* integer { ... } and floating_point { ... } and string { ... }: the '{' already read */
static int parse_attrs(struct parser *p, struct tsdl_type *ty)
{
	uint64_t size = 0, align = 0, exp = 0, mant = 0;
	bool have_align = false;
	int rc;
	for (;;) {
		if ((rc = tok(p)))
			return rc;
		if (is(p, "}"))
			break;
		char key[256];
		snprintf(key, sizeof key, "%s", p->l.tok);
		if ((rc = want(p, "=")) || (rc = tok(p)))
			return rc;
		if (!strcmp(key, "size")) {
			if (!tsdl_u64(p->l.tok, &size))
				return tsdl_fail(&p->l, "bad size");
		} else if (!strcmp(key, "align")) {
			if (!tsdl_u64(p->l.tok, &align) || !pow2(align) || align > 32768)
				return tsdl_fail(&p->l, "bad align");
			have_align = true;
		} else if (!strcmp(key, "signed")) {
			ty->is_signed = is(p, "true") || is(p, "TRUE") || is(p, "1");
			if (!ty->is_signed && !is(p, "false") && !is(p, "FALSE") && !is(p, "0"))
				return tsdl_fail(&p->l, "bad signed");
		} else if (!strcmp(key, "byte_order")) {
			if ((rc = parse_order(p, &ty->order)))
				return rc;
		} else if (!strcmp(key, "base")) {
			uint64_t b = 0;
			const char *s = p->l.tok;
			if (tsdl_u64(s, &b))
				;
			else if (!strcmp(s, "decimal") || !strcmp(s, "dec") || !strcmp(s, "d") ||
				 !strcmp(s, "i") || !strcmp(s, "u"))
				b = 10;
			else if (!strcmp(s, "hexadecimal") || !strcmp(s, "hex") || !strcmp(s, "x") ||
				 !strcmp(s, "X") || !strcmp(s, "p"))
				b = 16;
			else if (!strcmp(s, "octal") || !strcmp(s, "oct") || !strcmp(s, "o"))
				b = 8;
			else if (!strcmp(s, "binary") || !strcmp(s, "b"))
				b = 2;
			if (b != 2 && b != 8 && b != 10 && b != 16)
				return tsdl_fail(&p->l, "bad base");
			ty->base = (uint8_t)b;
		} else if (!strcmp(key, "encoding")) {
			ty->text = is(p, "UTF8") || is(p, "utf8") || is(p, "ASCII") || is(p, "ascii");
			if (!ty->text && !is(p, "none"))
				return tsdl_fail(&p->l, "bad encoding");
		} else if (!strcmp(key, "map")) {
			if ((rc = map_clock(p, p->l.tok, &ty->clock)))
				return rc;
		} else if (!strcmp(key, "exp_dig")) {
			if (!tsdl_u64(p->l.tok, &exp))
				return tsdl_fail(&p->l, "bad exp_dig");
		} else if (!strcmp(key, "mant_dig")) {
			if (!tsdl_u64(p->l.tok, &mant))
				return tsdl_fail(&p->l, "bad mant_dig");
		}
		/* other attributes carry nothing the decoding needs */
		if ((rc = want(p, ";")))
			return rc;
	}
	if (ty->kind == TSDL_INT) {
		if (size < 1 || size > 64)
			return tsdl_fail(&p->l, "integer size not within 1..64 bits");
		ty->size = (uint32_t)size;
		ty->align = (uint32_t)(have_align ? align : size % 8 ? 1 : 8);
	} else if (ty->kind == TSDL_FLOAT) {
		if (exp + mant != 32 && exp + mant != 64)
			return tsdl_fail(&p->l, "floating point other than 32 or 64 bits");
		ty->size = (uint32_t)(exp + mant);
		ty->align = (uint32_t)(have_align ? align : 8);
	}
	return 0;
}

static int parse_spec(struct parser *p, struct tsdl_type **out);
static int parse_members(struct parser *p, struct tsdl_type *ty);

/* A multi-word type name ending where an identifier stops (the declarator, if `named`, is
 * the last word and goes to *decl). */
static int parse_named(struct parser *p, bool named, struct tsdl_type **out, char *decl,
		       size_t dlen)
{
	char name[512] = "", last[256] = "";
	int rc;
	size_t words = 0;
	while (is_ident(p)) {
		if (words++) {
			size_t n = strlen(name);
			if (n + strlen(last) + 2 >= sizeof name)
				return tsdl_fail(&p->l, "type name too long");
			snprintf(name + n, sizeof name - n, "%s%s", n ? " " : "", last);
		}
		snprintf(last, sizeof last, "%s", p->l.tok);
		if ((rc = tok(p)))
			return rc;
	}
	p->pushed = true;
	if (!words)
		return tsdl_fail(&p->l, "expected a type");
	if (named) {
		if (words < 2)
			return tsdl_fail(&p->l, "expected a type and a name");
		snprintf(decl, dlen, "%s", last);
	} else {
		size_t n = strlen(name);
		snprintf(name + n, sizeof name - n, "%s%s", n ? " " : "", last);
	}
	*out = lookup(p, name);
	if (!*out) {
		char m[600];
		snprintf(m, sizeof m, "unknown type '%s'", name);
		return tsdl_fail(&p->l, m);
	}
	return 0;
}

static bool enum_value(const char *s, int64_t *v)
{
	uint64_t u;
	if (tsdl_i64(s, v))
		return true;
	if (!tsdl_u64(s, &u))
		return false;
	*v = (int64_t)u;
	return true;
}

static int parse_enum_body(struct parser *p, struct tsdl_type *ty)
{
	struct tsdl_enum_map *maps = NULL;
	uint32_t n = 0, cap = 0;
	int64_t nextv = 0;
	int rc;
	for (;;) {
		if ((rc = tok(p)))
			goto out;
		if (is(p, "}"))
			break;
		if (is(p, ","))
			continue;
		if (n == MAX_MEMBERS) {
			rc = tsdl_fail(&p->l, "too many enumerators");
			goto out;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			struct tsdl_enum_map *m = realloc(maps, cap * sizeof *m);
			if (!m) {
				rc = oom(p);
				goto out;
			}
			maps = m;
		}
		struct tsdl_enum_map *m = &maps[n];
		if (!(m->label = arena_str(p->t, p->l.tok))) {
			rc = oom(p);
			goto out;
		}
		m->lo = m->hi = nextv;
		if ((rc = tok(p)))
			goto out;
		if (is(p, "=")) {
			if ((rc = tok(p)))
				goto out;
			char *dots = strstr(p->l.tok, "...");
			bool range = dots && dots != p->l.tok;
			if (range)
				*dots = 0; /* "0...30" written without spaces */
			if (!enum_value(p->l.tok, &m->lo) ||
			    (range && !enum_value(dots + 3, &m->hi))) {
				rc = tsdl_fail(&p->l, "bad enumerator value");
				goto out;
			}
			if (!range)
				m->hi = m->lo;
			if ((rc = tok(p)))
				goto out;
			if (is(p, "...")) {
				if ((rc = tok(p)))
					goto out;
				if (!enum_value(p->l.tok, &m->hi)) {
					rc = tsdl_fail(&p->l, "bad enumerator value");
					goto out;
				}
				if ((rc = tok(p)))
					goto out;
			}
		}
		nextv = (int64_t)((uint64_t)m->hi + 1);
		n++;
		if (is(p, "}"))
			break;
		if (!is(p, ",")) {
			rc = tsdl_fail(&p->l, "expected ',' or '}' in an enumeration");
			goto out;
		}
	}
	ty->maps = arena_alloc(p->t, (n ? n : 1) * sizeof *maps);
	if (!ty->maps) {
		rc = oom(p);
		goto out;
	}
	if (n)
		memcpy(ty->maps, maps, n * sizeof *maps);
	ty->nr_maps = n;
out:
	free(maps);
	return rc;
}

/* struct/variant/enum [NAME] [<tag>] [: container] [{ body }] [align(N)] */
static int parse_compound(struct parser *p, enum tsdl_kind k, struct tsdl_type **out)
{
	static const char *const prefix[] = {[TSDL_STRUCT] = "struct", [TSDL_VARIANT] = "variant",
					     [TSDL_ENUM] = "enum"};
	char name[300] = "", tag[256] = "";
	int rc;
	if ((rc = tok(p)))
		return rc;
	if (is_ident(p)) {
		snprintf(name, sizeof name, "%s %s", prefix[k], p->l.tok);
		if ((rc = tok(p)))
			return rc;
	}
	if (k == TSDL_VARIANT && is(p, "<")) {
		if ((rc = tok(p)))
			return rc;
		snprintf(tag, sizeof tag, "%s", p->l.tok);
		if ((rc = want(p, ">")) || (rc = tok(p)))
			return rc;
	}
	struct tsdl_type *container = NULL;
	if (k == TSDL_ENUM && is(p, ":")) {
		if ((rc = tok(p)) || (rc = parse_spec(p, &container)) || (rc = tok(p)))
			return rc;
		if (container->kind != TSDL_INT)
			return tsdl_fail(&p->l, "enumeration container is not an integer");
	}
	struct tsdl_type *ty;
	if (is(p, "{")) {
		if (!(ty = new_type(p, k)))
			return oom(p);
		if (k == TSDL_ENUM) {
			if (!container && !(container = lookup(p, "int")))
				return tsdl_fail(&p->l, "enumeration without a container type");
			*ty = *container;
			ty->kind = TSDL_ENUM;
			if ((rc = parse_enum_body(p, ty)))
				return rc;
		} else {
			ty->align = 1; /* a struct: its fields' largest; a variant: its option's */
			if ((rc = parse_members(p, ty)))
				return rc;
		}
		if (name[0] && (rc = add_alias(p, name, ty)))
			return rc;
		if ((rc = tok(p)))
			return rc;
	} else {
		if (!name[0])
			return tsdl_fail(&p->l, "anonymous type without a body");
		struct tsdl_type *named = lookup(p, name);
		if (!named) {
			char m[400];
			snprintf(m, sizeof m, "unknown type '%s'", name);
			return tsdl_fail(&p->l, m);
		}
		ty = named;
	}
	if (k == TSDL_STRUCT && is(p, "align")) {
		uint64_t a;
		if ((rc = want(p, "(")) || (rc = value_u64(p, &a, "align")) || (rc = want(p, ")")))
			return rc;
		if (!pow2(a) || a > 32768)
			return tsdl_fail(&p->l, "bad align");
		if (a > ty->align) {
			/* a named struct's alignment is its own; copy before raising it */
			struct tsdl_type *c = new_type(p, TSDL_STRUCT);
			if (!c)
				return oom(p);
			*c = *ty;
			c->align = (uint32_t)a;
			ty = c;
		}
		if ((rc = tok(p)))
			return rc;
	}
	if (tag[0]) {
		if (ty->kind != TSDL_VARIANT)
			return tsdl_fail(&p->l, "tag on a type that is not a variant");
		struct tsdl_type *c = new_type(p, TSDL_VARIANT);
		if (!c)
			return oom(p);
		*c = *ty;
		if (!(c->tag = arena_str(p->t, tag)))
			return oom(p);
		ty = c;
	}
	p->pushed = true;
	*out = ty;
	return 0;
}

/* A type specifier; the first token is already read. */
static int parse_spec(struct parser *p, struct tsdl_type **out)
{
	int rc;
	if (++p->depth > MAX_DEPTH) {
		p->depth--;
		return tsdl_fail(&p->l, "types nested too deep");
	}
	if (is(p, "integer") || is(p, "floating_point")) {
		struct tsdl_type *ty = new_type(p, is(p, "integer") ? TSDL_INT : TSDL_FLOAT);
		if (!ty)
			rc = oom(p);
		else if (!(rc = want(p, "{")))
			rc = parse_attrs(p, ty);
		*out = ty;
	} else if (is(p, "string")) {
		struct tsdl_type *ty = new_type(p, TSDL_STRING);
		if (!ty) {
			rc = oom(p);
		} else if (!(rc = tok(p))) {
			if (is(p, "{"))
				rc = parse_attrs(p, ty);
			else
				p->pushed = true;
		}
		*out = ty;
	} else if (is(p, "struct")) {
		rc = parse_compound(p, TSDL_STRUCT, out);
	} else if (is(p, "variant")) {
		rc = parse_compound(p, TSDL_VARIANT, out);
	} else if (is(p, "enum")) {
		rc = parse_compound(p, TSDL_ENUM, out);
	} else {
		rc = parse_named(p, false, out, NULL, 0);
	}
	p->depth--;
	return rc;
}

static bool keyword_type(const struct parser *p)
{
	return is(p, "integer") || is(p, "floating_point") || is(p, "string") || is(p, "struct") ||
	       is(p, "variant") || is(p, "enum");
}

/* `[N]` (array) and `[field]` (sequence) suffixes after a declarator name, innermost last. */
static int parse_suffixes(struct parser *p, struct tsdl_type **ty)
{
	char dims[8][256];
	int nd = 0, rc;
	for (;;) {
		if ((rc = tok(p)))
			return rc;
		if (!is(p, "[")) {
			p->pushed = true;
			break;
		}
		if (nd == 8)
			return tsdl_fail(&p->l, "more than 8 array dimensions");
		if ((rc = tok(p)))
			return rc;
		snprintf(dims[nd++], sizeof dims[0], "%s", p->l.tok);
		if ((rc = want(p, "]")))
			return rc;
	}
	for (int i = nd - 1; i >= 0; i--) {
		uint64_t n;
		bool fixed = tsdl_u64(dims[i], &n);
		struct tsdl_type *a = new_type(p, fixed ? TSDL_ARRAY : TSDL_SEQ);
		if (!a)
			return oom(p);
		a->elem = *ty;
		a->align = (*ty)->align;
		if (fixed)
			a->length = n;
		else if (!(a->length_ref = arena_str(p->t, dims[i])))
			return oom(p);
		*ty = a;
	}
	return 0;
}

static int parse_typealias(struct parser *p)
{
	struct tsdl_type *ty;
	int rc;
	if ((rc = tok(p)) || (rc = parse_spec(p, &ty)))
		return rc;
	if ((rc = want(p, ":=")))
		return rc;
	char name[512] = "";
	for (;;) {
		if ((rc = tok(p)))
			return rc;
		if (is(p, ";"))
			break;
		size_t n = strlen(name);
		if (p->l.is_str || n + strlen(p->l.tok) + 2 >= sizeof name)
			return tsdl_fail(&p->l, "bad type alias name");
		snprintf(name + n, sizeof name - n, "%s%s", n ? " " : "", p->l.tok);
	}
	if (!name[0])
		return tsdl_fail(&p->l, "empty type alias name");
	return add_alias(p, name, ty);
}

static int parse_typedef(struct parser *p)
{
	struct tsdl_type *ty;
	char name[256];
	int rc;
	if ((rc = tok(p)))
		return rc;
	if (keyword_type(p)) {
		if ((rc = parse_spec(p, &ty)) || (rc = tok(p)))
			return rc;
		if (!is_ident(p))
			return tsdl_fail(&p->l, "expected a type name");
		snprintf(name, sizeof name, "%s", p->l.tok);
	} else if ((rc = parse_named(p, true, &ty, name, sizeof name))) {
		return rc;
	}
	if ((rc = parse_suffixes(p, &ty)) || (rc = want(p, ";")))
		return rc;
	return add_alias(p, name, ty);
}

/* Members of a struct or variant up to '}' (the '{' already read). */
static int parse_members(struct parser *p, struct tsdl_type *ty)
{
	struct tsdl_field *f = NULL;
	uint32_t n = 0, cap = 0;
	int rc;
	for (;;) {
		if ((rc = tok(p)))
			goto out;
		if (is(p, "}"))
			break;
		if (is(p, "typealias")) {
			if ((rc = parse_typealias(p)))
				goto out;
			continue;
		}
		if (is(p, "typedef")) {
			if ((rc = parse_typedef(p)))
				goto out;
			continue;
		}
		struct tsdl_type *ft;
		char name[256];
		if (keyword_type(p)) {
			if ((rc = parse_spec(p, &ft)) || (rc = tok(p)))
				goto out;
			if (is(p, ";"))
				continue; /* a named type declared in this scope */
			if (!is_ident(p)) {
				rc = tsdl_fail(&p->l, "expected a field name");
				goto out;
			}
			snprintf(name, sizeof name, "%s", p->l.tok);
		} else if ((rc = parse_named(p, true, &ft, name, sizeof name))) {
			goto out;
		}
		for (;;) {
			struct tsdl_type *t2 = ft;
			if ((rc = parse_suffixes(p, &t2)))
				goto out;
			if (n == MAX_MEMBERS) {
				rc = tsdl_fail(&p->l, "too many fields");
				goto out;
			}
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				struct tsdl_field *nf = realloc(f, cap * sizeof *nf);
				if (!nf) {
					rc = oom(p);
					goto out;
				}
				f = nf;
			}
			for (uint32_t i = 0; i < n; i++)
				if (!strcmp(f[i].name, name)) {
					rc = tsdl_fail(&p->l, "two fields of the same name");
					goto out;
				}
			if (!(f[n].name = arena_str(p->t, name))) {
				rc = oom(p);
				goto out;
			}
			f[n++].type = t2;
			if ((rc = tok(p)))
				goto out;
			if (is(p, ";"))
				break;
			if (!is(p, ",") || (rc = tok(p)) || !is_ident(p)) {
				rc = rc ? rc : tsdl_fail(&p->l, "expected ';'");
				goto out;
			}
			snprintf(name, sizeof name, "%s", p->l.tok);
		}
	}
	ty->fields = arena_alloc(p->t, (n ? n : 1) * sizeof *f);
	if (!ty->fields) {
		rc = oom(p);
		goto out;
	}
	if (n)
		memcpy(ty->fields, f, n * sizeof *f);
	ty->nr_fields = n;
	if (ty->kind == TSDL_STRUCT)
		for (uint32_t i = 0; i < n; i++)
			if (f[i].type->align > ty->align)
				ty->align = f[i].type->align;
out:
	free(f);
	return rc;
}

/* `KEY = VALUE;` or `KEY := TYPE;` entries of a top-level block, handed to `entry`. */
typedef int (*entry_fn)(struct parser *p, void *ctx, const char *key, struct tsdl_type *ty);

static int parse_block(struct parser *p, void *ctx, entry_fn entry)
{
	int rc;
	if ((rc = want(p, "{")))
		return rc;
	for (;;) {
		if ((rc = tok(p)))
			return rc;
		if (is(p, "}"))
			break;
		char key[256];
		snprintf(key, sizeof key, "%s", p->l.tok);
		if ((rc = tok(p)))
			return rc;
		if (is(p, ":=")) {
			struct tsdl_type *ty;
			if ((rc = tok(p)) || (rc = parse_spec(p, &ty)) || (rc = entry(p, ctx, key, ty)) ||
			    (rc = want(p, ";")))
				return rc;
			continue;
		}
		if (!is(p, "="))
			return tsdl_fail(&p->l, "expected '=' or ':='");
		if ((rc = tok(p)) || (rc = entry(p, ctx, key, NULL)) || (rc = want(p, ";")))
			return rc;
	}
	return want(p, ";");
}

/* A new zeroed slot at the end of an array of *n elements grown `step` at a time, or NULL
 * with err set (at `max` elements: "too many WHAT"). */
static void *grow(struct parser *p, void **arr, uint32_t *n, uint32_t step, size_t size,
		  uint32_t max, const char *what)
{
	if (*n >= max) {
		char m[128];
		snprintf(m, sizeof m, "too many %s", what);
		tsdl_fail(&p->l, m);
		return NULL;
	}
	if (*n % step == 0) {
		void *g = realloc(*arr, (*n + step) * size);
		if (!g) {
			oom(p);
			return NULL;
		}
		*arr = g;
	}
	void *slot = (char *)*arr + *n * size;
	memset(slot, 0, size);
	return slot;
}

static int trace_entry(struct parser *p, void *ctx, const char *key, struct tsdl_type *ty)
{
	(void)ctx;
	struct tsdl_trace *t = p->t;
	if (ty) {
		if (strcmp(key, "packet.header"))
			return tsdl_fail(&p->l, "unknown trace scope");
		if (ty->kind != TSDL_STRUCT)
			return tsdl_fail(&p->l, "packet.header is not a struct");
		t->packet_header = ty;
	} else if (!strcmp(key, "major")) {
		if (!is(p, "1"))
			return tsdl_fail(&p->l, "not CTF major version 1");
	} else if (!strcmp(key, "uuid")) {
		int rc = tsdl_uuid(&p->l, t->uuid);
		if (rc)
			return rc;
		t->has_uuid = true;
	} else if (!strcmp(key, "byte_order")) {
		int rc = parse_order(p, &t->order);
		if (rc)
			return rc;
		if (t->order == TSDL_NATIVE)
			return tsdl_fail(&p->l, "the trace's byte_order cannot be native");
	}
	return 0;
}

static int env_entry(struct parser *p, void *ctx, const char *key, struct tsdl_type *ty)
{
	(void)ctx;
	struct tsdl_trace *t = p->t;
	if (ty)
		return 0;
	struct tsdl_env *e = grow(p, (void **)&t->env, &t->nr_env, 64, sizeof *e, 4096,
				  "env entries");
	if (!e)
		return p->l.err->status;
	if (!(e->key = arena_str(t, key)) || !(e->value = arena_str(t, p->l.tok)))
		return oom(p);
	t->nr_env++;
	return 0;
}

static int clock_entry(struct parser *p, void *ctx, const char *key, struct tsdl_type *ty)
{
	struct tsdl_clock *c = ctx;
	if (ty)
		return 0;
	if (!strcmp(key, "name"))
		snprintf(c->name, sizeof c->name, "%.63s", p->l.tok);
	else if (!strcmp(key, "description"))
		snprintf(c->description, sizeof c->description, "%.127s", p->l.tok);
	else if (!strcmp(key, "freq") &&
		 (!tsdl_u64(p->l.tok, &c->freq) || c->freq == 0 || c->freq > 100000000000ull))
		return tsdl_fail(&p->l, "bad clock frequency");
	else if (!strcmp(key, "offset_s") && !tsdl_i64(p->l.tok, &c->offset_s))
		return tsdl_fail(&p->l, "bad clock offset_s");
	else if (!strcmp(key, "offset") && !tsdl_u64(p->l.tok, &c->offset))
		return tsdl_fail(&p->l, "bad clock offset");
	return 0;
}

static int stream_entry(struct parser *p, void *ctx, const char *key, struct tsdl_type *ty)
{
	struct tsdl_stream *s = ctx;
	if (!ty) {
		if (!strcmp(key, "id") && !tsdl_u64(p->l.tok, &s->id))
			return tsdl_fail(&p->l, "bad stream id");
		return 0;
	}
	if (ty->kind != TSDL_STRUCT)
		return tsdl_fail(&p->l, "a stream scope that is not a struct");
	if (!strcmp(key, "packet.context"))
		s->packet_context = ty;
	else if (!strcmp(key, "event.header"))
		s->event_header = ty;
	else if (!strcmp(key, "event.context"))
		s->event_context = ty;
	else
		return tsdl_fail(&p->l, "unknown stream scope");
	return 0;
}

struct event_ctx {
	struct tsdl_event *e;
	bool have_id, have_stream;
};

static int event_entry(struct parser *p, void *ctx, const char *key, struct tsdl_type *ty)
{
	struct event_ctx *ec = ctx;
	struct tsdl_event *e = ec->e;
	if (ty) {
		if (ty->kind != TSDL_STRUCT)
			return tsdl_fail(&p->l, "an event scope that is not a struct");
		if (!strcmp(key, "fields"))
			e->fields = ty;
		else if (!strcmp(key, "context"))
			e->context = ty;
		else
			return tsdl_fail(&p->l, "unknown event scope");
		return 0;
	}
	if (!strcmp(key, "name")) {
		if (!(e->name = arena_str(p->t, p->l.tok)))
			return oom(p);
	} else if (!strcmp(key, "id")) {
		if (!tsdl_u64(p->l.tok, &e->id))
			return tsdl_fail(&p->l, "bad event id");
		ec->have_id = true;
	} else if (!strcmp(key, "stream_id")) {
		if (!tsdl_u64(p->l.tok, &e->stream_id))
			return tsdl_fail(&p->l, "bad event stream_id");
		ec->have_stream = true;
	}
	return 0;
}

static int skip_entry(struct parser *p, void *ctx, const char *key, struct tsdl_type *ty)
{
	(void)p, (void)ctx, (void)key, (void)ty;
	return 0;
}

static int top_level(struct parser *p)
{
	struct tsdl_trace *t = p->t;
	int rc;
	if (is(p, "typealias"))
		return parse_typealias(p);
	if (is(p, "typedef"))
		return parse_typedef(p);
	if (is(p, "trace"))
		return parse_block(p, NULL, trace_entry);
	if (is(p, "env"))
		return parse_block(p, NULL, env_entry);
	if (is(p, "clock")) {
		if (t->nr_clocks == TSDL_MAX_CLOCKS)
			return tsdl_fail(&p->l, "too many clocks");
		struct tsdl_clock *c = &t->clocks[t->nr_clocks];
		memset(c, 0, sizeof *c);
		c->freq = 1000000000;
		if ((rc = parse_block(p, c, clock_entry)))
			return rc;
		/* ns offsets are computed in int64: |offset_s| and offset / freq each below 2^32 s
		 * keep the sum representable (an epoch offset is ~2^31) */
		if (c->offset_s < -(1ll << 32) || c->offset_s > (1ll << 32) ||
		    (long double)c->offset / (long double)c->freq > 4294967296.0L)
			return tsdl_fail(&p->l, "clock offset out of range");
		if (!c->name[0])
			return tsdl_fail(&p->l, "clock without a name");
		t->nr_clocks++;
		return 0;
	}
	if (is(p, "stream")) {
		struct tsdl_stream *s = grow(p, (void **)&t->streams, &t->nr_streams, 16, sizeof *s,
					     TSDL_MAX_STREAMS, "stream classes");
		if (!s)
			return p->l.err->status;
		if ((rc = parse_block(p, s, stream_entry)))
			return rc;
		for (uint32_t i = 0; i < t->nr_streams; i++)
			if (t->streams[i].id == s->id)
				return tsdl_fail(&p->l, "two stream classes of the same id");
		t->nr_streams++;
		return 0;
	}
	if (is(p, "event")) {
		struct tsdl_event *e = grow(p, (void **)&t->events, &t->nr_events, 256, sizeof *e,
					    TSDL_MAX_EVENTS, "event classes");
		if (!e)
			return p->l.err->status;
		struct event_ctx ec = {e, false, false};
		if ((rc = parse_block(p, &ec, event_entry)))
			return rc;
		if (!e->name)
			return tsdl_fail(&p->l, "event without a name");
		if (!ec.have_id)
			e->id = t->nr_events ? UINT64_MAX : 0; /* only a lone event may omit its id */
		if (e->id == UINT64_MAX)
			return tsdl_fail(&p->l, "event without an id");
		t->nr_events++;
		return 0;
	}
	if (is(p, "callsite"))
		return parse_block(p, NULL, skip_entry);
	if (is(p, "struct") || is(p, "enum") || is(p, "variant")) {
		struct tsdl_type *ty;
		if ((rc = parse_spec(p, &ty)))
			return rc;
		return want(p, ";");
	}
	return tsdl_fail(&p->l, "unexpected top-level declaration");
}

int tsdl_parse(const char *path, const char *text, size_t len, struct tsdl_trace *t,
	       struct vms_error *err)
{
	memset(t, 0, sizeof *t);
	struct parser p = {.t = t};
	p.l = (struct tsdl_lex){.path = path, .s = text, .end = text + len, .start = text,
				.err = err};
	int rc;
	for (;;) {
		rc = tsdl_next(&p.l);
		if (rc <= 0)
			break;
		if ((rc = top_level(&p)))
			break;
	}
	free(p.al);
	if (rc == 0 && t->order == TSDL_NATIVE)
		rc = vms_error_set(err, VMS_ERR_FORMAT, "%s/metadata: no trace block with a "
				   "byte_order at byte offset %zu", path, len);
	if (rc == 0) {
		/* a stream id an event names must exist; with no stream block there is one
		 * implicit stream class 0 */
		if (t->nr_streams == 0) {
			t->streams = calloc(1, sizeof *t->streams);
			if (!t->streams)
				rc = tsdl_nomem_at(err, path, len); /* (the text is all read) */
			else
				t->nr_streams = 1;
		}
		for (uint32_t i = 0; rc == 0 && i < t->nr_events; i++) {
			bool found = false;
			for (uint32_t s = 0; s < t->nr_streams; s++)
				found |= t->streams[s].id == t->events[i].stream_id;
			if (!found)
				rc = vms_error_set(err, VMS_ERR_FORMAT, "%s/metadata: event %s of an "
						   "undeclared stream at byte offset %zu", path,
						   t->events[i].name, len);
		}
	}
	if (rc < 0) {
		tsdl_free(t);
		return rc;
	}
	return 0;
}

void tsdl_free(struct tsdl_trace *t)
{
	struct tsdl_arena *a = t->arena;
	while (a) {
		struct tsdl_arena *n = a->next;
		free(a);
		a = n;
	}
	free(t->streams);
	free(t->events);
	free(t->env);
	memset(t, 0, sizeof *t);
}

const char *tsdl_env(const struct tsdl_trace *t, const char *key)
{
	for (uint32_t i = 0; i < t->nr_env; i++)
		if (!strcmp(t->env[i].key, key))
			return t->env[i].value;
	return NULL;
}

const struct tsdl_field *tsdl_struct_field(const struct tsdl_type *st, const char *name)
{
	if (!st || (st->kind != TSDL_STRUCT && st->kind != TSDL_VARIANT))
		return NULL;
	for (uint32_t i = 0; i < st->nr_fields; i++)
		if (!strcmp(st->fields[i].name, name))
			return &st->fields[i];
	return NULL;
}

/* ---- the metadata file: plain text or LTTng's packets ---- */

#define META_MAGIC 0x75D11D57u
#define META_HEADER 37

static uint32_t rd32(const uint8_t *p, bool be)
{
	return be ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
		  : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

int tsdl_read_text(const char *path, const uint8_t *data, size_t len, char **text, size_t *tlen,
		   struct vms_error *err)
{
	*text = NULL;
	*tlen = 0;
	bool le = len >= 4 && rd32(data, false) == META_MAGIC;
	bool be = len >= 4 && rd32(data, true) == META_MAGIC;
	if (!le && !be) {
		if (len < 9 || memcmp(data, "/* CTF 1.", 9))
			return 0; /* not CTF */
		if (memchr(data, 0, len))
			return vms_error_set(err, VMS_ERR_FORMAT, "%s/metadata: NUL byte in the text "
					     "at byte offset %zu", path,
					     (size_t)((const uint8_t *)memchr(data, 0, len) - data));
		if (!(*text = malloc(len + 1)))
			return tsdl_nomem_at(err, path, 0);
		memcpy(*text, data, len);
		(*text)[len] = 0;
		*tlen = len;
		return 0;
	}
	/* the text is at most the file's size: one buffer of that size holds it all */
	char *out = malloc(len + 1);
	if (!out)
		return tsdl_nomem_at(err, path, 0);
	size_t off = 0, n = 0;
	while (off < len) {
		const uint8_t *h = data + off;
		if (len - off < META_HEADER) {
			free(out);
			return vms_error_set(err, VMS_ERR_FORMAT, "%s/metadata: truncated packet "
					     "header at byte offset %zu", path, off);
		}
		uint32_t content = rd32(h + 24, be), packet = rd32(h + 28, be);
		const char *bad = NULL;
		if (rd32(h, be) != META_MAGIC)
			bad = "bad metadata packet magic";
		else if (h[32] || h[33] || h[34])
			bad = "compressed, encrypted or checksummed metadata packet";
		else if (packet % 8 || content % 8 || content > packet || content / 8 < META_HEADER ||
			 packet / 8 > len - off)
			bad = "bad metadata packet size";
		if (bad) {
			free(out);
			return vms_error_set(err, VMS_ERR_FORMAT, "%s/metadata: %s at byte offset "
					     "%zu", path, bad, off);
		}
		size_t body = content / 8 - META_HEADER;
		if (memchr(h + META_HEADER, 0, body)) {
			size_t at = (size_t)((const uint8_t *)memchr(h + META_HEADER, 0, body) - data);
			free(out);
			return vms_error_set(err, VMS_ERR_FORMAT, "%s/metadata: NUL byte in the text "
					     "at byte offset %zu", path, at);
		}
		memcpy(out + n, h + META_HEADER, body);
		n += body;
		off += packet / 8;
	}
	out[n] = 0;
	*text = out;
	*tlen = n;
	return 0;
}
