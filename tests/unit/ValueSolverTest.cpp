// The Value-graph solvers (frontends/value/solve, docs/value-solvers.md) on
// analytic residual problems written in plain C++ with hand-written
// Jacobians: Levenberg–Marquardt, Gauss–Newton and L-BFGS, the two linear
// solvers (sparse Cholesky and PCG) against each other and a dense reference,
// convergence reasons, NaN/Inf errors and the finite-difference Jacobian check.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "frontends/value/solve/Internal.h"
#include "frontends/value/solve/Pcg.h"
#include "frontends/value/solve/Solver.h"

namespace eph::value {
namespace {

using Fn = std::function<void(std::span<const double> x, std::span<double> r, SparseRows* J)>;

// A least-squares problem from one function that fills r and, when asked, J.
class Analytic : public LeastSquaresProblem {
 public:
  Analytic(size_t n, size_t m, Fn fn) : n_(n), m_(m), fn_(std::move(fn)) {}
  size_t numParams() const override { return n_; }
  size_t numResiduals() const override { return m_; }
  Status evaluate(std::span<const double> x, std::span<double> r, SparseRows* J) override {
    if (J) J->reset(n_);
    fn_(x, r, J);
    return Status::ok();
  }
  std::function<ResidualNote(size_t, std::span<const double>)> explain;
  ResidualNote explainResidual(size_t i, std::span<const double> x) override {
    return explain ? explain(i, x) : ResidualNote{};
  }

