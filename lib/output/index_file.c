/* The index file (vmscope/index_file.h): a versioned container of sections under a key,
 * checked whole (CRC-32) before any section is handed out. The file is read into memory
 * once, its size bounded (VMS_INDEX_FILE_MAX) and every count and length checked against
 * the bytes left, so a file that lies about them is "damaged", never a crash or a huge
 * allocation. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "vmscope/index_file.h"

static const char magic[8] = { 'V', 'M', 'S', 'I', 'D', 'X', '\r', '\n' };

struct vms_index {
	uint8_t *buf;
	uint32_t nr;
	struct vms_index_sect sect[VMS_INDEX_MAX_SECTIONS];
	void *inflated[VMS_INDEX_MAX_SECTIONS];   /* a compressed section's bytes, or NULL */
};

#define FLAG_ZLIB 1u
/* zlib's deflate never shrinks more than ~1032:1: a section that claims more is a lie */
#define ZLIB_MAX_RATIO 1032u

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* crc32() takes a uInt length: large sections go in pieces */
static uLong crc_add(uLong crc, const void *data, uint64_t len)
{
	const Bytef *p = data;
	while (len) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
		crc = crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
}

static int wr(FILE *f, uLong *crc, const void *p, uint64_t n)
{
	*crc = crc_add(*crc, p, n);
	return n && fwrite(p, 1, n, f) != n ? -1 : 0;
}

/* The level of every section's deflate: level 6 took 0.67 s of a 50 M-event index build for
 * 11 % less (bench/bench_index.sh) */
#define ZLIB_LEVEL 1

struct vms_index_zip {
	z_stream zs;
	uint8_t *out;
	uint64_t cap, in;
	bool bad;
};

struct vms_index_zip *vms_index_zip_new(void)
{
	struct vms_index_zip *z = calloc(1, sizeof *z);
	if (!z)
		return NULL;
	z->cap = 64 * 1024;
	if (!(z->out = malloc(z->cap)) || deflateInit(&z->zs, ZLIB_LEVEL) != Z_OK) {
		free(z->out);
		free(z);
		return NULL;
	}
	z->zs.next_out = z->out;
	z->zs.avail_out = (uInt)z->cap;
	return z;
}

/* Deflate what is given (flush: Z_NO_FLUSH, or Z_FINISH at the end), the output growing. */
static void zip_run(struct vms_index_zip *z, int flush)
{
	for (;;) {
		int rc = deflate(&z->zs, flush);
		if (rc == Z_STREAM_END)
			return;
		if (z->zs.avail_out) {
			/* (room left: the input is taken; at the end, no end is an error) */
			z->bad |= (rc != Z_OK && rc != Z_BUF_ERROR) || flush != Z_NO_FLUSH;
			return;
		}
		uint8_t *o = z->cap <= (1ull << 31) && (rc == Z_OK || rc == Z_BUF_ERROR) ?
				     realloc(z->out, 2 * z->cap) : NULL;
		if (!o) {
			z->bad = true;
			return;
		}
		z->out = o;
		z->zs.next_out = o + z->cap;
		z->zs.avail_out = (uInt)z->cap;
		z->cap *= 2;
	}
}

void vms_index_zip_add(struct vms_index_zip *z, const void *p, size_t n)
{
	z->in += n;
	if (z->bad || z->in > (1u << 30)) {
		z->bad = true;
		return;
	}
	z->zs.next_in = (Bytef *)(uintptr_t)p;
	z->zs.avail_in = (uInt)n;
	while (!z->bad && z->zs.avail_in)
		zip_run(z, Z_NO_FLUSH);
	z->zs.next_in = NULL;
}

/* The stream's bytes (*len), NULL when it failed or holds other than len bytes. */
static const uint8_t *zip_finish(struct vms_index_zip *z, uint64_t len, uLongf *zl)
{
	if (z->bad || z->in != len)
		return NULL;
	zip_run(z, Z_FINISH);
	*zl = z->zs.total_out;
	return z->bad ? NULL : z->out;
}

void vms_index_zip_free(struct vms_index_zip *z)
{
	if (!z)
		return;
	deflateEnd(&z->zs);
	free(z->out);
	free(z);
}

