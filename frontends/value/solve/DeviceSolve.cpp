// Levenberg–Marquardt and Gauss–Newton on a device-resident problem
// (DeviceProblem.h) with the normal equations solved by PCG on the device
// (DevicePcgOps): the same iteration as LevenbergMarquardt.cpp and
// GaussNewton.cpp, step for step, with every vector in device buffers. x goes
// up once and comes back once; per iteration the host sees only scalars (the
// PCG dot products, ½‖r‖², ‖g‖∞, ‖h‖∞, ‖x‖∞ and the predicted decrease).
#include <algorithm>
#include <cmath>

#include "frontends/value/solve/DeviceProblem.h"
#include "frontends/value/solve/Internal.h"

namespace eph::value::detail {

Expected<SolveResult> solveOnDevice(DeviceProblem& p, std::span<double> xHost, const SolverOptions& o, bool damped) {
  Clock clock;
  DeviceLinalg& la = p.linalg();
  const size_t n = p.numParams(), m = p.numResiduals();
  SolveResult res;
  // Buffers: x, the trial x, r, the trial r, g = Jᵀr, diag(JᵀJ), the damping, J·h + r.
  uint64_t x, xNew, r, rNew, g, D, damp, Jh;
  struct Owned {
    DeviceLinalg& la;
    std::vector<uint64_t> bufs;
    ~Owned() {
      for (uint64_t b : bufs) la.release(b);
    }
  } owned{la, {}};
  for (auto [h, len] : {std::pair{&x, n}, {&xNew, n}, {&r, m}, {&rNew, m}, {&g, n}, {&D, n}, {&damp, n}, {&Jh, m}}) {
    auto got = la.alloc(len);
    if (!got) return got.error();
    owned.bufs.push_back(*h = *got);
  }
  auto J = p.newJacobian();
  if (!J) return J.error();
  auto Jnew = p.newJacobian();
  if (!Jnew) return Jnew.error();
  owned.bufs.push_back(J->vals), owned.bufs.push_back(Jnew->vals);
  auto ops = DevicePcgOps::create(la, *J, damp);
  if (!ops) return ops.error();
  auto scalar = [](Expected<double> v, double& out) -> Status {
    if (!v) return v.error();
    out = *v;
    return Status::ok();
  };
#define EPH_TRY(expr)              \
  do {                             \
    if (Status s_ = (expr); !s_) return s_.error(); \
  } while (0)

  EPH_TRY(la.upload(x, xHost));
  EPH_TRY(p.evaluateOn(x, r, &*J));
  double cost = 0, gnorm = 0;
  EPH_TRY(p.checkedCost(x, r, &*J, cost));
  res.evaluations = 1;
  res.initialCost = cost;
  EPH_TRY(la.multiplyJt(*J, r, g));
  EPH_TRY(scalar(la.maxAbs(g, n), gnorm));
  auto finish = [&](StopReason why) -> Expected<SolveResult> {
    if (Status s = la.download(x, xHost); !s) return s.error();
    return finished(res, why, cost, gnorm, clock);
  };
  if (gnorm <= o.gradientTolerance) return finish(StopReason::GradientTolerance);

  DevicePcgOps& pcgOps = **ops;
  const uint64_t h = pcgOps.buffer(PcgOps::X);
  double lambda = o.initialDamping, nu = 2;
  for (int iter = 1; iter <= o.maxIterations; ++iter) {
    res.iterations = iter;
    // (JᵀJ + diag(damp)) h = −g.
    if (damped) {
      EPH_TRY(la.columnSquares(*J, D));
      EPH_TRY(la.clampScale(D, lambda, o.minDiagonal, o.maxDiagonal, damp, n));
    } else {
      EPH_TRY(la.fill(damp, 0.0, n));
    }
    EPH_TRY(pcgOps.setDamping(damp));
    EPH_TRY(la.scale(-1.0, g, pcgOps.buffer(PcgOps::B), n));
    PcgResult pr = pcg(pcgOps, o.pcgMaxIterations, o.pcgTolerance);
    EPH_TRY(pcgOps.status());
    int linearIterations = pr.iterations;
    bool solved = pr.ok || pr.iterations > 0;
    double stepNorm = 0, xNorm = 0;
    if (solved) {
      EPH_TRY(scalar(la.maxAbs(h, n), stepNorm));
      EPH_TRY(scalar(la.maxAbs(x, n), xNorm));
    }
    bool tiny = solved && stepNorm <= o.stepTolerance * (xNorm + o.stepTolerance);

    if (!damped) {  // Gauss–Newton: every step taken
      if (!solved) return finish(StopReason::LinearSolverFailed);
      EPH_TRY(la.axpy(1.0, h, x, n));
      EPH_TRY(p.evaluateOn(x, r, &*J));
      ++res.evaluations;
      double oldCost = cost;
      EPH_TRY(p.checkedCost(x, r, &*J, cost));
      EPH_TRY(la.multiplyJt(*J, r, g));
      EPH_TRY(scalar(la.maxAbs(g, n), gnorm));
      report(o, clock, {iter, cost, gnorm, 0, stepNorm, true, linearIterations});
      if (gnorm <= o.gradientTolerance) return finish(StopReason::GradientTolerance);
      if (tiny) return finish(StopReason::StepTolerance);
      if (std::abs(oldCost - cost) <= o.costChangeTolerance * oldCost) return finish(StopReason::CostChangeTolerance);
      continue;
    }

    bool accepted = false;
    double rho = -1, newCost = cost;
    if (solved) {
      EPH_TRY(la.copy(x, xNew, n));
      EPH_TRY(la.axpy(1.0, h, xNew, n));
      EPH_TRY(p.evaluateOn(xNew, rNew, &*Jnew));
      ++res.evaluations;
      double rr = 0;
      EPH_TRY(scalar(la.dot(rNew, rNew, m), rr));
      bool finite = std::isfinite(rr);
      if (!finite && o.rejectNonFiniteSteps) {  // finite only from overflow: still judged below
        std::vector<double> rh;
        auto i = p.firstNonFiniteResidual(rNew, rh);
        if (!i) return i.error();
        finite = *i == m;
      }
      if (finite || !o.rejectNonFiniteSteps) {
        EPH_TRY(p.checkedCost(xNew, rNew, &*Jnew, newCost));
        // Predicted decrease ½‖r‖² − ½‖r + J·h‖².
        EPH_TRY(la.multiplyJ(*J, h, Jh));
        EPH_TRY(la.axpy(1.0, r, Jh, m));
        double model = 0;
        EPH_TRY(scalar(la.dot(Jh, Jh, m), model));
        double predicted = cost - 0.5 * model, actual = cost - newCost;
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
    std::swap(x, xNew);
    std::swap(r, rNew);
    std::swap(J->vals, Jnew->vals);
    cost = newCost;
    EPH_TRY(la.multiplyJt(*J, r, g));
    EPH_TRY(scalar(la.maxAbs(g, n), gnorm));
    double t = 2 * rho - 1;
    lambda = std::max(lambda * std::max(1.0 / 3, 1 - t * t * t), 1e-32);
    nu = 2;
    report(o, clock, {iter, cost, gnorm, lambda, stepNorm, true, linearIterations});
    if (gnorm <= o.gradientTolerance) return finish(StopReason::GradientTolerance);
    if (tiny) return finish(StopReason::StepTolerance);
    if (oldCost - cost <= o.costChangeTolerance * oldCost) return finish(StopReason::CostChangeTolerance);
  }
  return finish(StopReason::MaxIterations);
#undef EPH_TRY
}

}  // namespace eph::value::detail
