// The linalg family: matmul, gemm, einsum and attention (conv,
// conv_transpose and pooling: ConvTest.cpp) on every target against float64 references computed here, on
// several shapes (size 1, empty, odd) and non-contiguous views; errors name
// the op and the shapes.
#include <gtest/gtest.h>

#include <array>

#include <functional>
#include <map>

#include "frontends/tensor/Lower.h"
#include "ir/Printer.h"
#ifdef EPH_HAVE_LLVM
#include "targets/llvm/Llvm.h"
#endif
#include "tests/tensor/LinalgTestUtil.h"
#include "tests/tensor/TensorTestUtil.h"

namespace eph::tensor::test {
namespace {


// ---- matmul ---------------------------------------------------------------------------------

// numpy's matmul in float64.
Vec refMatmul(const Vec& a, Shape as, const Vec& b, Shape bs, Shape& out) {
  bool av = as.size() == 1, bv = bs.size() == 1;
  if (av) as.insert(as.begin(), 1);
  if (bv) bs.push_back(1);
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  Shape batch = *broadcastShapes(ab, bb);
  int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  Shape full = batch;
  full.push_back(M);
  full.push_back(N);
  Vec c(size_t(numel(full)));
  for (int64_t i = 0; i < numel(full); ++i) {
    Idx idx = unravel(i, full);
    auto at = [&](const Shape& s, int64_t r, int64_t col) {
      Idx j(s.size());
      size_t shift = batch.size() - (s.size() - 2);
      for (size_t d = 0; d + 2 < s.size(); ++d) j[d] = s[d] == 1 ? 0 : idx[d + shift];
      j[s.size() - 2] = r;
      j[s.size() - 1] = col;
      return ravel(j, s);
    };
    double sum = 0;
    for (int64_t k = 0; k < K; ++k)
      sum += a[size_t(at(as, idx[idx.size() - 2], k))] * b[size_t(at(bs, k, idx.back()))];
    c[size_t(i)] = sum;
  }
  out = batch;
  if (!av) out.push_back(M);
  if (!bv) out.push_back(N);
  return c;
}

TEST(Linalg, MatmulShapesBroadcastVectorsAndEmpty) {
  struct Case { Shape a, b; };
  std::vector<Case> cases = {{{3, 5}, {5, 4}}, {{1, 1}, {1, 1}}, {{5}, {5, 3}}, {{4, 5}, {5}}, {{5}, {5}},
                             {{2, 1, 3, 4}, {3, 4, 2}}, {{0, 3}, {3, 4}}, {{2, 0}, {0, 3}}, {{7, 9}, {2, 9, 5}}};
  Program p;
  std::vector<HostTensor> inputs;
  std::vector<Vec> want;
  uint64_t seed = 10;
  for (size_t i = 0; i < cases.size(); ++i) {
    Vec av = randomValues(size_t(numel(cases[i].a)), seed++), bv = randomValues(size_t(numel(cases[i].b)), seed++);
    Tensor a = p.input("a" + std::to_string(i), DType::F32, cases[i].a);
    Tensor b = p.input("b" + std::to_string(i), DType::F32, cases[i].b);
    Tensor c = matmul(a, b);
    Shape out;
    want.push_back(refMatmul(av, cases[i].a, bv, cases[i].b, out));
    EXPECT_EQ(c.shape(), out) << i;
    p.output("c" + std::to_string(i), c);
    inputs.push_back(HostTensor::of(DType::F32, cases[i].a, av));
    inputs.push_back(HostTensor::of(DType::F32, cases[i].b, bv));
  }
  expectOnAllTargets(p, inputs, want, 1e-5);
}

TEST(Linalg, MatmulReadsTransposedAndSlicedViews) {
  // a = transpose of a [5, 3] input -> [3, 5]; b = every other row of a [9, 4] input -> [5, 4]; a batch view too.
  Program p;
  Vec at = randomValues(15, 1), b9 = randomValues(36, 2), bt = randomValues(2 * 6 * 5, 3);
  Tensor a = transpose(p.input("at", DType::F32, {5, 3}));
  Tensor b = slice(p.input("b9", DType::F32, {9, 4}), 0, 0, 9, 2);
  Tensor bb = transpose(p.input("bt", DType::F32, {2, 6, 5}), {0, 2, 1});  // [2, 5, 6]
  p.output("c", matmul(a, b));
  p.output("d", matmul(a, bb));
  Vec av = transposed(at, 5, 3), bv, bbv(60);
  for (int r = 0; r < 9; r += 2)
    for (int c = 0; c < 4; ++c) bv.push_back(b9[size_t(r * 4 + c)]);
  for (int z = 0; z < 2; ++z)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 6; ++j) bbv[size_t(z * 30 + i * 6 + j)] = bt[size_t(z * 30 + j * 5 + i)];
  Shape s1, s2;
  Vec w1 = refMatmul(av, {3, 5}, bv, {5, 4}, s1), w2 = refMatmul(av, {3, 5}, bbv, {2, 5, 6}, s2);
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {5, 3}, at), HostTensor::of(DType::F32, {9, 4}, b9),
                         HostTensor::of(DType::F32, {2, 6, 5}, bt)}, {w1, w2}, 1e-5);
}

TEST(Linalg, MatmulTiledOddSizesBatchesAndViews) {
  // Big enough for the workgroup-tiled kernel: edges that are not multiples of the tile, a batch, a transposed b.
  Program p;
  Vec av = randomValues(70 * 33, 4), bv = randomValues(33 * 65, 5), cv = randomValues(2 * 40 * 20, 6),
      dv = randomValues(36 * 20, 7);
  Tensor a = p.input("a", DType::F32, {70, 33});
  Tensor b = p.input("b", DType::F32, {33, 65});
  Tensor c = p.input("c", DType::F32, {2, 40, 20});
  Tensor d = transpose(p.input("dt", DType::F32, {36, 20}));  // [20, 36]
  p.output("ab", matmul(a, b));
  p.output("cd", matmul(c, d));
  Shape s1, s2;
  Vec w1 = refMatmul(av, {70, 33}, bv, {33, 65}, s1);
  Vec w2 = refMatmul(cv, {2, 40, 20}, transposed(dv, 36, 20), {20, 36}, s2);
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {70, 33}, av), HostTensor::of(DType::F32, {33, 65}, bv),
                         HostTensor::of(DType::F32, {2, 40, 20}, cv), HostTensor::of(DType::F32, {36, 20}, dv)},
                     {w1, w2}, 1e-5);
}

// Each matmul kernel (LowerOptions::matmulBlock: the 64-invocation kernel and
// the blocked one with 4x4 and 8x8 blocks) over several tiles in M and N,
// K steps with a partial last one, a broadcast batch and a transposed b; and
// sizes that are multiples of both tiles (no bounds checks), with an odd
// number of K steps of 8.
TEST(Linalg, MatmulEveryKernelOverManyTiles) {
  for (auto [M, K, N] : {std::array<int64_t, 3>{150, 21, 140}, std::array<int64_t, 3>{128, 24, 128}}) {
    SCOPED_TRACE("M K N " + std::to_string(M) + " " + std::to_string(K) + " " + std::to_string(N));
    Program p;
    Vec av = randomValues(size_t(2 * M * K), 8), bv = randomValues(size_t(N * K), 9);
    Tensor a = p.input("a", DType::F32, {2, M, K});
    Tensor b = transpose(p.input("bt", DType::F32, {N, K}));  // [K, N], contiguous along K
    p.output("ab", matmul(a, b));
    Tensor c = p.input("c", DType::F32, {M, N});
    p.output("atc", matmul(transpose(a, {0, 2, 1}), c));  // aᵀ [2, K, M], contiguous along its rows
    Shape s;
    Vec want = refMatmul(av, {2, M, K}, transposed(bv, N, K), {K, N}, s);
    Vec at(size_t(2 * K * M)), cv = randomValues(size_t(M * N), 10);
    for (int64_t z = 0; z < 2; ++z) {
      Vec t = transposed(Vec(av.begin() + z * M * K, av.begin() + (z + 1) * M * K), M, K);
      std::copy(t.begin(), t.end(), at.begin() + z * K * M);
    }
    Vec wantT = refMatmul(at, {2, K, M}, cv, {M, N}, s);
    for (unsigned block : {0u, 4u, 8u}) {
      SCOPED_TRACE("matmulBlock " + std::to_string(block));
      LowerOptions o;
      o.tune = false;
      o.matmulBlock = block;
      expectOnAllTargets(p, {HostTensor::of(DType::F32, {2, M, K}, av), HostTensor::of(DType::F32, {N, K}, bv),
                             HostTensor::of(DType::F32, {M, N}, cv)},
                         {want, wantT}, 1e-5, o);
    }
  }
}

