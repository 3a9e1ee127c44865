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

/* Large objects: 200,000 distinct keys are accepted, and one duplicate among them is found
 * wherever it is (first against last, or two neighbours in the middle), also among keys that
 * share a long prefix. The count of values is bounded. */
static char *object_of(size_t n, const char *fmt, size_t dup_a, size_t dup_b)
{
	size_t cap = n * 48 + 16, len = 0;
	char *t = malloc(cap);
	assert_non_null(t);
	t[len++] = '{';
	for (size_t i = 0; i < n; i++) {
		size_t k = i == dup_b ? dup_a : i;
		len += (size_t)snprintf(t + len, cap - len, i ? ",\"" : "\"");
		len += (size_t)snprintf(t + len, cap - len, fmt, k);
		len += (size_t)snprintf(t + len, cap - len, "\":%zu", i);
	}
	t[len++] = '}';
	t[len] = 0;
	return t;
}

static void test_many_keys(void **state)
{
	(void)state;
	static const char *const fmts[] = { "k%zu", "a-long-common-prefix-of-keys-%08zu" };
	for (size_t f = 0; f < 2; f++) {
		struct vmst_json v;
		char why[128];
		char *t = object_of(200000, fmts[f], 0, SIZE_MAX);
		assert_int_equal(vmst_json_parse(t, strlen(t), &v, why, sizeof why), 0);
		assert_int_equal(v.n, 200000);
		if (f == 0)
			assert_non_null(vmst_json_get(&v, "k199999"));
		vmst_json_free(&v);
		free(t);
		const size_t dups[][2] = { { 0, 199999 }, { 100000, 100001 } };
		for (size_t d = 0; d < 2; d++) {
			t = object_of(200000, fmts[f], dups[d][0], dups[d][1]);
			assert_int_equal(vmst_json_parse(t, strlen(t), &v, why, sizeof why), -1);
			assert_string_equal(why, "duplicate key in object");
			free(t);
		}
	}
	/* [0,0,...] with VMST_JSON_MAX_VALUES elements is one value more (the array itself) than
	 * allowed: refused; with one element fewer it passes */
	size_t n = VMST_JSON_MAX_VALUES;
	char *t = malloc(2 * n + 2);
	assert_non_null(t);
	t[0] = '[';
	for (size_t i = 0; i < n; i++)
		memcpy(t + 1 + 2 * i, i + 1 < n ? "0," : "0]", 2);
	struct vmst_json v;
	char why[128];
	assert_int_equal(vmst_json_parse(t, 2 * n + 1, &v, why, sizeof why), -1);
	assert_string_equal(why, "too many values");
	memcpy(t + 1 + 2 * (n - 2), "0]", 2);
	assert_int_equal(vmst_json_parse(t, 2 * (n - 1) + 1, &v, why, sizeof why), 0);
	assert_int_equal(v.n, n - 1);
	vmst_json_free(&v);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_many_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
