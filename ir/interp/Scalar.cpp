#include "ir/interp/Scalar.h"

#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ir/interp/Half.h"

namespace eph::interp {

int64_t wrapInt(const ir::Type* t, uint64_t bits) {
  unsigned w = t->isBool() ? 1 : t->bits();
  if (w >= 64) return static_cast<int64_t>(bits);
  uint64_t mask = (uint64_t(1) << w) - 1;
  bits &= mask;
  if (t->isSigned() && (bits >> (w - 1)) != 0) bits |= ~mask;  // sign-extend
  return static_cast<int64_t>(bits);
}

double roundFloat(const ir::Type* t, double v) {
  switch (t->bits()) {
    case 16: return static_cast<double>(static_cast<Half>(v));
    case 32: return static_cast<double>(static_cast<float>(v));
    default: return v;
  }
}

uint64_t bitsOf(const RtValue& s) {
  const ir::Type* t = s.type;
  if (!t->isFloat()) {
    unsigned w = t->isBool() ? 1 : t->bits();
    uint64_t u = static_cast<uint64_t>(s.i);
    return w >= 64 ? u : u & ((uint64_t(1) << w) - 1);
  }
  switch (t->bits()) {
    case 16: {
      Half h = static_cast<Half>(s.f);
      uint16_t b;
      std::memcpy(&b, &h, 2);
      return b;
    }
    case 32: {
      float f = static_cast<float>(s.f);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return b;
    }
    default: {
      uint64_t b;
      std::memcpy(&b, &s.f, 8);
      return b;
    }
  }
}

RtValue fromBits(const ir::Type* t, uint64_t bits) {
  if (!t->isFloat()) {
    RtValue v;
    v.type = t;
    v.i = t->isBool() ? int64_t(bits & 1) : wrapInt(t, bits);
    return v;
  }
  double d;
  switch (t->bits()) {
    case 16: {
      uint16_t b = static_cast<uint16_t>(bits);
      Half h;
      std::memcpy(&h, &b, 2);
      d = static_cast<double>(h);
      break;
    }
    case 32: {
      uint32_t b = static_cast<uint32_t>(bits);
      float f;
      std::memcpy(&f, &b, 4);
      d = static_cast<double>(f);
      break;
    }
    default: std::memcpy(&d, &bits, 8); break;
  }
  RtValue v;
  v.type = t;
  v.f = d;
  return v;
}

namespace {

const char* binaryName(BinaryKind k) {
  static const char* names[] = {"add", "sub", "mul", "div", "rem", "min", "max",
                                "and", "or",  "xor", "shl", "shr", "pow", "atan2", "copysign"};
  return names[static_cast<int>(k)];
}

bool intBinary(BinaryKind k, const ir::Type* t, int64_t a, int64_t b, RtValue& out,
               std::string& error) {
  uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  bool s = t->isSigned();
  uint64_t r = 0;
  switch (k) {
    case BinaryKind::Add: r = ua + ub; break;
    case BinaryKind::Sub: r = ua - ub; break;
    case BinaryKind::Mul: r = ua * ub; break;
    case BinaryKind::Div:
    case BinaryKind::Rem:
      if (b == 0) {
        error = std::string("integer ") + (k == BinaryKind::Div ? "division" : "remainder") +
                " by zero";
        return false;
      }
      if (s) {
        // INT64_MIN / -1 overflows in C++; it wraps to INT64_MIN (remainder 0).
        bool overflow = a == std::numeric_limits<int64_t>::min() && b == -1;
        int64_t q = overflow ? a : a / b;
        int64_t m = overflow ? 0 : a % b;
        r = static_cast<uint64_t>(k == BinaryKind::Div ? q : m);
      } else {
        r = k == BinaryKind::Div ? ua / ub : ua % ub;
      }
      break;
    case BinaryKind::Min: r = (s ? a < b : ua < ub) ? ua : ub; break;
    case BinaryKind::Max: r = (s ? a > b : ua > ub) ? ua : ub; break;
    case BinaryKind::And: r = ua & ub; break;
    case BinaryKind::Or: r = ua | ub; break;
    case BinaryKind::Xor: r = ua ^ ub; break;
    case BinaryKind::Shl: r = ua << (ub & (t->bits() - 1)); break;
    case BinaryKind::Shr: {
      unsigned sh = static_cast<unsigned>(ub & (t->bits() - 1));
      // a is stored sign-extended (signed) or zero-extended (unsigned), so a
      // 64-bit shift of the stored value gives the right answer at any width.
      r = s ? static_cast<uint64_t>(a >> sh) : ua >> sh;
      break;
    }
    case BinaryKind::Pow:
    case BinaryKind::Atan2:
    case BinaryKind::Copysign:
      error = std::string("'") + binaryName(k) + "' is not defined on integers";
      return false;
  }
  out = RtValue::ofInt(t, static_cast<int64_t>(r));
  return true;
}

bool floatBinary(BinaryKind k, const ir::Type* t, double a, double b, RtValue& out,
                 std::string& error) {
  double r = 0;
  switch (k) {
    case BinaryKind::Add: r = a + b; break;
    case BinaryKind::Sub: r = a - b; break;
    case BinaryKind::Mul: r = a * b; break;
    case BinaryKind::Div: r = a / b; break;
    case BinaryKind::Rem: r = std::fmod(a, b); break;
    case BinaryKind::Min: r = std::fmin(a, b); break;
    case BinaryKind::Max: r = std::fmax(a, b); break;
    case BinaryKind::Pow: r = std::pow(a, b); break;
    case BinaryKind::Atan2: r = std::atan2(a, b); break;
    case BinaryKind::Copysign: r = std::copysign(a, b); break;
    default:
      error = std::string("'") + binaryName(k) + "' is not defined on floats";
      return false;
  }
  out = RtValue::ofFloat(t, r);
  return true;
}

bool boolBinary(BinaryKind k, const ir::Type* t, bool a, bool b, RtValue& out, std::string& error) {
  bool r = false;
  switch (k) {
    case BinaryKind::And:
    case BinaryKind::Min: r = a && b; break;
    case BinaryKind::Or:
    case BinaryKind::Max: r = a || b; break;
    case BinaryKind::Xor: r = a != b; break;
    default:
      error = std::string("'") + binaryName(k) + "' is not defined on bools";
      return false;
  }
  out = RtValue::ofBool(t, r);
  return true;
}

}  // namespace

bool binaryScalar(BinaryKind k, const RtValue& a, const RtValue& b, RtValue& out,
                  std::string& error) {
  const ir::Type* t = a.type;
  if (t->isFloat()) return floatBinary(k, t, a.f, b.f, out, error);
  if (t->isBool()) return boolBinary(k, t, a.i != 0, b.i != 0, out, error);
  return intBinary(k, t, a.i, b.i, out, error);
}

RtValue unaryScalar(UnaryKind k, const RtValue& a) {
  const ir::Type* t = a.type;
  if (t->isBool()) {
    // Only `not` is defined on bools (the verifier rejects the rest).
    assert(k == UnaryKind::Not);
    return RtValue::ofBool(t, a.i == 0);
  }
  if (t->isInt()) {
    uint64_t u = static_cast<uint64_t>(a.i);
    switch (k) {
      case UnaryKind::Neg: return RtValue::ofInt(t, static_cast<int64_t>(0 - u));
      case UnaryKind::Abs:
        return RtValue::ofInt(t, static_cast<int64_t>(t->isSigned() && a.i < 0 ? 0 - u : u));
      case UnaryKind::Not: return RtValue::ofInt(t, static_cast<int64_t>(~u));
      default: assert(false && "math op on an integer"); return a;
    }
  }
  double x = a.f, r = 0;
  switch (k) {
    case UnaryKind::Neg: r = -x; break;
    case UnaryKind::Abs: r = std::fabs(x); break;
    case UnaryKind::Not: assert(false && "not on a float"); return a;
    case UnaryKind::Sqrt: r = std::sqrt(x); break;
    case UnaryKind::Rsqrt: r = 1.0 / std::sqrt(x); break;
    case UnaryKind::Exp: r = t->bits() == 32 ? double(expF32(float(x))) : std::exp(x); break;
    case UnaryKind::Log: r = std::log(x); break;
    case UnaryKind::Sin: r = std::sin(x); break;
    case UnaryKind::Cos: r = std::cos(x); break;
    case UnaryKind::Tan: r = std::tan(x); break;
    case UnaryKind::Tanh: r = std::tanh(x); break;
    case UnaryKind::Floor: r = std::floor(x); break;
    case UnaryKind::Ceil: r = std::ceil(x); break;
    case UnaryKind::Asin: r = std::asin(x); break;
    case UnaryKind::Acos: r = std::acos(x); break;
    case UnaryKind::Atan: r = std::atan(x); break;
    case UnaryKind::Sinh: r = std::sinh(x); break;
    case UnaryKind::Cosh: r = std::cosh(x); break;
    case UnaryKind::Asinh: r = std::asinh(x); break;
    case UnaryKind::Acosh: r = std::acosh(x); break;
    case UnaryKind::Atanh: r = std::atanh(x); break;
    case UnaryKind::Erf: r = t->bits() == 32 ? double(erfF32(float(x))) : std::erf(x); break;
    case UnaryKind::Exp2: r = std::exp2(x); break;
    case UnaryKind::Log2: r = std::log2(x); break;
    case UnaryKind::Log1p: r = std::log1p(x); break;
    case UnaryKind::Expm1: r = std::expm1(x); break;
    case UnaryKind::Round: r = std::round(x); break;
    case UnaryKind::Trunc: r = std::trunc(x); break;
    case UnaryKind::Sign: r = x > 0 ? 1.0 : x < 0 ? -1.0 : x; break;  // +-0 and NaN: x
  }
  return RtValue::ofFloat(t, r);
}

// Step for step what the cpu target emits (constants given in double and
// rounded to f32 as LLVM's ConstantFP does; no contraction: every fma is
// written out).
float expF32(float x) {
  auto k = [](double v) { return float(v); };
  float xc = std::fmin(std::fmax(x, k(-104.0)), k(89.0));
  float n = std::nearbyint(xc * k(1.44269504088896341));  // ties to even in the default rounding mode
  float r = std::fmaf(n, k(-0.693359375), xc);
  r = std::fmaf(n, k(2.12194440e-4), r);
  float p = k(1.9875691500e-4);
  for (double c : {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1})
    p = std::fmaf(p, r, k(c));
  float r2 = r * r;
  p = std::fmaf(p, r2, r) + k(1.0);
  int32_t ni = int32_t(n), half = ni >> 1;
  auto pow2 = [](int32_t e) {
    uint32_t bits = uint32_t(e + 127) << 23;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  float y = p * pow2(half);
  y = y * pow2(ni - half);
  if (x > k(88.72283935546875)) y = std::numeric_limits<float>::infinity();
  if (x < k(-103.972084)) y = 0.0f;
  return std::isnan(x) ? x : y;
}

// Step for step what the cpu target emits, as expF32. The coefficients are
// our own fits (ir/interp/erf_fit.py: least squares at Chebyshev nodes,
// reweighted toward minimax, rounded to f32): erf(x)/x - 1 as a polynomial
// in x² on [0, 0.875]; ln erfc(t) as a polynomial in t on [0.875, 4].
float erfF32(float x) {
  auto k = [](double v) { return float(v); };
  const float t = std::fabs(x), s = x * x;
  float p = k(-6.222415249794722e-4);
  for (double c : {5.035870708525181e-3, -2.67939530313015e-2, 1.1282524466514587e-1, -3.761255741119385e-1,
                   1.2837915122509003e-1})
    p = std::fmaf(p, s, k(c));
  const float small = std::fmaf(x, p, x);  // x·(1 + p): one rounding at the end
  const float tc = std::fmin(t, k(4.0));  // erfc(4) < 2^-25: 1 - erfc rounds to 1 from about 3.92 on
  float q = k(1.6024995375119033e-6);
  for (double c : {-4.535477273748256e-5, 5.907168961130083e-4, -4.730289801955223e-3, 2.6335563510656357e-2,
                   -1.0992522537708282e-1, -6.319952607154846e-1, -1.130131483078003, 2.9428183916024864e-4})
    q = std::fmaf(q, tc, k(c));
  const float large = std::copysign(k(1.0) - expF32(q), x);
  return t <= k(0.875) ? small : std::isnan(x) ? x : large;
}

RtValue fmaScalar(const RtValue& a, const RtValue& b, const RtValue& c) {
  const ir::Type* t = a.type;
  if (t->bits() == 32)
    return RtValue::ofFloat(t, double(std::fmaf(float(a.f), float(b.f), float(c.f))));
  return RtValue::ofFloat(t, std::fma(a.f, b.f, c.f));
}

bool compareScalar(CompareKind k, const RtValue& a, const RtValue& b) {
  const ir::Type* t = a.type;
  if (t->isFloat()) {
    double x = a.f, y = b.f;
    switch (k) {
      case CompareKind::Eq: return x == y;
      case CompareKind::Ne: return x != y;  // unordered: true when either is NaN
      case CompareKind::Lt: return x < y;
      case CompareKind::Le: return x <= y;
      case CompareKind::Gt: return x > y;
      case CompareKind::Ge: return x >= y;
    }
  }
  auto cmp = [&](auto x, auto y) {
    switch (k) {
      case CompareKind::Eq: return x == y;
      case CompareKind::Ne: return x != y;
      case CompareKind::Lt: return x < y;
      case CompareKind::Le: return x <= y;
      case CompareKind::Gt: return x > y;
      case CompareKind::Ge: return x >= y;
    }
    return false;
  };
  if (t->isInt() && t->isSigned()) return cmp(a.i, b.i);
  return cmp(static_cast<uint64_t>(a.i), static_cast<uint64_t>(b.i));
}

namespace {

// Float to integer: truncate toward zero, saturate at the type's range, NaN -> 0.
int64_t floatToInt(double v, const ir::Type* to) {
  if (std::isnan(v)) return 0;
  unsigned w = to->bits();
  if (to->isSigned()) {
    double lo = -std::ldexp(1.0, int(w) - 1);  // exactly representable
    double hiExcl = std::ldexp(1.0, int(w) - 1);
    if (v <= lo) return wrapInt(to, static_cast<uint64_t>(static_cast<int64_t>(lo)));
    if (v >= hiExcl) return wrapInt(to, (uint64_t(1) << (w - 1)) - 1);
    return static_cast<int64_t>(std::trunc(v));
  }
  if (v <= 0) return 0;  // (-1, 0] truncates to 0 as well
  double hiExcl = std::ldexp(1.0, int(w));
  if (v >= hiExcl) return wrapInt(to, ~uint64_t(0));
  return static_cast<int64_t>(static_cast<uint64_t>(std::trunc(v)));
}

// Integer to float with a single rounding straight to the target precision.
template <class I>
double intToFloat(I x, const ir::Type* to) {
  switch (to->bits()) {
    case 16: return static_cast<double>(static_cast<Half>(x));
    case 32: return static_cast<double>(static_cast<float>(x));
    default: return static_cast<double>(x);
  }
}

}  // namespace

RtValue castScalar(const RtValue& a, const ir::Type* to) {
  const ir::Type* from = a.type;
  if (to->isBool()) return RtValue::ofBool(to, from->isFloat() ? a.f != 0 : a.i != 0);
  if (to->isInt()) {
    if (from->isFloat()) {
      RtValue r;
      r.type = to;
      r.i = floatToInt(a.f, to);
      return r;
    }
    return RtValue::ofInt(to, a.i);  // bool: 0/1; int: wraps
  }
  // to float
  if (from->isFloat()) return RtValue::ofFloat(to, a.f);
  RtValue r;
  r.type = to;
  if (from->isInt() && !from->isSigned())
    r.f = intToFloat(static_cast<uint64_t>(a.i), to);
  else
    r.f = intToFloat(a.i, to);
  return r;
}

RtValue bitcastValue(const RtValue& a, const ir::Type* to) {
  // Lay the source out as little-endian bytes, element 0 first.
  std::vector<uint8_t> bytes;
  auto put = [&](const RtValue& s) {
    uint64_t b = bitsOf(s);
    for (unsigned i = 0; i < s.type->bits() / 8; ++i) bytes.push_back(uint8_t(b >> (8 * i)));
  };
  if (a.type->isVector())
    for (const RtValue& e : a.elems) put(e);
  else
    put(a);
  size_t pos = 0;
  auto take = [&](const ir::Type* t) {
    uint64_t b = 0;
    for (unsigned i = 0; i < t->bits() / 8; ++i) b |= uint64_t(bytes.at(pos++)) << (8 * i);
    return fromBits(t, b);
  };
  if (!to->isVector()) return take(to);
  RtValue r;
  r.type = to;
  for (unsigned i = 0; i < to->count(); ++i) r.elems.push_back(take(to->elem()));
  return r;
}

}  // namespace eph::interp