// The blocked kernel's shapes (LowerOptions::matmulKStep, matmulWide) and
// its vec4 reads of device memory (matmulVectorLoads): a product 48 rows
// high (64-row tiles, 64 x 64/128/256, blocks of 4 or 8 rows) with a broadcast batch and K a
// partial last step of 16, a product 36 columns wide whose A is read along M
// (aᵀ, vec4s along its rows), one of exact tiles (no bounds checks), and one
// whose B starts at an odd element (scalar reads), one of 4 x 2 tiles in
// groups of rows (LowerOptions::matmulGroupRows), invocations in rows or in
// 4 x 8 patches (matmulWarpTiles); every target against
// float64 sums, and the vec4 reads present exactly where they apply.
TEST(Linalg, MatmulBlockShapesAndVectorReads) {
  Vec av = randomValues(2 * 48 * 40, 1), bv = randomValues(40 * 200, 2), gv = randomValues(40 * 204, 7), tv = randomValues(40 * 136, 3),
      cv = randomValues(40 * 36, 4), ev = randomValues(128 * 32, 5), fv = randomValues(32 * 128, 6),
      hv = randomValues(128 * 40, 8), uv = randomValues(200 * 24, 9), vv = randomValues(24 * 136, 10);
  Program p;
  Tensor a = p.input("a", DType::F32, {2, 48, 40}), b = p.input("b", DType::F32, {40, 200});
  Tensor at = p.input("at", DType::F32, {40, 136}), c = p.input("c", DType::F32, {40, 36});
  Tensor e = p.input("e", DType::F32, {128, 32}), f = p.input("f", DType::F32, {32, 128});
  Tensor h = p.input("h", DType::F32, {128, 40}), g = p.input("g", DType::F32, {40, 204});
  p.output("wide", matmul(a, b));
  p.output("narrow", matmul(transpose(at), c));
  p.output("exact", matmul(e, f));
  p.output("odd", matmul(h, slice(g, 1, 1, 201)));
  Tensor u = p.input("u", DType::F32, {200, 24}), v = p.input("v", DType::F32, {24, 136});
  p.output("tall", matmul(u, v));  // 4 x 2 tiles of 64 x 128: groups of rows with a short last one
  auto product = [](auto A, auto B, int64_t M, int64_t K, int64_t N) {  // A(m, k), B(k, n): float64 sums
    Vec c(size_t(M * N));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += A(m, k) * B(k, n);
        c[size_t(m * N + n)] = s;
      }
    return c;
  };
  Vec wide;
  for (int64_t z = 0; z < 2; ++z) {
    Vec w = product([&](int64_t m, int64_t k) { return av[size_t((z * 48 + m) * 40 + k)]; },
                    [&](int64_t k, int64_t n) { return bv[size_t(k * 200 + n)]; }, 48, 40, 200);
    wide.insert(wide.end(), w.begin(), w.end());
  }
  Vec narrow = product([&](int64_t m, int64_t k) { return tv[size_t(k * 136 + m)]; },
                       [&](int64_t k, int64_t n) { return cv[size_t(k * 36 + n)]; }, 136, 40, 36);
  Vec exact = product([&](int64_t m, int64_t k) { return ev[size_t(m * 32 + k)]; },
                      [&](int64_t k, int64_t n) { return fv[size_t(k * 128 + n)]; }, 128, 32, 128);
  Vec odd = product([&](int64_t m, int64_t k) { return hv[size_t(m * 40 + k)]; },
                    [&](int64_t k, int64_t n) { return gv[size_t(k * 204 + n + 1)]; }, 128, 40, 200);
  std::vector<HostTensor> in = {HostTensor::of(DType::F32, {2, 48, 40}, av), HostTensor::of(DType::F32, {40, 200}, bv),
                                HostTensor::of(DType::F32, {40, 136}, tv), HostTensor::of(DType::F32, {40, 36}, cv),
                                HostTensor::of(DType::F32, {128, 32}, ev), HostTensor::of(DType::F32, {32, 128}, fv),
                                HostTensor::of(DType::F32, {128, 40}, hv), HostTensor::of(DType::F32, {40, 204}, gv),
                                HostTensor::of(DType::F32, {200, 24}, uv), HostTensor::of(DType::F32, {24, 136}, vv)};
  Vec tall = product([&](int64_t m, int64_t k) { return uv[size_t(m * 24 + k)]; },
                     [&](int64_t k, int64_t n) { return vv[size_t(k * 136 + n)]; }, 200, 24, 136);
  struct Config {
    unsigned block, kstep, wide, wideRows, threadRows;
    bool vec;
    unsigned groupRows = 1;
    bool warpTiles = false;
  };
  for (Config cf : {Config{8, 8, 4, 4, 16, true}, Config{8, 16, 8, 4, 16, true}, Config{8, 16, 16, 4, 8, false},
                    Config{4, 16, 16, 4, 8, true}, Config{8, 8, 8, 8, 8, true, 2, true},
                    Config{8, 16, 8, 8, 16, false, 3, true}}) {
    SCOPED_TRACE("block " + std::to_string(cf.block) + ", k-step " + std::to_string(cf.kstep) + ", wide " +
                 std::to_string(cf.wide) + " x " + std::to_string(cf.wideRows) + ", thread rows " +
                 std::to_string(cf.threadRows) + ", group rows " + std::to_string(cf.groupRows) +
                 (cf.warpTiles ? ", warp tiles" : "") +
                 (cf.vec ? ", vec4 reads" : ", scalar reads"));
    LowerOptions o;
    o.tune = false;
    o.matmulBlock = cf.block;
    o.matmulKStep = cf.kstep;
    o.matmulWide = cf.wide;
    o.matmulWideRows = cf.wideRows;
    o.matmulThreadRows = cf.threadRows;
    o.matmulGroupRows = cf.groupRows;
    o.matmulWarpTiles = cf.warpTiles;
    o.matmulVectorLoads = cf.vec;
    o.maxWorkgroupMemory = 32768;  // lavapipe's (64 x 256 tiles in steps of 16 need 40 KiB: steps of 8)
    ir::Context ctx;
    auto lowered = lower(ctx, p, o);
    ASSERT_TRUE(lowered) << lowered.error().message;
    int blocked = 0, withVec = 0;  // kernels, and those with vec4 reads of device memory
    for (const auto& f : lowered->module->functions())
      if (f->kind() == ir::FunctionKind::Kernel && f->name().find("matmul_blocked") != std::string::npos) {
        ++blocked;
        int vecLoads = 0;
        f->walk([&](ir::Op* op) { vecLoads += op->is(ir::OpId::VecLoad); });
        withVec += vecLoads > 0;
      }
    EXPECT_EQ(blocked, 5);
    EXPECT_EQ(withVec, cf.vec ? 4 : 0);  // wide (B), narrow (A and B), exact (B), tall (B); not odd
    expectOnAllTargets(p, in, {wide, narrow, exact, odd, tall}, 1e-5, o);
  }
}

// Split K (LowerOptions::matmulSplitGroups, forced here): a batched product
// whose last k-step is partial, a product with a bias + relu epilogue, and a
// conv as an implicit GEMM (parts.store), each summed from several parts of K
// by a second kernel, against the same program without splits on the
// interpreter, on every target.
TEST(Linalg, MatmulSplitK) {
  Program p;
  Tensor a = p.input("a", DType::F32, {2, 36, 125});
  Tensor b = p.input("b", DType::F32, {125, 40});
  p.output("ab", matmul(a, b));
  Tensor w = p.constant(HostTensor::of(DType::F32, {125, 40}, randomValues(125 * 40, 3)));
  Tensor bias = p.constant(HostTensor::of(DType::F32, {40}, randomValues(40, 4)));
  p.output("lin", relu(matmul(reshape(a, {72, 125}), w) + bias));
  Tensor x = p.input("x", DType::F32, {1, 16, 9, 9});
  ConvOptions co;
  co.pads = {1, 1, 1, 1};
  p.output("conv", conv(x, p.constant(HostTensor::of(DType::F32, {40, 16, 3, 3}, randomValues(40 * 16 * 9, 5))),
                        p.constant(HostTensor::of(DType::F32, {40}, randomValues(40, 6))), co));
  std::vector<HostTensor> in = {HostTensor::of(DType::F32, {2, 36, 125}, randomValues(2 * 36 * 125, 1)),
                                HostTensor::of(DType::F32, {125, 40}, randomValues(125 * 40, 2)),
                                HostTensor::of(DType::F32, {1, 16, 9, 9}, randomValues(16 * 81, 7))};
  LowerOptions o;
  o.tune = false;
  o.matmulBlock = 4;
  auto want = run(p, "interp", in, o);
  ASSERT_TRUE(want) << want.error().message;
  o.matmulSplitGroups = 4096;
  ir::Context ctx;
  auto c = lower(ctx, p, o);
  ASSERT_TRUE(c) << c.error().message;
  int sums = 0;
  c->module->lookup("main")->walk([&](ir::Op* op) {
    sums += op->is(ir::OpId::Dispatch) && op->symbolAttr("kernel").find("matmul_split_sum") != std::string::npos;
  });
  EXPECT_EQ(sums, 3) << ir::print(*c->module->lookup("main"));
  std::vector<Vec> wantV;
  for (const HostTensor& h : *want) {
    Vec v(size_t(h.size()));
    for (int64_t i = 0; i < h.size(); ++i) v[size_t(i)] = h.get(i);
    wantV.push_back(v);
  }
  expectOnAllTargets(p, in, wantV, 1e-5, o);
}