 private:
  size_t n_, m_;
  Fn fn_;
};

// Adds one Jacobian row {(col, value), ...}.
void row(SparseRows* J, std::initializer_list<std::pair<uint32_t, double>> entries) {
  if (!J) return;
  for (auto [c, v] : entries) J->add(c, v);
  J->endRow();
}

// FORMAT.md's s01_linear: residuals x − 5 and y − 3.
Analytic linear() {
  return Analytic(2, 2, [](auto x, auto r, SparseRows* J) {
    r[0] = x[0] - 5, r[1] = x[1] - 3;
    row(J, {{0, 1.0}});
    row(J, {{1, 1.0}});
  });
}

// Rosenbrock as least squares: 10(y − x²), 1 − x; minimum (1, 1).
Analytic rosenbrock() {
  return Analytic(2, 2, [](auto x, auto r, SparseRows* J) {
    r[0] = 10 * (x[1] - x[0] * x[0]), r[1] = 1 - x[0];
    row(J, {{0, -20 * x[0]}, {1, 10.0}});
    row(J, {{0, -1.0}});
  });
}

// Powell's singular function: minimum 0 at 0, where J is singular.
Analytic powell() {
  return Analytic(4, 4, [](auto x, auto r, SparseRows* J) {
    double s5 = std::sqrt(5.0), s10 = std::sqrt(10.0);
    double a = x[1] - 2 * x[2], b = x[0] - x[3];
    r[0] = x[0] + 10 * x[1], r[1] = s5 * (x[2] - x[3]), r[2] = a * a, r[3] = s10 * b * b;
    row(J, {{0, 1.0}, {1, 10.0}});
    row(J, {{2, s5}, {3, -s5}});
    row(J, {{1, 2 * a}, {2, -4 * a}});
    row(J, {{0, 2 * s10 * b}, {3, -2 * s10 * b}});
  });
}

// Noise-free samples of y = a·exp(b·t) + c at t = 0, 0.1, ..., 4: residuals
// a·exp(b·t_i) + c − y_i over (a, b, c).
constexpr double kA = 2.0, kB = -0.7, kC = 0.5;
Analytic expFit() {
  return Analytic(3, 41, [](auto x, auto r, SparseRows* J) {
    for (size_t i = 0; i < 41; ++i) {
      double t = 0.1 * double(i), e = std::exp(x[1] * t);
      r[i] = x[0] * e + x[2] - (kA * std::exp(kB * t) + kC);
      row(J, {{0, e}, {1, x[0] * t * e}, {2, 1.0}});
    }
  });
}

// A chain over n parameters with a known answer x*_i = 1 + ½·sin(0.01·i):
// x_i² − x*_i² for every i and (x_{i+1} − x_i) − (x*_{i+1} − x*_i) for each
// neighbour pair; zero residual at x*.
double chainTarget(size_t i) { return 1 + 0.5 * std::sin(0.01 * double(i)); }
Analytic chain(size_t n) {
  return Analytic(n, 2 * n - 1, [n](auto x, auto r, SparseRows* J) {
    for (size_t i = 0; i < n; ++i) {
      double t = chainTarget(i);
      r[i] = x[i] * x[i] - t * t;
      row(J, {{uint32_t(i), 2 * x[i]}});
    }
    for (size_t i = 0; i + 1 < n; ++i) {
      r[n + i] = (x[i + 1] - x[i]) - (chainTarget(i + 1) - chainTarget(i));
      row(J, {{uint32_t(i), -1.0}, {uint32_t(i + 1), 1.0}});
    }
  });
}

SolverOptions with(Method m, LinearSolver ls = LinearSolver::SparseCholesky) {
  SolverOptions o;
  o.method = m;
  o.linearSolver = ls;
  return o;
}

const Method kLeastSquares[] = {Method::LevenbergMarquardt, Method::GaussNewton};
const LinearSolver kLinear[] = {LinearSolver::SparseCholesky, LinearSolver::Pcg};

TEST(ValueSolver, LinearAsInFormatExample) {
  for (Method m : kLeastSquares)
    for (LinearSolver ls : kLinear) {
      Analytic p = linear();
      std::vector<double> x = {0, 0};
      auto res = solve(p, x, with(m, ls));
      ASSERT_TRUE(res) << res.error().str();
      EXPECT_TRUE(res->converged);
      EXPECT_NEAR(x[0], 5, 1e-4);
      EXPECT_NEAR(x[1], 3, 1e-4);
      EXPECT_NEAR(res->initialCost, 17, 1e-12);  // ½(25 + 9)
      EXPECT_LT(res->cost, 1e-12);
      // Gauss–Newton solves a linear problem in one step, landing where the
      // gradient is zero; LM's damped steps approach it geometrically.
      if (m == Method::GaussNewton) {
        EXPECT_EQ(res->reason, StopReason::GradientTolerance);
        EXPECT_EQ(res->iterations, 1);
      }
    }
}

TEST(ValueSolver, Rosenbrock) {
  for (Method m : kLeastSquares)
    for (LinearSolver ls : kLinear) {
      Analytic p = rosenbrock();
      std::vector<double> x = {-1.2, 1};
      auto res = solve(p, x, with(m, ls));
      ASSERT_TRUE(res) << res.error().str();
      EXPECT_TRUE(res->converged) << stopReasonName(res->reason);
      EXPECT_NEAR(x[0], 1, 1e-8);
      EXPECT_NEAR(x[1], 1, 1e-8);
      EXPECT_NEAR(res->initialCost, 0.5 * (4.4 * 4.4 + 2.2 * 2.2) + 0 * 0, 1e-9);
    }
}

TEST(ValueSolver, PowellSingularFunction) {
  // J is singular at the minimum: convergence is linear, so LM needs many
  // iterations and Gauss–Newton would meet singular normal equations.
  for (LinearSolver ls : kLinear) {
    Analytic p = powell();
    std::vector<double> x = {3, -1, 0, 1};
    SolverOptions o = with(Method::LevenbergMarquardt, ls);
    o.maxIterations = 500;
    o.costChangeTolerance = 0;
    o.gradientTolerance = 1e-20;
    auto res = solve(p, x, o);
    ASSERT_TRUE(res) << res.error().str();
    EXPECT_TRUE(res->converged) << stopReasonName(res->reason);
    EXPECT_NEAR(res->initialCost, 0.5 * (49 + 5 + 1 + 160), 1e-9);  // r = (−7, −√5, 1, 4√10)
    EXPECT_LT(res->cost, 1e-20);
    for (double v : x) EXPECT_LT(std::abs(v), 1e-4);
  }
}

TEST(ValueSolver, ExponentialFitRecoversParameters) {
  for (Method m : kLeastSquares)
    for (LinearSolver ls : kLinear) {
      Analytic p = expFit();
      // Gauss–Newton, undamped, needs a start nearer the answer.
      std::vector<double> x = m == Method::GaussNewton ? std::vector<double>{1.5, -0.5, 0.3}
                                                       : std::vector<double>{1, 0, 0};
      auto res = solve(p, x, with(m, ls));
      ASSERT_TRUE(res) << res.error().str();
      EXPECT_TRUE(res->converged) << stopReasonName(res->reason);
      EXPECT_NEAR(x[0], kA, 1e-7);
      EXPECT_NEAR(x[1], kB, 1e-7);
      EXPECT_NEAR(x[2], kC, 1e-7);
    }
}

TEST(ValueSolver, LargeSparseChain) {
  const size_t n = 100000;
  Analytic p = chain(n);
  // One step from x = 1: both linear solvers give the same step.
  std::vector<double> x(n, 1.0), r(p.numResiduals()), g(n), damping(n, 0.0);
  SparseRows J;
  ASSERT_TRUE(p.evaluate(x, r, &J));
  EXPECT_EQ(J.nonZeros(), n + 2 * (n - 1));
  J.multiplyTransposed(r, g);
  std::vector<double> hChol(n), hPcg(n);
  SolverOptions o;
  int pcgIterations = 0;
  ASSERT_TRUE(solveNormalEquations(J, g, damping, LinearSolver::SparseCholesky, o, hChol));
  ASSERT_TRUE(solveNormalEquations(J, g, damping, LinearSolver::Pcg, o, hPcg, &pcgIterations));
  EXPECT_GT(pcgIterations, 1);
  double maxDiff = 0, maxStep = 0;
  for (size_t i = 0; i < n; ++i) {
    maxDiff = std::max(maxDiff, std::abs(hChol[i] - hPcg[i]));
    maxStep = std::max(maxStep, std::abs(hChol[i]));
  }
  EXPECT_GT(maxStep, 0.1);
  EXPECT_LT(maxDiff, 1e-8 * maxStep);

  // Gauss–Newton converges with either.
  for (LinearSolver ls : kLinear) {
    std::vector<double> xs(n, 1.0);
    auto res = solve(p, xs, with(Method::GaussNewton, ls));
    ASSERT_TRUE(res) << res.error().str();
    EXPECT_TRUE(res->converged) << stopReasonName(res->reason);
    EXPECT_LE(res->iterations, 10);
    double err = 0;
    for (size_t i = 0; i < n; ++i) err = std::max(err, std::abs(xs[i] - chainTarget(i)));
    EXPECT_LT(err, 1e-9);
  }
}

// Dense (JᵀJ + diag(d)) h = −g by Gaussian elimination with partial pivoting.
std::vector<double> denseStep(const SparseRows& J, std::span<const double> g, std::span<const double> d) {
  size_t n = J.numCols;
  std::vector<double> A(n * (n + 1), 0.0);
  for (size_t i = 0; i < J.rows(); ++i)
    for (size_t a = J.rowStart[i]; a < J.rowStart[i + 1]; ++a)
      for (size_t b = J.rowStart[i]; b < J.rowStart[i + 1]; ++b)
        A[J.cols[a] * (n + 1) + J.cols[b]] += J.vals[a] * J.vals[b];
  for (size_t i = 0; i < n; ++i) A[i * (n + 1) + i] += d[i], A[i * (n + 1) + n] = -g[i];
  for (size_t c = 0; c < n; ++c) {
    size_t piv = c;
    for (size_t i = c + 1; i < n; ++i)
      if (std::abs(A[i * (n + 1) + c]) > std::abs(A[piv * (n + 1) + c])) piv = i;
    for (size_t k = 0; k <= n; ++k) std::swap(A[c * (n + 1) + k], A[piv * (n + 1) + k]);
    for (size_t i = 0; i < n; ++i) {
      if (i == c) continue;
      double f = A[i * (n + 1) + c] / A[c * (n + 1) + c];
      for (size_t k = c; k <= n; ++k) A[i * (n + 1) + k] -= f * A[c * (n + 1) + k];
    }
  }
  std::vector<double> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = A[i * (n + 1) + n] / A[i * (n + 1) + i];
  return h;
}

TEST(ValueSolver, LinearSolversGiveTheSameStep) {
  // A random sparse J (60 × 25, three entries a row) with and without damping.
  uint64_t state = 12345;
  auto rnd = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return double(state >> 11) / double(1ull << 53);
  };
  const size_t n = 25, m = 60;
  SparseRows J;
  J.reset(n);
  for (size_t i = 0; i < m; ++i) {
    uint32_t c0 = uint32_t(i % n), c1 = uint32_t((i * 7 + 3) % n), c2 = uint32_t((i * 11 + 5) % n);
    J.add(c0, rnd() * 2 - 1);
    if (c1 != c0) J.add(c1, rnd() * 2 - 1);
    if (c2 != c0 && c2 != c1) J.add(c2, rnd() * 2 - 1);
    J.endRow();
  }
  std::vector<double> g(n);
  for (double& v : g) v = rnd() * 2 - 1;
  for (double lambda : {0.0, 1e-3, 1.0}) {
    std::vector<double> d(n, lambda), hChol(n), hPcg(n);
    SolverOptions o;
    o.pcgTolerance = 1e-14;
    ASSERT_TRUE(solveNormalEquations(J, g, d, LinearSolver::SparseCholesky, o, hChol));
    ASSERT_TRUE(solveNormalEquations(J, g, d, LinearSolver::Pcg, o, hPcg));
    std::vector<double> ref = denseStep(J, g, d);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_NEAR(hChol[i], ref[i], 1e-9 * (1 + std::abs(ref[i]))) << "lambda " << lambda << " i " << i;
      EXPECT_NEAR(hPcg[i], ref[i], 1e-8 * (1 + std::abs(ref[i]))) << "lambda " << lambda << " i " << i;
    }
  }
}

