/* vmscope synth end to end: the generated host + guest pair is read back by Debian's
 * trace-cmd (an independent reader), and what it shows must agree with the ground truth the
 * generator reports: event counts, first/last timestamps, options, the vCPU <-> thread links,
 * the exact TIME_SHIFT inverse (computed here in 128-bit integers from the option trace-cmd
 * decodes) and 100 % containment of guest events in guest-mode windows. */
#include <inttypes.h>

#include "tracecmd_util.h"

#include "vmscope/synth.h"

#define EVENTS 20000
#define SEED 7

static char dir[4200], host[4300], guest[4300];
static struct vms_synth_truth truth;
static char *host_rep, *guest_rep, *host_opts, *guest_opts;
static bool have_tracecmd;

static int generate(const char *h, const char *g, uint64_t seed, const char *scenario,
		    enum vms_synth_compression comp, struct vms_synth_truth *t)
{
	struct vms_synth_config c;
	vms_synth_config_init(&c);
	c.host_path = h;
	c.guest_path = g;
	c.seed = seed;
	c.events = EVENTS;
	c.scenario = scenario;
	c.compression = comp;
	struct vms_error err = { 0 };
	int rc = vms_synth_run(&c, t, &err);
	if (rc)
		print_message("# synth: %s\n", err.msg);
	return rc;
}

static char *capture(const char *fmt, const char *file)
{
	char cmd[8600];
	snprintf(cmd, sizeof cmd, fmt, file);
	int st;
	long errb;
	char *out = run_capture(cmd, &st, &errb);
	if (out && (st != 0 || errb != 0)) {
		print_message("# '%s': status %d, %ld bytes on stderr\n", cmd, st, errb);
		free(out);
		return NULL;
	}
	return out;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "%s", vms_test_tmpdir("synth"));
	snprintf(host, sizeof host, "%s/host.dat", dir);
	snprintf(guest, sizeof guest, "%s/guest.dat", dir);
	if (generate(host, guest, SEED, "noisy-neighbour", VMS_SYNTH_ZSTD, &truth))
		return -1;
	have_tracecmd = system("command -v trace-cmd >/dev/null 2>&1") == 0;
	if (have_tracecmd) {
		host_rep = capture("trace-cmd report -N --raw-ts -i '%s'", host);
		guest_rep = capture("trace-cmd report -N --raw-ts -i '%s'", guest);
		host_opts = capture("trace-cmd dump --options -i '%s'", host);
		guest_opts = capture("trace-cmd dump --options -i '%s'", guest);
		if (!host_rep || !guest_rep || !host_opts || !guest_opts)
			return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(host_rep);
	free(guest_rep);
	free(host_opts);
	free(guest_opts);
	return 0;
}

#define NEED_TRACECMD()                                                       \
	do {                                                                  \
		if (!have_tracecmd) {                                         \
			print_message("# trace-cmd is not installed: skipped\n"); \
			skip();                                               \
		}                                                             \
	} while (0)

/* Walk every event line of a report (on a private copy: tc_next cuts lines); the copy is
 * freed when the walk ends. */
struct walk {
	char *copy, *pos;
};

static struct walk walk_start(const char *rep)
{
	char *c = strdup(rep);
	assert_non_null(c);
	return (struct walk){ c, c };
}

static int walk_next(struct walk *w, struct tc_line *l)
{
	int r;
	while ((r = tc_next(&w->pos, l)) < 0)
		;
	return r;
}

#define FOR_EACH_EVENT(rep, l) \
	for (struct walk w_ = walk_start(rep); walk_next(&w_, &l) || (free(w_.copy), 0);)

static void test_reads_without_complaint(void **state)
{
	(void)state;
	NEED_TRACECMD();
	/* with the default plugins too (the kvm plugin formats kvm_exit its own way) */
	char *a = capture("trace-cmd report -i '%s'", host);
	char *b = capture("trace-cmd report -i '%s'", guest);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(count_str(a, "kvm_exit:"), truth.host.count[VMS_SYNTH_EV_KVM_EXIT]);
	free(a);
	free(b);
}

