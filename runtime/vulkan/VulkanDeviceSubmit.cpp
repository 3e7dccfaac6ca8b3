// VulkanDevice's ring of batches: recording into the open batch, barriers
// between dependent commands (across batches too), submitting a full batch
// without waiting (flush), waiting for one when the ring is full or for all
// at sync points (retire, waitAll), and the GPU timestamps read back when a
// batch has run (takeTimeline).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "runtime/vulkan/BoundsRecord.h"
#include "runtime/vulkan/VulkanDeviceImpl.h"
#include "targets/spirv/Spirv.h"

namespace eph::runtime {
namespace {

constexpr uint64_t kFenceTimeoutNs = 600ull * 1000 * 1000 * 1000;

}  // namespace

// The ring: per batch a compute command buffer and fence (and an upload
// command buffer and fence where there is an upload queue), a query pool per
// queue when profiling, and a bounds record when checking bounds.
Status VulkanDevice::Impl::makeRing(unsigned batches) {
  ring.resize(std::max(batches, 1u));
  VkCommandBufferAllocateInfo cb{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cb.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cb.commandBufferCount = 1;
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkQueryPoolCreateInfo qp{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qp.queryType = VK_QUERY_TYPE_TIMESTAMP;
  // A batch's commands at most and a d2h after them, two stamps each.
  if (batchCommands) queriesPerBatch = std::min<uint64_t>(kQueryCapacity, 2 * (uint64_t(maxBatchCommands) + 1));
  qp.queryCount = queriesPerBatch;
  for (Batch& b : ring) {
    cb.commandPool = commandPool;
    if (VkResult r = api().vkAllocateCommandBuffers(device, &cb, &b.cmd); r != VK_SUCCESS)
      return vkError({}, "vkAllocateCommandBuffers failed", r);
    if (VkResult r = api().vkCreateFence(device, &fi, nullptr, &b.fence); r != VK_SUCCESS)
      return vkError({}, "vkCreateFence failed", r);
    if (profile && physical.timestampValidBits > 0 &&
        api().vkCreateQueryPool(device, &qp, nullptr, &b.queries) != VK_SUCCESS)
      b.queries = VK_NULL_HANDLE;  // nothing is stamped
    if (b.queries && hostQueryReset) api().vkResetQueryPool(device, b.queries, 0, queriesPerBatch);
    if (xfer.queue) {
      cb.commandPool = xfer.pool;
      if (VkResult r = api().vkAllocateCommandBuffers(device, &cb, &b.xferCmd); r != VK_SUCCESS)
        return vkError({}, "vkAllocateCommandBuffers failed (upload queue)", r);
      if (VkResult r = api().vkCreateFence(device, &fi, nullptr, &b.xferFence); r != VK_SUCCESS)
        return vkError({}, "vkCreateFence failed (upload queue)", r);
      if (b.queries && xfer.timestamps && api().vkCreateQueryPool(device, &qp, nullptr, &b.xferQueries) != VK_SUCCESS)
        b.xferQueries = VK_NULL_HANDLE;
      if (b.xferQueries) api().vkResetQueryPool(device, b.xferQueries, 0, queriesPerBatch);
    }
    if (checkBounds) {
      auto record = makeBuffer(spirv::kBoundsRecordWords * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true, true, {});
      if (!record) return record.error();
      b.boundsRecord = std::move(*record);
      std::memset(b.boundsRecord.mapped, 0, b.boundsRecord.bytes);
    }
  }
  return Status::ok();
}

Status VulkanDevice::Impl::beginRecording(Loc site) {
  if (wedged) return wedgedError(site);
  Batch& b = batch();
  if (b.recording) return Status::ok();
  if (b.submitted || b.xferSubmitted)  // the ring is full: wait for its oldest batch
    if (Status s = retire(b, site); !s) return s;
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (VkResult r = api().vkBeginCommandBuffer(b.cmd, &begin); r != VK_SUCCESS)
    return vkError(site, "vkBeginCommandBuffer failed", r);
  if (b.queries && !hostQueryReset) api().vkCmdResetQueryPool(b.cmd, b.queries, 0, queriesPerBatch);
  b.recording = true;
  return Status::ok();
}

// The open batch's upload command buffer; its uploads will signal the next
// value of the upload timeline.
Status VulkanDevice::Impl::beginUploads(Loc site) {
  if (wedged) return wedgedError(site);
  Batch& b = batch();
  if (b.xferRecording) return Status::ok();
  if (b.submitted || b.xferSubmitted)
    if (Status s = retire(b, site); !s) return s;
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (VkResult r = api().vkBeginCommandBuffer(b.xferCmd, &begin); r != VK_SUCCESS)
    return vkError(site, "vkBeginCommandBuffer failed", r);
  b.xferRecording = true;
  b.uploadValue = ++xfer.values;
  return Status::ok();
}

// A full batch (flushAt commands: 4 after a sync point, then twice as many
// each time, up to batchCommands) goes when the GPU has nothing left to run:
// submitted while it still runs the one before, it would only queue behind
// it, and the host might then wait for a ring slot. Past maxBatchCommands it
// goes anyway.
Status VulkanDevice::Impl::recorded(Loc site) {
  Batch& b = batch();
  if (!batchCommands || ++b.commands < std::min(flushAt, batchCommands)) return Status::ok();
  if (b.commands >= maxBatchCommands || !gpuBusy()) {
    flushAt = std::min(flushAt * 2, batchCommands);
    return flush(site);
  }
  return Status::ok();
}

bool VulkanDevice::Impl::gpuBusy() const {
  const Batch* newest = nullptr;
  for (const Batch& b : ring)
    if ((b.submitted || b.xferSubmitted) && (!newest || b.seq > newest->seq)) newest = &b;
  if (!newest) return false;
  VkFence f = newest->submitted ? newest->fence : newest->xferFence;
  return api().vkGetFenceStatus(device, f) == VK_NOT_READY;  // an error shows when it retires
}

// Records a barrier when this command depends on an earlier one not yet
// behind a barrier: it reads or writes what one wrote, or writes what one
// read. The earlier one may be in an earlier batch still running: the
// barrier orders every command submitted before it on the queue.
void VulkanDevice::Impl::access(const std::vector<VkBuffer>& reads, const std::vector<VkBuffer>& writes) {
  Batch& cb = batch();
  bool hazard = false;
  for (VkBuffer b : reads) hazard = hazard || writtenSinceBarrier.count(b);
  for (VkBuffer b : writes) hazard = hazard || writtenSinceBarrier.count(b) || readSinceBarrier.count(b);
  if (hazard) {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                       VK_ACCESS_TRANSFER_WRITE_BIT;
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    api().vkCmdPipelineBarrier(cb.cmd, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
    writtenSinceBarrier.clear();
    readSinceBarrier.clear();
    ++stats.barriers;
  }
  for (VkBuffer b : reads) readSinceBarrier.insert(b);
  for (VkBuffer b : writes) writtenSinceBarrier.insert(b);
  for (const auto* list : {&reads, &writes})
    for (VkBuffer b : *list) {
      cb.computeUsed.insert(b);
      if (auto it = xfer.uploadedAt.find(b); it != xfer.uploadedAt.end())
        cb.waitUpload = std::max(cb.waitUpload, it->second);
    }
}

void VulkanDevice::Impl::access(std::initializer_list<VkBuffer> reads, std::initializer_list<VkBuffer> writes) {
  access(std::vector<VkBuffer>(reads), std::vector<VkBuffer>(writes));
}

bool VulkanDevice::Impl::inUse(VkBuffer buf, bool computeOnly) const {
  for (const Batch& b : ring)
    if (b.busy() && (computeOnly ? b.computeUsed.count(buf) > 0 : b.uses(buf))) return true;
  return false;
}

Batch* VulkanDevice::Impl::newestBusy() {
  if (ring.empty()) return nullptr;
  if (batch().recording || batch().xferRecording) return &batch();
  Batch* newest = nullptr;
  for (Batch& b : ring)
    if ((b.submitted || b.xferSubmitted) && (!newest || b.seq > newest->seq)) newest = &b;
  return newest;
}

// After a submission has run: each timed command's interval, in ms from the
// submission's first start (stamps wrap at timestampValidBits).
// Both queues' stamps count the device's one timestamp clock, so the upload
// queue's commands go on the same axis (in recording order per queue).
void VulkanDevice::Impl::readTimestamps(Batch& b) {
  struct Stamped {
    const Batch::TimedCommand* c;
    uint64_t t0, t1;
  };
  std::vector<Stamped> all;
  uint64_t mask = physical.timestampValidBits >= 64 ? ~0ull : (1ull << physical.timestampValidBits) - 1;
  auto read = [&](VkQueryPool pool, uint32_t used, const std::vector<Batch::TimedCommand>& cmds) {
    if (!pool || cmds.empty()) return;
    std::vector<uint64_t> stamps(used);
    if (api().vkGetQueryPoolResults(device, pool, 0, used, stamps.size() * sizeof(uint64_t), stamps.data(),
                                    sizeof(uint64_t), VK_QUERY_RESULT_64_BIT) != VK_SUCCESS)
      return;
    for (const Batch::TimedCommand& c : cmds) all.push_back({&c, stamps[c.query] & mask, stamps[c.query + 1] & mask});
  };
  read(b.xferQueries, b.xferQueriesUsed, b.xferTimed);
  read(b.queries, b.queriesUsed, b.timed);
  if (all.empty()) return;
  double msPerTick = physical.props.limits.timestampPeriod * 1e-6;
  uint64_t first = all.front().t0;
  for (const Stamped& s : all) first = std::min(first, s.t0);
  for (const Stamped& s : all) {
    CommandTime t{s.c->what, s.c->name, unsigned(b.seq), double((s.t0 - first) & mask) * msPerTick,
                  double((s.t1 - first) & mask) * msPerTick};
    if (t.endMs < t.startMs) t.endMs = t.startMs;  // an end stamp may not precede its start
    if (s.c->what == "dispatch") times.push_back({s.c->name, t.endMs - t.startMs});
    timeline.push_back(std::move(t));
  }
}

// Submits the open batch without waiting for it, and moves to the next.
// When its compute commands wait for its own uploads (a timeline value
// signalled first) the uploads go first; otherwise the compute commands do,
// so that the uploads start while the compute work runs rather than before.
Status VulkanDevice::Impl::flush(Loc site) {
  if (ring.empty()) return Status::ok();  // a device that failed to open
  Batch& b = batch();
  if (!b.recording && !b.xferRecording) return Status::ok();
  bool compute = b.recording, upload = b.xferRecording;
  bool chained = compute && upload && b.waitUpload == b.uploadValue;
  b.recording = b.xferRecording = false;
  b.seq = flushes++;
  Status result;
  auto submitUploads = [&] {
    if (!upload || !result) return;
    if (VkResult e = api().vkEndCommandBuffer(b.xferCmd); e != VK_SUCCESS) {
      result = vkError(site, "vkEndCommandBuffer failed", e);
      return;
    }
    VkTimelineSemaphoreSubmitInfo values{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
    values.signalSemaphoreValueCount = 1;
    values.pSignalSemaphoreValues = &b.uploadValue;
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.pNext = &values;
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &b.xferCmd;
    submit.signalSemaphoreCount = 1;
    submit.pSignalSemaphores = &xfer.done;
    ++stats.submits;
    if (VkResult r = api().vkQueueSubmit(xfer.queue, 1, &submit, b.xferFence); r != VK_SUCCESS) {
      // Later compute batches may wait for this value: nothing can run safely.
      wedged = true;
      result = vkError(site, "submitting uploads failed", r);
    } else {
      b.xferSubmitted = true;
    }
  };
  auto submitCompute = [&] {
    if (!compute || !result) return;
    if (b.boundsPending) {  // the bounds record's writes, visible to the host after the fence
      VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
      mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
      api().vkCmdPipelineBarrier(b.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb,
                                 0, nullptr, 0, nullptr);
    }
    if (VkResult e = api().vkEndCommandBuffer(b.cmd); e != VK_SUCCESS) {
      result = vkError(site, "vkEndCommandBuffer failed", e);
      return;
    }
    VkPipelineStageFlags waitStage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    VkTimelineSemaphoreSubmitInfo values{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
    values.waitSemaphoreValueCount = 1;
    values.pWaitSemaphoreValues = &b.waitUpload;
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    if (b.waitUpload) {
      submit.pNext = &values;
      submit.waitSemaphoreCount = 1;
      submit.pWaitSemaphores = &xfer.done;
      submit.pWaitDstStageMask = &waitStage;
    }
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &b.cmd;
    ++stats.submits;
    if (VkResult r = api().vkQueueSubmit(queue, 1, &submit, b.fence); r != VK_SUCCESS)
      result = vkError(site, "submitting device work failed", r);
    else
      b.submitted = true;
  };
  if (chained) {
    submitUploads();
    submitCompute();
  } else {
    submitCompute();
    submitUploads();
  }
  if (!b.submitted && !b.xferSubmitted && !wedged) resetBatch(b);
  cur = (cur + 1) % ring.size();
  if (!result) return result;
  return checkValidation(site);
}

// Waits for a submitted batch, and before it every batch flushed earlier.
// Reports the first error (a lost device, an access out of bounds) after
// retiring them all.
Status VulkanDevice::Impl::retire(Batch& target, Loc site) {
  Status first;
  for (;;) {
    Batch* b = nullptr;
    for (Batch& x : ring)
      if ((x.submitted || x.xferSubmitted) && x.seq <= target.seq && (!b || x.seq < b->seq)) b = &x;
    if (!b) return first;
    VkFence fences[2];
    uint32_t n = 0;
    if (b->submitted) fences[n++] = b->fence;
    if (b->xferSubmitted) fences[n++] = b->xferFence;
    VkResult r = VK_NOT_READY;
    // Poll first (VulkanOptions::spinWaitUs): waking from vkWaitForFences'
    // sleep costs the host tens of microseconds after the GPU is done.
    if (spinWaitUs) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spinWaitUs);
      do {
        r = VK_SUCCESS;
        for (uint32_t i = 0; i < n && r == VK_SUCCESS; ++i) r = api().vkGetFenceStatus(device, fences[i]);
        if (r == VK_NOT_READY) std::this_thread::yield();
      } while (r == VK_NOT_READY && std::chrono::steady_clock::now() < until);
    }
    if (r == VK_NOT_READY) r = api().vkWaitForFences(device, n, fences, VK_TRUE, kFenceTimeoutNs);
    if (r == VK_TIMEOUT || r == VK_ERROR_DEVICE_LOST) {
      // Command buffers, descriptor sets and kept buffers may still be in
      // use: reset and free nothing.
      wedged = true;
      for (Batch& x : ring)
        for (Buffer& k : x.keep) abandon(k);
      return Error{site, r == VK_TIMEOUT ? "device work did not finish within 10 minutes on " + name()
                                         : "the device was lost while running submitted work on " + name() +
                                               " (a kernel faulted or ran too long)"};
    }
    Status s;
    if (r != VK_SUCCESS) s = vkError(site, "waiting for device work failed", r);
    else readTimestamps(*b);
    api().vkResetFences(device, n, fences);
    if (std::exchange(b->boundsPending, false)) {
      Status bounds = vk::takeBoundsError(b->boundsRecord.mapped, boundsSites);  // clears the record
      if (s) s = bounds;
    }
    b->submitted = b->xferSubmitted = false;
    resetBatch(*b);
    if (first && !s) first = s;
  }
}

// A batch that has run (or was never submitted): empty again.
void VulkanDevice::Impl::resetBatch(Batch& b) {
  b.commands = 0;
  b.uploadValue = b.waitUpload = 0;
  b.computeUsed.clear();
  b.uploaded.clear();
  b.timed.clear();
  b.xferTimed.clear();
  if (b.queries && hostQueryReset && b.queriesUsed) api().vkResetQueryPool(device, b.queries, 0, b.queriesUsed);
  if (b.xferQueries && b.xferQueriesUsed) api().vkResetQueryPool(device, b.xferQueries, 0, b.xferQueriesUsed);
  b.queriesUsed = b.xferQueriesUsed = 0;
  b.boundsPending = false;
  api().vkResetCommandBuffer(b.cmd, 0);
  if (b.xferCmd) api().vkResetCommandBuffer(b.xferCmd, 0);
  for (size_t i = 0; i < b.pools.size() && i <= b.currentPool; ++i) api().vkResetDescriptorPool(device, b.pools[i], 0);
  b.currentPool = 0;
  b.keep.clear();
  b.stagedBytes = 0;
  b.stagedBuffers = 0;
}

Status VulkanDevice::Impl::waitAll(Loc site) {
  if (wedged) return wedgedError(site);
  Status result = flush(site);
  flushAt = firstBatch;
  if (Batch* newest = newestBusy(); newest && !wedged) {
    Status s = retire(*newest, site);
    if (result) result = s;
  }
  if (wedged) return result ? wedgedError(site) : result;
  // Nothing runs now: no command is left to order against.
  writtenSinceBarrier.clear();
  readSinceBarrier.clear();
  xfer.written.clear();
  xfer.uploadedAt.clear();
  if (!result) return result;
  return checkValidation(site);
}

Status VulkanDevice::wait(Loc site) { return impl_->waitAll(site); }

std::vector<VulkanDevice::DispatchTime> VulkanDevice::takeDispatchTimes() { return std::exchange(impl_->times, {}); }
void VulkanDevice::setTimestamps(bool on) { impl_->stamping = on; }
std::vector<VulkanDevice::CommandTime> VulkanDevice::takeTimeline() { return std::exchange(impl_->timeline, {}); }

}  // namespace eph::runtime
