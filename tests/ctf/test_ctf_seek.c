/* Checkpoints of the CTF reader (issue 21, lib/input/ctf/ctf_seek.c): each stream read whole
 * with tell() after many events (the first three, the first events of packets, events deep in
 * packets, pseudo-random ones, the last) and before any; then, in a shuffled order on the
 * same source (seeking backwards and forwards), and once on a source opened afresh, seek to
 * each position: the next event is the one told and the events after it to the end of the
 * stream (time, kind, type, CPU, tid, flags, fields, strings) are those of the uninterrupted
 * read, and telling again gives the same words. The expected values come from that
 * uninterrupted read (test_ctf_lttng.c checks the reader against babeltrace2).
 *
 * Traces: ../shared/traces/tcp-sync/scp_src and scp_dest (LTTng kernel, one stream file of
 * many packets each, timestamps not monotonic), the host of a synthesized LTTng pair (4
 * stream files, lib/synth), and a libvmstrace recording in small sub-buffers (many packets
 * of a fixed-layout header). At 1 and 2 threads (VMS_CTF_POOL_MIN=0: the worker pool decodes
 * ahead of the reader and seek must drop what it decoded). Also through the merge (its marks
 * serialised and restarted in fresh sources, as for trace.dat), set_wanted after a seek with
 * blocks decoded ahead (the pool replays from the position), and hostile positions: each an
 * error with the path in the message, the stream failing until a good seek, never a crash.
 * And tell and format_event with the pool, after every event and after the end, give the
 * words and text of reading alone (test_tell_as_alone; the pool keeps a packet's part of the
 * positions once per packet of a block), also on a recording of 1- to 8-event packets. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "merge_seek.h"
#include "pool_digest.h"
#include "seek_check.h"
#include "trace-qemu-style.h"
#include "vmscope/synth.h"

void vms_ctf_counters(const struct vms_source *src, uint64_t *decoded, bool *pooled);

static char synth_host[2100], synth_guest[2100], vmst_dir[2100], vmst_small[2100];

/* vmst_small's events: a multiple of the pool's blocks of 256 (one stream), so that its last
 * block is full and the end comes in a block of none */
#define SMALL_EVENTS (40 * 256)

/* VMS_THREADS_TEST_LIGHT=1 (ThreadSanitizer, scripts/test.sh): the pool at 2 threads only,
 * the second LTTng trace and its merge left out */
static unsigned first_threads(void)
{
	const char *e = getenv("VMS_THREADS_TEST_LIGHT");
	return e && !strcmp(e, "1") ? 2 : 1;
}

static uint64_t digest(struct vms_source *src, uint32_t stream, const struct vms_event *ev)
{
	(void)src;
	(void)stream;
	return vms_test_mix_event(1469598103934665603ull, ev);
}

static struct vms_source *open_at(const char *trace, unsigned threads)
{
	return vms_test_open_pooled(trace, threads, vms_ctf_counters);
}

struct picks {
	uint64_t seed;
	uint32_t pkt_starts, in_pkt; /* checkpoints at a packet's first event, and deep in one */
};

/* the first three events, the first events of packets, events deep in packets, random */
static bool take(void *ctx, uint64_t k, const struct vms_event *ev,
		 const struct vms_stream_pos *pos, const struct vms_stream_pos *prev)
{
	struct picks *pk = ctx;
	(void)ev;
	assert_true(pos->w[0] & 1); /* started */
	bool pkt_start = k > 0 && pos->w[2] == 0 && pos->w[1] != prev->w[1];
	bool deep = pos->w[2] >= 41 && (pos->w[2] % 41) == 0;
	pk->seed = pk->seed * 6364136223846793005ull + 1442695040888963407ull;
	if (k <= 2 || (pkt_start && pk->pkt_starts < 6) || (deep && pk->in_pkt < 6) ||
	    (pk->seed >> 55) == 0) {
		pk->pkt_starts += pkt_start;
		pk->in_pkt += deep;
		return true;
	}
	return false;
}

