// Host heap cells (ir/ops/Box.cpp): the `box` type and box.new / box.get —
// text round trip, verifier rules (host only, nothing that owns a buffer),
// interpreter semantics (typed reads, sharing, freeing by reference counting,
// long chains without recursion) and how cse / dce / linearity treat them.
#include <gtest/gtest.h>

#include <memory>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/interp/Interp.h"
#include "passes/PassManager.h"
#include "tests/unit/InterpTestUtil.h"

namespace eph::test {
namespace {

using InterpBox = InterpTest;

// A list of i32 is sum<struct<>, struct<i32, box>>: Nil, or Cons(head, box of the tail).
constexpr const char* kList = "sum<struct<>, struct<i32, box>>";

std::string listModule() {
  std::string L = kList;
  // @build(n): [n-1, ..., 1, 0] built by a loop; @sum walks it with a while loop.
  return "host @build(%n: i32) -> " + L + " {\n"
         "  %u = struct.make : struct<>\n"
         "  %nil = sum.make %u {tag = 0} : " + L + "\n"
         "  %zero = const {value = 0} : i32\n"
         "  %one = const {value = 1} : i32\n"
         "  %l = for %zero, %n, %one, %nil : " + L + " { |%i: i32, %acc: " + L + "|\n"
         "    %b = box.new %acc : box\n"
         "    %c = struct.make %i, %b : struct<i32, box>\n"
         "    %s = sum.make %c {tag = 1} : " + L + "\n"
         "    yield %s\n"
         "  }\n"
         "  return %l\n"
         "}\n"
         "host @sum(%l: " + L + ") -> i64 {\n"
         "  %z = const {value = 0} : i64\n"
         "  %r, %rest = while %z, %l : i64, " + L + " { |%acc: i64, %cur: " + L + "|\n"
         "    %t = sum.tag %cur : i32\n"
         "    %zero = const {value = 0} : i32\n"
         "    %go = ne %t, %zero : bool\n"
         "    condition %go, %acc, %cur\n"
         "  } { |%a: i64, %c: " + L + "|\n"
         "    %next, %a2 = match %c : " + L + ", i64 { |%u: struct<>|\n"
         "      yield %c, %a\n"
         "    } { |%cell: struct<i32, box>|\n"
         "      %h = struct.extract %cell {index = 0} : i32\n"
         "      %hb = struct.extract %cell {index = 1} : box\n"
         "      %tail = box.get %hb : " + L + "\n"
         "      %w = cast %h : i64\n"
         "      %s = add %a, %w : i64\n"
         "      yield %tail, %s\n"
         "    }\n"
         "    yield %a2, %next\n"
         "  }\n"
         "  return %r\n"
         "}\n"
         "host @main(%n: i32) -> i64 {\n"
         "  %l = call %n {callee = @build} : " + L + "\n"
         "  %s = call %l {callee = @sum} : i64\n"
         "  return %s\n"
         "}\n";
}

TEST_F(InterpBox, NewAndGetNestAndShare) {
  EXPECT_EQ(runMain("host @main(%n: i32) -> (i32, box, struct<box, box>) {\n"
                    "  %s = struct.make %n, %n : struct<i32, i32>\n"
                    "  %b = box.new %s : box\n"
                    "  %c = box.new %b : box\n"
                    "  %b2 = box.get %c : box\n"
                    "  %t = box.get %b2 : struct<i32, i32>\n"
                    "  %x = struct.extract %t {index = 1} : i32\n"
                    "  %pair = struct.make %b, %b2 : struct<box, box>\n"
                    "  return %x, %c, %pair\n}\n",
                    {"7"}),
            "7, box(box((7, 7))), (box((7, 7)), box((7, 7)))");
}

TEST_F(InterpBox, ReadingAnotherTypeIsAnErrorAtTheOp) {
  EXPECT_EQ(runMain("host @main(%n: i32) -> f32 {\n"
                    "  %b = box.new %n : box\n"
                    "  %f = box.get %b : f32\n"
                    "  return %f\n}\n",
                    {"7"}),
            "error: test.eir:3:3: error: box.get: the box holds a value of type 'i32', read as 'f32'");
}

TEST_F(InterpBox, CopiesShareTheCellAndTheLastOneFreesIt) {
  ir::Module* m = load("host @main(%n: i32) -> (box, box) {\n"
                       "  %b = box.new %n : box\n"
                       "  %c = box.new %b : box\n"
                       "  return %b, %c\n}\n");
  ASSERT_TRUE(m);
  auto r = interp().call(*m->lookup("main"), {interp::RtValue::ofInt(ctx_.i32(), 5)});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 2u);
  // %c's cell holds %b itself, not a copy of its contents.
  EXPECT_EQ((*r)[1].box->value.box, (*r)[0].box);
  std::weak_ptr<const interp::BoxCell> inner = (*r)[0].box, outer = (*r)[1].box;
  r->erase(r->begin());  // drop %b: %c still holds its cell
  EXPECT_FALSE(inner.expired());
  r->clear();
  EXPECT_TRUE(outer.expired());
  EXPECT_TRUE(inner.expired());
}

TEST_F(InterpBox, ALongChainRunsAndIsFreedWithoutRecursion) {
  ir::Module* m = load(listModule());
  ASSERT_TRUE(m);
  EXPECT_EQ(run("main", {"1000"}), "499500");
  // 300000 cells: built and walked by loops, then freed by ~BoxCell's work
  // list (a recursive release would overflow the stack).
  auto r = interp().call(*m->lookup("build"), {interp::RtValue::ofInt(ctx_.i32(), 300000)});
  ASSERT_TRUE(r);
  std::weak_ptr<const interp::BoxCell> last = (*r)[0].elems[0].elems[1].box;
  EXPECT_EQ(interp::format((*r)[0]).substr(0, 36), "#1((299999, box(#1((299998, box(#1((");
  r->clear();
  EXPECT_TRUE(last.expired());
  EXPECT_EQ(run("main", {"300000"}), "44999850000");
}

TEST_F(InterpBox, DeepFormattingStopsAtADepth) {
  ir::Module* m = load(listModule());
  ASSERT_TRUE(m);
  auto r = interp().call(*m->lookup("build"), {interp::RtValue::ofInt(ctx_.i32(), 100)});
  ASSERT_TRUE(r);
  std::string s = interp::format((*r)[0]);
  EXPECT_NE(s.find("(67, box(...))"), std::string::npos) << s;
}

// ---- text form -----------------------------------------------------------------

TEST(Box, PrintsAndParsesBack) {
  ir::Context ctx;
  std::string text = "host @f(%a: box, %b: struct<box, sum<i32, box>>) -> (box, fn(box) -> (box)) {\n"
                     "  %c = box.new %b : box\n"
                     "  %d = box.get %a : struct<box, sum<i32, box>>\n"
                     "  %f = func.ref {callee = @g} : fn(box) -> (box)\n"
                     "  return %c, %f\n"
                     "}\n"
                     "\n"
                     "host @g(%x: box) -> box {\n"
                     "  return %x\n"
                     "}\n";
  auto m = ir::parseModule(ctx, text, "t.eir");
  ASSERT_TRUE(m) << m.error().str();
  ASSERT_TRUE(ir::verify(**m)) << ir::verify(**m).error().str();
  std::string printed = ir::print(**m);
  EXPECT_EQ(printed, text);
  auto again = ir::parseModule(ctx, printed, "t2.eir");
  ASSERT_TRUE(again);
  EXPECT_EQ(ir::print(**again), printed);
  EXPECT_EQ(ctx.boxType()->str(), "box");
  EXPECT_FALSE(ctx.boxType()->isLinear());
  EXPECT_FALSE(ctx.boxType()->isAffine());
  EXPECT_EQ(ctx.structType({ctx.boxType(), ctx.i32()})->sizeInBytes(), 16u);
}

// ---- verifier ------------------------------------------------------------------

std::string verifyText(std::string_view text) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx, text, "v.eir");
  if (!m) return "parse error: " + m.error().str();
  Status s = ir::verify(**m);
  return s ? std::string("ok") : s.error().str();
}

