/* The fake libvmstrace API: see fake_tracer.h. Calls come from the control thread while the
 * test thread inspects the state between requests (a reply has been read by then, so the
 * request that changed it has completed). */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "fake_tracer.h"

struct fake_tracer fake;

void fake_reset(void)
{
	static const char *const names[] = { "kvm_entry", "kvm_exit", "kvm_msr",
					     "virtio_queue", "virtio_notify", "vcpu_run" };
	memset(&fake, 0, sizeof fake);
	fake.nr_events = 6;
	for (size_t i = 0; i < 6; i++) {
		fake.name[i] = names[i];
		fake.state[i] = i < 3;
	}
	snprintf(fake.file_path, sizeof fake.file_path, "trace-dir");
	fake.nr_threads = 2;
	fake.threads[0] = (struct vmst_thread_stats){ 101, 1000, 3 };
	fake.threads[1] = (struct vmst_thread_stats){ 102, 250, 0 };
}

size_t vmst_event_count(void)
{
	return fake.nr_events;
}

const char *vmst_event_name(size_t i)
{
	return i < fake.nr_events ? fake.name[i] : NULL;
}

bool vmst_event_get(size_t i)
{
	return i < fake.nr_events && fake.state[i];
}

int vmst_event_set(size_t i, bool enable)
{
	if (i >= fake.nr_events)
		return -EINVAL;
	fake.state[i] = enable;
	return 0;
}

int vmst_event_set_glob(const char *glob, bool enable)
{
	int n = 0;
	for (size_t i = 0; i < fake.nr_events; i++)
		if (fnmatch(glob, fake.name[i], 0) == 0) {
			fake.state[i] = enable;
			n++;
		}
	return n;
}

static int take_failure(void)
{
	int rc = fake.fail_next_file_op;
	fake.fail_next_file_op = 0;
	return rc;
}

int vmst_file_enable(bool on)
{
	int rc = take_failure();
	if (rc)
		return rc;
	fake.file_enables++;
	fake.file_on = on;
	return 0;
}

bool vmst_file_enabled(void)
{
	return fake.file_on;
}

int vmst_flush(void)
{
	int rc = take_failure();
	if (rc)
		return rc;
	fake.flushes++;
	return 0;
}

int vmst_file_set(const char *dir)
{
	int rc = take_failure();
	if (rc)
		return rc;
	fake.file_sets++;
	snprintf(fake.file_path, sizeof fake.file_path, "%s", dir);
	return 0;
}

const char *vmst_file_get(void)
{
	return fake.file_path;
}

size_t vmst_stats(struct vmst_thread_stats *out, size_t max)
{
	for (size_t i = 0; i < fake.nr_threads && i < max; i++)
		out[i] = fake.threads[i];
	return fake.nr_threads;
}
