/* xentrace: one stream per physical CPU, and each record as a common event.
 *
 * A stream walks the chain of blocks and takes those of its CPU: a block header says its
 * size, so the blocks of other CPUs are hopped over without reading them, and nothing is
 * indexed (memory does not grow with the file). The file was checked at open; the checks
 * here only keep a stream inside the part of the file that was found complete.
 *
 * What each record becomes is told in include/vmscope/xentrace.h. The vCPU current on the
 * CPU (for the thread of HVM records) is followed from the runstate records of the CPU itself:
 * Xen writes them on the CPU where the vCPU starts or stops running. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "xentrace.h"

void vms_xt_free(struct xt_reader *r);

static char *put_uint(char *p, uint32_t v)
{
	char tmp[10];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < 10);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* "d<dom>v<vcpu>", or "idle" (snprintf costs too much per switch) */
static void name_of(char buf[24], int32_t tid, uint32_t dv)
{
	if (tid == 0) {
		memcpy(buf, "idle", 5);
		return;
	}
	char *p = buf;
	*p++ = 'd';
	p = put_uint(p, dv >> 16);
	*p++ = 'v';
	p = put_uint(p, dv & 0xffff);
	*p = '\0';
}

/* The name of (tid, dv), kept in the stream's small table of names: written only when another
 * vCPU's was in its entry (a CPU runs few vCPUs; name_of per switch was 1.4% of report).
 * `other` is the name the same event already points to, never overwritten. */
_Static_assert(XT_NAMES == 8, "name_in hashes to 3 bits");

static const char *name_in(struct xt_stream *s, int32_t tid, uint32_t dv, const char *other)
{
	uint32_t key = tid == 0 ? 0x80000000u : dv; /* (dv's domain is below 32768) */
	uint32_t i = (key * 0x9e3779b1u) >> 29;     /* (XT_NAMES == 8) */
	if (s->name_key[i] == key)
		return s->name[i];
	if (s->name[i] == other) {
		name_of(s->name_spare, tid, dv);
		return s->name_spare;
	}
	name_of(s->name[i], tid, dv);
	s->name_key[i] = key;
	return s->name[i];
}

/* Give back what every stream has left behind (called once per block). */
static void give_back(struct xt_reader *r)
{
	uint64_t low = UINT64_MAX;
	for (uint32_t i = 0; i < r->nr_st; i++) {
		const struct xt_stream *o = &r->st[i];
		if (!o->done && (o->in_block ? o->pos : o->next_blk) < low)
			low = o->in_block ? o->pos : o->next_blk;
	}
	xt_give_back(r, low == UINT64_MAX ? r->valid_end : low);
}

/* The next block of the stream's CPU, 0 when none is left. */
static int next_block(const struct xt_reader *r, struct xt_stream *s)
{
	/* (with the pool, the workers hold other streams: the reading thread gives back, from
	 * what it has taken, xentrace_pool.c) */
	if (r->nr_st > 0 && !r->pool)
		give_back((struct xt_reader *)r);
	uint64_t b = s->next_blk;
	/* past its last record (known from the walk) the CPU has nothing more: no hop over the
	 * rest of the file, which would also bring its pages in (a CPU that stops early) */
	while (b + 12 <= r->valid_end && !(b > s->final_off && s->final_off)) {
		uint32_t cpu = xt_rd32(r->map + b + 4), win = xt_rd32(r->map + b + 8);
		uint64_t end = b + 12 + (uint64_t)win;
		if (cpu == s->cpu) {
			s->pos = b + 12;
			s->end = end < r->valid_end ? end : r->valid_end;
			s->next_blk = end;
			s->in_block = true;
			return 1;
		}
		b = end;
	}
	s->next_blk = b;
	s->done = true;
	return 0;
}

/* Does the record at p (inside the block) put a vCPU on this CPU? Its thread, or -2. */
static int32_t entering_at(const struct xt_reader *r, const struct xt_stream *s, uint64_t p,
			   uint32_t *dv)
{
	if (p + 4 > s->end)
		return -2;
	struct xt_rec rec;
	xt_decode(r->map + p, &rec);
	if (rec.size > s->end - p || rec.extra < 1 || !xt_is_runstate_change(rec.event) ||
	    ((rec.event >> 4) & 0xf) != VMS_XEN_RUNNING)
		return -2;
	*dv = xt_rd32(rec.data);
	return xt_tid(*dv >> 16, *dv & 0xffff);
}

