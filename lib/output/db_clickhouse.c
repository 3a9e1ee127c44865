/* The ClickHouse backend: the tables over the server's HTTP interface (libcurl), MergeTree
 * ordered by each table's key (db_schema.c); rows sent as INSERT ... FORMAT TabSeparated
 * bodies of at most db->batch_rows rows or db->batch_bytes bytes, so memory is bounded by
 * one batch per table.
 *
 * Idempotence without transactions (ClickHouse 18.16 has none): the capture id is derived
 * from the inputs (cmd-db.c), every row carries it, and the capture's row in `captures` is
 * written last, as the commit marker; queries join `captures`, so rows of a load that
 * failed half-way are never counted. The next load of that id first deletes them (ALTER
 * TABLE ... DELETE WHERE capture = id, a mutation; it touches only the parts that exist
 * when it is made, so the rows written next are not affected). Only tables that hold such
 * rows get a mutation (a mutation rewrites every part of its table).
 *
 * A cluster: with `cluster`, the first server's tables <t>_all are Distributed(cluster,
 * database, <t>, cityHash64(capture)) over the shards' <t>; rows are written into <t>_all
 * with insert_distributed_sync=1 (so an INSERT returns once every shard has its rows) and
 * queries read <t>_all. Every shard's URL is given (comma-separated), since 18.16 has no
 * ON CLUSTER without ZooKeeper: the local tables are created, and leftovers deleted, on each. */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db_backend.h"

#define MAX_SHARDS 16
#define MAX_REPLY (64u << 20)   /* a query's result held at most (the fleet queries: a few KiB) */

struct house {
	CURL *curl;
	char *url[MAX_SHARDS];      /* base URLs, without the query string */
	char *params;               /* the URL's own parameters ("database=x"), or "" */
	uint32_t nr_urls;
	char cluster[64];
	const char *suffix;         /* "" or "_all" */
	struct vms_db_buf batch[VMS_DB_NR_TABLES];
	uint32_t batch_rows[VMS_DB_NR_TABLES];
	struct vms_db_buf reply;
	long status;
};

static int puts_(struct vms_db_buf *b, const char *s)
{
	return vms_db_buf_put(b, s, strlen(s));
}

static size_t on_reply(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct vms_db_buf *b = ctx;
	size_t n = size * nmemb;
	if (b->n + n > MAX_REPLY || vms_db_buf_put(b, data, n) != 0)
		return 0;
	return n;
}

/* POST body to server `shard` with the statement `query` in the URL (NULL: the body is the
 * statement). The reply is in h->reply. */
static int post(struct vms_db *db, uint32_t shard, const char *query, const char *body,
		size_t len, const char *extra)
{
	struct house *h = db->impl;
	struct vms_db_buf url = { 0 };
	char *q = query ? curl_easy_escape(h->curl, query, 0) : NULL;
	int rc = puts_(&url, h->url[shard]) | puts_(&url, "/?") | puts_(&url, h->params);
	if (query)
		rc |= puts_(&url, h->params[0] ? "&query=" : "query=") | puts_(&url, q);
	if (extra)
		rc |= puts_(&url, h->params[0] || query ? "&" : "") | puts_(&url, extra);
	curl_free(q);
	if (rc) {
		free(url.p);
		vms_db_fail(db, "out of memory");
		return -1;
	}
	h->reply.n = 0;
	curl_easy_setopt(h->curl, CURLOPT_URL, url.p);
	curl_easy_setopt(h->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	CURLcode cc = curl_easy_perform(h->curl);
	free(url.p);
	if (cc != CURLE_OK) {
		vms_db_fail(db, "ClickHouse at %s: %s", h->url[shard], curl_easy_strerror(cc));
		return -1;
	}
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &h->status);
	if (h->status != 200) {
		vms_db_fail(db, "ClickHouse at %s: HTTP %ld: %.300s", h->url[shard], h->status,
			    h->reply.n ? h->reply.p : "");
		return -1;
	}
	return 0;
}

static int statement(struct vms_db *db, uint32_t shard, const char *sql)
{
	return post(db, shard, NULL, sql, strlen(sql), NULL);
}

