// Kernels: a function over one workgroup. The kernel body is split into runs
// (loops over the workgroup's invocations) and workgroup-level ops (barriers,
// control flow that holds a barrier, uniform loops), as targets/llvm/Llvm.h
// describes. Values crossing from one run to another live in per-invocation
// arrays ("slots": [N x T] allocas indexed by the linear invocation index).
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include <functional>
#include <unordered_set>

#include "ir/OpTable.h"
#include "ir/ops/TypeVars.h"
#include "targets/llvm/Emitter.h"

namespace eph::llvmtarget {
namespace {

// The bytes of values the workgroup-level loops around an invocation loop
// may carry for it to be unrolled in full once vectorised (loopLevel): 24
// of AVX-512's 32 vector registers. (The Zen row of the tensor tuning
// table, 6 rows x 128 lanes of sums, is 3 KiB: unrolled, they would spill.
// On a host without AVX-512, 16 registers of 32 bytes, what fits here may
// spill: to the stack, as the per-invocation arrays it replaces were.)
constexpr uint64_t kCarriedInRegisters = 24 * 64;

class KernelEmitter {
 public:
  KernelEmitter(ModuleEmitter& m, const ir::Function& kernel, llvm::Function* fn)
      : M(m), k(kernel), F(m, fn, kernel), b(F.b), wgl(workgroupLayout(kernel)) {
    for (int d = 0; d < 3; ++d) size[d] = kernel.workgroupSize[d];
    N = size[0] * size[1] * size[2];
  }

  bool emit();

 private:
  using Slot = llvm::AllocaInst*;

  bool isUniformOp(const ir::Op& op) const;
  bool writesMemory(const std::vector<const ir::Op*>& run) const;
  bool isWorkgroupOp(const ir::Op& op);
  bool emitUniform(const ir::Op& op);
  bool emitRegion(const ir::Region& r, const std::vector<Slot>& targets);
  bool flush(const ir::Region& r, std::vector<const ir::Op*>& run, const std::vector<Slot>& targets);
  bool emitWorkgroupOp(const ir::Op& op);
  bool emitWorkgroupIf(const ir::Op& op);
  bool emitWorkgroupFor(const ir::Op& op);
  bool emitForLoop(const ir::Op& op, llvm::Value* lo, llvm::Value* hi, llvm::Value* step, llvm::Value* stepOk,
                   const std::vector<Slot>& carried);
  bool emitWorkgroupWhile(const ir::Op& op);
  bool emitCollective(const ir::Op& op);

  // Emits body() inside a loop over every invocation (z, y, x; x innermost).
  // The x loop is versioned on the `ranged` accesses: when all of them are
  // in bounds for every x, a copy of it without their bounds checks runs.
  bool invocationLoop(const std::function<bool()>& body, const std::vector<const ir::Op*>& ranged = {});
  bool loopLevel(int d, const std::function<bool()>& body, const std::vector<const ir::Op*>& ranged);
  bool dependsOnX(const ir::Value* v, unsigned depth) const;
  bool unitStrideInX(const ir::Value* v, unsigned depth) const;
  bool pureChain(const ir::Value* v, unsigned depth) const;
  llvm::Value* rangesInBounds(const std::vector<const ir::Op*>& ranged);
  Slot newSlot(llvm::Type* t, const llvm::Twine& name = "slot");
  Slot slotFor(const ir::Value* v) { return slots[v] = newSlot(M.valueType(v->type()), "slot"); }
  llvm::Type* slotElem(Slot s) const { return llvm::cast<llvm::ArrayType>(s->getAllocatedType())->getElementType(); }
  // The bytes of the slots' elements for the whole workgroup (8 a value
  // where the element is not a scalar or vector: a buffer, a pointer).
  uint64_t slotBytes(const std::vector<Slot>& ss) const {
    uint64_t bytes = 0;
    for (Slot s : ss) {
      uint64_t bits = slotElem(s)->getPrimitiveSizeInBits().getFixedValue();
      bytes += (bits ? (bits + 7) / 8 : 8) * N;
    }
    return bytes;
  }
  llvm::Value* slotAt(Slot s, llvm::Value* index) { return b.CreateInBoundsGEP(s->getAllocatedType(), s, {b.getInt64(0), index}); }
  // The value of v shared by the whole workgroup: uniform values as they are;
  // values in slots are checked to agree (barrier divergence otherwise).
  llvm::Value* uniformValue(const ir::Value* v, const ir::Op& site);
  llvm::Value* checkUniform(Slot s, const ir::Op& site);
  // The workgroup's first invocation with an access out of bounds, if any,
  // from the per-invocation arrays into `record` (an OutOfBounds).
  void pickFirstOutOfBounds(llvm::Value* record);
  // One run that copies values (uniform or in slots) into slots.
  bool copyInto(const std::vector<std::pair<const ir::Value*, Slot>>& moves);

