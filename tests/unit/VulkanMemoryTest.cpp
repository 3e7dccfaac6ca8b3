// VulkanDevice's buffer memory (runtime/vulkan/VulkanMemory.h): buffers are
// carved from 64 MiB blocks, so allocating and freeing hundreds of buffers
// calls vkAllocateMemory a few times (counted through a hook on the entry
// point, and by the pool's own count), freed ranges are reused, a buffer
// larger than half a block gets memory of its own, and the data each buffer
// holds stays its own (uploads, a kernel copying between buffers, downloads).
// Also: GPU timestamps are taken only when profiling is asked for. On
// whatever Vulkan device this machine has (lavapipe in CI), with validation.
#ifdef EPH_HAVE_VULKAN

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <span>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/vulkan/VulkanApi.h"
#include "runtime/vulkan/VulkanDevice.h"
#include "tests/support/VulkanTest.h"

namespace eph::test {
namespace {

// Validation on, no disk cache.
std::unique_ptr<runtime::VulkanDevice> open(runtime::VulkanOptions o = {}) {
  o.cacheDir = "off";
  return openValidated(o);
}

const char* kAddOne =
    "kernel @addone(%in: buffer<u32, device, read>, %out: buffer<u32, device, write>) workgroup(64, 1, 1) {\n"
    "  %i = global_id {dim = 0} : u32\n"
    "  %n = buffer.len %out : u32\n"
    "  %inside = lt %i, %n : bool\n"
    "  if %inside {\n"
    "    %v = load %in, %i : u32\n"
    "    %one = const {value = 1} : u32\n"
    "    %w = add %v, %one : u32\n"
    "    store %out, %i, %w\n"
    "    yield\n"
    "  } {\n"
    "    yield\n"
    "  }\n"
    "  return\n"
    "}\n";

interp::RtValue bufferArg(ir::Context& ctx, uint64_t handle) {
  interp::RtValue v;
  v.type = ctx.bufferType(ctx.u32(), ir::Space::Device, ir::Ownership::Linear);
  v.buffer = handle;
  return v;
}

// Counts vkAllocateMemory calls while installed (the entry-point table is the
// process's one; VulkanDevice::open fills it, so install after opening).
std::atomic<uint64_t> allocateCalls{0};
PFN_vkAllocateMemory realAllocate = nullptr;
VKAPI_ATTR VkResult VKAPI_CALL countingAllocate(VkDevice d, const VkMemoryAllocateInfo* info,
                                               const VkAllocationCallbacks* cb, VkDeviceMemory* out) {
  ++allocateCalls;
  return realAllocate(d, info, cb, out);
}
struct AllocateHook {
  AllocateHook() {
    realAllocate = runtime::vk::api().vkAllocateMemory;
    runtime::vk::api().vkAllocateMemory = countingAllocate;
    allocateCalls = 0;
  }
  ~AllocateHook() { runtime::vk::api().vkAllocateMemory = realAllocate; }
};

// The contents of buffer k: k * 1000003 + i.
std::vector<uint32_t> contents(uint64_t k, size_t n) {
  std::vector<uint32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint32_t(k * 1000003 + i);
  return v;
}

TEST(VulkanMemory, ManyBuffersShareAFewAllocations) {
  REQUIRE_VULKAN();
  auto dev = open();
  ASSERT_TRUE(dev);
  ir::Context ctx;
  auto m = ir::parseModule(ctx, kAddOne, "addone.eir");
  ASSERT_TRUE(m) << m.error().str();
  ASSERT_TRUE(ir::verify(**m));
  ASSERT_TRUE(dev->prepare(**m));
  const ir::Function& addOne = *(*m)->lookup("addone");
  const ir::Type* t = ctx.bufferType(ctx.u32(), ir::Space::Device, ir::Ownership::Linear);

  AllocateHook hook;
  runtime::VulkanDevice::MemoryStats before = dev->memoryStats();
  // 400 buffers of 1 to 4000 elements (odd sizes: alignment matters),
  // uploaded; every other one freed, then 200 more in the freed ranges.
  std::vector<std::pair<uint64_t, size_t>> live;  // handle, elements
  auto make = [&](uint64_t k) {
    size_t n = 1 + (k * 7919) % 4000;
    auto h = dev->alloc(t, n, {});
    ASSERT_TRUE(h) << h.error().message;
    std::vector<uint32_t> v = contents(*h, n);
    ASSERT_TRUE(dev->uploadBytes(*h, std::as_bytes(std::span(v))));
    live.push_back({*h, n});
  };
  for (uint64_t k = 0; k < 400; ++k) make(k);
  ASSERT_TRUE(dev->wait({}));
  for (size_t i = 0; i < live.size(); i += 2) ASSERT_TRUE(dev->free(live[i].first, {}));
  std::vector<std::pair<uint64_t, size_t>> kept;
  for (size_t i = 1; i < live.size(); i += 2) kept.push_back(live[i]);
  live = kept;
  for (uint64_t k = 400; k < 600; ++k) make(k);

  // A kernel reads each buffer and writes a fresh one of the same size.
  std::vector<std::pair<uint64_t, size_t>> outs;
  for (auto [h, n] : live) {
    auto o = dev->alloc(t, n, {});
    ASSERT_TRUE(o);
    std::vector<interp::RtValue> args = {bufferArg(ctx, h), bufferArg(ctx, *o)};
    ASSERT_TRUE(dev->dispatch(addOne, {uint32_t((n + 63) / 64), 1, 1}, args, {}));
    outs.push_back({*o, n});
  }
  for (size_t i = 0; i < live.size(); ++i) {
    auto [h, n] = live[i];
    std::vector<uint32_t> got(n), want = contents(h, n);
    ASSERT_TRUE(dev->downloadBytes(std::as_writable_bytes(std::span(got)), h));
    ASSERT_EQ(got, want) << "buffer " << h;
    ASSERT_TRUE(dev->downloadBytes(std::as_writable_bytes(std::span(got)), outs[i].first));
    for (auto& x : want) ++x;
    ASSERT_EQ(got, want) << "output of buffer " << h;
  }
  // 1,000 device buffers and as many staging buffers: a few blocks.
  uint64_t calls = allocateCalls.load();
  runtime::VulkanDevice::MemoryStats after = dev->memoryStats();
  EXPECT_LE(calls, 6u);
  EXPECT_EQ(after.deviceAllocations - before.deviceAllocations, calls);
  EXPECT_EQ(after.allocations, before.allocations + live.size() + outs.size());

  for (auto [h, n] : live) ASSERT_TRUE(dev->free(h, {}));
  for (auto [h, n] : outs) ASSERT_TRUE(dev->free(h, {}));
  EXPECT_EQ(dev->memoryStats().allocations, before.allocations);

  // Larger than half a block (32 MiB of u32): memory of its own, given back
  // when freed; its data intact.
  if (dev->caps().maxBufferBytes >= (uint64_t(40) << 20)) {
    size_t n = (size_t(40) << 20) / 4;
    auto big = dev->alloc(t, n, {});
    ASSERT_TRUE(big) << big.error().message;
    EXPECT_EQ(dev->memoryStats().dedicated, before.dedicated + 1);
    std::vector<uint32_t> v = contents(7, n), got(n);
    ASSERT_TRUE(dev->uploadBytes(*big, std::as_bytes(std::span(v))));
    ASSERT_TRUE(dev->downloadBytes(std::as_writable_bytes(std::span(got)), *big));
    EXPECT_EQ(got, v);
    uint64_t cached = dev->memoryStats().cached;  // the staging buffers' memory is kept too
    ASSERT_TRUE(dev->free(*big, {}));
    EXPECT_EQ(dev->memoryStats().dedicated, before.dedicated);
    // Kept for reuse: a buffer of about its size takes it without a
    // vkAllocateMemory, and sees its own data only.
    EXPECT_EQ(dev->memoryStats().cached, cached + 1);
    uint64_t allocations = dev->memoryStats().deviceAllocations;
    auto again = dev->alloc(t, n - 1000, {});
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(dev->memoryStats().deviceAllocations, allocations);
    EXPECT_EQ(dev->memoryStats().cached, cached);
    std::vector<uint32_t> w = contents(9, n - 1000), got2(n - 1000);
    ASSERT_TRUE(dev->uploadBytes(*again, std::as_bytes(std::span(w))));
    ASSERT_TRUE(dev->downloadBytes(std::as_writable_bytes(std::span(got2)), *again));
    EXPECT_EQ(got2, w);
    ASSERT_TRUE(dev->free(*again, {}));
    // A quarter larger: memory of its own, not the kept one.
    allocations = dev->memoryStats().deviceAllocations;
    auto larger = dev->alloc(t, n + n / 4, {});
    ASSERT_TRUE(larger);
    EXPECT_EQ(dev->memoryStats().deviceAllocations, allocations + 1);
    ASSERT_TRUE(dev->free(*larger, {}));
  }
  for (const std::string& msg : dev->takeValidationMessages()) ADD_FAILURE() << "validation: " << msg;
}

// A program that frees its buffers and allocates them again every run (a
// tensor program's intermediates) reuses its blocks: no vkAllocateMemory
// after the first run, though every block was empty in between.
TEST(VulkanMemory, EmptyBlocksAreKeptForTheNextRun) {
  REQUIRE_VULKAN();
  auto dev = open();
  ASSERT_TRUE(dev);
  ir::Context ctx;
  const ir::Type* t = ctx.bufferType(ctx.u32(), ir::Space::Device, ir::Ownership::Linear);
  const size_t n = (size_t(30) << 20) / 4;  // 30 MiB: two to a 64 MiB block
  AllocateHook hook;
  uint64_t afterFirst = 0;
  for (int run = 0; run < 3; ++run) {
    std::vector<uint64_t> bufs;
    for (int k = 0; k < 6; ++k) {  // three blocks
      auto h = dev->alloc(t, n, {});
      ASSERT_TRUE(h) << h.error().message;
      bufs.push_back(*h);
    }
    for (uint64_t h : bufs) ASSERT_TRUE(dev->free(h, {}));
    if (run == 0) afterFirst = allocateCalls.load();
  }
  EXPECT_GE(afterFirst, 3u);
  EXPECT_EQ(allocateCalls.load(), afterFirst);
  EXPECT_GE(dev->memoryStats().blocks, 3u);
  for (const std::string& msg : dev->takeValidationMessages()) ADD_FAILURE() << "validation: " << msg;
}

// `copy` between two buffers of one Vulkan device is a vkCmdCopyBuffer in
// the open batch (no submit of its own, no trip through the host), ordered
// after the upload it reads and before the dispatch that reads it.
TEST(VulkanMemory, CopyOnOneDeviceStaysOnTheDevice) {
  REQUIRE_VULKAN();
  auto dev = open();
  ASSERT_TRUE(dev);
  ir::Context ctx;
  auto m = ir::parseModule(ctx, kAddOne, "addone.eir");
  ASSERT_TRUE(m);
  ASSERT_TRUE(dev->prepare(**m));
  const ir::Type* t = ctx.bufferType(ctx.u32(), ir::Space::Device, ir::Ownership::Linear);
  const size_t n = 1000;
  auto a = dev->alloc(t, n, {}), b = dev->alloc(t, n, {}), c = dev->alloc(t, n, {});
  ASSERT_TRUE(a && b && c);
  std::vector<uint32_t> v = contents(3, n), got(n);
  ASSERT_TRUE(dev->uploadBytes(*a, std::as_bytes(std::span(v))));
  unsigned submits = dev->stats().submits;
  ASSERT_TRUE(dev->copyBytes(*b, *a, n * 4, {}));
  std::vector<interp::RtValue> args = {bufferArg(ctx, *b), bufferArg(ctx, *c)};
  ASSERT_TRUE(dev->dispatch(*(*m)->lookup("addone"), {uint32_t((n + 63) / 64), 1, 1}, args, {}));
  EXPECT_EQ(dev->stats().submits, submits);
  ASSERT_TRUE(dev->downloadBytes(std::as_writable_bytes(std::span(got)), *c));
  EXPECT_EQ(dev->stats().submits, submits + 1);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], v[i] + 1) << i;
  ASSERT_TRUE(dev->downloadBytes(std::as_writable_bytes(std::span(got)), *b));
  EXPECT_EQ(got, v);
  Status wrong = dev->copyBytes(*b, *a, 8, {});
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().message, "copies 8 bytes from a device buffer of 4000 bytes into one of 4000");
  for (auto h : {*a, *b, *c}) ASSERT_TRUE(dev->free(h, {}));
  for (const std::string& msg : dev->takeValidationMessages()) ADD_FAILURE() << "validation: " << msg;
}

