/* A small strict JSON reader and writer for the control socket (RFC 8259: no comments, no
 * trailing commas, no duplicate keys (found in linear time), valid UTF-8 only). Requests are single short lines, so a
 * plain tree is enough. Internal to libvmstrace; the vmscope CLI compiles it too. */
#ifndef VMST_JSON_H
#define VMST_JSON_H

#include <stdbool.h>
#include <stddef.h>

enum vmst_json_type {
	VMST_JSON_NULL,
	VMST_JSON_BOOL,
	VMST_JSON_NUMBER,
	VMST_JSON_STRING,
	VMST_JSON_ARRAY,
	VMST_JSON_OBJECT,
};

struct vmst_json {
	enum vmst_json_type type;
	bool b;
	double num;
	char *str;                 /* STRING: decoded UTF-8, NUL-terminated; NUMBER: its text */
	size_t len;                /* STRING/NUMBER: bytes in str */
	size_t n;                  /* ARRAY/OBJECT: number of items */
	struct vmst_json *item;    /* ARRAY/OBJECT: the values */
	char **key;                /* OBJECT: the keys (decoded, NUL-terminated) */
};

#define VMST_JSON_MAX_DEPTH 32
/* Values in one text at most: bounds the tree (about 100 bytes a value) whatever the text's
 * length. A request line (64 KiB) holds fewer; the largest reply a tracer sends, the state of
 * all 65535 possible events, holds about 200,000. */
#define VMST_JSON_MAX_VALUES (1u << 20)

/* Parse exactly one value filling text[0..len) (blanks around it allowed). Returns 0, or -1
 * with a short reason in why (and *out left empty). */
int vmst_json_parse(const char *text, size_t len, struct vmst_json *out, char *why, size_t whylen);
void vmst_json_free(struct vmst_json *v);
/* The member of an object, or NULL. */
const struct vmst_json *vmst_json_get(const struct vmst_json *obj, const char *key);
/* A string without NUL bytes inside, or NULL. */
const char *vmst_json_cstr(const struct vmst_json *v);

/* A growing output buffer; on allocation failure `oom` is set and writes are dropped. */
struct vmst_buf {
	char *p;
	size_t len, cap;
	bool oom;
};

void vmst_buf_put(struct vmst_buf *b, const char *s, size_t n);
void vmst_buf_puts(struct vmst_buf *b, const char *s);
void vmst_buf_printf(struct vmst_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s[0..n) as a JSON string literal (quotes and escapes). */
void vmst_buf_json_str(struct vmst_buf *b, const char *s, size_t n);
/* Any value, compact. */
void vmst_buf_json(struct vmst_buf *b, const struct vmst_json *v);
void vmst_buf_free(struct vmst_buf *b);

#endif
