/* The CTF reader with the readers' worker pool (lib/input/ctf/ctf_pool.c) at 1, 2 and 4
 * threads, on ../shared/traces/tcp-sync/scp_src (LTTng kernel, one stream file) and the host
 * of a synthesized LTTng pair (4 CPUs, a stream file each: lib/synth).
 *
 * Expected values, not from this reader's pool:
 *  - scp_src's 110,771 events: babeltrace2's count without the muxer (test_ctf_lttng.c checks
 *    the reader event by event against it); the synthesized host's: babeltrace2's (its muxer
 *    reads that trace; the writer's truth leaves out the statedump); each event is decoded exactly once per pass, whatever the threads (the reader's
 *    decode counter);
 *  - every event (time, kind, type, CPU, tid, flags, fields, strings), format_event's text of
 *    each stream's last event, and the events after a set_wanted in mid-read: as read by the
 *    reading thread alone (--threads 1), which test_ctf_lttng.c checks against babeltrace2.
 * The streams are read merged by time (as the merge does), so that the reader needs blocks of
 * every stream in turn while the workers decode ahead. VMS_CTF_POOL_MIN=0 (the trace is 2.4 MB).
 * Registered in suites ctf and threads (ThreadSanitizer, scripts/test.sh). */
#include <inttypes.h>
#include <stdlib.h>

#include "pool_digest.h"

void vms_ctf_counters(const struct vms_source *src, uint64_t *decoded, bool *pooled);

#include "vmscope/synth.h"

#define MAXS 64

static char synth_host[2100];
static uint64_t synth_events;

struct digest {
	uint64_t n, hash;
	char last_text[MAXS][512];
};

static struct vms_source *open_at(const char *trace, unsigned threads)
{
	return vms_test_open_pooled(trace, threads, vms_ctf_counters);
}

struct reading {
	struct digest *g;
	uint64_t limit;
	bool switch_filter;
	const bool *after;
};

static void on_event(void *ctx, struct vms_source *src, const struct vms_event *ev)
{
	struct reading *rd = ctx;
	struct digest *g = rd->g;
	if (!ev)
		return;
	assert_true(ev->stream < MAXS);
	g->hash = vms_test_mix_event(g->hash, ev);
	if (++g->n == rd->limit && rd->switch_filter)
		src->ops->set_wanted(src, rd->after);
	/* the event's text before the stream moves on: the last one of each stays */
	src->ops->format_event(src, ev->stream, g->last_text[ev->stream],
			       sizeof g->last_text[ev->stream]);
}

/* Reads the streams merged by time into *g: up to `limit` events, then set_wanted(after)
 * when `switch_filter`, then the rest. The last event of each stream is rendered by
 * format_event. */
static void read_merged(struct vms_source *src, struct digest *g, uint64_t limit,
			bool switch_filter, const bool *after)
{
	memset(g, 0, sizeof *g);
	struct reading rd = { g, limit, switch_filter, after };
	vms_test_read_merged(src, on_event, &rd);
}

static void once_and_same(const char *trace, uint64_t events)
{
	static struct digest alone, g;
	for (unsigned t = 1; t <= 4; t *= 2) {
		struct vms_source *src = open_at(trace, t);
		for (int pass = 0; pass < 2; pass++) { /* the second after a rewind */
			uint64_t before, after;
			bool pooled;
			vms_ctf_counters(src, &before, &pooled);
			read_merged(src, &g, 0, false, NULL);
			vms_ctf_counters(src, &after, &pooled);
			assert_int_equal(g.n, events);
			assert_int_equal(after - before, events); /* each event decoded once */
			if (t == 1 && pass == 0)
				alone = g;
			assert_true(g.hash == alone.hash);
			for (uint32_t s = 0; s < MAXS; s++)
				assert_string_equal(g.last_text[s], alone.last_text[s]);
			assert_int_equal(src->ops->rewind(src), 0);
		}
		print_message("# --threads %u: %" PRIu64 " events, each decoded once, as alone\n", t,
			      g.n);
		vms_source_close(src);
	}
}

static void test_scp_src(void **state)
{
	(void)state;
	const char *trace = vms_test_trace("tcp-sync/scp_src");
	VMS_REQUIRE_TRACE(trace);
	once_and_same(trace, 110771);
}

