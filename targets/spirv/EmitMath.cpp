// The math functions added for the next frontends (issue 11): asin acos atan
// atan2 sinh cosh asinh acosh atanh erf exp2 log2 log1p expm1, round trunc
// sign copysign fma. Results follow C's libm (the interpreter) at the special
// values, where GLSL.std.450 leaves them undefined.
//
// - f64: the transcendental functions are our own (Float64Math.h, within
//   4 ulp of glibc, tested on the device by SpirvMathVulkan in SpirvMathTest.cpp), since
//   GLSL.std.450 defines them only for 16- and 32-bit floats.
// - f32: asin, acos, atan and atan2 by the f64 algorithms run in f32 (Vulkan
//   lets GLSL's be 4096 ulp off; lavapipe's are 1e-4 off); GLSL.std.450 for
//   exp2 and log2, with fix-ups for the special values; series near 0 and
//   identities elsewhere where GLSL's own formulas lose accuracy (log1p,
//   expm1, sinh near 0, asinh/acosh/atanh, the overflow edge of sinh/cosh)
//   or do not exist (erf, log1p, expm1).
// - f16: computed in f32 and rounded once.
// - round is trunc plus one away from zero when the fraction is >= 1/2 (GLSL's
//   Round leaves the direction of halves to the device); sign is -1, +1, or x
//   for +-0 and NaN; copysign works on the sign bit; fma is our own fused
//   one (GLSL's Fma may round the product first, and lavapipe's does).
#include <cmath>
#include <limits>

#include "targets/spirv/Emitter.h"

namespace eph::spirv {

using spv::Op;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kLn2 = 0.69314718055994530942;

// f32 expressions on values of type t (f32 or a vector of f32).
struct F32Math {
  Emitter& e;
  ModuleBuilder& b;
  const ir::Type* t;
  Id T, B;
  F32Math(Emitter& em, const ir::Type* ty) : e(em), b(em.b), t(ty), T(em.valueType(ty)), B(em.boolLike(ty)) {}

