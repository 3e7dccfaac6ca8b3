// Vectors, structs (tuples), tagged sums and fixed arrays: construct, extract,
// insert, and the geometric vector functions.
#include "ir/interp/Elementwise.h"
#include "ir/ops/Rules.h"

namespace eph::ir {
namespace {
using namespace rules;

std::string verifyVecMake(const Op& op) {
  const Type* v = resultType(op);
  if (!v->isVector()) return "result must be a vector, got " + typeStr(v);
  if (op.numOperands() != v->count())
    return typeStr(v) + " needs " + std::to_string(v->count()) + " operands, got " +
           std::to_string(op.numOperands());
  for (unsigned i = 0; i < op.numOperands(); ++i)
    if (operandType(op, i) != v->elem())
      return "operand " + std::to_string(i) + " has type " + typeStr(operandType(op, i)) +
             ", expected " + typeStr(v->elem());
  return {};
}

// Checks operand 0 is an aggregate of `kind` and attribute `index` picks a member;
// returns the member type through `member`.
std::string memberAt(const Op& op, TypeKind kind, const char* what, const Type*& member) {
  const Type* a = operandType(op, 0);
  if (a->kind() != kind) return "operand 0 must be a " + std::string(what) + ", got " + typeStr(a);
  unsigned n = kind == TypeKind::Vector ? a->count() : static_cast<unsigned>(a->members().size());
  if (auto e = needIndexAttr(op, "index", 0, int64_t(n) - 1); !e.empty()) return e;
  int64_t i = op.intAttr("index");
  member = kind == TypeKind::Vector ? a->elem() : a->members()[i];
  return {};
}

template <TypeKind K>
std::string verifyExtract(const Op& op) {
  const Type* m = nullptr;
  if (auto e = memberAt(op, K, K == TypeKind::Vector ? "vector" : "struct", m); !e.empty()) return e;
  if (resultType(op) != m) return "result must be the member type " + typeStr(m);
  return {};
}

template <TypeKind K>
std::string verifyInsert(const Op& op) {
  const Type* m = nullptr;
  if (auto e = memberAt(op, K, K == TypeKind::Vector ? "vector" : "struct", m); !e.empty()) return e;
  if (operandType(op, 1) != m) return "inserted value must have the member type " + typeStr(m);
  if (resultType(op) != operandType(op, 0)) return "result must have the aggregate's type";
  return {};
}

std::string verifyVecFloat(const Op& op, bool scalarResult, unsigned needCount) {
  const Type* v = operandType(op, 0);
  if (!v->isVector() || !v->elem()->isFloat())
    return "operands must be float vectors, got " + typeStr(v);
  if (needCount && v->count() != needCount)
    return "operands must have " + std::to_string(needCount) + " elements, got " + typeStr(v);
  for (unsigned i = 1; i < op.numOperands(); ++i)
    if (operandType(op, i) != v) return "operands must have the same type";
  const Type* want = scalarResult ? v->elem() : v;
  if (resultType(op) != want) return "result must be " + typeStr(want);
  return {};
}

std::string verifyDot(const Op& op) { return verifyVecFloat(op, true, 0); }
std::string verifyCross(const Op& op) { return verifyVecFloat(op, false, 3); }
std::string verifyLength(const Op& op) { return verifyVecFloat(op, true, 0); }
std::string verifyNormalize(const Op& op) { return verifyVecFloat(op, false, 0); }

std::string verifyStructMake(const Op& op) {
  const Type* s = resultType(op);
  if (!s->isStruct()) return "result must be a struct, got " + typeStr(s);
  std::vector<const Type*> fields(s->members().begin(), s->members().end());
  if (typesOf(op.operands()) != fields)
    return "operands " + typeList(typesOf(op.operands())) + " do not match fields " +
           typeList(fields);
  return {};
}

std::string verifyStructUnpack(const Op& op) {
  const Type* s = operandType(op, 0);
  if (!s->isStruct()) return "operand must be a struct, got " + typeStr(s);
  std::vector<const Type*> fields(s->members().begin(), s->members().end());
  if (resultTypes(op) != fields)
    return "results " + typeList(resultTypes(op)) + " do not match fields " + typeList(fields);
  return {};
}

std::string verifySumMake(const Op& op) {
  const Type* s = resultType(op);
  if (!s->isSum()) return "result must be a sum, got " + typeStr(s);
  if (auto e = needIndexAttr(op, "tag", 0, int64_t(s->members().size()) - 1); !e.empty()) return e;
  const Type* payload = s->members()[op.intAttr("tag")];
  if (operandType(op, 0) != payload)
    return "variant " + std::to_string(op.intAttr("tag")) + " carries " + typeStr(payload) +
           ", got " + typeStr(operandType(op, 0));
  return {};
}

std::string verifySumTag(const Op& op) {
  if (!operandType(op, 0)->isSum()) return "operand must be a sum, got " + typeStr(operandType(op, 0));
  if (resultType(op) != resultType(op)->scalar() || !resultType(op)->isInt())
    return "result must be an integer";
  return {};
}

std::string verifyArrayMake(const Op& op) {
  const Type* a = resultType(op);
  if (!a->isArray()) return "result must be an array, got " + typeStr(a);
  if (op.numOperands() != a->count())
    return typeStr(a) + " needs " + std::to_string(a->count()) + " operands, got " +
           std::to_string(op.numOperands());
  for (unsigned i = 0; i < op.numOperands(); ++i)
    if (operandType(op, i) != a->elem()) return "operand " + std::to_string(i) + " must be " + typeStr(a->elem());
  return {};
}

std::string verifyArrayGet(const Op& op) {
  const Type* a = operandType(op, 0);
  if (!a->isArray()) return "operand 0 must be an array, got " + typeStr(a);
  if (!operandType(op, 1)->isInt()) return "index must be an integer";
  if (resultType(op) != a->elem()) return "result must be " + typeStr(a->elem());
  return {};
}

std::string verifyArraySet(const Op& op) {
  const Type* a = operandType(op, 0);
  if (!a->isArray()) return "operand 0 must be an array, got " + typeStr(a);
  if (!operandType(op, 1)->isInt()) return "index must be an integer";
  if (operandType(op, 2) != a->elem()) return "value must be " + typeStr(a->elem());
  if (resultType(op) != a) return "result must be " + typeStr(a);
  return {};
}

bool ownsSomething(const Type* t) { return t->isLinear() || t->isAffine(); }

// Aggregates that hold linear values move them: making one consumes the parts,
// and struct.unpack consumes the whole.
Effect consumeLinear(const Op& op, unsigned i) {
  return ownsSomething(op.operand(i)->type()) ? Effect::Consume : Effect::None;
}

// struct.extract moves the struct only when the field it takes out owns
// something; reading a plain field (a length next to a buffer) leaves the
// struct alive. Taking out one of several owned fields would leak the others,
// so that needs struct.unpack.
Effect extractEffect(const Op& op, unsigned i) {
  return ownsSomething(op.result(0)->type()) ? Effect::Consume : Effect::None;
}

// ---- interpreter semantics -------------------------------------------------

// vec.make, struct.make, array.make: the operands become the elements.
bool interpMake(interp::Exec& ex, const Op& op) {
  interp::RtValue v;
  v.type = resultType(op);
  v.elems = ex.operands(op);
  return ex.setResult(op, std::move(v));
}

// vec.extract, struct.extract: member {index}.
bool interpExtract(interp::Exec& ex, const Op& op) {
  return ex.setResult(op, ex.operand(op, 0).elems[op.intAttr("index")]);
}

// struct.unpack: every field at once.
bool interpUnpack(interp::Exec& ex, const Op& op) { return ex.setResults(op, ex.operand(op, 0).elems); }

// vec.insert, struct.insert: the aggregate with member {index} replaced.
bool interpInsert(interp::Exec& ex, const Op& op) {
  interp::RtValue v = ex.operand(op, 0);
  v.elems[op.intAttr("index")] = ex.operand(op, 1);
  return ex.setResult(op, std::move(v));
}

bool interpDot(interp::Exec& ex, const Op& op) {
  return ex.setResult(op, interp::dotProduct(ex.operand(op, 0), ex.operand(op, 1)));
}
bool interpCross(interp::Exec& ex, const Op& op) {
  return ex.setResult(op, interp::crossProduct(ex.operand(op, 0), ex.operand(op, 1)));
}
bool interpLength(interp::Exec& ex, const Op& op) {
  return ex.setResult(op, interp::vectorLength(ex.operand(op, 0)));
}
bool interpNormalize(interp::Exec& ex, const Op& op) {
  return ex.setResult(op, interp::normalizeVector(ex.operand(op, 0)));
}

bool interpSumMake(interp::Exec& ex, const Op& op) {
  interp::RtValue v;
  v.type = resultType(op);
  v.i = op.intAttr("tag");
  v.elems = {ex.operand(op, 0)};
  return ex.setResult(op, std::move(v));
}

bool interpSumTag(interp::Exec& ex, const Op& op) {
  return ex.setResult(op, interp::RtValue::ofInt(resultType(op), ex.operand(op, 0).i));
}

bool interpArrayGet(interp::Exec& ex, const Op& op) {
  const interp::RtValue& a = ex.operand(op, 0);
  size_t i = 0;
  if (!ex.checkIndex(op, ex.operand(op, 1), a.elems.size(), i, "an array")) return false;
  return ex.setResult(op, a.elems[i]);
}

bool interpArraySet(interp::Exec& ex, const Op& op) {
  interp::RtValue a = ex.operand(op, 0);
  size_t i = 0;
  if (!ex.checkIndex(op, ex.operand(op, 1), a.elems.size(), i, "an array")) return false;
  a.elems[i] = ex.operand(op, 2);
  return ex.setResult(op, std::move(a));
}

OpInfo kOps[] = {
    {.name = "vec.make", .numOperands = kVariadic, .numResults = 1, .flags = kPure,
     .verify = verifyVecMake, .interp = interpMake, .summary = "a vector from its elements",
     .diffTest = "VulkanDifferential.Vectors"},
    {.name = "vec.extract", .numOperands = 1, .numResults = 1, .flags = kPure,
     .verify = verifyExtract<TypeKind::Vector>, .interp = interpExtract, .summary = "element {index} of a vector",
     .diffTest = "VulkanDifferential.Vectors"},
    {.name = "vec.insert", .numOperands = 2, .numResults = 1, .flags = kPure,
     .verify = verifyInsert<TypeKind::Vector>, .interp = interpInsert, .summary = "a vector with element {index} replaced",
     .diffTest = "VulkanDifferential.Vectors"},
    {.name = "dot", .numOperands = 2, .numResults = 1, .flags = kPure | kCommutative,
     .verify = verifyDot, .interp = interpDot, .summary = "dot product of float vectors",
     .diffTest = "VulkanDifferential.Vectors"},
    {.name = "cross", .numOperands = 2, .numResults = 1, .flags = kPure, .verify = verifyCross, .interp = interpCross,
     .summary = "cross product of 3-element float vectors",
     .diffTest = "VulkanDifferential.Vectors"},
    {.name = "length", .numOperands = 1, .numResults = 1, .flags = kPure, .verify = verifyLength, .interp = interpLength,
     .summary = "Euclidean length of a float vector",
     .diffTest = "VulkanDifferential.Vectors"},
    {.name = "normalize", .numOperands = 1, .numResults = 1, .flags = kPure,
     .verify = verifyNormalize, .interp = interpNormalize, .summary = "v / length(v)",
     .diffTest = "VulkanDifferential.Vectors"},
    {.name = "struct.make", .numOperands = kVariadic, .numResults = 1, .flags = kPure,
     .effectFn = consumeLinear, .verify = verifyStructMake, .interp = interpMake, .summary = "a struct (tuple) from its fields",
     .diffTest = "VulkanDifferential.StructsArraysAndSums"},
    {.name = "struct.extract", .numOperands = 1, .numResults = 1, .flags = kPure,
     .effectFn = extractEffect, .verify = verifyExtract<TypeKind::Struct>, .interp = interpExtract, .summary = "field {index} of a struct",
     .diffTest = "VulkanDifferential.StructsArraysAndSums"},
    {.name = "struct.unpack", .numOperands = 1, .numResults = kVariadic, .flags = kPure,
     .effectFn = consumeLinear, .verify = verifyStructUnpack, .interp = interpUnpack,
     .summary = "all fields of a struct at once (takes apart a struct holding linear values)",
     .diffTest = "VulkanDifferential.StructsArraysAndSums"},
    {.name = "struct.insert", .numOperands = 2, .numResults = 1, .flags = kPure,
     .effectFn = consumeLinear, .verify = verifyInsert<TypeKind::Struct>, .interp = interpInsert,
     .summary = "a struct with field {index} replaced",
     .diffTest = "VulkanDifferential.StructsArraysAndSums"},
    {.name = "sum.make", .numOperands = 1, .numResults = 1, .flags = kPure,
     .effectFn = consumeLinear, .verify = verifySumMake, .interp = interpSumMake, .summary = "variant {tag} of a sum, with its payload",
     .diffTest = "VulkanDifferential.StructsArraysAndSums"},
    {.name = "sum.tag", .numOperands = 1, .numResults = 1, .flags = kPure, .verify = verifySumTag, .interp = interpSumTag,
     .summary = "the variant number of a sum",
     .diffTest = "VulkanDifferential.StructsArraysAndSums"},
    {.name = "array.make", .numOperands = kVariadic, .numResults = 1, .flags = kPure,
     .effectFn = consumeLinear, .verify = verifyArrayMake, .interp = interpMake, .summary = "a fixed array from its elements",
     .diffTest = "VulkanDifferential.StructsArraysAndSums"},
    {.name = "array.get", .numOperands = 2, .numResults = 1, .flags = kPure,
     .verify = verifyArrayGet, .interp = interpArrayGet, .summary = "element i of an array (out of bounds is an error)",
     .diffTest = "VulkanDifferential.StructsArraysAndSums"},
    {.name = "array.set", .numOperands = 3, .numResults = 1, .flags = kPure,
     .verify = verifyArraySet, .interp = interpArraySet, .summary = "an array with element i replaced",
     .diffTest = "VulkanDifferential.StructsArraysAndSums"},
};

}  // namespace

void registerAggregateOps(OpTable& t) { t.add(kOps); }

}  // namespace eph::ir
