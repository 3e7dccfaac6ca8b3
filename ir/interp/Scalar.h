// Scalar semantics of the interpreter: how one bool, integer or float value
// is stored in an RtValue, and what each arithmetic, comparison, math and
// conversion op does to scalars. Vector ops apply these element by element
// (ir/interp/Elementwise.h). This file is the precise definition the SPIR-V
// and LLVM targets are tested against:
//  - integers wrap to their width; div truncates, rem has the sign of the
//    dividend, division by zero is an error, INT_MIN / -1 wraps to INT_MIN;
//    shifts use (b mod bits); shr is arithmetic for signed, logical for unsigned;
//  - floats are computed in double and rounded to the type (f32 via float,
//    f16 via eph::Half, ir/interp/Half.h); min/max return the other operand when one is NaN;
//    comparisons are ordered except ne;
//  - the math functions are C's (glibc's libm on double): round is half away
//    from zero, trunc toward zero, copysign copies the sign bit (NaNs too);
//    sign(x) is -1, +1, x itself for +-0 (so sign(-0) = -0) and NaN for NaN;
//  - casts wrap int->int, round int->float, truncate float->int toward zero
//    with saturation (NaN -> 0); number->bool is != 0.
#pragma once

#include <cstdint>
#include <string>

#include "ir/interp/Interp.h"

namespace eph::interp {

// `bits` (two's complement) truncated to the width of integer type t and
// sign- or zero-extended, the way RtValue::i stores it.
int64_t wrapInt(const ir::Type* t, uint64_t bits);
// v rounded to the precision of float type t (f16, f32 or f64).
double roundFloat(const ir::Type* t, double v);

// The raw bits of a scalar at its type's width (floats: their IEEE encoding).
uint64_t bitsOf(const RtValue& scalar);
// The scalar of type t whose encoding is the low bits of `bits`.
RtValue fromBits(const ir::Type* t, uint64_t bits);

enum class BinaryKind { Add, Sub, Mul, Div, Rem, Min, Max, And, Or, Xor, Shl, Shr, Pow, Atan2, Copysign };
enum class UnaryKind {
  Neg, Abs, Not, Sqrt, Rsqrt, Exp, Log, Sin, Cos, Tan, Tanh, Floor, Ceil,
  Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Erf, Exp2, Log2, Log1p, Expm1, Round, Trunc, Sign,
};
enum class CompareKind { Eq, Ne, Lt, Le, Gt, Ge };

// a <k> b for two scalars of the same type. False (with `error` set) when the
// operation traps: integer division or remainder by zero.
bool binaryScalar(BinaryKind k, const RtValue& a, const RtValue& b, RtValue& out,
                  std::string& error);
RtValue unaryScalar(UnaryKind k, const RtValue& a);
// a * b + c with one rounding (f64: std::fma; f32: std::fmaf; f16: the f64
// fma rounded to f16, which can differ from a single rounding only when the
// f64 result is itself a tie at f16 precision).
RtValue fmaScalar(const RtValue& a, const RtValue& b, const RtValue& c);

// `exp` of f32, as every target but SPIR-V computes it (the cpu target emits
// the same steps: targets/llvm/LowerValues.cpp, expF32): in f32, within 1 ulp
// of the correctly rounded e^x over all f32, subnormal results included
// (docs/ir.md, "Float math"). x = n·ln 2 + r with n = roundeven(x·log2 e)
// and r from a two-part ln 2 (Cody and Waite); e^r by Cephes expf's
// polynomial; times 2^n as two powers of two made from their bits.
float expF32(float x);
// `erf` of f32, likewise (the cpu target emits the same steps: LowerValues.cpp,
// erfF32): in f32, within 1.3 ulp of erf in double (every 7th positive f32
// measured: 1.26); for |x| <= 0.875 x·(1 + p(x²)), beyond 1 - e^q(|x|) with
// q ≈ ln erfc and expF32, its sign that of x.
float erfF32(float x);
bool compareScalar(CompareKind k, const RtValue& a, const RtValue& b);
// Value conversion of a scalar to scalar type `to`.
RtValue castScalar(const RtValue& a, const ir::Type* to);
// Reinterprets the bits of a scalar or vector as type `to` (same total bit
// count; vector element 0 occupies the lowest bits).
RtValue bitcastValue(const RtValue& a, const ir::Type* to);

}  // namespace eph::interp
