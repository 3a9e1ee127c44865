/* The finished model saved and loaded (lib/model/model_io.c), round trip: a session builds
 * its model from the traces and saves it; a second session of the same traces loads those
 * bytes instead of building, and must save the very same bytes again and give the same
 * analysis: every vCPU and guest-thread interval of a run, and every machine's name, role,
 * host, links and clock, printed by both and compared as text. On the synthesized pair (with
 * TSC scaling: TIME_SHIFT pointers), kvm-hip24, Trace Compass's OneQemuKvm and the Xen host
 * (its domains are untraced guests the model adds). Also: bytes cut anywhere, or of another
 * layout, are refused with the byte offset, never loaded. */
#include "testutil.h"
#include "synth_pair.h"

#include <stdlib.h>

#include "vmscope/session.h"

static char *model_bytes(struct vms_session *s, size_t *len)
{
	char *b = NULL;
	FILE *f = open_memstream(&b, len);
	assert_non_null(f);
	assert_int_equal(vms_session_save_model(s, f), 0);
	assert_int_equal(fclose(f), 0);
	return b;
}

static void on_vcpu(void *ctx, const struct vms_vcpu_interval *iv)
{
	fprintf(ctx, "v %u %u %llu %llu %u %d %d\n", iv->machine, iv->vcpu,
		(unsigned long long)iv->start, (unsigned long long)iv->end, iv->status,
		(int)iv->state, iv->layer);
}

static void on_thread(void *ctx, const struct vms_thread_interval *iv)
{
	fprintf(ctx, "t %u %d %u %llu %llu %d %d %d\n", iv->machine, iv->tid, iv->vcpu,
		(unsigned long long)iv->start, (unsigned long long)iv->end, (int)iv->reason,
		iv->exit_reason, iv->host_tid);
}

/* What the session's model says and what a run over it gives, as text. */
static char *run_text(struct vms_session *s)
{
	char *b = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&b, &n);
	assert_non_null(f);
	struct vms_error err = { 0 };
	struct vms_sinks sinks = { .ctx = f, .vcpu_interval = on_vcpu, .thread_interval = on_thread };
	if (vms_session_run(s, &sinks, NULL, NULL, &err) != 0)
		fail_msg("run: %s", err.msg);
	struct vms_model *m = vms_session_model(s);
	for (uint32_t i = 0; i < vms_model_nr_machines(m); i++) {
		const struct vms_machine *mc = vms_model_machine_c(m, i);
		fprintf(f, "m %u %s role %u src %d host %d pid %d how %d vcpus %u uid %llu sync %d %d "
			"%.17g %.17g\n", i, mc->name, mc->role, mc->source, mc->host, mc->host_pid,
			(int)mc->host_how, mc->nr_vcpus, (unsigned long long)mc->vm_uid,
			(int)mc->sync.method, (int)mc->sync.quality, mc->sync.slope, mc->sync.offset_ns);
		for (uint32_t v = 0; v < mc->nr_vcpus; v++)
			fprintf(f, " vcpu %u tid %d how %d\n", v, mc->vcpus[v].host_tid,
				(int)mc->vcpus[v].how);
		/* the clock at a few raw times, per CPU 0 */
		for (uint64_t t = 1; t < (1ull << 62); t *= 1000)
			fprintf(f, " clock %llu -> %llu\n", (unsigned long long)t,
				(unsigned long long)vms_clock_to_ref(&mc->clock, 0, t));
	}
	assert_int_equal(fclose(f), 0);
	return b;
}

static void round_trip(const char *const *paths, uint32_t n, double hz)
{
	struct vms_session_opts o = { .tsc_hz = hz };
	struct vms_error err = { 0 };
	struct vms_session *a = vms_session_open(paths, n, &o, &err);
	if (!a)
		fail_msg("open: %s", err.msg);
	assert_int_equal(vms_session_build_model(a, &err), 0);
	size_t la, lb;
	char *ba = model_bytes(a, &la);
	struct vms_session *b = vms_session_open(paths, n, &o, &err);
	assert_non_null(b);
	if (vms_session_load_model(b, ba, la, &err) != 0)
		fail_msg("load: %s", err.msg);
	char *bb = model_bytes(b, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(ba, bb, la);
	char *ta = run_text(a), *tb = run_text(b);
	assert_true(strlen(ta) > 100);
	if (strcmp(ta, tb))
		fail_msg("the loaded model's run differs from the built model's");
	/* cut anywhere (every 97th length and the last bytes), or another layout: refused */
	for (size_t cut = 0; cut < la; cut += cut + 97 < la ? 97 : (la - cut > 1 ? la - cut - 1 : 1)) {
		vms_error_clear(&err);
		struct vms_session *c = vms_session_open(paths, n, &o, &err);
		if (!c)
			fail_msg("open: %s", err.msg);
		assert_int_not_equal(vms_session_load_model(c, ba, cut, &err), 0);
		if (!strstr(err.msg, "byte offset"))
			fail_msg("cut at %zu: '%s' gives no byte offset", cut, err.msg);
		vms_session_free(c);
	}
	ba[12] ^= 0x40;   /* the header's source count */
	vms_error_clear(&err);
	struct vms_session *c = vms_session_open(paths, n, &o, &err);
	assert_non_null(c);
	assert_int_not_equal(vms_session_load_model(c, ba, la, &err), 0);
	vms_session_free(c);
	free(ta);
	free(tb);
	free(ba);
	free(bb);
	vms_session_free(a);
	vms_session_free(b);
}

static void test_synth(void **state)
{
	(void)state;
	const char *paths[2];
	vms_test_synth_pair("model-io", 5, 20000, paths);
	round_trip(paths, 2, 0);
}

static void test_kvm_hip24(void **state)
{
	(void)state;
	const char *paths[2] = { vms_test_trace("kvm-hip24/host.dat"),
				 vms_test_trace("kvm-hip24/guest-Salamander4.dat") };
	VMS_REQUIRE_TRACE(paths[0]);
	round_trip(paths, 2, 0);
}

static void test_onequemukvm(void **state)
{
	(void)state;
	const char *paths[2] = { vms_test_trace("tracecompass-vm/OneQemuKvm/host.xml"),
				 vms_test_trace("tracecompass-vm/OneQemuKvm/guest.xml") };
	VMS_REQUIRE_TRACE(paths[0]);
	round_trip(paths, 2, 0);
}

static void test_xen(void **state)
{
	(void)state;
	const char *paths[1] = { vms_test_trace("xen/xentrace.bin") };
	VMS_REQUIRE_TRACE(paths[0]);
	round_trip(paths, 1, 2.4e9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synth),
		cmocka_unit_test(test_kvm_hip24),
		cmocka_unit_test(test_onequemukvm),
		cmocka_unit_test(test_xen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
