// The solvers on a device (frontends/value/solve/DevicePcg.h, DeviceProblem.h):
// PCG with every vector in device buffers against HostPcgOps on random sparse
// Jacobians, Levenberg–Marquardt and Gauss–Newton with PCG on the device
// against sparse Cholesky on the host's float64 evaluator on the repository's
// .vg problems, and NaN residuals found on the device named by the host's
// re-evaluation. Every target: interp, cpu and vulkan (always under
// EPH_REQUIRE_VULKAN=1, so that a missing driver fails).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "frontends/value/Text.h"
#include "frontends/value/solve/DevicePcg.h"
#include "frontends/value/solve/DeviceProblem.h"
#include "frontends/value/solve/GraphProblem.h"
#include "frontends/value/solve/Pcg.h"
#include "runtime/Device.h"
#include "runtime/RunStats.h"
#include "tests/unit/ValueTestUtil.h"

namespace eph::value {
namespace {

using test::targets;

std::unique_ptr<runtime::Device> open(const std::string& target) {
  auto dev = runtime::openDevice(target);
  EXPECT_TRUE(dev) << target << ": " << (dev ? "" : dev.error().message);
  return dev ? std::move(*dev) : nullptr;
}

std::filesystem::path source(const std::string& rel) { return std::filesystem::path(EPH_SOURCE_DIR) / rel; }

// The graph's DeviceProblem on `target` and its device (null after a failed
// expectation); p, declared last, is destroyed first.
struct OnDevice {
  std::unique_ptr<runtime::Device> dev;
  std::unique_ptr<DeviceProblem> p;
};
OnDevice problemOn(const std::string& target, const Graph& g, bool f32 = false) {
  OnDevice on;
  on.dev = open(target);
  if (!on.dev) return on;
  auto p = DeviceProblem::create(g, *on.dev, f32);
  EXPECT_TRUE(p) << p.error().message;
  if (p) on.p = std::move(*p);
  return on;
}

Graph parseFile(const std::filesystem::path& p) {
  Graph g;
  ParseError err;
  EXPECT_TRUE(parse(test::readFile(p), g, err)) << p << ": " << err.message;
  return g;
}

// A random m × n sparse J (k entries per row, distinct columns) and damping in [0.5, 1.5].
SparseRows randomJacobian(std::mt19937& rng, size_t m, size_t n, size_t k) {
  SparseRows J;
  J.reset(n);
  std::uniform_real_distribution<double> val(-2, 2);
  std::uniform_int_distribution<uint32_t> col(0, uint32_t(n - 1));
  for (size_t i = 0; i < m; ++i) {
    std::vector<uint32_t> cols;
    while (cols.size() < k) {
      uint32_t c = col(rng);
      if (std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
    }
    for (uint32_t c : cols) J.add(c, val(rng));
    J.endRow();
  }
  return J;
}

TEST(DevicePcg, MatchesHostPcgOnRandomSparseJacobians) {
  for (const std::string& target : targets()) {
    SCOPED_TRACE(target);
    auto dev = open(target);
    ASSERT_TRUE(dev);
    auto la = DeviceLinalg::create(*dev);
    ASSERT_TRUE(la) << la.error().message;
    std::mt19937 rng(7);
    for (auto [m, n, k] : {std::tuple{40, 12, 3}, {300, 120, 4}, {90, 200, 5}}) {
      SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n));
      SparseRows J = randomJacobian(rng, m, n, k);
      std::uniform_real_distribution<double> u(-1, 1), pos(0.5, 1.5);
      std::vector<double> d(n), b(n);
      for (auto& v : d) v = pos(rng);
      for (auto& v : b) v = u(rng);

      HostPcgOps host(J, d);
      host.vec(PcgOps::B) = b;
      PcgResult hr = pcg(host, 500, 1e-14);
      ASSERT_TRUE(hr.ok);

      auto DJ = (*la)->upload(J);
      ASSERT_TRUE(DJ) << DJ.error().message;
      auto dd = (*la)->alloc(n);
      ASSERT_TRUE(dd);
      ASSERT_TRUE((*la)->upload(*dd, d));
      auto ops = DevicePcgOps::create(**la, *DJ, *dd);
      ASSERT_TRUE(ops) << ops.error().message;
      ASSERT_TRUE((*la)->upload((*ops)->buffer(PcgOps::B), b));
      PcgResult dr = pcg(**ops, 500, 1e-14);
      ASSERT_TRUE((*ops)->status()) << (*ops)->status().error().message;
      EXPECT_TRUE(dr.ok);
      EXPECT_NEAR(dr.iterations, hr.iterations, 2);
      std::vector<double> x(n);
      ASSERT_TRUE((*la)->download((*ops)->buffer(PcgOps::X), x));
      const auto& want = host.vec(PcgOps::X);
      for (size_t i = 0; i < size_t(n); ++i) EXPECT_NEAR(x[i], want[i], 1e-9) << i;

      // The single operations against SparseRows.
      std::vector<double> v(n), t(m), jv(m), jtt(n), cs(n), got;
      for (auto& e : v) e = u(rng);
      for (auto& e : t) e = u(rng);
      J.multiply(v, jv);
      J.multiplyTransposed(t, jtt);
      J.columnSquares(cs);
      auto vb = (*la)->alloc(n), tb = (*la)->alloc(m), ob = (*la)->alloc(m), pb = (*la)->alloc(n);
      ASSERT_TRUE(vb && tb && ob && pb);
      ASSERT_TRUE((*la)->upload(*vb, v));
      ASSERT_TRUE((*la)->upload(*tb, t));
      ASSERT_TRUE((*la)->multiplyJ(*DJ, *vb, *ob));
      got.assign(m, 0);
      ASSERT_TRUE((*la)->download(*ob, got));
      for (size_t i = 0; i < size_t(m); ++i) EXPECT_NEAR(got[i], jv[i], 1e-12) << "J·v " << i;
      ASSERT_TRUE((*la)->multiplyJt(*DJ, *tb, *pb));
      got.assign(n, 0);
      ASSERT_TRUE((*la)->download(*pb, got));
      for (size_t i = 0; i < size_t(n); ++i) EXPECT_NEAR(got[i], jtt[i], 1e-12) << "Jᵀ·t " << i;
      ASSERT_TRUE((*la)->columnSquares(*DJ, *pb));
      ASSERT_TRUE((*la)->download(*pb, got));
      for (size_t i = 0; i < size_t(n); ++i) EXPECT_NEAR(got[i], cs[i], 1e-12) << "diag(JᵀJ) " << i;
      auto dot = (*la)->dot(*tb, *tb, m);
      ASSERT_TRUE(dot);
      double want2 = 0, mx = 0;
      for (double e : t) want2 += e * e, mx = std::max(mx, std::abs(e));
      EXPECT_NEAR(*dot, want2, 1e-12);
      auto ma = (*la)->maxAbs(*tb, m);
      ASSERT_TRUE(ma);
      EXPECT_EQ(*ma, mx);
    }
  }
}

struct Solved {
  SolveResult res;
  std::vector<double> x;
};

Solved solveHost(const Graph& g, Method method) {
  GraphProblem p(g);
  Solved s{{}, p.initial()};
  SolverOptions o;
  o.method = method;
  auto r = solve(p, s.x, o);
  EXPECT_TRUE(r) << r.error().message;
  if (r) s.res = *r;
  return s;
}

// The .vg problems of the repository that `ephc solve` handles (tests may not
// read outside it), with Levenberg–Marquardt and Gauss–Newton.
TEST(DeviceSolve, PcgOnTheDeviceReachesTheHostCholeskyMinimum) {
  const char* files[] = {"tests/value/examples/s01_linear.vg", "tests/lit/value/Inputs/fit.vg",
                         "tests/value/examples/c02_mixed_leaves.vg", "tests/value/examples/c06_same_child.vg",
                         "tests/value/examples/c15_distance_sum.vg", "examples/value/square.vg",
                         "examples/value/sketch.vg"};
  for (const std::string& target : targets()) {
    auto dev = open(target);
    ASSERT_TRUE(dev);
    for (const char* file : files)
      for (Method method : {Method::LevenbergMarquardt, Method::GaussNewton}) {
        bool gn = method == Method::GaussNewton;
        SCOPED_TRACE(target + " " + file + (gn ? " gn" : " lm"));
        Graph g = parseFile(source(file));
        Solved host = solveHost(g, method);
        if (gn && !host.res.converged) continue;  // GN need not converge on these (singular JᵀJ)
        ASSERT_TRUE(host.res.converged) << stopReasonName(host.res.reason);
        auto p = DeviceProblem::create(g, *dev);
        ASSERT_TRUE(p) << p.error().message;
        ASSERT_NE((*p)->deviceResident(), nullptr);
        std::vector<double> x = (*p)->initial();
        SolverOptions o;
        o.method = method;
        o.linearSolver = LinearSolver::Pcg;
        int progress = 0;
        o.progress = [&](const IterationInfo&) { ++progress; };
        auto r = solve(**p, x, o);
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_TRUE(r->converged) << stopReasonName(r->reason);
        EXPECT_EQ(progress, r->iterations);
        EXPECT_NEAR(r->cost, host.res.cost, 1e-10 + 1e-6 * host.res.cost);
        EXPECT_NEAR(r->initialCost, host.res.initialCost, 1e-12 * (1 + host.res.initialCost));
        ASSERT_EQ(x.size(), host.x.size());
        for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], host.x[i], 1e-5 * (1 + std::abs(host.x[i]))) << i;
      }
  }
}

