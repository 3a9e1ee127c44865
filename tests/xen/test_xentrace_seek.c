/* Checkpoints of the xentrace reader (issue 21, lib/input/xentrace/xentrace_seek.c), at 1
 * and 2 threads (VMS_XENTRACE_POOL_MIN=0: the worker pool decodes the small files too), on
 * ../shared/traces/xen/xentrace.bin (8 CPUs, 187 blocks) and on a file made here by the
 * independent writer (xt_writer.h): 3 CPUs in 240 interleaved blocks (several marks of the
 * reader apart), records without TSC, switches whose next vCPU is the record after them,
 * VMEXIT/VMENTRY, scheduler internals, and lost-records markers (whose LOST_END event is no
 * record); also that file cut inside its last block. Each stream is read whole with tell()
 * after many events (all those around lost records) and before any; then, in a shuffled
 * order on the same source and once on a source opened afresh, seek to each position: the
 * next event is the one told and the events after it to the end (every field, the strings
 * by their text, format_event's text, the final status) are those of the uninterrupted
 * read, and telling again gives the same words (tests/common/seek_check.h). The same through
 * the merge's marks (tests/common/merge_seek.h); and skip_unread turned on after a seek (the
 * pool's workers having decoded ahead without it) gives what reading alone gives. Then
 * hostile positions (random words,
 * mid-record, another CPU's record, past the end, the wrong stream, state words the file
 * contradicts): each an error naming the file, the stream failing until a good seek, never
 * a crash (ASan). */
#include <unistd.h>

#include "merge_seek.h"
#include "pool_digest.h"
#include "seek_check.h"
#include "vmscope/xentrace.h"
#include "xt_writer.h"

void vms_xentrace_counters(const struct vms_source *src, uint64_t *decoded, bool *pooled);

/* the flag of w[0] that says the LOST_END after lost records was returned last (the
 * reader's XT_AT_LOST_END << 1, xentrace_seek.c) */
#define LOST_END_FLAG (8u << 1)

static char made[4200], cut[4200];

static struct vms_source *open_at(const char *trace, unsigned threads)
{
	return vms_test_open_pooled(trace, threads, vms_xentrace_counters);
}

/* an event and its text */
static uint64_t digest(struct vms_source *src, uint32_t stream, const struct vms_event *ev)
{
	char text[512];
	assert_true(src->ops->format_event(src, stream, text, sizeof text) >= 0);
	uint64_t h = vms_test_mix_event(1469598103934665603ull, ev);
	return vms_test_mix(h, text, strlen(text));
}

struct taking {
	uint64_t seed, one_in;
};

/* the first three events, every one around lost records, pseudo-random others */
static bool take(void *ctx, uint64_t k, const struct vms_event *ev,
		 const struct vms_stream_pos *pos, const struct vms_stream_pos *prev)
{
	struct taking *t = ctx;
	(void)pos;
	(void)prev;
	t->seed = t->seed * 6364136223846793005ull + 1442695040888963407ull;
	return k <= 2 || ev->flags & VMS_EVF_LOST_BEFORE || ev->type == VMS_XEN_T_LOST_RECORDS ||
	       ev->type == VMS_XEN_T_LOST_END || (t->seed >> 33) % t->one_in == 0;
}

