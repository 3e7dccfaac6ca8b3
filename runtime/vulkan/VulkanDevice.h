// VulkanDevice: runs host programs' device work through Vulkan compute.
//
// - Device selection: VulkanOptions::deviceIndex, else the EPH_DEVICE
//   variable, else the first real GPU, else the first device (a CPU driver
//   such as lavapipe).
// - Capabilities are read from the driver into DeviceCaps (subgroup size,
//   16/64-bit types, float atomics, limits, memory).
// - Buffers live in device-local memory; h2d and d2h go through host-visible
//   staging buffers. Their memory is carved from 64 MiB blocks
//   (VulkanMemory.h: no vkAllocateMemory per buffer; memoryStats). A buffer
//   may be as large as the device binds to a kernel (DeviceCaps::
//   maxBufferBytes: the smallest of maxStorageBufferRange,
//   maxMemoryAllocationSize and the largest device-local heap); a larger one
//   is an error at its alloc naming the size and the limit.
// - prepare() compiles every kernel of a module to SPIR-V (targets/spirv) and
//   creates its pipeline, through a pipeline cache kept in memory and on disk
//   ($XDG_CACHE_HOME/ephc, else ~/.cache/ephc; one file per SPIR-V module,
//   keyed by its hash, the device, the driver version and ephc's version).
// - Device work is recorded into batches (a command buffer per queue) from a
//   small ring (VulkanOptions::batchesInFlight): a batch is submitted
//   without waiting once it holds VulkanOptions::batchCommands commands and
//   the GPU has run the ones before (at maxBatchCommands in any case), so
//   the GPU runs it while the host records the next. The host waits only at
//   sync points (a download, wait, the end of runHost; each waits for every
//   batch) and when the batch to record next still runs (the ring is full).
//   A freed buffer that a batch not yet finished uses is destroyed, and its
//   memory reused, only once that batch has finished. A pipeline barrier
//   goes only between dependent commands (one that reads or writes a buffer
//   an earlier unbarriered command wrote, or writes one it read), in the
//   same batch or an earlier one still running, so independent transfers
//   and dispatches may overlap.
//   Where the device has a second queue for transfers (VulkanOptions::
//   transferQueue) and timeline semaphores, an h2d into a buffer no
//   unfinished batch's compute work uses goes there, and a compute batch
//   waits for those uploads (the semaphore's value) only when it uses a
//   buffer they write. With VulkanOptions::profile (or
//   EPH_PROFILE=1) every transfer and dispatch is timed with GPU timestamps
//   (takeTimeline); without, nothing is stamped.
// - With validation (VulkanOptions::validation or EPH_VALIDATION=1) the
//   Khronos validation layer runs, and any message it sends makes the next
//   device call fail with the message.
//
// Every failure is an Error value; nothing throws out of this library.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/Device.h"

