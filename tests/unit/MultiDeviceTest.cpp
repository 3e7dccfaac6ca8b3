// Several devices (runtime/DeviceSet.h, `alloc {device = k}`, `copy`): one
// host program allocating on device 0 and 1, copying between them and
// dispatching on each gives the same results on every pair of devices as on
// one device and in the plain interpreter; buffers of one dispatch on two
// devices, a device the run does not have, and a copy between buffers of
// different lengths are errors at the op; the verifier checks the new
// attribute and op.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/Device.h"
#include "runtime/DeviceSet.h"

namespace eph::test {
namespace {

std::string readInput(const std::string& name) {
  std::ifstream in(std::string(EPH_SOURCE_DIR) + "/tests/lit/ephc/Inputs/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void replaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// The results of @main as text, or "error: " and the error.
std::string run(const std::string& text, const std::vector<std::string>& targets, bool checks = false) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx, text, "multi.eir");
  if (!m) return "parse error: " + m.error().str();
  if (Status v = ir::verify(**m); !v) return "verify error: " + v.error().str();
  interp::Interpreter in(**m);
  Expected<std::vector<interp::RtValue>> r = std::vector<interp::RtValue>{};
  if (targets.empty()) {
    r = in.call(*(*m)->lookup("main"), {});  // the reference: no device hooks
  } else {
    std::vector<std::unique_ptr<runtime::Device>> owned;
    std::vector<runtime::Device*> devices;
    for (const std::string& t : targets) {
      auto d = runtime::openDevice(t);
      if (!d) return "open error: " + d.error().message;
      owned.push_back(std::move(*d));
      devices.push_back(owned.back().get());
    }
    runtime::RunOptions opts;
    opts.checkBuffers = checks;
    r = runtime::runHost(devices, in, *(*m)->lookup("main"), {}, opts);
  }
  if (!r) return "error: " + r.error().str();
  std::string out;
  for (auto& v : *r) out += interp::format(v, &in.memory()) + "\n";
  return out;
}

std::vector<std::string> targets() {
  std::vector<std::string> ts;
  for (const std::string& t : runtime::availableTargets())
    if (t != "vulkan" || runtime::openDevice(t)) ts.push_back(t);
  return ts;
}

TEST(MultiDevice, TwoDevicesGiveTheSingleDeviceResults) {
  std::string two = readInput("two-devices.eir");
  ASSERT_NE(two.find("{device = 1}"), std::string::npos);
  std::string one = two;
  replaceAll(one, " {device = 1}", "");
  replaceAll(one, " {device = 0}", "");
  const std::string expected = "3\n17\n";
  EXPECT_EQ(run(two, {}), expected);  // the interpreter keeps every device buffer itself
  for (const std::string& a : targets()) {
    EXPECT_EQ(run(one, {a}), expected) << a;
    for (const std::string& b : targets()) {
      EXPECT_EQ(run(two, {a, b}), expected) << a << " + " << b;
      EXPECT_EQ(run(two, {a, b}, true), expected) << a << " + " << b << " with buffer checks";
    }
  }
}

// @main's body after a kernel of two buffers (lines 9.. of the program).
std::string program(const std::string& body) {
  return R"(kernel @add(%x: buffer<i32, device, read>, %y: buffer<i32, device, write>) workgroup(4, 1, 1) {
  %i = global_id {dim = 0} : u32
  %a = load %x, %i : i32
  %b = load %y, %i : i32
  %r = add %a, %b : i32
  store %y, %i, %r
  return
}
host @main() -> u32 {
  %n = const {value = 4} : u32
  %one = const {value = 1} : u32
)" + body + R"(  return %n
}
)";
}

TEST(MultiDevice, DispatchOfBuffersOnTwoDevicesIsAnError) {
  std::string text = program(
      "  %x = alloc %n : buffer<i32, device, linear>\n"                 // 12
      "  %y = alloc %n {device = 1} : buffer<i32, device, linear>\n"    // 13
      "  dispatch %one, %one, %one, %x, %y {kernel = @add}\n"          // 14
      "  free %x\n"
      "  free %y\n");
  EXPECT_EQ(run(text, {"interp", "interp"}),
            "error: multi.eir:14:3: error: dispatch of @add uses buffers on different devices: argument 0 is on "
            "device 0, argument 1 on device 1 (copy them to one device first)");
}

TEST(MultiDevice, AllocOnADeviceTheRunDoesNotHave) {
  std::string text = program(
      "  %x = alloc %n {device = 2} : buffer<i32, device, linear>\n"
      "  free %x\n");
  EXPECT_EQ(run(text, {"interp", "interp"}),
            "error: multi.eir:12:3: error: the buffer is allocated on device 2 but the program runs on 2 devices (0..1)");
  EXPECT_EQ(run(text, {"interp"}),
            "error: multi.eir:12:3: error: the buffer is allocated on device 2 but the program runs on 1 device (device 0)");
}

