// runtime/: the Device API. Every example host program gives the same results
// run by the plain interpreter and run through a Device (InterpDevice takes the
// same path as the GPU and CPU targets: uploads, downloads, dispatch
// arguments); and storage layout round-trips values through bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/Layout.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/Device.h"

namespace eph::test {
namespace {

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string formatAll(const std::vector<interp::RtValue>& vs, interp::Memory& mem) {
  std::string s;
  for (auto& v : vs) s += interp::format(v, &mem) + "\n";
  return s;
}

// Runs @main of an example both ways with the given arguments.
void expectSameOnDevice(const std::string& file, std::vector<std::string> argTexts,
                        const std::string& expected) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx, readFile(std::string(EPH_SOURCE_DIR) + "/examples/ir/" + file), file);
  ASSERT_TRUE(m) << m.error().str();
  ASSERT_TRUE(ir::verify(**m));
  const ir::Function* main = (*m)->lookup("main");
  ASSERT_TRUE(main);

  auto run = [&](runtime::Device* dev) {
    interp::Interpreter in(**m);
    std::vector<interp::RtValue> args;
    for (size_t i = 0; i < argTexts.size(); ++i)
      args.push_back(*interp::parseValue(argTexts[i], main->paramTypes()[i], in.memory()));
    auto r = dev ? runtime::runHost(*dev, in, *main, args) : in.call(*main, args);
    EXPECT_TRUE(r) << r.error().str();
    return r ? formatAll(*r, in.memory()) : std::string("error");
  };
  auto dev = runtime::openDevice("interp");
  ASSERT_TRUE(dev);
  EXPECT_EQ(run(nullptr), expected);
  EXPECT_EQ(run(dev->get()), expected);
}

TEST(Runtime, ExamplesGiveTheSameResultsThroughADevice) {
  expectSameOnDevice("saxpy.eir", {}, "0\n1000000\n");
  expectSameOnDevice("reduce.eir", {}, "499500\ntrue\n");
  expectSameOnDevice("histogram.eir", {}, "[250, 500, 0, 0, 250, 0, 0, 0]\n");
}

TEST(Runtime, DeviceErrorsCarryTheOpLocation) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx,
                           "host @main(%n: u32) {\n"
                           "  %h = alloc %n : buffer<f32, host, linear>\n"
                           "  %d = alloc %n : buffer<f32, device, linear>\n"
                           "  h2d %d, %h\n"
                           "  free %h\n"
                           "  free %d\n"
                           "  return\n"
                           "}\n",
                           "up.eir");
  ASSERT_TRUE(m);
  auto dev = runtime::openDevice("interp");
  interp::Interpreter in(**m);
  auto r = runtime::runHost(**dev, in, *(*m)->lookup("main"),
                            {interp::RtValue::ofInt(ctx.u32(), 4)});
  ASSERT_FALSE(r);
  // An element never written has no value to copy: every device refuses the
  // upload, at the h2d (and so does the plain interpreter).
  EXPECT_EQ(r.error().str(), "up.eir:4:3: error: element 0 of a buffer of 4 is copied to the device but was never written");
}

TEST(Runtime, PlainInterpreterRefusesUnwrittenUploadsToo) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx,
                           "host @main(%n: u32) {\n"
                           "  %h = alloc %n : buffer<i32, host, linear>\n"
                           "  %z = const {value = 0} : u32\n"
                           "  %v = const {value = 5} : i32\n"
                           "  store %h, %z, %v\n"
                           "  %d = alloc %n : buffer<i32, device, linear>\n"
                           "  h2d %d, %h\n"
                           "  free %h\n"
                           "  free %d\n"
                           "  return\n"
                           "}\n",
                           "up2.eir");
  ASSERT_TRUE(m);
  interp::Interpreter in(**m);
  auto r = in.call(*(*m)->lookup("main"), {interp::RtValue::ofInt(ctx.u32(), 3)});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().str(), "up2.eir:7:3: error: element 1 of a buffer of 3 is copied to the device but was never written");
}

TEST(Runtime, UnknownTargetNamesTheAvailableOnes) {
  auto dev = runtime::openDevice("metal");
  ASSERT_FALSE(dev);
  std::string known;
  for (auto& t : runtime::availableTargets()) known += (known.empty() ? "" : ", ") + t;
  EXPECT_EQ(dev.error().message, "target 'metal' is not available in this build (available: " + known + ")");
}

TEST(Layout, OffsetsFollowTheRules) {
  ir::Context ctx;
  auto* s = ctx.structType({ctx.intType(8, false), ctx.f64(), ctx.vectorType(ctx.f32(), 3), ctx.boolType()});
  EXPECT_EQ(ir::fieldOffset(s, 0), 0u);
  EXPECT_EQ(ir::fieldOffset(s, 1), 8u);
  EXPECT_EQ(ir::fieldOffset(s, 2), 16u);
  EXPECT_EQ(ir::fieldOffset(s, 3), 32u);
  EXPECT_EQ(ir::storageSize(s), 48u);  // 36 bytes of fields, padded to the vec3's alignment
  EXPECT_EQ(ir::storageStride(ctx.vectorType(ctx.f32(), 3)), 16u);
  EXPECT_EQ(ir::sumPayloadOffset(ctx.sumType({ctx.i32(), ctx.f64()})), 8u);
  EXPECT_FALSE(ir::isStorable(ctx.structType({ctx.bufferType(ctx.f32(), ir::Space::Device, ir::Ownership::Read)})));
}

TEST(Layout, ValuesRoundTripThroughBytes) {
  ir::Context ctx;
  interp::Memory mem;
  auto* t = ctx.structType({ctx.intType(8, true), ctx.floatType(16), ctx.vectorType(ctx.f64(), 3),
                            ctx.arrayType(ctx.boolType(), 3), ctx.sumType({ctx.u32(), ctx.f32()})});
  auto v = interp::parseValue("(-7, 0.333, <1.5, -2.25, 1e300>, [true, false, true], #1(-0.1))", t, mem);
  ASSERT_TRUE(v) << v.error().str();
  std::vector<std::byte> bytes(ir::storageSize(t));
  ir::encode(*v, bytes.data());
  interp::RtValue back = ir::decode(t, bytes.data());
  EXPECT_EQ(interp::format(back), interp::format(*v));
  EXPECT_TRUE(back == *v);
  // The int8 is one byte of two's complement; the bools are u32 words.
  EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 0xF9u);
  uint32_t word;
  std::memcpy(&word, bytes.data() + ir::fieldOffset(t, 3) + 4, 4);
  EXPECT_EQ(word, 0u);
}

}  // namespace
}  // namespace eph::test
