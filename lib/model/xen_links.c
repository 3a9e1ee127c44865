/* Xen domains as guests (docs/vm-analysis.md §1-2 for a hypervisor's own trace).
 *
 * A xentrace file names every domain and vCPU in its scheduler records, so the links need no
 * heuristics: each domain but the idle one is a guest of the xentrace host, named d<N> as
 * xenalyze names it, and its vCPU v is the host "thread" VMS_XEN_TID(N, v) the reader
 * puts on the CPUs (link how: xentrace). `--map NAME:dom=N` makes domain N the machine NAME:
 * the guest trace of that name when there is one (its vCPU v is the domain's vCPU v, link
 * how: user), else the domain's own machine takes the name. */
#include <stdio.h>
#include <string.h>

#include "model_internal.h"
#include "vmscope/xentrace.h"

static const char *user_name_of(const struct vms_model *m, uint32_t dom)
{
	const char *name = NULL;
	for (uint32_t i = 0; i < m->nr_dom_maps; i++)
		if (m->dom_maps[i].dom == dom)
			name = m->dom_maps[i].guest; /* the last one given wins */
	return name;
}

/* One line per trace, whatever the number of domains (the model may be built twice in a
 * session: the checked single pass) */
static void warn_renumbered(const struct vms_trace_meta *key, const char *path, uint32_t n,
			    const struct vms_xen_domain *d)
{
	static const void *warned[8]; /* (by the source's meta: each model has its own paths) */
	static unsigned nwarned;
	for (unsigned k = 0; k < 8; k++)
		if (warned[k] == key)
			return;
	warned[nwarned++ % 8] = key;
	fprintf(stderr, "vmscope: warning: %s: %u Xen domain%s ran vCPUs other than 0..n-1 "
		"(d%u: %u vCPU%s, the highest %u): their vCPUs are numbered in a row, the host "
		"thread d<N>v<M> says Xen's number\n", path, n, n == 1 ? "" : "s", d->id,
		d->nr_vcpus, d->nr_vcpus == 1 ? "" : "s", d->vcpus[d->nr_vcpus - 1]);
}

static int link_domains(struct vms_model *m, uint32_t h, struct vms_error *err)
{
	const struct vms_trace_meta *hm = m->priv[h].meta;
	uint32_t renumbered = 0;
	const struct vms_xen_domain *first = NULL;
	for (uint32_t i = 0; i < hm->nr_xen_domains; i++) {
		const struct vms_xen_domain *d = &hm->xen_domains[i];
		if (d->id >= VMS_XEN_IDLE_DOMAIN)
			continue;
		const char *uname = user_name_of(m, d->id);
		int32_t g = uname ? vms_model_find(m, uname) : -1;
		enum vms_link_how how = VMS_LINK_USER;
		if (g < 0 || (uint32_t)g >= m->nr_sources || (uint32_t)g == h) {
			char name[32];
			snprintf(name, sizeof name, "d%u", d->id);
			if ((g = vms_model_add_machine(m, uname ? uname : name)) < 0)
				return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
			how = VMS_LINK_XENTRACE;
		}
		struct vms_machine *G = &m->mach[g];
		G->role |= VMS_ROLE_GUEST;
		G->host = (int32_t)h;
		G->host_pid = -1;
		G->host_how = how;
		/* the domain's vCPUs are those seen running (d->vcpus): a guest trace's CPU v is
		 * the domain's vCPU v, so there the numbers are Xen's; a domain of its own has
		 * them in a row, the k-th running vCPU its vCPU k (Xen's numbers but where the
		 * records show vCPUs 0..n-1 without a gap; the host thread's name d<N>v<M> keeps
		 * Xen's), so that one record running vCPU 4095 makes one vCPU, not 4096 */
		bool traced = how == VMS_LINK_USER;
		for (uint32_t k = 0; k < d->nr_vcpus; k++) {
			uint32_t v = traced ? d->vcpus[k] : k;
			int32_t tid = VMS_XEN_TID(d->id, d->vcpus[k]);
			if (v >= VMS_MODEL_MAX_VCPUS)
				break;
			if (vms_model_set_vcpu(G, v, tid, how) != 0 ||
			    vms_model_claim(m, h, tid, (uint32_t)g, v) != 0)
				return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
			G->vcpus[v].host_tid = tid;
			G->vcpus[v].how = how;
		}
		if (!traced && d->nr_vcpus && d->vcpus[d->nr_vcpus - 1] != d->nr_vcpus - 1 &&
		    !renumbered++)
			first = d;
	}
	if (renumbered)
		warn_renumbered(hm, m->priv[h].path, renumbered, first);
	return 0;
}

int vms_model_link_xen_domains(struct vms_model *m, struct vms_error *err)
{
	for (uint32_t i = 0; i < m->nr_dom_maps; i++) {
		bool found = false;
		for (uint32_t h = 0; h < m->nr_sources && !found; h++) {
			const struct vms_trace_meta *hm = m->priv[h].meta;
			for (uint32_t k = 0; hm && k < hm->nr_xen_domains; k++)
				found |= hm->xen_domains[k].id == m->dom_maps[i].dom;
		}
		if (!found)
			return vms_error_set(err, VMS_ERR_USAGE,
					     "--map %s:dom=%u: no xentrace trace shows domain %u",
					     m->dom_maps[i].guest, m->dom_maps[i].dom,
					     m->dom_maps[i].dom);
	}
	uint32_t ns = m->nr_sources;
	for (uint32_t h = 0; h < ns; h++) {
		const struct vms_trace_meta *hm = m->priv[h].meta;
		if (hm && hm->nr_xen_domains) {
			int rc = link_domains(m, h, err);
			if (rc)
				return rc;
		}
	}
	return 0;
}
