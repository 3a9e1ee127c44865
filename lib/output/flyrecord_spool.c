/* Per-CPU page packing, chunk compression on a worker thread, and temporary files: see
 * flyrecord_spool.h. One worker is enough on the 2-core machines we target: the generator
 * fills pages on the calling thread while the worker compresses. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/flyrecord_spool.h"
#include "output/rb_page.h"

struct spool_job {
	uint32_t cpu;
	uint32_t bytes;
	uint8_t *buf;
};

struct spool_cpu {
	int fd;
	uint8_t *chunk;          /* chunk being filled */
	uint32_t pages;          /* finished pages in `chunk` */
	bool page_open;
	struct vms_rb_page page;
	uint64_t events, first_ts, last_ts, total_pages;
	/* written by the worker, read after it stopped */
	uint64_t file_bytes, chunks;
};

/* A compression worker: CPU c is always handled by worker c % nr_workers, so each CPU's
 * chunks stay in order. */
struct spool_worker {
	struct vms_spool *s;
	struct vms_codec *codec;
	uint8_t *cbuf;
	size_t cbuf_cap;
	pthread_cond_t cv_job;
	struct spool_job *q;
	uint32_t qhead, qlen;
	pthread_t thr;
	bool started;
};

#define SPOOL_MAX_WORKERS 2

struct vms_spool {
	uint32_t nr_cpus, page_size, chunk_pages;
	size_t chunk_bytes;
	enum vms_tdw_compression comp;
	struct spool_cpu *cpu;
	uint64_t events;

	pthread_mutex_t mu;
	pthread_cond_t cv_free;
	uint8_t **free_bufs;
	uint32_t nfree;
	uint32_t qcap;           /* per worker queue capacity (= the pool: never full) */
	uint32_t nr_workers;
	struct spool_worker wk[SPOOL_MAX_WORKERS];
	bool stop, finished;
	int werr;                /* errno of the workers' first failure */
	uint8_t *mem;            /* all chunk buffers */
};

static int write_all(int fd, const void *data, size_t n)
{
	const uint8_t *p = data;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int worker_store(struct spool_worker *wk, const struct spool_job *j)
{
	struct vms_spool *s = wk->s;
	struct spool_cpu *c = &s->cpu[j->cpu];
	if (s->comp == VMS_TDW_NONE) {
		if (write_all(c->fd, j->buf, j->bytes))
			return errno ? errno : EIO;
		c->file_bytes += j->bytes;
		return 0;
	}
	size_t n = vms_codec_compress(wk->codec, wk->cbuf + 8, wk->cbuf_cap - 8, j->buf, j->bytes);
	if (!n)
		return EIO;
	uint32_t hdr[2] = { (uint32_t)n, j->bytes }; /* csize, usize (little-endian host) */
	memcpy(wk->cbuf, hdr, 8);
	if (write_all(c->fd, wk->cbuf, n + 8))
		return errno ? errno : EIO;
	c->file_bytes += n + 8;
	c->chunks++;
	return 0;
}

static void *worker_main(void *arg)
{
	struct spool_worker *wk = arg;
	struct vms_spool *s = wk->s;
	for (;;) {
		pthread_mutex_lock(&s->mu);
		while (!wk->qlen && !s->stop)
			pthread_cond_wait(&wk->cv_job, &s->mu);
		if (!wk->qlen) {
			pthread_mutex_unlock(&s->mu);
			return NULL;
		}
		struct spool_job j = wk->q[wk->qhead];
		wk->qhead = (wk->qhead + 1) % s->qcap;
		wk->qlen--;
		bool failed = s->werr != 0;
		pthread_mutex_unlock(&s->mu);

		int e = failed ? 0 : worker_store(wk, &j);

		pthread_mutex_lock(&s->mu);
		if (e && !s->werr)
			s->werr = e;
		s->free_bufs[s->nfree++] = j.buf;
		pthread_cond_signal(&s->cv_free);
		pthread_mutex_unlock(&s->mu);
	}
}

static int open_tmp(const char *dir, uint32_t cpu)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/.vmscope-cpu%u-XXXXXX", dir && *dir ? dir : ".", cpu);
	int fd = mkstemp(path);
	if (fd >= 0)
		unlink(path); /* nothing is left behind, whatever happens */
	return fd;
}

