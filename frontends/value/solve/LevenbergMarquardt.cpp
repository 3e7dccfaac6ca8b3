// Levenberg–Marquardt with Marquardt's diagonal scaling and a gain-ratio
// damping update (Madsen, Nielsen & Tingleff, "Methods for non-linear least
// squares problems", 2004, Algorithm 3.16; the scaling as in Ceres Solver).
//
// Each iteration solves (JᵀJ + λD) h = −g, g = Jᵀr, D = clamp(diag(JᵀJ)),
// and compares the actual decrease of ½‖r‖² with the decrease the linear
// model predicts, ½‖r‖² − ½‖r + J·h‖². Their ratio ρ decides: a step with
// ρ > minRelativeDecrease is taken and λ shrinks by max(1/3, 1 − (2ρ − 1)³);
// otherwise λ grows by ν, and ν doubles at each rejection in a row.
#include <algorithm>

#include "frontends/value/solve/Internal.h"

namespace eph::value {

using namespace detail;

Expected<SolveResult> levenbergMarquardt(LeastSquaresProblem& p, std::span<double> x, const SolverOptions& o) {
  if (o.linearSolver == LinearSolver::Pcg)
    if (DeviceProblem* d = p.deviceResident()) return solveOnDevice(*d, x, o, true);
  Clock clock;
  const size_t n = p.numParams(), m = p.numResiduals();
  std::vector<double> rNew(m), Jh(m), h(n), D(n), damp(n), xNew(n);
  SparseRows Jnew;
  NormalSolver normal;
  SolveResult res;
  LeastSquaresPoint at;
  if (Status s = firstPoint(p, x, at, res); !s) return s.error();
  std::vector<double> &r = at.r, &g = at.g;
  SparseRows& J = at.J;
  double &cost = at.cost, &gnorm = at.gnorm;
  auto finish = [&](StopReason why) { return finished(res, why, cost, gnorm, clock); };
  if (gnorm <= o.gradientTolerance) return finish(StopReason::GradientTolerance);

  double lambda = o.initialDamping, nu = 2;
  for (int iter = 1; iter <= o.maxIterations; ++iter) {
    res.iterations = iter;
    J.columnSquares(D);
    for (size_t i = 0; i < n; ++i) damp[i] = lambda * std::clamp(D[i], o.minDiagonal, o.maxDiagonal);
    int linearIterations = 0;
    bool solved = normal.solve(J, g, damp, o.linearSolver, o, h, &linearIterations);
    double stepNorm = solved ? infNorm(h) : 0;
    // A step this small ends the solve, after it is tried (and taken when it helps).
    bool tiny = solved && stepNorm <= o.stepTolerance * (infNorm(x) + o.stepTolerance);

    bool accepted = false;
    double rho = -1, newCost = cost;
    if (solved) {
      for (size_t i = 0; i < n; ++i) xNew[i] = x[i] + h[i];
      if (Status s = p.evaluate(xNew, rNew, &Jnew); !s) return s.error();
      ++res.evaluations;
      bool finite = firstNonFinite(rNew) == m;
      if (finite || !o.rejectNonFiniteSteps) {
        if (Status s = checkEvaluation(p, xNew, rNew, &Jnew); !s) return s.error();
        newCost = halfSquaredNorm(rNew);
        J.multiply(h, Jh);
        for (size_t i = 0; i < m; ++i) Jh[i] += r[i];
        double predicted = cost - halfSquaredNorm(Jh), actual = cost - newCost;
        rho = predicted > 0 ? actual / predicted : (actual > 0 ? 1 : -1);
        accepted = rho > o.minRelativeDecrease;
      }
    }

    if (!accepted) {
      if (tiny) {
        report(o, clock, {iter, cost, gnorm, lambda, stepNorm, false, linearIterations});
        return finish(StopReason::StepTolerance);
      }
      lambda = std::min(lambda * nu, 1e32);
      nu *= 2;
      report(o, clock, {iter, cost, gnorm, lambda, stepNorm, false, linearIterations});
      continue;
    }
    double oldCost = cost;
    std::copy(xNew.begin(), xNew.end(), x.begin());
    std::swap(r, rNew);
    std::swap(J, Jnew);
    cost = newCost;
    J.multiplyTransposed(r, g);
    gnorm = infNorm(g);
    double t = 2 * rho - 1;
    lambda = std::max(lambda * std::max(1.0 / 3, 1 - t * t * t), 1e-32);
    nu = 2;
    report(o, clock, {iter, cost, gnorm, lambda, stepNorm, true, linearIterations});
    if (gnorm <= o.gradientTolerance) return finish(StopReason::GradientTolerance);
    if (tiny) return finish(StopReason::StepTolerance);
    if (oldCost - cost <= o.costChangeTolerance * oldCost) return finish(StopReason::CostChangeTolerance);
  }
  return finish(StopReason::MaxIterations);
}

}  // namespace eph::value
