#include "runtime/vulkan/VulkanDevice.h"

#include <climits>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "ir/Layout.h"
#include "runtime/vulkan/BoundsRecord.h"
#include "runtime/vulkan/PipelineCache.h"
#include "runtime/vulkan/VulkanApi.h"
#include "runtime/vulkan/VulkanInstance.h"
#include "runtime/vulkan/VulkanMemory.h"
#include "targets/spirv/Spirv.h"

#ifndef EPH_VERSION
#define EPH_VERSION "0.1.0"
#endif

namespace eph::runtime {
namespace {

using vk::api;
using vk::vkError;

constexpr uint32_t kQueryCapacity = 8192;       // timestamps per command buffer (two a command)
constexpr uint32_t kSetsPerPool = 256;          // descriptor sets per pool
constexpr uint32_t kDescriptorsPerPool = 4096;  // storage-buffer descriptors per pool
constexpr size_t kMaxStagingBuffers = 256;            // uploads between submits, at most
constexpr uint64_t kMaxStagedBytes = uint64_t(1) << 30;  // bytes staged between submits, at most
constexpr uint64_t kFenceTimeoutNs = 600ull * 1000 * 1000 * 1000;

std::string tuple3(std::array<uint32_t, 3> v) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + ")";
}

// A VkBuffer with memory from the device's MemoryPool (VulkanMemory.h).
using vk::Buffer;

// A kernel's compiled pipeline and the layouts it was built with.
struct Pipeline {
  VkDevice device = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  ~Pipeline() {
    if (pipeline) api().vkDestroyPipeline(device, pipeline, nullptr);
    if (layout) api().vkDestroyPipelineLayout(device, layout, nullptr);
    if (setLayout) api().vkDestroyDescriptorSetLayout(device, setLayout, nullptr);
  }
};

// How one kernel of the prepared module is dispatched.
struct KernelInfo {
  std::string name;
  Pipeline* pipeline = nullptr;
  std::vector<uint32_t> spirv;
  // Per binding: the parameter it comes from and whether the kernel may write it.
  std::vector<unsigned> bindingParam;
  std::vector<bool> bindingWrites;
  // Scalar parameters: parameter index and offset in the push-constant block.
  std::vector<std::pair<unsigned, size_t>> pushFields;
  uint32_t pushBytes = 0;
};

}  // namespace

struct VulkanDevice::Impl {
  std::unique_ptr<vk::Instance> instance;
  vk::PhysicalDevice physical;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  VkCommandPool commandPool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkQueryPool queryPool = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> descriptorPools;
  size_t currentPool = 0;
  std::unique_ptr<vk::DiskCache> disk;
  std::unique_ptr<vk::MemoryPool> pool;  // every buffer's memory
  // EPH_VK_STATS set (and VK_KHR_pipeline_executable_properties there): each
  // pipeline built prints the driver's statistics (registers, shared memory...)
  // to stderr, for comparing a kernel's compile with nvcc's (bench/RESULTS.md).
  bool printStatistics = false;
  // VulkanOptions::checkBounds: kernels check their accesses and the first
  // out-of-bounds one of a submission lands in `boundsRecord` (host-visible,
  // bound after every kernel's buffers; runtime/vulkan/BoundsRecord.h), read
  // and cleared after each submission. `boundsSites` numbers the checked ops.
  bool checkBounds = false;
  Buffer boundsRecord;
  std::vector<const ir::Op*> boundsSites;
  bool boundsPending = false;  // the open batch has a checked dispatch

  std::unordered_map<uint64_t, Buffer> buffers;  // by handle
  uint64_t nextHandle = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Pipeline>> pipelines;  // by SPIR-V hash
  const ir::Module* module = nullptr;
  bool prepared = false;
  std::unordered_map<const ir::Function*, KernelInfo> kernels;

  // The command buffer being recorded.
  bool recording = false;
  std::unordered_set<VkBuffer> writtenSinceBarrier, readSinceBarrier;
  std::unordered_set<uint64_t> usedHandles;  // buffers the open command buffer uses
  std::vector<Buffer> staging;               // freed once the command buffer has run
  // The upload queue (PhysicalDevice::transferQueueIndex), when there is one
  // and VulkanOptions::transferQueue: an h2d into a buffer the open compute
  // batch has not used is recorded here instead, so that it runs beside the
  // compute work. The compute batch waits for it (a semaphore) only when one
  // of its commands uses a buffer an upload here writes.
  struct Transfer {
    VkQueue queue = VK_NULL_HANDLE;
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    VkSemaphore done = VK_NULL_HANDLE;
    VkQueryPool queries = VK_NULL_HANDLE;  // reset from the host (Vulkan 1.2 hostQueryReset)
    uint32_t queriesUsed = 0;
    bool recording = false;
    std::unordered_set<VkBuffer> written;  // by the open transfer batch
  } xfer;
  std::unordered_set<VkBuffer> computeUsed;  // buffers the open compute batch uses
  bool computeWaitsForTransfer = false;

  // Commands timed in the open command buffers: a start and an end query each.
  struct TimedCommand {
    std::string what, name;
    uint32_t query;
  };
  std::vector<TimedCommand> timed, xferTimed;
  uint32_t queriesUsed = 0;
  unsigned submissions = 0;
  std::vector<DispatchTime> times;
  std::vector<CommandTime> timeline;
  // Stamps the start of a transfer or dispatch (stage: its kind's stage) and
  // returns the query for stampEnd, or -1 when the pool is full or absent.
  int64_t stampStart(const char* what, std::string name, VkPipelineStageFlagBits stage) {
    if (!queryPool || queriesUsed + 2 > kQueryCapacity) return -1;
    api().vkCmdWriteTimestamp(cmd, stage, queryPool, queriesUsed);
    timed.push_back({what, std::move(name), queriesUsed});
    queriesUsed += 2;
    return timed.back().query;
  }
  void stampEnd(int64_t query, VkPipelineStageFlagBits stage) {
    if (query >= 0) api().vkCmdWriteTimestamp(cmd, stage, queryPool, uint32_t(query) + 1);
  }
  PipelineStats stats;
  std::vector<std::string> validationLog;  // messages already reported as errors
  // Work that never finished (a fence timeout) or a lost device: resources may
  // still be in use by the GPU, so nothing is reset or freed any more, and
  // every later call fails at once.
  bool wedged = false;
  Status wedgedError(Loc site) const {
    return Error{site, "the device " + physical.caps.name +
                           " is unusable after earlier work did not finish or the device was lost"};
  }
  // Gives up ownership of a buffer the GPU may still use (it is leaked).
  static void abandon(Buffer& b) { b.abandon(); }

