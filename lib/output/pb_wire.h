/* vmscope internal: a small Protocol Buffers wire encoder (varint, 64-bit, length-delimited),
 * enough to write Perfetto traces without a protobuf library at run time.
 *
 * One message is built at a time in a growing buffer; a nested message reserves its length
 * as a 4-byte varint (a redundant encoding every decoder accepts, as Perfetto's own protozero
 * does) that vms_pb_end patches, so nothing is copied. Messages are small (one trace packet),
 * nesting at most VMS_PB_DEPTH deep. vms_pb_compact then rewrites those lengths as the
 * shortest varints (a packet of a Perfetto trace shrinks by a quarter). */
#ifndef VMS_PB_WIRE_H
#define VMS_PB_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VMS_PB_DEPTH 8
#define VMS_PB_NESTED 32   /* nested messages compacted per message; more stay as they are */

struct vms_pb {
	uint8_t *buf;
	size_t len, cap;
	size_t open[VMS_PB_DEPTH];   /* offsets of the reserved lengths */
	int depth;
	struct vms_pb_nested { size_t off, len; } done[VMS_PB_NESTED]; /* closed nested messages */
	unsigned nr_done;
	bool overflow;               /* more than VMS_PB_NESTED: no compaction */
	bool failed;                 /* out of memory, too deep or too long: the message is void */
};

void vms_pb_init(struct vms_pb *pb);
void vms_pb_free(struct vms_pb *pb);
void vms_pb_reset(struct vms_pb *pb);              /* empty, ready for the next message */
void vms_pb_uint(struct vms_pb *pb, uint32_t field, uint64_t v);   /* varint */
void vms_pb_int(struct vms_pb *pb, uint32_t field, int64_t v);     /* varint, two's complement */
void vms_pb_double(struct vms_pb *pb, uint32_t field, double v);   /* 64-bit */
void vms_pb_string(struct vms_pb *pb, uint32_t field, const char *s);
void vms_pb_begin(struct vms_pb *pb, uint32_t field);  /* a nested message */
void vms_pb_end(struct vms_pb *pb);
/* After the outermost end: every reserved length as its shortest varint. */
void vms_pb_compact(struct vms_pb *pb);

#endif
