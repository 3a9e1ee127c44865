/* The virtual CPU state (docs/vm-analysis.md §3), exactly the spec's transitions:
 *
 *   guest sched_switch on guest CPU n      base of vCPU n = RUNNING if next_tid != 0, else IDLE
 *   host kvm_exit by the thread of vCPU n  set VMM
 *   host kvm_entry by that thread          clear VMM
 *   host sched_switch, prev = that thread  set PREEMPTED (halted when prev_state is not R)
 *   host sched_switch, next = that thread  clear PREEMPTED
 *
 * Flags survive base changes and the base survives flag changes. The shown state is
 * preempted/halted over vmm over the base. One vms_vcpu_interval is streamed per maximal
 * interval of constant (status, state); zero-length intervals are not emitted.
 *
 * prev_state: the kernel reports a preempted task as TASK_RUNNING (0), or, since 4.14, as
 * TASK_REPORT_MAX (0x100, printed "R+"; older kernels used TASK_STATE_MAX, also above
 * 0xff): all of these are runnable. Any bit in the low byte (S, D, T, t, X, Z, P, I) means
 * the thread blocked: the vCPU halted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"

bool an_prev_state_runnable(uint64_t prev_state)
{
	return (prev_state & 0xff) == 0;
}

static enum vms_vcpu_state shown_state(const struct an_vcpu *v)
{
	if (v->preempted)
		return v->halted ? VMS_STATE_HALTED : VMS_STATE_PREEMPTED;
	if (v->vmm)
		return VMS_STATE_VMM;
	switch (v->base) {
	case VMS_VCPU_IDLE: return VMS_STATE_IDLE;
	case VMS_VCPU_RUNNING: return VMS_STATE_RUNNING;
	default: return VMS_STATE_UNKNOWN;
	}
}

static void emit(struct vms_analysis *a, struct an_vcpu *v, uint64_t end)
{
	if (end <= v->iv_start)
		return;
	v->ns[v->state] += end - v->iv_start;
	if (a->sinks.vcpu_interval) {
		struct vms_vcpu_interval iv = {
			.machine = v->machine, .vcpu = v->vcpu, .start = v->iv_start, .end = end,
			.status = v->status, .state = v->state,
		};
		a->sinks.vcpu_interval(a->sinks.ctx, &iv);
	}
}

void an_vcpu_update(struct vms_analysis *a, struct an_vcpu *v, uint64_t t)
{
	uint32_t status = v->base | (v->vmm ? VMS_VCPU_FLAG_VMM : 0) |
			  (v->preempted ? VMS_VCPU_FLAG_PREEMPTED : 0);
	enum vms_vcpu_state state = shown_state(v);
	if (status != v->status || state != v->state) {
		emit(a, v, t);
		if (t > v->iv_start)
			v->iv_start = t;
		v->status = status;
		v->state = state;
	}
	an_segment_refresh(a, v, t);
}

void an_vcpu_close(struct vms_analysis *a, struct an_vcpu *v, uint64_t t_end)
{
	emit(a, v, t_end);
	if (t_end > v->iv_start)
		v->iv_start = t_end;
	an_segment_close(a, v, t_end);
}

struct an_cpu *an_host_cpu(struct vms_analysis *a, uint32_t h, uint32_t cpu)
{
	struct an_machine *am = &a->mach[h];
	if (cpu >= AN_MAX_CPUS)
		return NULL;
	if (cpu >= am->nr_cpus) {
		uint32_t n = am->nr_cpus ? am->nr_cpus : 8;
		while (n <= cpu)
			n *= 2;
		if (n > AN_MAX_CPUS)
			n = AN_MAX_CPUS;
		struct an_cpu *nc = realloc(am->cpu, n * sizeof *nc);
		if (!nc)
			return NULL;
		for (uint32_t c = am->nr_cpus; c < n; c++) {
			nc[c].tid = -1;
			nc[c].comm[0] = '\0';
			nc[c].left_head = -1;
		}
		am->cpu = nc;
		am->nr_cpus = n;
	}
	return &am->cpu[cpu];
}

static struct an_vcpu *vcpu_of_thread_slow(struct vms_analysis *a, uint32_t h, int64_t tid)
{
	uint32_t g, n;
	if (vms_model_vcpu_of(a->model, h, (int32_t)tid, &g, &n) != 0)
		return NULL;
	if (g >= a->nr_mach || n >= a->mach[g].nr_vcpus)
		return NULL;
	return &a->v[a->mach[g].vcpu_base + n];
}

static struct an_vcpu *vcpu_of_thread(struct vms_analysis *a, uint32_t h, int64_t tid)
{
	if (tid < 0 || tid > INT32_MAX)
		return NULL;
	/* key + 1 so that the zeroed cache holds no valid entry */
	uint64_t key = ((uint64_t)h << 32 | (uint64_t)tid) + 1;
	size_t slot = (size_t)((uint64_t)tid ^ h) & 255;
	if (a->thread_cache[slot].key == key)
		return a->thread_cache[slot].v;
	struct an_vcpu *v = vcpu_of_thread_slow(a, h, tid);
	a->thread_cache[slot].key = key;
	a->thread_cache[slot].v = v;
	return v;
}

