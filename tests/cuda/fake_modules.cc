// The fake driver's modules and launches: images are read as a driver reads
// them (PTX text up to this driver's ISA, cubins and fatbins for this GPU,
// kernel names from the PTX entries or the ELF symbol tables), functions
// exist only when the image has them and the fake can run them, and launches
// are checked as cuLaunchKernel checks them before they queue.
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "fake_kernels.h"

struct CUfunc_st;
struct CUmod_st {
  CUctx_st* ctx = nullptr;
  std::set<std::string> kernels;                           // names the image defines
  std::vector<std::unique_ptr<CUfunc_st>> functions = {};  // handles die with the module, as in the driver
  ~CUmod_st();
};
struct CUfunc_st {
  CUmod_st* module = nullptr;
  const fake_cuda::FakeKernel* kernel = nullptr;
  std::string name;
  int max_dynamic_shared = 48 * 1024;
};
CUmod_st::~CUmod_st() = default;

using namespace fake_cuda;

namespace {

template <class T>
bool Read(std::string_view bytes, uint64_t at, T* out) {
  if (at > bytes.size() || sizeof(T) > bytes.size() - at) return false;
  std::memcpy(out, bytes.data() + at, sizeof(T));
  return true;
}

// The .entry names of PTX text.
std::set<std::string> PtxEntries(std::string_view ptx) {
  std::set<std::string> names;
  for (size_t at = ptx.find(".entry"); at != std::string_view::npos; at = ptx.find(".entry", at + 1)) {
    size_t begin = ptx.find_first_not_of(" \t", at + 6);
    size_t end = ptx.find_first_of(" \t\r\n(", begin);
    if (begin != std::string_view::npos && end != std::string_view::npos) names.emplace(ptx.substr(begin, end - begin));
  }
  return names;
}

// "9.0" of ".version 9.0" as 90; 0 when there is none.
int PtxVersion(std::string_view ptx) {
  const size_t at = ptx.find(".version ");
  if (at == std::string_view::npos) return 0;
  int major = 0, minor = 0;
  if (std::sscanf(std::string(ptx.substr(at + 9, 8)).c_str(), "%d.%d", &major, &minor) != 2) return 0;
  return major * 10 + minor;
}

// A cubin: an ELF64 for EM_CUDA (190) whose e_flags name its SM (bits 8-15
// from ELF ABI version 8, as nvcc 13 writes it; bits 0-7 before), and whose
// FUNC symbols are its kernels. Returns the SM, 0 when the ELF is malformed.
int ReadCubin(std::string_view elf, std::set<std::string>* kernels) {
  uint16_t machine = 0, section_size = 0, sections = 0;
  uint32_t flags = 0;
  uint64_t section_table = 0;
  if (elf.size() < 64 || elf.compare(0, 4, "\x7f" "ELF") != 0 || elf[4] != 2 || !Read(elf, 18, &machine) ||
      machine != 190 || !Read(elf, 40, &section_table) || !Read(elf, 48, &flags) || !Read(elf, 58, &section_size) ||
      !Read(elf, 60, &sections) || section_size < 64)
    return 0;
  const int abi_version = static_cast<unsigned char>(elf[8]);
  for (uint16_t i = 0; i < sections; ++i) {
    const uint64_t header = section_table + uint64_t{i} * section_size;
    uint32_t type = 0, link = 0;
    uint64_t offset = 0, size = 0, entry_size = 0;
    if (!Read(elf, header + 4, &type) || !Read(elf, header + 24, &offset) || !Read(elf, header + 32, &size) ||
        !Read(elf, header + 40, &link) || !Read(elf, header + 56, &entry_size))
      return 0;
    if (type != 2 /* SHT_SYMTAB */) continue;
    uint64_t strings = 0, strings_size = 0;
    const uint64_t string_header = section_table + uint64_t{link} * section_size;
    if (entry_size < 24 || !Read(elf, string_header + 24, &strings) || !Read(elf, string_header + 32, &strings_size) ||
        strings > elf.size() || strings_size > elf.size() - strings)
      return 0;
    for (uint64_t at = offset; at + 24 <= offset + size; at += entry_size) {
      uint32_t name = 0;
      uint8_t info = 0;
      if (!Read(elf, at, &name) || !Read(elf, at + 4, &info)) return 0;
      if ((info & 0xf) != 2 /* STT_FUNC */ || name >= strings_size) continue;
      const std::string_view table = elf.substr(strings, strings_size);
      kernels->emplace(table.substr(name, table.find('\0', name) - name));
    }
  }
  return static_cast<int>(abi_version >= 8 ? (flags >> 8) & 0xff : flags & 0xff);
}

// Code for SM `code` runs on a GPU of the same major version and no older minor one.
bool CubinRunsOn(int code, int sm) { return code / 10 == sm / 10 && code <= sm; }

// A fatbin: its header (magic, u16 version, u16 header size, u64 size), then
// entries of u16 kind (1 PTX, 2 ELF), u16, u32 entry header size, u64
// payload size, ..., u32 arch at +28, the payload after the entry header.
// The kernels of the entries this GPU can run; CUDA_ERROR_NO_BINARY_FOR_GPU
// when there is none, CUDA_ERROR_INVALID_IMAGE when it is malformed.
CUresult ReadFatbin(const unsigned char* image, std::set<std::string>* kernels) {
  uint16_t header = 0;
  uint64_t size = 0;
  std::memcpy(&header, image + 6, 2);
  std::memcpy(&size, image + 8, 8);
  const std::string_view bytes(reinterpret_cast<const char*>(image), header + size);
  bool fits = false;
  for (uint64_t at = header; at + 32 <= bytes.size();) {
    uint16_t kind = 0;
    uint32_t entry_header = 0, arch = 0;
    uint64_t payload = 0;
    Read(bytes, at, &kind), Read(bytes, at + 4, &entry_header), Read(bytes, at + 8, &payload),
        Read(bytes, at + 28, &arch);
    if (entry_header == 0 || payload > bytes.size() - at - entry_header) return CUDA_ERROR_INVALID_IMAGE;
    const std::string_view body = bytes.substr(at + entry_header, payload);
    const int a = static_cast<int>(arch);
    if (kind == 1 && a <= Sm() && PtxVersion(body) <= PtxIsa(DriverVersion())) {
      fits = true;
      kernels->merge(PtxEntries(body));
    } else if (kind == 2 && CubinRunsOn(a, Sm())) {
      fits = true;
      if (ReadCubin(body, kernels) == 0) return CUDA_ERROR_INVALID_IMAGE;
    }
    at += entry_header + payload;
  }
  return fits ? CUDA_SUCCESS : CUDA_ERROR_NO_BINARY_FOR_GPU;
}

void WriteLog(unsigned n, CUjit_option* options, void** values, const std::string& text) {
  char* buffer = nullptr;
  size_t size = 0;
  for (unsigned i = 0; i < n; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER) buffer = static_cast<char*>(values[i]);
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) size = reinterpret_cast<uintptr_t>(values[i]);
  }
  if (buffer && size) std::snprintf(buffer, size, "%s", text.c_str());
}

}  // namespace

