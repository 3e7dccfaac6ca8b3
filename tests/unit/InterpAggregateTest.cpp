// Interpreter semantics of vectors, structs, sums and arrays
// (ir/ops/Aggregate.cpp).
#include "tests/unit/InterpTestUtil.h"

namespace eph::test {
namespace {

using InterpAggregate = InterpTest;

TEST_F(InterpAggregate, VecMakeExtractInsert) {
  EXPECT_EQ(runMain("host @main(%a: f32, %b: f32) -> (vec<f32, 3>, f32, vec<f32, 3>) {\n"
                    "  %v = vec.make %a, %b, %a : vec<f32, 3>\n"
                    "  %e = vec.extract %v {index = 1} : f32\n"
                    "  %w = vec.insert %v, %b {index = 0} : vec<f32, 3>\n"
                    "  return %v, %e, %w\n}\n",
                    {"1.5", "-2"}),
            "<1.5, -2.0, 1.5>, -2.0, <-2.0, -2.0, 1.5>");
}

TEST_F(InterpAggregate, DotCrossLengthNormalize) {
  EXPECT_EQ(binary("dot", "vec<f32, 3>", "<1, 2, 3>", "<4, -5, 6>", "f32"), "12.0");
  EXPECT_EQ(binary("dot", "vec<f32, 2>", "<0.1, 0.2>", "<0.1, 0.2>", "f32"), "0.05");
  EXPECT_EQ(binary("cross", "vec<f32, 3>", "<1, 2, 3>", "<4, 5, 6>"), "<-3.0, 6.0, -3.0>");
  EXPECT_EQ(binary("cross", "vec<f64, 3>", "<0, 1, 0>", "<1, 0, 0>"), "<0.0, 0.0, -1.0>");
  EXPECT_EQ(unary("length", "vec<f32, 3>", "<1, 2, 3>", "f32"), "3.7416575");
  EXPECT_EQ(unary("length", "vec<f64, 2>", "<-3, 4>", "f64"), "5.0");
  EXPECT_EQ(unary("normalize", "vec<f32, 3>", "<1, 2, 3>"), "<0.26726124, 0.5345225, 0.80178374>");
  EXPECT_EQ(unary("normalize", "vec<f64, 2>", "<0, -2.5>"), "<0.0, -1.0>");
}

TEST_F(InterpAggregate, StructMakeExtractInsert) {
  EXPECT_EQ(runMain("host @main(%a: i32, %b: f64) -> (struct<i32, f64, bool>, f64, struct<i32, f64, bool>) {\n"
                    "  %t = const {value = true} : bool\n"
                    "  %s = struct.make %a, %b, %t : struct<i32, f64, bool>\n"
                    "  %e = struct.extract %s {index = 1} : f64\n"
                    "  %n = const {value = -9} : i32\n"
                    "  %s2 = struct.insert %s, %n {index = 0} : struct<i32, f64, bool>\n"
                    "  return %s, %e, %s2\n}\n",
                    {"7", "2.5"}),
            "(7, 2.5, true), 2.5, (-9, 2.5, true)");
}

TEST_F(InterpAggregate, StructUnpackGivesEveryField) {
  EXPECT_EQ(runMain("host @main(%a: i32, %b: f64) -> (f64, i32, bool) {\n"
                    "  %t = const {value = false} : bool\n"
                    "  %s = struct.make %a, %b, %t : struct<i32, f64, bool>\n"
                    "  %x, %y, %z = struct.unpack %s : i32, f64, bool\n"
                    "  return %y, %x, %z\n}\n",
                    {"-7", "0.125"}),
            "0.125, -7, false");
}

TEST_F(InterpAggregate, SumMakeTagAndMatch) {
  load("host @main(%x: i32) -> (sum<f32, i32>, i32) {\n"
       "  %s = sum.make %x {tag = 1} : sum<f32, i32>\n"
       "  %t = sum.tag %s : i32\n"
       "  return %s, %t\n}\n"
       "host @pick(%s: sum<f32, i32>) -> (u32, i32) {\n"
       "  %t = sum.tag %s : u32\n"
       "  %r = match %s : i32 { |%p: f32|\n"
       "    %c = cast %p : i32\n"
       "    yield %c\n"
       "  } { |%q: i32|\n"
       "    %two = const {value = 2} : i32\n"
       "    %m = mul %q, %two : i32\n"
       "    yield %m\n"
       "  }\n"
       "  return %t, %r\n}\n");
  EXPECT_EQ(run("main", {"-4"}), "#1(-4), 1");
  EXPECT_EQ(run("pick", {"#0(-2.75)"}), "0, -2");
  EXPECT_EQ(run("pick", {"#1(21)"}), "1, 42");
}

TEST_F(InterpAggregate, ArrayMakeGetSet) {
  load("host @main(%i: i32, %v: i8) -> (array<i8, 4>, i8, array<i8, 4>) {\n"
       "  %a0 = const {value = 10} : i8\n"
       "  %a1 = const {value = -20} : i8\n"
       "  %a = array.make %a0, %a1, %a0, %a1 : array<i8, 4>\n"
       "  %g = array.get %a, %i : i8\n"
       "  %s = array.set %a, %i, %v : array<i8, 4>\n"
       "  return %a, %g, %s\n}\n");
  EXPECT_EQ(run("main", {"3", "99"}), "[10, -20, 10, -20], -20, [10, -20, 10, 99]");
  EXPECT_EQ(run("main", {"4", "1"}),
            "error: test.eir:5:3: error: index 4 is out of bounds for an array of 4 elements");
  EXPECT_EQ(run("main", {"-1", "1"}),
            "error: test.eir:5:3: error: index -1 is out of bounds for an array of 4 elements");
}

TEST_F(InterpAggregate, ArraySetOutOfBoundsIsAnError) {
  load("host @main(%i: u32) -> array<f32, 2> {\n"
       "  %x = const {value = 1.5} : f32\n"
       "  %a = array.make %x, %x : array<f32, 2>\n"
       "  %s = array.set %a, %i, %x : array<f32, 2>\n"
       "  return %s\n}\n");
  EXPECT_EQ(run("main", {"1"}), "[1.5, 1.5]");
  EXPECT_EQ(run("main", {"4294967295"}),
            "error: test.eir:4:3: error: index 4294967295 is out of bounds for an array of 2 elements");
}

}  // namespace
}  // namespace eph::test
