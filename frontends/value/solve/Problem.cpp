// The pieces every solver shares: SparseRows arithmetic, checked evaluation
// (non-finite values become errors naming the residual), the energy adapters,
// the normal-equation dispatcher, the finite-difference Jacobian check and
// the words for stop reasons and progress lines.
#include <algorithm>
#include <cstdio>

#include "frontends/value/solve/Internal.h"
#include "frontends/value/solve/Pcg.h"

namespace eph::value {

using namespace detail;

void SparseRows::reset(size_t columns) {
  numCols = columns;
  rowStart.assign(1, 0);
  cols.clear();
  vals.clear();
}

void SparseRows::multiply(std::span<const double> v, std::span<double> out) const {
  for (size_t i = 0; i < rows(); ++i) {
    double s = 0;
    for (size_t k = rowStart[i]; k < rowStart[i + 1]; ++k) s += vals[k] * v[cols[k]];
    out[i] = s;
  }
}

void SparseRows::multiplyTransposed(std::span<const double> u, std::span<double> out) const {
  std::fill(out.begin(), out.end(), 0.0);
  for (size_t i = 0; i < rows(); ++i)
    for (size_t k = rowStart[i]; k < rowStart[i + 1]; ++k) out[cols[k]] += vals[k] * u[i];
}

void SparseRows::columnSquares(std::span<double> out) const {
  std::fill(out.begin(), out.end(), 0.0);
  for (size_t k = 0; k < cols.size(); ++k) out[cols[k]] += vals[k] * vals[k];
}

namespace detail {

static const char* kindOf(double v) { return std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf"; }

static std::string withNote(std::string msg, const ResidualNote& note) {
  if (!note.note.empty()) msg += ": " + note.note;
  return msg;
}

size_t firstNonFinite(std::span<const double> r) {
  for (size_t i = 0; i < r.size(); ++i)
    if (!std::isfinite(r[i])) return i;
  return r.size();
}

Error nonFiniteResidual(LeastSquaresProblem& p, std::span<const double> x, size_t i, double value) {
  ResidualNote note = p.explainResidual(i, x);
  return makeError(note.loc, withNote("residual " + std::to_string(i) + " is " + kindOf(value), note));
}

Status evaluateChecked(LeastSquaresProblem& p, std::span<const double> x, std::span<double> r, SparseRows* J) {
  if (Status s = p.evaluate(x, r, J); !s) return s;
  return checkEvaluation(p, x, r, J);
}

Status checkEvaluation(LeastSquaresProblem& p, std::span<const double> x, std::span<const double> r,
                       const SparseRows* J) {
  if (size_t i = firstNonFinite(r); i < r.size()) return nonFiniteResidual(p, x, i, r[i]);
  if (!J) return Status::ok();
  if (J->rows() != r.size() || J->numCols != x.size())
    return makeError({}, "the Jacobian has " + std::to_string(J->rows()) + " rows and " +
                             std::to_string(J->numCols) + " columns, expected " + std::to_string(r.size()) +
                             " and " + std::to_string(x.size()));
  std::vector<size_t> lastRow(x.size(), SIZE_MAX);
  for (size_t i = 0; i < J->rows(); ++i)
    for (size_t k = J->rowStart[i]; k < J->rowStart[i + 1]; ++k) {
      uint32_t c = J->cols[k];
      auto where = [&] { return "the Jacobian of residual " + std::to_string(i); };
      if (c >= x.size())
        return makeError({}, where() + " names parameter " + std::to_string(c) + " of " + std::to_string(x.size()));
      if (lastRow[c] == i) return makeError({}, where() + " names parameter " + std::to_string(c) + " twice");
      lastRow[c] = i;
      if (!std::isfinite(J->vals[k])) {
        ResidualNote note = p.explainResidual(i, x);
        return makeError(note.loc, withNote("∂(residual " + std::to_string(i) + ")/∂(parameter " +
                                                std::to_string(c) + ") is " + kindOf(J->vals[k]),
                                            note));
      }
    }
  return Status::ok();
}

double halfSquaredNorm(std::span<const double> r) {
  double s = 0;
  for (double v : r) s += v * v;
  return 0.5 * s;
}

double infNorm(std::span<const double> v) {
  double m = 0;
  for (double e : v) m = std::max(m, std::abs(e));
  return m;
}

double norm2(std::span<const double> v) { return std::sqrt(2 * halfSquaredNorm(v)); }

void report(const SolverOptions& o, const Clock& clock, IterationInfo it) {
  if (!o.progress) return;
  it.seconds = clock.seconds();
  o.progress(it);
}

SolveResult finished(SolveResult res, StopReason why, double cost, double gradientNorm, const Clock& clock) {
  res.reason = why;
  res.converged = isConverged(why);
  res.cost = cost;
  res.gradientNorm = gradientNorm;
  res.seconds = clock.seconds();
  return res;
}

std::optional<StopReason> stopAfterStep(const SolverOptions& o, double gnorm, bool tiny, double decrease,
                                        double oldCost) {
  if (gnorm <= o.gradientTolerance) return StopReason::GradientTolerance;
  if (tiny) return StopReason::StepTolerance;
  if (decrease <= o.costChangeTolerance * oldCost) return StopReason::CostChangeTolerance;
  return std::nullopt;
}

std::optional<StopReason> LmDamping::update(const SolverOptions& o, const Clock& clock, IterationInfo it, bool tiny,
                                            double rho, double oldCost) {
  if (!it.accepted) {
    if (!tiny) {
      lambda = std::min(lambda * nu, 1e32);
      nu *= 2;
    }
    it.damping = lambda;
    report(o, clock, it);
    if (tiny) return StopReason::StepTolerance;
    return std::nullopt;
  }
  double t = 2 * rho - 1;
  lambda = std::max(lambda * std::max(1.0 / 3, 1 - t * t * t), 1e-32);
  nu = 2;
  it.damping = lambda;
  report(o, clock, it);
  return stopAfterStep(o, it.gradientNorm, tiny, oldCost - it.cost, oldCost);
}

Status firstPoint(LeastSquaresProblem& p, std::span<const double> x, LeastSquaresPoint& at) {
  at.r.assign(p.numResiduals(), 0.0);
  at.g.assign(p.numParams(), 0.0);
  if (Status s = evaluateChecked(p, x, at.r, &at.J); !s) return s;
  at.res.evaluations = 1;
  at.cost = at.res.initialCost = halfSquaredNorm(at.r);
  at.J.multiplyTransposed(at.r, at.g);
  at.gnorm = infNorm(at.g);
  return Status::ok();
}

}  // namespace detail

Expected<double> SumOfResiduals::evaluate(std::span<const double> x, std::span<double> grad) {
  r_.resize(p_.numResiduals());
  if (Status s = evaluateChecked(p_, x, r_, grad.empty() ? nullptr : &J_); !s) return s.error();
  double f = 0;
  for (double v : r_) f += v;
  if (!grad.empty()) {
    ones_.assign(r_.size(), 1.0);
    J_.multiplyTransposed(ones_, grad);
  }
  return f;
}

std::string SumOfResiduals::explainEnergy(std::span<const double> x) { return "the sum of the residuals"; }

Expected<double> HalfSquaredNorm::evaluate(std::span<const double> x, std::span<double> grad) {
  r_.resize(p_.numResiduals());
  if (Status s = evaluateChecked(p_, x, r_, grad.empty() ? nullptr : &J_); !s) return s.error();
  if (!grad.empty()) J_.multiplyTransposed(r_, grad);
  return halfSquaredNorm(r_);
}

std::string HalfSquaredNorm::explainEnergy(std::span<const double> x) { return "½ Σ r_i²"; }

bool solveNormalEquations(const SparseRows& J, std::span<const double> g, std::span<const double> damping,
                          LinearSolver solver, const SolverOptions& o, std::span<double> h, int* iterations) {
  NormalSolver once;
  return once.solve(J, g, damping, solver, o, h, iterations);
}

bool detail::NormalSolver::solve(const SparseRows& J, std::span<const double> g, std::span<const double> damping,
                                 LinearSolver solver, const SolverOptions& o, std::span<double> h, int* iterations) {
  if (iterations) *iterations = 0;
  if (solver == LinearSolver::SparseCholesky) return cholesky_.solve(J, g, damping, h);
  HostPcgOps ops(J, damping);
  auto& b = ops.vec(PcgOps::B);
  for (size_t i = 0; i < g.size(); ++i) b[i] = -g[i];
  PcgResult res = pcg(ops, o.pcgMaxIterations, o.pcgTolerance);
  if (iterations) *iterations = res.iterations;
  auto& x = ops.vec(PcgOps::X);
  std::copy(x.begin(), x.end(), h.begin());
  // A breakdown at the first iteration leaves no step; a partial solve is
  // still a descent direction, which the outer solver judges by its cost.
  return res.ok || res.iterations > 0;
}

Expected<JacobianCheck> checkJacobian(LeastSquaresProblem& p, std::span<const double> x0, double step) {
  size_t n = p.numParams(), m = p.numResiduals();
  std::vector<double> x(x0.begin(), x0.end()), r(m), rp(m), rm(m);
  SparseRows J;
  if (Status s = evaluateChecked(p, x, r, &J); !s) return s.error();
  // Dense analytic Jacobian, column by column against central differences.
  std::vector<double> dense(m * n, 0.0);
  for (size_t i = 0; i < m; ++i)
    for (size_t k = J.rowStart[i]; k < J.rowStart[i + 1]; ++k) dense[i * n + J.cols[k]] = J.vals[k];
  JacobianCheck out;
  for (size_t c = 0; c < n; ++c) {
    double hstep = step * std::max(1.0, std::abs(x0[c]));
    x[c] = x0[c] + hstep;
    if (Status s = evaluateChecked(p, x, rp, nullptr); !s) return s.error();
    x[c] = x0[c] - hstep;
    if (Status s = evaluateChecked(p, x, rm, nullptr); !s) return s.error();
    x[c] = x0[c];
    for (size_t i = 0; i < m; ++i) {
      double fd = (rp[i] - rm[i]) / (2 * hstep);
      double err = std::abs(dense[i * n + c] - fd);
      double rel = err / std::max(1.0, std::abs(fd));
      if (rel > out.maxRelError) out.worstRow = i, out.worstCol = c;
      out.maxAbsError = std::max(out.maxAbsError, err);
      out.maxRelError = std::max(out.maxRelError, rel);
    }
  }
  return out;
}

const char* stopReasonName(StopReason r) {
  switch (r) {
    case StopReason::GradientTolerance: return "gradient tolerance";
    case StopReason::StepTolerance: return "step tolerance";
    case StopReason::CostChangeTolerance: return "cost change tolerance";
    case StopReason::MaxIterations: return "max iterations";
    case StopReason::LinearSolverFailed: return "linear solver failed";
    case StopReason::LineSearchFailed: return "line search failed";
  }
  return "?";
}

bool isConverged(StopReason r) {
  return r == StopReason::GradientTolerance || r == StopReason::StepTolerance ||
         r == StopReason::CostChangeTolerance;
}

std::string formatProgress(const IterationInfo& it) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "iter %d: cost %.6e |g| %.3e damping %.3e time %.3fs%s", it.iteration, it.cost,
                it.gradientNorm, it.damping, it.seconds, it.accepted ? "" : " (rejected)");
  return buf;
}

Expected<SolveResult> solve(LeastSquaresProblem& p, std::span<double> x, const SolverOptions& o) {
  switch (o.method) {
    case Method::LevenbergMarquardt: return levenbergMarquardt(p, x, o);
    case Method::GaussNewton: return gaussNewton(p, x, o);
    case Method::Lbfgs: {
      if (DeviceProblem* d = p.deviceResident()) return detail::lbfgsOnDevice(*d, x, o);
      SumOfResiduals energy(p);
      return lbfgs(energy, x, o);
    }
  }
  return makeError({}, "unknown solver method");
}

}  // namespace eph::value
