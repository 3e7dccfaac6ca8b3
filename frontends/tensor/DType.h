// Element types of tensors, their IR types, and numpy's promotion rules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/Types.h"

namespace eph::tensor {

enum class DType : uint8_t { Bool, U8, I8, U16, I16, U32, I32, U64, I64, F16, F32, F64 };

std::string_view dtypeName(DType t);             // "f32", "bool", ...
std::optional<DType> dtypeFromName(std::string_view name);
bool isFloat(DType t);
bool isInt(DType t);  // signed or unsigned, not bool
bool isSigned(DType t);
unsigned bits(DType t);        // bool: 8 (its size in host bytes)
size_t hostBytes(DType t);     // size of one element in a HostTensor
// The IR type a tensor of `t` is stored as (bool: the IR's bool, stored as u32 on devices).
const ir::Type* irType(ir::Context& ctx, DType t);
// The type kernels compute in: f16 computes in f32; the others in themselves.
const ir::Type* computeType(ir::Context& ctx, DType t);
// numpy's result type of a binary op on two arrays (numpy.result_type;
// tests/tensor/fixtures/promotion.txt is numpy's table): bool < integers <
// floats; two integers of one signedness: the wider; a signed and an
// unsigned: a signed type wide enough for both (f64 for u64 and a signed
// type); an integer and a float: the wider of the float and the smallest
// float holding every value of the integer (f16 for 8 bits, f32 for 16, f64
// for 32 and 64).
DType promote(DType a, DType b);

// A shape: one extent per dimension (a scalar has none).
using Shape = std::vector<int64_t>;
int64_t numel(const Shape& s);
std::string shapeText(const Shape& s);  // "[2, 3]", "[]" for a scalar; "[N, 3]" with a dynamic first dimension

// A dynamic first dimension (docs/tensor.md, "Dynamic dimensions"): its
// extent, N, is a run-time value, one for the whole program. Program::input
// takes kDynamic as the first extent; every shape of the program then holds
// kDynamicExtent in its place (a nominal extent that no op's shape rule
// treats specially), and kernels take the run-time N instead.
constexpr int64_t kDynamic = -1;
constexpr int64_t kDynamicExtent = 999983;
// Whether shape `s` has the dynamic first dimension.
inline bool isDynamic(const Shape& s) { return !s.empty() && s[0] == kDynamicExtent; }
// Elements per index of the first dimension: numel of s without it.
int64_t rowElements(const Shape& s);
// `s` with the dynamic first extent replaced by `n` (unchanged when static).
Shape withExtent(Shape s, int64_t n);
// Whether an extent or stride is the nominal extent times something: a
// dynamic dimension merged into another (reshape), moved (transpose) or
// counted (concat along it).
inline bool involvesDynamic(int64_t v) { return v != 0 && v % kDynamicExtent == 0; }
// Row-major strides of a contiguous tensor of shape s.
std::vector<int64_t> contiguousStrides(const Shape& s);
// numpy broadcasting of two shapes; nullopt when a pair of extents differs and neither is 1.
std::optional<Shape> broadcastShapes(const Shape& a, const Shape& b);

}  // namespace eph::tensor
