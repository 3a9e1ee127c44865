/* trace.dat v7 writer: metadata sections and options around the flyrecord spool. See
 * tracedat_writer.h for the layout and the sources it follows. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/flyrecord_spool.h"
#include "output/tracedat_writer.h"

/* A growable byte string; `oom` latches so that callers check once. */
struct bytes {
	uint8_t *p;
	size_t n, cap;
	bool oom;
};

static void b_put(struct bytes *b, const void *data, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n)
			cap *= 2;
		uint8_t *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->n, data, n);
	b->n += n;
}

static void b_u16(struct bytes *b, uint16_t v) { b_put(b, &v, 2); }
static void b_u32(struct bytes *b, uint32_t v) { b_put(b, &v, 4); }
static void b_u64(struct bytes *b, uint64_t v) { b_put(b, &v, 8); }
static void b_str(struct bytes *b, const char *s) { b_put(b, s, strlen(s) + 1); }

/* Section descriptions, as trace-cmd's string table for this layout holds them. */
static const char strings_table[] = "headers\0ftrace events\0events format\0kallsyms\0printk\0"
				    "command lines\0options\0buffer flyrecord \0options\0strings";
enum {
	DESC_HEADERS = 0, DESC_FTRACE = 8, DESC_EVENTS = 22, DESC_KALLSYMS = 36, DESC_PRINTK = 45,
	DESC_CMDLINES = 52, DESC_OPTIONS = 66, DESC_FLYRECORD = 74, DESC_OPTIONS2 = 92,
	DESC_STRINGS = 100,
};
#define SECTION_FL_COMPRESS 1

struct fmt_system {
	char *name;
	uint32_t count;
	struct bytes formats; /* count x {u64 size, text} */
};

struct vms_tdw {
	struct vms_tdw_config cfg;
	char *path, *header_page, *header_event, *buffer_clock, *trace_clock, *uname, *version;
	struct vms_spool *spool;
	struct vms_codec *meta_codec;   /* compresses the metadata sections */
	struct fmt_system *sys;
	uint32_t nr_sys;
	struct bytes cmdlines;
	struct bytes kallsyms;      /* the kallsyms section's text ("ADDRESS TYPE NAME" lines) */
	struct bytes options;
	/* file being assembled */
	int fd;
	uint64_t off;
};

static char *dup_or_null(const char *s, bool *oom)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*oom = true;
	return d;
}

int vms_tdw_open(struct vms_tdw **out, const struct vms_tdw_config *cfg, struct vms_error *err)
{
	*out = NULL;
	const uint16_t probe = 1;
	if (*(const uint8_t *)&probe != 1)
		return vms_error_set(err, VMS_ERR_INTERNAL, "trace.dat writer: big-endian hosts "
				     "are not supported");
	if (!cfg->path || !cfg->header_page || !cfg->header_event || !cfg->buffer_clock)
		return vms_error_set(err, VMS_ERR_USAGE, "trace.dat writer: incomplete configuration");
	struct vms_tdw *w = calloc(1, sizeof *w);
	if (!w)
		return vms_error_set(err, VMS_ERR_NOMEM, "trace.dat writer: out of memory");
	w->cfg = *cfg;
	w->fd = -1;
	if (!w->cfg.page_size)
		w->cfg.page_size = 4096;
	if (!w->cfg.chunk_pages)
		w->cfg.chunk_pages = 16;
	bool oom = false;
	w->path = dup_or_null(cfg->path, &oom);
	w->header_page = dup_or_null(cfg->header_page, &oom);
	w->header_event = dup_or_null(cfg->header_event, &oom);
	w->buffer_clock = dup_or_null(cfg->buffer_clock, &oom);
	w->trace_clock = dup_or_null(cfg->trace_clock, &oom);
	w->uname = dup_or_null(cfg->uname, &oom);
	w->version = dup_or_null(cfg->version, &oom);
	w->meta_codec = vms_codec_new(cfg->compression, 0);
	if (oom || !w->meta_codec) {
		vms_tdw_discard(w);
		return vms_error_set(err, VMS_ERR_NOMEM, "trace.dat writer: out of memory");
	}
	char *tmp = strdup(cfg->path);
	if (!tmp) {
		vms_tdw_discard(w);
		return vms_error_set(err, VMS_ERR_NOMEM, "trace.dat writer: out of memory");
	}
	int rc = vms_spool_open(&w->spool, dirname(tmp), w->cfg.nr_cpus, w->cfg.page_size,
				w->cfg.chunk_pages, cfg->compression, cfg->level, err);
	free(tmp);
	if (rc) {
		vms_tdw_discard(w);
		return rc;
	}
	*out = w;
	return VMS_OK;
}

