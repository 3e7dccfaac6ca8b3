// The CPU target computes exactly what the interpreter computes: every
// scalar and vector op on edge values (integer wrap, shifts by more than the
// width, INT_MIN / -1, remainders of negative numbers, NaN in min/max and
// compares, saturating float-to-int casts with NaN -> 0, f16 rounding, libm
// functions), compared bit for bit, element by element, with the
// interpreter's results for the same kernel.
#ifdef EPH_HAVE_LLVM

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/InterpDevice.h"
#include "runtime/cpu/CpuDevice.h"
#include "tests/support/DeviceRun.h"

namespace eph::test {
namespace {

// `%r = <op> %x, %y : <result>` (or one operand) per element of two input buffers.
std::string opKernel(const std::string& op, const std::string& type, const std::string& result, bool unary) {
  return "kernel @k(%a: buffer<" + type + ", device, read>, %b: buffer<" + type +
         ", device, read>, %out: buffer<" + result + ", device, write>) workgroup(16, 1, 1) {\n"
         "  %i = global_id {dim = 0} : u32\n"
         "  %n = buffer.len %out : u32\n"
         "  %in = lt %i, %n : bool\n"
         "  if %in {\n"
         "    %x = load %a, %i : " + type + "\n"
         "    %y = load %b, %i : " + type + "\n" +
         (unary ? "    %r = " + op + " %x : " + result + "\n" : "    %r = " + op + " %x, %y : " + result + "\n") +
         "    store %out, %i, %r\n"
         "    yield\n"
         "  } {\n"
         "    yield\n"
         "  }\n"
         "  return\n"
         "}\n";
}

interp::RtValue zeroOf(const ir::Type* t) {
  interp::RtValue v;
  v.type = t;
  if (t->isVector())
    for (unsigned i = 0; i < t->count(); ++i) v.elems.push_back(zeroOf(t->elem()));
  return v;
}

class CpuSemantics : public ::testing::Test {
 protected:
  const ir::Type* type(const std::string& text) {
    auto m = ir::parseModule(ctx_, "device @t(%x: " + text + ") { return }", "t.eir");
    EXPECT_TRUE(m) << text;
    const ir::Type* t = (*m)->lookup("t")->paramTypes()[0];
    keep_.push_back(std::move(*m));
    return t;
  }

  // Every pair (x, y) of `values` through op on both targets; results must be
  // identical (floats by bits).
  void check(const std::string& op, const std::string& typeText, const std::vector<std::string>& values,
             std::string result = "", bool unary = false) {
    if (result.empty()) result = typeText;
    SCOPED_TRACE(op + " on " + typeText);
    std::string text = opKernel(op, typeText, result, unary);
    auto m = ir::parseModule(ctx_, text, "op.eir");
    ASSERT_TRUE(m) << m.error().str() << "\n" << text;
    ASSERT_TRUE(ir::verify(**m)) << text;
    const ir::Type* t = (*m)->lookup("k")->paramTypes()[0]->elem();
    const ir::Type* rt = (*m)->lookup("k")->paramTypes()[2]->elem();
    interp::Memory scratch;
    std::vector<interp::RtValue> xs, ys, outs;
    for (const std::string& x : values)
      for (const std::string& y : unary ? std::vector<std::string>{values[0]} : values) {
        auto vx = interp::parseValue(x, t, scratch);
        auto vy = interp::parseValue(y, t, scratch);
        ASSERT_TRUE(vx && vy) << x << " " << y;
        xs.push_back(*vx);
        ys.push_back(*vy);
        outs.push_back(zeroOf(rt));
      }
    std::vector<KernelArg> args = {KernelArg::ofBuffer(t, xs), KernelArg::ofBuffer(t, ys),
                                   KernelArg::ofBuffer(rt, outs)};
    uint32_t groups = uint32_t((xs.size() + 15) / 16);
    runtime::InterpDevice ref;
    runtime::CpuDevice cpu;
    auto want = runKernelOn(ref, **m, "k", {groups, 1, 1}, args);
    auto got = runKernelOn(cpu, **m, "k", {groups, 1, 1}, args);
    ASSERT_TRUE(want) << want.error().str();
    ASSERT_TRUE(got) << got.error().str();
    for (size_t i = 0; i < xs.size(); ++i)
      EXPECT_TRUE((*want)[2].elems[i] == (*got)[2].elems[i])
          << op << " " << interp::format(xs[i]) << (unary ? "" : ", " + interp::format(ys[i])) << ": interp "
          << interp::format((*want)[2].elems[i]) << ", cpu " << interp::format((*got)[2].elems[i]);
  }

