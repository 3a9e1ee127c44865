/* What `serve` shows before any window (serve_index.h): computed from the traces, or read
 * from the index file that `vmscope index` or an earlier `serve` wrote. */
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmds.h"
#include "serve_index.h"
#include "vmscope/findings.h"
#include "vmscope/html.h"
#include "vmscope/index_key.h"
#include "vmscope/latency.h"
#include "vmscope/writers.h"

/* The findings of `report`, as report --json writes them, from the run of the page. */
static int put_findings(struct cli *c, struct serve_art *a, struct vms_findings *fd,
			struct vms_latency *lat)
{
	struct vms_session *s = c->s;
	cli_findings_compute(s, fd, lat);
	FILE *f = open_memstream(&a->findings, &a->findings_len);
	if (!f)
		return -1;
	struct vms_json j;
	vms_json_init(&j, f, false);
	vms_json_begin_object(&j, NULL);
	cli_findings_json(&j, vms_session_model(s), fd);
	vms_json_end_object(&j);
	vms_json_finish(&j);
	return fclose(f) != 0 ? -1 : 0;
}

/* What writes the optional sections, after the page's run. */
struct page_run {
	struct vms_serve_rows_acc *rows;
	struct vms_session *s;
};

static int put_summary(void *ctx, FILE *f)
{
	struct page_run *p = ctx;
	return vms_serve_rows_write_summary(p->rows, p->s, f);
}

static int put_model(void *ctx, FILE *f)
{
	struct page_run *p = ctx;
	return vms_session_save_model(p->s, f);
}

/* A section kept only when write() says 0 (written); else the index has none. */
static void optional_section(char **buf, size_t *len, int (*write)(void *ctx, FILE *f),
			     void *ctx)
{
	FILE *f = open_memstream(buf, len);
	int w = f ? write(ctx, f) : -1;
	if (f && fclose(f) != 0)
		w = -1;
	if (w) {
		free(*buf);
		*buf = NULL;
		*len = 0;
	}
}

/* The summaries, the largest section (the 50 M-event pair's: 11.7 MB, 5/6 of what the
 * index deflates), are written in a thread of their own while this one makes the rest of the
 * page's sections and then deflates the summaries' bytes as they come (vms_index_zip): at
 * the build's end the readers' pool and the rows' thread are done, so the two share the
 * cores there, and the write no longer deflates them after the fact. The writer, done before
 * (it writes ~1/2 of what deflating them costs), then deflates the checkpoints too. */
#define SUM_CHUNK (1u << 20)

struct sum_job {
	struct page_run pr;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char **chunk;             /* handed over, in order (their lengths in len) */
	size_t *len;
	size_t nr, cap;
	bool done;                /* the writer ended: w its result */
	int w;
	char *cur;                /* the writer's chunk being filled */
	size_t cur_len;
	/* then, for the index file, the checkpoints deflated (a->ckpt's bytes; NULL: not) */
	const void *ckpt;
	size_t ckpt_len;
	struct vms_index_zip *ckpt_zip;
};

/* The writer's chunk handed over (the consumer deflates it). */
static int sum_hand(struct sum_job *j)
{
	int r = 0;
	pthread_mutex_lock(&j->mu);
	if (j->nr == j->cap) {
		size_t nc = j->cap ? 2 * j->cap : 64;
		char **c = realloc(j->chunk, nc * sizeof *c);
		if (c)
			j->chunk = c;
		size_t *l = c ? realloc(j->len, nc * sizeof *l) : NULL;
		if (l)
			j->len = l;
		if (c && l)
			j->cap = nc;
	}
	if (j->nr < j->cap) {
		j->chunk[j->nr] = j->cur;
		j->len[j->nr++] = j->cur_len;
		j->cur = NULL;
		j->cur_len = 0;
	} else {
		r = -1;
	}
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
	return r;
}

static ssize_t sum_write(void *cookie, const char *buf, size_t n)
{
	struct sum_job *j = cookie;
	for (size_t off = 0; off < n;) {
		if (!j->cur && !(j->cur = malloc(SUM_CHUNK)))
			return -1;
		size_t k = n - off < SUM_CHUNK - j->cur_len ? n - off : SUM_CHUNK - j->cur_len;
		memcpy(j->cur + j->cur_len, buf + off, k);
		j->cur_len += k;
		off += k;
		if (j->cur_len == SUM_CHUNK && sum_hand(j) < 0)
			return -1;
	}
	return (ssize_t)n;
}

