/* The state machine's snapshot (lib/analysis/vcpu_state_snap.c), round trip: one pass over
 * real traces drives an uninterrupted state machine A and, in lockstep, a machine B that at
 * event k is snapshotted, freed, and restored into a fresh machine C, which goes on with the
 * events from k. Every observation A publishes from k on must be published by C, field for
 * field and in the same order, and at the end A's and C's own snapshots must be the same
 * bytes; the restored C re-serialised at once must be the snapshot it was read from. A field
 * of the state that the snapshot misses shows in one of the three. Also: a snapshot that is
 * cut, of another layout, or that holds values no run makes is refused, never run. */
#include "testutil.h"
#include "synth_pair.h"

#include <stdlib.h>

#include "analysis/analysis_internal.h"
#include "analysis/vcpu_state_snap.h"
#include "vmscope/session.h"

struct log {
	FILE *f;
	char *buf;
	size_t len;
	bool on;
};

static void log_open(struct log *l)
{
	*l = (struct log){ 0 };
	l->f = open_memstream(&l->buf, &l->len);
	assert_non_null(l->f);
}

#define L_ (struct log *)ctx
#define PR(...) do { if ((L_)->on) fprintf((L_)->f, __VA_ARGS__); } while (0)
static const char *s_(const char *s) { return s ? s : "(null)"; }

static void o_state(void *ctx, const struct vms_obs_vcpu_state *o)
{
	PR("state %u %u %u %llu %u %u %d %d %d %d %d %d %d %u %d %d\n", o->machine, o->vcpu, o->vidx,
	   (unsigned long long)o->t, o->status, o->old_status, (int)o->state, (int)o->old_state,
	   o->gtid, o->host, o->host_tid, o->host_cpu, o->exit_reason, o->isa, o->halt_polling,
	   o->layer);
}
static void o_switch(void *ctx, const struct vms_obs_guest_switch *o)
{
	PR("switch %u %u %u %llu %d %d %s %s %llu\n", o->machine, o->vcpu, o->vidx,
	   (unsigned long long)o->t, o->prev_tid, o->next_tid, s_(o->prev_comm), s_(o->next_comm),
	   (unsigned long long)o->prev_state);
}
static void o_exit(struct log *l, const char *what, const struct vms_obs_exit *o)
{
	if (l->on)
		fprintf(l->f, "%s %u %u %u %u %d %u %llu %llu %u %u %llx %llx %llx %d %d\n", what,
			o->machine, o->vcpu, o->vidx, o->host, o->host_tid, o->host_cpu,
			(unsigned long long)o->t, (unsigned long long)o->begin, o->isa, o->reason,
			(unsigned long long)o->guest_rip, (unsigned long long)o->info1,
			(unsigned long long)o->info2, (int)o->how, o->gtid);
}
static void o_xb(void *ctx, const struct vms_obs_exit *o) { o_exit(L_, "exit_begin", o); }
static void o_xe(void *ctx, const struct vms_obs_exit *o) { o_exit(L_, "exit_end", o); }
static void o_run(void *ctx, const struct vms_obs_cpu_run *o)
{
	PR("run %u %u %llu %d %s %d %llu %d %d %d\n", o->host, o->cpu, (unsigned long long)o->t,
	   o->tid, s_(o->comm), o->prev_tid, (unsigned long long)o->prev_state, o->guest, o->vcpu,
	   o->vidx);
}
static void o_mode(void *ctx, const struct vms_obs_vcpu_mode *o)
{
	PR("mode %u %u %u %u %u %d %llu %d\n", o->machine, o->vcpu, o->vidx, o->host, o->host_cpu,
	   o->host_tid, (unsigned long long)o->t, o->guest_mode);
}
static void o_vwake(void *ctx, const struct vms_obs_vcpu_wakeup *o)
{
	PR("vwake %u %u %u %u %d %llu\n", o->machine, o->vcpu, o->vidx, o->host, o->host_tid,
	   (unsigned long long)o->t);
}
static void o_gwake(void *ctx, const struct vms_obs_guest_wakeup *o)
{
	PR("gwake %u %u %u %llu %d %s %d\n", o->machine, o->vcpu, o->vidx, (unsigned long long)o->t,
	   o->tid, s_(o->comm), o->waker_vcpu);
}
static void o_occ(void *ctx, const struct vms_obs_cpu_occupant *o)
{
	PR("occ %u %u %llu %d %d %d %d %.24s\n", o->host, o->cpu, (unsigned long long)o->t, o->guest,
	   o->vcpu, o->vidx, o->tid, s_(o->comm));
}
static void o_instead(void *ctx, const struct vms_obs_vcpu_instead *o)
{
	PR("instead %u %u %u %llu %u %u %d %.24s %d\n", o->machine, o->vcpu, o->vidx,
	   (unsigned long long)o->t, o->host, o->host_cpu, o->tid, s_(o->comm), o->unattributed);
}