// No GPU timestamps unless profiling is asked for; with it, every dispatch is timed.
TEST(VulkanMemory, TimestampsOnlyWhenProfiling) {
  REQUIRE_VULKAN();
  for (bool profile : {false, true}) {
    SCOPED_TRACE(profile);
    runtime::VulkanOptions o;
    o.profile = profile;
    auto dev = open(o);
    ASSERT_TRUE(dev);
    ir::Context ctx;
    auto m = ir::parseModule(ctx, kAddOne, "addone.eir");
    ASSERT_TRUE(m);
    ASSERT_TRUE(dev->prepare(**m));
    const ir::Type* t = ctx.bufferType(ctx.u32(), ir::Space::Device, ir::Ownership::Linear);
    auto a = dev->alloc(t, 64, {}), b = dev->alloc(t, 64, {});
    ASSERT_TRUE(a && b);
    std::vector<uint32_t> v = contents(1, 64), got(64);
    ASSERT_TRUE(dev->uploadBytes(*a, std::as_bytes(std::span(v))));
    std::vector<interp::RtValue> args = {bufferArg(ctx, *a), bufferArg(ctx, *b)};
    ASSERT_TRUE(dev->dispatch(*(*m)->lookup("addone"), {1, 1, 1}, args, {}));
    ASSERT_TRUE(dev->downloadBytes(std::as_writable_bytes(std::span(got)), *b));
    EXPECT_EQ(got[5], v[5] + 1);
    auto times = dev->takeDispatchTimes();
    auto timeline = dev->takeTimeline();
    if (profile) {
      EXPECT_EQ(times.size(), 1u);
      EXPECT_EQ(timeline.size(), 3u);  // h2d, dispatch, d2h
    } else {
      EXPECT_TRUE(times.empty());
      EXPECT_TRUE(timeline.empty());
    }
    ASSERT_TRUE(dev->free(*a, {}));
    ASSERT_TRUE(dev->free(*b, {}));
    for (const std::string& msg : dev->takeValidationMessages()) ADD_FAILURE() << "validation: " << msg;
  }
}

}  // namespace
}  // namespace eph::test

#endif  // EPH_HAVE_VULKAN
