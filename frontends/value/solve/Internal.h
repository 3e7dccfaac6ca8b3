// What the solvers share and nothing outside frontends/value/solve needs:
// checked evaluation (non-finite values and malformed Jacobians become
// errors naming the residual), norms, the clock and the Cholesky back end.
#pragma once

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "frontends/value/solve/Solver.h"

namespace eph::value::detail {

// r(x) (and J when not null) with every value checked: a NaN or infinite
// residual or Jacobian entry is an error naming the residual (and what the
// problem can say about it), a row count or column out of range is an error
// naming the problem's mistake.
Status evaluateChecked(LeastSquaresProblem& p, std::span<const double> x, std::span<double> r, SparseRows* J);
// The checks alone, on what p.evaluate returned.
Status checkEvaluation(LeastSquaresProblem& p, std::span<const double> x, std::span<const double> r,
                       const SparseRows* J);
// The index of the first non-finite residual, or r.size().
size_t firstNonFinite(std::span<const double> r);
// "residual 3 is NaN[ at loc][: note]" for the first non-finite residual.
Error nonFiniteResidual(LeastSquaresProblem& p, std::span<const double> x, size_t i, double value);

double halfSquaredNorm(std::span<const double> r);
double infNorm(std::span<const double> v);
double norm2(std::span<const double> v);

// (JᵀJ + diag(damping)) h = −g by Eigen's SimplicialLDLT (SparseCholesky.cpp).
// The symbolic analysis (AMD ordering, elimination tree) depends only on J's
// sparsity pattern, so it is kept and redone only when the pattern changes.
class CholeskySolver {
 public:
  CholeskySolver();
  ~CholeskySolver();
  bool solve(const SparseRows& J, std::span<const double> g, std::span<const double> damping, std::span<double> h);
  int analyses() const { return analyses_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int analyses_ = 0;
};

// solveNormalEquations with the Cholesky analysis kept across calls (one per solve).
class NormalSolver {
 public:
  bool solve(const SparseRows& J, std::span<const double> g, std::span<const double> damping, LinearSolver solver,
             const SolverOptions& o, std::span<double> h, int* iterations);

 private:
  CholeskySolver cholesky_;
};

// Calls o.progress (when set) with `it`, timed by `clock`.
class Clock;
void report(const SolverOptions& o, const Clock& clock, IterationInfo it);

class Clock {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Ends a solve: the reason, whether it converged, the final cost and
// gradient norm and the time (Gauss–Newton, Levenberg–Marquardt, L-BFGS).
SolveResult finished(SolveResult res, StopReason why, double cost, double gradientNorm, const Clock& clock);

// Where Gauss–Newton and Levenberg–Marquardt are: r and J at x, g = Jᵀr,
// ½‖r‖², ‖g‖∞, the result so far and the clock (started with the point).
struct LeastSquaresPoint {
  std::vector<double> r, g;
  SparseRows J;
  double cost = 0, gnorm = 0;
  SolveResult res;
  Clock clock;
  // Ends the solve here.
  SolveResult finish(StopReason why) const { return finished(res, why, cost, gnorm, clock); }
};
// The first point, at x; counts the evaluation and sets the initial cost.
Status firstPoint(LeastSquaresProblem& p, std::span<const double> x, LeastSquaresPoint& at);

// What the host loops (GaussNewton.cpp, LevenbergMarquardt.cpp) and the
// device loop (DeviceSolve.cpp) judge alike.
//
// A step is tiny when ‖h‖∞ ≤ stepTolerance·(‖x‖∞ + stepTolerance): the solve
// ends after it is tried (and taken when it helps).
inline bool tinyStep(const SolverOptions& o, double stepNorm, double xNorm) {
  return stepNorm <= o.stepTolerance * (xNorm + o.stepTolerance);
}
// The gain ratio ρ: the actual decrease of ½‖r‖² over the one the linear
// model predicts; with no predicted decrease, 1 when the cost fell, else −1.
inline double gainRatio(double actual, double predicted) {
  return predicted > 0 ? actual / predicted : (actual > 0 ? 1 : -1);
}
// The stop tests after a step is taken, in order: ‖g‖∞, a tiny step, then
// the cost's `decrease` against oldCost (Gauss–Newton passes |Δcost|).
// Nothing: go on.
std::optional<StopReason> stopAfterStep(const SolverOptions& o, double gnorm, bool tiny, double decrease,
                                        double oldCost);

// Levenberg–Marquardt's damping λ and its growth factor ν.
struct LmDamping {
  double lambda, nu = 2;
  explicit LmDamping(double initial) : lambda(initial) {}
  // The end of an iteration, once its trial step is judged: `it` holds the
  // cost and ‖g‖∞ at the current point (the new one when it.accepted). A
  // rejected step raises λ by ν and doubles ν (unless tiny: the solve ends);
  // a taken one lowers λ by max(1/3, 1 − (2ρ − 1)³) and resets ν. Reports
  // `it` with the new λ, then says why the solve stops, if it does.
  std::optional<StopReason> update(const SolverOptions& o, const Clock& clock, IterationInfo it, bool tiny,
                                   double rho, double oldCost);
};

// Levenberg–Marquardt (damped) and Gauss–Newton on a device-resident
// problem with the normal equations solved by DevicePcgOps (DeviceSolve.cpp).
Expected<SolveResult> solveOnDevice(DeviceProblem& p, std::span<double> x, const SolverOptions& o, bool damped);

// The vectors L-BFGS works on (Lbfgs.cpp), named by number, each numParams
// long, and the energy: in host memory (lbfgs) or in device buffers
// (lbfgsOnDevice), so that one algorithm serves both.
class LbfgsSpace {
 public:
  virtual ~LbfgsSpace() = default;
  // Vectors 0 .. count-1; vector 0 holds the starting point.
  virtual Status make(size_t count) = 0;
  // f(x) and, into vector g, its gradient (both may be non-finite: the
  // algorithm reports that with `what()`'s words).
  virtual Expected<double> energy(size_t x, size_t g) = 0;
  virtual std::string what() = 0;
  virtual Expected<double> dot(size_t a, size_t b) = 0;
  virtual Expected<double> maxAbs(size_t a) = 0;  // NaN when an entry is
  virtual Status axpy(double a, size_t x, size_t y) = 0;   // y ← a·x + y
  virtual Status scale(double a, size_t x, size_t y) = 0;  // y ← a·x
};
// L-BFGS in `v`: the result, and in `x` the vector that holds the solution.
Expected<SolveResult> lbfgsIn(LbfgsSpace& v, const SolverOptions& o, size_t& x);
// L-BFGS on a device-resident problem, minimising Σ r_i (SumOfResiduals)
// with every vector in device buffers (DeviceSolve.cpp).
Expected<SolveResult> lbfgsOnDevice(DeviceProblem& p, std::span<double> x, const SolverOptions& o);

}  // namespace eph::value::detail
