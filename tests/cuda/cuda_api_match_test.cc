// hetrt's declarations of the CUDA driver API (plugins/cuda/cuda_driver_api.h)
// against the CUDA toolkit's cuda.h and cudaTypedefs.h, where the toolkit is
// installed (ctest: cuda_api_match.missing says so where it is not): the
// types and their sizes, each enumeration's underlying type and every value
// its list has, each PFN_<name>_v<version> with the toolkit's once hetrt's
// enums are mapped to cuda.h's, and that each symbol the plugin resolves
// (cuda_driver.h) and the fake driver exports (fake_exports.h) is declared by
// cuda.h with exactly that variant's type. The lists are the header's own, so
// whatever is added there is checked here.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <type_traits>

// hetrt's first: cuda.h defines some of the same names as macros.
#include "cuda_driver.h"
#include "cuda_driver_api.h"
#include "fake_exports.h"

// The toolkit's declarations of the old variants (the 32-bit cuMemAlloc of
// CUDA 2.0, the cuGetProcAddress of 11.3, ...) are visible only to NVIDIA's own
// build of the driver, which also keeps cuda.h from renaming each function to
// its newest variant (cuMemAlloc to cuMemAlloc_v2): the fake exports those
// variants by their own names, as a driver does.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>

namespace {

namespace api = hetrt::cuda_api;

// A type of hetrt's declarations as the toolkit spells it: hetrt's enums are
// its own types; everything else (handles, CUdevice, CUdeviceptr, cuuint64_t)
// is already the toolkit's type, which the tests below check.
template <class T>
struct Toolkit {
  using type = T;
};
#define HETRT_TOOLKIT_ENUM(type_name, list) \
  template <>                               \
  struct Toolkit<api::type_name> {          \
    using type = ::type_name;               \
  };
HETRT_CUDA_API_ENUMS(HETRT_TOOLKIT_ENUM)
#undef HETRT_TOOLKIT_ENUM
template <class T>
struct Toolkit<T*> {
  using type = typename Toolkit<T>::type*;
};
template <class T>
struct Toolkit<const T> {
  using type = const typename Toolkit<T>::type;
};
template <class R, class... A>
struct Toolkit<R (*)(A...)> {
  using type = typename Toolkit<R>::type (*)(typename Toolkit<A>::type...);
};
template <class T>
using ToolkitType = typename Toolkit<T>::type;

TEST(CudaApiMatch, TypesAreTheToolkits) {
  EXPECT_TRUE((std::is_same_v<api::cuuint64_t, ::cuuint64_t>));
  EXPECT_TRUE((std::is_same_v<api::CUdevice, ::CUdevice>));
  EXPECT_TRUE((std::is_same_v<api::CUdeviceptr, ::CUdeviceptr>));
  EXPECT_TRUE((std::is_same_v<api::CUdeviceptr_v1, ::CUdeviceptr_v1>));
  EXPECT_TRUE((std::is_same_v<api::CUcontext, ::CUcontext>));
  EXPECT_TRUE((std::is_same_v<api::CUmodule, ::CUmodule>));
  EXPECT_TRUE((std::is_same_v<api::CUfunction, ::CUfunction>));
  EXPECT_TRUE((std::is_same_v<api::CUstream, ::CUstream>));
  EXPECT_TRUE((std::is_same_v<api::CUevent, ::CUevent>));
  EXPECT_EQ(sizeof(api::CUdeviceptr), sizeof(void*));
}

TEST(CudaApiMatch, EnumsHaveTheToolkitsRepresentation) {
#define HETRT_CHECK_ENUM(type_name, list)                                                                    \
  EXPECT_EQ(sizeof(api::type_name), sizeof(::type_name)) << #type_name;                                      \
  EXPECT_EQ(alignof(api::type_name), alignof(::type_name)) << #type_name;                                    \
  EXPECT_TRUE((std::is_same_v<std::underlying_type_t<api::type_name>, std::underlying_type_t<::type_name>>)) \
      << #type_name;
  HETRT_CUDA_API_ENUMS(HETRT_CHECK_ENUM)
#undef HETRT_CHECK_ENUM
}

// Each enumerator of hetrt's lists: cuda.h has it, of the same enum, with the
// same value.
TEST(CudaApiMatch, EnumValuesAreTheToolkits) {
  int checked = 0;
#define HETRT_CHECK_VALUE(name, value)                                                        \
  EXPECT_EQ(static_cast<long long>(value), static_cast<long long>(::name)) << #name;          \
  EXPECT_EQ(static_cast<long long>(api::name), static_cast<long long>(::name)) << #name;      \
  EXPECT_TRUE((std::is_same_v<ToolkitType<decltype(api::name)>, decltype(::name)>)) << #name; \
  ++checked;
#define HETRT_CHECK_ENUM_VALUES(type_name, list) list(HETRT_CHECK_VALUE)
  HETRT_CUDA_API_ENUMS(HETRT_CHECK_ENUM_VALUES)
#undef HETRT_CHECK_ENUM_VALUES
#undef HETRT_CHECK_VALUE
  EXPECT_GT(checked, 40);
}

// The constants cuda.h defines as macros: here `name` expands to cuda.h's
// definition, `value` is hetrt's (which hetrt's constant of that name holds).
TEST(CudaApiMatch, MacroConstantsAreTheToolkits) {
#define HETRT_CHECK_FLAG(name, value) EXPECT_EQ(static_cast<unsigned int>(value), name) << #name;
  HETRT_CUDA_API_HOST_ALLOC_FLAGS(HETRT_CHECK_FLAG)
#undef HETRT_CHECK_FLAG
#define HETRT_CHECK_LAUNCH_PARAM(name, value) \
  EXPECT_EQ(std::uintptr_t{value}, reinterpret_cast<std::uintptr_t>(name)) << #name;
  HETRT_CUDA_API_LAUNCH_PARAMS(HETRT_CHECK_LAUNCH_PARAM)
#undef HETRT_CHECK_LAUNCH_PARAM
}

// Every PFN_<name>_v<version> hetrt declares is cudaTypedefs.h's.
TEST(CudaApiMatch, EntryPointTypesAreTheToolkits) {
#define HETRT_CHECK_PFN(name, version, parameters)                                                    \
  EXPECT_TRUE((std::is_same_v<ToolkitType<api::PFN_##name##_v##version>, ::PFN_##name##_v##version>)) \
      << "PFN_" #name "_v" #version;
  HETRT_CUDA_API_ENTRY_POINTS(HETRT_CHECK_PFN)
#undef HETRT_CHECK_PFN
}

// The symbol each variant is resolved or exported by: cuda.h declares that
// function with that variant's type (cuMemAlloc_v2 is cuMemAlloc's 3.2
// variant, cuGetProcAddress its 11.3 one).
#define HETRT_CHECK_SYMBOL(name, symbol, version)                                                           \
  EXPECT_TRUE((std::is_same_v<decltype(&::symbol), ToolkitType<hetrt::cuda_api::PFN_##name##_v##version>>)) \
      << #symbol " as PFN_" #name "_v" #version;

TEST(CudaApiMatch, ThePluginResolvesTheVariantsItNames){HETRT_CUDA_DRIVER_FUNCTIONS(HETRT_CHECK_SYMBOL)}

TEST(CudaApiMatch, TheFakeDriverExportsTheVariantsItNames) {
  HETRT_FAKE_CUDA_EXPORTS(HETRT_CHECK_SYMBOL)
}

#undef HETRT_CHECK_SYMBOL

// What the build was checked against, in the test's output.
TEST(CudaApiMatch, ToolkitVersion) {
  std::printf("checked against cuda.h of CUDA %d.%d\n", CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
  EXPECT_GE(CUDA_VERSION, 12000);
}

}  // namespace
