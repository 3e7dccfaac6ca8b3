// linearity: every linear value is consumed exactly once on every path, every
// affine value at most once.
//
// A value is tracked when its type isLinear() (a linear buffer, or an aggregate
// holding one) or isAffine(). An operand *consumes* its value when the op table
// says so (OpInfo::effect == Consume: free, return/yield/condition of a linear
// value, a call argument for a linear parameter, struct.make of a linear part,
// the initial values of for/while/match...). Any other operand (Read, Write,
// None) borrows the value, which must still be live.
//
// The checker walks each function once, in program order, with a state that
// says for every tracked value whether it has been consumed and where.
// A view (buffer.view) is a borrow and not tracked itself, but every use of it
// needs the tracked buffer it views (through views of views) to be live. Nested
// regions are checked on a copy of the state; what flows back depends on the
// kind of region (branches of if/match, bodies of for/while). Each rule below
// is one small function with the rule written beside it. Errors carry the
// location of the offending op and name the value's definition site; all
// independent errors of a function are reported.
#include <unordered_map>
#include <vector>

#include "ir/OpTable.h"
#include "passes/PassManager.h"

namespace eph::passes {
namespace {

using ir::Op;
using ir::Region;
using ir::Value;

// ---- facts about values ------------------------------------------------------

bool isTracked(const Value* v) { return v->type()->isLinear() || v->type()->isAffine(); }

// "linear" or "affine", for messages.
const char* kindOf(const Value* v) { return v->type()->isLinear() ? "linear" : "affine"; }

// Where a value comes from: its op, the op owning its region, or the function.
Loc definitionLoc(const Value* v) {
  if (const Op* def = v->definingOp()) return def->loc();
  const Region* r = v->parentRegion();
  if (const Op* owner = r->parentOp()) return owner->loc();
  return r->parentFunction()->loc();
}

std::string nameOf(const Value* v) {
  if (!v->name().empty()) return "%" + v->name();
  if (const Op* def = v->definingOp())
    return "result " + std::to_string(v->index()) + " of '" + std::string(def->name()) + "'";
  return "argument " + std::to_string(v->index());
}

// "linear value %b (defined at f.eir:3:5)"
std::string describe(const Value* v) {
  return std::string(kindOf(v)) + " value " + nameOf(v) + " (defined at " + definitionLoc(v).str() +
         ")";
}

// ---- the state ---------------------------------------------------------------

struct Tracked {
  const Value* value;
  unsigned loopDepth;  // loops around the definition
  bool consumed = false;
  Loc consumedAt;
};

// Every tracked value defined so far on the current path, in definition order.
struct State {
  std::vector<Tracked> values;
  std::unordered_map<const Value*, size_t> index;

  Tracked* find(const Value* v) {
    auto it = index.find(v);
    return it == index.end() ? nullptr : &values[it->second];
  }
  void define(const Value* v, unsigned loopDepth) {
    index[v] = values.size();
    values.push_back(Tracked{v, loopDepth});
  }
  // Forget values defined after the first `n` (those of a nested region).
  void truncate(size_t n) {
    for (size_t i = n; i < values.size(); ++i) index.erase(values[i].value);
    values.resize(n);
  }
};

// ---- the checker -------------------------------------------------------------

class Checker {
 public:
  explicit Checker(Diagnostics& diag) : diag_(diag) {}

  void checkFunction(ir::Function& fn) {
    State s;
    checkRegion(fn.body(), s, /*loopDepth=*/0);
  }

 private:
  Diagnostics& diag_;

  // A region: its arguments are defined on entry, its ops run in order, and the
  // values it defines must be consumed before it ends.
  void checkRegion(Region& region, State& s, unsigned loopDepth) {
    size_t base = s.values.size();
    for (Value* arg : region.args())
      if (isTracked(arg)) s.define(arg, loopDepth);
    for (auto& op : region.ops()) checkOp(*op, s, loopDepth);
    ruleNoLeak(s, base);
  }

  void checkOp(Op& op, State& s, unsigned loopDepth) {
    for (unsigned i = 0; i < op.numOperands(); ++i) {
      Tracked* t = s.find(op.operand(i));
      if (!t) {
        ruleViewNeedsLiveBuffer(op, op.operand(i), s);
        continue;
      }
      bool consumes = op.info().effect(op, i) == ir::Effect::Consume;
      if (consumes) {
        if (!ruleConsumeOnce(op, *t)) continue;
        ruleLoopBodyConsumesOnlyItsOwn(op, *t, loopDepth);
        t->consumed = true;
        t->consumedAt = op.loc();
      } else {
        ruleBorrowNeedsLiveValue(op, *t);
      }
    }
    if (op.numRegions() > 0) {
      if (op.info().regionKind == ir::RegionKind::Branches) checkBranches(op, s, loopDepth);
      else checkLoop(op, s, loopDepth);
    }
    for (Value* r : op.results())
      if (isTracked(r)) s.define(r, loopDepth);
    if (op.is(ir::OpId::BufferView)) {
      auto parent = viewed_.find(op.operand(0));
      viewed_[op.result(0)] = parent == viewed_.end() ? op.operand(0) : parent->second;
    }
  }

  // The buffer each view (buffer.view result) views: the first buffer that is
  // not itself a view.
  std::unordered_map<const Value*, const Value*> viewed_;

  // ---- rules -----------------------------------------------------------------

