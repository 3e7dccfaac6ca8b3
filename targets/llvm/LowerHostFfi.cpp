// C calls in compiled host code: `call.c %args... {symbol = "name"}`
// (ir/ops/Foreign.cpp; Ephapax extern functions and __ffi). How each argument
// is passed and the result read is ir/ForeignAbi.h's classification, which the
// op's verifier has checked before any lowering: in the float convention
// every operand and the result are doubles; in the integer convention every
// operand is an int64 (sign- or zero-extended as the interpreter holds it, a
// bool as 0/1, an owned device buffer as its handle) and the result is read
// from the int64 return register (truncated to its width, a bool as "not 0"),
// or, for a small struct of integers, from the two return registers
// {i64, i64} with each field at its C offset. The call is bracketed by the
// runtime's ffi_enter / ffi_leave (and the failed flag is tested after it),
// so that C code may use the runtime/eph_buffer.h API on the run's device
// buffers.
//
// The address is resolved on the first call by a runtime call (dlsym of the
// process, after the --link libraries are loaded) and cached in a global of
// the compiled module, read and written atomically (compiled modules are
// shared by threads); a symbol that is not there is the interpreter's error
// at the op.
#include <llvm/IR/MDBuilder.h>

#include "targets/llvm/Emitter.h"

namespace eph::llvmtarget {
namespace {

using namespace hostabi;

llvm::GlobalVariable* symbolSlot(ModuleEmitter& M, const std::string& name) {
  auto it = M.ffiSymbols.find(name);
  if (it != M.ffiSymbols.end()) return it->second;
  auto* g = new llvm::GlobalVariable(*M.mod, M.ptr, false, llvm::GlobalValue::InternalLinkage,
                                     llvm::Constant::getNullValue(M.ptr), "eph.ffi." + name);
  g->setAlignment(llvm::Align(8));
  return M.ffiSymbols[name] = g;
}

}  // namespace

bool FunctionEmitter::emitFfiCall(const ir::Op& op) {
  ir::ForeignSignature sig = ir::classifyForeignCall(op);
  if (!sig.ok()) return fail(op, sig.problem);

  // The address: cached, else resolved by the runtime (which reports a missing symbol).
  llvm::GlobalVariable* slot = symbolSlot(M, op.attr("symbol")->s);
  llvm::LoadInst* cached = b.CreateAlignedLoad(M.ptr, slot, llvm::Align(8));
  cached->setAtomic(llvm::AtomicOrdering::Monotonic);
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* resolve = newBlock("ffi.resolve");
  llvm::BasicBlock* call = newBlock("ffi.call");
  b.CreateCondBr(b.CreateIsNull(cached), resolve, call, llvm::MDBuilder(M.ctx).createBranchWeights(1, 1 << 20));
  b.SetInsertPoint(resolve);
  llvm::Value* found = b.CreateCall(M.hostRuntime(kFfiResolve, M.ptr, {M.ptr, M.i32}), {hostCtx, siteOf(op)});
  checkFailed();
  llvm::StoreInst* keep = b.CreateAlignedStore(found, slot, llvm::Align(8));
  keep->setAtomic(llvm::AtomicOrdering::Monotonic);
  llvm::BasicBlock* resolved = b.GetInsertBlock();
  b.CreateBr(call);
  b.SetInsertPoint(call);
  llvm::PHINode* fnPtr = b.CreatePHI(M.ptr, 2);
  fnPtr->addIncoming(cached, pre);
  fnPtr->addIncoming(found, resolved);

  llvm::Type* voidTy = llvm::Type::getVoidTy(M.ctx);
  b.CreateCall(M.hostRuntime(kFfiEnter, voidTy, {M.ptr, M.i32}), {hostCtx, siteOf(op)});
  emitForeignCall(op, fnPtr, sig);
  b.CreateCall(M.hostRuntime(kFfiLeave, voidTy, {M.ptr, M.i32}), {hostCtx, siteOf(op)});
  checkFailed();
  return true;
}

void FunctionEmitter::emitForeignCall(const ir::Op& op, llvm::Value* fnPtr, const ir::ForeignSignature& sig) {
  const ir::Type* rt = op.numResults() ? op.result(0)->type() : nullptr;
  if (sig.floats()) {
    std::vector<llvm::Value*> args;
    for (const ir::Value* v : op.operands()) args.push_back(get(v));
    std::vector<llvm::Type*> params(args.size(), M.f64);
    set(op.result(0), b.CreateCall(llvm::FunctionType::get(M.f64, params, false), fnPtr, args));
    return;
  }
  std::vector<llvm::Value*> args;
  for (unsigned i = 0; i < op.numOperands(); ++i) {
    const ir::Value* v = op.operand(i);
    llvm::Value* x = get(v);
    const ir::Type* t = v->type();
    if (sig.args[i] == ir::CArg::Handle) args.push_back(b.CreateExtractValue(x, 1));  // a device buffer {null, handle}
    else if (t->isBool()) args.push_back(b.CreateZExt(x, M.i64));
    else args.push_back(t->isSigned() ? b.CreateSExtOrTrunc(x, M.i64) : b.CreateZExtOrTrunc(x, M.i64));
  }
  std::vector<llvm::Type*> params(args.size(), M.i64);
  if (sig.result == ir::CResult::IntPair) {
    llvm::StructType* reg2 = llvm::StructType::get(M.ctx, {M.i64, M.i64});
    llvm::Value* r = b.CreateCall(llvm::FunctionType::get(reg2, params, false), fnPtr, args);
    llvm::AllocaInst* bytes = entryAlloca(reg2, "ffi.result");
    b.CreateStore(r, bytes);
    llvm::Value* out = llvm::PoisonValue::get(M.valueType(rt));
    unsigned k = 0;
    for (const ir::CField& f : sig.fields) {
      llvm::Value* raw = b.CreateLoad(b.getIntNTy(8 * f.size), b.CreateConstInBoundsGEP1_64(M.i8, bytes, f.offset));
      llvm::Value* field = f.type->isBool() ? b.CreateICmpNE(raw, llvm::ConstantInt::get(raw->getType(), 0))
                                            : b.CreateZExtOrTrunc(raw, M.valueType(f.type));
      out = b.CreateInsertValue(out, field, k++);
    }
    set(op.result(0), out);
    return;
  }
  llvm::Value* r = b.CreateCall(llvm::FunctionType::get(M.i64, params, false), fnPtr, args);
  if (!rt) return;
  if (sig.result == ir::CResult::None) set(op.result(0), llvm::Constant::getNullValue(M.valueType(rt)));
  else if (rt->isBool()) set(op.result(0), b.CreateICmpNE(r, b.getInt64(0)));
  else set(op.result(0), b.CreateTrunc(r, M.valueType(rt)));
}

}  // namespace eph::llvmtarget