/* A value as TabSeparated wants it: \N for NULL; in text \\ \t \n \r \0 \' escaped. */
static int tsv_value(struct vms_db_buf *b, const struct vms_db_value *v)
{
	char num[40];
	switch (v->kind) {
	case VMS_DB_V_INT:
		snprintf(num, sizeof num, "%lld", (long long)v->i);
		return puts_(b, num);
	case VMS_DB_V_REAL:
		snprintf(num, sizeof num, "%.17g", v->r);
		return puts_(b, num);
	case VMS_DB_V_TEXT:
		for (const char *p = v->s; *p; p++) {
			static const char from[] = "\\\t\n\r'", to[] = "\\tnr'";
			const char *k = strchr(from, *p);
			char e[2] = { '\\', k ? to[k - from] : 0 };
			if (k ? vms_db_buf_put(b, e, 2) : vms_db_buf_put(b, p, 1))
				return -1;
		}
		return 0;
	default:
		return puts_(b, "\\N");
	}
}

/* A string literal for a statement (the capture id is hex; quoted anyway). */
static void literal(char *dst, size_t len, const char *s)
{
	size_t n = 0;
	if (len < 3)
		return;
	dst[n++] = '\'';
	for (; *s && n + 3 < len; s++) {
		if (*s == '\'' || *s == '\\')
			dst[n++] = '\\';
		dst[n++] = *s;
	}
	dst[n++] = '\'';
	dst[n] = '\0';
}

static int flush(struct vms_db *db, enum vms_db_table_id t)
{
	struct house *h = db->impl;
	if (!h->batch_rows[t])
		return 0;
	char q[128];
	snprintf(q, sizeof q, "INSERT INTO %s%s FORMAT TabSeparated", vms_db_table(t)->name,
		 h->suffix);
	int rc = post(db, 0, q, h->batch[t].p, h->batch[t].n,
		      h->suffix[0] ? "insert_distributed_sync=1" : NULL);
	h->batch[t].n = 0;
	h->batch_rows[t] = 0;
	return rc;
}

static int house_row(struct vms_db *db, enum vms_db_table_id t, const struct vms_db_value *v)
{
	struct house *h = db->impl;
	const struct vms_db_table *tb = vms_db_table(t);
	struct vms_db_buf *b = &h->batch[t];
	for (uint32_t c = 0; c < tb->nr_cols; c++)
		if ((c && vms_db_buf_put(b, "\t", 1)) || tsv_value(b, &v[c])) {
			vms_db_fail(db, "out of memory");
			return -1;
		}
	if (vms_db_buf_put(b, "\n", 1)) {
		vms_db_fail(db, "out of memory");
		return -1;
	}
	if (++h->batch_rows[t] >= db->batch_rows || b->n >= db->batch_bytes)
		return flush(db, t);
	return 0;
}

/* The number a `SELECT count()` replied. */
static long long count_of(struct vms_db *db, uint32_t shard, const char *sql)
{
	struct house *h = db->impl;
	if (statement(db, shard, sql) != 0)
		return -1;
	return h->reply.n ? strtoll(h->reply.p, NULL, 10) : -1;
}

/* Mutations run in the background: wait until the deletions are done on every shard, so that
 * the capture's new rows never meet its old ones (at most 10 minutes). */
static int wait_mutations(struct vms_db *db)
{
	struct house *h = db->impl;
	for (uint32_t s = 0; s < h->nr_urls; s++)
		for (int tries = 0;; tries++) {
			long long n = count_of(db, s, "SELECT count() FROM system.mutations WHERE "
						      "database = currentDatabase() AND is_done = 0");
			if (n < 0)
				return -1;
			if (!n)
				break;
			if (tries == 6000) {
				vms_db_fail(db, "ClickHouse at %s: the deletion of an earlier load's rows "
					    "is not done after 10 minutes (system.mutations; after a crash, "
					    "stale tmp_merge_* directories block it: docs/fleet.md)",
					    h->url[s]);
				return -1;
			}
			nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
		}
	return 0;
}

