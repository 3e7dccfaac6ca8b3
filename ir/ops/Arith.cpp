// Scalar and elementwise ops: constants, integer and float arithmetic,
// comparisons, select, casts and math functions. Arithmetic on vectors is
// elementwise.
#include "ir/interp/Elementwise.h"
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
  // Choosing one of two owned values would drop the other; branch with 'if'.
  if (t->isLinear() || t->isAffine())
    return "cannot choose between values of linear or affine type " + typeStr(t) + "; use 'if'";
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

// ---- interpreter semantics (scalar rules: ir/interp/Scalar.h) ----------------

bool interpConst(interp::Exec& ex, const Op& op) {
  const Type* t = resultType(op);
  const Attr* a = op.attr("value");
  if (!a) return ex.fail(op, "needs attribute 'value'");
  const Attr& v = *a;
  if (t->isBool()) return ex.setResult(op, interp::RtValue::ofBool(t, v.b));
  if (t->isInt()) return ex.setResult(op, interp::RtValue::ofInt(t, v.i));
  return ex.setResult(op, interp::RtValue::ofFloat(t, v.kind == Attr::Kind::Int ? double(v.i) : v.f));
}

template <interp::BinaryKind K>
bool interpBinary(interp::Exec& ex, const Op& op) { return interp::applyBinary(ex, op, K); }
template <interp::UnaryKind K>
bool interpUnary(interp::Exec& ex, const Op& op) { return interp::applyUnary(ex, op, K); }
template <interp::CompareKind K>
bool interpCompare(interp::Exec& ex, const Op& op) { return interp::applyCompare(ex, op, K); }