// f32 kernels: J and r in f32 on the device, the solver and PCG in f64.
TEST(DeviceSolve, F32KernelsReachTheFit) {
  Graph g = parseFile(source("tests/lit/value/Inputs/fit.vg"));
  for (const std::string& target : targets()) {
    SCOPED_TRACE(target);
    auto [dev, p] = problemOn(target, g, true);
    ASSERT_TRUE(p);
    std::vector<double> x = p->initial();
    SolverOptions o;
    o.linearSolver = LinearSolver::Pcg;
    auto r = solve(*p, x, o);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->converged);
    EXPECT_NEAR(x[0], 2, 1e-4);
    EXPECT_NEAR(x[1], -0.7, 1e-4);
    // And the same problem through the host interface (evaluate()) with Cholesky.
    x = p->initial();
    o.linearSolver = LinearSolver::SparseCholesky;
    r = solve(*p, x, o);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_NEAR(x[0], 2, 1e-4);
    EXPECT_NEAR(x[1], -0.7, 1e-4);
  }
}

// A residual that is NaN on the device: the error names it and the op, from
// the host's float64 re-evaluation.
TEST(DeviceSolve, NonFiniteResidualNamesTheResidualAndTheOp) {
  Graph g;
  ParseError err;
  // r1 = log(x) is NaN at the start (x = -1); r0 is fine.
  ASSERT_TRUE(parse("param x = -1\nparam y = 2\nresidual y - 1\nresidual log(x) + y\n", g, err)) << err.message;
  for (const std::string& target : targets()) {
    SCOPED_TRACE(target);
    auto [dev, p] = problemOn(target, g);
    ASSERT_TRUE(p);
    for (Method method : {Method::LevenbergMarquardt, Method::GaussNewton}) {
      std::vector<double> x = p->initial();
      SolverOptions o;
      o.method = method;
      o.linearSolver = LinearSolver::Pcg;
      auto r = solve(*p, x, o);
      ASSERT_FALSE(r);
      EXPECT_EQ(r.error().message, "residual 1 is NaN: log of -1 (op log)");
    }
  }
  // The host evaluator says the same.
  GraphProblem host(g);
  std::vector<double> x = host.initial();
  auto r = solve(host, x, SolverOptions{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "residual 1 is NaN: log of -1 (op log)");
}

// A trial point where a residual turns infinite (1/x at x = 0): an error, or,
// with rejectNonFiniteSteps, a rejected step.
TEST(DeviceSolve, InfiniteTrialPoint) {
  Graph g;
  ParseError err;
  // From x = 1 the Gauss–Newton step for r = x − 0 ... lands on x = 0 where 1/x is +Inf.
  ASSERT_TRUE(parse("param x = 1\nresidual x\nresidual 0 * x + 1 / x - 1 / x\n", g, err)) << err.message;
  for (const std::string& target : targets()) {
    SCOPED_TRACE(target);
    auto [dev, p] = problemOn(target, g);
    ASSERT_TRUE(p);
    std::vector<double> x = p->initial();
    SolverOptions o;
    o.method = Method::GaussNewton;
    o.linearSolver = LinearSolver::Pcg;
    auto r = solve(*p, x, o);
    ASSERT_FALSE(r);
    // The residual (inf − inf) or, where the device folds 1/x − 1/x, its
    // Jacobian entry; either way residual 1 and the division are named.
    const std::string& msg = r.error().message;
    EXPECT_TRUE(msg == "residual 1 is NaN: div of 1, 0 (op div)" ||
                msg == "∂(residual 1)/∂(parameter 0) is NaN: div of 1, 0 (op div)")
        << msg;
  }
}

// evaluate() (the host interface: Cholesky, L-BFGS) against the reference
// evaluator, with a residual that reads no parameter and a parameter that no
// residual reads (an empty row and an empty column).
TEST(DeviceSolve, EvaluateMatchesTheReferenceRows) {
  Graph g;
  ParseError err;
  ASSERT_TRUE(parse("param p[4] = 0.3 -0.7 1.1 5\nconst c = 2\nlet s = p[0] * p[1]\n"
                    "residual tanh(s + p[2]) * c\nresidual s + s\nresidual c * c\nresidual atan2(p[2], p[0] + 3) - p[1]\n",
                    g, err)) << err.message;
  GraphProblem host(g);
  std::vector<double> x = host.initial(), rh(4);
  SparseRows Jh;
  ASSERT_TRUE(host.evaluate(x, rh, &Jh));
  for (const std::string& target : targets()) {
    SCOPED_TRACE(target);
    auto [dev, p] = problemOn(target, g);
    ASSERT_TRUE(p);
    std::vector<double> r(4);
    SparseRows J;
    ASSERT_TRUE(p->evaluate(x, r, &J));
    ASSERT_EQ(J.rows(), 4u);
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_NEAR(r[i], rh[i], 1e-14) << i;
      std::vector<double> a(5, 0.0), b(5, 0.0);
      for (size_t k = J.rowStart[i]; k < J.rowStart[i + 1]; ++k) a[J.cols[k]] += J.vals[k];
      for (size_t k = Jh.rowStart[i]; k < Jh.rowStart[i + 1]; ++k) b[Jh.cols[k]] += Jh.vals[k];
      for (size_t c = 0; c < 5; ++c) EXPECT_NEAR(a[c], b[c], 1e-14) << i << "," << c;
    }
    EXPECT_EQ(J.rowStart[3] - J.rowStart[2], 0u);
    // Solved on the device: p[3] (in no residual) keeps its value.
    std::vector<double> xs = x;
    SolverOptions o;
    o.linearSolver = LinearSolver::Pcg;
    auto res = solve(*p, xs, o);
    ASSERT_TRUE(res) << res.error().message;
    EXPECT_EQ(xs[3], 5.0);
  }
}

