// Type variables (`!T`) in generic functions: finding them, binding them by
// unification against the types at a call site, and substituting them.
//
// A function is generic when its signature mentions a type variable. The
// verifier checks a call or dispatch of a generic callee by unifying the
// callee's parameter and result types with the operand and result types (one
// binding per variable, consistent across all of them); the `monomorphize`
// pass (passes/Monomorphize.cpp) uses the same binding to build an instance.
// The caller's own type variables are rigid: they are bound to, never bound.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace eph::ir {

// Does `t` mention a type variable anywhere (element, field, parameter, result)?
bool hasTypeVar(const Type* t);
// Does the op's operand or result types mention one?
bool opHasTypeVar(const Op& op);
// Does the function's signature mention one?
bool isGeneric(const Function& f);

// The type variables of `t`, in order of first appearance, appended to `out`
// (no duplicates).
void collectTypeVars(const Type* t, std::vector<const Type*>& out);

// Variable -> type. `conflict` names the variable whose second binding failed.
struct TypeBinding {
  std::map<const Type*, const Type*> vars;
  const Type* conflict = nullptr;
  bool empty() const { return vars.empty(); }
  const Type* lookup(const Type* var) const {
    auto it = vars.find(var);
    return it == vars.end() ? nullptr : it->second;
  }
};

// Binds the variables of `pattern` so that it equals `actual`. With `lend`, a
// buffer pattern matches any buffer of the same space (the caller checks the
// ownership with rules::passableAs after substituting). False when they cannot
// match; binding.conflict is set when a variable was already bound to a
// different type.
bool unify(const Type* pattern, const Type* actual, TypeBinding& binding, bool lend = false);

// `t` with every bound variable replaced; unbound ones stay. Null when the
// result is not a valid type (a vector of a non-scalar).
const Type* substitute(Context& ctx, const Type* t, const TypeBinding& binding);

// "!T = 'i32', !U = 'f32'" for messages.
std::string bindingText(const TypeBinding& binding);

// Checks that values of types `args` may be passed to `callee` and that its
// results have types `results`, binding the callee's type variables. Returns
// an empty string when they fit, else the message ("argument 1 has type ...").
std::string checkCallTypes(const Function& callee, std::span<const Type* const> args,
                           std::span<const Type* const> results, TypeBinding& binding);

}  // namespace eph::ir
