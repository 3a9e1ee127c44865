/* The offset of a guest and the host that runs it (docs/vm-analysis.md §8, "What the clocks
 * may do"; --clock-model auto). The slope is known, the matched messages bound the offset to
 * a feasible interval, and within it the offset is taken that puts the most guest events
 * inside a guest-mode window (kvm_entry -> kvm_exit) of their vCPU's host thread; ties: the
 * middle of the widest run of such integer offsets (of the one nearest the interval's middle
 * when several are as wide), a half ns when the run has an even number of them (times are
 * rounded half up: each then lands where the upper of the two middle offsets puts it).
 *
 * The machine fitted is the guest (to its host), or the host when the guest is the reference
 * (to its guest): a shift of the host by s is one of the guest by -s, so the search is the
 * same, read the other way round.
 *
 * How: one pass over the host's KVM events and all the guest's events, merged by reference
 * time with the guest placed at the interval's low end lo (a shift of its reference times,
 * exact: an integer added to the transform's integer part). A guest event at t could be at
 * t + k for every integer k in [0, W], W = hi - lo; it is inside a window [s, e] (see below)
 * for the k in [s - t, e - t]. Each event waits until the merge has passed t + W (every window that
 * can hold it is then known), adds +1 / -1 at the ends of its range of k for each such
 * window to a difference array over [0, W + 1], and the windows that end before the oldest
 * waiting event are forgotten. A prefix sum then gives the count at every offset.
 *
 * Bounds (say them: docs/DESIGN.md): W at most VMS_OFFSET_FIT_MAX_WIDTH ns (the difference
 * array, 8 bytes an offset: 8 MiB), and at most VMS_OFFSET_FIT_MAX_KEPT waiting events and
 * kept windows together; beyond either the interval's middle is kept and the report says
 * why. Time: the events once, plus for each guest event the windows within W of it.
 *
 * A window holds both its ends here, [s, e]: the containment check's windows are half-open,
 * and which end holds an event of the same time depends on the order of the traces (the
 * merge puts the lower source first at equal times, core/merge.h); closed, the search's
 * answer does not, and since the middle of a run is taken, an end is never chosen unless the
 * run is a single offset.
 *
 * With a slope of exactly 1 the offsets searched are whole ns of offset_ns (its fraction is
 * first rounded the way the transform rounds every time, which maps no time elsewhere), so
 * the answer does not depend on where in a nanosecond the interval's middle fell. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "core/merge.h"
#include "offset_fit.h"

struct of_win {
	uint64_t s, e;
};

struct of_vcpu {
	struct of_win *w;        /* closed windows by time, w[head .. n) kept */
	uint32_t head, n, cap;
	bool open;               /* in guest mode since open_s */
	uint64_t open_s;
};

struct of_wait {
	uint64_t t;
	uint32_t vcpu;
};

struct of_tid {
	int32_t tid;
	uint32_t vcpu;
};

struct of_state {
	uint64_t W;
	int64_t *diff;           /* [W + 2] */
	struct of_vcpu *v;
	uint32_t nr_v;
	struct of_tid *tids;     /* host thread -> vCPU, by tid */
	uint32_t nr_tids;
	struct of_wait *wait;    /* waiting guest events, in merged order: wait[head .. n) */
	uint32_t wait_head, wait_n, wait_cap;
	uint64_t kept;           /* windows kept + events waiting */
	bool too_dense;
	bool nomem;
};