  ModuleEmitter& M;
  const ir::Function& k;
  FunctionEmitter F;
  llvm::IRBuilder<>& b;
  WorkgroupLayout wgl;
  unsigned size[3];
  unsigned N;
  llvm::Value* lin = nullptr;  // i64 linear invocation index inside a run
  llvm::Value* status = nullptr;
  llvm::Value* wgmem = nullptr;
  llvm::BasicBlock* exitBB = nullptr;
  std::unordered_map<const ir::Value*, Slot> slots;
  std::unordered_set<const ir::Value*> uniform;
  int versioned = 0;  // loops versioned by emitWorkgroupFor around the code being emitted
  uint64_t carriedBytes = 0;  // what the workgroup-level loops around the code being emitted carry (slots)
};

bool KernelEmitter::isUniformOp(const ir::Op& op) const {
  if (op.numRegions() || op.numResults() == 0) return false;
  ir::OpId n = op.id();
  if (n == ir::OpId::WorkgroupAlloc || n == ir::OpId::Const || n == ir::OpId::WorkgroupId || n == ir::OpId::NumWorkgroups ||
      n == ir::OpId::WorkgroupSize || n == ir::OpId::SubgroupSize)
    return true;
  if (n == ir::OpId::LocalId || n == ir::OpId::GlobalId || n == ir::OpId::SubgroupId || n == ir::OpId::SubgroupLocalId) return false;
  // A load (or vec.load) at an index the whole workgroup shares reads once
  // for it (a broadcast, not a load per lane); emitRegion ends the run
  // before it when the run may have written memory, so each invocation's
  // own stores come first.
  if (!op.info().has(ir::kPure) && n != ir::OpId::Load && n != ir::OpId::VecLoad) return false;
  for (const ir::Value* v : op.operands())
    if (!uniform.count(v)) return false;
  return true;
}

bool KernelEmitter::isWorkgroupOp(const ir::Op& op) {
  ir::OpId n = op.id();
  if (op.info().has(ir::kBarrier)) return true;  // barrier, subgroup collectives
  if (n != ir::OpId::If && n != ir::OpId::For && n != ir::OpId::While && n != ir::OpId::Match) return false;
  if (M.hasBarrier(op)) {
    if (n == ir::OpId::Match) {
      M.fail(&op, &k, "a barrier inside 'match' is not supported; branch with 'if' instead");
      return false;
    }
    return true;
  }
  return n == ir::OpId::For && M.opts.hoistUniformLoops && uniform.count(op.operand(0)) &&
         uniform.count(op.operand(1)) && uniform.count(op.operand(2));
}

bool KernelEmitter::emitUniform(const ir::Op& op) {
  if (op.is(ir::OpId::WorkgroupAlloc)) {
    size_t off = 0;
    for (auto& [a, o] : wgl.offsets)
      if (a == &op) off = o;
    llvm::Value* v = llvm::PoisonValue::get(M.bufferTy);
    v = b.CreateInsertValue(v, b.CreateConstInBoundsGEP1_64(M.i8, wgmem, off), 0);
    v = b.CreateInsertValue(v, b.getInt64(uint64_t(op.intAttr("size"))), 1);
    F.set(op.result(0), v);
  } else if (!F.emitOp(op)) {
    return false;
  }
  for (const ir::Value* r : op.results()) uniform.insert(r);
  return true;
}

KernelEmitter::Slot KernelEmitter::newSlot(llvm::Type* t, const llvm::Twine& name) {
  // Cache-line aligned: a vectorised run moves whole vectors in and out of
  // it, which would otherwise straddle lines (a penalty on every access on
  // Intel cores: the strip matmul's accumulators live here across its K loop).
  Slot s = F.entryAlloca(llvm::ArrayType::get(t, N), name);
  s->setAlignment(llvm::Align(64));
  return s;
}

// One loop level (dimension d) of the invocation loop, then the next; the
// body runs inside the innermost.
bool KernelEmitter::loopLevel(int d, const std::function<bool()>& body, const std::vector<const ir::Op*>& ranged) {
  if (d < 0) {
    auto wide = [&](int k) { return b.CreateZExt(F.ids.local[k], M.i64); };
    lin = b.CreateAdd(wide(0), b.CreateMul(b.getInt64(size[0]),
                                           b.CreateAdd(wide(1), b.CreateMul(b.getInt64(size[1]), wide(2), "", true, true),
                                                       "", true, true), "", true, true), "lin", true, true);
    F.lin = lin;
    return body();
  }
  if (size[d] == 1) {
    F.ids.local[d] = b.getInt32(0);
    return loopLevel(d - 1, body, ranged);
  }
  if (d == 0 && !ranged.empty()) {
    // Two versions of the x loop: without bounds checks when every ranged
    // access stays in bounds for all of x, else with them.
    llvm::Value* ok = rangesInBounds(ranged);
    llvm::BasicBlock* fast = F.newBlock("inv.x.unchecked");
    llvm::BasicBlock* slow = F.newBlock("inv.x.checked");
    llvm::BasicBlock* merge = F.newBlock("inv.x.merge");
    b.CreateCondBr(ok, fast, slow, llvm::MDBuilder(M.ctx).createBranchWeights(1 << 20, 1));
    b.SetInsertPoint(fast);
    for (const ir::Op* op : ranged) F.unchecked.insert(op);
    bool good = loopLevel(0, body, {});
    for (const ir::Op* op : ranged) F.unchecked.erase(op);
    if (!good) return false;
    b.CreateBr(merge);
    b.SetInsertPoint(slow);
    if (!loopLevel(0, body, {})) return false;
    b.CreateBr(merge);
    b.SetInsertPoint(merge);
    return true;
  }
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* head = F.newBlock(d == 0 ? "inv.x" : d == 1 ? "inv.y" : "inv.z");
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* iv = b.CreatePHI(M.i32, 2, d == 0 ? "lx" : d == 1 ? "ly" : "lz");
  iv->addIncoming(b.getInt32(0), pre);
  F.ids.local[d] = iv;
  bool innermost = true;
  for (int k = d - 1; k >= 0; --k) innermost = innermost && size[k] == 1;
  if (!loopLevel(d - 1, body, ranged)) return false;
  llvm::Value* next = b.CreateAdd(iv, b.getInt32(1), "", true, true);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  llvm::BasicBlock* after = F.newBlock("inv.done");
  llvm::BranchInst* br = b.CreateCondBr(b.CreateICmpULT(next, b.getInt32(size[d])), head, after);
  // A short innermost invocation loop is still for the vectoriser, which
  // on its own would skip loops of fewer than 16 iterations that need
  // run-time checks (32-bit index arithmetic may wrap), and which runs
  // after the full unroller would have turned it into scalar code.
  const bool shortLoop = innermost && size[d] < 16;
  // Inside a workgroup-level loop, the values the invocations carry from
  // trip to trip live in slots (per-invocation arrays). Once the vector
  // loop is unrolled in full, its accesses to them are at constant offsets
  // and they stay in registers: the strip matmul's sums. LLVM's own
  // threshold unrolls a vector loop of 4 trips only where its body is
  // small (the matmul without an epilogue), so ask for it where the
  // carried values fit in registers.
  const bool unrollVectors = innermost && carriedBytes > 0 && carriedBytes <= kCarriedInRegisters;
  if (shortLoop || unrollVectors) {
    llvm::LLVMContext& c = M.ctx;
    auto flag = [&](const char* name) { return llvm::MDNode::get(c, {llvm::MDString::get(c, name)}); };
    auto flagOn = [&](const char* name) {
      return llvm::MDNode::get(c, {llvm::MDString::get(c, name), llvm::ConstantAsMetadata::get(b.getTrue())});
    };
    std::vector<llvm::Metadata*> ops = {nullptr, flag("llvm.loop.unroll.disable"), flagOn("llvm.loop.vectorize.enable")};
    if (unrollVectors) {
      // The vector loop's attributes (the followup's operands): unrolled in
      // full, and not vectorised again.
      llvm::Metadata* vectorized = llvm::MDNode::get(
          c, {llvm::MDString::get(c, "llvm.loop.isvectorized"), llvm::ConstantAsMetadata::get(b.getInt32(1))});
      ops.push_back(llvm::MDNode::get(c, {llvm::MDString::get(c, "llvm.loop.vectorize.followup_vectorized"),
                                          flag("llvm.loop.unroll.full"), vectorized}));
    }
    llvm::MDNode* loop = llvm::MDNode::getDistinct(c, ops);
    loop->replaceOperandWith(0, loop);
    br->setMetadata(llvm::LLVMContext::MD_loop, loop);
  }
  iv->addIncoming(next, latch);
  b.SetInsertPoint(after);
  return true;
}

bool KernelEmitter::invocationLoop(const std::function<bool()>& body, const std::vector<const ir::Op*>& ranged) {
  bool ok = loopLevel(2, body, ranged);
  for (int d = 0; d < 3; ++d) F.ids.local[d] = nullptr;
  lin = F.lin = nullptr;
  return ok;
}

// Does v depend on local_id x (directly or through global_id x)?
bool KernelEmitter::dependsOnX(const ir::Value* v, unsigned depth) const {
  if (uniform.count(v)) return false;
  const ir::Op* d = v->definingOp();
  if (!d || depth > 12) return true;
  ir::OpId n = d->id();
  if (n == ir::OpId::LocalId || n == ir::OpId::GlobalId) return !d->attr("dim") || d->intAttr("dim") == 0;
  if (n == ir::OpId::SubgroupId || n == ir::OpId::SubgroupLocalId) return true;
  for (const ir::Value* u : d->operands())
    if (dependsOnX(u, depth + 1)) return true;
  return false;
}

// An index that is (x id) + (something the same for all x), computed only
// from ids and uniform values with adds, subtracts and same-width casts, so
// that its values over a row of x ids are consecutive unless they wrap.
bool KernelEmitter::unitStrideInX(const ir::Value* v, unsigned depth) const {
  const ir::Op* d = v->definingOp();
  if (!d || depth > 12 || uniform.count(v)) return false;
  ir::OpId n = d->id();
  if (n == ir::OpId::LocalId || n == ir::OpId::GlobalId) return !d->attr("dim") || d->intAttr("dim") == 0;
  auto independent = [&](const ir::Value* u) { return !dependsOnX(u, depth + 1) && pureChain(u, depth + 1); };
  if (n == ir::OpId::Add)
    return (unitStrideInX(d->operand(0), depth + 1) && independent(d->operand(1))) ||
           (unitStrideInX(d->operand(1), depth + 1) && independent(d->operand(0)));
  if (n == ir::OpId::Sub) return unitStrideInX(d->operand(0), depth + 1) && independent(d->operand(1));
  if (n == ir::OpId::Cast) {
    const ir::Type* from = d->operand(0)->type();
    return from->isInt() && from->bits() == v->type()->bits() && unitStrideInX(d->operand(0), depth + 1);
  }
  return false;
}

// Computed by pure, non-trapping ops from ids and uniform values only, so it
// can be evaluated again for any x id.
bool KernelEmitter::pureChain(const ir::Value* v, unsigned depth) const {
  if (uniform.count(v)) return true;
  const ir::Op* d = v->definingOp();
  if (!d || depth > 12 || d->numRegions() || !d->info().has(ir::kPure)) return false;
  ir::OpId n = d->id();
  if (n == ir::OpId::Div || n == ir::OpId::Rem || n == ir::OpId::ArrayMake || n == ir::OpId::ArrayGet || n == ir::OpId::ArraySet) return false;
  for (const ir::Value* u : d->operands())
    if (!pureChain(u, depth + 1)) return false;
  return true;
}

// i1: every ranged access is in bounds for x = 0 .. size[0] - 1 (at the
// current y and z). The index is evaluated at both ends; no wrap-around in
// between (the last is not below the first) and the last below the length
// means all are in bounds.
llvm::Value* KernelEmitter::rangesInBounds(const std::vector<const ir::Op*>& ranged) {
  llvm::Value* all = b.getTrue();
  std::unordered_map<const ir::Value*, llvm::Value*> saved = F.vals;
  for (const ir::Op* op : ranged) {
    const ir::Value* index = op->operand(1);
    const ir::Type* t = index->type();
    llvm::Value* ends[2];
    for (int e = 0; e < 2; ++e) {
      F.ids.local[0] = b.getInt32(e == 0 ? 0 : size[0] - 1);
      std::vector<const ir::Op*> chain;
      std::unordered_set<const ir::Value*> seen;
      std::function<void(const ir::Value*)> collect = [&](const ir::Value* v) {
        if (uniform.count(v) || !seen.insert(v).second) return;
        for (const ir::Value* u : v->definingOp()->operands()) collect(u);
        chain.push_back(v->definingOp());
      };
      collect(index);
      for (const ir::Op* c : chain) F.emitOp(*c);
      ends[e] = F.get(index);
    }
    llvm::Value* len = b.CreateExtractValue(F.get(op->operand(0)), 1);
    bool sg = t->isSigned();
    llvm::Value* ordered = sg ? b.CreateAnd(b.CreateICmpSGE(ends[0], llvm::ConstantInt::get(ends[0]->getType(), 0)),
                                            b.CreateICmpSGE(ends[1], ends[0]))
                              : b.CreateICmpUGE(ends[1], ends[0]);
    llvm::Value* last = sg ? b.CreateSExtOrTrunc(ends[1], M.i64) : b.CreateZExtOrTrunc(ends[1], M.i64);
    all = b.CreateAnd(all, b.CreateAnd(ordered, b.CreateICmpULT(last, len)));
  }
  F.vals = std::move(saved);
  return all;
}

llvm::Value* KernelEmitter::checkUniform(Slot s, const ir::Op& site) {
  llvm::Type* t = slotElem(s);
  llvm::Value* first = b.CreateLoad(t, slotAt(s, b.getInt64(0)));
  if (N == 1) return first;
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* loop = F.newBlock("uniform.check");
  llvm::BasicBlock* next = F.newBlock("uniform.next");
  llvm::BasicBlock* diverged = F.newBlock("diverged");
  llvm::BasicBlock* done = F.newBlock("uniform.ok");
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  llvm::PHINode* i = b.CreatePHI(M.i64, 2);
  i->addIncoming(b.getInt64(1), pre);
  llvm::Value* x = b.CreateLoad(t, slotAt(s, i));
  b.CreateCondBr(b.CreateICmpEQ(x, first), next, diverged);
  b.SetInsertPoint(next);
  llvm::Value* i1 = b.CreateAdd(i, b.getInt64(1));
  i->addIncoming(i1, next);
  b.CreateCondBr(b.CreateICmpULT(i1, b.getInt64(N)), loop, done);
  b.SetInsertPoint(diverged);
  llvm::Value* field = b.CreateConstInBoundsGEP1_64(M.i8, status, offsetof(KernelStatus, diverged));
  b.CreateAlignedStore(b.getInt32(M.siteOf(site) + 1), field, llvm::Align(4))->setAtomic(llvm::AtomicOrdering::Monotonic);
  b.CreateBr(exitBB);
  b.SetInsertPoint(done);
  return first;
}

llvm::Value* KernelEmitter::uniformValue(const ir::Value* v, const ir::Op& site) {
  if (uniform.count(v)) return F.get(v);
  return checkUniform(slots.at(v), site);
}

bool KernelEmitter::copyInto(const std::vector<std::pair<const ir::Value*, Slot>>& moves) {
  if (moves.empty()) return true;
  return invocationLoop([&] {
    for (auto& [src, dst] : moves) {
      llvm::Value* v = uniform.count(src) ? F.get(src) : b.CreateLoad(slotElem(dst), slotAt(slots.at(src), lin));
      b.CreateStore(v, slotAt(dst, lin));
    }
    return true;
  });
}

// A run: every invocation executes `run` in turn. Values it needs from
// earlier runs come from their slots; values later code needs go to slots;
// a terminator stores its operands into `targets`.
bool KernelEmitter::flush(const ir::Region& r, std::vector<const ir::Op*>& run,
                          const std::vector<Slot>& targets) {
  if (run.empty()) return true;
  if (run.size() == 1 && run[0]->info().has(ir::kTerminator) && run[0]->numOperands() == 0) {
    run.clear();
    return true;
  }
  std::unordered_set<const ir::Op*> inRun(run.begin(), run.end());
  auto topOf = [&](const ir::Op* op) {
    while (op && op->parentRegion() != &r) op = op->parentOp();
    return op;
  };
  auto definedInRun = [&](const ir::Value* v) {
    const ir::Op* d = v->definingOp() ? v->definingOp() : v->parentRegion()->parentOp();
    const ir::Op* top = topOf(d);
    return top && inRun.count(top);
  };
  std::vector<const ir::Value*> externals;
  std::vector<const ir::Op*> remat;  // recomputed here, in dependency order
  std::unordered_set<const ir::Value*> seen;
  std::vector<const ir::Value*> defined;
  // Cheap pure values (ids and arithmetic on them) are recomputed in each
  // run rather than kept in slots, so LLVM sees that an index such as
  // wg * 8 + local_id is affine in the invocation and loads contiguously.
  std::function<bool(const ir::Value*, unsigned)> rematerialisable = [&](const ir::Value* v, unsigned depth) {
    const ir::Op* d = v->definingOp();
    if (!d || depth > 12 || d->numRegions() || !d->info().has(ir::kPure) || d->is(ir::OpId::WorkgroupAlloc))
      return false;
    for (const ir::Value* u : d->operands())
      if (!uniform.count(u) && !rematerialisable(u, depth + 1)) return false;
    return true;
  };
  std::function<void(const ir::Value*)> addRemat = [&](const ir::Value* v) {
    if (uniform.count(v) || !seen.insert(v).second) return;
    for (const ir::Value* u : v->definingOp()->operands()) addRemat(u);
    remat.push_back(v->definingOp());
  };
  for (const ir::Op* top : run) {
    bool ok = true;
    const_cast<ir::Op*>(top)->walk([&](ir::Op* op) {
      for (const ir::Value* v : op->operands()) {
        if (uniform.count(v) || definedInRun(v) || seen.count(v)) continue;
        if (rematerialisable(v, 0)) {
          addRemat(v);
          continue;
        }
        seen.insert(v);
        if (!slots.count(v)) ok = false;
        externals.push_back(v);
      }
      for (const ir::Value* v : op->results()) defined.push_back(v);
      for (unsigned i = 0; i < op->numRegions(); ++i)
        for (const ir::Value* a : op->region(i).args()) defined.push_back(a);
    });
    if (!ok) return M.fail(top, &k, "internal error: a value crossing a barrier has no storage");
  }
  // Results that code outside this run uses.
  std::unordered_map<const ir::Value*, Slot> escaping;
  for (const ir::Op* top : run)
    for (const ir::Value* v : top->results())
      for (const ir::Use& u : v->uses())
        if (!inRun.count(topOf(u.user))) {
          escaping[v] = slotFor(v);
          break;
        }

  // Buffer accesses whose index runs along x with unit stride: the x loop is
  // versioned on them (only where there is an x loop to vectorise).
  std::vector<const ir::Op*> ranged;
  if (size[0] > 1)
    for (const ir::Op* top : run)
      const_cast<ir::Op*>(top)->walk([&](ir::Op* op) {
        ir::OpId n = op->id();
        if ((n == ir::OpId::Load || n == ir::OpId::Store || ir::isAtomic(n)) && !F.unchecked.count(op) &&
            uniform.count(op->operand(0)) && unitStrideInX(op->operand(1), 0) && pureChain(op->operand(1), 0))
          ranged.push_back(op);
      });

  bool ok = invocationLoop([&] {
    for (const ir::Value* v : externals) {
      Slot s = slots.at(v);
      F.set(v, b.CreateLoad(slotElem(s), slotAt(s, lin)));
    }
    for (const ir::Op* op : remat)
      if (!F.emitOp(*op)) return false;
    for (const ir::Op* op : run) {
      if (op->info().has(ir::kTerminator)) {
        for (unsigned i = 0; i < op->numOperands(); ++i) b.CreateStore(F.get(op->operand(i)), slotAt(targets[i], lin));
        continue;
      }
      if (!F.emitOp(*op)) return false;
      for (const ir::Value* v : op->results())
        if (auto it = escaping.find(v); it != escaping.end()) b.CreateStore(F.get(v), slotAt(it->second, lin));
    }
    return true;
  }, ranged);
  for (const ir::Value* v : externals) F.vals.erase(v);
  for (const ir::Op* op : remat)
    for (const ir::Value* v : op->results()) F.vals.erase(v);
  for (const ir::Value* v : defined) F.vals.erase(v);
  run.clear();
  return ok;
}

// Whether an op of `run` (or one nested in it) may write memory.
bool KernelEmitter::writesMemory(const std::vector<const ir::Op*>& run) const {
  bool writes = false;
  for (const ir::Op* top : run)
    const_cast<ir::Op*>(top)->walk([&](ir::Op* op) {
      ir::OpId n = op->id();
      if (n == ir::OpId::Store || n == ir::OpId::VecStore || n == ir::OpId::CoopStore || ir::isAtomic(n) ||
          n == ir::OpId::Call || n == ir::OpId::CallC || n == ir::OpId::CallIndirect)
        writes = true;
    });
  return writes;
}

bool KernelEmitter::emitRegion(const ir::Region& r, const std::vector<Slot>& targets) {
  std::vector<const ir::Op*> run;
  for (const auto& op : r.ops()) {
    if (op->info().has(ir::kTerminator)) {
      run.push_back(op.get());
      return flush(r, run, targets);
    }
    if (isUniformOp(*op)) {
      if ((op->is(ir::OpId::Load) || op->is(ir::OpId::VecLoad)) && writesMemory(run) && !flush(r, run, targets))
        return false;
      if (!emitUniform(*op)) return false;
      continue;
    }
    bool wg = isWorkgroupOp(*op);
    if (M.error) return false;
    if (!wg) {
      run.push_back(op.get());
      continue;
    }
    if (!flush(r, run, targets) || !emitWorkgroupOp(*op)) return false;
  }
  return M.fail(r.parentOp(), &k, "region without a terminator");
}

bool KernelEmitter::emitWorkgroupOp(const ir::Op& op) {
  ir::OpId n = op.id();
  if (n == ir::OpId::Barrier) return true;  // runs end here: every invocation is done with the last one
  if (op.info().has(ir::kBarrier)) return emitCollective(op);
  if (n == ir::OpId::If) return emitWorkgroupIf(op);
  if (n == ir::OpId::For) return emitWorkgroupFor(op);
  return emitWorkgroupWhile(op);
}

// A subgroup collective: its operands in slots (uniform ones copied into
// one), its result into a new slot (LowerSubgroup.cpp).
bool KernelEmitter::emitCollective(const ir::Op& op) {
  std::vector<Slot> in;
  for (const ir::Value* v : op.operands()) {
    if (uniform.count(v)) {
      Slot s = newSlot(M.valueType(v->type()), "sg.in");
      if (!copyInto({{v, s}})) return false;
      in.push_back(s);
    } else if (auto it = slots.find(v); it != slots.end()) {
      in.push_back(it->second);
    } else {
      return M.fail(&op, &k, "internal error: an operand of a subgroup collective has no storage");
    }
  }
  return emitSubgroupCollective(F, op, in[0], in.size() > 1 ? in[1] : nullptr, slotFor(op.result(0)), N);
}

bool KernelEmitter::emitWorkgroupIf(const ir::Op& op) {
  llvm::Value* c = uniformValue(op.operand(0), op);
  std::vector<Slot> results;
  for (const ir::Value* v : op.results()) results.push_back(slotFor(v));
  llvm::BasicBlock* thenBB = F.newBlock("wg.then");
  llvm::BasicBlock* elseBB = F.newBlock("wg.else");
  llvm::BasicBlock* merge = F.newBlock("wg.endif");
  b.CreateCondBr(c, thenBB, elseBB);
  for (unsigned r = 0; r < 2; ++r) {
    b.SetInsertPoint(r == 0 ? thenBB : elseBB);
    if (!emitRegion(op.region(r), results)) return false;
    b.CreateBr(merge);
  }
  b.SetInsertPoint(merge);
  return true;
}

bool KernelEmitter::emitWorkgroupFor(const ir::Op& op) {
  const ir::Type* t = op.operand(0)->type();
  llvm::Value* lo = uniformValue(op.operand(0), op);
  llvm::Value* hi = uniformValue(op.operand(1), op);
  llvm::Value* step = uniformValue(op.operand(2), op);
  const ir::Region& body = op.region(0);
  std::vector<Slot> carried;
  std::vector<std::pair<const ir::Value*, Slot>> init;
  for (unsigned j = 0; j < op.numResults(); ++j) {
    Slot s = slotFor(op.result(j));
    slots[body.arg(j + 1)] = s;
    carried.push_back(s);
    init.emplace_back(op.operand(3 + j), s);
  }
  if (!copyInto(init)) return false;
  llvm::Value* stepOk = F.forStepOk(op, step);
  // Accesses in bounds on every trip (LoopBounds.cpp): tested once, then a
  // copy of the loop without their checks (at most two loops deep: each
  // level doubles the code).
  std::vector<const ir::Op*> candidates, proven;
  if (versioned < 2)
    const_cast<ir::Op&>(op).walk([&](ir::Op* a) {
      ir::OpId n = a->id();
      if ((n == ir::OpId::Load || n == ir::OpId::Store || n == ir::OpId::VecLoad || n == ir::OpId::VecStore ||
           ir::isAtomic(n)) && !F.unchecked.count(a))
        candidates.push_back(a);
    });
  llvm::Value* ok = nullptr;
  if (!candidates.empty()) {
    // The last counter value of a loop that runs: first + (hi - 1 - first) / step · step.
    llvm::Value* positive = t->isSigned() ? b.CreateICmpSGT(step, llvm::ConstantInt::get(step->getType(), 0))
                                          : b.CreateICmpNE(step, llvm::ConstantInt::get(step->getType(), 0));
    llvm::Value* divisor = b.CreateSelect(positive, step, llvm::ConstantInt::get(step->getType(), 1));
    llvm::Value* span = b.CreateSub(b.CreateSub(hi, llvm::ConstantInt::get(hi->getType(), 1)), lo);
    llvm::Value* last = b.CreateAdd(lo, b.CreateMul(b.CreateUDiv(span, divisor), step));
    ok = accessesInBounds(F, {body.arg(0), lo, last}, uniform, size, candidates, proven);
    if (ok) ok = b.CreateAnd(ok, positive);
  }
  if (!ok) return emitForLoop(op, lo, hi, step, stepOk, carried);
  llvm::BasicBlock* fast = F.newBlock("wg.for.unchecked");
  llvm::BasicBlock* slow = F.newBlock("wg.for.checked");
  llvm::BasicBlock* merge = F.newBlock("wg.for.merge");
  b.CreateCondBr(ok, fast, slow, llvm::MDBuilder(M.ctx).createBranchWeights(1 << 20, 1));
  b.SetInsertPoint(fast);
  ++versioned;
  for (const ir::Op* a : proven) F.unchecked.insert(a);
  bool good = emitForLoop(op, lo, hi, step, stepOk, carried);
  for (const ir::Op* a : proven) F.unchecked.erase(a);
  if (good) {
    b.CreateBr(merge);
    b.SetInsertPoint(slow);
    good = emitForLoop(op, lo, hi, step, stepOk, carried);
    b.CreateBr(merge);
  }
  --versioned;
  b.SetInsertPoint(merge);
  return good;
}

// The loop itself (emitted twice where emitWorkgroupFor versions it).
bool KernelEmitter::emitForLoop(const ir::Op& op, llvm::Value* lo, llvm::Value* hi, llvm::Value* step,
                                llvm::Value* stepOk, const std::vector<Slot>& carried) {
  const ir::Type* t = op.operand(0)->type();
  const ir::Region& body = op.region(0);
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* header = F.newBlock("wg.for");
  llvm::BasicBlock* bodyBB = F.newBlock("wg.for.body");
  llvm::BasicBlock* exit = F.newBlock("wg.for.exit");
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode* iv = b.CreatePHI(lo->getType(), 2, "wg.iv");
  iv->addIncoming(lo, pre);
  llvm::Value* go = F.forCondition(t, iv, hi, step);
  if (!llvm::isa<llvm::Constant>(stepOk)) go = b.CreateAnd(stepOk, go);
  b.CreateCondBr(go, bodyBB, exit);
  b.SetInsertPoint(bodyBB);
  F.set(body.arg(0), iv);
  uniform.insert(body.arg(0));
  const uint64_t outer = carriedBytes;
  carriedBytes += slotBytes(carried);
  bool ok = emitRegion(body, carried);
  carriedBytes = outer;
  // The body's values are not the same from trip to trip, nor in a second
  // copy of the loop: none of them is uniform outside it.
  const_cast<ir::Op&>(op).walk([&](ir::Op* a) {
    for (const ir::Value* v : a->results()) uniform.erase(v);
    for (unsigned i = 0; i < a->numRegions(); ++i)
      for (const ir::Value* v : a->region(i).args()) uniform.erase(v);
  });
  if (!ok) return false;
  llvm::Value* overflow;
  llvm::Value* next = F.forNext(t, iv, step, overflow);
  iv->addIncoming(next, b.GetInsertBlock());
  b.CreateCondBr(overflow, exit, header);
  b.SetInsertPoint(exit);
  return true;
}

bool KernelEmitter::emitWorkgroupWhile(const ir::Op& op) {
  const ir::Region& before = op.region(0);
  const ir::Region& after = op.region(1);
  std::vector<Slot> state;
  std::vector<std::pair<const ir::Value*, Slot>> init;
  for (unsigned j = 0; j < op.numOperands(); ++j) {
    Slot s = slotFor(before.arg(j));
    state.push_back(s);
    init.emplace_back(op.operand(j), s);
  }
  std::vector<Slot> cond = {newSlot(M.i1, "cond")};
  for (unsigned j = 0; j < op.numResults(); ++j) {
    Slot s = slotFor(after.arg(j));
    slots[op.result(j)] = s;
    cond.push_back(s);
  }
  if (!copyInto(init)) return false;
  llvm::BasicBlock* header = F.newBlock("wg.while");
  llvm::BasicBlock* bodyBB = F.newBlock("wg.while.body");
  llvm::BasicBlock* exit = F.newBlock("wg.while.exit");
  b.CreateBr(header);
  b.SetInsertPoint(header);
  const uint64_t outer = carriedBytes;
  carriedBytes += slotBytes(state);
  bool ok = emitRegion(before, cond);
  if (ok) {
    b.CreateCondBr(checkUniform(cond[0], op), bodyBB, exit);
    b.SetInsertPoint(bodyBB);
    ok = emitRegion(after, state);
  }
  carriedBytes = outer;
  if (!ok) return false;
  b.CreateBr(header);
  b.SetInsertPoint(exit);
  return true;
}

bool KernelEmitter::emit() {
  llvm::Function* fn = F.fn;
  auto arg = fn->arg_begin();
  llvm::Value* bufs = &*arg++;
  llvm::Value* lens = &*arg++;
  llvm::Value* params = &*arg++;
  for (int d = 0; d < 3; ++d) F.ids.group[d] = &*arg++;
  for (int d = 0; d < 3; ++d) F.ids.numGroups[d] = &*arg++;
  wgmem = &*arg++;
  status = &*arg++;
  for (int d = 0; d < 3; ++d) F.ids.size[d] = b.getInt32(size[d]);

  b.SetInsertPoint(llvm::BasicBlock::Create(M.ctx, "entry", fn));
  llvm::AllocaInst* scratch = F.entryAlloca(llvm::ArrayType::get(M.i8, sizeof(TrapScratch)), "traps");
  scratch->setAlignment(llvm::Align(8));
  F.trapMask = scratch;
  b.CreateStore(b.getInt64(0), F.trapMask);
  b.CreateStore(b.getInt32(0), b.CreateConstInBoundsGEP1_64(M.i8, scratch, offsetof(TrapScratch, oob.site)));
  F.oobSites = F.entryAlloca(llvm::ArrayType::get(M.i32, N), "oob.sites");
  F.oobIndices = F.entryAlloca(llvm::ArrayType::get(M.i64, N), "oob.indices");
  F.oobLengths = F.entryAlloca(llvm::ArrayType::get(M.i64, N), "oob.lengths");
  b.CreateMemSet(F.oobSites, b.getInt8(0), 4 * N, llvm::Align(4));
  ParamBlockLayout pl = paramBlockLayout(k);
  for (unsigned i = 0; i < k.paramTypes().size(); ++i) {
    const ir::Type* t = k.paramTypes()[i];
    if (t->isFunction() || ir::hasTypeVar(t))
      return M.fail(nullptr, &k, "parameter of type '" + t->str() + "': " +
                                     (t->isFunction() ? "a function value" : "a type variable") +
                                     " (run the monomorphize pass first)");
    if (!M.valueType(t)) return M.fail(nullptr, &k, "parameter of type '" + t->str() + "' is not supported");
    llvm::Value* v;
    if (t->isBuffer()) {
      unsigned binding = unsigned(k.bindingOf(i));
      llvm::Value* base = b.CreateLoad(M.ptr, b.CreateConstInBoundsGEP1_64(M.ptr, bufs, binding));
      llvm::Value* len = b.CreateLoad(M.i64, b.CreateConstInBoundsGEP1_64(M.i64, lens, binding));
      v = b.CreateInsertValue(b.CreateInsertValue(llvm::PoisonValue::get(M.bufferTy), base, 0), len, 1);
    } else {
      v = F.loadStorage(t, b.CreateConstInBoundsGEP1_64(M.i8, params, pl.offsets[i]));
    }
    F.set(k.param(i), v);
    uniform.insert(k.param(i));
  }
  exitBB = F.newBlock("exit");
  if (!emitRegion(k.body(), {})) return false;
  b.CreateBr(exitBB);

  // Report the trap bits once per workgroup, and its first out-of-bounds
  // access unless another workgroup's came first.
  b.SetInsertPoint(exitBB);
  llvm::Value* mask = b.CreateLoad(M.i64, F.trapMask);
  llvm::BasicBlock* report = F.newBlock("report");
  llvm::BasicBlock* claim = F.newBlock("report.oob");
  llvm::BasicBlock* copy = F.newBlock("report.oob.first");
  llvm::BasicBlock* ret = F.newBlock("return");
  b.CreateCondBr(b.CreateICmpNE(mask, b.getInt64(0)), report, ret);
  b.SetInsertPoint(report);
  b.CreateAtomicRMW(llvm::AtomicRMWInst::Or, status, mask, llvm::Align(8), llvm::AtomicOrdering::Monotonic);
  auto at = [&](llvm::Value* base, size_t off) { return b.CreateConstInBoundsGEP1_64(M.i8, base, off); };
  size_t from = offsetof(TrapScratch, oob), to = offsetof(KernelStatus, oob);
  pickFirstOutOfBounds(at(scratch, from));
  llvm::Value* site = b.CreateAlignedLoad(M.i32, at(scratch, from), llvm::Align(4));
  b.CreateCondBr(b.CreateICmpNE(site, b.getInt32(0)), claim, ret);
  b.SetInsertPoint(claim);
  auto mono = llvm::AtomicOrdering::Monotonic;
  llvm::Value* won = b.CreateExtractValue(
      b.CreateAtomicCmpXchg(at(status, to), b.getInt32(0), site, llvm::Align(4), mono, mono), 1);
  b.CreateCondBr(won, copy, ret);
  b.SetInsertPoint(copy);
  size_t rest = offsetof(OutOfBounds, globalId);
  b.CreateMemCpy(at(status, to + rest), llvm::Align(4), at(scratch, from + rest), llvm::Align(4),
                 sizeof(OutOfBounds) - rest);
  b.CreateBr(ret);
  b.SetInsertPoint(ret);
  b.CreateRetVoid();
  return true;
}

void KernelEmitter::pickFirstOutOfBounds(llvm::Value* record) {
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* scan = F.newBlock("oob.scan");
  llvm::BasicBlock* next = F.newBlock("oob.next");
  llvm::BasicBlock* found = F.newBlock("oob.found");
  llvm::BasicBlock* done = F.newBlock("oob.picked");
  b.CreateBr(scan);
  b.SetInsertPoint(scan);
  llvm::PHINode* i = b.CreatePHI(M.i64, 2, "inv");
  i->addIncoming(b.getInt64(0), pre);
  llvm::Value* site = b.CreateLoad(M.i32, b.CreateInBoundsGEP(M.i32, F.oobSites, i));
  b.CreateCondBr(b.CreateICmpNE(site, b.getInt32(0)), found, next);
  b.SetInsertPoint(next);
  llvm::Value* i1 = b.CreateAdd(i, b.getInt64(1));
  i->addIncoming(i1, next);
  llvm::BranchInst* br = b.CreateCondBr(b.CreateICmpULT(i1, b.getInt64(N)), scan, done);
  llvm::MDNode* noUnroll = llvm::MDNode::get(M.ctx, {llvm::MDString::get(M.ctx, "llvm.loop.unroll.disable")});
  llvm::MDNode* loop = llvm::MDNode::getDistinct(M.ctx, {nullptr, noUnroll});
  loop->replaceOperandWith(0, loop);
  br->setMetadata(llvm::LLVMContext::MD_loop, loop);  // a cold path: keep it short
  b.SetInsertPoint(found);
  auto field = [&](size_t off) { return b.CreateConstInBoundsGEP1_64(M.i8, record, off); };
  b.CreateStore(site, field(offsetof(OutOfBounds, site)));
  b.CreateStore(b.CreateLoad(M.i64, b.CreateInBoundsGEP(M.i64, F.oobIndices, i)), field(offsetof(OutOfBounds, index)));
  b.CreateStore(b.CreateLoad(M.i64, b.CreateInBoundsGEP(M.i64, F.oobLengths, i)), field(offsetof(OutOfBounds, length)));
  llvm::Value* rest = i;  // linear = x + size.x * (y + size.y * z)
  for (int d = 0; d < 3; ++d) {
    llvm::Value* local = b.CreateTrunc(d == 2 ? rest : b.CreateURem(rest, b.getInt64(size[d])), M.i32);
    rest = b.CreateUDiv(rest, b.getInt64(size[d]));
    llvm::Value* gid = b.CreateAdd(b.CreateMul(F.ids.group[d], b.getInt32(size[d])), local);
    b.CreateStore(gid, field(offsetof(OutOfBounds, globalId) + 4 * d));
  }
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

// k.range: workgroups begin..end-1, x fastest.
void emitRange(ModuleEmitter& M, llvm::Function* wg, const std::string& name) {
  auto* i32 = M.i32;
  auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(M.ctx),
                                      {M.ptr, M.ptr, M.ptr, i32, i32, i32, M.i64, M.i64, M.ptr, M.ptr}, false);
  auto* fn = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, name + ".range", *M.mod);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  auto a = fn->arg_begin();
  llvm::Value *bufs = &*a++, *lens = &*a++, *params = &*a++;
  llvm::Value *nx = &*a++, *ny = &*a++, *nz = &*a++;
  llvm::Value *begin = &*a++, *end = &*a++, *wgmem = &*a++, *status = &*a++;
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(M.ctx, "entry", fn));
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(M.ctx, "loop", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(M.ctx, "done", fn);
  b.CreateCondBr(b.CreateICmpULT(begin, end), loop, done);
  b.SetInsertPoint(loop);
  llvm::PHINode* g = b.CreatePHI(M.i64, 2, "group");
  g->addIncoming(begin, &fn->getEntryBlock());
  llvm::Value* wx = b.CreateZExt(nx, M.i64);
  llvm::Value* wy = b.CreateZExt(ny, M.i64);
  llvm::Value* x = b.CreateURem(g, wx);
  llvm::Value* rest = b.CreateUDiv(g, wx);
  llvm::Value* y = b.CreateURem(rest, wy);
  llvm::Value* z = b.CreateUDiv(rest, wy);
  b.CreateCall(wg, {bufs, lens, params, b.CreateTrunc(x, i32), b.CreateTrunc(y, i32), b.CreateTrunc(z, i32),
                    nx, ny, nz, wgmem, status});
  llvm::Value* next = b.CreateAdd(g, b.getInt64(1));
  g->addIncoming(next, loop);
  b.CreateCondBr(b.CreateICmpULT(next, end), loop, done);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
}

}  // namespace

bool emitKernel(ModuleEmitter& M, const ir::Function& k) {
  auto* i32 = M.i32;
  auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(M.ctx),
                                      {M.ptr, M.ptr, M.ptr, i32, i32, i32, i32, i32, i32, M.ptr, M.ptr}, false);
  auto linkage = M.opts.exportWorkgroup ? llvm::GlobalValue::ExternalLinkage : llvm::GlobalValue::InternalLinkage;
  auto* fn = llvm::Function::Create(fty, linkage, k.name(), *M.mod);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  for (unsigned i : {0u, 1u, 2u}) {
    fn->addParamAttr(i, llvm::Attribute::NoCapture);
    fn->addParamAttr(i, llvm::Attribute::ReadOnly);
  }
  KernelEmitter e(M, k, fn);
  if (!e.emit()) {
    if (!M.error) M.fail(nullptr, &k, "internal error lowering the kernel");
    return false;
  }
  emitRange(M, fn, k.name());
  return true;
}

}  // namespace eph::llvmtarget
