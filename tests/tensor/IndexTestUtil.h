// The float64 reference tensors of the index tests (IndexTest.cpp,
// ResizeTest.cpp): build, random and reversed references, and programs'
// inputs (plain or as views) made from them.
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tests/tensor/TensorTestUtil.h"

namespace eph::tensor::test {

// ---- float64 reference tensors -----------------------------------------------

struct Ref {
  Shape shape;
  std::vector<double> v;
};

inline double at(const Ref& r, const std::vector<int64_t>& idx) { return r.v[size_t(ravel(idx, r.shape))]; }

// A reference of shape s whose element at idx is f(idx).
inline Ref build(const Shape& s, const std::function<double(const std::vector<int64_t>&)>& f) {
  Ref r{s, std::vector<double>(size_t(numel(s)))};
  for (int64_t i = 0; i < numel(s); ++i) r.v[size_t(i)] = f(unravel(i, s));
  return r;
}

// Values exact in f32 (so an f32 input holds them as they are).
inline Ref rnd(const Shape& s, uint64_t seed, double lo = -4, double hi = 4) {
  Ref r{s, randomValues(size_t(numel(s)), seed, lo, hi)};
  for (double& x : r.v) x = double(float(x));
  return r;
}

// Integer-valued (exact in every dtype used here).
inline Ref rndInt(const Shape& s, uint64_t seed, int lo, int hi) {
  Ref r = rnd(s, seed, lo, hi + 1);
  for (double& x : r.v) x = std::floor(x);
  return r;
}

inline HostTensor host(DType t, const Ref& r) { return HostTensor::of(t, r.shape, r.v); }

// The reference with its axes reversed: what an input must hold so that
// transpose(input) (a non-contiguous view) is `r`.
inline Ref reversed(const Ref& r) {
  Shape s(r.shape.rbegin(), r.shape.rend());
  return build(s, [&](const std::vector<int64_t>& i) { return at(r, std::vector<int64_t>(i.rbegin(), i.rend())); });
}

// An input whose transpose is `r`, and that transpose.
inline Tensor viewOf(Program& p, const std::string& name, DType t, const Ref& r, std::vector<HostTensor>& inputs) {
  Ref rv = reversed(r);
  inputs.push_back(host(t, rv));
  return transpose(p.input(name, t, rv.shape));
}

inline Tensor inputOf(Program& p, const std::string& name, DType t, const Ref& r, std::vector<HostTensor>& inputs) {
  inputs.push_back(host(t, r));
  return p.input(name, t, r.shape);
}



// ---- resize's reference (ResizeTest.cpp; IndexTest.cpp's f16 and error cases)

// ONNX's Resize in float64, after onnx/reference/ops/op_resize.py: each axis
// interpolated in turn (the outer axis over the inner axes' results), the
// neighbours of x_original found among the edge-padded input by distance
// (ties to the lower index), coefficients by mode, exclude_outside zeroing
// and renormalising. Where the reference uses the float output width
// scale * in, this uses the integer output extent, as ONNX's operator text
// and onnxruntime do (they agree whenever scale = out / in is exact).
struct ResizeRef {
  ResizeOptions o;
  Shape sizes;
  std::vector<double> scales;  // one per axis (given, or out / in)
  std::vector<double> roi;     // [starts..., ends...]
};

inline double interp1d(const std::vector<double>& data, const ResizeRef& r, size_t axis, int64_t outLen, int64_t x) {
  const int64_t in = int64_t(data.size());
  const double scale = r.scales[axis];
  const std::string& ctm = r.o.coordinate_transformation_mode;
  double xo = 0;
  if (ctm == "half_pixel") {
    xo = (double(x) + 0.5) / scale - 0.5;
  } else if (ctm == "half_pixel_symmetric") {
    double adjustment = double(outLen) / (scale * double(in)), center = double(in) / 2, offset = center * (1 - adjustment);
    xo = offset + (double(x) + 0.5) / scale - 0.5;
  } else if (ctm == "pytorch_half_pixel") {
    xo = outLen > 1 ? (double(x) + 0.5) / scale - 0.5 : 0;
  } else if (ctm == "align_corners") {
    xo = outLen > 1 ? double(x) * double(in - 1) / double(outLen - 1) : 0;
  } else if (ctm == "asymmetric") {
    xo = double(x) / scale;
  } else {  // tf_crop_and_resize
    const size_t k = r.sizes.size();
    const double s = r.roi[axis], e = r.roi[axis + k];
    xo = outLen > 1 ? double(x) * (e - s) * double(in - 1) / double(outLen - 1) : (e - s) * double(in - 1) / 2;
    xo += s * double(in - 1);
    if (xo < 0 || xo > double(in - 1)) return r.o.extrapolation_value;
  }
  const double ratio = xo == std::floor(xo) ? 1 : xo - std::floor(xo);
  std::vector<double> c;
  if (r.o.mode == "nearest") {
    const std::string& m = r.o.nearest_mode;
    if (ratio == 1) c = {0, 1};
    else if (m == "round_prefer_floor") c = {double(ratio <= 0.5), double(ratio > 0.5)};
    else if (m == "round_prefer_ceil") c = {double(ratio < 0.5), double(ratio >= 0.5)};
    else if (m == "floor") c = {1, 0};
    else c = {0, 1};
  } else if (r.o.mode == "linear") {
    c = {1 - ratio, ratio};
  } else {
    const double A = r.o.cubic_coeff_a;
    c = {((A * (ratio + 1) - 5 * A) * (ratio + 1) + 8 * A) * (ratio + 1) - 4 * A,
         ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1,
         ((A + 2) * (1 - ratio) - (A + 3)) * (1 - ratio) * (1 - ratio) + 1,
         ((A * ((1 - ratio) + 1) - 5 * A) * ((1 - ratio) + 1) + 8 * A) * ((1 - ratio) + 1) - 4 * A};
  }
  const int64_t n = int64_t(c.size()), padw = (n + 1) / 2, limit = in + 2 * padw;
  std::vector<int64_t> order;
  for (int64_t i = 0; i < limit; ++i) order.push_back(i);
  const double xp = xo + double(padw);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return std::abs(xp - double(a)) < std::abs(xp - double(b)); });
  std::vector<int64_t> idx(order.begin(), order.begin() + n);
  std::sort(idx.begin(), idx.end());
  double sum = 0, v = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t j = idx[size_t(i)] - padw;  // in the unpadded input
    if (r.o.exclude_outside && (j < 0 || j >= in)) c[size_t(i)] = 0;
    sum += c[size_t(i)];
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t j = std::clamp<int64_t>(idx[size_t(i)] - padw, 0, in - 1);  // edge padding
    v += (r.o.exclude_outside ? c[size_t(i)] / sum : c[size_t(i)]) * data[size_t(j)];
  }
  return v;
}

