/* Helpers shared by the tests: where the shared traces and the build are, and a skip that
 * says why when ../shared/traces is missing (a checkout elsewhere). CI always has them. */
#ifndef VMS_TESTUTIL_H
#define VMS_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

static inline const char *vms_test_shared(void)
{
	const char *e = getenv("VMS_SHARED_DIR");
	return e && *e ? e : VMS_SHARED_DIR;
}

/* Path of a file below ../shared/traces, in a static buffer (one at a time per slot). */
static inline const char *vms_test_trace(const char *rel)
{
	static char buf[4][4096];
	static int slot;
	slot = (slot + 1) & 3;
	snprintf(buf[slot], sizeof buf[slot], "%s/traces/%s", vms_test_shared(), rel);
	return buf[slot];
}

/* Skip the calling test when a shared trace is missing. */
#define VMS_REQUIRE_TRACE(path)                                                        \
	do {                                                                           \
		if (access((path), R_OK) != 0) {                                       \
			print_message("# shared trace %s missing: skipped\n", (path));   \
			skip();                                                        \
		}                                                                      \
	} while (0)

static inline const char *vms_test_build(void)
{
	const char *e = getenv("VMS_BUILD_DIR");
	return e && *e ? e : VMS_BUILD_DIR;
}

/* A fresh temporary directory for the test (not removed: the build dir's tmp), under the test
 * program's own name: two programs built from one source (test_tracer_record and its TSan twin)
 * run at the same time under `meson test` and must not share, and wipe, each other's files. */
static inline const char *vms_test_tmpdir(const char *name)
{
	static char buf[2048];
	char exe[1024];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = 0;
	const char *prog = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : "test";
	snprintf(buf, sizeof buf, "%.1000s/test-tmp/%.200s/%.500s", vms_test_build(), prog, name);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", buf, buf);
	if (system(cmd) != 0)
		fail_msg("cannot make %s", buf);
	return buf;
}

#endif