static int nomem(struct vms_error *err)
{
	return vms_error_set(err, VMS_ERR_NOMEM, "trace.dat writer: out of memory");
}

int vms_tdw_add_event_format(struct vms_tdw *w, const char *system, const char *format,
			     struct vms_error *err)
{
	struct fmt_system *s = NULL;
	for (uint32_t i = 0; i < w->nr_sys; i++)
		if (!strcmp(w->sys[i].name, system))
			s = &w->sys[i];
	if (!s) {
		struct fmt_system *n = realloc(w->sys, (w->nr_sys + 1) * sizeof *n);
		if (!n)
			return nomem(err);
		w->sys = n;
		s = &w->sys[w->nr_sys];
		memset(s, 0, sizeof *s);
		s->name = strdup(system);
		if (!s->name)
			return nomem(err);
		w->nr_sys++;
	}
	size_t len = strlen(format);
	b_u64(&s->formats, len);
	b_put(&s->formats, format, len);
	s->count++;
	return s->formats.oom ? nomem(err) : VMS_OK;
}

int vms_tdw_add_cmdline(struct vms_tdw *w, int32_t pid, const char *comm, struct vms_error *err)
{
	char line[64];
	int n = snprintf(line, sizeof line, "%d %.16s\n", pid, comm);
	b_put(&w->cmdlines, line, (size_t)n);
	return w->cmdlines.oom ? nomem(err) : VMS_OK;
}

int vms_tdw_add_kallsyms(struct vms_tdw *w, const char *lines, struct vms_error *err)
{
	b_put(&w->kallsyms, lines, strlen(lines));
	return w->kallsyms.oom ? nomem(err) : VMS_OK;
}

int vms_tdw_add_option(struct vms_tdw *w, uint16_t id, const void *data, uint32_t size,
		       struct vms_error *err)
{
	b_u16(&w->options, id);
	b_u32(&w->options, size);
	b_put(&w->options, data, size);
	return w->options.oom ? nomem(err) : VMS_OK;
}

int vms_tdw_add_tsc2nsec(struct vms_tdw *w, uint32_t mult, uint32_t shift, uint64_t offset,
			 struct vms_error *err)
{
	uint8_t d[16];
	memcpy(d, &mult, 4);
	memcpy(d + 4, &shift, 4);
	memcpy(d + 8, &offset, 8);
	return vms_tdw_add_option(w, VMS_TDW_OPT_TSC2NSEC, d, sizeof d, err);
}

int vms_tdw_add_guest(struct vms_tdw *w, const char *name, uint64_t guest_trace_id,
		      uint32_t nr_vcpus, const int32_t *host_tids, struct vms_error *err)
{
	struct bytes b = { 0 };
	b_str(&b, name);
	b_u64(&b, guest_trace_id);
	b_u32(&b, nr_vcpus);
	for (uint32_t i = 0; i < nr_vcpus; i++) {
		b_u32(&b, i);
		b_u32(&b, (uint32_t)host_tids[i]);
	}
	int rc = b.oom ? nomem(err) : vms_tdw_add_option(w, VMS_TDW_OPT_GUEST, b.p, (uint32_t)b.n, err);
	free(b.p);
	return rc;
}

