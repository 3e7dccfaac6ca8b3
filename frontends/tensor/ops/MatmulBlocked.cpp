// The blocked matmul: the GPU targets' f32-sum matmul (and conv through it),
// workgroup-memory tiles of rm x rn blocks per invocation (ops/Linalg.cpp's
// tiledMatmul picks it; LinalgKernels.h).
#include <algorithm>
#include <array>
#include <cstdlib>

#include "frontends/tensor/ops/LinalgKernels.h"

namespace eph::tensor::linalg {

using ir::Builder;
using ir::Value;
using ir::Values;

namespace {

// The algorithm of bench/ephapax/gemm.eph's sgemm (84-90% of cuBLAS on the
// H200, issue 6) for any strides and edges, with f32 sums: a workgroup of
// TY x 16 invocations (TY 16, or 8 for tiles 64 high) computes a Tm x Tn
// tile of C (Tm = TY·rm, Tn = 16rn), each invocation an rm x rn block of it,
// rows g*4TY + ty*4 + i and columns h*64 + tx*4 + j (g < rm/4, h < rn/4;
// i, j < 4), so that it reads workgroup memory as vec4s: (rm + rn)/4 of
// them per k for rm·rn multiply-adds. K is
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

}  // namespace

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
    // Tiles in groups of G rows for the L2 cache (LowerOptions::matmulGroupRows;
    // G = 1: row by row).
    const auto [tileM, tileN] = tileOrder(k, gx, tilesM, tilesN, G);
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
  Value* sums = l.custom("matmul_blocked", DType::F32, S * batches * M * N, in, wgSize, {tilesM * tilesN * S, 1, batches},
                         build, key + "|split" + std::to_string(S));
  return sumOfParts(l, t, in, sums, S, vshape, parts, key);
}

// The kernel adding the S parts of a split-K product ([S, batch.., M, N]
// f32 sums) into the product's output, stored as the single kernel would
// store it (parts.store: epilogues, conv's layout). LinalgKernels.h.
Value* sumOfParts(Lowering& l, DType t, const std::vector<Operand>& in, Value* sums, int64_t S, const Shape& vshape,
                  const MatmulParts& parts, const std::string& key) {
  const size_t r = vshape.size();
  const int64_t M = vshape[r - 2], N = vshape[r - 1], MN = numel(vshape);
  const DType outType = parts.store ? parts.outType : t;
  const int64_t count = parts.store ? parts.outCount : MN;
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

}  // namespace eph::tensor::linalg
