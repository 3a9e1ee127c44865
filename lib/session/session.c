/* The session: the whole pipeline for a set of traces.
 *
 *   sources --(model: links)--> clocks --> merge --> analyses --> sinks
 *
 * The spec wants the model complete before any state is computed, so that no event before
 * the first linking event is lost or misattributed. Two ways get there:
 *  - a model pass: read the linking kinds first (only from sources whose event types include
 *    kvm_entry or vmsync, decoding nothing else), then the analysis pass;
 *  - a checked single pass, when no output has to be streamed: analyse with the model the
 *    metadata gives (GUEST options, TRACEID, TIME_SHIFT, --map) while a second model observes
 *    the linking events; if the observed model links exactly the same, the results stand;
 *    if not, the analysis is run again with the observed model. A trace with complete GUEST
 *    options, or one without KVM events, is then read once.
 * Streaming sinks (vcpus, threads) cannot take back what they wrote, so they get the model
 * pass, unless an observer's reset takes it back (vms_sinks.reset_with_observer: the export
 * rewrites its file). */
#include <stdlib.h>
#include <string.h>

#include "vmscope/xen_model.h"
#include "vmscope/xentrace.h"
#include "vmscope/session.h"
#include "checkpoints.h"
#include "offset_fit.h"
#include "vmscope/sync.h"
#include "core/merge.h"
#include "core/pool.h"
#include "core/progress.h"

struct vms_session {
	struct vms_source **src;
	char **names;            /* the user's name for a source, or NULL */
	uint32_t nr_src;
	int32_t host_index;      /* --host, or -1 */
	bool *forced_guest;
	struct vms_session_opts opts;
	struct vms_model *model;
	bool model_built;
	uint64_t passes;         /* merged and model passes made (for tests and benchmarks) */
	struct vms_analysis *an;
	uint64_t **type_counts;  /* [source][type] */
	uint64_t events, backwards, first, last; /* of the window's events, when a window is set */
	uint64_t pass_last;      /* the last event the last pass gave the analysis */
	/* --map's threads: the host each entry maps into (-1: none) and whether an event of the
	 * last pass showed that thread there (a map to a thread the trace never shows is a
	 * usage error, not a vCPU of zeros) */
	int32_t *map_host;
	bool *map_seen;
	uint32_t maps_unseen;
	struct vms_observer *obs;  /* vms_session_observe: subscribed to every analysis run */
	uint32_t nr_obs;
	struct vms_xen_model **xen; /* per source: the Xen model of a xentrace host, else NULL */
	bool stop;               /* vms_session_stop: the pass under way ends after this event */
	struct vms_filter filter; /* --machine, --vcpu, resolved by vms_session_filter */
	uint64_t win_end;        /* the window's end when the last pass stopped there, else 0 */
	/* the sinks of a run, filtered */
	const struct vms_sinks *user_sinks;
	/* checkpoints (checkpoints.h): recorded by the next unwindowed analysis pass every
	 * ck_every events; restored by a windowed one (ck_use); ck_restored: the events of the
	 * last pass's checkpoint, not read again */
	uint64_t ck_every;
	struct ck_set *ck_rec, *ck_use;
	uint64_t ck_restored;
	/* the model is the caller's (vms_session_borrow_model): not freed here */
	bool model_borrowed;
};

void vms_session_stop(struct vms_session *s) { s->stop = true; }

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* --tsc-hz: a counter clock without TSC2NSEC gets the TSC2NSEC that the rate implies
 * (ns = ticks * mult >> shift, the largest shift whose mult fits 32 bits), so that the
 * clocks, the analyses and every output work in nanoseconds. */
static void apply_tsc_hz(struct vms_trace_meta *m, double hz)
{
	if (hz <= 0 || m->ts_in_ns || m->has_tsc2nsec)
		return;
	uint32_t shift = 31;
	double mult = 1e9 * (double)(1u << shift) / hz;
	while (shift > 0 && mult >= 4294967295.0) {
		shift--;
		mult = 1e9 * (double)(1u << shift) / hz;
	}
	if (mult >= 4294967295.0 || mult < 1.0)
		return;   /* a rate this far out is refused by the CLI */
	m->has_tsc2nsec = true;
	m->tsc_mult = (uint32_t)(mult + 0.5);
	m->tsc_shift = shift;
	m->tsc_offset = 0;
}

static int add_source(struct vms_session *s, const char *path, const char *name, bool guest,
		      struct vms_error *err)
{
	struct vms_source *src = vms_source_open(path, err);
	if (!src)
		return err->status ? err->status : VMS_ERR_FORMAT;
	apply_tsc_hz(&src->meta, s->opts.tsc_hz);
	uint32_t i = s->nr_src;
	s->src[i] = src;
	/* xentrace: the rate also gives its Xen tables their ns (no-op for other formats) */
	vms_xentrace_set_cpu_hz(src, s->opts.tsc_hz > 0 ? (uint64_t)(s->opts.tsc_hz + 0.5) : 0);
	s->names[i] = xstrdup(name);
	s->forced_guest[i] = guest;
	s->type_counts[i] = calloc(src->meta.nr_types ? src->meta.nr_types : 1, sizeof(uint64_t));
	s->nr_src++;
	if (!s->type_counts[i])
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	return 0;
}

struct vms_session *vms_session_open(const char *const *paths, uint32_t nr_paths,
				     const struct vms_session_opts *opts, struct vms_error *err)
{
	static const struct vms_session_opts none;
	if (!opts)
		opts = &none;
	struct vms_session *s = calloc(1, sizeof *s);
	if (!s)
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory"), NULL;
	uint32_t cap = nr_paths + opts->nr_guests + 1;
	s->src = calloc(cap, sizeof *s->src);
	s->names = calloc(cap, sizeof *s->names);
	s->forced_guest = calloc(cap, sizeof *s->forced_guest);
	s->type_counts = calloc(cap, sizeof *s->type_counts);
	s->xen = calloc(cap, sizeof *s->xen);
	s->map_host = calloc(opts->nr_maps + 1, sizeof *s->map_host);
	s->map_seen = calloc(opts->nr_maps + 1, sizeof *s->map_seen);
	s->host_index = -1;
	s->opts = *opts;
	vms_pool_set_threads(opts->threads);
	if (!s->src || !s->names || !s->forced_guest || !s->type_counts || !s->xen ||
	    !s->map_host || !s->map_seen) {
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		goto fail;
	}
	/* the host first: the first host is the reference timebase */
	if (opts->host_path) {
		if (add_source(s, opts->host_path, NULL, false, err) < 0)
			goto fail;
		s->host_index = 0;
	}
	for (uint32_t i = 0; i < nr_paths; i++)
		if (add_source(s, paths[i], NULL, false, err) < 0)
			goto fail;
	for (uint32_t i = 0; i < opts->nr_guests; i++)
		if (add_source(s, opts->guest_paths[i], opts->guest_names[i], true, err) < 0)
			goto fail;
	if (s->nr_src == 0) {
		vms_error_set(err, VMS_ERR_USAGE, "no trace given");
		goto fail;
	}
	return s;
fail:
	vms_session_free(s);
	return NULL;
}

