#include "hetrt/relax/tensor_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <new>

#include "hetrt/base/dtype.h"
#include "hetrt/base/json_document.h"
#include "hetrt/device/device.h"
#include "hetrt/sdk/byte_stream.h"

namespace hetrt {
namespace {

using nlohmann::json;

constexpr const char* kIndexFile = "tensor-cache.json";
// The name before TVM renamed NDArray to Tensor (MLC-LLM's older weights).
constexpr const char* kLegacyIndexFile = "ndarray-cache.json";
// Real caches list a few hundred records in well under 1 MiB.
constexpr uint64_t kMaxIndexBytes = uint64_t{64} << 20;

// One shard file mapped read-only; unmapped with the last index copy.
class ShardMapping {
 public:
  ShardMapping(const void* data, size_t size) : data_(data), size_(size) {}
  ShardMapping(const ShardMapping&) = delete;
  ShardMapping& operator=(const ShardMapping&) = delete;
  ~ShardMapping() {
    if (data_ != nullptr) ::munmap(const_cast<void*>(data_), size_);
  }
  std::span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(data_), size_}; }

 private:
  const void* data_;
  size_t size_;
};

// Opens `path` (a regular file, symbolic links followed) and maps it whole.
// `expected_size` is what tensor-cache.json says; `where` names that entry.
Result<std::shared_ptr<const ShardMapping>> MapShard(const std::string& path, uint64_t expected_size,
                                                     const std::string& where) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer (regular files ignore it).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFound("shard '" + path + "' (" + where + ") does not exist");
    return InvalidArgument("cannot open shard '" + path + "' (" + where + "): " + std::strerror(err));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return InvalidArgument("cannot stat shard '" + path + "' (" + where + "): " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return InvalidArgument("shard '" + path + "' (" + where + ") is not a regular file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size != expected_size)
    return DataLoss("shard '" + path + "' is " + std::to_string(size) + " bytes but " + where + " says nbytes " +
                    std::to_string(expected_size) + (size < expected_size ? " (truncated?)" : ""));
  if (size == 0) return std::make_shared<const ShardMapping>(nullptr, 0);
  if (size > std::numeric_limits<size_t>::max())
    return ResourceExhausted("shard '" + path + "' of " + std::to_string(size) + " bytes cannot be mapped");
  void* data = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
  if (data == MAP_FAILED)
    return ResourceExhausted("cannot map shard '" + path + "' (" + std::to_string(size) +
                             " bytes): " + std::strerror(errno));
  return std::make_shared<const ShardMapping>(data, static_cast<size_t>(size));
}

// INVALID_ARGUMENT unless `data_path` names a file below the directory by a
// relative path without ".." (checked lexically, before any file is touched).
Status CheckDataPath(const std::string& data_path, const std::string& where) {
  auto refuse = [&](const std::string& why) {
    return InvalidArgument(where + ": dataPath '" + data_path + "' refused: " + why);
  };
  if (data_path.empty()) return refuse("empty; expected a file name relative to the cache directory");
  if (data_path.find('\0') != std::string::npos) return refuse("contains a NUL character");
  if (data_path.front() == '/') return refuse("an absolute path; expected one relative to the cache directory");
  size_t begin = 0;
  while (begin <= data_path.size()) {
    size_t end = data_path.find('/', begin);
    if (end == std::string::npos) end = data_path.size();
    if (std::string_view(data_path).substr(begin, end - begin) == "..")
      return refuse("a '..' component leaves the cache directory");
    begin = end + 1;
  }
  if (data_path.back() == '/') return refuse("names a directory; expected a file");
  return OkStatus();
}

}  // namespace

struct TensorCacheIndex::State {
  std::string dir;
  std::string index_path;
  std::vector<TensorCacheRecord> records;
  std::unordered_map<std::string_view, size_t> by_name;  // views of records[i].name
  std::vector<std::string> shard_paths;
  std::vector<std::shared_ptr<const ShardMapping>> shards;  // one per shard entry (shared when paths repeat)
  uint64_t total_bytes = 0;
};

namespace {

// Reads tensor-cache.json into a State; every message starts with its path.
class IndexParser {
 public:
  IndexParser(std::string dir, std::string json_path) : json_path_(std::move(json_path)) {
    state_.dir = std::move(dir);
  }

