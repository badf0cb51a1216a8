// The Relax executable's blob entry: one length-prefixed executable image,
// under "relax.Executable" (TVM v0.14-v0.19) or "relax.VMExecutable" (v0.20,
// the same image; v0.22+ in a tvm-ffi blob, with other constant tags and from
// v0.23 the V2 image; docs/tvm-ffi.md (a), (f)).
#include "hetrt/base/dtype.h"
#include "hetrt/module/module_loader.h"
#include "hetrt/relax/vm.h"

namespace hetrt {
namespace {

[[maybe_unused]] const bool g_relax_loader_registered = [] {
  using M = RelaxExecutableModule;
  RegisterCoreLoader(M::kTypeKey, [](ByteReader& r) { return M::Load(r, M::kTypeKey, LibraryAbi::kPackedFunc); });
  RegisterCoreLoader(M::kTypeKeyV020,
                     [](ByteReader& r) { return M::Load(r, M::kTypeKeyV020, LibraryAbi::kPackedFunc); });
  // TVM v0.22+: the same key in a tvm-ffi blob, constants tagged by type index.
  RegisterCoreLoader(
      M::kTypeKeyV020, [](ByteReader& r) { return M::Load(r, M::kTypeKeyV020, LibraryAbi::kTvmFfi); },
      LibraryAbi::kTvmFfi);
  return true;
}();

}  // namespace

Result<std::shared_ptr<Module>> RelaxExecutableModule::Load(ByteReader& reader, const char* type_key, LibraryAbi abi) {
  uint64_t length = 0;
  HETRT_RETURN_IF_ERROR(reader.ReadU64(&length, std::string(type_key) + " length"));
  std::span<const uint8_t> image;
  HETRT_RETURN_IF_ERROR(reader.ReadBytes(length, &image, std::string(type_key) + " image"));
  auto exe = ParseRelaxExecutable(image, reader.source() + ": " + type_key, abi);
  if (!exe.ok()) return exe.status();
  return std::shared_ptr<Module>(
      std::make_shared<RelaxExecutableModule>(std::make_shared<const RelaxExecutable>(std::move(exe).value()),
                                              std::vector<uint8_t>(image.begin(), image.end()), type_key));
}

std::vector<std::string> RelaxExecutableModule::ListFunctionNames() const {
  std::vector<std::string> names;
  for (const RelaxFunction& f : executable_->functions)
    if (f.kind == RelaxFunction::Kind::kVmFunc) names.push_back(f.name);
  return names;
}

std::string RelaxExecutableModule::Describe() const {
  size_t vm_functions = 0;
  uint64_t constant_bytes = 0;
  for (const RelaxFunction& f : executable_->functions) vm_functions += f.kind == RelaxFunction::Kind::kVmFunc;
  for (const RelaxConstant& c : executable_->constants)
    if (c.type == RelaxConstant::Type::kTensor) constant_bytes += c.tensor.nbytes();
  return "Relax VM executable " + executable_->version + ": " + std::to_string(vm_functions) + " VM function(s), " +
         std::to_string(executable_->functions.size() - vm_functions) + " packed, " +
         std::to_string(executable_->constants.size()) + " constants (" + std::to_string(constant_bytes) +
         " bytes of tensors), " + std::to_string(executable_->instructions.size()) + " instructions";
}

Result<std::vector<uint8_t>> RelaxExecutableModule::SaveToBinary() const {
  ByteWriter w;
  w.WriteU64(image_.size());
  w.WriteBytes(image_);
  return w.Take();
}

}  // namespace hetrt
