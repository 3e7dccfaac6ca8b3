// The Value-graph demos (docs/value.md, "Demos"): the developable flow on
// icospheres at levels 0–2 on the host's reference evaluator and on interp,
// cpu and vulkan (energy down, the targets agree with the reference, the OBJ
// reads back), and the constraint sketch (every constraint to 1e-8 on every
// target, the .vg file is the program's graph).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "examples/value/Developable.h"
#include "examples/value/Sketch.h"
#include "frontends/value/Signature.h"
#include "frontends/value/Text.h"
#include "runtime/Device.h"

namespace eph::value::demo {
namespace {

// host (the reference evaluator), interp, and cpu and vulkan where this build
// and machine have them (vulkan always under EPH_REQUIRE_VULKAN=1).
std::vector<std::string> targets() {
  std::vector<std::string> out = {"host", "interp"};
  for (const std::string& t : runtime::availableTargets())
    if (t == "cpu") out.push_back(t);
  const char* req = std::getenv("EPH_REQUIRE_VULKAN");
  if ((req && std::string(req) == "1") || runtime::openDevice("vulkan")) out.push_back("vulkan");
  return out;
}

TEST(DevelopableDemo, IcosphereTopology) {
  for (int level = 0; level <= 3; ++level) {
    SCOPED_TRACE("level " + std::to_string(level));
    Mesh m = icosphere(level);
    size_t p = size_t(1) << (2 * level);
    EXPECT_EQ(m.vertices(), 10 * p + 2);
    EXPECT_EQ(m.faces.size(), 20 * p);
    EXPECT_EQ(edges(m).size(), 30 * p);
    auto rings = oneRings(m);
    size_t five = 0;
    for (size_t v = 0; v < rings.size(); ++v) {
      ASSERT_TRUE(rings[v].size() == 5 || rings[v].size() == 6) << v;
      five += rings[v].size() == 5;
      double r2 = 0;
      for (int k = 0; k < 3; ++k) r2 += m.xyz[3 * v + k] * m.xyz[3 * v + k];
      EXPECT_NEAR(r2, 1.0, 1e-14);
    }
    EXPECT_EQ(five, 12u);
    // Counter-clockwise seen from outside: every face normal points away from the centre.
    for (auto [a, b, c] : m.faces) {
      const double *A = &m.xyz[3 * a], *B = &m.xyz[3 * b], *C = &m.xyz[3 * c];
      double u[3], w[3];
      for (int k = 0; k < 3; ++k) u[k] = B[k] - A[k], w[k] = C[k] - A[k];
      double n[3] = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]};
      EXPECT_GT(n[0] * A[0] + n[1] * A[1] + n[2] * A[2], 0);
    }
  }
}

TEST(DevelopableDemo, ThreeSignaturesValenceFiveSixAndEdges) {
  Mesh m = icosphere(2);
  Graph g = developableGraph(m, Weights::Angle, 1.0);
  std::vector<Group> groups = groupResiduals(g);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].residuals.size(), 12u);  // vertex 0 is an icosahedron vertex: valence 5
  EXPECT_EQ(groups[0].slots(), 18u);
  EXPECT_EQ(groups[1].residuals.size(), 150u);
  EXPECT_EQ(groups[1].slots(), 21u);
  EXPECT_EQ(groups[2].residuals.size(), 480u);
  EXPECT_EQ(groups[2].slots(), 8u);
  EXPECT_EQ(groupResiduals(developableGraph(icosphere(0), Weights::Uniform, 1.0)).size(), 2u);
}