static enum vms_db_begin house_begin(struct vms_db *db, const char *id, bool replace)
{
	struct house *h = db->impl;
	char lit[160], sql[512];
	literal(lit, sizeof lit, id);
	for (uint32_t t = 0; t < VMS_DB_NR_TABLES; t++) {
		h->batch[t].n = 0;
		h->batch_rows[t] = 0;
	}
	snprintf(sql, sizeof sql, "SELECT count() FROM captures%s WHERE capture = %s", h->suffix, lit);
	long long present = count_of(db, 0, sql);
	if (present < 0)
		return VMS_DB_FAILED;
	if (present && !replace)
		return VMS_DB_PRESENT;
	/* the commit marker first (a replaced capture is uncommitted from now on), then the
	 * rows a failed or replaced load left, on every shard */
	for (uint32_t s = 0; s < h->nr_urls; s++)
		for (uint32_t t = 0; t < VMS_DB_NR_TABLES; t++) {
			const char *name = vms_db_table(t)->name;
			snprintf(sql, sizeof sql, "SELECT count() FROM %s WHERE capture = %s", name, lit);
			long long n = count_of(db, s, sql);
			if (n < 0)
				return VMS_DB_FAILED;
			snprintf(sql, sizeof sql, "ALTER TABLE %s DELETE WHERE capture = %s", name, lit);
			if (n > 0 && statement(db, s, sql) != 0)
				return VMS_DB_FAILED;
		}
	return wait_mutations(db) ? VMS_DB_FAILED : VMS_DB_BEGUN;
}

static int house_commit(struct vms_db *db, const struct vms_db_value *capture_row)
{
	for (uint32_t t = 0; t < VMS_DB_NR_TABLES; t++)
		if (flush(db, t) != 0)
			return -1;
	if (house_row(db, VMS_DB_CAPTURES, capture_row) != 0)
		return -1;
	return flush(db, VMS_DB_CAPTURES);
}

static void house_abort(struct vms_db *db)
{
	struct house *h = db->impl;
	for (uint32_t t = 0; t < VMS_DB_NR_TABLES; t++) {
		h->batch[t].n = 0;
		h->batch_rows[t] = 0;
	}
}

/* TabSeparated's escapes undone in place; returns whether the cell was \N. */
static bool unescape(char *s)
{
	if (!strcmp(s, "\\N"))
		return true;
	char *w = s;
	for (char *p = s; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			*w++ = *p == 't' ? '\t' : *p == 'n' ? '\n' : *p == 'r' ? '\r' : *p == '0' ? '\0'
			       : *p;
		} else {
			*w++ = *p;
		}
	}
	*w = '\0';
	return false;
}

static int house_query(struct vms_db *db, const char *sql, FILE *out, bool csv)
{
	struct house *h = db->impl;
	struct vms_db_buf q = { 0 };
	if (puts_(&q, sql) || puts_(&q, " FORMAT TSVWithNames")) {
		free(q.p);
		vms_db_fail(db, "out of memory");
		return -1;
	}
	int rc = statement(db, 0, q.p);
	free(q.p);
	if (rc)
		return -1;
	struct vms_db_result *r = vms_db_result_new();
	char *save = NULL;
	for (char *line = r ? strtok_r(h->reply.p ? h->reply.p : (char[]){ 0 }, "\n", &save) : NULL;
	     line && !rc; line = strtok_r(NULL, "\n", &save)) {
		for (char *cell = line, *tab;; cell = tab + 1) {
			tab = strchr(cell, '\t');
			if (tab)
				*tab = '\0';
			bool null = unescape(cell);
			rc |= vms_db_result_cell(r, null ? NULL : cell);
			if (!tab)
				break;
		}
		vms_db_result_end_row(r);
	}
	if (!r || rc)
		vms_db_fail(db, "out of memory");
	else
		vms_db_result_print(r, out, csv);
	vms_db_result_free(r);
	return db->err[0] ? -1 : 0;
}

static void house_close(struct vms_db *db)
{
	struct house *h = db->impl;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	for (uint32_t s = 0; s < h->nr_urls; s++)
		free(h->url[s]);
	for (uint32_t t = 0; t < VMS_DB_NR_TABLES; t++)
		free(h->batch[t].p);
	free(h->reply.p);
	free(h->params);
	free(h);
}