  Result<TensorCacheIndex::State> Parse(std::string_view text) {
    HETRT_ASSIGN_OR_RETURN(
        const json root, ParseJsonDocument(text, json_path_, JsonLimits{.max_depth = 64, .max_bytes = kMaxIndexBytes}));
    if (root.is_discarded()) return DataLoss(json_path_ + ": not valid JSON");
    if (!root.is_object())
      return Error("", std::string("expected a JSON object at the top, found ") + root.type_name());
    HETRT_ASSIGN_OR_RETURN(const json* shards, Field(root, "records", json::value_t::array, ""));
    state_.shards.reserve(shards->size());
    state_.shard_paths.reserve(shards->size());
    for (size_t s = 0; s < shards->size(); ++s) HETRT_RETURN_IF_ERROR(ParseShard((*shards)[s], s));
    return std::move(state_);
  }

 private:
  Status Error(const std::string& where, const std::string& what) const {
    return DataLoss(json_path_ + (where.empty() ? "" : ": " + where) + ": " + what);
  }

  static const char* Expected(json::value_t type) {
    switch (type) {
      case json::value_t::array: return "an array";
      case json::value_t::object: return "an object";
      case json::value_t::string: return "a string";
      case json::value_t::number_unsigned: return "a non-negative integer";
      default: return "a value";
    }
  }
  static bool IsType(const json& v, json::value_t type) {
    // nlohmann stores a non-negative integer literal as number_unsigned.
    if (type == json::value_t::number_unsigned) return v.is_number_unsigned();
    return v.type() == type;
  }

  // The member `key` of `object`, which must exist and have `type`.
  Result<const json*> Field(const json& object, const char* key, json::value_t type, const std::string& where) const {
    auto it = object.find(key);
    if (it == object.end())
      return Error(where, std::string("missing field '") + key + "' (expected " + Expected(type) + ")");
    if (!IsType(*it, type)) {
      std::string found = it->type_name();
      if (it->is_number_integer())
        found = std::string(it->is_number_unsigned() ? "the integer " : "the negative integer ") + it->dump();
      if (it->is_number_float()) found = "the non-integer number " + it->dump();
      return Error(where, std::string("field '") + key + "': expected " + Expected(type) + ", found " + found);
    }
    return &*it;
  }

  Status ParseShard(const json& shard, size_t s) {
    const std::string where = "records[" + std::to_string(s) + "]";
    if (!shard.is_object()) return Error(where, std::string("expected a shard object, found ") + shard.type_name());
    HETRT_ASSIGN_OR_RETURN(const json* data_path_json, Field(shard, "dataPath", json::value_t::string, where));
    const std::string& data_path = data_path_json->get_ref<const std::string&>();
    const std::string named = where + " ('" + data_path + "')";
    HETRT_ASSIGN_OR_RETURN(const json* format, Field(shard, "format", json::value_t::string, named));
    if (format->get_ref<const std::string&>() != "raw-shard")
      return Unimplemented(json_path_ + ": " + named + ": field 'format': expected \"raw-shard\", found \"" +
                           format->get_ref<const std::string&>() + "\"");
    HETRT_ASSIGN_OR_RETURN(const json* nbytes, Field(shard, "nbytes", json::value_t::number_unsigned, named));
    HETRT_ASSIGN_OR_RETURN(const json* records, Field(shard, "records", json::value_t::array, named));
    HETRT_RETURN_IF_ERROR(CheckDataPath(data_path, json_path_ + ": " + where));

    const std::string path = state_.dir + "/" + data_path;
    const uint64_t shard_bytes = nbytes->get<uint64_t>();
    auto mapped = mapped_.find(data_path);
    if (mapped != mapped_.end()) {
      // The same file listed twice: one mapping, the same size required.
      const uint64_t size = mapped->second->bytes().size();
      if (size != shard_bytes)
        return DataLoss("shard '" + path + "' is " + std::to_string(size) + " bytes but " + json_path_ + " " + named +
                        " says nbytes " + std::to_string(shard_bytes));
      state_.shards.push_back(mapped->second);
    } else {
      HETRT_ASSIGN_OR_RETURN(auto mapping, MapShard(path, shard_bytes, json_path_ + " " + named));
      mapped_.emplace(data_path, mapping);
      state_.shards.push_back(std::move(mapping));
    }
    state_.shard_paths.push_back(path);
    for (size_t r = 0; r < records->size(); ++r) HETRT_RETURN_IF_ERROR(ParseRecord((*records)[r], s, r, path));
    return OkStatus();
  }

