/* vmscope internal: the readers' worker pool.
 *
 * Why: decompressing a compressed trace is most of the cost of reading it, and each of a
 * trace's streams (trace.dat CPUs) can be decompressed independently. One pool of worker
 * threads per process serves every open source, so a host and its guests share the cores
 * instead of each source starting its own thread (a thread per file on 2 cores took turns
 * with the reading thread and ran 30 % slower). The reading thread is one of the
 * `threads`: the pool has threads - 1 workers; with 1 there is none and the readers work
 * alone, as they did before the pool.
 *
 * A reader joins as a client with three callbacks. The pool's one lock guards every
 * client's shared state (which chunk is claimed, which is ready): jobs are chunks of tens of
 * KiB, so the lock is taken a few thousand times a second, not per event. A worker calls
 * claim (under the lock) on each client in turn until one gives it a job, runs it without
 * the lock, then calls finish under the lock and wakes whoever waits for a job to end. */
#ifndef VMS_CORE_POOL_H
#define VMS_CORE_POOL_H

#include <stdbool.h>
#include <stdint.h>

struct vms_pool_client {
	/* under the lock: 1 and *job set when there is a job, 0 when none */
	int (*claim)(struct vms_pool_client *c, void **job);
	/* without the lock; worker: 0 .. vms_pool_workers() - 1, for per-worker state */
	void (*run)(struct vms_pool_client *c, void *job, unsigned worker);
	/* under the lock */
	void (*finish)(struct vms_pool_client *c, void *job);
	/* the pool's (under the lock) */
	struct vms_pool_client *next, *prev;
	unsigned running;  /* jobs of this client being run */
	bool paused;       /* claim is not called while set */
	bool joined;
};

/* Threads that read traces, the reading thread included: 0 = as many as online CPUs (the
 * default), 1 = no worker. Takes effect when the pool next starts (the first join after no
 * client was left). VMS_TRACEDAT_THREADS=0 in the environment means 1, for measurements. */
void vms_pool_set_threads(unsigned n);
/* The threads the pool would start with now (the setting, or the online CPUs). */
unsigned vms_pool_threads(void);
/* Were the threads given (vms_pool_set_threads with N > 0: --threads N), not taken from the
 * online CPUs? A reader whose workers cost more than they give on its input by default reads
 * alone then (xentrace_pool.c), and with workers only when asked. */
bool vms_pool_threads_given(void);

/* Join: starts the workers if none run. Returns the number of workers (the range of run's
 * `worker`), 0 when there are none (threads 1, or a thread could not be made): the client
 * is then not joined and reads alone. */
unsigned vms_pool_join(struct vms_pool_client *c);
/* Waits for the client's jobs to end and takes it out; the last client out stops the
 * workers. Not under the lock. No-op for a client not joined. */
void vms_pool_leave(struct vms_pool_client *c);

void vms_pool_lock(void);
void vms_pool_unlock(void);
/* There is new work (a chunk freed, a stream started), made under the lock; called with it
 * held or after letting it go (better: a worker woken while it is held sleeps on it again). */
void vms_pool_kick(void);
/* Under the lock: sleep until some job finishes (or is kicked). */
void vms_pool_wait(void);
/* Under the lock: pause c and wait until none of its jobs runs; vms_pool_resume undoes it. */
void vms_pool_quiesce(struct vms_pool_client *c);
void vms_pool_resume(struct vms_pool_client *c);
/* The CPU time (ns) of each worker that has run and stopped since the process began,
 * summed over the pool's starts (worker i of every start in ns[i]): the benches' per-thread
 * figures (bench/bench_cores.c). Returns how many were written (<= max). Not under the lock. */
unsigned vms_pool_worker_cpu(uint64_t *ns, unsigned max);

#endif
