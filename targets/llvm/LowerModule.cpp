// Module-level lowering: value types, device function declarations and
// bodies, and the per-op dispatch of FunctionEmitter.
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include <algorithm>

#include "ir/KernelText.h"
#include "ir/OpTable.h"
#include "ir/ops/TypeVars.h"
#include "targets/llvm/Emitter.h"

namespace eph::llvmtarget {

ModuleEmitter::ModuleEmitter(llvm::LLVMContext& c, const ir::Module& m, const LowerOptions& o)
    : ctx(c), inlined(inlineBarrierCalls(m)), irm(inlined ? *inlined->module : m), opts(o),
      mod(std::make_unique<llvm::Module>(m.sourceName.empty() ? "eph" : m.sourceName, c)) {
  i1 = llvm::Type::getInt1Ty(ctx);
  i8 = llvm::Type::getInt8Ty(ctx);
  i32 = llvm::Type::getInt32Ty(ctx);
  i64 = llvm::Type::getInt64Ty(ctx);
  f64 = llvm::Type::getDoubleTy(ctx);
  ptr = llvm::PointerType::get(ctx, 0);
  bufferTy = llvm::StructType::get(ctx, {ptr, i64});
  // Sites and reached functions are those of the user's module m (irm may
  // be its copy with barrier calls inlined): reached by name.
  const ir::Function* sole = nullptr;
  if (o.kernels.size() == 1 && !o.lowerHost)
    if (const ir::Function* k = m.lookup(o.kernels[0]); k && k->isKernel()) sole = k;
  soleKernel_ = sole != nullptr;
  std::vector<const ir::Op*> sites = sole ? trapSites(*sole) : trapSites(m);
  if (sole)
    for (const ir::Function* f : ir::reachedDeviceFunctions(*sole)) reached_.insert(f->name());
  for (unsigned i = 0; i < sites.size(); ++i) sites_[sites[i]] = i;
  if (inlined) {  // each op of the copy takes the number of the op it was copied from
    std::unordered_map<const ir::Op*, unsigned> copied;
    for (auto [op, from] : inlined->origin)
      if (auto it = sites_.find(from); it != sites_.end()) copied[op] = it->second;
    sites_ = std::move(copied);
  }
}

bool ModuleEmitter::fail(const ir::Op* op, const ir::Function* f, std::string message) {
  if (error) return false;
  errorOp = op;
  errorFn = f;
  Loc loc = op && op->loc().known() ? op->loc() : f ? f->loc() : Loc{};
  std::string prefix = op ? "'" + std::string(op->name()) + "': " : f ? "function '@" + f->name() + "': " : "";
  error = Error{loc, prefix + message + " (cpu target)"};
  return false;
}

llvm::Type* ModuleEmitter::valueType(const ir::Type* t, const ir::Op* where) {
  if (auto it = types_.find(t); it != types_.end()) return it->second;
  llvm::Type* r = nullptr;
  switch (t->kind()) {
    case ir::TypeKind::Bool: r = i1; break;
    case ir::TypeKind::Int: r = llvm::Type::getIntNTy(ctx, t->bits()); break;
    case ir::TypeKind::Float:
      r = t->bits() == 16 ? llvm::Type::getHalfTy(ctx)
          : t->bits() == 32 ? llvm::Type::getFloatTy(ctx) : f64;
      break;
    case ir::TypeKind::Vector:
      if (llvm::Type* e = valueType(t->elem(), where)) r = llvm::FixedVectorType::get(e, t->count());
      break;
    case ir::TypeKind::Array:
      if (llvm::Type* e = valueType(t->elem(), where)) r = llvm::ArrayType::get(e, t->count());
      break;
    case ir::TypeKind::Struct:
    case ir::TypeKind::Sum: {
      std::vector<llvm::Type*> fields;
      if (t->isSum()) fields.push_back(i32);
      for (const ir::Type* m : t->members()) {
        llvm::Type* f = valueType(m, where);
        if (!f) return nullptr;
        fields.push_back(f);
      }
      r = llvm::StructType::get(ctx, fields);
      break;
    }
    case ir::TypeKind::Buffer: r = bufferTy; break;
    case ir::TypeKind::Function:
      if (hostMode) {
        r = ptr;
        break;
      }
      fail(where, nullptr, "function values ('" + t->str() + "') are not supported by the cpu target "
                           "(run the monomorphize pass first: it makes calls through known functions direct)");
      return nullptr;
    case ir::TypeKind::Box:
      if (hostMode) {
        r = ptr;  // a HostBoxCell* (HostAbi.h)
        break;
      }
      fail(where, currentFunction, "box values are not supported in kernels");
      return nullptr;
    case ir::TypeKind::Var:
      fail(where, nullptr, "the type variable " + t->str() + " is left: the function is generic "
                           "(run the monomorphize pass first)");
      return nullptr;
    default:
      fail(where, currentFunction, "values of type '" + t->str() + "' are not supported");
      return nullptr;
  }
  types_[t] = r;
  return r;
}

llvm::FunctionCallee ModuleEmitter::libm(const char* name, unsigned args) {
  std::vector<llvm::Type*> params(args, f64);
  auto callee = mod->getOrInsertFunction(name, llvm::FunctionType::get(f64, params, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotThrow();
    f->setOnlyAccessesInaccessibleMemory();
    f->setWillReturn();
  }
  return callee;
}

bool ModuleEmitter::hasBarrier(const ir::Op& root) {
  bool found = false;
  const_cast<ir::Op&>(root).walk([&](ir::Op* op) {
    if (found) return;
    if (op->info().has(ir::kBarrier)) {
      found = true;
    } else if (op->is(ir::OpId::Call)) {
      const ir::Function* callee = irm.lookup(op->symbolAttr("callee"));
      if (!callee) return;
      auto it = barrierFns_.find(callee);
      if (it == barrierFns_.end()) {
        barrierFns_[callee] = false;  // no recursion among device functions
        bool inner = false;
        for (auto& o : const_cast<ir::Function*>(callee)->body().ops()) inner = inner || hasBarrier(*o);
        it = barrierFns_.insert_or_assign(callee, inner).first;
      }
      found = it->second;
    }
  });
  return found;
}

bool ModuleEmitter::declareDevice(const ir::Function& f) {
  std::vector<llvm::Type*> params;
  for (const ir::Type* t : f.paramTypes()) {
    if (t->isFunction() || ir::hasTypeVar(t))
      return fail(nullptr, &f, "parameter of type '" + t->str() + "': " +
                                   (t->isFunction() ? "a function value" : "a type variable") +
                                   " (run the monomorphize pass first)");
    llvm::Type* lt = valueType(t);
    if (!lt) return fail(nullptr, &f, "parameter of type '" + t->str() + "' is not supported");
    params.push_back(lt);
  }
  for (unsigned i = 0; i < kHiddenIdArgs; ++i) params.push_back(i32);
  params.push_back(ptr);
  std::vector<llvm::Type*> results;
  for (const ir::Type* t : f.resultTypes()) {
    llvm::Type* lt = valueType(t);
    if (!lt) return fail(nullptr, &f, "result of type '" + t->str() + "' is not supported");
    results.push_back(lt);
  }
  llvm::Type* ret = results.empty() ? llvm::Type::getVoidTy(ctx)
                    : results.size() == 1 ? results[0] : llvm::StructType::get(ctx, results);
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(ret, params, false),
                                    llvm::GlobalValue::InternalLinkage, "dev." + f.name(), *mod);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  deviceFns[&f] = fn;
  return true;
}

bool ModuleEmitter::run() {
  // Names a kernel must not take: they are C library functions this target calls.
  static const char* const kReserved[] = {
      "exp",   "log",   "sin",  "cos",   "tan",   "tanh",  "pow",   "fmod",   "fmodf",  "memcpy", "memset",
      "memmove", "asin", "acos", "atan", "atan2", "sinh",  "cosh",  "asinh",  "acosh",  "atanh",  "erf",
      "exp2",  "log2",  "log1p", "expm1", "round", "roundf", "trunc", "truncf", "fma",   "fmaf"};
  // Device functions with barriers are not lowered: the calls to them were
  // inlined (BarrierCalls.h), and one left is an error (LowerControl.cpp).
  auto selected = [&](const ir::Function& f) {
    return opts.kernels.empty() || std::find(opts.kernels.begin(), opts.kernels.end(), f.name()) != opts.kernels.end();
  };
  // Device functions with the device ABI serve kernels only (host code
  // calls its own copies, LowerHost.cpp): none when no kernel is lowered.
  bool anyKernel = false;
  for (const auto& f : irm.functions()) anyKernel = anyKernel || (f->isKernel() && selected(*f));
  auto lowered = [&](const ir::Function& f) {
    if (f.kind() != ir::FunctionKind::Device || !anyKernel) return false;
    if (soleKernel_ && !reached_.count(f.name())) return false;
    for (const auto& op : f.body().ops())
      if (hasBarrier(*op)) return false;
    return true;
  };
  for (const auto& f : irm.functions()) {
    if (f->isKernel()) {
      for (const char* r : kReserved)
        if (f->name() == r)
          return fail(nullptr, f.get(), "a kernel may not be named '" + f->name() +
                                             "' (a C library function the cpu target calls)");
      if (f->name().ends_with(".range") || f->name().starts_with("dev."))
        return fail(nullptr, f.get(), "kernel names ending in '.range' or starting with 'dev.' are reserved");
    }
    if (lowered(*f) && !declareDevice(*f)) return false;
  }
  for (const auto& f : irm.functions())
    if (lowered(*f) && !emitDeviceFunction(*this, *f)) return false;
  for (const auto& f : irm.functions())
    if (f->isKernel() && selected(*f) && !emitKernel(*this, *f)) return false;
  if (opts.lowerHost) {
    // All or nothing: a host function that cannot be lowered leaves the
    // module's host code to the interpreter, and the kernels stand.
    std::vector<llvm::Function*> before;
    for (llvm::Function& fn : *mod) before.push_back(&fn);
    hostMode = true;
    bool ok = emitHostFunctions(*this);
    hostMode = false;
    if (!ok) {
      hostError = error ? *error : Error{{}, "host functions could not be lowered (cpu target)"};
      hostErrorOp = errorOp;
      hostErrorFn = errorFn;
      error.reset();
      hostEntries.clear();
      std::vector<llvm::Function*> added;
      for (llvm::Function& fn : *mod)
        if (std::find(before.begin(), before.end(), &fn) == before.end()) added.push_back(&fn);
      for (llvm::Function* fn : added) fn->dropAllReferences();
      if (auto* table = mod->getNamedGlobal(kHostFunctionTable)) table->eraseFromParent();
      for (llvm::Function* fn : added) fn->eraseFromParent();
    }
  }
  return true;
}

// ---- FunctionEmitter ---------------------------------------------------------

FunctionEmitter::FunctionEmitter(ModuleEmitter& m, llvm::Function* f, const ir::Function& irfn)
    : M(m), fn(f), irf(irfn), b(m.ctx) {}

llvm::Value* FunctionEmitter::get(const ir::Value* v) const {
  auto it = vals.find(v);
  assert(it != vals.end() && "value not lowered yet");
  return it->second;
}

llvm::BasicBlock* FunctionEmitter::newBlock(const llvm::Twine& name) {
  return llvm::BasicBlock::Create(M.ctx, name, fn);
}

llvm::AllocaInst* FunctionEmitter::entryAlloca(llvm::Type* t, const llvm::Twine& name) {
  llvm::BasicBlock& entry = fn->getEntryBlock();
  llvm::IRBuilder<> eb(&entry, entry.getFirstInsertionPt());
  return eb.CreateAlloca(t, nullptr, name);
}

void FunctionEmitter::trapIf(const ir::Op& op, llvm::Value* bad) {
  if (bad->getType()->isVectorTy()) bad = b.CreateOrReduce(bad);
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(bad); c && c->isZero()) return;
  if (hostCtx) {
    // Host code stops at the first trap with the interpreter's error; the
    // runtime gets the index of an array access for the message.
    llvm::BasicBlock* trap = newBlock("trap");
    llvm::BasicBlock* cont = newBlock("cont");
    b.CreateCondBr(bad, trap, cont, llvm::MDBuilder(M.ctx).createBranchWeights(1, 1 << 20));
    b.SetInsertPoint(trap);
    llvm::Value* value = b.getInt64(0);
    if (op.is(ir::OpId::ArrayGet) || op.is(ir::OpId::ArraySet)) {
      const ir::Value* index = op.operand(1);
      value = index->type()->isSigned() ? b.CreateSExtOrTrunc(get(index), M.i64) : b.CreateZExtOrTrunc(get(index), M.i64);
    }
    b.CreateCall(M.hostRuntime(hostabi::kTrap, llvm::Type::getVoidTy(M.ctx), {M.ptr, M.i32, M.i64}),
                 {hostCtx, siteOf(op), value});
    b.CreateBr(bail());
    b.SetInsertPoint(cont);
    return;
  }
  unsigned site = M.siteOf(op);
  uint64_t bit = uint64_t(1) << (site < 63 ? site : 63);
  llvm::Value* old = b.CreateLoad(M.i64, trapMask);
  llvm::Value* add = b.CreateSelect(bad, b.getInt64(bit), b.getInt64(0));
  b.CreateStore(b.CreateOr(old, add), trapMask);
}

