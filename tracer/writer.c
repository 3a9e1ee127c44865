/* The writer thread: drains the producers' sub-buffers into the CTF trace directory.
 *
 * It wakes when a producer fills a sub-buffer (a futex the producer touches only when the
 * writer said it sleeps, at most once per sub-buffer), at every period (write-out of partly
 * filled sub-buffers), and on requests (flush, new directory, stop). Each write is one CTF
 * packet: the writer builds the packet header and context, the bytes after it are the
 * producer's records as they are. A partly filled sub-buffer is written as a packet of the
 * records committed so far (the producer publishes "end of the last complete record" and
 * "start of the last record" in one 64-bit release store), the rest later as another one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define CTF_MAGIC 0xC1FC1FC1u
#define CLOSED_MARK ".vmst-closed"
#define THREADS_FILE ".vmst-threads"

uint32_t vmst__writer_waiting;
uint32_t vmst__writer_paused;
static uint32_t wake_seq;

static pthread_t thread;
static bool running;
static pthread_mutex_t cmd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cmd_cond = PTHREAD_COND_INITIALIZER;
static uint64_t flush_req, flush_done;       /* under cmd_lock */
static char *new_dir;                        /* under cmd_lock: requested directory */
static uint64_t dir_req, dir_done;
static int dir_result;
static uint32_t stop_req;                    /* atomic */

/* writer-private */
static char *dir;
static char dir_pub[PATH_MAX];               /* for vmst_file_get, under cmd_lock */
static uint8_t uuid[16];
static uint32_t meta_gen = UINT32_MAX;
static uint32_t period_ms;
static bool write_error_said;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void vmst_writer_kick(void)
{
	if (__atomic_load_n(&vmst__writer_waiting, __ATOMIC_SEQ_CST)) {
		__atomic_add_fetch(&wake_seq, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
}

static void say_error(const char *what, const char *path, int err)
{
	if (!write_error_said)
		fprintf(stderr, "vmstrace: %s %s: %s (further errors not shown)\n", what, path,
			strerror(err));
	write_error_said = true;
}

/* ---- the trace directory ---- */

static int write_metadata(void)
{
	char tmp[PATH_MAX], fin[PATH_MAX];
	snprintf(tmp, sizeof tmp, "%s/.metadata.tmp", dir);
	snprintf(fin, sizeof fin, "%s/metadata", dir);
	uint32_t gen = __atomic_load_n(&vmst__tables_gen, __ATOMIC_ACQUIRE);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -errno;
	int rc = vmst_metadata_write(f, uuid, &vmst__clockinfo);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = rc ? rc : -errno;
	if (fclose(f) != 0)
		rc = rc ? rc : -errno;
	if (rc == 0 && rename(tmp, fin) != 0)
		rc = -errno;
	if (rc == 0)
		meta_gen = gen;
	return rc;
}

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Create the directory and remove our own files of an earlier trace in it. */
static int prepare_dir(const char *path)
{
	int rc = mkdir_p(path);
	if (rc)
		return rc;
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strncmp(e->d_name, "stream-", 7) || !strncmp(e->d_name, ".stream-", 8) ||
		    !strcmp(e->d_name, "metadata") ||
		    !strcmp(e->d_name, CLOSED_MARK) || !strcmp(e->d_name, THREADS_FILE)) {
			char p[PATH_MAX];
			snprintf(p, sizeof p, "%s/%s", path, e->d_name);
			unlink(p);
		}
	}
	closedir(d);
	return 0;
}

static int open_dir(const char *path)
{
	int rc = prepare_dir(path);
	if (rc)
		return rc;
	char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	free(dir);
	dir = copy;
	if (getrandom(uuid, sizeof uuid, 0) != (ssize_t)sizeof uuid) {
		uint64_t t = mono_ns() ^ (uint64_t)getpid() << 32;
		memcpy(uuid, &t, 8);
		memcpy(uuid + 8, &t, 8);
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);   /* version 4 */
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
	pthread_mutex_lock(&cmd_lock);
	snprintf(dir_pub, sizeof dir_pub, "%s", path);
	pthread_mutex_unlock(&cmd_lock);
	return write_metadata();
}

/* ---- packets ---- */

static struct vmst_tbuf *list_head(void)
{
	pthread_mutex_lock(&vmst__bufs_lock);
	struct vmst_tbuf *b = vmst__bufs;
	pthread_mutex_unlock(&vmst__bufs_lock);
	return b;
}