int vms_tdw_add_time_shift(struct vms_tdw *w, uint64_t peer_trace_id, uint32_t flags,
			   uint32_t nr_cpus, const struct vms_tdw_ts_cpu *cpus,
			   struct vms_error *err)
{
	struct bytes b = { 0 };
	b_u64(&b, peer_trace_id);
	b_u32(&b, flags);
	b_u32(&b, nr_cpus);
	for (uint32_t c = 0; c < nr_cpus; c++) {
		b_u32(&b, cpus[c].n);
		for (uint32_t i = 0; i < cpus[c].n; i++)
			b_u64(&b, cpus[c].time[i]);
		for (uint32_t i = 0; i < cpus[c].n; i++)
			b_u64(&b, (uint64_t)cpus[c].offset[i]);
		for (uint32_t i = 0; i < cpus[c].n; i++)
			b_u64(&b, cpus[c].scaling[i]);
	}
	/* the fraction bits trailer (trace-cmd >= 3.0 reads it when bytes remain) */
	for (uint32_t c = 0; c < nr_cpus; c++)
		for (uint32_t i = 0; i < cpus[c].n; i++)
			b_u64(&b, cpus[c].frac[i]);
	int rc = b.oom ? nomem(err)
		       : vms_tdw_add_option(w, VMS_TDW_OPT_TIME_SHIFT, b.p, (uint32_t)b.n, err);
	free(b.p);
	return rc;
}

int vms_tdw_event(struct vms_tdw *w, uint32_t cpu, uint64_t ts, const void *payload,
		  uint32_t len, struct vms_error *err)
{
	return vms_spool_event(w->spool, cpu, ts, payload, len, err);
}

uint64_t vms_tdw_events(const struct vms_tdw *w)
{
	return vms_spool_events(w->spool);
}

/* ---- assembling the file ---- */

static int f_write(struct vms_tdw *w, const void *data, size_t n, struct vms_error *err)
{
	const uint8_t *p = data;
	size_t left = n;
	while (left) {
		ssize_t r = write(w->fd, p, left);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return vms_error_set(err, VMS_ERR_IO, "%s: write failed: %s", w->path,
					     strerror(errno));
		}
		p += r;
		left -= (size_t)r;
	}
	w->off += n;
	return VMS_OK;
}

static int f_patch_u64(struct vms_tdw *w, uint64_t at, uint64_t v, struct vms_error *err)
{
	if (pwrite(w->fd, &v, 8, (off_t)at) != 8)
		return vms_error_set(err, VMS_ERR_IO, "%s: write failed: %s", w->path,
				     strerror(errno ? errno : EIO));
	return VMS_OK;
}

static int f_pad_to(struct vms_tdw *w, uint64_t align, struct vms_error *err)
{
	static const uint8_t zero[4096];
	while (w->off % align) {
		uint64_t n = align - w->off % align;
		int rc = f_write(w, zero, n > sizeof zero ? sizeof zero : (size_t)n, err);
		if (rc)
			return rc;
	}
	return VMS_OK;
}

/* One section: header, then the payload (compressed as one block when the file is). Returns
 * the section's offset in *at. */
static int f_section(struct vms_tdw *w, uint16_t id, uint32_t desc, bool compressible,
		     const struct bytes *data, uint64_t *at, struct vms_error *err)
{
	bool compress = compressible && w->cfg.compression != VMS_TDW_NONE;
	struct bytes h = { 0 };
	uint8_t *cbuf = NULL;
	size_t clen = 0;
	if (compress) {
		size_t cap = vms_codec_bound(w->meta_codec, data->n);
		cbuf = malloc(cap ? cap : 1);
		if (!cbuf)
			return nomem(err);
		clen = vms_codec_compress(w->meta_codec, cbuf, cap, data->p, data->n);
		if (!clen && data->n) {
			free(cbuf);
			return vms_error_set(err, VMS_ERR_INTERNAL, "%s: compression failed", w->path);
		}
	}
	b_u16(&h, id);
	b_u16(&h, compress ? SECTION_FL_COMPRESS : 0);
	b_u32(&h, desc);
	b_u64(&h, compress ? clen + 8 : data->n);
	if (compress) {
		b_u32(&h, (uint32_t)clen);
		b_u32(&h, (uint32_t)data->n);
	}
	int rc = h.oom ? nomem(err) : VMS_OK;
	if (at)
		*at = w->off;
	if (!rc)
		rc = f_write(w, h.p, h.n, err);
	if (!rc)
		rc = f_write(w, compress ? cbuf : data->p, compress ? clen : data->n, err);
	free(h.p);
	free(cbuf);
	return rc;
}

