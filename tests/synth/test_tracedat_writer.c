/* The trace.dat writer on hand-made events, read back by trace-cmd: every field value, time
 * (raw, across time extends), option and compression must come out as the test wrote them.
 * The expected text follows the kernel's print formats (trace-cmd -N: no plugins). */
#include "tracecmd_util.h"

#include <zlib.h>
#include <zstd.h>

#include "output/tracedat_writer.h"
#include "synth/kernel_formats.h"

static char path[4200];

static void fmt(struct vms_tdw *w, const char *sys, const char *name, unsigned id, const char *body)
{
	char buf[16384];
	snprintf(buf, sizeof buf, "name: %s\nID: %u\nformat:\n%s", name, id, body);
	assert_int_equal(vms_tdw_add_event_format(w, sys, buf, NULL), 0);
}

static void sw(struct vms_tdw *w, uint32_t cpu, uint64_t ts, const char *pc, int pp, int64_t st,
	       const char *nc, int np)
{
	struct vms_ev_sched_switch e;
	memset(&e, 0, sizeof e);
	e.c.type = 372;
	e.c.pid = pp;
	snprintf(e.prev_comm, 16, "%s", pc);
	e.prev_pid = pp;
	e.prev_prio = 120;
	e.prev_state = st;
	snprintf(e.next_comm, 16, "%s", nc);
	e.next_pid = np;
	e.next_prio = 120;
	assert_int_equal(vms_tdw_event(w, cpu, ts, &e, sizeof e, NULL), 0);
}

/* Write the hand-made file with compression `comp`; returns the number of events. */
static unsigned write_file(enum vms_tdw_compression comp)
{
	snprintf(path, sizeof path, "%s/hand-%s.dat", vms_test_tmpdir("tdw"), vms_codec_name(comp));
	struct vms_tdw_config c = {
		.path = path, .compression = comp, .nr_cpus = 3, .chunk_pages = 2,
		.header_page = vms_synth_header_page, .header_event = vms_synth_header_event,
		.buffer_clock = "tsc2nsec", .trace_clock = "local [x86-tsc]\n",
		.uname = "Linux test 6.18.0 x86_64", .version = "test", .trace_id = 0x1122334455667788ull,
	};
	struct vms_tdw *w;
	struct vms_error err = { 0 };
	assert_int_equal(vms_tdw_open(&w, &c, &err), 0);
	fmt(w, "sched", "sched_switch", 372, vms_synth_fmt_sched_switch);
	fmt(w, "sched", "sched_wakeup", 374, vms_synth_fmt_sched_wakeup);
	fmt(w, "kvm", "kvm_entry", 115, vms_synth_fmt_kvm_entry);
	fmt(w, "kvm", "kvm_exit", 103, vms_synth_fmt_kvm_exit);
	assert_int_equal(vms_tdw_add_cmdline(w, 1234, "bash", &err), 0);

	unsigned n = 0;
	sw(w, 0, 1000, "bash", 1234, 1, "swapper/0", 0), n++;
	struct vms_ev_sched_wakeup wk;
	memset(&wk, 0, sizeof wk);
	wk.c.type = 374;
	snprintf(wk.comm, 16, "kworker/0:1");
	wk.pid = 31;
	wk.prio = 120;
	wk.target_cpu = 0;
	/* 2^28 + 5 cycles later: needs a time extend */
	assert_int_equal(vms_tdw_event(w, 0, 1000 + (1ull << 28) + 5, &wk, sizeof wk, NULL), 0), n++;
	struct vms_ev_kvm_exit ex;
	memset(&ex, 0, sizeof ex);
	ex.c.type = 103;
	ex.c.pid = 4247;
	ex.exit_reason = 48;
	ex.guest_rip = 0xffffffff81000010ull;
	ex.isa = 1;
	ex.info1 = 0x181;
	ex.vcpu_id = 3;
	assert_int_equal(vms_tdw_event(w, 0, 5000000000000ull, &ex, sizeof ex, NULL), 0), n++;
	struct vms_ev_kvm_entry en;
	memset(&en, 0, sizeof en);
	en.c.type = 115;
	en.c.pid = 4248;
	en.vcpu_id = 1;
	en.rip = 0xffffffff81234567ull;
	en.intr_info = 0x800000ec;
	assert_int_equal(vms_tdw_event(w, 1, 777, &en, sizeof en, NULL), 0), n++;
	sw(w, 1, 778, "CPU 1/KVM", 4248, 0x100, "stress-ng", 5102), n++;
	/* many pages and chunks on CPU 2: 3000 events 1000 cycles apart */
	for (unsigned i = 0; i < 3000; i++)
		sw(w, 2, 100000 + 1000ull * i, "a", 1, 1, "b", 2), n++;

	int32_t tids[2] = { 4247, 4248 };
	assert_int_equal(vms_tdw_add_tsc2nsec(w, 740511603, 31, 0, &err), 0);
	assert_int_equal(vms_tdw_add_guest(w, "g1", 0xabcdef0123456789ull, 2, tids, &err), 0);
	uint64_t times[2] = { 100, 200 }, scal[2] = { 291181010390334ull, 291181010390334ull };
	uint64_t frac[2] = { 48, 48 };
	int64_t off[2] = { 10194820151318ll, 10194820151318ll };
	struct vms_tdw_ts_cpu tc = { 2, times, off, scal, frac };
	assert_int_equal(vms_tdw_add_time_shift(w, 0x99, 0, 1, &tc, &err), 0);
	assert_int_equal(vms_tdw_close(w, &err), 0);
	return n;
}