  Status ParseRecord(const json& entry, size_t s, size_t r, const std::string& shard_path) {
    std::string where = "records[" + std::to_string(s) + "].records[" + std::to_string(r) + "]";
    if (!entry.is_object()) return Error(where, std::string("expected a record object, found ") + entry.type_name());
    TensorCacheRecord record;
    record.shard = s;
    HETRT_ASSIGN_OR_RETURN(const json* name, Field(entry, "name", json::value_t::string, where));
    record.name = name->get<std::string>();
    where += " ('" + record.name + "')";

    HETRT_ASSIGN_OR_RETURN(const json* shape, Field(entry, "shape", json::value_t::array, where));
    record.shape.reserve(shape->size());
    for (size_t d = 0; d < shape->size(); ++d) {
      const json& dim = (*shape)[d];
      if (!dim.is_number_unsigned()) {
        const std::string found = dim.is_number_integer() ? "the negative dimension " + dim.dump()
                                  : dim.is_number()       ? "the number " + dim.dump()
                                                          : std::string(dim.type_name());
        return Error(where,
                     "field 'shape'[" + std::to_string(d) + "]: expected a non-negative integer, found " + found);
      }
      const uint64_t value = dim.get<uint64_t>();
      if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return Error(where,
                     "field 'shape'[" + std::to_string(d) + "]: " + std::to_string(value) + " does not fit int64");
      record.shape.push_back(static_cast<int64_t>(value));
    }
    auto elements = ShapeNumElements(record.shape);
    if (!elements.ok()) return Error(where, "field 'shape': " + elements.status().message());

    HETRT_ASSIGN_OR_RETURN(const json* dtype, Field(entry, "dtype", json::value_t::string, where));
    auto parsed = ParseDataType(dtype->get_ref<const std::string&>());
    if (!parsed.ok()) return parsed.status().WithContext(json_path_ + ": " + where + ": field 'dtype'");
    record.dtype = *parsed;

    HETRT_ASSIGN_OR_RETURN(const json* format, Field(entry, "format", json::value_t::string, where));
    const std::string& format_name = format->get_ref<const std::string&>();
    if (format_name == "raw") {
      record.format = TensorCacheRecord::Format::kRaw;
    } else if (format_name == "f32-to-bf16") {
      record.format = TensorCacheRecord::Format::kF32ToBf16;
    } else {
      return Unimplemented(json_path_ + ": " + where +
                           ": field 'format': expected \"raw\" or \"f32-to-bf16\", found \"" + format_name + "\"");
    }
    HETRT_ASSIGN_OR_RETURN(const json* nbytes, Field(entry, "nbytes", json::value_t::number_unsigned, where));
    record.nbytes = nbytes->get<uint64_t>();
    HETRT_ASSIGN_OR_RETURN(const json* offset, Field(entry, "byteOffset", json::value_t::number_unsigned, where));
    record.byte_offset = offset->get<uint64_t>();

    // What the shape and dtype take, decoded and stored.
    const uint64_t count = static_cast<uint64_t>(*elements);
    const uint64_t element_bytes = DataTypeBytes(record.dtype);
    if (element_bytes != 0 && count > std::numeric_limits<uint64_t>::max() / 2 / element_bytes)
      return Error(where,
                   "shape " + ShapeToString(record.shape) + " of " + DataTypeToString(record.dtype) + " is too large");
    const uint64_t decoded = count * element_bytes;
    const bool widens = record.widens_bf16();
    const uint64_t stored = widens ? count * 2 : decoded;
    if (record.nbytes != stored)
      return Error(where, "nbytes is " + std::to_string(record.nbytes) + " but shape " + ShapeToString(record.shape) +
                              " of " + DataTypeToString(record.dtype) +
                              (widens ? " stored as bfloat16 (format f32-to-bf16) takes " : " takes ") +
                              std::to_string(stored));
    const uint64_t shard_size = state_.shards[s]->bytes().size();
    if (record.byte_offset > shard_size || record.nbytes > shard_size - record.byte_offset)
      return Error(where, "byteOffset " + std::to_string(record.byte_offset) + " + nbytes " +
                              std::to_string(record.nbytes) + " runs past the end of shard '" + shard_path + "' (" +
                              std::to_string(shard_size) + " bytes)");
    if (decoded > std::numeric_limits<uint64_t>::max() - state_.total_bytes)
      return Error(where, "the decoded tensors' total overflows 64 bits");
    state_.total_bytes += decoded;

    if (auto [first, inserted] = first_use_.emplace(record.name, where); !inserted)
      return Error(where, "duplicate name; " + first->second + " has it already");
    state_.records.push_back(std::move(record));
    return OkStatus();
  }