static void check_trace(const char *trace)
{
	uint32_t total_ck = 0, pkt_starts = 0, in_pkt = 0;
	for (unsigned t = first_threads(); t <= 2; t++) {
		struct vms_source *src = open_at(trace, t);
		uint32_t ns = src->ops->nr_streams(src);
		for (uint32_t s = 0; s < ns; s++) {
			static struct vms_seek_ref r;
			struct picks pk = { .seed = 2026 + s };
			vms_seek_reference(src, s, &r, digest, take, &pk);
			assert_int_equal(r.end, 0);
			vms_seek_shuffle(&r, 77 + s);
			for (uint32_t i = 0; i < r.nck; i++)
				vms_seek_check_from(src, s, &r, &r.ck[i], digest);
			/* a position kept (an index file) given to a source opened afresh */
			struct vms_source *fresh = open_at(trace, t);
			vms_seek_check_from(fresh, s, &r, &r.ck[r.nck / 2], digest);
			vms_source_close(fresh);
			total_ck += r.nck;
			pkt_starts += pk.pkt_starts;
			in_pkt += pk.in_pkt;
			free(r.h);
		}
		/* a rewind after seeks reads from the start again */
		assert_int_equal(src->ops->rewind(src), 0);
		struct vms_event ev;
		assert_int_equal(src->ops->next(src, 0, &ev), 1);
		vms_source_close(src);
	}
	print_message("# %s: %u checkpoints (%u at a packet's start, %u deep in one)\n", trace,
		      total_ck, pkt_starts, in_pkt);
	assert_true(pkt_starts > 0 && in_pkt > 0);
}

static void test_scp_src(void **state)
{
	(void)state;
	const char *trace = vms_test_trace("tcp-sync/scp_src");
	VMS_REQUIRE_TRACE(trace);
	check_trace(trace);
}

static void test_scp_dest(void **state)
{
	(void)state;
	const char *trace = vms_test_trace("tcp-sync/scp_dest");
	VMS_REQUIRE_TRACE(trace);
	if (first_threads() == 2)
		skip();
	check_trace(trace);
}

static void test_synth_host(void **state)
{
	(void)state;
	check_trace(synth_host);
}

static void test_vmstrace(void **state)
{
	(void)state;
	check_trace(vmst_dir);
}

/* One stream read to its end with tell() and format_event after every event and after the
 * end (pos[n], text[n]: those of the last event still). */
struct told {
	uint64_t n, packets;          /* events, and those first in their packet */
	struct vms_stream_pos *pos;
	uint64_t *text;               /* format_event's text, hashed */
};

static void tell_each(struct vms_source *src, uint32_t stream, struct told *t)
{
	uint64_t cap = 0;
	memset(t, 0, sizeof *t);
	int rc;
	for (;;) {
		if (t->n == cap) {
			cap = cap ? 2 * cap : 4096;
			t->pos = realloc(t->pos, cap * sizeof *t->pos);
			t->text = realloc(t->text, cap * sizeof *t->text);
			assert_true(t->pos && t->text);
		}
		struct vms_event ev;
		char buf[512];
		rc = src->ops->next(src, stream, &ev);
		assert_int_equal(vms_source_tell(src, stream, &t->pos[t->n]), 0);
		assert_int_equal(src->ops->format_event(src, stream, buf, sizeof buf), 0);
		t->text[t->n] = vms_test_mix(0, buf, strlen(buf));
		if (rc != 1)
			break;
		t->packets += t->pos[t->n].w[2] == 0;
		t->n++;
	}
	assert_int_equal(rc, 0);
	assert_true(t->n > 0);
	assert_memory_equal(&t->pos[t->n], &t->pos[t->n - 1], sizeof t->pos[0]);
}

/* With the pool (the packet's part of a position kept once per packet of a block, put
 * together when told), tell after every event and after the end gives the words reading
 * alone gives (whose positions test_scp_src and the others check by seeking to them), and
 * format_event its text; after a seek into a packet (the block's first events in the packet
 * entered), and to a packet's first event, the same from there. vmst_small: packets of 1 to
 * 8 events (a flush after each run), so that a block holds dozens. */
