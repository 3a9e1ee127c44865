/* trace.dat: the mapped file, bounds-checked cursors, v7 sections and decompression.
 *
 * The file is mapped rather than read so that uncompressed CPU data is walked in place and
 * the page cache, not our heap, holds it: memory stays constant whatever the trace length. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracedat.h"

static int vfail(struct vms_error *err, const struct td_file *f, uint64_t off,
		 const char *fmt, va_list ap)
{
	char what[512];
	vsnprintf(what, sizeof what, fmt, ap);
	return vms_error_set(err, VMS_ERR_FORMAT, "%s: %s at byte offset %llu", f->path, what,
			     (unsigned long long)off);
}

int td_fail(const struct td_file *f, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vfail(f->err, f, off, fmt, ap);
	va_end(ap);
	return r;
}

int td_fail_to(struct vms_error *err, const struct td_file *f, uint64_t off, const char *fmt,
	       ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vfail(err, f, off, fmt, ap);
	va_end(ap);
	return r;
}

void td_dctx_free(struct td_dctx *dc)
{
	if (dc->zstd)
		ZSTD_freeDCtx(dc->zstd);
	dc->zstd = NULL;
	if (dc->zs_init)
		inflateEnd(&dc->zs);
	dc->zs_init = false;
}

int td_file_open(struct td_file *f, const char *path, struct vms_error *err)
{
	memset(f, 0, sizeof *f);
	f->path = path;
	f->err = err;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return vms_error_open(err, path, errno, 0);
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 1; /* not a regular file: not a trace.dat (a CTF directory, say) */
	}
	f->size = (uint64_t)st.st_size;
	if (f->size == 0) {
		close(fd);
		return 1;
	}
	void *m = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return errno == ENOMEM ? vms_error_open(err, path, ENOMEM, 0)
				       : vms_error_set(err, VMS_ERR_IO, "%s: cannot map: %s", path,
						       strerror(errno));
	madvise(m, f->size, MADV_SEQUENTIAL);
	f->base = m;
	return 0;
}

void td_file_close(struct td_file *f)
{
	if (f->base)
		munmap((void *)f->base, f->size);
	f->base = NULL;
	td_dctx_free(&f->dc);
}

/* The mapping keeps every page it has touched in our resident set, so a reader that walks a
 * multi-GB trace would look (to ru_maxrss, to a container's limit) as if it held the whole
 * file. Pages far enough behind a stream's cursor are dropped from the mapping: they stay in
 * the page cache, and touching them again (a rewind) faults them back in. Dropping a page
 * another stream or the prefetch thread still reads is harmless for the same reason. */
void td_file_release(const struct td_file *f, uint64_t *done, uint64_t upto)
{
	const uint64_t step = 2u << 20;
	if (*done == 0) {
		*done = upto;
		return;
	}
	if (upto < *done + step || upto > f->size)
		return;
	const uint64_t pg = 4096;
	uint64_t start = (*done + pg - 1) & ~(pg - 1), end = upto & ~(pg - 1);
	if (end > start)
		madvise((void *)(f->base + start), end - start, MADV_DONTNEED);
	*done = end;
}

uint64_t td_cur_off(const struct td_cur *c)
{
	return c->in_comp ? c->base_off : c->base_off + c->pos;
}

static int cur_short(struct td_cur *c, const char *what)
{
	if (c->in_comp)
		return td_fail(c->f, c->base_off, "%s runs past the end of its section (%llu bytes "
			       "into the decompressed section)", what, (unsigned long long)c->pos);
	return td_fail(c->f, c->base_off + c->pos, "%s runs past the end of its data", what);
}

int td_cur_bytes(struct td_cur *c, uint64_t n, const uint8_t **p, const char *what)
{
	if (n > c->len - c->pos)
		return cur_short(c, what);
	*p = c->buf + c->pos;
	c->pos += n;
	return 0;
}

int td_cur_u16(struct td_cur *c, uint16_t *v, const char *what)
{
	const uint8_t *p = NULL;
	int r = td_cur_bytes(c, 2, &p, what);
	if (r == 0)
		*v = td_rd16(c->f, p);
	return r;
}

int td_cur_u32(struct td_cur *c, uint32_t *v, const char *what)
{
	const uint8_t *p = NULL;
	int r = td_cur_bytes(c, 4, &p, what);
	if (r == 0)
		*v = td_rd32(c->f, p);
	return r;
}

int td_cur_u64(struct td_cur *c, uint64_t *v, const char *what)
{
	const uint8_t *p = NULL;
	int r = td_cur_bytes(c, 8, &p, what);
	if (r == 0)
		*v = td_rd64(c->f, p);
	return r;
}

int td_cur_str(struct td_cur *c, const char **s, const char *what)
{
	const uint8_t *start = c->buf + c->pos;
	const uint8_t *nul = memchr(start, '\0', c->len - c->pos);
	if (!nul)
		return cur_short(c, what);
	*s = (const char *)start;
	c->pos += (uint64_t)(nul - start) + 1;
	return 0;
}

