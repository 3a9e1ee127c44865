/* Event payloads in the kernel's binary layout (kernel_formats.h) appended to the trace.dat
 * writer, or LTTng's layout to the CTF writer. */
#include <string.h>

#include "synth/event_emit.h"
#include "synth/kernel_formats.h"
#include "synth/synth_context.h"

/* The truth's count, first and last raw time of the file. */
static void account(struct vms_emitter *e, uint64_t ts, int kind)
{
	struct vms_synth_file_truth *ft = e->ft;
	if (!ft->total || ts < ft->first_ts)
		ft->first_ts = ts;
	if (!ft->total || ts > ft->last_ts)
		ft->last_ts = ts;
	ft->count[kind]++;
	ft->total++;
}

static void put(struct vms_emitter *e, uint32_t cpu, uint64_t ts, enum vms_synth_event kind,
		const void *payload, uint32_t len)
{
	if (e->rc)
		return;
	e->rc = vms_tdw_event(e->w, cpu, ts, payload, len, e->err);
	if (!e->rc)
		account(e, ts, (int)kind);
}

/* ---- LTTng CTF ---- */

static uint64_t ctf_ns(const struct vms_emitter *e, uint32_t cpu, uint64_t ts)
{
	uint64_t tsc = e->guest ? vms_synth_to_host(ts, e->ratio, e->frac, e->tsc_offset[cpu]) : ts;
	return (uint64_t)(((unsigned __int128)tsc * e->mult) >> e->shift) - e->minus_ns;
}

static void ctf_put(struct vms_emitter *e, uint32_t cpu, uint64_t ts, int kind,
		    enum vms_ctf_event ce, int32_t tid, const uint64_t *vals,
		    const char *const *comms)
{
	if (e->rc)
		return;
	e->rc = vms_ctfw_event(e->cw, cpu, ctf_ns(e, cpu, ts), e->cid[ce], tid, vals, comms, e->err);
	if (!e->rc && kind >= 0)
		account(e, ts, kind);
}

#define FLD(n, t) {n, VMS_CTFW_##t}

int vms_emit_ctf_classes(struct vms_emitter *e, struct vms_error *err)
{
	static const struct vms_ctfw_field sw[] = {
		FLD("prev_comm", COMM), FLD("prev_tid", S32), FLD("prev_prio", S32),
		FLD("prev_state", S64), FLD("next_comm", COMM), FLD("next_tid", S32),
		FLD("next_prio", S32)};
	static const struct vms_ctfw_field wk[] = {FLD("comm", COMM), FLD("tid", S32),
						   FLD("prio", S32), FLD("target_cpu", S32)};
	static const struct vms_ctfw_field en[] = {FLD("vcpu_id", U32)};
	static const struct vms_ctfw_field ex[] = {FLD("exit_reason", U32), FLD("guest_rip", U64),
						   FLD("isa", U32), FLD("info1", U64),
						   FLD("info2", U64)};
	static const struct vms_ctfw_field sd[] = {
		FLD("tid", S32), FLD("vtid", S32), FLD("pid", S32), FLD("vpid", S32),
		FLD("ppid", S32), FLD("vppid", S32), FLD("name", COMM), FLD("type", S32),
		FLD("mode", S32), FLD("submode", S32), FLD("status", S32), FLD("ns_level", U32)};
	static const struct vms_ctfw_field vs[] = {FLD("cnt", U64), FLD("vm_uid", U64)};
	static const struct vms_ctfw_field vw[] = {FLD("ns", U64), FLD("waited", U8),
						   FLD("valid", U8)};
	static const struct vms_ctfw_field xc[] = {FLD("filename", STRING), FLD("tid", S32),
						   FLD("old_tid", S32)};
	static const struct vms_ctfw_field fk[] = {
		FLD("parent_comm", COMM), FLD("parent_tid", S32), FLD("parent_pid", S32),
		FLD("parent_ns_inum", U32), FLD("child_comm", COMM), FLD("child_tid", S32),
		FLD("child_pid", S32), FLD("child_ns_inum", U32)};
	static const struct {
		const char *name;
		const struct vms_ctfw_field *f;
		uint32_t n;
	} cl[VMS_CE_N] = {
		{"sched_switch", sw, 7}, {"sched_wakeup", wk, 4},
		{"kvm_x86_entry", en, 1}, {"kvm_x86_exit", ex, 5},
		{"lttng_statedump_start", NULL, 0}, {"lttng_statedump_process_state", sd, 12},
		{"lttng_statedump_end", NULL, 0}, {"vmsync_gh_guest", vs, 2},
		{"vmsync_gh_host", vs, 2}, {"vmsync_hg_host", vs, 2}, {"vmsync_hg_guest", vs, 2},
		{"kvm_vcpu_wakeup", vw, 3}, {"sched_process_exec", xc, 3},
		{"sched_process_fork", fk, 8},
	};
	for (int i = 0; i < VMS_CE_N; i++) {
		int rc = vms_ctfw_add_event(e->cw, cl[i].name, cl[i].f, cl[i].n, &e->cid[i], err);
		if (rc)
			return rc;
	}
	return VMS_OK;
}

