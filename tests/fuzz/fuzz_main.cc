// libFuzzer harness; HETRT_FUZZ_TARGET names the parser (see fuzz_targets.h).
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hetrt::fuzz::HETRT_FUZZ_TARGET(data, size);
  return 0;
}
