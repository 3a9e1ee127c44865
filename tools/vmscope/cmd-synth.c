/* vmscope synth: write a realistic SIMULATED host + guest trace.dat pair (and its ground
 * truth as JSON), for the demo, the benchmarks and the round-trip tests. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vmscope/synth.h"
#include "vmscope/writers.h"
#include "cli.h"
#include "cmds.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vmscope synth [--scenario NAME] [--seed N] [--events N] [--out DIR]\n"
		"                     [--truth FILE] [--truth-wakeups FILE]\n"
		"                     [--compression zstd|zlib|none] [--level N]\n"
		"                     [--no-tsc-scaling] [--format tracedat|lttng]\n"
		"                     [--clock-error NS]\n"
		"       vmscope synth --hosts N [--seed N] [--events N] [--out DIR]\n"
		"       vmscope synth --scenario cloud-host [--guests N] [--vcpus M]\n"
		"                     [--host-cpus C] [--traced K] [--seed N] [--events N]\n"
		"                     [--out DIR] [--truth FILE]\n"
		"       vmscope synth --scenario nested [--vcpus M] [--seed N] [--events N]\n"
		"                     [--out DIR] [--truth FILE]\n"
		"\n"
		"Writes DIR/host.dat and DIR/guest.dat, a SIMULATED KVM host and guest recorded the\n"
		"way trace-cmd records them (trace.dat v7, TSC clock with TSC2NSEC, GUEST and\n"
		"TIME_SHIFT options), deterministic from the seed.\n"
		"\n"
		"  --scenario NAME     noisy-neighbour (default): a stress-ng process preempts the\n"
		"                      guest's vCPU threads; quiet: the same host without it.\n"
		"                      Wake-up scenarios, whose guest thread wake-ups have planted\n"
		"                      causes (see vmscope latency): noisy-wakeups (a host stress-ng\n"
		"                      preempts the vCPU nginx is woken onto), exit-storm (8,000\n"
		"                      EPT_MISCONFIG exits from one guest RIP in 100 ms; the guest\n"
		"                      trace carries kallsyms), halted-wakeup (nginx woken onto a\n"
		"                      halted vCPU), oversubscribed (more runnable guest threads\n"
		"                      than vCPUs), cross-vcpu (the waker on the other vCPU).\n"
		"                      cloud-host: DIR/host.dat of an oversubscribed host running\n"
		"                      N guests x M vCPUs, guests 0..K-1 traced (DIR/guest-K.dat);\n"
		"                      a host stress-ng on every odd CPU and the untraced guests\n"
		"                      3 mod 4 (CPU-bound) preempt the traced vCPUs.\n"
		"                      nested: DIR/host.dat (L0), DIR/l1.dat (L1, L0's guest and\n"
		"                      L2's hypervisor) and DIR/l2.dat (L2, L1's guest), each with\n"
		"                      TIME_SHIFT to the layer below (its own offset and ratio):\n"
		"                      L0 and L1 preemptions, L0 exits and exits reflected to L1\n"
		"  --guests N          cloud-host: guests, 1 to 1024 (default 64)\n"
		"  --vcpus M           cloud-host: vCPUs per guest, 1 to 64 (default 8); nested:\n"
		"                      vCPUs at each layer, 1 to 16 (default 2)\n"
		"  --host-cpus C       cloud-host: host CPUs, 1 to 1024 (default: one per 8 vCPUs,\n"
		"                      at least K x M; at most 32 vCPU threads per CPU)\n"
		"  --traced K          cloud-host: traced guests, 0 to 64 (default 2)\n"
		"  --hosts N           a fleet: DIR/host-000 ... DIR/host-(N-1), each a pair with\n"
		"                      seed N+i; every 4th host from host-001 has a noisy neighbour,\n"
		"                      every 4th from host-003 an exit storm, the rest are quiet;\n"
		"                      kernel labels 6.1 (even) and 6.6 (odd); what was planted in\n"
		"                      DIR/fleet.json (--events is per host, default 50000)\n"
		"  --seed N            PRNG seed (default 1)\n"
		"  --events N          about N events in the two files together (default 200000;\n"
		"                      k, M, G suffixes accepted)\n"
		"  --out DIR           output directory (default vmscope-demo), created if needed\n"
		"  --truth FILE        also write what was planted (vCPU states, exits, steal, event\n"
		"                      counts; wake-up scenarios: the findings report should make)\n"
		"                      as JSON; '-' for stdout\n"
		"  --truth-wakeups FILE  wake-up scenarios: every planted wake-up's breakdown as CSV,\n"
		"                      the columns of vmscope latency --csv, then vcpu,waker_vcpu\n"
		"  --compression C     zstd (default; what trace-cmd 3.1 reads), zlib or none\n"
		"  --level N           compression level (default: zstd -1, its fast mode; zlib 1)\n"
		"  --no-tsc-scaling    the guest TSC runs at the host's rate (ratio 1)\n"
		"  --format F          tracedat (default), or lttng: DIR/host and DIR/guest as\n"
		"                      LTTng kernel CTF traces (monotonic ns clocks with their epoch\n"
		"                      offsets, statedump, vmsync message pairs; same scenario)\n"
		"  --clock-error NS    lttng: the guest's clock offset is off by NS nanoseconds (for\n"
		"                      testing synchronization; default 0)\n"
		"  --help              this text\n");
}

static int parse_count(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	uint64_t mul = 1;
	if (*end == 'k' || *end == 'K')
		mul = 1000, end++;
	else if (*end == 'M')
		mul = 1000000, end++;
	else if (*end == 'G')
		mul = 1000000000, end++;
	if (*end || (v && mul > UINT64_MAX / v))
		return -1;
	*out = v * mul;
	return 0;
}

static void progress(void *ctx, uint64_t done, uint64_t target)
{
	(void)ctx;
	fprintf(stderr, "\rvmscope synth: %.1f M of %.1f M events (%3.0f%%)", done / 1e6, target / 1e6,
		target ? 100.0 * (double)done / (double)target : 0.0);
}

/* A file to write, never through a symlink at the name (O_NOFOLLOW); '-' is stdout. */
static FILE *open_out(const char *path)
{
	if (!strcmp(path, "-"))
		return stdout;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f && fd >= 0)
		close(fd);
	return f;
}