extern "C" {

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int n, CUjit_option* options, void** values) {
  {
    Lock lock(S().mutex);
    if (CUresult r = NeedContext(lock)) return r;
  }
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto* bytes = static_cast<const unsigned char*>(image);
  uint32_t magic = 0;
  std::memcpy(&magic, bytes, 4);
  std::set<std::string> kernels;
  if (magic == 0xBA55ED50) {
    if (CUresult r = ReadFatbin(bytes, &kernels)) return r;
  } else if (std::memcmp(bytes, "\x7f" "ELF", 4) == 0) {
    uint64_t section_table = 0;
    uint16_t section_size = 0, sections = 0;
    std::memcpy(&section_table, bytes + 40, 8);
    std::memcpy(&section_size, bytes + 58, 2);
    std::memcpy(&sections, bytes + 60, 2);
    const std::string_view elf(reinterpret_cast<const char*>(image), section_table + uint64_t{section_size} * sections);
    const int sm = ReadCubin(elf, &kernels);
    if (sm == 0) return CUDA_ERROR_INVALID_IMAGE;
    if (!CubinRunsOn(sm, Sm())) return CUDA_ERROR_NO_BINARY_FOR_GPU;
  } else {
    const std::string_view text(static_cast<const char*>(image));
    const int version = PtxVersion(text);
    if (version == 0) return CUDA_ERROR_INVALID_IMAGE;
    if (version > PtxIsa(DriverVersion())) {
      const int isa = PtxIsa(DriverVersion());
      WriteLog(n, options, values,
               "ptxas fatal: Unsupported .version " + std::to_string(version / 10) + "." + std::to_string(version % 10) +
                   "; the fake driver reads PTX up to " + std::to_string(isa / 10) + "." + std::to_string(isa % 10));
      return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    }
    kernels = PtxEntries(text);
  }
  *module = new CUmod_st{t_current, std::move(kernels)};
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule module) {
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Lock lock(S().mutex);
  if (t_current != module->ctx) return CUDA_ERROR_INVALID_CONTEXT;
  WaitIdle(lock, module->ctx);  // queued launches of its functions run first
  const CUresult sticky = module->ctx->sticky;
  delete module;
  return sticky;
}

