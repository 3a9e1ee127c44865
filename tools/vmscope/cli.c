#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "vmscope/availability.h"
#include "vmscope/sync.h"
#include "vmscope/writers.h"
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

/* --offset NAME=NS: NS signed nanoseconds, or with a unit (-1.5ms, 250us, 2s) */
static int add_offset(struct cli *c, const char *arg)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg || !eq[1])
		return -1;
	char *end;
	errno = 0;
	double v = strtod(eq + 1, &end);
	static const struct { const char *unit; double ns; } units[] = {
		{ "", 1 }, { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	};
	double mul = 0;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (strcmp(end, units[i].unit) == 0)
			mul = units[i].ns;
	if (errno || end == eq + 1 || !mul || !(v * mul > -9.2e18 && v * mul < 9.2e18))
		return -1;
	uint32_t n = c->sopts.nr_offsets;
	const char **g = realloc((void *)c->sopts.offset_name, (n + 1) * sizeof *g);
	if (!g)
		return -1;
	c->sopts.offset_name = g;
	int64_t *o = realloc(c->sopts.offset_ns, (n + 1) * sizeof *o);
	if (!o)
		return -1;
	c->sopts.offset_ns = o;
	if (!(g[n] = strndup(arg, (size_t)(eq - arg))))
		return -1;
	o[n] = (int64_t)(v * mul + (v < 0 ? -0.5 : 0.5));
	c->sopts.nr_offsets = n + 1;
	return 0;
}

/* --map NAME[@HOST]:VCPU=TID[,VCPU=TID...] or NAME:dom=N */
static int add_map(struct cli *c, const char *arg)
{
	const char *colon = strrchr(arg, ':');
	if (!colon || colon == arg || !colon[1])
		return -1;
	if (strncmp(colon + 1, "dom=", 4) == 0)
		return add_dom_map(c, arg, colon);
	bool name_used = false;
	/* NAME@HOST: the host named (the last '@' before the colon) */
	const char *at = NULL;
	for (const char *p = arg; p < colon; p++)
		if (*p == '@')
			at = p;
	if (at && (at == arg || at + 1 == colon))
		return -1;
	char *name = strndup(arg, (size_t)((at ? at : colon) - arg));
	char *host = at ? strndup(at + 1, (size_t)(colon - at - 1)) : NULL;
	char *list = strdup(colon + 1);
	if (!name || !list || (at && !host))
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
		const char **hs = realloc((void *)c->sopts.map_host, (n + 1) * sizeof *hs);
		if (!hs)
			goto bad;
		c->sopts.map_host = hs;
		g[n] = name_used ? strdup(name) : name;
		hs[n] = name_used ? (host ? strdup(host) : NULL) : host;
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
	if (!name_used) {
		free(name);
		free(host);
	}
	free(list);
	return -1;
}

