/* vmscope sync: how each machine's clock was brought to the reference (spec §8), and whether
 * the result can be trusted (the containment check). --json is one object: the header and
 * "machines", one object per machine: machine, reference, method, slope, offset_ns, quality,
 * pairs, containment; for the convex hull also accuracy, applied, hull sizes, the path in the
 * tree, the exact transform, the clock model's fit (the feasible offsets of a guest and its
 * host, how one was chosen) and (--refine) the refinement. The text shows slope and offset
 * exactly (%.17g: they read back to the same doubles).
 *
 * The options of this command alone (--reference, --refine, --pairs) are taken out of argv
 * here before the common parser sees the rest. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "vmscope/sync.h"
#include "vmscope/writers.h"

static const char usage[] =
	"usage: vmscope sync [--json] [-o FILE] [--reference NAME] [--refine] [--pairs FILE]\n"
	"                    [--clock-model auto|linear] [--tsc-hz HZ] [--host FILE]\n"
	"                    [--guest NAME=FILE]\n"
	"                    [--map NAME:VCPU=TID,...]\n"
	"                    [--map NAME:dom=N] TRACE...\n"
	"\n"
	"For every machine: the transform t_reference = slope * t_machine + offset_ns, the method\n"
	"that found it (reference, timeshift, convex-hull, user, none), its quality (absent,\n"
	"incomplete, approximate, accurate, fail, exact) and the number of pairs or samples used,\n"
	"and the containment check: the share of guest events on vCPU n that fall inside a\n"
	"guest-mode window (kvm_entry -> kvm_exit) of vCPU n's host thread.\n"
	"Slope and offset are printed exactly.\n"
	"\n"
	"  --json              one JSON object: the header (schema_version, time_unit), machines\n"
	"  --reference NAME    the machine whose clock is the reference (default: the first\n"
	"                      host, else the first trace)\n"
	"  --refine            for every guest synchronized by the convex hull, search within the\n"
	"                      hull's bounds the offset that maximises containment, and use it\n"
	"  --pairs FILE        write the matched message pairs as CSV (from,to,t_send_ns,\n"
	"                      t_recv_ns; machines by index, times in each machine's own ns)\n"
	CLI_HELP_OUTPUT CLI_HELP_ROLES;

struct sync_opts {
	const char *reference;
	const char *pairs;
	bool refine;
};

/* Take this command's options out of argv (argc updated); 0, or 2 after a usage error. */
static int take_own_options(int *argc, char **argv, struct sync_opts *o)
{
	int w = 1;
	bool ended = false;
	for (int r = 1; r < *argc; r++) {
		const char *a = argv[r];
		const char **dst = NULL;
		size_t len = 0;
		if (!ended && !strcmp(a, "--")) {
			ended = true;
		} else if (!ended && !strcmp(a, "--refine")) {
			o->refine = true;
			continue;
		} else if (!ended && !strncmp(a, "--reference", len = strlen("--reference")) &&
			   (a[len] == '=' || !a[len])) {
			dst = &o->reference;
		} else if (!ended && !strncmp(a, "--pairs", len = strlen("--pairs")) &&
			   (a[len] == '=' || !a[len])) {
			dst = &o->pairs;
		}
		if (dst) {
			if (a[len] == '=') {
				*dst = a + len + 1;
			} else if (r + 1 < *argc) {
				*dst = argv[++r];
			} else {
				fprintf(stderr, "vmscope sync: %s wants a value\n%s", a, usage);
				return VMS_EXIT_USAGE;
			}
			if (!**dst) {
				fprintf(stderr, "vmscope sync: %.11s wants a value\n%s", a, usage);
				return VMS_EXIT_USAGE;
			}
			continue;
		}
		argv[w++] = argv[r];
	}
	argv[w] = NULL;
	*argc = w;
	return 0;
}

static void write_pair(void *ctx, const struct vms_sync_pair *p)
{
	fprintf((FILE *)ctx, "%" PRIu32 ",%" PRIu32 ",%" PRIu64 ",%" PRIu64 "\n", p->from, p->to,
		p->t_send, p->t_recv);
}

static double pct(uint64_t in, uint64_t total)
{
	return total ? 100.0 * (double)in / (double)total : 0.0;
}

