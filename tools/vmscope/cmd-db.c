/* vmscope db: the analysis as SQL tables (docs/schema.md) in SQLite (--sqlite FILE) or a
 * ClickHouse server (--clickhouse URL), one capture per run, and the fleet queries over them
 * (--query NAME, docs/fleet.md). The writer is lib/output/db_capture.c; this file parses the
 * options, names the capture and reports what was written. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "vmscope/db.h"
#include "vmscope/source.h"

static const char usage[] =
	"usage: vmscope db (--sqlite FILE | --clickhouse URL[,URL...] [--cluster NAME])\n"
	"                  [--host-name NAME] [--kernel LABEL] [--replace] [--batch-rows N]\n"
	"                  [--tsc-hz HZ] [--host FILE] [--guest NAME=FILE] [--map ...] TRACE...\n"
	"       vmscope db --query NAME (--sqlite FILE | --clickhouse URL [--cluster NAME])\n"
	"                  [--csv | --print-sql]\n"
	"       vmscope db --schema\n"
	"\n"
	"Writes what vmscope computes for one host's traces (a capture) into a database: the\n"
	"tables captures, machines, vcpus, vcpu_intervals, thread_intervals, pcpu_intervals,\n"
	"exits, exit_stats, steal, wakeups and findings (docs/schema.md, --schema), every row\n"
	"with its capture, so that many hosts' captures live in one database. The capture's id\n"
	"comes from the host name, the files' identity and vmscope's version: loading the same\n"
	"capture again writes nothing (--replace writes it again).\n"
	"\n"
	"  --sqlite FILE       an SQLite file, created with the schema when missing; one\n"
	"                      transaction per capture\n"
	"  --clickhouse URL    a ClickHouse server's HTTP interface (http://127.0.0.1:8123);\n"
	"                      MergeTree tables created when missing; the capture's row in\n"
	"                      captures is written last, as its commit marker\n"
	"  --cluster NAME      ClickHouse: write and query the Distributed tables <t>_all over\n"
	"                      the cluster NAME (every shard's URL given, the first one asked)\n"
	"  --host-name NAME    the host's name in captures (default: the host machine's name)\n"
	"  --kernel LABEL      the host's kernel, for the fleet queries (default: NULL)\n"
	"  --replace           write a capture that is already there again\n"
	"  --batch-rows N      ClickHouse: rows per INSERT (default 65536; 4 MiB at most)\n"
	"  --query NAME        run a fleet query and print its table: top-steal, exit-storms,\n"
	"                      wakeup-p99, wakeup-p99-kernel (docs/fleet.md)\n"
	"  --csv               --query: CSV\n"
	"  --print-sql         --query: print the query's SQL for the backend, do not run it\n"
	"  --schema            print the schema (docs/schema.md)\n"
	CLI_HELP_OUTPUT CLI_HELP_ROLES;

struct dbopts {
	const char *sqlite, *clickhouse, *cluster, *query, *host_name, *kernel;
	bool replace, csv, schema, help, print_sql;
	uint32_t batch_rows;
};

/* Takes db's own options out of argv (the rest go to cli_begin); -1 on a usage error. */
static int take_options(int *argc, char **argv, struct dbopts *o)
{
	static const struct { const char *name; size_t off; } vals[] = {
		{ "--sqlite", offsetof(struct dbopts, sqlite) },
		{ "--clickhouse", offsetof(struct dbopts, clickhouse) },
		{ "--cluster", offsetof(struct dbopts, cluster) },
		{ "--query", offsetof(struct dbopts, query) },
		{ "--host-name", offsetof(struct dbopts, host_name) },
		{ "--kernel", offsetof(struct dbopts, kernel) },
		{ "--batch-rows", SIZE_MAX },   /* a number, below */
	};
	int w = 1;
	for (int i = 1; i < *argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			while (i < *argc)
				argv[w++] = argv[i++];
			break;
		}
		static const struct { const char *name; size_t off; } flags[] = {
			{ "--replace", offsetof(struct dbopts, replace) },
			{ "--schema", offsetof(struct dbopts, schema) },
			{ "--csv", offsetof(struct dbopts, csv) },
			{ "--print-sql", offsetof(struct dbopts, print_sql) },
		};
		bool flag = false;
		for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
			if (!strcmp(a, flags[k].name))
				flag = *(bool *)((char *)o + flags[k].off) = true;
		if (flag)
			continue;
		if (!strcmp(a, "--help") || !strcmp(a, "-h"))
			o->help = true;
		bool taken = false;
		for (size_t k = 0; k < sizeof vals / sizeof vals[0] && !taken; k++) {
			size_t n = strlen(vals[k].name);
			if (strncmp(a, vals[k].name, n) || (a[n] && a[n] != '='))
				continue;
			const char *v = a[n] == '=' ? a + n + 1 : i + 1 < *argc ? argv[++i] : NULL;
			if (!v) {
				fprintf(stderr, "vmscope db: %s wants a value\n", vals[k].name);
				return -1;
			}
			if (vals[k].off != SIZE_MAX) {
				*(const char **)((char *)o + vals[k].off) = v;
			} else {
				char *end;
				unsigned long r = strtoul(v, &end, 10);
				if (*end || !*v || r < 1 || r > 10000000) {
					fprintf(stderr, "vmscope db: --batch-rows wants a number from 1 to "
						"10000000, not '%s'\n", v);
					return -1;
				}
				o->batch_rows = (uint32_t)r;
			}
			taken = true;
		}
		if (!taken)
			argv[w++] = argv[i];
	}
	*argc = w;
	argv[w] = NULL;
	return 0;
}

