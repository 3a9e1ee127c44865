/* An independent writer of QEMU simpletrace v4 files for the tests, following QEMU's
 * trace/simple.c (not the reader under test): header {~0, magic, 4}; a mapping record is
 * u64 0, u64 id, u32 len, name; an event record is u64 1, then the TraceRecord {u64 event,
 * u64 timestamp_ns, u32 length, u32 pid} and the arguments, where length = 24 + argument bytes,
 * an integer argument is one u64 and a string is u32 length + bytes; dropped events are an
 * event record with id ~0 - 1 and a u64 count. It also remembers where each record ends. */
#ifndef ST_WRITER_H
#define ST_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct stw_arg {
	const char *str;   /* non-NULL: a string argument */
	uint64_t val;
};

#define STW_MAX_RECORDS 256

struct stw {
	uint8_t *buf;
	size_t len, cap;
	size_t nr_rec;
	size_t rec_start[STW_MAX_RECORDS], rec_end[STW_MAX_RECORDS];
	int rec_is_event[STW_MAX_RECORDS];
};

static inline void stw_bytes(struct stw *w, const void *p, size_t n)
{
	if (w->len + n > w->cap) {
		w->cap = (w->len + n) * 2 + 1024;
		w->buf = realloc(w->buf, w->cap);
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static inline void stw_u64(struct stw *w, uint64_t v) { stw_bytes(w, &v, 8); }
static inline void stw_u32(struct stw *w, uint32_t v) { stw_bytes(w, &v, 4); }

static inline void stw_header(struct stw *w)
{
	stw_u64(w, ~(uint64_t)0);
	stw_u64(w, 0xf2b177cb0aa429b4ULL);
	stw_u64(w, 4);
}

static inline void stw_mark(struct stw *w, size_t start, int is_event)
{
	if (w->nr_rec < STW_MAX_RECORDS) {
		w->rec_start[w->nr_rec] = start;
		w->rec_end[w->nr_rec] = w->len;
		w->rec_is_event[w->nr_rec] = is_event;
		w->nr_rec++;
	}
}

static inline void stw_mapping(struct stw *w, uint64_t id, const char *name)
{
	size_t start = w->len;
	stw_u64(w, 0);
	stw_u64(w, id);
	stw_u32(w, (uint32_t)strlen(name));
	stw_bytes(w, name, strlen(name));
	stw_mark(w, start, 0);
}

static inline void stw_event(struct stw *w, uint64_t id, uint64_t ts, uint32_t pid,
			     const struct stw_arg *args, size_t nargs)
{
	size_t start = w->len;
	uint32_t datasize = 0;
	for (size_t i = 0; i < nargs; i++)
		datasize += args[i].str ? 4 + (uint32_t)strlen(args[i].str) : 8;
	stw_u64(w, 1);
	stw_u64(w, id);
	stw_u64(w, ts);
	stw_u32(w, 24 + datasize);
	stw_u32(w, pid);
	for (size_t i = 0; i < nargs; i++) {
		if (args[i].str) {
			stw_u32(w, (uint32_t)strlen(args[i].str));
			stw_bytes(w, args[i].str, strlen(args[i].str));
		} else {
			stw_u64(w, args[i].val);
		}
	}
	stw_mark(w, start, 1);
}

static inline void stw_dropped(struct stw *w, uint64_t ts, uint32_t pid, uint64_t count)
{
	size_t start = w->len;
	stw_u64(w, 1);
	stw_u64(w, ~(uint64_t)0 - 1);
	stw_u64(w, ts);
	stw_u32(w, 32);
	stw_u32(w, pid);
	stw_u64(w, count);
	stw_mark(w, start, 1);
}

/* dir/name, in one of four buffers used in turn (a call's result lasts four calls) */
static inline const char *stw_tmp_path(const char *dir, const char *name)
{
	static char buf[4][8400];
	static int slot;
	slot = (slot + 1) & 3;
	snprintf(buf[slot], sizeof buf[slot], "%s/%s", dir, name);
	return buf[slot];
}

static inline int stw_save(const struct stw *w, const char *path, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t n = fwrite(w->buf, 1, len, f);
	return fclose(f) == 0 && n == len ? 0 : -1;
}

#endif
