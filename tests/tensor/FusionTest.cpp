// Fusion in the tensor lowering (LowerOptions::fuse): an elementwise node
// whose readers all read it element for element is computed inside their
// kernels, not stored. Checked by the kernels and dispatches of @main and by
// running every program fused and unfused on every target against float64.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "frontends/tensor/Lower.h"
#include "frontends/tensor/TensorLinalg.h"
#include "frontends/tensor/TensorReduce.h"
#include "tests/tensor/TensorTestUtil.h"

namespace eph::tensor::test {
namespace {

struct Counts {
  int kernels = 0, dispatches = 0, allocs = 0;
};

Counts countsOf(const Program& p, bool fuse, LowerOptions o = {}) {
  ir::Context ctx;
  o.fuse = fuse;
  auto c = lower(ctx, p, o);
  EXPECT_TRUE(c) << (c ? "" : c.error().message);
  Counts n;
  if (!c) return n;
  for (const auto& f : c->module->functions()) {
    if (f->kind() == ir::FunctionKind::Kernel) ++n.kernels;
    if (f->name() != "main") continue;
    for (const auto& op : f->body().ops()) {
      n.dispatches += op->name() == "dispatch";
      n.allocs += op->name() == "alloc";
    }
  }
  return n;
}

// Runs p fused and unfused on every target against `want` (`base`: the other options).
void expectBoth(const Program& p, const std::vector<HostTensor>& in, const std::vector<std::vector<double>>& want,
                double tol = 1e-5, const LowerOptions& base = {}) {
  for (bool fuse : {true, false}) {
    SCOPED_TRACE(fuse ? "fused" : "unfused");
    LowerOptions o = base;
    o.fuse = fuse;
    for (const std::string& t : targets()) {
      SCOPED_TRACE("target " + t);
      auto got = run(p, t, in, o);
      ASSERT_TRUE(got) << got.error().message;
      ASSERT_EQ(got->size(), want.size());
      for (size_t k = 0; k < want.size(); ++k)
        for (size_t i = 0; i < want[k].size(); ++i)
          EXPECT_NEAR((*got)[k].get(int64_t(i)), want[k][i], tol * (1 + std::abs(want[k][i]))) << "output " << k << " at " << i;
    }
  }
}

TEST(TensorFusion, ElementwiseChainIsOneKernel) {
  Program p;
  Tensor x = p.input("x", DType::F32, {3, 50});
  Tensor y = p.input("y", DType::F32, {50});  // broadcast into the chain
  p.output("z", relu(x * 2.0 + y));
  Counts f = countsOf(p, true), u = countsOf(p, false);
  EXPECT_EQ(f.dispatches, 1);
  EXPECT_EQ(f.kernels, 1);
  EXPECT_EQ(u.dispatches, 3);
  auto xv = randomValues(150, 1), yv = randomValues(50, 2);
  std::vector<double> want(150);
  for (size_t i = 0; i < 150; ++i) want[i] = std::max(0.0, double(float(xv[i])) * 2 + double(float(yv[i % 50])));
  expectBoth(p, {HostTensor::of(DType::F32, {3, 50}, xv), HostTensor::of(DType::F32, {50}, yv)}, {want});
}

TEST(TensorFusion, SharedProducerIsRecomputedByEachReader) {
  Program p;
  Tensor x = p.input("x", DType::F64, {7, 9});
  Tensor e = exp(x);
  p.output("a", e + 1.0);
  p.output("b", sqrt(e));
  EXPECT_EQ(countsOf(p, true).dispatches, 2);
  auto xv = randomValues(63, 3);
  std::vector<double> a(63), b(63);
  for (size_t i = 0; i < 63; ++i) a[i] = std::exp(xv[i]) + 1, b[i] = std::sqrt(std::exp(xv[i]));
  expectBoth(p, {HostTensor::of(DType::F64, {7, 9}, xv)}, {a, b}, 1e-12);
}

TEST(TensorFusion, WhatMustBeStoredIsStored) {
  Program p;
  Tensor x = p.input("x", DType::F32, {4, 6});
  Tensor small = p.input("s", DType::F32, {1, 6});
  Tensor t = x * 3.0;                   // an output and read by relu: stored
  p.output("t", t);
  p.output("r", relu(t));
  Tensor e = exp(small);                // read broadcast to [4, 6]: stored, not recomputed 4 times
  p.output("b", x + e);
  Tensor m = x - 1.0;                   // read through a view: stored
  p.output("v", transpose(m) * 2.0);
  // t, relu, exp, x + e, m, the product: six dispatches, none fused.
  EXPECT_EQ(countsOf(p, true).dispatches, 6);
  auto xv = randomValues(24, 4), sv = randomValues(6, 5);
  std::vector<double> tv(24), rv(24), bv(24), vv(24);
  for (size_t i = 0; i < 24; ++i) {
    double xi = double(float(xv[i]));
    tv[i] = xi * 3, rv[i] = std::max(0.0, xi * 3), bv[i] = xi + std::exp(double(float(sv[i % 6])));
  }
  for (size_t c = 0; c < 6; ++c)
    for (size_t r = 0; r < 4; ++r) vv[c * 4 + r] = (double(float(xv[r * 6 + c])) - 1) * 2;
  expectBoth(p, {HostTensor::of(DType::F32, {4, 6}, xv), HostTensor::of(DType::F32, {1, 6}, sv)}, {tv, rv, bv, vv});
}

// Softmax, log-softmax and layer norm compute an elementwise x inside their
// row kernel when a row is long (one cooperative kernel per op; kept in
// registers at 300 columns, reloaded per pass at 20,000); with short rows x
// is stored first (its own kernel), since their statistics kernels read
// buffers. Values against float64, fused and unfused, on every target.
TEST(TensorFusion, ElementwiseProducersFuseIntoRowKernels) {
  for (int64_t cols : {int64_t(300), int64_t(20001), int64_t(20)}) {
    SCOPED_TRACE("cols " + std::to_string(cols));
    const int64_t rows = 3;
    Program p;
    Tensor x = p.input("x", DType::F32, {rows, cols});
    Tensor y = p.input("y", DType::F32, {cols});
    p.output("s", softmax(x * 2.0 + y));
    p.output("ls", log_softmax(exp(x)));
    p.output("ln", layer_norm(relu(x - 0.25), y, y));
    // Unfused: mul, add, softmax, exp, log_softmax, sub, relu, layer norm
    // (each of the three row ops two kernels with short rows: statistics, map).
    EXPECT_EQ(countsOf(p, false).dispatches, cols >= 128 ? 8 : 11);
    // Fused: one kernel per row op; short rows store each x first and run
    // a statistics kernel and a map (three each).
    EXPECT_EQ(countsOf(p, true).dispatches, cols >= 128 ? 3 : 9);
    auto xv = randomValues(size_t(rows * cols), 30), yv = randomValues(size_t(cols), 31);
    std::vector<double> sv(xv.size()), lsv(xv.size()), lnv(xv.size());
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<double> a(static_cast<size_t>(cols)), e(a), q(a);
      for (int64_t c = 0; c < cols; ++c) {
        double xi = double(float(xv[size_t(r * cols + c)])), yi = double(float(yv[size_t(c)]));
        a[size_t(c)] = double(float(float(xi * 2) + float(yi)));  // rounded as stored f32 values would be
        e[size_t(c)] = double(float(std::exp(xi)));
        q[size_t(c)] = std::max(0.0, double(float(xi - 0.25)));
      }
      double ma = *std::max_element(a.begin(), a.end()), me = *std::max_element(e.begin(), e.end());
      double sa = 0, se = 0, mean = 0, var = 0;
      for (int64_t c = 0; c < cols; ++c) sa += std::exp(a[size_t(c)] - ma), se += std::exp(e[size_t(c)] - me), mean += q[size_t(c)];
      mean /= double(cols);
      for (double v : q) var += (v - mean) * (v - mean);
      var /= double(cols);
      for (int64_t c = 0; c < cols; ++c) {
        size_t i = size_t(r * cols + c);
        sv[i] = std::exp(a[size_t(c)] - ma) / sa;
        lsv[i] = e[size_t(c)] - me - std::log(se);
        double yi = double(float(yv[size_t(c)]));
        lnv[i] = (q[size_t(c)] - mean) / std::sqrt(var + 1e-5) * yi + yi;
      }
    }
    for (bool shuffles : {true, false}) {  // LowerOptions::rowShuffles: both ways on every target
      SCOPED_TRACE(shuffles ? "shuffles" : "workgroup memory");
      LowerOptions o;
      o.tune = false;
      o.rowShuffles = shuffles;
      expectBoth(p, {HostTensor::of(DType::F32, {rows, cols}, xv), HostTensor::of(DType::F32, {cols}, yv)},
                 {sv, lsv, lnv}, 1e-4, o);
    }
  }
}

// Ops named `name` in a region and the regions inside it.
int countOps(const ir::Region& r, std::string_view name) {
  int n = 0;
  for (const auto& op : r.ops()) {
    n += op->name() == name;
    for (unsigned i = 0; i < op->numRegions(); ++i) n += countOps(op->region(i), name);
  }
  return n;
}

// What the kernels' index arithmetic leaves out where it cannot matter: a
// fused row kernel reads a one-axis row at its position (no rem or div: on
// the cpu target they made its lanes gather), and an elementwise kernel
// whose grid covers its elements exactly has no bounds branch (which made
// the cpu target's loads of an index the workgroup shares masked gathers).
TEST(TensorFusion, IndexArithmeticOnlyWhereItMatters) {
  auto kernelsOf = [](const Program& p, std::string_view part, std::string_view name) {
    ir::Context ctx;
    LowerOptions o;
    o.tune = false;
    auto c = lower(ctx, p, o);
    EXPECT_TRUE(c) << (c ? "" : c.error().message);
    std::vector<int> counts;
    if (!c) return counts;
    for (const auto& f : c->module->functions())
      if (f->kind() == ir::FunctionKind::Kernel && f->name().find(part) != std::string::npos)
        counts.push_back(countOps(f->body(), name));
    return counts;
  };
  {
    Program p;  // 3 rows of 512: the row index is the workgroup's, the position the invocation's
    Tensor x = p.input("x", DType::F32, {3, 512});
    Tensor y = p.input("y", DType::F32, {512});
    p.output("s", softmax(x * 2.0 + y));
    p.output("ln", layer_norm(x + y, y, y));
    EXPECT_EQ(kernelsOf(p, "softmax", "rem"), std::vector<int>{0});
    EXPECT_EQ(kernelsOf(p, "layer_norm", "rem"), std::vector<int>{0});
  }
  {
    Program p;  // over two axes the outer one still needs them
    Tensor x = p.input("x", DType::F32, {3, 4, 64});
    Tensor g = p.input("g", DType::F32, {4, 64});
    p.output("ln", layer_norm(x * 2.0, g, {}, 1));
    const std::vector<int> rems = kernelsOf(p, "layer_norm", "rem");
    ASSERT_EQ(rems.size(), 1u);
    EXPECT_GT(rems[0], 0);
  }
  auto branches = [&](const Shape& s) {
    Program p;
    Tensor x = p.input("x", DType::F32, s);
    p.output("c", relu(x * 2.0 + 1.0));
    const std::vector<int> ifs = kernelsOf(p, "", "if");
    return ifs.size() == 1 ? ifs[0] : -1;
  };
  EXPECT_EQ(branches({4, 2048}), 0);  // 8192 = 4 groups of 256 x 8 elements
  EXPECT_EQ(branches({3, 1001}), 8);  // 3003 elements: 8 per invocation, each checked
}

// A reduction of long rows computes an elementwise x in its row kernel too
// (each element once): sum(x * x) and max(exp(x)) are one kernel each; a
// short row stores x first. Values against float64, fused and unfused.
TEST(TensorFusion, ElementwiseProducersFuseIntoReductions) {
  for (int64_t cols : {int64_t(500), int64_t(30)}) {
    SCOPED_TRACE("cols " + std::to_string(cols));
    const int64_t rows = 4;
    Program p;
    Tensor x = p.input("x", DType::F32, {rows, cols});
    p.output("ss", sum(x * x, {1}));
    p.output("me", max(exp(x), {1}));
    EXPECT_EQ(countsOf(p, false).dispatches, 4);  // mul, sum, exp, max
    EXPECT_EQ(countsOf(p, true).dispatches, cols >= 128 ? 2 : 4);
    auto xv = randomValues(size_t(rows * cols), 60);
    std::vector<double> ss(size_t(rows), 0), me(size_t(rows), -INFINITY);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        double xi = double(float(xv[size_t(r * cols + c)]));
        ss[size_t(r)] += double(float(xi * xi));
        me[size_t(r)] = std::max(me[size_t(r)], double(float(std::exp(xi))));
      }
    expectBoth(p, {HostTensor::of(DType::F32, {rows, cols}, xv)}, {ss, me}, 1e-5);
  }
}

