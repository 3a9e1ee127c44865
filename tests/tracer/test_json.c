/* The control socket's strict JSON (tracer/json.c): values and escapes decoded as RFC 8259
 * says (expected bytes written by hand), invalid texts refused, strings written back escaped. */
#include "testutil.h"
#include "json.h"

static void parse_ok(const char *text, struct vmst_json *v)
{
	char why[128];
	if (vmst_json_parse(text, strlen(text), v, why, sizeof why) != 0)
		fail_msg("'%s' refused: %s", text, why);
}

static void test_values(void **state)
{
	(void)state;
	struct vmst_json v;
	parse_ok(" {\"a\": [true, false, null, -12.5e-1, 0, \"x\"], \"b\": {}} \r\n", &v);
	assert_int_equal(v.type, VMST_JSON_OBJECT);
	assert_int_equal(v.n, 2);
	const struct vmst_json *a = vmst_json_get(&v, "a");
	assert_non_null(a);
	assert_int_equal(a->type, VMST_JSON_ARRAY);
	assert_int_equal(a->n, 6);
	assert_true(a->item[0].type == VMST_JSON_BOOL && a->item[0].b);
	assert_true(a->item[1].type == VMST_JSON_BOOL && !a->item[1].b);
	assert_int_equal(a->item[2].type, VMST_JSON_NULL);
	assert_int_equal(a->item[3].type, VMST_JSON_NUMBER);
	assert_true(a->item[3].num == -1.25);
	assert_string_equal(a->item[3].str, "-12.5e-1");
	assert_string_equal(vmst_json_cstr(&a->item[5]), "x");
	assert_int_equal(vmst_json_get(&v, "b")->type, VMST_JSON_OBJECT);
	assert_null(vmst_json_get(&v, "c"));
	struct vmst_buf b = { 0 };
	vmst_buf_json(&b, &v);
	assert_string_equal(b.p, "{\"a\":[true,false,null,-12.5e-1,0,\"x\"],\"b\":{}}");
	vmst_buf_free(&b);
	vmst_json_free(&v);
}

static void test_escapes(void **state)
{
	(void)state;
	struct vmst_json v;
	/* \u00e9 = C3 A9, \u20ac = E2 82 AC, \ud83d\ude00 = U+1F600 = F0 9F 98 80 */
	parse_ok("\"a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20ac\\ud83d\\ude00\xc3\xa9z\"", &v);
	assert_int_equal(v.type, VMST_JSON_STRING);
	const char want[] = "a\"\\/\b\f\n\r\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xc3\xa9z";
	assert_int_equal(v.len, sizeof want - 1);
	assert_memory_equal(v.str, want, sizeof want - 1);
	vmst_json_free(&v);
	parse_ok("\"a\\u0000b\"", &v);
	assert_int_equal(v.len, 3);
	assert_null(vmst_json_cstr(&v));   /* a NUL inside is no C string */
	vmst_json_free(&v);

	struct vmst_buf b = { 0 };
	vmst_buf_json_str(&b, "q\"b\\n\n\x01\x1f\xc3\xa9", 10);
	assert_string_equal(b.p, "\"q\\\"b\\\\n\\n\\u0001\\u001f\xc3\xa9\"");
	vmst_buf_free(&b);
}

static void test_invalid(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"", " ", "{", "[", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "{\"a\":1}}", "01",
		"1.", ".5", "-", "1e", "+1", "0x10", "tru", "nul", "True", "\"abc", "\"a\nb\"",
		"\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"",
		"\"\xff\"", "\"\xc3\"", "\"\xe2\x82\"", "\"\xf5\x80\x80\x80\"", "\"\xe0\x80\x80\"",
		"{\"a\":1,\"a\":2}", "[1] [2]", "'a'", "[1 2]", "{\"a\\u0000\":1}", "NaN", "Infinity",
		"123456789012345678901234567890123456789012345678901234567890123456789",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct vmst_json v;
		char why[128];
		if (vmst_json_parse(bad[i], strlen(bad[i]), &v, why, sizeof why) == 0)
			fail_msg("'%s' accepted", bad[i]);
		assert_true(why[0] != '\0');
		assert_int_equal(v.type, VMST_JSON_NULL);
	}
	/* depth: 32 levels pass, 33 do not */
	char deep[80];
	memset(deep, '[', 32);
	memset(deep + 32, ']', 32);
	struct vmst_json v;
	char why[128];
	assert_int_equal(vmst_json_parse(deep, 64, &v, why, sizeof why), 0);
	vmst_json_free(&v);
	memset(deep, '[', 33);
	memset(deep + 33, ']', 33);
	assert_int_equal(vmst_json_parse(deep, 66, &v, why, sizeof why), -1);
	/* the length bounds the parse: no reading past it */
	assert_int_equal(vmst_json_parse("[1]xyz", 3, &v, why, sizeof why), 0);
	vmst_json_free(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_invalid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
