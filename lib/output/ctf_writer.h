/* A CTF 1.8 writer in LTTng kernel style (lttng-modules 2.x layout: packet header magic, UUID,
 * stream_id; packet context timestamps, content and packet sizes in bits, sequence number,
 * events_discarded, cpu_id; the "large" event header, a compact 32-bit timestamp or an
 * extended id + 64-bit one; a `tid` event context), for `vmscope synth --format lttng` and
 * for tests. One stream file per CPU (channel0_N), packets of 256 KiB streamed in constant
 * memory; the TSDL metadata is written by vms_ctfw_close(). Clock: monotonic nanoseconds with
 * an epoch offset (offset_s, offset). Little-endian. */
#ifndef VMS_OUTPUT_CTF_WRITER_H
#define VMS_OUTPUT_CTF_WRITER_H

#include <stdint.h>

#include "vmscope/error.h"

enum vms_ctfw_type { VMS_CTFW_S32, VMS_CTFW_U32, VMS_CTFW_S64, VMS_CTFW_U64, VMS_CTFW_COMM,
		     VMS_CTFW_U8, VMS_CTFW_STRING };

struct vms_ctfw_field {
	const char *name;          /* written with LTTng's leading '_' */
	uint8_t type;              /* enum vms_ctfw_type; COMM: char[16]; STRING: a CTF string
	                              (NUL-terminated, at most VMS_CTFW_STRING_MAX bytes kept) */
};

struct vms_ctfw_config {
	const char *dir;           /* created if needed */
	const char *hostname;
	const char *kernel_release;
	uint32_t nr_cpus;
	int64_t offset_s;          /* the clock's epoch offset */
	uint64_t offset_ns;        /* < 1e9 */
	uint64_t uuid_seed;        /* the trace UUID is derived from it */
};

struct vms_ctfw;

int vms_ctfw_open(struct vms_ctfw **out, const struct vms_ctfw_config *cfg, struct vms_error *err);
/* Declare an event class (before its first event); *id is its CTF id. At most 16 fields. */
int vms_ctfw_add_event(struct vms_ctfw *w, const char *name, const struct vms_ctfw_field *f,
		       uint32_t n, uint32_t *id, struct vms_error *err);
#define VMS_CTFW_STRING_MAX 63
/* One event at `ts` ns on `cpu` by thread `tid`: integers in vals[] and COMM and STRING
 * fields in comms[], both in field order. Times must not go backwards on a CPU. */
int vms_ctfw_event(struct vms_ctfw *w, uint32_t cpu, uint64_t ts, uint32_t id, int32_t tid,
		   const uint64_t *vals, const char *const *comms, struct vms_error *err);
/* Flush the packets, write the metadata and free the writer (also on failure). */
int vms_ctfw_close(struct vms_ctfw *w, struct vms_error *err);
void vms_ctfw_discard(struct vms_ctfw *w);

#endif