static void tell_as_alone(const char *trace)
{
	struct vms_source *alone = open_at(trace, 1), *pool = open_at(trace, 2);
	uint32_t ns = alone->ops->nr_streams(alone);
	assert_int_equal(pool->ops->nr_streams(pool), ns);
	uint64_t events = 0, packets = 0;
	for (uint32_t s = 0; s < ns; s++) {
		struct told a, p;
		tell_each(alone, s, &a);
		tell_each(pool, s, &p);
		assert_int_equal(p.n, a.n);
		for (uint64_t k = 0; k <= a.n; k++) {
			if (memcmp(&p.pos[k], &a.pos[k], sizeof a.pos[k]) != 0)
				fail_msg("%s: stream %u: tell after event %" PRIu64 " of %" PRIu64
					 " differs from reading alone's", trace, s, k, a.n);
			if (p.text[k] != a.text[k])
				fail_msg("%s: stream %u: format_event after event %" PRIu64
					 " differs from reading alone's", trace, s, k);
		}
		/* from positions in the middle of a packet, and at a packet's first event */
		uint64_t from[3] = { a.n / 3, a.n / 2, a.n - 1 };
		for (uint64_t k = a.n / 2; k < a.n; k++)
			if (a.pos[k].w[2] == 0) {
				from[2] = k;
				break;
			}
		for (int i = 0; i < 3; i++) {
			vms_error_clear(&pool->err);
			assert_int_equal(vms_source_seek(pool, s, &a.pos[from[i]]), 0);
			struct vms_event ev;
			struct vms_stream_pos again;
			for (uint64_t k = from[i]; k < a.n; k++) {
				assert_int_equal(pool->ops->next(pool, s, &ev), 1);
				assert_int_equal(vms_source_tell(pool, s, &again), 0);
				if (memcmp(&again, &a.pos[k], sizeof again) != 0)
					fail_msg("%s: stream %u: from event %" PRIu64 ", tell after %"
						 PRIu64 " differs", trace, s, from[i], k);
			}
			assert_int_equal(pool->ops->next(pool, s, &ev), 0);
			assert_int_equal(vms_source_tell(pool, s, &again), 0);
			assert_memory_equal(&again, &a.pos[a.n - 1], sizeof again);
		}
		/* read to the end telling nothing (the pool keeps the last event's position as
		 * its block goes), once with the filter changed at the last event (a replay of
		 * the stream when a block was decoded ahead: its events go too) */
		for (int way = 0; way < 2; way++) {
			struct vms_source *q = open_at(trace, 2);
			struct vms_event ev;
			struct vms_stream_pos end;
			for (uint64_t k = 0; k < a.n; k++)
				assert_int_equal(q->ops->next(q, s, &ev), 1);
			bool only[VMS_K_COUNT] = { false };
			if (way)
				q->ops->set_wanted(q, only);
			assert_int_equal(q->ops->next(q, s, &ev), 0);
			assert_int_equal(vms_source_tell(q, s, &end), 0);
			assert_memory_equal(&end, &a.pos[a.n - 1], sizeof end);
			vms_source_close(q);
		}
		events += a.n;
		packets += a.packets;
		free(a.pos);
		free(a.text);
		free(p.pos);
		free(p.text);
	}
	vms_source_close(alone);
	vms_source_close(pool);
	print_message("# %s: %" PRIu64 " events in %" PRIu64 " packets\n", trace, events, packets);
	if (trace == vmst_small) {
		assert_int_equal(events, SMALL_EVENTS);
		assert_true(packets > events / 8); /* dozens in each block */
	}
}

static void test_tell_as_alone(void **state)
{
	(void)state;
	const char *scp = vms_test_trace("tcp-sync/scp_src");
	tell_as_alone(vmst_small);
	tell_as_alone(vmst_dir);
	tell_as_alone(synth_host);
	VMS_REQUIRE_TRACE(scp);
	tell_as_alone(scp);
}

