/* VM exits by guest RIP (include/vmscope/exit_rips.h): an open-addressing table keyed by
 * (guest, isa, reason, rip), filled from exit_begin (the count) and exit_end (the time). */
#include <stdlib.h>

#include "analysis_internal.h"
#include "vmscope/exit_rips.h"
#include "core/grow.h"

struct vms_exit_rips {
	struct vms_exit_rip *row;     /* VMS_EXIT_RIPS_MAX + overflow rows */
	uint32_t n, cap;
	uint32_t *slot;               /* hash -> row + 1, 0 empty */
	uint32_t nslot;
	bool truncated, sorted;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static struct vms_exit_rip *find(struct vms_exit_rips *r, uint32_t m, uint32_t isa,
				 uint32_t reason, uint64_t rip)
{
	if (r->n >= VMS_EXIT_RIPS_MAX && rip != UINT64_MAX) {
		/* an existing address keeps its own row; a new one goes to the other row */
		uint64_t h = mix(rip ^ ((uint64_t)m << 48) ^ ((uint64_t)isa << 40) ^ reason);
		for (uint32_t i = 0; i < r->nslot; i++) {
			uint32_t s = r->slot[(h + i) & (r->nslot - 1)];
			if (!s)
				break;
			struct vms_exit_rip *x = &r->row[s - 1];
			if (x->rip == rip && x->machine == m && x->isa == isa && x->reason == reason)
				return x;
		}
		r->truncated = true;
		return find(r, m, isa, reason, UINT64_MAX);
	}
	if (!r->nslot || (r->n + 1) * 2 > r->nslot) {
		uint32_t ns = r->nslot ? r->nslot * 2 : 1024;
		uint32_t *nsl = calloc(ns, sizeof *nsl);
		if (!nsl)
			return NULL;
		for (uint32_t i = 0; i < r->n; i++) {
			const struct vms_exit_rip *x = &r->row[i];
			uint64_t h = mix(x->rip ^ ((uint64_t)x->machine << 48) ^ ((uint64_t)x->isa << 40) ^
					 x->reason);
			while (nsl[h & (ns - 1)])
				h++;
			nsl[h & (ns - 1)] = i + 1;
		}
		free(r->slot);
		r->slot = nsl;
		r->nslot = ns;
	}
	uint64_t h = mix(rip ^ ((uint64_t)m << 48) ^ ((uint64_t)isa << 40) ^ reason);
	for (;; h++) {
		uint32_t *s = &r->slot[h & (r->nslot - 1)];
		if (*s) {
			struct vms_exit_rip *x = &r->row[*s - 1];
			if (x->rip == rip && x->machine == m && x->isa == isa && x->reason == reason)
				return x;
			continue;
		}
		if (r->n == r->cap) {
			struct vms_exit_rip *nr = vms_grow(r->row, &r->cap, sizeof *nr, 256);
			if (!nr)
				return NULL;
			r->row = nr;
		}
		r->row[r->n] = (struct vms_exit_rip){ .machine = m, .isa = isa, .reason = reason,
						      .rip = rip };
		*s = ++r->n;
		return &r->row[r->n - 1];
	}
}

static void on_begin(void *ctx, const struct vms_obs_exit *o)
{
	struct vms_exit_rip *x = find(ctx, o->machine, o->isa, o->reason, o->guest_rip);
	if (x)
		x->count++;
}

static void on_end(void *ctx, const struct vms_obs_exit *o)
{
	struct vms_exit_rip *x = find(ctx, o->machine, o->isa, o->reason, o->guest_rip);
	if (!x)
		return;
	if (o->how == VMS_EXIT_ENDED)
		x->total += o->t > o->begin ? o->t - o->begin : 0;
	else
		x->unfinished++;
}

static int cmp_row(const void *a, const void *b)
{
	const struct vms_exit_rip *x = a, *y = b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->rip < y->rip ? -1 : x->rip > y->rip;
}

static void on_finish(void *ctx, uint64_t t_end)
{
	(void)t_end;
	struct vms_exit_rips *r = ctx;
	if (r->n > 1)
		qsort(r->row, r->n, sizeof *r->row, cmp_row);
	free(r->slot);   /* the rows moved: no lookups after the end */
	r->slot = NULL;
	r->nslot = 0;
	r->sorted = true;
}

struct vms_exit_rips *vms_exit_rips_new(struct vms_observer *o)
{
	struct vms_exit_rips *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	*o = (struct vms_observer){ .ctx = r, .exit_begin = on_begin, .exit_end = on_end,
				    .finish = on_finish };
	return r;
}

void vms_exit_rips_free(struct vms_exit_rips *r)
{
	if (!r)
		return;
	free(r->row);
	free(r->slot);
	free(r);
}

uint32_t vms_exit_rips_count(const struct vms_exit_rips *r)
{
	return r->sorted ? r->n : 0;
}

const struct vms_exit_rip *vms_exit_rips_row(const struct vms_exit_rips *r, uint32_t i)
{
	return r->sorted && i < r->n ? &r->row[i] : NULL;
}

bool vms_exit_rips_truncated(const struct vms_exit_rips *r)
{
	return r->truncated;
}