/* FNV-1a, 64 bits: the capture's id is a hash of what identifies it, not a secret */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
	return fnv(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

/* A file's identity: its size and the hash of its first and last MiB (a trace is not
 * rewritten in place; hashing all of it would read it twice). */
static uint64_t file_identity(const char *path, off_t size)
{
	uint64_t h = fnv(0xcbf29ce484222325ull, &size, sizeof size);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return h;
	static char buf[1 << 20];
	ssize_t n = pread(fd, buf, sizeof buf, 0);
	if (n > 0)
		h = fnv(h, buf, (size_t)n);
	off_t tail = size - (off_t)sizeof buf;
	if (size > (off_t)(2 * sizeof buf) && (n = pread(fd, buf, sizeof buf, tail)) > 0)
		h = fnv(h, buf, (size_t)n);
	close(fd);
	return h;
}

/* a directory (CTF): the files under it, in any order (their hashes are summed) */
static uint64_t dir_sum;
static size_t dir_prefix;
static int dir_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_F)
		dir_sum += fnv_str(file_identity(path, st->st_size), path + dir_prefix);
	return 0;
}

static void capture_id(struct vms_session *s, const char *host, const char *kernel,
		       char *id, size_t len)
{
	uint64_t h = fnv_str(fnv_str(fnv_str(0xcbf29ce484222325ull, host), kernel), VMSCOPE_VERSION);
	for (uint32_t i = 0; i < vms_session_nr_sources(s); i++) {
		const char *path = vms_session_source(s, i)->path;
		struct stat st;
		uint64_t f = 0;
		if (path && stat(path, &st) == 0) {
			if (S_ISDIR(st.st_mode)) {
				dir_sum = 0;
				dir_prefix = strlen(path);
				nftw(path, dir_entry, 16, FTW_PHYS);
				f = dir_sum;
			} else {
				f = file_identity(path, st.st_size);
			}
		}
		h = fnv(h, &f, sizeof f);
	}
	snprintf(id, len, "%016llx", (unsigned long long)h);
}

static const char *default_host(struct vms_model *m)
{
	for (uint32_t i = 0; i < vms_model_nr_machines(m); i++)
		if (vms_model_machine_c(m, i)->role & VMS_ROLE_HOST)
			return cli_machine_name(m, i);
	return vms_model_nr_machines(m) ? cli_machine_name(m, 0) : "?";
}

static struct vms_db *open_db(const struct dbopts *o)
{
	char err[600];
	struct vms_db *db = o->sqlite ? vms_db_open_sqlite(o->sqlite, err, sizeof err)
				      : vms_db_open_clickhouse(o->clickhouse, o->cluster, err, sizeof err);
	if (!db)
		fprintf(stderr, "vmscope db: %s\n", cli_text(err));
	else if (o->batch_rows)
		vms_db_set_batch(db, o->batch_rows, 0);
	return db;
}

