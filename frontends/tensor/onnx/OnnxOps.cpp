// The ONNX op table: one entry per ONNX op (the opsets it covers, the
// attributes it understands, and a function mapping a node to tensor ops).
// Attributes and inputs the tensor ops take as ONNX does pass straight
// through (docs/tensor.md); shape-like inputs must be constants (folded at import).
// Op families with more than a few lines each live in files of their own
// (OnnxNormalization, OnnxQuantization, OnnxLoss, OnnxGridSample,
// OnnxRecurrent, OnnxSignal, OnnxTraining), each returning its entries;
// opTable() below joins them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <numeric>

#include "frontends/tensor/Ops.h"
#include "frontends/tensor/onnx/OnnxImpl.h"

namespace eph::tensor::onnx {

namespace {

// ---- helpers ------------------------------------------------------------------

// axes from attribute `axes` (before `inputSince`) or from input 1 (from it on).
bool axesOf(NodeCtx& c, int64_t inputSince, Ints& axes, bool& given, std::string& why, size_t input = 1) {
  given = false;
  if (c.opset >= inputSince) {
    if (c.present(input)) {
      if (!c.ints(input, axes, why, "axes")) return false;
      given = true;
    }
  } else if (c.has("axes")) {
    axes = c.ints("axes");
    given = true;
  }
  return true;
}

Tensor flatten2d(NodeCtx& c, Tensor x, int64_t axis) {
  Shape s = x.shape();
  int64_t a = 1, b = 1;
  for (size_t d = 0; d < s.size(); ++d) (int64_t(d) < axis ? a : b) *= s[d];
  return c.op("reshape", {x}, {{"shape", Ints{a, b}}});
}

std::string softmaxLike(NodeCtx& c, const char* op) {
  Tensor x = c.in(0);
  if (c.opset < 13) {
    int64_t axis = c.i("axis", 1);
    if (!normaliseAxis(axis, x.rank()) && !(x.rank() == 0 && (axis == 0 || axis == -1)))
      return "axis " + std::to_string(c.i("axis", 1)) + " is out of range for " + shapeText(x.shape());
    if (x.rank() == 0) return one(c, c.op(op, {x}, {{"axis", int64_t(-1)}}));
    Tensor y = c.op(op, {flatten2d(c, x, axis)}, {{"axis", int64_t(1)}});
    return one(c, c.op("reshape", {y}, {{"shape", Ints(x.shape())}}));
  }
  return one(c, c.op(op, {x}, {{"axis", c.i("axis", -1)}}));
}

std::string reduce(NodeCtx& c, const char* op, int64_t axesInputSince) {
  Ints axes;
  bool given;
  std::string why;
  if (!axesOf(c, axesInputSince, axes, given, why)) return why;
  Attrs a{{"keepdims", c.i("keepdims", 1)}};
  if (given && !axes.empty()) a.set("axes", axes);
  if (c.i("noop_with_empty_axes", 0) && axes.empty()) return one(c, c.op("identity", {c.in(0)}));
  return one(c, c.op(op, {c.in(0)}, a));
}

std::string variadic(NodeCtx& c, const char* op) {
  Tensor acc;
  for (size_t k = 0; k < c.numInputs(); ++k) {
    if (!c.present(k)) continue;
    acc = acc ? c.op(op, {acc, c.in(k)}) : c.in(k);
  }
  if (!acc) return "no inputs";
  if (acc.node().isView || acc.node().op == "input" || acc.node().op == "const") acc = c.op("identity", {acc});
  return one(c, acc);
}

Tensor castTo(NodeCtx& c, Tensor t, DType to) { return c.cast(t, to); }

std::string onnxCast(NodeCtx& c, int32_t to) {
  auto dt = dtypeOfOnnx(to);
  if (!dt) return "cast to " + onnxTypeName(to) + " is not supported";
  Tensor x = c.in(0);
  if (x.dtype() == *dt) return one(c, c.op("identity", {x}));
  return one(c, c.op("cast", {x}, {{"to", dn(*dt)}}));
}

// The values of a 1-D known input as doubles, or nothing when absent.
HostTensor constOf(DType dt, Shape s, const std::vector<double>& v) { return HostTensor::of(dt, std::move(s), v); }

// Binary ops; before opset 7, B broadcasts to A only with broadcast=1, aligned
// at `axis` (trailing when absent).
Tensor legacyB(NodeCtx& c) {
  Tensor b = c.in(1);
  if (c.opset >= 7 || !c.i("broadcast", 0) || !c.has("axis")) return b;
  int64_t axis = c.i("axis", 0);
  int64_t ra = int64_t(c.rank(0)), rb = int64_t(b.rank());
  if (axis < 0) axis += ra;
  int64_t trailing = ra - axis - rb;
  if (trailing <= 0) return b;
  Ints shape(b.shape());
  for (int64_t k = 0; k < trailing; ++k) shape.push_back(1);
  return c.op("reshape", {b}, {{"shape", shape}});
}

std::string binary(NodeCtx& c, const char* op) { return one(c, c.op(op, {c.in(0), legacyB(c)})); }

// ---- the table ------------------------------------------------------------------

#define UNARY(ONNX, OP, SINCE) \
  {ONNX, SINCE, 99, "", [](NodeCtx& c) -> std::string { return one(c, c.op(OP, {c.in(0)})); }}
#define BINARY(ONNX, OP, SINCE) \
  {ONNX, SINCE, 99, "broadcast,axis", [](NodeCtx& c) -> std::string { return binary(c, OP); }}
#define REDUCE(ONNX, OP, INPUT_SINCE) \
  {ONNX, 1, 17, "axes,keepdims,noop_with_empty_axes", [](NodeCtx& c) { return reduce(c, OP, INPUT_SINCE); }}

std::string mapConstant(NodeCtx& c) {
  if (const auto* a = c.attr("value")) {
    auto h = fromProto(a->t(), "the constant");
    if (!h) return h.error().message;
    return one(c, c.constant(std::move(*h)));
  }
  if (c.has("value_float")) return one(c, c.constant(constOf(DType::F32, {}, {c.f("value_float", 0)})));
  if (c.has("value_int")) return one(c, c.constant(HostTensor::ofInts(DType::I64, {}, {c.i("value_int", 0)})));
  if (c.has("value_floats")) {
    auto v = c.floats("value_floats");
    return one(c, c.constant(constOf(DType::F32, {int64_t(v.size())}, v)));
  }
  if (c.has("value_ints")) {
    auto v = c.ints("value_ints");
    return one(c, c.constant(HostTensor::ofInts(DType::I64, {int64_t(v.size())}, v)));
  }
  return "a Constant without a supported value (value, value_float(s), value_int(s))";
}

std::string mapShape(NodeCtx& c) {
  Shape s = c.shape(0);
  int64_t r = int64_t(s.size());
  int64_t start = c.i("start", 0), end = c.i("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  Ints v(s.begin() + start, s.begin() + std::max(start, end));
  return one(c, c.constant(HostTensor::ofInts(DType::I64, {int64_t(v.size())}, v)));
}

std::string mapConstantOfShape(NodeCtx& c) {
  Ints shape;
  std::string why;
  if (!c.ints(0, shape, why, "shape")) return why;
  for (int64_t d : shape) {
    if (d < 0) return "a negative extent in " + shapeText(shape);
    if (involvesDynamic(d)) return "the shape " + shapeText(shape) + " is computed from the dynamic first dimension N: give the inputs";
  }
  HostTensor v(DType::F32, {});
  if (const auto* a = c.attr("value")) {
    auto h = fromProto(a->t(), "the value");
    if (!h) return h.error().message;
    if (h->size() != 1) return "value must have one element";
    v = *h;
  }
  if (numel(shape) > (int64_t(1) << 26)) return "a ConstantOfShape of " + shapeText(shape) + " is too large to make at import";
  HostTensor out(v.dtype, shape);
  size_t e = hostBytes(v.dtype);
  for (int64_t i = 0; i < out.size(); ++i) std::memcpy(out.bytes.data() + size_t(i) * e, v.bytes.data(), e);
  return one(c, c.constant(std::move(out)));
}

std::string mapRange(NodeCtx& c) {
  for (size_t k = 0; k < 3; ++k)
    if (!c.known(k)) return "input " + std::to_string(k) + " must be a constant (shapes are static)";
  const HostTensor &s = *c.known(0), &l = *c.known(1), &d = *c.known(2);
  DType dt = s.dtype;
  HostTensor out;
  if (isFloat(dt)) {
    double st = s.get(0), li = l.get(0), de = d.get(0);
    if (de == 0) return "a delta of 0";
    int64_t n = std::max<int64_t>(int64_t(std::ceil((li - st) / de)), 0);
    out = HostTensor(dt, {n});
    for (int64_t i = 0; i < n; ++i) out.set(i, st + double(i) * de);
  } else {
    int64_t st = s.getInt(0), li = l.getInt(0), de = d.getInt(0);
    if (de == 0) return "a delta of 0";
    int64_t n = std::max<int64_t>(int64_t(std::ceil(double(li - st) / double(de))), 0);
    out = HostTensor(dt, {n});
    for (int64_t i = 0; i < n; ++i) out.setInt(i, st + i * de);
  }
  return one(c, c.constant(std::move(out)));
}

std::string mapEyeLike(NodeCtx& c) {
  Shape s = c.shape(0);
  if (s.size() != 2) return "EyeLike wants a 2-D input, not " + shapeText(s);
  DType dt = c.dtype(0);
  if (c.has("dtype")) {
    auto d = dtypeOfOnnx(int32_t(c.i("dtype", 1)));
    if (!d) return "dtype " + onnxTypeName(int32_t(c.i("dtype", 1))) + " is not supported";
    dt = *d;
  }
  HostTensor h(dt, s);
  int64_t k = c.i("k", 0);
  for (int64_t i = 0; i < s[0]; ++i)
    if (i + k >= 0 && i + k < s[1]) h.set(i * s[1] + i + k, 1);
  return one(c, c.constant(std::move(h)));
}

std::string mapReshape(NodeCtx& c) {
  Ints shape;
  std::string why;
  if (c.opset < 5) shape = c.ints("shape");
  else if (!c.ints(1, shape, why, "shape")) return why;
  return one(c, c.op("reshape", {c.in(0)}, {{"shape", shape}, {"allowzero", c.i("allowzero", 0)}}));
}

std::string mapFlatten(NodeCtx& c) {
  int64_t axis = c.i("axis", 1);
  size_t r = c.rank(0);
  if (axis < 0) axis += int64_t(r);
  if (axis < 0 || axis > int64_t(r)) return "axis " + std::to_string(c.i("axis", 1)) + " is out of range for rank " + std::to_string(r);
  return one(c, flatten2d(c, c.in(0), axis));
}

std::string mapSqueeze(NodeCtx& c, const char* op) {
  Ints axes;
  bool given;
  std::string why;
  if (!axesOf(c, 13, axes, given, why)) return why;
  Attrs a;
  if (given) a.set("axes", axes);
  if (std::string_view(op) == "unsqueeze" && !given) return "Unsqueeze needs axes";
  return one(c, c.op(op, {c.in(0)}, a));
}

std::string mapSlice(NodeCtx& c) {
  Ints starts, ends, axes, steps;
  std::string why;
  if (c.opset < 10) {
    starts = c.ints("starts");
    ends = c.ints("ends");
    axes = c.ints("axes");
  } else {
    if (!c.ints(1, starts, why, "starts") || !c.ints(2, ends, why, "ends")) return why;
    if (c.present(3) && !c.ints(3, axes, why, "axes")) return why;
    if (c.present(4) && !c.ints(4, steps, why, "steps")) return why;
  }
  Attrs a{{"starts", starts}, {"ends", ends}};
  if (!axes.empty()) a.set("axes", axes);
  if (!steps.empty()) a.set("steps", steps);
  return one(c, c.op("slice", {c.in(0)}, a));
}

std::string mapSplit(NodeCtx& c) {
  Tensor x = c.in(0);
  int64_t axis = c.i("axis", 0);
  if (!normaliseAxis(axis, x.rank())) return "axis " + std::to_string(c.i("axis", 0)) + " is out of range for " + shapeText(x.shape());
  Ints split;
  std::string why;
  if (c.opset >= 13) {
    if (c.present(1) && !c.ints(1, split, why, "split")) return why;
  } else {
    split = c.ints("split");
  }
  int64_t dim = x.shape()[size_t(axis)];
  size_t n = size_t(c.node.output_size());
  if (split.empty()) {
    if (n == 0 || dim % int64_t(n)) return "cannot split extent " + std::to_string(dim) + " into " + std::to_string(n) + " equal parts";
    split.assign(n, dim / int64_t(n));
  }
  if (split.size() != n) return "split has " + std::to_string(split.size()) + " parts for " + std::to_string(n) + " outputs";
  int64_t start = 0;
  for (int64_t s : split) {
    if (s < 0) return "a negative split";
    c.outs.push_back(c.op("slice", {x}, {{"starts", Ints{start}}, {"ends", Ints{start + s}}, {"axes", Ints{axis}}}));
    start += s;
  }
  if (start != dim) return "split sizes " + shapeText(split) + " do not add up to extent " + std::to_string(dim);
  return "";
}

std::string mapClip(NodeCtx& c) {
  Tensor x = c.in(0);
  Tensor lo, hi;
  if (c.opset < 11) {
    if (c.has("min")) lo = c.scalar(x.dtype(), c.f("min", 0));
    if (c.has("max")) hi = c.scalar(x.dtype(), c.f("max", 0));
  } else {
    if (c.present(1)) lo = c.in(1);
    if (c.present(2)) hi = c.in(2);
  }
  if (lo && hi) return one(c, c.op("clip", {x, lo, hi}));
  Tensor y = x;
  if (lo) y = c.op("where", {c.op("lt", {y, lo}), lo, y});
  if (hi) y = c.op("where", {c.op("gt", {y, hi}), hi, y});
  if (!lo && !hi) y = c.op("identity", {y});
  return one(c, y);
}


// where(x < 0, f(x), x) style activations
std::string mapLeakyRelu(NodeCtx& c) {
  Tensor x = c.in(0);
  Tensor z = c.scalar(x.dtype(), 0);
  return one(c, c.op("where", {c.op("lt", {x, z}), c.op("mul", {x, c.scalar(x.dtype(), c.f("alpha", 0.01))}), x}));
}
std::string mapElu(NodeCtx& c) {
  Tensor x = c.in(0);
  DType t = x.dtype();
  Tensor e = c.op("mul", {c.op("sub", {c.op("exp", {x}), c.scalar(t, 1)}), c.scalar(t, c.f("alpha", 1.0))});
  return one(c, c.op("where", {c.op("lt", {x, c.scalar(t, 0)}), e, x}));
}
std::string mapSelu(NodeCtx& c) {
  Tensor x = c.in(0);
  DType t = x.dtype();
  double alpha = c.f("alpha", 1.67326319217681884765625), gamma = c.f("gamma", 1.05070102214813232421875);
  Tensor e = c.op("sub", {c.op("mul", {c.op("exp", {x}), c.scalar(t, alpha)}), c.scalar(t, alpha)});
  Tensor y = c.op("where", {c.op("le", {x, c.scalar(t, 0)}), e, x});
  return one(c, c.op("mul", {y, c.scalar(t, gamma)}));
}
std::string mapCelu(NodeCtx& c) {
  Tensor x = c.in(0);
  DType t = x.dtype();
  double alpha = c.f("alpha", 1.0);
  Tensor e = c.op("mul", {c.op("sub", {c.op("exp", {c.op("div", {x, c.scalar(t, alpha)})}), c.scalar(t, 1)}), c.scalar(t, alpha)});
  return one(c, c.op("add", {c.op("max", {x, c.scalar(t, 0)}), c.op("min", {e, c.scalar(t, 0)})}));
}
std::string mapThresholdedRelu(NodeCtx& c) {
  Tensor x = c.in(0);
  DType t = x.dtype();
  return one(c, c.op("where", {c.op("gt", {x, c.scalar(t, c.f("alpha", 1.0))}), x, c.scalar(t, 0)}));
}
std::string mapHardSigmoid(NodeCtx& c) { return one(c, hardSigmoid(c, c.in(0), c.f("alpha", 0.2), c.f("beta", 0.5))); }
std::string mapHardSwish(NodeCtx& c) {
  Tensor x = c.in(0);
  return one(c, c.op("mul", {x, hardSigmoid(c, x, 1.0 / 6, 0.5)}));
}
std::string mapPRelu(NodeCtx& c) {
  Tensor x = c.in(0), s = c.in(1);
  // PRelu-6: a slope of one value per channel applies along axis 1.
  if (c.opset < 7 && s.rank() == 1 && x.rank() >= 2 && s.shape()[0] == x.shape()[1] && s.shape()[0] != 1)
    s = alongAxis(c, s, x.rank(), 1);
  return one(c, c.op("where", {c.op("lt", {x, c.scalar(x.dtype(), 0)}), c.op("mul", {x, s}), x}));
}
std::string mapShrink(NodeCtx& c) {
  Tensor x = c.in(0);
  DType t = x.dtype();
  double bias = c.f("bias", 0), lambd = c.f("lambd", 0.5);
  Tensor lo = c.op("where", {c.op("lt", {x, c.scalar(t, -lambd)}), c.op("add", {x, c.scalar(t, bias)}), c.scalar(t, 0)});
  return one(c, c.op("where", {c.op("gt", {x, c.scalar(t, lambd)}), c.op("sub", {x, c.scalar(t, bias)}), lo}));
}
std::string mapMish(NodeCtx& c) {
  Tensor x = c.in(0);
  return one(c, c.op("mul", {x, c.op("tanh", {c.op("softplus", {x})})}));
}
std::string mapIsInf(NodeCtx& c) {
  Tensor x = c.in(0);
  bool neg = c.i("detect_negative", 1), pos = c.i("detect_positive", 1);
  if (neg && pos) return one(c, c.op("isinf", {x}));
  if (!neg && !pos) return one(c, c.op("lt", {x, x}));  // false everywhere
  return one(c, c.op("eq", {x, c.scalar(x.dtype(), neg ? -INFINITY : INFINITY)}));
}

std::string mapPow(NodeCtx& c) {
  Tensor x = c.in(0);
  Tensor y = c.op("pow", {x, legacyB(c)});
  return one(c, castTo(c, y, x.dtype()));
}

std::string mapMod(NodeCtx& c) { return one(c, c.op(c.i("fmod", 0) ? "fmod" : "mod", {c.in(0), c.in(1)})); }

std::string mapBitShift(NodeCtx& c) {
  std::string d = c.s("direction", "");
  if (d != "LEFT" && d != "RIGHT") return "direction must be LEFT or RIGHT, not '" + d + "'";
  return one(c, c.op(d == "LEFT" ? "shl" : "shr", {c.in(0), c.in(1)}));
}

std::string mapMean(NodeCtx& c) {
  std::string why = variadic(c, "add");
  if (!why.empty()) return why;
  int n = 0;
  for (size_t k = 0; k < c.numInputs(); ++k) n += c.present(k);
  Tensor s = c.outs[0];
  c.outs = {c.op("div", {s, c.scalar(s.dtype(), n)})};
  return "";
}

std::string mapDropout(NodeCtx& c) {
  if (c.opset >= 12 && c.present(2)) {
    const HostTensor* t = c.known(2);
    const HostTensor* ratio = c.known(1);
    double r = c.present(1) ? (ratio ? ratio->get(0) : -1) : 0.5;
    // Training with ratio 0 drops nothing: the identity, as inference.
    if (!t || (t->getInt(0) && r != 0)) return "training_mode must be a constant false, or the ratio 0 (random dropout is not supported)";
  }
  Tensor x = c.in(0);
  c.outs = {c.op("identity", {x})};
  if (c.node.output_size() > 1) {
    HostTensor m(DType::Bool, x.shape());
    for (int64_t i = 0; i < m.size(); ++i) m.setInt(i, 1);
    c.outs.push_back(c.constant(std::move(m)));
  }
  return "";
}

std::string mapArg(NodeCtx& c, const char* op) {
  return one(c, c.op(op, {c.in(0)}, {{"axis", c.i("axis", 0)}, {"keepdims", c.i("keepdims", 1)},
                                      {"select_last_index", c.i("select_last_index", 0)}}));
}

std::string mapTopK(NodeCtx& c) {
  int64_t k;
  if (c.opset < 10) {
    k = c.i("k", 0);
  } else {
    Ints v;
    std::string why;
    if (!c.ints(1, v, why, "K")) return why;
    if (v.size() != 1) return "K must have one element";
    k = v[0];
  }
  Attrs a{{"k", k}, {"axis", c.i("axis", -1)}, {"largest", c.i("largest", 1)}, {"sorted", c.i("sorted", 1)}};
  Tensor x = c.in(0);
  c.outs = {c.op("topk", {x}, a), c.op("topk_indices", {x}, a)};
  return "";
}

std::string mapCumSum(NodeCtx& c) {
  Ints axis;
  std::string why;
  if (!c.ints(1, axis, why, "axis")) return why;
  if (axis.size() != 1) return "axis must have one element";
  return one(c, c.op("cumsum", {c.in(0)}, {{"axis", axis[0]}, {"exclusive", c.i("exclusive", 0)}, {"reverse", c.i("reverse", 0)}}));
}

std::string mapConv(NodeCtx& c) {
  return one(c, c.op("conv", presentInputs(c), passAttrs(c, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})));
}
std::string mapConvTranspose(NodeCtx& c) {
  return one(c, c.op("conv_transpose", presentInputs(c),
                     passAttrs(c, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides", "output_padding", "output_shape"})));
}
// MaxPool with its Indices output: the windows scanned offset by offset over
// strided slices of the input padded with -inf, keeping the first maximum and
// its flat index (row-major, or column-major over the spatial axes with
// storage_order=1; padding not counted).
std::string maxPoolWithIndices(NodeCtx& c) {
  Tensor x = c.in(0);
  size_t r = x.rank();
  if (r < 3) return "the input must have rank 3 or more";
  size_t k = r - 2;
  std::string autoPad = c.s("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID") return "the Indices output with auto_pad '" + autoPad + "' is not supported";
  if (c.i("ceil_mode", 0)) return "the Indices output with ceil_mode=1 is not supported";
  Ints kernel = c.ints("kernel_shape"), strides = c.ints("strides"), pads = c.ints("pads"), dil = c.ints("dilations");
  if (kernel.size() != k) return "kernel_shape must have " + std::to_string(k) + " entries";
  if (strides.empty()) strides.assign(k, 1);
  if (dil.empty()) dil.assign(k, 1);
  if (pads.empty()) pads.assign(2 * k, 0);
  if (strides.size() != k || dil.size() != k || pads.size() != 2 * k) return "strides, dilations or pads have the wrong length";
  Shape s = x.shape();
  Ints out;
  for (size_t d = 0; d < k; ++d) {
    int64_t span = (kernel[d] - 1) * dil[d] + 1, full = s[d + 2] + pads[d] + pads[d + k];
    if (span > full || strides[d] <= 0) return "the window does not fit the padded input";
    out.push_back((full - span) / strides[d] + 1);
  }
  bool colMajor = c.i("storage_order", 0) == 1;
  HostTensor pos(DType::I64, s);
  std::vector<int64_t> st = contiguousStrides(s);
  for (int64_t i = 0; i < pos.size(); ++i) {
    int64_t nc = i / st[1] / s[1] * s[1] + (i / st[1]) % s[1], spatial = i % st[1];
    if (colMajor && k == 2) spatial = (spatial % s[3]) * s[2] + spatial / s[3];
    pos.setInt(i, nc * st[1] + spatial);
  }
  Ints p(2 * r, 0);
  for (size_t d = 0; d < k; ++d) {
    p[d + 2] = pads[d];
    p[r + d + 2] = pads[d + k];
  }
  Tensor xp = c.op("pad", {x}, {{"pads", p}, {"value", -INFINITY}});
  Tensor pp = c.op("pad", {c.constant(std::move(pos))}, {{"pads", p}, {"value", -1.0}});
  Tensor best, idx;
  Ints off(k, 0), axes;
  for (size_t d = 0; d < k; ++d) axes.push_back(int64_t(d + 2));
  for (;;) {
    Ints starts, ends;
    for (size_t d = 0; d < k; ++d) {
      starts.push_back(off[d] * dil[d]);
      ends.push_back(off[d] * dil[d] + (out[d] - 1) * strides[d] + 1);
    }
    Attrs a{{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", strides}};
    Tensor v = c.op("slice", {xp}, a), q = c.op("slice", {pp}, a);
    if (!best) {
      best = v;
      idx = q;
    } else {
      Tensor gt = c.op("identity", {c.op("gt", {v, best})});
      best = c.op("identity", {c.op("where", {gt, v, best})});
      idx = c.op("identity", {c.op("where", {gt, q, idx})});
    }
    size_t d = k;
    while (d-- > 0 && ++off[d] == kernel[d]) off[d] = 0;
    if (d == size_t(-1)) break;
  }
  c.outs = {c.op("identity", {best}), c.op("identity", {idx})};
  return "";
}

std::string mapMaxPool(NodeCtx& c) {
  if (c.node.output_size() > 1 && !c.node.output(1).empty()) return maxPoolWithIndices(c);
  if (c.i("storage_order", 0) != 0) return "storage_order 1 is not supported";
  return one(c, c.op("max_pool", {c.in(0)}, passAttrs(c, {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides"})));
}
std::string mapAvgPool(NodeCtx& c) {
  return one(c, c.op("avg_pool", {c.in(0)}, passAttrs(c, {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"})));
}
std::string mapLpPool(NodeCtx& c) {
  Attrs a = passAttrs(c, {"auto_pad", "kernel_shape", "pads", "strides"});
  a.set("p", c.has("p") ? (c.attr("p")->type() == ::onnx::AttributeProto::FLOAT ? int64_t(c.f("p", 2)) : c.i("p", 2)) : int64_t(2));
  return one(c, c.op("lp_pool", {c.in(0)}, a));
}
std::string mapGlobalLpPool(NodeCtx& c) {
  int64_t p = c.has("p") ? (c.attr("p")->type() == ::onnx::AttributeProto::FLOAT ? int64_t(c.f("p", 2)) : c.i("p", 2)) : 2;
  return one(c, c.op("global_lp_pool", {c.in(0)}, {{"p", p}}));
}

std::string mapGemm(NodeCtx& c) {
  return one(c, c.op("gemm", presentInputs(c), passAttrs(c, {"alpha", "beta", "transA", "transB"})));
}



std::string mapConcat(NodeCtx& c) { return one(c, c.op("concat", presentInputs(c), {{"axis", c.i("axis", 0)}})); }

std::string mapTile(NodeCtx& c) {
  Ints r;
  std::string why;
  if (!c.ints(1, r, why, "repeats")) return why;
  return one(c, c.op("tile", {c.in(0)}, {{"repeats", r}}));
}

std::string mapExpand(NodeCtx& c) {
  Ints s;
  std::string why;
  if (!c.ints(1, s, why, "shape")) return why;
  Tensor y = c.op("expand", {c.in(0)}, {{"shape", s}});
  return one(c, y);
}

std::string mapPad(NodeCtx& c) {
  Ints pads;
  double value = 0;
  std::string why;
  if (c.opset < 11) {
    pads = c.ints("pads");
    value = c.f("value", 0);
  } else {
    if (!c.ints(1, pads, why, "pads")) return why;
    if (c.present(2)) {
      std::vector<double> v;
      if (!c.floats(2, v, why, "constant_value")) return why;
      if (!v.empty()) value = v[0];
    }
  }
  return one(c, c.op("pad", {c.in(0)}, {{"pads", pads}, {"mode", c.s("mode", "constant")}, {"value", value}}));
}

std::string mapOneHot(NodeCtx& c) {
  Ints depth;
  std::vector<double> values;
  std::string why;
  if (!c.ints(1, depth, why, "depth") || !c.floats(2, values, why, "values")) return why;
  if (depth.size() != 1 || values.size() != 2) return "depth must have one element and values two";
  Tensor idx = c.in(0);
  if (isFloat(idx.dtype())) idx = c.cast(idx, DType::I64);
  return one(c, c.op("one_hot", {idx}, {{"depth", depth[0]}, {"axis", c.i("axis", -1)}, {"off_value", values[0]},
                                            {"on_value", values[1]}, {"dtype", dn(c.dtype(2))}}));
}

std::string mapTrilu(NodeCtx& c) {
  int64_t k = 0;
  if (c.present(1)) {
    Ints v;
    std::string why;
    if (!c.ints(1, v, why, "k")) return why;
    if (v.size() != 1) return "k must have one element";
    k = v[0];
  }
  return one(c, c.op("trilu", {c.in(0)}, {{"upper", c.i("upper", 1)}, {"k", k}}));
}

std::string mapDepthToSpace(NodeCtx& c) {
  Tensor x = c.in(0);
  if (x.rank() != 4) return "the input must be 4-D, not " + shapeText(x.shape());
  int64_t b = c.i("blocksize", 0), N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  if (b <= 0 || C % (b * b)) return "blocksize " + std::to_string(b) + " does not divide the channels of " + shapeText(x.shape());
  bool crd = c.s("mode", "DCR") == "CRD";
  Tensor t = crd ? c.op("reshape", {x}, {{"shape", Ints{N, C / (b * b), b, b, H, W}}})
                 : c.op("reshape", {x}, {{"shape", Ints{N, b, b, C / (b * b), H, W}}});
  t = c.op("transpose", {t}, {{"perm", crd ? Ints{0, 1, 4, 2, 5, 3} : Ints{0, 3, 4, 1, 5, 2}}});
  return one(c, c.op("reshape", {t}, {{"shape", Ints{N, C / (b * b), H * b, W * b}}}));
}

std::string mapSpaceToDepth(NodeCtx& c) {
  Tensor x = c.in(0);
  if (x.rank() != 4) return "the input must be 4-D, not " + shapeText(x.shape());
  int64_t b = c.i("blocksize", 0), N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  if (b <= 0 || H % b || W % b) return "blocksize " + std::to_string(b) + " does not divide " + shapeText(x.shape());
  Tensor t = c.op("reshape", {x}, {{"shape", Ints{N, C, H / b, b, W / b, b}}});
  t = c.op("transpose", {t}, {{"perm", Ints{0, 3, 5, 1, 2, 4}}});
  return one(c, c.op("reshape", {t}, {{"shape", Ints{N, C * b * b, H / b, W / b}}}));
}

std::string mapSize(NodeCtx& c) { return one(c, c.constant(HostTensor::ofInts(DType::I64, {}, {numel(c.shape(0))}))); }

std::string mapGather(NodeCtx& c, const char* op, const char* attr, int64_t fallback) {
  return one(c, c.op(op, {c.in(0), c.in(1)}, {{attr, c.i(attr, fallback)}}));
}

std::string mapScatter(NodeCtx& c, bool nd) {
  Attrs a{{"reduction", c.s("reduction", "none")}};
  if (!nd) a.set("axis", c.i("axis", 0));
  return one(c, c.op(nd ? "scatter_nd" : "scatter_elements", {c.in(0), c.in(1), c.in(2)}, a));
}

std::string mapEinsum(NodeCtx& c) { return one(c, c.op("einsum", presentInputs(c), {{"equation", c.s("equation", "")}})); }





std::string mapResize(NodeCtx& c) {
  // Resize-10: (X, scales); 11+: (X, roi, scales, sizes); Upsample: (X, scales) or attribute scales (7, 8).
  Tensor x = c.in(0);
  const std::string op = c.node.op_type();
  std::vector<double> scales;
  Ints sizes;
  std::string why;
  if (op == "Upsample" && c.opset < 9) {
    scales = c.floats("scales");
  } else if (op == "Upsample" || c.opset < 11) {
    if (!c.floats(1, scales, why, "scales")) return why;
  } else {
    if (c.present(3) && c.known(3) && c.known(3)->size() > 0) {
      if (!c.ints(3, sizes, why, "sizes")) return why;
    } else if (c.present(2)) {
      if (!c.floats(2, scales, why, "scales")) return why;
    }
  }
  std::vector<double> roi;
  if (op == "Resize" && c.opset >= 11 && c.present(1) && c.s("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize")
    if (!c.floats(1, roi, why, "roi")) return why;
  Shape in = x.shape();
  if (sizes.empty()) {
    if (scales.size() != in.size()) return "scales has " + std::to_string(scales.size()) + " entries for rank " + std::to_string(in.size());
    for (size_t d = 0; d < in.size(); ++d) sizes.push_back(int64_t(std::floor(double(in[d]) * scales[d])));
  } else if (sizes.size() != in.size()) {
    return "sizes has " + std::to_string(sizes.size()) + " entries for rank " + std::to_string(in.size());
  }
  std::string mode = c.s("mode", "nearest");
  if (mode == "bilinear" || mode == "trilinear") mode = "linear";
  Attrs a{{"sizes", sizes}, {"mode", mode}};
  if (!scales.empty()) a.set("scales", scales);
  if (op == "Upsample" || c.opset < 11) {
    a.set("coordinate_transformation_mode", std::string("asymmetric"));
    a.set("nearest_mode", std::string(op == "Upsample" || c.opset < 11 ? "floor" : "round_prefer_floor"));
  } else {
    for (const char* n : {"coordinate_transformation_mode", "nearest_mode"})
      if (c.has(n)) a.set(n, c.s(n, ""));
    if (c.has("cubic_coeff_a")) a.set("cubic_coeff_a", double(c.f("cubic_coeff_a", -0.75)));
    if (c.has("exclude_outside")) a.set("exclude_outside", c.i("exclude_outside", 0));
    if (c.has("extrapolation_value")) a.set("extrapolation_value", double(c.f("extrapolation_value", 0)));
    if (!roi.empty()) a.set("roi", roi);
  }
  return one(c, c.op("resize", {x}, a));
}



// Compress with a condition known at import: a gather of the kept positions.
std::string mapCompress(NodeCtx& c) {
  const HostTensor* cond = c.known(1);
  if (!cond) return "input 1 ('condition') must be a constant (shapes are static)";
  Tensor x = c.in(0);
  bool flat = !c.has("axis");
  int64_t axis = c.i("axis", 0);
  if (flat) {
    x = c.op("reshape", {x}, {{"shape", Ints{numel(x.shape())}}});
    axis = 0;
  }
  if (!normaliseAxis(axis, x.rank())) return "axis " + std::to_string(c.i("axis", 0)) + " is out of range";
  Ints keep;
  for (int64_t i = 0; i < cond->size() && i < x.shape()[size_t(axis)]; ++i)
    if (cond->getInt(i)) keep.push_back(i);
  Tensor idx = c.constant(HostTensor::ofInts(DType::I64, {int64_t(keep.size())}, keep));
  return one(c, c.op("gather", {x, idx}, {{"axis", axis}}));
}

// ReverseSequence with sequence lengths known at import: a gather_elements
// with the reversed positions.
std::string mapReverseSequence(NodeCtx& c) {
  const HostTensor* lens = c.known(1);
  if (!lens) return "input 1 ('sequence_lens') must be a constant";
  Tensor x = c.in(0);
  if (x.rank() < 2) return "the input must have rank 2 or more";
  int64_t ta = c.i("time_axis", 0), ba = c.i("batch_axis", 1);
  if (!((ta == 0 && ba == 1) || (ta == 1 && ba == 0))) return "time_axis and batch_axis must be 0 and 1";
  Shape s = x.shape();
  if (numel(s) > (int64_t(1) << 22)) return "the input is too large";
  HostTensor idx(DType::I64, s);
  std::vector<int64_t> st = contiguousStrides(s);
  for (int64_t i = 0; i < idx.size(); ++i) {
    int64_t t = (i / st[size_t(ta)]) % s[size_t(ta)], b = (i / st[size_t(ba)]) % s[size_t(ba)];
    int64_t len = b < lens->size() ? lens->getInt(b) : 0;
    idx.setInt(i, t < len ? len - 1 - t : t);
  }
  return one(c, c.op("gather_elements", {x, c.constant(std::move(idx))}, {{"axis", ta}}));
}


// Det of 1x1, 2x2 and 3x3 matrices (batched) by cofactors.
std::string mapDet(NodeCtx& c) {
  Tensor x = c.in(0);
  size_t r = x.rank();
  if (r < 2 || x.shape()[r - 1] != x.shape()[r - 2]) return "the input must be square matrices, not " + shapeText(x.shape());
  int64_t n = x.shape()[r - 1];
  if (n > 3) return "Det of matrices larger than 3x3 is not supported";
  auto e = [&](int64_t i, int64_t j) {
    Tensor s = c.op("slice", {x}, {{"starts", Ints{i, j}}, {"ends", Ints{i + 1, j + 1}}, {"axes", Ints{int64_t(r) - 2, int64_t(r) - 1}}});
    return c.op("squeeze", {s}, {{"axes", Ints{int64_t(r) - 2, int64_t(r) - 1}}});
  };
  auto mul = [&](Tensor a, Tensor b) { return c.op("mul", {a, b}); };
  auto sub = [&](Tensor a, Tensor b) { return c.op("sub", {a, b}); };
  Tensor d;
  if (n == 1) d = c.op("identity", {e(0, 0)});
  else if (n == 2) d = sub(mul(e(0, 0), e(1, 1)), mul(e(0, 1), e(1, 0)));
  else
    d = c.op("add", {sub(mul(e(0, 0), sub(mul(e(1, 1), e(2, 2)), mul(e(1, 2), e(2, 1)))),
                         mul(e(0, 1), sub(mul(e(1, 0), e(2, 2)), mul(e(1, 2), e(2, 0))))),
                     mul(e(0, 2), sub(mul(e(1, 0), e(2, 1)), mul(e(1, 1), e(2, 0))))});
  return one(c, d);
}

// MaxUnpool: the values scattered to their MaxPool indices (flat over the
// whole output) in a zero tensor of the unpooled shape.
std::string mapMaxUnpool(NodeCtx& c) {
  Tensor x = c.in(0), idx = c.in(1);
  size_t r = x.rank();
  if (r < 3) return "the input must have rank 3 or more";
  Ints kernel = c.ints("kernel_shape"), strides = c.ints("strides"), pads = c.ints("pads");
  size_t k = r - 2;
  if (kernel.size() != k) return "kernel_shape must have " + std::to_string(k) + " entries";
  if (strides.empty()) strides.assign(k, 1);
  if (pads.empty()) pads.assign(2 * k, 0);
  if (strides.size() != k || pads.size() != 2 * k) return "strides or pads have the wrong length";
  // The indices are positions in the default unpooled shape; a larger
  // output_shape pads it at the end.
  Ints shape = {x.shape()[0], x.shape()[1]}, want;
  for (size_t d = 0; d < k; ++d) shape.push_back((x.shape()[d + 2] - 1) * strides[d] - pads[d] - pads[d + k] + kernel[d]);
  if (c.present(2)) {
    std::string why;
    if (!c.ints(2, want, why, "output_shape")) return why;
    if (want.size() != r) return "output_shape must have " + std::to_string(r) + " entries";
    for (size_t d = 0; d < r; ++d)
      if (want[d] < shape[d]) return "output_shape " + shapeText(want) + " is smaller than the unpooled shape " + shapeText(shape);
  }
  Tensor zeros = c.op("expand", {c.scalar(x.dtype(), 0)}, {{"shape", Ints{numel(shape)}}});
  Tensor flat = c.op("scatter_elements", {c.op("contiguous", {zeros}), c.op("reshape", {idx}, {{"shape", Ints{-1}}}),
                                          c.op("reshape", {x}, {{"shape", Ints{-1}}})}, {{"axis", int64_t(0)}});
  Tensor y = c.op("reshape", {flat}, {{"shape", shape}});
  if (!want.empty() && want != shape) {
    Ints p(2 * r, 0);
    for (size_t d = 0; d < r; ++d) p[r + d] = want[d] - shape[d];
    y = c.op("pad", {y}, {{"pads", p}});
  }
  return one(c, y);
}



std::string mapHardmax(NodeCtx& c) { return softmaxLike(c, "hardmax"); }


const std::vector<OpEntry> kTable = {
    {"Constant", 1, 99, "value,value_float,value_floats,value_int,value_ints", mapConstant},
    {"Shape", 1, 99, "start,end", mapShape},
    {"Size", 1, 99, "", mapSize},
    {"ConstantOfShape", 9, 99, "value", mapConstantOfShape},
    {"Range", 11, 99, "", mapRange},
    {"EyeLike", 9, 99, "dtype,k", mapEyeLike},
    {"Identity", 1, 99, "", [](NodeCtx& c) { return one(c, c.op("identity", {c.in(0)})); }},
    UNARY("Abs", "abs", 6), UNARY("Neg", "neg", 6), UNARY("Sign", "sign", 9), UNARY("Exp", "exp", 6),
    UNARY("Log", "log", 6), UNARY("Sqrt", "sqrt", 6), UNARY("Sin", "sin", 7), UNARY("Cos", "cos", 7),
    UNARY("Tan", "tan", 7), UNARY("Asin", "asin", 7), UNARY("Acos", "acos", 7), UNARY("Atan", "atan", 7),
    UNARY("Sinh", "sinh", 9), UNARY("Cosh", "cosh", 9), UNARY("Tanh", "tanh", 6), UNARY("Asinh", "asinh", 9),
    UNARY("Acosh", "acosh", 9), UNARY("Atanh", "atanh", 9), UNARY("Erf", "erf", 9), UNARY("Floor", "floor", 6),
    UNARY("Ceil", "ceil", 6), UNARY("Round", "round", 11), UNARY("Reciprocal", "reciprocal", 6),
    UNARY("Sigmoid", "sigmoid", 6), UNARY("Relu", "relu", 6), UNARY("Softplus", "softplus", 1),
    UNARY("Softsign", "softsign", 1), UNARY("Not", "not", 1), UNARY("IsNaN", "isnan", 9),
    {"IsInf", 10, 99, "detect_negative,detect_positive", mapIsInf},
    BINARY("Add", "add", 6), BINARY("Sub", "sub", 6), BINARY("Mul", "mul", 6), BINARY("Div", "div", 6),
    BINARY("Equal", "eq", 1), BINARY("Greater", "gt", 1), BINARY("Less", "lt", 1),
    BINARY("GreaterOrEqual", "ge", 12), BINARY("LessOrEqual", "le", 12), BINARY("And", "and", 1),
    BINARY("Or", "or", 1), BINARY("Xor", "xor", 1),
    {"Pow", 1, 99, "broadcast,axis", mapPow},
    {"Mod", 10, 99, "fmod", mapMod},
    {"BitShift", 11, 99, "direction", mapBitShift},
    {"Max", 6, 99, "", [](NodeCtx& c) { return variadic(c, "max"); }},
    {"Min", 6, 99, "", [](NodeCtx& c) { return variadic(c, "min"); }},
    {"Sum", 6, 99, "", [](NodeCtx& c) { return variadic(c, "add"); }},
    {"Mean", 6, 99, "", mapMean},
    {"Where", 9, 99, "", [](NodeCtx& c) { return one(c, c.op("where", {c.in(0), c.in(1), c.in(2)})); }},
    {"Cast", 6, 99, "to,saturate", [](NodeCtx& c) { return onnxCast(c, int32_t(c.i("to", 1))); }},
    {"CastLike", 15, 99, "saturate", [](NodeCtx& c) {
       Tensor x = c.in(0);
       DType to = c.dtype(1);
       return one(c, x.dtype() == to ? c.op("identity", {x}) : c.op("cast", {x}, {{"to", dn(to)}}));
     }},
    {"Clip", 6, 99, "min,max", mapClip},
    {"LeakyRelu", 6, 99, "alpha", mapLeakyRelu},
    {"Elu", 6, 99, "alpha", mapElu},
    {"Selu", 6, 99, "alpha,gamma", mapSelu},
    {"Celu", 12, 99, "alpha", mapCelu},
    {"ThresholdedRelu", 10, 99, "alpha", mapThresholdedRelu},
    {"HardSigmoid", 6, 99, "alpha,beta", mapHardSigmoid},
    {"HardSwish", 14, 99, "", mapHardSwish},
    {"PRelu", 6, 99, "", mapPRelu},
    {"Shrink", 9, 99, "bias,lambd", mapShrink},
    {"Mish", 18, 99, "", mapMish},
    {"Dropout", 6, 99, "is_test,ratio,seed", mapDropout},
    {"Reshape", 5, 99, "allowzero", mapReshape},
    {"Flatten", 1, 99, "axis", mapFlatten},
    {"Squeeze", 1, 99, "axes", [](NodeCtx& c) { return mapSqueeze(c, "squeeze"); }},
    {"Unsqueeze", 1, 99, "axes", [](NodeCtx& c) { return mapSqueeze(c, "unsqueeze"); }},
    {"Transpose", 1, 99, "perm", [](NodeCtx& c) {
       Attrs a;
       if (c.has("perm")) a.set("perm", c.ints("perm"));
       return one(c, c.op("transpose", {c.in(0)}, a));
     }},
    {"Slice", 1, 99, "starts,ends,axes", mapSlice},
    {"Split", 2, 17, "axis,split", mapSplit},
    {"Expand", 8, 99, "", mapExpand},
    {"DepthToSpace", 1, 99, "blocksize,mode", mapDepthToSpace},
    {"SpaceToDepth", 1, 99, "blocksize", mapSpaceToDepth},
    // Reduce family
    REDUCE("ReduceSum", "reduce_sum", 13), REDUCE("ReduceMean", "reduce_mean", 18),
    REDUCE("ReduceMax", "reduce_max", 18), REDUCE("ReduceMin", "reduce_min", 18),
    REDUCE("ReduceProd", "reduce_prod", 18), REDUCE("ReduceL1", "reduce_l1", 18),
    REDUCE("ReduceL2", "reduce_l2", 18), REDUCE("ReduceSumSquare", "reduce_sum_square", 18),
    REDUCE("ReduceLogSum", "reduce_log_sum", 18), REDUCE("ReduceLogSumExp", "reduce_log_sum_exp", 18),
    {"ArgMax", 1, 99, "axis,keepdims,select_last_index", [](NodeCtx& c) { return mapArg(c, "argmax"); }},
    {"ArgMin", 1, 99, "axis,keepdims,select_last_index", [](NodeCtx& c) { return mapArg(c, "argmin"); }},
    {"Softmax", 1, 99, "axis", [](NodeCtx& c) { return softmaxLike(c, "softmax"); }},
    {"LogSoftmax", 1, 99, "axis", [](NodeCtx& c) { return softmaxLike(c, "log_softmax"); }},
    {"Hardmax", 1, 99, "axis", mapHardmax},
    {"TopK", 1, 99, "k,axis,largest,sorted", mapTopK},
    {"CumSum", 11, 99, "exclusive,reverse", mapCumSum},
    {"Compress", 9, 99, "axis", mapCompress},
    {"MaxUnpool", 9, 99, "kernel_shape,pads,strides", mapMaxUnpool},
    {"ReverseSequence", 10, 99, "batch_axis,time_axis", mapReverseSequence},
    {"Det", 11, 99, "", mapDet},
    // Linalg family
    BINARY("MatMul", "matmul", 1),
    {"Gemm", 6, 99, "alpha,beta,broadcast,transA,transB", mapGemm},
    {"Conv", 1, 99, "auto_pad,dilations,group,kernel_shape,pads,strides", mapConv},
    {"ConvTranspose", 1, 99, "auto_pad,dilations,group,kernel_shape,output_padding,output_shape,pads,strides", mapConvTranspose},
    {"MaxPool", 1, 99, "auto_pad,ceil_mode,dilations,kernel_shape,pads,storage_order,strides", mapMaxPool},
    {"AveragePool", 1, 99, "auto_pad,ceil_mode,count_include_pad,kernel_shape,pads,strides", mapAvgPool},
    {"LpPool", 2, 99, "auto_pad,kernel_shape,p,pads,strides", mapLpPool},
    UNARY("GlobalAveragePool", "global_avg_pool", 1), UNARY("GlobalMaxPool", "global_max_pool", 1),
    {"GlobalLpPool", 2, 99, "p", mapGlobalLpPool},
    {"Einsum", 12, 99, "equation", mapEinsum},
    // Index family
    {"Concat", 4, 99, "axis", mapConcat},
    {"Tile", 6, 99, "", mapTile},
    {"Pad", 2, 17, "mode,pads,value", mapPad},
    {"Gather", 1, 99, "axis", [](NodeCtx& c) { return mapGather(c, "gather", "axis", 0); }},
    {"GatherElements", 11, 99, "axis", [](NodeCtx& c) { return mapGather(c, "gather_elements", "axis", 0); }},
    {"GatherND", 11, 99, "batch_dims", [](NodeCtx& c) { return mapGather(c, "gather_nd", "batch_dims", 0); }},
    {"Scatter", 9, 10, "axis", [](NodeCtx& c) { return mapScatter(c, false); }},
    {"ScatterElements", 11, 99, "axis,reduction", [](NodeCtx& c) { return mapScatter(c, false); }},
    {"ScatterND", 11, 99, "reduction", [](NodeCtx& c) { return mapScatter(c, true); }},
    {"OneHot", 9, 99, "axis", mapOneHot},
    {"Trilu", 14, 99, "upper", mapTrilu},
    {"Resize", 10, 17, "coordinate_transformation_mode,cubic_coeff_a,exclude_outside,extrapolation_value,mode,nearest_mode", mapResize},
    {"Upsample", 7, 9, "mode,scales", mapResize},
};

}  // namespace

// This file's entries, then each family file's (OnnxImpl.h).
const std::vector<OpEntry>& opTable() {
  static const std::vector<OpEntry> table = [] {
    std::vector<OpEntry> t = kTable;
    for (auto family : {normalizationEntries, quantizationEntries, gridSampleEntries, lossEntries, recurrentEntries,
                        signalEntries, trainingEntries}) {
      std::vector<OpEntry> more = family();
      t.insert(t.end(), more.begin(), more.end());
    }
    return t;
  }();
  return table;
}

const OpEntry* findEntry(const std::string& op, int64_t opset) {
  for (const OpEntry& e : opTable())
    if (e.name == op && opset >= e.since && opset <= e.until) return &e;
  return nullptr;
}

const std::vector<OpSupport>& supportedOps() {
  static const std::vector<OpSupport> v = [] {
    std::vector<OpSupport> out;
    for (const OpEntry& e : opTable()) out.push_back({e.name, e.since, e.until, e.attrs, e.note});
    return out;
  }();
  return v;
}

}  // namespace eph::tensor::onnx
