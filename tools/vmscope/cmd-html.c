/* vmscope html: the report as one self-contained HTML page (lib/output/html_*.c): the text
 * of `vmscope report`, an interactive timeline of the vCPUs, the physical CPUs (the fused
 * view) and the guest threads, exit latency histograms and who took the CPU. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "vmscope/html.h"

static const char usage[] =
	"usage: vmscope html [-o FILE] [--top N] [--tsc-hz HZ] [--host FILE] [--guest NAME=FILE]\n"
	"                    [--map NAME:VCPU=TID,...] [--from T] [--to T] [--machine NAME]\n"
	"                    [--vcpu N] [--exact-max N] TRACE...\n"
	"\n"
	"Writes one self-contained HTML page (no network needed, nothing fetched): the summary of\n"
	"`vmscope report`, an interactive timeline (virtual CPUs in Trace Compass's colours, the\n"
	"physical CPUs with what really ran on them, the guest threads; zoom, pan, hover, select),\n"
	"VM exit latency histograms per reason and the host threads that took the CPU. The page\n"
	"holds a summary of the timeline, whose size does not grow with the trace, and, when the\n"
	"trace has at most --exact-max pieces of rows and VM exits, those exactly too: then its\n"
	"drill-down reaches single VM exits with no server (else `vmscope serve` does).\n"
	"\n"
	"  --top N             rows per table of the summary (default 10)\n"
	"  --exact-max N       the page's budget of exact pieces and exits (default 250000;\n"
	"                      0: the summary only)\n"
	CLI_HELP_OUTPUT CLI_HELP_ROLES CLI_HELP_WINDOW;

/* The page's title: the trace files */
static char *title_of(const struct cli *c)
{
	size_t n = 1;
	for (uint32_t i = 0; i < vms_session_nr_sources(c->s); i++)
		n += strlen(vms_session_source(c->s, i)->path) + 2;
	char *t = calloc(1, n);
	for (uint32_t i = 0; t && i < vms_session_nr_sources(c->s); i++) {
		if (i)
			strcat(t, ", ");
		strcat(t, vms_session_source(c->s, i)->path);
	}
	return t;
}

/* --exact-max is html's own: taken out of argv before the shared parser sees it. -1 on a
 * usage error (said), else the number of arguments left in av. */
static int take_exact_max(int argc, char **argv, char **av, uint64_t *max, bool *set)
{
	int ac = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v;
		if (!strcmp(a, "--")) {
			while (i < argc)
				av[ac++] = argv[i++];
			break;
		}
		if (!strcmp(a, "--exact-max") && i + 1 < argc)
			v = argv[++i];
		else if (!strncmp(a, "--exact-max=", 12))
			v = a + 12;
		else if (!strcmp(a, "--exact-max"))
			v = "";
		else {
			av[ac++] = argv[i];
			continue;
		}
		char *end;
		errno = 0;
		unsigned long long x = strtoull(v, &end, 10);
		if (errno || end == v || *end || *v == '-' || x > (1ull << 32)) {
			fprintf(stderr, "vmscope html: --exact-max: not a count (0 to 4294967296): '%s'\n%s",
				cli_text(v), usage);
			return -1;
		}
		*max = x;
		*set = true;
	}
	return ac;
}

int cmd_html(int argc, char **argv)
{
	struct cli c;
	uint64_t exact_max = 0;
	bool exact_set = false;
	char **av = calloc((size_t)argc + 1, sizeof *av);
	if (!av) {
		fprintf(stderr, "vmscope html: out of memory\n");
		return VMS_EXIT_FAIL;
	}
	int ac = take_exact_max(argc, argv, av, &exact_max, &exact_set);
	if (ac < 0) {
		free(av);
		return VMS_EXIT_USAGE;
	}
	int st = cli_begin(&c, ac, av, CLI_ROLES | CLI_OUT | CLI_TOP | CLI_WINDOW, usage);
	if (st != CLI_GO) {
		free(av);
		return st;
	}
	/* no model yet: the observer's reset gives the writer the model of each pass, so the
	 * page shares the checked single pass of `report` (one reading when the metadata links
	 * the traces) */
	struct vms_html_opts hopts = { .machine = c.sopts.machine,
				       .vcpu = c.sopts.has_vcpu ? (int32_t)c.sopts.vcpu : -1,
				       .exact_max = exact_max, .summary_only = exact_set && !exact_max };
	struct vms_html *h = vms_html_new(NULL, &hopts);
	struct vms_observer obs;
	if (h)
		obs = vms_html_observer(h);
	if (!h || vms_session_observe(c.s, &obs) < 0) {
		fprintf(stderr, "vmscope html: out of memory\n");
		vms_html_free(h);
		st = cli_end(&c, VMS_EXIT_FAIL);
		free(av);
		return st;
	}
	st = cli_run(&c, NULL);
	char *summary = NULL, *title = NULL;
	size_t slen = 0;
	if (!st) {
		FILE *sf = open_memstream(&summary, &slen);
		if (sf)
			cli_report_text(sf, c.s, c.top);
		bool oom = !sf || fclose(sf) != 0;
		title = title_of(&c);
		struct vms_html_page page = {
			.title = title,
			.summary = summary,
			.analysis = vms_session_analysis(c.s),
			.events = vms_session_events(c.s),
			.time_unit = cli_unit(),
		};
		int w = oom ? VMS_ERR_NOMEM : vms_html_write(h, c.f, &page);
		if (w < 0) {
			if (w == VMS_ERR_NOMEM)
				fprintf(stderr, "vmscope html: out of memory building the page\n");
			else
				fprintf(stderr, "vmscope html: cannot write %s\n", c.out ? c.out : "the page");
			st = VMS_EXIT_FAIL;
		}
	}
	free(summary);
	free(title);
	st = cli_end(&c, st);
	vms_html_free(h);
	free(av);
	return st;
}