// A kernel the image does not define is not found, and so is one the fake has
// no host build of: it could not run it.
CUresult cuModuleGetFunction(CUfunction* f, CUmodule module, const char* name) {
  if (module == nullptr || name == nullptr || f == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock(S().mutex);
  if (module->ctx->sticky) return module->ctx->sticky;
  const FakeKernel* kernel = FindKernel(name);
  if (module->kernels.count(name) == 0 || kernel == nullptr) {
    Log(std::string("no function ") + name + (module->kernels.count(name) ? " (no host build in the fake)" : ""));
    return CUDA_ERROR_NOT_FOUND;
  }
  module->functions.push_back(std::make_unique<CUfunc_st>(CUfunc_st{module, kernel, name}));
  *f = module->functions.back().get();
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute attribute, int value) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;
  if (value < 0 || value > 160 * 1024) return CUDA_ERROR_INVALID_VALUE;
  Lock lock(S().mutex);
  if (f->module->ctx->sticky) return f->module->ctx->sticky;
  f->max_dynamic_shared = value;
  Log("attribute " + f->name + " max_dynamic_shared=" + std::to_string(value));
  return CUDA_SUCCESS;
}

// Arguments come either as kernelParams (one pointer per parameter) or as
// `extra`: {CU_LAUNCH_PARAM_BUFFER_POINTER, p, CU_LAUNCH_PARAM_BUFFER_SIZE,
// &size, CU_LAUNCH_PARAM_END} with the size the kernel's parameters take.
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream stream, void** params, void** extra) {
  Lock lock(S().mutex);
  if (CUresult r = NeedContext(lock)) return r;
  if (f == nullptr || f->module->ctx != t_current || ContextOf(stream) != t_current) return CUDA_ERROR_INVALID_CONTEXT;
  if (!gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
  if (static_cast<int>(shared) > f->max_dynamic_shared) return CUDA_ERROR_INVALID_VALUE;
  if ((params == nullptr) == (extra == nullptr)) return CUDA_ERROR_INVALID_VALUE;  // one of the two
  BoundKernel kernel;
  if (params != nullptr) {
    kernel = f->kernel->from_params(params);
  } else {
    const unsigned char* buffer = nullptr;
    const size_t* size = nullptr;
    for (void** at = extra; *at != CU_LAUNCH_PARAM_END; at += 2) {
      if (*at == CU_LAUNCH_PARAM_BUFFER_POINTER)
        buffer = static_cast<const unsigned char*>(at[1]);
      else if (*at == CU_LAUNCH_PARAM_BUFFER_SIZE)
        size = static_cast<const size_t*>(at[1]);
      else
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (buffer == nullptr || size == nullptr || *size != f->kernel->buffer_size) return CUDA_ERROR_INVALID_VALUE;
    kernel = f->kernel->from_buffer(buffer);
  }
  Log("launch " + f->name + " grid=" + std::to_string(gx) + "," + std::to_string(gy) + "," + std::to_string(gz) +
      " block=" + std::to_string(bx) + "," + std::to_string(by) + "," + std::to_string(bz) +
      " shared=" + std::to_string(shared) + " stream=" + std::to_string(StreamId(stream)) +
      " cuda:" + std::to_string(t_current->device));
  const CUctx_st* ctx = t_current;
  return Enqueue(lock, t_current, stream,
                 Work{{}, [ctx, kernel = std::move(kernel), grid = Dim3{gx, gy, gz}, block = Dim3{bx, by, bz}, shared] {
                        return RunKernel(ctx, kernel, grid, block, shared);
                      }});
}

}  // extern "C"
