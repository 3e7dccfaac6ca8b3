// Per-invocation control flow (if, for, while, match), calls to device
// functions and the invocation builtins. Structured regions become basic
// blocks; region arguments and results become phis.
#include <llvm/IR/Intrinsics.h>

#include "ir/OpTable.h"
#include "targets/llvm/Emitter.h"

namespace eph::llvmtarget {

// The iv continues while iv < hi, or iv > hi for a negative step of a signed
// type (docs/ir.md).
llvm::Value* FunctionEmitter::forCondition(const ir::Type* t, llvm::Value* iv, llvm::Value* hi,
                                           llvm::Value* step) {
  if (!t->isSigned()) return b.CreateICmpULT(iv, hi);
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(step))
    return c->isNegative() ? b.CreateICmpSGT(iv, hi) : b.CreateICmpSLT(iv, hi);
  llvm::Value* up = b.CreateICmpSGT(step, llvm::ConstantInt::get(step->getType(), 0));
  return b.CreateSelect(up, b.CreateICmpSLT(iv, hi), b.CreateICmpSGT(iv, hi));
}

// The loop ends instead of wrapping around.
llvm::Value* FunctionEmitter::forNext(const ir::Type* t, llvm::Value* iv, llvm::Value* step,
                                      llvm::Value*& overflow) {
  auto id = t->isSigned() ? llvm::Intrinsic::sadd_with_overflow : llvm::Intrinsic::uadd_with_overflow;
  llvm::Value* pair = b.CreateBinaryIntrinsic(id, iv, step);
  overflow = b.CreateExtractValue(pair, 1);
  return b.CreateExtractValue(pair, 0);
}

llvm::Value* FunctionEmitter::forStepOk(const ir::Op& op, llvm::Value* step) {
  llvm::Value* zero = b.CreateICmpEQ(step, llvm::ConstantInt::get(step->getType(), 0));
  trapIf(op, zero);
  return b.CreateNot(zero);
}

bool FunctionEmitter::emitIf(const ir::Op& op) {
  llvm::BasicBlock* thenBB = newBlock("if.then");
  llvm::BasicBlock* elseBB = newBlock("if.else");
  llvm::BasicBlock* merge = newBlock("if.end");
  b.CreateCondBr(get(op.operand(0)), thenBB, elseBB);
  std::vector<std::pair<llvm::BasicBlock*, std::vector<llvm::Value*>>> arms;
  for (unsigned r = 0; r < 2; ++r) {
    b.SetInsertPoint(r == 0 ? thenBB : elseBB);
    const ir::Op* term = emitBody(op.region(r), {});
    if (!term) return false;
    std::vector<llvm::Value*> ys;
    for (const ir::Value* v : term->operands()) ys.push_back(get(v));
    arms.emplace_back(b.GetInsertBlock(), std::move(ys));
    b.CreateBr(merge);
  }
  b.SetInsertPoint(merge);
  for (unsigned i = 0; i < op.numResults(); ++i) {
    llvm::PHINode* phi = b.CreatePHI(arms[0].second[i]->getType(), 2);
    for (auto& [bb, ys] : arms) phi->addIncoming(ys[i], bb);
    set(op.result(i), phi);
  }
  return true;
}

bool FunctionEmitter::emitFor(const ir::Op& op) {
  const ir::Type* t = op.operand(0)->type();
  llvm::Value* lo = get(op.operand(0));
  llvm::Value* hi = get(op.operand(1));
  llvm::Value* step = get(op.operand(2));
  std::vector<llvm::Value*> init;
  for (unsigned i = 3; i < op.numOperands(); ++i) init.push_back(get(op.operand(i)));

  llvm::Value* stepOk = forStepOk(op, step);
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* header = newBlock("for.header");
  llvm::BasicBlock* body = newBlock("for.body");
  llvm::BasicBlock* exit = newBlock("for.exit");
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode* iv = b.CreatePHI(lo->getType(), 2, "iv");
  iv->addIncoming(lo, pre);
  std::vector<llvm::PHINode*> carried;
  for (llvm::Value* v : init) {
    carried.push_back(b.CreatePHI(v->getType(), 2));
    carried.back()->addIncoming(v, pre);
  }
  llvm::Value* go = forCondition(t, iv, hi, step);
  if (!llvm::isa<llvm::Constant>(stepOk)) go = b.CreateAnd(stepOk, go);
  b.CreateCondBr(go, body, exit);

  b.SetInsertPoint(body);
  std::vector<llvm::Value*> args = {iv};
  args.insert(args.end(), carried.begin(), carried.end());
  const ir::Op* term = emitBody(op.region(0), args);
  if (!term) return false;
  std::vector<llvm::Value*> next;
  for (const ir::Value* v : term->operands()) next.push_back(get(v));
  llvm::Value* overflow;
  llvm::Value* ivNext = forNext(t, iv, step, overflow);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  b.CreateCondBr(overflow, exit, header);
  iv->addIncoming(ivNext, latch);
  for (size_t i = 0; i < carried.size(); ++i) carried[i]->addIncoming(next[i], latch);

  b.SetInsertPoint(exit);
  for (size_t i = 0; i < carried.size(); ++i) {
    llvm::PHINode* phi = b.CreatePHI(carried[i]->getType(), 2);
    phi->addIncoming(carried[i], header);
    phi->addIncoming(next[i], latch);
    set(op.result(unsigned(i)), phi);
  }
  return true;
}

