// The C calling convention of call.c (ir/ForeignAbi.h): which signatures are
// accepted and how each argument and the result cross (the classification
// that the typing rule, the interpreter and compiled host code share), and
// the message for each rejected one, also as the op's verifier error.
#include <gtest/gtest.h>

#include "ir/ForeignAbi.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"

namespace eph::ir {
namespace {

class ForeignAbi : public ::testing::Test {
 protected:
  Context ctx;
  const Type* i8 = ctx.intType(8, true);
  const Type* u16 = ctx.intType(16, false);
  const Type* i32 = ctx.i32();
  const Type* i64 = ctx.i64();
  const Type* b = ctx.boolType();
  const Type* f32 = ctx.f32();
  const Type* f64 = ctx.f64();
  const Type* ownedDevice = ctx.bufferType(ctx.f32(), Space::Device, Ownership::Linear);

  std::string problem(std::vector<const Type*> params, const Type* result) {
    return classifyForeignCall(params, result).problem;
  }
};

TEST_F(ForeignAbi, IntegerConvention) {
  ForeignSignature s = classifyForeignCall(std::vector<const Type*>{i8, u16, b, ownedDevice, i64, i32}, i32);
  ASSERT_TRUE(s.ok()) << s.problem;
  EXPECT_FALSE(s.floats());
  EXPECT_EQ(s.args, (std::vector<CArg>{CArg::Int, CArg::Int, CArg::Int, CArg::Handle, CArg::Int, CArg::Int}));
  EXPECT_EQ(s.result, CResult::Int);
  EXPECT_EQ(classifyForeignCall(std::vector<const Type*>{i64}, b).result, CResult::Int);
  // No result and () both ignore the return register; no arguments is fine.
  EXPECT_EQ(classifyForeignCall(std::vector<const Type*>{i64}, nullptr).result, CResult::None);
  ForeignSignature unit = classifyForeignCall({}, ctx.unitType());
  ASSERT_TRUE(unit.ok());
  EXPECT_EQ(unit.result, CResult::None);
  EXPECT_TRUE(unit.args.empty());
}

TEST_F(ForeignAbi, FloatConvention) {
  ForeignSignature s = classifyForeignCall(std::vector<const Type*>(6, f64), f64);
  ASSERT_TRUE(s.ok()) << s.problem;
  EXPECT_TRUE(s.floats());
  EXPECT_EQ(s.args, std::vector<CArg>(6, CArg::F64));
  EXPECT_EQ(s.result, CResult::F64);
  EXPECT_TRUE(classifyForeignCall({}, f64).floats());
}

TEST_F(ForeignAbi, SmallIntegerStructsComeBackInTwoRegistersAtTheirCOffsets) {
  // struct { int32_t; int8_t; _Bool; int16_t }: offsets 0, 4, 5, 6.
  const Type* mixed = ctx.structType({i32, i8, b, ctx.intType(16, true)});
  ForeignSignature s = classifyForeignCall(std::vector<const Type*>{i32}, mixed);
  ASSERT_TRUE(s.ok()) << s.problem;
  EXPECT_EQ(s.result, CResult::IntPair);
  ASSERT_EQ(s.fields.size(), 4u);
  unsigned offsets[] = {0, 4, 5, 6}, sizes[] = {4, 1, 1, 2};
  for (unsigned k = 0; k < 4; ++k) {
    EXPECT_EQ(s.fields[k].offset, offsets[k]) << k;
    EXPECT_EQ(s.fields[k].size, sizes[k]) << k;
  }
  // struct { int8_t; int64_t }: padded to 16 bytes, the second field at 8.
  ForeignSignature padded = classifyForeignCall({}, ctx.structType({i8, i64}));
  ASSERT_TRUE(padded.ok()) << padded.problem;
  EXPECT_EQ(padded.fields[1].offset, 8u);
  // 17 bytes do not fit: { int64_t; int64_t; int8_t } is 24 bytes in C.
  EXPECT_EQ(problem({}, ctx.structType({i64, i64, i8})),
            "result type struct<i64, i64, i8> cannot be returned by an extern function (integers, Bool, F64, () and "
            "tuples of at most 16 bytes of integers can)");
}

TEST_F(ForeignAbi, RejectedSignaturesSayWhy) {
  EXPECT_EQ(problem(std::vector<const Type*>(7, i64), i64), "takes 7 arguments; extern calls take at most 6");
  EXPECT_EQ(problem({f32}, f64), "F32 arguments are not supported in extern calls (use F64)");
  EXPECT_EQ(problem({i32, f64}, f64), "mixes integer and float arguments/results, which extern calls do not support");
  EXPECT_EQ(problem({f64}, i64), "mixes integer and float arguments/results, which extern calls do not support");
  EXPECT_EQ(problem({}, ctx.structType({i32, i32})), "");
  EXPECT_EQ(problem({f64}, ctx.structType({i32, i32})),
            "mixes integer and float arguments/results, which extern calls do not support");
  EXPECT_EQ(problem({f64}, nullptr), "float arguments need an F64 result");
  EXPECT_EQ(problem({f64}, ctx.unitType()), "float arguments need an F64 result");
  EXPECT_EQ(problem({}, f32),
            "result type f32 cannot be returned by an extern function (integers, Bool, F64, () and tuples of at most "
            "16 bytes of integers can)");
  EXPECT_EQ(problem({}, ctx.structType({i32, f64})),
            "result type struct<i32, f64> cannot be returned by an extern function (integers, Bool, F64, () and "
            "tuples of at most 16 bytes of integers can)");
  // Only an owned device buffer goes to C: not a borrow, not a host buffer.
  const char* canPass = " cannot be passed to an extern function (integers, Bool, F64, extern handles and owned GPU "
                        "buffers can)";
  EXPECT_EQ(problem({ctx.bufferType(i32, Space::Device, Ownership::Read)}, i64),
            std::string("argument type buffer<i32, device, read>") + canPass);
  EXPECT_EQ(problem({ctx.bufferType(i32, Space::Host, Ownership::Linear)}, i64),
            std::string("argument type buffer<i32, host, linear>") + canPass);
  EXPECT_EQ(problem({ctx.bufferType(i32, Space::Device, Ownership::Affine)}, i64),
            std::string("argument type buffer<i32, device, affine>") + canPass);
  EXPECT_EQ(problem({ctx.vectorType(f64, 2)}, f64), std::string("argument type vec<f64, 2>") + canPass);
  EXPECT_EQ(problem({ctx.structType({i32})}, i64), std::string("argument type struct<i32>") + canPass);
}

// The verifier's message for `body` in a host function, or "" when it verifies.
std::string verifyError(const std::string& body) {
  Context ctx;
  std::string src = "host @main(%x: i64, %y: f64, %z: f32) {\n" + body + "\n  return\n}\n";
  auto m = parseModule(ctx, src, "c.eir");
  if (!m) return "parse: " + m.error().str();
  Status s = verify(**m);
  return s ? "" : s.error().str();
}

TEST(ForeignAbiOp, TheVerifierUsesTheClassification) {
  EXPECT_EQ(verifyError("  %r = call.c %x {symbol = \"labs\"} : i64"), "");
  EXPECT_EQ(verifyError("  call.c %x, %x {symbol = \"f\"}"), "");
  EXPECT_EQ(verifyError("  %r = call.c %x, %y {symbol = \"f\"} : f64"),
            "c.eir:2:3: error[V009]: 'call.c': mixes integer and float arguments/results, which extern calls do not "
            "support");
  EXPECT_EQ(verifyError("  %r = call.c %z {symbol = \"f\"} : f64"),
            "c.eir:2:3: error[V009]: 'call.c': F32 arguments are not supported in extern calls (use F64)");
  EXPECT_EQ(verifyError("  %r = call.c %x : i64"),
            "c.eir:2:3: error[V009]: 'call.c': needs a {symbol = \"name\"} string attribute");
  EXPECT_EQ(verifyError("  %r = call.c %x {symbol = \"\"} : i64"),
            "c.eir:2:3: error[V009]: 'call.c': needs a {symbol = \"name\"} string attribute");
  EXPECT_EQ(verifyError("  %r = call.c %x {symbol = 3} : i64"),
            "c.eir:2:3: error[V009]: 'call.c': needs a {symbol = \"name\"} string attribute");
  EXPECT_EQ(verifyError("  %r, %s = call.c %x {symbol = \"f\"} : i64, i64"),
            "c.eir:2:3: error[V009]: 'call.c': has at most one result");
}

}  // namespace
}  // namespace eph::ir
