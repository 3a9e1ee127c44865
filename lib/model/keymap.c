/* Open addressing with linear probing: the maps hold threads (thousands at most), the load
 * factor stays under 1/2, and a lookup touches one or two cache lines. */
#include <stdlib.h>

#include "keymap.h"

static size_t slot_of(uint64_t key, size_t cap)
{
	/* splitmix64 finaliser: tids are small and dense, spread them over the table */
	key ^= key >> 30;
	key *= 0xbf58476d1ce4e5b9ull;
	key ^= key >> 27;
	key *= 0x94d049bb133111ebull;
	key ^= key >> 31;
	return (size_t)key & (cap - 1);
}

void vms_keymap_init(struct vms_keymap *m)
{
	m->keys = NULL;
	m->vals = NULL;
	m->cap = 0;
	m->len = 0;
}

void vms_keymap_free(struct vms_keymap *m)
{
	free(m->keys);
	free(m->vals);
	vms_keymap_init(m);
}

uint64_t *vms_keymap_get(const struct vms_keymap *m, uint64_t key)
{
	if (m->cap == 0 || key == VMS_KEYMAP_EMPTY)
		return NULL;
	for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key)
			return &m->vals[i];
		if (m->keys[i] == VMS_KEYMAP_EMPTY)
			return NULL;
	}
}

static int grow(struct vms_keymap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64;
	uint64_t *nk = malloc(ncap * sizeof *nk);
	uint64_t *nv = malloc(ncap * sizeof *nv);
	if (!nk || !nv) {
		free(nk);
		free(nv);
		return -1;
	}
	for (size_t i = 0; i < ncap; i++)
		nk[i] = VMS_KEYMAP_EMPTY;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->keys[i] == VMS_KEYMAP_EMPTY)
			continue;
		size_t j = slot_of(m->keys[i], ncap);
		while (nk[j] != VMS_KEYMAP_EMPTY)
			j = (j + 1) & (ncap - 1);
		nk[j] = m->keys[i];
		nv[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = nk;
	m->vals = nv;
	m->cap = ncap;
	return 0;
}

uint64_t *vms_keymap_put(struct vms_keymap *m, uint64_t key, uint64_t init, bool *inserted)
{
	if (key == VMS_KEYMAP_EMPTY)
		return NULL;
	uint64_t *v = vms_keymap_get(m, key);
	if (inserted)
		*inserted = v == NULL;
	if (v)
		return v;
	if ((m->len + 1) * 2 > m->cap && grow(m) != 0)
		return NULL;
	size_t i = slot_of(key, m->cap);
	while (m->keys[i] != VMS_KEYMAP_EMPTY)
		i = (i + 1) & (m->cap - 1);
	m->keys[i] = key;
	m->vals[i] = init;
	m->len++;
	return &m->vals[i];
}

static int cmp_key(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t *vms_keymap_sorted(const struct vms_keymap *m, uint64_t *n)
{
	*n = 0;
	uint64_t *pairs = malloc((m->len ? m->len : 1) * 16);
	if (!pairs)
		return NULL;
	for (size_t i = 0; i < m->cap && *n < m->len; i++)
		if (m->keys[i] != VMS_KEYMAP_EMPTY) {
			pairs[2 * *n] = m->keys[i];
			pairs[2 * *n + 1] = m->vals[i];
			(*n)++;
		}
	if (*n)   /* the key is the first u64 of each pair */
		qsort(pairs, *n, 16, cmp_key);
	return pairs;
}
