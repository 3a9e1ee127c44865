/* One page of the kernel's ftrace ring buffer, as trace.dat stores it (a "sub-buffer"):
 *
 *   u64 timestamp            base time of the page; the first event's delta is relative to it
 *   u64 commit               bytes of event data that follow (a 64-bit kernel's local_t)
 *   events...                each: u32 type_len:5 | time_delta:27, then the payload
 *
 * type_len 1..28 means a payload of type_len * 4 bytes; 0 means the length (+4) is in the next
 * u32; 30 is a time extend whose next u32 holds the delta's bits above 27. This is the layout
 * libtraceevent's kbuffer reads (kbuffer-parse.c), for a little-endian, 64-bit kernel. */
#ifndef VMS_OUTPUT_RB_PAGE_H
#define VMS_OUTPUT_RB_PAGE_H

#include <stdbool.h>
#include <stdint.h>

#define VMS_RB_PAGE_HEADER 16u
#define VMS_RB_TS_BITS 27u
#define VMS_RB_TS_MASK ((1u << VMS_RB_TS_BITS) - 1u)
#define VMS_RB_TYPE_DATA_MAX 28u
#define VMS_RB_TYPE_TIME_EXTEND 30u

struct vms_rb_page {
	uint8_t *buf;        /* page_size bytes, owned by the caller */
	uint32_t page_size;
	uint32_t used;       /* bytes of event data after the header */
	uint32_t events;     /* data events on this page */
	uint64_t last_ts;    /* absolute time of the last event (or of the page when empty) */
};

/* Begin an empty page in `buf`. */
void vms_rb_page_start(struct vms_rb_page *p, uint8_t *buf, uint32_t page_size);

/* Append one event at absolute time `ts` (>= the previous one). Returns false, writing nothing,
 * when it does not fit: the caller finishes this page and starts the next. A first event on an
 * empty page sets the page's timestamp, so it never needs a time extend. */
bool vms_rb_page_add(struct vms_rb_page *p, uint64_t ts, const void *payload, uint32_t len);

/* Write the commit word and zero the unused tail (so files are byte-for-byte reproducible). */
void vms_rb_page_finish(struct vms_rb_page *p);

/* Bytes an event of `len` payload bytes occupies, without a time extend. */
static inline uint32_t vms_rb_event_size(uint32_t len)
{
	uint32_t padded = (len + 3u) & ~3u;
	return 4u + padded + (padded > VMS_RB_TYPE_DATA_MAX * 4u ? 4u : 0u);
}

#endif