void FunctionEmitter::trapOutOfBounds(const ir::Op& op, llvm::Value* bad, llvm::Value* index, llvm::Value* length) {
  if (hostCtx) return trapIf(op, bad);
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(bad); c && c->isZero()) return;
  llvm::Value* none = noOutOfBoundsYet();
  llvm::BasicBlock* oob = newBlock("oob");
  llvm::BasicBlock* cont = newBlock("oob.cont");
  b.CreateCondBr(bad, oob, cont, llvm::MDBuilder(M.ctx).createBranchWeights(1, 1 << 20));
  b.SetInsertPoint(oob);
  recordOutOfBounds(op, index, length, none);
  b.CreateBr(cont);
  b.SetInsertPoint(cont);
  trapIf(op, bad);
}

llvm::Value* FunctionEmitter::oobField(size_t offset) {
  return b.CreateConstInBoundsGEP1_64(M.i8, trapMask, offsetof(TrapScratch, oob) + offset);
}

// Loaded where every invocation passes: a plain load the vectoriser widens,
// where a load only on the cold path would need a masked one.
llvm::Value* FunctionEmitter::noOutOfBoundsYet() {
  llvm::Value* siteAt = lin && oobSites ? b.CreateInBoundsGEP(M.i32, oobSites, lin) : oobField(offsetof(OutOfBounds, site));
  return b.CreateICmpEQ(b.CreateAlignedLoad(M.i32, siteAt, llvm::Align(4)), b.getInt32(0));
}

