/* vms_model_finish: roles (spec §1), guest -> host and vCPU -> host thread links (§2),
 * untraced guests, names, clocks.
 *
 * Links use every source present, in the spec's order, and each link records what decided
 * it: (1) the host's trace.dat GUEST option matched by the guest's TRACEID (else the guest's
 * TIME_SHIFT naming the host's TRACEID, for the guest -> host link only); (2) vmsync: the
 * host thread that emitted vmsync_gh_host (or, lacking any, vmsync_hg_host) with the guest's
 * vm_uid belongs to the guest, and so does its process; (3) kvm_entry.vcpu_id: a host thread
 * of a process that belongs to a guest and that executed kvm_entry with vcpu_id n is vCPU n;
 * (4) the user's --map, which wins over everything: it replaces the links it contradicts
 * (the vCPU's thread, another vCPU on the same thread) and takes in no other thread; its
 * host is the guest's (else the reference), or the one it names (NAME@HOST: a nested guest
 * whose trace does not link it to its hypervisor), which may not contradict the trace's.
 *
 * A thread's process is its pid when the trace says (PROCESS_EXEC, THREAD_NAME / PROCESS_FORK
 * tgid); a vCPU thread whose creation was recorded is in its creator's process
 * (vcpu_thread_pids). Otherwise vCPU threads named like QEMU's ("CPU n/KVM" for vcpu_id n, or unnamed) are
 * grouped by tid - vcpu_id, since QEMU creates them in a row (vms_model_process_key), and
 * any other thread is its own process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

/* The processes (keys, see vms_model_process_key) that belong to one guest: a hash set, since
 * a hostile GUEST option may name a million vCPU threads. Process keys are pids or -(tid + 1),
 * so the flipped top bit never makes VMS_KEYMAP_EMPTY. */
struct procset {
	struct vms_keymap set;
};

static int procset_add(struct procset *s, int64_t key)
{
	return vms_keymap_put(&s->set, (uint64_t)key ^ (1ull << 63), 0, NULL) ? 0 : -1;
}

static bool procset_has(const struct procset *s, int64_t key)
{
	return vms_keymap_get(&s->set, (uint64_t)key ^ (1ull << 63)) != NULL;
}

static bool is_host(const struct vms_model *m, uint32_t i)
{
	return (m->mach[i].role & VMS_ROLE_HOST) != 0;
}

static void find_roles(struct vms_model *m)
{
	for (uint32_t i = 0; i < m->nr_sources; i++) {
		const struct vms_machine_priv *p = &m->priv[i];
		unsigned role = 0;
		if (p->forced_host || p->has_kvm || p->has_vmsync_host ||
		    (p->meta && (p->meta->nr_guests > 0 || p->meta->nr_xen_domains > 0)))
			role |= VMS_ROLE_HOST;
		if (p->forced_guest || p->has_vmsync_guest || (p->meta && p->meta->timeshift))
			role |= VMS_ROLE_GUEST;
		m->mach[i].role = role;
	}
	/* the reference is the root of the tree of hosts: the first host that is no guest (a
	 * nested L1 hypervisor given before its L0 is not it), else the first host */
	m->reference = 0;
	for (uint32_t i = 0; i < m->nr_sources; i++) {
		if (is_host(m, i) && !(m->mach[i].role & VMS_ROLE_GUEST)) {
			m->reference = i;
			return;
		}
	}
	for (uint32_t i = 0; i < m->nr_sources; i++) {
		if (is_host(m, i)) {
			m->reference = i;
			break;
		}
	}
}

/* The same guest given twice, or two guests with one TRACEID (or one vmsync vm_uid): both
 * would be linked to the same vCPU threads and give contradictory numbers without a word.
 * The later source is not linked by its id (a warning on stderr says so); this is the one
 * place that decides it. */
