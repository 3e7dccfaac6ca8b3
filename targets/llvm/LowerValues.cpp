// Lowering of pure value ops: constants, integer and float arithmetic,
// comparisons, casts, math functions, vectors, structs, sums and arrays.
// Each rule mirrors ir/interp/Scalar.cpp and ir/interp/Elementwise.cpp.
#include <llvm/IR/Intrinsics.h>

#include <cmath>

#include "ir/OpTable.h"
#include "targets/llvm/Emitter.h"

namespace eph::llvmtarget {
llvm::Value* FunctionEmitter::constant(const ir::Op& op) {
  const ir::Type* t = op.result(0)->type();
  const ir::Attr* a = op.attr("value");
  llvm::Type* lt = M.valueType(t);
  if (t->isBool()) return b.getInt1(a->b);
  if (t->isInt()) return llvm::ConstantInt::get(lt, uint64_t(a->i), t->isSigned());
  double v = a->kind == ir::Attr::Kind::Int ? double(a->i) : a->f;
  return llvm::ConstantFP::get(lt, v);
}

// Math the interpreter computes in double: widen, call the C library function
// named as the op (rsqrt: 1 / sqrt), round once to the type (per lane for
// vectors).
llvm::Value* FunctionEmitter::viaDouble(const ir::Type* t, llvm::Value* a, llvm::Value* c, ir::OpId n) {
  const char* name = ir::opIdName(n).data();  // names are string literals
  const ir::Type* s = t->scalar();
  auto one = [&](llvm::Value* x, llvm::Value* y) -> llvm::Value* {
    llvm::Type* st = x->getType();
    if (s->bits() != 64) {
      x = b.CreateFPExt(x, M.f64);
      if (y) y = b.CreateFPExt(y, M.f64);
    }
    llvm::Value* r;
    if (n == ir::OpId::Rsqrt) {
      llvm::Value* root = b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
      r = b.CreateFDiv(llvm::ConstantFP::get(M.f64, 1.0), root);
    } else if (y) {
      r = b.CreateCall(M.libm(name, 2), {x, y});
    } else {
      r = b.CreateCall(M.libm(name, 1), {x});
    }
    return s->bits() != 64 ? b.CreateFPTrunc(r, st) : r;
  };
  if (!t->isVector()) return one(a, c);
  llvm::Value* out = llvm::PoisonValue::get(a->getType());
  for (unsigned i = 0; i < t->count(); ++i)
    out = b.CreateInsertElement(out, one(b.CreateExtractElement(a, i), c ? b.CreateExtractElement(c, i) : nullptr), i);
  return out;
}

llvm::Value* FunctionEmitter::binary(const ir::Op& op, ir::OpId n, const ir::Type* t,
                                     llvm::Value* x, llvm::Value* y) {
  const ir::Type* s = t->scalar();
  if (s->isFloat()) {
    if (n == ir::OpId::Add) return b.CreateFAdd(x, y);
    if (n == ir::OpId::Sub) return b.CreateFSub(x, y);
    if (n == ir::OpId::Mul) return b.CreateFMul(x, y);
    if (n == ir::OpId::Div) return b.CreateFDiv(x, y);
    if (n == ir::OpId::Rem) return b.CreateFRem(x, y);  // fmod: exact, so no widening needed
    if (n == ir::OpId::Min) return b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x, y);
    if (n == ir::OpId::Max) return b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, y);
    if (n == ir::OpId::Pow || n == ir::OpId::Atan2) return viaDouble(t, x, y, n);
    if (n == ir::OpId::Copysign) return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, x, y);
    return nullptr;
  }
  if (s->isBool()) {
    if (n == ir::OpId::And || n == ir::OpId::Min) return b.CreateAnd(x, y);
    if (n == ir::OpId::Or || n == ir::OpId::Max) return b.CreateOr(x, y);
    if (n == ir::OpId::Xor) return b.CreateXor(x, y);
    return nullptr;
  }
  bool sg = s->isSigned();
  llvm::Type* lt = x->getType();
  if (n == ir::OpId::Add) return b.CreateAdd(x, y);
  if (n == ir::OpId::Sub) return b.CreateSub(x, y);
  if (n == ir::OpId::Mul) return b.CreateMul(x, y);
  if (n == ir::OpId::And) return b.CreateAnd(x, y);
  if (n == ir::OpId::Or) return b.CreateOr(x, y);
  if (n == ir::OpId::Xor) return b.CreateXor(x, y);
  if (n == ir::OpId::Min) return b.CreateBinaryIntrinsic(sg ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, x, y);
  if (n == ir::OpId::Max) return b.CreateBinaryIntrinsic(sg ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, x, y);
  if (n == ir::OpId::Shl || n == ir::OpId::Shr) {
    llvm::Value* count = b.CreateAnd(y, llvm::ConstantInt::get(lt, s->bits() - 1));
    if (n == ir::OpId::Shl) return b.CreateShl(x, count);
    return sg ? b.CreateAShr(x, count) : b.CreateLShr(x, count);
  }
  if (n == ir::OpId::Div || n == ir::OpId::Rem) {
    // Division by zero traps (and divides by 1); INT_MIN / -1 wraps to
    // INT_MIN with remainder 0, which dividing by 1 gives as well.
    llvm::Value* zero = b.CreateICmpEQ(y, llvm::Constant::getNullValue(lt));
    trapIf(op, zero);
    llvm::Value* bad = zero;
    if (sg) {
      unsigned bits = s->bits();
      llvm::Value* minv = llvm::ConstantInt::get(lt, llvm::APInt::getSignedMinValue(bits));
      llvm::Value* overflow = b.CreateAnd(b.CreateICmpEQ(x, minv),
                                          b.CreateICmpEQ(y, llvm::Constant::getAllOnesValue(lt)));
      bad = b.CreateOr(zero, overflow);
    }
    llvm::Value* d = b.CreateSelect(bad, llvm::ConstantInt::get(lt, 1), y);
    if (n == ir::OpId::Div) return sg ? b.CreateSDiv(x, d) : b.CreateUDiv(x, d);
    return sg ? b.CreateSRem(x, d) : b.CreateURem(x, d);
  }
  return nullptr;
}