// Counts the transfers larger than `big` bytes.
class CountingDevice : public runtime::StatsDevice {
 public:
  CountingDevice(runtime::Device& inner, runtime::RunStats& stats, size_t big) : StatsDevice(inner, stats), big_(big) {}
  Status uploadBytes(uint64_t dst, std::span<const std::byte> bytes, Loc site) override {
    bigUploads += bytes.size() > big_;
    return StatsDevice::uploadBytes(dst, bytes, site);
  }
  Status downloadBytes(std::span<std::byte> bytes, uint64_t src, Loc site) override {
    bigDownloads += bytes.size() > big_;
    return StatsDevice::downloadBytes(bytes, src, site);
  }
  int bigUploads = 0, bigDownloads = 0;

 private:
  size_t big_;
};

// solve() of p on `dev` (a CountingDevice under it) with the transfers
// larger than a reduction's partials counted before it, at its first
// iteration's report, at its last, and after it.
struct Counted {
  Expected<SolveResult> result = SolveResult{};
  int iterations = 0, upBefore = 0, downBefore = 0, upAtFirst = 0, downAtFirst = 0, upAtLast = 0, downAtLast = 0;
  int upAfter = 0, downAfter = 0;
};
Counted solveCounted(DeviceProblem& p, CountingDevice& dev, std::vector<double>& x, SolverOptions o) {
  Counted c;
  o.progress = [&](const IterationInfo&) {
    if (++c.iterations == 1) c.upAtFirst = dev.bigUploads, c.downAtFirst = dev.bigDownloads;
    c.upAtLast = dev.bigUploads, c.downAtLast = dev.bigDownloads;
  };
  c.upBefore = dev.bigUploads, c.downBefore = dev.bigDownloads;
  c.result = solve(p, x, o);
  c.upAfter = dev.bigUploads, c.downAfter = dev.bigDownloads;
  return c;
}

