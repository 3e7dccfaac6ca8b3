// VulkanDevice's buffers: alloc and free, uploads (through staging buffers, on
// the upload queue where there is one), downloads and device-side copies.
#include <algorithm>
#include <cstring>

#include "ir/Layout.h"
#include "runtime/vulkan/VulkanDeviceImpl.h"

namespace eph::runtime {
namespace {

constexpr unsigned kMaxStagingBuffers = 256;            // uploads per batch, at most
constexpr uint64_t kMaxStagedBytes = uint64_t(1) << 30;  // bytes staged by the batches in flight, at most

}  // namespace

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
  bool exhausted = r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY;
  if (exhausted && newestBusy() && !wedged) {  // freed buffers and staging may wait for running batches
    if (Status s = waitAll(site); !s) return s.error();
    r = pool->allocate(req, *type, hostVisible, b.memory);
  }
  exhausted = r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY;
  if (exhausted && !wedged && pool->releaseCached()) r = pool->allocate(req, *type, hostVisible, b.memory);
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

// An h2d on the upload queue: stamped there, behind a barrier only when an
// upload not yet behind one (in this batch or an earlier one still running)
// writes the same buffer.
Status VulkanDevice::Impl::uploadOnTransferQueue(Buffer& dst, Buffer stage, Loc site) {
  if (Status s = beginUploads(site); !s) return s;
  Batch& b = batch();
  if (xfer.written.count(dst.buffer)) {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = mb.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    api().vkCmdPipelineBarrier(b.xferCmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb,
                               0, nullptr, 0, nullptr);
    xfer.written.clear();
    ++stats.barriers;
  }
  bool stamped = stamping && b.xferQueries && b.xferQueriesUsed + 2 <= queriesPerBatch;
  if (stamped) {
    api().vkCmdWriteTimestamp(b.xferCmd, VK_PIPELINE_STAGE_TRANSFER_BIT, b.xferQueries, b.xferQueriesUsed);
    b.xferTimed.push_back({"h2d", "", b.xferQueriesUsed});
  }
  VkBufferCopy region{0, 0, dst.bytes};
  api().vkCmdCopyBuffer(b.xferCmd, stage.buffer, dst.buffer, 1, &region);
  if (stamped) {
    api().vkCmdWriteTimestamp(b.xferCmd, VK_PIPELINE_STAGE_TRANSFER_BIT, b.xferQueries, b.xferQueriesUsed + 1);
    b.xferQueriesUsed += 2;
  }
  xfer.written.insert(dst.buffer);
  xfer.uploadedAt[dst.buffer] = b.uploadValue;
  b.uploaded.insert(dst.buffer);
  b.keep.push_back(std::move(stage));
  return checkValidation(site);
}

Buffer* VulkanDevice::Impl::live(uint64_t handle, Loc site, Status& err) {
  auto it = buffers.find(handle);
  if (it == buffers.end()) {
    err = Error{site, "invalid or freed device buffer handle " + std::to_string(handle)};
    return nullptr;
  }
  return &it->second;
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
  Buffer* b = I.live(handle, site, err);
  if (!b) return err;
  if (I.wedged) {  // the GPU may still use it
    I.abandon(*b);
    I.buffers.erase(handle);
    return I.wedgedError(site);
  }
  // A batch not yet finished uses it: it goes when the newest such batch
  // (and so every earlier one) has finished.
  if (I.inUse(b->buffer, false)) I.newestBusy()->keep.push_back(std::move(*b));
  I.buffers.erase(handle);
  return I.checkValidation(site);
}

Status VulkanDevice::uploadBytes(uint64_t dst, std::span<const std::byte> bytes, Loc site) {
  Status err;
  Buffer* b = impl_->live(dst, site, err);
  if (!b) return err;
  if (bytes.size() != b->bytes)
    return Error{site, "copies " + std::to_string(bytes.size()) + " bytes into a device buffer of " +
                           std::to_string(b->bytes) + " bytes"};
  return uploadAt(dst, 0, bytes, site);
}

// Bytes [at, at + bytes.size()) of a live buffer (the callers check the range).
Status VulkanDevice::uploadAt(uint64_t dst, uint64_t at, std::span<const std::byte> bytes, Loc site) {
  Impl& I = *impl_;
  Status err;
  Buffer* b = I.live(dst, site, err);
  if (!b) return err;
  if (bytes.empty()) return Status::ok();
  // Staging buffers live until their batch has run: submit the batch now and
  // then so that a long run of uploads neither holds all their memory nor
  // runs into the driver's limit on allocations.
  {
    Batch& open = I.batch();
    if (open.stagedBuffers >= kMaxStagingBuffers ||
        open.stagedBytes + bytes.size() > kMaxStagedBytes / I.ring.size())
      if (Status s = I.flush(site); !s) return s;
  }
  auto stage = I.makeBuffer(bytes.size(), VK_BUFFER_USAGE_TRANSFER_SRC_BIT, true, false, site);
  if (!stage) return stage.error();
  std::memcpy(stage->mapped, bytes.data(), bytes.size());
  if (at == 0 && bytes.size() == b->bytes && I.xfer.queue && !I.inUse(b->buffer, true)) {
    if (Status s = I.uploadOnTransferQueue(*b, std::move(*stage), site); !s) return s;
  } else {
    if (Status s = I.beginRecording(site); !s) return s;
    I.access({}, {b->buffer});
    VkBufferCopy region{0, at, bytes.size()};
    int64_t q = I.stampStart("h2d", "", VK_PIPELINE_STAGE_TRANSFER_BIT);
    api().vkCmdCopyBuffer(I.batch().cmd, stage->buffer, b->buffer, 1, &region);
    I.stampEnd(q, VK_PIPELINE_STAGE_TRANSFER_BIT);
    I.batch().keep.push_back(std::move(*stage));
    if (Status s = I.checkValidation(site); !s) return s;
  }
  I.batch().stagedBuffers++;
  I.batch().stagedBytes += bytes.size();
  return I.recorded(site);
}

Status VulkanDevice::downloadBytes(std::span<std::byte> bytes, uint64_t src, Loc site) {
  Status err;
  Buffer* b = impl_->live(src, site, err);
  if (!b) return err;
  if (bytes.size() != b->bytes)
    return Error{site, "copies a device buffer of " + std::to_string(b->bytes) + " bytes into " +
                           std::to_string(bytes.size()) + " bytes"};
  return downloadAt(bytes, src, 0, site);
}

// Bytes [at, at + bytes.size()) of a live buffer (the callers check the range).
Status VulkanDevice::downloadAt(std::span<std::byte> bytes, uint64_t src, uint64_t at, Loc site) {
  Impl& I = *impl_;
  Status err;
  Buffer* b = I.live(src, site, err);
  if (!b) return err;
  if (bytes.empty()) return I.waitAll(site);
  auto stage = I.makeBuffer(bytes.size(), VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, true, site);
  if (!stage) return stage.error();
  if (Status s = I.beginRecording(site); !s) return s;
  I.access({b->buffer}, {});
  VkBufferCopy region{at, 0, bytes.size()};
  int64_t q = I.stampStart("d2h", "", VK_PIPELINE_STAGE_TRANSFER_BIT);
  api().vkCmdCopyBuffer(I.batch().cmd, b->buffer, stage->buffer, 1, &region);
  I.stampEnd(q, VK_PIPELINE_STAGE_TRANSFER_BIT);
  // Make the copy visible to the host before the fence wait returns.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  api().vkCmdPipelineBarrier(I.batch().cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
                             nullptr, 0, nullptr);
  Buffer readback = std::move(*stage);  // outlives the batch
  // The copy is in the newest batch: waiting for it is waiting for all.
  if (Status s = I.waitAll(site); !s) {
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
  api().vkCmdCopyBuffer(I.batch().cmd, from->buffer, to->buffer, 1, &region);
  I.stampEnd(q, VK_PIPELINE_STAGE_TRANSFER_BIT);
  if (Status s = I.checkValidation(site); !s) return s;
  return I.recorded(site);
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

// Views (buffer.view): the window's bytes [offset x stride, + count x stride).
Status VulkanDevice::viewUpload(uint64_t dst, uint64_t offset, const interp::BufferData& src, Loc site) {
  Status err;
  Buffer* b = impl_->live(dst, site, err);
  if (!b) return err;
  uint64_t stride = ir::storageStride(src.elemType), n = src.elems.size();
  if (stride == 0 || offset > b->bytes / stride || n > b->bytes / stride - offset)
    return Error{site, "view of elements [" + std::to_string(offset) + ", " + std::to_string(offset) + " + " +
                           std::to_string(n) + ") is out of range for its device buffer"};
  std::vector<std::byte> bytes;
  if (Status s = ir::encodeBuffer(src, bytes, site); !s) return s;
  return uploadAt(dst, offset * stride, bytes, site);
}

Status VulkanDevice::viewDownload(interp::BufferData& dst, uint64_t src, uint64_t offset, Loc site) {
  Status err;
  Buffer* b = impl_->live(src, site, err);
  if (!b) return err;
  uint64_t stride = ir::storageStride(dst.elemType), n = dst.elems.size();
  if (stride == 0 || offset > b->bytes / stride || n > b->bytes / stride - offset)
    return Error{site, "view of elements [" + std::to_string(offset) + ", " + std::to_string(offset) + " + " +
                           std::to_string(n) + ") is out of range for its device buffer"};
  std::vector<std::byte> bytes(n * stride);
  if (Status s = downloadAt(bytes, src, offset * stride, site); !s) return s;
  ir::decodeBuffer(bytes, dst);
  return Status::ok();
}

}  // namespace eph::runtime