void an_on_guest_switch(struct vms_analysis *a, uint32_t m, const struct vms_event *ev,
			uint64_t t)
{
	struct an_machine *am = &a->mach[m];
	if (ev->cpu >= am->nr_vcpus)
		return;
	struct an_vcpu *v = &a->v[am->vcpu_base + ev->cpu];
	int64_t next = (int64_t)ev->f[2];
	v->gtid = next >= 0 && next <= INT32_MAX ? (int32_t)next : -1;
	v->base = next != 0 ? VMS_VCPU_RUNNING : VMS_VCPU_IDLE;
	v->gidx = -1;
	if (v->gtid > 0) {
		struct an_gthread *g = an_gthread_get(a, m, v->gtid);
		if (g) {
			v->gidx = (int32_t)(g - a->gthreads);
			if (ev->s[1] && *ev->s[1])
				an_copy_comm(g->st.comm, ev->s[1]);
		}
	}
	an_vcpu_update(a, v, t);
}

/* The off-CPU vCPUs of each host CPU are kept in a list: a sched_switch on that CPU changes
 * who runs "instead" of each of them. */
static void left_detach(struct vms_analysis *a, struct an_vcpu *v)
{
	if (!v->left_valid)
		return;
	struct an_cpu *c = an_host_cpu(a, (uint32_t)v->host, v->left_cpu);
	if (v->left_prev >= 0)
		a->v[v->left_prev].left_next = v->left_next;
	else if (c)
		c->left_head = v->left_next;
	if (v->left_next >= 0)
		a->v[v->left_next].left_prev = v->left_prev;
	v->left_valid = false;
	v->left_prev = v->left_next = -1;
}

static void left_attach(struct vms_analysis *a, struct an_vcpu *v, struct an_cpu *c,
			uint32_t cpu)
{
	int32_t self = (int32_t)(v - a->v);
	v->left_cpu = cpu;
	v->left_prev = -1;
	v->left_next = c->left_head;
	if (c->left_head >= 0)
		a->v[c->left_head].left_prev = self;
	c->left_head = self;
	v->left_valid = true;
}

void an_on_host_switch(struct vms_analysis *a, uint32_t h, const struct vms_event *ev,
		       uint64_t t)
{
	struct an_cpu *c = an_host_cpu(a, h, ev->cpu);
	int64_t prev = (int64_t)ev->f[0], next = (int64_t)ev->f[2];
	if (c) {
		c->tid = next >= 0 && next <= INT32_MAX ? (int32_t)next : -1;
		an_copy_comm(c->comm, ev->s[1]);
	}
	struct an_vcpu *vp = vcpu_of_thread(a, h, prev);
	struct an_vcpu *vn = vcpu_of_thread(a, h, next);
	if (vp && vp != vn) {
		left_detach(a, vp);
		vp->preempted = true;
		vp->halted = !an_prev_state_runnable(ev->f[1]);
		if (c && vp->host == (int32_t)h)
			left_attach(a, vp, c, ev->cpu);
		an_vcpu_update(a, vp, t);
	}
	/* the other vCPUs that left this CPU: someone else runs there now */
	for (int32_t i = c ? c->left_head : -1; i >= 0; i = a->v[i].left_next)
		if (&a->v[i] != vp)
			an_segment_refresh(a, &a->v[i], t);
	if (vn) {
		left_detach(a, vn);
		vn->preempted = false;
		vn->halted = false;
		an_runq_switch_in(vn, t);
		an_vcpu_update(a, vn, t);
	}
}

void an_on_kvm(struct vms_analysis *a, uint32_t h, const struct vms_event *ev, uint64_t t)
{
	struct an_vcpu *v = vcpu_of_thread(a, h, ev->tid);
	if (!v)
		return;
	if (ev->kind == VMS_K_KVM_EXIT) {
		an_exit_begin(a, v, ev, t);
		v->vmm = true;
		v->guest_mode = 0;
	} else {
		an_exit_end(a, v, t);
		v->vmm = false;
		v->guest_mode = 1;
	}
	an_vcpu_update(a, v, t);
}