TEST(Box, VerifierKeepsBoxesInHostCode) {
  EXPECT_EQ(verifyText("kernel @k(%n: u32) workgroup(1, 1, 1) {\n"
                       "  %b = box.new %n : box\n"
                       "  return\n}\n"),
            "v.eir:2:3: error[V007]: 'box.new': is only allowed in host functions, but @k is a kernel function");
  EXPECT_EQ(verifyText("device @d(%b: box) -> u32 {\n"
                       "  %z = const {value = 0} : u32\n"
                       "  return %z\n}\n"),
            "v.eir:1:1: error[V004]: function '@d': parameter 0 has type 'box', but box values (host heap "
            "cells) live only in host functions and @d is a device function");
  EXPECT_EQ(verifyText("device @d(%x: u32) -> fn() -> (box) {\n"
                       "  %f = func.ref {callee = @d} : fn() -> (box)\n"
                       "  return %f\n}\n"),
            "v.eir:1:1: error[V004]: function '@d': result 0 has type 'fn() -> (box)', but box values (host "
            "heap cells) live only in host functions and @d is a device function");
  EXPECT_EQ(verifyText("device @d(%x: u32) -> u32 {\n"
                       "  %s = struct.make %x : struct<u32>\n"
                       "  %m = match %s : u32 { |%p: box| yield %x }\n"
                       "  return %x\n}\n"),
            "v.eir:3:3: error[V004]: 'match': a value of type 'box' in @d, a device function, but box values "
            "(host heap cells) live only in host functions");
  EXPECT_EQ(verifyText("host @h(%n: u32) {\n"
                       "  %b = alloc %n : buffer<struct<box>, device, linear>\n"
                       "  free %b\n"
                       "  return\n}\n"),
            "v.eir:2:3: error[V004]: 'alloc': type 'buffer<struct<box>, device, linear>': a device buffer "
            "cannot hold boxes (host heap cells)");
  EXPECT_EQ(verifyText("host @h(%n: u32) {\n"
                       "  %b = alloc %n : buffer<box, host, linear>\n"
                       "  free %b\n"
                       "  return\n}\n"),
            "ok");
}

