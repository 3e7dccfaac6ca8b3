// The attention op: softmax(scale·q·kᵀ + mask)·v (docs/tensor.md, "Linear
// algebra, convolution and pooling"): where invocations are vector lanes (the
// cpu target) one strip kernel; on GPUs one kernel with register tiles where
// its shapes allow, else one flash-style kernel of a row an invocation for
// heads up to kOnePassHead, four kernels for wider ones. And attentionFromParts, which
// lowers the op's parts (matmul, scale, mask, softmax, matmul) as the op.
// Kernel helpers from LinalgKernels.h.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"
#include "frontends/tensor/ops/LinalgKernels.h"

namespace eph::tensor {

namespace {

using ir::Builder;
using ir::Value;
using ir::Values;
using namespace linalg;

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

// Heads of at most this many elements (q's and v's) take the one-pass kernel.
constexpr int64_t kOnePassHead = 128;
constexpr int64_t kKeyBlock = 16;  // keys a block (the staged one-pass kernel; 8, 32 and 64: bench/RESULTS.md)

// attention in one kernel, flash-style: one invocation per query row (batch
// and s) keeps q's row and the output row in registers and walks the keys
// once with an online softmax: for each t, the score s_t (scaled, masked),
// the running maximum m' = max(m, s_t), then sum = sum·e^(m−m') + e^(s_t−m')
// and out_j = out_j·e^(m−m') + e^(s_t−m')·v[t, j]; at the end out_j / sum (0
// for a row with nothing kept: m stays −inf). The scores never exist in
// memory. Invocations of one workgroup are neighbouring rows of one batch, so
// they read the same k and v rows together. When every workgroup's 64 rows
// belong to one batch (S a multiple of 64), the keys go in blocks of
// kKeyBlock: the workgroup copies a block of k and v rows into workgroup
// memory once, and each invocation reads them from there (one copy per 64
// rows instead of one read per row).
Value* onePassAttention(Lowering& l, const Node& n, const Operand& q, const Operand& kk, const Operand& v,
                        const std::optional<Operand>& mask, double scale, bool causal) {
  const DType t = n.dtype;
  const DType acc = t == DType::F64 ? DType::F64 : DType::F32;
  const size_t r = n.shape.size();
  const int64_t S = n.shape[r - 2], DV = n.shape[r - 1], D = q.shape[r - 1], T = kk.shape[r - 2];
  const int64_t rows = numel(Shape(n.shape.begin(), n.shape.end() - 1));
  const int64_t wg = 64;
  std::vector<Operand> in = {q, kk, v};
  if (mask) in.push_back(*mask);
  const auto [gx, gy] = l.grid((rows + wg - 1) / wg);
  const bool staged = S % wg == 0;  // every workgroup within one batch: no row past the end either
  auto build = [&](Builder& bb, const std::vector<Value*>& bufs) {
    ir::Context& ctx = l.ctx;
    const std::vector<Value*> inBufs(bufs.begin(), bufs.end() - 1);
    Kernel k(bb, ctx, in, inBufs);
    const ir::Type* accT = computeType(ctx, acc);
    Value* Ks = staged ? bb.workgroupAlloc(accT, kKeyBlock * D) : nullptr;
    Value* Vs = staged ? bb.workgroupAlloc(accT, kKeyBlock * DV) : nullptr;
    Value* lid = bb.localId(0, ctx.i32());
    Value* row = bb.add(bb.mul(bb.add(bb.mul(bb.workgroupId(1, ctx.i32()), k.i32(gx)), bb.workgroupId(0, ctx.i32())),
                               k.i32(wg)),
                        lid);
    auto rowBody = [&](Builder& ib) {
      Kernel kb(ib, ctx, in, inBufs);
      // The row's index: batch dimensions, then s.
      std::vector<Value*> idx(r, kb.i32(0));
      Value* rest = row;
      for (size_t d = r - 1; d-- > 0;) {
        const int64_t extent = n.shape[d];
        idx[d] = d == 0 ? rest : ib.rem(rest, kb.i32(extent));
        if (d > 0) rest = ib.div(rest, kb.i32(extent));
      }
      Value* sIdx = idx[r - 2];
      Values qv;
      {
        std::vector<Value*> qi = idx;
        qi[r - 1] = kb.i32(0);
        Value* base = kb.offsetOf(0, qi);
        for (int64_t d = 0; d < D; ++d) qv.push_back(loadAt(kb, 0, addConst(kb, base, d * q.strides[r - 1]), acc));
      }
      std::vector<Value*> ki = idx, vi = idx, mi = idx;
      ki[r - 2] = vi[r - 2] = kb.i32(0);
      ki[r - 1] = vi[r - 1] = mi[r - 1] = kb.i32(0);
      Value* kBase = kb.offsetOf(1, ki);
      Value* vBase = kb.offsetOf(2, vi);
      Value* mBase = mask ? kb.offsetOf(3, mi) : nullptr;
      Value* zero = kb.constant(acc, 0);
      Value* ninf = kb.constant(acc, -INFINITY);
      Values init = {ninf, zero};  // m, sum, then out_0..out_DV-1
      for (int64_t j = 0; j < DV; ++j) init.push_back(zero);
      // Key tt's update of c (m, sum, out..), k's and v's elements from kAt(d) and vAt(j).
      auto update = [&](Builder& lb, Value* tt, const Values& c, const std::function<Value*(Builder&, int64_t)>& kAt,
                        const std::function<Value*(Builder&, int64_t)>& vAt) -> Values {
        Kernel kl(lb, ctx, in, inBufs);
        Value* dot = zero;
        for (int64_t d = 0; d < D; ++d) dot = lb.add(dot, lb.mul(qv[size_t(d)], kAt(lb, d)));
        Value* sc = lb.mul(dot, kl.constant(acc, scale));
        if (mask) {
          Value* at = lb.add(mBase, mulConst(kl, tt, mask->strides[r - 1]));
          Value* mv = lb.load(kl.buffer(3), at);
          if (mask->dtype == DType::Bool) sc = lb.select(mv, sc, ninf);
          else sc = lb.add(sc, kl.convert(mask->dtype == DType::F16 ? lb.cast(mv, ctx.f32()) : mv, mask->dtype, acc));
        }
        if (causal) sc = lb.select(lb.gt(tt, sIdx), ninf, sc);
        Value* m = c[0];
        Value* mNew = lb.max(m, sc);
        Value* none = lb.eq(mNew, ninf);  // nothing kept yet: keep the zeros
        Value* alpha = lb.select(none, kl.constant(acc, 1), lb.exp(lb.sub(m, mNew)));
        Value* pr = lb.select(none, zero, lb.exp(lb.sub(sc, mNew)));
        Values next = {mNew, lb.add(lb.mul(c[1], alpha), pr)};
        for (int64_t j = 0; j < DV; ++j) next.push_back(lb.add(lb.mul(c[size_t(2 + j)], alpha), lb.mul(pr, vAt(lb, j))));
        return next;
      };
      // k's and v's element of key tt, from device memory.
      auto kGlobal = [&](Value* tt) {
        return [&, tt](Builder& lb, int64_t d) {
          Kernel kl(lb, ctx, in, inBufs);
          return loadAt(kl, 1, addConst(kl, lb.add(kBase, mulConst(kl, tt, kk.strides[r - 2])), d * kk.strides[r - 1]), acc);
        };
      };
      auto vGlobal = [&](Value* tt) {
        return [&, tt](Builder& lb, int64_t j) {
          Kernel kl(lb, ctx, in, inBufs);
          return loadAt(kl, 2, addConst(kl, lb.add(vBase, mulConst(kl, tt, v.strides[r - 2])), j * v.strides[r - 1]), acc);
        };
      };
      ir::Op* loop = nullptr;
      if (!staged) {
        loop = ib.forOp(kb.i32(0), kb.i32(T), kb.i32(1), init, [&](Builder& lb, Value* tt, const Values& c) {
          return update(lb, tt, c, kGlobal(tt), vGlobal(tt));
        });
      } else {
        // Blocks of kKeyBlock keys: the workgroup copies block b's k and v
        // rows (element e = lid + 64u of each, zero past T), waits, walks
        // them from workgroup memory, and waits again before the next copy.
        const int64_t blocks = (T + kKeyBlock - 1) / kKeyBlock;
        // (The trip count times num_workgroups.z, always 1, so that the
        // shader compiler does not unroll the loop whole: at T = 128 it
        // did, 2.5x slower with blocks of 16.)
        Value* trips = ib.mul(kb.i32(blocks), ib.numWorkgroups(2, ctx.i32()));
        loop = ib.forOp(kb.i32(0), trips, kb.i32(1), init, [&](Builder& bl, Value* blk, const Values& c) {
          Kernel kc(bl, ctx, in, inBufs);
          Value* t0 = bl.mul(blk, kc.i32(kKeyBlock));
          // Rows t0.. of input `op` (k: 1, v: 2; `width` elements from `base`)
          // into `dst`, element e = lid + 64u, only keys below T.
          auto copy = [&](Value* dst, size_t op, int64_t width, Value* base, const Operand& o) {
            for (int64_t u = 0; u * wg < kKeyBlock * width; ++u) {
              Value* e = addConst(kc, lid, u * wg);
              Value* tt = bl.add(t0, bl.div(e, kc.i32(width)));
              Value* ok = bl.and_(bl.lt(e, kc.i32(kKeyBlock * width)), bl.lt(tt, kc.i32(T)));
              bl.ifOp(ok, {}, [&](Builder& cb) {
                Kernel kw(cb, ctx, in, inBufs);
                Value* at = cb.add(cb.add(base, mulConst(kw, tt, o.strides[r - 2])),
                                   mulConst(kw, cb.rem(e, kw.i32(width)), o.strides[r - 1]));
                cb.store(dst, e, loadAt(kw, op, at, acc));
              });
            }
          };
          copy(Ks, 1, D, kBase, kk);
          copy(Vs, 2, DV, vBase, v);
          bl.barrier();
          Value* n = bl.min(kc.i32(kKeyBlock), bl.sub(kc.i32(T), t0));
          ir::Op* inner = bl.forOp(kc.i32(0), n, kc.i32(1), c, [&](Builder& lb, Value* j, const Values& cc) {
            Value* kRow = lb.mul(j, kc.i32(D));
            Value* vRow = lb.mul(j, kc.i32(DV));
            return update(lb, lb.add(t0, j), cc,
                          [&](Builder& b2, int64_t d) { return b2.load(Ks, addConst(kc, kRow, d)); },
                          [&](Builder& b2, int64_t jj) { return b2.load(Vs, addConst(kc, vRow, jj)); });
          });
          bl.barrier();
          Values out;
          for (unsigned i = 0; i < c.size(); ++i) out.push_back(inner->result(i));
          return out;
        });
      }
      Value* sum = loop->result(1);
      Value* safe = ib.select(ib.eq(sum, zero), kb.constant(acc, 1), sum);
      const ir::Type* storage = irType(ctx, t);
      Value* out = bufs.back();
      Value* outBase = ib.mul(row, kb.i32(DV));
      for (int64_t j = 0; j < DV; ++j) {
        Value* o = ib.div(loop->result(unsigned(2 + j)), safe);
        if (o->type() != storage) o = ib.cast(o, storage);
        ib.store(out, addConst(kb, outBase, j), o);
      }
    };
    if (staged) rowBody(bb);  // no row past the end, and barriers need every invocation
    else bb.ifOp(bb.lt(row, k.i32(rows)), {}, rowBody);
  };
  return l.custom("attention", t, numel(n.shape), in, {unsigned(wg), 1, 1}, {gx, gy, 1}, build,
                  n.attrs.key() + "|" + shapeText(n.shape) + "|S" + num(S));
}

// The offsets of q's, k's, v's (and the mask's) first element in batch gz
// (an index over `batch`, the leading dimensions of rank-(batch + 2)
// operands).
std::array<Value*, 4> batchBases(Kernel& k, Value* gz, const Shape& batch, bool mask) {
  Builder& b = k.b;
  std::vector<Value*> idx(batch.size() + 2, k.i32(0));
  Value* rest = gz;
  for (size_t d = batch.size(); d-- > 0;) {
    idx[d] = d == 0 ? rest : b.rem(rest, k.i32(batch[d]));
    if (d > 0) rest = b.div(rest, k.i32(batch[d]));
  }
  return {k.offsetOf(0, idx), k.offsetOf(1, idx), k.offsetOf(2, idx), mask ? k.offsetOf(3, idx) : nullptr};
}

// Workgroup memory the strip kernel may take (a core's L2, with room): q's
// block transposed and the scores of its rows.
constexpr int64_t kStripAttentionBytes = 1 << 20;

// The keys of one chunk of stripAttention: T where q's block and the scores
// of all T keys fit the workgroup memory it may take, else fewer, the chunks
// as even as they can be (each at least R keys, so that its last block of R
// can move back within it); 0 where even 2R do not fit.
int64_t stripAttentionChunk(const LowerOptions& o, int64_t T, int64_t D, int64_t DV) {
  const int64_t L = std::min<int64_t>(o.matmulLanes, 64), R = o.matmulRows;
  // Qt, St and Inv; chunked also Alpha, Run (2 L) and Ow, the output's
  // running sums (each allocation aligned to 64 bytes).
  const int64_t floats = (std::min<int64_t>(kStripAttentionBytes, o.maxWorkgroupMemory) - 6 * 64) / 4;
  if ((D + T + 1) * L <= floats) return T;
  const int64_t most = (floats - L * DV) / L - D - 4;
  if (most < 2 * R) return 0;
  const int64_t chunks = (T + most - 1) / most, tc = (T + chunks - 1) / chunks;
  return T - (chunks - 1) * tc >= R ? tc : 0;
}

// Whether attention runs as stripAttention: on targets whose invocations are
// vector lanes (LowerOptions::matmulLanes, the cpu target), f32, with q's
// block and a chunk of its rows' scores within the workgroup memory it may take.
bool stripAttentionApplies(const LowerOptions& o, DType t, int64_t batches, int64_t S, int64_t T, int64_t D,
                           int64_t DV) {
  const int64_t L = std::min<int64_t>(o.matmulLanes, 64);
  return L > 0 && o.matmulRows > 0 && int64_t(o.matmulRows) <= L && t == DType::F32 && S > 0 && T > 0 &&
         batches <= 65535 && (S + L - 1) / L <= int64_t(o.maxGroupsX) && stripAttentionChunk(o, T, D, DV) > 0;
}

// attention in one kernel where invocations are vector lanes (the cpu
// target runs a loop whose bounds the whole workgroup shares once, around
// the lanes: ops/MatmulStrip.cpp). A workgroup of L lanes takes L query rows
// of one batch and keeps everything between its phases in workgroup memory,
// which stays in the core's cache: the S x T scores never go to memory.
// Lane x copies its row of q, scaled, into Qt[d][x] (q's block transposed);
// then for each chunk of keys (all T where they fit: stripAttentionChunk):
//  1. Its row's scores, R keys at a time, as the strip matmul computes C
//     with A = k (a key's d-th element is the same for every lane: a
//     broadcast) and B = Qt (a vector load): St[t][x] (+ the mask, −inf
//     where masked or, causal, past the row).
//  2. Its softmax over St[·][x] in place, online across chunks: the
//     maximum m so far, e^(s − m), their running sum rescaled by
//     Alpha[x] = e^(m_before − m); Inv[x] = 1/sum (0 for a row with nothing
//     kept).
//  3. (After a barrier: the lanes now read every row's.) out = St·v as a
//     strip matmul again, lanes along v's columns, R rows of the block at a
//     time (A = St[t][row], broadcasts; B = v's row t), added to the earlier
//     chunks' sums (kept in Ow, times Alpha); after the last chunk each
//     times its row's Inv and stored.
// The last block of keys (of rows) moves back to end at the chunk's (the
// block's) edge, as the strip matmul's last strip does; rows past S repeat
// row S − 1 and store nothing.
Value* stripAttention(Lowering& l, const Node& n, const Operand& q, const Operand& kk, const Operand& v,
                      const std::optional<Operand>& mask, double scale, bool causal) {
  const size_t r = n.shape.size();
  const int64_t S = n.shape[r - 2], DV = n.shape[r - 1], D = q.shape[r - 1], T = kk.shape[r - 2];
  const Shape batch(n.shape.begin(), n.shape.end() - 2);
  const int64_t batches = numel(batch);
  const int64_t L = std::min<int64_t>(l.opts.matmulLanes, 64), R = l.opts.matmulRows;
  const int64_t U = 4;  // steps of each product's loop a trip
  const int64_t Tc = stripAttentionChunk(l.opts, T, D, DV), chunks = (T + Tc - 1) / Tc;
  const bool chunked = chunks > 1;
  std::vector<Operand> in = {q, kk, v};
  if (mask) in.push_back(*mask);
  auto build = [&](Builder& bb, const std::vector<Value*>& bufs) {
    ir::Context& ctx = l.ctx;
    const std::vector<Value*> inBufs(bufs.begin(), bufs.end() - 1);
    Kernel k(bb, ctx, in, inBufs);
    const ir::Type* f32 = ctx.f32();
    Value* Qt = bb.workgroupAlloc(f32, D * L);
    Value* St = bb.workgroupAlloc(f32, Tc * L);
    Value* Inv = bb.workgroupAlloc(f32, L);
    Value* Alpha = chunked ? bb.workgroupAlloc(f32, L) : nullptr;
    Value* Ow = chunked ? bb.workgroupAlloc(f32, L * DV) : nullptr;
    Value* Run = chunked ? bb.workgroupAlloc(f32, 2 * L) : nullptr;
    Value* x = bb.localId(0, ctx.i32());
    Value* s0 = bb.mul(bb.workgroupId(0, ctx.i32()), k.i32(L));
    Value* gz = bb.workgroupId(2, ctx.i32());
    const auto [qBase, kBase, vBase, mBase] = batchBases(k, gz, batch, mask.has_value());
    Value* row = bb.min(bb.add(s0, x), k.i32(S - 1));
    Value* zero = k.constant(DType::F32, 0);
    Value* ninf = k.constant(DType::F32, -INFINITY);
    Value* qRow = bb.add(qBase, mulConst(k, row, q.strides[r - 2]));
    bb.forOp(k.i32(0), k.i32(D), k.i32(1), {}, [&](Builder& b, Value* d, const Values&) -> Values {
      Kernel at(b, ctx, in, inBufs);
      Value* qd = loadAt(at, 0, b.add(qRow, mulConst(at, d, q.strides[r - 1])), DType::F32);
      b.store(Qt, b.add(b.mul(d, at.i32(L)), x), b.mul(qd, at.constant(DType::F32, scale)));
      return {};
    });
    // A product's loop: `count` steps from k0, sums c += a(i, step)·bv(step).
    using BAt = std::function<Value*(Builder&, Value*)>;
    using AAt = std::function<Value*(Builder&, int64_t, Value*)>;
    auto steps = [&](Builder& b, Value* k0, int64_t count, Values c, const BAt& bAt, const AAt& aAt) {
      Kernel at(b, ctx, in, inBufs);
      for (int64_t u = 0; u < count; ++u) {
        Value* kk2 = addConst(at, k0, u);
        Value* bv = bAt(b, kk2);
        for (int64_t i = 0; i < R; ++i) c[size_t(i)] = b.fma(aAt(b, i, kk2), bv, c[size_t(i)]);
      }
      return c;
    };
    // Steps 0 .. K (`len`, known to be K where K >= 0) from sums c, U a trip.
    auto product = [&](Builder& b, Value* len, int64_t K, Values c, const BAt& bAt, const AAt& aAt) {
      Kernel at(b, ctx, in, inBufs);
      Value* whole = K >= 0 ? at.i32(K / U * U) : b.mul(b.div(len, at.i32(U)), at.i32(U));
      ir::Op* loop = b.forOp(at.i32(0), whole, at.i32(U), c,
                             [&](Builder& lb, Value* k0, const Values& cc) { return steps(lb, k0, U, cc, bAt, aAt); });
      Values sums = loop->results();
      if (K >= 0 && K % U) return steps(b, at.i32(K / U * U), K % U, sums, bAt, aAt);
      if (K >= 0) return sums;
      return b.forOp(whole, len, at.i32(1), sums, [&](Builder& lb, Value* k0, const Values& cc) {
               return steps(lb, k0, 1, cc, bAt, aAt);
             })->results();
    };
    Value* rows = bb.min(k.i32(L), bb.sub(k.i32(S), s0));  // the block's rows
    Value* rowBlocks = bb.div(addConst(k, rows, R - 1), k.i32(R));
    Value* out = bufs.back();
    const ir::Type* storage = irType(ctx, n.dtype);
    const int64_t colStrips = (DV + L - 1) / L;
    // A chunk's phases (chunked: the row's maximum and sum so far in Run,
    // not carried by the chunks' loop, so that the products' sums stay in
    // registers: targets/llvm/LowerKernel.cpp's carriedBytes).
    auto chunkPhases = [&](Builder& cb, Value* chunk) {
      Kernel ck(cb, ctx, in, inBufs);
      const Values mc = chunked ? Values{cb.load(Run, x), cb.load(Run, addConst(ck, x, L))} : Values{ninf, zero};
      Value* c0 = chunked ? cb.mul(chunk, ck.i32(Tc)) : ck.i32(0);
      Value* len = chunked ? cb.min(ck.i32(Tc), cb.sub(ck.i32(T), c0)) : ck.i32(T);
      const int64_t K = chunked ? -1 : T;  // the chunk's keys where known
      // 1. The scores of the chunk's keys.
      Value* keyBlocks = chunked ? cb.div(addConst(ck, len, R - 1), ck.i32(R)) : ck.i32((T + R - 1) / R);
      cb.forOp(ck.i32(0), keyBlocks, ck.i32(1), {}, [&](Builder& b, Value* blk, const Values&) -> Values {
        Kernel at(b, ctx, in, inBufs);
        Value* t0 = b.mul(blk, at.i32(R));
        if (T > R) t0 = b.min(t0, b.sub(len, at.i32(R)));  // (every chunk has R keys or more)
        Values keyAt;  // key c0 + t0 + i's first element (past T: key T - 1's)
        for (int64_t i = 0; i < R; ++i) {
          Value* t = addConst(at, t0, i);
          if (T < R) t = b.min(t, at.i32(T - 1));
          keyAt.push_back(b.add(kBase, mulConst(at, b.add(c0, t), kk.strides[r - 2])));
        }
        Values sc = product(
            b, nullptr, D, Values(size_t(R), zero), [&](Builder& ib, Value* d) { return ib.load(Qt, ib.add(ib.mul(d, at.i32(L)), x)); },
            [&](Builder& ib, int64_t i, Value* d) {
              Kernel ak(ib, ctx, in, inBufs);
              return loadAt(ak, 1, ib.add(keyAt[size_t(i)], mulConst(ak, d, kk.strides[r - 1])), DType::F32);
            });
        for (int64_t i = 0; i < R; ++i) {
          Value* t = addConst(at, t0, i);
          if (T < R) t = b.min(t, at.i32(T - 1));
          Value* tg = b.add(c0, t);
          Value* s = sc[size_t(i)];
          if (mask) {
            Value* mv = b.load(at.buffer(3), b.add(b.add(mBase, mulConst(at, row, mask->strides[r - 2])),
                                                   mulConst(at, tg, mask->strides[r - 1])));
            if (mask->dtype == DType::Bool) s = b.select(mv, s, ninf);
            else s = b.add(s, at.convert(mask->dtype == DType::F16 ? b.cast(mv, f32) : mv, mask->dtype, DType::F32));
          }
          if (causal) s = b.select(b.gt(tg, row), ninf, s);
          b.store(St, b.add(b.mul(t, at.i32(L)), x), s);
        }
        return {};
      });
      // 2. The row's softmax, in place, against the maximum so far.
      ir::Op* maxLoop = cb.forOp(ck.i32(0), len, ck.i32(1), {mc[0]}, [&](Builder& b, Value* t, const Values& c) -> Values {
        return {b.max(c[0], b.load(St, b.add(b.mul(t, k.i32(L)), x)))};
      });
      Value* m = maxLoop->result(0);
      Value* mSafe = cb.select(cb.eq(m, ninf), zero, m);  // nothing kept: every e^(−inf − 0) is 0
      ir::Op* sumLoop = cb.forOp(ck.i32(0), len, ck.i32(1), {zero}, [&](Builder& b, Value* t, const Values& c) -> Values {
        Value* at = b.add(b.mul(t, k.i32(L)), x);
        Value* e = b.exp(b.sub(b.load(St, at), mSafe));
        b.store(St, at, e);
        return {b.add(c[0], e)};
      });
      Value* sum = sumLoop->result(0);
      if (chunked) {
        Value* alpha = cb.exp(cb.sub(mc[0], mSafe));  // (e^−inf = 0 before any key was kept)
        cb.store(Alpha, x, alpha);
        sum = cb.add(cb.mul(mc[1], alpha), sum);
      }
      cb.store(Inv, x, cb.select(cb.eq(sum, zero), zero, cb.div(ck.constant(DType::F32, 1), sum)));
      cb.barrier();
      // 3. out = St·v, lanes along v's columns.
      Value* last = chunked ? cb.eq(chunk, ck.i32(chunks - 1)) : nullptr;
      cb.forOp(ck.i32(0), ck.i32(colStrips), ck.i32(1), {}, [&](Builder& b, Value* strip, const Values&) -> Values {
        Kernel at(b, ctx, in, inBufs);
        // (Chunked, the last strip and block do not move back: their sums
        // add to Ow, so no element may be computed twice.)
        const bool moveBack = !chunked && DV % L && DV > L, pastDV = DV < L || (chunked && DV % L);
        Value* col = b.mul(strip, at.i32(L));
        if (moveBack) col = b.min(col, at.i32(DV - L));
        col = b.add(col, x);
        Value* colIn = pastDV ? b.min(col, at.i32(DV - 1)) : col;
        Value* vCol = b.add(vBase, mulConst(at, colIn, v.strides[r - 1]));
        b.forOp(at.i32(0), rowBlocks, at.i32(1), {}, [&](Builder& rb, Value* blk, const Values&) -> Values {
          Kernel ak(rb, ctx, in, inBufs);
          Value* r0 = rb.mul(blk, ak.i32(R));
          if (!chunked) r0 = rb.min(r0, ak.i32(L - R));
          auto rowAt = [&](int64_t i) {  // block row i (chunked, past L: row L - 1, not stored)
            Value* lr = addConst(ak, r0, i);
            return chunked && L % R ? rb.min(lr, ak.i32(L - 1)) : lr;
          };
          Values o(size_t(R), zero);
          if (chunked)  // the earlier chunks' sums (zeros first), rescaled to this chunk's maximum
            for (int64_t i = 0; i < R; ++i) {
              Value* lr = rowAt(i);
              o[size_t(i)] = rb.mul(rb.load(Ow, rb.add(rb.mul(lr, ak.i32(DV)), colIn)), rb.load(Alpha, lr));
            }
          o = product(
              rb, len, K, o,
              [&](Builder& ib, Value* t) {
                Kernel bk(ib, ctx, in, inBufs);
                return loadAt(bk, 2, ib.add(vCol, mulConst(bk, ib.add(c0, t), v.strides[r - 2])), DType::F32);
              },
              [&](Builder& ib, int64_t i, Value* t) { return ib.load(St, ib.add(ib.mul(t, ak.i32(L)), rowAt(i))); });
          for (int64_t i = 0; i < R; ++i) {
            Value* lr = addConst(ak, r0, i);
            auto put = [&](Builder& sb) {
              Value* val = sb.mul(o[size_t(i)], sb.load(Inv, lr));
              if (val->type() != storage) val = sb.cast(val, storage);
              Value* at2 = sb.add(sb.mul(sb.add(sb.mul(gz, ak.i32(S)), sb.add(s0, lr)), ak.i32(DV)), col);
              sb.store(out, at2, val);
            };
            Value* ok = rb.lt(lr, rows);  // (rows <= L)
            if (pastDV) ok = rb.and_(ok, rb.lt(col, ak.i32(DV)));
            if (!chunked) {
              rb.ifOp(ok, {}, put);
              continue;
            }
            rb.ifOp(rb.and_(ok, last), {}, put);
            auto hold = [&](Builder& sb) { sb.store(Ow, sb.add(sb.mul(lr, ak.i32(DV)), colIn), o[size_t(i)]); };
            rb.ifOp(rb.and_(ok, rb.not_(last)), {}, hold);
          }
          return {};
        });
        return {};
      });
      if (chunked) {
        cb.store(Run, x, m);
        cb.store(Run, addConst(ck, x, L), sum);
        cb.barrier();  // before the next chunk's scores overwrite St
      }
    };
    if (!chunked) {
      chunkPhases(bb, nullptr);
      return;
    }
    // The output's sums and the row's maximum and sum start at 0, −inf and 0
    // (the first chunk's Alpha is then e^−inf = 0).
    bb.forOp(k.i32(0), k.i32(DV), k.i32(1), {}, [&](Builder& b, Value* j, const Values&) -> Values {
      b.store(Ow, b.add(b.mul(j, k.i32(L)), x), zero);
      return {};
    });
    bb.store(Run, x, ninf);
    bb.store(Run, addConst(k, x, L), zero);
    bb.forOp(k.i32(0), k.i32(chunks), k.i32(1), {}, [&](Builder& cb, Value* chunk, const Values&) -> Values {
      chunkPhases(cb, chunk);
      return {};
    });
  };
  return l.custom("attention_strips", n.dtype, numel(n.shape), in, {unsigned(L), 1, 1},
                  {(S + L - 1) / L, 1, batches}, build,
                  n.attrs.key() + "|" + shapeText(n.shape) + "|L" + num(L) + "R" + num(R) + "C" + num(Tc));
}

// ---- the tiled kernel (GPUs) --------------------------------------------------------------------

constexpr int64_t kTileKeys = 32;  // keys a block of tiledAttention

// Workgroup memory of tiledAttention with Br rows a workgroup, f32: q's
// block (D x Br), k's block (D x 32), the probabilities (32 x Br), v's block
// (32 x DV); without shuffles the probabilities replace k's block and the
// rows' partial maxima and sums take 2 x Br x 8.
int64_t tiledAttentionBytes(int64_t Br, int64_t D, int64_t DV, bool shuffles) {
  const int64_t kp = shuffles ? D * kTileKeys + kTileKeys * Br : std::max(D * kTileKeys, kTileKeys * Br);
  return 4 * (D * Br + kp + kTileKeys * DV + (shuffles ? 0 : 2 * Br * 8));
}

// tiledAttention's query rows a workgroup: 64, or 32 where 64 do not fit the
// device's workgroup memory; 0 where the kernel does not apply (invocations
// that are vector lanes, LowerOptions::attentionTiles off, not f32, q's
// head not a multiple of 4 or v's of 32, or heads too wide).
int64_t tiledAttentionRows(const LowerOptions& o, DType t, int64_t batches, int64_t S, int64_t D, int64_t DV) {
  if (o.matmulLanes || !o.attentionTiles || t != DType::F32 || D <= 0 || D % 4 || D > 256 || DV <= 0 || DV % 32 ||
      DV > 128 || S <= 0 || batches > 65535)
    return 0;
  for (int64_t rows : {64, 32})
    if ((o.attentionTileRows == 0 || o.attentionTileRows == rows) &&
        tiledAttentionBytes(rows, D, DV, o.attentionShuffles) <= int64_t(o.maxWorkgroupMemory) && (S + rows - 1) / rows <= int64_t(o.maxGroupsX))
      return rows;
  return 0;
}

// attention in one kernel on GPUs, flash-style with the products in register
// tiles: a workgroup of 2·Br invocations takes Br query rows of one batch;
// invocation (g, c) = (i / 8, i % 8) holds rows 4g..4g+3, where i is its
// local id, or with shuffles subgroup id x subgroup size + lane (a
// permutation of the local ids where subgroups are full, as on every
// driver we know). q's block, scaled, is staged transposed in workgroup
// memory once (Qt[d][row/4], vec4s of 4 rows). Then for each block of 32 keys:
//  1. the block's k (transposed: Kt[d][key/4]) and v (Vs[key][col/4]) are
//     staged, zeros past T;
//  2. each invocation computes the 4 x 4 scores of its rows and keys 4c..
//     4c+3 as the blocked matmul computes C (a vec4 of each side a step),
//     masked (−inf past T, where masked or, causal, past the row), and
//     combines each row's partial maxima with the row's other 7 invocations
//     (subgroup shuffles among 8 neighbouring lanes; without
//     attentionShuffles through workgroup memory);
//  3. the rows' maxima m' = max(m, the block's) (every invocation of a row
//     computes the same), the probabilities e^(s − m') into P[key][row/4]
//     (beside k's block; without shuffles over it, after a barrier) and
//     their sums, combined as the maxima;
//  4. sum = sum·e^(m − m') + the block's, and the output's sums (4 rows x
//     DV/8 columns 4c + 32j + {0..3}) times e^(m − m') plus P·v, a vec4 of P
//     and DV/32 of v a key.
// At the end each output is its sum / sum (0 for a row with nothing kept).
// Neither the scores nor the probabilities go to device memory. (Products
// are mul and add, which the drivers contract: the IR's fma is exact on
// SPIR-V, emulated, and made this kernel 10x slower on the H200.)
Value* tiledAttention(Lowering& l, const Node& n, const Operand& q, const Operand& kk, const Operand& v,
                      const std::optional<Operand>& mask, double scale, bool causal, int64_t Br) {
  const size_t r = n.shape.size();
  const int64_t S = n.shape[r - 2], DV = n.shape[r - 1], D = q.shape[r - 1], T = kk.shape[r - 2];
  const Shape batch(n.shape.begin(), n.shape.end() - 2);
  const int64_t batches = numel(batch);
  const int64_t Bc = kTileKeys, G = Br / 4, threads = 8 * G, NJ = DV / 32, NO = 4 * NJ * 4;
  const int64_t blocks = (T + Bc - 1) / Bc;
  const bool shuffles = l.opts.attentionShuffles;
  std::vector<Operand> in = {q, kk, v};
  if (mask) in.push_back(*mask);
  auto build = [&](Builder& bb, const std::vector<Value*>& bufs) {
    ir::Context& ctx = l.ctx;
    const std::vector<Value*> inBufs(bufs.begin(), bufs.end() - 1);
    Kernel k(bb, ctx, in, inBufs);
    const ir::Type* f32 = ctx.f32();
    const ir::Type* v4 = ctx.vectorType(f32, 4);
    Value* Qt = bb.workgroupAlloc(v4, D * G);
    Value* KP = bb.workgroupAlloc(v4, (shuffles ? D * Bc : std::max(D * Bc, Bc * Br)) / 4);
    Value* P = shuffles ? bb.workgroupAlloc(v4, Bc * Br / 4) : KP;
    Value* Vs = bb.workgroupAlloc(v4, Bc * DV / 4);
    Value* RedM = shuffles ? nullptr : bb.workgroupAlloc(f32, Br * 8);
    Value* RedS = shuffles ? nullptr : bb.workgroupAlloc(f32, Br * 8);
    Value* lid = bb.localId(0, ctx.i32());
    // With shuffles the invocation's place is its subgroup's and lane's, so
    // that a row's 8 invocations are 8 neighbouring lanes of one subgroup.
    Value* lane = shuffles ? bb.subgroupLocalId(ctx.i32()) : nullptr;
    Value* inv = shuffles ? bb.add(bb.mul(bb.subgroupId(ctx.i32()), bb.subgroupSize(ctx.i32())), lane) : lid;
    Value* g = bb.div(inv, k.i32(8));
    Value* c = bb.rem(inv, k.i32(8));
    Value* s0 = bb.mul(bb.workgroupId(0, ctx.i32()), k.i32(Br));
    Value* gz = bb.workgroupId(2, ctx.i32());
    const auto [qBase, kBase, vBase, mBase] = batchBases(k, gz, batch, mask.has_value());
    Value* zero = k.constant(DType::F32, 0);
    Value* one = k.constant(DType::F32, 1);
    Value* ninf = k.constant(DType::F32, -INFINITY);
    // For each of `items` vec4s of workgroup memory, item e = lid + threads·u:
    // put(b, e) in every invocation whose e is below items.
    auto each = [&](Builder& b, int64_t items, const std::function<void(Builder&, Value*)>& put) {
      for (int64_t u = 0; u * threads < items; ++u) {
        Value* e = addConst(k, lid, u * threads);
        if ((u + 1) * threads <= items) put(b, e);
        else b.ifOp(b.lt(e, k.i32(items)), {}, [&](Builder& ib) { put(ib, e); });
      }
    };
    // q's block, scaled: Qt[d][gq] = rows s0 + 4gq + i (past S: row S − 1).
    each(bb, D * G, [&](Builder& b, Value* e) {
      Kernel at(b, ctx, in, inBufs);
      Value* d = b.rem(e, at.i32(D));
      Value* gq = b.div(e, at.i32(D));
      Values x;
      for (int64_t i = 0; i < 4; ++i) {
        Value* row = b.min(b.add(s0, addConst(at, b.mul(gq, at.i32(4)), i)), at.i32(S - 1));
        Value* off = b.add(qBase, b.add(mulConst(at, row, q.strides[r - 2]), mulConst(at, d, q.strides[r - 1])));
        x.push_back(b.mul(loadAt(at, 0, off, DType::F32), at.constant(DType::F32, scale)));
      }
      b.store(Qt, b.add(b.mul(d, at.i32(G)), gq), b.vecMake(x));
    });
    Values rowOf;  // the invocation's rows 4g + i
    for (int64_t i = 0; i < 4; ++i) rowOf.push_back(bb.add(s0, addConst(k, bb.mul(g, k.i32(4)), i)));
    Values init(size_t(8 + NO), zero);  // the rows' m (4), sum (4), the output's sums (NO)
    std::fill_n(init.begin(), 4, ninf);
    // `count` steps of a product on sums acc, a step a trip (the driver
    // unrolls; four a trip made the kernel 1.2-1.4x slower on the H200).
    using Step = std::function<Values(Builder&, Value*, Values)>;
    auto steps = [&](Builder& b, int64_t count, const Values& acc, const Step& step) {
      return b.forOp(k.i32(0), k.i32(count), k.i32(1), acc,
                     [&](Builder& ib, Value* i, const Values& a) { return step(ib, i, a); })
          ->results();
    };
    // (The trip count times num_workgroups.y, always 1, so that the shader
    // compiler does not unroll the blocks' loop whole.)
    Value* trips = bb.mul(k.i32(blocks), bb.numWorkgroups(1, ctx.i32()));
    ir::Op* loop = bb.forOp(k.i32(0), trips, k.i32(1), init, [&](Builder& b, Value* blk, const Values& cs) -> Values {
      Kernel at(b, ctx, in, inBufs);
      Value* t0 = b.mul(blk, at.i32(Bc));
      // 1. k's block transposed (Kt[d][kq]: keys t0 + 4kq + j) and v's.
      auto keyIn = [&](Builder& ib, Value* key) { return T % Bc ? ib.min(key, at.i32(T - 1)) : key; };
      auto zeroPast = [&](Builder& ib, Value* key, Value* x) { return T % Bc ? ib.select(ib.lt(key, at.i32(T)), x, zero) : x; };
      each(b, D * Bc / 4, [&](Builder& ib, Value* e) {
        Kernel ak(ib, ctx, in, inBufs);
        Value* d = ib.rem(e, ak.i32(D));
        Value* kq = ib.div(e, ak.i32(D));
        Values x;
        for (int64_t j = 0; j < 4; ++j) {
          Value* key = ib.add(t0, addConst(ak, ib.mul(kq, ak.i32(4)), j));
          Value* off = ib.add(kBase, ib.add(mulConst(ak, keyIn(ib, key), kk.strides[r - 2]), mulConst(ak, d, kk.strides[r - 1])));
          x.push_back(zeroPast(ib, key, loadAt(ak, 1, off, DType::F32)));
        }
        ib.store(KP, ib.add(ib.mul(d, ak.i32(Bc / 4)), kq), ib.vecMake(x));
      });
      each(b, Bc * DV / 4, [&](Builder& ib, Value* e) {
        Kernel ak(ib, ctx, in, inBufs);
        Value* tq = ib.div(e, ak.i32(DV / 4));
        Value* cq = ib.rem(e, ak.i32(DV / 4));
        Value* key = ib.add(t0, tq);
        Value* rowOff = ib.add(vBase, mulConst(ak, keyIn(ib, key), v.strides[r - 2]));
        Values x;
        for (int64_t j = 0; j < 4; ++j) {
          Value* off = ib.add(rowOff, mulConst(ak, addConst(ak, ib.mul(cq, ak.i32(4)), j), v.strides[r - 1]));
          x.push_back(zeroPast(ib, key, loadAt(ak, 2, off, DType::F32)));
        }
        ib.store(Vs, e, ib.vecMake(x));
      });
      b.barrier();
      // 2. The scores of rows 4g + i and keys t0 + 4c + j.
      Values dots = steps(b, D, Values(16, zero), [&](Builder& ib, Value* d, Values acc) {
        Value* qa = ib.load(Qt, ib.add(ib.mul(d, at.i32(G)), g));
        Value* kb = ib.load(KP, ib.add(ib.mul(d, at.i32(Bc / 4)), c));
        for (unsigned i = 0; i < 4; ++i)
          for (unsigned j = 0; j < 4; ++j)
            acc[i * 4 + j] = ib.add(acc[i * 4 + j], ib.mul(ib.vecExtract(qa, i), ib.vecExtract(kb, j)));
        return acc;
      });
      Values s;
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          Value* key = b.add(t0, addConst(at, b.mul(c, at.i32(4)), j));
          Value* x = dots[size_t(i * 4 + j)];
          if (mask) {
            Value* mv = b.load(at.buffer(3), b.add(b.add(mBase, mulConst(at, b.min(rowOf[size_t(i)], at.i32(S - 1)),
                                                                          mask->strides[r - 2])),
                                                   mulConst(at, keyIn(b, key), mask->strides[r - 1])));
            if (mask->dtype == DType::Bool) x = b.select(mv, x, ninf);
            else x = b.add(x, at.convert(mask->dtype == DType::F16 ? b.cast(mv, f32) : mv, mask->dtype, DType::F32));
          }
          if (causal) x = b.select(b.gt(key, rowOf[size_t(i)]), ninf, x);
          if (T % Bc) x = b.select(b.lt(key, at.i32(T)), x, ninf);
          s.push_back(x);
        }
      // Row 4g + i's 8 partials (maxima, sums): combined by shuffles, or
      // through RedM, RedS ([row][c]).
      auto rowSlots = [&](int64_t i) { return b.mul(addConst(at, b.mul(g, at.i32(4)), i), at.i32(8)); };
      auto acrossRow = [&](Value* x, bool max) {
        for (int64_t off : {1, 2, 4}) {
          Value* other = b.subgroupShuffle(x, b.xor_(lane, at.i32(off)));
          x = max ? b.max(x, other) : b.add(x, other);
        }
        return x;
      };
      Values rowMax;
      for (int64_t i = 0; i < 4; ++i) {
        Value* pm = s[size_t(i * 4)];
        for (int64_t j = 1; j < 4; ++j) pm = b.max(pm, s[size_t(i * 4 + j)]);
        if (shuffles) rowMax.push_back(acrossRow(pm, true));
        else b.store(RedM, b.add(rowSlots(i), c), pm);
      }
      if (!shuffles) b.barrier();
      // 3. The rows' maxima, the probabilities and their partial sums.
      Values next(cs.size()), alpha, rowSum;
      Values p(16);
      for (int64_t i = 0; i < 4; ++i) {
        Value* mNew = cs[size_t(i)];
        if (shuffles) mNew = b.max(mNew, rowMax[size_t(i)]);
        else
          for (int64_t cc = 0; cc < 8; ++cc) mNew = b.max(mNew, b.load(RedM, addConst(at, rowSlots(i), cc)));
        Value* none = b.eq(mNew, ninf);  // nothing kept yet: every e^(−inf − 0) is 0
        Value* mSafe = b.select(none, zero, mNew);
        alpha.push_back(b.select(none, one, b.exp(b.sub(cs[size_t(i)], mNew))));
        next[size_t(i)] = mNew;
        Value* ps = zero;
        for (int64_t j = 0; j < 4; ++j) {
          p[size_t(i * 4 + j)] = b.exp(b.sub(s[size_t(i * 4 + j)], mSafe));
          ps = b.add(ps, p[size_t(i * 4 + j)]);
        }
        if (shuffles) rowSum.push_back(acrossRow(ps, false));
        else b.store(RedS, b.add(rowSlots(i), c), ps);
      }
      for (int64_t j = 0; j < 4; ++j)  // P[key 4c + j][g]: rows 4g..4g+3
        b.store(P, b.add(b.mul(addConst(at, b.mul(c, at.i32(4)), j), at.i32(G)), g),
                b.vecMake({p[size_t(j)], p[size_t(4 + j)], p[size_t(8 + j)], p[size_t(12 + j)]}));
      b.barrier();
      // 4. The sums and the output's sums.
      for (int64_t i = 0; i < 4; ++i) {
        Value* sum = b.mul(cs[size_t(4 + i)], alpha[size_t(i)]);
        if (shuffles) sum = b.add(sum, rowSum[size_t(i)]);
        else
          for (int64_t cc = 0; cc < 8; ++cc) sum = b.add(sum, b.load(RedS, addConst(at, rowSlots(i), cc)));
        next[size_t(4 + i)] = sum;
      }
      Values o;
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t jj = 0; jj < 4 * NJ; ++jj) o.push_back(b.mul(cs[size_t(8 + i * 4 * NJ + jj)], alpha[size_t(i)]));
      o = steps(b, Bc, o, [&](Builder& ib, Value* t, Values acc) {
        Value* pa = ib.load(P, ib.add(ib.mul(t, at.i32(G)), g));
        Values vv;
        for (int64_t jq = 0; jq < NJ; ++jq)
          vv.push_back(ib.load(Vs, ib.add(ib.mul(t, at.i32(DV / 4)), addConst(at, c, 8 * jq))));
        for (unsigned i = 0; i < 4; ++i)
          for (int64_t jq = 0; jq < NJ; ++jq)
            for (unsigned e = 0; e < 4; ++e) {
              Value*& x = acc[size_t((i * NJ + jq) * 4 + e)];
              x = ib.add(x, ib.mul(ib.vecExtract(pa, i), ib.vecExtract(vv[size_t(jq)], e)));
            }
        return acc;
      });
      for (int64_t x = 0; x < NO; ++x) next[size_t(8 + x)] = o[size_t(x)];
      b.barrier();  // before the next block overwrites k's, v's, P and the partials
      return next;
    });
    Value* out = bufs.back();
    const ir::Type* storage = irType(ctx, n.dtype);
    for (int64_t i = 0; i < 4; ++i) {
      auto put = [&](Builder& b) {
        Kernel at(b, ctx, in, inBufs);
        Value* sum = loop->result(unsigned(4 + i));
        Value* inv = b.select(b.eq(sum, zero), zero, b.div(one, sum));
        Value* base = b.mul(b.add(b.mul(gz, at.i32(S)), rowOf[size_t(i)]), at.i32(DV));
        for (int64_t jq = 0; jq < NJ; ++jq)
          for (int64_t e = 0; e < 4; ++e) {
            Value* col = addConst(at, b.mul(c, at.i32(4)), 32 * jq + e);
            Value* val = b.mul(loop->result(unsigned(8 + (i * NJ + jq) * 4 + e)), inv);
            if (val->type() != storage) val = b.cast(val, storage);
            b.store(out, b.add(base, col), val);
          }
      };
      if (S % Br) bb.ifOp(bb.lt(rowOf[size_t(i)], k.i32(S)), {}, put);
      else put(bb);
    }
  };
  return l.custom("attention_tiles", n.dtype, numel(n.shape), in, {unsigned(threads), 1, 1},
                  {(S + Br - 1) / Br, 1, batches}, build,
                  n.attrs.key() + "|" + shapeText(n.shape) + "|Br" + num(Br) + (shuffles ? "s" : ""));
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
    const int64_t DV = n.shape[r - 1];
    std::optional<Operand> mask;
    if (in.size() == 4) mask = withBatch(in[3], sshape, 0);
    if (stripAttentionApplies(l.opts, t, numel(batch), S, T, D, DV)) return stripAttention(l, n, q, kk, v, mask, scale, causal);
    if (int64_t rows = tiledAttentionRows(l.opts, t, numel(batch), S, D, DV); rows > 0 && T > 0)
      return tiledAttention(l, n, q, kk, v, mask, scale, causal, rows);
    if (D <= kOnePassHead && DV <= kOnePassHead)
      return onePassAttention(l, n, q, kk, v, in.size() == 4 ? std::optional(withBatch(in[3], sshape, 0)) : std::nullopt,
                              scale, causal);
    // Heads too large for registers: four kernels.
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

void addAttentionOps(std::vector<OpDef>& ops) { addAttention(ops); }

std::optional<Node> attentionFromParts(const Program& p, uint32_t i, const std::vector<std::vector<uint32_t>>& readers,
                                       const std::vector<bool>& isOutputRoot, const LowerOptions& o) {
  const auto& nodes = p.nodes();
  auto is = [&](uint32_t id, const char* op) {
    return !nodes[id].isView && nodes[id].op == op && nodes[id].dtype == DType::F32;
  };
  // Read by `reader` alone, and no output.
  auto onlyFor = [&](uint32_t id, uint32_t reader) {
    return !isOutputRoot[id] && readers[id].size() == 1 && readers[id][0] == reader;
  };
  if (!o.fuse || !o.fuseAttention || !is(i, "matmul")) return std::nullopt;
  const uint32_t probs = nodes[i].inputs[0], v = nodes[i].inputs[1];
  if (!is(probs, "softmax") || !onlyFor(probs, i)) return std::nullopt;
  const size_t rank = nodes[probs].shape.size();
  if (int64_t axis = nodes[probs].attrs.i("axis", -1); rank < 2 || !normaliseAxis(axis, rank) || axis != int64_t(rank) - 1)
    return std::nullopt;
  // From the softmax's input back: + mask, then the scale, then the scores.
  uint32_t at = nodes[probs].inputs[0], reader = probs;
  std::optional<uint32_t> mask;
  auto other = [&](uint32_t id, uint32_t one) { return nodes[id].inputs[0] == one ? nodes[id].inputs[1] : nodes[id].inputs[0]; };
  auto sameShape = [&](uint32_t a, uint32_t b) { return nodes[a].shape == nodes[b].shape; };
  if (is(at, "add") && onlyFor(at, reader)) {
    for (uint32_t in : nodes[at].inputs)
      if (sameShape(in, at) && !mask && (is(in, "mul") || is(in, "div") || is(in, "matmul")) &&
          isFloat(nodes[other(at, in)].dtype))
        mask = other(at, in), reader = at, at = in;
    if (!mask) return std::nullopt;
  }
  double scale = 1;
  // A constant of one element (or a view of one).
  auto scalar = [&](uint32_t id) -> std::optional<double> {
    const Node& c = nodes[p.root(id)];
    if (c.op != "const" || !c.data || numel(nodes[id].shape) != 1 || c.data->size() < 1) return std::nullopt;
    return c.data->get(nodes[id].isView ? nodes[id].offset : 0);
  };
  if ((is(at, "mul") || is(at, "div")) && onlyFor(at, reader)) {
    const bool div = nodes[at].op == "div";
    std::optional<uint32_t> scores;
    for (size_t k = 0; k < 2 && !scores; ++k) {
      const uint32_t in = nodes[at].inputs[k], c = nodes[at].inputs[1 - k];
      if ((k == 0 || !div) && sameShape(in, at) && is(in, "matmul"))
        if (auto value = scalar(c); value && *value != 0 && std::isfinite(*value)) scale = div ? 1 / *value : *value, scores = in;
    }
    if (!scores) return std::nullopt;
    reader = at, at = *scores;
  }
  if (!is(at, "matmul") || !onlyFor(at, reader)) return std::nullopt;
  const uint32_t q = nodes[at].inputs[0], kT = nodes[at].inputs[1];
  for (uint32_t x : {q, kT, v, i})
    if (nodes[x].shape.size() < 2 || nodes[x].dtype != DType::F32 || isDynamic(nodes[x].shape)) return std::nullopt;
  const Shape& out = nodes[i].shape;
  const int64_t S = out.end()[-2], T = nodes[kT].shape.back(), D = nodes[q].shape.back();
  const int64_t batches = numel(Shape(out.begin(), out.end() - 2)), DV = out.back();
  if (o.fuseAttention < 2 && !stripAttentionApplies(o, DType::F32, batches, S, T, D, DV) &&
      !(T > 0 && tiledAttentionRows(o, DType::F32, batches, S, D, DV) > 0))
    return std::nullopt;
  Node n = nodes[i];
  n.op = "attention";
  n.inputs = {q, kT, v};
  if (mask) n.inputs.push_back(*mask);
  n.attrs = Attrs{{"scale", scale}};
  return n;
}


}  // namespace eph::tensor
