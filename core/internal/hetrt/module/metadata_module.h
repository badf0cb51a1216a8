// type_key "metadata_module": TVM's (here empty) metadata module at the root
// of some trees; its functions come from its imports.
#pragma once

#include <memory>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/module/module.h"

namespace hetrt {

// Serializes to zero bytes.
// Thread contract: thread-safe, as Module (immutable once loaded).
class MetadataModule final : public Module {
 public:
  MetadataModule() : Module("metadata_module") {}
  static Result<std::shared_ptr<Module>> Load(ByteReader&) {
    return std::shared_ptr<Module>(std::make_shared<MetadataModule>());
  }
  Result<std::vector<uint8_t>> SaveToBinary() const override { return std::vector<uint8_t>{}; }
  Result<const PackedFunc*> GetOwnFunction(std::string_view) override {
    return static_cast<const PackedFunc*>(nullptr);
  }
};

}  // namespace hetrt
