/* libFuzzer target: the tracedat reader (the body is vms_fuzz_tracedat in fuzz_harness.c). */
#include "fuzz_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return vms_fuzz_tracedat(data, size);
}
