/* QEMU simpletrace v4 reader (trace/simple.c writes it, scripts/simpletrace.py reads it).
 *
 * Layout, host byte order: a header of three u64 (0xffffffffffffffff, magic, version 4),
 * then records, each starting with a u64 record type:
 *   0 mapping: u64 event id, u32 name length, name bytes
 *   1 event:   u64 event id, u64 timestamp_ns, u32 length, u32 pid, arguments
 * where "length" counts the 24 bytes from the id to the pid plus the arguments (one u64 each,
 * a string as u32 length + bytes). Id 0xfffffffffffffffe is "events were dropped" with one
 * u64 count.
 *
 * The file is mapped and walked once at open to check the framing of every record (so a
 * damaged file is known before any event is used) and to collect the mapping records, which
 * give meta.type_names. Mapping records are applied again in file order while reading, since
 * an id means what the latest mapping before it says. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmscope/simpletrace.h"
#include "reader.h"

static inline uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static const struct vms_st_desc dropped_desc = {
	.name = (char *)"Dropped_Event",
	.nargs = 1,
	.arg_name = { (char *)"num_events_dropped" },
	.arg_name_len = { 18 },
};

/* ---- names -> type indices, while scanning ---- */

struct name_table {
	uint32_t *slot;     /* type + 1, 0 = empty */
	uint32_t cap;       /* power of two */
};

static uint32_t hash_name(const uint8_t *s, uint32_t n)
{
	uint32_t h = 2166136261u;
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 16777619u;
	return h;
}

static int add_type(struct vms_source *src, struct vms_st_reader *r, const char *name,
		    uint32_t len, uint16_t kind, const struct vms_st_desc *desc)
{
	struct vms_trace_meta *m = &src->meta;
	uint32_t n = m->nr_types;
	if ((n & (n - 1)) == 0) {   /* grow at powers of two */
		uint32_t cap = n ? n * 2 : 16;
		char **tn = realloc(m->type_names, cap * sizeof *tn);
		if (!tn)
			return -1;
		m->type_names = tn;
		uint16_t *tk = realloc(m->type_kinds, cap * sizeof *tk);
		if (!tk)
			return -1;
		m->type_kinds = tk;
		struct vms_st_type *ty = realloc(r->types, cap * sizeof *ty);
		if (!ty)
			return -1;
		r->types = ty;
	}
	char *s = malloc(len + 1);
	if (!s)
		return -1;
	memcpy(s, name, len);
	s[len] = '\0';
	m->type_names[n] = s;
	m->type_kinds[n] = kind;
	r->types[n].desc = desc;
	r->types[n].name_len = len;
	m->nr_types = n + 1;
	return (int)n;
}

/* The type index of a mapping name, made on first sight. */
static int intern(struct vms_source *src, struct vms_st_reader *r, struct name_table *t,
		  const uint8_t *name, uint32_t len)
{
	if (src->meta.nr_types * 2 >= t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;
		uint32_t *slot = calloc(cap, sizeof *slot);
		if (!slot)
			return -1;
		for (uint32_t i = 0; i < t->cap; i++) {
			if (!t->slot[i])
				continue;
			uint32_t ty = t->slot[i] - 1;
			const char *nm = src->meta.type_names[ty];
			uint32_t h = hash_name((const uint8_t *)nm, r->types[ty].name_len) & (cap - 1);
			while (slot[h])
				h = (h + 1) & (cap - 1);
			slot[h] = t->slot[i];
		}
		free(t->slot);
		t->slot = slot;
		t->cap = cap;
	}
	uint32_t h = hash_name(name, len) & (t->cap - 1);
	while (t->slot[h]) {
		uint32_t ty = t->slot[h] - 1;
		if (r->types[ty].name_len == len && !memcmp(src->meta.type_names[ty], name, len))
			return (int)ty;
		h = (h + 1) & (t->cap - 1);
	}
	const struct vms_st_desc *d = NULL;
	if (r->have_events)
		d = vms_st_events_find(&r->events, (const char *)name, len);
	int ty = add_type(src, r, (const char *)name, len, VMS_K_TRACEPOINT, d);
	if (ty < 0)
		return -1;
	t->slot[h] = (uint32_t)ty + 1;
	return ty;
}

