// VulkanDevice on whatever Vulkan device this machine has (lavapipe in CI),
// with the Khronos validation layer on: any message it sends fails the test.
// The examples give the interpreter's results; bad input (an oversized
// buffer, too many workgroups, too much workgroup memory, a kernel needing a
// capability the device lacks, a device index that does not exist) is a one-
// line error naming the limit; barriers go only between dependent commands;
// prepare() emits SPIR-V only for kernels whose key (text, callees' text,
// capabilities, bounds checks) it has not seen, and the pipeline cache finds
// its pipelines in memory and on disk; dispatches are timed. Tests skip only when there is no Vulkan device at all (and fail even
// then under EPH_REQUIRE_VULKAN=1).
#ifdef EPH_HAVE_VULKAN

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/Layout.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "runtime/vulkan/VulkanDevice.h"
#include "targets/spirv/Spirv.h"
#include "tests/support/VulkanTest.h"

namespace eph::test {
namespace {

// The repository (for examples/): EPH_SOURCE_DIR from the environment, else
// where this test was built.
std::string sourceDir() {
  const char* e = std::getenv("EPH_SOURCE_DIR");
  return e && *e ? e : EPH_SOURCE_DIR;
}


void expectNoValidationMessages(runtime::VulkanDevice& dev) {
  for (const std::string& m : dev.takeValidationMessages()) ADD_FAILURE() << "validation: " << m;
}

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<ir::Module> parse(ir::Context& ctx, const std::string& text, const char* name = "test.eir") {
  auto m = ir::parseModule(ctx, text, name);
  EXPECT_TRUE(m) << m.error().str();
  if (!m) return nullptr;
  Status v = ir::verify(**m);
  EXPECT_TRUE(v) << v.error().str();
  return std::move(*m);
}

// Runs @main of a module given as text (no arguments): its results, one a
// line, or "error: " and the error.
std::string runText(runtime::Device& dev, const std::string& text, const char* name) {
  ir::Context ctx;
  auto m = parse(ctx, text, name);
  if (!m) return "parse error";
  interp::Interpreter in(*m);
  auto r = runtime::runHost(dev, in, *m->lookup("main"), {});
  if (!r) return "error: " + r.error().str();
  std::string s;
  for (auto& v : *r) s += interp::format(v, &in.memory()) + "\n";
  return s;
}

std::string runExample(runtime::Device& dev, const std::string& file, std::vector<std::string> argTexts) {
  ir::Context ctx;
  auto m = parse(ctx, readFile(sourceDir() + "/examples/ir/" + file), file.c_str());
  if (!m) return "parse error";
  const ir::Function* main = m->lookup("main");
  interp::Interpreter in(*m);
  std::vector<interp::RtValue> args;
  for (size_t i = 0; i < argTexts.size(); ++i)
    args.push_back(*interp::parseValue(argTexts[i], main->paramTypes()[i], in.memory()));
  auto r = runtime::runHost(dev, in, *main, args);
  if (!r) return "error: " + r.error().str();
  std::string s;
  for (auto& v : *r) s += interp::format(v, &in.memory()) + "\n";
  return s;
}

// Copies in to out, one element per invocation (64 per workgroup).
const char* kCopy =
    "kernel @copy(%in: buffer<f32, device, read>, %out: buffer<f32, device, write>) workgroup(64, 1, 1) {\n"
    "  %i = global_id {dim = 0} : u32\n"
    "  %n = buffer.len %out : u32\n"
    "  %inside = lt %i, %n : bool\n"
    "  if %inside {\n"
    "    %v = load %in, %i : f32\n"
    "    store %out, %i, %v\n"
    "    yield\n"
    "  } {\n"
    "    yield\n"
    "  }\n"
    "  return\n"
    "}\n";

interp::RtValue bufferArg(ir::Context& ctx, uint64_t handle) {
  interp::RtValue v;
  v.type = ctx.bufferType(ctx.f32(), ir::Space::Device, ir::Ownership::Write);
  v.buffer = handle;
  return v;
}

TEST(VulkanDevice, OpensAndReportsCapabilities) {
  REQUIRE_VULKAN();
  auto dev = openValidated();
  ASSERT_TRUE(dev);
  const DeviceCaps& c = dev->caps();
  EXPECT_EQ(dev->target(), "vulkan");
  EXPECT_FALSE(c.name.empty());
  EXPECT_FALSE(c.driver.empty());
  EXPECT_GE(c.subgroupSize, 1u);
  EXPECT_GT(c.maxBufferBytes, 0u);
  EXPECT_GT(c.memoryBytes, 0u);
  EXPECT_GE(c.maxWorkgroupInvocations, 128u);  // the Vulkan minimum
  EXPECT_GE(c.maxWorkgroupCount[0], 65535u);
  EXPECT_GE(c.maxWorkgroupMemoryBytes, 16384u);
  EXPECT_GE(c.maxPushConstantBytes, 128u);
  EXPECT_GE(c.vulkanApiVersion, (1u << 22) | (1u << 12));  // 1.1
  auto list = runtime::listVulkanDevices();
  ASSERT_TRUE(list);
  bool found = false;
  for (auto& d : *list) found = found || d.caps.name == c.name;
  EXPECT_TRUE(found);
  expectNoValidationMessages(*dev);
}

TEST(VulkanDevice, ExamplesGiveTheInterpretersResults) {
  REQUIRE_VULKAN();
  auto dev = openValidated();
  ASSERT_TRUE(dev);
  EXPECT_EQ(runExample(*dev, "saxpy.eir", {}), "0\n1000000\n");
  EXPECT_EQ(runExample(*dev, "reduce.eir", {}), "499500\ntrue\n");
  EXPECT_EQ(runExample(*dev, "histogram.eir", {}), "[250, 500, 0, 0, 250, 0, 0, 0]\n");
  EXPECT_EQ(runExample(*dev, "collatz.eir", {"27"}), "111\n10946\n");
  // Every kernel the examples compiled passes the SPIR-V validator.
  expectNoValidationMessages(*dev);
}

TEST(VulkanDevice, OpenDeviceByTargetName) {
  REQUIRE_VULKAN();
  auto dev = runtime::openDevice("vulkan");
  ASSERT_TRUE(dev) << dev.error().message;
  EXPECT_EQ((*dev)->target(), "vulkan");
  auto targets = runtime::availableTargets();
  EXPECT_NE(std::find(targets.begin(), targets.end(), "vulkan"), targets.end());
}

TEST(VulkanDevice, OversizedAllocationNamesTheLimit) {
  REQUIRE_VULKAN();
  auto dev = openValidated();
  ASSERT_TRUE(dev);
  ir::Context ctx;
  const ir::Type* t = ctx.bufferType(ctx.f32(), ir::Space::Device, ir::Ownership::Linear);
  uint64_t count = dev->caps().maxBufferBytes / 4 + 1;
  auto h = dev->alloc(t, count, {});
  ASSERT_FALSE(h);
  std::string want = "allocation of " + std::to_string(count) + " elements of f32 (" + std::to_string(count * 4) +
                     " bytes) is larger than the device's largest buffer, " +
                     std::to_string(dev->caps().maxBufferBytes) + " bytes (";
  EXPECT_EQ(h.error().message.substr(0, want.size()), want) << h.error().message;
  EXPECT_NE(h.error().message.find(") on " + dev->caps().name), std::string::npos) << h.error().message;
  // lavapipe binds at most 128 MiB to a storage buffer: a 256 MiB f32
  // buffer (2^26 elements) is over it, and the error names that limit.
  if (dev->caps().name.find("llvmpipe") != std::string::npos) {
    EXPECT_EQ(dev->caps().maxBufferBytes, uint64_t(1) << 27);
    static const std::string file = "big.eir";
    auto big = dev->alloc(t, uint64_t(1) << 26, Loc{&file, 4, 3});
    ASSERT_FALSE(big);
    EXPECT_EQ(big.error().str(), "big.eir:4:3: error: allocation of 67108864 elements of f32 (268435456 bytes) is "
                                 "larger than the device's largest buffer, 134217728 bytes (maxStorageBufferRange) on " +
                                     dev->caps().name);
  }

  auto huge = dev->alloc(t, UINT64_MAX / 2, {});
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("overflows"), std::string::npos) << huge.error().message;
  expectNoValidationMessages(*dev);
}

TEST(VulkanDevice, TooManyWorkgroupsNamesTheLimit) {
  REQUIRE_VULKAN();
  auto dev = openValidated();
  ASSERT_TRUE(dev);
  ir::Context ctx;
  auto m = parse(ctx, kCopy);
  ASSERT_TRUE(m);
  ASSERT_TRUE(dev->prepare(*m));
  const ir::Type* t = ctx.bufferType(ctx.f32(), ir::Space::Device, ir::Ownership::Linear);
  auto a = dev->alloc(t, 64, {});
  auto b = dev->alloc(t, 64, {});
  ASSERT_TRUE(a && b);
  std::vector<interp::RtValue> args = {bufferArg(ctx, *a), bufferArg(ctx, *b)};
  uint32_t limit = dev->caps().maxWorkgroupCount[0];
  Status s = dev->dispatch(*m->lookup("copy"), {limit + 1, 1, 1}, args, {});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("maxComputeWorkGroupCount"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("(" + std::to_string(limit + 1) + ", 1, 1) workgroups"), std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find("@copy"), std::string::npos);
  expectNoValidationMessages(*dev);
}

TEST(VulkanDevice, TooMuchWorkgroupMemoryNamesTheKernelAndLimit) {
  REQUIRE_VULKAN();
  auto dev = openValidated();
  ASSERT_TRUE(dev);
  uint32_t words = dev->caps().maxWorkgroupMemoryBytes / 4 + 1;
  ir::Context ctx;
  auto m = parse(ctx,
                 "kernel @big(%out: buffer<f32, device, write>) workgroup(64, 1, 1) {\n"
                 "  %s = workgroup.alloc {size = " + std::to_string(words) + "} : buffer<f32, workgroup, write>\n"
                 "  return\n"
                 "}\n");
  ASSERT_TRUE(m);
  Status s = dev->prepare(*m);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("kernel '@big'"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("maxComputeSharedMemorySize"), std::string::npos) << s.error().message;
}

// A device without float64 (simulated: the capability is masked off) rejects
// a kernel that computes in f64 at prepare, naming the kernel and float64.
TEST(VulkanDevice, MissingFloat64IsAnErrorAtPrepare) {
  REQUIRE_VULKAN();
  runtime::VulkanOptions o;
  o.withoutCaps = {"float64"};
  auto dev = openValidated(o);
  ASSERT_TRUE(dev);
  EXPECT_FALSE(dev->caps().float64);
  ir::Context ctx;
  auto m = parse(ctx,
                 "kernel @twice(%x: buffer<f64, device, write>) workgroup(1, 1, 1) {\n"
                 "  %i = global_id {dim = 0} : u32\n"
                 "  %v = load %x, %i : f64\n"
                 "  %w = add %v, %v : f64\n"
                 "  store %x, %i, %w\n"
                 "  return\n"
                 "}\n");
  ASSERT_TRUE(m);
  Status s = dev->prepare(*m);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("@twice"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("float64"), std::string::npos) << s.error().message;
}

TEST(VulkanDevice, MissingInt64IsAnErrorAtPrepare) {
  REQUIRE_VULKAN();
  runtime::VulkanOptions o;
  o.withoutCaps = {"int64", "atomicInt64"};
  auto dev = openValidated(o);
  ASSERT_TRUE(dev);
  ir::Context ctx;
  auto m = parse(ctx,
                 "kernel @count(%x: buffer<u64, device, write>) workgroup(1, 1, 1) {\n"
                 "  %i = global_id {dim = 0} : u32\n"
                 "  %one = const {value = 1} : u64\n"
                 "  %old = atomic.add %x, %i, %one : u64\n"
                 "  return\n"
                 "}\n");
  ASSERT_TRUE(m);
  Status s = dev->prepare(*m);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("@count"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("64-bit integer"), std::string::npos) << s.error().message;
}

TEST(VulkanDevice, DeviceIndexOutOfRange) {
  REQUIRE_VULKAN();
  runtime::VulkanOptions o;
  o.deviceIndex = 999;
  auto dev = runtime::VulkanDevice::open(o);
  ASSERT_FALSE(dev);
  EXPECT_NE(dev.error().message.find("--device 999: no such Vulkan device"), std::string::npos)
      << dev.error().message;
  runtime::VulkanOptions bad;
  bad.withoutCaps = {"teleportation"};
  auto dev2 = runtime::VulkanDevice::open(bad);
  ASSERT_FALSE(dev2);
  EXPECT_NE(dev2.error().message.find("teleportation"), std::string::npos);
}

// Uploads, independent dispatches and dependent ones: a barrier only where a
// command touches what an earlier unbarriered one wrote (or writes what it
// read). Synchronization validation (on in these tests) would report a
// missing one. One queue: with an upload queue (a GPU's), uploads go there.
TEST(VulkanDevice, BarriersOnlyBetweenDependentCommands) {
  REQUIRE_VULKAN();
  runtime::VulkanOptions oneQueue;
  oneQueue.transferQueue = false;
  oneQueue.profile = true;  // for takeDispatchTimes
  auto dev = openValidated(oneQueue);
  ASSERT_TRUE(dev);
  ir::Context ctx;
  auto m = parse(ctx, kCopy);
  ASSERT_TRUE(m);
  ASSERT_TRUE(dev->prepare(*m));
  const ir::Function& copy = *m->lookup("copy");
  const ir::Type* t = ctx.bufferType(ctx.f32(), ir::Space::Device, ir::Ownership::Linear);
  const uint64_t n = 256;
  uint64_t h[5];
  for (auto& x : h) {
    auto a = dev->alloc(t, n, {});
    ASSERT_TRUE(a);
    x = *a;
  }
  std::vector<float> src(n);
  for (uint64_t i = 0; i < n; ++i) src[i] = float(i) * 0.5f;
  auto bytes = std::as_bytes(std::span(src));
  unsigned before = dev->stats().barriers;
  ASSERT_TRUE(dev->uploadBytes(h[0], bytes));
  ASSERT_TRUE(dev->uploadBytes(h[1], bytes));  // independent: no barrier
  EXPECT_EQ(dev->stats().barriers, before);
  auto run = [&](uint64_t in, uint64_t out) {
    std::vector<interp::RtValue> args = {bufferArg(ctx, in), bufferArg(ctx, out)};
    ASSERT_TRUE(dev->dispatch(copy, {4, 1, 1}, args, {}));
  };
  run(h[0], h[2]);  // reads h0, written by an upload: barrier
  EXPECT_EQ(dev->stats().barriers, before + 1);
  run(h[1], h[3]);  // h1 was written before that barrier: none
  EXPECT_EQ(dev->stats().barriers, before + 1);
  run(h[2], h[4]);  // reads h2, written after the barrier: barrier
  EXPECT_EQ(dev->stats().barriers, before + 2);
  unsigned submits = dev->stats().submits;
  std::vector<float> got(n);
  ASSERT_TRUE(dev->downloadBytes(std::as_writable_bytes(std::span(got)), h[4]));
  EXPECT_EQ(dev->stats().submits, submits + 1);  // one command buffer for all of it
  EXPECT_EQ(got, src);
  ASSERT_TRUE(dev->downloadBytes(std::as_writable_bytes(std::span(got)), h[3]));
  EXPECT_EQ(got, src);

  // Dispatches are timed on the GPU, in order.
  auto times = dev->takeDispatchTimes();
  ASSERT_EQ(times.size(), 3u);
  for (auto& t : times) {
    EXPECT_EQ(t.kernel, "copy");
    EXPECT_GE(t.ms, 0.0);
  }
  EXPECT_TRUE(dev->takeDispatchTimes().empty());

  // Freeing a buffer that recorded work uses neither submits nor waits: the
  // buffer lives until that work has run.
  run(h[0], h[1]);
  submits = dev->stats().submits;
  uint64_t live = dev->memoryStats().allocations;
  ASSERT_TRUE(dev->free(h[1], {}));
  EXPECT_EQ(dev->stats().submits, submits);
  EXPECT_EQ(dev->memoryStats().allocations, live);
  // Freeing one nothing pending uses gives its memory back at once.
  ASSERT_TRUE(dev->free(h[2], {}));
  EXPECT_EQ(dev->memoryStats().allocations, live - 1);
  EXPECT_EQ(dev->stats().submits, submits);
  Status again = dev->free(h[2], {});
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("freed"), std::string::npos);
  ASSERT_TRUE(dev->wait({}));
  EXPECT_EQ(dev->memoryStats().allocations, live - 2);  // h1 went with its batch
  expectNoValidationMessages(*dev);
}

