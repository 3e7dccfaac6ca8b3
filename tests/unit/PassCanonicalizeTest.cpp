// Constant folding must agree with execution. For each op and operand values
// chosen to expose mistakes (wrap-around, sign, rounding, NaN), one function
// computes `op a, b` from its parameters at run time in the interpreter, and
// another computes it from constants that canonicalize folds; the folded
// constant must equal the interpreter's result bit for bit.
#include <gtest/gtest.h>

#include <string>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/interp/Interp.h"
#include "passes/PassManager.h"

using namespace eph;

namespace {

struct Case {
  std::string op;
  std::string type;    // operand type
  std::string result;  // result type
  std::vector<std::string> args;
};

// The value canonicalize folded @folded's result to, and what the interpreter
// computes for @run on the same arguments.
void checkFoldMatchesInterpreter(const Case& c) {
  SCOPED_TRACE(c.op + " " + c.type + " (" + [&] {
    std::string s;
    for (auto& a : c.args) s += a + " ";
    return s;
  }() + ")");
  std::string params, consts, operandsRun, operandsFold;
  for (size_t i = 0; i < c.args.size(); ++i) {
    std::string n = std::to_string(i);
    params += (i ? ", %p" : "%p") + n + ": " + c.type;
    consts += "  %c" + n + " = const {value = " + c.args[i] + "} : " + c.type + "\n";
    operandsRun += (i ? ", %p" : "%p") + n;
    operandsFold += (i ? ", %c" : "%c") + n;
  }
  std::string text = "host @run(" + params + ") -> " + c.result + " {\n  %r = " + c.op + " " +
                     operandsRun + " : " + c.result + "\n  return %r\n}\n\nhost @folded() -> " +
                     c.result + " {\n" + consts + "  %r = " + c.op + " " + operandsFold + " : " +
                     c.result + "\n  return %r\n}\n";
  ir::Context ctx;
  auto m = ir::parseModule(ctx, text, "fold.eir");
  ASSERT_TRUE(m) << m.error().str() << "\n" << text;

  interp::Interpreter in(**m);
  std::vector<interp::RtValue> args;
  for (auto& a : c.args) {
    auto v = interp::parseValue(a, (*m)->lookup("run")->paramTypes()[0], in.memory());
    ASSERT_TRUE(v) << v.error().str();
    args.push_back(*v);
  }
  auto expected = in.call(*(*m)->lookup("run"), args);
  ASSERT_TRUE(expected) << expected.error().str();

  auto pm = passes::PassManager::parse("canonicalize");
  ASSERT_TRUE(pm);
  ASSERT_TRUE(pm->run(**m));
  ir::Function* folded = (*m)->lookup("folded");
  ir::Op* first = folded->body().front();
  ASSERT_EQ(first->name(), "const") << ir::print(*folded);
  ASSERT_EQ(first->nextOp()->name(), "return") << ir::print(*folded);
  // The folded function now returns a constant: run it too and compare exactly.
  interp::Interpreter in2(**m);
  auto got = in2.call(*folded, {});
  ASSERT_TRUE(got) << got.error().str();
  EXPECT_TRUE((*got)[0] == (*expected)[0])
      << "folded " << interp::format((*got)[0]) << ", executed " << interp::format((*expected)[0]);
}

}  // namespace

TEST(Canonicalize, IntegerFoldingMatchesTheInterpreter) {
  const std::vector<Case> cases = {
      {"add", "i8", "i8", {"127", "1"}},        {"sub", "u8", "u8", {"3", "250"}},
      {"mul", "i32", "i32", {"65536", "65537"}}, {"mul", "u64", "u64", {"18446744073709551615", "3"}},
      {"div", "i32", "i32", {"-7", "2"}},        {"div", "i32", "i32", {"-2147483648", "-1"}},
      {"div", "u32", "u32", {"4294967295", "7"}}, {"rem", "i32", "i32", {"-7", "3"}},
      {"rem", "i64", "i64", {"7", "-3"}},        {"min", "i16", "i16", {"-5", "3"}},
      {"max", "u16", "u16", {"65535", "3"}},     {"and", "i32", "i32", {"-6", "13"}},
      {"or", "u8", "u8", {"160", "5"}},          {"xor", "i32", "i32", {"-1", "1234"}},
      {"shl", "i32", "i32", {"3", "33"}},        {"shl", "u8", "u8", {"129", "1"}},
      {"shr", "i32", "i32", {"-16", "2"}},       {"shr", "u32", "u32", {"4294967280", "2"}},
      {"eq", "i32", "bool", {"-3", "-3"}},       {"ne", "u8", "bool", {"1", "2"}},
      {"lt", "i32", "bool", {"-1", "1"}},        {"lt", "u32", "bool", {"4294967295", "1"}},
      {"le", "i64", "bool", {"5", "5"}},         {"gt", "u8", "bool", {"200", "100"}},
      {"ge", "i8", "bool", {"-128", "127"}},     {"neg", "i32", "i32", {"-2147483648"}},
      {"neg", "u32", "u32", {"5"}},              {"abs", "i16", "i16", {"-300"}},
      {"not", "u8", "u8", {"10"}},               {"not", "bool", "bool", {"true"}},
      {"and", "bool", "bool", {"true", "false"}}, {"xor", "bool", "bool", {"true", "true"}},
  };
  for (const Case& c : cases) checkFoldMatchesInterpreter(c);
}

