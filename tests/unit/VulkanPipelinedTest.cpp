// Pipelined submission on Vulkan (VulkanOptions::batchCommands and
// batchesInFlight): the host records batch N+1 while the GPU runs batch N.
// Host programs with many small dependent dispatches over many batches give
// the interpreter's results at every batch size and ring depth, with buffers
// freed (and their memory reused) while batches that use them may still run,
// a d2h in the middle, re-uploads into buffers running batches read, and
// device copies; an access out of bounds in an early batch is the
// interpreter's error. Every device runs under the Khronos validation layer
// with synchronization validation (openValidated), and must send no message.
#ifdef EPH_HAVE_VULKAN

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "ir/interp/Interp.h"
#include "runtime/Compare.h"
#include "runtime/Device.h"
#include "runtime/vulkan/VulkanDevice.h"
#include "tests/support/DeviceRun.h"
#include "tests/support/VulkanTest.h"

namespace eph::test {
namespace {

// @step: b[i] = 3 a[i] + k + i; @mix: b[i] ^= t[i]. Each round of the loops
// is three dispatches that depend on the round before, a temporary device
// buffer allocated and freed, and in the second loop a device copy; between
// the loops a d2h of %da (the middle), changed on the host and uploaded
// again into %da, which the batches still running read.
const char* kProgram = R"(
kernel @step(%a: buffer<u32, device, read>, %b: buffer<u32, device, write>, %k: u32) workgroup(64, 1, 1) {
  %i = global_id {dim = 0} : u32
  %n = buffer.len %b : u32
  %inside = lt %i, %n : bool
  if %inside {
    %x = load %a, %i : u32
    %three = const {value = 3} : u32
    %m = mul %x, %three : u32
    %s = add %m, %k : u32
    %t = add %s, %i : u32
    store %b, %i, %t
    yield
  } {
    yield
  }
  return
}

kernel @mix(%t: buffer<u32, device, read>, %b: buffer<u32, device, write>) workgroup(64, 1, 1) {
  %i = global_id {dim = 0} : u32
  %n = buffer.len %b : u32
  %inside = lt %i, %n : bool
  if %inside {
    %x = load %t, %i : u32
    %y = load %b, %i : u32
    %z = xor %x, %y : u32
    store %b, %i, %z
    yield
  } {
    yield
  }
  return
}

host @main() -> (buffer<u32, host, linear>, buffer<u32, host, linear>, buffer<u32, host, linear>) {
  %n = const {value = 1000} : u32
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %seven = const {value = 7} : u32
  %groups = const {value = 16} : u32
  %rounds = const {value = 24} : u32
  %h = alloc %n : buffer<u32, host, linear>
  for %zero, %n, %one { |%i: u32|
    store %h, %i, %i
    yield
  }
  %da = alloc %n : buffer<u32, device, linear>
  %db = alloc %n : buffer<u32, device, linear>
  h2d %da, %h
  h2d %db, %h
  for %zero, %rounds, %one { |%r: u32|
    dispatch %groups, %one, %one, %da, %db, %r {kernel = @step}
    %dt = alloc %n : buffer<u32, device, linear>
    %r7 = add %r, %seven : u32
    dispatch %groups, %one, %one, %db, %dt, %r7 {kernel = @step}
    dispatch %groups, %one, %one, %dt, %da {kernel = @mix}
    free %dt
    yield
  }
  %mid = alloc %n : buffer<u32, host, linear>
  d2h %mid, %da
  %h2 = alloc %n : buffer<u32, host, linear>
  for %zero, %n, %one { |%i: u32|
    %v = load %mid, %i : u32
    %w = add %v, %seven : u32
    store %h2, %i, %w
    yield
  }
  h2d %da, %h2
  for %zero, %rounds, %one { |%r: u32|
    %dt = alloc %n : buffer<u32, device, linear>
    dispatch %groups, %one, %one, %da, %dt, %r {kernel = @step}
    copy %db, %dt
    dispatch %groups, %one, %one, %db, %da {kernel = @mix}
    free %dt
    yield
  }
  %ha = alloc %n : buffer<u32, host, linear>
  %hb = alloc %n : buffer<u32, host, linear>
  d2h %ha, %da
  d2h %hb, %db
  free %da
  free %db
  free %h
  free %h2
  return %mid, %ha, %hb
}
)";

std::unique_ptr<ir::Module> parse(ir::Context& ctx, const char* text) {
  auto m = ir::parseModule(ctx, text, "pipelined.eir");
  EXPECT_TRUE(m) << m.error().str();
  if (!m) return nullptr;
  Status s = ir::verify(**m);
  EXPECT_TRUE(s) << s.error().str();
  return s ? std::move(*m) : nullptr;
}

void expectNoValidationMessages(runtime::VulkanDevice& dev) {
  for (const std::string& m : dev.takeValidationMessages()) ADD_FAILURE() << "validation: " << m;
}

// maxBatchCommands 0: the same as batchCommands (every batch that size,
// whether or not the GPU still runs the one before: deterministic).
struct Config {
  unsigned batchCommands, batchesInFlight;
  bool uploadQueue = false;  // VulkanOptions::uploadsOnComputeQueue where there is no second queue
  unsigned maxBatchCommands = 0;
  int spinWaitUs = -1;  // VulkanOptions' default for the device (lavapipe: no polling)
  unsigned firstBatch = 4;
};

runtime::VulkanOptions options(Config c) {
  runtime::VulkanOptions o;
  o.batchCommands = c.batchCommands;
  o.maxBatchCommands = c.maxBatchCommands ? c.maxBatchCommands : c.batchCommands;
  o.batchesInFlight = c.batchesInFlight;
  o.uploadsOnComputeQueue = c.uploadQueue;
  o.spinWaitUs = c.spinWaitUs;
  o.firstBatch = c.firstBatch;
  return o;
}

TEST(VulkanPipelined, ManyDependentDispatchesGiveTheInterpretersResults) {
  REQUIRE_VULKAN();
  ir::Context ctx;
  auto m = parse(ctx, kProgram);
  ASSERT_TRUE(m);
  auto ref = runtime::openDevice("interp");
  ASSERT_TRUE(ref);
  HostRun want = runMainOn(**ref, *m);
  ASSERT_TRUE(want.results) << want.results.error().str();
  // 0: one batch between sync points (no pipelining); 1: a submission per
  // command; 1 in flight: each batch waited for before the next is recorded.
  // Then batches of 5 or more, as the GPU keeps up; the last two poll the
  // fences (for up to a second) before sleeping, the last starting each
  // ramp at one command.
  for (Config c : {Config{0, 3}, Config{1, 2}, Config{2, 1}, Config{5, 2}, Config{7, 3}, Config{256, 3},
                   Config{0, 3, true}, Config{1, 3, true}, Config{5, 2, true}, Config{5, 3, false, 4096},
                   Config{5, 2, true, 4096}, Config{256, 3, false, 0, 1'000'000},
                   Config{256, 2, true, 0, 1'000'000, 1}}) {
    SCOPED_TRACE("batchCommands " + std::to_string(c.batchCommands) + ", batchesInFlight " +
                 std::to_string(c.batchesInFlight) + (c.uploadQueue ? ", upload queue" : "") +
                 ", maxBatchCommands " + std::to_string(c.maxBatchCommands) + ", spinWaitUs " +
                 std::to_string(c.spinWaitUs) + ", firstBatch " + std::to_string(c.firstBatch));
    auto dev = openValidated(options(c));
    ASSERT_TRUE(dev);
    if (c.uploadQueue) ASSERT_TRUE(dev->hasUploadQueue());
    HostRun got = runMainOn(*dev, *m);
    ASSERT_TRUE(got.results) << got.results.error().str();
    auto diff = runtime::compareResults(*want.results, want.interp->memory(), *got.results, got.interp->memory(), {});
    EXPECT_FALSE(diff) << "result " << diff->result << ", element " << diff->element << ": interp " << diff->a
                       << ", vulkan " << diff->b;
    // 2 x 24 rounds of 3 commands, 2 uploads, 1 re-upload, 3
    // d2h: with small batches many submissions; with none, one per sync
    // point; with 256, also the ramp after each sync point (batches of 4,
    // 8, 16, 32, 64 commands where the GPU is idle), at most 5 more each
    // (7 more from batches of one: 1, 2, .., 64).
    unsigned submits = dev->stats().submits;
    if (c.batchCommands == 0) EXPECT_LE(submits, c.uploadQueue ? 5u : 4u);
    else if (c.batchCommands == 256) EXPECT_LE(submits, (c.uploadQueue ? 5u : 4u) * (c.firstBatch == 1 ? 8u : 6u));
    else if (!c.maxBatchCommands) EXPECT_GE(submits, 144u / c.batchCommands);
    expectNoValidationMessages(*dev);
  }
}

// The environment's settings are checked: a wrong one is an error naming it
// (and so is a first batch of no commands).
TEST(VulkanPipelined, WrongEnvironmentSettingsAreErrors) {
  REQUIRE_VULKAN();
  for (const char* name : {"EPH_VK_SPIN_US", "EPH_VK_FIRST_BATCH"}) {
    SCOPED_TRACE(name);
    const char* old = std::getenv(name);
    const std::string saved = old ? old : "";
    ::setenv(name, "soon", 1);
    auto dev = runtime::VulkanDevice::open({});
    ASSERT_FALSE(dev);
    EXPECT_NE(dev.error().message.find(std::string(name) + "='soon' is not a number from "), std::string::npos)
        << dev.error().message;
    ::setenv(name, "0", 1);  // 0 polls not at all; a first batch of 0 commands is not one
    auto zero = runtime::VulkanDevice::open({});
    EXPECT_EQ(bool(zero), std::string(name) == "EPH_VK_SPIN_US") << (zero ? "" : zero.error().message);
    if (old) ::setenv(name, saved.c_str(), 1);
    else ::unsetenv(name);
  }
  runtime::VulkanOptions o;
  o.firstBatch = 0;
  auto none = runtime::VulkanDevice::open(o);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "VulkanOptions::firstBatch is 0; it must be at least 1");
}