int vms_spool_open(struct vms_spool **out, const char *tmp_dir, uint32_t nr_cpus,
		   uint32_t page_size, uint32_t chunk_pages, enum vms_tdw_compression comp,
		   int level, struct vms_error *err)
{
	*out = NULL;
	if (!nr_cpus || nr_cpus > 4096 || page_size < 256 || (page_size & (page_size - 1)) ||
	    !chunk_pages || chunk_pages > 1024)
		return vms_error_set(err, VMS_ERR_USAGE, "trace.dat writer: bad geometry "
				     "(%u CPUs, page %u, chunk %u pages)", nr_cpus, page_size, chunk_pages);
	struct vms_spool *s = calloc(1, sizeof *s);
	if (!s)
		return vms_error_set(err, VMS_ERR_NOMEM, "trace.dat writer: out of memory");
	s->nr_cpus = nr_cpus;
	s->page_size = page_size;
	s->chunk_pages = chunk_pages;
	s->chunk_bytes = (size_t)page_size * chunk_pages;
	s->comp = comp;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv_free, NULL);
	/* Two workers when there are CPUs to share: compression is the writer's costliest part. */
	s->nr_workers = nr_cpus >= 2 && comp != VMS_TDW_NONE ? SPOOL_MAX_WORKERS : 1;

	uint32_t pool = nr_cpus + 2 * nr_cpus + 4;
	s->qcap = pool;
	s->cpu = calloc(nr_cpus, sizeof *s->cpu);
	if (s->cpu)
		for (uint32_t i = 0; i < nr_cpus; i++)
			s->cpu[i].fd = -1;
	s->free_bufs = calloc(pool, sizeof *s->free_bufs);
	s->mem = malloc(s->chunk_bytes * pool);
	if (!s->cpu || !s->free_bufs || !s->mem)
		goto nomem;
	for (uint32_t i = 0; i < s->nr_workers; i++) {
		struct spool_worker *wk = &s->wk[i];
		wk->s = s;
		pthread_cond_init(&wk->cv_job, NULL);
		wk->q = calloc(pool, sizeof *wk->q);
		wk->codec = vms_codec_new(comp, level);
		if (!wk->q || !wk->codec)
			goto nomem;
		wk->cbuf_cap = vms_codec_bound(wk->codec, s->chunk_bytes) + 8;
		wk->cbuf = malloc(wk->cbuf_cap);
		if (!wk->cbuf)
			goto nomem;
	}
	for (uint32_t i = 0; i < pool; i++)
		s->free_bufs[s->nfree++] = s->mem + i * s->chunk_bytes;
	for (uint32_t i = 0; i < nr_cpus; i++) {
		s->cpu[i].fd = open_tmp(tmp_dir, i);
		if (s->cpu[i].fd < 0) {
			int e = errno;
			vms_spool_free(s);
			return vms_error_set(err, VMS_ERR_IO, "%s: cannot create a temporary file: %s",
					     tmp_dir && *tmp_dir ? tmp_dir : ".", strerror(e));
		}
		s->cpu[i].chunk = s->free_bufs[--s->nfree];
	}
	for (uint32_t i = 0; i < s->nr_workers; i++) {
		if (pthread_create(&s->wk[i].thr, NULL, worker_main, &s->wk[i])) {
			vms_spool_free(s);
			return vms_error_set(err, VMS_ERR_INTERNAL, "trace.dat writer: cannot start a thread");
		}
		s->wk[i].started = true;
	}
	*out = s;
	return VMS_OK;
nomem:
	vms_spool_free(s);
	return vms_error_set(err, VMS_ERR_NOMEM, "trace.dat writer: out of memory");
}

static void stop_workers(struct vms_spool *s)
{
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	for (uint32_t i = 0; i < s->nr_workers; i++)
		pthread_cond_signal(&s->wk[i].cv_job);
	pthread_mutex_unlock(&s->mu);
	for (uint32_t i = 0; i < s->nr_workers; i++)
		if (s->wk[i].started) {
			pthread_join(s->wk[i].thr, NULL);
			s->wk[i].started = false;
		}
}

static int worker_error(struct vms_spool *s, struct vms_error *err)
{
	return vms_error_set(err, VMS_ERR_IO, "trace.dat writer: cannot store CPU data: %s",
			     strerror(s->werr));
}

/* Hand the filled chunk of `c` to the worker and take a free buffer. */
static int submit_chunk(struct vms_spool *s, uint32_t cpu, bool take_new, struct vms_error *err)
{
	struct spool_cpu *c = &s->cpu[cpu];
	struct spool_worker *wk = &s->wk[cpu % s->nr_workers];
	pthread_mutex_lock(&s->mu);
	uint32_t tail = (wk->qhead + wk->qlen) % s->qcap;
	wk->q[tail] = (struct spool_job){ .cpu = cpu, .bytes = c->pages * s->page_size, .buf = c->chunk };
	wk->qlen++;
	pthread_cond_signal(&wk->cv_job);
	c->chunk = NULL;
	c->pages = 0;
	if (take_new) {
		while (!s->nfree && !s->werr)
			pthread_cond_wait(&s->cv_free, &s->mu);
		if (s->nfree)
			c->chunk = s->free_bufs[--s->nfree];
	}
	int werr = s->werr;
	pthread_mutex_unlock(&s->mu);
	if (werr)
		return worker_error(s, err);
	return VMS_OK;
}

