// Lowering of checked Ephapax to the IR: closure conversion: closure types, closure values, apply and entry functions.
// (Lowerer methods; see Lowerer.h for the other parts.)
#include "frontends/ephapax/Lowerer.h"

namespace eph::ephapax::lowering {

ClosureGroup& Lowerer::group(Ty* fnTy) {
  std::string key = show(fnTy);
  auto it = groups_.find(key);
  if (it != groups_.end()) return it->second;
  ClosureGroup& g = groups_[key];
  g.fnTy = fnTy;
  if (known_)
    if (auto k = known_->find(key); k != known_->end())
      for (const ClosureEntry& e : k->second.entries) {
        ClosureEntry copy = e;
        copy.body = nullptr;
        g.entries.push_back(copy);
      }
  return g;
}

const ir::Type* Lowerer::envType(const ClosureEntry& e) {
  std::vector<const ir::Type*> parts;
  Subst saved = subst_;
  if (e.lambda) {
    subst_ = e.subst;
    for (const Binding* b : e.captures) parts.push_back(mentionsFn(b->ty) ? ctx_.boxType() : lowerTy(b->ty));
  } else {
    subst_.clear();
    for (Ty* t : e.captureTys) parts.push_back(mentionsFn(t) ? ctx_.boxType() : lowerTy(t));
  }
  subst_ = saved;
  return ctx_.structType(parts);
}

// Does t hold a function value anywhere (a closure, or data holding one)?
// Such captures live in boxes: a closure of type A -> B may then capture
// another closure of type A -> B (closure types are sums over their
// lambdas' captures, so capturing one directly would be a recursive type).
bool Lowerer::mentionsFn(Ty* t) {
  std::set<const TypeDecl*> seen;
  std::function<bool(Ty*, unsigned)> walk = [&](Ty* x, unsigned depth) -> bool {
    x = sub(x);
    if (!x || depth > 50) return false;
    if (x->kind == Ty::Fn) return true;
    if (x->kind == Ty::Named && x->decl && seen.insert(x->decl).second) {
      if (x->decl->aliasTy && walk(x->decl->aliasTy, depth + 1)) return true;
      for (auto& fs : x->decl->ctorTys)
        for (Ty* f : fs)
          if (walk(f, depth + 1)) return true;
      for (Ty* f : x->decl->fieldTys)
        if (walk(f, depth + 1)) return true;
    }
    for (Ty* a : x->args)
      if (walk(a, depth + 1)) return true;
    return false;
  };
  return walk(t, 0);
}

// Captured values taken out of a closure's environment: the boxed ones are
// read back as their types (`tys`, lowered with the current substitution).
void Lowerer::unboxCaptures(std::vector<Value*>& caps, const std::vector<Ty*>& tys) {
  for (size_t i = 0; i < caps.size() && i < tys.size(); ++i)
    if (caps[i]->type()->isBox() && !listTy(tys[i])) caps[i] = b_.op("box.get", {caps[i]}, lowerTy(tys[i]));
}

const ir::Type* Lowerer::closureType(Ty* fnTy) {
  std::string key = show(fnTy);
  if (inProgress_.count(key)) {  // a closure of this type captures one of the same type
    if (known_ && reportedRecursive_.insert(key).second)
      unsupported(Span{curLoc_.line, curLoc_.col, 1},
                  "a closure of type " + key + " captures a function of the same type, which code generation cannot "
                  "represent (the IR has no recursive types); pass the function as an argument instead");
    return ctx_.unitType();
  }
  inProgress_.insert(key);
  ClosureGroup& g = group(fnTy);
  std::vector<const ir::Type*> variants;
  for (const ClosureEntry& e : g.entries) variants.push_back(envType(e));
  if (variants.empty()) variants.push_back(ctx_.unitType());
  inProgress_.erase(key);
  return ctx_.sumType(variants);
}

size_t Lowerer::entryIndex(ClosureGroup& g, ClosureEntry e) {
  for (size_t i = 0; i < g.entries.size(); ++i)
    if (g.entries[i].key == e.key) return i;
  if (known_) {
    // The discovery pass found every closure; a new one here is a bug.
    unsupported(Span{}, "internal error: closure " + e.key + " was not found by the discovery pass");
  }
  g.entries.push_back(std::move(e));
  return g.entries.size() - 1;
}

// The bindings a lambda's body uses from outside it.
void Lowerer::freeVars(const Expr& e, int firstInner, std::vector<const Binding*>& out) {
  if (e.kind == ExprKind::Var && e.binding && e.binding->id < firstInner) {
    for (const Binding* b : out)
      if (b == e.binding) return;
    out.push_back(e.binding);
  }
  if (e.kind == ExprKind::Var && !e.binding && e.refKind == Expr::Const)
    return;
  for (auto& k : e.kids) freeVars(*k, firstInner, out);
  for (auto& a : e.arms) {
    if (a.guard) freeVars(*a.guard, firstInner, out);
    if (a.body) freeVars(*a.body, firstInner, out);
  }
}

std::string Lowerer::substKey(const Subst& s) {
  std::string k;
  for (auto& [id, t] : s) k += std::to_string(id) + "=" + show(deep(t, {})) + ";";
  return k;
}

// A closure value for parameter `param` of a lambda.
Value* Lowerer::makeLambdaClosure(Expr& lam, size_t param, Span s) {
  ClosureEntry e;
  e.lambda = &lam;
  e.param = param;
  e.subst = subst_;
  int firstInner = lam.params.empty() || !lam.params[0].binding ? 0 : lam.params[0].binding->id;
  freeVars(*lam.kids[0], firstInner, e.captures);
  for (size_t i = 0; i < param; ++i) e.captures.push_back(lam.params[i].binding);
  // The type of the closure: params[param..] -> body.
  Ty* t = lam.ty;
  for (size_t i = 0; i < param; ++i) t = resolve(t)->args[1];
  t = deep(t, subst_);
  e.key = "lambda@" + std::to_string(lam.span.line) + ":" + std::to_string(lam.span.col) + "#" +
          std::to_string(param) + "[" + substKey(subst_) + "]";
  std::vector<Value*> env;
  for (const Binding* b : e.captures) env.push_back(useCaptured(*b, s));
  return makeClosure(t, std::move(e), env);
}

Value* Lowerer::makeFnClosure(FnDecl& f, const std::vector<Ty*>& inst, size_t param, std::vector<Value*> prior,
                              std::vector<Ty*> priorTys, Span s) {
  ClosureEntry e;
  e.fn = &f;
  e.fnInst = inst;
  e.param = param;
  e.captureTys = priorTys;
  Ty* t = f.type;
  Subst fs;
  for (size_t i = 0; i < f.typeParamTys.size() && i < inst.size(); ++i) fs.push_back({f.typeParamTys[i]->id, inst[i]});
  t = deep(t, fs);
  for (size_t i = 0; i < param; ++i) t = resolve(t)->args[1];
  std::string instKey;
  for (Ty* x : inst) instKey += show(x) + ",";
  e.key = "fn@" + f.name + "<" + instKey + ">#" + std::to_string(param);
  return makeClosure(t, std::move(e), prior);
}

Value* Lowerer::makeClosure(Ty* fnTy, ClosureEntry e, const std::vector<Value*>& env) {
  ClosureGroup& g = group(fnTy);
  std::string gkey = show(fnTy);
  size_t k = entryIndex(g, std::move(e));
  const ir::Type* ct = closureType(fnTy);
  const ir::Type* envT = envType(groups_[gkey].entries[k]);
  std::vector<Value*> parts = env;
  for (size_t i = 0; i < parts.size() && i < envT->members().size(); ++i)
    if (envT->members()[i]->isBox() && !parts[i]->type()->isBox())
      parts[i] = coerce(parts[i], envT->members()[i], Span{curLoc_.line, curLoc_.col, 1});  // a list or a function
  Value* envV = b_.op("struct.make", parts, envT);
  if (k >= ct->members().size()) return fabricate(ct);  // discovery pass only
  if (envV->type() != ct->members()[k]) return fabricate(ct);
  return b_.sumMake(ct, static_cast<int64_t>(k), envV);
}

Value* Lowerer::useCaptured(const Binding& b, Span s) {
  for (size_t i = env_.size(); i-- > 0;)
    if (env_[i].b == &b) {
      LBinding& lb = env_[i];
      if (lb.kind == LBinding::Boxed) return b_.structExtract(lb.v, 0);
      if (lb.list) return lb.v;  // the closure keeps a boxed copy (makeClosure)
      if (owns(lb.v->type())) unsupported(s, "a lambda cannot capture `" + b.name + "`, whose value owns memory");
      return lb.v;
    }
  unsupported(s, "internal error: captured variable `" + b.name + "` is not in scope");
  return fabricate(ctx_.i32());
}

// Calls a closure with one argument.
Value* Lowerer::apply(Value* clo, Ty* fnTy, Value* arg) {
  fnTy = deep(fnTy, subst_);
  std::string key = show(fnTy);
  ClosureGroup& g = group(fnTy);
  if (!g.apply) {
    Subst saved = subst_;
    subst_.clear();
    const ir::Type* at = lowerTy(fnTy->args[0]);
    const ir::Type* rt = lowerTy(fnTy->args[1]);
    subst_ = saved;
    g.apply = m_.addFunction("apply<" + key + ">", ir::FunctionKind::Host,
                             ctx_.functionType({closureType(fnTy), at}, {rt}), b_loc());
    g.apply->param(0)->setName("closure");
    g.apply->param(1)->setName("arg");
  }
  const ir::Type* rt = g.apply->resultTypes()[0];
  return b_.call(g.apply->name(), {clo, arg}, {rt})[0];
}

void Lowerer::emitApply(ClosureGroup& g) {
  ir::Function* f = g.apply;
  const ir::Type* rt = f->resultTypes()[0];
  ir::Builder::InsertionGuard guard(b_);
  b_.setInsertionPoint(f->body());
  b_.setLoc(f->loc());
  ir::Op* mt = b_.matchOp(f->param(0), {rt}, [&](ir::Builder& b, unsigned k, Value* env) -> Value* {
    env->setName("env");
    if (k < g.entries.size()) {
      ir::Function* body = entryFunction(g, k);
      return b.call(body->name(), {env, f->param(1)}, {rt})[0];
    }
    // No closure of this type is ever made: unreachable.
    dropValue(env);
    dropValue(f->param(1));
    return fabricate(rt);
  });
  b_.ret({mt->result(0)});
}

ir::Function* Lowerer::entryFunction(ClosureGroup& g, size_t k) {
  ClosureEntry& e = g.entries[k];
  if (e.body) return e.body;
  const ir::Type* env = envType(e);
  Subst saved = subst_;
  subst_.clear();
  const ir::Type* at = lowerTy(g.fnTy->args[0]);
  const ir::Type* rt = lowerTy(g.fnTy->args[1]);
  subst_ = saved;
  Span sp = e.lambda ? e.lambda->span : e.fn->span;
  e.body = m_.addFunction("closure<" + e.key + ">", ir::FunctionKind::Host, ctx_.functionType({env, at}, {rt}), loc(sp));
  Value* envV = e.body->param(0);
  Value* arg = e.body->param(1);
  envV->setName("env");
  arg->setName("arg");
  // Lower the body in a fresh function context.
  auto savedEnv = std::move(env_);
  Subst savedSubst = subst_;
  FnDecl* savedFn = curFn_;
  std::string savedKey = curKey_;
  const ir::Type* savedLoop = loopSum_;
  ir::Builder::InsertionGuard guard(b_);
  env_.clear();
  loopSum_ = nullptr;
  curFn_ = nullptr;
  curKey_.clear();
  b_.setInsertionPoint(e.body->body());
  setLoc(sp);
  std::vector<Value*> caps = env->members().empty() ? std::vector<Value*>{}
                                                    : b_.structUnpack(envV);
  Value* result = nullptr;
  if (e.lambda) {
    subst_ = e.subst;
    std::vector<Ty*> capTys;
    for (const Binding* b : e.captures) capTys.push_back(b->ty);
    unboxCaptures(caps, capTys);
    for (size_t i = 0; i < e.captures.size(); ++i) env_.push_back(LBinding{LBinding::Plain, e.captures[i], caps[i]});
    Param& p = e.lambda->params[e.param];
    bindValue(p.binding, arg, p.span);
    if (e.param + 1 < e.lambda->params.size()) {
      result = makeLambdaClosure(*e.lambda, e.param + 1, sp);
    } else {
      result = lowerExpr(*e.lambda->kids[0]);
      result = coerce(result, rt, e.lambda->kids[0]->span);
    }
    endScopeAll();
  } else {
    subst_.clear();
    FnDecl& f = *e.fn;
    unboxCaptures(caps, e.captureTys);
    std::vector<Value*> args = caps;
    args.push_back(arg);
    std::vector<Ty*> tys = e.captureTys;
    Subst fs;
    for (size_t i = 0; i < f.typeParamTys.size() && i < e.fnInst.size(); ++i) fs.push_back({f.typeParamTys[i]->id, e.fnInst[i]});
    tys.push_back(deep(f.params.empty() ? T.unit() : f.paramTys[e.param], fs));
    if (e.param + 1 < f.params.size()) {
      result = makeFnClosure(f, e.fnInst, e.param + 1, args, tys, sp);
    } else {
      ir::Function* callee = instance(f, fs);
      if (f.params.empty()) {
        dropValue(arg);
        args.clear();
      }
      result = b_.call(callee->name(), args, {callee->resultTypes()[0]})[0];
    }
  }
  setLoc(sp);
  b_.ret({result});
  env_ = std::move(savedEnv);
  subst_ = savedSubst;
  curFn_ = savedFn;
  curKey_ = savedKey;
  loopSum_ = savedLoop;
  return e.body;
}

}  // namespace eph::ephapax::lowering
