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

// Whether `v` is the result of a `global_id` in dimension `dim`.
inline bool isGlobalId(const ir::Value* v, int64_t dim) {
  const ir::Op* d = v->definingOp();
  return d && d->is(ir::OpId::GlobalId) && d->attr("dim") && d->intAttr("dim") == dim;
}

// Erases, until none is left, the effect-free ops without regions whose
// results nothing uses (what a rewrite left behind).
inline void eraseUnusedValues(ir::Function& f) {
  for (bool again = true; again;) {
    again = false;
    f.walk([&](ir::Op* op) {
      std::vector<ir::Value*> rs = op->results();
      if (rs.empty() || !isEffectFree(*op) || op->numRegions()) return;
      for (const ir::Value* r : rs)
        if (!r->uses().empty()) return;
      op->erase();
      again = true;
    });
  }
}

}  // namespace eph::passes