llvm::Value* FunctionEmitter::unary(ir::OpId n, const ir::Type* t, llvm::Value* x) {
  const ir::Type* s = t->scalar();
  if (n == ir::OpId::Not) return b.CreateNot(x);
  if (s->isInt()) {
    if (n == ir::OpId::Neg) return b.CreateNeg(x);
    if (n == ir::OpId::Abs)
      return s->isSigned() ? b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b.getFalse()) : x;
    return nullptr;
  }
  if (n == ir::OpId::Neg) return b.CreateFNeg(x);
  if (n == ir::OpId::Abs) return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // Correctly rounded in any precision, so computed in the type itself.
  if (n == ir::OpId::Sqrt) return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
  if (n == ir::OpId::Floor) return b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
  if (n == ir::OpId::Ceil) return b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
  if (n == ir::OpId::Round) return b.CreateUnaryIntrinsic(llvm::Intrinsic::round, x);  // half away from zero
  if (n == ir::OpId::Trunc) return b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, x);
  if (n == ir::OpId::Sign) {  // -1, +1, or x itself (+-0, NaN)
    llvm::Value* zero = llvm::Constant::getNullValue(x->getType());
    llvm::Value* one = llvm::ConstantFP::get(x->getType(), 1.0);
    llvm::Value* r = b.CreateSelect(b.CreateFCmpOLT(x, zero), b.CreateFNeg(one), x);
    return b.CreateSelect(b.CreateFCmpOGT(x, zero), one, r);
  }
  if (n == ir::OpId::Exp && s->bits() == 32) return expF32(x);
  if (n == ir::OpId::Erf && s->bits() == 32) return erfF32(x);
  switch (n) {  // in double through the C library, named as the op
    case ir::OpId::Rsqrt: case ir::OpId::Exp: case ir::OpId::Log: case ir::OpId::Sin: case ir::OpId::Cos:
    case ir::OpId::Tan: case ir::OpId::Tanh: case ir::OpId::Asin: case ir::OpId::Acos: case ir::OpId::Atan:
    case ir::OpId::Sinh: case ir::OpId::Cosh: case ir::OpId::Asinh: case ir::OpId::Acosh: case ir::OpId::Atanh:
    case ir::OpId::Erf: case ir::OpId::Exp2: case ir::OpId::Log2: case ir::OpId::Log1p: case ir::OpId::Expm1:
      return viaDouble(t, x, nullptr, n);
    default:
      break;
  }
  return nullptr;
}

