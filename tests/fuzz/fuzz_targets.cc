#include "fuzz_targets.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "generate_codec.h"
#include "grpc_generate_codec.h"
#include "grpc_infer_codec.h"
#include "hetrt/exec/graph_executor.h"
#include "hetrt/exec/relax_executor.h"
#include "hetrt/formats/device_payloads.h"
#include "hetrt/formats/elf_symbols.h"
#include "hetrt/formats/npy.h"
#include "hetrt/formats/params.h"
#include "hetrt/mlf.h"
#include "hetrt/module/module_loader.h"
#include "hetrt/relax/tensor_cache.h"
#include "http_request_head.h"
#include "rest_codec.h"

namespace hetrt::fuzz {
namespace {

class FuzzLibrary final : public Module {
 public:
  FuzzLibrary() : Module("library") {}
  Result<const PackedFunc*> GetOwnFunction(std::string_view) override {
    return static_cast<const PackedFunc*>(nullptr);
  }
};

PluginRegistry& NoPlugins() {
  static std::unique_ptr<PluginRegistry> registry = [] {
    PluginRegistry::Options options;
    options.search_paths = {"/nonexistent-fuzz-plugins"};
    return PluginRegistry::Discover(options);
  }();
  return *registry;
}

// A module tree loader, as the loader refuses it and as `inspect` keeps what it cannot load.
template <class Loader>
void LoadBothWays(Loader load, const uint8_t* data, size_t size) {
  LoadOptions options;
  options.plugins = &NoPlugins();
  for (bool keep_unloadable : {false, true}) {
    options.keep_unloadable = keep_unloadable;
    (void)load({data, size}, std::make_shared<FuzzLibrary>(), "fuzz", options);
  }
}

// A temporary directory with the shards the tensor-cache seeds name:
// tiny_llama's five (params_shard_0..4.bin, at the fixture's sizes) and a
// 64-byte params_shard_5.bin. Made once per process, removed at exit.
class TensorCacheDir {
 public:
  TensorCacheDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "hetrt-fuzz-tensor-cache-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) return;
    path_ = pattern;
    constexpr size_t kShardBytes[] = {65536, 114688, 65536, 65536, 115968, 64};
    for (size_t k = 0; k < std::size(kShardBytes); ++k) {
      std::string bytes(kShardBytes[k], '\0');
      for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 131 + k) % 251);
      std::ofstream(path_ + "/params_shard_" + std::to_string(k) + ".bin", std::ios::binary) << bytes;
    }
  }
  ~TensorCacheDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

void ParamDict(const uint8_t* data, size_t size) {
  auto params = ReadParamDict({data, size}, "fuzz");
  if (params.ok()) (void)WriteParamDict(*params);
}

void ModuleBlob(const uint8_t* data, size_t size) { LoadBothWays(LoadModuleTreeFromBlob, data, size); }

void GraphJson(const uint8_t* data, size_t size) {
  auto graph = ParseGraphJson(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!graph.ok()) return;
  // A valid graph must also survive storage planning (no kernels are needed
  // for that; a graph whose ops are missing fails in PrepareCalls, cleanly).
  GraphExecutor::Options options;
  options.plugins = &NoPlugins();
  (void)GraphExecutor::Create(std::make_shared<const Graph>(std::move(graph).value()), std::make_shared<FuzzLibrary>(),
                              options);
}

void Npy(const uint8_t* data, size_t size) { (void)ReadNpy({data, size}, "fuzz"); }

void RelaxExecutable(const uint8_t* data, size_t size) {
  // The same bytes as a tvm-ffi library's image (other tags, V2 allowed).
  if (auto ffi = ParseRelaxExecutable({data, size}, "fuzz", LibraryAbi::kTvmFfi); ffi.ok()) {
    auto image = WriteRelaxExecutable(*ffi);
    if (image.ok() && !ParseRelaxExecutable(*image, "fuzz re-encoded", LibraryAbi::kTvmFfi).ok()) __builtin_trap();
  }
  auto exe = ParseRelaxExecutable({data, size}, "fuzz");
  if (!exe.ok()) return;
  // What the loader and inspect do with a valid one must hold too.
  (void)DisassembleRelaxExecutable(*exe);
  for (uint32_t f = 0; f < exe->functions.size(); ++f)
    if (exe->functions[f].kind == RelaxFunction::Kind::kVmFunc) (void)AnalyzeRelaxFunction(*exe, f, {{kDLCPU, 0}});
  auto image = WriteRelaxExecutable(*exe);
  if (image.ok() && !ParseRelaxExecutable(*image, "fuzz re-encoded").ok()) __builtin_trap();
}

void FfiModuleBlob(const uint8_t* data, size_t size) { LoadBothWays(LoadModuleTreeFromFfiBlob, data, size); }

void DevicePayload(const uint8_t* data, size_t size) {
  if (size == 0) return;
  static constexpr const char* kKinds[] = {"cuda", "opencl", "vulkan"};
  const char* kind = kKinds[data[0] % 3];
  auto packed = DevicePayloadToPackedForm(kind, {data + 1, size - 1}, "fuzz");
  if (!packed.ok()) return;
  // What converts one way converts back and forth again to the same bytes.
  auto ffi = DevicePayloadToFfiForm(kind, *packed, /*wrap_vulkan_shaders=*/true, "fuzz");
  if (!ffi.ok()) __builtin_trap();
  auto again = DevicePayloadToPackedForm(kind, *ffi, "fuzz");
  if (!again.ok() || *again != *packed) __builtin_trap();
}