void vms_session_free(struct vms_session *s)
{
	if (!s)
		return;
	if (s->an)
		vms_analysis_free(s->an);
	if (s->model && !s->model_borrowed)
		vms_model_free(s->model);
	ck_free(s->ck_rec);
	ck_free(s->ck_use);
	for (uint32_t i = 0; i < s->nr_src; i++) {
		vms_source_close(s->src[i]);
		free(s->names[i]);
		free(s->type_counts[i]);
		if (s->xen)
			vms_xen_model_free(s->xen[i]);
	}
	free(s->xen);
	free(s->map_host);
	free(s->map_seen);
	free(s->src);
	free(s->names);
	free(s->forced_guest);
	free(s->type_counts);
	free(s->obs);
	free(s);
}

int vms_session_observe(struct vms_session *s, const struct vms_observer *o)
{
	struct vms_observer *no = realloc(s->obs, (s->nr_obs + 1) * sizeof *no);
	if (!no)
		return -1;
	s->obs = no;
	s->obs[s->nr_obs++] = *o;
	return 0;
}

void vms_session_set_sync(struct vms_session *s, const char *reference,
			  void (*on_pair)(void *ctx, const struct vms_sync_pair *pair), void *ctx)
{
	s->opts.reference = reference;
	s->opts.on_pair = on_pair;
	s->opts.on_pair_ctx = ctx;
}

uint32_t vms_session_nr_sources(const struct vms_session *s) { return s->nr_src; }
struct vms_source *vms_session_source(struct vms_session *s, uint32_t i)
{
	return i < s->nr_src ? s->src[i] : NULL;
}
struct vms_model *vms_session_model(struct vms_session *s) { return s->model; }
struct vms_analysis *vms_session_analysis(struct vms_session *s) { return s->an; }
const struct vms_xen_model *vms_session_xen_model(const struct vms_session *s, uint32_t source)
{
	return source < s->nr_src ? s->xen[source] : NULL;
}
uint64_t vms_session_events(const struct vms_session *s) { return s->events; }
uint64_t vms_session_backwards(const struct vms_session *s) { return s->backwards; }
uint64_t vms_session_first_ts(const struct vms_session *s) { return s->first; }
uint64_t vms_session_last_ts(const struct vms_session *s) { return s->last; }

uint64_t vms_session_type_count(const struct vms_session *s, uint32_t source, uint32_t type)
{
	if (source >= s->nr_src || type >= s->src[source]->meta.nr_types)
		return 0;
	return s->type_counts[source][type];
}

/* Does this source hold any event type of a wanted kind? */
static bool has_wanted_type(const struct vms_source *src, const bool *wanted)
{
	const struct vms_trace_meta *m = &src->meta;
	if (!m->type_kinds)
		return true; /* the reader cannot say: read it */
	for (uint32_t t = 0; t < m->nr_types; t++)
		if (m->type_kinds[t] != VMS_K_OTHER && wanted[m->type_kinds[t]])
			return true;
	return false;
}

/* Can this source hold sched_switch events (a type of that kind)? A reader that cannot say
 * is taken as able to. */
static bool may_schedule(const struct vms_source *src)
{
	bool sched[VMS_K_COUNT] = { [VMS_K_SCHED_SWITCH] = true };
	return has_wanted_type(src, sched);
}

/* Does it hold anything that links machines (the reason to make a model pass at all)? With
 * two traces or more, network events do: their matched pairs synchronize the clocks. */
static bool has_linking_type(const struct vms_session *s, const struct vms_source *src)
{
	/* A xentrace file that names domains is linked by them (xen_links.c: each domain a
	 * guest, its vCPUs claimed host threads, from the walk at open): its VMENTRY records
	 * (kind kvm_entry) only name those claimed threads, so observing them could link
	 * nothing more. Without it a Xen host alone is analysed in one pass with no second model
	 * watching (report on xen/xentrace.bin: 1.5 M fewer instructions). */
	if (src->meta.nr_xen_domains > 0)
		return false;
	bool link[VMS_K_COUNT] = { false };
	link[VMS_K_KVM_ENTRY] = link[VMS_K_VMSYNC_GH_GUEST] = link[VMS_K_VMSYNC_GH_HOST] = true;
	link[VMS_K_VMSYNC_HG_HOST] = link[VMS_K_VMSYNC_HG_GUEST] = true;
	if (s->nr_src >= 2)
		link[VMS_K_NET_SEND] = link[VMS_K_NET_RECV] = true;
	return has_wanted_type(src, link);
}

/* Does the source hold events that matching pairs across machines (vmscope/sync.h)? */
static bool has_match_type(const struct vms_source *src)
{
	bool match[VMS_K_COUNT] = { false };
	for (int k = 0; k < VMS_K_COUNT; k++)
		match[k] = vms_match_kind((enum vms_kind)k);
	return has_wanted_type(src, match);
}

/* Will matched events set clocks? Then the metadata's model cannot be the right one, and the
 * model pass (which decodes only the linking kinds) is cheaper than a second analysis. */
static bool syncs_from_events(const struct vms_session *s)
{
	if (s->opts.no_hull || s->nr_src < 2)
		return false;
	uint32_t n = 0;
	for (uint32_t i = 0; i < s->nr_src; i++)
		n += has_match_type(s->src[i]);
	return n >= 2;
}

/* The own-clock time of a source's first event (the earliest first event of its streams),
 * or UINT64_MAX when it has none; the source is rewound. */
static int first_time(struct vms_source *src, const struct vms_clock *own, uint64_t *first,
		      struct vms_error *err)
{
	*first = UINT64_MAX;
	for (uint32_t j = 0; j < src->ops->nr_streams(src); j++) {
		struct vms_event ev;
		int r = src->ops->next(src, j, &ev);
		if (r < 0)
			return vms_error_set(err, src->err.status ? src->err.status : VMS_ERR_FORMAT,
					     "%s", src->err.msg);
		uint64_t t = r > 0 ? vms_clock_to_ns(own, ev.cpu, ev.ts) : UINT64_MAX;
		if (t < *first)
			*first = t;
	}
	if (src->ops->rewind(src) < 0)
		return vms_error_set(err, VMS_ERR_IO, "%s", src->err.msg);
	return 0;
}

/* Sources whose own clocks start more than a minute apart do not share a timebase (boot
 * clocks, unsynchronized machines) or were not recorded together: merged as they are, a
 * message's two events would come that far apart and the matcher's bound would forget them.
 * Such a source is read shifted so that it starts with the first one; within a minute the
 * own clocks are trusted (NTP'd realtime clocks, one host's TSC). Only the reading order of
 * the model pass changes: matched times stay the machines' own. */