static void *sum_writer(void *arg)
{
	struct sum_job *j = arg;
	FILE *f = fopencookie(j, "w", (cookie_io_functions_t){ .write = sum_write });
	int w = f ? put_summary(&j->pr, f) : -1;
	if (f && fclose(f) != 0)
		w = -1;
	if (!w && j->cur_len && sum_hand(j) < 0)
		w = -1;
	pthread_mutex_lock(&j->mu);
	j->done = true;
	j->w = w;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
	if (j->ckpt && (j->ckpt_zip = vms_index_zip_new()))
		vms_index_zip_add(j->ckpt_zip, j->ckpt, j->ckpt_len);
	return NULL;
}

/* Start the summaries' writer (then the checkpoints' deflate, save: for the index file);
 * false when no thread could be made (then none runs). */
static bool sum_start(struct sum_job *j, struct page_run pr, const struct serve_art *a,
		      bool save)
{
	*j = (struct sum_job){ .pr = pr, .ckpt = save ? a->ckpt : NULL, .ckpt_len = a->ckpt_len };
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	if (pthread_create(&j->th, NULL, sum_writer, j) == 0)
		return true;
	pthread_cond_destroy(&j->cv);
	pthread_mutex_destroy(&j->mu);
	return false;
}

/* The writer's chunks deflated (into zip, when not NULL) as they come, then its bytes whole
 * into a's summary (none when it wrote none or failed, as optional_section). */
static void sum_finish(struct sum_job *j, struct serve_art *a, struct vms_index_zip *zip)
{
	size_t i = 0, total = 0;
	for (;;) {
		pthread_mutex_lock(&j->mu);
		while (i == j->nr && !j->done)
			pthread_cond_wait(&j->cv, &j->mu);
		bool more = i < j->nr;
		const char *p = more ? j->chunk[i] : NULL;
		size_t l = more ? j->len[i] : 0;
		pthread_mutex_unlock(&j->mu);
		if (!more)
			break;
		if (zip)
			vms_index_zip_add(zip, p, l);
		total += l;
		i++;
	}
	pthread_join(j->th, NULL);
	a->ckpt_zip = j->ckpt_zip;
	pthread_cond_destroy(&j->cv);
	pthread_mutex_destroy(&j->mu);
	char *buf = !j->w ? malloc(total ? total : 1) : NULL;
	for (size_t k = 0, off = 0; k < j->nr; k++) {
		if (buf)
			memcpy(buf + off, j->chunk[k], j->len[k]);
		off += j->len[k];
		free(j->chunk[k]);
	}
	free(j->chunk);
	free(j->len);
	free(j->cur);
	if (buf) {
		a->summary = buf;
		a->summary_len = total;
		a->summary_zip = zip;
	} else {
		vms_index_zip_free(zip);
	}
}

/* The page: `vmscope html`'s, in its server mode; the findings of `report` and the rows of
 * /api/rows from the same run (one pass over the traces after the model's). */
