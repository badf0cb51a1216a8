#include "tvm_ffi_model_support.h"

#include <cstring>
#include <fstream>

#include "hetrt/module_export.h"
#include "relax_test_support.h"

namespace hetrt::testing {

Tensor FfiModelBias() {
  Tensor bias = Tensor::EmptyHost({4}, DLDataType{kDLFloat, 32, 1}).value();
  const float values[] = {0.5f, 1.0f, 1.5f, 2.0f};
  std::memcpy(bias.data(), values, sizeof(values));
  return bias;
}

RelaxExecutable ServedFfiModelExecutable() {
  RelaxProgram p;
  const auto [check, match, storage, tensor] =
      p.Builtins("check_tensor_info", "match_shape", "alloc_storage", "alloc_tensor");
  const uint32_t add_bias = p.Packed("add_bias");
  RelaxConstant bias;
  bias.type = RelaxConstant::Type::kTensor;
  bias.tensor = FfiModelBias();
  const uint32_t bias_index = p.AddConstant(bias);
  const uint32_t f32 = p.DType({kDLFloat, 32, 1});
  const uint32_t global = p.String("global");
  const uint32_t err = p.String("ErrorContext(fn=main, param=x)");
  p.Function("main", {"x"}, 3);
  p.Call(check, kRelaxVoidRegister, {p.Reg(0), p.Imm(2), p.Const(f32), p.Const(err)});
  p.Call(match, kRelaxVoidRegister,
         {p.Reg(0), p.Reg(kRelaxVoidRegister), p.Imm(2), p.Imm(0), p.Imm(2), p.Imm(0), p.Imm(4), p.Const(err)});
  p.Call(storage, 1, {p.Reg(kRelaxVmRegister), p.Const(p.Shape({32})), p.Imm(0), p.Const(f32), p.Const(global)});
  p.Call(tensor, 2, {p.Reg(1), p.Imm(0), p.Const(p.Shape({2, 4})), p.Const(f32)});
  p.Call(add_bias, kRelaxVoidRegister, {p.Reg(0), p.Const(bias_index), p.Reg(2)});
  p.Ret(2);
  p.End();
  RelaxExecutable exe = p.executable();
  exe.abi = LibraryAbi::kTvmFfi;
  exe.v2 = true;
  exe.memory_scopes = {{bias_index, "global"}};
  return exe;
}

RelaxExecutable DeviceAddExecutable(const std::string& name) {
  RelaxProgram p;
  const uint32_t add = p.Packed(name);
  p.Function("main", {"a", "b", "c"}, 3);
  p.Call(add, kRelaxVoidRegister, {p.Reg(0), p.Reg(1), p.Reg(2)});
  p.Ret(2);
  p.End();
  RelaxExecutable exe = p.executable();
  exe.abi = LibraryAbi::kTvmFfi;
  exe.v2 = true;
  return exe;
}

Status ExportFfiModel(const RelaxExecutable& exe, const std::string& path,
                      std::vector<std::shared_ptr<Module>> device_modules) {
  HETRT_ASSIGN_OR_RETURN(std::vector<uint8_t> image, WriteRelaxExecutable(exe));
  HETRT_ASSIGN_OR_RETURN(RelaxExecutable parsed, ParseRelaxExecutable(image, path, LibraryAbi::kTvmFfi));
  auto root = std::make_shared<RelaxExecutableModule>(std::make_shared<const RelaxExecutable>(std::move(parsed)),
                                                      std::move(image), RelaxExecutableModule::kTypeKeyV020);
  auto host = std::make_shared<PendingHostLibrary>();
  for (auto& device : device_modules) host->Import(std::move(device));
  root->Import(host);
  HETRT_ASSIGN_OR_RETURN(std::vector<uint8_t> blob, SerializeModuleTree(*root, LibraryAbi::kTvmFfi));
  const std::string devc = path + ".devc.c";
  std::ofstream(devc) << EmitDevcC(blob, {.abi = LibraryAbi::kTvmFfi});
  LinkOptions link;
  link.flags = {"-I" HETRT_FFI_C_ABI_INCLUDE_DIR, "-I" HETRT_DLPACK_INCLUDE_DIR};
  Status linked = LinkSharedLibrary({HETRT_FFI_MODEL_HOST_C, devc}, path, link);
  std::remove(devc.c_str());
  return linked;
}

}  // namespace hetrt::testing