#define ALIGN_BEYOND_NS 60000000000ll

static int align_starts(struct vms_source **srcs, struct vms_clock *own, uint32_t k,
			struct vms_error *err)
{
	uint64_t first0 = UINT64_MAX;
	for (uint32_t j = 0; j < k; j++) {
		uint64_t f;
		int r = first_time(srcs[j], &own[j], &f, err);
		if (r < 0)
			return r;
		if (j == 0)
			first0 = f;
		if (f == UINT64_MAX || first0 == UINT64_MAX)
			continue;
		long double d = (long double)first0 - (long double)f;
		if (d > ALIGN_BEYOND_NS || d < -ALIGN_BEYOND_NS) {
			own[j].linear = true;
			vms_linear_set_slope_offset(&own[j].lin, 1.0L, d);
		}
	}
	return 0;
}

/* One source of the model pass, stream after stream. */
static int observe_source(struct vms_session *s, uint32_t i, const bool *wanted,
			  struct vms_progress *prog, uint64_t *n, struct vms_error *err)
{
	struct vms_source *src = s->src[i];
	uint32_t ns = src->ops->nr_streams(src);
	for (uint32_t j = 0; j < ns; j++) {
		struct vms_event ev;
		int r;
		while ((r = src->ops->next(src, j, &ev)) > 0) {
			vms_progress_maybe(prog, ++*n);
			if (ev.kind == VMS_K_OTHER || !wanted[ev.kind])
				continue;
			ev.machine = i;
			ev.stream = j;
			vms_model_observe(s->model, &ev);
		}
		if (r < 0)
			return vms_error_set(err, src->err.status ? src->err.status : VMS_ERR_FORMAT,
					     "%s", src->err.msg);
	}
	return 0;
}

/* The model pass reads the sources that hold linking kinds, each stream after the other;
 * but when matched events synchronize clocks, the sources that hold them are read merged by
 * their own clocks: the matcher (vmscope/sync.h) remembers unmatched events in bounded
 * tables, so a message's two events must come near each other, which reading one trace after
 * the other would not give. */
static int model_pass(struct vms_session *s, struct vms_error *err)
{
	bool wanted[VMS_K_COUNT] = { false };
	vms_model_wanted_kinds(wanted);
	bool merge = syncs_from_events(s);
	uint32_t k = 0;
	size_t cap = s->nr_src ? s->nr_src : 1;
	struct vms_source **srcs = calloc(cap, sizeof *srcs);
	uint32_t *index = calloc(cap, sizeof *index);
	struct vms_clock *own = calloc(cap, sizeof *own);
	const struct vms_clock **clocks = calloc(cap, sizeof *clocks);
	if (!srcs || !index || !own || !clocks) {
		free(srcs);
		free(index);
		free(own);
		free(clocks);
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	}
	struct vms_progress prog;
	vms_progress_start(&prog, s->opts.progress, "linking pass");
	uint64_t n = 0;
	int r = 0;
	for (uint32_t i = 0; i < s->nr_src && r >= 0; i++) {
		struct vms_source *src = s->src[i];
		if (!has_linking_type(s, src))
			continue;
		if (src->ops->set_wanted)
			src->ops->set_wanted(src, wanted);
		if (merge && has_match_type(src)) {
			vms_clock_from_meta(&own[k], &src->meta, false, NULL);
			clocks[k] = &own[k];
			index[k] = i;
			srcs[k++] = src;
			continue;
		}
		r = observe_source(s, i, wanted, &prog, &n, err);
		if (src->ops->set_wanted)
			src->ops->set_wanted(src, NULL);
		if (r >= 0 && src->ops->rewind(src) < 0)
			r = vms_error_set(err, VMS_ERR_IO, "%s", src->err.msg);
	}
	if (k && r >= 0)
		r = align_starts(srcs, own, k, err);
	struct vms_merge mg;
	if (k && r >= 0 && (r = vms_merge_init(&mg, srcs, clocks, k, err)) == 0) {
		const struct vms_event *e;
		uint64_t t;
		while ((r = vms_merge_next(&mg, &e, &t)) > 0) {
			vms_progress_maybe(&prog, ++n);
			if (e->kind == VMS_K_OTHER || !wanted[e->kind])
				continue;
			struct vms_event ev = *e;
			ev.machine = index[e->machine];
			vms_model_observe(s->model, &ev);
		}
		vms_merge_free(&mg);
	}
	vms_progress_end(&prog, n);
	for (uint32_t j = 0; j < k; j++) {
		if (srcs[j]->ops->set_wanted)
			srcs[j]->ops->set_wanted(srcs[j], NULL);
		if (r >= 0 && srcs[j]->ops->rewind(srcs[j]) < 0)
			r = vms_error_set(err, VMS_ERR_IO, "%s", srcs[j]->err.msg);
	}
	free(srcs);
	free(index);
	free(own);
	free(clocks);
	return r < 0 ? r : 0;
}

/* A TIME_SHIFT transform is exact but not linear in form; `sync` reports it as the line
 * t_reference = slope * t_machine + offset_ns through two points 1e12 ticks apart from the
 * first sample, where t_machine is the machine's own ns (its raw clock with its own
 * TSC2NSEC). */
static void fit_timeshift(struct vms_machine *mc, const struct vms_trace_meta *meta)
{
	if (mc->sync.method != VMS_SYNC_TIMESHIFT || !meta->timeshift ||
	    meta->timeshift->nr_cpus == 0 || meta->timeshift->cpu[0].n == 0)
		return;
	struct vms_clock own;
	vms_clock_from_meta(&own, meta, false, NULL);
	uint64_t r1 = meta->timeshift->cpu[0].time[0], r2 = r1 + 1000000000000ull;
	long double o1 = vms_clock_to_ns(&own, 0, r1), o2 = vms_clock_to_ns(&own, 0, r2);
	long double t1 = vms_clock_to_ref(&mc->clock, 0, r1), t2 = vms_clock_to_ref(&mc->clock, 0, r2);
	if (o2 <= o1)
		return;
	long double slope = (t2 - t1) / (o2 - o1);
	mc->sync.slope = (double)slope;
	mc->sync.offset_ns = (double)(t1 - slope * o1);
}