/* The thread's name (what QEMU sets for its vCPU threads, "CPU 0/KVM") into the hidden file
 * DIR/.vmst-threads, "TID NAME" per line, when its stream file is created: by then the name
 * is usually final. CTF readers skip hidden files; vmscope's reader takes the names. */
static void note_thread_name(const struct vmst_tbuf *b)
{
	char p[PATH_MAX], name[64] = "";
	/* fresher than the name taken at the thread's first event, if it still runs */
	snprintf(p, sizeof p, "/proc/self/task/%d/comm", (int)b->tid);
	FILE *f = fopen(p, "r");
	if (f) {
		if (!fgets(name, sizeof name, f))
			name[0] = 0;
		fclose(f);
	}
	name[strcspn(name, "\n")] = 0;
	if (!name[0])
		snprintf(name, sizeof name, "%s", b->name);
	if (!name[0])
		return;
	snprintf(p, sizeof p, "%s/" THREADS_FILE, dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	char line[128];
	int n = snprintf(line, sizeof line, "%d %s\n", (int)b->tid, name);
	if (write(fd, line, (size_t)n) != n)
		say_error("cannot write", p, errno);
	close(fd);
}

/* The thread's stream file, created with a padding packet at its first packet. */
static bool stream_open(struct vmst_tbuf *b, const struct vmst_packet *first)
{
	if (b->pf.fd >= 0)
		return true;
	char name[64];
	snprintf(name, sizeof name, "stream-%d-%llu", (int)b->tid, (unsigned long long)b->serial);
	int rc = vmst_pfile_create(&b->pf, dir, name, first);
	if (rc) {
		say_error("cannot create a stream file in", dir, -rc);
		return false;
	}
	note_thread_name(b);
	return true;
}

static uint64_t read_ts(const uint8_t *rec)
{
	uint64_t ts;
	memcpy(&ts, rec + 2, 8);
	return ts;
}

static void emit_packet(struct vmst_tbuf *b, uint32_t cpu, uint64_t disc, uint64_t ts_begin,
			uint64_t ts_end, const uint8_t *data, size_t len)
{
	struct vmst_packet h = {
		.magic = CTF_MAGIC,
		.stream_id = 0,
		.timestamp_begin = ts_begin,
		.timestamp_end = ts_end,
		.events_discarded = disc,
		.cpu_id = cpu,
		.vtid = b->tid,
	};
	memcpy(h.uuid, uuid, 16);
	if (!stream_open(b, &h))
		return;
	int rc = vmst_pfile_append(&b->pf, &h, data, len);
	if (rc)
		say_error("cannot write to", dir, -rc);
	b->last_ts = ts_end;
	b->disc_written = disc;
	b->any_packet = true;
}

/* The events_discarded a packet carries: the thread's drops since this directory began,
 * never below what an earlier packet of the stream said (the counter is a running total). */
static uint64_t discarded_for(struct vmst_tbuf *b, uint64_t snapshot)
{
	uint64_t d = snapshot > b->disc_base ? snapshot - b->disc_base : 0;
	return d > b->disc_written ? d : b->disc_written;
}

static void write_range(struct vmst_tbuf *b, uint32_t k, uint32_t from, uint32_t to,
			uint32_t last_start)
{
	const uint8_t *base = b->mem + (size_t)k * b->subsize;
	if (to > b->subsize || from >= to || last_start < from || last_start >= to)
		return;   /* cannot happen unless the producer's state is corrupt */
	uint64_t disc = discarded_for(b, b->sub[k].discarded);
	uint64_t t0 = read_ts(base + from), t1 = read_ts(base + last_start);
	/* babeltrace2 reports drops as the difference between consecutive packets: a stream
	 * whose first packet already counts drops starts with an empty packet saying 0. */
	if (!b->any_packet && disc > 0)
		emit_packet(b, b->sub[k].cpu, 0, t0, t0, NULL, 0);
	emit_packet(b, b->sub[k].cpu, disc, t0, t1, base + from, to - from);
}

/* Write out what a thread has: full sub-buffers, and with `partial` the committed part of
 * the one being filled and an empty packet for drops not yet in the trace. */
static void drain(struct vmst_tbuf *b, bool partial)
{
	if (!b->mem)
		return;
	uint32_t guard = 0;
	while (guard++ < 2 * b->nsub + 2) {
		uint32_t k = b->next_w;
		struct vmst_sub *s = &b->sub[k];
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if (st == VMST_SUB_FULL) {
			if (s->content_end > s->written)
				write_range(b, k, s->written, s->content_end, s->last_start);
			s->written = 0;
			__atomic_store_n(&s->state, VMST_SUB_FREE, __ATOMIC_RELEASE);
			b->next_w = (k + 1) % b->nsub;
			continue;
		}
		if (st == VMST_SUB_FILLING && partial) {
			uint64_t pub = __atomic_load_n(&b->hot.pub, __ATOMIC_ACQUIRE);
			if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != VMST_SUB_FILLING ||
			    (pub >> 48) != k)
				continue;   /* closed meanwhile: handle it as FULL */
			uint32_t end = (uint32_t)(pub & 0xffffff);
			uint32_t last = (uint32_t)((pub >> 24) & 0xffffff);
			if (end > s->written) {
				write_range(b, k, s->written, end, last);
				s->written = end;
			}
		}
		break;
	}
	if (partial) {
		uint64_t dropped = __atomic_load_n(&b->hot.dropped, __ATOMIC_RELAXED);
		uint64_t disc = discarded_for(b, dropped);
		if (disc > b->disc_written) {
			uint64_t ts = b->any_packet ? b->last_ts : vmst__now();
			if (!b->any_packet)
				emit_packet(b, 0, 0, ts, ts, NULL, 0);
			emit_packet(b, 0, disc, ts, ts, NULL, 0);
		}
	}
}

