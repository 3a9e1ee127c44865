/* The xentrace reader and the Xen model on hand-made files (tests/xen/xt_writer.h writes
 * them): records without TSC, CPU changes, lost records, truncation, damage, and the
 * runstate / exit accounting and vCPU states of a small scenario whose numbers are derived
 * by hand in the comments. */
#include <sys/mman.h>

#include "testutil.h"
#include "xt_writer.h"

#include "vmscope/analysis.h"
#include "vmscope/session.h"
#include "vmscope/xen_model.h"
#include "vmscope/xentrace.h"
#include "input/xentrace/xentrace.h"

static char path_buf[4096];

static const char *save(struct xtw *w, const char *name, size_t len)
{
	snprintf(path_buf, sizeof path_buf, "%s/%s", vms_test_tmpdir("xentrace"), name);
	assert_int_equal(xtw_save(w, path_buf, len), 0);
	return path_buf;
}

/* Two CPUs whose blocks interleave; CPU 0's records without TSC come after a CPU 1 block with
 * a later TSC, and must take CPU 0's own last TSC. */
static size_t two_cpus(struct xtw *w)
{
	memset(w, 0, sizeof *w);
	uint32_t word = 7;
	xtw_block(w, 0);
	xtw_runstate(w, 1000, 1, 0, 1, 0);        /* d1v0 runnable -> running on CPU 0 */
	xtw_rec(w, 0x00082004u, 0, 1, &word);     /* an HVM handler record, no TSC */
	xtw_block(w, 1);
	xtw_runstate(w, 1500, 1, 1, 1, 0);        /* d1v1 on CPU 1 */
	xtw_rec(w, 0x00082013u, 0, 0, NULL);      /* no TSC: 1500, CPU 1's */
	xtw_block(w, 0);
	xtw_rec(w, 0x00082013u, 0, 0, NULL);      /* no TSC: 1000, CPU 0's, not 1500 */
	xtw_vmexit64(w, 2000, 12, 0xffffffff81000000ull);
	xtw_vmentry(w, 2600);
	xtw_end_block(w);
	return w->len;
}

static void test_notsc_and_cpu_changes(void **state)
{
	(void)state;
	struct xtw w;
	two_cpus(&w);
	struct vms_error err = { 0 };
	struct vms_source *src = vms_xentrace_open(save(&w, "two-cpus.bin", 0), &err);
	assert_non_null(src);
	assert_int_equal(src->ops->nr_streams(src), 2);
	const struct vms_xen_info *xi = vms_xentrace_info(src);
	assert_int_equal(xi->nr_pcpus, 2);
	assert_int_equal(xi->blocks, 3);
	assert_int_equal(xi->records, 7);
	assert_int_equal(xi->notsc_records, 3);
	assert_int_equal(xi->nr_domains, 1);
	assert_int_equal(xi->domains[0].id, 1);
	assert_int_equal(xi->domains[0].nr_vcpus, 2);
	assert_true(xi->domains[0].hvm);
	assert_int_equal(xi->isa, 1);
	assert_false(xi->truncated);
	/* CPU 0: 1000 (switch in), 1000 (no TSC), 1000 (no TSC, after CPU 1's block), exit at
	 * 2000, entry at 2600; all by d1v0's thread after it entered */
	static const uint64_t ts0[] = { 1000, 1000, 1000, 2000, 2600 };
	static const uint16_t kind0[] = { VMS_K_SCHED_SWITCH, VMS_K_OTHER, VMS_K_OTHER, VMS_K_KVM_EXIT,
					  VMS_K_KVM_ENTRY };
	struct vms_event ev;
	for (int i = 0; i < 5; i++) {
		assert_int_equal(src->ops->next(src, 0, &ev), 1);
		assert_int_equal(ev.ts, ts0[i]);
		assert_int_equal(ev.cpu, 0);
		assert_int_equal(ev.kind, kind0[i]);
		assert_int_equal(ev.tid, VMS_XEN_TID(1, 0));
	}
	assert_int_equal(src->ops->next(src, 0, &ev), 0);
	assert_int_equal(src->ops->next(src, 1, &ev), 1);
	assert_int_equal(ev.ts, 1500);
	assert_int_equal((int64_t)ev.f[2], VMS_XEN_TID(1, 1)); /* next = d1v1 */
	assert_int_equal(src->ops->next(src, 1, &ev), 1);
	assert_int_equal(ev.ts, 1500);
	assert_int_equal(ev.cpu, 1);
	assert_int_equal(src->ops->next(src, 1, &ev), 0);
	/* rewind gives the same again */
	src->ops->rewind(src);
	assert_int_equal(src->ops->next(src, 0, &ev), 1);
	assert_int_equal(ev.ts, 1000);
	vms_source_close(src);
}

