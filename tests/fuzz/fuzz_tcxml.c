/* libFuzzer target: the tcxml reader (the body is vms_fuzz_tcxml in fuzz_harness.c). */
#include "fuzz_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return vms_fuzz_tcxml(data, size);
}