// The timeline stamps every transfer and dispatch. An upload and a dispatch
// that does not touch its buffer share no barrier, so the dispatch's start
// does not wait for the upload (they may overlap on a GPU); one that reads
// the uploaded buffer starts only after the upload has ended. Both with
// and without an upload queue (where the device has one: lavapipe has not).
class VulkanTimeline : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(UploadQueue, VulkanTimeline, ::testing::Bool());

TEST_P(VulkanTimeline, StampsTransfersAndDispatches) {
  REQUIRE_VULKAN();
  runtime::VulkanOptions o;
  o.transferQueue = GetParam();
  o.profile = true;
  auto dev = openValidated(o);
  ASSERT_TRUE(dev);
  if (GetParam() && !dev->hasUploadQueue()) GTEST_SKIP() << "the device has one queue";
  ir::Context ctx;
  auto m = parse(ctx, kCopy);
  ASSERT_TRUE(m);
  ASSERT_TRUE(dev->prepare(*m));
  const ir::Function& copy = *m->lookup("copy");
  const ir::Type* t = ctx.bufferType(ctx.f32(), ir::Space::Device, ir::Ownership::Linear);
  const uint64_t n = 1 << 20;
  uint64_t h[4];
  for (auto& x : h) {
    auto a = dev->alloc(t, n, {});
    ASSERT_TRUE(a);
    x = *a;
  }
  std::vector<float> src(n, 1.5f);
  auto bytes = std::as_bytes(std::span(src));
  ASSERT_TRUE(dev->uploadBytes(h[0], bytes));
  ASSERT_TRUE(dev->wait({}));
  dev->takeTimeline();
  unsigned submits = dev->stats().submits;
  auto dispatch = [&](uint64_t in, uint64_t out) {
    std::vector<interp::RtValue> args = {bufferArg(ctx, in), bufferArg(ctx, out)};
    ASSERT_TRUE(dev->dispatch(copy, {uint32_t(n / 64), 1, 1}, args, {}));
  };
  ASSERT_TRUE(dev->uploadBytes(h[1], bytes));
  dispatch(h[0], h[2]);  // independent of the upload
  ASSERT_TRUE(dev->wait({}));
  ASSERT_TRUE(dev->uploadBytes(h[1], bytes));
  dispatch(h[1], h[3]);  // reads what the upload writes: behind a barrier
  std::vector<float> got(n);
  ASSERT_TRUE(dev->downloadBytes(std::as_writable_bytes(std::span(got)), h[3]));
  EXPECT_EQ(got, src);

  auto tl = dev->takeTimeline();
  ASSERT_EQ(tl.size(), 5u);
  const char* what[] = {"h2d", "dispatch", "h2d", "dispatch", "d2h"};
  for (size_t i = 0; i < tl.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(tl[i].what, what[i]);
    EXPECT_EQ(tl[i].name, tl[i].what == "dispatch" ? "copy" : "");
    EXPECT_GE(tl[i].startMs, 0.0);
    EXPECT_GE(tl[i].endMs, tl[i].startMs);
    EXPECT_EQ(tl[i].submission, tl[0].submission + (i < 2 ? 0 : 1));
  }
  EXPECT_EQ(dev->stats().submits, submits + (dev->hasUploadQueue() ? 4 : 2));  // a command buffer per queue
  EXPECT_GE(tl[3].startMs, tl[2].endMs);  // the barrier: the dependent dispatch starts after its upload
  EXPECT_GE(tl[4].startMs, tl[3].endMs);  // and the download after the dispatch
  EXPECT_EQ(std::min(tl[0].startMs, tl[1].startMs), 0.0);  // times count from the submission's first start
  EXPECT_TRUE(dev->takeTimeline().empty());
  for (uint64_t x : h) ASSERT_TRUE(dev->free(x, {}));
  expectNoValidationMessages(*dev);
}

