// Reduce ops (see Ops.h and docs/tensor.md, "Reductions and normalisation"):
// reductions over axes (reduce_*, var, argmax/argmin), softmax and its kin;
// the normalisations (layer, batch, instance, Lp, mean-variance) are in
// Normalize.cpp, cumsum, top-k and sorting in Sort.cpp, over the row
// kernels declared in ReduceKernels.h.
//
// A row is the set of elements one output (or statistic) reduces over. A
// short row (< kCoopMin elements) is one invocation per output element,
// looping over the row through the input's strides (adjacent reduced axes
// laid out contiguously are walked as one loop); softmax and the
// normalisations then compute per-row statistics (a max and a sum, a mean and
// an inverse standard deviation, ...) into small temporaries, one invocation
// per row, and map over the output elementwise reading them broadcast. A long
// row of a float tensor is one workgroup per row (coopRows): strided partial
// folds combined through workgroup memory, then the row's outputs written by
// the same kernel. Sums of f16 and f32 accumulate in f32, of f64 in f64, of
// integers in their own type.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"
#include "frontends/tensor/ops/ReduceKernels.h"

namespace eph::tensor {

// Shared with ops/Sort.cpp (ReduceKernels.h).
namespace reduce {

using ir::Builder;
using ir::Value;
using ir::Values;

std::string dt(DType t) { return std::string(dtypeName(t)); }
std::string num(int64_t v) { return std::to_string(v); }

Value* ci(Builder& b, int64_t v) { return b.constInt(b.context().i32(), v); }

// The dtype the statistics of a float tensor are kept in: f64 for f64, else f32.
DType statType(DType t) { return t == DType::F64 ? DType::F64 : DType::F32; }

// ---- axes ----------------------------------------------------------------------

// Marks the axes in `axes` (negative: from the end) of a tensor of `shape`.
std::string markAxes(const std::string& op, const std::vector<int64_t>& axes, const Shape& shape, std::vector<bool>& red) {
  red.assign(shape.size(), false);
  for (int64_t a : axes) {
    int64_t ax = a;
    if (!normaliseAxis(ax, shape.size())) return op + ": axis " + num(a) + " is out of range for " + shapeText(shape);
    if (red[size_t(ax)]) return op + ": axis " + num(a) + " is given twice in " + shapeText(axes);
    red[size_t(ax)] = true;
  }
  return "";
}

// The reduced axes of a reduce_* or var node: `axes`, or all of them when
// empty (none with noop_with_empty_axes = 1).
std::string reduceAxes(const Node& n, const Shape& shape, std::vector<bool>& red) {
  std::vector<int64_t> axes = n.attrs.ints("axes");
  if (axes.empty()) {
    red.assign(shape.size(), !n.attrs.i("noop_with_empty_axes", 0));
    return "";
  }
  return markAxes(n.op, axes, shape, red);
}

// One axis (attribute `name`, default `fallback`) as a mask.
std::string oneAxis(const Node& n, const Shape& shape, const std::string& name, int64_t fallback, std::vector<bool>& red,
                    int64_t* axisOut) {
  int64_t a = n.attrs.i(name, fallback), ax = a;
  if (!normaliseAxis(ax, shape.size()))
    return n.op + ": " + name + " " + num(a) + " is out of range for " + shapeText(shape);
  red.assign(shape.size(), false);
  red[size_t(ax)] = true;
  if (axisOut) *axisOut = ax;
  return "";
}

Shape reducedShape(const Shape& s, const std::vector<bool>& red, bool keep) {
  Shape out;
  for (size_t d = 0; d < s.size(); ++d)
    if (!red[d]) out.push_back(s[d]);
    else if (keep) out.push_back(1);
  return out;
}

int64_t reducedCount(const Shape& s, const std::vector<bool>& red) {
  int64_t c = 1;
  for (size_t d = 0; d < s.size(); ++d)
    if (red[d]) c *= s[d];
  return c;
}

// ---- walking a row ------------------------------------------------------------------

// The reduced dimensions of an operand as loops (extent, stride), outermost
// first; adjacent ones laid out contiguously merge.
std::vector<Loop> loopsOf(const Operand& o, const std::vector<bool>& red) {
  std::vector<Loop> v;
  for (size_t d = 0; d < o.shape.size(); ++d) {
    if (!red[d] || o.shape[d] == 1) continue;
    if (!v.empty() && v.back().stride == o.strides[d] * o.shape[d]) {
      v.back().extent *= o.shape[d];
      v.back().stride = o.strides[d];
    } else {
      v.push_back({o.shape[d], o.strides[d]});
    }
  }
  return v;
}

// base + the offset of the r-th (row-major) element of the reduced dimensions.
Value* reducedOffset(Builder& b, Value* base, const std::vector<Loop>& loops, Value* r) {
  Value* off = base;
  Value* q = r;
  for (size_t i = loops.size(); i-- > 0;) {
    Value* idx = i == 0 ? q : b.rem(q, ci(b, loops[i].extent));
    if (i > 0) q = b.div(q, ci(b, loops[i].extent));
    if (loops[i].stride == 0) continue;
    off = b.add(off, loops[i].stride == 1 ? idx : b.mul(idx, ci(b, loops[i].stride)));
  }
  return off;
}

// The offset in input `in` of the first element of the current invocation's
// row (its index with the reduced dimensions at 0). The kernel's index has
// the input's rank.
Value* rowBase(Kernel& k, size_t in, const std::vector<bool>& red) {
  std::vector<Value*> idx;
  for (size_t d = 0; d < red.size(); ++d) idx.push_back(red[d] ? k.i32(0) : k.index[d]);
  return k.offsetOf(in, idx);
}

// Input `in`'s element at `off`, in its compute type.
Value* loadAt(Kernel& k, Builder& b, size_t in, Value* off) {
  Value* v = b.load(k.buffer(in), off);
  if (k.in(in).dtype == DType::F16) v = b.cast(v, k.ctx.f32());
  return v;
}

Values results(ir::Op* op) {
  Values v;
  for (unsigned i = 0; i < op->numResults(); ++i) v.push_back(op->result(i));
  return v;
}

Values fold(Kernel& k, size_t in, Value* base, const std::vector<Loop>& loops, int64_t count, Values inits,
            const FoldBody& body) {
  ir::Op* op = k.b.forOp(k.i32(0), k.i32(count), k.i32(1), std::move(inits),
                         [&](Builder& b, Value* r, const Values& acc) -> Values {
                           return body(b, loadAt(k, b, in, reducedOffset(b, base, loops, r)), r, acc);
                         });
  return results(op);
}

Value* isNaN(Builder& b, Value* x) { return b.ne(x, x); }

// max/min that propagate NaN (as numpy); plain for integers.
Value* maxOf(Builder& b, Value* a, Value* x, bool fl) {
  if (!fl) return b.max(a, x);
  return b.select(isNaN(b, a), a, b.select(isNaN(b, x), x, b.max(a, x)));
}
Value* minOf(Builder& b, Value* a, Value* x, bool fl) {
  if (!fl) return b.min(a, x);
  return b.select(isNaN(b, a), a, b.select(isNaN(b, x), x, b.min(a, x)));
}

// The lowest and highest values of `t` (floats: -inf and +inf).
Value* lowest(Kernel& k, DType t) {
  const ir::Type* ct = computeType(k.ctx, t);
  if (isFloat(t)) return k.b.constFloat(ct, -INFINITY);
  if (!isSigned(t)) return k.b.constInt(ct, 0);
  return k.b.constInt(ct, bits(t) == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (bits(t) - 1)));
}
Value* highest(Kernel& k, DType t) {
  const ir::Type* ct = computeType(k.ctx, t);
  if (isFloat(t)) return k.b.constFloat(ct, INFINITY);
  unsigned n = bits(t) - (isSigned(t) ? 1 : 0);
  return k.b.constInt(ct, n == 64 ? -1 : int64_t((uint64_t(1) << n) - 1));
}

// Stores `v` (a compute-type value) into a buffer of `dtype`.
void storeAs(Builder& b, ir::Context& ctx, Value* buf, Value* i, Value* v, DType dtype) {
  const ir::Type* st = irType(ctx, dtype);
  if (v->type() != st) v = b.cast(v, st);
  b.store(buf, i, v);
}

// ---- kernels beyond Lowering::map --------------------------------------------------

std::string layoutKey(const Operand& o) {
  std::string k(dtypeName(o.dtype));
  k += shapeText(o.shape);
  for (int64_t s : o.strides) k += "," + num(s);
  return k + "+" + num(o.offset);
}

// A kernel's name from its op and its full cache key (kernels are shared by
// content through Module::lookup of this name).
std::string kernelName(const std::string& op, const std::string& full) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016zx", std::hash<std::string>{}(full));
  std::string name = "r" + std::string(hex) + "_";
  for (char c : op) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

// A kernel with one invocation per element of `domain` (row-major; the
// Kernel's index and linear index), reading `in` and writing fresh buffers of
// the given dtypes and element counts, which `body` stores into. Kernels are
// shared by content, as Lowering::map's. Returns the buffers.
using LaunchBody = std::function<void(Kernel& k, const Values& outs)>;
Values launch(Lowering& l, const std::string& op, const std::string& key, const Shape& domain, std::span<const Operand> in,
              const std::vector<std::pair<DType, int64_t>>& outs, const LaunchBody& body) {
  ir::Context& ctx = l.ctx;
  const int64_t total = numel(domain);
  const int64_t wg = l.opts.workgroupSize;
  const int64_t groups = (total + wg - 1) / wg;
  const auto [gx, gy] = l.grid(groups);
  std::string full = op + "|" + key + "|" + shapeText(domain) + "|gx" + num(gx) + "|wg" + num(wg);
  for (const Operand& o : in) full += "|" + layoutKey(o);
  for (const auto& [d, c] : outs) full += "|out " + dt(d) + " " + num(c);
  std::string name = kernelName(op, l.namePrefix + "|" + full);  // (a row lowering's own: Lower.h)
  const ir::Function* kern = l.module.lookup(name);
  if (!kern) {
    std::vector<const ir::Type*> params;
    for (const Operand& o : in)
      params.push_back(ctx.bufferType(irType(ctx, o.dtype), ir::Space::Device, ir::Ownership::Read));
    for (const auto& [d, c] : outs)
      params.push_back(ctx.bufferType(irType(ctx, d), ir::Space::Device, ir::Ownership::Write));
    ir::Function* f = l.module.addFunction(name, ir::FunctionKind::Kernel, ctx.functionType(params, {}));
    f->workgroupSize = {unsigned(wg), 1, 1};
    for (size_t i = 0; i < in.size(); ++i) f->param(unsigned(i))->setName("in" + num(int64_t(i)));
    for (size_t i = 0; i < outs.size(); ++i) f->param(unsigned(in.size() + i))->setName("out" + num(int64_t(i)));
    Builder b(ctx, f->body());
    Value* lin = b.globalId(0, ctx.i32());
    if (gy > 1) lin = b.add(b.mul(b.globalId(1, ctx.i32()), ci(b, gx * wg)), lin);
    std::vector<Value*> bufs;
    for (size_t i = 0; i < in.size(); ++i) bufs.push_back(f->param(unsigned(i)));
    Values outBufs;
    for (size_t i = 0; i < outs.size(); ++i) outBufs.push_back(f->param(unsigned(in.size() + i)));
    b.ifOp(b.lt(lin, ci(b, total)), {}, [&](Builder& ib) {
      Kernel k(ib, ctx, std::vector<Operand>(in.begin(), in.end()), bufs);
      k.linear = lin;
      std::vector<int64_t> cs = contiguousStrides(domain);
      for (size_t d = 0; d < domain.size(); ++d) {
        Value* q = cs[d] == 1 ? lin : ib.div(lin, k.i32(cs[d]));
        k.index.push_back(d == 0 ? q : ib.rem(q, k.i32(domain[d])));
      }
      body(k, outBufs);
    });
    b.ret();
    kern = f;
  }
  Values made;
  for (const auto& [d, c] : outs) made.push_back(l.alloc(d, c));
  if (total == 0) return made;
  ir::Values args;
  for (const Operand& o : in) args.push_back(o.buf);
  for (Value* m : made) args.push_back(m);
  ir::Value* one = l.host.constInt(ctx.u32(), 1);
  l.dispatch(*kern, {l.host.constInt(ctx.u32(), gx), l.host.constInt(ctx.u32(), gy), one}, args);
  return made;
}

// A per-row statistic (a contiguous buffer over the kept shape) read
// broadcast over `shape` (the reduced dimensions repeat it).
Operand statOperand(Value* buf, DType d, const Shape& shape, const std::vector<bool>& red) {
  std::vector<int64_t> st = contiguousStrides(reducedShape(shape, red, true));
  for (size_t i = 0; i < shape.size(); ++i)
    if (red[i]) st[i] = 0;
  return {buf, d, shape, st, 0};
}

// A per-channel parameter p[C] read over x's `shape` (channel: dimension 1).
Operand channelOperand(const Operand& p, const Shape& shape) {
  std::vector<int64_t> st(shape.size(), 0);
  st[1] = p.strides.empty() ? 0 : p.strides[0];
  return {p.buf, p.dtype, shape, st, p.offset};
}


// ---- cooperative row kernels ------------------------------------------------------------
//
// Long rows are reduced by a workgroup of W invocations per row (rowGroup:
// 64 to 1024, enough that each holds at most LowerOptions::rowElements of
// the row).
// Each invocation loads its elements (positions t, t + W, ...: coalesced on
// a GPU) once into registers, folds them, and the partials combine across
// the workgroup: a butterfly of subgroup shuffles within each subgroup,
// then the subgroups' results through workgroup memory (one barrier), in a
// fixed order, so every invocation gets the row's result. Then the row's
// outputs are computed from the same registers and written, or invocation 0
// writes the row's one result: softmax and layer norm read their input once
// and write their output once. A row too long for registers (more than
// 1024 x rowElements) is folded by a loop that reloads it per pass.

// Invocations per row, and whether the row fits in their registers.
int64_t rowGroup(const Lowering& l, int64_t R) {
  int64_t w = 64;
  while (w < 1024 && w * int64_t(l.opts.rowElements) < R) w *= 2;
  return w;
}
bool rowInRegisters(const Lowering& l, int64_t R) { return R <= rowGroup(l, R) * int64_t(l.opts.rowElements); }

Value* combine(Builder& b, Comb c, Value* a, Value* x, bool fl) {
  switch (c) {
    case Comb::Sum: return b.add(a, x);
    case Comb::Prod: return b.mul(a, x);
    case Comb::Max: return maxOf(b, a, x, fl);
    case Comb::Min: return minOf(b, a, x, fl);
    case Comb::MaxNum: return b.max(a, x);
  }
  return a;
}


// A cooperative kernel over the rows of `shape` (operand 0, x, has it; the
// others are laid over it, broadcast) reduced over `red`: the output has
// `shape` (elem given) or the kept shape (one per row), dtype `outDt`.
Value* coopRows(Lowering& l, const std::string& op, const std::string& key, const Shape& shape,
                const std::vector<bool>& red, std::span<const Operand> in, DType outDt, const RowStats& stats,
                const RowElem& elem) {
  ir::Context& ctx = l.ctx;
  const Shape keep = reducedShape(shape, red, true);
  const int64_t rows = numel(keep), R = reducedCount(shape, red);
  const int64_t outCount = elem ? numel(shape) : rows;
  const auto [gx, gy] = l.grid(rows);
  const int64_t W = rowGroup(l, R);
  const bool cached = rowInRegisters(l, R);
  const KernelInputs ki = kernelInputs(in);
  std::string full = op + "|coop|" + key + "|" + shapeText(shape) + "|gx" + num(gx) + "|W" + num(W) +
                     (cached ? "|registers" : "") + (l.opts.rowShuffles ? "" : "|memory");
  for (bool r : red) full += r ? "r" : "k";
  full += ki.key + "|out " + dt(outDt);
  std::string name = kernelName(op, l.namePrefix + "|" + full);  // (a row lowering's own: Lower.h)
  const ir::Function* kern = l.module.lookup(name);
  if (!kern) {
    std::vector<const ir::Type*> params;
    for (size_t d : ki.distinct)
      params.push_back(ctx.bufferType(irType(ctx, ki.leaves[d].dtype), ir::Space::Device, ir::Ownership::Read));
    params.push_back(ctx.bufferType(irType(ctx, outDt), ir::Space::Device, ir::Ownership::Write));
    ir::Function* f = l.module.addFunction(name, ir::FunctionKind::Kernel, ctx.functionType(params, {}));
    f->workgroupSize = {unsigned(W), 1, 1};
    for (size_t i = 0; i < ki.distinct.size(); ++i) f->param(unsigned(i))->setName("in" + num(int64_t(i)));
    Value* out = f->param(unsigned(ki.distinct.size()));
    out->setName("out");
    Builder b(ctx, f->body());
    std::vector<Value*> bufs;
    for (size_t i = 0; i < ki.leaves.size(); ++i) bufs.push_back(f->param(unsigned(ki.slot[i])));
    // Every barrier is in uniform control flow: a group past the last row
    // recomputes the last row and stores nothing.
    Value* wid = b.workgroupId(0, ctx.i32());
    if (gy > 1) wid = b.add(b.mul(b.workgroupId(1, ctx.i32()), ci(b, gx)), wid);
    Value* valid = b.lt(wid, ci(b, rows));
    Value* row = b.min(wid, ci(b, rows - 1));
    Kernel k(b, ctx, std::vector<Operand>(in.begin(), in.end()), bufs);
    k.linear = row;
    std::vector<int64_t> cs = contiguousStrides(keep);
    for (size_t d = 0; d < keep.size(); ++d) {
      Value* q = cs[d] == 1 ? row : b.div(row, ci(b, cs[d]));
      k.index.push_back(keep[d] == 1 ? ci(b, 0) : d == 0 ? q : b.rem(q, ci(b, keep[d])));
    }
    Row rw{k, b.localId(0, ctx.i32()), R, W, {}, {}};
    for (size_t i = 0; i < in.size(); ++i) {
      rw.loops.push_back(loopsOf(in[i], red));
      rw.bases.push_back(in[i].fused ? nullptr : rowBase(k, i, red));
    }
    rw.out = out;
    rw.valid = valid;
    rw.shape = shape;
    rw.red = red;
    rw.shuffles = l.opts.rowShuffles;
    if (elem) {
      Operand o{nullptr, outDt, shape, contiguousStrides(shape), 0};
      rw.oloops = loopsOf(o, red);
      std::vector<int64_t> os = contiguousStrides(shape);
      rw.obase = ci(b, 0);
      for (size_t d = 0; d < shape.size(); ++d)
        if (!red[d] && shape[d] != 1) rw.obase = b.add(rw.obase, b.mul(k.index[d], ci(b, os[d])));
    }
    if (cached) rw.keep();
    Values st = stats(rw);
    if (elem) {
      // elem runs inside the `valid` branch (it may read what stats stored).
      rw.forEach([&](Builder& lb, Value* r) {
        lb.ifOp(valid, {}, [&](Builder& ib) { storeAs(ib, ctx, out, rw.outOffset(ib, r), elem(ib, rw, r, st), outDt); });
      });
    } else {
      b.ifOp(b.and_(valid, b.eq(rw.t, ci(b, 0))), {}, [&](Builder& ib) { storeAs(ib, ctx, out, row, st[0], outDt); });
    }
    b.ret();
    kern = f;
  }
  Value* made = l.alloc(outDt, outCount);
  if (outCount == 0) return made;
  ir::Values args;
  for (size_t d : ki.distinct) args.push_back(ki.leaves[d].buf);
  args.push_back(made);
  ir::Value* one = l.host.constInt(ctx.u32(), 1);
  l.dispatch(*kern, {l.host.constInt(ctx.u32(), gx), l.host.constInt(ctx.u32(), gy), one}, args);
  return made;
}

std::pair<Value*, Value*> rowMeanAndSquares(Row& row, DType S) {
  Kernel& k = row.k;
  Value* s = row.reduce(Comb::Sum, S, k.constant(S, 0), [](Builder&, Value* x) { return x; });
  Value* mean = k.b.div(s, k.constant(S, double(row.R)));
  Value* q = row.reduce(Comb::Sum, S, k.constant(S, 0), [&](Builder& lb, Value* x) {
    Value* d = lb.sub(x, mean);
    return lb.mul(d, d);
  });
  return {mean, q};
}

// An operand broadcast (numpy, right-aligned) over `shape`.
Operand broadcastOperand(const Operand& p, const Shape& shape) {
  std::vector<int64_t> st(shape.size(), 0);
  size_t shift = shape.size() - p.shape.size();
  for (size_t d = 0; d < p.shape.size(); ++d) st[d + shift] = p.shape[d] == 1 ? 0 : p.strides[d];
  return {p.buf, p.dtype, shape, st, p.offset};
}

// A float value in S's compute type.
Value* castTo(Builder& b, ir::Context& ctx, Value* v, DType S) {
  const ir::Type* t = computeType(ctx, S);
  return v->type() == t ? v : b.cast(v, t);
}

// `in` with its fused operands (Operand::fused) computed into buffers of
// their own, one kernel each, for a lowering that reads raw buffers; all of
// them, or all but operand 0 (which a cooperative row kernel computes where
// it reads it). The buffers made go into `temps`, for the caller to free.
std::vector<Operand> stored(Lowering& l, std::span<const Operand> in, bool keepFirst, std::vector<Value*>& temps) {
  std::vector<Operand> out(in.begin(), in.end());
  for (size_t i = keepFirst ? 1 : 0; i < out.size(); ++i) {
    const Operand& o = out[i];
    if (!o.fused) continue;
    Value* buf = l.map("copy", o.dtype, o.shape, std::span(&o, 1), [](Kernel& k) { return k.loadBroadcast(0); }, "");
    temps.push_back(buf);
    out[i] = Operand{buf, o.dtype, o.shape, contiguousStrides(o.shape), 0};
  }
  return out;
}

// ---- reduce_* ------------------------------------------------------------------------

enum class RK { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };
struct ReduceDef {
  const char* name;
  RK kind;
  bool floatOnly;
};
const ReduceDef kReduces[] = {
    {"reduce_sum", RK::Sum, false},         {"reduce_mean", RK::Mean, false},
    {"reduce_max", RK::Max, false},         {"reduce_min", RK::Min, false},
    {"reduce_prod", RK::Prod, false},       {"reduce_l1", RK::L1, false},
    {"reduce_l2", RK::L2, true},            {"reduce_sum_square", RK::SumSquare, false},
    {"reduce_log_sum", RK::LogSum, true},   {"reduce_log_sum_exp", RK::LogSumExp, true},
};

std::string wantNumeric(const Node& n, DType t, bool floatOnly) {
  if (floatOnly && !isFloat(t)) return n.op + " wants a float tensor, not " + dt(t);
  if (!isFloat(t) && !isInt(t)) return n.op + " wants a numeric tensor, not " + dt(t);
  return "";
}

// The max of a row, and the sum of exp(x - shift) where shift is the max, or 0
// when the max is infinite (so that a row of -inf sums to 0, not NaN).
std::pair<Value*, Value*> maxAndSumExp(Kernel& k, size_t in, Value* base, const std::vector<Loop>& loops, int64_t R,
                                       DType t) {
  Builder& b = k.b;
  Value* m = fold(k, in, base, loops, R, {lowest(k, t)},
                  [&](Builder& lb, Value* x, Value*, const Values& a) -> Values { return {maxOf(lb, a[0], x, true)}; })[0];
  Value* inf = k.constant(t, INFINITY);
  Value* shift = b.select(b.eq(b.abs(m), inf), k.constant(t, 0), m);
  Value* s = fold(k, in, base, loops, R, {k.constant(t, 0)}, [&](Builder& lb, Value* x, Value*, const Values& a) -> Values {
    return {lb.add(a[0], lb.exp(lb.sub(x, shift)))};
  })[0];
  return {shift, s};
}

// The mean of a row, and the sum of squared deviations from it (two passes).
std::pair<Value*, Value*> meanAndSquares(Kernel& k, size_t in, Value* base, const std::vector<Loop>& loops, int64_t R,
                                         DType t) {
  Builder& b = k.b;
  Value* s = fold(k, in, base, loops, R, {k.constant(t, 0)},
                  [&](Builder& lb, Value* x, Value*, const Values& a) -> Values { return {lb.add(a[0], x)}; })[0];
  Value* mean = b.div(s, k.constant(t, double(R)));
  Value* q = fold(k, in, base, loops, R, {k.constant(t, 0)}, [&](Builder& lb, Value* x, Value*, const Values& a) -> Values {
    Value* d = lb.sub(x, mean);
    return {lb.add(a[0], lb.mul(d, d))};
  })[0];
  return {mean, q};
}

Expected<Value*> lowerReduceStored(RK kind, Lowering& l, const Node& n, std::span<const Operand> in,
                                   const std::vector<bool>& red);

Expected<Value*> lowerReduce(RK kind, Lowering& l, const Node& n, std::span<const Operand> in) {
  std::vector<bool> red;
  reduceAxes(n, in[0].shape, red);
  const int64_t R = reducedCount(in[0].shape, red);
  const bool fl = isFloat(in[0].dtype);
  // A fused x stays fused where the cooperative kernel reads it; else it is stored first.
  std::vector<Value*> temps;
  const std::vector<Operand> ins = stored(l, in, fl && R >= kCoopMin, temps);
  auto y = lowerReduceStored(kind, l, n, ins, red);
  for (Value* t : temps) l.free(t);
  return y;
}

Expected<Value*> lowerReduceStored(RK kind, Lowering& l, const Node& n, std::span<const Operand> in,
                                   const std::vector<bool>& red) {
  const Operand& x = in[0];
  const Shape keep = reducedShape(x.shape, red, true);
  const int64_t R = reducedCount(x.shape, red);
  const std::vector<Loop> loops = loopsOf(x, red);
  const DType t = x.dtype;
  const bool fl = isFloat(t);
  if (fl && R >= kCoopMin) {
    return coopRows(l, n.op, "", x.shape, red, in.first(1), n.dtype, [&](Row& row) -> Values {
      Kernel& k = row.k;
      Builder& b = k.b;
      const DType S = statType(t);
      auto id = [](Builder&, Value* x) { return x; };
      auto sum = [&](const std::function<Value*(Builder&, Value*)>& f) { return row.reduce(Comb::Sum, S, k.constant(S, 0), f); };
      auto sq = [](Builder& lb, Value* x) { return lb.mul(x, x); };
      switch (kind) {
        case RK::Max: return {row.reduce(Comb::Max, S, lowest(k, S), id)};
        case RK::Min: return {row.reduce(Comb::Min, S, highest(k, S), id)};
        case RK::Prod: return {row.reduce(Comb::Prod, S, k.constant(S, 1), id)};
        case RK::Sum: return {sum(id)};
        case RK::Mean: return {b.div(sum(id), k.constant(S, double(R)))};
        case RK::L1: return {sum([](Builder& lb, Value* x) { return lb.abs(x); })};
        case RK::SumSquare: return {sum(sq)};
        case RK::L2: return {b.sqrt(sum(sq))};
        case RK::LogSum: return {b.log(sum(id))};
        case RK::LogSumExp: {
          Value* m = row.reduce(Comb::Max, S, lowest(k, S), id);
          Value* shift = b.select(b.eq(b.abs(m), k.constant(S, INFINITY)), k.constant(S, 0), m);
          Value* s = sum([&](Builder& lb, Value* x) { return lb.exp(lb.sub(x, shift)); });
          return {b.add(shift, b.log(s))};
        }
      }
      return {};
    }, nullptr);
  }
  return l.map(n.op, n.dtype, keep, in, [&](Kernel& k) -> Value* {
    Builder& b = k.b;
    Value* base = rowBase(k, 0, red);
    auto sumOf = [&](auto f) {
      return fold(k, 0, base, loops, R, {k.constant(t, 0)}, [&](Builder& lb, Value* x, Value*, const Values& a) -> Values {
        return {lb.add(a[0], f(lb, x))};
      })[0];
    };
    auto id = [](Builder&, Value* x) { return x; };
    auto sq = [](Builder& lb, Value* x) { return lb.mul(x, x); };
    switch (kind) {
      case RK::Max:
        return fold(k, 0, base, loops, R, {lowest(k, t)}, [&](Builder& lb, Value* x, Value*, const Values& a) -> Values {
          return {maxOf(lb, a[0], x, fl)};
        })[0];
      case RK::Min:
        return fold(k, 0, base, loops, R, {highest(k, t)}, [&](Builder& lb, Value* x, Value*, const Values& a) -> Values {
          return {minOf(lb, a[0], x, fl)};
        })[0];
      case RK::Prod:
        return fold(k, 0, base, loops, R, {k.constant(t, 1)}, [&](Builder& lb, Value* x, Value*, const Values& a) -> Values {
          return {lb.mul(a[0], x)};
        })[0];
      case RK::Sum: return sumOf(id);
      case RK::Mean:
        if (!fl && R == 0) return k.constant(t, 0);
        return b.div(sumOf(id), k.constant(t, double(R)));
      case RK::L1:
        return sumOf([&](Builder& lb, Value* x) { return fl || isSigned(t) ? lb.abs(x) : x; });
      case RK::SumSquare: return sumOf(sq);
      case RK::L2: return b.sqrt(sumOf(sq));
      case RK::LogSum: return b.log(sumOf(id));
      case RK::LogSumExp: {
        auto [shift, s] = maxAndSumExp(k, 0, base, loops, R, t);
        return b.add(shift, b.log(s));
      }
    }
    return nullptr;
  }, n.attrs.key());
}

// Output shape of reduce_* and var.
std::string inferReduce(const Program& p, Node& n, bool floatOnly) {
  const Node& x = p.node(n.inputs[0]);
  if (std::string e = wantNumeric(n, x.dtype, floatOnly); !e.empty()) return e;
  std::vector<bool> red;
  if (std::string e = reduceAxes(n, x.shape, red); !e.empty()) return e;
  n.dtype = x.dtype;
  n.shape = reducedShape(x.shape, red, n.attrs.i("keepdims", 1) != 0);
  return "";
}

// ---- argmax / argmin ----------------------------------------------------------------

Expected<Value*> lowerArg(bool isMax, Lowering& l, const Node& n, std::span<const Operand> in) {
  const Operand& x = in[0];
  std::vector<bool> red;
  oneAxis(n, x.shape, "axis", 0, red);
  const Shape keep = reducedShape(x.shape, red, true);
  const int64_t R = reducedCount(x.shape, red);
  const std::vector<Loop> loops = loopsOf(x, red);
  const DType t = x.dtype;
  const bool fl = isFloat(t), last = n.attrs.i("select_last_index", 0) != 0;
  return l.map(n.op, n.dtype, keep, in, [&](Kernel& k) -> Value* {
    Value* base = rowBase(k, 0, red);
    Values r = fold(k, 0, base, loops, R, {isMax ? lowest(k, t) : highest(k, t), k.i32(0)},
                    [&](Builder& b, Value* x, Value* i, const Values& a) -> Values {
                      // NaN counts as the extreme (numpy: the first NaN wins).
                      Value* better = last ? (isMax ? b.ge(x, a[0]) : b.le(x, a[0]))
                                           : (isMax ? b.gt(x, a[0]) : b.lt(x, a[0]));
                      if (fl) {
                        Value* bestNaN = isNaN(b, a[0]);
                        better = last ? b.or_(b.and_(better, b.not_(bestNaN)), isNaN(b, x))
                                      : b.or_(better, b.and_(isNaN(b, x), b.not_(bestNaN)));
                      }
                      return {b.select(better, x, a[0]), b.select(better, i, a[1])};
                    });
    return r[1];
  }, n.attrs.key());
}

// ---- softmax, log_softmax, hardmax -----------------------------------------------------

enum class SK { Softmax, LogSoftmax };

Expected<Value*> lowerSoftmax(SK kind, Lowering& l, const Node& n, std::span<const Operand> in) {
  const Operand& x = in[0];
  std::vector<bool> red;
  oneAxis(n, x.shape, "axis", -1, red);
  const Shape keep = reducedShape(x.shape, red, true);
  const int64_t R = reducedCount(x.shape, red), rows = numel(keep);
  const std::vector<Loop> loops = loopsOf(x, red);
  const DType S = statType(x.dtype);
  if (R >= kCoopMin) {
    // softmax of f32/f64: the second pass stores exp(x - max) in the output,
    // the last multiplies it by 1/sum there (one exp per element, not two).
    // (Not when the row is kept in registers: it is read once either way.)
    const bool storeExp = kind == SK::Softmax && n.dtype == S && !rowInRegisters(l, R);
    // Softmax of a row in registers keeps exp(x - max) there in place of x
    // (one exp per element, not two: the cpu target is bound by computing them).
    bool expsKept = false;
    return coopRows(l, n.op, storeExp ? "store-exp" : "", x.shape, red, in.first(1), n.dtype, [&](Row& row) -> Values {
      Kernel& k = row.k;
      Builder& b = k.b;
      Value* m = row.reduce(Comb::MaxNum, S, lowest(k, S), [](Builder&, Value* x) { return x; });
      Value* shift = b.select(b.eq(b.abs(m), k.constant(S, INFINITY)), k.constant(S, 0), m);
      Values exps;
      Value* s = row.reduceAt(Comb::Sum, S, k.constant(S, 0), [&](Builder& lb, Value* x, Value* r) {
        Value* e = lb.exp(lb.sub(x, shift));
        if (storeExp) lb.ifOp(row.valid, {}, [&](Builder& ib) { ib.store(row.out, row.outOffset(ib, r), e); });
        exps.push_back(e);
        return e;
      });
      if (kind == SK::Softmax && !row.xs.empty() && exps.size() == row.xs.size()) {
        row.xs = exps;
        expsKept = true;
      }
      // softmax: 1 / sum, each element multiplied by it (a division per
      // row, not per element); log_softmax: log(sum).
      return {shift, kind == SK::Softmax ? b.div(k.constant(S, 1), s) : b.log(s)};
    }, [&](Builder& b, Row& row, Value* r, const Values& st) -> Value* {
      if (storeExp) return b.mul(b.load(row.out, row.outOffset(b, r)), st[1]);
      if (expsKept) return b.mul(row.load(b, 0, r), st[1]);
      Value* d = b.sub(row.load(b, 0, r), st[0]);
      return kind == SK::Softmax ? b.mul(b.exp(d), st[1]) : b.sub(d, st[1]);
    });
  }
  std::vector<Value*> temps;
  const std::vector<Operand> xs = stored(l, in.first(1), false, temps);  // the stats kernel reads x's buffer
  Values st = launch(l, n.op + "_stats", "", keep, xs, {{S, rows}, {S, rows}}, [&](Kernel& k, const Values& out) {
    auto [shift, s] = maxAndSumExp(k, 0, rowBase(k, 0, red), loopsOf(xs[0], red), R, S);
    k.b.store(out[0], k.linear, shift);
    k.b.store(out[1], k.linear, s);
  });
  std::vector<Operand> ops = {xs[0], statOperand(st[0], S, x.shape, red), statOperand(st[1], S, x.shape, red)};
  Value* y = l.map(n, ops, [&](Kernel& k) {
    Builder& b = k.b;
    Value* d = b.sub(k.loadBroadcast(0), k.loadBroadcast(1));
    return kind == SK::Softmax ? b.div(b.exp(d), k.loadBroadcast(2)) : b.sub(d, b.log(k.loadBroadcast(2)));
  });
  for (Value* s : st) l.free(s);
  for (Value* t : temps) l.free(t);
  return y;
}

Expected<Value*> lowerHardmax(Lowering& l, const Node& n, std::span<const Operand> in) {
  const Operand& x = in[0];
  std::vector<bool> red;
  int64_t axis = 0;
  oneAxis(n, x.shape, "axis", -1, red, &axis);
  const Shape keep = reducedShape(x.shape, red, true);
  Node arg = n;
  arg.op = "argmax";
  arg.attrs = Attrs{{"axis", axis}};
  arg.dtype = DType::I64;
  arg.shape = keep;
  auto idx = lowerArg(true, l, arg, in);
  if (!idx) return idx;
  std::vector<Operand> ops = {x, statOperand(*idx, DType::I64, x.shape, red)};
  Value* y = l.map(n, ops, [&](Kernel& k) {
    Value* hit = k.b.eq(k.b.cast(k.index[size_t(axis)], k.ctx.i64()), k.loadBroadcast(1));
    return k.b.select(hit, k.constant(n.dtype, 1), k.constant(n.dtype, 0));
  });
  l.free(*idx);
  return y;
}

}  // namespace reduce