// The strip matmul (LowerOptions::matmulLanes, the cpu target's): edges that
// are not multiples of the strip (its last strip moves back), C narrower than
// a strip, K not a multiple of the unrolled steps, a batch with a broadcast
// B, an epilogue, a B read across N (copied contiguous first), f16 and i32,
// A's rows read as vec4s, 128 lanes narrowed to 64 for N = 64, K split in
// parts (LowerOptions::matmulStripPanel) with and without an epilogue, B
// packed strip by strip (LowerOptions::matmulStripPack: the f32 products,
// a transposed B and a batch's broadcast B too) or not; against float64
// sums, with the strip forced on every target.
TEST(Linalg, MatmulStrip) {
  auto product = [](const Vec& a, const Vec& b, int64_t batches, int64_t M, int64_t K, int64_t N, bool bT) {
    Vec c(size_t(batches * M * N));
    for (int64_t z = 0; z < batches; ++z)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double s = 0;
          for (int64_t k = 0; k < K; ++k) s += a[size_t((z * M + m) * K + k)] * b[size_t(bT ? n * K + k : k * N + n)];
          c[size_t((z * M + m) * N + n)] = s;
        }
    return c;
  };
  auto ints = [](size_t n, uint64_t seed) { return randomInts(n, seed, -4, 5); };
  Vec av = randomValues(2 * 37 * 29, 1), bv = randomValues(29 * 45, 2), wv = randomValues(29 * 40, 3);
  Vec biasv = randomValues(40, 4), cv = randomValues(33 * 29, 5), hv = ints(40 * 24, 6), iv = ints(24 * 48, 7);
  Program p;
  Tensor a = p.input("a", DType::F32, {2, 37, 29});
  p.output("ab", matmul(a, p.input("b", DType::F32, {29, 45})));
  Tensor a2 = reshape(a, {74, 29});
  p.output("lin", relu(matmul(a2, p.constant(HostTensor::of(DType::F32, {29, 40}, wv))) +
                       p.constant(HostTensor::of(DType::F32, {40}, biasv))));
  p.output("act", matmul(a2, transpose(p.input("c", DType::F32, {33, 29}))));
  p.output("half", matmul(p.constant(HostTensor::of(DType::F16, {40, 24}, hv)), p.constant(HostTensor::of(DType::F16, {24, 48}, iv))));
  p.output("int", matmul(p.constant(HostTensor::of(DType::I32, {40, 24}, hv)), p.constant(HostTensor::of(DType::I32, {24, 48}, iv))));
  // K a multiple of 4, rows 4-aligned: A's rows read as vec4s (with 8
  // steps a trip, K = 36 leaves 4 steps after the loop); N = 64 narrows
  // 128 lanes to 64.
  Vec dv = randomValues(3 * 40 * 36, 8), ev = randomValues(36 * 300, 9), fv = randomValues(36 * 64, 10);
  Tensor d = p.input("d", DType::F32, {3, 40, 36});
  p.output("vec", matmul(d, p.input("e", DType::F32, {36, 300})));
  Tensor f = p.input("f", DType::F32, {36, 64});
  p.output("narrow", matmul(reshape(d, {120, 36}), f));
  Vec fbv = randomValues(64, 11);
  p.output("epi", relu(matmul(reshape(d, {120, 36}), f) + p.constant(HostTensor::of(DType::F32, {64}, fbv))));
  // Constant B (weights): packed once on the host and passed in as derived
  // constants (Compiled::derived), not by a matmul_pack kernel; one read
  // transposed, one broadcast over A's batch.
  Vec wtv = randomValues(40 * 29, 12);
  p.output("linT", matmul(a2, transpose(p.constant(HostTensor::of(DType::F32, {40, 29}, wtv)))));
  p.output("batc", matmul(a, p.constant(HostTensor::of(DType::F32, {29, 45}, bv))));
  std::vector<HostTensor> in = {HostTensor::of(DType::F32, {2, 37, 29}, av), HostTensor::of(DType::F32, {29, 45}, bv),
                                HostTensor::of(DType::F32, {33, 29}, cv), HostTensor::of(DType::F32, {3, 40, 36}, dv),
                                HostTensor::of(DType::F32, {36, 300}, ev), HostTensor::of(DType::F32, {36, 64}, fv)};
  Vec lin = product(av, wv, 1, 74, 29, 40, false);
  for (size_t i = 0; i < lin.size(); ++i) lin[i] = std::max(0.0, lin[i] + biasv[i % 40]);
  Vec ab = product(av, bv, 1, 37, 29, 45, false), ab2 = product(Vec(av.begin() + 37 * 29, av.end()), bv, 1, 37, 29, 45, false);
  ab.insert(ab.end(), ab2.begin(), ab2.end());
  Vec hi = product(hv, iv, 1, 40, 24, 48, false);
  Vec de;
  for (int64_t z = 0; z < 3; ++z) {
    Vec part = product(Vec(dv.begin() + z * 40 * 36, dv.begin() + (z + 1) * 40 * 36), ev, 1, 40, 36, 300, false);
    de.insert(de.end(), part.begin(), part.end());
  }
  Vec df = product(dv, fv, 1, 120, 36, 64, false), epi = df;
  for (size_t i = 0; i < epi.size(); ++i) epi[i] = std::max(0.0, epi[i] + fbv[i % 64]);
  std::vector<Vec> want = {ab, lin, product(av, cv, 1, 74, 29, 33, true), hi, hi, de, df, epi,
                           product(av, wtv, 1, 74, 29, 40, true), ab};
  // The configurations with a panel of 8 KiB split K: "vec" in 3 parts of
  // 12 steps, "narrow" and "epi" (64 lanes) in 2 of 20, summed by a second
  // kernel (the epilogue's there).
  for (auto [lanes, rows, unroll, panelKib, pack] :
       {std::array<unsigned, 5>{16, 6, 4, 0, 1}, {64, 7, 3, 0, 1}, {128, 6, 4, 0, 1}, {128, 5, 8, 0, 1},
        {128, 6, 4, 8, 1}, {64, 7, 3, 0, 0}, {128, 6, 4, 8, 0}}) {
    SCOPED_TRACE("lanes " + std::to_string(lanes) + ", rows " + std::to_string(rows) + ", panel " +
                 std::to_string(panelKib) + ", pack " + std::to_string(pack));
    LowerOptions o;
    o.tune = false;
    o.matmulBlock = 0;
    o.matmulLanes = lanes;
    o.matmulRows = rows;
    o.matmulUnroll = unroll;
    o.matmulStripPanel = panelKib * 1024;
    o.matmulStripPack = pack;
    ir::Context ctx;
    auto c = lower(ctx, p, o);
    ASSERT_TRUE(c) << c.error().message;
    int strips = 0, copies = 0, sums = 0, packs = 0;
    c->module->lookup("main")->walk([&](ir::Op* op) {
      if (!op->is(ir::OpId::Dispatch)) return;
      strips += op->symbolAttr("kernel").find("matmul_strip") != std::string::npos;
      copies += op->symbolAttr("kernel").find("matmul_b") != std::string::npos;
      sums += op->symbolAttr("kernel").find("matmul_split_sum") != std::string::npos;
      packs += op->symbolAttr("kernel").find("matmul_pack") != std::string::npos;
    });
    EXPECT_EQ(packs, pack ? 5 : 0);  // every f32 product of an input B: ab, act, vec, narrow, epi
    EXPECT_EQ(c->derived.size(), pack ? 3u : 0u);  // lin's, linT's and batc's constant B, packed
    EXPECT_EQ(strips, 10) << ir::print(*c->module->lookup("main"));
    EXPECT_EQ(sums, panelKib ? 3 : 0);
    int vec4Kernels = 0;  // strip kernels reading A as vec4s: those of "vec" and "narrow" where the steps are 4 or 8
    for (const auto& f : c->module->functions())
      if (f->name().find("matmul_strip") != std::string::npos) {
        bool vec4 = false;
        f->walk([&](ir::Op* op) { vec4 = vec4 || op->is(ir::OpId::VecLoad); });
        vec4Kernels += vec4;
      }
    EXPECT_EQ(vec4Kernels, unroll % 4 == 0 ? 3 : 0);
    EXPECT_EQ(copies, pack ? 0 : 2);  // packing reads a transposed B as it is (act's, linT's)
    expectOnAllTargets(p, in, want, 1e-5, o);
  }
}

