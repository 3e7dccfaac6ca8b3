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
              InterpFn interp, std::vector<SampleRow> samples = {}) {
  return {.name = name, .numOperands = 2, .numResults = 1, .flags = kPure | flags,
          .verify = verify, .interp = interp, .summary = summary, .samples = std::move(samples)};
}

OpInfo unary(std::string_view name, VerifyFn verify, std::string_view summary,
             InterpFn interp, std::vector<SampleRow> samples = {}) {
  return {.name = name, .numOperands = 1, .numResults = 1, .flags = kPure, .verify = verify,
          .interp = interp, .summary = summary, .samples = std::move(samples)};
}

// An op whose differential case is a hand-written test.
OpInfo handTested(OpInfo info, std::string_view test) {
  info.diffTest = test;
  return info;
}

// ---- differential samples (OpTable.h) ------------------------------------------
// Tolerances follow Vulkan's precision table: add/sub/mul/min/max are exact
// in f32 and f64 (div within 2.5 ulp); f16 math is done in f32 and rounded.

using Types = std::vector<std::string_view>;
const Types kInts = {"i32", "u32", "i64", "u64", "i16", "u16", "i8", "u8"};
const Types kSignedInts = {"i32", "i64", "i16", "i8"};
const Types kF32F64 = {"f32", "f64"};
const Types kF16 = {"f16"};
const Types kFloats = {"f32", "f64", "f16"};
const Types kNumbers = {"i32", "u32", "i64", "u64", "i16", "u16", "i8", "u8", "f32", "f64", "f16"};

SampleRow row(Types types, std::vector<SampleDomain> domains = {}, double ulps = 4, double relative = 1e-5,
              double absolute = 1e-6) {
  return {.types = std::move(types), .domains = std::move(domains), .ulps = ulps, .relative = relative,
          .absolute = absolute};
}
SampleRow exact(Types types, std::vector<SampleDomain> domains = {}) {
  return row(std::move(types), std::move(domains), 0, 0, 0);
}
// Compares: on every type, with equal operands frequent in the second row.
std::vector<SampleRow> compares(bool onBools) {
  std::vector<SampleRow> rows = {exact(kNumbers), exact(kNumbers, {{0, 3}})};
  if (onBools) rows.push_back(exact({"bool"}));
  for (SampleRow& r : rows) r.result = "bool";
  return rows;
}
// Arithmetic correctly rounded in f32 and f64 (exact), within 2 ulp in f16.
std::vector<SampleRow> rounded() { return {exact(kInts), exact(kF32F64), row(kF16, {}, 2, 0, 0)}; }
// Math functions in f32 and f64, and f16 (3 + 2|x| ulp for exp in Vulkan).
std::vector<SampleRow> math(std::vector<SampleDomain> d) {
  return {row(kF32F64, d), row(kF16, d, 64, 1e-2, 1e-3)};
}
// Vulkan bounds sin and cos inside [-pi, pi] by an absolute error.
std::vector<SampleRow> trig() {
  SampleDomain pi{-3.14159, 3.14159};
  return {row(kF32F64, {pi}, 4, 1e-5, 0x1p-11), row(kF16, {pi}, 4, 1e-5, 0x1p-7)};
}
const SampleDomain kDivisor{-1000, 1000, true};
const SampleDomain kPositive{0.01, 100};

