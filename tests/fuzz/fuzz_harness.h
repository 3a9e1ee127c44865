/* The bodies of the fuzz targets, shared by the libFuzzer programs (fuzz_<format>.c, built
 * with -Dfuzz=true) and the replay test of the committed regression inputs (test_fuzz_regress.c,
 * always built), so that a crash once found stays covered by the ordinary test suite.
 *
 * Each function takes one fuzz input, presents it to a reader as a file (or, for CTF, as a
 * directory), opens it, reads every stream to its end, rewinds, reads again, renders some
 * events with ops->format_event and closes. It returns 0; a broken reader contract (an error
 * status without a message, a negative next() without src->err set) aborts, so the fuzzer
 * reports it like a crash. */
#ifndef VMS_FUZZ_HARNESS_H
#define VMS_FUZZ_HARNESS_H

#include <stddef.h>
#include <stdint.h>

/* trace-cmd trace.dat: the input is the file. */
int vms_fuzz_tracedat(const uint8_t *data, size_t size);
/* Trace Compass XML: the input is the file. */
int vms_fuzz_tcxml(const uint8_t *data, size_t size);
/* QEMU simpletrace: the input is the file, read once with a fixed trace-events file and once
 * without one. */
int vms_fuzz_simpletrace(const uint8_t *data, size_t size);
/* vmstrace CTF: the input is a small container of a directory's files (see vms_fuzz_ctf_pack):
 *   u32 LE metadata length, u32 LE .vmst-threads length, u8 flags, u32 LE length of the first
 *   stream, then metadata, threads, first stream, and the rest is the second stream.
 *   flags bit 0: write .vmst-closed; bit 1: there is a second stream file. */
int vms_fuzz_ctf(const uint8_t *data, size_t size);
#define VMS_FUZZ_CTF_HEADER 13
/* xentrace: the input is the file; its events also go through the Xen model (stream after
 * stream: an order the merge never gives, which the model must survive too). */
int vms_fuzz_xentrace(const uint8_t *data, size_t size);

#endif
