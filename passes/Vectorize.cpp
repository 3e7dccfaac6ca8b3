// vectorize: elementwise kernels move memory four elements at a time.
//
// A kernel written one element per invocation (`y[gid] = a * x[gid] +
// y[gid]`) issues 4-byte loads and stores; the same kernel with one vec4 a
// invocation moves 16 bytes an access and is what reaches a GPU's memory
// bandwidth (bench/RESULTS.md: 75-83% of PyTorch against 100-110%). This
// pass makes the first from the second.
//
// Which kernels: workgroups of (W, 1, 1), hidden grid parameters
// (hidden_params = 3, as the Ephapax frontend lowers a kernel: the last three
// parameters are the grid) and a body of effect-free top-level ops, one `if`
// guard with an empty else and `return`, where the guard is an `and` of
// `lt %gid_d, %grid_d` with `lt %gid_x, %grid.x` among them. Inside the
// guard: every store is at its top level and writes a device buffer
// parameter at index gid.x (the `global_id` in x or a cast of it), and a
// buffer that is stored is read only at gid.x; no atomics, barriers,
// subgroup or workgroup ops, calls, or builtins other than `global_id` and
// `workgroup_size`. At least one access at gid.x must be to a buffer of
// integers or floats (not bool); those are the vector accesses.
//
// The rewrite: a kernel named K.x4 whose invocation q in x covers elements
// 4q .. 4q+3 (attribute vectorized = 4):
//
//   guard: q < grid.x / 4 + 1 (and the y/z guards as they were)
//     if q < grid.x / 4:  each vector access once, as vec.load / vec.store
//                         of vector q; every other op four times, one per
//                         lane, with gid.x = 4q + lane
//     else:               for j in 4q .. grid.x: the original body, gid.x = j
//
// so the last invocation finishes the grid.x mod 4 elements one at a time.
// Running the lanes op by op keeps each lane's order of accesses, and the
// lanes touch different elements, so the result is the original's. Each
// dispatch of K whose x workgroup count is the frontend's
// (grid.x + W - 1) / W launches (grid.x / 4 + W) / W instead; a dispatch
// counting otherwise keeps K. Kernels no dispatch names any more go.
//
// The targets make vec.load/vec.store one 16-byte access where they can
// (ir/ops/Memory.cpp). tests/lit/passes/vectorize*.eir pin what vectorises
// and what must not; bench/RESULTS.md has the H200 numbers.
#include "passes/Vectorize.h"

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

constexpr unsigned kLanes = 4;

bool isGlobalIdX(const Value* v) { return isGlobalId(v, 0); }

// gid.x itself, or a cast of it to a 32- or 64-bit integer.
bool isElementIndex(const Value* v) {
  if (isGlobalIdX(v)) return true;
  const Op* d = v->definingOp();
  return d && d->is(OpId::Cast) && d->parentOp() && v->type()->isInt() && v->type()->bits() >= 32 && isGlobalIdX(d->operand(0));
}

// What the rewrite needs to know about a kernel that vectorises.
struct Shape {
  Op* guard = nullptr;      // the top-level `if`
  Op* xGuard = nullptr;     // lt %gid_x, %grid.x in its condition
  std::set<const Op*> vectorAccesses;
};

bool guardTerms(const Function& k, const Value* cond, Shape& s) {
  const Op* d = cond->definingOp();
  if (!d || d->parentRegion() != &k.body()) return false;
  if (d->is(OpId::And)) return guardTerms(k, d->operand(0), s) && guardTerms(k, d->operand(1), s);
  if (!d->is(OpId::Lt)) return false;
  const Op* id = d->operand(0)->definingOp();
  unsigned n = unsigned(k.paramTypes().size());
  if (!id || !id->is(OpId::GlobalId)) return false;
  int64_t dim = id->intAttr("dim");
  if (d->operand(1) != k.param(n - 3 + unsigned(dim))) return false;
  if (dim == 0) s.xGuard = const_cast<Op*>(d);
  return true;
}

bool builtinAllowed(const Op& op) {
  switch (op.id()) {
    case OpId::LocalId: case OpId::WorkgroupId: case OpId::NumWorkgroups:
    case OpId::SubgroupSize: case OpId::SubgroupId: case OpId::SubgroupLocalId: return false;
    default: return true;
  }
}

