/* vmscope's CTF reader on the LTTng kernel traces of ../shared/traces/tcp-sync, against
 * babeltrace2 (the reference reader) on the same streams.
 *
 * babeltrace2's muxer aborts on scp_src (its timestamps go backwards), so each stream file is
 * read alone: a directory in the build's tmp holding links to the metadata and to that one
 * stream file, read by `babeltrace2 run` from source.ctf.fs straight into sink.text.pretty
 * (no muxer), with raw clock values. Every event babeltrace2 prints must be the reader's
 * next event on that stream: same timestamp, same event name; for the TCP events
 * (inet_sock_local_out/in) the seq, ack_seq and flags babeltrace2 prints must be the
 * event's f0, f1, f2 (VMS_K_NET_SEND/RECV); and the counts must be equal. */
#include <dirent.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "testutil.h"
#include "vmscope/source.h"

static bool have_babeltrace(void)
{
	return system("babeltrace2 --version >/dev/null 2>&1") == 0;
}

/* "name = 0x1F" or "name = 31" in a babeltrace2 line */
static bool bt_field(const char *line, const char *name, uint64_t *v)
{
	char key[64];
	snprintf(key, sizeof key, " %s = ", name);
	const char *p = strstr(line, key);
	if (!p)
		return false;
	*v = strtoull(p + strlen(key), NULL, 0);
	return true;
}

struct counts {
	uint64_t events, net;
};

static void compare_stream(struct vms_source *src, uint32_t stream, const char *trace,
			   const char *file, struct counts *c)
{
	char dir[2100], cmd[16384];
	snprintf(dir, sizeof dir, "%.2090s", vms_test_tmpdir("ctf-lttng-one-stream"));
	snprintf(cmd, sizeof cmd, "ln -s '%s/metadata' '%s/metadata' && ln -s '%s/%s' '%s/%s'",
		 trace, dir, trace, file, dir, file);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "babeltrace2 run --component=src:source.ctf.fs "
		 "--params='inputs=[\"%s\"]' --component=sink:sink.text.pretty "
		 "--params='clock-cycles=true' --connect=src:sink 2>&1", dir);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, p) > 0) {
		unsigned long long ts;
		char name[256];
		if (sscanf(line, "[%llu] (%*[^)]) %*s %255[^:]:", &ts, name) != 2)
			fail_msg("babeltrace2 printed '%s'", line);
		struct vms_event ev;
		int rc = src->ops->next(src, stream, &ev);
		if (rc != 1)
			fail_msg("%s/%s: the reader ended (%d: %s) where babeltrace2 has event %llu "
				 "(%s)", trace, file, rc, src->err.msg, (unsigned long long)c->events,
				 name);
		if (ev.ts != ts || strcmp(src->meta.type_names[ev.type], name))
			fail_msg("%s/%s event %llu: reader %" PRIu64 " %s, babeltrace2 %llu %s", trace,
				 file, (unsigned long long)c->events, ev.ts,
				 src->meta.type_names[ev.type], ts, name);
		if (!strncmp(name, "inet_sock_local_", 16)) {
			uint64_t seq, ack, flags;
			assert_true(bt_field(line, "seq", &seq) && bt_field(line, "ack_seq", &ack) &&
				    bt_field(line, "flags", &flags));
			assert_int_equal(ev.kind, strcmp(name, "inet_sock_local_out") ? VMS_K_NET_RECV
										: VMS_K_NET_SEND);
			assert_int_equal(ev.f[0], seq);
			assert_int_equal(ev.f[1], ack);
			assert_int_equal(ev.f[2], flags);
			c->net++;
		}
		c->events++;
	}
	free(line);
	assert_int_equal(pclose(p), 0);
	struct vms_event ev;
	assert_int_equal(src->ops->next(src, stream, &ev), 0); /* nothing more than babeltrace2 */
}

static void check_trace(const char *rel, uint64_t want_events)
{
	const char *trace = vms_test_trace(rel);
	VMS_REQUIRE_TRACE(trace);
	if (!have_babeltrace()) {
		print_message("# babeltrace2 is not installed (Debian: babeltrace2): skipped\n");
		skip();
	}
	char tpath[4096];
	snprintf(tpath, sizeof tpath, "%s", trace);
	struct vms_error err = {0};
	struct vms_source *src = vms_source_open(tpath, &err);
	if (!src)
		fail_msg("open %s: %s", tpath, err.msg);
	assert_string_equal(src->meta.format, "CTF 1.8 (LTTng kernel)");
	assert_true(src->meta.ts_in_ns);
	/* the stream files in name order are the reader's streams */
	DIR *d = opendir(tpath);
	assert_non_null(d);
	char *files[64];
	uint32_t nf = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && strcmp(e->d_name, "metadata") && nf < 64)
			files[nf++] = strdup(e->d_name);
	closedir(d);
	assert_int_equal(src->ops->nr_streams(src), nf);
	struct counts c = {0};
	for (uint32_t i = 0; i < nf; i++) {
		struct counts one = {0};
		compare_stream(src, i, tpath, files[i], &one);
		print_message("# %s/%s: %" PRIu64 " events (%" PRIu64 " TCP), as babeltrace2\n", rel,
			      files[i], one.events, one.net);
		c.events += one.events;
		c.net += one.net;
		free(files[i]);
	}
	/* the README's count for scp_src, babeltrace2's without the muxer for scp_dest */
	assert_int_equal(c.events, want_events);
	assert_true(c.net >= 40); /* 51 and 49 TCP events (babeltrace2 | grep -c inet_sock_local) */
	vms_source_close(src);
}

static void test_scp_src(void **state)
{
	(void)state;
	check_trace("tcp-sync/scp_src", 110771);
}

static void test_scp_dest(void **state)
{
	(void)state;
	check_trace("tcp-sync/scp_dest", 85729);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scp_src),
		cmocka_unit_test(test_scp_dest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