static void test_counts_and_times(void **state)
{
	(void)state;
	NEED_TRACECMD();
	const struct { const char *rep; const struct vms_synth_file_truth *ft; } f[2] = {
		{ host_rep, &truth.host }, { guest_rep, &truth.guest },
	};
	assert_true(truth.host.total + truth.guest.total >= EVENTS);
	assert_true(truth.host.total + truth.guest.total < EVENTS + EVENTS / 20);
	for (int i = 0; i < 2; i++) {
		uint64_t n[VMS_SYNTH_NEVENTS] = { 0 }, total = 0, first = UINT64_MAX, last = 0;
		struct tc_line l;
		FOR_EACH_EVENT(f[i].rep, l) {
			for (int e = 0; e < VMS_SYNTH_NEVENTS; e++)
				if (!strcmp(l.event, vms_synth_event_name(e)))
					n[e]++;
			total++;
			first = l.ts < first ? l.ts : first;
			last = l.ts > last ? l.ts : last;
		}
		for (int e = 0; e < VMS_SYNTH_NEVENTS; e++)
			assert_int_equal(n[e], f[i].ft->count[e]);
		assert_int_equal(total, f[i].ft->total);
		assert_int_equal(first, f[i].ft->first_ts);
		assert_int_equal(last, f[i].ft->last_ts);
	}
	assert_true(truth.guest.count[VMS_SYNTH_EV_KVM_ENTRY] == 0);
	assert_true(truth.host.count[VMS_SYNTH_EV_KVM_EXIT] > 1000);
}

static uint64_t hex_before(const char *out, const char *marker)
{
	const char *m = strstr(out, marker);
	assert_non_null(m);
	const char *s = m;
	while (s > out && s[-1] != '\n')
		s--;
	return strtoull(s, NULL, 16);
}

/* TIME_SHIFT as trace-cmd decodes it: per CPU {offset, scaling, frac} of the first sample. */
struct ts_cpu {
	int64_t offset;
	uint64_t scaling, frac;
};

static void parse_time_shift(struct ts_cpu *c, int ncpu)
{
	const char *p = strstr(guest_opts, "[Option TimeShift");
	assert_non_null(p);
	int cpu = 0;
	while (cpu < ncpu && (p = strstr(p, "[offset * scaling >> fraction @ time]"))) {
		const char *s = p;
		while (s[-1] != '\n')
			s--;
		long long off;
		unsigned long long sc, fr, tm;
		assert_int_equal(sscanf(s, "%lld %llu %llu %llu", &off, &sc, &fr, &tm), 4);
		c[cpu] = (struct ts_cpu){ off, sc, fr };
		/* two samples per CPU: skip the second, which must agree */
		p = strstr(p + 1, "[offset * scaling >> fraction @ time]");
		assert_non_null(p);
		s = p;
		while (s[-1] != '\n')
			s--;
		long long off2;
		unsigned long long sc2, fr2, tm2;
		assert_int_equal(sscanf(s, "%lld %llu %llu %llu", &off2, &sc2, &fr2, &tm2), 4);
		assert_true(off2 == off && sc2 == sc && fr2 == fr && tm2 > tm);
		p++;
		cpu++;
	}
	assert_int_equal(cpu, ncpu);
}