bool vectorizable(const Function& k, Shape& s) {
  if (!k.isKernel() || k.workgroupSize[1] != 1 || k.workgroupSize[2] != 1) return false;
  auto hidden = k.attrs.find("hidden_params");
  if (hidden == k.attrs.end() || hidden->second.kind != ir::Attr::Kind::Int || hidden->second.i != 3) return false;
  if (k.attrs.count("vectorized") || k.paramTypes().size() < 3) return false;
  for (auto& op : k.body().ops()) {
    if (op->is(OpId::If) && !s.guard) {
      s.guard = op.get();
    } else if (op->is(OpId::Return)) {
      if (op->numOperands()) return false;
    } else if (!isEffectFree(*op) || op->numRegions() || !builtinAllowed(*op)) {
      return false;
    }
  }
  if (!s.guard || s.guard->numResults() || s.guard->numRegions() != 2) return false;
  for (auto& op : s.guard->region(1).ops())
    if (!op->is(OpId::Yield)) return false;
  if (!guardTerms(k, s.guard->operand(0), s) || !s.xGuard) return false;
  // Top-level values computed from gid.x (other than gid.x itself) would
  // be the invocation's, not the lane's: the guarded ops must not use them.
  std::set<const Value*> fromX;
  for (auto& op : k.body().ops()) {
    bool dep = op->is(OpId::GlobalId) && op->intAttr("dim") == 0;
    for (const Value* v : op->operands()) dep |= fromX.count(v) != 0;
    if (!dep) continue;
    for (const Value* r : op->results()) fromX.insert(r);
    if (op->is(OpId::GlobalId)) continue;
    for (const Value* r : op->results())
      for (const auto& use : r->uses())
        if (use.user != s.guard && use.user->parentFunction() == &k && use.user->parentOp()) return false;
  }

  const ir::Region& then = s.guard->region(0);
  std::set<const Value*> stored;
  std::vector<const Op*> accesses;
  bool ok = true;
  s.guard->walk([&](Op* op) {
    if (op == s.guard || !ok) return;
    bool load = op->is(OpId::Load), store = op->is(OpId::Store);
    if (load || store) {
      accesses.push_back(op);
      if (store) {
        stored.insert(op->operand(0));
        ok = op->parentRegion() == &then && isElementIndex(op->operand(1));
      }
      return;
    }
    if (op->info().has(ir::kBarrier) || ir::isAtomic(op->id()) || op->is(OpId::Call) ||
        op->is(OpId::CallIndirect) || op->is(OpId::VecLoad) || op->is(OpId::VecStore) ||
        op->is(OpId::WorkgroupAlloc) || ir::isSubgroupCollective(op->id()) ||
        ir::isCoop(op->id()) || !builtinAllowed(*op) ||
        !(isEffectFree(*op) || op->is(OpId::Yield)))
      ok = false;
  });
  if (!ok) return false;
  for (const Op* a : accesses) {
    const Value* buf = a->operand(0);
    const ir::Type* elem = buf->type()->elem();
    bool atX = a->parentRegion() == &then && isElementIndex(a->operand(1));
    bool param = buf->definingOp() == nullptr && buf->type()->space() == ir::Space::Device;
    if (stored.count(buf) && (!atX || !param)) return false;
    if (atX && param && (elem->isInt() || elem->isFloat())) s.vectorAccesses.insert(a);
    else if (a->is(OpId::Store)) return false;
  }
  return !s.vectorAccesses.empty();
}

class Rewriter {
 public:
  Rewriter(ir::Module& m, const Function& k, const Shape& s) : m_(m), k_(k), s_(s), ctx_(m.context()) {}

