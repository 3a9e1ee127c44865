/* What `serve` computes before it listens (the page, the findings, the rows), and the index
 * file that keeps them between runs (`vmscope index`, vmscope/index_file.h): shared by
 * cmd-serve.c and cmd-index.c. */
#ifndef VMSCOPE_SERVE_INDEX_H
#define VMSCOPE_SERVE_INDEX_H

#include <stdbool.h>
#include <stddef.h>

#include "cli.h"
#include "vmscope/index_file.h"
#include "vmscope/serve.h"

struct serve_art {
	char *page;               /* /: `vmscope html`'s page in its server mode */
	size_t page_len;
	char *findings;           /* /api/findings: report --json's findings */
	size_t findings_len;
	char *rows;               /* /api/rows */
	size_t rows_len;
	void *ckpt;               /* the checkpoints the windows start from (NULL: none) */
	size_t ckpt_len;
	struct vms_index_zip *ckpt_zip;      /* built: them deflated for the index, or NULL */
	char *summary;            /* the rows' summaries (NULL: none) */
	size_t summary_len;
	struct vms_index_zip *summary_zip;   /* built: them deflated for the index, or NULL */
	char *model;              /* the model (NULL: none) */
	size_t model_len;
};
/* A checkpoint every this many events of the page's run: a window then reads at most this
 * many events before its start (about 20 ms at the synthesized pair's cost per event). */
#define SERVE_CKPT_EVERY 100000u

/* Compute them from the traces: one analysis run (page, findings, rows, checkpoints).
 * save: they go to an index file next (serve_art_save), so the summaries are deflated for it
 * as they are made. */
int serve_art_build(struct cli *c, const struct vms_serve_traces *t, struct serve_art *a,
		    bool save, struct vms_error *err);
void serve_art_free(struct serve_art *a);

/* --cache-dir DIR and --index FILE (index: -o FILE too), taken out of argv before the
 * shared parser sees it. */
struct serve_index_opts {
	const char *cache_dir;
	const char *file;
	bool off;                 /* serve --no-index */
};
/* Take `a` (argv[*i]) if it is one of those options: 1 taken, 0 not one, -1 usage error
 * (printed). `out` also accepts -o/--output (vmscope index). */
int serve_index_opt(const char *cmd, int argc, char **argv, int *i, bool out,
		    struct serve_index_opts *o, const char *usage);
/* The key of c's traces and options, and the index file's path (malloc'd both). */
int serve_index_locate(struct cli *c, const struct serve_index_opts *o, char **key, char **path,
		       struct vms_error *err);
int serve_art_save(const char *path, const char *key, const struct serve_art *a,
		   struct vms_error *err);
/* Load them from the index at path when it is key's; *state says why not. */
int serve_art_load(const char *path, const char *key, struct serve_art *a,
		   enum vms_index_state *state, struct vms_error *err);

/* The cache's upkeep, after an index is written there (and `vmscope index --prune`): the
 * indexes whose traces or program changed or vanished (never asked for again) are removed,
 * and temporary files of writers that died a day ago; then, while the cache holds more than
 * max_bytes (VMS_INDEX_CACHE_MAX, default SERVE_CACHE_MAX), the oldest. `keep` (the one just
 * written) stays. say: print each path removed. The number removed, -1 when dir cannot be
 * read. */
#define SERVE_CACHE_MAX (4ull << 30)
int serve_index_prune(const char *dir, const char *keep, uint64_t max_bytes, bool say);
uint64_t serve_index_cache_max(void);
/* After `written` was written: the cache's upkeep, when it is the cache's (not -o/--index). */
void serve_index_upkeep(const struct serve_index_opts *o, const char *written);

#endif
