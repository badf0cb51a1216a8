#include "test_support.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <string_view>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/base/dtype.h"
#include "hetrt/base/required.h"
#include "hetrt/module_export.h"

namespace hetrt::testing {

std::string RequiredList() { return ::hetrt::RequiredList(); }

bool Required(const std::string& what) { return ListRequires(RequiredList(), what); }

std::string FixturesRoot() {
  if (const char* env = std::getenv("HETRT_FIXTURES"); env && *env) return env;
  return HETRT_DEFAULT_FIXTURES_DIR;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

Status CallKernel(Module& m, DLDevice device, const std::string& kernel, std::vector<hetrt_value_t> args,
                  std::vector<int32_t> codes) {
  const PackedFunc* set_device = GlobalFunctionRegistry::Get().Find("__tvm_set_device");
  if (set_device == nullptr) return NotFound("__tvm_set_device");
  hetrt_value_t dev[2] = {{.v_int64 = device.device_type}, {.v_int64 = device.device_id}};
  int32_t dev_codes[2] = {HETRT_TYPE_INT, HETRT_TYPE_INT};
  HETRT_RETURN_IF_ERROR(CallPackedFunc(*set_device, dev, dev_codes, 2));
  HETRT_ASSIGN_OR_RETURN(const PackedFunc* f, m.GetFunction(kernel));
  if (f == nullptr) return NotFound(kernel);
  return CallPackedFunc(*f, args.data(), codes.data(), static_cast<int32_t>(args.size()));
}

Tensor Random(std::vector<int64_t> shape, uint32_t seed) {
  Tensor t = Tensor::EmptyHost(std::move(shape), {kDLFloat, 32, 1}).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data_as<float>()[i] = d(rng);
  return t;
}

std::vector<const Module*> ModulesOfType(const Module& root, std::string_view type_key) {
  std::vector<const Module*> stack{&root}, found;
  while (!stack.empty()) {
    const Module* m = stack.back();
    stack.pop_back();
    if (m->type_key() == type_key) found.push_back(m);
    for (const auto& i : m->imports()) stack.push_back(i.get());
  }
  return found;
}

std::string TvmFixture(const std::string& model) {
  std::filesystem::path dir = std::filesystem::path(FixturesRoot()) / "tvm-0.18" / model;
  return std::filesystem::is_directory(dir) ? dir.string() : std::string();
}

std::vector<std::string> TvmFixtureModels() {
  std::vector<std::string> models;
  std::filesystem::path dir = std::filesystem::path(FixturesRoot()) / "tvm-0.18";
  if (!std::filesystem::is_directory(dir)) return models;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.is_directory() && entry.path().filename() != "mlf") models.push_back(entry.path().filename().string());
  std::sort(models.begin(), models.end());
  return models;
}

std::vector<std::string> FixtureLibraries(const std::string& dir) {
  std::vector<std::string> libraries;
  for (const char* file : {"/deploy.so", "/lib.so"})
    if (std::filesystem::exists(dir + file)) libraries.push_back(dir + file);
  return libraries;
}

std::string MlfFixturesDir() {
  std::filesystem::path dir = std::filesystem::path(FixturesRoot()) / "tvm-0.18" / "mlf";
  return std::filesystem::is_directory(dir) ? dir.string() : std::string();
}

namespace {
constexpr std::string_view kMlfSuffix = "_mlf.tar";
bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
}  // namespace

std::vector<std::string> MlfFixtureNames() {
  std::vector<std::string> names;
  const std::string dir = MlfFixturesDir();
  if (dir.empty()) return names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    if (!EndsWith(file, kMlfSuffix)) continue;
    const std::string name = file.substr(0, file.size() - kMlfSuffix.size());
    if (EndsWith(name, "_graph") || EndsWith(name, "_aot")) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

MlfFixture MlfFixtureNamed(const std::string& name) {
  const std::string dir = MlfFixturesDir();
  MlfFixture f;
  f.tar = dir + "/" + name + std::string(kMlfSuffix);
  f.graph = EndsWith(name, "_graph");
  f.model = name.substr(0, name.rfind('_'));
  f.inputs = dir + "/" + f.model + "_inputs.params";
  f.outputs = dir + "/" + f.model + "_outputs.params";
  return f;
}

void PrintTo(const FixtureParam& param, std::ostream* os) { *os << (param.name.empty() ? "(none)" : param.name); }

std::vector<FixtureParam> FixtureParams(const std::vector<std::string>& names, const std::string& what,
                                        const std::function<bool(const std::string& name)>& keep) {
  std::vector<FixtureParam> params;
  std::set<std::string> test_names;
  for (const std::string& name : names) {
    bool kept = true;  // also when `keep` throws: the fixture's test then reports the error
    try {
      kept = !keep || keep(name);
    } catch (...) {
    }
    if (!kept) continue;
    std::string base = name;
    for (char& c : base)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
    std::string test_name = base;
    for (int n = 2; !test_names.insert(test_name).second; ++n) test_name = base + "_" + std::to_string(n);
    params.push_back({name, "", test_name});
  }
  if (params.empty())
    params.push_back({"", "no " + what + " under " + FixturesRoot() + " (set HETRT_FIXTURES or -DHETRT_FIXTURES_DIR)",
                      "NoFixtures"});
  return params;
}

std::vector<FixtureParam> GraphMlfFixtureParams() {
  return FixtureParams(MlfFixtureNames(), "graph MLF fixtures",
                       [](const std::string& name) { return MlfFixtureNamed(name).graph; });
}

std::string FixtureParamName(const ::testing::TestParamInfo<FixtureParam>& info) { return info.param.test_name; }

void PerFixtureTest::SetUp() {
  if (GetParam().name.empty()) HETRT_MISSING("fixtures", GetParam().none_reason);
}

std::vector<uint8_t> OpenClTwiceIntoModule() {
  ByteWriter w;
  w.WriteString("cl");
  w.WriteU64(1);
  w.WriteString("twice_into");
  w.WriteString("");
  w.WriteU64(2);
  for (int i = 0; i < 2; ++i) {
    w.WritePod<uint8_t>(kDLOpaqueHandle);
    w.WritePod<uint8_t>(64);
    w.WritePod<uint16_t>(1);
  }
  w.WriteU64(1);
  w.WriteString("threadIdx.x");
  w.WriteString(
      "__kernel void twice_into(__global float* out, __global const float* in) {\n"
      "  out[get_local_id(0)] = 2.0f * in[get_local_id(0)];\n}\n");
  return w.Take();
}

Result<std::string> OpenClTwiceIntoSystemLibDevc(const std::string& prefix) {
  // The kernel's bytes pass through as they are: no plugin is needed to pack them.
  auto host = std::make_shared<PendingHostLibrary>();
  host->Import(std::make_shared<UnloadedModule>("opencl", OpenClTwiceIntoModule(), OkStatus()));
  HETRT_ASSIGN_OR_RETURN(auto blob, SerializeModuleTree(*host));
  return EmitDevcC(blob, {.system_lib = true, .symbol_prefix = prefix});
}

std::string TwiceThenAddGraph(const std::string& twice_function, const std::string& add_function) {
  return R"({"nodes": [
    {"op": "null", "name": "x", "inputs": []},
    {"op": "tvm_op", "name": "twice", "inputs": [[0, 0, 0]],
     "attrs": {"func_name": ")" +
         twice_function + R"(", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0"}},
    {"op": "tvm_op", "name": "__copy", "inputs": [[1, 0, 0]],
     "attrs": {"func_name": "__copy", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0"}},
    {"op": "null", "name": "w", "inputs": []},
    {"op": "tvm_op", "name": "add", "inputs": [[2, 0, 0], [3, 0, 0]],
     "attrs": {"func_name": ")" +
         add_function + R"(", "num_inputs": "2", "num_outputs": "1", "flatten_data": "0"}}],
    "arg_nodes": [0, 3], "heads": [[4, 0, 0]], "node_row_ptr": [0, 1, 2, 3, 4, 5],
    "attrs": {"dltype": ["list_str", ["float32", "float32", "float32", "float32", "float32"]],
              "shape": ["list_shape", [[1, 6], [1, 6], [1, 6], [1, 6], [1, 6]]],
              "storage_id": ["list_int", [0, 1, 2, 3, 4]], "device_index": ["list_int", [4, 4, 1, 1, 1]]}})";
}

::testing::AssertionResult TensorsClose(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure() << "shape " << ShapeToString(actual.shape()) << " vs "
                                         << ShapeToString(expected.shape());
  if (actual.dtype() != expected.dtype())
    return ::testing::AssertionFailure() << "dtype " << DataTypeToString(actual.dtype()) << " vs "
                                         << DataTypeToString(expected.dtype());
  if (actual.dtype() != DLDataType{kDLFloat, 32, 1}) {
    if (std::memcmp(actual.data(), expected.data(), actual.nbytes()) != 0)
      return ::testing::AssertionFailure() << "bytes differ";
    return ::testing::AssertionSuccess();
  }
  const float* a = actual.data_as<float>();
  const float* e = expected.data_as<float>();
  for (int64_t i = 0; i < actual.num_elements(); ++i) {
    const double diff = std::fabs(static_cast<double>(a[i]) - e[i]);
    if (!(diff <= atol + rtol * std::fabs(static_cast<double>(e[i]))))
      return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << " vs expected " << e[i] << " (|diff| "
                                           << diff << " > atol " << atol << " + rtol " << rtol << " * |expected|)";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace hetrt::testing
