/* The simpletrace reader's state, shared by the record walker (reader.c) and the text
 * rendering (format.c). */
#ifndef VMS_ST_READER_H
#define VMS_ST_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmscope/source.h"
#include "trace_events.h"

#define VMS_ST_HEADER_SIZE 24u
#define VMS_ST_HEADER_EVENT_ID UINT64_MAX
#define VMS_ST_MAGIC UINT64_C(0xf2b177cb0aa429b4)
#define VMS_ST_VERSION 4u
#define VMS_ST_DROPPED_ID (UINT64_MAX - 1)
#define VMS_ST_REC_MAPPING 0u
#define VMS_ST_REC_EVENT 1u
#define VMS_ST_EVENT_HEADER 24u   /* id, timestamp_ns, length, pid: "length" counts these too */
#define VMS_ST_MAX_NAME 1024u     /* a mapping name longer than this is damage */
#define VMS_ST_SMALL_IDS 65536u   /* ids below this map through a flat table */

struct vms_st_map {
	uint64_t id;
	uint32_t type;
};

#define VMS_ST_MARK_EVERY 1024u

struct vms_st_mark {
	uint64_t off;
	uint32_t map_pos;
};

/* Where the walk stands at an event record: its offset and what walking carries to it. */
struct vms_st_at {
	uint64_t pos;
	uint32_t map_pos;
	bool lost_pending, have_prev;
	uint64_t prev_ts;
};

struct vms_st_type {
	const struct vms_st_desc *desc;  /* NULL: arguments unknown */
	uint32_t name_len;
};

struct vms_st_reader {
	const uint8_t *data;             /* the whole file, mapped */
	size_t size;

	/* found when the file was opened: the records up to good_end are well framed; the
	 * first framing error (if any) is reported once they have been delivered */
	size_t good_end;
	int bad_status;
	char *bad_msg;

	struct vms_st_events events;     /* from the events file (may be empty) */
	bool have_events;
	struct vms_st_type *types;       /* parallel to meta.type_names */
	uint32_t dropped_type;           /* type index of Dropped_Event, UINT32_MAX if none */

	struct vms_st_map *maps;         /* every mapping record, in file order */
	uint32_t nr_maps;
	uint32_t *small;                 /* id -> type + 1 (0: unmapped), ids < nr_small */
	uint32_t nr_small;
	struct vms_st_map *big;          /* larger ids: an open-addressing table (a hostile file
					    may map millions), type UINT32_MAX = empty slot */
	uint32_t nr_big, cap_big;        /* cap_big: a power of two, or 0 */

	/* every VMS_ST_MARK_EVERY-th record from the first (seek.c): its offset and the
	 * mapping records before it */
	struct vms_st_mark *marks;
	size_t nr_marks;

	/* walking state */
	size_t pos;
	uint32_t map_pos;
	bool failed;
	bool decode;                     /* TRACEPOINT events are wanted */
	bool lost_pending;
	bool have_prev;
	uint64_t prev_ts;

	/* the walking state before the last event returned, for tell (told: one was) */
	bool told;
	struct vms_st_at at;

	/* the last event, for format_event */
	bool have_cur;
	uint32_t cur_type;
	uint64_t cur_ts;
	int64_t cur_delta;
	uint32_t cur_pid;
	uint32_t cur_arg_bytes;
	uint32_t cur_nargs;              /* decoded arguments (0 when unknown) */
	uint64_t arg[VMS_ST_MAX_ARGS];   /* integer value, or string length */
	const uint8_t *arg_str[VMS_ST_MAX_ARGS];
	char *sbuf[2];                   /* NUL-terminated copies for ev->s[] */
	size_t sbuf_cap[2];
};

int vms_st_format_event(struct vms_source *src, uint32_t stream, char *buf, size_t len);
/* The type (mapping or event) and size of the record at byte `at`, one the open's walk
 * framed (before good_end). */
uint64_t vms_st_record_size(const struct vms_st_reader *r, size_t at, uint64_t *type);
/* The id tables as the mapping records maps[0 .. upto) leave them: 0, or -1 out of memory. */
int vms_st_apply_maps(struct vms_st_reader *r, uint32_t upto);
/* seek.c */
int vms_st_tell(struct vms_source *src, uint32_t stream, struct vms_stream_pos *pos);
int vms_st_seek(struct vms_source *src, uint32_t stream, const struct vms_stream_pos *pos);

#endif