static void test_vmexit_fields(void **state)
{
	(void)state;
	struct xtw w;
	two_cpus(&w);
	struct vms_error err = { 0 };
	struct vms_source *src = vms_xentrace_open(save(&w, "two-cpus.bin", 0), &err);
	assert_non_null(src);
	struct vms_event ev;
	for (int i = 0; i < 4; i++)
		assert_int_equal(src->ops->next(src, 0, &ev), 1);
	assert_int_equal(ev.type, VMS_XEN_T_VMEXIT);
	assert_int_equal(ev.f[0], 12);                    /* HLT */
	assert_int_equal(ev.f[1], 1);                     /* VMX */
	assert_int_equal(ev.f[2], 0xffffffff81000000ull); /* the 64-bit guest rip */
	vms_source_close(src);
}

static void test_lost_records(void **state)
{
	(void)state;
	struct xtw w;
	memset(&w, 0, sizeof w);
	xtw_block(&w, 3);
	xtw_runstate(&w, 100, 2, 0, 1, 0);
	xtw_lost(&w, 400, 5, 2, 0, 150);
	xtw_rec(&w, 0x00082013u, 410, 0, NULL);
	struct vms_error err = { 0 };
	struct vms_source *src = vms_xentrace_open(save(&w, "lost.bin", 0), &err);
	assert_non_null(src);
	const struct vms_xen_info *xi = vms_xentrace_info(src);
	assert_int_equal(xi->lost_markers, 1);
	assert_int_equal(xi->lost_records, 5);
	assert_int_equal(src->meta.lost_events, 5);
	assert_int_equal(xi->pcpu[0], 3);
	struct vms_event ev;
	assert_int_equal(src->ops->next(src, 0, &ev), 1);
	assert_int_equal(ev.flags & VMS_EVF_LOST_BEFORE, 0);
	assert_int_equal(src->ops->next(src, 0, &ev), 1);
	/* the marker written at 400 says the loss began at 150: one event there, one at 400 */
	assert_int_equal(ev.type, VMS_XEN_T_LOST_RECORDS);
	assert_int_equal(ev.ts, 150);
	assert_int_equal(ev.f[0], 5);
	assert_int_equal(ev.f[1], 0 << 16 | 2); /* u16 did 2, u16 vid 0 */
	assert_int_equal(ev.f[2], 150);
	assert_int_equal(src->ops->next(src, 0, &ev), 1);
	assert_int_equal(ev.type, VMS_XEN_T_LOST_END);
	assert_int_equal(ev.ts, 400);
	assert_int_equal(src->ops->next(src, 0, &ev), 1);
	assert_int_equal(ev.ts, 410);
	assert_int_equal(ev.cpu, 3);
	assert_true(ev.flags & VMS_EVF_LOST_BEFORE);
	/* after a loss the CPU's occupant is unknown until a runstate record says */
	assert_int_equal(ev.tid, -1);
	vms_source_close(src);
}