// The interpreter's exp of f32 (interp::expF32, ir/interp/Scalar.h), step
// for step, so the two agree bit for bit: within 1 ulp of the correctly
// rounded e^x over all f32; x = n·ln 2 + r with n = roundeven(x·log2 e) and
// r from a two-part ln 2 (Cody and Waite), e^r by Cephes expf's polynomial,
// times 2^n as two powers of two made from their bits (so that 2^-150 ..
// 2^128 need no special case). It vectorises, where a call of exp in double
// per lane (the other functions) does not.
llvm::Value* FunctionEmitter::expF32(llvm::Value* x) {
  llvm::Type* ft = x->getType();
  llvm::Type* it = ft->isVectorTy() ? llvm::VectorType::get(M.i32, llvm::cast<llvm::VectorType>(ft)->getElementCount())
                                    : static_cast<llvm::Type*>(M.i32);
  auto c = [&](double v) { return llvm::ConstantFP::get(ft, v); };
  auto ci = [&](int v) { return llvm::ConstantInt::get(it, uint64_t(int64_t(v)), true); };
  auto fma = [&](llvm::Value* a, llvm::Value* m, llvm::Value* add) {
    return b.CreateIntrinsic(llvm::Intrinsic::fma, {ft}, {a, m, add});
  };
  llvm::Value* xc = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum,
                                            b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, c(-104.0)), c(89.0));
  llvm::Value* n = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, b.CreateFMul(xc, c(1.44269504088896341)));
  llvm::Value* r = fma(n, c(-0.693359375), xc);
  r = fma(n, c(2.12194440e-4), r);
  llvm::Value* p = c(1.9875691500e-4);
  for (double k : {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1})
    p = fma(p, r, c(k));
  p = b.CreateFAdd(fma(p, b.CreateFMul(r, r), r), c(1.0));
  llvm::Value* ni = b.CreateFPToSI(n, it);
  llvm::Value* half = b.CreateAShr(ni, ci(1));
  auto pow2 = [&](llvm::Value* e) { return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, ci(127)), ci(23)), ft); };
  llvm::Value* y = b.CreateFMul(b.CreateFMul(p, pow2(half)), pow2(b.CreateSub(ni, half)));
  y = b.CreateSelect(b.CreateFCmpOGT(x, c(88.72283935546875)), c(INFINITY), y);
  y = b.CreateSelect(b.CreateFCmpOLT(x, c(-103.972084)), c(0.0), y);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, y);
}

// The interpreter's erf of f32 (interp::erfF32, ir/interp/Scalar.h), step for
// step: x·(1 + p(x²)) up to |x| = 0.875, 1 - e^q(|x|) with expF32 beyond (both
// computed, one selected, so that it vectorises).
llvm::Value* FunctionEmitter::erfF32(llvm::Value* x) {
  llvm::Type* ft = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(ft, v); };
  auto fma = [&](llvm::Value* a, llvm::Value* m, llvm::Value* add) {
    return b.CreateIntrinsic(llvm::Intrinsic::fma, {ft}, {a, m, add});
  };
  llvm::Value* t = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* s = b.CreateFMul(x, x);
  llvm::Value* p = c(-6.222415249794722e-4);
  for (double k : {5.035870708525181e-3, -2.67939530313015e-2, 1.1282524466514587e-1, -3.761255741119385e-1,
                   1.2837915122509003e-1})
    p = fma(p, s, c(k));
  llvm::Value* small = fma(x, p, x);
  llvm::Value* tc = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, t, c(4.0));
  llvm::Value* q = c(1.6024995375119033e-6);
  for (double k : {-4.535477273748256e-5, 5.907168961130083e-4, -4.730289801955223e-3, 2.6335563510656357e-2,
                   -1.0992522537708282e-1, -6.319952607154846e-1, -1.130131483078003, 2.9428183916024864e-4})
    q = fma(q, tc, c(k));
  llvm::Value* large = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, b.CreateFSub(c(1.0), expF32(q)), x);
  large = b.CreateSelect(b.CreateFCmpUNO(x, x), x, large);
  return b.CreateSelect(b.CreateFCmpOLE(t, c(0.875)), small, large);
}