static int is_word(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* Remember the first framing error; reading stops there. */
static void scan_fail(struct vms_st_reader *r, const char *path, size_t off, const char *fmt,
		      unsigned long long v)
{
	char what[256], msg[1024];
	snprintf(what, sizeof what, fmt, v);
	snprintf(msg, sizeof msg, "%s: %s at byte offset %zu", path, what, off);
	r->bad_msg = strdup(msg);
	r->bad_status = VMS_ERR_FORMAT;
}

/* Walk the framing of every record once. Returns 0, or -1 when out of memory (good_end is
 * then the record it was at). */
static int scan(struct vms_source *src, struct vms_st_reader *r)
{
	struct name_table names = { 0 };
	const uint8_t *d = r->data;
	size_t size = r->size, pos = VMS_ST_HEADER_SIZE;
	uint32_t cap_maps = 0, max_small = 0;
	size_t cap_marks = 0;
	uint64_t nrec = 0;
	int rc = 0;
	while (pos < size) {
		size_t left = size - pos;
		if (nrec++ % VMS_ST_MARK_EVERY == 0) {
			/* (as many as the file's records: each is at least 20 bytes) */
			if (r->nr_marks == cap_marks) {
				cap_marks = cap_marks ? cap_marks * 2 : 64;
				struct vms_st_mark *nm = realloc(r->marks, cap_marks * sizeof *nm);
				if (!nm) {
					rc = -1;
					break;
				}
				r->marks = nm;
			}
			r->marks[r->nr_marks++] = (struct vms_st_mark){ pos, r->nr_maps };
		}
		if (left < 8) {
			scan_fail(r, src->path, pos, "truncated record type (%llu bytes left)", left);
			break;
		}
		uint64_t type = rd64(d + pos);
		if (type == VMS_ST_REC_MAPPING) {
			if (left < 20) {
				scan_fail(r, src->path, pos, "truncated mapping record (%llu bytes left)", left);
				break;
			}
			uint64_t id = rd64(d + pos + 8);
			uint32_t len = rd32(d + pos + 16);
			if (len == 0 || len > VMS_ST_MAX_NAME) {
				scan_fail(r, src->path, pos + 16, "mapping name length %llu out of range", len);
				break;
			}
			if (left - 20 < len) {
				scan_fail(r, src->path, pos, "truncated mapping record (%llu bytes left)", left);
				break;
			}
			const uint8_t *name = d + pos + 20;
			uint32_t i = 0;
			while (i < len && is_word(name[i]))
				i++;
			if (i < len) {
				scan_fail(r, src->path, pos + 20 + i,
					  "mapping name byte 0x%02llx is not an identifier character",
					  name[i]);
				break;
			}
			if (id == VMS_ST_DROPPED_ID) {
				scan_fail(r, src->path, pos + 8, "mapping record for the reserved id %llu", id);
				break;
			}
			int ty = intern(src, r, &names, name, len);
			if (ty < 0) {
				rc = -1;
				break;
			}
			if (r->nr_maps == cap_maps) {
				cap_maps = cap_maps ? cap_maps * 2 : 256;
				struct vms_st_map *nm = realloc(r->maps, cap_maps * sizeof *nm);
				if (!nm) {
					rc = -1;
					break;
				}
				r->maps = nm;
			}
			r->maps[r->nr_maps++] = (struct vms_st_map){ id, (uint32_t)ty };
			if (id < VMS_ST_SMALL_IDS && id + 1 > max_small)
				max_small = (uint32_t)id + 1;
			pos += 20 + (size_t)len;
		} else if (type == VMS_ST_REC_EVENT) {
			if (left < 8 + VMS_ST_EVENT_HEADER) {
				scan_fail(r, src->path, pos, "truncated event record (%llu bytes left)", left);
				break;
			}
			uint64_t id = rd64(d + pos + 8);
			uint32_t len = rd32(d + pos + 24);
			if (len < VMS_ST_EVENT_HEADER) {
				scan_fail(r, src->path, pos + 24, "event record length %llu below 24", len);
				break;
			}
			if (left - 8 < len) {
				scan_fail(r, src->path, pos, "event record of %llu bytes runs past the end of the file",
					  len);
				break;
			}
			if (id == VMS_ST_DROPPED_ID) {
				if (len != VMS_ST_EVENT_HEADER + 8) {
					scan_fail(r, src->path, pos + 24,
						  "dropped-events record length %llu is not 32", len);
					break;
				}
				src->meta.lost_events += rd64(d + pos + 32);
				if (r->dropped_type == UINT32_MAX) {
					int ty = add_type(src, r, dropped_desc.name, 13, VMS_K_OTHER, &dropped_desc);
					if (ty < 0) {
						rc = -1;
						break;
					}
					r->dropped_type = (uint32_t)ty;
				}
			}
			pos += 8 + (size_t)len;
		} else {
			scan_fail(r, src->path, pos, "unknown record type %llu", type);
			break;
		}
	}
	r->good_end = pos < size ? pos : size;
	free(names.slot);
	if (rc == 0 && r->bad_status && !r->bad_msg)
		rc = -1;
	if (rc == 0) {
		r->nr_small = max_small;
		r->small = calloc(max_small ? max_small : 1, sizeof *r->small);
		if (!r->small)
			rc = -1;
	}
	return rc;
}

/* ---- reading ---- */

static uint32_t st_nr_streams(struct vms_source *src)
{
	(void)src;
	return 1;
}

static inline uint32_t big_slot(uint64_t id, uint32_t cap)
{
	id ^= id >> 33;
	id *= 0xff51afd7ed558ccdull;
	id ^= id >> 33;
	return (uint32_t)id & (cap - 1);
}

/* The slot of id in the big table (its own, or the empty one where it would go). */
static inline struct vms_st_map *big_find(const struct vms_st_reader *r, uint64_t id)
{
	uint32_t h = big_slot(id, r->cap_big);
	while (r->big[h].type != UINT32_MAX && r->big[h].id != id)
		h = (h + 1) & (r->cap_big - 1);
	return &r->big[h];
}

static int set_id(struct vms_st_reader *r, uint64_t id, uint32_t type)
{
	if (id < r->nr_small) {
		r->small[id] = type + 1;
		return 0;
	}
	if ((r->nr_big + 1) * 2 > r->cap_big) {
		/* bounded by the number of mapping records, known at open */
		uint32_t cap = r->cap_big ? r->cap_big * 2 : 64;
		struct vms_st_map *old = r->big, *nb = malloc(cap * sizeof *nb);
		if (!nb)
			return -1;
		for (uint32_t i = 0; i < cap; i++)
			nb[i].type = UINT32_MAX;
		uint32_t oc = r->cap_big;
		r->big = nb;
		r->cap_big = cap;
		for (uint32_t i = 0; i < oc; i++)
			if (old[i].type != UINT32_MAX)
				*big_find(r, old[i].id) = old[i];
		free(old);
	}
	struct vms_st_map *e = big_find(r, id);
	if (e->type == UINT32_MAX)
		r->nr_big++;
	*e = (struct vms_st_map){ id, type };
	return 0;
}

static inline int lookup_id(const struct vms_st_reader *r, uint64_t id, uint32_t *type)
{
	if (id < r->nr_small) {
		uint32_t t = r->small[id];
		*type = t - 1;
		return t != 0;
	}
	if (!r->nr_big)
		return 0;
	const struct vms_st_map *e = big_find(r, id);
	*type = e->type;
	return e->type != UINT32_MAX;
}

static int fail(struct vms_source *src, struct vms_st_reader *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(struct vms_source *src, struct vms_st_reader *r, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vms_error_vset(&src->err, status, fmt, ap);
	va_end(ap);
	r->failed = true;
	return src->err.status ? src->err.status : status;
}

/* out of memory reading the record at pos: said once, and the reader stops */
static int fail_nomem(struct vms_source *src, struct vms_st_reader *r, size_t pos)
{
	vms_error_nomem_at(&src->err, src->path, pos);
	r->failed = true;
	return src->err.status;
}

static int copy_str(struct vms_st_reader *r, int k, const uint8_t *s, uint64_t n)
{
	if (n + 1 > r->sbuf_cap[k]) {
		/* grows to the longest string seen, which the file size bounds */
		size_t cap = (size_t)n + 1 < 64 ? 64 : (size_t)n + 1;
		char *b = realloc(r->sbuf[k], cap);
		if (!b)
			return -1;
		r->sbuf[k] = b;
		r->sbuf_cap[k] = cap;
	}
	memcpy(r->sbuf[k], s, (size_t)n);
	r->sbuf[k][n] = '\0';
	return 0;
}

static int st_next(struct vms_source *src, uint32_t stream, struct vms_event *ev)
{
	struct vms_st_reader *r = src->impl;
	if (stream != 0)
		return vms_error_set(&src->err, VMS_ERR_USAGE, "%s: no stream %u", src->path, stream);
	if (r->failed)
		return src->err.status ? src->err.status : VMS_ERR_INTERNAL;
	const uint8_t *d = r->data;
	for (;;) {
		size_t pos = r->pos;
		if (pos >= r->good_end) {
			r->have_cur = false;
			if (r->bad_msg)
				return fail(src, r, r->bad_status, "%s", r->bad_msg);
			return 0;
		}
		/* framing below was checked by scan() for every record before good_end */
		uint64_t rtype = rd64(d + pos);
		if (rtype == VMS_ST_REC_MAPPING) {
			uint64_t id = rd64(d + pos + 8);
			uint32_t len = rd32(d + pos + 16);
			if (r->map_pos >= r->nr_maps)
				return fail(src, r, VMS_ERR_INTERNAL, "%s: mapping records changed at byte offset %zu",
					    src->path, pos);
			const struct vms_st_map *m = &r->maps[r->map_pos++];
			if (set_id(r, id, m->type) < 0)
				return fail_nomem(src, r, pos);
			r->pos = pos + 20 + len;
			continue;
		}
		uint64_t id = rd64(d + pos + 8);
		uint64_t ts = rd64(d + pos + 16);
		uint32_t len = rd32(d + pos + 24);
		uint32_t pid = rd32(d + pos + 28);
		const uint8_t *body = d + pos + 32;
		uint32_t blen = len - VMS_ST_EVENT_HEADER;
		uint32_t type;
		if (id == VMS_ST_DROPPED_ID)
			type = r->dropped_type;
		else if (!lookup_id(r, id, &type))
			return fail(src, r, VMS_ERR_FORMAT,
				    "%s: event id %llu has no mapping record before it at byte offset %zu",
				    src->path, (unsigned long long)id, pos + 8);
		const struct vms_st_desc *desc = r->types[type].desc;
		uint32_t nargs = 0;
		if (desc) {
			uint32_t off = 0;
			for (uint32_t i = 0; i < desc->nargs; i++) {
				if (desc->str_mask & (1u << i)) {
					if (blen - off < 4)
						goto short_args;
					uint32_t sl = rd32(body + off);
					off += 4;
					if (blen - off < sl)
						goto short_args;
					r->arg[i] = sl;
					r->arg_str[i] = body + off;
					off += sl;
				} else {
					if (blen - off < 8)
						goto short_args;
					r->arg[i] = rd64(body + off);
					off += 8;
				}
			}
			if (off != blen)
				return fail(src, r, VMS_ERR_FORMAT,
					    "%s: event %s has %u argument bytes but its arguments in the events "
					    "file take %u at byte offset %zu",
					    src->path, desc->name, blen, off, pos + 24);
			nargs = desc->nargs;
		}

		memset(ev, 0, sizeof *ev);
		ev->ts = ts;
		ev->tid = -1;
		ev->cpu = 0;
		ev->stream = 0;
		ev->type = type;
		ev->kind = src->meta.type_kinds[type];
		uint32_t nstr = 0;
		for (uint32_t i = 0; i < nargs; i++) {
			if (i < 5)
				ev->f[i] = r->arg[i];
			if ((desc->str_mask & (1u << i)) && nstr < 2 && r->decode) {
				if (copy_str(r, (int)nstr, r->arg_str[i], r->arg[i]) < 0)
					return fail_nomem(src, r, pos);
				ev->s[nstr] = r->sbuf[nstr];
				nstr++;
			}
		}
		r->at = (struct vms_st_at){ pos, r->map_pos, r->lost_pending, r->have_prev,
					    r->prev_ts };
		r->told = true;
		if (r->have_prev && ts < r->prev_ts)
			ev->flags |= VMS_EVF_TIME_BACKWARDS;
		if (id == VMS_ST_DROPPED_ID) {
			r->lost_pending = true;
		} else if (r->lost_pending) {
			ev->flags |= VMS_EVF_LOST_BEFORE;
			r->lost_pending = false;
		}
		r->cur_delta = r->have_prev ? (int64_t)(ts - r->prev_ts) : 0;
		r->prev_ts = ts;
		r->have_prev = true;
		r->have_cur = true;
		r->cur_type = type;
		r->cur_ts = ts;
		r->cur_pid = pid;
		r->cur_arg_bytes = blen;
		r->cur_nargs = nargs;
		r->pos = pos + 8 + (size_t)len;
		return 1;
short_args:
		return fail(src, r, VMS_ERR_FORMAT,
			    "%s: event %s: its arguments in the events file run past its record of %u "
			    "argument bytes at byte offset %zu",
			    src->path, desc->name, blen, pos + 24);
	}
}

uint64_t vms_st_record_size(const struct vms_st_reader *r, size_t at, uint64_t *type)
{
	*type = rd64(r->data + at);
	return *type == VMS_ST_REC_MAPPING ? 20 + (uint64_t)rd32(r->data + at + 16)
					   : 8 + (uint64_t)rd32(r->data + at + 24);
}

int vms_st_apply_maps(struct vms_st_reader *r, uint32_t upto)
{
	memset(r->small, 0, (r->nr_small ? r->nr_small : 1) * sizeof *r->small);
	for (uint32_t i = 0; i < r->cap_big; i++)
		r->big[i].type = UINT32_MAX;
	r->nr_big = 0;
	for (uint32_t i = 0; i < upto && i < r->nr_maps; i++)
		if (set_id(r, r->maps[i].id, r->maps[i].type) < 0)
			return -1;
	return 0;
}

static int st_rewind(struct vms_source *src)
{
	struct vms_st_reader *r = src->impl;
	r->pos = VMS_ST_HEADER_SIZE;
	r->map_pos = 0;
	r->failed = false;
	r->lost_pending = false;
	r->have_prev = false;
	r->have_cur = false;
	r->told = false;
	vms_st_apply_maps(r, 0); /* (no mapping applied: cannot fail) */
	vms_error_clear(&src->err);
	return 0;
}

static void st_set_wanted(struct vms_source *src, const bool *wanted)
{
	struct vms_st_reader *r = src->impl;
	r->decode = !wanted || wanted[VMS_K_TRACEPOINT];
}

static void st_close(struct vms_source *src)
{
	if (!src)
		return;
	struct vms_st_reader *r = src->impl;
	if (r) {
		if (r->data && r->size)
			munmap((void *)r->data, r->size);
		free(r->bad_msg);
		vms_st_events_free(&r->events);
		free(r->types);
		free(r->maps);
		free(r->marks);
		free(r->small);
		free(r->big);
		free(r->sbuf[0]);
		free(r->sbuf[1]);
		free(r);
	}
	vms_trace_meta_free(&src->meta);
	free(src->path);
	free(src);
}

static const struct vms_source_ops st_ops = {
	.name = "simpletrace",
	.nr_streams = st_nr_streams,
	.next = st_next,
	.rewind = st_rewind,
	.set_wanted = st_set_wanted,
	.format_event = vms_st_format_event,
	.tell = vms_st_tell,
	.seek = vms_st_seek,
	.close = st_close,
};

struct vms_source *vms_simpletrace_open(const char *path, const char *events_file,
					struct vms_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		vms_error_open(err, path, errno, 0);
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return NULL;   /* a directory or a device: not a simpletrace file */
	}
	uint8_t hdr[VMS_ST_HEADER_SIZE];
	ssize_t got = pread(fd, hdr, sizeof hdr, 0);
	if (got < 16 || rd64(hdr) != VMS_ST_HEADER_EVENT_ID || rd64(hdr + 8) != VMS_ST_MAGIC) {
		close(fd);
		return NULL;   /* not this format */
	}
	if (got < (ssize_t)sizeof hdr) {
		close(fd);
		vms_error_set(err, VMS_ERR_FORMAT, "%s: truncated simpletrace header at byte offset 16",
			      path);
		return NULL;
	}
	uint64_t version = rd64(hdr + 16);
	if (version != VMS_ST_VERSION) {
		close(fd);
		vms_error_set(err, VMS_ERR_FORMAT,
			      "%s: simpletrace version %llu is not supported (only 4) at byte offset 16",
			      path, (unsigned long long)version);
		return NULL;
	}

	struct vms_source *src = calloc(1, sizeof *src);
	struct vms_st_reader *r = calloc(1, sizeof *r);
	if (!src || !r || !(src->path = strdup(path))) {
		free(src ? src->path : NULL);
		free(src);
		free(r);
		close(fd);
		vms_error_nomem_at(err, path, 0);
		return NULL;
	}
	src->ops = &st_ops;
	src->impl = r;
	r->dropped_type = UINT32_MAX;
	r->decode = true;
	r->size = (size_t)st.st_size;
	void *map = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		r->size = 0;
		if (errno == ENOMEM)
			vms_error_open(err, path, ENOMEM, 0);
		else
			vms_error_set(err, VMS_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
		st_close(src);
		return NULL;
	}
	r->data = map;
	madvise(map, r->size, MADV_SEQUENTIAL);

	if (events_file) {
		if (vms_st_events_load(&r->events, events_file, err) < 0) {
			st_close(src);
			return NULL;
		}
		r->have_events = true;
	}
	struct vms_trace_meta *m = &src->meta;
	snprintf(m->format, sizeof m->format, "QEMU simpletrace v4");
	snprintf(m->clock, sizeof m->clock, "mono");
	m->ts_in_ns = true;
	m->nr_cpus = 1;
	if (scan(src, r) < 0) {
		vms_error_nomem_at(err, path, r->good_end); /* (scan stopped at that record) */
		st_close(src);
		return NULL;
	}
	st_rewind(src);
	return src;
}