  ~Impl();
  const std::string& name() const { return physical.caps.name; }
  Status checkValidation(Loc site);
  Expected<uint32_t> memoryType(uint32_t typeBits, VkMemoryPropertyFlags need, VkMemoryPropertyFlags prefer);
  Expected<Buffer> makeBuffer(uint64_t bytes, VkBufferUsageFlags usage, bool hostVisible, bool readback, Loc site);
  Status beginRecording(Loc site);
  void access(std::initializer_list<VkBuffer> reads, std::initializer_list<VkBuffer> writes);
  void access(const std::vector<VkBuffer>& reads, const std::vector<VkBuffer>& writes);
  Status submitAndWait(Loc site);
  void readTimestamps();
  Status uploadOnTransferQueue(Buffer& dst, uint64_t handle, Buffer stage, Loc site);
  Status openTransferQueue();
  void finishSubmission();
  Expected<VkDescriptorSet> allocateSet(VkDescriptorSetLayout layout, Loc site);
  Expected<Pipeline*> pipelineFor(const std::vector<uint32_t>& spirv, uint32_t bindings, uint32_t pushBytes,
                                  const std::string& kernel);
  Status prepareKernel(const ir::Function& k);
  Buffer* live(uint64_t handle, Loc site, Status& err);
};

VulkanDevice::Impl::~Impl() {
  if (wedged) {  // waiting could block for ever; leak what the GPU may still use
    for (auto& [h, b] : buffers) abandon(b);
    for (Buffer& b : staging) abandon(b);
    abandon(boundsRecord);
    for (auto& [k, p] : pipelines) (void)p.release();
    if (pool) pool->abandon();
    return;
  }
  if (device) {
    if (recording || xfer.recording) (void)submitAndWait({});
    api().vkDeviceWaitIdle(device);
    buffers.clear();
    staging.clear();
    boundsRecord = Buffer();
    pool.reset();  // after every buffer
    pipelines.clear();
    for (VkDescriptorPool p : descriptorPools) api().vkDestroyDescriptorPool(device, p, nullptr);
    if (queryPool) api().vkDestroyQueryPool(device, queryPool, nullptr);
    if (fence) api().vkDestroyFence(device, fence, nullptr);
    if (commandPool) api().vkDestroyCommandPool(device, commandPool, nullptr);
    if (xfer.queries) api().vkDestroyQueryPool(device, xfer.queries, nullptr);
    if (xfer.fence) api().vkDestroyFence(device, xfer.fence, nullptr);
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

Expected<uint32_t> VulkanDevice::Impl::memoryType(uint32_t typeBits, VkMemoryPropertyFlags need,
                                                  VkMemoryPropertyFlags prefer) {
  const VkPhysicalDeviceMemoryProperties& mp = physical.memory;
  for (int pass = 0; pass < 2; ++pass)
    for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
      VkMemoryPropertyFlags want = pass == 0 ? need | prefer : need;
      if ((typeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) return i;
    }
  return Error{{}, "no suitable memory type on " + name()};
}

Expected<Buffer> VulkanDevice::Impl::makeBuffer(uint64_t bytes, VkBufferUsageFlags usage, bool hostVisible,
                                                bool readback, Loc site) {
  Buffer b;
  b.device = device;
  b.bytes = bytes;
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = std::max<uint64_t>(bytes, 16);  // Vulkan has no empty buffers
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  uint32_t families[2] = {physical.queueFamily, physical.transferFamily};
  if (xfer.queue && families[0] != families[1]) {  // used by both queues, no ownership transfers
    info.sharingMode = VK_SHARING_MODE_CONCURRENT;
    info.queueFamilyIndexCount = 2;
    info.pQueueFamilyIndices = families;
  }
  if (VkResult r = api().vkCreateBuffer(device, &info, nullptr, &b.buffer); r != VK_SUCCESS)
    return vkError(site, "cannot create a buffer of " + std::to_string(bytes) + " bytes on " + name(), r);
  VkMemoryRequirements req;
  api().vkGetBufferMemoryRequirements(device, b.buffer, &req);
  VkMemoryPropertyFlags need = hostVisible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                           : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  VkMemoryPropertyFlags prefer = readback ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT : 0;
  auto type = memoryType(req.memoryTypeBits, need, prefer);
  if (!type) return Error{site, type.error().message};
  VkResult r = pool->allocate(req, *type, hostVisible, b.memory);
  if (r == VK_SUCCESS) b.pool = pool.get();
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
    return Error{site, "allocation of " + std::to_string(bytes) + " bytes failed: out of " +
                           (hostVisible ? "host-visible" : "device") + " memory on " + name() + " (" +
                           std::to_string(physical.caps.memoryBytes) + " bytes of device memory in all)"};
  if (r != VK_SUCCESS) return vkError(site, "vkAllocateMemory of " + std::to_string(bytes) + " bytes failed", r);
  if ((r = api().vkBindBufferMemory(device, b.buffer, b.memory.memory, b.memory.offset)) != VK_SUCCESS)
    return vkError(site, "vkBindBufferMemory failed", r);
  b.mapped = b.memory.mapped;
  return b;
}

Status VulkanDevice::Impl::beginRecording(Loc site) {
  if (wedged) return wedgedError(site);
  if (recording) return Status::ok();
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (VkResult r = api().vkBeginCommandBuffer(cmd, &begin); r != VK_SUCCESS)
    return vkError(site, "vkBeginCommandBuffer failed", r);
  if (queryPool) api().vkCmdResetQueryPool(cmd, queryPool, 0, kQueryCapacity);
  recording = true;
  return Status::ok();
}

// Records a barrier when this command depends on an earlier one not yet
// behind a barrier: it reads or writes what one wrote, or writes what one read.
void VulkanDevice::Impl::access(const std::vector<VkBuffer>& reads, const std::vector<VkBuffer>& writes) {
  bool hazard = false;
  for (VkBuffer b : reads) hazard = hazard || writtenSinceBarrier.count(b);
  for (VkBuffer b : writes) hazard = hazard || writtenSinceBarrier.count(b) || readSinceBarrier.count(b);
  if (hazard) {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                       VK_ACCESS_TRANSFER_WRITE_BIT;
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    api().vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
    writtenSinceBarrier.clear();
    readSinceBarrier.clear();
    ++stats.barriers;
  }
  for (VkBuffer b : reads) readSinceBarrier.insert(b);
  for (VkBuffer b : writes) writtenSinceBarrier.insert(b);
  for (const auto* list : {&reads, &writes})
    for (VkBuffer b : *list) {
      computeUsed.insert(b);
      if (xfer.written.count(b)) computeWaitsForTransfer = true;
    }
}

void VulkanDevice::Impl::access(std::initializer_list<VkBuffer> reads, std::initializer_list<VkBuffer> writes) {
  access(std::vector<VkBuffer>(reads), std::vector<VkBuffer>(writes));
}

// After a submission has run: each timed command's interval, in ms from the
// submission's first start (stamps wrap at timestampValidBits).
// Both queues' stamps count the device's one timestamp clock, so the upload
// queue's commands go on the same axis (in recording order per queue).
void VulkanDevice::Impl::readTimestamps() {
  struct Stamped {
    const TimedCommand* c;
    uint64_t t0, t1;
  };
  std::vector<Stamped> all;
  uint64_t mask = physical.timestampValidBits >= 64 ? ~0ull : (1ull << physical.timestampValidBits) - 1;
  auto read = [&](VkQueryPool pool, uint32_t used, const std::vector<TimedCommand>& cmds) {
    if (!pool || cmds.empty()) return;
    std::vector<uint64_t> stamps(used);
    if (api().vkGetQueryPoolResults(device, pool, 0, used, stamps.size() * sizeof(uint64_t), stamps.data(),
                                    sizeof(uint64_t), VK_QUERY_RESULT_64_BIT) != VK_SUCCESS)
      return;
    for (const TimedCommand& c : cmds) all.push_back({&c, stamps[c.query] & mask, stamps[c.query + 1] & mask});
  };
  read(xfer.queries, xfer.queriesUsed, xferTimed);
  read(queryPool, queriesUsed, timed);
  if (all.empty()) return;
  double msPerTick = physical.props.limits.timestampPeriod * 1e-6;
  uint64_t first = all.front().t0;
  for (const Stamped& s : all) first = std::min(first, s.t0);
  for (const Stamped& s : all) {
    CommandTime t{s.c->what, s.c->name, submissions, double((s.t0 - first) & mask) * msPerTick,
                  double((s.t1 - first) & mask) * msPerTick};
    if (t.endMs < t.startMs) t.endMs = t.startMs;  // an end stamp may not precede its start
    if (s.c->what == "dispatch") times.push_back({s.c->name, t.endMs - t.startMs});
    timeline.push_back(std::move(t));
  }
}

// Submits the open batches and waits for both. When the compute batch
// waits for the uploads (a binary semaphore: its signal must be submitted
// first) the upload batch goes first; otherwise the compute batch does, so
// that uploads start while the compute work runs rather than before it.
Status VulkanDevice::Impl::submitAndWait(Loc site) {
  if (!recording && !xfer.recording) return checkValidation(site);
  bool compute = recording, upload = xfer.recording;
  bool chained = compute && upload && computeWaitsForTransfer;
  recording = xfer.recording = false;
  Status result;
  std::vector<VkFence> fences;
  auto submitUploads = [&] {
    if (!upload || !result) return;
    if (VkResult e = api().vkEndCommandBuffer(xfer.cmd); e != VK_SUCCESS) {
      result = vkError(site, "vkEndCommandBuffer failed", e);
      return;
    }
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &xfer.cmd;
    submit.signalSemaphoreCount = chained ? 1 : 0;
    submit.pSignalSemaphores = &xfer.done;
    ++stats.submits;
    if (VkResult r = api().vkQueueSubmit(xfer.queue, 1, &submit, xfer.fence); r != VK_SUCCESS)
      result = vkError(site, "submitting uploads failed", r);
    else
      fences.push_back(xfer.fence);
  };
  auto submitCompute = [&] {
    if (!compute || !result) return;
    if (boundsPending) {  // the bounds record's writes, visible to the host after the fence
      VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
      mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
      api().vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb,
                                 0, nullptr, 0, nullptr);
    }
    if (VkResult e = api().vkEndCommandBuffer(cmd); e != VK_SUCCESS) {
      result = vkError(site, "vkEndCommandBuffer failed", e);
      return;
    }
    VkPipelineStageFlags waitStage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.waitSemaphoreCount = chained ? 1 : 0;
    submit.pWaitSemaphores = &xfer.done;
    submit.pWaitDstStageMask = &waitStage;
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    ++stats.submits;
    if (VkResult r = api().vkQueueSubmit(queue, 1, &submit, fence); r != VK_SUCCESS)
      result = vkError(site, "submitting device work failed", r);
    else
      fences.push_back(fence);
  };
  if (chained) {
    submitUploads();
    submitCompute();
  } else {
    submitCompute();
    submitUploads();
  }
  if (!fences.empty()) {
    VkResult r = api().vkWaitForFences(device, uint32_t(fences.size()), fences.data(), VK_TRUE, kFenceTimeoutNs);
    if (r == VK_TIMEOUT || r == VK_ERROR_DEVICE_LOST) {
      // The command buffers, their descriptor sets and staging buffers may
      // still be in use: reset and free nothing.
      wedged = true;
      for (Buffer& b : staging) abandon(b);
      return Error{site, r == VK_TIMEOUT
                             ? "device work did not finish within 10 minutes on " + name()
                             : "the device was lost while running submitted work on " + name() +
                                   " (a kernel faulted or ran too long)"};
    }
    if (r != VK_SUCCESS) result = vkError(site, "waiting for device work failed", r);
    else if (result) readTimestamps();
    api().vkResetFences(device, uint32_t(fences.size()), fences.data());
  }
  finishSubmission();
  if (!result) return result;
  if (std::exchange(boundsPending, false))
    if (Status s = vk::takeBoundsError(boundsRecord.mapped, boundsSites); !s) return s;
  return checkValidation(site);
}

// After a submission (or a failed one): empty batches again.
void VulkanDevice::Impl::finishSubmission() {
  writtenSinceBarrier.clear();
  readSinceBarrier.clear();
  usedHandles.clear();
  computeUsed.clear();
  xfer.written.clear();
  computeWaitsForTransfer = false;
  timed.clear();
  xferTimed.clear();
  ++submissions;
  queriesUsed = xfer.queriesUsed = 0;
  api().vkResetCommandBuffer(cmd, 0);
  if (xfer.cmd) api().vkResetCommandBuffer(xfer.cmd, 0);
  for (size_t i = 0; i < descriptorPools.size() && i <= currentPool; ++i)
    api().vkResetDescriptorPool(device, descriptorPools[i], 0);
  currentPool = 0;
  staging.clear();
}

Status VulkanDevice::Impl::openTransferQueue() {
  const vk::PhysicalDevice& pd = physical;
  api().vkGetDeviceQueue(device, pd.transferFamily, uint32_t(pd.transferQueueIndex), &xfer.queue);
  VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cp.queueFamilyIndex = pd.transferFamily;
  if (VkResult r = api().vkCreateCommandPool(device, &cp, nullptr, &xfer.pool); r != VK_SUCCESS)
    return vkError({}, "vkCreateCommandPool failed (upload queue)", r);
  VkCommandBufferAllocateInfo cb{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cb.commandPool = xfer.pool;
  cb.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cb.commandBufferCount = 1;
  if (VkResult r = api().vkAllocateCommandBuffers(device, &cb, &xfer.cmd); r != VK_SUCCESS)
    return vkError({}, "vkAllocateCommandBuffers failed (upload queue)", r);
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if (VkResult r = api().vkCreateFence(device, &fi, nullptr, &xfer.fence); r != VK_SUCCESS)
    return vkError({}, "vkCreateFence failed (upload queue)", r);
  VkSemaphoreCreateInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  if (VkResult r = api().vkCreateSemaphore(device, &si, nullptr, &xfer.done); r != VK_SUCCESS)
    return vkError({}, "vkCreateSemaphore failed (upload queue)", r);
  // Stamps need the host reset of Vulkan 1.2 (vkCmdResetQueryPool is not
  // allowed on a transfer-only queue).
  bool hostReset = pd.features->v12.hostQueryReset;  // false unless the 1.2 struct is linked
  if (pd.transferTimestampBits > 0 && queryPool && hostReset) {
    VkQueryPoolCreateInfo qp{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qp.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qp.queryCount = kQueryCapacity;
    if (api().vkCreateQueryPool(device, &qp, nullptr, &xfer.queries) != VK_SUCCESS) xfer.queries = VK_NULL_HANDLE;
  }
  return Status::ok();
}

// An h2d on the upload queue: stamped there, behind a barrier only when this
// batch already uploads into the same buffer.
Status VulkanDevice::Impl::uploadOnTransferQueue(Buffer& dst, uint64_t handle, Buffer stage, Loc site) {
  if (!xfer.recording) {
    if (xfer.queries) api().vkResetQueryPool(device, xfer.queries, 0, kQueryCapacity);
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    if (VkResult r = api().vkBeginCommandBuffer(xfer.cmd, &begin); r != VK_SUCCESS)
      return vkError(site, "vkBeginCommandBuffer failed", r);
    xfer.recording = true;
  }
  if (xfer.written.count(dst.buffer)) {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = mb.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    api().vkCmdPipelineBarrier(xfer.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0,
                               nullptr, 0, nullptr);
    ++stats.barriers;
  }
  bool stamped = xfer.queries && xfer.queriesUsed + 2 <= kQueryCapacity;
  if (stamped) {
    api().vkCmdWriteTimestamp(xfer.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, xfer.queries, xfer.queriesUsed);
    xferTimed.push_back({"h2d", "", xfer.queriesUsed});
  }
  VkBufferCopy region{0, 0, dst.bytes};
  api().vkCmdCopyBuffer(xfer.cmd, stage.buffer, dst.buffer, 1, &region);
  if (stamped) {
    api().vkCmdWriteTimestamp(xfer.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, xfer.queries, xfer.queriesUsed + 1);
    xfer.queriesUsed += 2;
  }
  xfer.written.insert(dst.buffer);
  usedHandles.insert(handle);
  staging.push_back(std::move(stage));
  return checkValidation(site);
}

Expected<VkDescriptorSet> VulkanDevice::Impl::allocateSet(VkDescriptorSetLayout layout, Loc site) {
  for (;;) {
    if (currentPool == descriptorPools.size()) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kDescriptorsPerPool};
      VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
      info.maxSets = kSetsPerPool;
      info.poolSizeCount = 1;
      info.pPoolSizes = &size;
      VkDescriptorPool pool;
      if (VkResult r = api().vkCreateDescriptorPool(device, &info, nullptr, &pool); r != VK_SUCCESS)
        return vkError(site, "vkCreateDescriptorPool failed", r);
      descriptorPools.push_back(pool);
    }
    VkDescriptorSetAllocateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    info.descriptorPool = descriptorPools[currentPool];
    info.descriptorSetCount = 1;
    info.pSetLayouts = &layout;
    VkDescriptorSet set;
    VkResult r = api().vkAllocateDescriptorSets(device, &info, &set);
    if (r == VK_SUCCESS) return set;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
      return vkError(site, "vkAllocateDescriptorSets failed", r);
    ++currentPool;
  }
}

Expected<Pipeline*> VulkanDevice::Impl::pipelineFor(const std::vector<uint32_t>& spirv, uint32_t bindings,
                                                    uint32_t pushBytes, const std::string& kernel) {
  uint64_t key = vk::hashBytes(spirv.data(), spirv.size() * 4);
  if (auto it = pipelines.find(key); it != pipelines.end()) {
    ++stats.fromMemory;
    return it->second.get();
  }
  auto p = std::make_unique<Pipeline>();
  p->device = device;
  std::vector<VkDescriptorSetLayoutBinding> slots(bindings);
  for (uint32_t b = 0; b < bindings; ++b) {
    slots[b].binding = b;
    slots[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    slots[b].descriptorCount = 1;
    slots[b].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dsl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dsl.bindingCount = bindings;
  dsl.pBindings = slots.data();
  if (VkResult r = api().vkCreateDescriptorSetLayout(device, &dsl, nullptr, &p->setLayout); r != VK_SUCCESS)
    return vkError({}, "kernel '@" + kernel + "': vkCreateDescriptorSetLayout failed", r);
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, pushBytes};
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &p->setLayout;
  pl.pushConstantRangeCount = pushBytes ? 1 : 0;
  pl.pPushConstantRanges = &range;
  if (VkResult r = api().vkCreatePipelineLayout(device, &pl, nullptr, &p->layout); r != VK_SUCCESS)
    return vkError({}, "kernel '@" + kernel + "': vkCreatePipelineLayout failed", r);

  VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  sm.codeSize = spirv.size() * 4;
  sm.pCode = spirv.data();
  VkShaderModule shader;
  if (VkResult r = api().vkCreateShaderModule(device, &sm, nullptr, &shader); r != VK_SUCCESS)
    return vkError({}, "kernel '@" + kernel + "': vkCreateShaderModule failed", r);

  // The disk cache: reuse driver data for this exact module when there is some.
  auto cached = disk->load(spirv);
  VkPipelineCacheCreateInfo pc{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  if (cached) {
    pc.initialDataSize = cached->size();
    pc.pInitialData = cached->data();
  }
  VkPipelineCache cache = VK_NULL_HANDLE;
  if (api().vkCreatePipelineCache(device, &pc, nullptr, &cache) != VK_SUCCESS) cache = VK_NULL_HANDLE;

  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = shader;
  info.stage.pName = kernel.c_str();
  info.layout = p->layout;
  if (printStatistics) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkResult r = api().vkCreateComputePipelines(device, cache, 1, &info, nullptr, &p->pipeline);
  if (r == VK_SUCCESS && printStatistics) vk::printPipelineStatistics(device, p->pipeline, kernel);
  api().vkDestroyShaderModule(device, shader, nullptr);
  if (r == VK_SUCCESS && cache && !cached) {
    size_t size = 0;
    if (api().vkGetPipelineCacheData(device, cache, &size, nullptr) == VK_SUCCESS && size) {
      std::vector<std::byte> data(size);
      if (api().vkGetPipelineCacheData(device, cache, &size, data.data()) == VK_SUCCESS) {
        data.resize(size);
        disk->save(spirv, data);
      }
    }
  }
  if (cache) api().vkDestroyPipelineCache(device, cache, nullptr);
  if (r != VK_SUCCESS) return vkError({}, "kernel '@" + kernel + "': the driver could not build its pipeline", r);
  ++(cached ? stats.fromDisk : stats.compiled);
  Pipeline* raw = p.get();
  pipelines.emplace(key, std::move(p));
  return raw;
}

Status VulkanDevice::Impl::prepareKernel(const ir::Function& k) {
  const DeviceCaps& c = physical.caps;
  const std::string& kn = k.name();
  auto ws = k.workgroupSize;
  uint64_t invocations = uint64_t(ws[0]) * ws[1] * ws[2];
  for (int d = 0; d < 3; ++d)
    if (ws[d] > c.maxWorkgroupSize[d])
      return Error{k.loc(), "kernel '@" + kn + "': workgroup size " + tuple3({ws[0], ws[1], ws[2]}) +
                                " exceeds the device's maxComputeWorkGroupSize " + tuple3(c.maxWorkgroupSize) +
                                " on " + name()};
  if (invocations > c.maxWorkgroupInvocations)
    return Error{k.loc(), "kernel '@" + kn + "': workgroup of " + std::to_string(invocations) +
                              " invocations exceeds the device's maxComputeWorkGroupInvocations (" +
                              std::to_string(c.maxWorkgroupInvocations) + ") on " + name()};
  uint64_t shared = 0;
  const_cast<ir::Function&>(k).walk([&](ir::Op* op) {
    if (op->name() == "workgroup.alloc" && op->attr("size"))
      shared += uint64_t(op->intAttr("size")) * ir::storageStride(op->result()->type()->elem());
  });
  if (shared > c.maxWorkgroupMemoryBytes)
    return Error{k.loc(), "kernel '@" + kn + "': " + std::to_string(shared) +
                              " bytes of workgroup memory exceed the device's maxComputeSharedMemorySize (" +
                              std::to_string(c.maxWorkgroupMemoryBytes) + " bytes) on " + name()};

  KernelInfo info;
  info.name = kn;
  std::vector<const ir::Type*> scalars;
  std::vector<unsigned> scalarParams;
  auto params = k.paramTypes();
  for (unsigned i = 0; i < params.size(); ++i) {
    if (params[i]->isBuffer()) {
      int b = k.bindingOf(i);
      if (b < 0) continue;
      if (size_t(b) >= info.bindingParam.size()) {
        info.bindingParam.resize(b + 1, ~0u);
        info.bindingWrites.resize(b + 1, false);
      }
      info.bindingParam[b] = i;
      info.bindingWrites[b] = params[i]->ownership() != ir::Ownership::Read;
    } else {
      scalars.push_back(params[i]);
      scalarParams.push_back(i);
    }
  }
  if (info.bindingParam.size() > kDescriptorsPerPool)
    return Error{k.loc(), "kernel '@" + kn + "': " + std::to_string(info.bindingParam.size()) +
                              " buffer parameters exceed ephc's limit of " +
                              std::to_string(kDescriptorsPerPool) + " per kernel"};
  if (info.bindingParam.size() > physical.maxStorageBuffersPerStage)
    return Error{k.loc(), "kernel '@" + kn + "': " + std::to_string(info.bindingParam.size()) +
                              " buffer parameters exceed the device's maxPerStageDescriptorStorageBuffers (" +
                              std::to_string(physical.maxStorageBuffersPerStage) + ") on " + name()};
  if (!scalars.empty()) {
    const ir::Type* block = k.module()->context().structType(scalars);
    for (unsigned j = 0; j < scalars.size(); ++j) info.pushFields.push_back({scalarParams[j], ir::fieldOffset(block, j)});
    info.pushBytes = uint32_t((ir::storageSize(block) + 3) & ~size_t(3));
    if (info.pushBytes > c.maxPushConstantBytes)
      return Error{k.loc(), "kernel '@" + kn + "': " + std::to_string(info.pushBytes) +
                                " bytes of scalar parameters exceed the device's maxPushConstantsSize (" +
                                std::to_string(c.maxPushConstantBytes) + " bytes) on " + name()};
  }

  auto words = spirv::emitKernel(k, c, {.checkBounds = checkBounds, .sites = &boundsSites});
  if (!words) {
    Error e = words.error();
    if (e.message.find("@" + kn) == std::string::npos) e.message = "kernel '@" + kn + "': " + e.message;
    if (!e.loc.known()) e.loc = k.loc();
    return e;
  }
  uint32_t bindings = uint32_t(info.bindingParam.size()) + (checkBounds ? 1 : 0);  // the record last
  auto pipe = pipelineFor(*words, bindings, info.pushBytes, kn);
  if (!pipe) {
    Error e = pipe.error();
    e.loc = k.loc();
    return e;
  }
  info.pipeline = *pipe;
  info.spirv = std::move(*words);
  kernels[&k] = std::move(info);
  return checkValidation(k.loc());
}

Buffer* VulkanDevice::Impl::live(uint64_t handle, Loc site, Status& err) {
  auto it = buffers.find(handle);
  if (it == buffers.end()) {
    err = Error{site, "invalid or freed device buffer handle " + std::to_string(handle)};
    return nullptr;
  }
  return &it->second;
}

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
    if (!field) return Error{{}, "unknown capability '" + cap + "' in VulkanOptions::withoutCaps"};
    *field = false;
  }

  // Every feature the device has, except robust buffer access (it costs speed
  // and hides out-of-bounds bugs the interpreter reports).
  pd.features->base.features.robustBufferAccess = VK_FALSE;
  std::vector<const char*> extensions;
  if (pd.hasAtomicFloat) extensions.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executableInfo{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  I.printStatistics = std::getenv("EPH_VK_STATS") && pd.hasExecutableProperties;
  if (I.printStatistics) {
    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    executableInfo.pipelineExecutableInfo = VK_TRUE;
  }
  float priorities[2] = {1.0f, 1.0f};
  bool wantTransfer = options.transferQueue && pd.transferQueueIndex >= 0;
  if (const char* e = std::getenv("EPH_VK_TRANSFER_QUEUE"); e && std::string(e) == "0") wantTransfer = false;
  VkDeviceQueueCreateInfo queues[2] = {{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO},
                                       {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO}};
  uint32_t queueInfos = 1;
  queues[0].queueFamilyIndex = pd.queueFamily;
  queues[0].queueCount = 1;
  queues[0].pQueuePriorities = priorities;
  if (wantTransfer && pd.transferFamily == pd.queueFamily) {
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
  VkCommandBufferAllocateInfo cb{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cb.commandPool = I.commandPool;
  cb.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cb.commandBufferCount = 1;
  if (VkResult r = api().vkAllocateCommandBuffers(I.device, &cb, &I.cmd); r != VK_SUCCESS)
    return vkError({}, "vkAllocateCommandBuffers failed", r);
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if (VkResult r = api().vkCreateFence(I.device, &fi, nullptr, &I.fence); r != VK_SUCCESS)
    return vkError({}, "vkCreateFence failed", r);
  const char* profileEnv = std::getenv("EPH_PROFILE");
  bool profile = options.profile || (profileEnv && *profileEnv && std::string(profileEnv) != "0");
  if (pd.timestampValidBits > 0 && profile) {  // no pool: nothing is stamped
    VkQueryPoolCreateInfo qp{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qp.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qp.queryCount = kQueryCapacity;
    if (api().vkCreateQueryPool(I.device, &qp, nullptr, &I.queryPool) != VK_SUCCESS) I.queryPool = VK_NULL_HANDLE;
  }
  if (wantTransfer) {
    if (Status s = I.openTransferQueue(); !s) return s.error();
  }

  std::string deviceKey = std::to_string(pd.props.vendorID) + ":" + std::to_string(pd.props.deviceID) + ":" +
                          std::to_string(pd.props.driverVersion) + ":" + pd.caps.driver + ":" +
                          std::string(reinterpret_cast<const char*>(pd.props.pipelineCacheUUID), VK_UUID_SIZE) +
                          ":ephc " EPH_VERSION;
  std::string cacheDir = options.cacheDir;
  if (const char* e = std::getenv("EPH_PIPELINE_CACHE"); cacheDir.empty() && e && *e) cacheDir = e;
  if (cacheDir.empty()) cacheDir = vk::defaultCacheDir();
  I.disk = std::make_unique<vk::DiskCache>(cacheDir, deviceKey);
  I.checkBounds = options.checkBounds;
  if (I.checkBounds) {
    auto record = I.makeBuffer(spirv::kBoundsRecordWords * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true, true, {});
    if (!record) return record.error();
    I.boundsRecord = std::move(*record);
    std::memset(I.boundsRecord.mapped, 0, I.boundsRecord.bytes);
  }
  if (Status s = I.checkValidation({}); !s) return s.error();
  return std::unique_ptr<VulkanDevice>(new VulkanDevice(std::move(impl)));
}

const DeviceCaps& VulkanDevice::caps() const { return impl_->physical.caps; }

// Emits and validates every kernel again on each call (a module at the
// address of an earlier, destroyed one must not reuse its kernels); the
// driver's pipelines are reused through the cache keyed by the SPIR-V.
Status VulkanDevice::prepare(const ir::Module& m) {
  Impl& I = *impl_;
  I.module = &m;
  I.prepared = false;
  I.kernels.clear();
  I.boundsSites.clear();
  for (auto& f : m.functions())
    if (f->isKernel())
      if (Status s = I.prepareKernel(*f); !s) return s;
  I.prepared = true;
  return Status::ok();
}

Expected<uint64_t> VulkanDevice::alloc(const ir::Type* bufferType, uint64_t count, Loc site) {
  Impl& I = *impl_;
  uint64_t stride = ir::storageStride(bufferType->elem());
  const DeviceCaps& c = I.physical.caps;
  if (stride && count > UINT64_MAX / stride)
    return Error{site, "allocation of " + std::to_string(count) + " elements of " + bufferType->elem()->str() +
                           " overflows 64 bits"};
  uint64_t bytes = count * stride;
  if (bytes > c.maxBufferBytes)
    return Error{site, "allocation of " + std::to_string(count) + " elements of " + bufferType->elem()->str() + " (" +
                           std::to_string(bytes) + " bytes) is larger than the device's largest buffer, " +
                           std::to_string(c.maxBufferBytes) + " bytes (" + I.physical.maxBufferLimit + ") on " +
                           c.name};
  auto b = I.makeBuffer(bytes,
                        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                            VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                        false, false, site);
  if (!b) return b.error();
  uint64_t h = I.nextHandle++;
  I.buffers.emplace(h, std::move(*b));
  if (Status s = I.checkValidation(site); !s) return s.error();
  return h;
}

Status VulkanDevice::free(uint64_t handle, Loc site) {
  Impl& I = *impl_;
  Status err;
  if (!I.live(handle, site, err)) return err;
  // Recorded work that uses it must run first.
  if (I.usedHandles.count(handle))
    if (Status s = I.submitAndWait(site); !s) return s;
  I.buffers.erase(handle);
  return I.checkValidation(site);
}

Status VulkanDevice::uploadBytes(uint64_t dst, std::span<const std::byte> bytes, Loc site) {
  Impl& I = *impl_;
  Status err;
  Buffer* b = I.live(dst, site, err);
  if (!b) return err;
  if (bytes.size() != b->bytes)
    return Error{site, "copies " + std::to_string(bytes.size()) + " bytes into a device buffer of " +
                           std::to_string(b->bytes) + " bytes"};
  if (bytes.empty()) return Status::ok();
  // Staging buffers live until the next submit: flush now and then so that a
  // long run of uploads neither holds all their memory nor runs into the
  // driver's limit on allocations.
  uint64_t staged = bytes.size();
  for (const Buffer& sb : I.staging) staged += sb.bytes;
  if (I.staging.size() >= kMaxStagingBuffers || staged > kMaxStagedBytes)
    if (Status s = I.submitAndWait(site); !s) return s;
  auto stage = I.makeBuffer(bytes.size(), VK_BUFFER_USAGE_TRANSFER_SRC_BIT, true, false, site);
  if (!stage) return stage.error();
  std::memcpy(stage->mapped, bytes.data(), bytes.size());
  if (I.xfer.queue && !I.computeUsed.count(b->buffer)) return I.uploadOnTransferQueue(*b, dst, std::move(*stage), site);
  if (Status s = I.beginRecording(site); !s) return s;
  I.access({}, {b->buffer});
  VkBufferCopy region{0, 0, bytes.size()};
  int64_t q = I.stampStart("h2d", "", VK_PIPELINE_STAGE_TRANSFER_BIT);
  api().vkCmdCopyBuffer(I.cmd, stage->buffer, b->buffer, 1, &region);
  I.stampEnd(q, VK_PIPELINE_STAGE_TRANSFER_BIT);
  I.usedHandles.insert(dst);
  I.staging.push_back(std::move(*stage));
  return I.checkValidation(site);
}

Status VulkanDevice::downloadBytes(std::span<std::byte> bytes, uint64_t src, Loc site) {
  Impl& I = *impl_;
  Status err;
  Buffer* b = I.live(src, site, err);
  if (!b) return err;
  if (bytes.size() != b->bytes)
    return Error{site, "copies a device buffer of " + std::to_string(b->bytes) + " bytes into " +
                           std::to_string(bytes.size()) + " bytes"};
  if (bytes.empty()) return I.submitAndWait(site);
  auto stage = I.makeBuffer(bytes.size(), VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, true, site);
  if (!stage) return stage.error();
  if (Status s = I.beginRecording(site); !s) return s;
  I.access({b->buffer}, {});
  VkBufferCopy region{0, 0, bytes.size()};
  int64_t q = I.stampStart("d2h", "", VK_PIPELINE_STAGE_TRANSFER_BIT);
  api().vkCmdCopyBuffer(I.cmd, b->buffer, stage->buffer, 1, &region);
  I.stampEnd(q, VK_PIPELINE_STAGE_TRANSFER_BIT);
  // Make the copy visible to the host before the fence wait returns.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  api().vkCmdPipelineBarrier(I.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
                             nullptr, 0, nullptr);
  Buffer readback = std::move(*stage);  // outlives the submit (staging is cleared there)
  if (Status s = I.submitAndWait(site); !s) {
    if (I.wedged) readback.abandon();  // the copy into it may still be running
    return s;
  }
  std::memcpy(bytes.data(), readback.mapped, bytes.size());
  return Status::ok();
}

// In place: a vkCmdCopyBuffer recorded in the open batch, behind a barrier
// only where it depends on earlier commands.
Status VulkanDevice::copyBytes(uint64_t dst, uint64_t src, uint64_t bytes, Loc site) {
  Impl& I = *impl_;
  Status err;
  Buffer* to = I.live(dst, site, err);
  Buffer* from = to ? I.live(src, site, err) : nullptr;
  if (!from) return err;
  if (to->bytes != bytes || from->bytes != bytes)
    return Error{site, "copies " + std::to_string(bytes) + " bytes from a device buffer of " +
                           std::to_string(from->bytes) + " bytes into one of " + std::to_string(to->bytes)};
  if (bytes == 0 || to == from) return Status::ok();
  if (Status s = I.beginRecording(site); !s) return s;
  I.access({from->buffer}, {to->buffer});
  VkBufferCopy region{0, 0, bytes};
  int64_t q = I.stampStart("copy", "", VK_PIPELINE_STAGE_TRANSFER_BIT);
  api().vkCmdCopyBuffer(I.cmd, from->buffer, to->buffer, 1, &region);
  I.stampEnd(q, VK_PIPELINE_STAGE_TRANSFER_BIT);
  I.usedHandles.insert(dst);
  I.usedHandles.insert(src);
  return I.checkValidation(site);
}

uint64_t VulkanDevice::bufferBytes(uint64_t handle) const {
  auto it = impl_->buffers.find(handle);
  return it == impl_->buffers.end() ? 0 : it->second.bytes;
}

Status VulkanDevice::upload(uint64_t dst, const interp::BufferData& src, Loc site) {
  Status err;
  Buffer* b = impl_->live(dst, site, err);
  if (!b) return err;
  uint64_t stride = ir::storageStride(src.elemType);
  if (src.elems.size() * stride != b->bytes)
    return Error{site, "copies a buffer of " + std::to_string(src.elems.size()) + " elements into a buffer of " +
                           std::to_string(stride ? b->bytes / stride : 0)};
  std::vector<std::byte> bytes;
  if (Status s = ir::encodeBuffer(src, bytes, site); !s) return s;
  return uploadBytes(dst, bytes, site);
}

Status VulkanDevice::download(interp::BufferData& dst, uint64_t src, Loc site) {
  Status err;
  Buffer* b = impl_->live(src, site, err);
  if (!b) return err;
  uint64_t stride = ir::storageStride(dst.elemType);
  if (dst.elems.size() * stride != b->bytes)
    return Error{site, "copies a buffer of " + std::to_string(stride ? b->bytes / stride : 0) +
                           " elements into a buffer of " + std::to_string(dst.elems.size())};
  std::vector<std::byte> bytes(b->bytes);
  if (Status s = downloadBytes(bytes, src, site); !s) return s;
  ir::decodeBuffer(bytes, dst);
  return Status::ok();
}

Status VulkanDevice::dispatch(const ir::Function& kernel, std::array<uint32_t, 3> groups,
                              std::span<const interp::RtValue> args, Loc site) {
  Impl& I = *impl_;
  auto it = I.kernels.find(&kernel);
  if (it == I.kernels.end() || kernel.module() != I.module || !I.prepared) {
    if (!kernel.module()) return Error{site, "kernel '@" + kernel.name() + "' belongs to no module"};
    if (Status s = prepare(*kernel.module()); !s) return s;
    it = I.kernels.find(&kernel);
    if (it == I.kernels.end()) return Error{site, "'@" + kernel.name() + "' is not a kernel"};
  }
  const KernelInfo& k = it->second;
  const DeviceCaps& c = I.physical.caps;
  for (int d = 0; d < 3; ++d)
    if (groups[d] > c.maxWorkgroupCount[d])
      return Error{site, "dispatch of '@" + k.name + "' with " + tuple3(groups) +
                             " workgroups exceeds the device's maxComputeWorkGroupCount " +
                             tuple3(c.maxWorkgroupCount) + " on " + c.name};
  if (args.size() != kernel.paramTypes().size())
    return Error{site, "dispatch of '@" + k.name + "' with " + std::to_string(args.size()) + " arguments; it takes " +
                           std::to_string(kernel.paramTypes().size())};

  std::vector<VkDescriptorBufferInfo> infos(k.bindingParam.size());
  if (I.checkBounds) infos.push_back({I.boundsRecord.buffer, 0, I.boundsRecord.bytes});
  std::vector<VkBuffer> reads, writes;
  std::vector<uint64_t> handles;
  for (size_t b = 0; b < k.bindingParam.size(); ++b) {
    unsigned p = k.bindingParam[b];
    Status err;
    Buffer* buf = I.live(args[p].buffer, site, err);
    if (!buf) return Error{site, "dispatch of '@" + k.name + "', argument " + std::to_string(p) + ": " + err.error().message};
    // The descriptor covers exactly the buffer's elements (buffer.len is
    // OpArrayLength); an empty buffer gets one byte, shorter than any element.
    infos[b] = {buf->buffer, 0, buf->bytes ? buf->bytes : 1};
    (k.bindingWrites[b] ? writes : reads).push_back(buf->buffer);
    handles.push_back(args[p].buffer);
  }
  if (groups[0] == 0 || groups[1] == 0 || groups[2] == 0) return Status::ok();

  std::vector<std::byte> push(k.pushBytes);
  for (auto& [p, offset] : k.pushFields) ir::encode(args[p], push.data() + offset);

  if (Status s = I.beginRecording(site); !s) return s;
  auto set = I.allocateSet(k.pipeline->setLayout, site);
  if (!set) return set.error();
  std::vector<VkWriteDescriptorSet> w(infos.size());
  for (size_t b = 0; b < infos.size(); ++b) {
    w[b] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w[b].dstSet = *set;
    w[b].dstBinding = uint32_t(b);
    w[b].descriptorCount = 1;
    w[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w[b].pBufferInfo = &infos[b];
  }
  if (!w.empty()) api().vkUpdateDescriptorSets(I.device, uint32_t(w.size()), w.data(), 0, nullptr);

  // A buffer both read and written counts as written.
  std::vector<VkBuffer> onlyReads;
  for (VkBuffer r : reads)
    if (std::find(writes.begin(), writes.end(), r) == writes.end()) onlyReads.push_back(r);
  I.access(onlyReads, writes);
  for (uint64_t h : handles) I.usedHandles.insert(h);
  I.boundsPending |= I.checkBounds;

  api().vkCmdBindPipeline(I.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline->pipeline);
  api().vkCmdBindDescriptorSets(I.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline->layout, 0, 1, &*set, 0, nullptr);
  if (k.pushBytes)
    api().vkCmdPushConstants(I.cmd, k.pipeline->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, k.pushBytes, push.data());
  // The start waits for earlier compute work, so each time is one dispatch's.
  int64_t q = I.stampStart("dispatch", k.name, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
  api().vkCmdDispatch(I.cmd, groups[0], groups[1], groups[2]);
  I.stampEnd(q, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
  return I.checkValidation(site);
}

Status VulkanDevice::wait(Loc site) { return impl_->submitAndWait(site); }

std::vector<VulkanDevice::DispatchTime> VulkanDevice::takeDispatchTimes() { return std::exchange(impl_->times, {}); }
std::vector<VulkanDevice::CommandTime> VulkanDevice::takeTimeline() { return std::exchange(impl_->timeline, {}); }
bool VulkanDevice::hasUploadQueue() const { return impl_->xfer.queue != VK_NULL_HANDLE; }

VulkanDevice::PipelineStats VulkanDevice::stats() const { return impl_->stats; }
VulkanDevice::MemoryStats VulkanDevice::memoryStats() const {
  vk::MemoryPool::Stats s = impl_->pool->stats();
  return {s.deviceAllocations, s.blocks, s.dedicated, s.allocations};
}

std::vector<std::string> VulkanDevice::takeValidationMessages() {
  std::vector<std::string> all = std::exchange(impl_->validationLog, {});
  for (auto& m : impl_->instance->takeMessages()) all.push_back(std::move(m));
  return all;
}

std::vector<uint32_t> VulkanDevice::spirvOf(const ir::Function& kernel) const {
  auto it = impl_->kernels.find(&kernel);
  return it == impl_->kernels.end() ? std::vector<uint32_t>{} : it->second.spirv;
}

}  // namespace eph::runtime
