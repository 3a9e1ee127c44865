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
 * error with the path in the message, the stream failing until a good seek, never a crash. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "merge_seek.h"
#include "pool_digest.h"
#include "seek_check.h"
#include "trace-qemu-style.h"
#include "vmscope/synth.h"

void vms_ctf_counters(const struct vms_source *src, uint64_t *decoded, bool *pooled);

static char synth_host[2100], synth_guest[2100], vmst_dir[2100];

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

/* A synthesized LTTng pair, and a libvmstrace recording of 40,000 events in 4 KiB
 * sub-buffers (a packet each). */
static int setup(void **state)
{
	(void)state;
	const char *dir = vms_test_tmpdir("ctf-seek");
	char cmd[6400];
	char *guest = synth_guest;
	snprintf(synth_host, sizeof synth_host, "%s/host", dir);
	snprintf(synth_guest, sizeof synth_guest, "%s/guest", dir);
	snprintf(vmst_dir, sizeof vmst_dir, "%s/vmst", dir);
	snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s'", synth_host, synth_guest, vmst_dir);
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
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char c[2300];
		snprintf(c, sizeof c, "file=%s,enable=vmst_test_seq,bufsize=64K,subbufs=16",
			 vmst_dir);
		if (vmst_init(c))
			_exit(1);
		for (uint32_t i = 0; i < 40000; i++)
			trace_vmst_test_seq(0, i);
		exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	return 0;
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
		cmocka_unit_test(test_merge_tcp_sync),
		cmocka_unit_test(test_merge_synth),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