  std::string json_path_;
  TensorCacheIndex::State state_;
  std::unordered_map<std::string, std::shared_ptr<const ShardMapping>> mapped_;  // by dataPath
  std::unordered_map<std::string, std::string> first_use_;                       // record name -> where it was first
};

}  // namespace

bool TensorCacheRecord::widens_bf16() const { return format == Format::kF32ToBf16 && dtype == kFloat32; }

uint64_t TensorCacheRecord::decoded_nbytes() const {
  uint64_t count = 1;
  for (int64_t d : shape) count *= static_cast<uint64_t>(d);
  return count * DataTypeBytes(dtype);
}

std::string TensorCacheIndex::IndexFileIn(const std::string& dir) {
  struct stat st;
  for (const char* name : {kIndexFile, kLegacyIndexFile})
    if (const std::string path = dir + "/" + name; ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return path;
  return "";
}

Result<TensorCacheIndex> TensorCacheIndex::Open(const std::string& dir) {
  std::string json_path = IndexFileIn(dir);
  if (json_path.empty()) json_path = dir + "/" + kIndexFile;  // its error names the file expected
  auto text = ReadFileBytes(json_path, kMaxIndexBytes);
  if (!text.ok()) return text.status().WithContext("tensor cache '" + dir + "'");
  IndexParser parser(dir, json_path);
  HETRT_ASSIGN_OR_RETURN(State state,
                         parser.Parse(std::string_view(reinterpret_cast<const char*>(text->data()), text->size())));
  auto shared = std::make_shared<State>(std::move(state));
  shared->index_path = json_path;
  shared->by_name.reserve(shared->records.size());
  for (size_t i = 0; i < shared->records.size(); ++i) shared->by_name.emplace(shared->records[i].name, i);
  return TensorCacheIndex(std::move(shared));
}

const std::vector<TensorCacheRecord>& TensorCacheIndex::records() const { return state_->records; }

const TensorCacheRecord* TensorCacheIndex::Find(std::string_view name) const {
  auto it = state_->by_name.find(name);
  return it == state_->by_name.end() ? nullptr : &state_->records[it->second];
}

std::span<const uint8_t> TensorCacheIndex::Bytes(const TensorCacheRecord& record) const {
  if (record.shard >= state_->shards.size()) return {};
  const std::span<const uint8_t> shard = state_->shards[record.shard]->bytes();
  if (record.byte_offset > shard.size() || record.nbytes > shard.size() - record.byte_offset) return {};
  return shard.subspan(static_cast<size_t>(record.byte_offset), static_cast<size_t>(record.nbytes));
}

const std::string& TensorCacheIndex::dir() const { return state_->dir; }
const std::string& TensorCacheIndex::index_path() const { return state_->index_path; }
uint64_t TensorCacheIndex::total_bytes() const { return state_->total_bytes; }
const std::vector<std::string>& TensorCacheIndex::shard_paths() const { return state_->shard_paths; }

namespace {

// The record's stored bytes, checked against what its shape and dtype need
// (a record built by hand or from another index is refused, never overrun).
Result<std::span<const uint8_t>> CheckedBytes(const TensorCacheIndex& index, const TensorCacheRecord& record) {
  auto refuse = [&](const std::string& why) {
    return InvalidArgument("tensor cache '" + index.dir() + "': record '" + record.name + "': " + why);
  };
  if (!ShapeNumElements(record.shape).ok()) return refuse("bad shape " + ShapeToString(record.shape));
  const std::span<const uint8_t> bytes = index.Bytes(record);
  if (bytes.size() != record.nbytes || (record.nbytes != 0 && bytes.empty()))
    return refuse("not a record of this cache (shard " + std::to_string(record.shard) + ", bytes " +
                  std::to_string(record.byte_offset) + ".." + std::to_string(record.byte_offset + record.nbytes) + ")");
  const uint64_t expected = record.widens_bf16() ? record.decoded_nbytes() / 2 : record.decoded_nbytes();
  if (expected != record.nbytes)
    return refuse("nbytes " + std::to_string(record.nbytes) + " disagrees with its shape and dtype (" +
                  std::to_string(expected) + ")");
  return bytes;
}

void Decode(const TensorCacheRecord& record, std::span<const uint8_t> bytes, void* destination) {
  if (bytes.empty()) return;
  if (!record.widens_bf16()) {
    std::memcpy(destination, bytes.data(), bytes.size());
    return;
  }
  const uint8_t* in = bytes.data();
  auto* out = static_cast<uint8_t*>(destination);
  const size_t count = bytes.size() / 2;
  for (size_t i = 0; i < count; ++i) {
    uint16_t half;
    std::memcpy(&half, in + 2 * i, sizeof half);
    const uint32_t bits = static_cast<uint32_t>(half) << 16;
    std::memcpy(out + 4 * i, &bits, sizeof bits);
  }
}

// Host memory for widened records bound for a device the host cannot address;
// grows to the largest such record and is reused.
class Staging {
 public:
  Result<uint8_t*> Get(uint64_t nbytes) {
    if (nbytes > size_) {
      if (nbytes > std::numeric_limits<size_t>::max())
        return ResourceExhausted("staging buffer of " + std::to_string(nbytes) + " bytes");
      data_.reset(new (std::nothrow) uint8_t[static_cast<size_t>(nbytes)]);
      size_ = data_ ? nbytes : 0;
      if (!data_) return ResourceExhausted("staging buffer of " + std::to_string(nbytes) + " bytes: out of memory");
    }
    return data_.get();
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  uint64_t size_ = 0;
};

// Drops the mapping's pages of a record once it is decoded: they are clean
// file pages (read-only, private), so the kernel reads them again if asked,
// and a model's load peaks near the size of its weights, not twice it.
void ReleasePages(std::span<const uint8_t> bytes) {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(bytes.data()) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(bytes.data()) + bytes.size()) / page * page;
  if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

Result<Tensor> Load(const TensorCacheIndex& index, const TensorCacheRecord& record, const Device& device,
                    Staging& staging) {
  if (!device.valid()) return InvalidArgument("tensor cache '" + index.dir() + "': no device to load onto");
  HETRT_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, CheckedBytes(index, record));
  const std::string context =
      "tensor cache '" + index.dir() + "': record '" + record.name + "' onto " + DeviceToString(device.device());
  Allocator& allocator = device.allocator();
  HETRT_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Empty(record.shape, record.dtype, allocator), context);
  if (record.decoded_nbytes() == 0) return tensor;
  void* host = device.device().device_type == kDLCPU ? tensor.data() : allocator.HostPointer(tensor.data());
  if (host != nullptr) {
    Decode(record, bytes, static_cast<uint8_t*>(host) + tensor.dl()->byte_offset);
    ReleasePages(bytes);
    return tensor;
  }
  const void* source = bytes.data();
  if (record.widens_bf16()) {
    HETRT_ASSIGN_OR_RETURN(uint8_t * buffer, staging.Get(record.decoded_nbytes()), context);
    Decode(record, bytes, buffer);
    source = buffer;
  }
  HETRT_RETURN_IF_ERROR(device.Copy(source, 0, DLDevice{kDLCPU, 0}, tensor.data(), tensor.dl()->byte_offset,
                                    tensor.device(), record.decoded_nbytes()),
                        context);
  ReleasePages(bytes);  // the copy blocked: the device has the bytes
  return tensor;
}

}  // namespace

