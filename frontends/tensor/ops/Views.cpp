// View ops: a new shape and layout over the input's storage, without a copy
// (Program.h). reshape of a non-contiguous input is the one that copies.
#include <algorithm>
#include <numeric>

#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"

namespace eph::tensor {

namespace {

// n becomes a view of input 0 with `shape`, `strides` (in the root's storage) and `offset`.
void makeView(const Program& p, Node& n, Shape shape, std::vector<int64_t> strides, int64_t offset) {
  n.isView = true;
  n.dtype = p.node(n.inputs[0]).dtype;
  n.shape = std::move(shape);
  n.strides = std::move(strides);
  n.offset = offset;
}

int64_t offsetOf(const Program& p, uint32_t id) { return p.node(id).isView ? p.node(id).offset : 0; }

// reshape {shape}: one extent may be -1 (inferred); 0 copies the input's extent
// there unless {allowzero = 1}.
std::string inferReshape(const Program& p, Node& n) {
  const Node& x = p.node(n.inputs[0]);
  Shape shape = n.attrs.ints("shape");
  int inferred = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0 && !n.attrs.i("allowzero")) {
      if (d >= x.shape.size()) return "reshape: 0 at dimension " + std::to_string(d) + " of " + shapeText(shape) +
                                      " copies an extent " + shapeText(x.shape) + " does not have";
      shape[d] = x.shape[d];
    } else if (shape[d] == -1) {
      if (inferred >= 0) return "reshape: more than one -1 in " + shapeText(n.attrs.ints("shape"));
      inferred = int(d);
    } else if (shape[d] < 0) {
      return "reshape: a negative extent in " + shapeText(n.attrs.ints("shape"));
    }
  }
  if (inferred >= 0) {
    int64_t rest = 1;
    for (size_t d = 0; d < shape.size(); ++d)
      if (int(d) != inferred) rest *= shape[d];
    if (rest == 0 || numel(x.shape) % rest)
      return "reshape: cannot infer the -1 in " + shapeText(n.attrs.ints("shape")) + " for " +
             std::to_string(numel(x.shape)) + " elements " + shapeText(x.shape);
    shape[size_t(inferred)] = numel(x.shape) / rest;
  }
  if (numel(shape) != numel(x.shape))
    return "reshape: " + shapeText(x.shape) + " (" + std::to_string(numel(x.shape)) + " elements) cannot become " +
           shapeText(shape) + " (" + std::to_string(numel(shape)) + " elements)";
  if (p.contiguous(n.inputs[0])) {
    makeView(p, n, shape, contiguousStrides(shape), offsetOf(p, n.inputs[0]));
  } else {  // a copy (lowered below)
    n.dtype = x.dtype;
    n.shape = shape;
  }
  return "";
}

std::string inferTranspose(const Program& p, Node& n) {
  const Node& x = p.node(n.inputs[0]);
  size_t r = x.shape.size();
  std::vector<int64_t> perm = n.attrs.ints("perm");
  if (perm.empty()) {
    perm.resize(r);
    for (size_t d = 0; d < r; ++d) perm[d] = int64_t(r - 1 - d);
  }
  if (perm.size() != r) return "transpose: perm " + shapeText(perm) + " has " + std::to_string(perm.size()) +
                               " entries for a tensor of rank " + std::to_string(r);
  std::vector<bool> seen(r, false);
  for (int64_t& a : perm) {
    if (!normaliseAxis(a, r) || seen[size_t(a)]) return "transpose: perm " + shapeText(n.attrs.ints("perm")) +
                                                        " is not a permutation of the axes of " + shapeText(x.shape);
    seen[size_t(a)] = true;
  }
  std::vector<int64_t> st = p.strides(n.inputs[0]);
  Shape shape(r);
  std::vector<int64_t> strides(r);
  for (size_t d = 0; d < r; ++d) {
    shape[d] = x.shape[size_t(perm[d])];
    strides[d] = st[size_t(perm[d])];
  }
  makeView(p, n, shape, strides, offsetOf(p, n.inputs[0]));
  return "";
}

// slice {starts, ends, axes?, steps?}: ONNX/numpy semantics (negative indices
// count from the end; bounds are clamped; a negative step walks backwards).
std::string inferSlice(const Program& p, Node& n) {
  const Node& x = p.node(n.inputs[0]);
  size_t r = x.shape.size();
  std::vector<int64_t> starts = n.attrs.ints("starts"), ends = n.attrs.ints("ends");
  std::vector<int64_t> axes = n.attrs.ints("axes"), steps = n.attrs.ints("steps");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return "slice: starts, ends, axes and steps have different lengths (" + std::to_string(starts.size()) + ", " +
           std::to_string(ends.size()) + ", " + std::to_string(axes.size()) + ", " + std::to_string(steps.size()) + ")";
  Shape shape = x.shape;
  std::vector<int64_t> st = p.strides(n.inputs[0]);
  std::vector<int64_t> strides = st;
  int64_t offset = offsetOf(p, n.inputs[0]);
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    if (!normaliseAxis(a, r)) return "slice: axis " + std::to_string(axes[i]) + " is out of range for " + shapeText(x.shape);
    if (seen[size_t(a)]) return "slice: axis " + std::to_string(axes[i]) + " is given twice";
    seen[size_t(a)] = true;
    int64_t dim = x.shape[size_t(a)], step = steps[i];
    if (step == 0) return "slice: a step of 0 on axis " + std::to_string(axes[i]);
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t count;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, -1, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = s > e ? (s - e - step - 1) / -step : 0;
    }
    shape[size_t(a)] = count;
    if (count > 0) offset += s * st[size_t(a)];
    strides[size_t(a)] = st[size_t(a)] * step;
  }
  makeView(p, n, shape, strides, offset);
  return "";
}

