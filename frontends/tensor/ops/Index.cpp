// Index ops (docs/tensor.md, "Indexing, shaping and creation"): concat, tile,
// pad, gather, gather_elements, gather_nd, scatter_elements, scatter_nd,
// one_hot, trilu, range. resize is in Resize.cpp, the random ops in Random.cpp.
//
// Index inputs are i32 or i64; a negative index counts from the end. An index
// still out of range after that reads 0 (the gathers), writes nothing (the
// scatters) or matches no position (one_hot: all off_value): no kernel reads
// or writes out of bounds. The scatters are deterministic: one invocation per
// output element scans the updates that can reach it in row-major order, so
// with duplicate indices the last update wins ("none") or the updates combine
// in that order (add, mul, max, min), on every target.
#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>

#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"

namespace eph::tensor {

namespace {

using ir::Builder;
using ir::Value;

std::string dt(DType t) { return std::string(dtypeName(t)); }
std::string num(int64_t v) { return std::to_string(v); }

bool isIndexType(DType t) { return t == DType::I32 || t == DType::I64; }

std::string wantIndex(const std::string& op, const std::string& what, DType t) {
  return op + ": " + what + " must be i32 or i64, not " + dt(t);
}

// An element of an index tensor (in its own type, i32 or i64) as a position on
// an axis of extent `dim`: negative values count from the end; `valid` says
// whether it lands inside, and `pos` (i32) is 0 when it does not.
struct Index {
  Value* pos;
  Value* valid;
};
Index toIndex(Kernel& k, Value* raw, int64_t dim) {
  Builder& b = k.b;
  const ir::Type* t = raw->type();
  Value* d = b.constInt(t, dim);
  Value* zero = b.constInt(t, 0);
  Value* v = b.select(b.lt(raw, zero), b.add(raw, d), raw);
  Value* valid = b.and_(b.ge(v, zero), b.lt(v, d));
  Value* pos = b.select(valid, v, zero);
  if (t != k.ctx.i32()) pos = b.cast(pos, k.ctx.i32());
  return {pos, valid};
}

Value* clampI32(Kernel& k, Value* v, int64_t lo, int64_t hi) { return k.b.max(k.b.min(v, k.i32(hi)), k.i32(lo)); }

// ---- concat -----------------------------------------------------------------

std::string inferConcat(const Program& p, Node& n) {
  const Node& x0 = p.node(n.inputs[0]);
  size_t r = x0.shape.size();
  if (r == 0) return "concat: cannot concatenate scalars (rank 0)";
  int64_t axis = n.attrs.i("axis", 0);
  if (!normaliseAxis(axis, r)) return "concat: axis " + num(n.attrs.i("axis", 0)) + " is out of range for rank " + num(int64_t(r));
  Shape out = x0.shape;
  out[size_t(axis)] = 0;
  for (uint32_t id : n.inputs) {
    const Node& x = p.node(id);
    if (x.dtype != x0.dtype) return "concat: the inputs have different dtypes (" + dt(x0.dtype) + " and " + dt(x.dtype) + ")";
    bool ok = x.shape.size() == r;
    for (size_t d = 0; ok && d < r; ++d) ok = int64_t(d) == axis || x.shape[d] == x0.shape[d];
    if (!ok) return "concat: shapes " + shapeText(x0.shape) + " and " + shapeText(x.shape) + " differ outside axis " + num(axis);
    out[size_t(axis)] += x.shape[size_t(axis)];
  }
  n.dtype = x0.dtype;
  n.shape = out;
  return "";
}

// One kernel; each element picks its input by nested ifs on its position along the axis.
Expected<Value*> lowerConcat(Lowering& l, const Node& n, std::span<const Operand> in) {
  int64_t axis = n.attrs.i("axis", 0);
  normaliseAxis(axis, n.shape.size());
  const size_t a = size_t(axis);
  std::vector<size_t> parts;
  std::vector<int64_t> starts;
  int64_t s = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (numel(in[i].shape) > 0) {
      parts.push_back(i);
      starts.push_back(s);
    }
    s += in[i].shape[a];
  }
  return l.map(n, in, [&](Kernel& k) -> Value* {
    if (parts.empty()) return k.constant(n.dtype, 0);  // the output is empty too
    const ir::Type* ty = computeType(k.ctx, n.dtype);
    Value* pos = k.index[a];
    std::function<Value*(size_t)> pick = [&](size_t j) -> Value* {
      auto loadPart = [&]() {
        std::vector<Value*> idx = k.index;
        if (starts[j]) idx[a] = k.b.sub(pos, k.i32(starts[j]));
        return k.load(parts[j], idx);
      };
      if (j + 1 == parts.size()) return loadPart();
      Value* here = k.b.lt(pos, k.i32(starts[j + 1]));
      return k.b.ifOp(here, {ty}, [&](Builder&) { return loadPart(); }, [&](Builder&) { return pick(j + 1); })->result(0);
    };
    return pick(0);
  });
}

// ---- tile -------------------------------------------------------------------

std::string inferTile(const Program& p, Node& n) {
  const Node& x = p.node(n.inputs[0]);
  std::vector<int64_t> reps = n.attrs.ints("repeats");
  if (reps.size() != x.shape.size())
    return "tile: repeats " + shapeText(reps) + " has " + num(int64_t(reps.size())) + " entries for a tensor of shape " +
           shapeText(x.shape);
  n.shape = x.shape;
  for (size_t d = 0; d < reps.size(); ++d) {
    if (reps[d] < 0) return "tile: a negative repeat in " + shapeText(reps);
    n.shape[d] = x.shape[d] * reps[d];
  }
  n.dtype = x.dtype;
  return "";
}

Expected<Value*> lowerTile(Lowering& l, const Node& n, std::span<const Operand> in) {
  std::vector<int64_t> reps = n.attrs.ints("repeats");
  return l.map(n, in, [&](Kernel& k) {
    std::vector<Value*> idx = k.index;
    for (size_t d = 0; d < idx.size(); ++d)
      if (reps[d] != 1 && in[0].shape[d] != 1) idx[d] = k.b.rem(idx[d], k.i32(in[0].shape[d]));
    return k.load(0, idx);
  });
}

// ---- pad --------------------------------------------------------------------

struct PadSpec {
  std::string mode;
  std::vector<int64_t> begin, end;
};

std::string padSpec(const Node& n, const Shape& shape, PadSpec& s) {
  s.mode = n.attrs.s("mode", "constant");
  if (s.mode != "constant" && s.mode != "reflect" && s.mode != "edge" && s.mode != "wrap")
    return "pad: unknown mode '" + s.mode + "' (constant, reflect, edge or wrap)";
  size_t r = shape.size();
  std::vector<int64_t> axes = n.attrs.ints("axes");
  if (!n.attrs.has("axes"))
    for (size_t d = 0; d < r; ++d) axes.push_back(int64_t(d));
  std::vector<int64_t> pads = n.attrs.ints("pads");
  if (pads.size() != 2 * axes.size())
    return "pad: pads " + shapeText(pads) + " has " + num(int64_t(pads.size())) + " entries; " +
           (n.attrs.has("axes") ? "axes " + shapeText(axes) : "a tensor of shape " + shapeText(shape)) + " needs " +
           num(int64_t(2 * axes.size())) + " (all begins, then all ends)";
  s.begin.assign(r, 0);
  s.end.assign(r, 0);
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    if (!normaliseAxis(a, r) || seen[size_t(a)])
      return "pad: axes " + shapeText(axes) + " are out of range or repeated for shape " + shapeText(shape);
    seen[size_t(a)] = true;
    s.begin[size_t(a)] = pads[i];
    s.end[size_t(a)] = pads[i + axes.size()];
  }
  return "";
}

