// Bounds checks hoisted out of a workgroup-level loop (LowerKernel.cpp's
// uniform `for`): an access whose index only grows with the invocation ids
// and the loop's counter is in bounds on every trip of every invocation when
// it is at the two corners, (ids 0, first counter) and (ids size - 1, last
// counter). The kernel tests that once before the loop and runs a copy of it
// without those checks; the invocation loops inside it then need no checked
// version of their own, so the values they carry across trips (a strip
// matmul's accumulators) can stay in registers.
//
// The corner values are exact (i64, tested not to overflow it): the IR's
// add, sub and mul wrap, which
// is arithmetic modulo 2^w, so the wrapped index equals the exact one
// whenever the exact one lies in [0, 2^(w-1)) — which the test requires,
// with the length — and ops whose result depends on more than the residue
// (div, min, max, widening casts) add a test that their operands are in the
// range where they agree with the exact value.
#include <llvm/IR/Intrinsics.h>

#include "ir/OpTable.h"
#include "targets/llvm/Emitter.h"

namespace eph::llvmtarget {
namespace {

struct Range {
  llvm::Value* lo = nullptr;  // i64, at the low corner
  llvm::Value* hi = nullptr;  // i64, at the high corner
  bool varies = false;        // depends on the ids or the counter
};

class Corners {
 public:
  Corners(FunctionEmitter& F, const LoopCounter& loop, const std::unordered_set<const ir::Value*>& uniform,
          const unsigned size[3])
      : F(F), b(F.b), loop(loop), uniform(uniform), size(size), i64(F.M.i64) {}

  // The index's range over the loop, or false where its form is not one of
  // those above; `tests` collects what must hold at run time.
  bool range(const ir::Value* v, Range& out, unsigned depth = 0);
  llvm::Value* tests = nullptr;

  // The exact value of an integer of at most 64 bits (an unsigned one of 64
  // bits is required to be below 2^63).
  llvm::Value* exact(llvm::Value* x, bool sg) {
    if (x->getType() == i64 && !sg) require(b.CreateICmpSGE(x, k(0)));
    return sg ? b.CreateSExtOrTrunc(x, i64) : b.CreateZExtOrTrunc(x, i64);
  }
  // p op q, requiring that it does not overflow i64.
  llvm::Value* checked(llvm::Intrinsic::ID id, llvm::Value* p, llvm::Value* q) {
    llvm::Value* pair = b.CreateBinaryIntrinsic(id, p, q);
    require(b.CreateNot(b.CreateExtractValue(pair, 1)));
    return b.CreateExtractValue(pair, 0);
  }
  llvm::Value* add(llvm::Value* p, llvm::Value* q) { return checked(llvm::Intrinsic::sadd_with_overflow, p, q); }
  llvm::Value* sub(llvm::Value* p, llvm::Value* q) { return checked(llvm::Intrinsic::ssub_with_overflow, p, q); }
  llvm::Value* mul(llvm::Value* p, llvm::Value* q) { return checked(llvm::Intrinsic::smul_with_overflow, p, q); }
  llvm::Value* k(int64_t c) { return llvm::ConstantInt::get(i64, uint64_t(c), true); }
  void require(llvm::Value* c) { tests = tests ? b.CreateAnd(tests, c) : c; }
  // Both corners within [0, 2^(bits-1)).
  void requireNatural(const Range& r, unsigned bits) {
    require(b.CreateICmpSGE(r.lo, k(0)));
    if (bits < 64) require(b.CreateICmpSLT(r.hi, k(int64_t(1) << (bits - 1))));
  }

