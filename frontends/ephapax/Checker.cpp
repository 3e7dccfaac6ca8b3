// Pass 1 of the checker: names, types, regions, arity, exhaustiveness.
#include "frontends/ephapax/Checker.h"

#include "frontends/ephapax/NumericParams.h"
#include "frontends/ephapax/Parser.h"
#include "frontends/ephapax/Stdlib.h"

#include <algorithm>
#include <functional>
#include <set>

namespace eph::ephapax {

Binding* Checked::newBinding(Binding b) {
  b.id = static_cast<int>(bindings.size());
  bindings.push_back(std::make_unique<Binding>(std::move(b)));
  return bindings.back().get();
}

namespace {

bool isUpper(const std::string& s) { return !s.empty() && s[0] >= 'A' && s[0] <= 'Z'; }

// The expression whose value a block produces (for pointing at mismatches).
const Expr* tailOf(const Expr* e) {
  for (unsigned i = 0; i < 10000 && e; ++i) {
    if ((e->kind == ExprKind::Let || e->kind == ExprKind::Seq) && e->kids.size() == 2) e = e->kids[1].get();
    else if (e->kind == ExprKind::Region && !e->kids.empty()) e = e->kids[0].get();
    else break;
  }
  return e;
}

class TypeChecker {
 public:
  TypeChecker(Checked& c, DiagSink& d) : c_(c), T(c.types), diags_(d), numeric_(d) {}

