// Buffer views (buffer.view %buf, %offset, %count): a dispatch on a view
// writes only its window of the parent; h2d, d2h and copy move exactly the
// view's elements; buffer.len of a view is its count; a view out of range, or
// a dispatch passing overlapping views it writes, is an error with the op's
// location. Each program runs on the interpreter, the cpu target and Vulkan
// (when this build and machine have them) and the results are compared.
#include <gtest/gtest.h>

#include <memory>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/Compare.h"
#include "runtime/Device.h"
#include "tests/support/DeviceRun.h"
#include "tests/support/VulkanTest.h"

namespace eph::test {
namespace {

// @main fills a host buffer of 10 with h[i] = i and uploads it to %d; the
// body then works on %d, %h and the constants, and returns %h.
std::string program(const std::string& body) {
  return R"(
kernel @inc(%b: buffer<u32, device, write>) workgroup(8, 1, 1) {
  %gid = global_id {dim = 0} : u32
  %n = buffer.len %b : u32
  %in = lt %gid, %n : bool
  if %in {
    %x = load %b, %gid : u32
    %c = const {value = 100} : u32
    %y = add %x, %c : u32
    store %b, %gid, %y
    yield
  } {
    yield
  }
  return
}

host @main() -> buffer<u32, host, linear> {
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %two = const {value = 2} : u32
  %three = const {value = 3} : u32
  %four = const {value = 4} : u32
  %six = const {value = 6} : u32
  %seven = const {value = 7} : u32
  %n = const {value = 10} : u32
  %h = alloc %n : buffer<u32, host, linear>
  for %zero, %n, %one { |%i: u32|
    store %h, %i, %i
    yield
  }
  %d = alloc %n : buffer<u32, device, linear>
  h2d %d, %h
)" + body + R"(
  free %d
  return %h
}
)";
}

std::unique_ptr<ir::Module> parse(ir::Context& ctx, const std::string& text) {
  auto m = ir::parseModule(ctx, text, "view.eir");
  EXPECT_TRUE(m) << m.error().str() << "\n" << text;
  if (!m) return nullptr;
  Status valid = ir::verify(**m);
  EXPECT_TRUE(valid) << valid.error().str();
  return valid ? std::move(*m) : nullptr;
}

std::vector<uint64_t> elements(HostRun& r) {
  std::vector<uint64_t> out;
  interp::BufferData* b = r.interp->memory().get((*r.results)[0].buffer);
  if (!b) return out;
  for (const interp::RtValue& v : b->elems) out.push_back(uint64_t(v.i));
  return out;
}

// Runs @main on every target: the interpreter's host buffer is `want`, and
// every other target's result equals the interpreter's.
void expectOnEveryTarget(const std::string& body, const std::vector<uint64_t>& want) {
  ir::Context ctx;
  auto m = parse(ctx, program(body));
  ASSERT_TRUE(m);
  auto ref = runtime::openDevice("interp");
  ASSERT_TRUE(ref);
  HostRun expected = runMainOn(**ref, *m);
  ASSERT_TRUE(expected.results) << "interp: " << expected.results.error().str();
  EXPECT_EQ(elements(expected), want);
  for (const std::string& t : runtime::availableTargets()) {
    if (t == "interp") continue;
    auto dev = runtime::openDevice(t);
    if (!dev) continue;  // not on this machine
    HostRun got = runMainOn(**dev, *m);
    ASSERT_TRUE(got.results) << t << ": " << got.results.error().str();
    auto diff = runtime::compareResults(*expected.results, expected.interp->memory(), *got.results,
                                        got.interp->memory(), {});
    EXPECT_FALSE(diff) << t << ": element " << diff->element << ": interp " << diff->a << ", " << t << " "
                       << diff->b;
  }
}

// The error of running @main on every target (all must fail alike).
void expectErrorOnEveryTarget(const std::string& body, const std::string& message, unsigned line) {
  ir::Context ctx;
  auto m = parse(ctx, program(body));
  ASSERT_TRUE(m);
  for (const std::string& t : runtime::availableTargets()) {
    auto dev = runtime::openDevice(t);
    if (!dev) continue;
    HostRun got = runMainOn(**dev, *m);
    ASSERT_FALSE(got.results) << t;
    EXPECT_NE(got.results.error().message.find(message), std::string::npos) << t << ": " << got.results.error().str();
    EXPECT_EQ(got.results.error().loc.line, line) << t << ": " << got.results.error().str();
  }
}

TEST(BufferView, DispatchOnAViewWritesOnlyItsRange) {
  // The kernel runs 8 invocations; those past the view's count of 4 do
  // nothing. (Offset 4 is 16 bytes: aligned for Vulkan's descriptors.)
  expectOnEveryTarget(R"(
  %v = buffer.view %d, %four, %four : buffer<u32, device, write>
  dispatch %one, %one, %one, %v {kernel = @inc}
  wait
  d2h %h, %d
)",
                      {0, 1, 2, 3, 104, 105, 106, 107, 8, 9});
}

