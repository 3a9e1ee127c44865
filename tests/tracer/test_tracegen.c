/* vmscope-tracegen on a QEMU-syntax trace-events file (tests/tracer/qemu-style.trace-events):
 * the generated header compiles here (with -Wall -Wextra -Werror), and the generated table
 * says what the file says. Expected sizes and signedness are those of the C types on x86-64
 * (LP64), written down by hand from the trace-events file, not taken from the generator. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/wait.h>

#include "testutil.h"
#include "trace-qemu-style.h"

#define T vmst_table_trace_qemu_style

static const struct vmst_event_desc *find(const char *name)
{
	for (uint32_t i = 0; i < T.n; i++)
		if (!strcmp(T.events[i].name, name))
			return &T.events[i];
	return NULL;
}

static void test_table_names_in_file_order(void **state)
{
	(void)state;
	static const char *const want[] = {
		"virtio_blk_req_complete", "virtio_blk_handle_write", "pflash_device_info",
		"vmst_test_tcg", "vmst_test_void", "vmst_test_str", "vmst_test_ints",
		"vmst_test_c_types", "vmst_test_ten", "vmst_test_indented", "vmst_test_seq",
	};
	/* 12 event lines, one of them `disable` */
	assert_int_equal(T.n, 11);
	for (uint32_t i = 0; i < T.n; i++)
		assert_string_equal(T.events[i].name, want[i]);
	assert_null(find("vmst_test_disabled"));
	/* registered by the constructor: the library knows them by the same names */
	assert_int_equal(vmst_event_count(), 11);
	assert_string_equal(vmst_event_name(T.base + 10), "vmst_test_seq");
}

struct want_arg {
	const char *name;
	int kind, size, is_signed;
};

static void check_args(const char *event, const struct want_arg *w, uint32_t n)
{
	const struct vmst_event_desc *d = find(event);
	assert_non_null(d);
	assert_int_equal(d->nargs, n);
	for (uint32_t i = 0; i < n; i++) {
		assert_string_equal(d->args[i].name, w[i].name);
		assert_int_equal(d->args[i].kind, w[i].kind);
		if (w[i].kind != VMST_ARG_STR) {
			assert_int_equal(d->args[i].size, w[i].size);
			assert_int_equal(d->args[i].is_signed, w[i].is_signed);
		}
	}
}

static void test_argument_types(void **state)
{
	(void)state;
	const struct want_arg ints[] = {
		{"a", VMST_ARG_INT, 1, 1}, {"b", VMST_ARG_INT, 2, 1}, {"c", VMST_ARG_INT, 4, 1},
		{"d", VMST_ARG_INT, 8, 1}, {"e", VMST_ARG_INT, 1, 0}, {"f", VMST_ARG_INT, 2, 0},
		{"g", VMST_ARG_INT, 4, 0}, {"h", VMST_ARG_INT, 8, 0},
	};
	check_args("vmst_test_ints", ints, 8);
	const struct want_arg ctypes[] = {
		{"i", VMST_ARG_INT, 4, 1},  {"u", VMST_ARG_INT, 4, 0},    {"l", VMST_ARG_INT, 8, 1},
		{"ul", VMST_ARG_INT, 8, 0}, {"sz", VMST_ARG_INT, 8, 0},   {"flag", VMST_ARG_INT, 1, 0},
		{"ui", VMST_ARG_INT, 4, 0}, {"ll", VMST_ARG_INT, 8, 1},
	};
	check_args("vmst_test_c_types", ctypes, 8);
	const struct want_arg strs[] = {
		{"name", VMST_ARG_STR, 0, 0}, {"other", VMST_ARG_STR, 0, 0},
		{"plain", VMST_ARG_STR, 0, 0},
	};
	check_args("vmst_test_str", strs, 3);
	const struct want_arg ptrs[] = {
		{"vdev", VMST_ARG_PTR, 8, 0}, {"req", VMST_ARG_PTR, 8, 0}, {"status", VMST_ARG_INT, 4, 1},
	};
	check_args("virtio_blk_req_complete", ptrs, 3);
	const struct want_arg ind[] = {{"ptr", VMST_ARG_PTR, 8, 0}, {"spaced", VMST_ARG_INT, 8, 0}};
	check_args("vmst_test_indented", ind, 2);
	check_args("vmst_test_void", NULL, 0);
	const struct vmst_event_desc *ten = find("vmst_test_ten");
	assert_int_equal(ten->nargs, 10);
	assert_string_equal(ten->args[9].name, "a9");
	assert_string_equal(ten->args[9].type, "uint64_t");
	assert_string_equal(find("vmst_test_indented")->args[1].type, "unsigned long");
}

