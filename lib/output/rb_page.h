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
#include <string.h>

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

/* Write the commit word and zero the unused tail (so files are byte-for-byte reproducible). */
void vms_rb_page_finish(struct vms_rb_page *p);

/* Bytes an event of `len` payload bytes occupies, without a time extend. */
static inline uint32_t vms_rb_event_size(uint32_t len)
{
	uint32_t padded = (len + 3u) & ~3u;
	return 4u + padded + (padded > VMS_RB_TYPE_DATA_MAX * 4u ? 4u : 0u);
}

static inline void vms_rb_put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4); /* the file is little-endian, like the hosts we build on (checked at open) */
}

static inline void vms_rb_put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* Append one event at absolute time `ts` (>= the previous one). Returns false, writing nothing,
 * when it does not fit: the caller finishes this page and starts the next. A first event on an
 * empty page sets the page's timestamp, so it never needs a time extend. Inline: it is the
 * writer's per-event path. */
static inline bool vms_rb_page_add(struct vms_rb_page *p, uint64_t ts, const void *payload,
				   uint32_t len)
{
	uint32_t cap = p->page_size - VMS_RB_PAGE_HEADER;
	uint32_t need = vms_rb_event_size(len);
	uint64_t delta = 0;

	if (p->events == 0 && p->used == 0) {
		if (need > cap)
			return false;
		vms_rb_put_u64(p->buf, ts); /* page timestamp: the first event's delta is 0 */
		p->last_ts = ts;
	} else {
		delta = ts - p->last_ts;
		if (delta > VMS_RB_TS_MASK)
			need += 8; /* a time extend carries the delta, the event then has 0 */
		if (p->used + need > cap)
			return false;
	}

	uint8_t *q = p->buf + VMS_RB_PAGE_HEADER + p->used;
	if (delta > VMS_RB_TS_MASK) {
		/* The kernel's rb_add_time_stamp(): low 27 bits in the header, the rest after it. */
		vms_rb_put_u32(q, VMS_RB_TYPE_TIME_EXTEND | (uint32_t)(delta & VMS_RB_TS_MASK) << 5);
		vms_rb_put_u32(q + 4, (uint32_t)(delta >> VMS_RB_TS_BITS));
		q += 8;
		delta = 0;
	}
	uint32_t padded = (len + 3u) & ~3u;
	if (padded <= VMS_RB_TYPE_DATA_MAX * 4u) {
		vms_rb_put_u32(q, (padded / 4u) | (uint32_t)delta << 5);
		q += 4;
	} else {
		/* type_len 0: kbuffer reads (array[0] - 4) as the payload length */
		vms_rb_put_u32(q, (uint32_t)delta << 5);
		vms_rb_put_u32(q + 4, padded + 4u);
		q += 8;
	}
	memcpy(q, payload, len);
	if (padded != len)
		memset(q + len, 0, padded - len);
	p->used += need;
	p->events++;
	p->last_ts = ts;
	return true;
}

#endif