  // DOUBLE CONSUME. A consumed value is gone: consuming it again is an error
  // at the second consumer, naming the first. (The value stays consumed.)
  bool ruleConsumeOnce(const Op& op, const Tracked& t) {
    if (!t.consumed) return true;
    diag_.error(op.loc(), describe(t.value) + " consumed twice: first at " + t.consumedAt.str(), "L001");
    return false;
  }

  // USE AFTER CONSUME. Reading or writing through a value (or passing it where
  // nothing is consumed) needs the value to be live at that point.
  void ruleBorrowNeedsLiveValue(const Op& op, const Tracked& t) {
    if (!t.consumed) return;
    diag_.error(op.loc(), "use of " + describe(t.value) + " after it was consumed at " +
                              t.consumedAt.str(), "L002");
  }

  // VIEW OF A CONSUMED BUFFER. A view borrows the buffer it views: using the
  // view after that buffer was consumed (freed, moved) is a use after consume.
  void ruleViewNeedsLiveBuffer(const Op& op, const Value* v, State& s) {
    auto it = viewed_.find(v);
    Tracked* t = it == viewed_.end() ? nullptr : s.find(it->second);
    if (!t || !t->consumed) return;
    diag_.error(op.loc(), "use of view " + nameOf(v) + " (defined at " + definitionLoc(v).str() +
                              ") of " + describe(t->value) + " after it was consumed at " +
                              t->consumedAt.str(), "L006");
  }

  // LOOP. A loop body runs any number of times, so it may consume only values
  // defined inside the body (its arguments included): consuming a value from
  // outside the loop would consume it once per iteration.
  void ruleLoopBodyConsumesOnlyItsOwn(const Op& op, const Tracked& t, unsigned loopDepth) {
    if (t.loopDepth >= loopDepth) return;
    diag_.error(op.loc(), describe(t.value) +
                              " is defined outside the loop but consumed inside its body; it "
                              "would be consumed on every iteration (pass it as a loop-carried "
                              "value instead)", "L003");
  }

  // LEAK. A linear value defined in a region must be consumed before the region
  // ends (yielding or returning it consumes it). Affine values may be dropped.
  void ruleNoLeak(const State& s, size_t base) {
    for (size_t i = base; i < s.values.size(); ++i) {
      const Tracked& t = s.values[i];
      if (t.consumed || !t.value->type()->isLinear()) continue;
      diag_.error(definitionLoc(t.value), "linear value " + nameOf(t.value) + " defined at " +
                                              definitionLoc(t.value).str() +
                                              " is never consumed", "L004");
    }
  }

  // BRANCHES AGREE. Only one branch of an if/match runs, so every branch must
  // consume the same outer linear values; otherwise the value leaks on the
  // paths through the branches that do not consume it. (Affine values may be
  // consumed in some branches only.) Afterwards the value counts as consumed.
  void ruleBranchesAgree(const Op& op, const std::vector<State>& branches, State& s,
                         size_t outer) {
    for (size_t i = 0; i < outer; ++i) {
      Tracked& t = s.values[i];
      if (t.consumed) continue;
      int consumer = -1, keeper = -1;
      for (size_t b = 0; b < branches.size(); ++b) {
        bool c = branches[b].values[i].consumed;
        if (c && consumer < 0) consumer = static_cast<int>(b);
        if (!c && keeper < 0) keeper = static_cast<int>(b);
      }
      if (consumer < 0) continue;  // no branch consumes it
      if (keeper >= 0 && t.value->type()->isLinear())
        diag_.error(op.loc(), describe(t.value) + " is consumed in the " +
                                  branchName(op, consumer) + " but not in the " +
                                  branchName(op, keeper), "L005");
      t.consumed = true;
      t.consumedAt = branches[consumer].values[i].consumedAt;
    }
  }

  // ---- regions ----------------------------------------------------------------

  static std::string branchName(const Op& op, int b) {
    if (op.is(ir::OpId::If)) return b == 0 ? "then-branch" : "else-branch";
    return "branch for variant " + std::to_string(b);
  }

  // if/match: each branch starts from the state before the op; afterwards the
  // branches must agree on the outer values they consumed.
  void checkBranches(Op& op, State& s, unsigned loopDepth) {
    size_t outer = s.values.size();
    std::vector<State> branches;
    for (unsigned r = 0; r < op.numRegions(); ++r) {
      State b = s;
      checkRegion(op.region(r), b, loopDepth);
      b.truncate(outer);
      branches.push_back(std::move(b));
    }
    ruleBranchesAgree(op, branches, s, outer);
  }

  // for/while (and any other op with regions): each region is a loop body one
  // level deeper. Outer values it consumed were reported by the LOOP rule; they
  // count as consumed afterwards so that no leak is reported for them too.
  void checkLoop(Op& op, State& s, unsigned loopDepth) {
    size_t outer = s.values.size();
    for (unsigned r = 0; r < op.numRegions(); ++r) {
      State body = s;
      checkRegion(op.region(r), body, loopDepth + 1);
      for (size_t i = 0; i < outer; ++i)
        if (body.values[i].consumed && !s.values[i].consumed) s.values[i] = body.values[i];
    }
  }
};

bool runLinearity(ir::Module& m, Diagnostics& diag) {
  for (auto& fn : m.functions()) Checker(diag).checkFunction(*fn);
  return false;
}

}  // namespace

Pass linearityPass() {
  return Pass{"linearity",
              "check that every linear value is consumed exactly once on every path "
              "(affine: at most once)",
              runLinearity};
}

}  // namespace eph::passes
