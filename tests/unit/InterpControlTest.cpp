// Interpreter semantics of structured control flow and calls
// (ir/ops/Control.cpp): if, for, while, match, call, recursion and its limit.
#include "tests/unit/InterpTestUtil.h"

#include "ir/interp/Exec.h"

namespace eph::test {
namespace {

using InterpControl = InterpTest;

TEST_F(InterpControl, IfRunsOneRegionAndYieldsItsValues) {
  load("host @main(%x: i32) -> (i32, bool) {\n"
       "  %z = const {value = 0} : i32\n"
       "  %neg = lt %x, %z : bool\n"
       "  %r, %f = if %neg : i32, bool {\n"
       "    %n = neg %x : i32\n"
       "    yield %n, %neg\n"
       "  } {\n"
       "    %t = const {value = false} : bool\n"
       "    yield %x, %t\n"
       "  }\n"
       "  return %r, %f\n}\n");
  EXPECT_EQ(run("main", {"-17"}), "17, true");
  EXPECT_EQ(run("main", {"23"}), "23, false");
}

const char* kSumLoop =
    "host @main(%lo: i32, %hi: i32, %step: i32) -> (i32, i32) {\n"
    "  %z = const {value = 0} : i32\n"
    "  %s, %n = for %lo, %hi, %step, %z, %z : i32, i32 { |%i: i32, %acc: i32, %cnt: i32|\n"
    "    %a = add %acc, %i : i32\n"
    "    %one = const {value = 1} : i32\n"
    "    %c = add %cnt, %one : i32\n"
    "    yield %a, %c\n"
    "  }\n"
    "  return %s, %n\n}\n";

TEST_F(InterpControl, ForCountsUpWhileBelowTheBound) {
  load(kSumLoop);
  EXPECT_EQ(run("main", {"-3", "3", "2"}), "-3, 3");  // -3, -1, 1
  EXPECT_EQ(run("main", {"1", "11", "1"}), "55, 10");
  EXPECT_EQ(run("main", {"5", "5", "1"}), "0, 0");
  EXPECT_EQ(run("main", {"7", "2", "1"}), "0, 0");
}

TEST_F(InterpControl, ForWithNegativeStepCountsDown) {
  load(kSumLoop);
  EXPECT_EQ(run("main", {"10", "0", "-3"}), "22, 4");  // 10, 7, 4, 1
}

TEST_F(InterpControl, ForStepZeroIsAnError) {
  load(kSumLoop);
  EXPECT_EQ(run("main", {"0", "10", "0"}), "error: test.eir:3:3: error: 'for' has a step of 0");
}

TEST_F(InterpControl, ForNeverWrapsTheInductionVariable) {
  // 250 + 10 would wrap to 4 in u8 and loop forever; the loop stops instead.
  EXPECT_EQ(runMain("host @main() -> u32 {\n"
                    "  %lo = const {value = 250} : u8\n"
                    "  %hi = const {value = 255} : u8\n"
                    "  %st = const {value = 10} : u8\n"
                    "  %z = const {value = 0} : u32\n"
                    "  %n = for %lo, %hi, %st, %z : u32 { |%i: u8, %c: u32|\n"
                    "    %w = cast %i : u32\n"
                    "    %c2 = add %c, %w : u32\n"
                    "    yield %c2\n"
                    "  }\n"
                    "  return %n\n}\n"),
            "250");
  // Unsigned bounds compare unsigned: 4294967290 < 4294967295.
  EXPECT_EQ(runMain("host @main() -> u32 {\n"
                    "  %lo = const {value = 4294967290} : u32\n"
                    "  %hi = const {value = 4294967295} : u32\n"
                    "  %st = const {value = 2} : u32\n"
                    "  %z = const {value = 0} : u32\n"
                    "  %n = for %lo, %hi, %st, %z : u32 { |%i: u32, %c: u32|\n"
                    "    %one = const {value = 1} : u32\n"
                    "    %c2 = add %c, %one : u32\n"
                    "    yield %c2\n"
                    "  }\n"
                    "  return %n\n}\n"),
            "3");
}

TEST_F(InterpControl, WhileLoopsUntilConditionFails) {
  // Collatz steps: 27 takes 111 steps to reach 1.
  load("host @main(%x: u32) -> (u32, u32) {\n"
       "  %z = const {value = 0} : u32\n"
       "  %v, %n = while %x, %z : u32, u32 { |%a: u32, %k: u32|\n"
       "    %one = const {value = 1} : u32\n"
       "    %go = ne %a, %one : bool\n"
       "    condition %go, %a, %k\n"
       "  } { |%b: u32, %m: u32|\n"
       "    %one = const {value = 1} : u32\n"
       "    %two = const {value = 2} : u32\n"
       "    %three = const {value = 3} : u32\n"
       "    %r = rem %b, %two : u32\n"
       "    %odd = eq %r, %one : bool\n"
       "    %next = if %odd : u32 {\n"
       "      %t = mul %b, %three : u32\n"
       "      %t1 = add %t, %one : u32\n"
       "      yield %t1\n"
       "    } {\n"
       "      %h = div %b, %two : u32\n"
       "      yield %h\n"
       "    }\n"
       "    %m1 = add %m, %one : u32\n"
       "    yield %next, %m1\n"
       "  }\n"
       "  return %v, %n\n}\n");
  EXPECT_EQ(run("main", {"27"}), "1, 111");
  EXPECT_EQ(run("main", {"1"}), "1, 0");
}

const char* kFactorial =
    "host @fact(%n: i64) -> i64 {\n"
    "  %one = const {value = 1} : i64\n"
    "  %base = le %n, %one : bool\n"
    "  %r = if %base : i64 {\n"
    "    yield %one\n"
    "  } {\n"
    "    %m = sub %n, %one : i64\n"
    "    %f = call %m {callee = @fact} : i64\n"
    "    %p = mul %n, %f : i64\n"
    "    yield %p\n"
    "  }\n"
    "  return %r\n}\n";

TEST_F(InterpControl, HostRecursionComputesFactorial) {
  load(kFactorial);
  EXPECT_EQ(run("fact", {"1"}), "1");
  EXPECT_EQ(run("fact", {"5"}), "120");
  EXPECT_EQ(run("fact", {"20"}), "2432902008176640000");
  EXPECT_EQ(run("fact", {"21"}), "-4249290049419214848");  // wraps in i64
  // 999 nested calls of @fact (plus the entry call) stay within the limit.
  EXPECT_EQ(run("fact", {"999"}), "0");
}

TEST_F(InterpControl, RecursionDepthLimitIsAnError) {
  load(kFactorial);
  EXPECT_EQ(run("fact", {"1001"}),
            "error: test.eir:8:5: error: call depth limit of " +
                std::to_string(interp::Exec::kMaxCallDepth) +
                " exceeded calling @fact (unbounded recursion?)");
  // Unbounded recursion ends with the same clear error, not a stack overflow.
  EXPECT_EQ(runMain("host @main(%x: i32) -> i32 {\n"
                    "  %y = call %x {callee = @main} : i32\n"
                    "  return %y\n}\n",
                    {"3"}),
            "error: test.eir:2:3: error: call depth limit of 1000 exceeded calling @main "
            "(unbounded recursion?)");
}

TEST_F(InterpControl, CallPassesArgumentsAndReturnsSeveralResults) {
  EXPECT_EQ(runMain("host @divmod(%a: i32, %b: i32) -> (i32, i32) {\n"
                    "  %q = div %a, %b : i32\n"
                    "  %r = rem %a, %b : i32\n"
                    "  return %q, %r\n}\n"
                    "host @main(%a: i32) -> (i32, i32) {\n"
                    "  %b = const {value = 4} : i32\n"
                    "  %q, %r = call %a, %b {callee = @divmod} : i32, i32\n"
                    "  return %r, %q\n}\n",
                    {"-13"}),
            "-1, -3");
}

TEST_F(InterpControl, ErrorsInCalleesCarryTheCalleeLocation) {
  EXPECT_EQ(runMain("host @f(%a: i32) -> i32 {\n"
                    "  %z = const {value = 0} : i32\n"
                    "  %q = div %a, %z : i32\n"
                    "  return %q\n}\n"
                    "host @main(%a: i32) -> i32 {\n"
                    "  %q = call %a {callee = @f} : i32\n"
                    "  return %q\n}\n",
                    {"5"}),
            "error: test.eir:3:3: error: integer division by zero");
}

}  // namespace
}  // namespace eph::test