TEST(TensorFusion, HalfPrecisionRoundsAsIfStored) {
  // (x + 1e-4) - x in f16: the sum rounds back to x when stored (f16 has 11
  // bits), so the answer is 0; fused, it must round the same way.
  Program p;
  Tensor x = p.input("x", DType::F16, {4});
  p.output("y", (x + 1e-4) - x);
  std::vector<double> xv = {1, 2, 5, 7};
  LowerOptions o;
  o.fuse = false;
  for (const std::string& t : targets()) {
    SCOPED_TRACE("target " + t);
    auto fused = run(p, t, {HostTensor::of(DType::F16, {4}, xv)});
    auto unfused = run(p, t, {HostTensor::of(DType::F16, {4}, xv)}, o);
    ASSERT_TRUE(fused && unfused);
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ((*fused)[0].get(i), 0.0) << i;
      EXPECT_EQ((*unfused)[0].get(i), 0.0) << i;
    }
  }
  EXPECT_EQ(countsOf(p, true).dispatches, 1);
}

TEST(TensorFusion, LongChainOnEveryTarget) {
  // Fourteen ops over three inputs and a mixed dtype: one kernel, and one for
  // cast(c) * 0.01, which the add reads broadcast from [17] to [33, 17].
  Program p;
  Tensor a = p.input("a", DType::F32, {33, 17});
  Tensor b = p.input("b", DType::F32, {33, 1});
  Tensor c = p.input("c", DType::I32, {17});
  Tensor h = tanh(a * b) + sigmoid(a - 0.5);
  h = where(gt(h, 0.0), h, h * 0.1);
  h = h + cast(c, DType::F32) * 0.01;
  p.output("y", abs(h) - minimum(h, 0.25));
  EXPECT_EQ(countsOf(p, true).dispatches, 2);
  EXPECT_EQ(countsOf(p, false).dispatches, 14);
  auto av = randomValues(561, 6), bv = randomValues(33, 7);
  std::vector<double> cv(17);
  for (size_t i = 0; i < 17; ++i) cv[i] = double(int(i) - 8);
  std::vector<double> want(561);
  for (size_t r = 0; r < 33; ++r)
    for (size_t k = 0; k < 17; ++k) {
      double x = double(float(av[r * 17 + k])), y = double(float(bv[r]));
      double v = std::tanh(x * y) + 1 / (1 + std::exp(-(x - 0.5)));
      v = v > 0 ? v : v * 0.1;
      v += cv[k] * 0.01;
      want[r * 17 + k] = std::abs(v) - std::min(v, 0.25);
    }
  expectBoth(p,
             {HostTensor::of(DType::F32, {33, 17}, av), HostTensor::of(DType::F32, {33, 1}, bv),
              HostTensor::of(DType::I32, {17}, cv)},
             {want});
}


