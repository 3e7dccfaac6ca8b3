// Float64 exp, log, sin, cos, tan, tanh and pow, which GLSL.std.450 defines
// only for 16- and 32-bit floats. The algorithms are written once, generic
// over a "backend" that supplies the arithmetic, so the very same steps either
// emit SPIR-V (Float64Math.cpp) or run on plain doubles (the unit tests
// compare that with libm over many inputs).
//
// Everything is branch-free (selects only): the emitted code adds no blocks,
// so it can sit anywhere, even in a loop header. Only the GLSL.std.450 ops
// that accept 64-bit floats are used (Floor, Frexp, Ldexp) plus plain
// arithmetic, decorated NoContraction so that no driver fuses the error-free
// transformations in log-for-pow.
//
// Algorithms (fdlibm's constants and polynomials):
// - exp: k = round(x / ln 2), r = x - k ln2 (Cody-Waite, two parts), degree-13
//   Taylor polynomial on |r| <= ln2/2, then 2^k in two steps (subnormal and
//   near-overflow results stay exact).
// - log: x = 2^e m with m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f/(2+f),
//   log(1+f) = f - f^2/2 + s (f^2/2 + R(s^2)) with fdlibm's Lg1..Lg7.
// - sin/cos/tan: k = round(x 2/pi), r = x - k pi/2 with pi/2 in four parts
//   (exact products for |k| < 2^20), fdlibm's kernel polynomials on
//   |r| <= pi/4, the quadrant picked by k mod 4; tan = sin/cos of r.
// - tanh: expm1(2|x|) / (expm1(2|x|) + 2), expm1 by the same reduction as exp.
// - pow(|x|, y): log |x| as a double-double (Dekker products, no FMA), times y
//   as a double-double, then exp of that pair.
//
// Measured against glibc's libm on 10^5-10^6 inputs per function
// (tests/unit/SpirvMathTest.cpp): at most 2 ulp for exp, log, sin and cos,
// 3 ulp for tan and tanh. pow is at most 2 ulp + |y log x| / 8 ulp (measured:
// 0.084 ulp per unit of |y log x|, so about 3 ulp for |y log x| < 10 and up to
// ~60 ulp for results near the ends of the double range, where the rounding
// of log's correction term is magnified by y). sin/cos/tan keep their
// accuracy for |x| < 2^20 pi/2 (about 1.6e6); beyond, the reduction loses
// about log2(|x|) - 20 bits of the result.
#pragma once

#include <cstddef>
#include <cstdint>

namespace eph::spirv::f64math {

// The constants the algorithms share.
inline constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 0x3FE62E42 FEE00000
inline constexpr double kLn2Lo = 1.90821492927058770002e-10;  // 0x3DEA39EF 35793C76
inline constexpr double kInvLn2 = 1.44269504088896338700e+00;
inline constexpr double kInvPio2 = 6.36619772367581382433e-01;
inline constexpr double kPio2_1 = 1.57079632673412561417e+00;  // first 33 bits of pi/2
inline constexpr double kPio2_2 = 6.07710050630396597660e-11;  // second 33 bits
inline constexpr double kPio2_3 = 2.02226624871116645580e-21;  // third 33 bits
inline constexpr double kPio2_3t = 8.47842766036889956997e-32; // pi/2 - (the three above)
inline constexpr double kInf = __builtin_inf();
inline constexpr double kNaN = __builtin_nan("");

// B supplies: types Num (a double), Cond (a bool) and Int (an int32);
// c(double); add/sub/mul/div; floor; lt/le/gt/eq; isnan; land/lor;
// sel(Cond, Num, Num); toInt(Num) for integral values in int32 range;
// toNum(Int); ihalf(Int) (arithmetic shift right by 1); isub(Int, Int);
// ldexp(Num, Int); frexp(Num, Num& mantissa, Int& exponent) with the
// mantissa in [0.5, 1) for positive normal inputs.
template <class B>
struct Algorithms {
  using Num = typename B::Num;
  using Cond = typename B::Cond;
  using Int = typename B::Int;
  B& b;