static void drain_all(bool partial)
{
	for (struct vmst_tbuf *b = list_head(); b; b = b->next_buf) {
		bool gone = __atomic_load_n(&b->exited, __ATOMIC_ACQUIRE);
		drain(b, partial || gone);
		if (gone && b->mem) {
			bool all_free = true;
			for (uint32_t k = 0; k < b->nsub; k++)
				if (__atomic_load_n(&b->sub[k].state, __ATOMIC_ACQUIRE) != VMST_SUB_FREE)
					all_free = false;
			if (all_free)
				vmst_tbuf_retire(b);
		}
	}
}

static bool any_full(void)
{
	for (struct vmst_tbuf *b = list_head(); b; b = b->next_buf) {
		if (!b->mem)
			continue;
		if (__atomic_load_n(&b->sub[b->next_w].state, __ATOMIC_ACQUIRE) == VMST_SUB_FULL ||
		    __atomic_load_n(&b->exited, __ATOMIC_ACQUIRE))
			return true;
	}
	return false;
}

static void sync_all(void)
{
	for (struct vmst_tbuf *b = list_head(); b; b = b->next_buf)
		if (b->pf.fd >= 0)
			fdatasync(b->pf.fd);
	int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
}

/* End of a directory: everything written, synced, and the clean-close mark last. */
static void close_dir(void)
{
	drain_all(true);
	sync_all();
	for (struct vmst_tbuf *b = list_head(); b; b = b->next_buf)
		vmst_pfile_close(&b->pf);
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/" CLOSED_MARK, dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		static const char msg[] = "vmstrace: trace closed cleanly\n";
		if (write(fd, msg, sizeof msg - 1) < 0)
			say_error("cannot write", p, errno);
		fsync(fd);
		close(fd);
	}
	sync_all();
}

/* New directory: new stream files, packet numbers and drop counts from zero. */
static void reset_streams(void)
{
	for (struct vmst_tbuf *b = list_head(); b; b = b->next_buf) {
		vmst_pfile_close(&b->pf);
		b->disc_base = __atomic_load_n(&b->hot.dropped, __ATOMIC_RELAXED);
		b->disc_written = 0;
		b->any_packet = false;
	}
}

static void switch_dir(const char *path)
{
	close_dir();
	int rc = open_dir(path);
	reset_streams();
	pthread_mutex_lock(&cmd_lock);
	dir_result = rc;
	pthread_mutex_unlock(&cmd_lock);
}

