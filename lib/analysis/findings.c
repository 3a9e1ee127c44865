/* Findings (include/vmscope/findings.h): a consumer for the when and where the tables do not
 * keep, then the rules over the tables at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "vmscope/clock.h"
#include "vmscope/findings.h"
#include "core/grow.h"

#define F_THIEVES 8
#define F_STORM_WINDOW 100000000ull   /* 100 ms */
#define F_STORM_MIN 5000
#define F_RIPS 4                        /* (on_exit_begin compares them at once) */
#define F_STORM_CACHE 64                /* a power of two */

struct thief { int32_t tid; char comm[24]; uint64_t first, last; };

struct f_vcpu {
	enum vms_vcpu_state state;
	int32_t tid;                   /* who runs instead, while preempted */
	char comm[24];
	uint64_t since;
	struct thief th[F_THIEVES];
	uint32_t nth;
	int32_t run_cpu;               /* the host CPU it last ran on */
	int32_t poll_cpu;              /* the host CPU it last halt-polled on */
	bool polled, polling;          /* it halt-polled at all; it is polling now */
	bool poll_cpus_many;           /* it polled on more than one host CPU */
	uint64_t poll_first, poll_last; /* from the first poll's begin to the last one's end */
};

struct f_storm {
	uint32_t machine, isa, reason;
	uint64_t win, count;           /* the current window */
	struct { uint64_t rip, count; } rip[F_RIPS];
	uint8_t nr_rip;                /* rip[] slots in use (the first ones) */
	uint64_t best_count, best_start, best_rip;
	int32_t best_vcpu;
	int32_t vcpu;                  /* the vCPU of the current window's first exit */
};

struct vms_findings {
	const struct vms_model *model;
	struct f_vcpu *v;
	uint32_t nr_v;
	uint32_t *vbase;
	struct f_storm *storm;
	uint32_t nr_storm, cap_storm;
	struct { uint64_t key; uint32_t idx; } cache[F_STORM_CACHE]; /* idx: storm + 1, 0 none */
	struct vms_keymap storm_idx;   /* (machine, isa, reason) -> storm, behind the cache */
	struct vms_finding *out;
	uint32_t nr_out, cap_out;
	bool cycles;                   /* times are clock cycles of an unknown rate */
};

/* A duration in the trace's unit: counter ticks of an unknown rate are never shown as
 * seconds (the thresholds then apply to cycles: vmscope-report(1)). */
