// Structured control flow and calls: if, for, while, match, their terminators
// (yield, condition), return and call. Regions are single blocks; values flow
// out of a region only through its terminator.
#include "ir/interp/Exec.h"
#include "ir/ops/Rules.h"
#include "ir/ops/TypeVars.h"

namespace eph::ir {
namespace {
using namespace rules;

// Region `r` has arguments of types `args` and ends in a `terminator` whose
// operands have types `yields`.
std::string checkRegion(const Op& op, unsigned r, const std::vector<const Type*>& args,
                        std::string_view terminator, const std::vector<const Type*>& yields) {
  const Region& reg = op.region(r);
  std::string where = "region " + std::to_string(r);
  if (typesOf(reg.args()) != args)
    return where + " has arguments " + typeList(typesOf(reg.args())) + ", expected " + typeList(args);
  const Op* t = reg.back();
  if (!t || t->name() != terminator)
    return where + " must end with '" + std::string(terminator) + "'";
  if (typesOf(t->operands()) != yields)
    return where + " yields " + typeList(typesOf(t->operands())) + ", expected " + typeList(yields);
  return {};
}

std::string verifyIf(const Op& op) {
  if (!operandType(op, 0)->isBool()) return "condition must be 'bool', got " + typeStr(operandType(op, 0));
  for (unsigned r = 0; r < 2; ++r)
    if (auto e = checkRegion(op, r, {}, "yield", resultTypes(op)); !e.empty()) return e;
  return {};
}

std::string verifyFor(const Op& op) {
  if (op.numOperands() < 3) return "needs lower bound, upper bound and step";
  const Type* iv = operandType(op, 0);
  if (!iv->isInt()) return "bounds must be integers, got " + typeStr(iv);
  if (operandType(op, 1) != iv || operandType(op, 2) != iv)
    return "lower bound, upper bound and step must have the same type";
  std::vector<const Type*> carried;
  for (unsigned i = 3; i < op.numOperands(); ++i) carried.push_back(operandType(op, i));
  if (carried != resultTypes(op))
    return "results " + typeList(resultTypes(op)) + " must match the loop-carried values " +
           typeList(carried);
  std::vector<const Type*> args = {iv};
  args.insert(args.end(), carried.begin(), carried.end());
  return checkRegion(op, 0, args, "yield", carried);
}

std::string verifyWhile(const Op& op) {
  auto inits = typesOf(op.operands());
  const Region& before = op.region(0);
  if (auto e = checkRegion(op, 0, inits, "condition", typesOf(before.back() ? before.back()->operands() : std::vector<Value*>{})); !e.empty())
    return e;
  const Op* cond = before.back();
  if (cond->numOperands() == 0 || !cond->operand(0)->type()->isBool())
    return "'condition' needs a bool first operand";
  std::vector<const Type*> forwarded;
  for (unsigned i = 1; i < cond->numOperands(); ++i) forwarded.push_back(cond->operand(i)->type());
  if (forwarded != resultTypes(op))
    return "results " + typeList(resultTypes(op)) + " must match the values 'condition' forwards " +
           typeList(forwarded);
  return checkRegion(op, 1, forwarded, "yield", inits);
}

std::string verifyMatch(const Op& op) {
  const Type* s = operandType(op, 0);
  if (!s->isSum()) return "operand must be a sum, got " + typeStr(s);
  if (op.numRegions() != s->members().size())
    return typeStr(s) + " has " + countOf(s->members().size(), "variant") + " but the op has " +
           countOf(op.numRegions(), "region");
  for (unsigned r = 0; r < op.numRegions(); ++r)
    if (auto e = checkRegion(op, r, {s->members()[r]}, "yield", resultTypes(op)); !e.empty()) return e;
  return {};
}

std::string verifyYield(const Op& op) {
  const Op* parent = op.parentOp();
  if (!parent) return "must be inside an 'if', 'for', 'while' or 'match' region";
  if (parent->is(OpId::While) && &parent->region(0) == op.parentRegion())
    return "the first region of 'while' ends with 'condition', not 'yield'";
  if (parent->info().regionKind == RegionKind::None)
    return "cannot end a region of '" + std::string(parent->name()) + "'";
  return {};  // types are checked by the parent
}

std::string verifyCondition(const Op& op) {
  const Op* parent = op.parentOp();
  if (!parent || !parent->is(OpId::While) || &parent->region(0) != op.parentRegion())
    return "must end the first region of a 'while'";
  return {};
}

std::string verifyReturn(const Op& op) {
  const Function* f = op.parentFunction();
  if (!f || op.parentOp()) return "must end a function body, not a nested region";
  std::vector<const Type*> want(f->resultTypes().begin(), f->resultTypes().end());
  if (typesOf(op.operands()) != want)
    return "returns " + typeList(typesOf(op.operands())) + " but @" + f->name() + " returns " +
           typeList(want);
  return {};
}

const Function* calleeOf(const Op& op) {
  const Attr* a = op.attr("callee");
  const Function* f = op.parentFunction();
  if (!a || a->kind != Attr::Kind::Symbol || !f) return nullptr;
  return f->module()->lookup(a->s);
}

std::string verifyCall(const Op& op) {
  if (auto e = needAttr(op, "callee", Attr::Kind::Symbol, "the function to call"); !e.empty()) return e;
  const Function* callee = calleeOf(op);
  if (!callee) return "calls unknown function @" + op.symbolAttr("callee");
  if (callee->isKernel()) return "cannot call kernel @" + callee->name() + "; use 'dispatch'";
  auto params = callee->paramTypes();
  if (op.numOperands() != params.size())
    return "@" + callee->name() + " takes " + countOf(params.size(), "argument") + ", got " +
           std::to_string(op.numOperands());
  // A generic callee's type variables are bound by unification (TypeVars.h).
  TypeBinding binding;
  return checkCallTypes(*callee, typesOf(op.operands()), resultTypes(op), binding);
}

// Passing a value to a parameter of linear/affine type moves it; a buffer
// parameter of borrowed type lends it.
Effect callEffect(const Op& op, unsigned i) {
  const Function* callee = calleeOf(op);
  const Type* t = callee && i < callee->paramTypes().size() ? callee->paramTypes()[i] : op.operand(i)->type();
  if (t->isLinear() || t->isAffine()) return Effect::Consume;
  if (t->isBuffer()) return t->ownership() == Ownership::Write ? Effect::Write : Effect::Read;
  return Effect::None;
}

// Terminators hand their operands to the enclosing op or the caller.
Effect moveOut(const Op& op, unsigned i) {
  const Type* t = op.operand(i)->type();
  return t->isLinear() || t->isAffine() ? Effect::Consume : Effect::None;
}

// ---- interpreter semantics -------------------------------------------------

bool interpIf(interp::Exec& ex, const Op& op) {
  std::vector<interp::RtValue> results;
  if (!ex.runRegion(op.region(ex.operand(op, 0).i ? 0 : 1), {}, results)) return false;
  return ex.setResults(op, std::move(results));
}

// iv runs from lo by step while iv < hi (step > 0) or iv > hi (step < 0,
// signed types only), compared exactly (no wrap-around) in the type's
// signedness. A step of zero is an error.
bool interpFor(interp::Exec& ex, const Op& op) {
  const Type* t = operandType(op, 0);
  auto wide = [&](const interp::RtValue& v) -> __int128 {
    return t->isSigned() ? __int128(v.i) : __int128(static_cast<uint64_t>(v.i));
  };
  __int128 iv = wide(ex.operand(op, 0)), hi = wide(ex.operand(op, 1)), step = wide(ex.operand(op, 2));
  if (step == 0) return ex.fail(op, "'for' has a step of 0");
  std::vector<interp::RtValue> carried = ex.operands(op, 3);
  std::vector<interp::RtValue> args;
  while (step > 0 ? iv < hi : iv > hi) {
    args.assign(1, interp::RtValue::ofInt(t, static_cast<int64_t>(iv)));
    args.insert(args.end(), carried.begin(), carried.end());
    if (!ex.runRegion(op.region(0), args, carried)) return false;
    iv += step;
  }
  return ex.setResults(op, std::move(carried));
}

// Region 0 computes `condition %c, %fwd...`; if c, region 1 runs on fwd and
// its yield feeds region 0 again; otherwise the results are fwd.
bool interpWhile(interp::Exec& ex, const Op& op) {
  std::vector<interp::RtValue> values = ex.operands(op), cond;
  while (true) {
    if (!ex.runRegion(op.region(0), values, cond)) return false;
    bool go = cond[0].i != 0;
    std::vector<interp::RtValue> forwarded(cond.begin() + 1, cond.end());
    if (!go) return ex.setResults(op, std::move(forwarded));
    if (!ex.runRegion(op.region(1), forwarded, values)) return false;
  }
}

// Runs the region of the sum's variant with its payload.
bool interpMatch(interp::Exec& ex, const Op& op) {
  const interp::RtValue& sum = ex.operand(op, 0);
  std::vector<interp::RtValue> payload = sum.elems, results;
  if (!ex.runRegion(op.region(static_cast<unsigned>(sum.i)), payload, results)) return false;
  return ex.setResults(op, std::move(results));
}

bool interpTerminator(interp::Exec& ex, const Op& op) { return ex.terminate(op); }

bool interpCall(interp::Exec& ex, const Op& op) {
  const Function* callee = calleeOf(op);
  if (!callee) return ex.fail(op, "calls unknown function @" + op.symbolAttr("callee"));
  std::vector<interp::RtValue> results;
  if (!ex.callFunction(&op, *callee, ex.operands(op), results)) return false;
  return ex.setResults(op, std::move(results));
}

OpInfo kOps[] = {
    {.name = "if", .numOperands = 1, .numResults = kVariadic, .numRegions = 2,
     .verify = verifyIf, .interp = interpIf, .summary = "if %c : T... { then; yield } { else; yield }",
     .regionKind = RegionKind::Branches,
     .diffTest = "VulkanDifferential.ControlFlowAndCalls"},
    {.name = "for", .numOperands = kVariadic, .numResults = kVariadic, .numRegions = 1,
     .effectFn = moveOut, .verify = verifyFor, .interp = interpFor,
     .summary = "for %lo, %hi, %step, %init... : T... { |%i, %acc...| ...; yield %acc'... }",
     .regionKind = RegionKind::Loop,
     .diffTest = "VulkanDifferential.ControlFlowAndCalls"},
    {.name = "while", .numOperands = kVariadic, .numResults = kVariadic, .numRegions = 2,
     .effectFn = moveOut, .verify = verifyWhile, .interp = interpWhile,
     .summary = "while %init... : T... { |%a...| ...; condition %c, %v... } { |%v...| ...; yield %a'... }",
     .regionKind = RegionKind::Loop,
     .diffTest = "VulkanDifferential.ControlFlowAndCalls"},
    {.name = "match", .numOperands = 1, .numResults = kVariadic, .numRegions = kVariadic,
     .effectFn = moveOut, .verify = verifyMatch, .interp = interpMatch,
     .summary = "match %sum : T... { |%payload0| ... } { |%payload1| ... } (one region per variant)",
     .regionKind = RegionKind::Branches,
     .diffTest = "VulkanDifferential.StructsArraysAndSums"},
    {.name = "yield", .numOperands = kVariadic, .numResults = 0, .flags = kTerminator,
     .effectFn = moveOut, .verify = verifyYield, .interp = interpTerminator, .summary = "ends a region of if/for/while/match",
     .diffTest = "VulkanDifferential.ControlFlowAndCalls"},
    {.name = "condition", .numOperands = kVariadic, .numResults = 0, .flags = kTerminator,
     .effectFn = moveOut, .verify = verifyCondition, .interp = interpTerminator,
     .summary = "ends the first region of while: continue if %c, forwarding values",
     .diffTest = "VulkanDifferential.ControlFlowAndCalls"},
    {.name = "return", .numOperands = kVariadic, .numResults = 0, .flags = kTerminator,
     .effectFn = moveOut, .verify = verifyReturn, .interp = interpTerminator, .summary = "ends a function body",
     .diffTest = "VulkanDifferential.ControlFlowAndCalls"},
    {.name = "call", .numOperands = kVariadic, .numResults = kVariadic,
     .flags = kTypeVarAware, .effectFn = callEffect, .verify = verifyCall, .interp = interpCall, .summary = "call @callee with arguments",
     .diffTest = "VulkanDifferential.ControlFlowAndCalls"},
};

}  // namespace

void registerControlOps(OpTable& t) { t.add(kOps); }

}  // namespace eph::ir
