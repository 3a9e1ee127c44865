/* The time window's gate (vms_analysis_window): between the vCPU state machine and every
 * consumer, so that the analyses and views see the trace as if it began at `from`, with
 * everything the state machine knew at that instant.
 *
 * Before `from` the state machine runs as always (its state must be right at `from`), but
 * nothing reaches the consumers; the gate only keeps the last word on each thing: the
 * occupant of each host CPU (cpu_run, cpu_occupant), and per vCPU its state, its guest
 * thread, its mode, its pending exit and who runs instead. At the first observation at or
 * after `from` (or at the finish) the gate says start(from), then repeats those last words at
 * `from`, in the order of one event (cpu_run, cpu_occupant, vcpu_mode, exit_begin,
 * guest_switch, vcpu_state, vcpu_instead), and from then on passes everything through. An exit pending at `from` keeps its real begin
 * (vms_obs_exit.begin) for the cost; its slice starts at `from`. Raw events and wake-ups
 * (vcpu_wakeup, guest_wakeup) before `from` are dropped. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "core/byte_reader.h"
#include "core/grow.h"

struct gw_vcpu {
	bool has_state, has_switch, has_mode, has_exit, has_instead;
	struct vms_obs_vcpu_state state;
	struct vms_obs_guest_switch sw;
	char comm[24];
	struct vms_obs_vcpu_mode mode;
	struct vms_obs_exit exit;
	struct vms_obs_vcpu_instead instead;
	char instead_comm[24];
};

struct gw_cpu {
	bool known, occupied;            /* a cpu_run with a thread, a cpu_occupant (an unknown one
	                                    too: from then nothing is known there), kept */
	struct vms_obs_cpu_run run;
	char comm[24];
	struct vms_obs_cpu_occupant occ;
	char occ_comm[24];
};

struct an_gate {
	uint64_t from;
	bool open;
	const struct an_subs *consumers;
	struct gw_vcpu *v;
	uint32_t nr_v;
	struct gw_cpu *cpu;              /* grown on demand: (host, cpu) pairs in a list */
	uint32_t nr_cpu, cap_cpu;
	struct vms_keymap cpu_idx;       /* (host, cpu) -> index in cpu: every host switch before
	                                    the window looks its CPU up (a scan was O(CPUs)) */
	/* in front of cpu_idx, direct-mapped: a gate is asked at nearly every event before its
	 * window, the whole run for a window near the end (key + 1, index) */
	struct { uint64_t key1; uint32_t i; } recent[64];
};

#define EACH(g, cb, ...) AN_EACH((g)->consumers, cb, __VA_ARGS__)

static void replay(struct an_gate *g, uint64_t t)
{
	g->open = true;
	EACH(g, start, t);
	for (uint32_t i = 0; i < g->nr_cpu; i++)
		if (g->cpu[i].known) {
			struct vms_obs_cpu_run o = g->cpu[i].run;
			o.t = t;
			o.comm = g->cpu[i].comm;
			o.prev_tid = -1;
			EACH(g, cpu_run, &o);
		}
	for (uint32_t i = 0; i < g->nr_cpu; i++)
		if (g->cpu[i].occupied) {
			struct vms_obs_cpu_occupant o = g->cpu[i].occ;
			o.t = t;
			o.comm = g->cpu[i].occ_comm;
			EACH(g, cpu_occupant, &o);
		}
	for (uint32_t i = 0; i < g->nr_v; i++) {
		struct gw_vcpu *v = &g->v[i];
		if (v->has_mode && v->mode.guest_mode) {
			struct vms_obs_vcpu_mode o = v->mode;
			o.t = t;
			EACH(g, vcpu_mode, &o);
		}
		if (v->has_exit) {
			struct vms_obs_exit o = v->exit;
			o.t = t;
			EACH(g, exit_begin, &o);
		}
		if (v->has_switch) {
			struct vms_obs_guest_switch o = v->sw;
			o.t = t;
			o.prev_tid = -1;
			o.prev_comm = "";
			o.next_comm = v->comm;
			EACH(g, guest_switch, &o);
		}
		if (v->has_state && (v->state.status || v->state.state != VMS_STATE_UNKNOWN)) {
			struct vms_obs_vcpu_state o = v->state;
			o.t = t;
			o.old_status = 0;
			o.old_state = VMS_STATE_UNKNOWN;
			EACH(g, vcpu_state, &o);
		}
		if (v->has_instead) {
			struct vms_obs_vcpu_instead o = v->instead;
			o.t = t;
			o.comm = v->instead_comm;
			EACH(g, vcpu_instead, &o);
		}
	}
}