static void check_report(enum vms_tdw_compression comp)
{
	VMS_REQUIRE_TRACECMD();
	unsigned n = write_file(comp);
	char cmd[8600];
	int st;
	long errb;
	snprintf(cmd, sizeof cmd, "trace-cmd report -N --raw-ts -i '%s'", path);
	char *out = run_capture(cmd, &st, &errb);
	assert_non_null(out);
	assert_int_equal(st, 0);
	assert_int_equal(errb, 0); /* no complaint */
	assert_int_equal(count_str(out, ": sched_switch: "), n - 3);
	assert_non_null(strstr(out, "bash-1234 [000]1000: sched_switch: prev_comm=bash prev_pid=1234 "
				    "prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120"));
	assert_non_null(strstr(out, "[000]268436461: sched_wakeup: comm=kworker/0:1 pid=31 prio=120 "
				    "target_cpu=000"));
	assert_non_null(strstr(out, "[000]5000000000000: kvm_exit: vcpu 3 reason EPT_VIOLATION rip "
				    "0xffffffff81000010 info1 0x0000000000000181 info2 0x0000000000000000 "
				    "intr_info 0x00000000 error_code 0x00000000 requests 0x0000000000000000"));
	assert_non_null(strstr(out, "[001]777: kvm_entry: vcpu 1, rip 0xffffffff81234567 intr_info "
				    "0x800000ec error_code 0x00000000"));
	assert_non_null(strstr(out, "[001]778: sched_switch: prev_comm=CPU 1/KVM prev_pid=4248 "
				    "prev_prio=120 prev_state=R+ ==> next_comm=stress-ng next_pid=5102"));
	/* the last of the 3000 on CPU 2: 100000 + 2999000 */
	assert_non_null(strstr(out, "[002]3099000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 "
				    "prev_state=S ==> next_comm=b next_pid=2"));
	free(out);
}

static void test_report_zstd(void **s) { (void)s; check_report(VMS_TDW_ZSTD); }

static void test_report_none(void **s) { (void)s; check_report(VMS_TDW_NONE); }

