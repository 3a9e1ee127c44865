/* `vmscope dump` on simpletrace files, line by line against the text derived by hand
 * (st_sample.h), plus --limit, a truncated file (the good prefix, then exit 2 and the byte
 * offset of the damaged record), usage errors, and one file of another format. */
#include <sys/stat.h>
#include <sys/wait.h>

#include "testutil.h"
#include "st_sample.h"

static char dir[8192], vmscope[8192];

/* (up to four at a time) */
#define tmp_path(name) stw_tmp_path(dir, name)

static int group_setup(void **state)
{
	(void)state;
	char tt[8192];
	snprintf(tt, sizeof tt, "%s/test-tmp", vms_test_build());
	mkdir(tt, 0755);
	snprintf(dir, sizeof dir, "%s/test-tmp/st-dump-%d", vms_test_build(), (int)getpid());
	mkdir(dir, 0755);
	snprintf(vmscope, sizeof vmscope, "%s/tools/vmscope/vmscope", vms_test_build());
	FILE *f = fopen(tmp_path("trace-events"), "w");
	if (!f)
		return -1;
	fputs(st_sample_events, f);
	fclose(f);
	struct stw w;
	st_sample_write(&w);
	int rc = stw_save(&w, tmp_path("sample.st"), w.len);
	/* cut inside the 6th record after the header (the dropped-events one) */
	rc |= stw_save(&w, tmp_path("cut.st"), w.rec_start[9] + 10);
	FILE *o = fopen(tmp_path("cut.offset"), "w");
	fprintf(o, "%zu", w.rec_start[9]);
	fclose(o);
	free(w.buf);
	return rc;
}

/* Run vmscope with args; stdout into out, stderr into err; returns the exit status. */
static int run(const char *args, char *out, size_t cap, char *err, size_t ecap)
{
	char cmd[30000];
	snprintf(cmd, sizeof cmd, "'%s' %s 2>'%s'", vmscope, args, tmp_path("stderr"));
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	int st = pclose(p);
	FILE *e = fopen(tmp_path("stderr"), "r");
	n = e ? fread(err, 1, ecap - 1, e) : 0;
	err[n] = '\0';
	if (e)
		fclose(e);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void expect_lines(const char *out, size_t nlines)
{
	const char *p = out;
	for (size_t i = 0; i < nlines; i++) {
		size_t len = strlen(st_sample_lines[i]);
		if (strncmp(p, st_sample_lines[i], len) != 0 || p[len] != '\n')
			fail_msg("line %zu: want '%s', got '%.*s'", i + 1, st_sample_lines[i],
				 (int)strcspn(p, "\n"), p);
		p += len + 1;
	}
	assert_string_equal(p, "");
}

static void test_dump_sample(void **state)
{
	(void)state;
	char out[8192], err[4096], args[20000];
	snprintf(args, sizeof args, "dump --events '%s' '%s'", tmp_path("trace-events"), tmp_path("sample.st"));
	assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
	expect_lines(out, ST_SAMPLE_N);
	assert_string_equal(err, "");

	snprintf(args, sizeof args, "dump '%s' --limit 3 --events '%s'", tmp_path("sample.st"), tmp_path("trace-events"));
	assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
	expect_lines(out, 3);
}

static void test_dump_truncated(void **state)
{
	(void)state;
	char out[8192], err[4096], args[20000], off[64] = "";
	FILE *o = fopen(tmp_path("cut.offset"), "r");
	assert_non_null(fgets(off, sizeof off, o));
	fclose(o);
	snprintf(args, sizeof args, "dump --events '%s' '%s'", tmp_path("trace-events"), tmp_path("cut.st"));
	assert_int_equal(run(args, out, sizeof out, err, sizeof err), 2);
	expect_lines(out, 3);   /* the three events before the damaged record */
	char want[128];
	snprintf(want, sizeof want, "at byte offset %s\n", off);
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, "cut.st"));
}

/* A string longer than dump's 1 MiB output buffer (3 MiB, a tab at its end) prints whole:
 * name_pair a=<3 MiB of 'x' then \x09> b=end, each string byte once (the tab escaped), the
 * second event 1 us after the first (simpletrace.py's delta). */
