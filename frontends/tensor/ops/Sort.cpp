// Scans and ordering (docs/tensor.md, "Reductions and normalisation"):
// cumsum, top-k, sort and argsort, with the row helpers of ReduceKernels.h.
#include <algorithm>
#include <cmath>
#include <functional>

#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"
#include "frontends/tensor/ops/ReduceKernels.h"

namespace eph::tensor {

namespace {

using ir::Builder;
using ir::Value;
using ir::Values;
using namespace reduce;

// ---- cumsum ------------------------------------------------------------------------------

Expected<Value*> lowerCumsum(Lowering& l, const Node& n, std::span<const Operand> in) {
  const Operand& x = in[0];
  std::vector<bool> red;
  int64_t axis = 0;
  oneAxis(n, x.shape, "axis", 0, red, &axis);
  const Shape keep = reducedShape(x.shape, red, true);
  const int64_t L = x.shape[size_t(axis)];
  const int64_t inStride = x.strides[size_t(axis)], outStride = contiguousStrides(x.shape)[size_t(axis)];
  const bool excl = n.attrs.i("exclusive", 0) != 0, rev = n.attrs.i("reverse", 0) != 0;
  const DType t = x.dtype;
  Values out = launch(l, n.op, n.attrs.key(), keep, in, {{t, numel(x.shape)}}, [&](Kernel& k, const Values& o) {
    Value* base = rowBase(k, 0, red);
    // The row's first output element: the kept index in the output's row-major layout.
    std::vector<int64_t> cs = contiguousStrides(x.shape);
    Value* obase = k.i32(0);
    for (size_t d = 0; d < keep.size(); ++d)
      if (!red[d] && x.shape[d] != 1) obase = k.b.add(obase, k.b.mul(k.index[d], k.i32(cs[d])));
    k.b.forOp(k.i32(0), k.i32(L), k.i32(1), {k.constant(t, 0)}, [&](Builder& b, Value* p, const Values& a) -> Values {
      Value* pos = rev ? b.sub(ci(b, L - 1), p) : p;
      Value* v = loadAt(k, b, 0, b.add(base, b.mul(pos, ci(b, inStride))));
      Value* next = b.add(a[0], v);
      storeAs(b, k.ctx, o[0], b.add(obase, b.mul(pos, ci(b, outStride))), excl ? a[0] : next, t);
      return {next};
    });
  });
  return out[0];
}

// ---- top-k and sorting --------------------------------------------------------------------

// One invocation per input element: its rank along the axis in the order
// (ascending, or descending; NaN the largest value; ties by index, so the
// order is stable), and where the rank is below k, it is stored at that
// position of the output (the value, or the index as i64).
Expected<Value*> lowerRank(Lowering& l, const Node& n, std::span<const Operand> in, bool descending, bool indices,
                           int64_t axis, int64_t K) {
  const Operand& x = in[0];
  std::vector<bool> red(x.shape.size(), false);
  red[size_t(axis)] = true;
  const int64_t L = x.shape[size_t(axis)], stride = x.strides[size_t(axis)];
  Shape outShape = x.shape;
  outShape[size_t(axis)] = K;
  const std::vector<int64_t> ocs = contiguousStrides(outShape);
  const bool fl = isFloat(x.dtype);
  Values out = launch(l, n.op, n.attrs.key(), x.shape, in, {{n.dtype, numel(outShape)}}, [&](Kernel& k, const Values& o) {
    Builder& b = k.b;
    Value* base = rowBase(k, 0, red);
    Value* i = k.index[size_t(axis)];
    Value* xi = loadAt(k, b, 0, b.add(base, b.mul(i, k.i32(stride))));
    // before(a, c): a comes strictly before c.
    auto before = [&](Builder& bb, Value* a, Value* c) {
      Value* r = descending ? bb.gt(a, c) : bb.lt(a, c);
      if (!fl) return r;
      Value* nanA = isNaN(bb, a);
      Value* nanC = isNaN(bb, c);
      return descending ? bb.or_(r, bb.and_(nanA, bb.not_(nanC))) : bb.or_(r, bb.and_(nanC, bb.not_(nanA)));
    };
    ir::Op* loop = b.forOp(k.i32(0), k.i32(L), k.i32(1), {k.i32(0)}, [&](Builder& lb, Value* j, const Values& a) -> Values {
      Value* xj = loadAt(k, lb, 0, lb.add(base, lb.mul(j, ci(lb, stride))));
      Value* first = lb.or_(before(lb, xj, xi), lb.and_(lb.not_(before(lb, xi, xj)), lb.lt(j, i)));
      return {lb.add(a[0], lb.select(first, ci(lb, 1), ci(lb, 0)))};
    });
    Value* rank = loop->result(0);
    b.ifOp(b.lt(rank, k.i32(K)), {}, [&](Builder& ib) {
      Value* off = ib.mul(rank, ci(ib, ocs[size_t(axis)]));
      for (size_t d = 0; d < outShape.size(); ++d)
        if (d != size_t(axis) && outShape[d] != 1) off = ib.add(off, ib.mul(k.index[d], ci(ib, ocs[d])));
      storeAs(ib, k.ctx, o[0], off, indices ? ib.cast(i, k.ctx.i64()) : xi, n.dtype);
    });
  });
  return out[0];
}

std::string inferRank(const Program& p, Node& n, bool topk, bool indices) {
  const Node& x = p.node(n.inputs[0]);
  if (std::string e = wantNumeric(n, x.dtype, false); !e.empty()) return e;
  std::vector<bool> red;
  int64_t axis = 0;
  if (std::string e = oneAxis(n, x.shape, "axis", -1, red, &axis); !e.empty()) return e;
  n.dtype = indices ? DType::I64 : x.dtype;
  n.shape = x.shape;
  if (topk) {
    if (!n.attrs.has("k")) return n.op + ": the attribute k is required";
    int64_t k = n.attrs.i("k");
    if (k < 0 || k > x.shape[size_t(axis)])
      return n.op + ": k = " + num(k) + " is out of range for axis " + num(axis) + " of " + shapeText(x.shape) +
             " (extent " + num(x.shape[size_t(axis)]) + ")";
    n.shape[size_t(axis)] = k;
  }
  return "";
}

void addRankOp(std::vector<OpDef>& ops, const char* name, bool topk, bool indices) {
  OpDef d;
  d.name = name;
  d.infer = [topk, indices](const Program& p, Node& n) { return inferRank(p, n, topk, indices); };
  d.lower = [topk, indices](Lowering& l, const Node& n, std::span<const Operand> in) -> Expected<Value*> {
    int64_t axis = n.attrs.i("axis", -1);
    normaliseAxis(axis, in[0].shape.size());
    bool desc = topk ? n.attrs.i("largest", 1) != 0 : n.attrs.i("descending", 0) != 0;
    int64_t K = topk ? n.attrs.i("k") : in[0].shape[size_t(axis)];
    return lowerRank(l, n, in, desc, indices, axis, K);
  };
  ops.push_back(std::move(d));
}

}  // namespace

void addScanOps(std::vector<OpDef>& ops) {
  ops.push_back({.name = "cumsum",
                 .infer = [](const Program& p, Node& n) -> std::string {
                   const Node& x = p.node(n.inputs[0]);
                   if (std::string e = wantNumeric(n, x.dtype, false); !e.empty()) return e;
                   if (!n.attrs.has("axis")) return "cumsum: the attribute axis is required";
                   std::vector<bool> red;
                   if (std::string e = oneAxis(n, x.shape, "axis", 0, red); !e.empty()) return e;
                   n.dtype = x.dtype;
                   n.shape = x.shape;
                   return "";
                 },
                 .lower = lowerCumsum});
  addRankOp(ops, "topk", true, false);
  addRankOp(ops, "topk_indices", true, true);
  addRankOp(ops, "sort", false, false);
  addRankOp(ops, "argsort", false, true);
}

}  // namespace eph::tensor