TEST(ValueSolver, CholeskyKeepsItsAnalysisWhileThePatternHolds) {
  // J = diag(1, 2, 3) then the same pattern with other values, then a new pattern.
  auto diagonal = [](double a, bool extra) {
    SparseRows J;
    J.reset(3);
    for (uint32_t i = 0; i < 3; ++i) {
      J.add(i, a * double(i + 1));
      if (extra && i == 0) J.add(2, 1.0);
      J.endRow();
    }
    return J;
  };
  std::vector<double> g = {-1, -4, -9}, d(3, 0.0), h(3);
  detail::CholeskySolver chol;
  ASSERT_TRUE(chol.solve(diagonal(1, false), g, d, h));  // h = g / i²
  EXPECT_NEAR(h[0], 1, 1e-15);
  EXPECT_NEAR(h[2], 1, 1e-15);
  ASSERT_TRUE(chol.solve(diagonal(2, false), g, d, h));
  EXPECT_NEAR(h[1], 0.25, 1e-15);
  EXPECT_EQ(chol.analyses(), 1);
  // Rows (1, 0, 1), (0, 2, 0), (0, 0, 3): JᵀJ = [[1,0,1],[0,4,0],[1,0,10]].
  ASSERT_TRUE(chol.solve(diagonal(1, true), g, d, h));
  EXPECT_EQ(chol.analyses(), 2);
  EXPECT_NEAR(h[0] + h[2], 1, 1e-14);          // first row of JᵀJ·h = 1
  EXPECT_NEAR(h[0] + 10 * h[2], 9, 1e-14);     // third row = 9
}