static void runstate_event(const struct xt_reader *r, struct xt_stream *s, const struct xt_rec *rec,
			   uint64_t p, struct vms_event *ev)
{
	uint32_t dv = xt_rd32(rec->data), dom = dv >> 16, vcpu = dv & 0xffff;
	int32_t tid = xt_tid(dom, vcpu);
	bool cont = rec->event == VMS_XEN_TRC_RUNSTATE_CONTINUE;
	uint32_t old = cont ? VMS_XEN_RUNNING : (rec->event >> 8) & 0xf;
	uint32_t new = cont ? VMS_XEN_RUNNING : (rec->event >> 4) & 0xf;
	ev->f[3] = old << 4 | new;
	ev->f[4] = dv;
	ev->tid = tid;
	if (cont) {
		s->cur = tid;
		return;
	}
	if (old == VMS_XEN_RUNNING && new != VMS_XEN_RUNNING) {
		/* leaving this CPU: the vCPU that comes next is usually the very next record */
		uint32_t ndv = 0;
		int32_t next = entering_at(r, s, p + rec->size, &ndv);
		ev->kind = VMS_K_SCHED_SWITCH;
		ev->f[0] = (uint64_t)(int64_t)tid;
		ev->f[1] = new == VMS_XEN_RUNNABLE ? 0 : 1; /* R: preempted; S: blocked/offline */
		ev->f[2] = (uint64_t)(int64_t)(next >= -1 ? next : -1);
		ev->s[0] = name_in(s, tid, dv, NULL);
		ev->s[1] = next >= -1 ? name_in(s, next, ndv, ev->s[0]) : "";
		if (s->cur == tid)
			s->cur = -1;
		s->announced_off = next >= -1 ? p + rec->size : 0;
	} else if (new == VMS_XEN_RUNNING && s->skc && p == s->announced_off) {
		/* skip_unread: the switch the record before announced (its next is this vCPU)
		 * is not told again; the Xen model reads the record by its type */
		s->cur = tid;
	} else if (new == VMS_XEN_RUNNING) {
		ev->kind = VMS_K_SCHED_SWITCH;
		ev->f[0] = (uint64_t)(int64_t)-1;
		ev->f[1] = 0;
		ev->f[2] = (uint64_t)(int64_t)tid;
		ev->s[0] = "";
		ev->s[1] = name_in(s, tid, dv, NULL);
		s->cur = tid;
	} else if (new == VMS_XEN_RUNNABLE) {
		ev->kind = VMS_K_SCHED_WAKEUP;
		ev->f[0] = (uint64_t)(int64_t)tid;
		ev->f[1] = s->cpu;
		ev->s[0] = name_in(s, tid, dv, NULL);
	}
}

/* skip_unread: what a record left out is counted as, XT_KEEP when it is to be returned */
#define XT_KEEP UINT32_MAX

static inline uint32_t skip_type(uint32_t e, bool once_done)
{
	int rk = xt_read_kind(e);
	return rk == XT_UNREAD || (rk == XT_ONCE && once_done) ? xt_type(e) : XT_KEEP;
}

/* skip_unread: hop over the records at the stream's position that no analysis reads, in
 * locals (the counts it stores could alias the stream for the compiler). The scheduler's
 * internals, most of a real file, take the first branch; only the TSC of the last record
 * with one is read. Stops at a record to return and at the CPU's final record (always
 * returned). Only headers are read: the walk at open found every record of a block whole
 * (the records of a block tile it, up to valid_end in a cut one), so none crosses s->end. */
static void skip_run(const struct xt_reader *r, struct xt_stream *s)
{
	const uint8_t *m = r->map;
	uint64_t pos = s->pos, end = s->end, final = s->final_off, tsc_at = UINT64_MAX;
	uint64_t stop = final >= pos && final < end ? final : end;
	uint64_t nsched = 0, nswitch = 0, nother = 0;
	bool once = s->once_done;
	while (pos < stop) {
		__builtin_prefetch(m + pos + XT_PREFETCH);
		uint32_t h = xt_rd32(m + pos), e = h & 0x0fffffffu;
		if (xt_sched_internal(e)) {
			nswitch += e == VMS_XEN_TRC_SCHED_SWITCH;
			nsched++;
		} else {
			uint32_t t = skip_type(e, once);
			if (t == XT_KEEP)
				break;
			s->skc[t]++;
			nother++;
		}
		tsc_at = h >> 31 ? pos : tsc_at;
		pos += xt_size(h);
	}
	if (pos == s->pos)
		return;
	if (tsc_at != UINT64_MAX)
		s->last_tsc = xt_rd64(m + tsc_at + 4);
	else if (!s->last_tsc)
		s->last_tsc = s->first_tsc;
	s->pos = pos;
	s->skc[VMS_XEN_T_SCHED_SWITCH] += nswitch;
	s->skc[VMS_XEN_T_SCHED] += nsched - nswitch;
	*s->skt += nsched + nother;
}