  ir::Context ctx_;
  std::vector<std::unique_ptr<ir::Module>> keep_;
};

const std::vector<std::string> kI32 = {"0", "1", "-1", "7", "-7", "31", "32", "33", "2147483647", "-2147483648", "100000"};
const std::vector<std::string> kU32 = {"0", "1", "7", "31", "32", "33", "2147483648", "4294967295", "100000"};
const std::vector<std::string> kI8 = {"0", "1", "-1", "7", "-8", "9", "127", "-128"};
const std::vector<std::string> kU16 = {"0", "1", "15", "16", "17", "32768", "65535"};
const std::vector<std::string> kI64 = {"0", "1", "-1", "63", "64", "65", "9223372036854775807", "-9223372036854775808"};
const std::vector<std::string> kU64 = {"0", "1", "63", "64", "18446744073709551615", "9223372036854775808"};
const std::vector<std::string> kF32 = {"0.0", "-0.0", "1.0", "-1.5", "0.1", "3.0e38", "1e-40", "inf", "-inf", "nan",
                                       "2147483648.0", "-2147483904.0", "4294967296.0", "255.9", "65504.0"};
const std::vector<std::string> kF64 = {"0.0", "-0.0", "1.0", "-2.5", "0.1", "1e300", "5e-324", "inf", "-inf", "nan",
                                       "9.3e18", "-9.3e18", "1.8e19"};
const std::vector<std::string> kF16 = {"0.0", "-0.0", "1.0", "-1.5", "0.1", "65504.0", "6e-8", "inf", "-inf", "nan", "300.5"};

TEST_F(CpuSemantics, IntegerArithmeticWrapsAndGuards) {
  for (auto [t, vals] : {std::pair{"i32", &kI32}, {"u32", &kU32}, {"i8", &kI8}, {"u16", &kU16}, {"i64", &kI64},
                         {"u64", &kU64}}) {
    for (const char* op : {"add", "sub", "mul", "min", "max", "and", "or", "xor", "shl", "shr"}) check(op, t, *vals);
    for (const char* op : {"neg", "abs", "not"}) check(op, t, *vals, "", true);
  }
}

TEST_F(CpuSemantics, IntegerDivisionAndRemainder) {
  // Divisors are never zero here (zero traps, see CpuDevice tests).
  check("div", "i32", {"7", "-7", "1", "-1", "2147483647", "-2147483648", "3"});
  check("rem", "i32", {"7", "-7", "1", "-1", "2147483647", "-2147483648", "3"});
  check("div", "i64", {"7", "-7", "-1", "-9223372036854775808", "3"});
  check("rem", "i64", {"7", "-7", "-1", "-9223372036854775808", "3"});
  check("div", "u32", {"7", "1", "4294967295", "3"});
  check("rem", "u8", {"7", "1", "255", "3"});
  check("div", "i8", {"-128", "-1", "5", "127"});
}

TEST_F(CpuSemantics, FloatArithmetic) {
  for (auto [t, vals] : {std::pair{"f32", &kF32}, {"f64", &kF64}, {"f16", &kF16}}) {
    for (const char* op : {"add", "sub", "mul", "div", "rem", "pow"}) check(op, t, *vals);
    for (const char* op : {"neg", "abs", "sqrt", "rsqrt", "exp", "log", "sin", "cos", "tan", "tanh", "floor", "ceil"})
      check(op, t, *vals, "", true);
  }
}

TEST_F(CpuSemantics, MoreMathAtSpecialValues) {
  for (auto [t, vals] : {std::pair{"f32", &kF32}, {"f64", &kF64}, {"f16", &kF16}}) {
    std::vector<std::string> v = *vals;
    for (const char* x : {"0.5", "-0.5", "2.5", "-1.0", "0.99", "1.5"}) v.push_back(x);
    for (const char* op : {"asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "exp2", "log2",
                           "log1p", "expm1", "round", "trunc", "sign"})
      check(op, t, v, "", true);
    check("atan2", t, *vals);
    check("copysign", t, *vals);
  }
}

TEST_F(CpuSemantics, FloatMinMaxReturnTheNumberBesideNaN) {
  // Signed zeros compare equal and either may come back; keep them apart.
  std::vector<std::string> v = {"1.0", "-2.5", "inf", "-inf", "nan", "0.0", "3e38"};
  for (const char* t : {"f32", "f64", "f16"}) {
    check("min", t, v);
    check("max", t, v);
  }
}

TEST_F(CpuSemantics, ComparisonsAreOrderedExceptNe) {
  for (auto [t, vals] : {std::pair{"f32", &kF32}, {"f16", &kF16}, {"i32", &kI32}, {"u64", &kU64}, {"i8", &kI8}})
    for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) check(op, t, *vals, "bool");
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor"}) check(op, "bool", {"true", "false"});
}

TEST_F(CpuSemantics, CastsSaturateAndMapNaNToZero) {
  for (const char* to : {"i32", "u32", "i8", "u8", "i16", "u16", "i64", "u64", "bool", "f64", "f16"})
    check("cast", "f32", kF32, to, true);
  for (const char* to : {"i32", "u64", "i64", "f32", "f16", "bool"}) check("cast", "f64", kF64, to, true);
  for (const char* to : {"i8", "u16", "u64", "f32", "f16", "f64", "bool"}) check("cast", "i32", kI32, to, true);
  for (const char* to : {"f32", "f16", "f64", "i32"}) check("cast", "u64", kU64, to, true);
  for (const char* to : {"f32", "i32", "u8"}) check("cast", "f16", kF16, to, true);
  for (const char* to : {"i32", "f32", "u8"}) check("cast", "bool", {"true", "false"}, to, true);
}

TEST_F(CpuSemantics, Bitcasts) {
  check("bitcast", "f32", kF32, "i32", true);
  check("bitcast", "i64", kI64, "f64", true);
  check("bitcast", "vec<u16, 2>", {"<1, 2>", "<65535, 0>"}, "f32", true);
  check("bitcast", "f16", kF16, "u16", true);
}

TEST_F(CpuSemantics, VectorsAreElementwise) {
  std::vector<std::string> v = {"<1.0, -2.0, 0.5, nan>", "<3.0, 4.0, -0.0, 1e30>", "<0.1, 0.2, 0.3, 0.4>"};
  for (const char* op : {"add", "mul", "div", "min", "max", "pow"}) check(op, "vec<f32, 4>", v);
  for (const char* op : {"sqrt", "exp", "erf", "neg", "floor"}) check(op, "vec<f32, 4>", v, "", true);
  // erf on both sides of its two pieces (|x| = 0.875) and where it reaches 1.
  check("erf", "vec<f32, 4>", {"<0.875, -0.87500006, 0.87499994, -3.9>", "<4.0, -4.5, 1e-30, -2.0>"}, "", true);
  check("lt", "vec<f32, 4>", v, "vec<bool, 4>");
  check("cast", "vec<f32, 4>", v, "vec<i32, 4>", true);
  std::vector<std::string> iv = {"<1, -2, 2147483647>", "<-2147483648, 5, 33>"};
  for (const char* op : {"add", "mul", "shl", "shr", "max", "rem"}) check(op, "vec<i32, 3>", {"<1, -2, 2147483647>", "<7, 5, 33>"});
  check("sub", "vec<i32, 3>", iv);
  std::vector<std::string> f3 = {"<1.0, 2.0, 3.0>", "<-0.5, 0.25, 8.0>", "<0.1, 0.7, -0.3>"};
  check("dot", "vec<f32, 3>", f3, "f32");
  check("cross", "vec<f32, 3>", f3);
  check("length", "vec<f32, 3>", f3, "f32", true);
  check("normalize", "vec<f32, 3>", f3, "", true);
  check("dot", "vec<f16, 2>", {"<1.0, 2.0>", "<0.1, 300.0>"}, "f16");
  check("and", "vec<bool, 2>", {"<true, false>", "<true, true>"});
}

}  // namespace
}  // namespace eph::test

#endif  // EPH_HAVE_LLVM
