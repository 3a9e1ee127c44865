/* VM exits (docs/vm-analysis.md §5), a consumer of the state machine's exit observations:
 * a kvm_exit is paired with the next kvm_entry of the same host thread; the time between
 * them is the exit's cost. Every kvm_exit is counted; one closed by a gap (lost events) or
 * still open at the end has no cost and is counted as unfinished, per reason. Costs are kept per vCPU and
 * per guest, per (isa, reason), each in a vms_dist. During the pass only the vCPU's table takes
 * an exit; its guest's table is their union, made at the finish (one row lookup and one sample
 * copy per exit less in the pass: a Xen host's exits are a third of what report sees). */
#include <stdlib.h>

#include "analysis_internal.h"
#include "core/grow.h"

struct an_exits {
	const struct an_layout *L;
	struct an_exit_table *vcpu;   /* [nr_v] */
	struct an_exit_table *guest;  /* [nr_mach] */
	uint64_t *unpaired;           /* [nr_v] */
	bool guests_made;             /* the guest tables, at the finish */
	/* nested (L->nested): per vCPU, its exit pending, since when its state has been at the
	 * layer below its host (UINT64_MAX: not), and that time summed within the exit */
	struct ex_nest { bool in_exit; uint64_t below_t, below_ns; } *nest;
	struct vms_keymap idx;        /* rows of table (vidx, or nr_v + machine), isa, reason */
};

static struct an_exit_row *row(struct an_exits *ex, uint32_t table, struct an_exit_table *tb,
			       uint32_t isa, uint32_t reason)
{
	if (tb->last < tb->n && tb->row[tb->last].isa == isa && tb->row[tb->last].reason == reason)
		return &tb->row[tb->last];
	uint32_t *near = &tb->near[reason & 63], j = *near - 1;
	if (j < tb->n && tb->row[j].isa == isa && tb->row[j].reason == reason) {
		tb->last = j;
		return &tb->row[j];
	}
	uint32_t i = an_reason_find(&ex->idx, table, isa, reason);
	for (uint32_t k = 0; i == AN_REASON_UNINDEXED && k < tb->n; k++)
		if (tb->row[k].isa == isa && tb->row[k].reason == reason)
			i = k;
	if (i < tb->n) {
		tb->last = i;
		*near = i + 1;
		return &tb->row[i];
	}
	if (tb->n == tb->cap) {
		struct an_exit_row *nr = vms_grow(tb->row, &tb->cap, sizeof *nr, 8);
		if (!nr)
			return NULL;
		tb->row = nr;
	}
	if (i == UINT32_MAX && !an_reason_add(&ex->idx, table, isa, reason, tb->n))
		return NULL;
	struct vms_dist *d = vms_dist_new();
	if (!d)
		return NULL;
	tb->row[tb->n] = (struct an_exit_row){ .isa = isa, .reason = reason, .dist = d };
	tb->last = tb->n;
	*near = tb->n + 1;
	return &tb->row[tb->n++];
}

/* ---- the layers of an exit's cost (nested guests only) ---- */
static void on_exit_begin(void *ctx, const struct vms_obs_exit *o)
{
	struct an_exits *ex = ctx;
	struct ex_nest *n = &ex->nest[o->vidx];
	n->in_exit = true;
	n->below_ns = 0;
}

void an_exits_on_state(void *ctx, const struct vms_obs_vcpu_state *o)
{
	struct an_exits *ex = ctx;
	struct ex_nest *n = &ex->nest[o->vidx];
	bool below = o->layer >= 0 && o->layer != o->host;
	if (n->below_t != UINT64_MAX && !below) {
		if (n->in_exit && o->t > n->below_t)
			n->below_ns += o->t - n->below_t;
		n->below_t = UINT64_MAX;
	} else if (n->below_t == UINT64_MAX && below) {
		n->below_t = o->t;
	}
}

/* The layer below's part of the exit that ends at t */
static uint64_t exit_below(struct an_exits *ex, const struct vms_obs_exit *o)
{
	if (!ex->nest)
		return 0;
	struct ex_nest *n = &ex->nest[o->vidx];
	uint64_t ns = n->below_ns;
	if (n->below_t != UINT64_MAX && o->t > n->below_t) {
		ns += o->t - n->below_t;
		n->below_t = o->t;   /* (what follows the exit is not its) */
	}
	n->in_exit = false;
	n->below_ns = 0;
	return ns;
}

void an_exits_on_exit_end(void *ctx, const struct vms_obs_exit *o)
{
	struct an_exits *ex = ctx;
	uint64_t below = exit_below(ex, o);
	struct an_exit_row *rv = row(ex, o->vidx, &ex->vcpu[o->vidx], o->isa, o->reason);
	if (o->how != VMS_EXIT_ENDED) {
		ex->unpaired[o->vidx]++;
		if (rv)
			rv->unfinished++;
		return;
	}
	if (rv) {
		vms_dist_add(rv->dist, o->t > o->begin ? o->t - o->begin : 0);
		rv->below_ns += below;
	}
}