/* The record at s->pos, which a switch announced: a runstate change to running that fits
 * its block (entering_at checked both), returned as the general path returns it then. */
static int announced(const struct xt_reader *r, struct xt_stream *s, uint32_t stream,
		     struct vms_event *ev)
{
	const uint8_t *p = r->map + s->pos;
	uint32_t h = xt_rd32(p), e = h & 0x0fffffffu;
	s->at = (struct xt_at){ .off = s->pos, .tsc = s->last_tsc, .cur = s->cur,
				.flags = XT_AT_ANNOUNCED | (s->once_done ? XT_AT_ONCE_DONE : 0) };
	s->last_off = s->pos;
	s->pos += xt_size(h);
	if (h >> 31)
		s->last_tsc = xt_rd64(p + 4);
	else if (!s->last_tsc)
		s->last_tsc = s->first_tsc;
	uint32_t dv = xt_rd32(p + (h >> 31 ? 12 : 4));
	int32_t tid = xt_tid(dv >> 16, dv & 0xffff);
	s->returned = true;
	s->once_done = false;
	s->cur = tid;
	ev->ts = s->last_tsc;
	ev->f[0] = ev->f[1] = ev->f[2] = 0;
	ev->f[3] = ((e >> 8) & 0xf) << 4 | ((e >> 4) & 0xf);
	ev->f[4] = dv;
	ev->s[0] = ev->s[1] = NULL;
	ev->cpu = s->cpu;
	ev->stream = stream;
	ev->machine = 0;
	ev->tid = tid;
	ev->type = VMS_XEN_T_RUNSTATE_CHANGE;
	ev->kind = VMS_K_OTHER;
	ev->flags = 0;
	return 1;
}

