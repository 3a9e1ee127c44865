/* trace-cmd trace.dat reader: internals shared by the files of lib/input/tracedat/.
 *
 *   tracedat_file.c     the mapped file, bounds-checked reads, sections and decompression
 *   tracedat_open.c     the container: header, options (chained sections), buffers, meta
 *   tracedat_formats.c  event formats through libtraceevent -> one td_type per event id
 *   tracedat_guard.c    what libtraceevent may be given (it crashes on hostile formats)
 *   tracedat_stream.c   the hot path: per-CPU chunks, ring-buffer pages, records -> vms_event
 *   tracedat_prefetch.c the worker pool's jobs: each stream's next chunks decompressed ahead
 *   tracedat_seek.c     a stream's position (tell) and the way back to it (seek)
 *
 * The file is mapped read-only; every offset and size read from it is checked against the
 * real file size before use, so a damaged file gives "PATH: WHAT at byte offset N".
 *
 * Behaviour worth knowing outside this folder:
 *  - streams: one per CPU listed in each buffer, the top buffer's first, then the instances
 *    in option order; vms_tracedat_stream_buffer() names a stream's buffer, and
 *    meta.format lists the instance names ("trace.dat v7 zstd, buffers: top NAME...");
 *  - set_wanted: events of unwanted kinds are still returned (kind, type, ts, tid, cpu),
 *    with f[] zero and s[] NULL; kinds other than OTHER are decoded only when wanted;
 *  - meta.lost_events / lost_events_unknown grow while the streams are read (the missed-event
 *    flags are in the pages), each page counted once however often the source is rewound;
 *  - a CPU whose data is cut by the end of the file returns its events up to the cut, then
 *    an error; metadata damage fails the open;
 *  - meta.type_kinds says at open the kind each format's name maps to; a format is parsed on
 *    the first record of its type, and one refused as unsafe or not parsed then turns kind
 *    OTHER there and in meta.nr_formats_unread (which grows while the streams are read);
 *  - the reading threads are vms_pool_threads() (--threads N; VMS_TRACEDAT_THREADS=0 in the
 *    environment means 1, for measurements): with 1 the reader decompresses alone; a source
 *    joins the pool from 1 MiB of compressed data (VMS_TRACEDAT_POOL_MIN=BYTES, for tests). */
#ifndef VMS_TRACEDAT_H
#define VMS_TRACEDAT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <traceevent/trace-seq.h>
#include <stdint.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

#include "vmscope/source.h"
#include "core/pool.h"

struct tep_handle;
struct tep_event;

enum td_compression { TD_COMP_NONE, TD_COMP_ZLIB, TD_COMP_ZSTD };

/* Limits: nothing a header claims is allocated beyond these (and the real file size). */
#define TD_MAX_SECTION_USIZE (512u << 20) /* uncompressed metadata section */
#define TD_MAX_CHUNK_USIZE (16u << 20)    /* one decompressed chunk (trace-cmd: ~40 KiB) */
#define TD_MAX_RATIO 4096u                /* usize <= csize * ratio + 1 MiB */
#define TD_MAX_CPUS 4096u                 /* CPUs of one buffer */
#define TD_MAX_BUFFERS 256u
#define TD_MAX_STREAMS 16384u             /* CPUs of all buffers together */
/* All decompressed chunk buffers of a source together (each stream holds its current chunk
 * and up to TD_PF_DEPTH prefetched ones): at most TD_CHUNK_MEM_BASE + TD_CHUNK_MEM_PER_BYTE
 * bytes per byte of the file, and never more than TD_CHUNK_MEM_MAX. trace-cmd's chunks are
 * ~40 KiB and compress 5-20x, so a real trace stays far below; without the bound, 64 CPUs
 * whose chunks claim 16 MiB of zeros each (an 18.7 KB file) took 1 GB. */
#define TD_CHUNK_MEM_BASE (64ull << 20)
#define TD_CHUNK_MEM_PER_BYTE 32ull
#define TD_CHUNK_MEM_MAX (1ull << 30)
/* Decompressed metadata sections (options, headers, formats, printk, cmdlines) of a source
 * together, by the same rule: a kernel's formats are ~3 MB and compress ~10x. */
#define TD_META_MEM_BASE (64ull << 20)
#define TD_META_MEM_PER_BYTE 64ull
#define TD_META_MEM_MAX (1ull << 30)

/* Decompression state of one thread, reused for every section and chunk. */
struct td_dctx {
	ZSTD_DCtx *zstd;
	z_stream zs;        /* reused via inflateReset */
	bool zs_init;
};
void td_dctx_free(struct td_dctx *dc);

