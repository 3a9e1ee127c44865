/* The CTF source's internals shared by ctf_source.c (opening, decoding one event) and
 * ctf_pool.c (the streams decoded ahead by the readers' worker pool, lib/core/pool.c).
 *
 * A stream's decoding state (struct cstream, up to `last`) belongs to whoever decodes it:
 * the reading thread when the source reads alone, else the one thread that holds the
 * stream's job (ctf_pool.c: one job per stream at a time, under the pool's lock). What the
 * reading thread alone touches (`last`, `have_last`, the queue's current block) follows. */
#ifndef VMS_CTF_SOURCE_H
#define VMS_CTF_SOURCE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/ahead.h"
#include "core/pool.h"
#include "plan.h"
#include "vmscope/source.h"

struct sclass;
struct trace;

/* Where an event lies, to decode it again whole (format_event). */
struct ctf_pos {
	const struct sclass *sc;
	uint64_t pkt_off;
	uint64_t end;                  /* the packet's content end, bits */
	uint64_t pos, clock;           /* at the event's start */
};

/* set_wanted: only kinds in wanted[] need their fields (when on). */
struct ctf_filter {
	bool on;
	bool wanted[VMS_K_COUNT];
};

struct cq_block;

/* A stream's bounded queue of decoded events (ctf_pool.c), under the pool's lock except
 * `aq.cur`/`cur_i`, the reading thread's. */
struct ctf_queue {
	struct vms_ahead aq;           /* the blocks (core/ahead.h); stale: decoded ahead under a
					* filter set_wanted replaced */
	uint32_t cur_i;                /* the reading thread's next event of aq.cur */
	struct ctf_filter replay;      /* when stale: the filter those events were read with */
	struct vms_error err;          /* the decoder's error, for the block that ends with it */
};

struct cstream {
	char *path;
	struct trace *tr;
	const uint8_t *map;
	uint64_t size;                 /* bytes mapped (the file at open) */
	uint64_t valid_end;            /* bytes of complete packets */
	uint64_t next_pkt;             /* offset of the next packet */
	uint64_t given_back;           /* bytes before this are released */
	/* the current packet */
	const struct sclass *sc;
	uint64_t pkt_off;
	uint64_t pos, end;             /* bits from the packet's start */
	uint64_t clock;
	uint32_t cpu;
	int32_t ptid;                  /* the packet's thread (vmstrace), or -1 */
	int32_t cur_tid;               /* from sched_switch, when no context gives a tid */
	uint64_t disc_prev;
	bool lost_pending;
	bool have_last_ts;
	uint64_t last_ts;
	bool direct;                   /* the last event's body was read direct (struct direct) */
	uint64_t run;                  /* then: its run's start, bits from the packet's start */
	char sbuf[2][64];              /* the strings of the event returned (reading alone) */
	/* the reading thread's */
	bool have_last;                /* last event returned, for format_event */
	struct ctf_pos last;
	struct ctf_queue q;
};

struct ctf_pool;

struct ctf {
	uint32_t nt;
	struct trace *tr;
	uint32_t n;
	struct cstream *st;
	struct plan_rf rf;             /* the reading thread's registers */
	struct ctf_filter flt;
	struct ctf_pool *pool;         /* NULL: the reading thread decodes alone */
	/* events decoded, for the tests (vms_ctf_counters): by the reading thread alone (and
	 * replays), and by the pool's jobs (a block at a time) */
	uint64_t decoded_alone;
	atomic_uint_fast64_t decoded_pool;
};

/* The next event of stream `stream` decoded into *ev (its strings into sb, its place into
 * *at), with the registers rf and errors into err: 1, 0 at the end, or a negative status. */
int ctf_decode_next(struct cstream *s, uint32_t stream, struct plan_rf *rf,
		    const struct ctf_filter *flt, struct vms_error *err, struct vms_event *ev,
		    char (*sb)[64], struct ctf_pos *at);
/* A stream's decoding state back at its start (not its queue). */
void ctf_reset_stream(struct cstream *s);
int ctf_rf_init(struct plan_rf *rf, uint32_t n);
void ctf_rf_free(struct plan_rf *rf);

/* ctf_pool.c. Start: joins the pool when the source is worth it (a no-op at --threads 1). */
void ctf_pool_start(struct ctf *c);
int ctf_pool_next(struct vms_source *src, struct ctf *c, uint32_t stream, struct vms_event *ev);
void ctf_pool_rewind(struct ctf *c);
void ctf_pool_set_wanted(struct ctf *c, const bool *wanted);
void ctf_pool_stop(struct ctf *c);

#endif
