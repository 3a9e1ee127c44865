/* The SQLite backend (the default): one file, the schema created when missing, one
 * transaction per capture (a failed load leaves nothing of it). Rows are kept per table
 * until BATCH_ROWS of them are there, then written by one prepared INSERT of that many
 * rows: a one-row INSERT pays the statement's start, its cursor and its halt per row, which
 * were half of SQLite's time (a 100 k-event pair: 1.34 G of the load's 1.74 G
 * instructions in lite_row). What a capture holds in memory is that batch per table. A
 * capture already in the file is refused (VMS_DB_PRESENT) unless replaced.
 *
 * The journal stays SQLite's default (a rollback journal, synchronous=FULL): a crash or a
 * power cut leaves the last committed captures whole. WAL with synchronous=NORMAL cost more
 * CPU (the transaction is written twice, to the WAL and at the checkpoint), a larger
 * cache_size only memory (the pages spill to the file as the load goes, which it must write
 * at the commit anyway). No secondary index exists to build after the load (see create).
 * The commit's fsync is kept; what it waited for (the whole file written to the disk at
 * once) is started as the load goes instead (kick). With a writer thread (db_writer.c) the
 * calls below run in that thread between begin and commit, in the caller's otherwise. */
#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db_backend.h"

#define BATCH_ROWS 32   /* 16 to 64 rows per INSERT cost the same; 1 row twice as much */
/* Pages of 16 KiB: a quarter of the pages to allocate, fill, spill and write (pwrite) of
 * 4 KiB ones; on a 500 k-event pair 0.80 s of CPU (0.74 user, 0.06 system) against 1.02 s
 * (0.87, 0.15); 32 KiB cost the same, 64 KiB more (the 2 MiB cache holds 32 of them). */
#define PAGE_SIZE_TEXT "16384"

/* a value kept until its row is written: its text copied into the table's arena (the
 * caller's buffers live only for the call), the capture's id not copied at all */
struct kept {
	int kind;            /* VMS_DB_NULL, VMS_DB_V_INT, _TEXT, _REAL, or CAPTURE_ID */
	int len;             /* text: bytes */
	union { int64_t i; double r; size_t off; } u;
};
#define CAPTURE_ID 100

/* an INSERT of rows rows, and which of its rows has the capture's id bound to its first
 * parameter already (it stays bound across sqlite3_reset: one bind per capture, not per row) */
struct insert {
	sqlite3_stmt *st;
	uint32_t rows;
	bool id_bound[BATCH_ROWS];
};

struct pending {
	struct insert one, many;      /* one row (what is left at the commit), batch rows */
	struct kept *v;               /* many.rows rows */
	uint32_t nr;                  /* rows kept */
	struct vms_db_buf text;       /* their text */
};

