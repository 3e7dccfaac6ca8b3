// Linalg ops: matmul, gemm, conv, conv_transpose, pooling (max, avg, lp and
// their global forms), einsum and attention (docs/tensor.md, "Linear algebra,
// convolution and pooling"). Sums accumulate in the compute type (f32 for
// f16 and f32, f64 for f64; integers in their own type). Kernels read their
// operands through strides, so views (transposes, slices, broadcasts) are
// never copied first.
#include <algorithm>
#include <cmath>
#include <limits>
#include <cctype>
#include <climits>
#include <map>
#include <optional>
#include <set>

#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"

namespace eph::tensor {

namespace {

using ir::Builder;
using ir::Value;
using ir::Values;

std::string dt(DType t) { return std::string(dtypeName(t)); }
std::string num(int64_t v) { return std::to_string(v); }

// ---- kernel helpers ---------------------------------------------------------------------------

// One invocation per element of `shape`, like Lowering::map, but the body runs
// at the top level of the kernel in every invocation (the index is clamped to
// the last element and only the store is guarded), so that its loops, whose
// bounds are the same in every invocation, interchange with the cpu target's
// invocation loop and vectorise across invocations.
Value* mapTop(Lowering& l, const std::string& op, DType dtype, const Shape& shape, std::span<const Operand> in,
              const KernelBody& body, const std::string& key) {
  const int64_t total = numel(shape);
  if (total == 0) return l.alloc(dtype, 0);
  const int64_t wg = l.opts.workgroupSize;
  const int64_t groups = (total + wg - 1) / wg;
  const auto [gx, gy] = l.grid(groups);
  auto build = [&](Builder& b, const std::vector<Value*>& bufs) {
    ir::Context& ctx = l.ctx;
    Value* lin = b.globalId(0, ctx.i32());
    if (gy > 1) lin = b.add(b.mul(b.globalId(1, ctx.i32()), b.constInt(ctx.i32(), gx * wg)), lin);
    Value* inside = b.lt(lin, b.constInt(ctx.i32(), total));
    Value* at = b.min(lin, b.constInt(ctx.i32(), total - 1));
    Kernel k(b, ctx, std::vector<Operand>(in.begin(), in.end()), std::vector<Value*>(bufs.begin(), bufs.end() - 1));
    k.linear = at;
    std::vector<int64_t> cs = contiguousStrides(shape);
    for (size_t d = 0; d < shape.size(); ++d) {
      Value* q = cs[d] == 1 ? at : b.div(at, k.i32(cs[d]));
      k.index.push_back(d == 0 ? q : b.rem(q, k.i32(shape[d])));
    }
    Value* v = body(k);
    const ir::Type* storage = irType(ctx, dtype);
    if (v->type() != storage) v = b.cast(v, storage);
    Value* out = bufs.back();
    b.ifOp(inside, {}, [&](Builder& ib) { ib.store(out, lin, v); });
  };
  return l.custom(op, dtype, total, in, {unsigned(wg), 1, 1}, {gx, gy, 1}, build,
                  key + "|" + shapeText(shape) + "|gx" + std::to_string(gx));
}

// Input i's element at element offset `off`, in `to`'s compute type.
Value* loadAt(Kernel& k, size_t i, Value* off, DType to) {
  Value* v = k.b.load(k.buffer(i), off);
  if (k.in(i).dtype == DType::F16) v = k.b.cast(v, k.ctx.f32());
  return k.convert(v, k.in(i).dtype, to);
}

Value* addConst(Kernel& k, Value* v, int64_t c) { return c ? k.b.add(v, k.i32(c)) : v; }
Value* mulConst(Kernel& k, Value* v, int64_t c) { return c == 1 ? v : k.b.mul(v, k.i32(c)); }

// `o` with its leading dimensions (all but the last `tail`) broadcast to
// `batch`: missing and extent-1 dimensions read with stride 0.
Operand withBatch(Operand o, const Shape& batch, size_t tail) {
  size_t ob = o.shape.size() - tail;
  Shape s = batch;
  std::vector<int64_t> st(batch.size(), 0);
  size_t shift = batch.size() - ob;
  for (size_t d = 0; d < ob; ++d)
    if (o.shape[d] != 1) st[d + shift] = o.strides[d];
  for (size_t d = ob; d < o.shape.size(); ++d) {
    s.push_back(o.shape[d]);
    st.push_back(o.strides[d]);
  }
  o.shape = std::move(s);
  o.strides = std::move(st);
  return o;
}

// Σ_k a[.., m, k]·b[.., k, n] for the output index (.., m, n) of operands ia
// ([batch.., M, K]) and ib ([batch.., K, N]), in t's compute type.
Value* dotMN(Kernel& k, DType t, size_t ia, size_t ib) {
  size_t r = k.index.size();
  std::vector<Value*> ai(k.index.begin(), k.index.end()), bi = ai;
  ai[r - 1] = k.i32(0);
  bi[r - 2] = k.i32(0);
  Value* offA = k.offsetOf(ia, ai);
  Value* offB = k.offsetOf(ib, bi);
  int64_t K = k.in(ia).shape[r - 1];
  int64_t sa = k.in(ia).strides[r - 1], sb = k.in(ib).strides[r - 2];
  ir::Op* loop = k.b.forOp(k.i32(0), k.i32(K), k.i32(1), {k.constant(t, 0), offA, offB},
                           [&](Builder& b, Value*, const Values& c) -> Values {
                             Value* p = b.mul(loadAt(k, ia, c[1], t), loadAt(k, ib, c[2], t));
                             return {b.add(c[0], p), addConst(k, c[1], sa), addConst(k, c[2], sb)};
                           });
  return loop->result(0);
}

// ---- matmul and gemm --------------------------------------------------------------------------

std::string numericDtype(const Program& p, const Node& n, DType& out) {
  out = p.node(n.inputs[0]).dtype;
  for (size_t i = 1; i < n.inputs.size(); ++i) out = promote(out, p.node(n.inputs[i]).dtype);
  if (out == DType::Bool) {
    std::string all;
    for (uint32_t x : n.inputs) all += (all.empty() ? "" : " and ") + dt(p.node(x).dtype);
    return n.op + " wants numeric tensors, not " + all;
  }
  return "";
}

std::string floatDtype(const Program& p, const Node& n, size_t count, DType& out) {
  out = p.node(n.inputs[0]).dtype;
  for (size_t i = 1; i < count && i < n.inputs.size(); ++i) out = promote(out, p.node(n.inputs[i]).dtype);
  if (!isFloat(out)) {
    std::string all;
    for (size_t i = 0; i < count && i < n.inputs.size(); ++i)
      all += (all.empty() ? "" : " and ") + dt(p.node(n.inputs[i]).dtype);
    return n.op + " wants float tensors, not " + all;
  }
  return "";
}

// numpy's matmul shapes: the batch shape and M, K, N; `out` the result's shape.
struct MatmulShape {
  Shape batch;
  int64_t M = 1, K = 1, N = 1;
  bool aVec = false, bVec = false;
};

std::string matmulShape(const std::string& op, const Shape& a, const Shape& b, MatmulShape& m, Shape& out) {
  std::string both = "shapes " + shapeText(a) + " and " + shapeText(b);
  if (a.empty() || b.empty()) return op + ": " + both + ": a scalar operand (use mul)";
  m.aVec = a.size() == 1;
  m.bVec = b.size() == 1;
  m.M = m.aVec ? 1 : a[a.size() - 2];
  m.K = a.back();
  int64_t K2 = m.bVec ? b[0] : b[b.size() - 2];
  m.N = m.bVec ? 1 : b.back();
  if (m.K != K2)
    return op + ": " + both + " do not match: the inner dimensions are " + num(m.K) + " and " + num(K2);
  Shape ba(a.begin(), a.end() - (m.aVec ? 1 : 2)), bb(b.begin(), b.end() - (m.bVec ? 1 : 2));
  auto batch = broadcastShapes(ba, bb);
  if (!batch)
    return op + ": " + both + " do not match: the batch dimensions " + shapeText(ba) + " and " + shapeText(bb) +
           " cannot be broadcast together";
  m.batch = *batch;
  out = m.batch;
  if (!m.aVec) out.push_back(m.M);
  if (!m.bVec) out.push_back(m.N);
  return "";
}

// The operands of matmul as [batch.., M, K] and [batch.., K, N].
std::pair<Operand, Operand> matmulOperands(const Operand& A, const Operand& B, const MatmulShape& m) {
  Operand a = A, b = B;
  if (m.aVec) {
    a.shape = {1, m.K};
    a.strides = {0, A.strides[0]};
  }
  if (m.bVec) {
    b.shape = {m.K, 1};
    b.strides = {B.strides[0], 0};
  }
  return {withBatch(a, m.batch, 2), withBatch(b, m.batch, 2)};
}

// ---- the workgroup-tiled matmul ---------------------------------------------------------------
//
// C[batch, M, N] = A[batch, M, K]·B[batch, K, N]: a workgroup of 8x8
// invocations computes a 64x64 tile of C, each invocation an 8x8 block of it
// (rows ty + 8i, columns tx + 8j), so that each step reads 16 values of
// workgroup memory for 64 multiply-adds. The K dimension is walked in steps
// of 16: the workgroup copies the 64x16 tile of A and the 16x64 tile of B into
// workgroup memory (each invocation 16 elements of each, zero past the edges),
// waits at a barrier, accumulates, and waits again before the next step.
// (16x16 invocations of 4x4 blocks ran 1.7x faster on the cpu target but 3.7x
// slower on lavapipe at 1024x1024.)
constexpr int64_t kTile = 64, kTileK = 16, kThreads = 8, kPer = kTile / kThreads;
constexpr int64_t kLoads = kTile * kTileK / (kThreads * kThreads);  // elements of each tile one invocation copies

Value* tiledMatmul(Lowering& l, DType t, const Operand& a, const Operand& b, const Shape& vshape) {
  const size_t r = vshape.size();
  const int64_t M = vshape[r - 2], N = vshape[r - 1], K = a.shape[r - 1];
  const int64_t batches = numel(Shape(vshape.begin(), vshape.end() - 2));
  const int64_t tilesM = (M + kTile - 1) / kTile, tilesN = (N + kTile - 1) / kTile;
  std::vector<Operand> in = {a, b};
  const ir::Type* acc = computeType(l.ctx, t);
  auto build = [&](Builder& bb, const std::vector<Value*>& bufs) {
    ir::Context& ctx = l.ctx;
    Kernel k(bb, ctx, in, {bufs[0], bufs[1]});
    Value* As = bb.workgroupAlloc(acc, kTileK * kTile);  // [k][m]
    Value* Bs = bb.workgroupAlloc(acc, kTileK * kTile);  // [k][n]
    Value* tx = bb.localId(0, ctx.i32());
    Value* ty = bb.localId(1, ctx.i32());
    Value* gx = bb.workgroupId(0, ctx.i32());
    Value* gz = bb.workgroupId(2, ctx.i32());  // batch
    Value* tileM = bb.div(gx, k.i32(tilesN));
    Value* tileN = bb.rem(gx, k.i32(tilesN));
    Value* row0 = bb.mul(tileM, k.i32(kTile));
    Value* col0 = bb.mul(tileN, k.i32(kTile));
    // The batch index's element offsets in A and B.
    std::vector<Value*> bidx(r, k.i32(0));
    Shape batchShape(vshape.begin(), vshape.end() - 2);
    std::vector<int64_t> bcs = contiguousStrides(batchShape);
    for (size_t d = 0; d + 2 < r; ++d) {
      Value* q = bcs[d] == 1 ? gz : bb.div(gz, k.i32(bcs[d]));
      bidx[d] = d == 0 ? q : bb.rem(q, k.i32(batchShape[d]));
    }
    Value* baseA = k.offsetOf(0, bidx);
    Value* baseB = k.offsetOf(1, bidx);
    const int64_t sam = a.strides[r - 2], sak = a.strides[r - 1], sbk = b.strides[r - 2], sbn = b.strides[r - 1];
    Value* lin = bb.add(bb.mul(ty, k.i32(kThreads)), tx);
    static_assert((kThreads * kThreads) % kTileK == 0 && (kThreads * kThreads) % kTile == 0);
    Value* amA = bb.div(lin, k.i32(kTileK));  // the A element's row and column in the tile (q = 0)
    Value* akA = bb.rem(lin, k.i32(kTileK));
    Value* bkB = bb.div(lin, k.i32(kTile));   // the B element's
    Value* bnB = bb.rem(lin, k.i32(kTile));
    Value* gnB = bb.add(col0, bnB);
    Value* nOkB = bb.lt(gnB, k.i32(N));
    Value* zero = k.constant(t, 0);
    Values init(kPer * kPer, zero);
    // The step count times num_workgroups.y (always 1): a bound the shader
    // compiler cannot see, so that it does not unroll the whole K loop around
    // the 64 accumulators (lavapipe's LLVM took minutes on K = 256).
    Value* stepCount = bb.mul(k.i32((K + kTileK - 1) / kTileK), bb.numWorkgroups(1, ctx.i32()));
    ir::Op* steps = bb.forOp(k.i32(0), stepCount, k.i32(1), init,
                             [&](Builder& b, Value* step, const Values& c) -> Values {
      Value* k0 = b.mul(step, k.i32(kTileK));
      // Copy: element e = lin + T²·q of each tile, A's as [m][k] (k fastest, for
      // row-major A) stored [k][m], B's as [k][n] (n fastest).
      Value* gkA = b.add(k0, akA);
      Value* kOkA = b.lt(gkA, k.i32(K));
      for (int64_t q = 0; q < kLoads; ++q) {
        Value* am = addConst(k, amA, q * (kThreads * kThreads / kTileK));
        Value* gm = b.add(row0, am);
        Value* okA = b.and_(b.lt(gm, k.i32(M)), kOkA);
        Value* offA = b.add(baseA, b.add(mulConst(k, b.select(okA, gm, k.i32(0)), sam),
                                         mulConst(k, b.select(okA, gkA, k.i32(0)), sak)));
        b.store(As, b.add(b.mul(akA, k.i32(kTile)), am), b.select(okA, loadAt(k, 0, offA, t), zero));
        Value* bk = addConst(k, bkB, q * (kThreads * kThreads / kTile));
        Value* gk = b.add(k0, bk);
        Value* okB = b.and_(b.lt(gk, k.i32(K)), nOkB);
        Value* offB = b.add(baseB, b.add(mulConst(k, b.select(okB, gk, k.i32(0)), sbk),
                                         mulConst(k, b.select(okB, gnB, k.i32(0)), sbn)));
        b.store(Bs, b.add(b.mul(bk, k.i32(kTile)), bnB), b.select(okB, loadAt(k, 1, offB, t), zero));
      }
      b.barrier();
      ir::Op* inner = b.forOp(k.i32(0), k.i32(kTileK), k.i32(1), c, [&](Builder& ib, Value* kk, const Values& acc) -> Values {
        Value* arow = ib.mul(kk, k.i32(kTile));
        Values av, bv;
        for (int64_t i = 0; i < kPer; ++i) av.push_back(ib.load(As, ib.add(arow, addConst(k, ty, i * kThreads))));
        for (int64_t j = 0; j < kPer; ++j) bv.push_back(ib.load(Bs, ib.add(arow, addConst(k, tx, j * kThreads))));
        Values next;
        for (int64_t i = 0; i < kPer; ++i)
          for (int64_t j = 0; j < kPer; ++j) next.push_back(ib.add(acc[size_t(i * kPer + j)], ib.mul(av[size_t(i)], bv[size_t(j)])));
        return next;
      });
      b.barrier();
      Values out;
      for (size_t i = 0; i < c.size(); ++i) out.push_back(inner->result(unsigned(i)));
      return out;
    });
    Value* out = bufs.back();
    const ir::Type* storage = irType(ctx, t);
    Value* obase = bb.mul(gz, k.i32(M * N));
    for (int64_t i = 0; i < kPer; ++i)
      for (int64_t j = 0; j < kPer; ++j) {
        Value* gm = bb.add(row0, addConst(k, ty, i * kThreads));
        Value* gn = bb.add(col0, addConst(k, tx, j * kThreads));
        Value* ok = bb.and_(bb.lt(gm, k.i32(M)), bb.lt(gn, k.i32(N)));
        Value* v = steps->result(unsigned(i * kPer + j));
        if (v->type() != storage) v = bb.cast(v, storage);
        bb.ifOp(ok, {}, [&](Builder& ib) { ib.store(out, ib.add(obase, ib.add(ib.mul(gm, k.i32(N)), gn)), v); });
      }
  };
  return l.custom("matmul_tiled", t, numel(vshape), in, {unsigned(kThreads), unsigned(kThreads), 1},
                  {tilesM * tilesN, 1, batches}, build, shapeText(vshape));
}

// Whether the tiled kernel is worth it (and fits the grid: batches in z).
bool useTiled(const Shape& vshape, int64_t K) {
  const size_t r = vshape.size();
  const int64_t M = vshape[r - 2], N = vshape[r - 1];
  const int64_t batches = numel(Shape(vshape.begin(), vshape.end() - 2));
  const int64_t tiles = ((M + kTile - 1) / kTile) * ((N + kTile - 1) / kTile);
  return M >= 32 && N >= 32 && K >= 16 && tiles <= 65535 && batches <= 65535 && batches * M * N > 0;
}

Expected<Value*> lowerMatmul(Lowering& l, const Node& n, std::span<const Operand> in) {
  MatmulShape m;
  Shape out;
  if (std::string why = matmulShape("matmul", in[0].shape, in[1].shape, m, out); !why.empty()) return Error{{}, why};
  auto [a, b] = matmulOperands(in[0], in[1], m);
  Shape vshape = m.batch;
  vshape.push_back(m.M);
  vshape.push_back(m.N);
  if (useTiled(vshape, m.K)) return tiledMatmul(l, n.dtype, a, b, vshape);
  std::vector<Operand> ops = {a, b};
  DType t = n.dtype;
  return mapTop(l, "matmul", t, vshape, ops, [&](Kernel& k) { return dotMN(k, t, 0, 1); }, "");
}

void addMatmul(std::vector<OpDef>& ops) {
  OpDef d;
  d.name = "matmul";
  d.minInputs = d.maxInputs = 2;
  d.infer = [](const Program& p, Node& n) -> std::string {
    if (std::string why = numericDtype(p, n, n.dtype); !why.empty()) return why;
    MatmulShape m;
    return matmulShape("matmul", p.node(n.inputs[0]).shape, p.node(n.inputs[1]).shape, m, n.shape);
  };
  d.lower = lowerMatmul;
  ops.push_back(std::move(d));

  // gemm(A, B, [C]) = alpha·A'·B' + beta·C, A' = transA ? Aᵀ : A.
  OpDef g;
  g.name = "gemm";
  g.minInputs = 2;
  g.maxInputs = 3;
  g.infer = [](const Program& p, Node& n) -> std::string {
    if (std::string why = numericDtype(p, n, n.dtype); !why.empty()) return why;
    const Shape& a = p.node(n.inputs[0]).shape;
    const Shape& b = p.node(n.inputs[1]).shape;
    if (a.size() != 2 || b.size() != 2)
      return "gemm wants 2-D A and B, got " + shapeText(a) + " and " + shapeText(b);
    bool ta = n.attrs.i("transA", 0) != 0, tb = n.attrs.i("transB", 0) != 0;
    int64_t M = ta ? a[1] : a[0], K = ta ? a[0] : a[1], K2 = tb ? b[1] : b[0], N = tb ? b[0] : b[1];
    if (K != K2)
      return "gemm: shapes " + shapeText(a) + " and " + shapeText(b) + " (transA=" + num(ta) + ", transB=" + num(tb) +
             ") do not match: the inner dimensions are " + num(K) + " and " + num(K2);
    n.shape = {M, N};
    if (n.inputs.size() == 3) {
      const Shape& c = p.node(n.inputs[2]).shape;
      auto s = broadcastShapes(c, n.shape);
      if (!s || *s != n.shape) return "gemm: C " + shapeText(c) + " cannot be broadcast to " + shapeText(n.shape);
    }
    return "";
  };
  g.lower = [](Lowering& l, const Node& n, std::span<const Operand> in) -> Expected<Value*> {
    std::vector<Operand> ops(in.begin(), in.end());
    for (int i = 0; i < 2; ++i)
      if (n.attrs.i(i ? "transB" : "transA", 0)) {
        std::swap(ops[size_t(i)].shape[0], ops[size_t(i)].shape[1]);
        std::swap(ops[size_t(i)].strides[0], ops[size_t(i)].strides[1]);
      }
    double alpha = n.attrs.f("alpha", 1.0), beta = n.attrs.f("beta", 1.0);
    DType t = n.dtype;
    bool plain = alpha == 1.0 && (ops.size() == 2 || beta == 0.0);
    if (plain && useTiled(n.shape, ops[0].shape[1])) return tiledMatmul(l, t, ops[0], ops[1], n.shape);
    return mapTop(l, "gemm", t, n.shape, ops, [&](Kernel& k) {
      Value* v = dotMN(k, t, 0, 1);
      if (alpha != 1.0) v = k.b.mul(v, k.constant(t, alpha));
      if (ops.size() == 3 && beta != 0.0) {
        Value* c = k.convert(k.loadBroadcast(2), ops[2].dtype, t);
        v = k.b.add(v, beta == 1.0 ? c : k.b.mul(c, k.constant(t, beta)));
      }
      return v;
    }, n.attrs.key());
  };
  ops.push_back(std::move(g));
}

// ---- windows: conv, conv_transpose, pooling ---------------------------------------------------

// A sliding window over the k spatial dimensions of [N, C, d1..dk].
struct Window {
  size_t k = 0;
  std::vector<int64_t> in, out, kernel, strides, dilations, padBegin, padEnd;
};

std::string readInts(const Node& n, const std::string& name, size_t count, int64_t fallback, int64_t min,
                     std::vector<int64_t>& out) {
  out = n.attrs.ints(name);
  if (out.empty()) out.assign(count, fallback);
  if (out.size() != count)
    return n.op + ": " + name + " " + shapeText(out) + " has " + num(int64_t(out.size())) + " entries; want " +
           num(int64_t(count));
  for (int64_t v : out)
    if (v < min) return n.op + ": " + name + " " + shapeText(out) + " has an entry below " + num(min);
  return "";
}

std::string readAutoPad(const Node& n, std::string& mode) {
  mode = n.attrs.s("auto_pad", "NOTSET");
  if (mode.empty()) mode = "NOTSET";
  if (mode != "NOTSET" && mode != "SAME_UPPER" && mode != "SAME_LOWER" && mode != "VALID")
    return n.op + ": auto_pad '" + mode + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID";
  return "";
}

int64_t floorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceilDiv(int64_t a, int64_t b) { return -floorDiv(-a, b); }

// Strides, dilations, pads and auto_pad of a forward window (conv and the
// pools) over x's spatial dimensions with `kernel`; sets the output extents.
// ceil_mode (pools) rounds the output up, dropping a last window that would
// start in the end padding (as PyTorch and ONNX).
std::string forwardWindow(const Node& n, const Shape& x, std::vector<int64_t> kernel, bool ceilMode, Window& w) {
  w.k = x.size() - 2;
  w.in.assign(x.begin() + 2, x.end());
  w.kernel = std::move(kernel);
  std::vector<int64_t> pads;
  std::string mode;
  if (std::string why = readInts(n, "strides", w.k, 1, 1, w.strides); !why.empty()) return why;
  if (std::string why = readInts(n, "dilations", w.k, 1, 1, w.dilations); !why.empty()) return why;
  if (std::string why = readInts(n, "pads", 2 * w.k, 0, 0, pads); !why.empty()) return why;
  if (std::string why = readAutoPad(n, mode); !why.empty()) return why;
  w.out.assign(w.k, 0);
  w.padBegin.assign(pads.begin(), pads.begin() + int64_t(w.k));
  w.padEnd.assign(pads.begin() + int64_t(w.k), pads.end());
  for (size_t d = 0; d < w.k; ++d) {
    int64_t eff = (w.kernel[d] - 1) * w.dilations[d] + 1, s = w.strides[d], in = w.in[d];
    if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
      w.out[d] = ceilDiv(in, s);
      int64_t total = std::max<int64_t>(0, (w.out[d] - 1) * s + eff - in);
      w.padBegin[d] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.padEnd[d] = total - w.padBegin[d];
      continue;
    }
    if (mode == "VALID") w.padBegin[d] = w.padEnd[d] = 0;
    int64_t padded = in + w.padBegin[d] + w.padEnd[d];
    if (padded < eff)
      return n.op + ": the window of spatial dimension " + num(int64_t(d)) + " (kernel " + num(w.kernel[d]) +
             ", dilation " + num(w.dilations[d]) + ": extent " + num(eff) + ") is larger than the padded input (" +
             num(in) + " + " + num(w.padBegin[d]) + " + " + num(w.padEnd[d]) + ") of " + shapeText(x);
    w.out[d] = (ceilMode ? ceilDiv(padded - eff, s) : (padded - eff) / s) + 1;
    if (ceilMode && (w.out[d] - 1) * s >= in + w.padBegin[d]) --w.out[d];
  }
  return "";
}

// The input coordinate and whether it is inside, for one tap of a window.
struct Tap {
  Value* ok = nullptr;  // null: inside for every output
  Value* xoff = nullptr;  // element offset in x relative to the (n, c) base (0 when not ok)
  Value* woff = nullptr;  // Σ j_d·wstrides[d] (conv)
  Value* padOk = nullptr;  // inside the padded input (avg_pool's count_include_pad); null: always
};

// The tap j (constants when `jc`, else values) of the window at output
// coordinates `o`: input coordinate o·s − padBegin + j·dilation.
Tap forwardTap(Kernel& k, const Window& w, const std::vector<Value*>& o, const std::vector<int64_t>* jc,
               const std::vector<Value*>& jv, const std::vector<int64_t>& xs, const std::vector<int64_t>& ws,
               bool wantPad) {
  Builder& b = k.b;
  Tap t;
  Value* xoff = nullptr;
  Value* woff = nullptr;
  for (size_t d = 0; d < w.k; ++d) {
    int64_t s = w.strides[d], dil = w.dilations[d], pb = w.padBegin[d];
    Value* pos;
    bool always = false, alwaysPad = false;
    Value* j = jc ? k.i32((*jc)[d]) : jv[d];
    if (jc) {
      int64_t lo = (*jc)[d] * dil - pb, hi = (w.out[d] - 1) * s + lo;
      pos = addConst(k, mulConst(k, o[d], s), lo);
      always = lo >= 0 && hi < w.in[d];
      alwaysPad = lo >= -pb && hi < w.in[d] + w.padEnd[d];
    } else {
      pos = b.add(addConst(k, mulConst(k, o[d], s), -pb), mulConst(k, j, dil));
    }
    if (!always) {
      Value* ok = b.and_(b.ge(pos, k.i32(0)), b.lt(pos, k.i32(w.in[d])));
      t.ok = t.ok ? b.and_(t.ok, ok) : ok;
    }
    if (wantPad && !alwaysPad) {
      Value* ok = b.and_(b.ge(pos, k.i32(-pb)), b.lt(pos, k.i32(w.in[d] + w.padEnd[d])));
      t.padOk = t.padOk ? b.and_(t.padOk, ok) : ok;
    }
    if (xs[d] != 0 && w.in[d] != 1) {
      Value* term = mulConst(k, pos, xs[d]);
      xoff = xoff ? b.add(xoff, term) : term;
    }
    if (!ws.empty() && ws[d] != 0) {
      Value* term = mulConst(k, j, ws[d]);
      woff = woff ? b.add(woff, term) : term;
    }
  }
  if (!xoff) xoff = k.i32(0);
  if (t.ok) xoff = b.select(t.ok, xoff, k.i32(0));
  t.xoff = xoff;
  t.woff = woff ? woff : k.i32(0);
  return t;
}

int64_t tapCount(const Window& w) {
  int64_t n = 1;
  for (int64_t v : w.kernel) n *= v;
  return n;
}

// Up to this many taps the window is unrolled (its bounds checks computed
// once per output); beyond it, a loop over the taps.
constexpr int64_t kUnrollTaps = 64;

std::vector<int64_t> tapIndex(const Window& w, int64_t t) {
  std::vector<int64_t> j(w.k);
  for (size_t d = w.k; d-- > 0;) {
    j[d] = t % w.kernel[d];
    t /= w.kernel[d];
  }
  return j;
}

// The tap values of flattened tap index `t` (a loop variable).
std::vector<Value*> tapValues(Kernel& k, const Window& w, Value* t) {
  std::vector<Value*> j(w.k);
  int64_t inner = 1;
  for (size_t d = w.k; d-- > 0;) {
    Value* q = inner == 1 ? t : k.b.div(t, k.i32(inner));
    j[d] = d == 0 ? q : k.b.rem(q, k.i32(w.kernel[d]));
    inner *= w.kernel[d];
  }
  return j;
}

// conv: x[N, C, d..], w[M, C/group, k..], [b[M]].
std::string convWindow(const Node& n, const Shape& x, const Shape& ws, const Shape* bias, Window& w) {
  if (x.size() < 3)
    return "conv wants x of rank 3 or more ([N, C, spatial..]), got " + shapeText(x);
  if (ws.size() != x.size())
    return "conv: w " + shapeText(ws) + " must have the rank of x " + shapeText(x) + " ([M, C/group, kernel..])";
  int64_t group = n.attrs.i("group", 1);
  if (group < 1) return "conv: group " + num(group) + " must be at least 1";
  if (ws[1] * group != x[1])
    return "conv: x " + shapeText(x) + " has " + num(x[1]) + " channels but w " + shapeText(ws) + " with group " +
           num(group) + " wants " + num(ws[1] * group);
  if (ws[0] % group != 0)
    return "conv: the " + num(ws[0]) + " output channels of w " + shapeText(ws) + " are not a multiple of group " +
           num(group);
  std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  for (int64_t e : kernel)
    if (e < 1) return "conv: w " + shapeText(ws) + " has an empty kernel";
  if (n.attrs.has("kernel_shape") && n.attrs.ints("kernel_shape") != kernel)
    return "conv: kernel_shape " + shapeText(n.attrs.ints("kernel_shape")) + " does not match w " + shapeText(ws);
  if (bias && *bias != Shape{ws[0]})
    return "conv: the bias " + shapeText(*bias) + " must be [" + num(ws[0]) + "] for w " +
           shapeText(ws);
  return forwardWindow(n, x, kernel, false, w);
}

// conv as a matrix product when it is big enough for the tiled kernel:
// col[g, (c, j), (n, p)] gathers tap j of output position p from channel c of
// group g (0 in the padding), the tiled matmul multiplies w viewed as
// [g, M/g, C/g·taps] by it, and a last kernel puts [g, m', (n, p)] back as
// [n, m, p], adding the bias. The temporaries are in the compute type.
std::optional<Value*> convAsMatmul(Lowering& l, const Node& n, std::span<const Operand> in, const Window& w) {
  const Operand& X = in[0];
  const Operand& W = in[1];
  const int64_t G = n.attrs.i("group", 1), M = W.shape[0], Mg = M / G, Cg = W.shape[1], N = X.shape[0];
  const int64_t taps = tapCount(w), P = numel(w.out), Kc = Cg * taps, NP = N * P;
  const Shape vshape = {G, Mg, NP};
  if (W.strides != contiguousStrides(W.shape) || !useTiled(vshape, Kc) || G * Kc * NP > int64_t(INT32_MAX))
    return std::nullopt;
  const DType t = n.dtype;
  const DType acc = t == DType::F64 ? DType::F64 : DType::F32;
  const Shape colShape = {G, Kc, NP};
  std::vector<Operand> xin = {X};
  Value* col = mapTop(l, "conv_im2col", acc, colShape, xin, [&](Kernel& k) {
    Builder& b = k.b;
    Value* g = k.index[0];
    Value* r = k.index[1];
    Value* q = k.index[2];
    Value* c = taps == 1 ? r : b.div(r, k.i32(taps));
    Value* j = taps == 1 ? k.i32(0) : b.rem(r, k.i32(taps));
    Value* nn = P == 1 ? q : b.div(q, k.i32(P));
    Value* p = P == 1 ? k.i32(0) : b.rem(q, k.i32(P));
    std::vector<Value*> idx = {nn, G == 1 ? c : b.add(b.mul(g, k.i32(Cg)), c)};
    Value* ok = nullptr;
    int64_t innerO = 1, innerJ = 1;
    std::vector<Value*> pos(w.k);
    for (size_t d = w.k; d-- > 0;) {
      Value* o = innerO == 1 ? p : b.div(p, k.i32(innerO));
      if (d > 0) o = b.rem(o, k.i32(w.out[d]));
      Value* jd = innerJ == 1 ? j : b.div(j, k.i32(innerJ));
      if (d > 0) jd = b.rem(jd, k.i32(w.kernel[d]));
      innerO *= w.out[d];
      innerJ *= w.kernel[d];
      pos[d] = b.add(addConst(k, mulConst(k, o, w.strides[d]), -w.padBegin[d]), mulConst(k, jd, w.dilations[d]));
      Value* inside = b.and_(b.ge(pos[d], k.i32(0)), b.lt(pos[d], k.i32(w.in[d])));
      ok = ok ? b.and_(ok, inside) : inside;
    }
    for (size_t d = 0; d < w.k; ++d) idx.push_back(b.select(ok, pos[d], k.i32(0)));
    return b.select(ok, loadAt(k, 0, k.offsetOf(0, idx), acc), k.constant(acc, 0));
  }, n.attrs.key() + "|" + shapeText(n.shape));
  Operand wm{W.buf, W.dtype, {G, Mg, Kc}, {Mg * Kc, Kc, 1}, W.offset};
  Value* prod = tiledMatmul(l, acc, wm, Lowering::contiguous(col, acc, colShape), vshape);
  l.free(col);
  std::vector<Operand> fin = {Lowering::contiguous(prod, acc, vshape)};
  if (in.size() == 3) fin.push_back(in[2]);
  Value* out = mapTop(l, "conv_out", t, n.shape, fin, [&](Kernel& k) {
    Builder& b = k.b;
    Value* p = P == 1 ? k.i32(0) : b.rem(k.linear, k.i32(P));
    Value* at = b.add(b.add(b.mul(k.index[1], k.i32(NP)), b.mul(k.index[0], k.i32(P))), p);
    Value* v = b.load(k.buffer(0), at);
    if (fin.size() == 2) v = b.add(v, loadAt(k, 1, k.offsetOf(1, {k.index[1]}), acc));
    return v;
  }, num(NP));
  l.free(prod);
  return out;
}

Expected<Value*> lowerConv(Lowering& l, const Node& n, std::span<const Operand> in, const Window& w) {
  if (auto viaMatmul = convAsMatmul(l, n, in, w)) return *viaMatmul;
  const Operand& X = in[0];
  const Operand& W = in[1];
  const int64_t group = n.attrs.i("group", 1);
  const int64_t M = W.shape[0], Cg = W.shape[1], Mg = M / group;
  const DType t = n.dtype;
  std::vector<int64_t> xs(X.strides.begin() + 2, X.strides.end()), wsp(W.strides.begin() + 2, W.strides.end());
  const int64_t taps = tapCount(w);
  return mapTop(l, "conv", t, n.shape, in, [&](Kernel& k) {
    Builder& b = k.b;
    Value* nn = k.index[0];
    Value* m = k.index[1];
    std::vector<Value*> o(k.index.begin() + 2, k.index.end());
    Value* c0 = group == 1 ? k.i32(0) : b.mul(b.div(m, k.i32(Mg)), k.i32(Cg));
    std::vector<Value*> xi(X.shape.size(), k.i32(0)), wi(W.shape.size(), k.i32(0));
    xi[0] = nn;
    xi[1] = c0;
    wi[0] = m;
    Value* xbase = k.offsetOf(0, xi);
    Value* wbase = k.offsetOf(1, wi);
    const int64_t sxc = X.shape[1] == 1 ? 0 : X.strides[1], swc = W.shape[1] == 1 ? 0 : W.strides[1];
    Value* acc0 = k.constant(t, 0);
    Value* sum;
    if (taps <= kUnrollTaps) {
      std::vector<Tap> tl;
      std::vector<int64_t> woffs;
      for (int64_t tp = 0; tp < taps; ++tp) {
        std::vector<int64_t> j = tapIndex(w, tp);
        tl.push_back(forwardTap(k, w, o, &j, {}, xs, {}, false));
        int64_t wo = 0;
        for (size_t d = 0; d < w.k; ++d) wo += j[d] * (W.shape[d + 2] == 1 ? 0 : wsp[d]);
        woffs.push_back(wo);
      }
      ir::Op* loop = b.forOp(k.i32(0), k.i32(Cg), k.i32(1), {acc0, xbase, wbase},
                             [&](Builder& lb, Value*, const Values& c) -> Values {
        Value* acc = c[0];
        for (size_t tp = 0; tp < tl.size(); ++tp) {
          Value* xv = loadAt(k, 0, lb.add(c[1], tl[tp].xoff), t);
          if (tl[tp].ok) xv = lb.select(tl[tp].ok, xv, acc0);
          Value* wv = loadAt(k, 1, addConst(k, c[2], woffs[tp]), t);
          acc = lb.add(acc, lb.mul(xv, wv));
        }
        return {acc, addConst(k, c[1], sxc), addConst(k, c[2], swc)};
      });
      sum = loop->result(0);
    } else {
      ir::Op* loop = b.forOp(k.i32(0), k.i32(Cg), k.i32(1), {acc0, xbase, wbase},
                             [&](Builder& lb, Value*, const Values& c) -> Values {
        ir::Op* inner = lb.forOp(k.i32(0), k.i32(taps), k.i32(1), {c[0]},
                                 [&](Builder& ib, Value* tv, const Values& a) -> Values {
          Tap tap = forwardTap(k, w, o, nullptr, tapValues(k, w, tv), xs, wsp, false);
          Value* xv = loadAt(k, 0, ib.add(c[1], tap.xoff), t);
          if (tap.ok) xv = ib.select(tap.ok, xv, acc0);
          Value* wv = loadAt(k, 1, ib.add(c[2], tap.woff), t);
          return {ib.add(a[0], ib.mul(xv, wv))};
        });
        return {inner->result(0), addConst(k, c[1], sxc), addConst(k, c[2], swc)};
      });
      sum = loop->result(0);
    }
    if (in.size() == 3) sum = b.add(sum, loadAt(k, 2, k.offsetOf(2, {m}), t));
    return sum;
  }, n.attrs.key());
}

// conv_transpose: x[N, C, d..], w[C, M/group, k..], [b[M]].
std::string convTransposeWindow(const Node& n, const Shape& x, const Shape& ws, const Shape* bias, Window& w,
                                Shape& out) {
  if (x.size() < 3)
    return "conv_transpose wants x of rank 3 or more ([N, C, spatial..]), got " + shapeText(x);
  if (ws.size() != x.size())
    return "conv_transpose: w " + shapeText(ws) + " must have the rank of x " + shapeText(x) + " ([C, M/group, kernel..])";
  int64_t group = n.attrs.i("group", 1);
  if (group < 1) return "conv_transpose: group " + num(group) + " must be at least 1";
  if (ws[0] != x[1])
    return "conv_transpose: x " + shapeText(x) + " has " + num(x[1]) + " channels but w " + shapeText(ws) + " has " +
           num(ws[0]);
  if (x[1] % group != 0)
    return "conv_transpose: the " + num(x[1]) + " channels of x " + shapeText(x) + " are not a multiple of group " +
           num(group);
  const int64_t M = ws[1] * group;
  w.k = x.size() - 2;
  w.in.assign(x.begin() + 2, x.end());
  w.kernel.assign(ws.begin() + 2, ws.end());
  for (int64_t e : w.kernel)
    if (e < 1) return "conv_transpose: w " + shapeText(ws) + " has an empty kernel";
  if (n.attrs.has("kernel_shape") && n.attrs.ints("kernel_shape") != w.kernel)
    return "conv_transpose: kernel_shape " + shapeText(n.attrs.ints("kernel_shape")) + " does not match w " + shapeText(ws);
  if (bias && *bias != Shape{M})
    return "conv_transpose: the bias " + shapeText(*bias) + " must be [" + num(M) + "] for w " +
           shapeText(ws) + " and group " + num(group);
  std::vector<int64_t> pads, outPad;
  std::string mode;
  if (std::string why = readInts(n, "strides", w.k, 1, 1, w.strides); !why.empty()) return why;
  if (std::string why = readInts(n, "dilations", w.k, 1, 1, w.dilations); !why.empty()) return why;
  if (std::string why = readInts(n, "pads", 2 * w.k, 0, 0, pads); !why.empty()) return why;
  if (std::string why = readInts(n, "output_padding", w.k, 0, 0, outPad); !why.empty()) return why;
  if (std::string why = readAutoPad(n, mode); !why.empty()) return why;
  std::vector<int64_t> want = n.attrs.ints("output_shape");
  if (want.size() == w.k + 2) want.erase(want.begin(), want.begin() + 2);
  if (!want.empty() && want.size() != w.k)
    return "conv_transpose: output_shape " + shapeText(n.attrs.ints("output_shape")) + " has " +
           num(int64_t(n.attrs.ints("output_shape").size())) + " entries; want " + num(int64_t(w.k));
  if (want.empty() && (mode == "SAME_UPPER" || mode == "SAME_LOWER"))
    for (size_t d = 0; d < w.k; ++d) want.push_back(w.in[d] * w.strides[d]);
  w.padBegin.assign(pads.begin(), pads.begin() + int64_t(w.k));
  w.padEnd.assign(pads.begin() + int64_t(w.k), pads.end());
  w.out.assign(w.k, 0);
  out = {x[0], M};
  for (size_t d = 0; d < w.k; ++d) {
    int64_t eff = (w.kernel[d] - 1) * w.dilations[d] + 1;
    int64_t full = w.strides[d] * (w.in[d] - 1) + outPad[d] + eff;
    if (mode == "VALID") w.padBegin[d] = w.padEnd[d] = 0;
    if (!want.empty()) {
      // Negative when output_shape is larger than the full extent: the
      // output then extends past it with positions no input reaches (ONNX
      // allows it). Halves round down, as ONNX's reference (Python's //).
      int64_t total = full - want[d];
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      w.padBegin[d] = mode == "SAME_UPPER" ? half : total - half;
      w.padEnd[d] = total - w.padBegin[d];
    }
    w.out[d] = full - w.padBegin[d] - w.padEnd[d];
    if (w.out[d] < 0)
      return "conv_transpose: the pads " + shapeText(pads) + " remove more than the output extent " + num(full) +
             " of spatial dimension " + num(int64_t(d));
    out.push_back(w.out[d]);
  }
  return "";
}

Expected<Value*> lowerConvTranspose(Lowering& l, const Node& n, std::span<const Operand> in, const Window& w) {
  const Operand& X = in[0];
  const Operand& W = in[1];
  const int64_t group = n.attrs.i("group", 1);
  const int64_t C = X.shape[1], Cg = C / group, Mg = W.shape[1];
  const DType t = n.dtype;
  const int64_t taps = tapCount(w);
  return mapTop(l, "conv_transpose", t, n.shape, in, [&](Kernel& k) {
    Builder& b = k.b;
    Value* nn = k.index[0];
    Value* m = k.index[1];
    std::vector<Value*> o(k.index.begin() + 2, k.index.end());
    Value* g = group == 1 ? k.i32(0) : b.div(m, k.i32(Mg));
    Value* ml = group == 1 ? m : b.rem(m, k.i32(Mg));
    std::vector<Value*> xi(X.shape.size(), k.i32(0)), wi(W.shape.size(), k.i32(0));
    xi[0] = nn;
    xi[1] = group == 1 ? k.i32(0) : b.mul(g, k.i32(Cg));
    wi[0] = xi[1];
    wi[1] = ml;
    Value* xbase = k.offsetOf(0, xi);
    Value* wbase = k.offsetOf(1, wi);
    const int64_t sxc = X.shape[1] == 1 ? 0 : X.strides[1], swc = W.shape[0] == 1 ? 0 : W.strides[0];
    Value* acc0 = k.constant(t, 0);
    // Tap j of output coordinate o reads input i = (o + pb − j·dil) / s when that divides exactly and is inside.
    auto tapOf = [&](const std::vector<Value*>& j) {
      Tap tp;
      Value* xoff = k.i32(0);
      Value* woff = k.i32(0);
      for (size_t d = 0; d < w.k; ++d) {
        Value* tt = b.sub(addConst(k, o[d], w.padBegin[d]), mulConst(k, j[d], w.dilations[d]));
        Value* ok = b.ge(tt, k.i32(0));
        Value* safe = b.select(ok, tt, k.i32(0));
        Value* i = w.strides[d] == 1 ? safe : b.div(safe, k.i32(w.strides[d]));
        if (w.strides[d] != 1) ok = b.and_(ok, b.eq(b.rem(safe, k.i32(w.strides[d])), k.i32(0)));
        ok = b.and_(ok, b.lt(i, k.i32(w.in[d])));
        tp.ok = tp.ok ? b.and_(tp.ok, ok) : ok;
        if (X.shape[d + 2] != 1) xoff = b.add(xoff, mulConst(k, i, X.strides[d + 2]));
        if (W.shape[d + 2] != 1) woff = b.add(woff, mulConst(k, j[d], W.strides[d + 2]));
      }
      tp.xoff = b.select(tp.ok, xoff, k.i32(0));
      tp.woff = woff;
      return tp;
    };
    Value* sum;
    if (taps <= kUnrollTaps) {
      std::vector<Tap> tl;
      for (int64_t tp = 0; tp < taps; ++tp) {
        std::vector<Value*> jv;
        for (int64_t j : tapIndex(w, tp)) jv.push_back(k.i32(j));
        tl.push_back(tapOf(jv));
      }
      ir::Op* loop = b.forOp(k.i32(0), k.i32(Cg), k.i32(1), {acc0, xbase, wbase},
                             [&](Builder& lb, Value*, const Values& c) -> Values {
        Value* acc = c[0];
        for (const Tap& tp : tl) {
          Value* xv = lb.select(tp.ok, loadAt(k, 0, lb.add(c[1], tp.xoff), t), acc0);
          Value* wv = loadAt(k, 1, lb.add(c[2], tp.woff), t);
          acc = lb.add(acc, lb.mul(xv, wv));
        }
        return {acc, addConst(k, c[1], sxc), addConst(k, c[2], swc)};
      });
      sum = loop->result(0);
    } else {
      ir::Op* loop = b.forOp(k.i32(0), k.i32(Cg), k.i32(1), {acc0, xbase, wbase},
                             [&](Builder& lb, Value*, const Values& c) -> Values {
        ir::Op* inner = lb.forOp(k.i32(0), k.i32(taps), k.i32(1), {c[0]},
                                 [&](Builder& ib, Value* tv, const Values& a) -> Values {
          Tap tp = tapOf(tapValues(k, w, tv));
          Value* xv = ib.select(tp.ok, loadAt(k, 0, ib.add(c[1], tp.xoff), t), acc0);
          Value* wv = loadAt(k, 1, ib.add(c[2], tp.woff), t);
          return {ib.add(a[0], ib.mul(xv, wv))};
        });
        return {inner->result(0), addConst(k, c[1], sxc), addConst(k, c[2], swc)};
      });
      sum = loop->result(0);
    }
    if (in.size() == 3) sum = b.add(sum, loadAt(k, 2, k.offsetOf(2, {m}), t));
    return sum;
  }, n.attrs.key());
}

enum class Pool { Max, Avg, Lp };

std::string poolWindow(const Program& p, const Node& n, Pool kind, Window& w) {
  const Node& x = p.node(n.inputs[0]);
  if (x.shape.size() < 3) return n.op + " wants x of rank 3 or more ([N, C, spatial..]), got " + shapeText(x.shape);
  if (kind == Pool::Max ? !(isFloat(x.dtype) || isInt(x.dtype)) : !isFloat(x.dtype))
    return n.op + " wants " + (kind == Pool::Max ? "a numeric" : "a float") + " tensor, not " + dt(x.dtype);
  if (!n.attrs.has("kernel_shape")) return n.op + ": kernel_shape is required";
  std::vector<int64_t> kernel;
  if (std::string why = readInts(n, "kernel_shape", x.shape.size() - 2, 1, 1, kernel); !why.empty()) return why;
  if (kind == Pool::Lp && n.attrs.i("p", 2) < 1) return n.op + ": p " + num(n.attrs.i("p", 2)) + " must be at least 1";
  return forwardWindow(n, x.shape, kernel, n.attrs.i("ceil_mode", 0) != 0, w);
}

Value* lpPow(Kernel& k, Value* v, int64_t p, DType t) {
  Value* a = k.b.abs(v);
  if (p == 1) return a;
  if (p == 2) return k.b.mul(v, v);
  return k.b.pow(a, k.constant(t, double(p)));
}

Value* lpRoot(Kernel& k, Value* s, int64_t p, DType t) {
  if (p == 1) return s;
  if (p == 2) return k.b.sqrt(s);
  return k.b.pow(s, k.constant(t, 1.0 / double(p)));
}

// The lowest value of t (max_pool's start): -inf for floats.
double lowest(DType t) {
  if (isFloat(t)) return -INFINITY;
  if (!isSigned(t)) return 0;
  return -std::ldexp(1.0, int(bits(t)) - 1);
}

// max(acc, v) where a NaN wins.
Value* maxNaN(Kernel& k, Value* acc, Value* v, DType t) {
  if (!isFloat(t)) return k.b.max(acc, v);
  return k.b.select(k.b.or_(k.b.gt(v, acc), k.b.ne(v, v)), v, acc);
}

Expected<Value*> lowerPool(Lowering& l, const Node& n, std::span<const Operand> in, Pool kind, const Window& w) {
  const Operand& X = in[0];
  const DType t = n.dtype;
  const int64_t taps = tapCount(w);
  const int64_t p = n.attrs.i("p", 2);
  const bool includePad = n.attrs.i("count_include_pad", 0) != 0;
  std::vector<int64_t> xs(X.strides.begin() + 2, X.strides.end());
  return mapTop(l, n.op, t, n.shape, in, [&](Kernel& k) {
    Builder& b = k.b;
    std::vector<Value*> xi(X.shape.size(), k.i32(0));
    xi[0] = k.index[0];
    xi[1] = k.index[1];
    Value* base = k.offsetOf(0, xi);
    std::vector<Value*> o(k.index.begin() + 2, k.index.end());
    Value* start = kind == Pool::Max ? k.constant(t, lowest(t)) : k.constant(t, 0);
    Value* zero = k.constant(t, 0);
    Value* one = k.constant(t, 1);
    // Carried: the max or sum, and the count (avg).
    auto step = [&](const Tap& tp, const Values& c) -> Values {
      Value* v = loadAt(k, 0, b.add(base, tp.xoff), t);
      Value* acc;
      if (kind == Pool::Max) acc = maxNaN(k, c[0], v, t);
      else acc = b.add(c[0], kind == Pool::Lp ? lpPow(k, v, p, t) : v);
      if (tp.ok) acc = b.select(tp.ok, acc, c[0]);
      Value* cnt = c[1];
      Value* inside = includePad ? tp.padOk : tp.ok;
      cnt = b.add(cnt, inside ? b.select(inside, one, zero) : one);
      return {acc, cnt};
    };
    Values c = {start, zero};
    if (taps <= kUnrollTaps) {
      for (int64_t tp = 0; tp < taps; ++tp) {
        std::vector<int64_t> j = tapIndex(w, tp);
        c = step(forwardTap(k, w, o, &j, {}, xs, {}, includePad), c);
      }
    } else {
      ir::Op* loop = b.forOp(k.i32(0), k.i32(taps), k.i32(1), c, [&](Builder&, Value* tv, const Values& cc) -> Values {
        return step(forwardTap(k, w, o, nullptr, tapValues(k, w, tv), xs, {}, includePad), cc);
      });
      c = {loop->result(0), loop->result(1)};
    }
    if (kind == Pool::Avg) return b.div(c[0], c[1]);
    if (kind == Pool::Lp) return lpRoot(k, c[0], p, t);
    return c[0];
  }, n.attrs.key());
}

void addWindowOps(std::vector<OpDef>& ops) {
  OpDef c;
  c.name = "conv";
  c.minInputs = 2;
  c.maxInputs = 3;
  c.infer = [](const Program& p, Node& n) -> std::string {
    if (std::string why = floatDtype(p, n, n.inputs.size(), n.dtype); !why.empty()) return why;
    Window w;
    const Shape* bias = n.inputs.size() == 3 ? &p.node(n.inputs[2]).shape : nullptr;
    if (std::string why = convWindow(n, p.node(n.inputs[0]).shape, p.node(n.inputs[1]).shape, bias, w); !why.empty())
      return why;
    const Shape& x = p.node(n.inputs[0]).shape;
    n.shape = {x[0], p.node(n.inputs[1]).shape[0]};
    n.shape.insert(n.shape.end(), w.out.begin(), w.out.end());
    return "";
  };
  c.lower = [](Lowering& l, const Node& n, std::span<const Operand> in) -> Expected<Value*> {
    Window w;  // again, from the operands' shapes (as at infer)
    const Shape* bias = in.size() == 3 ? &in[2].shape : nullptr;
    if (std::string why = convWindow(n, in[0].shape, in[1].shape, bias, w); !why.empty()) return Error{{}, why};
    return lowerConv(l, n, in, w);
  };
  ops.push_back(std::move(c));

  OpDef ct;
  ct.name = "conv_transpose";
  ct.minInputs = 2;
  ct.maxInputs = 3;
  ct.infer = [](const Program& p, Node& n) -> std::string {
    if (std::string why = floatDtype(p, n, n.inputs.size(), n.dtype); !why.empty()) return why;
    Window w;
    const Shape* bias = n.inputs.size() == 3 ? &p.node(n.inputs[2]).shape : nullptr;
    return convTransposeWindow(n, p.node(n.inputs[0]).shape, p.node(n.inputs[1]).shape, bias, w, n.shape);
  };
  ct.lower = [](Lowering& l, const Node& n, std::span<const Operand> in) -> Expected<Value*> {
    Window w;
    Shape out;
    const Shape* bias = in.size() == 3 ? &in[2].shape : nullptr;
    if (std::string why = convTransposeWindow(n, in[0].shape, in[1].shape, bias, w, out); !why.empty())
      return Error{{}, why};
    return lowerConvTranspose(l, n, in, w);
  };
  ops.push_back(std::move(ct));

  for (auto [name, kind] : {std::pair{"max_pool", Pool::Max}, {"avg_pool", Pool::Avg}, {"lp_pool", Pool::Lp}}) {
    OpDef d;
    d.name = name;
    d.infer = [kind](const Program& p, Node& n) -> std::string {
      Window w;
      if (std::string why = poolWindow(p, n, kind, w); !why.empty()) return why;
      const Node& x = p.node(n.inputs[0]);
      n.dtype = x.dtype;
      n.shape = {x.shape[0], x.shape[1]};
      n.shape.insert(n.shape.end(), w.out.begin(), w.out.end());
      return "";
    };
    d.lower = [kind](Lowering& l, const Node& n, std::span<const Operand> in) -> Expected<Value*> {
      Window w;
      std::vector<int64_t> kernel = n.attrs.ints("kernel_shape");
      if (std::string why = forwardWindow(n, in[0].shape, kernel, n.attrs.i("ceil_mode", 0) != 0, w); !why.empty())
        return Error{{}, why};
      return lowerPool(l, n, in, kind, w);
    };
    ops.push_back(std::move(d));
  }

  // Global pools: over every spatial dimension, keeping them as extent 1.
  for (auto [name, kind] : {std::pair{"global_avg_pool", Pool::Avg}, {"global_max_pool", Pool::Max},
                            {"global_lp_pool", Pool::Lp}}) {
    OpDef d;
    d.name = name;
    d.infer = [kind](const Program& p, Node& n) -> std::string {
      const Node& x = p.node(n.inputs[0]);
      if (x.shape.size() < 2) return n.op + " wants x of rank 2 or more ([N, C, spatial..]), got " + shapeText(x.shape);
      if (kind == Pool::Max ? !(isFloat(x.dtype) || isInt(x.dtype)) : !isFloat(x.dtype))
        return n.op + " wants " + (kind == Pool::Max ? "a numeric" : "a float") + " tensor, not " + dt(x.dtype);
      if (kind == Pool::Lp && n.attrs.i("p", 2) < 1) return n.op + ": p " + num(n.attrs.i("p", 2)) + " must be at least 1";
      n.dtype = x.dtype;
      n.shape = x.shape;
      for (size_t d = 2; d < n.shape.size(); ++d) n.shape[d] = 1;
      return "";
    };
    d.lower = [kind](Lowering& l, const Node& n, std::span<const Operand> in) -> Expected<Value*> {
      const Operand& X = in[0];
      const DType t = n.dtype;
      const int64_t p = n.attrs.i("p", 2);
      Shape spatial(X.shape.begin() + 2, X.shape.end());
      const int64_t count = numel(spatial);
      return mapTop(l, n.op, t, n.shape, in, [&](Kernel& k) {
        Builder& b = k.b;
        std::vector<Value*> xi(X.shape.size(), k.i32(0));
        xi[0] = k.index[0];
        xi[1] = k.index[1];
        Value* base = k.offsetOf(0, xi);
        Value* start = kind == Pool::Max ? k.constant(t, lowest(t)) : k.constant(t, 0);
        ir::Op* loop = b.forOp(k.i32(0), k.i32(count), k.i32(1), {start}, [&](Builder& lb, Value* i, const Values& c) -> Values {
          Value* off = base;
          int64_t inner = 1;
          for (size_t d = spatial.size(); d-- > 0;) {
            if (spatial[d] != 1 && X.strides[d + 2] != 0) {
              Value* q = inner == 1 ? i : lb.div(i, k.i32(inner));
              if (d > 0) q = lb.rem(q, k.i32(spatial[d]));
              off = lb.add(off, mulConst(k, q, X.strides[d + 2]));
            }
            inner *= spatial[d];
          }
          Value* v = loadAt(k, 0, off, t);
          if (kind == Pool::Max) return {maxNaN(k, c[0], v, t)};
          return {lb.add(c[0], kind == Pool::Lp ? lpPow(k, v, p, t) : v)};
        });
        Value* r = loop->result(0);
        if (kind == Pool::Avg) return b.div(r, k.constant(t, double(count)));
        if (kind == Pool::Lp) return lpRoot(k, r, p, t);
        return r;
      }, n.attrs.key());
    };
    ops.push_back(std::move(d));
  }
}

// ---- einsum -----------------------------------------------------------------------------------

// A parsed equation: each input's labels (one per dimension; letters are
// their character codes, the ellipsis's dimensions 256 + j, right-aligned),
// the output's, and each label's extent.
struct Einsum {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  std::map<int, int64_t> extent;
  std::vector<int> summed;
};

std::string parseEinsum(const std::string& eqIn, const std::vector<Shape>& shapes, Einsum& e) {
  std::string eq;
  for (char c : eqIn)
    if (c != ' ') eq += c;
  std::string what = "einsum: equation '" + eqIn + "'";
  size_t arrow = eq.find("->");
  std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  std::vector<std::string> terms;
  size_t pos = 0;
  while (true) {
    size_t comma = lhs.find(',', pos);
    terms.push_back(lhs.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (terms.size() != shapes.size())
    return what + " has " + num(int64_t(terms.size())) + " input terms for " + num(int64_t(shapes.size())) + " inputs";
  // Splits a term into labels and where its ellipsis is (-1: none).
  auto split = [&](const std::string& term, std::vector<int>& letters, int& ell) -> std::string {
    ell = -1;
    for (size_t i = 0; i < term.size(); ++i) {
      if (term.compare(i, 3, "...") == 0) {
        if (ell >= 0) return what + ": '" + term + "' has more than one '...'";
        ell = int(letters.size());
        i += 2;
      } else if (std::isalpha(static_cast<unsigned char>(term[i]))) {
        letters.push_back(term[i]);
      } else {
        return what + ": '" + std::string(1, term[i]) + "' in '" + term + "' is not a letter or '...'";
      }
    }
    return "";
  };
  Shape ellShape;
  bool anyEll = false;
  std::map<int, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::vector<int> letters;
    int ell;
    if (std::string why = split(terms[i], letters, ell); !why.empty()) return why;
    const Shape& s = shapes[i];
    int64_t ellDims = int64_t(s.size()) - int64_t(letters.size());
    if (ell < 0 ? ellDims != 0 : ellDims < 0)
      return what + ": term '" + terms[i] + "' has " + num(int64_t(letters.size())) + " labels for input " + num(int64_t(i)) +
             " of shape " + shapeText(s);
    std::vector<int> labels;
    Shape mine;
    for (size_t j = 0; j < letters.size(); ++j) {
      if (ell == int(j))
        for (int64_t q = 0; q < ellDims; ++q) labels.push_back(-1);
      labels.push_back(letters[j]);
    }
    if (ell == int(letters.size()))
      for (int64_t q = 0; q < ellDims; ++q) labels.push_back(-1);
    if (ell >= 0) anyEll = true;
    for (size_t d = 0; d < labels.size(); ++d)
      if (labels[d] == -1) mine.push_back(s[d]);
    auto b = broadcastShapes(ellShape, mine);
    if (!b) return what + ": the '...' dimensions " + shapeText(mine) + " of input " + num(int64_t(i)) +
                   " cannot be broadcast with " + shapeText(ellShape);
    ellShape = *b;
    for (size_t d = 0; d < labels.size(); ++d) {
      if (labels[d] == -1) continue;
      auto [it, fresh] = e.extent.emplace(labels[d], s[d]);
      if (!fresh && it->second != s[d])
        return what + ": label '" + std::string(1, char(labels[d])) + "' has extents " + num(it->second) + " and " +
               num(s[d]);
      ++count[labels[d]];  // a label repeated in one input (a diagonal) counts twice
    }
    e.inputs.push_back(labels);
  }
  // The ellipsis's dimensions as labels 256 + j (right-aligned to the broadcast shape).
  const int E = int(ellShape.size());
  for (int j = 0; j < E; ++j) e.extent[256 + j] = ellShape[size_t(j)];
  for (auto& labels : e.inputs) {
    int n = int(std::count(labels.begin(), labels.end(), -1)), j = E - n;
    for (int& l : labels)
      if (l == -1) l = 256 + j++;
  }
  if (arrow == std::string::npos) {
    for (int j = 0; j < E; ++j) e.output.push_back(256 + j);
    for (auto [l, c] : count)
      if (c == 1) e.output.push_back(l);
  } else {
    std::vector<int> letters;
    int ell;
    std::string rhs = eq.substr(arrow + 2);
    if (std::string why = split(rhs, letters, ell); !why.empty()) return why;
    if (ell >= 0 && !anyEll) return what + ": the output has '...' but no input does";
    std::set<int> seen;
    for (size_t j = 0; j <= letters.size(); ++j) {
      if (ell == int(j))
        for (int q = 0; q < E; ++q) e.output.push_back(256 + q);
      if (j == letters.size()) break;
      if (!e.extent.count(letters[j]))
        return what + ": the output label '" + std::string(1, char(letters[j])) + "' is in no input";
      if (!seen.insert(letters[j]).second)
        return what + ": the output label '" + std::string(1, char(letters[j])) + "' appears twice";
      e.output.push_back(letters[j]);
    }
  }
  std::set<int> out(e.output.begin(), e.output.end());
  for (auto [l, x] : e.extent)
    if (!out.count(l)) e.summed.push_back(l);
  return "";
}

std::string einsumInfer(const Program& p, Node& n, Einsum& e) {
  if (!n.attrs.has("equation")) return "einsum: equation is required";
  std::vector<Shape> shapes;
  for (uint32_t x : n.inputs) shapes.push_back(p.node(x).shape);
  return parseEinsum(n.attrs.s("equation"), shapes, e);
}

void addEinsum(std::vector<OpDef>& ops) {
  OpDef d;
  d.name = "einsum";
  d.minInputs = 1;
  d.maxInputs = -1;
  d.infer = [](const Program& p, Node& n) -> std::string {
    if (std::string why = numericDtype(p, n, n.dtype); !why.empty()) return why;
    Einsum e;
    if (std::string why = einsumInfer(p, n, e); !why.empty()) return why;
    n.shape.clear();
    for (int l : e.output) n.shape.push_back(e.extent[l]);
    return "";
  };
  d.lower = [](Lowering& l, const Node& n, std::span<const Operand> in) -> Expected<Value*> {
    std::vector<Shape> shapes;
    for (const Operand& o : in) shapes.push_back(o.shape);
    Einsum e;
    if (std::string why = parseEinsum(n.attrs.s("equation"), shapes, e); !why.empty()) return Error{{}, why};
    const DType t = n.dtype;
    return mapTop(l, "einsum", t, n.shape, in, [&](Kernel& k) {
      std::map<int, Value*> value;
      for (size_t d = 0; d < e.output.size(); ++d) value[e.output[d]] = k.index[d];
      // The product of the inputs at the current labels' values.
      auto product = [&]() {
        Value* prod = nullptr;
        for (size_t i = 0; i < in.size(); ++i) {
          std::vector<Value*> idx;
          for (size_t d = 0; d < e.inputs[i].size(); ++d)
            idx.push_back(in[i].shape[d] == 1 ? k.i32(0) : value[e.inputs[i][d]]);
          Value* v = loadAt(k, i, k.offsetOf(i, idx), t);
          prod = prod ? k.b.mul(prod, v) : v;
        }
        return prod;
      };
      // Nested loops over the summed labels.
      std::function<Value*(size_t, Value*)> sumFrom = [&](size_t s, Value* acc) -> Value* {
        if (s == e.summed.size()) return k.b.add(acc, product());
        ir::Op* loop = k.b.forOp(k.i32(0), k.i32(e.extent[e.summed[s]]), k.i32(1), {acc},
                                 [&](Builder&, Value* iv, const Values& c) -> Values {
                                   value[e.summed[s]] = iv;
                                   return {sumFrom(s + 1, c[0])};
                                 });
        return loop->result(0);
      };
      if (e.summed.empty()) return product();
      return sumFrom(0, k.constant(t, 0));
    }, n.attrs.key());
  };
  ops.push_back(std::move(d));
}

// ---- attention --------------------------------------------------------------------------------

// q[.., S, d], k[.., T, d], v[.., T, dv], [mask → [.., S, T]]: the batch shape.
std::string attentionShape(const Program& p, const Node& n, Shape& batch) {
  const Shape& q = p.node(n.inputs[0]).shape;
  const Shape& k = p.node(n.inputs[1]).shape;
  const Shape& v = p.node(n.inputs[2]).shape;
  std::string all = shapeText(q) + ", " + shapeText(k) + " and " + shapeText(v);
  if (q.size() < 2 || k.size() < 2 || v.size() < 2)
    return "attention wants q, k and v of rank 2 or more ([.., S, d], [.., T, d], [.., T, dv]), got " + all;
  if (q.back() != k.back())
    return "attention: q and k have different head sizes: " + all;
  if (k[k.size() - 2] != v[v.size() - 2])
    return "attention: k and v have different lengths: " + all;
  std::optional<Shape> b = Shape{};
  for (const Shape* s : {&q, &k, &v}) {
    if (b) b = broadcastShapes(*b, Shape(s->begin(), s->end() - 2));
  }
  if (!b) return "attention: the batch dimensions of " + all + " cannot be broadcast together";
  batch = *b;
  if (n.inputs.size() == 4) {
    const Node& m = p.node(n.inputs[3]);
    if (m.dtype != DType::Bool && !isFloat(m.dtype))
      return "attention: the mask must be bool (true = keep) or float (added), not " + dt(m.dtype);
    Shape full = batch;
    full.push_back(q[q.size() - 2]);
    full.push_back(k[k.size() - 2]);
    auto s = broadcastShapes(m.shape, full);
    if (!s || *s != full) return "attention: the mask " + shapeText(m.shape) + " cannot be broadcast to " + shapeText(full);
  }
  return "";
}

void addAttention(std::vector<OpDef>& ops) {
  OpDef d;
  d.name = "attention";
  d.minInputs = 3;
  d.maxInputs = 4;
  d.infer = [](const Program& p, Node& n) -> std::string {
    if (std::string why = floatDtype(p, n, 3, n.dtype); !why.empty()) return why;
    Shape batch;
    if (std::string why = attentionShape(p, n, batch); !why.empty()) return why;
    n.shape = batch;
    n.shape.push_back(p.node(n.inputs[0]).shape.end()[-2]);
    n.shape.push_back(p.node(n.inputs[2]).shape.back());
    return "";
  };
  d.lower = [](Lowering& l, const Node& n, std::span<const Operand> in) -> Expected<Value*> {
    const DType t = n.dtype;
    const DType acc = t == DType::F64 ? DType::F64 : DType::F32;
    const size_t r = n.shape.size();
    Shape batch(n.shape.begin(), n.shape.end() - 2);
    const int64_t S = n.shape[r - 2], D = in[0].shape.back(), T = in[1].shape.end()[-2];
    const double scale = n.attrs.f("scale", D > 0 ? 1.0 / std::sqrt(double(D)) : 1.0);
    const bool causal = n.attrs.i("causal", 0) != 0;
    Operand q = withBatch(in[0], batch, 2), kk = withBatch(in[1], batch, 2), v = withBatch(in[2], batch, 2);
    Shape sshape = batch;
    sshape.push_back(S);
    sshape.push_back(T);
    // 1. scores[.., s, t] = scale·q·k (+ mask), −inf where masked.
    std::vector<Operand> ops1 = {q, kk};
    if (in.size() == 4) ops1.push_back(withBatch(in[3], sshape, 0));
    Value* scores = mapTop(l, "attention_scores", acc, sshape, ops1, [&](Kernel& k) {
      Builder& b = k.b;
      std::vector<Value*> qi(k.index.begin(), k.index.end()), ki = qi;
      qi[r - 1] = k.i32(0);
      ki[r - 2] = k.index[r - 1];
      ki[r - 1] = k.i32(0);
      Value* offQ = k.offsetOf(0, qi);
      Value* offK = k.offsetOf(1, ki);
      const int64_t sq = q.strides[r - 1], sk = kk.strides[r - 1];
      ir::Op* loop = b.forOp(k.i32(0), k.i32(D), k.i32(1), {k.constant(acc, 0), offQ, offK},
                             [&](Builder& lb, Value*, const Values& c) -> Values {
                               Value* pr = lb.mul(loadAt(k, 0, c[1], acc), loadAt(k, 1, c[2], acc));
                               return {lb.add(c[0], pr), addConst(k, c[1], sq), addConst(k, c[2], sk)};
                             });
      Value* s = b.mul(loop->result(0), k.constant(acc, scale));
      Value* ninf = k.constant(acc, -INFINITY);
      if (ops1.size() == 3) {
        Value* m = k.b.load(k.buffer(2), k.offsetOf(2, k.index));
        if (ops1[2].dtype == DType::Bool) s = b.select(m, s, ninf);
        else s = b.add(s, k.convert(ops1[2].dtype == DType::F16 ? b.cast(m, k.ctx.f32()) : m, ops1[2].dtype, acc));
      }
      if (causal) s = b.select(b.gt(k.index[r - 1], k.index[r - 2]), ninf, s);
      return s;
    }, n.attrs.key());
    Operand sc = Lowering::contiguous(scores, acc, sshape);
    Shape rshape = batch;
    rshape.push_back(S);
    // 2. the row maximum (0 for a row with nothing kept) and 3. the row sum of exp(score − max).
    std::vector<Operand> ops2 = {sc};
    Value* rmax = mapTop(l, "attention_max", acc, rshape, ops2, [&](Kernel& k) {
      Value* base = k.b.mul(k.linear, k.i32(T));
      ir::Op* loop = k.b.forOp(k.i32(0), k.i32(T), k.i32(1), {k.constant(acc, -INFINITY)},
                               [&](Builder& lb, Value* i, const Values& c) -> Values {
                                 return {lb.max(c[0], lb.load(k.buffer(0), lb.add(base, i)))};
                               });
      Value* m = loop->result(0);
      return k.b.select(k.b.eq(m, k.constant(acc, -INFINITY)), k.constant(acc, 0), m);
    }, num(T));
    Operand mx = Lowering::contiguous(rmax, acc, rshape);
    std::vector<Operand> ops3 = {sc, mx};
    Value* rsum = mapTop(l, "attention_sum", acc, rshape, ops3, [&](Kernel& k) {
      Value* base = k.b.mul(k.linear, k.i32(T));
      Value* m = k.b.load(k.buffer(1), k.linear);
      ir::Op* loop = k.b.forOp(k.i32(0), k.i32(T), k.i32(1), {k.constant(acc, 0)},
                               [&](Builder& lb, Value* i, const Values& c) -> Values {
                                 return {lb.add(c[0], lb.exp(lb.sub(lb.load(k.buffer(0), lb.add(base, i)), m)))};
                               });
      return loop->result(0);
    }, num(T));
    // 4. out[.., s, j] = Σ_t exp(score − max)·v[.., t, j] / sum (0 for a row with nothing kept).
    std::vector<Operand> ops4 = {sc, mx, Lowering::contiguous(rsum, acc, rshape), v};
    Value* out = mapTop(l, "attention_out", t, n.shape, ops4, [&](Kernel& k) {
      Builder& b = k.b;
      Value* row = b.div(k.linear, k.i32(n.shape[r - 1]));
      Value* base = b.mul(row, k.i32(T));
      Value* m = b.load(k.buffer(1), row);
      Value* sum = b.load(k.buffer(2), row);
      std::vector<Value*> vi(k.index.begin(), k.index.end());
      vi[r - 2] = k.i32(0);
      Value* offV = k.offsetOf(3, vi);
      const int64_t sv = v.strides[r - 2];
      ir::Op* loop = b.forOp(k.i32(0), k.i32(T), k.i32(1), {k.constant(acc, 0), offV},
                             [&](Builder& lb, Value* i, const Values& c) -> Values {
                               Value* pr = lb.exp(lb.sub(lb.load(k.buffer(0), lb.add(base, i)), m));
                               return {lb.add(c[0], lb.mul(pr, loadAt(k, 3, c[1], acc))), addConst(k, c[1], sv)};
                             });
      Value* zero = k.constant(acc, 0);
      Value* safe = b.select(b.eq(sum, zero), k.constant(acc, 1), sum);
      return b.div(loop->result(0), safe);
    }, n.attrs.key());
    l.free(scores);
    l.free(rmax);
    l.free(rsum);
    return out;
  };
  ops.push_back(std::move(d));
}

}  // namespace

void addLinalgOps(std::vector<OpDef>& ops) {
  addMatmul(ops);
  addWindowOps(ops);
  addEinsum(ops);
  addAttention(ops);
}

}  // namespace eph::tensor
