// Lowering of pure value ops: constants, integer and float arithmetic,
// comparisons, casts, math functions, vectors, structs, sums and arrays.
// Each rule mirrors ir/interp/Scalar.cpp and ir/interp/Elementwise.cpp.
#include <llvm/IR/Intrinsics.h>

#include "ir/OpTable.h"
#include "targets/llvm/Emitter.h"

namespace eph::llvmtarget {
namespace {

bool isOneOf(std::string_view n, std::initializer_list<std::string_view> names) {
  for (auto x : names)
    if (n == x) return true;
  return false;
}

}  // namespace

llvm::Value* FunctionEmitter::constant(const ir::Op& op) {
  const ir::Type* t = op.result(0)->type();
  const ir::Attr* a = op.attr("value");
  llvm::Type* lt = M.valueType(t);
  if (t->isBool()) return b.getInt1(a->b);
  if (t->isInt()) return llvm::ConstantInt::get(lt, uint64_t(a->i), t->isSigned());
  double v = a->kind == ir::Attr::Kind::Int ? double(a->i) : a->f;
  return llvm::ConstantFP::get(lt, v);
}

// Math the interpreter computes in double: widen, call the C library, round
// once to the type (per lane for vectors).
llvm::Value* FunctionEmitter::viaDouble(const ir::Type* t, llvm::Value* a, llvm::Value* c,
                                        const char* name) {
  const ir::Type* s = t->scalar();
  auto one = [&](llvm::Value* x, llvm::Value* y) -> llvm::Value* {
    llvm::Type* st = x->getType();
    if (s->bits() != 64) {
      x = b.CreateFPExt(x, M.f64);
      if (y) y = b.CreateFPExt(y, M.f64);
    }
    llvm::Value* r;
    if (std::string_view(name) == "rsqrt") {
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

llvm::Value* FunctionEmitter::binary(const ir::Op& op, std::string_view n, const ir::Type* t,
                                     llvm::Value* x, llvm::Value* y) {
  const ir::Type* s = t->scalar();
  if (s->isFloat()) {
    if (n == "add") return b.CreateFAdd(x, y);
    if (n == "sub") return b.CreateFSub(x, y);
    if (n == "mul") return b.CreateFMul(x, y);
    if (n == "div") return b.CreateFDiv(x, y);
    if (n == "rem") return b.CreateFRem(x, y);  // fmod: exact, so no widening needed
    if (n == "min") return b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x, y);
    if (n == "max") return b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, y);
    if (n == "pow" || n == "atan2") return viaDouble(t, x, y, n == "pow" ? "pow" : "atan2");
    if (n == "copysign") return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, x, y);
    return nullptr;
  }
  if (s->isBool()) {
    if (n == "and" || n == "min") return b.CreateAnd(x, y);
    if (n == "or" || n == "max") return b.CreateOr(x, y);
    if (n == "xor") return b.CreateXor(x, y);
    return nullptr;
  }
  bool sg = s->isSigned();
  llvm::Type* lt = x->getType();
  if (n == "add") return b.CreateAdd(x, y);
  if (n == "sub") return b.CreateSub(x, y);
  if (n == "mul") return b.CreateMul(x, y);
  if (n == "and") return b.CreateAnd(x, y);
  if (n == "or") return b.CreateOr(x, y);
  if (n == "xor") return b.CreateXor(x, y);
  if (n == "min") return b.CreateBinaryIntrinsic(sg ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, x, y);
  if (n == "max") return b.CreateBinaryIntrinsic(sg ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, x, y);
  if (n == "shl" || n == "shr") {
    llvm::Value* count = b.CreateAnd(y, llvm::ConstantInt::get(lt, s->bits() - 1));
    if (n == "shl") return b.CreateShl(x, count);
    return sg ? b.CreateAShr(x, count) : b.CreateLShr(x, count);
  }
  if (n == "div" || n == "rem") {
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
    if (n == "div") return sg ? b.CreateSDiv(x, d) : b.CreateUDiv(x, d);
    return sg ? b.CreateSRem(x, d) : b.CreateURem(x, d);
  }
  return nullptr;
}

llvm::Value* FunctionEmitter::unary(std::string_view n, const ir::Type* t, llvm::Value* x) {
  const ir::Type* s = t->scalar();
  if (n == "not") return b.CreateNot(x);
  if (s->isInt()) {
    if (n == "neg") return b.CreateNeg(x);
    if (n == "abs")
      return s->isSigned() ? b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b.getFalse()) : x;
    return nullptr;
  }
  if (n == "neg") return b.CreateFNeg(x);
  if (n == "abs") return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // Correctly rounded in any precision, so computed in the type itself.
  if (n == "sqrt") return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
  if (n == "floor") return b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
  if (n == "ceil") return b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
  if (n == "round") return b.CreateUnaryIntrinsic(llvm::Intrinsic::round, x);  // half away from zero
  if (n == "trunc") return b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, x);
  if (n == "sign") {  // -1, +1, or x itself (+-0, NaN)
    llvm::Value* zero = llvm::Constant::getNullValue(x->getType());
    llvm::Value* one = llvm::ConstantFP::get(x->getType(), 1.0);
    llvm::Value* r = b.CreateSelect(b.CreateFCmpOLT(x, zero), b.CreateFNeg(one), x);
    return b.CreateSelect(b.CreateFCmpOGT(x, zero), one, r);
  }
  static const char* const kViaDouble[] = {"rsqrt", "exp",  "log",   "sin",   "cos",  "tan",   "tanh",
                                           "asin",  "acos", "atan",  "sinh",  "cosh", "asinh", "acosh",
                                           "atanh", "erf",  "exp2",  "log2",  "log1p", "expm1"};
  for (const char* f : kViaDouble)
    if (n == f) return viaDouble(t, x, nullptr, f);
  return nullptr;
}

