/* The backend of a capture under way in a thread of its own (db_backend.h): vms_db_row, in
 * the thread that runs the analysis, copies a row (its values, its texts) into a bounded
 * queue (core/spsc.h); the writer thread takes the rows in order and gives them to the
 * backend's row() (SQLite's inserts, ClickHouse's batches and their HTTP requests).
 *
 * Why: the user waits for the command's wall-clock time. Unthreaded, a load is the analysis
 * (about 40% of db's CPU time on a synthesized pair) plus the backend (SQLite's VDBE, B-tree
 * and its writes to the page cache: the rest) one after the other, on one core; machines
 * have two or more. The queue is bounded (2 MiB): when the writer falls behind, the analysis
 * waits, so memory stays flat whatever the trace's length.
 *
 * What does not change: every row reaches the backend in the order of the calls, in the one
 * transaction of the capture (begin and commit stay in the caller's thread: the writer runs
 * between them only, so the backend's connection is used by one thread at a time); the
 * first error wins and the rows after it are dropped, as unthreaded; a cancelled capture's
 * rows still queued are dropped.
 *
 * VMS_DB_THREADS=0 in the environment: no thread, each row given to the backend at once
 * (the same rows in the same order: for measurements and tests). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/spsc.h"
#include "db_backend.h"

#define BLOCK_SIZE (64 * 1024)
#define BLOCKS 32
#define MAX_COLS 32

/* a row in the queue: its header, its values, then its texts (NUL-terminated) */
struct wrow {
	uint32_t size;           /* bytes, a multiple of 8 */
	uint16_t table;
	uint16_t ncols;
};
struct wval {
	uint32_t kind;           /* VMS_DB_NULL, VMS_DB_V_INT, _TEXT, _REAL, or ID */
	uint32_t off;            /* a text: its offset from the row's start */
	union { int64_t i; double r; } u;
};
#define ID 100                   /* the capture's id (db->capture), not copied */

struct vms_db_writer {
	struct vms_db *db;
	struct vms_spsc *q;
	struct vms_spsc_cursor qc;   /* the analysis' place in it */
	pthread_t th;
	atomic_bool cancel;          /* drop what is left (the capture was given up) */
};

/* A row to the backend, in whichever thread has it: the first error stops the rest. */
int vms_db_put_row(struct vms_db *db, enum vms_db_table_id t, const struct vms_db_value *v)
{
	if (atomic_load_explicit(&db->failed, memory_order_relaxed))
		return -1;
	if (db->ops->row(db, t, v) != 0) {
		/* the error's text in db->err, then released for vms_db_error in the other thread */
		vms_db_fail(db, "writing a row of %s", vms_db_table(t)->name);
		atomic_store_explicit(&db->failed, true, memory_order_release);
		return -1;
	}
	/* one thread counts at a time: no read-modify-write needed, only no torn reads */
	atomic_store_explicit(&db->rows[t], atomic_load_explicit(&db->rows[t], memory_order_relaxed) + 1,
			      memory_order_relaxed);
	return 0;
}

static void play(struct vms_db *db, const unsigned char *p)
{
	const struct wrow *r = (const void *)p;
	const struct wval *w = (const void *)(r + 1);
	struct vms_db_value v[MAX_COLS];
	for (uint32_t c = 0; c < r->ncols; c++) {
		v[c] = (struct vms_db_value){ .kind = w[c].kind };
		if (w[c].kind == ID)
			v[c] = (struct vms_db_value){ .kind = VMS_DB_V_TEXT, .s = db->capture };
		else if (w[c].kind == VMS_DB_V_TEXT)
			v[c].s = (const char *)p + w[c].off;
		else if (w[c].kind == VMS_DB_V_INT)
			v[c].i = w[c].u.i;
		else if (w[c].kind == VMS_DB_V_REAL)
			v[c].r = w[c].u.r;
	}
	vms_db_put_row(db, r->table, v);
}

static void *writer(void *arg)
{
	struct vms_db_writer *w = arg;
	const unsigned char *p;
	size_t len;
	while ((p = vms_spsc_next(w->q, &len))) {
		if (!atomic_load_explicit(&w->cancel, memory_order_relaxed))
			for (size_t off = 0; off < len; off += ((const struct wrow *)(p + off))->size)
				play(w->db, p + off);
		vms_spsc_release(w->q);
	}
	return NULL;
}

static bool threads_wanted(void)
{
	const char *e = getenv("VMS_DB_THREADS");
	return !e || strcmp(e, "0") != 0;
}

struct vms_db_writer *vms_db_writer_start(struct vms_db *db)
{
	if (!threads_wanted())
		return NULL;
	struct vms_db_writer *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->db = db;
	atomic_init(&w->cancel, false);
	if (!(w->q = vms_spsc_new(BLOCK_SIZE, BLOCKS)) ||
	    pthread_create(&w->th, NULL, writer, w) != 0) {
		vms_spsc_free(w->q);
		free(w);
		return NULL;   /* unthreaded: the same rows */
	}
	return w;
}

int vms_db_writer_row(struct vms_db_writer *w, enum vms_db_table_id t,
		      const struct vms_db_value *v)
{
	struct vms_db *db = w->db;
	if (atomic_load_explicit(&db->failed, memory_order_acquire))
		return -1;
	uint32_t nc = vms_db_table(t)->nr_cols;
	size_t size = sizeof(struct wrow) + nc * sizeof(struct wval);
	size_t lens[MAX_COLS];
	bool id = v[0].kind == VMS_DB_V_TEXT && !strcmp(v[0].s, db->capture);
	for (uint32_t c = id; c < nc && nc <= MAX_COLS; c++)
		if (v[c].kind == VMS_DB_V_TEXT)
			size += (lens[c] = strlen(v[c].s)) + 1;
	size = (size + 7) & ~(size_t)7;
	if (nc > MAX_COLS || size > BLOCK_SIZE) {
		/* a row larger than a block (a long text): the writer emptied, then it here */
		vms_spsc_drain(w->q, &w->qc);
		return vms_db_put_row(db, t, v);
	}
	unsigned char *p = vms_spsc_reserve(w->q, &w->qc, size);
	struct wrow *r = (void *)p;
	struct wval *wv = (void *)(r + 1);
	*r = (struct wrow){ .size = (uint32_t)size, .table = (uint16_t)t, .ncols = (uint16_t)nc };
	size_t off = sizeof *r + nc * sizeof *wv;
	for (uint32_t c = 0; c < nc; c++) {
		wv[c] = (struct wval){ .kind = v[c].kind };
		if (v[c].kind == VMS_DB_V_INT) {
			wv[c].u.i = v[c].i;
		} else if (v[c].kind == VMS_DB_V_REAL) {
			wv[c].u.r = v[c].r;
		} else if (v[c].kind == VMS_DB_V_TEXT) {
			if (c == 0 && id) {
				wv[c].kind = ID;
				continue;
			}
			memcpy(p + off, v[c].s, lens[c] + 1);
			wv[c].off = (uint32_t)off;
			off += lens[c] + 1;
		}
	}
	return 0;
}

void vms_db_writer_stop(struct vms_db_writer *w, bool cancel)
{
	if (!w)
		return;
	if (cancel)
		atomic_store(&w->cancel, true);
	vms_spsc_close(w->q, &w->qc);
	pthread_join(w->th, NULL);
	vms_spsc_free(w->q);
	free(w);
}
