// The frontend seam (frontends/Frontend.h): frontends are found by the
// input's extension, declare their options, check option values, and
// compile through one call to the same module their own API gives.
#include <gtest/gtest.h>

#include <sstream>

#include "frontends/Frontend.h"
#include "frontends/ephapax/Frontend.h"
#include "ir/Printer.h"

namespace eph::frontends {
namespace {

TEST(FrontendSeam, FrontendsAreFoundByExtension) {
  const Frontend* f = forFile("dir/prog.eph");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->name, "ephapax");
  EXPECT_EQ(forFile("prog.eir"), nullptr);   // IR needs no frontend
  EXPECT_EQ(forFile("prog.ephx"), nullptr);
  EXPECT_EQ(forFile(".eph"), nullptr);       // no name, only an extension
  for (const Frontend& each : all()) {
    EXPECT_FALSE(each.name.empty());
    EXPECT_FALSE(each.extensions.empty()) << each.name;
    EXPECT_TRUE(each.compile) << each.name;
    EXPECT_FALSE(each.errorCodes.empty()) << each.name;  // docs/errors.md lists them (ErrorCodesTest)
  }
}

TEST(FrontendSeam, OptionsAreDeclaredAndChecked) {
  const Frontend* f = forFile("p.eph");
  ASSERT_TRUE(f);
  std::vector<std::string_view> flags;
  for (const Option& o : f->options) flags.push_back(o.flag);
  EXPECT_EQ(flags, (std::vector<std::string_view>{"--mode", "--no-frontend-check"}));
  EXPECT_EQ(f->checkOptions({{"--mode", "affine"}}), "");
  EXPECT_EQ(f->checkOptions({{"--mode", "relevant"}}), "--mode wants 'linear' or 'affine', got 'relevant'");
}

TEST(FrontendSeam, CompilesLikeTheFrontendsOwnApi) {
  const std::string src = "fn main() -> I32 { let! b = h2d([4, 5, 6]); let xs = d2h(b); xs[0] + xs[2] }\n";
  const Frontend* f = forFile("p.eph");
  ASSERT_TRUE(f);
  ir::Context a, b;
  std::string diagnostics;
  auto viaSeam = f->compile(a, src, "p.eph", {}, {}, diagnostics);
  ASSERT_TRUE(viaSeam) << diagnostics;
  EXPECT_EQ(diagnostics, "");
  ephapax::DiagSink diags;
  auto direct = ephapax::compile(b, src, "p.eph", diags);
  ASSERT_TRUE(direct);
  EXPECT_EQ(ir::print(*viaSeam), ir::print(*direct));

  // A leak: rendered diagnostics and no module; with --mode affine it compiles.
  const std::string leak = "fn main() -> I32 { let! b = h2d([4, 5, 6]); 1 }\n";
  diagnostics.clear();
  EXPECT_FALSE(f->compile(a, leak, "leak.eph", {}, {}, diagnostics));
  EXPECT_EQ(diagnostics.rfind("leak.eph:1:20: error[E001]: `let!` binding `b` is never consumed\n", 0), 0u) << diagnostics;
  diagnostics.clear();
  EXPECT_TRUE(f->compile(a, leak, "leak.eph", {{"--mode", "affine"}}, {}, diagnostics)) << diagnostics;
  // --no-frontend-check lowers it anyway, silently (the IR linearity pass reports it).
  diagnostics.clear();
  EXPECT_TRUE(f->compile(a, leak, "leak.eph", {{"--no-frontend-check", ""}}, {}, diagnostics));
  EXPECT_EQ(diagnostics, "");
}

// The passes a frontend runs go through the pass manager with the options
// given (ephc's --print-after, --time-passes).
TEST(FrontendSeam, PipelineOptionsReachTheFrontendsPasses) {
  const Frontend* f = forFile("p.eph");
  ASSERT_TRUE(f);
  ir::Context ctx;
  std::ostringstream out;
  std::string diagnostics;
  passes::PipelineOptions opts{.printAfter = {"monomorphize"}, .timePasses = true, .out = &out};
  ASSERT_TRUE(f->compile(ctx, "fn main() -> I32 { 1 }\n", "p.eph", {}, opts, diagnostics)) << diagnostics;
  std::string text = out.str();
  EXPECT_NE(text.find("// -----// IR after monomorphize //----- //\nhost @main() -> i32 {"), std::string::npos) << text;
  EXPECT_EQ(text.find("IR after linearity"), std::string::npos) << text;
  size_t mono = text.find("\nmonomorphize "), lin = text.find("\nlinearity ");
  EXPECT_NE(mono, std::string::npos) << text;
  EXPECT_NE(lin, std::string::npos) << text;
  EXPECT_LT(mono, lin) << text;
}

}  // namespace
}  // namespace eph::frontends
