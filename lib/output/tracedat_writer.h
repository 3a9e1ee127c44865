/* A trace-cmd trace.dat version 7 writer of our own (no libtracecmd), for `vmscope synth` and
 * for tests that need crafted files. Layout (as trace-cmd 3.x writes it, see
 * Documentation/trace-cmd/trace-cmd.dat.v7.5.txt and lib/trace-cmd/trace-output.c):
 *
 *   magic 17 08 44 "tracing" "7\0", endianness, long size, page size,
 *   "compression\0version\0", u64 offset of the first options section, then sections
 *   (u16 id, u16 flags, u32 description string id, u64 size):
 *     headers, ftrace events, events format, kallsyms, printk, command lines,
 *     options (pointers to the above + TRACECLOCK, UNAME, VERSION, TRACEID, caller's options,
 *              CPUCOUNT, DONE -> the second options section),
 *     buffer flyrecord (per CPU, page-aligned: u32 chunk count + {u32 csize, u32 usize, data}),
 *     options (BUFFER, DONE 0),
 *     strings (the section descriptions).
 *
 * Events are streamed per CPU (vms_tdw_event) in constant memory; everything else is written
 * by vms_tdw_close(). Little-endian, 64-bit long, like the x86_64 kernels it imitates. */
#ifndef VMS_OUTPUT_TRACEDAT_WRITER_H
#define VMS_OUTPUT_TRACEDAT_WRITER_H

#include <stdint.h>

#include "vmscope/error.h"
#include "output/tracedat_codec.h"

/* trace.dat option ids (trace-cmd's enum tracecmd_option_id) */
enum vms_tdw_option {
	VMS_TDW_OPT_DONE = 0,
	VMS_TDW_OPT_DATE = 1,
	VMS_TDW_OPT_BUFFER = 3,
	VMS_TDW_OPT_TRACECLOCK = 4,
	VMS_TDW_OPT_UNAME = 5,
	VMS_TDW_OPT_OFFSET = 7,
	VMS_TDW_OPT_CPUCOUNT = 8,
	VMS_TDW_OPT_VERSION = 9,
	VMS_TDW_OPT_TRACEID = 11,
	VMS_TDW_OPT_TIME_SHIFT = 12,
	VMS_TDW_OPT_GUEST = 13,
	VMS_TDW_OPT_TSC2NSEC = 14,
	VMS_TDW_OPT_STRINGS = 15,
	VMS_TDW_OPT_HEADER_INFO = 16,
	VMS_TDW_OPT_FTRACE_EVENTS = 17,
	VMS_TDW_OPT_EVENT_FORMATS = 18,
	VMS_TDW_OPT_KALLSYMS = 19,
	VMS_TDW_OPT_PRINTK = 20,
	VMS_TDW_OPT_CMDLINES = 21,
};

struct vms_tdw_config {
	const char *path;
	enum vms_tdw_compression compression;
	int level;                  /* 0: the codec's default */
	uint32_t nr_cpus;
	uint32_t page_size;         /* 0: 4096 */
	uint32_t chunk_pages;       /* pages per compressed chunk; 0: 16 */
	const char *header_page;    /* events/header_page text */
	const char *header_event;   /* events/header_event text */
	const char *buffer_clock;   /* the BUFFER option's clock, e.g. "tsc2nsec" */
	const char *trace_clock;    /* TRACECLOCK option text, NULL for none */
	const char *uname;          /* NULL for none */
	const char *version;        /* NULL for none */
	uint64_t trace_id;          /* TRACEID option; 0 for none */
};

struct vms_tdw;

/* One CPU's TIME_SHIFT samples (guest file): offset = -tsc_offset, scaling = ratio, frac. */
struct vms_tdw_ts_cpu {
	uint32_t n;
	const uint64_t *time;
	const int64_t *offset;
	const uint64_t *scaling;
	const uint64_t *frac;
};

int vms_tdw_open(struct vms_tdw **out, const struct vms_tdw_config *cfg, struct vms_error *err);

/* The format text of one event, as the kernel prints events/<system>/<name>/format. Systems
 * are stored in the order first seen. */
int vms_tdw_add_event_format(struct vms_tdw *w, const char *system, const char *format,
			     struct vms_error *err);
/* One saved_cmdlines line: "pid comm". */
int vms_tdw_add_cmdline(struct vms_tdw *w, int32_t pid, const char *comm, struct vms_error *err);
/* Kernel symbols for the kallsyms section, /proc/kallsyms lines ("ffffffff81000000 T _stext\n");
 * appended. */
int vms_tdw_add_kallsyms(struct vms_tdw *w, const char *lines, struct vms_error *err);
/* A raw option for the first options section (after the standard ones, before CPUCOUNT). */
int vms_tdw_add_option(struct vms_tdw *w, uint16_t id, const void *data, uint32_t size,
		       struct vms_error *err);
int vms_tdw_add_tsc2nsec(struct vms_tdw *w, uint32_t mult, uint32_t shift, uint64_t offset,
			 struct vms_error *err);
int vms_tdw_add_guest(struct vms_tdw *w, const char *name, uint64_t guest_trace_id,
		      uint32_t nr_vcpus, const int32_t *host_tids, struct vms_error *err);
/* TIME_SHIFT with the per-CPU fraction trailer. */
int vms_tdw_add_time_shift(struct vms_tdw *w, uint64_t peer_trace_id, uint32_t flags,
			   uint32_t nr_cpus, const struct vms_tdw_ts_cpu *cpus,
			   struct vms_error *err);

/* Append one event (payload = the event's fields, common fields first) at raw time `ts` on
 * `cpu`. Times must not go backwards on a CPU. */
int vms_tdw_event(struct vms_tdw *w, uint32_t cpu, uint64_t ts, const void *payload,
		  uint32_t len, struct vms_error *err);

/* Events written so far. */
uint64_t vms_tdw_events(const struct vms_tdw *w);

/* Write the file and free the writer (also on failure, which removes the partial file). */
int vms_tdw_close(struct vms_tdw *w, struct vms_error *err);
/* Free without writing. */
void vms_tdw_discard(struct vms_tdw *w);

#endif
