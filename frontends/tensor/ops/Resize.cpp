// resize (ONNX Resize, docs/tensor.md "Indexing, shaping and creation"):
// nearest, linear and cubic over any number of axes.
//
// Each output coordinate x on a resized axis maps to x_original in float64 by
// coordinate_transformation_mode, as ONNX's formulas (scale = scales[d] when
// given, else sizes[d] / in[d]):
//   half_pixel            (x + 0.5) / scale - 0.5
//   half_pixel_symmetric  in/2 * (1 - out/(scale*in)) + (x + 0.5) / scale - 0.5
//   pytorch_half_pixel    length > 1 ? (x + 0.5) / scale - 0.5 : 0
//   align_corners         length != 1 ? x * (in - 1) / (length - 1) : 0
//   asymmetric            x / scale
//   tf_half_pixel_for_nn  (x + 0.5) / scale   (Resize-11)
// where `length` is in * scale when scales are given (not rounded, as ONNX's
// reference), else the output size.
//   tf_crop_and_resize    length > 1 ? start*(in-1) + x * (end - start) * (in - 1) / (length - 1)
//                                 : start*(in-1) + (end - start) * (in - 1) / 2,
//                         outside [0, in - 1]: extrapolation_value
// nearest rounds x_original by nearest_mode and clamps to [0, in - 1], in one
// kernel. linear and cubic interpolate one axis at a time (a kernel per
// resized axis, the last axis first, as ONNX's reference), between neighbours
// clamped to the edge; exclude_outside=1 zeroes the weights of neighbours
// outside the input and renormalises. Intermediates and weights are f32 (f64
// for f64 and 32/64-bit integer inputs); integer outputs are rounded half away
// from zero and saturate to the dtype.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"