static void test_zlib_layout(void **state)
{
	(void)state;
	/* Debian's trace-cmd refuses zlib files ("Unsupported file compression"), so check the
	 * header by hand: magic, version, compression name, and that the file is not empty. */
	write_file(VMS_TDW_ZLIB);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	unsigned char h[64];
	size_t got = fread(h, 1, sizeof h, f);
	fclose(f);
	assert_true(got == sizeof h);
	assert_memory_equal(h, "\x17\x08\x44tracing\x37\0\0\x08\0\x10\0\0zlib", 22);
}

static void test_options(void **state)
{
	(void)state;
	VMS_REQUIRE_TRACECMD();
	write_file(VMS_TDW_ZSTD);
	char cmd[8600];
	int st;
	snprintf(cmd, sizeof cmd, "trace-cmd dump --options -i '%s'", path);
	char *out = run_capture(cmd, &st, NULL);
	assert_non_null(out);
	assert_int_equal(st, 0);
	assert_non_null(strstr(out, "0x1122334455667788"));
	assert_non_null(strstr(out, "740511603 31 0 [multiplier, shift, offset]"));
	assert_non_null(strstr(out, "g1 [Guest name]"));
	assert_non_null(strstr(out, "0xABCDEF0123456789 [trace id]"));
	assert_non_null(strstr(out, "0 4247 [guest cpu, host pid]"));
	assert_non_null(strstr(out, "1 4248 [guest cpu, host pid]"));
	assert_non_null(strstr(out, "0x99 [peer's trace id]"));
	assert_non_null(strstr(out, "10194820151318 291181010390334 48 100[offset * scaling >> fraction @ time]"));
	assert_non_null(strstr(out, "10194820151318 291181010390334 48 200[offset * scaling >> fraction @ time]"));
	assert_non_null(strstr(out, "\"tsc2nsec\" [clock]"));
	assert_non_null(strstr(out, "3 [CPUs]:"));
	free(out);
}

static void test_bad_input(void **state)
{
	(void)state;
	struct vms_tdw_config c = { .path = NULL };
	struct vms_tdw *w;
	struct vms_error err = { 0 };
	assert_int_equal(vms_tdw_open(&w, &c, &err), VMS_ERR_USAGE);
	/* time going backwards on a CPU is refused */
	write_file(VMS_TDW_NONE);
	struct vms_tdw_config c2 = {
		.path = path, .compression = VMS_TDW_NONE, .nr_cpus = 1,
		.header_page = vms_synth_header_page, .header_event = vms_synth_header_event,
		.buffer_clock = "local",
	};
	vms_error_clear(&err);
	assert_int_equal(vms_tdw_open(&w, &c2, &err), 0);
	uint8_t ev[36] = { 0 };
	assert_int_equal(vms_tdw_event(w, 0, 100, ev, sizeof ev, &err), 0);
	assert_int_equal(vms_tdw_event(w, 0, 99, ev, sizeof ev, &err), VMS_ERR_USAGE);
	assert_non_null(strstr(err.msg, "time goes back"));
	vms_error_clear(&err);
	assert_int_equal(vms_tdw_event(w, 1, 100, ev, sizeof ev, &err), VMS_ERR_USAGE);
	vms_tdw_discard(w);
}

/* ---- a minimal walk of the layout (header -> options chain -> BUFFER -> CPU data) ---- */

static uint8_t *slurp(const char *p, size_t *n)
{
	FILE *f = fopen(p, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long sz = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)sz);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)sz, f), (size_t)sz);
	fclose(f);
	*n = (size_t)sz;
	return b;
}

static uint64_t rd(const uint8_t *b, size_t n, size_t at, int bytes)
{
	assert_true(at + (size_t)bytes <= n);
	uint64_t v = 0;
	memcpy(&v, b + at, (size_t)bytes);
	return v;
}