int cli_parse(struct cli *c, int argc, char **argv, unsigned allow, const char *usage)
{
	memset(c, 0, sizeof *c);
	c->cmd = argv[0];
	c->top = 10;
	c->sopts.progress = isatty(STDERR_FILENO);
	enum { O_HOST = 256, O_GUEST, O_MAP, O_TOP, O_PER_GUEST, O_TSC_HZ, O_RAW, O_FROM, O_TO,
	       O_MACHINE, O_VCPU, O_THREAD, O_BY, O_KALLSYMS, O_CPU_HZ, O_OFFSET,
	       O_CLOCK_MODEL, O_THREADS };
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "csv", no_argument, NULL, 'c' },
		{ "host", required_argument, NULL, O_HOST },
		{ "guest", required_argument, NULL, O_GUEST },
		{ "map", required_argument, NULL, O_MAP },
		{ "offset", required_argument, NULL, O_OFFSET },
		{ "top", required_argument, NULL, O_TOP },
		{ "per-guest", no_argument, NULL, O_PER_GUEST },
		{ "output", required_argument, NULL, 'o' },
		{ "tsc-hz", required_argument, NULL, O_TSC_HZ },
		{ "cpu-hz", required_argument, NULL, O_CPU_HZ }, /* xenalyze's name, for xentrace */
		{ "clock-model", required_argument, NULL, O_CLOCK_MODEL },
		{ "raw", no_argument, NULL, O_RAW },
		{ "from", required_argument, NULL, O_FROM },
		{ "to", required_argument, NULL, O_TO },
		{ "machine", required_argument, NULL, O_MACHINE },
		{ "vcpu", required_argument, NULL, O_VCPU },
		{ "thread", required_argument, NULL, O_THREAD },
		{ "by", required_argument, NULL, O_BY },
		{ "kallsyms", required_argument, NULL, O_KALLSYMS },
		{ "threads", required_argument, NULL, O_THREADS },
		{ NULL, 0, NULL, 0 },
	};
	optind = 1;
	opterr = 0;
	int o;
	char ob[8];   /* cli_bad_option's "-c" */
	while ((o = getopt_long(argc, argv, ":hjco:", longopts, NULL)) != -1) {
		const char *bad = NULL;
		switch (o) {
		case 'h':
			fputs(usage, stdout);
			return 1000;
		case O_RAW:
			if (!(allow & CLI_RAW))
				bad = "--raw";
			c->raw = true;
			break;
		case O_THREAD:
			if (!(allow & CLI_THREAD))
				bad = "--thread";
			c->thread = optarg;
			break;
		case O_BY:
			if (!(allow & CLI_BY))
				bad = "--by";
			else if (strcmp(optarg, "rip") != 0) {
				fprintf(stderr, "vmscope %s: --by knows only 'rip', not '%s'\n", c->cmd, optarg);
				return 1002;
			}
			c->by = optarg;
			break;
		case O_KALLSYMS: {
			const char *eq = strchr(optarg, '=');
			if (!(allow & CLI_BY))
				bad = "--kallsyms";
			else if (!eq || eq == optarg || !eq[1] ||
				 c->nr_kallsyms >= sizeof c->kallsyms_path / sizeof c->kallsyms_path[0]) {
				fprintf(stderr, "vmscope %s: --kallsyms wants NAME=FILE (at most 8), not '%s'\n",
					c->cmd, optarg);
				return 1002;
			} else {
				/* NAME ends at '=': point into optarg, NUL-free copy kept in the path */
				c->kallsyms_name[c->nr_kallsyms] = optarg;
				c->kallsyms_path[c->nr_kallsyms++] = eq + 1;
			}
			break;
		}
		case O_TSC_HZ:
		case O_CPU_HZ:
			if (!cli_parse_hz(optarg, &c->sopts.tsc_hz)) {
				fprintf(stderr, "vmscope %s: %s wants a rate in Hz from 1 kHz to 1 THz "
					"(2100000000, 2.1e9 or 2.1G), not '%s'\n", c->cmd,
					o == O_CPU_HZ ? "--cpu-hz" : "--tsc-hz", optarg);
				return 1002;
			}
			break;
		case O_THREADS:
			if (!cli_parse_threads(c->cmd, optarg, &c->sopts.threads))
				return 1002;
			break;
		case O_CLOCK_MODEL: {
			enum vms_clock_model cm;
			if (vms_clock_model_parse(optarg, &cm) < 0) {
				fprintf(stderr, "vmscope %s: --clock-model wants auto or linear, not '%s'\n",
					c->cmd, optarg);
				return 1002;
			}
			c->sopts.clock_model = (int)cm;
			break;
		}
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
				fprintf(stderr, "vmscope %s: --map wants NAME[@HOST]:VCPU=TID[,VCPU=TID...] or NAME:dom=N, not '%s'\n",
					c->cmd, optarg);
				return 1002;
			}
			break;
		case O_OFFSET:
			if (!(allow & CLI_ROLES))
				bad = "--offset";
			else if (add_offset(c, optarg) < 0) {
				fprintf(stderr, "vmscope %s: --offset wants NAME=NS (signed ns, or with a "
						"unit: -1.5ms, 250us, 2s), not '%s'\n", c->cmd, optarg);
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
		case O_FROM:
		case O_TO: {
			struct vms_time_bound *b = o == O_FROM ? &c->sopts.from : &c->sopts.to;
			if (!(allow & CLI_WINDOW))
				bad = o == O_FROM ? "--from" : "--to";
			else if (!cli_time_bound(c->cmd, o == O_FROM ? "--from" : "--to", optarg, b))
				return 1002;
			break;
		}
		case O_MACHINE:
			if (!(allow & CLI_WINDOW))
				bad = "--machine";
			c->sopts.machine = optarg;
			break;
		case O_VCPU: {
			long long v;
			if (!(allow & CLI_WINDOW))
				bad = "--vcpu";
			else if (!parse_int(optarg, 0, 4095, &v)) {
				fprintf(stderr, "vmscope %s: --vcpu wants a vCPU number, not '%s'\n", c->cmd,
					optarg);
				return 1002;
			} else {
				c->sopts.has_vcpu = true;
				c->sopts.vcpu = (uint32_t)v;
			}
			break;
		}
		case ':':
			fprintf(stderr, "vmscope %s: option '%s' wants a value\n%s", c->cmd,
				cli_bad_option(argv, ob, sizeof ob), usage);
			return 1002;
		default:
			fprintf(stderr, "vmscope %s: unknown option '%s'\n%s", c->cmd,
				cli_bad_option(argv, ob, sizeof ob), usage);
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
	for (uint32_t i = 0; i < c->sopts.nr_maps; i++) {
		free((void *)c->sopts.map_guest[i]);
		free((void *)c->sopts.map_host[i]);
	}
	free((void *)c->sopts.map_guest);
	free((void *)c->sopts.map_host);
	free(c->sopts.map_vcpu);
	free(c->sopts.map_tid);
	for (uint32_t i = 0; i < c->sopts.nr_dom_maps; i++)
		free((void *)c->sopts.dom_map_guest[i]);
	free((void *)c->sopts.dom_map_guest);
	free(c->sopts.dom_map_id);
	for (uint32_t i = 0; i < c->sopts.nr_offsets; i++)
		free((void *)c->sopts.offset_name[i]);
	free((void *)c->sopts.offset_name);
	free(c->sopts.offset_ns);
}

bool cli_parse_threads(const char *cmd, const char *arg, unsigned *threads)
{
	long long v;
	if (!parse_int(arg, 1, CLI_MAX_THREADS, &v)) {
		fprintf(stderr, "vmscope %s: --threads wants a number from 1 to %d, not '%s'\n", cmd,
			CLI_MAX_THREADS, arg);
		return false;
	}
	*threads = (unsigned)v;
	return true;
}

bool cli_time_bound(const char *cmd, const char *opt, const char *arg, struct vms_time_bound *b)
{
	if (vms_time_bound_parse(arg, b) == 0)
		return true;
	fprintf(stderr, "vmscope %s: %s wants a reference time in seconds as info and dump print it "
		"(22150.5), in ns (22150500000000), or after the traces' start (+1.5s, +250ms, "
		"+10us), not '%s'\n", cmd, opt, arg);
	return false;
}

int cli_open_exit(int errnum)
{
	return errnum == ENAMETOOLONG || errnum == ENOENT || errnum == ENOTDIR ? VMS_EXIT_USAGE
									       : VMS_EXIT_FAIL;
}

const char *cli_bad_option(char **argv, char *buf, size_t len)
{
	if (optopt > 0 && optopt != '?' && optopt < 0x7f) {
		snprintf(buf, len, "-%c", optopt);
		return buf;
	}
	return argv[optind - 1];
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
	/* the model is built by the run (or the listing) that follows, in the fewest passes */
	return s;
}

FILE *cli_output(const struct cli *c)
{
	if (!c->out || !strcmp(c->out, "-"))
		return stdout;
	vms_output_is_stdout = 0;
	FILE *f = fopen(c->out, "w");
	if (!f) {
		int e = errno;
		fprintf(stderr, "vmscope %s: cannot write %s: %s\n", c->cmd, c->out, strerror(e));
		errno = e;   /* for cli_open_exit */
	}
	return f;
}

static bool unit_is_cycles;

const char *cli_unit(void) { return unit_is_cycles ? "cycles" : "ns"; }
bool cli_cycles(void) { return unit_is_cycles; }

const char *cli_key(const char *base)
{
	static char buf[8][64];
	static unsigned slot;
	slot = (slot + 1) & 7;
	snprintf(buf[slot], sizeof buf[slot], "%s_%s", base, cli_unit());
	return buf[slot];
}

void cli_json_header(struct vms_json *j, const char *cmd)
{
	vms_json_uint(j, "schema_version", CLI_SCHEMA_VERSION);
	vms_json_string(j, "command", cmd);
	vms_json_string(j, "tool", "vmscope");
	vms_json_string(j, "version", VMSCOPE_VERSION);
	vms_json_string(j, "time_unit", cli_unit());
}

/* "%.<digits>f <unit>" of ns / (step * 10^digits) from integers, as snprintf would print the
 * double: the last digit is the nearest, as the double's own error (below 1e-10 of a step
 * for ns < 1e15) cannot cross a rounding boundary that is a whole ns away. An exact decimal
 * tie (ns % step == step / 2) goes by the double's binary value: false, snprintf decides.
 * (report prints hundreds of these; printf's %f costs ~1,900 instructions each.) */
static bool ns_fixed(uint64_t ns, uint64_t step, unsigned digits, const char *unit, char *buf,
		     size_t len)
{
	uint64_t k = ns / step, r = ns % step;
	if (2 * r == step || ns >= 1000000000000000ull)
		return false;
	k += 2 * r > step;
	char tmp[48], *p = tmp + sizeof tmp;
	*--p = '\0';
	for (const char *u = unit + strlen(unit); u > unit;)
		*--p = *--u;
	*--p = ' ';
	for (unsigned i = 0; i < digits; i++, k /= 10)
		*--p = (char)('0' + k % 10);
	*--p = '.';
	do
		*--p = (char)('0' + k % 10);
	while (k /= 10);
	size_t n = (size_t)(tmp + sizeof tmp - p);
	if (n > len)
		return false;
	memcpy(buf, p, n);
	return true;
}

const char *cli_ns(uint64_t ns, char *buf, size_t len)
{
	if (unit_is_cycles)
		vms_fmt_cycles(ns, buf, len); /* counter ticks are never shown as seconds */
	else if (ns < 1000)
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000) {
		if (!ns_fixed(ns, 10, 2, "us", buf, len))
			snprintf(buf, len, "%.2f us", (double)ns / 1e3);
	} else if (ns < 1000000000) {
		if (!ns_fixed(ns, 10000, 2, "ms", buf, len))
			snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
	} else if (!ns_fixed(ns, 1000000, 3, "s", buf, len)) {
		snprintf(buf, len, "%.3f s", (double)ns / 1e9);
	}
	return buf;
}