TEST(VulkanDevice, TransfersCheckSizes) {
  REQUIRE_VULKAN();
  auto dev = openValidated();
  ASSERT_TRUE(dev);
  ir::Context ctx;
  const ir::Type* t = ctx.bufferType(ctx.f32(), ir::Space::Device, ir::Ownership::Linear);
  auto h = dev->alloc(t, 8, {});
  ASSERT_TRUE(h);
  EXPECT_EQ(dev->bufferBytes(*h), 32u);
  std::vector<std::byte> wrong(16);
  Status s = dev->uploadBytes(*h, wrong);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "copies 16 bytes into a device buffer of 32 bytes");
  interp::BufferData host;
  host.elemType = ctx.f32();
  host.elems.resize(8, interp::RtValue::ofFloat(ctx.f32(), 1));
  host.written.assign(8, true);
  host.written[5] = false;
  Status partial = dev->upload(*h, host, {});
  ASSERT_FALSE(partial);  // element 5 has no value to copy
  EXPECT_NE(partial.error().message.find("5"), std::string::npos) << partial.error().message;
  expectNoValidationMessages(*dev);
}

// prepare() finds pipelines it built before in memory (a kernel with the same
// text by its key, one whose text differs but whose SPIR-V is the same by the
// SPIR-V), and a new device finds the driver's data for them on disk.
TEST(VulkanDevice, PipelineCacheInMemoryAndOnDisk) {
  REQUIRE_VULKAN();
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ephc-cache-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  runtime::VulkanOptions o;
  o.cacheDir = dir.string();
  {
    auto dev = openValidated(o);
    ASSERT_TRUE(dev);
    ir::Context ctx;
    auto m = parse(ctx, kCopy);
    ASSERT_TRUE(dev->prepare(*m));
    EXPECT_EQ(dev->stats().compiled, 1u);
    EXPECT_EQ(dev->stats().fromDisk, 0u);
    // The same kernel in another module: found by its key, nothing emitted.
    ir::Context ctx2;
    auto m2 = parse(ctx2, kCopy);
    ASSERT_TRUE(dev->prepare(*m2));
    EXPECT_EQ(dev->stats().reused, 1u);
    EXPECT_EQ(dev->stats().emitted, 1u);
    EXPECT_EQ(dev->stats().fromMemory, 0u);
    EXPECT_EQ(dev->stats().compiled, 1u);
    // A value renamed: new text, so emitted, but the same SPIR-V (values
    // carry no names there), found in memory.
    std::string renamed = kCopy;
    for (size_t at; (at = renamed.find("%v ")) != std::string::npos || (at = renamed.find("%v\n")) != std::string::npos;)
      renamed.replace(at, 2, "%value");
    ir::Context ctx3;
    auto m3 = parse(ctx3, renamed);
    ASSERT_TRUE(m3);
    ASSERT_TRUE(dev->prepare(*m3));
    EXPECT_EQ(dev->stats().emitted, 2u);
    EXPECT_EQ(dev->stats().fromMemory, 1u);
    EXPECT_EQ(dev->stats().compiled, 1u);
    expectNoValidationMessages(*dev);
  }
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.path().extension() == ".vkpc";
  EXPECT_EQ(files, 1u);
  {
    auto dev = openValidated(o);
    ASSERT_TRUE(dev);
    ir::Context ctx;
    auto m = parse(ctx, kCopy);
    ASSERT_TRUE(dev->prepare(*m));
    EXPECT_EQ(dev->stats().fromDisk, 1u);
    EXPECT_EQ(dev->stats().compiled, 0u);
    EXPECT_EQ(runExample(*dev, "saxpy.eir", {}), "0\n1000000\n");
    expectNoValidationMessages(*dev);
  }
  std::filesystem::remove_all(dir);
}

