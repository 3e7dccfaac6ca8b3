// The float64 math lowering (targets/spirv/Float64Math.h) run on plain
// doubles: the same algorithm the SPIR-V backend emits, step for step,
// compared with glibc's libm over many inputs. The stated tolerances are the
// ones in Float64Math.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <cstdio>

#include "targets/spirv/Float64Math.h"

namespace eph::spirv {
namespace {

struct DoubleBackend {
  using Num = double;
  using Cond = bool;
  using Int = int32_t;
  double c(double v) { return v; }
  double add(double x, double y) { return x + y; }
  double sub(double x, double y) { return x - y; }
  double mul(double x, double y) { return x * y; }
  double div(double x, double y) { return x / y; }
  double floor(double x) { return std::floor(x); }
  bool lt(double x, double y) { return x < y; }
  bool le(double x, double y) { return x <= y; }
  bool gt(double x, double y) { return x > y; }
  bool eq(double x, double y) { return x == y; }
  bool isnan(double x) { return std::isnan(x); }
  bool land(bool x, bool y) { return x && y; }
  bool lor(bool x, bool y) { return x || y; }
  double sel(bool p, double x, double y) { return p ? x : y; }
  int32_t toInt(double x) { return int32_t(x); }
  double toNum(int32_t x) { return double(x); }
  int32_t ihalf(int32_t x) { return x >> 1; }
  int32_t isub(int32_t x, int32_t y) { return x - y; }
  double ldexp(double x, int32_t k) { return std::ldexp(x, k); }
  void frexp(double x, double& m, int32_t& e) {
    int ei = 0;
    m = std::frexp(x, &ei);
    e = ei;
  }
};

// Distance in units in the last place, counting across zero; NaN matches NaN
// and equal infinities match.
double ulps(double got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : 1e30;
  if (std::isinf(want) || std::isinf(got)) return got == want ? 0 : 1e30;
  auto ordered = [](double d) {
    int64_t i;
    std::memcpy(&i, &d, 8);
    return i < 0 ? std::numeric_limits<int64_t>::min() - i : i;
  };
  __int128 d = __int128(ordered(got)) - __int128(ordered(want));
  return double(d < 0 ? -d : d);
}

class SpirvMathTest : public ::testing::Test {
 protected:
  DoubleBackend be;
  f64math::Algorithms<DoubleBackend> alg{be};
  std::mt19937_64 rng{12345};

  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }
  // log-uniform magnitudes in [2^lo, 2^hi], random sign when asked.
  double wide(int lo, int hi, bool sign) {
    double m = std::ldexp(uniform(1.0, 2.0), int(uniform(lo, hi)));
    return sign && (rng() & 1) ? -m : m;
  }