struct lite {
	sqlite3 *h;
	char *path;
	struct pending t[VMS_DB_NR_TABLES];
	size_t max_len;               /* SQLite's limit on a text */
	bool in_tx;
	int fd;                       /* the file, for its writeback (see kick), or -1 */
	uint32_t since_kick;          /* batches written since */
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

static int prepare(struct vms_db *db, enum vms_db_table_id id, struct insert *ins, uint32_t rows)
{
	struct lite *l = db->impl;
	const struct vms_db_table *t = vms_db_table(id);
	size_t len = 32 + strlen(t->name) + (size_t)rows * (3 * t->nr_cols + 3);
	char *sql = malloc(len);
	if (!sql) {
		vms_db_fail(db, "out of memory");
		return -1;
	}
	/* OR FAIL: a NOT NULL violation stops the statement without undoing its earlier rows,
	 * so SQLite keeps no statement journal (a copy of every page the statement touches:
	 * 2.4% of a load's instructions); a failed row fails the capture, whose whole
	 * transaction is rolled back anyway */
	size_t n = (size_t)snprintf(sql, len, "INSERT OR FAIL INTO %s VALUES ", t->name);
	for (uint32_t r = 0; r < rows; r++)
		for (uint32_t c = 0; c < t->nr_cols; c++)
			n += (size_t)snprintf(sql + n, len - n, "%s%s?%s", r && !c ? "," : "", c ? "" : "(",
					      c + 1 < t->nr_cols ? "," : ")");
	ins->rows = rows;
	int rc = sqlite3_prepare_v3(l->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &ins->st, NULL);
	free(sql);
	return rc == SQLITE_OK ? 0 : fail(db, "preparing an INSERT");
}

/* a table's two INSERTs and room for its batch: as many rows as SQLite's limit on the
 * parameters of a statement lets (999 before 3.32) */
static int prepare_table(struct vms_db *db, enum vms_db_table_id id)
{
	struct lite *l = db->impl;
	struct pending *p = &l->t[id];
	uint32_t cols = vms_db_table(id)->nr_cols;
	uint32_t rows = (uint32_t)sqlite3_limit(l->h, SQLITE_LIMIT_VARIABLE_NUMBER, -1) / cols;
	if (rows > BATCH_ROWS)
		rows = BATCH_ROWS;
	if (id == VMS_DB_CAPTURES || rows < 1)
		rows = 1;
	if (!(p->v = calloc((size_t)rows * cols, sizeof *p->v))) {
		vms_db_fail(db, "out of memory");
		return -1;
	}
	if (prepare(db, id, &p->one, 1) != 0)
		return -1;
	return rows > 1 ? prepare(db, id, &p->many, rows) : 0;
}

/* Binds rows of kept values, from the first, to ins and runs it. */
static int write_rows(struct vms_db *db, enum vms_db_table_id id, struct insert *ins,
		      const struct kept *v, uint32_t rows)
{
	struct lite *l = db->impl;
	struct pending *p = &l->t[id];
	const struct vms_db_table *t = vms_db_table(id);
	sqlite3_stmt *st = ins->st;
	int rc = SQLITE_OK;
	for (uint32_t r = 0; r < rows && rc == SQLITE_OK; r++) {
		for (uint32_t c = 0; c < t->nr_cols && rc == SQLITE_OK; c++, v++) {
			int k = (int)(r * t->nr_cols + c) + 1;
			if (c == 0) {
				if (v->kind == CAPTURE_ID && ins->id_bound[r])
					continue;
				ins->id_bound[r] = v->kind == CAPTURE_ID;
			}
			switch (v->kind) {
			case CAPTURE_ID:
				rc = sqlite3_bind_text(st, k, db->capture, v->len, SQLITE_STATIC);
				break;
			case VMS_DB_V_INT: rc = sqlite3_bind_int64(st, k, v->u.i); break;
			case VMS_DB_V_REAL: rc = sqlite3_bind_double(st, k, v->u.r); break;
			case VMS_DB_V_TEXT:
				rc = sqlite3_bind_text(st, k, p->text.p + v->u.off, v->len, SQLITE_STATIC);
				break;
			default: rc = sqlite3_bind_null(st, k); break;
			}
		}
	}
	if (rc != SQLITE_OK)
		return fail(db, t->name);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		char what[64];
		snprintf(what, sizeof what, "writing a row of %s", t->name);
		return fail(db, what);
	}
	return 0;
}

/* The file's pages written so far (SQLite writes them to the file as its cache fills, long
 * before the commit) sent to the disk now, without waiting: the fsync of the commit then
 * has the last ones only to write, instead of the whole file (80 MB for a 500 k-event pair,
 * 0.3 to 0.6 s of waiting on a shared virtual disk), and this thread's writes overlap the
 * analysis. Durability is SQLite's, unchanged: the kernel may write a dirty page at any
 * time (SQLite writes a page to the file only once the journal that can undo it is synced),
 * this only makes it sooner; the commit still syncs the journal and the file. */
#define KICK_BATCHES 2048     /* 64 k rows, ~3.5 MB of file */

