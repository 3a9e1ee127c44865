/* vmscope's CTF reader (lib/input/ctf) on damaged vmstrace traces. A child records three
 * events vmst_test_seq(0, 0..2) in one thread; the stream file is then one packet:
 * 80 bytes of header and context, then 3 records of 24 bytes (u16 id, u64 timestamp,
 * u16 cpu, u32 thread, u64 seq). The offsets below come from that layout, counted by hand. */
#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "trace-qemu-style.h"
#include "vmscope/clock.h"
#include "vmscope/source.h"

static char dir[4096], stream[4300];
static int64_t rec_begin_ns, rec_end_ns;   /* CLOCK_REALTIME around the recording */

static int64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void record(void)
{
	snprintf(dir, sizeof dir, "%s", vms_test_tmpdir("ctf-reader"));
	fflush(NULL);
	rec_begin_ns = realtime_ns();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char cfg[4200];
		snprintf(cfg, sizeof cfg, "file=%s,enable=vmst_test_seq", dir);
		if (vmst_init(cfg))
			_exit(1);
		for (uint32_t i = 0; i < 3; i++)
			trace_vmst_test_seq(0, i);
		exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	rec_end_ns = realtime_ns();
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	char cmd[4400];
	snprintf(cmd, sizeof cmd, "ls '%s'/stream-* > '%s.list'", dir, dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "%s.list", dir);
	FILE *f = fopen(cmd, "r");
	assert_non_null(f);
	assert_non_null(fgets(stream, sizeof stream, f));
	stream[strcspn(stream, "\n")] = 0;
	assert_null(fgets(cmd, sizeof cmd, f));   /* one stream file */
	fclose(f);
	struct stat s;
	assert_int_equal(stat(stream, &s), 0);
	assert_int_equal(s.st_size, 80 + 3 * 24);
}

static void poke(const char *path, off_t off, const void *bytes, size_t n)
{
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, bytes, n, off), (ssize_t)n);
	close(fd);
}

static void expect_open_error(const char *want)
{
	struct vms_error err = {0};
	struct vms_source *s = vms_ctf_open(dir, &err);
	if (s) {
		vms_source_close(s);
		fail_msg("opened a damaged trace (wanted '%s')", want);
	}
	assert_int_not_equal(err.status, 0);
	if (!strstr(err.msg, want))
		fail_msg("error '%s' does not say '%s'", err.msg, want);
}

static struct vms_source *open_ok(void)
{
	struct vms_error err = {0};
	struct vms_source *s = vms_ctf_open(dir, &err);
	if (!s)
		fail_msg("cannot open %s: %s", dir, err.msg);
	return s;
}

static int read_all(struct vms_source *s, uint64_t *n)
{
	*n = 0;
	struct vms_event ev;
	int rc = 0;
	for (uint32_t i = 0; i < s->ops->nr_streams(s); i++)
		while ((rc = s->ops->next(s, i, &ev)) == 1)
			(*n)++;
	return rc;
}

static void test_intact_trace(void **state)
{
	(void)state;
	record();
	struct vms_error err = {0};
	struct vms_source *s = vms_ctf_open(dir, &err);
	assert_non_null(s);
	assert_false(s->meta.ended_abruptly);
	assert_int_equal(s->meta.nr_types, 11);
	assert_string_equal(s->meta.type_names[10], "vmst_test_seq");
	assert_int_equal(s->ops->nr_streams(s), 1);
	/* the clock the metadata describes (calibrated TSC frequency, offset to real time)
	 * puts the events inside the wall-clock interval of the recording */
	struct vms_clock clk;
	vms_clock_from_meta(&clk, &s->meta, false, NULL);
	struct vms_event ev;
	for (uint64_t i = 0; i < 3; i++) {
		assert_int_equal(s->ops->next(s, 0, &ev), 1);
		assert_int_equal(ev.kind, VMS_K_TRACEPOINT);
		assert_int_equal(ev.f[0], 0);
		assert_int_equal(ev.f[1], i);
		int64_t ns = (int64_t)vms_clock_to_ns(&clk, ev.cpu, ev.ts);
		if (ns < rec_begin_ns - 1000000 || ns > rec_end_ns + 1000000)
			fail_msg("event at %lld ns, recording from %lld to %lld", (long long)ns,
				 (long long)rec_begin_ns, (long long)rec_end_ns);
	}
	char buf[256];
	s->ops->format_event(s, 0, buf, sizeof buf);
	assert_string_equal(buf, "vmst_test_seq: thread=0 seq=2");
	assert_int_equal(s->ops->next(s, 0, &ev), 0);
	assert_int_equal(s->ops->rewind(s), 0);
	uint64_t n;
	assert_int_equal(read_all(s, &n), 0);
	assert_int_equal(n, 3);
	vms_source_close(s);
}

static void test_truncated_closed_trace_is_damage(void **state)
{
	(void)state;
	record();
	assert_int_equal(truncate(stream, 100), 0);
	expect_open_error("truncated packet at byte offset 0");
}

static void test_truncated_killed_trace_reads_complete_packets(void **state)
{
	(void)state;
	record();
	assert_int_equal(truncate(stream, 100), 0);
	char p[4200];
	snprintf(p, sizeof p, "%s/.vmst-closed", dir);
	assert_int_equal(unlink(p), 0);
	struct vms_error err = {0};
	struct vms_source *s = vms_ctf_open(dir, &err);
	assert_non_null(s);
	assert_true(s->meta.ended_abruptly);
	uint64_t n;
	assert_int_equal(read_all(s, &n), 0);
	assert_int_equal(n, 0);
	vms_source_close(s);
}

