/* Each machine's clock (docs/vm-analysis.md §8).
 *
 * From metadata: TSC2NSEC, OFFSET, DATE, and TIME_SHIFT for a trace-cmd guest whose host (the
 * peer TRACEID of its TIME_SHIFT) is in the session: that is exact (quality EXACT). Then, for
 * every other machine, the matched event pairs of the first pass (vmscope/sync.h): a spanning
 * tree of convex-hull fits from the reference, each machine's transform the composition along
 * its path, exact in application (vms_linear). A machine the tree does not reach keeps its own
 * clock, and its report says why (quality INCOMPLETE, FAIL or ABSENT). Untraced guests have
 * no events of their own, only their host's: they share its timebase. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

void vms_model_set_reference(struct vms_model *m, const char *name)
{
	free(m->reference_name);
	m->reference_name = name ? strdup(name) : NULL;
}

void vms_model_set_hull(struct vms_model *m, bool enabled)
{
	m->no_hull = !enabled;
}

void vms_model_set_match_cap(struct vms_model *m, uint32_t cap)
{
	m->match_cap = cap;
}

void vms_model_set_clock_model(struct vms_model *m, int model)
{
	m->clock_model = model == VMS_CLOCK_MODEL_LINEAR ? VMS_CLOCK_MODEL_LINEAR : VMS_CLOCK_MODEL_AUTO;
}

int vms_model_clock_model(const struct vms_model *m) { return (int)m->clock_model; }

/* A guest's ns per its host's ns: its TSC runs at scaling / 2^frac of the host's (TIME_SHIFT's
 * first sample) and each TSC2NSEC turns its own TSC to ns; without both TSC2NSEC and a
 * scaling, both clocks are ns of the same crystal: 1. */
static long double guest_slope(const struct vms_trace_meta *g, const struct vms_trace_meta *h)
{
	if (!g || !h || !g->has_tsc2nsec || !h->has_tsc2nsec || !g->tsc_mult || !h->tsc_mult ||
	    !g->timeshift || !g->timeshift->nr_cpus || !g->timeshift->cpu[0].n ||
	    !g->timeshift->cpu[0].scaling[0] || g->timeshift->cpu[0].frac[0] > 63 ||
	    g->tsc_shift > 63 || h->tsc_shift > 63)
		return 1.0L;
	long double ratio = ldexpl((long double)g->timeshift->cpu[0].scaling[0],
				   -(int)g->timeshift->cpu[0].frac[0]);
	long double gns = ldexpl((long double)g->tsc_mult, -(int)g->tsc_shift);
	long double hns = ldexpl((long double)h->tsc_mult, -(int)h->tsc_shift);
	return ratio * gns / hns;
}

/* The rules of the clock model: which machine is a traced guest of which traced host. */
static int build_rules(const struct vms_model *m, struct vms_sync_rules *r, int32_t **host,
		       long double **slope)
{
	size_t n = m->nr_sources ? m->nr_sources : 1;
	*host = malloc(n * sizeof **host);
	*slope = malloc(n * sizeof **slope);
	if (!*host || !*slope)
		return -1;
	for (uint32_t i = 0; i < m->nr_sources; i++) {
		const struct vms_machine *mc = &m->mach[i];
		bool guest = (mc->role & VMS_ROLE_GUEST) && mc->host >= 0 &&
			     (uint32_t)mc->host < m->nr_sources && (uint32_t)mc->host != i;
		(*host)[i] = guest ? mc->host : -1;
		(*slope)[i] = guest ? guest_slope(m->priv[i].meta, m->priv[mc->host].meta) : 1.0L;
	}
	*r = (struct vms_sync_rules){ .model = m->clock_model, .guest_host = *host,
				      .guest_slope = *slope };
	return 0;
}

void vms_model_on_pair(struct vms_model *m, void (*fn)(void *ctx, const struct vms_sync_pair *p),
		       void *ctx)
{
	m->on_pair = fn;
	m->on_pair_ctx = ctx;
}

const struct vms_match_stats *vms_model_match_stats(const struct vms_model *m)
{
	return m->sync_set ? vms_sync_set_stats(m->sync_set) : NULL;
}