static void test_options(void **state)
{
	(void)state;
	NEED_TRACECMD();
	/* TRACEID of each file, GUEST -> the guest's TRACEID, TIME_SHIFT peer -> the host's */
	char want[64];
	snprintf(want, sizeof want, "0x%016" PRIX64 "\n", truth.host.trace_id);
	assert_non_null(strstr(host_opts, want));
	snprintf(want, sizeof want, "0x%016" PRIX64 "\n", truth.guest.trace_id);
	assert_non_null(strstr(guest_opts, want));
	assert_int_equal(hex_before(host_opts, " [trace id]"), truth.guest.trace_id);
	assert_int_equal(hex_before(guest_opts, " [peer's trace id]"), truth.host.trace_id);
	assert_non_null(strstr(host_opts, "demo-guest [Guest name]"));
	assert_non_null(strstr(host_opts, "2 [Guest CPUs]"));
	for (uint32_t v = 0; v < truth.nr_vcpus; v++) {
		snprintf(want, sizeof want, " %u %d [guest cpu, host pid]", v, truth.vcpu[v].host_tid);
		assert_non_null(strstr(host_opts, want));
	}
	snprintf(want, sizeof want, "%u %u 0 [multiplier, shift, offset]", truth.mult, truth.shift);
	assert_non_null(strstr(host_opts, want));
	assert_non_null(strstr(guest_opts, want));
	/* 2^31 / 2.9: the 2.9 GHz TSC's nanoseconds */
	assert_int_equal(truth.mult, 740511603);
	assert_non_null(strstr(host_opts, "[Option CPUCOUNT, 4 bytes]\n4\n"));
	assert_non_null(strstr(guest_opts, "[Option CPUCOUNT, 4 bytes]\n2\n"));
	struct ts_cpu tc[2];
	parse_time_shift(tc, 2);
	for (int v = 0; v < 2; v++) {
		assert_true(tc[v].offset != 0);
		assert_int_equal(tc[v].offset, truth.vcpu[v].ts_offset);
		assert_int_equal(tc[v].scaling, truth.vcpu[v].ts_scaling);
		assert_int_equal(tc[v].frac, 48);
		/* TSC scaling: 3.0 GHz guest on a 2.9 GHz host */
		assert_true(tc[v].scaling > (1ull << 48));
	}
	assert_true(tc[0].offset != tc[1].offset);
}

/* The host thread that runs kvm_entry with "vcpu N," must be the GUEST option's thread. */
static void test_vcpu_threads(void **state)
{
	(void)state;
	NEED_TRACECMD();
	struct tc_line l;
	uint64_t seen = 0;
	FOR_EACH_EVENT(host_rep, l) {
		if (strcmp(l.event, "kvm_entry"))
			continue;
		unsigned v = (unsigned)atoi(l.fields + 5);
		assert_true(v < truth.nr_vcpus);
		assert_int_equal(l.pid, truth.vcpu[v].host_tid);
		assert_int_equal(l.cpu, truth.vcpu[v].host_cpu);
		seen++;
	}
	assert_int_equal(seen, truth.host.count[VMS_SYNTH_EV_KVM_ENTRY]);
}

/* host TSC from guest TSC: floor(((g + stored_offset) << frac) / scaling), 128-bit */
static uint64_t inverse(uint64_t g, const struct ts_cpu *c)
{
	unsigned __int128 d = (unsigned __int128)(uint64_t)(g + (uint64_t)c->offset);
	return (uint64_t)((d << c->frac) / c->scaling);
}

struct window {
	uint64_t a, b;
};

/* Every guest event lies strictly inside a kvm_entry -> kvm_exit window of its vCPU's thread,
 * once its guest TSC is brought back to host TSC with the TIME_SHIFT trace-cmd decodes. */
static void test_containment(void **state)
{
	(void)state;
	NEED_TRACECMD();
	struct ts_cpu tc[2];
	parse_time_shift(tc, 2);
	struct window *w[2];
	size_t nw[2] = { 0, 0 }, cap = truth.host.count[VMS_SYNTH_EV_KVM_ENTRY] + 1;
	uint64_t open_at[2] = { 0, 0 };
	for (int v = 0; v < 2; v++) {
		w[v] = calloc(cap, sizeof *w[v]);
		assert_non_null(w[v]);
	}
	struct tc_line l;
	FOR_EACH_EVENT(host_rep, l) {
		for (int v = 0; v < 2; v++) {
			if (l.pid != truth.vcpu[v].host_tid)
				continue;
			if (!strcmp(l.event, "kvm_entry"))
				open_at[v] = l.ts;
			else if (!strcmp(l.event, "kvm_exit") && open_at[v]) {
				w[v][nw[v]++] = (struct window){ open_at[v], l.ts };
				open_at[v] = 0;
			}
		}
	}
	uint64_t inside = 0, total = 0;
	FOR_EACH_EVENT(guest_rep, l) {
		assert_true(l.cpu >= 0 && l.cpu < 2);
		uint64_t h = inverse(l.ts, &tc[l.cpu]);
		const struct window *ws = w[l.cpu];
		size_t lo = 0, hi = nw[l.cpu];
		while (lo < hi) { /* first window ending after h */
			size_t mid = (lo + hi) / 2;
			if (ws[mid].b <= h)
				lo = mid + 1;
			else
				hi = mid;
		}
		total++;
		if (lo < nw[l.cpu] && ws[lo].a < h && h < ws[lo].b)
			inside++;
	}
	assert_int_equal(total, truth.guest.total);
	assert_int_equal(inside, total);
	free(w[0]);
	free(w[1]);
}