 private:
  FunctionEmitter& F;
  llvm::IRBuilder<>& b;
  const LoopCounter& loop;
  const std::unordered_set<const ir::Value*>& uniform;
  const unsigned* size;
  llvm::Type* i64;
};

bool Corners::range(const ir::Value* v, Range& out, unsigned depth) {
  const ir::Type* t = v->type();
  if (!t->isInt() || t->bits() > 64 || depth > 16) return false;
  if (v == loop.iv) {
    out = {exact(loop.first, t->isSigned()), exact(loop.last, t->isSigned()), true};
    return true;
  }
  if (uniform.count(v)) {  // defined before the loop: the same on every trip
    llvm::Value* x = exact(F.get(v), t->isSigned());
    out = {x, x, false};
    return true;
  }
  const ir::Op* d = v->definingOp();
  if (!d || d->numRegions() || !d->info().has(ir::kPure)) return false;
  ir::OpId n = d->id();
  if (n == ir::OpId::Const) {
    const ir::Attr* a = d->attr("value");
    if (!a || a->kind != ir::Attr::Kind::Int) return false;
    llvm::Value* x = exact(llvm::ConstantInt::get(F.M.valueType(t), uint64_t(a->i)), t->isSigned());
    out = {x, x, false};
    return true;
  }
  if (n == ir::OpId::LocalId || n == ir::OpId::GlobalId) {
    unsigned dim = d->attr("dim") ? unsigned(d->intAttr("dim")) : 0;
    if (dim > 2) return false;
    llvm::Value* base = k(0);
    if (n == ir::OpId::GlobalId) base = mul(exact(F.ids.group[dim], false), k(size[dim]));
    out = {base, b.CreateAdd(base, k(size[dim] - 1)), size[dim] > 1};
    return true;
  }
  Range x, y;
  if (d->numOperands() >= 1 && !range(d->operand(0), x, depth + 1)) return false;
  if (n == ir::OpId::Cast) {
    const ir::Type* from = d->operand(0)->type();
    if (from->bits() != t->bits()) requireNatural(x, std::min(from->bits(), t->bits()));
    out = x;
    return true;
  }
  if (d->numOperands() != 2 || !range(d->operand(1), y, depth + 1)) return false;
  switch (n) {
    case ir::OpId::Add: out = {add(x.lo, y.lo), add(x.hi, y.hi), x.varies || y.varies}; return true;
    case ir::OpId::Sub:  // minus something the same all over the loop
      if (y.varies) return false;
      out = {sub(x.lo, y.lo), sub(x.hi, y.lo), x.varies};
      return true;
    case ir::OpId::Mul: {  // by something the same all over the loop, not negative
      if (x.varies && y.varies) return false;
      const Range& c = x.varies ? y : x;
      const Range& m = x.varies ? x : y;
      require(b.CreateICmpSGE(c.lo, k(0)));
      out = {mul(m.lo, c.lo), mul(m.hi, c.lo), m.varies};
      return true;
    }
    case ir::OpId::Div: {  // of a natural number by a positive one the same all over the loop
      if (y.varies) return false;
      requireNatural(x, t->bits());
      requireNatural(y, t->bits());
      llvm::Value* positive = b.CreateICmpSGT(y.lo, k(0));
      require(positive);
      llvm::Value* divisor = b.CreateSelect(positive, y.lo, k(1));  // (no division by 0 where the tests fail)
      out = {b.CreateUDiv(x.lo, divisor), b.CreateUDiv(x.hi, divisor), x.varies};
      return true;
    }
    case ir::OpId::Min:
    case ir::OpId::Max: {  // of natural numbers: the wrapped compare is the exact one
      requireNatural(x, t->bits());
      requireNatural(y, t->bits());
      bool mn = n == ir::OpId::Min;
      auto pick = [&](llvm::Value* p, llvm::Value* q) {
        return b.CreateSelect(mn ? b.CreateICmpSLT(p, q) : b.CreateICmpSGT(p, q), p, q);
      };
      out = {pick(x.lo, y.lo), pick(x.hi, y.hi), x.varies || y.varies};
      return true;
    }
    default: return false;
  }
}

}  // namespace

llvm::Value* accessesInBounds(FunctionEmitter& F, const LoopCounter& loop,
                              const std::unordered_set<const ir::Value*>& uniform, const unsigned size[3],
                              const std::vector<const ir::Op*>& candidates, std::vector<const ir::Op*>& proven) {
  Corners c(F, loop, uniform, size);
  llvm::IRBuilder<>& b = F.b;
  for (const ir::Op* op : candidates) {
    if (!uniform.count(op->operand(0))) continue;  // the buffer: one all over the loop
    Range r;
    llvm::Value* before = c.tests;
    if (!c.range(op->operand(1), r)) {
      c.tests = before;  // (the tests emitted for it stay unused: dead code)
      continue;
    }
    const ir::Type* vt = op->is(ir::OpId::VecLoad) ? op->result(0)->type()
                         : op->is(ir::OpId::VecStore) ? op->operand(2)->type() : nullptr;
    llvm::Value* len = b.CreateExtractValue(F.get(op->operand(0)), 1);
    if (vt) len = b.CreateUDiv(len, b.getInt64(vt->count()));
    c.requireNatural(r, op->operand(1)->type()->bits());
    c.require(b.CreateICmpSLT(r.hi, b.CreateZExt(len, r.hi->getType())));
    proven.push_back(op);
  }
  if (proven.empty()) return nullptr;
  // A loop that runs no trip has no corners: any answer will do.
  return c.tests;
}

}  // namespace eph::llvmtarget