static const struct vms_db_ops house_ops = {
	.name = "clickhouse", .begin = house_begin, .row = house_row, .commit = house_commit,
	.abort = house_abort, .query = house_query, .close = house_close,
};

static const char *ch_type(const struct vms_db_column *c, char *buf, size_t len)
{
	const char *t = c->type == VMS_DB_INT ? "Int64" : c->type == VMS_DB_TEXT ? "String" : "Float64";
	snprintf(buf, len, c->nullable ? "Nullable(%s)" : "%s", t);
	return buf;
}

static int create(struct vms_db *db)
{
	struct house *h = db->impl;
	for (uint32_t t = 0; t < VMS_DB_NR_TABLES; t++) {
		const struct vms_db_table *tb = vms_db_table(t);
		struct vms_db_buf sql = { 0 };
		char ty[40];
		int rc = puts_(&sql, "CREATE TABLE IF NOT EXISTS ") | puts_(&sql, tb->name) |
			 puts_(&sql, " (");
		for (uint32_t c = 0; c < tb->nr_cols; c++)
			rc |= puts_(&sql, c ? ", " : "") | puts_(&sql, tb->cols[c].name) |
			      puts_(&sql, " ") | puts_(&sql, ch_type(&tb->cols[c], ty, sizeof ty));
		rc |= puts_(&sql, ") ENGINE = MergeTree ORDER BY (") | puts_(&sql, tb->key) |
		      puts_(&sql, ")");
		for (uint32_t s = 0; !rc && s < h->nr_urls; s++)
			rc |= statement(db, s, sql.p);
		if (!rc && h->suffix[0]) {
			char dist[512];
			snprintf(dist, sizeof dist, "CREATE TABLE IF NOT EXISTS %s_all AS %s ENGINE = "
				 "Distributed(%s, currentDatabase(), %s, cityHash64(capture))",
				 tb->name, tb->name, h->cluster, tb->name);
			rc |= statement(db, 0, dist);
		}
		free(sql.p);
		if (rc) {
			vms_db_fail(db, "out of memory");
			return -1;
		}
	}
	return 0;
}

struct vms_db *vms_db_open_clickhouse(const char *url, const char *cluster, char *err,
				      size_t len)
{
	static bool global;
	if (!global) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		global = true;
	}
	struct house *h = calloc(1, sizeof *h);
	struct vms_db *db = h ? vms_db_new(&house_ops, h) : NULL;
	if (!db) {
		snprintf(err, len, "out of memory");
		free(h);
		return NULL;
	}
	h->suffix = cluster ? "_all" : "";
	snprintf(h->cluster, sizeof h->cluster, "%s", cluster ? cluster : "");
	/* URL[,URL...]: each "http://host:port[/][?params]"; the first one's params for all */
	char *list = strdup(url);
	char *save = NULL;
	for (char *u = list ? strtok_r(list, ",", &save) : NULL; u && h->nr_urls < MAX_SHARDS;
	     u = strtok_r(NULL, ",", &save)) {
		char *qm = strchr(u, '?');
		if (qm) {
			*qm = '\0';
			if (!h->params)
				h->params = strdup(qm + 1);
		}
		size_t n = strlen(u);
		while (n && u[n - 1] == '/')
			u[--n] = '\0';
		h->url[h->nr_urls++] = strdup(u);
	}
	free(list);
	if (!h->params)
		h->params = strdup("");
	h->curl = curl_easy_init();
	bool ok = h->curl && h->params && h->nr_urls;
	for (uint32_t s = 0; s < h->nr_urls; s++)
		ok &= h->url[s] && (!strncmp(h->url[s], "http://", 7) || !strncmp(h->url[s], "https://", 8));
	if (!ok) {
		snprintf(err, len, "%s: not an http:// URL of a ClickHouse server (or out of memory)", url);
		vms_db_close(db);
		return NULL;
	}
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_reply);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &h->reply);
	curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
	/* a server that stops answering fails the load rather than hanging it */
	curl_easy_setopt(h->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h->curl, CURLOPT_LOW_SPEED_TIME, 60L);
	if (create(db) != 0) {
		snprintf(err, len, "%s", db->err);
		vms_db_close(db);
		return NULL;
	}
	return db;
}
