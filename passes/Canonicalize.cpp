// canonicalize: constant folding and algebraic identities, to a fixpoint.
//
// Folding: a pure op whose operands are all `const` results and whose results
// are all scalars (bool, integer, float) is evaluated with interp::evalPure,
// the interpreter's own semantics, so folding and execution never disagree;
// the results become `const` ops. An op that would trap (evalPure returns
// nothing, e.g. integer division by zero) is left alone.
//
// Identities (x, y any value; c a constant):
//   add x, 0 -> x         sub x, 0 -> x         mul x, 1 -> x
//   mul x, 0 -> 0         sub x, x -> 0         (integers only)
//   and x, x -> x         or x, x -> x          xor x, x -> 0
//   neg (neg x) -> x      not (not x) -> x
//   select c, x, y -> x or y      select %c, x, x -> x
//   if c {A} {B} -> the ops of the taken region; its yield's operands
//                   replace the if's results
//   op c, x -> op x, c    for commutative ops (constants go to the right)
//   div x, 2^k -> shr x, k        rem x, 2^k -> and x, 2^k - 1
//                   for an unsigned x, or a signed x known to be >= 0 (a local
//                   id, a max with a non-negative value, a mask, ...): SPIR-V
//                   has no shift for a signed division (OpSDiv rounds toward
//                   zero, a shift toward minus infinity), and the target wraps
//                   each division in a zero and overflow guard
// Floats: x + 0.0 is not x when x is -0.0, so for floats only x + (-0.0) and
// x - (+0.0) fold; x * 0 and x - x never fold for floats (NaN, infinities).
#include <bit>
#include <cmath>
#include <vector>

#include "ir/Builder.h"
#include "ir/Verifier.h"
#include "ir/interp/Interp.h"
#include "passes/OpFacts.h"
#include "passes/PassManager.h"