TEST(TensorFusion, ABufferReadByManyLeavesIsOneParameter) {
  // x is read by seven leaves of the fused expression (and the scalars 2 and 1
  // by one each): the kernel has four parameters (x, 2, 1, out), not ten.
  Program p;
  Tensor x = p.input("x", DType::F32, {40});
  p.output("y", exp(x) + sin(x) * cos(x) - x * 2.0 + abs(x) / (x * x + 1.0));
  ir::Context ctx;
  auto c = lower(ctx, p);
  ASSERT_TRUE(c) << c.error().message;
  int kernels = 0;
  for (const auto& f : c->module->functions())
    if (f->kind() == ir::FunctionKind::Kernel) {
      ++kernels;
      EXPECT_EQ(f->paramTypes().size(), 4u) << f->name();
    }
  EXPECT_EQ(kernels, 1);
  auto xv = randomValues(40, 8);
  std::vector<double> want(40);
  for (size_t i = 0; i < 40; ++i) {
    double v = double(float(xv[i]));
    want[i] = std::exp(v) + std::sin(v) * std::cos(v) - v * 2 + std::abs(v) / (v * v + 1);
  }
  expectBoth(p, {HostTensor::of(DType::F32, {40}, xv)}, {want});
}

TEST(TensorFusion, KernelsReadAtMostMaxFusedBuffers) {
  // A sum of 12 inputs, each through exp: fused, one kernel would read 12
  // buffers; with a limit of 8 the partial sums are stored where needed.
  Program p;
  std::vector<Tensor> xs;
  std::vector<HostTensor> in;
  std::vector<double> want(16, 0.0);
  for (int k = 0; k < 12; ++k) {
    xs.push_back(p.input("x" + std::to_string(k), DType::F32, {16}));
    auto v = randomValues(16, 20 + uint64_t(k));
    in.push_back(HostTensor::of(DType::F32, {16}, v));
    for (size_t i = 0; i < 16; ++i) want[i] += std::exp(double(float(v[i])));
  }
  Tensor sum = exp(xs[0]);
  for (int k = 1; k < 12; ++k) sum = sum + exp(xs[size_t(k)]);
  p.output("y", sum);
  LowerOptions o;
  o.maxFusedBuffers = 8;
  ir::Context ctx;
  auto c = lower(ctx, p, o);
  ASSERT_TRUE(c) << c.error().message;
  for (const auto& f : c->module->functions())
    if (f->kind() == ir::FunctionKind::Kernel) {
      EXPECT_LE(f->paramTypes().size(), 8u + 1) << f->name();
    }
  for (const std::string& t : targets()) {
    SCOPED_TRACE("target " + t);
    auto got = run(p, t, in, o);
    ASSERT_TRUE(got) << got.error().message;
    for (size_t i = 0; i < 16; ++i) EXPECT_NEAR((*got)[0].get(int64_t(i)), want[i], 1e-5 * want[i]);
  }
}