static int make_page(struct cli *c, struct serve_art *a, bool save, struct vms_error *err)
{
	struct vms_sinks sinks;
	struct vms_serve_rows_acc *rows = vms_serve_rows_begin(c->s, &sinks, err);
	if (!rows)
		return -1;
	/* the server answers windows exactly: the page keeps no records nor summary timeline
	 * of its own */
	const struct vms_html_opts ho = { .vcpu = -1, .summary_only = true, .served = true };
	struct vms_html *h = vms_html_new(NULL, &ho);
	struct vms_observer obs, lo, fo;
	struct vms_latency *lat = vms_latency_new(NULL, NULL, NULL, &lo);
	struct vms_findings *fd = vms_findings_new(NULL, &fo);
	if (h) {
		/* the page's exit histograms in the rows' thread, with the rows' exits (what
		 * else the served page takes of the run is at its start and finish) */
		obs = vms_html_observer(h);
		vms_serve_rows_tee_exits(rows, obs.exit_end, obs.ctx);
		obs.exit_end = NULL;
	}
	if (!h || !lat || !fd || vms_session_observe(c->s, &lo) < 0 ||
	    vms_session_observe(c->s, &fo) < 0 || vms_session_observe(c->s, &obs) < 0) {
		vms_html_free(h);
		vms_latency_free(lat);
		vms_findings_free(fd);
		vms_serve_rows_free(rows);
		return vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	}
	vms_findings_time_unit(fd, cli_cycles());
	/* VMS_SERVE_CKPT_EVERY=N: another spacing (the tests' small traces) */
	const char *ev = getenv("VMS_SERVE_CKPT_EVERY");
	unsigned long long every = ev ? strtoull(ev, NULL, 10) : 0;
	vms_session_record_checkpoints(c->s, every ? every : SERVE_CKPT_EVERY);
	int r = vms_session_run(c->s, &sinks, NULL, NULL, err);
	size_t cl = 0;
	const void *ck = r ? NULL : vms_session_checkpoints(c->s, &cl);
	if (ck && (a->ckpt = malloc(cl))) {
		memcpy(a->ckpt, ck, cl);
		a->ckpt_len = cl;
	}
	FILE *rf = r ? NULL : open_memstream(&a->rows, &a->rows_len);
	if (rf) {
		vms_serve_rows_write(rows, c->s, rf);
		if (fclose(rf) != 0)
			r = vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	} else if (!r) {
		r = vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	}
	/* (no summaries: the windows replay; no model: the queries build it) */
	struct page_run pr = { rows, c->s };
	struct sum_job sj;
	bool sum_thread = !r && sum_start(&sj, pr, a, save);
	if (!r && !sum_thread)
		optional_section(&a->summary, &a->summary_len, put_summary, &pr);
	if (!r && put_findings(c, a, fd, lat) < 0)
		r = vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	if (!r)
		optional_section(&a->model, &a->model_len, put_model, &pr);
	vms_latency_free(lat);
	vms_findings_free(fd);
	if (r < 0) {
		if (sum_thread)
			sum_finish(&sj, a, NULL);
		vms_serve_rows_free(rows);
		vms_html_free(h);
		return -1;
	}
	char *summary = NULL;
	size_t slen = 0;
	FILE *sf = open_memstream(&summary, &slen);
	if (sf) {
		cli_report_text(sf, c->s, 10);
		fclose(sf);
	}
	struct vms_html_page pg = { .title = "vmscope serve", .summary = summary,
				    .analysis = vms_session_analysis(c->s),
				    .events = vms_session_events(c->s), .time_unit = cli_unit(),
				    .serve = true };
	FILE *pf = open_memstream(&a->page, &a->page_len);
	int w = pf ? vms_html_write(h, pf, &pg) : VMS_ERR_NOMEM;
	if (pf && fclose(pf) != 0 && !w)
		w = VMS_ERR_NOMEM;
	free(summary);
	vms_html_free(h);
	if (sum_thread)
		sum_finish(&sj, a, save ? vms_index_zip_new() : NULL);
	vms_serve_rows_free(rows);
	return w ? vms_error_set(err, VMS_ERR_NOMEM, "out of memory building the page") : 0;
}

int serve_art_build(struct cli *c, const struct vms_serve_traces *t, struct serve_art *a,
		    bool save, struct vms_error *err)
{
	(void)t;
	return make_page(c, a, save, err) < 0 ? -1 : 0;
}

void serve_art_free(struct serve_art *a)
{
	free(a->page);
	free(a->findings);
	free(a->rows);
	free(a->ckpt);
	vms_index_zip_free(a->ckpt_zip);
	free(a->summary);
	vms_index_zip_free(a->summary_zip);
	free(a->model);
	*a = (struct serve_art){ 0 };
}

int serve_index_opt(const char *cmd, int argc, char **argv, int *i, bool out,
		    struct serve_index_opts *o, const char *usage)
{
	static const char *const names[] = { "--cache-dir", "--index", "--output", "-o" };
	const char *a = argv[*i];
	for (unsigned k = 0; k < 4; k++) {
		size_t l = strlen(names[k]);
		if (k >= 2 && !out)
			break;
		const char *v;
		if (!strcmp(a, names[k])) {
			if (*i + 1 >= argc) {
				fprintf(stderr, "vmscope %s: %s needs a value\n%s", cmd, names[k], usage);
				return -1;
			}
			v = argv[++*i];
		} else if (k < 3 && !strncmp(a, names[k], l) && a[l] == '=') {
			v = a + l + 1;
		} else if (k == 3 && !strncmp(a, "-o", 2) && a[2]) {
			v = a + 2;
		} else {
			continue;
		}
		if (!*v) {
			fprintf(stderr, "vmscope %s: %s: an empty value\n%s", cmd, names[k], usage);
			return -1;
		}
		if (k == 0)
			o->cache_dir = v;
		else
			o->file = v;
		return 1;
	}
	if (!out && !strcmp(a, "--no-index")) {
		o->off = true;
		return 1;
	}
	return 0;
}

