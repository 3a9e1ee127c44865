/* The ring-buffer page encoder against libtraceevent's kbuffer, an independent decoder (the one
 * trace-cmd uses): timestamps (with time extends), payload lengths and bytes must come back as
 * written. Expected values are the test's own inputs. */
#include "testutil.h"

#include <traceevent/kbuffer.h>

#include "output/rb_page.h"

#define PAGE 4096

struct ev {
	uint64_t ts;
	uint32_t len;
	uint8_t fill;
};

/* Encode `evs` into as many pages as needed; decode every page with kbuffer and compare. */
static void roundtrip(const struct ev *evs, size_t n, size_t *pages_out)
{
	static uint8_t pages[64][PAGE];
	size_t np = 0, first_on_page[64];
	struct vms_rb_page p;
	uint8_t payload[256];
	vms_rb_page_start(&p, pages[0], PAGE);
	first_on_page[0] = 0;
	for (size_t i = 0; i < n; i++) {
		memset(payload, evs[i].fill, sizeof payload);
		if (!vms_rb_page_add(&p, evs[i].ts, payload, evs[i].len)) {
			vms_rb_page_finish(&p);
			np++;
			assert_true(np < 64);
			vms_rb_page_start(&p, pages[np], PAGE);
			first_on_page[np] = i;
			assert_true(vms_rb_page_add(&p, evs[i].ts, payload, evs[i].len));
		}
	}
	vms_rb_page_finish(&p);
	np++;

	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	assert_non_null(kb);
	size_t i = 0;
	for (size_t pg = 0; pg < np; pg++) {
		assert_int_equal(i, first_on_page[pg]);
		assert_int_equal(kbuffer_load_subbuffer(kb, pages[pg]), 0);
		unsigned long long ts;
		void *data = kbuffer_read_event(kb, &ts);
		while (data) {
			assert_true(i < n);
			assert_int_equal(ts, evs[i].ts);
			/* kbuffer reports the padded length */
			assert_int_equal(kbuffer_event_size(kb), (evs[i].len + 3) & ~3u);
			for (uint32_t b = 0; b < evs[i].len; b++)
				assert_int_equal(((uint8_t *)data)[b], evs[i].fill);
			i++;
			data = kbuffer_next_event(kb, &ts);
		}
	}
	assert_int_equal(i, n);
	kbuffer_free(kb);
	*pages_out = np;
}

static void test_small_deltas(void **state)
{
	(void)state;
	struct ev evs[200];
	uint64_t t = 1000000;
	for (int i = 0; i < 200; i++) {
		t += (uint64_t)(i * 37 % 1000);
		evs[i] = (struct ev){ t, 64, (uint8_t)i };
	}
	size_t np;
	roundtrip(evs, 200, &np);
	/* 200 events of 68 bytes: 60 per page of 4080 bytes */
	assert_int_equal(np, 4);
}

static void test_time_extend(void **state)
{
	(void)state;
	/* deltas around and far above the 27-bit limit (134217727) */
	const uint64_t deltas[] = { 0, 1, 134217727, 134217728, 134217729, 5000000000ull,
				    1ull << 40, 3, (1ull << 27) * 12345 + 17 };
	struct ev evs[9];
	uint64_t t = 11663083989696ull;
	for (int i = 0; i < 9; i++) {
		t += deltas[i];
		evs[i] = (struct ev){ t, 36, (uint8_t)(0x40 + i) };
	}
	size_t np;
	roundtrip(evs, 9, &np);
	assert_int_equal(np, 1);
}

static void test_lengths(void **state)
{
	(void)state;
	/* odd lengths are padded; above 112 bytes the length moves to the array word */
	const uint32_t lens[] = { 4, 5, 36, 40, 64, 72, 111, 112, 113, 200, 250 };
	struct ev evs[11];
	for (int i = 0; i < 11; i++)
		evs[i] = (struct ev){ 500 + (uint64_t)i * 10, lens[i], (uint8_t)(0x10 + i) };
	size_t np;
	roundtrip(evs, 11, &np);
	assert_int_equal(np, 1);
}

static void test_page_full(void **state)
{
	(void)state;
	/* 60 x 68 bytes = 4080: exactly one full page, the 61st starts the next */
	struct ev evs[61];
	for (int i = 0; i < 61; i++)
		evs[i] = (struct ev){ 100 + (uint64_t)i, 64, (uint8_t)i };
	size_t np;
	roundtrip(evs, 60, &np);
	assert_int_equal(np, 1);
	roundtrip(evs, 61, &np);
	assert_int_equal(np, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_deltas),
		cmocka_unit_test(test_time_extend),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_page_full),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