/* The host whose TSC a guest's TIME_SHIFT targets, when it is in the session. */
static const struct vms_trace_meta *timeshift_host(const struct vms_model *m, uint32_t i,
						   int32_t *host_index)
{
	const struct vms_machine *mc = &m->mach[i];
	const struct vms_trace_meta *meta = m->priv[i].meta;
	*host_index = -1;
	if (!meta->timeshift)
		return NULL;
	if ((mc->role & VMS_ROLE_GUEST) && mc->host >= 0) {
		const struct vms_trace_meta *hm = m->priv[mc->host].meta;
		if (hm && hm->has_trace_id && hm->trace_id == meta->timeshift->peer_trace_id) {
			*host_index = mc->host;
			return hm;
		}
	}
	const struct vms_trace_meta *found = NULL;
	for (uint32_t h = 0; h < m->nr_sources; h++) {
		const struct vms_trace_meta *hm = m->priv[h].meta;
		if (h != i && hm && hm->has_trace_id && hm->trace_id == meta->timeshift->peer_trace_id) {
			found = hm;
			*host_index = (int32_t)h;
		}
	}
	return found;
}

/* The hull's answer for machine i (tree from the reference). */
static void set_hull(struct vms_model *m, uint32_t i)
{
	struct vms_machine *mc = &m->mach[i];
	struct vms_sync_info *si = &mc->sync;
	const struct vms_sync_tree *t = &m->tree;
	if (!t->has_fit[i] || t->fit[i].quality == VMS_SYNC_Q_ABSENT)
		return;
	const struct vms_hull_fit *f = &t->fit[i];
	si->method = VMS_SYNC_HULL;
	si->quality = f->quality;
	si->pairs = f->pairs;
	si->accuracy = (double)f->accuracy;
	si->hull_above = f->hull_above;
	si->hull_below = f->hull_below;
	si->alpha = f->alpha;
	si->beta = f->beta;
	si->x0 = f->x0;
	si->y0 = f->y0;
	si->parent = t->parent[i];
	si->depth = t->depth[i];
	si->offset_only = f->offset_only;
	si->refused = f->refused;
	if (!t->has_lin[i])
		return; /* not used: the raw clock stays, the report says why */
	si->applied = true;
	mc->clock.linear = true;
	mc->clock.lin = t->lin[i];
	si->slope = (double)vms_linear_slope(&t->lin[i]);
	si->offset_ns = (double)vms_linear_offset(&t->lin[i]);
	if (f->has_range && t->parent[i] >= 0) {
		/* beta in [beta_lo, beta_hi] moves the machine's times by -(beta - fit) / alpha in
		 * its parent's ns, times the parent's slope in the reference's */
		long double ps = vms_linear_slope(&t->lin[t->parent[i]]);
		si->has_range = true;
		si->range_lo_ns = (double)(-(f->beta_hi - f->beta) / f->alpha * ps);
		si->range_hi_ns = (double)((f->beta - f->beta_lo) / f->alpha * ps);
		si->feasible_lo_ns = si->offset_ns + si->range_lo_ns;
		si->feasible_hi_ns = si->offset_ns + si->range_hi_ns;
	}
}

/* A nested guest's TIME_SHIFT ends in its host's TSC; when that host (L1) is itself a
 * TIME_SHIFT guest of its own host (L0), the guest's clock goes on through L1's hops up to
 * the root, whose TSC2NSEC then applies (L2 -> L1 -> L0: each hop its own offset and ratio,
 * each exact). state: 0 not done, 1 in progress (a cycle of TIME_SHIFT peers, damage: the
 * chain stops there), 2 done. */
static void chain_timeshift(struct vms_model *m, uint32_t i, uint8_t *state)
{
	if (state[i])
		return;
	state[i] = 1;
	struct vms_machine *mc = &m->mach[i];
	int32_t p = mc->sync.parent;
	if (mc->sync.method == VMS_SYNC_TIMESHIFT && p >= 0 && (uint32_t)p < m->nr_sources &&
	    (uint32_t)p != i && m->mach[p].sync.method == VMS_SYNC_TIMESHIFT) {
		chain_timeshift(m, (uint32_t)p, state);
		const struct vms_clock *pc = &m->mach[p].clock;
		if (state[p] == 2 && pc->timeshift && pc->nr_up < VMS_CLOCK_MAX_HOPS) {
			mc->clock.up[0] = pc->timeshift;
			for (uint32_t k = 0; k < pc->nr_up; k++)
				mc->clock.up[k + 1] = pc->up[k];
			mc->clock.nr_up = pc->nr_up + 1;
			mc->clock.tsc2nsec = pc->tsc2nsec;
			mc->clock.mult = pc->mult;
			mc->clock.shift = pc->shift;
			mc->clock.tsc_offset = pc->tsc_offset;
		}
	}
	state[i] = 2;
}

