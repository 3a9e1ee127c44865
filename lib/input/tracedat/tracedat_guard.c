/* trace.dat: what libtraceevent may be given.
 *
 * libtraceevent 1.7 parses the format texts of a trace.dat, and a hostile file writes them.
 * Its parser trusts them: it dereferences NULL when a print format names a field the format
 * does not declare or holds a byte outside printable ASCII, divides constants without
 * checking the divisor, takes '=' for an operator and then dereferences NULL, and recurses
 * once per nesting level and once per operator (a print format nested 40,000 levels deep
 * overflows the stack). All of these were found by fuzzing or by hostile files
 * (tests/fuzz/regress/tracedat). A kernel writes none of them, so a text that could trigger
 * one is refused here, in one linear pass, before libtraceevent sees any of it; a refused
 * format is treated like one libtraceevent cannot parse (kind OTHER, no fields).
 *
 * The limits are several times what real kernels write: over the 2,305 formats of the
 * shared traces (Linux 5.x and 6.x, x86_64), the longest is 5.5 KB, the deepest print
 * format nests 14 levels and the one with most operators has 172 outside string literals. */
#include <stdlib.h>
#include <string.h>

#include "tracedat.h"

static bool is_ident(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

static bool is_space(uint8_t c)
{
	return c == ' ' || c == '\t';
}

bool td_text_bytes_ok(const uint8_t *t, uint64_t len)
{
	if (len > TD_FMT_MAX_LEN)
		return false;
	for (uint64_t i = 0; i < len; i++)
		if ((t[i] < 0x20 && t[i] != '\t' && t[i] != '\n') || t[i] > 0x7e)
			return false;
	return true;
}

/* The names of the fields a format declares, as libtraceevent reads each "field:" line:
 * "field:TYPE NAME;", "field:TYPE NAME[N];" or "field:__data_loc TYPE[] NAME;". An open
 * addressing set of (offset, length) into the text; the text is at most TD_FMT_MAX_LEN. */
struct name_set {
	uint32_t *slot;   /* offset + 1 into the text, 0 = empty */
	uint16_t *len;
	uint32_t mask;
	const uint8_t *t;
};

static uint32_t name_hash(const uint8_t *p, uint32_t n)
{
	uint32_t h = 2166136261u;
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static void set_add(struct name_set *s, uint32_t off, uint32_t n)
{
	for (uint32_t i = name_hash(s->t + off, n) & s->mask;; i = (i + 1) & s->mask) {
		if (!s->slot[i]) {
			s->slot[i] = off + 1;
			s->len[i] = (uint16_t)n;
			return;
		}
		if (s->len[i] == n && memcmp(s->t + s->slot[i] - 1, s->t + off, n) == 0)
			return;
	}
}

static bool set_has(const struct name_set *s, const uint8_t *p, uint32_t n)
{
	for (uint32_t i = name_hash(p, n) & s->mask; s->slot[i]; i = (i + 1) & s->mask)
		if (s->len[i] == n && memcmp(s->t + s->slot[i] - 1, p, n) == 0)
			return true;
	return false;
}

/* One declaration [b, e) (after "field:", before its ';'): the name it declares, or false
 * when its shape is not a kernel's (then libtraceevent might read another name than we do). */
static bool decl_name(const uint8_t *t, uint64_t b, uint64_t e, uint64_t *nb, uint64_t *ne)
{
	while (e > b && is_space(t[e - 1]))
		e--;
	/* trailing array dimensions: NAME[N] or NAME[N][M] */
	while (e > b && t[e - 1] == ']') {
		int depth = 0;
		uint64_t k = e;
		while (k > b) {
			k--;
			if (t[k] == ']')
				depth++;
			else if (t[k] == '[' && --depth == 0)
				break;
		}
		if (depth != 0)
			return false;
		e = k;
		while (e > b && is_space(t[e - 1]))
			e--;
	}
	uint64_t s = e;
	while (s > b && is_ident(t[s - 1]))
		s--;
	if (s == e || (t[s] >= '0' && t[s] <= '9') || e - s > 255)
		return false;
	/* a type must come before the name */
	uint64_t k = b;
	while (k < s && is_space(t[k]))
		k++;
	if (k == s)
		return false;
	*nb = s;
	*ne = e;
	return true;
}

/* Every "field:" line before `end`: their names into `set`. A line that starts like a field
 * declaration but has another shape (a ';' inside brackets, an unbalanced bracket, a byte a
 * C declaration does not hold) refuses the whole format. */
static bool read_fields(const uint8_t *t, uint64_t end, struct name_set *set)
{
	for (uint64_t i = 0; i < end;) {
		uint64_t e = i;
		while (e < end && t[e] != '\n')
			e++;
		uint64_t k = i;
		while (k < e && is_space(t[k]))
			k++;
		static const char f1[] = "field:", f2[] = "field special:";
		uint64_t d = 0;
		if (e - k >= sizeof f1 - 1 && memcmp(t + k, f1, sizeof f1 - 1) == 0)
			d = k + sizeof f1 - 1;
		else if (e - k >= sizeof f2 - 1 && memcmp(t + k, f2, sizeof f2 - 1) == 0)
			d = k + sizeof f2 - 1;
		if (d) {
			int depth = 0;
			uint64_t semi = d;
			for (; semi < e; semi++) {
				uint8_t c = t[semi];
				if (c == '[' || c == '(')
					depth++;
				else if (c == ']' || c == ')')
					depth--;
				else if (c == ';' && depth == 0)
					break;
				else if (!is_ident(c) && !is_space(c) && c != '*' && c != '.')
					return false;
				if (depth < 0 || depth > 4)
					return false;
			}
			uint64_t nb, ne;
			if (semi == e || depth != 0 || !decl_name(t, d, semi, &nb, &ne))
				return false;
			set_add(set, (uint32_t)nb, (uint32_t)(ne - nb));
		}
		i = e + 1;
	}
	return true;
}

/* An identifier starting at t[i] (i < len), its end in *e. */
static bool ident_at(const uint8_t *t, uint64_t len, uint64_t i, uint64_t *e)
{
	uint64_t k = i;
	while (k < len && is_ident(t[k]))
		k++;
	*e = k;
	return k > i && !(t[i] >= '0' && t[i] <= '9');
}

static uint64_t skip_space(const uint8_t *t, uint64_t len, uint64_t i)
{
	while (i < len && (is_space(t[i]) || t[i] == '\n'))
		i++;
	return i;
}

/* A divisor after '/' or '%': REC->field (checked when printing, see print_arg_safe in
 * tracedat_formats.c) or a non-zero number. */
static bool divisor_ok(const uint8_t *t, uint64_t len, uint64_t k)
{
	k = skip_space(t, len, k);
	if (len - k >= 3 && memcmp(t + k, "REC", 3) == 0 && (len - k == 3 || !is_ident(t[k + 3])))
		return true;   /* its field is checked as any REC-> */
	bool hex = len - k > 2 && t[k] == '0' && (t[k + 1] == 'x' || t[k + 1] == 'X');
	uint64_t e = hex ? k + 2 : k;
	bool nonzero = false;
	uint64_t digits = e;
	for (; e < len && is_ident(t[e]); e++) {
		uint8_t c = t[e];
		bool dig = (c >= '0' && c <= '9') ||
			   (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
		if (!dig)
			break;
		nonzero |= c != '0';
	}
	if (e == digits || !nonzero)
		return false;
	while (e < len && (t[e] == 'u' || t[e] == 'U' || t[e] == 'l' || t[e] == 'L'))
		e++;   /* 1000L, 8UL */
	return e >= len || !is_ident(t[e]);
}

static bool is_op_char(uint8_t c)
{
	return c && strchr("+-*/%&|^?<>!~:", c) != NULL;
}

/* The print format's arguments [0, len): every field reference names a declared field,
 * nesting and operators within the limits, no assignment, no division by zero. */
static bool print_args_ok(const uint8_t *t, uint64_t len, const struct name_set *fields)
{
	int depth = 0;
	uint32_t ops = 0;
	uint64_t i = 0;
	i = skip_space(t, len, 0);
	if (i >= len || t[i] != '"')
		return false;   /* a print format starts with its format string */
	while (i < len) {
		uint8_t c = t[i];
		if (c == '"' || c == '\'') {
			/* a string or character literal, ended as libtraceevent's tokenizer ends
			 * it: by the first quote not right after a backslash */
			uint64_t k = i + 1;
			while (k < len && !(t[k] == c && t[k - 1] != '\\'))
				k++;
			if (k >= len)
				return false;
			i = k + 1;
			continue;
		}
		if (c == '(' || c == '[' || c == '{') {
			if (++depth > TD_FMT_MAX_DEPTH)
				return false;
			i++;
			continue;
		}
		if (c == ')' || c == ']' || c == '}') {
			if (--depth < 0)
				return false;
			i++;
			continue;
		}
		/* an assignment: libtraceevent takes '=' as an operator and dereferences NULL
		 * after a ?: (found by fuzzing); a kernel's print arguments only compare */
		if (c == '=') {
			bool cmp = (i > 0 && strchr("=!<>", t[i - 1])) || (i + 1 < len && t[i + 1] == '=');
			if (!cmp)
				return false;
		}
		if (is_op_char(c) || c == '=') {
			/* one per operator token, not per character: a run of operator characters
			 * ("<<", "&&", "->") is one recursion of libtraceevent's parser at most */
			if (i == 0 || !(is_op_char(t[i - 1]) || t[i - 1] == '='))
				if (++ops > TD_FMT_MAX_OPS)
					return false;
			if ((c == '/' || c == '%') && !divisor_ok(t, len, i + 1))
				return false;
			i++;
			continue;
		}
		uint64_t e;
		if (!ident_at(t, len, i, &e)) {
			i = e > i ? e : i + 1;
			continue;
		}
		/* REC->NAME (libtraceevent takes "REC", "->" and NAME as three tokens, so
		 * spaces may separate them) */
		if (e - i == 3 && memcmp(t + i, "REC", 3) == 0) {
			uint64_t k = skip_space(t, len, e);
			if (len - k < 2 || t[k] != '-' || t[k + 1] != '>')
				return false;
			k = skip_space(t, len, k + 2);
			uint64_t ne;
			if (k >= len || !ident_at(t, len, k, &ne) ||
			    !set_has(fields, t + k, (uint32_t)(ne - k)))
				return false;
			i = ne;
			continue;
		}
		/* __get_str(NAME), __get_dynamic_array(NAME), __get_bitmask(NAME), ...: a field
		 * named without REC-> */
		if (e - i > 6 && memcmp(t + i, "__get_", 6) == 0) {
			uint64_t k = skip_space(t, len, e);
			if (k < len && t[k] == '(') {
				k = skip_space(t, len, k + 1);
				uint64_t ne;
				if (k >= len || !ident_at(t, len, k, &ne) ||
				    !set_has(fields, t + k, (uint32_t)(ne - k)))
					return false;
			}
		}
		i = e;
	}
	return depth == 0;
}

bool td_format_text_ok(const uint8_t *t, uint64_t len)
{
	if (!td_text_bytes_ok(t, len))
		return false;
	static const char pf[] = "print fmt:";
	const uint8_t *p = memmem(t, len, pf, sizeof pf - 1);
	if (!p)
		return true;   /* no print format: nothing refers to a field */
	uint64_t start = (uint64_t)(p - t);
	/* at most one field per 8 bytes of text: the set's size */
	uint32_t cap = 16;
	while (cap < start / 4 + 16)
		cap <<= 1;
	struct name_set set = {.slot = calloc(cap, sizeof *set.slot),
			       .len = calloc(cap, sizeof *set.len), .mask = cap - 1, .t = t};
	bool ok = set.slot && set.len && read_fields(t, start, &set) &&
		  print_args_ok(t + start + sizeof pf - 1, len - start - (sizeof pf - 1), &set);
	free(set.slot);
	free(set.len);
	return ok;
}