static void test_truncated(void **state)
{
	(void)state;
	struct xtw w;
	size_t len = two_cpus(&w);
	struct vms_error err = { 0 };
	/* cut inside the last record (the VMENTRY, 12 bytes): the six before it are read */
	struct vms_source *src = vms_xentrace_open(save(&w, "cut.bin", len - 5), &err);
	assert_non_null(src);
	assert_true(src->meta.ended_abruptly);
	const struct vms_xen_info *xi = vms_xentrace_info(src);
	assert_true(xi->truncated);
	assert_int_equal(xi->truncated_at, len - 12);
	assert_int_equal(xi->records, 6);
	struct vms_event ev;
	int n = 0;
	while (src->ops->next(src, 0, &ev) == 1)
		n++;
	assert_int_equal(n, 4);
	vms_source_close(src);
	/* cut inside the third block's header: the first two blocks are whole */
	size_t third = 12 + 16 + 8 + 12 + 16 + 4; /* two blocks: header + records */
	src = vms_xentrace_open(save(&w, "cut2.bin", third + 6), &err);
	assert_non_null(src);
	assert_true(src->meta.ended_abruptly);
	assert_int_equal(vms_xentrace_info(src)->truncated_at, third);
	assert_int_equal(vms_xentrace_info(src)->records, 4);
	vms_source_close(src);
}

static void expect_damage(struct xtw *w, const char *name, const char *what, uint64_t off)
{
	struct vms_error err = { 0 };
	struct vms_source *src = vms_xentrace_open(save(w, name, 0), &err);
	assert_null(src);
	assert_int_equal(err.status, VMS_ERR_FORMAT);
	char want[256];
	snprintf(want, sizeof want, "%s at byte offset %llu", what, (unsigned long long)off);
	if (!strstr(err.msg, want))
		fail_msg("'%s' does not say '%s'", err.msg, want);
}

static void test_damage(void **state)
{
	(void)state;
	struct xtw w;
	size_t len = two_cpus(&w);
	/* the first block says 4 bytes fewer than its records take: its second record (at 28,
	 * 8 bytes) crosses the end */
	uint32_t size;
	memcpy(&size, w.buf + 8, 4);
	size -= 4;
	memcpy(w.buf + 8, &size, 4);
	expect_damage(&w, "short-block.bin", "record crosses the end of its block", 28);
	/* a record where a block header belongs */
	two_cpus(&w);
	memcpy(&size, w.buf + 8, 4);
	size -= 8;
	memcpy(w.buf + 8, &size, 4);
	expect_damage(&w, "no-header.bin", "expected a CPU-change block header", 12 + size);
	/* a runstate record without its domain/vCPU word */
	two_cpus(&w);
	uint32_t h = 0x80021101u; /* runstate change, TSC, no extra word */
	memcpy(w.buf + 12, &h, 4);
	memmove(w.buf + 24, w.buf + 28, len - 28);
	w.len = len - 4;
	memcpy(&size, w.buf + 8, 4);
	size -= 4;
	memcpy(w.buf + 8, &size, 4);
	expect_damage(&w, "no-word.bin", "runstate record without its domain/vCPU word", 12);
	/* a CPU number beyond any machine */
	two_cpus(&w);
	uint32_t cpu = 5000;
	memcpy(w.buf + 4 + 36, &cpu, 4); /* second block's header at 36 */
	expect_damage(&w, "cpu.bin", "CPU number above 4095", 40);
}

/* The walk checks a scheduler-internal record's fit only after its block's loop (the record
 * that crosses the end is the last one it took): such a record is damage at its own offset
 * inside the file, and where the file is cut it is left out of the counts and the CPU's last
 * record is the one before it. */
