// Device memory for VulkanDevice's buffers, carved from large blocks: a
// vkAllocateMemory per buffer is slow (a system call and driver bookkeeping
// each), and drivers cap the number of live allocations (4096 is common), so
// a program with many buffers would run into the cap.
//
// MemoryPool keeps, per memory type, blocks of kBlockBytes (64 MiB) of
// VkDeviceMemory; a buffer's memory is the first free range of a block that
// holds it at its required alignment; freed ranges merge with their free
// neighbours and are reused. A request larger than half a block gets memory
// of its own (a dedicated allocation), as does one no block can hold; a
// freed dedicated allocation is kept (up to kMaxCachedBytes in all) for a
// later request of about its size, as PyTorch's caching allocator does: a
// program that frees and allocates large buffers every run (a tensor
// program's outputs) would otherwise make a vkAllocateMemory (a system call,
// and drivers clear new memory) per buffer per run. releaseCached gives
// them back.
// Host-visible blocks are mapped once, when made, and stay mapped. An empty
// block is kept for the next buffers (up to kMaxEmptyBlocks; the last of
// its type always).
//
//   vk::MemoryPool pool(device);
//   vk::MemoryPool::Allocation a;
//   if (VkResult r = pool.allocate(req, typeIndex, /*map=*/false, a); r != VK_SUCCESS) ...
//   vkBindBufferMemory(device, buffer, a.memory, a.offset);
//   ...
//   pool.free(a);
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "runtime/vulkan/VulkanApi.h"

namespace eph::runtime::vk {

class MemoryPool {
 public:
  static constexpr uint64_t kBlockBytes = uint64_t(64) << 20;
  static constexpr uint64_t kMaxCachedBytes = uint64_t(2) << 30;
  static constexpr unsigned kMaxEmptyBlocks = 8;  // empty blocks kept (512 MiB at most)

  struct Block;
  struct Allocation {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    uint64_t offset = 0, size = 0;
    void* mapped = nullptr;  // host address of `offset` where mapped
    Block* block = nullptr;  // null for a dedicated allocation
    uint32_t type = 0;       // memory type
  };

  explicit MemoryPool(VkDevice device, uint64_t blockBytes = kBlockBytes);
  // Frees every block: the buffers bound to them must be destroyed first.
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // Memory of type `type` for `req` (size and alignment), mapped when `map`.
  // The VkResult of vkAllocateMemory or vkMapMemory on failure.
  VkResult allocate(const VkMemoryRequirements& req, uint32_t type, bool map, Allocation& out);
  // Gives an allocation back (a no-op for an empty one); `a` is emptied.
  void free(Allocation& a);
  // After a lost device: forgets every block without freeing it (the GPU
  // may still use it).
  void abandon();
  // Frees the dedicated allocations and the empty blocks kept for reuse
  // (before retrying an allocation that ran out of memory). Whether there
  // were any.
  bool releaseCached();

  struct Stats {
    uint64_t deviceAllocations = 0;  // vkAllocateMemory calls so far
    uint64_t blocks = 0;             // blocks live now
    uint64_t dedicated = 0;          // dedicated allocations live now
    uint64_t allocations = 0;        // sub-allocations live now
    uint64_t cached = 0;             // freed dedicated allocations kept for reuse
  };
  Stats stats() const;

  struct Block {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    uint32_t type = 0;
    bool mapped = false;
    std::byte* base = nullptr;
    uint64_t size = 0;
    std::map<uint64_t, uint64_t> free;  // offset -> length, disjoint, merged
    uint64_t live = 0;                  // allocations in it
  };

 private:
  // Carves `req` from `b`; false when no free range holds it.
  bool carve(Block& b, const VkMemoryRequirements& req, Allocation& out);
  VkResult allocateMemory(uint64_t bytes, uint32_t type, bool map, VkDeviceMemory& memory, void*& mapped);

  VkDevice device_;
  uint64_t blockBytes_;
  std::vector<std::unique_ptr<Block>> blocks_;
  struct Cached {
    VkDeviceMemory memory;
    uint64_t size;
    uint32_t type;
    bool map;
    void* mapped;
  };
  std::vector<Cached> cached_;  // oldest first
  uint64_t cachedBytes_ = 0;
  Stats stats_;
};

// A VkBuffer with its memory (from a MemoryPool); `mapped` for host-visible
// (staging) ones. Destroying it destroys the buffer and gives the memory back.
struct Buffer {
  VkDevice device = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  MemoryPool* pool = nullptr;
  MemoryPool::Allocation memory;
  uint64_t bytes = 0;  // what kernels see (count * stride)
  void* mapped = nullptr;

  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  ~Buffer();
  // Gives up ownership of a buffer the GPU may still use (it is leaked).
  void abandon() {
    buffer = VK_NULL_HANDLE;
    memory = {};
    pool = nullptr;
  }
};

}  // namespace eph::runtime::vk
