/* vmscope internal: the session's checkpoints (checkpoints.c), what a windowed run restores
 * instead of replaying the traces from their start (issue 21: a window costs the window).
 *
 * A checkpoint is taken after event n of an unwindowed analysis pass (session.c's
 * merged_pass): the merge's marks (every stream's position, lib/core/merge.h), the pass's own
 * counts (n, the first event's time, the events per type, the time inversions) and the
 * analysis's state (vms_analysis_checkpoint: the state machine and a shadow window gate).
 * A windowed run whose window starts after a checkpoint's last event takes the last such
 * checkpoint and goes on from there: the analysis sees what it would have seen. */
#ifndef VMS_SESSION_CHECKPOINTS_H
#define VMS_SESSION_CHECKPOINTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/merge.h"
#include "vmscope/analysis.h"
#include "vmscope/error.h"

struct ck_set;

/* Recording: every `every` events (> 0), over nr_src sources whose type counts have
 * nr_types[i] entries. NULL when out of memory. */
struct ck_set *ck_recorder(uint64_t every, uint32_t nr_src, const uint32_t *nr_types);
/* Take a checkpoint now (after event n, at reference time t, the pass's first event at
 * `first`). 0, or <0 when it cannot be taken (a source that cannot tell its position, out
 * of memory): the recording then stops, the run goes on. */
int ck_take(struct ck_set *c, struct vms_merge *m, struct vms_analysis *an, uint64_t t,
	    uint64_t n, uint64_t first, uint64_t *const *type_counts);
/* The recorded bytes (the index's section), NULL when none could be taken. */
const void *ck_bytes(struct ck_set *c, size_t *len);

/* Using: the bytes of a recording (untrusted: every length checked here, every value at
 * restore) for nr_src sources of these type counts and nr_streams streams in all. NULL with
 * err set when they are not (another layout, cut). buf must outlive the set. */
struct ck_set *ck_load(const void *buf, size_t len, uint32_t nr_src, const uint32_t *nr_types,
		       uint32_t nr_streams, struct vms_error *err);
/* The first event's time of the recorded pass (every checkpoint has it). */
bool ck_first(const struct ck_set *c, uint64_t *first);

/* One checkpoint, as a restore needs it. */
struct ck_view {
	uint64_t t, n, first, backwards;
	struct vms_merge_mark *marks;   /* malloc'd: ck_view_free */
	uint32_t nr_marks;
	const void *an;                 /* vms_analysis_restore's bytes */
	size_t an_len;
	const uint8_t *counts;          /* per source: u32 entries, (u32 type, u64 count)... */
	size_t counts_len;
};
/* The last checkpoint whose last event is before lo: 1 (v set), 0 none, <0 err set. */
int ck_pick(const struct ck_set *c, uint64_t lo, struct ck_view *v, struct vms_error *err);
/* Its type counts into type_counts (zeroed before); 0, or <0 with err set. */
int ck_view_counts(const struct ck_set *c, const struct ck_view *v, uint64_t *const *type_counts,
		   struct vms_error *err);
void ck_view_free(struct ck_view *v);

void ck_free(struct ck_set *c);

#endif
