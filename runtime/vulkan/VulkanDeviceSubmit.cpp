// VulkanDevice's batches: recording into the open command buffers, barriers
// between dependent commands, submission and the wait at sync points, and the
// GPU timestamps read back after each submission (takeTimeline).
#include <algorithm>
#include <utility>

#include "runtime/vulkan/BoundsRecord.h"
#include "runtime/vulkan/VulkanDeviceImpl.h"

namespace eph::runtime {
namespace {

constexpr uint64_t kFenceTimeoutNs = 600ull * 1000 * 1000 * 1000;

}  // namespace

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

Status VulkanDevice::wait(Loc site) { return impl_->submitAndWait(site); }

std::vector<VulkanDevice::DispatchTime> VulkanDevice::takeDispatchTimes() { return std::exchange(impl_->times, {}); }
std::vector<VulkanDevice::CommandTime> VulkanDevice::takeTimeline() { return std::exchange(impl_->timeline, {}); }

}  // namespace eph::runtime
