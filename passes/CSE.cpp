// cse: common subexpression elimination over pure ops.
//
// Two ops are the same expression when they have the same name, operands,
// attributes and result types (for commutative ops, operands in either order).
// The later one is replaced by the earlier one. Scoping follows dominance in
// structured control flow: an op may reuse an equal op that comes before it in
// its own region or in an enclosing region, never one inside a sibling or a
// nested region. Only kPure ops without regions are merged, and never ops that
// move ownership of linear/affine values (merging would change the count of
// consumptions). Loads, atomics, workgroup.alloc and calls are not pure.
#include <map>
#include <vector>

#include "passes/OpFacts.h"
#include "passes/PassManager.h"

namespace eph::passes {
namespace {

using ir::Op;
using ir::Region;
using ir::Value;

bool isCandidate(const Op& op) {
  return op.info().has(ir::kPure) && op.numRegions() == 0 && op.numResults() > 0 &&
         !movesOwnership(op);
}

// What two equal ops share cheaply; the rest (attributes, result types) is
// compared when keys collide.
struct Key {
  const ir::OpInfo* info;
  std::vector<Value*> operands;
  bool operator<(const Key& o) const {
    return info != o.info ? info < o.info : operands < o.operands;
  }
};

Key keyOf(const Op& op) {
  Key k{&op.info(), op.operands()};
  // a + b and b + a are the same expression.
  if (op.info().has(ir::kCommutative) && k.operands.size() == 2 && k.operands[1] < k.operands[0])
    std::swap(k.operands[0], k.operands[1]);
  return k;
}

bool sameExpression(const Op& a, const Op& b) {
  if (a.attrs() != b.attrs() || a.numResults() != b.numResults()) return false;
  for (unsigned i = 0; i < a.numResults(); ++i)
    if (a.result(i)->type() != b.result(i)->type()) return false;
  return true;
}

// One map per open region; lookups search from the innermost outwards.
class ScopedTable {
 public:
  void push() { scopes_.emplace_back(); }
  void pop() { scopes_.pop_back(); }
  Op* find(const Op& op) const {
    Key k = keyOf(op);
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
      auto it = s->find(k);
      if (it == s->end()) continue;
      for (Op* candidate : it->second)
        if (sameExpression(*candidate, op)) return candidate;
    }
    return nullptr;
  }
  void insert(Op* op) { scopes_.back()[keyOf(*op)].push_back(op); }

 private:
  std::vector<std::map<Key, std::vector<Op*>>> scopes_;
};

bool cseRegion(Region& region, ScopedTable& table) {
  bool changed = false;
  table.push();
  for (auto it = region.ops().begin(); it != region.ops().end();) {
    Op* op = (it++)->get();
    for (unsigned r = 0; r < op->numRegions(); ++r) changed |= cseRegion(op->region(r), table);
    if (!isCandidate(*op)) continue;
    if (Op* earlier = table.find(*op)) {
      for (unsigned i = 0; i < op->numResults(); ++i)
        op->result(i)->replaceAllUsesWith(earlier->result(i));
      op->erase();
      changed = true;
    } else {
      table.insert(op);
    }
  }
  table.pop();
  return changed;
}

bool runCSE(ir::Module& m, Diagnostics&) {
  bool changed = false;
  for (auto& fn : m.functions()) {
    ScopedTable table;
    changed |= cseRegion(fn->body(), table);
  }
  return changed;
}

}  // namespace

Pass csePass() {
  return Pass{"cse", "merge identical pure ops (an op may reuse one from an enclosing region)",
              runCSE};
}

}  // namespace eph::passes