std::string inferPad(const Program& p, Node& n) {
  const Node& x = p.node(n.inputs[0]);
  PadSpec s;
  if (std::string why = padSpec(n, x.shape, s); !why.empty()) return why;
  n.shape = x.shape;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    n.shape[d] = x.shape[d] + s.begin[d] + s.end[d];
    if (n.shape[d] < 0)
      return "pad: pads " + shapeText(n.attrs.ints("pads")) + " would give axis " + num(int64_t(d)) + " of " +
             shapeText(x.shape) + " the extent " + num(n.shape[d]);
  }
  if (s.mode != "constant" && numel(n.shape) > 0)
    for (size_t d = 0; d < x.shape.size(); ++d)
      if (x.shape[d] == 0) return "pad: mode '" + s.mode + "' cannot pad the empty axis " + num(int64_t(d)) + " of " + shapeText(x.shape);
  n.dtype = x.dtype;
  return "";
}

Expected<Value*> lowerPad(Lowering& l, const Node& n, std::span<const Operand> in) {
  PadSpec s;
  padSpec(n, in[0].shape, s);
  const double value = n.attrs.f("value", 0);
  const bool empty = numel(in[0].shape) == 0;  // constant mode only (inferPad)
  return l.map(n, in, [&](Kernel& k) -> Value* {
    Builder& b = k.b;
    Value* fill = k.constant(n.dtype, value);
    if (empty) return fill;
    std::vector<Value*> idx = k.index;
    Value* inside = nullptr;
    for (size_t d = 0; d < idx.size(); ++d) {
      const int64_t len = in[0].shape[d], lo = s.begin[d], hi = s.end[d];
      if (lo == 0 && hi <= 0) continue;  // every position reads its own element
      Value* src = b.sub(idx[d], k.i32(lo));
      if (s.mode == "constant") {
        Value* ok = nullptr;
        if (lo > 0) ok = b.ge(src, k.i32(0));
        if (hi > 0) ok = ok ? b.and_(ok, b.lt(src, k.i32(len))) : b.lt(src, k.i32(len));
        if (ok) {
          inside = inside ? b.and_(inside, ok) : ok;
          src = b.select(ok, src, k.i32(0));
        }
      } else if (s.mode == "edge") {
        src = clampI32(k, src, 0, len - 1);
      } else if (s.mode == "wrap") {
        Value* r = b.rem(src, k.i32(len));
        src = b.select(b.lt(r, k.i32(0)), b.add(r, k.i32(len)), r);
      } else if (len == 1) {  // reflect
        src = k.i32(0);
      } else {  // reflect: period 2 (len - 1), the second half mirrored
        const int64_t period = 2 * (len - 1);
        Value* r = b.rem(src, k.i32(period));
        r = b.select(b.lt(r, k.i32(0)), b.add(r, k.i32(period)), r);
        src = b.select(b.ge(r, k.i32(len)), b.sub(k.i32(period), r), r);
      }
      idx[d] = src;
    }
    Value* v = k.load(0, idx);
    return inside ? b.select(inside, v, fill) : v;
  });
}

