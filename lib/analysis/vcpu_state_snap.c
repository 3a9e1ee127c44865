/* The state machine's snapshot (vcpu_state_snap.h). Layout, native byte order (a snapshot
 * is read back by the build that wrote it: the sizes of the structs are in its header and
 * must match):
 *   u32 magic "SMS1", u32 vCPUs, u32 vCPU size, u32 machines, u32 machine size, u32 CPU size
 *   the vCPUs' bytes
 *   per machine: its tail bytes, u32 CPUs, their bytes
 *   u8 occ, u8 occ_end_pending, u64 occ_unfollowed
 *   u64 entries of occ_where, then (key, value) u64 pairs in key order (so that two equal
 *   states write the same bytes whatever order their map was filled in) */
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "core/byte_reader.h"
#include "vcpu_state_snap.h"

#define MAGIC 0x31534d53u   /* "SMS1" */

static int put(FILE *f, const void *p, size_t n)
{
	return n && fwrite(p, 1, n, f) != n ? -1 : 0;
}

static int put32(FILE *f, uint32_t v) { return put(f, &v, 4); }

int an_sm_snapshot(struct an_sm *sm, FILE *f)
{
	struct an_sm_parts p = an_sm_parts(sm);
	int bad = put32(f, MAGIC) | put32(f, p.nr_vcpus) | put32(f, (uint32_t)p.vcpu_size) |
		  put32(f, p.nr_machines) | put32(f, (uint32_t)p.machine_size) |
		  put32(f, (uint32_t)p.cpu_size);
	bad |= put(f, p.vcpus, p.nr_vcpus * p.vcpu_size);
	for (uint32_t m = 0; m < p.nr_machines; m++) {
		void *cpus;
		uint32_t nc;
		char *mc = an_sm_machine(sm, m, &cpus, &nc);
		bad |= put(f, mc + p.machine_tail_off, p.machine_size - p.machine_tail_off);
		bad |= put32(f, nc);
		bad |= put(f, cpus, (size_t)nc * p.cpu_size);
	}
	uint8_t b[2] = { *p.occ, *p.occ_end_pending };
	bad |= put(f, b, 2) | put(f, p.occ_unfollowed, 8);
	uint64_t n;
	uint64_t *pairs = vms_keymap_sorted(p.occ_where, &n);
	if (!pairs)
		return -1;
	bad |= put(f, &n, 8) | put(f, pairs, n * 16);
	free(pairs);
	return bad ? -1 : 0;
}

static int bad_at(struct vms_error *err, const struct vms_rd *r, const char *what)
{
	return vms_error_set(err, VMS_ERR_FORMAT, "state snapshot: %s at byte offset %zu", what,
			     r->off);
}

int an_sm_restore(struct an_sm *sm, const void *buf, size_t len, struct vms_error *err)
{
	struct an_sm_parts p = an_sm_parts(sm);
	struct vms_rd r = { buf, len, 0 };
	uint32_t h[6];
	if (!vms_rd_take(&r, h, sizeof h))
		return bad_at(err, &r, "header cut");
	if (h[0] != MAGIC || h[1] != p.nr_vcpus || h[2] != p.vcpu_size || h[3] != p.nr_machines ||
	    h[4] != p.machine_size || h[5] != p.cpu_size)
		return bad_at(err, &r, "another layout or build");
	if (!vms_rd_take(&r, p.vcpus, (size_t)p.nr_vcpus * p.vcpu_size))
		return bad_at(err, &r, "vCPUs cut");
	for (uint32_t m = 0; m < p.nr_machines; m++) {
		void *cpus;
		uint32_t nc;
		char *mc = an_sm_machine(sm, m, &cpus, &nc);
		if (!vms_rd_take(&r, mc + p.machine_tail_off, p.machine_size - p.machine_tail_off) ||
		    !vms_rd_take(&r, &nc, 4))
			return bad_at(err, &r, "machine cut");
		if (nc > AN_MAX_CPUS || (size_t)nc * p.cpu_size > r.left)
			return bad_at(err, &r, "more CPUs than the snapshot holds");
		if (an_sm_set_cpus(sm, m, nc) < 0)
			return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		an_sm_machine(sm, m, &cpus, &nc);
		vms_rd_take(&r, cpus, (size_t)nc * p.cpu_size);
	}
	uint8_t b[2];
	uint64_t n;
	if (!vms_rd_take(&r, b, 2) || !vms_rd_take(&r, p.occ_unfollowed, 8) || !vms_rd_take(&r, &n, 8))
		return bad_at(err, &r, "occupants cut");
	if (b[0] > 1 || b[1] > 1)
		return bad_at(err, &r, "a flag that is not 0 or 1");
	*p.occ = b[0];
	*p.occ_end_pending = b[1];
	if (n > AN_OCC_THREADS_MAX || n > r.left / 16)
		return bad_at(err, &r, "more threads than the snapshot holds");
	uint64_t prev = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t kv[2];
		vms_rd_take(&r, kv, 16);
		if (kv[0] == VMS_KEYMAP_EMPTY || (i && kv[0] <= prev))
			return bad_at(err, &r, "threads not in key order");
		prev = kv[0];
		uint64_t *v = vms_keymap_put(p.occ_where, kv[0], kv[1], NULL);
		if (!v)
			return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		*v = kv[1];
	}
	if (r.left)
		return bad_at(err, &r, "bytes after the state");
	if (!an_sm_check(sm))
		return bad_at(err, &r, "values no run makes");
	return 0;
}