// ---- epilogues: elementwise readers of a matmul computed where the blocked kernel stores ----

// a [batch.., M, K] · b [K, N] in float64 (inputs rounded to f32).
std::vector<double> refMatmul(const std::vector<double>& a, const std::vector<double>& b, int64_t batches, int64_t M,
                              int64_t K, int64_t N) {
  std::vector<double> c(size_t(batches * M * N), 0);
  for (int64_t z = 0; z < batches; ++z)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += double(float(a[size_t((z * M + i) * K + k)])) * double(float(b[size_t(k * N + j)]));
        c[size_t((z * M + i) * N + j)] = s;
      }
  return c;
}

// Runs p with the blocked matmul and with the 64-invocation kernel, fused
// and unfused, on every target, against `want`.
void expectEveryMatmulKernel(const Program& p, const std::vector<HostTensor>& in,
                             const std::vector<std::vector<double>>& want, double tol = 1e-5) {
  for (unsigned block : {8u, 0u}) {
    SCOPED_TRACE("matmulBlock " + std::to_string(block));
    LowerOptions o;
    o.tune = false;
    o.matmulBlock = block;
    expectBoth(p, in, want, tol, o);
  }
}

TEST(TensorFusion, BiasAndActivationAreTheMatmulsEpilogue) {
  const int64_t B = 2, M = 70, K = 40, N = 130;
  Program p;
  Tensor x = p.input("x", DType::F32, {B, M, K});
  Tensor w = p.input("w", DType::F32, {K, N});
  Tensor b = p.input("b", DType::F32, {N});
  p.output("y", relu(matmul(x, w) + b));
  EXPECT_EQ(countsOf(p, true).dispatches, 1);  // matmul, + b and relu in one kernel
  EXPECT_EQ(countsOf(p, false).dispatches, 3);
  LowerOptions old;
  old.matmulBlock = 0;  // the 64-invocation kernel (the cpu target's) takes it too
  EXPECT_EQ(countsOf(p, true, old).dispatches, 1);
  auto xv = randomValues(size_t(B * M * K), 30), wv = randomValues(size_t(K * N), 31), bv = randomValues(size_t(N), 32);
  std::vector<double> want = refMatmul(xv, wv, B, M, K, N);
  for (size_t i = 0; i < want.size(); ++i) want[i] = std::max(0.0, want[i] + double(float(bv[i % size_t(N)])));
  expectEveryMatmulKernel(p, {HostTensor::of(DType::F32, {B, M, K}, xv), HostTensor::of(DType::F32, {K, N}, wv),
                              HostTensor::of(DType::F32, {N}, bv)},
                          {want});
}