TEST(Canonicalize, FloatFoldingMatchesTheInterpreter) {
  const std::vector<Case> cases = {
      {"add", "f32", "f32", {"0.1", "0.2"}},   {"add", "f64", "f64", {"0.1", "0.2"}},
      {"sub", "f32", "f32", {"1.0e30", "1.0"}}, {"mul", "f32", "f32", {"3.4e38", "10.0"}},
      {"div", "f64", "f64", {"1.0", "3.0"}},   {"div", "f32", "f32", {"1.0", "0.0"}},
      {"div", "f32", "f32", {"0.0", "0.0"}},   {"rem", "f64", "f64", {"-7.5", "2.0"}},
      {"min", "f32", "f32", {"nan", "2.0"}},   {"max", "f64", "f64", {"-0.0", "0.0"}},
      {"pow", "f32", "f32", {"2.0", "0.5"}},   {"sqrt", "f32", "f32", {"2.0"}},
      {"rsqrt", "f64", "f64", {"4.0"}},        {"exp", "f32", "f32", {"1.0"}},
      {"log", "f64", "f64", {"10.0"}},         {"sin", "f32", "f32", {"1.0"}},
      {"cos", "f64", "f64", {"1.0"}},          {"tan", "f32", "f32", {"0.5"}},
      {"tanh", "f64", "f64", {"0.5"}},         {"floor", "f32", "f32", {"-2.5"}},
      {"ceil", "f64", "f64", {"-2.5"}},        {"neg", "f32", "f32", {"0.0"}},
      {"abs", "f64", "f64", {"-3.25"}},        {"eq", "f32", "bool", {"nan", "nan"}},
      {"ne", "f32", "bool", {"nan", "nan"}},   {"lt", "f64", "bool", {"-0.0", "0.0"}},
      {"add", "f16", "f16", {"0.1", "0.2"}},
      {"atan2", "f64", "f64", {"1.0", "-2.0"}}, {"erf", "f32", "f32", {"0.5"}},
      {"round", "f64", "f64", {"-2.5"}},       {"sign", "f64", "f64", {"-0.0"}},
      {"copysign", "f32", "f32", {"2.0", "-0.0"}}, {"fma", "f64", "f64", {"0.1", "10.0", "-1.0"}},
  };
  for (const Case& c : cases) checkFoldMatchesInterpreter(c);
}

TEST(Canonicalize, CastFoldingMatchesTheInterpreter) {
  const std::vector<Case> cases = {
      {"cast", "f32", "i32", {"-2.75"}},     {"cast", "f32", "i8", {"1000.0"}},
      {"cast", "f64", "u32", {"-5.0"}},      {"cast", "f32", "i32", {"nan"}},
      {"cast", "i32", "u8", {"-1"}},         {"cast", "u32", "i64", {"4294967295"}},
      {"cast", "i64", "f32", {"16777217"}},  {"cast", "i32", "bool", {"-4"}},
      {"cast", "bool", "f64", {"true"}},     {"bitcast", "f32", "u32", {"-1.0"}},
      {"bitcast", "i64", "f64", {"4607182418800017408"}},
  };
  for (const Case& c : cases) checkFoldMatchesInterpreter(c);
}

TEST(Canonicalize, TrappingOpsAreNotFolded) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx, R"(host @f() -> (i32, u32) {
  %a = const {value = 7} : i32
  %z = const {value = 0} : i32
  %d = div %a, %z : i32
  %b = const {value = 9} : u32
  %zu = const {value = 0} : u32
  %r = rem %b, %zu : u32
  return %d, %r
}
)", "trap.eir");
  ASSERT_TRUE(m);
  std::string before = ir::print(**m);
  auto pm = passes::PassManager::parse("canonicalize");
  auto changed = pm->run(**m);
  ASSERT_TRUE(changed);
  EXPECT_FALSE(*changed);
  EXPECT_EQ(ir::print(**m), before);
}