  Id c(double v) { return e.constLike(t, v); }
  Id add(Id x, Id y) { return b.op(Op::OpFAdd, T, {x, y}); }
  Id sub(Id x, Id y) { return b.op(Op::OpFSub, T, {x, y}); }
  Id mul(Id x, Id y) { return b.op(Op::OpFMul, T, {x, y}); }
  Id div(Id x, Id y) { return b.op(Op::OpFDiv, T, {x, y}); }
  Id neg(Id x) { return b.op(Op::OpFNegate, T, {x}); }
  Id glsl(GLSLstd450 f, Id x) { return b.glslOp(f, T, {x}); }
  Id abs(Id x) { return glsl(GLSLstd450FAbs, x); }
  Id lt(Id x, Id y) { return b.op(Op::OpFOrdLessThan, B, {x, y}); }
  Id gt(Id x, Id y) { return b.op(Op::OpFOrdGreaterThan, B, {x, y}); }
  Id eq(Id x, Id y) { return b.op(Op::OpFOrdEqual, B, {x, y}); }
  Id isnan(Id x) { return b.op(Op::OpIsNan, B, {x}); }
  Id lor(Id p, Id q) { return b.op(Op::OpLogicalOr, B, {p, q}); }
  Id sel(Id p, Id x, Id y) { return b.op(Op::OpSelect, T, {p, x, y}); }
  template <size_t N>
  Id poly(Id x, const double (&k)[N]) {  // Horner, highest power first
    Id r = c(k[0]);
    for (size_t i = 1; i < N; ++i) r = add(mul(r, x), c(k[i]));
    return r;
  }
  // The sign of x on a magnitude m >= 0; zeros and NaNs of x pass through.
  Id withSign(Id m, Id x) {
    Id r = sel(lt(x, c(0.0)), neg(m), m);
    return sel(lor(eq(x, c(0.0)), isnan(x)), x, r);
  }
  // log for x > 0 (GLSL), 0 -> -inf, below 0 -> NaN, inf -> inf.
  Id log(Id x) {
    Id r = glsl(GLSLstd450Log, x);
    r = sel(eq(x, c(kInf)), x, r);
    r = sel(eq(x, c(0.0)), c(-kInf), r);
    return sel(lt(x, c(0.0)), c(kNaN), r);
  }
  Id log1p(Id x) {
    // |x| < 1/4: 2 atanh(s) = 2 (s + s^3/3 + ... + s^11/11), s = x / (2 + x), |s| < 1/7.
    static constexpr double k[] = {2.0 / 11, 2.0 / 9, 2.0 / 7, 2.0 / 5, 2.0 / 3, 2.0};
    Id s = div(x, add(c(2.0), x));
    Id series = mul(s, poly(mul(s, s), k));
    Id r = sel(lt(abs(x), c(0.25)), series, log(add(c(1.0), x)));
    r = sel(eq(x, c(-1.0)), c(-kInf), r);
    r = sel(lt(x, c(-1.0)), c(kNaN), r);
    r = sel(eq(x, c(kInf)), x, r);
    return sel(lor(eq(x, c(0.0)), isnan(x)), x, r);
  }
  Id exp(Id x) { return glsl(GLSLstd450Exp, x); }
  Id expm1(Id x) {
    // |x| < 1/2: x (1 + x/2 + ... + x^9/10!); beyond, exp(x) - 1 (no cancellation).
    static constexpr double k[] = {1.0 / 3628800, 1.0 / 362880, 1.0 / 40320, 1.0 / 5040, 1.0 / 720,
                                   1.0 / 120,     1.0 / 24,     1.0 / 6,     0.5,        1.0};
    Id r = sel(lt(abs(x), c(0.5)), mul(x, poly(x, k)), sub(exp(x), c(1.0)));
    r = sel(gt(x, c(88.8)), c(kInf), r);
    r = sel(lt(x, c(-30.0)), c(-1.0), r);
    return sel(lor(eq(x, c(0.0)), isnan(x)), x, r);
  }
  // e^|x| / 2 (not overflowing before the result does).
  Id halfExp(Id ax) { return exp(sub(ax, c(kLn2))); }
  Id sinh(Id x) {
    Id ax = abs(x);
    // |x| < 1: x (1 + x^2/6 + ... + x^10/11!).
    static constexpr double k[] = {1.0 / 39916800, 1.0 / 362880, 1.0 / 5040, 1.0 / 120, 1.0 / 6, 1.0};
    Id series = mul(ax, poly(mul(ax, ax), k));
    Id h = halfExp(ax);
    Id r = sel(lt(ax, c(1.0)), series, sub(h, div(c(0.25), h)));
    return withSign(r, x);
  }
  Id cosh(Id x) {
    Id h = halfExp(abs(x));
    return sel(isnan(x), x, add(h, div(c(0.25), h)));
  }
  Id asinh(Id x) {
    Id ax = abs(x);
    Id t = mul(ax, ax);
    Id mid = log1p(add(ax, div(t, add(c(1.0), glsl(GLSLstd450Sqrt, add(c(1.0), t))))));
    Id r = sel(gt(ax, c(4096.0)), add(log(ax), c(kLn2)), mid);
    return withSign(r, x);
  }
  Id acosh(Id x) {
    Id t = sub(x, c(1.0));
    Id mid = log1p(add(t, glsl(GLSLstd450Sqrt, add(add(t, t), mul(t, t)))));
    Id r = sel(gt(x, c(4096.0)), add(log(x), c(kLn2)), mid);
    r = sel(lt(x, c(1.0)), c(kNaN), r);
    return sel(isnan(x), x, r);
  }
  Id atanh(Id x) {
    Id ax = abs(x);
    Id r = mul(c(0.5), log1p(div(add(ax, ax), sub(c(1.0), ax))));
    r = sel(gt(ax, c(1.0)), c(kNaN), r);
    return withSign(r, x);
  }
  Id erf(Id x) {
    Id ax = abs(x);
    // |x| < 1/2: (2 / sqrt(pi)) sum (-1)^n x^(2n+1) / (n! (2n+1)), n <= 7.
    static constexpr double k[] = {-1.0 / 75600, 1.0 / 9360, -1.0 / 1320, 1.0 / 216,
                                   -1.0 / 42,    1.0 / 10,   -1.0 / 3,    1.0};
    Id series = mul(mul(c(1.1283791670955126), ax), poly(mul(ax, ax), k));
    // Beyond: Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7.
    static constexpr double a[] = {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592, 0.0};
    Id tt = div(c(1.0), add(c(1.0), mul(c(0.3275911), ax)));
    Id tail = sub(c(1.0), mul(poly(tt, a), exp(neg(mul(ax, ax)))));
    Id r = sel(lt(ax, c(0.5)), series, tail);
    r = sel(eq(ax, c(kInf)), c(1.0), r);
    return withSign(r, x);
  }
  Id exp2(Id x) { return sel(isnan(x), x, glsl(GLSLstd450Exp2, x)); }
  Id log2(Id x) {
    // Subnormals scaled up by 2^24 first (lavapipe's Log2 misreads them).
    Id tiny = lt(abs(x), c(0x1p-126));
    Id r = glsl(GLSLstd450Log2, sel(tiny, mul(x, c(0x1p24)), x));
    r = sel(tiny, sub(r, c(24.0)), r);
    r = sel(eq(x, c(kInf)), x, r);
    r = sel(eq(x, c(0.0)), c(-kInf), r);
    r = sel(lt(x, c(0.0)), c(kNaN), r);
    return sel(isnan(x), x, r);
  }
  Id unary(ir::OpId n, Id x) {
    if (n == ir::OpId::Asin || n == ir::OpId::Acos || n == ir::OpId::Atan)
      return e.perElement(t, x, [&](Id v) { return e.f32Math(n, v); });
    if (n == ir::OpId::Sinh) return sinh(x);
    if (n == ir::OpId::Cosh) return cosh(x);
    if (n == ir::OpId::Asinh) return asinh(x);
    if (n == ir::OpId::Acosh) return acosh(x);
    if (n == ir::OpId::Atanh) return atanh(x);
    if (n == ir::OpId::Erf) return erf(x);
    if (n == ir::OpId::Exp2) return exp2(x);
    if (n == ir::OpId::Log2) return log2(x);
    if (n == ir::OpId::Log1p) return log1p(x);
    return expm1(x);
  }
};

// The f32 type shaped like t (for f16 math done in f32).
const ir::Type* f32Like(const Emitter& e, const ir::Type* t) {
  ir::Context& ctx = e.kernel.module()->context();
  return t->isVector() ? ctx.vectorType(ctx.f32(), t->count()) : ctx.f32();
}

}  // namespace

