/* vmscope exits: VM exits per guest, vCPU and reason, with their cost (spec §5) — what
 * `perf kvm stat report` prints for one host, for every guest, traced or not.
 * CSV header (a contract):
 *   machine,vcpu,isa,reason,name,count,total_ns,min_ns,max_ns,mean_ns,p50_ns,p90_ns,p99_ns,
 *   unfinished
 * (_cycles instead of _ns for a counter clock without its rate). count is every kvm_exit;
 * unfinished of them have no known end (trace end, lost events) and are not in the times.
 * With nested guests (a guest's host is itself a guest: vms_model_nested) three columns
 * follow: layer (the hypervisor that handled the exit: the guest's host), below_layer (that
 * host's own host, empty when none) and below_total_ns (of total_ns, the part the layer below
 * took: an L2 exit's L0 part; the rest is L1's). One-layer captures keep the columns above. */
#include <stdlib.h>

#include <string.h>

#include "cli.h"
#include "vmscope/exit_rips.h"
#include "vmscope/ksyms.h"
#include "cmds.h"
#include "vmscope/writers.h"

static const char usage[] =
	"usage: vmscope exits [--csv | --json] [--per-guest | --by rip [--kallsyms NAME=FILE]]\n"
	"                     [--top N] [-o FILE] [--tsc-hz HZ] [--host FILE]\n"
	"                     [--guest NAME=FILE] [--map NAME:VCPU=TID,...]\n"
	"                     [--map NAME:dom=N] TRACE...\n"
	"\n"
	"VM exits per guest, vCPU and reason: count, total, min, max, mean and percentiles of the\n"
	"time from kvm_exit to the next kvm_entry of the same host thread (ns; cycles when a\n"
	"trace counts cycles with no rate). isa is 1 for VMX (Intel), 2 for SVM (AMD); name is\n"
	"the reason's name (its number when unknown).\n"
	"\n"
	"  --csv               CSV, one row per vCPU and reason (columns in man vmscope-exits)\n"
	"  --json              one JSON object: the header (schema_version, time_unit), rows\n"
	"  --per-guest         one row per guest and reason, all its vCPUs together (vcpu empty)\n"
	"  --by rip            per guest, reason and guest RIP (where the guest exited), named\n"
	"                      from the guest trace's kallsyms: count, unfinished, total, mean\n"
	"  --kallsyms NAME=FILE  symbols of guest NAME (a copy of its /proc/kallsyms)\n"
	"  --top N             rows of the --by rip text (default 10)\n"
	CLI_HELP_OUTPUT CLI_HELP_ROLES CLI_HELP_WINDOW;

static void name_of(const struct vms_exit_stats *e, char *buf, size_t len)
{
	const char *n = vms_exit_reason_name(e->isa, e->reason);
	if (n)
		snprintf(buf, len, "%s", n);
	else
		snprintf(buf, len, "%u", e->reason);
}

/* nested guests: the layer columns (set from the model before the rows) */
static struct vms_model *nested_model;

/* The machine that handled guest g's exits (its host), and the one below it; "" none */
static void layers_of(uint32_t g, const char **layer, const char **below)
{
	*layer = *below = "";
	const struct vms_machine *mc = vms_model_machine_c(nested_model, g);
	if (!mc || mc->host < 0)
		return;
	*layer = cli_machine_name(nested_model, (uint32_t)mc->host);
	const struct vms_machine *hc = vms_model_machine_c(nested_model, (uint32_t)mc->host);
	if (hc && hc->host >= 0)
		*below = cli_machine_name(nested_model, (uint32_t)hc->host);
}

/* One row: a vCPU's (vcpu >= 0) or a whole guest's (vcpu < 0) exits of one reason, of
 * guest machine g. */