/* A model with every source and the user's overrides, not finished. */
static struct vms_model *new_model(struct vms_session *s, struct vms_error *err)
{
	struct vms_model *m = vms_model_new();
	if (!m) {
		vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	for (uint32_t i = 0; i < s->nr_src; i++) {
		if (vms_model_add_source(m, i, s->src[i]->path, &s->src[i]->meta, s->names[i], err) < 0)
			goto fail;
	}
	if (s->host_index >= 0)
		vms_model_force_host(m, (uint32_t)s->host_index);
	for (uint32_t i = 0; i < s->nr_src; i++)
		if (s->forced_guest[i])
			vms_model_force_guest(m, i, s->names[i]);
	for (uint32_t i = 0; i < s->opts.nr_maps; i++)
		if (vms_model_user_map_host(m, s->opts.map_guest[i],
					    s->opts.map_host ? s->opts.map_host[i] : NULL,
					    s->opts.map_vcpu[i], s->opts.map_tid[i], err) < 0)
			goto fail;
	for (uint32_t i = 0; i < s->opts.nr_dom_maps; i++)
		if (vms_model_user_domain(m, s->opts.dom_map_guest[i], s->opts.dom_map_id[i], err) < 0)
			goto fail;
	for (uint32_t i = 0; i < s->opts.nr_offsets; i++)
		if (vms_model_user_offset(m, s->opts.offset_name[i], s->opts.offset_ns[i], err) < 0)
			goto fail;
	if (s->opts.reference)
		vms_model_set_reference(m, s->opts.reference);
	vms_model_set_hull(m, !s->opts.no_hull);
	vms_model_set_match_cap(m, s->opts.match_cap);
	vms_model_set_clock_model(m, s->opts.clock_model);
	vms_model_on_pair(m, s->opts.on_pair, s->opts.on_pair_ctx);
	return m;
fail:
	vms_model_free(m);
	return NULL;
}

static int finish_model(struct vms_session *s, struct vms_model *m, struct vms_error *err)
{
	int r = vms_model_finish(m, err);
	if (r < 0)
		return r;
	for (uint32_t i = 0; i < s->nr_src; i++)
		fit_timeshift(vms_model_machine(m, i), &s->src[i]->meta);
	return 0;
}

static bool any_linking_source(const struct vms_session *s)
{
	for (uint32_t i = 0; i < s->nr_src; i++)
		if (has_linking_type(s, s->src[i]))
			return true;
	return false;
}

int vms_session_build_model(struct vms_session *s, struct vms_error *err)
{
	if (s->model_built)
		return 0;
	struct vms_model *m = new_model(s, err);
	if (!m)
		return err->status ? err->status : VMS_ERR_NOMEM;
	s->model = m;
	int r = model_pass(s, err);
	if (r < 0)
		return r;
	if (any_linking_source(s))
		s->passes++;
	r = finish_model(s, m, err);
	if (r < 0)
		return r;
	/* --clock-model auto: a guest's offset to its host, by the containment it gives */
	uint32_t searched = 0;
	r = vms_offset_fit(s->src, s->nr_src, m, &searched, err);
	s->passes += searched;
	if (r < 0)
		return r;
	s->model_built = true;
	return 0;
}

/* Do two models link the same machines the same way? (Thread names may differ, and the VMM
 * processes' pids: see take_pids.) */
static bool same_links(const struct vms_model *a, const struct vms_model *b)
{
	uint32_t n = vms_model_nr_machines(a);
	if (n != vms_model_nr_machines(b))
		return false;
	for (uint32_t i = 0; i < n; i++) {
		const struct vms_machine *x = vms_model_machine_c(a, i), *y = vms_model_machine_c(b, i);
		if (x->role != y->role || x->source != y->source || x->host != y->host ||
		    x->host_how != y->host_how ||
		    x->nr_vcpus != y->nr_vcpus || strcmp(x->name ? x->name : "", y->name ? y->name : ""))
			return false;
		for (uint32_t v = 0; v < x->nr_vcpus; v++)
			if (x->vcpus[v].host_tid != y->vcpus[v].host_tid ||
			    x->vcpus[v].how != y->vcpus[v].how)
				return false;
		if (x->sync.method != y->sync.method)
			return false;
	}
	return true;
}

/* A VMM's pid that only events say (its exec, its vCPU threads' creation) changes no number
 * the analysis computed: the metadata's model takes it instead of a second analysis. (An
 * untraced guest's name follows its pid: a different name is a different link.) */
static void take_pids(struct vms_model *given, const struct vms_model *seen)
{
	for (uint32_t i = 0; i < vms_model_nr_machines(given); i++) {
		struct vms_machine *x = vms_model_machine(given, i);
		const struct vms_machine *y = vms_model_machine_c(seen, i);
		x->host_pid = y->host_pid;
		x->host_pid_how = y->host_pid_how;
	}
}

/* Coverage: the merge says when a stream (a source) has told all it had. */
static void stream_ended(void *ctx, uint32_t source, uint32_t stream, uint64_t t, bool done)
{
	struct vms_session *s = ctx;
	vms_analysis_stream_end(s->an, source, stream, t);
	if (done)
		vms_analysis_machine_end(s->an, source, t);
	/* a xentrace stream is a physical CPU: the Xen model deactivates it here, in order */
	const struct vms_xen_info *xi = s->xen[source] ? vms_xentrace_info(s->src[source]) : NULL;
	if (xi && stream < xi->nr_pcpus)
		vms_xen_model_cpu_end(s->xen[source], xi->pcpu[stream]);
}

const struct vms_filter *vms_session_filter(struct vms_session *s)
{
	s->filter.machine = -1;
	s->filter.vcpu = s->opts.has_vcpu ? (int32_t)s->opts.vcpu : -1;
	if (s->opts.machine) {
		s->filter.machine = s->model ? vms_model_find(s->model, s->opts.machine) : -1;
		if (s->filter.machine < 0)
			return NULL;
	}
	return &s->filter;
}

static void filtered_vcpu(void *ctx, const struct vms_vcpu_interval *iv)
{
	struct vms_session *s = ctx;
	if (vms_filter_vcpu(&s->filter, iv->machine, iv->vcpu) && s->user_sinks->vcpu_interval)
		s->user_sinks->vcpu_interval(s->user_sinks->ctx, iv);
}

static void filtered_thread(void *ctx, const struct vms_thread_interval *iv)
{
	struct vms_session *s = ctx;
	if (vms_filter_vcpu(&s->filter, iv->machine, iv->vcpu) && s->user_sinks->thread_interval)
		s->user_sinks->thread_interval(s->user_sinks->ctx, iv);
}

/* Does a trace count clock cycles of no known rate (no TSC2NSEC, no --tsc-hz)? Its times
 * are then cycles, which the window's messages say. */
static bool counts_cycles(const struct vms_session *s)
{
	for (uint32_t i = 0; i < s->nr_src; i++)
		if (!s->src[i]->meta.ts_in_ns && !s->src[i]->meta.has_tsc2nsec)
			return true;
	return false;
}

/* An event of a --map's host that shows its thread: the thread's own event, or a switch or
 * a wake-up naming it. */
static void note_map_thread(struct vms_session *s, const struct vms_event *ev)
{
	for (uint32_t i = 0; i < s->opts.nr_maps; i++) {
		int32_t tid = s->opts.map_tid[i];
		if (s->map_seen[i] || s->map_host[i] != (int32_t)ev->machine)
			continue;
		if (ev->tid == tid ||
		    (ev->kind == VMS_K_SCHED_SWITCH &&
		     ((int32_t)ev->f[0] == tid || (int32_t)ev->f[2] == tid)) ||
		    (ev->kind == VMS_K_SCHED_WAKEUP && (int32_t)ev->f[0] == tid)) {
			s->map_seen[i] = true;
			s->maps_unseen--;
		}
	}
}

/* Before a pass: the host of each --map entry in the session's model (the guest whose vCPU
 * the entry linked: a machine may be named by its trace's name or the user's). */
static void watch_map_threads(struct vms_session *s)
{
	s->maps_unseen = 0;
	for (uint32_t i = 0; i < s->opts.nr_maps; i++) {
		s->map_host[i] = -1;
		for (uint32_t g = 0; g < vms_model_nr_machines(s->model) && s->map_host[i] < 0; g++) {
			const struct vms_machine *G = vms_model_machine_c(s->model, g);
			uint32_t v = s->opts.map_vcpu[i];
			if (v < G->nr_vcpus && G->vcpus[v].how == VMS_LINK_USER &&
			    G->vcpus[v].host_tid == s->opts.map_tid[i])
				s->map_host[i] = G->host;
		}
		s->map_seen[i] = s->map_host[i] < 0;
		s->maps_unseen += !s->map_seen[i];
	}
}

/* After a pass: a --map entry whose thread no event showed on its host. */
static int check_map_threads(struct vms_session *s, struct vms_error *err)
{
	for (uint32_t i = 0; s->maps_unseen && i < s->opts.nr_maps; i++)
		if (!s->map_seen[i])
			return vms_error_set(err, VMS_ERR_USAGE, "--map %s:%u=%d: no event of %s shows "
					     "thread %d", s->opts.map_guest[i], s->opts.map_vcpu[i],
					     s->opts.map_tid[i],
					     vms_model_machine_c(s->model, (uint32_t)s->map_host[i])->name,
					     s->opts.map_tid[i]);
	return 0;
}

/* The hosts of the --map entries not seen yet, read whole for their threads (their ids and
 * the sched events' fields only): before a streamed run, whose rows cannot be taken back, so
 * that a map to a thread they never show is refused before any output; after a pass that
 * stopped at --to, so that a thread is looked for in the whole trace whatever the window. */
static int scan_map_hosts(struct vms_session *s, struct vms_error *err)
{
	bool wanted[VMS_K_COUNT] = { false };
	wanted[VMS_K_SCHED_SWITCH] = wanted[VMS_K_SCHED_WAKEUP] = true;
	for (uint32_t h = 0; h < s->nr_src && s->maps_unseen; h++) {
		bool hosts = false;
		for (uint32_t i = 0; i < s->opts.nr_maps; i++)
			hosts |= !s->map_seen[i] && s->map_host[i] == (int32_t)h;
		if (!hosts)
			continue;
		struct vms_source *src = s->src[h];
		if (src->ops->set_wanted)
			src->ops->set_wanted(src, wanted);
		int r = 0;
		for (uint32_t j = 0; r >= 0 && s->maps_unseen && j < src->ops->nr_streams(src); j++) {
			struct vms_event ev;
			while (s->maps_unseen && (r = src->ops->next(src, j, &ev)) > 0) {
				ev.machine = h;
				note_map_thread(s, &ev);
			}
		}
		if (src->ops->set_wanted)
			src->ops->set_wanted(src, NULL);
		if (r < 0)
			return vms_error_set(err, src->err.status ? src->err.status : VMS_ERR_FORMAT,
					     "%s", src->err.msg);
		if (src->ops->rewind(src) < 0)
			return vms_error_set(err, VMS_ERR_IO, "%s", src->err.msg);
	}
	return check_map_threads(s, err);
}

/* --vcpu N names a vCPU of the machines kept (--machine's, else any guest's); the filter is
 * resolved. */
static int check_vcpu(struct vms_session *s, struct vms_error *err)
{
	if (!s->opts.has_vcpu)
		return 0;
	uint32_t most = 0;
	for (uint32_t i = 0; i < vms_model_nr_machines(s->model); i++) {
		uint32_t nr = vms_model_machine_c(s->model, i)->nr_vcpus;
		if ((s->filter.machine < 0 || (uint32_t)s->filter.machine == i) && nr > most)
			most = nr;
	}
	if (s->opts.vcpu < most)
		return 0;
	if (s->filter.machine >= 0 && most == 0)
		return vms_error_set(err, VMS_ERR_USAGE, "--vcpu %u: %s has no vCPUs (it is no guest)",
				     s->opts.vcpu, s->opts.machine);
	if (s->filter.machine >= 0 && most == 1)
		return vms_error_set(err, VMS_ERR_USAGE, "--vcpu %u: %s has only vCPU 0", s->opts.vcpu,
				     s->opts.machine);
	if (s->filter.machine >= 0)
		return vms_error_set(err, VMS_ERR_USAGE, "--vcpu %u: %s has vCPUs 0-%u", s->opts.vcpu,
				     s->opts.machine, most - 1);
	if (most == 0)
		return vms_error_set(err, VMS_ERR_USAGE, "--vcpu %u: no machine of the traces is a "
				     "guest with vCPUs", s->opts.vcpu);
	return vms_error_set(err, VMS_ERR_USAGE, "--vcpu %u: no guest has it (the largest has "
			     "vCPUs 0-%u)", s->opts.vcpu, most - 1);
}

struct pass_src {
	uint64_t *counts;            /* s->type_counts[source] */
	uint32_t nr_types;
	struct vms_xen_model *xen;   /* s->xen[source] */
};

/* May source i leave out the records no analysis reads (vms_source_ops.skip_unread)? Not
 * a guest's: the containment check (containment.c) counts every event of a traced guest's
 * vCPUs. (Nor, in merged_pass, when a consumer follows the host CPUs' occupants, which every
 * host event's thread moves, or --map's threads are still looked for in every event.) */
static bool may_skip(const struct vms_session *s, uint32_t i)
{
	const struct vms_machine *mc = vms_model_machine_c(s->model, i);
	return mc && !(mc->role & VMS_ROLE_GUEST);
}

/* Each source's number of event types (what its type counts hold). */
static uint32_t *types_of(const struct vms_session *s)
{
	uint32_t *nt = calloc(s->nr_src ? s->nr_src : 1, sizeof *nt);
	for (uint32_t i = 0; nt && i < s->nr_src; i++)
		nt[i] = s->src[i]->meta.nr_types;
	return nt;
}

/* The Xen models of a pass restored from a checkpoint are left out: a Xen model (the
 * xenalyze-style accounting of a xentrace host, vmscope/xen_model.h) is not part of a
 * checkpoint, and from a checkpoint it would see only the events after it. Nothing a
 * checkpointed window gives reads it (serve's windows and /api/stats are the analysis's;
 * only `report`, which never restores, shows the Xen model), so without it the window is the
 * same, and vms_session_xen_model says there is none rather than give a partial one. */
static void drop_xen_models(struct vms_session *s)
{
	for (uint32_t i = 0; i < s->nr_src; i++) {
		vms_xen_model_free(s->xen[i]);
		s->xen[i] = NULL;
	}
}

/* Can every source say where its streams are (vms_source_ops.tell)? */
static bool can_tell(const struct vms_session *s)
{
	for (uint32_t i = 0; i < s->nr_src; i++)
		if (!s->src[i]->ops->tell || !s->src[i]->ops->seek)
			return false;
	return true;
}

/* A windowed pass from the last checkpoint before the window: the window resolved against
 * the recorded pass's first event (the one the pass would have read first), the analysis's
 * state restored and the merge restarted at the marks. 1: restored (m, *cv set: the
 * checkpoint's counts); 0: no checkpoint before the window, or one of a run that followed
 * the host CPUs' occupants when this one does not (or the reverse): the pass starts at
 * the beginning; <0 with err set. */
static int restore(struct vms_session *s, const struct vms_clock *const *clocks,
		   struct vms_analysis *an, struct vms_merge *m, bool cycles, uint64_t *lo,
		   uint64_t *hi, bool *window_set, struct ck_view *cv, struct vms_error *err)
{
	uint64_t first;
	if (!ck_first(s->ck_use, &first))
		return 0;
	int r = vms_window_resolve(&s->opts.from, &s->opts.to, first, cycles, lo, hi, err);
	if (r < 0)
		return r;
	r = ck_pick(s->ck_use, *lo, cv, err);
	if (r <= 0)
		return r;
	if (vms_analysis_window(an, *lo) < 0) {
		ck_view_free(cv);
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	}
	*window_set = true;
	r = vms_analysis_restore(an, cv->an, cv->an_len, err);
	if (r == 0)
		r = vms_merge_restart(m, s->src, clocks, s->nr_src, cv->marks, cv->nr_marks, cv->t,
				      err);
	if (r != 0) {
		ck_view_free(cv);
		*cv = (struct ck_view){ 0 };
		return r < 0 ? r : 0;
	}
	return 1;
}

/* What a pass's loop reads and leaves (merged_pass's own locals, given to pass_events) */
struct pass_run {
	struct vms_session *s;
	struct vms_merge *m;
	struct vms_analysis *an;
	struct vms_model *observer;
	const bool *wanted;
	vms_event_fn fn;
	void *ctx;
	const struct pass_src *ps;
	struct vms_progress *prog;
	struct vms_error *err;
	bool windowed, cycles, window_set;
	uint64_t lo, hi, n, first, last, win_n, win_first, win_last, ck_next;
};

/* merged_pass's loop over the merged events: 1 or 0 when they ended or the pass stopped, <0
 * on error. Twice, `plain` a constant in each copy: an analysis pass over the whole traces
 * with no one asking for each event (report, exits, vcpus) skips the window's, the --map's
 * and the caller's tests (12.7 M instructions of report's on the 1 M-event pair). */
static inline __attribute__((always_inline)) int pass_events(struct pass_run *p,
							      const bool plain)
{
	struct vms_session *s = p->s;
	struct vms_analysis *an = p->an;
	struct vms_model *observer = p->observer;
	const struct vms_event *ev;
	uint64_t t, n = p->n, first = p->first, last = p->last, ck_next = p->ck_next;
	int r = 0;
	while (!s->stop && (r = vms_merge_next(p->m, &ev, &t)) > 0) {
		if (n == 0) {
			first = t;
			if (!plain && p->windowed &&
			    (r = vms_window_resolve(&s->opts.from, &s->opts.to, t, p->cycles, &p->lo,
						    &p->hi, p->err)) < 0)
				break;
			if (!plain && an && s->opts.from.set && !p->window_set &&
			    vms_analysis_window(an, p->lo) < 0) {
				r = vms_error_set(p->err, VMS_ERR_NOMEM, "out of memory");
				break;
			}
		}
		bool in = true;
		if (!plain && p->windowed) {
			if (t >= p->hi) {
				s->win_end = p->hi;
				break;
			}
			in = t >= p->lo;
			if (in) {
				if (p->win_n++ == 0)
					p->win_first = t;
				p->win_last = t;
			}
		}
		last = t;
		n++;
		if (!plain && s->maps_unseen)
			note_map_thread(s, ev);
		const struct pass_src *ps = &p->ps[ev->machine];
		if (ev->type < ps->nr_types)
			ps->counts[ev->type]++;
		if (plain || an) {
			vms_analysis_event(an, ev, t);
			if (ps->xen)
				vms_xen_model_event(ps->xen, ev);
		}
		if (observer && p->wanted[ev->kind])
			vms_model_observe(observer, ev);
		if (!plain && p->fn && in)
			p->fn(p->ctx, ev, t);
		vms_progress_maybe(p->prog, n);
		if (__builtin_expect(n == ck_next, 0)) {
			ck_next = ck_take(s->ck_rec, p->m, an, t, n, first, s->type_counts) == 0
					  ? n + s->ck_every : UINT64_MAX;
		}
	}
	p->n = n;
	p->first = first;
	p->last = last;
	return r;
}

/* One merged pass. With an analysis, every event also goes to it; the window's start is
 * given to the analysis at the first event, and the pass stops at its end. */
static int merged_pass(struct vms_session *s, const struct vms_clock *const *clocks,
		       struct vms_analysis *an, struct vms_model *observer, vms_event_fn fn,
		       void *ctx, struct vms_error *err)
{
	bool wanted[VMS_K_COUNT] = { false };
	if (observer)
		vms_model_wanted_kinds(wanted);
	s->passes++;
	struct vms_merge m;
	bool windowed = s->opts.from.set || s->opts.to.set;
	bool cycles = counts_cycles(s);
	uint64_t lo = 0, hi = UINT64_MAX;
	bool window_set = false;
	struct ck_view cv = { 0 };
	int r = 0;
	s->ck_restored = 0;
	if (an && windowed && s->opts.from.set && s->ck_use && !s->maps_unseen)
		r = restore(s, clocks, an, &m, cycles, &lo, &hi, &window_set, &cv, err);
	if (r < 0)
		return r;
	if (r == 1)
		drop_xen_models(s);
	if (r == 0 && (r = vms_merge_init(&m, s->src, clocks, s->nr_src, err)) < 0)
		return r;
	/* What each event needs of its source, read once here: through s it was three loads a
	 * field per event, redone after every call (the callee may have written s). */
	struct pass_src *ps = calloc(s->nr_src ? s->nr_src : 1, sizeof *ps);
	if (!ps) {
		vms_merge_free(&m);
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < s->nr_src; i++)
		ps[i] = (struct pass_src){ .counts = s->type_counts[i],
					   .nr_types = s->src[i]->meta.nr_types, .xen = s->xen[i] };
	if (an) {
		m.on_end = stream_ended;
		m.end_ctx = s; /* (an is s->an: analyse's) */
	}
	for (uint32_t i = 0; i < s->nr_src; i++)
		memset(s->type_counts[i], 0,
		       (s->src[i]->meta.nr_types ? s->src[i]->meta.nr_types : 1) * sizeof(uint64_t));
	if (cv.marks && ck_view_counts(s->ck_use, &cv, s->type_counts, err) < 0) {
		ck_view_free(&cv);
		free(ps);
		vms_merge_free(&m);
		return err->status;
	}
	/* Checkpoints are recorded by a pass over the whole traces that every seekable source
	 * reads whole (a position is a record's), with the state machine keeping its last words. */
	ck_free(s->ck_rec);
	s->ck_rec = NULL;
	if (s->ck_every && an && !windowed && !s->maps_unseen && can_tell(s)) {
		uint32_t *nt = types_of(s);
		s->ck_rec = nt ? ck_recorder(s->ck_every, s->nr_src, nt) : NULL;
		free(nt);
		if (s->ck_rec && vms_analysis_record_checkpoints(an) < 0) {
			ck_free(s->ck_rec);
			s->ck_rec = NULL;
		}
	}
	uint64_t ck_next = s->ck_rec ? s->ck_every : UINT64_MAX;
	/* An analysis pass over the whole traces with no one asking for every event: the readers
	 * that can leave out what no analysis reads do (counted, so the totals stay those of
	 * the traces). */
	bool skip = an && !fn && !windowed && !s->maps_unseen && !s->ck_rec;
	for (uint32_t i = 0; skip && i < s->nr_obs; i++)
		if ((s->obs[i].event && !s->obs[i].event_kinds_only) || s->obs[i].cpu_occupant)
			skip = false;
	uint64_t skipped = 0;
	for (uint32_t i = 0; skip && i < s->nr_src; i++)
		if (s->src[i]->ops->skip_unread && may_skip(s, i))
			s->src[i]->ops->skip_unread(s->src[i], s->type_counts[i], &skipped);
	struct vms_progress prog;
	vms_progress_start(&prog, s->opts.progress, an ? "analysis" : "reading");
	/* n events went to the analysis (those before the window too: they give the state
	 * known at its start); win_n of them are the window's, from win_first to win_last */
	uint64_t n = cv.n, first = cv.first, last = cv.t, win_n = 0, win_first = 0;
	uint64_t win_last = 0, backwards0 = cv.backwards;
	s->ck_restored = cv.n;
	ck_view_free(&cv);
	s->stop = false;
	s->win_end = 0;
	struct pass_run pr = {
		.s = s, .m = &m, .an = an, .observer = observer, .wanted = wanted, .fn = fn,
		.ctx = ctx, .ps = ps, .prog = &prog, .err = err, .windowed = windowed,
		.cycles = cycles, .window_set = window_set, .lo = lo, .hi = hi, .n = n,
		.first = first, .last = last, .ck_next = ck_next,
	};
	/* (the pass of report and the like: every event to the analysis, nothing else asked) */
	if (an && !windowed && !fn && !s->maps_unseen)
		r = pass_events(&pr, true);
	else
		r = pass_events(&pr, false);
	lo = pr.lo;
	n = pr.n;
	first = pr.first;
	last = pr.last;
	win_n = pr.win_n;
	win_first = pr.win_first;
	win_last = pr.win_last;
	free(ps);
	vms_progress_end(&prog, n);
	/* a window wholly after the traces: known only once they have ended */
	if (r >= 0 && windowed && n && !s->win_end && !s->stop)
		r = vms_window_check_end(&s->opts.from, lo, last, cycles, err);
	for (uint32_t i = 0; skip && i < s->nr_src; i++)
		if (s->src[i]->ops->skip_unread)
			s->src[i]->ops->skip_unread(s->src[i], NULL, NULL);
	s->events = windowed ? win_n : n + skipped;
	s->first = windowed ? (win_n ? win_first : lo) : first;
	s->last = windowed ? (win_n ? win_last : lo) : last;
	s->pass_last = last;
	s->backwards = backwards0 + m.backwards;
	vms_merge_free(&m);
	return r < 0 ? r : 0;
}

static int rewind_all(struct vms_session *s, struct vms_error *err)
{
	for (uint32_t i = 0; i < s->nr_src; i++)
		if (s->src[i]->ops->rewind(s->src[i]) < 0)
			return vms_error_set(err, VMS_ERR_IO, "%s", s->src[i]->err.msg);
	return 0;
}

/* One analysis pass with the session's current model. */
static int analyse(struct vms_session *s, const struct vms_sinks *sinks, struct vms_model *observer,
		   vms_event_fn on_event, void *on_event_ctx, struct vms_error *err)
{
	const struct vms_clock **clocks = calloc(s->nr_src ? s->nr_src : 1, sizeof *clocks);
	if (!clocks)
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	for (uint32_t i = 0; i < s->nr_src; i++)
		clocks[i] = &vms_model_machine(s->model, i)->clock;
	if (s->an)
		vms_analysis_free(s->an);
	for (uint32_t i = 0; i < s->nr_obs; i++)
		if (s->obs[i].reset)
			s->obs[i].reset(s->obs[i].ctx, s->model);
	if (!vms_session_filter(s)) {
		free(clocks);
		return vms_error_set(err, VMS_ERR_USAGE, "--machine %s: no such machine",
				     s->opts.machine);
	}
	/* (with an observer the model may still grow: vms_session_run checks after the pass) */
	int r = observer ? 0 : check_vcpu(s, err);
	if (r < 0) {
		free(clocks);
		return r;
	}
	watch_map_threads(s);
	struct vms_sinks fs;
	if (sinks && (s->filter.machine >= 0 || s->filter.vcpu >= 0)) {
		s->user_sinks = sinks;
		fs = (struct vms_sinks){ .ctx = s,
			.vcpu_interval = sinks->vcpu_interval ? filtered_vcpu : NULL,
			.thread_interval = sinks->thread_interval ? filtered_thread : NULL,
			.intervals_only = sinks->intervals_only };
		sinks = &fs;
	}
	s->an = vms_analysis_new(s->model, sinks);
	for (uint32_t i = 0; s->an && i < s->nr_obs; i++)
		if (vms_analysis_observe(s->an, &s->obs[i]) < 0) {
			vms_analysis_free(s->an);
			s->an = NULL;
		}
	for (uint32_t i = 0; s->an && i < s->nr_src; i++)
		if (!may_schedule(s->src[i]))
			vms_analysis_host_unscheduled(s->an, i);
	for (uint32_t i = 0; s->an && i < s->nr_src; i++) {
		vms_xen_model_free(s->xen[i]);
		s->xen[i] = NULL;
		const struct vms_xen_info *xi = vms_xentrace_info(s->src[i]);
		if (xi && !(s->xen[i] = vms_xen_model_new(i, xi->isa))) {
			vms_analysis_free(s->an);
			s->an = NULL;
		}
	}
	if (!s->an) {
		free(clocks);
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	}
	r = merged_pass(s, clocks, s->an, observer, on_event, on_event_ctx, err);
	free(clocks);
	if (r >= 0 && s->maps_unseen && s->win_end)
		r = scan_map_hosts(s, err);
	else if (r >= 0)
		r = check_map_threads(s, err);
	if (r < 0)
		return r;
	for (uint32_t i = 0; i < s->nr_src; i++)
		if (s->xen[i])
			vms_xen_model_finish(s->xen[i]);
	/* (vms_analysis_finish also writes the containment check into each guest's sync info) */
	vms_analysis_finish(s->an, s->win_end ? s->win_end : s->pass_last);
	return rewind_all(s, err);
}

int vms_session_run(struct vms_session *s, const struct vms_sinks *sinks, vms_event_fn on_event,
		    void *on_event_ctx, struct vms_error *err)
{
	bool streaming_obs = false;
	for (uint32_t i = 0; i < s->nr_obs; i++)
		streaming_obs |= !s->obs[i].reset;
	/* a window stops the pass early: the model must come from a pass of its own */
	bool streaming = on_event || streaming_obs || s->opts.from.set || s->opts.to.set ||
			 (sinks && (sinks->vcpu_interval || sinks->thread_interval) &&
			  !sinks->reset_with_observer);
	struct vms_model *given = NULL;
	if (!s->model_built && !streaming && any_linking_source(s) && !syncs_from_events(s)) {
		/* the checked single pass needs a model from the metadata alone; when it cannot
		 * be made (a --map naming a host that only its events reveal), the model pass
		 * decides, and reports what is really wrong */
		struct vms_error quiet = { 0 };
		given = new_model(s, &quiet);
		if (given && finish_model(s, given, &quiet) < 0) {
			vms_model_free(given);
			given = NULL;
		}
	}
	if (!given) {
		int r = vms_session_build_model(s, err);
		if (r >= 0 && streaming && s->opts.nr_maps) {
			watch_map_threads(s);
			r = scan_map_hosts(s, err);
		}
		if (r < 0)
			return r;
		return analyse(s, sinks, NULL, on_event, on_event_ctx, err);
	}
	/* the checked single pass: analyse with the metadata's model, observe the links */
	int r = 0;
	struct vms_model *seen = new_model(s, err);
	if (!seen) {
		vms_model_free(given);
		return err->status ? err->status : VMS_ERR_NOMEM;
	}
	s->model = given;
	s->model_built = true;
	r = analyse(s, sinks, seen, NULL, NULL, err);
	if (r >= 0)
		r = finish_model(s, seen, err);
	if (r < 0) {
		vms_model_free(seen);
		return r;
	}
	if (same_links(given, seen)) {
		take_pids(given, seen);
		vms_model_free(seen);
		return check_vcpu(s, err);
	}
	/* the events linked more than the metadata said: analyse again with what they said */
	vms_analysis_free(s->an);
	s->an = NULL;
	vms_model_free(given);
	s->model = seen;
	return analyse(s, sinks, NULL, NULL, NULL, err);
}

uint64_t vms_session_passes(const struct vms_session *s) { return s->passes; }

void vms_session_record_checkpoints(struct vms_session *s, uint64_t every)
{
	s->ck_every = every;
}

const void *vms_session_checkpoints(struct vms_session *s, size_t *len)
{
	return ck_bytes(s->ck_rec, len);
}

int vms_session_use_checkpoints(struct vms_session *s, const void *buf, size_t len,
				struct vms_error *err)
{
	ck_free(s->ck_use);
	s->ck_use = NULL;
	if (!buf || !len)
		return 0;
	uint32_t *nt = types_of(s);
	if (!nt)
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	uint32_t streams = 0;
	for (uint32_t i = 0; i < s->nr_src; i++)
		streams += s->src[i]->ops->nr_streams(s->src[i]);
	s->ck_use = ck_load(buf, len, s->nr_src, nt, streams, err);
	free(nt);
	return s->ck_use ? 0 : -1;
}

uint64_t vms_session_restored(const struct vms_session *s) { return s->ck_restored; }

int vms_session_save_model(struct vms_session *s, FILE *f)
{
	return s->model_built ? vms_model_save(s->model, f) : -1;
}

int vms_session_load_model(struct vms_session *s, const void *buf, size_t len,
			   struct vms_error *err)
{
	struct vms_model *m = new_model(s, err);
	if (!m)
		return err->status ? err->status : VMS_ERR_NOMEM;
	int r = vms_model_load(m, buf, len, err);
	if (r < 0) {
		vms_model_free(m);
		return r;
	}
	if (s->model && !s->model_borrowed)
		vms_model_free(s->model);
	s->model = m;
	s->model_borrowed = false;
	s->model_built = true;
	return 0;
}

void vms_session_borrow_model(struct vms_session *s, struct vms_model *m)
{
	if (s->model && !s->model_borrowed)
		vms_model_free(s->model);
	s->model = m;
	s->model_borrowed = true;
	s->model_built = true;
}

int vms_session_iterate(struct vms_session *s, vms_event_fn fn, void *ctx, struct vms_error *err)
{
	/* Without a model yet, this same pass builds it (the clocks used are then the traces'
	 * own, which is what a listing wants). */
	struct vms_model *observer = NULL;
	if (!s->model_built) {
		observer = new_model(s, err);
		if (!observer)
			return err->status ? err->status : VMS_ERR_NOMEM;
	}
	struct vms_clock *own = calloc(s->nr_src ? s->nr_src : 1, sizeof *own);
	const struct vms_clock **clocks = calloc(s->nr_src ? s->nr_src : 1, sizeof *clocks);
	if (!own || !clocks) {
		free(own);
		free(clocks);
		vms_model_free(observer);
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < s->nr_src; i++) {
		if (s->model_built) {
			clocks[i] = &vms_model_machine(s->model, i)->clock;
		} else {
			vms_clock_from_meta(&own[i], &s->src[i]->meta, false, NULL);
			clocks[i] = &own[i];
		}
	}
	int r = merged_pass(s, clocks, NULL, observer, fn, ctx, err);
	free(own);
	free(clocks);
	if (observer) {
		if (r >= 0)
			r = finish_model(s, observer, err);
		if (r < 0) {
			vms_model_free(observer);
			return r;
		}
		s->model = observer;
		s->model_built = true;
	}
	if (r < 0)
		return r;
	return rewind_all(s, err);
}