/* The planted samples: the independent inverse of their guest TSC is the host TSC the
 * generator planted, inside the window whose kvm_entry/kvm_exit the host file holds. */
static void test_time_inverse(void **state)
{
	(void)state;
	NEED_TRACECMD();
	struct ts_cpu tc[2];
	parse_time_shift(tc, 2);
	assert_true(truth.nr_samples >= 6);
	for (uint32_t i = 0; i < truth.nr_samples; i++) {
		const struct vms_synth_sync_sample *s = &truth.sample[i];
		assert_int_equal(inverse(s->guest_tsc, &tc[s->vcpu]), s->host_tsc);
		assert_true(s->entry_tsc < s->host_tsc && s->host_tsc < s->exit_tsc);
		/* KVM's forward transform of the planted host TSC gives back the guest TSC (to
		 * within the one cycle the floor of the inverse may lose) */
		unsigned __int128 fwd = ((unsigned __int128)s->host_tsc * tc[s->vcpu].scaling) >> 48;
		uint64_t g = (uint64_t)fwd - (uint64_t)tc[s->vcpu].offset;
		assert_true(s->guest_tsc - g <= 2);
		char want[96];
		snprintf(want, sizeof want, "[%03u]%" PRIu64 ": sched_", s->vcpu, s->guest_tsc);
		assert_non_null(strstr(guest_rep, want));
		snprintf(want, sizeof want, "-%d [%03u]%" PRIu64 ": kvm_entry:", truth.vcpu[s->vcpu].host_tid,
			 truth.vcpu[s->vcpu].host_cpu, s->entry_tsc);
		assert_non_null(strstr(host_rep, want));
		snprintf(want, sizeof want, "-%d [%03u]%" PRIu64 ": kvm_exit:", truth.vcpu[s->vcpu].host_tid,
			 truth.vcpu[s->vcpu].host_cpu, s->exit_tsc);
		assert_non_null(strstr(host_rep, want));
	}
}

/* The truth's own arithmetic, and its counts against what trace-cmd shows. */
static void test_truth_consistent(void **state)
{
	(void)state;
	assert_int_equal(truth.window_start_tsc, truth.host.first_ts);
	assert_true(truth.window_end_ns > truth.window_start_ns);
	for (uint32_t v = 0; v < truth.nr_vcpus; v++) {
		const struct vms_synth_vcpu_truth *vt = &truth.vcpu[v];
		uint64_t sum = 0, steal = 0, exits = 0;
		for (int s = 0; s < VMS_SYNTH_NSTATES; s++)
			sum += vt->ns[s];
		assert_int_equal(sum, truth.window_end_ns - truth.window_start_ns);
		for (uint32_t i = 0; i < vt->nr_steal; i++)
			steal += vt->steal[i].ns;
		/* in this scenario only the neighbour (and a kworker) run while a vCPU is preempted */
		assert_int_equal(steal, vt->ns[VMS_SYNTH_PREEMPTED]);
		assert_true(vt->ns[VMS_SYNTH_PREEMPTED] > 0);
		assert_true(vt->ns[VMS_SYNTH_HALTED] > 0);
		for (uint32_t i = 0; i < vt->nr_exits; i++)
			exits += vt->exits[i].count;
		if (!have_tracecmd)
			continue;
		/* every kvm_exit is completed by a kvm_entry (the trace ends on one) */
		uint64_t n_exit = 0, n_r = 0, n_s = 0, n_wake = 0;
		char prev[32], wake[32];
		snprintf(prev, sizeof prev, "prev_pid=%d ", vt->host_tid);
		snprintf(wake, sizeof wake, " pid=%d ", vt->host_tid);
		struct tc_line l;
		FOR_EACH_EVENT(host_rep, l) {
			if (!strcmp(l.event, "kvm_exit") && l.pid == vt->host_tid)
				n_exit++;
			if (!strcmp(l.event, "sched_switch") && strstr(l.fields, prev)) {
				n_r += strstr(l.fields, "prev_state=R+") != NULL;
				n_s += strstr(l.fields, "prev_state=S") != NULL;
			}
			if (!strcmp(l.event, "sched_wakeup") && strstr(l.fields, wake))
				n_wake++;
		}
		assert_int_equal(exits, n_exit);
		assert_int_equal(vt->preemptions, n_r);
		assert_int_equal(vt->halts, n_s);
		assert_int_equal(vt->wakeups, n_wake);
	}
}

