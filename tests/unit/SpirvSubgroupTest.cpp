// Subgroup collectives on the SPIR-V target: what a broadcast becomes for the
// SPIR-V version, and a device without the feature an op needs.
#include "tests/unit/SpirvTestUtil.h"

namespace eph::test {
namespace {

class SpirvSubgroupTest : public SpirvTest {};

const char* const kBroadcast = R"(
kernel @k(%a: buffer<u32, device, write>) workgroup(16, 1, 1) {
  %g = global_id {dim = 0} : u32
  %w = workgroup_id {dim = 0} : u32
  %x = load %a, %g : u32
  %b = subgroup.broadcast %x, %w : u32
  store %a, %g, %b
  return
}
)";

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST_F(SpirvSubgroupTest, ComputedBroadcastLaneIsAShuffleBeforeSpirv15) {
  // Vulkan 1.3 (SPIR-V 1.6): a dynamically uniform lane is allowed.
  std::string now = asmOf(kBroadcast);
  EXPECT_TRUE(has(now, "OpGroupNonUniformBroadcast")) << now;
  // Vulkan 1.1 (SPIR-V 1.3): the lane must be a constant, so a shuffle.
  DeviceCaps old = caps("lavapipe");
  old.vulkanApiVersion = 1u << 22 | 1u << 12;
  ASSERT_TRUE(load(kBroadcast));
  auto words = emit("k", old);
  ASSERT_TRUE(words) << words.error().str();
  std::string text = spirv::disassemble(*words);
  EXPECT_TRUE(has(text, "OpGroupNonUniformShuffle")) << text;
  EXPECT_FALSE(has(text, "OpGroupNonUniformBroadcast")) << text;
  // ... which a device without shuffles cannot run.
  old.subgroupShuffle = false;
  std::string e = errorOf(kBroadcast, "k", old);
  EXPECT_TRUE(has(e, "test.eir:6:3")) << e;
  EXPECT_TRUE(has(e, "needs subgroup shuffle ('subgroup.broadcast')")) << e;
}

TEST_F(SpirvSubgroupTest, MissingFeaturesNameTheOp) {
  DeviceCaps c = caps("lavapipe");
  c.subgroupBroadcast = false;
  std::string e = errorOf(R"(
kernel @k(%a: buffer<f32, device, write>) workgroup(16, 1, 1) {
  %g = global_id {dim = 0} : u32
  %x = load %a, %g : f32
  %one = const {value = 1} : u32
  %b = subgroup.broadcast %x, %one : f32
  %s = subgroup.shuffle %b, %one : f32
  store %a, %g, %s
  return
}
)", "k", c);
  EXPECT_TRUE(has(e, "needs subgroup broadcast (ballot) ('subgroup.broadcast')")) << e;
  c = caps("lavapipe");
  c.subgroupShuffle = false;
  e = errorOf(R"(
kernel @k(%a: buffer<f32, device, write>) workgroup(16, 1, 1) {
  %g = global_id {dim = 0} : u32
  %x = load %a, %g : f32
  %s = subgroup.shuffle %x, %g : f32
  store %a, %g, %s
  return
}
)", "k", c);
  EXPECT_TRUE(has(e, "needs subgroup shuffle ('subgroup.shuffle')")) << e;
}

}  // namespace
}  // namespace eph::test
