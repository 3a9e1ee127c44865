/* vmscope: the analyses' results as SQL tables (docs/schema.md), in an embedded database
 * (SQLite) or a ClickHouse server, so that many hosts' captures live side by side and can be
 * queried together (docs/fleet.md).
 *
 * One schema (db_schema.c) is used by every backend, by `vmscope db --schema` (which
 * docs/schema.md must equal) and by the tests. A capture is one run of vmscope over one
 * host's traces; every row carries its capture id as its first column. The writer
 * (vms_db_capture, db_capture.c) is a consumer of the analysis: the state machine's
 * observations (exits, the fused physical-CPU view, wake-ups, findings) and the sinks
 * (vCPU and thread intervals) give the rows as they close, the tables at the end give the
 * totals; a backend (vms_db) takes rows one at a time and writes them in bounded batches,
 * so memory stays flat whatever the trace. */
#ifndef VMSCOPE_DB_H
#define VMSCOPE_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vms_db_type { VMS_DB_INT = 0, VMS_DB_TEXT, VMS_DB_REAL };

struct vms_db_column {
	const char *name;
	enum vms_db_type type;
	bool nullable;          /* NULL where the value is not known (never a 0 for it) */
	const char *unit;       /* "ns" (the capture's time_unit), "count", ... or NULL */
	const char *doc;
};

enum vms_db_table_id {
	VMS_DB_CAPTURES = 0, VMS_DB_MACHINES, VMS_DB_VCPUS, VMS_DB_VCPU_INTERVALS,
	VMS_DB_THREAD_INTERVALS, VMS_DB_PCPU_INTERVALS, VMS_DB_EXITS, VMS_DB_EXIT_STATS,
	VMS_DB_STEAL, VMS_DB_WAKEUPS, VMS_DB_FINDINGS, VMS_DB_NR_TABLES
};

struct vms_db_table {
	const char *name;
	const char *doc;
	const struct vms_db_column *cols;
	uint32_t nr_cols;
	const char *key;        /* the sort key: ClickHouse ORDER BY (columns) */
};

const struct vms_db_table *vms_db_table(enum vms_db_table_id id);
/* The schema as Markdown (what docs/schema.md holds). */
void vms_db_schema_markdown(FILE *f);

/* One value of a row. Text is stored as vmscope's text writers escape it (vms_text_escape:
 * valid UTF-8 with no control characters, a backslash doubled), so that a name from a
 * hostile trace is data that any client can show. */
struct vms_db_value {
	enum { VMS_DB_NULL = 0, VMS_DB_V_INT, VMS_DB_V_TEXT, VMS_DB_V_REAL } kind;
	int64_t i;
	double r;
	const char *s;
};

/* A backend: a database, opened once, then captures written one at a time. */
struct vms_db;
/* file: created with the schema when missing, else its schema is checked. */
struct vms_db *vms_db_open_sqlite(const char *path, char *err, size_t len);
/* url: http://HOST:PORT[/?database=DB] of the server's HTTP interface. table_suffix: "" for
 * the tables themselves, or "_all" to write and read the Distributed tables of a cluster
 * (created with `cluster`, which must name the server's <remote_servers> entry). */
struct vms_db *vms_db_open_clickhouse(const char *url, const char *cluster, char *err,
				      size_t len);
/* Batches: at most rows rows or bytes bytes per INSERT (ClickHouse; 0 keeps the default). */
void vms_db_set_batch(struct vms_db *db, uint32_t rows, size_t bytes);
const char *vms_db_backend_name(const struct vms_db *db);   /* "sqlite", "clickhouse" */

enum vms_db_begin { VMS_DB_BEGUN = 0, VMS_DB_PRESENT = 1, VMS_DB_FAILED = -1 };
/* Start writing capture `id`. A capture already committed is VMS_DB_PRESENT (nothing is
 * written; with replace it is deleted first and written again). Rows of an uncommitted
 * capture of that id (a load that failed half-way) are deleted first. */
enum vms_db_begin vms_db_begin(struct vms_db *db, const char *id, bool replace);
/* One row of table t: values in the schema's column order (the capture id first). */
int vms_db_row(struct vms_db *db, enum vms_db_table_id t, const struct vms_db_value *v);
/* Write what is buffered, then the capture's row in `captures` (the commit marker, last). */
int vms_db_commit(struct vms_db *db, const struct vms_db_value *capture_row);
/* Give up the capture under way (SQLite: roll back; ClickHouse: what was sent stays, without
 * its commit marker, and is deleted by the next begin of that id). */
void vms_db_abort(struct vms_db *db);
/* Rows written since begin, per table (sent to the server or into the transaction). */
uint64_t vms_db_rows_written(const struct vms_db *db, enum vms_db_table_id t);
/* Run a query and print its result as aligned text (csv: CSV with a header line). */
int vms_db_query(struct vms_db *db, const char *sql, FILE *out, bool csv);
/* The first error's text ("" when none). */
const char *vms_db_error(const struct vms_db *db);
void vms_db_close(struct vms_db *db);

/* The writer of one capture: a consumer of one session's analysis. Make it once the model
 * is built, subscribe the observers it gives and run with its sinks; every interval, exit and
 * wake-up becomes a row as it closes. Then vms_db_capture_tables writes the totals (machines,
 * vcpus, exit_stats, steal, findings) and vms_db_capture_commit the capture's row. A failed
 * row is remembered (vms_db_error) and the rest are dropped. */
struct vms_model;
struct vms_ksyms;
struct vms_sinks;
struct vms_observer;
struct vms_analysis;
struct vms_source;
struct vms_db_capture;
/* ksyms[m]: guest machine m's kernel symbols, to name an exit's RIP (NULL: none); the array
 * is the model's machines long and is copied. */
struct vms_db_capture *vms_db_capture_new(struct vms_db *db, const struct vms_model *model,
					  const char *capture_id,
					  const struct vms_ksyms *const *ksyms);
/* What to run with: the sinks (vCPU and thread intervals) and up to 4 observers (exits, the
 * physical-CPU view, wake-up latency, findings), written to obs[0..3]; returns how many. */
struct vms_sinks vms_db_capture_sinks(struct vms_db_capture *c);
uint32_t vms_db_capture_observers(struct vms_db_capture *c, struct vms_observer *obs);
/* After the run. srcs[i]: the source of trace i (a machine's m->source indexes it). cycles:
 * times are cycles of an unknown rate (the findings' sentences say so). */
int vms_db_capture_tables(struct vms_db_capture *c, const struct vms_analysis *a,
			  struct vms_source *const *srcs, uint32_t nr_srcs, bool cycles);
struct vms_db_capture_info {
	const char *host, *kernel, *files, *time_unit, *version;
	uint64_t first, last, events;
};
int vms_db_capture_commit(struct vms_db_capture *c, const struct vms_db_capture_info *info);
void vms_db_capture_free(struct vms_db_capture *c);

/* The fleet queries (docs/fleet.md), by name, in the dialect of a backend. */
struct vms_db_query {
	const char *name, *question, *sqlite, *clickhouse;
};
uint32_t vms_db_nr_queries(void);
const struct vms_db_query *vms_db_query_at(uint32_t i);
const struct vms_db_query *vms_db_query_named(const char *name);

#ifdef __cplusplus
}
#endif
#endif