TEST(TensorFusion, AResidualThroughFusedNodesIsTheMatmulsEpilogue) {
  // tanh(x·w + b) + r: `+ b` fused into tanh, tanh into `+ r`, which is stored.
  const int64_t M = 128, K = 64, N = 256;  // multiples of the tile: the kernel without bounds checks
  Program p;
  Tensor x = p.input("x", DType::F32, {M, K});
  Tensor w = p.input("w", DType::F32, {K, N});
  Tensor b = p.input("b", DType::F32, {N});
  Tensor r = p.input("r", DType::F32, {M, N});
  p.output("y", tanh(matmul(x, w) + b) + r);
  EXPECT_EQ(countsOf(p, true).dispatches, 1);
  auto xv = randomValues(size_t(M * K), 33), wv = randomValues(size_t(K * N), 34), bv = randomValues(size_t(N), 35),
       rv = randomValues(size_t(M * N), 36);
  std::vector<double> want = refMatmul(xv, wv, 1, M, K, N);
  for (size_t i = 0; i < want.size(); ++i)
    want[i] = double(float(std::tanh(want[i] + double(float(bv[i % size_t(N)]))))) + double(float(rv[i]));
  expectEveryMatmulKernel(p, {HostTensor::of(DType::F32, {M, K}, xv), HostTensor::of(DType::F32, {K, N}, wv),
                              HostTensor::of(DType::F32, {N}, bv), HostTensor::of(DType::F32, {M, N}, rv)},
                          {want}, 2e-5);
}