int xt_decode_next(const struct xt_reader *r, struct xt_stream *s, uint32_t stream,
		   struct vms_event *ev)
{
	if (s->lost_end_pending) {
		s->lost_end_pending = false;
		s->at.flags |= XT_AT_LOST_END; /* (at is the lost records' record) */
		ev->ts = s->last_tsc = s->lost_end_tsc;
		ev->f[0] = ev->f[1] = ev->f[2] = ev->f[3] = ev->f[4] = 0;
		ev->s[0] = ev->s[1] = NULL;
		ev->cpu = s->cpu;
		ev->stream = stream;
		ev->machine = 0;
		ev->tid = -1;
		ev->type = VMS_XEN_T_LOST_END;
		ev->kind = VMS_K_OTHER;
		ev->flags = 0;
		return 1;
	}
	for (;;) {
		if (!s->in_block || s->pos >= s->end) {
			s->in_block = false;
			if (!next_block(r, s))
				return 0;
			continue;
		}
		/* skip_unread: the record a switch announced as its next (the vCPU it puts on this
		 * CPU, checked whole by entering_at) is returned as runstate_event would return
		 * it, kind other, without the general path (a third of report's events) */
		if (s->skc && s->pos == s->announced_off && !s->lost_pending &&
		    s->pos < s->end)
			return announced(r, s, stream, ev);
		/* skip_unread: leave out what no analysis reads (the first and the last record of
		 * the CPU, and the one after lost records, are always returned) */
		if (s->skc && s->returned && !s->lost_pending) {
			skip_run(r, s);
			if (s->pos >= s->end)
				continue;
		}
		if (s->end - s->pos < 4) {
			s->pos = s->end;
			continue;
		}
		const uint8_t *p = r->map + s->pos;
		uint32_t h = xt_rd32(p), size = xt_size(h);
		if (size > s->end - s->pos) { /* checked at open: cannot happen */
			s->pos = s->end;
			continue;
		}
		uint64_t off = s->pos;
		/* what decoding this record again needs (tell): the state it starts from */
		s->at = (struct xt_at){ .off = off, .tsc = s->last_tsc, .cur = s->cur,
					.flags = (s->lost_pending ? XT_AT_LOST_PENDING : 0) |
						 (s->once_done ? XT_AT_ONCE_DONE : 0) |
						 (off == s->announced_off ? XT_AT_ANNOUNCED : 0) };
		s->pos += size;
		uint64_t before = s->last_tsc;
		if (h >> 31)
			s->last_tsc = xt_rd64(p + 4);
		else if (!s->last_tsc)
			s->last_tsc = s->first_tsc;
		uint32_t e = h & 0x0fffffffu, type = xt_type(e);
		struct xt_rec rec = { .event = e, .extra = (h >> 28) & 7u, .has_tsc = (h >> 31) != 0,
				      .size = size, .data = p + (h >> 31 ? 12 : 4) };
		s->returned = true;
		/* after an HVM/PV/shadow record, a VMEXIT or a VMENTRY the Xen model knows whether
		 * the current vCPU is HVM or PV: the next XT_ONCE records up to the next runstate
		 * or lost-records record change nothing (the types of XT_ONCE records, with
		 * VMEXIT's and VMENTRY's) */
		s->once_done = (1u << type) & (1u << VMS_XEN_T_VMEXIT | 1u << VMS_XEN_T_VMENTRY |
					       1u << VMS_XEN_T_HVM | 1u << VMS_XEN_T_PV |
					       1u << VMS_XEN_T_SHADOW);
		ev->ts = s->last_tsc;
		ev->f[0] = ev->f[1] = ev->f[2] = ev->f[3] = ev->f[4] = 0;
		ev->s[0] = ev->s[1] = NULL;
		ev->cpu = s->cpu;
		ev->stream = stream;
		ev->machine = 0;
		ev->tid = s->cur;
		ev->type = type;
		ev->kind = VMS_K_OTHER;
		ev->flags = 0;
		if (s->lost_pending) {
			ev->flags = VMS_EVF_LOST_BEFORE;
			s->lost_pending = false;
		}
		s->last_off = off;
		switch (ev->type) {
		case VMS_XEN_T_RUNSTATE_CHANGE:
		case VMS_XEN_T_RUNSTATE_CONTINUE:
			runstate_event(r, s, &rec, off, ev);
			break;
		case VMS_XEN_T_VMEXIT: {
			bool wide = (rec.event & VMS_XEN_TRC_64_FLAG) != 0;
			ev->kind = VMS_K_KVM_EXIT;
			ev->f[0] = xt_rd32(rec.data);
			ev->f[1] = (rec.event & ~VMS_XEN_TRC_64_FLAG) == VMS_XEN_TRC_SVM_EXIT ? 2 : 1;
			ev->f[2] = wide ? xt_rd64(rec.data + 4) : xt_rd32(rec.data + 4);
			break;
		}
		case VMS_XEN_T_VMENTRY:
			ev->kind = VMS_K_KVM_ENTRY;
			ev->f[0] = s->cur > 0 ? vms_xen_tid_vcpu(s->cur) : 0;
			break;
		case VMS_XEN_T_LOST_RECORDS:
			ev->f[0] = xt_rd32(rec.data);
			ev->f[1] = xt_rd32(rec.data + 4);
			ev->f[2] = xt_rd64(rec.data + 8);
			/* at the first lost TSC (kept in this CPU's time order), the end after it */
			s->lost_end_tsc = s->last_tsc;
			ev->f[3] = s->lost_end_tsc;
			s->lost_end_pending = true;
			ev->ts = ev->f[2] < before ? before : ev->f[2] > s->last_tsc ? s->last_tsc : ev->f[2];
			s->lost_pending = true;
			s->cur = -1; /* who runs here is unknown until the next runstate record */
			break;
		default:
			ev->f[0] = rec.event;
			for (uint32_t i = 0; i < rec.extra && i < 4; i++)
				ev->f[1 + i] = xt_rd32(rec.data + 4 * i);
			break;
		}
		return 1;
	}
}