/* true when the observation at t goes through (the gate opens at the first one >= from) */
static bool pass(struct an_gate *g, uint64_t t)
{
	if (!g->open && t >= g->from)
		replay(g, g->from);
	return g->open;
}

static struct gw_vcpu *gv(struct an_gate *g, uint32_t vidx)
{
	return vidx < g->nr_v ? &g->v[vidx] : NULL;
}

static void on_vcpu_state(void *ctx, const struct vms_obs_vcpu_state *o)
{
	struct an_gate *g = ctx;
	if (pass(g, o->t)) {
		EACH(g, vcpu_state, o);
		return;
	}
	struct gw_vcpu *v = gv(g, o->vidx);
	if (v) {
		v->state = *o;
		v->has_state = true;
		if (o->state != VMS_STATE_PREEMPTED && o->state != VMS_STATE_HALTED)
			v->has_instead = false;
	}
}

static void on_guest_switch(void *ctx, const struct vms_obs_guest_switch *o)
{
	struct an_gate *g = ctx;
	if (pass(g, o->t)) {
		EACH(g, guest_switch, o);
		return;
	}
	struct gw_vcpu *v = gv(g, o->vidx);
	if (v) {
		v->sw = *o;
		an_copy_comm(v->comm, o->next_comm);
		v->has_switch = true;
	}
}

static void on_exit_begin(void *ctx, const struct vms_obs_exit *o)
{
	struct an_gate *g = ctx;
	if (pass(g, o->t)) {
		EACH(g, exit_begin, o);
		return;
	}
	struct gw_vcpu *v = gv(g, o->vidx);
	if (v) {
		v->exit = *o;
		v->exit.begin = o->t;
		v->has_exit = true;
	}
}

static void on_exit_end(void *ctx, const struct vms_obs_exit *o)
{
	struct an_gate *g = ctx;
	if (pass(g, o->t)) {
		EACH(g, exit_end, o);
		return;
	}
	struct gw_vcpu *v = gv(g, o->vidx);
	if (v)
		v->has_exit = false;
}

/* What the gate keeps of host CPU (host, cpu) when it is not in the recent cache: from the
 * map, made when new (NULL: out of memory) */
static __attribute__((noinline)) struct gw_cpu *gate_cpu_slow(struct an_gate *g, uint64_t key,
							      uint32_t slot)
{
	bool inserted;
	uint64_t *idx = vms_keymap_put(&g->cpu_idx, key, g->nr_cpu, &inserted);
	if (!idx)
		return NULL;
	if (!inserted) {
		if (*idx >= g->nr_cpu)
			return NULL;   /* (out of memory when met) */
		g->recent[slot].key1 = key + 1;
		g->recent[slot].i = (uint32_t)*idx;
		return &g->cpu[*idx];
	}
	if (g->nr_cpu == g->cap_cpu) {
		struct gw_cpu *nc = vms_grow(g->cpu, &g->cap_cpu, sizeof *nc, 16);
		if (!nc) {
			*idx = UINT64_MAX - 1; /* not kept */
			return NULL;
		}
		g->cpu = nc;
	}
	struct gw_cpu *c = &g->cpu[g->nr_cpu++];
	memset(c, 0, sizeof *c);
	return c;
}

/* What the gate keeps of host CPU (host, cpu) (NULL: out of memory). Before its window a
 * gate asks at every host CPU's change of occupant and every sched_switch: the recent
 * cache's probe inline, the rest out of line. */
static inline struct gw_cpu *gate_cpu(struct an_gate *g, uint32_t host, uint32_t cpu)
{
	uint64_t key = vms_keymap_mt(host, (int32_t)cpu);
	uint32_t slot = vms_keymap_slot(key, 6);
	if (__builtin_expect(g->recent[slot].key1 == key + 1, 1))
		return &g->cpu[g->recent[slot].i];
	return gate_cpu_slow(g, key, slot);
}

