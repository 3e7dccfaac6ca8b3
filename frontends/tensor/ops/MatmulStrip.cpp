// The strip matmul, for targets whose invocations are vector lanes (the cpu
// target; LowerOptions::matmulLanes, its tuning rows).
#include <algorithm>

#include "frontends/tensor/ops/LinalgKernels.h"

namespace eph::tensor::linalg {

using ir::Builder;
using ir::Value;
using ir::Values;

// On the cpu target a workgroup's invocations run as the lanes of a loop the
// compiler vectorises, and a loop whose bounds the whole workgroup shares
// runs once for the workgroup around them (targets/llvm/Llvm.h). So a
// workgroup of L invocations computes an R x L strip of C, invocation x the
// column col0 + x of rows row0 .. row0 + R - 1: K is such a loop, whose
// every step reads one element of B's row k per lane (a vector load: the
// lanes' columns are neighbours) and A's R elements of column k (the same for
// every lane: broadcasts), for R x L multiply-adds held in R vector
// registers. Consecutive workgroups share a column strip, so B's K x L strip
// stays in the core's cache while A's rows stream through.
// LowerOptions::matmulLanes is L (0: off), matmulRows R, matmulUnroll the
// steps of K a trip. With A's rows read as vec4s along K, 128 lanes ran
// 1024^3 on one Zen 5 core at 213 GFLOP/s, 64 at 137 (bench/RESULTS.md).

// Where B is contiguous along N (the lanes' loads are then one vector).
bool stripMatmulApplies(const LowerOptions& o, const Operand& b, const Shape& vshape, const MatmulParts& parts) {
  return o.matmulLanes && o.matmulRows && !parts.bElement && b.strides[vshape.size() - 1] == 1;
}

Value* stripMatmul(Lowering& l, DType t, const Operand& a, const Operand& b, const Shape& vshape,
                   const MatmulParts& parts) {
  const size_t r = vshape.size();
  const int64_t M = vshape[r - 2], N = vshape[r - 1], K = a.shape[r - 1];
  // Strips no wider than C where the lanes are more than 64 (the encoder's
  // 512x64 products per head: 128 lanes would compute twice the columns).
  int64_t L = l.opts.matmulLanes;
  while (L > 64 && L > N) L /= 2;
  const int64_t R = l.opts.matmulRows;
  const int64_t batches = numel(Shape(vshape.begin(), vshape.end() - 2));
  const int64_t tilesM = (M + R - 1) / R, tilesN = (N + L - 1) / L;
  const int64_t U = std::max<int64_t>(1, l.opts.matmulUnroll);
  // Split K where B's K x L panel would outgrow LowerOptions::
  // matmulStripPanel bytes (a core's cache): S parts of Kc steps (a
  // multiple of U), partial sums added by a second kernel (sumOfParts).
  int64_t S = 1, Kc = K;
  if (l.opts.matmulStripPanel && t == DType::F32 && K % U == 0 && K * L * 4 > int64_t(l.opts.matmulStripPanel)) {
    S = (K * L * 4 + l.opts.matmulStripPanel - 1) / l.opts.matmulStripPanel;
    Kc = ((K + S - 1) / S + U - 1) / U * U;
    S = (K + Kc - 1) / Kc;
  }
  std::vector<Operand> in = {a, b};
  in.insert(in.end(), parts.extra.begin(), parts.extra.end());
  auto build = [&](Builder& bb, const std::vector<Value*>& bufs) {
    ir::Context& ctx = l.ctx;
    const std::vector<Value*> inBufs(bufs.begin(), bufs.end() - 1);
    Kernel k(bb, ctx, in, inBufs);
    const ir::Type* acc = computeType(ctx, t);
    Value* x = bb.localId(0, ctx.i32());
    Value* gx = bb.workgroupId(0, ctx.i32());
    Value* gz = bb.workgroupId(2, ctx.i32());  // batch
    // Part `part` of K (split K): steps k0 .. k0 + Kc (the last part fewer);
    // the parts are the slowest, so that consecutive workgroups share B's panel.
    Value* part = S > 1 ? bb.div(gx, k.i32(tilesM * tilesN)) : nullptr;
    if (part) gx = bb.rem(gx, k.i32(tilesM * tilesN));
    Value* kBegin = part ? bb.mul(part, k.i32(Kc)) : k.i32(0);
    Value* kEnd = part ? bb.min(bb.add(kBegin, k.i32(Kc)), k.i32(K)) : k.i32(K / U * U);
    // The last strip of an edge that is not a multiple of the strip moves
    // back to end at the edge (it computes some of the one before it again),
    // so the lanes' columns stay neighbours; where C is narrower than a
    // strip, the last column is read past it (and not stored).
    Value* row0 = bb.mul(bb.rem(gx, k.i32(tilesM)), k.i32(R));
    if (M % R && M > R) row0 = bb.min(row0, k.i32(M - R));
    Value* col0 = bb.mul(bb.div(gx, k.i32(tilesM)), k.i32(L));
    if (N % L && N > L) col0 = bb.min(col0, k.i32(N - L));
    Value* col = bb.add(col0, x);
    const bool narrow = N < L;
    const auto [baseA, baseB, sam, sak, sbk, sbn] = operandBases(k, gz, a, b, vshape, parts);
    Value* colIn = narrow ? bb.min(col, k.i32(N - 1)) : col;
    Values rowAt;
    for (int64_t i = 0; i < R; ++i) {
      Value* row = addConst(k, row0, i);
      if (M < R) row = bb.min(row, k.i32(M - 1));
      rowAt.push_back(bb.add(baseA, mulConst(k, row, sam)));
    }
    Value* colB = parts.bElement ? nullptr : bb.add(baseB, mulConst(k, colIn, sbn));
    // U steps of k a trip: the accumulators stay in registers between them
    // (between trips they go through the workgroup's per-lane arrays).
    // A f32 row contiguous along K, every row starting at a multiple of 4
    // elements: each trip's 4 steps read a row's 4 elements as one vec4 (one
    // bounds check, not four).
    bool aVec4 = U % 4 == 0 && t == DType::F32 && a.dtype == DType::F32 && sak == 1 && sam % 4 == 0 &&
                 a.offset % 4 == 0;
    for (size_t d = 0; d + 2 < r; ++d) aVec4 = aVec4 && a.strides[d] % 4 == 0;
    auto steps = [&](Builder& b, Value* k0, int64_t count, Values c) {
      Kernel at(b, ctx, in, inBufs);
      std::vector<Value*> aRow4;  // the rows' vec4s at k0, while count is a multiple of 4
      for (int64_t u = 0; u < count; ++u) {
        Value* kk = addConst(k, k0, u);
        Value* bv = parts.bElement ? parts.bElement(at, gz, kk, colIn) : loadAt(at, 1, b.add(colB, mulConst(k, kk, sbk)), t);
        if (bv->type() != acc) bv = b.cast(bv, acc);
        if (aVec4 && count % 4 == 0 && u % 4 == 0) {
          aRow4.clear();
          for (int64_t i = 0; i < R; ++i) aRow4.push_back(b.vecLoad(at.buffer(0), b.div(b.add(rowAt[size_t(i)], kk), k.i32(4)), 4));
        }
        for (int64_t i = 0; i < R; ++i) {
          Value* av = !aRow4.empty() ? b.vecExtract(aRow4[size_t(i)], unsigned(u % 4))
                                     : loadAt(at, 0, b.add(rowAt[size_t(i)], mulConst(k, kk, sak)), t);
          c[size_t(i)] = acc->isFloat() ? b.fma(av, bv, c[size_t(i)]) : b.add(c[size_t(i)], b.mul(av, bv));
        }
      }
      return c;
    };
    ir::Op* loop = bb.forOp(kBegin, kEnd, k.i32(U), Values(size_t(R), k.constant(t, 0)),
                            [&](Builder& b, Value* k0, const Values& c) -> Values { return steps(b, k0, U, c); });
    Values sums = loop->results();
    if (K % U) sums = steps(bb, k.i32(K / U * U), K % U, sums);  // (such a K is never split)
    Value* out = bufs.back();
    const ir::Type* storage = S > 1 ? acc : irType(ctx, parts.store ? parts.outType : t);
    Value* obase = bb.mul(part ? bb.add(bb.mul(part, k.i32(batches)), gz) : gz, k.i32(M * N));
    for (int64_t i = 0; i < R; ++i) {
      Value* gm = addConst(k, row0, i);
      auto put = [&](Builder& ib) {
        Kernel at(ib, ctx, in, inBufs);
        Value* v = sums[size_t(i)];
        Value* off = nullptr;
        if (parts.store && S == 1) std::tie(v, off) = parts.store(at, gz, gm, col, v);
        else off = ib.add(obase, ib.add(ib.mul(gm, k.i32(N)), col));
        if (v->type() != storage) v = ib.cast(v, storage);
        ib.store(out, off, v);
      };
      Value* ok = nullptr;
      if (M < R) ok = bb.lt(gm, k.i32(M));
      if (narrow) ok = ok ? bb.and_(ok, bb.lt(col, k.i32(N))) : bb.lt(col, k.i32(N));
      if (ok) bb.ifOp(ok, {}, put);
      else put(bb);
    }
  };
  const std::string key = shapeText(vshape) + "|L" + std::to_string(L) + "R" + std::to_string(R) + "U" +
                          std::to_string(U) + "|" + parts.key;
  if (S == 1)
    return l.custom("matmul_strip", parts.store ? parts.outType : t, parts.store ? parts.outCount : numel(vshape), in,
                    {unsigned(L), 1, 1}, {tilesM * tilesN, 1, batches}, build, key);
  Value* sums = l.custom("matmul_strip", DType::F32, S * numel(vshape), in, {unsigned(L), 1, 1},
                         {tilesM * tilesN * S, 1, batches}, build, key + "|split" + std::to_string(S) + "x" + std::to_string(Kc));
  return sumOfParts(l, t, in, sums, S, vshape, parts, key);
}

}  // namespace eph::tensor::linalg