TEST(TensorFusion, GeluReadingItsInputTwiceIsTheMatmulsEpilogue) {
  // BERT's FFN: y = x·w + b, then y·0.5·(1 + erf(y/√2)) (the exported
  // graph's GELU): `+ b` is fused into both its readers, which are fused
  // into the stored product; the product's kernel computes it all.
  const int64_t M = 64, K = 48, N = 96;
  Program p;
  Tensor x = p.input("x", DType::F32, {M, K});
  Tensor w = p.input("w", DType::F32, {K, N});
  Tensor b = p.input("b", DType::F32, {N});
  Tensor y = matmul(x, w) + b;
  p.output("g", y * ((erf(y / 1.4142135623730951) + 1.0) * 0.5));
  EXPECT_EQ(countsOf(p, true).dispatches, 1);
  EXPECT_EQ(countsOf(p, false).dispatches, 7);  // matmul, +, /, erf, +, *, *
  auto xv = randomValues(size_t(M * K), 39), wv = randomValues(size_t(K * N), 40), bv = randomValues(size_t(N), 41);
  std::vector<double> want = refMatmul(xv, wv, 1, M, K, N);
  for (size_t i = 0; i < want.size(); ++i) {
    double v = want[i] + double(float(bv[i % size_t(N)]));
    want[i] = v * ((std::erf(v / 1.4142135623730951) + 1.0) * 0.5);
  }
  expectEveryMatmulKernel(p, {HostTensor::of(DType::F32, {M, K}, xv), HostTensor::of(DType::F32, {K, N}, wv),
                              HostTensor::of(DType::F32, {N}, bv)},
                          {want}, 2e-5);
}

TEST(TensorFusion, WhatMustNotBeAMatmulsEpilogue) {
  const int64_t M = 40, K = 33, N = 50;
  auto xv = randomValues(size_t(M * K), 37), wv = randomValues(size_t(K * N), 38);
  std::vector<double> mm = refMatmul(xv, wv, 1, M, K, N);
  std::vector<HostTensor> in = {HostTensor::of(DType::F32, {M, K}, xv), HostTensor::of(DType::F32, {K, N}, wv)};
  {
    // The product is an output itself: stored, its reader a kernel of its own.
    Program p;
    Tensor x = p.input("x", DType::F32, {M, K}), w = p.input("w", DType::F32, {K, N});
    Tensor y = matmul(x, w);
    p.output("y", y);
    p.output("z", y + 1.0);
    EXPECT_EQ(countsOf(p, true).dispatches, 2);
    std::vector<double> z = mm;
    for (double& v : z) v += 1;
    expectEveryMatmulKernel(p, in, {mm, z});
  }
  {
    // Two readers: computing it in both would multiply twice.
    Program p;
    Tensor x = p.input("x", DType::F32, {M, K}), w = p.input("w", DType::F32, {K, N});
    Tensor y = matmul(x, w);
    p.output("a", y + 1.0);
    p.output("b", y * 2.0);
    EXPECT_EQ(countsOf(p, true).dispatches, 3);
  }
  {
    // `+ b` is read by an elementwise node and by a row reduction: the
    // nodes it is fused into do not all end in one stored elementwise node.
    // As many kernels as when the product is an output too (stored).
    Program p, stored;
    for (Program* q : {&p, &stored}) {
      Tensor x = q->input("x", DType::F32, {M, K}), w = q->input("w", DType::F32, {K, N});
      Tensor m = matmul(x, w);
      Tensor y = m + 1.0;
      q->output("e", exp(y) * y);
      q->output("s", softmax(y));
      if (q == &stored) q->output("m", m);
    }
    EXPECT_EQ(countsOf(p, true).dispatches, countsOf(stored, true).dispatches);
    std::vector<double> e = mm, sm = mm;
    for (int64_t i = 0; i < M; ++i) {
      double mx = -1e300, total = 0;
      for (int64_t j = 0; j < N; ++j) mx = std::max(mx, mm[size_t(i * N + j)] + 1);
      for (int64_t j = 0; j < N; ++j) total += std::exp(mm[size_t(i * N + j)] + 1 - mx);
      for (int64_t j = 0; j < N; ++j) {
        double v = mm[size_t(i * N + j)] + 1;
        e[size_t(i * N + j)] = std::exp(v) * v;
        sm[size_t(i * N + j)] = std::exp(v - mx) / total;
      }
    }
    expectEveryMatmulKernel(p, in, {e, sm}, 2e-5);
  }
  {
    // A row reduction reads it (softmax), and a broadcast over a bigger
    // shape: neither is an element-for-element reader of the product.
    Program p;
    Tensor x = p.input("x", DType::F32, {M, K}), w = p.input("w", DType::F32, {K, N});
    p.output("s", softmax(matmul(x, w)));
    Program alone;
    alone.output("s", softmax(alone.input("y", DType::F32, {M, N})));
    EXPECT_EQ(countsOf(p, true).dispatches, 1 + countsOf(alone, true).dispatches);
    Program q;
    Tensor x2 = q.input("x", DType::F32, {M, K}), w2 = q.input("w", DType::F32, {K, N});
    q.output("t", matmul(x2, w2) + q.input("big", DType::F32, {3, M, N}));
    EXPECT_EQ(countsOf(q, true).dispatches, 2);
  }
}


