/* vmscope: small streaming writers for machine-readable output (JSON, CSV). Scripts parse
 * these, so they are exact: integers as integers, strings escaped, no locale. */
#ifndef VMSCOPE_WRITERS_H
#define VMSCOPE_WRITERS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* JSON: a nesting stack tracks where commas go; keys are given with the value. */
struct vms_json {
	FILE *f;
	int depth;
	bool first[64];      /* no element written yet at this depth */
	bool pretty;
};

void vms_json_init(struct vms_json *j, FILE *f, bool pretty);
void vms_json_begin_object(struct vms_json *j, const char *key);  /* key NULL in arrays */
void vms_json_end_object(struct vms_json *j);
void vms_json_begin_array(struct vms_json *j, const char *key);
void vms_json_end_array(struct vms_json *j);
void vms_json_string(struct vms_json *j, const char *key, const char *v);  /* NULL -> null */
void vms_json_uint(struct vms_json *j, const char *key, uint64_t v);
void vms_json_int(struct vms_json *j, const char *key, int64_t v);
void vms_json_double(struct vms_json *j, const char *key, double v);  /* %.17g, always with a
                                                                        * '.' or exponent;
                                                                        * non-finite -> null */
void vms_json_bool(struct vms_json *j, const char *key, bool v);
void vms_json_null(struct vms_json *j, const char *key);
/* a value written as given: a number the caller formatted (e.g. exact decimals) */
void vms_json_raw(struct vms_json *j, const char *key, const char *text);
void vms_json_finish(struct vms_json *j);  /* final newline */

/* CSV (RFC 4180): a field is quoted when it holds a comma or a quote. Being text from a trace,
 * it is escaped like vms_text_string (no line breaks are left), and a field starting with
 * = + - @ (a spreadsheet formula) gets a leading ' (OWASP's CSV injection rule). */
void vms_csv_string(FILE *f, const char *s);

/* Text from a trace, for people (text_escape.c): control characters, C1 controls, Unicode
 * direction overrides and line separators and bytes that are not UTF-8 become \xHH per byte,
 * a backslash becomes \\; everything else (printable ASCII, valid UTF-8) is kept. */
void vms_text_string(FILE *f, const char *s);
/* The same into dst (always terminated when len > 0); returns the full escaped length, like
 * snprintf. */
size_t vms_text_escape(char *dst, size_t len, const char *s);
/* Whether s is printable ASCII without backslashes (nothing to escape). */
bool vms_text_is_safe(const char *s);
/* One UTF-8 sequence at p: its length (1-4) and code point, or 0 when p does not start a
 * valid, shortest-form sequence of a scalar value (the NUL ends any sequence). */
int vms_utf8_seq(const unsigned char *p, uint32_t *cp);
/* Characters the text writers escape (see vms_text_string). */
bool vms_text_char_unsafe(uint32_t cp);

#ifdef __cplusplus
}
#endif
#endif
