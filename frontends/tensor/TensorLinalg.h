// The C++ API of the linalg ops (included by Tensor.h): matmul, gemm,
// convolutions, pooling, einsum and attention (docs/tensor.md, "Linear
// algebra, convolution and pooling"). Empty vectors in the option structs
// mean the ONNX defaults (strides and dilations 1, pads 0).
#pragma once

#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "frontends/tensor/Program.h"

namespace eph::tensor {

// numpy's matmul: 1-D operands are promoted to matrices (and the added
// dimension removed), batch dimensions broadcast; dtypes promote.
Tensor matmul(const Tensor& a, const Tensor& b, std::source_location loc = std::source_location::current());

struct GemmOptions {
  double alpha = 1, beta = 1;
  bool transA = false, transB = false;
};
// alpha·op(a)·op(b) + beta·c, c (optional: an empty Tensor) broadcast to [M, N].
Tensor gemm(const Tensor& a, const Tensor& b, const Tensor& c = {}, GemmOptions o = {},
            std::source_location loc = std::source_location::current());

struct ConvOptions {
  std::vector<int64_t> strides, pads, dilations;  // pads: [begin.., end..]
  int64_t group = 1;
  std::string autoPad = "NOTSET";  // NOTSET, SAME_UPPER, SAME_LOWER, VALID
};
// x[N, C, d..], w[M, C/group, k..], bias[M] (optional).
Tensor conv(const Tensor& x, const Tensor& w, const Tensor& bias = {}, ConvOptions o = {},
            std::source_location loc = std::source_location::current());

struct ConvTransposeOptions {
  std::vector<int64_t> strides, pads, dilations, outputPadding, outputShape;
  int64_t group = 1;
  std::string autoPad = "NOTSET";
};
// x[N, C, d..], w[C, M/group, k..], bias[M] (optional).
Tensor conv_transpose(const Tensor& x, const Tensor& w, const Tensor& bias = {}, ConvTransposeOptions o = {},
                      std::source_location loc = std::source_location::current());

struct PoolOptions {
  std::vector<int64_t> kernel, strides, pads, dilations;
  bool ceilMode = false;
  std::string autoPad = "NOTSET";
  bool countIncludePad = false;  // avg_pool
};
Tensor max_pool(const Tensor& x, PoolOptions o, std::source_location loc = std::source_location::current());
Tensor avg_pool(const Tensor& x, PoolOptions o, std::source_location loc = std::source_location::current());
Tensor lp_pool(const Tensor& x, PoolOptions o, int64_t p = 2, std::source_location loc = std::source_location::current());
// Over every spatial dimension: [N, C, d..] -> [N, C, 1..].
Tensor global_avg_pool(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor global_max_pool(const Tensor& x, std::source_location loc = std::source_location::current());
Tensor global_lp_pool(const Tensor& x, int64_t p = 2, std::source_location loc = std::source_location::current());

// numpy's einsum ("ij,jk->ik", "...ij,...jk", implicit outputs).
Tensor einsum(const std::string& equation, std::vector<Tensor> inputs,
              std::source_location loc = std::source_location::current());

struct AttentionOptions {
  std::optional<double> scale;  // default 1/sqrt(d)
  bool causal = false;          // keep key t of query s only where t <= s
};
// softmax(scale·q·kᵀ + mask)·v; q[.., S, d], k[.., T, d], v[.., T, dv]; mask
// (optional) broadcast to [.., S, T]: bool (true = keep) or float (added).
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask = {}, AttentionOptions o = {},
                 std::source_location loc = std::source_location::current());

}  // namespace eph::tensor
