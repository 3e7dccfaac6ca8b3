#include "ir/interp/Dispatch.h"

#include <cassert>

#include "ir/OpTable.h"
#include "ir/interp/Exec.h"
#include "ir/ops/TypeVars.h"
#include "ir/interp/Fiber.h"
#include "ir/interp/OutOfBounds.h"
#include "ir/interp/Subgroup.h"

namespace eph::interp {
namespace {

constexpr size_t kInvocationStackBytes = 512 * 1024;

bool containsBarrierIn(const ir::Function& f, std::set<const ir::Function*>& seen) {
  if (!seen.insert(&f).second) return false;
  bool found = false;
  const_cast<ir::Function&>(f).walk([&](ir::Op* op) {
    if (found) return;
    if (op->info().has(ir::kBarrier)) found = true;
    else if (op->is(ir::OpId::Call)) {
      const ir::Attr* a = op->attr("callee");
      const ir::Function* callee = a ? f.module()->lookup(a->s) : nullptr;
      if (callee && containsBarrierIn(*callee, seen)) found = true;
    }
  });
  return found;
}

std::string triple(const std::array<uint32_t, 3>& v) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + ")";
}

}  // namespace

bool containsBarrier(const ir::Function& f) {
  std::set<const ir::Function*> seen;
  return containsBarrierIn(f, seen);
}

Status runKernel(Memory& mem, const ir::Function& kernel, std::array<uint32_t, 3> groups,
                 std::vector<RtValue> args) {
  if (!kernel.isKernel())
    return Error{kernel.loc(), "@" + kernel.name() + " is not a kernel; use a call"};
  if (ir::isGeneric(kernel)) return genericFunctionError(kernel, kernel.loc());
  if (args.size() != kernel.paramTypes().size())
    return Error{kernel.loc(), "kernel @" + kernel.name() + " takes " +
                                   std::to_string(kernel.paramTypes().size()) + " arguments, got " +
                                   std::to_string(args.size())};
  DispatchState d{mem, kernel, groups, std::move(args)};
  d.useFibers = containsBarrier(kernel);
  Status result;
  for (uint32_t z = 0; z < groups[2] && result; ++z)
    for (uint32_t y = 0; y < groups[1] && result; ++y)
      for (uint32_t x = 0; x < groups[0] && result; ++x) result = Workgroup(d, {x, y, z}).run();
  for (auto& [op, id] : d.shared) {
    BufferData* b = mem.get(id);
    b->freed = true;
    b->elems.clear();
    b->written.clear();
  }
  return result;
}

Workgroup::Workgroup(DispatchState& d, std::array<uint32_t, 3> id) : d_(d), id_(id) {
  const auto& size = d.kernel.workgroupSize;
  uint32_t n = size[0] * size[1] * size[2];
  lanes_.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    Lane& l = lanes_[i];
    l.wg = this;
    Invocation& inv = l.inv;
    inv.localIndex = i;
    inv.localId = {i % size[0], (i / size[0]) % size[1], i / (size[0] * size[1])};
    inv.workgroupId = id;
    inv.numWorkgroups = d.groups;
    inv.workgroupSize = size;
    for (int k = 0; k < 3; ++k) inv.globalId[k] = id[k] * size[k] + inv.localId[k];
    l.ex = std::make_unique<Exec>(&d.mem, &l.inv, this);
  }
}

Workgroup::~Workgroup() = default;

std::string Workgroup::describe(const Lane& l) const { return "invocation " + triple(l.inv.localId); }

Status Workgroup::run() { return d_.useFibers ? runFibers() : runSequential(); }

bool Workgroup::runLane(Lane& l) {
  std::vector<RtValue> results;
  l.ok = l.ex->callFunction(nullptr, d_.kernel, d_.args, results);
  l.state = State::Done;
  return l.ok;
}

Error Workgroup::laneError(const Lane& l) const {
  Error e = *l.ex->error();
  e.message += invocationSuffix(l.inv.globalId);
  return e;
}

Status Workgroup::runSequential() {
  for (Lane& l : lanes_) {
    current_ = &l;
    if (!runLane(l)) return laneError(l);
  }
  return Status::ok();
}

void Workgroup::laneMain(void* p) {
  Lane* l = static_cast<Lane*>(p);
  l->wg->runLane(*l);
}

