// fuse: producer-consumer fusion of pointwise kernels through a temporary.
//
// In a host function, a dispatch D1 of a pointwise kernel K1 writing a
// temporary %t, followed by a dispatch D2 of a pointwise kernel K2 that reads
// %t, becomes one dispatch of a new kernel that computes K1's element where
// K2 loads it: %t is never allocated, written or read again.
//
// Pointwise (both kernels): workgroups of (W, 1, 1); the body is pure
// top-level ops (a `global_id` in x, consts, `buffer.len`, arithmetic), one
// `if (lt %i, buffer.len %out)` with an empty else, and `return`; inside the
// `if`, every load reads a parameter other than %out at index %i (a
// `global_id` in x), the one store writes %out at %i, and nothing writes
// memory, waits at a barrier or calls. So invocation i reads element i of its
// inputs and writes element i of %out, and nothing else.
//
// The host side: %t is an `alloc` at the top level used by exactly three
// ops: D1 (as K1's output), D2 (once, as an input K2 loads at the top level
// of its `if`) and a `free`; D2 is the next dispatch after D1 with only
// effect-free ops or allocations between them; both dispatch the same
// workgroup counts (the same values) with the same workgroup size; D2's
// output is an `alloc` whose count is the same value as %t's (so the two
// guards agree: every element K2 reads, K1 computed in the same invocation)
// and none of D1's arguments. The ownership facts make this sound: %t is
// linear, so no other op can hold it.
//
// The rewrite: a kernel named K1_K2 (with a number if taken) whose parameters
// are K1's without its output, then K2's without %t; its body is K1's and
// K2's top-level ops, then K2's `if` with K1's guarded ops (less its store)
// in front, K2's loads of %t replaced by the value K1 stored. D1, D2, %t's
// alloc and free go; kernels no dispatch names any more go. Repeats until
// nothing fuses, so a chain of n pointwise kernels becomes one.
// Siblings: a dispatch D1 of a pointwise kernel K1 and the next dispatch D2
// of a pointwise kernel K2 (only effect-free ops or allocations between),
// with the same workgroup size and counts and outputs of the same count,
// that read a buffer in common, where neither reads or writes the other's
// output (nor any view of it: nothing but D1 and D2 uses the outputs up to
// D2): one kernel computes both, K2's element inside K1's guard (the
// counts agree, so the guards do), the common buffer a parameter once and
// loaded once. It writes two outputs, so it is not pointwise and fuses no
// further. Producer-consumer fusion is tried first.
//
// `--print-after=fuse` shows the result; tests/lit/passes/fuse-*.eir pin what
// fuses and what must not.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "passes/OpFacts.h"
#include "passes/PassManager.h"

