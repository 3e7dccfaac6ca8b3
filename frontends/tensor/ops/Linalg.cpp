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

// The blocked kernel's shape: each invocation computes an rm x rn block of C
// (ty x 16 invocations: a ty·rm x 16rn tile), K in steps of kb.
struct BlockShape {
  int64_t rm = 0, rn = 0, kb = 8, ty = 16;
};
Value* blockedMatmul(Lowering& l, DType t, const Operand& a, const Operand& b, const Shape& vshape, BlockShape s,
                     const MatmulParts& parts);

int64_t matmulSplits(const LowerOptions& o, int64_t groups, int64_t kSteps);

// The blocked kernel's shape for a [batch.., M, N] product of dtype t under
// options o; rm 0 when it does not apply (options or dtype).
BlockShape matmulBlockFor(const LowerOptions& o, DType t, const Shape& vshape, int64_t K) {
  const int64_t R = o.matmulBlock;
  if ((R != 4 && R != 8) || (t != DType::F32 && t != DType::F16)) return {};  // f32 sums
  const int64_t kb = o.matmulKStep == 16 ? 16 : 8;
  // 8x8 blocks, unless their 128x128 tiles would leave a big GPU's SMs idle
  // (on the H200, 132 SMs, 1024x1024 = 64 tiles ran 10% faster in 4x4
  // blocks, 2048 and up 1.7x slower: bench/RESULTS.md, 2026-11-27). With
  // split K making at least 128 workgroups of them, 128x128 tiles stay
  // (BERT's 512x768x3072: 0.113 ms in 4x4 blocks, 0.094 in 8x8 blocks and 4
  // parts). Where M (or N) is at most 64, tiles are 64 high (wide) and
  // 16·LowerOptions::matmulWide long the other way; where M is, blocks of
  // matmulWideRows rows (8: 8 x 16 invocations, and tiles 32 high where M is
  // at most 32).
  const size_t r = vshape.size();
  const int64_t M = vshape[r - 2], N = vshape[r - 1];
  const int64_t batches = numel(Shape(vshape.begin(), vshape.end() - 2));
  const int64_t W = o.matmulWide == 8 || o.matmulWide == 16 ? o.matmulWide : 4;
  BlockShape s{4, 4, kb};
  const int64_t tiles128 = ((M + 127) / 128) * ((N + 127) / 128) * batches;
  if (M <= 32 && N > 64 && o.matmulWideRows == 8) s = {4, W, kb, 8};  // 32-row tiles
  else if (M <= 64 && N > 64) s = o.matmulWideRows == 8 && W == 8 ? BlockShape{8, 8, kb, 8} : BlockShape{4, W, kb};
  else if (N <= 64 && M > 64) s = {W, 4, kb};
  else if (R == 8 && M > 64 && (tiles128 >= 128 || tiles128 * matmulSplits(o, tiles128, (K + 7) / 8) >= 128))
    s = {8, 8, kb, o.matmulThreadRows == 8 ? 8 : 16};
  // Two stages of both slices: 2·kb·(ty·rm + 16rn) floats. Within the
  // device's workgroup memory: steps of 8, then shorter blocks.
  auto bytes = [](const BlockShape& b) { return 8 * b.kb * (b.ty * b.rm + 16 * b.rn); };
  if (bytes(s) > int64_t(o.maxWorkgroupMemory)) s.kb = 8;
  while (bytes(s) > int64_t(o.maxWorkgroupMemory) && s.rn > 4) s.rn /= 2;
  while (bytes(s) > int64_t(o.maxWorkgroupMemory) && s.rm > 4) s.rm /= 2, s.ty = 16;
  return s;
}