  Function* build() {
    std::string name = k_.name() + ".x4";
    for (int n = 2; m_.lookup(name); ++n) name = k_.name() + ".x4." + std::to_string(n);
    f_ = m_.addFunction(name, ir::FunctionKind::Kernel, k_.type(), k_.loc());
    f_->workgroupSize = k_.workgroupSize;
    f_->attrs = k_.attrs;
    f_->attrs["vectorized"] = ir::Attr::integer(kLanes);
    for (unsigned i = 0; i < k_.paramTypes().size(); ++i) {
      f_->param(i)->setName(k_.param(i)->name());
      top_[k_.param(i)] = f_->param(i);
    }
    Value* gridX = f_->param(unsigned(k_.paramTypes().size()) - 3);
    ir::Builder b(ctx_, f_->body());
    b.setLoc(k_.loc());
    for (auto& op : k_.body().ops()) {
      if (op.get() == s_.guard || op->is(OpId::Return)) continue;
      if (op.get() == s_.xGuard) {  // q < grid.x / 4 + 1
        Value* last = b.add(b.shr(gridX, b.constInt(gridX->type(), 2)), b.constInt(gridX->type(), 1));
        top_[op->result()] = b.lt(top_.at(op->operand(0)), last);
        continue;
      }
      f_->body().append(op->clone(top_));
      if (op->is(OpId::GlobalId) && op->intAttr("dim") == 0) gids_.push_back(op->result());
    }
    b.setLoc(s_.guard->loc());
    b.ifOp(top_.at(s_.guard->operand(0)), {}, [&](ir::Builder& g) {
      Value* q = g.globalId(0);
      Value* full = g.shr(gridX, g.constInt(gridX->type(), 2));
      g.ifOp(
          g.lt(q, full), {}, [&](ir::Builder& v) { vectorPath(v, q); },
          [&](ir::Builder& t) {
            Value* first = t.mul(q, t.constInt(q->type(), kLanes));
            t.forOp(first, gridX, t.constInt(q->type(), 1), [&](ir::Builder& l, Value* j, const ir::Values&) {
              std::map<const Value*, Value*> map = laneMap(l, j);
              cloneBody(l, map);
            });
          });
    });
    b.ret();
    eraseUnusedValues(*f_);  // the per-lane copies of the index arithmetic the vector accesses replaced
    return f_;
  }

 private:
  // The top-level map with gid.x (top level and guarded) as `id`.
  std::map<const Value*, Value*> laneMap(ir::Builder& b, Value* id) {
    std::map<const Value*, Value*> map = top_;
    for (const Value* g : gids_) map[g] = castTo(b, id, g->type());
    lane_ = id;
    return map;
  }

  Value* castTo(ir::Builder& b, Value* v, const ir::Type* t) { return v->type() == t ? v : b.cast(v, t); }

  // The guarded ops, in order, each cloned with `map`; a guarded global_id
  // in x becomes the lane's id.
  void cloneBody(ir::Builder& b, std::map<const Value*, Value*>& map) {
    for (auto& op : s_.guard->region(0).ops()) {
      if (op->is(OpId::Yield)) continue;
      if (op->is(OpId::GlobalId) && op->intAttr("dim") == 0) {
        map[op->result()] = castTo(b, lane_, op->result()->type());
        continue;
      }
      b.region().insertBefore(b.insertionOp(), op->clone(map));
    }
  }

  void vectorPath(ir::Builder& b, Value* q) {
    Value* first = b.mul(q, b.constInt(q->type(), kLanes));
    std::vector<std::map<const Value*, Value*>> lanes;
    std::vector<Value*> ids;
    for (unsigned k = 0; k < kLanes; ++k) ids.push_back(k ? b.add(first, b.constInt(q->type(), k)) : first);
    for (unsigned k = 0; k < kLanes; ++k) lanes.push_back(laneMap(b, ids[k]));
    for (auto& op : s_.guard->region(0).ops()) {
      if (op->is(OpId::Yield)) continue;
      b.setLoc(op->loc());
      if (s_.vectorAccesses.count(op.get())) {
        Value* buf = top_.count(op->operand(0)) ? top_.at(op->operand(0)) : op->operand(0);
        if (op->is(OpId::Load)) {
          Value* v = b.vecLoad(buf, q, kLanes);
          for (unsigned k = 0; k < kLanes; ++k) lanes[k][op->result()] = b.vecExtract(v, k);
        } else {
          ir::Values parts;
          for (unsigned k = 0; k < kLanes; ++k) {
            const Value* x = op->operand(2);
            parts.push_back(lanes[k].count(x) ? lanes[k].at(x) : const_cast<Value*>(x));
          }
          b.vecStore(buf, q, b.vecMake(parts));
        }
        continue;
      }
      for (unsigned k = 0; k < kLanes; ++k) {
        lane_ = ids[k];
        if (op->is(OpId::GlobalId) && op->intAttr("dim") == 0) {
          lanes[k][op->result()] = castTo(b, ids[k], op->result()->type());
          continue;
        }
        b.region().insertBefore(b.insertionOp(), op->clone(lanes[k]));
      }
    }
  }