// A constant B packed on the host (Compiled::derived) without device IO too:
// @main takes it as a host buffer after the program's constants, copies it
// to the device where the product reads it and frees the copy (the
// linearity pass would refuse a leak), and the product is right on every
// target.
TEST(Linalg, MatmulStripPacksConstantsWithHostIO) {
  Vec av = randomValues(37 * 29, 21), wv = randomValues(29 * 40, 22);
  Program p;
  Tensor a = p.input("a", DType::F32, {37, 29});
  Tensor w = p.constant(HostTensor::of(DType::F32, {29, 40}, wv));
  p.output("y", matmul(a, w));
  p.output("z", relu(matmul(a, w)));  // the same B, the same derived constant
  LowerOptions o;
  o.tune = false;
  o.matmulBlock = 0;
  o.matmulLanes = 16;
  o.matmulRows = 6;
  o.deviceIO = false;
  ir::Context ctx;
  auto c = lower(ctx, p, o);
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->derived.size(), 1u);
  const ir::Function& main = *c->module->lookup("main");
  ASSERT_EQ(main.paramTypes().size(), 3u);  // a, w, then w packed
  EXPECT_EQ(main.paramTypes()[2]->space(), ir::Space::Host);
  EXPECT_EQ(c->derived[0]->size(), 3 * 29 * 16);  // 3 strips of 16 lanes, K = 29
  Vec want(37 * 40), relu(37 * 40);
  for (int64_t m = 0; m < 37; ++m)
    for (int64_t n = 0; n < 40; ++n) {
      double s = 0;
      for (int64_t k = 0; k < 29; ++k) s += av[size_t(m * 29 + k)] * wv[size_t(k * 40 + n)];
      want[size_t(m * 40 + n)] = s;
      relu[size_t(m * 40 + n)] = std::max(0.0, s);
    }
  for (const std::string& t : targets()) {
    SCOPED_TRACE("target " + t);
    auto dev = runtime::openDevice(t);
    ASSERT_TRUE(dev) << dev.error().message;
    auto got = run(**dev, p, *c, {HostTensor::of(DType::F32, {37, 29}, av)});
    ASSERT_TRUE(got) << got.error().message;
    ASSERT_EQ(got->size(), 2u);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR((*got)[0].get(int64_t(i)), want[i], 1e-5 * (1 + std::abs(want[i]))) << "y " << i;
      EXPECT_NEAR((*got)[1].get(int64_t(i)), relu[i], 1e-5 * (1 + std::abs(relu[i]))) << "z " << i;
    }
  }
}

// f16 matmul on cooperative matrices (ops/MatmulCoop.cpp), as a device with
// 16x16x16 f16 -> f32 products gets it (LowerOptions::coopMatrixSubgroup,
// forced here): a broadcast batch of row-major products, a transposed b
// (column-major loads), a 128x96x128 product (the kernel that stages tiles
// in workgroup memory: four or eight subgroups a workgroup, three k-steps
// of 32) and a shape neither
// takes (M = 80: the plain kernel). Small integers make every sum exact, in f32 and in the f16
// result, so the interpreter (which runs cooperative matrices) and a GPU
// with matrix units must agree exactly; lavapipe and the cpu target keep the
// plain kernels (their tuning has no cooperative matrices).
TEST(Linalg, HalfMatmulOnCooperativeMatrices) {
  Program p;
  auto ints = [](size_t n, uint64_t seed) { return randomInts(n, seed, -3, 4); };
  Vec av = ints(2 * 64 * 48, 1), bv = ints(48 * 128, 2), cv = ints(128 * 48, 3), dv = ints(80 * 48, 4);
  Vec ev = ints(128 * 96, 5), fv = ints(96 * 128, 6);
  Tensor a = p.input("a", DType::F16, {2, 64, 48});
  Tensor b = p.input("b", DType::F16, {48, 128});
  Tensor ct = transpose(p.input("c", DType::F16, {128, 48}));  // [48, 128], contiguous along K
  Tensor d = p.input("d", DType::F16, {80, 48});
  Tensor e = p.input("e", DType::F16, {128, 96}), f = p.input("f", DType::F16, {96, 128});
  p.output("ab", matmul(a, b));
  p.output("act", matmul(a, ct));
  p.output("db", matmul(d, b));
  p.output("ef", matmul(e, f));
  Shape s;
  Vec wantAb = refMatmul(av, {2, 64, 48}, bv, {48, 128}, s);
  Vec wantAct = refMatmul(av, {2, 64, 48}, transposed(cv, 128, 48), {48, 128}, s);
  Vec wantDb = refMatmul(dv, {80, 48}, bv, {48, 128}, s);
  Vec wantEf = refMatmul(ev, {128, 96}, fv, {96, 128}, s);
  std::vector<HostTensor> inputs = {HostTensor::of(DType::F16, {2, 64, 48}, av), HostTensor::of(DType::F16, {48, 128}, bv),
                                    HostTensor::of(DType::F16, {128, 48}, cv), HostTensor::of(DType::F16, {80, 48}, dv),
                                    HostTensor::of(DType::F16, {128, 96}, ev), HostTensor::of(DType::F16, {96, 128}, fv)};
  LowerOptions o;
  o.tune = false;
  o.coopMatrixSubgroup = 32;
  ir::Context ctx;
  auto c = lower(ctx, p, o);
  ASSERT_TRUE(c) << c.error().message;
  int coop = 0, shared = 0, plain = 0;
  for (auto& fn : c->module->functions()) {
    if (!fn->isKernel()) continue;
    coop += fn->name().ends_with("_matmul_coop");  // kernels are named tN_op
    shared += fn->name().ends_with("_matmul_coop_shared");
    plain += fn->name().ends_with("_matmul_blocked");
  }
  EXPECT_EQ(coop, 2);    // ab and act (one kernel each: their layouts differ)
  EXPECT_EQ(shared, 1);  // ef
  EXPECT_EQ(plain, 1);   // db
  const Vec* want[] = {&wantAb, &wantAct, &wantDb, &wantEf};
  for (unsigned subgroups : {0u, 4u, 8u}) {  // LowerOptions::coopSubgroups: the staged kernel's subgroups a tile
    SCOPED_TRACE(std::to_string(subgroups) + " subgroups");
    o.coopSubgroups = subgroups;
    auto got = run(p, "interp", inputs, o);
    ASSERT_TRUE(got) << got.error().message;
    for (size_t k = 0; k < 4; ++k)
      for (size_t i = 0; i < want[k]->size(); ++i)
        ASSERT_EQ((*got)[k].get(int64_t(i)), (*want[k])[i]) << "output " << k << " element " << i;
  }
  // Every target with its own tuning (matrix units only where the device has them).
  expectOnAllTargets(p, inputs, {wantAb, wantAct, wantDb, wantEf}, 0);
}

// f16 matmul on workgroup-scope cooperative matrices (ops/MatmulCoop.cpp,
// VK_NV_cooperative_matrix2), forced here with 32 x 32 x 16 tiles, two
// k-steps a trip, 64 invocations a workgroup and tiles in groups of two
// rows: a broadcast batch of row-major products, a transposed b
// (column-major loads) and a product of three tile rows (the last group
// one row) take it, a product whose M is not a multiple of the tile does
// not. Small integers: exact sums, so the
// interpreter agrees with float64 exactly; every target with its own tuning
// agrees too.
TEST(Linalg, HalfMatmulOnWorkgroupMatrices) {
  Program p;
  auto ints = [](size_t n, uint64_t seed) { return randomInts(n, seed, -3, 4); };
  Vec av = ints(2 * 32 * 32, 1), bv = ints(32 * 64, 2), cv = ints(64 * 32, 3), dv = ints(48 * 32, 4);
  Vec ev = ints(96 * 32, 5);
  Tensor a = p.input("a", DType::F16, {2, 32, 32});
  Tensor b = p.input("b", DType::F16, {32, 64});
  Tensor ct = transpose(p.input("c", DType::F16, {64, 32}));  // [32, 64], contiguous along K
  Tensor d = p.input("d", DType::F16, {48, 32});
  Tensor e = p.input("e", DType::F16, {96, 32});
  p.output("ab", matmul(a, b));
  p.output("act", matmul(a, ct));
  p.output("db", matmul(d, b));
  p.output("eb", matmul(e, b));
  Shape s;
  Vec wantAb = refMatmul(av, {2, 32, 32}, bv, {32, 64}, s);
  Vec wantAct = refMatmul(av, {2, 32, 32}, transposed(cv, 64, 32), {32, 64}, s);
  Vec wantDb = refMatmul(dv, {48, 32}, bv, {32, 64}, s);
  Vec wantEb = refMatmul(ev, {96, 32}, bv, {32, 64}, s);
  std::vector<HostTensor> inputs = {HostTensor::of(DType::F16, {2, 32, 32}, av), HostTensor::of(DType::F16, {32, 64}, bv),
                                    HostTensor::of(DType::F16, {64, 32}, cv), HostTensor::of(DType::F16, {48, 32}, dv),
                                    HostTensor::of(DType::F16, {96, 32}, ev)};
  LowerOptions o;
  o.tune = false;
  o.coopMatrixWorkgroup = 64;
  o.coopTileM = 32, o.coopTileN = 32, o.coopTileK = 16;
  o.coopUnroll = 2, o.coopGroupRows = 2;
  ir::Context ctx;
  auto c = lower(ctx, p, o);
  ASSERT_TRUE(c) << c.error().message;
  int workgroup = 0, plain = 0;
  for (auto& fn : c->module->functions()) {
    if (!fn->isKernel()) continue;
    workgroup += fn->name().ends_with("_matmul_coop_workgroup");
    plain += fn->name().ends_with("_matmul_blocked");
  }
  EXPECT_EQ(workgroup, 3);  // ab, act and eb
  EXPECT_EQ(plain, 1);      // db: 48 rows
  auto got = run(p, "interp", inputs, o);
  ASSERT_TRUE(got) << got.error().message;
  const Vec* want[] = {&wantAb, &wantAct, &wantDb, &wantEb};
  for (size_t k = 0; k < 4; ++k)
    for (size_t i = 0; i < want[k]->size(); ++i)
      ASSERT_EQ((*got)[k].get(int64_t(i)), (*want[k])[i]) << "output " << k << " element " << i;
  expectOnAllTargets(p, inputs, {wantAb, wantAct, wantDb, wantEb}, 0);
}

