/* The virtual CPU state machine (docs/vm-analysis.md §3): the publisher of the analysis
 * stage. It is the only code that interprets scheduler and KVM events, exactly the spec's
 * transitions:
 *
 *   guest sched_switch on guest CPU n      base of vCPU n = RUNNING if next_tid != 0, else IDLE
 *   host kvm_exit by the thread of vCPU n  set VMM
 *   host kvm_entry by that thread          clear VMM
 *   host sched_switch, prev = that thread  set PREEMPTED (halted when prev_state is not R)
 *   host sched_switch, next = that thread  clear PREEMPTED
 *
 * Flags survive base changes and the base survives flag changes. The shown state is
 * preempted/halted over vmm over the base. What happens is published as observations
 * (vmscope/observe.h); the analyses and views are consumers of those and never call back.
 *
 * prev_state: the kernel reports a preempted task as TASK_RUNNING (0), or, since 4.14, as
 * TASK_REPORT_MAX (0x100, printed "R+"; older kernels used TASK_STATE_MAX, also above
 * 0xff): all of these are runnable. Any bit in the low byte (S, D, T, t, X, Z, P, I) means
 * the thread blocked: the vCPU halted. */
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"

struct sm_vcpu {
	uint32_t machine, vcpu, vidx;
	int32_t host, host_tid;
	uint32_t base;             /* VMS_VCPU_UNKNOWN / IDLE / RUNNING */
	bool vmm, preempted, halted;
	uint32_t status;           /* the published values */
	enum vms_vcpu_state state;
	int32_t gtid;              /* guest thread current on the vCPU, -1 unknown */
	int32_t run_cpu;           /* physical CPU its thread runs on, -1 unknown */
	/* the pending exit */
	bool exit_pending, have_exit;
	uint64_t exit_t, exit_rip, exit_info1, exit_info2;
	uint32_t exit_isa, exit_reason, exit_cpu;
	/* off its CPU: the list of vCPUs that left each CPU */
	bool left_valid;
	uint32_t left_cpu;
	int32_t left_prev, left_next;
};

struct sm_cpu {
	int32_t tid;               /* -1 unknown */
	char comm[24];
	int32_t left_head;         /* first off-CPU vCPU whose thread left this CPU, -1 none: a
	                              list, so that a switch here updates them without scanning
	                              every vCPU */
};

struct sm_machine {
	struct sm_cpu *cpu;        /* as a host: [nr_cpus] */
	uint32_t nr_cpus;
};

struct an_sm {
	const struct an_layout *L;
	struct sm_vcpu *v;
	struct sm_machine *mach;
	const struct vms_observer *obs;
	const uint32_t *nr_obs;
	/* host thread -> its vCPU (or none), a direct-mapped cache in front of the model's hash
	 * map: a CPU runs the same few threads event after event, and the model does not change
	 * during the pass */
	struct { uint64_t key; struct sm_vcpu *v; } thread_cache[256];
};

bool an_prev_state_runnable(uint64_t prev_state)
{
	return (prev_state & 0xff) == 0;
}

/* ---- publishing ---- */
#define PUBLISH(sm, cb, o)                                                    \
	do {                                                                  \
		for (uint32_t i_ = 0; i_ < *(sm)->nr_obs; i_++)               \
			if ((sm)->obs[i_].cb)                                  \
				(sm)->obs[i_].cb((sm)->obs[i_].ctx, (o));      \
	} while (0)

struct an_sm *an_sm_new(const struct an_layout *L)
{
	struct an_sm *sm = calloc(1, sizeof *sm);
	if (!sm)
		return NULL;
	sm->L = L;
	sm->v = calloc(L->nr_v ? L->nr_v : 1, sizeof *sm->v);
	sm->mach = calloc(L->nr_mach ? L->nr_mach : 1, sizeof *sm->mach);
	if (!sm->v || !sm->mach) {
		an_sm_free(sm);
		return NULL;
	}
	for (uint32_t i = 0; i < L->nr_v; i++) {
		struct sm_vcpu *v = &sm->v[i];
		v->machine = L->v[i].machine;
		v->vcpu = L->v[i].vcpu;
		v->vidx = i;
		v->host = L->v[i].host;
		v->host_tid = L->v[i].host_tid;
		v->gtid = -1;
		v->run_cpu = -1;
		v->left_prev = v->left_next = -1;
	}
	return sm;
}

void an_sm_free(struct an_sm *sm)
{
	if (!sm)
		return;
	for (uint32_t m = 0; sm->mach && m < sm->L->nr_mach; m++)
		free(sm->mach[m].cpu);
	free(sm->mach);
	free(sm->v);
	free(sm);
}

