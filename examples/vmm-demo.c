/* vmm-demo: a toy "VMM" instrumented with the vmscope tracer library: N vCPU threads that
 * enter and leave a pretend guest, and an I/O thread serving requests. It does no real
 * virtualization; it exists to show the trace points, the start-up configuration
 * (VMSCOPE_TRACE) and run-time control (`vmscope ctl`). See examples/README.md.
 *
 *   vmm-demo [SECONDS [VCPUS]]      (default 5 s, 2 vCPUs) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "trace-vmm-demo.h"

static volatile int stop;

static void spin_ns(uint64_t ns)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)t.tv_nsec -
		       (uint64_t)t0.tv_nsec < ns);
}

static void *vcpu(void *arg)
{
	int cpu = (int)(intptr_t)arg;
	uint64_t rip = 0xffffffff81000000u + (uint64_t)cpu * 0x1000;
	unsigned seed = (unsigned)cpu + 1;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		trace_vcpu_run_enter(cpu);
		spin_ns(2000 + rand_r(&seed) % 20000);             /* "in the guest" */
		uint32_t reason = (uint32_t)(rand_r(&seed) % 4) ? 30 : 12;   /* I/O or HLT */
		rip += 4;
		trace_vcpu_run_exit(cpu, reason, rip);
		if (reason == 12) {
			struct timespec d = {0, 200000};
			nanosleep(&d, NULL);
			trace_vcpu_halt(cpu, 200000);
		}
	}
	return NULL;
}

static void *io_thread(void *arg)
{
	(void)arg;
	static const char *const devs[] = {"virtio-blk0", "virtio-net0"};
	uint64_t off = 0;
	int n = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		const char *dev = devs[n % 2];
		trace_io_request(dev, off, 4096, n % 3 == 0);
		trace_io_debug(1, "compiled out");
		struct timespec d = {0, 500000};
		nanosleep(&d, NULL);
		trace_io_complete(dev, &off, 0);
		off += 4096;
		n++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 5;
	int nvcpu = argc > 2 ? atoi(argv[2]) : 2;
	if (secs < 0 || nvcpu < 1 || nvcpu > 64) {
		fprintf(stderr, "usage: vmm-demo [SECONDS [VCPUS]]\n");
		return 2;
	}
	/* the tracer started itself if VMSCOPE_TRACE is set (the generated constructor) */
	printf("vmm-demo: %d vCPUs for %d s, tracing to %s\n", nvcpu, secs,
	       vmst_file_get() ? vmst_file_get() : "(nowhere: VMSCOPE_TRACE is not set)");
	fflush(stdout);
	pthread_t th[65];
	for (int i = 0; i < nvcpu; i++)
		pthread_create(&th[i], NULL, vcpu, (void *)(intptr_t)i);
	pthread_create(&th[nvcpu], NULL, io_thread, NULL);
	struct timespec d = {secs, 0};
	nanosleep(&d, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i <= nvcpu; i++)
		pthread_join(th[i], NULL);
	/* returning from main: the tracer writes everything out and closes the trace */
	return 0;
}
