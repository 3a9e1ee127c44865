/* The TSDL tokenizer (CTF 1.8 metadata text) and the small value parsers every metadata
 * parser shares. Comments are skipped; tokens are identifiers (letters, digits, _ . -),
 * strings, ":=", or one punctuation character. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsdl_lex.h"

int tsdl_fail(struct tsdl_lex *l, const char *what)
{
	return vms_error_set(l->err, VMS_ERR_FORMAT, "%s/metadata: %s at byte offset %zu", l->path,
			     what, (size_t)(l->s - l->start));
}

int tsdl_nomem_at(struct vms_error *err, const char *dir, size_t off)
{
	char name[4096 + 16];
	snprintf(name, sizeof name, "%s/metadata", dir);
	return vms_error_nomem_at(err, name, off);
}

/* Next token into l->tok; returns 1, 0 at the end, or a negative status. */
int tsdl_next(struct tsdl_lex *l)
{
	for (;;) {
		while (l->s < l->end && isspace((unsigned char)*l->s))
			l->s++;
		if (l->s + 1 < l->end && l->s[0] == '/' && l->s[1] == '*') {
			const char *e = l->s + 2;
			while (e + 1 < l->end && !(e[0] == '*' && e[1] == '/'))
				e++;
			if (e + 1 >= l->end)
				return tsdl_fail(l, "unterminated comment");
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
			return tsdl_fail(l, "unterminated string");
		l->s++;
		l->tok[n] = 0;
		l->is_str = true;
		return 1;
	}
	if (isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-') {
		while (l->s < l->end && (isalnum((unsigned char)*l->s) || *l->s == '_' ||
					 *l->s == '.' || *l->s == '-')) {
			if (n >= sizeof l->tok - 1)
				return tsdl_fail(l, "token too long");
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

int tsdl_expect(struct tsdl_lex *l, const char *tok)
{
	int rc = tsdl_next(l);
	if (rc < 0)
		return rc;
	if (rc == 0 || l->is_str || strcmp(l->tok, tok) != 0) {
		char m[320];
		snprintf(m, sizeof m, "expected '%s'", tok);
		return tsdl_fail(l, m);
	}
	return 0;
}

/* Skip to the end of a balanced { ... } block (the '{' already read) */
int tsdl_skip_block(struct tsdl_lex *l)
{
	int depth = 1;
	while (depth > 0) {
		int rc = tsdl_next(l);
		if (rc < 0)
			return rc;
		if (rc == 0)
			return tsdl_fail(l, "unterminated block");
		if (!l->is_str && !strcmp(l->tok, "{"))
			depth++;
		else if (!l->is_str && !strcmp(l->tok, "}"))
			depth--;
	}
	return 0;
}

bool tsdl_u64(const char *s, uint64_t *out)
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

bool tsdl_i64(const char *s, int64_t *out)
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

int tsdl_uuid(struct tsdl_lex *l, uint8_t out[16])
{
	const char *s = l->tok;
	int n = 0;
	for (; *s && n < 32; s++) {
		if (*s == '-')
			continue;
		if (!isxdigit((unsigned char)*s))
			return tsdl_fail(l, "bad UUID");
		int v = isdigit((unsigned char)*s) ? *s - '0' : (tolower((unsigned char)*s) - 'a' + 10);
		if (n % 2 == 0)
			out[n / 2] = (uint8_t)(v << 4);
		else
			out[n / 2] |= (uint8_t)v;
		n++;
	}
	if (n != 32 || *s)
		return tsdl_fail(l, "bad UUID");
	return 0;
}

/* The next "KEY <token>" of a { ... } block: 1 with the key in key[] and l->tok the token
 * after it, 0 at the closing brace, or a negative status ("unterminated" names the block). */
int tsdl_block_key(struct tsdl_lex *l, char *key, size_t len, const char *unterminated)
{
	int rc = tsdl_next(l);
	if (rc <= 0)
		return rc < 0 ? rc : tsdl_fail(l, unterminated);
	if (!strcmp(l->tok, "}"))
		return 0;
	snprintf(key, len, "%s", l->tok);
	if ((rc = tsdl_next(l)) <= 0)
		return rc < 0 ? rc : tsdl_fail(l, "unexpected end");
	return 1;
}