void vms_emit_statedump(struct vms_emitter *e, uint32_t cpu, uint64_t ts, const struct vms_task *t,
			int32_t pid)
{
	/* type 1 (thread), mode 5 (user), submode 0, status 5 (wait) as LTTng writes them */
	uint64_t v[] = {(uint64_t)t->tid, (uint64_t)t->tid, (uint64_t)pid, (uint64_t)pid, 1, 1,
			1, 5, 0, 5, 0};
	const char *c[] = {t->comm};
	ctf_put(e, cpu, ts, -1, VMS_CE_SD_PROC, 0, v, c);
}

void vms_emit_statedump_mark(struct vms_emitter *e, uint32_t cpu, uint64_t ts, bool end)
{
	ctf_put(e, cpu, ts, -1, end ? VMS_CE_SD_END : VMS_CE_SD_START, 0, NULL, NULL);
}

void vms_emit_vmsync(struct vms_emitter *e, uint32_t cpu, uint64_t ts, const struct vms_task *t,
		     enum vms_ctf_event kind, uint64_t vm_uid, uint64_t cnt)
{
	uint64_t v[] = {cnt, vm_uid};
	ctf_put(e, cpu, ts, -1, kind, t->tid, v, NULL);
}

/* ---- trace.dat ---- */

static void common(struct vms_ev_common *c, uint16_t type, uint8_t flags, uint8_t preempt,
		   int32_t pid)
{
	c->type = type;
	c->flags = flags;
	c->preempt_count = preempt;
	c->pid = pid;
}

/* comm fields are NUL-padded to 16 bytes, as the kernel's memcpy of task->comm leaves them;
 * a vms_task's comm already is (see event_emit.h) */
static inline void comm16(char dst[16], const char src[16])
{
	memcpy(dst, src, 16);
}

void vms_emit_switch(struct vms_emitter *e, uint32_t cpu, uint64_t ts, const struct vms_task *prev,
		     int64_t prev_state, const struct vms_task *next)
{
	if (e->cw) {
		/* LTTng's prio is the kernel's minus MAX_RT_PRIO */
		uint64_t v[] = {(uint64_t)prev->tid, (uint64_t)(prev->prio - 100), (uint64_t)prev_state,
				(uint64_t)next->tid, (uint64_t)(next->prio - 100)};
		const char *c[] = {prev->comm, next->comm};
		ctf_put(e, cpu, ts, VMS_SYNTH_EV_SCHED_SWITCH, VMS_CE_SWITCH, prev->tid, v, c);
		return;
	}
	struct vms_ev_sched_switch ev;
	memset(&ev, 0, sizeof ev);
	common(&ev.c, e->id[VMS_SYNTH_EV_SCHED_SWITCH], 0x01, 2, prev->tid); /* irqs off */
	comm16(ev.prev_comm, prev->comm);
	ev.prev_pid = prev->tid;
	ev.prev_prio = prev->prio;
	ev.prev_state = prev_state;
	comm16(ev.next_comm, next->comm);
	ev.next_pid = next->tid;
	ev.next_prio = next->prio;
	put(e, cpu, ts, VMS_SYNTH_EV_SCHED_SWITCH, &ev, sizeof ev);
}

void vms_emit_wakeup(struct vms_emitter *e, uint32_t cpu, uint64_t ts, const struct vms_task *waker,
		     const struct vms_task *woken, uint32_t target_cpu, int hardirq)
{
	if (e->cw) {
		uint64_t v[] = {(uint64_t)woken->tid, (uint64_t)(woken->prio - 100), target_cpu};
		const char *c[] = {woken->comm};
		(void)hardirq;
		ctf_put(e, cpu, ts, VMS_SYNTH_EV_SCHED_WAKEUP, VMS_CE_WAKEUP, waker->tid, v, c);
		return;
	}
	struct vms_ev_sched_wakeup ev;
	memset(&ev, 0, sizeof ev);
	common(&ev.c, e->id[VMS_SYNTH_EV_SCHED_WAKEUP], hardirq ? 0x09 : 0x01, 2, waker->tid);
	comm16(ev.comm, woken->comm);
	ev.pid = woken->tid;
	ev.prio = woken->prio;
	ev.target_cpu = (int32_t)target_cpu;
	put(e, cpu, ts, VMS_SYNTH_EV_SCHED_WAKEUP, &ev, sizeof ev);
}

void vms_emit_kvm_entry(struct vms_emitter *e, uint32_t cpu, uint64_t ts, const struct vms_task *t,
			uint32_t vcpu, uint64_t rip, uint32_t intr_info)
{
	if (e->cw) {
		uint64_t v[] = {vcpu};
		(void)rip, (void)intr_info;
		ctf_put(e, cpu, ts, VMS_SYNTH_EV_KVM_ENTRY, VMS_CE_ENTRY, t->tid, v, NULL);
		return;
	}
	struct vms_ev_kvm_entry ev;
	memset(&ev, 0, sizeof ev);
	common(&ev.c, e->id[VMS_SYNTH_EV_KVM_ENTRY], 0x01, 1, t->tid);
	ev.vcpu_id = vcpu;
	ev.rip = rip;
	ev.intr_info = intr_info;
	put(e, cpu, ts, VMS_SYNTH_EV_KVM_ENTRY, &ev, sizeof ev);
}