static const char *fmt_ns(const struct vms_findings *f, uint64_t ns, char *buf, size_t len)
{
	if (f->cycles)
		vms_fmt_cycles(ns, buf, len);
	else if (ns >= 1000000000ull)
		snprintf(buf, len, "%.2f s", (double)ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
	else if (ns >= 1000)
		snprintf(buf, len, "%.1f us", (double)ns / 1e3);
	else
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	return buf;
}

/* An instant, as its offset from the trace's start t0: seconds, or cycles. */
static const char *fmt_at(const struct vms_findings *f, uint64_t t, uint64_t t0, char *buf,
			  size_t len)
{
	uint64_t d = t > t0 ? t - t0 : 0;
	if (f->cycles)
		return fmt_ns(f, d, buf, len);
	snprintf(buf, len, "%.3f s", (double)d / 1e9);
	return buf;
}

/* a preempted stretch [since, t) by the current thief ends */
static __attribute__((noinline)) void thief_note(struct f_vcpu *v, uint64_t t);

/* (inline: at every vCPU state change, and most are not of a preempted vCPU) */
static inline __attribute__((always_inline)) void thief_close(struct f_vcpu *v, uint64_t t)
{
	if (v->state == VMS_STATE_PREEMPTED && v->tid >= 0 && t > v->since)
		thief_note(v, t);
}

static void thief_note(struct f_vcpu *v, uint64_t t)
{
	uint32_t i;
	for (i = 0; i < v->nth; i++)
		if (v->th[i].tid == v->tid)
			break;
	if (i == v->nth) {
		if (v->nth == F_THIEVES)
			return;
		v->th[i] = (struct thief){ .tid = v->tid, .first = v->since };
		an_copy_comm(v->th[i].comm, v->comm);
		v->nth++;
	}
	v->th[i].last = t;
}

extern inline __attribute__((always_inline)) void an_findings_on_state(void *ctx, const struct vms_obs_vcpu_state *o)
{
	struct vms_findings *f = ctx;
	if (o->vidx >= f->nr_v)
		return;
	struct f_vcpu *v = &f->v[o->vidx];
	thief_close(v, o->t);
	if (v->polling)
		v->poll_last = o->t;
	v->polling = o->halt_polling;
	v->state = o->state;
	v->since = o->t;
	if (o->state != VMS_STATE_PREEMPTED)
		v->tid = -1;
	if (o->state == VMS_STATE_RUNNING || o->state == VMS_STATE_VMM)
		v->run_cpu = o->host_cpu;
	if (o->halt_polling) {
		if (!v->polled)
			v->poll_first = o->t;
		/* a polling thread stays on the CPU it ran on (the state may not say which) */
		int32_t cpu = o->host_cpu >= 0 ? o->host_cpu : v->run_cpu;
		if (v->polled && cpu != v->poll_cpu)
			v->poll_cpus_many = true;
		v->poll_cpu = cpu;
		v->polled = true;
		v->poll_last = o->t;
	}
}

extern inline __attribute__((always_inline)) void an_findings_on_instead(void *ctx, const struct vms_obs_vcpu_instead *o)
{
	struct vms_findings *f = ctx;
	if (o->vidx >= f->nr_v)
		return;
	struct f_vcpu *v = &f->v[o->vidx];
	thief_close(v, o->t);
	v->tid = o->tid;
	an_copy_comm24(v->comm, o->comm);
	v->since = o->t;
}

static void storm_close(struct f_storm *s)
{
	if (s->count <= s->best_count)
		return;
	s->best_count = s->count;
	s->best_start = s->win * F_STORM_WINDOW;
	s->best_vcpu = s->vcpu;
	uint64_t top = 0;
	for (int i = 0; i < F_RIPS; i++)
		if (s->rip[i].count > top) {
			top = s->rip[i].count;
			s->best_rip = s->rip[i].rip;
		}
}

/* The storm of (machine, isa, reason) behind the cache (found, or added), cached in slot c;
 * NULL when out of memory. Out of line: the cache answers nearly every exit, and the hot path
 * then keeps few registers. */
static __attribute__((noinline)) struct f_storm *storm_miss(struct vms_findings *f,
							    const struct vms_obs_exit *o,
							    uint64_t key, uint32_t c)
{
	struct f_storm *s = NULL;
	uint32_t i = an_reason_find(&f->storm_idx, o->machine, o->isa, o->reason);
	for (uint32_t k = 0; i == AN_REASON_UNINDEXED && k < f->nr_storm; k++)
		if (f->storm[k].machine == o->machine && f->storm[k].isa == o->isa &&
		    f->storm[k].reason == o->reason)
			i = k;
	if (i < f->nr_storm)
		s = &f->storm[i];
	if (!s) {
		if (f->nr_storm == f->cap_storm) {
			struct f_storm *ns = vms_grow(f->storm, &f->cap_storm, sizeof *ns, 16);
			if (!ns)
				return NULL;
			f->storm = ns;
		}
		if (i == UINT32_MAX &&
		    !an_reason_add(&f->storm_idx, o->machine, o->isa, o->reason, f->nr_storm))
			return NULL;
		s = &f->storm[f->nr_storm++];
		memset(s, 0, sizeof *s);
		s->machine = o->machine;
		s->isa = o->isa;
		s->reason = o->reason;
		s->win = UINT64_MAX;
	}
	f->cache[c].key = key;
	f->cache[c].idx = (uint32_t)(s - f->storm) + 1;
	return s;
}

extern inline __attribute__((always_inline)) void an_findings_on_exit_begin(void *ctx, const struct vms_obs_exit *o)
{
	struct vms_findings *f = ctx;
	/* (machine, isa, reason) -> its storm, at every exit: a direct-mapped cache in front of
	 * the index (a guest's exits have a handful of reasons; a hostile trace, any number) */
	uint64_t key = (uint64_t)o->machine << 40 | (uint64_t)(o->isa & 0xff) << 32 | o->reason;
	uint32_t c = (o->reason ^ o->isa << 6 ^ o->machine << 3) & (F_STORM_CACHE - 1);
	struct f_storm *s;
	if (__builtin_expect(f->cache[c].idx && f->cache[c].key == key, 1))
		s = &f->storm[f->cache[c].idx - 1];
	else if (!(s = storm_miss(f, o, key, c)))
		return;
	uint64_t w = o->t / F_STORM_WINDOW;
	if (w != s->win) {
		if (s->win != UINT64_MAX)
			storm_close(s);
		s->win = w;
		s->count = 0;
		s->vcpu = (int32_t)o->vcpu;
		memset(s->rip, 0, sizeof s->rip);
		s->nr_rip = 0;
	}
	s->count++;
	/* the window's most frequent RIP: a small space-saving tally (a RIP is in one slot at
	 * most). The slots in use are the first nr_rip (a new RIP takes the first free one, and
	 * none is freed before the window ends); when all are, it takes the first with the least
	 * count. Compared all at once, without a branch per slot: the RIPs of exits that are no
	 * storm are all different, and a branch on each compare is then a guess. */
	_Static_assert(F_RIPS == 4, "the compare below is of four slots");
	uint64_t rip = o->guest_rip;
	unsigned hit = (unsigned)(s->rip[0].rip == rip) | (unsigned)(s->rip[1].rip == rip) << 1 |
		       (unsigned)(s->rip[2].rip == rip) << 2 | (unsigned)(s->rip[3].rip == rip) << 3;
	hit &= (1u << s->nr_rip) - 1;
	unsigned slot;
	if (hit) {
		slot = (unsigned)__builtin_ctz(hit);
	} else {
		if (s->nr_rip < F_RIPS) {
			slot = s->nr_rip++;
		} else {
			uint64_t c = s->rip[0].count;
			slot = 0;
			for (unsigned i = 1; i < F_RIPS; i++) {
				bool less = s->rip[i].count < c;
				c = less ? s->rip[i].count : c;
				slot = less ? i : slot;
			}
		}
		s->rip[slot].rip = rip;
	}
	s->rip[slot].count++;
}

static void on_finish(void *ctx, uint64_t t_end)
{
	struct vms_findings *f = ctx;
	for (uint32_t i = 0; i < f->nr_v; i++)
		thief_close(&f->v[i], t_end);
	for (uint32_t i = 0; i < f->nr_storm; i++)
		storm_close(&f->storm[i]);
}

static int layout(struct vms_findings *f, const struct vms_model *model)
{
	free(f->v);
	free(f->vbase);
	f->v = NULL;
	f->vbase = NULL;
	f->nr_v = 0;
	f->nr_storm = 0;
	memset(f->cache, 0, sizeof f->cache);
	vms_keymap_free(&f->storm_idx);
	f->nr_out = 0;
	f->model = model;
	if (!model)
		return 0;
	uint32_t nm = vms_model_nr_machines(model);
	f->vbase = calloc(nm ? nm : 1, sizeof *f->vbase);
	if (!f->vbase)
		return -1;
	for (uint32_t m = 0; m < nm; m++) {
		const struct vms_machine *mc = vms_model_machine_c(model, m);
		f->vbase[m] = f->nr_v;
		f->nr_v += (mc->role & VMS_ROLE_GUEST) ? mc->nr_vcpus : 0;
	}
	f->v = calloc(f->nr_v ? f->nr_v : 1, sizeof *f->v);
	if (!f->v) {
		f->nr_v = 0;
		return -1;
	}
	for (uint32_t i = 0; i < f->nr_v; i++)
		f->v[i].tid = f->v[i].run_cpu = f->v[i].poll_cpu = -1;
	return 0;
}

static void on_reset(void *ctx, const struct vms_model *model)
{
	layout(ctx, model);
}

struct vms_findings *vms_findings_new(const struct vms_model *model, struct vms_observer *o)
{
	struct vms_findings *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	if (layout(f, model) < 0) {
		vms_findings_free(f);
		return NULL;
	}
	*o = (struct vms_observer){ .ctx = f, .vcpu_state = an_findings_on_state, .vcpu_instead = an_findings_on_instead,
				    .exit_begin = an_findings_on_exit_begin, .finish = on_finish,
				    .reset = on_reset };
	return f;
}

void vms_findings_time_unit(struct vms_findings *f, bool cycles)
{
	f->cycles = cycles;
}

void vms_findings_free(struct vms_findings *f)
{
	if (!f)
		return;
	free(f->v);
	free(f->vbase);
	free(f->storm);
	vms_keymap_free(&f->storm_idx);
	free(f->out);
	free(f);
}

static struct vms_finding *add(struct vms_findings *f, const char *kind, uint32_t machine,
			       int32_t vcpu, int32_t tid, uint64_t start, uint64_t end,
			       uint64_t score)
{
	if (f->nr_out == f->cap_out) {
		struct vms_finding *n = vms_grow(f->out, &f->cap_out, sizeof *n, 16);
		if (!n)
			return NULL;
		f->out = n;
	}
	struct vms_finding *x = &f->out[f->nr_out++];
	*x = (struct vms_finding){ .kind = kind, .machine = machine, .vcpu = vcpu, .tid = tid,
				   .start = start, .end = end, .score = score };
	return x;
}

static const char *mname(const struct vms_model *m, uint32_t i)
{
	const struct vms_machine *mc = vms_model_machine_c(m, i);
	return mc && mc->name ? mc->name : "?";
}

static int cmp_finding(const void *a, const void *b)
{
	const struct vms_finding *x = a, *y = b;
	return x->score < y->score ? 1 : x->score > y->score ? -1 : 0;
}

uint32_t vms_findings_compute(struct vms_findings *f, const struct vms_analysis *a,
			      const struct vms_latency *lat, struct vms_source *const *srcs,
			      uint32_t nr_srcs)
{
	f->nr_out = 0;
	const struct vms_model *m = f->model;
	char b[4][32];
	uint64_t t0 = 0;
	for (uint32_t i = 0; i < vms_analysis_nr_vcpus(a); i++) {
		const struct vms_vcpu_stats *v = vms_analysis_vcpu(a, i);
		if (!t0 || v->first < t0)
			t0 = v->first;
	}
	for (uint32_t i = 0; i < vms_analysis_nr_vcpus(a) && i < f->nr_v; i++) {
		const struct vms_vcpu_stats *v = vms_analysis_vcpu(a, i);
		uint64_t span = 0;
		for (int k = 0; k < VMS_STATE_COUNT; k++)
			span += v->ns[k];
		if (!span)
			continue;
		/* steal: the top thief */
		if (v->nr_steal && v->steal[0].kind == VMS_STEAL_THREAD && v->steal[0].ns * 20 >= span && v->steal[0].ns >= 1000000) {
			const struct vms_steal_entry *e = &v->steal[0];
			uint64_t first = v->first, last = v->last;
			for (uint32_t k = 0; k < f->v[i].nth; k++)
				if (f->v[i].th[k].tid == e->host_tid) {
					first = f->v[i].th[k].first;
					last = f->v[i].th[k].last;
				}
			struct vms_finding *x = add(f, "steal", v->machine, (int32_t)v->vcpu, e->host_tid,
						    first, last, e->ns);
			if (x)
				snprintf(x->text, sizeof x->text,
					 "%s vCPU %u lost %.0f%% of its time (%s) to host thread %s (tid %d) "
					 "between %s and %s", mname(m, v->machine), v->vcpu,
					 100.0 * (double)e->ns / (double)span, fmt_ns(f, e->ns, b[0], 32),
					 e->comm[0] ? e->comm : "?", e->host_tid, fmt_at(f, first, t0, b[1], 32),
					 fmt_at(f, last, t0, b[2], 32));
		}
		/* halt polling */
		if (v->halt_poll_ns * 20 >= span && v->halt_poll_ns >= 1000000) {
			struct vms_finding *x = add(f, "halt-poll", v->machine, (int32_t)v->vcpu, -1,
						    f->v[i].poll_first, f->v[i].poll_last, v->halt_poll_ns);
			if (x) {
				/* the share is of the vCPU's traced time: the host CPU's own time is
				 * not what the vCPU's span measures */
				char cpu[48] = "its host CPU";
				if (f->v[i].poll_cpus_many && f->v[i].poll_cpu >= 0)
					snprintf(cpu, sizeof cpu, "several host CPUs (last %d)",
						 f->v[i].poll_cpu);
				else if (f->v[i].poll_cpu >= 0)
					snprintf(cpu, sizeof cpu, "host CPU %d", f->v[i].poll_cpu);
				snprintf(x->text, sizeof x->text,
					 "halt polling burnt %s of %s for %s vCPU %u (%.0f%% of its traced "
					 "time): the guest was idle, the CPU was not",
					 fmt_ns(f, v->halt_poll_ns, b[0], 32), cpu, mname(m, v->machine),
					 v->vcpu, 100.0 * (double)v->halt_poll_ns / (double)span);
			}
		}
	}
	/* exit storms */
	for (uint32_t i = 0; i < f->nr_storm; i++) {
		const struct f_storm *s = &f->storm[i];
		if (s->best_count < F_STORM_MIN)
			continue;
		const char *rn = vms_exit_reason_name(s->isa, s->reason);
		char rname[24], where[200];
		snprintf(rname, sizeof rname, "%s", rn ? rn : "?");
		const struct vms_machine *mc = vms_model_machine_c(m, s->machine);
		struct vms_source *src = mc && mc->source >= 0 && (uint32_t)mc->source < nr_srcs
						 ? srcs[mc->source] : NULL;
		char sym[160];
		vms_ksyms_format(vms_source_ksyms(src), s->best_rip, sym, sizeof sym);
		snprintf(where, sizeof where, "%s", sym);
		struct vms_finding *x = add(f, "exit-storm", s->machine, s->best_vcpu, -1, s->best_start,
					    s->best_start + F_STORM_WINDOW,
					    s->best_count * 1000 /* ~1 us of host time each */);
		/* a long symbol may be cut: the sentence is for people, the fields say the rest */
		if (x && snprintf(x->text, sizeof x->text,
				  "%s storm: %llu exits in %s in %s, most from %s (at %s)", rname,
				  (unsigned long long)s->best_count,
				  f->cycles ? fmt_ns(f, F_STORM_WINDOW, b[0], 32) : "100 ms",
				  mname(m, s->machine), where, fmt_at(f, s->best_start, t0, b[1], 32)) < 0)
			x->text[0] = '\0';
	}
	/* wake-up latency tails */
	for (uint32_t i = 0; lat && i < vms_latency_nr_threads(lat); i++) {
		const struct vms_latency_thread *t = vms_latency_thread(lat, i);
		uint64_t n = vms_dist_count(t->dist);
		uint64_t p50 = vms_dist_percentile(t->dist, 50), p99 = vms_dist_percentile(t->dist, 99);
		if (n < 20 || !(p99 >= 1000000 || (p99 >= 200000 && p99 >= 10 * p50)))
			continue;
		uint64_t sum = 0;
		int top = VMS_CAUSE_UNKNOWN;
		for (int k = 0; k < VMS_CAUSE_COUNT; k++) {
			sum += t->tail_ns[k];
			if (t->tail_ns[k] > t->tail_ns[top])
				top = k;
		}
		struct vms_finding *x = add(f, "latency", t->machine, -1, t->tid, 0, 0,
					    sum ? sum : p99);
		if (!x)
			continue;
		int w = snprintf(x->text, sizeof x->text, "%s (tid %d) in %s: p99 wake-up latency %s "
				 "(p50 %s, %llu wake-ups)", t->comm[0] ? t->comm : "?", t->tid,
				 mname(m, t->machine), fmt_ns(f, p99, b[0], 32), fmt_ns(f, p50, b[1], 32),
				 (unsigned long long)n);
		if (sum && w > 0 && (size_t)w < sizeof x->text)
			snprintf(x->text + w, sizeof x->text - (size_t)w, ", %.0f%% of the tail is %s%s%s%s",
				 100.0 * (double)t->tail_ns[top] / (double)sum,
				 vms_cause_name((enum vms_cause)top), t->tail_culprit[0] ? " (" : "",
				 t->tail_culprit, t->tail_culprit[0] ? ")" : "");
	}
	/* sync and lost events, per machine */
	for (uint32_t i = 0; i < vms_model_nr_machines(m); i++) {
		const struct vms_machine *mc = vms_model_machine_c(m, i);
		const struct vms_sync_info *si = &mc->sync;
		if (si->has_containment && si->contain_total &&
		    si->contained * 100 < si->contain_total * 99) {
			double pct = 100.0 * (double)si->contained / (double)si->contain_total;
			/* below 99% the timeline is suspect: rank it above everything it could skew */
			struct vms_finding *x = add(f, "sync", i, -1, -1, 0, 0, UINT64_MAX / 2);
			if (x)
				snprintf(x->text, sizeof x->text,
					 "sync: containment %.1f%% for %s: %llu of its %llu events fall outside "
					 "guest mode, so its times may be off (see vmscope sync; --refine)", pct,
					 mname(m, i), (unsigned long long)(si->contain_total - si->contained),
					 (unsigned long long)si->contain_total);
		}
		struct vms_source *src = mc->source >= 0 && (uint32_t)mc->source < nr_srcs
						 ? srcs[mc->source] : NULL;
		if (src && (src->meta.lost_events || src->meta.lost_events_unknown ||
			    src->meta.ended_abruptly)) {
			struct vms_finding *x = add(f, "lost", i, -1, -1, 0, 0, UINT64_MAX / 4);
			if (x)
				snprintf(x->text, sizeof x->text, "%s's trace %s%s%s: what happened then is "
					 "unknown", mname(m, i),
					 src->meta.lost_events || src->meta.lost_events_unknown ? "lost events"
												 : "",
					 (src->meta.lost_events || src->meta.lost_events_unknown) &&
					 src->meta.ended_abruptly ? " and " : "",
					 src->meta.ended_abruptly ? "ended abruptly" : "");
		}
	}
	if (f->nr_out > 1)
		qsort(f->out, f->nr_out, sizeof *f->out, cmp_finding);
	return f->nr_out;
}

uint32_t vms_findings_count(const struct vms_findings *f)
{
	return f->nr_out;
}

const struct vms_finding *vms_findings_get(const struct vms_findings *f, uint32_t i)
{
	return i < f->nr_out ? &f->out[i] : NULL;
}