bool FunctionEmitter::emitWhile(const ir::Op& op) {
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* header = newBlock("while.cond");
  llvm::BasicBlock* body = newBlock("while.body");
  llvm::BasicBlock* exit = newBlock("while.exit");
  b.CreateBr(header);
  b.SetInsertPoint(header);
  std::vector<llvm::PHINode*> state;
  std::vector<llvm::Value*> args;
  for (const ir::Value* v : op.operands()) {
    llvm::Value* init = get(v);
    state.push_back(b.CreatePHI(init->getType(), 2));
    state.back()->addIncoming(init, pre);
    args.push_back(state.back());
  }
  const ir::Op* cond = emitBody(op.region(0), args);
  if (!cond) return false;
  std::vector<llvm::Value*> fwd;
  for (unsigned i = 1; i < cond->numOperands(); ++i) fwd.push_back(get(cond->operand(i)));
  b.CreateCondBr(get(cond->operand(0)), body, exit);

  b.SetInsertPoint(body);
  const ir::Op* term = emitBody(op.region(1), fwd);
  if (!term) return false;
  llvm::BasicBlock* latch = b.GetInsertBlock();
  for (unsigned i = 0; i < term->numOperands(); ++i) state[i]->addIncoming(get(term->operand(i)), latch);
  b.CreateBr(header);

  b.SetInsertPoint(exit);
  for (unsigned i = 0; i < op.numResults(); ++i) set(op.result(i), fwd[i]);
  return true;
}

bool FunctionEmitter::emitMatch(const ir::Op& op) {
  llvm::Value* sum = get(op.operand(0));
  llvm::Value* tag = b.CreateExtractValue(sum, 0);
  llvm::BasicBlock* merge = newBlock("match.end");
  std::vector<llvm::BasicBlock*> arms;
  for (unsigned r = 0; r < op.numRegions(); ++r) arms.push_back(newBlock("match.case"));
  llvm::SwitchInst* sw = b.CreateSwitch(tag, arms[0], op.numRegions());
  for (unsigned r = 1; r < op.numRegions(); ++r) sw->addCase(b.getInt32(r), arms[r]);
  std::vector<std::pair<llvm::BasicBlock*, std::vector<llvm::Value*>>> ends;
  for (unsigned r = 0; r < op.numRegions(); ++r) {
    b.SetInsertPoint(arms[r]);
    const ir::Op* term = emitBody(op.region(r), {b.CreateExtractValue(sum, r + 1)});
    if (!term) return false;
    std::vector<llvm::Value*> ys;
    for (const ir::Value* v : term->operands()) ys.push_back(get(v));
    ends.emplace_back(b.GetInsertBlock(), std::move(ys));
    b.CreateBr(merge);
  }
  b.SetInsertPoint(merge);
  for (unsigned i = 0; i < op.numResults(); ++i) {
    llvm::PHINode* phi = b.CreatePHI(ends[0].second[i]->getType(), unsigned(ends.size()));
    for (auto& [bb, ys] : ends) phi->addIncoming(ys[i], bb);
    set(op.result(i), phi);
  }
  return true;
}