TEST(ValueSolver, PcgThroughHostOps) {
  // PCG on a diagonal J converges in one iteration (Jacobi is exact there).
  SparseRows J;
  J.reset(3);
  for (uint32_t i = 0; i < 3; ++i) J.add(i, double(i + 1)), J.endRow();
  std::vector<double> d = {0, 1, 0};
  HostPcgOps ops(J, d);
  ops.vec(PcgOps::B) = {1, 5, 9};
  PcgResult res = pcg(ops, 10, 1e-12);
  EXPECT_TRUE(res.ok);
  EXPECT_EQ(res.iterations, 1);
  EXPECT_NEAR(ops.vec(PcgOps::X)[0], 1.0, 1e-15);  // 1 / 1
  EXPECT_NEAR(ops.vec(PcgOps::X)[1], 1.0, 1e-15);  // 5 / (4 + 1)
  EXPECT_NEAR(ops.vec(PcgOps::X)[2], 1.0, 1e-15);  // 9 / 9
}

// Σ c_i (x_i − i)² with c_i from 1 to 100: minimum at x_i = i.
class Quadratic : public EnergyProblem {
 public:
  size_t numParams() const override { return 100; }
  Expected<double> evaluate(std::span<const double> x, std::span<double> grad) override {
    double f = 0;
    for (size_t i = 0; i < 100; ++i) {
      double c = 1 + double(i), e = x[i] - double(i);
      f += c * e * e;
      if (!grad.empty()) grad[i] = 2 * c * e;
    }
    return f;
  }
};

