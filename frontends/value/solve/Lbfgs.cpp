// L-BFGS (Nocedal & Wright, "Numerical Optimization", 2nd ed.: the two-loop
// recursion, Algorithm 7.4, with H₀ = (sᵀy / yᵀy)·I) and a line search for
// the strong Wolfe conditions (Algorithms 3.5 and 3.6, the zoom step by cubic
// interpolation with bisection as the safeguard):
//   f(x + αd) ≤ f(x) + c1·α·∇f(x)ᵀd   and   |∇f(x + αd)ᵀd| ≤ c2·|∇f(x)ᵀd|.
// A pair (s, y) is kept only when sᵀy > 0, so H stays positive definite.
//
// The algorithm (lbfgsIn) works on numbered vectors of an LbfgsSpace: host
// memory here (lbfgs), device buffers in DeviceSolve.cpp, where only the
// scalars (f, dot products, norms) come back per evaluation.
#include <algorithm>
#include <cmath>
#include <deque>

#include "frontends/value/solve/Internal.h"

namespace eph::value {

using namespace detail;

namespace {

#define EPH_TRY(expr)                                  \
  do {                                                 \
    if (Status s_ = (expr); !s_) return s_.error();    \
  } while (0)
#define EPH_GET(var, expr)                \
  do {                                    \
    auto v_ = (expr);                     \
    if (!v_) return v_.error();           \
    var = *v_;                            \
  } while (0)

struct Pair {
  size_t s, y;  // vectors
  double rho;   // 1 / sᵀy
};

// The vectors' numbers: x, g, the direction, the trial point and its
// gradient, then 2·memory for the pairs (reused in turn).
enum : size_t { X, G, D, XT, GT, kFirstPair };

// d = −H·g by the two-loop recursion.
Status direction(LbfgsSpace& v, const std::deque<Pair>& mem, size_t g, size_t d) {
  EPH_TRY(v.scale(1.0, g, d));
  std::vector<double> alpha(mem.size());
  for (size_t k = mem.size(); k-- > 0;) {
    double sd;
    EPH_GET(sd, v.dot(mem[k].s, d));
    alpha[k] = mem[k].rho * sd;
    EPH_TRY(v.axpy(-alpha[k], mem[k].y, d));
  }
  if (!mem.empty()) {
    double yy;
    EPH_GET(yy, v.dot(mem.back().y, mem.back().y));
    EPH_TRY(v.scale(1 / (mem.back().rho * yy), d, d));
  }
  for (size_t k = 0; k < mem.size(); ++k) {
    double yd;
    EPH_GET(yd, v.dot(mem[k].y, d));
    EPH_TRY(v.axpy(alpha[k] - mem[k].rho * yd, mem[k].s, d));
  }
  return v.scale(-1.0, d, d);
}

// φ(α) = f(x + α·d) and its derivative, evaluated into vectors xt and gt.
struct LineSearch {
  LbfgsSpace& v;
  const SolverOptions& o;
  size_t x, d, xt, gt;
  double f0, dphi0;
  int evaluations = 0;

  struct Point {
    double alpha, f, dphi;
  };

