/* The model's storage: machines, threads, lookups (docs/vm-analysis.md §1-2).
 * Building it is in observe.c (the first pass) and links.c / clocks.c (vms_model_finish). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "core/grow.h"

struct vms_model *vms_model_new(void)
{
	struct vms_model *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	vms_keymap_init(&m->thread_idx);
	return m;
}

void vms_model_free(struct vms_model *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->nr; i++) {
		free(m->mach[i].name);
		free(m->mach[i].vcpus);
		free(m->priv[i].path);
		free(m->priv[i].user_name);
		free(m->priv[i].sync);
		vms_keymap_free(&m->priv[i].kvm_threads);
		vms_keymap_free(&m->priv[i].vcpu_of);
	}
	vms_sync_set_free(m->sync_set);
	vms_sync_tree_free(&m->tree);
	free(m->reference_name);
	free(m->mach);
	free(m->priv);
	vms_keymap_free(&m->thread_idx);
	free(m->threads);
	for (uint32_t i = 0; i < m->nr_maps; i++) {
		free(m->maps[i].guest);
		free(m->maps[i].host);
	}
	free(m->maps);
	for (uint32_t i = 0; i < m->nr_dom_maps; i++)
		free(m->dom_maps[i].guest);
	free(m->dom_maps);
	vms_model_user_offsets_free(m);
	free(m);
}

uint32_t vms_model_nr_machines(const struct vms_model *m)
{
	return m->nr;
}

struct vms_machine *vms_model_machine(struct vms_model *m, uint32_t i)
{
	return i < m->nr ? &m->mach[i] : NULL;
}

const struct vms_machine *vms_model_machine_c(const struct vms_model *m, uint32_t i)
{
	return i < m->nr ? &m->mach[i] : NULL;
}

bool vms_model_nested(const struct vms_model *m)
{
	for (uint32_t i = 0; i < m->nr; i++) {
		int32_t h = m->mach[i].host;
		if (h >= 0 && (uint32_t)h < m->nr && (uint32_t)h != i && m->mach[h].host >= 0)
			return true;
	}
	return false;
}

uint32_t vms_model_reference(const struct vms_model *m)
{
	return m->reference;
}

int vms_model_add_machine(struct vms_model *m, const char *name)
{
	if (m->nr == m->cap) {
		uint32_t ncap = m->cap ? m->cap * 2 : 8;
		struct vms_machine *nm = realloc(m->mach, ncap * sizeof *nm);
		if (!nm)
			return -1;
		m->mach = nm;
		struct vms_machine_priv *np = realloc(m->priv, ncap * sizeof *np);
		if (!np)
			return -1;
		m->priv = np;
		m->cap = ncap;
	}
	uint32_t i = m->nr;
	struct vms_machine *mc = &m->mach[i];
	memset(mc, 0, sizeof *mc);
	memset(&m->priv[i], 0, sizeof m->priv[i]);
	if (!(mc->name = strdup(name ? name : "")))
		return -1;
	mc->source = -1;
	mc->host = -1;
	mc->host_pid = -1;
	vms_clock_init(&mc->clock);
	mc->sync.slope = 1.0;
	vms_clock_init(&m->priv[i].own);
	vms_keymap_init(&m->priv[i].kvm_threads);
	vms_keymap_init(&m->priv[i].vcpu_of);
	m->nr++;
	return (int)i;
}

/* "dir/host.dat" -> "host" */
static char *name_from_path(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	if (!*b) /* "dir/" (a CTF directory given with a slash) */
		b = path;
	char *n = strdup(b);
	if (!n)
		return NULL;
	char *dot = strrchr(n, '.');
	if (dot && dot != n)
		*dot = '\0';
	size_t len = strlen(n);
	while (len > 1 && n[len - 1] == '/')
		n[--len] = '\0';
	return n;
}

