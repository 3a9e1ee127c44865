/* A CTF 1.8 metadata (TSDL) parser: the type tree of any producer (LTTng kernel and UST,
 * barectf, libvmstrace). plan.c compiles it into decoding plans; nothing decodes from the tree
 * itself. Everything lives in one arena freed with the trace, and every count is bounded
 * by the text's own size (types are shared through aliases, never copied), so a hostile
 * metadata file costs memory in proportion to its length. */
#ifndef VMS_TSDL_H
#define VMS_TSDL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmscope/error.h"

enum tsdl_kind {
	TSDL_INT,
	TSDL_FLOAT,
	TSDL_STRING,
	TSDL_STRUCT,
	TSDL_VARIANT,
	TSDL_ARRAY,
	TSDL_SEQ,
	TSDL_ENUM,
};

enum tsdl_order { TSDL_NATIVE = 0, TSDL_LE, TSDL_BE };

struct tsdl_type;

struct tsdl_field {
	const char *name;          /* as declared (LTTng's leading '_' included) */
	struct tsdl_type *type;
};

struct tsdl_enum_map {
	const char *label;
	int64_t lo, hi;            /* as the container's signedness reads them (two's complement) */
};

struct tsdl_type {
	uint8_t kind;              /* enum tsdl_kind */
	uint8_t order;             /* enum tsdl_order (integers, floats, enum containers) */
	bool is_signed;
	bool text;                 /* integer with encoding UTF8/ASCII (char arrays are strings) */
	uint8_t base;              /* 2, 8, 10, 16 */
	uint32_t size;             /* bits: integers, floats, enums (the container's) */
	uint32_t align;            /* bits, a power of two */
	const char *clock;         /* integers mapped to a clock (clock.NAME.value): NAME */
	/* enum */
	uint32_t nr_maps;
	struct tsdl_enum_map *maps;
	/* struct, variant */
	uint32_t nr_fields;
	struct tsdl_field *fields;
	const char *tag;           /* variant: the tag field's name (path) */
	/* array, sequence */
	struct tsdl_type *elem;
	uint64_t length;           /* array */
	const char *length_ref;    /* sequence: the length field's name (path) */
};

struct tsdl_clock {
	char name[64];
	uint64_t freq;
	int64_t offset_s;
	uint64_t offset;           /* cycles */
	char description[128];
};

struct tsdl_event {
	const char *name;
	uint64_t id;
	uint64_t stream_id;
	struct tsdl_type *context; /* may be NULL */
	struct tsdl_type *fields;  /* may be NULL */
};

struct tsdl_stream {
	uint64_t id;
	struct tsdl_type *packet_context, *event_header, *event_context; /* may be NULL */
};

struct tsdl_env {
	const char *key, *value;   /* value as written (strings unquoted) */
};

#define TSDL_MAX_CLOCKS 16
#define TSDL_MAX_STREAMS 4096
#define TSDL_MAX_EVENTS 1000000

struct tsdl_trace {
	bool has_uuid;
	uint8_t uuid[16];
	uint8_t order;             /* the trace's byte order: TSDL_LE or TSDL_BE */
	struct tsdl_type *packet_header; /* may be NULL */
	uint32_t nr_clocks;
	struct tsdl_clock clocks[TSDL_MAX_CLOCKS];
	uint32_t nr_streams;
	struct tsdl_stream *streams;
	uint32_t nr_events;
	struct tsdl_event *events;
	uint32_t nr_env;
	struct tsdl_env *env;
	struct tsdl_arena *arena;
};

/* The metadata file's text: plain TSDL, or packetized (LTTng: packets of magic 0x75D11D57,
 * a header and text), unpacked into one NUL-terminated text. Returns 0 or a negative
 * status with err set ("PATH: WHAT at byte offset N"). */
int tsdl_read_text(const char *path, const uint8_t *data, size_t len, char **text, size_t *tlen,
		   struct vms_error *err);

/* Parse `text`; `path` is the trace directory (errors name PATH/metadata). */
int tsdl_parse(const char *path, const char *text, size_t len, struct tsdl_trace *t,
	       struct vms_error *err);
void tsdl_free(struct tsdl_trace *t);

const char *tsdl_env(const struct tsdl_trace *t, const char *key);
/* Field `name` of a struct (exact name), or NULL. */
const struct tsdl_field *tsdl_struct_field(const struct tsdl_type *st, const char *name);

#endif
