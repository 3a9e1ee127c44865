/* The finished model, saved and loaded (vmscope/model.h: vms_model_save / vms_model_load):
 * what `vmscope serve` keeps in its index so that a restart answers its first window without
 * the model's pass over the traces (at 50 M events, 3 s).
 *
 * What is saved is what a finished model holds beyond what the traces' metadata and the
 * options give again (vms_model_load starts from a model with the same sources and options
 * added): every machine (the sources' and the untraced guests'), their links, clocks and sync
 * results, the threads and the lookups the analyses use. Not saved: the matched-event pairs
 * (vms_model_match_stats is NULL after a load) and the sync tree, which only finishing uses.
 *
 * Layout, native byte order (the index's key names the program: another build is another
 * index), struct sizes in the header:
 *   "VMSMDL1\0", u32 machines, u32 sources, u32 reference, u32 threads,
 *   u32 sizes of vms_vcpu_link, vms_clock, vms_sync_info, vms_thread_info, vms_sync_host
 *   per machine: u32 name length, name, u32 role, i32 source, host, host_pid, u32 pid how,
 *     link how, vCPUs, the vCPU links, its clock, its sync info, u64 vm_uid,
 *     u8 has_kvm, vmsync host, vmsync guest, guest uid known, u64 guest uid, the map of
 *     kvm threads, 16 x u32 kvm_seen, u32 sync hosts and them, the map vcpu_of, u64 untraced
 *     omitted, u64 their threads, its own clock
 *   the threads, the map thread_idx
 * A clock is its struct with the TIME_SHIFT pointers as zeros, then per pointer (the own one,
 * then VMS_CLOCK_MAX_HOPS up) u32 0 for none, else the source + 1 whose metadata holds it. A
 * map is u64 n, then n (key, value) u64 pairs in key order. Loading checks every length and
 * every index against the model it fills (a machine, a vCPU, a thread that is not there is
 * damage), so the analyses index nothing out of range. */
#include <stdlib.h>
#include <string.h>

#include "core/byte_reader.h"
#include "model_internal.h"

#define MAGIC "VMSMDL1"

static int put(FILE *f, const void *p, size_t n)
{
	return n && fwrite(p, 1, n, f) != n ? -1 : 0;
}

static int put32(FILE *f, uint32_t v) { return put(f, &v, 4); }

static int put_map(FILE *f, const struct vms_keymap *k)
{
	uint64_t n;
	uint64_t *pairs = vms_keymap_sorted(k, &n);
	if (!pairs)
		return -1;
	int bad = put(f, &n, 8) | put(f, pairs, n * 16);
	free(pairs);
	return bad;
}

/* which source's TIME_SHIFT p is: 0 none, else source + 1 (-1: none of them) */
static int64_t ts_source(const struct vms_model *m, const struct vms_timeshift *p)
{
	if (!p)
		return 0;
	for (uint32_t j = 0; j < m->nr_sources && j < m->nr; j++)
		if (m->priv[j].meta && m->priv[j].meta->timeshift == p)
			return (int64_t)j + 1;
	return -1;
}

static int put_clock(FILE *f, const struct vms_model *m, const struct vms_clock *c)
{
	struct vms_clock z;
	memcpy(&z, c, sizeof z);   /* (bytes, padding too: a load then saves the same bytes) */
	z.timeshift = NULL;
	for (uint32_t k = 0; k < VMS_CLOCK_MAX_HOPS; k++)
		z.up[k] = NULL;
	int bad = put(f, &z, sizeof z);
	int64_t s = ts_source(m, c->timeshift);
	bad |= s < 0 ? -1 : put32(f, (uint32_t)s);
	for (uint32_t k = 0; k < VMS_CLOCK_MAX_HOPS; k++) {
		s = ts_source(m, c->up[k]);
		bad |= s < 0 ? -1 : put32(f, (uint32_t)s);
	}
	return bad;
}

