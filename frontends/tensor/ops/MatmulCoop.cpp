// f16 matmul on a GPU's matrix units: cooperative matrices (ir/ops/
// CoopMatrix.cpp, SPV_NV_cooperative_matrix) of 16x16 f16 tiles multiplied
// into 16x16 f32 accumulators.
//
// One subgroup per workgroup computes a 64x64 tile of C as 4x4 accumulators:
// for each k-step of 16 it loads four 16x16 tiles of A (rows) and four of B
// (columns) straight from device memory (the caches serve the reuse between
// neighbouring workgroups), the next step's while this one's 16
// multiply-adds run. At the end the
// accumulators go through workgroup memory (64x64 f32) so that each
// invocation converts its share to f16 and stores it row by row.
//
// On a device with workgroup-scope matrices (VK_NV_cooperative_matrix2;
// LowerOptions::coopMatrixWorkgroup) a workgroup computes a whole 128x256
// tile as one matrix instead (workgroupCoopMatmul below).
//
// Where: LowerOptions::coopMatrixSubgroup (the device runs 16x16x16 f16 ->
// f32 products; tensor::run sets it from DeviceCaps), an f16 product with
// f32 sums, M and N multiples of 64, K of 16, each operand contiguous along
// its rows or its columns (a transposed operand is a column-major load), and
// the offsets and strides multiples of 8 elements (16 bytes, what the loads
// need). Everything else takes the plain tiled kernels (ops/Linalg.cpp).
#include <algorithm>
#include <array>

#include "frontends/tensor/ops/LinalgKernels.h"