TEST(Box, VerifierRejectsBoxingOwners) {
  EXPECT_EQ(verifyText("host @h(%n: u32) {\n"
                       "  %b = alloc %n : buffer<f32, host, linear>\n"
                       "  %x = box.new %b : box\n"
                       "  return\n}\n"),
            "v.eir:3:3: error[V009]: 'box.new': the boxed value of type 'buffer<f32, host, linear>' owns a "
            "buffer; a box is copied freely, so it may hold only values that own nothing (or own one host "
            "buffer<T, host, affine> of them)");
  EXPECT_EQ(verifyText("host @h(%b: buffer<f32, host, read>) {\n"
                       "  %s = struct.make %b : struct<buffer<f32, host, read>>\n"
                       "  %x = box.new %s : box\n"
                       "  return\n}\n"),
            "v.eir:3:3: error[V009]: 'box.new': the boxed value of type 'struct<buffer<f32, host, read>>' "
            "holds a buffer; a box may hold only values without buffers (or own one host buffer<T, host, "
            "affine> of them)");
  EXPECT_EQ(verifyText("host @h(%b: box) {\n"
                       "  %x = box.get %b : buffer<f32, host, affine>\n"
                       "  return\n}\n"),
            "v.eir:2:3: error[V009]: 'box.get': the result type 'buffer<f32, host, affine>' owns a buffer; a "
            "box is copied freely, so it may hold only values that own nothing (or own one host buffer<T, "
            "host, affine> of them)");
  EXPECT_EQ(verifyText("host @h(%b: i32) {\n"
                       "  %x = box.new %b : i32\n"
                       "  %y = box.get %b : i32\n"
                       "  return\n}\n"),
            "v.eir:2:3: error[V009]: 'box.new': result must be 'box', got 'i32'");
  EXPECT_EQ(verifyText("host @h(%b: i32) {\n"
                       "  %y = box.get %b : i32\n"
                       "  return\n}\n"),
            "v.eir:2:3: error[V009]: 'box.get': operand must be a 'box', got 'i32'");
}

