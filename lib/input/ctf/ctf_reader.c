/* The CTF source: a vmstrace trace directory, one vms stream per stream file.
 *
 * At open, the metadata is parsed and checked, and every stream file's packet headers are
 * walked once (headers only): magic, UUID, sizes within the file. That gives the CPU count
 * and the drop totals, and refuses a damaged trace before any analysis. A file cut in the
 * middle of a packet is damage, unless the trace did not end cleanly (no .vmst-closed: the
 * traced process was killed while writing): then the complete packets are read and the
 * source says meta.ended_abruptly. Reading keeps one packet per stream in memory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctf.h"
#include "vmscope/source.h"

#define CTF_MAGIC 0xC1FC1FC1u
#define MAX_PACKET (64u << 20)
#define MAX_STREAMS 65536

struct __attribute__((packed)) pkt {
	uint32_t magic;
	uint8_t uuid[16];
	uint32_t stream_id;
	uint64_t ts_begin, ts_end, content_size, packet_size, seq, discarded;
	uint32_t cpu_id;
	int32_t vtid;
};

struct cstream {
	char *path;
	int fd;
	uint64_t valid_end;        /* bytes of complete packets */
	uint64_t pos;              /* file offset of the next packet */
	uint8_t *buf;              /* current packet */
	size_t cap;
	size_t off, end;           /* next event, end of content (offsets in buf) */
	uint64_t pkt_off;          /* file offset of the current packet */
	int32_t tid;
	uint32_t cpu;
	uint64_t disc_prev;
	bool lost_pending;
	const uint8_t *last;       /* last event returned (for format_event) */
	uint64_t last_ts;
	bool have_last_ts;
};

struct ctf {
	struct ctf_meta m;
	uint32_t n;
	struct cstream *st;
};

static int fail(struct vms_source *src, struct cstream *s, uint64_t off, const char *what)
{
	return vms_error_set(&src->err, VMS_ERR_FORMAT, "%s: %s at byte offset %llu", s->path,
			     what, (unsigned long long)off);
}

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pread(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

/* Check one packet header at `off`; 1 ok, 0 truncated (incomplete packet), <0 damage. */
static int check_packet(struct vms_source *src, struct ctf *c, struct cstream *s,
			uint64_t off, uint64_t size, struct pkt *h)
{
	if (size - off < sizeof *h)
		return 0;
	if (read_at(s->fd, h, sizeof *h, off))
		return vms_error_set(&src->err, VMS_ERR_IO, "%s: read error at byte offset %llu",
				     s->path, (unsigned long long)off);
	if (h->magic != CTF_MAGIC)
		return fail(src, s, off, "bad packet magic");
	if (memcmp(h->uuid, c->m.uuid, 16))
		return fail(src, s, off + 4, "packet of another trace (UUID differs)");
	if (h->stream_id != 0)
		return fail(src, s, off + 20, "unknown stream id");
	if (h->packet_size % 8 || h->content_size % 8 || h->content_size > h->packet_size ||
	    h->content_size / 8 < sizeof *h || h->packet_size / 8 > MAX_PACKET)
		return fail(src, s, off + 40, "bad packet size");
	if (h->ts_end < h->ts_begin)
		return fail(src, s, off + 24, "packet ends before it begins");
	if (h->packet_size / 8 > size - off)
		return 0;
	return 1;
}

static int scan_stream(struct vms_source *src, struct ctf *c, struct cstream *s, bool closed)
{
	struct stat st;
	if (fstat(s->fd, &st) != 0)
		return vms_error_set(&src->err, VMS_ERR_IO, "%s: cannot stat", s->path);
	uint64_t size = (uint64_t)st.st_size, off = 0, disc = 0, prev_disc = 0;
	while (off < size) {
		struct pkt h;
		int rc = check_packet(src, c, s, off, size, &h);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			if (closed)
				return fail(src, s, off, "truncated packet");
			src->meta.ended_abruptly = true;
			break;
		}
		if (h.discarded < prev_disc)
			return fail(src, s, off + 56, "events_discarded goes backwards");
		prev_disc = disc = h.discarded;
		if (h.cpu_id < 4096 && h.cpu_id + 1 > src->meta.nr_cpus)
			src->meta.nr_cpus = h.cpu_id + 1;
		off += h.packet_size / 8;
	}
	s->valid_end = off;
	src->meta.lost_events += disc;
	return 0;
}

