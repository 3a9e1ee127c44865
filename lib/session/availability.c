/* What the traces can tell (vmscope/availability.h): each analysis's verdict from the event
 * kinds each trace holds (the counts of the last pass) and the model's links and clocks.
 *
 * Rows are decided machine by machine, then combined: every machine available gives
 * available, none gives not available, anything between partial, and the first machine that
 * falls short names what is missing. Host-side rows look at the hosts that ran vCPUs (kvm_entry
 * or kvm_exit: a xentrace host's VMENTRY/VMEXIT are read as those kinds), guest-side rows at
 * the traced guests, each with its own host. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "vmscope/availability.h"
#include "vmscope/session.h"

const char *vms_avail_what_name(enum vms_avail_what w)
{
	static const char *const n[VMS_AV_COUNT] = {
		"vCPU states", "preemption and steal", "halted vs preempted", "exits and their cost",
		"guest thread overlays", "latency blame", "fused CPU view", "clock sync",
	};
	return (unsigned)w < VMS_AV_COUNT ? n[w] : "?";
}

const char *vms_avail_what_key(enum vms_avail_what w)
{
	static const char *const n[VMS_AV_COUNT] = {
		"vcpu_states", "preemption", "halted_vs_preempted", "exits",
		"guest_threads", "latency", "pcpu_view", "clock_sync",
	};
	return (unsigned)w < VMS_AV_COUNT ? n[w] : "?";
}

const char *vms_avail_level_name(enum vms_avail_level l)
{
	static const char *const n[] = { "available", "partial", "not available" };
	return (unsigned)l <= VMS_AVAIL_NO ? n[l] : "?";
}

/* What one traced machine recorded */
struct facts {
	uint64_t n[VMS_K_COUNT];
	bool xen;   /* xentrace: runstates say blocked vs runnable and when a vCPU waits */
};

static void facts_of(struct vms_session *s, uint32_t src, struct facts *f)
{
	const struct vms_trace_meta *m = &vms_session_source(s, src)->meta;
	memset(f, 0, sizeof *f);
	f->xen = strncmp(m->format, "xentrace", 8) == 0;
	for (uint32_t t = 0; t < m->nr_types && m->type_kinds; t++)
		if (m->type_kinds[t] < VMS_K_COUNT)
			f->n[m->type_kinds[t]] += vms_session_type_count(s, src, t);
}

/* One machine's verdict for a row */
struct verdict {
	enum vms_avail_level level;
	const char *missing;
	char why[256];
};

