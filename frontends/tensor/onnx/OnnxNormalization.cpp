// ONNX normalisation ops: BatchNormalization, InstanceNormalization,
// LayerNormalization, LpNormalization, MeanVarianceNormalization and LRN.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "frontends/tensor/Ops.h"
#include "frontends/tensor/onnx/OnnxImpl.h"

namespace eph::tensor::onnx {

namespace {

std::string mapBatchNorm(NodeCtx& c) {
  if (c.i("spatial", 1) != 1) return "spatial=0 is not supported";
  if (c.i("training_mode", 0)) {
    // Normalise with the batch's mean and (population) variance over every
    // axis but 1; the running statistics move toward them by 1 - momentum.
    Tensor x = c.in(0);
    if (x.rank() < 2) return "the input must have rank 2 or more";
    Ints axes{0};
    for (size_t d = 2; d < x.rank(); ++d) axes.push_back(int64_t(d));
    DType t = x.dtype();
    Tensor meanK = c.op("reduce_mean", {x}, {{"axes", axes}, {"keepdims", int64_t(1)}});
    Tensor dev = c.op("sub", {x, meanK});
    Tensor varK = c.op("reduce_mean", {c.op("mul", {dev, dev})}, {{"axes", axes}, {"keepdims", int64_t(1)}});
    Ints flat{x.shape()[1]};
    Tensor mean = c.op("reshape", {meanK}, {{"shape", flat}}), var = c.op("reshape", {varK}, {{"shape", flat}});
    double m = c.f("momentum", 0.9);
    c.outs = {c.op("batch_norm", {x, c.in(1), c.in(2), mean, var}, {{"epsilon", double(c.f("epsilon", 1e-5))}})};
    auto blend = [&](Tensor running, Tensor current) {
      return c.op("add", {c.op("mul", {running, c.scalar(t, m)}), c.op("mul", {current, c.scalar(t, 1 - m)})});
    };
    c.outs.push_back(blend(c.in(3), mean));
    c.outs.push_back(blend(c.in(4), var));
    return "";
  }
  return one(c, c.op("batch_norm", {c.in(0), c.in(1), c.in(2), c.in(3), c.in(4)}, {{"epsilon", double(c.f("epsilon", 1e-5))}}));
}

std::string mapLayerNorm(NodeCtx& c) {
  if (c.i("stash_type", 1) != 1) return "stash_type other than 1 is not supported";
  Tensor x = c.in(0);
  int64_t axis = c.i("axis", -1);
  double eps = c.f("epsilon", 1e-5);
  c.outs = {c.op("layer_norm", presentInputs(c), {{"axis", axis}, {"epsilon", eps}})};
  if (c.node.output_size() > 1) {
    // Mean and InvStdDev over axis..rank-1, kept as extent-1 dimensions.
    if (axis < 0) axis += int64_t(x.rank());
    if (axis < 0 || axis >= int64_t(x.rank())) return "axis " + std::to_string(c.i("axis", -1)) + " is out of range";
    Ints axes;
    for (int64_t d = axis; d < int64_t(x.rank()); ++d) axes.push_back(d);
    Tensor xf = c.cast(x, DType::F32);
    Tensor mean = c.op("reduce_mean", {xf}, {{"axes", axes}, {"keepdims", int64_t(1)}});
    Tensor dev = c.op("sub", {xf, mean});
    Tensor var = c.op("reduce_mean", {c.op("mul", {dev, dev})}, {{"axes", axes}, {"keepdims", int64_t(1)}});
    Tensor inv = c.op("reciprocal", {c.op("sqrt", {c.op("add", {var, c.scalar(DType::F32, eps)})})});
    c.outs.push_back(mean);
    c.outs.push_back(inv);
  }
  return "";
}

std::string mapLRN(NodeCtx& c) {
  // y = x / (bias + alpha/size · Σ_{window over channels} x²)^beta, as a pad + sum of slices.
  Tensor x = c.in(0);
  if (x.rank() < 3) return "LRN wants an input of rank 3 or more";
  int64_t size = c.i("size", 0);
  if (size <= 0) return "size must be positive";
  double alpha = c.f("alpha", 1e-4), beta = c.f("beta", 0.75), bias = c.f("bias", 1.0);
  DType t = x.dtype();
  Tensor sq = c.op("mul", {x, x});
  int64_t C = x.shape()[1];
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  Ints pads(x.rank() * 2, 0);
  pads[1] = before;
  pads[x.rank() + 1] = after;
  Tensor padded = c.op("pad", {sq}, {{"pads", pads}});
  Tensor sum;
  for (int64_t k = 0; k < size; ++k) {
    Tensor s = c.op("slice", {padded}, {{"starts", Ints{k}}, {"ends", Ints{k + C}}, {"axes", Ints{1}}});
    sum = sum ? c.op("add", {sum, s}) : s;
  }
  Tensor d = c.op("pow", {c.op("add", {c.op("mul", {sum, c.scalar(t, alpha / double(size))}), c.scalar(t, bias)}), c.scalar(t, beta)});
  return one(c, c.op("div", {x, d}));
}

std::string mapInstanceNorm(NodeCtx& c) {
  return one(c, c.op("instance_norm", {c.in(0), c.in(1), c.in(2)}, {{"epsilon", double(c.f("epsilon", 1e-5))}}));
}

std::string mapLpNorm(NodeCtx& c) {
  return one(c, c.op("lp_normalization", {c.in(0)}, {{"axis", c.i("axis", -1)}, {"p", c.i("p", 2)}}));
}

std::string mapMVN(NodeCtx& c) {
  Attrs a;
  if (c.has("axes")) a.set("axes", c.ints("axes"));
  return one(c, c.op("mean_variance_normalization", {c.in(0)}, a));
}

}  // namespace

std::vector<OpEntry> normalizationEntries() {
  return {
    {"BatchNormalization", 6, 99, "epsilon,is_test,momentum,spatial,training_mode", mapBatchNorm},
    {"InstanceNormalization", 6, 99, "epsilon", mapInstanceNorm},
    {"LayerNormalization", 17, 99, "axis,epsilon,stash_type", mapLayerNorm},
    {"LpNormalization", 1, 99, "axis,p", mapLpNorm},
    {"MeanVarianceNormalization", 9, 99, "axes", mapMVN},
    {"LRN", 1, 99, "alpha,beta,bias,size", mapLRN},
  };
}

}  // namespace eph::tensor::onnx
