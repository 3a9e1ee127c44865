/* vmscope/db.h's calls, dispatched to a backend (db_backend.h), and what the backends share:
 * the first error, the rows written per table, and the printing of a query's result. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "db_backend.h"
#include "core/grow.h"

struct vms_db *vms_db_new(const struct vms_db_ops *ops, void *impl)
{
	struct vms_db *db = calloc(1, sizeof *db);
	if (!db)
		return NULL;
	db->ops = ops;
	db->impl = impl;
	atomic_init(&db->failed, false);
	db->batch_rows = 65536;
	db->batch_bytes = 4u << 20;
	return db;
}

void vms_db_fail(struct vms_db *db, const char *fmt, ...)
{
	if (db->err[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(db->err, sizeof db->err, fmt, ap);
	va_end(ap);
	/* one line: a server's message may hold line breaks */
	for (char *p = db->err; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
}

int vms_db_buf_put(struct vms_db_buf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return -1;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
	return 0;
}

void vms_db_set_batch(struct vms_db *db, uint32_t rows, size_t bytes)
{
	if (rows)
		db->batch_rows = rows;
	if (bytes)
		db->batch_bytes = bytes;
}

const char *vms_db_backend_name(const struct vms_db *db)
{
	return db->ops->name;
}

enum vms_db_begin vms_db_begin(struct vms_db *db, const char *id, bool replace)
{
	vms_db_writer_stop(db->w, true);   /* (a capture begun and neither committed nor aborted) */
	db->w = NULL;
	snprintf(db->capture, sizeof db->capture, "%s", id);
	for (int t = 0; t < VMS_DB_NR_TABLES; t++)
		atomic_store(&db->rows[t], 0);
	enum vms_db_begin b = db->ops->begin(db, id, replace);
	if (b == VMS_DB_BEGUN && !db->err[0])
		db->w = vms_db_writer_start(db);
	return b;
}

int vms_db_row(struct vms_db *db, enum vms_db_table_id t, const struct vms_db_value *v)
{
	if (db->w)
		return vms_db_writer_row(db->w, t, v);
	if (db->err[0])
		return -1;
	return vms_db_put_row(db, t, v);
}

/* the writer thread stopped: what it did is seen here, the backend is this thread's again */
static void stop_writer(struct vms_db *db, bool cancel)
{
	vms_db_writer_stop(db->w, cancel);
	db->w = NULL;
}

int vms_db_commit(struct vms_db *db, const struct vms_db_value *capture_row)
{
	stop_writer(db, false);
	if (db->err[0] || atomic_load(&db->failed))
		return -1;
	if (db->ops->commit(db, capture_row) != 0)
		return -1;
	atomic_fetch_add(&db->rows[VMS_DB_CAPTURES], 1);
	return 0;
}

void vms_db_abort(struct vms_db *db)
{
	stop_writer(db, true);
	db->ops->abort(db);
}

uint64_t vms_db_rows_written(const struct vms_db *db, enum vms_db_table_id t)
{
	return (unsigned)t < VMS_DB_NR_TABLES ? atomic_load_explicit(&db->rows[t], memory_order_relaxed)
					      : 0;
}

int vms_db_query(struct vms_db *db, const char *sql, FILE *out, bool csv)
{
	return db->ops->query(db, sql, out, csv);
}

const char *vms_db_error(const struct vms_db *db)
{
	/* the writer thread runs: err is its own until it failed (and then written no more) */
	if (db->w && !atomic_load_explicit(&db->failed, memory_order_acquire))
		return "";
	return db->err;
}

void vms_db_close(struct vms_db *db)
{
	if (!db)
		return;
	stop_writer(db, true);
	db->ops->close(db);
	free(db);
}

/* A result: the cells of every row (the first row: the column names), NULL for NULL. */
struct vms_db_result {
	char **cells;
	uint32_t nr, cap;
	uint32_t ncols;       /* cells of the first row */
	bool first_done;
};

struct vms_db_result *vms_db_result_new(void)
{
	return calloc(1, sizeof(struct vms_db_result));
}

int vms_db_result_cell(struct vms_db_result *r, const char *text)
{
	if (r->nr == r->cap) {
		char **g = vms_grow(r->cells, &r->cap, sizeof *g, 64);
		if (!g)
			return -1;
		r->cells = g;
	}
	char *c = NULL;
	if (text && !(c = strdup(text)))
		return -1;
	r->cells[r->nr++] = c;
	if (!r->first_done)
		r->ncols++;
	return 0;
}

int vms_db_result_end_row(struct vms_db_result *r)
{
	r->first_done = true;
	return 0;
}

/* Display width: UTF-8 continuation bytes take no column; a control byte shows as \xHH. */
static size_t width(const char *s)
{
	size_t w = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		w += (*p & 0xc0) == 0x80 ? 0 : *p < 0x20 || *p == 0x7f ? 4 : 1;
	return w;
}

static void put_cell(FILE *f, const char *s, bool csv)
{
	bool quote = csv && strpbrk(s, ",\"") != NULL;
	if (quote)
		fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else if (quote && *p == '"')
			fputs("\"\"", f);
		else
			fputc(*p, f);
	}
}

void vms_db_result_print(const struct vms_db_result *r, FILE *out, bool csv)
{
	uint32_t nc = r->ncols;
	if (!nc)
		return;
	size_t *w = calloc(nc, sizeof *w);
	if (!w)
		return;
	for (uint32_t i = 0; i < r->nr; i++) {
		size_t cw = width(r->cells[i] ? r->cells[i] : "NULL");
		if (cw > w[i % nc])
			w[i % nc] = cw;
	}
	for (uint32_t i = 0; i < r->nr; i++) {
		uint32_t col = i % nc;
		const char *s = r->cells[i] ? r->cells[i] : csv ? "" : "NULL";
		put_cell(out, s, csv);
		if (col + 1 == nc)
			fputc('\n', out);
		else if (csv)
			fputc(',', out);
		else
			fprintf(out, "%*s", (int)(w[col] - width(s) + 2), "");
	}
	free(w);
}

void vms_db_result_free(struct vms_db_result *r)
{
	if (!r)
		return;
	for (uint32_t i = 0; i < r->nr; i++)
		free(r->cells[i]);
	free(r->cells);
	free(r);
}