/* set_wanted after a seek, with blocks decoded ahead under the first filter: the events are
 * those of an uninterrupted read that changes the filter at the same event (the pool replays
 * the stream from the position sought, not from its start). */
static void test_filter_after_seek(void **state)
{
	(void)state;
	bool only[VMS_K_COUNT] = { false };
	only[VMS_K_NET_SEND] = true;
	const uint64_t at = 3000, before_switch = 500;
	uint32_t stream = 0;
	uint64_t most = 0;
	struct vms_source *probe = open_at(synth_host, 1);
	for (uint32_t s = 0; s < probe->ops->nr_streams(probe); s++) {
		struct vms_event ev;
		uint64_t n = 0;
		while (probe->ops->next(probe, s, &ev) == 1)
			n++;
		if (n > most) {
			most = n;
			stream = s;
		}
	}
	vms_source_close(probe);
	assert_true(most > at + 4000 + before_switch);
	uint64_t want = 0;
	for (unsigned t = 1; t <= 2; t++) {
		/* uninterrupted: events from `at`, the filter switched after before_switch */
		struct vms_source *src = open_at(synth_host, t);
		struct vms_event ev;
		for (uint64_t i = 0; i < at; i++)
			assert_int_equal(src->ops->next(src, stream, &ev), 1);
		uint64_t h = 0, n = 0;
		int rc;
		while ((rc = src->ops->next(src, stream, &ev)) == 1) {
			h = vms_test_mix_event(h, &ev);
			if (++n == before_switch)
				src->ops->set_wanted(src, only);
		}
		assert_int_equal(rc, 0);
		vms_source_close(src);
		if (t == 1)
			want = h;
		assert_true(h == want);
		/* the same with a seek back to event `at` from further on */
		src = open_at(synth_host, t);
		struct vms_stream_pos pos;
		for (uint64_t i = 0; i <= at; i++)
			assert_int_equal(src->ops->next(src, stream, &ev), 1);
		assert_int_equal(vms_source_tell(src, stream, &pos), 0);
		for (uint64_t i = 0; i < 4000; i++)
			assert_int_equal(src->ops->next(src, stream, &ev), 1);
		assert_int_equal(vms_source_seek(src, stream, &pos), 0);
		h = n = 0;
		while ((rc = src->ops->next(src, stream, &ev)) == 1) {
			h = vms_test_mix_event(h, &ev);
			if (++n == before_switch)
				src->ops->set_wanted(src, only);
		}
		assert_int_equal(rc, 0);
		assert_true(h == want);
		vms_source_close(src);
	}
}

/* Through the merge, two machines' CTF sources: its marks serialised, read back into fresh
 * sources and a fresh merge, the merged events after each are the uninterrupted read's
 * (tests/common/merge_seek.h, as for trace.dat), at 1 and 2 threads. */
static void merged(const char *a, const char *b)
{
	for (unsigned t = first_threads(); t <= 2; t++) {
		vms_pool_set_threads(t);
		struct merge_run r = { .paths = { a, b }, .n = 2, .open = vms_source_open };
		merge_seek_check(&r);
	}
	vms_pool_set_threads(0);
}

static void test_merge_tcp_sync(void **state)
{
	(void)state;
	char a[4096], b[4096];
	VMS_REQUIRE_TRACE(vms_test_trace("tcp-sync/scp_src"));
	if (first_threads() == 2)
		skip();
	snprintf(a, sizeof a, "%s", vms_test_trace("tcp-sync/scp_src"));
	snprintf(b, sizeof b, "%s", vms_test_trace("tcp-sync/scp_dest"));
	merged(a, b);
}

static void test_merge_synth(void **state)
{
	(void)state;
	merged(synth_host, synth_guest);
}

