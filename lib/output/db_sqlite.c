/* The SQLite backend (the default): one file, the schema created when missing, one
 * transaction per capture (a failed load leaves nothing of it), one prepared INSERT per
 * table, so that a row costs a bind and a step and nothing is held in memory. A capture
 * already in the file is refused (VMS_DB_PRESENT) unless replaced. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "db_backend.h"

struct lite {
	sqlite3 *h;
	char *path;
	sqlite3_stmt *ins[VMS_DB_NR_TABLES];
	bool in_tx;
};

static int fail(struct vms_db *db, const char *what)
{
	struct lite *l = db->impl;
	int code = sqlite3_extended_errcode(l->h);
	const char *why = (code & 0xff) == SQLITE_FULL ? "the disk is full" : sqlite3_errmsg(l->h);
	vms_db_fail(db, "%s: %s: %s", l->path, what, why);
	return -1;
}

static int exec(struct vms_db *db, const char *sql)
{
	struct lite *l = db->impl;
	return sqlite3_exec(l->h, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : fail(db, sql);
}

static const char *sql_type(const struct vms_db_column *c)
{
	return c->type == VMS_DB_INT ? "INTEGER" : c->type == VMS_DB_TEXT ? "TEXT" : "REAL";
}

/* CREATE TABLE IF NOT EXISTS for one table. No index but captures' primary key: an index on
 * each table's key made the load take twice the CPU time (3.46 s against 1.73 s user on a
 * 500 k-event pair, 1.2 M rows), and the fleet queries scan whole tables anyway; a user who
 * looks captures up one at a time adds one (CREATE INDEX exits_key ON exits (capture, ...)). */
static int create(struct vms_db *db, const struct vms_db_table *t)
{
	char sql[4096];
	size_t n = (size_t)snprintf(sql, sizeof sql, "CREATE TABLE IF NOT EXISTS %s (", t->name);
	for (uint32_t c = 0; c < t->nr_cols && n < sizeof sql; c++)
		n += (size_t)snprintf(sql + n, sizeof sql - n, "%s%s %s%s", c ? ", " : "",
				      t->cols[c].name, sql_type(&t->cols[c]),
				      t->cols[c].nullable ? "" : " NOT NULL");
	if (n < sizeof sql)
		n += (size_t)snprintf(sql + n, sizeof sql - n, "%s)",
				      t == vms_db_table(VMS_DB_CAPTURES) ? ", PRIMARY KEY (capture)" : "");
	if (n >= sizeof sql)
		return -1;
	return exec(db, sql);
}

/* A table made by another version must have our columns, in our order. */
static int check(struct vms_db *db, const struct vms_db_table *t)
{
	struct lite *l = db->impl;
	char sql[128];
	snprintf(sql, sizeof sql, "PRAGMA table_info(%s)", t->name);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(l->h, sql, -1, &st, NULL) != SQLITE_OK)
		return fail(db, sql);
	uint32_t c = 0;
	bool ok = true;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 1);
		ok &= c < t->nr_cols && name && !strcmp(name, t->cols[c].name);
		c++;
	}
	sqlite3_finalize(st);
	if (!ok || c != t->nr_cols) {
		vms_db_fail(db, "%s: table %s does not have vmscope's columns (docs/schema.md): a "
			    "database of another vmscope, or not vmscope's", l->path, t->name);
		return -1;
	}
	return 0;
}

static int prepare(struct vms_db *db, enum vms_db_table_id id)
{
	struct lite *l = db->impl;
	const struct vms_db_table *t = vms_db_table(id);
	char sql[2048];
	size_t n = (size_t)snprintf(sql, sizeof sql, "INSERT INTO %s VALUES (", t->name);
	for (uint32_t c = 0; c < t->nr_cols && n < sizeof sql; c++)
		n += (size_t)snprintf(sql + n, sizeof sql - n, "%s?", c ? ", " : "");
	if (n + 2 > sizeof sql)
		return -1;
	strcat(sql, ")");
	return sqlite3_prepare_v2(l->h, sql, -1, &l->ins[id], NULL) == SQLITE_OK ? 0 : fail(db, sql);
}

static int bind_row(struct vms_db *db, sqlite3_stmt *st, const struct vms_db_table *t,
		    const struct vms_db_value *v)
{
	for (uint32_t c = 0; c < t->nr_cols; c++) {
		int rc;
		int k = (int)c + 1;
		switch (v[c].kind) {
		case VMS_DB_V_INT: rc = sqlite3_bind_int64(st, k, v[c].i); break;
		case VMS_DB_V_REAL: rc = sqlite3_bind_double(st, k, v[c].r); break;
		case VMS_DB_V_TEXT: rc = sqlite3_bind_text(st, k, v[c].s, -1, SQLITE_STATIC); break;
		default: rc = sqlite3_bind_null(st, k); break;
		}
		if (rc != SQLITE_OK)
			return fail(db, t->name);
	}
	return 0;
}

