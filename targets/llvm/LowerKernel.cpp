// Kernels: a function over one workgroup. The kernel body is split into runs
// (loops over the workgroup's invocations) and workgroup-level ops (barriers,
// control flow that holds a barrier, uniform loops), as targets/llvm/Llvm.h
// describes. Values crossing from one run to another live in per-invocation
// arrays ("slots": [N x T] allocas indexed by the linear invocation index).
#include <llvm/IR/Intrinsics.h>

#include <functional>
#include <unordered_set>

#include "ir/OpTable.h"
#include "targets/llvm/Emitter.h"

namespace eph::llvmtarget {
namespace {

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
  bool isWorkgroupOp(const ir::Op& op);
  bool emitUniform(const ir::Op& op);
  bool emitRegion(const ir::Region& r, const std::vector<Slot>& targets);
  bool flush(const ir::Region& r, std::vector<const ir::Op*>& run, const std::vector<Slot>& targets);
  bool emitWorkgroupOp(const ir::Op& op);
  bool emitWorkgroupIf(const ir::Op& op);
  bool emitWorkgroupFor(const ir::Op& op);
  bool emitWorkgroupWhile(const ir::Op& op);

  // Emits body() inside a loop over every invocation (z, y, x; x innermost).
  bool invocationLoop(const std::function<bool()>& body);
  Slot newSlot(llvm::Type* t, const llvm::Twine& name = "slot");
  Slot slotFor(const ir::Value* v) { return slots[v] = newSlot(M.valueType(v->type()), "slot"); }
  llvm::Type* slotElem(Slot s) const { return llvm::cast<llvm::ArrayType>(s->getAllocatedType())->getElementType(); }
  llvm::Value* slotAt(Slot s, llvm::Value* index) { return b.CreateInBoundsGEP(s->getAllocatedType(), s, {b.getInt64(0), index}); }
  // The value of v shared by the whole workgroup: uniform values as they are;
  // values in slots are checked to agree (barrier divergence otherwise).
  llvm::Value* uniformValue(const ir::Value* v, const ir::Op& site);
  llvm::Value* checkUniform(Slot s, const ir::Op& site);
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
};

bool KernelEmitter::isUniformOp(const ir::Op& op) const {
  if (op.numRegions() || op.numResults() == 0) return false;
  std::string_view n = op.name();
  if (n == "workgroup.alloc" || n == "const" || n == "workgroup_id" || n == "num_workgroups" ||
      n == "workgroup_size" || n == "subgroup_size")
    return true;
  if (n == "local_id" || n == "global_id" || n == "subgroup_id" || n == "subgroup_local_id") return false;
  if (!op.info().has(ir::kPure)) return false;
  for (const ir::Value* v : op.operands())
    if (!uniform.count(v)) return false;
  return true;
}

bool KernelEmitter::isWorkgroupOp(const ir::Op& op) {
  std::string_view n = op.name();
  if (n == "barrier") return true;
  if (n != "if" && n != "for" && n != "while" && n != "match") return false;
  if (M.hasBarrier(op)) {
    if (n == "match") {
      M.fail(&op, &k, "a barrier inside 'match' is not supported; branch with 'if' instead");
      return false;
    }
    return true;
  }
  return n == "for" && M.opts.hoistUniformLoops && uniform.count(op.operand(0)) &&
         uniform.count(op.operand(1)) && uniform.count(op.operand(2));
}

bool KernelEmitter::emitUniform(const ir::Op& op) {
  if (op.name() == "workgroup.alloc") {
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
  return F.entryAlloca(llvm::ArrayType::get(t, N), name);
}

bool KernelEmitter::invocationLoop(const std::function<bool()>& body) {
  struct Level {
    int dim;
    llvm::PHINode* iv;
    llvm::BasicBlock* head;
  };
  std::vector<Level> levels;
  for (int d = 2; d >= 0; --d) {
    if (size[d] == 1) {
      F.ids.local[d] = b.getInt32(0);
      continue;
    }
    llvm::BasicBlock* pre = b.GetInsertBlock();
    llvm::BasicBlock* head = F.newBlock(d == 0 ? "inv.x" : d == 1 ? "inv.y" : "inv.z");
    b.CreateBr(head);
    b.SetInsertPoint(head);
    llvm::PHINode* iv = b.CreatePHI(M.i32, 2, d == 0 ? "lx" : d == 1 ? "ly" : "lz");
    iv->addIncoming(b.getInt32(0), pre);
    F.ids.local[d] = iv;
    levels.push_back({d, iv, head});
  }
  auto wide = [&](int d) { return b.CreateZExt(F.ids.local[d], M.i64); };
  lin = b.CreateAdd(wide(0), b.CreateMul(b.getInt64(size[0]),
                                         b.CreateAdd(wide(1), b.CreateMul(b.getInt64(size[1]), wide(2), "", true, true),
                                                     "", true, true), "", true, true), "lin", true, true);
  if (!body()) return false;
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    llvm::Value* next = b.CreateAdd(it->iv, b.getInt32(1), "", true, true);
    llvm::BasicBlock* latch = b.GetInsertBlock();
    llvm::BasicBlock* after = F.newBlock("inv.done");
    b.CreateCondBr(b.CreateICmpULT(next, b.getInt32(size[it->dim])), it->head, after);
    it->iv->addIncoming(next, latch);
    b.SetInsertPoint(after);
  }
  for (int d = 0; d < 3; ++d) F.ids.local[d] = nullptr;
  lin = nullptr;
  return true;
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
  std::unordered_set<const ir::Value*> seen;
  std::vector<const ir::Value*> defined;
  for (const ir::Op* top : run) {
    bool ok = true;
    const_cast<ir::Op*>(top)->walk([&](ir::Op* op) {
      for (const ir::Value* v : op->operands()) {
        if (uniform.count(v) || definedInRun(v) || !seen.insert(v).second) continue;
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

  bool ok = invocationLoop([&] {
    for (const ir::Value* v : externals) {
      Slot s = slots.at(v);
      F.set(v, b.CreateLoad(slotElem(s), slotAt(s, lin)));
    }
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
  });
  for (const ir::Value* v : externals) F.vals.erase(v);
  for (const ir::Value* v : defined) F.vals.erase(v);
  run.clear();
  return ok;
}

bool KernelEmitter::emitRegion(const ir::Region& r, const std::vector<Slot>& targets) {
  std::vector<const ir::Op*> run;
  for (const auto& op : r.ops()) {
    if (op->info().has(ir::kTerminator)) {
      run.push_back(op.get());
      return flush(r, run, targets);
    }
    if (isUniformOp(*op)) {
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
  std::string_view n = op.name();
  if (n == "barrier") return true;  // runs end here: every invocation is done with the last one
  if (n == "if") return emitWorkgroupIf(op);
  if (n == "for") return emitWorkgroupFor(op);
  return emitWorkgroupWhile(op);
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
  if (!emitRegion(body, carried)) return false;
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
  if (!emitRegion(before, cond)) return false;
  b.CreateCondBr(checkUniform(cond[0], op), bodyBB, exit);
  b.SetInsertPoint(bodyBB);
  if (!emitRegion(after, state)) return false;
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
  F.trapMask = F.entryAlloca(M.i64, "trapmask");
  b.CreateStore(b.getInt64(0), F.trapMask);
  ParamBlockLayout pl = paramBlockLayout(k);
  for (unsigned i = 0; i < k.paramTypes().size(); ++i) {
    const ir::Type* t = k.paramTypes()[i];
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

  // Report the trap bits once per workgroup.
  b.SetInsertPoint(exitBB);
  llvm::Value* mask = b.CreateLoad(M.i64, F.trapMask);
  llvm::BasicBlock* report = F.newBlock("report");
  llvm::BasicBlock* ret = F.newBlock("return");
  b.CreateCondBr(b.CreateICmpNE(mask, b.getInt64(0)), report, ret);
  b.SetInsertPoint(report);
  b.CreateAtomicRMW(llvm::AtomicRMWInst::Or, status, mask, llvm::Align(8), llvm::AtomicOrdering::Monotonic);
  b.CreateBr(ret);
  b.SetInsertPoint(ret);
  b.CreateRetVoid();
  return true;
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
  auto* fn = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, k.name(), *M.mod);
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