static void on_cpu_occupant(void *ctx, const struct vms_obs_cpu_occupant *o)
{
	struct an_gate *g = ctx;
	if (pass(g, o->t)) {
		EACH(g, cpu_occupant, o);
		return;
	}
	struct gw_cpu *c = gate_cpu(g, o->host, o->cpu);
	if (!c)
		return;
	c->occ = *o;
	memcpy(c->occ_comm, o->comm, sizeof c->occ_comm);   /* (24 bytes: observe.h) */
	c->occupied = true;   /* (an unknown occupant too: nothing is known of it from t) */
}

static void on_cpu_run(void *ctx, const struct vms_obs_cpu_run *o)
{
	struct an_gate *g = ctx;
	if (pass(g, o->t)) {
		EACH(g, cpu_run, o);
		return;
	}
	struct gw_cpu *c = gate_cpu(g, o->host, o->cpu);
	if (!c)
		return;
	c->run = *o;
	an_copy_comm(c->comm, o->comm);
	c->known = o->tid >= 0;
}

static void on_vcpu_mode(void *ctx, const struct vms_obs_vcpu_mode *o)
{
	struct an_gate *g = ctx;
	if (pass(g, o->t)) {
		EACH(g, vcpu_mode, o);
		return;
	}
	struct gw_vcpu *v = gv(g, o->vidx);
	if (v) {
		v->mode = *o;
		v->has_mode = true;
	}
}

static void on_vcpu_wakeup(void *ctx, const struct vms_obs_vcpu_wakeup *o)
{
	struct an_gate *g = ctx;
	if (pass(g, o->t))
		EACH(g, vcpu_wakeup, o);
}

static void on_guest_wakeup(void *ctx, const struct vms_obs_guest_wakeup *o)
{
	struct an_gate *g = ctx;
	if (pass(g, o->t))
		EACH(g, guest_wakeup, o);
}

static void on_vcpu_instead(void *ctx, const struct vms_obs_vcpu_instead *o)
{
	struct an_gate *g = ctx;
	if (pass(g, o->t)) {
		EACH(g, vcpu_instead, o);
		return;
	}
	struct gw_vcpu *v = gv(g, o->vidx);
	if (v) {
		v->instead = *o;
		an_copy_comm(v->instead_comm, o->comm);
		v->has_instead = true;
	}
}

static void on_event(void *ctx, const struct vms_event *ev, uint64_t t)
{
	struct an_gate *g = ctx;
	if (pass(g, t))
		EACH(g, event, ev, t);
}

static void on_start(void *ctx, uint64_t t0)
{
	(void)ctx;
	(void)t0;   /* the consumers start at `from` (replay) */
}

static void on_finish(void *ctx, uint64_t t_end)
{
	struct an_gate *g = ctx;
	if (!g->open)
		replay(g, g->from < t_end ? g->from : t_end);
	EACH(g, finish, t_end);
}

struct an_gate *an_gate_new(uint32_t nr_v, uint64_t from, const struct an_subs *consumers,
			    struct vms_observer *out)
{
	struct an_gate *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	g->v = calloc(nr_v ? nr_v : 1, sizeof *g->v);
	if (!g->v) {
		free(g);
		return NULL;
	}
	g->nr_v = nr_v;
	g->from = from;
	vms_keymap_init(&g->cpu_idx);
	g->consumers = consumers;
	*out = (struct vms_observer){
		.ctx = g, .vcpu_state = on_vcpu_state, .guest_switch = on_guest_switch,
		.exit_begin = on_exit_begin, .exit_end = on_exit_end, .cpu_run = on_cpu_run,
		.vcpu_mode = on_vcpu_mode, .vcpu_wakeup = on_vcpu_wakeup,
		.vcpu_instead = on_vcpu_instead, .guest_wakeup = on_guest_wakeup,
		.cpu_occupant = on_cpu_occupant, .event = on_event,
		.start = on_start,
		.finish = on_finish,
	};
	return g;
}