using namespace reduce;

void addReduceOps(std::vector<OpDef>& ops) {
  for (const ReduceDef& r : kReduces) {
    OpDef d;
    d.name = r.name;
    d.infer = [r](const Program& p, Node& n) { return inferReduce(p, n, r.floatOnly); };
    d.lower = [r](Lowering& l, const Node& n, std::span<const Operand> in) { return lowerReduce(r.kind, l, n, in); };
    d.fusesInputs = d.reduces = true;  // x computed in the row kernel (short rows store it first)
    ops.push_back(std::move(d));
  }

  // var {axes, keepdims, correction}: Σ(x - mean)² / (count - correction), two passes.
  ops.push_back({.name = "var",
                 .infer = [](const Program& p, Node& n) { return inferReduce(p, n, true); },
                 .lower = [](Lowering& l, const Node& n, std::span<const Operand> in) -> Expected<Value*> {
                   const Operand& x = in[0];
                   std::vector<bool> red;
                   reduceAxes(n, x.shape, red);
                   const int64_t R = reducedCount(x.shape, red);
                   const auto loops = loopsOf(x, red);
                   const double corr = double(n.attrs.i("correction", 0));
                   const DType S = statType(x.dtype);
                   if (R >= kCoopMin)
                     return coopRows(l, n.op, n.attrs.key(), x.shape, red, in, n.dtype, [&](Row& row) -> Values {
                       Kernel& k = row.k;
                       Builder& b = k.b;
                       Value* q = rowMeanAndSquares(row, S).second;
                       return {b.div(q, k.constant(S, double(R) - corr))};
                     }, nullptr);
                   return l.map(n.op, n.dtype, reducedShape(x.shape, red, true), in, [&](Kernel& k) {
                     Value* q = meanAndSquares(k, 0, rowBase(k, 0, red), loops, R, S).second;
                     return k.b.div(q, k.constant(S, double(R) - corr));
                   }, n.attrs.key());
                 }});

  for (bool isMax : {true, false}) {
    OpDef d;
    d.name = isMax ? "argmax" : "argmin";
    d.infer = [](const Program& p, Node& n) -> std::string {
      const Node& x = p.node(n.inputs[0]);
      if (std::string e = wantNumeric(n, x.dtype, false); !e.empty()) return e;
      std::vector<bool> red;
      int64_t axis = 0;
      if (std::string e = oneAxis(n, x.shape, "axis", 0, red, &axis); !e.empty()) return e;
      if (x.shape[size_t(axis)] == 0)
        return n.op + ": axis " + num(n.attrs.i("axis", 0)) + " of " + shapeText(x.shape) + " is empty";
      n.dtype = DType::I64;
      n.shape = reducedShape(x.shape, red, n.attrs.i("keepdims", 1) != 0);
      return "";
    };
    d.lower = [isMax](Lowering& l, const Node& n, std::span<const Operand> in) { return lowerArg(isMax, l, n, in); };
    ops.push_back(std::move(d));
  }

  // softmax, log_softmax (float), hardmax (numeric) {axis = -1}: one axis.
  for (const char* name : {"softmax", "log_softmax", "hardmax"}) {
    OpDef d;
    d.name = name;
    bool hard = std::string_view(name) == "hardmax";
    d.infer = [hard](const Program& p, Node& n) -> std::string {
      const Node& x = p.node(n.inputs[0]);
      if (std::string e = wantNumeric(n, x.dtype, !hard); !e.empty()) return e;
      std::vector<bool> red;
      if (std::string e = oneAxis(n, x.shape, "axis", -1, red); !e.empty()) return e;
      n.dtype = x.dtype;
      n.shape = x.shape;
      return "";
    };
    if (hard) d.lower = lowerHardmax;
    else
      d.lower = [soft = std::string_view(name) == "softmax"](Lowering& l, const Node& n, std::span<const Operand> in) {
        return lowerSoftmax(soft ? SK::Softmax : SK::LogSoftmax, l, n, in);
      };
    d.fusesInputs = !hard;  // x computed inside the row kernel (a short row stores it first)
    ops.push_back(std::move(d));
  }

}

}  // namespace eph::tensor
