// The strip matmul, for targets whose invocations are vector lanes (the cpu
// target; LowerOptions::matmulLanes, its tuning rows).
#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>

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

namespace {

// The column of C (and B) lane x of strip `strip` computes: strip·L + x,
// except that the last strip of an edge that is not a multiple of L moves
// back to end at the edge (it computes some of the one before it again), so
// that the lanes' columns stay neighbours. Where C is narrower than a strip
// (N < L) lanes past it read its last column and store nothing.
Value* stripColumn(Kernel& k, Value* strip, Value* x, int64_t N, int64_t L) {
  Builder& b = k.b;
  Value* col0 = b.mul(strip, k.i32(L));
  if (N % L && N > L) col0 = b.min(col0, k.i32(N - L));
  return b.add(col0, x);
}

// B ([batch.., K, N], f32) packed strip by strip: [batch, strip, K, L], the
// K x L panel of each strip of C contiguous, column stripColumn(strip, x)
// (clamped to N - 1) at x. One workgroup of L lanes copies kPackRows rows
// of one strip: row-major B's rows are N elements apart, and where N·4 bytes
// is a multiple of 4 KiB (or near one) a strip's rows all fall into the same
// few sets of the caches; packed, the kernel's reads are one stream.
// (A strip's panel of 1024 x 64 floats from a 1024-wide B: 53 GFLOP/s on
// one core of an Intel Xeon 8592+ unpacked; bench/RESULTS.md.)
constexpr int64_t kPackRows = 8;

Value* packStrips(Lowering& l, const Operand& a, const Operand& b, const Shape& vshape, int64_t L, int64_t tilesN) {
  const size_t r = vshape.size();
  const int64_t N = vshape[r - 1], K = b.shape[r - 2];
  const int64_t batches = numel(Shape(vshape.begin(), vshape.end() - 2));
  const std::vector<Operand> in = {a, b};
  auto build = [&](Builder& bb, const std::vector<Value*>& bufs) {
    ir::Context& ctx = l.ctx;
    const std::vector<Value*> inBufs(bufs.begin(), bufs.end() - 1);
    Kernel k(bb, ctx, in, inBufs);
    Value* x = bb.localId(0, ctx.i32());
    Value* k0 = bb.mul(bb.workgroupId(0, ctx.i32()), k.i32(kPackRows));
    Value* strip = bb.workgroupId(1, ctx.i32());
    Value* gz = bb.workgroupId(2, ctx.i32());
    const auto [baseA, baseB, sam, sak, sbk, sbn] = operandBases(k, gz, a, b, vshape, {});
    (void)baseA, (void)sam, (void)sak;
    Value* col = stripColumn(k, strip, x, N, L);
    if (N < L) col = bb.min(col, k.i32(N - 1));
    Value* from = bb.add(baseB, mulConst(k, col, sbn));
    Value* to = bb.add(bb.mul(bb.add(bb.mul(gz, k.i32(tilesN)), strip), k.i32(K * L)), x);
    Value* end = bb.min(bb.add(k0, k.i32(kPackRows)), k.i32(K));
    bb.forOp(k0, end, k.i32(1), {}, [&](Builder& ib, Value* kk, const Values&) -> Values {
      Kernel at(ib, ctx, in, inBufs);
      ib.store(bufs.back(), ib.add(to, mulConst(k, kk, L)), loadAt(at, 1, ib.add(from, mulConst(k, kk, sbk)), DType::F32));
      return {};
    });
  };
  const std::string key = shapeText(vshape) + "|K" + std::to_string(K) + "L" + std::to_string(L);
  return l.custom("matmul_pack", DType::F32, batches * tilesN * K * L, in, {unsigned(L), 1, 1},
                  {(K + kPackRows - 1) / kPackRows, tilesN, batches}, build, key);
}

// packStrips on the host, for a B that is one of the program's constants
// (`data`, B's root): the same elements in the same places.
HostTensor packOnHost(const HostTensor& data, const Operand& b, const Shape& vshape, int64_t L, int64_t tilesN) {
  const size_t r = vshape.size();
  const int64_t N = vshape[r - 1], K = b.shape[r - 2];
  const Shape batchShape(vshape.begin(), vshape.end() - 2);
  const int64_t batches = numel(batchShape);
  HostTensor out(DType::F32, {batches * tilesN * K * L});
  const std::vector<int64_t> bcs = contiguousStrides(batchShape);
  for (int64_t z = 0; z < batches; ++z) {
    int64_t base = b.offset;  // as offsetOf(1, batchIndex(z)): extent-1 and stride-0 dimensions add nothing
    for (size_t d = 0; d + 2 < r; ++d) {
      const int64_t q = z / bcs[d], i = d == 0 ? q : q % batchShape[d];
      if (b.shape[d] != 1) base += i * b.strides[d];
    }
    for (int64_t strip = 0; strip < tilesN; ++strip)
      for (int64_t x = 0; x < L; ++x) {
        int64_t col = strip * L;  // stripColumn, clamped as packStrips clamps it
        if (N % L && N > L) col = std::min(col, N - L);
        col = std::min(col + x, N - 1);
        for (int64_t k = 0; k < K; ++k)
          out.set(((z * tilesN + strip) * K + k) * L + x, data.get(base + k * b.strides[r - 2] + col * b.strides[r - 1]));
      }
  }
  return out;
}

// The strip's lanes: LowerOptions::matmulLanes, halved down to 64 while C is
// narrower (the encoder's 512x64 products per head: 128 lanes would compute
// twice the columns).
int64_t stripLanes(const LowerOptions& o, int64_t N) {
  int64_t L = o.matmulLanes;
  while (L > 64 && L > N) L /= 2;
  return L;
}

// Whether the kernel reads B packed (LowerOptions::matmulStripPack): f32,
// more rows of C than a strip has (B's panels are then read more than
// once), and the pack kernel's grid within 65535 a dimension.
bool packs(const LowerOptions& o, DType t, const Operand& b, const Shape& vshape, const MatmulParts& parts) {
  const size_t r = vshape.size();
  const int64_t M = vshape[r - 2], N = vshape[r - 1], K = b.shape[r - 2], L = stripLanes(o, N);
  return o.matmulStripPack && t == DType::F32 && b.dtype == DType::F32 && !parts.bElement &&
         M > int64_t(o.matmulRows) && K <= 65535 && (N + L - 1) / L <= 65535;
}

}  // namespace