static struct vms_observer log_observer(struct log *l)
{
	return (struct vms_observer){ .ctx = l, .vcpu_state = o_state, .guest_switch = o_switch,
				      .exit_begin = o_xb, .exit_end = o_xe, .cpu_run = o_run,
				      .vcpu_mode = o_mode, .vcpu_wakeup = o_vwake,
				      .guest_wakeup = o_gwake, .cpu_occupant = o_occ,
				      .vcpu_instead = o_instead };
}

static char *snap(struct an_sm *sm, size_t *len)
{
	char *b = NULL;
	FILE *f = open_memstream(&b, len);
	assert_non_null(f);
	assert_int_equal(an_sm_snapshot(sm, f), 0);
	assert_int_equal(fclose(f), 0);
	return b;
}

struct rt {
	struct an_layout L;
	struct an_subs subs_a, subs_c;
	struct vms_observer oa, oc;
	struct log la, lc;
	struct an_sm *a, *b;        /* b: until event k, then the restored machine */
	uint64_t k, i, t_last;
	bool started, restored;
	char *bytes;                /* the snapshot at k */
	size_t nbytes;
};

static struct an_sm *fresh(struct rt *r, const struct an_subs *subs)
{
	struct an_sm *sm = an_sm_new(&r->L);
	assert_non_null(sm);
	an_sm_set_subs(sm, subs);
	an_sm_follow_occupants(sm, true);
	return sm;
}

static void restore_at_k(struct rt *r)
{
	r->bytes = snap(r->b, &r->nbytes);
	an_sm_free(r->b);
	r->b = fresh(r, &r->subs_c);
	struct vms_error err = { 0 };
	if (an_sm_restore(r->b, r->bytes, r->nbytes, &err) != 0)
		fail_msg("restore at event %llu: %s", (unsigned long long)r->k, err.msg);
	size_t n2;
	char *again = snap(r->b, &n2);
	assert_int_equal(n2, r->nbytes);
	assert_memory_equal(again, r->bytes, n2);
	free(again);
	r->restored = true;
	r->la.on = r->lc.on = true;
}

static void on_ev(void *ctx, const struct vms_event *ev, uint64_t t)
{
	struct rt *r = ctx;
	if (!r->started) {
		an_sm_start(r->a, t);
		an_sm_start(r->b, t);
		r->started = true;
	}
	if (r->i == r->k)
		restore_at_k(r);
	an_sm_event(r->a, ev, t);
	an_sm_event(r->b, ev, t);
	r->t_last = t;
	r->i++;
}

/* One round trip at event k of the traces (k past the last: at the end, before finish). */
static uint64_t round_trip(const char *const *paths, uint32_t n, uint64_t k)
{
	struct vms_error err = { 0 };
	struct vms_session_opts opts = { 0 };
	struct vms_session *s = vms_session_open(paths, n, &opts, &err);
	if (!s)
		fail_msg("%s", err.msg);
	assert_int_equal(vms_session_build_model(s, &err), 0);
	static struct rt r;
	memset(&r, 0, sizeof r);
	r.k = k;
	assert_int_equal(an_layout_init(&r.L, vms_session_model(s)), 0);
	log_open(&r.la);
	log_open(&r.lc);
	r.oa = log_observer(&r.la);
	r.oc = log_observer(&r.lc);
	assert_int_equal(an_subs_build(&r.subs_a, &r.oa, 1), 0);
	assert_int_equal(an_subs_build(&r.subs_c, &r.oc, 1), 0);
	r.a = fresh(&r, &r.subs_a);
	r.b = fresh(&r, &r.subs_c);
	if (vms_session_iterate(s, on_ev, &r, &err) != 0)
		fail_msg("%s", err.msg);
	if (!r.restored)
		restore_at_k(&r);
	an_sm_finish(r.a, r.t_last);
	an_sm_finish(r.b, r.t_last);
	fflush(r.la.f);
	fflush(r.lc.f);
	if (r.la.len != r.lc.len || memcmp(r.la.buf, r.lc.buf, r.la.len)) {
		size_t d = 0;
		while (d < r.la.len && d < r.lc.len && r.la.buf[d] == r.lc.buf[d])
			d++;
		size_t ls = d;
		while (ls && r.la.buf[ls - 1] != '\n')
			ls--;
		fail_msg("k=%llu: observations differ at byte %zu of %zu/%zu:\n  A: %.200s\n  C: %.200s",
			 (unsigned long long)k, d, r.la.len, r.lc.len, r.la.buf + ls, r.lc.buf + ls);
	}
	size_t na, nc;
	char *sa = snap(r.a, &na), *sc = snap(r.b, &nc);
	assert_int_equal(na, nc);
	assert_memory_equal(sa, sc, na);
	uint64_t events = r.i;
	free(sa);
	free(sc);
	free(r.bytes);
	an_sm_free(r.a);
	an_sm_free(r.b);
	an_subs_free(&r.subs_a);
	an_subs_free(&r.subs_c);
	fclose(r.la.f);
	fclose(r.lc.f);
	free(r.la.buf);
	free(r.lc.buf);
	an_layout_free(&r.L);
	vms_session_free(s);
	return events;
}