namespace eph::runtime {

struct VulkanOptions {
  // Which device (as `ephc devices` numbers them); -1: EPH_DEVICE, else the
  // first GPU, else the first device.
  int deviceIndex = -1;
  // Enable VK_LAYER_KHRONOS_validation and fail on any message it sends.
  // EPH_VALIDATION=1 turns it on too.
  bool validation = false;
  // Where pipeline-cache files go: empty for EPH_PIPELINE_CACHE, else the
  // default directory; "off" for no disk cache.
  std::string cacheDir;
  // Capabilities to treat as absent though the device has them ("float64",
  // "int64", "float16", "int8", "int16", "atomicInt64", "atomicFloat32Add",
  // "atomicFloat64Add", "cooperativeMatrix" (both kinds), "workgroupMatrix"):
  // tests use it to check the errors and fallbacks of a device without them.
  std::vector<std::string> withoutCaps;
  // Run uploads on a second queue where the device has one (a transfer-only
  // family: a GPU's copy engines), so that they overlap compute.
  // EPH_VK_TRANSFER_QUEUE=0 turns it off too.
  bool transferQueue = true;
  // Tests: on a device with one queue (lavapipe), record uploads as on an
  // upload queue (their own command buffers, ordered by the timeline
  // semaphore) and submit them to the compute queue, so that the upload-queue
  // path runs where no second queue exists.
  bool uploadsOnComputeQueue = false;
  // Stamp every transfer and dispatch with GPU timestamps (takeDispatchTimes,
  // takeTimeline). Off, no query pool is made and nothing is stamped: a
  // timestamp is a command and a query to reset and read back per command.
  // EPH_PROFILE=1 turns it on too.
  bool profile = false;
  // Bounds checks in every kernel (`ephc run --check-bounds`, EPH_CHECK_BOUNDS=1):
  // an access out of bounds is skipped and the first of a submission is the
  // interpreter's error (index, length, invocation) at the next sync point.
  // Off, an access out of bounds is undefined (robust buffer access is off).
  bool checkBounds = false;
  // Pipelined submission: the host records a batch (one command buffer per
  // queue) while the GPU runs the one before. A batch is submitted without
  // waiting once it holds `batchCommands` commands and the GPU has finished
  // the batches before it (so that it neither idles nor queues up work), and
  // at `maxBatchCommands` commands even when it has not; up to
  // `batchesInFlight` batches are recorded or running at once (the host
  // waits for the oldest when all are). batchCommands 0: submit only at sync
  // points (one batch between them). The first batch after a sync point goes
  // at 4 commands, each next at twice the last until batchCommands: the GPU
  // starts while the host records (an encoder's run of 18 dispatches on the
  // H200: 1.39-1.49 -> 1.12-1.17 ms wall). EPH_VK_BATCH, EPH_VK_BATCH_MAX and
  // EPH_VK_IN_FLIGHT set them too.
  unsigned batchCommands = 256;
  unsigned maxBatchCommands = 4096;
  unsigned batchesInFlight = 3;
  // The first batch after a sync point goes at this many commands
  // (EPH_VK_FIRST_BATCH).
  unsigned firstBatch = 4;
  // Waiting for a batch, the host first polls its fence for up to this many
  // microseconds before it sleeps in vkWaitForFences (EPH_VK_SPIN_US); -1:
  // the default for the device.
  int spinWaitUs = -1;
};

// One Vulkan device as `ephc devices` shows it.
struct VulkanDeviceInfo {
  int index = 0;
  std::string type;  // "discrete GPU", "integrated GPU", "virtual GPU", "CPU", "other"
  DeviceCaps caps;
};

// Every Vulkan device of this machine, or an error saying why there are none
// (no loader, no driver, no device).
Expected<std::vector<VulkanDeviceInfo>> listVulkanDevices();

class VulkanDevice : public Device {
 public:
  static Expected<std::unique_ptr<VulkanDevice>> open(const VulkanOptions& options = {});
  ~VulkanDevice() override;

  std::string_view target() const override { return "vulkan"; }
  const DeviceCaps& caps() const override;
  Status prepare(const ir::Module& m) override;

  Expected<uint64_t> alloc(const ir::Type* bufferType, uint64_t count, Loc site) override;
  Status free(uint64_t handle, Loc site) override;
  Status upload(uint64_t dst, const interp::BufferData& src, Loc site) override;
  Status download(interp::BufferData& dst, uint64_t src, Loc site) override;
  Status dispatch(const ir::Function& kernel, std::array<uint32_t, 3> groups,
                  std::span<const interp::RtValue> args, Loc site) override;
  Status wait(Loc site) override;

  // Raw storage bytes (ir/Layout.h; Device::uploadBytes): `bytes` must be
  // the buffer's whole size.
  Status uploadBytes(uint64_t dst, std::span<const std::byte> bytes, Loc site = {}) override;
  Status downloadBytes(std::span<std::byte> bytes, uint64_t src, Loc site = {}) override;
  // On the device (vkCmdCopyBuffer in the open batch), not through the host.
  Status copyBytes(uint64_t dst, uint64_t src, uint64_t bytes, Loc site) override;
  // Views (buffer.view): a view is bound as a descriptor range of its
  // buffer, so its byte offset must be a multiple of the device's
  // minStorageBufferOffsetAlignment (DeviceCaps::storageBufferOffsetAlignment);
  // else the dispatch is an error naming both.
  bool supportsViews() const override { return true; }
  Status viewUpload(uint64_t dst, uint64_t offset, const interp::BufferData& src, Loc site) override;
  Status viewDownload(interp::BufferData& dst, uint64_t src, uint64_t offset, Loc site) override;
  // Size in bytes of a live buffer (0 for an unknown handle).
  uint64_t bufferBytes(uint64_t handle) const;

