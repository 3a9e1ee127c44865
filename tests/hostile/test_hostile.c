/* Hostile trace.dat shapes (tests/common/hostile_shapes.c, issue 7): each is written at its
 * small size into a temporary directory, replayed through the fuzz harness (open, read all,
 * rewind, read again, render events: ASan/UBSan and the harness's contract checks), and its
 * expected outcome checked: the libtraceevent guards refuse the format (its events keep kind
 * OTHER), the memory bounds refuse the file with their message, the shapes that are only big
 * read completely. Expected values come from how each file is built (see each test). */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fuzz_harness.h"
#include "hostile_shapes.h"
#include "output/tracedat_writer.h"
#include "synth/kernel_formats.h"
#include "vmscope/source.h"

static char dir[] = "/tmp/vms-hostile-XXXXXX";

static const char *make(const char *name)
{
	static char path[256];
	const struct hostile_shape *s = hostile_shape(name);
	assert_non_null(s);
	snprintf(path, sizeof path, "%s/%s.dat", dir, name);
	assert_int_equal(s->write(path, s->small), 0);
	/* the harness: no crash, no UB, errors with a message */
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	struct stat st;
	assert_int_equal(fstat(fileno(f), &st), 0);
	uint8_t *b = malloc((size_t)st.st_size);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)st.st_size, f), (size_t)st.st_size);
	fclose(f);
	print_message("# %s: %lld bytes\n", name, (long long)st.st_size);
	assert_int_equal(vms_fuzz_tracedat(b, (size_t)st.st_size), 0);
	free(b);
	return path;
}

static uint16_t kind_of(const struct vms_source *src, const char *type)
{
	for (uint32_t i = 0; i < src->meta.nr_types; i++)
		if (strcmp(src->meta.type_names[i], type) == 0)
			return src->meta.type_kinds[i];
	fail_msg("no type %s", type);
	return 0;
}

/* Reads every stream; the number of events, or -1 with err copied when a stream fails. */
static long long read_all(struct vms_source *src, struct vms_error *err)
{
	long long n = 0;
	for (uint32_t s = 0; s < src->ops->nr_streams(src); s++) {
		struct vms_event ev;
		int r;
		while ((r = src->ops->next(src, s, &ev)) == 1)
			n++;
		if (r < 0) {
			*err = src->err;
			return -1;
		}
	}
	return n;
}

/* A format the guard refuses: the file opens, its one event is read, and then (formats are
 * parsed on the first record of their type) sched_switch has kind OTHER and is counted as a
 * format not read (the CLI warns); the event itself came with kind OTHER. */
static void refused_format(const char *shape)
{
	struct vms_error err = {0};
	struct vms_source *src = vms_tracedat_open(make(shape), &err);
	assert_non_null(src);
	long long n = 0;
	for (uint32_t s = 0; s < src->ops->nr_streams(src); s++) {
		struct vms_event ev;
		while (src->ops->next(src, s, &ev) == 1) {
			assert_int_equal(ev.kind, VMS_K_OTHER);
			n++;
		}
	}
	assert_int_equal(n, 1);
	assert_int_equal(kind_of(src, "sched:sched_switch"), VMS_K_OTHER);
	assert_int_equal(src->meta.nr_formats_unread, 1);
	assert_string_equal(src->meta.format_unread, "sched:sched_switch");
	assert_int_equal(kind_of(src, "sched:sched_wakeup"), VMS_K_SCHED_WAKEUP);
	vms_source_close(src);
}

static void test_decl_in_brackets(void **state)
{
	(void)state;
	refused_format("fmt-decl-in-brackets");
}

static void test_symbolic_undeclared(void **state)
{
	(void)state;
	refused_format("fmt-symbolic-undeclared");
}

static void test_get_str_undeclared(void **state)
{
	(void)state;
	refused_format("fmt-get-str-undeclared");
}

static void test_quote_desync(void **state)
{
	(void)state;
	refused_format("fmt-quote-desync");
}

static void test_nested(void **state)
{
	(void)state;
	refused_format("fmt-nested");
}

static void test_op_chain(void **state)
{
	(void)state;
	refused_format("fmt-op-chain");
}

/* '.', a second subscript or an operator token without a priority where libtraceevent 1.7
 * goes on with a NULL argument (each segfaulted in tep_parse_event before the guard) */
static void test_no_priority_tokens(void **state)
{
	(void)state;
	refused_format("fmt-dot-on-literal");
	refused_format("fmt-after-subscript");
	refused_format("fmt-op-token-after-subscript");
}

