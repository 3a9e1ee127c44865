/* trace.dat: what libtraceevent may be given.
 *
 * libtraceevent 1.7 parses the format texts of a trace.dat, and a hostile file writes them.
 * Its parser trusts them: it dereferences NULL when a print format names a field the format
 * does not declare or holds a byte outside printable ASCII, divides constants without
 * checking the divisor, takes '=' for an operator and then dereferences NULL, and recurses
 * once per nesting level and once per operator (a print format nested 40,000 levels deep
 * overflows the stack), and it calls its operator parser on a NULL argument when a token it
 * takes for an operator of unknown priority ('.', ';', '[', ']', '{', '}', "->", '#', ...)
 * comes right after the else branch of a ?: or after a subscript's ']' ("1 ? a : b.c",
 * "x[1][2]"; found by fuzzing, tests/fuzz/regress/tracedat/fmt-dot-on-literal.dat). All of these were found by fuzzing or by hostile files
 * (tests/fuzz/regress/tracedat). A kernel writes none of them, so a text that could trigger
 * one is refused here, in one linear pass, before libtraceevent sees any of it; a refused
 * format is treated like one libtraceevent cannot parse (kind OTHER, no fields).
 *
 * No kernel format the previous guard accepted is refused (4,723 of the 4,752 distinct formats
 * of the shared trace.dat files; the 29 others assign or name undeclared fields). The limits
 * are several times what real kernels write: over the 2,305 formats of the
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
 * tracedat_formats.c) or a non-zero number, its value read as libtraceevent reads it
 * (strtoull base 0): "0x" hex, a leading 0 octal, so that "08" or "0000008" is 0 there (a
 * SIGFPE when it folds the division) and is refused here. */