  Num c(double v) { return b.c(v); }
  Num add(Num x, Num y) { return b.add(x, y); }
  Num sub(Num x, Num y) { return b.sub(x, y); }
  Num mul(Num x, Num y) { return b.mul(x, y); }
  // Horner: coefficients from the highest power down.
  template <size_t N>
  Num poly(Num x, const double (&k)[N]) {
    Num r = c(k[0]);
    for (size_t i = 1; i < N; ++i) r = add(mul(r, x), c(k[i]));
    return r;
  }
  // x * 2^k for |k| up to about 2100, in two exact steps.
  Num scale(Num x, Int k) {
    Int k1 = b.ihalf(k);
    return b.ldexp(b.ldexp(x, k1), b.isub(k, k1));
  }
  // round(x / ln 2), clamped to [-2000, 2000] (NaN -> 2000) so it converts.
  Num reduceCount(Num x) {
    Num k = b.floor(add(mul(x, c(kInvLn2)), c(0.5)));
    return b.sel(b.lt(k, c(-2000)), c(-2000), b.sel(b.le(k, c(2000)), k, c(2000)));
  }
  // e^r - 1 on |r| <= ln2/2 + a little: sum of r^n/n!, n = 1..14.
  Num expm1Poly(Num r) {
    static constexpr double k[] = {1.0 / 87178291200.0, 1.0 / 6227020800.0, 1.0 / 479001600.0,
                                   1.0 / 39916800.0,    1.0 / 3628800.0,    1.0 / 362880.0,
                                   1.0 / 40320.0,       1.0 / 5040.0,       1.0 / 720.0,
                                   1.0 / 120.0,         1.0 / 24.0,         1.0 / 6.0,
                                   0.5,                 1.0};
    return mul(poly(r, k), r);
  }

  // exp(hi + lo), |lo| <= ulp(hi).
  Num expPair(Num hi, Num lo) {
    Num k = reduceCount(hi);
    Num r = add(sub(sub(hi, mul(k, c(kLn2Hi))), mul(k, c(kLn2Lo))), lo);
    Num p = add(expm1Poly(r), c(1.0));
    Num res = scale(p, b.toInt(k));
    res = b.sel(b.gt(hi, c(709.782712893384)), c(kInf), res);
    res = b.sel(b.lt(hi, c(-745.1332191019412)), c(0.0), res);
    return b.sel(b.isnan(hi), hi, res);
  }
  Num exp(Num x) { return expPair(x, c(0.0)); }

  // x = 2^e m, m in [sqrt(1/2), sqrt(2)), for positive finite x (subnormals too).
  void split(Num x, Num& m, Num& e) {
    Cond tiny = b.lt(x, c(2.2250738585072014e-308));
    Num xs = b.sel(tiny, mul(x, c(18014398509481984.0)), x);  // 2^54
    Int ei;
    b.frexp(xs, m, ei);
    Cond small = b.lt(m, c(0.70710678118654752440));
    m = b.sel(small, add(m, m), m);
    e = sub(sub(b.toNum(ei), b.sel(small, c(1.0), c(0.0))), b.sel(tiny, c(54.0), c(0.0)));
  }

  // fdlibm's R(z) for log(1+f), z = s^2.
  Num logR(Num z) {
    static constexpr double k[] = {1.479819860511658591e-01, 1.531383769920937332e-01,
                                   1.818357216161805012e-01, 2.222219843214978396e-01,
                                   2.857142874366239149e-01, 3.999999999940941908e-01,
                                   6.666666666666735130e-01};
    return mul(z, poly(z, k));
  }

  Num log(Num x) {
    Num m, e;
    split(x, m, e);
    Num f = sub(m, c(1.0));
    Num hfsq = mul(mul(c(0.5), f), f);
    Num s = b.div(f, add(c(2.0), f));
    Num R = logR(mul(s, s));
    Num res = sub(mul(e, c(kLn2Hi)), sub(sub(hfsq, add(mul(s, add(hfsq, R)), mul(e, c(kLn2Lo)))), f));
    res = b.sel(b.eq(x, c(kInf)), x, res);
    res = b.sel(b.eq(x, c(0.0)), c(-kInf), res);
    res = b.sel(b.lt(x, c(0.0)), c(kNaN), res);
    return b.sel(b.isnan(x), x, res);
  }

  // ---- double-double helpers (exact without FMA) ------------------------------
  void twoSum(Num x, Num y, Num& s, Num& err) {
    s = add(x, y);
    Num bb = sub(s, x);
    err = add(sub(x, sub(s, bb)), sub(y, bb));
  }
  void splitHalves(Num x, Num& hi, Num& lo) {
    Num t = mul(c(134217729.0), x);  // 2^27 + 1
    hi = sub(t, sub(t, x));
    lo = sub(x, hi);
  }
  void twoProd(Num x, Num y, Num& p, Num& err) {
    p = mul(x, y);
    Num xh, xl, yh, yl;
    splitHalves(x, xh, xl);
    splitHalves(y, yh, yl);
    err = add(add(add(sub(mul(xh, yh), p), mul(xh, yl)), mul(xl, yh)), mul(xl, yl));
  }

