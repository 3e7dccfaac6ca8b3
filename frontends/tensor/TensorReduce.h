// The C++ API of the reduce ops (included by Tensor.h; docs/tensor.md,
// "Reductions and normalisation"). `axes` empty: every axis. Negative axes
// count from the end. keepdims defaults to false here (the ops' attribute
// defaults to ONNX's 1).
#pragma once

#include <source_location>
#include <utility>
#include <vector>

#include "frontends/tensor/Program.h"

namespace eph::tensor {

#define EPH_TENSOR_REDUCE(name)                                                                  \
  Tensor name(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false,           \
              std::source_location loc = std::source_location::current());
// reduce_sum, reduce_mean (integers: truncating, in their dtype), reduce_max,
// reduce_min, reduce_prod, reduce_l1, reduce_l2 (sqrt of the sum of
// squares), reduce_sum_square, reduce_log_sum_exp.
EPH_TENSOR_REDUCE(sum) EPH_TENSOR_REDUCE(mean) EPH_TENSOR_REDUCE(max) EPH_TENSOR_REDUCE(min) EPH_TENSOR_REDUCE(prod)
EPH_TENSOR_REDUCE(norm_l1) EPH_TENSOR_REDUCE(norm_l2) EPH_TENSOR_REDUCE(sum_square) EPH_TENSOR_REDUCE(logsumexp)
#undef EPH_TENSOR_REDUCE
// Σ(x - mean)² / (n - correction) (float tensors).
Tensor var(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdims = false, int64_t correction = 0,
           std::source_location loc = std::source_location::current());
// The index (i64) of the first largest / smallest element along `axis` (the last with selectLast).
Tensor argmax(const Tensor& x, int64_t axis, bool keepdims = false, bool selectLast = false,
              std::source_location loc = std::source_location::current());
Tensor argmin(const Tensor& x, int64_t axis, bool keepdims = false, bool selectLast = false,
              std::source_location loc = std::source_location::current());

Tensor softmax(const Tensor& x, int64_t axis = -1, std::source_location loc = std::source_location::current());
Tensor log_softmax(const Tensor& x, int64_t axis = -1, std::source_location loc = std::source_location::current());
Tensor hardmax(const Tensor& x, int64_t axis = -1, std::source_location loc = std::source_location::current());

// Normalises over axes axis..rank-1; scale and bias (bias optional: a null
// Tensor) broadcast to x.shape[axis:].
Tensor layer_norm(const Tensor& x, const Tensor& scale, const Tensor& bias = {}, int64_t axis = -1, double epsilon = 1e-5,
                  std::source_location loc = std::source_location::current());
// Inference batch norm of x[N, C, ...] with per-channel scale, bias, mean and var [C].
Tensor batch_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean, const Tensor& var,
                  double epsilon = 1e-5, std::source_location loc = std::source_location::current());
// Normalises x[N, C, ...] over its spatial axes, per sample and channel.
Tensor instance_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, double epsilon = 1e-5,
                     std::source_location loc = std::source_location::current());
// x / ‖x‖_p along axis (p = 1 or 2).
Tensor lp_normalize(const Tensor& x, int64_t axis = -1, int64_t p = 2,
                    std::source_location loc = std::source_location::current());
// (x - mean) / (std + 1e-9) over `axes`.
Tensor mean_variance_normalize(const Tensor& x, std::vector<int64_t> axes = {0, 2, 3},
                               std::source_location loc = std::source_location::current());

Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive = false, bool reverse = false,
              std::source_location loc = std::source_location::current());
// The k largest (smallest) elements along axis, sorted, and their indices (i64).
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t axis = -1, bool largest = true,
                               std::source_location loc = std::source_location::current());
// Stable sort along axis (NaN is the largest value), and the permutation (i64).
Tensor sort(const Tensor& x, int64_t axis = -1, bool descending = false,
            std::source_location loc = std::source_location::current());
Tensor argsort(const Tensor& x, int64_t axis = -1, bool descending = false,
               std::source_location loc = std::source_location::current());

}  // namespace eph::tensor
