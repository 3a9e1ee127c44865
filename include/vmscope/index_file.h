/* vmscope: the index file of `vmscope index` and `vmscope serve` (lib/output/index_file.c
 * writes and reads it; lib/session/index_key.c says what it is the index of).
 *
 * A cache, so never trusted: it is read back only when its key (the text naming the traces'
 * identities and the options that change the analysis, vms_index_key) is byte for byte the
 * one asked for, its version is this one and its CRC-32 covers every byte; every length is
 * checked against the file before it is used. Layout (integers little-endian):
 *   "VMSIDX\r\n"  magic (8 bytes)
 *   u32 version (VMS_INDEX_VERSION), u32 number of sections (<= VMS_INDEX_MAX_SECTIONS)
 *   u32 key length (<= VMS_INDEX_KEY_MAX), the key's bytes
 *   per section: u32 type, u32 flags, u64 length, its bytes; flags 1: the bytes are the
 *     section's length (u64) and its zlib stream (at most 1 GiB either way, at most 1032x)
 *   u32 CRC-32 (zlib's) of every byte before it
 * The file is written to a temporary name beside it and renamed, so a reader never sees half
 * of one. */
#ifndef VMSCOPE_INDEX_FILE_H
#define VMSCOPE_INDEX_FILE_H

#include <stdint.h>

#include "vmscope/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VMS_INDEX_VERSION 1u
#define VMS_INDEX_MAX_SECTIONS 64u
#define VMS_INDEX_KEY_MAX (1u << 20)
#define VMS_INDEX_FILE_MAX (1ull << 34)   /* 16 GiB: larger is not one of ours */

/* What a section holds. */
enum vms_index_sect_type {
	VMS_INDEX_PAGE = 1,      /* the page of `serve` (`vmscope html`'s, server mode) */
	VMS_INDEX_FINDINGS = 2,  /* /api/findings: report --json's findings */
	VMS_INDEX_ROWS = 3,      /* /api/rows */
	VMS_INDEX_CHECKPOINTS = 4, /* the page's run's checkpoints (vms_session_checkpoints);
	                              absent when a source cannot seek */
	VMS_INDEX_SUMMARIES = 5, /* the rows' summaries (vms_serve_rows_write_summary) */
	VMS_INDEX_MODEL = 6,     /* the model the queries use (vms_session_save_model) */
};

/* A section deflated as its bytes are made (vms_index_zip_add), e.g. in one thread while
 * another writes them: vms_index_write then only finishes the stream, and the file is the
 * same bytes as with its own deflate (the same zlib level; zlib's stream does not depend on
 * how its input was cut). */
struct vms_index_zip;
struct vms_index_zip *vms_index_zip_new(void);   /* NULL: out of memory */
/* The next n bytes of the section (a failure, out of memory, leaves it stored as it is). */
void vms_index_zip_add(struct vms_index_zip *z, const void *p, size_t n);
void vms_index_zip_free(struct vms_index_zip *z);

struct vms_index_sect {
	uint32_t type;
	const void *data;
	uint64_t len;
	struct vms_index_zip *zip;   /* NULL, or data's len bytes given to it (vms_index_zip_add) */
};

/* Write the index at path (atomically: path.tmp.PID, then rename). 0, or <0 with err. */
int vms_index_write(const char *path, const char *key, const struct vms_index_sect *sect,
		    uint32_t nr, struct vms_error *err);

enum vms_index_state {
	VMS_INDEX_OK = 0,
	VMS_INDEX_MISSING,       /* no such file */
	VMS_INDEX_STALE,         /* a sound file of other traces or options, or another version */
	VMS_INDEX_DAMAGED,       /* not an index, or cut, or its CRC does not match (err says
	                            where: "FILE: WHAT at byte offset N") */
};
struct vms_index;
/* Read the index at path if it is the index of key. *state says why not when NULL is
 * returned (err holds the line for DAMAGED and for an unreadable file). */
struct vms_index *vms_index_read(const char *path, const char *key, enum vms_index_state *state,
				 struct vms_error *err);
/* The section of that type, NULL when the index has none. Valid until vms_index_free. */
const struct vms_index_sect *vms_index_section(const struct vms_index *x, uint32_t type);
void vms_index_free(struct vms_index *x);
/* The key of the index at path, read from its header alone (the CRC is not checked: for the
 * cache's pruning, which only decides whether the file can still be asked for). Malloc'd;
 * NULL when it is no index of this version, or cannot be read. */
char *vms_index_read_key(const char *path);

#ifdef __cplusplus
}
#endif
#endif