const char *cli_text(const char *s)
{
	static char buf[16][512];
	static unsigned next;
	if (!s || vms_text_is_safe(s))
		return s ? s : "";
	char *b = buf[next++ % 16];
	vms_text_escape(b, sizeof buf[0], s);
	return b;
}

int cli_seconds(uint64_t ns, char *buf, size_t len)
{
	uint64_t us = ns / 1000u + (ns % 1000u >= 500u);   /* libtraceevent rounds likewise */
	return snprintf(buf, len, "%" PRIu64 ".%06" PRIu64, us / 1000000u, us % 1000000u);
}

bool cli_parse_hz(const char *s, double *hz)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s)
		return false;
	if (*end == 'k' || *end == 'K')
		v *= 1e3, end++;
	else if (*end == 'M')
		v *= 1e6, end++;
	else if (*end == 'G')
		v *= 1e9, end++;
	if (!strcmp(end, "Hz") || !strcmp(end, "hz"))
		end += 2;
	if (*end || !isfinite(v) || v < 1e3 || v > 1e12)
		return false;
	*hz = v;
	return true;
}

int cli_write_failed(const char *cmd, int err)
{
	if (err == EPIPE)
		return VMS_EXIT_OK;   /* the reader has what it wanted (main.c's rule) */
	fprintf(stderr, "vmscope %s: cannot write the output: %s\n", cmd,
		err ? strerror(err) : "write error");
	return VMS_EXIT_FAIL;
}

