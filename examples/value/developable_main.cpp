// eph_example_developable: the developable-surface flow on icospheres
// (Developable.h, docs/value.md "Demo: developable flow").
//
//   eph_example_developable [--target interp|cpu|vulkan|host] [--level N | --level A-B]
//                           [--max-iters N] [--weights angle|uniform] [--stretch W] [--out DIR]
//
// Prints one line per level: vertices, kernels, the energy Σλ before and after,
// the fraction of developable vertices before and after, iterations, why
// L-BFGS stopped, setup and solve time; with --out writes
// DIR/developable-L<level>-<target>.obj.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "examples/value/Developable.h"

using namespace eph::value;
using namespace eph::value::demo;

namespace {
int usage(const std::string& why) {
  std::fprintf(stderr,
               "eph_example_developable: %s\nusage: eph_example_developable [--target interp|cpu|vulkan|host] "
               "[--level N|A-B] [--max-iters N] [--weights angle|uniform] [--stretch W] [--out DIR]\n",
               why.c_str());
  return 2;
}

bool number(const std::string& s, long lo, long hi, long& out) {
  char* end = nullptr;
  out = std::strtol(s.c_str(), &end, 10);
  return !s.empty() && !*end && out >= lo && out <= hi;
}
}  // namespace

int main(int argc, char** argv) {
  FlowOptions o;
  long first = 0, last = 3;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") return usage("the developable flow on icospheres"), 0;
    if (i + 1 >= argc) return usage("'" + a + "' needs a value");
    std::string v = argv[++i];
    if (a == "--target") {
      if (v != "interp" && v != "cpu" && v != "vulkan" && v != "host")
        return usage("--target wants interp, cpu, vulkan or host, got '" + v + "'");
      o.target = v;
    } else if (a == "--level") {
      size_t dash = v.find('-');
      if (dash == std::string::npos ? !number(v, 0, 8, first) : !number(v.substr(0, dash), 0, 8, first) ||
                                                                   !number(v.substr(dash + 1), 0, 8, last))
        return usage("--level wants N or A-B with levels 0 to 8, got '" + v + "'");
      if (dash == std::string::npos) last = first;
      if (first > last) return usage("--level " + v + ": the range is empty");
    } else if (a == "--max-iters") {
      long n;
      if (!number(v, 0, 1000000, n)) return usage("--max-iters wants a count, got '" + v + "'");
      o.maxIterations = int(n);
    } else if (a == "--weights") {
      if (v != "angle" && v != "uniform") return usage("--weights wants angle or uniform, got '" + v + "'");
      o.weights = v == "angle" ? Weights::Angle : Weights::Uniform;
    } else if (a == "--stretch") {
      char* end = nullptr;
      o.stretch = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(o.stretch >= 0)) return usage("--stretch wants a number >= 0, got '" + v + "'");
    } else if (a == "--out") {
      out = v;
    } else {
      return usage("unknown option '" + a + "'");
    }
  }
  if (!out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec) return std::fprintf(stderr, "eph_example_developable: cannot create '%s': %s\n", out.c_str(), ec.message().c_str()), 1;
  }
  std::printf("developable flow: target %s, L-BFGS (max %d iterations), %s weights, edge term %g x sphere mean lambda,\n"
              "developable: lambda_v < %g x sphere mean lambda\n",
              o.target.c_str(), o.maxIterations, o.weights == Weights::Angle ? "tip-angle" : "uniform", o.stretch,
              o.developableRatio);
  std::printf("%5s %8s %7s %12s %12s %9s %9s %6s %10s %8s %8s  %s\n", "level", "vertices", "kernels", "E before",
              "E after", "dev.before", "dev.after", "iters", "max strain", "setup s", "solve s", "stop");
  for (long level = first; level <= last; ++level) {
    Mesh m = icosphere(int(level));
    auto r = runFlow(m, o);
    if (!r) return std::fprintf(stderr, "eph_example_developable: level %ld: %s\n", level, r.error().message.c_str()), 1;
    std::printf("%5ld %8zu %7zu %12.5e %12.5e %8.1f%% %8.1f%% %6d %10.4f %8.2f %8.2f  %s\n", level, r->vertices,
                r->kernels, r->energyBefore, r->energyAfter, 100 * r->developableBefore, 100 * r->developableAfter,
                r->solve.iterations, r->maxStretch, r->setupSeconds, r->solve.seconds, stopReasonName(r->solve.reason));
    std::fflush(stdout);
    if (!out.empty()) {
      std::string path = out + "/developable-L" + std::to_string(level) + "-" + o.target + ".obj";
      if (eph::Status s = writeObj(path, m, r->x); !s)
        return std::fprintf(stderr, "eph_example_developable: %s\n", s.error().message.c_str()), 1;
    }
  }
  return 0;
}