  ir::Module& m_;
  const Function& k_;
  const Shape& s_;
  ir::Context& ctx_;
  Function* f_ = nullptr;
  std::map<const Value*, Value*> top_;  // K's parameters and top-level values in K.x4
  std::vector<const Value*> gids_;      // K's top-level global_id in x
  Value* lane_ = nullptr;
};

// Erases `op` when nothing uses its results and it is effect-free, then
// the ops only it used.
void eraseIfUnused(Op* op) {
  if (!op || op->numRegions() || !isEffectFree(*op)) return;
  for (const Value* r : op->results())
    if (!r->uses().empty()) return;
  std::vector<Op*> inputs;
  for (const Value* v : op->operands()) inputs.push_back(v->definingOp());
  op->erase();
  for (Op* in : inputs) eraseIfUnused(in);
}

// Whether `d`'s x workgroup count is (grid.x + W - 1) / W, with grid.x the
// dispatch's hidden grid argument.
bool frontendCount(const Op& d, const Function& k) {
  const Value* gridX = d.operand(d.numOperands() - 3);
  const Op* div = d.operand(0)->definingOp();
  if (!div || !div->is(OpId::Div)) return false;
  const Op* add = div->operand(0)->definingOp();
  const ir::Attr* w = constantAttr(div->operand(1));
  if (!add || !add->is(OpId::Add) || add->operand(0) != gridX || !w) return false;
  const ir::Attr* w1 = constantAttr(add->operand(1));
  return w1 && w->kind == ir::Attr::Kind::Int && w1->kind == ir::Attr::Kind::Int &&
         w->i == int64_t(k.workgroupSize[0]) && w1->i == w->i - 1;
}

bool vectorizeModule(ir::Module& m) {
  std::vector<Op*> dispatches;
  for (auto& f : m.functions())
    if (f->isHost()) f->walk([&](Op* op) { if (op->is(OpId::Dispatch)) dispatches.push_back(op); });
  std::map<const Function*, Function*> made;
  std::set<std::string> replaced;
  for (Op* d : dispatches) {
    Function* k = m.lookup(d->symbolAttr("kernel"));
    if (!k || d->numOperands() != 3 + k->paramTypes().size() || !frontendCount(*d, *k)) continue;
    auto it = made.find(k);
    if (it == made.end()) it = made.emplace(k, vectorizeKernel(m, *k)).first;
    if (!it->second) continue;
    ir::Builder b(m.context(), *d->parentRegion(), d);
    b.setLoc(d->loc());
    Value* gridX = d->operand(d->numOperands() - 3);
    const ir::Type* t = gridX->type();
    Value* invocations = b.add(b.shr(gridX, b.constInt(t, 2)), b.constInt(t, 1));
    uint32_t w = k->workgroupSize[0];
    Value* groups = b.div(b.add(invocations, b.constInt(t, w - 1)), b.constInt(t, w));
    Op* old = d->operand(0)->definingOp();
    d->setOperand(0, groups);
    d->setAttr("kernel", ir::Attr::symbol(it->second->name()));
    replaced.insert(k->name());
    eraseIfUnused(old);  // the old count, unless something else uses it
  }
  if (replaced.empty()) return false;
  // Kernels no dispatch or reference names any more.
  std::set<std::string> named;
  for (auto& f : m.functions())
    f->walk([&](Op* op) {
      for (const char* a : {"kernel", "callee"})
        if (const ir::Attr* s = op->attr(a); s && s->kind == ir::Attr::Kind::Symbol) named.insert(s->s);
    });
  std::vector<Function*> dead;
  for (auto& f : m.functions())
    if (replaced.count(f->name()) && !named.count(f->name())) dead.push_back(f.get());
  for (Function* f : dead) m.eraseFunction(f);
  return true;
}

}  // namespace

Function* vectorizeKernel(ir::Module& m, const Function& k) {
  Shape s;
  if (!vectorizable(k, s)) return nullptr;
  return Rewriter(m, k, s).build();
}

Pass vectorizePass() {
  return Pass{"vectorize",
              "elementwise kernels access memory four elements at a time (vec.load/vec.store), one invocation per four",
              [](ir::Module& m, Diagnostics&) { return vectorizeModule(m); }};
}

}  // namespace eph::passes