  template <class Ours, class Ref>
  double maxUlps(const std::vector<double>& xs, Ours ours, Ref ref, double* worstAt = nullptr) {
    double worst = 0;
    for (double x : xs) {
      double u = ulps(ours(x), ref(x));
      if (u > worst) {
        worst = u;
        if (worstAt) *worstAt = x;
      }
    }
    return worst;
  }
};

TEST_F(SpirvMathTest, Exp) {
  std::vector<double> xs;
  for (int i = 0; i < 200000; ++i) xs.push_back(uniform(-745.2, 709.8));
  for (int i = 0; i < 100000; ++i) xs.push_back(wide(-60, 3, true));
  for (double x : {0.0, -0.0, 1.0, -1.0, 709.78, 709.79, -745.13, -745.14, -740.0, 1e-310, 800.0, -800.0,
                   std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN()})
    xs.push_back(x);
  double at = 0;
  double u = maxUlps(xs, [&](double x) { return alg.exp(x); }, [](double x) { return std::exp(x); }, &at);
  EXPECT_LE(u, 2) << "at x = " << at;
}

TEST_F(SpirvMathTest, Log) {
  std::vector<double> xs;
  for (int i = 0; i < 200000; ++i) xs.push_back(wide(-1074, 1023, false));
  for (int i = 0; i < 100000; ++i) xs.push_back(uniform(0.5, 2.0));
  for (int i = 0; i < 20000; ++i) xs.push_back(1.0 + wide(-52, -5, true));
  for (double x : {1.0, 2.0, 0.5, 0.0, -0.0, -1.0, 4.9e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                   std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()})
    xs.push_back(x);
  double at = 0;
  double u = maxUlps(xs, [&](double x) { return alg.log(x); }, [](double x) { return std::log(x); }, &at);
  EXPECT_LE(u, 2) << "at x = " << at;
}

TEST_F(SpirvMathTest, SinCosTan) {
  std::vector<double> xs;
  for (int i = 0; i < 200000; ++i) xs.push_back(uniform(-10.0, 10.0));
  for (int i = 0; i < 100000; ++i) xs.push_back(wide(-40, 20, true));  // up to 2^20 < 2^20 pi/2
  for (int k = -2000; k <= 2000; ++k) xs.push_back(k * M_PI / 2);      // near multiples of pi/2
  for (double x : {0.0, -0.0, 1e-300, -1e-300, std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN()})
    xs.push_back(x);
  double at = 0;
  EXPECT_LE(maxUlps(xs, [&](double x) { return alg.sin(x); }, [](double x) { return std::sin(x); }, &at), 2)
      << "sin at x = " << at;
  EXPECT_LE(maxUlps(xs, [&](double x) { return alg.cos(x); }, [](double x) { return std::cos(x); }, &at), 2)
      << "cos at x = " << at;
  EXPECT_LE(maxUlps(xs, [&](double x) { return alg.tan(x); }, [](double x) { return std::tan(x); }, &at), 3)
      << "tan at x = " << at;
  // -0 stays -0 for the odd functions.
  EXPECT_TRUE(std::signbit(alg.sin(-0.0)));
  EXPECT_TRUE(std::signbit(alg.tan(-0.0)));
}

TEST_F(SpirvMathTest, Tanh) {
  std::vector<double> xs;
  for (int i = 0; i < 200000; ++i) xs.push_back(uniform(-25.0, 25.0));
  for (int i = 0; i < 100000; ++i) xs.push_back(wide(-1074, 10, true));
  for (double x : {0.0, -0.0, 22.0, -22.0, 1e300, std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()})
    xs.push_back(x);
  double at = 0;
  EXPECT_LE(maxUlps(xs, [&](double x) { return alg.tanh(x); }, [](double x) { return std::tanh(x); }, &at), 3)
      << "at x = " << at;
  EXPECT_TRUE(std::signbit(alg.tanh(-0.0)));
}

TEST_F(SpirvMathTest, PowOfAbsoluteValues) {
  // pow error grows with |y log x|: at most 2 ulp + |y log x| / 8.
  double ratio = 0;
  double worst = 0, worstX = 0, worstY = 0;
  auto check = [&](double x, double y) {
    double want = std::pow(x, y);
    double got = alg.powAbs(x, y);
    double t = std::fabs(y * std::log(x));
    double allowed = 2 + (std::isfinite(t) ? t / 8 : 0);
    double u = ulps(got, want);
    if (std::isfinite(t) && t > 1) ratio = std::max(ratio, (u - 2) / t);
    if (u > allowed && u > worst) {
      worst = u;
      worstX = x;
      worstY = y;
    }
  };
  for (int i = 0; i < 200000; ++i) check(uniform(0.0, 10.0), uniform(-20.0, 20.0));
  for (int i = 0; i < 200000; ++i) {
    double x = wide(-1074, 1023, false);
    double lim = 700 / std::fabs(std::log(x));  // results near the whole finite range
    check(x, uniform(-lim, lim));
  }
  for (int i = 0; i < 50000; ++i) check(1.0 + wide(-52, -2, true), uniform(-1e6, 1e6));
  for (double x : {0.0, 1.0, 2.0, 0.5, std::numeric_limits<double>::infinity()})
    for (double y : {0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -3.0, 1e10, -1e10, 1e300})
      check(x, y);
  EXPECT_EQ(worst, 0) << "pow(" << worstX << ", " << worstY << ") is " << alg.powAbs(worstX, worstY)
                      << ", libm says " << std::pow(worstX, worstY);
  std::printf("pow: worst extra error %.4f ulp per unit of |y log x|\n", ratio);
  // Small integer powers are (nearly) exact.
  EXPECT_EQ(alg.powAbs(2.0, 10.0), 1024.0);
  EXPECT_EQ(alg.powAbs(3.0, 2.0), 9.0);
}

}  // namespace
}  // namespace eph::spirv