TEST(Linalg, MatmulIntegersPromoteAndF64) {
  Program p;
  Tensor a = p.input("a", DType::I32, {2, 3});
  Tensor b = p.input("b", DType::I32, {3, 2});
  Tensor f = p.input("f", DType::F64, {3, 2});
  Tensor ab = matmul(a, b), af = matmul(a, f);
  EXPECT_EQ(ab.dtype(), DType::I32);
  EXPECT_EQ(af.dtype(), DType::F64);
  p.output("ab", ab);
  p.output("af", af);
  Vec av = {1, -2, 3, 4, 5, -6}, bv = {7, 8, -9, 10, 11, 12}, fv = {0.5, 0.25, -1.5, 2, 3, 0.125};
  Shape s;
  expectOnAllTargets(p, {HostTensor::of(DType::I32, {2, 3}, av), HostTensor::of(DType::I32, {3, 2}, bv),
                         HostTensor::of(DType::F64, {3, 2}, fv)},
                     {refMatmul(av, {2, 3}, bv, {3, 2}, s), refMatmul(av, {2, 3}, fv, {3, 2}, s)}, 0);
}

TEST(Linalg, MatmulAndGemmErrors) {
  {
    Program p;
    matmul(p.input("a", DType::F32, {2, 3}), p.input("b", DType::F32, {4, 5}));
    EXPECT_ERROR(p, "matmul: shapes [2, 3] and [4, 5] do not match: the inner dimensions are 3 and 4");
  }
  {
    Program p;
    matmul(p.input("a", DType::F32, {2, 2, 3}), p.input("b", DType::F32, {3, 3, 4}));
    EXPECT_ERROR(p, "matmul: shapes [2, 2, 3] and [3, 3, 4] do not match: the batch dimensions [2] and [3] cannot be broadcast");
  }
  {
    Program p;
    matmul(p.input("a", DType::F32, {}), p.input("b", DType::F32, {3}));
    EXPECT_ERROR(p, "matmul: shapes [] and [3]: a scalar operand");
  }
  {
    Program p;
    matmul(p.input("a", DType::Bool, {2, 2}), p.input("b", DType::Bool, {2, 2}));
    EXPECT_ERROR(p, "matmul wants numeric tensors, not bool and bool");
  }
  {
    Program p;
    gemm(p.input("a", DType::F32, {2, 3}), p.input("b", DType::F32, {2, 4}));
    EXPECT_ERROR(p, "gemm: shapes [2, 3] and [2, 4] (transA=0, transB=0) do not match: the inner dimensions are 3 and 2");
  }
  {
    Program p;
    gemm(p.input("a", DType::F32, {2, 3}), p.input("b", DType::F32, {3, 4}), p.input("c", DType::F32, {3}));
    EXPECT_ERROR(p, "gemm: C [3] cannot be broadcast to [2, 4]");
  }
  {
    Program p;
    gemm(p.input("a", DType::F32, {2, 3, 1}), p.input("b", DType::F32, {3, 4}));
    EXPECT_ERROR(p, "gemm wants 2-D A and B, got [2, 3, 1] and [3, 4]");
  }
}

// ---- gemm -----------------------------------------------------------------------------------

TEST(Linalg, GemmTransposesAlphaBetaAndBroadcastC) {
  Program p;
  Vec at = randomValues(4 * 3, 20), b = randomValues(5 * 4, 21), c1 = randomValues(5, 22), c2 = randomValues(3, 23);
  Vec big1 = randomValues(40 * 20, 24), big2 = randomValues(20 * 48, 25);
  Tensor A = p.input("at", DType::F32, {4, 3});  // transA: A is [3, 4] logically
  Tensor B = p.input("b", DType::F32, {5, 4});   // transB: B is [4, 5]
  Tensor C1 = p.input("c1", DType::F32, {5});
  Tensor C2 = p.input("c2", DType::F32, {3, 1});
  p.output("g1", gemm(A, B, C1, {.alpha = 0.5, .beta = 2, .transA = true, .transB = true}));
  p.output("g2", gemm(A, B, C2, {.alpha = 1, .beta = -1, .transA = true, .transB = true}));
  p.output("g3", gemm(A, B, {}, {.alpha = 1.5, .transA = true, .transB = true}));
  Tensor X = p.input("x", DType::F32, {40, 20});
  Tensor Y = p.input("y", DType::F32, {20, 48});
  p.output("g4", gemm(X, Y));
  p.output("g5", gemm(transpose(A), transpose(B), p.constant(HostTensor::of(DType::F32, {}, {3}))));
  // Big enough for the tiled kernels: alpha and beta·C applied where they store.
  Vec cb = randomValues(48, 26), cr = randomValues(40, 27);
  Tensor CB = p.input("cb", DType::F32, {48});
  Tensor CR = p.input("cr", DType::F32, {40, 1});
  p.output("g6", gemm(X, Y, CB, {.alpha = 0.5, .beta = 2}));
  p.output("g7", gemm(transpose(X), Y, CR, {.beta = -1, .transA = true}));
  p.output("g8", gemm(X, Y, p.constant(HostTensor::of(DType::F32, {}, {3})), {.alpha = 1.5}));
  Vec a = transposed(at, 4, 3), bl = transposed(b, 5, 4);  // a [3, 4], bl [4, 5]
  Shape s;
  Vec ab = refMatmul(a, {3, 4}, bl, {4, 5}, s);
  Vec w1(15), w2(15), w3(15), w5(15);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      size_t k = size_t(i * 5 + j);
      w1[k] = 0.5 * ab[k] + 2 * c1[size_t(j)];
      w2[k] = ab[k] - c2[size_t(i)];
      w3[k] = 1.5 * ab[k];
      w5[k] = ab[k] + 3;
    }
  Vec w4 = refMatmul(big1, {40, 20}, big2, {20, 48}, s);
  Vec w6(w4.size()), w7(w4.size()), w8(w4.size());
  for (size_t k = 0; k < w4.size(); ++k) {
    w6[k] = 0.5 * w4[k] + 2 * double(float(cb[k % 48]));
    w7[k] = w4[k] - double(float(cr[k / 48]));
    w8[k] = 1.5 * w4[k] + 3;
  }
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {4, 3}, at), HostTensor::of(DType::F32, {5, 4}, b),
                         HostTensor::of(DType::F32, {5}, c1), HostTensor::of(DType::F32, {3, 1}, c2),
                         HostTensor::of(DType::F32, {40, 20}, big1), HostTensor::of(DType::F32, {20, 48}, big2),
                         HostTensor::of(DType::F32, {48}, cb), HostTensor::of(DType::F32, {40, 1}, cr)},
                     {w1, w2, w3, w4, w5, w6, w7, w8}, 1e-5);
}

// ---- einsum ---------------------------------------------------------------------------------

// Σ over every label not in `out` of Π inputs; labels are single letters, one per dimension.
Vec refEinsum(const std::vector<std::string>& labels, const std::vector<Shape>& shapes, const std::vector<Vec>& vals,
              const std::string& out, Shape& outShape) {
  std::map<char, int64_t> extent;
  for (size_t i = 0; i < labels.size(); ++i)
    for (size_t d = 0; d < labels[i].size(); ++d) extent[labels[i][d]] = std::max(extent[labels[i][d]], shapes[i][d]);
  std::string all;
  for (auto [c, e] : extent) all += c;
  Shape allShape;
  for (char c : all) allShape.push_back(extent[c]);
  outShape.clear();
  for (char c : out) outShape.push_back(extent[c]);
  Vec y(size_t(numel(outShape)), 0);
  for (int64_t i = 0; i < numel(allShape); ++i) {
    Idx a = unravel(i, allShape);
    auto val = [&](char c) { return a[all.find(c)]; };
    double prod = 1;
    for (size_t k = 0; k < labels.size(); ++k) {
      Idx j;
      for (size_t d = 0; d < labels[k].size(); ++d) j.push_back(shapes[k][d] == 1 ? 0 : val(labels[k][d]));
      prod *= vals[k][size_t(ravel(j, shapes[k]))];
    }
    Idx o;
    for (char c : out) o.push_back(val(c));
    y[size_t(ravel(o, outShape))] += prod;
  }
  return y;
}