static void opt_u64(struct bytes *b, uint16_t id, uint64_t v)
{
	b_u16(b, id);
	b_u32(b, 8);
	b_u64(b, v);
}

static void opt_str(struct bytes *b, uint16_t id, const char *s)
{
	b_u16(b, id);
	b_u32(b, (uint32_t)strlen(s) + 1);
	b_str(b, s);
}

static int assemble(struct vms_tdw *w, struct vms_error *err)
{
	int rc;
	struct bytes b = { 0 };
	uint64_t sec[22] = { 0 };

	/* the initial format */
	b_put(&b, "\x17\x08\x44tracing", 10);
	b_str(&b, "7");
	uint8_t endian_long[2] = { 0, 8 };
	b_put(&b, endian_long, 2);
	b_u32(&b, w->cfg.page_size);
	b_str(&b, vms_codec_name(w->cfg.compression));
	b_str(&b, vms_codec_version(w->cfg.compression));
	uint64_t first_opt_ptr = b.n;
	b_u64(&b, 0);
	rc = b.oom ? nomem(err) : f_write(w, b.p, b.n, err);
	if (rc)
		goto out;

	/* headers */
	b.n = 0;
	b_str(&b, "header_page");
	b_u64(&b, strlen(w->header_page));
	b_put(&b, w->header_page, strlen(w->header_page));
	b_str(&b, "header_event");
	b_u64(&b, strlen(w->header_event));
	b_put(&b, w->header_event, strlen(w->header_event));
	rc = b.oom ? nomem(err) : f_section(w, VMS_TDW_OPT_HEADER_INFO, DESC_HEADERS, true, &b,
					     &sec[VMS_TDW_OPT_HEADER_INFO], err);
	if (rc)
		goto out;
	/* ftrace events: none */
	b.n = 0;
	b_u32(&b, 0);
	rc = f_section(w, VMS_TDW_OPT_FTRACE_EVENTS, DESC_FTRACE, true, &b,
		       &sec[VMS_TDW_OPT_FTRACE_EVENTS], err);
	if (rc)
		goto out;
	/* event formats */
	b.n = 0;
	b_u32(&b, w->nr_sys);
	for (uint32_t i = 0; i < w->nr_sys; i++) {
		b_str(&b, w->sys[i].name);
		b_u32(&b, w->sys[i].count);
		b_put(&b, w->sys[i].formats.p, w->sys[i].formats.n);
	}
	rc = b.oom ? nomem(err) : f_section(w, VMS_TDW_OPT_EVENT_FORMATS, DESC_EVENTS, true, &b,
					     &sec[VMS_TDW_OPT_EVENT_FORMATS], err);
	if (rc)
		goto out;
	/* kallsyms (u32 size, then the text), printk: empty */
	b.n = 0;
	b_u32(&b, (uint32_t)w->kallsyms.n);
	b_put(&b, w->kallsyms.p, w->kallsyms.n);
	rc = b.oom ? nomem(err) : f_section(w, VMS_TDW_OPT_KALLSYMS, DESC_KALLSYMS, true, &b,
					     &sec[VMS_TDW_OPT_KALLSYMS], err);
	b.n = 0;
	b_u32(&b, 0);
	if (!rc)
		rc = f_section(w, VMS_TDW_OPT_PRINTK, DESC_PRINTK, true, &b, &sec[VMS_TDW_OPT_PRINTK], err);
	if (rc)
		goto out;
	/* saved command lines */
	b.n = 0;
	b_u64(&b, w->cmdlines.n);
	b_put(&b, w->cmdlines.p, w->cmdlines.n);
	rc = b.oom ? nomem(err) : f_section(w, VMS_TDW_OPT_CMDLINES, DESC_CMDLINES, true, &b,
					     &sec[VMS_TDW_OPT_CMDLINES], err);
	if (rc)
		goto out;

	/* first options section */
	b.n = 0;
	for (uint16_t id = VMS_TDW_OPT_HEADER_INFO; id <= VMS_TDW_OPT_CMDLINES; id++)
		opt_u64(&b, id, sec[id]);
	if (w->trace_clock)
		opt_str(&b, VMS_TDW_OPT_TRACECLOCK, w->trace_clock);
	if (w->uname)
		opt_str(&b, VMS_TDW_OPT_UNAME, w->uname);
	if (w->version)
		opt_str(&b, VMS_TDW_OPT_VERSION, w->version);
	if (w->cfg.trace_id)
		opt_u64(&b, VMS_TDW_OPT_TRACEID, w->cfg.trace_id);
	b_put(&b, w->options.p, w->options.n);
	b_u16(&b, VMS_TDW_OPT_CPUCOUNT);
	b_u32(&b, 4);
	b_u32(&b, w->cfg.nr_cpus);
	b_u16(&b, VMS_TDW_OPT_DONE);
	b_u32(&b, 8);
	uint64_t done1_at = b.n; /* patched with the second section's offset */
	b_u64(&b, 0);
	uint64_t opt1 = 0;
	rc = b.oom ? nomem(err) : f_section(w, VMS_TDW_OPT_DONE, DESC_OPTIONS, false, &b, &opt1, err);
	if (rc)
		goto out;
	done1_at += opt1 + 16;

	/* flyrecord: the section header, then each CPU's data at a page-aligned offset */
	uint64_t fly = w->off;
	b.n = 0;
	b_u16(&b, VMS_TDW_OPT_BUFFER);
	b_u16(&b, w->cfg.compression != VMS_TDW_NONE ? SECTION_FL_COMPRESS : 0);
	b_u32(&b, DESC_FLYRECORD);
	b_u64(&b, 0);
	rc = b.oom ? nomem(err) : f_write(w, b.p, b.n, err);
	if (rc)
		goto out;
	struct bytes buffer_opt = { 0 };
	uint32_t with_data = 0;
	for (uint32_t c = 0; c < w->cfg.nr_cpus; c++) {
		struct vms_spool_cpu_info ci;
		vms_spool_cpu_info(w->spool, c, &ci);
		with_data += ci.stored_bytes != 0;
	}
	b_u64(&buffer_opt, fly);
	b_str(&buffer_opt, "");
	b_str(&buffer_opt, w->buffer_clock);
	b_u32(&buffer_opt, w->cfg.page_size);
	b_u32(&buffer_opt, with_data);
	for (uint32_t c = 0; c < w->cfg.nr_cpus && !rc; c++) {
		struct vms_spool_cpu_info ci;
		vms_spool_cpu_info(w->spool, c, &ci);
		if (!ci.stored_bytes)
			continue;
		rc = f_pad_to(w, w->cfg.page_size, err);
		if (rc)
			break;
		b_u32(&buffer_opt, c);
		b_u64(&buffer_opt, w->off);
		/* trace-cmd's size of compressed data counts the chunks, not the u32 chunk count
		 * before them (tracecmd_compress_copy_from; the reader adds it back): counting it
		 * made a CPU whose data ends within 4 bytes of a page overlap the next one */
		b_u64(&buffer_opt, ci.stored_bytes - (w->cfg.compression != VMS_TDW_NONE ? 4 : 0));
		rc = vms_spool_copy_cpu(w->spool, c, w->fd, err);
		w->off += ci.stored_bytes;
	}
	if (!rc && buffer_opt.oom)
		rc = nomem(err);
	if (!rc)
		rc = f_patch_u64(w, fly + 8, w->off - fly - 16, err);
	if (rc) {
		free(buffer_opt.p);
		goto out;
	}

	/* second options section: the buffer */
	b.n = 0;
	b_u16(&b, VMS_TDW_OPT_BUFFER);
	b_u32(&b, (uint32_t)buffer_opt.n);
	b_put(&b, buffer_opt.p, buffer_opt.n);
	free(buffer_opt.p);
	b_u16(&b, VMS_TDW_OPT_DONE);
	b_u32(&b, 8);
	b_u64(&b, 0);
	uint64_t opt2;
	rc = b.oom ? nomem(err) : f_section(w, VMS_TDW_OPT_DONE, DESC_OPTIONS2, false, &b, &opt2, err);
	if (!rc)
		rc = f_patch_u64(w, done1_at, opt2, err);
	if (rc)
		goto out;

	/* the strings */
	b.n = 0;
	b_put(&b, strings_table, sizeof strings_table);
	rc = b.oom ? nomem(err) : f_section(w, VMS_TDW_OPT_STRINGS, DESC_STRINGS, true, &b, NULL, err);
	if (!rc)
		rc = f_patch_u64(w, first_opt_ptr, opt1, err);
out:
	free(b.p);
	return rc;
}