/* A kernel-shaped format: accepted (sched_switch mapped), its one event read. */
static void accepted_format(const char *shape)
{
	struct vms_error err = {0};
	struct vms_source *src = vms_tracedat_open(make(shape), &err);
	assert_non_null(src);
	assert_int_equal(read_all(src, &err), 1);
	assert_int_equal(kind_of(src, "sched:sched_switch"), VMS_K_SCHED_SWITCH);
	assert_int_equal(src->meta.nr_formats_unread, 0);
	vms_source_close(src);
}

/* 2000 references to a declared field in a 24 KB format */
static void test_many_refs(void **state)
{
	(void)state;
	accepted_format("fmt-many-refs");
}

/* a constant divided by a field is a kernel's shape: accepted; printing it is refused later,
 * per event (print_arg_safe) */
static void test_zero_over_field(void **state)
{
	(void)state;
	accepted_format("fmt-zero-over-field");
}

/* cmdlines and kallsyms far larger than the 64 KiB window the reader streams them through
 * (in each compression): every line comes back as written, lines cut by the window's edges
 * included; a 10,000-byte kallsyms line (no kernel writes one) is skipped and the line after
 * it read. Expected values: how the file was written. */
static void test_cmdlines_streamed(void **state)
{
	(void)state;
	enum { NCOMM = 30000, NSYM = 20000 };
	static const enum vms_tdw_compression comps[] = {VMS_TDW_NONE, VMS_TDW_ZLIB, VMS_TDW_ZSTD};
	char *syms = malloc((size_t)NSYM * 48 + 10002);
	char *longname = malloc(10001);
	assert_non_null(syms);
	assert_non_null(longname);
	memset(longname, 'x', 10000);
	memcpy(longname, "fffffffff0000000 T ", 19);   /* a symbol, were it not too long */
	longname[10000] = '\0';
	size_t used = 0;
	for (int i = 0; i < NSYM; i++) {
		used += (size_t)sprintf(syms + used, "ffffffff8%07x T sym_%d\n", 16 * i + 16, i);
		if (i == NSYM / 2)
			used += (size_t)sprintf(syms + used, "%s\n", longname);
	}
	for (size_t c = 0; c < sizeof comps / sizeof comps[0]; c++) {
		char path[256];
		snprintf(path, sizeof path, "%s/streamed-%zu.dat", dir, c);
		struct vms_error err = {0};
		struct vms_tdw_config cfg = {
			.path = path, .compression = comps[c], .nr_cpus = 1,
			.header_page = vms_synth_header_page, .header_event = vms_synth_header_event,
			.buffer_clock = "local", .trace_clock = "[local] global", .version = "test",
		};
		struct vms_tdw *w = NULL;
		assert_int_equal(vms_tdw_open(&w, &cfg, &err), 0);
		char buf[512];
		snprintf(buf, sizeof buf, "name: sched_switch\nID: 1\nformat:\n%s",
			 vms_synth_fmt_sched_switch);
		assert_int_equal(vms_tdw_add_event_format(w, "sched", buf, &err), 0);
		for (int i = 0; i < NCOMM; i++) {
			char comm[64];
			snprintf(comm, sizeof comm, "c%d-%.*s", i, i % 10, "abcdefghij");
			assert_int_equal(vms_tdw_add_cmdline(w, 100000 + i, comm, &err), 0);
		}
		assert_int_equal(vms_tdw_add_kallsyms(w, syms, &err), 0);
		struct vms_ev_sched_switch e;
		memset(&e, 0, sizeof e);
		e.c.type = 1;
		assert_int_equal(vms_tdw_event(w, 0, 1000, &e, sizeof e, &err), 0);
		assert_int_equal(vms_tdw_close(w, &err), 0);

		struct vms_source *src = vms_tracedat_open(path, &err);
		if (!src)
			fail_msg("%s", err.msg);
		assert_int_equal(src->meta.nr_comms, NCOMM);
		for (int i = 0; i < NCOMM; i++) {
			char comm[64];
			snprintf(comm, sizeof comm, "c%d-%.*s", i, i % 10, "abcdefghij");
			assert_int_equal(src->meta.comm_tid[i], 100000 + i);
			assert_string_equal(src->meta.comm_name[i], comm);
		}
		const struct vms_ksyms *k = vms_source_ksyms(src);
		assert_non_null(k);
		print_message("# compression %zu: %u symbols\n", c, vms_ksyms_count(k));
		assert_int_equal(vms_ksyms_count(k), NSYM);
		for (int i = 0; i < NSYM; i = i == NSYM / 2 ? i + 1 : i + 997) {
			uint64_t off = 0;
			char want[32];
			snprintf(want, sizeof want, "sym_%d", i);
			const char *name = vms_ksyms_lookup(k, 0xffffffff80000000ull + 16 * (uint64_t)i + 16 + 3, &off);
			assert_non_null(name);
			assert_string_equal(name, want);
			assert_int_equal(off, 3);
		}
		vms_source_close(src);
		unlink(path);
	}
	free(syms);
	free(longname);
}

