/* Progress on stderr for long runs, only when stderr is a terminal (the CLI decides). Checked
 * every 2^20 events so that it costs nothing per event. */
#ifndef VMS_PROGRESS_H
#define VMS_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct vms_progress {
	bool on;
	bool shown;
	double start, last;
	const char *what;
};

void vms_progress_start(struct vms_progress *p, bool on, const char *what);
void vms_progress_tick(struct vms_progress *p, uint64_t events);
void vms_progress_end(struct vms_progress *p, uint64_t events);

static inline void vms_progress_maybe(struct vms_progress *p, uint64_t events)
{
	if (__builtin_expect(p->on && (events & ((1u << 20) - 1)) == 0, 0))
		vms_progress_tick(p, events);
}

#endif