int vms_model_save(const struct vms_model *m, FILE *f)
{
	if (!m->finished)
		return -1;
	char magic[8] = MAGIC;
	uint32_t h[9] = { m->nr, m->nr_sources, m->reference, m->nr_threads,
			  (uint32_t)sizeof(struct vms_vcpu_link), (uint32_t)sizeof(struct vms_clock),
			  (uint32_t)sizeof(struct vms_sync_info),
			  (uint32_t)sizeof(struct vms_thread_info),
			  (uint32_t)sizeof(struct vms_sync_host) };
	int bad = put(f, magic, 8) | put(f, h, sizeof h);
	for (uint32_t i = 0; i < m->nr && !bad; i++) {
		const struct vms_machine *mc = &m->mach[i];
		const struct vms_machine_priv *p = &m->priv[i];
		uint32_t nl = (uint32_t)strlen(mc->name ? mc->name : "");
		int32_t w[4] = { mc->source, mc->host, mc->host_pid, 0 };
		uint32_t u[3] = { (uint32_t)mc->host_pid_how, (uint32_t)mc->host_how, mc->nr_vcpus };
		bad |= put32(f, nl) | put(f, mc->name, nl) | put32(f, mc->role) | put(f, w, 12) |
		       put(f, u, 12) | put(f, mc->vcpus, (size_t)mc->nr_vcpus * sizeof *mc->vcpus);
		bad |= put_clock(f, m, &mc->clock) | put(f, &mc->sync, sizeof mc->sync) |
		       put(f, &mc->vm_uid, 8);
		uint8_t b[4] = { p->has_kvm, p->has_vmsync_host, p->has_vmsync_guest, p->has_guest_uid };
		bad |= put(f, b, 4) | put(f, &p->guest_uid, 8) | put_map(f, &p->kvm_threads) |
		       put(f, p->kvm_seen, sizeof p->kvm_seen) | put32(f, p->nr_sync) |
		       put(f, p->sync, (size_t)p->nr_sync * sizeof *p->sync) |
		       put_map(f, &p->vcpu_of) | put(f, &p->untraced_omitted, 8) |
		       put(f, &p->untraced_omitted_threads, 8) | put_clock(f, m, &p->own);
	}
	/* a name's bytes after its NUL are whatever the copy left: zeros here, as the load
	 * ends every name (so that a loaded model saves the bytes it was loaded from) */
	for (uint32_t t = 0; t < m->nr_threads && !bad; t++) {
		struct vms_thread_info ti;
		memcpy(&ti, &m->threads[t], sizeof ti);
		size_t l = strnlen(ti.comm, sizeof ti.comm - 1);
		memset(ti.comm + l, 0, sizeof ti.comm - l);
		bad |= put(f, &ti, sizeof ti);
	}
	bad |= put_map(f, &m->thread_idx);
	return bad ? -1 : 0;
}

/* ---- loading ---- */

struct ld {
	struct vms_rd r;
	struct vms_error *err;
	int st;
};

static bool take(struct ld *l, void *dst, size_t n)
{
	if (l->st)
		return false;
	if (!vms_rd_take(&l->r, dst, n)) {
		l->st = vms_error_set(l->err, VMS_ERR_FORMAT, "model: cut at byte offset %zu",
				      l->r.off);
		return false;
	}
	return true;
}

static bool bad(struct ld *l, const char *what)
{
	if (!l->st)
		l->st = vms_error_set(l->err, VMS_ERR_FORMAT, "model: %s at byte offset %zu", what,
				      l->r.off);
	return false;
}

static bool nomem(struct ld *l)
{
	if (!l->st)
		l->st = vms_error_set(l->err, VMS_ERR_NOMEM, "out of memory");
	return false;
}

/* a map whose values check() accepts */
static bool take_map(struct ld *l, struct vms_keymap *k, const struct vms_model *m,
		     bool (*check)(const struct vms_model *m, uint64_t key, uint64_t val))
{
	uint64_t n;
	if (!take(l, &n, 8))
		return false;
	if (n > l->r.left / 16)
		return bad(l, "a map longer than the bytes left");
	uint64_t prev = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t kv[2];
		take(l, kv, 16);
		if (kv[0] == VMS_KEYMAP_EMPTY || (i && kv[0] <= prev) || !check(m, kv[0], kv[1]))
			return bad(l, "a map entry no model holds");
		prev = kv[0];
		uint64_t *v = vms_keymap_put(k, kv[0], kv[1], NULL);
		if (!v)
			return nomem(l);
		*v = kv[1];
	}
	return true;
}

static bool later(const struct vms_model *m, uint64_t key, uint64_t val)
{
	(void)m;
	(void)key;
	(void)val;
	return true;
}

static bool any_vcpu(const struct vms_model *m, uint64_t key, uint64_t val)
{
	(void)m;
	(void)key;
	return val < VMS_MODEL_MAX_VCPUS;
}

