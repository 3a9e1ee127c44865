/* A synthesized host + guest pair written for a test (vmscope/synth.h), with TSC scaling (the
 * guest's TIME_SHIFT), in the test's own temporary directory. */
#ifndef VMS_TEST_SYNTH_PAIR_H
#define VMS_TEST_SYNTH_PAIR_H

#include "testutil.h"
#include "vmscope/synth.h"

/* paths[0] the host's trace, paths[1] the guest's (valid until the next call) */
static inline void vms_test_synth_pair(const char *name, uint64_t seed, uint64_t events,
				       const char *paths[2])
{
	const char *dir = vms_test_tmpdir(name);
	static char host[2300], guest[2300];
	snprintf(host, sizeof host, "%s/host.dat", dir);
	snprintf(guest, sizeof guest, "%s/guest.dat", dir);
	struct vms_synth_config cfg = { .seed = seed, .events = events, .host_path = host,
					.guest_path = guest, .tsc_scaling = true };
	static struct vms_synth_truth truth;
	struct vms_error err = { 0 };
	if (vms_synth_run(&cfg, &truth, &err) != 0)
		fail_msg("%s", err.msg);
	paths[0] = host;
	paths[1] = guest;
}

#endif