void TensorCacheJson(const uint8_t* data, size_t size) {
  static TensorCacheDir dir;
  if (dir.path().empty()) return;
  // Overwritten, then cut to size: ext4 flushes a file truncated to zero and
  // rewritten when it is closed, which would make each input a disk write.
  const int fd = ::open((dir.path() + "/tensor-cache.json").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const bool written =
      ::pwrite(fd, data, size, 0) == static_cast<ssize_t>(size) && ::ftruncate(fd, static_cast<off_t>(size)) == 0;
  ::close(fd);
  if (!written) return;
  auto index = TensorCacheIndex::Open(dir.path());
  if (!index.ok()) return;
  // A cache that opens decodes every record inside its shard (a record's
  // decoded size is at most twice its shard's, so the buffer stays small).
  std::vector<uint8_t> buffer;
  size_t decoded = 0;
  for (const TensorCacheRecord& record : index->records()) {
    if (++decoded > 64) break;
    buffer.resize(static_cast<size_t>(record.decoded_nbytes()));
    if (!DecodeRecordInto(*index, record, buffer.data()).ok() || index->Find(record.name) != &record) __builtin_trap();
  }
}

void ElfSymbols(const uint8_t* data, size_t size) { (void)ReadElfDynamicSymbols({data, size}, "fuzz"); }

void MlfTar(const uint8_t* data, size_t size) {
  MlfLimits limits;
  limits.max_total_bytes = 64 << 20;  // keep a fuzz input from asking for gigabytes
  auto pkg = MlfPackage::ReadBytes({data, size}, "fuzz", limits);
  if (pkg.ok()) (void)pkg->GraphJson();
}

void HttpRequestHead(const uint8_t* data, size_t size) {
  const std::string_view head(reinterpret_cast<const char*>(data), size);
  auto parsed = serve::RequestHead::Parse(head);
  if (!parsed) return;
  // Every view lies inside the input.
  for (std::string_view part : {parsed->method(), parsed->target(), parsed->Field("Content-Length"),
                                parsed->Field("Inference-Header-Content-Length"), parsed->Field("connection")})
    if (!part.empty() && (part.data() < head.data() || part.data() + part.size() > head.data() + head.size()))
      __builtin_trap();
  (void)parsed->Has("Transfer-Encoding");
  (void)parsed->content_length();
}

void RestInferRequest(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  std::optional<size_t> header;
  if (body.size() > 1 && body[0] == '#') {
    size_t n = 0;
    auto [end, ec] = std::from_chars(body.data() + 1, body.data() + body.size(), n);
    if (ec == std::errc() && end < body.data() + body.size() && *end == '\n') {
      header = n;
      body.remove_prefix(static_cast<size_t>(end - body.data()) + 1);
    }
  }
  serve::RestParseLimits limits;
  limits.max_input_bytes = 64 << 20;
  // As the REST frontend parses: binary inputs view the body (alive until the end).
  auto parsed = serve::ParseRestInferRequest(body, header, limits, serve::BinaryInputs::kViewOfBody);
  if (!parsed.ok()) return;
  // The decoded inputs, sent back as outputs, exercise the encoder too.
  serve::InferResponse response;
  response.id = parsed->request.id;
  response.outputs = parsed->request.inputs;
  (void)serve::EncodeRestInferResponse(response, parsed->output_format);
}

void GrpcInferRequest(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const int piece = data[0] == 0 ? -1 : data[0];
  google::protobuf::io::ArrayInputStream in(data + 1, static_cast<int>(size - 1), piece);
  auto read = serve::ReadInferRequest(in, size - 1);
  if (!read.ok()) return;
  auto request = serve::DecodeInferRequest(std::move(read).value());
  if (!request.ok()) return;
  // The decoded inputs, sent back as outputs, exercise the encoder too.
  serve::InferResponse response;
  response.id = request->id;
  response.outputs = request->inputs;
  (void)serve::EncodeInferResponse(response);
}

void GenerateRequestJson(const uint8_t* data, size_t size) {
  auto request = serve::ParseGenerateRequest(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!request.ok()) return;
  serve::GenerationEvent end;
  end.kind = serve::GenerationEvent::Kind::kEnd;
  end.finish_reason = serve::kFinishLength;
  end.token = request->input_ids.empty() ? -1 : request->input_ids.back();
  const std::string prefix = serve::GenerateAnswerPrefix("m", "1", request->id);
  (void)serve::EncodeGenerateAnswer(prefix, request->input_ids, end);
  std::string event;
  serve::AppendGenerateStreamEvent(event, prefix, end);
}

void GrpcGenerateRequest(const uint8_t* data, size_t size) {
  inference::ModelInferRequest message;
  if (!message.ParseFromArray(data, static_cast<int>(size))) return;
  auto request = serve::DecodeGenerateRequest(message);
  if (!request.ok()) return;
  serve::GenerationEvent token;
  token.token = request->input_ids.empty() ? -1 : request->input_ids.front();
  inference::ModelStreamInferResponse response;
  serve::EncodeGenerateResponse(token, request->model, request->version, request->id, response);
}

}  // namespace hetrt::fuzz