void vms_emit_kvm_exit(struct vms_emitter *e, uint32_t cpu, uint64_t ts, const struct vms_task *t,
		       uint32_t vcpu, uint32_t reason, uint64_t rip, uint64_t info1, uint64_t info2,
		       uint32_t intr_info)
{
	if (e->cw) {
		uint64_t v[] = {reason, rip, 1 /* VMX */, info1, info2};
		(void)vcpu, (void)intr_info;
		ctf_put(e, cpu, ts, VMS_SYNTH_EV_KVM_EXIT, VMS_CE_EXIT, t->tid, v, NULL);
		return;
	}
	struct vms_ev_kvm_exit ev;
	memset(&ev, 0, sizeof ev);
	common(&ev.c, e->id[VMS_SYNTH_EV_KVM_EXIT], 0x01, 1, t->tid);
	ev.exit_reason = reason;
	ev.guest_rip = rip;
	ev.isa = 1; /* VMX */
	ev.info1 = info1;
	ev.info2 = info2;
	ev.intr_info = intr_info;
	ev.vcpu_id = vcpu;
	put(e, cpu, ts, VMS_SYNTH_EV_KVM_EXIT, &ev, sizeof ev);
}

void vms_emit_kvm_vcpu_wakeup(struct vms_emitter *e, uint32_t cpu, uint64_t ts,
			      const struct vms_task *t, uint64_t ns, int waited)
{
	if (e->cw) {
		uint64_t v[] = {ns, waited ? 1 : 0, 1};
		ctf_put(e, cpu, ts, VMS_SYNTH_EV_KVM_VCPU_WAKEUP, VMS_CE_VCPU_WAKEUP, t->tid, v, NULL);
		return;
	}
	struct vms_ev_kvm_vcpu_wakeup ev;
	memset(&ev, 0, sizeof ev);
	common(&ev.c, e->id[VMS_SYNTH_EV_KVM_VCPU_WAKEUP], 0x01, 0, t->tid);
	ev.ns = ns;
	ev.waited = waited ? 1 : 0;
	ev.valid = 1;
	put(e, cpu, ts, VMS_SYNTH_EV_KVM_VCPU_WAKEUP, &ev, sizeof ev);
}

/* ---- the VMM starting: both formats ---- */

void vms_emit_exec(struct vms_emitter *e, uint32_t cpu, uint64_t ts, const struct vms_task *t,
		   const char *filename)
{
	size_t n = strnlen(filename, VMS_CTFW_STRING_MAX) + 1;
	if (e->cw) {
		uint64_t v[] = {(uint64_t)t->tid, (uint64_t)t->tid};
		const char *c[] = {filename};
		ctf_put(e, cpu, ts, VMS_SYNTH_EV_PROCESS_EXEC, VMS_CE_EXEC, t->tid, v, c);
		return;
	}
	struct {
		struct vms_ev_sched_process_exec h;
		char name[VMS_CTFW_STRING_MAX + 1];
	} ev;
	memset(&ev, 0, sizeof ev);
	common(&ev.h.c, e->id[VMS_SYNTH_EV_PROCESS_EXEC], 0, 0, t->tid);
	ev.h.filename_loc = (uint32_t)n << 16 | (uint32_t)sizeof ev.h;
	ev.h.pid = t->tid;
	ev.h.old_pid = t->tid;
	memcpy(ev.name, filename, n - 1);
	put(e, cpu, ts, VMS_SYNTH_EV_PROCESS_EXEC, &ev, (uint32_t)(sizeof ev.h + n));
}

void vms_emit_fork(struct vms_emitter *e, uint32_t cpu, uint64_t ts, const struct vms_task *parent,
		   const struct vms_task *child, int32_t pid)
{
	if (e->cw) {
		uint64_t v[] = {(uint64_t)parent->tid, (uint64_t)pid, 0, (uint64_t)child->tid,
				(uint64_t)pid, 0};
		const char *c[] = {parent->comm, child->comm};
		ctf_put(e, cpu, ts, VMS_SYNTH_EV_PROCESS_FORK, VMS_CE_FORK, parent->tid, v, c);
		return;
	}
	struct vms_ev_sched_process_fork ev;
	memset(&ev, 0, sizeof ev);
	common(&ev.c, e->id[VMS_SYNTH_EV_PROCESS_FORK], 0, 0, parent->tid);
	comm16(ev.parent_comm, parent->comm);
	ev.parent_pid = parent->tid;
	comm16(ev.child_comm, child->comm);
	ev.child_pid = child->tid;
	put(e, cpu, ts, VMS_SYNTH_EV_PROCESS_FORK, &ev, sizeof ev);
}
