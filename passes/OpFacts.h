// Small questions about ops that several passes ask: may it be removed or
// merged, is its result a known constant. Answers come from the op table
// (flags and per-operand effects), never from op names, except for `const`.
#pragma once

#include "ir/OpTable.h"

namespace eph::passes {

// The op takes ownership of an operand (Effect::Consume) or produces a value
// that must be consumed (linear or affine). Removing, merging or duplicating
// such an op changes who owns what, so the generic passes leave it alone.
inline bool movesOwnership(const ir::Op& op) {
  for (unsigned i = 0; i < op.numOperands(); ++i)
    if (op.info().effect(op, i) == ir::Effect::Consume) return true;
  for (unsigned i = 0; i < op.numResults(); ++i) {
    const ir::Type* t = op.result(i)->type();
    if (t->isLinear() || t->isAffine()) return true;
  }
  return false;
}

// The op and everything nested in it only compute values or read memory: no
// writes, no barriers, no calls, no ownership moves. Terminators count as
// effect-free (they only hand values to their parent).
inline bool isEffectFree(const ir::Op& op) {
  const ir::OpInfo& info = op.info();
  bool local = info.has(ir::kPure) || info.has(ir::kReadOnly) ||
               (info.has(ir::kTerminator) && info.id != ir::OpId::Return) || op.numRegions() > 0;
  if (!local || info.has(ir::kBarrier) || info.id == ir::OpId::Call || movesOwnership(op)) return false;
  for (unsigned r = 0; r < op.numRegions(); ++r)
    for (auto& inner : op.region(r).ops())
      if (!isEffectFree(*inner)) return false;
  return true;
}

// The op that defines `v` when it is a `const`, else null.
inline const ir::Op* constantOp(const ir::Value* v) {
  const ir::Op* def = v->definingOp();
  return def && def->is(ir::OpId::Const) ? def : nullptr;
}

// The `value` attribute of a `const` result, else null.
inline const ir::Attr* constantAttr(const ir::Value* v) {
  const ir::Op* def = constantOp(v);
  return def ? def->attr("value") : nullptr;
}

}  // namespace eph::passes
