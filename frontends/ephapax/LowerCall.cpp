// Lowering of checked Ephapax to the IR: calls, and the IR functions (instances, kernels, device copies) they target.
// (Lowerer methods; see Lowerer.h for the other parts.)
#include "frontends/ephapax/Lowerer.h"

namespace eph::ephapax::lowering {

Value* Lowerer::lowerCall(Expr& e, bool tail) {
  Expr& callee = *e.kids[0];
  const ir::Type* ty = lowerTy(e.ty);
  auto value = [&](Value* v) { return tail ? finishTail(v, e.span) : v; };
  if (e.builtin != Expr::NoBuiltin) return value(lowerBuiltin(e));
  bool named = callee.kind == ExprKind::Var && !callee.binding;
  if (named && callee.refKind == Expr::Fn) {
    FnDecl& f = *c_.prog.fns[callee.global];
    Subst fs;
    for (size_t i = 0; i < f.typeParamTys.size() && i < callee.inst.size(); ++i)
      fs.push_back({f.typeParamTys[i]->id, deep(callee.inst[i], subst_)});
    if (f.gpuRole == FnDecl::Kernel) {
      unsupported(e.span, "a kernel is launched with `dispatch`, not called", "E217");
      return value(fabricate(ty));
    }
    bool onceGeneric = f.gpuRole == FnDecl::Launcher || instantiateInIr(f, fs);
    ir::Function* target = device_ ? deviceFn(f) : onceGeneric ? genericHostFn(f) : instance(f, fs);
    if (e.kids.size() - 1 != target->paramTypes().size()) {
      unsupported(e.span, "code generation cannot apply `" + f.name + "` partially");
      return value(fabricate(ty));
    }
    // An owned buffer passed plainly to a view parameter is consumed:
    // the call borrows it, and it is freed after the call (as by dispatch).
    std::vector<Value*> args, lentOwned;
    for (size_t i = 1; i < e.kids.size(); ++i) {
      const ir::Type* want = target->paramTypes()[i - 1];
      if (want->isFunction()) {
        args.push_back(lowerFnArg(*e.kids[i], "`" + f.name + "`"));
        continue;
      }
      Value* a = lowerArg(*e.kids[i]);
      if (e.kids[i]->kind != ExprKind::Borrow && want->isBuffer() && want->space() == ir::Space::Device &&
          owns(a->type()) && !owns(want))
        lentOwned.push_back(a);
      args.push_back(ir::hasTypeVar(want) ? a : coerceArg(a, want, e.kids[i]->span));
    }
    auto freeLent = [&] {
      for (Value* v : lentOwned) dropValue(v);
    };
    setLoc(e.span);
    if (ir::isGeneric(*target)) {
      // The callee's type variables are bound by the arguments and the
      // call's own (checked) type; the monomorphize pass makes the instance.
      std::vector<const ir::Type*> argTys;
      for (Value* a : args) argTys.push_back(a->type());
      const ir::Type* rts[] = {ty};
      ir::TypeBinding binding;
      if (std::string why = ir::checkCallTypes(*target, argTys, rts, binding); !why.empty()) {
        unsupported(e.span, "code generation cannot call `" + f.name + "` here: " + why);
        dropPendingArgs();
        return value(fabricate(ty));
      }
      Value* r = b_.call(target->name(), args, {ty})[0];
      dropPendingArgs();
      freeLent();
      return value(r);
    }
    Value* r;
    if (tail && loopSum_ && target->name() == curKey_) {
      // The next iteration reads its list arguments after this one's
      // temporaries are gone: a fresh list goes into a box.
      for (size_t i = 0; i < args.size(); ++i)
        if (freshLists_.count(args[i])) args[i] = coerce(boxList(args[i]), target->paramTypes()[i], e.kids[i + 1]->span);
      const ir::Type* argsT = loopSum_->members()[0];
      r = b_.sumMake(loopSum_, 0, b_.op("struct.make", args, argsT));
      dropPendingArgs();
      return r;
    }
    r = b_.call(target->name(), args, {target->resultTypes()[0]})[0];
    dropPendingArgs();
    freeLent();
    return value(coerce(r, ty, e.span));
  }
  if (named && callee.refKind == Expr::Extern) {
    FnDecl& f = *c_.prog.fns[callee.global];
    std::vector<Value*> args;
    for (size_t i = 1; i < e.kids.size(); ++i)
      args.push_back(coerce(lowerExpr(*e.kids[i]), lowerTy(f.paramTys[i - 1]), e.kids[i]->span));
    setLoc(e.span);
    return value(coerce(ffiCall(f.name, args, lowerTy(f.retTy), e.span), ty, e.span));
  }
  if (named && callee.refKind == Expr::Ctor) {
    auto [d, k] = std::pair<TypeDecl*, int>(c_.ctors[callee.name]);
    const ir::Type* st = ty;
    const ir::Type* payloadT = st->isSum() && static_cast<size_t>(k) < st->members().size() ? st->members()[k] : ctx_.unitType();
    std::vector<Value*> fields;
    for (size_t i = 1; i < e.kids.size(); ++i) {
      Value* v = lowerExpr(*e.kids[i]);
      fields.push_back(i - 1 < payloadT->members().size() ? coerce(v, payloadT->members()[i - 1], e.kids[i]->span) : v);
    }
    setLoc(e.span);
    if (!st->isSum()) return value(fabricate(st));
    return value(b_.sumMake(st, k, b_.op("struct.make", fields, payloadT)));
  }
  // A function value (GPU code): call.indirect with every argument.
  if (callee.kind == ExprKind::Var && callee.binding)
    if (LBinding* lb = lookup(callee.binding); lb && lb->kind == LBinding::Plain && lb->v->type()->isFunction()) {
      const ir::Type* ft = lb->v->type();
      if (e.kids.size() - 1 != ft->members().size()) {
        unsupported(e.span, "code generation cannot apply a function value partially");
        return value(fabricate(ty));
      }
      Value* fn = lb->v;
      ir::Values args;
      for (size_t i = 1; i < e.kids.size(); ++i) {
        const ir::Type* want = ft->members()[i - 1];
        Value* a = lowerArg(*e.kids[i]);
        args.push_back(ir::hasTypeVar(want) ? a : coerceArg(a, want, e.kids[i]->span));
      }
      setLoc(e.span);
      Value* r = b_.callIndirect(fn, args)[0];
      dropPendingArgs();
      return value(ir::hasTypeVar(r->type()) ? r : coerce(r, ty, e.span));
    }
  // A closure: apply it to one argument at a time.
  if (device_) {
    unsupported(e.span, "code generation does not yet support calls through function values in kernel code");
    return value(fabricate(ty));
  }
  Value* f = lowerExpr(callee);
  Ty* ft = callee.ty;
  if (e.kids.size() == 1) {
    setLoc(e.span);
    return value(coerce(apply(f, ft, b_.op("struct.make", {}, ctx_.unitType())), ty, e.span));
  }
  for (size_t i = 1; i < e.kids.size(); ++i) {
    Ty* fr = deep(ft, subst_);
    Value* a = lowerExpr(*e.kids[i]);
    Subst saved = subst_;
    subst_.clear();
    const ir::Type* want = lowerTy(fr->args[0]);
    subst_ = saved;
    a = coerce(a, want, e.kids[i]->span);
    setLoc(e.span);
    f = apply(f, fr, a);
    ft = fr->args[1];
  }
  return value(coerce(f, ty, e.span));
}

Value* Lowerer::lowerArg(Expr& e) {
  pendingList_ = false;
  Value* v = lowerExpr(e);
  if (pendingList_) {
    pendingList_ = false;
    pendingArgs_.push_back(v);
  }
  return v;
}

void Lowerer::dropPendingArgs() {
  for (Value* v : pendingArgs_) dropValue(v);
  pendingArgs_.clear();
}

bool Lowerer::isGeneric(const FnDecl& f) {
  for (Ty* p : f.typeParamTys)
    if (!p->regionVar) return true;
  return false;
}

// Parameter types of a kernel or device function: a GPU buffer view is
// buffer<T, device, write> when kernel code writes through it, else read.
std::vector<const ir::Type*> Lowerer::gpuParamTypes(FnDecl& f) {
  std::vector<const ir::Type*> out;
  for (size_t i = 0; i < f.params.size(); ++i) {
    Ty* t = sub(f.paramTys[i]);
    const ir::Type* pt = lowerTy(t);
    if (t->kind == Ty::Gpu && t->gpu == Ty::View && f.body) {
      std::set<std::pair<const FnDecl*, size_t>> seen{{&f, i}};
      bool writes = writesThrough(c_, *f.body, f.params[i].binding, seen);
      pt = ctx_.bufferType(pt->elem(), ir::Space::Device, writes ? ir::Ownership::Write : ir::Ownership::Read);
    }
    out.push_back(pt);
  }
  return out;
}

void Lowerer::setWorkgroupSize(ir::Function* f, const int64_t (&wg)[3], Span s) {
  int64_t total = 1;
  for (int d = 0; d < 3; ++d) {
    if (wg[d] < 1 || wg[d] > 1024) {
      unsupported(s, "a workgroup dimension must be 1..1024, got " + std::to_string(wg[d]));
      return;
    }
    total *= wg[d];
    f->workgroupSize[d] = static_cast<unsigned>(wg[d]);
  }
  if (total > 1024) unsupported(s, "a workgroup has at most 1024 invocations, got " + std::to_string(total));
}

ir::Function* Lowerer::kernelFn(FnDecl& f) {
  std::string key = "kernel:" + f.name;
  if (auto it = instances_.find(key); it != instances_.end()) return it->second;
  std::vector<const ir::Type*> params = generically([&] { return gpuParamTypes(f); });
  std::set<const FnDecl*> seen{&f};
  bool guarded = !usesBarrier(c_, *f.body, seen);
  if (guarded) addHiddenGrid(params, ctx_);
  ir::Function* irf = m_.addFunction(f.name, ir::FunctionKind::Kernel, ctx_.functionType(params, {}), loc(f.span));
  setWorkgroupSize(irf, f.workgroupSize, f.span);
  if (guarded) nameHiddenGrid(irf, f.params.size());
  instances_[key] = irf;
  work_.push_back({&f, {}, irf, FnKind::Kernel, true});
  return irf;
}

// The device copy of a function kernel code calls: `f`, or `f.device`
// when host code calls `f` too.
ir::Function* Lowerer::deviceFn(FnDecl& f) {
  std::string key = "device:" + f.name;
  if (auto it = instances_.find(key); it != instances_.end()) return it->second;
  auto [params, rt] = generically([&] { return std::make_pair(gpuParamTypes(f), lowerTy(f.retTy)); });
  std::string name = uses_.host.count(&f) ? f.name + ".device" : f.name;
  ir::Function* irf = m_.addFunction(name, ir::FunctionKind::Device, ctx_.functionType(params, {rt}), loc(f.span));
  instances_[key] = irf;
  work_.push_back({&f, {}, irf, FnKind::Device, true});
  return irf;
}

// A host function lowered once, with type variables for the monomorphize
// pass: a launcher (@gpu host code), or a plain generic host function that
// instantiateInIr admits.
ir::Function* Lowerer::genericHostFn(FnDecl& f) {
  std::string key = "gpuhost:" + f.name;
  if (auto it = instances_.find(key); it != instances_.end()) return it->second;
  auto [params, rt] = generically([&] {
    std::vector<const ir::Type*> ps;
    for (Ty* t : f.paramTys) ps.push_back(lowerParamTy(t));
    return std::make_pair(ps, lowerTy(f.retTy));
  });
  ir::Function* irf = m_.addFunction(f.name, ir::FunctionKind::Host, ctx_.functionType(params, {rt}), loc(f.span));
  instances_[key] = irf;
  work_.push_back({&f, {}, irf, FnKind::Host, true});
  return irf;
}

// A function with a parameter of function type (a launcher the monomorphize
// pass makes per function argument, `apply_all<@inc>`).
bool Lowerer::takesFunction(const FnDecl& f) {
  for (Ty* t : f.paramTys)
    if (resolve(t)->kind == Ty::Fn) return true;
  return false;
}

}  // namespace eph::ephapax::lowering
