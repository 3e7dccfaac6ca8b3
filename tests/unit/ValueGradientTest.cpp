// The device gradient of a Value graph (docs/value.md, "Gradient"): per
// signature the autodiff pass's @vgK.r.vjp, called with seed 1 by the gradient
// kernel @vgK.g, which atomically adds each trainable leaf's adjoint. Checked
// against the float64 reference evaluator on random smooth graphs (shared
// leaves and nodes, constants, several signatures) on every target, f64 to
// 1e-10 and f32 loosely, and mod's derivative (1 to a, 0 to b).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "frontends/value/Eval.h"
#include "frontends/value/Frontend.h"
#include "frontends/value/Text.h"
#include "runtime/Device.h"
#include "tests/support/DeviceRun.h"
#include "tests/unit/ValueRandomGraph.h"
#include "tests/unit/ValueTestUtil.h"

namespace eph::value {
namespace {

using test::close;

using test::smoothGraph;

// Runs the lowered module of `g` on `target` and returns the gradient @main returned.
std::vector<double> deviceGradient(const Graph& g, const std::string& target, bool f32) {
  ir::Context ctx;
  std::string diags, text = print(g);
  auto m = compileText(ctx, text, "g.vg", f32, diags);
  EXPECT_TRUE(m) << diags;
  if (!m) return {};
  auto dev = runtime::openDevice(target);
  EXPECT_TRUE(dev) << dev.error().message;
  if (!dev) return {};
  eph::test::HostRun run = eph::test::runMainOn(**dev, *m);
  EXPECT_TRUE(run.results) << run.results.error().message;
  if (!run.results || run.results->size() != 2) return {};
  std::vector<double> out;
  for (const interp::RtValue& e : run.interp->memory().get((*run.results)[1].buffer)->elems) out.push_back(e.f);
  out.resize(gradientLeaves(g).size());
  return out;
}

TEST(ValueGradient, RandomGraphsMatchTheReferenceOnEveryTarget) {
  std::mt19937 rng(31);
  for (int i = 0; i < 12; ++i) {
    Graph g = smoothGraph(rng);
    Evaluation ref = evaluate(g);
    for (const std::string& target : test::targets())
      for (bool f32 : {false, true}) {
        SCOPED_TRACE("graph " + std::to_string(i) + " on " + target + (f32 ? " f32" : " f64") + ":\n" + print(g));
        std::vector<double> have = deviceGradient(g, target, f32);
        ASSERT_EQ(have.size(), ref.gradient.size());
        for (size_t k = 0; k < have.size(); ++k)
          EXPECT_TRUE(close(have[k], ref.gradient[k], f32 ? 1e-4 : 1e-10, f32 ? 1e-4 : 1e-12))
              << g.leafName(gradientLeaves(g)[k]) << ": " << have[k] << " vs " << ref.gradient[k];
      }
  }
}

TEST(ValueGradient, ModGivesOneToAAndZeroToB) {
  // mod(7.5, 2) = 1.5; ∂/∂a = 1, ∂/∂b = 0 (FORMAT.md), not −trunc(a/b) = −3.
  Graph g;
  ParseError err;
  ASSERT_TRUE(parse("param a = 7.5\nparam b = 2\nresidual mod(a, b)\nresidual mod(-a, b)\n", g, err));
  for (const std::string& target : test::targets()) {
    SCOPED_TRACE(target);
    std::vector<double> have = deviceGradient(g, target, false);
    ASSERT_EQ(have.size(), 2u);
    EXPECT_EQ(have[0], 0.0);  // +1 from mod(a, b), −1 from mod(−a, b)
    EXPECT_EQ(have[1], 0.0);
  }
  Evaluation ref = evaluate(g);
  EXPECT_EQ(ref.residuals[0], 1.5);
  EXPECT_EQ(ref.residuals[1], -1.5);
}

TEST(ValueGradient, NoTrainableLeafAndNoResidual) {
  for (const char* text : {"const c = 2\nresidual c * c\n", "param a = 1\n"}) {
    Graph g;
    ParseError err;
    ASSERT_TRUE(parse(text, g, err)) << text;
    for (const std::string& target : test::targets()) {
      SCOPED_TRACE(std::string(text) + " on " + target);
      std::vector<double> have = deviceGradient(g, target, false);
      ASSERT_EQ(have.size(), gradientLeaves(g).size());
      for (double d : have) EXPECT_EQ(d, 0.0);
    }
  }
}

}  // namespace
}  // namespace eph::value