static void expect_bad(struct vms_source *src, uint32_t stream, const struct vms_stream_pos *p,
		       const char *path)
{
	vms_error_clear(&src->err);
	assert_true(vms_source_seek(src, stream, p) < 0);
	assert_true(src->err.status < 0);
	assert_non_null(strstr(src->err.msg, path));
	struct vms_event ev;
	assert_true(src->ops->next(src, stream, &ev) < 0); /* the stream stays in error */
	struct vms_stream_pos told;
	assert_int_equal(vms_source_tell(src, stream, &told), 0);
}

/* Positions from a damaged index: each one an error, never a crash; a good one after. */
static void hostile(const char *trace, unsigned threads)
{
	struct vms_source *src = open_at(trace, threads);
	struct vms_event ev;
	/* an event deep in a packet that is not the first */
	struct vms_stream_pos good = { { 0 } }, p;
	uint64_t want_ts = 0;
	int rc = 0;
	uint32_t ns = src->ops->nr_streams(src), hs = 0;
	for (; hs < ns && rc != 1; hs++)
		while ((rc = src->ops->next(src, hs, &ev)) == 1) {
			assert_int_equal(vms_source_tell(src, hs, &p), 0);
			if (p.w[1] > 0 && p.w[2] >= 5) {
				good = p;
				want_ts = ev.ts;
				break;
			}
		}
	assert_int_equal(rc, 1);
	const uint32_t stream = --hs;
	uint64_t u64max = UINT64_MAX;
	struct { int word; uint64_t val; } bad[] = {
		{ 0, 0 },                       /* not a CTF position */
		{ 0, good.w[0] | 0x80 },        /* unknown flag */
		{ 0, good.w[0] + (1u << 8) },   /* another stream's */
		{ 0, good.w[0] & ~1ull },       /* the start, with a place */
		{ 1, good.w[1] + 1 },           /* inside a packet */
		{ 1, good.w[1] + 4096 },
		{ 1, 1ull << 40 },              /* past the end */
		{ 1, u64max },
		{ 2, good.w[2] + 1 },           /* not where that event starts */
		{ 2, 1ull << 33 },              /* past the packet's events */
		{ 2, u64max },
		{ 3, good.w[3] + 1 },           /* not the packet's timestamp_begin */
		{ 5, good.w[5] + 3 },           /* not its events_discarded */
		{ 6, 5000 },                    /* CPU out of range */
		{ 6, (good.w[6] & 0xffffffff00000000ull) | ((good.w[6] + 1) & 0xfff) },
		{ 7, good.w[7] + 8 },           /* not the event's start */
		{ 7, u64max },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		p = good;
		p.w[bad[i].word] = bad[i].val;
		expect_bad(src, stream, &p, trace);
	}
	/* garbage: random words, with and without the tag and the stream */
	uint64_t seed = 99;
	for (int i = 0; i < 3000; i++) {
		for (int w = 0; w < VMS_POS_WORDS; w++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			p.w[w] = seed ^ (seed >> 29);
		}
		if (i % 3)
			p.w[0] = (good.w[0] & ~0xffull) | (p.w[0] & 0xff);
		for (int w = 1; i % 3 == 2 && w < VMS_POS_WORDS; w++) {
			/* near the real ones: small offsets and indices, words next to the good */
			if ((p.w[w] >> 7) & 1)
				p.w[w] = good.w[w] + (p.w[w] & 0xf) - 8;
			else if (w <= 2)
				p.w[w] &= 0xffff;
		}
		bool same = !memcmp(&p, &good, sizeof p);
		if (!same)
			expect_bad(src, stream, &p, trace);
	}
	/* no such stream */
	vms_error_clear(&src->err);
	assert_true(vms_source_seek(src, ns, &good) < 0);
	assert_true(src->err.status < 0);
	/* the good one, after all that */
	vms_error_clear(&src->err);
	assert_int_equal(vms_source_seek(src, stream, &good), 0);
	assert_int_equal(src->ops->next(src, stream, &ev), 1);
	assert_int_equal(ev.ts, want_ts);
	/* another stream's position, with its stream field, given to this one */
	if (ns > 1) {
		uint32_t other = (stream + 1) % ns;
		assert_int_equal(vms_source_tell(src, stream, &p), 0);
		assert_true(vms_source_seek(src, other, &p) < 0);
		assert_non_null(strstr(src->err.msg, "another stream"));
		/* and with the stream field rewritten: the packet is not one of that stream's,
		 * or its events are not where the position says, or it is read as the other
		 * stream's packet: never out of bounds */
		p.w[0] = (p.w[0] & ~(0xffffffull << 8)) | (uint64_t)other << 8;
		vms_error_clear(&src->err);
		rc = vms_source_seek(src, other, &p);
		assert_true(rc == 0 || src->err.status < 0);
	}
	vms_source_close(src);
}