// Kernels are keyed one by one: preparing a module where one kernel of two
// changed emits SPIR-V and builds a pipeline for only that one.
TEST(VulkanDevice, OnlyChangedKernelsBuildPipelines) {
  REQUIRE_VULKAN();
  auto dev = openValidated();
  ASSERT_TRUE(dev);
  auto twoKernels = [](const std::string& op) {
    std::string k2 = kCopy;
    k2.replace(k2.find("@copy"), 5, "@scale");
    k2.replace(k2.find("    store %out, %i, %v"), 22, "    %w = " + op + " %v, %v : f32\n    store %out, %i, %w");
    return std::string(kCopy) + k2;
  };
  ir::Context ctx;
  auto m1 = parse(ctx, twoKernels("add"));
  ASSERT_TRUE(m1);
  ASSERT_TRUE(dev->prepare(*m1));
  EXPECT_EQ(dev->stats().emitted, 2u);
  EXPECT_EQ(dev->stats().compiled, 2u);
  std::vector<uint32_t> copy1 = dev->spirvOf(*m1->lookup("copy")), scale1 = dev->spirvOf(*m1->lookup("scale"));
  ir::Context ctx2;
  auto m2 = parse(ctx2, twoKernels("mul"));
  ASSERT_TRUE(m2);
  ASSERT_TRUE(dev->prepare(*m2));
  EXPECT_EQ(dev->stats().emitted, 3u);  // @scale only
  EXPECT_EQ(dev->stats().reused, 1u);   // @copy
  EXPECT_EQ(dev->stats().compiled, 3u);
  EXPECT_EQ(dev->stats().fromMemory, 0u);
  EXPECT_EQ(dev->spirvOf(*m2->lookup("copy")), copy1);
  EXPECT_NE(dev->spirvOf(*m2->lookup("scale")), scale1);
  EXPECT_FALSE(dev->spirvOf(*m2->lookup("scale")).empty());
  expectNoValidationMessages(*dev);
}

