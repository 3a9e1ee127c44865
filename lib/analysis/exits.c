/* VM exits (docs/vm-analysis.md §5): a kvm_exit is paired with the next kvm_entry of the
 * same host thread (= the same vCPU: the model maps each vCPU thread to one vCPU); the time
 * between them is the exit's cost. A kvm_exit followed by another kvm_exit (lost events),
 * or still open at the end, has no cost and is counted as unpaired. Costs are kept per vCPU
 * and per guest, per (isa, reason), each in a vms_dist. */
#include <stdlib.h>

#include "analysis_internal.h"

static struct an_exit_row *row(struct an_exit_table *tb, uint32_t isa, uint32_t reason)
{
	if (tb->last < tb->n && tb->row[tb->last].isa == isa && tb->row[tb->last].reason == reason)
		return &tb->row[tb->last];
	for (uint32_t i = 0; i < tb->n; i++) {
		if (tb->row[i].isa == isa && tb->row[i].reason == reason) {
			tb->last = i;
			return &tb->row[i];
		}
	}
	if (tb->n == tb->cap) {
		uint32_t ncap = tb->cap ? tb->cap * 2 : 8;
		struct an_exit_row *nr = realloc(tb->row, ncap * sizeof *nr);
		if (!nr)
			return NULL;
		tb->row = nr;
		tb->cap = ncap;
	}
	struct vms_dist *d = vms_dist_new();
	if (!d)
		return NULL;
	tb->row[tb->n] = (struct an_exit_row){ .isa = isa, .reason = reason, .dist = d };
	tb->last = tb->n;
	return &tb->row[tb->n++];
}

void an_exit_begin(struct vms_analysis *a, struct an_vcpu *v, const struct vms_event *ev,
		   uint64_t t)
{
	if (v->exit_pending)
		v->exits_unpaired++;
	v->exit_pending = true;
	v->exit_t = t;
	v->exit_reason = (uint32_t)ev->f[0];
	v->exit_isa = (uint32_t)ev->f[1];
	v->have_exit = true;
	an_gthread_exit(a, v);
}

void an_exit_end(struct vms_analysis *a, struct an_vcpu *v, uint64_t t)
{
	if (!v->exit_pending)
		return;
	v->exit_pending = false;
	uint64_t d = t > v->exit_t ? t - v->exit_t : 0;
	struct an_exit_row *r = row(&v->exits, v->exit_isa, v->exit_reason);
	if (r)
		vms_dist_add(r->dist, d);
	if (v->machine < a->nr_mach) {
		r = row(&a->mach[v->machine].exits, v->exit_isa, v->exit_reason);
		if (r)
			vms_dist_add(r->dist, d);
	}
}

static int cmp_exit(const void *x, const void *y)
{
	const struct vms_exit_stats *a = x, *b = y;
	uint64_t sa = vms_dist_sum(a->dist), sb = vms_dist_sum(b->dist);
	if (sa != sb)
		return sa > sb ? -1 : 1;
	if (a->isa != b->isa)
		return a->isa < b->isa ? -1 : 1;
	return a->reason < b->reason ? -1 : a->reason > b->reason;
}

int an_exit_table_sorted(const struct an_exit_table *tb, struct vms_exit_stats **out,
			 uint32_t *n)
{
	*out = NULL;
	*n = 0;
	if (tb->n == 0)
		return 0;
	struct vms_exit_stats *s = malloc(tb->n * sizeof *s);
	if (!s)
		return -1;
	for (uint32_t i = 0; i < tb->n; i++)
		s[i] = (struct vms_exit_stats){ tb->row[i].isa, tb->row[i].reason, tb->row[i].dist };
	qsort(s, tb->n, sizeof *s, cmp_exit);
	*out = s;
	*n = tb->n;
	return 0;
}

void an_exit_table_free(struct an_exit_table *tb)
{
	for (uint32_t i = 0; i < tb->n; i++)
		vms_dist_free(tb->row[i].dist);
	free(tb->row);
	tb->row = NULL;
	tb->n = tb->cap = 0;
}