namespace eph::passes {
namespace {

using ir::Function;
using ir::Op;
using ir::OpId;
using ir::Value;

bool isGlobalIdX(const Value* v) {  // at the kernel's top level
  return isGlobalId(v, 0) && v->definingOp()->parentRegion() == &v->definingOp()->parentFunction()->body();
}

// What fusion needs to know about a pointwise kernel.
struct Pointwise {
  unsigned out = 0;      // the output parameter
  Op* guard = nullptr;   // the top-level `if`
  Op* store = nullptr;   // the one store, at the top level of the guard's then region
};

// Whether `k` is pointwise (the file comment), and its parts.
bool pointwise(const Function& k, Pointwise& pw) {
  if (!k.isKernel() || k.workgroupSize[1] != 1 || k.workgroupSize[2] != 1) return false;
  const ir::Region& body = k.body();
  for (auto& op : body.ops()) {
    if (op->is(OpId::If)) {
      if (pw.guard) return false;
      pw.guard = op.get();
    } else if (op->is(OpId::Return)) {
      if (op->numOperands()) return false;
    } else if (!isEffectFree(*op) || op->numRegions()) {
      return false;
    }
  }
  if (!pw.guard || pw.guard->numRegions() != 2) return false;
  for (auto& op : pw.guard->region(1).ops())
    if (!op->is(OpId::Yield)) return false;  // an empty else
  // The guard: lt %i, buffer.len %out.
  const Op* lt = pw.guard->operand(0)->definingOp();
  if (!lt || !lt->is(OpId::Lt) || !isGlobalIdX(lt->operand(0))) return false;
  const Op* len = lt->operand(1)->definingOp();
  if (!len || !len->is(OpId::BufferLen)) return false;
  const Value* outParam = len->operand(0);
  bool found = false;
  for (unsigned i = 0; i < k.paramTypes().size(); ++i)
    if (k.param(i) == outParam) pw.out = i, found = true;
  if (!found) return false;
  // Inside: loads of other parameters at %i, one store of %out at %i.
  bool ok = true;
  const ir::Region& then = pw.guard->region(0);
  const_cast<Op*>(pw.guard)->walk([&](Op* op) {
    if (op == pw.guard || !ok) return;
    if (op->is(OpId::Store)) {
      ok = !pw.store && op->parentRegion() == &then && op->operand(0) == outParam && isGlobalIdX(op->operand(1));
      pw.store = op;
    } else if (op->is(OpId::Load)) {
      ok = op->operand(0) != outParam && op->operand(0)->definingOp() == nullptr && isGlobalIdX(op->operand(1));
    } else if (!isEffectFree(*op)) {
      ok = false;
    }
  });
  return ok && pw.store;
}

// The count operand of the top-level `alloc` defining `v`, or null.
Value* allocCount(Value* v, const ir::Region& body) {
  Op* d = v->definingOp();
  if (!d || !d->is(OpId::Alloc) || d->parentRegion() != &body) return nullptr;
  return d->operand(0);
}

bool sameCount(Value* a, Value* b) {
  if (!a || !b) return false;
  if (a == b) return true;
  const ir::Attr* x = constantAttr(a);
  const ir::Attr* y = constantAttr(b);
  return x && y && x->kind == ir::Attr::Kind::Int && y->kind == ir::Attr::Kind::Int && x->i == y->i;
}

class Fuser {
 public:
  explicit Fuser(ir::Module& m) : m_(m) {}

  bool run() {
    bool changed = false;
    for (bool again = true; again;) {
      again = false;
      for (auto& f : m_.functions()) {
        if (!f->isHost()) continue;
        for (auto& op : f->body().ops())
          if (op->is(OpId::Dispatch) && (fuseFrom(*f, op.get()) || siblingsFrom(*f, op.get()))) {
            again = changed = true;
            break;  // the op list changed
          }
        if (again) break;
      }
    }
    if (changed) dropUnused();
    return changed;
  }

 private:
  Function* kernelOf(const Op* dispatch) const {
    const ir::Attr* a = dispatch->attr("kernel");
    return a ? m_.lookup(dispatch->symbolAttr("kernel")) : nullptr;
  }

  // A name for the kernel that merges k1 and k2: K1_K2, numbered if taken.
  std::string mergedName(const Function& k1, const Function& k2) const {
    std::string name = k1.name() + "_" + k2.name();
    for (int n = 2; m_.lookup(name); ++n) name = k1.name() + "_" + k2.name() + "." + std::to_string(n);
    return name;
  }

  // k1's and then k2's top-level ops but their guards and returns, cloned
  // into `body` (k1 and k2 may be one kernel: `step` twice).
  static void cloneTops(ir::Region& body, const Function& k1, std::map<const Value*, Value*>& map1,
                        const Function& k2, std::map<const Value*, Value*>& map2) {
    for (auto& op : k1.body().ops())
      if (!op->is(OpId::If) && !op->is(OpId::Return)) body.append(op->clone(map1));
    for (auto& op : k2.body().ops())
      if (!op->is(OpId::If) && !op->is(OpId::Return)) body.append(op->clone(map2));
  }

