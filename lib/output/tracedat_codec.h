/* The block compressors a trace.dat v7 file may name in its header, as trace-cmd's plugins
 * use them: one self-contained zstd frame (ZSTD_compressCCtx) or zlib stream (compress2) per
 * block, so that libtracecmd's uncompress_block() reads each block on its own. */
#ifndef VMS_OUTPUT_TRACEDAT_CODEC_H
#define VMS_OUTPUT_TRACEDAT_CODEC_H

#include <stddef.h>

enum vms_tdw_compression {
	VMS_TDW_ZSTD = 0, /* the default: what Debian's trace-cmd 3.1.6 reads */
	VMS_TDW_ZLIB,
	VMS_TDW_NONE,
};

struct vms_codec;

/* level 0 = the codec's default for this writer (fast). NULL on allocation failure. */
struct vms_codec *vms_codec_new(enum vms_tdw_compression c, int level);
void vms_codec_free(struct vms_codec *c);
/* Largest output for `n` input bytes. */
size_t vms_codec_bound(const struct vms_codec *c, size_t n);
/* Compress; returns the compressed size, 0 on failure. */
size_t vms_codec_compress(struct vms_codec *c, void *dst, size_t cap, const void *src, size_t n);

/* The header's "name\0version\0" strings ("none" has an empty version). */
const char *vms_codec_name(enum vms_tdw_compression c);
const char *vms_codec_version(enum vms_tdw_compression c);
/* Parse "zstd" / "zlib" / "none"; -1 when unknown. */
int vms_codec_parse(const char *name);

#endif