const char *cli_machine_name(struct vms_model *m, uint32_t i)
{
	const struct vms_machine *mc = vms_model_machine_c(m, i);
	return mc && mc->name ? mc->name : "?";
}

/* Same file twice: by device and inode, so that two spellings of one path are caught. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

void cli_dedupe_paths(struct cli *c)
{
	uint32_t kept = 0;
	for (uint32_t i = 0; i < c->nr_paths; i++) {
		const char *p = c->paths[i], *twin = NULL;
		for (uint32_t k = 0; k < kept && !twin; k++)
			if (same_file(c->paths[k], p))
				twin = c->paths[k];
		if (!twin && c->sopts.host_path && same_file(c->sopts.host_path, p))
			twin = c->sopts.host_path;
		for (uint32_t g = 0; g < c->sopts.nr_guests && !twin; g++)
			if (same_file(c->sopts.guest_paths[g], p))
				twin = c->sopts.guest_paths[g];
		if (twin) {
			fprintf(stderr, "vmscope %s: warning: %s is the same file as %s; read once\n",
				c->cmd, p, twin);
			continue;
		}
		c->paths[kept++] = p;
	}
	c->nr_paths = kept;
}

/* Whether source i has events of a kind (after a run or an iteration). */
static uint64_t kind_count(struct vms_session *s, uint32_t i, enum vms_kind kind)
{
	const struct vms_trace_meta *m = &vms_session_source(s, i)->meta;
	uint64_t n = 0;
	for (uint32_t t = 0; t < m->nr_types; t++)
		if (m->type_kinds && m->type_kinds[t] == kind)
			n += vms_session_type_count(s, i, t);
	return n;
}

