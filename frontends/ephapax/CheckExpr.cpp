// Pass 1 of the Ephapax checker: scopes of locals and expressions: variables, let,
// lambdas, regions, effect handlers, operators, members, records.
// (TypeChecker methods; see TypeChecker.h for the other parts.)
#include "frontends/ephapax/TypeChecker.h"

#include <algorithm>

namespace eph::ephapax::checking {

// ---- scopes -------------------------------------------------------------------
Binding* TypeChecker::lookupLocal(const std::string& name) {
  for (size_t i = scope_.size(); i-- > 0;)
    if (scope_[i]->name == name) return scope_[i];
  return nullptr;
}

Binding* TypeChecker::bind(Binding::Origin o, const std::string& name, Span s, Ty* t) {
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

// ---- expressions -----------------------------------------------------------
Ty* TypeChecker::infer(Expr& e) {
  e.kernelCode = inKernel_;
  if (isChainLink(e)) return inferChain(e);
  Ty* t = inferKind(e);
  e.ty = t;
  return t;
}

Ty* TypeChecker::inferKind(Expr& e) {
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

Ty* TypeChecker::inferVar(Expr& e) {
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

Ty* TypeChecker::inferLet(Expr& e) {
  size_t mark = scope_.size();
  bindLet(e);
  Ty* body = e.kids.size() > 1 ? infer(*e.kids[1]) : T.unit();
  scope_.resize(mark);
  return body;
}

Ty* TypeChecker::inferLambda(Expr& e) {
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

Ty* TypeChecker::inferRegion(Expr& e) {
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

Ty* TypeChecker::inferHandle(Expr& e) {
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
bool TypeChecker::numericNow(Expr& e, Ty* t, const std::string& op) {
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

Ty* TypeChecker::inferBinary(Expr& e) {
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

Ty* TypeChecker::inferMember(Expr& e) {
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

void TypeChecker::inferMemberLate(Expr& e) {
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

Ty* TypeChecker::inferMemberOn(Expr& e, Ty* r) {
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

Ty* TypeChecker::inferRecord(Expr& e) {
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

Ty* TypeChecker::intVar() {
  Ty* v = T.var();
  v->intLit = true;
  intVars_.push_back(v);
  return v;
}

}  // namespace eph::ephapax::checking
