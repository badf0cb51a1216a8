#include "in_process_model.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "graph_io.h"
#include "hetrt/sdk/tensor_layout.h"
#include "model_sources.h"

namespace hetrt::micro {
namespace fs = std::filesystem;

Status DescribeModelIo(const MlfPackage& mlf, std::vector<TensorSpec>& inputs, std::vector<TensorSpec>& outputs) {
  if (mlf.HasExecutor("graph")) {
    HETRT_ASSIGN_OR_RETURN(std::string graph_text, mlf.GraphJson());
    HETRT_ASSIGN_OR_RETURN(GraphIo io, ReadGraphIo(graph_text, "MLF graph"));
    inputs = std::move(io.inputs);
    outputs = std::move(io.outputs);
    return OkStatus();
  }
  // AOT: the model's shape when src/<model>.relay gave it, else flat.
  auto io = [&](const MlfTensorInfo& t) -> Result<TensorSpec> {
    const auto dtype = sdk::DtypeFromName(t.dtype);
    if (!dtype) return DataLoss("MLF metadata: tensor '" + t.name + "' has the unknown dtype '" + t.dtype + "'");
    TensorSpec spec{t.name, *dtype, static_cast<size_t>(t.bytes), t.shape};
    if (spec.shape.empty()) spec.shape = {static_cast<int64_t>(t.bytes / sdk::DtypeBytes(*dtype))};
    return spec;
  };
  for (const auto& t : mlf.metadata().inputs) {
    HETRT_ASSIGN_OR_RETURN(TensorSpec x, io(t));
    inputs.push_back(std::move(x));
  }
  for (const auto& t : mlf.metadata().outputs) {
    HETRT_ASSIGN_OR_RETURN(TensorSpec x, io(t));
    outputs.push_back(std::move(x));
  }
  return OkStatus();
}

struct InProcessModel::Api {
  int (*init)(void*, void*);
  int (*num_inputs)();
  int (*num_outputs)();
  const char* (*input_name)(int);
  const char* (*output_name)(int);
  void* (*input)(int, size_t*);
  void* (*output)(int, size_t*);
  int (*run)();
  const char* (*last_error)();
  size_t (*arena_peak)(const void*);
  void (*arena_report)(const void*, char*, size_t);
  alignas(16) uint8_t arena_state[128];     // hetrt_crt_arena_t of the tensors
  alignas(16) uint8_t executor_state[128];  // ... and of the executor's tables
};

Result<std::unique_ptr<InProcessModel>> InProcessModel::Build(const MlfPackage& mlf, const CompileOptions& options,
                                                              size_t arena_bytes) {
  std::unique_ptr<InProcessModel> m(new InProcessModel());
  static int counter = 0;
  m->dir_ = (fs::temp_directory_path() / ("hetrt-micro-" + std::to_string(getpid()) + "-" + std::to_string(counter++)))
                .string();
  HETRT_ASSIGN_OR_RETURN(auto sources, WriteModelSources(mlf, m->dir_));
  std::vector<std::string> inputs;
  for (const auto& s : sources) inputs.push_back((fs::path(m->dir_) / s).string());
  CompileOptions link = options;
  for (const auto& f : ModelIncludeFlags(m->dir_)) link.flags.push_back(f);
  // The runtime's own backend symbols must win over the host process's (hetrt's core exports the same names).
  link.flags.push_back("-Wl,-Bsymbolic");
  link.flags.push_back("-std=c99");
  const std::string so = m->dir_ + "/model.so";
  HETRT_RETURN_IF_ERROR(CompileSharedLibrary(inputs, so, link).WithContext(mlf.metadata().model_name));
  m->handle_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (m->handle_ == nullptr) return Internal(std::string("loading the micro model: ") + dlerror());
  m->api_ = std::make_unique<Api>();
  Api& a = *m->api_;
  auto sym = [&](const char* name) { return dlsym(m->handle_, name); };
  a.init = reinterpret_cast<int (*)(void*, void*)>(sym("hetrt_model_init"));
  a.num_inputs = reinterpret_cast<int (*)()>(sym("hetrt_model_num_inputs"));
  a.num_outputs = reinterpret_cast<int (*)()>(sym("hetrt_model_num_outputs"));
  a.input_name = reinterpret_cast<const char* (*)(int)>(sym("hetrt_model_input_name"));
  a.output_name = reinterpret_cast<const char* (*)(int)>(sym("hetrt_model_output_name"));
  a.input = reinterpret_cast<void* (*)(int, size_t*)>(sym("hetrt_model_input"));
  a.output = reinterpret_cast<void* (*)(int, size_t*)>(sym("hetrt_model_output"));
  a.run = reinterpret_cast<int (*)()>(sym("hetrt_model_run"));
  a.last_error = reinterpret_cast<const char* (*)()>(sym("hetrt_model_last_error"));
  a.arena_peak = reinterpret_cast<size_t (*)(const void*)>(sym("hetrt_model_arena_peak"));
  a.arena_report = reinterpret_cast<void (*)(const void*, char*, size_t)>(sym("hetrt_model_arena_report"));
  if (!a.init || !a.run || !a.input || !a.output || !a.arena_report)
    return Internal("the micro model library lacks the hetrt_model_* API");
  // The arena state struct is initialised by the runtime itself.
  auto arena_init = reinterpret_cast<void (*)(void*, void*, size_t)>(sym("hetrt_crt_arena_init"));
  m->arena_.resize(arena_bytes + 16);
  m->executor_arena_.resize((4u << 20) + 16);
  if (arena_init == nullptr) return Internal("the micro model library lacks hetrt_crt_arena_init");
  arena_init(a.arena_state, m->arena_.data(), m->arena_.size());
  arena_init(a.executor_state, m->executor_arena_.data(), m->executor_arena_.size());
  if (a.init(a.arena_state, a.executor_state) != 0)
    return FailedPrecondition(std::string("micro model init: ") + a.last_error());
  HETRT_RETURN_IF_ERROR(DescribeModelIo(mlf, m->inputs_, m->outputs_));
  if (a.num_inputs() != static_cast<int>(m->inputs_.size()) || a.num_outputs() != static_cast<int>(m->outputs_.size()))
    return Internal("micro model: the runtime and the metadata disagree on inputs/outputs");
  return m;
}

InProcessModel::~InProcessModel() {
  api_.reset();
  if (handle_) dlclose(handle_);
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

Status InProcessModel::SetInput(int index, std::span<const uint8_t> bytes) {
  HETRT_RETURN_IF_ERROR(CheckIo(inputs_, index, bytes.size(), "set_input"));
  size_t capacity = 0;
  void* dst = api_->input(index, &capacity);
  if (dst == nullptr || capacity != bytes.size())
    return Internal("micro model: the runtime's input " + std::to_string(index) + " is not the metadata's");
  std::memcpy(dst, bytes.data(), bytes.size());
  return OkStatus();
}

Status InProcessModel::Run() {
  if (api_->run() != 0) return Internal(std::string("micro model: ") + api_->last_error());
  return OkStatus();
}

Status InProcessModel::GetOutput(int index, std::span<uint8_t> out) const {
  HETRT_RETURN_IF_ERROR(CheckIo(outputs_, index, out.size(), "get_output"));
  size_t size = 0;
  const void* src = api_->output(index, &size);
  if (src == nullptr || size != out.size())
    return Internal("micro model: the runtime's output " + std::to_string(index) + " is not the metadata's");
  std::memcpy(out.data(), src, size);
  return OkStatus();
}

size_t InProcessModel::ArenaPeakBytes() const { return api_->arena_peak(api_->arena_state); }
size_t InProcessModel::ExecutorPeakBytes() const { return api_->arena_peak(api_->executor_state); }

std::string InProcessModel::ArenaReport() const {
  char buf[512];
  api_->arena_report(api_->arena_state, buf, sizeof buf);
  return std::string(buf) + "; executor tables " + std::to_string(ExecutorPeakBytes()) + " (separate, static)";
}

}  // namespace hetrt::micro