void cli_warn_formats(const char *cmd, struct vms_session *s)
{
	for (uint32_t i = 0; i < vms_session_nr_sources(s); i++) {
		const struct vms_source *src = vms_session_source(s, i);
		if (src->meta.nr_formats_unread)
			fprintf(stderr, "vmscope %s: warning: %s: the format of %s%s was refused as "
					"unsafe to parse or could not be parsed: those events are not "
					"decoded (kind other)\n", cmd, src->path,
				cli_text(src->meta.format_unread),
				src->meta.nr_formats_unread > 1 ? " and others vmscope reads" : "");
	}
}

/* A row of what can be known that falls short, as a warning pointing to the recipes */
static void warn_avail(const struct cli *c, enum vms_avail_what w, const struct vms_avail_row *r)
{
	fprintf(stderr, "vmscope %s: warning: %s %s: %s (docs/recording.md says how to record "
			"it)\n", c->cmd, vms_avail_what_name(w), vms_avail_level_name(r->level),
		cli_text(r->why));
}

void cli_warn_model(const struct cli *c)
{
	struct vms_session *s = c->s;
	struct vms_model *m = s ? vms_session_model(s) : NULL;
	if (!m)
		return;
	uint32_t ns = vms_session_nr_sources(s);
	uint64_t kvm = 0;
	for (uint32_t i = 0; i < ns; i++)
		kvm += kind_count(s, i, VMS_K_KVM_EXIT) + kind_count(s, i, VMS_K_KVM_ENTRY) +
		       kind_count(s, i, VMS_K_XEN_VMEXIT) + kind_count(s, i, VMS_K_XEN_RUNSTATE);
	/* the words of `vmscope info`'s table (vmscope/availability.h) */
	struct vms_avail_row av[VMS_AV_COUNT];
	vms_session_availability(s, av);
	if (kvm == 0)
		warn_avail(c, VMS_AV_VCPU_STATES, &av[VMS_AV_VCPU_STATES]);
	if (!strcmp(av[VMS_AV_PREEMPTION].missing, "sched_switch"))
		warn_avail(c, VMS_AV_PREEMPTION, &av[VMS_AV_PREEMPTION]);
	for (uint32_t i = 0; i < vms_model_nr_machines(m); i++) {
		uint64_t og = 0, ot = 0;
		if (vms_model_untraced_omitted(m, i, &og, &ot) == 0 && og)
			fprintf(stderr, "vmscope %s: warning: %s: %llu untraced guests (%llu vCPU "
					"threads) beyond the first %u are not modelled: their threads "
					"count as host threads\n", c->cmd,
				cli_text(vms_model_machine_c(m, i)->name), (unsigned long long)og,
				(unsigned long long)ot, VMS_MODEL_MAX_UNTRACED);
	}
	for (uint32_t i = 0; i < vms_model_nr_machines(m); i++) {
		const struct vms_machine *mc = vms_model_machine_c(m, i);
		const struct vms_sync_info *si = &mc->sync;
		if (mc->source >= 0 && vms_model_nr_machines(m) > 1 &&
		    (si->method == VMS_SYNC_NONE || (si->method == VMS_SYNC_HULL && !si->applied))) {
			/* why no hull: no event of any trace could be matched at all (a xentrace
			 * host records no network or hypercall payloads), or the pairs did not do */
			const struct vms_match_stats *ms = vms_model_match_stats(m);
			bool none = !ms || ms->causes + ms->effects == 0;
			fprintf(stderr, "vmscope %s: warning: %s shares no clock with %s (no TIME_SHIFT, %s): "
					"its times are taken as they are and cannot be compared with the "
					"reference (--offset %s=NS sets its offset; docs/recording.md says what to "
					"record for a sync)\n", c->cmd, cli_text(mc->name),
				cli_text(cli_machine_name(m, si->reference)),
				none ? "no events that can be matched across the traces for the convex hull"
				     : "no usable matched pairs: see vmscope sync", cli_text(mc->name));
		}
		if (si->method == VMS_SYNC_HULL && si->refused)
			fprintf(stderr, "vmscope %s: warning: %s: the convex hull's slope %.9Lg is %.0Lf ppm "
					"from 1, more than the %d ppm two NTP-disciplined clocks can drift: "
					"refused (--clock-model linear takes it)\n", c->cmd, cli_text(mc->name),
				si->alpha, (si->alpha - 1.0L) * 1e6L, VMS_SYNC_MAX_DRIFT_PPM);
		if (si->method == VMS_SYNC_HULL && si->offset_only && si->quality == VMS_SYNC_Q_FAIL)
			fprintf(stderr, "vmscope %s: warning: %s: its messages contradict the known slope "
					"to its host (no offset satisfies them all): not used "
					"(--clock-model linear fits a slope)\n", c->cmd, cli_text(mc->name));
		if (si->offset_how == VMS_OFFSET_TOO_WIDE || si->offset_how == VMS_OFFSET_TOO_DENSE)
			fprintf(stderr, "vmscope %s: warning: %s: the offset is the middle of the feasible "
					"interval (%.0f .. %.0f ns): %s, beyond the containment search's "
					"bound\n", c->cmd, cli_text(mc->name), si->feasible_lo_ns,
				si->feasible_hi_ns, si->offset_how == VMS_OFFSET_TOO_WIDE
				? "the interval is wider than 1,048,576 ns"
				: "more than 1,048,576 guest events and windows within it at once");
		if (si->has_containment && si->contain_total &&
		    (double)si->contained < 0.9 * (double)si->contain_total)
			fprintf(stderr, "vmscope %s: warning: %s: only %.2f%% of %" PRIu64 " guest events "
					"fall inside guest mode (containment): the clock sync or the vCPU "
					"mapping is probably wrong\n", c->cmd, cli_text(mc->name),
				100.0 * (double)si->contained / (double)si->contain_total,
				si->contain_total);
		if (mc->source < 0)
			continue;
		/* roles forced against what the data says */
		const struct vms_source *src = vms_session_source(s, (uint32_t)mc->source);
		const char *path = src->path;
		uint64_t exits = kind_count(s, (uint32_t)mc->source, VMS_K_KVM_EXIT);
		if (c->sopts.host_path && same_file(c->sopts.host_path, path) && exits == 0 &&
		    (src->meta.timeshift || src->meta.nr_guests == 0))
			fprintf(stderr, "vmscope %s: warning: --host %s: its data has no kvm_exit event%s; "
					"it does not look like a KVM host\n", c->cmd, path,
				src->meta.timeshift ? " and a guest's TIME_SHIFT option" : "");
		for (uint32_t g = 0; g < c->sopts.nr_guests; g++)
			if (same_file(c->sopts.guest_paths[g], path) && (exits || src->meta.nr_guests))
				fprintf(stderr, "vmscope %s: warning: --guest %s=%s: its data says it is a "
						"host (%" PRIu64 " kvm_exit events, %u GUEST options)\n",
					c->cmd, c->sopts.guest_names[g], path, exits,
					src->meta.nr_guests);
	}
}

