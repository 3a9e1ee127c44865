/* vmscope internal: an open-addressing hash map from a 64-bit key to a 64-bit value.
 *
 * The analyses look a host thread up on every event (which vCPU does it run?), so the lookup
 * must be O(1) without allocation; the map grows only when a new key is inserted (threads,
 * bounded by the model). Keys are arbitrary except VMS_KEYMAP_EMPTY. */
#ifndef VMS_KEYMAP_H
#define VMS_KEYMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VMS_KEYMAP_EMPTY UINT64_MAX

struct vms_keymap {
	uint64_t *keys;
	uint64_t *vals;
	size_t cap;   /* power of two, or 0 */
	size_t len;
};

void vms_keymap_init(struct vms_keymap *m);
void vms_keymap_free(struct vms_keymap *m);
/* Pointer to the value of key, or NULL. */
uint64_t *vms_keymap_get(const struct vms_keymap *m, uint64_t key);
/* Pointer to the value of key, inserted with `init` when absent; NULL on allocation failure.
 * *inserted (may be NULL) says whether it was new. The pointer is valid until the next put. */
uint64_t *vms_keymap_put(struct vms_keymap *m, uint64_t key, uint64_t init, bool *inserted);

/* Every (key, value) pair, in key order (so that two equal maps give the same bytes whatever
 * order they were filled in): 2 x *n u64, malloc'd; NULL when out of memory. */
uint64_t *vms_keymap_sorted(const struct vms_keymap *m, uint64_t *n);

/* The slot of key in a direct-mapped cache of 2^bits entries (Fibonacci hashing: the key's
 * high bits after the multiply), for the small caches kept in front of a map on hot paths. */
static inline uint32_t vms_keymap_slot(uint64_t key, unsigned bits)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

/* The key of (machine, tid) pairs used by the model and the analyses. */
static inline uint64_t vms_keymap_mt(uint32_t machine, int32_t tid)
{
	return (uint64_t)machine << 32 | (uint32_t)tid;
}

#endif
