// MemoryPool (VulkanMemory.h): first fit in per-type blocks, merged free ranges.
#include "runtime/vulkan/VulkanMemory.h"

#include <utility>

namespace eph::runtime::vk {

MemoryPool::MemoryPool(VkDevice device, uint64_t blockBytes) : device_(device), blockBytes_(blockBytes) {}

MemoryPool::~MemoryPool() {
  releaseCached();
  for (auto& b : blocks_)
    if (b->memory) api().vkFreeMemory(device_, b->memory, nullptr);
}

void MemoryPool::abandon() {
  for (auto& b : blocks_) b->memory = VK_NULL_HANDLE;
  cached_.clear();
  cachedBytes_ = 0;
}

bool MemoryPool::releaseCached() {
  bool any = !cached_.empty();
  for (const Cached& c : cached_) api().vkFreeMemory(device_, c.memory, nullptr);
  cached_.clear();
  cachedBytes_ = 0;
  // Empty blocks too, but the last of each kind.
  for (size_t i = blocks_.size(); i-- > 0;) {
    Block& b = *blocks_[i];
    if (b.live || !b.memory) continue;
    unsigned same = 0;
    for (auto& other : blocks_) same += other->type == b.type && other->mapped == b.mapped;
    if (same <= 1) continue;
    api().vkFreeMemory(device_, b.memory, nullptr);
    blocks_.erase(blocks_.begin() + ptrdiff_t(i));
    any = true;
  }
  return any;
}

VkResult MemoryPool::allocateMemory(uint64_t bytes, uint32_t type, bool map, VkDeviceMemory& memory,
                                    void*& mapped) {
  VkMemoryAllocateInfo info{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  info.allocationSize = bytes;
  info.memoryTypeIndex = type;
  ++stats_.deviceAllocations;
  if (VkResult r = api().vkAllocateMemory(device_, &info, nullptr, &memory); r != VK_SUCCESS) {
    memory = VK_NULL_HANDLE;
    return r;
  }
  mapped = nullptr;
  if (map)
    if (VkResult r = api().vkMapMemory(device_, memory, 0, VK_WHOLE_SIZE, 0, &mapped); r != VK_SUCCESS) {
      api().vkFreeMemory(device_, memory, nullptr);
      memory = VK_NULL_HANDLE;
      return r;
    }
  return VK_SUCCESS;
}

bool MemoryPool::carve(Block& b, const VkMemoryRequirements& req, Allocation& out) {
  uint64_t align = req.alignment ? req.alignment : 1;
  for (auto it = b.free.begin(); it != b.free.end(); ++it) {
    auto [start, length] = *it;
    uint64_t at = (start + align - 1) / align * align;
    if (at + req.size > start + length) continue;
    b.free.erase(it);
    if (at > start) b.free.emplace(start, at - start);
    if (at + req.size < start + length) b.free.emplace(at + req.size, start + length - at - req.size);
    out.memory = b.memory;
    out.offset = at;
    out.size = req.size;
    out.mapped = b.base ? b.base + at : nullptr;
    out.block = &b;
    ++b.live;
    ++stats_.allocations;
    return true;
  }
  return false;
}

VkResult MemoryPool::allocate(const VkMemoryRequirements& req, uint32_t type, bool map, Allocation& out) {
  out = {};
  if (req.size <= blockBytes_ / 2) {
    for (auto& b : blocks_)
      if (b->type == type && b->mapped == map && b->memory && carve(*b, req, out)) return VK_SUCCESS;
    auto b = std::make_unique<Block>();
    void* base = nullptr;
    if (allocateMemory(blockBytes_, type, map, b->memory, base) == VK_SUCCESS) {
      b->type = type;
      b->mapped = map;
      b->base = static_cast<std::byte*>(base);
      b->size = blockBytes_;
      b->free.emplace(0, blockBytes_);
      blocks_.push_back(std::move(b));
      carve(*blocks_.back(), req, out);
      return VK_SUCCESS;
    }
    // No room for a whole block: memory of its own may still fit.
  }
  // A kept dedicated allocation of about this size (at most 1/8 larger):
  // memory of its own always starts at offset 0, so any alignment holds.
  for (auto it = cached_.begin(); it != cached_.end(); ++it)
    if (it->type == type && it->map == map && it->size >= req.size && it->size - req.size <= req.size / 8) {
      out.memory = it->memory;
      out.size = it->size;
      out.mapped = it->mapped;
      out.type = type;
      cachedBytes_ -= it->size;
      cached_.erase(it);
      ++stats_.dedicated;
      return VK_SUCCESS;
    }
  void* mapped = nullptr;
  if (VkResult r = allocateMemory(req.size, type, map, out.memory, mapped); r != VK_SUCCESS) return r;
  out.size = req.size;
  out.mapped = mapped;
  out.type = type;
  ++stats_.dedicated;
  return VK_SUCCESS;
}

void MemoryPool::free(Allocation& a) {
  if (!a.memory) return;
  Block* b = a.block;
  if (!b) {
    --stats_.dedicated;
    if (a.size <= kMaxCachedBytes) {
      cached_.push_back({a.memory, a.size, a.type, a.mapped != nullptr, a.mapped});
      cachedBytes_ += a.size;
      while (cachedBytes_ > kMaxCachedBytes) {
        api().vkFreeMemory(device_, cached_.front().memory, nullptr);
        cachedBytes_ -= cached_.front().size;
        cached_.erase(cached_.begin());
      }
    } else {
      api().vkFreeMemory(device_, a.memory, nullptr);
    }
    a = {};
    return;
  }
  // Back into the free ranges, merged with the neighbours it touches.
  uint64_t start = a.offset, end = a.offset + a.size;
  auto next = b->free.lower_bound(start);
  if (next != b->free.end() && next->first == end) {
    end += next->second;
    next = b->free.erase(next);
  }
  if (next != b->free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      b->free.erase(prev);
    }
  }
  b->free.emplace(start, end - start);
  --b->live;
  --stats_.allocations;
  a = {};
  if (b->live > 0) return;
  // An empty block stays for the next buffers, up to kMaxEmptyBlocks of them
  // (a program that frees its buffers every run and allocates them again
  // would otherwise allocate, and the driver clear, its blocks every run: 2
  // vkAllocateMemory a run, 2 ms on the H200, for a BERT layer);
  // releaseCached frees them. Beyond that it goes unless it is the last of
  // its kind.
  unsigned same = 0, empty = 0;
  for (auto& other : blocks_) {
    same += other->type == b->type && other->mapped == b->mapped;
    empty += other->live == 0;
  }
  if (same <= 1 || empty <= kMaxEmptyBlocks) return;
  api().vkFreeMemory(device_, b->memory, nullptr);
  for (auto it = blocks_.begin(); it != blocks_.end(); ++it)
    if (it->get() == b) {
      blocks_.erase(it);
      break;
    }
}

MemoryPool::Stats MemoryPool::stats() const {
  Stats s = stats_;
  s.blocks = blocks_.size();
  s.cached = cached_.size();
  return s;
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  std::swap(device, o.device);
  std::swap(buffer, o.buffer);
  std::swap(pool, o.pool);
  std::swap(memory, o.memory);
  std::swap(bytes, o.bytes);
  std::swap(mapped, o.mapped);
  return *this;
}

Buffer::~Buffer() {
  if (buffer) api().vkDestroyBuffer(device, buffer, nullptr);
  if (pool) pool->free(memory);
}

}  // namespace eph::runtime::vk
