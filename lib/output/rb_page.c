/* Ring-buffer page encoder: see rb_page.h for the layout. The writer's hot path: no
 * allocation, one memcpy per event. */
#include <string.h>

#include "output/rb_page.h"

static inline void put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4); /* the file is little-endian, like the hosts we build on (checked at open) */
}

static inline void put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

void vms_rb_page_start(struct vms_rb_page *p, uint8_t *buf, uint32_t page_size)
{
	p->buf = buf;
	p->page_size = page_size;
	p->used = 0;
	p->events = 0;
	p->last_ts = 0;
}

bool vms_rb_page_add(struct vms_rb_page *p, uint64_t ts, const void *payload, uint32_t len)
{
	uint32_t cap = p->page_size - VMS_RB_PAGE_HEADER;
	uint32_t need = vms_rb_event_size(len);
	uint64_t delta = 0;

	if (p->events == 0 && p->used == 0) {
		if (need > cap)
			return false;
		put_u64(p->buf, ts); /* page timestamp: the first event's delta is 0 */
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
		put_u32(q, VMS_RB_TYPE_TIME_EXTEND | (uint32_t)(delta & VMS_RB_TS_MASK) << 5);
		put_u32(q + 4, (uint32_t)(delta >> VMS_RB_TS_BITS));
		q += 8;
		delta = 0;
	}
	uint32_t padded = (len + 3u) & ~3u;
	if (padded <= VMS_RB_TYPE_DATA_MAX * 4u) {
		put_u32(q, (padded / 4u) | (uint32_t)delta << 5);
		q += 4;
	} else {
		/* type_len 0: kbuffer reads (array[0] - 4) as the payload length */
		put_u32(q, (uint32_t)delta << 5);
		put_u32(q + 4, padded + 4u);
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

void vms_rb_page_finish(struct vms_rb_page *p)
{
	if (p->events == 0)
		put_u64(p->buf, p->last_ts);
	put_u64(p->buf + 8, p->used); /* commit: no missed-events flags */
	uint32_t end = VMS_RB_PAGE_HEADER + p->used;
	if (end < p->page_size)
		memset(p->buf + end, 0, p->page_size - end);
}
