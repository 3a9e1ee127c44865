/* `vmscope dump` prints string fields whole: a libvmstrace trace holding the longest string
 * the tracer writes (VMST_STR_MAX - 1 = 1,023 bytes), read back by `vmscope dump` and by
 * babeltrace2, the field compared byte for byte with what was recorded and with
 * babeltrace2's text. A second event holds control characters, a backslash, a quote and
 * UTF-8, to pin how each tool escapes them:
 *   vmscope dump: a control character (C0, DEL, C1), a direction override and a byte that
 *                 is not UTF-8 as \xHH, a backslash as \\, a quote and UTF-8 as they are
 *                 (lib/output/text_escape.c);
 *   babeltrace2:  C's escapes (\t \n \e), \xHH for DEL, \\ for a backslash and \" for a
 *                 quote (2.0.x; checked below), UTF-8 as it is.
 * So a string of printable ASCII without \ and " prints the same bytes in both. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "trace-qemu-style.h"
#include "vmscope/tracer-gen.h"

static char dir[2048];
static char longstr[VMST_STR_MAX];   /* 1,023 bytes and the NUL */
static const char ctrl[] = "tab\there nl\nx esc\x1b[31m del\x7f back\\slash \"quoted\" caf\xc3\xa9";
static const char ctrl_vmscope[] =
	"tab\\x09here nl\\x0ax esc\\x1b[31m del\\x7f back\\\\slash \"quoted\" caf\xc3\xa9";

static const char ctrl_babeltrace[] =
	"tab\\there nl\\nx esc\\e[31m del\\x7f back\\\\slash \\\"quoted\\\" caf\xc3\xa9";

static void record(void)
{
	snprintf(dir, sizeof dir, "%s", vms_test_tmpdir("dump-strings"));
	for (size_t i = 0; i < sizeof longstr - 1; i++)   /* printable, no \ or " */
		longstr[i] = (char)('A' + i % 26 + (i % 7 == 6 ? 32 : 0));
	longstr[sizeof longstr - 1] = '\0';
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char cfg[2200];
		snprintf(cfg, sizeof cfg, "file=%s,enable=vmst_test_str", dir);
		if (vmst_init(cfg))
			_exit(1);
		trace_vmst_test_str(longstr, "short", "");
		trace_vmst_test_str("first", ctrl, longstr);
		exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The whole output of a command, in a malloc'ed string. */
static char *run(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t cap = 1 << 16, n = 0;
	char *out = malloc(cap);
	assert_non_null(out);
	size_t k;
	while ((k = fread(out + n, 1, cap - n - 1, p)) > 0) {
		n += k;
		if (cap - n < 2) {
			out = realloc(out, cap *= 2);
			assert_non_null(out);
		}
	}
	out[n] = '\0';
	int st = pclose(p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	return out;
}

/* The text between `open` and the next `close` after the nth line holding `event`
 * (n from 0), copied into a malloc'ed string. */
static char *field(const char *out, const char *event, int nth, const char *open,
		   const char *close)
{
	const char *l = out;
	for (int i = 0; i <= nth; i++) {
		l = strstr(i ? l + 1 : l, event);
		if (!l)
			fail_msg("no line %d with '%s' in:\n%s", nth, event, out);
	}
	const char *eol = strchr(l, '\n');
	const char *a = strstr(l, open);
	if (!a || (eol && a > eol))
		fail_msg("no '%s' on line %d of '%s'", open, nth, event);
	a += strlen(open);
	const char *b = strstr(a, close);
	if (!b || (eol && b > eol))
		fail_msg("no '%s' after '%s' on line %d of '%s'", close, open, nth, event);
	char *v = strndup(a, (size_t)(b - a));
	assert_non_null(v);
	return v;
}

static void test_long_string_whole(void **state)
{
	(void)state;
	record();
	char cmd[4300];
	snprintf(cmd, sizeof cmd, "'%s/tools/vmscope/vmscope' dump '%s'", vms_test_build(), dir);
	char *vd = run(cmd);
	/* dump: vmst_test_str: name="..." other="..." plain="..." */
	char *name = field(vd, "vmst_test_str:", 0, " name=\"", "\" other=\"");
	assert_int_equal(strlen(name), 1023);
	assert_string_equal(name, longstr);
	char *plain = field(vd, "vmst_test_str:", 1, " plain=\"", "\"\n");
	assert_string_equal(plain, longstr);
	char *other = field(vd, "vmst_test_str:", 1, " other=\"", "\" plain=\"");
	assert_string_equal(other, ctrl_vmscope);
	/* the escaped control characters left no newline and no ESC in dump's output */
	assert_null(strchr(vd, '\x1b'));
	assert_int_equal(strstr(vd, "nl\\x0ax") != NULL, 1);

	if (system("babeltrace2 --version >/dev/null 2>&1") != 0) {
		print_message("# babeltrace2 is not installed (Debian: babeltrace2): skipped\n");
		free(vd), free(name), free(plain), free(other);
		skip();
	}
	snprintf(cmd, sizeof cmd, "babeltrace2 '%s'", dir);
	char *bt = run(cmd);
	/* babeltrace2: ... vmst_test_str: { cpu_id = C }, { name = "...", other = "...", plain = "..." } */
	char *bname = field(bt, "vmst_test_str:", 0, "name = \"", "\", other = \"");
	assert_string_equal(bname, name);   /* the same 1,023 bytes */
	char *bplain = field(bt, "vmst_test_str:", 1, "plain = \"", "\" }");
	assert_string_equal(bplain, plain);
	char *bother = field(bt, "vmst_test_str:", 1, "other = \"", "\", plain = \"");
	/* babeltrace2's escapes for the same string (2.0: C's \t \n \e, \xHH for DEL, \\ and
	 * \"), where dump has \xHH for every control character and leaves the quote */
	print_message("# babeltrace2 other = \"%s\"\n# vmscope     other=\"%s\"\n", bother, other);
	assert_string_equal(bother, ctrl_babeltrace);
	free(vd), free(name), free(plain), free(other);
	free(bt), free(bname), free(bplain), free(bother);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_long_string_whole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