// A module prepared again, or the same text in another module, emits no
// SPIR-V: every kernel is found by its key, and runs.
TEST(VulkanDevice, PreparingAgainEmitsNothing) {
  REQUIRE_VULKAN();
  auto dev = openValidated();
  ASSERT_TRUE(dev);
  std::string text = readFile(sourceDir() + "/examples/ir/saxpy.eir");
  std::string copy = kCopy;
  text += copy.replace(copy.find("@copy"), 5, "@copy2");
  ir::Context ctx;
  auto m = parse(ctx, text, "saxpy.eir");
  ASSERT_TRUE(m);
  ASSERT_TRUE(dev->prepare(*m));
  EXPECT_EQ(dev->stats().emitted, 2u);
  EXPECT_EQ(dev->stats().reused, 0u);
  std::vector<uint32_t> spirv = dev->spirvOf(*m->lookup("saxpy"));
  ASSERT_TRUE(dev->prepare(*m));
  EXPECT_EQ(dev->stats().emitted, 2u);
  EXPECT_EQ(dev->stats().reused, 2u);
  EXPECT_EQ(dev->spirvOf(*m->lookup("saxpy")), spirv);
  // runHost prepares a module of its own with that text.
  EXPECT_EQ(runText(*dev, text, "saxpy.eir"), "0\n1000000\n");
  EXPECT_EQ(dev->stats().emitted, 2u);
  EXPECT_EQ(dev->stats().reused, 4u);
  EXPECT_EQ(dev->stats().compiled, 2u);
  expectNoValidationMessages(*dev);
}

