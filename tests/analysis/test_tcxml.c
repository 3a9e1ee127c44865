/* The Trace Compass XML stub reader: the real OneQemuKvm host file field by field (values
 * read off the file), and damaged or hostile input (truncations at every 23 bytes, bad
 * numbers, a DOCTYPE with an entity bomb, oversized attributes): never a crash, always one
 * error with the file and the position. */
#include <stdio.h>
#include <sys/stat.h>

#include "an_test.h"

static const char *tmpdir(void)
{
	static char dir[2048];
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "%s/test-tmp", vms_test_build());
		mkdir(dir, 0777);
		snprintf(dir, sizeof dir, "%s/test-tmp/tcxml", vms_test_build());
		mkdir(dir, 0777);
	}
	return dir;
}

static const char *write_file(const char *name, const char *text)
{
	static char path[4200];
	snprintf(path, sizeof path, "%s/%s", tmpdir(), name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fwrite(text, 1, strlen(text), f);
	fclose(f);
	return path;
}

static void test_host_xml(void **state)
{
	(void)state;
	const char *p = vms_test_trace("tracecompass-vm/OneQemuKvm/host.xml");
	VMS_REQUIRE_TRACE(p);
	struct vms_error err = {0};
	struct vms_source *s = vms_tcxml_open(p, &err);
	assert_non_null(s);
	assert_string_equal(s->ops->name, "tcxml");
	assert_string_equal(s->meta.format, "Trace Compass XML");
	assert_true(s->meta.ts_in_ns);
	assert_int_equal(s->meta.nr_cpus, 1);
	/* names in order of first appearance in the file */
	static const char *names[] = {"sched_switch", "kvm_entry", "kvm_exit", "vmsync_gh_host",
				      "vmsync_hg_host"};
	static const enum vms_kind kinds[] = {VMS_K_SCHED_SWITCH, VMS_K_KVM_ENTRY, VMS_K_KVM_EXIT,
					      VMS_K_VMSYNC_GH_HOST, VMS_K_VMSYNC_HG_HOST};
	assert_int_equal(s->meta.nr_types, 5);
	for (int i = 0; i < 5; i++) {
		assert_string_equal(s->meta.type_names[i], names[i]);
		assert_int_equal(s->meta.type_kinds[i], kinds[i]);
	}
	assert_int_equal(s->ops->nr_streams(s), 1);
	for (int pass = 0; pass < 2; pass++) { /* the second pass after rewind is identical */
		struct vms_event ev;
		uint32_t n = 0;
		int r;
		while ((r = s->ops->next(s, 0, &ev)) > 0) {
			n++;
			if (n == 1) { /* t=1 sched_switch any(30) -> qemucpu1(31), prev_state 0 */
				assert_int_equal(ev.ts, 1);
				assert_int_equal(ev.kind, VMS_K_SCHED_SWITCH);
				assert_int_equal(ev.f[0], 30);
				assert_int_equal(ev.f[1], 0);
				assert_int_equal(ev.f[2], 31);
				assert_int_equal(ev.f[3], 20);
				assert_int_equal(ev.f[4], 20);
				assert_string_equal(ev.s[0], "any");
				assert_string_equal(ev.s[1], "qemucpu1");
				assert_int_equal(ev.tid, 30); /* the switch belongs to prev */
				assert_int_equal(ev.cpu, 0);
				char buf[256];
				s->ops->format_event(s, 0, buf, sizeof buf);
				assert_non_null(strstr(buf, "sched_switch:"));
				assert_non_null(strstr(buf, "next_tid=31"));
			} else if (n == 2) { /* t=5 kvm_entry vcpu_id 0, run by 31 */
				assert_int_equal(ev.ts, 5);
				assert_int_equal(ev.kind, VMS_K_KVM_ENTRY);
				assert_int_equal(ev.f[0], 0);
				assert_int_equal(ev.tid, 31);
			} else if (n == 3) { /* t=45 kvm_exit 32 rip 123456 isa 1 info 654654 456789 */
				assert_int_equal(ev.ts, 45);
				assert_int_equal(ev.kind, VMS_K_KVM_EXIT);
				assert_int_equal(ev.f[0], 32);
				assert_int_equal(ev.f[1], 1);
				assert_int_equal(ev.f[2], 123456);
				assert_int_equal(ev.f[3], 654654);
				assert_int_equal(ev.f[4], 456789);
			} else if (n == 4) { /* t=50 vmsync_gh_host cnt 1 vm_uid 123456 */
				assert_int_equal(ev.ts, 50);
				assert_int_equal(ev.kind, VMS_K_VMSYNC_GH_HOST);
				assert_int_equal(ev.f[0], 123456);
				assert_int_equal(ev.f[1], 1);
				assert_int_equal(ev.tid, 31);
			} else if (n == 9) { /* t=150: after 31 -> 30 at t=100, this switch is 30's */
				assert_int_equal(ev.ts, 150);
				assert_int_equal(ev.tid, 30);
			} else if (n == 22) {
				assert_int_equal(ev.ts, 355);
				assert_int_equal(ev.kind, VMS_K_KVM_ENTRY);
			}
		}
		assert_int_equal(r, 0);
		assert_int_equal(n, 22);
		assert_int_equal(s->ops->rewind(s), 0);
	}
	s->ops->close(s);
}

static void test_not_mine(void **state)
{
	(void)state;
	struct vms_error err = {0};
	assert_null(vms_tcxml_open(write_file("a.txt", "hello <trace>"), &err));
	assert_int_equal(err.status, 0);
	assert_null(vms_tcxml_open(write_file("b.xml", "<tracex></tracex>"), &err));
	assert_int_equal(err.status, 0);
	assert_null(vms_tcxml_open(write_file("c.xml", ""), &err));
	assert_int_equal(err.status, 0);
}

static void test_decl_comment_empty(void **state)
{
	(void)state;
	struct vms_error err = {0};
	struct vms_source *s = vms_tcxml_open(
		write_file("d.xml", "\xef\xbb\xbf<?xml version=\"1.0\"?>\n<!-- stub -->\n<trace/>\n"),
		&err);
	assert_non_null(s);
	struct vms_event ev;
	assert_int_equal(s->ops->next(s, 0, &ev), 0);
	assert_int_equal(s->meta.nr_types, 0);
	s->ops->close(s);
}

/* Out of time order across CPUs (but in order per CPU): one stream per CPU. */
static void test_per_cpu_streams(void **state)
{
	(void)state;
	struct vms_error err = {0};
	struct vms_source *s = vms_tcxml_open(write_file("e.xml",
		"<trace>\n"
		"<event timestamp=\"10\" name=\"a\"><field name=\"cpu\" value=\"1\" type=\"int\"/></event>\n"
		"<event timestamp=\"5\" name=\"b\"><field name=\"cpu\" value=\"0\" type=\"int\"/></event>\n"
		"<event timestamp=\"20\" name=\"a\"><field name=\"cpu\" value=\"1\" type=\"int\"/></event>\n"
		"<event timestamp=\"7\" name=\"b\"/>\n" /* no cpu field: CPU 0 */
		"</trace>\n"), &err);
	assert_non_null(s);
	assert_int_equal(s->meta.nr_cpus, 2);
	assert_int_equal(s->ops->nr_streams(s), 2);
	struct vms_event ev;
	uint64_t want0[] = {5, 7}, want1[] = {10, 20};
	for (int i = 0; i < 2; i++) {
		assert_int_equal(s->ops->next(s, 0, &ev), 1);
		assert_int_equal(ev.ts, want0[i]);
		assert_int_equal(ev.cpu, 0);
		assert_int_equal(ev.kind, VMS_K_OTHER);
		assert_int_equal(ev.flags & VMS_EVF_TIME_BACKWARDS, 0);
	}
	assert_int_equal(s->ops->next(s, 0, &ev), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(s->ops->next(s, 1, &ev), 1);
		assert_int_equal(ev.ts, want1[i]);
		assert_int_equal(ev.cpu, 1);
	}
	assert_int_equal(s->ops->next(s, 1, &ev), 0);
	s->ops->close(s);
}

/* Out of order, read the way the merge reads: streams interleaved, so that events are taken
 * from the per-CPU queues that the one shared parse fills (and after a rewind again). The
 * expected values are the file's own, per CPU, in file order; a queued event keeps its
 * fields (format_event) and its CPU's current thread. */
static void test_per_cpu_queues(void **state)
{
	(void)state;
	struct vms_error err = {0};
	struct vms_source *s = vms_tcxml_open(write_file("q.xml",
		"<trace>\n"
		"<event timestamp=\"30\" name=\"sched_switch\"><field name=\"cpu\" value=\"2\" type=\"int\"/>"
		"<field name=\"prev_comm\" value=\"a\" type=\"string\"/><field name=\"prev_tid\" value=\"1\" type=\"long\"/>"
		"<field name=\"prev_state\" value=\"0\" type=\"long\"/><field name=\"next_comm\" value=\"bee\" type=\"string\"/>"
		"<field name=\"next_tid\" value=\"42\" type=\"long\"/></event>\n"
		"<event timestamp=\"10\" name=\"x\"><field name=\"cpu\" value=\"0\" type=\"int\"/><field name=\"v\" value=\"zero\" type=\"string\"/></event>\n"
		"<event timestamp=\"31\" name=\"y\"><field name=\"cpu\" value=\"2\" type=\"int\"/><field name=\"w\" value=\"two\" type=\"string\"/></event>\n"
		"<event timestamp=\"20\" name=\"x\"><field name=\"cpu\" value=\"1\" type=\"int\"/></event>\n"
		"<event timestamp=\"11\" name=\"x\"><field name=\"cpu\" value=\"0\" type=\"int\"/></event>\n"
		"<event timestamp=\"25\" name=\"y\"><field name=\"cpu\" value=\"2\" type=\"int\"/></event>\n"
		"</trace>\n"), &err);
	assert_non_null(s);
	assert_int_equal(s->ops->nr_streams(s), 3);
	for (int pass = 0; pass < 2; pass++) {
		struct vms_event ev;
		char buf[128];
		/* stream 1 first: the parse queues CPU 2's and CPU 0's first events */
		assert_int_equal(s->ops->next(s, 1, &ev), 1);
		assert_int_equal(ev.ts, 20);
		assert_int_equal(s->ops->next(s, 2, &ev), 1);
		assert_int_equal(ev.ts, 30);
		assert_int_equal(ev.kind, VMS_K_SCHED_SWITCH);
		assert_int_equal(ev.tid, 1);
		assert_int_equal(s->ops->next(s, 0, &ev), 1);
		assert_int_equal(ev.ts, 10);
		s->ops->format_event(s, 0, buf, sizeof buf);
		assert_string_equal(buf, "x: cpu=0 v=zero");
		assert_int_equal(s->ops->next(s, 2, &ev), 1);
		assert_int_equal(ev.ts, 31);
		assert_int_equal(ev.tid, 42);
		s->ops->format_event(s, 2, buf, sizeof buf);
		assert_string_equal(buf, "y: cpu=2 w=two");
		assert_int_equal(s->ops->next(s, 2, &ev), 1);
		assert_int_equal(ev.ts, 25);
		assert_int_equal(ev.flags & VMS_EVF_TIME_BACKWARDS, VMS_EVF_TIME_BACKWARDS);
		assert_int_equal(s->ops->next(s, 2, &ev), 0);
		assert_int_equal(s->ops->next(s, 1, &ev), 0);
		assert_int_equal(s->ops->next(s, 0, &ev), 1);
		assert_int_equal(ev.ts, 11);
		assert_int_equal(ev.flags & VMS_EVF_TIME_BACKWARDS, 0);
		assert_int_equal(s->ops->next(s, 0, &ev), 0);
		assert_int_equal(s->ops->rewind(s), 0);
	}
	s->ops->close(s);
}

static void expect_error(const char *name, const char *text, const char *what)
{
	struct vms_error err = {0};
	const char *p = write_file(name, text);
	struct vms_source *s = vms_tcxml_open(p, &err);
	if (s)
		fail_msg("%s: opened, expected an error about \"%s\"", name, what);
	assert_int_equal(err.status, VMS_ERR_FORMAT);
	if (!strstr(err.msg, what) || !strstr(err.msg, p) || !strstr(err.msg, "byte offset"))
		fail_msg("%s: message \"%s\" lacks \"%s\", the path or the offset", name, err.msg,
			 what);
}

static void test_malformed(void **state)
{
	(void)state;
	expect_error("f1.xml", "<trace><event timestamp=\"abc\" name=\"x\"/></trace>", "timestamp");
	expect_error("f2.xml", "<trace><event timestamp=\"-1\" name=\"x\"/></trace>", "timestamp");
	expect_error("f3.xml", "<trace><event name=\"x\"/></trace>", "timestamp");
	expect_error("f4.xml", "<trace><event timestamp=\"1\"/></trace>", "name");
	expect_error("f5.xml",
		     "<trace><event timestamp=\"1\" name=\"sched_switch\">"
		     "<field name=\"prev_tid\" value=\"x1\" type=\"long\"/></event></trace>",
		     "prev_tid");
	expect_error("f6.xml",
		     "<trace><event timestamp=\"1\" name=\"x\">"
		     "<field name=\"cpu\" value=\"99999\" type=\"int\"/></event></trace>",
		     "out of range");
	expect_error("f7.xml", "<trace><event timestamp=\"1\" name=\"x\"></evnt></trace>",
		     "malformed XML");
	expect_error("f8.xml", "<trace><event timestamp=\"1\" name=\"x\"/>", "byte offset");
	expect_error("f9.xml",
		     "<trace><event timestamp=\"1\" name=\"kvm_exit\">"
		     "<field name=\"exit_reason\" value=\"99999999999999999999999\"/></event></trace>",
		     "exit_reason");
	expect_error("f10.xml",
		     "<trace><event timestamp=\"99999999999999999999999\" name=\"x\"/></trace>",
		     "timestamp");
	/* an entity bomb behind a DOCTYPE: a file must start with <trace to be ours, so a
	 * DOCTYPE (which must come before the root) makes it "not mine", before any parsing */
	struct vms_error err = {0};
	assert_null(vms_tcxml_open(write_file("g2.xml",
		"<!DOCTYPE trace [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;\">]>"
		"<trace><event timestamp=\"1\" name=\"&b;&b;&b;\"/></trace>"), &err));
	assert_int_equal(err.status, 0);
	/* an attribute over the limit */
	size_t big = 5000;
	char *text = malloc(big + 200);
	assert_non_null(text);
	strcpy(text, "<trace><event timestamp=\"1\" name=\"");
	size_t n = strlen(text);
	memset(text + n, 'x', big);
	strcpy(text + n + big, "\"/></trace>");
	expect_error("h1.xml", text, "too long");
	free(text);
}

/* Every truncation of the real host file is refused with a position, never a crash. */
static void test_truncations(void **state)
{
	(void)state;
	const char *p = vms_test_trace("tracecompass-vm/OneQemuKvm/host.xml");
	VMS_REQUIRE_TRACE(p);
	FILE *f = fopen(p, "rb");
	assert_non_null(f);
	char *buf = malloc(1 << 16);
	assert_non_null(buf);
	size_t len = fread(buf, 1, (1 << 16) - 1, f);
	fclose(f);
	assert_true(len > 1000);
	char *cut = malloc(len + 1);
	assert_non_null(cut);
	uint32_t refused = 0;
	for (size_t k = 0; k < len; k += 23) {
		memcpy(cut, buf, k);
		cut[k] = '\0';
		struct vms_error err = {0};
		struct vms_source *s = vms_tcxml_open(write_file("cut.xml", cut), &err);
		if (k < 7) { /* not even "<trace>": not this format */
			assert_null(s);
			assert_int_equal(err.status, 0);
			continue;
		}
		if (s)
			fail_msg("truncation at %zu opened", k);
		assert_int_equal(err.status, VMS_ERR_FORMAT);
		assert_non_null(strstr(err.msg, "byte offset"));
		refused++;
	}
	assert_true(refused > 200);
	free(cut);
	free(buf);
}

/* Bytes of the real host file changed at random (deterministic): whatever the result, open
 * and read to the end without a crash (ASan/UBSan watch), and an error is one line with a
 * position. */
static void test_mutations(void **state)
{
	(void)state;
	const char *p = vms_test_trace("tracecompass-vm/OneQemuKvm/host.xml");
	VMS_REQUIRE_TRACE(p);
	FILE *f = fopen(p, "rb");
	assert_non_null(f);
	static char buf[1 << 16], mut[1 << 16];
	size_t len = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	static const char pick[] = "<>/=\"& x0-9\n;!?";
	uint64_t rng = 12345;
	uint32_t opened = 0, refused = 0;
	for (int round = 0; round < 300; round++) {
		memcpy(mut, buf, len + 1);
		for (int k = 0; k < 1 + round % 4; k++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			size_t at = (size_t)(rng >> 33) % len;
			mut[at] = pick[(rng >> 20) % (sizeof pick - 1)];
		}
		struct vms_error err = {0};
		struct vms_source *s = vms_tcxml_open(write_file("mut.xml", mut), &err);
		if (!s) {
			if (err.status != 0) {
				assert_non_null(strstr(err.msg, "byte offset"));
				assert_null(strchr(err.msg, '\n'));
				refused++;
			}
			continue;
		}
		opened++;
		for (uint32_t st = 0; st < s->ops->nr_streams(s); st++) {
			struct vms_event ev;
			while (s->ops->next(s, st, &ev) > 0)
				;
		}
		s->ops->close(s);
	}
	assert_true(refused > 0);
	print_message("# mutations: %u opened, %u refused\n", opened, refused);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_xml),
		cmocka_unit_test(test_not_mine),
		cmocka_unit_test(test_decl_comment_empty),
		cmocka_unit_test(test_per_cpu_streams),
		cmocka_unit_test(test_per_cpu_queues),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_mutations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