// Converged, and between the first iteration and the last nothing of
// parameter size moved; x came down once, at the end.
void expectConvergedOnTheDevice(const Counted& c) {
  EXPECT_TRUE(c.result->converged) << stopReasonName(c.result->reason);
  EXPECT_GT(c.iterations, 3);
  EXPECT_EQ(c.upAtLast, c.upAtFirst);
  EXPECT_EQ(c.downAtLast, c.downAtFirst);
  EXPECT_EQ(c.downAfter - c.downBefore, 1);
}

// 500 extended-Rosenbrock pairs (1000 parameters, 1000 residuals): between
// the first and the last iteration nothing of parameter or residual size
// crosses between host and device (only the reductions' 256 partials), and
// the minimum is the host's.
TEST(DeviceSolve, ParametersStayOnTheDevice) {
  const int pairs = 500;
  std::string text = "param p[" + std::to_string(2 * pairs) + "] =";
  for (int i = 0; i < pairs; ++i) text += " -1.2 1";
  text += "\n";
  for (int i = 0; i < pairs; ++i) {
    std::string x = "p[" + std::to_string(2 * i) + "]", y = "p[" + std::to_string(2 * i + 1) + "]";
    text += "residual 10 * (" + y + " - " + x + " * " + x + ")\nresidual 1 - " + x + "\n";
  }
  Graph g;
  ParseError err;
  ASSERT_TRUE(parse(text, g, err)) << err.message;
  for (const std::string& target : targets()) {
    SCOPED_TRACE(target);
    auto inner = open(target);
    ASSERT_TRUE(inner);
    runtime::RunStats stats;
    CountingDevice dev(*inner, stats, DeviceLinalg::kReduceThreads * sizeof(double));
    auto p = DeviceProblem::create(g, dev);
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_EQ((*p)->kernels(), 2u);
    std::vector<double> x = (*p)->initial();
    SolverOptions o;
    o.linearSolver = LinearSolver::Pcg;
    Counted c = solveCounted(**p, dev, x, o);
    ASSERT_TRUE(c.result) << c.result.error().message;
    const SolveResult* r = &*c.result;
    expectConvergedOnTheDevice(c);
    // Uploads: x once, and the zeros that each new buffer starts with.
    EXPECT_LE(c.upAfter - c.upBefore, 20);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], 1.0, 1e-6) << i;
    Solved host = solveHost(g, Method::LevenbergMarquardt);
    EXPECT_NEAR(r->cost, host.res.cost, 1e-12);
    EXPECT_EQ(r->iterations, host.res.iterations);
  }
}


