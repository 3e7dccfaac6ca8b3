// Scalar and elementwise ops: constants, arithmetic, comparisons, select,
// casts and math. Each lowering matches ir/interp/Scalar.cpp wherever the
// interpreter defines a result, and never leaves a case undefined in SPIR-V:
// integer division by zero (an interpreter error) divides by 1 instead,
// shift amounts are masked, float-to-int casts saturate explicitly, and the
// GLSL.std.450 functions get fix-ups at the points where GLSL leaves them
// undefined but C's libm (the interpreter) does not (log(0), sqrt(-1),
// pow with negative or zero bases, tanh of large values).
#include <cmath>
#include <limits>

#include "targets/spirv/Emitter.h"

namespace eph::spirv {

using spv::Op;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

Status Emitter::emitConst(const ir::Op& op) {
  const ir::Type* t = op.result(0)->type();
  const ir::Attr& v = *op.attr("value");
  Id c = 0;
  if (t->isBool()) c = b.constBool(v.b);
  else if (t->isInt()) c = b.constInt(valueType(t), uint64_t(v.i));
  else c = b.constFloat(valueType(t), v.kind == ir::Attr::Kind::Int ? double(v.i) : v.f);
  setId(op.result(0), c);
  return Status::ok();
}

Status Emitter::emitBinary(const ir::Op& op) {
  const ir::Type* t = op.result(0)->type();
  const ir::Type* s = t->scalar();
  Id T = valueType(t), x = id(op.operand(0)), y = id(op.operand(1));
  ir::OpId n = op.id();
  Id r = 0;
  if (s->isFloat()) {
    if (n == ir::OpId::Add) r = b.op(Op::OpFAdd, T, {x, y});
    else if (n == ir::OpId::Sub) r = b.op(Op::OpFSub, T, {x, y});
    else if (n == ir::OpId::Mul) r = b.op(Op::OpFMul, T, {x, y});
    else if (n == ir::OpId::Div) r = b.op(Op::OpFDiv, T, {x, y});
    else if (n == ir::OpId::Rem) r = b.op(Op::OpFRem, T, {x, y});  // sign of x, like fmod
    else if (n == ir::OpId::Min) r = b.glslOp(GLSLstd450NMin, T, {x, y});  // the non-NaN operand, like fmin
    else if (n == ir::OpId::Max) r = b.glslOp(GLSLstd450NMax, T, {x, y});
    else return error(op, "'" + std::string(op.name()) + "' is not defined on floats");
  } else if (s->isBool()) {
    if (n == ir::OpId::And || n == ir::OpId::Min) r = b.op(Op::OpLogicalAnd, T, {x, y});
    else if (n == ir::OpId::Or || n == ir::OpId::Max) r = b.op(Op::OpLogicalOr, T, {x, y});
    else if (n == ir::OpId::Xor) r = b.op(Op::OpLogicalNotEqual, T, {x, y});
    else return error(op, "'" + std::string(op.name()) + "' is not defined on bools");
  } else {
    bool sg = s->isSigned();
    unsigned bits = s->bits();
    if (n == ir::OpId::Add) r = b.op(Op::OpIAdd, T, {x, y});
    else if (n == ir::OpId::Sub) r = b.op(Op::OpISub, T, {x, y});
    else if (n == ir::OpId::Mul) r = b.op(Op::OpIMul, T, {x, y});
    else if (n == ir::OpId::And) r = b.op(Op::OpBitwiseAnd, T, {x, y});
    else if (n == ir::OpId::Or) r = b.op(Op::OpBitwiseOr, T, {x, y});
    else if (n == ir::OpId::Xor) r = b.op(Op::OpBitwiseXor, T, {x, y});
    else if (n == ir::OpId::Min) r = b.glslOp(sg ? GLSLstd450SMin : GLSLstd450UMin, T, {x, y});
    else if (n == ir::OpId::Max) r = b.glslOp(sg ? GLSLstd450SMax : GLSLstd450UMax, T, {x, y});
    else if (n == ir::OpId::Shl || n == ir::OpId::Shr) {
      // The amount is taken mod the width (SPIR-V leaves shifts >= width undefined).
      Id amount = b.op(Op::OpBitwiseAnd, T, {y, intConstLike(t, bits - 1)});
      Op sh = n == ir::OpId::Shl ? Op::OpShiftLeftLogical
              : sg       ? Op::OpShiftRightArithmetic
                         : Op::OpShiftRightLogical;
      r = b.op(sh, T, {x, amount});
    } else if (n == ir::OpId::Div || n == ir::OpId::Rem) {
      // Division by zero is an interpreter error and undefined in SPIR-V, as is
      // MIN / -1: both divide by 1 instead, which gives the interpreter's
      // wrapped MIN / -1 = MIN (remainder 0) and x / 0 = x (remainder 0).
      Id B = boolLike(t);
      Id bad = b.op(Op::OpIEqual, B, {y, intConstLike(t, 0)});
      if (sg) {
        Id isMin = b.op(Op::OpIEqual, B, {x, intConstLike(t, uint64_t(1) << (bits - 1))});
        Id minusOne = b.op(Op::OpIEqual, B, {y, intConstLike(t, ~uint64_t(0))});
        bad = b.op(Op::OpLogicalOr, B, {bad, b.op(Op::OpLogicalAnd, B, {isMin, minusOne})});
      }
      Id safe = b.op(Op::OpSelect, T, {bad, intConstLike(t, 1), y});
      if (n == ir::OpId::Div) {
        r = b.op(sg ? Op::OpSDiv : Op::OpUDiv, T, {x, safe});
      } else if (sg) {
        // x - (x / y) * y rather than OpSRem: NVIDIA's driver gives wrong
        // remainders for negative operands (seen on an H200, driver 580),
        // while truncating division is right everywhere.
        Id q = b.op(Op::OpSDiv, T, {x, safe});
        r = b.op(Op::OpISub, T, {x, b.op(Op::OpIMul, T, {q, safe})});
      } else {
        r = b.op(Op::OpUMod, T, {x, safe});
      }
    } else {
      return error(op, "'" + std::string(op.name()) + "' is not defined on integers");
    }
  }
  setId(op.result(0), r);
  return Status::ok();
}

Status Emitter::emitUnary(const ir::Op& op) {
  const ir::Type* t = op.result(0)->type();
  const ir::Type* s = t->scalar();
  Id T = valueType(t), x = id(op.operand(0));
  ir::OpId n = op.id();
  Id r = 0;
  if (n == ir::OpId::Not) {
    r = b.op(s->isBool() ? Op::OpLogicalNot : Op::OpNot, T, {x});
  } else if (n == ir::OpId::Neg) {
    r = b.op(s->isFloat() ? Op::OpFNegate : Op::OpSNegate, T, {x});
  } else if (s->isFloat()) {
    r = b.glslOp(GLSLstd450FAbs, T, {x});
  } else if (s->isSigned()) {
    // |MIN| wraps to MIN, as in the interpreter (0 - x in two's complement).
    Id neg = b.op(Op::OpSLessThan, boolLike(t), {x, intConstLike(t, 0)});
    r = b.op(Op::OpSelect, T, {neg, b.op(Op::OpSNegate, T, {x}), x});
  } else {
    r = x;
  }
  setId(op.result(0), r);
  return Status::ok();
}

Status Emitter::emitCompare(const ir::Op& op) {
  const ir::Type* t = op.operand(0)->type();
  const ir::Type* s = t->scalar();
  Id B = boolLike(t), x = id(op.operand(0)), y = id(op.operand(1));
  ir::OpId n = op.id();
  int k = n == ir::OpId::Eq ? 0 : n == ir::OpId::Ne ? 1 : n == ir::OpId::Lt ? 2 : n == ir::OpId::Le ? 3 : n == ir::OpId::Gt ? 4 : 5;
  static const Op kFloat[] = {Op::OpFOrdEqual, Op::OpFUnordNotEqual, Op::OpFOrdLessThan,
                              Op::OpFOrdLessThanEqual, Op::OpFOrdGreaterThan, Op::OpFOrdGreaterThanEqual};
  static const Op kSigned[] = {Op::OpIEqual, Op::OpINotEqual, Op::OpSLessThan,
                               Op::OpSLessThanEqual, Op::OpSGreaterThan, Op::OpSGreaterThanEqual};
  static const Op kUnsigned[] = {Op::OpIEqual, Op::OpINotEqual, Op::OpULessThan,
                                 Op::OpULessThanEqual, Op::OpUGreaterThan, Op::OpUGreaterThanEqual};
  Id r = 0;
  if (s->isFloat()) {
    r = b.op(kFloat[k], B, {x, y});
  } else if (s->isBool()) {
    if (k == 0) {
      r = b.op(Op::OpLogicalEqual, B, {x, y});
    } else if (k == 1) {
      r = b.op(Op::OpLogicalNotEqual, B, {x, y});
    } else {  // false < true, compared as 0 and 1
      Id U = t->isVector() ? b.typeVector(u32T(), t->count()) : u32T();
      Id one = b.splat(U, u32(1)), zero = b.splat(U, u32(0));
      Id xu = b.op(Op::OpSelect, U, {x, one, zero}), yu = b.op(Op::OpSelect, U, {y, one, zero});
      r = b.op(kUnsigned[k], B, {xu, yu});
    }
  } else {
    r = b.op(s->isSigned() ? kSigned[k] : kUnsigned[k], B, {x, y});
  }
  setId(op.result(0), r);
  return Status::ok();
}

Id Emitter::selectValue(const ir::Type* t, Id cond, Id x, Id y) {
  Id T = valueType(t);
  if (t->isScalar()) return b.op(Op::OpSelect, T, {cond, x, y});
  if (t->isVector()) {
    Id vc = b.op(Op::OpCompositeConstruct, boolLike(t), std::vector<uint32_t>(t->count(), cond));
    return b.op(Op::OpSelect, T, {vc, x, y});
  }
  if (b.version() >= kSpirv14) return b.op(Op::OpSelect, T, {cond, x, y});
  // Before SPIR-V 1.4, OpSelect takes only scalars and vectors: go member-wise.
  std::vector<const ir::Type*> members;
  if (t->isArray()) members.assign(t->count(), t->elem());
  else if (t->isSum()) {
    members.push_back(kernel.module()->context().u32());
    members.insert(members.end(), t->members().begin(), t->members().end());
  } else {
    members.assign(t->members().begin(), t->members().end());
  }
  std::vector<uint32_t> parts;
  for (unsigned i = 0; i < members.size(); ++i) {
    Id mt = valueType(members[i]);
    parts.push_back(selectValue(members[i], cond, b.op(Op::OpCompositeExtract, mt, {x, i}),
                                b.op(Op::OpCompositeExtract, mt, {y, i})));
  }
  return b.op(Op::OpCompositeConstruct, T, parts);
}

Status Emitter::emitSelect(const ir::Op& op) {
  const ir::Type* t = op.result(0)->type();
  if (t->isBuffer()) {
    if (get(op.operand(1)).buf != get(op.operand(2)).buf)
      return error(op, "selecting between different buffers at run time is not supported by the SPIR-V target");
    set(op.result(0), get(op.operand(1)));
    return Status::ok();
  }
  setId(op.result(0), selectValue(t, id(op.operand(0)), id(op.operand(1)), id(op.operand(2))));
  return Status::ok();
}

Status Emitter::emitCast(const ir::Op& op) {
  const ir::Type* from = op.operand(0)->type();
  const ir::Type* to = op.result(0)->type();
  const ir::Type* fs = from->scalar();
  const ir::Type* ts = to->scalar();
  Id T = valueType(to), x = id(op.operand(0));
  Id r = x;
  if (ts->isBool()) {
    if (fs->isInt()) r = b.op(Op::OpINotEqual, T, {x, intConstLike(from, 0)});
    else if (fs->isFloat()) r = b.op(Op::OpFUnordNotEqual, T, {x, constLike(from, 0.0)});  // NaN -> true
  } else if (fs->isBool()) {
    r = b.op(Op::OpSelect, T, {x, constLike(to, 1.0), constLike(to, 0.0)});
  } else if (ts->isInt() && fs->isInt()) {
    if (fs->bits() < ts->bits()) r = b.op(fs->isSigned() ? Op::OpSConvert : Op::OpUConvert, T, {x});
    else if (fs->bits() > ts->bits()) r = b.op(Op::OpUConvert, T, {x});  // truncates
  } else if (ts->isFloat() && fs->isInt()) {
    r = b.op(fs->isSigned() ? Op::OpConvertSToF : Op::OpConvertUToF, T, {x});
  } else if (ts->isFloat() && fs->isFloat()) {
    if (fs->bits() != ts->bits()) r = b.op(Op::OpFConvert, T, {x});
  } else {
    // Float to integer: truncate, saturate at the type's range, NaN -> 0. The
    // conversion itself only ever sees values that fit (SPIR-V leaves the
    // others undefined).
    Id B = boolLike(from);
    unsigned w = ts->bits();
    double lo = ts->isSigned() ? -std::ldexp(1.0, int(w) - 1) : 0.0;
    double hiExcl = std::ldexp(1.0, ts->isSigned() ? int(w) - 1 : int(w));
    Id loC = constLike(from, lo), hiC = constLike(from, hiExcl);
    Id inRange = b.op(Op::OpLogicalAnd, B, {b.op(Op::OpFOrdGreaterThan, B, {x, loC}),
                                            b.op(Op::OpFOrdLessThan, B, {x, hiC})});
    Id safe = b.op(Op::OpSelect, valueType(from), {inRange, x, constLike(from, 0.0)});
    Id conv = b.op(ts->isSigned() ? Op::OpConvertFToS : Op::OpConvertFToU, T, {safe});
    uint64_t maxBits = ts->isSigned() ? (uint64_t(1) << (w - 1)) - 1 : ~uint64_t(0);
    uint64_t minBits = ts->isSigned() ? uint64_t(1) << (w - 1) : 0;
    Id high = b.op(Op::OpSelect, T, {b.op(Op::OpFOrdGreaterThanEqual, B, {x, hiC}),
                                     intConstLike(to, maxBits), intConstLike(to, 0)});
    Id low = b.op(Op::OpSelect, T, {b.op(Op::OpFOrdLessThanEqual, B, {x, loC}),
                                    intConstLike(to, minBits), high});
    r = b.op(Op::OpSelect, T, {inRange, conv, low});
  }
  setId(op.result(0), r);
  return Status::ok();
}

Status Emitter::emitBitcast(const ir::Op& op) {
  Id T = valueType(op.result(0)->type()), x = id(op.operand(0));
  setId(op.result(0), T == valueType(op.operand(0)->type()) ? x : b.op(Op::OpBitcast, T, {x}));
  return Status::ok();
}

namespace {
// Whether the sign bit of a float (scalar or vector) is set; -0.0 included.
Id signBit(Emitter& e, const ir::Type* t, Id x) {
  unsigned w = t->scalar()->bits();
  ModuleBuilder& b = e.b;
  auto shaped = [&](Id scalar) { return t->isVector() ? b.typeVector(scalar, t->count()) : scalar; };
  if (w == 16) {  // 16-bit integers may be unavailable: widen to f32 first
    x = b.op(Op::OpFConvert, shaped(b.typeFloat(32)), {x});
    w = 32;
  }
  Id U = shaped(b.typeInt(w, false));
  Id bits = b.op(Op::OpBitcast, U, {x});
  Id one = b.splat(U, b.constInt(b.typeInt(w, false), 1));
  Id top = b.op(Op::OpShiftRightLogical, U, {bits, b.splat(U, b.constInt(b.typeInt(w, false), w - 1))});
  return b.op(Op::OpIEqual, e.boolLike(t), {top, one});
}
}  // namespace

Status Emitter::emitMath(const ir::Op& op) {
  const ir::Type* t = op.result(0)->type();
  Id T = valueType(t), B = boolLike(t), x = id(op.operand(0));
  ir::OpId n = op.id();
  bool f64 = t->scalar()->bits() == 64;
  Id zero = constLike(t, 0.0), nan = constLike(t, kNaN);
  Id r = 0;
  if (n == ir::OpId::Floor) {
    r = b.glslOp(GLSLstd450Floor, T, {x});
  } else if (n == ir::OpId::Ceil) {
    r = b.glslOp(GLSLstd450Ceil, T, {x});
  } else if (n == ir::OpId::Sqrt) {
    Id s = b.glslOp(GLSLstd450Sqrt, T, {x});
    r = b.op(Op::OpSelect, T, {b.op(Op::OpFOrdLessThan, B, {x, zero}), nan, s});
  } else if (n == ir::OpId::Rsqrt) {
    // 1/sqrt(x): NaN below zero, +-inf at +-0 (GLSL leaves x <= 0 undefined).
    Id s = b.glslOp(GLSLstd450InverseSqrt, T, {x});
    Id inf = b.op(Op::OpSelect, T, {signBit(*this, t, x), constLike(t, -kInf), constLike(t, kInf)});
    r = b.op(Op::OpSelect, T, {b.op(Op::OpFOrdLessThan, B, {x, zero}), nan, s});
    r = b.op(Op::OpSelect, T, {b.op(Op::OpFOrdEqual, B, {x, zero}), inf, r});
  } else if (f64) {
    Id (Emitter::*fn)(Id) = n == ir::OpId::Exp   ? &Emitter::f64Exp
                            : n == ir::OpId::Log ? &Emitter::f64Log
                            : n == ir::OpId::Sin ? &Emitter::f64Sin
                            : n == ir::OpId::Cos ? &Emitter::f64Cos
                            : n == ir::OpId::Tan ? &Emitter::f64Tan
                                         : &Emitter::f64Tanh;
    r = perElement(t, x, [&](Id e) { return (this->*fn)(e); });
  } else if (n == ir::OpId::Exp) {
    r = b.glslOp(GLSLstd450Exp, T, {x});
  } else if (n == ir::OpId::Log) {
    Id l = b.glslOp(GLSLstd450Log, T, {x});
    r = b.op(Op::OpSelect, T, {b.op(Op::OpFOrdLessThan, B, {x, zero}), nan, l});
    r = b.op(Op::OpSelect, T, {b.op(Op::OpFOrdEqual, B, {x, zero}), constLike(t, -kInf), r});
  } else if (n == ir::OpId::Sin) {
    r = b.glslOp(GLSLstd450Sin, T, {x});
  } else if (n == ir::OpId::Cos) {
    r = b.glslOp(GLSLstd450Cos, T, {x});
  } else if (n == ir::OpId::Tan) {
    r = b.glslOp(GLSLstd450Tan, T, {x});
  } else {  // tanh: exp-based GLSL implementations give inf/inf = NaN for large |x|
    Id c = b.glslOp(GLSLstd450NMax, T, {x, constLike(t, -10.0)});
    c = b.glslOp(GLSLstd450NMin, T, {c, constLike(t, 10.0)});  // tanh(10) rounds to 1 in f32
    Id th = b.glslOp(GLSLstd450Tanh, T, {c});
    r = b.op(Op::OpSelect, T, {b.op(Op::OpIsNan, B, {x}), x, th});
  }
  setId(op.result(0), r);
  return Status::ok();
}

// pow(x, y) with C's special cases (the interpreter uses std::pow): the core
// is |x|^y (GLSL Pow, or our f64 lowering), then the sign for negative bases
// with odd integer exponents, NaN for negative finite bases with non-integer
// exponents, zero bases, pow(x, 0) = 1 and pow(1, y) = 1 (even for NaN), and
// pow(-1, +-inf) = 1.
Status Emitter::emitPow(const ir::Op& op) {
  const ir::Type* t = op.result(0)->type();
  Id T = valueType(t), B = boolLike(t), x = id(op.operand(0)), y = id(op.operand(1));
  auto fop = [&](Op o, std::vector<uint32_t> a) { return b.op(o, B, a); };
  auto sel = [&](Id c, Id a, Id z) { return b.op(Op::OpSelect, T, {c, a, z}); };
  auto land = [&](Id p, Id q) { return b.op(Op::OpLogicalAnd, B, {p, q}); };
  auto lor = [&](Id p, Id q) { return b.op(Op::OpLogicalOr, B, {p, q}); };
  Id zero = constLike(t, 0.0), one = constLike(t, 1.0), inf = constLike(t, kInf),
     nan = constLike(t, kNaN), half = constLike(t, 0.5);
  Id ax = b.glslOp(GLSLstd450FAbs, T, {x});
  Id core = t->scalar()->bits() == 64
                ? perElement2(t, ax, y, [&](Id a, Id c) { return f64PowAbs(a, c); })
                : b.glslOp(GLSLstd450Pow, T, {ax, y});
  Id yNeg = fop(Op::OpFOrdLessThan, {y, zero});
  Id yInt = fop(Op::OpFOrdEqual, {b.glslOp(GLSLstd450Floor, T, {y}), y});
  Id yh = b.op(Op::OpFMul, T, {y, half});
  Id yOdd = land(yInt, fop(Op::OpFOrdNotEqual, {b.glslOp(GLSLstd450Floor, T, {yh}), yh}));
  Id negCore = b.op(Op::OpFNegate, T, {core});
  // Negative bases (not -0): sign from the exponent's parity; non-integer
  // exponents give NaN for finite bases.
  Id xNeg = fop(Op::OpFOrdLessThan, {x, zero});
  Id negResult = sel(yInt, sel(yOdd, negCore, core), sel(fop(Op::OpIsInf, {x}), core, nan));
  Id r = sel(xNeg, negResult, core);
  // Zero bases: +-0^y = +-0 (odd y > 0), +0 (other y > 0), +-inf (odd y < 0), +inf (other y < 0).
  Id xZero = fop(Op::OpFOrdEqual, {x, zero});
  Id signedInf = sel(signBit(*this, t, x), b.op(Op::OpFNegate, T, {inf}), inf);
  Id zeroResult = sel(yNeg, sel(yOdd, signedInf, inf), sel(yOdd, x, zero));
  r = sel(xZero, zeroResult, r);
  // NaN in, NaN out, except for the two cases that follow.
  r = sel(lor(fop(Op::OpIsNan, {x}), fop(Op::OpIsNan, {y})), nan, r);
  // |x| = 1 with an infinite exponent is 1; so are x = 1 and y = 0 always.
  r = sel(land(fop(Op::OpFOrdEqual, {ax, one}), fop(Op::OpIsInf, {y})), one, r);
  r = sel(lor(fop(Op::OpFOrdEqual, {x, one}), fop(Op::OpFOrdEqual, {y, zero})), one, r);
  setId(op.result(0), r);
  return Status::ok();
}

void Emitter::addArithEmitters(EmitTable& t) {
  using enum ir::OpId;
  t[Const] = &Emitter::emitConst;
  for (ir::OpId n : {Add, Sub, Mul, Div, Rem, Min, Max, And, Or, Xor, Shl, Shr})
    t[n] = &Emitter::emitBinary;
  for (ir::OpId n : {Neg, Abs, Not}) t[n] = &Emitter::emitUnary;
  for (ir::OpId n : {Eq, Ne, Lt, Le, Gt, Ge}) t[n] = &Emitter::emitCompare;
  t[Select] = &Emitter::emitSelect;
  t[Cast] = &Emitter::emitCast;
  t[Bitcast] = &Emitter::emitBitcast;
  for (ir::OpId n : {Sqrt, Rsqrt, Exp, Log, Sin, Cos, Tan, Tanh, Floor, Ceil})
    t[n] = &Emitter::emitMath;
  t[Pow] = &Emitter::emitPow;
  addMathEmitters(t);
}

}  // namespace eph::spirv
