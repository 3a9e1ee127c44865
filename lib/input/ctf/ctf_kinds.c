/* LTTng kernel names (lttng-modules 2.x; Trace Compass's vmsync and inet_sock add-ons) onto
 * vmscope's kinds. Field spellings differ between versions: each slot lists the names it
 * accepts, and fields nested in variants (the TCP header of net_dev_queue and
 * netif_receive_skb) are found at any depth; the one the event decoded wins. */
#include <string.h>

#include "ctf_kinds.h"
#include "vmscope/event.h"

#define F(...) {__VA_ARGS__, NULL}

struct rule {
	const char *event;
	uint16_t kind;
	const char *f[5][4];
	const char *s[2][3];
	uint8_t required;
	bool basename;
};

static const struct rule rules[] = {
	{"sched_switch", VMS_K_SCHED_SWITCH,
	 {F("prev_tid"), F("prev_state"), F("next_tid"), F("prev_prio"), F("next_prio")},
	 {F("prev_comm"), F("next_comm")}, 1 | 4, false},
	{"sched_wakeup", VMS_K_SCHED_WAKEUP, {F("tid"), F("target_cpu"), F("prio")}, {F("comm")},
	 1, false},
	{"sched_wakeup_new", VMS_K_SCHED_WAKEUP, {F("tid"), F("target_cpu"), F("prio")},
	 {F("comm")}, 1, false},
	{"sched_process_fork", VMS_K_PROCESS_FORK,
	 {F("parent_tid", "parent_pid"), F("child_tid"), F("child_pid"), F("child_ns_inum"),
	  F("vtids_length", "_vtids_length")}, {F("child_comm")},
	 1 | 2, false},
	{"sched_process_exec", VMS_K_PROCESS_EXEC, {F("tid")}, {F("filename")}, 1, true},
	{"sched_process_exit", VMS_K_PROCESS_EXIT, {F("tid")}, {{NULL}}, 1, false},
	{"sched_process_free", VMS_K_PROCESS_EXIT, {F("tid")}, {{NULL}}, 1, false},
	{"lttng_statedump_process_state", VMS_K_THREAD_NAME,
	 {F("tid"), F("pid"), F("ns_inum"), F("ns_level")}, {F("name")}, 1, false},
	/* lttng-modules 2.11+: the PID namespaces of a thread, one record per level */
	{"lttng_statedump_process_pid_ns", VMS_K_THREAD_NAME,
	 {F("tid"), F("pid"), F("ns_inum"), F("ns_level")}, {{NULL}}, 1 | 4, false},
	{"task_rename", VMS_K_THREAD_NAME, {F("pid", "tid")}, {F("newcomm")}, 1, false},
	{"kvm_entry", VMS_K_KVM_ENTRY, {F("vcpu_id"), F("rip", "guest_rip")}, {{NULL}}, 1, false},
	{"kvm_x86_entry", VMS_K_KVM_ENTRY, {F("vcpu_id"), F("rip", "guest_rip")}, {{NULL}}, 1,
	 false},
	{"kvm_exit", VMS_K_KVM_EXIT,
	 {F("exit_reason", "reason"), F("isa"), F("guest_rip", "rip"), F("info1"), F("info2")},
	 {{NULL}}, 1, false},
	{"kvm_x86_exit", VMS_K_KVM_EXIT,
	 {F("exit_reason", "reason"), F("isa"), F("guest_rip", "rip"), F("info1"), F("info2")},
	 {{NULL}}, 1, false},
	/* nested KVM, on L0 (lttng-modules' arch/x86/kvm/trace.h): AMD's VMRUN of L2 (VMX's
	 * entry to L2 has no LTTng event; kvm_x86_entry has no guest_mode field, so 0: not
	 * recorded), L2's exit to L0 (exit_code, isa), its reflection into L1 (the inject names
	 * the exit, the interrupt's does not: no isa); the spellings without kvm_x86_ too */
	{"kvm_x86_nested_vmrun", VMS_K_KVM_NESTED_VMENTER, {{NULL}}, {{NULL}}, 0, false},
	{"kvm_nested_vmrun", VMS_K_KVM_NESTED_VMENTER, {{NULL}}, {{NULL}}, 0, false},
	{"kvm_x86_nested_vmenter", VMS_K_KVM_NESTED_VMENTER, {{NULL}}, {{NULL}}, 0, false},
	{"kvm_nested_vmenter", VMS_K_KVM_NESTED_VMENTER, {{NULL}}, {{NULL}}, 0, false},
	{"kvm_x86_nested_vmexit", VMS_K_KVM_NESTED_VMEXIT,
	 {F("exit_code", "exit_reason"), F("isa")}, {{NULL}}, 1, false},
	{"kvm_nested_vmexit", VMS_K_KVM_NESTED_VMEXIT,
	 {F("exit_code", "exit_reason"), F("isa")}, {{NULL}}, 1, false},
	{"kvm_x86_nested_vmexit_inject", VMS_K_KVM_NESTED_INJECT,
	 {F("exit_code", "exit_reason"), F("isa")}, {{NULL}}, 1, false},
	{"kvm_nested_vmexit_inject", VMS_K_KVM_NESTED_INJECT,
	 {F("exit_code", "exit_reason"), F("isa")}, {{NULL}}, 1, false},
	{"kvm_x86_nested_intr_vmexit", VMS_K_KVM_NESTED_INJECT, {{NULL}}, {{NULL}}, 0, false},
	{"kvm_nested_intr_vmexit", VMS_K_KVM_NESTED_INJECT, {{NULL}}, {{NULL}}, 0, false},
	{"kvm_vcpu_wakeup", VMS_K_KVM_VCPU_WAKEUP, {F("ns"), F("waited"), F("valid")}, {{NULL}}, 3,
	 false},
	{"vmsync_gh_guest", VMS_K_VMSYNC_GH_GUEST, {F("vm_uid"), F("cnt")}, {{NULL}}, 3, false},
	{"vmsync_gh_host", VMS_K_VMSYNC_GH_HOST, {F("vm_uid"), F("cnt")}, {{NULL}}, 3, false},
	{"vmsync_hg_host", VMS_K_VMSYNC_HG_HOST, {F("vm_uid"), F("cnt")}, {{NULL}}, 3, false},
	{"vmsync_hg_guest", VMS_K_VMSYNC_HG_GUEST, {F("vm_uid"), F("cnt")}, {{NULL}}, 3, false},
	{"inet_sock_local_out", VMS_K_NET_SEND, {F("seq"), F("ack_seq"), F("flags")}, {{NULL}}, 7,
	 false},
	{"inet_sock_local_in", VMS_K_NET_RECV, {F("seq"), F("ack_seq"), F("flags")}, {{NULL}}, 7,
	 false},
	/* only where the TCP header was decoded (required: seq) */
	{"net_dev_queue", VMS_K_NET_SEND, {F("seq"), F("ack_seq"), F("flags")}, {{NULL}}, 7,
	 false},
	{"netif_receive_skb", VMS_K_NET_RECV, {F("seq"), F("ack_seq"), F("flags")}, {{NULL}}, 7,
	 false},
	{"net_if_receive_skb", VMS_K_NET_RECV, {F("seq"), F("ack_seq"), F("flags")}, {{NULL}}, 7,
	 false},
};