static void test_hostile(void **state)
{
	(void)state;
	const char *trace = vms_test_trace("tcp-sync/scp_src");
	VMS_REQUIRE_TRACE(trace);
	for (unsigned t = 1; t <= 2; t++) {
		hostile(trace, t);
		hostile(synth_host, t);
		hostile(vmst_dir, t);
	}
}

/* A libvmstrace recording into dir, by a child (the tracer's exit flush closes the trace):
 * 40,000 events in 4 KiB sub-buffers (a packet each), or (small) SMALL_EVENTS in runs of 1
 * to 8, each flushed (a packet per run, nothing dropped). */
static int record_vmst(const char *dir, bool small)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char c[2300];
		snprintf(c, sizeof c, "file=%s,enable=vmst_test_seq,bufsize=%s,subbufs=16", dir,
			 small ? "4K" : "64K");
		if (vmst_init(c))
			_exit(1);
		for (uint32_t i = 0; !small && i < 40000; i++)
			trace_vmst_test_seq(0, i);
		uint64_t seed = 7;
		for (uint32_t i = 0; small && i < SMALL_EVENTS;) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			for (uint32_t run = 1 + (uint32_t)(seed >> 61); run && i < SMALL_EVENTS; run--)
				trace_vmst_test_seq(1, i++);
			vmst_flush();
		}
		exit(0);
	}
	int st;
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* A synthesized LTTng pair and the two libvmstrace recordings. */
static int setup(void **state)
{
	(void)state;
	const char *dir = vms_test_tmpdir("ctf-seek");
	char cmd[6400];
	char *guest = synth_guest;
	snprintf(synth_host, sizeof synth_host, "%s/host", dir);
	snprintf(synth_guest, sizeof synth_guest, "%s/guest", dir);
	snprintf(vmst_dir, sizeof vmst_dir, "%s/vmst", dir);
	snprintf(vmst_small, sizeof vmst_small, "%s/vmst-small", dir);
	snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s' '%s'", synth_host, synth_guest, vmst_dir,
		 vmst_small);
	if (system(cmd) != 0)
		return -1;
	struct vms_synth_config cfg;
	vms_synth_config_init(&cfg);
	cfg.seed = 21;
	cfg.events = 60000;
	cfg.host_path = synth_host;
	cfg.guest_path = guest;
	cfg.format = VMS_SYNTH_LTTNG;
	static struct vms_synth_truth truth;
	struct vms_error err = { 0 };
	if (vms_synth_run(&cfg, &truth, &err) != 0) {
		print_message("# synth: %s\n", err.msg);
		return -1;
	}
	return record_vmst(vmst_dir, false) || record_vmst(vmst_small, true) ? -1 : 0;
}

int main(void)
{
	setenv("VMS_CTF_POOL_MIN", "0", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_scp_src),
		cmocka_unit_test(test_scp_dest),
		cmocka_unit_test(test_synth_host),
		cmocka_unit_test(test_vmstrace),
		cmocka_unit_test(test_filter_after_seek),
		cmocka_unit_test(test_tell_as_alone),
		cmocka_unit_test(test_merge_tcp_sync),
		cmocka_unit_test(test_merge_synth),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
