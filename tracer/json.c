/* Strict JSON for the control socket. Anything a peer sends is untrusted: the parser checks
 * every byte, bounds the nesting depth, and never reads past the given length (the input
 * need not be NUL-terminated). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "json.h"

struct parser {
	const unsigned char *p, *end;
	char *why;
	size_t whylen;
	int depth;
	size_t values;     /* parsed so far, against VMST_JSON_MAX_VALUES */
};

static int perr(struct parser *ps, const char *what)
{
	if (ps->why && ps->whylen && !ps->why[0])
		snprintf(ps->why, ps->whylen, "%s", what);
	return -1;
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int parse_value(struct parser *ps, struct vmst_json *v);

/* Append one code point as UTF-8. */
static size_t put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static int hex4(struct parser *ps, uint32_t *out)
{
	if (ps->end - ps->p < 4)
		return perr(ps, "truncated \\u escape");
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned char c = *ps->p++;
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return perr(ps, "bad \\u escape");
	}
	*out = v;
	return 0;
}

/* Length of a valid UTF-8 sequence at p (multi-byte lead), or 0. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = p[0];
	size_t n;
	uint32_t cp, min;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if ((size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

static int parse_string(struct parser *ps, char **out, size_t *outlen)
{
	ps->p++;   /* the opening quote */
	/* decoded text is never longer than the source */
	const unsigned char *q = ps->p;
	while (q < ps->end && *q != '"') {
		if (*q == '\\' && q + 1 < ps->end)
			q++;
		q++;
	}
	if (q >= ps->end)
		return perr(ps, "unterminated string");
	char *s = malloc((size_t)(q - ps->p) + 1);
	if (!s)
		return perr(ps, "out of memory");
	size_t n = 0;
	for (;;) {
		if (ps->p >= ps->end) {
			free(s);
			return perr(ps, "unterminated string");
		}
		unsigned char c = *ps->p;
		if (c == '"') {
			ps->p++;
			break;
		}
		if (c < 0x20) {
			free(s);
			return perr(ps, "control character in string");
		}
		if (c == '\\') {
			ps->p++;
			if (ps->p >= ps->end) {
				free(s);
				return perr(ps, "unterminated string");
			}
			c = *ps->p++;
			switch (c) {
			case '"': s[n++] = '"'; break;
			case '\\': s[n++] = '\\'; break;
			case '/': s[n++] = '/'; break;
			case 'b': s[n++] = '\b'; break;
			case 'f': s[n++] = '\f'; break;
			case 'n': s[n++] = '\n'; break;
			case 'r': s[n++] = '\r'; break;
			case 't': s[n++] = '\t'; break;
			case 'u': {
				uint32_t cp, lo;
				if (hex4(ps, &cp) < 0) {
					free(s);
					return -1;
				}
				if (cp >= 0xd800 && cp <= 0xdbff) {
					if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u') {
						free(s);
						return perr(ps, "lone surrogate in \\u escape");
					}
					ps->p += 2;
					if (hex4(ps, &lo) < 0) {
						free(s);
						return -1;
					}
					if (lo < 0xdc00 || lo > 0xdfff) {
						free(s);
						return perr(ps, "lone surrogate in \\u escape");
					}
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				} else if (cp >= 0xdc00 && cp <= 0xdfff) {
					free(s);
					return perr(ps, "lone surrogate in \\u escape");
				}
				/* "\uXXXX" is 6 bytes, its UTF-8 at most 4: the buffer suffices */
				n += put_utf8(s + n, cp);
				break;
			}
			default:
				free(s);
				return perr(ps, "bad escape in string");
			}
			continue;
		}
		if (c < 0x80) {
			s[n++] = (char)c;
			ps->p++;
			continue;
		}
		size_t k = utf8_len(ps->p, ps->end);
		if (!k) {
			free(s);
			return perr(ps, "invalid UTF-8 in string");
		}
		memcpy(s + n, ps->p, k);
		n += k;
		ps->p += k;
	}
	s[n] = '\0';
	*out = s;
	*outlen = n;
	return 0;
}