// 15 L-BFGS iterations at levels 0-2 on each target: the energy Σλ drops
// below 40% of the sphere's, and the positions and energy match the host's
// reference evaluator (lavapipe's float64 transcendentals differ from the
// host's in the last digits, so not exactly).
class DevelopableFlow : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(DevelopableFlow, EnergyDropsAndMatchesTheReference) {
  const auto [target, level] = GetParam();
  if (target == "vulkan" && !runtime::openDevice("vulkan")) FAIL() << "no Vulkan device (EPH_REQUIRE_VULKAN=1)";
  FlowOptions o;
  o.maxIterations = 15;
  o.target = "host";
  auto ref = runFlow(icosphere(level), o);
  ASSERT_TRUE(ref) << ref.error().message;
  o.target = target;
  auto r = runFlow(icosphere(level), o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->kernels, target == "host" ? 0u : level == 0 ? 2u : 3u);
  EXPECT_GT(r->energyBefore, 10.0);
  EXPECT_LT(r->energyAfter, 0.4 * r->energyBefore);
  EXPECT_GT(r->developableAfter, r->developableBefore);
  EXPECT_NEAR(r->energyBefore, ref->energyBefore, 1e-12 * ref->energyBefore);
  EXPECT_NEAR(r->energyAfter, ref->energyAfter, 1e-7 * ref->energyBefore);
  ASSERT_EQ(r->x.size(), ref->x.size());
  double worst = 0;
  for (size_t i = 0; i < r->x.size(); ++i) worst = std::max(worst, std::abs(r->x[i] - ref->x[i]));
  EXPECT_LT(worst, 1e-6);
  EXPECT_EQ(r->solve.iterations, ref->solve.iterations);
}

INSTANTIATE_TEST_SUITE_P(Targets, DevelopableFlow, ::testing::Combine(::testing::ValuesIn(targets()), ::testing::Values(0, 1, 2)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_level" + std::to_string(std::get<1>(info.param));
                         });

std::filesystem::path scratch(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("eph-value-demo-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

TEST(DevelopableDemo, ObjReadsBack) {
  Mesh m = icosphere(1);
  FlowOptions o;
  o.maxIterations = 10;
  o.target = "host";
  auto r = runFlow(m, o);
  ASSERT_TRUE(r) << r.error().message;
  std::string path = scratch("l1.obj").string();
  ASSERT_TRUE(writeObj(path, m, r->x));
  auto back = readObj(path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->vertices(), 42u);
  EXPECT_EQ(back->faces.size(), 80u);
  EXPECT_EQ(back->xyz, r->x);  // %.17g reads back exactly
  EXPECT_EQ(back->faces, m.faces);
  // A broken file: the error names the line.
  {
    std::ofstream bad(path);
    bad << "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n";
  }
  auto err = readObj(path);
  ASSERT_FALSE(err);
  EXPECT_EQ(err.error().message, path + ":4: vertex index '4' is out of range");
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(SketchDemo, EveryConstraintHoldsOnEveryTarget) {
  const double want[] = {0, 0, 4, 0, 4, 2, 0, 2, 0, 2, 1.5, 0};
  Sketch s = constraintSketch();
  ASSERT_EQ(s.labels.size(), s.g.residuals().size());
  for (const std::string& target : targets()) {
    SCOPED_TRACE(target);
    auto r = solveSketch(s, target);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->solve.converged) << stopReasonName(r->solve.reason);
    for (size_t i = 0; i < r->residuals.size(); ++i) EXPECT_LE(std::abs(r->residuals[i]), 1e-8) << s.labels[i];
    for (size_t i = 0; i < 12; ++i) EXPECT_NEAR(r->x[i], want[i], 1e-8) << i;
    // Six signatures: fix (x and y), a - b (horizontal and coincident), distance (all four:
    // the lengths are const leaves), perpendicular, parallel, on_line.
    if (target != "host") EXPECT_EQ(r->kernels, 6u);
  }
}

TEST(SketchDemo, TheVgFileIsTheProgramsGraph) {
  std::ifstream in(std::filesystem::path(EPH_SOURCE_DIR) / "examples" / "value" / "sketch.vg");
  std::stringstream text;
  text << in.rdbuf();
  Graph g;
  ParseError err;
  ASSERT_TRUE(parse(text.str(), g, err)) << err.message;
  EXPECT_TRUE(g == constraintSketch().g);
}

}  // namespace
}  // namespace eph::value::demo
