// A 2-D constraint sketch solved by Levenberg–Marquardt (docs/value.md,
// "Demo: constraint sketch"): six points, a 4 x 2 rectangle pinned at the
// origin with a horizontal base, and a segment that starts at its top-left
// corner and ends on the base line, 2.5 long. Every constraint is one or two
// residuals built from Vec2 arithmetic; the target lengths are const leaves,
// so all the distance residuals share one kernel.
#pragma once

#include <string>
#include <vector>

#include "frontends/value/Graph.h"
#include "frontends/value/solve/Solver.h"

namespace eph::value::demo {

struct Sketch {
  Graph g;                          // params p[12] (x, y of P0..P5), consts len[4]
  std::vector<std::string> labels;  // per residual: "distance(P0, P1) = 4", ...
};
Sketch constraintSketch();

struct SketchResult {
  SolveResult solve;
  std::vector<double> x;          // the points, x then y of each
  std::vector<double> residuals;  // at x
  size_t kernels = 0;             // 0 on the host
};
// Levenberg–Marquardt on "host" (the float64 reference evaluator) or on the
// compiled kernels of interp, cpu or vulkan.
Expected<SketchResult> solveSketch(const Sketch& s, const std::string& target);

}  // namespace eph::value::demo
