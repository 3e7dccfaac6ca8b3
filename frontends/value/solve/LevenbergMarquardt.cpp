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
  LeastSquaresPoint at;  // starts the clock
  if (Status s = firstPoint(p, x, at); !s) return s.error();
  auto& [r, g, J, cost, gnorm, res, clock] = at;
  if (gnorm <= o.gradientTolerance) return at.finish(StopReason::GradientTolerance);
  const size_t n = p.numParams(), m = p.numResiduals();
  std::vector<double> rNew(m), Jh(m), h(n), D(n), damp(n), xNew(n);
  SparseRows Jnew;
  NormalSolver normal;

  LmDamping damping(o.initialDamping);
  for (int iter = 1; iter <= o.maxIterations; ++iter) {
    res.iterations = iter;
    J.columnSquares(D);
    for (size_t i = 0; i < n; ++i) damp[i] = damping.lambda * std::clamp(D[i], o.minDiagonal, o.maxDiagonal);
    int linearIterations = 0;
    bool solved = normal.solve(J, g, damp, o.linearSolver, o, h, &linearIterations);
    double stepNorm = solved ? infNorm(h) : 0;
    // A step this small ends the solve, after it is tried (and taken when it helps).
    bool tiny = solved && tinyStep(o, stepNorm, infNorm(x));

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
        rho = gainRatio(actual, predicted);
        accepted = rho > o.minRelativeDecrease;
      }
    }

    double oldCost = cost;
    if (accepted) {
      std::copy(xNew.begin(), xNew.end(), x.begin());
      std::swap(r, rNew);
      std::swap(J, Jnew);
      cost = newCost;
      J.multiplyTransposed(r, g);
      gnorm = infNorm(g);
    }
    if (auto why = damping.update(o, clock, {iter, cost, gnorm, 0, stepNorm, accepted, linearIterations}, tiny, rho,
                                  oldCost))
      return at.finish(*why);
  }
  return at.finish(StopReason::MaxIterations);
}

}  // namespace eph::value
