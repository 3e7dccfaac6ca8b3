// Subgroup collectives (ir/ops/Subgroup.cpp) on the cpu target. Like barriers
// they are workgroup-level ops (LowerKernel.cpp): the invocation loop ends
// before one, so every invocation's operand sits in a per-invocation array,
// and the collective is a loop over the workgroup that fills the result's
// array. Subgroups are the runs of kSubgroupSize consecutive linear
// invocation indices (the last may be partial), as in the interpreter.
// Lanes combine in order, as in the interpreter.
//
// A shuffle or broadcast from a lane that is not in the subgroup, or a
// broadcast whose lane differs within the subgroup, sets the op's trap bit
// (KernelAbi.h) and reads the invocation's own value.
#include "ir/OpTable.h"
#include "targets/llvm/Emitter.h"

namespace eph::llvmtarget {

namespace {
enum class Combine { Add, Min, Max };

llvm::Value* identity(llvm::IRBuilder<>& b, Combine k, const ir::Type* t, llvm::Type* lt) {
  if (t->isFloat()) {
    if (k == Combine::Add) return llvm::ConstantFP::get(lt, 0.0);
    return llvm::ConstantFP::getInfinity(lt, k == Combine::Max);
  }
  unsigned w = t->bits();
  if (k == Combine::Add) return llvm::ConstantInt::get(lt, 0);
  if (t->isSigned())
    return b.getInt(k == Combine::Min ? llvm::APInt::getSignedMaxValue(w) : llvm::APInt::getSignedMinValue(w));
  return b.getInt(k == Combine::Min ? llvm::APInt::getMaxValue(w) : llvm::APInt::getMinValue(w));
}

llvm::Value* combine(llvm::IRBuilder<>& b, Combine k, const ir::Type* t, llvm::Value* x, llvm::Value* y) {
  if (k == Combine::Add) return t->isFloat() ? b.CreateFAdd(x, y) : b.CreateAdd(x, y);
  if (t->isFloat()) return k == Combine::Min ? b.CreateMinNum(x, y) : b.CreateMaxNum(x, y);
  bool s = t->isSigned();
  llvm::Value* less = s ? b.CreateICmpSLT(x, y) : b.CreateICmpULT(x, y);
  return k == Combine::Min ? b.CreateSelect(less, x, y) : b.CreateSelect(less, y, x);
}

// for (i = lo; i < hi; ++i) body(i), i64; body may add blocks.
template <class Body>
void countedLoop(FunctionEmitter& F, llvm::Value* lo, llvm::Value* hi, const char* name, Body body) {
  llvm::IRBuilder<>& b = F.b;
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* head = F.newBlock(llvm::Twine(name) + ".head");
  llvm::BasicBlock* bodyBB = F.newBlock(llvm::Twine(name) + ".body");
  llvm::BasicBlock* done = F.newBlock(llvm::Twine(name) + ".done");
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2, name);
  i->addIncoming(lo, pre);
  b.CreateCondBr(b.CreateICmpULT(i, hi), bodyBB, done);
  b.SetInsertPoint(bodyBB);
  body(i);
  i->addIncoming(b.CreateAdd(i, b.getInt64(1)), b.GetInsertBlock());
  b.CreateBr(head);
  b.SetInsertPoint(done);
}
}  // namespace

bool emitSubgroupCollective(FunctionEmitter& F, const ir::Op& op, llvm::AllocaInst* src, llvm::AllocaInst* lanes,
                            llvm::AllocaInst* dst, unsigned n) {
  using ir::OpId;
  llvm::IRBuilder<>& b = F.b;
  const ir::Type* t = op.result(0)->type();
  auto elemOf = [](llvm::AllocaInst* a) { return llvm::cast<llvm::ArrayType>(a->getAllocatedType())->getElementType(); };
  llvm::Type* lt = elemOf(src);
  auto at = [&](llvm::AllocaInst* a, llvm::Value* i) {
    return b.CreateInBoundsGEP(a->getAllocatedType(), a, {b.getInt64(0), i});
  };
  llvm::Value* S = b.getInt64(kSubgroupSize);
  llvm::Value* N = b.getInt64(n);
  bool lane = op.is(OpId::SubgroupBroadcast) || op.is(OpId::SubgroupShuffle);
  Combine k = Combine::Add;
  enum { Reduce, Inclusive, Exclusive } mode = Reduce;
  switch (op.id()) {
    case OpId::SubgroupReduceAdd: break;
    case OpId::SubgroupReduceMin: k = Combine::Min; break;
    case OpId::SubgroupReduceMax: k = Combine::Max; break;
    case OpId::SubgroupScanAdd: mode = Inclusive; break;
    case OpId::SubgroupScanMin: mode = Inclusive; k = Combine::Min; break;
    case OpId::SubgroupScanMax: mode = Inclusive; k = Combine::Max; break;
    case OpId::SubgroupExscanAdd: mode = Exclusive; break;
    case OpId::SubgroupExscanMin: mode = Exclusive; k = Combine::Min; break;
    case OpId::SubgroupExscanMax: mode = Exclusive; k = Combine::Max; break;
    default:
      if (!lane) return F.fail(op, "not a subgroup collective");
  }
  llvm::AllocaInst* acc = F.entryAlloca(lt, "sg.acc");
  countedLoop(F, b.getInt64(0), N, "sg.inv", [&](llvm::Value* i) {
    llvm::Value* base = b.CreateSub(i, b.CreateURem(i, S));
    llvm::Value* end = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b.CreateAdd(base, S), N);
    if (lane) {
      llvm::Value* l = b.CreateZExt(b.CreateLoad(b.getInt32Ty(), at(lanes, i)), b.getInt64Ty());
      llvm::Value* bad = b.CreateICmpUGE(l, b.CreateSub(end, base));
      if (op.is(OpId::SubgroupBroadcast)) {
        llvm::Value* first = b.CreateZExt(b.CreateLoad(b.getInt32Ty(), at(lanes, base)), b.getInt64Ty());
        bad = b.CreateOr(bad, b.CreateICmpNE(l, first));
      }
      F.trapIf(op, bad);
      llvm::Value* from = b.CreateSelect(bad, i, b.CreateAdd(base, l));
      b.CreateStore(b.CreateLoad(lt, at(src, from)), at(dst, i));
      return;
    }
    llvm::Value* last = mode == Reduce ? end : mode == Inclusive ? b.CreateAdd(i, b.getInt64(1)) : i;
    b.CreateStore(identity(b, k, t, lt), acc);
    countedLoop(F, base, last, "sg.lane", [&](llvm::Value* j) {
      b.CreateStore(combine(b, k, t, b.CreateLoad(lt, acc), b.CreateLoad(lt, at(src, j))), acc);
    });
    b.CreateStore(b.CreateLoad(lt, acc), at(dst, i));
  });
  return true;
}

}  // namespace eph::llvmtarget