int vms_model_add_source(struct vms_model *m, uint32_t source_index, const char *path,
			 const struct vms_trace_meta *meta, const char *name,
			 struct vms_error *err)
{
	if (source_index != m->nr || m->nr != m->nr_sources || m->finished)
		return vms_error_set(err, VMS_ERR_INTERNAL,
				     "model: source %u added out of order", source_index);
	char *derived = name_from_path(path ? path : "trace");
	if (!derived)
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	int i = vms_model_add_machine(m, name && *name ? name : derived);
	free(derived);
	if (i < 0)
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	struct vms_machine_priv *p = &m->priv[i];
	p->meta = meta;
	if (meta)
		vms_clock_from_meta(&p->own, meta, false, NULL);
	p->path = strdup(path ? path : "");
	if (name && *name)
		p->user_name = strdup(name);
	if (!p->path || (name && *name && !p->user_name))
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	m->mach[i].source = (int32_t)source_index;
	m->nr_sources++;
	/* thread names the trace's metadata carries (saved cmdlines, statedumps) */
	for (uint32_t c = 0; meta && c < meta->nr_comms; c++) {
		struct vms_thread_info *t = vms_model_thread_put(m, (uint32_t)i, meta->comm_tid[c]);
		if (!t)
			return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		if (meta->comm_name[c])
			snprintf(t->comm, sizeof t->comm, "%s", meta->comm_name[c]);
	}
	return 0;
}

int32_t vms_model_find(const struct vms_model *m, const char *name)
{
	for (uint32_t i = 0; i < m->nr; i++)
		if (strcmp(m->mach[i].name, name) == 0)
			return (int32_t)i;
	return -1;
}

int vms_model_force_host(struct vms_model *m, uint32_t machine)
{
	if (machine >= m->nr)
		return VMS_ERR_USAGE;
	m->priv[machine].forced_host = true;
	return 0;
}

int vms_model_force_guest(struct vms_model *m, uint32_t machine, const char *name)
{
	if (machine >= m->nr)
		return VMS_ERR_USAGE;
	m->priv[machine].forced_guest = true;
	if (name && *name) {
		char *n1 = strdup(name), *n2 = strdup(name);
		if (!n1 || !n2) {
			free(n1);
			free(n2);
			return VMS_ERR_NOMEM;
		}
		free(m->priv[machine].user_name);
		m->priv[machine].user_name = n1;
		free(m->mach[machine].name);
		m->mach[machine].name = n2;
	}
	return 0;
}

int vms_model_user_map(struct vms_model *m, const char *guest, uint32_t vcpu, int32_t tid,
		       struct vms_error *err)
{
	return vms_model_user_map_host(m, guest, NULL, vcpu, tid, err);
}

int vms_model_user_map_host(struct vms_model *m, const char *guest, const char *host,
			    uint32_t vcpu, int32_t tid, struct vms_error *err)
{
	if (!guest || !*guest)
		return vms_error_set(err, VMS_ERR_USAGE, "--map: no guest name");
	if (vcpu >= VMS_MODEL_MAX_VCPUS)
		return vms_error_set(err, VMS_ERR_USAGE, "--map %s:%u: vCPU number too large",
				     guest, vcpu);
	if (tid < 0)
		return vms_error_set(err, VMS_ERR_USAGE, "--map %s:%u: bad thread id %d", guest,
				     vcpu, tid);
	struct vms_user_map *nm = realloc(m->maps, (m->nr_maps + 1) * sizeof *nm);
	if (!nm)
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	m->maps = nm;
	if (host && !*host)
		return vms_error_set(err, VMS_ERR_USAGE, "--map %s@: no host name", guest);
	nm[m->nr_maps].host = NULL;
	if (!(nm[m->nr_maps].guest = strdup(guest)) ||
	    (host && !(nm[m->nr_maps].host = strdup(host)))) {
		free(nm[m->nr_maps].guest);
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	}
	nm[m->nr_maps].vcpu = vcpu;
	nm[m->nr_maps].tid = tid;
	m->nr_maps++;
	return 0;
}

int vms_model_user_domain(struct vms_model *m, const char *guest, uint32_t dom,
			  struct vms_error *err)
{
	if (!guest || !*guest)
		return vms_error_set(err, VMS_ERR_USAGE, "--map: no guest name");
	if (dom >= 32767)
		return vms_error_set(err, VMS_ERR_USAGE, "--map %s:dom=%u: no such Xen domain id",
				     guest, dom);
	struct vms_user_dom *nd = realloc(m->dom_maps, (m->nr_dom_maps + 1) * sizeof *nd);
	if (!nd)
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	m->dom_maps = nd;
	if (!(nd[m->nr_dom_maps].guest = strdup(guest)))
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	nd[m->nr_dom_maps].dom = dom;
	m->nr_dom_maps++;
	return 0;
}

