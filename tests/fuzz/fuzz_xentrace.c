/* libFuzzer target: the xentrace reader and the Xen model (the body is vms_fuzz_xentrace in
 * fuzz_harness.c). */
#include "fuzz_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return vms_fuzz_xentrace(data, size);
}
