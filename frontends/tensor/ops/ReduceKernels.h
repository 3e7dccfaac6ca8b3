// Row helpers shared by the reduce ops (Reduce.cpp: reductions, softmax,
// normalisations) and the scans and orderings (Sort.cpp: cumsum, top-k, sort).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"

namespace eph::tensor::reduce {

using ir::Builder;
using ir::Value;
using ir::Values;

std::string num(int64_t v);
Value* ci(Builder& b, int64_t v);  // an i32 constant
// One axis (attribute `name`, default `fallback`) as a mask of `shape`'s
// dimensions, or why it is out of range; its index in `axisOut`.
std::string oneAxis(const Node& n, const Shape& shape, const std::string& name, int64_t fallback, std::vector<bool>& red,
                    int64_t* axisOut = nullptr);
Shape reducedShape(const Shape& s, const std::vector<bool>& red, bool keep);
// The offset of the row's first element in input `in` (reduced dimensions at 0).
Value* rowBase(Kernel& k, size_t in, const std::vector<bool>& red);
// Input `in`'s element at `off`, in its compute type.
Value* loadAt(Kernel& k, Builder& b, size_t in, Value* off);
Value* isNaN(Builder& b, Value* x);
// Stores `v` (a compute-type value) into a buffer of `dtype`.
void storeAs(Builder& b, ir::Context& ctx, Value* buf, Value* i, Value* v, DType dtype);
// Why `t` is not a numeric (or, floatOnly, float) tensor for n's op, or "".
std::string wantNumeric(const Node& n, DType t, bool floatOnly);
// A kernel with one invocation per element of `domain`, reading `in` and
// writing fresh buffers of the given dtypes and counts, which `body` stores
// into (shared by content). Returns the buffers.
using LaunchBody = std::function<void(Kernel& k, const Values& outs)>;
Values launch(Lowering& l, const std::string& op, const std::string& key, const Shape& domain, std::span<const Operand> in,
              const std::vector<std::pair<DType, int64_t>>& outs, const LaunchBody& body);

}  // namespace eph::tensor::reduce
