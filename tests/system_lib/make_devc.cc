// Writes the system-lib devc.c of tests/system_lib/model.c: the tree a TVM
// system-lib export of that model holds (the host code's "_lib" slot importing
// an "opencl" module with the twice_into kernel), emitted by hetrt's exporter
// with DevcOptions::system_lib, so that its blob registers itself before main().
#include <cstdio>

#include "hetrt/sdk/byte_stream.h"
#include "test_support.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT.c\n", argv[0]);
    return 2;
  }
  auto source = hetrt::testing::OpenClTwiceIntoSystemLibDevc("");
  hetrt::Status written =
      source.ok() ? hetrt::WriteFileBytes(argv[1], {reinterpret_cast<const uint8_t*>(source->data()), source->size()})
                  : source.status();
  if (!written.ok()) {
    std::fprintf(stderr, "%s\n", written.message().c_str());
    return 1;
  }
  return 0;
}