void an_gate_free(struct an_gate *g)
{
	if (!g)
		return;
	free(g->v);
	free(g->cpu);
	vms_keymap_free(&g->cpu_idx);
	free(g);
}

/* ---- the gate's kept state, for checkpoints (an_gate_snapshot) ----
 * Layout, native byte order (read back by the build that wrote it, the index key says so):
 *   u32 magic "GWS1", u32 vCPUs, u32 vCPU size, u32 CPU size, the vCPUs' bytes,
 *   u32 CPUs, per CPU in the order the gate met them: u64 (host, cpu) key, its bytes.
 * The names' pointers are written as NULL: replay() points them at the kept copies. */
#define GATE_MAGIC 0x31535747u   /* "GWS1" */

static int put_bytes(FILE *f, const void *p, size_t n)
{
	return n && fwrite(p, 1, n, f) != n ? -1 : 0;
}

/* The kept observations as written: each field that replay() reads copied into zeroed
 * bytes, and what it overwrites (the times but an exit's begin, the old state, the previous
 * thread) and the names' bytes after their NUL written as zeros. Why: the gate keeps an
 * observation by assignment, which copies its padding too (whatever the publisher's stack
 * held), and a name by a copy that leaves a longer earlier name's tail behind it; so two
 * runs of the same traces wrote different checkpoints, and the state machine's last words
 * (an_sm_last_words), which hold only what replay() reads, gave other bytes than a gate that
 * saw every observation. (vms_obs_exit has no padding and is read whole.) */
static void canon_comm(char c[24])
{
	size_t n = strnlen(c, 23);
	memset(c + n, 0, 24 - n);
}

static void canon_state(struct vms_obs_vcpu_state *c)
{
	struct vms_obs_vcpu_state o = *c;
	memset(c, 0, sizeof *c);
	c->machine = o.machine, c->vcpu = o.vcpu, c->vidx = o.vidx;
	c->status = o.status, c->state = o.state;
	c->gtid = o.gtid, c->host = o.host, c->host_tid = o.host_tid, c->host_cpu = o.host_cpu;
	c->exit_reason = o.exit_reason, c->isa = o.isa, c->halt_polling = o.halt_polling;
	c->layer = o.layer;
}

static void canon_switch(struct vms_obs_guest_switch *c)
{
	struct vms_obs_guest_switch o = *c;
	memset(c, 0, sizeof *c);   /* (the names' pointers NULL) */
	c->machine = o.machine, c->vcpu = o.vcpu, c->vidx = o.vidx;
	c->next_tid = o.next_tid, c->prev_state = o.prev_state;
}

static void canon_mode(struct vms_obs_vcpu_mode *c)
{
	struct vms_obs_vcpu_mode o = *c;
	memset(c, 0, sizeof *c);
	c->machine = o.machine, c->vcpu = o.vcpu, c->vidx = o.vidx, c->host = o.host;
	c->host_cpu = o.host_cpu, c->host_tid = o.host_tid;
	c->guest_mode = o.guest_mode;
}

static void canon_instead(struct vms_obs_vcpu_instead *c)
{
	struct vms_obs_vcpu_instead o = *c;
	memset(c, 0, sizeof *c);   /* (the name's pointer NULL) */
	c->machine = o.machine, c->vcpu = o.vcpu, c->vidx = o.vidx;
	c->host = o.host, c->host_cpu = o.host_cpu, c->tid = o.tid;
	c->unattributed = o.unattributed;
}

static void canon_run(struct vms_obs_cpu_run *c)
{
	struct vms_obs_cpu_run o = *c;
	memset(c, 0, sizeof *c);   /* (the name's pointer NULL) */
	c->host = o.host, c->cpu = o.cpu, c->tid = o.tid;
	c->prev_state = o.prev_state, c->guest = o.guest, c->vcpu = o.vcpu, c->vidx = o.vidx;
}

