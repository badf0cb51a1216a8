// The Vulkan instance: discovery of physical devices (a logical device with
// its compute queues, memory types, pipeline cache and default stream each),
// device attributes, the current device, the device table and teardown.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "vulkan_device.h"

namespace hetrt::vulkan {

std::string VersionString(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

// ---- Device table ----

hetrt_error_t* DeviceEntries::DeviceAttribute(hetrt_device_attribute_args_t* args) {
  Device* d = nullptr;
  if (hetrt_error_t* e = args->self->devices.Find(args->device, &d)) return e;
  switch (args->attribute) {
    case HETRT_VULKAN_ATTR_VALIDATION_MESSAGES:
      args->value = static_cast<int64_t>(args->self->validation_messages.load());
      return nullptr;
    case HETRT_VULKAN_ATTR_VALIDATION_ENABLED: args->value = args->self->validation; return nullptr;
    case HETRT_VULKAN_ATTR_SUBMISSIONS: args->value = static_cast<int64_t>(d->submissions.load()); return nullptr;
    default: return d->facts.Answer(args, "vulkan:" + std::to_string(args->device.device_id));
  }
}

void SavePipelineCache(Device* d) {
  if (d->cache_file.empty()) return;
  std::lock_guard<std::mutex> lock(d->cache_mutex);
  size_t size = 0;
  if (vkGetPipelineCacheData(d->handle, d->pipeline_cache, &size, nullptr) != VK_SUCCESS || size == 0) return;
  std::vector<char> data(size);
  if (vkGetPipelineCacheData(d->handle, d->pipeline_cache, &size, data.data()) != VK_SUCCESS) return;
  // Written under a name of its own, then renamed: a concurrent reader sees
  // the old file or the whole new one. A failed write leaves no cache entry.
  const std::string tmp = d->cache_file + "." + std::to_string(getpid()) + "." +
                          std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())) + ".tmp";
  std::ofstream out(tmp, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(size));
  out.close();
  if (out.good())
    std::rename(tmp.c_str(), d->cache_file.c_str());
  else
    std::remove(tmp.c_str());
}

StreamCore* CurrentStream(const hetrt_instance* inst, Device* device) {
  const hetrt_stream* current = Current::Get(inst->serial, device->id);
  return current ? current->core.get() : device->default_stream.get();
}

const hetrt_device_api_t kDeviceApi = sdk::DeviceTable<DeviceEntries, kLabel>();

}  // namespace hetrt::vulkan

// ---- Instance: discovery and teardown ----

namespace {

using hetrt::vulkan::Device;
using hetrt::vulkan::VkStruct;

bool HasExtension(const std::vector<VkExtensionProperties>& all, const char* name) {
  for (const auto& e : all)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

// Counts and logs what the validation layer reports; the loader's own notes
// (general messages, e.g. a driver file it could not open) are only logged.
VKAPI_ATTR VkBool32 VKAPI_CALL OnValidationMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT types,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
  auto* inst = static_cast<hetrt_instance*>(user);
  const std::string text = data && data->pMessage ? data->pMessage : "?";
  if (types & (VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT)) {
    inst->validation_messages.fetch_add(1);
    inst->Log(HETRT_LOG_ERROR, "Vulkan validation: " + text);
  } else {
    inst->Log(HETRT_LOG_WARNING, "Vulkan loader: " + text);
  }
  return VK_FALSE;
}

const char* DeviceTypeName(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

// The on-disk pipeline cache of a device: named after what makes its data
// valid (vendor, device, driver, pipelineCacheUUID); the header is checked too.
std::string CacheFile(const VkPhysicalDeviceProperties& p) {
  const char* dir = std::getenv("HETRT_VULKAN_CACHE_DIR");
  if (dir == nullptr || *dir == '\0') return "";
  char name[96];
  std::snprintf(name, sizeof name, "%08x-%08x-%08x-", p.vendorID, p.deviceID, p.driverVersion);
  std::string file = std::string(dir) + "/" + name;
  for (uint8_t b : p.pipelineCacheUUID) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", b);
    file += hex;
  }
  return file + ".vkpipelinecache";
}

std::vector<char> ReadCache(const std::string& file, const VkPhysicalDeviceProperties& p) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  std::vector<char> data((std::istreambuf_iterator<char>(in)), {});
  // VkPipelineCacheHeaderVersionOne: length, version 1, vendor, device, uuid.
  uint32_t header[4];
  if (data.size() < 32) return {};
  std::memcpy(header, data.data(), sizeof header);
  if (header[0] < 32 || header[1] != VK_PIPELINE_CACHE_HEADER_VERSION_ONE || header[2] != p.vendorID ||
      header[3] != p.deviceID || std::memcmp(data.data() + 16, p.pipelineCacheUUID, VK_UUID_SIZE) != 0)
    return {};
  return data;
}

}  // namespace

