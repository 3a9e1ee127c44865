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
			return vms_error_nomem_at(err, f->path, off);
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
				return vms_error_nomem_at(err, f->path, off);
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

/* The header of the v7 section at `off`, checked: its flags and size; when compressed, the
 * compressed and uncompressed sizes, counted against the metadata budget (every section
 * decompressed while opening counts, also those freed after use or streamed: a chain of 64
 * options sections of 511 MiB each is as much work as keeping them). */
struct sechead {
	const uint8_t *h;        /* in the mapping */
	uint16_t flags;
	uint64_t size;
	uint32_t csize, usize;   /* when compressed */
};

static int section_header(struct td_file *f, uint64_t off, int want_id, const char *what,
			  struct sechead *sh)
{
	uint16_t *flags = &sh->flags;
	uint64_t *size = &sh->size;
	uint32_t *csize = &sh->csize, *usize = &sh->usize;
	*csize = *usize = 0;
	if (off > f->size || f->size - off < 16)
		return td_fail(f, off, "%s section header lies past the end of the file (%llu bytes)",
			       what, (unsigned long long)f->size);
	const uint8_t *h = sh->h = f->base + off;
	uint16_t id = td_rd16(f, h);
	*flags = td_rd16(f, h + 2);
	*size = td_rd64(f, h + 8);
	if (want_id >= 0 && id != want_id)
		return td_fail(f, off, "%s section has id %u, expected %d", what, id, want_id);
	if (*size > f->size - off - 16)
		return td_fail(f, off + 8, "%s section size %llu runs past the end of the file", what,
			       (unsigned long long)*size);
	if (!(*flags & 1))
		return 0;
	if (f->comp == TD_COMP_NONE)
		return td_fail(f, off + 2, "%s section flagged compressed in an uncompressed file",
			       what);
	if (*size < 8)
		return td_fail(f, off + 8, "compressed %s section too small (%llu bytes)", what,
			       (unsigned long long)*size);
	*csize = td_rd32(f, h + 16);
	*usize = td_rd32(f, h + 20);
	if (*csize > *size - 8)
		return td_fail(f, off + 16, "%s section compressed size %u exceeds the section",
			       what, *csize);
	if (*usize > TD_MAX_SECTION_USIZE ||
	    (uint64_t)*usize > (uint64_t)*csize * TD_MAX_RATIO + (1u << 20))
		return td_fail(f, off + 20, "%s section uncompressed size %u is implausible", what,
			       *usize);
	uint64_t budget = TD_META_MEM_BASE + TD_META_MEM_PER_BYTE * f->size;
	if (budget > TD_META_MEM_MAX)
		budget = TD_META_MEM_MAX;
	if (*usize > budget - (f->meta_mem < budget ? f->meta_mem : budget))
		return td_fail(f, off + 20, "%s section uncompressed size %u exceeds what is left of "
			       "the %llu MiB bound for the metadata of a file of %llu bytes", what,
			       *usize, (unsigned long long)(budget >> 20),
			       (unsigned long long)f->size);
	f->meta_mem += *usize;
	return 0;
}

