/* A tiny xentrace writer for hand-made test files (the layout of xen/include/public/trace.h:
 * u32 header event:28 | extra:3 | tsc:1, optional u64 TSC, extra u32 words; per-CPU blocks
 * opened by a CPU-change record without TSC: cpu, size of the block's records). */
#ifndef XT_WRITER_H
#define XT_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct xtw {
	uint8_t buf[1 << 16];
	size_t len;
	size_t blk;      /* offset of the open block's header */
};

static inline void xtw_put32(struct xtw *w, uint32_t v)
{
	memcpy(w->buf + w->len, &v, 4);
	w->len += 4;
}

/* close the open block: fill in its size */
static inline void xtw_end_block(struct xtw *w)
{
	if (!w->blk && w->len == 0)
		return;
	uint32_t size = (uint32_t)(w->len - w->blk - 12);
	memcpy(w->buf + w->blk + 8, &size, 4);
}

static inline void xtw_block(struct xtw *w, uint32_t cpu)
{
	if (w->len)
		xtw_end_block(w);
	w->blk = w->len;
	xtw_put32(w, 0x0001f003u | 2u << 28);
	xtw_put32(w, cpu);
	xtw_put32(w, 0);
}

/* a record; tsc == 0 writes none */
static inline void xtw_rec(struct xtw *w, uint32_t event, uint64_t tsc, uint32_t n,
			   const uint32_t *words)
{
	xtw_put32(w, event | n << 28 | (tsc ? 1u << 31 : 0));
	if (tsc) {
		xtw_put32(w, (uint32_t)tsc);
		xtw_put32(w, (uint32_t)(tsc >> 32));
	}
	for (uint32_t i = 0; i < n; i++)
		xtw_put32(w, words[i]);
}

/* runstate change of d<dom>v<vcpu> old -> new */
static inline void xtw_runstate(struct xtw *w, uint64_t tsc, uint32_t dom, uint32_t vcpu,
				uint32_t old, uint32_t new)
{
	uint32_t dv = dom << 16 | vcpu;
	xtw_rec(w, 0x00021001u | old << 8 | new << 4, tsc, 1, &dv);
}

static inline void xtw_vmexit64(struct xtw *w, uint64_t tsc, uint32_t reason, uint64_t rip)
{
	uint32_t d[3] = { reason, (uint32_t)rip, (uint32_t)(rip >> 32) };
	xtw_rec(w, 0x00081102u, tsc, 3, d);
}

static inline void xtw_vmentry(struct xtw *w, uint64_t tsc)
{
	xtw_rec(w, 0x00081001u, tsc, 0, NULL);
}

static inline void xtw_lost(struct xtw *w, uint64_t tsc, uint32_t count, uint32_t dom,
			    uint32_t vcpu, uint64_t first_tsc)
{
	/* Xen's struct: int lost, u16 did, u16 vid, u64 first_tsc */
	uint32_t d[4] = { count, vcpu << 16 | dom, (uint32_t)first_tsc, (uint32_t)(first_tsc >> 32) };
	xtw_rec(w, 0x0001f001u, tsc, 4, d);
}

static inline int xtw_save(struct xtw *w, const char *path, size_t len)
{
	xtw_end_block(w);
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t n = fwrite(w->buf, 1, len ? len : w->len, f);
	fclose(f);
	return n == (len ? len : w->len) ? 0 : -1;
}

#endif
