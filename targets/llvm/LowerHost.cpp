// Host functions to LLVM IR (the host ABI is in targets/llvm/HostAbi.h).
// Scalars, aggregates and structured control flow are lowered by the same
// FunctionEmitter code as kernels (LowerValues.cpp, LowerControl.cpp), in
// host mode; this file adds what only host code has: calls between host
// functions (with the interpreter's call-depth limit), function values, host
// buffers (inline bounds and written checks, slow paths in the runtime), the
// host-only ops as runtime calls, and the entry wrappers that take arguments
// and give results as slots.
#include <llvm/IR/MDBuilder.h>

#include "ir/Layout.h"
#include "ir/OpTable.h"
#include "ir/ops/TypeVars.h"
#include "targets/llvm/Emitter.h"

namespace eph::llvmtarget {
namespace {

using namespace hostabi;

bool hasFunctionOrVar(const ir::Type* t) {
  if (t->isFunction() || ir::hasTypeVar(t)) return true;
  for (const ir::Type* m : t->members())
    if (hasFunctionOrVar(m)) return true;
  if ((t->isVector() || t->isArray()) && hasFunctionOrVar(t->elem())) return true;
  return false;
}

llvm::Value* slotAt(FunctionEmitter& F, llvm::Value* base, unsigned i) {
  return F.b.CreateConstInBoundsGEP1_64(F.M.i64, base, i);
}

}  // namespace

// Stores v (of type t) as slots from base[i] on (HostAbi.h).
void storeHostSlots(FunctionEmitter& F, const ir::Type* t, llvm::Value* v, llvm::Value* base, unsigned& i) {
  auto& b = F.b;
  ModuleEmitter& M = F.M;
  switch (t->kind()) {
    case ir::TypeKind::Bool: b.CreateStore(b.CreateZExt(v, M.i64), slotAt(F, base, i++)); return;
    case ir::TypeKind::Int:
      b.CreateStore(t->isSigned() ? b.CreateSExtOrTrunc(v, M.i64) : b.CreateZExtOrTrunc(v, M.i64), slotAt(F, base, i++));
      return;
    case ir::TypeKind::Float: {
      llvm::Value* d = t->bits() == 64 ? v : b.CreateFPExt(v, M.f64);
      b.CreateStore(b.CreateBitCast(d, M.i64), slotAt(F, base, i++));
      return;
    }
    case ir::TypeKind::Vector:
      for (unsigned k = 0; k < t->count(); ++k) storeHostSlots(F, t->elem(), b.CreateExtractElement(v, k), base, i);
      return;
    case ir::TypeKind::Array:
      for (unsigned k = 0; k < t->count(); ++k) storeHostSlots(F, t->elem(), b.CreateExtractValue(v, k), base, i);
      return;
    case ir::TypeKind::Struct:
      for (unsigned k = 0; k < t->members().size(); ++k) storeHostSlots(F, t->members()[k], b.CreateExtractValue(v, k), base, i);
      return;
    case ir::TypeKind::Sum:
      b.CreateStore(b.CreateZExt(b.CreateExtractValue(v, 0), M.i64), slotAt(F, base, i++));
      for (unsigned k = 0; k < t->members().size(); ++k)
        storeHostSlots(F, t->members()[k], b.CreateExtractValue(v, k + 1), base, i);
      return;
    case ir::TypeKind::Buffer: {
      llvm::Value* slot = t->space() == ir::Space::Host ? b.CreatePtrToInt(b.CreateExtractValue(v, 0), M.i64)
                                                        : b.CreateExtractValue(v, 1);
      b.CreateStore(slot, slotAt(F, base, i++));
      return;
    }
    default: b.CreateStore(b.CreatePtrToInt(v, M.i64), slotAt(F, base, i++)); return;
  }
}

// The value of type t held in slots from base[i] on.
llvm::Value* loadHostSlots(FunctionEmitter& F, const ir::Type* t, llvm::Value* base, unsigned& i) {
  auto& b = F.b;
  ModuleEmitter& M = F.M;
  llvm::Type* lt = M.valueType(t);
  switch (t->kind()) {
    case ir::TypeKind::Bool: return b.CreateICmpNE(b.CreateLoad(M.i64, slotAt(F, base, i++)), b.getInt64(0));
    case ir::TypeKind::Int: return b.CreateTrunc(b.CreateLoad(M.i64, slotAt(F, base, i++)), lt);
    case ir::TypeKind::Float: {
      llvm::Value* d = b.CreateBitCast(b.CreateLoad(M.i64, slotAt(F, base, i++)), M.f64);
      return t->bits() == 64 ? d : b.CreateFPTrunc(d, lt);
    }
    case ir::TypeKind::Vector: {
      llvm::Value* v = llvm::PoisonValue::get(lt);
      for (unsigned k = 0; k < t->count(); ++k) v = b.CreateInsertElement(v, loadHostSlots(F, t->elem(), base, i), k);
      return v;
    }
    case ir::TypeKind::Array: {
      llvm::Value* v = llvm::PoisonValue::get(lt);
      for (unsigned k = 0; k < t->count(); ++k) v = b.CreateInsertValue(v, loadHostSlots(F, t->elem(), base, i), k);
      return v;
    }
    case ir::TypeKind::Struct: {
      llvm::Value* v = llvm::PoisonValue::get(lt);
      for (unsigned k = 0; k < t->members().size(); ++k) v = b.CreateInsertValue(v, loadHostSlots(F, t->members()[k], base, i), k);
      return v;
    }
    case ir::TypeKind::Sum: {
      llvm::Value* v = llvm::PoisonValue::get(lt);
      v = b.CreateInsertValue(v, b.CreateTrunc(b.CreateLoad(M.i64, slotAt(F, base, i++)), M.i32), 0);
      for (unsigned k = 0; k < t->members().size(); ++k)
        v = b.CreateInsertValue(v, loadHostSlots(F, t->members()[k], base, i), k + 1);
      return v;
    }
    case ir::TypeKind::Buffer: {
      llvm::Value* slot = b.CreateLoad(M.i64, slotAt(F, base, i++));
      llvm::Value* v = llvm::PoisonValue::get(M.bufferTy);
      if (t->space() == ir::Space::Host)
        return b.CreateInsertValue(b.CreateInsertValue(v, b.CreateIntToPtr(slot, M.ptr), 0), b.getInt64(0), 1);
      return b.CreateInsertValue(b.CreateInsertValue(v, llvm::Constant::getNullValue(M.ptr), 0), slot, 1);
    }
    default: return b.CreateIntToPtr(b.CreateLoad(M.i64, slotAt(F, base, i++)), M.ptr);
  }
}

namespace {

llvm::Value* widen(FunctionEmitter& F, const ir::Value* v) {
  llvm::Value* x = F.get(v);
  const ir::Type* t = v->type();
  if (t->isBool()) return F.b.CreateZExt(x, F.M.i64);
  return t->isSigned() ? F.b.CreateSExtOrTrunc(x, F.M.i64) : F.b.CreateZExtOrTrunc(x, F.M.i64);
}

llvm::FunctionType* hostFnType(ModuleEmitter& M, const ir::Type* fnType) {
  std::vector<llvm::Type*> params = {M.ptr};
  for (const ir::Type* t : fnType->members()) params.push_back(M.valueType(t));
  std::vector<llvm::Type*> results;
  for (const ir::Type* t : fnType->results()) results.push_back(M.valueType(t));
  llvm::Type* ret = results.empty() ? llvm::Type::getVoidTy(M.ctx)
                    : results.size() == 1 ? results[0] : llvm::StructType::get(M.ctx, results);
  return llvm::FunctionType::get(ret, params, false);
}

bool declareHost(ModuleEmitter& M, const ir::Function& f) {
  M.currentFunction = &f;
  for (const ir::Type* t : f.paramTypes())
    if (ir::hasTypeVar(t) || !M.valueType(t))
      return M.fail(nullptr, &f, "parameter of type '" + t->str() + "' is not supported in compiled host code");
  for (const ir::Type* t : f.resultTypes())
    if (ir::hasTypeVar(t) || !M.valueType(t))
      return M.fail(nullptr, &f, "result of type '" + t->str() + "' is not supported in compiled host code");
  auto* fn = llvm::Function::Create(hostFnType(M, f.type()), llvm::GlobalValue::InternalLinkage, "host." + f.name(), *M.mod);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  M.hostFns[&f] = fn;
  return true;
}

// The call itself, with the interpreter's depth limit around it.
llvm::Value* emitHostCall(FunctionEmitter& F, const ir::Op& op, llvm::FunctionType* fty, llvm::Value* callee,
                          std::vector<llvm::Value*> args) {
  auto& b = F.b;
  ModuleEmitter& M = F.M;
  llvm::Value* depthPtr = b.CreateConstInBoundsGEP1_64(M.i8, F.hostCtx, offsetof(HostContextHeader, depth));
  llvm::Value* depth = b.CreateLoad(M.i32, depthPtr);
  llvm::BasicBlock* deep = F.newBlock("call.toodeep");
  llvm::BasicBlock* ok = F.newBlock("call");
  b.CreateCondBr(b.CreateICmpUGE(depth, b.getInt32(kHostMaxCallDepth)), deep, ok,
                 llvm::MDBuilder(M.ctx).createBranchWeights(1, 1 << 20));
  b.SetInsertPoint(deep);
  b.CreateCall(M.hostRuntime(kDepth, llvm::Type::getVoidTy(M.ctx), {M.ptr, M.i32, M.ptr}), {F.hostCtx, F.siteOf(op), callee});
  b.CreateBr(F.bail());
  b.SetInsertPoint(ok);
  b.CreateStore(b.CreateAdd(depth, b.getInt32(1)), depthPtr);
  args.insert(args.begin(), F.hostCtx);
  llvm::Value* r = b.CreateCall(fty, callee, args);
  b.CreateStore(depth, depthPtr);
  F.checkFailed();
  return r;
}

void setResults(FunctionEmitter& F, const ir::Op& op, llvm::Value* r) {
  if (op.numResults() == 1) F.set(op.result(0), r);
  else
    for (unsigned i = 0; i < op.numResults(); ++i) F.set(op.result(i), F.b.CreateExtractValue(r, i));
}

}  // namespace

llvm::FunctionCallee ModuleEmitter::hostRuntime(const char* name, llvm::Type* ret, std::vector<llvm::Type*> params) {
  auto callee = mod->getOrInsertFunction(name, llvm::FunctionType::get(ret, params, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) f->setDoesNotThrow();
  return callee;
}

llvm::Value* FunctionEmitter::siteOf(const ir::Op& op) { return b.getInt32(M.hostSiteIds.at(&op)); }

llvm::BasicBlock* FunctionEmitter::bail() {
  if (bailBlock) return bailBlock;
  bailBlock = newBlock("bail");
  llvm::IRBuilder<> eb(bailBlock);
  llvm::Type* ret = fn->getReturnType();
  if (ret->isVoidTy()) eb.CreateRetVoid();
  else eb.CreateRet(llvm::Constant::getNullValue(ret));
  return bailBlock;
}

void FunctionEmitter::checkFailed() {
  llvm::Value* failed = b.CreateLoad(M.i32, hostCtx);
  llvm::BasicBlock* cont = newBlock("ok");
  b.CreateCondBr(b.CreateICmpNE(failed, b.getInt32(0)), bail(), cont,
                 llvm::MDBuilder(M.ctx).createBranchWeights(1, 1 << 20));
  b.SetInsertPoint(cont);
}

bool FunctionEmitter::emitHostOp(const ir::Op& op, bool& handled) {
  ir::OpId n = op.id();
  handled = true;
  llvm::Type* voidTy = llvm::Type::getVoidTy(M.ctx);
  auto handleOf = [&](unsigned i) { return b.CreateExtractValue(get(op.operand(i)), 1); };
  auto recordOf = [&](unsigned i) { return b.CreateExtractValue(get(op.operand(i)), 0); };
  auto bufferValue = [&](llvm::Value* rec, llvm::Value* handle) {
    llvm::Value* v = llvm::PoisonValue::get(M.bufferTy);
    return b.CreateInsertValue(b.CreateInsertValue(v, rec, 0), handle, 1);
  };
  auto isHostBuffer = [&](unsigned i) { return op.operand(i)->type()->space() == ir::Space::Host; };

  if (n == ir::OpId::Alloc) {
    bool host = op.result(0)->type()->space() == ir::Space::Host;
    llvm::Value* count = widen(*this, op.operand(0));
    llvm::Value* r = b.CreateCall(M.hostRuntime(host ? kAllocHost : kAllocDevice, host ? M.ptr : M.i64, {M.ptr, M.i32, M.i64}),
                                  {hostCtx, siteOf(op), count});
    checkFailed();
    set(op.result(0), host ? bufferValue(r, b.getInt64(0)) : bufferValue(llvm::Constant::getNullValue(M.ptr), r));
    return true;
  }
  if (n == ir::OpId::Free) {
    if (isHostBuffer(0))
      b.CreateCall(M.hostRuntime(kFreeHost, voidTy, {M.ptr, M.i32, M.ptr}), {hostCtx, siteOf(op), recordOf(0)});
    else
      b.CreateCall(M.hostRuntime(kFreeDevice, voidTy, {M.ptr, M.i32, M.i64}), {hostCtx, siteOf(op), handleOf(0)});
    checkFailed();
    return true;
  }
  if (n == ir::OpId::H2D || n == ir::OpId::D2H || n == ir::OpId::Copy) {
    if (n == ir::OpId::H2D)
      b.CreateCall(M.hostRuntime(kH2D, voidTy, {M.ptr, M.i32, M.i64, M.ptr}), {hostCtx, siteOf(op), handleOf(0), recordOf(1)});
    else if (n == ir::OpId::D2H)
      b.CreateCall(M.hostRuntime(kD2H, voidTy, {M.ptr, M.i32, M.ptr, M.i64}), {hostCtx, siteOf(op), recordOf(0), handleOf(1)});
    else
      b.CreateCall(M.hostRuntime(kCopy, voidTy, {M.ptr, M.i32, M.i64, M.i64}), {hostCtx, siteOf(op), handleOf(0), handleOf(1)});
    checkFailed();
    return true;
  }
  if (n == ir::OpId::DeviceCount) {
    llvm::Value* count = b.CreateCall(M.hostRuntime(kDeviceCount, M.i64, {M.ptr}), {hostCtx});
    set(op.result(0), b.CreateTrunc(count, M.valueType(op.result(0)->type())));
    return true;
  }
  if (n == ir::OpId::Wait) {
    b.CreateCall(M.hostRuntime(kWait, voidTy, {M.ptr, M.i32}), {hostCtx, siteOf(op)});
    checkFailed();
    return true;
  }
  if (n == ir::OpId::Dispatch) {
    size_t slots = 0;
    for (const ir::Value* v : op.operands()) slots += hostSlotCount(v->type());
    for (const ir::Value* v : op.operands())
      if (hasFunctionOrVar(v->type())) return fail(op, "a generic kernel or function value argument is not supported in compiled host code");
    llvm::AllocaInst* block = entryAlloca(llvm::ArrayType::get(M.i64, std::max<size_t>(slots, 1)), "dispatch.args");
    unsigned i = 0;
    for (const ir::Value* v : op.operands()) storeHostSlots(*this, v->type(), get(v), block, i);
    b.CreateCall(M.hostRuntime(kDispatch, voidTy, {M.ptr, M.i32, M.ptr}), {hostCtx, siteOf(op), block});
    checkFailed();
    return true;
  }
  if (n == ir::OpId::BufferLen) {
    llvm::Type* rt = M.valueType(op.result(0)->type());
    if (!isHostBuffer(0)) {
      llvm::Value* len = b.CreateCall(M.hostRuntime(kLenDevice, M.i64, {M.ptr, M.i32, M.i64}), {hostCtx, siteOf(op), handleOf(0)});
      checkFailed();
      set(op.result(0), b.CreateZExtOrTrunc(len, rt));
      return true;
    }
    // A count of 0 may be a freed buffer: the runtime says which.
    llvm::Value* rec = recordOf(0);
    llvm::Value* count = b.CreateLoad(M.i64, b.CreateConstInBoundsGEP1_64(M.i8, rec, offsetof(HostBufferRecord, count)));
    llvm::BasicBlock* pre = b.GetInsertBlock();
    llvm::BasicBlock* slow = newBlock("len.empty");
    llvm::BasicBlock* done = newBlock("len");
    b.CreateCondBr(b.CreateICmpEQ(count, b.getInt64(0)), slow, done);
    b.SetInsertPoint(slow);
    llvm::Value* checked = b.CreateCall(M.hostRuntime(kLenHost, M.i64, {M.ptr, M.i32, M.ptr}), {hostCtx, siteOf(op), rec});
    checkFailed();
    llvm::BasicBlock* slowEnd = b.GetInsertBlock();
    b.CreateBr(done);
    b.SetInsertPoint(done);
    llvm::PHINode* len = b.CreatePHI(M.i64, 2);
    len->addIncoming(count, pre);
    len->addIncoming(checked, slowEnd);
    set(op.result(0), b.CreateZExtOrTrunc(len, rt));
    return true;
  }
  if (n == ir::OpId::Load || n == ir::OpId::Store) {
    // Inline: in bounds (a freed buffer has count 0) and, for a load, written.
    const ir::Type* et = op.operand(0)->type()->elem();
    if (!ir::isStorable(et)) return fail(op, "buffers of '" + et->str() + "' are not supported in compiled host code");
    llvm::Value* rec = recordOf(0);
    llvm::Value* idx = widen(*this, op.operand(1));
    auto field = [&](size_t off, llvm::Type* t) { return b.CreateLoad(t, b.CreateConstInBoundsGEP1_64(M.i8, rec, off)); };
    llvm::Value* count = field(offsetof(HostBufferRecord, count), M.i64);
    llvm::Value* written = field(offsetof(HostBufferRecord, written), M.ptr);
    llvm::Value* flag = nullptr;
    llvm::BasicBlock* bad = newBlock(std::string(op.name()) + ".bad");
    llvm::BasicBlock* inBounds = newBlock(std::string(op.name()) + ".inbounds");
    auto unlikely = llvm::MDBuilder(M.ctx).createBranchWeights(1 << 20, 1);
    b.CreateCondBr(b.CreateICmpULT(idx, count), inBounds, bad, unlikely);
    b.SetInsertPoint(bad);
    b.CreateCall(M.hostRuntime(kBadAccess, voidTy, {M.ptr, M.i32, M.ptr, M.i64}), {hostCtx, siteOf(op), rec, idx});
    b.CreateBr(bail());
    b.SetInsertPoint(inBounds);
    flag = b.CreateInBoundsGEP(M.i8, written, idx);
    if (n == ir::OpId::Load) {
      llvm::BasicBlock* ok = newBlock("load.written");
      b.CreateCondBr(b.CreateICmpNE(b.CreateLoad(M.i8, flag), b.getInt8(0)), ok, bad, unlikely);
      b.SetInsertPoint(ok);
    }
    llvm::Value* data = field(offsetof(HostBufferRecord, data), M.ptr);
    llvm::Value* p = b.CreateInBoundsGEP(M.i8, data, b.CreateMul(idx, b.getInt64(ir::storageStride(et))));
    if (n == ir::OpId::Load) {
      set(op.result(0), loadStorage(et, p));
    } else {
      storeStorage(et, p, get(op.operand(2)));
      b.CreateStore(b.getInt8(1), flag);
    }
    return true;
  }
  if (n == ir::OpId::Call) {
    const ir::Function* callee = M.irm.lookup(op.symbolAttr("callee"));
    auto it = callee ? M.hostFns.find(callee) : M.hostFns.end();
    if (it == M.hostFns.end()) return fail(op, "calls a function that is not lowered for host code");
    std::vector<llvm::Value*> args;
    for (const ir::Value* v : op.operands()) args.push_back(get(v));
    setResults(*this, op, emitHostCall(*this, op, it->second->getFunctionType(), it->second, args));
    return true;
  }
  if (n == ir::OpId::CallIndirect) {
    const ir::Type* ft = op.operand(0)->type();
    if (hasFunctionOrVar(ft) && ir::hasTypeVar(ft)) return fail(op, "a generic function value is not supported in compiled host code");
    std::vector<llvm::Value*> args;
    for (unsigned i = 1; i < op.numOperands(); ++i) args.push_back(get(op.operand(i)));
    setResults(*this, op, emitHostCall(*this, op, hostFnType(M, ft), get(op.operand(0)), args));
    return true;
  }
  if (n == ir::OpId::FuncRef) {
    const ir::Function* callee = M.irm.lookup(op.symbolAttr("callee"));
    auto it = callee ? M.hostFns.find(callee) : M.hostFns.end();
    if (it == M.hostFns.end()) return fail(op, "refers to a function that is not lowered for host code");
    if (ir::hasTypeVar(callee->type())) return fail(op, "a reference to a generic function is not supported in compiled host code");
    set(op.result(0), it->second);
    return true;
  }
  if (n == ir::OpId::BoxNew || n == ir::OpId::BoxGet) return emitBoxOp(op);
  if (n == ir::OpId::CallC) return emitFfiCall(op);
  const ir::OpInfo& info = op.info();
  if (ir::isAtomic(n) || n == ir::OpId::Barrier || n == ir::OpId::WorkgroupAlloc || info.has(ir::kKernelOnly) ||
      info.has(ir::kHostOnly))
    return fail(op, "not supported in compiled host code");
  handled = false;
  return true;
}

bool emitHostFunctions(ModuleEmitter& M) {
  std::vector<const ir::Op*> sites = hostSites(M.irm);
  for (unsigned i = 0; i < sites.size(); ++i) M.hostSiteIds[sites[i]] = i;
  std::vector<const ir::Type*> boxTypes = hostBoxTypes(M.irm);
  for (unsigned i = 0; i < boxTypes.size(); ++i) M.boxTypeIds[boxTypes[i]] = i;
  std::vector<const ir::Function*> fns = hostLoweredFunctions(M.irm, M.opts.hostEntry);
  for (const ir::Function* f : fns) {
    if (ir::isGeneric(*f)) return M.fail(nullptr, f, "generic functions are not supported in compiled host code");
    if (!declareHost(M, *f)) return false;
  }
  for (const ir::Function* f : fns) {
    llvm::Function* fn = M.hostFns.at(f);
    M.currentFunction = f;
    FunctionEmitter F(M, fn, *f);
    F.b.SetInsertPoint(llvm::BasicBlock::Create(M.ctx, "entry", fn));
    F.hostCtx = &*fn->arg_begin();
    F.trapMask = F.entryAlloca(M.i64, "trapmask");  // unused in host mode
    std::vector<llvm::Value*> params;
    for (auto a = fn->arg_begin() + 1; a != fn->arg_end(); ++a) params.push_back(&*a);
    const ir::Op* term = F.emitBody(f->body(), params);
    if (!term) return false;
    std::vector<llvm::Value*> results;
    for (const ir::Value* v : term->operands()) results.push_back(F.get(v));
    if (results.empty()) {
      F.b.CreateRetVoid();
    } else if (results.size() == 1) {
      F.b.CreateRet(results[0]);
    } else {
      llvm::Value* agg = llvm::PoisonValue::get(fn->getReturnType());
      for (unsigned i = 0; i < results.size(); ++i) agg = F.b.CreateInsertValue(agg, results[i], i);
      F.b.CreateRet(agg);
    }
  }
  // Entry wrappers for host functions without function values in their signature.
  for (const ir::Function* f : fns) {
    if (!f->isHost()) continue;
    bool plain = true;
    for (const ir::Type* t : f->paramTypes()) plain = plain && !hasFunctionOrVar(t);
    for (const ir::Type* t : f->resultTypes()) plain = plain && !hasFunctionOrVar(t);
    if (!plain) continue;
    auto* wty = llvm::FunctionType::get(llvm::Type::getVoidTy(M.ctx), {M.ptr, M.ptr, M.ptr}, false);
    auto* w = llvm::Function::Create(wty, llvm::GlobalValue::ExternalLinkage, "eph.entry." + f->name(), *M.mod);
    w->addFnAttr(llvm::Attribute::NoUnwind);
    FunctionEmitter F(M, w, *f);
    F.b.SetInsertPoint(llvm::BasicBlock::Create(M.ctx, "entry", w));
    F.hostCtx = &*w->arg_begin();
    llvm::Value* in = &*(w->arg_begin() + 1);
    llvm::Value* out = &*(w->arg_begin() + 2);
    std::vector<llvm::Value*> args = {F.hostCtx};
    unsigned i = 0;
    for (const ir::Type* t : f->paramTypes()) args.push_back(loadHostSlots(F, t, in, i));
    llvm::Function* callee = M.hostFns.at(f);
    llvm::Value* r = F.b.CreateCall(callee, args);
    F.checkFailed();
    i = 0;
    auto results = f->resultTypes();
    for (unsigned k = 0; k < results.size(); ++k)
      storeHostSlots(F, results[k], results.size() == 1 ? r : F.b.CreateExtractValue(r, k), out, i);
    F.b.CreateRetVoid();
    M.hostEntries[f->name()] = w->getName().str();
  }
  if (!fns.empty()) emitBoxCodecs(M, *fns.front());
  // The function table (HostAbi.h).
  std::vector<llvm::Constant*> table;
  for (const ir::Function* f : fns) table.push_back(M.hostFns.at(f));
  auto* at = llvm::ArrayType::get(M.ptr, table.size());
  new llvm::GlobalVariable(*M.mod, at, true, llvm::GlobalValue::ExternalLinkage, llvm::ConstantArray::get(at, table),
                           kHostFunctionTable);
  return !M.error;
}

}  // namespace eph::llvmtarget
