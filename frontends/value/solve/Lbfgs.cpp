// L-BFGS (Nocedal & Wright, "Numerical Optimization", 2nd ed.: the two-loop
// recursion, Algorithm 7.4, with H₀ = (sᵀy / yᵀy)·I) and a line search for
// the strong Wolfe conditions (Algorithms 3.5 and 3.6, the zoom step by cubic
// interpolation with bisection as the safeguard):
//   f(x + αd) ≤ f(x) + c1·α·∇f(x)ᵀd   and   |∇f(x + αd)ᵀd| ≤ c2·|∇f(x)ᵀd|.
// A pair (s, y) is kept only when sᵀy > 0, so H stays positive definite.
#include <algorithm>
#include <cmath>
#include <deque>

#include "frontends/value/solve/Internal.h"

namespace eph::value {

using namespace detail;

namespace {

double dot(std::span<const double> a, std::span<const double> b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

struct Pair {
  std::vector<double> s, y;
  double rho;  // 1 / sᵀy
};

// d = −H·g by the two-loop recursion.
void direction(const std::deque<Pair>& mem, std::span<const double> g, std::span<double> d) {
  std::copy(g.begin(), g.end(), d.begin());
  std::vector<double> alpha(mem.size());
  for (size_t k = mem.size(); k-- > 0;) {
    alpha[k] = mem[k].rho * dot(mem[k].s, d);
    for (size_t i = 0; i < d.size(); ++i) d[i] -= alpha[k] * mem[k].y[i];
  }
  if (!mem.empty()) {
    const Pair& last = mem.back();
    double gamma = 1 / (last.rho * dot(last.y, last.y));
    for (double& v : d) v *= gamma;
  }
  for (size_t k = 0; k < mem.size(); ++k) {
    double beta = mem[k].rho * dot(mem[k].y, d);
    for (size_t i = 0; i < d.size(); ++i) d[i] += (alpha[k] - beta) * mem[k].s[i];
  }
  for (double& v : d) v = -v;
}

// φ(α) = f(x + α·d) and its derivative, evaluated into xt / gt.
struct LineSearch {
  EnergyProblem& p;
  const SolverOptions& o;
  std::span<const double> x, d;
  std::vector<double>& xt;
  std::vector<double>& gt;
  double f0, dphi0;
  int evaluations = 0;

  struct Point {
    double alpha, f, dphi;
  };

  Expected<Point> at(double alpha) {
    for (size_t i = 0; i < x.size(); ++i) xt[i] = x[i] + alpha * d[i];
    auto f = p.evaluate(xt, gt);
    ++evaluations;
    if (!f) return f.error();
    if (!std::isfinite(*f) || firstNonFinite(gt) < gt.size()) {
      std::string what = p.explainEnergy(xt);
      return makeError({}, (what.empty() ? "the energy" : what) + (std::isfinite(*f) ? "'s gradient" : "") +
                               " is not finite at line-search step " + std::to_string(alpha));
    }
    return Point{alpha, *f, dot(gt, d)};
  }
  bool armijoFails(const Point& pt, const Point& prev) const {
    return pt.f > f0 + o.wolfeC1 * pt.alpha * dphi0 || pt.f >= prev.f;
  }
  bool curvatureHolds(const Point& pt) const { return std::abs(pt.dphi) <= -o.wolfeC2 * dphi0; }

  // The minimiser of the cubic through lo and hi, kept inside the interval.
  static double interpolate(const Point& lo, const Point& hi) {
    double d1 = lo.dphi + hi.dphi - 3 * (lo.f - hi.f) / (lo.alpha - hi.alpha);
    double disc = d1 * d1 - lo.dphi * hi.dphi;
    double mid = 0.5 * (lo.alpha + hi.alpha);
    if (!(disc >= 0)) return mid;
    double d2 = std::copysign(std::sqrt(disc), hi.alpha - lo.alpha);
    double a = hi.alpha - (hi.alpha - lo.alpha) * (hi.dphi + d2 - d1) / (hi.dphi - lo.dphi + 2 * d2);
    double left = std::min(lo.alpha, hi.alpha), right = std::max(lo.alpha, hi.alpha), w = right - left;
    if (!std::isfinite(a) || a < left + 0.1 * w || a > right - 0.1 * w) return mid;
    return a;
  }

  // Algorithm 3.6: the point returned is the last one evaluated (in xt, gt).
  Expected<std::optional<Point>> zoom(Point lo, Point hi) {
    while (evaluations < o.maxLineSearchEvaluations) {
      auto pt = at(interpolate(lo, hi));
      if (!pt) return pt.error();
      if (pt->f > f0 + o.wolfeC1 * pt->alpha * dphi0 || pt->f >= lo.f) {
        hi = *pt;
      } else {
        if (curvatureHolds(*pt)) return std::optional<Point>(*pt);
        if (pt->dphi * (hi.alpha - lo.alpha) >= 0) hi = lo;
        lo = *pt;
      }
      if (std::abs(hi.alpha - lo.alpha) <= 1e-16 * std::max(1.0, lo.alpha)) break;
    }
    return std::optional<Point>();
  }

  // Algorithm 3.5.
  Expected<std::optional<Point>> run(double alpha) {
    Point prev{0, f0, dphi0};
    for (bool first = true; evaluations < o.maxLineSearchEvaluations; first = false) {
      auto pt = at(alpha);
      if (!pt) return pt.error();
      if (pt->f > f0 + o.wolfeC1 * alpha * dphi0 || (!first && pt->f >= prev.f)) return zoom(prev, *pt);
      if (curvatureHolds(*pt)) return std::optional<Point>(*pt);
      if (pt->dphi >= 0) return zoom(*pt, prev);
      prev = *pt;
      alpha *= 2;
    }
    return std::optional<Point>();
  }
};

}  // namespace

Expected<SolveResult> lbfgs(EnergyProblem& p, std::span<double> x, const SolverOptions& o) {
  Clock clock;
  const size_t n = p.numParams();
  std::vector<double> g(n), d(n), xt(n), gt(n);
  std::deque<Pair> mem;
  SolveResult res;
  auto f0 = p.evaluate(x, g);
  if (!f0) return f0.error();
  res.evaluations = 1;
  double f = *f0;
  if (!std::isfinite(f) || firstNonFinite(g) < n) {
    std::string what = p.explainEnergy(x);
    return makeError({}, (what.empty() ? "the energy" : what) + " is not finite at the starting point");
  }
  res.initialCost = f;
  double gnorm = infNorm(g);

  auto finish = [&](StopReason why) { return finished(res, why, f, gnorm, clock); };
  if (gnorm <= o.gradientTolerance) return finish(StopReason::GradientTolerance);

  for (int iter = 1; iter <= o.maxIterations; ++iter) {
    res.iterations = iter;
    direction(mem, g, d);
    double dphi0 = dot(g, d);
    if (!(dphi0 < 0)) {  // not a descent direction (rounding): restart from steepest descent
      mem.clear();
      for (size_t i = 0; i < n; ++i) d[i] = -g[i];
      dphi0 = dot(g, d);
    }
    // Without curvature information the first step moves x by at most 1.
    double alpha = mem.empty() ? std::min(1.0, 1.0 / norm2(g)) : 1.0;
    LineSearch ls{p, o, x, d, xt, gt, f, dphi0};
    auto found = ls.run(alpha);
    res.evaluations += ls.evaluations;
    if (!found) return found.error();
    if (!*found) return finish(StopReason::LineSearchFailed);

    Pair pair{std::vector<double>(n), std::vector<double>(n), 0};
    for (size_t i = 0; i < n; ++i) pair.s[i] = xt[i] - x[i], pair.y[i] = gt[i] - g[i];
    double sy = dot(pair.s, pair.y);
    double stepNorm = infNorm(pair.s);
    if (sy > 1e-12 * norm2(pair.s) * norm2(pair.y)) {
      pair.rho = 1 / sy;
      mem.push_back(std::move(pair));
      if (mem.size() > size_t(std::max(o.lbfgsMemory, 1))) mem.pop_front();
    }
    double oldF = f, oldXNorm = infNorm(x);
    std::copy(xt.begin(), xt.end(), x.begin());
    std::swap(g, gt);
    f = (*found)->f;
    gnorm = infNorm(g);
    report(o, clock, {iter, f, gnorm, (*found)->alpha, stepNorm, true, 0});
    if (gnorm <= o.gradientTolerance) return finish(StopReason::GradientTolerance);
    if (stepNorm <= o.stepTolerance * (oldXNorm + o.stepTolerance)) return finish(StopReason::StepTolerance);
    if (std::abs(oldF - f) <= o.costChangeTolerance * std::max(std::abs(oldF), std::abs(f)))
      return finish(StopReason::CostChangeTolerance);
  }
  return finish(StopReason::MaxIterations);
}

}  // namespace eph::value