static void test_sched_record_crossing(void **state)
{
	(void)state;
	struct xtw w;
	memset(&w, 0, sizeof w);
	uint32_t words[3] = { 1, 2, 3 };
	xtw_block(&w, 0);
	xtw_runstate(&w, 1000, 1, 0, 1, 0);          /* 12: 16 bytes */
	xtw_rec(&w, 0x00022001u, 0, 1, words);      /* 28: credit internal, no TSC, 8 bytes */
	xtw_rec(&w, 0x00022002u, 1100, 3, words);   /* 36: with TSC, 24 bytes */
	xtw_block(&w, 1);                           /* 60 (saving fills in the last block's size) */
	xtw_runstate(&w, 1200, 1, 1, 1, 0);
	/* the block says 8 bytes fewer: the last record (at 36) crosses its end */
	uint32_t size;
	memcpy(&size, w.buf + 8, 4);
	size -= 8;
	memcpy(w.buf + 8, &size, 4);
	expect_damage(&w, "sched-crosses.bin", "record crosses the end of its block", 36);
	/* the whole block, the file cut 6 bytes into the last record: two records read */
	size += 8;
	memcpy(w.buf + 8, &size, 4);
	struct vms_error err = { 0 };
	struct vms_source *src = vms_xentrace_open(save(&w, "sched-cut.bin", 42), &err);
	assert_non_null(src);
	const struct vms_xen_info *xi = vms_xentrace_info(src);
	assert_true(xi->truncated);
	assert_int_equal(xi->truncated_at, 36);
	assert_int_equal(xi->records, 2);
	assert_int_equal(xi->notsc_records, 1);
	assert_int_equal(xi->class_records[1], 2);
	/* the stream returns both (the CPU's last record, at 28, is always returned) */
	struct vms_event ev;
	assert_int_equal(src->ops->next(src, 0, &ev), 1);
	assert_int_equal(ev.ts, 1000);
	assert_int_equal(src->ops->next(src, 0, &ev), 1);
	assert_int_equal(ev.type, VMS_XEN_T_SCHED);
	assert_int_equal(ev.ts, 1000);
	assert_int_equal(src->ops->next(src, 0, &ev), 0);
	vms_source_close(src);
	/* cut 2 bytes into the last record's header: the same */
	src = vms_xentrace_open(save(&w, "sched-cut2.bin", 38), &err);
	assert_non_null(src);
	assert_int_equal(vms_xentrace_info(src)->truncated_at, 36);
	assert_int_equal(vms_xentrace_info(src)->records, 2);
	vms_source_close(src);
}

/* The scenario of the model test (cycles; at --cpu-hz 1e9 a cycle is a ns):
 *   CPU 0  100 d1v0 runnable->running   first seen: running from 100
 *          150 VMEXIT HLT (12)
 *          200 d1v0 running->blocked    running 100..200 (100); blocked from 200
 *          210 idle runnable->running   idle v0 running from 210
 *   CPU 1  300 d1v0 blocked->runnable   blocked 200..300 (100); the HLT exit closes: 150
 *                                       cycles; runnable (wake) from 300
 *   CPU 0  350 idle running->runnable   idle running 210..350 (140)
 *          360 d1v0 runnable->running   runnable 300..360 (60); running from 360
 *          400 VMENTRY                  (no pending exit: the wake closed it)
 *          420 VMEXIT EXTERNAL_INTERRUPT (1), 450 VMENTRY: 30 cycles
 *          500 a last record            CPU 0 ends: d1v0 running 360..500 (140), lost
 * d1v0: running 2 intervals, 240 cycles; runnable 1, 60 (wake); blocked 1, 100;
 *       exits HLT 1 x 150, EXTERNAL_INTERRUPT 1 x 30.
 * Its vCPU states (the common analysis, ns from the first event at 100): halted from the
 * switch out at 200 to the switch in at 350 (the record of the idle vCPU leaving CPU 0 names
 * d1v0 as the next one: 150); VMM 150..200 (50), 350..400 (50: the HLT exit's VMENTRY
 * comes at 400) and 420..450 (30) = 130; unknown (no guest trace) the rest: 100..150,
 * 400..420, 450..500 = 120. */
static size_t scenario(struct xtw *w)
{
	memset(w, 0, sizeof *w);
	xtw_block(w, 0);
	xtw_runstate(w, 100, 1, 0, 1, 0);
	xtw_vmexit64(w, 150, 12, 0x1000);
	xtw_runstate(w, 200, 1, 0, 0, 2);
	xtw_runstate(w, 210, 32767, 0, 1, 0);
	xtw_block(w, 1);
	xtw_runstate(w, 300, 1, 0, 2, 1);
	xtw_block(w, 0);
	xtw_runstate(w, 350, 32767, 0, 0, 1);
	xtw_runstate(w, 360, 1, 0, 1, 0);
	xtw_vmentry(w, 400);
	xtw_vmexit64(w, 420, 1, 0x2000);
	xtw_vmentry(w, 450);
	uint32_t word = 0;
	xtw_rec(w, 0x00082004u, 500, 1, &word);
	xtw_end_block(w);
	return w->len;
}