/* the ClickHouse SQL of a query on a cluster: the tables after FROM are <t>_all */
static char *cluster_sql(const char *sql)
{
	size_t n = strlen(sql);
	char *out = malloc(n * 2 + 1), *w = out;
	if (!out)
		return NULL;
	for (const char *p = sql; *p;) {
		if (!strncmp(p, "FROM ", 5)) {
			memcpy(w, p, 5);
			w += 5;
			p += 5;
			size_t k = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
			memcpy(w, p, k);
			w += k;
			p += k;
			for (int t = 0; k && t < VMS_DB_NR_TABLES; t++)
				if (strlen(vms_db_table(t)->name) == k && !strncmp(p - k, vms_db_table(t)->name, k)) {
					memcpy(w, "_all", 4);
					w += 4;
				}
		} else {
			*w++ = *p++;
		}
	}
	*w = '\0';
	return out;
}

static int run_query(const struct dbopts *o)
{
	const struct vms_db_query *q = vms_db_query_named(o->query);
	if (!q) {
		fprintf(stderr, "vmscope db: --query: no query named '%s' (", cli_text(o->query));
		for (uint32_t i = 0; i < vms_db_nr_queries(); i++)
			fprintf(stderr, "%s%s", i ? ", " : "", vms_db_query_at(i)->name);
		fprintf(stderr, ")\n");
		return VMS_EXIT_USAGE;
	}
	char *sql = o->sqlite ? strdup(q->sqlite) : o->cluster ? cluster_sql(q->clickhouse)
							    : strdup(q->clickhouse);
	if (o->print_sql) {
		printf("%s\n", sql ? sql : "");
		free(sql);
		return fflush(stdout) ? cli_write_failed("db", errno) : sql ? VMS_EXIT_OK : VMS_EXIT_FAIL;
	}
	struct vms_db *db = open_db(o);
	if (!db) {
		free(sql);
		return VMS_EXIT_FAIL;
	}
	int st = sql && vms_db_query(db, sql, stdout, o->csv) == 0 ? VMS_EXIT_OK : VMS_EXIT_FAIL;
	if (st)
		fprintf(stderr, "vmscope db: --query %s: %s\n", q->name,
			sql ? cli_text(vms_db_error(db)) : "out of memory");
	free(sql);
	vms_db_close(db);
	if (fflush(stdout) != 0)
		return cli_write_failed("db", errno);
	return st;
}

/* "vcpu_intervals 12, exits 3, ..." of what was written */
static void rows_text(struct vms_db *db, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int t = 0; t < VMS_DB_NR_TABLES && n < len; t++)
		if (vms_db_rows_written(db, t))
			n += (size_t)snprintf(buf + n, len - n, "%s%s %llu", n ? ", " : "",
					      vms_db_table(t)->name,
					      (unsigned long long)vms_db_rows_written(db, t));
	if (!n)
		snprintf(buf, len, "none");
}