/* Load the next packet with events (or return 0 at the end). */
static int load_packet(struct vms_source *src, struct ctf *c, struct cstream *s)
{
	while (s->pos < s->valid_end) {
		struct pkt h;
		int rc = check_packet(src, c, s, s->pos, s->valid_end, &h);
		if (rc <= 0)
			return rc < 0 ? rc : fail(src, s, s->pos, "packet changed since open");
		size_t content = (size_t)(h.content_size / 8);
		if (content > s->cap) {
			uint8_t *nb = realloc(s->buf, content);
			if (!nb)
				return vms_error_set(&src->err, VMS_ERR_NOMEM, "out of memory");
			s->buf = nb;
			s->cap = content;
		}
		if (read_at(s->fd, s->buf, content, s->pos))
			return vms_error_set(&src->err, VMS_ERR_IO, "%s: read error at byte offset "
					     "%llu", s->path, (unsigned long long)s->pos);
		s->pkt_off = s->pos;
		s->pos += h.packet_size / 8;
		s->off = sizeof h;
		s->end = content;
		s->tid = h.vtid;
		s->cpu = h.cpu_id;
		if (h.discarded > s->disc_prev)
			s->lost_pending = true;
		s->disc_prev = h.discarded;
		if (s->end > s->off)
			return 1;
	}
	return 0;
}

static uint32_t ctf_nr_streams(struct vms_source *src)
{
	return ((struct ctf *)src->impl)->n;
}

/* Decode the record at s->off; fills ev. */
static int decode(struct vms_source *src, struct ctf *c, struct cstream *s, uint32_t stream,
		  struct vms_event *ev)
{
	const uint8_t *p = s->buf + s->off, *end = s->buf + s->end;
	uint64_t at = s->pkt_off + s->off;
	if (end - p < CTF_EVENT_HEADER)
		return fail(src, s, at, "event header past the packet content");
	uint16_t id, cpu;
	uint64_t ts;
	memcpy(&id, p, 2);
	memcpy(&ts, p + 2, 8);
	memcpy(&cpu, p + 10, 2);
	if (id >= c->m.nr_classes || !c->m.classes[id].name)
		return fail(src, s, at, "unknown event id");
	const struct ctf_event_class *ec = &c->m.classes[id];
	memset(ev, 0, sizeof *ev);
	ev->ts = ts;
	ev->tid = s->tid;
	ev->cpu = cpu != UINT16_MAX ? cpu : s->cpu; /* the record's own CPU, else the packet's */
	ev->kind = VMS_K_TRACEPOINT;
	ev->type = id;
	ev->stream = stream;
	const uint8_t *q = p + CTF_EVENT_HEADER;
	unsigned ni = 0, ns = 0;
	for (uint32_t f = 0; f < ec->nfields; f++) {
		const struct ctf_field *fd = &ec->fields[f];
		if (fd->kind == CTF_F_STR) {
			const uint8_t *nul = memchr(q, 0, (size_t)(end - q));
			if (!nul)
				return fail(src, s, s->pkt_off + (uint64_t)(q - s->buf),
					    "unterminated string");
			if (ns < 2)
				ev->s[ns++] = (const char *)q;
			q = nul + 1;
			continue;
		}
		if ((size_t)(end - q) < fd->size)
			return fail(src, s, s->pkt_off + (uint64_t)(q - s->buf),
				    "event field past the packet content");
		uint64_t v = 0;
		if (fd->size == 1) {
			v = fd->is_signed ? (uint64_t)(int64_t)(int8_t)q[0] : q[0];
		} else if (fd->size == 2) {
			uint16_t x;
			memcpy(&x, q, 2);
			v = fd->is_signed ? (uint64_t)(int64_t)(int16_t)x : x;
		} else if (fd->size == 4) {
			uint32_t x;
			memcpy(&x, q, 4);
			v = fd->is_signed ? (uint64_t)(int64_t)(int32_t)x : x;
		} else {
			memcpy(&v, q, 8);
		}
		if (ni < 5)
			ev->f[ni++] = v;
		q += fd->size;
	}
	if (s->have_last_ts && ts < s->last_ts)
		ev->flags |= VMS_EVF_TIME_BACKWARDS;
	if (s->lost_pending) {
		ev->flags |= VMS_EVF_LOST_BEFORE;
		s->lost_pending = false;
	}
	s->last_ts = ts;
	s->have_last_ts = true;
	s->last = p;
	s->off = (size_t)(q - s->buf);
	return 1;
}

