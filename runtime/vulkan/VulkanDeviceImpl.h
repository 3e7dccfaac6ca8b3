// VulkanDevice's private state (VulkanDevice::Impl) and what its source
// files share; included only by them:
//   VulkanDevice.cpp          opening the device and its queues, teardown
//   VulkanDeviceBuffers.cpp   buffers: alloc, free, uploads, downloads, copies
//                             (and uploads on the second queue)
//   VulkanDeviceDispatch.cpp  kernels' pipelines, descriptor sets, dispatches
//   VulkanDeviceSubmit.cpp    recording, barriers, submission, GPU timestamps
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "runtime/vulkan/PipelineCache.h"
#include "runtime/vulkan/VulkanApi.h"
#include "runtime/vulkan/VulkanDevice.h"
#include "runtime/vulkan/VulkanInstance.h"
#include "runtime/vulkan/VulkanMemory.h"

namespace eph::runtime {
namespace vk {

constexpr uint32_t kQueryCapacity = 8192;  // timestamps per command buffer (two a command)

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

}  // namespace vk

// The VulkanDevice*.cpp files name these unqualified.
using vk::api;
using vk::vkError;
// A VkBuffer with memory from the device's MemoryPool (VulkanMemory.h).
using vk::Buffer;
using vk::KernelInfo;
using vk::kQueryCapacity;
using vk::Pipeline;

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

}  // namespace eph::runtime
