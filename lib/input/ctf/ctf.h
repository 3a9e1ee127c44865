/* The CTF reader for traces written by vmscope's tracer library (libvmstrace): a direct
 * decoder of that one layout (see tracer/metadata.c), which it checks in the metadata
 * before reading anything. Other CTF traces are "not this format". */
#ifndef VMS_CTF_H
#define VMS_CTF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmscope/error.h"

#define CTF_MAX_FIELDS 10
#define CTF_MAX_EVENTS 65536
#define CTF_MAX_METADATA (16u << 20)
#define CTF_PACKET_HEADER 80   /* packet header + context, all fixed */
#define CTF_EVENT_HEADER 12    /* header: u16 id + u64 timestamp; event context: u16 cpu_id */

enum ctf_field_kind { CTF_F_INT, CTF_F_STR };

struct ctf_field {
	char name[64];
	uint8_t kind;          /* enum ctf_field_kind */
	uint8_t size;          /* bytes (1, 2, 4, 8) for CTF_F_INT */
	bool is_signed;
	uint8_t base;          /* 10 or 16 */
};

struct ctf_event_class {
	char *name;            /* NULL: no event has this id */
	uint32_t nfields;
	struct ctf_field fields[CTF_MAX_FIELDS];
};

struct ctf_meta {
	uint8_t uuid[16];
	uint64_t freq;
	int64_t offset_s;
	uint64_t offset;
	bool tsc;              /* clock description says TSC */
	uint32_t nr_classes;   /* highest id + 1 */
	struct ctf_event_class *classes;
};

/* Parse a vmstrace metadata text. Returns 1 when parsed, 0 when it is not vmstrace's
 * metadata (another CTF producer), or a negative status with err set. */
int ctf_meta_parse(const char *path, const char *text, size_t len, struct ctf_meta *m,
		   struct vms_error *err);
void ctf_meta_free(struct ctf_meta *m);

#endif
