/* vmscope: the fused physical-CPU view (docs/vm-analysis.md §7).
 *
 * For every physical CPU of every host, what really ran on it, one interval per maximal
 * stretch of one occupant: a host thread (the host's idle is tid 0), or guest G's vCPU v in
 * guest mode (between kvm_entry and kvm_exit) running guest thread t (0 = the guest's idle).
 *
 * The view is a consumer of the vCPU state machine's observations (vmscope/observe.h: the
 * occupants it publishes, cpu_occupant): make it, subscribe the observer it returns
 * (vms_session_observe / vms_analysis_observe), run, then free it. Nothing is lost at the start of the trace: a CPU's occupant is known from the
 * first event recorded on it (the thread that emitted it, or a sched_switch's next thread),
 * and a vCPU's guest thread from the first event of the guest on that vCPU. Before that the
 * occupant is unknown and no interval is streamed for that stretch (a guest-mode interval
 * whose guest thread is not known yet has tid -1). Once a CPU showed an occupant, a stretch
 * where none is known (after lost events, after its thread was seen on another CPU, and on a
 * host that records no sched_switch everywhere outside [kvm_entry, kvm_exit): §7) is streamed
 * as an unknown interval, guest and tid -1. Memory is bounded by the model (hosts, CPUs,
 * vCPUs), never by the number of events. */
#ifndef VMSCOPE_PCPU_VIEW_H
#define VMSCOPE_PCPU_VIEW_H

#include <stdint.h>

#include "vmscope/model.h"
#include "vmscope/observe.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vms_pcpu_interval {
	uint32_t host, cpu;      /* the host machine and its physical CPU */
	uint64_t start, end;     /* reference ns, [start, end), end > start */
	int32_t guest;           /* guest machine in guest mode there; -1: a host thread runs */
	int32_t vcpu;            /* that guest's vCPU, -1 when guest is -1 */
	int32_t tid;             /* guest >= 0: the guest thread (0 idle, -1 unknown yet);
	                            else the host thread (0 the host's idle), -1: who ran
	                            there is not known (guest -1 too: an unknown interval) */
	const char *comm;        /* its name ("idle" for a guest's idle, "" when unknown); valid
	                            during the call only; 24 bytes, NUL-padded (a sink may compare
	                            it whole) */
	/* nested guests: the CPU shows vCPU `vcpu` of a guest that is itself a host (L1), and
	 * that vCPU, as L1's CPU, shows vCPU up_vcpu of L1's guest up_guest (L2) in guest mode
	 * running up_tid (up_comm): physical CPU -> L1 vCPU -> L2 vCPU -> L2 thread. tid/comm
	 * are then L1's thread (the L2 vCPU's thread). stacked false: nothing above */
	bool stacked;
	int32_t up_guest, up_vcpu, up_tid;
	const char *up_comm;     /* as comm; "" when not stacked */
};

typedef void (*vms_pcpu_sink)(void *ctx, const struct vms_pcpu_interval *iv);

struct vms_pcpu_view;

/* A view over the machines of `model` (it must outlive the view and be complete, i.e. built
 * before the run) streaming each closed interval to sink(ctx, ...), each CPU's
 * intervals in time order (a few closed intervals may be held back to merge across
 * zero-length changes; all are out after `finish`). NULL when out of memory. */
struct vms_pcpu_view *vms_pcpu_view_new(const struct vms_model *model, vms_pcpu_sink sink,
					void *ctx);
/* The observer to subscribe (ctx = the view). */
struct vms_observer vms_pcpu_view_observer(struct vms_pcpu_view *v);
/* The observer's cpu_occupant, for a consumer that embeds the view and forwards it (a call
 * fewer than through the observer). */
void vms_pcpu_view_occupant(struct vms_pcpu_view *v, const struct vms_obs_cpu_occupant *o);
/* Start afresh with `model` (nothing known, nothing held back), for a consumer that embeds
 * the view and is itself reset for another pass (vms_observer.reset). The observer has no
 * reset of its own: its sink may not be able to take back what it was given. 0, or -1 when
 * out of memory (then the view streams nothing). */
int vms_pcpu_view_reset(struct vms_pcpu_view *v, const struct vms_model *model);
void vms_pcpu_view_free(struct vms_pcpu_view *v);

#ifdef __cplusplus
}
#endif
#endif
