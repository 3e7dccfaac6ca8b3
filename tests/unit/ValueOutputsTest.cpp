// The derivative outputs of a compiled Value graph (docs/value.md,
// "Derivative outputs"; frontends/value/Compiled.h): the gradient of Σr, the
// gradient of ½Σr² (Jᵀr), the sparse Jacobian rows and JᵀJ, in atomic and
// deterministic mode, on every target in f64 and f32, against the float64
// reference evaluator (Eval.h, GraphProblem's rows) and finite differences;
// the deterministic mode bit-identical from run to run and for any cpu thread
// count, and equal to the fixed-order sum it documents.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "frontends/value/Compiled.h"
#include "frontends/value/Eval.h"
#include "frontends/value/Text.h"
#include "frontends/value/solve/GraphProblem.h"
#include "tests/unit/ValueRandomGraph.h"
#include "tests/unit/ValueTestUtil.h"

namespace eph::value {
namespace {

using test::close;

LowerOptions allOutputs(bool f32, bool deterministic) {
  LowerOptions o;
  o.f32 = f32;
  o.deterministic = deterministic;
  o.outputs = {.gradient = true, .costGradient = true, .jacobian = true, .normal = true};
  return o;
}

DeviceOutputs runOn(const std::string& target, const Graph& g, const LowerOptions& o) {
  auto c = CompiledGraph::compile(g, o);
  EXPECT_TRUE(c) << c.error().message;
  if (!c) return {};
  auto dev = runtime::openDevice(target);
  EXPECT_TRUE(dev) << dev.error().message;
  if (!dev) return {};
  auto out = (*c)->run(**dev, (*c)->initial());
  EXPECT_TRUE(out) << out.error().message;
  return out ? *out : DeviceOutputs{};
}

// The float64 reference: the Jacobian as a dense matrix (from GraphProblem's
// rows, the reference evaluator's reverse sweeps) and the set of columns each
// residual reads.
struct Reference {
  Evaluation eval;
  size_t m = 0, n = 0;
  std::vector<double> J;  // m × n
  std::vector<std::set<uint32_t>> pattern;
  double j(size_t r, size_t c) const { return J[r * n + c]; }
};

Reference reference(const Graph& g) {
  Reference ref;
  ref.eval = evaluate(g);
  GraphProblem p(g);
  ref.m = p.numResiduals(), ref.n = p.numParams();
  std::vector<double> r(ref.m);
  SparseRows rows;
  EXPECT_TRUE(p.evaluate(p.initial(), r, &rows));
  ref.J.assign(ref.m * ref.n, 0);
  ref.pattern.resize(ref.m);
  for (size_t i = 0; i < ref.m; ++i)
    for (size_t e = rows.rowStart[i]; e < rows.rowStart[i + 1]; ++e)
      ref.J[i * ref.n + rows.cols[e]] = rows.vals[e], ref.pattern[i].insert(rows.cols[e]);
  return ref;
}

// Compares every output with the reference; tolerances by precision.
void expectMatches(const DeviceOutputs& have, const Reference& ref, bool f32) {
  const double rel = f32 ? 1e-4 : 1e-10, abs = f32 ? 1e-4 : 1e-12;
  ASSERT_EQ(have.residuals.size(), ref.m);
  for (size_t i = 0; i < ref.m; ++i) EXPECT_TRUE(close(have.residuals[i], ref.eval.residuals[i], rel, abs)) << "r" << i;
  ASSERT_EQ(have.gradient.size(), ref.n);
  ASSERT_EQ(have.costGradient.size(), ref.n);
  for (size_t c = 0; c < ref.n; ++c) {
    double jtr = 0;
    for (size_t i = 0; i < ref.m; ++i) jtr += ref.j(i, c) * ref.eval.residuals[i];
    EXPECT_TRUE(close(have.gradient[c], ref.eval.gradient[c], rel, abs)) << "grad " << c;
    EXPECT_TRUE(close(have.costGradient[c], jtr, rel, abs)) << "Jᵀr " << c << ": " << have.costGradient[c] << " vs " << jtr;
  }
  // The Jacobian: the reference's pattern row by row (columns increasing), its values.
  const SparseMatrix& J = have.jacobian;
  ASSERT_EQ(J.numRows, ref.m);
  ASSERT_EQ(J.numCols, ref.n);
  ASSERT_EQ(J.rowStart.size(), ref.m + 1);
  for (size_t i = 0; i < ref.m; ++i) {
    std::vector<uint32_t> cols(J.cols.begin() + J.rowStart[i], J.cols.begin() + J.rowStart[i + 1]);
    EXPECT_EQ(cols, std::vector<uint32_t>(ref.pattern[i].begin(), ref.pattern[i].end())) << "row " << i;
    for (size_t c = 0; c < ref.n; ++c)
      EXPECT_TRUE(close(J.at(i, uint32_t(c)), ref.j(i, c), rel, abs)) << "J(" << i << ", " << c << ")";
  }
  // JᵀJ: the pattern is every pair of columns a row reads; the values the dense product.
  const SparseMatrix& N = have.normal;
  ASSERT_EQ(N.numRows, ref.n);
  ASSERT_EQ(N.rowStart.size(), ref.n + 1);
  std::vector<std::set<uint32_t>> want(ref.n);
  for (const auto& row : ref.pattern)
    for (uint32_t a : row) want[a].insert(row.begin(), row.end());
  for (size_t a = 0; a < ref.n; ++a) {
    std::vector<uint32_t> cols(N.cols.begin() + N.rowStart[a], N.cols.begin() + N.rowStart[a + 1]);
    EXPECT_EQ(cols, std::vector<uint32_t>(want[a].begin(), want[a].end())) << "JᵀJ row " << a;
    for (size_t b = 0; b < ref.n; ++b) {
      double jtj = 0;
      for (size_t i = 0; i < ref.m; ++i) jtj += ref.j(i, a) * ref.j(i, b);
      EXPECT_TRUE(close(N.at(a, uint32_t(b)), jtj, rel, abs * std::max(1.0, std::fabs(jtj))))
          << "JᵀJ(" << a << ", " << b << "): " << N.at(a, uint32_t(b)) << " vs " << jtj;
    }
  }
}

TEST(ValueOutputs, RandomGraphsMatchTheReferenceOnEveryTarget) {
  std::mt19937 rng(57);
  for (int i = 0; i < 5; ++i) {
    Graph g = test::smoothGraph(rng);
    Reference ref = reference(g);
    for (const std::string& target : test::targets())
      for (bool f32 : {false, true})
        for (bool det : {false, true}) {
          SCOPED_TRACE("graph " + std::to_string(i) + " on " + target + (f32 ? " f32" : " f64") +
                       (det ? " deterministic" : " atomic") + ":\n" + print(g));
          expectMatches(runOn(target, g, allOutputs(f32, det)), ref, f32);
        }
  }
}

TEST(ValueOutputs, CostGradientAndJacobianMatchFiniteDifferences) {
  // Central differences of ½Σr² and of each residual, in float64, against the
  // compiled f64 kernels' Jᵀr and Jacobian.
  std::mt19937 rng(91);
  for (int i = 0; i < 4; ++i) {
    Graph g = test::smoothGraph(rng);
    std::vector<NodeId> leaves = gradientLeaves(g);
    const double h = 1e-6;
    std::vector<double> dcost(leaves.size());
    std::vector<std::vector<double>> dr(leaves.size());
    for (size_t c = 0; c < leaves.size(); ++c) {
      double x = g.node(leaves[c]).value;
      g.setLeaf(leaves[c], x + h);
      Evaluation up = evaluate(g);
      g.setLeaf(leaves[c], x - h);
      Evaluation down = evaluate(g);
      g.setLeaf(leaves[c], x);
      dcost[c] = (up.cost - down.cost) / (2 * h);
      for (size_t r = 0; r < up.residuals.size(); ++r) dr[c].push_back((up.residuals[r] - down.residuals[r]) / (2 * h));
    }
    for (const std::string& target : test::targets()) {
      SCOPED_TRACE("graph " + std::to_string(i) + " on " + target + ":\n" + print(g));
      DeviceOutputs have = runOn(target, g, allOutputs(false, true));
      ASSERT_EQ(have.costGradient.size(), leaves.size());
      for (size_t c = 0; c < leaves.size(); ++c) {
        EXPECT_TRUE(close(have.costGradient[c], dcost[c], 1e-6, 1e-6)) << c << ": " << have.costGradient[c] << " vs " << dcost[c];
        for (size_t r = 0; r < dr[c].size(); ++r)
          EXPECT_TRUE(close(have.jacobian.at(r, uint32_t(c)), dr[c][r], 1e-6, 1e-6)) << "J(" << r << ", " << c << ")";
      }
    }
  }
}

// Many residuals over few parameters, values of many magnitudes: the order in
// which a parameter's contributions are added changes the rounding.
Graph sharedParameters(int residuals) {
  Graph g;
  const std::vector<double> pv = {0.7, -1.3, 2.1, 0.4};
  std::vector<Value> p = g.params("p", pv);
  std::vector<double> cv;
  for (int i = 0; i < residuals; ++i) cv.push_back(std::ldexp(1.0 + 0.37 * (i % 11), (i % 23) - 11));
  std::vector<Value> c = g.constants("c", cv);
  for (int i = 0; i < residuals; ++i) {
    Value a = p[i % 4], b = p[(i / 4) % 4 == i % 4 ? (i + 1) % 4 : (i / 4) % 4];
    g.residual(c[i] * sin(a * b) + a * c[(i * 7) % residuals]);
  }
  return g;
}

bool sameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}
void expectSameBits(const DeviceOutputs& a, const DeviceOutputs& b) {
  EXPECT_TRUE(sameBits(a.residuals, b.residuals));
  EXPECT_TRUE(sameBits(a.gradient, b.gradient));
  EXPECT_TRUE(sameBits(a.costGradient, b.costGradient));
  EXPECT_TRUE(sameBits(a.jacobian.values, b.jacobian.values));
  EXPECT_TRUE(sameBits(a.normal.values, b.normal.values));
}

TEST(ValueDeterministic, BitIdenticalAcrossRunsAndCpuThreadCounts) {
  Graph g = sharedParameters(3000);
  Reference ref = reference(g);
  for (const std::string& target : test::targets())
    for (bool f32 : {false, true}) {
      SCOPED_TRACE(target + (f32 ? " f32" : " f64"));
      DeviceOutputs first = runOn(target, g, allOutputs(f32, true));
      expectMatches(first, ref, f32);
      expectSameBits(first, runOn(target, g, allOutputs(f32, true)));
      // Equal to the atomic mode within rounding.
      DeviceOutputs atomic = runOn(target, g, allOutputs(f32, false));
      for (size_t c = 0; c < ref.n; ++c) {
        EXPECT_TRUE(close(first.gradient[c], atomic.gradient[c], f32 ? 1e-4 : 1e-12));
        EXPECT_TRUE(close(first.costGradient[c], atomic.costGradient[c], f32 ? 1e-4 : 1e-12));
      }
      for (size_t e = 0; e < first.normal.values.size(); ++e)
        EXPECT_TRUE(close(first.normal.values[e], atomic.normal.values[e], f32 ? 1e-4 : 1e-12));
      if (target != "cpu") continue;
      for (const char* threads : {"1", "3", "8"}) {
        SCOPED_TRACE(std::string("EPH_THREADS=") + threads);
        setenv("EPH_THREADS", threads, 1);
        DeviceOutputs again = runOn(target, g, allOutputs(f32, true));
        unsetenv("EPH_THREADS");
        expectSameBits(first, again);
      }
    }
}

TEST(ValueDeterministic, SumsEachParametersContributionsInLayoutOrder) {
  // What the mode promises: gradient[p] is 0 + J[s0] + J[s1] + ... over
  // DerivativeLayout::gradientSources[p], and JᵀJ's entries likewise over the
  // pair products; checked bit for bit against the Jacobian the same run
  // returns (interp, f64: the same vjp computes both).
  Graph g = sharedParameters(500);
  auto c = CompiledGraph::compile(g, allOutputs(false, true));
  ASSERT_TRUE(c) << c.error().message;
  auto dev = runtime::openDevice("interp");
  ASSERT_TRUE(dev);
  auto out = (*c)->run(**dev, (*c)->initial());
  ASSERT_TRUE(out) << out.error().message;
  const DerivativeLayout& L = (*c)->layout();
  std::vector<double> jac(L.jacobianOffset.back());  // back in layout order
  for (size_t e = 0; e < L.jacobianValue.size(); ++e) jac[L.jacobianValue[e]] = out->jacobian.values[e];
  for (size_t p = 0; p < L.numParams; ++p) {
    double s = 0;
    for (uint32_t k = L.gradientSources.start[p]; k < L.gradientSources.start[p + 1]; ++k) s += jac[L.gradientSources.index[k]];
    EXPECT_EQ(out->gradient[p], s) << p;
  }
  // Pair contributions from the Jacobian rows in the same (signature, instance, a ≤ b) order.
  std::vector<double> parts;
  std::vector<Group> groups = groupResiduals(g);
  for (size_t k = 0; k < groups.size(); ++k) {
    uint32_t t = trainableSlots(groups[k]);
    for (size_t i = 0; i < groups[k].residuals.size(); ++i)
      for (uint32_t a = 0; a < t; ++a)
        for (uint32_t b = a; b < t; ++b) {
          size_t at = L.jacobianOffset[k] + i * t;
          parts.push_back(jac[at + a] * jac[at + b]);
        }
  }
  ASSERT_EQ(parts.size(), L.pairOffset.back());
  for (size_t e = 0; e < L.normal.index.size(); ++e) {
    double s = 0;
    for (uint32_t k = L.normalSources.start[e]; k < L.normalSources.start[e + 1]; ++k) s += parts[L.normalSources.index[k]];
    EXPECT_EQ(out->normal.values[e], s) << e;
  }
}

TEST(ValueDeterministic, EphcRunMatchesTheExamples) {
  // `ephc run --deterministic` prints the same report (FORMAT.md's JSON).
  for (const auto& e : std::filesystem::directory_iterator(test::examplesDir())) {
    std::filesystem::path json = std::filesystem::path(e.path()).replace_extension(".json");
    if (e.path().extension() != ".vg" || !std::filesystem::exists(json)) continue;
    test::Json want;
    ASSERT_TRUE(test::parseJson(test::readFile(json), want));
    for (const std::string& target : test::targets()) {
      SCOPED_TRACE(e.path().string() + " on " + target);
      test::Ephc r = test::ephc({"run", e.path().string(), "--target=" + target, "--format=json", "--deterministic"});
      ASSERT_EQ(r.status, 0) << r.err;
      test::Json have;
      ASSERT_TRUE(test::parseJson(r.out, have)) << r.out;
      EXPECT_EQ(test::compareReports(have, want, 1e-12, 0), "");
    }
  }
}

TEST(ValueOutputs, NoParametersNoResidualsAndWrongSizes) {
  for (const char* text : {"const c = 2\nresidual c * c\n", "param a = 1\n", "param a = 1\nparam b = 2\nresidual a * a\n"}) {
    Graph g;
    ParseError err;
    ASSERT_TRUE(parse(text, g, err)) << text;
    Reference ref = reference(g);
    for (const std::string& target : test::targets())
      for (bool det : {false, true}) {
        SCOPED_TRACE(std::string(text) + " on " + target);
        expectMatches(runOn(target, g, allOutputs(false, det)), ref, false);
      }
  }
  Graph g;
  ParseError err;
  ASSERT_TRUE(parse("param a = 1\nresidual a\n", g, err));
  auto c = CompiledGraph::compile(g, allOutputs(false, false));
  ASSERT_TRUE(c);
  auto dev = runtime::openDevice("interp");
  ASSERT_TRUE(dev);
  std::vector<double> x = {1, 2};
  auto out = (*c)->run(**dev, x);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().message, "the graph has 1 parameters, got 2 values");
}

}  // namespace
}  // namespace eph::value
