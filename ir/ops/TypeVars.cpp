// Type variables: search, unification and substitution (see TypeVars.h).
#include "ir/ops/TypeVars.h"

#include "ir/ops/Rules.h"

namespace eph::ir {

bool hasTypeVar(const Type* t) {
  switch (t->kind()) {
    case TypeKind::Var: return true;
    case TypeKind::Vector:
    case TypeKind::Array:
    case TypeKind::Buffer: return hasTypeVar(t->elem());
    case TypeKind::Struct:
    case TypeKind::Sum:
    case TypeKind::Function:
      for (const Type* m : t->members())
        if (hasTypeVar(m)) return true;
      for (const Type* r : t->results())
        if (hasTypeVar(r)) return true;
      return false;
    default: return false;
  }
}

bool opHasTypeVar(const Op& op) {
  for (Value* v : op.operands())
    if (hasTypeVar(v->type())) return true;
  for (unsigned i = 0; i < op.numResults(); ++i)
    if (hasTypeVar(op.result(i)->type())) return true;
  return false;
}

bool isGeneric(const Function& f) { return hasTypeVar(f.type()); }

void collectTypeVars(const Type* t, std::vector<const Type*>& out) {
  switch (t->kind()) {
    case TypeKind::Var:
      if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
      return;
    case TypeKind::Vector:
    case TypeKind::Array:
    case TypeKind::Buffer: return collectTypeVars(t->elem(), out);
    case TypeKind::Struct:
    case TypeKind::Sum:
    case TypeKind::Function:
      for (const Type* m : t->members()) collectTypeVars(m, out);
      for (const Type* r : t->results()) collectTypeVars(r, out);
      return;
    default: return;
  }
}

namespace {

bool unifyAll(std::span<const Type* const> ps, std::span<const Type* const> as, TypeBinding& b) {
  if (ps.size() != as.size()) return false;
  for (size_t i = 0; i < ps.size(); ++i)
    if (!unify(ps[i], as[i], b)) return false;
  return true;
}

}  // namespace

bool unify(const Type* pattern, const Type* actual, TypeBinding& b, bool lend) {
  if (pattern->isVar()) {
    auto [it, fresh] = b.vars.emplace(pattern, actual);
    if (fresh || it->second == actual) return true;
    b.conflict = pattern;
    return false;
  }
  if (!hasTypeVar(pattern))
    return pattern == actual || (lend && rules::passableAs(actual, pattern));
  if (pattern->kind() != actual->kind()) return false;
  switch (pattern->kind()) {
    case TypeKind::Vector:
    case TypeKind::Array:
      return pattern->count() == actual->count() && unify(pattern->elem(), actual->elem(), b);
    case TypeKind::Buffer:
      if (pattern->space() != actual->space()) return false;
      if (!lend && pattern->ownership() != actual->ownership()) return false;
      return unify(pattern->elem(), actual->elem(), b);
    case TypeKind::Struct:
    case TypeKind::Sum: return unifyAll(pattern->members(), actual->members(), b);
    case TypeKind::Function:
      return unifyAll(pattern->members(), actual->members(), b) &&
             unifyAll(pattern->results(), actual->results(), b);
    default: return false;
  }
}

const Type* substitute(Context& ctx, const Type* t, const TypeBinding& b) {
  if (!hasTypeVar(t)) return t;
  auto all = [&](std::span<const Type* const> ts, std::vector<const Type*>& out) {
    for (const Type* m : ts) {
      const Type* s = substitute(ctx, m, b);
      if (!s) return false;
      out.push_back(s);
    }
    return true;
  };
  std::vector<const Type*> ms, rs;
  switch (t->kind()) {
    case TypeKind::Var: {
      const Type* bound = b.lookup(t);
      return bound ? bound : t;
    }
    case TypeKind::Vector: {
      const Type* e = substitute(ctx, t->elem(), b);
      if (!e || !(e->isScalar() || e->isVar())) return nullptr;
      return e->isVar() ? t : ctx.vectorType(e, t->count());
    }
    case TypeKind::Array: {
      const Type* e = substitute(ctx, t->elem(), b);
      return e ? ctx.arrayType(e, t->count()) : nullptr;
    }
    case TypeKind::Buffer: {
      const Type* e = substitute(ctx, t->elem(), b);
      return e ? ctx.bufferType(e, t->space(), t->ownership()) : nullptr;
    }
    case TypeKind::Struct: return all(t->members(), ms) ? ctx.structType(ms) : nullptr;
    case TypeKind::Sum: return all(t->members(), ms) ? ctx.sumType(ms) : nullptr;
    case TypeKind::Function:
      return all(t->members(), ms) && all(t->results(), rs) ? ctx.functionType(ms, rs) : nullptr;
    default: return t;
  }
}

std::string bindingText(const TypeBinding& b) {
  std::string s;
  for (auto& [var, type] : b.vars) s += (s.empty() ? "" : ", ") + var->str() + " = '" + type->str() + "'";
  return s;
}

std::string checkCallTypes(const Function& callee, std::span<const Type* const> args,
                           std::span<const Type* const> results, TypeBinding& b) {
  using rules::typeStr;
  Context& ctx = callee.module()->context();
  auto params = callee.paramTypes();
  // With `!T = ...`: what the variables of a generic callee stand for here.
  auto with = [&](const Type* expected) {
    if (!hasTypeVar(expected) || b.empty()) return std::string();
    return " (with " + bindingText(b) + ")";
  };
  for (size_t i = 0; i < params.size() && i < args.size(); ++i) {
    bool ok = unify(params[i], args[i], b, /*lend=*/true);
    const Type* want = ok ? substitute(ctx, params[i], b) : nullptr;
    if (!want || !rules::passableAs(args[i], want))
      return "argument " + std::to_string(i) + " has type " + typeStr(args[i]) + " but @" +
             callee.name() + " expects " + typeStr(params[i]) + with(params[i]);
  }
  auto want = callee.resultTypes();
  bool ok = want.size() == results.size();
  for (size_t i = 0; ok && i < want.size(); ++i) ok = unify(want[i], results[i], b);
  if (!ok) {
    std::vector<const Type*> got(results.begin(), results.end()), w(want.begin(), want.end());
    std::string withText = b.empty() || !isGeneric(callee) ? "" : " (with " + bindingText(b) + ")";
    return "results " + rules::typeList(got) + " do not match @" + callee.name() + "'s " +
           rules::typeList(w) + withText;
  }
  return {};
}

}  // namespace eph::ir