// expand {shape}: numpy broadcasting of the input with `shape` (either side may be 1).
std::string inferExpand(const Program& p, Node& n) {
  const Node& x = p.node(n.inputs[0]);
  Shape want = n.attrs.ints("shape");
  auto out = broadcastShapes(x.shape, want);
  if (!out) return "expand: " + shapeText(x.shape) + " cannot be broadcast to " + shapeText(want);
  std::vector<int64_t> st = p.strides(n.inputs[0]);
  std::vector<int64_t> strides(out->size(), 0);
  size_t shift = out->size() - x.shape.size();
  for (size_t d = 0; d < x.shape.size(); ++d) strides[d + shift] = x.shape[d] == 1 ? 0 : st[d];
  makeView(p, n, *out, strides, offsetOf(p, n.inputs[0]));
  return "";
}

// squeeze {axes?}: drops the given extent-1 axes (all of them without axes).
std::string inferSqueeze(const Program& p, Node& n) {
  const Node& x = p.node(n.inputs[0]);
  std::vector<bool> drop(x.shape.size(), false);
  if (!n.attrs.has("axes")) {
    for (size_t d = 0; d < x.shape.size(); ++d) drop[d] = x.shape[d] == 1;
  } else {
    for (int64_t a : n.attrs.ints("axes")) {
      int64_t ax = a;
      if (!normaliseAxis(ax, x.shape.size())) return "squeeze: axis " + std::to_string(a) + " is out of range for " + shapeText(x.shape);
      if (x.shape[size_t(ax)] != 1) return "squeeze: axis " + std::to_string(a) + " of " + shapeText(x.shape) + " has extent " +
                                           std::to_string(x.shape[size_t(ax)]) + ", not 1";
      drop[size_t(ax)] = true;
    }
  }
  std::vector<int64_t> st = p.strides(n.inputs[0]);
  Shape shape;
  std::vector<int64_t> strides;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (!drop[d]) {
      shape.push_back(x.shape[d]);
      strides.push_back(st[d]);
    }
  makeView(p, n, shape, strides, offsetOf(p, n.inputs[0]));
  return "";
}

// unsqueeze {axes}: inserts extent-1 axes at the given positions of the result.
std::string inferUnsqueeze(const Program& p, Node& n) {
  const Node& x = p.node(n.inputs[0]);
  std::vector<int64_t> axes = n.attrs.ints("axes");
  size_t r = x.shape.size() + axes.size();
  std::vector<bool> inserted(r, false);
  for (int64_t a : axes) {
    int64_t ax = a;
    if (!normaliseAxis(ax, r) || inserted[size_t(ax)])
      return "unsqueeze: axes " + shapeText(axes) + " are out of range or repeated for a result of rank " + std::to_string(r);
    inserted[size_t(ax)] = true;
  }
  std::vector<int64_t> st = p.strides(n.inputs[0]);
  Shape shape;
  std::vector<int64_t> strides;
  size_t src = 0;
  for (size_t d = 0; d < r; ++d) {
    if (inserted[d]) {
      shape.push_back(1);
      strides.push_back(0);
    } else {
      shape.push_back(x.shape[src]);
      strides.push_back(st[src++]);
    }
  }
  makeView(p, n, shape, strides, offsetOf(p, n.inputs[0]));
  return "";
}

std::string inferIdentity(const Program& p, Node& n) {
  makeView(p, n, p.node(n.inputs[0]).shape, p.strides(n.inputs[0]), offsetOf(p, n.inputs[0]));
  return "";
}

// A contiguous copy of the input, element by element in row-major order.
Expected<ir::Value*> copyRowMajor(Lowering& l, const Node& n, std::span<const Operand> in) {
  return l.map(n, in, [](Kernel& k) { return k.loadLinear(0, k.linear); });
}

}  // namespace

void addViewOps(std::vector<OpDef>& ops) {
  ops.push_back({.name = "reshape", .infer = inferReshape, .view = true, .lower = copyRowMajor});
  ops.push_back({.name = "transpose", .infer = inferTranspose, .view = true});
  ops.push_back({.name = "slice", .infer = inferSlice, .view = true});
  ops.push_back({.name = "expand", .infer = inferExpand, .view = true});
  ops.push_back({.name = "squeeze", .infer = inferSqueeze, .view = true});
  ops.push_back({.name = "unsqueeze", .infer = inferUnsqueeze, .view = true});
  ops.push_back({.name = "identity", .infer = inferIdentity, .view = true});
  // contiguous: a fresh row-major copy (what a view becomes before a kernel that wants one).
  ops.push_back({.name = "contiguous",
                 .infer = [](const Program& p, Node& n) {
                   n.dtype = p.node(n.inputs[0]).dtype;
                   n.shape = p.node(n.inputs[0]).shape;
                   return std::string();
                 },
                 .lower = copyRowMajor});
}

}  // namespace eph::tensor
