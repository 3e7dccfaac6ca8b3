// Kernel helpers shared by the linalg ops (Linalg.cpp: matmul, gemm, einsum;
// Attention.cpp) and the window ops (Conv.cpp: conv, conv_transpose, pooling).
#pragma once

#include <functional>
#include <span>
#include <utility>
#include <vector>
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
// `o` with its leading dimensions (all but the last `tail`) broadcast to
// `batch`: missing and extent-1 dimensions read with stride 0.
Operand withBatch(Operand o, const Shape& batch, size_t tail);
// Input i's element at element offset `off`, in `to`'s compute type.
ir::Value* loadAt(Kernel& k, size_t i, ir::Value* off, DType to);
ir::Value* addConst(Kernel& k, ir::Value* v, int64_t c);  // v + c (v when c is 0)
ir::Value* mulConst(Kernel& k, ir::Value* v, int64_t c);  // v · c (v when c is 1)
// The tile (row, column) of a tilesM x tilesN grid that workgroup `t` takes:
// row by row (g = 1), or in groups of g rows, each group's tiles column by
// column, so that the workgroups running at once share rows of A and
// columns of B in the cache.
std::pair<ir::Value*, ir::Value*> tileOrder(Kernel& k, ir::Value* t, int64_t tilesM, int64_t tilesN, int64_t g);
// The promoted dtype of n's first `count` inputs, or why it is not a float.
std::string floatDtype(const Program& p, const Node& n, size_t count, DType& out);
// How the tiled matmul reads B and writes C where they are not plain
// strided tensors: conv as an implicit GEMM (B's elements gathered from the
// input, C stored in the output's layout with the bias added), epilogues.
struct MatmulParts {
  std::vector<Operand> extra;  // more inputs of the kernel: Kernel inputs 2, 3, ...
  // B's element (k, n) of batch `batch` in the compute type instead of b's
  // strided read (b: the operand it reads as input 1). Called with k < K and n < N.
  std::function<ir::Value*(Kernel& k, ir::Value* batch, ir::Value* kk, ir::Value* n)> bElement;
  // Optional, with bElement: B's elements (k, n + e), e < 4, for n a multiple
  // of 4 (N is one too), computing the index arithmetic they share once.
  std::function<std::vector<ir::Value*>(Kernel& k, ir::Value* batch, ir::Value* kk, ir::Value* n)> bElements4;
  // The value to store for C's element (m, n) of batch `batch`, whose sum is
  // `v` (the compute type), and its element offset in an output of
  // `outCount` elements of `outType`, instead of v at [batch, m, n] of a
  // fresh [batch.., M, N].
  std::function<std::pair<ir::Value*, ir::Value*>(Kernel& k, ir::Value* batch, ir::Value* m, ir::Value* n,
                                                  ir::Value* v)>
      store;
  DType outType = DType::F32;
  int64_t outCount = 0;
  std::string key;  // what bElement and store compute, for the kernel cache
};
// a [batch.., M, K] · b [batch.., K, N] by a workgroup-tiled kernel (the
// blocked one where LowerOptions::matmulBlock and the dtype allow, else the
// 64-invocation one), with `parts`, into a fresh buffer of `vshape`
// ([batch.., M, N]) or `parts.outCount` elements; and whether a tiled kernel
// is worth it (and fits the grid) for `vshape` and K.
ir::Value* tiledMatmul(Lowering& l, DType t, const Operand& a, const Operand& b, const Shape& vshape,
                       const MatmulParts& parts = {});
bool useTiled(const Shape& vshape, int64_t K);

// A tiled kernel's operands for batch `batch`: A's and B's element offsets
// (B's null when parts.bElement reads it) and their row and column strides.
struct OperandBases {
  ir::Value* baseA;
  ir::Value* baseB;
  int64_t sam, sak, sbk, sbn;
};
OperandBases operandBases(Kernel& k, ir::Value* batch, const Operand& a, const Operand& b, const Shape& vshape,
                          const MatmulParts& parts);

// The blocked matmul (MatmulBlocked.cpp): its shape for a [batch.., M, N]
// product of dtype t under options o (rm 0 where it does not apply: options
// or dtype), and the kernel, with `parts`. Each invocation computes an
// rm x rn block of C (ty x 16 invocations: a ty·rm x 16rn tile), K in
// steps of kb.
struct BlockShape {
  int64_t rm = 0, rn = 0, kb = 8, ty = 16;
};
BlockShape matmulBlockFor(const LowerOptions& o, DType t, const Shape& vshape, int64_t K);
ir::Value* blockedMatmul(Lowering& l, DType t, const Operand& a, const Operand& b, const Shape& vshape, BlockShape s,
                         const MatmulParts& parts);
// Split K: the kernel adding the S parts (`sums`, f32 [S, batch.., M, N])
// of a product whose kernel read `in`, stored as the single kernel would
// (parts.store); `key` names that kernel's code.
ir::Value* sumOfParts(Lowering& l, DType t, const std::vector<Operand>& in, ir::Value* sums, int64_t S,
                      const Shape& vshape, const MatmulParts& parts, const std::string& key);

// f16 matmul on a GPU's matrix units (MatmulCoop.cpp): whether it applies
// (LowerOptions::coopMatrixSubgroup, f16, shapes and strides it takes), and
// the kernel.
bool coopMatmulApplies(const LowerOptions& o, DType t, const Operand& a, const Operand& b, const Shape& vshape);
ir::Value* coopMatmul(Lowering& l, DType t, const Operand& a, const Operand& b, const Shape& vshape);

// The strip matmul of targets whose invocations are vector lanes
// (MatmulStrip.cpp, LowerOptions::matmulLanes): whether it applies (B
// packed or contiguous along N, no gathered B), and the kernel, with `parts`.
bool stripMatmulApplies(const LowerOptions& o, DType t, const Operand& b, const Shape& vshape,
                        const MatmulParts& parts);
ir::Value* stripMatmul(Lowering& l, DType t, const Operand& a, const Operand& b, const Shape& vshape,
                       const MatmulParts& parts);

}  // namespace eph::tensor::linalg