static int xt_next(struct vms_source *src, uint32_t stream, struct vms_event *ev)
{
	struct xt_reader *r = src->impl;
	if (stream >= r->nr_st)
		return 0;
	struct xt_stream *s = &r->st[stream];
	if (r->seek_failed && s->seek_status < 0)
		return vms_error_set(&src->err, s->seek_status, "%s: stream %u: nowhere after a "
				     "failed seek", src->path, stream);
	if (r->pool)
		return xt_pool_next(r, stream, ev);
	s->skc = r->skip_counts;
	s->skt = r->skip_total;
	return xt_decode_next(r, s, stream, ev);
}

static uint32_t xt_nr_streams(struct vms_source *src)
{
	return ((struct xt_reader *)src->impl)->nr_st;
}

void xt_stream_reset(struct xt_stream *s)
{
	uint32_t cpu = s->cpu;
	uint64_t first = s->first_tsc, final = s->final_off, first_blk = s->first_blk;
	memset(s, 0, sizeof *s);
	s->cpu = cpu;
	s->first_tsc = first;
	s->final_off = final;
	s->first_blk = first_blk;
	s->next_blk = first_blk; /* (no hop from the file's start to a CPU that begins late) */
	s->cur = -1;
	memset(s->name_key, 0xff, sizeof s->name_key);
}

static int xt_rewind(struct vms_source *src)
{
	struct xt_reader *r = src->impl;
	if (r->pool) {
		xt_pool_rewind(r); /* (the same, with no job running, and the queues emptied) */
		return 0;
	}
	if (r->dropped) {
		madvise((void *)r->map, r->dropped, MADV_DONTNEED);
		r->dropped = 0;
	}
	for (uint32_t i = 0; i < r->nr_st; i++)
		xt_stream_reset(&r->st[i]);
	return 0;
}

/* Records no analysis reads are left out and counted by type (env VMS_XENTRACE_SKIP=0 turns
 * this off, to compare). */
static void xt_skip_unread(struct vms_source *src, uint64_t *type_counts, uint64_t *total)
{
	struct xt_reader *r = src->impl;
	const char *env = getenv("VMS_XENTRACE_SKIP");
	bool on = type_counts && total && !(env && strcmp(env, "0") == 0);
	r->skip_counts = on ? type_counts : NULL;
	r->skip_total = on ? total : NULL;
	if (r->pool)
		xt_pool_set_skip(r, on);
}

static int xt_format_event(struct vms_source *src, uint32_t stream, char *buf, size_t len)
{
	struct xt_reader *r = src->impl;
	if (stream >= r->nr_st || !len)
		return -1;
	/* (with the pool the stream's decoder is ahead of what was taken) */
	uint64_t last = r->pool ? xt_pool_shown_off(r, stream) : r->st[stream].last_off;
	if (last + 4 > r->valid_end) {
		buf[0] = '\0';
		return -1;
	}
	/* the last record, decoded again (it was checked at open) */
	struct xt_rec rec;
	xt_decode(r->map + last, &rec);
	uint32_t ev = rec.event, w0 = rec.extra ? xt_rd32(rec.data) : 0;
	int n;
	if (xt_is_runstate_change(ev) && rec.extra >= 1)
		n = snprintf(buf, len, "runstate_change d%uv%u %s->%s", w0 >> 16, w0 & 0xffff,
			     vms_xen_runstate_name((ev >> 8) & 0xf),
			     vms_xen_runstate_name((ev >> 4) & 0xf));
	else   /* every other record by its name and fields (xentrace_names.c) */
		n = vms_xt_format_record(&rec, buf, len);
	/* words past the dom:vcpu word of a runstate change (none in Xen 4.17's) */
	for (uint32_t i = 1; xt_is_runstate_change(ev) && i < rec.extra && n >= 0 && (size_t)n < len;
	     i++)
		n += snprintf(buf + n, len - (size_t)n, " 0x%x", xt_rd32(rec.data + 4 * i));
	return 0;
}

static void xt_close(struct vms_source *src)
{
	if (!src)
		return;
	vms_xt_free(src->impl);
	vms_trace_meta_free(&src->meta);
	free(src->path);
	free(src);
}

const struct vms_source_ops vms_xentrace_ops = {
	.name = "xentrace",
	.nr_streams = xt_nr_streams,
	.next = xt_next,
	.rewind = xt_rewind,
	.skip_unread = xt_skip_unread,
	.format_event = xt_format_event,
	.tell = xt_tell,
	.seek = xt_seek,
	.close = xt_close,
};