/* One planted wake-up as a row of `vmscope latency --csv`, then its vCPU and the waker's. */
static void wakeup_row(void *ctx, const struct vms_synth_wakeup *w)
{
	FILE *f = ctx;
	fprintf(f, "demo-guest,%d,", w->tid);
	vms_csv_string(f, w->comm);
	fprintf(f, ",%llu,%llu,%llu", (unsigned long long)w->wakeup, (unsigned long long)w->run,
		(unsigned long long)w->latency);
	for (int k = 0; k < VMS_SYNTH_NCAUSES; k++)
		fprintf(f, ",%llu", (unsigned long long)w->ns[k]);
	fprintf(f, ",%s,", vms_synth_cause_name(w->top));
	vms_csv_string(f, w->culprit);
	fprintf(f, ",%u,%d\n", w->vcpu, w->waker_vcpu);
}

static long long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) ? -1 : (long long)st.st_size;
}

/* --hosts N: the pairs of a fleet, one directory each, and its truth (vmscope/synth.h) */
static int fleet(const struct vms_synth_config *base, const char *out, uint32_t n)
{
	if (mkdir(out, 0777) && errno != EEXIST) {
		int e = errno;
		fprintf(stderr, "vmscope synth: cannot create %s: %s\n", out, strerror(e));
		return cli_open_exit(e);
	}
	size_t len = strlen(out) + 64;
	char *dir = malloc(len), *host = malloc(len), *guest = malloc(len);
	struct vms_synth_truth *truth = calloc(1, sizeof *truth);
	int status = VMS_EXIT_OK;
	if (!dir || !host || !guest || !truth) {
		fprintf(stderr, "vmscope synth: out of memory\n");
		status = VMS_EXIT_FAIL;
	}
	uint64_t events = 0;
	for (uint32_t i = 0; i < n && !status; i++) {
		struct vms_synth_fleet_host h;
		vms_synth_fleet_host(i, base->seed, &h);
		snprintf(dir, len, "%s/%s", out, h.name);
		snprintf(host, len, "%s/host.dat", dir);
		snprintf(guest, len, "%s/guest.dat", dir);
		if (mkdir(dir, 0777) && errno != EEXIST) {
			int e = errno;
			fprintf(stderr, "vmscope synth: cannot create %s: %s\n", dir, strerror(e));
			status = cli_open_exit(e);
			break;
		}
		struct vms_synth_config cfg = *base;
		cfg.scenario = h.scenario;
		cfg.seed = h.seed;
		cfg.host_path = host;
		cfg.guest_path = guest;
		struct vms_error err = { 0 };
		int rc = vms_synth_run(&cfg, truth, &err);
		if (rc) {
			fprintf(stderr, "vmscope synth: %s: %s\n", h.name, err.msg);
			status = rc == VMS_ERR_USAGE ? VMS_EXIT_USAGE : VMS_EXIT_FAIL;
		}
		events += truth->host.total + truth->guest.total;
	}
	if (!status) {
		snprintf(dir, len, "%s/fleet.json", out);
		FILE *f = open_out(dir);
		if (!f || vms_synth_fleet_truth_json(n, base->seed, f) || fclose(f)) {
			int e = errno;
			fprintf(stderr, "vmscope synth: cannot write %s: %s\n", dir, strerror(e));
			status = f ? VMS_EXIT_FAIL : cli_open_exit(e);
		} else {
			fprintf(stderr, "vmscope synth: SIMULATED fleet: %u hosts in %s (%llu events), "
				"what was planted in %s\n", n, out, (unsigned long long)events, dir);
		}
	}
	free(dir);
	free(host);
	free(guest);
	free(truth);
	return status;
}

