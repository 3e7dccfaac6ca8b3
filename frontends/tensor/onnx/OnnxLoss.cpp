// ONNX loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss,
// composed of tensor ops.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "frontends/tensor/Ops.h"
#include "frontends/tensor/onnx/OnnxImpl.h"

namespace eph::tensor::onnx {

namespace {

// NegativeLogLikelihoodLoss on log-probabilities x[N, C, d...] with targets
// t[N, d...] and optional weights w[C]: loss = -x[n, t, d...]·w[t] (0 where t
// is ignore_index), then none / sum / mean (the sum over the summed weights).
std::string nllLoss(NodeCtx& c, Tensor x, Tensor t, Tensor w, Tensor& out) {
  std::string reduction = c.s("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") return "reduction '" + reduction + "' is not supported";
  if (x.rank() < 2) return "the input must have rank 2 or more, not " + shapeText(x.shape());
  DType ft = x.dtype();
  Tensor mask;
  Tensor safe = t;
  if (c.has("ignore_index")) {
    mask = c.op("ne", {t, c.scalar(t.dtype(), double(c.i("ignore_index", 0)))});
    safe = c.op("where", {mask, t, c.scalar(t.dtype(), 0)});
  }
  Tensor picked = c.op("gather_elements", {x, c.op("unsqueeze", {safe}, {{"axes", Ints{1}}})}, {{"axis", int64_t(1)}});
  picked = c.op("squeeze", {picked}, {{"axes", Ints{1}}});
  Tensor weight;
  if (w) weight = c.op("gather", {w, safe}, {{"axis", int64_t(0)}});
  if (mask) {
    Tensor m = c.op("cast", {mask}, {{"to", dn(ft)}});
    weight = weight ? c.op("mul", {weight, m}) : m;
  }
  Tensor loss = c.op("neg", {picked});
  if (weight) loss = c.op("mul", {loss, weight});
  if (reduction == "none") {
    out = loss;
    return "";
  }
  Tensor sum = c.op("reduce_sum", {loss}, {{"keepdims", int64_t(0)}});
  if (reduction == "sum") {
    out = sum;
    return "";
  }
  Tensor denom = weight ? c.op("reduce_sum", {weight}, {{"keepdims", int64_t(0)}}) : c.scalar(ft, double(numel(t.shape())));
  out = c.op("div", {sum, denom});
  return "";
}

std::string mapNLLLoss(NodeCtx& c) {
  Tensor out;
  std::string why = nllLoss(c, c.in(0), c.in(1), c.present(2) ? c.in(2) : Tensor(), out);
  if (!why.empty()) return why;
  return one(c, out);
}

std::string mapSCELoss(NodeCtx& c) {
  Tensor logp = c.op("log_softmax", {c.in(0)}, {{"axis", int64_t(1)}});
  Tensor out;
  std::string why = nllLoss(c, logp, c.in(1), c.present(2) ? c.in(2) : Tensor(), out);
  if (!why.empty()) return why;
  c.outs = {out, logp};
  return "";
}

}  // namespace

std::vector<OpEntry> lossEntries() {
  return {
    {"NegativeLogLikelihoodLoss", 12, 99, "ignore_index,reduction", mapNLLLoss},
    {"SoftmaxCrossEntropyLoss", 12, 99, "ignore_index,reduction", mapSCELoss},
  };
}

}  // namespace eph::tensor::onnx
