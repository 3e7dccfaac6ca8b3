// Types: interning (equal types are one pointer), their text form, parsing
// them back, ownership inheritance and layout.
#include <gtest/gtest.h>

#include "ir/Parser.h"
#include "ir/Types.h"

namespace eph::ir {
namespace {

TEST(Types, InterningGivesOnePointerPerType) {
  Context ctx;
  EXPECT_EQ(ctx.i32(), ctx.intType(32, true));
  EXPECT_NE(ctx.i32(), ctx.u32());
  EXPECT_EQ(ctx.f32(), ctx.floatType(32));
  const Type* s1 = ctx.structType({ctx.i32(), ctx.f32()});
  const Type* s2 = ctx.structType({ctx.i32(), ctx.f32()});
  EXPECT_EQ(s1, s2);
  EXPECT_NE(s1, ctx.structType({ctx.f32(), ctx.i32()}));
  EXPECT_NE(ctx.structType({ctx.i32()}), ctx.sumType({ctx.i32()}));
  EXPECT_EQ(ctx.bufferType(ctx.f32(), Space::Device, Ownership::Read),
            ctx.bufferType(ctx.f32(), Space::Device, Ownership::Read));
  EXPECT_NE(ctx.bufferType(ctx.f32(), Space::Device, Ownership::Read),
            ctx.bufferType(ctx.f32(), Space::Device, Ownership::Write));
  EXPECT_EQ(ctx.varType("T"), ctx.varType("T"));
  EXPECT_NE(ctx.varType("T"), ctx.varType("U"));
  EXPECT_EQ(ctx.unitType(), ctx.structType({}));
  EXPECT_TRUE(ctx.unitType()->isUnit());
}

TEST(Types, TextOfEveryKind) {
  Context ctx;
  const Type* f32 = ctx.f32();
  const Type* i32 = ctx.i32();
  std::vector<std::pair<const Type*, std::string>> cases = {
      {ctx.boolType(), "bool"},
      {ctx.intType(8, true), "i8"},
      {ctx.intType(16, false), "u16"},
      {ctx.intType(64, false), "u64"},
      {ctx.floatType(16), "f16"},
      {ctx.f64(), "f64"},
      {ctx.vectorType(f32, 3), "vec<f32, 3>"},
      {ctx.vectorType(ctx.boolType(), 2), "vec<bool, 2>"},
      {ctx.structType({}), "struct<>"},
      {ctx.structType({i32, ctx.vectorType(f32, 4)}), "struct<i32, vec<f32, 4>>"},
      {ctx.sumType({ctx.unitType(), f32}), "sum<struct<>, f32>"},
      {ctx.arrayType(ctx.arrayType(i32, 2), 5), "array<array<i32, 2>, 5>"},
      {ctx.bufferType(f32, Space::Host, Ownership::Linear), "buffer<f32, host, linear>"},
      {ctx.bufferType(i32, Space::Device, Ownership::Affine), "buffer<i32, device, affine>"},
      {ctx.bufferType(f32, Space::Workgroup, Ownership::Write), "buffer<f32, workgroup, write>"},
      {ctx.functionType({}, {}), "fn() -> ()"},
      {ctx.functionType({i32, f32}, {ctx.functionType({i32}, {i32})}),
       "fn(i32, f32) -> (fn(i32) -> (i32))"},
      {ctx.varType("T"), "!T"},
      {ctx.varType("elem.0"), "!elem.0"},
      {ctx.varType("has space"), "!\"has space\""},
  };
  for (auto& [t, text] : cases) {
    EXPECT_EQ(t->str(), text);
    auto parsed = parseType(ctx, text);
    ASSERT_TRUE(parsed) << text << ": " << parsed.error().str();
    EXPECT_EQ(*parsed, t) << text;
  }
}

TEST(Types, Predicates) {
  Context ctx;
  const Type* v = ctx.vectorType(ctx.f32(), 2);
  EXPECT_TRUE(v->isVector());
  EXPECT_EQ(v->scalar(), ctx.f32());
  EXPECT_EQ(v->count(), 2u);
  EXPECT_TRUE(ctx.u32()->isInt());
  EXPECT_FALSE(ctx.u32()->isSigned());
  EXPECT_EQ(ctx.intType(16, true)->bits(), 16u);
  EXPECT_TRUE(ctx.boolType()->isScalar());
  EXPECT_FALSE(ctx.boolType()->isNumeric());
  const Type* b = ctx.bufferType(ctx.f32(), Space::Device, Ownership::Write);
  EXPECT_EQ(b->space(), Space::Device);
  EXPECT_EQ(b->ownership(), Ownership::Write);
  EXPECT_EQ(b->elem(), ctx.f32());
}

TEST(Types, OwnershipIsInheritedByAggregates) {
  Context ctx;
  const Type* lin = ctx.bufferType(ctx.f32(), Space::Device, Ownership::Linear);
  const Type* aff = ctx.bufferType(ctx.f32(), Space::Device, Ownership::Affine);
  const Type* rd = ctx.bufferType(ctx.f32(), Space::Device, Ownership::Read);
  EXPECT_TRUE(lin->isLinear());
  EXPECT_FALSE(lin->isAffine());
  EXPECT_TRUE(aff->isAffine());
  EXPECT_FALSE(rd->isLinear() || rd->isAffine());
  EXPECT_TRUE(ctx.structType({ctx.i32(), lin})->isLinear());
  EXPECT_TRUE(ctx.sumType({ctx.i32(), ctx.structType({lin})})->isLinear());
  EXPECT_TRUE(ctx.arrayType(aff, 3)->isAffine());
  EXPECT_FALSE(ctx.structType({ctx.i32(), rd})->isLinear());
}

TEST(Types, Layout) {
  Context ctx;
  EXPECT_EQ(ctx.boolType()->sizeInBytes(), 4u);
  EXPECT_EQ(ctx.intType(8, false)->sizeInBytes(), 1u);
  EXPECT_EQ(ctx.f64()->sizeInBytes(), 8u);
  EXPECT_EQ(ctx.vectorType(ctx.f32(), 3)->sizeInBytes(), 16u);  // std430: vec3 like vec4
  EXPECT_EQ(ctx.vectorType(ctx.f32(), 2)->sizeInBytes(), 8u);
  EXPECT_EQ(ctx.structType({ctx.i32(), ctx.f64()})->sizeInBytes(), 16u);
  EXPECT_EQ(ctx.structType({ctx.i32(), ctx.f64()})->alignInBytes(), 8u);
  EXPECT_EQ(ctx.arrayType(ctx.i32(), 5)->sizeInBytes(), 20u);
  EXPECT_EQ(ctx.sumType({ctx.i32(), ctx.f64()})->sizeInBytes(), 16u);  // tag, then the payload
}

TEST(Types, ParseErrors) {
  Context ctx;
  std::vector<std::pair<std::string, std::string>> cases = {
      {"i33", "<type>:1:1: error[I003]: unknown type 'i33'"},
      {"f8", "<type>:1:1: error[I003]: unknown type 'f8'"},
      {"i99999999999999999999999", "<type>:1:1: error[I003]: unknown type 'i99999999999999999999999'"},
      {"tensor<f32>", "<type>:1:1: error[I003]: unknown type 'tensor'"},
      {"vec<f32, 5>", "<type>:1:10: error[I008]: vectors have 2 to 4 bool, integer or float elements"},
      {"vec<struct<>, 2>", "<type>:1:15: error[I008]: vectors have 2 to 4 bool, integer or float elements"},
      {"vec<f32 4>", "<type>:1:9: error[I001]: expected ',', got '4'"},
      {"array<f32, -1>", "<type>:1:12: error[I002]: expected an element count (a non-negative 32-bit integer), got '-1'"},
      {"array<f32, 1.5>", "<type>:1:12: error[I001]: expected an element count, got '1.5'"},
      {"buffer<f32, global, read>", "<type>:1:13: error[I001]: expected a buffer space (host, device, workgroup), got 'global'"},
      {"buffer<f32, device>", "<type>:1:19: error[I001]: expected ',', got '>'"},
      {"struct<i32, f32", "<type>:1:16: error[I001]: expected '>', got end of input"},
      {"fn(i32) i32", "<type>:1:9: error[I001]: expected '->', got 'i32'"},
      {"i32 i32", "<type>:1:5: error[I001]: expected end of type, got 'i32'"},
      {"", "<type>:1:1: error[I001]: expected a type, got end of input"},
      {"!", "<type>:1:1: error[I001]: expected a name after '!'"},
      {"$", "<type>:1:1: error[I001]: unexpected character '$'"},
  };
  for (auto& [text, err] : cases) {
    auto t = parseType(ctx, text);
    ASSERT_FALSE(t) << text;
    EXPECT_EQ(t.error().str(), err) << text;
  }
}

TEST(Types, DeepNestingIsAnErrorNotACrash) {
  Context ctx;
  std::string ok, deep;
  for (int i = 0; i < 199; ++i) ok += "struct<";
  ok += "i32" + std::string(199, '>');
  auto t = parseType(ctx, ok);
  ASSERT_TRUE(t) << t.error().str();
  EXPECT_EQ((*t)->str(), ok);
  for (int i = 0; i < 100000; ++i) deep += "array<";
  auto d = parseType(ctx, deep);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().str(),
            "<type>:1:1201: error[I007]: nesting is too deep (more than 200 levels of regions, types "
            "or attribute arrays)");
}

}  // namespace
}  // namespace eph::ir