// The trap bit is set apart (trapIf, where every invocation passes), so that
// it stays an `or` reduction the vectoriser recognises.
void FunctionEmitter::recordOutOfBounds(const ir::Op& op, llvm::Value* index, llvm::Value* length, llvm::Value* none) {
  llvm::Value* site = b.getInt32(M.siteOf(op) + 1);
  llvm::Value *siteAt, *indexAt, *lengthAt;
  if (lin && oobSites) {  // the invocation's first (KernelEmitter picks the workgroup's)
    siteAt = b.CreateInBoundsGEP(M.i32, oobSites, lin);
    indexAt = b.CreateInBoundsGEP(M.i64, oobIndices, lin);
    lengthAt = b.CreateInBoundsGEP(M.i64, oobLengths, lin);
  } else {  // device functions: the TrapScratch's record (one thread runs the workgroup)
    siteAt = oobField(offsetof(OutOfBounds, site));
    indexAt = oobField(offsetof(OutOfBounds, index));
    lengthAt = oobField(offsetof(OutOfBounds, length));
  }
  llvm::BasicBlock* first = newBlock("oob.first");
  llvm::BasicBlock* done = newBlock("oob.kept");
  b.CreateCondBr(none, first, done);
  b.SetInsertPoint(first);
  b.CreateAlignedStore(site, siteAt, llvm::Align(4));
  b.CreateAlignedStore(index, indexAt, llvm::Align(8));
  b.CreateAlignedStore(length, lengthAt, llvm::Align(8));
  if (!(lin && oobSites))
    for (int d = 0; d < 3; ++d) {
      llvm::Value* local = ids.local[d] ? ids.local[d] : b.getInt32(0);
      llvm::Value* gid = b.CreateAdd(b.CreateMul(ids.group[d], ids.size[d]), local);
      b.CreateAlignedStore(gid, oobField(offsetof(OutOfBounds, globalId) + 4 * d), llvm::Align(4));
    }
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

const ir::Op* FunctionEmitter::emitBody(const ir::Region& r, const std::vector<llvm::Value*>& args) {
  for (unsigned i = 0; i < r.numArgs(); ++i) set(r.arg(i), args[i]);
  for (const auto& op : r.ops()) {
    if (op->info().has(ir::kTerminator)) return op.get();
    if (!emitOp(*op)) return nullptr;
  }
  fail(*r.parentOp(), "region without a terminator");
  return nullptr;
}

bool FunctionEmitter::emitOp(const ir::Op& op) {
  if (hostCtx) {
    bool handled = false;
    bool ok = emitHostOp(op, handled);
    if (handled) return ok;
  }
  EmitFn fn = table()[op.id()];
  if (!fn) return emitUnsupported(op);
  return (this->*fn)(op);
}

bool FunctionEmitter::emitUnsupported(const ir::Op& op) {
  return fail(op, "op '" + std::string(op.name()) + "' is not supported on target cpu");
}

const FunctionEmitter::EmitTable& FunctionEmitter::table() {
  static const EmitTable table = [] {
    EmitTable t;
    addArithLowerings(t);
    addAggregateLowerings(t);
    addMemoryLowerings(t);
    addControlLowerings(t);
    return t;
  }();
  return table;
}

ir::Lowering lowersOp(ir::OpId id) {
  FunctionEmitter::EmitFn fn = FunctionEmitter::table()[id];
  if (!fn) return ir::Lowering::Missing;
  return fn == &FunctionEmitter::emitUnsupported ? ir::Lowering::Unsupported : ir::Lowering::Lowered;
}

bool emitDeviceFunction(ModuleEmitter& M, const ir::Function& f) {
  llvm::Function* fn = M.deviceFns.at(&f);
  FunctionEmitter F(M, fn, f);
  F.b.SetInsertPoint(llvm::BasicBlock::Create(M.ctx, "entry", fn));
  std::vector<llvm::Value*> params;
  auto arg = fn->arg_begin();
  for (unsigned i = 0; i < f.paramTypes().size(); ++i) params.push_back(&*arg++);
  for (auto* group : {F.ids.local, F.ids.group, F.ids.numGroups, F.ids.size})
    for (int d = 0; d < 3; ++d) group[d] = &*arg++;
  F.trapMask = &*arg;
  const ir::Op* term = F.emitBody(f.body(), params);
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
  return true;
}

}  // namespace eph::llvmtarget