// Where B is packed or contiguous along N (the lanes' loads are then one
// vector).
bool stripMatmulApplies(const LowerOptions& o, DType t, const Operand& b, const Shape& vshape,
                        const MatmulParts& parts) {
  return o.matmulLanes && o.matmulRows && !parts.bElement &&
         (b.strides[vshape.size() - 1] == 1 || packs(o, t, b, vshape, parts));
}

Value* stripMatmul(Lowering& l, DType t, const Operand& a, const Operand& b, const Shape& vshape,
                   const MatmulParts& parts) {
  const size_t r = vshape.size();
  const int64_t M = vshape[r - 2], N = vshape[r - 1], K = a.shape[r - 1];
  const int64_t L = stripLanes(l.opts, N);
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
  // B packed strip by strip (LowerOptions::matmulStripPack): element (k, x)
  // of strip s of batch z at ((z·tilesN + s)·K + k)·L + x, the column the
  // kernel's lane x reads in that strip (stripColumn) copied there.
  const bool pack = packs(l.opts, t, b, vshape, parts);
  // A constant B (a model's weights) is packed once, on the host, and passed
  // in as one more constant (Lowering::derivedConstant); any other in a
  // kernel before this one.
  Value* packed = nullptr;
  bool ownPacked = true;
  if (auto it = l.constants.find(b.buf); pack && it != l.constants.end() && !b.fused && b.shape.size() == r) {
    std::string key = "pack|" + std::to_string(reinterpret_cast<uintptr_t>(it->second.get())) + "|" + shapeText(vshape) +
                      "|" + shapeText(b.shape) + "|" + std::to_string(b.offset) + "|L" + std::to_string(L);
    for (int64_t st : b.strides) key += "," + std::to_string(st);
    std::tie(packed, ownPacked) =
        l.derivedConstant(key, [&] { return packOnHost(*it->second, b, vshape, L, tilesN); });
  }
  if (pack && !packed) packed = packStrips(l, a, b, vshape, L, tilesN);
  std::vector<Operand> in = {a, pack ? Lowering::contiguous(packed, DType::F32, {batches * tilesN * K * L}) : b};
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
    // Lane x's column: stripColumn (the last strip moves back to end at the
    // edge; where C is narrower than a strip, the last column is read past it
    // and not stored).
    Value* row0 = bb.mul(bb.rem(gx, k.i32(tilesM)), k.i32(R));
    if (M % R && M > R) row0 = bb.min(row0, k.i32(M - R));
    Value* strip = bb.div(gx, k.i32(tilesM));
    Value* col = stripColumn(k, strip, x, N, L);
    const bool narrow = N < L;
    auto [baseA, baseB, sam, sak, sbk, sbn] = operandBases(k, gz, a, b, vshape, parts);
    Value* colIn = narrow ? bb.min(col, k.i32(N - 1)) : col;
    Values rowAt;
    for (int64_t i = 0; i < R; ++i) {
      Value* row = addConst(k, row0, i);
      if (M < R) row = bb.min(row, k.i32(M - 1));
      rowAt.push_back(bb.add(baseA, mulConst(k, row, sam)));
    }
    Value* colB = parts.bElement ? nullptr : bb.add(baseB, mulConst(k, colIn, sbn));
    if (pack) {  // input 1 is the packed copy (baseB, from its flat layout, unused)
      colB = bb.add(bb.mul(bb.add(bb.mul(gz, k.i32(tilesN)), strip), k.i32(K * L)), x);
      sbk = L;
    }
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
                          std::to_string(U) + (pack ? "p" : "") + "|" + parts.key;
  Value* out;
  if (S == 1) {
    out = l.custom("matmul_strip", parts.store ? parts.outType : t, parts.store ? parts.outCount : numel(vshape), in,
                   {unsigned(L), 1, 1}, {tilesM * tilesN, 1, batches}, build, key);
  } else {
    Value* sums = l.custom("matmul_strip", DType::F32, S * numel(vshape), in, {unsigned(L), 1, 1},
                           {tilesM * tilesN * S, 1, batches}, build,
                           key + "|split" + std::to_string(S) + "x" + std::to_string(Kc));
    out = sumOfParts(l, t, in, sums, S, vshape, parts, key);
  }
  if (packed && ownPacked) l.free(packed);
  return out;
}

}  // namespace eph::tensor::linalg