namespace eph::tensor::linalg {

using ir::Builder;
using ir::Value;
using ir::Values;

namespace {
constexpr int64_t kTileMN = 64, kStep = 16, kSub = kTileMN / 16;  // 4x4 accumulators

// The stride of an operand contiguous along one of its two matrix axes
// (rows: stride of the other axis, col-major false), or 0.
int64_t leading(int64_t sOuter, int64_t sInner, bool& colMajor) {
  if (sInner == 1 && sOuter % 8 == 0 && sOuter > 0) return colMajor = false, sOuter;
  if (sOuter == 1 && sInner % 8 == 0 && sInner > 0) return colMajor = true, sInner;
  return 0;
}

// The workgroup-scope kernel's tile of an M x N product (batches of them):
// LowerOptions' coopTile, half as wide where that leaves fewer than 128
// tiles and N allows (1024²: 32 tiles of 128x256 ran 0.0325 ms on the H200,
// 64 of 128x128 0.0204; 2048², 128 tiles: 0.060 against 0.067 ms).
// The k-steps a trip (LowerOptions::coopUnroll) where K allows, else 1.
std::array<int64_t, 4> workgroupTile(const LowerOptions& o, int64_t M, int64_t N, int64_t K, int64_t batches) {
  int64_t tm = o.coopTileM, tn = o.coopTileN, tk = o.coopTileK, u = std::max(1u, o.coopUnroll);
  if (tn >= 256 && (M / tm) * (N / tn) * batches < 128 && N % (tn / 2) == 0) tn /= 2;
  return {tm, tn, tk, K % (tk * u) == 0 ? u : 1};
}

// Workgroup-scope matrices: M, N and K multiples of the tile, each operand
// contiguous along its rows or columns with strides of 8 elements.
bool workgroupApplies(const LowerOptions& o, DType t, const Operand& a, const Operand& b, const Shape& vshape) {
  if (!o.coopMatrixWorkgroup || t != DType::F16 || a.dtype != DType::F16 || b.dtype != DType::F16) return false;
  const size_t r = vshape.size();
  const int64_t M = vshape[r - 2], N = vshape[r - 1], K = a.shape[r - 1];
  const int64_t batches = numel(Shape(vshape.begin(), vshape.end() - 2));
  if (M == 0 || N == 0 || K == 0 || batches > 65535) return false;
  const std::array<int64_t, 4> tile = workgroupTile(o, M, N, K, batches);
  if (M % tile[0] || N % tile[1] || K % tile[2]) return false;
  bool colMajor = false;
  if (!leading(a.strides[r - 2], a.strides[r - 1], colMajor) || !leading(b.strides[r - 2], b.strides[r - 1], colMajor))
    return false;
  for (size_t d = 0; d + 2 < r; ++d)
    if (a.strides[d] % 8 || b.strides[d] % 8) return false;
  return a.offset % 8 == 0 && b.offset % 8 == 0 && N % 8 == 0;
}
}  // namespace

bool coopMatmulApplies(const LowerOptions& o, DType t, const Operand& a, const Operand& b, const Shape& vshape) {
  if (workgroupApplies(o, t, a, b, vshape)) return true;
  if (!o.coopMatrixSubgroup || t != DType::F16 || a.dtype != DType::F16 || b.dtype != DType::F16) return false;
  const size_t r = vshape.size();
  const int64_t M = vshape[r - 2], N = vshape[r - 1], K = a.shape[r - 1];
  const int64_t batches = numel(Shape(vshape.begin(), vshape.end() - 2));
  if (M % kTileMN || N % kTileMN || K % kStep || M == 0 || N == 0 || K == 0 || batches > 65535) return false;
  bool colMajor = false;
  if (!leading(a.strides[r - 2], a.strides[r - 1], colMajor) || !leading(b.strides[r - 2], b.strides[r - 1], colMajor))
    return false;
  // Every batch's base a multiple of 8 elements too.
  for (size_t d = 0; d + 2 < r; ++d)
    if (a.strides[d] % 8 || b.strides[d] % 8) return false;
  return a.offset % 8 == 0 && b.offset % 8 == 0 && (M / kTileMN) * (N / kTileMN) <= 65535;
}

namespace {

// Row-major A and B with M and N multiples of 128 and K of 32 on a device of
// 32-wide subgroups: four subgroups share a 128x128 tile of C (each a 64x64
// quarter as 4x4 accumulators), and each k-step of 32 is first copied into
// workgroup memory by the whole workgroup (8-byte vector loads, rows padded
// by 8 elements against bank conflicts), then multiplied, 32 multiply-adds a
// subgroup. The sums leave through a 16x16 staging tile per subgroup,
// converted to f16. The next k-step's loads are not held in registers while
// this one's products run: the kernel takes 243 registers without them and
// 255 (the most) with them, and ran 0.81 -> 0.76 ms at 4096 and 6.02 ->
// 5.86-5.90 at 8192 on the H200 without (bench/RESULTS.md); the workgroups
// an SM runs at once overlap one's loads with another's products.
// k-steps of 32: 16 ran 0.915 / 7.128 ms and 64 1.121 / 8.827 ms at 4096 / 8192
// on the H200, against 0.802 / 6.036 (bench/RESULTS.md).
// With eight subgroups (LowerOptions::coopSubgroups) each computes a 64x32
// part as 4x2 accumulators (half the registers: more subgroups in flight per
// SM, where the tiles alone do not fill the GPU).
constexpr int64_t kBig = 128, kBigK = 32, kPadA = kBigK + 8, kPadB = kBig + 8;
constexpr int64_t kVecRowA = kBigK / 4, kVecRowB = kBig / 4;  // vec4s in a row of each tile

bool sharedApplies(const LowerOptions& o, const Operand& a, const Operand& b, const Shape& vshape) {
  const size_t r = vshape.size();
  const int64_t M = vshape[r - 2], N = vshape[r - 1], K = a.shape[r - 1];
  return o.coopMatrixSubgroup == 32 && M % kBig == 0 && N % kBig == 0 && K % kBigK == 0 && a.strides[r - 1] == 1 &&
         b.strides[r - 1] == 1;
}

Value* sharedCoopMatmul(Lowering& l, DType t, const Operand& a, const Operand& b, const Shape& vshape) {
  const size_t r = vshape.size();
  const int64_t M = vshape[r - 2], N = vshape[r - 1], K = a.shape[r - 1];
  const int64_t batches = numel(Shape(vshape.begin(), vshape.end() - 2));
  const int64_t tilesN = N / kBig, steps = K / kBigK;
  // Eight subgroups where the tiles are fewer than 128 (1024²: 0.042 -> 0.034
  // ms on the H200), four where there are enough to fill the GPU (4096²:
  // 0.80 against 0.99 ms with eight; bench/RESULTS.md).
  const int64_t tiles = (M / kBig) * tilesN * batches;
  const int64_t warps = l.opts.coopSubgroups == 4 || l.opts.coopSubgroups == 8 ? l.opts.coopSubgroups
                        : tiles < 128                                            ? 8
                                                                                 : 4;
  const int64_t W = 32 * warps;
  const int64_t kCopies = kBig * kBigK / 4 / W;  // vec4s of each tile an invocation copies
  const int64_t subN = kBig / (warps / 2) / 16;  // accumulators across a subgroup's part: 4 (64 wide) or 2 (32)
  std::vector<Operand> in = {a, b};
  auto build = [&](Builder& bb, const std::vector<Value*>& bufs) {
    ir::Context& ctx = l.ctx;
    const std::vector<Value*> inBufs(bufs.begin(), bufs.end() - 1);
    Kernel k(bb, ctx, in, inBufs);
    const ir::Type* f32 = ctx.f32();
    const ir::Type* f16 = ctx.floatType(16);
    const ir::Type* accT = ctx.coopMatrixType(f32, 16, 16);
    const ir::Type* halfT = ctx.coopMatrixType(f16, 16, 16);
    Value* As = bb.workgroupAlloc(f16, kBig * kPadA);
    Value* Bs = bb.workgroupAlloc(f16, kBigK * kPadB);
    Value* staged = bb.workgroupAlloc(f32, warps * 256);
    Value* lid = bb.localId(0, ctx.i32());
    Value* warp = bb.div(lid, k.i32(32));
    Value* lane = bb.rem(lid, k.i32(32));
    Value* gx = bb.workgroupId(0, ctx.i32());
    Value* gz = bb.workgroupId(2, ctx.i32());
    Value* row0 = bb.mul(bb.div(gx, k.i32(tilesN)), k.i32(kBig));
    Value* col0 = bb.mul(bb.rem(gx, k.i32(tilesN)), k.i32(kBig));
    Value* wm = bb.mul(bb.div(warp, k.i32(warps / 2)), k.i32(64));
    Value* wn = bb.mul(bb.rem(warp, k.i32(warps / 2)), k.i32(16 * subN));
    const auto [baseA, baseB, sam, sak, sbk, sbn] = operandBases(k, gz, a, b, vshape, {});
    (void)sak, (void)sbn;
    // Invocation lid copies vec4 c = lid + W u (u < kCopies) of each
    // tile: A's row c / kVecRowA, k (c % kVecRowA)·4; B's k c / kVecRowB,
    // column (c % kVecRowB)·4.
    auto globalLoads = [&](Builder& ib, Value* step) {
      Value* kk = ib.mul(step, k.i32(kBigK));
      Values v;
      for (int64_t u = 0; u < kCopies; ++u) {
        Value* c = addConst(k, lid, u * W);
        Value* row = ib.add(row0, ib.div(c, k.i32(kVecRowA)));
        Value* off = ib.add(baseA, ib.add(mulConst(k, row, sam), ib.add(kk, ib.mul(ib.rem(c, k.i32(kVecRowA)), k.i32(4)))));
        v.push_back(ib.vecLoad(inBufs[0], ib.div(off, k.i32(4)), 4));
      }
      for (int64_t u = 0; u < kCopies; ++u) {
        Value* c = addConst(k, lid, u * W);
        Value* kr = ib.add(kk, ib.div(c, k.i32(kVecRowB)));
        Value* off = ib.add(baseB, ib.add(mulConst(k, kr, sbk), ib.add(col0, ib.mul(ib.rem(c, k.i32(kVecRowB)), k.i32(4)))));
        v.push_back(ib.vecLoad(inBufs[1], ib.div(off, k.i32(4)), 4));
      }
      return v;
    };
    auto storeShared = [&](Builder& ib, const Values& v) {
      for (int64_t u = 0; u < kCopies; ++u) {
        Value* c = addConst(k, lid, u * W);
        Value* at = ib.add(ib.mul(ib.div(c, k.i32(kVecRowA)), k.i32(kPadA)), ib.mul(ib.rem(c, k.i32(kVecRowA)), k.i32(4)));
        for (unsigned e = 0; e < 4; ++e) ib.store(As, addConst(k, at, e), ib.vecExtract(v[size_t(u)], e));
      }
      for (int64_t u = 0; u < kCopies; ++u) {
        Value* c = addConst(k, lid, u * W);
        Value* at = ib.add(ib.mul(ib.div(c, k.i32(kVecRowB)), k.i32(kPadB)), ib.mul(ib.rem(c, k.i32(kVecRowB)), k.i32(4)));
        for (unsigned e = 0; e < 4; ++e) ib.store(Bs, addConst(k, at, e), ib.vecExtract(v[size_t(kCopies + u)], e));
      }
    };
    Value* zero = bb.coopFill(bb.constFloat(f32, 0), accT);
    const size_t nAcc = size_t(4 * subN);
    Values carried(nAcc, zero);
    Value* trips = bb.mul(k.i32(steps), bb.numWorkgroups(1, ctx.i32()));
    ir::Op* loop = bb.forOp(k.i32(0), trips, k.i32(1), carried, [&](Builder& ib, Value* step, const Values& c) -> Values {
      ib.barrier();  // every subgroup is done with the previous step's tiles
      storeShared(ib, globalLoads(ib, step));
      ib.barrier();
      Values acc = c;
      for (int64_t ks = 0; ks < kBigK / 16; ++ks) {
        Values ta, tb;
        // Each offset first: a call evaluates its arguments in no fixed order.
        for (int64_t i = 0; i < 4; ++i) {
          Value* off = ib.add(ib.mul(addConst(k, wm, i * 16), k.i32(kPadA)), k.i32(ks * 16));
          ta.push_back(ib.coopLoad(As, off, k.i32(kPadA), halfT));
        }
        for (int64_t j = 0; j < subN; ++j) {
          Value* off = ib.add(k.i32(ks * 16 * kPadB), addConst(k, wn, j * 16));
          tb.push_back(ib.coopLoad(Bs, off, k.i32(kPadB), halfT));
        }
        for (int64_t i = 0; i < 4; ++i)
          for (int64_t j = 0; j < subN; ++j)
            acc[size_t(i * subN + j)] = ib.coopMulAdd(ta[size_t(i)], tb[size_t(j)], acc[size_t(i * subN + j)]);
      }
      return acc;
    });
    // Out, one 16x16 tile at a time through this subgroup's staging area:
    // lane l converts elements l, l + 32, ... and stores them.
    Value* out = bufs.back();
    Value* obase = bb.mul(gz, k.i32(M * N));
    Value* mine = bb.mul(warp, k.i32(256));
    const ir::Type* storage = irType(ctx, t);
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < subN; ++j) {
        bb.coopStore(staged, mine, k.i32(16), loop->result(unsigned(i * subN + j)));
        bb.barrier();
        for (int64_t u = 0; u < 256 / 32; ++u) {
          Value* e = addConst(k, lane, u * 32);
          Value* gm = bb.add(row0, bb.add(addConst(k, wm, i * 16), bb.div(e, k.i32(16))));
          Value* gn = bb.add(col0, bb.add(addConst(k, wn, j * 16), bb.rem(e, k.i32(16))));
          Value* v = bb.cast(bb.load(staged, bb.add(mine, e)), storage);
          bb.store(out, bb.add(obase, bb.add(bb.mul(gm, k.i32(N)), gn)), v);
        }
        bb.barrier();
      }
  };
  return l.custom("matmul_coop_shared", t, numel(vshape), in, {unsigned(W), 1, 1},
                  {(M / kBig) * tilesN, 1, batches}, build, shapeText(vshape) + "|coop-shared" + std::to_string(warps));
}

// Workgroup-scope cooperative matrices (VK_NV_cooperative_matrix2): a
// workgroup computes a TM x TN tile of C as one accumulator; each k-step of
// TK loads A's TM x TK and B's TK x TN tiles straight from device memory and
// multiplies them, U k-steps a trip of the loop. The driver spreads the
// products over the workgroup's subgroups and stages the tiles through
// workgroup memory itself (the copies, their pipelining and the
// matrix-unit instructions are its choice). The sums are converted to f16
// as a whole and stored.
Value* workgroupCoopMatmul(Lowering& l, DType t, const Operand& a, const Operand& b, const Shape& vshape) {
  const size_t r = vshape.size();
  const int64_t M = vshape[r - 2], N = vshape[r - 1], K = a.shape[r - 1];
  const int64_t batches = numel(Shape(vshape.begin(), vshape.end() - 2));
  const std::array<int64_t, 4> tile = workgroupTile(l.opts, M, N, K, batches);
  const int64_t TM = tile[0], TN = tile[1], TK = tile[2], U = tile[3];
  const int64_t tilesN = N / TN;
  std::vector<Operand> in = {a, b};
  auto build = [&](Builder& bb, const std::vector<Value*>& bufs) {
    ir::Context& ctx = l.ctx;
    const std::vector<Value*> inBufs(bufs.begin(), bufs.end() - 1);
    Kernel k(bb, ctx, in, inBufs);
    using ir::CoopScope, ir::CoopUse;
    const ir::Type *f32 = ctx.f32(), *f16 = ctx.floatType(16);
    auto matrix = [&](const ir::Type* elem, int64_t rows, int64_t cols, CoopUse use) {
      return ctx.coopMatrixType(elem, unsigned(rows), unsigned(cols), CoopScope::Workgroup, use);
    };
    const ir::Type *accT = matrix(f32, TM, TN, CoopUse::Acc), *aT = matrix(f16, TM, TK, CoopUse::A),
                   *bT = matrix(f16, TK, TN, CoopUse::B), *outT = matrix(f16, TM, TN, CoopUse::Acc);
    Value* gx = bb.workgroupId(0, ctx.i32());
    Value* gz = bb.workgroupId(2, ctx.i32());
    const auto [tileM, tileN] = tileOrder(k, gx, M / TM, tilesN, l.opts.coopGroupRows);
    Value* row0 = bb.mul(tileM, k.i32(TM));
    Value* col0 = bb.mul(tileN, k.i32(TN));
    const auto [baseA, baseB, sam, sak, sbk, sbn] = operandBases(k, gz, a, b, vshape, {});
    bool aCol = false, bCol = false;
    const int64_t lda = leading(sam, sak, aCol), ldb = leading(sbk, sbn, bCol);
    Value* rowA = bb.add(baseA, mulConst(k, row0, sam));
    Value* colB = bb.add(baseB, mulConst(k, col0, sbn));
    Value* zero = bb.coopFill(bb.constFloat(f32, 0), accT);
    // The trip count times num_workgroups.y (always 1) keeps the shader
    // compiler from unrolling the loop whole (as in blockedMatmul).
    Value* trips = bb.mul(k.i32(K / (TK * U)), bb.numWorkgroups(1, ctx.i32()));
    auto trip = [&](Builder& ib, Value* step, const Values& c) -> Values {
      Value* acc = c[0];
      for (int64_t u = 0; u < U; ++u) {
        Value* kk = ib.add(ib.mul(step, k.i32(TK * U)), k.i32(TK * u));
        Value* ta = ib.coopLoad(inBufs[0], ib.add(rowA, mulConst(k, kk, sak)), k.i32(lda), aT, aCol);
        Value* tb = ib.coopLoad(inBufs[1], ib.add(colB, mulConst(k, kk, sbk)), k.i32(ldb), bT, bCol);
        acc = ib.coopMulAdd(ta, tb, acc);
      }
      return {acc};
    };
    ir::Op* loop = bb.forOp(k.i32(0), trips, k.i32(1), {zero}, trip);
    Value* obase = bb.add(bb.mul(gz, k.i32(M * N)), bb.add(bb.mul(row0, k.i32(N)), col0));
    bb.coopStore(bufs.back(), obase, k.i32(N), bb.coopConvert(loop->result(0), outT));
  };
  return l.custom("matmul_coop_workgroup", t, numel(vshape), in, {l.opts.coopMatrixWorkgroup, 1, 1},
                  {(M / TM) * tilesN, 1, batches}, build,
                  shapeText(vshape) + "|coop-workgroup" + std::to_string(l.opts.coopMatrixWorkgroup) + "x" +
                      std::to_string(TM) + "x" + std::to_string(TN) + "x" + std::to_string(TK) + "u" +
                      std::to_string(U) + "g" + std::to_string(l.opts.coopGroupRows));
}

}  // namespace