  // |x|^y for ax = |x| (sign and most special cases are the caller's).
  Num powAbs(Num ax, Num y) {
    Num m, e;
    split(ax, m, e);
    Num f = sub(m, c(1.0));
    Num ff, ffe;
    twoProd(f, f, ff, ffe);
    Num hfsq = mul(c(0.5), ff), hfsqLo = mul(c(0.5), ffe);
    Num s = b.div(f, add(c(2.0), f));
    Num R = logR(mul(s, s));
    Num corr = mul(s, add(hfsq, R));
    Num t1, t2;
    twoSum(f, mul(c(-1.0), hfsq), t1, t2);
    t2 = add(t2, sub(corr, hfsqLo));
    Num h, l;
    twoSum(mul(e, c(kLn2Hi)), t1, h, l);  // e ln2_hi is exact
    l = add(add(l, t2), mul(e, c(kLn2Lo)));
    Num hh = add(h, l);  // renormalize
    Num ll = sub(l, sub(hh, h));
    // y (hh + ll) as a pair.
    Num th, te;
    twoProd(y, hh, th, te);
    te = add(te, mul(y, ll));
    Num res = expPair(th, te);
    // Bases the reduction does not cover: 0 and inf.
    Cond yNeg = b.lt(y, c(0.0));
    res = b.sel(b.eq(ax, c(0.0)), b.sel(yNeg, c(kInf), c(0.0)), res);
    res = b.sel(b.eq(ax, c(kInf)), b.sel(yNeg, c(0.0), c(kInf)), res);
    // x^0 = 1 and 1^y = 1, whatever the other operand.
    return b.sel(b.lor(b.eq(y, c(0.0)), b.eq(ax, c(1.0))), c(1.0), res);
  }

  // x = k pi/2 + r; n = k mod 4 (as a double 0..3, NaN for inf/NaN x).
  void reducePio2(Num x, Num& r, Num& n) {
    Num k = b.floor(add(mul(x, c(kInvPio2)), c(0.5)));
    r = sub(sub(sub(sub(x, mul(k, c(kPio2_1))), mul(k, c(kPio2_2))), mul(k, c(kPio2_3))),
            mul(k, c(kPio2_3t)));
    n = sub(k, mul(c(4.0), b.floor(mul(k, c(0.25)))));
  }
  Num kernelSin(Num r) {
    static constexpr double k[] = {1.58969099521155010221e-10, -2.50507602534068634195e-08,
                                   2.75573137070700676789e-06, -1.98412698298579493134e-04,
                                   8.33333333332248946124e-03, -1.66666666666666324348e-01};
    Num z = mul(r, r);
    return add(r, mul(mul(z, r), poly(z, k)));
  }
  Num kernelCos(Num r) {
    static constexpr double k[] = {-1.13596475577881948265e-11, 2.08757232129817482790e-09,
                                   -2.75573143513906633035e-07, 2.48015872894767294178e-05,
                                   -1.38888888888741095749e-03, 4.16666666666666019037e-02};
    Num z = mul(r, r);
    Num hz = mul(c(0.5), z);
    Num w = sub(c(1.0), hz);
    return add(w, add(sub(sub(c(1.0), w), hz), mul(mul(z, z), poly(z, k))));
  }
  // Picks q0..q3 by the quadrant n; NaN n gives q0 (which is NaN then too).
  Num quadrant(Num n, Num q0, Num q1, Num q2, Num q3) {
    return b.sel(b.eq(n, c(1.0)), q1, b.sel(b.eq(n, c(2.0)), q2, b.sel(b.eq(n, c(3.0)), q3, q0)));
  }
  Num neg(Num x) { return mul(c(-1.0), x); }
  Num sin(Num x) {
    Num r, n;
    reducePio2(x, r, n);
    Num s = kernelSin(r), co = kernelCos(r);
    Num res = quadrant(n, s, co, neg(s), neg(co));
    return b.sel(b.eq(x, c(0.0)), x, res);  // keeps -0
  }
  Num cos(Num x) {
    Num r, n;
    reducePio2(x, r, n);
    Num s = kernelSin(r), co = kernelCos(r);
    return quadrant(n, co, neg(s), neg(co), s);
  }
  Num tan(Num x) {
    Num r, n;
    reducePio2(x, r, n);
    Num s = kernelSin(r), co = kernelCos(r);
    Num even = b.div(s, co), odd = neg(b.div(co, s));
    Num res = quadrant(n, even, odd, even, odd);
    return b.sel(b.eq(x, c(0.0)), x, res);
  }

  Num tanh(Num x) {
    Num ax = b.sel(b.lt(x, c(0.0)), neg(x), x);
    Num y = add(ax, ax);
    Num k = reduceCount(y);
    Num r = sub(sub(y, mul(k, c(kLn2Hi))), mul(k, c(kLn2Lo)));
    Num e = expm1Poly(r);
    Num twoK = b.ldexp(c(1.0), b.toInt(k));
    Num u = add(mul(twoK, e), sub(twoK, c(1.0)));  // expm1(2|x|)
    Num t = b.div(u, add(u, c(2.0)));
    t = b.sel(b.gt(ax, c(22.0)), c(1.0), t);
    Num res = b.sel(b.lt(x, c(0.0)), neg(t), t);
    res = b.sel(b.eq(x, c(0.0)), x, res);
    return b.sel(b.isnan(x), x, res);
  }
};

}  // namespace eph::spirv::f64math
