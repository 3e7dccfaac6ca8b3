// The SPIR-V module builder on its own: deduplication of types and
// constants, the order of the flattened sections, the header and id bound,
// and capabilities/extensions derived from what was emitted.
// spirv.hpp11 declares HasResultAndType only with this defined.
#define SPV_ENABLE_UTILITY_CODE
#include <gtest/gtest.h>

#include <algorithm>

#include <spirv/unified1/GLSL.std.450.h>

#include "targets/spirv/Builder.h"
#include "targets/spirv/Spirv.h"

namespace eph::spirv {
namespace {

using spv::Op;

bool hasCap(const ModuleBuilder& b, spv::Capability c) { return b.capabilities().count(c) != 0; }

// The opcodes of a flattened module, in order (after the 5-word header).
std::vector<Op> opcodes(const std::vector<uint32_t>& words) {
  std::vector<Op> ops;
  for (size_t i = 5; i < words.size(); i += words[i] >> 16) ops.push_back(Op(words[i] & 0xffff));
  return ops;
}

// A complete, valid compute module: one kernel storing 1.0 into a buffer.
void buildSmallKernel(ModuleBuilder& b) {
  b.setMemoryModel(spv::AddressingModel::Logical, spv::MemoryModel::GLSL450);
  Id f32 = b.typeFloat(32), u32 = b.typeInt(32, false);
  Id block = b.typeStruct({b.typeRuntimeArray(f32, 4)}, {0}, true);
  Id var = b.globalVariable(b.typePointer(spv::StorageClass::StorageBuffer, block),
                            spv::StorageClass::StorageBuffer);
  b.decorate(var, spv::Decoration::DescriptorSet, {0});
  b.decorate(var, spv::Decoration::Binding, {0});
  Id voidT = b.typeVoid();
  Id fn = b.beginFunction(voidT, b.typeFunction(voidT, {}));
  Id ptr = b.op(Op::OpAccessChain, b.typePointer(spv::StorageClass::StorageBuffer, f32),
                {var, b.constInt(u32, 0), b.constInt(u32, 3)});
  Id v = b.glslOp(GLSLstd450Sqrt, f32, {b.constFloat(f32, 1.0)});
  b.opVoid(Op::OpStore, {ptr, v});
  b.opVoid(Op::OpReturn, {});
  b.endFunction();
  b.addName(fn, "main");
  b.addEntryPoint(spv::ExecutionModel::GLCompute, fn, "main", {var});
  b.addExecutionMode(fn, spv::ExecutionMode::LocalSize, {1, 1, 1});
}

TEST(SpirvBuilderTest, TypesAreDeduplicated) {
  ModuleBuilder b;
  Id u32 = b.typeInt(32, false);
  EXPECT_EQ(b.typeInt(32, false), u32);
  EXPECT_NE(b.typeInt(32, true), u32);
  EXPECT_NE(b.typeInt(64, false), u32);
  Id f32 = b.typeFloat(32);
  EXPECT_EQ(b.typeFloat(32), f32);
  EXPECT_EQ(b.typeVector(f32, 3), b.typeVector(f32, 3));
  EXPECT_NE(b.typeVector(f32, 3), b.typeVector(f32, 4));
  EXPECT_EQ(b.typeBool(), b.typeBool());
  EXPECT_EQ(b.typeVoid(), b.typeVoid());
  // Layout decorations are part of a type's identity.
  EXPECT_EQ(b.typeArray(f32, 4), b.typeArray(f32, 4));
  EXPECT_NE(b.typeArray(f32, 4), b.typeArray(f32, 4, 4));
  EXPECT_EQ(b.typeArray(f32, 4, 4), b.typeArray(f32, 4, 4));
  EXPECT_EQ(b.typeStruct({f32, u32}), b.typeStruct({f32, u32}));
  EXPECT_NE(b.typeStruct({f32, u32}), b.typeStruct({f32, u32}, {0, 4}));
  EXPECT_NE(b.typeStruct({f32, u32}, {0, 4}), b.typeStruct({f32, u32}, {0, 8}));
  EXPECT_NE(b.typeStruct({f32, u32}, {0, 4}), b.typeStruct({f32, u32}, {0, 4}, true));
  EXPECT_EQ(b.typePointer(spv::StorageClass::Function, f32), b.typePointer(spv::StorageClass::Function, f32));
  EXPECT_NE(b.typePointer(spv::StorageClass::Function, f32), b.typePointer(spv::StorageClass::Workgroup, f32));
  EXPECT_EQ(b.typeFunction(b.typeVoid(), {}), b.typeFunction(b.typeVoid(), {}));
  EXPECT_EQ(b.typeOp(u32), Op::OpTypeInt);
  EXPECT_EQ(b.typeWidth(b.typeVector(f32, 2)), 32u);
  EXPECT_EQ(b.vectorCount(b.typeVector(f32, 2)), 2u);
}

TEST(SpirvBuilderTest, ConstantsAreDeduplicated) {
  ModuleBuilder b;
  Id u32 = b.typeInt(32, false), f32 = b.typeFloat(32), u8 = b.typeInt(8, false);
  EXPECT_EQ(b.constInt(u32, 7), b.constInt(u32, 7));
  EXPECT_NE(b.constInt(u32, 7), b.constInt(u32, 8));
  // Bits above the width do not make a different constant.
  EXPECT_EQ(b.constInt(u8, 0xff), b.constInt(u8, ~uint64_t(0)));
  EXPECT_NE(b.constInt(u8, 1), b.constInt(u32, 1));
  EXPECT_EQ(b.constFloat(f32, 1.5), b.constFloat(f32, 1.5));
  EXPECT_NE(b.constFloat(f32, 0.0), b.constFloat(f32, -0.0));
  // 0.1 as f32 is the same constant however precisely it is given.
  EXPECT_EQ(b.constFloat(f32, 0.1), b.constFloat(f32, double(0.1f)));
  EXPECT_EQ(b.constBool(true), b.constBool(true));
  EXPECT_NE(b.constBool(true), b.constBool(false));
  Id v2 = b.typeVector(f32, 2);
  EXPECT_EQ(b.splat(v2, b.constFloat(f32, 2.0)), b.constComposite(v2, {b.constFloat(f32, 2.0), b.constFloat(f32, 2.0)}));
  EXPECT_EQ(b.constNull(v2), b.constNull(v2));
  EXPECT_EQ(b.splat(f32, b.constFloat(f32, 3.0)), b.constFloat(f32, 3.0));
}

TEST(SpirvBuilderTest, SectionsFlattenInSpecOrderWithHeaderAndBound) {
  ModuleBuilder b(kSpirv16);
  buildSmallKernel(b);
  std::vector<uint32_t> words = b.finish();
  ASSERT_GE(words.size(), 5u);
  EXPECT_EQ(words[0], 0x07230203u);
  EXPECT_EQ(words[1], 0x00010600u);
  EXPECT_EQ(words[3], b.bound());
  EXPECT_EQ(words[4], 0u);
  // Every id defined is below the bound, and the bound is tight.
  uint32_t maxId = 0;
  for (size_t i = 5; i < words.size(); i += words[i] >> 16) {
    Op op = Op(words[i] & 0xffff);
    bool hasResult = false, hasType = false;
    spv::HasResultAndType(op, &hasResult, &hasType);
    if (hasResult) maxId = std::max(maxId, words[i + (hasType ? 2 : 1)]);
  }
  EXPECT_EQ(b.bound(), maxId + 1);

  // Section order: capability, extension? ext-inst import, memory model,
  // entry point, execution mode, debug, annotations, types/constants/globals,
  // functions.
  auto rank = [](Op op) {
    switch (op) {
      case Op::OpCapability: return 0;
      case Op::OpExtension: return 1;
      case Op::OpExtInstImport: return 2;
      case Op::OpMemoryModel: return 3;
      case Op::OpEntryPoint: return 4;
      case Op::OpExecutionMode: return 5;
      case Op::OpName:
      case Op::OpMemberName: return 6;
      case Op::OpDecorate:
      case Op::OpMemberDecorate: return 7;
      case Op::OpFunction: return 9;
      default: return -1;
    }
  };
  int last = 0;
  bool inFunctions = false;
  for (Op op : opcodes(words)) {
    int r = rank(op);
    if (r == 9) inFunctions = true;
    if (r < 0) r = inFunctions ? 9 : 8;  // types/constants/variables, or function bodies
    EXPECT_GE(r, last) << "opcode " << int(op) << " out of section order";
    last = r;
  }
  EXPECT_TRUE(bool(validate(words, 0, "the small kernel"))) << validate(words, 0, "x").error().str();
}

TEST(SpirvBuilderTest, StringsArePaddedAndTerminated) {
  std::vector<uint32_t> w;
  ModuleBuilder::appendString(w, "abcd");
  ASSERT_EQ(w.size(), 2u);  // four bytes, then a word holding the nul
  EXPECT_EQ(w[0], 0x64636261u);
  EXPECT_EQ(w[1], 0u);
  w.clear();
  ModuleBuilder::appendString(w, "main");
  ModuleBuilder::appendString(w, "abc");
  EXPECT_EQ(w.size(), 3u);
}

TEST(SpirvBuilderTest, CapabilitiesComeFromWhatWasEmitted) {
  ModuleBuilder b;
  EXPECT_TRUE(b.capabilities().empty());
  b.typeFloat(32);
  b.typeInt(32, false);
  EXPECT_TRUE(b.capabilities().empty());
  b.typeFloat(64);
  EXPECT_TRUE(hasCap(b, spv::Capability::Float64));
  b.typeInt(64, true);
  EXPECT_TRUE(hasCap(b, spv::Capability::Int64));
  b.typeFloat(16);
  EXPECT_TRUE(hasCap(b, spv::Capability::Float16));
  EXPECT_FALSE(hasCap(b, spv::Capability::StorageBuffer16BitAccess));

  // 8-bit values in workgroup memory need only Int8; in a storage buffer also
  // the 8-bit storage capability and its extension.
  Id u8 = b.typeInt(8, false);
  EXPECT_TRUE(hasCap(b, spv::Capability::Int8));
  b.typePointer(spv::StorageClass::Workgroup, b.typeArray(u8, 4));
  EXPECT_FALSE(hasCap(b, spv::Capability::StorageBuffer8BitAccess));
  b.typePointer(spv::StorageClass::StorageBuffer, b.typeStruct({b.typeRuntimeArray(u8, 1)}, {0}, true));
  EXPECT_TRUE(hasCap(b, spv::Capability::StorageBuffer8BitAccess));
  EXPECT_TRUE(b.extensions().count("SPV_KHR_8bit_storage"));

  Id f16 = b.typeFloat(16);
  b.typePointer(spv::StorageClass::StorageBuffer, b.typeStruct({b.typeVector(f16, 2)}, {0}, true));
  EXPECT_TRUE(hasCap(b, spv::Capability::StorageBuffer16BitAccess));
  EXPECT_TRUE(b.extensions().count("SPV_KHR_16bit_storage"));
  EXPECT_FALSE(hasCap(b, spv::Capability::StoragePushConstant16));
  b.typePointer(spv::StorageClass::PushConstant, b.typeStruct({f16}, {0}, true));
  EXPECT_TRUE(hasCap(b, spv::Capability::StoragePushConstant16));

  EXPECT_FALSE(hasCap(b, spv::Capability::GroupNonUniform));
  b.decorate(b.newId(), spv::Decoration::BuiltIn, {uint32_t(spv::BuiltIn::LocalInvocationId)});
  EXPECT_FALSE(hasCap(b, spv::Capability::GroupNonUniform));
  b.decorate(b.newId(), spv::Decoration::BuiltIn, {uint32_t(spv::BuiltIn::SubgroupSize)});
  EXPECT_TRUE(hasCap(b, spv::Capability::GroupNonUniform));

  EXPECT_FALSE(hasCap(b, spv::Capability::Shader));
  Id voidT = b.typeVoid();
  Id fn = b.beginFunction(voidT, b.typeFunction(voidT, {}));
  Id f32 = b.typeFloat(32), f64 = b.typeFloat(64), i64 = b.typeInt(64, true), u32 = b.typeInt(32, false);
  Id p32 = b.newId(), p64 = b.newId(), pi = b.newId();  // ids stand in for pointers here
  EXPECT_FALSE(hasCap(b, spv::Capability::AtomicFloat32AddEXT));
  b.op(Op::OpAtomicFAddEXT, f32, {p32, b.constInt(u32, 1), b.constInt(u32, 0), b.constFloat(f32, 1)});
  EXPECT_TRUE(hasCap(b, spv::Capability::AtomicFloat32AddEXT));
  EXPECT_TRUE(b.extensions().count("SPV_EXT_shader_atomic_float_add"));
  EXPECT_FALSE(hasCap(b, spv::Capability::AtomicFloat64AddEXT));
  b.op(Op::OpAtomicFAddEXT, f64, {p64, b.constInt(u32, 1), b.constInt(u32, 0), b.constFloat(f64, 1)});
  EXPECT_TRUE(hasCap(b, spv::Capability::AtomicFloat64AddEXT));
  EXPECT_FALSE(hasCap(b, spv::Capability::Int64Atomics));
  b.op(Op::OpAtomicIAdd, u32, {pi, b.constInt(u32, 1), b.constInt(u32, 0), b.constInt(u32, 1)});
  EXPECT_FALSE(hasCap(b, spv::Capability::Int64Atomics));
  b.op(Op::OpAtomicIAdd, i64, {pi, b.constInt(u32, 1), b.constInt(u32, 0), b.constInt(i64, 1)});
  EXPECT_TRUE(hasCap(b, spv::Capability::Int64Atomics));
  b.opVoid(Op::OpReturn, {});
  b.endFunction();
  b.addEntryPoint(spv::ExecutionModel::GLCompute, fn, "k", {});
  EXPECT_TRUE(hasCap(b, spv::Capability::Shader));
}

TEST(SpirvBuilderTest, FunctionVariablesGoToTheEntryBlock) {
  ModuleBuilder b;
  b.setMemoryModel(spv::AddressingModel::Logical, spv::MemoryModel::GLSL450);
  Id voidT = b.typeVoid(), u32 = b.typeInt(32, false);
  Id fn = b.beginFunction(voidT, b.typeFunction(voidT, {}));
  Id next = b.newId();
  b.opVoid(Op::OpBranch, {next});
  b.label(next);
  Id var = b.functionVariable(b.typePointer(spv::StorageClass::Function, u32));  // asked for late
  b.opVoid(Op::OpStore, {var, b.constInt(u32, 5)});
  b.opVoid(Op::OpReturn, {});
  b.endFunction();
  b.addEntryPoint(spv::ExecutionModel::GLCompute, fn, "k", {});
  b.addExecutionMode(fn, spv::ExecutionMode::LocalSize, {1, 1, 1});
  std::vector<uint32_t> words = b.finish();
  std::vector<Op> ops = opcodes(words);
  auto label = std::find(ops.begin(), ops.end(), Op::OpLabel);
  ASSERT_NE(label, ops.end());
  EXPECT_EQ(*(label + 1), Op::OpVariable);
  Status st = validate(words, 0, "kernel @k");
  EXPECT_TRUE(bool(st)) << st.error().str();
}

TEST(SpirvBuilderTest, ValidationFailureIsAnInternalErrorNamingTheKernel) {
  ModuleBuilder b;
  b.setMemoryModel(spv::AddressingModel::Logical, spv::MemoryModel::GLSL450);
  Id voidT = b.typeVoid(), u32 = b.typeInt(32, false), f32 = b.typeFloat(32);
  Id fn = b.beginFunction(voidT, b.typeFunction(voidT, {}));
  b.op(Op::OpIAdd, u32, {b.constInt(u32, 1), b.constFloat(f32, 2.0)});  // mixes int and float
  b.opVoid(Op::OpReturn, {});
  b.endFunction();
  b.addEntryPoint(spv::ExecutionModel::GLCompute, fn, "k", {});
  b.addExecutionMode(fn, spv::ExecutionMode::LocalSize, {1, 1, 1});
  Status st = validate(b.finish(), 0, "kernel @k");
  ASSERT_FALSE(bool(st));
  EXPECT_EQ(st.error().message.rfind("internal error: SPIR-V for kernel @k failed validation: ", 0), 0u)
      << st.error().message;
  EXPECT_NE(st.error().message.find("OpIAdd"), std::string::npos) << st.error().message;
}

TEST(SpirvBuilderTest, DisassemblyUsesFriendlyNames) {
  ModuleBuilder b;
  buildSmallKernel(b);
  std::string text = disassemble(b.finish());
  EXPECT_NE(text.find("OpEntryPoint GLCompute %main \"main\""), std::string::npos) << text;
  EXPECT_NE(text.find("OpCapability Shader"), std::string::npos) << text;
  EXPECT_NE(text.find("GLSL.std.450"), std::string::npos) << text;
}

}  // namespace
}  // namespace eph::spirv
