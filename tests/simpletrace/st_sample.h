/* The sample simpletrace file shared by the tests, and its expected text. The expected lines
 * are derived by hand from the values written and the rules of QEMU's simpletrace.py
 * formatter: "NAME DELTA pid=PID" where DELTA is (ts - previous ts) / 1000 with 3 decimals, an
 * integer argument as 0x%x of its u64, a string as its text (non-printable bytes and '\' as
 * \xNN in vmscope). */
#ifndef ST_SAMPLE_H
#define ST_SAMPLE_H

#include "st_writer.h"

static const char st_sample_events[] =
	"# trace-events sample (QEMU syntax)\n"
	"\n"
	"disable foo_start(int fd, const char *path, uint64_t size) \"fd %d path %s size %\" PRIu64\n"
	"bar_tick(void) \"tick\"\n"
	"vcpu baz_ptr(void *opaque, unsigned int n) \"opaque %p n %u\"\n"
	"name_pair(const char* a, char *b) \"%s (%s)\"\n"
	"unused_event(int x) \"x %d\"\n";

static const char *const st_sample_lines[] = {
	"foo_start 0.000 pid=4242 fd=0x3 path=/tmp/disk.img size=0x100000",
	"bar_tick 0.500 pid=4242",
	"baz_ptr 0.500 pid=4242 opaque=0xffff888012345678 n=0x7",
	"Dropped_Event 0.100 pid=4242 num_events_dropped=0x5",
	"bar_tick -0.030 pid=4242",
	"name_pair 0.930 pid=4242 a= b=x\\x09y\\x5c",
	"mystery_event 0.500 pid=4242 args=<8 bytes, not described by an events file>",
	"foo_start 1234.567 pid=4242 fd=0xffffffffffffffff path=a b size=0x0",
	"bar_tick 0.001 pid=4242",
};
#define ST_SAMPLE_N (sizeof st_sample_lines / sizeof st_sample_lines[0])

static inline void st_sample_write(struct stw *w)
{
	memset(w, 0, sizeof *w);
	stw_header(w);
	stw_mapping(w, 0, "foo_start");
	stw_mapping(w, 1, "bar_tick");
	stw_mapping(w, 2, "baz_ptr");
	stw_mapping(w, 3, "name_pair");
	stw_mapping(w, 4, "unused_event");
	stw_mapping(w, 70000, "mystery_event");   /* past the flat id table, not in the events */
	struct stw_arg a1[] = { { NULL, 3 }, { "/tmp/disk.img", 0 }, { NULL, 0x100000 } };
	stw_event(w, 0, 1000, 4242, a1, 3);
	stw_event(w, 1, 1500, 4242, NULL, 0);
	struct stw_arg a3[] = { { NULL, 0xffff888012345678ULL }, { NULL, 7 } };
	stw_event(w, 2, 2000, 4242, a3, 2);
	stw_dropped(w, 2100, 4242, 5);
	stw_event(w, 1, 2070, 4242, NULL, 0);          /* 30 ns backwards */
	struct stw_arg a6[] = { { "", 0 }, { "x\ty\\", 0 } };
	stw_event(w, 3, 3000, 4242, a6, 2);
	struct stw_arg a7[] = { { NULL, 99 } };
	stw_event(w, 70000, 3500, 4242, a7, 1);
	struct stw_arg a8[] = { { NULL, (uint64_t)(int64_t)-1 }, { "a b", 0 }, { NULL, 0 } };
	stw_event(w, 0, 3500 + 1234567, 4242, a8, 3);
	stw_mapping(w, 9, "bar_tick");                /* a late mapping, as modules add them */
	stw_event(w, 9, 3500 + 1234567 + 1, 4242, NULL, 0);
}

/* The sample saved at path: 0, or -1. */
static inline int st_sample_save(const char *path)
{
	struct stw w;
	st_sample_write(&w);
	int rc = stw_save(&w, path, w.len);
	free(w.buf);
	return rc;
}

#endif