bool FunctionEmitter::emitCall(const ir::Op& op) {
  const ir::Function* callee = M.irm.lookup(op.symbolAttr("callee"));
  if (callee && M.hasBarrier(op))
    return fail(op, "@" + callee->name() + " contains a barrier and could not be inlined");
  auto it = callee ? M.deviceFns.find(callee) : M.deviceFns.end();
  if (it == M.deviceFns.end()) return fail(op, "calls a function that is not a device function");
  std::vector<llvm::Value*> args;
  for (const ir::Value* v : op.operands()) args.push_back(get(v));
  for (auto* group : {ids.local, ids.group, ids.numGroups, ids.size})
    for (int d = 0; d < 3; ++d) args.push_back(group[d] ? group[d] : b.getInt32(0));
  args.push_back(trapMask);
  llvm::Value* r = b.CreateCall(it->second, args);
  if (op.numResults() == 1) set(op.result(0), r);
  else
    for (unsigned i = 0; i < op.numResults(); ++i) set(op.result(i), b.CreateExtractValue(r, i));
  return true;
}

llvm::Value* FunctionEmitter::builtin(const ir::Op& op) {
  ir::OpId n = op.id();
  unsigned d = op.attr("dim") ? unsigned(op.intAttr("dim")) : 0;
  if (n == ir::OpId::LocalId) return ids.local[d];
  if (n == ir::OpId::WorkgroupId) return ids.group[d];
  if (n == ir::OpId::NumWorkgroups) return ids.numGroups[d];
  if (n == ir::OpId::WorkgroupSize) return ids.size[d];
  if (n == ir::OpId::SubgroupSize) return b.getInt32(kSubgroupSize);
  if (n == ir::OpId::GlobalId)  // the runtime keeps groups * size within 32 bits
    return b.CreateAdd(b.CreateMul(ids.group[d], ids.size[d], "", true, true), ids.local[d], "gid", true, true);
  llvm::Value* linear = b.CreateAdd(
      ids.local[0],
      b.CreateMul(ids.size[0], b.CreateAdd(ids.local[1], b.CreateMul(ids.size[1], ids.local[2], "", true, true),
                                           "", true, true), "", true, true), "", true, true);
  if (n == ir::OpId::SubgroupId) return b.CreateUDiv(linear, b.getInt32(kSubgroupSize));
  return b.CreateURem(linear, b.getInt32(kSubgroupSize));
}

// Barriers and subgroup collectives at a kernel's top level or in its
// structured control flow are lowered by KernelEmitter (LowerKernel.cpp),
// which ends runs there.
bool FunctionEmitter::emitBarrier(const ir::Op& op) {
  return fail(op, "'" + std::string(op.name()) + "' here is not supported");
}

bool FunctionEmitter::emitBuiltin(const ir::Op& op) {
  set(op.result(0), builtin(op));
  return true;
}

// Terminators end regions: emitBody returns them to the op that owns the region.
bool FunctionEmitter::emitTerminator(const ir::Op& op) {
  return fail(op, "'" + std::string(op.name()) + "' is not at the end of its region");
}

void FunctionEmitter::addControlLowerings(EmitTable& t) {
  using enum ir::OpId;
  t[If] = &FunctionEmitter::emitIf;
  t[For] = &FunctionEmitter::emitFor;
  t[While] = &FunctionEmitter::emitWhile;
  t[Match] = &FunctionEmitter::emitMatch;
  t[Call] = &FunctionEmitter::emitCall;
  for (ir::OpId n : {Yield, Condition, Return}) t[n] = &FunctionEmitter::emitTerminator;
  for (ir::OpId n : {Barrier, SubgroupReduceAdd, SubgroupReduceMin, SubgroupReduceMax, SubgroupScanAdd,
                     SubgroupScanMin, SubgroupScanMax, SubgroupExscanAdd, SubgroupExscanMin, SubgroupExscanMax,
                     SubgroupBroadcast, SubgroupShuffle})
    t[n] = &FunctionEmitter::emitBarrier;
  for (ir::OpId n : {GlobalId, LocalId, WorkgroupId, NumWorkgroups, WorkgroupSize, SubgroupSize, SubgroupId,
                     SubgroupLocalId})
    t[n] = &FunctionEmitter::emitBuiltin;
  // Function values are host code's (emitHostOp); kernels have none.
  for (ir::OpId n : {FuncRef, CallIndirect}) t[n] = &FunctionEmitter::emitUnsupported;
  // Cooperative matrices are a GPU's matrix units (the tensor frontend uses
  // them only where DeviceCaps::cooperativeMatrix says so).
  for (ir::OpId n : {CoopFill, CoopLoad, CoopStore, CoopMulAdd, CoopConvert}) t[n] = &FunctionEmitter::emitUnsupported;
}

}  // namespace eph::llvmtarget