static int ctf_next(struct vms_source *src, uint32_t stream, struct vms_event *ev)
{
	struct ctf *c = src->impl;
	if (stream >= c->n)
		return vms_error_set(&src->err, VMS_ERR_USAGE, "no stream %u", stream);
	struct cstream *s = &c->st[stream];
	if (s->off >= s->end) {
		s->last = NULL;
		int rc = load_packet(src, c, s);
		if (rc <= 0)
			return rc;
	}
	return decode(src, c, s, stream, ev);
}

static int ctf_rewind(struct vms_source *src)
{
	struct ctf *c = src->impl;
	for (uint32_t i = 0; i < c->n; i++) {
		struct cstream *s = &c->st[i];
		s->pos = 0;
		s->off = s->end = 0;
		s->disc_prev = 0;
		s->lost_pending = false;
		s->last = NULL;
		s->have_last_ts = false;
	}
	return 0;
}

static int ctf_format(struct vms_source *src, uint32_t stream, char *buf, size_t len)
{
	struct ctf *c = src->impl;
	if (!len)
		return 0;
	buf[0] = 0;
	if (stream >= c->n || !c->st[stream].last)
		return 0;
	struct cstream *s = &c->st[stream];
	const uint8_t *p = s->last, *end = s->buf + s->end;
	uint16_t id;
	memcpy(&id, p, 2);
	const struct ctf_event_class *ec = &c->m.classes[id];
	size_t n = (size_t)snprintf(buf, len, "%s:", ec->name);
	const uint8_t *q = p + CTF_EVENT_HEADER;
	for (uint32_t f = 0; f < ec->nfields && n < len; f++) {
		const struct ctf_field *fd = &ec->fields[f];
		if (fd->kind == CTF_F_STR) {
			const uint8_t *nul = memchr(q, 0, (size_t)(end - q));
			if (!nul)
				break;
			n += (size_t)snprintf(buf + n, len - n, " %s=\"%s\"", fd->name, (const char *)q);
			q = nul + 1;
			continue;
		}
		if ((size_t)(end - q) < fd->size)
			break;
		uint64_t v = 0;
		memcpy(&v, q, fd->size);   /* little-endian host: low bytes first */
		if (fd->is_signed && fd->size < 8 && (v >> (fd->size * 8 - 1)) & 1)
			v |= ~0ull << (fd->size * 8);
		if (fd->base == 16)
			n += (size_t)snprintf(buf + n, len - n, " %s=0x%llx", fd->name,
					      (unsigned long long)v);
		else if (fd->is_signed)
			n += (size_t)snprintf(buf + n, len - n, " %s=%lld", fd->name, (long long)v);
		else
			n += (size_t)snprintf(buf + n, len - n, " %s=%llu", fd->name,
					      (unsigned long long)v);
		q += fd->size;
	}
	return 0;
}

