/* The trace.dat reader on the zlib-compressed KVM host and guest traces of
 * ../shared/traces/kvm-hip24/. Debian's trace-cmd 3.1.6 cannot read zlib files (and its
 * `convert` cannot either, so they cannot be rewritten as zstd for it), so:
 *  - the options are checked against the facts of shared/docs/formats.md (read by hand);
 *  - the record counts per CPU and per event name are checked against tdcount.py, a
 *    separate Python implementation of the v7 layout (zlib chunks, pages, records). */
#include "td_testutil.h"

static const char *host_path(void)
{
	return vms_test_trace("kvm-hip24/host.dat");
}

static const char *guest_path(void)
{
	return vms_test_trace("kvm-hip24/guest-Salamander4.dat");
}

static struct vms_source *open_ok(const char *path)
{
	struct vms_error err = {0};
	struct vms_source *src = vms_tracedat_open(path, &err);
	if (!src)
		fail_msg("%s", err.msg);
	return src;
}

/* Counts from tdcount.py; false when python3 is missing. */
static bool py_counts(const char *path, struct td_counts *c)
{
	memset(c, 0, sizeof *c);
	const char *srcdir = getenv("VMS_SOURCE_DIR");
	char cmd[8400];
	snprintf(cmd, sizeof cmd, "python3 '%s/tests/tracedat/tdcount.py' '%s'",
		 srcdir && *srcdir ? srcdir : VMS_SOURCE_DIR, path);
	FILE *p = popen(cmd, "r");
	if (!p)
		return false;
	char line[512];
	while (fgets(line, sizeof line, p)) {
		char a[200];
		unsigned cpu;
		unsigned long long n;
		if (sscanf(line, "cpu %199s %u %llu", a, &cpu, &n) == 3) {
			assert_true(cpu < TD_MAX_CPU);
			c->per_cpu[cpu] += n;
			c->total += n;
		} else if (sscanf(line, "event %199s %llu", a, &n) == 2) {
			td_count_name(c, a, strlen(a));
			c->count[c->nnames - 1] = n;
		} else if (sscanf(line, "lost %llu", &n) == 1) {
			c->lost = n;
		}
	}
	return pclose(p) == 0 && c->total > 0;
}

static void check_counts(struct vms_source *src, const char *path)
{
	struct td_counts got, want;
	assert_int_equal(td_read_all(src, &got), 0);
	if (!py_counts(path, &want)) {
		print_message("# python3 missing: counts not cross-checked\n");
		return;
	}
	assert_int_equal(got.total, want.total);
	for (uint32_t i = 0; i < want.nnames; i++)
		assert_int_equal(td_count_of(&got, want.name[i]), want.count[i]);
	assert_int_equal(got.nnames, want.nnames);
	for (uint32_t cpu = 0; cpu < TD_MAX_CPU; cpu++)
		assert_int_equal(got.per_cpu[cpu], want.per_cpu[cpu]);
	assert_int_equal(got.lost, want.lost);
}

static void test_host(void **state)
{
	(void)state;
	const char *path = host_path();
	VMS_REQUIRE_TRACE(path);
	struct vms_source *src = open_ok(path);
	const struct vms_trace_meta *m = &src->meta;
	assert_string_equal(m->format, "trace.dat v7 zlib");
	assert_string_equal(m->clock, "tsc2nsec");
	assert_false(m->ts_in_ns);
	assert_true(m->has_tsc2nsec);
	assert_int_equal(m->tsc_mult, 735842807);
	assert_int_equal(m->tsc_shift, 31);
	assert_int_equal(m->tsc_offset, 0);
	assert_int_equal(m->nr_cpus, 20);                     /* CPUCOUNT */
	assert_int_equal(src->ops->nr_streams(src), 15);      /* CPUs in the BUFFER option */
	assert_true(m->has_trace_id);
	assert_null(m->timeshift);
	assert_int_equal(m->nr_guests, 1);
	assert_string_equal(m->guests[0].name, "");
	assert_int_equal(m->guests[0].trace_id, 0x5d2b93f358166218ull);
	assert_int_equal(m->guests[0].nr_vcpus, 1);
	assert_int_equal(m->guests[0].vcpu[0], 0);
	assert_int_equal(m->guests[0].host_tid[0], 483882);
	for (uint32_t s = 0; s < 15; s++)
		assert_string_equal(vms_tracedat_stream_buffer(src, s), "");

	/* kvm_entry / kvm_exit with their fields; the GUEST's vCPU thread among the emitters */
	uint64_t entries = 0, exits = 0, of_guest = 0;
	for (uint32_t s = 0; s < 15; s++) {
		struct vms_event ev;
		while (src->ops->next(src, s, &ev) == 1) {
			if (ev.kind == VMS_K_KVM_ENTRY) {
				entries++;
				assert_true(ev.f[1] != 0); /* rip */
			} else if (ev.kind == VMS_K_KVM_EXIT) {
				exits++;
				assert_int_equal(ev.f[1], 1); /* VMX */
				assert_true(ev.f[0] < 100);   /* a VMX basic exit reason */
			}
			if (ev.tid == 483882) {
				of_guest++;
				if (ev.kind == VMS_K_KVM_ENTRY)
					assert_int_equal(ev.f[0], 0); /* vCPU 0 */
			}
		}
	}
	assert_true(entries > 0 && exits > 0 && of_guest > 0);
	char buf[512];
	assert_int_equal(src->ops->format_event(src, 0, buf, sizeof buf), 0);
	assert_non_null(strstr(buf, "kvm_"));

	assert_int_equal(src->ops->rewind(src), 0);
	check_counts(src, path);
	vms_source_close(src);
}

static void test_guest(void **state)
{
	(void)state;
	const char *hp = host_path(), *gp = guest_path();
	VMS_REQUIRE_TRACE(hp);
	VMS_REQUIRE_TRACE(gp);
	struct vms_source *host = open_ok(hp);
	struct vms_source *guest = open_ok(gp);
	const struct vms_trace_meta *m = &guest->meta;
	assert_string_equal(m->format, "trace.dat v7 zlib");
	assert_true(m->has_trace_id);
	assert_int_equal(m->trace_id, 0x5d2b93f358166218ull);
	assert_int_equal(m->trace_id, host->meta.guests[0].trace_id);
	assert_true(m->has_tsc2nsec);
	assert_int_equal(m->tsc_mult, 735842807);
	assert_int_equal(m->tsc_shift, 31);
	assert_false(m->ts_in_ns);
	assert_non_null(m->timeshift);
	const struct vms_timeshift *t = m->timeshift;
	assert_int_equal(t->peer_trace_id, host->meta.trace_id);
	assert_int_equal(t->flags, 0);
	assert_int_equal(t->nr_cpus, 1);
	assert_int_equal(t->cpu[0].n, 2);
	assert_int_equal(t->cpu[0].offset[0], t->cpu[0].offset[1]);
	assert_true(t->cpu[0].offset[0] != 0);
	assert_true(t->cpu[0].time[0] <= t->cpu[0].time[1]);
	assert_int_equal(t->cpu[0].scaling[0], 1);
	assert_int_equal(t->cpu[0].scaling[1], 1);
	assert_int_equal(t->cpu[0].frac[0], 0);
	assert_int_equal(t->cpu[0].frac[1], 0);
	assert_int_equal(m->nr_guests, 0);
	assert_int_equal(guest->ops->nr_streams(guest), 1);
	check_counts(guest, gp);
	vms_source_close(guest);
	vms_source_close(host);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host),
		cmocka_unit_test(test_guest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