// 100(y − x²)² + (1 − x)².
class RosenbrockEnergy : public EnergyProblem {
 public:
  size_t numParams() const override { return 2; }
  Expected<double> evaluate(std::span<const double> x, std::span<double> grad) override {
    double a = x[1] - x[0] * x[0], b = 1 - x[0];
    if (!grad.empty()) grad[0] = -400 * a * x[0] - 2 * b, grad[1] = 200 * a;
    return 100 * a * a + b * b;
  }
};

TEST(ValueSolver, LbfgsOnEnergies) {
  SolverOptions o = with(Method::Lbfgs);
  o.costChangeTolerance = 0;
  o.stepTolerance = 1e-15;
  o.gradientTolerance = 1e-9;
  o.maxIterations = 500;
  {
    Quadratic q;
    std::vector<double> x(100, 0.0);
    auto res = lbfgs(q, x, o);
    ASSERT_TRUE(res) << res.error().str();
    EXPECT_EQ(res->reason, StopReason::GradientTolerance);
    for (size_t i = 0; i < 100; ++i) EXPECT_NEAR(x[i], double(i), 1e-9);
  }
  {
    RosenbrockEnergy rb;
    std::vector<double> x = {-1.2, 1};
    std::vector<double> costs;
    SolverOptions ob = o;
    ob.progress = [&](const IterationInfo& it) { costs.push_back(it.cost); };
    auto res = lbfgs(rb, x, ob);
    ASSERT_TRUE(res) << res.error().str();
    EXPECT_TRUE(res->converged) << stopReasonName(res->reason);
    EXPECT_NEAR(x[0], 1, 1e-6);
    EXPECT_NEAR(x[1], 1, 1e-6);
    EXPECT_NEAR(res->initialCost, 24.2, 1e-12);
    // Every step satisfied the sufficient-decrease condition.
    ASSERT_EQ(costs.size(), size_t(res->iterations));
    for (size_t i = 1; i < costs.size(); ++i) EXPECT_LT(costs[i], costs[i - 1]);
  }
  {
    // Least squares through the energy form ½Σr².
    Analytic p = expFit();
    HalfSquaredNorm e(p);
    std::vector<double> x = {1, 0, 0};
    SolverOptions oe = o;
    oe.gradientTolerance = 1e-12;
    oe.maxIterations = 2000;
    auto res = lbfgs(e, x, oe);
    ASSERT_TRUE(res) << res.error().str();
    EXPECT_NEAR(x[0], kA, 1e-5);
    EXPECT_NEAR(x[1], kB, 1e-5);
    EXPECT_NEAR(x[2], kC, 1e-5);
  }
}

TEST(ValueSolver, LbfgsMinimisesTheSumOfResiduals) {
  // FORMAT.md's lbfgs: Σ r_i with r_i = (x_i − t_i)² + 1, minimum Σ = n at t.
  const size_t n = 1000;
  Analytic p(n, n, [](auto x, auto r, SparseRows* J) {
    for (size_t i = 0; i < x.size(); ++i) {
      double t = std::cos(double(i)), e = x[i] - t;
      r[i] = e * e + 1;
      row(J, {{uint32_t(i), 2 * e}});
    }
  });
  std::vector<double> x(n, 0.0);
  auto res = solve(p, x, with(Method::Lbfgs));
  ASSERT_TRUE(res) << res.error().str();
  EXPECT_TRUE(res->converged) << stopReasonName(res->reason);
  EXPECT_NEAR(res->cost, double(n), 1e-9);
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(x[i], std::cos(double(i)), 1e-6);
}

// r0 = x − 1, r1 = log(x) − log(0.001): NaN for x ≤ 0, which a full step
// from x = 1 reaches.
Analytic logProblem() {
  Analytic p(1, 2, [](auto x, auto r, SparseRows* J) {
    r[0] = 0.01 * (x[0] - 1);
    r[1] = std::log(x[0]) - std::log(0.001);
    row(J, {{0, 0.01}});
    row(J, {{0, 1 / x[0]}});
  });
  p.explain = [](size_t i, std::span<const double> x) {
    ResidualNote n;
    if (i == 1 && x[0] <= 0) n.note = "log of " + std::to_string(x[0]) + " (op log)";
    return n;
  };
  return p;
}