int an_gate_snapshot(const struct an_gate *g, FILE *f)
{
	uint32_t h[4] = { GATE_MAGIC, g->nr_v, (uint32_t)sizeof(struct gw_vcpu),
			  (uint32_t)sizeof(struct gw_cpu) };
	int bad = put_bytes(f, h, sizeof h);
	for (uint32_t i = 0; i < g->nr_v; i++) {
		struct gw_vcpu v;
		memcpy(&v, &g->v[i], sizeof v);   /* (its own padding: calloc's zeros) */
		canon_state(&v.state);
		canon_switch(&v.sw);
		canon_mode(&v.mode);
		canon_instead(&v.instead);
		canon_comm(v.comm);
		canon_comm(v.instead_comm);
		/* what a flag says is not kept (an exit ended, a vcpu_instead forgotten) is zeros:
		 * replay() reads none of it, and the last words do not hold it */
		if (!v.has_state)
			memset(&v.state, 0, sizeof v.state);
		if (!v.has_switch) {
			memset(&v.sw, 0, sizeof v.sw);
			memset(v.comm, 0, sizeof v.comm);
		}
		if (!v.has_mode)
			memset(&v.mode, 0, sizeof v.mode);
		if (!v.has_exit)
			memset(&v.exit, 0, sizeof v.exit);
		if (!v.has_instead) {
			memset(&v.instead, 0, sizeof v.instead);
			memset(v.instead_comm, 0, sizeof v.instead_comm);
		}
		bad |= put_bytes(f, &v, sizeof v);
	}
	/* the keys, by index (the map holds key -> index) */
	uint64_t *keys = calloc(g->nr_cpu ? g->nr_cpu : 1, sizeof *keys);
	if (!keys)
		return -1;
	const struct vms_keymap *k = &g->cpu_idx;
	for (size_t i = 0; i < k->cap; i++)
		if (k->keys[i] != VMS_KEYMAP_EMPTY && k->vals[i] < g->nr_cpu)
			keys[k->vals[i]] = k->keys[i];
	bad |= put_bytes(f, &g->nr_cpu, 4);
	for (uint32_t i = 0; i < g->nr_cpu; i++) {
		struct gw_cpu c;
		memcpy(&c, &g->cpu[i], sizeof c);   /* (its own padding: memset when made) */
		canon_run(&c.run);
		canon_comm(c.comm);
		c.occ.comm = NULL;
		c.occ.t = 0;
		if (!c.occupied) {
			memset(&c.occ, 0, sizeof c.occ);
			memset(c.occ_comm, 0, sizeof c.occ_comm);
		}
		bad |= put_bytes(f, &keys[i], 8) | put_bytes(f, &c, sizeof c);
	}
	free(keys);
	return bad ? -1 : 0;
}

/* a bool's byte as read from a file: 0 or 1, else no run made it */
static bool flags_ok(const void *base, const size_t *offs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t b;
		memcpy(&b, (const char *)base + offs[i], 1);
		if (b > 1)
			return false;
	}
	return true;
}

/* A kept occupant's (guest, vcpu, vidx): restored from the layout's slot vidx, never taken
 * from the file; false when vidx is no slot. */
static bool occupant_ok(const struct an_layout *L, int32_t *guest, int32_t *vcpu, int32_t *vidx)
{
	if (*guest < 0) {
		*guest = *vcpu = *vidx = -1;
		return true;
	}
	if (*vidx < 0 || (uint32_t)*vidx >= L->nr_v)
		return false;
	*guest = (int32_t)L->v[*vidx].machine;
	*vcpu = (int32_t)L->v[*vidx].vcpu;
	return true;
}

static int gate_bad(struct vms_error *err, const struct vms_rd *r, const char *what)
{
	return vms_error_set(err, VMS_ERR_FORMAT, "window state: %s at byte offset %zu", what,
			     r->off);
}

