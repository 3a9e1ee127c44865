/* vmscope internal: a timeline writer, tracks of slices and counters, written as a Perfetto
 * protobuf trace or as the Chrome JSON trace format, streaming (nothing is kept per slice).
 *
 * A group is a machine (a Perfetto root track, a Chrome JSON process); tracks and counters
 * belong to a group. A track has at most one open slice at a time (vms_tl_open ..
 * vms_tl_close: Perfetto gets the begin when it happens, Chrome JSON one complete event at
 * the close) and any number of closed ones written with vms_tl_slice, which must nest in
 * what is open on that track. Time is in ns.
 *
 * Names: a slice's name is a name id (vms_tl_name, or vms_tl_name_lit for a string that
 * never changes, such as a literal: looked up by its address), made once by the caller and
 * then used per slice without hashing a string. The Perfetto output interns names, argument
 * keys and string values (written once per track, then referred to by number). */
#ifndef VMS_TIMELINE_H
#define VMS_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum vms_tl_format { VMS_TL_PERFETTO, VMS_TL_CHROME_JSON };

enum vms_tl_arg_type { VMS_TL_UINT, VMS_TL_INT, VMS_TL_HEX, VMS_TL_STR, VMS_TL_NAME };
struct vms_tl_arg {
	uint32_t key;                 /* a name id (vms_tl_name, made once: not per slice) */
	enum vms_tl_arg_type type;
	uint64_t u;                   /* UINT, HEX; NAME: a name id (the string it names) */
	int64_t i;                    /* INT */
	const char *s;                /* STR (copied when needed) */
};
#define VMS_TL_MAX_ARGS 6

struct vms_tl;

/* deflate (Perfetto only): packets written in deflated blocks (TracePacket.compressed_packets) */
struct vms_tl *vms_tl_new(FILE *f, enum vms_tl_format fmt, bool deflate);
/* Close open slices at t_end, end the file, free; 0, or -1 when a write or an allocation
 * failed (somewhere in the life of the writer). */
int vms_tl_finish(struct vms_tl *tl, uint64_t t_end);
void vms_tl_free(struct vms_tl *tl);

/* The id of a name (from 1; 0 when out of memory: every call then writes nothing). Names
 * longer than VMS_TL_NAME_MAX bytes are cut. _lit: s never changes (found by address). */
#define VMS_TL_NAME_MAX 255
uint32_t vms_tl_name(struct vms_tl *tl, const char *s);
uint32_t vms_tl_name_lit(struct vms_tl *tl, const char *s);

/* Handles are small integers; UINT32_MAX when out of memory (every call accepts it and does
 * nothing). rank orders siblings (groups among groups, tracks within a group). */
uint32_t vms_tl_group(struct vms_tl *tl, const char *name, int32_t rank);
uint32_t vms_tl_track(struct vms_tl *tl, uint32_t group, const char *name, int32_t rank);
uint32_t vms_tl_counter(struct vms_tl *tl, uint32_t group, const char *name, const char *unit,
			int32_t rank);

void vms_tl_open(struct vms_tl *tl, uint32_t track, uint64_t t, uint32_t name,
		 const struct vms_tl_arg *args, unsigned nargs);
/* args (may be NULL) are added to the slice's (Perfetto: on its end event) */
void vms_tl_close(struct vms_tl *tl, uint32_t track, uint64_t t, const struct vms_tl_arg *args,
		  unsigned nargs);
void vms_tl_slice(struct vms_tl *tl, uint32_t track, uint64_t start, uint64_t end,
		  uint32_t name, const struct vms_tl_arg *args, unsigned nargs);
void vms_tl_count(struct vms_tl *tl, uint32_t counter, uint64_t t, double v);

/* Lanes: slice tracks of a group of which the writer keeps nothing, for kinds that may be
 * very many over a trace though few are used at a time (a host thread's lanes of time it
 * took from vCPUs: a track per slice it has open at once, threads x lanes in all). The
 * caller names a lane by a key below VMS_TL_LANE_KEYS, unique in the writer, makes it once
 * (vms_tl_lane: its descriptor; -1 for a bad group or key) and writes its slices whole.
 * Perfetto: a lane's events are on its group's sequence (with its clock and interned
 * names), each naming the lane's track (uuid 2^32 + key); Chrome JSON: its tid is 2^31 +
 * key. */
#define VMS_TL_LANE_KEYS 0x80000000u
int vms_tl_lane(struct vms_tl *tl, uint32_t group, uint32_t key, const char *name, int32_t rank);
void vms_tl_lane_slice(struct vms_tl *tl, uint32_t group, uint32_t key, uint64_t start,
		       uint64_t end, uint32_t name);

#endif