static void open_fails(const char *shape, const char *msg)
{
	struct vms_error err = {0};
	struct vms_source *src = vms_tracedat_open(make(shape), &err);
	assert_null(src);
	print_message("# %s\n", err.msg);
	assert_non_null(strstr(err.msg, msg));
	assert_non_null(strstr(err.msg, "at byte offset"));
}

static void test_cpu_overlap(void **state)
{
	(void)state;
	open_fails("cpu-overlap", "overlaps the data of CPU");
}

static void test_section_bomb(void **state)
{
	(void)state;
	open_fails("section-bomb", "section uncompressed size");
}

static void test_offset_overflow(void **state)
{
	(void)state;
	open_fails("offset-overflow", "OFFSET options out of range");
}

static void test_date_overflow(void **state)
{
	(void)state;
	open_fails("date-overflow", "DATE option out of range");
	open_fails("offset-date-overflow", "OFFSET and DATE options together out of range");
}

/* 64 CPUs x 16 MiB claimed by a ~40 KB file: the chunk budget (64 MiB + 32 x the file size)
 * runs out after 3 CPUs' chunks and the stream that needs more says so. */
static void test_chunk_bomb(void **state)
{
	(void)state;
	struct vms_error err = {0};
	struct vms_source *src = vms_tracedat_open(make("chunk-bomb"), &err);
	assert_non_null(src);
	assert_int_equal(src->ops->nr_streams(src), 64);
	assert_int_equal(read_all(src, &err), -1);
	print_message("# %s\n", err.msg);
	assert_non_null(strstr(err.msg, "decompressed chunks would need more than"));
	vms_source_close(src);
}

/* The big shapes read completely: as many events as written */
static void reads(const char *shape, long long events)
{
	struct vms_error err = {0};
	struct vms_source *src = vms_tracedat_open(make(shape), &err);
	assert_non_null(src);
	assert_int_equal(read_all(src, &err), events);
	vms_source_close(src);
}

static void test_big_shapes(void **state)
{
	(void)state;
	reads("guest-vcpus", (long long)hostile_shape("guest-vcpus")->small);
	reads("entry-tids", (long long)hostile_shape("entry-tids")->small);
	uint64_t n = hostile_shape("many-streams")->small;
	reads("many-streams", (long long)(n + 100 * n));
}

/* The process's resident pages that map files (kB), from /proc/self/status: the stream
 * files' pages, not the heap (ASan's included) */
