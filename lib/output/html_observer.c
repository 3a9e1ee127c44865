/* The HTML report writer as a consumer: the vCPU state machine's observations and the fused
 * view's intervals become pieces of timeline rows (html_summary.c) and exit latency
 * histograms. Nothing here calls back into the analyses. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "html_internal.h"
#include "core/grow.h"

/* ---- names ---- */

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h == VMS_KEYMAP_EMPTY ? 0 : h;
}

uint32_t html_name(struct vms_html *h, const char *name)
{
	if (!name || !*name)
		return 0;
	/* names come from the traces: at most VMS_HTML_NAME_MAX bytes, cut on a character */
	char s[VMS_HTML_NAME_MAX + 1];
	size_t n = strnlen(name, VMS_HTML_NAME_MAX + 1);
	if (n > VMS_HTML_NAME_MAX) {
		n = VMS_HTML_NAME_MAX;
		while (n && ((unsigned char)name[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(s, name, n);
	s[n] = 0;
	uint64_t key = fnv1a(s);
	uint64_t *v = vms_keymap_get(&h->name_index, key);
	if (v && !strcmp(h->names[*v], s))
		return (uint32_t)*v;
	if (v || h->nr_names >= VMS_HTML_MAX_NAMES) {
		/* a full table (or a 64-bit hash collision): the slice stays unnamed, and the
		 * page says how many names were dropped */
		h->names_dropped++;
		return 0;
	}
	if (h->nr_names == h->cap_names) {
		uint32_t cap = h->cap_names * 2;
		char **n = realloc(h->names, cap * sizeof *n);
		if (!n)
			goto oom;
		h->names = n;
		h->cap_names = cap;
	}
	char *copy = strdup(s);
	uint64_t *slot = copy ? vms_keymap_put(&h->name_index, key, h->nr_names, NULL) : NULL;
	if (!slot) {
		free(copy);
		goto oom;
	}
	h->names[h->nr_names] = copy;
	return h->nr_names++;
oom:
	h->oom = 1;
	return 0;
}

uint32_t html_namef(struct vms_html *h, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return html_name(h, buf);
}

/* Names looked up by a key of their parts first: formatting and hashing a name at every
 * observation would cost more than the observation. kind: the kind of name; hi: up to 28
 * bits; lo: 32 bits. A cache entry is the name's index + 1, with bit 32 set when the name is
 * final (a thread seen without its comm gets "tid N" until its comm is known). */
enum { NK_THREAD = 1, NK_EXIT, NK_PCPU_GUEST, NK_PCPU_VMM, NK_PCPU_HOST, NK_INSTEAD, NK_ON_VCPU,
       NK_LAYER };
#define NK_FINAL (1ull << 32)

static uint64_t name_key(unsigned kind, uint64_t hi, uint32_t lo)
{
	return (uint64_t)kind << 60 | (hi & 0xfffffffu) << 32 | lo;
}

/* The name index of a cache entry */
static uint32_t entry_name(uint64_t e)
{
	return (uint32_t)(e & 0xffffffffu) - 1;
}

/* The cache entry of key, 0 when none */

static uint64_t cache_get(struct vms_html *h, uint64_t key)
{
	struct html_recent *c = &h->name_recent[vms_keymap_slot(key, 8)];
	if (c->key1 == key + 1)
		return c->val;
	const uint64_t *v = vms_keymap_get(&h->name_cache, key);
	if (v)
		*c = (struct html_recent){ key + 1, *v };
	return v ? *v : 0;
}

static uint32_t cache_put(struct vms_html *h, uint64_t key, uint32_t name, bool final)
{
	uint64_t *v = vms_keymap_put(&h->name_cache, key, 0, NULL);
	if (!v) {
		h->oom = 1;
	} else {
		*v = (name + 1ull) | (final ? NK_FINAL : 0);
		*&h->name_recent[vms_keymap_slot(key, 8)] = (struct html_recent){ key + 1, *v };
	}
	return name;
}

/* "comm (tid)", or "tid N" while the name is not known */
static uint32_t thread_name(struct vms_html *h, uint32_t machine, const char *comm, int32_t tid)
{
	if (tid < 0)
		return h->n_unknown_thread;
	uint64_t key = name_key(NK_THREAD, machine, (uint32_t)tid), e = cache_get(h, key);
	bool known = comm && *comm;
	if (e && ((e & NK_FINAL) || !known))
		return entry_name(e);
	return cache_put(h, key, known ? html_namef(h, "%s (%d)", comm, tid) : html_namef(h, "tid %d", tid),
			 known);
}

static const char *machine_name(const struct vms_html *h, uint32_t m)
{
	const struct vms_machine *mc = vms_model_machine_c(h->model, m);
	return mc && mc->name ? mc->name : "?";
}

/* ---- rows ---- */

int html_row_new(struct vms_html *h, enum html_row_kind kind, uint32_t machine, int32_t id,
		 uint32_t label)
{
	if (h->nr_rows == h->cap_rows) {
		struct html_row *r = vms_grow(h->rows, &h->cap_rows, sizeof *r, 32);
		if (!r)
			goto oom;
		h->rows = r;
	}
	int i = hs_add_row(&h->sum);
	if (i < 0)
		goto oom;
	h->rows[i] = (struct html_row){ .kind = kind, .machine = machine, .id = id, .label = label };
	h->nr_rows++;
	return i;
oom:
	h->oom = 1;
	return -1;
}

void html_row_close(struct vms_html *h, uint32_t row, uint64_t t)
{
	struct html_row *r = &h->rows[row];
	if (r->open) {
		hs_add(&h->sum, row, r->since, t, r->state, r->who);
		html_exact_piece(h, row, r->since, t, r->state, r->who);
	}
	r->open = 0;
}

void html_row_set(struct vms_html *h, uint32_t row, uint64_t t, unsigned state, uint32_t who)
{
	html_row_close(h, row, t);
	struct html_row *r = &h->rows[row];
	r->open = 1;
	r->since = t;
	r->state = state;
	r->who = who;
}

/* ---- vCPUs and guest threads ---- */

static struct html_vcpu *vcpu_of(struct vms_html *h, uint32_t machine, uint32_t vcpu)
{
	if (machine >= vms_model_nr_machines(h->model))
		return NULL;
	const struct vms_machine *mc = vms_model_machine_c(h->model, machine);
	if (vcpu >= mc->nr_vcpus)
		return NULL;
	struct html_vcpu *v = &h->vcpus[h->vcpu_base[machine] + vcpu];
	return v->row >= 0 ? v : NULL;
}

/* The row of guest thread (machine, tid), created on its first run; -1 past the cap. */
static int32_t thread_row(struct vms_html *h, uint32_t machine, int32_t tid, uint32_t name)
{
	if (tid <= 0)
		return -1;
	bool fresh = false;
	uint64_t *v = vms_keymap_put(&h->threads, vms_keymap_mt(machine, tid), 0, &fresh);
	if (!v) {
		h->oom = 1;
		return -1;
	}
	if (!fresh)
		return *v ? (int32_t)(*v - 1) : -1;
	if (h->nr_thread_rows >= VMS_HTML_MAX_THREAD_ROWS) {
		h->threads_omitted++;
		return -1;
	}
	uint32_t label = name ? name : html_namef(h, "tid %d", tid);
	int row = html_row_new(h, HTML_ROW_THREAD, machine, tid, label);
	if (row < 0)
		return -1;
	h->nr_thread_rows++;
	/* the put may have moved: look the slot up again */
	*vms_keymap_get(&h->threads, vms_keymap_mt(machine, tid)) = (uint64_t)row + 1;
	return row;
}

/* "exit NAME" */
static uint32_t exit_name(struct vms_html *h, uint32_t isa, uint32_t reason)
{
	uint64_t key = name_key(NK_EXIT, isa, reason), e = cache_get(h, key);
	if (e)
		return entry_name(e);
	const char *n = vms_exit_reason_name(isa, reason);
	return cache_put(h, key, n ? html_namef(h, "exit %s", n) : html_namef(h, "exit %u", reason), true);
}

/* A nested guest's slice name who with the layer of its cause: "exit EPT_VIOLATION at l0" */
static uint32_t at_layer(struct vms_html *h, uint32_t who, int32_t layer)
{
	if (__builtin_expect(!h->nested, 1) || layer < 0 || !who || who >= h->nr_names)
		return who;
	uint64_t key = name_key(NK_LAYER, (uint32_t)layer, who), e = cache_get(h, key);
	if (e)
		return entry_name(e);
	return cache_put(h, key, html_namef(h, "%s at %s", h->names[who],
					      machine_name(h, (uint32_t)layer)), true);
}

/* The name of what a thread row shows while its vCPU is in `state` */
static uint32_t thread_who(struct vms_html *h, const struct html_vcpu *v, uint32_t vcpu)
{
	if (v->state == VMS_STATE_RUNNING || v->state == VMS_STATE_IDLE) {
		uint64_t key = name_key(NK_ON_VCPU, 0, vcpu), e = cache_get(h, key);
		return e ? entry_name(e) : cache_put(h, key, html_namef(h, "on vCPU %u", vcpu), true);
	}
	return v->who;
}

static void on_vcpu_state(void *ctx, const struct vms_obs_vcpu_state *o)
{
	struct vms_html *h = ctx;
	struct html_vcpu *v = vcpu_of(h, o->machine, o->vcpu);
	if (!v)
		return;
	v->state = o->state;
	if (o->gtid != v->gtid && o->gtid >= 0) {
		v->gtid = o->gtid;
		v->gname = o->gtid == 0 ? h->n_idle : thread_name(h, o->machine, NULL, o->gtid);
	}
	switch (o->state) {
	case VMS_STATE_RUNNING:
		v->who = v->gname;
		break;
	case VMS_STATE_IDLE:
		v->who = h->n_idle;
		break;
	case VMS_STATE_VMM:
		v->who = o->exit_reason >= 0 ? exit_name(h, o->isa, (uint32_t)o->exit_reason) : h->n_hyp;
		break;
	case VMS_STATE_PREEMPTED:
	case VMS_STATE_HALTED:
		/* named by vcpu_instead, which follows, when the thread left its CPU */
		v->who = o->halt_polling ? h->n_polling
					 : h->n_off;
		break;
	default:
		v->who = 0;
	}
	v->layer = o->layer;
	v->who = at_layer(h, v->who, v->layer);
	html_row_set(h, (uint32_t)v->row, o->t, o->state, v->who);
	if (v->trow >= 0)
		html_row_set(h, (uint32_t)v->trow, o->t, o->state, thread_who(h, v, o->vcpu));
}

static void on_guest_switch(void *ctx, const struct vms_obs_guest_switch *o)
{
	struct vms_html *h = ctx;
	struct html_vcpu *v = vcpu_of(h, o->machine, o->vcpu);
	if (!v)
		return;
	/* the thread that leaves is off every vCPU until it runs again: that time counts in
	 * its row (a bucket where it ran a little is mostly "off"), so the row's dominant
	 * states are honest */
	if (v->trow >= 0)
		html_row_set(h, (uint32_t)v->trow, o->t, HTML_THREAD_OFF, 0);
	v->gtid = o->next_tid;
	v->gname = o->next_tid == 0 ? h->n_idle : thread_name(h, o->machine, o->next_comm, o->next_tid);
	v->trow = thread_row(h, o->machine, o->next_tid, v->gname);
	if (v->trow >= 0)
		html_row_set(h, (uint32_t)v->trow, o->t, v->state, thread_who(h, v, o->vcpu));
	/* the vCPU row's slice goes on; its piece is named after the new thread */
	if (v->state == VMS_STATE_RUNNING) {
		v->who = v->gname;
		html_row_set(h, (uint32_t)v->row, o->t, v->state, v->who);
	}
}

/* Who runs on the physical CPU a preempted or halted vCPU's thread left */
static void on_vcpu_instead(void *ctx, const struct vms_obs_vcpu_instead *o)
{
	struct vms_html *h = ctx;
	struct html_vcpu *v = vcpu_of(h, o->machine, o->vcpu);
	if (!v || (v->state != VMS_STATE_PREEMPTED && v->state != VMS_STATE_HALTED))
		return;
	uint32_t who = o->unattributed ? h->n_unattributed
		     : o->tid < 0 ? h->n_off : o->tid == 0 ? h->n_instead_idle : 0;
	if (o->tid > 0) {
		uint64_t key = name_key(NK_INSTEAD, o->host, (uint32_t)o->tid), e = cache_get(h, key);
		who = e ? entry_name(e)
			: cache_put(h, key, html_namef(h, "instead: %s (%d)", o->comm && *o->comm ? o->comm : "?",
							o->tid), true);
	}
	who = at_layer(h, who, v->layer);
	if (who == v->who)
		return;
	v->who = who;
	html_row_set(h, (uint32_t)v->row, o->t, v->state, who);
	if (v->trow >= 0)
		html_row_set(h, (uint32_t)v->trow, o->t, v->state, who);
}

/* ---- exit latency histograms ---- */

static struct html_hist *hist_of(struct vms_html *h, uint32_t machine, uint32_t isa,
				 uint32_t reason)
{
	for (uint32_t i = 0; i < h->nr_hists; i++)
		if (h->hists[i].machine == machine && h->hists[i].isa == isa &&
		    h->hists[i].reason == reason)
			return &h->hists[i];
	/* bounded by guests x the reasons an ISA has (a u32 from the trace: cap it) */
	if (h->nr_hists >= 4096)
		return NULL;
	if (h->nr_hists == h->cap_hists) {
		struct html_hist *n = vms_grow(h->hists, &h->cap_hists, sizeof *n, 16);
		if (!n) {
			h->oom = 1;
			return NULL;
		}
		h->hists = n;
	}
	struct html_hist *x = &h->hists[h->nr_hists++];
	memset(x, 0, sizeof *x);
	x->machine = machine;
	x->isa = isa;
	x->reason = reason;
	return x;
}

static void on_exit_end(void *ctx, const struct vms_obs_exit *o)
{
	struct vms_html *h = ctx;
	const struct html_vcpu *v = vcpu_of(h, o->machine, o->vcpu);
	if (!v)
		return;   /* a vCPU the filter leaves out */
	html_exact_exit(h, (uint32_t)v->row, o);
	struct html_hist *x = hist_of(h, o->machine, o->isa, o->reason);
	if (!x)
		return;
	if (o->how == VMS_EXIT_ENDED) {
		x->count++;
		x->bins[vms_html_hist_bin(o->t - o->begin)]++;
	} else if (o->how == VMS_EXIT_UNFINISHED) {
		x->unfinished++;
	} else {
		x->lost++;
	}
}

/* ---- physical CPUs (the fused view's intervals) ---- */

void vms_html_pcpu_interval(void *ctx, const struct vms_pcpu_interval *iv)
{
	struct vms_html *h = ctx;
	if (!vms_filter_pcpu(&h->filter, iv->host, iv->guest, iv->vcpu))
		return;
	bool fresh = false;
	uint64_t pk = vms_keymap_mt(iv->host, (int32_t)iv->cpu);
	struct html_recent *pc = &h->pcpu_recent[vms_keymap_slot(pk, 6)];
	uint64_t *slot = pc->key1 == pk + 1 ? &pc->val : vms_keymap_put(&h->pcpus, pk, 0, &fresh);
	if (!slot) {
		h->oom = 1;
		return;
	}
	if (fresh && h->nr_pcpu_rows >= VMS_HTML_MAX_PCPU_ROWS) {
		h->pcpus_omitted++; /* (its slot stays 0: no row) */
		return;
	}
	if (fresh) {
		h->nr_pcpu_rows++;
		int row = html_row_new(h, HTML_ROW_PCPU, iv->host, (int32_t)iv->cpu,
				       html_namef(h, "%s CPU %u", machine_name(h, iv->host), iv->cpu));
		*vms_keymap_get(&h->pcpus, vms_keymap_mt(iv->host, (int32_t)iv->cpu)) =
			row < 0 ? 0 : (uint64_t)row + 1;
		slot = vms_keymap_get(&h->pcpus, vms_keymap_mt(iv->host, (int32_t)iv->cpu));
	}
	if (slot != &pc->val)
		*pc = (struct html_recent){ pk + 1, *slot };
	if (!*slot)
		return;
	uint32_t row = (uint32_t)(*slot - 1);
	unsigned state;
	uint32_t who;
	uint32_t g, vc;
	if (iv->guest >= 0) {
		state = iv->tid == 0 ? HTML_PCPU_GUEST_IDLE : HTML_PCPU_GUEST;
		uint64_t key = name_key(NK_PCPU_GUEST, (uint64_t)iv->guest << 12 | ((uint32_t)iv->vcpu & 0xfff),
					(uint32_t)iv->tid), e = cache_get(h, key);
		if (e)
			who = entry_name(e);
		else if (iv->tid < 0)
			who = cache_put(h, key, html_namef(h, "%s vCPU %d", machine_name(h, (uint32_t)iv->guest),
							   iv->vcpu), true);
		else
			who = cache_put(h, key, html_namef(h, "%s vCPU %d: %s (%d)",
							   machine_name(h, (uint32_t)iv->guest), iv->vcpu,
							   iv->tid == 0 ? "idle" : iv->comm, iv->tid), true);
	} else if (iv->tid == 0) {
		state = HTML_PCPU_IDLE;
		who = h->n_host_idle;
	} else if (iv->tid < 0) {
		state = HTML_PCPU_UNKNOWN;
		who = 0;
	} else {
		uint64_t key = name_key(NK_PCPU_VMM, iv->host, (uint32_t)iv->tid), e = cache_get(h, key);
		if (e) {
			/* a vCPU thread outside guest mode: the hypervisor runs */
			state = HTML_PCPU_VMM;
			who = entry_name(e);
		} else if (!vms_model_vcpu_of(h->model, iv->host, iv->tid, &g, &vc)) {
			state = HTML_PCPU_VMM;
			who = cache_put(h, key, html_namef(h, "%s (%d): %s vCPU %u in the hypervisor", iv->comm,
							   iv->tid, machine_name(h, g), vc), true);
		} else {
			state = HTML_PCPU_HOST;
			who = thread_name(h, iv->host, iv->comm, iv->tid);
		}
	}
	hs_add(&h->sum, row, iv->start, iv->end, state, who);
	html_exact_piece(h, row, iv->start, iv->end, state, who);
}

/* ---- start and finish; the embedded fused view ---- */

static void on_start(void *ctx, uint64_t t0)
{
	struct vms_html *h = ctx;
	h->t_first = t0;
	h->started = 1;
	hs_start(&h->sum, t0);
	/* every vCPU is unknown from the first event on, until something is known (as in
	 * vmscope vcpus) */
	for (uint32_t i = 0; i < h->nr_vcpus; i++)
		if (h->vcpus[i].row >= 0)
			html_row_set(h, (uint32_t)h->vcpus[i].row, t0, VMS_STATE_UNKNOWN, 0);
}

static void on_finish(void *ctx, uint64_t t_end)
{
	struct vms_html *h = ctx;
	if (h->pv)
		h->pvo.finish(h->pvo.ctx, t_end);   /* its last intervals first */
	h->t_end = t_end;
	for (uint32_t i = 0; i < h->nr_rows; i++)
		if (h->rows[i].kind != HTML_ROW_PCPU)
			html_row_close(h, i, t_end);
}

/* What the fused view needs, forwarded before this writer looks at it (the order of two
 * separate subscriptions, the view's first) */
static void on_cpu_occupant(void *ctx, const struct vms_obs_cpu_occupant *o)
{
	struct vms_html *h = ctx;
	if (h->pv)
		vms_pcpu_view_occupant(h->pv, o);
}

/* (every event: the view's first event on a CPU may be of any kind, observe.h) */
static void on_event(void *ctx, const struct vms_event *ev, uint64_t t)
{
	(void)ctx;
	(void)ev;
	(void)t;
}

/* Everything this writer keeps, freed (the options and the view stay) */
static void clear(struct vms_html *h)
{
	hs_free(&h->sum);
	free(h->rows);
	free(h->vcpu_base);
	free(h->vcpus);
	vms_keymap_free(&h->threads);
	vms_keymap_free(&h->pcpus);
	vms_keymap_free(&h->name_index);
	vms_keymap_free(&h->name_cache);
	for (uint32_t i = 0; h->names && i < h->nr_names; i++)
		free(h->names[i]);
	free(h->names);
	free(h->hists);
	html_exact_free(&h->exact);
	struct vms_html keep = { .opts = h->opts, .pv = h->pv, .pvo = h->pvo,
				 .cycles = h->cycles };
	*h = keep;
}

/* Start afresh over `model`: 0, or -1 when out of memory. */
static int layout(struct vms_html *h, const struct vms_model *model)
{
	clear(h);
	h->model = model;
	h->nested = vms_model_nested(model);
	h->exact.max = h->opts.exact_max ? h->opts.exact_max : VMS_HTML_EXACT_MAX;
	h->exact.over = h->opts.summary_only;
	hs_init(&h->sum);
	vms_keymap_init(&h->threads);
	vms_keymap_init(&h->pcpus);
	vms_keymap_init(&h->name_index);
	vms_keymap_init(&h->name_cache);
	h->filter.machine = -1;
	h->filter.vcpu = h->opts.vcpu;
	if (h->opts.machine)
		h->filter.machine = vms_model_find(model, h->opts.machine);   /* -1: the
		                                                                  session refuses */
	if (h->opts.served) {
		/* (no timeline of its own: no fused view; serve's rows make theirs) */
	} else if (!h->pv) {
		h->pv = vms_pcpu_view_new(model, vms_html_pcpu_interval, h);
		if (!h->pv)
			return -1;
		h->pvo = vms_pcpu_view_observer(h->pv);
	} else if (vms_pcpu_view_reset(h->pv, model) < 0) {
		return -1;
	}
	h->cap_names = 64;
	h->names = calloc(h->cap_names, sizeof *h->names);
	uint32_t nm = vms_model_nr_machines(model);
	h->vcpu_base = calloc(nm ? nm : 1, sizeof *h->vcpu_base);
	if (!h->names || !h->vcpu_base || !(h->names[0] = strdup("")))
		return -1;
	h->nr_names = 1;
	h->n_idle = html_name(h, "idle");
	h->n_off = html_name(h, "off its CPU");
	h->n_instead_idle = html_name(h, "instead: host idle");
	h->n_polling = html_name(h, "halt polling on its CPU");
	h->n_host_idle = html_name(h, "host idle");
	h->n_hyp = html_name(h, "in the hypervisor");
	h->n_unknown_thread = html_name(h, "unknown thread");
	/* a wait beyond VMS_INSTEAD_MAX_WAITERS on one CPU (vmscope/observe.h) */
	h->n_unattributed = html_name(h, "instead: unattributed");
	for (uint32_t i = 0; i < nm; i++) {
		h->vcpu_base[i] = h->nr_vcpus;
		h->nr_vcpus += vms_model_machine_c(model, i)->nr_vcpus;
	}
	h->vcpus = calloc(h->nr_vcpus ? h->nr_vcpus : 1, sizeof *h->vcpus);
	if (!h->vcpus)
		return -1;
	/* one row per vCPU of every guest the filter keeps, in the order of the model
	 * (= vms_analysis_vcpu); a vCPU left out has no row and is ignored */
	for (uint32_t i = 0; i < nm; i++) {
		const struct vms_machine *mc = vms_model_machine_c(model, i);
		for (uint32_t k = 0; k < mc->nr_vcpus; k++) {
			struct html_vcpu *v = &h->vcpus[h->vcpu_base[i] + k];
			v->gtid = -1;
			v->trow = -1;
			v->row = -1;
			if (!vms_filter_vcpu(&h->filter, i, k))
				continue;
			if (h->nr_vcpu_rows >= VMS_HTML_MAX_VCPU_ROWS) {
				h->vcpus_omitted++;
				continue;
			}
			h->nr_vcpu_rows++;
			v->row = html_row_new(h, HTML_ROW_VCPU, i, (int32_t)k,
					      html_namef(h, "%s vCPU %u", mc->name, k));
			if (v->row < 0)
				return -1;
		}
	}
	return h->oom ? -1 : 0;
}

static void on_reset(void *ctx, const struct vms_model *model)
{
	struct vms_html *h = ctx;
	if (layout(h, model) < 0)
		h->oom = 1;
}

struct vms_observer vms_html_observer(struct vms_html *h)
{
	bool tl = !h->opts.served;   /* the rows of its own timeline */
	return (struct vms_observer){
		.ctx = h,
		.vcpu_state = tl ? on_vcpu_state : NULL,
		.guest_switch = tl ? on_guest_switch : NULL,
		.exit_end = on_exit_end,
		.vcpu_instead = tl ? on_vcpu_instead : NULL,
		.cpu_occupant = tl ? on_cpu_occupant : NULL,
		.event = tl ? on_event : NULL,
		.start = on_start,
		.finish = on_finish,
		.reset = on_reset,
	};
}

struct vms_html *vms_html_new(const struct vms_model *model, const struct vms_html_opts *opts)
{
	struct vms_html *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	h->opts.vcpu = -1;
	if (opts)
		h->opts = *opts;
	if (model && layout(h, model) < 0) {
		vms_html_free(h);
		return NULL;
	}
	return h;
}

void vms_html_free(struct vms_html *h)
{
	if (!h)
		return;
	clear(h);
	vms_pcpu_view_free(h->pv);
	free(h);
}