/* The opened file: a read-only mapping plus how to read its integers. */
struct td_file {
	const char *path;
	const uint8_t *base;
	uint64_t size;
	bool swap;          /* file byte order differs from the host's */
	int long_size;      /* 4 or 8 */
	uint32_t page_size; /* from the file header */
	enum td_compression comp;
	struct td_dctx dc;  /* the reading thread's */
	struct vms_error *err;
	uint64_t meta_mem;  /* decompressed metadata section bytes so far (td_section) */
};

static inline uint16_t td_rd16(const struct td_file *f, const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return f->swap ? __builtin_bswap16(v) : v;
}
static inline uint32_t td_rd32(const struct td_file *f, const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return f->swap ? __builtin_bswap32(v) : v;
}
static inline uint64_t td_rd64(const struct td_file *f, const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return f->swap ? __builtin_bswap64(v) : v;
}

/* A bounded cursor over bytes in memory (a section or an option); `base_off` is the file
 * offset of buf[0] for error messages (or of the compressed section when `in_comp`). */
struct td_cur {
	const struct td_file *f;
	const uint8_t *buf;
	uint64_t len, pos;
	uint64_t base_off;
	bool in_comp;
};

uint64_t td_cur_off(const struct td_cur *c); /* file offset of the cursor, for messages */
int td_cur_u16(struct td_cur *c, uint16_t *v, const char *what);
int td_cur_u32(struct td_cur *c, uint32_t *v, const char *what);
int td_cur_u64(struct td_cur *c, uint64_t *v, const char *what);
int td_cur_bytes(struct td_cur *c, uint64_t n, const uint8_t **p, const char *what);
/* A NUL-terminated string inside the cursor's bytes (never past them). */
int td_cur_str(struct td_cur *c, const char **s, const char *what);

int td_file_open(struct td_file *f, const char *path, struct vms_error *err);
void td_file_close(struct td_file *f);
/* Hand the mapped pages of [*done, upto) back to the page cache once 2 MiB lie behind
 * the reader, and move *done; 0 in *done means "nothing released yet, start at upto". */