  // The next dispatch after d1, with only effect-free ops or allocations between, or null.
  static Op* nextDispatch(Op* d1) {
    Op* d2 = d1->nextOp();
    while (d2 && !d2->is(OpId::Dispatch)) {
      if (!isEffectFree(*d2) && !d2->is(OpId::Alloc)) return nullptr;
      d2 = d2->nextOp();
    }
    return d2;
  }

  bool fuseFrom(Function& host, Op* d1) {
    ir::Region& body = host.body();
    Function* k1 = kernelOf(d1);
    Pointwise p1;
    if (!k1 || !pointwise(*k1, p1)) return false;
    Value* t = d1->operand(3 + p1.out);
    Value* count = allocCount(t, body);
    if (!count) return false;
    Op* d2 = nextDispatch(d1);
    if (!d2) return false;
    // %t's uses: D1, D2 once, and a top-level free.
    Op* freeOp = nullptr;
    unsigned inD2 = 0;
    for (const auto& use : t->uses()) {
      if (use.user == d1) continue;
      if (use.user == d2) ++inD2;
      else if (use.user->is(OpId::Free) && use.user->parentRegion() == &body && !freeOp) freeOp = use.user;
      else return false;
    }
    if (inD2 != 1 || !freeOp) return false;
    Function* k2 = kernelOf(d2);
    Pointwise p2;
    if (!k2 || !pointwise(*k2, p2) || k1->workgroupSize != k2->workgroupSize) return false;
    for (unsigned g = 0; g < 3; ++g)
      if (d1->operand(g) != d2->operand(g)) return false;
    unsigned tParam = 0;
    for (unsigned i = 3; i < d2->numOperands(); ++i)
      if (d2->operand(i) == t) tParam = i - 3;
    if (tParam == p2.out) return false;
    Value* out2 = d2->operand(3 + p2.out);
    if (!sameCount(allocCount(out2, body), count)) return false;
    for (unsigned i = 3; i < d1->numOperands(); ++i)
      if (d1->operand(i) == out2) return false;
    // K2 loads %t at the top level of its then region only.
    const Value* tIn = k2->param(tParam);
    for (const auto& use : tIn->uses())
      if (!use.user->is(OpId::Load) || use.user->parentRegion() != &p2.guard->region(0)) return false;

    Function* fused = makeKernel(*k1, p1, *k2, p2, tParam);
    replaced_.insert(k1->name());
    replaced_.insert(k2->name());
    // The host: one dispatch in D2's place.
    ir::Builder b(m_.context(), body, d2);
    b.setLoc(d2->loc());
    ir::Values args;
    for (unsigned i = 3; i < d1->numOperands(); ++i)
      if (i - 3 != p1.out) args.push_back(d1->operand(i));
    for (unsigned i = 3; i < d2->numOperands(); ++i)
      if (i - 3 != tParam) args.push_back(d2->operand(i));
    b.dispatch(*fused, {d2->operand(0), d2->operand(1), d2->operand(2)}, args);
    Op* alloc = t->definingOp();
    d2->erase();
    d1->erase();
    freeOp->erase();
    alloc->erase();
    return true;
  }