void an_sm_set_observers(struct an_sm *sm, const struct vms_observer *obs, const uint32_t *nr)
{
	sm->obs = obs;
	sm->nr_obs = nr;
}

static struct sm_cpu *host_cpu(struct an_sm *sm, uint32_t h, uint32_t cpu)
{
	struct sm_machine *am = &sm->mach[h];
	if (cpu >= AN_MAX_CPUS)
		return NULL;
	if (cpu >= am->nr_cpus) {
		uint32_t n = am->nr_cpus ? am->nr_cpus : 8;
		while (n <= cpu)
			n *= 2;
		if (n > AN_MAX_CPUS)
			n = AN_MAX_CPUS;
		struct sm_cpu *nc = realloc(am->cpu, n * sizeof *nc);
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

static enum vms_vcpu_state shown_state(const struct sm_vcpu *v)
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

static bool is_away(enum vms_vcpu_state s)
{
	return s == VMS_STATE_PREEMPTED || s == VMS_STATE_HALTED;
}

/* Who runs now on the CPU a preempted/halted vCPU's thread left. */
static void publish_instead(struct an_sm *sm, struct sm_vcpu *v, uint64_t t)
{
	struct vms_obs_vcpu_instead o = {
		.machine = v->machine, .vcpu = v->vcpu, .vidx = v->vidx, .t = t,
		.host = v->host >= 0 ? (uint32_t)v->host : 0, .host_cpu = v->left_cpu,
		.tid = -1, .comm = "",
	};
	if (v->left_valid && v->host >= 0) {
		struct sm_cpu *c = host_cpu(sm, (uint32_t)v->host, v->left_cpu);
		if (c) {
			o.tid = c->tid;
			o.comm = c->comm;
		}
	}
	PUBLISH(sm, vcpu_instead, &o);
}

/* Recompute the vCPU's status at t (after its flags or base changed); publish a change. */
static void update(struct an_sm *sm, struct sm_vcpu *v, uint64_t t)
{
	uint32_t status = v->base | (v->vmm ? VMS_VCPU_FLAG_VMM : 0) |
			  (v->preempted ? VMS_VCPU_FLAG_PREEMPTED : 0);
	enum vms_vcpu_state state = shown_state(v);
	if (status == v->status && state == v->state)
		return;
	bool was_away = is_away(v->state);
	struct vms_obs_vcpu_state o = {
		.machine = v->machine, .vcpu = v->vcpu, .vidx = v->vidx, .t = t,
		.status = status, .old_status = v->status, .state = state, .old_state = v->state,
		.gtid = v->gtid, .host = v->host, .host_tid = v->host_tid,
		.host_cpu = is_away(state) ? (v->left_valid ? (int32_t)v->left_cpu : -1)
					   : v->run_cpu,
		.exit_reason = -1, .isa = 0,
	};
	if (state == VMS_STATE_VMM && v->have_exit) {
		o.exit_reason = (int32_t)(v->exit_reason & INT32_MAX);
		o.isa = v->exit_isa;
	}
	v->status = status;
	v->state = state;
	PUBLISH(sm, vcpu_state, &o);
	if (is_away(state) && !was_away)
		publish_instead(sm, v, t);
}

static struct sm_vcpu *vcpu_of_thread_slow(struct an_sm *sm, uint32_t h, int64_t tid)
{
	uint32_t g, n;
	if (vms_model_vcpu_of(sm->L->model, h, (int32_t)tid, &g, &n) != 0)
		return NULL;
	if (g >= sm->L->nr_mach || n >= sm->L->mach[g].nr_vcpus)
		return NULL;
	return &sm->v[sm->L->mach[g].vcpu_base + n];
}

static struct sm_vcpu *vcpu_of_thread(struct an_sm *sm, uint32_t h, int64_t tid)
{
	if (tid < 0 || tid > INT32_MAX)
		return NULL;
	/* key + 1 so that the zeroed cache holds no valid entry */
	uint64_t key = ((uint64_t)h << 32 | (uint64_t)tid) + 1;
	size_t slot = (size_t)((uint64_t)tid ^ h) & 255;
	if (sm->thread_cache[slot].key == key)
		return sm->thread_cache[slot].v;
	struct sm_vcpu *v = vcpu_of_thread_slow(sm, h, tid);
	sm->thread_cache[slot].key = key;
	sm->thread_cache[slot].v = v;
	return v;
}

static void on_guest_switch(struct an_sm *sm, uint32_t m, const struct vms_event *ev, uint64_t t)
{
	const struct an_layout_machine *lm = &sm->L->mach[m];
	if (ev->cpu >= lm->nr_vcpus)
		return;
	struct sm_vcpu *v = &sm->v[lm->vcpu_base + ev->cpu];
	int64_t prev = (int64_t)ev->f[0], next = (int64_t)ev->f[2];
	struct vms_obs_guest_switch o = {
		.machine = m, .vcpu = ev->cpu, .vidx = v->vidx, .t = t,
		.prev_tid = prev >= 0 && prev <= INT32_MAX ? (int32_t)prev : -1,
		.next_tid = next >= 0 && next <= INT32_MAX ? (int32_t)next : -1,
		.prev_comm = ev->s[0] ? ev->s[0] : "", .next_comm = ev->s[1] ? ev->s[1] : "",
		.prev_state = ev->f[1],
	};
	v->gtid = o.next_tid;
	v->base = next != 0 ? VMS_VCPU_RUNNING : VMS_VCPU_IDLE;
	PUBLISH(sm, guest_switch, &o);
	update(sm, v, t);
}

/* The off-CPU vCPUs of each host CPU are kept in a list: a sched_switch on that CPU changes
 * who runs "instead" of each of them. */
static void left_detach(struct an_sm *sm, struct sm_vcpu *v)
{
	if (!v->left_valid)
		return;
	struct sm_cpu *c = host_cpu(sm, (uint32_t)v->host, v->left_cpu);
	if (v->left_prev >= 0)
		sm->v[v->left_prev].left_next = v->left_next;
	else if (c)
		c->left_head = v->left_next;
	if (v->left_next >= 0)
		sm->v[v->left_next].left_prev = v->left_prev;
	v->left_valid = false;
	v->left_prev = v->left_next = -1;
}

static void left_attach(struct an_sm *sm, struct sm_vcpu *v, struct sm_cpu *c, uint32_t cpu)
{
	int32_t self = (int32_t)(v - sm->v);
	v->left_cpu = cpu;
	v->left_prev = -1;
	v->left_next = c->left_head;
	if (c->left_head >= 0)
		sm->v[c->left_head].left_prev = self;
	c->left_head = self;
	v->left_valid = true;
}

static void on_host_switch(struct an_sm *sm, uint32_t h, const struct vms_event *ev, uint64_t t)
{
	struct sm_cpu *c = host_cpu(sm, h, ev->cpu);
	int64_t prev = (int64_t)ev->f[0], next = (int64_t)ev->f[2];
	struct sm_vcpu *vp = vcpu_of_thread(sm, h, prev);
	struct sm_vcpu *vn = vcpu_of_thread(sm, h, next);
	int32_t next_tid = next >= 0 && next <= INT32_MAX ? (int32_t)next : -1;
	if (c) {
		c->tid = next_tid;
		an_copy_comm(c->comm, ev->s[1]);
	}
	struct vms_obs_cpu_run o = {
		.host = h, .cpu = ev->cpu, .t = t, .tid = next_tid,
		.comm = ev->s[1] ? ev->s[1] : "",
		.prev_tid = prev >= 0 && prev <= INT32_MAX ? (int32_t)prev : -1,
		.prev_state = ev->f[1],
		.guest = vn ? (int32_t)vn->machine : -1, .vcpu = vn ? (int32_t)vn->vcpu : -1,
		.vidx = vn ? (int32_t)vn->vidx : -1,
	};
	PUBLISH(sm, cpu_run, &o);
	if (vp && vp != vn) {
		left_detach(sm, vp);
		vp->preempted = true;
		vp->halted = !an_prev_state_runnable(ev->f[1]);
		vp->run_cpu = -1;
		if (c && vp->host == (int32_t)h)
			left_attach(sm, vp, c, ev->cpu);
		update(sm, vp, t);
	}
	/* the other vCPUs that left this CPU: someone else runs there now */
	for (int32_t i = c ? c->left_head : -1; i >= 0; i = sm->v[i].left_next)
		if (&sm->v[i] != vp && is_away(sm->v[i].state))
			publish_instead(sm, &sm->v[i], t);
	if (vn) {
		left_detach(sm, vn);
		vn->preempted = false;
		vn->halted = false;
		vn->run_cpu = (int32_t)ev->cpu;
		update(sm, vn, t);
	}
}

static void exit_obs(const struct sm_vcpu *v, uint32_t h, uint64_t t, struct vms_obs_exit *o)
{
	*o = (struct vms_obs_exit){
		.machine = v->machine, .vcpu = v->vcpu, .vidx = v->vidx, .host = h,
		.host_tid = v->host_tid, .host_cpu = v->exit_cpu, .t = t, .begin = v->exit_t,
		.isa = v->exit_isa, .reason = v->exit_reason, .guest_rip = v->exit_rip,
		.info1 = v->exit_info1, .info2 = v->exit_info2, .gtid = v->gtid,
	};
}

static void on_kvm(struct an_sm *sm, uint32_t h, const struct vms_event *ev, uint64_t t)
{
	struct sm_vcpu *v = vcpu_of_thread(sm, h, ev->tid);
	if (!v)
		return;
	v->run_cpu = (int32_t)ev->cpu;
	struct vms_obs_vcpu_mode mo = {
		.machine = v->machine, .vcpu = v->vcpu, .vidx = v->vidx, .host = h,
		.host_cpu = ev->cpu, .host_tid = ev->tid, .t = t,
		.guest_mode = ev->kind == VMS_K_KVM_ENTRY,
	};
	struct vms_obs_exit eo;
	if (ev->kind == VMS_K_KVM_EXIT) {
		if (v->exit_pending) {
			/* an exit without its entry: events were lost in between */
			exit_obs(v, h, t, &eo);
			eo.how = VMS_EXIT_LOST;
			PUBLISH(sm, exit_end, &eo);
		}
		v->exit_pending = v->have_exit = true;
		v->exit_t = t;
		v->exit_reason = (uint32_t)ev->f[0];
		v->exit_isa = (uint32_t)ev->f[1];
		v->exit_rip = ev->f[2];
		v->exit_info1 = ev->f[3];
		v->exit_info2 = ev->f[4];
		v->exit_cpu = ev->cpu;
		PUBLISH(sm, vcpu_mode, &mo);
		exit_obs(v, h, t, &eo);
		eo.how = VMS_EXIT_ENDED;
		PUBLISH(sm, exit_begin, &eo);
		v->vmm = true;
	} else {
		if (v->exit_pending) {
			v->exit_pending = false;
			exit_obs(v, h, t, &eo);
			eo.how = VMS_EXIT_ENDED;
			PUBLISH(sm, exit_end, &eo);
		}
		PUBLISH(sm, vcpu_mode, &mo);
		v->vmm = false;
	}
	update(sm, v, t);
}

static void on_host_wakeup(struct an_sm *sm, uint32_t h, const struct vms_event *ev, uint64_t t)
{
	struct sm_vcpu *v = vcpu_of_thread(sm, h, (int64_t)ev->f[0]);
	if (!v)
		return;
	struct vms_obs_vcpu_wakeup o = {
		.machine = v->machine, .vcpu = v->vcpu, .vidx = v->vidx, .host = h,
		.host_tid = (int32_t)ev->f[0], .t = t,
	};
	PUBLISH(sm, vcpu_wakeup, &o);
}

void an_sm_start(struct an_sm *sm, uint64_t t0)
{
	for (uint32_t i = 0; i < *sm->nr_obs; i++)
		if (sm->obs[i].start)
			sm->obs[i].start(sm->obs[i].ctx, t0);
}

void an_sm_event(struct an_sm *sm, const struct vms_event *ev, uint64_t t)
{
	uint32_t m = ev->machine;
	if (m < sm->L->nr_mach) {
		const struct an_layout_machine *lm = &sm->L->mach[m];
		if (lm->guest && ev->kind == VMS_K_SCHED_SWITCH)
			on_guest_switch(sm, m, ev, t);
		if (lm->host) {
			switch (ev->kind) {
			case VMS_K_SCHED_SWITCH: on_host_switch(sm, m, ev, t); break;
			case VMS_K_KVM_ENTRY:
			case VMS_K_KVM_EXIT: on_kvm(sm, m, ev, t); break;
			case VMS_K_SCHED_WAKEUP: on_host_wakeup(sm, m, ev, t); break;
			default: break;
			}
		}
	}
	for (uint32_t i = 0; i < *sm->nr_obs; i++)
		if (sm->obs[i].event)
			sm->obs[i].event(sm->obs[i].ctx, ev, t);
}

void an_sm_finish(struct an_sm *sm, uint64_t t_end)
{
	for (uint32_t i = 0; i < sm->L->nr_v; i++) {
		struct sm_vcpu *v = &sm->v[i];
		if (!v->exit_pending || v->host < 0)
			continue;
		struct vms_obs_exit eo;
		exit_obs(v, (uint32_t)v->host, t_end, &eo);
		eo.how = VMS_EXIT_UNFINISHED;
		v->exit_pending = false;
		PUBLISH(sm, exit_end, &eo);
	}
	for (uint32_t i = 0; i < *sm->nr_obs; i++)
		if (sm->obs[i].finish)
			sm->obs[i].finish(sm->obs[i].ctx, t_end);
}