llvm::Value* FunctionEmitter::compare(ir::OpId n, const ir::Type* t, llvm::Value* x,
                                      llvm::Value* y) {
  using P = llvm::CmpInst::Predicate;
  const ir::Type* s = t->scalar();
  P p;
  if (s->isFloat()) {
    p = n == ir::OpId::Eq ? P::FCMP_OEQ : n == ir::OpId::Ne ? P::FCMP_UNE : n == ir::OpId::Lt ? P::FCMP_OLT
        : n == ir::OpId::Le ? P::FCMP_OLE : n == ir::OpId::Gt ? P::FCMP_OGT : P::FCMP_OGE;
    return b.CreateFCmp(p, x, y);
  }
  bool sg = s->isInt() && s->isSigned();
  p = n == ir::OpId::Eq ? P::ICMP_EQ : n == ir::OpId::Ne ? P::ICMP_NE
      : n == ir::OpId::Lt ? (sg ? P::ICMP_SLT : P::ICMP_ULT) : n == ir::OpId::Le ? (sg ? P::ICMP_SLE : P::ICMP_ULE)
      : n == ir::OpId::Gt ? (sg ? P::ICMP_SGT : P::ICMP_UGT) : (sg ? P::ICMP_SGE : P::ICMP_UGE);
  return b.CreateICmp(p, x, y);
}

llvm::Value* FunctionEmitter::cast(const ir::Type* from, const ir::Type* to, llvm::Value* x) {
  const ir::Type* fs = from->scalar();
  const ir::Type* ts = to->scalar();
  llvm::Type* lt = M.valueType(to);
  if (ts->isBool()) {
    if (fs->isBool()) return x;
    if (fs->isFloat()) return b.CreateFCmpUNE(x, llvm::Constant::getNullValue(x->getType()));
    return b.CreateICmpNE(x, llvm::Constant::getNullValue(x->getType()));
  }
  if (ts->isInt()) {
    if (fs->isBool()) return b.CreateZExt(x, lt);
    if (fs->isInt()) return fs->isSigned() ? b.CreateSExtOrTrunc(x, lt) : b.CreateZExtOrTrunc(x, lt);
    // Saturating, NaN -> 0: exactly fptosi.sat / fptoui.sat.
    auto id = ts->isSigned() ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
    return b.CreateIntrinsic(id, {lt, x->getType()}, {x});
  }
  if (fs->isBool()) return b.CreateUIToFP(x, lt);
  if (fs->isInt()) return fs->isSigned() ? b.CreateSIToFP(x, lt) : b.CreateUIToFP(x, lt);
  if (fs->bits() < ts->bits()) return b.CreateFPExt(x, lt);
  if (fs->bits() > ts->bits()) return b.CreateFPTrunc(x, lt);
  return x;
}

bool FunctionEmitter::emitConst(const ir::Op& op) {
  set(op.result(0), constant(op));
  return true;
}

bool FunctionEmitter::emitSelect(const ir::Op& op) {
  set(op.result(0), b.CreateSelect(get(op.operand(0)), get(op.operand(1)), get(op.operand(2))));
  return true;
}

bool FunctionEmitter::emitCompare(const ir::Op& op) {
  set(op.result(0), compare(op.id(), op.operand(0)->type(), get(op.operand(0)), get(op.operand(1))));
  return true;
}

bool FunctionEmitter::emitCast(const ir::Op& op) {
  set(op.result(0), cast(op.operand(0)->type(), op.result(0)->type(), get(op.operand(0))));
  return true;
}

bool FunctionEmitter::emitBitcast(const ir::Op& op) {
  set(op.result(0), b.CreateBitCast(get(op.operand(0)), M.valueType(op.result(0)->type())));
  return true;
}

bool FunctionEmitter::emitBinary(const ir::Op& op) {
  const ir::Type* t = op.operand(0)->type();
  llvm::Value* r = binary(op, op.id(), t, get(op.operand(0)), get(op.operand(1)));
  if (!r) return fail(op, "not defined on '" + t->str() + "'");
  set(op.result(0), r);
  return true;
}

bool FunctionEmitter::emitFma(const ir::Op& op) {
  // Fused in the type itself for f32 and f64; f16 as the f64 fma rounded
  // once to f16 (ir/interp/Scalar.h).
  const ir::Type* t = op.operand(0)->type();
  llvm::Value *x = get(op.operand(0)), *y = get(op.operand(1)), *z = get(op.operand(2));
  if (t->scalar()->bits() != 16) {
    set(op.result(0), b.CreateIntrinsic(llvm::Intrinsic::fma, {x->getType()}, {x, y, z}));
    return true;
  }
  llvm::Type* wide = t->isVector() ? llvm::VectorType::get(M.f64, llvm::ElementCount::getFixed(t->count())) : M.f64;
  llvm::Value* r = b.CreateIntrinsic(llvm::Intrinsic::fma, {wide},
                                     {b.CreateFPExt(x, wide), b.CreateFPExt(y, wide), b.CreateFPExt(z, wide)});
  set(op.result(0), b.CreateFPTrunc(r, x->getType()));
  return true;
}