/* ---- the vCPU states recomputed from what trace-cmd shows (vm-analysis.md section 3) ---- */

struct sev {
	uint64_t ns;
	int guest, pid, cpu, kind; /* kind: 0 switch, 1 entry, 2 exit, 3 other; marks from the
	                              first pass: 4 halt begins, 5 halt ends, 6 the guest's
	                              coverage of cpu ends, 7 the host's coverage ends */
	int prev, next, runnable, hlt;
	uint64_t wake_ns;          /* kvm_vcpu_wakeup: its ns field */
};

static int sev_cmp(const void *a, const void *b)
{
	const struct sev *x = a, *y = b;
	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	/* at one instant: events, then halt begins, halt ends, coverage ends */
	int kx = x->kind >= 4 ? x->kind : 0, ky = y->kind >= 4 ? y->kind : 0;
	return kx - ky;
}

static uint64_t to_ns(uint64_t tsc)
{
	return (uint64_t)(((unsigned __int128)tsc * truth.mult) >> truth.shift);
}

static int field_int(const char *f, const char *key)
{
	const char *p = strstr(f, key);
	assert_non_null(p);
	return atoi(p + strlen(key));
}

/* The vCPU states recomputed from trace-cmd's own text, by the rules of the spec as this
 * project reads them (docs/vm-analysis.md §3 with the halt rule: a HLT exit's halt, known
 * from kvm_vcpu_wakeup's ns, is halted, not the hypervisor's; and nothing is known after a
 * trace's last event). Two passes: the first finds the halts and the ends of coverage, which
 * are then placed among the events as marks. */
static void test_states_recomputed(void **state)
{
	(void)state;
	NEED_TRACECMD();
	struct ts_cpu tc[2];
	parse_time_shift(tc, 2);
	size_t n = 0, cap = 2 * (truth.host.total + truth.guest.total) + 8;
	struct sev *ev = calloc(cap, sizeof *ev);
	assert_non_null(ev);
	uint64_t guest_last[2] = {0, 0}, host_last = 0;
	for (int g = 0; g < 2; g++) {
		struct tc_line l;
		FOR_EACH_EVENT(g ? guest_rep : host_rep, l) {
			assert_true(n < cap);
			struct sev *e = &ev[n++];
			*e = (struct sev){ .guest = g, .pid = l.pid, .cpu = l.cpu, .kind = 3 };
			e->ns = to_ns(g ? inverse(l.ts, &tc[l.cpu]) : l.ts);
			if (g && l.cpu < 2 && e->ns > guest_last[l.cpu])
				guest_last[l.cpu] = e->ns;
			if (!g && e->ns > host_last)
				host_last = e->ns;
			if (!strcmp(l.event, "sched_switch")) {
				e->kind = 0;
				e->prev = field_int(l.fields, "prev_pid=");
				e->next = field_int(l.fields, "next_pid=");
				e->runnable = strstr(l.fields, "prev_state=R") != NULL;
			} else if (!strcmp(l.event, "kvm_entry")) {
				e->kind = 1;
			} else if (!strcmp(l.event, "kvm_exit")) {
				e->kind = 2;
				e->hlt = strstr(l.fields, "reason HLT ") != NULL;
			} else if (!strcmp(l.event, "kvm_vcpu_wakeup")) {
				e->kind = 3;
				const char *p = strstr(l.fields, " time ");
				assert_non_null(p);
				e->wake_ns = strtoull(p + 6, NULL, 10);
				/* the halt [wake - ns, wake) of this thread's vCPU */
				for (int k = 0; k < 2; k++) {
					if (l.pid != truth.vcpu[k].host_tid)
						continue;
					assert_true(n + 2 <= cap);
					uint64_t tw = e->ns, th = tw - e->wake_ns;
					ev[n] = (struct sev){ .ns = th, .cpu = k, .kind = 4 };
					ev[n + 1] = (struct sev){ .ns = tw, .cpu = k, .kind = 5 };
					n += 2;
				}
			}
		}
	}
	for (int k = 0; k < 2; k++)
		ev[n++] = (struct sev){ .ns = guest_last[k], .cpu = k, .kind = 6 };
	ev[n++] = (struct sev){ .ns = host_last, .kind = 7 };
	qsort(ev, n, sizeof *ev, sev_cmp);
	struct { int base; bool vmm, pre, halted, in_halt, host_gone; uint64_t since,
		 acc[VMS_SYNTH_NSTATES]; } v[2];
	memset(v, 0, sizeof v);
	uint64_t start = ev[0].ns, end = ev[n - 1].ns;
	assert_int_equal(start, truth.window_start_ns);
	assert_int_equal(end, truth.window_end_ns);
	for (int i = 0; i < 2; i++)
		v[i].since = start;
#define SHOWN(x) ((x).host_gone ? VMS_SYNTH_UNKNOWN \
		  : (x).pre ? ((x).halted ? VMS_SYNTH_HALTED : VMS_SYNTH_PREEMPTED) \
		  : (x).vmm ? ((x).in_halt ? VMS_SYNTH_HALTED : VMS_SYNTH_VMM) : (x).base)
