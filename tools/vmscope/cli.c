#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "vmscope/writers.h"
#include "vmscope/xentrace.h"
#include "cmds.h"

static int add_guest(struct cli *c, const char *arg)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg || !eq[1])
		return -1;
	uint32_t n = c->sopts.nr_guests;
	const char **names = realloc((void *)c->sopts.guest_names, (n + 1) * sizeof *names);
	if (!names)
		return -1;
	c->sopts.guest_names = names;
	const char **paths = realloc((void *)c->sopts.guest_paths, (n + 1) * sizeof *paths);
	if (!paths)
		return -1;
	c->sopts.guest_paths = paths;
	names[n] = strndup(arg, (size_t)(eq - arg));
	paths[n] = eq + 1;
	c->sopts.nr_guests = n + 1;
	return 0;
}

static bool parse_int(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* --map NAME:dom=N: the Xen domain N of a xentrace host is the machine NAME */
static int add_dom_map(struct cli *c, const char *arg, const char *colon)
{
	long long dom;
	if (!parse_int(colon + 5, 0, 32766, &dom))
		return -1;
	uint32_t n = c->sopts.nr_dom_maps;
	const char **g = realloc((void *)c->sopts.dom_map_guest, (n + 1) * sizeof *g);
	if (!g)
		return -1;
	c->sopts.dom_map_guest = g;
	uint32_t *d = realloc(c->sopts.dom_map_id, (n + 1) * sizeof *d);
	if (!d)
		return -1;
	c->sopts.dom_map_id = d;
	if (!(g[n] = strndup(arg, (size_t)(colon - arg))))
		return -1;
	d[n] = (uint32_t)dom;
	c->sopts.nr_dom_maps = n + 1;
	return 0;
}

/* --cpu-hz HZ, with an optional K, M or G suffix (2.4G) as xenalyze takes it */
static bool parse_hz(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v <= 0)
		return false;
	double mul = 1;
	if (*end == 'G' || *end == 'g')
		mul = 1e9, end++;
	else if (*end == 'M' || *end == 'm')
		mul = 1e6, end++;
	else if (*end == 'K' || *end == 'k')
		mul = 1e3, end++;
	if (*end == 'H' || *end == 'h')
		end += (end[1] == 'z' || end[1] == 'Z') ? 2 : 1;
	if (*end || v * mul < 1e3 || v * mul > 1e12)
		return false;
	*out = (uint64_t)(v * mul + 0.5);
	return true;
}

/* --map NAME:VCPU=TID[,VCPU=TID...] or NAME:dom=N */
static int add_map(struct cli *c, const char *arg)
{
	const char *colon = strrchr(arg, ':');
	if (!colon || colon == arg || !colon[1])
		return -1;
	if (strncmp(colon + 1, "dom=", 4) == 0)
		return add_dom_map(c, arg, colon);
	bool name_used = false;
	char *name = strndup(arg, (size_t)(colon - arg));
	char *list = strdup(colon + 1);
	if (!name || !list)
		goto bad;
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		long long vcpu, tid;
		if (!eq)
			goto bad;
		*eq = '\0';
		if (!parse_int(tok, 0, 4095, &vcpu) || !parse_int(eq + 1, 1, INT32_MAX, &tid))
			goto bad;
		uint32_t n = c->sopts.nr_maps;
		const char **g = realloc((void *)c->sopts.map_guest, (n + 1) * sizeof *g);
		if (!g)
			goto bad;
		c->sopts.map_guest = g;
		uint32_t *v = realloc(c->sopts.map_vcpu, (n + 1) * sizeof *v);
		if (!v)
			goto bad;
		c->sopts.map_vcpu = v;
		int32_t *t = realloc(c->sopts.map_tid, (n + 1) * sizeof *t);
		if (!t)
			goto bad;
		c->sopts.map_tid = t;
		g[n] = name_used ? strdup(name) : name;
		name_used = true;
		v[n] = (uint32_t)vcpu;
		t[n] = (int32_t)tid;
		c->sopts.nr_maps = n + 1;
	}
	if (!name_used)
		goto bad;
	free(list);
	return 0;
bad:
	if (!name_used)
		free(name);
	free(list);
	return -1;
}