static bool guest_vcpu(const struct vms_model *m, uint64_t key, uint64_t val)
{
	(void)key;
	uint32_t g = (uint32_t)(val >> 32), v = (uint32_t)val;
	return g < m->nr && v < m->mach[g].nr_vcpus;
}

static bool thread_index(const struct vms_model *m, uint64_t key, uint64_t val)
{
	return (key >> 32) < m->nr && val < m->nr_threads;
}

static bool take_clock(struct ld *l, const struct vms_model *m, struct vms_clock *c)
{
	if (!take(l, c, sizeof *c))
		return false;
	uint32_t s[1 + VMS_CLOCK_MAX_HOPS];
	if (!take(l, s, sizeof s))
		return false;
	const struct vms_timeshift **p[1 + VMS_CLOCK_MAX_HOPS];
	p[0] = &c->timeshift;
	for (uint32_t k = 0; k < VMS_CLOCK_MAX_HOPS; k++)
		p[k + 1] = &c->up[k];
	for (uint32_t k = 0; k < 1 + VMS_CLOCK_MAX_HOPS; k++) {
		*p[k] = NULL;
		if (!s[k])
			continue;
		uint32_t j = s[k] - 1;
		if (j >= m->nr_sources || !m->priv[j].meta || !m->priv[j].meta->timeshift)
			return bad(l, "a clock with a TIME_SHIFT no source has");
		*p[k] = m->priv[j].meta->timeshift;
	}
	uint8_t b[2];
	memcpy(&b[0], &c->tsc2nsec, 1);
	memcpy(&b[1], &c->linear, 1);
	if (b[0] > 1 || b[1] > 1 || c->nr_up > VMS_CLOCK_MAX_HOPS || c->shift > 63)
		return bad(l, "a clock no model makes");
	return true;
}

static bool take_machine(struct ld *l, struct vms_model *m, uint32_t i)
{
	uint32_t nl;
	if (!take(l, &nl, 4))
		return false;
	if (nl > 4096 || nl > l->r.left)
		return bad(l, "a machine's name too long");
	char *name = calloc(1, (size_t)nl + 1);
	if (!name)
		return nomem(l);
	take(l, name, nl);
	if (i >= m->nr && vms_model_add_machine(m, name) < 0) {
		free(name);
		return nomem(l);
	}
	struct vms_machine *mc = &m->mach[i];
	struct vms_machine_priv *p = &m->priv[i];
	free(mc->name);
	mc->name = name;
	int32_t w[3];
	uint32_t u[3];
	if (!take(l, &mc->role, 4) || !take(l, w, 12) || !take(l, u, 12))
		return false;
	mc->source = w[0];
	mc->host = w[1];
	mc->host_pid = w[2];
	mc->host_pid_how = (enum vms_pid_how)u[0];
	mc->host_how = (enum vms_link_how)u[1];
	if (mc->role > (VMS_ROLE_HOST | VMS_ROLE_GUEST) ||
	    mc->source != (i < m->nr_sources ? (int32_t)i : -1) || mc->host < -1 || u[0] > 16 ||
	    u[1] > 16 || u[2] > VMS_MODEL_MAX_VCPUS)   /* (host < machines: checked after) */
		return bad(l, "a machine no model makes");
	free(mc->vcpus);
	mc->vcpus = NULL;
	mc->nr_vcpus = 0;
	if (u[2]) {
		if ((uint64_t)u[2] * sizeof *mc->vcpus > l->r.left)
			return bad(l, "vCPUs cut");
		if (!(mc->vcpus = calloc(u[2], sizeof *mc->vcpus)))
			return nomem(l);
		mc->nr_vcpus = u[2];
		take(l, mc->vcpus, (size_t)u[2] * sizeof *mc->vcpus);
		for (uint32_t v = 0; v < u[2]; v++)
			if (mc->vcpus[v].vcpu != v || (uint32_t)mc->vcpus[v].how > 16)
				return bad(l, "a vCPU link no model makes");
	}
	if (!take_clock(l, m, &mc->clock) || !take(l, &mc->sync, sizeof mc->sync) ||
	    !take(l, &mc->vm_uid, 8))
		return false;
	uint8_t b[4];
	if (!take(l, b, 4) || !take(l, &p->guest_uid, 8))
		return false;
	if (b[0] > 1 || b[1] > 1 || b[2] > 1 || b[3] > 1)
		return bad(l, "a flag that is not 0 or 1");
	p->has_kvm = b[0];
	p->has_vmsync_host = b[1];
	p->has_vmsync_guest = b[2];
	p->has_guest_uid = b[3];
	vms_keymap_free(&p->kvm_threads);
	vms_keymap_init(&p->kvm_threads);
	if (!take_map(l, &p->kvm_threads, m, any_vcpu) || !take(l, p->kvm_seen, sizeof p->kvm_seen))
		return false;
	uint32_t ns;
	if (!take(l, &ns, 4))
		return false;
	if (ns > VMS_MODEL_MAX_SYNC || (uint64_t)ns * sizeof *p->sync > l->r.left)
		return bad(l, "sync hosts cut");
	free(p->sync);
	p->sync = ns ? calloc(ns, sizeof *p->sync) : NULL;
	if (ns && !p->sync)
		return nomem(l);
	p->nr_sync = ns;
	take(l, p->sync, (size_t)ns * sizeof *p->sync);
	/* (vcpu_of names guests: checked once every machine is there) */
	vms_keymap_free(&p->vcpu_of);
	vms_keymap_init(&p->vcpu_of);
	if (!take_map(l, &p->vcpu_of, m, later))
		return false;
	return take(l, &p->untraced_omitted, 8) && take(l, &p->untraced_omitted_threads, 8) &&
	       take_clock(l, m, &p->own);
}

