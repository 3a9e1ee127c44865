/* vmscope: clocks synchronized from the events themselves (docs/vm-analysis.md §8.2).
 *
 *   events --(matcher: cause on one machine, effect on another, by key)--> message pairs
 *          --(one hull per pair of machines)--> the lines that separate the two directions
 *          --(spanning tree from the reference)--> one exact linear transform per machine
 *
 * Matching keys: TCP (seq, ack_seq, flags) from VMS_K_NET_SEND to VMS_K_NET_RECV, and vmsync
 * (vm_uid, cnt) from VMS_K_VMSYNC_GH_GUEST to VMS_K_VMSYNC_GH_HOST and from
 * VMS_K_VMSYNC_HG_HOST to VMS_K_VMSYNC_HG_GUEST. The first event for a key wins (a later one
 * with the same key, a retransmission, waits for its own partner); a pair whose two events are
 * on the same machine (loopback) is consumed and ignored. Memory is bounded: at most
 * `cap` unmatched events are remembered per direction (causes, effects); beyond that the
 * oldest is forgotten and counted as expired.
 *
 * The hull (Jabbarifar, Dagenais, Shameli-Sendi, "Streaming mode incremental clock
 * synchronization"; Trace Compass's SyncAlgorithmFullyIncremental): for machines a < b, a
 * message a -> b is the point (x = send time on a, y = receive time on b), above the line
 * y = f(x) that maps a's clock to b's; a message b -> a is (x = receive time on a, y = send
 * time on b), below it. Only the lower hull of the points above and the upper hull of the
 * points below can bound a line, so only they are kept (inserted in any order). The steepest
 * and the flattest separating lines are found exactly (128-bit cross products), and the
 * transform is their bisector y = alpha x + beta with alpha = (alpha_max + alpha_min) / 2 and
 * beta = (beta_min + beta_max) / 2, in the orientation of the spanning tree: x is the parent's
 * (the machine closer to the reference) time, y the child's, and the child's timestamps map
 * to the parent's with the inverse, t_parent = (t - beta) / alpha. */
#ifndef VMSCOPE_SYNC_H
#define VMSCOPE_SYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "vmscope/clock.h"
#include "vmscope/event.h"
#include "vmscope/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- matching ---- */

/* A message: sent at t_send (the sender's own ns), received at t_recv (the receiver's). */
struct vms_sync_pair {
	uint32_t from, to;       /* machine (source) indexes */
	uint64_t t_send, t_recv;
};

typedef void (*vms_sync_pair_fn)(void *ctx, const struct vms_sync_pair *pair);

struct vms_match_stats {
	uint64_t causes, effects;   /* events seen */
	uint64_t matched;           /* pairs across machines */
	uint64_t same_machine;      /* pairs within one machine (ignored) */
	uint64_t duplicates;        /* a key already waiting: the later event ignored */
	uint64_t expired;           /* unmatched events forgotten to bound memory */
};

#define VMS_MATCH_DEFAULT_CAP (1u << 17) /* unmatched events remembered per direction */

struct vms_matcher;
struct vms_matcher *vms_matcher_new(uint32_t cap);
void vms_matcher_free(struct vms_matcher *m);
/* Does this kind take part in matching? */
bool vms_match_kind(enum vms_kind kind);
/* One event (kind, fields as in event.h) of machine `machine` at its own time t_ns. Returns 1
 * and fills *pair when it completes a pair across machines, else 0. */
int vms_matcher_event(struct vms_matcher *m, uint32_t machine, enum vms_kind kind,
		      const uint64_t f[3], uint64_t t_ns, struct vms_sync_pair *pair);
const struct vms_match_stats *vms_matcher_stats(const struct vms_matcher *m);

/* ---- the hull of one pair of machines ---- */

struct vms_hull_pt {
	int64_t x, y;            /* relative to the hull's origin */
};

#define VMS_HULL_MAX_POINTS 65536 /* per hull: bounds memory and the cost of an insertion */

struct vms_hull {
	bool has_origin;
	uint64_t x0, y0;         /* the first point: coordinates are kept relative to it */
	struct vms_hull_pt *lo;  /* lower hull of the points above the line (a -> b), by x */
	uint32_t nlo, caplo;
	struct vms_hull_pt *up;  /* upper hull of the points below the line (b -> a), by x;
	                            stored with y negated (then it is a lower hull too) */
	uint32_t nup, capup;
	uint64_t above, below;   /* points seen in each direction */
	uint64_t out_of_range;   /* points 2^62 ns or more from the origin: not used */
	uint64_t dropped;        /* points that would have made a hull larger than
	                            VMS_HULL_MAX_POINTS (real hulls have tens): not used */
	bool nomem;
};

void vms_hull_init(struct vms_hull *h);
void vms_hull_free(struct vms_hull *h);
/* A point; above = the message went from the x machine to the y machine. */
void vms_hull_add(struct vms_hull *h, uint64_t x, uint64_t y, bool above);

/* The result in one orientation: y = alpha * x + beta, x the parent's ns, y the child's.
 * alpha/beta are in coordinates relative to (x0, y0): beta is y - y0 at x = x0. */