/* Containment of guest g with its transform moved by `shift` ns (one analysis pass). */
static int containment_at(struct cli *c, struct vms_machine *g, const struct vms_linear *base,
			  int64_t shift, uint64_t *in, uint64_t *total)
{
	g->clock.lin = *base;
	if (__builtin_add_overflow(base->out0, shift, &g->clock.lin.out0))
		g->clock.lin.out0 = shift < 0 ? INT64_MIN : INT64_MAX;
	struct vms_error err = { 0 };
	if (vms_session_run(c->s, NULL, NULL, NULL, &err) < 0) {
		cli_fail(c, &err);
		return -1;
	}
	*in = g->sync.contained;
	*total = g->sync.contain_total;
	return 0;
}

/* A better containment, or the same nearer the hull's own estimate (shift 0). */
static bool better(uint64_t in, uint64_t total, int64_t shift, uint64_t best_in,
		   uint64_t best_total, int64_t best_shift)
{
	/* in / total > best_in / best_total, in 128 bits */
	unsigned __int128 l = (unsigned __int128)in * (best_total ? best_total : 1);
	unsigned __int128 r = (unsigned __int128)best_in * (total ? total : 1);
	if (l != r)
		return l > r;
	return llabs(shift) < llabs(best_shift);
}

/* --refine for one guest: a grid over the hull's range, then finer grids around the best
 * point (9 points, then 4 rounds of 5): about 25 analysis passes per guest. */
static int refine_guest(struct cli *c, struct vms_model *m, uint32_t gi)
{
	struct vms_machine *g = vms_model_machine(m, gi);
	struct vms_sync_info *si = &g->sync;
	struct vms_linear base = g->clock.lin;
	/* (kept within +-1e15 ns, 11 days: wider is no estimate worth refining) */
	int64_t lo = (int64_t)ceil(fmax(si->range_lo_ns, -1e15)),
		hi = (int64_t)floor(fmin(si->range_hi_ns, 1e15));
	if (lo > 0)
		lo = 0;
	if (hi < 0)
		hi = 0;
	int64_t best = 0;
	uint64_t best_in = si->contained, best_total = si->contain_total;
	int64_t step = (hi - lo) / 8;
	int64_t from = lo, to = hi;
	for (int round = 0; round < 5; round++) {
		if (step < 1)
			step = 1;
		for (int64_t s = from; s <= to; s += step) {
			uint64_t in, total;
			if (containment_at(c, g, &base, s, &in, &total) < 0)
				return -1;
			if (better(in, total, s, best_in, best_total, best))
				best = s, best_in = in, best_total = total;
			if (to - s < step && s != to)
				s = to - step; /* the last point is the range's end */
		}
		if (step == 1)
			break;
		from = best - step > lo ? best - step : lo;
		to = best + step < hi ? best + step : hi;
		step /= 2;
	}
	uint64_t in, total;
	if (containment_at(c, g, &base, best, &in, &total) < 0)
		return -1;
	si->refined = true;
	si->refine_shift_ns = (double)best;
	si->refine_contained = in;
	si->refine_total = total;
	si->offset_ns = (double)vms_linear_offset(&g->clock.lin);
	return 0;
}

