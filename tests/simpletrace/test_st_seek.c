/* Checkpoints of the simpletrace reader (issue 21, lib/input/simpletrace/seek.c), on files
 * of the independent writer (st_writer.h): the sample (st_sample.h), and a long file of
 * 30,000 events (several thousand records per sparse mark of the reader) with string and
 * integer arguments, ids mapped late and mapped again to another event, dropped-events
 * records, time going backwards, an undescribed event past the flat id table; also that
 * file with a damaged record after its events. The stream is read whole with tell() after
 * many events and before any; then, in a shuffled order on the same source and once on a
 * source opened afresh, seek to each position: the next event is the one told and the events
 * after it to the end (time, type, kind, pid, flags, fields, strings, format_event's text,
 * and the final status) are those of the uninterrupted read, and telling again gives the
 * same words. The same through the merge's marks. Then hostile positions: each an error
 * with the path, never a crash. */
#include <sys/stat.h>
#include <unistd.h>

#include "merge_seek.h"
#include "pool_digest.h"
#include "seek_check.h"
#include "vmscope/simpletrace.h"
#include "st_sample.h"

static char dir[8192], events_path[8400];

/* (up to four at a time) */
#define tmp_path(name) stw_tmp_path(dir, name)

static struct vms_source *open_st(const char *path)
{
	struct vms_error err = { 0 };
	struct vms_source *src = vms_simpletrace_open(path, events_path, &err);
	if (!src)
		fail_msg("open %s: %s", path, err.msg);
	return src;
}

/* an event and its text */
static uint64_t digest(struct vms_source *src, uint32_t stream, const struct vms_event *ev)
{
	char text[512];
	assert_true(src->ops->format_event(src, stream, text, sizeof text) >= 0);
	uint64_t h = vms_test_mix_event(1469598103934665603ull, ev);
	return vms_test_mix(h, text, strlen(text));
}

/* the first three events, some of those after lost events or time going back, random */
static bool take(void *ctx, uint64_t k, const struct vms_event *ev,
		 const struct vms_stream_pos *pos, const struct vms_stream_pos *prev)
{
	uint64_t *seed = ctx;
	(void)pos;
	(void)prev;
	*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
	return k <= 2 || (ev->flags & (VMS_EVF_LOST_BEFORE | VMS_EVF_TIME_BACKWARDS) &&
			  (*seed >> 60) == 0) || (*seed >> 54) == 0;
}

static uint32_t check_file(const char *path)
{
	struct vms_source *src = open_st(path);
	static struct vms_seek_ref r;
	uint64_t seed = 5;
	vms_seek_reference(src, 0, &r, digest, take, &seed);
	vms_seek_shuffle(&r, 31);
	for (uint32_t i = 0; i < r.nck; i++)
		vms_seek_check_from(src, 0, &r, &r.ck[i], digest);
	struct vms_source *fresh = open_st(path);
	vms_seek_check_from(fresh, 0, &r, &r.ck[r.nck / 2], digest);
	vms_source_close(fresh);
	/* a rewind after seeks: from the start again */
	assert_int_equal(src->ops->rewind(src), 0);
	struct vms_event ev;
	assert_int_equal(src->ops->next(src, 0, &ev), 1);
	assert_true(digest(src, 0, &ev) == r.h[0]);
	vms_source_close(src);
	free(r.h);
	return r.nck;
}

/* The long file: n events; damaged: a record of an unknown type after them. */
static void write_long(const char *path, bool damaged)
{
	struct stw w = { 0 };
	stw_header(&w);
	stw_mapping(&w, 0, "foo_start");
	stw_mapping(&w, 1, "bar_tick");
	stw_mapping(&w, 2, "baz_ptr");
	stw_mapping(&w, 3, "name_pair");
	stw_mapping(&w, 70000, "mystery_event");
	uint64_t ts = 1000, seed = 3;
	char s1[64], s2[64];
	uint64_t late = 100; /* ids mapped as the file goes: 100, 101, ... */
	for (uint32_t i = 0; i < 30000; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t x = (uint32_t)(seed >> 40);
		ts = x % 53 == 0 ? ts - x % 300 : ts + x % 1000; /* now and then backwards */
		if (i % 2000 == 1999)
			stw_mapping(&w, ++late, "bar_tick");
		if (i == 15000)
			stw_mapping(&w, 1, "baz_ptr"); /* id 1 means baz_ptr from here */
		if (x % 211 == 0) {
			stw_dropped(&w, ts, 42, x % 17 + 1);
			continue;
		}
		snprintf(s1, sizeof s1, "/tmp/disk%u.img", x % 1000);
		snprintf(s2, sizeof s2, "q%u", x % 7);
		struct stw_arg foo[] = { { NULL, x % 64 }, { s1, 0 }, { NULL, x } };
		struct stw_arg ptr[] = { { NULL, seed }, { NULL, x % 9 } };
		struct stw_arg pair[] = { { s2, 0 }, { s1, 0 } };
		struct stw_arg one[] = { { NULL, i } };
		switch (x % 6) {
		case 0: stw_event(&w, 0, ts, 42, foo, 3); break;
		case 1: stw_event(&w, 1, ts, 43, i < 15000 ? NULL : ptr, i < 15000 ? 0 : 2); break;
		case 2: stw_event(&w, 2, ts, 42, ptr, 2); break;
		case 3: stw_event(&w, 3, ts, 44, pair, 2); break;
		case 4: stw_event(&w, 70000, ts, 42, one, 1); break;
		default: stw_event(&w, late > 100 ? late : 2, ts, 45, late > 100 ? NULL : ptr,
				   late > 100 ? 0 : 2);
		}
	}
	if (damaged)
		stw_u64(&w, 7);
	assert_int_equal(stw_save(&w, path, w.len), 0);
	free(w.buf);
}