// @apply(in, out): out[i] = @f(in[i]) for in = 0, 1, 2, 3, with @f given.
std::string applyModule(const std::string& f) {
  return "kernel @apply(%in: buffer<i32, device, read>, %out: buffer<i32, device, write>) workgroup(4, 1, 1) {\n"
         "  %i = global_id {dim = 0} : u32\n"
         "  %v = load %in, %i : i32\n"
         "  %w = call %v {callee = @f} : i32\n"
         "  store %out, %i, %w\n"
         "  return\n"
         "}\n"
         "device @f(%x: i32) -> i32 {\n"
         "  %y = " + f + " %x, %x : i32\n"
         "  return %y\n"
         "}\n"
         "host @main() -> buffer<i32, host, linear> {\n"
         "  %n = const {value = 4} : u32\n"
         "  %zero = const {value = 0} : u32\n"
         "  %one = const {value = 1} : u32\n"
         "  %h = alloc %n : buffer<i32, host, linear>\n"
         "  for %zero, %n, %one { |%i: u32|\n"
         "    %v = cast %i : i32\n"
         "    store %h, %i, %v\n"
         "    yield\n"
         "  }\n"
         "  %din = alloc %n : buffer<i32, device, linear>\n"
         "  %dout = alloc %n : buffer<i32, device, linear>\n"
         "  h2d %din, %h\n"
         "  dispatch %one, %one, %one, %din, %dout {kernel = @apply}\n"
         "  wait\n"
         "  d2h %h, %dout\n"
         "  free %din\n"
         "  free %dout\n"
         "  return %h\n"
         "}\n";
}