static void test_formats_kept_with_pri_macros(void **state)
{
	(void)state;
	assert_string_equal(find("pflash_device_info")->fmt,
			    "Read Device Information offset:0x%04" PRIx64);
	assert_string_equal(find("virtio_blk_handle_write")->fmt,
			    "vdev %p req %p sector %" PRIu64 " nsectors %zu");
	assert_string_equal(find("vmst_test_void")->fmt, "nothing");
}

static void test_disabled_event_compiles_to_nothing(void **state)
{
	(void)state;
	assert_int_equal(TRACE_VMST_TEST_DISABLED_ENABLED, 0);
	assert_int_equal(TRACE_VMST_TEST_SEQ_ENABLED, 1);
	assert_false(trace_event_get_state_vmst_test_disabled());
	trace_vmst_test_disabled(1, "x");   /* an empty inline: must compile and do nothing */
	/* enabled events start disabled (the tracer is not started here): calls are no-ops */
	assert_false(trace_event_get_state_vmst_test_seq());
	trace_vmst_test_seq(1, 2);
	assert_int_equal(vmst_stats(NULL, 0), 0);
}

static void test_set_glob_counts(void **state)
{
	(void)state;
	assert_int_equal(vmst_event_set_glob("vmst_test_*", true), 8);
	assert_true(vmst_event_get(T.base + 10));
	assert_int_equal(vmst_event_set_glob("*blk*", true), 2);
	assert_int_equal(vmst_event_set_glob("vmst_test_[st]*", false), 4);   /* tcg str ten seq */
	assert_false(vmst_event_get(T.base + 10));
	assert_int_equal(vmst_event_set(T.base + 10, true), 0);
	assert_true(vmst_event_get(T.base + 10));
	assert_int_equal(vmst_event_set(999, true), -EINVAL);
	/* not recording (no vmst_init): the state byte the trace point reads stays 0 */
	assert_false(trace_event_get_state_vmst_test_seq());
	vmst_event_set_glob("*", false);
}

/* Run the generator on a small file (extra options before the file names); returns its exit
 * status and its stderr. The outputs are DIR/out.h and DIR/out.c. */