static void check_file(const char *path, uint64_t one_in)
{
	static struct vms_seek_ref r;
	for (unsigned threads = 1; threads <= 2; threads++) {
		struct vms_source *src = open_at(path, threads);
		uint32_t n = src->ops->nr_streams(src);
		assert_true(n > 0);
		uint32_t total = 0;
		for (uint32_t st = 0; st < n; st++) {
			struct taking t = { 5 + st, one_in };
			vms_seek_reference(src, st, &r, digest, take, &t);
			vms_seek_shuffle(&r, 31 + st);
			for (uint32_t i = 0; i < r.nck; i++)
				vms_seek_check_from(src, st, &r, &r.ck[i], digest);
			struct vms_source *fresh = open_at(path, threads);
			vms_seek_check_from(fresh, st, &r, &r.ck[r.nck / 2], digest);
			vms_source_close(fresh);
			total += r.nck;
			free(r.h);
		}
		/* a rewind after seeks: from the start again, as at open */
		struct vms_source *ref = open_at(path, threads);
		assert_int_equal(src->ops->rewind(src), 0);
		struct vms_event a, b;
		for (uint32_t st = 0; st < n; st++) {
			int ra, rb;
			do {
				ra = src->ops->next(src, st, &a);
				uint64_t da = ra == 1 ? digest(src, st, &a) : 0;
				rb = ref->ops->next(ref, st, &b);
				uint64_t db = rb == 1 ? digest(ref, st, &b) : 0;
				assert_int_equal(ra, rb);
				assert_true(da == db);
			} while (ra == 1);
		}
		vms_source_close(ref);
		vms_source_close(src);
		print_message("# %s at %u threads: %u checkpoints\n", path, threads, total);
	}
	vms_pool_set_threads(0);
}

/* The made file: 3 CPUs, 240 blocks taken in turn; d1v0..d1v3 switched on and off, each
 * switch's next vCPU the record after it most of the time, HVM records between, lost
 * records every 37th block. */
static void write_made(const char *path)
{
	static struct xtw w;
	memset(&w, 0, sizeof w);
	uint64_t tsc[3] = { 1000, 1003, 1007 }, seed = 11;
	uint32_t run[3] = { 0, 1, 2 }; /* the vCPU running on each CPU */
	for (uint32_t b = 0; b < 240; b++) {
		uint32_t cpu = b % 3;
		xtw_block(&w, cpu);
		if (b % 37 == 36) {
			xtw_lost(&w, tsc[cpu] + 5, 3 + b % 5, 1, run[cpu], tsc[cpu] + 1);
			tsc[cpu] += 10;
		}
		for (uint32_t i = 0; i < 6; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			uint32_t x = (uint32_t)(seed >> 40);
			tsc[cpu] += 1 + x % 50;
			switch (x % 6) {
			case 0: { /* a switch: away, then (mostly right after) the next one in */
				uint32_t next = (run[cpu] + 1 + x % 3) % 4;
				xtw_runstate(&w, tsc[cpu], 1, run[cpu], VMS_XEN_RUNNING,
					     x % 2 ? VMS_XEN_RUNNABLE : VMS_XEN_BLOCKED);
				if (x % 5 == 0)
					xtw_rec(&w, 0x00022001u, 0, 1, &next); /* a scheduler's own */
				xtw_runstate(&w, x % 7 ? 0 : tsc[cpu] + 1, 1, next, VMS_XEN_RUNNABLE,
					     VMS_XEN_RUNNING);
				run[cpu] = next;
				break;
			}
			case 1: xtw_vmexit64(&w, tsc[cpu], 30 + x % 20, 0xffffffff81000000ull + x); break;
			case 2: xtw_vmentry(&w, x % 3 ? tsc[cpu] : 0); break;
			case 3: xtw_rec(&w, 0x00082013u, x % 2 ? tsc[cpu] : 0, 0, NULL); break;
			case 4: xtw_rec(&w, 0x0002200eu, tsc[cpu], 2, (uint32_t[]){ x, cpu }); break;
			default: xtw_runstate(&w, tsc[cpu], 1, (run[cpu] + 2) % 4, VMS_XEN_BLOCKED,
					      VMS_XEN_RUNNABLE);
			}
		}
	}
	assert_true(w.len < sizeof w.buf);
	assert_int_equal(xtw_save(&w, path, 0), 0);
	/* the same cut in the middle of its last block (10 bytes into a record) */
	assert_int_equal(xtw_save(&w, cut, w.len - 14), 0);
}

static void test_shared(void **state)
{
	(void)state;
	const char *trace = vms_test_trace("xen/xentrace.bin");
	if (access(trace, R_OK) != 0)
		skip();
	check_file(trace, 2500);
}

static void test_made(void **state)
{
	(void)state;
	check_file(made, 20);
}

static void test_cut(void **state)
{
	(void)state;
	check_file(cut, 20);
}

