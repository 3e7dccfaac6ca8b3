// dce: dead code elimination.
//
// An op is dead when none of its results is used and removing it cannot be
// observed: it is pure or only reads memory (kPure / kReadOnly), or it is a
// structured op (if/for/while/match) whose nested ops are all such ops (see
// isEffectFree). Ops that move ownership of linear/affine values are kept:
// dropping one would turn a consumption into a leak. Regions are swept from the
// last op backwards, so a chain of dead ops goes in one sweep; the pass repeats
// until nothing changes.
#include "passes/OpFacts.h"
#include "passes/PassManager.h"

namespace eph::passes {
namespace {

using ir::Op;
using ir::Region;

bool hasUsedResult(const Op& op) {
  for (unsigned i = 0; i < op.numResults(); ++i)
    if (op.result(i)->hasUses()) return true;
  return false;
}

bool isDead(const Op& op) {
  if (op.info().has(ir::kTerminator) || hasUsedResult(op)) return false;
  if (op.numRegions() > 0) return isEffectFree(op);
  return (op.info().has(ir::kPure) || op.info().has(ir::kReadOnly)) && !movesOwnership(op);
}

bool sweepRegion(Region& region) {
  bool changed = false;
  Op* op = region.back();
  while (op) {
    Op* prev = op->prevOp();
    for (unsigned r = 0; r < op->numRegions(); ++r) changed |= sweepRegion(op->region(r));
    if (isDead(*op)) {
      op->erase();
      changed = true;
    }
    op = prev;
  }
  return changed;
}

bool runDCE(ir::Module& m, Diagnostics&) {
  bool changed = false;
  for (auto& fn : m.functions())
    while (sweepRegion(fn->body())) changed = true;
  return changed;
}

}  // namespace

Pass dcePass() {
  return Pass{"dce", "remove unused pure and read-only ops, and effect-free unused if/for/while/match",
              runDCE};
}

}  // namespace eph::passes
