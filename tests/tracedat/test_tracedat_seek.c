/* Checkpoints of the trace.dat reader and the merge (issue 21): the merge's marks (every
 * stream's source position, lib/input/tracedat/tracedat_seek.c) taken after event k for many
 * k, serialised to bytes, read back into a fresh source and merge: the events after k (cpu,
 * time stamp, type, kind, tid, flags, decoded fields, merged order across streams and
 * sources, and for the first TEXTS events the text libtraceevent renders from the record's
 * bytes) equal the uninterrupted read's. Expected values come from that uninterrupted read
 * of the same files (the reader's counts themselves are checked against trace-cmd report in
 * test_tracedat_local/kvm). Traces: ../shared/traces/local/sched-syscalls-2cpu.dat (v7 zstd,
 * at 1 and 2 threads: the worker pool's prefetch restarts at the sought chunk) and the
 * kvm-hip24 host + guest pair (v7 zlib) merged, a synthesized pair uncompressed and zstd. Also hostile positions, rejected with an error. */
#include "td_testutil.h"

#include "core/merge.h"
#include "core/pool.h"

#define MAX_CK 48
#define MAX_ST 64
#define WINDOW 30000 /* events compared after each checkpoint (ASan: the whole rest is slow) */
#define TEXTS 16 /* events after each checkpoint whose text (libtraceevent's) is compared */
#define MARK_BYTES (1 + 8 * VMS_POS_WORDS)

struct ck {
	uint64_t k;          /* the checkpoint is after event k (0-based) */
	uint64_t last_t;
	uint32_t nr;
	uint8_t bytes[MAX_ST][MARK_BYTES]; /* serialised marks */
	uint64_t text[TEXTS];  /* hashes of the next events' format_event text */
	uint32_t nr_text;
};

