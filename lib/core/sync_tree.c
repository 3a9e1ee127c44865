/* Several machines (vmscope/sync.h): one hull per pair, fed by one matcher, and the spanning
 * tree that brings every machine to the reference.
 *
 * The tree is a shortest-path tree from the reference in which an ACCURATE edge costs 1 and an
 * APPROXIMATE one costs more than any path of ACCURATE edges (n), so that a bounded path is
 * always preferred to a shorter approximate one; INCOMPLETE and FAIL edges are not used.
 * Each edge's fit is taken in the tree's orientation (x = the parent), and a machine's
 * transform is its parent's composed with the edge's (exact in application at each step). */
#include <stdlib.h>
#include <string.h>

#include "vmscope/sync.h"

struct vms_sync_set {
	uint32_t n;
	struct vms_matcher *match;
	struct vms_hull *hull;   /* [a * n + b] for a < b */
};

struct vms_sync_set *vms_sync_set_new(uint32_t n, uint32_t cap)
{
	struct vms_sync_set *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->n = n;
	s->match = vms_matcher_new(cap);
	s->hull = calloc(n ? (size_t)n * n : 1, sizeof *s->hull);
	if (!s->match || !s->hull) {
		vms_sync_set_free(s);
		return NULL;
	}
	for (size_t i = 0; i < (size_t)n * n; i++)
		vms_hull_init(&s->hull[i]);
	return s;
}

void vms_sync_set_free(struct vms_sync_set *s)
{
	if (!s)
		return;
	if (s->hull)
		for (size_t i = 0; i < (size_t)s->n * s->n; i++)
			vms_hull_free(&s->hull[i]);
	free(s->hull);
	vms_matcher_free(s->match);
	free(s);
}

uint32_t vms_sync_set_size(const struct vms_sync_set *s) { return s->n; }

const struct vms_match_stats *vms_sync_set_stats(const struct vms_sync_set *s)
{
	return vms_matcher_stats(s->match);
}

const struct vms_hull *vms_sync_set_hull(const struct vms_sync_set *s, uint32_t a, uint32_t b)
{
	if (a == b || a >= s->n || b >= s->n)
		return NULL;
	if (a > b) {
		uint32_t t = a;
		a = b;
		b = t;
	}
	return &s->hull[(size_t)a * s->n + b];
}

void vms_sync_set_pair(struct vms_sync_set *s, const struct vms_sync_pair *p)
{
	if (p->from == p->to || p->from >= s->n || p->to >= s->n)
		return;
	struct vms_hull *h = (struct vms_hull *)vms_sync_set_hull(s, p->from, p->to);
	if (p->from < p->to)
		vms_hull_add(h, p->t_send, p->t_recv, true);   /* a -> b: above */
	else
		vms_hull_add(h, p->t_recv, p->t_send, false);  /* b -> a: below */
}

int vms_sync_set_event(struct vms_sync_set *s, uint32_t machine, enum vms_kind kind,
		       const uint64_t f[3], uint64_t t_ns, struct vms_sync_pair *pair)
{
	if (machine >= s->n)
		return 0;
	if (vms_matcher_event(s->match, machine, kind, f, t_ns, pair) != 1)
		return 0;
	vms_sync_set_pair(s, pair);
	return 1;
}

const char *vms_clock_model_name(enum vms_clock_model model)
{
	return model == VMS_CLOCK_MODEL_LINEAR ? "linear" : "auto";
}

int vms_clock_model_parse(const char *s, enum vms_clock_model *model)
{
	if (!strcmp(s, "auto"))
		*model = VMS_CLOCK_MODEL_AUTO;
	else if (!strcmp(s, "linear"))
		*model = VMS_CLOCK_MODEL_LINEAR;
	else
		return -1;
	return 0;
}

bool vms_sync_edge_usable(const struct vms_hull_fit *fit)
{
	return (fit->quality == VMS_SYNC_Q_ACCURATE || fit->quality == VMS_SYNC_Q_APPROXIMATE) &&
	       !fit->refused;
}

void vms_sync_edge_fit(const struct vms_sync_set *s, const struct vms_sync_rules *rules,
		       uint32_t p, uint32_t c, struct vms_hull_fit *fit)
{
	const struct vms_hull *h = vms_sync_set_hull(s, p, c);
	bool swap = p > c;
	if (!rules || rules->model == VMS_CLOCK_MODEL_LINEAR) {
		vms_hull_solve(h, swap, fit);
		return;
	}
	/* a guest and the host that runs it: the slope is known (y per x: the child's ns per
	 * the parent's) */
	if (rules->guest_host[c] == (int32_t)p) {
		vms_hull_solve_slope(h, swap, rules->guest_slope[c], fit);
		return;
	}
	if (rules->guest_host[p] == (int32_t)c) {
		vms_hull_solve_slope(h, swap, 1.0L / rules->guest_slope[p], fit);
		return;
	}
	vms_hull_solve(h, swap, fit);
	long double drift = fit->alpha - 1.0L;
	if (vms_sync_edge_usable(fit) && (drift < 0 ? -drift : drift) * 1e6L > VMS_SYNC_MAX_DRIFT_PPM)
		fit->refused = true;
}