/* Every register of the payload named `name` (LTTng's '_' already stripped), outside
 * loops, in declaration order. */
static uint8_t candidates(const struct plan_regs *regs, uint32_t from, const char *const *names,
			  uint32_t *out, uint8_t n)
{
	for (; *names; names++)
		for (uint32_t r = from; r < regs->n && n < CTF_MAP_CAND; r++)
			if (regs->r[r].scope == PLAN_EF && !regs->r[r].in_loop &&
			    !strcmp(regs->r[r].name, *names))
				out[n++] = r;
	return n;
}

static bool is_int(const struct tsdl_type *t)
{
	return t->kind == TSDL_INT || t->kind == TSDL_ENUM;
}

static bool is_text(const struct tsdl_type *t)
{
	return t->kind == TSDL_STRING ||
	       ((t->kind == TSDL_ARRAY || t->kind == TSDL_SEQ) && t->elem->text);
}

void ctf_map_event(const char *name, const struct plan_regs *regs, uint32_t from,
		   enum ctf_domain dom, bool no_wakeup, struct ctf_evmap *m)
{
	memset(m, 0, sizeof *m);
	const char *base = strrchr(name, ':'); /* UST: "provider:event" */
	base = base ? base + 1 : name;
	if (dom != CTF_DOM_VMSTRACE) {
		const struct rule *r = NULL;
		for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
			if (!strcmp(rules[i].event, base))
				r = &rules[i];
		if (!r && no_wakeup && !strcmp(base, "sched_waking"))
			r = &rules[1];
		if (r) {
			for (int k = 0; k < 5; k++)
				if (r->f[k][0])
					m->nf[k] = candidates(regs, from, r->f[k], m->f[k], 0);
			for (int k = 0; k < 2; k++)
				if (r->s[k][0])
					m->ns[k] = candidates(regs, from, r->s[k], m->s[k], 0);
			/* a class without a field it needs is not that kind (another version's
			 * event of the same name): counted as OTHER rather than misread */
			for (int k = 0; k < 5; k++)
				if ((r->required >> k & 1) && !m->nf[k]) {
					memset(m, 0, sizeof *m);
					return;
				}
			m->kind = r->kind;
			m->required = r->required;
			m->basename = r->basename;
			return;
		}
		if (dom == CTF_DOM_KERNEL)
			return; /* VMS_K_OTHER */
	}
	/* a user-space trace point: its first integers and strings, in order */
	m->kind = VMS_K_TRACEPOINT;
	uint8_t ni = 0, ns = 0;
	for (uint32_t r = from; r < regs->n; r++) {
		const struct plan_reg *g = &regs->r[r];
		if (g->scope != PLAN_EF || !g->top)
			continue;
		if (is_int(g->type) && ni < 5) {
			m->f[ni][0] = r;
			m->nf[ni++] = 1;
		} else if (is_text(g->type) && ns < 2) {
			m->s[ns][0] = r;
			m->ns[ns++] = 1;
		}
	}
}