int vms_index_write(const char *path, const char *key, const struct vms_index_sect *sect,
		    uint32_t nr, struct vms_error *err)
{
	size_t kl = strlen(key);
	if (nr > VMS_INDEX_MAX_SECTIONS || kl > VMS_INDEX_KEY_MAX)
		return vms_error_set(err, VMS_ERR_INTERNAL, "%s: too many sections or key too long",
				     path);
	size_t pl = strlen(path) + 32;
	char *tmp = malloc(pl);
	if (!tmp)
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	snprintf(tmp, pl, "%s.tmp.%ld", path, (long)getpid());
	FILE *f = fopen(tmp, "wb");
	if (!f) {
		int e = errno;
		free(tmp);
		return vms_error_set(err, VMS_ERR_IO, "%s: cannot write: %s", path, strerror(e));
	}
	uLong crc = crc32(0L, Z_NULL, 0);
	uint8_t h[16];
	int bad = wr(f, &crc, magic, sizeof magic);
	put32(h, VMS_INDEX_VERSION);
	put32(h + 4, nr);
	put32(h + 8, (uint32_t)kl);
	bad |= wr(f, &crc, h, 12);
	bad |= wr(f, &crc, key, kl);
	for (uint32_t i = 0; i < nr && !bad; i++) {
		/* deflated when that is smaller (the page and the rows are text: ~10x): here, or as
		 * the section was made (sect.zip) */
		uLongf zl = 0;
		Bytef *z = NULL;
		const Bytef *zb = NULL;
		if (sect[i].zip) {
			zb = zip_finish(sect[i].zip, sect[i].len, &zl);
		} else if (sect[i].len <= (1u << 30)) {
			zl = compressBound((uLong)sect[i].len);
			if ((z = malloc(zl)) &&
			    compress2(z, &zl, sect[i].data, (uLong)sect[i].len, ZLIB_LEVEL) == Z_OK)
				zb = z;
		}
		bool zip = zb && zl + 8 < sect[i].len;
		put32(h, sect[i].type);
		put32(h + 4, zip ? FLAG_ZLIB : 0);
		put64(h + 8, zip ? zl + 8 : sect[i].len);
		bad |= wr(f, &crc, h, 16);
		if (zip) {
			put64(h, sect[i].len);
			bad |= wr(f, &crc, h, 8);
			bad |= wr(f, &crc, zb, zl);
		} else {
			bad |= wr(f, &crc, sect[i].data, sect[i].len);
		}
		free(z);
	}
	put32(h, (uint32_t)crc);
	if (fwrite(h, 1, 4, f) != 4)
		bad = -1;
	if (fflush(f) != 0)
		bad = -1;
	if (fclose(f) != 0)
		bad = -1;
	if (!bad && rename(tmp, path) != 0)
		bad = -1;
	int e = errno;
	if (bad)
		unlink(tmp);
	free(tmp);
	return bad ? vms_error_set(err, VMS_ERR_IO, "%s: cannot write: %s", path, strerror(e)) : 0;
}

static struct vms_index *damaged(struct vms_index *x, enum vms_index_state *state,
				 struct vms_error *err, const char *path, const char *what,
				 uint64_t off)
{
	vms_index_free(x);
	*state = VMS_INDEX_DAMAGED;
	vms_error_set(err, VMS_ERR_FORMAT, "%s: %s at byte offset %llu", path, what,
		      (unsigned long long)off);
	return NULL;
}