int cli_parse(struct cli *c, int argc, char **argv, unsigned allow, const char *usage)
{
	memset(c, 0, sizeof *c);
	c->cmd = argv[0];
	c->top = 10;
	c->sopts.progress = isatty(STDERR_FILENO);
	enum { O_HOST = 256, O_GUEST, O_MAP, O_TOP, O_PER_GUEST, O_CPU_HZ };
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "csv", no_argument, NULL, 'c' },
		{ "host", required_argument, NULL, O_HOST },
		{ "guest", required_argument, NULL, O_GUEST },
		{ "map", required_argument, NULL, O_MAP },
		{ "top", required_argument, NULL, O_TOP },
		{ "per-guest", no_argument, NULL, O_PER_GUEST },
		{ "cpu-hz", required_argument, NULL, O_CPU_HZ },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	optind = 1;
	opterr = 0;
	int o;
	while ((o = getopt_long(argc, argv, "+hjco:", longopts, NULL)) != -1) {
		const char *bad = NULL;
		switch (o) {
		case 'h':
			fputs(usage, stdout);
			return 1000;
		case 'j':
			if (!(allow & CLI_JSON))
				bad = "--json";
			c->json = true;
			break;
		case 'c':
			if (!(allow & CLI_CSV))
				bad = "--csv";
			c->csv = true;
			break;
		case 'o':
			if (!(allow & CLI_OUT))
				bad = "-o";
			c->out = optarg;
			break;
		case O_PER_GUEST:
			if (!(allow & CLI_PER_GUEST))
				bad = "--per-guest";
			c->per_guest = true;
			break;
		case O_HOST:
			if (!(allow & CLI_ROLES))
				bad = "--host";
			c->sopts.host_path = optarg;
			break;
		case O_GUEST:
			if (!(allow & CLI_ROLES))
				bad = "--guest";
			else if (add_guest(c, optarg) < 0) {
				fprintf(stderr, "vmscope %s: --guest wants NAME=FILE, not '%s'\n", c->cmd, optarg);
				return 1002;
			}
			break;
		case O_MAP:
			if (!(allow & CLI_ROLES))
				bad = "--map";
			else if (add_map(c, optarg) < 0) {
				fprintf(stderr, "vmscope %s: --map wants NAME:VCPU=TID[,VCPU=TID...] or NAME:dom=N, not '%s'\n",
					c->cmd, optarg);
				return 1002;
			}
			break;
		case O_CPU_HZ:
			if (!parse_hz(optarg, &c->sopts.cpu_hz)) {
				fprintf(stderr, "vmscope %s: --cpu-hz wants a frequency such as 2400000000 or 2.4G, not '%s'\n",
					c->cmd, optarg);
				return 1002;
			}
			break;
		case O_TOP: {
			long long v;
			if (!(allow & CLI_TOP))
				bad = "--top";
			else if (!parse_int(optarg, 1, 1000000, &v)) {
				fprintf(stderr, "vmscope %s: --top wants a number from 1, not '%s'\n", c->cmd, optarg);
				return 1002;
			} else
				c->top = (unsigned)v;
			break;
		}
		default:
			fprintf(stderr, "vmscope %s: unknown option '%s'\n%s", c->cmd, argv[optind - 1], usage);
			return 1002;
		}
		if (bad) {
			fprintf(stderr, "vmscope %s: %s is not an option of this command\n%s", c->cmd, bad, usage);
			return 1002;
		}
	}
	if (c->json && c->csv) {
		fprintf(stderr, "vmscope %s: --json and --csv exclude each other\n", c->cmd);
		return 1002;
	}
	c->paths = (const char **)(argv + optind);
	c->nr_paths = (uint32_t)(argc - optind);
	if (c->nr_paths == 0 && !c->sopts.host_path && c->sopts.nr_guests == 0) {
		fprintf(stderr, "vmscope %s: no trace given\n%s", c->cmd, usage);
		return 1002;
	}
	return 0;
}

void cli_free(struct cli *c)
{
	for (uint32_t i = 0; i < c->sopts.nr_guests; i++)
		free((void *)c->sopts.guest_names[i]);
	free((void *)c->sopts.guest_names);
	free((void *)c->sopts.guest_paths);
	/* map names: one allocation per --map, shared by its entries */
	for (uint32_t i = 0; i < c->sopts.nr_maps; i++)
		if (i == 0 || c->sopts.map_guest[i] != c->sopts.map_guest[i - 1])
			free((void *)c->sopts.map_guest[i]);
	free((void *)c->sopts.map_guest);
	free(c->sopts.map_vcpu);
	free(c->sopts.map_tid);
	for (uint32_t i = 0; i < c->sopts.nr_dom_maps; i++)
		free((void *)c->sopts.dom_map_guest[i]);
	free((void *)c->sopts.dom_map_guest);
	free(c->sopts.dom_map_id);
}

