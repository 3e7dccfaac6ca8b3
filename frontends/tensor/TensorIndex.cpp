#include "frontends/tensor/TensorIndex.h"

#include <algorithm>

namespace eph::tensor {

namespace {
Program& prog(const Tensor& t) { return *t.program(); }
std::string dtypeText(DType t) { return std::string(dtypeName(t)); }
}  // namespace

Tensor concat(const std::vector<Tensor>& xs, int64_t axis, CallSite loc) {
  if (xs.empty() || !xs[0].program()) {
    // No program to record the error in: a default Tensor (apply on it fails later).
    return Tensor();
  }
  return prog(xs[0]).apply("concat", xs, {{"axis", axis}}, siteOf(loc));
}

Tensor stack(const std::vector<Tensor>& xs, int64_t axis, CallSite loc) {
  if (xs.empty() || !xs[0].program()) return Tensor();
  Program& p = prog(xs[0]);
  int64_t r = int64_t(xs[0].rank()) + 1;
  if (axis < -r || axis >= r) {
    p.fail(siteOf(loc), "stack: axis " + std::to_string(axis) + " is out of range for a result of rank " + std::to_string(r));
    return p.apply("invalid", {}, {}, siteOf(loc));
  }
  std::vector<Tensor> parts;
  for (const Tensor& x : xs) {
    if (x.program() == &p && x.shape() != xs[0].shape()) {
      p.fail(siteOf(loc), "stack: shapes " + shapeText(xs[0].shape()) + " and " + shapeText(x.shape()) + " differ");
      return p.apply("invalid", {}, {}, siteOf(loc));
    }
    parts.push_back(x.program() == &p ? unsqueeze(x, {axis}, loc) : x);
  }
  return p.apply("concat", parts, {{"axis", axis < 0 ? axis + r : axis}}, siteOf(loc));
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis, CallSite loc) {
  Program& p = prog(x);
  int64_t a = axis;
  if (a < 0) a += int64_t(x.rank());
  if (a < 0 || a >= int64_t(x.rank())) {
    p.fail(siteOf(loc), "split: axis " + std::to_string(axis) + " is out of range for " + shapeText(x.shape()));
    return {};
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) {
      p.fail(siteOf(loc), "split: a negative size in " + shapeText(sizes));
      return {};
    }
    total += s;
  }
  if (total != x.shape()[size_t(a)]) {
    p.fail(siteOf(loc), "split: sizes " + shapeText(sizes) + " add up to " + std::to_string(total) + ", not to the extent " +
                            std::to_string(x.shape()[size_t(a)]) + " of axis " + std::to_string(axis) + " of " +
                            shapeText(x.shape()));
    return {};
  }
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(slice(x, a, start, start + s, 1, loc));
    start += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t axis, CallSite loc) {
  Program& p = prog(x);
  int64_t a = axis;
  if (a < 0) a += int64_t(x.rank());
  if (a < 0 || a >= int64_t(x.rank())) {
    p.fail(siteOf(loc), "chunk: axis " + std::to_string(axis) + " is out of range for " + shapeText(x.shape()));
    return {};
  }
  if (chunks < 1) {
    p.fail(siteOf(loc), "chunk: " + std::to_string(chunks) + " chunks; at least 1");
    return {};
  }
  const int64_t len = x.shape()[size_t(a)], each = (len + chunks - 1) / chunks;
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < chunks; ++i) sizes.push_back(std::clamp<int64_t>(len - i * each, 0, each));
  return split(x, sizes, a, loc);
}

Tensor tile(const Tensor& x, std::vector<int64_t> repeats, CallSite loc) {
  return prog(x).apply("tile", {x}, {{"repeats", repeats}}, siteOf(loc));
}

Tensor pad(const Tensor& x, std::vector<int64_t> pads, const std::string& mode, double value, CallSite loc) {
  return prog(x).apply("pad", {x}, {{"pads", pads}, {"mode", mode}, {"value", value}}, siteOf(loc));
}