// The same through the API: a chain of dependent dispatches over several
// batches, each reading what the one before wrote; buffers freed while a
// batch that uses them may run, their memory reused at once by the next
// alloc (or kept until that batch retires); a d2h in the middle that must
// wait for the batch holding the last write.
const char* kAddOne = R"(
kernel @addone(%a: buffer<u32, device, read>, %b: buffer<u32, device, write>) workgroup(64, 1, 1) {
  %i = local_id {dim = 0} : u32
  %one = const {value = 1} : u32
  %x = load %a, %i : u32
  %y = add %x, %one : u32
  store %b, %i, %y
  return
}
)";

TEST(VulkanPipelined, FreedBuffersAndMidwayDownloads) {
  REQUIRE_VULKAN();
  ir::Context ctx;
  auto m = parse(ctx, kAddOne);
  ASSERT_TRUE(m);
  runtime::VulkanOptions o = options({3, 2});
  o.transferQueue = false;  // the upload orders against the first dispatch by a barrier
  auto dev = openValidated(o);
  ASSERT_TRUE(dev);
  ASSERT_TRUE(dev->prepare(*m));
  const ir::Function& k = *m->lookup("addone");
  const ir::Type* t = ctx.bufferType(ctx.u32(), ir::Space::Device, ir::Ownership::Linear);
  auto arg = [&](uint64_t h) {
    interp::RtValue v;
    v.type = t;
    v.buffer = h;
    return v;
  };
  std::vector<uint32_t> data(64, 5);
  auto first = dev->alloc(t, 64, {});
  ASSERT_TRUE(first);
  ASSERT_TRUE(dev->uploadBytes(*first, std::as_bytes(std::span(data))));
  // A chain through fresh buffers, each freed right after the dispatch that
  // reads it: 40 dispatches in batches of 3, 2 in flight.
  uint64_t cur = *first;
  unsigned submitsBefore = dev->stats().submits, barriersBefore = dev->stats().barriers;
  for (int i = 1; i <= 40; ++i) {
    auto next = dev->alloc(t, 64, {});
    ASSERT_TRUE(next);
    std::vector<interp::RtValue> args = {arg(cur), arg(*next)};
    ASSERT_TRUE(dev->dispatch(k, {1, 1, 1}, args, {}));
    ASSERT_TRUE(dev->free(cur, {}));
    cur = *next;
    if (i == 20) {  // in the middle: the newest batch holds the last write
      std::vector<uint32_t> got(64);
      ASSERT_TRUE(dev->downloadBytes(std::as_writable_bytes(std::span(got)), cur));
      EXPECT_EQ(got, std::vector<uint32_t>(64, 5 + 20));
    }
  }
  EXPECT_GE(dev->stats().submits - submitsBefore, 40u / 3);  // batches went without waiting for a result
  std::vector<uint32_t> got(64);
  ASSERT_TRUE(dev->downloadBytes(std::as_writable_bytes(std::span(got)), cur));
  EXPECT_EQ(got, std::vector<uint32_t>(64, 5 + 40));
  // Each command reads what the one before wrote, most of them in an
  // earlier batch that may still run: a barrier before each (synchronization
  // validation here sees hazards only inside a command buffer, and lavapipe
  // runs a queue's commands one after another, so this is the check that
  // the hazards between batches are ordered). None before dispatch 21: the
  // d2h before it waited for everything.
  EXPECT_EQ(dev->stats().barriers - barriersBefore, 41u);
  ASSERT_TRUE(dev->free(cur, {}));
  // Everything has run: every buffer went back to the pool.
  ASSERT_TRUE(dev->wait({}));
  EXPECT_EQ(dev->memoryStats().allocations, 0u);
  expectNoValidationMessages(*dev);
}

