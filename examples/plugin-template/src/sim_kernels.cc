#include "sim_kernels.h"

#include <string>

namespace sim {
namespace {

// Reports through the host's set_last_error, as a failing packed function must.
int32_t Fail(const hetrt_instance* self, const std::string& message) {
  hetrt::sdk::ReportError(self->host, message.c_str());
  return -1;
}

// Argument `i` as `count` floats of simulated device memory, or NULL after
// reporting why (a host pointer where device memory belongs: a missing copy).
float* Buffer(hetrt_instance* self, const char* kernel, hetrt_value_t* args, int32_t* codes, int i, int64_t count) {
  if (codes[i] != HETRT_TYPE_HANDLE) {
    Fail(self, std::string(kernel) + ": argument " + std::to_string(i) + " is not a buffer");
    return nullptr;
  }
  std::string why;
  std::byte* bytes = self->memory.Resolve(args[i].v_handle, static_cast<uint64_t>(count) * sizeof(float), &why);
  if (bytes == nullptr) Fail(self, std::string(kernel) + ": argument " + std::to_string(i) + " " + why);
  return reinterpret_cast<float*>(bytes);
}

bool Count(hetrt_instance* self, const char* kernel, hetrt_value_t* args, int32_t* codes, int32_t num_args,
           int32_t expected, int64_t* count) {
  if (num_args != expected || codes[expected - 1] != HETRT_TYPE_INT || args[expected - 1].v_int64 < 0) {
    Fail(self, std::string(kernel) + ": expects " + std::to_string(expected - 1) + " buffers and an element count");
    return false;
  }
  *count = args[expected - 1].v_int64;
  return true;
}

// out[i] = a[i] + b[i]
int32_t Add(hetrt_instance* self, hetrt_value_t* args, int32_t* codes, int32_t num_args) {
  int64_t n = 0;
  if (!Count(self, "sim_add_kernel", args, codes, num_args, 4, &n)) return -1;
  const float* a = Buffer(self, "sim_add_kernel", args, codes, 0, n);
  const float* b = a ? Buffer(self, "sim_add_kernel", args, codes, 1, n) : nullptr;
  float* out = b ? Buffer(self, "sim_add_kernel", args, codes, 2, n) : nullptr;
  if (out == nullptr) return -1;
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  return 0;
}

// out[i] = max(in[i], 0)
int32_t Relu(hetrt_instance* self, hetrt_value_t* args, int32_t* codes, int32_t num_args) {
  int64_t n = 0;
  if (!Count(self, "sim_relu_kernel", args, codes, num_args, 3, &n)) return -1;
  const float* in = Buffer(self, "sim_relu_kernel", args, codes, 0, n);
  float* out = in ? Buffer(self, "sim_relu_kernel", args, codes, 1, n) : nullptr;
  if (out == nullptr) return -1;
  for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
  return 0;
}

struct Named {
  std::string_view name;
  KernelFn fn;
};
constexpr Named kKernels[] = {{"sim_add_kernel", Add}, {"sim_relu_kernel", Relu}};

}  // namespace

KernelFn FindKernel(std::string_view name) {
  for (const Named& k : kKernels)
    if (k.name == name) return k.fn;
  return nullptr;
}

}  // namespace sim
