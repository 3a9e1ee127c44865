/* The readers' worker pool (see pool.h). The workers start with the first client and stop
 * with the last, so a process that reads nothing compressed has no thread, and a test that
 * opens sources one after another does not leave threads behind. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/pool.h"

#define POOL_MAX_WORKERS 256 /* --threads is bounded by the CLI; this guards the array */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER; /* workers wait for a job here */
static pthread_cond_t done = PTHREAD_COND_INITIALIZER; /* readers wait for a job's end */
static pthread_t threads[POOL_MAX_WORKERS];
static unsigned nr_workers; /* started, under mu */
static unsigned nr_clients;
static bool stopping;
static struct vms_pool_client *head; /* clients, in the order workers ask them */
static atomic_uint setting;          /* vms_pool_set_threads; 0: online CPUs */
static uint64_t worker_cpu[POOL_MAX_WORKERS]; /* CPU ns of each worker's runs, under mu */
static unsigned workers_seen;                 /* the most workers any run had, under mu */

void vms_pool_set_threads(unsigned n)
{
	atomic_store(&setting, n);
}

bool vms_pool_threads_given(void)
{
	return atomic_load(&setting) != 0;
}

unsigned vms_pool_threads(void)
{
	const char *e = getenv("VMS_TRACEDAT_THREADS");
	if (e && strcmp(e, "0") == 0)
		return 1;
	unsigned n = atomic_load(&setting);
	if (n == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		n = c > 0 ? (unsigned)c : 1;
	}
	return n > POOL_MAX_WORKERS + 1 ? POOL_MAX_WORKERS + 1 : n;
}

static void unlink_client(struct vms_pool_client *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
}

static void append_client(struct vms_pool_client *c)
{
	struct vms_pool_client **p = &head, *prev = NULL;
	while (*p) {
		prev = *p;
		p = &(*p)->next;
	}
	c->prev = prev;
	c->next = NULL;
	*p = c;
}

static void *worker_main(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	pthread_mutex_lock(&mu);
	while (!stopping) {
		struct vms_pool_client *c;
		void *job = NULL;
		for (c = head; c; c = c->next)
			if (!c->paused && c->claim(c, &job) > 0)
				break;
		if (!c) {
			pthread_cond_wait(&work, &mu);
			continue;
		}
		/* the client asked goes to the back: several sources share the workers in turn */
		if (c->next) {
			unlink_client(c);
			append_client(c);
		}
		c->running++;
		pthread_mutex_unlock(&mu);
		c->run(c, job, id);
		pthread_mutex_lock(&mu);
		c->finish(c, job);
		c->running--;
		pthread_cond_broadcast(&done);
	}
	/* the thread's CPU time, for vms_pool_worker_cpu (the benches' per-thread figures) */
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
		worker_cpu[id] += (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (id + 1 > workers_seen)
		workers_seen = id + 1;
	pthread_mutex_unlock(&mu);
	return NULL;
}

unsigned vms_pool_worker_cpu(uint64_t *ns, unsigned max)
{
	pthread_mutex_lock(&mu);
	unsigned n = workers_seen < max ? workers_seen : max;
	for (unsigned i = 0; i < n; i++)
		ns[i] = worker_cpu[i];
	pthread_mutex_unlock(&mu);
	return n;
}

/* Under mu, with no client: stop and join the workers (the lock is let go meanwhile). */
static void stop_workers(void)
{
	unsigned n = nr_workers;
	stopping = true;
	pthread_cond_broadcast(&work);
	pthread_mutex_unlock(&mu);
	for (unsigned i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	pthread_mutex_lock(&mu);
	nr_workers = 0;
	stopping = false;
	pthread_cond_broadcast(&done); /* a join that came meanwhile starts new workers */
}

unsigned vms_pool_join(struct vms_pool_client *c)
{
	c->joined = false;
	c->running = 0;
	c->paused = false;
	c->next = c->prev = NULL;
	unsigned want = vms_pool_threads() - 1;
	pthread_mutex_lock(&mu);
	while (stopping)
		pthread_cond_wait(&done, &mu);
	if (nr_clients == 0 && nr_workers == 0 && want > 0) {
		while (nr_workers < want &&
		       pthread_create(&threads[nr_workers], NULL, worker_main,
				      (void *)(uintptr_t)nr_workers) == 0)
			nr_workers++;
	}
	unsigned n = nr_workers;
	if (n > 0) {
		append_client(c);
		c->joined = true;
		nr_clients++;
	}
	pthread_mutex_unlock(&mu);
	return n;
}

void vms_pool_leave(struct vms_pool_client *c)
{
	if (!c->joined)
		return;
	pthread_mutex_lock(&mu);
	c->paused = true;
	while (c->running)
		pthread_cond_wait(&done, &mu);
	unlink_client(c);
	c->joined = false;
	if (--nr_clients == 0)
		stop_workers();
	pthread_mutex_unlock(&mu);
}

void vms_pool_lock(void)
{
	pthread_mutex_lock(&mu);
}

void vms_pool_unlock(void)
{
	pthread_mutex_unlock(&mu);
}

void vms_pool_kick(void)
{
	pthread_cond_broadcast(&work);
}

void vms_pool_wait(void)
{
	pthread_cond_wait(&done, &mu);
}

void vms_pool_quiesce(struct vms_pool_client *c)
{
	c->paused = true;
	while (c->running)
		pthread_cond_wait(&done, &mu);
}

void vms_pool_resume(struct vms_pool_client *c)
{
	c->paused = false;
	pthread_cond_broadcast(&work);
}