// Uploads on the upload queue (VulkanOptions::uploadsOnComputeQueue where
// the device has one queue): a dispatch in a later batch than the upload it
// reads waits for that batch's timeline value; an upload into a buffer that
// recorded compute work reads goes to the compute queue behind a barrier; a
// second upload into a buffer an earlier upload batch wrote waits behind a
// barrier on the upload queue.
TEST(VulkanPipelined, UploadQueueOrderedByTheTimeline) {
  REQUIRE_VULKAN();
  ir::Context ctx;
  auto m = parse(ctx, kAddOne);
  ASSERT_TRUE(m);
  runtime::VulkanOptions o = options({2, 3, true});
  auto dev = openValidated(o);
  ASSERT_TRUE(dev);
  ASSERT_TRUE(dev->hasUploadQueue());
  const ir::Function& k = *m->lookup("addone");
  const ir::Type* t = ctx.bufferType(ctx.u32(), ir::Space::Device, ir::Ownership::Linear);
  uint64_t a = *dev->alloc(t, 64, {}), b = *dev->alloc(t, 64, {}), c = *dev->alloc(t, 64, {});
  auto put = [&](uint64_t h, uint32_t v) {
    std::vector<uint32_t> data(64, v);
    ASSERT_TRUE(dev->uploadBytes(h, std::as_bytes(std::span(data))));
  };
  auto addone = [&](uint64_t from, uint64_t to) {
    interp::RtValue x, y;
    x.type = y.type = t;
    x.buffer = from;
    y.buffer = to;
    std::vector<interp::RtValue> args = {x, y};
    ASSERT_TRUE(dev->dispatch(k, {1, 1, 1}, args, {}));
  };
  auto get = [&](uint64_t h) {
    std::vector<uint32_t> data(64);
    EXPECT_TRUE(dev->downloadBytes(std::as_writable_bytes(std::span(data)), h));
    return data[0];
  };
  put(a, 1);
  put(b, 10);     // batch 0 full: uploads alone
  addone(a, c);   // batch 1 waits for batch 0's uploads: c = 2
  put(a, 100);    // batch 1 reads a: on the compute queue, after the dispatch
  addone(c, b);   // batch 2: b = 3
  put(c, 50);     // batch 2 reads c: compute queue; batch 2 full
  put(a, 7);      // the upload queue once batch 1 has retired, else the compute queue
  addone(a, c);   // c = 8
  EXPECT_EQ(get(b), 3u);
  EXPECT_EQ(get(c), 8u);
  EXPECT_EQ(get(a), 7u);
  put(b, 40);     // nothing runs: the upload queue
  put(b, 41);     // same batch, same buffer: a barrier between them
  addone(b, a);
  EXPECT_EQ(get(a), 42u);
  expectNoValidationMessages(*dev);
}

