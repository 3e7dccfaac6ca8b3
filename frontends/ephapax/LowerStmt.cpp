// Lowering of Ephapax statements: the analyses the lowering of `var`,
// assignment, `if`, `for` and `while` needs (Lower.cpp builds the IR).
//
// A `var` is an SSA value re-bound by each assignment; a branch or loop that
// assigns a `var` declared outside it carries the var's value out as one of
// its results (a yielded value of `if`/`match`, a loop-carried value of
// `for`/`while`). assignedVars() finds those vars.
#include "frontends/ephapax/Lower.h"

namespace eph::ephapax::lowering {

void forEachChild(const Expr& e, const std::function<void(const Expr&)>& f) {
  for (const auto& k : e.kids)
    if (k) f(*k);
  for (const auto& g : e.grid)
    if (g) f(*g);
  for (const Arm& a : e.arms) {
    if (a.guard) f(*a.guard);
    if (a.body) f(*a.body);
  }
}

void assignedVars(const Expr& e, std::set<const Binding*>& out) {
  if (e.kind == ExprKind::Assign && e.binding) out.insert(e.binding);
  // A lambda or an inline kernel cannot assign the host's vars (the checker
  // rejects it); their bodies are separate functions.
  if (e.kind == ExprKind::Lambda || (e.kind == ExprKind::Dispatch && e.name.empty())) return;
  forEachChild(e, [&](const Expr& k) { assignedVars(k, out); });
}

bool containsReturn(const Expr& e) {
  if (e.kind == ExprKind::Return) return true;
  if (e.kind == ExprKind::Lambda || e.kind == ExprKind::Dispatch) return false;
  bool found = false;
  forEachChild(e, [&](const Expr& k) { found = found || containsReturn(k); });
  return found;
}

}  // namespace eph::ephapax::lowering