/* The program itself is part of the key: its page, analysis and this file's layout are in
 * the index, and another build may differ in any of them. */
static void tool_id(char *buf, size_t len)
{
	char self[PATH_MAX];
	struct stat st;
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0 && stat("/proc/self/exe", &st) == 0) {
		self[n] = 0;
		snprintf(buf, len, "vmscope %s %s size %lld mtime %lld.%09ld", VMSCOPE_VERSION, self,
			 (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	} else {
		snprintf(buf, len, "vmscope %s (no /proc/self/exe)", VMSCOPE_VERSION);
	}
}

int serve_index_locate(struct cli *c, const struct serve_index_opts *o, char **key, char **path,
		       struct vms_error *err)
{
	char tool[PATH_MAX + 128];
	tool_id(tool, sizeof tool);
	/* --tsc-hz changes the unit of the findings too; it is in the session's options */
	*key = vms_index_key(c->paths, c->nr_paths, &c->sopts, tool, err);
	if (!*key)
		return -1;
	*path = o->file ? strdup(o->file) : vms_index_cache_path(o->cache_dir, *key, err);
	if (!*path) {
		free(*key);
		*key = NULL;
		return err->status ? -1 : vms_error_set(err, VMS_ERR_NOMEM, "out of memory");
	}
	return 0;
}

int serve_art_save(const char *path, const char *key, const struct serve_art *a,
		   struct vms_error *err)
{
	struct vms_index_sect s[6] = {
		{ .type = VMS_INDEX_PAGE, .data = a->page, .len = a->page_len },
		{ .type = VMS_INDEX_FINDINGS, .data = a->findings, .len = a->findings_len },
		{ .type = VMS_INDEX_ROWS, .data = a->rows, .len = a->rows_len },
	};
	uint32_t n = 3;
	if (a->ckpt)
		s[n++] = (struct vms_index_sect){ .type = VMS_INDEX_CHECKPOINTS, .data = a->ckpt,
						  .len = a->ckpt_len, .zip = a->ckpt_zip };
	if (a->summary)
		s[n++] = (struct vms_index_sect){ .type = VMS_INDEX_SUMMARIES, .data = a->summary,
						  .len = a->summary_len, .zip = a->summary_zip };
	if (a->model)
		s[n++] = (struct vms_index_sect){ .type = VMS_INDEX_MODEL, .data = a->model,
						  .len = a->model_len };
	return vms_index_write(path, key, s, n, err);
}

static char *dup_sect(const struct vms_index *x, uint32_t type, size_t *len)
{
	const struct vms_index_sect *s = vms_index_section(x, type);
	if (!s || s->len > SIZE_MAX - 1)
		return NULL;
	char *p = malloc((size_t)s->len + 1);
	if (!p)
		return NULL;
	memcpy(p, s->data, (size_t)s->len);
	p[s->len] = 0;
	*len = (size_t)s->len;
	return p;
}

int serve_art_load(const char *path, const char *key, struct serve_art *a,
		   enum vms_index_state *state, struct vms_error *err)
{
	struct vms_index *x = vms_index_read(path, key, state, err);
	if (!x)
		return -1;
	a->page = dup_sect(x, VMS_INDEX_PAGE, &a->page_len);
	a->findings = dup_sect(x, VMS_INDEX_FINDINGS, &a->findings_len);
	a->rows = dup_sect(x, VMS_INDEX_ROWS, &a->rows_len);
	/* (none when a source cannot seek; no summaries when the traces have no rows) */
	if (vms_index_section(x, VMS_INDEX_CHECKPOINTS))
		a->ckpt = dup_sect(x, VMS_INDEX_CHECKPOINTS, &a->ckpt_len);
	if (vms_index_section(x, VMS_INDEX_SUMMARIES))
		a->summary = dup_sect(x, VMS_INDEX_SUMMARIES, &a->summary_len);
	if (vms_index_section(x, VMS_INDEX_MODEL))
		a->model = dup_sect(x, VMS_INDEX_MODEL, &a->model_len);
	bool ck_lost = (vms_index_section(x, VMS_INDEX_CHECKPOINTS) && !a->ckpt) ||
		       (vms_index_section(x, VMS_INDEX_SUMMARIES) && !a->summary) ||
		       (vms_index_section(x, VMS_INDEX_MODEL) && !a->model);
	vms_index_free(x);
	if (ck_lost) {
		serve_art_free(a);
		return vms_error_set(err, VMS_ERR_NOMEM, "%s: out of memory", path);
	}
	if (!a->page || !a->findings || !a->rows) {
		/* a sound file of this key without a section is one we did not write */
		serve_art_free(a);
		*state = VMS_INDEX_DAMAGED;
		return vms_error_set(err, VMS_ERR_FORMAT, "%s: a section is missing at byte offset 0",
				     path);
	}
	return 0;
}

struct cache_file {
	char *path;
	uint64_t size;
	int64_t mtime;
};

static int older_first(const void *x, const void *y)
{
	const struct cache_file *a = x, *b = y;
	return a->mtime < b->mtime ? -1 : a->mtime > b->mtime;
}

int serve_index_prune(const char *dir, const char *keep, uint64_t max_bytes, bool say)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct cache_file *files = NULL;
	size_t nr = 0, cap = 0;
	uint64_t total = 0;
	int removed = 0;
	time_t now = time(NULL);
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		bool idx = l > 7 && !strcmp(e->d_name + l - 7, ".vmsidx");
		bool tmp = strstr(e->d_name, ".vmsidx.tmp.") != NULL;
		if (!idx && !tmp)
			continue;
		size_t pl = strlen(dir) + l + 2;
		char *p = malloc(pl);
		struct stat st;
		if (!p)
			break;
		snprintf(p, pl, "%s/%s", dir, e->d_name);
		if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode) || (keep && !strcmp(p, keep))) {
			free(p);
			continue;
		}
		/* a temporary file a day old is a writer that died; an index whose traces or
		 * program changed is never asked for again */
		char *key = idx ? vms_index_read_key(p) : NULL;
		bool gone = tmp ? now - st.st_mtime > 86400 : !key || vms_index_key_stale(key);
		free(key);
		if (tmp && !gone) {
			free(p);
			continue;
		}
		if (gone) {
			if (unlink(p) == 0) {
				removed++;
				if (say)
					printf("%s\n", p);
			}
			free(p);
			continue;
		}
		if (nr == cap) {
			size_t nc = cap ? 2 * cap : 32;
			struct cache_file *nf = realloc(files, nc * sizeof *nf);
			if (!nf) {
				free(p);
				break;
			}
			files = nf;
			cap = nc;
		}
		files[nr++] = (struct cache_file){ p, (uint64_t)st.st_size, (int64_t)st.st_mtime };
		total += (uint64_t)st.st_size;
	}
	closedir(d);
	/* over the budget: the oldest go first */
	if (nr)
		qsort(files, nr, sizeof *files, older_first);
	for (size_t i = 0; i < nr; i++) {
		if (total > max_bytes && unlink(files[i].path) == 0) {
			total -= files[i].size;
			removed++;
			if (say)
				printf("%s\n", files[i].path);
		}
		free(files[i].path);
	}
	free(files);
	return removed;
}

uint64_t serve_index_cache_max(void)
{
	const char *e = getenv("VMS_INDEX_CACHE_MAX");
	char *end;
	unsigned long long v = e ? strtoull(e, &end, 10) : 0;
	return e && *e && !*end ? (uint64_t)v : SERVE_CACHE_MAX;
}

void serve_index_upkeep(const struct serve_index_opts *o, const char *written)
{
	if (o->file)
		return;   /* (a file of the user's: no cache) */
	struct vms_error e = { 0 };
	char *dir = vms_index_cache_dir(o->cache_dir, &e);
	if (dir)
		serve_index_prune(dir, written, serve_index_cache_max(), false);
	free(dir);
}