int vms_spool_event(struct vms_spool *s, uint32_t cpu, uint64_t ts, const void *payload,
		    uint32_t len, struct vms_error *err)
{
	if (cpu >= s->nr_cpus || s->finished)
		return vms_error_set(err, VMS_ERR_USAGE, "trace.dat writer: no CPU %u", cpu);
	struct spool_cpu *c = &s->cpu[cpu];
	if (c->events && ts < c->last_ts)
		return vms_error_set(err, VMS_ERR_USAGE, "trace.dat writer: time goes back on CPU %u "
				     "(%llu after %llu)", cpu, (unsigned long long)ts,
				     (unsigned long long)c->last_ts);
	if (!c->page_open) {
		vms_rb_page_start(&c->page, c->chunk + (size_t)c->pages * s->page_size, s->page_size);
		c->page_open = true;
	}
	if (!vms_rb_page_add(&c->page, ts, payload, len)) {
		if (!c->page.events)
			return vms_error_set(err, VMS_ERR_USAGE, "trace.dat writer: a %u-byte event "
					     "does not fit a %u-byte page", len, s->page_size);
		vms_rb_page_finish(&c->page);
		c->pages++;
		c->total_pages++;
		if (c->pages == s->chunk_pages) {
			int r = submit_chunk(s, cpu, true, err);
			if (r)
				return r;
		}
		vms_rb_page_start(&c->page, c->chunk + (size_t)c->pages * s->page_size, s->page_size);
		vms_rb_page_add(&c->page, ts, payload, len); /* fits: it fitted an empty page */
	}
	if (!c->events)
		c->first_ts = ts;
	c->events++;
	c->last_ts = ts;
	s->events++;
	return VMS_OK;
}

int vms_spool_finish(struct vms_spool *s, struct vms_error *err)
{
	if (s->finished)
		return VMS_OK;
	int rc = VMS_OK;
	for (uint32_t i = 0; i < s->nr_cpus && !rc; i++) {
		struct spool_cpu *c = &s->cpu[i];
		if (c->page_open && c->page.events) {
			vms_rb_page_finish(&c->page);
			c->pages++;
			c->total_pages++;
		}
		c->page_open = false;
		if (c->pages)
			rc = submit_chunk(s, i, false, err);
	}
	stop_workers(s);
	s->finished = true;
	if (!rc && s->werr)
		rc = worker_error(s, err);
	return rc;
}

void vms_spool_cpu_info(const struct vms_spool *s, uint32_t cpu, struct vms_spool_cpu_info *info)
{
	const struct spool_cpu *c = &s->cpu[cpu];
	info->events = c->events;
	info->first_ts = c->first_ts;
	info->last_ts = c->last_ts;
	info->pages = c->total_pages;
	info->chunks = c->chunks;
	info->stored_bytes = c->file_bytes + (s->comp != VMS_TDW_NONE && c->file_bytes ? 4 : 0);
}

int vms_spool_copy_cpu(struct vms_spool *s, uint32_t cpu, int out_fd, struct vms_error *err)
{
	struct spool_cpu *c = &s->cpu[cpu];
	if (!c->file_bytes)
		return VMS_OK;
	if (s->comp != VMS_TDW_NONE) {
		if (c->chunks > UINT32_MAX)
			return vms_error_set(err, VMS_ERR_USAGE, "trace.dat writer: CPU %u has more "
					     "than 2^32 chunks", cpu);
		uint32_t n = (uint32_t)c->chunks;
		if (write_all(out_fd, &n, 4))
			goto io;
	}
	loff_t off = 0;
	uint64_t left = c->file_bytes;
	while (left) {
		ssize_t r = copy_file_range(c->fd, &off, out_fd, NULL, left, 0);
		if (r <= 0)
			break; /* not supported here: plain copy below */
		left -= (uint64_t)r;
	}
	if (left) {
		static const size_t bufsz = 1 << 20;
		uint8_t *buf = malloc(bufsz);
		if (!buf)
			return vms_error_set(err, VMS_ERR_NOMEM, "trace.dat writer: out of memory");
		while (left) {
			size_t want = left < bufsz ? (size_t)left : bufsz;
			ssize_t r = pread(c->fd, buf, want, off);
			if (r <= 0 || write_all(out_fd, buf, (size_t)r)) {
				free(buf);
				goto io;
			}
			off += r;
			left -= (uint64_t)r;
		}
		free(buf);
	}
	return VMS_OK;
io:
	return vms_error_set(err, VMS_ERR_IO, "trace.dat writer: cannot copy CPU %u data: %s",
			     cpu, strerror(errno ? errno : EIO));
}

uint64_t vms_spool_events(const struct vms_spool *s)
{
	return s->events;
}

void vms_spool_free(struct vms_spool *s)
{
	if (!s)
		return;
	stop_workers(s);
	if (s->cpu)
		for (uint32_t i = 0; i < s->nr_cpus; i++)
			if (s->cpu[i].fd >= 0)
				close(s->cpu[i].fd);
	for (uint32_t i = 0; i < s->nr_workers; i++) {
		struct spool_worker *wk = &s->wk[i];
		vms_codec_free(wk->codec);
		free(wk->cbuf);
		free(wk->q);
		if (wk->s)
			pthread_cond_destroy(&wk->cv_job);
	}
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv_free);
	free(s->cpu);
	free(s->free_bufs);
	free(s->mem);
	free(s);
}