bool interpSelect(interp::Exec& ex, const Op& op) {
  return ex.setResult(op, ex.operand(op, ex.operand(op, 0).i ? 1 : 2));
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

OpInfo kOps[] = {
    {.name = "const", .numOperands = 0, .numResults = 1, .flags = kPure, .verify = verifyConst,
     .interp = interpConst,
     .summary = "a scalar constant: %c = const {value = 1.5} : f32"},
    binary("add", verifyNumeric, kCommutative, "a + b (integers wrap)",
           interpBinary<interp::BinaryKind::Add>),
    binary("sub", verifyNumeric, 0, "a - b (integers wrap)",
           interpBinary<interp::BinaryKind::Sub>),
    binary("mul", verifyNumeric, kCommutative, "a * b (integers wrap)",
           interpBinary<interp::BinaryKind::Mul>),
    binary("div", verifyNumeric, 0, "a / b (integers: truncating; division by zero is an error)",
           interpBinary<interp::BinaryKind::Div>),
    binary("rem", verifyNumeric, 0, "remainder with the sign of a (like C's % and fmod)",
           interpBinary<interp::BinaryKind::Rem>),
    binary("min", verifyNumeric, kCommutative, "the smaller of a and b",
           interpBinary<interp::BinaryKind::Min>),
    binary("max", verifyNumeric, kCommutative, "the larger of a and b",
           interpBinary<interp::BinaryKind::Max>),
    binary("and", verifyIntBool, kCommutative, "bitwise / logical and",
           interpBinary<interp::BinaryKind::And>),
    binary("or", verifyIntBool, kCommutative, "bitwise / logical or",
           interpBinary<interp::BinaryKind::Or>),
    binary("xor", verifyIntBool, kCommutative, "bitwise / logical xor",
           interpBinary<interp::BinaryKind::Xor>),
    binary("shl", verifyInt, 0, "a << (b mod bits)",
           interpBinary<interp::BinaryKind::Shl>),
    binary("shr", verifyInt, 0, "a >> (b mod bits): arithmetic for signed, logical for unsigned",
           interpBinary<interp::BinaryKind::Shr>),
    unary("neg", verifyNumeric, "-a",
           interpUnary<interp::UnaryKind::Neg>),
    unary("abs", verifyNumeric, "|a|",
           interpUnary<interp::UnaryKind::Abs>),
    unary("not", verifyIntBool, "bitwise / logical not",
           interpUnary<interp::UnaryKind::Not>),
    binary("eq", verifyCompare, kCommutative, "a == b (floats: ordered)",
           interpCompare<interp::CompareKind::Eq>),
    binary("ne", verifyCompare, kCommutative, "a != b (floats: unordered, so nan != nan)",
           interpCompare<interp::CompareKind::Ne>),
    binary("lt", verifyCompare, 0, "a < b",
           interpCompare<interp::CompareKind::Lt>),
    binary("le", verifyCompare, 0, "a <= b",
           interpCompare<interp::CompareKind::Le>),
    binary("gt", verifyCompare, 0, "a > b",
           interpCompare<interp::CompareKind::Gt>),
    binary("ge", verifyCompare, 0, "a >= b",
           interpCompare<interp::CompareKind::Ge>),
    {.name = "select", .numOperands = 3, .numResults = 1, .flags = kPure, .verify = verifySelect,
     .interp = interpSelect,
     .summary = "c ? a : b"},
    unary("cast", verifyCast, "value conversion (float to int truncates and saturates)",
           interp::applyCast),
    unary("bitcast", verifyBitcast, "reinterpret the bits",
           interp::applyBitcast),
    unary("sqrt", verifyFloat, "square root",
           interpUnary<interp::UnaryKind::Sqrt>),
    unary("rsqrt", verifyFloat, "1 / sqrt(a)",
           interpUnary<interp::UnaryKind::Rsqrt>),
    unary("exp", verifyFloat, "e^a",
           interpUnary<interp::UnaryKind::Exp>),
    unary("log", verifyFloat, "natural logarithm",
           interpUnary<interp::UnaryKind::Log>),
    unary("sin", verifyFloat, "sine",
           interpUnary<interp::UnaryKind::Sin>),
    unary("cos", verifyFloat, "cosine",
           interpUnary<interp::UnaryKind::Cos>),
    unary("tan", verifyFloat, "tangent",
           interpUnary<interp::UnaryKind::Tan>),
    unary("tanh", verifyFloat, "hyperbolic tangent",
           interpUnary<interp::UnaryKind::Tanh>),
    unary("floor", verifyFloat, "round down",
           interpUnary<interp::UnaryKind::Floor>),
    unary("ceil", verifyFloat, "round up",
           interpUnary<interp::UnaryKind::Ceil>),
    binary("pow", verifyFloat, 0, "a^b",
           interpBinary<interp::BinaryKind::Pow>),
    unary("asin", verifyFloat, "arc sine", interpUnary<interp::UnaryKind::Asin>),
    unary("acos", verifyFloat, "arc cosine", interpUnary<interp::UnaryKind::Acos>),
    unary("atan", verifyFloat, "arc tangent", interpUnary<interp::UnaryKind::Atan>),
    binary("atan2", verifyFloat, 0, "the angle of the point (b, a): atan(a / b) in the right quadrant",
           interpBinary<interp::BinaryKind::Atan2>),
    unary("sinh", verifyFloat, "hyperbolic sine", interpUnary<interp::UnaryKind::Sinh>),
    unary("cosh", verifyFloat, "hyperbolic cosine", interpUnary<interp::UnaryKind::Cosh>),
    unary("asinh", verifyFloat, "inverse hyperbolic sine", interpUnary<interp::UnaryKind::Asinh>),
    unary("acosh", verifyFloat, "inverse hyperbolic cosine", interpUnary<interp::UnaryKind::Acosh>),
    unary("atanh", verifyFloat, "inverse hyperbolic tangent", interpUnary<interp::UnaryKind::Atanh>),
    unary("erf", verifyFloat, "error function", interpUnary<interp::UnaryKind::Erf>),
    unary("exp2", verifyFloat, "2^a", interpUnary<interp::UnaryKind::Exp2>),
    unary("log2", verifyFloat, "base-2 logarithm", interpUnary<interp::UnaryKind::Log2>),
    unary("log1p", verifyFloat, "log(1 + a), accurate near 0", interpUnary<interp::UnaryKind::Log1p>),
    unary("expm1", verifyFloat, "e^a - 1, accurate near 0", interpUnary<interp::UnaryKind::Expm1>),
    unary("round", verifyFloat, "round to nearest, halfway cases away from zero",
           interpUnary<interp::UnaryKind::Round>),
    unary("trunc", verifyFloat, "round toward zero", interpUnary<interp::UnaryKind::Trunc>),
    unary("sign", verifyFloat, "-1, +1, or a itself for +-0 and NaN (sign(-0) = -0)",
           interpUnary<interp::UnaryKind::Sign>),
    binary("copysign", verifyFloat, 0, "|a| with the sign bit of b",
           interpBinary<interp::BinaryKind::Copysign>),
    {.name = "fma", .numOperands = 3, .numResults = 1, .flags = kPure, .verify = verifyFloat,
     .interp = interp::applyFma,
     .summary = "a * b + c with one rounding"},
};

}  // namespace

void registerArithOps(OpTable& t) { t.add(kOps); }

}  // namespace eph::ir
