// The shared Value-graph cases (tests/value/examples, the repository's copy of
// ../shared/valuegraph/examples): `ephc run NAME.vg --format=json` on every
// target must print NAME.json (float64: 1e-12 relative; kernels exactly), and
// within a loose tolerance with --precision=f32. `ephc lower` emits IR,
// SPIR-V and LLVM for each.
#include <gtest/gtest.h>

#include "frontends/Frontend.h"
#include "tests/unit/ValueTestUtil.h"

namespace fs = std::filesystem;
using namespace eph::value::test;

namespace {

std::vector<fs::path> cases() {
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator(examplesDir()))
    if (e.path().extension() == ".vg" && fs::exists(fs::path(e.path()).replace_extension(".json"))) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ValueExamples, RepositoryCopyMatchesTheSharedCases) {
  fs::path shared = fs::path(EPH_SOURCE_DIR) / ".." / "shared" / "valuegraph" / "examples";
  if (!fs::is_directory(shared)) GTEST_SKIP() << "no ../shared beside this checkout; the repository's copy is used alone";
  std::map<std::string, std::string> want, have;
  for (auto& e : fs::directory_iterator(shared))
    if (e.is_regular_file()) want[e.path().filename().string()] = readFile(e.path());
  for (auto& e : fs::directory_iterator(examplesDir()))
    if (e.is_regular_file()) have[e.path().filename().string()] = readFile(e.path());
  for (auto& [name, text] : want) {
    auto it = have.find(name);
    if (it == have.end()) ADD_FAILURE() << name << " is in ../shared but not in tests/value/examples: copy it";
    else EXPECT_EQ(it->second, text) << name << " differs from ../shared: copy it again";
  }
  for (auto& [name, text] : have)
    if (!want.count(name)) ADD_FAILURE() << name << " is in tests/value/examples but no longer in ../shared";
}

TEST(ValueExamples, RunMatchesTheExpectedJsonOnEveryTarget) {
  auto all = cases();
  ASSERT_GE(all.size(), 6u);
  for (const fs::path& vg : all) {
    Json want;
    ASSERT_TRUE(parseJson(readFile(fs::path(vg).replace_extension(".json")), want)) << vg;
    for (const std::string& target : targets()) {
      SCOPED_TRACE(vg.string() + " on " + target);
      Ephc r = ephc({"run", vg.string(), "--target=" + target, "--format=json"});
      ASSERT_EQ(r.status, 0) << r.err;
      Json have;
      ASSERT_TRUE(parseJson(r.out, have)) << r.out;
      EXPECT_EQ(compareReports(have, want, 1e-12, 0), "");
      // f32 kernels: the residuals and the gradient to f32 accuracy.
      Ephc f = ephc({"run", vg.string(), "--target=" + target, "--format=json", "--precision=f32"});
      ASSERT_EQ(f.status, 0) << f.err;
      Json single;
      ASSERT_TRUE(parseJson(f.out, single)) << f.out;
      EXPECT_EQ(compareReports(single, want, 1e-6, 1e-6), "");
    }
  }
}

TEST(ValueExamples, LowerEmitsEveryForm) {
  for (const fs::path& vg : cases()) {
    SCOPED_TRACE(vg.string());
    Ephc ir = ephc({"lower", vg.string(), "--emit=ir"});
    ASSERT_EQ(ir.status, 0) << ir.err;
    EXPECT_NE(ir.out.find("device @vg0.r("), std::string::npos) << ir.out;
    EXPECT_NE(ir.out.find("kernel @vg0("), std::string::npos);
    EXPECT_NE(ir.out.find("host @main() -> (buffer<f64, host, linear>, buffer<f64, host, linear>)"), std::string::npos);
    Ephc f32 = ephc({"lower", vg.string(), "--emit=ir", "--precision=f32"});
    ASSERT_EQ(f32.status, 0) << f32.err;
    EXPECT_NE(f32.out.find("host @main() -> (buffer<f32, host, linear>, buffer<f32, host, linear>)"), std::string::npos);
    EXPECT_EQ(f32.out.find("f64"), std::string::npos);
    for (const std::string& target : targets()) {
      if (target == "interp") continue;
      std::string emit = target == "cpu" ? "llvm" : "spvasm";
      Ephc r = ephc({"lower", vg.string(), "--emit=" + emit});
      EXPECT_EQ(r.status, 0) << emit << ": " << r.err;
      EXPECT_FALSE(r.out.empty());
    }
  }
}

TEST(ValueExamples, KernelCountIsTheNumberOfSignatures) {
  // c14 has four ops (four kernels); c15's three distances share one.
  Ephc r = ephc({"lower", (examplesDir() / "c14_kinks.vg").string(), "--emit=ir"});
  ASSERT_EQ(r.status, 0) << r.err;
  size_t kernels = 0, gradientKernels = 0;
  for (size_t at = 0; (at = r.out.find("\nkernel @", at)) != std::string::npos; ++at)
    ++(r.out.compare(r.out.find('(', at) - 2, 2, ".g") == 0 ? gradientKernels : kernels);
  EXPECT_EQ(kernels, 4u);
  EXPECT_EQ(gradientKernels, 4u);  // every signature reads a parameter
  r = ephc({"lower", (examplesDir() / "c15_distance_sum.vg").string(), "--emit=ir"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("kernel @vg1"), std::string::npos);
  size_t dispatches = 0;
  for (size_t at = 0; (at = r.out.find(" dispatch ", at)) != std::string::npos; ++at) ++dispatches;
  EXPECT_EQ(dispatches, 1u);  // one gradient kernel (it stores the residuals too) over the three instances
}

TEST(ValueExamples, TheFrontendIsFoundByExtension) {
  const eph::frontends::Frontend* f = eph::frontends::forFile("dir/problem.vg");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->name, "value");
  EXPECT_TRUE(f->formatRun);
  EXPECT_EQ(eph::frontends::forFile("problem.vgx"), nullptr);
  // A parse error through the seam: rendered, no module.
  eph::ir::Context ctx;
  std::string diags;
  EXPECT_FALSE(f->compile(ctx, "param a = 1\nresidual a +\n", "p.vg", {}, {}, diags));
  EXPECT_EQ(diags, "p.vg:2:13: error[E300]: expected an expression, found the end of the line\n  residual a +\n              ^\n");
}

TEST(ValueExamples, OptionsAreChecked) {
  std::string vg = (examplesDir() / "c01_tanh.vg").string();
  Ephc r = ephc({"run", vg, "--precision=f16"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "ephc: run: --precision wants 'f64' or 'f32', got 'f16'\n");
  r = ephc({"run", vg, "--format=yaml"});
  EXPECT_EQ(r.err, "ephc: run: --format wants 'text' or 'json', got 'yaml'\n");
  r = ephc({"run", vg, "--target=interp"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "residuals: 0.999329299739067\nsum: 0.999329299739067\ncost: 0.49932952465848707\n"
            "gradient: a=-0.0040228520490775965 b=0.002681901366051731 c=0.0013409506830258655\nkernels: 1\n");
}

}  // namespace
