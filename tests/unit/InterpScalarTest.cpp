// Interpreter semantics of the scalar and elementwise ops (ir/ops/Arith.cpp):
// wrap-around, signedness, float rounding, NaN rules and casts.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ir/interp/Scalar.h"
#include "tests/unit/InterpTestUtil.h"

namespace eph::test {
namespace {

using InterpScalar = InterpTest;

TEST_F(InterpScalar, ConstOfEveryKind) {
  EXPECT_EQ(runMain("host @main() -> (i8, u64, f32, bool) {\n"
                    "  %a = const {value = -128} : i8\n"
                    "  %b = const {value = 18446744073709551615} : u64\n"
                    "  %c = const {value = 0.1} : f32\n"
                    "  %d = const {value = true} : bool\n"
                    "  return %a, %b, %c, %d\n}\n"),
            "-128, 18446744073709551615, 0.1, true");
}

// erf of f32 (interp::erfF32, which the cpu target emits step for step):
// within 1.3 ulp of erf in double at 2^21 points of [-5, 5] and at tiny
// and subnormal x, odd, exact at the special values. (CpuSemantics checks
// the cpu target against it bit for bit.)
TEST_F(InterpScalar, ErfOfF32IsWithinOneAndAQuarterUlp) {
  auto ulpErr = [](float got, double want) {
    float w = float(want);
    double ulp = w == 0 ? std::ldexp(1.0, -149) : std::max(std::ldexp(1.0, std::ilogb(w) - 23), std::ldexp(1.0, -149));
    return std::fabs(double(got) - want) / ulp;
  };
  double worst = 0;
  std::vector<float> xs;
  for (int i = 0; i <= (1 << 21); ++i) xs.push_back(float(-5.0 + 10.0 * i / (1 << 21)));
  for (float x : {1e-30f, -3e-39f, 1e-45f, 0.875f, 0.87500006f, 3.92f, 3.93f, 10.0f, -1e30f}) xs.push_back(x);
  for (float x : xs) {
    const float got = interp::erfF32(x);
    const double e = ulpErr(got, std::erf(double(x)));
    worst = std::max(worst, e);
    ASSERT_LE(e, 1.3) << "x = " << x << ": " << got << ", erf in double " << std::erf(double(x));
    ASSERT_EQ(interp::erfF32(-x), -got) << x;
  }
  EXPECT_GE(worst, 0.5);  // not libm in disguise
  EXPECT_EQ(interp::erfF32(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(interp::erfF32(-std::numeric_limits<float>::infinity()), -1.0f);
  EXPECT_TRUE(std::isnan(interp::erfF32(std::nanf(""))));
  EXPECT_TRUE(std::signbit(interp::erfF32(-0.0f)));
  EXPECT_EQ(interp::erfF32(4.0f), 1.0f);
  // The op on f32 values is this function; on f64 it is erf in double.
  EXPECT_EQ(unary("erf", "f32", "0.3"), interp::format(interp::RtValue::ofFloat(ctx_.f32(), interp::erfF32(0.3f))));
  EXPECT_EQ(unary("erf", "f64", "0.3"), interp::format(interp::RtValue::ofFloat(ctx_.f64(), std::erf(0.3))));
}

TEST_F(InterpScalar, AddWrapsAtTheWidth) {
  EXPECT_EQ(binary("add", "i8", "100", "100"), "-56");
  EXPECT_EQ(binary("add", "u8", "200", "100"), "44");
  EXPECT_EQ(binary("add", "i32", "2147483647", "1"), "-2147483648");
  EXPECT_EQ(binary("add", "u64", "18446744073709551615", "2"), "1");
}

// exp of f32 (interp::expF32, which the cpu target emits step for step):
// within 1 ulp of exp in double rounded to f32 at 2^21 points of [-110, 95]
// (overflow past 88.72, results subnormal below -87.34, zero below -103.97),
// exact at the special values. (CpuSemantics checks the cpu target against it
// bit for bit.)
TEST_F(InterpScalar, ExpOfF32IsWithinOneUlp) {
  auto ulps = [](float a, float b) {
    int32_t ia, ib;
    std::memcpy(&ia, &a, 4);
    std::memcpy(&ib, &b, 4);
    return std::abs(int64_t(ia) - int64_t(ib));
  };
  int64_t worst = 0;
  for (int i = 0; i <= (1 << 21); ++i) {
    float x = float(-110.0 + 205.0 * i / (1 << 21));
    float want = float(std::exp(double(x)));
    float got = interp::expF32(x);
    ASSERT_EQ(std::signbit(got), false) << x;
    if (std::isinf(want)) {
      EXPECT_TRUE(std::isinf(got)) << x;
      continue;
    }
    worst = std::max(worst, ulps(got, want));
    ASSERT_LE(ulps(got, want), 1) << "x = " << x << ": " << got << ", correctly rounded " << want;
  }
  EXPECT_GE(worst, 1);  // not libm in disguise
  EXPECT_EQ(interp::expF32(0.0f), 1.0f);
  EXPECT_EQ(interp::expF32(-0.0f), 1.0f);
  EXPECT_EQ(interp::expF32(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(interp::expF32(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(interp::expF32(std::nanf(""))));
  EXPECT_LE(ulps(interp::expF32(88.72283f), float(std::exp(double(88.72283f)))), 1);  // the largest finite results
  EXPECT_TRUE(std::isinf(interp::expF32(88.7229f)));
  EXPECT_GT(interp::expF32(-103.9f), 0.0f);
  EXPECT_EQ(interp::expF32(-104.0f), 0.0f);
  // The op on f32 values is this function; on f64 it is exp in double.
  EXPECT_EQ(unary("exp", "f32", "0.1"), interp::format(interp::RtValue::ofFloat(ctx_.f32(), interp::expF32(0.1f))));
}

TEST_F(InterpScalar, AddRoundsFloatsToTheType) {
  EXPECT_EQ(binary("add", "f64", "0.1", "0.2"), "0.30000000000000004");
  EXPECT_EQ(binary("add", "f32", "0.1", "0.2"), "0.3");
  EXPECT_EQ(binary("add", "f32", "16777216", "1"), "16777216.0");
  EXPECT_EQ(binary("add", "f64", "16777216", "1"), "16777217.0");
  EXPECT_EQ(binary("add", "f16", "2048", "1"), "2048.0");
  EXPECT_EQ(binary("add", "f16", "0.1", "0.2"), "0.2998");
}

TEST_F(InterpScalar, SubAndMul) {
  EXPECT_EQ(binary("sub", "u8", "3", "5"), "254");
  EXPECT_EQ(binary("sub", "i16", "-32768", "1"), "32767");
  EXPECT_EQ(binary("sub", "f32", "1.5", "-2.25"), "3.75");
  EXPECT_EQ(binary("mul", "i16", "300", "300"), "24464");
  EXPECT_EQ(binary("mul", "u32", "65536", "65537"), "65536");
  EXPECT_EQ(binary("mul", "i32", "-7", "6"), "-42");
  EXPECT_EQ(binary("mul", "f32", "1.1", "1.1"), "1.21");
  EXPECT_EQ(binary("mul", "f64", "1.1", "1.1"), "1.2100000000000002");
}

TEST_F(InterpScalar, DivTruncatesAndWraps) {
  EXPECT_EQ(binary("div", "i32", "-7", "2"), "-3");
  EXPECT_EQ(binary("div", "i32", "7", "-2"), "-3");
  EXPECT_EQ(binary("div", "u32", "4294967295", "2"), "2147483647");
  EXPECT_EQ(binary("div", "i32", "-2147483648", "-1"), "-2147483648");
  EXPECT_EQ(binary("div", "i64", "-9223372036854775808", "-1"), "-9223372036854775808");
  EXPECT_EQ(binary("div", "i8", "-128", "-1"), "-128");
  EXPECT_EQ(binary("div", "f32", "1", "3"), "0.33333334");
  EXPECT_EQ(binary("div", "f64", "-1", "0"), "-inf");
}

TEST_F(InterpScalar, IntegerDivisionByZeroIsAnError) {
  EXPECT_EQ(binary("div", "i32", "5", "0"), "error: test.eir:2:3: error: integer division by zero");
  EXPECT_EQ(binary("rem", "u8", "5", "0"), "error: test.eir:2:3: error: integer remainder by zero");
}

TEST_F(InterpScalar, RemHasTheSignOfTheDividend) {
  EXPECT_EQ(binary("rem", "i32", "-7", "3"), "-1");
  EXPECT_EQ(binary("rem", "i32", "7", "-3"), "1");
  EXPECT_EQ(binary("rem", "u8", "250", "7"), "5");
  EXPECT_EQ(binary("rem", "i32", "-2147483648", "-1"), "0");
  EXPECT_EQ(binary("rem", "f32", "-7.5", "2"), "-1.5");
  EXPECT_EQ(binary("rem", "f64", "7.5", "-2"), "1.5");
}

TEST_F(InterpScalar, MinMaxRespectSignednessAndNaN) {
  EXPECT_EQ(binary("min", "i32", "-3", "2"), "-3");
  EXPECT_EQ(binary("min", "u32", "4294967295", "1"), "1");
  EXPECT_EQ(binary("max", "i8", "-1", "-100"), "-1");
  EXPECT_EQ(binary("max", "u8", "255", "1"), "255");
  EXPECT_EQ(binary("min", "f32", "nan", "1.5"), "1.5");
  EXPECT_EQ(binary("min", "f32", "1.5", "nan"), "1.5");
  EXPECT_EQ(binary("max", "f64", "2.5", "nan"), "2.5");
  EXPECT_EQ(binary("max", "f64", "-2.5", "-3.5"), "-2.5");
}

TEST_F(InterpScalar, BitwiseOnIntsAndLogicOnBools) {
  EXPECT_EQ(binary("and", "i32", "12", "10"), "8");
  EXPECT_EQ(binary("or", "i32", "12", "10"), "14");
  EXPECT_EQ(binary("xor", "u8", "255", "15"), "240");
  EXPECT_EQ(binary("and", "i8", "-1", "-128"), "-128");
  EXPECT_EQ(binary("and", "bool", "true", "false"), "false");
  EXPECT_EQ(binary("or", "bool", "false", "true"), "true");
  EXPECT_EQ(binary("xor", "bool", "true", "true"), "false");
}

TEST_F(InterpScalar, ShiftsTakeTheAmountModuloTheWidth) {
  EXPECT_EQ(binary("shl", "i8", "1", "7"), "-128");
  EXPECT_EQ(binary("shl", "u8", "1", "9"), "2");
  EXPECT_EQ(binary("shl", "i32", "3", "33"), "6");
  EXPECT_EQ(binary("shl", "u16", "65535", "4"), "65520");
}

TEST_F(InterpScalar, ShrIsArithmeticForSignedAndLogicalForUnsigned) {
  EXPECT_EQ(binary("shr", "i8", "-128", "1"), "-64");
  EXPECT_EQ(binary("shr", "u8", "128", "1"), "64");
  EXPECT_EQ(binary("shr", "i32", "-16", "2"), "-4");
  EXPECT_EQ(binary("shr", "u32", "4294967280", "2"), "1073741820");
  EXPECT_EQ(binary("shr", "i32", "-16", "-1"), "-1");  // shift by 31
  EXPECT_EQ(binary("shr", "u64", "18446744073709551615", "63"), "1");
  EXPECT_EQ(binary("shr", "i64", "-9223372036854775808", "63"), "-1");
}

TEST_F(InterpScalar, NegAbsNot) {
  EXPECT_EQ(unary("neg", "i8", "-128"), "-128");
  EXPECT_EQ(unary("neg", "u8", "1"), "255");
  EXPECT_EQ(unary("neg", "i32", "7"), "-7");
  EXPECT_EQ(unary("neg", "f32", "0.0"), "-0.0");
  EXPECT_EQ(unary("abs", "i32", "-5"), "5");
  EXPECT_EQ(unary("abs", "i8", "-128"), "-128");
  EXPECT_EQ(unary("abs", "u8", "200"), "200");
  EXPECT_EQ(unary("abs", "f64", "-2.5"), "2.5");
  EXPECT_EQ(unary("not", "i8", "5"), "-6");
  EXPECT_EQ(unary("not", "u8", "5"), "250");
  EXPECT_EQ(unary("not", "bool", "true"), "false");
}

TEST_F(InterpScalar, FloatComparisonsAreOrderedExceptNe) {
  EXPECT_EQ(compare("eq", "f32", "nan", "nan"), "false");
  EXPECT_EQ(compare("ne", "f32", "nan", "nan"), "true");
  EXPECT_EQ(compare("ne", "f64", "1.5", "1.5"), "false");
  EXPECT_EQ(compare("lt", "f32", "nan", "1"), "false");
  EXPECT_EQ(compare("le", "f32", "nan", "1"), "false");
  EXPECT_EQ(compare("gt", "f64", "nan", "1"), "false");
  EXPECT_EQ(compare("ge", "f64", "1", "nan"), "false");
  EXPECT_EQ(compare("eq", "f32", "0.0", "-0.0"), "true");
  EXPECT_EQ(compare("lt", "f32", "-1.5", "1.5"), "true");
}

TEST_F(InterpScalar, IntegerComparisonsRespectSignedness) {
  EXPECT_EQ(compare("lt", "i32", "-1", "1"), "true");
  EXPECT_EQ(compare("lt", "u32", "4294967295", "1"), "false");
  EXPECT_EQ(compare("le", "i8", "3", "3"), "true");
  EXPECT_EQ(compare("gt", "u8", "200", "100"), "true");
  EXPECT_EQ(compare("gt", "i8", "-56", "100"), "false");
  EXPECT_EQ(compare("ge", "u64", "18446744073709551615", "0"), "true");
  EXPECT_EQ(compare("eq", "i16", "-7", "-7"), "true");
  EXPECT_EQ(compare("ne", "bool", "true", "false"), "true");
}

TEST_F(InterpScalar, SelectPicksByCondition) {
  const char* text =
      "host @main(%c: bool, %a: i32, %b: i32) -> i32 {\n"
      "  %r = select %c, %a, %b : i32\n  return %r\n}\n";
  load(text);
  EXPECT_EQ(run("main", {"true", "7", "-9"}), "7");
  EXPECT_EQ(run("main", {"false", "7", "-9"}), "-9");
}

TEST_F(InterpScalar, CastIntToIntWraps) {
  EXPECT_EQ(unary("cast", "i32", "300", "i8"), "44");
  EXPECT_EQ(unary("cast", "i32", "-1", "u32"), "4294967295");
  EXPECT_EQ(unary("cast", "u32", "4294967295", "i64"), "4294967295");
  EXPECT_EQ(unary("cast", "i8", "-1", "u16"), "65535");
  EXPECT_EQ(unary("cast", "u8", "200", "i8"), "-56");
}

TEST_F(InterpScalar, CastFloatToIntTruncatesAndSaturates) {
  EXPECT_EQ(unary("cast", "f32", "3.9", "i32"), "3");
  EXPECT_EQ(unary("cast", "f32", "-3.9", "i32"), "-3");
  EXPECT_EQ(unary("cast", "f64", "1e10", "i32"), "2147483647");
  EXPECT_EQ(unary("cast", "f64", "-1e10", "i32"), "-2147483648");
  EXPECT_EQ(unary("cast", "f32", "nan", "i32"), "0");
  EXPECT_EQ(unary("cast", "f32", "300.5", "u8"), "255");
  EXPECT_EQ(unary("cast", "f32", "-5.5", "u8"), "0");
  EXPECT_EQ(unary("cast", "f64", "inf", "i64"), "9223372036854775807");
  EXPECT_EQ(unary("cast", "f64", "-inf", "i64"), "-9223372036854775808");
  EXPECT_EQ(unary("cast", "f64", "1e30", "u64"), "18446744073709551615");
}

TEST_F(InterpScalar, CastToFloatRoundsOnce) {
  EXPECT_EQ(unary("cast", "i64", "16777217", "f32"), "16777216.0");
  EXPECT_EQ(unary("cast", "u32", "4294967295", "f32"), "4294967296.0");
  EXPECT_EQ(unary("cast", "u64", "18446744073709551615", "f64"), "1.8446744073709552e+19");
  EXPECT_EQ(unary("cast", "i32", "-7", "f64"), "-7.0");
  EXPECT_EQ(unary("cast", "f64", "0.1", "f32"), "0.1");
  EXPECT_EQ(unary("cast", "f64", "65520", "f16"), "inf");
  EXPECT_EQ(unary("cast", "f16", "0.1", "f64"), "0.0999755859375");
}

TEST_F(InterpScalar, CastBoolAndNumbers) {
  EXPECT_EQ(unary("cast", "bool", "true", "i32"), "1");
  EXPECT_EQ(unary("cast", "bool", "true", "f32"), "1.0");
  EXPECT_EQ(unary("cast", "f32", "0.5", "bool"), "true");
  EXPECT_EQ(unary("cast", "f32", "-0.0", "bool"), "false");
  EXPECT_EQ(unary("cast", "i32", "-2", "bool"), "true");
  EXPECT_EQ(unary("cast", "u8", "0", "bool"), "false");
}

TEST_F(InterpScalar, BitcastReinterpretsBits) {
  EXPECT_EQ(unary("bitcast", "f32", "1.0", "u32"), "1065353216");
  EXPECT_EQ(unary("bitcast", "u32", "1078530011", "f32"), "3.1415927");
  EXPECT_EQ(unary("bitcast", "i32", "-1", "f32"), "nan");
  EXPECT_EQ(unary("bitcast", "f64", "-2.0", "i64"), "-4611686018427387904");
  EXPECT_EQ(unary("bitcast", "u16", "15360", "f16"), "1.0");
  EXPECT_EQ(unary("bitcast", "f64", "1.0", "vec<u32, 2>"), "<0, 1072693248>");
  EXPECT_EQ(unary("bitcast", "vec<f16, 2>", "<1.0, 2.0>", "u32"), "1073757184");
  EXPECT_EQ(unary("bitcast", "vec<i16, 4>", "<-1, 0, 1, 2>", "vec<u32, 2>"), "<65535, 131073>");
}

TEST_F(InterpScalar, MathFunctions) {
  EXPECT_EQ(unary("sqrt", "f32", "2"), "1.4142135");
  EXPECT_EQ(unary("sqrt", "f64", "-1"), "nan");
  EXPECT_EQ(unary("rsqrt", "f32", "2"), "0.70710677");
  EXPECT_EQ(unary("rsqrt", "f64", "4"), "0.5");
  EXPECT_EQ(unary("exp", "f64", "1"), "2.718281828459045");
  EXPECT_EQ(unary("log", "f64", "10"), "2.302585092994046");
  EXPECT_EQ(unary("log", "f32", "0"), "-inf");
  EXPECT_EQ(unary("sin", "f64", "1"), "0.8414709848078965");
  EXPECT_EQ(unary("cos", "f32", "0.5"), "0.87758255");
  EXPECT_EQ(unary("tan", "f64", "1"), "1.5574077246549023");
  EXPECT_EQ(unary("tanh", "f64", "0.5"), "0.46211715726000974");
  EXPECT_EQ(unary("floor", "f32", "-1.5"), "-2.0");
  EXPECT_EQ(unary("floor", "f64", "2.7"), "2.0");
  EXPECT_EQ(unary("ceil", "f32", "-1.5"), "-1.0");
  EXPECT_EQ(unary("ceil", "f64", "2.1"), "3.0");
  EXPECT_EQ(binary("pow", "f64", "2", "10"), "1024.0");
  EXPECT_EQ(binary("pow", "f32", "2", "0.5"), "1.4142135");
  EXPECT_EQ(binary("pow", "f64", "-8", "0.5"), "nan");
}

TEST_F(InterpScalar, MoreMathFollowsC) {
  EXPECT_EQ(unary("asin", "f64", "1"), "1.5707963267948966");
  EXPECT_EQ(unary("acos", "f32", "2"), "nan");
  EXPECT_EQ(unary("atan", "f64", "-inf"), "-1.5707963267948966");
  EXPECT_EQ(binary("atan2", "f64", "0.0", "-0.0"), "3.141592653589793");
  EXPECT_EQ(binary("atan2", "f64", "-0.0", "1.0"), "-0.0");
  EXPECT_EQ(unary("sinh", "f64", "-0.0"), "-0.0");
  EXPECT_EQ(unary("cosh", "f32", "100"), "inf");
  EXPECT_EQ(unary("acosh", "f64", "1"), "0.0");
  EXPECT_EQ(unary("atanh", "f64", "-1"), "-inf");
  EXPECT_EQ(unary("asinh", "f64", "1"), "0.881373587019543");
  EXPECT_EQ(unary("erf", "f64", "0.5"), "0.5204998778130465");
  EXPECT_EQ(unary("exp2", "f32", "10"), "1024.0");
  EXPECT_EQ(unary("log2", "f64", "0.125"), "-3.0");
  EXPECT_EQ(unary("log1p", "f64", "-1"), "-inf");
  EXPECT_EQ(unary("log1p", "f64", "1e-20"), "1e-20");
  EXPECT_EQ(unary("expm1", "f64", "1e-20"), "1e-20");
  // round: halves away from zero; trunc toward zero; both keep the sign of zero.
  EXPECT_EQ(unary("round", "f64", "2.5"), "3.0");
  EXPECT_EQ(unary("round", "f32", "-2.5"), "-3.0");
  EXPECT_EQ(unary("round", "f64", "-0.4"), "-0.0");
  EXPECT_EQ(unary("round", "f64", "0.49999999999999994"), "0.0");
  EXPECT_EQ(unary("trunc", "f32", "-2.7"), "-2.0");
  // sign: -1, +1, or x itself for +-0 and NaN.
  EXPECT_EQ(unary("sign", "f64", "-3.5"), "-1.0");
  EXPECT_EQ(unary("sign", "f32", "1e-40"), "1.0");
  EXPECT_EQ(unary("sign", "f64", "-0.0"), "-0.0");
  EXPECT_EQ(unary("sign", "f16", "0.0"), "0.0");
  EXPECT_EQ(unary("sign", "f64", "nan"), "nan");
  EXPECT_EQ(binary("copysign", "f64", "3.0", "-0.0"), "-3.0");
  EXPECT_EQ(binary("copysign", "f32", "-inf", "1.0"), "inf");
  EXPECT_EQ(binary("copysign", "vec<f16, 2>", "<1.0, -2.0>", "<-1.0, 1.0>"), "<-1.0, 2.0>");
}

TEST_F(InterpScalar, FmaRoundsOnce) {
  // (1 + 2^-30)^2 - (1 + 2^-29) = 2^-60 exactly; a separately rounded product
  // would lose it (and 2^-26 for f32 with 1 + 2^-13).
  const char* text =
      "host @main(%a: f64, %c: f64, %x: f32, %z: f32) -> (f64, f32) {\n"
      "  %r = fma %a, %a, %c : f64\n  %s = fma %x, %x, %z : f32\n  return %r, %s\n}\n";
  EXPECT_EQ(runMain(text, {"1.000000000931322574615478515625", "-1.00000000186264514923095703125",
                           "1.0001220703125", "-1.000244140625"}),
            "8.673617379884035e-19, 1.4901161e-08");
}

TEST_F(InterpScalar, ElementwiseOnVectors) {
  EXPECT_EQ(binary("add", "vec<i32, 2>", "<1, 2147483647>", "<2, 1>"), "<3, -2147483648>");
  EXPECT_EQ(binary("shr", "vec<i8, 3>", "<-128, 64, -1>", "<1, 2, 7>"), "<-64, 16, -1>");
  EXPECT_EQ(binary("min", "vec<f32, 2>", "<nan, 1.5>", "<2.5, -1>"), "<2.5, -1.0>");
  EXPECT_EQ(binary("lt", "vec<f32, 3>", "<1, nan, 3>", "<2, 2, 3>", "vec<bool, 3>"),
            "<true, false, false>");
  EXPECT_EQ(unary("neg", "vec<f32, 3>", "<1, -2, 0.5>"), "<-1.0, 2.0, -0.5>");
  EXPECT_EQ(unary("sqrt", "vec<f64, 2>", "<4, 2.25>"), "<2.0, 1.5>");
  EXPECT_EQ(unary("cast", "vec<f32, 2>", "<-3.7, 1e20>", "vec<i32, 2>"), "<-3, 2147483647>");
  EXPECT_EQ(unary("not", "vec<bool, 2>", "<true, false>"), "<false, true>");
  EXPECT_EQ(binary("div", "vec<i32, 2>", "<4, 4>", "<2, 0>"),
            "error: test.eir:2:3: error: integer division by zero");
}

}  // namespace
}  // namespace eph::test