static void test_synth_host(void **state)
{
	(void)state;
	once_and_same(synth_host, synth_events);
}

/* Rewound in mid-read (blocks decoded ahead are dropped): the next pass is whole. */
static void test_rewind_midway(void **state)
{
	(void)state;
	static struct digest alone, g;
	struct vms_source *src = open_at(synth_host, 1);
	read_merged(src, &alone, 0, false, NULL);
	vms_source_close(src);
	src = open_at(synth_host, 2);
	struct vms_event ev;
	uint32_t ns = src->ops->nr_streams(src);
	for (int i = 0; i < 5000; i++) /* some of each stream (a stream may end first) */
		assert_true(src->ops->next(src, (uint32_t)i % ns, &ev) >= 0);
	assert_int_equal(src->ops->rewind(src), 0);
	read_merged(src, &g, 0, false, NULL);
	assert_true(g.hash == alone.hash);
	vms_source_close(src);
}

/* set_wanted in mid-read, with blocks decoded ahead under the first filter: the events
 * after it are those reading alone gives (fields of unwanted kinds zero, the tid a
 * sched_switch gives), both ways round. */
static void test_filter_midway(void **state)
{
	(void)state;
	static struct digest alone, g;
	bool only[VMS_K_COUNT] = {false};
	only[VMS_K_NET_SEND] = true;
	for (int way = 0; way < 2; way++) {
		uint64_t digests[2] = {0, 0};
		for (unsigned t = 1; t <= 2; t++) {
			struct vms_source *src = open_at(synth_host, t);
			src->ops->set_wanted(src, way ? only : NULL);
			read_merged(src, t == 1 ? &alone : &g, synth_events / 3, true,
				    way ? NULL : only);
			digests[t - 1] = (t == 1 ? &alone : &g)->hash;
			assert_int_equal((t == 1 ? &alone : &g)->n, synth_events);
			vms_source_close(src);
		}
		assert_true(digests[0] == digests[1]);
	}
	/* the filter matters here, so the test above can tell a wrong replay */
	struct vms_source *src = open_at(synth_host, 1);
	read_merged(src, &g, 0, false, NULL);
	vms_source_close(src);
	assert_true(g.hash != alone.hash);
}

/* A synthesized LTTng pair (VMS_THREADS_TEST_EVENTS events, 200,000 by default). */
static int make_synth(void **state)
{
	(void)state;
	const char *dir = vms_test_tmpdir("ctf-pool");
	char host[2100], guest[2100], cmd[4300];   /* the temporary directory is < 2048 bytes */
	snprintf(host, sizeof host, "%s/host", dir);
	snprintf(guest, sizeof guest, "%s/guest", dir);
	snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", host, guest);
	if (system(cmd) != 0)
		return -1;
	const char *e = getenv("VMS_THREADS_TEST_EVENTS");
	struct vms_synth_config cfg;
	vms_synth_config_init(&cfg);
	cfg.seed = 12;
	cfg.events = e && *e ? strtoull(e, NULL, 10) : 200000;
	cfg.host_path = host;
	cfg.guest_path = guest;
	cfg.format = VMS_SYNTH_LTTNG;
	static struct vms_synth_truth truth;
	struct vms_error err = {0};
	if (vms_synth_run(&cfg, &truth, &err) != 0) {
		print_message("# synth: %s\n", err.msg);
		return -1;
	}
	snprintf(synth_host, sizeof synth_host, "%s", host);
	snprintf(cmd, sizeof cmd, "babeltrace2 '%s' 2>/dev/null | wc -l", host);
	FILE *p = popen(cmd, "r");
	unsigned long long n = 0;
	if (!p || fscanf(p, "%llu", &n) != 1)
		n = 0;
	if (p)
		pclose(p);
	if (n == 0) {
		print_message("# babeltrace2 is not installed (Debian: babeltrace2)\n");
		return -1;
	}
	synth_events = n;
	return 0;
}

int main(void)
{
	setenv("VMS_CTF_POOL_MIN", "0", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scp_src),
		cmocka_unit_test(test_synth_host),
		cmocka_unit_test(test_rewind_midway),
		cmocka_unit_test(test_filter_midway),
	};
	return cmocka_run_group_tests(tests, make_synth, NULL);
}