void td_file_release(const struct td_file *f, uint64_t *done, uint64_t upto);
int td_fail(const struct td_file *f, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Decompress csize bytes at src into dst (usize bytes exactly); `off` is src's file
 * offset for messages. td_decompress_with: with a given context and error target (the
 * prefetch thread's). */
int td_decompress(struct td_file *f, const uint8_t *src, uint32_t csize, uint8_t *dst,
		  uint32_t usize, uint64_t off);
int td_decompress_with(const struct td_file *f, struct td_dctx *dc, struct vms_error *err,
		       const uint8_t *src, uint32_t csize, uint8_t *dst, uint32_t usize,
		       uint64_t off);
int td_fail_to(struct vms_error *err, const struct td_file *f, uint64_t off, const char *fmt,
	       ...) __attribute__((format(printf, 4, 5)));
/* The text of a v7 section that holds a size (`size_bytes` 4 or 8) and then that many bytes
 * of lines (printk, cmdlines, kallsyms), given to fn line by line (without the '\n') and
 * never held whole: a compressed section is decompressed through a TD_LINE_WINDOW window; a
 * line longer than TD_LINE_MAX (none a kernel writes in these) is skipped. fn returns 0 or
 * a negative status, which stops the walk and is returned. td_text_lines: the same over
 * text in memory (v6 files: the mapping). */
#define TD_LINE_WINDOW (64u << 10)
#define TD_LINE_MAX 8192u
typedef int (*td_line_fn)(void *ctx, const uint8_t *line, size_t n);
int td_section_lines(struct td_file *f, uint64_t off, int want_id, const char *what,
		     int size_bytes, td_line_fn fn, void *ctx);
int td_text_lines(const uint8_t *p, uint64_t n, td_line_fn fn, void *ctx);
/* A v7 section at file offset `off`: checks the header (id must be want_id unless it is
 * -1), decompresses when flagged, and points a cursor at its content. *owned is set to the
 * malloc'd buffer to free (NULL when the cursor points into the mapping). */
int td_section(struct td_file *f, uint64_t off, int want_id, const char *what,
	       struct td_cur *c, uint8_t **owned, uint16_t *flags_out);

/* Texts given to libtraceevent (tracedat_guard.c): printable ASCII, tab and newline, at most
 * TD_FMT_MAX_LEN bytes; a print format nests at most TD_FMT_MAX_DEPTH levels, has at most
 * TD_FMT_MAX_OPS operators and names only fields its format declares. */
#define TD_FMT_MAX_LEN (64u << 10)
#define TD_FMT_MAX_DEPTH 32
#define TD_FMT_MAX_OPS 1024
bool td_text_bytes_ok(const uint8_t *t, uint64_t len);
/* 1: the format may be given to libtraceevent, 0: refused, VMS_ERR_NOMEM: out of memory */
int td_format_text_ok(const uint8_t *t, uint64_t len);

/* Where to find one field of a record: offset/size within the payload. */
enum { TD_F_PRESENT = 1, TD_F_SIGNED = 2, TD_F_DYNAMIC = 4, TD_F_RELATIVE = 8 };
struct td_field {
	uint16_t off;
	uint8_t size;
	uint8_t flags;
};

/* One event type: its kind and where its kind's fields are. */
struct td_type {
	uint16_t kind;
	uint8_t tid_from_pid;  /* f[0] falls back to common_pid when the field is missing */
	uint8_t mode_plus1;    /* f[2] is kvm_entry's guest_mode: read as guest_mode + 1, so
	                          that 0 says the format does not record it */
	struct td_field f[5];
	struct td_field s[2];
	struct tep_event *tev; /* parsed by libtraceevent (on the first record of a mapped
				  kind, else by format_event); NULL for the "unknown" type */
	const uint8_t *text;   /* the format text (in the mapping or a kept section) */
	uint32_t text_len;
	int32_t id;            /* event id, -1 when the format has none */
	uint64_t off;          /* file offset of the text, for an out-of-memory message */
	bool tried;            /* libtraceevent was asked to parse it */
	bool pending;          /* kind from the name, format not parsed yet: td_formats_resolve
				  on its first record settles the kind and the fields */
	bool unread;           /* a mapped kind whose format was refused or not parsed */
	bool no_print;         /* its print format is not safe to evaluate (see
				  tracedat_formats.c): format_event does not render it */
	const char *sys;
	char *name;            /* "system:name", moved to meta at finish */
};

struct td_formats {
	struct tep_handle *tep;
	uint32_t nr_types;      /* includes the last "unknown" catch-all (after finish) */
	uint32_t cap_types;
	struct td_type *types;
	uint8_t *keep[8];       /* decompressed format sections the texts point into */
	uint32_t nr_keep;
	bool have_common;
	uint32_t *by_id;        /* event id -> type index, for ids below nr_by_id */
	uint32_t nr_by_id;      /* the highest id of a format + 1 (a table of all 65536 ids was
				 * 256 KiB written per open, most of opening a small file) */
	struct td_field common_type, common_pid;
	uint32_t data_off;      /* page header size: timestamp + commit word */
	uint32_t commit_size;   /* 4 or 8 */
};

/* Builds fmt from the format texts; fills meta->type_names/type_kinds. */
int td_formats_init(struct td_formats *fm, struct td_file *f, struct vms_trace_meta *meta);
int td_formats_header_page(struct td_formats *fm, struct td_file *f, const uint8_t *buf,
			   uint64_t len, uint64_t off);
/* Registers one format text (kept by reference: it must outlive the source). Only the
 * name and ID lines are read here (the kind comes from the name); libtraceevent parses the
 * first format (for the common fields) here, a mapped kind's on its first record
 * (td_formats_resolve) and any other's when format_event renders one: parsing all 2000+
 * formats of a typical file, or even the ten vmscope maps, would cost more than reading a
 * small trace's events. */
int td_formats_parse(struct td_formats *fm, struct td_file *f, const uint8_t *text,
		     uint64_t len, const char *sys, uint64_t off);
/* The first record of a pending type: parse its format, map its fields or, when it is
 * refused or cannot be parsed, make it kind OTHER in meta->type_kinds and count it in
 * meta->nr_formats_unread (the CLI warns after reading). 0, or VMS_ERR_NOMEM with err set
 * ("PATH: out of memory at byte offset N" of the format). */
int td_formats_resolve(struct td_formats *fm, uint32_t type, struct vms_trace_meta *meta,
		       struct vms_error *err, const char *path);
/* libtraceevent's view of a type, parsing it on first use (*tev NULL when it cannot be
 * parsed or is not safe to render); VMS_ERR_NOMEM when the guard ran out of memory. */
int td_formats_tep_event(struct td_formats *fm, uint32_t type, struct tep_event **tev);
/* off: where the format sections start, for an out-of-memory message */
int td_formats_finish(struct td_formats *fm, struct td_file *f, struct vms_trace_meta *meta,
		      uint64_t off);
void td_formats_free(struct td_formats *fm);

enum td_pf_state { TD_PF_EMPTY, TD_PF_FILLING, TD_PF_READY, TD_PF_ERROR };

/* Chunks the workers may have ready ahead, per stream. The reader wakes the workers only when
 * a stream's chunks ahead fall to half of it, so that a worker decompresses a few chunks per
 * wake-up: with 2 and a wake-up per chunk taken, report at 2 threads on sched-syscalls-2cpu
 * made 2,400 context switches and 13 % more CPU than at 1. */
#define TD_PF_DEPTH 4

/* One chunk decompressed (or being decompressed) ahead by a worker: one place of the
 * stream's bounded queue of chunks. */
struct td_pf_slot {
	uint8_t *buf;        /* owned by the worker while FILLING */
	uint32_t cap, len, csize;
	uint64_t off;        /* file offset of the chunk header */
	uint64_t seq;        /* chunk index within the stream */
	uint32_t stream;     /* the stream's index */
	int state;           /* enum td_pf_state */
	int result;          /* the worker's decompression: 0 or an error status */
	struct vms_error err;
};

/* One stream: one CPU of one buffer. */
struct td_stream {
	uint32_t cpu;
	uint32_t buffer;     /* index into the buffer names */
	uint64_t data_off;   /* file offset of this CPU's data */
	uint64_t data_size;  /* as claimed */
	uint64_t avail;      /* bytes of it present in the file */
	uint32_t page_size;

	/* compressed: the chunk cursor */
	bool compressed;
	uint32_t chunks_left;
	uint64_t next_chunk;   /* file offset of the next chunk header */
	uint8_t *chunk;        /* decompressed chunk */
	uint32_t chunk_cap, chunk_len;
	uint64_t chunk_off;    /* file offset of the current chunk, for messages */

	/* the pages of the current region (chunk or the mapping) */
	const uint8_t *region;
	uint64_t region_len, region_pos; /* region_pos: start of the next page */
	uint64_t region_file_off;        /* file offset of region[0] (uncompressed) */
	uint64_t uncomp_pos;             /* uncompressed offset of region[0] in the CPU data */

	/* the current page */
	const uint8_t *page;   /* events area start (after the page header) */
	uint32_t page_len, pos;
	uint64_t ts;
	uint64_t page_index;
	uint64_t lost_counted; /* pages whose missed-event counts are in meta already */
	bool lost_pending;
	bool started;
	bool done;
	int error;             /* sticky error status */

	/* chunks decompressed ahead by the prefetch thread (tracedat_prefetch.c), and the
	 * chunk indexes the cursor hands out next / the reader needs next; under pf.mu */
	struct td_pf_slot pf[TD_PF_DEPTH];
	uint64_t claim_seq, need_seq;

	uint64_t released;     /* file offset below which this stream gave its mapped pages back */
	uint64_t last_ts;
	const uint8_t *last_rec; /* payload of the last event returned */
	uint32_t last_len;
	uint32_t last_type;
	uint64_t last_serial;    /* its number among the source's records returned (from 1) */
	uint64_t last_off;       /* its file offset (its chunk's when compressed) */
	/* for tell (tracedat_seek.c): the last record's header offset in its page, whether it
	 * carried VMS_EVF_LOST_BEFORE, last_ts before it; the chunks loaded since the start */
	uint32_t rec_at;
	bool rec_lost;
	uint64_t prev_ts;
	uint64_t chunks_taken;
	/* skip_unread (td_skip_unread): whether a record of this stream was returned since its
	 * start (the first always is), and the last record left out since the last one
	 * returned, held because it may be the stream's last (always returned): its payload
	 * (copied into held_buf before its page goes), type and time (prev_ts: the time before
	 * it, so whether it went backwards) */
	bool returned;
	bool held;
	const uint8_t *held_rec;
	uint32_t held_len, held_type, held_at;
	uint64_t held_ts;
	uint8_t *held_buf;
	uint32_t held_cap;

	char str[2][64];
};

struct td_buffer {
	char *name;  /* "" = top */
	char *clock;
};

/* A compressed source as a client of the readers' worker pool: the workers decompress the
 * chunks after the one being parsed, for every stream, so that decompression (most of the
 * reading cost) overlaps the parsing and whatever the caller does with the events. Memory
 * stays 1 + TD_PF_DEPTH chunks per stream. */
struct td_prefetch {
	struct vms_pool_client pc;
	bool running;          /* joined the pool */
	uint32_t rr;           /* round-robin start, under the pool's lock */
	struct td_dctx *dc;    /* one per worker */
	unsigned nr_dc;
};

struct td_source {
	struct vms_source src;
	struct td_prefetch pf;
	struct td_file f;
	struct td_formats fm;
	uint32_t nr_streams;
	struct td_stream *streams;
	uint32_t nr_buffers;
	struct td_buffer *buffers;
	bool wanted[VMS_K_COUNT];
	int version;
	uint8_t *print_rec;     /* format_event's zero-padded copy of a record (TD_PRINT_REC) */
	struct trace_seq seq;   /* format_event's text, kept for a second call on one record */
	bool seq_ready;
	uint64_t seq_serial;    /* the record whose text seq holds (last_serial), 0: none */
	uint32_t seq_used;      /* the bytes of that record libtraceevent was given */
	uint64_t served;        /* records returned by next() on any stream */
	/* skip_unread: records of kind VMS_K_OTHER left out, counted here by type and in
	 * *skip_total; NULL when off */
	uint64_t *skip_counts, *skip_total;
	_Atomic uint64_t chunk_mem; /* bytes of all chunk buffers (reader and workers) */
	_Atomic uint64_t decompressions; /* chunks decompressed, by any thread */
	uint64_t chunks;        /* chunks the started streams' headers count */
	uint64_t chunk_budget;  /* their bound, from the file size (TD_CHUNK_MEM_*) */
	/* where the kallsyms text is, parsed only when asked (vms_source_ksyms): v7 a section
	 * offset, v6 the text's own place in the file */
	bool has_ksyms;
	uint64_t ksyms_off, ksyms_len;
};

int td_stream_next(struct vms_source *src, uint32_t stream, struct vms_event *ev);
void td_skip_unread(struct vms_source *src, uint64_t *type_counts, uint64_t *total);
/* The next chunk header of a compressed stream: checked against the CPU data and the file,
 * then the cursor advances. 1 claimed, 0 none left, <0 error (in err). */
int td_claim_chunk(const struct td_source *ts, struct td_stream *s, struct vms_error *err,
		   uint64_t *at, uint32_t *csize, uint32_t *usize);
/* Grow a chunk buffer to hold n bytes, within the source's chunk memory budget (`off`: the
 * chunk's file offset, for the message when the budget is exhausted). */
int td_chunk_room(struct td_source *ts, uint8_t **buf, uint32_t *cap, uint32_t n,
		  uint64_t off, struct vms_error *err);
void td_prefetch_start(struct td_source *ts);
/* Next chunk of s through the prefetch thread: 1 loaded into s->chunk, 0 none, <0 error. */
int td_prefetch_take(struct td_source *ts, struct td_stream *s, uint64_t *at, uint32_t *usize);
/* Rewind every stream with the prefetch thread quiet. */
void td_prefetch_rewind(struct td_source *ts);
void td_prefetch_stop(struct td_source *ts);
void td_stream_reset(struct td_stream *s);
/* A stream's first steps, shared with seek (tracedat_seek.c): start (find its data, its chunk
 * count; `locked`: the caller holds the pool's lock), the next chunk, the next non-empty page
 * (each 1 loaded, 0 none left, <0 error). */
int td_stream_start(struct td_source *ts, struct td_stream *s, bool locked);
int td_next_chunk(struct td_source *ts, struct td_stream *s);
int td_next_page(struct td_source *ts, struct td_stream *s);
/* The source's tell and seek ops (vmscope/source.h). */
int td_tell(struct vms_source *src, uint32_t stream, struct vms_stream_pos *pos);
int td_seek(struct vms_source *src, uint32_t stream, const struct vms_stream_pos *pos);
int td_format_event(struct vms_source *src, uint32_t stream, char *buf, size_t len);
/* libtraceevent reads fields at the offsets the format declares and dynamic arrays at the
 * 16-bit offset and length the record holds, without checking them against the record's
 * size: format_event hands it a copy of the record in a zeroed buffer that holds any such
 * reach (format fields are limited to TD_PRINT_FIELD_END at parse time). */
#define TD_PRINT_FIELD_END 65536u
#define TD_PRINT_REC (4 * 65536u)

/* The buffer (instance) name of a stream: "" for the top buffer. Internal to vmscope. */
const char *vms_tracedat_stream_buffer(const struct vms_source *src, uint32_t stream);
/* Chunks the started streams count and chunks decompressed so far (each chunk once per pass
 * whatever the threads: the tests check it). Internal to vmscope. */
void vms_tracedat_counters(const struct vms_source *src, uint64_t *chunks,
			   uint64_t *decompressions);
/* Every chunk decompressed once, nothing parsed (bench/bench_readers.c's probe): the chunks,
 * or <0. Internal to vmscope. */
int64_t vms_tracedat_decompress_all(struct vms_source *src);

#endif