bool FunctionEmitter::emitUnary(const ir::Op& op) {
  const ir::Type* t = op.operand(0)->type();
  llvm::Value* r = unary(op.id(), t, get(op.operand(0)));
  if (!r) return fail(op, "not defined on '" + t->str() + "'");
  set(op.result(0), r);
  return true;
}

void FunctionEmitter::addArithLowerings(EmitTable& t) {
  using enum ir::OpId;
  t[Const] = &FunctionEmitter::emitConst;
  t[Select] = &FunctionEmitter::emitSelect;
  for (ir::OpId n : {Eq, Ne, Lt, Le, Gt, Ge}) t[n] = &FunctionEmitter::emitCompare;
  t[Cast] = &FunctionEmitter::emitCast;
  t[Bitcast] = &FunctionEmitter::emitBitcast;
  for (ir::OpId n : {Add, Sub, Mul, Div, Rem, Min, Max, And, Or, Xor, Shl, Shr, Pow, Atan2, Copysign})
    t[n] = &FunctionEmitter::emitBinary;
  t[Fma] = &FunctionEmitter::emitFma;
  for (ir::OpId n : {Neg,  Abs,  Not,   Sqrt,  Rsqrt, Exp,   Log,   Sin,   Cos,   Tan,  Tanh,
                     Floor, Ceil, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Erf,
                     Exp2, Log2, Log1p, Expm1, Round, Trunc, Sign})
    t[n] = &FunctionEmitter::emitUnary;
}

// ---- aggregates ----------------------------------------------------------------