static bool same_guest_as_earlier(const struct vms_model *m, uint32_t g)
{
	const struct vms_machine_priv *gp = &m->priv[g];
	for (uint32_t e = 0; e < g; e++) {
		const struct vms_machine_priv *ep = &m->priv[e];
		bool id = gp->meta && ep->meta && gp->meta->has_trace_id && ep->meta->has_trace_id &&
			  gp->meta->trace_id == ep->meta->trace_id;
		bool uid = gp->has_guest_uid && ep->has_guest_uid && gp->guest_uid == ep->guest_uid;
		if (!id && !uid)
			continue;
		/* a session may build the model twice (the checked single pass): one warning */
		static const void *warned[8];
		static unsigned nwarned;
		bool again = false;
		for (unsigned k = 0; k < 8; k++)
			again |= warned[k] == gp->meta;
		if (again)
			return true;
		warned[nwarned++ % 8] = gp->meta;
		fprintf(stderr, "vmscope: warning: %s has the %s 0x%llx of %s (the same guest given "
			"twice?): it is not linked to a host by it\n", gp->path,
			id ? "TRACEID" : "vmsync vm_uid",
			(unsigned long long)(id ? gp->meta->trace_id : gp->guest_uid), ep->path);
		return true;
	}
	return false;
}

/* (1) GUEST option of a host naming this guest's TRACEID; else TIME_SHIFT's peer. Returns
 * the GUEST option's guest name (may be "") through *opt_name when it decided. */
static int link_by_trace_id(struct vms_model *m, uint32_t g, struct procset *ps,
			    const char **opt_name)
{
	const struct vms_trace_meta *gm = m->priv[g].meta;
	struct vms_machine *G = &m->mach[g];
	if (!gm)
		return 0;
	for (uint32_t h = 0; gm->has_trace_id && h < m->nr_sources && G->host < 0; h++) {
		const struct vms_trace_meta *hm = m->priv[h].meta;
		if (h == g || !hm)
			continue;
		for (uint32_t k = 0; k < hm->nr_guests; k++) {
			const struct vms_guest_map *gmap = &hm->guests[k];
			if (gmap->trace_id != gm->trace_id)
				continue;
			G->role |= VMS_ROLE_GUEST;
			m->mach[h].role |= VMS_ROLE_HOST;
			G->host = (int32_t)h;
			G->host_how = VMS_LINK_GUEST_OPTION;
			*opt_name = gmap->name;
			for (uint32_t j = 0; j < gmap->nr_vcpus; j++) {
				if (gmap->host_tid[j] < 0)
					continue;
				if (vms_model_set_vcpu(G, gmap->vcpu[j], gmap->host_tid[j],
						       VMS_LINK_GUEST_OPTION) != 0)
					continue; /* a vCPU number beyond any machine: ignored */
				if (procset_add(ps, vms_model_process_key(m, h, gmap->host_tid[j])))
					return -1;
			}
			break;
		}
	}
	if (G->host < 0 && gm->timeshift) {
		for (uint32_t h = 0; h < m->nr_sources; h++) {
			const struct vms_trace_meta *hm = m->priv[h].meta;
			if (h != g && hm && hm->has_trace_id &&
			    hm->trace_id == gm->timeshift->peer_trace_id) {
				G->host = (int32_t)h;
				G->host_how = VMS_LINK_TIMESHIFT;
				break;
			}
		}
	}
	return 0;
}

/* (2) vmsync: the host thread(s) that emitted vmsync_*_host with the guest's vm_uid. */
static int link_by_vmsync(struct vms_model *m, uint32_t g, struct procset *ps)
{
	const struct vms_machine_priv *gp = &m->priv[g];
	struct vms_machine *G = &m->mach[g];
	if (!gp->has_guest_uid)
		return 0;
	G->vm_uid = gp->guest_uid;
	for (int pass = 0; pass < 2; pass++) { /* vmsync_gh_host first, as the spec says */
		bool found = false;
		for (uint32_t h = 0; h < m->nr_sources; h++) {
			const struct vms_machine_priv *hp = &m->priv[h];
			if (h == g || (G->host >= 0 && (uint32_t)G->host != h))
				continue;
			for (uint32_t k = 0; k < hp->nr_sync; k++) {
				if (hp->sync[k].vm_uid != gp->guest_uid || (pass == 0 && !hp->sync[k].gh))
					continue;
				if (G->host < 0) {
					G->host = (int32_t)h;
					G->host_how = VMS_LINK_VMSYNC;
				}
				if (procset_add(ps, vms_model_process_key(m, h, hp->sync[k].tid)))
					return -1;
				found = true;
			}
			if (found)
				return 0;
		}
	}
	return 0;
}