static void at_many_points(const char *const *paths, uint32_t n)
{
	uint64_t total = round_trip(paths, n, 0);   /* before the first event */
	print_message("# %s: %llu events\n", paths[0], (unsigned long long)total);
	const uint64_t ks[] = { 1, 2, total / 7, total / 3, total / 2, total / 2 + 1,
				(total * 9) / 10, total - 1, total };
	for (size_t i = 0; i < sizeof ks / sizeof *ks; i++)
		if (ks[i] <= total)
			round_trip(paths, n, ks[i]);
}

static void test_synth(void **state)
{
	(void)state;
	const char *paths[2];
	vms_test_synth_pair("synth", 7, 30000, paths);
	at_many_points(paths, 2);
}

static void test_onequemukvm(void **state)
{
	(void)state;
	const char *paths[2] = { vms_test_trace("tracecompass-vm/OneQemuKvm/host.xml"),
				 vms_test_trace("tracecompass-vm/OneQemuKvm/guest.xml") };
	VMS_REQUIRE_TRACE(paths[0]);
	for (uint64_t k = 0; k < 60; k++)   /* every point of a small trace */
		round_trip(paths, 2, k);
}

static void test_kvm_hip24(void **state)
{
	(void)state;
	const char *paths[2] = { vms_test_trace("kvm-hip24/host.dat"),
				 vms_test_trace("kvm-hip24/guest-Salamander4.dat") };
	VMS_REQUIRE_TRACE(paths[0]);
	uint64_t total = round_trip(paths, 2, 100000);
	round_trip(paths, 2, total / 2 + 3);
}

/* Snapshots no run made are refused with the byte offset, before any event is run. */
static void test_refused(void **state)
{
	(void)state;
	const char *paths[2] = { vms_test_trace("tracecompass-vm/OneQemuKvm/host.xml"),
				 vms_test_trace("tracecompass-vm/OneQemuKvm/guest.xml") };
	VMS_REQUIRE_TRACE(paths[0]);
	struct vms_error err = { 0 };
	struct vms_session *s = vms_session_open(paths, 2, &(struct vms_session_opts){ 0 }, &err);
	assert_non_null(s);
	assert_int_equal(vms_session_build_model(s, &err), 0);
	struct an_layout L;
	assert_int_equal(an_layout_init(&L, vms_session_model(s)), 0);
	struct an_subs none = { 0 };
	struct an_sm *sm = an_sm_new(&L);
	an_sm_set_subs(sm, &none);
	size_t n;
	char *good = snap(sm, &n);
	an_sm_free(sm);
	struct an_sm_parts p = an_sm_parts(sm = an_sm_new(&L));
	an_sm_free(sm);
	assert_true(p.nr_vcpus > 0);
	char *bad = malloc(n + 16);
	struct { size_t off; uint8_t val; size_t len; const char *what; } cases[] = {
		{ 0, 0, 10, "header cut" },
		{ 4, 0x7f, n, "another layout" },
		{ 24, 0, 30, "vCPUs cut" },
		{ 0, 0, n - 1, "cut" },
		{ 0, 0, n + 1, "bytes after" },
		/* the first vCPU's vmm flag (after machine, vcpu, vidx, host, host_tid, base) */
		{ 24 + 24, 7, n, "values no run makes" },
		/* the first vCPU's vidx */
		{ 24 + 8, 0x55, n, "values no run makes" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		memcpy(bad, good, n);
		memset(bad + n, 0, 16);
		if (cases[i].val)
			bad[cases[i].off] = (char)cases[i].val;
		sm = an_sm_new(&L);
		an_sm_set_subs(sm, &none);
		vms_error_clear(&err);
		assert_int_not_equal(an_sm_restore(sm, bad, cases[i].len, &err), 0);
		if (!strstr(err.msg, cases[i].what) || !strstr(err.msg, "byte offset"))
			fail_msg("case %zu: '%s' does not say '%s'", i, err.msg, cases[i].what);
		an_sm_free(sm);
	}
	free(bad);
	free(good);
	an_layout_free(&L);
	vms_session_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_onequemukvm),
		cmocka_unit_test(test_synth),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_kvm_hip24),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
