// Runs the example networks (Models.h) end to end: the program in f64 on the
// reference interpreter is the float64 reference; the same program in f32
// runs on each target, and its output must match within 1e-3 (relative to
// the output's largest magnitude). Prints, per model and target, the time
// of the run (the first run compiles; the second is timed) and the error.
//
//   eph_tensor_examples [--model mlp|cnn|encoder|all] [--targets cpu,vulkan]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include "examples/tensor/Models.h"
#include "frontends/tensor/Run.h"
#include "runtime/Device.h"

using namespace eph::tensor;

int main(int argc, char** argv) {
  std::string which = "all", targetList = "cpu,vulkan";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--model") which = argv[i + 1];
    else if (a == "--targets") targetList = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: eph_tensor_examples [--model mlp|cnn|encoder|all] [--targets cpu,vulkan]\n");
      return 2;
    }
  }
  int failures = 0;
  for (const examples::Model& m : examples::models()) {
    if (which != "all" && which != m.name) continue;
    Program ref;
    m.build(ref, DType::F64);
    auto want = run(ref, "interp", {examples::exampleInput(m, DType::F64)});
    if (!want) {
      std::fprintf(stderr, "%s: the float64 reference failed: %s\n", m.name.c_str(), want.error().message.c_str());
      ++failures;
      continue;
    }
    const HostTensor& w = (*want)[0];
    double scale = 0;
    for (int64_t i = 0; i < w.size(); ++i) scale = std::max(scale, std::abs(w.get(i)));
    std::stringstream ts(targetList);
    for (std::string target; std::getline(ts, target, ',');) {
      Program p;
      m.build(p, DType::F32);
      eph::ir::Context ctx;
      auto c = lower(ctx, p);
      auto dev = eph::runtime::openDevice(target);
      if (!c || !dev) {
        std::fprintf(stderr, "%s on %s: %s\n", m.name.c_str(), target.c_str(),
                     (!c ? c.error() : dev.error()).message.c_str());
        ++failures;
        continue;
      }
      HostTensor in = examples::exampleInput(m, DType::F32);
      auto first = run(**dev, p, *c, {in});
      auto t0 = std::chrono::steady_clock::now();
      auto got = first ? run(**dev, p, *c, {in}) : first;
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!got) {
        std::fprintf(stderr, "%s on %s: %s\n", m.name.c_str(), target.c_str(), got.error().message.c_str());
        ++failures;
        continue;
      }
      double err = 0;
      for (int64_t i = 0; i < w.size(); ++i) err = std::max(err, std::abs((*got)[0].get(i) - w.get(i)) / scale);
      int kernels = 0;
      for (const auto& f : c->module->functions()) kernels += f->kind() == eph::ir::FunctionKind::Kernel;
      bool ok = err < 1e-3;
      failures += !ok;
      std::printf("%-8s %-7s output %s, %d kernels, %.2f ms per run, max error %.2e (relative to max |y| = %.3g): %s\n",
                  m.name.c_str(), target.c_str(), shapeText((*got)[0].shape).c_str(), kernels, ms, err, scale,
                  ok ? "ok" : "WRONG");
    }
  }
  return failures ? 1 : 0;
}