static void say(struct verdict *v, enum vms_avail_level level, const char *missing,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void say(struct verdict *v, enum vms_avail_level level, const char *missing,
		const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	v->level = level;
	v->missing = missing;
	vsnprintf(v->why, sizeof v->why, fmt, ap);
	va_end(ap);
}

/* Machines' verdicts folded into a row: how many were available, and the first that was
 * not (or the first of all when every one was). */
struct fold {
	uint32_t n, yes, no;
	struct verdict first, first_short;
};

static void fold_add(struct fold *fo, const struct verdict *v)
{
	if (fo->n++ == 0)
		fo->first = *v;
	if (v->level != VMS_AVAIL_YES && fo->n - 1 == fo->yes)
		fo->first_short = *v;   /* the first that falls short: all before it were available */
	if (v->level == VMS_AVAIL_YES)
		fo->yes++;
	else if (v->level == VMS_AVAIL_NO)
		fo->no++;
}

static void fold_row(const struct fold *fo, struct vms_avail_row *r)
{
	const struct verdict *v = &fo->first;
	if (fo->yes == fo->n)
		r->level = VMS_AVAIL_YES;
	else if (fo->no == fo->n)
		r->level = VMS_AVAIL_NO;
	else {
		r->level = VMS_AVAIL_PARTIAL;
		v = &fo->first_short;
	}
	snprintf(r->missing, sizeof r->missing, "%s", r->level == VMS_AVAIL_YES ? "" : v->missing);
	snprintf(r->why, sizeof r->why, "%s", v->why);
}

/* The worse of a row and a further condition (the condition's words when it is worse). */
static void worsen(struct vms_avail_row *r, enum vms_avail_level level, const char *missing,
		   const char *why)
{
	if (level <= r->level)
		return;
	r->level = level;
	snprintf(r->missing, sizeof r->missing, "%s", missing);
	snprintf(r->why, sizeof r->why, "%s", why);
}

static const char *mname(struct vms_model *m, uint32_t i)
{
	const char *n = vms_model_machine_c(m, i)->name;
	return n && *n ? n : "?";
}

static bool synced(const struct vms_machine *mc)
{
	const struct vms_sync_info *si = &mc->sync;
	return si->method != VMS_SYNC_NONE && !(si->method == VMS_SYNC_HULL && !si->applied);
}

static bool linked(const struct vms_machine *mc)
{
	for (uint32_t k = 0; k < mc->nr_vcpus; k++)
		if (mc->vcpus[k].host_tid >= 0)
			return true;
	return false;
}

/* The host rows of one host that ran vCPUs: available unless something below is missing */
static void host_verdicts(struct vms_model *m, uint32_t h, const struct facts *f,
			  struct verdict v[VMS_AV_COUNT])
{
	const char *n = mname(m, h);
	for (int r = 0; r < VMS_AV_COUNT; r++)
		say(&v[r], VMS_AVAIL_YES, "", "%s", "");
	if (!f->n[VMS_K_SCHED_SWITCH]) {
		say(&v[VMS_AV_VCPU_STATES], VMS_AVAIL_PARTIAL, "sched_switch",
		    "%s recorded no sched_switch: when its vCPU threads were off their CPU is "
		    "unknown", n);
		say(&v[VMS_AV_PREEMPTION], VMS_AVAIL_NO, "sched_switch",
		    "%s recorded no sched_switch: when its vCPU threads were preempted cannot be "
		    "seen", n);
		say(&v[VMS_AV_HALTED], VMS_AVAIL_NO, "sched_switch",
		    "%s recorded no sched_switch: a vCPU off its CPU cannot be told halted or "
		    "preempted", n);
		say(&v[VMS_AV_PCPU_VIEW], VMS_AVAIL_PARTIAL, "sched_switch",
		    "%s recorded no sched_switch: a CPU's occupant is known only where events "
		    "prove it", n);
	} else if (!f->xen) {
		/* a xentrace host's runstates say when a vCPU waits and whether it blocked */
		if (!f->n[VMS_K_SCHED_WAKEUP])
			say(&v[VMS_AV_PREEMPTION], VMS_AVAIL_PARTIAL, "sched_wakeup",
			    "%s recorded no sched_wakeup: the run-queue wait of its vCPU threads is "
			    "unknown", n);
		if (!f->n[VMS_K_KVM_VCPU_WAKEUP])
			say(&v[VMS_AV_HALTED], VMS_AVAIL_PARTIAL, "kvm_vcpu_wakeup",
			    "%s recorded no kvm_vcpu_wakeup: halt-polling is not told apart", n);
	}
	if (!f->n[VMS_K_KVM_EXIT])
		say(&v[VMS_AV_EXITS], VMS_AVAIL_NO, "kvm_exit",
		    "%s recorded no kvm_exit: no exit is known", n);
	else if (!f->n[VMS_K_KVM_ENTRY])
		say(&v[VMS_AV_EXITS], VMS_AVAIL_PARTIAL, "kvm_entry",
		    "%s recorded no kvm_entry: exits are counted, their cost is unknown", n);
}

/* The guest rows of one traced guest, with what its host recorded (hf NULL: no host
 * trace that ran vCPUs) */
static void guest_verdicts(struct vms_model *m, uint32_t g, const struct facts *gf,
			   const struct facts *hf, struct verdict *ovl, struct verdict *lat)
{
	const struct vms_machine *mc = vms_model_machine_c(m, g);
	const char *n = mname(m, g);
	struct verdict pre = { .level = VMS_AVAIL_YES, .missing = "" };
	if (!gf->n[VMS_K_SCHED_SWITCH])
		say(&pre, VMS_AVAIL_NO, "sched_switch",
		    "%s recorded no sched_switch: which of its threads ran is unknown", n);
	else if (!hf)
		say(&pre, VMS_AVAIL_NO, "host trace",
		    "%s has no host trace with kvm_entry/kvm_exit: when its vCPUs stopped is "
		    "unknown", n);
	else if (!linked(mc))
		say(&pre, VMS_AVAIL_NO, "vCPU link",
		    "%s's vCPUs are linked to no host thread (no GUEST option, vmsync or "
		    "kvm_entry of its own; --map)", n);
	else if (!synced(mc))
		say(&pre, VMS_AVAIL_NO, "clock sync",
		    "%s shares no clock with its host (no TIME_SHIFT, no matched vmsync or TCP "
		    "events; --offset %s=NS)", n, n);
	*ovl = pre;
	*lat = pre;
	if (pre.level == VMS_AVAIL_NO)
		return;
	const char *h = mname(m, (uint32_t)mc->host);
	bool hsw = hf->n[VMS_K_SCHED_SWITCH] > 0;
	if (!hsw)
		say(ovl, VMS_AVAIL_PARTIAL, "sched_switch",
		    "%s recorded no sched_switch: guest threads show VM exits but not preemption", h);
	if (!gf->n[VMS_K_SCHED_WAKEUP])
		say(lat, VMS_AVAIL_NO, "sched_wakeup",
		    "%s recorded no sched_wakeup: no wake-up to measure from", n);
	else if (!hsw)
		say(lat, VMS_AVAIL_PARTIAL, "sched_switch",
		    "%s recorded no sched_switch: the preempted share of a wake-up's wait is "
		    "unknown", h);
}

void vms_session_availability(struct vms_session *s, struct vms_avail_row rows[VMS_AV_COUNT])
{
	memset(rows, 0, sizeof(struct vms_avail_row) * VMS_AV_COUNT);
	struct vms_model *m = vms_session_model(s);
	uint32_t nm = m ? vms_model_nr_machines(m) : 0;
	struct fold fo[VMS_AV_COUNT];
	memset(fo, 0, sizeof fo);
	uint32_t traced = 0, guests_seen = 0, guests_shown = 0;
	bool guest_own_view = false;
	for (uint32_t i = 0; i < nm; i++) {
		const struct vms_machine *mc = vms_model_machine_c(m, i);
		if (mc->source < 0)
			continue;
		traced++;
		struct facts f;
		facts_of(s, (uint32_t)mc->source, &f);
		if ((mc->role & VMS_ROLE_HOST) && (f.n[VMS_K_KVM_EXIT] || f.n[VMS_K_KVM_ENTRY])) {
			struct verdict v[VMS_AV_COUNT];
			host_verdicts(m, i, &f, v);
			for (int r = VMS_AV_VCPU_STATES; r <= VMS_AV_PCPU_VIEW; r++)
				if (r != VMS_AV_OVERLAYS && r != VMS_AV_LATENCY)
					fold_add(&fo[r], &v[r]);
		}
		if (mc->role & VMS_ROLE_GUEST) {
			struct facts hf, *hp = NULL;
			if (mc->host >= 0) {
				const struct vms_machine *hm = vms_model_machine_c(m, (uint32_t)mc->host);
				if (hm->source >= 0) {
					facts_of(s, (uint32_t)hm->source, &hf);
					if (hf.n[VMS_K_KVM_EXIT] || hf.n[VMS_K_KVM_ENTRY])
						hp = &hf;
				}
			}
			struct verdict ovl, lat;
			guest_verdicts(m, i, &f, hp, &ovl, &lat);
			fold_add(&fo[VMS_AV_OVERLAYS], &ovl);
			fold_add(&fo[VMS_AV_LATENCY], &lat);
			guests_seen++;
			if (ovl.level != VMS_AVAIL_NO)
				guests_shown++;
			if (f.n[VMS_K_SCHED_SWITCH])
				guest_own_view = true;
		}
		/* clock sync: every traced machine but the reference */
		if (mc->sync.method != VMS_SYNC_REFERENCE) {
			struct verdict v;
			if (synced(mc))
				say(&v, VMS_AVAIL_YES, "", "%s to %s by %s", mname(m, i),
				    mname(m, mc->sync.reference), vms_sync_method_name(mc->sync.method));
			else
				say(&v, VMS_AVAIL_NO, "clock sync",
				    "%s shares no clock with %s (%s, no matched vmsync or TCP events; "
				    "--offset %s=NS)", mname(m, i), mname(m, mc->sync.reference),
				    vms_session_source(s, (uint32_t)mc->source)->meta.timeshift
					    ? "its TIME_SHIFT names a host trace not given"
					    : "no TIME_SHIFT",
				    mname(m, i));
			fold_add(&fo[VMS_AV_CLOCK_SYNC], &v);
		}
	}
	static const char no_kvm[] = "no kvm_entry/kvm_exit in any trace: nothing tells when a "
				     "guest ran";
	for (int r = VMS_AV_VCPU_STATES; r <= VMS_AV_PCPU_VIEW; r++) {
		if (r == VMS_AV_OVERLAYS || r == VMS_AV_LATENCY)
			continue;
		if (fo[r].n) {
			fold_row(&fo[r], &rows[r]);
			continue;
		}
		rows[r].level = VMS_AVAIL_NO;
		snprintf(rows[r].missing, sizeof rows[r].missing, "%s",
			 r == VMS_AV_EXITS ? "kvm_exit" : "kvm_entry");
		snprintf(rows[r].why, sizeof rows[r].why, "%s", no_kvm);
	}
	if (!fo[VMS_AV_VCPU_STATES].n && guest_own_view) {
		rows[VMS_AV_VCPU_STATES].level = VMS_AVAIL_PARTIAL;
		snprintf(rows[VMS_AV_VCPU_STATES].why, sizeof rows[VMS_AV_VCPU_STATES].why,
			 "no host trace with kvm_entry/kvm_exit: only the guest's own view (a thread "
			 "or idle)");
	}
	static const char no_guest[] = "no guest trace: what the guest ran on its vCPUs is unknown";
	for (int r = VMS_AV_OVERLAYS; r <= VMS_AV_LATENCY; r++) {
		if (fo[r].n) {
			fold_row(&fo[r], &rows[r]);
			continue;
		}
		rows[r].level = VMS_AVAIL_NO;
		snprintf(rows[r].missing, sizeof rows[r].missing, "guest trace");
		snprintf(rows[r].why, sizeof rows[r].why, "%s", no_guest);
	}
	/* a vCPU's states and the CPUs' occupants also need the guest's side */
	if (fo[VMS_AV_VCPU_STATES].n && !guest_own_view)
		worsen(&rows[VMS_AV_VCPU_STATES], VMS_AVAIL_PARTIAL, "guest trace",
		       guests_seen ? "no guest recorded sched_switch: whether a vCPU ran a thread or "
				     "idled is unknown"
				   : "no guest trace: whether a vCPU ran a thread or idled is unknown");
	if (fo[VMS_AV_PCPU_VIEW].n && !guests_shown)
		worsen(&rows[VMS_AV_PCPU_VIEW], VMS_AVAIL_PARTIAL, "guest trace", no_guest);
	if (traced <= 1) {
		rows[VMS_AV_CLOCK_SYNC].level = VMS_AVAIL_YES;
		snprintf(rows[VMS_AV_CLOCK_SYNC].why, sizeof rows[VMS_AV_CLOCK_SYNC].why,
			 "one trace: one clock");
	} else {
		fold_row(&fo[VMS_AV_CLOCK_SYNC], &rows[VMS_AV_CLOCK_SYNC]);
	}
}
