#include <stdio.h>
#include <time.h>

#include "progress.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void vms_progress_start(struct vms_progress *p, bool on, const char *what)
{
	p->on = on;
	p->shown = false;
	p->what = what;
	p->start = p->last = on ? now() : 0;
}

void vms_progress_tick(struct vms_progress *p, uint64_t events)
{
	double t = now();
	if (t - p->last < 0.25)
		return;
	p->last = t;
	p->shown = true;
	fprintf(stderr, "\rvmscope: %s: %.1f M events, %.1f s, %.1f M events/s   ", p->what,
		(double)events / 1e6, t - p->start, (double)events / 1e6 / (t - p->start));
	fflush(stderr);
}

void vms_progress_end(struct vms_progress *p, uint64_t events)
{
	(void)events;
	if (p->on && p->shown) {
		fprintf(stderr, "\r%*s\r", 78, "");
		fflush(stderr);
	}
}
