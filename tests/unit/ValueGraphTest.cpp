// The Value-graph C++ API and its float64 reference evaluator: values and
// gradients of every op against finite differences, FORMAT.md's kink
// conventions, eigmin3 (a custom op) and its derivative rule, the Vec
// geometry helpers, and a 20,000-node chain through every traversal.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "frontends/value/Eval.h"
#include "frontends/value/Frontend.h"
#include "frontends/value/Lower.h"
#include "frontends/value/Signature.h"
#include "frontends/value/Text.h"
#include "frontends/value/Vec.h"
#include "ir/Builder.h"
#include "ir/Verifier.h"
#include "tests/support/DeviceRun.h"
#include "tests/unit/ValueTestUtil.h"

namespace eph::value {
namespace {

using test::close;

// ∂(Σr)/∂leaf by central differences on the reference evaluator.
std::vector<double> finiteDifferences(Graph g, double h = 1e-6) {
  std::vector<double> out;
  for (NodeId leaf : gradientLeaves(g)) {
    double x = g.node(leaf).value;
    g.setLeaf(leaf, x + h);
    double up = evaluate(g).sum;
    g.setLeaf(leaf, x - h);
    double down = evaluate(g).sum;
    g.setLeaf(leaf, x);
    out.push_back((up - down) / (2 * h));
  }
  return out;
}

void expectGradientMatchesFiniteDifferences(const Graph& g, double tol = 1e-6) {
  Evaluation e = evaluate(g);
  std::vector<double> fd = finiteDifferences(g);
  ASSERT_EQ(e.gradient.size(), fd.size());
  for (size_t i = 0; i < fd.size(); ++i)
    EXPECT_TRUE(close(e.gradient[i], fd[i], tol, tol)) << g.leafName(gradientLeaves(g)[i]) << ": " << e.gradient[i] << " vs " << fd[i];
}

TEST(ValueGraph, TracedApiEqualsTheParsedText) {
  Graph g;
  Value a = g.param("a", 2), b = g.param("b", -3), c = g.param("c", 10);
  Value n = a * b + c;
  g.name(n, "n");
  g.residual(tanh(n));
  Graph parsed;
  ParseError err;
  ASSERT_TRUE(parse("# tanh(a*b + c)\nparam a = 2\nparam b = -3\nparam c = 10\nlet n = a*b + c\nresidual tanh(n)\n", parsed, err))
      << err.message;
  EXPECT_TRUE(g == parsed);
  Evaluation e = evaluate(g);
  EXPECT_DOUBLE_EQ(e.residuals[0], std::tanh(4.0));
  EXPECT_NEAR(e.gradient[0], -0.0040228520490775965, 1e-15);
  EXPECT_DOUBLE_EQ(n.data(), 4.0);
  // A different value is a different problem.
  Graph h = g;
  h.setLeaf(c.id(), 11);
  EXPECT_FALSE(g == h);
}

TEST(ValueGraph, ResidualFunctionsAreTracedPerInstance) {
  // Edge lengths of a square: one residual function, traced once per edge.
  Graph g;
  std::vector<double> xy = {0, 0, 1, 0, 1, 1, 0, 1.5};
  auto p = g.params("p", xy);
  auto rest = g.constants("len", std::vector<double>{1, 1, 1, 1});
  for (int e = 0; e < 4; ++e) {
    int i = e, j = (e + 1) % 4;
    Value leaves[] = {p[2 * i], p[2 * i + 1], p[2 * j], p[2 * j + 1], rest[e]};
    g.trace(leaves, [](std::span<const Value> l) { return magnitude(vec<2>(l, 0) - vec<2>(l, 2)) - l[4]; });
  }
  Evaluation e = evaluate(g);
  EXPECT_DOUBLE_EQ(e.residuals[0], 0);
  EXPECT_DOUBLE_EQ(e.residuals[1], 0);
  EXPECT_DOUBLE_EQ(e.residuals[2], std::sqrt(1.25) - 1);
  EXPECT_DOUBLE_EQ(e.residuals[3], 0.5);
  EXPECT_EQ(groupResiduals(g).size(), 1u);
  expectGradientMatchesFiniteDifferences(g);
}

// Every op at points away from its kinks: values against <cmath>, gradients
// against finite differences.
TEST(ValueGraph, EveryOpMatchesFiniteDifferences) {
  struct Case {
    const char* name;
    std::function<Value(Value, Value, Value)> f;
    double want;  // at x = 0.3, y = 0.7, z = 1.9
  };
  const double x = 0.3, y = 0.7, z = 1.9;
  std::vector<Case> cases = {
      {"add", [](Value a, Value b, Value) { return a + b; }, x + y},
      {"sub", [](Value a, Value b, Value) { return a - b; }, x - y},
      {"mul", [](Value a, Value b, Value) { return a * b; }, x * y},
      {"div", [](Value a, Value b, Value) { return a / b; }, x / y},
      {"neg", [](Value a, Value, Value) { return -a; }, -x},
      {"pow", [](Value a, Value b, Value) { return pow(a, b); }, std::pow(x, y)},
      {"sqrt", [](Value a, Value, Value) { return sqrt(a); }, std::sqrt(x)},
      {"exp", [](Value a, Value, Value) { return exp(a); }, std::exp(x)},
      {"log", [](Value a, Value, Value) { return log(a); }, std::log(x)},
      {"sin", [](Value a, Value, Value) { return sin(a); }, std::sin(x)},
      {"cos", [](Value a, Value, Value) { return cos(a); }, std::cos(x)},
      {"tan", [](Value a, Value, Value) { return tan(a); }, std::tan(x)},
      {"asin", [](Value a, Value, Value) { return asin(a); }, std::asin(x)},
      {"acos", [](Value a, Value, Value) { return acos(a); }, std::acos(x)},
      {"atan", [](Value a, Value, Value) { return atan(a); }, std::atan(x)},
      {"tanh", [](Value a, Value, Value) { return tanh(a); }, std::tanh(x)},
      {"sigmoid", [](Value a, Value, Value) { return sigmoid(a); }, 1 / (1 + std::exp(-x))},
      {"softplus", [](Value a, Value, Value) { return softplus(a); }, std::log(1 + std::exp(x))},
      {"reciprocal", [](Value a, Value, Value) { return reciprocal(a); }, 1 / x},
      {"square", [](Value a, Value, Value) { return square(a); }, x * x},
      {"cube", [](Value a, Value, Value) { return cube(a); }, x * x * x},
      {"abs", [](Value a, Value b, Value) { return abs(a - b); }, y - x},
      {"relu", [](Value a, Value, Value) { return relu(a); }, x},
      {"atan2", [](Value a, Value b, Value) { return atan2(a, b - 1); }, std::atan2(x, y - 1)},
      {"min", [](Value a, Value b, Value) { return min(a, b); }, x},
      {"max", [](Value a, Value b, Value) { return max(a, b); }, y},
      {"clamp", [](Value a, Value, Value) { return clamp(a, 0, 1); }, x},
      // mod gives 0 to its divisor (FORMAT.md), so the divisor is a number here.
      {"mod", [](Value, Value b, Value c) { return mod(c, b.graph()->literal(0.7)); }, std::fmod(z, y)},
      {"sum", [](Value a, Value b, Value c) { Value v[] = {a, b, c}; return sum(v); }, x + y + z},
      {"mean", [](Value a, Value b, Value c) { Value v[] = {a, b, c}; return mean(v); }, (x + y + z) / 3},
      {"select", [](Value a, Value b, Value c) { return select(lt(a, b), b * c, a); }, y * z},
      {"sign", [](Value a, Value b, Value) { return sign(a - b) * a; }, -x},
      {"floor", [](Value, Value, Value c) { return floor(c) * c; }, z},
      {"ceil", [](Value a, Value, Value) { return ceil(a) * a; }, x},
      {"round", [](Value, Value, Value c) { return round(c) + c; }, 2 + z},
      {"eq", [](Value a, Value b, Value) { return eq(a, a) + eq(a, b); }, 1},
      {"ne", [](Value a, Value b, Value) { return ne(a, b); }, 1},
      {"le", [](Value a, Value b, Value) { return le(a, b) + gt(a, b) * 10 + ge(b, a) * 100; }, 101},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Graph g;
    Value a = g.param("x", x), b = g.param("y", y), cz = g.param("z", z);
    g.residual(c.f(a, b, cz));
    Evaluation e = evaluate(g);
    EXPECT_NEAR(e.residuals[0], c.want, 1e-14);
    expectGradientMatchesFiniteDifferences(g);
  }
}

TEST(ValueGraph, KinksFollowTheFormat) {
  Graph g;
  Value x = g.param("x", 0), a = g.param("a", 1), b = g.param("b", 1);
  g.residual(abs(x));             // abs'(0) = +1
  g.residual(relu(x));            // relu'(0) = 0
  g.residual(min(a, b));          // a tie gives 0 to both
  g.residual(max(a, b) * 10);
  g.residual(clamp(a, 1, 2) * 100);  // 0 at the bounds
  g.residual(pow(x, a) * 1000);     // PyTorch: 0 to the exponent where the base is 0
  Evaluation e = evaluate(g);
  EXPECT_EQ(e.gradient, (std::vector<double>{1 + 1000 * 1, 0, 0}));
  Graph s;
  Value c = s.param("c", 2), t = s.param("t", 3), f = s.param("f", 4);
  s.residual(select(c, t, f));  // only the chosen branch
  s.residual(sign(c) + floor(t) + ceil(f) + round(c));
  EXPECT_EQ(evaluate(s).gradient, (std::vector<double>{0, 1, 0}));
}

TEST(ValueGraph, PowOfTwoIsSquare) {
  Graph g;
  Value x = g.param("x", 3);
  Value p = pow(x, 2.0);
  EXPECT_EQ(g.node(p.id()).kind, OpKind::Square);
  EXPECT_EQ(g.node(pow(x, 3.0).id()).kind, OpKind::Pow);
}

TEST(ValueGraph, Eigmin3IsACustomOpWithItsDerivativeRule) {
  Graph g;
  auto c = g.params("c", std::vector<double>{2, 1, 0, 2, 1, 2});
  g.residual(eigmin3(c[0], c[1], c[2], c[3], c[4], c[5]));
  EXPECT_EQ(g.node(g.residuals()[0]).kind, OpKind::Custom);
  Evaluation e = evaluate(g);
  EXPECT_NEAR(e.residuals[0], 2 - std::sqrt(2.0), 1e-14);
  // v = (1, -√2, 1)/2: ∂λ/∂c_ii = v_i², ∂λ/∂c_ij = 2 v_i v_j.
  const double s = std::sqrt(2.0);
  std::vector<double> want = {0.25, 2 * 0.5 * (-s / 2), 2 * 0.25, 0.5, 2 * (-s / 2) * 0.5, 0.25};
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(e.gradient[i], want[i], 1e-12) << i;
  expectGradientMatchesFiniteDifferences(g);
  // Random symmetric matrices: λ against the characteristic polynomial, gradient against differences.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-2, 2);
  for (int k = 0; k < 20; ++k) {
    Graph r;
    std::vector<double> m(6);
    for (double& v : m) v = u(rng);
    auto cs = r.params("c", m);
    r.residual(eigmin3(cs[0], cs[1], cs[2], cs[3], cs[4], cs[5]));
    double l = evaluate(r).residuals[0];
    double a = m[0] - l, d = m[3] - l, f = m[5] - l;
    double det = a * (d * f - m[4] * m[4]) - m[1] * (m[1] * f - m[4] * m[2]) + m[2] * (m[1] * m[4] - d * m[2]);
    EXPECT_NEAR(det, 0, 1e-10);
    EXPECT_LE(l, std::min({m[0], m[3], m[5]}) + 1e-12);  // below every diagonal entry
    expectGradientMatchesFiniteDifferences(r, 1e-5);
  }
  // A multiple of the identity: λ = q with no division by zero.
  Graph id;
  auto ci = id.params("c", std::vector<double>{3, 0, 0, 3, 0, 3});
  id.residual(eigmin3(ci[0], ci[1], ci[2], ci[3], ci[4], ci[5]));
  EXPECT_EQ(evaluate(id).residuals[0], 3);
}

// eigmin3's derivative rule in IR (for the autodiff pass) gives the C++ rule's
// values on every target.
TEST(ValueGraph, Eigmin3DerivativeInIrMatchesTheReference) {
  const double mats[3][6] = {{2, 1, 0, 2, 1, 2}, {1.5, -0.3, 0.7, -2, 0.4, 0.9}, {3, 0, 0, 1, 0, 2}};
  for (const auto& mat : mats) {
    ir::Context ctx;
    ir::Module m(ctx);
    const ir::Type* t = ctx.f64();
    ir::Function* k = m.addFunction("k", ir::FunctionKind::Kernel,
                                    ctx.functionType({ctx.bufferType(t, ir::Space::Device, ir::Ownership::Write)}, {}));
    ir::Builder b(ctx, k->body());
    std::vector<ir::Value*> in;
    for (double v : mat) in.push_back(b.constFloat(t, v));
    const CustomOp& op = customOp(eigmin3Id());
    ASSERT_TRUE(op.lowerDerivative);
    ir::Value* lambda = op.lower(b, in, t);
    std::vector<ir::Value*> d = op.lowerDerivative(b, in, lambda, t);
    ASSERT_EQ(d.size(), 6u);
    for (unsigned i = 0; i < 7; ++i)
      b.create("store", {k->param(0), b.constInt(ctx.u32(), i), i < 6 ? d[i] : lambda});
    b.create("return");
    ASSERT_TRUE(ir::verify(m)) << ir::verify(m).error().message;
    std::vector<double> want(6);
    op.derivative(mat, 0, want);
    double v[3];
    want.push_back(eigmin3Value(mat, v));
    for (const std::string& target : test::targets()) {
      SCOPED_TRACE(target);
      auto dev = runtime::openDevice(target);
      ASSERT_TRUE(dev) << dev.error().message;
      auto out = eph::test::runKernelOn(**dev, m, "k", {1, 1, 1},
                                        {eph::test::KernelArg::ofBuffer(t, std::vector<interp::RtValue>(7, interp::RtValue::ofFloat(t, 0)))});
      ASSERT_TRUE(out) << out.error().message;
      for (size_t i = 0; i < 7; ++i) EXPECT_NEAR((*out)[0].elems[i].f, want[i], 1e-12) << i;
    }
  }
}

TEST(ValueGraph, VectorsAndGeometry) {
  Graph g;
  auto p = g.params("p", std::vector<double>{0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4});
  Vec3 a = vec<3>(p, 0), b = vec<3>(p, 3), c = vec<3>(p, 6), d = vec<3>(p, 9);
  auto val = [](Value v) { return v.data(); };
  EXPECT_DOUBLE_EQ(val(triangleArea(a, b, c)), 3);
  Vec3 n = triangleNormal(a, b, c);
  EXPECT_DOUBLE_EQ(val(n[2]), 1);
  EXPECT_DOUBLE_EQ(val(interiorAngle(a, b, c)), std::numbers::pi / 2);
  EXPECT_NEAR(val(interiorAngle(a, b, c) + interiorAngle(b, c, a) + interiorAngle(c, a, b)), std::numbers::pi, 1e-15);
  EXPECT_DOUBLE_EQ(val(dot(b, c)), 0);
  EXPECT_DOUBLE_EQ(val(magnitude(normalize(d))), 1);
  EXPECT_DOUBLE_EQ(val(cross(b, c)[2]), 6);
  EXPECT_DOUBLE_EQ(val(angle(b, d)), std::numbers::pi / 2);
  Vec2 u = {{p[3], p[7]}}, w = {{p[7], p[3]}};
  EXPECT_DOUBLE_EQ(val(cross(u, w)), 4 - 9);
  EXPECT_NEAR(val(angle(u, w)), std::atan2(5, 12), 1e-15);
  Vec4 q = {{p[3], p[7], p[11], p[0]}}, r = {{p[3], p[0], p[0], p[0]}};
  EXPECT_NEAR(val(angle(q, r)), std::acos(2 / std::sqrt(29.0)), 1e-15);
  // A right-angle fold across edge (a, b): triangles (a, b, c) in z = 0 and (b, a, d) in y = 0.
  EXPECT_NEAR(std::fabs(val(dihedralAngle(a, b, c, d))), std::numbers::pi / 2, 1e-15);
  // Flat: d mirrored to -y in the plane.
  auto flat = g.params("f", std::vector<double>{0, -3, 0});
  EXPECT_NEAR(val(dihedralAngle(a, b, c, vec<3>(flat))), 0, 1e-15);
  // A flat fan of four right angles has no angle defect; a cube corner has π/2.
  auto ring = g.params("ring", std::vector<double>{1, 0, 0, 0, 1, 0, -1, 0, 0, 0, -1, 0});
  std::vector<Vec3> fan = {vec<3>(ring, 0), vec<3>(ring, 3), vec<3>(ring, 6), vec<3>(ring, 9)};
  EXPECT_NEAR(val(angleDefect(a, fan)), 0, 1e-15);
  std::vector<Vec3> corner = {vec<3>(p, 3), vec<3>(p, 6), vec<3>(p, 9)};
  EXPECT_NEAR(val(angleDefect(a, corner)), std::numbers::pi / 2, 1e-15);
  g.residual(angleDefect(a, corner) + dihedralAngle(a, b, c, d) + triangleArea(a, b, d));
  expectGradientMatchesFiniteDifferences(g, 1e-6);
}

TEST(ValueGraph, CustomOpWithoutLoweringIsACompileErrorNamingIt) {
  CustomOp op;
  op.name = "twice_no_ir";
  op.arity = 1;
  op.forward = [](std::span<const double> in) { return 2 * in[0]; };
  op.derivative = [](std::span<const double>, double, std::span<double> d) { d[0] = 2; };
  uint32_t id = registerCustomOp(op);
  Graph g;
  Value x = g.param("x", 4);
  Value arg[] = {x};
  g.residual(x + 1);
  g.residual(g.custom(id, arg) + 1);
  EXPECT_EQ(evaluate(g).residuals[1], 9);  // the reference evaluates it
  EXPECT_EQ(evaluate(g).gradient[0], 3);
  ir::Context ctx;
  std::string error;
  EXPECT_EQ(lowerGraph(ctx, g, groupResiduals(g), {}, error), nullptr);
  EXPECT_EQ(error, "the op 'twice_no_ir' has no IR lowering (a custom op without `lower`), so residual 1 cannot be compiled");
  // In the .vg form it is a call like any other, and the same error.
  std::string diags;
  EXPECT_EQ(compileText(ctx, "param x = 4\nresidual twice_no_ir(x)\n", "t.vg", false, diags), nullptr);
  EXPECT_EQ(diags, "t.vg: error[E301]: the op 'twice_no_ir' has no IR lowering (a custom op without `lower`), so residual 0 cannot be compiled\n");
}

// Every op compiled on every target against the float64 reference (f64:
// 1e-12 relative).
TEST(ValueGraph, CompiledOpsMatchTheReferenceOnEveryTarget) {
  const std::string text =
      "param x[3] = 0.3 0.7 1.9\n"
      "const k = -1.25\n"
      "residual x[0] + x[1] * x[2] - x[0] / x[1]\n"
      "residual -x[0] + x[1] ^ x[2] + pow(x[2], 3)\n"
      "residual sqrt(x[0]) + exp(x[1]) + log(x[2])\n"
      "residual sin(x[0]) + cos(x[1]) + tan(x[2])\n"
      "residual asin(x[0]) + acos(x[1]) + atan(x[2]) + tanh(k)\n"
      "residual sigmoid(x[0]) + softplus(k) + softplus(40) + reciprocal(x[2]) + square(k) + cube(k)\n"
      "residual abs(k) + relu(k) + relu(x[1]) + sign(k) + sign(0) + floor(k) + ceil(k) + round(k) + round(2.5)\n"
      "residual atan2(x[0], k) + min(x[0], k) + max(x[1], k) + clamp(x[2], -1, 1.5) + clamp(k, -1, 1.5)\n"
      "residual mod(x[2], x[1]) + mod(k, x[0]) + sum(x[0], x[1], x[2], k) + mean(x[0], k)\n"
      "residual eq(x[0], x[0]) + ne(x[0], k) * 2 + lt(k, x[0]) * 4 + le(x[0], k) * 8 + gt(x[1], x[0]) * 16 + ge(k, k) * 32\n"
      "residual select(gt(x[0], k), x[1], x[2]) + select(0, x[1], x[2])\n"
      "residual eigmin3(x[0], x[1], k, x[2], 0.5, x[1]) + eigmin3(1, 0, 0, 1, 0, 1)\n";
  Graph g;
  ParseError err;
  ASSERT_TRUE(parse(text, g, err)) << err.message;
  Evaluation ref = evaluate(g);
  for (double r : ref.residuals) ASSERT_TRUE(std::isfinite(r));
  for (bool f32 : {false, true}) {
    ir::Context ctx;
    std::string diags;
    auto m = compileText(ctx, text, "ops.vg", f32, diags);
    ASSERT_TRUE(m) << diags;
    for (const std::string& target : test::targets()) {
      SCOPED_TRACE(target + (f32 ? " f32" : " f64"));
      auto dev = runtime::openDevice(target);
      ASSERT_TRUE(dev) << dev.error().message;
      eph::test::HostRun run = eph::test::runMainOn(**dev, *m);
      ASSERT_TRUE(run.results) << run.results.error().message;
      interp::BufferData* out = run.interp->memory().get((*run.results)[0].buffer);
      ASSERT_TRUE(out);
      ASSERT_EQ(out->elems.size(), ref.residuals.size());
      for (size_t i = 0; i < ref.residuals.size(); ++i)
        EXPECT_TRUE(close(out->elems[i].f, ref.residuals[i], f32 ? 2e-6 : 1e-12, f32 ? 2e-6 : 1e-14))
            << "residual " << i << ": " << out->elems[i].f << " vs " << ref.residuals[i];
    }
  }
}

// A chain of 20,000 nodes: evaluation, gradient, printing, parsing, grouping
// and lowering never recurse on the depth.
TEST(ValueGraph, ChainOfTwentyThousandNodes) {
  Graph g;
  Value x = g.param("x", 0.5);
  Value v = x;
  const int steps = 6700;  // three nodes a step (a literal, mul, add)
  for (int i = 0; i < steps; ++i) v = v * 0.999 + x;
  g.residual(v);
  ASSERT_GE(g.nodes().size(), 20000u);
  double want = 0.5, dwant = 1;
  for (int i = 0; i < steps; ++i) want = want * 0.999 + 0.5, dwant = dwant * 0.999 + 1;
  Evaluation e = evaluate(g);
  EXPECT_TRUE(close(e.residuals[0], want, 1e-12));
  EXPECT_TRUE(close(e.gradient[0], dwant, 1e-12));
  std::string text = print(g);
  Graph back;
  ParseError err;
  ASSERT_TRUE(parse(text, back, err)) << err.message;
  EXPECT_TRUE(g == back);
  EXPECT_EQ(print(back), text);
  EXPECT_EQ(groupResiduals(g).size(), 1u);
  ir::Context ctx;
  std::string diags;
  auto m = compileText(ctx, text, "chain.vg", false, diags);
  ASSERT_TRUE(m) << diags;
  for (const std::string& target : test::targets()) {
    SCOPED_TRACE(target);
    auto dev = runtime::openDevice(target);
    ASSERT_TRUE(dev) << dev.error().message;
    eph::test::HostRun run = eph::test::runMainOn(**dev, *m);
    ASSERT_TRUE(run.results) << run.results.error().message;
    EXPECT_TRUE(close(run.interp->memory().get((*run.results)[0].buffer)->elems[0].f, want, 1e-12));
  }
}

}  // namespace
}  // namespace eph::value
