/* vmscope internal: an array grown by doubling, its size checked.
 *
 * Why one helper: the readers, the model and the analyses all keep arrays that grow with
 * what a trace holds (threads, exit reasons, rows). Each had its own copy of the doubling,
 * and a doubled uint32_t capacity, or capacity x element size, could wrap on hostile input
 * and make a small block taken for a large one. Here the wrap is refused as out of memory. */
#ifndef VMS_CORE_GROW_H
#define VMS_CORE_GROW_H

#include <stdint.h>
#include <stdlib.h>

/* arr (NULL or *cap elements of elem bytes) grown to twice *cap elements, or to `first`
 * when *cap is 0. Returns the new array and sets *cap; NULL when out of memory or when the
 * size cannot be represented: then arr and *cap are unchanged and arr is still the caller's
 * to use or free. */
static inline void *vms_grow(void *arr, uint32_t *cap, size_t elem, uint32_t first)
{
	if (*cap > UINT32_MAX / 2)
		return NULL;
	uint32_t n = *cap ? *cap * 2 : first;
	if (!elem || n > SIZE_MAX / elem)
		return NULL;
	void *p = realloc(arr, (size_t)n * elem);
	if (p)
		*cap = n;
	return p;
}

#endif
