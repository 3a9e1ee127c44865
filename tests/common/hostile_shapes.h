/* Hostile trace.dat files of given shapes (issue 7: files a guest could write to crash vmscope
 * or make it take unbounded memory or time), made with vmscope's own trace.dat writer plus a
 * few byte patches. Shared by tests/hostile (each shape's expected outcome) and
 * bench/bench_adversarial (each shape's time and peak memory at a large size).
 *
 * Every shape is a host trace (sched_switch id 1, sched_wakeup 2, kvm_entry 3, kvm_exit 4,
 * zstd, 64-bit little-endian) with one sched_switch event on CPU 0 unless said otherwise. */
#ifndef VMS_TESTS_HOSTILE_SHAPES_H
#define VMS_TESTS_HOSTILE_SHAPES_H

#include <stdint.h>

struct hostile_shape {
	const char *name;
	const char *what;  /* one line: the hostile property */
	/* n: the shape's size parameter (levels, CPUs, vCPUs, tids, bytes...) */
	int (*write)(const char *path, uint64_t n);
	uint64_t small, large; /* n for the tests and for the benchmark */
};

extern const struct hostile_shape hostile_shapes[];
extern const unsigned hostile_nr_shapes;
const struct hostile_shape *hostile_shape(const char *name);
/* ctf-shared-packet: the events of its one stream file at n MiB (named by 16 hard links
 * channel0_0..15 and HOSTILE_CTF_SYMLINKS symlinks link0..) */
uint64_t hostile_ctf_events(uint64_t n);
#define HOSTILE_CTF_SYMLINKS 2000

#endif
