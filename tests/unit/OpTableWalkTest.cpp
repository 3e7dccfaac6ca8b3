// The op table drives everything: this test walks it and fails when an op
// usable in kernels (not kHostOnly) lacks interpreter semantics, an entry in
// a target's lowering table (a lowering, or an explicit "not on this
// target"), or a differential case (OpInfo::samples, from which
// DifferentialVulkanTest's TableOps generates kernels, or OpInfo::diffTest
// naming a hand-written test of this binary). So a new kernel op is a table
// entry, one lowering per target and its samples; forgetting one fails here.
#include <gtest/gtest.h>

#include <string>

#include "ir/OpTable.h"
#include "ir/Parser.h"
#ifdef EPH_HAVE_VULKAN
#include "targets/spirv/Spirv.h"
#endif
#ifdef EPH_HAVE_LLVM
#include "targets/llvm/Llvm.h"
#endif

namespace eph::ir {
namespace {

std::string_view loweringName(Lowering l) {
  switch (l) {
    case Lowering::Missing: return "missing";
    case Lowering::Lowered: return "lowered";
    case Lowering::Unsupported: return "unsupported";
  }
  return "?";
}

// Whether this binary has the test "Suite.Name".
bool hasTest(std::string_view full) {
  const ::testing::UnitTest& u = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < u.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& s = *u.GetTestSuite(i);
    for (int j = 0; j < s.total_test_count(); ++j)
      if (std::string(s.name()) + "." + s.GetTestInfo(j)->name() == full) return true;
  }
  return false;
}

// The kernel ops of the IR library (frontends and plugins may register more,
// with their own tests).
std::vector<const OpInfo*> kernelOps() {
  std::vector<const OpInfo*> ops;
  for (const OpInfo* info : OpTable::get().all())
    if (!info->has(kHostOnly) && info->id != OpId::Custom) ops.push_back(info);
  return ops;
}

TEST(OpTableWalk, EveryKernelOpHasInterpreterSemantics) {
  for (const OpInfo* info : kernelOps())
    EXPECT_NE(info->interp, nullptr) << "op '" << info->name << "' has no interpreter semantics (OpInfo::interp)";
}

TEST(OpTableWalk, EveryKernelOpHasALoweringOrIsUnsupportedOnEachTarget) {
  for (const OpInfo* info : kernelOps()) {
#ifdef EPH_HAVE_VULKAN
    EXPECT_NE(spirv::lowersOp(info->id), Lowering::Missing)
        << "op '" << info->name << "' has no entry in the SPIR-V lowering table (targets/spirv/Emitter.h): "
        << "add a lowering, or &Emitter::emitUnsupported";
#endif
#ifdef EPH_HAVE_LLVM
    EXPECT_NE(llvmtarget::lowersOp(info->id), Lowering::Missing)
        << "op '" << info->name << "' has no entry in the LLVM lowering table (targets/llvm/Emitter.h): "
        << "add a lowering, or &FunctionEmitter::emitUnsupported";
#endif
  }
}

TEST(OpTableWalk, EveryLoweredKernelOpHasADifferentialCase) {
  for (const OpInfo* info : kernelOps()) {
    // An op no target lowers has nothing to compare (func.ref, call.indirect
    // are host code's); both targets must say so explicitly (above).
    bool lowered = false;
#ifdef EPH_HAVE_VULKAN
    lowered |= spirv::lowersOp(info->id) == Lowering::Lowered;
#endif
#ifdef EPH_HAVE_LLVM
    lowered |= llvmtarget::lowersOp(info->id) == Lowering::Lowered;
#endif
    if (!lowered) continue;
    EXPECT_TRUE(!info->samples.empty() || !info->diffTest.empty())
        << "op '" << info->name << "' has no differential case: give its OpInfo samples (generated cases) "
        << "or a diffTest naming a hand-written test";
    for (const SampleRow& row : info->samples) {
      EXPECT_FALSE(row.types.empty()) << info->name;
      EXPECT_LE(row.domains.size(), size_t(std::max(info->numOperands, 1))) << info->name;
    }
#ifdef EPH_HAVE_VULKAN
    if (!info->diffTest.empty()) {
      EXPECT_TRUE(hasTest(info->diffTest))
          << "op '" << info->name << "' names the differential test '" << info->diffTest << "', which does not exist";
    }
#endif
  }
}

TEST(OpTableWalk, TargetsAnswerForEveryOp) {
  // Unsupported and missing are told apart, and Custom has no entry.
#ifdef EPH_HAVE_VULKAN
  EXPECT_EQ(spirv::lowersOp(OpId::Add), Lowering::Lowered);
  EXPECT_EQ(spirv::lowersOp(OpId::FuncRef), Lowering::Unsupported) << loweringName(spirv::lowersOp(OpId::FuncRef));
  EXPECT_EQ(spirv::lowersOp(OpId::Alloc), Lowering::Missing);
  EXPECT_EQ(spirv::lowersOp(OpId::Custom), Lowering::Missing);
#endif
#ifdef EPH_HAVE_LLVM
  EXPECT_EQ(llvmtarget::lowersOp(OpId::Add), Lowering::Lowered);
  EXPECT_EQ(llvmtarget::lowersOp(OpId::CallIndirect), Lowering::Unsupported);
  EXPECT_EQ(llvmtarget::lowersOp(OpId::Custom), Lowering::Missing);
#endif
}

// An op with no lowering is a clear error at the op, never a crash (the
// verifier would refuse a host op in a kernel; the targets refuse it too).
const char* kHostOpInKernel =
    "kernel @k(%out: buffer<i32, device, write>) workgroup(1, 1, 1) {\n"
    "  %c = device.count : i32\n"
    "  %z = const {value = 0} : u32\n"
    "  store %out, %z, %c\n"
    "  return\n"
    "}\n";

#ifdef EPH_HAVE_VULKAN
TEST(OpTableWalk, SpirvNamesTheOpItCannotLower) {
  Context ctx;
  auto m = parseModule(ctx, kHostOpInKernel, "t.eir");
  ASSERT_TRUE(m) << m.error().str();
  auto words = spirv::emitKernel(*(*m)->lookup("k"), DeviceCaps{});
  ASSERT_FALSE(words);
  EXPECT_NE(words.error().str().find("t.eir:2:"), std::string::npos) << words.error().str();
  EXPECT_NE(words.error().str().find("op 'device.count' is not supported on target spirv"), std::string::npos)
      << words.error().str();
}
#endif

#ifdef EPH_HAVE_LLVM
TEST(OpTableWalk, LlvmNamesTheOpItCannotLower) {
  Context ctx;
  auto m = parseModule(ctx, kHostOpInKernel, "t.eir");
  ASSERT_TRUE(m) << m.error().str();
  auto text = llvmtarget::emitLlvmText(**m, {});
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().str().find("t.eir:2:"), std::string::npos) << text.error().str();
  EXPECT_NE(text.error().str().find("op 'device.count' is not supported on target cpu"), std::string::npos)
      << text.error().str();
}
#endif

}  // namespace
}  // namespace eph::ir