struct vms_thread_info *vms_model_thread_put(struct vms_model *m, uint32_t machine, int32_t tid)
{
	bool inserted;
	uint64_t *idx = vms_keymap_put(&m->thread_idx, vms_keymap_mt(machine, tid), m->nr_threads,
				       &inserted);
	if (!idx)
		return NULL;
	if (!inserted)
		return &m->threads[*idx];
	if (m->nr_threads == m->cap_threads) {
		struct vms_thread_info *nt = vms_grow(m->threads, &m->cap_threads, sizeof *nt, 64);
		if (!nt) {
			/* keep the map consistent: point the new key at a slot we will fill */
			*idx = VMS_KEYMAP_EMPTY - 1;
			return NULL;
		}
		m->threads = nt;
	}
	struct vms_thread_info *t = &m->threads[m->nr_threads++];
	/* (all of it: the saved model holds the struct's bytes, its padding too) */
	memset(t, 0, sizeof *t);
	t->tid = tid;
	t->pid = -1;
	t->pid_how = VMS_PID_NONE;
	t->parent = -1;
	t->exec = false;
	t->comm[0] = '\0';
	return t;
}

const struct vms_thread_info *vms_model_thread(const struct vms_model *m, uint32_t machine,
					       int32_t tid)
{
	const uint64_t *idx = vms_keymap_get(&m->thread_idx, vms_keymap_mt(machine, tid));
	if (!idx || *idx >= m->nr_threads)
		return NULL;
	return &m->threads[*idx];
}

/* Without a known pid, QEMU's vCPU threads still give their VM away: QEMU creates them one
 * after another, so thread "CPU n/KVM" running vcpu_id n has tid = anchor + n for one anchor
 * per VM (both seen in real traces, e.g. kvm-hip24: 453724 "CPU 0/KVM" vcpu 0 and 453725
 * "CPU 1/KVM" vcpu 1). A kvm thread whose name is unknown or says "CPU <its vcpu_id>/KVM" is
 * grouped by that anchor; any other thread is its own process. */
static bool qemu_vcpu_name_ok(const struct vms_thread_info *t, uint64_t vcpu)
{
	if (!t || !t->comm[0])
		return true;
	char want[24];
	snprintf(want, sizeof want, "CPU %llu/KVM", (unsigned long long)vcpu);
	return strcmp(t->comm, want) == 0;
}

int64_t vms_model_process_key(const struct vms_model *m, uint32_t machine, int32_t tid)
{
	const struct vms_thread_info *t = vms_model_thread(m, machine, tid);
	if (t && t->pid > 0)
		return t->pid;
	const uint64_t *vcpu = machine < m->nr ? vms_keymap_get(&m->priv[machine].kvm_threads,
								 (uint32_t)tid)
					       : NULL;
	if (tid >= 0 && vcpu && *vcpu <= (uint64_t)tid && qemu_vcpu_name_ok(t, *vcpu))
		return -((int64_t)tid - (int64_t)*vcpu) - 1;
	return -(int64_t)tid - 1;
}

int vms_model_set_vcpu(struct vms_machine *g, uint32_t vcpu, int32_t tid, enum vms_link_how how)
{
	if (vcpu >= VMS_MODEL_MAX_VCPUS)
		return -1;
	if (vcpu >= g->nr_vcpus) {
		struct vms_vcpu_link *nv = realloc(g->vcpus, (vcpu + 1) * sizeof *nv);
		if (!nv)
			return -1;
		for (uint32_t v = g->nr_vcpus; v <= vcpu; v++)
			nv[v] = (struct vms_vcpu_link){ .vcpu = v, .host_tid = -1, .how = VMS_LINK_NONE };
		g->vcpus = nv;
		g->nr_vcpus = vcpu + 1;
	}
	if (tid >= 0 || g->vcpus[vcpu].how == VMS_LINK_NONE) {
		g->vcpus[vcpu].host_tid = tid;
		g->vcpus[vcpu].how = tid >= 0 ? how : VMS_LINK_NONE;
	}
	return 0;
}

int vms_model_vcpu_of(const struct vms_model *m, uint32_t host, int32_t tid, uint32_t *guest,
		      uint32_t *vcpu)
{
	if (host >= m->nr || tid < 0)
		return -1;
	const uint64_t *v = vms_keymap_get(&m->priv[host].vcpu_of, (uint32_t)tid);
	if (!v)
		return -1;
	*guest = (uint32_t)(*v >> 32);
	*vcpu = (uint32_t)*v;
	return 0;
}