// L-BFGS on a device-resident problem (Lbfgs.cpp's algorithm over device
// buffers, DeviceSolve.cpp): the host's iterations, cost and minimiser of
// Σ r_i on every target, with x, the gradient, the direction and the pairs
// on the device: between the first iteration and the last nothing of
// parameter size moves; x comes down once.
TEST(DeviceSolve, LbfgsKeepsItsVectorsOnTheDevice) {
  const int n = 600;
  std::string text = "param p[" + std::to_string(n) + "] =";
  for (int i = 0; i < n; ++i) text += " 0";
  text += "\n";
  for (int i = 0; i < n; ++i) {
    std::string x = "p[" + std::to_string(i) + "]";
    text += "residual square(" + x + " - " + std::to_string(0.5 + 0.01 * (i % 17)) + ")\n";
    if (i + 1 < n) text += "residual 0.3 * " + x + " * p[" + std::to_string(i + 1) + "]\n";
  }
  Graph g;
  ParseError err;
  ASSERT_TRUE(parse(text, g, err)) << err.message;
  Solved host = solveHost(g, Method::Lbfgs);
  ASSERT_TRUE(host.res.converged) << stopReasonName(host.res.reason);
  for (const std::string& target : targets()) {
    SCOPED_TRACE(target);
    auto inner = open(target);
    ASSERT_TRUE(inner);
    runtime::RunStats stats;
    CountingDevice dev(*inner, stats, DeviceLinalg::kReduceThreads * sizeof(double));
    auto p = DeviceProblem::create(g, dev);
    ASSERT_TRUE(p) << p.error().message;
    std::vector<double> x = (*p)->initial();
    SolverOptions o;
    o.method = Method::Lbfgs;
    Counted c = solveCounted(**p, dev, x, o);
    ASSERT_TRUE(c.result) << c.result.error().message;
    const SolveResult* r = &*c.result;
    expectConvergedOnTheDevice(c);
    EXPECT_EQ(r->iterations, host.res.iterations);
    EXPECT_NEAR(r->cost, host.res.cost, 1e-9 * std::abs(host.res.cost));
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], host.x[i], 1e-6) << i;
  }
}

// A residual that becomes NaN at a line-search step (the first step takes x
// from 3 to 2) is named with its op, as on the host.
TEST(DeviceSolve, LbfgsNamesANonFiniteResidual) {
  Graph g;
  ParseError err;
  ASSERT_TRUE(parse("param x = 3\nresidual square(x)\nresidual log(x - 2.9)\n", g, err)) << err.message;
  for (const std::string& target : targets()) {
    SCOPED_TRACE(target);
    OnDevice on = problemOn(target, g);
    ASSERT_TRUE(on.p);
    std::vector<double> x = on.p->initial();
    SolverOptions o;
    o.method = Method::Lbfgs;
    auto r = solve(*on.p, x, o);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "residual 1 is NaN: log of -0.8999999999999999 (op log)");
  }
}

}  // namespace
}  // namespace eph::value
