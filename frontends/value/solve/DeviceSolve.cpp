// Levenberg–Marquardt and Gauss–Newton on a device-resident problem
// (DeviceProblem.h) with the normal equations solved by PCG on the device
// (DevicePcgOps): the same iteration as LevenbergMarquardt.cpp and
// GaussNewton.cpp, step for step, with every vector in device buffers. x goes
// up once and comes back once; per iteration the host sees only scalars (the
// PCG dot products, ½‖r‖², ‖g‖∞, ‖h‖∞, ‖x‖∞ and the predicted decrease).
// And L-BFGS (Lbfgs.cpp's algorithm) over device buffers: per evaluation the
// host sees f, the line search's dot products and the norms.
#include <algorithm>
#include <cmath>
#include <optional>

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
  LmDamping damping(o.initialDamping);
  for (int iter = 1; iter <= o.maxIterations; ++iter) {
    res.iterations = iter;
    // (JᵀJ + diag(damp)) h = −g.
    if (damped) {
      EPH_TRY(la.columnSquares(*J, D));
      EPH_TRY(la.clampScale(D, damping.lambda, o.minDiagonal, o.maxDiagonal, damp, n));
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
    bool tiny = solved && tinyStep(o, stepNorm, xNorm);

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
      if (auto why = stopAfterStep(o, gnorm, tiny, std::abs(oldCost - cost), oldCost)) return finish(*why);
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
        rho = gainRatio(actual, predicted);
        accepted = rho > o.minRelativeDecrease;
      }
    }

    double oldCost = cost;
    if (accepted) {
      std::swap(x, xNew);
      std::swap(r, rNew);
      std::swap(J->vals, Jnew->vals);
      cost = newCost;
      EPH_TRY(la.multiplyJt(*J, r, g));
      EPH_TRY(scalar(la.maxAbs(g, n), gnorm));
    }
    if (auto why = damping.update(o, clock, {iter, cost, gnorm, 0, stepNorm, accepted, linearIterations}, tiny, rho,
                                  oldCost))
      return finish(*why);
  }
  return finish(StopReason::MaxIterations);
#undef EPH_TRY
}

}  // namespace eph::value::detail

namespace eph::value::detail {

namespace {

// L-BFGS's vectors in device buffers; the energy Σ r_i with gradient Jᵀ·1
// from the problem's kernels (r and J stay on the device too).
class DeviceSpace : public LbfgsSpace {
 public:
  DeviceSpace(DeviceProblem& p, std::span<const double> x0) : p_(p), la_(p.linalg()), x0_(x0) {}
  ~DeviceSpace() override {
    for (uint64_t b : v_) la_.release(b);
    for (uint64_t b : {r_, ones_}) if (b) la_.release(b);
    if (J_) la_.release(J_->vals);
  }
  uint64_t buffer(size_t k) const { return v_[k]; }
  Status make(size_t count) override {
    const size_t n = p_.numParams(), m = p_.numResiduals();
    for (size_t k = 0; k < count; ++k) {
      auto b = la_.alloc(n);
      if (!b) return b.error();
      v_.push_back(*b);
    }
    for (uint64_t* b : {&r_, &ones_}) {
      auto got = la_.alloc(m);
      if (!got) return got.error();
      *b = *got;
    }
    auto J = p_.newJacobian();
    if (!J) return J.error();
    J_ = *J;
    if (Status s = la_.fill(ones_, 1.0, m); !s) return s;
    return la_.upload(v_[0], x0_);
  }
  Expected<double> energy(size_t x, size_t g) override {
    double halfSquares;  // checkedCost names a non-finite residual or Jacobian entry
    if (Status s = p_.evaluateOn(v_[x], r_, &*J_); !s) return s.error();
    if (Status s = p_.checkedCost(v_[x], r_, &*J_, halfSquares); !s) return s.error();
    if (Status s = la_.multiplyJt(*J_, ones_, v_[g]); !s) return s.error();
    return la_.dot(r_, ones_, p_.numResiduals());
  }
  std::string what() override { return "the sum of the residuals"; }
  Expected<double> dot(size_t a, size_t b) override { return la_.dot(v_[a], v_[b], p_.numParams()); }
  Expected<double> maxAbs(size_t a) override { return la_.maxAbs(v_[a], p_.numParams()); }
  Status axpy(double a, size_t x, size_t y) override { return la_.axpy(a, v_[x], v_[y], p_.numParams()); }
  Status scale(double a, size_t x, size_t y) override { return la_.scale(a, v_[x], v_[y], p_.numParams()); }

 private:
  DeviceProblem& p_;
  DeviceLinalg& la_;
  std::span<const double> x0_;
  std::vector<uint64_t> v_;
  uint64_t r_ = 0, ones_ = 0;
  std::optional<DeviceJacobian> J_;
};

}  // namespace

Expected<SolveResult> lbfgsOnDevice(DeviceProblem& p, std::span<double> x, const SolverOptions& o) {
  DeviceSpace v(p, x);
  size_t at = 0;
  auto res = lbfgsIn(v, o, at);
  if (!res) return res;
  if (Status s = p.linalg().download(v.buffer(at), x); !s) return s.error();
  return res;
}

}  // namespace eph::value::detail
