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

/* What a stream carries into a packet's first event, taken when the packet is entered
 * (its header and context applied): with the packet's offset and an event's index in it,
 * the way back to that event for seek (ctf_seek.c). */
struct ctf_pkt_state {
	uint64_t clock;                /* after the header and context */
	uint64_t last_ts;              /* the previous event's time, when have_last_ts */
	uint64_t disc_prev;            /* events_discarded so far */
	int32_t cur_tid;               /* sched_switch's thread so far */
	uint32_t cpu;                  /* the packet's (or the one carried from before it) */
	bool have_last_ts, lost_pending;
};

/* Where an event starts in its packet: what differs from one event of a packet to the next
 * (the pool keeps only this per event, its packet's part once per packet in a block). */
struct ctf_at {
	uint64_t pos, clock;           /* bits from the packet's start; the clock before it */
};

/* Where an event lies, to decode it again whole (format_event) and to come back to it
 * (tell). Reading alone, the returned event's start and index are kept with each and the
 * rest once per packet (ctf_next); the pool puts it together from the block the event came
 * from (ctf_pool_last). */
struct ctf_pos {
	const struct sclass *sc;
	uint64_t pkt_off;
	uint64_t end;                  /* the packet's content end, bits */
	uint64_t k;                    /* the event's index in its packet */
	struct ctf_at at;
	struct ctf_pkt_state pk;       /* its packet's, when entered */
};

/* set_wanted: only kinds in wanted[] need their fields (when on). */
struct ctf_filter {
	bool on;
	bool wanted[VMS_K_COUNT];
};

/* A stream's bounded queue of decoded events (ctf_pool.c), under the pool's lock except
 * `aq.cur`, `cur_i`, `cur_n`, the reading thread's. */
struct ctf_queue {
	struct vms_ahead aq;           /* the blocks (core/ahead.h); stale: decoded ahead under a
					* filter set_wanted replaced; taken: with cur_i, see next_block */
	uint32_t cur_i;                /* the reading thread's next event of aq.cur */
	uint32_t cur_n;                /* events of aq.cur to hand out: cur_i < cur_n is the
					* reader's whole test per event (0 sends it to next_block) */
	struct ctf_filter replay;      /* when stale: the filter those events were read with */
	bool sought;                   /* the events taken count from `from` (seek), not the
					* stream's start */
	struct vms_stream_pos from;
	struct vms_error err;          /* the decoder's error, for the block that ends with it */
};

struct cstream {
	char *path;
	struct trace *tr;
	const uint8_t *map;
	uint64_t size;                 /* bytes mapped (the file at open) */
	uint64_t valid_end;            /* bytes of complete packets */
	uint64_t next_pkt;             /* offset of the next packet */
	uint64_t *pkts;                /* every complete packet's offset, from the open's walk
					* (seek takes only these) */
	uint64_t npkts;
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
	struct ctf_pkt_state pk;       /* the current packet's, when entered */
	uint64_t pkt_k;                /* events decoded in the current packet */
	bool direct;                   /* the last event's body was read direct (struct direct) */
	uint64_t run;                  /* then: its run's start, bits from the packet's start */
	char sbuf[2][64];              /* the strings of the event returned (reading alone) */
	/* the reading thread's */
	bool have_last;                /* last event returned, for format_event */
	struct ctf_pos last;           /* reading alone, its position; with the pool, kept when
					* its block is given back or asked for (ctf_pool_last) */
	bool told;                     /* last is the position of the event returned last
					* (false: the stream's start, or `at` after a seek) */
	bool at_seek;                  /* seek done, nothing returned since: tell gives `at` */
	struct vms_stream_pos at;
	int seek_status;               /* a seek failed: next() fails until a seek or rewind */
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

/* The next event of stream `stream` decoded into *ev (its strings into sb, its start into
 * *at), with the registers rf and errors into err: 1, or CTF_NEW_PACKET when the event is
 * its packet's first (the stream's sc, pkt_off, end and pk are that packet's until the next
 * call: the place of an event but its start is kept once per packet), 0 at the end, or a
 * negative status. Its index in the packet is then s->pkt_k - 1. */
#define CTF_NEW_PACKET 2
int ctf_decode_next(struct cstream *s, uint32_t stream, struct plan_rf *rf,
		    const struct ctf_filter *flt, struct vms_error *err, struct vms_event *ev,
		    char (*sb)[64], struct ctf_at *at);
/* Reading alone: the packet the stream is in is the returned events' (into s->last). */
void ctf_keep_packet(struct cstream *s);
/* A stream's decoding state back at its start (not its queue). */
void ctf_reset_stream(struct cstream *s);
/* The packet at byte `off` of s (a packet's start: the caller checked) entered as reading
 * enters it, from the carried state s has: 1 when it holds events, 0 when not, or a
 * negative status with err set. */
int ctf_enter_packet_at(struct vms_error *err, struct plan_rf *rf, struct cstream *s,
			uint64_t off);

/* ctf_seek.c: tell and seek (vms_source_ops), and the stream set at a position with the
 * filter flt, the source reading alone on it (no job of the pool on that stream). */
int ctf_tell(struct vms_source *src, uint32_t stream, struct vms_stream_pos *pos);
int ctf_seek(struct vms_source *src, uint32_t stream, const struct vms_stream_pos *pos);
int ctf_position(struct ctf *c, uint32_t stream, const struct vms_stream_pos *pos,
		 const struct ctf_filter *flt, struct vms_error *err);
int ctf_rf_init(struct plan_rf *rf, uint32_t n);
void ctf_rf_free(struct plan_rf *rf);

/* ctf_pool.c. Start: joins the pool when the source is worth it (a no-op at --threads 1). */
void ctf_pool_start(struct ctf *c);
int ctf_pool_next(struct vms_source *src, struct ctf *c, uint32_t stream, struct vms_event *ev);
void ctf_pool_rewind(struct ctf *c);
void ctf_pool_set_wanted(struct ctf *c, const bool *wanted);
void ctf_pool_stop(struct ctf *c);
/* The position of the event the pool's reader returned last (the stream told: one was), kept
 * in s->last. */
const struct ctf_pos *ctf_pool_last(struct cstream *s);
/* seek with the pool: its jobs stopped, the stream's queue emptied, the stream positioned */
int ctf_pool_seek(struct vms_source *src, struct ctf *c, uint32_t stream,
		  const struct vms_stream_pos *pos);

#endif
