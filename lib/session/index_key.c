/* The key of an index (vmscope/index_key.h). Whatever changes what the analysis says must
 * change the key, or a stale index would be served: the traces' bytes (approximated as
 * path, size and mtime, the rule make and ccache trust; a directory by every file under
 * it), the options of vms_session_opts that reach the model, the clocks or the merge, and
 * the program (whose page and analysis an index holds). The window, --machine and --vcpu
 * are not in it: the index covers the whole trace and every row. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <stdbool.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vmscope/index_key.h"

static FILE *walk_out;   /* nftw has no context argument; the key is built in one thread */

static int walk_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_F)
		fprintf(walk_out, "  file %s size %lld mtime %lld.%09ld\n", p, (long long)st->st_size,
			(long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
	return 0;
}

static int put_trace(FILE *f, const char *role, const char *path, struct vms_error *err)
{
	char abs[PATH_MAX];
	struct stat st;
	if (!realpath(path, abs) || stat(abs, &st) != 0)
		return vms_error_open(err, path, errno, 0);
	fprintf(f, "%s %s size %lld mtime %lld.%09ld\n", role, abs, (long long)st.st_size,
		(long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	if (S_ISDIR(st.st_mode)) {
		walk_out = f;
		if (nftw(abs, walk_one, 16, FTW_PHYS) != 0)
			return vms_error_open(err, path, errno, 0);
	}
	return 0;
}

char *vms_index_key(const char *const *paths, uint32_t nr_paths,
		    const struct vms_session_opts *o, const char *tool, struct vms_error *err)
{
	char *key = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&key, &len);
	if (!f)
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory"), NULL;
	fprintf(f, "vmscope index\ntool %s\n", tool ? tool : "?");
	int st = 0;
	if (o->host_path)
		st = put_trace(f, "host", o->host_path, err);
	for (uint32_t i = 0; !st && i < nr_paths; i++)
		st = put_trace(f, "trace", paths[i], err);
	for (uint32_t i = 0; !st && i < o->nr_guests; i++) {
		fprintf(f, "guest-name %s\n", o->guest_names[i]);
		st = put_trace(f, "guest", o->guest_paths[i], err);
	}
	for (uint32_t i = 0; i < o->nr_maps; i++)
		fprintf(f, "map %s:%u=%d\n", o->map_guest[i], o->map_vcpu[i], o->map_tid[i]);
	for (uint32_t i = 0; i < o->nr_dom_maps; i++)
		fprintf(f, "map %s:dom=%u\n", o->dom_map_guest[i], o->dom_map_id[i]);
	for (uint32_t i = 0; i < o->nr_offsets; i++)
		fprintf(f, "offset %s=%" PRId64 "\n", o->offset_name[i], o->offset_ns[i]);
	fprintf(f, "clock-model %d\nno-hull %d\nmatch-cap %u\nreference %s\ntsc-hz %.17g\n",
		o->clock_model, (int)o->no_hull, o->match_cap, o->reference ? o->reference : "-",
		o->tsc_hz);
	if (fclose(f) != 0 || st) {
		free(key);
		if (!st)
			vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	return key;
}

static int mkdir_p(char *dir)
{
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		int r = mkdir(dir, 0700);
		*p = '/';
		if (r != 0 && errno != EEXIST)
			return -1;
	}
	return mkdir(dir, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

char *vms_index_cache_dir(const char *cache_dir, struct vms_error *err)
{
	char dir[PATH_MAX];
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;
	if (cache_dir)
		n = snprintf(dir, sizeof dir, "%s", cache_dir);
	else if (xdg && *xdg == '/')   /* the XDG rule: a relative value is ignored */
		n = snprintf(dir, sizeof dir, "%s/vmscope", xdg);
	else if (home && *home)
		n = snprintf(dir, sizeof dir, "%s/.cache/vmscope", home);
	else
		return vms_error_set(err, VMS_ERR_USAGE,
				     "no cache directory: set HOME or XDG_CACHE_HOME, or give "
				     "--cache-dir"), NULL;
	if (n < 0 || (size_t)n >= sizeof dir - 32)
		return vms_error_set(err, VMS_ERR_USAGE, "cache directory path too long"), NULL;
	if (mkdir_p(dir) != 0)
		return vms_error_set(err, VMS_ERR_IO, "%s: cannot make the cache directory: %s",
				     dir, strerror(errno)), NULL;
	char *d = strdup(dir);
	return d ? d : (vms_error_set(err, VMS_ERR_NOMEM, "out of memory"), NULL);
}

char *vms_index_cache_path(const char *cache_dir, const char *key, struct vms_error *err)
{
	char *dir = vms_index_cache_dir(cache_dir, err);
	if (!dir)
		return NULL;
	/* FNV-1a of the key names the file; the key inside decides whether it is this index */
	uint64_t h = 0xcbf29ce484222325ull;
	for (const unsigned char *p = (const unsigned char *)key; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	size_t l = strlen(dir) + 32;
	char *path = malloc(l);
	if (!path) {
		free(dir);
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory"), NULL;
	}
	snprintf(path, l, "%s/%016" PRIx64 ".vmsidx", dir, h);
	free(dir);
	return path;
}

/* A line "... PATH size N mtime S.NS" (PATH may hold spaces: the last " size " ends it):
 * does PATH still have that size and mtime? */
static bool line_holds(const char *line, size_t len, const char *prefix)
{
	size_t pl = strlen(prefix);
	if (len <= pl || strncmp(line, prefix, pl))
		return true;   /* not such a line */
	char buf[PATH_MAX + 128];
	if (len >= sizeof buf)
		return false;
	memcpy(buf, line, len);
	buf[len] = 0;
	char *sz = NULL;
	for (char *q = strstr(buf + pl, " size "); q; q = strstr(q + 1, " size "))
		sz = q;
	long long size, sec;
	long nsec;
	if (!sz || sscanf(sz, " size %lld mtime %lld.%ld", &size, &sec, &nsec) != 3)
		return false;
	*sz = 0;
	struct stat st;
	return stat(buf + pl, &st) == 0 && st.st_size == size && st.st_mtim.tv_sec == sec &&
	       st.st_mtim.tv_nsec == nsec;
}

bool vms_index_key_stale(const char *key)
{
	/* the program: "tool vmscope VERSION PATH size..." */
	static const char *const prefixes[] = { "host ", "trace ", "guest ", "  file " };
	for (const char *line = key; *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (!strncmp(line, "tool vmscope ", 13)) {
			const char *sp = memchr(line + 13, ' ', len - 13);
			bool sized = false;   /* (no /proc/self/exe: no size to check) */
			for (const char *q = line; q + 6 <= line + len && !sized; q++)
				sized = !strncmp(q, " size ", 6);
			if (sp && sized && !line_holds(sp + 1, len - (size_t)(sp + 1 - line), ""))
				return true;
		}
		for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
			if (!line_holds(line, len, prefixes[i]))
				return true;
		line += len + (end ? 1 : 0);
	}
	return false;
}