int td_decompress_with(const struct td_file *f, struct td_dctx *dc, struct vms_error *err,
		       const uint8_t *src, uint32_t csize, uint8_t *dst, uint32_t usize,
		       uint64_t off)
{
	if (f->comp == TD_COMP_ZSTD) {
		if (!dc->zstd && !(dc->zstd = ZSTD_createDCtx()))
			return vms_error_set(err, VMS_ERR_NOMEM, "%s: out of memory", f->path);
		size_t r = ZSTD_decompressDCtx(dc->zstd, dst, usize, src, csize);
		if (ZSTD_isError(r))
			return td_fail_to(err, f, off, "zstd data damaged (%s)", ZSTD_getErrorName(r));
		if (r != usize)
			return td_fail_to(err, f, off, "zstd data gives %zu bytes, header says %u", r,
					  usize);
		return 0;
	}
	if (f->comp == TD_COMP_ZLIB) {
		/* trace-cmd writes zlib streams with compress2(); one z_stream is reused. */
		if (!dc->zs_init) {
			memset(&dc->zs, 0, sizeof dc->zs);
			if (inflateInit(&dc->zs) != Z_OK)
				return vms_error_set(err, VMS_ERR_NOMEM, "%s: out of memory", f->path);
			dc->zs_init = true;
		} else if (inflateReset(&dc->zs) != Z_OK) {
			return vms_error_set(err, VMS_ERR_INTERNAL, "%s: zlib reset failed", f->path);
		}
		dc->zs.next_in = (Bytef *)src;
		dc->zs.avail_in = csize;
		dc->zs.next_out = dst;
		dc->zs.avail_out = usize;
		int r = inflate(&dc->zs, Z_FINISH);
		if (r != Z_STREAM_END)
			return td_fail_to(err, f, off, "zlib data damaged (%s)",
					  r == Z_BUF_ERROR ? "gives more or fewer bytes than its header says"
					  : dc->zs.msg ? dc->zs.msg : "inflate failed");
		if (dc->zs.total_out != usize)
			return td_fail_to(err, f, off, "zlib data gives %lu bytes, header says %u",
					  (unsigned long)dc->zs.total_out, usize);
		return 0;
	}
	return td_fail_to(err, f, off, "compressed data in a file without compression");
}

int td_decompress(struct td_file *f, const uint8_t *src, uint32_t csize, uint8_t *dst,
		  uint32_t usize, uint64_t off)
{
	return td_decompress_with(f, &f->dc, f->err, src, csize, dst, usize, off);
}

int td_section(struct td_file *f, uint64_t off, int want_id, const char *what,
	       struct td_cur *c, uint8_t **owned, uint16_t *flags_out)
{
	*owned = NULL;
	if (off > f->size || f->size - off < 16)
		return td_fail(f, off, "%s section header lies past the end of the file (%llu bytes)",
			       what, (unsigned long long)f->size);
	const uint8_t *h = f->base + off;
	uint16_t id = td_rd16(f, h), flags = td_rd16(f, h + 2);
	uint64_t size = td_rd64(f, h + 8);
	if (want_id >= 0 && id != want_id)
		return td_fail(f, off, "%s section has id %u, expected %d", what, id, want_id);
	if (size > f->size - off - 16)
		return td_fail(f, off + 8, "%s section size %llu runs past the end of the file", what,
			       (unsigned long long)size);
	if (flags_out)
		*flags_out = flags;
	memset(c, 0, sizeof *c);
	c->f = f;
	if (!(flags & 1)) {
		c->buf = h + 16;
		c->len = size;
		c->base_off = off + 16;
		return 0;
	}
	if (f->comp == TD_COMP_NONE)
		return td_fail(f, off + 2, "%s section flagged compressed in an uncompressed file",
			       what);
	if (size < 8)
		return td_fail(f, off + 8, "compressed %s section too small (%llu bytes)", what,
			       (unsigned long long)size);
	uint32_t csize = td_rd32(f, h + 16), usize = td_rd32(f, h + 20);
	if (csize > size - 8)
		return td_fail(f, off + 16, "%s section compressed size %u exceeds the section",
			       what, csize);
	if (usize > TD_MAX_SECTION_USIZE || (uint64_t)usize > (uint64_t)csize * TD_MAX_RATIO + (1u << 20))
		return td_fail(f, off + 20, "%s section uncompressed size %u is implausible", what,
			       usize);
	/* every section decompressed while opening counts (also those freed after use): a
	 * chain of 64 options sections of 511 MiB each is as much work as keeping them */
	uint64_t budget = TD_META_MEM_BASE + TD_META_MEM_PER_BYTE * f->size;
	if (budget > TD_META_MEM_MAX)
		budget = TD_META_MEM_MAX;
	if (usize > budget - (f->meta_mem < budget ? f->meta_mem : budget))
		return td_fail(f, off + 20, "%s section uncompressed size %u exceeds what is left of "
			       "the %llu MiB bound for the metadata of a file of %llu bytes", what,
			       usize, (unsigned long long)(budget >> 20),
			       (unsigned long long)f->size);
	f->meta_mem += usize;
	uint8_t *buf = malloc(usize ? usize : 1);
	if (!buf)
		return vms_error_set(f->err, VMS_ERR_NOMEM, "%s: out of memory at byte offset %llu",
				     f->path, (unsigned long long)off);
	int r = td_decompress(f, h + 24, csize, buf, usize, off + 24);
	if (r < 0) {
		free(buf);
		return r;
	}
	*owned = buf;
	c->buf = buf;
	c->len = usize;
	c->base_off = off;
	c->in_comp = true;
	return 0;
}