static void json_hull(struct vms_json *j, struct vms_model *m, const struct vms_machine *mc)
{
	const struct vms_sync_info *si = &mc->sync;
	vms_json_double(j, "accuracy", si->accuracy);
	vms_json_bool(j, "applied", si->applied);
	vms_json_begin_object(j, "hull");
	vms_json_uint(j, "above", si->hull_above);
	vms_json_uint(j, "below", si->hull_below);
	vms_json_end_object(j);
	/* the path from the reference to this machine */
	vms_json_begin_array(j, "path");
	uint32_t n = vms_model_nr_machines(m);
	const char **names = calloc(n + 1, sizeof *names);
	uint32_t k = 0;
	if (names) {
		int32_t at = (int32_t)(mc - vms_model_machine_c(m, 0));
		while (at >= 0 && k <= n) {
			names[k++] = cli_machine_name(m, (uint32_t)at);
			at = vms_model_machine_c(m, (uint32_t)at)->sync.parent;
		}
		while (k > 0)
			vms_json_string(j, NULL, names[--k]);
		free(names);
	}
	vms_json_end_array(j);
	if (si->applied) {
		const struct vms_linear *l = &mc->clock.lin;
		/* t_reference = out0 + floor(((t - in0) * num + frac + den / 2) / den) */
		vms_json_begin_object(j, "transform");
		vms_json_uint(j, "in0", l->in0);
		vms_json_int(j, "out0", l->out0);
		vms_json_uint(j, "num", l->num);
		vms_json_uint(j, "den", l->den);
		vms_json_uint(j, "frac", l->frac);
		vms_json_end_object(j);
	} else {
		vms_json_null(j, "transform");
	}
	/* --clock-model: what was fitted, the offsets the messages allow, and how one was taken */
	vms_json_string(j, "fit", si->offset_only ? "offset" : "slope and offset");
	if (si->offset_only && si->has_range) {
		vms_json_begin_object(j, cli_key("feasible_offset"));
		vms_json_double(j, "min", si->feasible_lo_ns);
		vms_json_double(j, "max", si->feasible_hi_ns);
		vms_json_end_object(j);
		static const char *const how[] = { "middle", "containment", "middle (interval too wide)",
						   "middle (too many events within the interval)" };
		vms_json_string(j, "offset_chosen_by", how[si->offset_how]);
		if (si->offset_how == VMS_OFFSET_SEARCHED) {
			vms_json_uint(j, "best_inside", si->search_inside);
			vms_json_begin_object(j, cli_key("best_offsets"));
			vms_json_double(j, "min", si->search_lo_ns);
			vms_json_double(j, "max", si->search_hi_ns);
			vms_json_end_object(j);
		}
	}
	if (si->refused)
		vms_json_uint(j, "max_drift_ppm", VMS_SYNC_MAX_DRIFT_PPM);
	if (si->has_range) {
		vms_json_begin_object(j, cli_key("range"));
		vms_json_double(j, "min", si->range_lo_ns);
		vms_json_double(j, "max", si->range_hi_ns);
		vms_json_end_object(j);
	}
	if (si->refined) {
		vms_json_begin_object(j, "refine");
		vms_json_double(j, cli_key("moved"), si->refine_shift_ns);
		vms_json_uint(j, "inside", si->refine_contained);
		vms_json_uint(j, "total", si->refine_total);
		vms_json_end_object(j);
	}
}

static void text_line(FILE *f, struct vms_model *m, const struct vms_machine *mc, bool before)
{
	const struct vms_sync_info *si = &mc->sync;
	if (mc->source < 0) {
		/* an untraced guest: its times are its host's thread events */
		fprintf(f, "%s: untraced, seen in %s's timebase\n", cli_text(mc->name),
			mc->host >= 0 ? cli_text(cli_machine_name(m, (uint32_t)mc->host)) : "?");
		return;
	}
	fprintf(f, "%s: %s", cli_text(mc->name), vms_sync_method_name(si->method));
	if (si->method != VMS_SYNC_REFERENCE)
		fprintf(f, " to %s, t_ref = %.17g * t %c %.17g %s, quality %s, %llu %s",
			cli_text(cli_machine_name(m, si->reference)), si->slope, si->offset_ns < 0 ? '-' : '+',
			fabs(si->offset_ns), cli_unit(), vms_sync_quality_name(si->quality),
			(unsigned long long)si->pairs,
			si->method == VMS_SYNC_TIMESHIFT ? "samples" : "pairs");
	if (si->method == VMS_SYNC_HULL) {
		fprintf(f, ", accuracy %.3g, hulls %u/%u points", si->accuracy, si->hull_above,
			si->hull_below);
		if (si->offset_only && si->has_range)
			fprintf(f, ", offset only (feasible %.17g .. %.17g %s, %s)", si->feasible_lo_ns,
				si->feasible_hi_ns, cli_unit(),
				si->offset_how == VMS_OFFSET_SEARCHED ? "the most events inside guest mode"
								      : "the middle");
		if (si->refused)
			fprintf(f, ", slope beyond %d ppm: refused", VMS_SYNC_MAX_DRIFT_PPM);
		if (si->parent >= 0 && si->parent != (int32_t)si->reference)
			fprintf(f, ", via %s", cli_text(cli_machine_name(m, (uint32_t)si->parent)));
		if (!si->applied)
			fprintf(f, " (not used: the machine keeps its own clock)");
	}
	if (before && si->has_containment && si->contain_total) {
		double p = pct(si->contained, si->contain_total);
		fprintf(f, "; containment %.2f%% (%llu of %llu guest events)%s", p,
			(unsigned long long)si->contained, (unsigned long long)si->contain_total,
			p < 90.0 ? " -- LOW: the sync is probably wrong" : "");
	}
	if (si->refined)
		fprintf(f, "; refined: moved %+.0f %s, containment %.2f%% (%llu of %llu)",
			si->refine_shift_ns, cli_unit(), pct(si->refine_contained, si->refine_total),
			(unsigned long long)si->refine_contained, (unsigned long long)si->refine_total);
	fputc('\n', f);
}