// Two kernels with the same text that call different device functions are
// different kernels: each is emitted, and each computes its own results.
TEST(VulkanDevice, KernelsWithOtherCalleesAreEmittedAgain) {
  REQUIRE_VULKAN();
  auto dev = openValidated();
  ASSERT_TRUE(dev);
  ir::Context ctx;
  auto add = parse(ctx, applyModule("add"), "add.eir");
  auto mul = parse(ctx, applyModule("mul"), "mul.eir");
  ASSERT_TRUE(add && mul);
  const ir::Function& k1 = *add->lookup("apply");
  const ir::Function& k2 = *mul->lookup("apply");
  ASSERT_EQ(ir::print(k1), ir::print(k2));
  EXPECT_NE(runtime::VulkanDevice::kernelKey(k1, dev->caps(), false),
            runtime::VulkanDevice::kernelKey(k2, dev->caps(), false));
  EXPECT_EQ(runText(*dev, applyModule("add"), "add.eir"), "[0, 2, 4, 6]\n");
  EXPECT_EQ(dev->stats().emitted, 1u);
  EXPECT_EQ(runText(*dev, applyModule("mul"), "mul.eir"), "[0, 1, 4, 9]\n");
  EXPECT_EQ(dev->stats().emitted, 2u);
  EXPECT_EQ(dev->stats().reused, 0u);
  EXPECT_EQ(dev->stats().compiled, 2u);  // two pipelines
  EXPECT_EQ(runText(*dev, applyModule("add"), "add.eir"), "[0, 2, 4, 6]\n");
  EXPECT_EQ(dev->stats().emitted, 2u);
  EXPECT_EQ(dev->stats().reused, 1u);
  expectNoValidationMessages(*dev);
}