Status DecodeRecordInto(const TensorCacheIndex& index, const TensorCacheRecord& record, void* host_destination) {
  HETRT_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, CheckedBytes(index, record));
  if (host_destination == nullptr && !bytes.empty())
    return InvalidArgument("tensor cache '" + index.dir() + "': record '" + record.name + "': NULL destination");
  Decode(record, bytes, host_destination);
  return OkStatus();
}

Result<Tensor> LoadRecord(const TensorCacheIndex& index, const TensorCacheRecord& record, const Device& device) {
  Staging staging;
  return Load(index, record, device, staging);
}

Result<std::vector<Tensor>> LoadAll(const TensorCacheIndex& index, const Device& device,
                                    const std::function<void(size_t done_bytes, size_t total_bytes)>& progress) {
  std::vector<Tensor> tensors;
  tensors.reserve(index.records().size());
  Staging staging;
  uint64_t done = 0;
  for (const TensorCacheRecord& record : index.records()) {
    HETRT_ASSIGN_OR_RETURN(Tensor tensor, Load(index, record, device, staging));
    tensors.push_back(std::move(tensor));
    done += record.decoded_nbytes();
    if (progress) progress(static_cast<size_t>(done), static_cast<size_t>(index.total_bytes()));
  }
  return tensors;
}