int cmd_sync(int argc, char **argv)
{
	struct sync_opts o = { 0 };
	int st = take_own_options(&argc, argv, &o);
	if (st)
		return st;
	FILE *pf = NULL;
	if (o.pairs && !(pf = fopen(o.pairs, "w"))) {
		fprintf(stderr, "vmscope sync: cannot write %s: %s\n", o.pairs, strerror(errno));
		return VMS_EXIT_FAIL;
	}
	struct cli c;
	st = cli_begin(&c, argc, argv, CLI_JSON | CLI_ROLES | CLI_OUT, usage);
	if (st != CLI_GO) {
		if (pf)
			fclose(pf);
		return st;
	}
	if (pf)
		fputs("from,to,t_send_ns,t_recv_ns\n", pf);
	vms_session_set_sync(c.s, o.reference, pf ? write_pair : NULL, pf);
	st = cli_run(&c, NULL);
	if (pf && fclose(pf) != 0 && !st) {
		fprintf(stderr, "vmscope sync: cannot write %s\n", o.pairs);
		st = VMS_EXIT_FAIL;
	}
	if (st)
		return cli_end(&c, st);
	struct vms_session *s = c.s;
	FILE *f = c.f;
	struct vms_model *m = vms_session_model(s);
	const struct vms_match_stats *ms = vms_model_match_stats(m);
	if (ms && ms->expired)
		fprintf(stderr, "vmscope sync: warning: %llu unmatched events forgotten (more than %u "
			"waiting at once); their pairs are lost\n", (unsigned long long)ms->expired,
			VMS_MATCH_DEFAULT_CAP);
	uint32_t n = vms_model_nr_machines(m);
	if (o.refine) {
		bool any = false;
		for (uint32_t i = 0; i < n; i++) {
			struct vms_machine *mc = vms_model_machine(m, i);
			if (mc->sync.method != VMS_SYNC_HULL || !mc->sync.applied || !mc->sync.has_range ||
			    !(mc->role & VMS_ROLE_GUEST) || !mc->sync.has_containment)
				continue;
			any = true;
			struct vms_sync_info saved = mc->sync;
			if (refine_guest(&c, m, i) < 0)
				return cli_end(&c, VMS_EXIT_FAIL);
			/* the report keeps the hull's own containment beside the refined one */
			saved.refined = true;
			saved.refine_shift_ns = mc->sync.refine_shift_ns;
			saved.refine_contained = mc->sync.refine_contained;
			saved.refine_total = mc->sync.refine_total;
			saved.offset_ns = mc->sync.offset_ns;
			mc->sync = saved;
		}
		if (!any)
			fprintf(stderr, "vmscope sync: --refine: no guest synchronized by the convex hull "
				"with a containment check (host KVM events); nothing refined\n");
	}
	struct vms_json j;
	if (c.json) {
		vms_json_init(&j, f, true);
		vms_json_begin_object(&j, NULL);
		cli_json_header(&j, "sync");
		vms_json_string(&j, "clock_model", vms_clock_model_name(
			(enum vms_clock_model)vms_model_clock_model(m)));
		if (ms) {
			/* what the matching of the first pass saw (vmscope/sync.h) */
			vms_json_begin_object(&j, "matching");
			vms_json_uint(&j, "sent", ms->causes);
			vms_json_uint(&j, "received", ms->effects);
			vms_json_uint(&j, "pairs", ms->matched);
			vms_json_uint(&j, "same_machine", ms->same_machine);
			vms_json_uint(&j, "duplicates", ms->duplicates);
			vms_json_uint(&j, "expired", ms->expired);
			vms_json_end_object(&j);
		} else {
			vms_json_null(&j, "matching");
		}
		vms_json_begin_array(&j, "machines");
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct vms_machine *mc = vms_model_machine_c(m, i);
		if (c.json) {
			vms_json_begin_object(&j, NULL);
			vms_json_string(&j, "machine", mc->name);
			cli_json_sync_members(&j, m, &mc->sync);
			if (mc->sync.method == VMS_SYNC_HULL)
				json_hull(&j, m, mc);
			vms_json_end_object(&j);
		} else {
			text_line(f, m, mc, true);
		}
	}
	if (c.json) {
		vms_json_end_array(&j);
		vms_json_end_object(&j);
		vms_json_finish(&j);
	}
	return cli_end(&c, VMS_EXIT_OK);
}
