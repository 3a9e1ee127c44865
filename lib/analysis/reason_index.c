/* Rows per (table, isa, reason), found in O(1). The exit tables of each vCPU and guest
 * (exits.c), each guest thread's reasons (overlays.c) and the exit storms (findings.c) add a
 * row per distinct reason; the reason is a u32 from the trace, so a scan of the rows at each
 * exit made a trace of N distinct reasons cost N^2 (issue 7.5). */
#include "analysis_internal.h"

/* Injective while table < 2^30 and isa < 4 (the state machine's isa is 0, 1 or 2); never
 * VMS_KEYMAP_EMPTY. */
static bool key_of(uint32_t table, uint32_t isa, uint32_t reason, uint64_t *key)
{
	if (table >= 1u << 30 || isa > 3)
		return false;
	*key = (uint64_t)table << 34 | (uint64_t)isa << 32 | reason;
	return true;
}

uint32_t an_reason_find(const struct vms_keymap *x, uint32_t table, uint32_t isa,
			uint32_t reason)
{
	uint64_t key, *v;
	if (!key_of(table, isa, reason, &key))
		return AN_REASON_UNINDEXED;
	return (v = vms_keymap_get(x, key)) ? (uint32_t)*v : UINT32_MAX;
}

bool an_reason_add(struct vms_keymap *x, uint32_t table, uint32_t isa, uint32_t reason,
		   uint32_t row)
{
	uint64_t key;
	return key_of(table, isa, reason, &key) && vms_keymap_put(x, key, row, NULL);
}