TEST(Linalg, EinsumExplicitImplicitEllipsisAndDiagonals) {
  struct Case {
    std::string eq;
    std::vector<Shape> shapes;
    std::vector<std::string> labels;  // the reference's labels ("..." spelled out)
    std::string out;
  };
  std::vector<Case> cases = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}, {"ij", "jk"}, "ik"},
      {"ij->ji", {{2, 3}}, {"ij"}, "ji"},
      {"ii->i", {{4, 4}}, {"ii"}, "i"},
      {"ii", {{4, 4}}, {"ii"}, ""},
      {"i,i", {{5}, {5}}, {"i", "i"}, ""},
      {"i,j->ij", {{3}, {2}}, {"i", "j"}, "ij"},
      {"ij->", {{3, 4}}, {"ij"}, ""},
      {"bij,bjk", {{2, 3, 4}, {2, 4, 2}}, {"bij", "bjk"}, "ik"},  // b appears twice: summed, as numpy
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 2}}, {"bij", "bjk"}, "bik"},
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {3, 4, 2}}, {"xyij", "yjk"}, "xyik"},
      {"...i,i", {{2, 3, 4}, {4}}, {"xyi", "i"}, "xy"},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}, {"ij", "jk", "kl"}, "il"},
      {"Ba,aB->", {{2, 3}, {3, 2}}, {"Ba", "aB"}, ""},
      {"ij,jk->ik", {{0, 3}, {3, 2}}, {"ij", "jk"}, "ik"},
      {"ij,jk->ik", {{2, 0}, {0, 2}}, {"ij", "jk"}, "ik"},
  };
  Program p;
  std::vector<HostTensor> inputs;
  std::vector<Vec> want;
  uint64_t seed = 900;
  int n = 0;
  for (const Case& c : cases) {
    std::vector<Tensor> ts;
    std::vector<Vec> vals;
    for (const Shape& s : c.shapes) {
      vals.push_back(randomValues(size_t(numel(s)), seed++));
      ts.push_back(p.input("x" + std::to_string(n++), DType::F32, s));
      inputs.push_back(HostTensor::of(DType::F32, s, vals.back()));
    }
    Tensor y = einsum(c.eq, ts);
    Shape outShape;
    want.push_back(refEinsum(c.labels, c.shapes, vals, c.out, outShape));
    EXPECT_EQ(y.shape(), outShape) << c.eq;
    p.output("y" + std::to_string(want.size()), y);
  }
  // A transposed view as an operand.
  Vec tv = randomValues(12, 990), uv = randomValues(8, 991);
  Tensor t = transpose(p.input("t", DType::F32, {4, 3}));  // [3, 4]
  Tensor u = p.input("u", DType::F32, {4, 2});
  p.output("tu", einsum("ij,jk->ki", {t, u}));
  inputs.push_back(HostTensor::of(DType::F32, {4, 3}, tv));
  inputs.push_back(HostTensor::of(DType::F32, {4, 2}, uv));
  Shape s;
  want.push_back(refEinsum({"ij", "jk"}, {{3, 4}, {4, 2}}, {transposed(tv, 4, 3), uv}, "ki", s));
  expectOnAllTargets(p, inputs, want, 1e-5);
}

TEST(Linalg, EinsumErrors) {
  auto err = [](const std::string& eq, std::vector<Shape> shapes) {
    Program p;
    std::vector<Tensor> in;
    for (const Shape& s : shapes) in.push_back(p.input("x" + std::to_string(in.size()), DType::F32, s));
    einsum(eq, in);
    return errorOf(p);
  };
  EXPECT_NE(err("ij,jk->ik", {{2, 3}}).find("einsum: equation 'ij,jk->ik' has 2 input terms for 1 inputs"), std::string::npos);
  EXPECT_NE(err("ij,jk->ik", {{2, 3}, {4, 5}}).find("label 'j' has extents 3 and 4"), std::string::npos);
  EXPECT_NE(err("ijk->i", {{2, 3}}).find("term 'ijk' has 3 labels for input 0 of shape [2, 3]"), std::string::npos);
  EXPECT_NE(err("i1->i", {{2, 3}}).find("'1' in 'i1' is not a letter or '...'"), std::string::npos);
  EXPECT_NE(err("ij->iz", {{2, 3}}).find("the output label 'z' is in no input"), std::string::npos);
  EXPECT_NE(err("ij->ii", {{2, 3}}).find("the output label 'i' appears twice"), std::string::npos);
  EXPECT_NE(err("...i,...i->...", {{2, 3}, {4, 3}}).find("cannot be broadcast"), std::string::npos);
}

// ---- attention ------------------------------------------------------------------------------

// softmax(scale·q·kᵀ + mask)·v per batch; keep(b, s, t) and add(b, s, t) give the mask.
Vec refAttention(const Vec& q, const Vec& k, const Vec& v, int64_t B, int64_t S, int64_t T, int64_t D, int64_t DV,
                 double scale, const std::function<bool(int64_t, int64_t, int64_t)>& keep,
                 const std::function<double(int64_t, int64_t, int64_t)>& add) {
  Vec out(size_t(B * S * DV), 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) {
      Vec sc(static_cast<size_t>(T));
      double mx = -INFINITY;
      for (int64_t t = 0; t < T; ++t) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += q[size_t((b * S + s) * D + d)] * k[size_t((b * T + t) * D + d)];
        sc[size_t(t)] = keep(b, s, t) ? dot * scale + add(b, s, t) : -INFINITY;
        mx = std::max(mx, sc[size_t(t)]);
      }
      double sum = 0;
      for (double& x : sc) sum += (x = mx == -INFINITY ? 0 : std::exp(x - mx));
      for (int64_t j = 0; j < DV; ++j) {
        double acc = 0;
        for (int64_t t = 0; t < T; ++t) acc += sc[size_t(t)] * v[size_t((b * T + t) * DV + j)];
        out[size_t((b * S + s) * DV + j)] = sum == 0 ? 0 : acc / sum;
      }
    }
  return out;
}

// Heads wider than the one-pass kernel's registers (q's 130) take the four
// kernels (scores, max, sum, output); a wide one with masks and causal too;
// and the one pass over a long key sequence (T = 300) stays accurate.
TEST(Linalg, AttentionWideHeadsAndLongSequences) {
  // S = 64 and 128: whole workgroups of rows, so the one-pass kernel stages
  // blocks of 32 keys in workgroup memory (300: a partial last block).
  for (auto [D, T, S] : {std::array<int64_t, 3>{130, 5, 3}, std::array<int64_t, 3>{8, 300, 3},
                         std::array<int64_t, 3>{8, 300, 64}, std::array<int64_t, 3>{24, 64, 128}}) {
    SCOPED_TRACE("D " + std::to_string(D) + " T " + std::to_string(T) + " S " + std::to_string(S));
    const int64_t B = 2, DV = 3;
    Vec qv = randomValues(size_t(B * S * D), 1010), kv = randomValues(size_t(B * T * D), 1011),
        vv = randomValues(size_t(B * T * DV), 1012);
    Program p;
    Tensor q = p.input("q", DType::F32, {B, S, D});
    Tensor k = p.input("k", DType::F32, {B, T, D});
    Tensor v = p.input("v", DType::F32, {B, T, DV});
    p.output("plain", attention(q, k, v));
    p.output("causal", attention(q, k, v, {}, {.causal = true}));
    {
      // One dispatch per attention in one pass, four for wide heads.
      ir::Context ctx;
      auto c = lower(ctx, p);
      ASSERT_TRUE(c) << c.error().message;
      int dispatches = 0;
      for (const auto& op : c->module->lookup("main")->body().ops()) dispatches += op->name() == "dispatch";
      EXPECT_EQ(dispatches, D > 128 ? 8 : 2);
    }
    auto all = [](int64_t, int64_t, int64_t) { return true; };
    auto none = [](int64_t, int64_t, int64_t) { return 0.0; };
    double sc = 1 / std::sqrt(double(D));
    Vec plain = refAttention(qv, kv, vv, B, S, T, D, DV, sc, all, none);
    Vec wc = refAttention(qv, kv, vv, B, S, T, D, DV, sc, [](int64_t, int64_t s, int64_t t) { return t <= s; }, none);
    expectOnAllTargets(p, {HostTensor::of(DType::F32, {B, S, D}, qv), HostTensor::of(DType::F32, {B, T, D}, kv),
                           HostTensor::of(DType::F32, {B, T, DV}, vv)},
                       {plain, wc}, 1e-5);
  }
}