static void kick(struct lite *l)
{
#ifdef SYNC_FILE_RANGE_WRITE
	if (l->fd >= 0 && ++l->since_kick >= KICK_BATCHES) {
		l->since_kick = 0;
		sync_file_range(l->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	}
#else
	(void)l;
#endif
}

/* Writes a table's kept rows (a full batch: one INSERT; at the commit, one at a time). */
static int flush(struct vms_db *db, enum vms_db_table_id id)
{
	struct lite *l = db->impl;
	struct pending *p = &l->t[id];
	uint32_t cols = vms_db_table(id)->nr_cols;
	int rc = 0;
	if (p->nr && p->nr == p->many.rows) {
		rc = write_rows(db, id, &p->many, p->v, p->nr);
		kick(l);
	} else
		for (uint32_t r = 0; r < p->nr && !rc; r++)
			rc = write_rows(db, id, &p->one, p->v + (size_t)r * cols, 1);
	p->nr = 0;
	p->text.n = 0;
	return rc;
}

/* Keeps a row; writes the batch once it is full. */
static int lite_row(struct vms_db *db, enum vms_db_table_id id, const struct vms_db_value *v)
{
	struct lite *l = db->impl;
	struct pending *p = &l->t[id];
	const struct vms_db_table *t = vms_db_table(id);
	uint32_t rows = p->many.st ? p->many.rows : 1;
	struct kept *k = p->v + (size_t)p->nr * t->nr_cols;
	for (uint32_t c = 0; c < t->nr_cols; c++, k++) {
		k->kind = v[c].kind;
		if (v[c].kind == VMS_DB_V_INT) {
			k->u.i = v[c].i;
		} else if (v[c].kind == VMS_DB_V_REAL) {
			k->u.r = v[c].r;
		} else if (v[c].kind == VMS_DB_V_TEXT) {
			size_t n = strlen(v[c].s);
			if (n > l->max_len) {
				vms_db_fail(db, "%s: a text of %s is too long", l->path, t->name);
				return -1;
			}
			k->len = (int)n;
			if (c == 0 && !strcmp(v[c].s, db->capture)) {
				k->kind = CAPTURE_ID;
				continue;
			}
			k->u.off = p->text.n;
			if (vms_db_buf_put(&p->text, v[c].s, n + 1) != 0) {   /* its NUL too */
				vms_db_fail(db, "out of memory");
				return -1;
			}
		}
	}
	if (++p->nr == rows)
		return flush(db, id);
	return 0;
}

static void drop_kept(struct lite *l)
{
	for (int t = 0; t < VMS_DB_NR_TABLES; t++)
		l->t[t].nr = 0, l->t[t].text.n = 0;
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
	drop_kept(l);
	for (int t = 0; t < VMS_DB_NR_TABLES; t++) {   /* the id's text is another now */
		memset(l->t[t].one.id_bound, 0, sizeof l->t[t].one.id_bound);
		memset(l->t[t].many.id_bound, 0, sizeof l->t[t].many.id_bound);
	}
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
	for (int t = 0; t < VMS_DB_NR_TABLES; t++)
		if (flush(db, t) != 0)
			return -1;
	if (lite_row(db, VMS_DB_CAPTURES, capture_row) != 0 || flush(db, VMS_DB_CAPTURES) != 0)
		return -1;
	if (exec(db, "COMMIT") != 0)
		return -1;
	l->in_tx = false;
	return 0;
}

static void lite_abort(struct vms_db *db)
{
	struct lite *l = db->impl;
	drop_kept(l);
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
	for (int t = 0; t < VMS_DB_NR_TABLES; t++) {
		sqlite3_finalize(l->t[t].one.st);
		sqlite3_finalize(l->t[t].many.st);
		free(l->t[t].v);
		free(l->t[t].text.p);
	}
	sqlite3_close(l->h);
	if (l->fd >= 0)
		close(l->fd);
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
	if (l)
		l->fd = -1;
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
		l->max_len = (size_t)sqlite3_limit(l->h, SQLITE_LIMIT_LENGTH, -1);
		sqlite3_busy_timeout(l->h, 600000);   /* another load holds the write lock: wait for it */
		/* a new file's pages: 16 KiB, not 4 (a file of another vmscope keeps its own) */
		sqlite3_exec(l->h, "PRAGMA page_size = " PAGE_SIZE_TEXT, NULL, NULL, NULL);
		/* the schema in one transaction: a new file is synced once, not once per table
		 * (11 times 4 fsyncs: up to 0.3 s); IMMEDIATE: the write lock taken (or waited
		 * for) first, never a read lock to upgrade while another load waits for it */
		if (exec(db, "BEGIN IMMEDIATE") == 0) {
			for (int t = 0; t < VMS_DB_NR_TABLES && !db->err[0]; t++)
				if (create(db, vms_db_table(t)) == 0)
					check(db, vms_db_table(t));
			if (db->err[0] || exec(db, "COMMIT") != 0)
				sqlite3_exec(l->h, "ROLLBACK", NULL, NULL, NULL);
		}
		for (int t = 0; t < VMS_DB_NR_TABLES && !db->err[0]; t++)
			prepare_table(db, t);
		l->fd = open(path, O_RDONLY | O_CLOEXEC);   /* (none: no early writeback) */
	}
	if (db->err[0]) {
		snprintf(err, len, "%s", db->err);
		vms_db_close(db);
		return NULL;
	}
	return db;
}
