// VulkanDevice's private state (VulkanDevice::Impl) and what its source
// files share; included only by them:
//   VulkanDevice.cpp          opening the device and its queues, teardown
//   VulkanDeviceBuffers.cpp   buffers: alloc, free, uploads, downloads, copies
//                             (and uploads on the second queue)
//   VulkanDeviceDispatch.cpp  kernels' pipelines, descriptor sets, dispatches
//   VulkanDeviceSubmit.cpp    the ring of batches: recording, barriers,
//                             submission, retiring, GPU timestamps
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

// A kernel prepare() emitted, kept by its key (VulkanDevice::kernelKey) for
// every later kernel with that key, in any module: those reuse it without
// emitting SPIR-V.
struct CompiledKernel {
  KernelInfo info;
  // With checkBounds: its bounds sites are numbers siteBase + 1 ... siteBase +
  // siteOps.size() (VulkanDevice::Impl::boundsSites), site siteBase + 1 + i
  // being op siteOps[i] of ir::kernelOps.
  uint32_t siteBase = 0;
  std::vector<uint32_t> siteOps;
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

// One batch of the ring (VulkanOptions::batchesInFlight): the command
// buffers of one submission, one per queue, and what must live until the
// GPU has run them. A batch is recorded, submitted (flush) and later retired
// (its fences waited for, its timestamps and bounds record read, its
// command buffers, descriptor pools and kept buffers reset).
struct Batch {
  VkCommandBuffer cmd = VK_NULL_HANDLE, xferCmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE, xferFence = VK_NULL_HANDLE;
  VkQueryPool queries = VK_NULL_HANDLE, xferQueries = VK_NULL_HANDLE;
  bool recording = false, xferRecording = false;  // command buffers open
  bool submitted = false, xferSubmitted = false;  // on their queues, not retired
  uint64_t seq = 0;       // flush order
  unsigned commands = 0;  // recorded on either queue
  // The upload timeline's value this batch's uploads signal, and the value
  // its compute commands wait for (0: none): the newest upload of a buffer
  // they use.
  uint64_t uploadValue = 0, waitUpload = 0;
  std::unordered_set<VkBuffer> computeUsed;  // by its compute commands
  std::unordered_set<VkBuffer> uploaded;     // by its uploads on the upload queue
  std::vector<VkDescriptorPool> pools;
  size_t currentPool = 0;
  // Staging buffers and buffers freed while it may use them: destroyed
  // when it retires.
  std::vector<Buffer> keep;
  uint64_t stagedBytes = 0;
  unsigned stagedBuffers = 0;
  // VulkanOptions::checkBounds: this batch's bounds record (each batch its
  // own, so that one read at retirement is that submission's).
  Buffer boundsRecord;
  bool boundsPending = false;  // it has a checked dispatch
  struct TimedCommand {
    std::string what, name;
    uint32_t query;
  };
  std::vector<TimedCommand> timed, xferTimed;
  uint32_t queriesUsed = 0, xferQueriesUsed = 0;
  bool busy() const { return recording || xferRecording || submitted || xferSubmitted; }
  bool uses(VkBuffer b) const { return computeUsed.count(b) || uploaded.count(b); }
};

struct VulkanDevice::Impl {
  std::unique_ptr<vk::Instance> instance;
  vk::PhysicalDevice physical;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  VkCommandPool commandPool = VK_NULL_HANDLE;
  bool profile = false;  // a query pool per batch (where the queue has timestamps)
  bool stamping = true;  // with profile: stamp commands recorded now (VulkanDevice::setTimestamps)
  // Vulkan 1.2 vkResetQueryPool: a retired batch's used queries are reset
  // from the host; without it each batch resets its whole pool when it begins.
  bool hostQueryReset = false;
  std::unique_ptr<vk::DiskCache> disk;
  std::unique_ptr<vk::MemoryPool> pool;  // every buffer's memory
  // EPH_VK_STATS set (and VK_KHR_pipeline_executable_properties there): each
  // pipeline built prints the driver's statistics (registers, shared memory...)
  // to stderr, for comparing a kernel's compile with nvcc's (bench/RESULTS.md).
  bool printStatistics = false;
  // VulkanOptions::checkBounds: kernels check their accesses and the first
  // out-of-bounds one of a submission lands in the batch's bounds record
  // (host-visible, bound after every kernel's buffers;
  // runtime/vulkan/BoundsRecord.h), read and cleared when the batch retires.
  // `boundsSites` numbers the checked ops of every kernel emitted so far
  // (each compiled kernel keeps its numbers); prepare() points the numbers of
  // its module's kernels at that module's ops and the others at nothing.
  bool checkBounds = false;
  std::vector<const ir::Op*> boundsSites;

  std::unordered_map<uint64_t, Buffer> buffers;  // by handle
  uint64_t nextHandle = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Pipeline>> pipelines;  // by SPIR-V hash
  std::unordered_map<std::string, std::unique_ptr<vk::CompiledKernel>> compiled;  // by kernelKey
  const ir::Module* module = nullptr;
  bool prepared = false;
  std::unordered_map<const ir::Function*, const KernelInfo*> kernels;  // of `module`, in `compiled`