int cli_begin(struct cli *c, int argc, char **argv, unsigned allow, const char *usage)
{
	int st = cli_parse(c, argc, argv, allow, usage);
	if (st) {
		cli_free(c);
		return st - 1000;
	}
	cli_dedupe_paths(c);
	c->s = cli_session(c, &st);
	if (!c->s) {
		cli_free(c);
		return st;
	}
	unit_is_cycles = false;
	for (uint32_t i = 0; i < vms_session_nr_sources(c->s); i++) {
		const struct vms_trace_meta *m = &vms_session_source(c->s, i)->meta;
		if (!m->ts_in_ns && !m->has_tsc2nsec) {
			if (!unit_is_cycles)
				fprintf(stderr, "vmscope %s: note: %s counts %s clock cycles and says nothing "
						"of their rate (no TSC2NSEC): times are in cycles; give "
						"--tsc-hz HZ (the TSC rate, e.g. from `dmesg | grep 'tsc: "
						"Refined'`) for nanoseconds\n", c->cmd,
					vms_session_source(c->s, i)->path, m->clock[0] ? m->clock : "?");
			unit_is_cycles = true;
		}
	}
	c->f = cli_output(c);
	if (!c->f)
		return cli_end(c, cli_open_exit(errno));
	return CLI_GO;
}

