/* JSON and CSV writers: byte-exact output checked against hand-written expectations. */
#include "testutil.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_csv),
	};
	return cmocka_run_group_tests_name("writers", tests, NULL, NULL);
}