static uint64_t text_hash(struct vms_source *src, const struct vms_event *ev)
{
	char buf[1024];
	assert_int_equal(src->ops->format_event(src, ev->stream, buf, sizeof buf), 0);
	assert_true(buf[0] != '\0');
	uint64_t h = 1469598103934665603ull;
	for (const char *p = buf; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	return h;
}

static uint64_t ev_hash(const struct vms_event *ev, uint64_t t)
{
	uint64_t v[] = { ev->machine, ev->stream, ev->cpu, ev->ts, ev->type, ev->kind,
			 (uint64_t)(int64_t)ev->tid, ev->flags, ev->f[0],
			 ev->f[1], ev->f[2], ev->f[3], ev->f[4], t };
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		h = (h ^ v[i]) * 1099511628211ull, h ^= h >> 29;
	return h;
}

static void put_mark(uint8_t *b, const struct vms_merge_mark *mk)
{
	b[0] = mk->state;
	for (int i = 0; i < VMS_POS_WORDS; i++)
		for (int j = 0; j < 8; j++)
			b[1 + 8 * i + j] = (uint8_t)(mk->pos.w[i] >> (8 * j));
}

static void get_mark(const uint8_t *b, struct vms_merge_mark *mk)
{
	memset(mk, 0, sizeof *mk);
	mk->state = b[0];
	for (int i = 0; i < VMS_POS_WORDS; i++)
		for (int j = 0; j < 8; j++)
			mk->pos.w[i] |= (uint64_t)b[1 + 8 * i + j] << (8 * j);
}

struct run {
	const char *paths[2];
	uint32_t n;
	struct vms_source *src[2];
	struct vms_clock clk[2];
	const struct vms_clock *cl[2];
};

static void run_open(struct run *r)
{
	for (uint32_t i = 0; i < r->n; i++) {
		struct vms_error err = { 0 };
		r->src[i] = vms_tracedat_open(r->paths[i], &err);
		if (!r->src[i])
			fail_msg("%s", err.msg);
		vms_clock_init(&r->clk[i]);
		r->cl[i] = &r->clk[i];
	}
}

static void run_close(struct run *r)
{
	for (uint32_t i = 0; i < r->n; i++)
		vms_source_close(r->src[i]);
}

/* The uninterrupted read: every event's hash, and checkpoints at k = 0, 1, 2, the first
 * events after the first chunk and page changes of any stream, pseudo-random k, the last. */
static uint64_t *reference(struct run *r, struct ck *cks, uint32_t *nck, uint64_t *total)
{
	run_open(r);
	struct vms_error err = { 0 };
	struct vms_merge m;
	assert_int_equal(vms_merge_init(&m, r->src, r->cl, r->n, &err), 0);
	assert_true(m.nr_streams <= MAX_ST);
	size_t cap = 1 << 16;
	uint64_t *h = malloc(cap * sizeof *h);
	assert_non_null(h);
	const struct vms_event *ev = NULL;
	uint64_t t, k = 0, seed = 12345;
	struct vms_merge_mark mk[MAX_ST], prev[MAX_ST];
	uint32_t chunk_changes = 0, page_changes = 0;
	memset(prev, 0, sizeof prev);
	*nck = 0;
	while (vms_merge_next(&m, &ev, &t) > 0) {
		if (k == cap) {
			cap *= 2;
			h = realloc(h, cap * sizeof *h);
			assert_non_null(h);
		}
		h[k] = ev_hash(ev, t);
		for (uint32_t i = 0; i < *nck; i++)
			if (cks[i].nr_text < TEXTS && k > cks[i].k)
				cks[i].text[cks[i].nr_text++] = text_hash(r->src[ev->machine], ev);
		assert_int_equal(vms_merge_tell(&m, mk), 0);
		bool chunk = false, page = false;
		for (uint32_t s = 0; k > 0 && s < m.nr_streams; s++) {
			chunk |= mk[s].pos.w[1] != prev[s].pos.w[1] && prev[s].pos.w[0];
			page |= mk[s].pos.w[2] != prev[s].pos.w[2] && prev[s].pos.w[0];
		}
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		bool take = k <= 2 || (chunk && chunk_changes++ < 4) || (page && page_changes++ < 4)
			|| (seed >> 54) == 0;
		if (take && *nck < MAX_CK - 1) {
			struct ck *c = &cks[(*nck)++];
			c->k = k;
			c->last_t = m.last_t;
			c->nr = m.nr_streams;
			c->nr_text = 0;
			for (uint32_t s = 0; s < m.nr_streams; s++)
				put_mark(c->bytes[s], &mk[s]);
		}
		memcpy(prev, mk, sizeof prev);
		k++;
	}
	assert_int_equal(err.status, 0);
	/* the last event: a checkpoint after which nothing follows */
	struct ck *c = &cks[(*nck)++];
	c->k = k - 1;
	c->nr_text = 0;
	c->last_t = m.last_t;
	c->nr = m.nr_streams;
	for (uint32_t s = 0; s < m.nr_streams; s++)
		put_mark(c->bytes[s], &prev[s]);
	vms_merge_free(&m);
	run_close(r);
	*total = k;
	assert_true(chunk_changes > 0 || page_changes > 0);
	return h;
}

/* A fresh source and merge from checkpoint c: the next events are the reference's. */
static void replay(struct run *r, const struct ck *c, const uint64_t *h, uint64_t total,
		   uint64_t window)
{
	run_open(r);
	struct vms_merge_mark mk[MAX_ST];
	for (uint32_t s = 0; s < c->nr; s++)
		get_mark(c->bytes[s], &mk[s]);
	struct vms_error err = { 0 };
	struct vms_merge m;
	int rc = vms_merge_restart(&m, r->src, r->cl, r->n, mk, c->nr, c->last_t, &err);
	if (rc != 0)
		fail_msg("k=%" PRIu64 ": %s", c->k, err.msg);
	const struct vms_event *ev = NULL;
	uint64_t t, k = c->k + 1, end = window && c->k + 1 + window < total ? c->k + 1 + window
					: total;
	for (; k < end; k++) {
		assert_int_equal(vms_merge_next(&m, &ev, &t), 1);
		if (ev_hash(ev, t) != h[k])
			fail_msg("checkpoint after %" PRIu64 ": event %" PRIu64 " differs (stream %u "
				 "ts %" PRIu64 ")", c->k, k, ev->stream, ev->ts);
		if (k - c->k - 1 < c->nr_text && text_hash(r->src[ev->machine], ev) !=
		    c->text[k - c->k - 1])
			fail_msg("checkpoint after %" PRIu64 ": event %" PRIu64 "'s text differs",
				 c->k, k);
	}
	if (end == total)
		assert_int_equal(vms_merge_next(&m, &ev, &t), 0);
	vms_merge_free(&m);
	run_close(r);
}

static void check_all(struct run *r)
{
	static struct ck cks[MAX_CK];
	uint32_t nck;
	uint64_t total;
	uint64_t *h = reference(r, cks, &nck, &total);
	assert_true(nck >= 8);
	assert_int_equal(cks[0].nr_text, TEXTS);
	for (uint32_t i = 0; i < nck; i++)
		replay(r, &cks[i], h, total, i == 1 ? 0 : WINDOW); /* after event 1: all the rest */
	free(h);
}

static void test_local_threads(void **state)
{
	(void)state;
	VMS_REQUIRE_TRACE(vms_test_trace("local/sched-syscalls-2cpu.dat"));
	for (unsigned th = 1; th <= 2; th++) {
		vms_pool_set_threads(th);
		struct run r = { .paths = { vms_test_trace("local/sched-syscalls-2cpu.dat") },
				 .n = 1 };
		check_all(&r);
	}
	vms_pool_set_threads(0);
}

static void test_kvm_pair(void **state)
{
	(void)state;
	VMS_REQUIRE_TRACE(vms_test_trace("kvm-hip24/host.dat"));
	char host[4096], guest[4096];
	snprintf(host, sizeof host, "%s", vms_test_trace("kvm-hip24/host.dat"));
	snprintf(guest, sizeof guest, "%s", vms_test_trace("kvm-hip24/guest-Salamander4.dat"));
	struct run r = { .paths = { host, guest }, .n = 2 };
	check_all(&r);
}

/* A synthesized host + guest pair (vmscope synth in a temporary directory), uncompressed (the
 * pages in place in the mapping) and zstd. */
static void synth_pair(const char *comp)
{
	char dir[] = "/tmp/vms-seek-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char cmd[8192];
	snprintf(cmd, sizeof cmd, "'%s/tools/vmscope/vmscope' synth --seed 21 --events 40000 "
		 "--compression %s --out '%s' >/dev/null", vms_test_build(), comp, dir);
	assert_int_equal(system(cmd), 0);
	char host[4096], guest[4096];
	snprintf(host, sizeof host, "%s/host.dat", dir);
	snprintf(guest, sizeof guest, "%s/guest.dat", dir);
	struct run r = { .paths = { host, guest }, .n = 2 };
	check_all(&r);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_synth_none(void **state)
{
	(void)state;
	synth_pair("none");
}

static void test_synth_zstd(void **state)
{
	(void)state;
	synth_pair("zstd");
}

/* Positions from a damaged index: each one an error, never a crash; a good one after. */
static void test_hostile(void **state)
{
	(void)state;
	const char *path = vms_test_trace("local/sched-syscalls-2cpu.dat");
	VMS_REQUIRE_TRACE(path);
	struct vms_error err = { 0 };
	struct vms_source *src = vms_tracedat_open(path, &err);
	assert_non_null(src);
	struct vms_event ev;
	for (int i = 0; i < 5000; i++)
		assert_int_equal(src->ops->next(src, 0, &ev), 1);
	uint64_t want_ts = ev.ts;
	struct vms_stream_pos good, p;
	assert_int_equal(vms_source_tell(src, 0, &good), 0);
	assert_true(good.w[0] != 0);
	struct { int word; uint64_t val; } bad[] = {
		{ 1, 1000000 },      /* chunk far past the stream's 1399 */
		{ 1, 1399 },         /* one past the last chunk */
		{ 3, 1u << 20 },     /* record offset past the page */
		{ 3, 2 },            /* not at a record word */
		{ 2, 1 },            /* page offset not at a page */
		{ 2, 1ull << 40 },   /* page offset past the chunk */
		{ 6, 0 },            /* page number 0 */
		{ 7, 2 },            /* lost flag neither 0 nor 1 */
		{ 0, 0 },            /* not a trace.dat position */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		p = good;
		p.w[bad[i].word] = bad[i].val;
		vms_error_clear(&src->err);
		assert_true(vms_source_seek(src, 0, &p) < 0);
		assert_true(src->err.status < 0);
		assert_non_null(strstr(src->err.msg, path));
		assert_true(src->ops->next(src, 0, &ev) < 0); /* the stream stays in error */
	}
	/* the position of stream 0 given to stream 1 */
	assert_true(vms_source_seek(src, 1, &good) < 0);
	vms_error_clear(&src->err);
	assert_int_equal(vms_source_seek(src, 0, &good), 0);
	assert_int_equal(src->ops->next(src, 0, &ev), 1);
	assert_int_equal(ev.ts, want_ts);
	/* a merge checkpoint for another number of streams */
	struct vms_clock c;
	vms_clock_init(&c);
	const struct vms_clock *cl = &c;
	struct vms_merge_mark mk[3] = { { .state = VMS_MARK_PENDING, .pos = good } };
	struct vms_merge m;
	assert_true(vms_merge_restart(&m, &src, &cl, 1, mk, 3, 0, &err) < 0);
	assert_non_null(strstr(err.msg, "3 streams for 2"));
	mk[1].state = 7;
	assert_true(vms_merge_restart(&m, &src, &cl, 1, mk, 2, 0, &err) < 0);
	vms_source_close(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_kvm_pair),
		cmocka_unit_test(test_synth_none),
		cmocka_unit_test(test_synth_zstd),
		cmocka_unit_test(test_local_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
