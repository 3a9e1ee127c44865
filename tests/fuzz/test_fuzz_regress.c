/* Replays the committed fuzz regression inputs (tests/fuzz/regress/<format>/, each an input
 * that once made a reader crash, hang, leak or misbehave, see README.md) through the same
 * harness as the libFuzzer targets. The expected result is that nothing happens: the harness
 * aborts on a broken reader contract, and ASan/UBSan (CI runs the suite under them) on memory
 * errors and undefined behaviour. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "core/pool.h"
#include "fuzz_harness.h"

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay(const char *format, int (*fn)(const uint8_t *, size_t))
{
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/tests/fuzz/regress/%s", VMS_SOURCE_DIR, format);
	DIR *d = opendir(dir);
	if (!d) {
		print_message("# %s: no regression inputs\n", format);
		return;
	}
	char *names[1024];
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < 1024)
		if (e->d_name[0] != '.')
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof names[0], by_name);
	for (size_t i = 0; i < n; i++) {
		char p[8192];
		snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		FILE *f = fopen(p, "rb");
		assert_non_null(f);
		struct stat st;
		assert_int_equal(fstat(fileno(f), &st), 0);
		size_t len = (size_t)st.st_size;
		uint8_t *buf = malloc(len ? len : 1);
		assert_non_null(buf);
		assert_int_equal(fread(buf, 1, len, f), len);
		fclose(f);
		print_message("# %s/%s (%zu bytes)\n", format, names[i], len);
		assert_int_equal(fn(buf, len), 0);
		free(buf);
		free(names[i]);
	}
}

static void test_tracedat(void **state)
{
	(void)state;
	replay("tracedat", vms_fuzz_tracedat);
}

static void test_tcxml(void **state)
{
	(void)state;
	replay("tcxml", vms_fuzz_tcxml);
}

static void test_simpletrace(void **state)
{
	(void)state;
	replay("simpletrace", vms_fuzz_simpletrace);
}

static void test_ctf(void **state)
{
	(void)state;
	replay("ctf", vms_fuzz_ctf);
}

static void test_xentrace(void **state)
{
	(void)state;
	replay("xentrace", vms_fuzz_xentrace);
}

/* The same inputs with their streams decoded by the worker pool (xentrace_pool.c), which
 * they are too small for otherwise: 2 workers beside the reading thread. */
static void test_xentrace_pool(void **state)
{
	(void)state;
	setenv("VMS_XENTRACE_POOL_MIN", "0", 1);
	vms_pool_set_threads(3);
	replay("xentrace", vms_fuzz_xentrace);
	vms_pool_set_threads(0);
	unsetenv("VMS_XENTRACE_POOL_MIN");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tracedat),
		cmocka_unit_test(test_tcxml),
		cmocka_unit_test(test_simpletrace),
		cmocka_unit_test(test_ctf),
		cmocka_unit_test(test_xentrace),
		cmocka_unit_test(test_xentrace_pool),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