static void test_bad_magic(void **state)
{
	(void)state;
	record();
	poke(stream, 0, "\0", 1);
	expect_open_error("bad packet magic at byte offset 0");
}

static void test_packet_size_beyond_limits(void **state)
{
	(void)state;
	record();
	uint64_t huge = ~0ull & ~7ull;
	poke(stream, 40, &huge, 8);   /* content_size */
	expect_open_error("bad packet size at byte offset 40");
}

static void test_unknown_event_id(void **state)
{
	(void)state;
	record();
	uint16_t id = 0xffff;
	poke(stream, 80 + 24, &id, 2);   /* the second record */
	struct vms_error err = {0};
	struct vms_source *s = vms_ctf_open(dir, &err);
	assert_non_null(s);
	struct vms_event ev;
	assert_int_equal(s->ops->next(s, 0, &ev), 1);
	assert_true(s->ops->next(s, 0, &ev) < 0);
	assert_non_null(strstr(s->err.msg, "unknown event id at byte offset 104"));
	vms_source_close(s);
}

/* A packet whose content ends inside an event: the event header (u16 id, u64 timestamp) is
 * read inline when it fits (ctf_source.c, struct fixed_header), by the plan when it does not.
 * Content ending 5 bytes into the third record (byte 128): its timestamp, at byte 130, is
 * the field past the end; ending right after its header (byte 138): its context's cpu,
 * at 138. Either way the two records before it are read whole. */
static void expect_cut_at(uint64_t content_bytes, const char *want)
{
	record();
	uint64_t bits = content_bytes * 8;
	poke(stream, 40, &bits, 8);   /* content_size */
	struct vms_source *s = open_ok();
	struct vms_event ev;
	for (uint64_t i = 0; i < 2; i++) {
		assert_int_equal(s->ops->next(s, 0, &ev), 1);
		assert_int_equal(ev.kind, VMS_K_TRACEPOINT);
		assert_int_equal(ev.f[1], i);
	}
	assert_true(s->ops->next(s, 0, &ev) < 0);
	if (!strstr(s->err.msg, want))
		fail_msg("error '%s' does not say '%s'", s->err.msg, want);
	vms_source_close(s);
}

static void test_content_ends_in_an_event(void **state)
{
	(void)state;
	expect_cut_at(128 + 5, "past the packet content at byte offset 130");
	expect_cut_at(128 + 10, "past the packet content at byte offset 138");
}

static void rewrite_metadata(const char *from, const char *to)
{
	char p[4200], cmd[8800];
	snprintf(p, sizeof p, "%s/metadata", dir);
	snprintf(cmd, sizeof cmd, "sed -i 's/%s/%s/' '%s'", from, to, p);
	assert_int_equal(system(cmd), 0);
}

/* The metadata is parsed as TSDL: a syntax error names the metadata file and the place
 * (the '}' after "int32_t vtid" is at the offset sed's change leaves it). */
static void test_metadata_syntax_error(void **state)
{
	(void)state;
	record();
	rewrite_metadata("int32_t vtid;", "int32_t vtid");
	expect_open_error("/metadata: expected ';' at byte offset");
}

/* A layout other than the tracer's is decoded from its metadata too (the reader is a
 * general CTF 1.8 decoder): with the packet's thread field renamed, the events are all
 * read and their thread is unknown rather than misread. */
static void test_other_layout_is_read(void **state)
{
	(void)state;
	record();
	rewrite_metadata("int32_t vtid;", "int32_t xtid;");
	struct vms_source *s = open_ok();
	struct vms_event ev;
	for (uint64_t i = 0; i < 3; i++) {
		assert_int_equal(s->ops->next(s, 0, &ev), 1);
		assert_int_equal(ev.f[1], i);
		assert_int_equal(ev.tid, -1);
	}
	assert_int_equal(s->ops->next(s, 0, &ev), 0);
	vms_source_close(s);
}

/* Every record carries the CPU it was written on: a thread that moves from CPU 1 to CPU 0
 * (sched_setaffinity) within one packet gives records with each CPU in turn. */
static void test_cpu_per_record(void **state)
{
	(void)state;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		skip();
	snprintf(dir, sizeof dir, "%s", vms_test_tmpdir("ctf-reader-cpu"));
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char cfg[4200];
		snprintf(cfg, sizeof cfg, "file=%s,enable=vmst_test_seq", dir);
		if (vmst_init(cfg))
			_exit(1);
		for (uint32_t k = 0; k < 4; k++) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(k & 1 ? 0 : 1, &set);
			if (sched_setaffinity(0, sizeof set, &set) != 0)
				_exit(2);
			trace_vmst_test_seq(k, k);
		}
		exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	struct vms_error err = {0};
	struct vms_source *s = vms_ctf_open(dir, &err);
	assert_non_null(s);
	struct vms_event ev;
	for (uint32_t k = 0; k < 4; k++) {
		assert_int_equal(s->ops->next(s, 0, &ev), 1);
		assert_int_equal(ev.f[1], k);
		assert_int_equal(ev.cpu, k & 1 ? 0 : 1);
	}
	assert_int_equal(s->ops->next(s, 0, &ev), 0);
	vms_source_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_per_record),
		cmocka_unit_test(test_intact_trace),
		cmocka_unit_test(test_truncated_closed_trace_is_damage),
		cmocka_unit_test(test_truncated_killed_trace_reads_complete_packets),
		cmocka_unit_test(test_bad_magic),
		cmocka_unit_test(test_packet_size_beyond_limits),
		cmocka_unit_test(test_unknown_event_id),
		cmocka_unit_test(test_content_ends_in_an_event),
		cmocka_unit_test(test_metadata_syntax_error),
		cmocka_unit_test(test_other_layout_is_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
