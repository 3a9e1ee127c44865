/* vmst_flush()'s bound under load (issue 7.16: one flush took 3.9 s with 4 producing threads
 * and 64 MiB buffers). include/vmscope/tracer.h states it in bytes, so that it can be checked
 * without timing anything: while one flush waits, the writer writes at most
 * (bufsize + bufsize/subbufs) x threads + one sub-buffer, however fast the producers refill
 * their rings. Here 4 threads emit as fast as they can into 256 KiB rings of 8 sub-buffers:
 * the bound is (256 + 32) x 4 + 32 = 1184 KiB. Each of 30 flushes must stay within it, and
 * at least one must have had something to write (else the test measured nothing). Whether a
 * flush then returns in time is bench_tracer -F's to measure (time is the machine's). */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "trace-qemu-style.h"

enum { THREADS = 4, FLUSHES = 30, BUF_KIB = 256, SUBBUFS = 8 };

static uint32_t stop;

static void *flood(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	for (uint64_t i = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); i++)
		trace_vmst_test_seq(t, i);
	return NULL;
}

/* In a child (the tracer is process-wide): 0 when every flush kept to the bound, 1 when one
 * did not, 2 when no flush wrote anything, 3 on a setup failure. */
static int child(const char *dir)
{
	char cfg[4300];
	snprintf(cfg, sizeof cfg, "file=%s,enable=vmst_test_seq,bufsize=%uk,subbufs=%u", dir,
		 BUF_KIB, SUBBUFS);
	if (vmst_init(cfg) != 0)
		return 3;
	pthread_t th[THREADS];
	for (uint32_t i = 0; i < THREADS; i++)
		if (pthread_create(&th[i], NULL, flood, (void *)(uintptr_t)i) != 0)
			return 3;
	const uint64_t sub = BUF_KIB * 1024 / SUBBUFS;
	const uint64_t bound = (BUF_KIB * 1024 + sub) * THREADS + sub;
	struct timespec d = { 0, 100 * 1000 * 1000 };
	nanosleep(&d, NULL);   /* the rings full, the writer at its pace */
	uint64_t most = 0, wrote = 0;
	int rc = 0;
	for (int k = 0; k < FLUSHES; k++) {
		vmst_flush();
		uint64_t b = vmst_debug_flush_written_bytes();
		most = b > most ? b : most;
		wrote += b > 0;
		if (b > bound)
			rc = 1;
		d.tv_nsec = 10 * 1000 * 1000;
		nanosleep(&d, NULL);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	printf("# %d flushes: at most %llu bytes written during one (bound %llu), %llu wrote "
	       "something\n", FLUSHES, (unsigned long long)most, (unsigned long long)bound,
	       (unsigned long long)wrote);
	fflush(stdout);
	vmst_shutdown();
	return rc ? rc : wrote ? 0 : 2;
}

static void test_flush_bound_under_load(void **state)
{
	(void)state;
	const char *dir = vms_test_tmpdir("tracer-flush");
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child(dir));
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flush_bound_under_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