static int run_gen_opts(const char *opts, const char *text, char *errbuf, size_t len)
{
	const char *dir = vms_test_tmpdir("tracegen-bad");
	char in[4200], cmd[9000], errf[4200];
	snprintf(in, sizeof in, "%s/trace-events", dir);
	snprintf(errf, sizeof errf, "%s/stderr", dir);
	FILE *f = fopen(in, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	snprintf(cmd, sizeof cmd, "'%s' %s '%s' '%s/out.h' '%s/out.c' 2>'%s'", VMST_TRACEGEN, opts,
		 in, dir, dir, errf);
	int st = system(cmd);
	f = fopen(errf, "r");
	assert_non_null(f);
	size_t n = fread(errbuf, 1, len - 1, f);
	errbuf[n] = 0;
	fclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int run_gen(const char *text, char *errbuf, size_t len)
{
	return run_gen_opts("", text, errbuf, len);
}

/* QEMU typedefs (hwaddr) work given the header that defines them: the generated file
 * compiles (with the C compiler on PATH) and takes size and signedness from the type. */
static void test_typedef_with_include(void **state)
{
	(void)state;
	const char *dir = vms_test_tmpdir("tracegen-bad");
	char hdr[4200], cmd[9000], err[1024];
	snprintf(hdr, sizeof hdr, "%s/qemu-types.h", dir);
	snprintf(cmd, sizeof cmd, "--group qt --include '\"%s\"'", hdr);
	/* run_gen_opts empties the directory: the header is written after it */
	assert_int_equal(run_gen_opts(cmd, "mmio(hwaddr addr, qsigned v) \"0x%\" PRIx64 \" %d\"\n",
				      err, sizeof err), 0);
	FILE *f = fopen(hdr, "w");
	assert_non_null(f);
	fputs("#include <stdint.h>\ntypedef uint64_t hwaddr;\ntypedef int32_t qsigned;\n", f);
	fclose(f);
	/* the table takes size and signedness from the compiler, not from a list of names */
	snprintf(cmd, sizeof cmd,
		 "cd '%s' && grep -q 'sizeof(hwaddr), VMST_SIGNED(hwaddr)' out.c && "
		 "grep -q 'sizeof(qsigned), VMST_SIGNED(qsigned)' out.c && "
		 "cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I'%s/include' -c out.c -o out.o",
		 dir, VMS_SOURCE_DIR);
	if (system(cmd) != 0)
		fail_msg("the generated file does not compile, or its table does not use sizeof");
}

static void test_generator_rejects_bad_lines(void **state)
{
	(void)state;
	char err[1024];
	assert_int_equal(run_gen("# ok\nok(int a) \"%d\"\n"
				 "eleven(int a0, int a1, int a2, int a3, int a4, int a5, int a6, "
				 "int a7, int a8, int a9, int a10) \"x\"\n", err, sizeof err), 2);
	assert_non_null(strstr(err, ":3:"));
	assert_non_null(strstr(err, "more than 10 arguments"));
	assert_int_equal(run_gen("bogus ev(int a) \"%d\"\n", err, sizeof err), 2);
	assert_non_null(strstr(err, "unknown property 'bogus'"));
	assert_int_equal(run_gen("fp(double d) \"%f\"\n", err, sizeof err), 2);
	assert_non_null(strstr(err, "floating-point"));
	assert_int_equal(run_gen("open(int a \"%d\"\n", err, sizeof err), 2);
	assert_int_equal(run_gen("a(int x) \"\"\na(int y) \"\"\n", err, sizeof err), 2);
	assert_non_null(strstr(err, "already defined on line 1"));
	assert_int_equal(run_gen("noname(int) \"\"\n", err, sizeof err), 2);
	/* a valid file goes through */
	assert_int_equal(run_gen("\n# c\ndisable x(void) \"\"\ny(const char *s) \"%s\"\n", err,
				 sizeof err), 0);
}

/* Bad configurations are refused before anything starts (the tracer stays off). */
static void test_bad_config_refused(void **state)
{
	(void)state;
	assert_int_equal(vmst_init("bufsize=12"), -EINVAL);
	assert_int_equal(vmst_init("file=/tmp/x,nonsense=1"), -EINVAL);
	assert_int_equal(vmst_init("clock=sundial"), -EINVAL);
	assert_int_equal(vmst_init("period=0"), -EINVAL);
	assert_int_equal(vmst_init("bufsize=1M,subbufs=1"), -EINVAL);
	assert_int_equal(vmst_init("events=/nonexistent/vmst-events"), -ENOENT);
	assert_false(vmst_file_enabled());
	assert_int_equal(vmst_flush(), -ESRCH);
	assert_null(vmst_file_get());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_names_in_file_order),
		cmocka_unit_test(test_argument_types),
		cmocka_unit_test(test_formats_kept_with_pri_macros),
		cmocka_unit_test(test_disabled_event_compiles_to_nothing),
		cmocka_unit_test(test_set_glob_counts),
		cmocka_unit_test(test_generator_rejects_bad_lines),
		cmocka_unit_test(test_bad_config_refused),
		cmocka_unit_test(test_typedef_with_include),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