/* (4) the user's --map entries for guest g. */
static int link_by_user(struct vms_model *m, uint32_t g, struct vms_error *err)
{
	struct vms_machine *G = &m->mach[g];
	for (uint32_t i = 0; i < m->nr_maps; i++) {
		const struct vms_user_map *um = &m->maps[i];
		if (strcmp(um->guest, G->name) != 0)
			continue;
		G->role |= VMS_ROLE_GUEST;
		if (um->host) {
			/* the host named (NAME@HOST): checked to be another traced machine */
			int32_t h = vms_model_find(m, um->host);
			if (G->host >= 0 && G->host != h)
				return vms_error_set(err, VMS_ERR_USAGE,
						     "--map %s@%s:%u=%d: %s's trace links it to %s",
						     um->guest, um->host, um->vcpu, um->tid,
						     um->guest, m->mach[G->host].name);
			if (G->host < 0) {
				G->host = h;
				G->host_how = VMS_LINK_USER;
				m->mach[h].role |= VMS_ROLE_HOST;
			}
		}
		if (G->host < 0) {
			if (m->reference == g || !is_host(m, m->reference))
				return vms_error_set(err, VMS_ERR_USAGE,
						     "--map %s:%u=%d: no host trace to map into",
						     um->guest, um->vcpu, um->tid);
			G->host = (int32_t)m->reference;
			G->host_how = VMS_LINK_USER;
		}
		if (vms_model_set_vcpu(G, um->vcpu, um->tid, VMS_LINK_USER) != 0)
			return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		G->vcpus[um->vcpu].how = VMS_LINK_USER;
		G->vcpus[um->vcpu].host_tid = um->tid;
		/* the forced link replaces what it contradicts: another vCPU of this guest that the
		 * data had put on the same thread loses that link */
		for (uint32_t v = 0; v < G->nr_vcpus; v++)
			if (v != um->vcpu && G->vcpus[v].host_tid == um->tid &&
			    G->vcpus[v].how != VMS_LINK_USER) {
				G->vcpus[v].host_tid = -1;
				G->vcpus[v].how = VMS_LINK_NONE;
			}
	}
	/* The thread's process is not taken into the guest (no procset_add): a forced link is
	 * about the thread it names; the other vCPU threads of that process may be another VM's. */
	return 0;
}

static int check_user_maps(const struct vms_model *m, struct vms_error *err)
{
	for (uint32_t i = 0; i < m->nr_maps; i++) {
		int32_t g = vms_model_find(m, m->maps[i].guest);
		if (g < 0 || (uint32_t)g >= m->nr_sources)
			return vms_error_set(err, VMS_ERR_USAGE, "--map %s: no trace named %s",
					     m->maps[i].guest, m->maps[i].guest);
		const char *host = m->maps[i].host;
		int32_t h = host ? vms_model_find(m, host) : 0;
		if (h < 0 || (uint32_t)h >= m->nr_sources)
			return vms_error_set(err, VMS_ERR_USAGE, "--map %s@%s: no trace named %s",
					     m->maps[i].guest, host, host);
		if (host && h == g)
			return vms_error_set(err, VMS_ERR_USAGE, "--map %s@%s: a machine is not "
					     "its own host", m->maps[i].guest, host);
	}
	return 0;
}

int vms_model_claim(struct vms_model *m, uint32_t h, int32_t tid, uint32_t g, uint32_t vcpu)
{
	uint64_t v = (uint64_t)g << 32 | vcpu;
	return vms_keymap_put(&m->priv[h].vcpu_of, (uint32_t)tid, v, NULL) ? 0 : -1;
}

