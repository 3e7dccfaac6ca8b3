// VulkanDevice (VulkanDevice.h): opening a device and its queues, teardown,
// listVulkanDevices, and the small queries on the device as a whole.
#include "runtime/vulkan/VulkanDevice.h"

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "runtime/DiskCache.h"
#include "runtime/vulkan/VulkanDeviceImpl.h"

#ifndef EPH_VERSION
#define EPH_VERSION "0.1.0"
#endif

namespace eph::runtime {

VulkanDevice::Impl::~Impl() {
  if (wedged) {  // waiting could block for ever; leak what the GPU may still use
    for (auto& [h, b] : buffers) abandon(b);
    for (Batch& b : ring) {
      for (Buffer& k : b.keep) abandon(k);
      abandon(b.boundsRecord);
    }
    for (auto& [k, p] : pipelines) (void)p.release();
    if (pool) pool->abandon();
    return;
  }
  if (device) {
    (void)waitAll({});
    api().vkDeviceWaitIdle(device);
    buffers.clear();
    for (Batch& b : ring) {
      b.keep.clear();
      b.boundsRecord = Buffer();
    }
    pool.reset();  // after every buffer
    pipelines.clear();
    for (Batch& b : ring) {
      for (VkDescriptorPool p : b.pools) api().vkDestroyDescriptorPool(device, p, nullptr);
      for (VkQueryPool q : {b.queries, b.xferQueries})
        if (q) api().vkDestroyQueryPool(device, q, nullptr);
      for (VkFence f : {b.fence, b.xferFence})
        if (f) api().vkDestroyFence(device, f, nullptr);
    }
    if (commandPool) api().vkDestroyCommandPool(device, commandPool, nullptr);
    if (xfer.done) api().vkDestroySemaphore(device, xfer.done, nullptr);
    if (xfer.pool) api().vkDestroyCommandPool(device, xfer.pool, nullptr);
    api().vkDestroyDevice(device, nullptr);
  }
  // `instance` (and its messenger) goes last, as a member.
}

Status VulkanDevice::Impl::checkValidation(Loc site) {
  if (!instance->validation() || !instance->hasMessages()) return Status::ok();
  std::vector<std::string> msgs = instance->takeMessages();
  std::string text = "Vulkan validation: " + msgs[0];
  if (msgs.size() > 1) text += " (and " + std::to_string(msgs.size() - 1) + " more)";
  // Kept for takeValidationMessages() too.
  validationLog.insert(validationLog.end(), msgs.begin(), msgs.end());
  return Error{site, text};
}

Status VulkanDevice::Impl::openTransferQueue() {
  const vk::PhysicalDevice& pd = physical;
  api().vkGetDeviceQueue(device, pd.transferFamily, uint32_t(pd.transferQueueIndex), &xfer.queue);
  VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cp.queueFamilyIndex = pd.transferFamily;
  if (VkResult r = api().vkCreateCommandPool(device, &cp, nullptr, &xfer.pool); r != VK_SUCCESS)
    return vkError({}, "vkCreateCommandPool failed (upload queue)", r);
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  si.pNext = &type;
  if (VkResult r = api().vkCreateSemaphore(device, &si, nullptr, &xfer.done); r != VK_SUCCESS)
    return vkError({}, "vkCreateSemaphore failed (upload queue)", r);
  // Stamps need the host reset of Vulkan 1.2 (vkCmdResetQueryPool is not
  // allowed on a transfer-only queue).
  xfer.timestamps = pd.transferTimestampBits > 0 && hostQueryReset;
  return Status::ok();
}

namespace {

// The number in environment variable `name`, from lo to hi; `fallback` when
// it is unset or empty.
Expected<unsigned> envNumber(const char* name, unsigned fallback, unsigned lo, unsigned hi) {
  const char* e = std::getenv(name);
  if (!e || !*e) return fallback;
  char* end = nullptr;
  unsigned long long v = std::strtoull(e, &end, 10);
  if (*end || *e == '-' || v < lo || v > hi)
    return Error{{}, std::string(name) + "='" + e + "' is not a number from " + std::to_string(lo) + " to " +
                         std::to_string(hi)};
  return unsigned(v);
}

}  // namespace

// ---------------------------------------------------------------------------

Expected<std::vector<VulkanDeviceInfo>> listVulkanDevices() {
  auto inst = vk::Instance::create(false);
  if (!inst) return inst.error();
  auto devs = vk::enumerateDevices(**inst);
  if (!devs) return devs.error();
  std::vector<VulkanDeviceInfo> out;
  for (auto& d : *devs) out.push_back({d.index, d.type, d.caps});
  return out;
}

VulkanDevice::VulkanDevice(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VulkanDevice::~VulkanDevice() = default;

Expected<std::unique_ptr<VulkanDevice>> VulkanDevice::open(const VulkanOptions& options) {
  bool validation = options.validation;
  if (const char* v = std::getenv("EPH_VALIDATION"); v && *v && std::string(v) != "0") validation = true;
  auto inst = vk::Instance::create(validation);
  if (!inst) return inst.error();
  auto devs = vk::enumerateDevices(**inst);
  if (!devs) return devs.error();

  int index = options.deviceIndex;
  std::string source = "--device";
  if (index < 0)
    if (const char* e = std::getenv("EPH_DEVICE"); e && *e) {
      char* end = nullptr;
      long v = std::strtol(e, &end, 10);
      if (*end || v < 0 || v > INT_MAX)
        return Error{{}, "EPH_DEVICE='" + std::string(e) + "' is not a device number"};
      index = int(v);
      source = "EPH_DEVICE";
    }
  if (index >= int(devs->size())) {
    std::string list;
    for (auto& d : *devs) list += (list.empty() ? "" : ", ") + std::to_string(d.index) + ": " + d.caps.name;
    return Error{{}, source + " " + std::to_string(index) + ": no such Vulkan device (" +
                         std::to_string(devs->size()) + " found: " + list + ")"};
  }
  if (index < 0) {
    index = 0;
    for (auto& d : *devs)
      if (d.caps.isGpu) {
        index = d.index;
        break;
      }
  }

  auto impl = std::make_unique<Impl>();
  impl->instance = std::move(*inst);
  impl->physical = std::move((*devs)[index]);
  Impl& I = *impl;
  vk::PhysicalDevice& pd = I.physical;
  for (const std::string& cap : options.withoutCaps) {
    DeviceCaps& c = pd.caps;
    bool* field = cap == "float64" ? &c.float64 : cap == "int64" ? &c.int64 : cap == "float16" ? &c.float16
                : cap == "int8" ? &c.int8 : cap == "int16" ? &c.int16 : cap == "atomicInt64" ? &c.atomicInt64
                : cap == "atomicFloat32Add" ? &c.atomicFloat32Add : cap == "atomicFloat64Add" ? &c.atomicFloat64Add
                : nullptr;
    if (cap == "cooperativeMatrix") {
      c.cooperativeMatrixShapes.clear();
      c.workgroupMatrixShapes.clear();
      continue;
    }
    if (cap == "workgroupMatrix") {
      c.workgroupMatrixShapes.clear();
      continue;
    }
    if (!field) return Error{{}, "unknown capability '" + cap + "' in VulkanOptions::withoutCaps"};
    *field = false;
  }

  // Every feature the device has, except robust buffer access (it costs speed
  // and hides out-of-bounds bugs the interpreter reports).
  pd.features->base.features.robustBufferAccess = VK_FALSE;
  std::vector<const char*> extensions;
  if (pd.hasAtomicFloat) extensions.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  if (pd.hasCoopMatrix) extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  if (pd.hasCoopMatrix2) {
    extensions.push_back(vk::kCoopMatrixKhrExtension);
    extensions.push_back(vk::kCoopMatrix2Extension);
  }
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executableInfo{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  I.printStatistics = std::getenv("EPH_VK_STATS") && pd.hasExecutableProperties;
  if (I.printStatistics) {
    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    executableInfo.pipelineExecutableInfo = VK_TRUE;
  }
  float priorities[2] = {1.0f, 1.0f};
  // The upload queue orders its batches against compute ones with a timeline
  // semaphore (Vulkan 1.2).
  bool timeline = pd.features->v12.timelineSemaphore;
  bool sharedUploads = options.uploadsOnComputeQueue && pd.transferQueueIndex < 0 && timeline;
  if (sharedUploads) {  // tests: the upload-queue path, submitted to queue 0
    pd.transferFamily = pd.queueFamily;
    pd.transferQueueIndex = 0;
    pd.transferTimestampBits = pd.timestampValidBits;
  }
  bool wantTransfer = (options.transferQueue || sharedUploads) && pd.transferQueueIndex >= 0 && timeline;
  if (const char* e = std::getenv("EPH_VK_TRANSFER_QUEUE"); e && std::string(e) == "0") wantTransfer = false;
  VkDeviceQueueCreateInfo queues[2] = {{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO},
                                       {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO}};
  uint32_t queueInfos = 1;
  queues[0].queueFamilyIndex = pd.queueFamily;
  queues[0].queueCount = 1;
  queues[0].pQueuePriorities = priorities;
  if (sharedUploads) {
    // one queue for both
  } else if (wantTransfer && pd.transferFamily == pd.queueFamily) {
    queues[0].queueCount = 2;
  } else if (wantTransfer) {
    queues[1].queueFamilyIndex = pd.transferFamily;
    queues[1].queueCount = 1;
    queues[1].pQueuePriorities = priorities;
    queueInfos = 2;
  }
  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &pd.features->base;
  if (I.printStatistics) {
    executableInfo.pNext = const_cast<void*>(info.pNext);
    info.pNext = &executableInfo;
  }
  info.queueCreateInfoCount = queueInfos;
  info.pQueueCreateInfos = queues;
  info.enabledExtensionCount = uint32_t(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  if (VkResult r = api().vkCreateDevice(pd.handle, &info, nullptr, &I.device); r != VK_SUCCESS)
    return vkError({}, "cannot open Vulkan device " + std::to_string(index) + " (" + pd.caps.name + ")", r);
  vk::pinLoadedLibraries();
  api().vkGetDeviceQueue(I.device, pd.queueFamily, 0, &I.queue);
  I.pool = std::make_unique<vk::MemoryPool>(I.device);

  VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cp.queueFamilyIndex = pd.queueFamily;
  if (VkResult r = api().vkCreateCommandPool(I.device, &cp, nullptr, &I.commandPool); r != VK_SUCCESS)
    return vkError({}, "vkCreateCommandPool failed", r);
  const char* profileEnv = std::getenv("EPH_PROFILE");
  I.profile = options.profile || (profileEnv && *profileEnv && std::string(profileEnv) != "0");
  I.hostQueryReset = pd.features->v12.hostQueryReset;  // false unless the 1.2 struct is linked
  if (wantTransfer) {
    if (Status s = I.openTransferQueue(); !s) return s.error();
  }

  std::string deviceKey = std::to_string(pd.props.vendorID) + ":" + std::to_string(pd.props.deviceID) + ":" +
                          std::to_string(pd.props.driverVersion) + ":" + pd.caps.driver + ":" +
                          std::string(reinterpret_cast<const char*>(pd.props.pipelineCacheUUID), VK_UUID_SIZE) +
                          ":ephc " EPH_VERSION;
  I.disk = std::make_unique<vk::DiskCache>(runtime::cacheDir(options.cacheDir), deviceKey);
  I.checkBounds = options.checkBounds;
  auto batchCommands = envNumber("EPH_VK_BATCH", options.batchCommands, 0, UINT_MAX);
  if (!batchCommands) return batchCommands.error();
  I.batchCommands = *batchCommands;
  auto maxCommands = envNumber("EPH_VK_BATCH_MAX", options.maxBatchCommands, 0, UINT_MAX);
  if (!maxCommands) return maxCommands.error();
  I.maxBatchCommands = std::max(*maxCommands, I.batchCommands);
  auto inFlight = envNumber("EPH_VK_IN_FLIGHT", options.batchesInFlight, 1, 64);
  if (!inFlight) return inFlight.error();
  if (*inFlight < 1 || *inFlight > 64)
    return Error{{}, "VulkanOptions::batchesInFlight is " + std::to_string(*inFlight) + "; it must be 1 to 64"};
  auto first = envNumber("EPH_VK_FIRST_BATCH", options.firstBatch, 1, UINT_MAX);
  if (!first) return first.error();
  if (*first < 1) return Error{{}, "VulkanOptions::firstBatch is 0; it must be at least 1"};
  I.firstBatch = I.flushAt = *first;
  // A GPU: poll for 10 ms (as CUDA's default, spinning while cores are free);
  // a CPU driver (lavapipe) runs the work on the host's cores: sleep at once.
  const unsigned spinDefault = pd.caps.isGpu ? 10'000 : 0;
  auto spin = envNumber("EPH_VK_SPIN_US", options.spinWaitUs < 0 ? spinDefault : unsigned(options.spinWaitUs), 0,
                        10'000'000);
  if (!spin) return spin.error();
  I.spinWaitUs = *spin;
  if (Status s = I.makeRing(*inFlight); !s) return s.error();
  if (Status s = I.checkValidation({}); !s) return s.error();
  return std::unique_ptr<VulkanDevice>(new VulkanDevice(std::move(impl)));
}

const DeviceCaps& VulkanDevice::caps() const { return impl_->physical.caps; }

bool VulkanDevice::hasUploadQueue() const { return impl_->xfer.queue != VK_NULL_HANDLE; }

VulkanDevice::PipelineStats VulkanDevice::stats() const { return impl_->stats; }
VulkanDevice::MemoryStats VulkanDevice::memoryStats() const {
  vk::MemoryPool::Stats s = impl_->pool->stats();
  return {s.deviceAllocations, s.blocks, s.dedicated, s.allocations, s.cached};
}

std::vector<std::string> VulkanDevice::takeValidationMessages() {
  std::vector<std::string> all = std::exchange(impl_->validationLog, {});
  for (auto& m : impl_->instance->takeMessages()) all.push_back(std::move(m));
  return all;
}

}  // namespace eph::runtime
