/* JSON and CSV writers: byte-exact output checked against hand-written expectations. */
#include "testutil.h"

#include <errno.h>

#include "vmscope/error.h"
#include "vmscope/writers.h"

static char *render(void (*fn)(FILE *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	fn(f);
	fclose(f);
	return buf;
}

static void json_doc(FILE *f)
{
	struct vms_json j;
	vms_json_init(&j, f, false);
	vms_json_begin_object(&j, NULL);
	vms_json_string(&j, "name", "a\"b\\c\n\x01");
	vms_json_uint(&j, "big", UINT64_MAX);
	vms_json_int(&j, "neg", -42);
	vms_json_double(&j, "half", 0.5);
	vms_json_double(&j, "nan", 0.0 / 0.0);
	vms_json_begin_array(&j, "empty");
	vms_json_end_array(&j);
	vms_json_begin_array(&j, "list");
	vms_json_uint(&j, NULL, 1);
	vms_json_begin_object(&j, NULL);
	vms_json_bool(&j, "t", true);
	vms_json_null(&j, "n");
	vms_json_end_object(&j);
	vms_json_end_array(&j);
	vms_json_end_object(&j);
	vms_json_finish(&j);
}

static void test_json(void **state)
{
	(void)state;
	char *s = render(json_doc);
	assert_string_equal(s, "{\"name\":\"a\\\"b\\\\c\\n\\u0001\",\"big\":18446744073709551615,"
			       "\"neg\":-42,\"half\":0.5,\"nan\":null,\"empty\":[],"
			       "\"list\":[1,{\"t\":true,\"n\":null}]}\n");
	free(s);
}

static void csv_doc(FILE *f)
{
	vms_csv_string(f, "plain");
	fputc('|', f);
	vms_csv_string(f, "CPU 0/KVM, \"x\"");
	fputc('|', f);
	vms_csv_string(f, "");
}

static void test_csv(void **state)
{
	(void)state;
	char *s = render(csv_doc);
	assert_string_equal(s, "plain|\"CPU 0/KVM, \"\"x\"\"\"|");
	free(s);
}

/* Text from a hostile trace (issue 7.9), expected bytes by hand: controls, C1 (C2 9B is the
 * 8-bit CSI), U+202E (E2 80 AE, right-to-left override) and bytes that are not UTF-8 become
 * \xHH; a backslash doubles; valid UTF-8 (e with acute, C3 A9) stays. */
static void test_text_escape(void **state)
{
	(void)state;
	char b[128];
	assert_int_equal(vms_text_escape(b, sizeof b, "ok name"), 7);
	assert_string_equal(b, "ok name");
	vms_text_escape(b, sizeof b, "a\x1b[2J\n\x7f\\");
	assert_string_equal(b, "a\\x1b[2J\\x0a\\x7f\\\\");
	vms_text_escape(b, sizeof b, "\xc2\x9b" "1m\xe2\x80\xae!\xc3\xa9\xff\xc3(\xed\xa0\x80");
	assert_string_equal(b, "\\xc2\\x9b1m\\xe2\\x80\\xae!\xc3\xa9\\xff\\xc3(\\xed\\xa0\\x80");
	/* cut: always terminated, the full length returned */
	assert_int_equal(vms_text_escape(b, 4, "\x01\x02"), 8);
	assert_string_equal(b, "\\x0");
	assert_false(vms_text_is_safe("a\\b"));
	assert_true(vms_text_is_safe("CPU 0/KVM"));
}

static void csv_hostile(FILE *f)
{
	vms_csv_string(f, "=cmd|' /C calc'!A0");
	fputc('|', f);
	vms_csv_string(f, "-2+3");
	fputc('|', f);
	vms_csv_string(f, "a\r\nb");
	fputc('|', f);
	vms_csv_string(f, "@x,\"y\"");
}

/* CSV injection (OWASP): a leading = + - @ gets a quote in front, the field is quoted; line
 * breaks cannot split a row */
static void test_csv_hostile(void **state)
{
	(void)state;
	char *s = render(csv_hostile);
	assert_string_equal(s, "\"'=cmd|' /C calc'!A0\"|\"'-2+3\"|a\\x0d\\x0ab|\"'@x,\"\"y\"\"\"");
	free(s);
}

static void json_hostile(FILE *f)
{
	struct vms_json j;
	vms_json_init(&j, f, false);
	vms_json_string(&j, NULL, "\xff\xc3(\xc3\xa9\xc2\x9b\xe2\x80\xae");
}

/* JSON stays UTF-8: U+FFFD per byte that starts no valid sequence, controls escaped */
static void test_json_hostile(void **state)
{
	(void)state;
	char *s = render(json_hostile);
	assert_string_equal(s, "\"\\ufffd\\ufffd(\xc3\xa9\\u009b\\u202e\"");
	free(s);
}

/* Errors quote trace bytes: no control character reaches the terminal; resources exhausted
 * are named as such (issue 7.7) */
static void test_error_text(void **state)
{
	(void)state;
	struct vms_error e = {0};
	vms_error_set(&e, VMS_ERR_FORMAT, "f: compression '%s' at byte offset 3", "\x1b]0;x\x07");
	assert_string_equal(e.msg, "f: compression '?]0;x?' at byte offset 3");
	vms_error_clear(&e);
	vms_error_open(&e, "t.dat", EMFILE, 0);
	assert_non_null(strstr(e.msg, "t.dat: too many streams open"));
	assert_null(strstr(e.msg, "cannot open"));
	assert_int_equal(e.status, VMS_ERR_NOMEM);
	vms_error_clear(&e);
	vms_error_open(&e, "t.dat", ENOMEM, 4096);
	assert_string_equal(e.msg, "t.dat: out of memory at byte offset 4096");
	vms_error_clear(&e);
	vms_error_open(&e, "t.dat", ENOENT, 0);
	assert_int_equal(e.status, VMS_ERR_USAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_csv),
		cmocka_unit_test(test_text_escape),
		cmocka_unit_test(test_csv_hostile),
		cmocka_unit_test(test_json_hostile),
		cmocka_unit_test(test_error_text),
	};
	return cmocka_run_group_tests_name("writers", tests, NULL, NULL);
}