Tensor gather(const Tensor& data, const Tensor& indices, int64_t axis, CallSite loc) {
  return prog(data).apply("gather", {data, indices}, {{"axis", axis}}, siteOf(loc));
}
Tensor gather_elements(const Tensor& data, const Tensor& indices, int64_t axis, CallSite loc) {
  return prog(data).apply("gather_elements", {data, indices}, {{"axis", axis}}, siteOf(loc));
}
Tensor gather_nd(const Tensor& data, const Tensor& indices, int64_t batch_dims, CallSite loc) {
  return prog(data).apply("gather_nd", {data, indices}, {{"batch_dims", batch_dims}}, siteOf(loc));
}
Tensor scatter_elements(const Tensor& data, const Tensor& indices, const Tensor& updates, int64_t axis,
                        const std::string& reduction, CallSite loc) {
  return prog(data).apply("scatter_elements", {data, indices, updates}, {{"axis", axis}, {"reduction", reduction}},
                          siteOf(loc));
}
Tensor scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates, const std::string& reduction,
                  CallSite loc) {
  return prog(data).apply("scatter_nd", {data, indices, updates}, {{"reduction", reduction}}, siteOf(loc));
}
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& indices, CallSite loc) {
  if (indices.program() == x.program() && indices.rank() != 1) {
    prog(x).fail(siteOf(loc), "index_select: indices must be 1-D, not " + shapeText(indices.shape()));
    return prog(x).apply("invalid", {}, {}, siteOf(loc));
  }
  return gather(x, indices, axis, loc);
}
Tensor embedding(const Tensor& table, const Tensor& ids, CallSite loc) {
  if (table.rank() != 2) {
    prog(table).fail(siteOf(loc), "embedding: the table must be 2-D [rows, dim], not " + shapeText(table.shape()));
    return prog(table).apply("invalid", {}, {}, siteOf(loc));
  }
  return gather(table, ids, 0, loc);
}

Tensor one_hot(const Tensor& indices, int64_t depth, int64_t axis, double on_value, double off_value, DType dtype,
               CallSite loc) {
  return prog(indices).apply("one_hot", {indices},
                             {{"depth", depth}, {"axis", axis}, {"on_value", on_value}, {"off_value", off_value},
                              {"dtype", dtypeText(dtype)}},
                             siteOf(loc));
}
Tensor trilu(const Tensor& x, bool upper, int64_t k, CallSite loc) {
  return prog(x).apply("trilu", {x}, {{"upper", int64_t(upper)}, {"k", k}}, siteOf(loc));
}
Tensor tril(const Tensor& x, int64_t k, CallSite loc) { return trilu(x, false, k, loc); }
Tensor triu(const Tensor& x, int64_t k, CallSite loc) { return trilu(x, true, k, loc); }

Tensor resize(const Tensor& x, Shape sizes, const ResizeOptions& o, CallSite loc) {
  Attrs a{{"sizes", sizes},
          {"mode", o.mode},
          {"coordinate_transformation_mode", o.coordinate_transformation_mode},
          {"nearest_mode", o.nearest_mode},
          {"cubic_coeff_a", o.cubic_coeff_a},
          {"exclude_outside", int64_t(o.exclude_outside)},
          {"extrapolation_value", o.extrapolation_value}};
  if (!o.scales.empty()) a.set("scales", o.scales);
  if (!o.roi.empty()) a.set("roi", o.roi);
  return prog(x).apply("resize", {x}, a, siteOf(loc));
}

Tensor range(Program& p, double start, double limit, double delta, DType dtype, CallSite loc) {
  return p.apply("range", {}, {{"start", start}, {"limit", limit}, {"delta", delta}, {"dtype", dtypeText(dtype)}},
                 siteOf(loc));
}
Tensor random_uniform(Program& p, Shape shape, DType dtype, double low, double high, int64_t seed, CallSite loc) {
  return p.apply("random_uniform", {},
                 {{"shape", shape}, {"dtype", dtypeText(dtype)}, {"low", low}, {"high", high}, {"seed", seed}},
                 siteOf(loc));
}
Tensor random_normal(Program& p, Shape shape, DType dtype, double mean, double scale, int64_t seed, CallSite loc) {
  return p.apply("random_normal", {},
                 {{"shape", shape}, {"dtype", dtypeText(dtype)}, {"mean", mean}, {"scale", scale}, {"seed", seed}},
                 siteOf(loc));
}
Tensor bernoulli(const Tensor& probs, int64_t seed, CallSite loc) {
  return prog(probs).apply("bernoulli", {probs}, {{"seed", seed}}, siteOf(loc));
}

}  // namespace eph::tensor