static int parse_number(struct parser *ps, struct vmst_json *v)
{
	const unsigned char *b = ps->p, *p = ps->p;
	if (p < ps->end && *p == '-')
		p++;
	if (p >= ps->end)
		return perr(ps, "bad number");
	if (*p == '0') {
		p++;
	} else if (*p >= '1' && *p <= '9') {
		while (p < ps->end && *p >= '0' && *p <= '9')
			p++;
	} else {
		return perr(ps, "bad number");
	}
	if (p < ps->end && *p == '.') {
		p++;
		if (p >= ps->end || *p < '0' || *p > '9')
			return perr(ps, "bad number");
		while (p < ps->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < ps->end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < ps->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= ps->end || *p < '0' || *p > '9')
			return perr(ps, "bad number");
		while (p < ps->end && *p >= '0' && *p <= '9')
			p++;
	}
	size_t n = (size_t)(p - b);
	if (n > 64)
		return perr(ps, "number too long");
	v->str = malloc(n + 1);
	if (!v->str)
		return perr(ps, "out of memory");
	memcpy(v->str, b, n);
	v->str[n] = '\0';
	v->len = n;
	v->num = strtod(v->str, NULL);
	v->type = VMST_JSON_NUMBER;
	ps->p = p;
	return 0;
}

static int lit(struct parser *ps, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
		return perr(ps, "invalid literal");
	ps->p += n;
	return 0;
}

static int grow(struct vmst_json *v, size_t *cap, bool keys)
{
	if (v->n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 4;
	struct vmst_json *ni = realloc(v->item, nc * sizeof *ni);
	if (!ni)
		return -1;
	v->item = ni;
	if (keys) {
		char **nk = realloc(v->key, nc * sizeof *nk);
		if (!nk)
			return -1;
		v->key = nk;
	}
	*cap = nc;
	return 0;
}

static int parse_array(struct parser *ps, struct vmst_json *v)
{
	v->type = VMST_JSON_ARRAY;
	size_t cap = 0;
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ']') {
		ps->p++;
		return 0;
	}
	for (;;) {
		if (grow(v, &cap, false) < 0)
			return perr(ps, "out of memory");
		memset(&v->item[v->n], 0, sizeof v->item[0]);
		if (parse_value(ps, &v->item[v->n]) < 0) {
			v->n++;   /* so that the partial value is freed */
			return -1;
		}
		v->n++;
		skip_ws(ps);
		if (ps->p >= ps->end)
			return perr(ps, "unterminated array");
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p == ']') {
			ps->p++;
			return 0;
		}
		return perr(ps, "expected ',' or ']' in array");
	}
}

/* ---- duplicate keys in linear time ----
 * A table of the keys' hashes (open addressing, at most half full): expected O(1) per key.
 * The hash is keyed by a random seed per process, so that a peer cannot choose keys that
 * collide; should probing still exceed 8 steps per key on average, the keys are sorted
 * instead (O(n log n) comparisons whatever the keys). */

static uint64_t hash_seed(void)
{
	static uint64_t seed;
	uint64_t s = __atomic_load_n(&seed, __ATOMIC_RELAXED);
	if (!s) {
		if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			s = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15u ^ (uint64_t)(uintptr_t)&ts;
		}
		s |= 1;
		__atomic_store_n(&seed, s, __ATOMIC_RELAXED);
	}
	return s;
}

static uint64_t key_hash(const char *k, uint64_t seed)
{
	uint64_t h = seed ^ 0xcbf29ce484222325u;
	for (const unsigned char *p = (const unsigned char *)k; *p; p++)
		h = (h ^ *p) * 0x100000001b3u;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdu ^ seed;
	h ^= h >> 33;
	return h;
}