  // The ring of batches: `ring[cur]` is recorded (or recorded next); the
  // others are idle or submitted, retired in flush order. A batch is flushed
  // (submitted without waiting) once it has `batchCommands` commands and the
  // GPU has run the batches before it, or at `maxBatchCommands`, so the GPU
  // runs it while the host records the next; the host waits only at sync
  // points (a d2h, wait, the end) and when the batch to record next is still
  // running (the ring is full).
  std::vector<Batch> ring;
  size_t cur = 0;
  uint64_t flushes = 0;
  unsigned batchCommands = 0;  // 0: flush only at sync points
  unsigned maxBatchCommands = 0;  // flush here though the GPU is busy (>= batchCommands)
  // The first batch after a sync point goes at kFirstBatch commands (the
  // GPU has nothing to run then: a few get it started while the host records
  // the rest), each next one at twice the last, up to batchCommands.
  unsigned firstBatch = 4;
  unsigned flushAt = firstBatch;
  // How long retire polls a fence before it sleeps (VulkanOptions::spinWaitUs).
  unsigned spinWaitUs = 0;
  // Whether the newest submitted batch is still running.
  bool gpuBusy() const;
  // Timestamps a batch's query pools hold (and a batch resets): two a
  // command, kQueryCapacity at most.
  uint32_t queriesPerBatch = kQueryCapacity;
  Batch& batch() { return ring[cur]; }
  // Hazards across commands not yet behind a barrier, carried across
  // batches (a barrier's first scope is every earlier command of the queue
  // in submission order) and cleared when every batch has retired.
  std::unordered_set<VkBuffer> writtenSinceBarrier, readSinceBarrier;
  // The upload queue (PhysicalDevice::transferQueueIndex), when there is one,
  // VulkanOptions::transferQueue and timeline semaphores: an h2d into a
  // buffer no unretired batch's compute commands use is recorded there, so
  // that it runs beside the compute work. Each upload batch signals the next
  // value of the timeline semaphore `done`; a compute batch waits for the
  // value of the newest upload of a buffer it uses (`uploadedAt`).
  struct Transfer {
    VkQueue queue = VK_NULL_HANDLE;
    VkCommandPool pool = VK_NULL_HANDLE;
    VkSemaphore done = VK_NULL_HANDLE;  // timeline
    uint64_t values = 0;                // handed out so far
    bool timestamps = false;            // host-reset query pools per batch
    std::unordered_set<VkBuffer> written;  // by uploads not yet behind a barrier (like writtenSinceBarrier)
    std::unordered_map<VkBuffer, uint64_t> uploadedAt;
  } xfer;

  std::vector<DispatchTime> times;
  std::vector<CommandTime> timeline;
  // Stamps the start of a transfer or dispatch (stage: its kind's stage) in
  // the open batch and returns the query for stampEnd, or -1 when the pool
  // is full or absent.
  int64_t stampStart(const char* what, std::string name, VkPipelineStageFlagBits stage) {
    Batch& b = batch();
    if (!stamping || !b.queries || b.queriesUsed + 2 > queriesPerBatch) return -1;
    api().vkCmdWriteTimestamp(b.cmd, stage, b.queries, b.queriesUsed);
    b.timed.push_back({what, std::move(name), b.queriesUsed});
    b.queriesUsed += 2;
    return b.timed.back().query;
  }
  void stampEnd(int64_t query, VkPipelineStageFlagBits stage) {
    Batch& b = batch();
    if (query >= 0) api().vkCmdWriteTimestamp(b.cmd, stage, b.queries, uint32_t(query) + 1);
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
  Status makeRing(unsigned batches);
  Status beginRecording(Loc site);
  Status beginUploads(Loc site);
  // After each command recorded: flushes the batch once it is full.
  Status recorded(Loc site);
  void access(std::initializer_list<VkBuffer> reads, std::initializer_list<VkBuffer> writes);
  void access(const std::vector<VkBuffer>& reads, const std::vector<VkBuffer>& writes);
  // Submits the open batch without waiting and moves to the next.
  Status flush(Loc site);
  // Waits for a submitted batch (and every earlier one) and resets it.
  Status retire(Batch& b, Loc site);
  void resetBatch(Batch& b);
  // Flushes, then retires every batch: nothing of this device runs after it.
  Status waitAll(Loc site);
  // Whether a batch not yet retired (or the open one) uses `b`; the newest
  // batch not yet retired (null when none).
  bool inUse(VkBuffer b, bool computeOnly) const;
  Batch* newestBusy();
  void readTimestamps(Batch& b);
  Status uploadOnTransferQueue(Buffer& dst, Buffer stage, Loc site);
  Status openTransferQueue();
  Expected<VkDescriptorSet> allocateSet(VkDescriptorSetLayout layout, Loc site);
  Expected<Pipeline*> pipelineFor(const std::vector<uint32_t>& spirv, uint32_t bindings, uint32_t pushBytes,
                                  const std::string& kernel);
  Status prepareKernel(const ir::Function& k);
  // Emits, validates and builds the pipeline of a kernel not yet compiled.
  Expected<std::unique_ptr<vk::CompiledKernel>> compileKernel(const ir::Function& k);
  Buffer* live(uint64_t handle, Loc site, Status& err);
};

}  // namespace eph::runtime