static struct vms_source *open_plain(const char *path, struct vms_error *err)
{
	return vms_source_open(path, err);
}

/* Through the merge (tests/common/merge_seek.h, as for trace.dat, CTF and simpletrace): its
 * marks serialised, read back into a fresh source and merge, at 1 and 2 threads. */
static void test_merge(void **state)
{
	(void)state;
	const char *trace = vms_test_trace("xen/xentrace.bin");
	for (unsigned t = 1; t <= 2; t++) {
		vms_pool_set_threads(t);
		struct merge_run r = { .paths = { made }, .n = 1, .open = open_plain };
		merge_seek_check(&r);
		if (access(trace, R_OK) == 0) {
			struct merge_run s = { .paths = { trace }, .n = 1, .open = open_plain };
			merge_seek_check(&s);
		}
	}
	vms_pool_set_threads(0);
}

/* After a seek, events taken, then skip_unread turned on (the workers had decoded ahead
 * without it: the stream is decoded again from the position sought, not from its start):
 * the events and the counts of what is left out are those of reading alone. */
struct skipped {
	uint64_t h, n, total, counts[VMS_XEN_T_COUNT];
};

static struct skipped seek_then_skip(const char *path, unsigned threads, uint32_t st)
{
	struct vms_source *src = open_at(path, threads);
	struct vms_event ev;
	struct vms_stream_pos p;
	for (int k = 0; k < 300; k++)
		assert_int_equal(src->ops->next(src, st, &ev), 1);
	assert_int_equal(vms_source_tell(src, st, &p), 0);
	assert_int_equal(src->ops->rewind(src), 0);
	assert_int_equal(vms_source_seek(src, st, &p), 0);
	struct skipped s = { .h = 1469598103934665603ull };
	for (int k = 0; k < 200; k++) {
		assert_int_equal(src->ops->next(src, st, &ev), 1);
		s.h = vms_test_mix(s.h, &(uint64_t){ digest(src, st, &ev) }, 8);
	}
	src->ops->skip_unread(src, s.counts, &s.total);
	while (src->ops->next(src, st, &ev) == 1) {
		s.h = vms_test_mix(s.h, &(uint64_t){ digest(src, st, &ev) }, 8);
		s.n++;
	}
	src->ops->skip_unread(src, NULL, NULL);
	vms_source_close(src);
	return s;
}

static void test_seek_then_skip(void **state)
{
	(void)state;
	const char *trace = vms_test_trace("xen/xentrace.bin");
	if (access(trace, R_OK) != 0)
		skip();
	for (uint32_t st = 0; st < 8; st += 3) {
		struct skipped a = seek_then_skip(trace, 1, st), b = seek_then_skip(trace, 2, st);
		assert_true(a.total > 0); /* (some were left out) */
		assert_true(a.h == b.h);
		assert_int_equal(a.n, b.n);
		assert_int_equal(a.total, b.total);
		assert_memory_equal(a.counts, b.counts, sizeof a.counts);
	}
	vms_pool_set_threads(0);
}

static void expect_bad(struct vms_source *src, uint32_t st, const struct vms_stream_pos *p,
		       const char *path)
{
	vms_error_clear(&src->err);
	assert_true(vms_source_seek(src, st, p) < 0);
	assert_true(src->err.status < 0);
	assert_non_null(strstr(src->err.msg, path));
	struct vms_event ev;
	vms_error_clear(&src->err);
	assert_true(src->ops->next(src, st, &ev) < 0); /* fails until a good seek */
	assert_non_null(strstr(src->err.msg, path));
}

/* the position after the first event of stream st with the flags `want` (0: the 40th) */
static bool find(struct vms_source *src, uint32_t st, uint32_t type, struct vms_stream_pos *p,
		 struct vms_event *got)
{
	assert_int_equal(src->ops->rewind(src), 0);
	struct vms_event ev;
	for (uint32_t k = 0; src->ops->next(src, st, &ev) == 1; k++)
		if (type == UINT32_MAX ? k == 40 : ev.type == type) {
			assert_int_equal(vms_source_tell(src, st, p), 0);
			*got = ev;
			return true;
		}
	return false;
}