// softmax(x) along the last axis of [rows, n], in float64.
std::vector<double> refSoftmaxRows(std::vector<double> x, int64_t n) {
  for (size_t r = 0; r * size_t(n) < x.size(); ++r) {
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, x[r * size_t(n) + size_t(j)]);
    for (int64_t j = 0; j < n; ++j) sum += (x[r * size_t(n) + size_t(j)] = std::exp(x[r * size_t(n) + size_t(j)] - mx));
    for (int64_t j = 0; j < n; ++j) x[r * size_t(n) + size_t(j)] /= sum;
  }
  return x;
}

// The cpu target's options (the strip kernels), whatever the target.
LowerOptions laneOptions() {
  LowerOptions o;
  o.tune = false;
  o.matmulBlock = 0;
  o.matmulLanes = 64;
  o.maxWorkgroupMemory = 1 << 20;
  return o;
}

int dispatchesOf(const Program& p, const LowerOptions& o, std::string_view kernel) {
  ir::Context ctx;
  auto c = lower(ctx, p, o);
  EXPECT_TRUE(c) << (c ? "" : c.error().message);
  int n = 0;
  if (c)
    c->module->lookup("main")->walk([&](ir::Op* op) {
      n += op->is(ir::OpId::Dispatch) && op->symbolAttr("kernel").find(kernel) != std::string::npos;
    });
  return n;
}

// Attention written as its parts, softmax(q·kᵀ / c + mask)·v (an exported
// encoder's), is the attention op's one strip kernel where the cpu target's
// options make it and its tiled kernel where a GPU's do
// (LowerOptions::fuseAttention): a scale by division or by a product with a
// constant on either side, a float mask added, or neither; against float64,
// with and without it, on every target (and as the one-pass kernel where
// asked for).
TEST(TensorFusion, AttentionFromItsParts) {
  const int64_t B = 2, H = 3, S = 70, T = 37, D = 16, DV = 32;
  Program p;
  Tensor q = p.input("q", DType::F32, {B, H, S, D});
  Tensor k = p.input("k", DType::F32, {B, H, T, D});
  Tensor v = p.input("v", DType::F32, {B, H, T, DV});
  Tensor m = p.input("m", DType::F32, {S, T});
  Tensor kT = transpose(k, {0, 1, 3, 2});
  p.output("a", matmul(softmax(matmul(q, kT) / 4.0 + m), v));
  p.output("b", matmul(softmax(p.constant(HostTensor::of(DType::F32, {}, {0.3})) * matmul(q, kT)), v));
  p.output("c", matmul(softmax(matmul(q, kT), 3), v));
  LowerOptions o = laneOptions();
  EXPECT_EQ(dispatchesOf(p, o, "attention_strips"), 3);
  EXPECT_EQ(dispatchesOf(p, o, ""), 3);
  o.fuseAttention = 0;
  EXPECT_EQ(dispatchesOf(p, o, "attention"), 0);
  EXPECT_GE(dispatchesOf(p, o, ""), 9);
  LowerOptions gpu;
  gpu.tune = false;
  EXPECT_EQ(dispatchesOf(p, gpu, "attention_tiles"), 3);
  EXPECT_EQ(dispatchesOf(p, gpu, ""), 3);
  auto qv = randomValues(size_t(B * H * S * D), 60), kv = randomValues(size_t(B * H * T * D), 61),
       vv = randomValues(size_t(B * H * T * DV), 62), mv = randomValues(size_t(S * T), 63);
  std::vector<std::vector<double>> want;
  for (auto [scale, masked] : {std::pair{0.25, true}, {0.3, false}, {1.0, false}}) {
    std::vector<double> scores(size_t(B * H * S * T)), out(size_t(B * H * S * DV), 0);
    for (int64_t z = 0; z < B * H; ++z)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t t = 0; t < T; ++t) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += qv[size_t((z * S + s) * D + d)] * kv[size_t((z * T + t) * D + d)];
          scores[size_t((z * S + s) * T + t)] = dot * scale + (masked ? mv[size_t(s * T + t)] : 0);
        }
    scores = refSoftmaxRows(scores, T);
    for (int64_t z = 0; z < B * H; ++z)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t j = 0; j < DV; ++j)
          for (int64_t t = 0; t < T; ++t)
            out[size_t((z * S + s) * DV + j)] += scores[size_t((z * S + s) * T + t)] * vv[size_t((z * T + t) * DV + j)];
    want.push_back(out);
  }
  std::vector<HostTensor> in = {HostTensor::of(DType::F32, {B, H, S, D}, qv), HostTensor::of(DType::F32, {B, H, T, D}, kv),
                                HostTensor::of(DType::F32, {B, H, T, DV}, vv), HostTensor::of(DType::F32, {S, T}, mv)};
  for (unsigned fuse : {1, 0, 2, 3}) {  // 3: the GPUs' options, tiled kernel; 2: their one-pass kernel
    SCOPED_TRACE("fuseAttention " + std::to_string(fuse));
    LowerOptions base = laneOptions();
    if (fuse >= 2) base = LowerOptions{}, base.tune = false, base.attentionTiles = fuse == 3;
    base.fuseAttention = std::min(fuse, 2u);
    expectOnAllTargets(p, in, want, 1e-5, base);
  }
}