Value* coopMatmul(Lowering& l, DType t, const Operand& a, const Operand& b, const Shape& vshape) {
  if (workgroupApplies(l.opts, t, a, b, vshape)) return workgroupCoopMatmul(l, t, a, b, vshape);
  if (sharedApplies(l.opts, a, b, vshape)) return sharedCoopMatmul(l, t, a, b, vshape);
  const size_t r = vshape.size();
  const int64_t M = vshape[r - 2], N = vshape[r - 1], K = a.shape[r - 1];
  const int64_t batches = numel(Shape(vshape.begin(), vshape.end() - 2));
  const int64_t tilesN = N / kTileMN;
  const unsigned S = l.opts.coopMatrixSubgroup;
  std::vector<Operand> in = {a, b};
  auto build = [&](Builder& bb, const std::vector<Value*>& bufs) {
    ir::Context& ctx = l.ctx;
    const std::vector<Value*> inBufs(bufs.begin(), bufs.end() - 1);
    Kernel k(bb, ctx, in, inBufs);
    const ir::Type* f32 = ctx.f32();
    const ir::Type* accT = ctx.coopMatrixType(f32, 16, 16);
    const ir::Type* halfT = ctx.coopMatrixType(ctx.floatType(16), 16, 16);
    Value* staged = bb.workgroupAlloc(f32, kTileMN * kTileMN);
    Value* gx = bb.workgroupId(0, ctx.i32());
    Value* gz = bb.workgroupId(2, ctx.i32());
    Value* row0 = bb.mul(bb.div(gx, k.i32(tilesN)), k.i32(kTileMN));
    Value* col0 = bb.mul(bb.rem(gx, k.i32(tilesN)), k.i32(kTileMN));
    const auto [baseA, baseB, sam, sak, sbk, sbn] = operandBases(k, gz, a, b, vshape, {});
    bool aCol = false, bCol = false;
    const int64_t lda = leading(sam, sak, aCol), ldb = leading(sbk, sbn, bCol);
    auto load = [&](Builder& ib, Value* buf, Value* off, int64_t ld, bool colMajor) {
      return ib.coopLoad(buf, off, k.i32(ld), halfT, colMajor);
    };
    Value* zero = bb.coopFill(bb.constFloat(f32, 0), accT);
    // The four A tiles (rows) and four B tiles (columns) of k-step `step`.
    auto tiles = [&](Builder& ib, Value* step) {
      Value* kk = ib.mul(step, k.i32(kStep));
      Values t;
      for (int64_t i = 0; i < kSub; ++i) {
        Value* row = addConst(k, row0, i * 16);
        t.push_back(load(ib, inBufs[0], ib.add(baseA, ib.add(mulConst(k, row, sam), mulConst(k, kk, sak))), lda, aCol));
      }
      for (int64_t j = 0; j < kSub; ++j) {
        Value* col = addConst(k, col0, j * 16);
        t.push_back(load(ib, inBufs[1], ib.add(baseB, ib.add(mulConst(k, kk, sbk), mulConst(k, col, sbn))), ldb, bCol));
      }
      return t;
    };
    // The k loop multiplies step s's tiles (read the trip before, carried in
    // registers) while step s+1's loads are in flight (the last trip re-reads
    // the last step: in bounds, unused). Its trip count times
    // num_workgroups.y (always 1) keeps the shader compiler from unrolling
    // it whole (as in blockedMatmul).
    Value* trips = bb.mul(k.i32(K / kStep), bb.numWorkgroups(1, ctx.i32()));
    Value* last = k.i32(K / kStep - 1);
    Values carried(size_t(kSub * kSub), zero);
    for (Value* t : tiles(bb, k.i32(0))) carried.push_back(t);
    ir::Op* loop = bb.forOp(k.i32(0), trips, k.i32(1), carried,
                            [&](Builder& ib, Value* step, const Values& c) -> Values {
      Values next;
      Values ahead = tiles(ib, ib.min(ib.add(step, k.i32(1)), last));
      for (int64_t i = 0; i < kSub; ++i)
        for (int64_t j = 0; j < kSub; ++j)
          next.push_back(
              ib.coopMulAdd(c[size_t(kSub * kSub + i)], c[size_t(kSub * kSub + kSub + j)], c[size_t(i * kSub + j)]));
      next.insert(next.end(), ahead.begin(), ahead.end());
      return next;
    });
    for (int64_t i = 0; i < kSub; ++i)
      for (int64_t j = 0; j < kSub; ++j) {
        Value* off = k.i32(i * 16 * kTileMN + j * 16);  // first: a call evaluates its arguments in no fixed order
        bb.coopStore(staged, off, k.i32(kTileMN), loop->result(unsigned(i * kSub + j)));
      }
    bb.barrier();
    // Each invocation converts and stores elements lid, lid + S, ... of the tile.
    Value* lid = bb.localId(0, ctx.i32());
    Value* out = bufs.back();
    Value* obase = bb.mul(gz, k.i32(M * N));
    const ir::Type* storage = irType(ctx, t);
    bb.forOp(lid, k.i32(kTileMN * kTileMN), k.i32(S), [&](Builder& ib, Value* e, const Values&) {
      Value* gm = ib.add(row0, ib.div(e, k.i32(kTileMN)));
      Value* gn = ib.add(col0, ib.rem(e, k.i32(kTileMN)));
      Value* v = ib.cast(ib.load(staged, e), storage);
      ib.store(out, ib.add(obase, ib.add(ib.mul(gm, k.i32(N)), gn)), v);
    });
  };
  return l.custom("matmul_coop", t, numel(vshape), in, {S, 1, 1}, {(M / kTileMN) * tilesN, 1, batches}, build,
                  shapeText(vshape) + "|coop" + std::to_string(S));
}

}  // namespace eph::tensor::linalg