// The key holds the bounds-check option and the capabilities that change the
// SPIR-V, not those that do not.
TEST(VulkanDevice, KernelKeyHoldsBoundsChecksAndCapabilities) {
  ir::Context ctx;
  auto m = parse(ctx, kCopy);
  ASSERT_TRUE(m);
  const ir::Function& k = *m->lookup("copy");
  DeviceCaps caps;
  caps.vulkanApiVersion = (1u << 22) | (3u << 12);
  std::string key = runtime::VulkanDevice::kernelKey(k, caps, false);
  EXPECT_NE(key.find(ir::print(k)), std::string::npos);
  EXPECT_NE(runtime::VulkanDevice::kernelKey(k, caps, true), key);
  for (auto change : std::vector<void (*)(DeviceCaps&)>{
           [](DeviceCaps& c) { c.atomicFloat32Add = true; }, [](DeviceCaps& c) { c.float64 = true; },
           [](DeviceCaps& c) { c.subgroupShuffle = true; }, [](DeviceCaps& c) { c.storageBufferOffsetAlignment = 64; },
           [](DeviceCaps& c) { c.cooperativeMatrixShapes = {"16x16x16 f16 f32"}; },
           [](DeviceCaps& c) { c.vulkanApiVersion = (1u << 22) | (2u << 12); },
           [](DeviceCaps& c) { c.maxWorkgroupInvocations = 128; }}) {
    DeviceCaps other = caps;
    change(other);
    EXPECT_NE(runtime::VulkanDevice::kernelKey(k, other, false), key);
  }
  DeviceCaps renamed = caps;
  renamed.name = "another device";
  renamed.memoryBytes = 1 << 30;
  renamed.maxWorkgroupCount = {7, 7, 7};  // checked at dispatch, not in the SPIR-V
  EXPECT_EQ(runtime::VulkanDevice::kernelKey(k, renamed, false), key);
}

// With bounds checks, a kernel found by its key in another module reports an
// access out of bounds at that module's op.
TEST(VulkanDevice, ReusedCheckedKernelsReportTheirOwnModulesOps) {
  REQUIRE_VULKAN();
  runtime::VulkanOptions o;
  o.checkBounds = true;
  auto dev = openValidated(o);
  ASSERT_TRUE(dev);
  std::string text = readFile(sourceDir() + "/tests/lit/ephc/Inputs/kernel-out-of-bounds.eir");
  ASSERT_FALSE(text.empty());
  const char* error = "error: index 12 is out of bounds for a buffer of 8 elements";
  std::string a = runText(*dev, text, "a.eir");
  EXPECT_NE(a.find("a.eir:10:3: " + std::string(error)), std::string::npos) << a;
  EXPECT_EQ(dev->stats().emitted, 1u);
  ir::Context keep;  // a module that stays alive: its sites must not be reported for b.eir
  auto kept = parse(keep, text, "kept.eir");
  ASSERT_TRUE(kept && dev->prepare(*kept));
  std::string b = runText(*dev, text, "b.eir");
  EXPECT_NE(b.find("b.eir:10:3: " + std::string(error)), std::string::npos) << b;
  EXPECT_EQ(dev->stats().emitted, 1u);
  EXPECT_EQ(dev->stats().reused, 2u);
  expectNoValidationMessages(*dev);
}

// The SPIR-V of every prepared kernel passes spirv-tools' validator.
TEST(VulkanDevice, PreparedModulesPassTheValidator) {
  REQUIRE_VULKAN();
  auto dev = openValidated();
  ASSERT_TRUE(dev);
  for (const char* file : {"saxpy.eir", "reduce.eir", "histogram.eir"}) {
    ir::Context ctx;
    auto m = parse(ctx, readFile(sourceDir() + "/examples/ir/" + file), file);
    ASSERT_TRUE(m);
    ASSERT_TRUE(dev->prepare(*m));
    for (auto& f : m->functions())
      if (f->isKernel()) {
        std::vector<uint32_t> words = dev->spirvOf(*f);
        ASSERT_FALSE(words.empty()) << f->name();
        Status v = spirv::validate(words, dev->caps().vulkanApiVersion, f->name());
        EXPECT_TRUE(v) << v.error().message;
      }
  }
  expectNoValidationMessages(*dev);
}

}  // namespace
}  // namespace eph::test

#endif  // EPH_HAVE_VULKAN