static void hostile(const char *path, unsigned threads)
{
	struct vms_source *src = open_at(path, threads);
	struct vms_event ev, want;
	struct vms_stream_pos good, other, p;
	assert_true(find(src, 0, UINT32_MAX, &good, &want));
	assert_true(find(src, 1, UINT32_MAX, &other, &ev));
	struct {
		int word;
		uint64_t val;
	} bad[] = {
		{ 0, 0 },                         /* not a xentrace position */
		{ 0, good.w[0] | 0x80 },          /* unknown flag */
		{ 0, good.w[0] & ~1ull },         /* the start, with a place */
		{ 0, good.w[0] + (1ull << 8) },   /* another stream's number */
		{ 1, good.w[1] + 2 },             /* inside the record */
		{ 1, good.w[1] + 1 },
		{ 1, good.w[1] - 2 },
		{ 1, 0 },                         /* the first block's header */
		{ 1, 4 },
		{ 1, other.w[1] },                /* CPU 1's record */
		{ 1, UINT64_MAX },                /* past the end */
		{ 1, UINT64_MAX - 8 },
		{ 3, UINT32_MAX - 5 },            /* a thread no CPU runs */
		{ 3, 1ull << 32 },
		{ 5, 1 },                         /* a word that must be 0 */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		p = good;
		p.w[bad[i].word] = bad[i].val;
		expect_bad(src, 0, &p, path);
	}
	/* the other stream's position on this one */
	expect_bad(src, 0, &other, path);
	/* a lost-records end after a record that is not lost records */
	p = good;
	p.w[0] |= LOST_END_FLAG;
	expect_bad(src, 0, &p, path);
	/* garbage: random words, with and without the tag, offsets near the good one */
	uint64_t seed = 7;
	for (int i = 0; i < 6000; i++) {
		for (int w = 0; w < VMS_POS_WORDS; w++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			p.w[w] = seed ^ (seed >> 29);
		}
		if (i % 3) {
			p.w[0] = (good.w[0] & ~0xffull) | (p.w[0] & 0x1f);
			for (int w = 4; w < VMS_POS_WORDS; w++)
				p.w[w] = 0;
			p.w[1] = good.w[1] + (p.w[1] % 4096) - 2048;
			p.w[2] = i % 3 == 2 ? good.w[2] : p.w[2];
			p.w[3] = i % 3 == 2 ? good.w[3] : (uint32_t)p.w[3];
		}
		vms_error_clear(&src->err);
		if (vms_source_seek(src, 0, &p) == 0) {
			/* it named a record of the CPU with a state its block allows: readable */
			while (src->ops->next(src, 0, &ev) == 1)
				;
		} else {
			assert_non_null(strstr(src->err.msg, path));
		}
	}
	/* no such stream */
	assert_true(vms_source_seek(src, src->ops->nr_streams(src), &good) < 0);
	/* the good one, after all that */
	vms_error_clear(&src->err);
	assert_int_equal(vms_source_seek(src, 0, &good), 0);
	assert_int_equal(src->ops->next(src, 0, &ev), 1);
	assert_int_equal(ev.ts, want.ts);
	assert_int_equal(ev.type, want.type);
	vms_source_close(src);
}

static void test_hostile(void **state)
{
	(void)state;
	const char *trace = vms_test_trace("xen/xentrace.bin");
	for (unsigned t = 1; t <= 2; t++) {
		hostile(made, t);
		hostile(cut, t);
		if (access(trace, R_OK) == 0)
			hostile(trace, t);
	}
	vms_pool_set_threads(0);
}

static int group_setup(void **state)
{
	(void)state;
	const char *dir = vms_test_tmpdir("xentrace-seek");
	snprintf(made, sizeof made, "%s/made.bin", dir);
	snprintf(cut, sizeof cut, "%s/cut.bin", dir);
	write_made(made);
	return 0;
}

int main(void)
{
	setenv("VMS_XENTRACE_POOL_MIN", "0", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_made),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_shared),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_seek_then_skip),
		cmocka_unit_test(test_hostile),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
