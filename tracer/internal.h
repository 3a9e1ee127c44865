/* libvmstrace internals shared by its files (not installed). */
#ifndef VMST_INTERNAL_H
#define VMST_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vmscope/tracer.h"
#include "vmscope/tracer-gen.h"

/* ---- configuration (config.c) ---- */

struct vmst_pattern {
	char *glob;
	bool enable;
};

struct vmst_config {
	char *dir;
	char *socket;
	uint32_t period_ms;
	uint64_t bufsize;
	uint32_t subbufs;
	int clock;                 /* -1 auto, 0 monotonic, 1 tsc */
	struct vmst_pattern *pat;
	size_t npat;
};

/* Parse the VMSCOPE_TRACE syntax into cfg (zeroed first; defaults filled). Returns 0 or
 * -EINVAL with a message on stderr. */
int vmst_config_parse(const char *text, struct vmst_config *cfg);
void vmst_config_free(struct vmst_config *cfg);

/* ---- events (events.c) ---- */

/* Apply the patterns to every registered event (also to tables registered later). */
void vmst_events_apply(const struct vmst_pattern *pat, size_t npat);
/* Recompute every state byte from the requested states and the recording switch. */
void vmst_events_refresh(void);
/* Snapshot of the registered tables for the metadata writer: calls fn for each event with
 * its global id. Holds the registry lock during the walk. */
void vmst_events_foreach(void (*fn)(void *arg, uint32_t id, const struct vmst_event_desc *ev),
			 void *arg);
/* Descriptor of a global id (NULL if unknown). */
const struct vmst_event_desc *vmst_events_desc(uint32_t id);
uint32_t vmst_events_total(void);
/* In a forked child: every state byte to 0, the locks usable again. */
void vmst_events_after_fork(void);
/* Hold (true) or release (false) the registry across fork(). */
void vmst_events_fork_lock(bool hold);
/* Bumped whenever a table is registered (the metadata must be rewritten). */
extern uint32_t vmst__tables_gen;

/* ---- clock (clock.c) ---- */

struct vmst_clockinfo {
	bool tsc;
	uint64_t freq;             /* Hz */
	int64_t offset_s;          /* realtime at clock value 0: offset_s + offset / freq */
	uint64_t offset;           /* cycles, < freq */
	char description[160];
};
/* Choose and calibrate the clock (mode: -1 auto, 0 monotonic, 1 tsc). */
void vmst_clock_setup(int mode, struct vmst_clockinfo *ci);
extern struct vmst_clockinfo vmst__clockinfo;

/* ---- stream files (packet_file.c) ---- */

/* A packet's header and context, as the metadata describes them (native byte order). */
struct __attribute__((packed)) vmst_packet {
	uint32_t magic;
	uint8_t uuid[16];
	uint32_t stream_id;
	uint64_t timestamp_begin;
	uint64_t timestamp_end;
	uint64_t content_size;     /* bits */
	uint64_t packet_size;      /* bits */
	uint64_t packet_seq_num;
	uint64_t events_discarded;
	uint32_t cpu_id;
	int32_t vtid;
};

/* A stream file that is a sequence of complete packets whenever the process is killed. */
struct vmst_pfile {
	int fd;                    /* -1: not open */
	uint64_t end;              /* end of the real packets: where the padding packet begins */
	uint64_t size;             /* the file's length, a multiple of the page size */
	struct vmst_packet pad;    /* the padding packet's header as it is in the file */
};

/* Create DIR/NAME (replacing it) holding one padding packet made from proto (magic, uuid,
 * stream_id, timestamps, cpu_id, vtid). Returns 0 or -errno. */
int vmst_pfile_create(struct vmst_pfile *f, const char *dir, const char *name,
		      const struct vmst_packet *proto);
/* Append a packet: h (sizes and packet_seq_num are filled in here) and len bytes of records. */
int vmst_pfile_append(struct vmst_pfile *f, struct vmst_packet *h, const void *data, size_t len);
/* Cut the padding off and close (a clean end of the stream). */
void vmst_pfile_close(struct vmst_pfile *f);

/* ---- per-thread buffers (buffer.c) ---- */

enum { VMST_SUB_FREE = 0, VMST_SUB_FILLING = 1, VMST_SUB_FULL = 2 };

struct vmst_sub {
	uint32_t state;            /* VMST_SUB_*, atomic */
	uint32_t content_end;      /* set before FULL */
	uint32_t last_start;       /* set before FULL: start of the last record */
	uint32_t cpu;              /* CPU when opened */
	uint64_t discarded;        /* drops of the thread when it was opened */
	/* writer-private */
	uint32_t written;          /* bytes of this sub-buffer already written out */
};

struct vmst_tbuf {
	struct vmst_producer hot;  /* first: the generated code sees only this */
	int32_t tid;
	char name[16];             /* the thread's name at its first event (PR_GET_NAME) */
	uint32_t nsub;
	uint32_t subsize;
	uint32_t next;             /* producer: index of the sub-buffer to open next */
	uint8_t *mem;
	struct vmst_sub *sub;
	uint32_t exited;           /* atomic: the thread is gone (its destructor ran) */
	/* writer-private */
	uint32_t next_w;           /* the sub-buffer the writer expects next */
	struct vmst_pfile pf;      /* the stream file (pf.fd -1: not created yet) */
	uint64_t serial;           /* the n of stream-TID-n */
	uint64_t disc_written;     /* events_discarded of the last packet written */
	uint64_t disc_base;        /* drops before the current trace directory */
	uint64_t last_ts;          /* timestamp_end of the last packet written */
	bool any_packet;
	struct vmst_tbuf *next_buf;
};

/* Registered thread buffers (lock for the list only; never taken on the hot path). */
extern pthread_mutex_t vmst__bufs_lock;
extern struct vmst_tbuf *vmst__bufs;
extern uint64_t vmst__buf_size;    /* per thread, set by vmst_init */
extern uint32_t vmst__buf_nsub;
/* Release the memory of a buffer whose thread exited and whose sub-buffers are all
 * written (writer); the struct stays listed for vmst_stats. */
void vmst_tbuf_retire(struct vmst_tbuf *b);
void vmst_buffers_init_key(void);
/* In a forked child: drop the parent's buffers (their events are the parent's), close the
 * inherited stream files without changing them; the calling thread gets a new buffer (and
 * its own tid) at its next event. */
void vmst_buffers_after_fork(void);

/* ---- the writer (writer.c) ---- */

int vmst_writer_start(const char *dir, uint32_t period_ms);
/* Final write-out, clean-close marker, join. */
void vmst_writer_stop(void);
/* Wake the writer (a sub-buffer became full). Called on the producer's slow path. */
void vmst_writer_kick(void);
int vmst_writer_flush(void);
int vmst_writer_set_dir(const char *dir);
const char *vmst_writer_dir(void);
bool vmst_writer_running(void);
/* In a forked child: the writer thread is not there; forget it. */
void vmst_writer_after_fork(void);
extern uint32_t vmst__writer_waiting;
extern uint32_t vmst__writer_paused;

/* ---- metadata (metadata.c) ---- */

/* Write the TSDL metadata of the trace into f. */
int vmst_metadata_write(FILE *f, const uint8_t uuid[16], const struct vmst_clockinfo *ci);

/* ---- control socket (control.c) ---- */

/* In a forked child: close the inherited descriptors, leave the socket file to the parent. */
void vmst_control_after_fork(void);

/* ---- life cycle (tracer.c) ---- */

/* The recording switch (vmst_file_enable and "tracer started"), atomic. */
extern uint32_t vmst__recording;
extern bool vmst__started;

#endif