TEST(ValueSolver, NonFiniteResidualIsAnErrorNamingIt) {
  {
    Analytic p = logProblem();
    std::vector<double> x = {-1};
    auto res = solve(p, x, with(Method::LevenbergMarquardt));
    ASSERT_FALSE(res);
    EXPECT_EQ(res.error().message, "residual 1 is NaN: log of -1.000000 (op log)");
  }
  for (Method m : {Method::LevenbergMarquardt, Method::GaussNewton, Method::Lbfgs}) {
    // Reached during the solve: an error, not a silent divergence.
    Analytic p = logProblem();
    std::vector<double> x = {1};
    SolverOptions o = with(m);
    o.initialDamping = 1e-8;
    auto res = solve(p, x, o);
    ASSERT_FALSE(res) << "method " << int(m);
    // NaN (LM, GN: a full step to x < 0) or -Inf (L-BFGS: its first step lands on 0).
    const std::string& msg = res.error().message;
    EXPECT_TRUE(msg.starts_with("residual 1 is NaN: log of -") || msg == "residual 1 is -Inf: log of 0.000000 (op log)")
        << msg;
  }
  {
    // An infinite Jacobian entry: d sqrt(x)/dx at 0.
    Analytic p(1, 1, [](auto x, auto r, SparseRows* J) {
      r[0] = std::sqrt(x[0]) - 2;
      row(J, {{0, 0.5 / std::sqrt(x[0])}});
    });
    std::vector<double> x = {0};
    auto res = solve(p, x, with(Method::GaussNewton));
    ASSERT_FALSE(res);
    EXPECT_EQ(res.error().message, "∂(residual 0)/∂(parameter 0) is +Inf");
  }
  {
    // The LM option that rejects such steps instead converges to 0.001.
    Analytic p = logProblem();
    std::vector<double> x = {1};
    SolverOptions o = with(Method::LevenbergMarquardt);
    o.initialDamping = 1e-8;
    o.rejectNonFiniteSteps = true;
    auto res = solve(p, x, o);
    ASSERT_TRUE(res) << res.error().str();
    EXPECT_TRUE(res->converged);
    EXPECT_NEAR(x[0], 0.001, 1e-4);
  }
}

TEST(ValueSolver, MalformedJacobianIsAnError) {
  Analytic p(2, 1, [](auto x, auto r, SparseRows* J) {
    r[0] = x[0];
    row(J, {{0, 1.0}, {2, 1.0}});
  });
  std::vector<double> x = {1, 1};
  auto res = solve(p, x, with(Method::GaussNewton));
  ASSERT_FALSE(res);
  EXPECT_EQ(res.error().message, "the Jacobian of residual 0 names parameter 2 of 2");
}