namespace eph::passes {
namespace {

using ir::Op;
using ir::Region;
using ir::Value;

// ---- helpers -------------------------------------------------------------------

// Replaces op's results with `values` and erases op.
void replaceOp(Op* op, const std::vector<Value*>& values) {
  for (unsigned i = 0; i < op->numResults(); ++i) {
    if (values[i]->name().empty()) values[i]->setName(op->result(i)->name());
    op->result(i)->replaceAllUsesWith(values[i]);
  }
  op->erase();
}

// Folding leaves the constants it consumed behind: erase unused `const` ops.
// (Other dead ops are dce's job.)
bool eraseUnusedConstants(Region& region) {
  bool changed = false;
  for (auto it = region.ops().begin(); it != region.ops().end();) {
    Op* op = (it++)->get();
    for (unsigned r = 0; r < op->numRegions(); ++r) changed |= eraseUnusedConstants(op->region(r));
    if (op->is(ir::OpId::Const) && !op->result()->hasUses()) {
      op->erase();
      changed = true;
    }
  }
  return changed;
}

ir::Value* makeConst(Op* before, const ir::Type* t, ir::Attr value) {
  ir::Builder b(before->parentFunction()->module()->context(), *before->parentRegion(), before);
  b.setLoc(before->loc());
  return b.op("const", {}, t, {{"value", std::move(value)}});
}

ir::Value* makeZero(Op* before, const ir::Type* t) {
  return makeConst(before, t, t->isBool() ? ir::Attr::boolean(false) : ir::Attr::integer(0));
}

// The runtime value of a `const` result, for evalPure.
std::optional<interp::RtValue> constantValue(const Value* v) {
  const ir::Attr* a = constantAttr(v);
  const ir::Type* t = v->type();
  if (!a) return std::nullopt;
  if (t->isBool() && a->kind == ir::Attr::Kind::Bool) return interp::RtValue::ofBool(t, a->b);
  if (t->isInt() && a->kind == ir::Attr::Kind::Int) return interp::RtValue::ofInt(t, a->i);
  if (t->isFloat() && a->kind == ir::Attr::Kind::Float) return interp::RtValue::ofFloat(t, a->f);
  return std::nullopt;
}

ir::Attr attrOf(const interp::RtValue& r) {
  if (r.type->isBool()) return ir::Attr::boolean(r.i != 0);
  if (r.type->isInt()) return ir::Attr::integer(r.i);
  return ir::Attr::floating(r.f);
}

bool isIntConst(const Value* v, int64_t want) {
  const ir::Attr* a = constantAttr(v);
  return a && v->type()->isInt() && a->kind == ir::Attr::Kind::Int && a->i == want;
}

// Additive identity: integer 0; for floats only the zero with the given sign
// (x + -0.0 == x and x - +0.0 == x for every x, -0.0 included).
bool isZeroFor(const Value* v, bool negativeFloatZero) {
  const ir::Attr* a = constantAttr(v);
  if (!a) return false;
  if (v->type()->isInt()) return a->kind == ir::Attr::Kind::Int && a->i == 0;
  if (v->type()->isFloat())
    return a->kind == ir::Attr::Kind::Float && a->f == 0 && std::signbit(a->f) == negativeFloatZero;
  return false;
}

bool isOne(const Value* v) {
  const ir::Attr* a = constantAttr(v);
  if (!a) return false;
  if (v->type()->isInt()) return a->kind == ir::Attr::Kind::Int && a->i == 1;
  if (v->type()->isFloat()) return a->kind == ir::Attr::Kind::Float && a->f == 1.0;
  return false;
}

// v >= 0 on every execution: always for an unsigned integer; for a signed one
// when the ops that define it say so (looked through a few levels).
bool nonNegative(const Value* v, int depth = 0) {
  const ir::Type* t = v->type();
  if (!t->isInt()) return false;  // (a vector type is not isInt)
  if (!t->isSigned()) return true;
  if (const ir::Attr* a = constantAttr(v)) return a->kind == ir::Attr::Kind::Int && a->i >= 0;
  const Op* def = v->definingOp();
  if (!def || depth > 8) return false;
  auto operand = [&](unsigned i) { return nonNegative(def->operand(i), depth + 1); };
  ir::OpId n = def->id();
  if (n == ir::OpId::Cast) {
    const ir::Type* s = def->operand(0)->type();
    if (!s->isInt()) return false;
    // widening keeps the value: zero-extended if unsigned, sign-extended if signed
    if (s->bits() < t->bits()) return !s->isSigned() || operand(0);
    if (s->isSigned()) return s->bits() == t->bits() && operand(0);
    // a local id is below the workgroup size, which the verifier bounds
    const Op* src = def->operand(0)->definingOp();
    return src && src->is(ir::OpId::LocalId) &&
           (uint64_t(ir::kMaxWorkgroupInvocations) >> (t->bits() - 1)) == 0;
  }
  if (n == ir::OpId::And || n == ir::OpId::Max) return operand(0) || operand(1);  // a clear sign bit on either side
  if (n == ir::OpId::Or || n == ir::OpId::Min || n == ir::OpId::Div) return operand(0) && operand(1);
  if (n == ir::OpId::Rem || n == ir::OpId::Shr) return operand(0);  // rem has the dividend's sign
  if (n == ir::OpId::Select) return operand(1) && operand(2);
  return false;
}

// ---- rewrites: each returns true after changing the IR ---------------------------

// Folding: all operands constant, all results scalar, evalPure succeeds.
bool foldConstants(Op* op) {
  if (!op->info().has(ir::kPure) || op->numOperands() == 0 || op->numRegions() > 0 ||
      op->numResults() == 0)
    return false;
  for (Value* r : op->results())
    if (!r->type()->isScalar()) return false;
  std::vector<interp::RtValue> args;
  for (Value* v : op->operands()) {
    auto c = constantValue(v);
    if (!c) return false;
    args.push_back(*c);
  }
  auto results = interp::evalPure(*op, args);
  if (!results || results->size() != op->numResults()) return false;
  std::vector<Value*> consts;
  for (unsigned i = 0; i < op->numResults(); ++i) {
    if ((*results)[i].type != op->result(i)->type()) return false;
    consts.push_back(makeConst(op, op->result(i)->type(), attrOf((*results)[i])));
  }
  replaceOp(op, consts);
  return true;
}

// op c, x -> op x, c for commutative ops.
bool constantsToTheRight(Op* op) {
  if (!op->info().has(ir::kCommutative) || op->numOperands() != 2) return false;
  if (!constantOp(op->operand(0)) || constantOp(op->operand(1))) return false;
  Value* a = op->operand(0);
  op->setOperand(0, op->operand(1));
  op->setOperand(1, a);
  return true;
}

// x + 0, 0 + x, x - 0, x * 1, 1 * x -> x; x * 0 -> 0 and x - x -> 0 for integers.
bool arithmeticIdentities(Op* op) {
  ir::OpId n = op->id();
  if (op->numOperands() != 2 || op->numResults() != 1 || !op->result()->type()->isScalar())
    return false;
  Value* x = op->operand(0);
  Value* y = op->operand(1);
  bool isInt = op->result()->type()->isInt();
  if (n == ir::OpId::Add) {
    if (isZeroFor(y, true)) return replaceOp(op, {x}), true;
    if (isZeroFor(x, true)) return replaceOp(op, {y}), true;
  } else if (n == ir::OpId::Sub) {
    if (isZeroFor(y, false)) return replaceOp(op, {x}), true;
    if (isInt && x == y) return replaceOp(op, {makeZero(op, op->result()->type())}), true;
  } else if (n == ir::OpId::Mul) {
    if (isOne(y)) return replaceOp(op, {x}), true;
    if (isOne(x)) return replaceOp(op, {y}), true;
    if (isInt && isIntConst(y, 0)) return replaceOp(op, {y}), true;
    if (isInt && isIntConst(x, 0)) return replaceOp(op, {x}), true;
  }
  return false;
}

// div x, 2^k -> shr x, k; rem x, 2^k -> and x, 2^k - 1; for x >= 0 (scalars).
bool divRemByPowerOfTwo(Op* op) {
  ir::OpId n = op->id();
  if ((n != ir::OpId::Div && n != ir::OpId::Rem) || op->numOperands() != 2) return false;
  const ir::Type* t = op->result()->type();
  const ir::Attr* c = constantAttr(op->operand(1));
  if (!t->isInt() || !c || c->kind != ir::Attr::Kind::Int || c->i < 2) return false;
  uint64_t d = uint64_t(c->i);
  // a power of two that is a positive value of t
  if (!std::has_single_bit(d) || std::bit_width(d) > t->bits() - (t->isSigned() ? 1 : 0)) return false;
  if (!nonNegative(op->operand(0))) return false;
  ir::Value* amount = n == ir::OpId::Div ? makeConst(op, t, ir::Attr::integer(std::countr_zero(d)))
                                 : makeConst(op, t, ir::Attr::integer(int64_t(d - 1)));
  ir::Builder b(op->parentFunction()->module()->context(), *op->parentRegion(), op);
  b.setLoc(op->loc());
  replaceOp(op, {b.op(n == ir::OpId::Div ? "shr" : "and", {op->operand(0), amount}, t)});
  return true;
}

// and x, x -> x; or x, x -> x; xor x, x -> 0 (false for bools).
bool bitwiseIdentities(Op* op) {
  ir::OpId n = op->id();
  if (op->numOperands() != 2 || op->numResults() != 1 || op->operand(0) != op->operand(1))
    return false;
  if (n == ir::OpId::And || n == ir::OpId::Or) return replaceOp(op, {op->operand(0)}), true;
  if (n == ir::OpId::Xor && op->result()->type()->isScalar())
    return replaceOp(op, {makeZero(op, op->result()->type())}), true;
  return false;
}

// neg (neg x) -> x; not (not x) -> x.
bool doubleNegation(Op* op) {
  ir::OpId n = op->id();
  if (n != ir::OpId::Neg && n != ir::OpId::Not) return false;
  Op* inner = op->operand(0)->definingOp();
  if (!inner || !inner->is(n)) return false;
  replaceOp(op, {inner->operand(0)});
  return true;
}

// select c, x, y with constant c -> x or y; select c, x, x -> x.
bool simplifySelect(Op* op) {
  if (!op->is(ir::OpId::Select)) return false;
  if (op->operand(1) == op->operand(2)) return replaceOp(op, {op->operand(1)}), true;
  const ir::Attr* c = constantAttr(op->operand(0));
  if (!c || c->kind != ir::Attr::Kind::Bool) return false;
  replaceOp(op, {op->operand(c->b ? 1 : 2)});
  return true;
}

// if with a constant condition -> the ops of the taken region, in place.
bool inlineConstantIf(Op* op) {
  if (!op->is(ir::OpId::If)) return false;
  const ir::Attr* c = constantAttr(op->operand(0));
  if (!c || c->kind != ir::Attr::Kind::Bool) return false;
  Region& taken = op->region(c->b ? 0 : 1);
  Op* yield = taken.terminator();
  if (!yield || !yield->is(ir::OpId::Yield)) return false;
  while (taken.front() != yield) op->parentRegion()->insertBefore(op, taken.front()->unlink());
  std::vector<Value*> values = yield->operands();
  yield->dropAllOperands();
  replaceOp(op, values);
  return true;
}

bool simplify(Op* op) {
  return inlineConstantIf(op) || foldConstants(op) || constantsToTheRight(op) ||
         arithmeticIdentities(op) || divRemByPowerOfTwo(op) || bitwiseIdentities(op) ||
         doubleNegation(op) || simplifySelect(op);
}

// One sweep over a region and everything nested in it.
bool sweep(Region& region) {
  bool changed = false;
  for (auto it = region.ops().begin(); it != region.ops().end();) {
    Op* op = (it++)->get();
    for (unsigned r = 0; r < op->numRegions(); ++r) changed |= sweep(op->region(r));
    // Only op itself is erased here; new ops go before it: `it` stays valid.
    changed |= simplify(op);
  }
  return changed;
}

bool runCanonicalize(ir::Module& m, Diagnostics&) {
  constexpr int kMaxSweeps = 64;  // every rewrite shrinks or reorders; this is a safety net
  bool changed = false;
  for (auto& fn : m.functions()) {
    for (int i = 0; i < kMaxSweeps && sweep(fn->body()); ++i) changed = true;
    changed |= eraseUnusedConstants(fn->body());
  }
  return changed;
}

}  // namespace

Pass canonicalizePass() {
  return Pass{"canonicalize", "fold constants (via the interpreter) and apply algebraic identities",
              runCanonicalize};
}

}  // namespace eph::passes