int cli_fail(const struct cli *c, const struct vms_error *err)
{
	fprintf(stderr, "vmscope %s: %s\n", c->cmd, err->msg[0] ? err->msg : "failed");
	switch (err->status) {
	case VMS_ERR_FORMAT:
	case VMS_ERR_USAGE:
		return VMS_EXIT_USAGE;
	default:
		return VMS_EXIT_FAIL;
	}
}

struct vms_session *cli_session(struct cli *c, int *status)
{
	struct vms_error err = { 0 };
	struct vms_session *s = vms_session_open(c->paths, c->nr_paths, &c->sopts, &err);
	if (!s) {
		*status = cli_fail(c, &err);
		return NULL;
	}
	/* xentrace counts cycles: say which frequency turns them into time */
	for (uint32_t i = 0; i < vms_session_nr_sources(s); i++) {
		const struct vms_xen_info *xi = vms_xentrace_info(vms_session_source(s, i));
		if (xi && !xi->cpu_hz_given)
			fprintf(stderr, "vmscope %s: warning: %s: cycles turned into time at %.6g GHz "
				"(xenalyze's default); give the host's frequency with --cpu-hz\n",
				c->cmd, vms_session_source(s, i)->path, (double)xi->cpu_hz / 1e9);
	}
	/* the model is built by the run (or the listing) that follows, in the fewest passes */
	return s;
}

FILE *cli_output(const struct cli *c)
{
	if (!c->out || !strcmp(c->out, "-"))
		return stdout;
	FILE *f = fopen(c->out, "w");
	if (!f)
		fprintf(stderr, "vmscope %s: cannot write %s: %s\n", c->cmd, c->out, strerror(errno));
	return f;
}

const char *cli_ns(uint64_t ns, char *buf, size_t len)
{
	if (ns < 1000)
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.2f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.3f s", (double)ns / 1e9);
	return buf;
}

const char *cli_machine_name(struct vms_model *m, uint32_t i)
{
	const struct vms_machine *mc = vms_model_machine_c(m, i);
	return mc && mc->name ? mc->name : "?";
}

int cli_begin(struct cli *c, int argc, char **argv, unsigned allow, const char *usage)
{
	int st = cli_parse(c, argc, argv, allow, usage);
	if (st) {
		cli_free(c);
		return st - 1000;
	}
	c->s = cli_session(c, &st);
	if (!c->s) {
		cli_free(c);
		return st;
	}
	c->f = cli_output(c);
	if (!c->f)
		return cli_end(c, VMS_EXIT_FAIL);
	return CLI_GO;
}

int cli_run(struct cli *c, const struct vms_sinks *sinks)
{
	struct vms_error err = { 0 };
	if (vms_session_run(c->s, sinks, NULL, NULL, &err) < 0)
		return cli_fail(c, &err);
	return 0;
}

int cli_end(struct cli *c, int status)
{
	if (c->f && c->f != stdout && fclose(c->f) != 0 && status == 0) {
		fprintf(stderr, "vmscope %s: cannot write %s\n", c->cmd, c->out);
		status = VMS_EXIT_FAIL;
	}
	if (c->f == stdout && fflush(stdout) != 0 && status == 0)
		status = VMS_EXIT_FAIL;
	c->f = NULL;
	vms_session_free(c->s);
	c->s = NULL;
	cli_free(c);
	return status;
}

void cli_json_sync_members(struct vms_json *j, struct vms_model *m,
			   const struct vms_sync_info *si)
{
	vms_json_string(j, "reference", cli_machine_name(m, si->reference));
	vms_json_string(j, "method", vms_sync_method_name(si->method));
	vms_json_double(j, "slope", si->slope);
	vms_json_double(j, "offset_ns", si->offset_ns);
	vms_json_string(j, "quality", vms_sync_quality_name(si->quality));
	vms_json_uint(j, "pairs", si->pairs);
	if (si->has_containment) {
		vms_json_begin_object(j, "containment");
		vms_json_uint(j, "inside", si->contained);
		vms_json_uint(j, "total", si->contain_total);
		vms_json_end_object(j);
	} else {
		vms_json_null(j, "containment");
	}
}