struct vms_hull_fit {
	enum vms_sync_quality quality;
	uint64_t x0, y0;
	long double alpha, beta;
	long double alpha_max, alpha_min;  /* ACCURATE and FAIL; accuracy = max - min */
	long double beta_min, beta_max;    /* intercepts of the steepest and flattest lines */
	long double accuracy;
	/* the offsets that keep the line at slope alpha between the two hulls:
	 * beta_lo <= beta <= beta_hi (the search range of --refine) */
	bool has_range;
	long double beta_lo, beta_hi;
	uint64_t pairs;
	uint32_t hull_above, hull_below;   /* points kept on each hull */
	/* --clock-model auto (vms_sync_rules): */
	bool offset_only;   /* the slope was known (a guest and its own host): alpha is that
	                       slope, [beta_lo, beta_hi] the offsets every message allows */
	bool refused;       /* a hull whose slope drifts more than the bound: not used */
};
/* swap = false: x is the hull's x machine (a); true: x is b. */
void vms_hull_solve(const struct vms_hull *h, bool swap, struct vms_hull_fit *fit);
/* The fit at a known slope alpha (y per x in the orientation `swap` asks for): only the
 * offset is fitted. The messages bound it to [beta_lo, beta_hi] = [max over the messages
 * y -> x of (y - alpha x), min over the messages x -> y of (y - alpha x)] (the hulls'
 * vertices hold both extremes); beta is the middle. ACCURATE when both directions bound it,
 * INCOMPLETE with one, FAIL when the bounds cross (the messages contradict that slope). */
void vms_hull_solve_slope(const struct vms_hull *h, bool swap, long double alpha,
			  struct vms_hull_fit *fit);
/* The child -> parent transform of a fit of quality ACCURATE or APPROXIMATE (else -1):
 * t_parent = x0 + (t - y0 - beta) / alpha, exact in application (vms_linear). */
int vms_hull_fit_linear(const struct vms_hull_fit *fit, struct vms_linear *l);

/* ---- several machines ---- */

/* The hulls of every pair of n machines and the matcher that feeds them. */
struct vms_sync_set;
struct vms_sync_set *vms_sync_set_new(uint32_t n, uint32_t cap);
void vms_sync_set_free(struct vms_sync_set *s);
/* Feed an event (own ns). Returns 1 when it completed a pair (then *pair is set). */
int vms_sync_set_event(struct vms_sync_set *s, uint32_t machine, enum vms_kind kind,
		       const uint64_t f[3], uint64_t t_ns, struct vms_sync_pair *pair);
void vms_sync_set_pair(struct vms_sync_set *s, const struct vms_sync_pair *p);
const struct vms_hull *vms_sync_set_hull(const struct vms_sync_set *s, uint32_t a, uint32_t b);
const struct vms_match_stats *vms_sync_set_stats(const struct vms_sync_set *s);
uint32_t vms_sync_set_size(const struct vms_sync_set *s);

/* How an edge's fit is found (docs/vm-analysis.md §8, "What the clocks may do").
 * VMS_CLOCK_MODEL_AUTO: between a guest and the host that runs it (guest_host[g] == h) the
 * slope is known, guest ns per host ns = guest_slope[g], and only the offset is fitted
 * (vms_hull_solve_slope); between any other two machines the hull, refused when its slope
 * is more than VMS_SYNC_MAX_DRIFT_PPM from 1. VMS_CLOCK_MODEL_LINEAR: the unbounded hull for
 * every edge, as Trace Compass computes it. */
enum vms_clock_model { VMS_CLOCK_MODEL_AUTO = 0, VMS_CLOCK_MODEL_LINEAR };
#define VMS_SYNC_MAX_DRIFT_PPM 1000 /* NTP-disciplined crystals drift far less (<= 500 ppm
                                       is NTP's own limit on the frequency it corrects) */
struct vms_sync_rules {
	enum vms_clock_model model;
	const int32_t *guest_host;        /* per machine: its host's index, or -1 */
	const long double *guest_slope;   /* per machine: its ns per its host's ns */
};
const char *vms_clock_model_name(enum vms_clock_model model);
/* "auto" or "linear" -> 0 and *model; else -1 */
int vms_clock_model_parse(const char *s, enum vms_clock_model *model);
/* One edge's fit in the tree's orientation (x = parent p, y = child c) under the rules
 * (NULL: linear). Used by the tree and by the report of machines it does not reach. */
void vms_sync_edge_fit(const struct vms_sync_set *s, const struct vms_sync_rules *rules,
		       uint32_t p, uint32_t c, struct vms_hull_fit *fit);
/* Can an edge of this fit be used (ACCURATE or APPROXIMATE, not refused)? */
bool vms_sync_edge_usable(const struct vms_hull_fit *fit);

/* The spanning tree from `reference` over the edges of quality ACCURATE (preferred) and
 * APPROXIMATE; machines with fixed[i] (the reference, TIME_SHIFT guests) are not reached
 * through. For each machine i: parent[i] (-1 for the reference and unreached machines),
 * depth[i], the edge's fit, and lin[i] (machine ns -> reference ns, the composition along
 * the path). Machines not reached keep the best fit they have with a reached machine (for
 * the report) and has_lin[i] = false. */
struct vms_sync_tree {
	uint32_t n;
	int32_t *parent;
	uint32_t *depth;
	bool *has_lin;
	bool *has_fit;
	struct vms_linear *lin;
	struct vms_hull_fit *fit;
};
int vms_sync_tree_build(const struct vms_sync_set *s, uint32_t reference, const bool *fixed,
			struct vms_sync_tree *t);
/* The same under the rules of a clock model (NULL: linear, as vms_sync_tree_build). */
int vms_sync_tree_build_rules(const struct vms_sync_set *s, uint32_t reference, const bool *fixed,
			      const struct vms_sync_rules *rules, struct vms_sync_tree *t);
void vms_sync_tree_free(struct vms_sync_tree *t);

#ifdef __cplusplus
}
#endif
#endif