static void test_sample(void **state)
{
	(void)state;
	assert_int_equal(st_sample_save(tmp_path("sample.st")), 0);
	check_file(tmp_path("sample.st"));
}

static void test_long(void **state)
{
	(void)state;
	write_long(tmp_path("long.st"), false);
	uint32_t n = check_file(tmp_path("long.st"));
	print_message("# long.st: %u checkpoints\n", n);
}

static void test_long_damaged(void **state)
{
	(void)state;
	write_long(tmp_path("damaged.st"), true);
	check_file(tmp_path("damaged.st"));
}

static struct vms_source *open_with_events(const char *path, struct vms_error *err)
{
	return vms_simpletrace_open(path, events_path, err);
}

/* Through the merge (tests/common/merge_seek.h, as for trace.dat and CTF): its marks
 * serialised, read back into a fresh source and merge. */
static void test_merge(void **state)
{
	(void)state;
	write_long(tmp_path("merge.st"), false);
	struct merge_run r = { .paths = { tmp_path("merge.st") }, .n = 1,
			       .open = open_with_events };
	merge_seek_check(&r);
}

static void expect_bad(struct vms_source *src, const struct vms_stream_pos *p, const char *path)
{
	vms_error_clear(&src->err);
	assert_true(vms_source_seek(src, 0, p) < 0);
	assert_true(src->err.status < 0);
	assert_non_null(strstr(src->err.msg, path));
	struct vms_event ev;
	assert_true(src->ops->next(src, 0, &ev) < 0); /* fails until a good seek */
}

static void test_hostile(void **state)
{
	(void)state;
	const char *path = tmp_path("hostile.st");
	write_long(path, false);
	struct vms_source *src = open_st(path);
	struct vms_event ev;
	struct vms_stream_pos good, p;
	for (int i = 0; i < 5000; i++)
		assert_int_equal(src->ops->next(src, 0, &ev), 1);
	uint64_t want_ts = ev.ts;
	assert_int_equal(vms_source_tell(src, 0, &good), 0);
	assert_true(good.w[2] >= 5); /* mappings before it */
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	struct { int word; uint64_t val; } bad[] = {
		{ 0, 0 },                       /* not a simpletrace position */
		{ 0, good.w[0] | 0x80 },        /* unknown flag */
		{ 0, good.w[0] & ~1ull },       /* the start, with a place */
		{ 1, good.w[1] + 1 },           /* inside the record */
		{ 1, good.w[1] - 8 },
		{ 1, 16 },                      /* in the header */
		{ 1, 24 },                      /* the first record: a mapping */
		{ 1, (uint64_t)st.st_size },    /* past the end */
		{ 1, UINT64_MAX },
		{ 2, good.w[2] + 1 },           /* other mappings before it */
		{ 2, UINT64_MAX },
		{ 5, 1 },                       /* a word that must be 0 */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		p = good;
		p.w[bad[i].word] = bad[i].val;
		expect_bad(src, &p, path);
	}
	/* a previous time without a previous event */
	p = good;
	p.w[0] &= ~4ull;
	expect_bad(src, &p, path);
	/* garbage: random words, with and without the tag, offsets near the good one */
	uint64_t seed = 7;
	for (int i = 0; i < 5000; i++) {
		for (int w = 0; w < VMS_POS_WORDS; w++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			p.w[w] = seed ^ (seed >> 29);
		}
		if (i % 3) {
			p.w[0] = (good.w[0] & ~0xffull) | (p.w[0] & 7);
			for (int w = 4; w < VMS_POS_WORDS; w++)
				p.w[w] = 0;
			p.w[1] = good.w[1] + (p.w[1] % 4096) - 2048;
			if (i % 3 == 2)
				p.w[2] = good.w[2] + (p.w[2] & 1);
		}
		vms_error_clear(&src->err);
		if (vms_source_seek(src, 0, &p) == 0) {
			/* it named a real event record and the mappings before it: readable */
			while (src->ops->next(src, 0, &ev) == 1)
				;
		} else {
			assert_non_null(strstr(src->err.msg, path));
		}
	}
	/* no such stream */
	assert_true(vms_source_seek(src, 1, &good) < 0);
	/* the good one, after all that */
	vms_error_clear(&src->err);
	assert_int_equal(vms_source_seek(src, 0, &good), 0);
	assert_int_equal(src->ops->next(src, 0, &ev), 1);
	assert_int_equal(ev.ts, want_ts);
	vms_source_close(src);
}

static int group_setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "%s", vms_test_tmpdir("st-seek"));
	snprintf(events_path, sizeof events_path, "%s/trace-events", dir);
	FILE *f = fopen(events_path, "w");
	if (!f)
		return -1;
	fputs(st_sample_events, f);
	return fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample),
		cmocka_unit_test(test_long),
		cmocka_unit_test(test_long_damaged),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_merge),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
