/* vmscope: the time window and the machine/vCPU filter shared by every analysis command and
 * view (--from, --to, --machine, --vcpu). The window is applied by the session (the analyses
 * see the trace as if it began at `from`, with the state known then, and ended at `to`); the
 * filter says which rows to keep, the same way for every output. */
#ifndef VMSCOPE_FILTER_H
#define VMSCOPE_FILTER_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A bound of the window: absolute reference ns, or ns after the first event (relative). */
struct vms_time_bound {
	bool set, relative;
	bool timed;        /* given in time (a unit, a decimal point, or relative seconds), not
	                      as a bare integer of the reference's own unit */
	uint64_t ns;
};

/* Absolute: "22149949585938" (an integer: ns), "22150.5" (with a decimal point: seconds, as
 * info and dump print times), "22150.5s", "22150500ms"; relative to the first event: "+1.5s",
 * "+250ms", "+10us", "+300ns", "+2" (seconds). 0, or -1 when s is none of these. */
int vms_time_bound_parse(const char *s, struct vms_time_bound *b);
/* The absolute ns of a bound, given the first event's time. */
uint64_t vms_time_bound_at(const struct vms_time_bound *b, uint64_t first);

struct vms_error;
/* The window [*lo, *hi) of the bounds (unset: 0, UINT64_MAX), given the first event's time:
 * 0, or VMS_ERR_USAGE (err set) when it holds no time of the traces: --from not before --to,
 * or --to not after the first event; or a bound given in time when the times are clock
 * cycles of no known rate (`cycles`: only a bare integer, cycles, means something then). */
int vms_window_resolve(const struct vms_time_bound *from, const struct vms_time_bound *to,
		       uint64_t first, bool cycles, uint64_t *lo, uint64_t *hi,
		       struct vms_error *err);
/* After the pass: VMS_ERR_USAGE when --from (lo) is after the traces' last event. */
int vms_window_check_end(const struct vms_time_bound *from, uint64_t lo, uint64_t last,
			 bool cycles, struct vms_error *err);

/* Which rows to keep: machine -1 any, else that machine's index; vcpu -1 any, else that
 * vCPU number (of every guest when machine is -1). */
struct vms_filter {
	int32_t machine, vcpu;
};

/* A machine-level row (a host, a guest as a whole, a guest thread). */
static inline bool vms_filter_machine(const struct vms_filter *f, uint32_t m)
{
	return !f || f->machine < 0 || (uint32_t)f->machine == m;
}
/* A row of one vCPU. */
static inline bool vms_filter_vcpu(const struct vms_filter *f, uint32_t m, uint32_t vcpu)
{
	return vms_filter_machine(f, m) && (!f || f->vcpu < 0 || (uint32_t)f->vcpu == vcpu);
}
/* A row of the fused view: host CPU `host` runs a host thread (guest < 0) or guest's vCPU.
 * --machine HOST keeps all of that host's rows; --machine GUEST and --vcpu keep the rows
 * where that guest (vCPU) runs. */
static inline bool vms_filter_pcpu(const struct vms_filter *f, uint32_t host, int32_t guest,
				   int32_t vcpu)
{
	if (f && f->vcpu < 0 && f->machine >= 0 && (uint32_t)f->machine == host)
		return true;
	if (guest < 0)
		return !f || (f->machine < 0 && f->vcpu < 0);
	return vms_filter_vcpu(f, (uint32_t)guest, (uint32_t)vcpu);
}

#ifdef __cplusplus
}
#endif
#endif