  Function* makeKernel(const Function& k1, const Pointwise& p1, const Function& k2, const Pointwise& p2,
                       unsigned tParam) {
    ir::Context& ctx = m_.context();
    std::vector<const ir::Type*> params;
    for (unsigned i = 0; i < k1.paramTypes().size(); ++i)
      if (i != p1.out) params.push_back(k1.paramTypes()[i]);
    for (unsigned i = 0; i < k2.paramTypes().size(); ++i)
      if (i != tParam) params.push_back(k2.paramTypes()[i]);
    Function* f = m_.addFunction(mergedName(k1, k2), ir::FunctionKind::Kernel, ctx.functionType(params, {}), k2.loc());
    f->workgroupSize = k2.workgroupSize;
    std::map<const Value*, Value*> map1, map2;
    unsigned at = 0;
    for (unsigned i = 0; i < k1.paramTypes().size(); ++i)
      if (i != p1.out) {
        f->param(at)->setName(k1.param(i)->name());
        map1[k1.param(i)] = f->param(at++);
      }
    const unsigned firstOfK2 = at;
    for (unsigned i = 0; i < k2.paramTypes().size(); ++i)
      if (i != tParam) {
        f->param(at)->setName(k2.param(i)->name());
        map2[k2.param(i)] = f->param(at++);
      }
    // K1's output length is K2's (the host checked the counts).
    map1[k1.param(p1.out)] = f->param(firstOfK2 + (p2.out > tParam ? p2.out - 1 : p2.out));
    ir::Region& body = f->body();
    cloneTops(body, k1, map1, k2, map2);
    Op* guard = body.append(p2.guard->clone(map2));
    ir::Region& then = guard->region(0);
    Op* first = then.front();
    for (auto& op : p1.guard->region(0).ops())
      if (op.get() != p1.store && !op->is(OpId::Yield)) then.insertBefore(first, op->clone(map1));
    Value* produced = map1.count(p1.store->operand(2)) ? map1[p1.store->operand(2)] : p1.store->operand(2);
    for (auto it = then.ops().begin(); it != then.ops().end();) {
      Op* op = (it++)->get();
      if (op->is(OpId::Load) && op->operand(0) == k2.param(tParam)) {
        op->result()->replaceAllUsesWith(produced);
        op->erase();
      }
    }
    ir::Builder b(ctx, body);
    b.ret();
    eraseUnusedValues(*f);  // K1's guard and the loads of %t are gone: drop what only they used
    return f;
  }

  // Sibling fusion (the file comment) of d1 and the next dispatch.
  bool siblingsFrom(Function& host, Op* d1) {
    ir::Region& body = host.body();
    Function* k1 = kernelOf(d1);
    Pointwise p1, p2;
    if (!k1 || !pointwise(*k1, p1)) return false;
    Op* d2 = nextDispatch(d1);
    Function* k2 = d2 ? kernelOf(d2) : nullptr;
    if (!k2 || !pointwise(*k2, p2) || k1->workgroupSize != k2->workgroupSize) return false;
    for (unsigned g = 0; g < 3; ++g)
      if (d1->operand(g) != d2->operand(g)) return false;
    Value* out1 = d1->operand(3 + p1.out);
    Value* out2 = d2->operand(3 + p2.out);
    if (out1 == out2 || !sameCount(allocCount(out1, body), allocCount(out2, body))) return false;
    // Up to D2 nothing else uses the outputs (no view of one that the other
    // kernel could read): D1 writes out1, D2 out2, and that is all.
    for (Op* o = body.front(); o && o != d2; o = o->nextOp()) {
      bool uses = false;
      o->walk([&](Op* in) {
        for (unsigned i = 0; i < in->numOperands(); ++i)
          uses = uses || in->operand(i) == out2 || (in->operand(i) == out1 && o != d1);
      });
      if (uses) return false;
    }
    // K2's parameters that D1 passes too (an input of K1's of the same type): K1's parameter; else none.
    std::vector<int> shared(k2->paramTypes().size(), -1);
    bool any = false;
    for (unsigned j = 0; j < k2->paramTypes().size(); ++j) {
      Value* arg = d2->operand(3 + j);
      if (arg == out1) return false;  // K2 reads K1's output: producer-consumer, not siblings
      if (j == p2.out) continue;
      for (unsigned i = 0; i < k1->paramTypes().size(); ++i)
        if (i != p1.out && d1->operand(3 + i) == arg && k1->paramTypes()[i] == k2->paramTypes()[j]) {
          shared[j] = int(i);
          any = true;
          break;
        }
    }
    if (!any) return false;
    Function* fused = makeSiblings(*k1, p1, *k2, p2, shared);
    replaced_.insert(k1->name());
    replaced_.insert(k2->name());
    ir::Builder b(m_.context(), body, d2);
    b.setLoc(d2->loc());
    ir::Values args;
    for (unsigned i = 3; i < d1->numOperands(); ++i) args.push_back(d1->operand(i));
    for (unsigned j = 0; j < k2->paramTypes().size(); ++j)
      if (shared[j] < 0) args.push_back(d2->operand(3 + j));
    b.dispatch(*fused, {d2->operand(0), d2->operand(1), d2->operand(2)}, args);
    d2->erase();
    d1->erase();
    return true;
  }

