/* The LTTng-kernel-style CTF writer (ctf_writer.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/ctf_writer.h"

#define PACKET (256u << 10)
#define PKT_HEADER 76          /* magic, uuid, stream_id; 6 u64 + cpu_id u32 */
#define MAX_FIELDS 16
#define MAX_CLASSES 256
#define CTF_MAGIC 0xC1FC1FC1u

struct cls {
	char name[64];
	uint32_t n;
	struct vms_ctfw_field f[MAX_FIELDS];
	char fname[MAX_FIELDS][48];
};

struct cpu_stream {
	int fd;
	uint8_t *buf;
	uint32_t used;
	uint64_t begin, last, seq;
	bool open_pkt;
};

struct vms_ctfw {
	struct vms_ctfw_config cfg;
	char dir[2048];
	uint8_t uuid[16];
	struct cls cls[MAX_CLASSES];
	uint32_t ncls;
	struct cpu_stream *cpu;
};

static int io_fail(struct vms_error *err, const char *path)
{
	return vms_error_set(err, VMS_ERR_IO, "%s: %s", path, strerror(errno));
}

int vms_ctfw_open(struct vms_ctfw **out, const struct vms_ctfw_config *cfg, struct vms_error *err)
{
	*out = NULL;
	if (cfg->nr_cpus == 0 || cfg->nr_cpus > 4096)
		return vms_error_set(err, VMS_ERR_USAGE, "ctf writer: bad CPU count");
	struct vms_ctfw *w = calloc(1, sizeof *w);
	if (!w || !(w->cpu = calloc(cfg->nr_cpus, sizeof *w->cpu))) {
		free(w);
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	}
	w->cfg = *cfg;
	snprintf(w->dir, sizeof w->dir, "%s", cfg->dir);
	if (mkdir(w->dir, 0777) != 0 && errno != EEXIST) {
		int rc = io_fail(err, w->dir);
		vms_ctfw_discard(w);
		return rc;
	}
	uint64_t x = cfg->uuid_seed * 0x9E3779B97F4A7C15ull + 1;
	for (int i = 0; i < 16; i++) {
		x ^= x >> 31;
		x *= 0xBF58476D1CE4E5B9ull;
		w->uuid[i] = (uint8_t)(x >> 56);
	}
	w->uuid[6] = (uint8_t)((w->uuid[6] & 0x0f) | 0x40); /* a version 4 UUID */
	w->uuid[8] = (uint8_t)((w->uuid[8] & 0x3f) | 0x80);
	for (uint32_t c = 0; c < cfg->nr_cpus; c++)
		w->cpu[c].fd = -1;
	*out = w;
	return VMS_OK;
}

int vms_ctfw_add_event(struct vms_ctfw *w, const char *name, const struct vms_ctfw_field *f,
		       uint32_t n, uint32_t *id, struct vms_error *err)
{
	if (w->ncls == MAX_CLASSES || n > MAX_FIELDS)
		return vms_error_set(err, VMS_ERR_USAGE, "ctf writer: too many event classes or fields");
	struct cls *c = &w->cls[w->ncls];
	snprintf(c->name, sizeof c->name, "%s", name);
	c->n = n;
	for (uint32_t i = 0; i < n; i++) {
		snprintf(c->fname[i], sizeof c->fname[i], "%s", f[i].name);
		c->f[i] = (struct vms_ctfw_field){c->fname[i], f[i].type};
	}
	*id = w->ncls++;
	return VMS_OK;
}

static void put(uint8_t *p, uint32_t *at, const void *v, uint32_t n)
{
	memcpy(p + *at, v, n);
	*at += n;
}

static int flush_packet(struct vms_ctfw *w, uint32_t cpu, bool last, struct vms_error *err)
{
	struct cpu_stream *s = &w->cpu[cpu];
	if (!s->open_pkt)
		return VMS_OK;
	/* the last packet ends at its content (rounded to 8 bytes); the others are full */
	uint32_t size = last ? (s->used + 7) & ~7u : PACKET;
	memset(s->buf + s->used, 0, size - s->used);
	uint64_t v[6] = {s->begin, s->last, (uint64_t)s->used * 8, (uint64_t)size * 8, s->seq, 0};
	memcpy(s->buf + 24, v, sizeof v);
	size_t done = 0;
	while (done < size) {
		ssize_t r = write(s->fd, s->buf + done, size - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			char p[2200];
			snprintf(p, sizeof p, "%s/channel0_%u", w->dir, cpu);
			return io_fail(err, p);
		}
		done += (size_t)r;
	}
	s->open_pkt = false;
	s->seq++;
	return VMS_OK;
}