static void put_row(const struct cli *c, FILE *f, struct vms_json *j, const char *mname,
		    uint32_t g, int64_t vcpu, const struct vms_exit_stats *e)
{
	const char *layer = "", *below = "";
	if (nested_model)
		layers_of(g, &layer, &below);
	char name[48], vc[24] = "";
	name_of(e, name, sizeof name);
	if (vcpu >= 0)
		snprintf(vc, sizeof vc, "%lld", (long long)vcpu);
	uint64_t n = vms_dist_count(e->dist), sum = vms_dist_sum(e->dist);
	uint64_t mn = vms_dist_min(e->dist), mx = vms_dist_max(e->dist);
	bool approx = !vms_dist_exact(e->dist);
	uint64_t mean = n ? (sum + n / 2) / n : 0;
	uint64_t p50 = vms_dist_percentile(e->dist, 50);
	uint64_t p90 = vms_dist_percentile(e->dist, 90);
	uint64_t p99 = vms_dist_percentile(e->dist, 99);
	if (c->json) {
		vms_json_begin_object(j, NULL);
		vms_json_string(j, "machine", mname);
		if (vcpu >= 0)
			vms_json_uint(j, "vcpu", (uint64_t)vcpu);
		else
			vms_json_null(j, "vcpu");
		vms_json_uint(j, "isa", e->isa);
		vms_json_uint(j, "reason", e->reason);
		vms_json_string(j, "name", name);
		vms_json_uint(j, "count", e->count);
		vms_json_uint(j, "unfinished", e->unfinished);
		vms_json_uint(j, cli_key("total"), sum);
		vms_json_uint(j, cli_key("min"), mn);
		vms_json_uint(j, cli_key("max"), mx);
		vms_json_uint(j, cli_key("mean"), mean);
		vms_json_uint(j, cli_key("p50"), p50);
		vms_json_uint(j, cli_key("p90"), p90);
		vms_json_uint(j, cli_key("p99"), p99);
		vms_json_bool(j, "percentiles_approximate", approx);
		if (nested_model) {
			vms_json_string(j, "layer", layer);
			vms_json_string(j, "below_layer", below);
			vms_json_uint(j, cli_key("below_total"), e->below_ns);
		}
		vms_json_end_object(j);
	} else if (c->csv) {
		vms_csv_string(f, mname);
		fprintf(f, ",%s,%u,%u,", vc, e->isa, e->reason);
		vms_csv_string(f, name);
		fprintf(f, ",%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu",
			(unsigned long long)e->count, (unsigned long long)sum, (unsigned long long)mn,
			(unsigned long long)mx, (unsigned long long)mean, (unsigned long long)p50,
			(unsigned long long)p90, (unsigned long long)p99,
			(unsigned long long)e->unfinished);
		if (nested_model) {
			fputc(',', f);
			vms_csv_string(f, layer);
			fputc(',', f);
			vms_csv_string(f, below);
			fprintf(f, ",%llu", (unsigned long long)e->below_ns);
		}
		fputc('\n', f);
	} else {
		char b[6][32], p99s[40];
		snprintf(p99s, sizeof p99s, "%s%s", approx ? "≈" : "", cli_ns(p99, b[4], 32));
		/* "≈" is 3 bytes in 1 column: 2 more bytes keep the column aligned */
		fprintf(f, "%-16s %4s %3s %-24s %9llu %12s %10s %10s %10s %*s %10s%s\n",
			cli_text(mname), vcpu >= 0 ? vc : "all",
			e->isa == 1 ? "vmx" : e->isa == 2 ? "svm" : "?", cli_text(name),
			(unsigned long long)e->count, cli_ns(sum, b[0], 32), cli_ns(mn, b[1], 32),
			cli_ns(mean, b[2], 32), cli_ns(p50, b[3], 32), approx ? 12 : 10, p99s,
			cli_ns(mx, b[5], 32),
			e->unfinished ? "  (some unfinished)" : "");
	}
}

/* The symbols of guest machine m: --kallsyms NAME=FILE, else its trace's own kallsyms. */
static const struct vms_ksyms *ksyms_of(const struct cli *c, struct vms_model *model,
					struct vms_ksyms **loaded, uint32_t m)
{
	const char *name = cli_machine_name(model, m);
	for (uint32_t k = 0; k < c->nr_kallsyms; k++) {
		size_t n = (size_t)(strchr(c->kallsyms_name[k], '=') - c->kallsyms_name[k]);
		if (strlen(name) == n && !strncmp(name, c->kallsyms_name[k], n))
			return loaded[k];
	}
	const struct vms_machine *mc = vms_model_machine_c(model, m);
	struct vms_source *src = mc && mc->source >= 0 ? vms_session_source(c->s, (uint32_t)mc->source)
						       : NULL;
	return vms_source_ksyms(src);
}