// What must stay parts: the probabilities or the scores read elsewhere (or
// an output), a softmax along another axis, a scale that is no scalar, a
// mask multiplied in, f64; and where neither the strip kernel nor the
// tiled one applies (GPU options and v 5 wide, or the tiles off).
TEST(TensorFusion, WhatMustNotBeAttention) {
  auto count = [](const std::function<Tensor(Program&, Tensor, Tensor, Tensor)>& make, DType dt = DType::F32,
                  LowerOptions o = laneOptions()) {
    Program p;
    Tensor q = p.input("q", dt, {2, 40, 8}), k = p.input("k", dt, {2, 30, 8}), v = p.input("v", dt, {2, 30, 5});
    p.output("y", make(p, q, transpose(k, {0, 2, 1}), v));
    return dispatchesOf(p, o, "attention");
  };
  auto plain = [](Program&, Tensor q, Tensor kT, Tensor v) { return matmul(softmax(matmul(q, kT) / 2.0), v); };
  EXPECT_EQ(count(plain), 1);  // (the pattern itself)
  EXPECT_EQ(count([](Program& p, Tensor q, Tensor kT, Tensor v) {
              Tensor pr = softmax(matmul(q, kT) / 2.0);
              p.output("probs", pr);
              return matmul(pr, v);
            }),
            0);
  EXPECT_EQ(count([](Program&, Tensor q, Tensor kT, Tensor v) {
              Tensor sc = matmul(q, kT);
              return matmul(softmax(sc / 2.0), v) + sum(sc, {2}, true);
            }),
            0);
  EXPECT_EQ(count([](Program&, Tensor q, Tensor kT, Tensor v) {
              return matmul(softmax(matmul(q, kT), 1), v);  // (along the queries)
            }),
            0);
  EXPECT_EQ(count([](Program& p, Tensor q, Tensor kT, Tensor v) {
              Tensor c = p.constant(HostTensor::of(DType::F32, {30}, std::vector<double>(30, 2.0)));
              return matmul(softmax(matmul(q, kT) / c), v);
            }),
            0);
  EXPECT_EQ(count([](Program& p, Tensor q, Tensor kT, Tensor v) {
              Tensor m = p.input("m", DType::F32, {40, 30});
              return matmul(softmax(matmul(q, kT) * m), v);
            }),
            0);
  EXPECT_EQ(count(plain, DType::F64), 0);
  LowerOptions gpu;
  gpu.tune = false;
  EXPECT_EQ(count(plain, DType::F32, gpu), 0);
  gpu.fuseAttention = 2;  // (asked for: the one-pass kernel)
  EXPECT_EQ(count(plain, DType::F32, gpu), 1);
  auto wide = [](const LowerOptions& o) {  // v 32 wide: the tiled kernel's
    Program p;
    Tensor q = p.input("q", DType::F32, {2, 40, 8}), k = p.input("k", DType::F32, {2, 30, 8});
    p.output("y", matmul(softmax(matmul(q, transpose(k, {0, 2, 1})) / 2.0), p.input("v", DType::F32, {2, 30, 32})));
    return dispatchesOf(p, o, "attention");
  };
  gpu.fuseAttention = 1;
  EXPECT_EQ(wide(gpu), 1);
  gpu.attentionTiles = false;
  EXPECT_EQ(wide(gpu), 0);
}

}  // namespace
}  // namespace eph::tensor::test
