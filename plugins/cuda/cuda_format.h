// The parts of the CUDA plugin that need no driver and no GPU, kept apart so
// that they are unit-tested everywhere: TVM's `cuda` module blob (read and
// written byte for byte), telling PTX / cubin / fatbin apart, launch geometry
// from the launch-param tags, and kernel-argument packing.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hetrt/plugin_abi.h"
#include "hetrt/sdk/tvm_blob.h"

namespace hetrt::cuda {

// ---- Module images: what cuModuleLoadData is given. ----

enum class ImageKind { kPtx, kCubin, kFatbin, kUnknown };

inline constexpr uint32_t kFatbinMagic = 0xBA55ED50;  // first u32 of an nvcc fatbin (bytes 50 ed 55 ba)

// PTX is text that starts (after blanks) with a comment or a directive; a
// cubin is an ELF file; a fatbin starts with kFatbinMagic.
ImageKind DetectImage(std::span<const uint8_t> data);
const char* ImageKindName(ImageKind kind);  // "PTX", "cubin", "fatbin", "unknown"

// The operand of a PTX directive: PtxDirective(ptx, ".version") -> "9.0",
// (".target") -> "sm_75". Empty when absent.
std::string PtxDirective(std::string_view ptx, std::string_view directive);

// One line for messages: "PTX 9.0 for sm_75", "cubin for sm_80", "fatbin: sm_80 cubin,
// compute_75 PTX", or "unknown (first bytes 00 11 ...)".
std::string DescribeImage(std::span<const uint8_t> data);

// ---- The blob (type_key "cuda"): str fmt, map<str, FunctionInfo>, str data. ----

using sdk::FunctionInfo;

struct ModuleBlob {
  std::string fmt;             // "ptx", "cubin" (TVM's label for cubins and fatbins) or "fatbin"
  sdk::FunctionMap functions;  // in blob order, for byte-exact saving
  std::string data;            // the image; std::string so that PTX handed to the driver is NUL-terminated
};

// Reads a blob from the start of `data`; sets *consumed to the bytes it
// spans. Returns "" or why the bytes are not a well-formed cuda blob.
std::string ParseModuleBlob(std::span<const uint8_t> data, ModuleBlob* out, uint64_t* consumed);
// The bytes ParseModuleBlob reads back (TVM's SaveToBinary layout).
std::vector<uint8_t> SerializeModuleBlob(const ModuleBlob& blob);

// ---- Launching: geometry from the trailing launch arguments. ----

// What a function's launch tags mean (the SDK reads them as every plugin does).
using sdk::LaunchTags;
using sdk::ParseLaunchTags;

struct LaunchGeometry {
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t dynamic_shared_bytes = 0;
};
// From the int64 values after the kernel arguments (one per tag, then the
// shared-memory size). Values <= 0 leave a dimension at 1, as TVM does; a
// value that does not fit the driver's 32 bits is an error.
std::string ComputeGeometry(const LaunchTags& tags, const hetrt_value_t* launch_args, LaunchGeometry* out);
// "grid (4, 1, 1), block (64, 1, 1), 0 bytes of dynamic shared memory"
std::string DescribeGeometry(const LaunchGeometry& g);

// Dynamic shared memory above this needs the function's limit raised first
// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
inline constexpr uint32_t kDefaultDynamicSharedLimit = 48 * 1024;

// ---- Kernel arguments, narrowed to the widths FunctionInfo gives. ----

// How one argument is passed: its width in bytes and where its value comes from.
enum class ArgConversion : uint8_t {
  kHandle,            // device pointer, 8 bytes (v_handle)
  kInt64ToInt32,      // int32 / uint32: the low 4 bytes of v_int64
  kInt64,             // int64 / uint64: 8 bytes
  kFloat64ToFloat32,  // float32: v_float64 narrowed
  kFloat64,           // float64: 8 bytes
};
struct ArgPlan {
  std::vector<ArgConversion> conversions;
  int num_handles = 0;
};
// Error for vector types (lanes != 1) and types TVM does not pass either.
std::string PlanArguments(const std::vector<DLDataType>& types, ArgPlan* out);
uint32_t ArgWidth(ArgConversion c);  // bytes the kernel parameter occupies

// Fills one 8-byte slot per argument with its narrowed value and points
// params[i] at it, as cuLaunchKernel's kernelParams expects. `slots` and
// `params` hold conversions.size() entries. Returns the index of an argument
// whose type code does not fit (a non-handle where a buffer is due), or -1.
int PackArguments(const ArgPlan& plan, const hetrt_value_t* args, const int32_t* type_codes, uint64_t* slots,
                  void** params);

}  // namespace hetrt::cuda