static bool divisor_ok(const uint8_t *t, uint64_t len, uint64_t k)
{
	k = skip_space(t, len, k);
	if (len - k >= 3 && memcmp(t + k, "REC", 3) == 0 && (len - k == 3 || !is_ident(t[k + 3])))
		return true;   /* its field is checked as any REC-> */
	bool hex = len - k > 2 && t[k] == '0' && (t[k + 1] == 'x' || t[k + 1] == 'X');
	bool octal = !hex && k < len && t[k] == '0';
	uint64_t e = hex ? k + 2 : k;
	bool nonzero = false;
	uint64_t digits = e;
	for (; e < len && is_ident(t[e]); e++) {
		uint8_t c = t[e];
		bool dig = (c >= '0' && c <= (octal ? '7' : '9')) ||
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

/* A byte libtraceevent's tokenizer takes for (part of) an operator: any printable byte
 * but letters, digits, '_', spaces, quotes and the delimiters "(),". */
static bool is_op_byte(uint8_t c)
{
	return c > 0x20 && c < 0x7f && !is_ident(c) && c != '"' && c != '\'' && c != '(' &&
	       c != ')' && c != ',';
}

/* The end of the operator token starting at t[i], cut as libtraceevent 1.7's __read_token()
 * cuts it: "->"; a doubled + | & - (one token); << and >> and a single + | & - < > ! =
 * take one '=' and then every following operator byte ("<<==" and "&~" are one token
 * each); any other byte is a token alone. */
static uint64_t op_token_end(const uint8_t *t, uint64_t len, uint64_t i)
{
	uint8_t c = t[i];
	uint64_t k = i + 1;
	bool next = k < len;
	if (c == '-' && next && t[k] == '>')
		return k + 1;
	if (strchr("+|&-<>", c) && next && t[k] == c) {
		if (c != '<' && c != '>')
			return k + 1;
		k++;
	} else if (!strchr("+|&-<>!=", c)) {
		return k;
	}
	if (k < len && t[k] == '=')
		k++;
	while (k < len && is_op_byte(t[k]))
		k++;
	return k;
}

/* Only bytes of C's arithmetic, logic and comparison operators, no '=' (an assignment). */
static bool plain_op_chars(const uint8_t *t, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++)
		if (!strchr("+-*/%&|^!~<>?:", t[k]) || !t[k])
			return false;
	return true;
}

/* An operator token libtraceevent gives a priority (get_op_prio()), or ':' of a ?:. */
static bool known_op(const uint8_t *t, uint64_t n)
{
	static const char *const ops[] = {"~", "!", "*", "/", "%", "+", "-", "<", ">", "&", "^",
					  "|", "?", ":", "<<", ">>", "<=", ">=", "==", "!=", "&&",
					  "||", NULL};
	for (const char *const *o = ops; *o; o++)
		if (strlen(*o) == n && memcmp(*o, t, n) == 0)
			return true;
	return false;
}

/* A token libtraceevent takes for an operator but gives no priority (get_op_prio() -1) at
 * t[i]: after a ?: or a ']', its parser goes on with a NULL argument. */
static bool unknown_prio_at(const uint8_t *t, uint64_t len, uint64_t i)
{
	uint8_t c = t[i];
	return c == '[' || c == ']' || c == '{' || c == '}' ||
	       (c == '-' && i + 1 < len && t[i + 1] == '>');
}

/* The print format's arguments [0, len): every field reference names a declared field,
 * nesting and operators within the limits, no assignment, no division by zero, no token of
 * unknown priority where libtraceevent dereferences NULL on it (see the top of this file). */
static bool print_args_ok(const uint8_t *t, uint64_t len, const struct name_set *fields)
{
	int depth = 0;
	uint32_t ops = 0;
	uint64_t i = 0;
	/* per nesting level: ?s not yet matched by their ':', and whether the else branch of a
	 * ?: is being read (until the next ',' or a binary operator after its operand) */
	uint32_t conds[TD_FMT_MAX_DEPTH + 1] = {0};
	bool in_else[TD_FMT_MAX_DEPTH + 1] = {0};
	bool after_close = false;   /* the last token was a ']' */
	bool after_op = true;       /* the last token was an operator, ':' or '(' */
	i = skip_space(t, len, 0);
	if (i >= len || t[i] != '"')
		return false;   /* a print format starts with its format string */
	while (i < len) {
		uint8_t c = t[i];
		if (is_space(c) || c == '\n') {
			i++;
			continue;
		}
		if ((after_close || in_else[depth]) && unknown_prio_at(t, len, i))
			return false;
		bool after_close_tok = after_close;
		after_close = false;
		if (c == '"' || c == '\'') {
			/* a string or character literal, ended as libtraceevent's tokenizer ends
			 * it: by the first quote not right after a backslash */
			uint64_t k = i + 1;
			while (k < len && !(t[k] == c && t[k - 1] != '\\'))
				k++;
			if (k >= len)
				return false;
			i = k + 1;
			after_op = false;
			continue;
		}
		if (c == '(' || c == '[' || c == '{') {
			if (++depth > TD_FMT_MAX_DEPTH)
				return false;
			conds[depth] = 0;
			in_else[depth] = false;
			after_op = true;
			i++;
			continue;
		}
		if (c == ')' || c == ']' || c == '}') {
			if (--depth < 0)
				return false;
			after_close = c == ']';
			after_op = false;
			i++;
			continue;
		}
		if (c == ',') {
			conds[depth] = 0;
			in_else[depth] = false;
			after_op = true;
			i++;
			continue;
		}
		if (is_op_byte(c)) {
			uint64_t e = op_token_end(t, len, i);
			/* "->" after a cast: "((const struct drm_rect *)REC->src)->x1" */
			bool arrow = e - i == 2 && c == '-' && t[i + 1] == '>';
			/* a token without a priority: libtraceevent refuses it cleanly ("!!" of a
			 * kernel's __builtin_expect(!!(...)) included) except right after a ?: or
			 * a ']' (checked above for one byte, here for a whole token); an assignment
			 * ('=', "+=", "<<=") or a byte no C operator has ('.', ';', '#', ...) is
			 * refused anywhere: no kernel writes one outside a literal */
			if (!arrow && !known_op(t + i, e - i) &&
			    (after_close_tok || in_else[depth] || !plain_op_chars(t + i, e - i)))
				return false;
			/* libtraceevent recurses once per operator */
			if (++ops > TD_FMT_MAX_OPS)
				return false;
			if ((c == '/' || c == '%') && !divisor_ok(t, len, e))
				return false;
			if (c == '?') {
				conds[depth]++;
			} else if (c == ':') {
				if (conds[depth]) {
					conds[depth]--;
					in_else[depth] = true;
				}
			} else if (!after_op && !arrow) {
				/* a binary operator after the else branch's operand: libtraceevent
				 * parses what follows as that operator's right side */
				in_else[depth] = false;
			}
			after_op = true;
			i = e;
			continue;
		}
		after_op = false;
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

int td_format_text_ok(const uint8_t *t, uint64_t len)
{
	if (!td_text_bytes_ok(t, len))
		return 0;
	static const char pf[] = "print fmt:";
	const uint8_t *p = memmem(t, len, pf, sizeof pf - 1);
	if (!p)
		return 1;   /* no print format: nothing refers to a field */
	uint64_t start = (uint64_t)(p - t);
	/* at most one field per 8 bytes of text: the set's size */
	uint32_t cap = 16;
	while (cap < start / 4 + 16)
		cap <<= 1;
	struct name_set set = {.slot = calloc(cap, sizeof *set.slot),
			       .len = calloc(cap, sizeof *set.len), .mask = cap - 1, .t = t};
	/* out of memory is said as such, not taken for a refused format (the events would
	 * lose their kind without a word of why) */
	int ok = !set.slot || !set.len ? VMS_ERR_NOMEM
		: read_fields(t, start, &set) &&
		  print_args_ok(t + start + sizeof pf - 1, len - start - (sizeof pf - 1), &set);
	free(set.slot);
	free(set.len);
	return ok;
}