static bool vcpu_ok(const struct gw_vcpu *v, const struct an_layout *L)
{
	static const size_t flags[] = {
		offsetof(struct gw_vcpu, has_state), offsetof(struct gw_vcpu, has_switch),
		offsetof(struct gw_vcpu, has_mode), offsetof(struct gw_vcpu, has_exit),
		offsetof(struct gw_vcpu, has_instead),
		offsetof(struct gw_vcpu, state) + offsetof(struct vms_obs_vcpu_state, halt_polling),
		offsetof(struct gw_vcpu, mode) + offsetof(struct vms_obs_vcpu_mode, guest_mode),
		offsetof(struct gw_vcpu, instead) +
			offsetof(struct vms_obs_vcpu_instead, unattributed),
	};
	if (!flags_ok(v, flags, sizeof flags / sizeof flags[0]))
		return false;
	uint32_t st, old, how;
	memcpy(&st, &v->state.state, 4);
	memcpy(&old, &v->state.old_state, 4);
	memcpy(&how, &v->exit.how, 4);
	return st < VMS_STATE_COUNT && old < VMS_STATE_COUNT && how <= VMS_EXIT_LOST &&
	       v->mode.host < L->nr_mach && v->exit.host < L->nr_mach &&
	       v->instead.host < L->nr_mach && v->state.host >= -1 &&
	       v->state.host < (int32_t)L->nr_mach;
}

int an_gate_restore(struct an_gate *g, const struct an_layout *L, const void *buf, size_t len,
		    size_t *used, struct vms_error *err)
{
	struct vms_rd r = { buf, len, 0 };
	uint32_t h[4];
	if (!vms_rd_take(&r, h, sizeof h))
		return gate_bad(err, &r, "header cut");
	if (h[0] != GATE_MAGIC || h[1] != g->nr_v || h[2] != sizeof(struct gw_vcpu) ||
	    h[3] != sizeof(struct gw_cpu) || g->nr_cpu || g->open)
		return gate_bad(err, &r, "another layout or build");
	for (uint32_t i = 0; i < g->nr_v; i++) {
		struct gw_vcpu *v = &g->v[i];
		if (!vms_rd_take(&r, v, sizeof *v))
			return gate_bad(err, &r, "vCPUs cut");
		if (!vcpu_ok(v, L))
			return gate_bad(err, &r, "values no run makes");
		/* who the slot is comes from the layout */
		uint32_t m = L->v[i].machine, c = L->v[i].vcpu;
		v->state.machine = v->sw.machine = v->exit.machine = v->mode.machine =
			v->instead.machine = m;
		v->state.vcpu = v->sw.vcpu = v->exit.vcpu = v->mode.vcpu = v->instead.vcpu = c;
		v->state.vidx = v->sw.vidx = v->exit.vidx = v->mode.vidx = v->instead.vidx = i;
		v->comm[sizeof v->comm - 1] = v->instead_comm[sizeof v->instead_comm - 1] = 0;
	}
	uint32_t nc;
	if (!vms_rd_take(&r, &nc, 4))
		return gate_bad(err, &r, "CPUs cut");
	if (nc > (uint64_t)L->nr_mach * AN_MAX_CPUS || nc > r.left / (8 + sizeof(struct gw_cpu)))
		return gate_bad(err, &r, "more CPUs than the state holds");
	static const size_t cflags[] = { offsetof(struct gw_cpu, known),
					 offsetof(struct gw_cpu, occupied) };
	for (uint32_t i = 0; i < nc; i++) {
		uint64_t key;
		struct gw_cpu tmp;
		if (!vms_rd_take(&r, &key, 8) || !vms_rd_take(&r, &tmp, sizeof tmp))
			return gate_bad(err, &r, "CPUs cut");
		uint32_t host = (uint32_t)(key >> 32), cpu = (uint32_t)key;
		if (host >= L->nr_mach || !L->mach[host].host || cpu >= AN_MAX_CPUS ||
		    !flags_ok(&tmp, cflags, 2) ||
		    !occupant_ok(L, &tmp.run.guest, &tmp.run.vcpu, &tmp.run.vidx) ||
		    !occupant_ok(L, &tmp.occ.guest, &tmp.occ.vcpu, &tmp.occ.vidx))
			return gate_bad(err, &r, "values no run makes");
		struct gw_cpu *c = gate_cpu(g, host, cpu);
		if (!c)
			return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		if (g->nr_cpu != i + 1 || c != &g->cpu[i])
			return gate_bad(err, &r, "a CPU twice");
		*c = tmp;
		c->run.host = c->occ.host = host;
		c->run.cpu = c->occ.cpu = cpu;
		c->comm[sizeof c->comm - 1] = c->occ_comm[sizeof c->occ_comm - 1] = 0;
	}
	*used = r.off;
	return 0;
}