static int cmp_keys(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int keys_unique_sorted(struct parser *ps, const struct vmst_json *v)
{
	char **k = malloc(v->n * sizeof *k);
	if (!k)
		return perr(ps, "out of memory");
	memcpy(k, v->key, v->n * sizeof *k);
	qsort(k, v->n, sizeof *k, cmp_keys);
	int rc = 0;
	for (size_t i = 1; i < v->n && !rc; i++)
		if (!strcmp(k[i - 1], k[i]))
			rc = perr(ps, "duplicate key in object");
	free(k);
	return rc;
}

static int keys_unique(struct parser *ps, const struct vmst_json *v)
{
	if (v->n < 2)
		return 0;
	if (v->n <= 8) {
		for (size_t i = 1; i < v->n; i++)
			for (size_t j = 0; j < i; j++)
				if (!strcmp(v->key[i], v->key[j]))
					return perr(ps, "duplicate key in object");
		return 0;
	}
	size_t cap = 16;
	while (cap < 2 * v->n)
		cap *= 2;
	uint32_t *slot = calloc(cap, sizeof *slot);   /* key index + 1; 0 = empty */
	if (!slot)
		return perr(ps, "out of memory");
	uint64_t seed = hash_seed();
	size_t probes = 0, budget = 8 * v->n;
	int rc = 0;
	for (size_t i = 0; i < v->n && !rc; i++) {
		size_t at = (size_t)key_hash(v->key[i], seed) & (cap - 1);
		while (slot[at]) {
			if (!strcmp(v->key[slot[at] - 1], v->key[i])) {
				rc = perr(ps, "duplicate key in object");
				break;
			}
			at = (at + 1) & (cap - 1);
			if (++probes > budget) {
				free(slot);
				return keys_unique_sorted(ps, v);
			}
		}
		slot[at] = (uint32_t)i + 1;
	}
	free(slot);
	return rc;
}

static int parse_object(struct parser *ps, struct vmst_json *v)
{
	v->type = VMST_JSON_OBJECT;
	size_t cap = 0;
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		return 0;
	}
	for (;;) {
		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != '"')
			return perr(ps, "expected a string key in object");
		if (grow(v, &cap, true) < 0)
			return perr(ps, "out of memory");
		char *key;
		size_t klen;
		if (parse_string(ps, &key, &klen) < 0)
			return -1;
		if (strlen(key) != klen) {
			free(key);
			return perr(ps, "NUL character in key");
		}
		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != ':') {
			free(key);
			return perr(ps, "expected ':' after key");
		}
		ps->p++;
		memset(&v->item[v->n], 0, sizeof v->item[0]);
		v->key[v->n] = key;
		if (parse_value(ps, &v->item[v->n]) < 0) {
			v->n++;   /* so that the key and the partial value are freed */
			return -1;
		}
		v->n++;
		skip_ws(ps);
		if (ps->p >= ps->end)
			return perr(ps, "unterminated object");
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p == '}') {
			ps->p++;
			return keys_unique(ps, v);
		}
		return perr(ps, "expected ',' or '}' in object");
	}
}

static int parse_value(struct parser *ps, struct vmst_json *v)
{
	if (++ps->values > VMST_JSON_MAX_VALUES)
		return perr(ps, "too many values");
	skip_ws(ps);
	if (ps->p >= ps->end)
		return perr(ps, "expected a value");
	switch (*ps->p) {
	case '{':
	case '[': {
		if (++ps->depth > VMST_JSON_MAX_DEPTH)
			return perr(ps, "nested too deeply");
		int rc = *ps->p == '{' ? parse_object(ps, v) : parse_array(ps, v);
		ps->depth--;
		return rc;
	}
	case '"':
		v->type = VMST_JSON_STRING;
		return parse_string(ps, &v->str, &v->len);
	case 't':
		v->type = VMST_JSON_BOOL;
		v->b = true;
		return lit(ps, "true");
	case 'f':
		v->type = VMST_JSON_BOOL;
		return lit(ps, "false");
	case 'n':
		v->type = VMST_JSON_NULL;
		return lit(ps, "null");
	default:
		if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
			return parse_number(ps, v);
		return perr(ps, "unexpected character");
	}
}