/* What the steal tables sum instead of itemising (vms_steal_entry's buckets): never in a
 * normal trace, so it is said when it happens. */
static void warn_steal_buckets(const struct cli *c)
{
	struct vms_analysis *a = vms_session_analysis(c->s);
	struct vms_model *m = vms_session_model(c->s);
	if (!a || !m)
		return;
	uint32_t nu;
	const struct vms_unattributed *u = vms_analysis_unattributed(a, &nu);
	char b[32];
	for (uint32_t i = 0; i < nu; i++)
		fprintf(stderr, "vmscope %s: warning: %s CPU %u: %llu vCPUs waited there beyond the "
				"first %d at once: their %s preempted is counted, but who ran "
				"meanwhile is not followed (\"unattributed\")\n", c->cmd,
			cli_text(cli_machine_name(m, u[i].host)), u[i].cpu,
			(unsigned long long)u[i].vcpus, VMS_INSTEAD_MAX_WAITERS,
			cli_ns(u[i].ns, b, sizeof b));
	uint64_t nv = 0, ns = 0;
	for (uint32_t i = 0; i < vms_analysis_nr_vcpus(a); i++) {
		const struct vms_vcpu_stats *v = vms_analysis_vcpu(a, i);
		bool any = false; /* (a nested guest's vCPU: one bucket per layer) */
		for (uint32_t k = 0; k < v->nr_steal; k++)
			if (v->steal[k].kind == VMS_STEAL_OTHERS) {
				any = true;
				ns += v->steal[k].ns;
			}
		nv += any;
	}
	if (nv)
		fprintf(stderr, "vmscope %s: warning: %llu vCPUs had their CPU taken by more threads "
				"than are itemised (the first %d of each, %u in all): the others' "
				"%s is summed as \"other threads\"\n", c->cmd, (unsigned long long)nv,
			VMS_STEAL_MAX_THIEVES, VMS_STEAL_MAX_ENTRIES, cli_ns(ns, b, sizeof b));
}

int cli_run(struct cli *c, const struct vms_sinks *sinks)
{
	struct vms_error err = { 0 };
	if (vms_session_run(c->s, sinks, NULL, NULL, &err) < 0)
		return cli_fail(c, &err);
	cli_warn_model(c);
	warn_steal_buckets(c);
	return 0;
}

int cli_end(struct cli *c, int status)
{
	if (c->f && c->f != stdout) {
		bool bad = ferror(c->f) != 0;
		if ((fclose(c->f) != 0 || bad) && status == 0) {
			fprintf(stderr, "vmscope %s: cannot write %s\n", c->cmd, c->out);
			status = VMS_EXIT_FAIL;
		}
		/* bad input or usage (a window or selector found wrong once the traces are read)
		 * produced nothing: its -o file is not left behind as if it were a result (only a
		 * regular file, never a FIFO or a device) */
		struct stat sb;
		if (status == VMS_EXIT_USAGE && stat(c->out, &sb) == 0 && S_ISREG(sb.st_mode))
			unlink(c->out);
	}
	if (c->f == stdout) {
		/* the same for what is still buffered (a header written before the run found the
		 * usage error) */
		if (status == VMS_EXIT_USAGE)
			__fpurge(stdout);
		errno = 0;
		if ((fflush(stdout) != 0 || ferror(stdout)) && status == 0)
			status = cli_write_failed(c->cmd, errno);
	}
	c->f = NULL;
	/* after reading: a reader may find a format it cannot read on its first event */
	if (c->s)
		cli_warn_formats(c->cmd, c->s);
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
	vms_json_double(j, cli_key("offset"), si->offset_ns);
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
