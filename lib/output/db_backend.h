/* The interface every database backend implements (db_sqlite.c, db_clickhouse.c); db.c
 * dispatches vmscope/db.h's calls to it and keeps what they share (the error text, the row
 * counts). */
#ifndef VMS_DB_BACKEND_H
#define VMS_DB_BACKEND_H

#include <stdatomic.h>

#include "vmscope/db.h"

struct vms_db_ops {
	const char *name;
	enum vms_db_begin (*begin)(struct vms_db *db, const char *id, bool replace);
	int (*row)(struct vms_db *db, enum vms_db_table_id t, const struct vms_db_value *v);
	int (*commit)(struct vms_db *db, const struct vms_db_value *capture_row);
	void (*abort)(struct vms_db *db);
	int (*query)(struct vms_db *db, const char *sql, FILE *out, bool csv);
	void (*close)(struct vms_db *db);
};

struct vms_db_writer;

/* While a capture's writer thread runs (db_writer.c), it alone calls the backend and
 * writes err, rows and failed; the caller's thread reads failed, then err once failed is
 * set, and rows at any time (relaxed atomics: a count, possibly behind). */
struct vms_db {
	const struct vms_db_ops *ops;
	void *impl;
	char err[512];
	atomic_bool failed;                  /* a row failed: err says why; the rest dropped */
	char capture[64];                    /* the capture under way */
	_Atomic uint64_t rows[VMS_DB_NR_TABLES];   /* since begin */
	uint32_t batch_rows;                 /* ClickHouse: rows and bytes per INSERT */
	size_t batch_bytes;
	struct vms_db_writer *w;             /* the capture's writer thread, or NULL */
};

/* The writer thread of a capture (db_writer.c): started after the backend's begin, stopped
 * (every row given to the backend, or, cancelled, the rest dropped) before its commit or
 * abort. NULL: no thread (VMS_DB_THREADS=0, or none could be made): rows go straight to
 * the backend. */
struct vms_db_writer *vms_db_writer_start(struct vms_db *db);
int vms_db_writer_row(struct vms_db_writer *w, enum vms_db_table_id t,
		      const struct vms_db_value *v);
void vms_db_writer_stop(struct vms_db_writer *w, bool cancel);
/* A row to the backend now (in the thread that owns it), counted; -1 after an error. */
int vms_db_put_row(struct vms_db *db, enum vms_db_table_id t, const struct vms_db_value *v);

/* A growing text: a batch of rows to send, a reply, the texts of rows kept. */
struct vms_db_buf {
	char *p;
	size_t n, cap;
};
/* Appends n bytes of s, and a NUL after them (not counted in b->n); -1 when out of memory. */
int vms_db_buf_put(struct vms_db_buf *b, const char *s, size_t n);

/* The first error wins (the innermost, most precise). */
void vms_db_fail(struct vms_db *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct vms_db *vms_db_new(const struct vms_db_ops *ops, void *impl);

/* A result set, printed as aligned text or CSV by db.c for every backend: the backend adds
 * cells row by row (NULL as NULL). */
struct vms_db_result;
struct vms_db_result *vms_db_result_new(void);
int vms_db_result_cell(struct vms_db_result *r, const char *text);   /* NULL: a NULL */
int vms_db_result_end_row(struct vms_db_result *r);
void vms_db_result_print(const struct vms_db_result *r, FILE *out, bool csv);
void vms_db_result_free(struct vms_db_result *r);

#endif