static int lite_row(struct vms_db *db, enum vms_db_table_id id, const struct vms_db_value *v)
{
	struct lite *l = db->impl;
	const struct vms_db_table *t = vms_db_table(id);
	sqlite3_stmt *st = l->ins[id];
	if (bind_row(db, st, t, v) != 0)
		return -1;
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		char what[64];
		snprintf(what, sizeof what, "writing a row of %s", t->name);
		return fail(db, what);
	}
	return 0;
}

static int delete_capture(struct vms_db *db, const char *id)
{
	struct lite *l = db->impl;
	for (int t = 0; t < VMS_DB_NR_TABLES; t++) {
		char sql[128];
		snprintf(sql, sizeof sql, "DELETE FROM %s WHERE capture = ?", vms_db_table(t)->name);
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(l->h, sql, -1, &st, NULL) != SQLITE_OK)
			return fail(db, sql);
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		int rc = sqlite3_step(st);
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE)
			return fail(db, sql);
	}
	return 0;
}

static enum vms_db_begin lite_begin(struct vms_db *db, const char *id, bool replace)
{
	struct lite *l = db->impl;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(l->h, "SELECT 1 FROM captures WHERE capture = ?", -1, &st, NULL) !=
	    SQLITE_OK) {
		fail(db, "looking for the capture");
		return VMS_DB_FAILED;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	bool present = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	if (present && !replace)
		return VMS_DB_PRESENT;
	if (exec(db, "BEGIN") != 0)
		return VMS_DB_FAILED;
	l->in_tx = true;
	if (present && delete_capture(db, id) != 0)
		return VMS_DB_FAILED;
	return VMS_DB_BEGUN;
}

static int lite_commit(struct vms_db *db, const struct vms_db_value *capture_row)
{
	struct lite *l = db->impl;
	if (lite_row(db, VMS_DB_CAPTURES, capture_row) != 0)
		return -1;
	if (exec(db, "COMMIT") != 0)
		return -1;
	l->in_tx = false;
	return 0;
}

static void lite_abort(struct vms_db *db)
{
	struct lite *l = db->impl;
	if (l->in_tx)
		sqlite3_exec(l->h, "ROLLBACK", NULL, NULL, NULL);
	l->in_tx = false;
}

static int lite_query(struct vms_db *db, const char *sql, FILE *out, bool csv)
{
	struct lite *l = db->impl;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(l->h, sql, -1, &st, NULL) != SQLITE_OK)
		return fail(db, "query");
	struct vms_db_result *r = vms_db_result_new();
	int nc = sqlite3_column_count(st), rc = 0;
	for (int c = 0; r && c < nc; c++)
		rc |= vms_db_result_cell(r, sqlite3_column_name(st, c));
	if (r)
		vms_db_result_end_row(r);
	int step;
	while (r && !rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
		for (int c = 0; c < nc; c++)
			rc |= vms_db_result_cell(r, sqlite3_column_type(st, c) == SQLITE_NULL ? NULL
						 : (const char *)sqlite3_column_text(st, c));
		vms_db_result_end_row(r);
	}
	if (!r || rc)
		vms_db_fail(db, "out of memory");
	else if (step != SQLITE_DONE)
		fail(db, "query");
	else
		vms_db_result_print(r, out, csv);
	vms_db_result_free(r);
	sqlite3_finalize(st);
	return db->err[0] ? -1 : 0;
}

static void lite_close(struct vms_db *db)
{
	struct lite *l = db->impl;
	lite_abort(db);
	for (int t = 0; t < VMS_DB_NR_TABLES; t++)
		sqlite3_finalize(l->ins[t]);
	sqlite3_close(l->h);
	free(l->path);
	free(l);
}

static const struct vms_db_ops lite_ops = {
	.name = "sqlite", .begin = lite_begin, .row = lite_row, .commit = lite_commit,
	.abort = lite_abort, .query = lite_query, .close = lite_close,
};

struct vms_db *vms_db_open_sqlite(const char *path, char *err, size_t len)
{
	struct lite *l = calloc(1, sizeof *l);
	struct vms_db *db = l ? vms_db_new(&lite_ops, l) : NULL;
	if (!db || !(l->path = strdup(path))) {
		snprintf(err, len, "out of memory");
		free(l);
		free(db);
		return NULL;
	}
	/* one connection used by one thread: no mutex around every call (they were 8% of a load),
	 * nor around every allocation for its statistics */
	static bool configured;
	if (!configured) {
		sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
		configured = true;
	}
	if (sqlite3_open_v2(path, &l->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		fail(db, "cannot open");
	} else {
		sqlite3_busy_timeout(l->h, 600000);   /* another load holds the write lock: wait for it */
		for (int t = 0; t < VMS_DB_NR_TABLES && !db->err[0]; t++)
			if (create(db, vms_db_table(t)) == 0)
				check(db, vms_db_table(t));
		for (int t = 0; t < VMS_DB_NR_TABLES && !db->err[0]; t++)
			prepare(db, t);
	}
	if (db->err[0]) {
		snprintf(err, len, "%s", db->err);
		vms_db_close(db);
		return NULL;
	}
	return db;
}
