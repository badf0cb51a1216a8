// The one part that differs between the fake driver's personalities: the
// driver version, set per library by tests/CMakeLists.txt (which also gives
// each library only the exports that version had).
#include "fake_driver.h"

int fake_cuda::DriverVersion() { return HETRT_FAKE_CUDA_DRIVER_VERSION; }
