// Pass 1 of the Ephapax checker: names, types, regions, arity, exhaustiveness.
// This file: the entry points (typeCheck, check), TypeChecker::run, the
// diagnostics helpers, function and constant declarations and bodies, integer
// literals and the defaults applied when a function's inference ends.
// (TypeChecker methods; see TypeChecker.h for the other parts.)
#include "frontends/ephapax/Checker.h"

#include "frontends/ephapax/Parser.h"
#include "frontends/ephapax/Stdlib.h"
#include "frontends/ephapax/TypeChecker.h"

namespace eph::ephapax {

Binding* Checked::newBinding(Binding b) {
  b.id = static_cast<int>(bindings.size());
  bindings.push_back(std::make_unique<Binding>(std::move(b)));
  return bindings.back().get();
}

namespace checking {

bool TypeChecker::run() {
  size_t before = diags_.size();
  declareTypes();
  declareFunctions();
  for (auto& k : c_.prog.consts) checkConst(*k);
  // Kernels with untyped parameters first: they are generalised before
  // their dispatch sites instantiate them.
  for (auto& f : c_.prog.fns)
    if (!f->isExtern && f->body && f->type && hasUntypedParam(*f)) checkFn(*f);
  for (auto& f : c_.prog.fns)
    if (!f->isExtern && f->body && f->type && !hasUntypedParam(*f)) checkFn(*f);
  checkKernelCode();
  checkUndispatchedKernels();
  c_.numericParams = numeric_.report(T, diags_);
  return diags_.size() == before;
}

void TypeChecker::error(std::string code, Span s, std::string msg, std::string hint) {
  diags_.error(std::move(code), s, std::move(msg), std::move(hint));
}

void TypeChecker::mismatch(Span s, Ty* want, Ty* got, const std::string& what) {
  error("E101", s, "type mismatch: expected " + show(want) + ", got " + show(got) + what);
}

// unify or report E101 at span
bool TypeChecker::expectTy(Span s, Ty* want, Ty* got, const std::string& what) {
  if (unify(T, want, got)) return true;
  mismatch(s, want, got, what);
  return false;
}

// ---- function and constant declarations, function bodies ----------------------
void TypeChecker::declareFunctions() {
  for (size_t i = 0; i < c_.prog.fns.size(); ++i) {
    FnDecl& f = *c_.prog.fns[i];
    if (c_.fnIndex.count(f.name) || c_.ctors.count(f.name)) {
      error("E107", f.span, "function `" + f.name + "` is defined twice");
      continue;
    }
    c_.fnIndex[f.name] = static_cast<int>(i);
    typeVars_.clear();
    sigRegions_.clear();
    for (const std::string& p : f.typeParams) {
      Ty* t = T.param(p, nextParam_++);
      typeVars_[p] = t;
      f.typeParamTys.push_back(t);
    }
    implicitTypeVars_ = true;
    newTypeParams_ = &f.typeParamTys;
    for (Param& p : f.params) f.paramTys.push_back(p.type ? convert(p.type.get()) : T.var());
    f.retTy = f.ret ? convert(f.ret.get()) : nullptr;
    implicitTypeVars_ = false;
    newTypeParams_ = nullptr;
    if (!f.retTy) {
      if (f.isExtern || f.braceBody) f.retTy = T.unit();
      else if (!f.typeParamTys.empty()) {
        error("E108", f.span, "generic function `" + f.name + "` needs a result type annotation");
        f.retTy = T.error();
      } else {
        f.retTy = T.var();
      }
    }
    // Calling an `async fn` gives a Future of its result; retTy stays the
    // body's type.
    Ty* t = f.isAsync ? T.future(f.retTy) : f.retTy;
    if (f.params.empty()) t = T.fn(T.unit(), t);
    for (size_t k = f.params.size(); k-- > 0;) t = T.fn(f.paramTys[k], t);
    f.type = t;
    // With untyped parameters the shape is known after checking; what is
    // written already decides whether it can be a kernel.
    if (isGpuFn(f)) f.gpuRole = kernelShaped(f) ? FnDecl::Kernel : FnDecl::Launcher;
    if (f.gpuRole == FnDecl::Launcher) reportUntypedLauncherParams(f);
  }
  typeVars_.clear();
  sigRegions_.clear();
  for (size_t i = 0; i < c_.prog.consts.size(); ++i) {
    ConstDecl& k = *c_.prog.consts[i];
    if (c_.constIndex.count(k.name) || c_.fnIndex.count(k.name)) {
      error("E107", k.span, "`" + k.name + "` is defined twice");
      continue;
    }
    c_.constIndex[k.name] = static_cast<int>(i);
  }
}

void TypeChecker::checkConst(ConstDecl& k) {
  Ty* t = infer(*k.value);
  if (k.annot) {
    Ty* want = convert(k.annot.get());
    if (!unify(T, want, t))
      error("E102", k.value->span, "the constant `" + k.name + "` is annotated " + show(want) + " but its value has type " + show(t));
  }
  finishInference();
  if (isLinear(T, t)) error("E101", k.span, "a top-level constant cannot have the linear type " + show(t));
  k.ty = t;
}

void TypeChecker::checkFn(FnDecl& f) {
  size_t before = diags_.size();
  scope_.clear();
  regions_.clear();
  curFn_ = &f;
  inKernel_ = f.gpuRole == FnDecl::Kernel;
  // The function's type parameters can be named in its body
  // (`allocate_gpu<U>(n)`, `let x: T = ..`).
  typeVars_.clear();
  for (size_t i = 0; i < f.typeParams.size() && i < f.typeParamTys.size(); ++i) typeVars_[f.typeParams[i]] = f.typeParamTys[i];
  markTailReturns(*f.body);
  // Region parameters of the signature are active in the body.
  for (Ty* p : f.typeParamTys)
    if (p->regionVar) regions_.push_back({p->name, p});
  for (size_t i = 0; i < f.params.size(); ++i) {
    Binding b;
    b.origin = Binding::Param;
    b.name = f.params[i].name;
    b.span = f.params[i].span;
    b.ty = f.paramTys[i];
    f.params[i].binding = c_.newBinding(std::move(b));
    for (size_t j = 0; j < i; ++j)
      if (f.params[j].name == f.params[i].name && f.params[i].name != "_")
        error("E107", f.params[i].span, "parameter `" + f.params[i].name + "` appears twice");
    scope_.push_back(f.params[i].binding);
  }
  Ty* body = infer(*f.body);
  if (!unify(T, f.retTy, body)) {
    const Expr* tail = tailOf(f.body.get());
    mismatch(tail->span, f.retTy, body, " (the result of `" + f.name + "`)");
  }
  if (hasUntypedParam(f)) generalizeKernel(f);
  finishInference();
  checkDispatchSites();
  inKernel_ = false;
  curFn_ = nullptr;
  typeVars_.clear();
  tailReturns_.clear();
  f.checkedOk = diags_.size() == before;
}

// ---- integer literals, the end of inference -----------------------------------
Ty* TypeChecker::intLiteral(Span s, int64_t value, bool wide) {
  wide = wide || value > 2147483647LL || value < -2147483648LL;
  Ty* v = T.var();
  v->intLit = true;
  v->paramLit = true;
  intLits_.push_back({s, value, wide, v});
  return v;
}

Ty* TypeChecker::core(Ty* t) { return ephapax::core(T, t); }

void TypeChecker::checkIntLiterals() {
  for (const IntLit& l : intLits_) {
    Ty* r = core(l.var);
    if (r->kind == Ty::Var) {
      unify(T, r, T.prim(l.wide ? Prim::I64 : Prim::I32));
      continue;
    }
    if (r->kind == Ty::Error) continue;
    if (r->kind == Ty::Param && !r->regionVar) {  // a literal of a numeric type parameter
      numeric_.require(r, "the integer literal " + std::to_string(l.value), l.span);
      if (l.value < 0 || l.value > 2147483647)
        error("E101", l.span, "integer literal " + std::to_string(l.value) + " does not fit in every numeric type " + show(r) +
                                  " may stand for", "a literal of a type parameter is in 0..2147483647");
      continue;
    }
    bool ok = r->kind == Ty::Prim && (r->prim == Prim::I32 || r->prim == Prim::I64 || r->prim == Prim::U32);
    if (!ok) {
      error("E101", l.span, "type mismatch: an integer literal cannot have type " + show(l.var));
      continue;
    }
    bool fits = r->prim == Prim::I64 || (r->prim == Prim::I32 && !l.wide) ||
                (r->prim == Prim::U32 && l.value >= 0 && l.value <= 4294967295LL);
    if (!fits) error("E101", l.span, "integer literal " + std::to_string(l.value) + " does not fit in " + show(r));
  }
  intLits_.clear();
}

// Defaults what inference left open and re-checks what needed known types.
void TypeChecker::finishInference() {
  checkIntLiterals();
  for (Ty* v : intVars_)
    if (Ty* r = core(v); r->kind == Ty::Var) unify(T, r, T.prim(Prim::I32));
  intVars_.clear();
  for (Ty* v : floatVars_)
    if (Ty* r = core(v); r->kind == Ty::Var) unify(T, r, T.prim(Prim::F64));
  floatVars_.clear();
  for (Ty* v : gpuElems_)
    if (Ty* r = core(v); r->kind == Ty::Var) unify(T, r, T.prim(Prim::I32));
  gpuElems_.clear();
  for (auto& [e, t] : varDeclChecks_)
    if (isLinear(T, t) || isAffine(T, t))
      error("E214", e->span, "`var " + e->name + "` would hold the linear value " + show(t),
            "a `var` holds plain values; bind a linear value with `let!` and pass it on");
  varDeclChecks_.clear();
  for (Expr* e : deferredMembers_) inferMemberLate(*e);
  deferredMembers_.clear();
  for (auto& [e, t] : numericChecks_) {
    Ty* r = core(t);
    if (r->kind == Ty::Var) unify(T, r, T.prim(Prim::I32));
    else if (r->kind == Ty::Param) numeric_.require(r, "the operator", e->span);
    else if (!isNumeric(r) && r->kind != Ty::Error && r->kind != Ty::Vec && r->kind != Ty::Mat)
      error("E101", e->span, "this operator needs a number (I32, I64, U32, F32 or F64), got " + show(r));
  }
  numericChecks_.clear();
}

}  // namespace checking

bool typeCheck(Checked& c, DiagSink& diags) { return checking::TypeChecker(c, diags).run(); }

std::unique_ptr<Checked> check(std::string_view src, DiagSink& diags, const CheckOptions& opts) {
  auto c = std::make_unique<Checked>();
  c->affineMode = opts.affineMode;
  size_t before = diags.size();
  c->prog = parseProgram(src, diags);
  if (diags.size() != before) return nullptr;
  if (!mergeStdlibImports(c->prog, diags)) return nullptr;
  bool typed = typeCheck(*c, diags);
  // Ownership errors of the functions that type-checked are independent.
  checkOwnership(*c, diags);
  if (!typed) return nullptr;
  return c;
}

std::string renderAll(const DiagSink& diags, std::string_view file, std::string_view src) {
  std::string out;
  for (const Diag& d : diags.all()) {
    // A span in a merged standard library module is shown in that module.
    if (const SourceFile* s = diags.sourceNamed(d.loc.file)) out += renderDiag(d, s->name, s->text);
    else out += renderDiag(d, file, src);
  }
  return out;
}

bool isEphapaxFile(std::string_view path) { return path.size() > 4 && path.substr(path.size() - 4) == ".eph"; }

}  // namespace eph::ephapax
