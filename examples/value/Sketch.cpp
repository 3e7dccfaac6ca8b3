#include "examples/value/Sketch.h"

#include "examples/value/DeviceGraph.h"
#include "frontends/value/Vec.h"
#include "frontends/value/solve/DeviceProblem.h"
#include "frontends/value/solve/GraphProblem.h"

namespace eph::value::demo {

namespace {
// The constraints: each returns its residual, 0 when satisfied.
Value distance(const Vec2& a, const Vec2& b, Value len) { return magnitude(b - a) - len; }
// sin of the angle between the lines ab and cd (0: parallel).
Value parallel(const Vec2& a, const Vec2& b, const Vec2& c, const Vec2& d) {
  return cross(b - a, d - c) / (magnitude(b - a) * magnitude(d - c));
}
// cos of the angle between the lines ab and cd (0: perpendicular).
Value perpendicular(const Vec2& a, const Vec2& b, const Vec2& c, const Vec2& d) {
  return dot(b - a, d - c) / (magnitude(b - a) * magnitude(d - c));
}
// The signed distance of p from the line through a and b.
Value onLine(const Vec2& p, const Vec2& a, const Vec2& b) { return cross(b - a, p - a) / magnitude(b - a); }
}  // namespace

Sketch constraintSketch() {
  Sketch s;
  Graph& g = s.g;
  // A rough drawing: the solver snaps it.
  const double start[] = {0.2, -0.1, 3.5, 0.4, 4.3, 1.6, 0.5, 2.4, -0.2, 1.7, 1.2, 0.3};
  const double lengths[] = {4, 2, 4, 2.5};
  std::vector<Value> p = g.params("p", start), len = g.constants("len", lengths);
  Vec2 P[6];
  for (int i = 0; i < 6; ++i) P[i] = vec<2>(p, 2 * i);
  auto add = [&](Value r, std::string label) {
    g.residual(r);
    s.labels.push_back(std::move(label));
  };
  add(P[0][0], "fix(P0).x = 0");
  add(P[0][1], "fix(P0).y = 0");
  add(P[1][1] - P[0][1], "horizontal(P0, P1)");
  add(distance(P[0], P[1], len[0]), "distance(P0, P1) = 4");
  add(perpendicular(P[0], P[1], P[1], P[2]), "perpendicular(P0P1, P1P2)");
  add(distance(P[1], P[2], len[1]), "distance(P1, P2) = 2");
  add(parallel(P[2], P[3], P[0], P[1]), "parallel(P2P3, P0P1)");
  add(distance(P[2], P[3], len[2]), "distance(P2, P3) = 4");
  add(P[4][0] - P[3][0], "coincident(P3, P4).x");
  add(P[4][1] - P[3][1], "coincident(P3, P4).y");
  add(onLine(P[5], P[0], P[1]), "on_line(P5, P0P1)");
  add(distance(P[4], P[5], len[3]), "distance(P4, P5) = 2.5");
  return s;
}

Expected<SketchResult> solveSketch(const Sketch& s, const std::string& target) {
  SolverOptions o;  // Levenberg–Marquardt, sparse Cholesky
  o.gradientTolerance = 1e-14;
  o.stepTolerance = 1e-14;
  o.costChangeTolerance = 1e-14;
  SketchResult res;
  res.residuals.resize(s.g.residuals().size());
  auto solveOn = [&](LeastSquaresProblem& p, std::vector<double> x) -> Status {
    auto r = levenbergMarquardt(p, x, o);
    if (!r) return r.error();
    res.solve = *r;
    if (Status st = p.evaluate(x, res.residuals, nullptr); !st) return st;
    res.x = std::move(x);
    return {};
  };
  if (target == "host") {
    GraphProblem p(s.g);
    if (Status st = solveOn(p, p.initial()); !st) return st.error();
    return res;
  }
  auto dev = runtime::openDevice(target);
  if (!dev) return dev.error();
  auto p = DeviceProblem::create(s.g, **dev);  // frontends/value/solve/DeviceProblem.h
  if (!p) return p.error();
  res.kernels = (*p)->kernels();
  if (Status st = solveOn(**p, (*p)->initial()); !st) return st.error();
  return res;
}

}  // namespace eph::value::demo
