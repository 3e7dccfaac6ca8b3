// inline: replaces calls to non-recursive functions by the callee's body.
//
// A call to @f is inlined when @f cannot reach itself through calls (directly
// or through other functions). The callee body is cloned in front of the call
// with its parameters mapped to the call's arguments (cloned ops keep their
// locations), the call's results are replaced by the values the body returns,
// and the call is erased. Calls inside nested regions are inlined too, and so
// are calls that inlining brings in. Recursive calls stay; no function is
// removed. A call is also kept when inlining would not verify: the callee
// returns one of its parameters under a different type (a borrowed buffer
// handed back to the caller), it holds a workgroup.alloc and the call is
// not at the top level of its function, or it is generic (its type variables
// mean nothing in the caller: run monomorphize first).
#include <map>
#include <set>
#include <vector>

#include "ir/OpTable.h"
#include "ir/ops/TypeVars.h"
#include "passes/PassManager.h"

namespace eph::passes {
namespace {

using ir::Function;
using ir::Op;
using ir::Value;

const Function* calleeOf(const Op& call) {
  const ir::Attr* a = call.attr("callee");
  if (!a || a->kind != ir::Attr::Kind::Symbol) return nullptr;
  return call.parentFunction()->module()->lookup(a->s);
}

// Functions each function calls directly.
std::map<const Function*, std::set<const Function*>> callGraph(ir::Module& m) {
  std::map<const Function*, std::set<const Function*>> graph;
  for (auto& fn : m.functions()) {
    auto& callees = graph[fn.get()];
    fn->walk([&](Op* op) {
      if (!op->is(ir::OpId::Call)) return;
      if (const Function* c = calleeOf(*op)) callees.insert(c);
    });
  }
  return graph;
}

// Functions that can reach themselves through calls.
std::set<const Function*> recursiveFunctions(ir::Module& m) {
  auto graph = callGraph(m);
  std::set<const Function*> recursive;
  for (auto& [start, direct] : graph) {
    std::set<const Function*> seen;
    std::vector<const Function*> work(direct.begin(), direct.end());
    while (!work.empty()) {
      const Function* f = work.back();
      work.pop_back();
      if (f == start) {
        recursive.insert(start);
        break;
      }
      if (!seen.insert(f).second) continue;
      auto& next = graph[f];
      work.insert(work.end(), next.begin(), next.end());
    }
  }
  return recursive;
}

bool hasWorkgroupAlloc(const Function& f) {
  bool found = false;
  const_cast<Function&>(f).walk([&](Op* op) { found |= op->is(ir::OpId::WorkgroupAlloc); });
  return found;
}

bool canInline(const Op& call, const Function& callee) {
  if (ir::isGeneric(callee)) return false;
  const Op* ret = callee.body().terminator();
  if (!ret || !ret->is(ir::OpId::Return) || ret->numOperands() != call.numResults()) return false;
  for (unsigned i = 0; i < ret->numOperands(); ++i) {
    const Value* v = ret->operand(i);
    if (v->isArgument() && v->parentRegion() == &callee.body() &&
        call.operand(v->index())->type() != call.result(i)->type())
      return false;
  }
  if (call.parentOp() && hasWorkgroupAlloc(callee)) return false;
  return true;
}

// Clones the callee body before `call`; returns the ops that are calls among
// the clones, so that they can be inlined in turn.
std::vector<Op*> inlineCall(Op* call, const Function& callee) {
  std::map<const Value*, Value*> map;
  for (unsigned i = 0; i < call->numOperands(); ++i) map[callee.param(i)] = call->operand(i);
  std::vector<Op*> newCalls;
  const Op* ret = callee.body().terminator();
  for (auto& op : callee.body().ops()) {
    if (op.get() == ret) break;
    Op* clone = call->parentRegion()->insertBefore(call, op->clone(map));
    clone->walk([&](Op* o) {
      if (o->is(ir::OpId::Call)) newCalls.push_back(o);
    });
  }
  for (unsigned i = 0; i < call->numResults(); ++i) {
    Value* v = ret->operand(i);
    auto it = map.find(v);
    call->result(i)->replaceAllUsesWith(it == map.end() ? v : it->second);
  }
  call->erase();
  return newCalls;
}

bool runInline(ir::Module& m, Diagnostics&) {
  std::set<const Function*> recursive = recursiveFunctions(m);
  bool changed = false;
  for (auto& fn : m.functions()) {
    std::vector<Op*> work;
    fn->walk([&](Op* op) {
      if (op->is(ir::OpId::Call)) work.push_back(op);
    });
    while (!work.empty()) {
      Op* call = work.back();
      work.pop_back();
      const Function* callee = calleeOf(*call);
      if (!callee || callee == fn.get() || recursive.count(callee) || !canInline(*call, *callee))
        continue;
      for (Op* c : inlineCall(call, *callee)) work.push_back(c);
      changed = true;
    }
  }
  return changed;
}

}  // namespace

Pass inlinePass() {
  return Pass{"inline", "inline calls to functions that are not (mutually) recursive", runInline};
}

}  // namespace eph::passes
