/* Kernel symbols (include/vmscope/ksyms.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmscope/ksyms.h"
#include "core/grow.h"

struct ksym {
	uint64_t addr;
	uint32_t name;             /* offset in the string pool */
};

struct vms_ksyms {
	struct ksym *s;
	uint32_t n, cap_s;
	char *pool;
	size_t used, cap_pool;
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

struct vms_ksyms *vms_ksyms_new(void)
{
	return calloc(1, sizeof(struct vms_ksyms));
}

/* Room for one more symbol and a name of n bytes; false when out of memory or when the pool
 * would pass what its 32-bit offsets hold (no kernel comes near). */
static bool grow(struct vms_ksyms *k, size_t n)
{
	if (k->n == k->cap_s) {
		struct ksym *s = vms_grow(k->s, &k->cap_s, sizeof *s, 1024);
		if (!s)
			return false;
		k->s = s;
	}
	if (n + 1 > (size_t)UINT32_MAX / 2 - k->used)
		return false;
	if (k->used + n + 1 > k->cap_pool) {
		size_t cap = k->cap_pool ? k->cap_pool : 1 << 16;
		while (cap < k->used + n + 1)
			cap *= 2;
		char *pool = realloc(k->pool, cap);
		if (!pool)
			return false;
		k->pool = pool;
		k->cap_pool = cap;
	}
	return true;
}

int vms_ksyms_add_line(struct vms_ksyms *k, const char *text, size_t e)
{
	/* ADDRESS TYPE NAME [MODULE] */
	size_t p = 0;
	uint64_t addr = 0;
	int digits = 0;
	for (; p < e && digits < 17; p++, digits++) {
		char ch = text[p];
		int v = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
			: ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
		if (v < 0)
			break;
		addr = addr << 4 | (uint64_t)v;
	}
	if (!(digits >= 1 && digits <= 16 && p + 3 < e && text[p] == ' ' && text[p + 2] == ' ' &&
	      strchr("tTwW", text[p + 1]) && text[p + 1]))
		return 0;
	size_t ns = p + 3, ne = ns;
	while (ne < e && text[ne] != ' ' && text[ne] != '\t' && text[ne] != '\0')
		ne++;
	if (ne == ns || !addr)
		return 0;
	if (!grow(k, ne - ns))
		return -1;
	memcpy(k->pool + k->used, text + ns, ne - ns);
	k->s[k->n].addr = addr;
	k->s[k->n].name = (uint32_t)k->used;
	k->n++;
	k->used += ne - ns;
	k->pool[k->used++] = '\0';
	return 0;
}

void vms_ksyms_done(struct vms_ksyms *k)
{
	if (k && k->n)
		qsort(k->s, k->n, sizeof *k->s, cmp_ksym);
}

struct vms_ksyms *vms_ksyms_parse(const char *text, size_t len)
{
	struct vms_ksyms *k = vms_ksyms_new();
	if (!k)
		return NULL;
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - text) : len;
		if (vms_ksyms_add_line(k, text + i, e - i) < 0) {
			vms_ksyms_free(k);
			return NULL;
		}
		i = e + 1;
	}
	vms_ksyms_done(k);
	return k;
}

struct vms_ksyms *vms_ksyms_load(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 1 << 20;
			char *nb = ncap > (size_t)1 << 31 ? NULL : realloc(buf, ncap);
			if (!nb) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
			cap = ncap;
		}
		size_t r = fread(buf + len, 1, cap - len, f);
		len += r;
		if (r == 0)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		errno = EIO;
		return NULL;
	}
	struct vms_ksyms *k = vms_ksyms_parse(buf, len);
	free(buf);
	if (!k)
		errno = ENOMEM;
	return k;
}

void vms_ksyms_free(struct vms_ksyms *k)
{
	if (!k)
		return;
	free(k->s);
	free(k->pool);
	free(k);
}

uint32_t vms_ksyms_count(const struct vms_ksyms *k)
{
	return k ? k->n : 0;
}

const char *vms_ksyms_lookup(const struct vms_ksyms *k, uint64_t addr, uint64_t *off)
{
	if (!k || !k->n || addr < k->s[0].addr)
		return NULL;
	uint32_t lo = 0, hi = k->n; /* the last symbol with s.addr <= addr */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (k->s[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	if (lo == k->n - 1 && addr - k->s[lo].addr > (1u << 20))
		return NULL;
	if (off)
		*off = addr - k->s[lo].addr;
	return k->pool + k->s[lo].name;
}

const char *vms_ksyms_format(const struct vms_ksyms *k, uint64_t addr, char *buf, size_t len)
{
	uint64_t off = 0;
	const char *n = vms_ksyms_lookup(k, addr, &off);
	if (n)
		snprintf(buf, len, "%s+0x%llx", n, (unsigned long long)off);
	else
		snprintf(buf, len, "0x%llx", (unsigned long long)addr);
	return buf;
}
