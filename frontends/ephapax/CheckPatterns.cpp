// Pass 1 of the Ephapax checker: patterns (let and match bindings), match and case,
// and match exhaustiveness (usefulness, Maranget).
// (TypeChecker methods; see TypeChecker.h for the other parts.)
#include "frontends/ephapax/TypeChecker.h"

namespace eph::ephapax::checking {

// ---- patterns, match, case ----------------------------------------------------
void TypeChecker::bindPattern(Pattern& p, Ty* t, Binding::Origin origin, bool inLet) {
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

Ty* TypeChecker::inferMatch(Expr& e) {
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

Ty* TypeChecker::inferCase(Expr& e) {
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

// ---- exhaustiveness --------------------------------------------------------------
// Constructors of a type: count, or -1 for "infinitely many" (ints...).
int TypeChecker::ctorCount(Ty* t) {
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
int TypeChecker::ctorOf(const Pattern* p) {
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

std::vector<Ty*> TypeChecker::subTypes(Ty* t, int ctor, size_t n) {
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

bool TypeChecker::useful(const std::vector<Row>& rows, const std::vector<Ty*>& types) {
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

void TypeChecker::checkExhaustive(Expr& e, Ty* s) {
  std::vector<Row> rows;
  for (Arm& a : e.arms)
    if (!a.guard) rows.push_back({a.pat.get()});
  work_ = 0;
  if (useful(rows, {s}))
    error("E105", e.span, "this match does not cover every value of type " + show(s),
          "add the missing cases, or a final `| _ => ...` arm (arms with guards do not count)");
}

}  // namespace eph::ephapax::checking
