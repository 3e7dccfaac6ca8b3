// Boxes in compiled host code (the cell layout is in HostAbi.h): `box.new`
// bump-allocates a cell from the context's arena inline (a runtime call
// when the chunk is full) and stores the cell's type, taken from the
// context's table of the running module's box types, and the value in the
// value layout; `box.get` checks the cell's type against the table's entry
// for its result type inline and loads the value, and the runtime reports a
// null or mistyped cell with the interpreter's message. The box codecs
// eph.box.read / eph.box.make convert cells to slots and back for the
// runtime (results and arguments holding boxes).
#include <llvm/IR/MDBuilder.h>

#include "targets/llvm/Emitter.h"
#include "ir/OpTable.h"

namespace eph::llvmtarget {
namespace {

using namespace hostabi;

const llvm::Align kCellAlign(kHostBoxAlign);

// The cell's bytes for a value of LLVM type vt, a multiple of 16 (folded
// once the data layout is known).
llvm::Value* cellBytes(FunctionEmitter& F, llvm::Type* vt) {
  auto& b = F.b;
  llvm::Value* size = b.CreateAdd(llvm::ConstantExpr::getSizeOf(vt), b.getInt64(kHostBoxValueOffset + kHostBoxAlign - 1));
  return b.CreateAnd(size, b.getInt64(~uint64_t(kHostBoxAlign - 1)));
}

llvm::Value* fieldOf(FunctionEmitter& F, size_t offset, llvm::Type* t) {
  return F.b.CreateLoad(t, F.b.CreateConstInBoundsGEP1_64(F.M.i8, F.hostCtx, offset));
}

llvm::Value* valuePtr(FunctionEmitter& F, llvm::Value* cell) {
  return F.b.CreateConstInBoundsGEP1_64(F.M.i8, cell, kHostBoxValueOffset);
}

// ctx->boxTypes[k]
llvm::Value* tableType(FunctionEmitter& F, unsigned k) {
  llvm::Value* table = fieldOf(F, offsetof(HostContextHeader, boxTypes), F.M.ptr);
  return F.b.CreateLoad(F.M.ptr, F.b.CreateConstInBoundsGEP1_64(F.M.ptr, table, k));
}

}  // namespace

llvm::Value* FunctionEmitter::makeBoxCell(unsigned k, const ir::Type* t, llvm::Value* v) {
  llvm::Type* vt = M.valueType(t);
  llvm::Value* bytes = cellBytes(*this, vt);
  // Inline bump allocation: [arenaNext, arenaEnd).
  llvm::Value* nextPtr = b.CreateConstInBoundsGEP1_64(M.i8, hostCtx, offsetof(HostContextHeader, arenaNext));
  llvm::Value* next = b.CreateLoad(M.ptr, nextPtr);
  llvm::Value* end = fieldOf(*this, offsetof(HostContextHeader, arenaEnd), M.ptr);
  llvm::Value* after = b.CreateGEP(M.i8, next, bytes);
  llvm::BasicBlock* fast = newBlock("box.bump");
  llvm::BasicBlock* slow = newBlock("box.refill");
  llvm::BasicBlock* done = newBlock("box.fill");
  b.CreateCondBr(b.CreateICmpULE(after, end), fast, slow, llvm::MDBuilder(M.ctx).createBranchWeights(1 << 20, 1));
  b.SetInsertPoint(fast);
  b.CreateStore(after, nextPtr);
  b.CreateBr(done);
  b.SetInsertPoint(slow);
  llvm::Value* fresh = b.CreateCall(M.hostRuntime(kBoxAlloc, M.ptr, {M.ptr, M.i64}), {hostCtx, bytes});
  b.CreateBr(done);
  b.SetInsertPoint(done);
  llvm::PHINode* cell = b.CreatePHI(M.ptr, 2);
  cell->addIncoming(next, fast);
  cell->addIncoming(fresh, slow);
  b.CreateAlignedStore(tableType(*this, k), cell, kCellAlign);
  b.CreateAlignedStore(v, valuePtr(*this, cell), kCellAlign);
  return cell;
}

bool FunctionEmitter::emitBoxOp(const ir::Op& op) {
  if (op.is(ir::OpId::BoxNew)) {
    const ir::Type* t = op.operand(0)->type();
    if (!M.valueType(t, &op)) return false;
    set(op.result(0), makeBoxCell(M.boxTypeIds.at(t), t, get(op.operand(0))));
    return true;
  }
  // box.get: a cell of exactly the result type, else the runtime's error.
  const ir::Type* t = op.result(0)->type();
  llvm::Type* vt = M.valueType(t, &op);
  if (!vt) return false;
  llvm::Value* cell = get(op.operand(0));
  auto likely = llvm::MDBuilder(M.ctx).createBranchWeights(1 << 20, 1);
  llvm::BasicBlock* bad = newBlock("box.bad");
  llvm::BasicBlock* check = newBlock("box.check");
  llvm::BasicBlock* ok = newBlock("box.get");
  b.CreateCondBr(b.CreateIsNotNull(cell), check, bad, likely);
  b.SetInsertPoint(check);
  llvm::Value* held = b.CreateAlignedLoad(M.ptr, cell, kCellAlign);
  unsigned cellType = M.boxTypeIds.at(ir::boxCellType(M.irm.context(), t));  // a boxed buffer is read as a view
  b.CreateCondBr(b.CreateICmpEQ(held, tableType(*this, cellType)), ok, bad, likely);
  b.SetInsertPoint(bad);
  b.CreateCall(M.hostRuntime(kBoxBadGet, llvm::Type::getVoidTy(M.ctx), {M.ptr, M.i32, M.ptr}), {hostCtx, siteOf(op), cell});
  b.CreateBr(bail());
  b.SetInsertPoint(ok);
  set(op.result(0), b.CreateAlignedLoad(vt, valuePtr(*this, cell), kCellAlign));
  return true;
}

void emitBoxCodecs(ModuleEmitter& M, const ir::Function& any) {
  std::vector<const ir::Type*> types(M.boxTypeIds.size());
  for (const auto& [t, k] : M.boxTypeIds) types[k] = t;
  llvm::Type* voidTy = llvm::Type::getVoidTy(M.ctx);
  // void eph.box.read(i32 k, ptr cell, ptr slots)
  {
    auto* fn = llvm::Function::Create(llvm::FunctionType::get(voidTy, {M.i32, M.ptr, M.ptr}, false),
                                      llvm::GlobalValue::ExternalLinkage, kHostBoxRead, *M.mod);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    FunctionEmitter F(M, fn, any);
    llvm::BasicBlock* entry = llvm::BasicBlock::Create(M.ctx, "entry", fn);
    llvm::BasicBlock* none = llvm::BasicBlock::Create(M.ctx, "none", fn);
    llvm::IRBuilder<>(none).CreateRetVoid();
    F.b.SetInsertPoint(entry);
    auto arg = fn->arg_begin();
    llvm::Value* k = &*arg++;
    llvm::Value* cell = &*arg++;
    llvm::Value* slots = &*arg;
    llvm::SwitchInst* sw = F.b.CreateSwitch(k, none, types.size());
    for (unsigned i = 0; i < types.size(); ++i) {
      llvm::Type* vt = M.valueType(types[i]);
      if (!vt) continue;
      llvm::BasicBlock* bb = llvm::BasicBlock::Create(M.ctx, "read", fn);
      sw->addCase(F.b.getInt32(i), bb);
      F.b.SetInsertPoint(bb);
      unsigned at = 0;
      storeHostSlots(F, types[i], F.b.CreateAlignedLoad(vt, valuePtr(F, cell), kCellAlign), slots, at);
      F.b.CreateRetVoid();
    }
  }
  // ptr eph.box.make(ctx, i32 k, ptr slots)
  {
    auto* fn = llvm::Function::Create(llvm::FunctionType::get(M.ptr, {M.ptr, M.i32, M.ptr}, false),
                                      llvm::GlobalValue::ExternalLinkage, kHostBoxMake, *M.mod);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    FunctionEmitter F(M, fn, any);
    llvm::BasicBlock* entry = llvm::BasicBlock::Create(M.ctx, "entry", fn);
    llvm::BasicBlock* none = llvm::BasicBlock::Create(M.ctx, "none", fn);
    llvm::IRBuilder<>(none).CreateRet(llvm::Constant::getNullValue(M.ptr));
    F.b.SetInsertPoint(entry);
    auto arg = fn->arg_begin();
    F.hostCtx = &*arg++;
    llvm::Value* k = &*arg++;
    llvm::Value* slots = &*arg;
    llvm::SwitchInst* sw = F.b.CreateSwitch(k, none, types.size());
    for (unsigned i = 0; i < types.size(); ++i) {
      if (!M.valueType(types[i])) continue;
      llvm::BasicBlock* bb = llvm::BasicBlock::Create(M.ctx, "make", fn);
      sw->addCase(F.b.getInt32(i), bb);
      F.b.SetInsertPoint(bb);
      unsigned at = 0;
      llvm::Value* v = loadHostSlots(F, types[i], slots, at);
      F.b.CreateRet(F.makeBoxCell(i, types[i], v));
    }
  }
}

}  // namespace eph::llvmtarget