void vms_sync_tree_free(struct vms_sync_tree *t)
{
	free(t->parent);
	free(t->depth);
	free(t->has_lin);
	free(t->has_fit);
	free(t->lin);
	free(t->fit);
	memset(t, 0, sizeof *t);
}

int vms_sync_tree_build(const struct vms_sync_set *s, uint32_t reference, const bool *fixed,
			struct vms_sync_tree *t)
{
	return vms_sync_tree_build_rules(s, reference, fixed, NULL, t);
}

int vms_sync_tree_build_rules(const struct vms_sync_set *s, uint32_t reference, const bool *fixed,
			      const struct vms_sync_rules *rules, struct vms_sync_tree *t)
{
	uint32_t n = s->n;
	memset(t, 0, sizeof *t);
	t->n = n;
	size_t nn = n ? n : 1;
	t->parent = malloc(nn * sizeof *t->parent);
	t->depth = calloc(nn, sizeof *t->depth);
	t->has_lin = calloc(nn, sizeof *t->has_lin);
	t->has_fit = calloc(nn, sizeof *t->has_fit);
	t->lin = calloc(nn, sizeof *t->lin);
	t->fit = calloc(nn, sizeof *t->fit);
	enum vms_sync_quality *q = calloc(nn * nn, sizeof *q);
	uint64_t *cost = malloc(nn * sizeof *cost);
	bool *done = calloc(nn, sizeof *done);
	if (!t->parent || !t->depth || !t->has_lin || !t->has_fit || !t->lin || !t->fit || !q ||
	    !cost || !done) {
		free(q);
		free(cost);
		free(done);
		vms_sync_tree_free(t);
		return -1;
	}
	for (uint32_t a = 0; a < n; a++)
		for (uint32_t b = a + 1; b < n; b++) {
			struct vms_hull_fit f;
			vms_sync_edge_fit(s, rules, a, b, &f);
			/* a refused fit is no edge (FAIL for the tree's weights) */
			q[(size_t)a * n + b] = q[(size_t)b * n + a] =
				f.refused ? VMS_SYNC_Q_FAIL : f.quality;
		}
	for (uint32_t i = 0; i < n; i++) {
		t->parent[i] = -1;
		cost[i] = UINT64_MAX;
		vms_linear_identity(&t->lin[i]);
	}
	if (reference < n) {
		cost[reference] = 0;
		t->has_lin[reference] = true;
	}
	/* Dijkstra, O(n^2): n is the number of traces */
	for (;;) {
		uint32_t u = n;
		for (uint32_t i = 0; i < n; i++)
			if (!done[i] && cost[i] != UINT64_MAX && (u == n || cost[i] < cost[u]))
				u = i;
		if (u == n)
			break;
		done[u] = true;
		if (u != reference) {
			/* the edge from its parent, in the tree's orientation */
			uint32_t p = (uint32_t)t->parent[u];
			struct vms_linear edge;
			vms_sync_edge_fit(s, rules, p, u, &t->fit[u]);
			t->has_fit[u] = true;
			if (vms_hull_fit_linear(&t->fit[u], &edge) == 0 &&
			    vms_linear_compose(&t->lin[u], &t->lin[p], &edge) == 0) {
				t->has_lin[u] = true;
			} else {
				/* the edge cannot be used after all (a transform out of range):
				 * nothing is reached through it */
				t->parent[u] = -1;
				continue;
			}
		}
		if (u != reference && fixed && fixed[u])
			continue;
		for (uint32_t v = 0; v < n; v++) {
			if (v == u || done[v] || (fixed && fixed[v]))
				continue;
			enum vms_sync_quality e = q[(size_t)u * n + v];
			uint64_t w = e == VMS_SYNC_Q_ACCURATE ? 1 : e == VMS_SYNC_Q_APPROXIMATE ? n + 1 : 0;
			if (!w)
				continue;
			if (cost[u] + w < cost[v]) {
				cost[v] = cost[u] + w;
				t->parent[v] = (int32_t)u;
				t->depth[v] = t->depth[u] + 1;
			}
		}
	}
	/* machines not reached: the fit with a reached machine that has the most pairs, for
	 * the report (its quality says why it is not used) */
	for (uint32_t v = 0; v < n; v++) {
		if (t->has_lin[v] || (fixed && fixed[v]))
			continue;
		uint64_t best = 0;
		for (uint32_t u = 0; u < n; u++) {
			if (u == v || !t->has_lin[u])
				continue;
			const struct vms_hull *h = vms_sync_set_hull(s, u, v);
			uint64_t np = h->above + h->below;
			if (np > best) {
				best = np;
				vms_sync_edge_fit(s, rules, u, v, &t->fit[v]);
				t->has_fit[v] = true;
			}
		}
	}
	free(q);
	free(cost);
	free(done);
	return 0;
}