Id Emitter::signBitOf(const ir::Type* t, Id x) {
  unsigned w = t->scalar()->bits();
  if (w == 64) {  // the high word of each element (no 64-bit integers needed)
    Id U2 = b.typeVector(u32T(), 2);
    Id B = boolT();
    auto one = [&](Id e) {
      Id hi = b.op(Op::OpCompositeExtract, u32T(), {b.op(Op::OpBitcast, U2, {e}), 1});
      return b.op(Op::OpINotEqual, B, {b.op(Op::OpShiftRightLogical, u32T(), {hi, u32(31)}), u32(0)});
    };
    if (!t->isVector()) return one(x);
    std::vector<uint32_t> parts;
    for (unsigned i = 0; i < t->count(); ++i)
      parts.push_back(one(b.op(Op::OpCompositeExtract, valueType(t->elem()), {x, i})));
    return b.op(Op::OpCompositeConstruct, boolLike(t), parts);
  }
  if (w == 16) {  // 16-bit integers may be unavailable: widen to f32 first
    const ir::Type* t32 = f32Like(*this, t);
    x = b.op(Op::OpFConvert, valueType(t32), {x});
    t = t32;
  }
  Id U = t->isVector() ? b.typeVector(u32T(), t->count()) : u32T();
  Id bits = b.op(Op::OpBitcast, U, {x});
  Id top = b.op(Op::OpShiftRightLogical, U, {bits, b.splat(U, u32(31))});
  return b.op(Op::OpINotEqual, boolLike(t), {top, b.splat(U, u32(0))});
}

Status Emitter::emitMathFunction(const ir::Op& op) {
  const ir::Type* t = op.result(0)->type();
  Id T = valueType(t), x = id(op.operand(0));
  ir::OpId n = op.id();
  unsigned bits = t->scalar()->bits();
  Id r = 0;
  if (n == ir::OpId::Trunc) {
    r = b.glslOp(GLSLstd450Trunc, T, {x});
  } else if (n == ir::OpId::Round) {
    Id B = boolLike(t);
    Id tr = b.glslOp(GLSLstd450Trunc, T, {x});
    Id frac = b.glslOp(GLSLstd450FAbs, T, {b.op(Op::OpFSub, T, {x, tr})});  // exact
    Id away = b.op(Op::OpSelect, T, {b.op(Op::OpFOrdLessThan, B, {x, constLike(t, 0.0)}), constLike(t, -1.0),
                                     constLike(t, 1.0)});
    Id up = b.op(Op::OpFOrdGreaterThanEqual, B, {frac, constLike(t, 0.5)});
    r = b.op(Op::OpSelect, T, {up, b.op(Op::OpFAdd, T, {tr, away}), tr});
  } else if (n == ir::OpId::Sign) {
    Id B = boolLike(t);
    r = b.op(Op::OpSelect, T, {b.op(Op::OpFOrdLessThan, B, {x, constLike(t, 0.0)}), constLike(t, -1.0), x});
    r = b.op(Op::OpSelect, T, {b.op(Op::OpFOrdGreaterThan, B, {x, constLike(t, 0.0)}), constLike(t, 1.0), r});
  } else if (bits == 64) {
    r = perElement(t, x, [&](Id e) { return f64Math(n, e); });
  } else if (bits == 32) {
    r = F32Math(*this, t).unary(n, x);
  } else {
    const ir::Type* t32 = f32Like(*this, t);
    Id wide = b.op(Op::OpFConvert, valueType(t32), {x});
    r = b.op(Op::OpFConvert, T, {F32Math(*this, t32).unary(n, wide)});
  }
  setId(op.result(0), r);
  return Status::ok();
}

