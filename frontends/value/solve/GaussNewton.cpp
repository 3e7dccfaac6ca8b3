// Gauss–Newton: x ← x + h with JᵀJ h = −Jᵀr, every step taken (no damping,
// no line search). Quadratic convergence near a zero-residual solution with
// J of full column rank; a singular JᵀJ stops it (LinearSolverFailed), where
// Levenberg–Marquardt would damp.
#include <cmath>

#include "frontends/value/solve/Internal.h"

namespace eph::value {

using namespace detail;

Expected<SolveResult> gaussNewton(LeastSquaresProblem& p, std::span<double> x, const SolverOptions& o) {
  if (o.linearSolver == LinearSolver::Pcg)
    if (DeviceProblem* d = p.deviceResident()) return solveOnDevice(*d, x, o, false);
  Clock clock;
  const size_t n = p.numParams();
  std::vector<double> h(n), zeros(n, 0.0);
  NormalSolver normal;
  SolveResult res;
  LeastSquaresPoint at;
  if (Status s = firstPoint(p, x, at, res); !s) return s.error();
  std::vector<double> &r = at.r, &g = at.g;
  SparseRows& J = at.J;
  double &cost = at.cost, &gnorm = at.gnorm;
  auto finish = [&](StopReason why) { return finished(res, why, cost, gnorm, clock); };
  if (gnorm <= o.gradientTolerance) return finish(StopReason::GradientTolerance);

  for (int iter = 1; iter <= o.maxIterations; ++iter) {
    res.iterations = iter;
    int linearIterations = 0;
    if (!normal.solve(J, g, zeros, o.linearSolver, o, h, &linearIterations))
      return finish(StopReason::LinearSolverFailed);
    double stepNorm = infNorm(h);
    bool tiny = stepNorm <= o.stepTolerance * (infNorm(x) + o.stepTolerance);
    for (size_t i = 0; i < n; ++i) x[i] += h[i];
    if (Status s = evaluateChecked(p, x, r, &J); !s) return s.error();
    ++res.evaluations;
    double oldCost = cost;
    cost = halfSquaredNorm(r);
    J.multiplyTransposed(r, g);
    gnorm = infNorm(g);
    report(o, clock, {iter, cost, gnorm, 0, stepNorm, true, linearIterations});
    if (gnorm <= o.gradientTolerance) return finish(StopReason::GradientTolerance);
    if (tiny) return finish(StopReason::StepTolerance);
    if (std::abs(oldCost - cost) <= o.costChangeTolerance * oldCost) return finish(StopReason::CostChangeTolerance);
  }
  return finish(StopReason::MaxIterations);
}

}  // namespace eph::value