  Expected<Point> at(double alpha) {
    EPH_TRY(v.scale(1.0, x, xt));
    EPH_TRY(v.axpy(alpha, d, xt));
    double f, gmax, dphi;
    EPH_GET(f, v.energy(xt, gt));
    ++evaluations;
    EPH_GET(gmax, v.maxAbs(gt));
    if (!std::isfinite(f) || !std::isfinite(gmax))
      return makeError({}, v.what() + (std::isfinite(f) ? "'s gradient" : "") + " is not finite at line-search step " +
                               std::to_string(alpha));
    EPH_GET(dphi, v.dot(gt, d));
    return Point{alpha, f, dphi};
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

// Host memory: the problem's evaluate on std::vectors.
class HostSpace : public LbfgsSpace {
 public:
  HostSpace(EnergyProblem& p, std::span<const double> x0) : p_(p), x0_(x0) {}
  std::vector<double>& operator[](size_t k) { return v_[k]; }
  Status make(size_t count) override {
    v_.assign(count, std::vector<double>(p_.numParams()));
    std::copy(x0_.begin(), x0_.end(), v_[0].begin());
    return Status::ok();
  }
  Expected<double> energy(size_t x, size_t g) override {
    x_ = x;
    return p_.evaluate(v_[x], v_[g]);
  }
  std::string what() override {
    std::string w = p_.explainEnergy(v_[x_]);
    return w.empty() ? "the energy" : w;
  }
  Expected<double> dot(size_t a, size_t b) override {
    double s = 0;
    for (size_t i = 0; i < v_[a].size(); ++i) s += v_[a][i] * v_[b][i];
    return s;
  }
  Expected<double> maxAbs(size_t a) override {
    return firstNonFinite(v_[a]) < v_[a].size() ? NAN : infNorm(v_[a]);
  }
  Status axpy(double a, size_t x, size_t y) override {
    for (size_t i = 0; i < v_[x].size(); ++i) v_[y][i] += a * v_[x][i];
    return Status::ok();
  }
  Status scale(double a, size_t x, size_t y) override {
    for (size_t i = 0; i < v_[x].size(); ++i) v_[y][i] = a * v_[x][i];
    return Status::ok();
  }

 private:
  EnergyProblem& p_;
  std::span<const double> x0_;
  std::vector<std::vector<double>> v_;
  size_t x_ = 0;  // the last point evaluated, for what()
};

}  // namespace

Expected<SolveResult> detail::lbfgsIn(LbfgsSpace& v, const SolverOptions& o, size_t& xOut) {
  Clock clock;
  const size_t memory = size_t(std::max(o.lbfgsMemory, 1));
  EPH_TRY(v.make(kFirstPair + 2 * (memory + 1)));
  size_t x = X, g = G, xt = XT, gt = GT;  // swapped as the iteration moves
  std::vector<size_t> freePairs;          // vectors no pair uses
  for (size_t k = kFirstPair; k < kFirstPair + 2 * (memory + 1); ++k) freePairs.push_back(k);
  std::deque<Pair> mem;
  SolveResult res;
  xOut = x;
  double f, gnorm;
  EPH_GET(f, v.energy(x, g));
  res.evaluations = 1;
  EPH_GET(gnorm, v.maxAbs(g));
  if (!std::isfinite(f) || !std::isfinite(gnorm)) return makeError({}, v.what() + " is not finite at the starting point");
  res.initialCost = f;

  auto finish = [&](StopReason why) {
    xOut = x;
    return finished(res, why, f, gnorm, clock);
  };
  if (gnorm <= o.gradientTolerance) return finish(StopReason::GradientTolerance);

  for (int iter = 1; iter <= o.maxIterations; ++iter) {
    res.iterations = iter;
    EPH_TRY(direction(v, mem, g, D));
    double dphi0;
    EPH_GET(dphi0, v.dot(g, D));
    if (!(dphi0 < 0)) {  // not a descent direction (rounding): restart from steepest descent
      for (const Pair& p : mem) freePairs.push_back(p.s), freePairs.push_back(p.y);
      mem.clear();
      EPH_TRY(v.scale(-1.0, g, D));
      EPH_GET(dphi0, v.dot(g, D));
    }
    // Without curvature information the first step moves x by at most 1.
    double alpha = mem.empty() ? std::min(1.0, 1.0 / std::sqrt(-dphi0)) : 1.0;
    LineSearch ls{v, o, x, D, xt, gt, f, dphi0};
    auto found = ls.run(alpha);
    res.evaluations += ls.evaluations;
    if (!found) return found.error();
    if (!*found) return finish(StopReason::LineSearchFailed);

    // s = xt − x, y = gt − g.
    size_t s = freePairs.back();
    freePairs.pop_back();
    size_t y = freePairs.back();
    freePairs.pop_back();
    EPH_TRY(v.scale(1.0, xt, s));
    EPH_TRY(v.axpy(-1.0, x, s));
    EPH_TRY(v.scale(1.0, gt, y));
    EPH_TRY(v.axpy(-1.0, g, y));
    double sy, ss, yy, stepNorm, oldXNorm;
    EPH_GET(sy, v.dot(s, y));
    EPH_GET(ss, v.dot(s, s));
    EPH_GET(yy, v.dot(y, y));
    EPH_GET(stepNorm, v.maxAbs(s));
    EPH_GET(oldXNorm, v.maxAbs(x));
    if (sy > 1e-12 * std::sqrt(ss) * std::sqrt(yy)) {
      mem.push_back({s, y, 1 / sy});
      if (mem.size() > memory) {
        freePairs.push_back(mem.front().s), freePairs.push_back(mem.front().y);
        mem.pop_front();
      }
    } else {
      freePairs.push_back(s), freePairs.push_back(y);
    }
    double oldF = f;
    std::swap(x, xt);  // x ← the trial point, whose vectors the next line search overwrites
    std::swap(g, gt);
    f = (*found)->f;
    EPH_GET(gnorm, v.maxAbs(g));
    report(o, clock, {iter, f, gnorm, (*found)->alpha, stepNorm, true, 0});
    if (gnorm <= o.gradientTolerance) return finish(StopReason::GradientTolerance);
    if (stepNorm <= o.stepTolerance * (oldXNorm + o.stepTolerance)) return finish(StopReason::StepTolerance);
    if (std::abs(oldF - f) <= o.costChangeTolerance * std::max(std::abs(oldF), std::abs(f)))
      return finish(StopReason::CostChangeTolerance);
  }
  return finish(StopReason::MaxIterations);
}

Expected<SolveResult> lbfgs(EnergyProblem& p, std::span<double> x, const SolverOptions& o) {
  HostSpace v(p, x);
  size_t at = X;
  auto res = lbfgsIn(v, o, at);
  if (res) std::copy(v[at].begin(), v[at].end(), x.begin());
  return res;
}

#undef EPH_TRY
#undef EPH_GET

}  // namespace eph::value
