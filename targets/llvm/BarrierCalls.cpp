// Inlining calls to device functions with barriers before the cpu lowering
// (BarrierCalls.h). The inlining is the inline pass's (passes/Inline.cpp):
// the callee's body is cloned before the call with its parameters mapped to
// the call's arguments, and the call's results become the returned values.
#include "targets/llvm/BarrierCalls.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/OpTable.h"

namespace eph::llvmtarget {
namespace {

using Origins = std::unordered_map<const ir::Op*, const ir::Op*>;

// Inlining deeper than this is a call cycle (the verifier refuses them).
constexpr unsigned kMaxDepth = 256;

// The callee of a direct call, or "" for any other op.
std::string calleeOf(const ir::Op& op) {
  const ir::Attr* a = op.is(ir::OpId::Call) ? op.attr("callee") : nullptr;
  return a && a->kind == ir::Attr::Kind::Symbol ? a->s : "";
}

// Device functions that hold a barrier, directly or through their calls.
std::set<std::string> barrierFunctions(const ir::Module& m) {
  std::set<std::string> found;
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& f : m.functions()) {
      if (f->kind() != ir::FunctionKind::Device || found.count(f->name())) continue;
      bool has = false;
      const_cast<ir::Function&>(*f).walk([&](ir::Op* op) {
        has = has || op->info().has(ir::kBarrier) || found.count(calleeOf(*op));
      });
      if (has) changed = found.insert(f->name()).second;
    }
  }
  return found;
}

// Records that each op of `copy` (nested ones included) comes from the
// matching op of `from`, or from what that op came from.
void recordOrigins(const ir::Op& from, ir::Op& copy, Origins& origin) {
  std::vector<ir::Op*> a, b;
  const_cast<ir::Op&>(from).walk([&](ir::Op* o) { a.push_back(o); });
  copy.walk([&](ir::Op* o) { b.push_back(o); });
  for (size_t i = 0; i < b.size(); ++i) {
    auto it = origin.find(a[i]);
    origin[b[i]] = it == origin.end() ? a[i] : it->second;
  }
}

std::unique_ptr<ir::Module> copyModule(const ir::Module& m, Origins& origin) {
  auto copy = std::make_unique<ir::Module>(m.context());
  copy->sourceName = m.sourceName;
  for (const auto& f : m.functions()) {
    ir::Function* g = copy->addFunction(f->name(), f->kind(), f->type(), f->loc());
    g->workgroupSize = f->workgroupSize;
    g->attrs = f->attrs;
    std::map<const ir::Value*, ir::Value*> map;
    for (unsigned i = 0; i < f->body().numArgs(); ++i) {
      g->param(i)->setName(f->param(i)->name());
      map[f->param(i)] = g->param(i);
    }
    for (const auto& op : f->body().ops()) recordOrigins(*op, *g->body().append(op->clone(map)), origin);
  }
  return copy;
}

// Inlines the calls in `kernel` to the functions named in `callees`,
// and those that inlining brings in.
void inlineCalls(ir::Function& kernel, const std::set<std::string>& callees, Origins& origin) {
  std::vector<std::pair<ir::Op*, unsigned>> work;  // a call and how deep in inlined code it is
  auto collect = [&](unsigned depth) {
    return [&work, &callees, depth](ir::Op* op) {
      if (callees.count(calleeOf(*op))) work.emplace_back(op, depth);
    };
  };
  kernel.walk(collect(0));
  while (!work.empty()) {
    auto [call, depth] = work.back();
    work.pop_back();
    const ir::Function* callee = kernel.module()->lookup(calleeOf(*call));
    const ir::Op* ret = callee->body().terminator();
    if (depth >= kMaxDepth || !ret || !ret->is(ir::OpId::Return) || ret->numOperands() != call->numResults())
      continue;  // left as a call: lowering it reports the error
    std::map<const ir::Value*, ir::Value*> map;
    for (unsigned i = 0; i < call->numOperands(); ++i) map[callee->param(i)] = call->operand(i);
    for (const auto& op : callee->body().ops()) {
      if (op.get() == ret) break;
      ir::Op* clone = call->parentRegion()->insertBefore(call, op->clone(map));
      recordOrigins(*op, *clone, origin);
      clone->walk(collect(depth + 1));
    }
    for (unsigned i = 0; i < call->numResults(); ++i) {
      auto it = map.find(ret->operand(i));
      call->result(i)->replaceAllUsesWith(it == map.end() ? ret->operand(i) : it->second);
    }
    origin.erase(call);
    call->erase();
  }
}

}  // namespace

std::optional<BarrierInlined> inlineBarrierCalls(const ir::Module& m) {
  std::set<std::string> callees = barrierFunctions(m);
  bool needed = false;
  for (const auto& f : m.functions())
    if (f->isKernel())
      const_cast<ir::Function&>(*f).walk([&](ir::Op* op) {
        needed = needed || callees.count(calleeOf(*op));
      });
  if (!needed) return std::nullopt;
  BarrierInlined out;
  out.module = copyModule(m, out.origin);
  for (const auto& f : out.module->functions())
    if (f->isKernel()) inlineCalls(*f, callees, out.origin);
  return out;
}

}  // namespace eph::llvmtarget