/* A TIME_SHIFT guest's clock ends in its host's ns (a nested guest's in its root's: the
 * first machine up the chain that is not synchronized by TIME_SHIFT): when that root was
 * synchronized by the hull or by the user (--offset), the root's transform follows. */
static void inherit_root_linear(struct vms_model *m)
{
	for (uint32_t i = 0; i < m->nr_sources; i++) {
		int32_t h = m->mach[i].sync.parent;
		for (uint32_t hop = 0; h >= 0 && hop < m->nr_sources &&
		     m->mach[h].sync.method == VMS_SYNC_TIMESHIFT; hop++)
			h = m->mach[h].sync.parent;
		if (m->mach[i].sync.method == VMS_SYNC_TIMESHIFT && h >= 0 && m->mach[h].clock.linear) {
			m->mach[i].clock.linear = true;
			m->mach[i].clock.lin = m->mach[h].clock.lin;
			/* exact to the root, approximate from there when the user gave it */
			if (m->mach[h].sync.method == VMS_SYNC_USER)
				m->mach[i].sync.quality = VMS_SYNC_Q_APPROXIMATE;
		}
	}
}

int vms_model_set_clocks(struct vms_model *m, struct vms_error *err)
{
	if (m->reference_name) {
		int32_t r = vms_model_find(m, m->reference_name);
		if (r < 0 || m->mach[r].source < 0)
			return vms_error_set(err, VMS_ERR_USAGE,
					     "--reference %s: no traced machine has that name",
					     m->reference_name);
		m->reference = (uint32_t)r;
	}
	bool *fixed = calloc(m->nr_sources ? m->nr_sources : 1, sizeof *fixed);
	if (!fixed)
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	for (uint32_t i = 0; i < m->nr; i++) {
		struct vms_machine *mc = &m->mach[i];
		const struct vms_trace_meta *meta = m->priv[i].meta;
		struct vms_sync_info *si = &mc->sync;
		si->reference = m->reference;
		si->slope = 1.0;
		si->offset_ns = 0.0;
		si->parent = -1;
		if (!meta)
			continue; /* untraced: filled below from the host */
		int32_t host_index = -1;
		const struct vms_trace_meta *host_meta =
			i == m->reference ? NULL : timeshift_host(m, i, &host_index);
		vms_clock_from_meta(&mc->clock, meta, host_meta != NULL, host_meta);
		if (i == m->reference) {
			si->method = VMS_SYNC_REFERENCE;
			si->quality = VMS_SYNC_Q_EXACT;
		} else if (host_meta) {
			si->method = VMS_SYNC_TIMESHIFT;
			si->quality = VMS_SYNC_Q_EXACT;
			si->parent = host_index;
			fixed[i] = true;
			uint64_t n = 0;
			for (uint32_t c = 0; c < meta->timeshift->nr_cpus; c++)
				n += meta->timeshift->cpu[c].n;
			si->pairs = n;
		} else {
			si->method = VMS_SYNC_NONE;
			si->quality = VMS_SYNC_Q_ABSENT;
		}
	}
	uint8_t *chain = calloc(m->nr_sources ? m->nr_sources : 1, 1);
	if (!chain) {
		free(fixed);
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < m->nr_sources; i++)
		chain_timeshift(m, i, chain);
	free(chain);
	struct vms_sync_rules rules;
	int32_t *rhost = NULL;
	long double *rslope = NULL;
	if (build_rules(m, &rules, &rhost, &rslope) < 0) {
		free(fixed);
		free(rhost);
		free(rslope);
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	}
	if (m->sync_set &&
	    vms_sync_tree_build_rules(m->sync_set, m->reference, fixed, &rules, &m->tree) == 0) {
		m->has_tree = true;
		for (uint32_t i = 0; i < m->nr_sources; i++)
			if (m->mach[i].sync.method == VMS_SYNC_NONE)
				set_hull(m, i);
		inherit_root_linear(m);
	}
	free(fixed);
	free(rhost);
	free(rslope);
	int rc = vms_model_apply_user_offsets(m, err);
	if (rc < 0)
		return rc;
	if (m->nr_offsets)
		inherit_root_linear(m); /* an L1 given --offset: its TIME_SHIFT guests follow */
	for (uint32_t i = 0; i < m->nr; i++) {
		struct vms_machine *mc = &m->mach[i];
		if (m->priv[i].meta || mc->host < 0)
			continue;
		const struct vms_machine *h = &m->mach[mc->host];
		mc->clock = h->clock;
		mc->sync = h->sync;
	}
	return 0;
}