int vms_model_load(struct vms_model *m, const void *buf, size_t len, struct vms_error *err)
{
	struct ld l = { { buf, len, 0 }, err, 0 };
	char magic[8];
	uint32_t h[9];
	if (!take(&l, magic, 8) || !take(&l, h, sizeof h))
		return l.st;
	if (memcmp(magic, MAGIC, 8) || h[4] != sizeof(struct vms_vcpu_link) ||
	    h[5] != sizeof(struct vms_clock) || h[6] != sizeof(struct vms_sync_info) ||
	    h[7] != sizeof(struct vms_thread_info) || h[8] != sizeof(struct vms_sync_host))
		return bad(&l, "another layout or build"), l.st;
	if (m->finished || m->nr != m->nr_sources || h[1] != m->nr_sources || h[0] < h[1] ||
	    h[0] > h[1] + 65536u || h[2] >= h[0])
		return bad(&l, "not the model of these traces"), l.st;
	for (uint32_t i = 0; i < h[0]; i++)
		if (!take_machine(&l, m, i))
			return l.st;
	for (uint32_t i = 0; i < m->nr; i++) {
		const struct vms_machine *mc = &m->mach[i];
		const struct vms_keymap *k = &m->priv[i].vcpu_of;
		if (mc->host >= (int32_t)m->nr || mc->sync.reference >= m->nr ||
		    mc->sync.parent < -1 || mc->sync.parent >= (int32_t)m->nr)
			return bad(&l, "a machine no model makes"), l.st;
		for (size_t s = 0; s < k->cap; s++)
			if (k->keys[s] != VMS_KEYMAP_EMPTY && !guest_vcpu(m, k->keys[s], k->vals[s]))
				return bad(&l, "a vCPU thread of no guest's vCPU"), l.st;
	}
	m->reference = h[2];
	if ((uint64_t)h[3] * sizeof *m->threads > l.r.left)
		return bad(&l, "threads cut"), l.st;
	free(m->threads);
	m->threads = h[3] ? calloc(h[3], sizeof *m->threads) : NULL;
	if (h[3] && !m->threads)
		return nomem(&l), l.st;
	m->nr_threads = m->cap_threads = h[3];
	take(&l, m->threads, (size_t)h[3] * sizeof *m->threads);
	for (uint32_t t = 0; t < m->nr_threads; t++) {
		uint8_t ex;
		memcpy(&ex, &m->threads[t].exec, 1);
		if (ex > 1 || (uint32_t)m->threads[t].pid_how > 16)
			return bad(&l, "a thread no model makes"), l.st;
		m->threads[t].comm[sizeof m->threads[t].comm - 1] = 0;
	}
	vms_keymap_free(&m->thread_idx);
	vms_keymap_init(&m->thread_idx);
	if (!take_map(&l, &m->thread_idx, m, thread_index))
		return l.st;
	if (l.r.left)
		return bad(&l, "bytes after the model"), l.st;
	m->finished = true;
	return 0;
}
