// Row helpers shared by the reduce ops (Reduce.cpp: reductions, softmax;
// Normalize.cpp: the normalisations) and the scans and orderings (Sort.cpp:
// cumsum, top-k, sort).
#pragma once

#include <functional>
#include <utility>
#include <span>
#include <string>
#include <vector>

#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"

namespace eph::tensor::reduce {

using ir::Builder;
using ir::Value;
using ir::Values;

std::string num(int64_t v);
Value* ci(Builder& b, int64_t v);  // an i32 constant
// One axis (attribute `name`, default `fallback`) as a mask of `shape`'s
// dimensions, or why it is out of range; its index in `axisOut`.
std::string oneAxis(const Node& n, const Shape& shape, const std::string& name, int64_t fallback, std::vector<bool>& red,
                    int64_t* axisOut = nullptr);
Shape reducedShape(const Shape& s, const std::vector<bool>& red, bool keep);
// The offset of the row's first element in input `in` (reduced dimensions at 0).
Value* rowBase(Kernel& k, size_t in, const std::vector<bool>& red);
// Input `in`'s element at `off`, in its compute type.
Value* loadAt(Kernel& k, Builder& b, size_t in, Value* off);
Value* isNaN(Builder& b, Value* x);
// Stores `v` (a compute-type value) into a buffer of `dtype`.
void storeAs(Builder& b, ir::Context& ctx, Value* buf, Value* i, Value* v, DType dtype);
// Why `t` is not a numeric (or, floatOnly, float) tensor for n's op, or "".
std::string wantNumeric(const Node& n, DType t, bool floatOnly);
// A kernel with one invocation per element of `domain`, reading `in` and
// writing fresh buffers of the given dtypes and counts, which `body` stores
// into (shared by content). Returns the buffers.
using LaunchBody = std::function<void(Kernel& k, const Values& outs)>;
Values launch(Lowering& l, const std::string& op, const std::string& key, const Shape& domain, std::span<const Operand> in,
              const std::vector<std::pair<DType, int64_t>>& outs, const LaunchBody& body);

// ---- shared by the reductions (Reduce.cpp) and the normalisations (Normalize.cpp)

std::string dt(DType t);
// The type sums and statistics of `t` are computed in (f64, else f32).
DType statType(DType t);
// `axes` of `shape` as a mask in `red`, or why one is out of range or repeated.
std::string markAxes(const std::string& op, const std::vector<int64_t>& axes, const Shape& shape, std::vector<bool>& red);
int64_t reducedCount(const Shape& s, const std::vector<bool>& red);  // elements a row holds

// The reduced dimensions of an operand as loops (extent, stride), outermost
// first; adjacent ones laid out contiguously merge.
struct Loop {
  int64_t extent, stride;
};
std::vector<Loop> loopsOf(const Operand& o, const std::vector<bool>& red);
// base + the offset of the r-th (row-major) element of the reduced dimensions.
Value* reducedOffset(Builder& b, Value* base, const std::vector<Loop>& loops, Value* r);
// Folds `body` over the `count` elements of a row of input `in` starting at
// `base` (x: the element in its compute type, r: its position), from `inits`.
using FoldBody = std::function<Values(Builder& b, Value* x, Value* r, const Values& acc)>;
Values fold(Kernel& k, size_t in, Value* base, const std::vector<Loop>& loops, int64_t count, Values inits,
            const FoldBody& body);
// The mean of a row of input `in` and the sum of squared differences from it.
std::pair<Value*, Value*> meanAndSquares(Kernel& k, size_t in, Value* base, const std::vector<Loop>& loops, int64_t R,
                                         DType t);

// A per-row statistic (a contiguous buffer over the kept shape) read
// broadcast over `shape` (the reduced dimensions repeat it).
Operand statOperand(Value* buf, DType d, const Shape& shape, const std::vector<bool>& red);
// A per-channel parameter p[C] read over x's `shape` (channel: dimension 1).
Operand channelOperand(const Operand& p, const Shape& shape);
// An operand broadcast (numpy, right-aligned) over `shape`.
Operand broadcastOperand(const Operand& p, const Shape& shape);
// A float value in S's compute type.
Value* castTo(Builder& b, ir::Context& ctx, Value* v, DType S);
// `in` with its fused operands computed into buffers of their own (all, or
// all but operand 0, which a cooperative row kernel computes where it reads
// it); the buffers made go into `temps`, for the caller to free.
std::vector<Operand> stored(Lowering& l, std::span<const Operand> in, bool keepFirst, std::vector<Value*>& temps);

// ---- cooperative row kernels (Reduce.cpp: how they work) ----------------------------

constexpr int64_t kCoopMin = 128;  // rows at least this long use a cooperative kernel
// MaxNum: the IR's max, where a NaN need not propagate through the maximum
// (softmax: a NaN element makes the row's sum, and so every output, NaN).
enum class Comb { Sum, Prod, Max, Min, MaxNum };
Value* combine(Builder& b, Comb c, Value* a, Value* x, bool fl);

// The row an invocation group works on, inside a cooperative kernel.
struct Row {
  Kernel& k;
  Value* t;  // the local id (i32)
  int64_t R, W;
  std::vector<std::vector<Loop>> loops;  // per operand
  std::vector<Value*> bases;             // per operand: the offset of the row's first element
  // The output (when it has x's shape): its buffer, whether this group
  // stores (false past the last row), and the offsets of the row in it.
  Value* out = nullptr;
  Value* valid = nullptr;
  Value* obase = nullptr;
  std::vector<Loop> oloops;
  // This invocation's positions in the row (t + j W), operand 0's elements
  // there (in registers), and whether each is in the row (null: always);
  // empty when the row is too long to keep.
  std::vector<Value*> pos, xs, inRow;
  Shape shape;            // x's
  std::vector<bool> red;  // the reduced dimensions
  bool shuffles = true;   // LowerOptions::rowShuffles
  Value* outOffset(Builder& b, Value* r) { return reducedOffset(b, obase, oloops, r); }
  // Operand `op`'s element at position r of the row, in its compute type.
  Value* load(Builder& b, size_t op, Value* r) {
    if (op == 0)
      for (size_t j = 0; j < pos.size(); ++j)
        if (pos[j] == r) return xs[j];
    return fetch(b, op, r);
  }
  // The same from memory: a fused operand (operand 0 of softmax and the
  // normalisations may be one) computed at its index, else a strided load.
  Value* fetch(Builder& b, size_t op, Value* r) {
    if (!k.in(op).fused) return loadAt(k, b, op, reducedOffset(b, bases[op], loops[op], r));
    std::vector<Value*> idx(shape.size());
    Value* rest = r;
    // r < R (positions past the row are clamped): where what is left of it
    // is below a dimension's extent, it is the index there, without the
    // rem and div that would make the cpu target's lanes gather.
    int64_t most = R - 1;
    for (size_t d = shape.size(); d-- > 0;) {
      if (!red[d]) {
        idx[d] = k.index[d];
      } else if (shape[d] == 1) {
        idx[d] = k.i32(0);
      } else if (most < shape[d]) {
        idx[d] = rest;
        rest = k.i32(0);
        most = 0;
      } else {
        idx[d] = b.rem(rest, b.constInt(k.ctx.i32(), shape[d]));
        rest = b.div(rest, b.constInt(k.ctx.i32(), shape[d]));
        most /= shape[d];
      }
    }
    return k.loadWith(b, op, idx);
  }
  // Loads operand 0's elements of this invocation into registers.
  void keep() {
    Builder& b = k.b;
    for (int64_t j = 0; j * W < R; ++j) {
      Value* r = j == 0 ? t : b.add(t, k.i32(j * W));
      bool always = (j + 1) * W <= R;
      Value* at = always ? r : b.min(r, k.i32(R - 1));  // a position past the row reads its last element
      xs.push_back(fetch(b, 0, at));
      pos.push_back(r);
      inRow.push_back(always ? nullptr : b.lt(r, k.i32(R)));
    }
  }
  // Runs body(b, r) for each of this invocation's positions r in the row.
  void forEach(const std::function<void(Builder&, Value*)>& body) {
    Builder& b = k.b;
    if (pos.empty()) {
      b.forOp(t, k.i32(R), k.i32(W), [&](Builder& lb, Value* r, const Values&) { body(lb, r); });
      return;
    }
    for (size_t j = 0; j < pos.size(); ++j) {
      if (!inRow[j]) body(b, pos[j]);
      else b.ifOp(inRow[j], {}, [&](Builder& ib) { body(ib, pos[j]); });
    }
  }
  // The combination over the row of f(operand 0's element), starting from `init` (of type S).
  Value* reduce(Comb c, DType S, Value* init, const std::function<Value*(Builder&, Value*)>& f) {
    return reduceAt(c, S, init, [&](Builder& b, Value* x, Value*) { return f(b, x); });
  }
  // The same with f given the position in the row too.
  Value* reduceAt(Comb c, DType S, Value* init, const std::function<Value*(Builder&, Value*, Value*)>& f) {
    Builder& b = k.b;
    bool fl = isFloat(S);
    Value* v = init;
    if (pos.empty()) {
      v = b.forOp(t, k.i32(R), k.i32(W), {init}, [&](Builder& lb, Value* r, const Values& a) -> Values {
        return {combine(lb, c, a[0], f(lb, load(lb, 0, r), r), fl)};
      })->result(0);
    } else {
      for (size_t j = 0; j < pos.size(); ++j) {
        Value* e = f(b, xs[j], pos[j]);
        v = combine(b, c, v, inRow[j] ? b.select(inRow[j], e, init) : e, fl);
      }
    }
    return acrossGroup(c, S, v);
  }
  // v combined over the workgroup, in every invocation.
  Value* acrossGroup(Comb c, DType S, Value* v) {
    Builder& b = k.b;
    ir::Context& ctx = k.ctx;
    bool fl = isFloat(S);
    auto combineAll = [&](Value* partial, Value* count) {
      return b.forOp(k.i32(1), count, k.i32(1), {b.load(partial, k.i32(0))}, [&](Builder& lb, Value* i, const Values& a) -> Values {
        return {combine(lb, c, a[0], lb.load(partial, i), fl)};
      })->result(0);
    };
    if (!shuffles) {
      // Every invocation's value through workgroup memory, combined in one
      // loop the whole workgroup shares (on the cpu target it runs once for
      // the workgroup, its loads broadcasts; shuffles there are gathers).
      Value* partial = b.workgroupAlloc(v->type(), W);
      b.store(partial, t, v);
      b.barrier();
      return combineAll(partial, k.i32(W));
    }
    Value* size = b.subgroupSize(ctx.i32());
    Value* lane = b.subgroupLocalId(ctx.i32());
    // Subgroup sizes are powers of two up to 128: offsets past the size are skipped.
    for (int64_t off = 1; off < 128; off *= 2) {
      Value* other = b.subgroupShuffle(v, b.xor_(lane, b.and_(k.i32(off), b.sub(size, k.i32(1)))));
      v = b.select(b.lt(k.i32(off), size), combine(b, c, v, other, fl), v);
    }
    Value* partial = b.workgroupAlloc(v->type(), W);
    b.ifOp(b.eq(lane, k.i32(0)), {}, [&](Builder& ib) { ib.store(partial, ib.subgroupId(ctx.i32()), v); });
    b.barrier();
    return combineAll(partial, b.div(b.add(k.i32(W - 1), size), size));
  }
};

using RowStats = std::function<Values(Row& row)>;
// The output element at position r of the row (null: one output per row, stats[0]).
using RowElem = std::function<Value*(Builder& b, Row& row, Value* r, const Values& stats)>;

// The mean of a row's operand 0 and the sum of its squared differences
// from it (S: the statistics' type), as meanAndSquares in a cooperative kernel.
std::pair<Value*, Value*> rowMeanAndSquares(Row& row, DType S);

// A cooperative kernel over the rows of `shape` (operand 0, x, has it; the
// others are laid over it, broadcast) reduced over `red`: the output has
// `shape` (elem given) or the kept shape (one per row), dtype `outDt`.
Value* coopRows(Lowering& l, const std::string& op, const std::string& key, const Shape& shape,
                const std::vector<bool>& red, std::span<const Operand> in, DType outDt, const RowStats& stats,
                const RowElem& elem);

}  // namespace eph::tensor::reduce
