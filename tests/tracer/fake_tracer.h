/* A stand-in for libvmstrace's event, file and statistics API, so that the control socket
 * (tracer/control.c) is tested on its own with a state the test sets and inspects. */
#ifndef FAKE_TRACER_H
#define FAKE_TRACER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmscope/tracer.h"

#define FAKE_MAX_EVENTS 4096
#define FAKE_MAX_THREADS 8

struct fake_tracer {
	size_t nr_events;
	const char *name[FAKE_MAX_EVENTS];
	bool state[FAKE_MAX_EVENTS];
	bool file_on;
	char file_path[256];
	int flushes, file_sets, file_enables;
	int fail_next_file_op;          /* -errno returned by the next file call, then 0 */
	size_t nr_threads;
	struct vmst_thread_stats threads[FAKE_MAX_THREADS];
};

extern struct fake_tracer fake;

/* Reset to: events kvm_entry, kvm_exit, kvm_msr (enabled), virtio_queue, virtio_notify,
 * vcpu_run (disabled); file "trace-dir" off; two threads. */
void fake_reset(void);

#endif