  // GPU time of each dispatch that has finished since the last call, in
  // submission order (empty where the queue has no timestamps).
  struct DispatchTime {
    std::string kernel;
    double ms = 0;
  };
  std::vector<DispatchTime> takeDispatchTimes();
  // With VulkanOptions::profile: whether commands recorded from now on are
  // stamped (on by default), for a caller that times some runs on the host's
  // clock without the stamps' cost (eph_tensor_bench's wall time).
  void setTimestamps(bool on);

  // GPU timestamps of every transfer and dispatch that has finished since
  // the last call, in recording order: where transfers overlap compute. A
  // command's start is stamped when all earlier commands of its kind
  // (transfers or dispatches) have finished, or a barrier it waits behind
  // has cleared; its end when it and those have finished. Times are in ms
  // from the first start of the same submission (one batch).
  struct CommandTime {
    std::string what;  // "h2d", "d2h", "copy" or "dispatch"
    std::string name;  // the kernel of a dispatch; else empty
    unsigned submission = 0;
    double startMs = 0, endMs = 0;
  };
  std::vector<CommandTime> takeTimeline();
  // Whether uploads run on their own queue (VulkanOptions::transferQueue and
  // a device with a second queue): each submission is then two command
  // buffers where it has uploads.
  bool hasUploadQueue() const;

  // How prepare() found its kernels and their pipelines. A kernel whose key
  // (kernelKey) this device has prepared before is `reused`: no SPIR-V is
  // emitted and no pipeline looked up. Each other kernel is `emitted` (and
  // validated), and its pipeline found by its SPIR-V's hash in memory, or
  // built with data from the disk cache, or compiled.
  struct PipelineStats {
    unsigned reused = 0;      // kernels found by their key: nothing emitted
    unsigned emitted = 0;     // kernels emitted to SPIR-V and validated (or found unfit)
    unsigned fromMemory = 0;  // same SPIR-V already built by this device
    unsigned fromDisk = 0;    // pipeline-cache data found on disk
    unsigned compiled = 0;    // no cache data: compiled by the driver, then saved
    unsigned barriers = 0;    // pipeline barriers recorded so far
    unsigned submits = 0;     // command buffers submitted so far
  };
  PipelineStats stats() const;

  // Where buffer memory came from (VulkanMemory.h's MemoryPool).
  struct MemoryStats {
    uint64_t deviceAllocations = 0;  // vkAllocateMemory calls so far
    uint64_t blocks = 0;             // 64 MiB blocks live now
    uint64_t dedicated = 0;          // buffers with memory of their own, live now
    uint64_t allocations = 0;        // buffers (and staging buffers) carved from blocks, live now
    uint64_t cached = 0;             // freed dedicated memory kept for reuse (VulkanMemory.h)
  };
  MemoryStats memoryStats() const;

  // Validation messages not yet reported (they fail the next device call too).
  std::vector<std::string> takeValidationMessages();

  // The SPIR-V prepare() made for a kernel (empty if none).
  std::vector<uint32_t> spirvOf(const ir::Function& kernel) const;

  // What a kernel's pipeline is kept by: its text and the text of the device
  // functions it calls (ir::kernelText), and what of the device's
  // capabilities and the bounds-check option changes its SPIR-V
  // (spirv::emitKey). prepare() emits SPIR-V only for a kernel whose key it
  // has not seen.
  static std::string kernelKey(const ir::Function& kernel, const DeviceCaps& caps, bool checkBounds);

  struct Impl;
  Status uploadAt(uint64_t dst, uint64_t at, std::span<const std::byte> bytes, Loc site);
  Status downloadAt(std::span<std::byte> bytes, uint64_t src, uint64_t at, Loc site);

 private:
  explicit VulkanDevice(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace eph::runtime
