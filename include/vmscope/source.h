/* vmscope: a source is one opened trace (one machine's recording) in any format.
 *
 * A source exposes one or more streams (typically one per CPU), each in its own time order.
 * The merge (vms_merge) orders the streams of all sources by reference time. A source also
 * carries the metadata the model and the clock need (trace ids, GUEST and TIME_SHIFT options,
 * TSC2NSEC, the clock name) in vms_trace_meta, filled when the source is opened.
 *
 * Readers are untrusted-input parsers: they bounds-check everything, never allocate what a
 * header merely claims, and report damage as "FILE: WHAT at byte offset N". */
#ifndef VMSCOPE_SOURCE_H
#define VMSCOPE_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmscope/error.h"
#include "vmscope/event.h"
#include "vmscope/ksyms.h"

#ifdef __cplusplus
extern "C" {
#endif

/* trace.dat GUEST option (host file): one guest's vCPU -> host thread map. */
struct vms_guest_map {
	char *name;              /* may be "" */
	uint64_t trace_id;
	uint32_t nr_vcpus;
	uint32_t *vcpu;          /* nr_vcpus entries */
	int32_t *host_tid;       /* nr_vcpus entries */
};

/* trace.dat TIME_SHIFT samples of one guest CPU. KVM defines
 * guest_tsc = ((host_tsc * scaling) >> frac) + tsc_offset, and trace-cmd stores
 * offset = -tsc_offset. */
struct vms_timeshift_cpu {
	uint32_t n;
	uint64_t *time;          /* guest timestamps (raw) at which each sample applies */
	int64_t *offset;
	uint64_t *scaling;
	uint64_t *frac;          /* all 0 when the file has no fraction trailer */
};

struct vms_timeshift {
	uint64_t peer_trace_id;  /* the host's TRACEID */
	uint32_t flags;          /* 1 = INTERPOLATE */
	uint32_t nr_cpus;
	struct vms_timeshift_cpu *cpu;
};

enum vms_timeshift_flag { VMS_TIMESHIFT_INTERPOLATE = 1 };

struct vms_trace_meta {
	char format[64];         /* e.g. "trace.dat v7 zstd", "Trace Compass XML" */
	uint32_t nr_cpus;        /* CPUs of the machine (CPUCOUNT, or the highest seen + 1) */
	char clock[32];          /* trace clock name ("local", "tsc2nsec", "ns", ...) */
	bool ts_in_ns;           /* raw timestamps are already nanoseconds */

	bool has_trace_id;
	uint64_t trace_id;

	bool has_tsc2nsec;       /* raw ts are TSC cycles: ns = (tsc * mult) >> shift */
	uint32_t tsc_mult, tsc_shift;
	uint64_t tsc_offset;

	int64_t offset_ns;       /* OFFSET option (added to ns timestamps) */
	bool has_date;
	int64_t date_offset_ns;  /* DATE option, converted to ns */

	struct vms_timeshift *timeshift; /* NULL unless a TIME_SHIFT option is present */

	uint32_t nr_guests;      /* GUEST options */
	struct vms_guest_map *guests;

	/* event types of the source: type_names[i] is "system:name" (or just "name") */
	uint32_t nr_types;
	char **type_names;
	uint16_t *type_kinds;    /* the vms_kind each type maps to */

	/* thread names known from metadata (saved cmdlines, statedumps): tid -> comm */
	uint32_t nr_comms;
	int32_t *comm_tid;
	char **comm_name;

	/* kernel symbols recorded with the trace, or NULL: read on first use through
	 * vms_source_ksyms() (a host's kallsyms is megabytes; most commands never need it) */
	struct vms_ksyms *ksyms;
	bool ksyms_loaded;

	uint64_t lost_events;    /* missed-event counts the source could read */
	bool lost_events_unknown;/* events were lost but the count is not recorded */
	bool ended_abruptly;     /* the recording did not end cleanly (the traced process was
	                            killed): what is there is complete, the rest is missing */
	/* formats of events vmscope reads (sched_switch, kvm_exit...) that it refused as unsafe
	 * to parse or that could not be parsed: their events are kind OTHER, not decoded. The
	 * first one's name (in type_names), for the warning that says so. A reader may find
	 * this on the first event of the type (trace.dat parses formats lazily): the count
	 * and type_kinds are final once the streams have been read. */
	uint32_t nr_formats_unread;
	const char *format_unread;

	/* A hypervisor's own trace (xentrace): the domains it shows, each a guest of this
	 * machine whose vCPU v runs as host thread VMS_XEN_TID(id, v) (vmscope/xentrace.h).
	 * Owned by the reader. */
	uint32_t nr_xen_domains;
	const struct vms_xen_domain *xen_domains;
};

struct vms_source;
struct vms_xen_domain;

/* Where one stream stands, for a checkpoint: format-defined words (fixed width, so a position
 * is serialised as VMS_POS_WORDS little-endian u64). A position is untrusted when read back:
 * seek checks it against the file and fails with src->err set, never reads out of bounds. */
#define VMS_POS_WORDS 8
struct vms_stream_pos {
	uint64_t w[VMS_POS_WORDS];
};

struct vms_source_ops {
	const char *name;        /* format name: "tracedat", "tcxml", "ctf", "xentrace", ... */
	/* streams: fixed after open */
	uint32_t (*nr_streams)(struct vms_source *src);
	/* Next event of one stream, in that stream's time order.
	 * Returns 1 with *ev filled, 0 at the end of the stream, or a negative vms_status with
	 * src->err set. ev->machine is left to the caller; ev->stream is set. */
	int (*next)(struct vms_source *src, uint32_t stream, struct vms_event *ev);
	/* Back to the beginning of every stream (for the model pass, then the analysis pass). */
	int (*rewind)(struct vms_source *src);
	/* Optional: only events of these kinds need be decoded (others may be skipped without
	 * decoding their fields; they are still counted). wanted == NULL means all. */
	void (*set_wanted)(struct vms_source *src, const bool *wanted /* [VMS_K_COUNT] */);
	/* Optional: leave out (do not return) the records of the format that no analysis pass
	 * reads: kind VMS_K_OTHER, a type no consumer looks at, nothing the format's own model
	 * needs. Each one left out is counted in type_counts[type] (meta.nr_types long) and in
	 * *total. The first and the last event of every stream and any event carrying
	 * VMS_EVF_LOST_BEFORE are still returned. NULL counts: every event again. */
	void (*skip_unread)(struct vms_source *src, uint64_t *type_counts, uint64_t *total);
	/* Optional: a human-readable rendering of the last event returned by next() on that
	 * stream, for `vmscope dump`. Writes at most len bytes (NUL-terminated). */
	int (*format_event)(struct vms_source *src, uint32_t stream, char *buf, size_t len);
	/* Optional: the kernel symbols recorded with the trace, parsed on demand (NULL when
	 * there are none; a damaged symbol section sets src->err and returns NULL). */
	struct vms_ksyms *(*load_ksyms)(struct vms_source *src);
	/* Optional (NULL: the format cannot seek): the position of the event next() returned
	 * last on that stream (the start of the stream before any), such that after seek() to
	 * it, next() returns that same event again and then exactly the events and flags the
	 * uninterrupted read gives. tell: 0; seek: 0 or a negative status with src->err set. */
	int (*tell)(struct vms_source *src, uint32_t stream, struct vms_stream_pos *pos);
	int (*seek)(struct vms_source *src, uint32_t stream, const struct vms_stream_pos *pos);
	void (*close)(struct vms_source *src);
};

struct vms_source {
	const struct vms_source_ops *ops;
	void *impl;
	char *path;
	struct vms_trace_meta meta;
	struct vms_error err;
};

/* Open a trace of any known format (decided by content, not by name). A directory is a CTF
 * trace. Returns NULL with err set. */
struct vms_source *vms_source_open(const char *path, struct vms_error *err);
void vms_source_close(struct vms_source *src);
/* The kernel symbols recorded with the trace (loaded on the first call), or NULL. A damaged
 * symbol section is said once on stderr; the trace's events are unaffected. */
const struct vms_ksyms *vms_source_ksyms(struct vms_source *src);

/* The ops above, VMS_ERR_USAGE (with src->err set) for a format that cannot seek. */
int vms_source_tell(struct vms_source *src, uint32_t stream, struct vms_stream_pos *pos);
int vms_source_seek(struct vms_source *src, uint32_t stream, const struct vms_stream_pos *pos);

/* Free everything a reader put into meta (used by every reader's close). */
void vms_trace_meta_free(struct vms_trace_meta *meta);

/* Per-format openers (each returns NULL with err set; NULL with err->status == 0 means
 * "not this format"). */
struct vms_source *vms_tracedat_open(const char *path, struct vms_error *err);
struct vms_source *vms_tcxml_open(const char *path, struct vms_error *err);
/* A CTF 1.8 trace directory (LTTng kernel or UST, libvmstrace, any producer), or an LTTng
 * session directory holding several: one machine (lib/input/ctf). */
struct vms_source *vms_ctf_open(const char *path, struct vms_error *err);

#ifdef __cplusplus
}
#endif
#endif
