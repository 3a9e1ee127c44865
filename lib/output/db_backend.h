/* The interface every database backend implements (db_sqlite.c, db_clickhouse.c); db.c
 * dispatches vmscope/db.h's calls to it and keeps what they share (the error text, the row
 * counts). */
#ifndef VMS_DB_BACKEND_H
#define VMS_DB_BACKEND_H

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

struct vms_db {
	const struct vms_db_ops *ops;
	void *impl;
	char err[512];
	char capture[64];                    /* the capture under way */
	uint64_t rows[VMS_DB_NR_TABLES];     /* since begin */
	uint32_t batch_rows;                 /* ClickHouse: rows and bytes per INSERT */
	size_t batch_bytes;
};

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