static void *writer_main(void *arg)
{
	(void)arg;
	uint64_t last_partial = mono_ns();
	for (;;) {
		bool stop = __atomic_load_n(&stop_req, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&vmst__tables_gen, __ATOMIC_ACQUIRE) != meta_gen)
			write_metadata();
		pthread_mutex_lock(&cmd_lock);
		uint64_t want_flush = flush_req;
		uint64_t want_dir = dir_req;
		char *nd = new_dir;
		new_dir = NULL;
		pthread_mutex_unlock(&cmd_lock);

		uint64_t now = mono_ns();
		bool flushing = want_flush != flush_done;
		bool periodic = now - last_partial >= (uint64_t)period_ms * 1000000u;
		bool paused = __atomic_load_n(&vmst__writer_paused, __ATOMIC_ACQUIRE);
		if (stop) {
			close_dir();
			break;
		}
		if (nd) {
			switch_dir(nd);
			free(nd);
		} else if (!paused || flushing) {
			drain_all(flushing || periodic);
		}
		if (periodic)
			last_partial = now;
		if (flushing)
			sync_all();
		if (flushing || nd) {
			pthread_mutex_lock(&cmd_lock);
			flush_done = want_flush;
			if (nd)
				dir_done = want_dir;
			pthread_cond_broadcast(&cmd_cond);
			pthread_mutex_unlock(&cmd_lock);
		}

		/* sleep until kicked, a request, or the next period */
		__atomic_store_n(&vmst__writer_waiting, 1, __ATOMIC_SEQ_CST);
		uint32_t seq = __atomic_load_n(&wake_seq, __ATOMIC_SEQ_CST);
		pthread_mutex_lock(&cmd_lock);
		bool pending = flush_req != flush_done || new_dir != NULL;
		pthread_mutex_unlock(&cmd_lock);
		paused = __atomic_load_n(&vmst__writer_paused, __ATOMIC_ACQUIRE);
		if (!pending && !__atomic_load_n(&stop_req, __ATOMIC_ACQUIRE) &&
		    (paused || !any_full())) {
			uint64_t elapsed = mono_ns() - last_partial;
			uint64_t period = (uint64_t)period_ms * 1000000u;
			uint64_t left = elapsed < period ? period - elapsed : 0;
			struct timespec to = {(time_t)(left / 1000000000u),
					      (long)(left % 1000000000u)};
			if (left)
				syscall(SYS_futex, &wake_seq, FUTEX_WAIT_PRIVATE, seq, &to, NULL, 0);
		}
		__atomic_store_n(&vmst__writer_waiting, 0, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static void wake(void)
{
	__atomic_add_fetch(&wake_seq, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

int vmst_writer_start(const char *path, uint32_t period)
{
	if (running)
		return 0;
	period_ms = period ? period : 100;
	int rc = open_dir(path);
	if (rc)
		return rc;
	reset_streams();
	__atomic_store_n(&stop_req, 0, __ATOMIC_RELEASE);
	rc = pthread_create(&thread, NULL, writer_main, NULL);
	if (rc)
		return -rc;
	running = true;
	return 0;
}

void vmst_writer_stop(void)
{
	if (!running)
		return;
	__atomic_store_n(&stop_req, 1, __ATOMIC_RELEASE);
	wake();
	pthread_join(thread, NULL);
	running = false;
}

void vmst_writer_after_fork(void)
{
	running = false;
	pthread_mutex_init(&cmd_lock, NULL);
	pthread_cond_init(&cmd_cond, NULL);
}

bool vmst_writer_running(void)
{
	return running;
}

int vmst_writer_flush(void)
{
	if (!running)
		return -ESRCH;
	pthread_mutex_lock(&cmd_lock);
	uint64_t my = ++flush_req;
	pthread_mutex_unlock(&cmd_lock);
	wake();
	pthread_mutex_lock(&cmd_lock);
	while (flush_done < my)
		pthread_cond_wait(&cmd_cond, &cmd_lock);
	pthread_mutex_unlock(&cmd_lock);
	return 0;
}

int vmst_writer_set_dir(const char *path)
{
	if (!running)
		return -ESRCH;
	char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	pthread_mutex_lock(&cmd_lock);
	free(new_dir);
	new_dir = copy;
	uint64_t my = ++dir_req;
	pthread_mutex_unlock(&cmd_lock);
	wake();
	pthread_mutex_lock(&cmd_lock);
	while (dir_done < my)
		pthread_cond_wait(&cmd_cond, &cmd_lock);
	int rc = dir_result;
	pthread_mutex_unlock(&cmd_lock);
	return rc;
}

const char *vmst_writer_dir(void)
{
	static __thread char copy[PATH_MAX];
	pthread_mutex_lock(&cmd_lock);
	snprintf(copy, sizeof copy, "%s", dir_pub);
	pthread_mutex_unlock(&cmd_lock);
	return copy[0] ? copy : NULL;
}