OpInfo kOps[] = {
    {.name = "const", .numOperands = 0, .numResults = 1, .flags = kPure, .verify = verifyConst,
     .interp = interpConst,
     .summary = "a scalar constant: %c = const {value = 1.5} : f32",
     .diffTest = "VulkanDifferential.SelectCastBitcastConst"},
    binary("add", verifyNumeric, kCommutative, "a + b (integers wrap)",
           interpBinary<interp::BinaryKind::Add>,
           rounded()),
    binary("sub", verifyNumeric, 0, "a - b (integers wrap)",
           interpBinary<interp::BinaryKind::Sub>,
           rounded()),
    binary("mul", verifyNumeric, kCommutative, "a * b (integers wrap)",
           interpBinary<interp::BinaryKind::Mul>,
           rounded()),
    binary("div", verifyNumeric, 0, "a / b (integers: truncating; division by zero is an error)",
           interpBinary<interp::BinaryKind::Div>,
           {row(kInts, {kFullRange, kDivisor}), row(kF32F64, {}, 3, 0, 0), row(kF16, {}, 2, 0, 0)}),
    binary("rem", verifyNumeric, 0, "remainder with the sign of a (like C's % and fmod)",
           interpBinary<interp::BinaryKind::Rem>,
           {row(kInts, {kFullRange, kDivisor}), row(kF32F64, {kFullRange, {1, 50}}, 4, 1e-5, 2e-4),
            row(kF16, {{-160, 160}, {40, 50}}, 4, 1e-5, 0.125)}),
    binary("min", verifyNumeric, kCommutative, "the smaller of a and b",
           interpBinary<interp::BinaryKind::Min>,
           rounded()),
    binary("max", verifyNumeric, kCommutative, "the larger of a and b",
           interpBinary<interp::BinaryKind::Max>,
           rounded()),
    binary("and", verifyIntBool, kCommutative, "bitwise / logical and",
           interpBinary<interp::BinaryKind::And>,
           {exact(kInts), exact({"bool"})}),
    binary("or", verifyIntBool, kCommutative, "bitwise / logical or",
           interpBinary<interp::BinaryKind::Or>,
           {exact(kInts), exact({"bool"})}),
    binary("xor", verifyIntBool, kCommutative, "bitwise / logical xor",
           interpBinary<interp::BinaryKind::Xor>,
           {exact(kInts), exact({"bool"})}),
    binary("shl", verifyInt, 0, "a << (b mod bits)",
           interpBinary<interp::BinaryKind::Shl>,
           {exact(kInts, {kFullRange, {0, 127}})}),
    binary("shr", verifyInt, 0, "a >> (b mod bits): arithmetic for signed, logical for unsigned",
           interpBinary<interp::BinaryKind::Shr>,
           {exact(kInts, {kFullRange, {0, 127}})}),
    unary("neg", verifyNumeric, "-a",
           interpUnary<interp::UnaryKind::Neg>,
           {exact(kSignedInts), exact(kFloats)}),
    unary("abs", verifyNumeric, "|a|",
           interpUnary<interp::UnaryKind::Abs>,
           {exact(kSignedInts), exact(kFloats)}),
    unary("not", verifyIntBool, "bitwise / logical not",
           interpUnary<interp::UnaryKind::Not>,
           {exact(kInts), exact({"bool"})}),
    binary("eq", verifyCompare, kCommutative, "a == b (floats: ordered)",
           interpCompare<interp::CompareKind::Eq>,
           compares(true)),
    binary("ne", verifyCompare, kCommutative, "a != b (floats: unordered, so nan != nan)",
           interpCompare<interp::CompareKind::Ne>,
           compares(true)),
    binary("lt", verifyCompare, 0, "a < b",
           interpCompare<interp::CompareKind::Lt>,
           compares(false)),
    binary("le", verifyCompare, 0, "a <= b",
           interpCompare<interp::CompareKind::Le>,
           compares(false)),
    binary("gt", verifyCompare, 0, "a > b",
           interpCompare<interp::CompareKind::Gt>,
           compares(false)),
    binary("ge", verifyCompare, 0, "a >= b",
           interpCompare<interp::CompareKind::Ge>,
           compares(false)),
    {.name = "select", .numOperands = 3, .numResults = 1, .flags = kPure, .verify = verifySelect,
     .interp = interpSelect,
     .summary = "c ? a : b", .diffTest = "VulkanDifferential.SelectCastBitcastConst"},
    handTested(unary("cast", verifyCast, "value conversion (float to int truncates and saturates)",
                     interp::applyCast), "VulkanDifferential.SelectCastBitcastConst"),
    handTested(unary("bitcast", verifyBitcast, "reinterpret the bits", interp::applyBitcast),
               "VulkanDifferential.SelectCastBitcastConst"),
    unary("sqrt", verifyFloat, "square root",
           interpUnary<interp::UnaryKind::Sqrt>,
           math({kPositive})),
    unary("rsqrt", verifyFloat, "1 / sqrt(a)",
           interpUnary<interp::UnaryKind::Rsqrt>,
           math({kPositive})),
    unary("exp", verifyFloat, "e^a",
           interpUnary<interp::UnaryKind::Exp>,
           math({{-20, 20}})),
    unary("log", verifyFloat, "natural logarithm",
           interpUnary<interp::UnaryKind::Log>,
           math({kPositive})),
    unary("sin", verifyFloat, "sine",
           interpUnary<interp::UnaryKind::Sin>,
           trig()),
    unary("cos", verifyFloat, "cosine",
           interpUnary<interp::UnaryKind::Cos>,
           trig()),
    unary("tan", verifyFloat, "tangent",
           interpUnary<interp::UnaryKind::Tan>,
           math({{-1.4, 1.4}})),
    unary("tanh", verifyFloat, "hyperbolic tangent",
           interpUnary<interp::UnaryKind::Tanh>,
           math({{-5, 5}})),
    unary("floor", verifyFloat, "round down",
           interpUnary<interp::UnaryKind::Floor>,
           {exact(kFloats)}),
    unary("ceil", verifyFloat, "round up",
           interpUnary<interp::UnaryKind::Ceil>,
           {exact(kFloats)}),
    binary("pow", verifyFloat, 0, "a^b",
           interpBinary<interp::BinaryKind::Pow>,
           math({{0.1, 10}, {-4, 4}})),
    unary("asin", verifyFloat, "arc sine", interpUnary<interp::UnaryKind::Asin>,
           {row(kFloats, {{-1, 1}})}),
    unary("acos", verifyFloat, "arc cosine", interpUnary<interp::UnaryKind::Acos>,
           {row(kFloats, {{-1, 1}})}),
    unary("atan", verifyFloat, "arc tangent", interpUnary<interp::UnaryKind::Atan>,
           {row(kFloats, {{-10, 10}})}),
    binary("atan2", verifyFloat, 0, "the angle of the point (b, a): atan(a / b) in the right quadrant",
           interpBinary<interp::BinaryKind::Atan2>,
           {row(kFloats, {{-10, 10}}), row({"vec<f64, 2>"}, {{-5, 5}})}),
    unary("sinh", verifyFloat, "hyperbolic sine", interpUnary<interp::UnaryKind::Sinh>,
           {row(kFloats, {{-10, 10}})}),
    unary("cosh", verifyFloat, "hyperbolic cosine", interpUnary<interp::UnaryKind::Cosh>,
           {row(kFloats, {{-10, 10}})}),
    unary("asinh", verifyFloat, "inverse hyperbolic sine", interpUnary<interp::UnaryKind::Asinh>,
           {row(kFloats, {{-100, 100}})}),
    unary("acosh", verifyFloat, "inverse hyperbolic cosine", interpUnary<interp::UnaryKind::Acosh>,
           {row(kFloats, {{1, 100}})}),
    unary("atanh", verifyFloat, "inverse hyperbolic tangent", interpUnary<interp::UnaryKind::Atanh>,
           {row(kFloats, {{-0.99, 0.99}})}),
    unary("erf", verifyFloat, "error function", interpUnary<interp::UnaryKind::Erf>,
           {row(kFloats, {{-4, 4}}), row({"vec<f32, 3>"}, {{-3, 3}})}),
    unary("exp2", verifyFloat, "2^a", interpUnary<interp::UnaryKind::Exp2>,
           {row(kFloats, {{-14, 15}})}),
    unary("log2", verifyFloat, "base-2 logarithm", interpUnary<interp::UnaryKind::Log2>,
           {row(kFloats, {{0.01, 100}})}),
    unary("log1p", verifyFloat, "log(1 + a), accurate near 0", interpUnary<interp::UnaryKind::Log1p>,
           {row(kFloats, {{-0.99, 10}}), row({"vec<f64, 2>"}, {{-0.5, 3}})}),
    unary("expm1", verifyFloat, "e^a - 1, accurate near 0", interpUnary<interp::UnaryKind::Expm1>,
           {row(kFloats, {{-5, 5}})}),
    unary("round", verifyFloat, "round to nearest, halfway cases away from zero",
           interpUnary<interp::UnaryKind::Round>,
           {exact(kFloats, {{-100, 100}})}),
    unary("trunc", verifyFloat, "round toward zero", interpUnary<interp::UnaryKind::Trunc>,
           {exact(kFloats, {{-100, 100}})}),
    unary("sign", verifyFloat, "-1, +1, or a itself for +-0 and NaN (sign(-0) = -0)",
           interpUnary<interp::UnaryKind::Sign>,
           {exact(kFloats, {{-100, 100}})}),
    binary("copysign", verifyFloat, 0, "|a| with the sign bit of b",
           interpBinary<interp::BinaryKind::Copysign>,
           {exact(kFloats, {{-100, 100}}), row({"vec<f16, 4>"}, {{-5, 5}}), exact({"vec<f64, 2>"}, {{-5, 5}})}),
    {.name = "fma", .numOperands = 3, .numResults = 1, .flags = kPure, .verify = verifyFloat,
     .interp = interp::applyFma,
     .summary = "a * b + c with one rounding",
     .samples = {row(kFloats, {{-100, 100}, {-100, 100}, {-1e4, 1e4}})}},
};

}  // namespace

void registerArithOps(OpTable& t) { t.add(kOps); }

}  // namespace eph::ir