TEST(Linalg, AttentionMasksCausalAndScale) {
  const int64_t B = 2, S = 3, T = 5, D = 4, DV = 3;
  Vec qv = randomValues(size_t(B * S * D), 1000), kv = randomValues(size_t(B * T * D), 1001),
      vv = randomValues(size_t(B * T * DV), 1002), fm = randomValues(size_t(S * T), 1003);
  std::vector<double> bm(size_t(S * T));
  for (size_t i = 0; i < bm.size(); ++i) bm[i] = (i * 7 % 3) != 0;
  for (int64_t t = 0; t < T; ++t) bm[size_t(1 * T + t)] = 0;  // row 1: every key masked -> zeros
  Program p;
  Tensor q = p.input("q", DType::F32, {B, S, D});
  Tensor k = p.input("k", DType::F32, {B, T, D});
  Tensor v = p.input("v", DType::F32, {B, T, DV});
  Tensor boolMask = p.input("bm", DType::Bool, {S, T});
  Tensor floatMask = p.input("fm", DType::F32, {1, S, T});
  Tensor a = attention(q, k, v);
  EXPECT_EQ(a.shape(), (Shape{B, S, DV}));
  p.output("plain", a);
  p.output("bool", attention(q, k, v, boolMask));
  p.output("float", attention(q, k, v, floatMask, {.scale = 0.7}));
  p.output("causal", attention(q, k, v, {}, {.causal = true}));
  // k as a transposed view: [B, T, D] read from [B, D, T] storage.
  Vec kt(kv.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d) kt[size_t((b * D + d) * T + t)] = kv[size_t((b * T + t) * D + d)];
  p.output("view", attention(q, transpose(p.input("kt", DType::F32, {B, D, T}), {0, 2, 1}), v));
  double sc = 1 / std::sqrt(double(D));
  auto all = [](int64_t, int64_t, int64_t) { return true; };
  auto none = [](int64_t, int64_t, int64_t) { return 0.0; };
  Vec plain = refAttention(qv, kv, vv, B, S, T, D, DV, sc, all, none);
  Vec wb = refAttention(qv, kv, vv, B, S, T, D, DV, sc, [&](int64_t, int64_t s, int64_t t) { return bm[size_t(s * T + t)] != 0; }, none);
  Vec wf = refAttention(qv, kv, vv, B, S, T, D, DV, 0.7, all, [&](int64_t, int64_t s, int64_t t) { return fm[size_t(s * T + t)]; });
  Vec wc = refAttention(qv, kv, vv, B, S, T, D, DV, sc, [](int64_t, int64_t s, int64_t t) { return t <= s; }, none);
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {B, S, D}, qv), HostTensor::of(DType::F32, {B, T, D}, kv),
                         HostTensor::of(DType::F32, {B, T, DV}, vv), HostTensor::of(DType::Bool, {S, T}, bm),
                         HostTensor::of(DType::F32, {1, S, T}, fm), HostTensor::of(DType::F32, {B, D, T}, kt)},
                     {plain, wb, wf, wc, plain}, 1e-5);
}

// The strip kernels' options (the cpu target's), forced on any target.
LowerOptions stripOptions(int64_t lanes, int64_t rows = 6) {
  LowerOptions o;
  o.tune = false;
  o.matmulBlock = 0;
  o.matmulLanes = unsigned(lanes);
  o.matmulRows = unsigned(rows);
  return o;
}

// Attention under options o as the kernel named `kernel` (each of the six
// attentions one dispatch of it, with `allocs` workgroup allocations):
// plain, bool and float masks (row 1 with every key masked: zeros), scale,
// causal, k as a transposed view and batches broadcast; against float64 on
// every target.
void expectAttentionKernel(const LowerOptions& o, const std::string& kernel, int64_t S, int64_t T, int64_t D,
                           int64_t DV, int allocs) {
  auto all = [](int64_t, int64_t, int64_t) { return true; };
  auto none = [](int64_t, int64_t, int64_t) { return 0.0; };
  const int64_t B = 2;
  Vec qv = randomValues(size_t(B * S * D), 1200), kv = randomValues(size_t(B * T * D), 1201),
      vv = randomValues(size_t(B * T * DV), 1202), fm = randomValues(size_t(S * T), 1203);
  std::vector<double> bm(size_t(S * T));
  for (size_t i = 0; i < bm.size(); ++i) bm[i] = (i * 7 % 3) != 0;
  for (int64_t t = 0; t < T; ++t) bm[size_t(1 * T + t)] = 0;  // row 1: every key masked -> zeros
  Vec kt(kv.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d) kt[size_t((b * D + d) * T + t)] = kv[size_t((b * T + t) * D + d)];
  Program p;
  Tensor q = p.input("q", DType::F32, {B, S, D});
  Tensor k = p.input("k", DType::F32, {B, T, D});
  Tensor v = p.input("v", DType::F32, {B, T, DV});
  p.output("plain", attention(q, k, v));
  p.output("bool", attention(q, k, v, p.input("bm", DType::Bool, {S, T})));
  p.output("float", attention(q, k, v, p.input("fm", DType::F32, {1, S, T}), {.scale = 0.7}));
  p.output("causal", attention(q, k, v, {}, {.causal = true}));
  p.output("view", attention(q, transpose(p.input("kt", DType::F32, {B, D, T}), {0, 2, 1}), v));
  // q [2, 1, S, D] against k and v [3, T, ..]: batches [2, 3].
  Tensor q4 = reshape(q, {B, 1, S, D});
  Vec k3 = randomValues(size_t(3 * T * D), 1204), v3 = randomValues(size_t(3 * T * DV), 1205);
  Tensor k3t = p.input("k3", DType::F32, {3, T, D});
  p.output("bcast", attention(q4, k3t, p.input("v3", DType::F32, {3, T, DV})));
  {
    ir::Context ctx;
    auto c = lower(ctx, p, o);
    ASSERT_TRUE(c) << c.error().message;
    int kernels = 0, dispatches = 0;
    c->module->lookup("main")->walk([&](ir::Op* op) {
      if (!op->is(ir::OpId::Dispatch)) return;
      ++dispatches;
      kernels += op->symbolAttr("kernel").find(kernel) != std::string::npos;
    });
    EXPECT_EQ(kernels, 6);
    EXPECT_EQ(dispatches, 6);
    for (const auto& f : c->module->functions()) {
      if (f->name().find(kernel) == std::string::npos) continue;
      int n = 0;
      f->walk([&](ir::Op* op) { n += op->is(ir::OpId::WorkgroupAlloc); });
      EXPECT_EQ(n, allocs);
    }
  }
  const double sc = 1 / std::sqrt(double(D));
  Vec plain = refAttention(qv, kv, vv, B, S, T, D, DV, sc, all, none);
  Vec wb = refAttention(qv, kv, vv, B, S, T, D, DV, sc,
                        [&](int64_t, int64_t s, int64_t t) { return bm[size_t(s * T + t)] != 0; }, none);
  Vec wf = refAttention(qv, kv, vv, B, S, T, D, DV, 0.7, all,
                        [&](int64_t, int64_t s, int64_t t) { return fm[size_t(s * T + t)]; });
  Vec wc = refAttention(qv, kv, vv, B, S, T, D, DV, sc, [](int64_t, int64_t s, int64_t t) { return t <= s; }, none);
  Vec qb, kb, vb;
  for (int64_t b0 = 0; b0 < B; ++b0)
    for (int64_t b1 = 0; b1 < 3; ++b1) {
      qb.insert(qb.end(), qv.begin() + b0 * S * D, qv.begin() + (b0 + 1) * S * D);
      kb.insert(kb.end(), k3.begin() + b1 * T * D, k3.begin() + (b1 + 1) * T * D);
      vb.insert(vb.end(), v3.begin() + b1 * T * DV, v3.begin() + (b1 + 1) * T * DV);
    }
  Vec wbc = refAttention(qb, kb, vb, B * 3, S, T, D, DV, sc, all, none);
  expectOnAllTargets(p,
                     {HostTensor::of(DType::F32, {B, S, D}, qv), HostTensor::of(DType::F32, {B, T, D}, kv),
                      HostTensor::of(DType::F32, {B, T, DV}, vv), HostTensor::of(DType::Bool, {S, T}, bm),
                      HostTensor::of(DType::F32, {1, S, T}, fm), HostTensor::of(DType::F32, {B, D, T}, kt),
                      HostTensor::of(DType::F32, {3, T, D}, k3), HostTensor::of(DType::F32, {3, T, DV}, v3)},
                     {plain, wb, wf, wc, plain, wbc}, 1e-5, o);
}

