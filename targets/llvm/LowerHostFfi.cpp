// Extern calls in compiled host code: `ephapax.ffi_call {symbol = "name"}`
// (Ephapax extern functions and __ffi). The op is registered by the Ephapax
// frontend library; this target matches it by name and attributes, as it
// would any op, so that targets/llvm does not depend on frontends/. The
// signature rules are the interpreter's (frontends/ephapax/Runtime.cpp,
// checked by the op's verifier before any lowering): with any f64 operand or
// result, every operand is an f64 and the result is an f64; otherwise every
// operand is passed as an int64 (sign- or zero-extended as the interpreter
// holds it, a bool as 0/1) and the result is read from the int64 return
// register (an integer truncated to its width, a bool as "not 0", () or no
// result ignored), or, for a small struct of integers, from the two return
// registers {i64, i64} with each field at its C offset. An owned device
// buffer is passed as its handle. The call is bracketed by the runtime's
// ffi_enter / ffi_leave (and the failed flag is tested after it), so that C
// code may use the runtime/eph_buffer.h API on the run's device buffers.
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

// The size of an integer-like type in C (_Bool is one byte), as the interpreter lays out struct results.
unsigned cSize(const ir::Type* t) { return t->isBool() ? 1 : t->bits() / 8; }

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
  const ir::Attr* sym = op.attr("symbol");
  if (!sym || sym->kind != ir::Attr::Kind::String || sym->s.empty())
    return fail(op, "needs a {symbol = \"name\"} string attribute");
  if (op.numResults() > 1) return fail(op, "has at most one result");
  const ir::Type* rt = op.numResults() ? op.result(0)->type() : nullptr;

  // The address: cached, else resolved by the runtime (which reports a missing symbol).
  llvm::GlobalVariable* slot = symbolSlot(M, sym->s);
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
  if (!emitForeignCall(op, fnPtr, rt)) return false;
  b.CreateCall(M.hostRuntime(kFfiLeave, voidTy, {M.ptr, M.i32}), {hostCtx, siteOf(op)});
  checkFailed();
  return true;
}

bool FunctionEmitter::emitForeignCall(const ir::Op& op, llvm::Value* fnPtr, const ir::Type* rt) {
  bool floats = rt && rt->isFloat();
  for (const ir::Value* v : op.operands()) floats = floats || v->type()->isFloat();
  std::vector<llvm::Value*> args;
  if (floats) {
    for (const ir::Value* v : op.operands()) {
      llvm::Value* x = get(v);
      args.push_back(v->type()->isFloat() && v->type()->bits() == 64 ? x : b.CreateFPExt(x, M.f64));
    }
    std::vector<llvm::Type*> params(args.size(), M.f64);
    llvm::Value* r = b.CreateCall(llvm::FunctionType::get(M.f64, params, false), fnPtr, args);
    if (rt) set(op.result(0), rt->bits() == 64 ? r : b.CreateFPTrunc(r, M.valueType(rt)));
    return true;
  }
  for (const ir::Value* v : op.operands()) {
    llvm::Value* x = get(v);
    const ir::Type* t = v->type();
    if (t->isBuffer()) {  // a device buffer {null, handle}: the handle
      args.push_back(b.CreateExtractValue(x, 1));
      continue;
    }
    args.push_back(t->isBool() ? b.CreateZExt(x, M.i64) : t->isSigned() ? b.CreateSExtOrTrunc(x, M.i64)
                                                                          : b.CreateZExtOrTrunc(x, M.i64));
  }
  std::vector<llvm::Type*> params(args.size(), M.i64);
  if (rt && rt->isStruct() && !rt->isUnit()) {
    // Two registers (x86-64 SysV RAX:RDX, AArch64 x0:x1), fields at their C offsets.
    llvm::StructType* reg2 = llvm::StructType::get(M.ctx, {M.i64, M.i64});
    llvm::Value* r = b.CreateCall(llvm::FunctionType::get(reg2, params, false), fnPtr, args);
    llvm::AllocaInst* bytes = entryAlloca(reg2, "ffi.result");
    b.CreateStore(r, bytes);
    llvm::Value* out = llvm::PoisonValue::get(M.valueType(rt));
    unsigned offset = 0, k = 0;
    for (const ir::Type* f : rt->members()) {
      unsigned size = cSize(f);
      offset = (offset + size - 1) / size * size;
      llvm::Value* raw = b.CreateLoad(b.getIntNTy(8 * size), b.CreateConstInBoundsGEP1_64(M.i8, bytes, offset));
      offset += size;
      llvm::Value* field = f->isBool() ? b.CreateICmpNE(raw, llvm::ConstantInt::get(raw->getType(), 0))
                                       : b.CreateZExtOrTrunc(raw, M.valueType(f));
      out = b.CreateInsertValue(out, field, k++);
    }
    set(op.result(0), out);
    return true;
  }
  llvm::Value* r = b.CreateCall(llvm::FunctionType::get(M.i64, params, false), fnPtr, args);
  if (!rt) return true;
  if (rt->isUnit()) set(op.result(0), llvm::Constant::getNullValue(M.valueType(rt)));
  else if (rt->isBool()) set(op.result(0), b.CreateICmpNE(r, b.getInt64(0)));
  else set(op.result(0), b.CreateTrunc(r, M.valueType(rt)));
  return true;
}

}  // namespace eph::llvmtarget
