#include "frontends/tensor/Tensor.h"

namespace eph::tensor {

namespace {

Tensor apply(const Tensor& x, const char* op, std::vector<Tensor> in, Attrs a, CallSite loc) {
  return x.program()->apply(op, std::move(in), std::move(a), siteOf(loc));
}

Attrs reduceAttrs(std::vector<int64_t> axes, bool keepdims) {
  return {{"axes", std::move(axes)}, {"keepdims", int64_t(keepdims)}};
}

}  // namespace

#define EPH_TENSOR_REDUCE(name, op)                                                    \
  Tensor name(const Tensor& x, std::vector<int64_t> axes, bool keepdims, CallSite loc) { \
    return apply(x, op, {x}, reduceAttrs(std::move(axes), keepdims), loc);              \
  }
EPH_TENSOR_REDUCE(sum, "reduce_sum") EPH_TENSOR_REDUCE(mean, "reduce_mean") EPH_TENSOR_REDUCE(max, "reduce_max")
EPH_TENSOR_REDUCE(min, "reduce_min") EPH_TENSOR_REDUCE(prod, "reduce_prod") EPH_TENSOR_REDUCE(norm_l1, "reduce_l1")
EPH_TENSOR_REDUCE(norm_l2, "reduce_l2") EPH_TENSOR_REDUCE(sum_square, "reduce_sum_square")
EPH_TENSOR_REDUCE(logsumexp, "reduce_log_sum_exp")
#undef EPH_TENSOR_REDUCE

Tensor var(const Tensor& x, std::vector<int64_t> axes, bool keepdims, int64_t correction, CallSite loc) {
  Attrs a = reduceAttrs(std::move(axes), keepdims);
  a.set("correction", correction);
  return apply(x, "var", {x}, a, loc);
}

Tensor argmax(const Tensor& x, int64_t axis, bool keepdims, bool selectLast, CallSite loc) {
  return apply(x, "argmax", {x},
               {{"axis", axis}, {"keepdims", int64_t(keepdims)}, {"select_last_index", int64_t(selectLast)}}, loc);
}
Tensor argmin(const Tensor& x, int64_t axis, bool keepdims, bool selectLast, CallSite loc) {
  return apply(x, "argmin", {x},
               {{"axis", axis}, {"keepdims", int64_t(keepdims)}, {"select_last_index", int64_t(selectLast)}}, loc);
}

Tensor softmax(const Tensor& x, int64_t axis, CallSite loc) { return apply(x, "softmax", {x}, {{"axis", axis}}, loc); }
Tensor log_softmax(const Tensor& x, int64_t axis, CallSite loc) {
  return apply(x, "log_softmax", {x}, {{"axis", axis}}, loc);
}
Tensor hardmax(const Tensor& x, int64_t axis, CallSite loc) { return apply(x, "hardmax", {x}, {{"axis", axis}}, loc); }

Tensor layer_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t axis, double epsilon, CallSite loc) {
  std::vector<Tensor> in = {x, scale};
  if (bias) in.push_back(bias);
  return apply(x, "layer_norm", in, {{"axis", axis}, {"epsilon", epsilon}}, loc);
}
Tensor batch_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean, const Tensor& var,
                  double epsilon, CallSite loc) {
  return apply(x, "batch_norm", {x, scale, bias, mean, var}, {{"epsilon", epsilon}}, loc);
}
Tensor instance_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, double epsilon, CallSite loc) {
  return apply(x, "instance_norm", {x, scale, bias}, {{"epsilon", epsilon}}, loc);
}
Tensor lp_normalize(const Tensor& x, int64_t axis, int64_t p, CallSite loc) {
  return apply(x, "lp_normalization", {x}, {{"axis", axis}, {"p", p}}, loc);
}
Tensor mean_variance_normalize(const Tensor& x, std::vector<int64_t> axes, CallSite loc) {
  return apply(x, "mean_variance_normalization", {x}, {{"axes", std::move(axes)}}, loc);
}

Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive, bool reverse, CallSite loc) {
  return apply(x, "cumsum", {x}, {{"axis", axis}, {"exclusive", int64_t(exclusive)}, {"reverse", int64_t(reverse)}}, loc);
}
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t axis, bool largest, CallSite loc) {
  Attrs a{{"k", k}, {"axis", axis}, {"largest", int64_t(largest)}};
  return {apply(x, "topk", {x}, a, loc), apply(x, "topk_indices", {x}, a, loc)};
}
Tensor sort(const Tensor& x, int64_t axis, bool descending, CallSite loc) {
  return apply(x, "sort", {x}, {{"axis", axis}, {"descending", int64_t(descending)}}, loc);
}
Tensor argsort(const Tensor& x, int64_t axis, bool descending, CallSite loc) {
  return apply(x, "argsort", {x}, {{"axis", axis}, {"descending", int64_t(descending)}}, loc);
}

}  // namespace eph::tensor
