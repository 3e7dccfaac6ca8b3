// Host heap cells: `box.new` puts a value in a fresh immutable cell and gives
// back a `box` (an opaque, copyable handle); `box.get` reads the value back,
// naming the type it expects. A box holds any value that owns nothing (no
// buffers, nothing linear or affine), so copying a box never duplicates an
// owner and the linearity pass has nothing to track. Frontends use boxes for
// recursive data types: the IR has no recursive types, so the recursive
// occurrence becomes a box.
//
// A box may also own one host buffer of such values (buffer<T, host, affine>,
// consumed by box.new): the cell keeps it, unchanged, until the run ends, and
// box.get reads it only as a read view (buffer<T, host, read>), so no copy of
// the box can free or write it. Frontends use this for immutable copyable
// arrays (Ephapax lists) that outlive the scope that made them.
//
// Host code only: kernels and device functions neither run these ops nor
// hold box values (the verifier says so).
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
           "may hold only values that own nothing (or own one host buffer<T, host, affine> of them)";
  if (holdsBuffer(t))
    return std::string(what) + " " + typeStr(t) + " holds a buffer; a box may hold only values " +
           "without buffers (or own one host buffer<T, host, affine> of them)";
  return {};
}

// A host buffer of boxable elements with the given ownership.
bool hostBufferOf(const Type* t, Ownership own) {
  return t->isBuffer() && t->space() == Space::Host && t->ownership() == own && boxable(t->elem(), "").empty();
}

std::string verifyBoxNew(const Op& op) {
  if (!resultType(op)->isBox()) return "result must be 'box', got " + typeStr(resultType(op));
  if (hostBufferOf(operandType(op, 0), Ownership::Affine)) return {};
  return boxable(operandType(op, 0), "the boxed value of type");
}

std::string verifyBoxGet(const Op& op) {
  if (!operandType(op, 0)->isBox()) return "operand must be a 'box', got " + typeStr(operandType(op, 0));
  if (hostBufferOf(resultType(op), Ownership::Read)) return {};
  return boxable(resultType(op), "the result type");
}

// box.new takes ownership of a buffer it boxes.
Effect consumeOwned(const Op& op, unsigned i) {
  const Type* t = op.operand(i)->type();
  return t->isLinear() || t->isAffine() ? Effect::Consume : Effect::None;
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
  const Type* want = resultType(op);
  if (want->isBuffer() && held->isBuffer() && held->elem() == want->elem() && held->space() == want->space() &&
      held->ownership() == Ownership::Affine && want->ownership() == Ownership::Read) {
    interp::RtValue view = b.box->value;
    view.type = want;
    return ex.setResult(op, std::move(view));
  }
  if (held != want)
    return ex.fail(op, "box.get: the box holds a value of type " + typeStr(held) + ", read as " +
                           typeStr(resultType(op)));
  return ex.setResult(op, b.box->value);
}

OpInfo kOps[] = {
    {.name = "box.new", .numOperands = 1, .numResults = 1, .flags = kPure | kHostOnly,
     .effectFn = consumeOwned, .verify = verifyBoxNew, .interp = interpBoxNew,
     .summary = "box.new %v : box: a new immutable host heap cell holding %v (which owns no buffer, "
                "or is a host buffer of such values that the cell keeps)"},
    {.name = "box.get", .numOperands = 1, .numResults = 1, .flags = kPure | kHostOnly,
     .verify = verifyBoxGet, .interp = interpBoxGet,
     .summary = "box.get %b : T: the value in a box, which must have type T (else an error); a boxed "
                "buffer<T, host, affine> is read as buffer<T, host, read>"},
};

}  // namespace

void registerBoxOps(OpTable& t) { t.add(kOps); }

const Type* boxCellType(Context& ctx, const Type* readAs) {
  if (readAs->isBuffer() && readAs->space() == Space::Host && readAs->ownership() == Ownership::Read)
    return ctx.bufferType(readAs->elem(), Space::Host, Ownership::Affine);
  return readAs;
}

}  // namespace eph::ir