Status Emitter::emitAtan2(const ir::Op& op) {
  const ir::Type* t = op.result(0)->type();
  Id T = valueType(t), y = id(op.operand(0)), x = id(op.operand(1));
  unsigned bits = t->scalar()->bits();
  Id r = 0;
  if (bits == 64) {
    r = perElement2(t, y, x, [&](Id a, Id c) { return f64Atan2(a, c); });
  } else if (bits == 32) {
    r = perElement2(t, y, x, [&](Id a, Id c) { return f32Atan2(a, c); });
  } else {
    const ir::Type* t32 = f32Like(*this, t);
    Id T32 = valueType(t32);
    Id y32 = b.op(Op::OpFConvert, T32, {y}), x32 = b.op(Op::OpFConvert, T32, {x});
    r = b.op(Op::OpFConvert, T, {perElement2(t32, y32, x32, [&](Id a, Id c) { return f32Atan2(a, c); })});
  }
  setId(op.result(0), r);
  return Status::ok();
}

Status Emitter::emitCopysign(const ir::Op& op) {
  const ir::Type* t = op.result(0)->type();
  Id T = valueType(t), x = id(op.operand(0)), y = id(op.operand(1));
  Id r = 0;
  if (t->scalar()->bits() == 32) {  // on the bits: |x| | (sign bit of y)
    Id U = t->isVector() ? b.typeVector(u32T(), t->count()) : u32T();
    Id xb = b.op(Op::OpBitwiseAnd, U, {b.op(Op::OpBitcast, U, {x}), b.splat(U, u32(0x7fffffffu))});
    Id yb = b.op(Op::OpBitwiseAnd, U, {b.op(Op::OpBitcast, U, {y}), b.splat(U, u32(0x80000000u))});
    r = b.op(Op::OpBitcast, T, {b.op(Op::OpBitwiseOr, U, {xb, yb})});
  } else {
    Id ax = b.glslOp(GLSLstd450FAbs, T, {x});
    r = b.op(Op::OpSelect, T, {signBitOf(t, y), b.op(Op::OpFNegate, T, {ax}), ax});
  }
  setId(op.result(0), r);
  return Status::ok();
}

// Fused on every device: GLSL's Fma may round the product first (lavapipe
// does), so f32 and f64 take an exact product and sum (Float64Math.h), and
// f16 is one f32 fma (the f16 product is exact in f32) rounded to f16.
Status Emitter::emitFma(const ir::Op& op) {
  const ir::Type* t = op.result(0)->type();
  Id T = valueType(t), a = id(op.operand(0)), x = id(op.operand(1)), y = id(op.operand(2));
  unsigned bits = t->scalar()->bits();
  auto fused = [&](const ir::Type* ty, unsigned w, Id p, Id q, Id s) {
    if (!ty->isVector()) return fmaScalar(w, p, q, s);
    Id et = valueType(ty->elem());
    std::vector<uint32_t> parts;
    for (unsigned i = 0; i < ty->count(); ++i)
      parts.push_back(fmaScalar(w, b.op(Op::OpCompositeExtract, et, {p, i}), b.op(Op::OpCompositeExtract, et, {q, i}),
                                b.op(Op::OpCompositeExtract, et, {s, i})));
    return b.op(Op::OpCompositeConstruct, valueType(ty), parts);
  };
  Id r = 0;
  if (bits != 16) {
    r = fused(t, bits, a, x, y);
  } else {
    const ir::Type* t32 = f32Like(*this, t);
    Id T32 = valueType(t32);
    r = b.op(Op::OpFConvert, T, {b.op(Op::OpFAdd, T32, {b.op(Op::OpFMul, T32, {b.op(Op::OpFConvert, T32, {a}),
                                                                              b.op(Op::OpFConvert, T32, {x})}),
                                                       b.op(Op::OpFConvert, T32, {y})})});
  }
  setId(op.result(0), r);
  return Status::ok();
}

void Emitter::addMathEmitters(EmitTable& t) {
  using enum ir::OpId;
  for (ir::OpId n : {Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Erf, Exp2,
                     Log2, Log1p, Expm1, Round, Trunc, Sign})
    t[n] = &Emitter::emitMathFunction;
  t[Atan2] = &Emitter::emitAtan2;
  t[Copysign] = &Emitter::emitCopysign;
  t[Fma] = &Emitter::emitFma;
}

}  // namespace eph::spirv
