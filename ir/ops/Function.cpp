// Function values: `func.ref` names a function as a value of its function
// type, and `call.indirect` calls such a value.
//
//   %f = func.ref {callee = @double} : fn(f32) -> (f32)
//   %y = call.indirect %f, %x : f32
//
// A reference to a generic function takes the type of one of its instances
// (the callee's type variables are bound by unifying its type with the
// result type). Kernels and device functions may refer only to device
// functions. The `monomorphize` pass turns a `call.indirect` of a known
// `func.ref` into a direct `call`, so kernels end up with no function values.
//
// Interpreter: a function value holds the ir::Function* it names in
// RtValue::i; `call.indirect` calls it like `call` does.
#include "ir/interp/Exec.h"
#include "ir/ops/Rules.h"
#include "ir/ops/TypeVars.h"

namespace eph::ir {
namespace {
using namespace rules;

const Function* calleeOf(const Op& op) {
  const Attr* a = op.attr("callee");
  const Function* f = op.parentFunction();
  if (!a || a->kind != Attr::Kind::Symbol || !f) return nullptr;
  return f->module()->lookup(a->s);
}

std::string verifyFuncRef(const Op& op) {
  if (auto e = needAttr(op, "callee", Attr::Kind::Symbol, "the function to refer to"); !e.empty()) return e;
  const Function* callee = calleeOf(op);
  if (!callee) return "refers to unknown function @" + op.symbolAttr("callee");
  if (callee->isKernel())
    return "cannot take kernel @" + callee->name() + " as a function value; use 'dispatch'";
  const Function* here = op.parentFunction();
  if (!here->isHost() && callee->isHost())
    return std::string(here->isKernel() ? "a kernel" : "a device function") +
           " may refer only to device functions, but @" + callee->name() + " is a host function";
  const Type* t = resultType(op);
  if (!t->isFunction()) return "result must be a function type, got " + typeStr(t);
  TypeBinding binding;
  if (!unify(callee->type(), t, binding))
    return "@" + callee->name() + " has type " + typeStr(callee->type()) + " but the result has type " +
           typeStr(t);
  return {};
}

std::string verifyCallIndirect(const Op& op) {
  if (op.numOperands() < 1) return "needs the function value to call";
  const Type* fn = operandType(op, 0);
  if (!fn->isFunction()) return "operand 0 must be a function value, got " + typeStr(fn);
  auto params = fn->members();
  if (op.numOperands() - 1 != params.size())
    return typeStr(fn) + " takes " + countOf(params.size(), "argument") + ", got " +
           std::to_string(op.numOperands() - 1);
  for (unsigned i = 0; i < params.size(); ++i)
    if (!passableAs(operandType(op, i + 1), params[i]))
      return "argument " + std::to_string(i) + " has type " + typeStr(operandType(op, i + 1)) +
             " but the function expects " + typeStr(params[i]);
  std::vector<const Type*> want(fn->results().begin(), fn->results().end());
  if (resultTypes(op) != want)
    return "results " + typeList(resultTypes(op)) + " do not match the function's " + typeList(want);
  return {};
}

// Like `call`: linear and affine parameters consume, borrowed buffers are lent.
Effect callIndirectEffect(const Op& op, unsigned i) {
  if (i == 0) return Effect::None;
  const Type* fn = operandType(op, 0);
  const Type* t = fn->isFunction() && i - 1 < fn->members().size() ? fn->members()[i - 1]
                                                                    : operandType(op, i);
  if (t->isLinear() || t->isAffine()) return Effect::Consume;
  if (t->isBuffer()) return t->ownership() == Ownership::Write ? Effect::Write : Effect::Read;
  return Effect::None;
}

// ---- interpreter semantics -------------------------------------------------

bool interpFuncRef(interp::Exec& ex, const Op& op) {
  const Function* callee = calleeOf(op);
  if (!callee) return ex.fail(op, "refers to unknown function @" + op.symbolAttr("callee"));
  interp::RtValue v;
  v.type = resultType(op);
  v.i = static_cast<int64_t>(reinterpret_cast<intptr_t>(callee));
  return ex.setResult(op, std::move(v));
}

bool interpCallIndirect(interp::Exec& ex, const Op& op) {
  const auto* callee = reinterpret_cast<const Function*>(static_cast<intptr_t>(ex.operand(op, 0).i));
  if (!callee) return ex.fail(op, "call of a function value that names no function");
  std::vector<interp::RtValue> results;
  if (!ex.callFunction(&op, *callee, ex.operands(op, 1), results)) return false;
  return ex.setResults(op, std::move(results));
}

OpInfo kOps[] = {
    {.name = "func.ref", .numOperands = 0, .numResults = 1, .flags = kPure | kTypeVarAware,
     .verify = verifyFuncRef, .interp = interpFuncRef,
     .summary = "a function as a value: %f = func.ref {callee = @f} : fn(T...) -> (R...)"},
    {.name = "call.indirect", .numOperands = kVariadic, .numResults = kVariadic, .flags = kTypeVarAware,
     .effectFn = callIndirectEffect, .verify = verifyCallIndirect, .interp = interpCallIndirect,
     .summary = "call.indirect %f, %args... : R...: call a function value"},
};

}  // namespace

void registerFunctionOps(OpTable& t) { t.add(kOps); }

}  // namespace eph::ir
