// `ephc solve F.vg` and GraphProblem (frontends/value/solve/GraphProblem.h):
// s01_linear reaches x = 5, y = 3 with lm and gn on the host and with the
// compiled kernels on every target, a curve fit and an L-BFGS energy agree
// between the host and every target (f64 and f32), and the host Jacobian rows
// match central differences and, summed, the reference gradient.
#include <gtest/gtest.h>

#include "frontends/value/Eval.h"
#include "frontends/value/Text.h"
#include "frontends/value/solve/GraphProblem.h"
#include "tests/unit/ValueTestUtil.h"

namespace eph::value {
namespace {

using test::close;

TEST(ValueGraphSolve, LinearCaseReachesItsSolution) {
  std::string vg = (test::examplesDir() / "s01_linear.vg").string();
  std::vector<std::string> where = {""};
  for (const std::string& t : test::targets()) where.push_back("--target=" + t);
  for (const std::string& target : where)
  for (const char* method : {"lm", "gn"}) {
    SCOPED_TRACE(target + " " + method);
    std::vector<std::string> argv = {"solve", vg, std::string("--method=") + method, "--format=json"};
    if (!target.empty()) argv.push_back(target);
    test::Ephc r = test::ephc(argv);
    ASSERT_EQ(r.status, 0) << r.err;
    test::Json have;
    ASSERT_TRUE(test::parseJson(r.out, have)) << r.out;
    EXPECT_EQ(have["converged"].number, 1) << r.out;
    EXPECT_NEAR(have["params"]["x"].number, 5, 1e-4) << r.out;
    EXPECT_NEAR(have["params"]["y"].number, 3, 1e-4) << r.out;
    EXPECT_NE(r.err.find("iter 1: cost "), std::string::npos) << r.err;
  }
}

// The same problems solved from the device's residuals and Jacobian (the
// kernels' .vjp per instance) as from the host's reference evaluator.
TEST(ValueGraphSolve, DeviceKernelsGiveTheHostsSolution) {
  std::filesystem::path inputs = std::filesystem::path(EPH_SOURCE_DIR) / "tests" / "lit" / "value" / "Inputs";
  struct Case { const char* file; const char* method; std::map<std::string, double> want; };
  for (const Case& c : {Case{"fit.vg", "lm", {{"a", 2}, {"b", -0.7}}}, Case{"fit.vg", "gn", {{"a", 2}, {"b", -0.7}}},
                        Case{"energy.vg", "lbfgs", {{"x", 1.6}, {"y", -2.4}}}})
    for (const std::string& target : test::targets())
      for (const char* precision : {"f64", "f32"}) {
        SCOPED_TRACE(std::string(c.file) + " " + c.method + " on " + target + " " + precision);
        test::Ephc r = test::ephc({"solve", (inputs / c.file).string(), std::string("--method=") + c.method,
                                   "--target=" + target, std::string("--precision=") + precision, "--format=json"});
        ASSERT_EQ(r.status, 0) << r.out << r.err;
        test::Json have;
        ASSERT_TRUE(test::parseJson(r.out, have)) << r.out;
        for (auto& [name, value] : c.want)
          EXPECT_NEAR(have["params"][name].number, value, std::string(precision) == "f64" ? 1e-6 : 1e-4) << name << ": " << r.out;
      }
}

TEST(ValueGraphSolve, LbfgsMinimisesTheSumOfResiduals) {
  Graph g;
  ParseError err;
  // (x - 1)² + (y + 2)² + 0.5·x·y: least at x = 1.6, y = -2.4.
  ASSERT_TRUE(parse("param x = 0\nparam y = 0\nresidual square(x - 1)\nresidual square(y + 2)\nresidual 0.5 * x * y\n", g, err));
  GraphProblem p(g);
  std::vector<double> x = p.initial();
  SolverOptions o;
  o.method = Method::Lbfgs;
  auto result = solve(p, x, o);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_TRUE(result->converged);
  EXPECT_NEAR(x[0], 1.6, 1e-5);
  EXPECT_NEAR(x[1], -2.4, 1e-5);
}

TEST(ValueGraphSolve, JacobianRowsMatchDifferencesAndTheGradient) {
  Graph g;
  ParseError err;
  ASSERT_TRUE(parse("param p[3] = 0.3 -0.7 1.1\nconst c = 2\nlet s = p[0] * p[1]\n"
                    "residual tanh(s + p[2]) * c\nresidual s + s\nresidual c * c\nresidual atan2(p[2], p[0] + 3) - p[1]\n",
                    g, err)) << err.message;
  GraphProblem p(g);
  std::vector<double> x = p.initial();
  auto check = checkJacobian(p, x);
  ASSERT_TRUE(check) << check.error().message;
  EXPECT_LT(check->maxRelError, 1e-7);
  std::vector<double> r(p.numResiduals());
  SparseRows J;
  ASSERT_TRUE(p.evaluate(x, r, &J));
  std::vector<double> ones(r.size(), 1.0), grad(x.size());
  J.multiplyTransposed(ones, grad);
  Evaluation ref = evaluate(g);
  for (size_t i = 0; i < grad.size(); ++i) EXPECT_TRUE(close(grad[i], ref.gradient[i], 1e-14, 1e-15)) << i;
  for (size_t i = 0; i < r.size(); ++i) EXPECT_EQ(r[i], ref.residuals[i]);
  EXPECT_EQ(J.rowStart[3] - J.rowStart[2], 0u);  // c * c reads no parameter
}

TEST(ValueGraphSolve, BadOptionsAndFiles) {
  std::string vg = (test::examplesDir() / "s01_linear.vg").string();
  test::Ephc r = test::ephc({"solve", vg, "--method=newton"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "ephc: solve: --method wants 'lm', 'gn' or 'lbfgs', got 'newton'\n");
  r = test::ephc({"solve", vg, "--max-iterations=-3"});
  EXPECT_EQ(r.err, "ephc: solve: --max-iterations wants a count from 0, got '-3'\n");
  r = test::ephc({"solve", vg, "--max-iterations=1", "--method=lbfgs"});
  EXPECT_EQ(r.status, 2) << r.out << r.err;  // Σr = x + y − 8 has no minimum: not converged
  EXPECT_NE(r.out.find("not converged"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace eph::value