static void test_model_scenario(void **state)
{
	(void)state;
	struct xtw w;
	scenario(&w);
	const char *path = save(&w, "scenario.bin", 0);
	struct vms_session_opts o = { .tsc_hz = 1e9 };
	struct vms_error err = { 0 };
	struct vms_session *s = vms_session_open(&path, 1, &o, &err);
	assert_non_null(s);
	assert_int_equal(vms_session_run(s, NULL, NULL, NULL, &err), 0);
	const struct vms_xen_model *x = vms_session_xen_model(s, 0);
	assert_non_null(x);
	const struct vms_xen_vcpu_acct *v = NULL;
	for (uint32_t i = 0; i < vms_xen_model_nr_vcpus(x); i++)
		if (vms_xen_model_vcpu(x, i)->dom == 1)
			v = vms_xen_model_vcpu(x, i);
	assert_non_null(v);
	assert_int_equal(v->rs[VMS_XEN_RS_RUNNING].count, 2);
	assert_int_equal(v->rs[VMS_XEN_RS_RUNNING].cycles, 240);
	assert_int_equal(v->rs[VMS_XEN_RS_RUNNABLE].count, 1);
	assert_int_equal(v->rs[VMS_XEN_RS_RUNNABLE].cycles, 60);
	assert_int_equal(v->runnable[VMS_XEN_RUNNABLE_WAKE].cycles, 60);
	assert_int_equal(v->runnable[VMS_XEN_RUNNABLE_PREEMPT].count, 0);
	assert_int_equal(v->rs[VMS_XEN_RS_BLOCKED].count, 1);
	assert_int_equal(v->rs[VMS_XEN_RS_BLOCKED].cycles, 100);
	assert_int_equal(v->nr_exits, 2);
	assert_int_equal(v->exits[0].reason, 1);
	assert_int_equal(v->exits[0].c.cycles, 30);
	assert_int_equal(v->exits[1].reason, 12);
	assert_int_equal(v->exits[1].c.events, 1);
	assert_int_equal(v->exits[1].c.cycles, 150);
	assert_int_equal(vms_xen_model_anomalies(x), 0);
	/* the idle vCPU: running 210..350 */
	const struct vms_xen_vcpu_acct *idle = vms_xen_model_vcpu(x, vms_xen_model_nr_vcpus(x) - 1);
	assert_int_equal(idle->dom, 32767);
	assert_int_equal(idle->rs[VMS_XEN_RS_RUNNING].cycles, 140);

	/* the model: domain 1 is the guest d1 of the xentrace host */
	struct vms_model *m = vms_session_model(s);
	int32_t g = vms_model_find(m, "d1");
	assert_true(g > 0);
	const struct vms_machine *mc = vms_model_machine_c(m, (uint32_t)g);
	assert_int_equal(mc->host, 0);
	assert_int_equal(mc->nr_vcpus, 1);
	assert_int_equal(mc->vcpus[0].host_tid, VMS_XEN_TID(1, 0));
	assert_int_equal(mc->vcpus[0].how, VMS_LINK_XENTRACE);
	/* the common vCPU states */
	struct vms_analysis *a = vms_session_analysis(s);
	const struct vms_vcpu_stats *vs = NULL;
	for (uint32_t i = 0; i < vms_analysis_nr_vcpus(a); i++)
		if (vms_analysis_vcpu(a, i)->machine == (uint32_t)g)
			vs = vms_analysis_vcpu(a, i);
	assert_non_null(vs);
	assert_int_equal(vs->ns[VMS_STATE_HALTED], 150);
	assert_int_equal(vs->ns[VMS_STATE_VMM], 130);
	assert_int_equal(vs->ns[VMS_STATE_UNKNOWN], 120);
	assert_int_equal(vs->ns[VMS_STATE_PREEMPTED], 0);
	vms_session_free(s);
}

