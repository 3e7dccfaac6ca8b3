// Pass 1 of the checker: names, types, regions, arity, exhaustiveness.
#include "frontends/ephapax/Checker.h"

#include "frontends/ephapax/Parser.h"

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
  TypeChecker(Checked& c, DiagSink& d) : c_(c), T(c.types), diags_(d) {}

  bool run() {
    size_t before = diags_.size();
    declareTypes();
    declareFunctions();
    for (auto& k : c_.prog.consts) checkConst(*k);
    for (auto& f : c_.prog.fns)
      if (!f->isExtern && f->body && f->type) checkFn(*f);
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
        return T.named(d, std::move(args));
      }
    }
    return T.error();
  }

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
    for (auto& d : c_.prog.types) {
      if (c_.typeDecls[d->name] != d.get()) continue;  // a duplicate (reported)
      typeVars_.clear();
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
    for (auto& d : c_.prog.types)
      if (d->kind == TypeDecl::Data && c_.typeDecls[d->name] == d.get()) d->recursive = dataRecursive(d.get());
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
      for (Param& p : f.params) f.paramTys.push_back(convert(p.type.get()));
      f.retTy = f.ret ? convert(f.ret.get()) : nullptr;
      implicitTypeVars_ = false;
      newTypeParams_ = nullptr;
      if (!f.retTy) {
        if (f.isExtern) f.retTy = T.unit();
        else if (!f.typeParamTys.empty()) {
          error("E108", f.span, "generic function `" + f.name + "` needs a result type annotation");
          f.retTy = T.error();
        } else {
          f.retTy = T.var();
        }
      }
      Ty* t = f.retTy;
      if (f.params.empty()) t = T.fn(T.unit(), t);
      for (size_t k = f.params.size(); k-- > 0;) t = T.fn(f.paramTys[k], t);
      f.type = t;
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
    finishInference();
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
    for (Expr* e : deferredMembers_) inferMemberLate(*e);
    deferredMembers_.clear();
    for (auto& [e, t] : numericChecks_) {
      Ty* r = core(t);
      if (r->kind == Ty::Var) unify(T, r, T.prim(Prim::I32));
      else if (!isNumeric(r) && r->kind != Ty::Error)
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
    for (size_t i = 0; i < d->paramTys.size(); ++i) inst.push_back(T.var());
    Ty* result = T.named(d, inst);
    if (variant >= 0 && static_cast<size_t>(variant) < d->ctorTys.size()) fields = ctorFields(T, result, variant);
    return result;
  }

  // ---- expressions -----------------------------------------------------------
  Ty* infer(Expr& e) {
    Ty* t = inferKind(e);
    e.ty = t;
    return t;
  }

  Ty* inferKind(Expr& e) {
    switch (e.kind) {
      case ExprKind::IntLit: return intLiteral(e.span, e.ival, e.bval);
      case ExprKind::FloatLit: return T.prim(Prim::F64);
      case ExprKind::BoolLit: return T.prim(Prim::Bool);
      case ExprKind::StrLit: return T.string(T.region(-1, "_"));
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
        return numericNow(e, t, "-") ? t : T.error();
      }
      case ExprKind::Call: return inferCall(e);
      case ExprKind::Index: {
        Ty* base = infer(*e.kids[0]);
        expectTy(e.kids[1]->span, T.prim(Prim::I32), infer(*e.kids[1]), " (a list index)");
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
        return T.var();
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
      return instantiate(*c_.prog.fns[it->second], e.inst);
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
                "`; return something computed from it instead (e.g. String.len)");
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
        if (!unify(T, a, b)) {
          error("E101", e.kids[1]->span, "type mismatch: `" + op + "` needs operands of one type, got " + show(a) + " and " + show(b));
          return T.error();
        }
        if (!numericNow(e, a, op)) return T.error();
        return a;
    }
  }

  Ty* inferCall(Expr& e) {
    Expr& callee = *e.kids[0];
    size_t nargs = e.kids.size() - 1;
    Ty* ft = infer(callee);
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
    for (size_t i = 1; i < e.kids.size(); ++i) {
      Ty* a = infer(*e.kids[i]);
      Ty* c = resolve(cur);
      if (c->kind == Ty::Error) continue;
      if (c->kind == Ty::Var) {
        Ty* r = T.var();
        unify(T, c, T.fn(a, r));
        cur = r;
        continue;
      }
      if (c->kind != Ty::Fn) {
        if (i == 1) error("E101", callee.span, "only functions can be called; this has type " + show(ft));
        else error("E106", e.span, "too many arguments: the function takes " + std::to_string(i - 1));
        return T.error();
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
  (void)opts;  // TODO(gpu): affine mode
  auto c = std::make_unique<Checked>();
  size_t before = diags.size();
  c->prog = parseProgram(src, diags);
  if (diags.size() != before) return nullptr;
  bool typed = typeCheck(*c, diags);
  // Ownership errors of the functions that type-checked are independent.
  checkOwnership(*c, diags);
  if (!typed) return nullptr;
  return c;
}

std::string renderAll(const DiagSink& diags, std::string_view file, std::string_view src) {
  std::string out;
  for (const Diag& d : diags.all()) out += renderDiag(d, file, src);
  return out;
}

bool isEphapaxFile(std::string_view path) { return path.size() > 4 && path.substr(path.size() - 4) == ".eph"; }

}  // namespace eph::ephapax
