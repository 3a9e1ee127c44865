/* Event payloads in the kernel's binary layout (kernel_formats.h), appended to the writer. */
#include <string.h>

#include "synth/event_emit.h"
#include "synth/kernel_formats.h"

static void put(struct vms_emitter *e, uint32_t cpu, uint64_t ts, enum vms_synth_event kind,
		const void *payload, uint32_t len)
{
	if (e->rc)
		return;
	e->rc = vms_tdw_event(e->w, cpu, ts, payload, len, e->err);
	if (e->rc)
		return;
	struct vms_synth_file_truth *ft = e->ft;
	if (!ft->total || ts < ft->first_ts)
		ft->first_ts = ts;
	if (!ft->total || ts > ft->last_ts)
		ft->last_ts = ts;
	ft->count[kind]++;
	ft->total++;
}

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
	struct vms_ev_kvm_vcpu_wakeup ev;
	memset(&ev, 0, sizeof ev);
	common(&ev.c, e->id[VMS_SYNTH_EV_KVM_VCPU_WAKEUP], 0x01, 0, t->tid);
	ev.ns = ns;
	ev.waited = waited ? 1 : 0;
	ev.valid = 1;
	put(e, cpu, ts, VMS_SYNTH_EV_KVM_VCPU_WAKEUP, &ev, sizeof ev);
}