int vmst_json_parse(const char *text, size_t len, struct vmst_json *out, char *why, size_t whylen)
{
	struct parser ps = { (const unsigned char *)text, (const unsigned char *)text + len, why,
			     whylen, 0, 0 };
	if (why && whylen)
		why[0] = '\0';
	memset(out, 0, sizeof *out);
	if (parse_value(&ps, out) < 0) {
		vmst_json_free(out);
		return -1;
	}
	skip_ws(&ps);
	if (ps.p != ps.end) {
		vmst_json_free(out);
		return perr(&ps, "trailing characters after the value");
	}
	return 0;
}

void vmst_json_free(struct vmst_json *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		vmst_json_free(&v->item[i]);
		if (v->key)
			free(v->key[i]);
	}
	free(v->item);
	free(v->key);
	free(v->str);
	memset(v, 0, sizeof *v);
}

const struct vmst_json *vmst_json_get(const struct vmst_json *obj, const char *key)
{
	if (!obj || obj->type != VMST_JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (!strcmp(obj->key[i], key))
			return &obj->item[i];
	return NULL;
}

const char *vmst_json_cstr(const struct vmst_json *v)
{
	if (!v || v->type != VMST_JSON_STRING || strlen(v->str) != v->len)
		return NULL;
	return v->str;
}

/* ---- writing ---- */

void vmst_buf_put(struct vmst_buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void vmst_buf_puts(struct vmst_buf *b, const char *s)
{
	vmst_buf_put(b, s, strlen(s));
}

void vmst_buf_printf(struct vmst_buf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof tmp) {
		vmst_buf_put(b, tmp, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big) {
		b->oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	vmst_buf_put(b, big, (size_t)n);
	free(big);
}

void vmst_buf_json_str(struct vmst_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	vmst_buf_put(b, "\"", 1);
	size_t i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && (unsigned char)s[j] >= 0x20 && s[j] != '"' && s[j] != '\\')
			j++;
		vmst_buf_put(b, s + i, j - i);
		if (j < n) {
			unsigned char c = (unsigned char)s[j];
			char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
			if (c == '"' || c == '\\') {
				e[1] = (char)c;
				vmst_buf_put(b, e, 2);
			} else if (c == '\n') {
				vmst_buf_put(b, "\\n", 2);
			} else if (c == '\t') {
				vmst_buf_put(b, "\\t", 2);
			} else {
				vmst_buf_put(b, e, 6);
			}
			j++;
		}
		i = j;
	}
	vmst_buf_put(b, "\"", 1);
}

void vmst_buf_json(struct vmst_buf *b, const struct vmst_json *v)
{
	switch (v->type) {
	case VMST_JSON_NULL:
		vmst_buf_puts(b, "null");
		break;
	case VMST_JSON_BOOL:
		vmst_buf_puts(b, v->b ? "true" : "false");
		break;
	case VMST_JSON_NUMBER:
		vmst_buf_put(b, v->str, v->len);
		break;
	case VMST_JSON_STRING:
		vmst_buf_json_str(b, v->str, v->len);
		break;
	case VMST_JSON_ARRAY:
		vmst_buf_put(b, "[", 1);
		for (size_t i = 0; i < v->n; i++) {
			if (i)
				vmst_buf_put(b, ",", 1);
			vmst_buf_json(b, &v->item[i]);
		}
		vmst_buf_put(b, "]", 1);
		break;
	case VMST_JSON_OBJECT:
		vmst_buf_put(b, "{", 1);
		for (size_t i = 0; i < v->n; i++) {
			if (i)
				vmst_buf_put(b, ",", 1);
			vmst_buf_json_str(b, v->key[i], strlen(v->key[i]));
			vmst_buf_put(b, ":", 1);
			vmst_buf_json(b, &v->item[i]);
		}
		vmst_buf_put(b, "}", 1);
		break;
	}
}

void vmst_buf_free(struct vmst_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}