static void ctf_close(struct vms_source *src)
{
	if (!src)
		return;
	struct ctf *c = src->impl;
	if (c) {
		for (uint32_t i = 0; i < c->n; i++) {
			if (c->st[i].fd >= 0)
				close(c->st[i].fd);
			free(c->st[i].path);
			free(c->st[i].buf);
		}
		free(c->st);
		ctf_meta_free(&c->m);
		free(c);
	}
	vms_trace_meta_free(&src->meta);
	free(src->path);
	free(src);
}

static const struct vms_source_ops ctf_ops = {
	.name = "ctf",
	.nr_streams = ctf_nr_streams,
	.next = ctf_next,
	.rewind = ctf_rewind,
	.format_event = ctf_format,
	.close = ctf_close,
};

/* DIR/.vmst-threads: "TID NAME" lines written by the tracer when a thread's stream file is
 * created. Optional; a line that does not parse is damage. */
static int read_thread_names(struct vms_source *src, const char *path)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/.vmst-threads", path);
	FILE *f = fopen(p, "r");
	if (!f)
		return 0;
	struct vms_trace_meta *m = &src->meta;
	char line[256];
	uint64_t off = 0;
	int rc = 0;
	while (fgets(line, sizeof line, f)) {
		size_t len = strlen(line);
		int tid, name_at = 0;
		if (len == 0 || line[len - 1] != '\n' || sscanf(line, "%d %n", &tid, &name_at) != 1 ||
		    name_at == 0 || m->nr_comms >= 1000000) {
			rc = vms_error_set(&src->err, VMS_ERR_FORMAT, "%s: bad line at byte offset "
					   "%llu", p, (unsigned long long)off);
			break;
		}
		off += len;
		line[len - 1] = 0;
		int32_t *t = realloc(m->comm_tid, (m->nr_comms + 1) * sizeof *t);
		if (t)
			m->comm_tid = t;
		char **n = realloc(m->comm_name, (m->nr_comms + 1) * sizeof *n);
		if (n)
			m->comm_name = n;
		char *name = strdup(line + name_at);
		if (!t || !n || !name) {
			free(name);
			rc = vms_error_set(&src->err, VMS_ERR_NOMEM, "out of memory");
			break;
		}
		m->comm_tid[m->nr_comms] = tid;
		m->comm_name[m->nr_comms] = name;
		m->nr_comms++;
	}
	fclose(f);
	return rc;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int open_streams(struct vms_source *src, struct ctf *c, const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return vms_error_set(&src->err, VMS_ERR_IO, "%s: cannot open the directory", path);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "stream-", 7))
			continue;
		if (n == MAX_STREAMS) {
			rc = vms_error_set(&src->err, VMS_ERR_NOMEM, "%s: more than %d stream files",
					   path, MAX_STREAMS);
			break;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			char **nn = realloc(names, cap * sizeof *nn);
			if (!nn) {
				rc = vms_error_set(&src->err, VMS_ERR_NOMEM, "out of memory");
				break;
			}
			names = nn;
		}
		if (!(names[n] = strdup(e->d_name))) {
			rc = vms_error_set(&src->err, VMS_ERR_NOMEM, "out of memory");
			break;
		}
		n++;
	}
	closedir(d);
	if (!rc && n)
		qsort(names, n, sizeof *names, by_name);
	if (!rc) {
		c->st = calloc(n ? n : 1, sizeof *c->st);
		if (!c->st)
			rc = vms_error_set(&src->err, VMS_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		if (!rc) {
			struct cstream *s = &c->st[c->n];
			size_t len = strlen(path) + strlen(names[i]) + 2;
			s->path = malloc(len);
			s->fd = -1;
			c->n++;
			if (!s->path) {
				rc = vms_error_set(&src->err, VMS_ERR_NOMEM, "out of memory");
			} else {
				snprintf(s->path, len, "%s/%s", path, names[i]);
				s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
				if (s->fd < 0)
					rc = vms_error_set(&src->err, VMS_ERR_IO, "%s: cannot open",
							   s->path);
			}
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

struct vms_source *vms_ctf_open(const char *path, struct vms_error *err)
{
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return NULL;
	char mpath[PATH_MAX];
	snprintf(mpath, sizeof mpath, "%s/metadata", path);
	int fd = open(mpath, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat ms;
	if (fstat(fd, &ms) != 0 || ms.st_size > CTF_MAX_METADATA) {
		close(fd);
		vms_error_set(err, VMS_ERR_FORMAT, "%s: metadata larger than %u bytes at byte "
			      "offset 0", mpath, CTF_MAX_METADATA);
		return NULL;
	}
	size_t len = (size_t)ms.st_size;
	char *text = malloc(len + 1);
	if (!text || read_at(fd, text, len, 0)) {
		close(fd);
		free(text);
		vms_error_set(err, VMS_ERR_IO, "%s: cannot read", mpath);
		return NULL;
	}
	close(fd);
	text[len] = 0;
	struct vms_source *src = calloc(1, sizeof *src);
	struct ctf *c = calloc(1, sizeof *c);
	if (!src || !c) {
		free(src);
		free(c);
		free(text);
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	src->ops = &ctf_ops;
	src->impl = c;
	src->path = strdup(path);
	int rc = ctf_meta_parse(path, text, len, &c->m, err);
	free(text);
	if (rc <= 0) {
		ctf_close(src);
		return NULL;   /* rc == 0: another producer's CTF, err untouched */
	}
	struct vms_trace_meta *m = &src->meta;
	snprintf(m->format, sizeof m->format, "CTF 1.8 (vmstrace)");
	snprintf(m->clock, sizeof m->clock, "%s", c->m.tsc ? "tsc" : "monotonic");
	if (c->m.freq == 1000000000u) {
		m->ts_in_ns = true;
	} else {
		/* ns = tsc * mult >> shift, with mult below 2^32 */
		uint32_t shift = 32;
		long double mult = 1e9L * (long double)(1ull << shift) / (long double)c->m.freq;
		while (mult >= 4294967296.0L && shift > 0) {
			shift--;
			mult /= 2;
		}
		m->has_tsc2nsec = true;
		m->tsc_mult = (uint32_t)(mult + 0.5L);
		m->tsc_shift = shift;
	}
	m->offset_ns = c->m.offset_s * 1000000000ll +
		       (int64_t)((long double)c->m.offset * 1e9L / (long double)c->m.freq);
	m->nr_types = c->m.nr_classes;
	m->type_names = calloc(m->nr_types ? m->nr_types : 1, sizeof *m->type_names);
	m->type_kinds = calloc(m->nr_types ? m->nr_types : 1, sizeof *m->type_kinds);
	if (!m->type_names || !m->type_kinds) {
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		ctf_close(src);
		return NULL;
	}
	for (uint32_t i = 0; i < m->nr_types; i++) {
		m->type_names[i] = strdup(c->m.classes[i].name ? c->m.classes[i].name : "");
		m->type_kinds[i] = VMS_K_TRACEPOINT;
		if (!m->type_names[i]) {
			vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
			ctf_close(src);
			return NULL;
		}
	}
	char cpath[PATH_MAX];
	snprintf(cpath, sizeof cpath, "%s/.vmst-closed", path);
	bool closed = access(cpath, F_OK) == 0;
	if (!closed)
		m->ended_abruptly = true;
	rc = read_thread_names(src, path);
	if (rc == 0)
		rc = open_streams(src, c, path);
	for (uint32_t i = 0; rc == 0 && i < c->n; i++)
		rc = scan_stream(src, c, &c->st[i], closed);
	if (rc) {
		vms_error_set(err, src->err.status ? src->err.status : rc, "%s", src->err.msg);
		ctf_close(src);
		return NULL;
	}
	if (m->nr_cpus == 0)
		m->nr_cpus = 1;
	return src;
}