struct vms_index *vms_index_read(const char *path, const char *key, enum vms_index_state *state,
				 struct vms_error *err)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		int e = errno;
		*state = e == ENOENT ? VMS_INDEX_MISSING : VMS_INDEX_DAMAGED;
		if (e != ENOENT)
			vms_error_set(err, VMS_ERR_IO, "%s: cannot open: %s", path, strerror(e));
		return NULL;
	}
	struct stat st;
	struct vms_index *x = calloc(1, sizeof *x);
	if (!x || fstat(fileno(f), &st) != 0 || st.st_size < 0) {
		fclose(f);
		free(x);
		*state = VMS_INDEX_DAMAGED;
		vms_error_set(err, VMS_ERR_IO, "%s: cannot read", path);
		return NULL;
	}
	uint64_t size = (uint64_t)st.st_size;
	if (size < sizeof magic + 16) {
		fclose(f);
		return damaged(x, state, err, path, "too short for an index", size);
	}
	if (size > VMS_INDEX_FILE_MAX) {
		fclose(f);
		return damaged(x, state, err, path, "larger than any index", 0);
	}
	x->buf = malloc(size);
	if (!x->buf || fread(x->buf, 1, size, f) != size) {
		fclose(f);
		if (!x->buf) {
			free(x);
			*state = VMS_INDEX_DAMAGED;
			vms_error_set(err, VMS_ERR_NOMEM, "%s: out of memory at byte offset 0", path);
			return NULL;
		}
		return damaged(x, state, err, path, "cannot be read whole", 0);
	}
	fclose(f);
	const uint8_t *b = x->buf;
	if (memcmp(b, magic, sizeof magic))
		return damaged(x, state, err, path, "not a vmscope index (bad magic)", 0);
	uint64_t body = size - 4;
	if ((uint32_t)crc_add(crc32(0L, Z_NULL, 0), b, body) != get32(b + body))
		return damaged(x, state, err, path, "checksum does not match", body);
	if (get32(b + 8) != VMS_INDEX_VERSION) {
		vms_index_free(x);
		*state = VMS_INDEX_STALE;
		return NULL;
	}
	uint32_t nr = get32(b + 12), kl = get32(b + 16);
	uint64_t off = 20;
	if (nr > VMS_INDEX_MAX_SECTIONS)
		return damaged(x, state, err, path, "too many sections", 12);
	if (kl > VMS_INDEX_KEY_MAX || kl > body - off)
		return damaged(x, state, err, path, "key longer than the file", 16);
	if (kl != strlen(key) || memcmp(b + off, key, kl)) {
		vms_index_free(x);
		*state = VMS_INDEX_STALE;
		return NULL;
	}
	off += kl;
	for (uint32_t i = 0; i < nr; i++) {
		if (body - off < 16)
			return damaged(x, state, err, path, "section header cut", off);
		uint64_t len = get64(b + off + 8);
		uint32_t flags = get32(b + off + 4);
		if (flags & ~FLAG_ZLIB)
			return damaged(x, state, err, path, "section header damaged", off + 4);
		if (len > body - off - 16)
			return damaged(x, state, err, path, "section longer than the file", off + 8);
		x->sect[i] = (struct vms_index_sect){ .type = get32(b + off), .data = b + off + 16,
						      .len = len };
		if (flags & FLAG_ZLIB) {
			uint64_t raw = len >= 8 ? get64(b + off + 16) : UINT64_MAX;
			if (len < 8 || len - 8 > (1u << 30) || raw > (1u << 30) ||
			    raw > ZLIB_MAX_RATIO * (len - 8) + 64)
				return damaged(x, state, err, path, "compressed section's length lies",
					       off + 16);
			uLongf got = (uLongf)raw;
			void *out = malloc(raw ? raw : 1);
			if (!out)
				return damaged(x, state, err, path, "out of memory", off + 16);
			x->inflated[i] = out;
			if (uncompress(out, &got, b + off + 24, (uLong)(len - 8)) != Z_OK || got != raw)
				return damaged(x, state, err, path, "compressed section damaged", off + 24);
			x->sect[i].data = out;
			x->sect[i].len = raw;
		}
		off += 16 + len;
	}
	if (off != body)
		return damaged(x, state, err, path, "bytes after the last section", off);
	x->nr = nr;
	*state = VMS_INDEX_OK;
	return x;
}

const struct vms_index_sect *vms_index_section(const struct vms_index *x, uint32_t type)
{
	for (uint32_t i = 0; x && i < x->nr; i++)
		if (x->sect[i].type == type)
			return &x->sect[i];
	return NULL;
}

void vms_index_free(struct vms_index *x)
{
	if (!x)
		return;
	for (uint32_t i = 0; i < VMS_INDEX_MAX_SECTIONS; i++)
		free(x->inflated[i]);
	free(x->buf);
	free(x);
}

char *vms_index_read_key(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t h[20];
	char *key = NULL;
	if (fread(h, 1, 20, f) == 20 && !memcmp(h, magic, sizeof magic) &&
	    get32(h + 8) == VMS_INDEX_VERSION && get32(h + 16) <= VMS_INDEX_KEY_MAX) {
		uint32_t kl = get32(h + 16);
		key = malloc((size_t)kl + 1);
		if (key && fread(key, 1, kl, f) == kl && !memchr(key, 0, kl)) {
			key[kl] = 0;
		} else {
			free(key);
			key = NULL;
		}
	}
	fclose(f);
	return key;
}