static long rss_file_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "RssFile: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* issue 7.6: CTF stream files sharing one packet of 24 MiB. Issue 20.8: its 16 hard links
 * and 2,000 symlinks are one file, read once: one stream (each name was a stream, decoded in
 * full). Halfway through, the stream has walked 12 MiB of its packet: kept, that is 12 MiB of
 * file pages; given back as the cursor moves (ctf_source.c keeps at most 2 x GIVE_BACK =
 * 4 MiB behind a stream's cursor), at most 4 MiB, plus 2 MiB for read-around. Then every
 * event is read: hostile_ctf_events(24), as written. */
static void test_ctf_shared_packet(void **state)
{
	(void)state;
	enum { MIB = 24 };
	char path[256];
	snprintf(path, sizeof path, "%s/ctf-shared-packet", dir);
	assert_int_equal(hostile_shape("ctf-shared-packet")->write(path, MIB), 0);
	long before = rss_file_kb();
	assert_true(before >= 0);
	struct vms_error err = {0};
	struct vms_source *src = vms_ctf_open(path, &err);
	if (!src)
		fail_msg("%s", err.msg);
	assert_int_equal(src->ops->nr_streams(src), 1);
	uint64_t per = hostile_ctf_events(MIB), n = 0;
	struct vms_event ev;
	for (; n < per / 2; n++)
		assert_int_equal(src->ops->next(src, 0, &ev), 1);
	long mid = rss_file_kb() - before;
	print_message("# halfway: %ld kB of file pages resident (kept whole: %d kB)\n", mid,
		      MIB / 2 * 1024);
	assert_true(mid < (4 + 2) * 1024);
	int r;
	while ((r = src->ops->next(src, 0, &ev)) == 1)
		n++;
	assert_int_equal(r, 0);
	assert_int_equal(n, per);
	vms_source_close(src);
}

/* issue 20.8: mmap fails with ENOMEM when the process is at the kernel's limit on memory
 * mappings (vm.max_map_count): a directory of 65,536 stream files said "out of memory at
 * byte offset 0". Here the process takes all but 8 of the mappings it may have (one page
 * each, alternately readable and not, so that none merge), then opens a directory of 64
 * distinct stream files (one small packet each): a stream's mapping fails, and the message
 * names the limit with the value /proc/sys/vm/max_map_count says. */
static void test_ctf_map_limit(void **state)
{
	(void)state;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	unsigned long long max = 0;
	if (!f || fscanf(f, "%llu", &max) != 1 || max > 1u << 20) {
		if (f)
			fclose(f);
		skip(); /* (no such limit to reach, or too large to reach in a test) */
	}
	fclose(f);
	char path[256], p[300];
	snprintf(path, sizeof path, "%s/ctf-map-limit", dir);
	assert_int_equal(hostile_shape("ctf-shared-packet")->write(path, 1), 0);
	/* 64 distinct files of one 64 KiB packet: channel0_0 cut (its packet sizes patched) */
	snprintf(p, sizeof p, "%s/channel0_0", path);
	f = fopen(p, "rb");
	assert_non_null(f);
	static uint8_t pkt[1 << 16];
	assert_int_equal(fread(pkt, 1, sizeof pkt, f), sizeof pkt);
	fclose(f);
	uint64_t events = (sizeof pkt - 68) / 60, content = (68 + events * 60) * 8,
		 psize = sizeof pkt * 8, tend = 1000 + events;
	memcpy(pkt + 32, &tend, 8);
	memcpy(pkt + 40, &content, 8);
	memcpy(pkt + 48, &psize, 8);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -f '%s'/channel0_* '%s'/link*", path, path);
	assert_int_equal(system(cmd), 0);
	for (int s = 0; s < 64; s++) {
		snprintf(p, sizeof p, "%s/s%02d", path, s);
		f = fopen(p, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(pkt, 1, sizeof pkt, f), sizeof pkt);
		assert_int_equal(fclose(f), 0);
	}
	/* the process's mappings now */
	f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	unsigned long long now = 0;
	int ch;
	while ((ch = getc(f)) != EOF)
		now += ch == '\n';
	fclose(f);
	size_t fill = max > now + 8 ? (size_t)(max - now - 8) : 0;
	void **maps = calloc(fill ? fill : 1, sizeof *maps);
	assert_non_null(maps);
	size_t got = 0;
	for (; got < fill; got++) {
		maps[got] = mmap(NULL, 4096, got % 2 ? PROT_READ : PROT_NONE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (maps[got] == MAP_FAILED)
			break;
	}
	struct vms_error err = {0};
	struct vms_source *src = vms_ctf_open(path, &err);
	for (size_t i = 0; i < got; i++)
		munmap(maps[i], 4096);
	free(maps);
	print_message("# %zu mappings taken of %llu: %s\n", got, max, src ? "opened" : err.msg);
	assert_null(src);
	char want[160];
	snprintf(want, sizeof want, "mapped): the kernel's limit on memory mappings "
		 "(vm.max_map_count %llu) at byte offset 0", max);
	assert_non_null(strstr(err.msg, ": too many stream files ("));
	assert_non_null(strstr(err.msg, want));
	assert_int_equal(err.status, VMS_ERR_NOMEM);
}

/* VMS_HOSTILE_KEEP=DIR: write the files there and keep them (to refresh the regression
 * inputs in tests/fuzz/regress/tracedat and the fuzzers' seeds) */
static bool keep;

static int setup(void **state)
{
	(void)state;
	const char *k = getenv("VMS_HOSTILE_KEEP");
	if (k && strlen(k) < sizeof dir) {
		strcpy(dir, k);
		keep = true;
		return 0;
	}
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	if (keep)
		return 0;
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decl_in_brackets),
		cmocka_unit_test(test_symbolic_undeclared),
		cmocka_unit_test(test_get_str_undeclared),
		cmocka_unit_test(test_quote_desync),
		cmocka_unit_test(test_nested),
		cmocka_unit_test(test_op_chain),
		cmocka_unit_test(test_no_priority_tokens),
		cmocka_unit_test(test_zero_over_field),
		cmocka_unit_test(test_cmdlines_streamed),
		cmocka_unit_test(test_many_refs),
		cmocka_unit_test(test_cpu_overlap),
		cmocka_unit_test(test_section_bomb),
		cmocka_unit_test(test_offset_overflow),
		cmocka_unit_test(test_date_overflow),
		cmocka_unit_test(test_chunk_bomb),
		cmocka_unit_test(test_big_shapes),
		cmocka_unit_test(test_ctf_shared_packet),
		cmocka_unit_test(test_ctf_map_limit),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
