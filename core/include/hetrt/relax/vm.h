// The Relax virtual machine: runs the bytecode of a TVM Relax executable
// (`relax.build(...).export_library`) over registers, on the devices given
// at creation, in the order TVM's vm_initialization takes them (their index
// is what alloc_storage names; the last is the host, a CPU is appended when
// the list does not end with one). Every function, kernel and builtin is
// resolved when the VM is created: a missing one is an error then, naming it;
// a call does no name lookups.
//
// Thread contract: thread-compatible. One thread at a time calls a VM; give
// each thread its own (VMs over one module share its constants' host copies).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hetrt/base/tensor.h"
#include "hetrt/formats/relax_executable.h"
#include "hetrt/module/module.h"
#include "hetrt/relax/profile.h"
#include "hetrt/relax/value.h"

namespace hetrt {

class PluginRegistry;
struct RelaxInterpreter;

// The root of a Relax export: type_key "relax.Executable" (TVM v0.14-v0.19)
// or "relax.VMExecutable" (v0.20), kept as read so that re-export writes the
// same. Its first import is the host library with the kernels (and their
// device modules below it).
class RelaxExecutableModule final : public Module {
 public:
  static constexpr const char* kTypeKey = "relax.Executable";
  static constexpr const char* kTypeKeyV020 = "relax.VMExecutable";
  RelaxExecutableModule(std::shared_ptr<const RelaxExecutable> executable, std::vector<uint8_t> image,
                        const char* type_key = kTypeKey)
      : Module(type_key), executable_(std::move(executable)), image_(std::move(image)) {}
  static Result<std::shared_ptr<Module>> Load(ByteReader& reader, const char* type_key, LibraryAbi abi);
  Result<const PackedFunc*> GetOwnFunction(std::string_view) override {
    return static_cast<const PackedFunc*>(nullptr);
  }
  std::vector<std::string> ListFunctionNames() const override;
  std::string Describe() const override;
  Result<std::vector<uint8_t>> SaveToBinary() const override;
  const std::shared_ptr<const RelaxExecutable>& executable() const { return executable_; }

 private:
  std::shared_ptr<const RelaxExecutable> executable_;
  std::vector<uint8_t> image_;  // as read, so re-export is byte-identical
};

class RelaxVirtualMachine {
 public:
  enum class AllocatorKind { kNaive = 1, kPooled = 2 };
  struct Options {
    std::vector<DLDevice> devices = {{kDLCPU, 0}};
    AllocatorKind allocator = AllocatorKind::kPooled;
    PluginRegistry* plugins = nullptr;  // nullptr: PluginRegistry::Global()
  };

  // `root` is a RelaxExecutableModule (whose imports hold the kernels).
  static Result<std::unique_ptr<RelaxVirtualMachine>> Create(std::shared_ptr<Module> root, Options options);
  ~RelaxVirtualMachine();
  RelaxVirtualMachine(const RelaxVirtualMachine&) = delete;
  RelaxVirtualMachine& operator=(const RelaxVirtualMachine&) = delete;

  const RelaxExecutable& executable() const;
  // The devices in index order (the host last).
  const std::vector<DLDevice>& devices() const;
  // Index of a VM function (kVmFunc) of that name, or NOT_FOUND listing them.
  Result<uint32_t> FindFunction(std::string_view name) const;
  std::vector<std::string> FunctionNames() const;
  const std::vector<std::string>& ParamNames(uint32_t function) const;

  // Calls a function with its arguments as they are (TVM's vm["name"](...)):
  // tensors must already be on the devices the function uses them on.
  // `may_replay` false: interpreted even when replay is enabled (a call
  // whose shapes will not come again, which a recording would only pin).
  Result<RelaxValue> Invoke(uint32_t function, std::span<const RelaxValue> args, bool may_replay = true);
  Result<RelaxValue> Invoke(std::string_view name, std::span<const RelaxValue> args);
  // Replays calls of `function` instead of interpreting them once their
  // signature repeats (argument kinds, tensor shapes, dtypes and devices, the
  // same other values): the memory the recorded call allocated stays with
  // the recording, kernels get their recorded arguments with the tensor
  // arguments rebound, stateful builtins are called again, shape and view
  // builtins are skipped. A call whose earlier result is still held, or what
  // the recording cannot vouch for, is interpreted (ReplayStats says so).
  // At most `max_signatures` recordings are kept. An error for a function
  // that branches or calls another VM function.
  Status EnableReplay(uint32_t function, size_t max_signatures);
  RelaxReplayStats ReplayStats(uint32_t function) const;
  // A builtin by its TVM name ("vm.builtin.kv_state_add_sequence"), as TVM's
  // global functions are called from outside the bytecode.
  Result<RelaxValue> CallBuiltin(std::string_view name, std::span<const RelaxValue> args);
  // Invoke, timing every Call instruction (device kernels are waited for, so a
  // profiled call serializes the devices).
  Result<RelaxValue> InvokeProfiled(uint32_t function, std::span<const RelaxValue> args, RelaxProfile* profile);
  // Called before every kernel call (nullptr: none). For benchmarks' floors.
  void SetKernelObserver(RelaxKernelObserver observer);
  // Waits for the devices' queued work (results may still be in flight after Invoke).
  Status Synchronize();
  // Copies a tensor to one of the VM's devices (no copy when it is there already).
  Result<Tensor> ToDevice(const Tensor& tensor, DLDevice device);
  // Releases the memory the pooled allocators keep (vm.builtin.memory_manager.clear).
  void ReleasePools();
  // How many times the VM's allocators took memory from the plugins (pooled:
  // only when no kept block fits; the steady state adds none).
  uint64_t PluginAllocations() const;
  const RelaxCallStats& last_call_stats() const;
  PluginRegistry& plugins() const;

 private:
  explicit RelaxVirtualMachine(std::unique_ptr<RelaxInterpreter> impl);
  std::unique_ptr<RelaxInterpreter> impl_;
};

}  // namespace hetrt