TEST(MultiDevice, CopyNeedsEqualLengthsAndWrittenElements) {
  std::string lengths = program(
      "  %two = const {value = 2} : u32\n"
      "  %x = alloc %n : buffer<i32, device, linear>\n"
      "  %y = alloc %two {device = 1} : buffer<i32, device, linear>\n"
      "  copy %y, %x\n"  // 15
      "  free %x\n"
      "  free %y\n");
  for (const std::string& t : targets())
    EXPECT_EQ(run(lengths, {t, t}),
              "error: multi.eir:15:3: error: copies a buffer of 4 elements into a buffer of 2")
        << t;
  EXPECT_EQ(run(lengths, {}), "error: multi.eir:15:3: error: copies a buffer of 4 elements into a buffer of 2");
  // A buffer nothing wrote: the interpreter (with or without hooks) knows.
  std::string unwritten = program(
      "  %x = alloc %n : buffer<i32, device, linear>\n"
      "  %y = alloc %n {device = 1} : buffer<i32, device, linear>\n"
      "  copy %y, %x\n"  // 14
      "  free %x\n"
      "  free %y\n");
  EXPECT_EQ(run(unwritten, {}), "error: multi.eir:14:3: error: element 0 of the source of a copy was never written");
  EXPECT_EQ(run(unwritten, {"interp", "interp"}),
            "error: multi.eir:14:3: error: element 0 of the source of a copy was never written");
}

TEST(MultiDevice, BufferChecksNameTheDevice) {
  std::string text = program(
      "  %x = alloc %n {device = 1} : buffer<i32, device, linear>\n"  // 12
      "  %y = alloc %n {device = 1} : buffer<i32, device, linear>\n"
      "  free %x\n"                                                     // 14
      "  copy %y, %x\n"                                                 // 15
      "  free %y\n");
  EXPECT_EQ(run(text, {"interp", "interp"}, true),
            "error: multi.eir:15:3: error: use after free: buffer allocated at multi.eir:12:3 on device 1 (interp) "
            "was freed at multi.eir:14:3 and used again at multi.eir:15:3 (by copy)");
}

TEST(MultiDevice, CopyOfAFreedBufferWithoutChecks) {
  std::string text = program(
      "  %x = alloc %n {device = 1} : buffer<i32, device, linear>\n"
      "  %y = alloc %n : buffer<i32, device, linear>\n"
      "  free %x\n"
      "  copy %y, %x\n"  // 15
      "  free %y\n");
  EXPECT_EQ(run(text, {"interp", "interp"}), "error: multi.eir:15:3: error: copy from a freed or unknown device buffer");
}

TEST(MultiDevice, VerifierChecksTheDeviceAttributeAndCopy) {
  auto verifyError = [](const std::string& body) {
    std::string text = program(body);
    ir::Context ctx;
    auto m = ir::parseModule(ctx, text, "multi.eir");
    if (!m) return "parse error: " + m.error().str();
    Status v = ir::verify(**m);
    return v ? std::string("ok") : v.error().str();
  };
  EXPECT_EQ(verifyError("  %h = alloc %n {device = 1} : buffer<i32, host, linear>\n  free %h\n"),
            "multi.eir:12:3: error[V009]: 'alloc': attribute 'device' is only for device buffers");
  EXPECT_EQ(verifyError("  %d = alloc %n {device = -1} : buffer<i32, device, linear>\n  free %d\n"),
            "multi.eir:12:3: error[V009]: 'alloc': attribute 'device' is -1, expected 0..255");
  EXPECT_EQ(verifyError("  %d = alloc %n {device = 1.5} : buffer<i32, device, linear>\n  free %d\n"),
            "multi.eir:12:3: error[V009]: 'alloc': needs attribute 'device' (an integer)");
  EXPECT_EQ(verifyError("  %h = alloc %n : buffer<i32, host, linear>\n"
                        "  %d = alloc %n : buffer<i32, device, linear>\n"
                        "  copy %d, %h\n  free %h\n  free %d\n"),
            "multi.eir:14:3: error[V009]: 'copy': source must be a device buffer, got 'buffer<i32, host, linear>'");
  EXPECT_EQ(verifyError("  %d = alloc %n : buffer<i32, device, linear>\n"
                        "  %f = alloc %n : buffer<f32, device, linear>\n"
                        "  copy %d, %f\n  free %f\n  free %d\n"),
            "multi.eir:14:3: error[V009]: 'copy': element types differ: 'i32' and 'f32'");
  EXPECT_EQ(verifyError("  %d = alloc %n {device = 3} : buffer<i32, device, linear>\n"
                        "  %e = alloc %n : buffer<i32, device, affine>\n"
                        "  copy %e, %d\n  free %d\n  free %e\n"),
            "ok");
}

TEST(MultiDevice, HandlesCarryTheDeviceIndex) {
  EXPECT_EQ(runtime::DeviceSet::deviceOf((uint64_t(3) << 56) | 42), 3u);
  EXPECT_EQ(runtime::DeviceSet::innerOf((uint64_t(3) << 56) | 42), 42u);
  EXPECT_EQ(runtime::DeviceSet::deviceOf(42), 0u);
}

TEST(MultiDevice, OpenDevicesParsesTheList) {
  auto two = runtime::openDevices("interp,interp");
  ASSERT_TRUE(two) << two.error().message;
  EXPECT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[1]->target(), "interp");
  auto bad = runtime::openDevices("interp,,interp");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "empty entry in the device list 'interp,,interp'");
  auto num = runtime::openDevices("vulkan:x");
  ASSERT_FALSE(num);
  EXPECT_EQ(num.error().message, "bad device number in 'vulkan:x' (want TARGET or TARGET:N)");
  auto unknown = runtime::openDevices("interp,metal");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message.rfind("device 1 ('metal'): target 'metal' is not available", 0), 0u)
      << unknown.error().message;
}

}  // namespace
}  // namespace eph::test