/* Lost-records markers given to the model directly (no reader: the first lost TSCs are what
 * the test says, going back once), numbers by hand. xenalyze's rule: every vCPU not running
 * (but the per-CPU placeholders) is made LOST at each marker's first lost TSC, an interval
 * counted only when the vCPU's TSC is > 0 and below it. The model does it lazily; this is
 * what the eager rule gives.
 *   CPU 0 100 d1v0 runnable->running (start)   200 d1v0 running->blocked (running 100)
 *   CPU 1 150 d2v0 runnable->running (start)   250 d2v0 running->runnable (running 100)
 *   CPU 1 260 d3v0 blocked->runnable: stays INIT (TSC 0)
 *   M1 CPU 0 first 300, end 310 (idle v0): d1v0 blocked 100, d2v0 runnable (preempt) 50,
 *      d3v0 LOST at 300 uncounted; idle v0 runs from 310
 *   M2 CPU 1 first 400, end 410 (idle v1): d1v0 d2v0 d3v0 lost +100; idle v1 runs from 410
 *   M3 CPU 0 first 350 (back), end 510: idle v0 running 40, then LOST 350..510 = 160;
 *      d1v0 d2v0 d3v0 nothing (400 > 350), their TSC 350
 *   M4 CPU 1 first 580, end 610: idle v1 running 170, lost 30; d1..d3 lost +230
 *   CPU 1 700 d1v0 runnable->running: d1v0 lost +120 (580..700); idle v1 running 90, LOST
 *   M5 CPU 0 first 800, end 810: idle v0 running 290, lost 10; idle v1 lost +100 (700..800);
 *      d2v0 d3v0 lost +220; d1v0 runs (not lost)
 * Totals: d1v0 running 100, blocked 100, lost 3 x = 450; d2v0 running 100, runnable 50,
 * lost 3 x = 550; d3v0 lost 3 x = 550; idle v0 running 2 x = 330, lost 2 x = 170; idle v1
 * running 2 x = 260, lost 2 x = 130. */
static void feed(struct vms_xen_model *x, uint32_t cpu, uint64_t ts, uint32_t type,
		 uint64_t f1, uint64_t f2, uint64_t f3, uint64_t f4)
{
	struct vms_event ev = { .ts = ts, .f = { 0, f1, f2, f3, f4 }, .cpu = cpu, .type = type };
	vms_xen_model_event(x, &ev);
}

static void rs(struct vms_xen_model *x, uint32_t cpu, uint64_t ts, uint32_t dom, uint32_t vcpu,
	       uint32_t old, uint32_t new)
{
	feed(x, cpu, ts, VMS_XEN_T_RUNSTATE_CHANGE, 0, 0, old << 4 | new, dom << 16 | vcpu);
}

static void marker(struct vms_xen_model *x, uint32_t cpu, uint64_t first, uint64_t end,
		   uint32_t idle_vcpu)
{
	feed(x, cpu, end, VMS_XEN_T_LOST_RECORDS, idle_vcpu << 16 | 32767u, first, 0, 0);
	feed(x, cpu, end, VMS_XEN_T_LOST_END, 0, 0, 0, 0);
}

static void expect_rs(const struct vms_xen_vcpu_acct *v, unsigned r, uint64_t count,
		      uint64_t cycles)
{
	print_message("# d%uv%u %s: %llu, %llu cycles\n", v->dom, v->vcpu, vms_xen_rs_name(r),
		      (unsigned long long)v->rs[r].count, (unsigned long long)v->rs[r].cycles);
	assert_int_equal(v->rs[r].count, count);
	assert_int_equal(v->rs[r].events, count);
	assert_int_equal(v->rs[r].cycles, cycles);
}