#define ACC(x, t) ((x).acc[SHOWN(x)] += (t) - (x).since, (x).since = (t))
	for (size_t i = 0; i < n; i++) {
		const struct sev *e = &ev[i];
		if (e->kind >= 4) {
			for (int k = 0; k < 2; k++) {
				if (e->kind != 7 && e->cpu != k)
					continue;
				ACC(v[k], e->ns);
				if (e->kind == 4)
					v[k].in_halt = true;
				else if (e->kind == 5)
					v[k].in_halt = false;
				else if (e->kind == 6)
					v[k].base = VMS_SYNTH_UNKNOWN;
				else
					v[k].host_gone = true;
			}
			continue;
		}
		if (e->guest) {
			if (e->kind == 0) {
				ACC(v[e->cpu], e->ns);
				v[e->cpu].base = e->next ? VMS_SYNTH_RUNNING : VMS_SYNTH_IDLE;
			}
			continue;
		}
		for (int k = 0; k < 2; k++) {
			int tid = truth.vcpu[k].host_tid;
			if ((e->kind == 1 || e->kind == 2) && e->pid == tid) {
				ACC(v[k], e->ns);
				v[k].vmm = e->kind == 2;
			}
			if (e->kind == 0 && e->prev == tid) {
				ACC(v[k], e->ns);
				v[k].pre = true;
				v[k].halted = !e->runnable;
			}
			if (e->kind == 0 && e->next == tid) {
				ACC(v[k], e->ns);
				v[k].pre = false;
			}
		}
	}
	for (int k = 0; k < 2; k++) {
		ACC(v[k], end);
		for (int s = 0; s < VMS_SYNTH_NSTATES; s++)
			assert_int_equal(v[k].acc[s], truth.vcpu[k].ns[s]);
		assert_true(v[k].acc[VMS_SYNTH_HALTED] > 0);
	}
#undef ACC
#undef SHOWN
	free(ev);
}

