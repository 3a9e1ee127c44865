/* vmscope internal: the model's private state (include/vmscope/model.h is the contract). */
#ifndef VMS_MODEL_INTERNAL_H
#define VMS_MODEL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "keymap.h"
#include "vmscope/model.h"
#include "vmscope/sync.h"

#define VMS_MODEL_MAX_VCPUS 4096   /* KVM_MAX_VCPUS on x86; beyond is damage, not a vCPU */
#define VMS_MODEL_MAX_SYNC 4096    /* distinct (vm_uid, host thread) pairs kept */

/* A host thread that emitted vmsync_*_host with this vm_uid. */
struct vms_sync_host {
	uint64_t vm_uid;
	int32_t tid;
	bool gh;                   /* vmsync_gh_host (the spec's linking event) */
};

/* What the first pass and the options say about one machine. */
struct vms_machine_priv {
	const struct vms_trace_meta *meta; /* NULL for untraced guests */
	char *path;
	char *user_name;           /* name given by the user, NULL when none */
	bool forced_host, forced_guest;
	bool has_kvm;              /* kvm_entry / kvm_exit seen */
	bool has_vmsync_host, has_vmsync_guest;
	bool has_guest_uid;
	uint64_t guest_uid;        /* vm_uid of this machine's own (guest-side) vmsync events */
	struct vms_keymap kvm_threads; /* host: tid -> vcpu_id of its first kvm_entry */
	/* tid + 1 of threads already in kvm_threads, by tid % 16 (0 none): a kvm_entry's thread
	 * is nearly always one seen before, and its first entry's vcpu_id stays, so the put is
	 * left out (a hash lookup at every kvm_entry of the checked single pass) */
	uint32_t kvm_seen[16];
	struct vms_sync_host *sync;
	uint32_t nr_sync;
	struct vms_keymap vcpu_of; /* host: tid -> guest machine << 32 | vcpu (after finish) */
	/* host: untraced guests past VMS_MODEL_MAX_UNTRACED, and their vCPU threads */
	uint64_t untraced_omitted, untraced_omitted_threads;
	struct vms_clock own;      /* the trace's own clock (raw -> its ns), for matching */
};

struct vms_user_map {
	char *guest;
	char *host; /* NULL: the guest's host, else the reference */
	uint32_t vcpu;
	int32_t tid;
};

/* --map NAME:dom=N: the Xen domain N is the machine NAME (a guest trace, or a new name) */
struct vms_user_dom {
	char *guest;
	uint32_t dom;
};

struct vms_model {
	struct vms_machine *mach;
	struct vms_machine_priv *priv;
	uint32_t nr, cap;
	uint32_t nr_sources;

	struct vms_keymap thread_idx;  /* (machine, tid) -> index in threads */
	struct vms_thread_info *threads;
	uint32_t nr_threads, cap_threads;

	struct vms_user_map *maps;
	uint32_t nr_maps;
	struct vms_user_dom *dom_maps;
	uint32_t nr_dom_maps;

	uint32_t reference;
	bool finished;

	/* clock sync from matched events (vmscope/sync.h) */
	struct vms_sync_set *sync_set; /* created at the first matching event */
	char *reference_name;          /* --reference, NULL when none */
	bool no_hull;                  /* vms_model_set_hull(m, false) */
	uint32_t match_cap;            /* 0: VMS_MATCH_DEFAULT_CAP */
	enum vms_clock_model clock_model; /* vms_model_set_clock_model */
	vms_sync_pair_fn on_pair;
	void *on_pair_ctx;
	struct vms_sync_tree tree;
	bool has_tree;
	struct vms_user_offset *offsets; /* --offset NAME=NS (user_sync.c) */
	uint32_t nr_offsets;
};

struct vms_user_offset {
	char *name;
	int64_t ns;
};

/* model.c */
int vms_model_add_machine(struct vms_model *m, const char *name); /* index or -1 */
struct vms_thread_info *vms_model_thread_put(struct vms_model *m, uint32_t machine, int32_t tid);
int vms_model_set_vcpu(struct vms_machine *g, uint32_t vcpu, int32_t tid, enum vms_link_how how);
/* process key of a host thread: its pid when known, else -(anchor + 1) where anchor is
 * tid - vcpu_id for a QEMU-like vCPU thread (see model.c), else the tid (the thread alone) */
int64_t vms_model_process_key(const struct vms_model *m, uint32_t machine, int32_t tid);

/* links.c / clocks.c, steps of vms_model_finish */
int vms_model_resolve_links(struct vms_model *m, struct vms_error *err);
/* xen_links.c: every domain of a xentrace host becomes a guest (before the kvm_entry links) */
int vms_model_link_xen_domains(struct vms_model *m, struct vms_error *err);
int vms_model_claim(struct vms_model *m, uint32_t h, int32_t tid, uint32_t g, uint32_t vcpu);
int vms_model_set_clocks(struct vms_model *m, struct vms_error *err);
/* user_sync.c: the --offset clocks, after the others (they win) */
int vms_model_apply_user_offsets(struct vms_model *m, struct vms_error *err);
void vms_model_user_offsets_free(struct vms_model *m);

#endif