/* (3) kvm_entry: the kvm threads of the guest's processes, and the vcpu_of maps. */
static int link_by_kvm_entry(struct vms_model *m, struct procset *ps)
{
	/* explicit links first: they win over what kvm_entry.vcpu_id says */
	for (uint32_t g = 0; g < m->nr_sources; g++) {
		struct vms_machine *G = &m->mach[g];
		if (G->host < 0)
			continue;
		for (uint32_t v = 0; v < G->nr_vcpus; v++)
			if (G->vcpus[v].host_tid >= 0 &&
			    vms_model_claim(m, (uint32_t)G->host, G->vcpus[v].host_tid, g, v) != 0)
				return -1;
	}
	for (uint32_t g = 0; g < m->nr_sources; g++) {
		struct vms_machine *G = &m->mach[g];
		if (G->host < 0 || ps[g].set.len == 0)
			continue;
		uint32_t h = (uint32_t)G->host;
		const struct vms_keymap *kt = &m->priv[h].kvm_threads;
		for (size_t i = 0; i < kt->cap; i++) {
			if (kt->keys[i] == VMS_KEYMAP_EMPTY)
				continue;
			int32_t tid = (int32_t)kt->keys[i];
			uint32_t vcpu = (uint32_t)kt->vals[i];
			if (!procset_has(&ps[g], vms_model_process_key(m, h, tid)))
				continue;
			if (vms_keymap_get(&m->priv[h].vcpu_of, (uint32_t)tid))
				continue; /* claimed by an explicit link (or another guest) */
			if (vcpu < G->nr_vcpus && G->vcpus[vcpu].how == VMS_LINK_USER)
				continue; /* --map replaced this vCPU's thread: one thread feeds it */
			if (vms_model_set_vcpu(G, vcpu, -1, VMS_LINK_NONE) != 0)
				continue;
			if (G->vcpus[vcpu].how == VMS_LINK_NONE ||
			    (G->vcpus[vcpu].how == VMS_LINK_KVM_ENTRY && tid < G->vcpus[vcpu].host_tid)) {
				G->vcpus[vcpu].host_tid = tid;
				G->vcpus[vcpu].how = VMS_LINK_KVM_ENTRY;
			}
			if (vms_model_claim(m, h, tid, g, vcpu) != 0)
				return -1;
		}
	}
	return 0;
}

/* A vCPU thread's process when the trace names none for it but recorded its creation: a
 * thread created by a thread of process P is in P (vCPU threads are threads: KVM_RUN is
 * called on a vCPU fd of the VMM's own VM), and a creator whose process is unknown is taken
 * as the process itself (QEMU's main thread creates the vCPU threads). Only vCPU threads:
 * for any other thread a fork may have started a new process, which the event does not say. */
static void vcpu_thread_pids(struct vms_model *m)
{
	for (uint32_t h = 0; h < m->nr_sources; h++) {
		const struct vms_keymap *kt = &m->priv[h].kvm_threads;
		for (size_t i = 0; i < kt->cap; i++) {
			if (kt->keys[i] == VMS_KEYMAP_EMPTY)
				continue;
			const struct vms_thread_info *c = vms_model_thread(m, h, (int32_t)kt->keys[i]);
			if (!c || c->pid > 0 || c->parent <= 0)
				continue;
			struct vms_thread_info *t = vms_model_thread_put(m, h, c->tid); /* c itself */
			if (!t)
				continue;
			const struct vms_thread_info *p = vms_model_thread(m, h, c->parent);
			if (p && p->pid > 0) {
				t->pid = p->pid;
				t->pid_how = p->pid_how;
			} else {
				t->pid = c->parent;
				t->pid_how = VMS_PID_PARENT;
			}
		}
	}
}

static void set_host_pid(struct vms_model *m, uint32_t g)
{
	struct vms_machine *G = &m->mach[g];
	if (G->host < 0)
		return;
	for (uint32_t v = 0; v < G->nr_vcpus && G->host_pid < 0; v++) {
		if (G->vcpus[v].host_tid < 0)
			continue;
		const struct vms_thread_info *t =
			vms_model_thread(m, (uint32_t)G->host, G->vcpus[v].host_tid);
		if (t && t->pid > 0) {
			G->host_pid = t->pid;
			G->host_pid_how = t->pid_how;
		}
	}
}

struct orphan {
	int64_t key;
	int32_t tid;
	uint32_t vcpu;
};

