// Host heap cells: `box.new` puts a value in a fresh immutable cell and gives
// back a `box` (an opaque, copyable handle); `box.get` reads the value back,
// naming the type it expects. A box holds any value that owns nothing (no
// buffers, nothing linear or affine), so copying a box never duplicates an
// owner and the linearity pass has nothing to track. Frontends use boxes for
// recursive data types: the IR has no recursive types, so the recursive
// occurrence becomes a box. Host code only: kernels and device functions
// neither run these ops nor hold box values (the verifier says so).
#include "ir/ops/Rules.h"
#include "ir/interp/Exec.h"

namespace eph::ir {
namespace {
using namespace rules;

// Does `t` hold a buffer anywhere (a box may not: a borrow would outlive its
// lender, and an owner would be duplicated by copying the box)?
bool holdsBuffer(const Type* t) {
  switch (t->kind()) {
    case TypeKind::Buffer: return true;
    case TypeKind::Vector:
    case TypeKind::Array: return holdsBuffer(t->elem());
    case TypeKind::Struct:
    case TypeKind::Sum:
      for (const Type* m : t->members())
        if (holdsBuffer(m)) return true;
      return false;
    default: return false;
  }
}

std::string boxable(const Type* t, const char* what) {
  if (t->isLinear() || t->isAffine())
    return std::string(what) + " " + typeStr(t) + " owns a buffer; a box is copied freely, so it " +
           "may hold only values that own nothing";
  if (holdsBuffer(t))
    return std::string(what) + " " + typeStr(t) + " holds a buffer; a box may hold only values " +
           "without buffers";
  return {};
}

std::string verifyBoxNew(const Op& op) {
  if (!resultType(op)->isBox()) return "result must be 'box', got " + typeStr(resultType(op));
  return boxable(operandType(op, 0), "the boxed value of type");
}

std::string verifyBoxGet(const Op& op) {
  if (!operandType(op, 0)->isBox()) return "operand must be a 'box', got " + typeStr(operandType(op, 0));
  return boxable(resultType(op), "the result type");
}

// ---- interpreter semantics -------------------------------------------------

bool interpBoxNew(interp::Exec& ex, const Op& op) {
  interp::RtValue b;
  b.type = resultType(op);
  b.box = std::make_shared<const interp::BoxCell>(ex.operand(op, 0));
  return ex.setResult(op, std::move(b));
}

// The cell's value carries its type: reading it as another type is an error
// (a frontend bug, or hand-written IR), never a reinterpretation.
bool interpBoxGet(interp::Exec& ex, const Op& op) {
  const interp::RtValue& b = ex.operand(op, 0);
  if (!b.box) return ex.fail(op, "box.get: the box holds no value (it was never made by box.new)");
  const Type* held = b.box->value.type;
  if (held != resultType(op))
    return ex.fail(op, "box.get: the box holds a value of type " + typeStr(held) + ", read as " +
                           typeStr(resultType(op)));
  return ex.setResult(op, b.box->value);
}

const OpInfo kOps[] = {
    {.name = "box.new", .numOperands = 1, .numResults = 1, .flags = kPure | kHostOnly,
     .verify = verifyBoxNew, .interp = interpBoxNew,
     .summary = "box.new %v : box: a new immutable host heap cell holding %v (which owns no buffer)"},
    {.name = "box.get", .numOperands = 1, .numResults = 1, .flags = kPure | kHostOnly,
     .verify = verifyBoxGet, .interp = interpBoxGet,
     .summary = "box.get %b : T: the value in a box, which must have type T (else an error)"},
};

}  // namespace

void registerBoxOps(OpTable& t) { t.add(kOps); }

}  // namespace eph::ir