// Attention as one strip kernel (LowerOptions::matmulLanes, the cpu
// target's; ops/Attention.cpp, stripAttention), forced on every target:
// query rows past a workgroup's lanes (S = 70: a block of 6), keys fewer
// than a block of rows (T = 3) or not a multiple of it (37), v as wide as
// the lanes (64), wider (70 on 16 lanes: the last strip moved back) and
// narrower (3), a head of 5, keys in chunks where the workgroup memory
// holds fewer (100 in chunks of 34, 34 and 32 on 64 lanes, v 20 wide; in 6
// of 15 and one of 10 on 16 lanes, with a block of rows past them: the
// softmax and the output's sums carried across chunks; the output's sums
// and their scale then in workgroup memory too). f64 and an empty T keep
// their kernels.
TEST(Linalg, AttentionStrips) {
  for (auto [lanes, rows, S, T, D, DV, memory] :
       {std::array<int64_t, 7>{64, 6, 70, 37, 8, 64, 0}, {64, 6, 5, 3, 5, 3, 0}, {64, 6, 20, 100, 8, 20, 18240},
        {16, 5, 20, 100, 8, 70, 6656}}) {
    SCOPED_TRACE("lanes " + std::to_string(lanes) + " rows " + std::to_string(rows) + ": S " + std::to_string(S) +
                 " T " + std::to_string(T) + " D " + std::to_string(D) + " DV " + std::to_string(DV) + " memory " +
                 std::to_string(memory));
    LowerOptions o = stripOptions(lanes, rows);
    if (memory) o.maxWorkgroupMemory = unsigned(memory);
    expectAttentionKernel(o, "attention_strips", S, T, D, DV, memory ? 6 : 3);
  }
  // f64, and no keys: not the strip kernel.
  Program p;
  Tensor q = p.input("q", DType::F64, {2, 3});
  Tensor k = p.input("k", DType::F64, {4, 3});
  p.output("d", attention(q, k, p.input("v", DType::F64, {4, 2})));
  Tensor q32 = p.input("q32", DType::F32, {2, 3}), k0 = p.input("k0", DType::F32, {0, 3});
  p.output("e", attention(q32, k0, p.input("v0", DType::F32, {0, 2})));
  ir::Context ctx;
  auto c = lower(ctx, p, stripOptions(64));
  ASSERT_TRUE(c) << c.error().message;
  for (const auto& f : c->module->functions()) EXPECT_EQ(f->name().find("attention_strips"), std::string::npos);
}

// Attention as one kernel with its products in register tiles (the GPUs';
// ops/Attention.cpp, tiledAttention) on every target with lavapipe's 32 KiB
// of workgroup memory: 64 rows a workgroup (S = 70: rows past S; 64: none),
// 32 where 64 do not fit (D = DV = 64), keys not a multiple of its blocks
// of 32 (37, 100, 3) and a multiple (64), v 32, 64 and 96 wide, heads of 4,
// 8, 12 and 64. Not for f64, v's head not a multiple of 32, no keys, or
// LowerOptions::attentionTiles off.
TEST(Linalg, AttentionTiles) {
  LowerOptions o;
  o.tune = false;
  o.maxWorkgroupMemory = 32768;
  for (auto [S, T, D, DV] : {std::array<int64_t, 4>{70, 37, 8, 32}, {20, 100, 64, 64}, {5, 3, 4, 32}, {64, 64, 12, 96}}) {
    SCOPED_TRACE("S " + std::to_string(S) + " T " + std::to_string(T) + " D " + std::to_string(D) + " DV " +
                 std::to_string(DV));
    // q's, k's, the probabilities' and v's blocks (rows combined by shuffles).
    expectAttentionKernel(o, "attention_tiles", S, T, D, DV, 4);
  }
  // Rows combined through workgroup memory: two more blocks, the
  // probabilities over k's block (64 and 32 rows a workgroup).
  o.attentionShuffles = false;
  for (auto [S, T, D, DV] : {std::array<int64_t, 4>{70, 37, 8, 32}, {20, 100, 64, 64}}) {
    SCOPED_TRACE("without shuffles: S " + std::to_string(S) + " T " + std::to_string(T));
    expectAttentionKernel(o, "attention_tiles", S, T, D, DV, 5);
  }
  o.attentionShuffles = true;
  // The attentions of p that lower as tiled kernels under options lo.
  auto tiles = [](const Program& p, const LowerOptions& lo) {
    ir::Context ctx;
    auto c = lower(ctx, p, lo);
    EXPECT_TRUE(c) << c.error().message;
    int n = 0;
    if (c)
      for (const auto& f : c->module->functions()) n += f->name().find("attention_tiles") != std::string::npos;
    return n;
  };
  Program p;
  p.output("d", attention(p.input("q", DType::F64, {2, 4}), p.input("k", DType::F64, {4, 4}),
                          p.input("v", DType::F64, {4, 32})));
  p.output("narrow", attention(p.input("q1", DType::F32, {2, 4}), p.input("k1", DType::F32, {4, 4}),
                               p.input("v1", DType::F32, {4, 20})));
  p.output("e", attention(p.input("q2", DType::F32, {2, 4}), p.input("k2", DType::F32, {0, 4}),
                          p.input("v2", DType::F32, {0, 32})));
  EXPECT_EQ(tiles(p, o), 0);
  Program p2;
  p2.output("y", attention(p2.input("q", DType::F32, {8, 8}), p2.input("k", DType::F32, {8, 8}),
                           p2.input("v", DType::F32, {8, 32})));
  EXPECT_EQ(tiles(p2, o), 1);
  o.attentionTiles = false;
  EXPECT_EQ(tiles(p2, o), 0);
}

#ifdef EPH_HAVE_LLVM
// The cpu target asks LLVM to vectorise its invocation loops; one LLVM
// cannot (the attention strip kernel has some) runs as it is, and the
// user's stderr gets no "loop not vectorized" warning for it.
TEST(Linalg, CpuTargetPrintsNoWarningForALoopNotVectorised) {
  Program p;
  Tensor q = p.input("q", DType::F32, {2, 70, 16});
  Tensor k = p.input("k", DType::F32, {2, 37, 16});
  p.output("y", attention(q, k, p.input("v", DType::F32, {2, 37, 20})));
  ir::Context ctx;
  auto c = lower(ctx, p, stripOptions(64));
  ASSERT_TRUE(c) << c.error().message;
  testing::internal::CaptureStderr();
  auto object = llvmtarget::compileObject(*c->module, {});
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(object) << object.error().message;
  EXPECT_EQ(err.find("not vectorized"), std::string::npos) << err;
  EXPECT_EQ(err, "");
}
#endif

TEST(Linalg, AttentionBroadcastBatchesEmptyAndErrors) {
  // q [2, 1, 2, 3] with k, v [3, 4, 3] / [3, 4, 2]: batch [2, 3]; and T = 0 gives zeros.
  Program p;
  Vec qv = randomValues(12, 1100), kv = randomValues(36, 1101), vv = randomValues(24, 1102);
  Tensor q = p.input("q", DType::F64, {2, 1, 2, 3});
  Tensor k = p.input("k", DType::F64, {3, 4, 3});
  Tensor v = p.input("v", DType::F64, {3, 4, 2});
  Tensor a = attention(q, k, v);
  EXPECT_EQ(a.shape(), (Shape{2, 3, 2, 2}));
  p.output("a", a);
  Tensor k0 = p.input("k0", DType::F64, {3, 0, 3});
  Tensor v0 = p.input("v0", DType::F64, {3, 0, 2});
  p.output("e", attention(q, k0, v0));
  // The reference on the broadcast copies.
  Vec qb, kb, vb;
  for (int b0 = 0; b0 < 2; ++b0)
    for (int b1 = 0; b1 < 3; ++b1) {
      qb.insert(qb.end(), qv.begin() + b0 * 6, qv.begin() + b0 * 6 + 6);
      kb.insert(kb.end(), kv.begin() + b1 * 12, kv.begin() + b1 * 12 + 12);
      vb.insert(vb.end(), vv.begin() + b1 * 8, vv.begin() + b1 * 8 + 8);
    }
  auto all = [](int64_t, int64_t, int64_t) { return true; };
  auto none = [](int64_t, int64_t, int64_t) { return 0.0; };
  expectOnAllTargets(p, {HostTensor::of(DType::F64, {2, 1, 2, 3}, qv), HostTensor::of(DType::F64, {3, 4, 3}, kv),
                         HostTensor::of(DType::F64, {3, 4, 2}, vv), HostTensor(DType::F64, {3, 0, 3}),
                         HostTensor(DType::F64, {3, 0, 2})},
                     {refAttention(qb, kb, vb, 6, 2, 4, 3, 2, 1 / std::sqrt(3.0), all, none), Vec(24, 0.0)}, 1e-12);

  Program e1;
  attention(e1.input("q", DType::F32, {2, 3}), e1.input("k", DType::F32, {4, 5}), e1.input("v", DType::F32, {4, 2}));
  EXPECT_ERROR(e1, "attention: q and k have different head sizes: [2, 3], [4, 5] and [4, 2]");
  Program e2;
  attention(e2.input("q", DType::F32, {2, 3}), e2.input("k", DType::F32, {4, 3}), e2.input("v", DType::F32, {4, 2}),
            e2.input("m", DType::I32, {2, 4}));
  EXPECT_ERROR(e2, "attention: the mask must be bool (true = keep) or float (added), not i32");
  Program e3;
  attention(e3.input("q", DType::F32, {2, 3}), e3.input("k", DType::F32, {4, 3}), e3.input("v", DType::F32, {4, 2}),
            e3.input("m", DType::Bool, {3, 4}));
  EXPECT_ERROR(e3, "attention: the mask [3, 4] cannot be broadcast to [2, 4]");
  Program e4;
  attention(e4.input("q", DType::F32, {2, 3}), e4.input("k", DType::F32, {4, 3}), e4.input("v", DType::F32, {5, 2}));
  EXPECT_ERROR(e4, "attention: k and v have different lengths");
}

}  // namespace
}  // namespace eph::tensor::test
