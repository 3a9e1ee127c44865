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
void vms_json_finish(struct vms_json *j);  /* final newline */

/* CSV (RFC 4180): a field is quoted when it holds a comma, a quote or a line break. */
void vms_csv_string(FILE *f, const char *s);

#ifdef __cplusplus
}
#endif
#endif
