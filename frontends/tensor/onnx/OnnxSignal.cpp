// ONNX signal ops: DFT and STFT as matmuls with constant cos/sin tables, and
// the Hann, Hamming and Blackman windows and MelWeightMatrix (constants at import).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "frontends/tensor/Ops.h"
#include "frontends/tensor/onnx/OnnxImpl.h"

namespace eph::tensor::onnx {

namespace {

std::string mapWindow(NodeCtx& c) {
  Ints size;
  std::string why;
  if (!c.ints(0, size, why, "size")) return why;
  if (size.size() != 1 || size[0] < 0) return "size must be one non-negative integer";
  auto dt = dtypeOfOnnx(int32_t(c.i("output_datatype", 1)));
  if (!dt) return "output_datatype " + onnxTypeName(int32_t(c.i("output_datatype", 1))) + " is not supported";
  int64_t n = size[0];
  double denom = c.i("periodic", 1) ? double(n) : double(n - 1);
  const std::string& op = c.node.op_type();
  HostTensor h(*dt, {n});
  for (int64_t k = 0; k < n; ++k) {
    double a = 2 * M_PI * double(k) / denom, v;
    if (op == "HannWindow") v = 0.5 - 0.5 * std::cos(a);
    else if (op == "HammingWindow") v = 25.0 / 46 - (1 - 25.0 / 46) * std::cos(a);
    else v = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
    h.set(k, v);
  }
  return one(c, c.constant(std::move(h)));
}

// MelWeightMatrix (opset 17): [dft_length/2 + 1, num_mel_bins] triangular
// filters, peak 1, between num_mel_bins + 2 points evenly spaced on the mel
// scale mel(f) = 2595·log10(1 + f/700) from lower_edge_hertz to
// upper_edge_hertz, each mapped to the bin floor((dft_length + 1)·f /
// sample_rate) (ONNX's reference). A constant at import, like the windows.
std::string mapMelWeightMatrix(NodeCtx& c) {
  Ints bins, dftLength, rate;
  std::vector<double> lower, upper;
  std::string why;
  if (!c.ints(0, bins, why, "num_mel_bins") || !c.ints(1, dftLength, why, "dft_length") ||
      !c.ints(2, rate, why, "sample_rate") || !c.floats(3, lower, why, "lower_edge_hertz") ||
      !c.floats(4, upper, why, "upper_edge_hertz"))
    return why;
  if (bins.size() != 1 || dftLength.size() != 1 || rate.size() != 1 || lower.size() != 1 || upper.size() != 1)
    return "every input must be one value";
  const int64_t M = bins[0], N = dftLength[0], R = rate[0];
  if (M < 1 || N < 1 || R < 1) return "num_mel_bins, dft_length and sample_rate must be positive";
  auto dt = dtypeOfOnnx(int32_t(c.i("output_datatype", 1)));
  if (!dt) return "output_datatype " + onnxTypeName(int32_t(c.i("output_datatype", 1))) + " is not supported";
  const int64_t K = N / 2 + 1;
  auto mel = [](double f) { return 2595 * std::log10(1 + f / 700); };
  const double lowMel = mel(lower[0]), step = (mel(upper[0]) - lowMel) / double(M + 2);
  std::vector<int64_t> point(size_t(M + 2));
  for (int64_t i = 0; i < M + 2; ++i) {
    double f = 700 * (std::pow(10.0, (double(i) * step + lowMel) / 2595) - 1);
    point[size_t(i)] = int64_t(std::floor(double(N + 1) * f / double(R)));
  }
  std::vector<double> w(size_t(K * M), 0);
  auto at = [&](int64_t j, int64_t i) -> double& {
    if (j < 0 || j >= K) throw std::out_of_range("bin");
    return w[size_t(j * M + i)];
  };
  try {
    for (int64_t i = 0; i < M; ++i) {
      const int64_t lo = point[size_t(i)], mid = point[size_t(i + 1)], hi = point[size_t(i + 2)];
      if (mid == lo) at(mid, i) = 1;
      else
        for (int64_t j = lo; j <= mid; ++j) at(j, i) = double(j - lo) / double(mid - lo);
      for (int64_t j = mid; j < hi; ++j) at(j, i) = double(hi - j) / double(hi - mid);
    }
  } catch (const std::out_of_range&) {
    std::ostringstream hz;
    hz << upper[0];
    return "upper_edge_hertz " + hz.str() + " maps past the last of the " + std::to_string(K) +
           " bins of a " + std::to_string(N) + "-point DFT at " + std::to_string(R) + " Hz";
  }
  return one(c, c.constant(HostTensor::of(*dt, {K, M}, w)));
}

// DFT along the last axis of xr (+ i·xi, when xi is set) as matmuls with
// constant cos/sin tables: y_k = Σ_n x_n e^{∓2πi kn/N} (1/N for the inverse).
void dftLast(NodeCtx& c, Tensor xr, Tensor xi, int64_t N, bool inverse, bool onesided, Tensor& yr, Tensor& yi) {
  DType t = xr.dtype();
  int64_t K = onesided ? N / 2 + 1 : N;
  HostTensor C(t, {N, K}), S(t, {N, K});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      double a = 2 * M_PI * double((n * k) % N) / double(N);
      C.set(n * K + k, std::cos(a));
      S.set(n * K + k, std::sin(a));
    }
  Tensor cm = c.constant(std::move(C)), sm = c.constant(std::move(S));
  Tensor rc = c.op("matmul", {xr, cm}), rs = c.op("matmul", {xr, sm});
  if (!inverse) {
    yr = rc;
    yi = c.op("neg", {rs});
    if (xi) {
      yr = c.op("add", {yr, c.op("matmul", {xi, sm})});
      yi = c.op("add", {yi, c.op("matmul", {xi, cm})});
    }
  } else {
    yr = rc;
    yi = rs;
    if (xi) {
      yr = c.op("sub", {yr, c.op("matmul", {xi, sm})});
      yi = c.op("add", {yi, c.op("matmul", {xi, cm})});
    }
    yr = c.op("div", {yr, c.scalar(t, double(N))});
    yi = c.op("div", {yi, c.scalar(t, double(N))});
  }
}

// Splits x[..., 1|2] into its real and imaginary parts (no imaginary part: null).
bool complexParts(NodeCtx& c, Tensor x, Tensor& re, Tensor& im, std::string& why) {
  size_t r = x.rank();
  int64_t last = r ? x.shape()[r - 1] : 0;
  if (last != 1 && last != 2) return why = "the last dimension must be 1 (real) or 2 (complex), not " + shapeText(x.shape()), false;
  auto part = [&](int64_t k) {
    return c.op("squeeze", {c.op("slice", {x}, {{"starts", Ints{k}}, {"ends", Ints{k + 1}}, {"axes", Ints{-1}}})}, {{"axes", Ints{-1}}});
  };
  re = part(0);
  if (last == 2) im = part(1);
  return true;
}

std::string mapDFT(NodeCtx& c) {
  Tensor x = c.in(0), re, im;
  std::string why;
  if (!complexParts(c, x, re, im, why)) return why;
  size_t r = re.rank();
  int64_t axis = c.i("axis", 1);
  if (!normaliseAxis(axis, r) ) return "axis " + std::to_string(c.i("axis", 1)) + " is out of range";
  int64_t len = re.shape()[size_t(axis)], N = len;
  if (c.present(1)) {
    Ints v;
    if (!c.ints(1, v, why, "dft_length")) return why;
    if (v.size() != 1 || v[0] <= 0) return "dft_length must be one positive integer";
    N = v[0];
  }
  Ints perm, inv(r);
  for (size_t d = 0; d < r; ++d)
    if (int64_t(d) != axis) perm.push_back(int64_t(d));
  perm.push_back(axis);
  for (size_t d = 0; d < r; ++d) inv[size_t(perm[d])] = int64_t(d);
  auto prep = [&](Tensor v) {
    if (!v) return v;
    v = c.op("transpose", {v}, {{"perm", perm}});
    if (N < len) v = c.op("slice", {v}, {{"starts", Ints{0}}, {"ends", Ints{N}}, {"axes", Ints{-1}}});
    if (N > len) {
      Ints p(2 * r, 0);
      p[2 * r - 1] = N - len;
      v = c.op("pad", {v}, {{"pads", p}});
    }
    return v;
  };
  Tensor yr, yi;
  dftLast(c, prep(re), prep(im), N, c.i("inverse", 0) != 0, c.i("onesided", 0) != 0, yr, yi);
  auto back = [&](Tensor v) { return c.op("unsqueeze", {c.op("transpose", {v}, {{"perm", inv}})}, {{"axes", Ints{-1}}}); };
  return one(c, c.op("concat", {back(yr), back(yi)}, {{"axis", int64_t(-1)}}));
}

std::string mapSTFT(NodeCtx& c) {
  Tensor x = c.in(0), re, im;
  std::string why;
  if (!complexParts(c, x, re, im, why)) return why;
  if (re.rank() != 2) return "the signal must be [batch, length, 1|2], not " + shapeText(x.shape());
  Ints step;
  if (!c.ints(1, step, why, "frame_step")) return why;
  int64_t len = re.shape()[1], fl = 0;
  if (c.present(3)) {
    Ints v;
    if (!c.ints(3, v, why, "frame_length")) return why;
    fl = v.empty() ? 0 : v[0];
  } else if (c.present(2)) {
    fl = c.shape(2).empty() ? 0 : c.shape(2)[0];
  }
  if (step.size() != 1 || step[0] <= 0 || fl <= 0 || fl > len) return "frame_step and frame_length must be positive, the frame no longer than the signal";
  int64_t frames = 1 + (len - fl) / step[0];
  HostTensor idx(DType::I64, {frames * fl});
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t k = 0; k < fl; ++k) idx.setInt(f * fl + k, f * step[0] + k);
  Tensor gi = c.constant(std::move(idx));
  auto frame = [&](Tensor v) {
    if (!v) return v;
    v = c.op("reshape", {c.op("gather", {v, gi}, {{"axis", int64_t(1)}})}, {{"shape", Ints{v.shape()[0], frames, fl}}});
    if (c.present(2)) v = c.op("mul", {v, c.in(2)});
    return v;
  };
  Tensor yr, yi;
  dftLast(c, frame(re), frame(im), fl, false, c.i("onesided", 1) != 0, yr, yi);
  auto last = [&](Tensor v) { return c.op("unsqueeze", {v}, {{"axes", Ints{-1}}}); };
  return one(c, c.op("concat", {last(yr), last(yi)}, {{"axis", int64_t(-1)}}));
}

}  // namespace

std::vector<OpEntry> signalEntries() {
  return {
    {"DFT", 17, 99, "axis,inverse,onesided", mapDFT},
    {"MelWeightMatrix", 17, 99, "output_datatype", mapMelWeightMatrix},
    {"STFT", 17, 99, "onesided", mapSTFT},
    {"HannWindow", 17, 99, "output_datatype,periodic", mapWindow},
    {"HammingWindow", 17, 99, "output_datatype,periodic", mapWindow},
    {"BlackmanWindow", 17, 99, "output_datatype,periodic", mapWindow},
  };
}

}  // namespace eph::tensor::onnx