static int load(struct cli *c, const struct dbopts *o)
{
	struct vms_error err = { 0 };
	if (vms_session_build_model(c->s, &err) != 0)
		return cli_fail(c, &err);
	struct vms_model *m = vms_session_model(c->s);
	const char *host = o->host_name ? o->host_name : default_host(m);
	char id[32];
	capture_id(c->s, host, o->kernel, id, sizeof id);
	struct vms_db *db = open_db(o);
	if (!db)
		return VMS_EXIT_FAIL;
	const char *where = o->sqlite ? o->sqlite : o->clickhouse;
	enum vms_db_begin b = vms_db_begin(db, id, o->replace);
	if (b == VMS_DB_PRESENT) {
		fprintf(stderr, "vmscope db: capture %s (host %s) is already in %s: nothing written "
			"(--replace writes it again)\n", id, cli_text(host), cli_text(where));
		vms_db_close(db);
		return VMS_EXIT_OK;
	}
	int st = VMS_EXIT_OK;
	uint32_t nm = vms_model_nr_machines(m), ns = vms_session_nr_sources(c->s);
	const struct vms_ksyms **ks = calloc(nm ? nm : 1, sizeof *ks);
	struct vms_source **srcs = calloc(ns ? ns : 1, sizeof *srcs);
	struct vms_db_capture *cap = NULL;
	if (b == VMS_DB_FAILED)
		goto db_failed;
	if (!ks || !srcs)
		goto oom;
	for (uint32_t i = 0; i < ns; i++)
		srcs[i] = vms_session_source(c->s, i);
	for (uint32_t i = 0; i < nm; i++) {
		const struct vms_machine *mc = vms_model_machine_c(m, i);
		if ((mc->role & VMS_ROLE_GUEST) && mc->source >= 0 && (uint32_t)mc->source < ns)
			ks[i] = vms_source_ksyms(srcs[mc->source]);
	}
	cap = vms_db_capture_new(db, m, id, ks);
	if (!cap)
		goto oom;
	struct vms_observer obs[4];
	uint32_t nobs = vms_db_capture_observers(cap, obs);
	for (uint32_t i = 0; i < nobs; i++)
		if (vms_session_observe(c->s, &obs[i]) != 0)
			goto oom;
	struct vms_sinks sinks = vms_db_capture_sinks(cap);
	if ((st = cli_run(c, &sinks)) != 0) {
		vms_db_abort(db);
		goto done;
	}
	if (vms_db_capture_tables(cap, vms_session_analysis(c->s), srcs, ns, cli_cycles()) != 0)
		goto db_failed;
	/* the files, one per line */
	size_t flen = 1;
	for (uint32_t i = 0; i < ns; i++)
		flen += strlen(srcs[i]->path ? srcs[i]->path : "") + 1;
	char *files = calloc(1, flen);
	for (uint32_t i = 0; files && i < ns; i++) {
		if (i)
			strcat(files, "\n");
		strcat(files, srcs[i]->path ? srcs[i]->path : "");
	}
	struct vms_db_capture_info info = {
		.host = host, .kernel = o->kernel, .files = files ? files : "", .time_unit = cli_unit(),
		.version = VMSCOPE_VERSION, .first = vms_session_first_ts(c->s),
		.last = vms_session_last_ts(c->s), .events = vms_session_events(c->s),
	};
	int rc = vms_db_capture_commit(cap, &info);
	free(files);
	if (rc != 0)
		goto db_failed;
	char rows[600];
	rows_text(db, rows, sizeof rows);
	fprintf(c->f, "capture %s (host %s) written to %s: %s rows\n", id, cli_text(host),
		cli_text(where), rows);
	goto done;
oom:
	fprintf(stderr, "vmscope db: out of memory\n");
	vms_db_abort(db);
	st = VMS_EXIT_FAIL;
	goto done;
db_failed: {
	vms_db_abort(db);   /* (the writer stopped: the rows it wrote are all counted) */
	char rows[600];
	rows_text(db, rows, sizeof rows);
	if (o->sqlite)
		fprintf(stderr, "vmscope db: %s; capture %s not written: its transaction was rolled "
			"back, the file holds what it held before\n", cli_text(vms_db_error(db)), id);
	else
		fprintf(stderr, "vmscope db: %s; capture %s not committed (rows sent before the "
			"failure: %s; the rest not written); a rerun deletes them and writes it whole\n",
			cli_text(vms_db_error(db)), id, rows);
	st = VMS_EXIT_FAIL;
}
done:
	vms_db_capture_free(cap);
	free(ks);
	free(srcs);
	vms_db_close(db);
	return st;
}

int cmd_db(int argc, char **argv)
{
	struct dbopts o = { 0 };
	char **av = calloc((size_t)argc + 1, sizeof *av);
	if (!av)
		return VMS_EXIT_FAIL;
	memcpy(av, argv, (size_t)argc * sizeof *av);
	int ac = argc, st;
	if (take_options(&ac, av, &o) != 0) {
		free(av);
		return VMS_EXIT_USAGE;
	}
	if (o.help) {
		fputs(usage, stdout);
		st = VMS_EXIT_OK;
	} else if (o.schema) {
		vms_db_schema_markdown(stdout);
		st = fflush(stdout) ? cli_write_failed("db", errno) : VMS_EXIT_OK;
	} else if (!o.sqlite == !o.clickhouse) {
		fprintf(stderr, "vmscope db: give one of --sqlite FILE or --clickhouse URL\n");
		st = VMS_EXIT_USAGE;
	} else if (o.cluster && !o.clickhouse) {
		fprintf(stderr, "vmscope db: --cluster is for --clickhouse\n");
		st = VMS_EXIT_USAGE;
	} else if (o.query) {
		st = ac > 1 ? (fprintf(stderr, "vmscope db: --query reads no traces\n"), VMS_EXIT_USAGE)
			    : run_query(&o);
	} else if (o.csv || o.print_sql) {
		fprintf(stderr, "vmscope db: %s is for --query\n", o.csv ? "--csv" : "--print-sql");
		st = VMS_EXIT_USAGE;
	} else {
		struct cli c;
		st = cli_begin(&c, ac, av, CLI_ROLES | CLI_OUT, usage);
		if (st == CLI_GO)
			st = cli_end(&c, load(&c, &o));
	}
	free(av);
	return st;
}