static void test_dump_long_string(void **state)
{
	(void)state;
	enum { LONG = 3u << 20 };
	char *big = malloc(LONG + 2);
	assert_non_null(big);
	memset(big, 'x', LONG);
	big[LONG] = '\t';
	big[LONG + 1] = '\0';
	struct stw w;
	memset(&w, 0, sizeof w);
	stw_header(&w);
	stw_mapping(&w, 3, "name_pair");
	struct stw_arg a[] = { { big, 0 }, { "end", 0 } };
	stw_event(&w, 3, 1000, 7, a, 2);
	stw_event(&w, 3, 2000, 7, a, 2);
	assert_int_equal(stw_save(&w, tmp_path("long.st"), w.len), 0);
	free(w.buf);
	char cmd[20000];
	snprintf(cmd, sizeof cmd, "'%s' dump --events '%s' '%s'", vmscope, tmp_path("trace-events"),
		 tmp_path("long.st"));
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	static const char *const head[2] = { "name_pair 0.000 pid=7 a=", "name_pair 1.000 pid=7 a=" };
	static const char tail[] = "\\x09 b=end\n";
	for (int line = 0; line < 2; line++) {
		char h[32];
		size_t hl = strlen(head[line]);
		assert_int_equal(fread(h, 1, hl, p), hl);
		h[hl] = '\0';
		assert_string_equal(h, head[line]);
		size_t xs = 0;
		int c;
		while ((c = fgetc(p)) == 'x')
			xs++;
		assert_int_equal(xs, LONG);
		char t[sizeof tail];
		t[0] = (char)c;
		assert_int_equal(fread(t + 1, 1, sizeof tail - 2, p), sizeof tail - 2);
		t[sizeof tail - 1] = '\0';
		assert_string_equal(t, tail);
	}
	assert_int_equal(fgetc(p), EOF);
	assert_int_equal(pclose(p), 0);
	free(big);
}

static void test_dump_usage(void **state)
{
	(void)state;
	char out[8192], err[4096], args[20000];
	assert_int_equal(run("dump", out, sizeof out, err, sizeof err), 2);
	assert_int_equal(run("dump --help", out, sizeof out, err, sizeof err), 0);
	assert_non_null(strstr(out, "usage: vmscope dump"));
	snprintf(args, sizeof args, "dump --limit x '%s'", tmp_path("sample.st"));
	assert_int_equal(run(args, out, sizeof out, err, sizeof err), 2);
	snprintf(args, sizeof args, "dump --events '%s' '%s'", tmp_path("trace-events"), tmp_path("trace-events"));
	assert_int_equal(run(args, out, sizeof out, err, sizeof err), 2);
	assert_non_null(strstr(err, "not one"));
	/* a missing file is bad input, exit 2, in every command */
	snprintf(args, sizeof args, "dump '%s'", tmp_path("no-such-file"));
	assert_int_equal(run(args, out, sizeof out, err, sizeof err), 2);
	snprintf(args, sizeof args, "dump --events '%s' '%s'", tmp_path("no-such-events"), tmp_path("sample.st"));
	assert_int_equal(run(args, out, sizeof out, err, sizeof err), 2);
	assert_string_equal(out, "");
}

/* Another format goes through its reader's rendering, after time and CPU: the first two
 * events of a Trace Compass XML stub, values read off the XML by hand (--raw: the file's own
 * timestamps, 1 and 4 ns; without it, seconds as trace-cmd prints them). */
static void test_dump_other_format(void **state)
{
	(void)state;
	const char *xml = vms_test_trace("tracecompass-vm/Containers/withContainers.xml");
	VMS_REQUIRE_TRACE(xml);
	char out[8192], err[4096], args[20000];
	snprintf(args, sizeof args, "dump --limit 2 '%s'", xml);
	assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
	assert_true(!strncmp(out, "0.000000 cpu=0 ", 15));
	snprintf(args, sizeof args, "dump --limit 2 '%s' --raw", xml);
	assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
	char *l2 = strchr(out, '\n');
	assert_non_null(l2);
	*l2++ = '\0';
	assert_true(!strncmp(out, "1 cpu=0 ", 8));
	assert_non_null(strstr(out, "sched_switch"));
	assert_non_null(strstr(out, "prev_comm=any prev_tid=30 prev_prio=20 prev_state=0 "
				    "next_comm=lttng-sessiond next_tid=31 next_prio=20"));
	assert_true(!strncmp(l2, "4 cpu=0 ", 8));
	assert_non_null(strstr(l2, "lttng_statedump_process_state"));
	assert_non_null(strstr(l2, "name=init"));
	assert_non_null(strstr(l2, "ns_inum=654321\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dump_sample),
		cmocka_unit_test(test_dump_truncated),
		cmocka_unit_test(test_dump_long_string),
		cmocka_unit_test(test_dump_usage),
		cmocka_unit_test(test_dump_other_format),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