  bool run() {
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

 private:
  Checked& c_;
  TyArena& T;
  DiagSink& diags_;
  int nextParam_ = 0;
  int nextRegion_ = 0;

  // Scopes of locals.
  std::vector<Binding*> scope_;
  // Active regions, innermost last: name and identity.
  std::vector<std::pair<std::string, Ty*>> regions_;
  unsigned lambdaDepth_ = 0;
  // Type names in scope of the current declaration: type parameters.
  std::map<std::string, Ty*> typeVars_;
  bool implicitTypeVars_ = false;  // unknown lower-case names become type parameters
  std::vector<Ty*>* newTypeParams_ = nullptr;
  // Region names of a function signature (region parameters).
  std::map<std::string, Ty*> sigRegions_;
  // Expressions to re-check once types are known.
  std::vector<std::pair<Expr*, Ty*>> numericChecks_;
  // Type parameters used as numbers, and the instantiations to check.
  NumericParams numeric_;
  std::vector<Expr*> deferredMembers_;

  void error(std::string code, Span s, std::string msg, std::string hint = {}) {
    diags_.error(std::move(code), s, std::move(msg), std::move(hint));
  }
  void mismatch(Span s, Ty* want, Ty* got, const std::string& what = "") {
    error("E101", s, "type mismatch: expected " + show(want) + ", got " + show(got) + what);
  }
  // unify or report E101 at span
  bool expectTy(Span s, Ty* want, Ty* got, const std::string& what = "") {
    if (unify(T, want, got)) return true;
    mismatch(s, want, got, what);
    return false;
  }

  // ---- type expressions -------------------------------------------------------
  Ty* convert(const TypeExpr* t) {
    if (!t) return T.var();
    switch (t->kind) {
      case TypeExpr::Prim: {
        static const std::pair<const char*, Prim> prims[] = {{"I32", Prim::I32}, {"I64", Prim::I64}, {"U32", Prim::U32},
                                                             {"F32", Prim::F32}, {"F64", Prim::F64}, {"Bool", Prim::Bool}};
        for (auto& [n, p] : prims)
          if (t->name == n) return T.prim(p);
        return T.error();
      }
      case TypeExpr::Unit: return T.unit();
      case TypeExpr::String: return T.string(regionNamed(t->region, t->span));
      case TypeExpr::Ref: return T.ref(convert(t->args[0].get()), t->mut);
      case TypeExpr::List: return T.list(convert(t->args[0].get()));
      case TypeExpr::Tuple: {
        std::vector<Ty*> parts;
        for (auto& a : t->args) parts.push_back(convert(a.get()));
        return T.tuple(std::move(parts));
      }
      case TypeExpr::Sum: return T.sum(convert(t->args[0].get()), convert(t->args[1].get()));
      case TypeExpr::Gpu: {
        Ty* elem = convert(t->args[0].get());
        checkElemType(elem, t->args[0]->span);
        return T.gpu(elem, t->name == "GPUBufferAffine" ? Ty::Affine : t->bang ? Ty::Linear : Ty::View, bufferRegion(t->span));
      }
      case TypeExpr::Vec: return T.vec(static_cast<int>(t->size));
      case TypeExpr::Mat: return T.mat(static_cast<int>(t->size));
      case TypeExpr::Array: {
        Ty* elem = convert(t->args[0].get());
        checkElemType(elem, t->args[0]->span);
        return T.array(elem, static_cast<int>(t->size));
      }
      case TypeExpr::Future: return T.future(convert(t->args[0].get()));
      case TypeExpr::Fn: return T.fn(convert(t->args[0].get()), convert(t->args[1].get()));
      case TypeExpr::Named: {
        if (auto it = typeVars_.find(t->name); it != typeVars_.end()) {
          if (!t->args.empty()) error("E101", t->span, "type parameter `" + t->name + "` takes no arguments");
          return it->second;
        }
        auto it = c_.typeDecls.find(t->name);
        if (it == c_.typeDecls.end()) {
          if (implicitTypeVars_ && !isUpper(t->name) && t->args.empty()) {
            Ty* p = T.param(t->name, nextParam_++);
            typeVars_[t->name] = p;
            if (newTypeParams_) newTypeParams_->push_back(p);
            return p;
          }
          error("E104", t->span, "unknown type `" + t->name + "`",
                "declare it with `data`, `type` or in an `extern` block");
          return T.error();
        }
        TypeDecl* d = it->second;
        if (t->args.size() != d->params.size()) {
          error("E106", t->span, "type `" + d->name + "` takes " + std::to_string(d->params.size()) +
                                     " argument" + (d->params.size() == 1 ? "" : "s") + ", got " +
                                     std::to_string(t->args.size()));
          return T.error();
        }
        std::vector<Ty*> args;
        for (auto& a : t->args) args.push_back(convert(a.get()));
        for (size_t i = args.size(); i < d->paramTys.size(); ++i) args.push_back(bufferRegion(t->span));  // hidden region
        return T.named(d, std::move(args));
      }
    }
    return T.error();
  }

  // The region of a GPU buffer type (which is written without one). In a
  // function signature all buffers share one region parameter, so a function
  // returns buffers in its arguments' region; in a type declaration that
  // holds buffers, its hidden region parameter; elsewhere an open region
  // variable (a fresh allocation can live in any region).
  Ty* bufferRegion(Span s) {
    if (declRegion_) return declRegion_;
    return implicitTypeVars_ ? regionNamed("'buffers", s) : T.var(/*region=*/true);
  }
  Ty* declRegion_ = nullptr;

  // The region a `String@name` in a type refers to.
  Ty* regionNamed(const std::string& name, Span s) {
    if (name.empty() || name == "_") return T.region(-1, "_");
    for (size_t i = regions_.size(); i-- > 0;)
      if (regions_[i].first == name) return regions_[i].second;
    if (auto it = sigRegions_.find(name); it != sigRegions_.end()) return it->second;
    if (implicitTypeVars_) {  // a region parameter of a function signature
      Ty* p = T.param(name, nextParam_++, /*region=*/true);
      sigRegions_[name] = p;
      if (newTypeParams_) newTypeParams_->push_back(p);
      return p;
    }
    error("E006", s, "region `" + name + "` is not active here", "only regions of enclosing `region` blocks can be named");
    return T.region(-1, "_");
  }

  // ---- declarations -----------------------------------------------------------
  void declareTypes() {
    for (auto& d : c_.prog.types) {
      if (c_.typeDecls.count(d->name)) {
        error("E107", d->span, "type `" + d->name + "` is defined twice");
        continue;
      }
      c_.typeDecls[d->name] = d.get();
      for (const std::string& p : d->params) d->paramTys.push_back(T.param(p, nextParam_++));
    }
    addBufferRegionParams();
    for (auto& d : c_.prog.types) {
      if (c_.typeDecls[d->name] != d.get()) continue;  // a duplicate (reported)
      typeVars_.clear();
      declRegion_ = d->paramTys.size() > d->params.size() ? d->paramTys.back() : nullptr;
      for (size_t i = 0; i < d->params.size(); ++i) typeVars_[d->params[i]] = d->paramTys[i];
      switch (d->kind) {
        case TypeDecl::Alias: {
          // An alias may not mention itself.
          d->aliasTy = T.error();
          Ty* t = convert(d->alias.get());
          if (mentionsDecl(t, d.get(), 0)) error("E101", d->span, "type alias `" + d->name + "` refers to itself");
          else d->aliasTy = t;
          break;
        }
        case TypeDecl::Data:
          for (auto& ctor : d->ctors) {
            if (c_.ctors.count(ctor.name)) {
              error("E107", ctor.span, "constructor `" + ctor.name + "` is defined twice");
              d->ctorTys.emplace_back();
              continue;
            }
            c_.ctors[ctor.name] = {d.get(), static_cast<int>(d->ctorTys.size())};
            std::vector<Ty*> fields;
            for (auto& f : ctor.fields) fields.push_back(convert(f.get()));
            d->ctorTys.push_back(std::move(fields));
          }
          break;
        case TypeDecl::Record: {
          std::set<std::string> seen;
          for (size_t i = 0; i < d->fieldNames.size(); ++i) {
            if (!seen.insert(d->fieldNames[i]).second)
              error("E107", d->span, "field `" + d->fieldNames[i] + "` appears twice in record `" + d->name + "`");
            d->fieldTys.push_back(convert(d->fieldTypes[i].get()));
          }
          break;
        }
        case TypeDecl::Extern: break;
      }
    }
    typeVars_.clear();
    declRegion_ = nullptr;
    for (auto& d : c_.prog.types)
      if (d->kind == TypeDecl::Data && c_.typeDecls[d->name] == d.get()) d->recursive = dataRecursive(d.get());
  }

  // A type declaration that holds GPU buffers (directly or through another
  // declaration) gets a hidden region parameter: the region of its buffers,
  // so a data value wrapping a buffer of region r has a type that mentions r.
  void addBufferRegionParams() {
    std::set<TypeDecl*> holds;
    std::function<bool(const TypeExpr*)> mentions = [&](const TypeExpr* t) {
      if (!t) return false;
      if (t->kind == TypeExpr::Gpu) return true;
      if (t->kind == TypeExpr::Named)
        if (auto it = c_.typeDecls.find(t->name); it != c_.typeDecls.end() && holds.count(it->second)) return true;
      for (const auto& a : t->args)
        if (mentions(a.get())) return true;
      return false;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (auto& [name, d] : c_.typeDecls) {
        bool h = mentions(d->alias.get());
        for (const CtorDecl& c : d->ctors)
          for (const auto& f : c.fields) h = h || mentions(f.get());
        for (const auto& f : d->fieldTypes) h = h || mentions(f.get());
        if (h && holds.insert(d).second) changed = true;
      }
    }
    for (TypeDecl* d : holds) d->paramTys.push_back(T.param("'buffers", nextParam_++, /*region=*/true));
  }

  bool mentionsDecl(Ty* t, const TypeDecl* d, unsigned depth) {
    t = resolve(t);
    if (!t || depth > 50) return true;
    if (t->kind == Ty::Named) {
      if (t->decl == d) return true;
      if (t->decl->kind == TypeDecl::Alias && t->decl->aliasTy && mentionsDecl(t->decl->aliasTy, d, depth + 1))
        return true;
    }
    for (Ty* x : t->args)
      if (mentionsDecl(x, d, depth + 1)) return true;
    return false;
  }

  // Does data type d reach itself through its constructors' fields?
  bool dataRecursive(const TypeDecl* d) {
    std::set<const TypeDecl*> seen;
    std::function<bool(Ty*, unsigned)> reaches = [&](Ty* t, unsigned depth) -> bool {
      t = resolve(t);
      if (!t || depth > 50) return true;
      if (t->kind == Ty::Named) {
        if (t->decl == d) return true;
        if (seen.insert(t->decl).second) {
          if (t->decl->aliasTy && reaches(t->decl->aliasTy, depth + 1)) return true;
          for (auto& fs : t->decl->ctorTys)
            for (Ty* f : fs)
              if (reaches(f, depth + 1)) return true;
          for (Ty* f : t->decl->fieldTys)
            if (reaches(f, depth + 1)) return true;
        }
      }
      for (Ty* x : t->args)
        if (reaches(x, depth + 1)) return true;
      return false;
    };
    for (auto& fs : d->ctorTys)
      for (Ty* f : fs)
        if (reaches(f, 0)) return true;
    return false;
  }

  void declareFunctions() {
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

  void checkConst(ConstDecl& k) {
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

  void checkFn(FnDecl& f) {
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

  // Integer literals take the integer type their context wants; alone they
  // are I32 when they fit, else I64.
  struct IntLit {
    Span span;
    int64_t value;
    bool wide;
    Ty* var;
  };
  std::vector<IntLit> intLits_;
  Ty* intLiteral(Span s, int64_t value, bool wide) {
    wide = wide || value > 2147483647LL || value < -2147483648LL;
    Ty* v = T.var();
    v->intLit = true;
    v->paramLit = true;
    intLits_.push_back({s, value, wide, v});
    return v;
  }
  Ty* core(Ty* t) {
    t = resolve(t);
    for (int i = 0; i < 40; ++i) {
      Ty* e = expandAlias(T, t);
      if (!e) break;
      t = resolve(e);
    }
    return t;
  }
  void checkIntLiterals() {
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
  void finishInference() {
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

  // ---- scopes -------------------------------------------------------------------
  Binding* lookupLocal(const std::string& name) {
    for (size_t i = scope_.size(); i-- > 0;)
      if (scope_[i]->name == name) return scope_[i];
    return nullptr;
  }
  Binding* bind(Binding::Origin o, const std::string& name, Span s, Ty* t) {
    Binding b;
    b.origin = o;
    b.name = name;
    b.span = s;
    b.ty = t;
    b.lambdaDepth = lambdaDepth_;
    Binding* p = c_.newBinding(std::move(b));
    scope_.push_back(p);
    return p;
  }

  // Instantiates a generic function's type: fresh variables for its parameters.
  Ty* instantiate(FnDecl& f, std::vector<Ty*>& inst) {
    std::vector<std::pair<int, Ty*>> subst;
    for (Ty* p : f.typeParamTys) {
      Ty* v = T.var(p->regionVar);
      inst.push_back(v);
      subst.push_back({p->id, v});
    }
    return subst.empty() ? f.type : substitute(T, f.type, subst);
  }

  // A constructor's type: its data type with fresh arguments, and its fields.
  Ty* instantiateCtor(TypeDecl* d, int variant, std::vector<Ty*>& fields, std::vector<Ty*>& inst) {
    for (size_t i = 0; i < d->paramTys.size(); ++i) inst.push_back(T.var(d->paramTys[i]->regionVar));
    Ty* result = T.named(d, inst);
    if (variant >= 0 && static_cast<size_t>(variant) < d->ctorTys.size()) fields = ctorFields(T, result, variant);
    return result;
  }

  // ---- expressions -----------------------------------------------------------
  Ty* infer(Expr& e) {
    e.kernelCode = inKernel_;
    if (isChainLink(e)) return inferChain(e);
    Ty* t = inferKind(e);
    e.ty = t;
    return t;
  }

  Ty* inferKind(Expr& e) {
    switch (e.kind) {
      case ExprKind::IntLit: return intLiteral(e.span, e.ival, e.bval);
      case ExprKind::FloatLit: {
        // Core Ephapax: a float literal is F64. In the GPU extension's code (a
        // brace-bodied or @gpu function, kernel code) it is F32 or F64, as
        // the context asks (F64 when nothing decides), like integer literals.
        if (!inKernel_ && (!curFn_ || (!curFn_->braceBody && !isGpuFn(*curFn_)))) return T.prim(Prim::F64);
        Ty* v = T.var();
        v->floatLit = true;
        floatVars_.push_back(v);
        return v;
      }
      case ExprKind::BoolLit: return T.prim(Prim::Bool);
      case ExprKind::StrLit:
        hostOnly(e.span, "a string");
        return T.string(T.region(-1, "_"));
      case ExprKind::Unit: return T.unit();
      case ExprKind::Var: return inferVar(e);
      case ExprKind::Let: return inferLet(e);
      case ExprKind::Seq:
        infer(*e.kids[0]);
        return infer(*e.kids[1]);
      case ExprKind::Lambda: return inferLambda(e);
      case ExprKind::If: {
        expectTy(e.kids[0]->span, T.prim(Prim::Bool), infer(*e.kids[0]), " (an `if` condition)");
        Ty* a = infer(*e.kids[1]);
        Ty* b = infer(*e.kids[2]);
        if (!unify(T, a, b))
          error("E101", tailOf(e.kids[2].get())->span,
                "the branches of `if` have different types: " + show(a) + " and " + show(b));
        return a;
      }
      case ExprKind::Region: return inferRegion(e);
      case ExprKind::Match: return inferMatch(e);
      case ExprKind::Case: return inferCase(e);
      case ExprKind::Handle: return inferHandle(e);
      case ExprKind::Perform:
        for (auto& k : e.kids) infer(*k);
        return T.var();
      case ExprKind::Binary: return inferBinary(e);
      case ExprKind::Unary: {
        Ty* t = infer(*e.kids[0]);
        if (e.uop == UnOp::Not) {
          expectTy(e.kids[0]->span, T.prim(Prim::Bool), t, " (the operand of `!`)");
          return T.prim(Prim::Bool);
        }
        if (Ty* r = core(t); r->kind == Ty::Vec || r->kind == Ty::Mat) return t;
        return numericNow(e, t, "-") ? t : T.error();
      }
      case ExprKind::Call: return inferCall(e);
      case ExprKind::Index: {
        Ty* base = infer(*e.kids[0]);
        if (Ty* elem = gpuElementOf(base, e.kids[0]->span)) {
          expectTy(e.kids[1]->span, T.prim(Prim::I32), infer(*e.kids[1]), " (an index)");
          kernelOnly(e.span, "indexing a GPU buffer");
          return elem;
        }
        expectTy(e.kids[1]->span, T.prim(Prim::I32), infer(*e.kids[1]), " (a list index)");
        hostOnly(e.span, "a list");
        Ty* elem = T.var();
        Ty* r = resolve(base);
        if (r->kind == Ty::Ref) r = resolve(r->args[0]);
        if (!unify(T, r, T.list(elem))) {
          error("E101", e.kids[0]->span, "only lists can be indexed, not " + show(base));
          return T.error();
        }
        return elem;
      }
      case ExprKind::Member: return inferMember(e);
      case ExprKind::Inl:
      case ExprKind::Inr: {
        Ty* v = infer(*e.kids[0]);
        Ty* other = e.annot ? convert(e.annot.get()) : T.var();
        return e.kind == ExprKind::Inl ? T.sum(v, other) : T.sum(other, v);
      }
      case ExprKind::Borrow: return T.ref(infer(*e.kids[0]), e.bval);
      case ExprKind::Fst:
      case ExprKind::Snd: {
        Ty* t = infer(*e.kids[0]);
        Ty* a = T.var();
        Ty* b = T.var();
        if (!unify(T, t, T.tuple({a, b}))) {
          error("E101", e.kids[0]->span, std::string(e.kind == ExprKind::Fst ? "fst" : "snd") +
                                             " needs a pair, got " + show(t));
          return T.error();
        }
        return e.kind == ExprKind::Fst ? a : b;
      }
      case ExprKind::Drop:
        infer(*e.kids[0]);
        return T.unit();
      case ExprKind::Copy: {
        Ty* t = infer(*e.kids[0]);
        return T.tuple({t, t});
      }
      case ExprKind::Record: return inferRecord(e);
      case ExprKind::List: {
        hostOnly(e.span, "a list");
        Ty* elem = T.var();
        for (auto& k : e.kids)
          if (!unify(T, elem, infer(*k)))
            error("E101", k->span, "list elements have different types: " + show(elem) + " and " + show(k->ty));
        return T.list(elem);
      }
      case ExprKind::Tuple: {
        std::vector<Ty*> parts;
        for (auto& k : e.kids) parts.push_back(infer(*k));
        return T.tuple(std::move(parts));
      }
      case ExprKind::StrNew: {
        hostOnly(e.span, "a string");
        if (e.kids.empty()) return T.error();
        Ty* arg = infer(*e.kids[0]);
        if (e.kids[0]->kind != ExprKind::StrLit)
          error("E101", e.kids[0]->span, "String.new takes a string literal, got " + show(arg));
        if (e.name == "_") return T.string(T.region(-1, "_"));
        for (size_t i = regions_.size(); i-- > 0;)
          if (regions_[i].first == e.name) {
            e.regionId = resolve(regions_[i].second)->kind == Ty::Region ? resolve(regions_[i].second)->id : -1;
            return T.string(regions_[i].second);
          }
        error("E006", e.span, "allocation in region `" + e.name + "`, which is not active here",
              "allocate inside `region " + e.name + " { ... }`, or in the global region with `String.new@_`");
        return T.string(T.region(-1, "_"));
      }
      case ExprKind::StrLen: {
        Ty* t = infer(*e.kids[0]);
        Ty* r = resolve(t);
        if (r->kind == Ty::Ref) r = r->args[0];
        expectTy(e.kids[0]->span, T.string(T.var(true)), r, " (String.len takes a string or a borrowed string)");
        return T.prim(Prim::I32);
      }
      case ExprKind::StrConcat: {
        Ty* a = infer(*e.kids[0]);
        Ty* b = infer(*e.kids[1]);
        Ty* s = T.string(T.var(true));
        if (!expectTy(e.kids[0]->span, s, a, " (String.concat takes two strings of one region)")) return T.error();
        if (!unify(T, s, b)) {
          mismatch(e.kids[1]->span, s, b, " (String.concat takes two strings of one region)");
          return T.error();
        }
        return s;
      }
      case ExprKind::Ffi:
        for (auto& k : e.kids) infer(*k);
        hostOnly(e.span, "`__ffi`");
        return T.var();
      case ExprKind::VarDecl:
      case ExprKind::Workgroup: return inferChain(e);
      case ExprKind::Assign: return inferAssign(e);
      case ExprKind::IndexAssign: return inferIndexAssign(e);
      case ExprKind::While:
        expectTy(e.kids[0]->span, T.prim(Prim::Bool), infer(*e.kids[0]), " (a `while` condition)");
        expectUnitBody(*e.kids[1], "a `while` body");
        return T.unit();
      case ExprKind::For: return inferFor(e);
      case ExprKind::Return: return inferReturn(e);
      case ExprKind::Dispatch: return inferDispatch(e);
      case ExprKind::AllocGpu: return inferAllocGpu(e);
      case ExprKind::Await: return inferAwait(e);
    }
    return T.error();
  }

  Ty* inferVar(Expr& e) {
    if (Binding* b = lookupLocal(e.name)) {
      e.binding = b;
      return b->ty;
    }
    if (auto it = c_.fnIndex.find(e.name); it != c_.fnIndex.end()) {
      e.refKind = c_.prog.fns[it->second]->isExtern ? Expr::Extern : Expr::Fn;
      e.global = it->second;
      FnDecl& f = *c_.prog.fns[it->second];
      Ty* t = instantiate(f, e.inst);
      numeric_.instantiated(f.name, f.typeParamTys, e.inst, e.span);
      return t;
    }
    if (auto it = c_.constIndex.find(e.name); it != c_.constIndex.end()) {
      e.refKind = Expr::Const;
      e.global = it->second;
      ConstDecl& k = *c_.prog.consts[it->second];
      if (!k.ty) {
        error("E103", e.span, "constant `" + e.name + "` is used before its definition");
        return T.error();
      }
      return k.ty;
    }
    if (auto it = c_.ctors.find(e.name); it != c_.ctors.end()) {
      e.refKind = Expr::Ctor;
      e.global = it->second.second;
      std::vector<Ty*> fields;
      Ty* t = instantiateCtor(it->second.first, it->second.second, fields, e.inst);
      for (size_t i = fields.size(); i-- > 0;) t = T.fn(fields[i], t);
      return t;
    }
    if (e.name == "gid" || e.name == "lid" || e.name == "group") {
      e.builtin = e.name == "gid" ? Expr::Gid : e.name == "lid" ? Expr::Lid : Expr::GroupId;
      kernelOnly(e.span, "`" + e.name + "`");
      return intVar();
    }
    if (isUpper(e.name))
      error("E104", e.span, "unknown constructor `" + e.name + "`", "declare it in a `data` type");
    else
      error("E103", e.span, "unbound variable `" + e.name + "`");
    return T.error();
  }

  void bindPattern(Pattern& p, Ty* t, Binding::Origin origin, bool inLet) {
    p.ty = t;
    switch (p.kind) {
      case Pattern::Wild: return;
      case Pattern::Var:
        p.binding = bind(origin, p.name, p.span, t);
        return;
      case Pattern::Int:
        expectTy(p.span, t, intLiteral(p.span, p.ival, p.wide), " (an integer pattern)");
        return;
      case Pattern::Bool: expectTy(p.span, t, T.prim(Prim::Bool), " (a Bool pattern)"); return;
      case Pattern::String:
        error("E101", p.span, "string literals cannot be used as patterns", "compare lengths with String.len instead");
        return;
      case Pattern::Unit: expectTy(p.span, t, T.unit(), " (the pattern `()`)"); return;
      case Pattern::Tuple: {
        std::vector<Ty*> parts;
        for (size_t i = 0; i < p.args.size(); ++i) parts.push_back(T.var());
        if (!unify(T, t, T.tuple(parts))) {
          error("E101", p.span, "type mismatch: a tuple pattern of " + std::to_string(p.args.size()) +
                                    " parts cannot match a value of type " + show(t));
          parts.assign(p.args.size(), T.error());
        }
        for (size_t i = 0; i < p.args.size(); ++i) bindPattern(*p.args[i], parts[i], origin, inLet);
        return;
      }
      case Pattern::Ctor: {
        std::vector<Ty*> fields;
        if (inLet) error("E105", p.span, "a `let` pattern must always match; `" + p.name + "` may not",
                         "use `match` for patterns with constructors");
        if (p.name == "inl" || p.name == "inr") {
          Ty* a = T.var();
          Ty* b = T.var();
          if (!unify(T, t, T.sum(a, b))) {
            error("E101", p.span, "type mismatch: `" + p.name + "` matches a sum type, not " + show(t));
            a = b = T.error();
          }
          p.ctorIndex = p.name == "inl" ? 0 : 1;
          bindPattern(*p.args[0], p.ctorIndex == 0 ? a : b, origin, inLet);
          return;
        }
        auto it = c_.ctors.find(p.name);
        if (it == c_.ctors.end()) {
          error("E104", p.span, "unknown constructor `" + p.name + "`");
          for (auto& a : p.args) bindPattern(*a, T.error(), origin, inLet);
          return;
        }
        std::vector<Ty*> inst;
        Ty* dt = instantiateCtor(it->second.first, it->second.second, fields, inst);
        p.ctorIndex = it->second.second;
        if (!unify(T, t, dt)) {
          error("E101", p.span, "type mismatch: constructor `" + p.name + "` makes a " + show(dt) + ", but the value has type " + show(t));
          fields.assign(fields.size(), T.error());
        }
        if (p.args.size() != fields.size()) {
          error("E106", p.span, "constructor `" + p.name + "` has " + std::to_string(fields.size()) + " field" +
                                    (fields.size() == 1 ? "" : "s") + ", the pattern gives " + std::to_string(p.args.size()));
          for (auto& a : p.args) bindPattern(*a, T.error(), origin, inLet);
          return;
        }
        for (size_t i = 0; i < p.args.size(); ++i) bindPattern(*p.args[i], fields[i], origin, inLet);
        return;
      }
    }
  }

  Ty* inferLet(Expr& e) {
    size_t mark = scope_.size();
    bindLet(e);
    Ty* body = e.kids.size() > 1 ? infer(*e.kids[1]) : T.unit();
    scope_.resize(mark);
    return body;
  }

  Ty* inferLambda(Expr& e) {
    size_t mark = scope_.size();
    ++lambdaDepth_;
    std::vector<Ty*> ps;
    for (Param& p : e.params) {
      Ty* t = convert(p.type.get());
      ps.push_back(t);
      p.binding = bind(Binding::LambdaParam, p.name, p.span, t);
    }
    Ty* body = infer(*e.kids[0]);
    if (e.annot) {
      Ty* want = convert(e.annot.get());
      if (!unify(T, want, body))
        error("E102", tailOf(e.kids[0].get())->span, "the lambda is annotated to return " + show(want) + " but returns " + show(body));
    }
    --lambdaDepth_;
    scope_.resize(mark);
    Ty* t = body;
    for (size_t i = ps.size(); i-- > 0;) t = T.fn(ps[i], t);
    return t;
  }

  Ty* inferRegion(Expr& e) {
    hostOnly(e.span, "a region");
    int id = nextRegion_++;
    e.regionId = id;
    Ty* r = T.region(id, e.name);
    regions_.push_back({e.name, r});
    Ty* t = infer(*e.kids[0]);
    regions_.pop_back();
    // Open variables cannot be resolved to this region later on: the result
    // is checked once the body's types are known.
    if (mentionsRegion(t, id)) {
      error("E003", tailOf(e.kids[0].get())->span,
            "a value of type " + show(t) + " escapes its region `" + e.name + "`",
            "the result of `region " + e.name + " { ... }` must not mention `" + e.name +
                "`: consume what was allocated in it inside it, or return something computed from it (e.g. String.len)");
      return T.error();
    }
    return t;
  }

  Ty* inferMatch(Expr& e) {
    Ty* s = infer(*e.kids[0]);
    Ty* result = nullptr;
    for (Arm& a : e.arms) {
      size_t mark = scope_.size();
      bindPattern(*a.pat, s, Binding::Pattern, false);
      if (a.guard) expectTy(a.guard->span, T.prim(Prim::Bool), infer(*a.guard), " (a match guard)");
      Ty* b = infer(*a.body);
      if (!result) result = b;
      else if (!unify(T, result, b))
        error("E101", tailOf(a.body.get())->span, "match arms have different types: " + show(result) + " and " + show(b));
      scope_.resize(mark);
    }
    checkExhaustive(e, s);
    return result ? result : T.error();
  }

  Ty* inferCase(Expr& e) {
    Ty* s = infer(*e.kids[0]);
    Ty* a = T.var();
    Ty* b = T.var();
    if (!unify(T, s, T.sum(a, b))) {
      error("E101", e.kids[0]->span, "`case` needs a sum type (A + B), got " + show(s));
      a = b = T.error();
    }
    Ty* result = nullptr;
    for (int side = 0; side < 2; ++side) {
      size_t mark = scope_.size();
      Span vs = side < static_cast<int>(e.nameSpans.size()) ? e.nameSpans[side] : e.span;
      e.caseBindings[side] = bind(Binding::Pattern, e.names.size() > static_cast<size_t>(side) ? e.names[side] : "_", vs,
                                  side == 0 ? a : b);
      Ty* t = infer(*e.kids[side + 1]);
      if (!result) result = t;
      else if (!unify(T, result, t))
        error("E101", tailOf(e.kids[side + 1].get())->span, "case arms have different types: " + show(result) + " and " + show(t));
      scope_.resize(mark);
    }
    return result;
  }

  Ty* inferHandle(Expr& e) {
    Ty* body = infer(*e.kids[0]);
    Ty* result = nullptr;
    for (Arm& a : e.arms)
      if (a.name == "return") {
        size_t mark = scope_.size();
        if (a.params.size() != 1) error("E106", a.span, "the return handler takes 1 parameter");
        for (Param& p : a.params) p.binding = bind(Binding::HandlerParam, p.name, p.span, body);
        result = infer(*a.body);
        scope_.resize(mark);
      }
    if (!result) result = body;
    for (Arm& a : e.arms) {
      if (a.name == "return") continue;
      size_t mark = scope_.size();
      for (size_t i = 0; i < a.params.size(); ++i) {
        bool k = i + 1 == a.params.size();
        a.params[i].binding = bind(Binding::HandlerParam, a.params[i].name, a.params[i].span,
                                   k ? T.fn(T.var(), result) : T.var());
      }
      Ty* t = infer(*a.body);
      if (!unify(T, result, t))
        error("E101", tailOf(a.body.get())->span, "handler arms have different types: " + show(result) + " and " + show(t));
      scope_.resize(mark);
    }
    return result;
  }

  // A number now, or (still open) checked when inference finishes.
  bool numericNow(Expr& e, Ty* t, const std::string& op) {
    Ty* r = core(t);
    if (r->kind == Ty::Var) {
      numericChecks_.push_back({&e, t});
      return true;
    }
    if (r->kind == Ty::Param && !r->regionVar) {
      numeric_.require(r, "`" + op + "`", e.span);  // checked where the function is used (E109)
      return true;
    }
    if (isNumeric(r) || r->kind == Ty::Error) return true;
    error("E101", e.span, "`" + op + "` needs numbers (I32, I64, U32, F32 or F64), got " + show(t));
    return false;
  }

  Ty* inferBinary(Expr& e) {
    Ty* a = infer(*e.kids[0]);
    Ty* b = infer(*e.kids[1]);
    static const char* names[] = {"+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||"};
    std::string op = names[static_cast<int>(e.bop)];
    switch (e.bop) {
      case BinOp::And:
      case BinOp::Or:
        expectTy(e.kids[0]->span, T.prim(Prim::Bool), a, " (the left operand of `" + op + "`)");
        expectTy(e.kids[1]->span, T.prim(Prim::Bool), b, " (the right operand of `" + op + "`)");
        return T.prim(Prim::Bool);
      case BinOp::Eq:
      case BinOp::Ne:
      case BinOp::Lt:
      case BinOp::Le:
      case BinOp::Gt:
      case BinOp::Ge: {
        if (!unify(T, a, b)) {
          error("E101", e.kids[1]->span, "type mismatch: `" + op + "` compares " + show(a) + " with " + show(b));
          return T.prim(Prim::Bool);
        }
        Ty* r = core(a);
        bool eq = e.bop == BinOp::Eq || e.bop == BinOp::Ne;
        if (eq && (r->kind == Ty::Prim || r->kind == Ty::Unit)) return T.prim(Prim::Bool);
        if (!numericNow(e, a, op)) return T.prim(Prim::Bool);
        return T.prim(Prim::Bool);
      }
      default:
        if (Ty* v = vectorArith(e, a, b)) return v;
        if (!unify(T, a, b)) {
          error("E101", e.kids[1]->span, "type mismatch: `" + op + "` needs operands of one type, got " + show(a) + " and " + show(b));
          return T.error();
        }
        if (!numericNow(e, a, op)) return T.error();
        return a;
    }
  }

  // A view parameter (GPUBuffer<T>) takes `&b` / `&mut b` of an owned buffer
  // (lent for the call) or the owned buffer itself (consumed by the call), as a
  // dispatch does (docs/ephapax-gpu.md, Types). True when `got` is such a
  // buffer for `want` and their element types unify.
  bool viewArgument(Ty* want, Ty* got) {
    Ty* w = core(want);
    Ty* g = core(got);
    if (w->kind != Ty::Gpu || w->gpu != Ty::View) return false;
    if (g->kind == Ty::Ref) g = core(g->args[0]);
    if (g->kind != Ty::Gpu || g->gpu == Ty::View) return false;
    return unify(T, w->args[0], g->args[0]);
  }

  Ty* inferCall(Expr& e) {
    Expr& callee = *e.kids[0];
    size_t nargs = e.kids.size() - 1;
    if (callee.kind == ExprKind::Var && (isBuiltinName(callee.name) || builtinOverLibrary(e))) {
      callee.kernelCode = inKernel_;
      return inferBuiltinCall(e);
    }
    Ty* ft = infer(callee);
    if (callee.kind == ExprKind::Var && !callee.binding && callee.refKind == Expr::Fn) {
      noteCall(e, callee.global);
      FnDecl& g = *c_.prog.fns[callee.global];
      // A launcher is specialised per function argument, like a kernel (E215).
      if (g.gpuRole == FnDecl::Launcher)
        for (size_t i = 0; i < g.params.size() && i + 1 < e.kids.size(); ++i)
          if (core(g.paramTys[i])->kind == Ty::Fn) pendingFnArgs_.push_back({e.kids[i + 1].get(), g.name});
    }
    // Named functions and constructors take exactly their parameters.
    if (callee.kind == ExprKind::Var && !callee.binding && (callee.refKind == Expr::Fn || callee.refKind == Expr::Extern || callee.refKind == Expr::Ctor)) {
      size_t want = 0;
      std::string what;
      if (callee.refKind == Expr::Ctor) {
        auto& [d, v] = c_.ctors[callee.name];
        want = d->ctorTys[v].size();
        what = "constructor `" + callee.name + "`";
      } else {
        want = c_.prog.fns[callee.global]->params.size();
        what = "`" + callee.name + "`";
      }
      if (nargs != want) {
        error("E106", e.span, what + " takes " + std::to_string(want) + " argument" + (want == 1 ? "" : "s") +
                                  ", got " + std::to_string(nargs));
        for (size_t i = 1; i < e.kids.size(); ++i) infer(*e.kids[i]);
        Ty* r = ft;
        for (size_t i = 0; i < std::max<size_t>(want, callee.refKind == Expr::Ctor ? 0 : 1); ++i) {
          r = resolve(r);
          if (r->kind != Ty::Fn) break;
          r = r->args[1];
        }
        return r;
      }
    }
    if (nargs == 0) {
      Ty* r = T.var();
      if (!unify(T, ft, T.fn(T.unit(), r))) {
        error("E101", callee.span, "only functions can be called; this has type " + show(ft));
        return T.error();
      }
      return r;
    }
    Ty* cur = ft;
    std::vector<std::pair<Expr*, std::string>> fnArgs;
    fnArgs.swap(pendingFnArgs_);
    for (size_t i = 1; i < e.kids.size(); ++i) {
      Ty* a = infer(*e.kids[i]);
      for (auto& [arg, to] : fnArgs)
        if (arg == e.kids[i].get()) checkFunctionValue(*arg, "launcher `" + to + "`");
      Ty* c = resolve(cur);
      if (c->kind == Ty::Error) continue;
      if (c->kind == Ty::Var) {
        Ty* r = T.var();
        if (!unify(T, c, T.fn(a, r))) {
          error("E101", callee.span, "only functions can be called; this has type " + show(ft));
          return T.error();
        }
        cur = r;
        continue;
      }
      if (c->kind != Ty::Fn) {
        if (i == 1) error("E101", callee.span, "only functions can be called; this has type " + show(ft));
        else error("E106", e.span, "too many arguments: the function takes " + std::to_string(i - 1));
        return T.error();
      }
      if (viewArgument(c->args[0], a)) {
        cur = c->args[1];
        continue;
      }
      if (!unify(T, c->args[0], a))
        mismatch(e.kids[i]->span, c->args[0], a, " (argument " + std::to_string(i) + ")");
      cur = c->args[1];
    }
    return cur;
  }

  Ty* inferMember(Expr& e) {
    Expr& base = *e.kids[0];
    // A module qualifier: `m.x` where m is this module or an import.
    if (!e.bval && base.kind == ExprKind::Var && !lookupLocal(base.name) && !c_.fnIndex.count(base.name) &&
        !c_.constIndex.count(base.name) &&
        (base.name == c_.prog.moduleName ||
         std::find(c_.prog.imports.begin(), c_.prog.imports.end(), base.name) != c_.prog.imports.end())) {
      std::string name = e.name;
      Span s = e.span;
      e.kids.clear();
      e.kind = ExprKind::Var;
      e.name = name;
      e.span = s;
      Ty* t = inferVar(e);
      return t;
    }
    Ty* t = infer(base);
    Ty* r = resolve(t);
    if (r->kind == Ty::Ref) r = resolve(r->args[0]);
    if (r->kind == Ty::Var) {
      // Fields of a record not known yet: pick the record that has the field.
      if (!e.bval) {
        TypeDecl* found = nullptr;
        int count = 0;
        for (auto& d : c_.prog.types)
          if (d->kind == TypeDecl::Record &&
              std::find(d->fieldNames.begin(), d->fieldNames.end(), e.name) != d->fieldNames.end())
            found = d.get(), ++count;
        if (count == 1) {
          std::vector<Ty*> args;
          for (size_t i = 0; i < found->params.size(); ++i) args.push_back(T.var());
          unify(T, r, T.named(found, args));
          return inferMemberOn(e, resolve(r));
        }
      }
      Ty* v = T.var();
      deferredMembers_.push_back(&e);
      e.ty = v;
      return v;
    }
    return inferMemberOn(e, r);
  }

  void inferMemberLate(Expr& e) {
    Ty* r = resolve(e.kids[0]->ty);
    if (r->kind == Ty::Ref) r = resolve(r->args[0]);
    if (r->kind == Ty::Var) {
      error("E108", e.span, "the type of this value must be known to take `." +
                                (e.bval ? std::to_string(e.ival) : e.name) + "`",
            "add a type annotation to its binding");
      return;
    }
    Ty* t = inferMemberOn(e, r);
    if (!unify(T, e.ty, t)) mismatch(e.span, e.ty, t);
  }

  Ty* inferMemberOn(Expr& e, Ty* r) {
    if (Ty* ex = expandAlias(T, r)) r = resolve(ex);
    if (r->kind == Ty::Vec && !e.bval) {
      static const std::string comps = "xyzw";
      size_t at = e.name.size() == 1 ? comps.find(e.name[0]) : std::string::npos;
      if (at == std::string::npos || static_cast<int>(at) >= r->size) {
        error("E101", e.span, "`" + show(r) + "` has no component `." + e.name + "`");
        return T.error();
      }
      return T.prim(Prim::F32);
    }
    if (r->kind == Ty::Mat && e.bval) {
      if (e.ival < 0 || e.ival >= r->size) {
        error("E101", e.span, "column " + std::to_string(e.ival) + " is out of range for " + show(r));
        return T.error();
      }
      return T.vec(r->size);
    }
    if (e.bval) {
      if (r->kind != Ty::Tuple) {
        if (r->kind != Ty::Error) error("E101", e.span, "`." + std::to_string(e.ival) + "` needs a tuple, got " + show(r));
        return T.error();
      }
      if (e.ival < 0 || static_cast<size_t>(e.ival) >= r->args.size()) {
        error("E101", e.span, "tuple index " + std::to_string(e.ival) + " is out of range for " + show(r));
        return T.error();
      }
      return r->args[e.ival];
    }
    if (r->kind == Ty::Named && r->decl->kind == TypeDecl::Record) {
      auto& names = r->decl->fieldNames;
      auto it = std::find(names.begin(), names.end(), e.name);
      if (it != names.end()) return recordFields(T, r)[it - names.begin()];
      error("E101", e.span, "record `" + r->decl->name + "` has no field `" + e.name + "`");
      return T.error();
    }
    if (r->kind != Ty::Error) error("E101", e.span, "`." + e.name + "` needs a record, got " + show(r));
    return T.error();
  }

  Ty* inferRecord(Expr& e) {
    std::set<std::string> given(e.names.begin(), e.names.end());
    if (given.size() != e.names.size()) error("E107", e.span, "a field is given twice in this record");
    TypeDecl* found = nullptr;
    for (auto& d : c_.prog.types)
      if (d->kind == TypeDecl::Record && std::set<std::string>(d->fieldNames.begin(), d->fieldNames.end()) == given) {
        found = d.get();
        break;
      }
    if (!found) {
      for (auto& k : e.kids) infer(*k);
      std::string fields;
      for (auto& n : e.names) fields += (fields.empty() ? "" : ", ") + n;
      error("E104", e.span, "no record type has exactly the fields {" + fields + "}",
            "declare one with `type Name = { ... }`");
      return T.error();
    }
    std::vector<Ty*> args;
    for (size_t i = 0; i < found->params.size(); ++i) args.push_back(T.var());
    Ty* t = T.named(found, args);
    std::vector<Ty*> fields = recordFields(T, t);
    for (size_t i = 0; i < e.kids.size(); ++i) {
      Ty* v = infer(*e.kids[i]);
      size_t at = std::find(found->fieldNames.begin(), found->fieldNames.end(), e.names[i]) - found->fieldNames.begin();
      if (at < fields.size() && !unify(T, fields[at], v))
        mismatch(e.kids[i]->span, fields[at], v, " (field `" + e.names[i] + "`)");
    }
    return t;
  }

  // ==== GPU extension: statements, kernels, dispatch, builtins =====================

  FnDecl* curFn_ = nullptr;
  bool inKernel_ = false;
  std::vector<std::pair<Expr*, std::string>> pendingFnArgs_;  // launcher arguments that must be known functions  // inside a kernel body or an inline dispatch body
  std::vector<Ty*> intVars_, floatVars_, gpuElems_;  // defaulted to I32 / F64 / I32
  std::vector<std::pair<Expr*, Ty*>> varDeclChecks_;  // E214 once types are known
  std::set<const Expr*> tailReturns_;
  std::vector<Expr*> dispatchSites_;                  // of the current function (E219)
  std::set<int> dispatched_;                          // kernels some site dispatches
  // Kernel code rules across functions (checkKernelCode): per function, its
  // calls, and where it uses kernel-only / host-only operations.
  struct FnUses {
    std::vector<std::pair<int, Span>> calls, kernelCalls;  // callee index, site (kernelCalls: from kernel code)
    std::vector<std::pair<Span, std::string>> kernelOnly, hostOnly;
  };
  std::map<const FnDecl*, FnUses> uses_;

  static bool isGpuFn(const FnDecl& f) {
    return std::find(f.annotations.begin(), f.annotations.end(), "gpu") != f.annotations.end();
  }
  static bool hasUntypedParam(const FnDecl& f) {
    for (const Param& p : f.params)
      if (!p.type) return true;
    return false;
  }
  // Kernel-shaped: every parameter a view, a non-linear scalar / vector /
  // matrix / type parameter or a function value, and the result ().
  bool kernelShaped(const FnDecl& f) {
    if (core(f.retTy)->kind != Ty::Unit || f.isAsync) return false;
    for (Ty* p : f.paramTys) {
      Ty* r = core(p);
      bool ok = (r->kind == Ty::Gpu && r->gpu == Ty::View) || r->kind == Ty::Prim || r->kind == Ty::Vec ||
                r->kind == Ty::Mat || r->kind == Ty::Fn || (r->kind == Ty::Param && !r->regionVar) || r->kind == Ty::Var;
      if (!ok) return false;
    }
    return true;
  }

  // A GPU buffer's element must be a scalar or a vector.
  void checkElemType(Ty* elem, Span s) {
    Ty* r = resolve(elem);
    if (r->kind == Ty::Var || r->kind == Ty::Param || r->kind == Ty::Prim || r->kind == Ty::Vec || r->kind == Ty::Error) return;
    error("E101", s, "a GPU buffer or workgroup array holds scalars or vectors, not " + show(r));
  }

  Ty* intVar() {
    Ty* v = T.var();
    v->intLit = true;
    intVars_.push_back(v);
    return v;
  }

  // ---- kernel code ------------------------------------------------------------
  void kernelOnly(Span s, const std::string& what) {
    if (inKernel_) return;
    if (curFn_) uses_[curFn_].kernelOnly.push_back({s, what});
  }
  void hostOnly(Span s, const std::string& what) {
    if (!curFn_) return;
    if (inKernel_) {
      error("E212", s, what + " is host-only and cannot be used in kernel code",
            "do it in host code, before or after the dispatch");
      return;
    }
    uses_[curFn_].hostOnly.push_back({s, what});
  }
  void noteCall(Expr& call, int callee) {
    if (!curFn_) return;
    FnDecl& g = *c_.prog.fns[callee];
    (inKernel_ ? uses_[curFn_].kernelCalls : uses_[curFn_].calls).push_back({callee, call.span});
    if (!inKernel_ && g.gpuRole == FnDecl::Kernel)
      error("E217", call.span, "`" + g.name + "` is a kernel: it is launched with `dispatch`, not called",
            "write `dispatch " + g.name + "(..) over n;`");
    if (inKernel_ && (g.isAsync || g.gpuRole == FnDecl::Launcher))
      error("E212", call.span, "`" + g.name + "` is host code and cannot be called from kernel code");
  }

  // After every function: the functions kernel code calls (transitively) are
  // kernel code too — no host-only operations (E212), no recursion (E218);
  // kernel-only operations anywhere else are E212.
  void checkKernelCode() {
    size_t n = c_.prog.fns.size();
    std::vector<char> device(n, 0);
    std::vector<int> work;
    for (size_t i = 0; i < n; ++i) {
      FnDecl& f = *c_.prog.fns[i];
      auto it = uses_.find(&f);
      if (f.gpuRole == FnDecl::Kernel) {
        device[i] = 1;
        work.push_back(static_cast<int>(i));
      }
      if (it != uses_.end())
        for (auto& [g, s] : it->second.kernelCalls)
          if (!device[g]) device[g] = 1, work.push_back(g);
    }
    while (!work.empty()) {
      int i = work.back();
      work.pop_back();
      auto it = uses_.find(c_.prog.fns[i].get());
      if (it == uses_.end()) continue;
      for (auto& [g, s] : it->second.calls)
        if (!device[g]) device[g] = 1, work.push_back(g);
    }
    for (size_t i = 0; i < n; ++i) {
      FnDecl& f = *c_.prog.fns[i];
      auto it = uses_.find(&f);
      if (it == uses_.end()) continue;
      if (device[i] && f.gpuRole != FnDecl::Kernel)
        for (auto& [s, what] : it->second.hostOnly)
          error("E212", s, what + " is host-only, but `" + f.name + "` is called from kernel code");
      if (!device[i] && f.gpuRole != FnDecl::Kernel)
        for (auto& [s, what] : it->second.kernelOnly)
          error("E212", s, what + " is only available in kernel code",
                "use it in a `@gpu` kernel or inside `dispatch over n { .. }`");
    }
    // Recursion among device functions: a call edge inside a cycle.
    for (size_t i = 0; i < n; ++i) {
      if (!device[i]) continue;
      auto it = uses_.find(c_.prog.fns[i].get());
      if (it == uses_.end()) continue;
      std::vector<std::pair<int, Span>> edges = it->second.calls;
      edges.insert(edges.end(), it->second.kernelCalls.begin(), it->second.kernelCalls.end());
      for (auto& [g, s] : edges)
        if (device[g] && reaches(g, static_cast<int>(i))) {
          error("E218", s, "recursion in kernel code: `" + c_.prog.fns[g]->name + "` calls back into `" +
                               c_.prog.fns[i]->name + "`",
                "GPU code has no call stack; write the recursion as a loop");
          return;
        }
    }
  }
  bool reaches(int from, int to) {
    std::vector<char> seen(c_.prog.fns.size(), 0);
    std::vector<int> work{from};
    while (!work.empty()) {
      int i = work.back();
      work.pop_back();
      if (i == to) return true;
      if (seen[i]) continue;
      seen[i] = 1;
      auto it = uses_.find(c_.prog.fns[i].get());
      if (it == uses_.end()) continue;
      for (auto& [g, s] : it->second.calls) work.push_back(g);
      for (auto& [g, s] : it->second.kernelCalls) work.push_back(g);
    }
    return false;
  }

  // ---- generic kernels ----------------------------------------------------------
  // A kernel with untyped parameters: whatever its body left open in their
  // types becomes a type parameter (one instance per dispatch site's types).
  void generalizeKernel(FnDecl& f) {
    std::vector<Ty*> open;
    std::function<void(Ty*, unsigned)> collect = [&](Ty* t, unsigned depth) {
      t = resolve(t);
      if (!t || depth > 40) return;
      if (t->kind == Ty::Var && !t->intLit && !t->floatLit && !t->regionVar) {
        if (std::find(open.begin(), open.end(), t) == open.end()) open.push_back(t);
        return;
      }
      for (Ty* x : t->args) collect(x, depth + 1);
    };
    for (Ty* p : f.paramTys) collect(p, 0);
    for (Ty* v : open) {
      Ty* p = T.param("T" + std::to_string(f.typeParamTys.size()), nextParam_++);
      v->link = p;
      f.typeParamTys.push_back(p);
    }
    if (f.gpuRole == FnDecl::Kernel && !kernelShaped(f)) {
      f.gpuRole = FnDecl::Launcher;
      reportUntypedLauncherParams(f);
    }
  }
  void reportUntypedLauncherParams(const FnDecl& f) {
    for (const Param& p : f.params)
      if (!p.type) {
        error("E219", p.span, "parameter `" + p.name + "` needs a type: only kernels infer their parameters' types",
              "annotate it, e.g. `" + p.name + ": GPUBuffer<F32>!`");
        return;
      }
  }

  void checkUndispatchedKernels() {
    for (size_t i = 0; i < c_.prog.fns.size(); ++i) {
      FnDecl& f = *c_.prog.fns[i];
      if (f.gpuRole != FnDecl::Kernel || !hasUntypedParam(f) || dispatched_.count(static_cast<int>(i))) continue;
      bool open = false;
      for (Ty* p : f.paramTys) open |= mentionsParamTy(p);
      if (!open) continue;
      for (const Param& p : f.params)
        if (!p.type && mentionsParamTy(f.paramTys[&p - f.params.data()])) {
          error("E219", p.span, "the type of kernel parameter `" + p.name + "` cannot be inferred: `" + f.name +
                                    "` is never dispatched",
                "annotate the parameter, or dispatch the kernel");
          break;
        }
    }
  }
  static bool mentionsParamTy(Ty* t, unsigned depth = 0) {
    t = resolve(t);
    if (!t || depth > 40) return false;
    if (t->kind == Ty::Param && !t->regionVar) return true;
    for (Ty* x : t->args)
      if (mentionsParamTy(x, depth + 1)) return true;
    return false;
  }

  // Each dispatch site of the function just checked must determine its
  // kernel's type arguments (E219).
  void checkDispatchSites() {
    for (Expr* e : dispatchSites_)
      for (Ty* t : e->inst) {
        Ty* r = core(t);
        if (r->kind == Ty::Var && !r->regionVar) {  // regions leave no trace in kernels
          error("E219", e->span, "this dispatch does not determine the type of every parameter of `" + e->name + "`",
                "annotate the arguments, e.g. `let! b = allocate_gpu<F32>(n);`");
          break;
        }
      }
    dispatchSites_.clear();
  }

  // ---- statements ---------------------------------------------------------------
  static bool isChainLink(const Expr& e) {
    return (e.kind == ExprKind::Let && e.kids.size() == 2) || e.kind == ExprKind::Seq || e.kind == ExprKind::VarDecl ||
           e.kind == ExprKind::Workgroup;
  }

  // A run of Let / Seq / VarDecl / Workgroup nodes (a block's statements),
  // checked in a loop rather than by recursion: a block may be long.
  Ty* inferChain(Expr& first) {
    std::vector<std::pair<Expr*, size_t>> opened;
    Expr* e = &first;
    Ty* result = nullptr;
    while (true) {
      e->kernelCode = inKernel_;
      size_t mark = scope_.size();
      if (e->kind == ExprKind::Let) {
        bindLet(*e);
      } else if (e->kind == ExprKind::Seq) {
        infer(*e->kids[0]);
      } else if (e->kind == ExprKind::VarDecl) {
        Ty* v = infer(*e->kids[0]);
        if (e->annot) {
          Ty* want = convert(e->annot.get());
          if (!unify(T, want, v))
            error("E102", tailOf(e->kids[0].get())->span,
                  "`var " + e->name + "` is annotated " + show(want) + " but the value has type " + show(v));
          v = want;
        }
        varDeclChecks_.push_back({e, v});
        e->binding = bind(Binding::Mutable, e->name, e->span, v);
      } else if (e->kind == ExprKind::Workgroup) {
        kernelOnly(e->span, "a workgroup array");
        Ty* elem = convert(e->annot.get());
        checkElemType(elem, e->annot ? e->annot->span : e->span);
        e->binding = bind(Binding::Let, e->name, e->span, T.array(elem, static_cast<int>(e->ival)));
      } else {
        result = infer(*e);
        break;
      }
      opened.push_back({e, mark});
      if (e->kids.empty()) {
        result = T.unit();
        break;
      }
      Expr* next = e->kids.back().get();
      if (e->kind == ExprKind::Let && e->kids.size() < 2) {
        result = T.unit();
        break;
      }
      if (!isChainLink(*next)) {
        result = infer(*next);
        break;
      }
      e = next;
    }
    for (size_t i = opened.size(); i-- > 0;) {
      opened[i].first->ty = result;
      scope_.resize(opened[i].second);
    }
    return result;
  }

  // A `let`'s value, annotation and pattern (the body is the caller's).
  void bindLet(Expr& e) {
    Ty* v = infer(*e.kids[0]);
    if (e.annot) {
      Ty* want = convert(e.annot.get());
      if (!unify(T, want, v)) {
        error("E102", tailOf(e.kids[0].get())->span,
              "the binding is annotated " + show(want) + " but the value has type " + show(v));
      }
    }
    size_t mark = scope_.size();
    bindPattern(*e.pat, v, e.bval ? Binding::LetBang : Binding::Let, true);
    // let! keeps its obligation at the keyword.
    for (size_t i = mark; i < scope_.size(); ++i)
      if (e.bval) scope_[i]->span = e.span;
  }

  void expectUnitBody(Expr& body, const char* what) {
    Ty* t = infer(body);
    if (!unify(T, T.unit(), t))
      error("E101", tailOf(&body)->span, std::string(what) + " has no value, but this gives " + show(t),
            "end it with `;`");
  }

  Ty* inferAssign(Expr& e) {
    Ty* v = infer(*e.kids[0]);
    Binding* b = lookupLocal(e.name);
    if (!b) {
      if (c_.fnIndex.count(e.name) || c_.constIndex.count(e.name))
        error("E214", e.span, "`" + e.name + "` is not a `var` and cannot be assigned", "declare it with `var " + e.name + " = ...;`");
      else
        error("E103", e.span, "unbound variable `" + e.name + "`");
      return T.unit();
    }
    e.binding = b;
    if (b->origin != Binding::Mutable) {
      error("E214", e.span, "`" + e.name + "` is not a `var` and cannot be assigned",
            "declare it with `var " + e.name + " = ...;` to assign it later");
      return T.unit();
    }
    if (!unify(T, b->ty, v)) mismatch(e.kids[0]->span, b->ty, v, " (assigned to `var " + e.name + "`)");
    return T.unit();
  }

  // The element of a GPU buffer (owned, view or borrowed) or workgroup array;
  // null for anything else. In kernel code an open type is taken to be a view.
  Ty* gpuElementOf(Ty* t, Span) {
    Ty* r = core(t);
    if (r->kind == Ty::Ref) r = core(r->args[0]);
    if (r->kind == Ty::Gpu || r->kind == Ty::Array) return r->args[0];
    if (r->kind == Ty::Var && !r->intLit && !r->floatLit && inKernel_) {
      Ty* elem = T.var();
      unify(T, r, T.gpu(elem, Ty::View));
      return elem;
    }
    return nullptr;
  }

  Ty* inferIndexAssign(Expr& e) {
    Ty* base = infer(*e.kids[0]);
    expectTy(e.kids[1]->span, T.prim(Prim::I32), infer(*e.kids[1]), " (an index)");
    Ty* v = infer(*e.kids[2]);
    Ty* elem = gpuElementOf(base, e.kids[0]->span);
    if (!elem) {
      if (resolve(base)->kind != Ty::Error)
        error("E101", e.kids[0]->span, "only GPU buffers and workgroup arrays can be stored into, not " + show(base),
              "lists are immutable; build a new one");
      return T.unit();
    }
    kernelOnly(e.span, "storing into a GPU buffer");
    if (!unify(T, elem, v)) mismatch(e.kids[2]->span, elem, v, " (the buffer's element type)");
    return T.unit();
  }

  Ty* inferFor(Expr& e) {
    Ty* a = infer(*e.kids[0]);
    Ty* b = infer(*e.kids[1]);
    Ty* i = intVar();
    if (!unify(T, i, a)) error("E101", e.kids[0]->span, "a `for` range needs integer bounds, got " + show(a));
    else if (!unify(T, i, b)) mismatch(e.kids[1]->span, a, b, " (the bounds of a `for` range have one type)");
    size_t mark = scope_.size();
    e.binding = bind(Binding::Let, e.name, e.nameSpans.empty() ? e.span : e.nameSpans[0], i);
    expectUnitBody(*e.kids[2], "a `for` body");
    scope_.resize(mark);
    return T.unit();
  }

  // Tail positions of a function body: where `return` is allowed.
  void markTailReturns(Expr& body) {
    std::vector<Expr*> work{&body};
    while (!work.empty()) {
      Expr* e = work.back();
      work.pop_back();
      switch (e->kind) {
        case ExprKind::Return: tailReturns_.insert(e); break;
        case ExprKind::Let:
        case ExprKind::Seq:
        case ExprKind::VarDecl:
        case ExprKind::Workgroup:
        case ExprKind::Region:
          if (!e->kids.empty()) work.push_back(e->kids.back().get());
          break;
        case ExprKind::If:
          work.push_back(e->kids[1].get());
          work.push_back(e->kids[2].get());
          break;
        case ExprKind::Case:
          work.push_back(e->kids[1].get());
          work.push_back(e->kids[2].get());
          break;
        case ExprKind::Match:
          for (Arm& a : e->arms) work.push_back(a.body.get());
          break;
        default: break;
      }
    }
  }

  Ty* inferReturn(Expr& e) {
    Ty* v = infer(*e.kids[0]);
    if (!curFn_ || !tailReturns_.count(&e) || lambdaDepth_ > 0) {
      error("E213", e.span, "`return` is only allowed in tail position",
            "make it the last statement of the function (or of a branch in tail position), or use `if .. else`");
      return curFn_ ? curFn_->retTy : T.error();
    }
    if (!unify(T, curFn_->retTy, v)) mismatch(e.kids[0]->span, curFn_->retTy, v, " (the result of `" + curFn_->name + "`)");
    return curFn_->retTy;
  }

  // ---- host operations ---------------------------------------------------------
  // allocate_gpu[@r][<T>](n), and allocate_gpu_on[@r][<T>](k, n): the same
  // on device k (its two kids).
  Ty* inferAllocGpu(Expr& e) {
    bool onDevice = e.kids.size() == 2;
    std::string what = onDevice ? "allocate_gpu_on" : "allocate_gpu";
    hostOnly(e.span, "`" + what + "`");
    if (onDevice) deviceIndex(*e.kids[0], infer(*e.kids[0]), what);
    Expr& count = *e.kids.back();
    Ty* n = infer(count);
    if (!unify(T, intVar(), n)) error("E101", count.span, "`" + what + "` takes an integer element count, got " + show(n));
    Ty* elem;
    if (e.annot) {
      elem = convert(e.annot.get());
      checkElemType(elem, e.annot->span);
    } else {
      elem = T.var();
      gpuElems_.push_back(elem);
    }
    Ty* region = nullptr;  // the buffer's type names its region (E003 if it escapes it)
    if (!e.name.empty() && e.name != "_") {
      for (size_t i = regions_.size(); i-- > 0 && !region;)
        if (regions_[i].first == e.name) {
          region = regions_[i].second;
          Ty* r = resolve(region);
          e.regionId = r->kind == Ty::Region ? r->id : -1;
        }
      if (!region)
        error("E006", e.span, "allocation in region `" + e.name + "`, which is not active here",
              "allocate inside `region " + e.name + " { ... }`, or leave out `@" + e.name + "`");
    }
    return T.gpu(elem, Ty::Linear, region);
  }

  Ty* inferAwait(Expr& e) {
    hostOnly(e.span, "`.await`");
    Ty* t = infer(*e.kids[0]);
    Ty* r = core(t);
    if (r->kind == Ty::Future) return r->args[0];
    const Expr& k = *e.kids[0];
    bool transfer = k.kind == ExprKind::Dispatch ||
                    (k.kind == ExprKind::Call && (k.builtin == Expr::H2D || k.builtin == Expr::D2H || k.builtin == Expr::ReadGpu ||
                                                  k.builtin == Expr::WriteGpu || k.builtin == Expr::FreeGpu ||
                                                  k.builtin == Expr::ToDevice));
    if (transfer) return t;
    if (r->kind != Ty::Error)
      error("E216", e.span, "`.await` needs a future, a transfer or a dispatch, not a value of type " + show(t),
            "await the result of an `async fn`, of h2d/d2h/read_gpu/write_gpu, or `(dispatch ..).await`");
    return T.error();
  }

  // ---- dispatch ----------------------------------------------------------------------
  Ty* inferDispatch(Expr& e) {
    hostOnly(e.span, "`dispatch`");
    if (e.grid.size() > 3 || e.grid.empty())
      error("E217", e.grid.size() > 3 ? e.grid[3]->span : e.span,
            "a dispatch grid has 1 to 3 dimensions, not " + std::to_string(e.grid.size()));
    for (auto& g : e.grid) {
      g->kernelCode = inKernel_;
      Ty* t = infer(*g);
      if (!unify(T, intVar(), t)) error("E101", g->span, "a grid dimension is an integer, not " + show(t));
    }
    if (e.name.empty()) {  // inline kernel
      bool outer = inKernel_;
      inKernel_ = true;
      expectUnitBody(*e.kids[0], "a kernel body");
      inKernel_ = outer;
      return T.unit();
    }
    Span nameSpan = e.nameSpans.empty() ? e.span : e.nameSpans[0];
    auto it = c_.fnIndex.find(e.name);
    if (it == c_.fnIndex.end() || lookupLocal(e.name)) {
      for (auto& k : e.kids) infer(*k);
      if (lookupLocal(e.name) || c_.constIndex.count(e.name) || c_.ctors.count(e.name))
        error("E217", nameSpan, "`" + e.name + "` is not a kernel", "dispatch a `@gpu` function: `@gpu fn " + e.name + "(..) { .. }`");
      else
        error("E103", nameSpan, "unknown kernel `" + e.name + "`");
      return T.unit();
    }
    FnDecl& k = *c_.prog.fns[it->second];
    e.refKind = Expr::Fn;
    e.global = it->second;
    if (k.gpuRole != FnDecl::Kernel) {
      for (auto& a : e.kids) infer(*a);
      error("E217", nameSpan, "`" + e.name + "` is not a kernel" +
                                  std::string(k.gpuRole == FnDecl::Launcher ? ": it takes or returns owned values (a launcher)"
                                                                            : ": it is not `@gpu`"),
            k.gpuRole == FnDecl::Launcher ? "call a launcher like a function" : "mark it `@gpu`, with views and scalars as parameters and no result");
      return T.unit();
    }
    dispatched_.insert(it->second);
    std::vector<std::pair<int, Ty*>> subst;
    for (Ty* p : k.typeParamTys) {
      Ty* v = T.var(p->regionVar);
      e.inst.push_back(v);
      subst.push_back({p->id, v});
    }
    numeric_.instantiated(k.name, k.typeParamTys, e.inst, nameSpan);
    if (e.kids.size() != k.params.size()) {
      error("E106", e.span, "kernel `" + k.name + "` takes " + std::to_string(k.params.size()) + " argument" +
                                (k.params.size() == 1 ? "" : "s") + ", got " + std::to_string(e.kids.size()));
      for (auto& a : e.kids) infer(*a);
      return T.unit();
    }
    for (size_t i = 0; i < e.kids.size(); ++i) {
      Expr& arg = *e.kids[i];
      Ty* want = substitute(T, k.paramTys[i], subst);
      Ty* got = infer(arg);
      dispatchArg(k, i, arg, want, got);
    }
    dispatchSites_.push_back(&e);
    return T.unit();
  }

  void dispatchArg(FnDecl& k, size_t i, Expr& arg, Ty* want, Ty* got) {
    Ty* w = core(want);
    Ty* g = core(got);
    if (g->kind == Ty::Ref && core(g->args[0])->kind == Ty::Gpu) g = core(g->args[0]);
    if (g->kind == Ty::Gpu && (w->kind == Ty::Gpu || w->kind == Ty::Var)) {
      if (w->kind == Ty::Var) unify(T, w, T.gpu(T.var(), Ty::View));
      w = core(want);
      if (w->gpu != Ty::View) {
        error("E101", arg.span, "kernel parameter `" + k.params[i].name + "` must be a view (GPUBuffer<T>), not " + show(w));
        return;
      }
      if (!unify(T, w->args[0], g->args[0]))
        error("E211", arg.span, "this buffer holds " + show(g->args[0]) + ", but kernel `" + k.name + "` takes `" +
                                    k.params[i].name + ": " + show(w) + "`",
              "pass a buffer of " + show(w->args[0]) + ", or convert its elements first");
      return;
    }
    if (w->kind == Ty::Gpu) {
      error("E101", arg.span, "kernel parameter `" + k.params[i].name + "` is a buffer (" + show(w) + "); got " + show(got),
            "pass `&b`, `&mut b` or an owned buffer");
      return;
    }
    if (!unify(T, want, got)) {
      mismatch(arg.span, want, got, " (argument " + std::to_string(i + 1) + " of kernel `" + k.name + "`)");
      return;
    }
    if (core(want)->kind == Ty::Fn) checkFunctionValue(arg, "kernel `" + k.name + "`");
  }

  // A function value passed to GPU code: a named function, a lambda that
  // captures nothing, or the enclosing launcher's own function parameter
  // (known once the launcher is specialised per function argument) (E215).
  void checkFunctionValue(Expr& arg, const std::string& to) {
    if (arg.kind == ExprKind::Var && !arg.binding && arg.refKind == Expr::Fn) return;
    if (isLauncherFunctionParam(arg)) return;
    if (arg.kind == ExprKind::Lambda) {
      std::vector<const Expr*> work{arg.kids[0].get()};
      while (!work.empty()) {
        const Expr* x = work.back();
        work.pop_back();
        if (x->kind == ExprKind::Var && x->binding && x->binding->lambdaDepth <= lambdaDepth_) {
          error("E215", x->span, "the lambda passed to " + to + " captures `" + x->name + "`",
                "GPU code takes only named functions or lambdas that capture nothing; pass `" + x->name +
                    "` as an argument instead");
          return;
        }
        for (auto& k : x->kids) work.push_back(k.get());
        for (auto& a : x->arms) {
          if (a.body) work.push_back(a.body.get());
          if (a.guard) work.push_back(a.guard.get());
        }
      }
      return;
    }
    error("E215", arg.span,
          "the function passed to " + to +
              " must be a named function, a lambda that captures nothing, or a function parameter of the launcher "
              "passing it",
          "name the function (`fn double(x: F32): F32 = x * 2.0`) and pass `double`");
  }

  // `f`, a function parameter of the launcher whose host code (not a lambda
  // in it) mentions it: every instance of the launcher has f bound to a
  // known function, so f may be passed on to GPU code.
  bool isLauncherFunctionParam(const Expr& arg) {
    if (arg.kind != ExprKind::Var || !arg.binding || !curFn_ || curFn_->gpuRole != FnDecl::Launcher) return false;
    if (inKernel_ || lambdaDepth_ > 0) return false;
    for (size_t i = 0; i < curFn_->params.size(); ++i)
      if (curFn_->params[i].binding == arg.binding) return core(curFn_->paramTys[i])->kind == Ty::Fn;
    return false;
  }

  // ---- builtins -------------------------------------------------------------------
  struct BuiltinInfo {
    Expr::Builtin b;
    int arity;  // -1: variadic
  };
  static const std::map<std::string, BuiltinInfo>& builtinTable() {
    static const std::map<std::string, BuiltinInfo> t = {
        {"global_id", {Expr::GlobalIdOf, 1}}, {"local_id", {Expr::LocalIdOf, 1}}, {"group_id", {Expr::GroupIdOf, 1}},
        {"num_groups", {Expr::NumGroupsOf, 1}}, {"group_size", {Expr::GroupSizeOf, 1}}, {"barrier", {Expr::Barrier, 0}},
        {"atomic_add", {Expr::AtomicAdd, 3}}, {"atomic_min", {Expr::AtomicMin, 3}}, {"atomic_max", {Expr::AtomicMax, 3}},
        {"atomic_xchg", {Expr::AtomicXchg, 3}}, {"atomic_cas", {Expr::AtomicCas, 4}},
        {"sqrt", {Expr::Sqrt, 1}}, {"exp", {Expr::Exp, 1}}, {"log", {Expr::Log, 1}}, {"sin", {Expr::Sin, 1}},
        {"cos", {Expr::Cos, 1}}, {"tan", {Expr::Tan, 1}}, {"tanh", {Expr::Tanh, 1}}, {"floor", {Expr::Floor, 1}},
        {"ceil", {Expr::Ceil, 1}}, {"abs", {Expr::Abs, 1}}, {"pow", {Expr::Pow, 2}}, {"min", {Expr::Min, 2}},
        {"max", {Expr::Max, 2}}, {"dot", {Expr::Dot, 2}}, {"cross", {Expr::Cross, 2}}, {"length", {Expr::Length, 1}},
        {"normalize", {Expr::Normalize, 1}},
        {"vec2", {Expr::MakeVec, -1}}, {"vec3", {Expr::MakeVec, -1}}, {"vec4", {Expr::MakeVec, -1}},
        {"mat2", {Expr::MakeMat, -1}}, {"mat3", {Expr::MakeMat, -1}}, {"mat4", {Expr::MakeMat, -1}},
        {"i32", {Expr::Cast, 1}}, {"i64", {Expr::Cast, 1}}, {"u32", {Expr::Cast, 1}}, {"f32", {Expr::Cast, 1}},
        {"f64", {Expr::Cast, 1}}, {"len", {Expr::Len, 1}},
        {"h2d", {Expr::H2D, 1}}, {"d2h", {Expr::D2H, 1}}, {"free_gpu", {Expr::FreeGpu, 1}},
        {"read_gpu", {Expr::ReadGpu, 2}}, {"write_gpu", {Expr::WriteGpu, 3}},
        {"to_device", {Expr::ToDevice, 2}},
        {"device_count", {Expr::DeviceCount, 0}},
        {"array", {Expr::Array, 2}},
    };
    return t;
  }
  // A builtin unless a local, function, constant or constructor has the name.
  bool isBuiltinName(const std::string& name) {
    return builtinTable().count(name) && !lookupLocal(name) && !c_.fnIndex.count(name) && !c_.constIndex.count(name);
  }

  // `dot` is both a builtin (of two vectors) and a function of `import gpu`
  // (of two buffers, `dot(&a, &b)`): a call whose first argument is not a
  // borrow or a GPU buffer variable is the builtin's, unless the program
  // itself declares `dot`.
  bool builtinOverLibrary(const Expr& call) {
    const Expr& callee = *call.kids[0];
    if (callee.name != "dot" || call.kids.size() < 2 || lookupLocal(callee.name) || c_.constIndex.count(callee.name))
      return false;
    auto it = c_.fnIndex.find(callee.name);
    if (it == c_.fnIndex.end() || c_.prog.fns[it->second]->span.file == 0) return false;
    const Expr& a = *call.kids[1];
    if (a.kind == ExprKind::Borrow) return false;
    if (a.kind == ExprKind::Var)
      if (Binding* b = lookupLocal(a.name); b && core(b->ty)->kind == Ty::Gpu) return false;
    return true;
  }

  bool isFloatish(Ty* t) {
    Ty* r = core(t);
    return (r->kind == Ty::Prim && (r->prim == Prim::F32 || r->prim == Prim::F64)) || (r->kind == Ty::Var && r->floatLit) ||
           r->kind == Ty::Vec || r->kind == Ty::Error;
  }

  // The device index of allocate_gpu_on / to_device: an integer literal 0..255
  // (the IR's `alloc {device = k}`), so that it is known when lowering.
  void deviceIndex(const Expr& k, Ty* t, const std::string& name) {
    if (k.kind != ExprKind::IntLit || k.ival < 0 || k.ival > 255) {
      error("E101", k.span, "`" + name + "` takes a device index 0..255 (an integer literal) as its first argument",
            "write the device's number, e.g. `" + name + "(1, ..)`; device 0 is the default device");
      return;
    }
    expectTy(k.span, T.prim(Prim::I32), t, " (a device index)");
  }

  Ty* inferBuiltinCall(Expr& e) {
    Expr& callee = *e.kids[0];
    const std::string& name = callee.name;
    BuiltinInfo info = builtinTable().at(name);
    e.builtin = info.b;
    callee.builtin = info.b;
    std::vector<Ty*> a;
    for (size_t i = 1; i < e.kids.size(); ++i) a.push_back(infer(*e.kids[i]));
    size_t n = a.size();
    if (info.arity >= 0 && n != static_cast<size_t>(info.arity)) {
      error("E106", e.span, "`" + name + "` takes " + std::to_string(info.arity) + " argument" +
                                (info.arity == 1 ? "" : "s") + ", got " + std::to_string(n));
      return T.error();
    }
    auto argSpan = [&](size_t i) { return e.kids[i + 1]->span; };
    auto f32 = [&]() { return T.prim(Prim::F32); };
    switch (info.b) {
      case Expr::GlobalIdOf: case Expr::LocalIdOf: case Expr::GroupIdOf: case Expr::NumGroupsOf: case Expr::GroupSizeOf: {
        kernelOnly(e.span, "`" + name + "`");
        const Expr& d = *e.kids[1];
        if (d.kind != ExprKind::IntLit || d.ival < 0 || d.ival > 2)
          error("E101", d.span, "`" + name + "` takes a dimension 0, 1 or 2 (a literal)");
        expectTy(d.span, T.prim(Prim::I32), a[0]);
        return intVar();
      }
      case Expr::Barrier:
        kernelOnly(e.span, "`barrier()`");
        return T.unit();
      case Expr::AtomicAdd: case Expr::AtomicMin: case Expr::AtomicMax: case Expr::AtomicXchg: case Expr::AtomicCas: {
        kernelOnly(e.span, "`" + name + "`");
        Ty* elem = gpuElementOf(a[0], argSpan(0));
        if (!elem) {
          error("E101", argSpan(0), "`" + name + "` works on a GPU buffer or workgroup array, not " + show(a[0]));
          return T.error();
        }
        expectTy(argSpan(1), T.prim(Prim::I32), a[1], " (an index)");
        for (size_t i = 2; i < n; ++i) expectTy(argSpan(i), elem, a[i], " (the element type)");
        Ty* r = core(elem);
        bool floatOk = info.b == Expr::AtomicAdd || info.b == Expr::AtomicXchg;
        bool isFloat = r->kind == Ty::Prim && (r->prim == Prim::F32 || r->prim == Prim::F64);
        if (r->kind == Ty::Param && !r->regionVar)
          numeric_.require(r, "`" + name + "`", argSpan(0));
        else if (r->kind != Ty::Var && !(isNumeric(r) && (floatOk || !isFloat)) && r->kind != Ty::Error)
          error("E101", argSpan(0), "`" + name + "` works on " + std::string(floatOk ? "I32, U32, I64, F32 or F64" : "I32, U32 or I64") +
                                        " elements, not " + show(r));
        return elem;
      }
      case Expr::Sqrt: case Expr::Exp: case Expr::Log: case Expr::Sin: case Expr::Cos: case Expr::Tan:
      case Expr::Tanh: case Expr::Floor: case Expr::Ceil: {
        Ty* r = core(a[0]);
        if (r->kind == Ty::Var && !r->floatLit && !r->intLit) unify(T, r, f32());
        if (!isFloatish(a[0]))
          error("E101", argSpan(0), "`" + name + "` takes a float (F32, F64) or a vector, not " + show(a[0]));
        return a[0];
      }
      case Expr::Abs:
        if (Ty* r = core(a[0]); r->kind != Ty::Vec) numericNow(*e.kids[1], a[0], name);
        return a[0];
      case Expr::Pow: case Expr::Min: case Expr::Max:
        if (!unify(T, a[0], a[1])) {
          mismatch(argSpan(1), a[0], a[1], " (`" + name + "` takes two values of one type)");
          return T.error();
        }
        if (Ty* r = core(a[0]); r->kind != Ty::Vec) numericNow(*e.kids[1], a[0], name);
        return a[0];
      case Expr::Dot: case Expr::Cross: {
        Ty* r = core(a[0]);
        if (r->kind != Ty::Vec) {
          error("E101", argSpan(0), "`" + name + "` takes vectors, not " + show(a[0]));
          return T.error();
        }
        if (!unify(T, a[0], a[1])) mismatch(argSpan(1), a[0], a[1]);
        if (info.b == Expr::Cross && r->size != 3) error("E101", argSpan(0), "`cross` takes two vec3, not " + show(r));
        return info.b == Expr::Dot ? f32() : a[0];
      }
      case Expr::Length: case Expr::Normalize:
        if (core(a[0])->kind != Ty::Vec) {
          error("E101", argSpan(0), "`" + name + "` takes a vector, not " + show(a[0]));
          return T.error();
        }
        return info.b == Expr::Length ? f32() : a[0];
      case Expr::MakeVec: {
        int size = name[3] - '0';
        if (n != 1 && n != static_cast<size_t>(size)) {
          error("E106", e.span, "`" + name + "` takes 1 or " + std::to_string(size) + " F32 values, got " + std::to_string(n));
          return T.error();
        }
        for (size_t i = 0; i < n; ++i) expectTy(argSpan(i), f32(), a[i], " (a vector component)");
        return T.vec(size);
      }
      case Expr::MakeMat: {
        int size = name[3] - '0';
        if (n == 1) {
          expectTy(argSpan(0), f32(), a[0], " (the diagonal)");
        } else if (n == static_cast<size_t>(size)) {
          for (size_t i = 0; i < n; ++i) expectTy(argSpan(i), T.vec(size), a[i], " (a column)");
        } else {
          error("E106", e.span, "`" + name + "` takes 1 value or " + std::to_string(size) + " columns, got " + std::to_string(n));
          return T.error();
        }
        return T.mat(size);
      }
      case Expr::Cast: {
        Ty* r = core(a[0]);
        if (r->kind == Ty::Param && !r->regionVar)
          numeric_.require(r, "`" + name + "`", argSpan(0));
        else if (r->kind != Ty::Var && !isNumeric(r) && r->kind != Ty::Error)
          error("E101", argSpan(0), "`" + name + "` converts a number, not " + show(a[0]));
        else if (r->kind == Ty::Var)
          numericChecks_.push_back({e.kids[1].get(), a[0]});
        static const std::map<std::string, Prim> to = {
            {"i32", Prim::I32}, {"i64", Prim::I64}, {"u32", Prim::U32}, {"f32", Prim::F32}, {"f64", Prim::F64}};
        return T.prim(to.at(name));
      }
      case Expr::Len: {
        Ty* r = core(a[0]);
        if (r->kind == Ty::Ref) r = core(r->args[0]);
        if (r->kind == Ty::Var && inKernel_) unify(T, r, T.gpu(T.var(), Ty::View));
        r = core(r);
        if (r->kind != Ty::Gpu && r->kind != Ty::List && r->kind != Ty::Array && r->kind != Ty::Error) {
          if (r->kind == Ty::Var) unify(T, r, T.list(T.var()));
          else error("E101", argSpan(0), "`len` takes a GPU buffer or a list, not " + show(a[0]));
        }
        return T.prim(Prim::I32);
      }
      case Expr::H2D: {
        hostOnly(e.span, "`h2d`");
        Ty* elem = T.var();
        Ty* r = core(a[0]);
        if (r->kind == Ty::Ref) r = core(r->args[0]);
        if (!unify(T, r, T.list(elem))) {
          error("E101", argSpan(0), "`h2d` takes a list, not " + show(a[0]));
          return T.error();
        }
        checkElemType(elem, argSpan(0));
        gpuElems_.push_back(elem);
        return T.gpu(elem, Ty::Linear);
      }
      case Expr::D2H: case Expr::FreeGpu: case Expr::ReadGpu: case Expr::WriteGpu: {
        hostOnly(e.span, "`" + name + "`");
        Ty* r = core(a[0]);
        if (r->kind == Ty::Var) unify(T, r, T.gpu(T.var(), Ty::Linear));
        r = core(r);
        if (r->kind != Ty::Gpu || r->gpu == Ty::View) {
          if (r->kind != Ty::Error)
            error("E101", argSpan(0), "`" + name + "` takes an owned GPU buffer (GPUBuffer<T>!), not " + show(a[0]),
                  r->kind == Ty::Ref ? "pass the buffer itself: `" + name + "` consumes it" : "");
          return T.error();
        }
        Ty* elem = r->args[0];
        if (n >= 2) expectTy(argSpan(1), T.prim(Prim::I32), a[1], " (an index)");
        if (n >= 3) expectTy(argSpan(2), elem, a[2], " (the element type)");
        if (info.b == Expr::D2H) return T.list(elem);
        if (info.b == Expr::FreeGpu) return T.unit();
        if (info.b == Expr::ReadGpu) return T.tuple({a[0], elem});
        return a[0];
      }
      case Expr::DeviceCount:  // device_count(): how many devices the program runs on
        hostOnly(e.span, "`device_count`");
        return T.prim(Prim::I32);
      case Expr::ToDevice: {  // to_device(k, b): b's contents in a new buffer on device k; consumes b
        hostOnly(e.span, "`to_device`");
        deviceIndex(*e.kids[1], a[0], name);
        Ty* r = core(a[1]);
        if (r->kind == Ty::Var) unify(T, r, T.gpu(T.var(), Ty::Linear));
        r = core(r);
        if (r->kind != Ty::Gpu || r->gpu == Ty::View) {
          if (r->kind != Ty::Error)
            error("E101", argSpan(1), "`to_device` takes an owned GPU buffer (GPUBuffer<T>!), not " + show(a[1]),
                  r->kind == Ty::Ref ? "pass the buffer itself: `to_device` consumes it" : "");
          return T.error();
        }
        return a[1];
      }
      case Expr::Array: {  // array(n, f): [f(0), .., f(n-1)]
        hostOnly(e.span, "`array`");
        expectTy(argSpan(0), T.prim(Prim::I32), a[0], " (the length)");
        Ty* elem = T.var();
        Ty* want = T.fn(T.prim(Prim::I32), elem);
        if (!unify(T, want, a[1])) {
          error("E101", argSpan(1), "`array(n, f)` takes a function from I32 to the element type, not " + show(a[1]),
                "write `array(n, fn(i: I32) -> ..)` or pass a named function");
          return T.error();
        }
        return T.list(elem);
      }
      default: return T.error();
    }
  }

  // Vector and matrix arithmetic (+ - * /): elementwise, a scalar on either
  // side, mat * vec, mat * mat. Null when neither side is a vector or matrix.
  Ty* vectorArith(Expr& e, Ty* a, Ty* b) {
    Ty* x = core(a);
    Ty* y = core(b);
    bool xv = x->kind == Ty::Vec || x->kind == Ty::Mat, yv = y->kind == Ty::Vec || y->kind == Ty::Mat;
    if (!xv && !yv) return nullptr;
    if (e.bop == BinOp::Rem) {
      error("E101", e.span, "`%` does not apply to " + show(xv ? x : y));
      return T.error();
    }
    auto scalar = [&](Ty* s, Span sp) {
      if (!unify(T, T.prim(Prim::F32), s)) {
        mismatch(sp, T.prim(Prim::F32), s, " (vectors and matrices hold F32)");
        return false;
      }
      return true;
    };
    if (xv && !yv) return scalar(b, e.kids[1]->span) ? x : T.error();
    if (!xv && yv) {
      if (e.bop == BinOp::Div || e.bop == BinOp::Sub) {
        if (y->kind == Ty::Mat) {
          error("E101", e.span, "a scalar cannot be the left operand of this operator on " + show(y));
          return T.error();
        }
      }
      return scalar(a, e.kids[0]->span) ? y : T.error();
    }
    if (x->kind == Ty::Mat && e.bop == BinOp::Mul) {
      if (x->size != y->size) {
        error("E101", e.span, "cannot multiply " + show(x) + " by " + show(y));
        return T.error();
      }
      return y;  // mat * vec is a vec; mat * mat a mat
    }
    if (x->kind != y->kind || x->size != y->size || (x->kind == Ty::Mat && e.bop == BinOp::Div)) {
      error("E101", e.span, "type mismatch: cannot combine " + show(x) + " and " + show(y) + " elementwise");
      return T.error();
    }
    return x;
  }

  // ---- exhaustiveness --------------------------------------------------------------
  // Usefulness of a wildcard row against the unguarded arms (Maranget). Work is
  // capped so that a pathological match cannot take forever.
  using Row = std::vector<const Pattern*>;
  unsigned work_ = 0;

  // Constructors of a type: count, or -1 for "infinitely many" (ints...).
  int ctorCount(Ty* t) {
    t = resolve(t);
    if (Ty* ex = expandAlias(T, t)) t = resolve(ex);
    switch (t->kind) {
      case Ty::Prim: return t->prim == Prim::Bool ? 2 : -1;
      case Ty::Unit: return 1;
      case Ty::Tuple: return 1;
      case Ty::Sum: return 2;
      case Ty::Named: return t->decl->kind == TypeDecl::Data ? static_cast<int>(t->decl->ctorTys.size())
                            : t->decl->kind == TypeDecl::Record ? -1 : -1;
      default: return -1;
    }
  }
  // Which constructor a pattern is (for the column's type), or -1 for a wildcard.
  static int ctorOf(const Pattern* p) {
    if (!p) return -1;
    switch (p->kind) {
      case Pattern::Wild:
      case Pattern::Var: return -1;
      case Pattern::Bool: return p->bval ? 0 : 1;
      case Pattern::Unit:
      case Pattern::Tuple: return 0;
      case Pattern::Ctor: return p->ctorIndex;
      default: return -2;  // a literal
    }
  }
  std::vector<Ty*> subTypes(Ty* t, int ctor, size_t n) {
    t = resolve(t);
    if (Ty* ex = expandAlias(T, t)) t = resolve(ex);
    std::vector<Ty*> out;
    if (t->kind == Ty::Tuple) return t->args;
    if (t->kind == Ty::Sum) return {t->args[ctor]};
    if (t->kind == Ty::Named && t->decl->kind == TypeDecl::Data && ctor >= 0 && static_cast<size_t>(ctor) < t->decl->ctorTys.size())
      return ctorFields(T, t, ctor);
    out.assign(n, T.error());
    return out;
  }
  static size_t arity(const Pattern* p) { return p && (p->kind == Pattern::Tuple || p->kind == Pattern::Ctor) ? p->args.size() : 0; }

  bool useful(const std::vector<Row>& rows, const std::vector<Ty*>& types) {
    if (++work_ > 200000) return false;
    if (types.empty()) return rows.empty();
    Ty* t0 = types[0];
    std::vector<Ty*> rest(types.begin() + 1, types.end());
    int n = ctorCount(t0);
    std::set<int> seen;
    for (const Row& r : rows) {
      int c = ctorOf(r[0]);
      if (c >= 0) seen.insert(c);
    }
    auto specialize = [&](int c, size_t ar) {
      std::vector<Row> out;
      for (const Row& r : rows) {
        int rc = ctorOf(r[0]);
        if (rc == c) {
          Row nr;
          for (size_t i = 0; i < ar; ++i) nr.push_back(i < arity(r[0]) ? r[0]->args[i].get() : nullptr);
          nr.insert(nr.end(), r.begin() + 1, r.end());
          out.push_back(std::move(nr));
        } else if (rc == -1) {
          Row nr(ar, nullptr);
          nr.insert(nr.end(), r.begin() + 1, r.end());
          out.push_back(std::move(nr));
        }
      }
      return out;
    };
    if (n > 0 && static_cast<int>(seen.size()) == n) {
      for (int c = 0; c < n; ++c) {
        std::vector<Ty*> sub = subTypes(t0, c, 0);
        std::vector<Ty*> nt = sub;
        nt.insert(nt.end(), rest.begin(), rest.end());
        if (useful(specialize(c, sub.size()), nt)) return true;
      }
      return false;
    }
    // Default matrix: rows whose first pattern is a wildcard.
    std::vector<Row> def;
    for (const Row& r : rows)
      if (ctorOf(r[0]) == -1) def.push_back(Row(r.begin() + 1, r.end()));
    return useful(def, rest);
  }

  void checkExhaustive(Expr& e, Ty* s) {
    std::vector<Row> rows;
    for (Arm& a : e.arms)
      if (!a.guard) rows.push_back({a.pat.get()});
    work_ = 0;
    if (useful(rows, {s}))
      error("E105", e.span, "this match does not cover every value of type " + show(s),
            "add the missing cases, or a final `| _ => ...` arm (arms with guards do not count)");
  }
};

}  // namespace

bool typeCheck(Checked& c, DiagSink& diags) { return TypeChecker(c, diags).run(); }

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
    if (const SourceFile* s = diags.source(d.span.file)) out += renderDiag(d, s->name, s->text);
    else out += renderDiag(d, file, src);
  }
  return out;
}

bool isEphapaxFile(std::string_view path) { return path.size() > 4 && path.substr(path.size() - 4) == ".eph"; }

}  // namespace eph::ephapax