TEST(Canonicalize, NonScalarResultsAreNotFolded) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx, R"(host @f() -> vec<f32, 2> {
  %a = const {value = 1.5} : f32
  %b = const {value = 2.5} : f32
  %v = vec.make %a, %b : vec<f32, 2>
  return %v
}
)", "vec.eir");
  ASSERT_TRUE(m) << m.error().str();
  auto pm = passes::PassManager::parse("canonicalize");
  ASSERT_TRUE(pm->run(**m));
  EXPECT_NE(ir::print(**m).find("vec.make %a, %b"), std::string::npos) << ir::print(**m);
}

// div/rem by a power of two become shr/and only where the dividend cannot be
// negative; the rewritten functions must compute what the originals did, for
// every argument (negative ones included, where a shift would round the
// other way).
TEST(Canonicalize, DivRemByPowerOfTwoMatchesTheInterpreter) {
  const char* text = R"(host @f(%x: i32, %u: u32, %h: u16) -> (i32, i32, i32, i32, u32, u32, i64) {
  %zero = const {value = 0} : i32
  %m = max %x, %zero : i32
  %c8 = const {value = 8} : i32
  %q = div %m, %c8 : i32
  %mask = const {value = 1023} : i32
  %low = and %x, %mask : i32
  %r = rem %low, %c8 : i32
  %qx = div %x, %c8 : i32
  %rx = rem %x, %c8 : i32
  %c16 = const {value = 16} : u32
  %qu = div %u, %c16 : u32
  %ru = rem %u, %c16 : u32
  %wide = cast %h : i64
  %c4 = const {value = 4} : i64
  %w = div %wide, %c4 : i64
  return %q, %r, %qx, %rx, %qu, %ru, %w
}
)";
  ir::Context ctx;
  auto original = ir::parseModule(ctx, text, "divrem.eir");
  auto rewritten = ir::parseModule(ctx, text, "divrem.eir");
  ASSERT_TRUE(original && rewritten);
  auto pm = passes::PassManager::parse("canonicalize");
  ASSERT_TRUE(pm->run(**rewritten));
  std::string printed = ir::print(**rewritten);
  // five rewritten; %qx and %rx (x of unknown sign) left as they were
  EXPECT_EQ(printed.find("%q = div"), std::string::npos) << printed;
  EXPECT_NE(printed.find("%q = shr"), std::string::npos) << printed;
  EXPECT_NE(printed.find("%r = and"), std::string::npos) << printed;
  EXPECT_NE(printed.find("%qu = shr"), std::string::npos) << printed;
  EXPECT_NE(printed.find("%ru = and"), std::string::npos) << printed;
  EXPECT_NE(printed.find("%w = shr"), std::string::npos) << printed;
  EXPECT_NE(printed.find("%qx = div %x"), std::string::npos) << printed;
  EXPECT_NE(printed.find("%rx = rem %x"), std::string::npos) << printed;

  const ir::Function& f0 = *(*original)->lookup("f");
  const ir::Function& f1 = *(*rewritten)->lookup("f");
  for (const char* x : {"-2147483648", "-1025", "-9", "-8", "-7", "-1", "0", "1", "7", "8", "9", "1023", "2147483647"})
    for (const char* u : {"0", "15", "16", "17", "4294967295"})
      for (const char* h : {"0", "3", "4", "65535"}) {
        SCOPED_TRACE(std::string("x=") + x + " u=" + u + " h=" + h);
        interp::Interpreter in0(**original), in1(**rewritten);
        std::vector<interp::RtValue> args0, args1;
        const char* values[] = {x, u, h};
        for (unsigned i = 0; i < 3; ++i) {
          auto a0 = interp::parseValue(values[i], f0.paramTypes()[i], in0.memory());
          auto a1 = interp::parseValue(values[i], f1.paramTypes()[i], in1.memory());
          ASSERT_TRUE(a0 && a1);
          args0.push_back(*a0);
          args1.push_back(*a1);
        }
        auto want = in0.call(f0, args0);
        auto got = in1.call(f1, args1);
        ASSERT_TRUE(want && got);
        ASSERT_EQ(want->size(), got->size());
        for (size_t k = 0; k < want->size(); ++k)
          EXPECT_TRUE((*got)[k] == (*want)[k]) << "result " << k << ": " << interp::format((*got)[k])
                                               << ", want " << interp::format((*want)[k]);
      }
}
