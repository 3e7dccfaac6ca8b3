// The printer: IR built with the Builder prints in the documented text form,
// with value names from hints (made unique) or numbers, and locations on request.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/Builder.h"
#include "ir/Printer.h"

namespace eph::ir {
namespace {

TEST(Printer, BuiltFunction) {
  Context ctx;
  Module m(ctx);
  Function* f = m.addFunction("axpy", FunctionKind::Device,
                              ctx.functionType({ctx.f32(), ctx.f32()}, {ctx.f32()}));
  f->param(0)->setName("a");
  Builder b(ctx, f->body());
  Value* two = b.constFloat(ctx.f32(), 2.0);
  Value* p = b.op("mul", {f->param(0), two}, ctx.f32());
  p->setName("p");
  Value* s = b.op("add", {p, f->param(1)}, ctx.f32());
  s->setName("p");  // a repeated hint gets a suffix
  b.create("return", {s});
  EXPECT_EQ(print(m),
            "device @axpy(%a: f32, %0: f32) -> f32 {\n"
            "  %1 = const {value = 2.0} : f32\n"
            "  %p = mul %a, %1 : f32\n"
            "  %p_1 = add %p, %0 : f32\n"
            "  return %p_1\n"
            "}\n");
}

TEST(Printer, KernelRegionsAndAttributes) {
  Context ctx;
  Module m(ctx);
  const Type* buf = ctx.bufferType(ctx.u32(), Space::Device, Ownership::Write);
  Function* k = m.addFunction("fill", FunctionKind::Kernel, ctx.functionType({buf}, {}));
  k->workgroupSize = {8, 4, 2};
  k->attrs["note"] = Attr::string("two\nlines");
  Builder b(ctx, k->body());
  Value* i = b.op("global_id", {}, ctx.u32(), {{"dim", Attr::integer(0)}});
  Value* lim = b.constInt(ctx.u32(), 10);
  Value* c = b.op("lt", {i, lim}, ctx.boolType());
  Op* ifOp = b.create("if", {c}, {}, {}, 2);
  Builder t(ctx, ifOp->region(0));
  t.create("store", {k->param(0), i, i});
  t.create("yield");
  Builder e(ctx, ifOp->region(1));
  e.create("yield");
  b.create("return");
  EXPECT_EQ(print(*k),
            "kernel @fill(%0: buffer<u32, device, write>) workgroup(8, 4, 2) attributes {note = \"two\\nlines\"} {\n"
            "  %1 = global_id {dim = 0} : u32\n"
            "  %2 = const {value = 10} : u32\n"
            "  %3 = lt %1, %2 : bool\n"
            "  if %3 {\n"
            "    store %0, %1, %1\n"
            "    yield\n"
            "  } {\n"
            "    yield\n"
            "  }\n"
            "  return\n"
            "}\n");
}

TEST(Printer, RegionArgumentsAndMultipleResults) {
  Context ctx;
  Module m(ctx);
  Function* f = m.addFunction("sum", FunctionKind::Host,
                              ctx.functionType({ctx.i64()}, {ctx.i64(), ctx.f64()}));
  Builder b(ctx, f->body());
  Value* z = b.constInt(ctx.i64(), 0);
  Value* one = b.constInt(ctx.i64(), 1);
  Value* fz = b.constFloat(ctx.f64(), -0.0);
  Op* loop = b.create("for", {z, f->param(0), one, z, fz}, {ctx.i64(), ctx.f64()}, {}, 1);
  Region& body = loop->region(0);
  Value* iv = body.addArg(ctx.i64(), "i");
  body.addArg(ctx.i64(), "acc");
  Value* facc = body.addArg(ctx.f64(), "9");  // not a usable name: numbered
  Builder lb(ctx, body);
  Value* n = lb.op("add", {body.arg(1), iv}, ctx.i64());
  lb.create("yield", {n, facc});
  b.create("return", {loop->result(0), loop->result(1)});
  EXPECT_EQ(print(m),
            "host @sum(%0: i64) -> (i64, f64) {\n"
            "  %1 = const {value = 0} : i64\n"
            "  %2 = const {value = 1} : i64\n"
            "  %3 = const {value = -0.0} : f64\n"
            "  %4, %5 = for %1, %0, %2, %1, %3 : i64, f64 { |%i: i64, %acc: i64, %6: f64|\n"
            "    %7 = add %acc, %i : i64\n"
            "    yield %7, %6\n"
            "  }\n"
            "  return %4, %5\n"
            "}\n");
}

TEST(Printer, Locations) {
  Context ctx;
  Module m(ctx);
  const std::string* file = ctx.intern("src/a \"b\".eph");
  Function* f = m.addFunction("g", FunctionKind::Host, ctx.functionType({}, {}), Loc{file, 3, 1});
  Builder b(ctx, f->body());
  b.setLoc(Loc{file, 4, 9});
  b.create("wait");
  b.setLoc(Loc{});
  b.create("return");
  EXPECT_EQ(print(m), "host @g() {\n  wait\n  return\n}\n");
  EXPECT_EQ(print(m, PrintOptions{.locations = true}),
            "host @g() loc(\"src/a \\\"b\\\".eph\":3:1) {\n"
            "  wait loc(\"src/a \\\"b\\\".eph\":4:9)\n"
            "  return\n"
            "}\n");
}

TEST(Printer, NamesThatNeedQuotes) {
  Context ctx;
  Module m(ctx);
  Function* f = m.addFunction("map<f32>", FunctionKind::Host, ctx.functionType({ctx.varType("T 1")}, {}));
  f->attrs["callee"] = Attr::symbol("other-fn");
  f->attrs["9lives"] = Attr::integer(9);
  Builder b(ctx, f->body());
  b.create("return");
  EXPECT_EQ(print(m),
            "host @\"map<f32>\"(%0: !\"T 1\") attributes {\"9lives\" = 9, callee = @\"other-fn\"} {\n"
            "  return\n"
            "}\n");
}

TEST(Printer, UnsignedConstantsPrintUnsigned) {
  Context ctx;
  Module m(ctx);
  Function* f = m.addFunction("c", FunctionKind::Host, ctx.functionType({}, {}));
  Builder b(ctx, f->body());
  b.constInt(ctx.intType(64, false), -1);
  b.constInt(ctx.intType(64, true), -1);
  b.constInt(ctx.intType(64, false), std::numeric_limits<int64_t>::min());
  b.create("return");
  EXPECT_EQ(print(m),
            "host @c() {\n"
            "  %0 = const {value = 18446744073709551615} : u64\n"
            "  %1 = const {value = -1} : i64\n"
            "  %2 = const {value = 9223372036854775808} : u64\n"
            "  return\n"
            "}\n");
}

TEST(Printer, AttributeText) {
  Context ctx;
  double inf = std::numeric_limits<double>::infinity();
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(Attr::floating(inf).str(), "inf");
  EXPECT_EQ(Attr::floating(-inf).str(), "-inf");
  EXPECT_EQ(Attr::floating(nan).str(), "nan");
  EXPECT_EQ(Attr::floating(-nan).str(), "-nan");
  EXPECT_EQ(Attr::floating(-0.0).str(), "-0.0");
  EXPECT_EQ(Attr::floating(3.0).str(), "3.0");
  EXPECT_EQ(Attr::floating(1e-300).str(), "1e-300");
  EXPECT_EQ(Attr::floating(double(0.1f)).str(), "0.10000000149011612");
  EXPECT_EQ(Attr::floating(1.5e300).str(), "1.5e+300");
  EXPECT_EQ(Attr::integer(-42).str(), "-42");
  EXPECT_EQ(Attr::boolean(false).str(), "false");
  EXPECT_EQ(Attr::string("q\"\\\t\x01").str(), "\"q\\\"\\\\\\t\\x01\"");
  EXPECT_EQ(Attr::symbol("main").str(), "@main");
  EXPECT_EQ(Attr::typeAttr(ctx.vectorType(ctx.f32(), 2)).str(), "vec<f32, 2>");
  EXPECT_EQ(Attr::array({Attr::integer(1), Attr::array({}), Attr::string("x")}).str(), "[1, [], \"x\"]");
  // Equality is bitwise for floats: -0.0 differs from 0.0, nan equals itself.
  EXPECT_FALSE(Attr::floating(-0.0) == Attr::floating(0.0));
  EXPECT_TRUE(Attr::floating(nan) == Attr::floating(nan));
}

}  // namespace
}  // namespace eph::ir
