/* Out of memory in a reader (issue 7.7), every allocation in turn: this program is linked
 * with -Wl,--wrap for malloc, calloc, realloc and strdup, so the project's own code (the
 * static libvmscope) allocates through the wrappers below, and libc, libtraceevent, libxml2
 * and zstd (shared libraries) do not. For each trace given, a first run counts the
 * allocations of opening it and reading every stream to its end (rendering the first 4
 * events of each with format_event); then for N = 0, 1, ...
 * one run fails the Nth allocation alone. Each run must end with VMS_ERR_NOMEM and
 * "PATH: out of memory at byte offset N"; never succeed as if nothing happened, another
 * error, a bare "out of memory", or a crash (ASan runs it).
 *
 *   oom_inject TRACE...          (a trace.dat, CTF directory, XML or xentrace file)
 *   oom_inject --st FILE EVENTS  (a simpletrace file and its trace-events file)
 *   oom_inject --write-st FILE EVENTS  (writes the sample ones of tests/simpletrace)
 * One line per trace, "ok: ..." or "not ok: ..." (test_hostile_cli.sh makes them TAP);
 * exit 1 when any is not ok. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st_sample.h"
#include "vmscope/error.h"
#include "vmscope/simpletrace.h"
#include "vmscope/source.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);

static atomic_long calls;
static long fail_at = -1; /* the call that fails (counted from 0), -1: none */
static atomic_bool failed;

static bool fail_now(void)
{
	long k = atomic_fetch_add(&calls, 1);
	if (k != fail_at)
		return false;
	atomic_store(&failed, true);
	return true;
}

void *__wrap_malloc(size_t n) { return fail_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { return fail_now() ? NULL : __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { return fail_now() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return fail_now() ? NULL : __real_strdup(s); }

/* Open and read every stream to its end: 0, or the negative status with err filled. */
static int run(const char *path, const char *events, struct vms_error *err)
{
	vms_error_clear(err);
	struct vms_source *src = events ? vms_simpletrace_open(path, events, err)
					: vms_source_open(path, err);
	if (!src)
		return err->status ? err->status : VMS_ERR_INTERNAL;
	int rc = 0;
	struct vms_event ev;
	uint32_t n = src->ops->nr_streams(src);
	for (uint32_t s = 0; s < n && rc >= 0; s++) {
		/* the first 4 events of each stream rendered as `dump` does: format_event's out
		 * of memory must be said too (it once printed "unknown event" instead) */
		for (uint64_t i = 0; (rc = src->ops->next(src, s, &ev)) > 0; i++) {
			char buf[256];
			if (i < 4 && src->ops->format_event &&
			    (rc = src->ops->format_event(src, s, buf, sizeof buf)) == VMS_ERR_NOMEM)
				break;
		}
	}
	if (rc < 0)
		*err = src->err;
	vms_source_close(src);
	return rc < 0 ? rc : 0;
}

static int sweep(const char *path, const char *events)
{
	struct vms_error err;
	fail_at = -1;
	atomic_store(&calls, 0);
	if (run(path, events, &err) != 0) {
		printf("not ok: %s: read without a failure: %s\n", path, err.msg);
		return 1;
	}
	long total = atomic_load(&calls), nomem = 0;
	/* a reading thread (trace.dat) may allocate a little differently from run to run:
	 * a few more than counted are tried */
	for (fail_at = 0; fail_at < total + 16; fail_at++) {
		atomic_store(&calls, 0);
		atomic_store(&failed, false);
		int rc = run(path, events, &err);
		if (rc == 0 && atomic_load(&failed)) {
			/* a failure hidden: what needed the memory is missing without a word
			 * (a format guard out of memory took the format for refused) */
			printf("not ok: %s: allocation %ld of %ld failed and the read went on as if "
			       "nothing happened\n", path, fail_at, total);
			return 1;
		}
		if (rc == 0)
			continue; /* not reached (past the count) */
		if (rc != VMS_ERR_NOMEM || !strstr(err.msg, ": out of memory at byte offset ")) {
			printf("not ok: %s: allocation %ld of %ld failed: status %d: %s\n", path,
			       fail_at, total, rc, err.msg);
			return 1;
		}
		nomem++;
	}
	if (nomem == 0) { /* (then the wrapping did not reach the reader) */
		printf("not ok: %s: none of %ld allocation failures was said\n", path, total);
		return 1;
	}
	printf("ok: %s: each of %ld allocations failed in turn: %ld said \"out of memory at "
	       "byte offset\", none hidden, no other error\n", path, total, nomem);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--write-st") == 0) {
		struct stw w = {0};
		st_sample_write(&w);
		FILE *f = fopen(argv[3], "w");
		int rc = stw_save(&w, argv[2], w.len) != 0 || !f || fputs(st_sample_events, f) < 0;
		if (f && fclose(f) != 0)
			rc = 1;
		free(w.buf);
		return rc;
	}
	if (argc == 4 && strcmp(argv[1], "--st") == 0)
		return sweep(argv[2], argv[3]);
	int bad = 0;
	for (int i = 1; i < argc; i++)
		bad |= sweep(argv[i], NULL);
	return bad;
}