namespace eph::tensor {

namespace {

using ir::Builder;
using ir::Value;

std::string num(int64_t v) { return std::to_string(v); }

struct Axis {
  int64_t in = 0, out = 0;
  double scale = 1, roiStart = 0, roiEnd = 1;
  // The resized length the formulas use: in * scale when scales are given
  // (not rounded, as ONNX's reference), else out.
  double length = 0;
};

struct ResizeSpec {
  std::string mode, ctm, nearest;
  double a = -0.75, extrapolation = 0;
  bool excludeOutside = false;
  std::vector<Axis> axes;
  // Whether axis d changes anything (an unchanged axis reads straight through).
  bool resized(size_t d) const {
    const Axis& x = axes[d];
    if (ctm == "tf_crop_and_resize" && (x.roiStart != 0 || x.roiEnd != 1)) return true;
    return x.in != x.out || x.scale != 1;
  }
};

template <class T>
std::string listText(const std::vector<T>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    std::ostringstream o;
    o << v[i];
    s += (i ? ", " : "") + o.str();
  }
  return s + "]";
}

std::string parse(const Node& n, const Shape& in, ResizeSpec& s) {
  const Attrs& at = n.attrs;
  s.mode = at.s("mode", "nearest");
  s.ctm = at.s("coordinate_transformation_mode", "half_pixel");
  s.nearest = at.s("nearest_mode", "round_prefer_floor");
  s.a = at.f("cubic_coeff_a", -0.75);
  s.excludeOutside = at.i("exclude_outside", 0) != 0;
  s.extrapolation = at.f("extrapolation_value", 0);
  if (s.mode != "nearest" && s.mode != "linear" && s.mode != "cubic")
    return "resize: unknown mode '" + s.mode + "' (nearest, linear or cubic)";
  if (s.ctm != "half_pixel" && s.ctm != "half_pixel_symmetric" && s.ctm != "pytorch_half_pixel" && s.ctm != "align_corners" &&
      s.ctm != "asymmetric" && s.ctm != "tf_crop_and_resize" && s.ctm != "tf_half_pixel_for_nn")
    return "resize: unknown coordinate_transformation_mode '" + s.ctm + "'";
  if (s.nearest != "round_prefer_floor" && s.nearest != "round_prefer_ceil" && s.nearest != "floor" && s.nearest != "ceil")
    return "resize: unknown nearest_mode '" + s.nearest + "'";
  if (at.i("antialias", 0) != 0) return "resize: antialias is not supported";
  if (!at.has("sizes")) return "resize: the sizes attribute (the output shape) is required";
  const size_t r = in.size();
  // axes (optional): sizes, scales and roi then name those axes only.
  std::vector<int64_t> axes = at.ints("axes");
  if (!at.has("axes"))
    for (size_t d = 0; d < r; ++d) axes.push_back(int64_t(d));
  std::vector<bool> seen(r, false);
  for (int64_t& a : axes) {
    int64_t given = a;
    if (!normaliseAxis(a, r) || seen[size_t(a)])
      return "resize: axes " + shapeText(at.ints("axes")) + " are out of range or repeated for " + shapeText(in) + " (axis " +
             num(given) + ")";
    seen[size_t(a)] = true;
  }
  const size_t k = axes.size();
  std::vector<int64_t> sizes = at.ints("sizes");
  std::vector<double> scales = at.floats("scales"), roi = at.floats("roi");
  if (sizes.size() != k)
    return "resize: sizes " + shapeText(sizes) + " has " + num(int64_t(sizes.size())) + " entries for " +
           (at.has("axes") ? num(int64_t(k)) + " axes" : "an input of shape " + shapeText(in));
  if (at.has("scales") && scales.size() != k)
    return "resize: scales " + listText(scales) + " has " + num(int64_t(scales.size())) + " entries, not " + num(int64_t(k));
  if (at.has("roi") && roi.size() != 2 * k)
    return "resize: roi " + listText(roi) + " has " + num(int64_t(roi.size())) + " entries, not " + num(int64_t(2 * k)) +
           " (all starts, then all ends)";
  s.axes.assign(r, Axis{});
  for (size_t d = 0; d < r; ++d) s.axes[d].in = s.axes[d].out = in[d], s.axes[d].length = double(in[d]);
  for (size_t i = 0; i < k; ++i) {
    Axis& x = s.axes[size_t(axes[i])];
    x.out = sizes[i];
    if (x.out < 0) return "resize: a negative size in " + shapeText(sizes);
    if (x.in == 0 && x.out > 0) return "resize: cannot resize the empty axis " + num(axes[i]) + " of " + shapeText(in) + " to " + num(x.out);
    x.scale = x.in ? double(x.out) / double(x.in) : 1;
    x.length = double(x.out);
    if (at.has("scales")) {
      x.scale = scales[i];
      if (!(x.scale > 0) || !std::isfinite(x.scale)) return "resize: scales " + listText(scales) + " must be positive and finite";
      x.length = double(x.in) * x.scale;
    }
    if (at.has("roi")) {
      x.roiStart = roi[i];
      x.roiEnd = roi[i + k];
    }
  }
  if (s.mode != "nearest" && n.dtype == DType::Bool) return "resize: mode '" + s.mode + "' wants a numeric tensor, not bool";
  return "";
}

std::string inferResize(const Program& p, Node& n) {
  const Node& x = p.node(n.inputs[0]);
  n.dtype = x.dtype;
  ResizeSpec s;
  if (std::string why = parse(n, x.shape, s); !why.empty()) return why;
  n.shape.clear();
  for (const Axis& a : s.axes) n.shape.push_back(a.out);
  return "";
}

// x_original (f64) of output position o (i32) on axis `a`.
Value* original(Kernel& k, const ResizeSpec& s, const Axis& a, Value* o) {
  Builder& b = k.b;
  const ir::Type* f64 = k.ctx.f64();
  auto c = [&](double v) { return b.constFloat(f64, v); };
  Value* x = b.cast(o, f64);
  auto halfPixel = [&] { return b.sub(b.div(b.add(x, c(0.5)), c(a.scale)), c(0.5)); };
  const double in1 = double(a.in - 1), out1 = a.length - 1;
  if (s.ctm == "half_pixel") return halfPixel();
  if (s.ctm == "half_pixel_symmetric") {
    const double adjustment = double(a.out) / (a.scale * double(a.in));
    const double offset = double(a.in) / 2 * (1 - adjustment);
    return b.sub(b.add(c(offset), b.div(b.add(x, c(0.5)), c(a.scale))), c(0.5));
  }
  if (s.ctm == "pytorch_half_pixel") return a.length > 1 ? halfPixel() : c(0);
  if (s.ctm == "align_corners") return a.length != 1 ? b.div(b.mul(x, c(in1)), c(out1)) : c(0);
  if (s.ctm == "tf_half_pixel_for_nn") return b.div(b.add(x, c(0.5)), c(a.scale));
  if (s.ctm == "asymmetric") return b.div(x, c(a.scale));
  // tf_crop_and_resize
  const double span = a.roiEnd - a.roiStart;
  if (a.length <= 1) return c(span * in1 / 2 + a.roiStart * in1);
  return b.add(b.div(b.mul(b.mul(x, c(span)), c(in1)), c(out1)), c(a.roiStart * in1));
}

// Whether x_original lies outside [0, in - 1] (tf_crop_and_resize's extrapolation).
Value* outside(Kernel& k, const Axis& a, Value* x) {
  const ir::Type* f64 = k.ctx.f64();
  return k.b.or_(k.b.lt(x, k.b.constFloat(f64, 0)), k.b.gt(x, k.b.constFloat(f64, double(a.in - 1))));
}

Value* clampI32(Kernel& k, Value* v, int64_t hi) { return k.b.max(k.b.min(v, k.i32(hi)), k.i32(0)); }

// The dtype linear and cubic interpolate in.
DType accType(DType t) {
  if (t == DType::F64 || (isInt(t) && bits(t) >= 32)) return DType::F64;
  return DType::F32;
}

Expected<Value*> lowerNearest(Lowering& l, const Node& n, std::span<const Operand> in, const ResizeSpec& s) {
  return l.map(n, in, [&](Kernel& k) -> Value* {
    Builder& b = k.b;
    const ir::Type* f64 = k.ctx.f64();
    std::vector<Value*> idx = k.index;
    Value* out = nullptr;
    for (size_t d = 0; d < idx.size(); ++d) {
      const Axis& a = s.axes[d];
      if (!s.resized(d)) continue;
      Value* x = original(k, s, a, k.index[d]);
      if (s.ctm == "tf_crop_and_resize") out = out ? b.or_(out, outside(k, a, x)) : outside(k, a, x);
      Value* fl = b.floor(x);
      Value* frac = b.sub(x, fl);
      Value* up;
      if (s.nearest == "round_prefer_floor") up = b.gt(frac, b.constFloat(f64, 0.5));
      else if (s.nearest == "round_prefer_ceil") up = b.ge(frac, b.constFloat(f64, 0.5));
      else if (s.nearest == "floor") up = b.constBool(false);
      else up = b.gt(frac, b.constFloat(f64, 0));
      Value* r = b.select(up, b.add(fl, b.constFloat(f64, 1)), fl);
      // Clamp in f64 before the cast so that far coordinates stay in range.
      r = b.max(b.min(r, b.constFloat(f64, double(a.in - 1))), b.constFloat(f64, 0));
      idx[d] = b.cast(r, k.ctx.i32());
    }
    Value* v = k.load(0, idx);
    return out ? b.select(out, k.constant(n.dtype, s.extrapolation), v) : v;
  });
}

// One linear or cubic pass over axis `d` of `src` (shape src.shape, dtype src.dtype), giving `to`.
Value* interpolateAxis(Lowering& l, const Node& n, const ResizeSpec& s, const Operand& src, size_t d, DType to, bool last) {
  const Axis& a = s.axes[d];
  Shape shape = src.shape;
  shape[d] = a.out;
  const DType acc = accType(n.dtype);
  const bool cubic = s.mode == "cubic";
  const bool roundInt = last && isInt(to);
  std::string key = n.attrs.key() + "|axis" + std::to_string(d) + (last ? "|last" : "");
  return l.map(n.op, to, shape, std::span(&src, 1), [&](Kernel& k) -> Value* {
    Builder& b = k.b;
    const ir::Type* f64 = k.ctx.f64();
    auto c = [&](double v) { return b.constFloat(f64, v); };
    Value* x = original(k, s, a, k.index[d]);
    Value* fl = b.floor(x);
    Value* r = b.sub(x, fl);
    Value* base = b.cast(fl, k.ctx.i32());
    std::vector<int64_t> offs;
    std::vector<Value*> w;
    if (!cubic) {
      offs = {0, 1};
      w = {b.sub(c(1), r), r};
    } else {
      // ONNX's cubic coefficients for the neighbours at -1, 0, 1, 2 of floor(x).
      const double A = s.a;
      Value* r1 = b.add(r, c(1));
      Value* s0 = b.sub(c(1), r);
      Value* s1 = b.add(s0, c(1));
      auto outer = [&](Value* t) {  // ((A t - 5A) t + 8A) t - 4A
        return b.sub(b.mul(b.add(b.mul(b.sub(b.mul(c(A), t), c(5 * A)), t), c(8 * A)), t), c(4 * A));
      };
      auto inner = [&](Value* t) {  // ((A + 2) t - (A + 3)) t t + 1
        return b.add(b.mul(b.mul(b.sub(b.mul(c(A + 2), t), c(A + 3)), t), t), c(1));
      };
      offs = {-1, 0, 1, 2};
      w = {outer(r1), inner(r), inner(s0), outer(s1)};
    }
    std::vector<Value*> pos(offs.size());
    for (size_t i = 0; i < offs.size(); ++i) pos[i] = offs[i] ? b.add(base, k.i32(offs[i])) : base;
    if (s.excludeOutside) {
      Value* sum = nullptr;
      for (size_t i = 0; i < offs.size(); ++i) {
        Value* inside = b.and_(b.ge(pos[i], k.i32(0)), b.lt(pos[i], k.i32(a.in)));
        w[i] = b.select(inside, w[i], c(0));
        sum = sum ? b.add(sum, w[i]) : w[i];
      }
      for (Value*& wi : w) wi = b.div(wi, sum);
    }
    const ir::Type* at = computeType(k.ctx, acc);
    Value* v = nullptr;
    for (size_t i = 0; i < offs.size(); ++i) {
      std::vector<Value*> idx = k.index;
      idx[d] = clampI32(k, pos[i], a.in - 1);
      Value* e = k.convert(k.load(0, idx), src.dtype, acc);
      Value* wi = acc == DType::F64 ? w[i] : b.cast(w[i], at);
      Value* term = b.mul(wi, e);
      v = v ? b.add(v, term) : term;
    }
    if (s.ctm == "tf_crop_and_resize")
      v = b.select(outside(k, a, x), b.constFloat(at, s.extrapolation), v);
    if (roundInt) v = b.round(v);
    return k.convert(v, acc, to);
  }, key);
}

Expected<Value*> lowerResize(Lowering& l, const Node& n, std::span<const Operand> in) {
  ResizeSpec s;
  if (std::string why = parse(n, in[0].shape, s); !why.empty()) return Error{{}, why};
  if (s.mode == "nearest") return lowerNearest(l, n, in, s);
  std::vector<size_t> axes;
  for (size_t d = s.axes.size(); d-- > 0;)
    if (s.resized(d)) axes.push_back(d);
  if (axes.empty()) return l.map(n, in, [](Kernel& k) { return k.load(0, k.index); });
  Operand cur = in[0];
  ir::Value* temp = nullptr;
  for (size_t i = 0; i < axes.size(); ++i) {
    const bool last = i + 1 == axes.size();
    const DType to = last ? n.dtype : accType(n.dtype);
    ir::Value* out = interpolateAxis(l, n, s, cur, axes[i], to, last);
    if (temp) l.free(temp);
    temp = out;
    Shape shape = cur.shape;
    shape[axes[i]] = s.axes[axes[i]].out;
    cur = Lowering::contiguous(out, to, shape);
  }
  return temp;
}

}  // namespace

void addResizeOps(std::vector<OpDef>& ops) {
  ops.push_back({.name = "resize", .infer = inferResize, .lower = lowerResize});
}

}  // namespace eph::tensor
