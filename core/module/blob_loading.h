// Pieces the two blob layouts share (module_loader.cc: TVM's packed-function
// era's __tvm_dev_mblob; ffi_blob_loader.cc: tvm-ffi's __tvm_ffi__library_bin).
// Private to core/module.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hetrt/sdk/byte_stream.h"
#include "hetrt/base/library_abi.h"
#include "hetrt/module/module.h"

namespace hetrt {

inline constexpr const char* kLibKey = "_lib";
// Real trees have a handful of modules; the cap bounds lookups and recursion.
inline constexpr uint64_t kMaxModules = 4096;

// CSR rows: the children of module i are child_indices[row_ptr[i], row_ptr[i+1]).
struct ImportTree {
  std::vector<uint64_t> row_ptr;
  std::vector<uint64_t> child_indices;
};

// A u64 count (bounded by the bytes left) and that many u64s.
Status ReadU64Vector(ByteReader& r, std::vector<uint64_t>* out, const char* field);
// Checks the CSR arrays against n modules and rejects duplicates and cycles.
Status ValidateImportTree(const ImportTree& tree, size_t n, const std::string& source);
// The core's loader of a type_key in an ABI's blobs (module_loader.h's
// BlobLoader, spelled out: this header is below that one); NULL when none.
const std::function<Result<std::shared_ptr<Module>>(ByteReader&)>* FindCoreLoader(const std::string& type_key,
                                                                                   LibraryAbi abi);

}  // namespace hetrt