static bool same_file(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	bool same = fa && fb;
	while (same) {
		int ca = fgetc(fa), cb = fgetc(fb);
		if (ca != cb)
			same = false;
		if (ca == EOF || cb == EOF)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

static void test_determinism(void **state)
{
	(void)state;
	char h2[4400], g2[4400];
	snprintf(h2, sizeof h2, "%s/host2.dat", dir);
	snprintf(g2, sizeof g2, "%s/guest2.dat", dir);
	struct vms_synth_truth *t2 = calloc(1, sizeof *t2);
	assert_non_null(t2);
	assert_int_equal(generate(h2, g2, SEED, "noisy-neighbour", VMS_SYNTH_ZSTD, t2), 0);
	assert_true(same_file(host, h2));
	assert_true(same_file(guest, g2));
	assert_int_equal(t2->vcpu[0].ns[VMS_SYNTH_RUNNING], truth.vcpu[0].ns[VMS_SYNTH_RUNNING]);
	assert_int_equal(generate(h2, g2, SEED + 1, "noisy-neighbour", VMS_SYNTH_ZSTD, t2), 0);
	assert_false(same_file(host, h2));
	assert_false(same_file(guest, g2));
	free(t2);
}

static void test_quiet(void **state)
{
	(void)state;
	char h2[4400], g2[4400];
	snprintf(h2, sizeof h2, "%s/quiet-host.dat", dir);
	snprintf(g2, sizeof g2, "%s/quiet-guest.dat", dir);
	struct vms_synth_truth *t2 = calloc(1, sizeof *t2);
	assert_non_null(t2);
	assert_int_equal(generate(h2, g2, SEED, "quiet", VMS_SYNTH_NONE, t2), 0);
	for (uint32_t v = 0; v < t2->nr_vcpus; v++) {
		assert_int_equal(t2->vcpu[v].ns[VMS_SYNTH_PREEMPTED], 0);
		assert_int_equal(t2->vcpu[v].nr_steal, 0);
		assert_true(t2->vcpu[v].ns[VMS_SYNTH_HALTED] > 0);
	}
	if (have_tracecmd) {
		/* uncompressed files read back the same way */
		char *rep = capture("trace-cmd report -N --raw-ts -i '%s'", h2);
		assert_non_null(rep);
		assert_int_equal(count_str(rep, "stress-ng"), 0);
		assert_int_equal(count_str(rep, ": kvm_exit: "), t2->host.count[VMS_SYNTH_EV_KVM_EXIT]);
		free(rep);
	}
	struct vms_error err = { 0 };
	struct vms_synth_config c;
	vms_synth_config_init(&c);
	c.host_path = h2;
	c.guest_path = g2;
	c.scenario = "nope";
	assert_int_equal(vms_synth_run(&c, t2, &err), VMS_ERR_USAGE);
	free(t2);
}

static void test_cli(void **state)
{
	(void)state;
	char exe[4200];
	snprintf(exe, sizeof exe, "%s/tools/vmscope/vmscope", vms_test_build());
	if (access(exe, X_OK)) {
		print_message("# %s not built: skipped\n", exe);
		skip();
	}
	char cmd[16000];
	const struct { const char *args; int status; } cases[] = {
		{ "synth --help >/dev/null", 0 },
		{ "synth --bogus 2>/dev/null", 2 },
		{ "synth --events abc 2>/dev/null", 2 },
		{ "synth --events 10 2>/dev/null", 2 },
		{ "synth --compression lz4 2>/dev/null", 2 },
		{ "synth --scenario nope 2>/dev/null", 2 },
		{ "synth extra 2>/dev/null", 2 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(cmd, sizeof cmd, "'%s' %s", exe, cases[i].args);
		int st = system(cmd);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), cases[i].status);
	}
	snprintf(cmd, sizeof cmd, "(cd '%s' && '%s' synth --events 5000 --seed 3 --out cli "
		 "--truth cli/truth.json 2>&1)", dir, exe);
	int st;
	char *out = run_capture(cmd, &st, NULL);
	assert_non_null(out);
	assert_int_equal(st, 0);
	assert_non_null(strstr(out, "SIMULATED"));
	free(out);
	char p[4400];
	snprintf(p, sizeof p, "%s/cli/truth.json", dir);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	char buf[256];
	assert_non_null(fgets(buf, sizeof buf, f));
	assert_non_null(fgets(buf, sizeof buf, f));
	assert_non_null(strstr(buf, "\"simulated\": true"));
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads_without_complaint),
		cmocka_unit_test(test_counts_and_times),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_vcpu_threads),
		cmocka_unit_test(test_containment),
		cmocka_unit_test(test_time_inverse),
		cmocka_unit_test(test_truth_consistent),
		cmocka_unit_test(test_states_recomputed),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_quiet),
		cmocka_unit_test(test_cli),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