/* exits --by rip: per guest, reason and guest RIP, symbolized where symbols are known. */
static int by_rip(struct cli *c)
{
	struct vms_error err = { 0 };
	if (vms_session_build_model(c->s, &err) != 0)
		return cli_fail(c, &err);
	struct vms_model *model = vms_session_model(c->s);
	struct vms_ksyms *loaded[8] = { NULL };
	int st = 0;
	for (uint32_t k = 0; k < c->nr_kallsyms; k++) {
		const char *eq = strchr(c->kallsyms_name[k], '=');
		bool known = false;
		for (uint32_t m = 0; m < vms_model_nr_machines(model); m++) {
			const char *n = cli_machine_name(model, m);
			known |= strlen(n) == (size_t)(eq - c->kallsyms_name[k]) &&
				 !strncmp(n, c->kallsyms_name[k], (size_t)(eq - c->kallsyms_name[k]));
		}
		if (!known) {
			fprintf(stderr, "vmscope %s: --kallsyms names no machine: '%.*s'\n", c->cmd,
				(int)(eq - c->kallsyms_name[k]), c->kallsyms_name[k]);
			st = VMS_EXIT_USAGE;
		} else if (!(loaded[k] = vms_ksyms_load(c->kallsyms_path[k]))) {
			fprintf(stderr, "vmscope %s: %s: cannot be read\n", c->cmd, c->kallsyms_path[k]);
			st = VMS_EXIT_USAGE;
		}
	}
	struct vms_observer obs;
	struct vms_exit_rips *r = st ? NULL : vms_exit_rips_new(&obs);
	if (!st && (!r || vms_session_observe(c->s, &obs) != 0)) {
		fprintf(stderr, "vmscope %s: out of memory\n", c->cmd);
		st = VMS_EXIT_FAIL;
	}
	if (!st)
		st = cli_run(c, NULL);
	if (!st) {
		FILE *f = c->f;
		const char *u = cli_unit();
		struct vms_json j;
		if (c->json) {
			vms_json_init(&j, f, false);
			vms_json_begin_object(&j, NULL);
			cli_json_header(&j, "exits");
			vms_json_string(&j, "by", "rip");
			vms_json_bool(&j, "truncated", vms_exit_rips_truncated(r));
			vms_json_begin_array(&j, "rows");
		} else if (c->csv) {
			fprintf(f, "machine,isa,reason,name,rip,symbol,count,unfinished,total_%s,mean_%s\n",
				u, u);
		} else {
			fprintf(f, "%-16s %-20s %-18s %-40s %9s %12s %10s\n", "machine", "reason", "rip",
				"symbol", "count", "total", "mean");
		}
		uint32_t shown = 0, nosym = 0, user = 0;
		for (uint32_t i = 0; i < vms_exit_rips_count(r); i++) {
			const struct vms_exit_rip *x = vms_exit_rips_row(r, i);
			if (!c->csv && !c->json && shown >= c->top)
				break;
			shown++;
			const char *mname = cli_machine_name(model, x->machine);
			const struct vms_ksyms *ks = ksyms_of(c, model, loaded, x->machine);
			char name[48], sym[160], rip[24];
			struct vms_exit_stats es = { .isa = x->isa, .reason = x->reason };
			name_of(&es, name, sizeof name);
			uint64_t off = 0;
			const char *sn = x->rip != UINT64_MAX ? vms_ksyms_lookup(ks, x->rip, &off) : NULL;
			if (sn)
				snprintf(sym, sizeof sym, "%s+0x%llx", sn, (unsigned long long)off);
			else
				sym[0] = '\0';
			/* the lower half of x86-64's address space (and any 32-bit address) is user
			 * space, which no kernel symbol table names */
			bool in_user = x->rip < 0x0000800000000000ull;
			user += !sn && in_user;
			nosym += !sn && !in_user && x->rip != UINT64_MAX;
			if (x->rip == UINT64_MAX)
				snprintf(rip, sizeof rip, "other");
			else
				snprintf(rip, sizeof rip, "0x%llx", (unsigned long long)x->rip);
			uint64_t fin = x->count - x->unfinished;
			uint64_t mean = fin ? (x->total + fin / 2) / fin : 0;
			if (c->json) {
				vms_json_begin_object(&j, NULL);
				vms_json_string(&j, "machine", mname);
				vms_json_uint(&j, "isa", x->isa);
				vms_json_uint(&j, "reason", x->reason);
				vms_json_string(&j, "name", name);
				if (x->rip == UINT64_MAX)
					vms_json_null(&j, "rip");
				else
					vms_json_uint(&j, "rip", x->rip);
				vms_json_string(&j, "symbol", sn ? sym : NULL);
				vms_json_uint(&j, "count", x->count);
				vms_json_uint(&j, "unfinished", x->unfinished);
				vms_json_uint(&j, cli_key("total"), x->total);
				vms_json_uint(&j, cli_key("mean"), mean);
				vms_json_end_object(&j);
			} else if (c->csv) {
				vms_csv_string(f, mname);
				fprintf(f, ",%u,%u,", x->isa, x->reason);
				vms_csv_string(f, name);
				fprintf(f, ",%s,", rip);
				vms_csv_string(f, sym);
				fprintf(f, ",%llu,%llu,%llu,%llu\n", (unsigned long long)x->count,
					(unsigned long long)x->unfinished, (unsigned long long)x->total,
					(unsigned long long)mean);
			} else {
				char b[2][32];
				fprintf(f, "%-16s %-20s %-18s %-40s %9llu %12s %10s\n", cli_text(mname),
					cli_text(name), rip, sn ? cli_text(sym) : "?", (unsigned long long)x->count,
					cli_ns(x->total, b[0], 32), cli_ns(mean, b[1], 32));
			}
		}
		if (c->json) {
			vms_json_end_array(&j);
			vms_json_end_object(&j);
			vms_json_finish(&j);
		} else if (!c->csv && vms_exit_rips_count(r) > shown)
			fprintf(f, "(%u more rows; --top N, or --csv for all)\n", vms_exit_rips_count(r) - shown);
		if (user)
			fprintf(stderr, "vmscope %s: %u addresses are in guest user space: kallsyms names "
				"kernel code only\n", c->cmd, user);
		if (nosym)
			fprintf(stderr, "vmscope %s: %u kernel addresses have no symbol: the guest trace "
				"holds no kallsyms for them (record with trace-cmd's kallsyms, or give "
				"--kallsyms NAME=FILE, a copy of the guest's /proc/kallsyms)\n", c->cmd, nosym);
		if (vms_exit_rips_truncated(r))
			fprintf(stderr, "vmscope %s: more than %d addresses: the rest are summed as 'other'\n",
				c->cmd, VMS_EXIT_RIPS_MAX);
	}
	vms_exit_rips_free(r);
	for (uint32_t k = 0; k < 8; k++)
		vms_ksyms_free(loaded[k]);
	return st;
}

