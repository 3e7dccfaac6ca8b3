// Custom ops with an IR derivative (CustomOp::lowerDerivative) reach the
// kernels through it: the op lowers to a call of @vg.custom.NAME.T whose
// hand-made .vjp the autodiff pass reuses, instead of differentiating the
// op's body. Checked with an op whose rule differs from its body's derivative
// (a straight-through round) and with eigmin3 where two eigenvalues meet
// (its body's acos and sqrt have infinite derivatives there, its rule not).
#include <gtest/gtest.h>

#include <cmath>

#include "frontends/value/Eval.h"
#include "frontends/value/Frontend.h"
#include "frontends/value/Text.h"
#include "ir/Builder.h"
#include "runtime/Device.h"
#include "tests/support/DeviceRun.h"
#include "tests/unit/ValueTestUtil.h"

namespace eph::value {
namespace {

// The gradient of Σr that @main returns on `target` (f64).
std::vector<double> deviceGradient(const Graph& g, const std::string& target) {
  ir::Context ctx;
  std::string diags;
  auto m = compileText(ctx, print(g), "g.vg", false, diags);
  EXPECT_TRUE(m) << diags;
  if (!m) return {};
  EXPECT_TRUE((*m).lookup("main"));
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

TEST(ValueCustomDerivative, TheOpsRuleNotItsBodysDerivative) {
  // round(x) forward, derivative 1 (straight-through): the body's derivative would be 0.
  CustomOp op;
  op.name = "test_ste_round";
  op.arity = 1;
  op.forward = [](std::span<const double> in) { return std::round(in[0]); };
  op.derivative = [](std::span<const double>, double, std::span<double> d) { d[0] = 1; };
  op.lower = [](ir::Builder& b, std::span<ir::Value* const> in, const ir::Type* t) { return b.op("round", {in[0]}, t); };
  op.lowerDerivative = [](ir::Builder& b, std::span<ir::Value* const>, ir::Value*, const ir::Type* t) {
    return std::vector<ir::Value*>{b.constFloat(t, 1)};
  };
  uint32_t id = registerCustomOp(op);
  Graph g;
  Value x = g.param("x", 2.3), y = g.param("y", -0.5);
  Value args[] = {x * y};
  g.residual(g.custom(id, args) * x);  // round(xy)·x: ∂/∂x = y·x + round(xy) = -1.15 - 1, ∂/∂y = x·x
  Evaluation ref = evaluate(g);
  ASSERT_EQ(ref.residuals[0], -1 * 2.3);
  EXPECT_NEAR(ref.gradient[0], -0.5 * 2.3 - 1, 1e-15);
  EXPECT_NEAR(ref.gradient[1], 2.3 * 2.3, 1e-15);
  for (const std::string& target : test::targets()) {
    SCOPED_TRACE(target);
    std::vector<double> have = deviceGradient(g, target);
    ASSERT_EQ(have.size(), 2u);
    EXPECT_NEAR(have[0], ref.gradient[0], 1e-14);
    EXPECT_NEAR(have[1], ref.gradient[1], 1e-14);
  }
}

TEST(ValueCustomDerivative, Eigmin3WhereTwoEigenvaluesMeet) {
  // diag(1, 1, 3): λ = 1 twice. The rule's fallback eigenvector (1, 0, 0)
  // gives ∂λ/∂c00 = 1 and 0 elsewhere, on the host and on every target.
  {
    Graph g;
    const double c[] = {1, 0, 0, 1, 0, 3};
    std::vector<Value> p = g.params("c", c);
    g.residual(eigmin3(p[0], p[1], p[2], p[3], p[4], p[5]));
    Evaluation ref = evaluate(g);
    // Smith's closed form loses half the digits at a double eigenvalue (acos near 1).
    EXPECT_NEAR(ref.residuals[0], 1.0, 1e-7);
    for (const std::string& target : test::targets()) {
      SCOPED_TRACE(target);
      std::vector<double> have = deviceGradient(g, target);
      ASSERT_EQ(have.size(), 6u);
      for (size_t k = 0; k < 6; ++k) EXPECT_NEAR(have[k], ref.gradient[k], 1e-12) << k;
    }
  }
  // The normal covariance of a regular pentagonal fan (an icosahedron's
  // vertex): the two tangent eigenvalues are equal. Any unit eigenvector v of
  // the double eigenvalue is a valid derivative; check it is finite and that
  // ∂λ/∂c00 + ∂λ/∂c11 + ∂λ/∂c22 = |v|² = 1.
  {
    Graph g;
    double c[6] = {0, 0, 0, 0, 0, 0};
    for (int k = 0; k < 5; ++k) {
      double a = 2 * M_PI * k / 5, s = std::sin(0.6), n[3] = {s * std::cos(a), s * std::sin(a), std::cos(0.6)};
      double m[6] = {n[0] * n[0], n[0] * n[1], n[0] * n[2], n[1] * n[1], n[1] * n[2], n[2] * n[2]};
      for (int e = 0; e < 6; ++e) c[e] += m[e];
    }
    std::vector<Value> p = g.params("c", c);
    g.residual(eigmin3(p[0], p[1], p[2], p[3], p[4], p[5]));
    for (const std::string& target : test::targets()) {
      SCOPED_TRACE(target);
      std::vector<double> have = deviceGradient(g, target);
      ASSERT_EQ(have.size(), 6u);
      for (double d : have) EXPECT_TRUE(std::isfinite(d));
      EXPECT_NEAR(have[0] + have[3] + have[5], 1.0, 1e-9);
    }
  }
}

}  // namespace
}  // namespace eph::value