Status Workgroup::runFibers() {
  while (d_.fibers.size() < lanes_.size())
    d_.fibers.push_back(std::make_unique<Fiber>(kInvocationStackBytes));
  for (size_t i = 0; i < lanes_.size(); ++i) {
    lanes_[i].fiber = d_.fibers[i].get();
    lanes_[i].fiber->start(&Workgroup::laneMain, &lanes_[i]);
  }
  std::string where = "in workgroup " + triple(id_) + ": ";
  while (true) {
    // Run every invocation until it finishes or reaches a barrier.
    for (Lane& l : lanes_) {
      if (l.state == State::Done) continue;
      l.state = State::Ready;
      current_ = &l;
      l.fiber->resume();
      if (l.state == State::Done && !l.ok) {
        Error e = laneError(l);
        abortWaiting();
        return e;
      }
    }
    const Lane* waiting = nullptr;
    const Lane* done = nullptr;
    for (const Lane& l : lanes_) {
      if (l.state == State::AtBarrier && !waiting) waiting = &l;
      if (l.state == State::Done && !done) done = &l;
    }
    if (!waiting) return Status::ok();  // everyone finished
    // "barrier", or "subgroup collective" ('subgroup.reduce_add' ...).
    auto what = [](const ir::Op* op) {
      return std::string(op->is(ir::OpId::Barrier) ? "barrier" : "subgroup collective '" + std::string(op->name()) + "'");
    };
    if (done) {
      Error e{waiting->barrierOp->loc(), "barrier divergence " + where + describe(*done) +
                                             " finished while " + describe(*waiting) +
                                             " waits at this " + what(waiting->barrierOp)};
      abortWaiting();
      return e;
    }
    for (const Lane& l : lanes_) {
      if (l.barrierOp != waiting->barrierOp) {
        Error e{waiting->barrierOp->loc(),
                "barrier divergence " + where + describe(*waiting) + " waits at this " + what(waiting->barrierOp) +
                    " while " + describe(l) + " waits at the " + what(l.barrierOp) + " at " + l.barrierOp->loc().str()};
        abortWaiting();
        return e;
      }
    }
    if (!waiting->barrierOp->is(ir::OpId::Barrier)) {
      if (Status s = runCollective(*waiting->barrierOp); !s) {
        abortWaiting();
        return s;
      }
    }
    // The whole workgroup is at the same barrier: release it (next round).
  }
}

void Workgroup::abortWaiting() {
  // Let suspended invocations unwind: their barrier() returns false.
  aborting_ = true;
  for (Lane& l : lanes_) {
    if (l.state != State::AtBarrier) continue;
    current_ = &l;
    l.fiber->resume();
    assert(l.fiber->finished());
  }
}

bool Workgroup::barrier(Exec& ex, const ir::Op& op) {
  Lane& l = *current_;
  assert(l.ex.get() == &ex);
  if (!d_.useFibers || !l.fiber)
    return ex.fail(op, "internal error: barrier in a kernel run without fibers");
  if (aborting_) return false;
  l.state = State::AtBarrier;
  l.barrierOp = &op;
  l.fiber->suspend();
  if (aborting_) return false;
  l.state = State::Ready;
  return true;
}

bool Workgroup::collective(Exec& ex, const ir::Op& op, RtValue& out) {
  Lane& l = *current_;
  l.collectiveIn = ex.operands(op);
  if (!barrier(ex, op)) return false;
  out = std::move(l.collectiveOut);
  return true;
}

Status Workgroup::runCollective(const ir::Op& op) {
  constexpr uint32_t sg = Interpreter::kSubgroupSize;
  for (size_t first = 0; first < lanes_.size(); first += sg) {
    size_t n = std::min<size_t>(sg, lanes_.size() - first);
    std::vector<const std::vector<RtValue>*> ins;
    for (size_t j = 0; j < n; ++j) ins.push_back(&lanes_[first + j].collectiveIn);
    std::vector<RtValue> outs;
    size_t bad = 0;
    std::string error = subgroupResults(op, sg, ins, outs, bad);
    if (!error.empty())
      return Error{op.loc(), "'" + std::string(op.name()) + "': " + error + " (in workgroup " + triple(id_) +
                                 ", subgroup " + std::to_string(first / sg) + ")" +
                                 invocationSuffix(lanes_[first + bad].inv.globalId)};
    for (size_t j = 0; j < n; ++j) lanes_[first + j].collectiveOut = std::move(outs[j]);
  }
  return Status::ok();
}

uint64_t Workgroup::sharedBuffer(const ir::Op& allocOp) {
  auto it = d_.shared.find(&allocOp);
  if (it == d_.shared.end()) {
    const ir::Type* t = allocOp.result(0)->type();
    uint64_t id = d_.mem.allocate(t->elem(), ir::Space::Workgroup,
                                  static_cast<size_t>(allocOp.intAttr("size")), allocOp.loc());
    it = d_.shared.emplace(&allocOp, id).first;
    fresh_.insert(&allocOp);
  }
  if (fresh_.insert(&allocOp).second) {
    // Reused from the previous workgroup: make it fresh, unwritten memory.
    BufferData* b = d_.mem.get(it->second);
    RtValue blank;
    blank.type = b->elemType;
    b->elems.assign(b->elems.size(), blank);
    b->written.assign(b->written.size(), false);
  }
  return it->second;
}

}  // namespace eph::interp