static int open_packet(struct vms_ctfw *w, uint32_t cpu, uint64_t ts, struct vms_error *err)
{
	struct cpu_stream *s = &w->cpu[cpu];
	if (s->fd < 0) {
		char p[2200];
		snprintf(p, sizeof p, "%s/channel0_%u", w->dir, cpu);
		s->fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		if (s->fd < 0)
			return io_fail(err, p);
		if (!(s->buf = malloc(PACKET)))
			return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	}
	uint32_t at = 0, magic = CTF_MAGIC, sid = 0, c32 = cpu;
	put(s->buf, &at, &magic, 4);
	put(s->buf, &at, w->uuid, 16);
	put(s->buf, &at, &sid, 4);
	at += 48; /* timestamps, sizes, seq, events_discarded: at flush */
	put(s->buf, &at, &c32, 4);
	s->used = at;
	s->begin = s->last = ts;
	s->open_pkt = true;
	return VMS_OK;
}

int vms_ctfw_event(struct vms_ctfw *w, uint32_t cpu, uint64_t ts, uint32_t id, int32_t tid,
		   const uint64_t *vals, const char *const *comms, struct vms_error *err)
{
	if (cpu >= w->cfg.nr_cpus || id >= w->ncls)
		return vms_error_set(err, VMS_ERR_USAGE, "ctf writer: bad CPU or event id");
	struct cpu_stream *s = &w->cpu[cpu];
	if (s->open_pkt && ts < s->last)
		return vms_error_set(err, VMS_ERR_USAGE, "ctf writer: time goes backwards on CPU %u",
				     cpu);
	uint8_t ev[16 + 4 + MAX_FIELDS * (VMS_CTFW_STRING_MAX + 1)];
	uint32_t n = 0;
	const struct cls *c = &w->cls[id];
	int rc;
	for (int pass = 0; pass < 2; pass++) {
		if (!s->open_pkt && (rc = open_packet(w, cpu, ts, err)))
			return rc;
		n = 0;
		/* compact when the 32 low bits and the previous value give ts back */
		if (id < 65535 && ts - s->last < (1ull << 32)) {
			uint16_t eid = (uint16_t)id;
			uint32_t t32 = (uint32_t)ts;
			put(ev, &n, &eid, 2);
			put(ev, &n, &t32, 4);
		} else {
			uint16_t ext = 65535;
			uint32_t eid = id;
			put(ev, &n, &ext, 2);
			put(ev, &n, &eid, 4);
			put(ev, &n, &ts, 8);
		}
		put(ev, &n, &tid, 4);
		uint32_t vi = 0, ci = 0;
		for (uint32_t f = 0; f < c->n; f++) {
			bool text = c->f[f].type == VMS_CTFW_COMM || c->f[f].type == VMS_CTFW_STRING;
			uint64_t v = text ? 0 : vals[vi++];
			switch (c->f[f].type) {
			case VMS_CTFW_S32:
			case VMS_CTFW_U32: {
				uint32_t x = (uint32_t)v;
				put(ev, &n, &x, 4);
				break;
			}
			case VMS_CTFW_U8:
				ev[n++] = (uint8_t)v;
				break;
			case VMS_CTFW_COMM: {
				char cm[16] = {0};
				strncpy(cm, comms[ci++], 15);
				put(ev, &n, cm, 16);
				break;
			}
			case VMS_CTFW_STRING: {
				uint32_t len = (uint32_t)strnlen(comms[ci++], VMS_CTFW_STRING_MAX);
				put(ev, &n, comms[ci - 1], len);
				ev[n++] = 0;
				break;
			}
			default:
				put(ev, &n, &v, 8);
			}
		}
		if (s->used + n <= PACKET)
			break;
		if ((rc = flush_packet(w, cpu, false, err)))
			return rc;
	}
	memcpy(s->buf + s->used, ev, n);
	s->used += n;
	s->last = ts;
	return VMS_OK;
}

static const char *type_text(uint8_t t)
{
	switch (t) {
	case VMS_CTFW_S32:
		return "integer { size = 32; align = 8; signed = 1; encoding = none; base = 10; }";
	case VMS_CTFW_U32:
		return "integer { size = 32; align = 8; signed = 0; encoding = none; base = 10; }";
	case VMS_CTFW_S64:
		return "integer { size = 64; align = 8; signed = 1; encoding = none; base = 10; }";
	case VMS_CTFW_U64:
		return "integer { size = 64; align = 8; signed = 0; encoding = none; base = 10; }";
	case VMS_CTFW_U8:
		return "integer { size = 8; align = 8; signed = 0; encoding = none; base = 10; }";
	case VMS_CTFW_STRING:
		return "string";
	default:
		return "integer { size = 8; align = 8; signed = 1; encoding = UTF8; base = 10; }";
	}
}

static void put_uuid(FILE *f, const uint8_t u[16])
{
	for (int i = 0; i < 16; i++)
		fprintf(f, "%02x%s", u[i], i == 3 || i == 5 || i == 7 || i == 9 ? "-" : "");
}

