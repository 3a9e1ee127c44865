/* vmscope: what an index is the index of (lib/session/index_key.c): the key the index file
 * holds (vmscope/index_file.h) and where the cache keeps it. */
#ifndef VMSCOPE_INDEX_KEY_H
#define VMSCOPE_INDEX_KEY_H

#include <stdbool.h>
#include <stdint.h>

#include "vmscope/error.h"
#include "vmscope/session.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The key: one line per trace (its absolute path, size, mtime in ns; a directory, such as a
 * CTF trace, by every file under it), one line per option that changes the analysis
 * (--host, --guest, --map, --offset, --clock-model, --reference, --tsc-hz, ...), and `tool`
 * (the program's own identity: an index made by another build is another index). Malloc'd
 * text; NULL with err set when a trace cannot be stat'ed. */
char *vms_index_key(const char *const *paths, uint32_t nr_paths,
		    const struct vms_session_opts *o, const char *tool, struct vms_error *err);
/* The index file of key in the cache: DIR/HASH.vmsidx, DIR = cache_dir, else
 * $XDG_CACHE_HOME/vmscope, else ~/.cache/vmscope (made when missing). Malloc'd; NULL with
 * err set. */
char *vms_index_cache_path(const char *cache_dir, const char *key, struct vms_error *err);
/* That directory alone (made when missing). Malloc'd; NULL with err set. */
char *vms_index_cache_dir(const char *cache_dir, struct vms_error *err);
/* Can key never be asked for again: a trace (or a file of a trace directory) or the program
 * it names is gone, or no longer has the size and mtime the key says? */
bool vms_index_key_stale(const char *key);

#ifdef __cplusplus
}
#endif
#endif