static int cmp_tid(const void *a, const void *b)
{
	const struct of_tid *x = a, *y = b;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static const struct of_tid *find_tid(const struct of_state *st, int32_t tid)
{
	struct of_tid key = { .tid = tid };
	return bsearch(&key, st->tids, st->nr_tids, sizeof key, cmp_tid);
}

/* Room for one more kept item in *arr (n used from head); compacts before growing. */
static bool room(struct of_state *st, void **arr, uint32_t *head, uint32_t *n, uint32_t *cap,
		 size_t elem)
{
	if (st->kept >= VMS_OFFSET_FIT_MAX_KEPT) {
		st->too_dense = true;
		return false;
	}
	if (*n < *cap)
		return true;
	if (*head > 0) {
		memmove(*arr, (char *)*arr + (size_t)*head * elem, (size_t)(*n - *head) * elem);
		*n -= *head;
		*head = 0;
		if (*n < *cap)
			return true;
	}
	void *p = vms_grow(*arr, cap, elem, 64);
	if (!p) {
		st->nomem = true;
		return false;
	}
	*arr = p;
	return true;
}

/* One guest event at t (placed at lo): every window within [t, t + W] adds its range of k. */
static void settle(struct of_state *st, const struct of_wait *w)
{
	struct of_vcpu *v = &st->v[w->vcpu];
	uint64_t t = w->t, W = st->W;
	while (v->head < v->n && v->w[v->head].e < t) {
		v->head++;
		st->kept--;
	}
	for (uint32_t i = v->head; i < v->n; i++) {
		const struct of_win *x = &v->w[i];
		if (x->s > t + W)
			break;
		if (x->e < t)
			continue; /* (out of order: a host stream that went backwards) */
		uint64_t k0 = x->s > t ? x->s - t : 0, k1 = x->e - t;
		if (k1 > W)
			k1 = W;
		st->diff[k0]++;
		st->diff[k1 + 1]--;
	}
	if (v->open && v->open_s <= t + W) {
		st->diff[v->open_s > t ? v->open_s - t : 0]++;
		st->diff[W + 1]--;
	}
}

static void settle_before(struct of_state *st, uint64_t now, bool all)
{
	while (st->wait_head < st->wait_n &&
	       (all || st->wait[st->wait_head].t + st->W < now)) {
		settle(st, &st->wait[st->wait_head++]);
		st->kept--;
	}
}

static void host_event(struct of_state *st, const struct vms_event *ev, uint64_t t)
{
	if (ev->kind != VMS_K_KVM_ENTRY && ev->kind != VMS_K_KVM_EXIT)
		return;
	const struct of_tid *m = find_tid(st, ev->tid);
	if (!m)
		return;
	struct of_vcpu *v = &st->v[m->vcpu];
	if (ev->kind == VMS_K_KVM_ENTRY) {
		if (!v->open)
			v->open_s = t; /* (an entry after an entry: the first one opened it) */
		v->open = true;
		return;
	}
	if (!v->open)
		return;
	v->open = false;
	if (t <= v->open_s)
		return; /* empty: the containment check finds no event inside either */
	if (!room(st, (void **)&v->w, &v->head, &v->n, &v->cap, sizeof *v->w))
		return;
	v->w[v->n++] = (struct of_win){ v->open_s, t };
	st->kept++;
}

static void guest_event(struct of_state *st, const struct vms_event *ev, uint64_t t)
{
	if (ev->cpu >= st->nr_v || t > UINT64_MAX - st->W - 1)
		return;
	if (!room(st, (void **)&st->wait, &st->wait_head, &st->wait_n, &st->wait_cap,
		  sizeof *st->wait))
		return;
	st->wait[st->wait_n++] = (struct of_wait){ t, ev->cpu };
	st->kept++;
}

static void state_free(struct of_state *st)
{
	for (uint32_t i = 0; st->v && i < st->nr_v; i++)
		free(st->v[i].w);
	free(st->v);
	free(st->tids);
	free(st->wait);
	free(st->diff);
}

/* The widest run of offsets with the most events inside; *best = that count. */
static void best_run(const int64_t *diff, uint64_t W, uint64_t *a, uint64_t *b, uint64_t *best)
{
	int64_t c = 0, max = -1;
	uint64_t ra = 0, rb = 0, run_a = 0;
	bool in_run = false;
	for (uint64_t k = 0; k <= W; k++) {
		c += diff[k];
		if (c > max) {
			max = c;
			ra = rb = run_a = k;
			in_run = true;
		} else if (c == max) {
			if (!in_run)
				run_a = k;
			in_run = true;
			/* wider, or as wide and nearer the middle */
			uint64_t wn = k - run_a, wo = rb - ra;
			long double mid = (long double)W / 2;
			if (wn > wo || (wn == wo && fabsl((long double)(run_a + k) / 2 - mid) <
							 fabsl((long double)(ra + rb) / 2 - mid))) {
				ra = run_a;
				rb = k;
			}
		} else {
			in_run = false;
		}
	}
	*a = ra;
	*b = rb;
	*best = max > 0 ? (uint64_t)max : 0;
}

/* Guest g and host h, the moved machine's clock shifted by `shift` ns so that the guest sits
 * at the low end of its offsets relative to the host. */
static int search(struct vms_source *const *src, struct vms_model *m, uint32_t g, uint32_t h,
		  bool move_host, int64_t shift, uint64_t W, struct vms_error *err,
		  struct of_state *st)
{
	struct vms_machine *mc = vms_model_machine(m, g);
	st->W = W;
	st->nr_v = mc->nr_vcpus;
	st->diff = calloc(W + 2, sizeof *st->diff);
	st->v = calloc(st->nr_v ? st->nr_v : 1, sizeof *st->v);
	st->tids = calloc(st->nr_v ? st->nr_v : 1, sizeof *st->tids);
	if (!st->diff || !st->v || !st->tids)
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	for (uint32_t i = 0; i < mc->nr_vcpus; i++)
		if (mc->vcpus[i].host_tid >= 0 && mc->vcpus[i].vcpu < st->nr_v)
			st->tids[st->nr_tids++] = (struct of_tid){ mc->vcpus[i].host_tid, mc->vcpus[i].vcpu };
	qsort(st->tids, st->nr_tids, sizeof *st->tids, cmp_tid);

	struct vms_clock gc = mc->clock, hc = vms_model_machine(m, h)->clock;
	struct vms_clock *moved = move_host ? &hc : &gc;
	if (__builtin_add_overflow(moved->lin.out0, shift, &moved->lin.out0))
		return 0; /* (not searched: the middle stays) */
	uint32_t first = h < g ? h : g, second = h < g ? g : h;
	struct vms_source *srcs[2] = { src[first], src[second] };
	const struct vms_clock *clocks[2] = { first == h ? &hc : &gc, second == h ? &hc : &gc };
	bool wanted[VMS_K_COUNT] = { false };
	wanted[VMS_K_KVM_ENTRY] = wanted[VMS_K_KVM_EXIT] = true;
	struct vms_source *hs = src[h];
	if (hs->ops->set_wanted)
		hs->ops->set_wanted(hs, wanted);
	struct vms_merge mg;
	int r = vms_merge_init(&mg, srcs, clocks, 2, err);
	if (r == 0) {
		const struct vms_event *ev;
		uint64_t t;
		while (!st->too_dense && !st->nomem && (r = vms_merge_next(&mg, &ev, &t)) > 0) {
			settle_before(st, t, false);
			if ((ev->machine == 0 ? first : second) == h)
				host_event(st, ev, t);
			else
				guest_event(st, ev, t);
		}
		vms_merge_free(&mg);
		if (r > 0)
			r = 0;
	}
	if (hs->ops->set_wanted)
		hs->ops->set_wanted(hs, NULL);
	for (int i = 0; i < 2; i++)
		if (srcs[i]->ops->rewind(srcs[i]) < 0 && r >= 0)
			r = vms_error_set(err, VMS_ERR_IO, "%s", srcs[i]->err.msg);
	if (r < 0)
		return r;
	if (st->nomem)
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	if (!st->too_dense)
		settle_before(st, 0, true);
	return 0;
}

int vms_offset_fit(struct vms_source *const *src, uint32_t nr_src, struct vms_model *m,
		   uint32_t *passes, struct vms_error *err)
{
	for (uint32_t x = 0; x < nr_src && x < vms_model_nr_machines(m); x++) {
		/* x, the machine whose clock was fitted to its parent: a guest to its host, or (the
		 * guest being the reference) a host to its guest */
		struct vms_machine *mc = vms_model_machine(m, x);
		struct vms_sync_info *si = &mc->sync;
		if (si->method != VMS_SYNC_HULL || !si->offset_only || !si->applied ||
		    !si->has_range || !mc->clock.linear || si->parent < 0 ||
		    (uint32_t)si->parent >= nr_src)
			continue;
		uint32_t p = (uint32_t)si->parent;
		bool move_host = mc->host != (int32_t)p;
		uint32_t g = move_host ? p : x, h = move_host ? x : p;
		if (vms_model_machine_c(m, g)->host != (int32_t)h || !vms_model_machine_c(m, g)->nr_vcpus)
			continue;
		/* a machine reached through x in the tree has its transform composed with x's as
		 * it is: moving x alone would leave it behind (not searched then; the middle
		 * stays) */
		bool parent_of_other = false;
		for (uint32_t j = 0; j < vms_model_nr_machines(m); j++)
			parent_of_other |= j != x && vms_model_machine_c(m, j)->sync.parent == (int32_t)x &&
					   vms_model_machine_c(m, j)->clock.linear;
		if (parent_of_other)
			continue;
		struct vms_linear *l = &mc->clock.lin;
		if (l->num == l->den && l->frac) {
			/* slope 1: the fraction rounded as vms_linear_apply rounds it (half up) */
			bool up = l->frac >= l->den - l->den / 2;
			long double delta = (up ? 1.0L : 0.0L) - (long double)l->frac / (long double)l->den;
			if (up && __builtin_add_overflow(l->out0, 1, &l->out0))
				continue;
			l->frac = 0;
			si->range_lo_ns = (double)((long double)si->range_lo_ns - delta);
			si->range_hi_ns = (double)((long double)si->range_hi_ns - delta);
			si->offset_ns = (double)vms_linear_offset(l);
		}
		/* the integer shifts of x's reference times that stay feasible */
		double lo_d = ceil(si->range_lo_ns), hi_d = floor(si->range_hi_ns);
		if (!(lo_d <= hi_d) || lo_d < -9e18 || hi_d > 9e18)
			continue;
		if (hi_d - lo_d > VMS_OFFSET_FIT_MAX_WIDTH) {
			si->offset_how = VMS_OFFSET_TOO_WIDE;
			continue;
		}
		int64_t lo = (int64_t)lo_d;
		uint64_t W = (uint64_t)((int64_t)hi_d - lo);
		/* the guest at the low end of its offsets to the host: x = the guest shifted by lo;
		 * x = the host shifted by hi (a shift s of the host is one of -s of the guest), so
		 * that offset k of the search is a shift of lo + k (guest) or hi - k (host) */
		int64_t hi = (int64_t)hi_d;
		struct of_state st = { 0 };
		int r = search(src, m, g, h, move_host, move_host ? hi : lo, W, err, &st);
		++*passes;
		if (r < 0) {
			state_free(&st);
			return r;
		}
		if (st.too_dense) {
			si->offset_how = VMS_OFFSET_TOO_DENSE;
			state_free(&st);
			continue;
		}
		uint64_t a, b, best;
		best_run(st.diff, W, &a, &b, &best);
		state_free(&st);
		if (best == 0)
			continue; /* no guest event inside at any offset: the middle stays */
		/* the middle of the run, (a + b) / 2: with an odd width, half a ns more, exact in
		 * the fraction when its unit (1 / den) halves (den is a power of two but for a
		 * slope of an integer ratio; else the lower of the two middle ns) */
		int64_t run_lo = move_host ? hi - (int64_t)b : lo + (int64_t)a;
		int64_t shift = run_lo + (int64_t)((b - a) / 2);
		struct vms_linear nl = *l;
		bool half = (b - a) % 2 == 1 && nl.den % 2 == 0;
		if (half && (nl.frac += nl.den / 2) >= nl.den) {
			nl.frac -= nl.den;
			if (__builtin_add_overflow(nl.out0, 1, &nl.out0))
				continue;
		}
		if (__builtin_add_overflow(nl.out0, shift, &nl.out0))
			continue;
		*l = nl;
		double moved = (double)shift + (half ? 0.5 : 0.0);
		double base = si->offset_ns;
		si->offset_how = VMS_OFFSET_SEARCHED;
		si->search_inside = best;
		si->search_lo_ns = base + (double)run_lo;
		si->search_hi_ns = base + (double)run_lo + (double)(b - a);
		si->offset_ns = (double)vms_linear_offset(l);
		si->range_lo_ns -= moved;
		si->range_hi_ns -= moved;
	}
	return 0;
}
