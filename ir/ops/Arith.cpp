// Scalar and elementwise ops: constants, integer and float arithmetic,
// comparisons, select, casts and math functions. Arithmetic on vectors is
// elementwise.
#include "ir/ops/Rules.h"

namespace eph::ir {
namespace {
using namespace rules;

std::string verifyConst(const Op& op) {
  const Type* t = resultType(op);
  const Attr* v = op.attr("value");
  if (!v) return "needs attribute 'value'";
  if (t->isBool()) return v->kind == Attr::Kind::Bool ? "" : "a bool constant needs a bool value";
  if (t->isInt()) {
    if (v->kind != Attr::Kind::Int) return "an integer constant needs an integer value";
    if (t->bits() < 64) {
      int64_t lo = t->isSigned() ? -(int64_t(1) << (t->bits() - 1)) : 0;
      int64_t hi = t->isSigned() ? (int64_t(1) << (t->bits() - 1)) - 1
                                 : (int64_t(1) << t->bits()) - 1;
      if (v->i < lo || v->i > hi)
        return "value " + std::to_string(v->i) + " does not fit in " + typeStr(t);
    }
    return {};
  }
  if (t->isFloat())
    return v->kind == Attr::Kind::Float ? "" : "a float constant needs a float value";
  return "constants are scalars (bool, integer or float), not " + typeStr(t);
}

std::string verifyNumeric(const Op& op) { return sameTypeAll(op, isNumericOrVec, "integers or floats"); }
std::string verifyFloat(const Op& op) { return sameTypeAll(op, isFloatOrVec, "floats"); }
std::string verifyIntBool(const Op& op) { return sameTypeAll(op, isIntBoolOrVec, "integers or bools"); }
std::string verifyInt(const Op& op) { return sameTypeAll(op, isIntOrVec, "integers"); }

std::string verifyCompare(const Op& op) {
  const Type* a = operandType(op, 0);
  if (a != operandType(op, 1))
    return "compares " + typeStr(a) + " with " + typeStr(operandType(op, 1));
  if (!a->scalar()->isScalar()) return "compares scalars or vectors, not " + typeStr(a);
  const Type* r = resultType(op);
  bool ok = a->isVector() ? (r->isVector() && r->elem()->isBool() && r->count() == a->count())
                          : r->isBool();
  if (!ok) return "result must be bool (or a bool vector for vector operands), got " + typeStr(r);
  return {};
}

std::string verifySelect(const Op& op) {
  if (!operandType(op, 0)->isBool())
    return "condition must be 'bool', got " + typeStr(operandType(op, 0));
  const Type* t = resultType(op);
  if (operandType(op, 1) != t || operandType(op, 2) != t)
    return "both choices must have the result type " + typeStr(t);
  return {};
}

std::string verifyCast(const Op& op) {
  const Type* from = operandType(op, 0);
  const Type* to = resultType(op);
  if (!from->scalar()->isScalar() || !to->scalar()->isScalar())
    return "casts between scalars or vectors, not " + typeStr(from) + " to " + typeStr(to);
  if (from->isVector() != to->isVector() || (from->isVector() && from->count() != to->count()))
    return "cast from " + typeStr(from) + " to " + typeStr(to) + " changes the shape";
  return {};
}

std::string verifyBitcast(const Op& op) {
  const Type* from = operandType(op, 0);
  const Type* to = resultType(op);
  if (!from->scalar()->isNumeric() || !to->scalar()->isNumeric())
    return "bitcasts between integers, floats or vectors of them";
  if (from->sizeInBytes() != to->sizeInBytes() ||
      (from->isVector() ? from->count() : 1) * from->scalar()->bits() !=
          (to->isVector() ? to->count() : 1) * to->scalar()->bits())
    return "bitcast from " + typeStr(from) + " to " + typeStr(to) + " changes the size";
  return {};
}

OpInfo binary(std::string_view name, VerifyFn verify, unsigned flags, std::string_view summary,
              InterpFn interp = nullptr) {
  return {.name = name, .numOperands = 2, .numResults = 1, .flags = kPure | flags,
          .verify = verify, .interp = interp, .summary = summary};
}

OpInfo unary(std::string_view name, VerifyFn verify, std::string_view summary,
             InterpFn interp = nullptr) {
  return {.name = name, .numOperands = 1, .numResults = 1, .flags = kPure, .verify = verify,
          .interp = interp, .summary = summary};
}

const OpInfo kOps[] = {
    {.name = "const", .numOperands = 0, .numResults = 1, .flags = kPure, .verify = verifyConst,
     .summary = "a scalar constant: %c = const {value = 1.5} : f32"},
    binary("add", verifyNumeric, kCommutative, "a + b (integers wrap)"),
    binary("sub", verifyNumeric, 0, "a - b (integers wrap)"),
    binary("mul", verifyNumeric, kCommutative, "a * b (integers wrap)"),
    binary("div", verifyNumeric, 0, "a / b (integers: truncating; division by zero is an error)"),
    binary("rem", verifyNumeric, 0, "remainder with the sign of a (like C's % and fmod)"),
    binary("min", verifyNumeric, kCommutative, "the smaller of a and b"),
    binary("max", verifyNumeric, kCommutative, "the larger of a and b"),
    binary("and", verifyIntBool, kCommutative, "bitwise / logical and"),
    binary("or", verifyIntBool, kCommutative, "bitwise / logical or"),
    binary("xor", verifyIntBool, kCommutative, "bitwise / logical xor"),
    binary("shl", verifyInt, 0, "a << (b mod bits)"),
    binary("shr", verifyInt, 0, "a >> (b mod bits): arithmetic for signed, logical for unsigned"),
    unary("neg", verifyNumeric, "-a"),
    unary("abs", verifyNumeric, "|a|"),
    unary("not", verifyIntBool, "bitwise / logical not"),
    binary("eq", verifyCompare, kCommutative, "a == b (floats: ordered)"),
    binary("ne", verifyCompare, kCommutative, "a != b (floats: unordered, so nan != nan)"),
    binary("lt", verifyCompare, 0, "a < b"),
    binary("le", verifyCompare, 0, "a <= b"),
    binary("gt", verifyCompare, 0, "a > b"),
    binary("ge", verifyCompare, 0, "a >= b"),
    {.name = "select", .numOperands = 3, .numResults = 1, .flags = kPure, .verify = verifySelect,
     .summary = "c ? a : b"},
    unary("cast", verifyCast, "value conversion (float to int truncates and saturates)"),
    unary("bitcast", verifyBitcast, "reinterpret the bits"),
    unary("sqrt", verifyFloat, "square root"),
    unary("rsqrt", verifyFloat, "1 / sqrt(a)"),
    unary("exp", verifyFloat, "e^a"),
    unary("log", verifyFloat, "natural logarithm"),
    unary("sin", verifyFloat, "sine"),
    unary("cos", verifyFloat, "cosine"),
    unary("tan", verifyFloat, "tangent"),
    unary("tanh", verifyFloat, "hyperbolic tangent"),
    unary("floor", verifyFloat, "round down"),
    unary("ceil", verifyFloat, "round up"),
    binary("pow", verifyFloat, 0, "a^b"),
};

}  // namespace

void registerArithOps(OpTable& t) { t.add(kOps); }

}  // namespace eph::ir