/* The uncompressed flyrecord data of `cpu` (NULL when it has none); *len its size. */
static uint8_t *cpu_data(const uint8_t *f, size_t n, uint32_t cpu, size_t *len)
{
	size_t p = 10 + 2 + 2 + 4;                 /* magic, "7\0", endian, long size, page */
	const char *comp = (const char *)f + p;
	p += strlen(comp) + 1;
	p += strlen((const char *)f + p) + 1;     /* version */
	uint64_t opt = rd(f, n, p, 8);
	while (opt) {
		assert_int_equal(rd(f, n, opt, 2), 0); /* an options section */
		uint64_t size = rd(f, n, opt + 8, 8), q = opt + 16, end = q + size;
		opt = 0;
		while (q < end) {
			uint16_t id = (uint16_t)rd(f, n, q, 2);
			uint32_t sz = (uint32_t)rd(f, n, q + 2, 4);
			size_t d = q + 6;
			q = d + sz;
			if (id == 0) {
				opt = rd(f, n, d, 8);
				break;
			}
			if (id != 3)
				continue;
			d += 8;
			d += strlen((const char *)f + d) + 1; /* name */
			d += strlen((const char *)f + d) + 1; /* clock */
			uint32_t ncpu = (uint32_t)rd(f, n, d + 4, 4);
			d += 8;
			for (uint32_t i = 0; i < ncpu; i++, d += 20) {
				if (rd(f, n, d, 4) != cpu)
					continue;
				uint64_t off = rd(f, n, d + 4, 8), sz8 = rd(f, n, d + 12, 8);
				assert_int_equal(off % 4096, 0);
				if (!strcmp(comp, "none")) {
					uint8_t *out = malloc(sz8);
					memcpy(out, f + off, sz8);
					*len = sz8;
					return out;
				}
				uint32_t chunks = (uint32_t)rd(f, n, off, 4);
				size_t at = off + 4, total = 0;
				uint8_t *out = NULL;
				for (uint32_t c = 0; c < chunks; c++) {
					uint32_t cs = (uint32_t)rd(f, n, at, 4), us = (uint32_t)rd(f, n, at + 4, 4);
					assert_int_equal(us % 4096, 0);
					out = realloc(out, total + us);
					assert_non_null(out);
					assert_true(at + 8 + cs <= n);
					if (!strcmp(comp, "zstd")) {
						assert_int_equal(ZSTD_decompress(out + total, us, f + at + 8, cs), us);
					} else {
						uLongf ul = us;
						assert_int_equal(uncompress(out + total, &ul, f + at + 8, cs), Z_OK);
						assert_int_equal(ul, us);
					}
					total += us;
					at += 8 + cs;
				}
				/* the BUFFER size covers all chunks but not the u32 count before them,
				 * as trace-cmd's tracecmd_compress_copy_from() reports it */
				assert_int_equal(at - off, sz8 + 4);
				*len = total;
				return out;
			}
			return NULL;
		}
	}
	return NULL;
}

/* zlib and zstd files hold exactly the pages of the uncompressed file (Debian's trace-cmd
 * cannot read zlib: this is how those files are checked). */
static void test_compressions_agree(void **state)
{
	(void)state;
	static const enum vms_tdw_compression comps[] = { VMS_TDW_NONE, VMS_TDW_ZLIB, VMS_TDW_ZSTD };
	uint8_t *files[3];
	size_t sizes[3];
	for (int i = 0; i < 3; i++) {
		write_file(comps[i]);
		files[i] = slurp(path, &sizes[i]);
	}
	for (uint32_t cpu = 0; cpu < 3; cpu++) {
		size_t l0, l;
		uint8_t *ref = cpu_data(files[0], sizes[0], cpu, &l0);
		assert_non_null(ref);
		assert_int_equal(l0 % 4096, 0);
		for (int i = 1; i < 3; i++) {
			uint8_t *d = cpu_data(files[i], sizes[i], cpu, &l);
			assert_non_null(d);
			assert_int_equal(l, l0);
			assert_memory_equal(d, ref, l0);
			free(d);
		}
		free(ref);
	}
	for (int i = 0; i < 3; i++)
		free(files[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_zstd),
		cmocka_unit_test(test_report_none),
		cmocka_unit_test(test_zlib_layout),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_compressions_agree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
