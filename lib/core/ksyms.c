/* Kernel symbols (include/vmscope/ksyms.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmscope/ksyms.h"

struct ksym {
	uint64_t addr;
	uint32_t name;             /* offset in the string pool */
};

struct vms_ksyms {
	struct ksym *s;
	uint32_t n;
	char *pool;
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

struct vms_ksyms *vms_ksyms_parse(const char *text, size_t len)
{
	struct vms_ksyms *k = calloc(1, sizeof *k);
	if (!k)
		return NULL;
	/* at most one symbol per line, and the names fit in the text itself */
	size_t lines = 1;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	if (lines > UINT32_MAX / 2 || len > UINT32_MAX / 2)
		lines = 0; /* larger than any kernel: refuse rather than overflow */
	k->s = malloc((lines ? lines : 1) * sizeof *k->s);
	k->pool = malloc(len + 1);
	if (!k->s || !k->pool) {
		vms_ksyms_free(k);
		return NULL;
	}
	size_t used = 0;
	for (size_t i = 0; lines && i < len;) {
		size_t e = i;
		while (e < len && text[e] != '\n')
			e++;
		/* ADDRESS TYPE NAME [MODULE] */
		size_t p = i;
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
		if (digits >= 1 && digits <= 16 && p + 3 < e && text[p] == ' ' && text[p + 2] == ' ' &&
		    strchr("tTwW", text[p + 1]) && text[p + 1]) {
			size_t ns = p + 3, ne = ns;
			while (ne < e && text[ne] != ' ' && text[ne] != '\t' && text[ne] != '\0')
				ne++;
			if (ne > ns && addr) {
				memcpy(k->pool + used, text + ns, ne - ns);
				k->s[k->n].addr = addr;
				k->s[k->n].name = (uint32_t)used;
				k->n++;
				used += ne - ns;
				k->pool[used++] = '\0';
			}
		}
		i = e + 1;
	}
	qsort(k->s, k->n, sizeof *k->s, cmp_ksym);
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