static void test_lost_markers_by_hand(void **state)
{
	(void)state;
	struct vms_xen_model *x = vms_xen_model_new(0, 1);
	assert_non_null(x);
	rs(x, 0, 100, 1, 0, 1, 0);
	rs(x, 1, 150, 2, 0, 1, 0);
	rs(x, 0, 200, 1, 0, 0, 2);
	rs(x, 1, 250, 2, 0, 0, 1);
	rs(x, 1, 260, 3, 0, 2, 1);
	marker(x, 0, 300, 310, 0);
	marker(x, 1, 400, 410, 1);
	marker(x, 0, 350, 510, 0);
	marker(x, 1, 580, 610, 1);
	rs(x, 1, 700, 1, 0, 1, 0);
	marker(x, 0, 800, 810, 0);
	vms_xen_model_finish(x);
	assert_int_equal(vms_xen_model_nr_vcpus(x), 5);
	const struct vms_xen_vcpu_acct *d1 = vms_xen_model_vcpu(x, 0), *d2 = vms_xen_model_vcpu(x, 1),
				       *d3 = vms_xen_model_vcpu(x, 2), *i0 = vms_xen_model_vcpu(x, 3),
				       *i1 = vms_xen_model_vcpu(x, 4);
	assert_int_equal(d3->dom, 3);
	assert_int_equal(i1->dom, 32767);
	assert_int_equal(i1->vcpu, 1);
	expect_rs(d1, VMS_XEN_RS_RUNNING, 1, 100);
	expect_rs(d1, VMS_XEN_RS_BLOCKED, 1, 100);
	expect_rs(d1, VMS_XEN_RS_LOST, 3, 450);
	expect_rs(d2, VMS_XEN_RS_RUNNING, 1, 100);
	expect_rs(d2, VMS_XEN_RS_RUNNABLE, 1, 50);
	assert_int_equal(d2->runnable[VMS_XEN_RUNNABLE_PREEMPT].cycles, 50);
	expect_rs(d2, VMS_XEN_RS_LOST, 3, 550);
	expect_rs(d3, VMS_XEN_RS_RUNNING, 0, 0);
	expect_rs(d3, VMS_XEN_RS_LOST, 3, 550);
	expect_rs(i0, VMS_XEN_RS_RUNNING, 2, 330);
	expect_rs(i0, VMS_XEN_RS_LOST, 2, 170);
	expect_rs(i1, VMS_XEN_RS_RUNNING, 2, 260);
	expect_rs(i1, VMS_XEN_RS_LOST, 2, 130);
	assert_int_equal(vms_xen_model_anomalies(x), 0);
	vms_xen_model_free(x);
}

/* The real file: an analysis run reads it in one pass (its metadata links every domain), and
 * the records skip_unread leaves out are still counted: the run's events and type counts
 * are the reader's totals of the whole file. */
static void test_real_one_pass(void **state)
{
	(void)state;
	const char *path = vms_test_trace("xen/xentrace.bin");
	VMS_REQUIRE_TRACE(path);
	struct vms_session_opts o = { .tsc_hz = 2.4e9 };
	struct vms_error err = { 0 };
	struct vms_session *s = vms_session_open(&path, 1, &o, &err);
	assert_non_null(s);
	assert_int_equal(vms_session_run(s, NULL, NULL, NULL, &err), 0);
	assert_int_equal(vms_session_passes(s), 1);
	const struct vms_xen_info *xi = vms_xentrace_info(vms_session_source(s, 0));
	assert_non_null(xi);
	assert_int_equal(xi->records, 180493); /* (xenalyze --summary reads as many) */
	assert_int_equal(vms_session_events(s), xi->records);
	uint64_t sched = 0, hvm = 0;
	for (uint32_t t = 0; t < VMS_XEN_T_COUNT; t++) {
		uint64_t n = vms_session_type_count(s, 0, t);
		if (t == VMS_XEN_T_SCHED || t == VMS_XEN_T_SCHED_SWITCH ||
		    t == VMS_XEN_T_RUNSTATE_CHANGE || t == VMS_XEN_T_RUNSTATE_CONTINUE)
			sched += n;
		if (t == VMS_XEN_T_HVM || t == VMS_XEN_T_VMENTRY || t == VMS_XEN_T_VMEXIT)
			hvm += n;
	}
	assert_int_equal(sched, xi->class_records[1]);
	assert_int_equal(hvm, xi->class_records[3]);
	vms_session_free(s);
}

/* A damaged block header can put a stream's position past the file; giving back the pages
 * below it must stay inside the mapping (madvise(MADV_DONTNEED) past it zeroed the fuzzer's
 * TLS). The "file" is one page of a region of our own; the page after it holds a sentinel. */
