// Kernels a device cannot run are errors that name the kernel and the
// missing capability or limit, never a module that fails in the driver.
#include "tests/unit/SpirvTestUtil.h"

namespace eph::test {
namespace {

class SpirvCapsTest : public SpirvTest {};

bool has(const std::string& text, std::string_view what) { return text.find(what) != std::string::npos; }

std::string typedKernel(std::string_view t) {
  std::string T(t);
  return "kernel @needs(%o: buffer<" + T + ", device, write>) workgroup(1, 1, 1) {\n"
         "  %i = const {value = 0} : u32\n  %v = load %o, %i : " + T + "\n  store %o, %i, %v\n  return\n}\n";
}

TEST_F(SpirvCapsTest, MissingTypesNameTheCapabilityAndTheKernel) {
  struct Case { std::string_view type, capability; };
  for (Case c : {Case{"f64", "float64"}, Case{"i64", "int64"}, Case{"u64", "int64"}, Case{"f16", "float16"},
                 Case{"i8", "int8"}, Case{"u16", "int16"}}) {
    std::string e = errorOf(typedKernel(c.type), "needs", caps("minimal"));
    EXPECT_TRUE(has(e, "kernel @needs needs " + std::string(c.capability))) << e;
    EXPECT_TRUE(has(e, "'" + std::string(c.type) + "'")) << e;
    EXPECT_TRUE(has(e, "minimal (profile)")) << e;
    EXPECT_TRUE(has(e, "test.eir:1:1")) << e;  // at the kernel
    // The same kernel is fine where the device has the type.
    ASSERT_TRUE(bool(emit("needs", caps("lavapipe")))) << c.type;
  }
}

TEST_F(SpirvCapsTest, TypesUsedOnlyInsideACalleeCount) {
  std::string e = errorOf(R"(
device @wide(%x: u32) -> u32 {
  %w = cast %x : f64
  %r = cast %w : u32
  return %r
}
kernel @k(%o: buffer<u32, device, write>) workgroup(1, 1, 1) {
  %i = const {value = 0} : u32
  %r = call %i {callee = @wide} : u32
  store %o, %i, %r
  return
}
)", "k", caps("minimal"));
  EXPECT_TRUE(has(e, "kernel @k needs float64")) << e;
}

TEST_F(SpirvCapsTest, SixtyFourBitAtomicsNeedTheDeviceFeature) {
  std::string text = R"(
kernel @k(%o: buffer<u64, device, write>, %v: u64) workgroup(1, 1, 1) {
  %i = const {value = 0} : u32
  %old = atomic.add %o, %i, %v : u64
  return
}
)";
  DeviceCaps c = caps("lavapipe");
  c.atomicInt64 = false;
  std::string e = errorOf(text, "k", c);
  EXPECT_TRUE(has(e, "kernel @k needs 64-bit integer atomics")) << e;
  EXPECT_TRUE(bool(emit("k", caps("lavapipe"))));

  std::string f = errorOf(R"(
kernel @k(%o: buffer<f64, device, write>, %v: f64) workgroup(1, 1, 1) {
  %i = const {value = 0} : u32
  %old = atomic.add %o, %i, %v : f64
  return
}
)", "k", c);  // no native f64 add and no 64-bit CAS to emulate it
  EXPECT_TRUE(has(f, "kernel @k needs 64-bit atomics")) << f;
}

TEST_F(SpirvCapsTest, WorkgroupLimits) {
  std::string big = R"(
kernel @big(%o: buffer<u32, device, write>) workgroup(256, 1, 1) {
  return
}
)";
  std::string e = errorOf(big, "big", caps("minimal"));
  EXPECT_TRUE(has(e, "kernel @big uses a workgroup of 256x1x1 invocations (maxWorkgroupInvocations) of 256, above the limit of 128")) << e;
  EXPECT_TRUE(bool(emit("big", caps("lavapipe"))));

  DeviceCaps c = caps("lavapipe");
  c.maxWorkgroupSize = {1024, 1024, 8};
  std::string z = errorOf(R"(
kernel @deep(%o: buffer<u32, device, write>) workgroup(1, 1, 16) {
  return
}
)", "deep", c);
  EXPECT_TRUE(has(z, "workgroup size in dimension 2 (maxWorkgroupSize) of 16, above the limit of 8")) << z;

  std::string m = errorOf(R"(
kernel @shared(%o: buffer<u32, device, write>) workgroup(64, 1, 1) {
  %s = workgroup.alloc {size = 8192} : buffer<f32, workgroup, write>
  return
}
)", "shared", caps("minimal"));
  EXPECT_TRUE(has(m, "kernel @shared uses workgroup memory (bytes, maxWorkgroupMemoryBytes) of 32768, above the limit of 16384")) << m;
}

TEST_F(SpirvCapsTest, PushConstantLimit) {
  DeviceCaps c = caps("lavapipe");
  c.maxPushConstantBytes = 8;
  std::string e = errorOf(R"(
kernel @k(%a: f32, %b: f32, %c: f32) workgroup(1, 1, 1) {
  return
}
)", "k", c);
  EXPECT_TRUE(has(e, "push constants")) << e;
  EXPECT_TRUE(has(e, "of 12, above the limit of 8")) << e;
}

TEST_F(SpirvCapsTest, WhatSpirvCannotExpressIsAnErrorNotACrash) {
  std::string sumBuffer = errorOf(R"(
kernel @k(%o: buffer<sum<u32, f32>, device, write>) workgroup(1, 1, 1) {
  return
}
)", "k", caps("lavapipe"));
  EXPECT_TRUE(has(sumBuffer, "sum types in buffer memory are not supported by the SPIR-V target")) << sumBuffer;

  std::string choose = errorOf(R"(
kernel @k(%a: buffer<u32, device, write>, %b: buffer<u32, device, write>, %c: bool) workgroup(1, 1, 1) {
  %x = if %c : buffer<u32, device, write> {
    yield %a
  } {
    yield %b
  }
  return
}
)", "k", caps("lavapipe"));
  EXPECT_TRUE(has(choose, "chooses between different buffers at run time")) << choose;

  std::string f16atomic = errorOf(R"(
kernel @k(%a: buffer<f16, device, write>, %v: f16) workgroup(1, 1, 1) {
  %i = const {value = 0} : u32
  %o = atomic.add %a, %i, %v : f16
  return
}
)", "k", caps("nvidia"));
  EXPECT_TRUE(has(f16atomic, "'atomic.add' on f16 elements is not supported")) << f16atomic;
}

TEST_F(SpirvCapsTest, VulkanOneZeroIsRefused) {
  load(typedKernel("u32"));
  DeviceCaps c = caps("minimal");
  c.vulkanApiVersion = 1u << 22;
  auto words = emit("needs", c);
  ASSERT_FALSE(bool(words));
  EXPECT_TRUE(has(words.error().message, "needs Vulkan 1.1 or later")) << words.error().message;
}

}  // namespace
}  // namespace eph::test