static void free_writer(struct vms_tdw *w)
{
	vms_spool_free(w->spool);
	vms_codec_free(w->meta_codec);
	for (uint32_t i = 0; i < w->nr_sys; i++) {
		free(w->sys[i].name);
		free(w->sys[i].formats.p);
	}
	free(w->sys);
	free(w->cmdlines.p);
	free(w->kallsyms.p);
	free(w->options.p);
	free(w->path);
	free(w->header_page);
	free(w->header_event);
	free(w->buffer_clock);
	free(w->trace_clock);
	free(w->uname);
	free(w->version);
	free(w);
}

int vms_tdw_close(struct vms_tdw *w, struct vms_error *err)
{
	if (!w)
		return VMS_OK;
	int rc = vms_spool_finish(w->spool, err);
	/* written to a new file beside the destination (mkstemp: O_CREAT | O_EXCL, so never
	 * through a symlink planted there), then renamed over it: an existing PATH, whatever it
	 * is (a symlink to a file the user cares about, say), is replaced, never written through */
	size_t pl = strlen(w->path);
	char *tmp = malloc(pl + 8);
	if (!rc && !tmp)
		rc = nomem(err);
	if (!rc) {
		memcpy(tmp, w->path, pl);
		memcpy(tmp + pl, ".XXXXXX", 8);
		w->fd = mkostemp(tmp, O_CLOEXEC);
		if (w->fd < 0)
			rc = vms_error_set(err, errno == ENAMETOOLONG ? VMS_ERR_USAGE : VMS_ERR_IO,
					   "%s: cannot create: %s", w->path, strerror(errno));
		else if (fchmod(w->fd, 0644) != 0)
			rc = vms_error_set(err, VMS_ERR_IO, "%s: cannot create: %s", w->path,
					   strerror(errno));
	}
	if (!rc)
		rc = assemble(w, err);
	if (w->fd >= 0) {
		if (close(w->fd) && !rc)
			rc = vms_error_set(err, VMS_ERR_IO, "%s: write failed: %s", w->path,
					   strerror(errno));
		if (!rc && rename(tmp, w->path) != 0)
			rc = vms_error_set(err, errno == ENAMETOOLONG ? VMS_ERR_USAGE : VMS_ERR_IO,
					   "%s: cannot create: %s", w->path, strerror(errno));
		if (rc)
			unlink(tmp);
	}
	free(tmp);
	free_writer(w);
	return rc;
}

void vms_tdw_discard(struct vms_tdw *w)
{
	if (w)
		free_writer(w);
}