inline double resizeAt(const Ref& x, const ResizeRef& r, size_t d, std::vector<int64_t>& idx, const std::vector<int64_t>& out) {
  if (d == x.shape.size()) return at(x, idx);
  std::vector<double> line;
  for (int64_t j = 0; j < x.shape[d]; ++j) {
    idx[d] = j;
    line.push_back(resizeAt(x, r, d + 1, idx, out));
  }
  return interp1d(line, r, d, r.sizes[d], out[d]);
}

inline Ref resizeRef(const Ref& x, Shape sizes, const ResizeOptions& o) {
  ResizeRef r{o, sizes, o.scales, o.roi};
  const size_t k = sizes.size();
  if (r.scales.empty())
    for (size_t d = 0; d < k; ++d) r.scales.push_back(x.shape[d] ? double(sizes[d]) / double(x.shape[d]) : 1);
  if (r.roi.empty()) {
    r.roi.assign(k, 0);
    r.roi.resize(2 * k, 1);
  }
  return build(sizes, [&](const std::vector<int64_t>& out) {
    std::vector<int64_t> idx(k);
    return resizeAt(x, r, 0, idx, out);
  });
}

inline ResizeOptions opts(std::string mode, std::string ctm, std::string nearest = "round_prefer_floor") {
  ResizeOptions o;
  o.mode = std::move(mode);
  o.coordinate_transformation_mode = std::move(ctm);
  o.nearest_mode = std::move(nearest);
  return o;
}

// resize of x to each of `cases` in one program (x given as a transposed view when `view`), against resizeRef.

}  // namespace eph::tensor::test
