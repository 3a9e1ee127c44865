/* Per-thread buffers: the producer's slow path.
 *
 * Each producer thread owns a buffer of N sub-buffers; it fills one at a time and never
 * waits. A sub-buffer goes FREE -> FILLING (producer opens it) -> FULL (producer closes it,
 * release store) -> FREE (writer wrote it out). When the next sub-buffer is not FREE the
 * event is dropped and counted; the count at the time a sub-buffer is opened is what the
 * packet's events_discarded carries. The buffer is allocated and pre-faulted on the thread's
 * first event, registered with the writer, and handed back by a pthread key destructor when
 * the thread exits (the writer frees it once written out). */
#include <errno.h>
#include <sched.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

__thread struct vmst_producer *vmst__tls __attribute__((tls_model("initial-exec")));

pthread_mutex_t vmst__bufs_lock = PTHREAD_MUTEX_INITIALIZER;
struct vmst_tbuf *vmst__bufs;
uint64_t vmst__buf_size = 2u << 20;
uint32_t vmst__buf_nsub = 8;

static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void close_current(struct vmst_tbuf *b)
{
	struct vmst_producer *p = &b->hot;
	if (!p->base)
		return;
	uint32_t k = (uint32_t)(p->tag >> 48);
	uint64_t pub = p->pub;
	struct vmst_sub *s = &b->sub[k];
	s->content_end = (uint32_t)(p->cur - p->base);
	s->last_start = (uint32_t)((pub >> 24) & 0xffffff);
	/* seq_cst: ordered before the load of writer_waiting in vmst_writer_kick */
	__atomic_store_n(&s->state, VMST_SUB_FULL, __ATOMIC_SEQ_CST);
	p->cur = p->end = p->base = NULL;
	b->next = (k + 1) % b->nsub;
	vmst_writer_kick();
}

static bool open_next(struct vmst_tbuf *b)
{
	uint32_t k = b->next;
	struct vmst_sub *s = &b->sub[k];
	if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != VMST_SUB_FREE)
		return false;
	struct vmst_producer *p = &b->hot;
	int cpu = sched_getcpu();
	s->cpu = cpu < 0 ? 0 : (uint32_t)cpu;
	s->discarded = p->dropped;
	s->content_end = 0;
	s->last_start = 0;
	p->base = b->mem + (size_t)k * b->subsize;
	p->cur = p->base;
	p->end = p->base + b->subsize;
	p->tag = (uint64_t)k << 48;
	__atomic_store_n(&p->pub, p->tag, __ATOMIC_RELEASE);
	__atomic_store_n(&s->state, VMST_SUB_FILLING, __ATOMIC_RELEASE);
	return true;
}

/* The thread is exiting: hand its last sub-buffer to the writer. */
static void thread_gone(void *arg)
{
	struct vmst_tbuf *b = arg;
	close_current(b);
	vmst__tls = NULL;
	__atomic_store_n(&b->exited, 1, __ATOMIC_RELEASE);
	vmst_writer_kick();
}

static void make_key(void)
{
	pthread_key_create(&key, thread_gone);
}

void vmst_buffers_init_key(void)
{
	pthread_once(&key_once, make_key);
}

static struct vmst_tbuf *attach(void)
{
	vmst_buffers_init_key();
	uint32_t nsub = __atomic_load_n(&vmst__buf_nsub, __ATOMIC_RELAXED);
	uint64_t size = __atomic_load_n(&vmst__buf_size, __ATOMIC_RELAXED);
	uint32_t subsize = (uint32_t)(size / nsub) & ~7u;
	struct vmst_tbuf *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	b->sub = calloc(nsub, sizeof *b->sub);
	b->mem = aligned_alloc(64, ((size_t)subsize * nsub + 63) & ~(size_t)63);
	if (!b->sub || !b->mem) {
		free(b->sub);
		free(b->mem);
		free(b);
		return NULL;
	}
	/* touch every page now, not on the hot path */
	memset(b->mem, 0, (size_t)subsize * nsub);
	b->nsub = nsub;
	b->subsize = subsize;
	b->tid = (int32_t)syscall(SYS_gettid);
	if (prctl(PR_GET_NAME, b->name) != 0)
		b->name[0] = 0;
	b->name[sizeof b->name - 1] = 0;
	b->pf.fd = -1;
	pthread_mutex_lock(&vmst__bufs_lock);
	static uint64_t serial;
	b->serial = serial++;
	b->next_buf = vmst__bufs;
	vmst__bufs = b;
	pthread_mutex_unlock(&vmst__bufs_lock);
	pthread_setspecific(key, b);
	vmst__tls = &b->hot;
	return b;
}

uint8_t *vmst__reserve_slow(uint32_t len, struct vmst_producer **pp)
{
	struct vmst_tbuf *b = (struct vmst_tbuf *)vmst__tls;
	if (!b) {
		b = attach();
		if (!b)
			return NULL;
	}
	*pp = &b->hot;
	if (len > b->subsize) {
		__atomic_store_n(&b->hot.dropped, b->hot.dropped + 1, __ATOMIC_RELAXED);
		return NULL;
	}
	if (b->hot.base && (size_t)(b->hot.end - b->hot.cur) >= len)
		return b->hot.cur;   /* first event of a freshly attached thread */
	close_current(b);
	if (!open_next(b)) {
		__atomic_store_n(&b->hot.dropped, b->hot.dropped + 1, __ATOMIC_RELAXED);
		return NULL;
	}
	return b->hot.cur;
}

void vmst_tbuf_retire(struct vmst_tbuf *b)
{
	vmst_pfile_close(&b->pf);
	free(b->mem);
	free(b->sub);
	b->mem = NULL;
	b->sub = NULL;
}

void vmst_buffers_after_fork(void)
{
	pthread_mutex_init(&vmst__bufs_lock, NULL);
	if (vmst__tls)
		pthread_setspecific(key, NULL);   /* its destructor must not hand over a freed buffer */
	vmst__tls = NULL;
	struct vmst_tbuf *b = vmst__bufs;
	vmst__bufs = NULL;
	while (b) {
		struct vmst_tbuf *next = b->next_buf;
		if (b->pf.fd >= 0)
			close(b->pf.fd);   /* the parent's file: no trim, no write */
		free(b->mem);
		free(b->sub);
		free(b);
		b = next;
	}
}

size_t vmst_stats(struct vmst_thread_stats *out, size_t max)
{
	size_t n = 0;
	pthread_mutex_lock(&vmst__bufs_lock);
	for (struct vmst_tbuf *b = vmst__bufs; b; b = b->next_buf) {
		if (n < max && out) {
			out[n].tid = b->tid;
			out[n].written = __atomic_load_n(&b->hot.recorded, __ATOMIC_RELAXED);
			out[n].dropped = __atomic_load_n(&b->hot.dropped, __ATOMIC_RELAXED);
		}
		n++;
	}
	pthread_mutex_unlock(&vmst__bufs_lock);
	return n;
}