bool FunctionEmitter::emitAggregate(const ir::Op& op) {
  ir::OpId n = op.id();
  const ir::Type* rt = op.numResults() ? op.result(0)->type() : nullptr;
  if (n == ir::OpId::VecMake || n == ir::OpId::StructMake || n == ir::OpId::ArrayMake) {
    llvm::Type* lt = M.valueType(rt, &op);
    if (!lt) return false;
    llvm::Value* v = llvm::PoisonValue::get(lt);
    for (unsigned i = 0; i < op.numOperands(); ++i)
      v = n == ir::OpId::VecMake ? b.CreateInsertElement(v, get(op.operand(i)), i)
                          : b.CreateInsertValue(v, get(op.operand(i)), i);
    set(op.result(0), v);
    return true;
  }
  if (n == ir::OpId::VecExtract) {
    set(op.result(0), b.CreateExtractElement(get(op.operand(0)), uint64_t(op.intAttr("index"))));
    return true;
  }
  if (n == ir::OpId::VecInsert) {
    set(op.result(0), b.CreateInsertElement(get(op.operand(0)), get(op.operand(1)), uint64_t(op.intAttr("index"))));
    return true;
  }
  if (n == ir::OpId::StructExtract) {
    set(op.result(0), b.CreateExtractValue(get(op.operand(0)), unsigned(op.intAttr("index"))));
    return true;
  }
  if (n == ir::OpId::StructInsert) {
    set(op.result(0), b.CreateInsertValue(get(op.operand(0)), get(op.operand(1)), unsigned(op.intAttr("index"))));
    return true;
  }
  if (n == ir::OpId::StructUnpack) {
    for (unsigned i = 0; i < op.numResults(); ++i)
      set(op.result(i), b.CreateExtractValue(get(op.operand(0)), i));
    return true;
  }
  if (n == ir::OpId::SumMake) {
    llvm::Type* lt = M.valueType(rt, &op);
    if (!lt) return false;
    unsigned tag = unsigned(op.intAttr("tag"));
    llvm::Value* v = llvm::Constant::getNullValue(lt);
    v = b.CreateInsertValue(v, b.getInt32(tag), 0);
    set(op.result(0), b.CreateInsertValue(v, get(op.operand(0)), tag + 1));
    return true;
  }
  if (n == ir::OpId::SumTag) {
    llvm::Value* tag = b.CreateExtractValue(get(op.operand(0)), 0);
    set(op.result(0), b.CreateZExtOrTrunc(tag, M.valueType(rt)));
    return true;
  }
  if (n == ir::OpId::ArrayGet || n == ir::OpId::ArraySet) {
    // Dynamic index: through a stack copy; out of bounds traps and uses element 0.
    const ir::Type* at = op.operand(0)->type();
    llvm::Type* lt = M.valueType(at, &op);
    if (!lt) return false;
    const ir::Type* it = op.operand(1)->type();
    llvm::Value* idx = get(op.operand(1));
    idx = it->isSigned() ? b.CreateSExt(idx, M.i64) : b.CreateZExtOrTrunc(idx, M.i64);
    llvm::Value* inb = b.CreateICmpULT(idx, b.getInt64(at->count()));
    trapOutOfBounds(op, b.CreateNot(inb), idx, b.getInt64(at->count()));
    idx = b.CreateSelect(inb, idx, b.getInt64(0));
    llvm::AllocaInst* tmp = entryAlloca(lt, "array");
    b.CreateStore(get(op.operand(0)), tmp);
    llvm::Value* p = b.CreateInBoundsGEP(lt, tmp, {b.getInt64(0), idx});
    llvm::Type* et = M.valueType(at->elem());
    if (n == ir::OpId::ArrayGet) {
      set(op.result(0), b.CreateLoad(et, p));
    } else {
      b.CreateStore(get(op.operand(2)), p);
      set(op.result(0), b.CreateLoad(lt, tmp));
    }
    return true;
  }
  if (n == ir::OpId::Dot || n == ir::OpId::Length || n == ir::OpId::Normalize || n == ir::OpId::Cross) {
    // In double, summed in order from +0.0, rounded once (Elementwise.cpp).
    const ir::Type* vt = op.operand(0)->type();
    unsigned count = vt->count();
    bool narrow = vt->elem()->bits() != 64;
    auto lane = [&](llvm::Value* v, unsigned i) {
      llvm::Value* e = b.CreateExtractElement(v, i);
      return narrow ? b.CreateFPExt(e, M.f64) : e;
    };
    llvm::Type* et = M.valueType(vt->elem());
    auto round = [&](llvm::Value* d) { return narrow ? b.CreateFPTrunc(d, et) : d; };
    llvm::Value* x = get(op.operand(0));
    llvm::Value* y = op.numOperands() > 1 ? get(op.operand(1)) : x;
    if (n == ir::OpId::Cross) {
      auto term = [&](unsigned i, unsigned j) {
        return b.CreateFSub(b.CreateFMul(lane(x, i), lane(y, j)), b.CreateFMul(lane(x, j), lane(y, i)));
      };
      llvm::Value* r = llvm::PoisonValue::get(x->getType());
      r = b.CreateInsertElement(r, round(term(1, 2)), uint64_t(0));
      r = b.CreateInsertElement(r, round(term(2, 0)), 1);
      r = b.CreateInsertElement(r, round(term(0, 1)), 2);
      set(op.result(0), r);
      return true;
    }
    llvm::Value* sum = llvm::ConstantFP::get(M.f64, 0.0);
    for (unsigned i = 0; i < count; ++i) sum = b.CreateFAdd(sum, b.CreateFMul(lane(x, i), lane(y, i)));
    if (n == ir::OpId::Dot) {
      set(op.result(0), round(sum));
      return true;
    }
    llvm::Value* len = b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, sum);
    if (n == ir::OpId::Length) {
      set(op.result(0), round(len));
      return true;
    }
    llvm::Value* r = llvm::PoisonValue::get(x->getType());
    for (unsigned i = 0; i < count; ++i) r = b.CreateInsertElement(r, round(b.CreateFDiv(lane(x, i), len)), i);
    set(op.result(0), r);
    return true;
  }
  return emitUnsupported(op);
}

void FunctionEmitter::addAggregateLowerings(EmitTable& t) {
  using enum ir::OpId;
  for (ir::OpId n : {VecMake, StructMake, ArrayMake, VecExtract, VecInsert, StructExtract, StructInsert,
                     StructUnpack, SumMake, SumTag, ArrayGet, ArraySet, Dot, Length, Normalize, Cross})
    t[n] = &FunctionEmitter::emitAggregate;
}

}  // namespace eph::llvmtarget
