// The SPIR-V backend of Float64Math.h: each step of the shared algorithms
// becomes one instruction. Float arithmetic is decorated NoContraction, so a
// driver may not fuse a*b+c (the Dekker products in pow rely on separate
// roundings).
#include "targets/spirv/Float64Math.h"

#include "targets/spirv/Emitter.h"

namespace eph::spirv {

using spv::Op;

namespace {

struct SpirvBackend {
  using Num = Id;
  using Cond = Id;
  using Int = Id;
  ModuleBuilder& b;
  Id F, B, I;

  explicit SpirvBackend(ModuleBuilder& mb, unsigned width = 64)
      : b(mb), F(mb.typeFloat(width)), B(mb.typeBool()), I(mb.typeInt(32, true)) {}

  Id exact(Op o, Id x, Id y) {
    Id r = b.op(o, F, {x, y});
    b.decorate(r, spv::Decoration::NoContraction);
    return r;
  }
  Num c(double v) { return b.constFloat(F, v); }
  Num add(Num x, Num y) { return exact(Op::OpFAdd, x, y); }
  Num sub(Num x, Num y) { return exact(Op::OpFSub, x, y); }
  Num mul(Num x, Num y) { return exact(Op::OpFMul, x, y); }
  Num div(Num x, Num y) { return exact(Op::OpFDiv, x, y); }
  Num floor(Num x) { return b.glslOp(GLSLstd450Floor, F, {x}); }
  Num sqrt(Num x) { return b.glslOp(GLSLstd450Sqrt, F, {x}); }
  Cond lt(Num x, Num y) { return b.op(Op::OpFOrdLessThan, B, {x, y}); }
  Cond le(Num x, Num y) { return b.op(Op::OpFOrdLessThanEqual, B, {x, y}); }
  Cond gt(Num x, Num y) { return b.op(Op::OpFOrdGreaterThan, B, {x, y}); }
  Cond eq(Num x, Num y) { return b.op(Op::OpFOrdEqual, B, {x, y}); }
  Cond isnan(Num x) { return b.op(Op::OpIsNan, B, {x}); }
  Cond land(Cond x, Cond y) { return b.op(Op::OpLogicalAnd, B, {x, y}); }
  Cond lor(Cond x, Cond y) { return b.op(Op::OpLogicalOr, B, {x, y}); }
  Num sel(Cond p, Num x, Num y) { return b.op(Op::OpSelect, F, {p, x, y}); }
  Int toInt(Num x) { return b.op(Op::OpConvertFToS, I, {x}); }
  Num toNum(Int x) { return b.op(Op::OpConvertSToF, F, {x}); }
  Int ihalf(Int x) { return b.op(Op::OpShiftRightArithmetic, I, {x, b.constInt(I, 1)}); }
  Int isub(Int x, Int y) { return b.op(Op::OpISub, I, {x, y}); }
  Num ldexp(Num x, Int k) { return b.glslOp(GLSLstd450Ldexp, F, {x, k}); }
  void frexp(Num x, Num& m, Int& e) {
    Id st = b.typeStruct({F, I});
    Id pair = b.glslOp(GLSLstd450FrexpStruct, st, {x});
    m = b.op(Op::OpCompositeExtract, F, {pair, 0});
    e = b.op(Op::OpCompositeExtract, I, {pair, 1});
  }
};

}  // namespace

Id Emitter::f64Exp(Id x) {
  SpirvBackend be(b);
  return f64math::Algorithms<SpirvBackend>{be}.exp(x);
}
Id Emitter::f64Log(Id x) {
  SpirvBackend be(b);
  return f64math::Algorithms<SpirvBackend>{be}.log(x);
}
Id Emitter::f64Sin(Id x) {
  SpirvBackend be(b);
  return f64math::Algorithms<SpirvBackend>{be}.sin(x);
}
Id Emitter::f64Cos(Id x) {
  SpirvBackend be(b);
  return f64math::Algorithms<SpirvBackend>{be}.cos(x);
}
Id Emitter::f64Tan(Id x) {
  SpirvBackend be(b);
  return f64math::Algorithms<SpirvBackend>{be}.tan(x);
}
Id Emitter::f64Tanh(Id x) {
  SpirvBackend be(b);
  return f64math::Algorithms<SpirvBackend>{be}.tanh(x);
}
Id Emitter::f64Math(ir::OpId name, Id x) {
  SpirvBackend be(b);
  f64math::Algorithms<SpirvBackend> a{be};
  if (name == ir::OpId::Asin) return a.asin(x);
  if (name == ir::OpId::Acos) return a.acos(x);
  if (name == ir::OpId::Atan) return a.atan(x);
  if (name == ir::OpId::Sinh) return a.sinh(x);
  if (name == ir::OpId::Cosh) return a.cosh(x);
  if (name == ir::OpId::Asinh) return a.asinh(x);
  if (name == ir::OpId::Acosh) return a.acosh(x);
  if (name == ir::OpId::Atanh) return a.atanh(x);
  if (name == ir::OpId::Erf) return a.erf(x);
  if (name == ir::OpId::Exp2) return a.exp2(x);
  if (name == ir::OpId::Log2) return a.log2(x);
  if (name == ir::OpId::Log1p) return a.log1p(x);
  return a.expm1(x);
}
Id Emitter::f32Math(ir::OpId name, Id x) {
  SpirvBackend be(b, 32);
  f64math::Algorithms<SpirvBackend> a{be, 4097.0};
  if (name == ir::OpId::Asin) return a.asin(x);
  if (name == ir::OpId::Acos) return a.acos(x);
  return a.atan(x);
}
Id Emitter::f32Atan2(Id y, Id x) {
  SpirvBackend be(b, 32);
  return f64math::Algorithms<SpirvBackend>{be, 4097.0}.atan2(y, x);
}
Id Emitter::fmaScalar(unsigned width, Id a, Id x, Id y) {
  SpirvBackend be(b, width);
  if (width == 32) return f64math::Algorithms<SpirvBackend>{be, 4097.0}.fma(a, x, y, 0x1p114);
  return f64math::Algorithms<SpirvBackend>{be}.fma(a, x, y, 0x1p996);
}
Id Emitter::f64Atan2(Id y, Id x) {
  SpirvBackend be(b);
  return f64math::Algorithms<SpirvBackend>{be}.atan2(y, x);
}
Id Emitter::f64PowAbs(Id ax, Id y) {
  SpirvBackend be(b);
  return f64math::Algorithms<SpirvBackend>{be}.powAbs(ax, y);
}

}  // namespace eph::spirv