// ---- passes --------------------------------------------------------------------

std::string optimise(std::string_view text, const char* pipeline) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx, text, "p.eir");
  if (!m) return "parse error: " + m.error().str();
  auto pm = passes::PassManager::parse(pipeline);
  if (!pm) return "bad pipeline";
  std::vector<Error> errors;
  if (!pm->run(**m, {}, errors)) return errors.empty() ? "failed" : errors[0].str();
  return ir::print(**m);
}

TEST(Box, CseMergesAndDceRemovesBoxOps) {
  EXPECT_EQ(optimise("host @h(%n: i32) -> (i32, i32) {\n"
                     "  %b = box.new %n : box\n"
                     "  %unused = box.new %n : box\n"
                     "  %x = box.get %b : i32\n"
                     "  %y = box.get %b : i32\n"
                     "  return %x, %y\n}\n",
                     "cse,dce"),
            "host @h(%n: i32) -> (i32, i32) {\n"
            "  %b = box.new %n : box\n"
            "  %x = box.get %b : i32\n"
            "  return %x, %x\n"
            "}\n");
}

TEST(Box, LinearityAcceptsBoxesNextToLinearBuffers) {
  const char* text = "host @h(%n: u32) -> box {\n"
                     "  %buf = alloc %n : buffer<f32, host, linear>\n"
                     "  %len = buffer.len %buf : u32\n"
                     "  %b = box.new %len : box\n"
                     "  %c = box.new %b : box\n"
                     "  free %buf\n"
                     "  return %c\n}\n";
  std::string out = optimise(text, "linearity");
  EXPECT_NE(out.find("%c = box.new %b : box"), std::string::npos) << out;
}

// A box that owns a host buffer: box.new consumes it (a later use is a use
// after move; a boxed buffer is no leak), and dce keeps that box.new even
// when the box is unused, since it moves ownership.
TEST(Box, BoxingAHostBufferConsumesIt) {
  const char* leakFree = "host @h(%n: u32) {\n"
                         "  %buf = alloc %n : buffer<f32, host, affine>\n"
                         "  %b = box.new %buf : box\n"
                         "  return\n}\n";
  std::string out = optimise(leakFree, "linearity,dce");
  EXPECT_NE(out.find("%b = box.new %buf : box"), std::string::npos) << out;
  std::string twice = optimise("host @h(%n: u32) {\n"
                               "  %buf = alloc %n : buffer<f32, host, affine>\n"
                               "  %b = box.new %buf : box\n"
                               "  free %buf\n"
                               "  return\n}\n",
                               "linearity");
  EXPECT_NE(twice.find("p.eir:4:3: error[L001]:"), std::string::npos) << twice;
}

TEST_F(InterpBox, ABoxedBufferIsReadAsAViewByEveryCopy) {
  EXPECT_EQ(runMain("host @main() -> (i32, i32) {\n"
                        "  %two = const {value = 2} : i32\n"
                        "  %zero = const {value = 0} : i32\n"
                        "  %one = const {value = 1} : i32\n"
                        "  %seven = const {value = 7} : i32\n"
                        "  %buf = alloc %two : buffer<i32, host, affine>\n"
                        "  store %buf, %zero, %seven\n"
                        "  store %buf, %one, %two\n"
                        "  %b = box.new %buf : box\n"
                        "  %s = struct.make %b, %b : struct<box, box>\n"
                        "  %c = struct.extract %s {index = 1} : box\n"
                        "  %v = box.get %c : buffer<i32, host, read>\n"
                        "  %w = box.get %b : buffer<i32, host, read>\n"
                        "  %x = load %v, %zero : i32\n"
                        "  %y = load %w, %one : i32\n"
                        "  return %x, %y\n}\n",
                    {}),
            "7, 2");
}

}  // namespace
}  // namespace eph::test