/* dump's names and fields of records (xentrace_names.c), each line derived by hand from the
 * words given: bit fields, a packed and a two-word vCPU, a 64-bit value from two words, a
 * signed word, a record with fewer words than its layout, padding, an unknown id. */
static void format_words(uint32_t event, const uint32_t *w, uint32_t n, const char *want)
{
	uint8_t data[4 * 8];
	for (uint32_t i = 0; i < n; i++)
		memcpy(data + 4 * i, &w[i], 4);
	struct xt_rec rec = { .event = event, .extra = n, .data = data };
	char buf[256];
	int len = vms_xt_format_record(&rec, buf, sizeof buf);
	assert_string_equal(buf, want);
	assert_int_equal(len, (int)strlen(want));
}

static void test_record_names(void **state)
{
	(void)state;
	assert_true(vms_xt_names_sorted());
	format_words(0x22215, (uint32_t[]){ 0x10006, 0x01010100 }, 2,
		     "csched2:schedule cpu=6 rq=1 tasklet=0 idle=1 smt_idle=1 tickled=1");
	format_words(0x22214, (uint32_t[]){ 0x7fff0000, 0xffffffff, 0xff67697f }, 3,
		     "csched2:runq_candidate vcpu=d32767v0 tickled_cpu=-1 credit=-10000001");
	format_words(0x2800a, (uint32_t[]){ 0, 2, 0x7fff, 0 }, 4,
		     "sched_switch prev=d0v2 next=d32767v0");
	format_words(0x81102, (uint32_t[]){ 1, 0x67783d61, 0x55ef }, 3,
		     "vmexit exit_reason=1 rip=0x55ef67783d61");
	/* 6 words, the 6th padding: not shown; a 7th, past the layout: shown raw */
	format_words(0x2220c, (uint32_t[]){ 119313, 0, 119313, 0, 0x12000002, 0xffff8301 }, 6,
		     "csched2:update_rq_load avgload=119313 b_avgload=119313 load=2 rq=0 shift=18");
	format_words(0x2220c, (uint32_t[]){ 1, 0, 2, 0, 3, 4, 5 }, 7,
		     "csched2:update_rq_load avgload=1 b_avgload=2 load=3 rq=0 shift=0 0x5");
	format_words(0x82016, (uint32_t[]){ 0x1f0 }, 1, "io_read port=0x1f0");
	format_words(0x82016, (uint32_t[]){ 0 }, 0, "io_read");
	format_words(0x84099, (uint32_t[]){ 5 }, 1, "hvm event=0x0084099 0x5");
	format_words(0x1f002, (uint32_t[]){ 7, 8 }, 2, "wrap_buffer 0x7 0x8");
	char small[8];   /* cut like snprintf, NUL-terminated, the length it needed */
	struct xt_rec rec = { .event = 0x82025, .extra = 0, .data = NULL };
	assert_int_equal(vms_xt_format_record(&rec, small, sizeof small), 6);
	assert_string_equal(small, "vlapic");
}

static void test_give_back_stays_in_mapping(void **state)
{
	(void)state;
	const size_t pg = 4096, region = 8u << 20;
	uint8_t *a = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(a != MAP_FAILED);
	memset(a + pg, 0xA5, region - pg);
	struct xt_reader r = { .fd = -1, .map = a, .size = pg };
	xt_give_back(&r, 6u << 20);   /* a position 6 MiB into a 4 KiB file */
	for (size_t i = pg; i < region; i += pg)
		assert_int_equal(a[i], 0xA5);
	assert_int_equal(r.dropped, 0);
	munmap(a, region);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_notsc_and_cpu_changes),
		cmocka_unit_test(test_vmexit_fields),
		cmocka_unit_test(test_lost_records),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_damage),
		cmocka_unit_test(test_sched_record_crossing),
		cmocka_unit_test(test_model_scenario),
		cmocka_unit_test(test_lost_markers_by_hand),
		cmocka_unit_test(test_real_one_pass),
		cmocka_unit_test(test_record_names),
		cmocka_unit_test(test_give_back_stays_in_mapping),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