static int write_metadata(struct vms_ctfw *w, struct vms_error *err)
{
	char p[2200];
	snprintf(p, sizeof p, "%s/metadata", w->dir);
	FILE *f = fopen(p, "w");
	if (!f)
		return io_fail(err, p);
	fprintf(f, "/* CTF 1.8 */\n\n"
		   "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
		   "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
		   "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
		   "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
		   "typealias integer { size = 64; align = 8; signed = false; } := unsigned long;\n\n"
		   "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"");
	put_uuid(f, w->uuid);
	fprintf(f, "\";\n\tbyte_order = le;\n\tpacket.header := struct {\n\t\tuint32_t magic;\n"
		   "\t\tuint8_t  uuid[16];\n\t\tuint32_t stream_id;\n\t};\n};\n\n");
	fprintf(f, "env {\n\thostname = \"%s\";\n\tdomain = \"kernel\";\n\tsysname = \"Linux\";\n"
		   "\tkernel_release = \"%s\";\n\ttracer_name = \"lttng-modules\";\n"
		   "\ttracer_major = 2;\n\ttracer_minor = 13;\n\ttracer_patchlevel = 0;\n"
		   "\tvmscope_synth = \"SIMULATED data\";\n};\n\n",
		w->cfg.hostname ? w->cfg.hostname : "", w->cfg.kernel_release ? w->cfg.kernel_release : "");
	fprintf(f, "clock {\n\tname = \"monotonic\";\n\tuuid = \"");
	put_uuid(f, w->uuid);
	fprintf(f, "\";\n\tdescription = \"Monotonic Clock\";\n\tfreq = 1000000000;\n"
		   "\tprecision = 1;\n\toffset_s = %" PRId64 ";\n\toffset = %" PRIu64 ";\n"
		   "\tabsolute = TRUE;\n};\n\n", w->cfg.offset_s, w->cfg.offset_ns);
	fprintf(f, "typealias integer {\n\tsize = 32; align = 8; signed = false;\n"
		   "\tmap = clock.monotonic.value;\n} := uint32_clock_monotonic_t;\n\n"
		   "typealias integer {\n\tsize = 64; align = 8; signed = false;\n"
		   "\tmap = clock.monotonic.value;\n} := uint64_clock_monotonic_t;\n\n"
		   "struct packet_context {\n\tuint64_clock_monotonic_t timestamp_begin;\n"
		   "\tuint64_clock_monotonic_t timestamp_end;\n\tuint64_t content_size;\n"
		   "\tuint64_t packet_size;\n\tuint64_t packet_seq_num;\n"
		   "\tunsigned long events_discarded;\n\tuint32_t cpu_id;\n};\n\n"
		   "struct event_header_large {\n"
		   "\tenum : uint16_t { compact = 0 ... 65534, extended = 65535 } id;\n"
		   "\tvariant <id> {\n\t\tstruct {\n\t\t\tuint32_clock_monotonic_t timestamp;\n"
		   "\t\t} compact;\n\t\tstruct {\n\t\t\tuint32_t id;\n"
		   "\t\t\tuint64_clock_monotonic_t timestamp;\n\t\t} extended;\n\t} v;\n"
		   "} align(8);\n\n"
		   "stream {\n\tid = 0;\n\tevent.header := struct event_header_large;\n"
		   "\tpacket.context := struct packet_context;\n\tevent.context := struct {\n"
		   "\t\tinteger { size = 32; align = 8; signed = 1; encoding = none; base = 10; } _tid;\n"
		   "\t};\n};\n\n");
	for (uint32_t i = 0; i < w->ncls; i++) {
		const struct cls *c = &w->cls[i];
		fprintf(f, "event {\n\tname = \"%s\";\n\tid = %u;\n\tstream_id = 0;\n"
			   "\tfields := struct {\n", c->name, i);
		for (uint32_t k = 0; k < c->n; k++)
			fprintf(f, "\t\t%s _%s%s;\n", type_text(c->f[k].type), c->f[k].name,
				c->f[k].type == VMS_CTFW_COMM ? "[16]" : "");
		fprintf(f, "\t};\n};\n\n");
	}
	if (fclose(f) != 0)
		return io_fail(err, p);
	return VMS_OK;
}

int vms_ctfw_close(struct vms_ctfw *w, struct vms_error *err)
{
	int rc = VMS_OK;
	for (uint32_t c = 0; c < w->cfg.nr_cpus && !rc; c++)
		rc = flush_packet(w, c, true, err);
	if (!rc)
		rc = write_metadata(w, err);
	vms_ctfw_discard(w);
	return rc;
}

void vms_ctfw_discard(struct vms_ctfw *w)
{
	if (!w)
		return;
	for (uint32_t c = 0; c < w->cfg.nr_cpus; c++) {
		if (w->cpu[c].fd >= 0)
			close(w->cpu[c].fd);
		free(w->cpu[c].buf);
	}
	free(w->cpu);
	free(w);
}