int cmd_exits(int argc, char **argv)
{
	struct cli c;
	int st = cli_begin(&c, argc, argv, CLI_JSON | CLI_CSV | CLI_ROLES | CLI_OUT | CLI_PER_GUEST |
				  CLI_BY | CLI_TOP | CLI_WINDOW, usage);
	if (st != CLI_GO)
		return st;
	if (c.by)
		return cli_end(&c, by_rip(&c));
	if ((st = cli_run(&c, NULL)))
		return cli_end(&c, st);
	struct vms_session *s = c.s;
	FILE *f = c.f;
	struct vms_model *model = vms_session_model(s);
	struct vms_analysis *a = vms_session_analysis(s);
	struct vms_json j;
	nested_model = vms_model_nested(model) ? model : NULL;
	if (c.json) {
		vms_json_init(&j, f, false);
		vms_json_begin_object(&j, NULL);
		cli_json_header(&j, "exits");
		vms_json_bool(&j, "per_guest", c.per_guest);
		vms_json_begin_array(&j, "rows");
	} else if (c.csv) {
		const char *u = cli_unit();
		fprintf(f, "machine,vcpu,isa,reason,name,count,total_%s,min_%s,max_%s,mean_%s,p50_%s,"
			   "p90_%s,p99_%s,unfinished%s%s\n", u, u, u, u, u, u, u,
			nested_model ? ",layer,below_layer,below_total_" : "", nested_model ? u : "");
	} else {
		fprintf(f, "%-16s %4s %3s %-24s %9s %12s %10s %10s %10s %10s %10s\n", "machine", "vcpu",
			"isa", "reason", "count", "total", "min", "mean", "p50", "p99", "max");
	}
	const struct vms_filter *flt = vms_session_filter(c.s);
	if (c.per_guest) {
		for (uint32_t g = 0; g < vms_model_nr_machines(model); g++) {
			uint32_t nr = 0;
			if (!vms_filter_machine(flt, g))
				continue;
			const struct vms_exit_stats *ex = vms_analysis_guest_exits(a, g, &nr);
			for (uint32_t k = 0; k < nr; k++)
				put_row(&c, f, &j, cli_machine_name(model, g), g, -1, &ex[k]);
		}
	} else {
		for (uint32_t i = 0; i < vms_analysis_nr_vcpus(a); i++) {
			const struct vms_vcpu_stats *v = vms_analysis_vcpu(a, i);
			if (!vms_filter_vcpu(flt, v->machine, v->vcpu))
				continue;
			const char *mname = cli_machine_name(model, v->machine);
			for (uint32_t k = 0; k < v->nr_exits; k++)
				put_row(&c, f, &j, mname, v->machine, (int64_t)v->vcpu,
					&v->exits[k]);
		}
	}
	if (c.json) {
		vms_json_end_array(&j);
		vms_json_end_object(&j);
		vms_json_finish(&j);
	}
	return cli_end(&c, VMS_EXIT_OK);
}