// With profiling, every batch's timestamps are read when it retires: each
// dispatch once, in order, numbered by its submission.
TEST(VulkanPipelined, TimestampsOfEveryBatch) {
  REQUIRE_VULKAN();
  ir::Context ctx;
  auto m = parse(ctx, kAddOne);
  ASSERT_TRUE(m);
  runtime::VulkanOptions o = options({4, 3});
  o.profile = true;
  o.transferQueue = false;
  auto dev = openValidated(o);
  ASSERT_TRUE(dev);
  const ir::Function& k = *m->lookup("addone");
  const ir::Type* t = ctx.bufferType(ctx.u32(), ir::Space::Device, ir::Ownership::Linear);
  auto a = dev->alloc(t, 64, {}), b = dev->alloc(t, 64, {});
  ASSERT_TRUE(a && b);
  std::vector<uint32_t> data(64, 0);
  ASSERT_TRUE(dev->uploadBytes(*a, std::as_bytes(std::span(data))));
  ASSERT_TRUE(dev->uploadBytes(*b, std::as_bytes(std::span(data))));
  interp::RtValue va, vb;
  va.type = vb.type = t;
  va.buffer = *a;
  vb.buffer = *b;
  for (int i = 0; i < 10; ++i) {  // a -> b -> a ...: 20 dependent dispatches
    std::vector<interp::RtValue> ab = {va, vb}, ba = {vb, va};
    ASSERT_TRUE(dev->dispatch(k, {1, 1, 1}, ab, {}));
    ASSERT_TRUE(dev->dispatch(k, {1, 1, 1}, ba, {}));
  }
  ASSERT_TRUE(dev->downloadBytes(std::as_writable_bytes(std::span(data)), *a));
  EXPECT_EQ(data, std::vector<uint32_t>(64, 20));
  EXPECT_EQ(dev->takeDispatchTimes().size(), 20u);
  auto timeline = dev->takeTimeline();
  ASSERT_EQ(timeline.size(), 2u + 20u + 1u);  // h2d, h2d, 20 dispatches, d2h
  unsigned distinct = 1;
  for (size_t i = 1; i < timeline.size(); ++i) {
    EXPECT_GE(timeline[i].submission, timeline[i - 1].submission);
    distinct += timeline[i].submission != timeline[i - 1].submission;
  }
  EXPECT_EQ(distinct, 6u);  // 22 commands in batches of 4, the d2h in the last
  EXPECT_EQ(timeline.front().what, "h2d");
  EXPECT_EQ(timeline.back().what, "d2h");
  expectNoValidationMessages(*dev);
}

