// Linalg ops: matmul, gemm and einsum (docs/tensor.md, "Linear
// algebra, convolution and pooling"; conv, conv_transpose and pooling are in
// Conv.cpp and attention in Attention.cpp, with the kernel helpers of LinalgKernels.h). Sums accumulate in the compute type (f32 for
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
#include "frontends/tensor/ops/LinalgKernels.h"

namespace eph::tensor {

namespace {

using ir::Builder;
using ir::Value;
using ir::Values;

}  // namespace

// Shared with ops/Conv.cpp (LinalgKernels.h).
namespace linalg {

std::string dt(DType t) { return std::string(dtypeName(t)); }
std::string num(int64_t v) { return std::to_string(v); }

// ---- kernel helpers ---------------------------------------------------------------------------

// (LinalgKernels.h)
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

std::pair<Value*, Value*> tileOrder(Kernel& k, Value* t, int64_t tilesM, int64_t tilesN, int64_t g) {
  ir::Builder& b = k.b;
  g = std::clamp<int64_t>(g, 1, tilesM);
  if (g == 1) return {b.div(t, k.i32(tilesN)), b.rem(t, k.i32(tilesN))};
  Value* group = b.div(t, k.i32(g * tilesN));
  Value* within = b.rem(t, k.i32(g * tilesN));
  Value* first = b.mul(group, k.i32(g));
  Value* rows = b.min(b.sub(k.i32(tilesM), first), k.i32(g));  // g but in the last group
  return {b.add(first, b.rem(within, rows)), b.div(within, rows)};
}

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

// Batch number `batch` (a product's z) as an index of `vshape`'s batch
// dimensions ([batch.., M, N]): one i32 each, then 0 for M and N.
std::vector<Value*> batchIndex(Kernel& k, Value* batch, const Shape& vshape) {
  const size_t r = vshape.size();
  std::vector<Value*> idx(r, k.i32(0));
  Shape batchShape(vshape.begin(), vshape.end() - 2);
  std::vector<int64_t> bcs = contiguousStrides(batchShape);
  for (size_t d = 0; d + 2 < r; ++d) {
    Value* q = bcs[d] == 1 ? batch : k.b.div(batch, k.i32(bcs[d]));
    idx[d] = d == 0 ? q : k.b.rem(q, k.i32(batchShape[d]));
  }
  return idx;
}

OperandBases operandBases(Kernel& k, Value* batch, const Operand& a, const Operand& b, const Shape& vshape,
                          const MatmulParts& parts) {
  const size_t r = vshape.size();
  std::vector<Value*> bidx = batchIndex(k, batch, vshape);
  if (parts.bElement) return {k.offsetOf(0, bidx), nullptr, a.strides[r - 2], a.strides[r - 1], 0, 0};
  return {k.offsetOf(0, bidx), k.offsetOf(1, bidx), a.strides[r - 2], a.strides[r - 1], b.strides[r - 2],
          b.strides[r - 1]};
}

Value* tiledMatmul(Lowering& l, DType t, const Operand& a, const Operand& b, const Shape& vshape,
                   const MatmulParts& parts) {
  if (!parts.store && !parts.bElement && parts.extra.empty() && coopMatmulApplies(l.opts, t, a, b, vshape))
    return coopMatmul(l, t, a, b, vshape);
  if (BlockShape s = matmulBlockFor(l.opts, t, vshape, a.shape[vshape.size() - 1]); s.rm)
    return blockedMatmul(l, t, a, b, vshape, s, parts);
  if (stripMatmulApplies(l.opts, t, b, vshape, parts)) return stripMatmul(l, t, a, b, vshape, parts);
  if (l.opts.matmulLanes && l.opts.matmulRows && !parts.bElement && vshape[vshape.size() - 2] >= 16) {
    // B read across N (attention's q·kᵀ): copied contiguous first, so that
    // the lanes' loads are vectors again (B's K·N elements, against M·N·K
    // multiply-adds).
    Value* copy = l.map("matmul_b", b.dtype, b.shape, std::span(&b, 1), [](Kernel& k) { return k.load(0, k.index); }, "");
    Value* out = stripMatmul(l, t, a, Lowering::contiguous(copy, b.dtype, b.shape), vshape, parts);
    l.free(copy);
    return out;
  }
  const size_t r = vshape.size();
  const int64_t M = vshape[r - 2], N = vshape[r - 1], K = a.shape[r - 1];
  const int64_t batches = numel(Shape(vshape.begin(), vshape.end() - 2));
  const int64_t tilesM = (M + kTile - 1) / kTile, tilesN = (N + kTile - 1) / kTile;
  std::vector<Operand> in = {a, b};
  in.insert(in.end(), parts.extra.begin(), parts.extra.end());
  const ir::Type* acc = computeType(l.ctx, t);
  auto build = [&](Builder& bb, const std::vector<Value*>& bufs) {
    ir::Context& ctx = l.ctx;
    const std::vector<Value*> inBufs(bufs.begin(), bufs.end() - 1);
    Kernel k(bb, ctx, in, inBufs);
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
    const auto [baseA, baseB, sam, sak, sbk, sbn] = operandBases(k, gz, a, b, vshape, parts);
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
        Value* gkIn = b.select(okB, gk, k.i32(0));
        Value* gnIn = b.select(okB, gnB, k.i32(0));
        Value* bv = parts.bElement ? parts.bElement(k, gz, gkIn, gnIn)
                                   : loadAt(k, 1, b.add(baseB, b.add(mulConst(k, gkIn, sbk), mulConst(k, gnIn, sbn))), t);
        b.store(Bs, b.add(b.mul(bk, k.i32(kTile)), bnB), b.select(okB, bv, zero));
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
    const ir::Type* storage = irType(ctx, parts.store ? parts.outType : t);
    Value* obase = bb.mul(gz, k.i32(M * N));
    for (int64_t i = 0; i < kPer; ++i)
      for (int64_t j = 0; j < kPer; ++j) {
        Value* gm = bb.add(row0, addConst(k, ty, i * kThreads));
        Value* gn = bb.add(col0, addConst(k, tx, j * kThreads));
        Value* ok = bb.and_(bb.lt(gm, k.i32(M)), bb.lt(gn, k.i32(N)));
        bb.ifOp(ok, {}, [&](Builder& ib) {
          Kernel at(ib, ctx, in, inBufs);
          Value* v = steps->result(unsigned(i * kPer + j));
          Value* off = nullptr;
          if (parts.store) std::tie(v, off) = parts.store(at, gz, gm, gn, v);
          else off = ib.add(obase, ib.add(ib.mul(gm, k.i32(N)), gn));
          if (v->type() != storage) v = ib.cast(v, storage);
          ib.store(out, off, v);
        });
      }
  };
  return l.custom("matmul_tiled", parts.store ? parts.outType : t, parts.store ? parts.outCount : numel(vshape), in,
                  {unsigned(kThreads), unsigned(kThreads), 1}, {tilesM * tilesN, 1, batches}, build,
                  shapeText(vshape) + "|" + parts.key);
}

// Whether the tiled kernel is worth it (and fits the grid: batches in z).
bool useTiled(const Shape& vshape, int64_t K) {
  const size_t r = vshape.size();
  const int64_t M = vshape[r - 2], N = vshape[r - 1];
  const int64_t batches = numel(Shape(vshape.begin(), vshape.end() - 2));
  const int64_t tiles = ((M + kTile - 1) / kTile) * ((N + kTile - 1) / kTile);
  return M >= 32 && N >= 32 && K >= 16 && tiles <= 65535 && batches <= 65535 && batches * M * N > 0;
}

}  // namespace linalg

namespace {

using namespace linalg;

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

// Epilogues: the blocked kernel computes matmul n's elementwise reader r
// (inputs rIn, one of whose operand trees holds n's sums as an accumulator)
// where it would store the sums: bias, activation, residual in one kernel.
// Only where r has the product's shape and both operands are matrices or
// batches of them (n.shape is then [batch.., M, N]).
bool matmulTakesEpilogue(const Program& p, const Node& n, const LowerOptions&) {
  const Shape& a = p.node(n.inputs[0]).shape;
  const Shape& b = p.node(n.inputs[1]).shape;
  if (a.size() < 2 || b.size() < 2 || (n.dtype != DType::F32 && n.dtype != DType::F16)) return false;  // f32 sums
  return useTiled(n.shape, a.back());
}

Expected<Value*> lowerMatmulWithEpilogue(Lowering& l, const Node& n, std::span<const Operand> in, const Node& r,
                                         std::span<const Operand> rIn) {
  MatmulShape m;
  Shape vshape;
  if (std::string why = matmulShape("matmul", in[0].shape, in[1].shape, m, vshape); !why.empty()) return Error{{}, why};
  auto [a, b] = matmulOperands(in[0], in[1], m);
  const OpDef* rdef = findOp(r.op);
  MatmulParts parts;
  parts.extra = leafOperands(rIn);
  const size_t extras = parts.extra.size();
  parts.store = [&](Kernel& k, Value* batch, Value* row, Value* col, Value* v) -> std::pair<Value*, Value*> {
    Builder& bb = k.b;
    std::vector<Value*> leaves;
    for (size_t e = 0; e < extras; ++e) leaves.push_back(k.buffer(2 + e));
    Kernel ek(bb, k.ctx, std::vector<Operand>(rIn.begin(), rIn.end()), leaves);
    ek.index = batchIndex(k, batch, vshape);
    ek.index[vshape.size() - 2] = row;
    ek.index[vshape.size() - 1] = col;
    ek.linear = bb.add(bb.mul(bb.add(bb.mul(batch, k.i32(m.M)), row), k.i32(m.N)), col);
    ek.accumulator = v;
    return {rdef->element(ek, r, rIn), ek.linear};
  };
  parts.outType = r.dtype;
  parts.outCount = numel(r.shape);
  parts.key = "epilogue " + r.op + "{" + r.attrs.key() + "}" + std::string(dtypeName(r.dtype)) + kernelInputs(rIn).key;
  return tiledMatmul(l, n.dtype, a, b, vshape, parts);
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
  d.takesEpilogue = matmulTakesEpilogue;
  d.lowerWithEpilogue = lowerMatmulWithEpilogue;
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
    const bool withC = ops.size() == 3 && beta != 0.0;
    if (useTiled(n.shape, ops[0].shape[1])) {
      if (alpha == 1.0 && !withC) return tiledMatmul(l, t, ops[0], ops[1], n.shape);
      // alpha and beta·C (broadcast to [M, N]) where the tiled kernel stores.
      MatmulParts parts;
      if (withC) parts.extra.push_back(ops[2]);
      const int64_t N = n.shape[1];
      parts.store = [&](Kernel& k, Value*, Value* m, Value* col, Value* v) -> std::pair<Value*, Value*> {
        Builder& b = k.b;
        if (alpha != 1.0) v = b.mul(v, k.constant(t, alpha));
        if (withC) {
          const Shape& cs = ops[2].shape;
          std::vector<Value*> idx;
          if (cs.size() == 2) idx.push_back(cs[0] == 1 ? k.i32(0) : m);
          if (!cs.empty()) idx.push_back(cs.back() == 1 ? k.i32(0) : col);
          Value* c = loadAt(k, 2, k.offsetOf(2, idx), t);
          v = b.add(v, beta == 1.0 ? c : b.mul(c, k.constant(t, beta)));
        }
        return {v, b.add(b.mul(m, k.i32(N)), col)};
      };
      parts.outType = t;
      parts.outCount = numel(n.shape);
      parts.key = "gemm|" + n.attrs.key() + (withC ? "|c" : "");
      return tiledMatmul(l, t, ops[0], ops[1], n.shape, parts);
    }
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

}  // namespace

void addLinalgOps(std::vector<OpDef>& ops) {
  addMatmul(ops);
  addEinsum(ops);
}

}  // namespace eph::tensor
