// Kernel helpers shared by the linalg ops (Linalg.cpp: matmul, gemm, einsum,
// attention) and the window ops (Conv.cpp: conv, conv_transpose, pooling).
#pragma once

#include <span>
#include <string>

#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"

namespace eph::tensor::linalg {

std::string dt(DType t);
std::string num(int64_t v);

// One invocation per element of `shape`, like Lowering::map, but the body runs
// at the top level of the kernel in every invocation (the index is clamped to
// the last element and only the store is guarded), so that its loops, whose
// bounds are the same in every invocation, interchange with the cpu target's
// invocation loop and vectorise across invocations.
ir::Value* mapTop(Lowering& l, const std::string& op, DType dtype, const Shape& shape, std::span<const Operand> in,
                  const KernelBody& body, const std::string& key);
// Input i's element at element offset `off`, in `to`'s compute type.
ir::Value* loadAt(Kernel& k, size_t i, ir::Value* off, DType to);
ir::Value* addConst(Kernel& k, ir::Value* v, int64_t c);  // v + c (v when c is 0)
ir::Value* mulConst(Kernel& k, ir::Value* v, int64_t c);  // v · c (v when c is 1)
// The promoted dtype of n's first `count` inputs, or why it is not a float.
std::string floatDtype(const Program& p, const Node& n, size_t count, DType& out);
// a [batch.., M, K] · b [batch.., K, N] by the workgroup-tiled kernel, into a
// fresh buffer of `vshape` ([batch.., M, N]); and whether that kernel is
// worth it (and fits the grid) for `vshape` and K.
ir::Value* tiledMatmul(Lowering& l, DType t, const Operand& a, const Operand& b, const Shape& vshape);
bool useTiled(const Shape& vshape, int64_t K);

}  // namespace eph::tensor::linalg
