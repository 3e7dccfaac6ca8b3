// eph_example_sketch: the 2-D constraint sketch of Sketch.h solved by
// Levenberg–Marquardt, printing every constraint's residual and the points.
//
//   eph_example_sketch [--target host|interp|cpu|vulkan] [--print-vg]
//
// --print-vg prints the sketch as a .vg file instead (examples/value/sketch.vg
// is this output; `ephc solve examples/value/sketch.vg` solves the same problem).
#include <cmath>
#include <cstdio>
#include <string>

#include "examples/value/Sketch.h"
#include "frontends/value/Text.h"

using namespace eph::value;
using namespace eph::value::demo;

int main(int argc, char** argv) {
  std::string target = "host";
  bool printVg = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--print-vg") {
      printVg = true;
    } else if (a == "--target" && i + 1 < argc) {
      target = argv[++i];
      if (target != "host" && target != "interp" && target != "cpu" && target != "vulkan")
        return std::fprintf(stderr, "eph_example_sketch: --target wants host, interp, cpu or vulkan, got '%s'\n",
                            target.c_str()), 2;
    } else {
      return std::fprintf(stderr, "usage: eph_example_sketch [--target host|interp|cpu|vulkan] [--print-vg]\n"), 2;
    }
  }
  Sketch s = constraintSketch();
  if (printVg) {
    std::fputs("# A 2-D constraint sketch (examples/value/Sketch.cpp; eph_example_sketch --print-vg writes this file).\n"
               "# p: P0..P5 as x y pairs; residuals in order: fix(P0).x, fix(P0).y, horizontal(P0, P1),\n"
               "# distance(P0, P1) = 4, perpendicular(P0P1, P1P2), distance(P1, P2) = 2, parallel(P2P3, P0P1),\n"
               "# distance(P2, P3) = 4, coincident(P3, P4).x, .y, on_line(P5, P0P1), distance(P4, P5) = 2.5.\n",
               stdout);
    std::fputs(print(s.g).c_str(), stdout);
    return 0;
  }
  auto r = solveSketch(s, target);
  if (!r) return std::fprintf(stderr, "eph_example_sketch: %s\n", r.error().message.c_str()), 1;
  std::printf("constraint sketch on %s: Levenberg-Marquardt %s (%s) after %d iterations, cost %.3e\n", target.c_str(),
              r->solve.converged ? "converged" : "did not converge", stopReasonName(r->solve.reason),
              r->solve.iterations, r->solve.cost);
  double worst = 0;
  for (size_t i = 0; i < s.labels.size(); ++i) {
    std::printf("  %-28s residual %+.3e\n", s.labels[i].c_str(), r->residuals[i]);
    worst = std::max(worst, std::abs(r->residuals[i]));
  }
  for (int i = 0; i < 6; ++i) std::printf("  P%d = (%.12f, %.12f)\n", i, r->x[2 * i], r->x[2 * i + 1]);
  std::printf("max |residual| = %.3e\n", worst);
  return r->solve.converged && worst <= 1e-8 ? 0 : 1;
}