TEST(BufferView, ViewOfAViewIsAWindowOfTheWindow) {
  expectOnEveryTarget(R"(
  %v = buffer.view %d, %two, %seven : buffer<u32, device, write>
  %w = buffer.view %v, %two, %three : buffer<u32, device, write>
  dispatch %one, %one, %one, %w {kernel = @inc}
  wait
  d2h %h, %d
)",
                      {0, 1, 2, 3, 104, 105, 106, 7, 8, 9});
}

TEST(BufferView, AnEmptyViewAtTheEndReachesNothing) {
  expectOnEveryTarget(R"(
  %v = buffer.view %d, %n, %zero : buffer<u32, device, write>
  dispatch %one, %one, %one, %v {kernel = @inc}
  wait
  d2h %h, %d
)",
                      {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST(BufferView, TransfersMoveTheViewsElements) {
  // h2d into d[2..5) from a host buffer of 3; copy d[6..8) into d2[1..3);
  // d2h of d2 into h[0..4); d2h of d[2..5) into h[7..10).
  expectOnEveryTarget(R"(
  %hs = alloc %three : buffer<u32, host, linear>
  for %zero, %three, %one { |%i: u32|
    %c = const {value = 50} : u32
    %x = add %i, %c : u32
    store %hs, %i, %x
    yield
  }
  %vd = buffer.view %d, %two, %three : buffer<u32, device, write>
  h2d %vd, %hs
  free %hs
  %d2 = alloc %four : buffer<u32, device, linear>
  %h4 = buffer.view %h, %six, %four : buffer<u32, host, read>
  h2d %d2, %h4
  %src = buffer.view %d, %six, %two : buffer<u32, device, read>
  %dst = buffer.view %d2, %one, %two : buffer<u32, device, write>
  copy %dst, %src
  %hv = buffer.view %h, %zero, %four : buffer<u32, host, write>
  d2h %hv, %d2
  free %d2
  %back = buffer.view %h, %seven, %three : buffer<u32, host, write>
  d2h %back, %vd
)",
                      {6, 6, 7, 9, 4, 5, 6, 50, 51, 52});
}

TEST(BufferView, LengthOfAViewIsItsCount) {
  // Stored into h[0] and h[1]: the length of a device view and of a host view.
  expectOnEveryTarget(R"(
  %v = buffer.view %d, %three, %four : buffer<u32, device, read>
  %a = buffer.len %v : u32
  %w = buffer.view %h, %one, %seven : buffer<u32, host, write>
  %b = buffer.len %w : u32
  store %w, %zero, %a
  store %h, %zero, %b
)",
                      {7, 4, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST(BufferView, OutOfRangeIsAnErrorAtTheView) {
  // Line 34 of the program is the body's first line.
  expectErrorOnEveryTarget("  %v = buffer.view %d, %seven, %four : buffer<u32, device, write>\n",
                           "view of elements [7, 7 + 4) is out of range for a buffer of 10 elements", 34);
  expectErrorOnEveryTarget("  %v = buffer.view %h, %n, %one : buffer<u32, host, read>\n",
                           "view of elements [10, 10 + 1) is out of range for a buffer of 10 elements", 34);
}

// On Vulkan a view is a descriptor range: a byte offset the device cannot
// bind is an error naming its alignment (the interpreter and cpu take any).
TEST(BufferView, MisalignedViewOnVulkanIsAnError) {
  REQUIRE_VULKAN();
  auto dev = runtime::openDevice("vulkan");
  ASSERT_TRUE(dev) << dev.error().message;
  uint64_t align = (*dev)->caps().storageBufferOffsetAlignment;
  if (align <= 4) GTEST_SKIP() << "every u32 offset is aligned on " << (*dev)->caps().name;
  ir::Context ctx;
  auto m = parse(ctx, program(R"(
  %v = buffer.view %d, %one, %four : buffer<u32, device, write>
  dispatch %one, %one, %one, %v {kernel = @inc}
)"));
  ASSERT_TRUE(m);
  HostRun got = runMainOn(**dev, *m);
  ASSERT_FALSE(got.results);
  EXPECT_NE(got.results.error().message.find("a view at element 1 starts at byte 4, not a multiple of the device's "
                                             "minStorageBufferOffsetAlignment (" +
                                             std::to_string(align) + " bytes)"),
            std::string::npos)
      << got.results.error().str();
  EXPECT_EQ(got.results.error().loc.line, 36u) << got.results.error().str();  // the dispatch
}

TEST(BufferView, AccessPastTheCountIsOutOfBounds) {
  ir::Context ctx;
  auto m = parse(ctx, program(R"(
  %w = buffer.view %h, %two, %four : buffer<u32, host, write>
  store %w, %four, %one
)"));
  ASSERT_TRUE(m);
  auto ref = runtime::openDevice("interp");
  ASSERT_TRUE(ref);
  HostRun got = runMainOn(**ref, *m);
  ASSERT_FALSE(got.results);
  EXPECT_NE(got.results.error().message.find("index 4 is out of bounds for a buffer of 4 elements"),
            std::string::npos)
      << got.results.error().str();
}

// A kernel indexing past a view's count is out of bounds on every target
// (Vulkan with bounds checks), even though the parent has that element.
TEST(BufferView, KernelAccessPastTheCountIsOutOfBounds) {
  std::string text = program(R"(
  %v = buffer.view %d, %four, %four : buffer<u32, device, write>
  dispatch %one, %one, %one, %v {kernel = @all}
  wait
)") + R"(
kernel @all(%b: buffer<u32, device, write>) workgroup(8, 1, 1) {
  %gid = global_id {dim = 0} : u32
  store %b, %gid, %gid
  return
}
)";
  ir::Context ctx;
  auto m = parse(ctx, text);
  ASSERT_TRUE(m);
  runtime::DeviceOptions checked;
  checked.checkBounds = true;
  for (const std::string& t : runtime::availableTargets()) {
    auto dev = runtime::openDevice(t, -1, checked);
    if (!dev) continue;
    HostRun got = runMainOn(**dev, *m);
    ASSERT_FALSE(got.results) << t;
    EXPECT_NE(got.results.error().message.find("index 4 is out of bounds for a buffer of 4 elements"),
              std::string::npos)
        << t << ": " << got.results.error().str();
  }
}

TEST(BufferView, OverlappingWrittenViewsInOneDispatchAreAnError) {
  std::string text = program(R"(
  %a = buffer.view %d, %zero, %four : buffer<u32, device, write>
  %b = buffer.view %d, %three, %four : buffer<u32, device, write>
  %c = buffer.view %d, %four, %four : buffer<u32, device, write>
  dispatch %one, %one, %one, %a, %c {kernel = @two}
  dispatch %one, %one, %one, %a, %b {kernel = @two}
)") + R"(
kernel @two(%x: buffer<u32, device, write>, %y: buffer<u32, device, write>) workgroup(1, 1, 1) {
  return
}
)";
  ir::Context ctx;
  auto m = parse(ctx, text);
  ASSERT_TRUE(m);
  auto ref = runtime::openDevice("interp");
  ASSERT_TRUE(ref);
  HostRun got = runMainOn(**ref, *m);
  ASSERT_FALSE(got.results);
  EXPECT_NE(got.results.error().message.find("the same buffer is passed as arguments 0 and 1"), std::string::npos)
      << got.results.error().str();
  EXPECT_EQ(got.results.error().loc.line, 39u) << got.results.error().str();  // the second dispatch
}

}  // namespace
}  // namespace eph::test