hetrt_error_t* hetrt_instance::CreateInstance() {
  using hetrt::vulkan::MakeError;
  uint32_t loader_version = VK_API_VERSION_1_0;
  vkEnumerateInstanceVersion(&loader_version);
  if (loader_version < VK_API_VERSION_1_2)
    return MakeError(HETRT_STATUS_UNAVAILABLE, "the Vulkan loader is version " +
                                                   hetrt::vulkan::VersionString(loader_version) +
                                                   "; hetrt needs 1.2 (timeline semaphores)");
  uint32_t n = 0;
  vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> extensions(n);
  vkEnumerateInstanceExtensionProperties(nullptr, &n, extensions.data());
  std::vector<const char*> enabled, layers;
  auto info = VkStruct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  if (HasExtension(extensions, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    enabled.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    info.flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }
  // HETRT_VULKAN_VALIDATION=1: the Khronos validation layer, its messages
  // counted (device attribute HETRT_VULKAN_ATTR_VALIDATION_MESSAGES) and logged.
  auto messenger =
      VkStruct<VkDebugUtilsMessengerCreateInfoEXT>(VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
  messenger.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger.pfnUserCallback = OnValidationMessage;
  messenger.pUserData = this;
  const VkValidationFeatureEnableEXT sync_validation = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  auto features = VkStruct<VkValidationFeaturesEXT>(VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT);
  const char* wanted = std::getenv("HETRT_VULKAN_VALIDATION");
  if (wanted != nullptr && *wanted != '\0' && std::strcmp(wanted, "0") != 0) {
    vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> available(n);
    vkEnumerateInstanceLayerProperties(&n, available.data());
    bool found = false;
    for (const auto& l : available) found |= std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0;
    if (!found)
      return MakeError(HETRT_STATUS_UNAVAILABLE,
                       "HETRT_VULKAN_VALIDATION is set but VK_LAYER_KHRONOS_validation is not "
                       "installed (Debian: vulkan-validationlayers)");
    layers.push_back("VK_LAYER_KHRONOS_validation");
    enabled.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    info.pNext = &messenger;  // also reports on instance creation and destruction
    validation = true;
    // "sync": synchronization validation too (hazards between commands).
    if (std::strcmp(wanted, "sync") == 0) {
      features.enabledValidationFeatureCount = 1;
      features.pEnabledValidationFeatures = &sync_validation;
      features.pNext = &messenger;
      info.pNext = &features;
    }
  }
  auto app = VkStruct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "hetrt";
  app.pEngineName = "hetrt";
  app.apiVersion = std::min<uint32_t>(loader_version, VK_API_VERSION_1_3);
  info.pApplicationInfo = &app;
  info.enabledExtensionCount = static_cast<uint32_t>(enabled.size());
  info.ppEnabledExtensionNames = enabled.data();
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  VkResult r = vkCreateInstance(&info, nullptr, &vk_);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    return MakeError(HETRT_STATUS_UNAVAILABLE,
                     "no Vulkan driver: the loader found no ICD (json files in "
                     "/usr/share/vulkan/icd.d or $VK_DRIVER_FILES; Debian: mesa-vulkan-drivers)");
  if (r != VK_SUCCESS) return hetrt::vulkan::VkError("vkCreateInstance", r);
  if (validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(vk_, "vkCreateDebugUtilsMessengerEXT"));
    if (create == nullptr || (r = create(vk_, &messenger, nullptr, &messenger_)) != VK_SUCCESS)
      return MakeError(HETRT_STATUS_UNAVAILABLE, "cannot install the Vulkan validation messenger");
  }
  return nullptr;
}

void hetrt_instance::Discover(hetrt::sdk::DeviceList<hetrt::vulkan::Device>& list) {
  // The wait budget is measured now, before any work runs (hetrt/sdk/wake_up.h).
  if (wait_poll_us.load(std::memory_order_relaxed) == hetrt::sdk::PollBudget::kAuto) poll_budget.Measure();
  using namespace hetrt::vulkan;
  if (hetrt_error_t* e = CreateInstance()) {
    list.SetUnavailable(e->message);
    hetrt::sdk::DiscardError(e);
    return;
  }
  uint32_t n = 0;
  VkResult r = vkEnumeratePhysicalDevices(vk_, &n, nullptr);
  if (r != VK_SUCCESS || n == 0) {
    list.SetUnavailable(r != VK_SUCCESS ? std::string("vkEnumeratePhysicalDevices failed: ") + VkResultName(r)
                                        : "the Vulkan loader found no physical device (drivers: "
                                          "/usr/share/vulkan/icd.d or $VK_DRIVER_FILES)");
    return;
  }
  std::vector<VkPhysicalDevice> physicals(n);
  vkEnumeratePhysicalDevices(vk_, &n, physicals.data());
  std::string skipped;  // why devices were left out: the reason when none is left
  auto skip = [&skipped](const std::string& why) { skipped += (skipped.empty() ? "" : "; ") + why; };
  for (VkPhysicalDevice physical : physicals) {
    auto d = std::make_unique<Device>();
    d->inst = this;
    d->physical = physical;
    auto driver = VkStruct<VkPhysicalDeviceDriverProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
    auto push = VkStruct<VkPhysicalDevicePushDescriptorPropertiesKHR>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PUSH_DESCRIPTOR_PROPERTIES_KHR);
    auto v11 = VkStruct<VkPhysicalDeviceVulkan11Properties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES);
    auto props2 = VkStruct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    props2.pNext = &driver;
    driver.pNext = &push;
    push.pNext = &v11;
    vkGetPhysicalDeviceProperties2(physical, &props2);
    d->props = props2.properties;
    d->name = d->props.deviceName;
    if (d->props.apiVersion < VK_API_VERSION_1_2) {
      skip(d->name + ": Vulkan " + VersionString(d->props.apiVersion) + " (hetrt needs 1.2 for timeline semaphores)");
      continue;
    }
    d->max_spirv = d->props.apiVersion >= VK_API_VERSION_1_3 ? 0x10600 : 0x10500;
    hetrt::sdk::DeviceFacts& facts = d->facts;
    facts.compute_version = VersionString(d->props.apiVersion);
    facts.driver_version = driver.driverInfo[0] ? std::string(driver.driverName) + " " + driver.driverInfo
                                                : std::to_string(d->props.driverVersion);
    facts.name = d->name + " (" + DeviceTypeName(d->props.deviceType) + "), " + facts.driver_version + ", Vulkan " +
                 facts.compute_version;
    facts.max_threads_per_block = d->props.limits.maxComputeWorkGroupInvocations;
    facts.max_shared_memory_per_block = d->props.limits.maxComputeSharedMemorySize;
    facts.warp_size = v11.subgroupSize;
    facts.max_alignment = 4096;
    uint32_t count = 0;
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr);
    std::vector<VkExtensionProperties> extensions(count);
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, extensions.data());
    // Features TVM-made shaders may use, enabled where supported.
    auto f12 = VkStruct<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
    auto f11 = VkStruct<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
    auto supported = VkStruct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
    supported.pNext = &f11;
    f11.pNext = &f12;
    vkGetPhysicalDeviceFeatures2(physical, &supported);
    if (!f12.timelineSemaphore) {
      skip(d->name + ": no timeline semaphores");
      continue;
    }
    auto e12 = VkStruct<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
    auto e11 = VkStruct<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
    auto features = VkStruct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
    features.pNext = &e11;
    e11.pNext = &e12;
    features.features.shaderInt64 = supported.features.shaderInt64;
    features.features.shaderInt16 = supported.features.shaderInt16;
    features.features.shaderFloat64 = supported.features.shaderFloat64;
    e11.storageBuffer16BitAccess = f11.storageBuffer16BitAccess;
    e11.uniformAndStorageBuffer16BitAccess = f11.uniformAndStorageBuffer16BitAccess;
    e11.storagePushConstant16 = f11.storagePushConstant16;
    e11.variablePointersStorageBuffer = f11.variablePointersStorageBuffer;
    e11.variablePointers = f11.variablePointers;
    e12.timelineSemaphore = VK_TRUE;
    e12.shaderFloat16 = f12.shaderFloat16;
    e12.shaderInt8 = f12.shaderInt8;
    e12.storageBuffer8BitAccess = f12.storageBuffer8BitAccess;
    e12.uniformAndStorageBuffer8BitAccess = f12.uniformAndStorageBuffer8BitAccess;
    e12.storagePushConstant8 = f12.storagePushConstant8;
    e12.scalarBlockLayout = f12.scalarBlockLayout;
    e12.vulkanMemoryModel = f12.vulkanMemoryModel;
    e12.vulkanMemoryModelDeviceScope = f12.vulkanMemoryModelDeviceScope;
    // A compute queue family, preferring one that writes timestamps.
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, families.data());
    int family = -1;
    for (uint32_t i = 0; i < count; ++i) {
      if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
      if (family < 0 ||
          (families[i].timestampValidBits > 0 && families[static_cast<size_t>(family)].timestampValidBits == 0))
        family = static_cast<int>(i);
    }
    if (family < 0) {
      skip(d->name + ": no compute queue");
      continue;
    }
    d->family = static_cast<uint32_t>(family);
    const VkQueueFamilyProperties& qf = families[static_cast<size_t>(family)];
    d->num_queues = qf.queueCount > 1 ? 2 : 1;
    facts.copy_streams = d->num_queues > 1;
    d->timestamp_mask = qf.timestampValidBits == 0    ? 0
                        : qf.timestampValidBits >= 64 ? UINT64_MAX
                                                      : (uint64_t{1} << qf.timestampValidBits) - 1;
    d->timestamp_period = d->props.limits.timestampPeriod;
    const float priorities[2] = {1.f, 1.f};
    auto queue = VkStruct<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    queue.queueFamilyIndex = d->family;
    queue.queueCount = static_cast<uint32_t>(d->num_queues);
    queue.pQueuePriorities = priorities;
    std::vector<const char*> device_extensions;
    const bool has_push = HasExtension(extensions, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    const bool has_calibrated = HasExtension(extensions, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME);
    if (has_push) device_extensions.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    if (has_calibrated) device_extensions.push_back(VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME);
    if (HasExtension(extensions, "VK_KHR_portability_subset")) device_extensions.push_back("VK_KHR_portability_subset");
    auto info = VkStruct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
    info.pNext = &features;
    info.queueCreateInfoCount = 1;
    info.pQueueCreateInfos = &queue;
    info.enabledExtensionCount = static_cast<uint32_t>(device_extensions.size());
    info.ppEnabledExtensionNames = device_extensions.data();
    r = vkCreateDevice(physical, &info, nullptr, &d->handle);
    if (r != VK_SUCCESS) {
      skip(d->name + ": vkCreateDevice failed: " + VkResultName(r));
      continue;
    }
    for (int q = 0; q < d->num_queues; ++q)
      vkGetDeviceQueue(d->handle, d->family, static_cast<uint32_t>(q), &d->queues[q].handle);
    if (has_push) {
      d->push_descriptor =
          reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(vkGetDeviceProcAddr(d->handle, "vkCmdPushDescriptorSetKHR"));
      if (d->push_descriptor) d->max_push_descriptors = push.maxPushDescriptors;
    }
    if (has_calibrated) {
      auto domains_of = reinterpret_cast<PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT>(
          vkGetInstanceProcAddr(vk_, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT"));
      uint32_t k = 0;
      if (domains_of && domains_of(physical, &k, nullptr) == VK_SUCCESS) {
        std::vector<VkTimeDomainEXT> domains(k);
        domains_of(physical, &k, domains.data());
        const bool both = std::count(domains.begin(), domains.end(), VK_TIME_DOMAIN_DEVICE_EXT) &&
                          std::count(domains.begin(), domains.end(), VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT);
        if (both)
          d->calibrated = reinterpret_cast<PFN_vkGetCalibratedTimestampsEXT>(
              vkGetDeviceProcAddr(d->handle, "vkGetCalibratedTimestampsEXT"));
      }
    }
    // Memory types: the memory types a storage buffer may use, best first.
    vkGetPhysicalDeviceMemoryProperties(physical, &d->memory);
    auto probe_info = VkStruct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
    probe_info.size = 256;
    probe_info.usage = kBufferUsage | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT;
    VkBuffer probe = VK_NULL_HANDLE;
    VkMemoryRequirements req{};
    if (vkCreateBuffer(d->handle, &probe_info, nullptr, &probe) == VK_SUCCESS) {
      vkGetBufferMemoryRequirements(d->handle, probe, &req);
      vkDestroyBuffer(d->handle, probe, nullptr);
    }
    d->device_type = FindMemoryType(*d, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (d->device_type < 0) d->device_type = FindMemoryType(*d, req.memoryTypeBits, 0);
    const VkMemoryPropertyFlags device_flags =
        d->device_type < 0 ? 0 : d->memory.memoryTypes[static_cast<size_t>(d->device_type)].propertyFlags;
    d->device_mappable = (device_flags & kMappable) == kMappable;
    d->visible_type = FindMemoryType(*d, req.memoryTypeBits, kMappable | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (d->visible_type < 0) d->visible_type = FindMemoryType(*d, req.memoryTypeBits, kMappable);
    d->pinned_type = FindMemoryType(*d, req.memoryTypeBits, kMappable | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    if (d->pinned_type < 0) d->pinned_type = FindMemoryType(*d, req.memoryTypeBits, kMappable);
    const bool shares_host = d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ||
                             d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
    facts.host_unified_memory = shares_host && d->device_mappable;
    facts.total_memory = 0;
    for (uint32_t h = 0; h < d->memory.memoryHeapCount; ++h)
      if (d->memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
        facts.total_memory += static_cast<int64_t>(d->memory.memoryHeaps[h].size);
    // Pipeline cache, seeded from disk when HETRT_VULKAN_CACHE_DIR holds one for this driver.
    d->cache_file = CacheFile(d->props);
    const std::vector<char> cached = d->cache_file.empty() ? std::vector<char>{} : ReadCache(d->cache_file, d->props);
    auto cache = VkStruct<VkPipelineCacheCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO);
    cache.initialDataSize = cached.size();
    cache.pInitialData = cached.empty() ? nullptr : cached.data();
    if (vkCreatePipelineCache(d->handle, &cache, nullptr, &d->pipeline_cache) != VK_SUCCESS) {
      cache.initialDataSize = 0;
      cache.pInitialData = nullptr;
      vkCreatePipelineCache(d->handle, &cache, nullptr, &d->pipeline_cache);
    }
    d->id = static_cast<int>(list.discovered().size());
    if (hetrt_error_t* e = NewStreamCore(d.get(), &d->queues[0], &d->default_stream)) {
      skip(d->name + ": " + e->message);
      hetrt::sdk::DiscardError(e);
      d->default_stream.reset();
      vkDestroyPipelineCache(d->handle, d->pipeline_cache, nullptr);
      vkDestroyDevice(d->handle, nullptr);
      continue;
    }
    list.Add(std::move(d));
  }
  if (list.discovered().empty()) list.SetUnavailable(skipped);
}

// Reclaims what the core left (pinned memory, workspace buffers, deferred
// frees), then the streams, devices and the instance.
hetrt_instance::~hetrt_instance() {
  using namespace hetrt::vulkan;
  for (auto& d : devices.discovered()) {
    vkDeviceWaitIdle(d->handle);
    d->default_stream.reset();
    for (auto& entry : d->deferred) {
      DestroyBuffer(d.get(), entry.buffer);
      delete entry.buffer;
    }
    d->workspace.DestroyAll([&d](void* data) {
      DestroyBuffer(d.get(), static_cast<Buffer*>(data));
      delete static_cast<Buffer*>(data);
    });
  }
  for (auto& [host_ptr, b] : pinned.TakeAll()) {
    DestroyBuffer(devices.at(b->device_id), b);
    delete b;
  }
  for (auto& d : devices.discovered()) {
    if (d->pipeline_cache) vkDestroyPipelineCache(d->handle, d->pipeline_cache, nullptr);
    vkDestroyDevice(d->handle, nullptr);
  }
  if (messenger_) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(vk_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(vk_, messenger_, nullptr);
  }
  if (vk_) vkDestroyInstance(vk_, nullptr);
}