// ---- gather, gather_elements, gather_nd -------------------------------------

std::string inferGather(const Program& p, Node& n) {
  const Node& data = p.node(n.inputs[0]);
  const Node& ind = p.node(n.inputs[1]);
  if (!isIndexType(ind.dtype)) return wantIndex("gather", "indices", ind.dtype);
  if (data.shape.empty()) return "gather: data must have rank >= 1, not a scalar";
  int64_t axis = n.attrs.i("axis", 0);
  if (!normaliseAxis(axis, data.shape.size()))
    return "gather: axis " + num(n.attrs.i("axis", 0)) + " is out of range for data of shape " + shapeText(data.shape);
  n.dtype = data.dtype;
  n.shape.assign(data.shape.begin(), data.shape.begin() + axis);
  n.shape.insert(n.shape.end(), ind.shape.begin(), ind.shape.end());
  n.shape.insert(n.shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  return "";
}

Expected<Value*> lowerGather(Lowering& l, const Node& n, std::span<const Operand> in) {
  int64_t axis = n.attrs.i("axis", 0);
  normaliseAxis(axis, in[0].shape.size());
  const size_t a = size_t(axis), q = in[1].shape.size();
  const bool empty = numel(in[0].shape) == 0;
  return l.map(n, in, [&](Kernel& k) -> Value* {
    Value* zero = k.constant(n.dtype, 0);
    if (empty) return zero;
    std::vector<Value*> iidx(k.index.begin() + ptrdiff_t(a), k.index.begin() + ptrdiff_t(a + q));
    Index t = toIndex(k, k.load(1, iidx), in[0].shape[a]);
    std::vector<Value*> didx(k.index.begin(), k.index.begin() + ptrdiff_t(a));
    didx.push_back(t.pos);
    didx.insert(didx.end(), k.index.begin() + ptrdiff_t(a + q), k.index.end());
    return k.b.select(t.valid, k.load(0, didx), zero);
  });
}

// Checks shared by gather_elements and scatter_elements: same rank, and every
// axis but `axis` no longer in the indices than in the data.
std::string checkElements(const std::string& op, const Node& data, const Node& ind, Node& n, int64_t& axis) {
  if (!isIndexType(ind.dtype)) return wantIndex(op, "indices", ind.dtype);
  if (data.shape.empty()) return op + ": data must have rank >= 1, not a scalar";
  axis = n.attrs.i("axis", 0);
  if (!normaliseAxis(axis, data.shape.size()))
    return op + ": axis " + num(n.attrs.i("axis", 0)) + " is out of range for data of shape " + shapeText(data.shape);
  bool ok = ind.shape.size() == data.shape.size();
  for (size_t d = 0; ok && d < data.shape.size(); ++d) ok = int64_t(d) == axis || ind.shape[d] <= data.shape[d];
  if (!ok)
    return op + ": indices " + shapeText(ind.shape) + " must have the rank of data " + shapeText(data.shape) +
           " and no larger extent outside axis " + num(axis);
  return "";
}

std::string inferGatherElements(const Program& p, Node& n) {
  const Node& data = p.node(n.inputs[0]);
  const Node& ind = p.node(n.inputs[1]);
  int64_t axis;
  if (std::string why = checkElements("gather_elements", data, ind, n, axis); !why.empty()) return why;
  n.dtype = data.dtype;
  n.shape = ind.shape;
  return "";
}

Expected<Value*> lowerGatherElements(Lowering& l, const Node& n, std::span<const Operand> in) {
  int64_t axis = n.attrs.i("axis", 0);
  normaliseAxis(axis, in[0].shape.size());
  const bool empty = numel(in[0].shape) == 0;
  return l.map(n, in, [&](Kernel& k) -> Value* {
    Value* zero = k.constant(n.dtype, 0);
    if (empty) return zero;
    Index t = toIndex(k, k.load(1, k.index), in[0].shape[size_t(axis)]);
    std::vector<Value*> didx = k.index;
    didx[size_t(axis)] = t.pos;
    return k.b.select(t.valid, k.load(0, didx), zero);
  });
}

std::string inferGatherND(const Program& p, Node& n) {
  const Node& data = p.node(n.inputs[0]);
  const Node& ind = p.node(n.inputs[1]);
  if (!isIndexType(ind.dtype)) return wantIndex("gather_nd", "indices", ind.dtype);
  const int64_t r = int64_t(data.shape.size()), q = int64_t(ind.shape.size()), b = n.attrs.i("batch_dims", 0);
  if (r < 1 || q < 1) return "gather_nd: data " + shapeText(data.shape) + " and indices " + shapeText(ind.shape) + " must have rank >= 1";
  if (b < 0 || b >= std::min(r, q))
    return "gather_nd: batch_dims " + num(b) + " must be in [0, " + num(std::min(r, q)) + ") for data " + shapeText(data.shape) +
           " and indices " + shapeText(ind.shape);
  for (int64_t d = 0; d < b; ++d)
    if (data.shape[size_t(d)] != ind.shape[size_t(d)])
      return "gather_nd: the first " + num(b) + " (batch) dimensions of data " + shapeText(data.shape) + " and indices " +
             shapeText(ind.shape) + " differ";
  const int64_t m = ind.shape.back();
  if (m < 1 || m > r - b)
    return "gather_nd: the last dimension of indices " + shapeText(ind.shape) + " is " + num(m) + "; it must be in [1, " + num(r - b) +
           "] for data " + shapeText(data.shape) + " and batch_dims " + num(b);
  n.dtype = data.dtype;
  n.shape.assign(ind.shape.begin(), ind.shape.end() - 1);
  n.shape.insert(n.shape.end(), data.shape.begin() + b + m, data.shape.end());
  return "";
}

Expected<Value*> lowerGatherND(Lowering& l, const Node& n, std::span<const Operand> in) {
  const size_t b = size_t(n.attrs.i("batch_dims", 0)), q = in[1].shape.size();
  const int64_t m = in[1].shape.back();
  const bool empty = numel(in[0].shape) == 0;
  return l.map(n, in, [&](Kernel& k) -> Value* {
    Value* zero = k.constant(n.dtype, 0);
    if (empty) return zero;
    std::vector<Value*> iidx(k.index.begin(), k.index.begin() + ptrdiff_t(q - 1));
    iidx.push_back(nullptr);
    std::vector<Value*> didx(k.index.begin(), k.index.begin() + ptrdiff_t(b));
    Value* valid = nullptr;
    for (int64_t c = 0; c < m; ++c) {
      iidx.back() = k.i32(c);
      Index t = toIndex(k, k.load(1, iidx), in[0].shape[b + size_t(c)]);
      didx.push_back(t.pos);
      valid = valid ? k.b.and_(valid, t.valid) : t.valid;
    }
    didx.insert(didx.end(), k.index.begin() + ptrdiff_t(q - 1), k.index.end());
    return k.b.select(valid, k.load(0, didx), zero);
  });
}

// ---- scatter_elements, scatter_nd -------------------------------------------

std::string checkReduction(const std::string& op, const Node& n, DType t) {
  std::string red = n.attrs.s("reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    return op + ": unknown reduction '" + red + "' (none, add, mul, max or min)";
  if (red != "none" && t == DType::Bool) return op + ": reduction '" + red + "' wants a numeric tensor, not bool";
  return "";
}

// acc combined with the update u, in t's compute type.
Value* combine(Kernel& k, const std::string& red, DType t, Value* acc, Value* u) {
  Builder& b = k.b;
  if (red == "add") return b.add(acc, u);
  if (red == "mul") return b.mul(acc, u);
  if (red == "max" || red == "min") {
    Value* m = red == "max" ? b.max(acc, u) : b.min(acc, u);
    if (!isFloat(t)) return m;
    return b.select(b.ne(acc, acc), acc, b.select(b.ne(u, u), u, m));  // NaN wins, as numpy
  }
  return u;
}

std::string inferScatterElements(const Program& p, Node& n) {
  const Node& data = p.node(n.inputs[0]);
  const Node& ind = p.node(n.inputs[1]);
  const Node& upd = p.node(n.inputs[2]);
  int64_t axis;
  if (std::string why = checkElements("scatter_elements", data, ind, n, axis); !why.empty()) return why;
  if (upd.shape != ind.shape)
    return "scatter_elements: updates " + shapeText(upd.shape) + " must have the shape of indices " + shapeText(ind.shape);
  if (upd.dtype != data.dtype)
    return "scatter_elements: updates (" + dt(upd.dtype) + ") must have the dtype of data (" + dt(data.dtype) + ")";
  if (std::string why = checkReduction("scatter_elements", n, data.dtype); !why.empty()) return why;
  n.dtype = data.dtype;
  n.shape = data.shape;
  return "";
}

Expected<Value*> lowerScatterElements(Lowering& l, const Node& n, std::span<const Operand> in) {
  int64_t axis = n.attrs.i("axis", 0);
  normaliseAxis(axis, in[0].shape.size());
  const size_t a = size_t(axis);
  const std::string red = n.attrs.s("reduction", "none");
  const Shape& ishape = in[1].shape;
  const bool noUpdates = numel(ishape) == 0;
  return l.map(n, in, [&](Kernel& k) -> Value* {
    Builder& b = k.b;
    Value* acc = k.load(0, k.index);
    if (noUpdates) return acc;
    // The updates that can reach this element: indices[q] with q = this element's
    // position outside the axis (if the indices reach it) and q[axis] = 0..K-1.
    Value* reach = nullptr;
    std::vector<Value*> q = k.index;
    for (size_t d = 0; d < q.size(); ++d)
      if (d != a && ishape[d] < in[0].shape[d]) {
        Value* ok = b.lt(q[d], k.i32(ishape[d]));
        reach = reach ? b.and_(reach, ok) : ok;
        q[d] = b.min(q[d], k.i32(ishape[d] - 1));
      }
    Value* here = k.index[a];
    ir::Op* loop = b.forOp(k.i32(0), k.i32(ishape[a]), k.i32(1), {acc}, [&](Builder& lb, Value* j, const ir::Values& c) {
      std::vector<Value*> qj = q;
      qj[a] = j;
      Index t = toIndex(k, k.load(1, qj), in[0].shape[a]);
      Value* match = lb.and_(t.valid, lb.eq(t.pos, here));
      if (reach) match = lb.and_(match, reach);
      Value* u = k.load(2, qj);
      return lb.select(match, combine(k, red, n.dtype, c[0], u), c[0]);
    });
    return loop->result(0);
  });
}

std::string inferScatterND(const Program& p, Node& n) {
  const Node& data = p.node(n.inputs[0]);
  const Node& ind = p.node(n.inputs[1]);
  const Node& upd = p.node(n.inputs[2]);
  if (!isIndexType(ind.dtype)) return wantIndex("scatter_nd", "indices", ind.dtype);
  if (ind.shape.empty()) return "scatter_nd: indices must have rank >= 1, not a scalar";
  const int64_t r = int64_t(data.shape.size()), m = ind.shape.back();
  if (m < 1 || m > r)
    return "scatter_nd: the last dimension of indices " + shapeText(ind.shape) + " is " + num(m) + "; it must be in [1, " + num(r) +
           "] for data " + shapeText(data.shape);
  Shape want(ind.shape.begin(), ind.shape.end() - 1);
  want.insert(want.end(), data.shape.begin() + m, data.shape.end());
  if (upd.shape != want)
    return "scatter_nd: updates " + shapeText(upd.shape) + " must have shape " + shapeText(want) + " (indices " +
           shapeText(ind.shape) + ", data " + shapeText(data.shape) + ")";
  if (upd.dtype != data.dtype)
    return "scatter_nd: updates (" + dt(upd.dtype) + ") must have the dtype of data (" + dt(data.dtype) + ")";
  if (std::string why = checkReduction("scatter_nd", n, data.dtype); !why.empty()) return why;
  n.dtype = data.dtype;
  n.shape = data.shape;
  return "";
}

Expected<Value*> lowerScatterND(Lowering& l, const Node& n, std::span<const Operand> in) {
  const std::string red = n.attrs.s("reduction", "none");
  const Shape& ishape = in[1].shape;
  const Shape tuples(ishape.begin(), ishape.end() - 1);
  const int64_t count = numel(tuples), m = ishape.back();
  return l.map(n, in, [&](Kernel& k) -> Value* {
    Builder& b = k.b;
    Value* acc = k.load(0, k.index);
    if (count == 0) return acc;
    std::vector<int64_t> cs = contiguousStrides(tuples);
    ir::Op* loop = b.forOp(k.i32(0), k.i32(count), k.i32(1), {acc}, [&](Builder& lb, Value* t, const ir::Values& c) {
      std::vector<Value*> tidx;  // t as a position in indices.shape[:-1]
      for (size_t d = 0; d < tuples.size(); ++d) {
        Value* v = cs[d] == 1 ? t : lb.div(t, k.i32(cs[d]));
        tidx.push_back(d == 0 ? v : lb.rem(v, k.i32(tuples[d])));
      }
      std::vector<Value*> iidx = tidx;
      iidx.push_back(nullptr);
      Value* match = nullptr;
      for (int64_t comp = 0; comp < m; ++comp) {
        iidx.back() = k.i32(comp);
        Index ti = toIndex(k, k.load(1, iidx), in[0].shape[size_t(comp)]);
        Value* ok = lb.and_(ti.valid, lb.eq(ti.pos, k.index[size_t(comp)]));
        match = match ? lb.and_(match, ok) : ok;
      }
      std::vector<Value*> uidx = tidx;
      uidx.insert(uidx.end(), k.index.begin() + m, k.index.end());
      Value* u = k.load(2, uidx);
      return lb.select(match, combine(k, red, n.dtype, c[0], u), c[0]);
    });
    return loop->result(0);
  });
}

// ---- one_hot, trilu, range --------------------------------------------------

std::string inferOneHot(const Program& p, Node& n) {
  const Node& ind = p.node(n.inputs[0]);
  if (!isIndexType(ind.dtype)) return wantIndex("one_hot", "indices", ind.dtype);
  if (!n.attrs.has("depth")) return "one_hot: the depth attribute is required";
  const int64_t depth = n.attrs.i("depth");
  if (depth < 0) return "one_hot: depth " + num(depth) + " is negative";
  auto t = dtypeFromName(n.attrs.s("dtype", "f32"));
  if (!t) return "one_hot: unknown dtype '" + n.attrs.s("dtype") + "'";
  int64_t axis = n.attrs.i("axis", -1);
  if (!normaliseAxis(axis, ind.shape.size() + 1))
    return "one_hot: axis " + num(n.attrs.i("axis", -1)) + " is out of range for a result of rank " + num(int64_t(ind.shape.size() + 1));
  n.dtype = *t;
  n.shape = ind.shape;
  n.shape.insert(n.shape.begin() + axis, depth);
  return "";
}

Expected<Value*> lowerOneHot(Lowering& l, const Node& n, std::span<const Operand> in) {
  int64_t axis = n.attrs.i("axis", -1);
  normaliseAxis(axis, n.shape.size());
  const int64_t depth = n.attrs.i("depth");
  const double on = n.attrs.f("on_value", 1), off = n.attrs.f("off_value", 0);
  return l.map(n, in, [&](Kernel& k) -> Value* {
    std::vector<Value*> iidx = k.index;
    iidx.erase(iidx.begin() + axis);
    Index t = toIndex(k, k.load(0, iidx), depth);
    Value* hit = k.b.and_(t.valid, k.b.eq(t.pos, k.index[size_t(axis)]));
    return k.b.select(hit, k.constant(n.dtype, on), k.constant(n.dtype, off));
  });
}

std::string inferTrilu(const Program& p, Node& n) {
  const Node& x = p.node(n.inputs[0]);
  if (x.shape.size() < 2) return "trilu: the input must have rank >= 2, not " + shapeText(x.shape);
  n.dtype = x.dtype;
  n.shape = x.shape;
  return "";
}

Expected<Value*> lowerTrilu(Lowering& l, const Node& n, std::span<const Operand> in) {
  const size_t r = n.shape.size();
  const bool upper = n.attrs.i("upper", 1) != 0;
  // k clamped to where it still changes something, so that it fits i32.
  const int64_t kk = std::clamp<int64_t>(n.attrs.i("k", 0), -n.shape[r - 2] - 1, n.shape[r - 1] + 1);
  return l.map(n, in, [&](Kernel& k) -> Value* {
    Value* diff = k.b.sub(k.index[r - 1], k.index[r - 2]);  // column - row
    Value* keep = upper ? k.b.ge(diff, k.i32(kk)) : k.b.le(diff, k.i32(kk));
    return k.b.select(keep, k.load(0, k.index), k.constant(n.dtype, 0));
  });
}

std::string inferRange(const Program&, Node& n) {
  auto t = dtypeFromName(n.attrs.s("dtype", "f32"));
  if (!t) return "range: unknown dtype '" + n.attrs.s("dtype") + "'";
  if (*t == DType::Bool) return "range: dtype bool is not a number type";
  const double start = n.attrs.f("start", 0), limit = n.attrs.f("limit", 0), delta = n.attrs.f("delta", 1);
  if (!std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
    return "range: start, limit and delta must be finite";
  if (delta == 0) return "range: delta is 0";
  if (!isFloat(*t) && (start != std::floor(start) || delta != std::floor(delta)))
    return "range: start and delta must be integers for dtype " + dt(*t);
  const double count = std::max(0.0, std::ceil((limit - start) / delta));
  if (count > double(INT32_MAX))
    return "range: " + (count < 1e18 ? num(int64_t(count)) : std::string("more than 10^18")) + " elements; at most 2147483647";
  n.dtype = *t;
  n.shape = {int64_t(count)};
  return "";
}

// start + i * delta: in f64 (one fused multiply-add, so every target rounds alike)
// for floats, rounded once to the dtype; in the dtype itself for integers.
Expected<Value*> lowerRange(Lowering& l, const Node& n, std::span<const Operand> in) {
  const double start = n.attrs.f("start", 0), delta = n.attrs.f("delta", 1);
  return l.map(n, in, [&](Kernel& k) -> Value* {
    Builder& b = k.b;
    if (isFloat(n.dtype)) {
      const ir::Type* f64 = k.ctx.f64();
      Value* v = b.fma(b.cast(k.linear, f64), b.constFloat(f64, delta), b.constFloat(f64, start));
      return k.convert(v, DType::F64, n.dtype);
    }
    const ir::Type* t = computeType(k.ctx, n.dtype);
    return b.add(b.constInt(t, int64_t(start)), b.mul(b.cast(k.linear, t), b.constInt(t, int64_t(delta))));
  });
}

}  // namespace

void addResizeOps(std::vector<OpDef>& ops);  // Resize.cpp
void addRandomOps(std::vector<OpDef>& ops);  // Random.cpp

void addIndexOps(std::vector<OpDef>& ops) {
  ops.push_back({.name = "concat", .minInputs = 1, .maxInputs = -1, .infer = inferConcat, .lower = lowerConcat});
  ops.push_back({.name = "tile", .infer = inferTile, .lower = lowerTile});
  ops.push_back({.name = "pad", .infer = inferPad, .lower = lowerPad});
  ops.push_back({.name = "gather", .minInputs = 2, .maxInputs = 2, .infer = inferGather, .lower = lowerGather});
  ops.push_back({.name = "gather_elements", .minInputs = 2, .maxInputs = 2, .infer = inferGatherElements,
                 .lower = lowerGatherElements});
  ops.push_back({.name = "gather_nd", .minInputs = 2, .maxInputs = 2, .infer = inferGatherND, .lower = lowerGatherND});
  ops.push_back({.name = "scatter_elements", .minInputs = 3, .maxInputs = 3, .infer = inferScatterElements,
                 .lower = lowerScatterElements});
  ops.push_back({.name = "scatter_nd", .minInputs = 3, .maxInputs = 3, .infer = inferScatterND, .lower = lowerScatterND});
  ops.push_back({.name = "one_hot", .infer = inferOneHot, .lower = lowerOneHot});
  ops.push_back({.name = "trilu", .infer = inferTrilu, .lower = lowerTrilu});
  ops.push_back({.name = "range", .minInputs = 0, .maxInputs = 0, .infer = inferRange, .lower = lowerRange});
  addResizeOps(ops);
  addRandomOps(ops);
}

}  // namespace eph::tensor