// ---- the named registry

TensorCacheRegistry& TensorCacheRegistry::Global() {
  static TensorCacheRegistry* registry = new TensorCacheRegistry();  // never destroyed: tensors may outlive main
  return *registry;
}

Status TensorCacheRegistry::Insert(std::string name, Tensor tensor, bool override) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = tensors_.find(name);
  if (it != tensors_.end()) {
    if (!override)
      return InvalidArgument("tensor cache: '" + name + "' is already present (update it with override=true)");
    it->second = std::move(tensor);
    return OkStatus();
  }
  tensors_.emplace(std::move(name), std::move(tensor));
  return OkStatus();
}

std::optional<Tensor> TensorCacheRegistry::Get(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = tensors_.find(name);
  if (it == tensors_.end()) return std::nullopt;
  return it->second;
}

bool TensorCacheRegistry::Remove(std::string_view name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = tensors_.find(name);
  if (it == tensors_.end()) return false;
  tensors_.erase(it);
  return true;
}

void TensorCacheRegistry::Clear() {
  std::unordered_map<std::string, Tensor, NameHash, std::equal_to<>> old;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    old.swap(tensors_);
  }
  // The tensors are released here, outside the lock (a free may call a plugin).
}

size_t TensorCacheRegistry::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return tensors_.size();
}

Result<std::vector<Tensor>> ParamArrayByName(const TensorCacheRegistry& registry, std::span<const std::string> names) {
  std::vector<Tensor> tensors;
  tensors.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    std::optional<Tensor> tensor = registry.Get(names[i]);
    if (!tensor)
      return NotFound("tensor cache: no tensor named '" + names[i] + "' (name " + std::to_string(i) + " of the " +
                      std::to_string(names.size()) + " asked for; " + std::to_string(registry.size()) +
                      " tensors cached)");
    tensors.push_back(std::move(*tensor));
  }
  return tensors;
}

Result<std::vector<Tensor>> ParamArrayByPrefix(const TensorCacheRegistry& registry, const std::string& prefix,
                                               int64_t n) {
  if (n < -1)
    return InvalidArgument("tensor cache: parameter count " + std::to_string(n) + " for prefix '" + prefix +
                           "'; expected -1 (up to the first missing) or >= 0");
  std::vector<Tensor> tensors;
  if (n > 0) tensors.reserve(static_cast<size_t>(std::min<int64_t>(n, 1 << 16)));
  for (int64_t i = 0; n == -1 || i < n; ++i) {
    const std::string name = prefix + "_" + std::to_string(i);
    std::optional<Tensor> tensor = registry.Get(name);
    if (!tensor) {
      if (n == -1) break;
      return NotFound("tensor cache: no tensor named '" + name + "' (asked for " + prefix + "_0.." + prefix + "_" +
                      std::to_string(n - 1) + "; " + std::to_string(registry.size()) + " tensors cached)");
    }
    tensors.push_back(std::move(*tensor));
  }
  return tensors;
}

}  // namespace hetrt