TEST(ValueSolver, ConvergenceReasons) {
  {
    Analytic p = linear();
    std::vector<double> x = {0, 0};
    auto res = solve(p, x, with(Method::GaussNewton));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->reason, StopReason::GradientTolerance);
    EXPECT_LE(res->gradientNorm, 1e-10);
  }
  {
    // With the gradient and cost tests off, the steps shrink below the step tolerance.
    Analytic p = rosenbrock();
    std::vector<double> x = {-1.2, 1};
    SolverOptions o = with(Method::LevenbergMarquardt);
    o.gradientTolerance = 0;
    o.costChangeTolerance = 0;
    auto res = solve(p, x, o);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->reason, StopReason::StepTolerance);
    EXPECT_TRUE(res->converged);
    EXPECT_NEAR(x[0], 1, 1e-8);
  }
  {
    // Inconsistent data (x − 1, x − 3): the cost stops at 2 and stops changing.
    Analytic p(1, 2, [](auto x, auto r, SparseRows* J) {
      r[0] = x[0] - 1, r[1] = x[0] - 3;
      row(J, {{0, 1.0}});
      row(J, {{0, 1.0}});
    });
    std::vector<double> x = {0};
    auto res = solve(p, x, with(Method::LevenbergMarquardt));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->reason, StopReason::CostChangeTolerance);
    EXPECT_TRUE(res->converged);
    EXPECT_NEAR(res->cost, 1, 1e-6);
    EXPECT_NEAR(x[0], 2, 1e-3);
  }
  {
    Analytic p = rosenbrock();
    std::vector<double> x = {-1.2, 1};
    SolverOptions o = with(Method::LevenbergMarquardt);
    o.maxIterations = 2;
    auto res = solve(p, x, o);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->reason, StopReason::MaxIterations);
    EXPECT_FALSE(res->converged);
    EXPECT_EQ(res->iterations, 2);
  }
  {
    // One residual, two parameters: JᵀJ is singular and undamped Gauss–Newton
    // with Cholesky cannot step.
    Analytic p(2, 1, [](auto x, auto r, SparseRows* J) {
      r[0] = x[0] + x[1] - 2;
      row(J, {{0, 1.0}, {1, 1.0}});
    });
    std::vector<double> x = {0, 0};
    auto res = solve(p, x, with(Method::GaussNewton));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->reason, StopReason::LinearSolverFailed);
    EXPECT_FALSE(res->converged);
    // LM damps it and finds a solution on the line x + y = 2.
    std::vector<double> y = {0, 0};
    auto lm = solve(p, y, with(Method::LevenbergMarquardt));
    ASSERT_TRUE(lm);
    EXPECT_TRUE(lm->converged);
    EXPECT_NEAR(y[0] + y[1], 2, 1e-6);
  }
  EXPECT_STREQ(stopReasonName(StopReason::CostChangeTolerance), "cost change tolerance");
  EXPECT_STREQ(stopReasonName(StopReason::MaxIterations), "max iterations");
}

TEST(ValueSolver, ProgressCallbackPerIteration) {
  Analytic p = rosenbrock();
  std::vector<double> x = {-1.2, 1};
  std::vector<IterationInfo> seen;
  SolverOptions o = with(Method::LevenbergMarquardt);
  o.progress = [&](const IterationInfo& it) { seen.push_back(it); };
  auto res = solve(p, x, o);
  ASSERT_TRUE(res);
  ASSERT_EQ(seen.size(), size_t(res->iterations));
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].iteration, int(i) + 1);
    EXPECT_GT(seen[i].damping, 0);
    EXPECT_TRUE(std::isfinite(seen[i].gradientNorm));
    if (i) {
      EXPECT_GE(seen[i].seconds, seen[i - 1].seconds);
      EXPECT_LE(seen[i].cost, seen[i - 1].cost);  // LM never takes a step up
    }
  }
  EXPECT_EQ(seen.back().cost, res->cost);
  IterationInfo it{3, 0.0125, 0.0041, 1e-4, 0.5, true, 0, 0.012};
  EXPECT_EQ(formatProgress(it), "iter 3: cost 1.250000e-02 |g| 4.100e-03 damping 1.000e-04 time 0.012s");
  it.accepted = false;
  EXPECT_EQ(formatProgress(it), "iter 3: cost 1.250000e-02 |g| 4.100e-03 damping 1.000e-04 time 0.012s (rejected)");
}

TEST(ValueSolver, JacobianCheckAgainstFiniteDifferences) {
  for (Analytic p : {rosenbrock(), powell(), expFit(), chain(50)}) {
    std::vector<double> x(p.numParams());
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.3 + 0.1 * double(i % 7);
    auto c = checkJacobian(p, x);
    ASSERT_TRUE(c) << c.error().str();
    EXPECT_LT(c->maxRelError, 1e-6);
  }
  // A wrong entry (∂r1/∂b of the exponential fit, sign flipped at row 7) is found.
  Analytic bad(3, 41, [](auto x, auto r, SparseRows* J) {
    for (size_t i = 0; i < 41; ++i) {
      double t = 0.1 * double(i), e = std::exp(x[1] * t);
      r[i] = x[0] * e + x[2];
      row(J, {{0, e}, {1, (i == 7 ? -1 : 1) * x[0] * t * e}, {2, 1.0}});
    }
  });
  std::vector<double> x = {2, -0.7, 0.5};
  auto c = checkJacobian(bad, x);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->worstRow, 7u);
  EXPECT_EQ(c->worstCol, 1u);
  EXPECT_NEAR(c->maxAbsError, 2 * 2 * 0.7 * std::exp(-0.7 * 0.7), 1e-6);
}

}  // namespace
}  // namespace eph::value