  Function* makeSiblings(const Function& k1, const Pointwise& p1, const Function& k2, const Pointwise& p2,
                         const std::vector<int>& shared) {
    ir::Context& ctx = m_.context();
    std::vector<const ir::Type*> params(k1.paramTypes().begin(), k1.paramTypes().end());
    for (unsigned j = 0; j < k2.paramTypes().size(); ++j)
      if (shared[j] < 0) params.push_back(k2.paramTypes()[j]);
    Function* f = m_.addFunction(mergedName(k1, k2), ir::FunctionKind::Kernel, ctx.functionType(params, {}), k1.loc());
    f->workgroupSize = k1.workgroupSize;
    std::map<const Value*, Value*> map1, map2;
    unsigned at = 0;
    for (unsigned i = 0; i < k1.paramTypes().size(); ++i) {
      f->param(at)->setName(k1.param(i)->name());
      map1[k1.param(i)] = f->param(at++);
    }
    for (unsigned j = 0; j < k2.paramTypes().size(); ++j) {
      if (shared[j] >= 0) {
        map2[k2.param(j)] = f->param(unsigned(shared[j]));
        continue;
      }
      f->param(at)->setName(k2.param(j)->name());
      map2[k2.param(j)] = f->param(at++);
    }
    ir::Region& body = f->body();
    cloneTops(body, k1, map1, k2, map2);
    Op* guard = body.append(p1.guard->clone(map1));
    ir::Region& then = guard->region(0);
    // K1's loads at the top of its guard, by buffer: K2's loads of the same buffer reuse them.
    std::map<const Value*, Value*> loaded;
    for (auto& op : then.ops())
      if (op->is(OpId::Load) && !loaded.count(op->operand(0))) loaded[op->operand(0)] = op->result();
    Op* yield = then.back();
    for (auto& op : p2.guard->region(0).ops()) {
      if (op->is(OpId::Yield)) continue;
      Op* c = then.insertBefore(yield, op->clone(map2));
      if (!c->is(OpId::Load)) continue;
      if (auto it = loaded.find(c->operand(0)); it != loaded.end() && it->second->type() == c->result()->type()) {
        map2[op->result()] = it->second;  // (what K2's later ops are cloned with)
        c->erase();
      }
    }
    ir::Builder b(ctx, body);
    b.ret();
    eraseUnusedValues(*f);  // K2's guard is gone: drop what only it used
    return f;
  }

  // Kernels no dispatch or call names any more, among those fusion replaced.
  void dropUnused() {
    std::set<std::string> named;
    for (auto& f : m_.functions())
      f->walk([&](Op* op) {
        if (const ir::Attr* a = op->attr("kernel"); a && a->kind == ir::Attr::Kind::Symbol) named.insert(a->s);
        if (const ir::Attr* a = op->attr("callee"); a && a->kind == ir::Attr::Kind::Symbol) named.insert(a->s);
      });
    std::vector<Function*> dead;
    for (auto& f : m_.functions())
      if (f->isKernel() && replaced_.count(f->name()) && !named.count(f->name())) dead.push_back(f.get());
    for (Function* f : dead) m_.eraseFunction(f);
  }

  ir::Module& m_;
  std::set<std::string> replaced_;  // kernels a fused dispatch replaced (dropped when unused)
};

}  // namespace

Pass fusePass() {
  return Pass{"fuse",
              "producer-consumer fusion of pointwise kernels through a linear temporary (one dispatch for a chain), "
              "and of sibling pointwise kernels reading a buffer in common",
              [](ir::Module& m, Diagnostics&) {
                Fuser f(m);
                return f.run();
              }};
}

}  // namespace eph::passes