/* known processes first (by pid), then lone threads (by tid) */
static int orphan_cmp(const void *a, const void *b)
{
	const struct orphan *x = a, *y = b;
	if ((x->key >= 0) != (y->key >= 0))
		return x->key >= 0 ? -1 : 1;
	if (x->key != y->key) {
		if (x->key >= 0)
			return x->key < y->key ? -1 : 1;
		return x->key > y->key ? -1 : 1; /* -(anchor+1): larger key = smaller anchor */
	}
	if (x->vcpu != y->vcpu)
		return x->vcpu < y->vcpu ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* vCPU threads that no traced guest claims become untraced guests, one per VMM process, at
 * most VMS_MODEL_MAX_UNTRACED: a machine costs the model and the analyses ~2.5 KiB and
 * report ~400 bytes, and 1 M distinct kvm_entry threads in a 2.1 MB file made 2.5 GB and
 * 438 MB of text. The rest are counted (guests, threads), and their threads stay host
 * threads. */
static int add_untraced(struct vms_model *m, uint32_t h)
{
	const struct vms_keymap *kt = &m->priv[h].kvm_threads;
	struct orphan *o = malloc((kt->len ? kt->len : 1) * sizeof *o);
	if (!o)
		return -1;
	size_t n = 0;
	for (size_t i = 0; i < kt->cap; i++) {
		if (kt->keys[i] == VMS_KEYMAP_EMPTY)
			continue;
		int32_t tid = (int32_t)kt->keys[i];
		if (vms_keymap_get(&m->priv[h].vcpu_of, (uint32_t)tid))
			continue;
		o[n++] = (struct orphan){ vms_model_process_key(m, h, tid), tid, (uint32_t)kt->vals[i] };
	}
	qsort(o, n, sizeof *o, orphan_cmp);
	int rc = 0;
	int g = -1;
	uint32_t made = 0;
	/* (m->priv moves as machines are added: no pointer into it is kept) */
	m->priv[h].untraced_omitted = m->priv[h].untraced_omitted_threads = 0;
	for (size_t i = 0; i < n; i++) {
		bool first = i == 0 || o[i].key != o[i - 1].key;
		if (first && made == VMS_MODEL_MAX_UNTRACED)
			g = -1; /* (from here on, every guest is left out) */
		if (made == VMS_MODEL_MAX_UNTRACED && g < 0) {
			m->priv[h].untraced_omitted += first;
			m->priv[h].untraced_omitted_threads++;
			continue;
		}
		if (first) {
			made++;
			char name[48];
			int32_t low = o[i].tid; /* lone threads: named after the lowest tid */
			for (size_t j = i + 1; j < n && o[j].key == o[i].key; j++)
				if (o[j].tid < low)
					low = o[j].tid;
			if (o[i].key >= 0)
				snprintf(name, sizeof name, "pid-%lld", (long long)o[i].key);
			else
				snprintf(name, sizeof name, "tid-%d", low);
			if ((g = vms_model_add_machine(m, name)) < 0) {
				rc = -1;
				break;
			}
			struct vms_machine *G = &m->mach[g];
			G->role = VMS_ROLE_GUEST;
			G->host = (int32_t)h;
			G->host_pid = o[i].key >= 0 ? (int32_t)o[i].key : -1;
			if (G->host_pid >= 0) {
				const struct vms_thread_info *t = vms_model_thread(m, h, o[i].tid);
				G->host_pid_how = t ? t->pid_how : VMS_PID_NONE;
			}
			G->host_how = VMS_LINK_KVM_ENTRY;
		}
		struct vms_machine *G = &m->mach[g];
		if (vms_model_set_vcpu(G, o[i].vcpu, -1, VMS_LINK_NONE) != 0 ||
		    vms_model_claim(m, h, o[i].tid, (uint32_t)g, o[i].vcpu) != 0) {
			rc = -1;
			break;
		}
		if (G->vcpus[o[i].vcpu].how == VMS_LINK_NONE) {
			G->vcpus[o[i].vcpu].host_tid = o[i].tid;
			G->vcpus[o[i].vcpu].how = VMS_LINK_KVM_ENTRY;
		}
	}
	free(o);
	return rc;
}

int vms_model_untraced_omitted(const struct vms_model *m, uint32_t host, uint64_t *guests,
			       uint64_t *threads)
{
	if (host >= m->nr)
		return -1;
	*guests = m->priv[host].untraced_omitted;
	*threads = m->priv[host].untraced_omitted_threads;
	return 0;
}

static int rename_machine(struct vms_machine *mc, const char *name)
{
	char *n = strdup(name);
	if (!n)
		return -1;
	free(mc->name);
	mc->name = n;
	return 0;
}

static uint64_t name_hash(const char *s)
{
	uint64_t h = 14695981039346656037ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h == VMS_KEYMAP_EMPTY ? 0 : h;
}

/* Whether an earlier machine (< i) has this name; `seen` maps name hashes to the first
 * machine with that hash (a rare collision of different names falls back to a scan). */
static bool name_taken(const struct vms_model *m, const struct vms_keymap *seen, uint32_t i,
		       const char *name)
{
	const uint64_t *j = vms_keymap_get(seen, name_hash(name));
	if (!j)
		return false;
	if (strcmp(m->mach[*j].name, name) == 0)
		return true;
	for (uint32_t k = 0; k < i; k++)
		if (strcmp(m->mach[k].name, name) == 0)
			return true;
	return false;
}

/* Two machines never share a name (commands select machines by name): a later one gets its
 * index appended. Hashed: a host may show 200,000 vCPU threads, one untraced guest each. */
static int dedupe_names(struct vms_model *m)
{
	struct vms_keymap seen;
	vms_keymap_init(&seen);
	int rc = 0;
	for (uint32_t i = 0; i < m->nr && !rc; i++) {
		for (unsigned tries = 0; name_taken(m, &seen, i, m->mach[i].name) && !rc; tries++) {
			char buf[512];
			snprintf(buf, sizeof buf, "%.470s-%u%s", m->mach[i].name, i, tries ? "x" : "");
			rc = rename_machine(&m->mach[i], buf);
		}
		if (!rc && !vms_keymap_put(&seen, name_hash(m->mach[i].name), i, NULL))
			rc = -1;
	}
	vms_keymap_free(&seen);
	return rc;
}

int vms_model_resolve_links(struct vms_model *m, struct vms_error *err)
{
	int rc = check_user_maps(m, err);
	if (rc)
		return rc;
	vcpu_thread_pids(m);
	uint32_t ns = m->nr_sources;
	struct procset *ps = calloc(ns ? ns : 1, sizeof *ps);
	const char **opt_name = calloc(ns ? ns : 1, sizeof *opt_name);
	if (!ps || !opt_name) {
		rc = vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (uint32_t g = 0; g < ns && !rc; g++) {
		if (same_guest_as_earlier(m, g))
			continue;
		if (link_by_trace_id(m, g, &ps[g], &opt_name[g]) != 0 ||
		    link_by_vmsync(m, g, &ps[g]) != 0)
			rc = vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	}
	for (uint32_t g = 0; g < ns && !rc; g++)
		rc = link_by_user(m, g, err);
	if (!rc)
		rc = vms_model_link_xen_domains(m, err);
	if (!rc && link_by_kvm_entry(m, ps) != 0)
		rc = vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	for (uint32_t g = 0; g < ns && !rc; g++) {
		struct vms_machine *G = &m->mach[g];
		if (G->host >= 0)
			G->role |= VMS_ROLE_GUEST;
		set_host_pid(m, g);
		/* a guest has at least the CPUs its own trace shows */
		const struct vms_trace_meta *gm = m->priv[g].meta;
		if ((G->role & VMS_ROLE_GUEST) && gm && gm->nr_cpus > 0 &&
		    vms_model_set_vcpu(G, (gm->nr_cpus < VMS_MODEL_MAX_VCPUS ? gm->nr_cpus
									 : VMS_MODEL_MAX_VCPUS) - 1,
				       -1, VMS_LINK_NONE) != 0)
			rc = vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		if (!rc && opt_name[g] && *opt_name[g] && !m->priv[g].user_name &&
		    rename_machine(G, opt_name[g]) != 0)
			rc = vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	}
	for (uint32_t h = 0; h < ns && !rc; h++)
		if (is_host(m, h) && add_untraced(m, h) != 0)
			rc = vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	if (!rc && dedupe_names(m) != 0)
		rc = vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
out:
	for (uint32_t g = 0; ps && g < ns; g++)
		vms_keymap_free(&ps[g].set);
	free(ps);
	free(opt_name);
	return rc;
}

int vms_model_finish(struct vms_model *m, struct vms_error *err)
{
	if (m->finished)
		return 0;
	find_roles(m);
	int rc = vms_model_resolve_links(m, err);
	if (rc)
		return rc;
	rc = vms_model_set_clocks(m, err);
	if (rc)
		return rc;
	m->finished = true;
	return 0;
}
