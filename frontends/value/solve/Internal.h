// What the solvers share and nothing outside frontends/value/solve needs:
// checked evaluation (non-finite values and malformed Jacobians become
// errors naming the residual), norms, the clock and the Cholesky back end.
#pragma once

#include <chrono>
#include <cmath>
#include <memory>
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

// Where Gauss–Newton and Levenberg–Marquardt start: r and J at x, g = Jᵀr,
// ½‖r‖² and ‖g‖∞; counts the evaluation in res and sets its initial cost.
struct LeastSquaresPoint {
  std::vector<double> r, g;
  SparseRows J;
  double cost = 0, gnorm = 0;
};
Status firstPoint(LeastSquaresProblem& p, std::span<const double> x, LeastSquaresPoint& at, SolveResult& res);

// Levenberg–Marquardt (damped) and Gauss–Newton on a device-resident
// problem with the normal equations solved by DevicePcgOps (DeviceSolve.cpp).
Expected<SolveResult> solveOnDevice(DeviceProblem& p, std::span<double> x, const SolverOptions& o, bool damped);

}  // namespace eph::value::detail