/* --scenario cloud-host: DIR/host.dat and DIR/guest-K.dat (vmscope/synth.h) */
static int cloud_host(struct vms_synth_config *cfg, struct vms_synth_cloud_config *cc,
		      const char *out, const char *truth_path, const char *wakeups_path)
{
	const char *why = vms_synth_cloud_check(cc);
	if (why || wakeups_path || cfg->format != VMS_SYNTH_TRACEDAT) {
		fprintf(stderr, "vmscope synth: %s\n", why ? why : "cloud-host writes trace.dat and "
			"has no --truth-wakeups");
		return VMS_EXIT_USAGE;
	}
	if (mkdir(out, 0777) && errno != EEXIST) {
		int e = errno;
		fprintf(stderr, "vmscope synth: cannot create %s: %s\n", out, strerror(e));
		return cli_open_exit(e);
	}
	cc->dir = out;
	if (isatty(2) && cfg->events >= 2000000)
		cfg->progress = progress;
	struct vms_synth_cloud_truth truth;
	struct vms_error err = { 0 };
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = vms_synth_cloud_run(cfg, cc, &truth, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (cfg->progress)
		fprintf(stderr, "\r\033[K");
	int status = VMS_EXIT_OK;
	if (rc) {
		fprintf(stderr, "vmscope synth: %s\n", err.msg);
		status = rc == VMS_ERR_USAGE ? VMS_EXIT_USAGE : VMS_EXIT_FAIL;
	} else if (truth_path) {
		FILE *f = open_out(truth_path);
		if (!f || vms_synth_cloud_truth_json(&truth, f) || (f != stdout && fclose(f))) {
			int e = errno;
			fprintf(stderr, "vmscope synth: cannot write %s: %s\n", truth_path, strerror(e));
			status = f ? VMS_EXIT_FAIL : cli_open_exit(e);
		}
	}
	if (!status) {
		uint64_t total = truth.head.host.total;
		for (uint32_t g = 0; g < cc->traced; g++)
			total += truth.guest[g].file.total;
		double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		fprintf(stderr, "vmscope synth: SIMULATED data (scenario cloud-host, seed %llu): %u "
			"guests x %u vCPUs on %u host CPUs, %u traced: %s/host.dat + %u guest files "
			"(%llu events), %.2f s of host time, written in %.2f s\n",
			(unsigned long long)cfg->seed, cc->guests, cc->vcpus, cc->host_cpus, cc->traced,
			out, cc->traced, (unsigned long long)total,
			(double)(truth.head.window_end_ns - truth.head.window_start_ns) / 1e9, secs);
	}
	vms_synth_cloud_truth_free(&truth);
	return status;
}

/* --scenario nested: DIR/host.dat, DIR/l1.dat, DIR/l2.dat (vmscope/synth.h) */
static int nested(struct vms_synth_config *cfg, const char *out, const char *truth_path,
		  const char *wakeups_path)
{
	if (wakeups_path || cfg->format != VMS_SYNTH_TRACEDAT) {
		fprintf(stderr, "vmscope synth: nested writes trace.dat and has no --truth-wakeups\n");
		return VMS_EXIT_USAGE;
	}
	if (mkdir(out, 0777) && errno != EEXIST) {
		int e = errno;
		fprintf(stderr, "vmscope synth: cannot create %s: %s\n", out, strerror(e));
		return cli_open_exit(e);
	}
	FILE *f = NULL;
	if (truth_path && !(f = open_out(truth_path))) {
		int e = errno;
		fprintf(stderr, "vmscope synth: cannot write %s: %s\n", truth_path, strerror(e));
		return cli_open_exit(e);
	}
	struct vms_error err = { 0 };
	uint64_t events = 0;
	int rc = vms_synth_nested_run(cfg, out, f, &events, &err);
	int status = VMS_EXIT_OK;
	if (rc) {
		fprintf(stderr, "vmscope synth: %s\n", err.msg);
		status = VMS_EXIT_FAIL;
	}
	if (f && f != stdout && fclose(f) && !status) {
		fprintf(stderr, "vmscope synth: cannot write %s: %s\n", truth_path, strerror(errno));
		status = VMS_EXIT_FAIL;
	}
	if (!status)
		fprintf(stderr, "vmscope synth: SIMULATED data (scenario nested, seed %llu): "
			"%s/host.dat, l1.dat, l2.dat (%llu events)\n", (unsigned long long)cfg->seed,
			out, (unsigned long long)events);
	return status;
}

int cmd_synth(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "scenario", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ "events", required_argument, NULL, 'n' },
		{ "out", required_argument, NULL, 'o' },
		{ "truth", required_argument, NULL, 't' },
		{ "truth-wakeups", required_argument, NULL, 'W' },
		{ "compression", required_argument, NULL, 'c' },
		{ "level", required_argument, NULL, 'l' },
		{ "no-tsc-scaling", no_argument, NULL, 'N' },
		{ "format", required_argument, NULL, 'f' },
		{ "clock-error", required_argument, NULL, 'e' },
		{ "hosts", required_argument, NULL, 'H' },
		{ "guests", required_argument, NULL, 'G' },
		{ "vcpus", required_argument, NULL, 'V' },
		{ "host-cpus", required_argument, NULL, 'C' },
		{ "traced", required_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t hosts = 0;
	struct vms_synth_cloud_config cloud;
	vms_synth_cloud_config_init(&cloud);
	bool cloud_given = false, cpus_given = false, vcpus_given = false;
	bool scenario_given = false, events_given = false;
	struct vms_synth_config cfg;
	vms_synth_config_init(&cfg);
	const char *out = "vmscope-demo", *truth_path = NULL, *wakeups_path = NULL;
	int c;
	optind = 1;
	opterr = 0;
	opterr = 0;   /* our messages only */
	char ob[8];   /* cli_bad_option's "-c" */
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			cfg.scenario = optarg;
			scenario_given = true;
			break;
		case 'H':
			if (parse_count(optarg, &hosts) || hosts < 1 || hosts > 10000) {
				fprintf(stderr, "vmscope synth: --hosts wants a number from 1 to 10000, not "
					"'%s'\n", optarg);
				return VMS_EXIT_USAGE;
			}
			break;
		case 'G':
		case 'V':
		case 'C':
		case 'K': {
			uint64_t v;
			if (parse_count(optarg, &v) || v > 100000) {
				fprintf(stderr, "vmscope synth: --%s wants a number, not '%s'\n",
					c == 'G' ? "guests" : c == 'V' ? "vcpus" : c == 'C' ? "host-cpus"
					: "traced", optarg);
				return VMS_EXIT_USAGE;
			}
			*(c == 'G' ? &cloud.guests : c == 'V' ? &cloud.vcpus : c == 'C' ? &cloud.host_cpus
			  : &cloud.traced) = (uint32_t)v;
			cloud_given |= c != 'V';   /* (--vcpus is nested's too) */
			vcpus_given |= c == 'V';
			cpus_given |= c == 'C';
			break;
		}
		case 'S':
			if (parse_count(optarg, &cfg.seed)) {
				fprintf(stderr, "vmscope synth: --seed wants a number, not '%s'\n", optarg);
				return VMS_EXIT_USAGE;
			}
			break;
		case 'n':
			if (parse_count(optarg, &cfg.events) || cfg.events < 1000) {
				fprintf(stderr, "vmscope synth: --events wants a number >= 1000, not '%s'\n",
					optarg);
				return VMS_EXIT_USAGE;
			}
			events_given = true;
			break;
		case 'o':
			out = optarg;
			break;
		case 't':
			truth_path = optarg;
			break;
		case 'W':
			wakeups_path = optarg;
			break;
		case 'c':
			if (!strcmp(optarg, "zstd"))
				cfg.compression = VMS_SYNTH_ZSTD;
			else if (!strcmp(optarg, "zlib"))
				cfg.compression = VMS_SYNTH_ZLIB;
			else if (!strcmp(optarg, "none"))
				cfg.compression = VMS_SYNTH_NONE;
			else {
				fprintf(stderr, "vmscope synth: --compression is zstd, zlib or none, not '%s'\n",
					optarg);
				return VMS_EXIT_USAGE;
			}
			break;
		case 'N':
			cfg.tsc_scaling = false;
			break;
		case 'f':
			if (!strcmp(optarg, "tracedat"))
				cfg.format = VMS_SYNTH_TRACEDAT;
			else if (!strcmp(optarg, "lttng"))
				cfg.format = VMS_SYNTH_LTTNG;
			else {
				fprintf(stderr, "vmscope synth: --format is tracedat or lttng, not '%s'\n",
					optarg);
				return VMS_EXIT_USAGE;
			}
			break;
		case 'e': {
			char *end;
			errno = 0;
			long long v = strtoll(optarg, &end, 10);
			if (errno || *end || end == optarg || v < -3600000000000ll || v > 3600000000000ll) {
				fprintf(stderr, "vmscope synth: --clock-error wants nanoseconds (within an "
					"hour), not '%s'\n", optarg);
				return VMS_EXIT_USAGE;
			}
			cfg.clock_error_ns = v;
			break;
		}
		case 'l': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || end == optarg || v < -100 || v > 22 || v == 0) {
				fprintf(stderr, "vmscope synth: --level wants a compression level (zstd "
					"-100..22 but not 0, zlib 1..9), not '%s'\n", optarg);
				return VMS_EXIT_USAGE;
			}
			cfg.level = (int)v;
			break;
		}
		case 'h':
			usage(stdout);
			return VMS_EXIT_OK;
		default:
			fprintf(stderr, "vmscope synth: unknown option '%s'\n",
				cli_bad_option(argv, ob, sizeof ob));
			usage(stderr);
			return VMS_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vmscope synth: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return VMS_EXIT_USAGE;
	}
	if (cfg.level && cfg.compression == VMS_SYNTH_ZLIB && (cfg.level < 1 || cfg.level > 9)) {
		fprintf(stderr, "vmscope synth: zlib levels are 1..9, not %d\n", cfg.level);
		return VMS_EXIT_USAGE;
	}
	if (hosts) {
		if (scenario_given || truth_path || wakeups_path || cfg.format != VMS_SYNTH_TRACEDAT) {
			fprintf(stderr, "vmscope synth: --hosts plans each host's scenario and writes "
				"trace.dat and DIR/fleet.json: no --scenario, --truth, --truth-wakeups or "
				"--format with it\n");
			return VMS_EXIT_USAGE;
		}
		if (!events_given)
			cfg.events = 50000;
		return fleet(&cfg, out, (uint32_t)hosts);
	}
	bool is_cloud = !strcmp(cfg.scenario, "cloud-host");
	bool is_nested = !strcmp(cfg.scenario, "nested");
	if ((cloud_given && !is_cloud) || (vcpus_given && !is_cloud && !is_nested)) {
		fprintf(stderr, "vmscope synth: --guests, --host-cpus and --traced are for "
			"--scenario cloud-host, --vcpus for cloud-host and nested\n");
		return VMS_EXIT_USAGE;
	}
	if (is_nested && vcpus_given) {
		if (cloud.vcpus < 1 || cloud.vcpus > VMS_SYNTH_NESTED_MAX_VCPUS) {
			fprintf(stderr, "vmscope synth: nested: --vcpus wants 1 to %d, not %u\n",
				VMS_SYNTH_NESTED_MAX_VCPUS, cloud.vcpus);
			return VMS_EXIT_USAGE;
		}
		cfg.nested_vcpus = cloud.vcpus;
	}
	if (is_cloud) {
		if (!cpus_given)
			cloud.host_cpus = vms_synth_cloud_default_cpus(cloud.guests, cloud.vcpus,
								       cloud.traced);
		return cloud_host(&cfg, &cloud, out, truth_path, wakeups_path);
	}
	if (!strcmp(cfg.scenario, "nested"))
		return nested(&cfg, out, truth_path, wakeups_path);
	bool known = false;
	for (const char *const *s = vms_synth_scenarios; *s; s++)
		known |= !strcmp(*s, cfg.scenario);
	if (!known) {
		fprintf(stderr, "vmscope synth: unknown scenario '%s' (", cfg.scenario);
		for (const char *const *s = vms_synth_scenarios; *s; s++)
			fprintf(stderr, "%s%s", *s, s[1] ? ", " : ")\n");
		return VMS_EXIT_USAGE;
	}
	bool wakeups = false;
	for (const char *const *s = vms_synth_wakeup_scenarios; *s; s++)
		wakeups |= !strcmp(*s, cfg.scenario);
	if (wakeups && cfg.format != VMS_SYNTH_TRACEDAT) {
		fprintf(stderr, "vmscope synth: scenario %s writes trace.dat only\n", cfg.scenario);
		return VMS_EXIT_USAGE;
	}
	if (wakeups_path && !wakeups) {
		fprintf(stderr, "vmscope synth: --truth-wakeups wants a wake-up scenario (noisy-wakeups, "
			"exit-storm, halted-wakeup, oversubscribed, cross-vcpu)\n");
		return VMS_EXIT_USAGE;
	}
	if (mkdir(out, 0777) && errno != EEXIST) {
		int e = errno;
		fprintf(stderr, "vmscope synth: cannot create %s: %s\n", out, strerror(e));
		return cli_open_exit(e);
	}
	size_t n = strlen(out) + 16;
	char *host = malloc(n), *guest = malloc(n);
	struct vms_synth_truth *truth = calloc(1, sizeof *truth);
	if (!host || !guest || !truth) {
		free(host);
		free(guest);
		free(truth);
		fprintf(stderr, "vmscope synth: out of memory\n");
		return VMS_EXIT_FAIL;
	}
	bool lttng = cfg.format == VMS_SYNTH_LTTNG;
	snprintf(host, n, "%s/%s", out, lttng ? "host" : "host.dat");
	snprintf(guest, n, "%s/%s", out, lttng ? "guest" : "guest.dat");
	cfg.host_path = host;
	cfg.guest_path = guest;
	bool tty = isatty(2);
	if (tty && cfg.events >= 2000000)
		cfg.progress = progress;
	FILE *wf = NULL;
	int status = VMS_EXIT_OK;
	if (wakeups_path) {
		if (!(wf = open_out(wakeups_path))) {
			int e = errno;
			fprintf(stderr, "vmscope synth: cannot write %s: %s\n", wakeups_path, strerror(e));
			status = cli_open_exit(e);
			goto out;
		}
		fprintf(wf, "machine,tid,comm,wakeup,run,latency_ns,guest_runqueue_ns,preempted_ns,"
			"exits_ns,halted_wakeup_ns,unknown_ns,top_cause,culprit,vcpu,waker_vcpu\n");
		cfg.wakeup = wakeup_row;
		cfg.wakeup_ctx = wf;
	}

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct vms_error err = { 0 };
	int rc = vms_synth_run(&cfg, truth, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (cfg.progress)
		fprintf(stderr, "\r\033[K");
	if (wf && (ferror(wf) || (wf != stdout && fclose(wf)) || (wf == stdout && fflush(wf)))) {
		wf = NULL;
		fprintf(stderr, "vmscope synth: cannot write %s: %s\n", wakeups_path, strerror(errno));
		status = VMS_EXIT_FAIL;
		goto out;
	}
	wf = NULL;
	if (rc) {
		fprintf(stderr, "vmscope synth: %s\n", err.msg);
		status = rc == VMS_ERR_USAGE ? VMS_EXIT_USAGE : VMS_EXIT_FAIL;
		goto out;
	}
	if (truth_path) {
		FILE *f = open_out(truth_path);
		if (!f || vms_synth_truth_write_json(truth, f) || (f != stdout && fclose(f))) {
			int e = errno;
			fprintf(stderr, "vmscope synth: cannot write %s: %s\n", truth_path, strerror(e));
			status = f ? VMS_EXIT_FAIL : cli_open_exit(e);
			goto out;
		}
	}
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	uint64_t total = truth->host.total + truth->guest.total;
	fprintf(stderr, "vmscope synth: SIMULATED data (scenario %s, seed %llu): %s (%llu events, "
		"%.1f MB) + %s (%llu events, %.1f MB), %.2f s of host time, written in %.2f s "
		"(%.1f M events/s)\n", cfg.scenario, (unsigned long long)cfg.seed, host,
		(unsigned long long)truth->host.total, lttng ? 0.0 : file_size(host) / 1e6, guest,
		(unsigned long long)truth->guest.total, lttng ? 0.0 : file_size(guest) / 1e6,
		(double)(truth->window_end_ns - truth->window_start_ns) / 1e9, secs,
		secs > 0 ? (double)total / secs / 1e6 : 0.0);
out:
	free(host);
	free(guest);
	free(truth);
	return status;
}