Value* tiledMatmul(Lowering& l, DType t, const Operand& a, const Operand& b, const Shape& vshape,
                   const MatmulParts& parts) {
  if (!parts.store && !parts.bElement && parts.extra.empty() && coopMatmulApplies(l.opts, t, a, b, vshape))
    return coopMatmul(l, t, a, b, vshape);
  if (BlockShape s = matmulBlockFor(l.opts, t, vshape, a.shape[vshape.size() - 1]); s.rm)
    return blockedMatmul(l, t, a, b, vshape, s, parts);
  if (stripMatmulApplies(l.opts, b, vshape, parts)) return stripMatmul(l, t, a, b, vshape, parts);
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

// ---- the blocked matmul (256 invocations, vec4 reads of workgroup memory) -------------------
//
// The algorithm of bench/ephapax/gemm.eph's sgemm (84-90% of cuBLAS on the
// H200, issue 6) for any strides and edges, with f32 sums: a workgroup of
// TY x 16 invocations (TY 16, or 8 for tiles 64 high) computes a Tm x Tn
// tile of C (Tm = TY·rm, Tn = 16rn), each invocation an rm x rn block of it,
// rows g*4TY + ty*4 + i and columns h*64 + tx*4 + j (g < rm/4, h < rn/4;
// i, j < 4), so that it reads workgroup
// memory as vec4s: (rm + rn)/4 of them per k for rm·rn multiply-adds. K is
// walked in steps of kb (8 or 16): A's Tm x kb slice is staged transposed
// ([k][m/4], vec4s along m) and B's kb x Tn slice as it is ([k][n/4], vec4s
// along n), a vec4 of each by each of the first invocations (or two or four
// by each: kb·Tn/4 vec4s in all), zero past the edges; the next step's slices
// are read into registers while this one's are used. An operand contiguous
// along m (A) or n (B), f32, whose vec4s start at multiples of 4 elements, is
// read from device memory a vec4 at a time. LowerOptions::matmulBlock,
// matmulWide and matmulKStep choose the shape (matmulBlockFor).
//
// Split K: where the tiles (times the batches) are at most half of
// LowerOptions::matmulSplitGroups, each tile's k-steps are divided among S
// workgroups (the most that keep S x tiles within it, at most 4; S divides
// the steps, at least 8 each), which store f32 partial sums [S, batch.., M,
// N]; a second kernel adds the S parts of each element and stores it as the
// single kernel would (parts.store: epilogues, conv's layout). On the H200
// about 400 workgroups was best whatever the tiles (96 tiles in 4 parts, 192
// in 2, 384 in 1); more than 4 parts made one encoder's runs 2x slower on the
// host's clock, cause not found (bench/RESULTS.md).
int64_t matmulSplits(const LowerOptions& o, int64_t groups, int64_t kSteps) {
  if (groups <= 0) return 1;
  for (int64_t s = std::min({int64_t(o.matmulSplitGroups) / groups, kSteps / 8, int64_t(4)}); s > 1; --s)
    if (kSteps % s == 0) return s;
  return 1;
}

// Whether operand `o` (of a product with `batchRank` batch dimensions) is
// read as vec4s along the dimension of stride sMN: f32 in memory, contiguous
// along it, and every vec4 at a multiple of 4 elements (its offset, the
// other stride and the batch strides multiples of 4; the tile's rows or
// columns start at multiples of 4), all four in or all out of `extent`.
bool vec4Reads(const LowerOptions& o, const Operand& op, size_t batchRank, int64_t sMN, int64_t sK, int64_t extent) {
  if (!o.matmulVectorLoads || op.dtype != DType::F32 || sMN != 1 || sK % 4 != 0 || op.offset % 4 != 0 ||
      extent % 4 != 0)
    return false;
  for (size_t d = 0; d < batchRank; ++d)
    if (op.strides[d] % 4 != 0) return false;
  return true;
}

Value* blockedMatmul(Lowering& l, DType t, const Operand& a, const Operand& b, const Shape& vshape, BlockShape shape,
                     const MatmulParts& parts) {
  const size_t r = vshape.size();
  const int64_t M = vshape[r - 2], N = vshape[r - 1], K = a.shape[r - 1];
  const int64_t batches = numel(Shape(vshape.begin(), vshape.end() - 2));
  const int64_t rm = shape.rm, rn = shape.rn, KB = shape.kb, TY = shape.ty, threads = 16 * TY;
  const int64_t Tm = TY * rm, Tn = 16 * rn, Qa = Tm / 4, Qb = Tn / 4, kAll = (K + KB - 1) / KB;
  const int64_t tilesM = (M + Tm - 1) / Tm, tilesN = (N + Tn - 1) / Tn;
  const int64_t S = matmulSplits(l.opts, tilesM * tilesN * batches, kAll);
  const bool warpTiles = l.opts.matmulWarpTiles && TY % 4 == 0;
  const int64_t G = std::clamp<int64_t>(l.opts.matmulGroupRows, 1, tilesM);  // tiles' rows a group
  const int64_t kSteps = kAll / S;  // this workgroup's
  std::vector<Operand> in = {a, b};
  in.insert(in.end(), parts.extra.begin(), parts.extra.end());
  // With M and N multiples of the tile and K of the step (shapes are
  // static), no element is outside: no bounds checks at all.
  const bool exact = M % Tm == 0 && N % Tn == 0 && K % KB == 0;
  auto kFastest = [&](int64_t sMN, int64_t sK) { return sK == 1 || (sMN != 1 && std::abs(sK) < std::abs(sMN)); };
  const bool aAlongK = kFastest(a.strides[r - 2], a.strides[r - 1]);
  const bool bAlongK = !parts.bElement && kFastest(b.strides[r - 1], b.strides[r - 2]);
  const bool aVec = vec4Reads(l.opts, a, r - 2, a.strides[r - 2], a.strides[r - 1], M);
  const bool bVec = !parts.bElement && vec4Reads(l.opts, b, r - 2, b.strides[r - 1], b.strides[r - 2], N);
  auto build = [&](Builder& bb, const std::vector<Value*>& bufs) {
    ir::Context& ctx = l.ctx;
    const std::vector<Value*> inBufs(bufs.begin(), bufs.end() - 1);
    Kernel k(bb, ctx, in, inBufs);
    const ir::Type* f32 = ctx.f32();
    const ir::Type* v4 = ctx.vectorType(f32, 4);
    Value* As = bb.workgroupAlloc(v4, 2 * KB * Qa);  // two stages of [k][m/4]
    Value* Bs = bb.workgroupAlloc(v4, 2 * KB * Qb);  // two stages of [k][n/4]
    Value* lid = bb.localId(0, ctx.i32());
    // Invocation (ty, tx) of the TY x 16 grid. With LowerOptions::
    // matmulWarpTiles each 32 consecutive invocations (a subgroup on NVIDIA)
    // form a 4 x 8 patch of it, so that a step's reads of workgroup memory
    // touch 4 of A's vec4s and 8 of B's (one 128-byte access each) instead of
    // 2 and 16 (a row of 16: two accesses for B).
    Value *tx, *ty;
    if (warpTiles) {
      Value* w = bb.div(lid, k.i32(32));
      Value* inW = bb.rem(lid, k.i32(32));
      ty = bb.add(bb.mul(bb.div(w, k.i32(2)), k.i32(4)), bb.div(inW, k.i32(8)));
      tx = bb.add(bb.mul(bb.rem(w, k.i32(2)), k.i32(8)), bb.rem(inW, k.i32(8)));
    } else {
      tx = bb.rem(lid, k.i32(16));
      ty = bb.div(lid, k.i32(16));
    }
    Value* gx = bb.workgroupId(0, ctx.i32());
    Value* gz = bb.workgroupId(2, ctx.i32());  // batch
    Value* split = S > 1 ? bb.div(gx, k.i32(tilesM * tilesN)) : nullptr;  // which part of K
    if (split) gx = bb.rem(gx, k.i32(tilesM * tilesN));
    // Tiles in groups of G rows, each group's tiles column by column, so that
    // the workgroups running at once share rows of A and columns of B in the
    // L2 cache (LowerOptions::matmulGroupRows; G = 1: row by row).
    Value *tileM, *tileN;
    if (G == 1) {
      tileM = bb.div(gx, k.i32(tilesN));
      tileN = bb.rem(gx, k.i32(tilesN));
    } else {
      Value* group = bb.div(gx, k.i32(G * tilesN));
      Value* within = bb.rem(gx, k.i32(G * tilesN));
      Value* first = bb.mul(group, k.i32(G));
      Value* rows = bb.min(bb.sub(k.i32(tilesM), first), k.i32(G));  // G but in the last group
      tileM = bb.add(first, bb.rem(within, rows));
      tileN = bb.div(within, rows);
    }
    Value* row0 = bb.mul(tileM, k.i32(Tm));
    Value* col0 = bb.mul(tileN, k.i32(Tn));
    const auto [baseA, baseB, sam, sak, sbk, sbn] = operandBases(k, gz, a, b, vshape, parts);
    // Staging: an operand's slice is KB·Q vec4s, vec4 v holding one k at
    // four rows (A) or columns (B), q·4 + {0..3}. Invocation lid stages
    // v = lid + p·threads (p < ceil(KB·Q / threads); where KB·Q < threads
    // only the first KB·Q invocations store: the others read v mod KB·Q, in
    // bounds).
    // Neighbouring invocations read neighbouring memory: k = v % KB,
    // q = v / KB where the operand is contiguous along k (A row-major, B
    // transposed: attention's q·kᵀ), else q = v % Q, k = v / Q.
    struct Slot {
      Value* k;
      Value* q;
    };
    auto slots = [&](int64_t Q, bool alongK) {
      std::vector<Slot> out;
      for (int64_t p = 0; p * threads < KB * Q; ++p) {
        Value* v = KB * Q < threads ? bb.rem(lid, k.i32(KB * Q)) : addConst(k, lid, threads * p);
        out.push_back(alongK ? Slot{bb.rem(v, k.i32(KB)), bb.div(v, k.i32(KB))}
                             : Slot{bb.div(v, k.i32(Q)), bb.rem(v, k.i32(Q))});
      }
      return out;
    };
    const std::vector<Slot> aSlots = slots(Qa, aAlongK), bSlots = slots(Qb, bAlongK);
    Value* zero = bb.constFloat(f32, 0);
    // The four elements (row or column `first` + e) of one operand's slice, zero outside.
    auto read4 = [&](Builder& b, size_t op, Value* gk, Value* first, int64_t limit, int64_t sMN, int64_t sK,
                     Value* base, bool vec) {
      Kernel at(b, ctx, in, inBufs);
      Value* inK = exact ? nullptr : b.lt(gk, k.i32(K));
      const bool four = op == 1 && parts.bElements4;
      if (vec || four) {  // all four in or all out (limit % 4 == 0)
        Value* ok = exact ? nullptr : b.and_(inK, b.lt(first, k.i32(limit)));
        Value* g = ok ? b.select(ok, first, k.i32(0)) : first;
        Value* gkIn = ok ? b.select(ok, gk, k.i32(0)) : gk;
        Values e;
        if (four) {
          e = parts.bElements4(at, gz, gkIn, g);
        } else {
          Value* v = b.vecLoad(k.buffer(op), b.div(b.add(base, b.add(g, mulConst(k, gkIn, sK))), k.i32(4)), 4);
          if (!ok) return v;
          for (unsigned q = 0; q < 4; ++q) e.push_back(b.vecExtract(v, q));
        }
        if (ok)
          for (Value*& x : e) x = b.select(ok, x, zero);
        return b.vecMake(e);
      }
      Values e;
      for (int64_t q = 0; q < 4; ++q) {
        Value* g = addConst(k, first, q);
        Value* ok = exact ? nullptr : b.and_(inK, b.lt(g, k.i32(limit)));
        Value* gIn = ok ? b.select(ok, g, k.i32(0)) : g;
        Value* gkIn = ok ? b.select(ok, gk, k.i32(0)) : gk;
        Value* v = op == 1 && parts.bElement
                       ? parts.bElement(at, gz, gkIn, gIn)
                       : loadAt(at, op, b.add(base, b.add(mulConst(k, gIn, sMN), mulConst(k, gkIn, sK))), t);
        e.push_back(ok ? b.select(ok, v, zero) : v);
      }
      return b.vecMake(e);
    };
    // The slices of k-step `ks` (an i32), into registers: A's vec4s, then B's.
    auto read = [&](Builder& b, Value* ks) {
      Value* k0 = b.mul(split ? b.add(ks, b.mul(split, k.i32(kSteps))) : ks, k.i32(KB));
      Values out;
      for (const Slot& s : aSlots)
        out.push_back(read4(b, 0, b.add(k0, s.k), b.add(row0, b.mul(s.q, k.i32(4))), M, sam, sak, baseA, aVec));
      for (const Slot& s : bSlots)
        out.push_back(read4(b, 1, b.add(k0, s.k), b.add(col0, b.mul(s.q, k.i32(4))), N, sbn, sbk, baseB, bVec));
      return out;
    };
    // Workgroup memory holds two stages of both slices: while one is read, the
    // next k-step's slices go into the other, so one barrier per step both
    // publishes them and ends the reads of the stage written next.
    auto stage = [&](Builder& b, const Values& v, int64_t s) {
      auto put = [&](Builder& ib, Value* mem, const std::vector<Slot>& sl, int64_t Q, size_t first) {
        for (size_t p = 0; p < sl.size(); ++p)
          ib.store(mem, addConst(k, ib.add(ib.mul(sl[p].k, k.i32(Q)), sl[p].q), s * KB * Q), v[first + p]);
      };
      auto guarded = [&](Value* mem, const std::vector<Slot>& sl, int64_t Q, size_t first) {
        if (KB * Q < threads)
          b.ifOp(b.lt(lid, k.i32(KB * Q)), {}, [&](Builder& ib) { put(ib, mem, sl, Q, first); });
        else
          put(b, mem, sl, Q, first);
      };
      guarded(As, aSlots, Qa, 0);
      guarded(Bs, bSlots, Qb, aSlots.size());
    };
    // The KB multiply-add steps of stage s on the accumulators.
    auto multiply = [&](Builder& b, const Values& c, int64_t s) {
      ir::Op* inner = b.forOp(k.i32(0), k.i32(KB), k.i32(1), c, [&](Builder& ib, Value* kk, const Values& acc) -> Values {
        Value* atA = addConst(k, ib.mul(kk, k.i32(Qa)), s * KB * Qa);
        Value* atB = addConst(k, ib.mul(kk, k.i32(Qb)), s * KB * Qb);
        Values av, bv;
        for (int64_t g = 0; g < rm / 4; ++g) {
          Value* va = ib.load(As, ib.add(atA, addConst(k, ty, g * TY)));
          for (unsigned e = 0; e < 4; ++e) av.push_back(ib.vecExtract(va, e));
        }
        for (int64_t h = 0; h < rn / 4; ++h) {
          Value* vb = ib.load(Bs, ib.add(atB, addConst(k, tx, h * 16)));
          for (unsigned e = 0; e < 4; ++e) bv.push_back(ib.vecExtract(vb, e));
        }
        Values next;
        for (int64_t i = 0; i < rm; ++i)
          for (int64_t j = 0; j < rn; ++j)
            next.push_back(ib.add(acc[size_t(i * rn + j)], ib.mul(av[size_t(i)], bv[size_t(j)])));
        return next;
      });
      Values out;
      for (size_t i = 0; i < c.size(); ++i) out.push_back(inner->result(unsigned(i)));
      return out;
    };
    stage(bb, read(bb, k.i32(0)), 0);
    bb.barrier();
    // Two k-steps per trip (stage 0, then stage 1), so that the stage offsets
    // are constants (with the stage in a variable the NVIDIA driver used 151
    // registers instead of 128: bench/RESULTS.md, sgemm_db_cur); an odd last
    // step after the loop. The trip count times num_workgroups.y (always 1)
    // is a bound the shader compiler cannot see, so that it does not unroll
    // the whole K loop.
    Value* trips = bb.mul(k.i32(kSteps / 2), bb.numWorkgroups(1, ctx.i32()));
    Value* last = k.i32(kSteps - 1);
    ir::Op* loop = bb.forOp(k.i32(0), trips, k.i32(1), Values(size_t(rm * rn), zero),
                            [&](Builder& b, Value* trip, const Values& c) -> Values {
      Value* step = b.mul(trip, k.i32(2));
      Values next = read(b, b.min(b.add(step, k.i32(1)), last));
      Values acc = multiply(b, c, 0);
      stage(b, next, 1);
      b.barrier();
      Values after = read(b, b.min(b.add(step, k.i32(2)), last));
      acc = multiply(b, acc, 1);
      stage(b, after, 0);
      b.barrier();
      return acc;
    });
    Values acc;
    for (unsigned i = 0; i < unsigned(rm * rn); ++i) acc.push_back(loop->result(i));
    if (kSteps % 2) acc = multiply(bb, acc, 0);
    Value* out = bufs.back();
    const bool partial = S > 1;  // f32 sums of this part of K at [split, batch, m, n]
    const ir::Type* storage = partial ? f32 : irType(ctx, parts.store ? parts.outType : t);
    Value* obase = bb.mul(partial ? bb.add(bb.mul(split, k.i32(batches)), gz) : gz, k.i32(M * N));
    for (int64_t i = 0; i < rm; ++i)
      for (int64_t j = 0; j < rn; ++j) {
        Value* gm = bb.add(row0, addConst(k, bb.mul(ty, k.i32(4)), (i / 4) * 4 * TY + i % 4));
        Value* gn = bb.add(col0, addConst(k, bb.mul(tx, k.i32(4)), (j / 4) * 64 + j % 4));
        auto put = [&](Builder& ib) {
          Kernel at(ib, ctx, in, inBufs);
          Value* v = acc[size_t(i * rn + j)];
          Value* off = nullptr;
          if (parts.store && !partial) std::tie(v, off) = parts.store(at, gz, gm, gn, v);
          else off = ib.add(obase, ib.add(ib.mul(gm, k.i32(N)), gn));
          if (v->type() != storage) v = ib.cast(v, storage);
          ib.store(out, off, v);
        };
        if (exact) put(bb);
        else bb.ifOp(bb.and_(bb.lt(gm, k.i32(M)), bb.lt(gn, k.i32(N))), {}, put);
      }
  };
  const DType outType = parts.store ? parts.outType : t;
  const int64_t count = parts.store ? parts.outCount : numel(vshape);
  // Everything the kernel's code depends on beyond the operands' layouts.
  const std::string key = shapeText(vshape) + "|B" + std::to_string(rm) + "x" + std::to_string(rn) + "k" +
                          std::to_string(KB) + "t" + std::to_string(TY) + "g" + std::to_string(G) +
                          (warpTiles ? "w" : "") + (aVec ? "va" : "") + (bVec ? "vb" : "") + "|" + parts.key;
  const std::array<unsigned, 3> wgSize = {unsigned(threads), 1, 1};
  if (S == 1) return l.custom("matmul_blocked", outType, count, in, wgSize, {tilesM * tilesN, 1, batches}, build, key);
  const int64_t MN = batches * M * N;
  Value* sums = l.custom("matmul_blocked", DType::F32, S * MN, in, wgSize, {tilesM * tilesN * S, 1, batches}, build,
                         key + "|split" + std::to_string(S));
  // The sum of the S parts of each element, stored as the single kernel stores it.
  std::vector<Operand> sumIn = in;
  sumIn.push_back(Lowering::contiguous(sums, DType::F32, {S * MN}));
  const auto [gx, gy] = l.grid((MN + 255) / 256);
  auto add = [&](Builder& bb, const std::vector<Value*>& bufs) {
    ir::Context& ctx = l.ctx;
    const std::vector<Value*> inBufs(bufs.begin(), bufs.end() - 1);
    Kernel k(bb, ctx, sumIn, inBufs);
    Value* group = bb.add(bb.mul(bb.workgroupId(1, ctx.i32()), k.i32(gx)), bb.workgroupId(0, ctx.i32()));
    Value* lin = bb.add(bb.mul(group, k.i32(256)), bb.localId(0, ctx.i32()));
    bb.ifOp(bb.lt(lin, k.i32(MN)), {}, [&](Builder& ib) {
      Value* v = ib.load(inBufs.back(), lin);
      for (int64_t s = 1; s < S; ++s) v = ib.add(v, ib.load(inBufs.back(), addConst(k, lin, s * MN)));
      Value* off = lin;
      if (parts.store) {
        Kernel at(ib, ctx, sumIn, inBufs);
        Value* batch = ib.div(lin, k.i32(M * N));
        std::tie(v, off) = parts.store(at, batch, ib.rem(ib.div(lin, k.i32(N)), k.i32(M)), ib.rem(lin, k.i32(N)), v);
      }
      const ir::Type* storage = irType(ctx, outType);
      if (v->type() != storage) v = ib.cast(v, storage);
      ib.store(bufs.back(), off, v);
    });
  };
  Value* out = l.custom("matmul_split_sum", outType, count, sumIn, {256, 1, 1}, {gx, gy, 1}, add,
                        key + "|split" + std::to_string(S));
  l.free(sums);
  return out;
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