llvm::Value* FunctionEmitter::compare(std::string_view n, const ir::Type* t, llvm::Value* x,
                                      llvm::Value* y) {
  using P = llvm::CmpInst::Predicate;
  const ir::Type* s = t->scalar();
  P p;
  if (s->isFloat()) {
    p = n == "eq" ? P::FCMP_OEQ : n == "ne" ? P::FCMP_UNE : n == "lt" ? P::FCMP_OLT
        : n == "le" ? P::FCMP_OLE : n == "gt" ? P::FCMP_OGT : P::FCMP_OGE;
    return b.CreateFCmp(p, x, y);
  }
  bool sg = s->isInt() && s->isSigned();
  p = n == "eq" ? P::ICMP_EQ : n == "ne" ? P::ICMP_NE
      : n == "lt" ? (sg ? P::ICMP_SLT : P::ICMP_ULT) : n == "le" ? (sg ? P::ICMP_SLE : P::ICMP_ULE)
      : n == "gt" ? (sg ? P::ICMP_SGT : P::ICMP_UGT) : (sg ? P::ICMP_SGE : P::ICMP_UGE);
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

bool FunctionEmitter::emitArith(const ir::Op& op, bool& handled) {
  std::string_view n = op.name();
  handled = true;
  if (n == "const") {
    set(op.result(0), constant(op));
    return true;
  }
  if (n == "select") {
    set(op.result(0), b.CreateSelect(get(op.operand(0)), get(op.operand(1)), get(op.operand(2))));
    return true;
  }
  const ir::Type* t = op.numOperands() ? op.operand(0)->type() : nullptr;
  if (isOneOf(n, {"eq", "ne", "lt", "le", "gt", "ge"})) {
    set(op.result(0), compare(n, t, get(op.operand(0)), get(op.operand(1))));
    return true;
  }
  if (n == "cast") {
    set(op.result(0), cast(t, op.result(0)->type(), get(op.operand(0))));
    return true;
  }
  if (n == "bitcast") {
    set(op.result(0), b.CreateBitCast(get(op.operand(0)), M.valueType(op.result(0)->type())));
    return true;
  }
  if (op.numOperands() == 2 && op.numResults() == 1 && op.info().has(ir::kPure) &&
      isOneOf(n, {"add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "shl", "shr", "pow",
                  "atan2", "copysign"})) {
    llvm::Value* r = binary(op, n, t, get(op.operand(0)), get(op.operand(1)));
    if (!r) return fail(op, "not defined on '" + t->str() + "'");
    set(op.result(0), r);
    return true;
  }
  if (n == "fma") {
    // Fused in the type itself for f32 and f64; f16 as the f64 fma rounded
    // once to f16 (ir/interp/Scalar.h).
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
  if (isOneOf(n, {"neg", "abs", "not", "sqrt", "rsqrt", "exp", "log", "sin", "cos", "tan", "tanh",
                  "floor", "ceil", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf",
                  "exp2", "log2", "log1p", "expm1", "round", "trunc", "sign"})) {
    llvm::Value* r = unary(n, t, get(op.operand(0)));
    if (!r) return fail(op, "not defined on '" + t->str() + "'");
    set(op.result(0), r);
    return true;
  }
  handled = false;
  return true;
}

// ---- aggregates ----------------------------------------------------------------

bool FunctionEmitter::emitAggregate(const ir::Op& op, bool& handled) {
  std::string_view n = op.name();
  handled = true;
  const ir::Type* rt = op.numResults() ? op.result(0)->type() : nullptr;
  if (n == "vec.make" || n == "struct.make" || n == "array.make") {
    llvm::Type* lt = M.valueType(rt, &op);
    if (!lt) return false;
    llvm::Value* v = llvm::PoisonValue::get(lt);
    for (unsigned i = 0; i < op.numOperands(); ++i)
      v = n == "vec.make" ? b.CreateInsertElement(v, get(op.operand(i)), i)
                          : b.CreateInsertValue(v, get(op.operand(i)), i);
    set(op.result(0), v);
    return true;
  }
  if (n == "vec.extract") {
    set(op.result(0), b.CreateExtractElement(get(op.operand(0)), uint64_t(op.intAttr("index"))));
    return true;
  }
  if (n == "vec.insert") {
    set(op.result(0), b.CreateInsertElement(get(op.operand(0)), get(op.operand(1)), uint64_t(op.intAttr("index"))));
    return true;
  }
  if (n == "struct.extract") {
    set(op.result(0), b.CreateExtractValue(get(op.operand(0)), unsigned(op.intAttr("index"))));
    return true;
  }
  if (n == "struct.insert") {
    set(op.result(0), b.CreateInsertValue(get(op.operand(0)), get(op.operand(1)), unsigned(op.intAttr("index"))));
    return true;
  }
  if (n == "struct.unpack") {
    for (unsigned i = 0; i < op.numResults(); ++i)
      set(op.result(i), b.CreateExtractValue(get(op.operand(0)), i));
    return true;
  }
  if (n == "sum.make") {
    llvm::Type* lt = M.valueType(rt, &op);
    if (!lt) return false;
    unsigned tag = unsigned(op.intAttr("tag"));
    llvm::Value* v = llvm::Constant::getNullValue(lt);
    v = b.CreateInsertValue(v, b.getInt32(tag), 0);
    set(op.result(0), b.CreateInsertValue(v, get(op.operand(0)), tag + 1));
    return true;
  }
  if (n == "sum.tag") {
    llvm::Value* tag = b.CreateExtractValue(get(op.operand(0)), 0);
    set(op.result(0), b.CreateZExtOrTrunc(tag, M.valueType(rt)));
    return true;
  }
  if (n == "array.get" || n == "array.set") {
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
    if (n == "array.get") {
      set(op.result(0), b.CreateLoad(et, p));
    } else {
      b.CreateStore(get(op.operand(2)), p);
      set(op.result(0), b.CreateLoad(lt, tmp));
    }
    return true;
  }
  if (n == "dot" || n == "length" || n == "normalize" || n == "cross") {
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
    if (n == "cross") {
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
    if (n == "dot") {
      set(op.result(0), round(sum));
      return true;
    }
    llvm::Value* len = b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, sum);
    if (n == "length") {
      set(op.result(0), round(len));
      return true;
    }
    llvm::Value* r = llvm::PoisonValue::get(x->getType());
    for (unsigned i = 0; i < count; ++i) r = b.CreateInsertElement(r, round(b.CreateFDiv(lane(x, i), len)), i);
    set(op.result(0), r);
    return true;
  }
  handled = false;
  return true;
}

}  // namespace eph::llvmtarget