int td_section(struct td_file *f, uint64_t off, int want_id, const char *what,
	       struct td_cur *c, uint8_t **owned, uint16_t *flags_out)
{
	*owned = NULL;
	struct sechead sh;
	int r = section_header(f, off, want_id, what, &sh);
	if (r < 0)
		return r;
	const uint8_t *h = sh.h;
	uint16_t flags = sh.flags;
	uint64_t size = sh.size;
	uint32_t csize = sh.csize, usize = sh.usize;
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
	uint8_t *buf = malloc(usize ? usize : 1);
	if (!buf)
		return vms_error_nomem_at(f->err, f->path, off);
	r = td_decompress(f, h + 24, csize, buf, usize, off + 24);
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

/* ---- a section's text line by line, through a window ---- */

struct liner {
	const struct td_file *f;
	const char *what;
	uint64_t off;            /* of the section, for messages */
	int size_bytes;
	uint8_t hdr[8];
	int hdr_have;
	uint64_t avail;          /* bytes of the section after the size field */
	uint64_t left;           /* text bytes still to come */
	uint8_t line[TD_LINE_MAX];
	size_t line_len;
	bool overlong;           /* the line being assembled is longer than TD_LINE_MAX: skipped */
	td_line_fn fn;
	void *ctx;
};

static int liner_line(struct liner *L, const uint8_t *p, size_t n)
{
	if (L->overlong) {
		L->overlong = false;
		L->line_len = 0;
		return 0;
	}
	if (L->line_len) {
		if (n > sizeof L->line - L->line_len) {
			L->line_len = 0;
			return 0;
		}
		memcpy(L->line + L->line_len, p, n);
		n += L->line_len;
		L->line_len = 0;
		p = L->line;
	}
	return n <= TD_LINE_MAX ? L->fn(L->ctx, p, n) : 0;
}

/* The next n bytes of the section (after the size field when it is complete). */
static int liner_feed(struct liner *L, const uint8_t *p, size_t n)
{
	while (n && L->hdr_have < L->size_bytes) {
		L->hdr[L->hdr_have++] = *p++;
		n--;
		L->avail--;
		if (L->hdr_have == L->size_bytes) {
			L->left = L->size_bytes == 4 ? td_rd32(L->f, L->hdr) : td_rd64(L->f, L->hdr);
			if (L->left > L->avail)
				return td_fail_to(L->f->err, L->f, L->off, "%s size %llu runs past its "
						  "section (%llu bytes left)", L->what,
						  (unsigned long long)L->left,
						  (unsigned long long)L->avail);
		}
	}
	if (n > L->left)
		n = (size_t)L->left;
	L->left -= n;
	while (n) {
		const uint8_t *nl = memchr(p, '\n', n);
		if (!nl) {
			if (n > sizeof L->line - L->line_len)
				L->overlong = true;
			else if (!L->overlong)
				memcpy(L->line + L->line_len, p, n), L->line_len += n;
			break;
		}
		int r = liner_line(L, p, (size_t)(nl - p));
		if (r < 0)
			return r;
		n -= (size_t)(nl - p) + 1;
		p = nl + 1;
	}
	/* the text's last line needs no '\n' */
	if (L->hdr_have == L->size_bytes && L->left == 0 && (L->line_len || L->overlong)) {
		int r = liner_line(L, p, 0);
		if (r < 0)
			return r;
	}
	return 0;
}

int td_text_lines(const uint8_t *p, uint64_t n, td_line_fn fn, void *ctx)
{
	for (uint64_t i = 0; i < n;) {
		const uint8_t *nl = memchr(p + i, '\n', n - i);
		uint64_t e = nl ? (uint64_t)(nl - p) : n;
		/* as when streamed: a line longer than the window's line is skipped */
		int r = e - i <= TD_LINE_MAX ? fn(ctx, p + i, e - i) : 0;
		if (r < 0)
			return r;
		i = e + 1;
	}
	return 0;
}

/* Decompress [src, src + csize) through the liner, TD_LINE_WINDOW bytes at a time. */
static int stream_zstd(struct td_file *f, struct liner *L, const uint8_t *src, uint32_t csize,
		       uint32_t usize, uint8_t *win, uint64_t off)
{
	struct td_dctx *dc = &f->dc;
	if (!dc->zstd && !(dc->zstd = ZSTD_createDCtx()))
		return vms_error_nomem_at(f->err, f->path, off);
	ZSTD_DCtx_reset(dc->zstd, ZSTD_reset_session_only);
	ZSTD_inBuffer in = {src, csize, 0};
	uint64_t total = 0;
	for (;;) {
		ZSTD_outBuffer out = {win, TD_LINE_WINDOW, 0};
		size_t r = ZSTD_decompressStream(dc->zstd, &out, &in);
		if (ZSTD_isError(r))
			return td_fail(f, off, "zstd data damaged (%s)", ZSTD_getErrorName(r));
		total += out.pos;
		if (total > usize)
			return td_fail(f, off, "zstd data gives more than the %u bytes its header says",
				       usize);
		int rc = liner_feed(L, win, out.pos);
		if (rc < 0)
			return rc;
		if (r == 0)
			break;   /* the frame is complete */
		if (out.pos == 0 && in.pos == in.size)
			return td_fail(f, off, "zstd data ends before its frame does");
	}
	if (total != usize)
		return td_fail(f, off, "zstd data gives %llu bytes, header says %u",
			       (unsigned long long)total, usize);
	return 0;
}

static int stream_zlib(struct td_file *f, struct liner *L, const uint8_t *src, uint32_t csize,
		       uint32_t usize, uint8_t *win, uint64_t off)
{
	struct td_dctx *dc = &f->dc;
	if (!dc->zs_init) {
		memset(&dc->zs, 0, sizeof dc->zs);
		if (inflateInit(&dc->zs) != Z_OK)
			return vms_error_nomem_at(f->err, f->path, off);
		dc->zs_init = true;
	} else if (inflateReset(&dc->zs) != Z_OK) {
		return vms_error_set(f->err, VMS_ERR_INTERNAL, "%s: zlib reset failed", f->path);
	}
	dc->zs.next_in = (Bytef *)src;
	dc->zs.avail_in = csize;
	for (;;) {
		dc->zs.next_out = win;
		dc->zs.avail_out = TD_LINE_WINDOW;
		int r = inflate(&dc->zs, Z_NO_FLUSH);
		size_t got = TD_LINE_WINDOW - dc->zs.avail_out;
		if (r != Z_OK && r != Z_STREAM_END && !(r == Z_BUF_ERROR && got))
			return td_fail(f, off, "zlib data damaged (%s)",
				       r == Z_BUF_ERROR ? "ends before its stream does"
				       : dc->zs.msg ? dc->zs.msg : "inflate failed");
		if (dc->zs.total_out > usize)
			return td_fail(f, off, "zlib data gives more than the %u bytes its header says",
				       usize);
		int rc = liner_feed(L, win, got);
		if (rc < 0)
			return rc;
		if (r == Z_STREAM_END)
			break;
	}
	if (dc->zs.total_out != usize)
		return td_fail(f, off, "zlib data gives %llu bytes, header says %u",
			       (unsigned long long)dc->zs.total_out, usize);
	return 0;
}

int td_section_lines(struct td_file *f, uint64_t off, int want_id, const char *what,
		     int size_bytes, td_line_fn fn, void *ctx)
{
	struct sechead sh;
	int r = section_header(f, off, want_id, what, &sh);
	if (r < 0)
		return r;
	const uint8_t *h = sh.h;
	uint64_t size = sh.size;
	uint32_t csize = sh.csize, usize = sh.usize;
	if (!(sh.flags & 1)) {
		/* in the mapping: the lines are read where they are */
		if (size < (uint64_t)size_bytes)
			return td_fail(f, off + 16, "%s section too short for its size", what);
		uint64_t n = size_bytes == 4 ? td_rd32(f, h + 16) : td_rd64(f, h + 16);
		if (n > size - (uint64_t)size_bytes)
			return td_fail(f, off + 16, "%s size %llu runs past its section", what,
				       (unsigned long long)n);
		return td_text_lines(h + 16 + size_bytes, n, fn, ctx);
	}
	if (usize < (uint32_t)size_bytes)
		return td_fail(f, off + 20, "%s section too short for its size", what);
	struct liner *L = malloc(sizeof *L);
	uint8_t *win = malloc(TD_LINE_WINDOW);
	if (!L || !win) {
		free(L);
		free(win);
		return vms_error_nomem_at(f->err, f->path, off);
	}
	*L = (struct liner){.f = f, .what = what, .off = off, .size_bytes = size_bytes,
			    .avail = usize, .fn = fn, .ctx = ctx};
	r = f->comp == TD_COMP_ZSTD ? stream_zstd(f, L, h + 24, csize, usize, win, off + 24)
				    : stream_zlib(f, L, h + 24, csize, usize, win, off + 24);
	free(L);
	free(win);
	return r;
}
