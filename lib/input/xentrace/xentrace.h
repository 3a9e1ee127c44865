/* xentrace reader internals (include/vmscope/xentrace.h is the contract). */
#ifndef VMS_XENTRACE_INTERNAL_H
#define VMS_XENTRACE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vmscope/source.h"
#include "vmscope/xentrace.h"

#define XT_MAX_CPUS 4096      /* physical CPUs: beyond is damage */
#define XT_MAX_VCPUS 4096     /* vCPUs of one domain: beyond is damage */
#define XT_NR_DOMIDS 32768    /* domain ids 0..32767 (the idle domain is the last) */

static inline uint32_t xt_rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t xt_rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* A record's size in bytes from its header's top nibble (cycles_present:1 | extra:3):
 * 4 + 4 * extra, + 8 when a TSC follows. The loops that hop over records (the walk at open,
 * skip_unread's runs) are a chain, header load -> size -> next position, whose latency is
 * most of their time (the work on each record runs beside it): arithmetic, not a table
 * load, keeps the link short. Hopping xen/xentrace.bin's 180,493 records, in-process min of
 * 300: 790 us with the table, 680 us so; branches per size (which the CPU would predict
 * past the load) 375 us alone but slower inside the real loops (mispredicted) */
static inline uint32_t xt_size(uint32_t h)
{
	return 4u + ((h >> 26) & 0x1cu) + ((h >> 28) & 8u);
}

/* How far ahead of a hop the mapping is prefetched (bytes; a prefetch never faults). The
 * streams read their CPUs' blocks interleaved, after the walk has gone through the whole
 * file, and the hardware prefetchers stop at each 4 KiB page: without it, a header load
 * that misses the caches stalls the hop chain */
#define XT_PREFETCH 4096

/* One record's header, decoded. */
struct xt_rec {
	uint32_t event;          /* 28 bits */
	uint32_t extra;          /* extra words, 0..7 */
	bool has_tsc;
	uint32_t size;           /* bytes */
	const uint8_t *data;     /* the extra words */
};

static inline void xt_decode(const uint8_t *p, struct xt_rec *r)
{
	uint32_t h = xt_rd32(p);
	r->event = h & 0x0fffffffu;
	r->extra = (h >> 28) & 7u;
	r->has_tsc = (h >> 31) != 0;
	r->size = 4u + (r->has_tsc ? 8u : 0u) + 4u * r->extra;
	r->data = p + 4 + (r->has_tsc ? 8 : 0);
}

static inline bool xt_is_runstate_change(uint32_t ev)
{
	return (ev & 0xfffff00fu) == VMS_XEN_TRC_RUNSTATE_CHANGE;
}

static inline bool xt_is_vmexit(uint32_t ev)
{
	uint32_t e = ev & ~VMS_XEN_TRC_64_FLAG;
	return e == VMS_XEN_TRC_VMX_EXIT || e == VMS_XEN_TRC_SVM_EXIT;
}

struct xt_reader;
struct xt_pool;

/* Give back the mapped pages more than 2 MiB below `upto` (they stay in the page cache and
 * come back if touched again), so that the resident set does not grow with the file. */
void xt_give_back(struct xt_reader *r, uint64_t upto);

/* class index of an event (enum order of vms_xen_class_name), VMS_XEN_NR_CLASSES - 1 if none:
 * TRC_GEN 0x0001f000 ... TRC_HW 0x0080f000 are one bit each in bits 16..23, TRC_GUEST is
 * 0x0800f000 (inline: it runs for every record of the file) */
static inline uint32_t xt_class(uint32_t ev)
{
	uint32_t main = ev >> 16;
	if (main && main <= 0x80 && !(main & (main - 1)))
		return (uint32_t)__builtin_ctz(main);
	return main == 0x800 ? 8 : 9;
}

/* the type of a record (enum vms_xen_type) */
static inline uint32_t xt_type(uint32_t ev)
{
	if (ev == VMS_XEN_TRC_LOST_RECORDS)
		return VMS_XEN_T_LOST_RECORDS;
	if (ev == VMS_XEN_TRC_WRAP_BUFFER)
		return VMS_XEN_T_WRAP_BUFFER;
	if (xt_is_runstate_change(ev))
		return VMS_XEN_T_RUNSTATE_CHANGE;
	if (ev == VMS_XEN_TRC_RUNSTATE_CONTINUE)
		return VMS_XEN_T_RUNSTATE_CONTINUE;
	if (ev == VMS_XEN_TRC_SCHED_SWITCH)
		return VMS_XEN_T_SCHED_SWITCH;
	if (ev == VMS_XEN_TRC_VMENTRY)
		return VMS_XEN_T_VMENTRY;
	if (xt_is_vmexit(ev))
		return VMS_XEN_T_VMEXIT;
	return VMS_XEN_T_GEN + xt_class(ev);
}

/* A scheduler record other than the runstates (class TRC_SCHED, not the TRC_SCHED_MIN
 * subclass 0x00021000): the credit schedulers' internals, most of a real file's records */
static inline bool xt_sched_internal(uint32_t ev)
{
	return (ev >> 16) == 0x002 && (ev & 0xf000) != 0x1000;
}

/* What the analyses read of a record (the source's skip_unread):
 *   XT_READ     lost records, runstates, VMENTRY/VMEXIT: the analyses and the Xen model
 *   XT_ONCE     other HVM, PV and shadow records: the Xen model learns from them whether the
 *               vCPU current on the CPU is HVM or PV, which only the first of a run of them
 *               (with VMEXIT and VMENTRY) can change, nothing but runstate and lost-records
 *               records changing the CPU's current vCPU in between
 *   XT_UNREAD   the rest (scheduler internals, memory, hardware, dom0op, guest records):
 *               kind VMS_K_OTHER and no type any consumer of an analysis pass looks at */
enum { XT_READ, XT_ONCE, XT_UNREAD };

static inline int xt_read_kind(uint32_t ev)
{
	switch (ev >> 16) {
	case 0x001: return ev == VMS_XEN_TRC_LOST_RECORDS ? XT_READ : XT_UNREAD;
	case 0x002:
		return xt_is_runstate_change(ev) || ev == VMS_XEN_TRC_RUNSTATE_CONTINUE ? XT_READ
											  : XT_UNREAD;
	case 0x008:
		return xt_is_vmexit(ev) || ev == VMS_XEN_TRC_VMENTRY ? XT_READ : XT_ONCE;
	case 0x020:
	case 0x040: return XT_ONCE;
	default: return XT_UNREAD;
	}
}
/* the host thread of (dom, vcpu): 0 for the idle domain, -1 when out of range */
static inline int32_t xt_tid(uint32_t dom, uint32_t vcpu)
{
	if (dom == VMS_XEN_IDLE_DOMAIN)
		return 0;
	if (dom >= VMS_XEN_IDLE_DOMAIN || vcpu >= XT_MAX_VCPUS)
		return -1;
	return VMS_XEN_TID(dom, vcpu);
}

#define XT_NAMES 8 /* (a power of 2) */

/* Where a stream stood before the record it decoded last, for tell (xentrace_seek.c): what
 * the stream carries from record to record that decoding the record again needs. */
struct xt_at {
	uint64_t off;            /* the record (0: none since the start: records never are at 0) */
	uint64_t tsc;            /* last_tsc before it */
	int32_t cur;             /* the vCPU thread current on the CPU before it */
	uint32_t flags;          /* XT_AT_* */
};
#define XT_AT_LOST_PENDING 1u /* the record after a lost-records marker: flagged */
#define XT_AT_ONCE_DONE 2u    /* once_done before it */
#define XT_AT_ANNOUNCED 4u    /* the switch before it announced it (announced_off) */
#define XT_AT_LOST_END 8u     /* the record is lost records, and its LOST_END was returned */
#define XT_AT_FLAGS 15u

/* Every XT_MARK_EVERY-th block's offset is kept by the open's walk (xt_reader.marks), so
 * that a position read back is checked by hopping at most that many block headers */
#define XT_MARK_EVERY 64

/* (on cache lines of its own: with the pool a worker writes a stream's fields at every record
 * it decodes, and the reading thread decodes others at the same time) */
struct xt_stream {
	_Alignas(64) uint32_t cpu;
	uint64_t next_blk;       /* where to look for this CPU's next block */
	uint64_t pos, end;       /* the record to read and the end of the block in hand */
	uint64_t last_tsc;       /* the last TSC of this CPU (records without one take it) */
	uint64_t first_tsc;      /* before any: the CPU's first TSC */
	int32_t cur;             /* the vCPU thread running on this CPU: 0 idle, -1 unknown */
	bool lost_pending;       /* a lost-records marker was read: flag the next event */
	bool lost_end_pending;   /* its LOST_END event is the next one, at lost_end_tsc */
	uint64_t lost_end_tsc;
	bool in_block;
	bool done;               /* no block of its CPU is left */
	uint64_t final_off;      /* where this CPU's last record is (found at open) */
	uint64_t first_blk;      /* where its first block is (found at open) */
	bool returned;           /* a record was returned since the rewind */
	bool once_done;          /* an XT_ONCE, VMEXIT or VMENTRY record was returned last */
	uint64_t announced_off;  /* the record a switch's peek took as its next (0 none) */
	/* the names events point to (s[0], s[1]): the vCPUs this CPU ran lately, by a hash of
	 * who (see name_in), so that a name is written once, not per switch */
	char name[XT_NAMES][24];
	uint32_t name_key[XT_NAMES]; /* whose name is there, UINT32_MAX none */
	char name_spare[24];     /* for s[1] when its entry holds s[0]'s name */
	uint64_t last_off;       /* the last record (for dump's format_event) */
	struct xt_at at;         /* before the record returned last (tell) */
	int seek_status;         /* a seek failed (< 0): next() fails until a seek or a rewind
				  * (looked at only when the reader's seek_failed is set) */
	/* skip_unread: where the records left out are counted (NULL: none is), set by whoever
	 * decodes before each call: the source's counts when the reading thread decodes alone,
	 * a job's own when a worker of the pool does (xentrace_pool.c) */
	uint64_t *skc, *skt;
};

struct xt_reader {
	int fd;
	const uint8_t *map;
	size_t size;
	uint64_t valid_end;      /* bytes below are complete records */
	uint64_t dropped;        /* the mapping below this was given back (see xt_give_back) */
	struct xt_stream *st;
	uint32_t nr_st;
	struct vms_xen_info info;
	uint32_t *pcpu;
	struct vms_xen_domain *dom;
	uint32_t *vcpu_ids;      /* the domains' vcpus lists, one after the other */
	/* skip_unread: on when counts is set; records left out are counted here by type */
	uint64_t *skip_counts, *skip_total;
	struct xt_pool *pool;    /* NULL: the reading thread decodes alone (xentrace_pool.c) */
	/* a seek failed since the open: next() then looks at the stream's seek_status. Not the
	 * stream's field at every event: with the pool the workers write the streams' lines, and
	 * that load missed the cache at each event (a quarter of xt_next's CPU time) */
	bool seek_failed;
	uint64_t *marks;         /* every XT_MARK_EVERY-th block's offset, from the first */
	uint64_t nr_marks;
};

/* xentrace_stream.c: the stream's next record as an event (1), or 0 at its end, by whoever
 * holds the stream (the reading thread alone, or the pool's job on it); reads only the
 * mapping, the reader's constant fields and s. */
int xt_decode_next(const struct xt_reader *r, struct xt_stream *s, uint32_t stream,
		   struct vms_event *ev);
/* s as at the start of a pass */
void xt_stream_reset(struct xt_stream *s);

/* xentrace_pool.c: the streams decoded ahead by the readers' worker pool. Start joins it
 * when the file is worth it (a no-op at --threads 1); next replaces xt_decode_next for the
 * reading thread; rewind and set_skip change what the workers decode with none running. */
void xt_pool_start(struct xt_reader *r);
void xt_pool_stop(struct xt_reader *r);
int xt_pool_next(struct xt_reader *r, uint32_t stream, struct vms_event *ev);
void xt_pool_rewind(struct xt_reader *r);
void xt_pool_set_skip(struct xt_reader *r, bool on);
/* the offset of the last record the reading thread took from the stream (format_event) */
uint64_t xt_pool_shown_off(const struct xt_reader *r, uint32_t stream);
/* where the stream stood before the event the reading thread took last (tell) */
const struct xt_at *xt_pool_shown(const struct xt_reader *r, uint32_t stream);
/* the stream's jobs paused and its queue dropped, then positioned by xt_position on the
 * reading thread; the workers start on it again from the event after the one sought */
int xt_pool_seek(struct xt_reader *r, uint32_t stream, const struct vms_stream_pos *pos,
		 const char *path, struct vms_error *err);

/* xentrace_seek.c: the stream put where pos says (checked against the file), with no job on
 * it; 0, or a negative status with err set (the stream is then reset) */
int xt_position(struct xt_reader *r, uint32_t stream, const struct vms_stream_pos *pos,
		const char *path, struct vms_error *err);
int xt_tell(struct vms_source *src, uint32_t stream, struct vms_stream_pos *pos);
int xt_seek(struct vms_source *src, uint32_t stream, const struct vms_stream_pos *pos);

/* xentrace_names.c: a record as `dump` shows it, named as xenalyze (or the formats file)
 * names it, with its fields ("csched2:schedule cpu=6 rq=0 ..."); like snprintf. Whether the
 * table of layouts is in ascending order of event (it is looked up by bisection). */
int vms_xt_format_record(const struct xt_rec *rec, char *buf, size_t len);
bool vms_xt_names_sorted(void);

#endif