/* Each guest's table: the rows of its vCPUs' tables merged by (isa, reason) (a vCPU's
 * exits are its machine's: the state machine publishes them with both) */
static void on_finish(void *ctx, uint64_t t_end)
{
	(void)t_end;
	struct an_exits *ex = ctx;
	if (ex->guests_made)
		return;
	ex->guests_made = true;
	for (uint32_t i = 0; i < ex->L->nr_v; i++) {
		uint32_t m = ex->L->v[i].machine;
		const struct an_exit_table *tv = &ex->vcpu[i];
		for (uint32_t k = 0; m < ex->L->nr_mach && k < tv->n; k++) {
			const struct an_exit_row *rv = &tv->row[k];
			struct an_exit_row *rg =
				row(ex, ex->L->nr_v + m, &ex->guest[m], rv->isa, rv->reason);
			if (!rg)
				continue;
			rg->unfinished += rv->unfinished;
			rg->below_ns += rv->below_ns;
			an_dist_merge(rg->dist, rv->dist);
		}
	}
}

struct an_exits *an_exits_new(const struct an_layout *L, struct vms_observer *o)
{
	struct an_exits *ex = calloc(1, sizeof *ex);
	if (!ex)
		return NULL;
	ex->L = L;
	vms_keymap_init(&ex->idx);
	ex->vcpu = calloc(L->nr_v ? L->nr_v : 1, sizeof *ex->vcpu);
	ex->guest = calloc(L->nr_mach ? L->nr_mach : 1, sizeof *ex->guest);
	ex->unpaired = calloc(L->nr_v ? L->nr_v : 1, sizeof *ex->unpaired);
	if (!ex->vcpu || !ex->guest || !ex->unpaired) {
		an_exits_free(ex);
		return NULL;
	}
	*o = (struct vms_observer){ .ctx = ex, .exit_end = an_exits_on_exit_end, .finish = on_finish };
	if (L->nested) {
		if (!(ex->nest = calloc(L->nr_v ? L->nr_v : 1, sizeof *ex->nest))) {
			an_exits_free(ex);
			return NULL;
		}
		for (uint32_t i = 0; i < L->nr_v; i++)
			ex->nest[i].below_t = UINT64_MAX;
		o->exit_begin = on_exit_begin;
		o->vcpu_state = an_exits_on_state;
	}
	return ex;
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

static int table_sorted(const struct an_exit_table *tb, struct vms_exit_stats **out, uint32_t *n)
{
	*out = NULL;
	*n = 0;
	if (tb->n == 0)
		return 0;
	struct vms_exit_stats *s = malloc(tb->n * sizeof *s);
	if (!s)
		return -1;
	for (uint32_t i = 0; i < tb->n; i++)
		s[i] = (struct vms_exit_stats){
			.isa = tb->row[i].isa, .reason = tb->row[i].reason, .dist = tb->row[i].dist,
			.unfinished = tb->row[i].unfinished, .below_ns = tb->row[i].below_ns,
			.count = vms_dist_count(tb->row[i].dist) + tb->row[i].unfinished,
		};
	qsort(s, tb->n, sizeof *s, cmp_exit);
	*out = s;
	*n = tb->n;
	return 0;
}

int an_exits_vcpu(const struct an_exits *ex, uint32_t vidx, struct vms_exit_stats **out,
		  uint32_t *n)
{
	return table_sorted(&ex->vcpu[vidx], out, n);
}

int an_exits_guest(const struct an_exits *ex, uint32_t machine, struct vms_exit_stats **out,
		   uint32_t *n)
{
	return table_sorted(&ex->guest[machine], out, n);
}

uint64_t an_exits_unpaired(const struct an_exits *ex, uint32_t vidx)
{
	return ex->unpaired[vidx];
}

static void table_free(struct an_exit_table *tb)
{
	for (uint32_t i = 0; i < tb->n; i++)
		vms_dist_free(tb->row[i].dist);
	free(tb->row);
}

void an_exits_free(struct an_exits *ex)
{
	if (!ex)
		return;
	for (uint32_t i = 0; ex->vcpu && i < ex->L->nr_v; i++)
		table_free(&ex->vcpu[i]);
	for (uint32_t m = 0; ex->guest && m < ex->L->nr_mach; m++)
		table_free(&ex->guest[m]);
	free(ex->vcpu);
	free(ex->guest);
	free(ex->unpaired);
	free(ex->nest);
	vms_keymap_free(&ex->idx);
	free(ex);
}
