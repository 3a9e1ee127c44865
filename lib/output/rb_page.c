/* Ring-buffer page encoder: see rb_page.h for the layout (the per-event vms_rb_page_add is
 * inline there). */
#include <string.h>

#include "output/rb_page.h"

void vms_rb_page_start(struct vms_rb_page *p, uint8_t *buf, uint32_t page_size)
{
	p->buf = buf;
	p->page_size = page_size;
	p->used = 0;
	p->events = 0;
	p->last_ts = 0;
}

void vms_rb_page_finish(struct vms_rb_page *p)
{
	if (p->events == 0)
		vms_rb_put_u64(p->buf, p->last_ts);
	vms_rb_put_u64(p->buf + 8, p->used); /* commit: no missed-events flags */
	uint32_t end = VMS_RB_PAGE_HEADER + p->used;
	if (end < p->page_size)
		memset(p->buf + end, 0, p->page_size - end);
}
