/* vmscope index: write the index `serve` reads at its start (serve_index.c; the file's
 * layout: vmscope/index_file.h), so that serving the same traces again shows the page, the
 * findings and the rows without reading the traces. An index that is already these traces'
 * is kept unless --force. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "serve_index.h"
#include "vmscope/index_key.h"

static const char usage[] =
	"usage: vmscope index [--cache-dir DIR | -o FILE] [--force] [--tsc-hz HZ]\n"
	"       vmscope index --prune [--cache-dir DIR]\n"
	"                     [--host FILE] [--guest NAME=FILE] [--map NAME:VCPU=TID,...] TRACE...\n"
	"\n"
	"Writes the index of the traces that `vmscope serve` reads at its start: the page, the\n"
	"findings of `report`, the timeline's rows, a checkpoint of the state machine every\n"
	"100,000 events (not for Trace Compass XML) and per-row summaries, under a key of the\n"
	"traces' identities (path, size, mtime), the options that change the analysis and the\n"
	"program. `serve` with the same traces and options then starts without reading them;\n"
	"a trace changed since (or another program) makes the index stale and it is rebuilt.\n"
	"Prints the index file's path. A window of `serve` starts from the last checkpoint\n"
	"before it, or is answered from the summaries when it holds 400,000 events or more.\n"
	"\n"
	"  --cache-dir DIR     the cache (default $XDG_CACHE_HOME/vmscope, else\n"
	"                      ~/.cache/vmscope); the file is named by a hash of the key\n"
	"  -o, --output FILE   write the index to FILE instead (serve --index FILE reads it)\n"
	"  --force             rebuild it even when the one there is these traces'\n"
	"  --prune             only tidy the cache (no TRACE): remove the indexes whose traces\n"
	"                      or program changed, then the oldest past VMS_INDEX_CACHE_MAX\n"
	"                      bytes (default 4 GiB); each path removed is printed. Writing an\n"
	"                      index into the cache does the same.\n"
	CLI_HELP_THREADS
	"  --tsc-hz HZ         the TSC rate of a trace that counts cycles without TSC2NSEC\n"
	"  --cpu-hz HZ         the same (xenalyze's name: a xentrace host's CPU frequency)\n"
	"  --clock-model M     auto (default) or linear, as for the other commands\n"
	CLI_HELP_ROLES;

/* vmscope index --prune: the cache's upkeep alone (no traces), each file removed printed */
static int prune_cache(const struct serve_index_opts *io, int ac, char **av)
{
	int st = VMS_EXIT_OK;
	if (io->file || ac > 1) {
		fprintf(stderr, "vmscope index: --prune takes no trace and no -o (only --cache-dir)\n%s",
			usage);
		st = VMS_EXIT_USAGE;
	} else {
		struct vms_error err = { 0 };
		char *dir = vms_index_cache_dir(io->cache_dir, &err);
		int n = dir ? serve_index_prune(dir, NULL, serve_index_cache_max(), true) : -1;
		if (n < 0) {
			fprintf(stderr, "vmscope index: %s\n", dir ? "cannot read the cache" : err.msg);
			st = VMS_EXIT_FAIL;
		} else {
			fprintf(stderr, "vmscope index: %d removed from %s\n", n, dir);
		}
		free(dir);
	}
	free(av);
	return st;
}

int cmd_index(int argc, char **argv)
{
	struct serve_index_opts io = { 0 };
	bool force = false, prune = false;
	char **av = calloc((size_t)argc + 1, sizeof *av);
	int ac = 0;
	if (!av) {
		fprintf(stderr, "vmscope index: out of memory\n");
		return VMS_EXIT_FAIL;
	}
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			while (i < argc)
				av[ac++] = argv[i++];
			break;
		}
		if (i > 0 && !strcmp(argv[i], "--force")) {
			force = true;
			continue;
		}
		if (i > 0 && !strcmp(argv[i], "--prune")) {
			prune = true;
			continue;
		}
		int t = i > 0 ? serve_index_opt("index", argc, argv, &i, true, &io, usage) : 0;
		if (t < 0) {
			free(av);
			return VMS_EXIT_USAGE;
		}
		if (!t)
			av[ac++] = argv[i];
	}
	if (io.file && io.cache_dir) {
		fprintf(stderr, "vmscope index: --cache-dir and -o: one or the other\n%s", usage);
		free(av);
		return VMS_EXIT_USAGE;
	}
	if (prune)
		return prune_cache(&io, ac, av);
	struct cli c;
	int st = cli_begin(&c, ac, av, CLI_ROLES, usage);
	if (st != CLI_GO) {
		free(av);
		return st;
	}
	struct vms_serve_traces t = { .paths = c.paths, .nr_paths = c.nr_paths, .opts = &c.sopts };
	struct vms_error err = { 0 }, ie = { 0 };
	struct serve_art art = { 0 };
	char *key = NULL, *path = NULL;
	enum vms_index_state state = VMS_INDEX_MISSING;
	if (serve_index_locate(&c, &io, &key, &path, &err) < 0)
		goto fail;
	if (!force && serve_art_load(path, key, &art, &state, &ie) == 0) {
		printf("%s\n", path);
		fprintf(stderr, "vmscope index: %s is up to date\n", path);
		st = VMS_EXIT_OK;
		goto out;
	}
	if (state == VMS_INDEX_DAMAGED)
		fprintf(stderr, "vmscope index: %s: rebuilding it\n", ie.msg);
	if (serve_art_build(&c, &t, &art, true, &err) < 0 || serve_art_save(path, key, &art, &err) < 0)
		goto fail;
	serve_index_upkeep(&io, path);
	printf("%s\n", path);
	st = VMS_EXIT_OK;
	goto out;
fail:
	st = cli_fail(&c, &err);
out:
	serve_art_free(&art);
	free(key);
	free(path);
	free(av);
	return cli_end(&c, st);
}