// An access out of bounds in the second of many batches is reported as the
// interpreter reports it, though later batches were recorded (and some ran)
// before the host saw it. One invocation (global id 7) goes out of bounds:
// with several, the first to reach the record wins on a GPU (docs/runtime.md),
// which need not be the interpreter's first.
TEST(VulkanPipelined, OutOfBoundsInAnEarlyBatchIsTheInterpretersError) {
  REQUIRE_VULKAN();
  const char* text = R"(
kernel @past(%a: buffer<u32, device, write>, %k: u32) workgroup(4, 1, 1) {
  %i = global_id {dim = 0} : u32
  %j = add %i, %k : u32
  %one = const {value = 1} : u32
  store %a, %j, %one
  return
}

host @main() -> (u32) {
  %n = const {value = 8} : u32
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %two = const {value = 2} : u32
  %far = const {value = 1} : u32
  %rounds = const {value = 30} : u32
  %d = alloc %n : buffer<u32, device, linear>
  for %zero, %rounds, %one { |%r: u32|
    dispatch %two, %one, %one, %d, %zero {kernel = @past}
    yield
  }
  dispatch %two, %one, %one, %d, %far {kernel = @past}
  for %zero, %rounds, %one { |%r: u32|
    dispatch %two, %one, %one, %d, %zero {kernel = @past}
    yield
  }
  wait
  free %d
  return %n
}
)";
  ir::Context ctx;
  auto m = parse(ctx, text);
  ASSERT_TRUE(m);
  auto ref = runtime::openDevice("interp");
  ASSERT_TRUE(ref);
  HostRun want = runMainOn(**ref, *m);
  ASSERT_FALSE(want.results);
  EXPECT_NE(want.results.error().str().find("index 8 is out of bounds for a buffer of 8 elements (in the "
                                            "invocation with global id (7, 0, 0))"),
            std::string::npos)
      << want.results.error().str();
  for (Config c : {Config{0, 3}, Config{4, 2}, Config{4, 3}, Config{4, 3, false, 4096}}) {
    runtime::VulkanOptions o = options(c);
    o.checkBounds = true;
    auto dev = openValidated(o);
    ASSERT_TRUE(dev);
    HostRun got = runMainOn(*dev, *m);
    ASSERT_FALSE(got.results);
    EXPECT_EQ(got.results.error().str(), want.results.error().str());
  }
}

}  // namespace
}  // namespace eph::test

#endif  // EPH_HAVE_VULKAN
