/* Naming an input that no reader took. This runs only after every reader has said "not
 * mine", so a format that gains a reader stops being named here without a change: an LTTng
 * CTF trace is "not supported yet" exactly until the CTF reader accepts it.
 *
 * Recognised by content: a CTF directory by its metadata file (the packetized magic
 * 0x75d11d57, or a text one opening a comment with "CTF"), LTTng's by the "lttng" its
 * metadata names as its tracer (also found below an LTTng session directory: kernel/,
 * ust/uid/...). */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "unsupported.h"

#define CTF_MAGIC 0x75d11d57u
#define META_PROBE (64u << 10)

/* 0: not CTF metadata, 1: CTF, 2: CTF written by LTTng */
static int ctf_metadata_kind(const char *dir)
{
	char p[4096];
	snprintf(p, sizeof p, "%s/metadata", dir);
	FILE *f = fopen(p, "rb");
	if (!f)
		return 0;
	static char buf[META_PROBE + 1];
	size_t n = fread(buf, 1, META_PROBE, f);
	fclose(f);
	buf[n] = '\0';
	uint32_t magic = 0;
	if (n >= 4)
		memcpy(&magic, buf, 4);
	bool ctf = magic == CTF_MAGIC || __builtin_bswap32(magic) == CTF_MAGIC ||
		   (n >= 6 && !memcmp(buf, "/* CTF", 6));
	if (!ctf)
		return 0;
	for (size_t i = 0; i + 5 <= n; i++)   /* binary packets may hold NULs: no strstr */
		if (!memcmp(buf + i, "lttng", 5))
			return 2;
	return 1;
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A CTF trace in dir or up to `depth` levels below (an LTTng session: kernel/, ust/uid/...). */
static int find_ctf(const char *dir, int depth)
{
	int k = ctf_metadata_kind(dir);
	if (k || depth == 0)
		return k;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	int found = 0, seen = 0;
	while (!found && seen++ < 256 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[4096];
		if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p || !is_dir(p))
			continue;
		found = find_ctf(p, depth - 1);
	}
	closedir(d);
	return found;
}

const char *vms_unsupported_kind(const char *path)
{
	if (is_dir(path)) {
		switch (find_ctf(path, 4)) {
		case 2:
			return "LTTng CTF trace (not supported yet)";
		case 1:
			return "CTF trace of another tracer (not supported yet)";
		default:
			return "is a directory, not a trace";
		}
	}
	return NULL;
}
