/* The TSDL tokenizer shared by the metadata parsers (tsdl_lex.c). */
#ifndef VMS_TSDL_LEX_H
#define VMS_TSDL_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmscope/error.h"

struct tsdl_lex {
	const char *path;
	const char *s, *end, *start;
	char tok[256];
	bool is_str;
	struct vms_error *err;
};

/* Sets err: "PATH/metadata: WHAT at byte offset N" (the lexer's position); returns the status. */
int tsdl_fail(struct tsdl_lex *l, const char *what);
/* Out of memory at byte offset OFF of DIR/metadata (vms_error_nomem_at). */
int tsdl_nomem_at(struct vms_error *err, const char *dir, size_t off);
/* Next token into l->tok; returns 1, 0 at the end, or a negative status. */
int tsdl_next(struct tsdl_lex *l);
/* The next token must be `tok` (not a string). */
int tsdl_expect(struct tsdl_lex *l, const char *tok);
/* Skip to the end of a balanced { ... } block (the '{' already read). */
int tsdl_skip_block(struct tsdl_lex *l);
/* The next "KEY <token>" of a { ... } block: 1 with the key in key[] and l->tok the token
 * after it, 0 at the closing brace, or a negative status. */
int tsdl_block_key(struct tsdl_lex *l, char *key, size_t len, const char *unterminated);
bool tsdl_u64(const char *s, uint64_t *out);
bool tsdl_i64(const char *s, int64_t *out);
int tsdl_uuid(struct tsdl_lex *l, uint8_t out[16]);

#endif
