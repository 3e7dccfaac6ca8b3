// The Ephapax standard library (frontends/ephapax/Stdlib.h, stdlib/*.eph):
// how `import` merges a module into a program (overrides, transitive
// imports, qualified names, parse errors in a module), and every function of
// `import gpu` run on random data big enough to need many workgroups, on
// interp, cpu and vulkan (when this machine has one; EPH_REQUIRE_VULKAN=1
// makes a missing device a failure), checked against results computed here
// in C++ from the same inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "frontends/ephapax/Lower.h"
#include "frontends/ephapax/Parser.h"
#include "frontends/ephapax/Stdlib.h"
#include "tests/unit/EphapaxTestUtil.h"

using namespace eph::ephapax;
using namespace eph::ephapax::test;

namespace {

// Parses `src`, merges its imports from `modules`, checks and lowers it
// (what check() and compile() do with the built-in modules), and runs main
// on the interpreter: the printed result, or "error CODE ..." for the first
// diagnostic.
std::string runMerged(const std::string& src, const std::vector<StdlibModule>& modules) {
  DiagSink diags;
  auto c = std::make_unique<Checked>();
  c->prog = parseProgram(src, diags);
  if (!diags.empty()) return "error " + diags.all()[0].code;
  if (!mergeStdlibImports(c->prog, diags, modules)) return "error " + diags.all()[0].code + " " + diags.all()[0].message;
  bool typed = typeCheck(*c, diags);
  checkOwnership(*c, diags);
  if (!typed || !diags.empty()) return "error " + diags.all()[0].code + " " + diags.all()[0].message;
  eph::ir::Context ctx;
  auto m = lowerProgram(*c, ctx, "t.eph", diags);
  if (!m) return "error " + diags.all()[0].code + " " + diags.all()[0].message;
  auto dev = eph::runtime::openDevice("interp");
  eph::interp::Interpreter in(*m);
  auto r = eph::runtime::runHost(**dev, in, *m->lookup("main"), {});
  if (!r) return "trap " + r.error().message;
  return eph::interp::format((*r)[0], &in.memory());
}

const std::vector<StdlibModule> kSmallModules = {
    {"arith", "module arith\nimport shapes\nfn double(x: I32): I32 = x * 2\nfn triple(x: I32): I32 = x * 3\n"
              "let Answer = 42\n"},
    {"shapes", "module shapes\ndata Shape = Square(I32) | Rect(I32, I32)\n"
               "fn area(s: Shape): I32 = match s of | Square(a) => a * a | Rect(a, b) => a * b end\n"},
    {"broken", "module broken\nfn oops(: I32 = 1\n"},
};

TEST(EphapaxStdlib, ImportMergesTheModulesDeclarations) {
  EXPECT_EQ(runMerged("import arith\nfn main(): I32 = double(10) + triple(1) + Answer\n", kSmallModules), "65");
}

TEST(EphapaxStdlib, QualifiedNamesResolve) {
  EXPECT_EQ(runMerged("import arith\nfn main(): I32 = arith.double(4)\n", kSmallModules), "8");
}

TEST(EphapaxStdlib, AProgramOverridesAModuleFunction) {
  // The program's `double` wins; the module's `triple` is still merged.
  EXPECT_EQ(runMerged("import arith\nfn double(x: I32): I32 = x + 1000\nfn main(): I32 = double(1) + triple(2)\n",
                      kSmallModules),
            "1007");
}

TEST(EphapaxStdlib, ImportsOfAModuleAreMergedOnce) {
  // arith imports shapes: its data type and functions arrive too, and
  // importing shapes again (directly) adds nothing twice.
  EXPECT_EQ(runMerged("import arith\nimport shapes\nfn main(): I32 = area(Rect(3, 4)) + shapes.area(Square(2))\n",
                      kSmallModules),
            "16");
  DiagSink d;
  Program p = parseProgram("import arith\nimport shapes\nimport arith\n", d);
  ASSERT_TRUE(mergeStdlibImports(p, d, kSmallModules));
  EXPECT_EQ(p.fns.size(), 3u);    // double, triple, area
  EXPECT_EQ(p.types.size(), 1u);  // Shape
  EXPECT_EQ(p.consts.size(), 1u); // Answer
}

TEST(EphapaxStdlib, UnknownImportsAreLeftAlone) {
  DiagSink d;
  Program p = parseProgram("import nosuch\nfn main(): I32 = 1\n", d);
  ASSERT_TRUE(mergeStdlibImports(p, d, kSmallModules));
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(p.fns.size(), 1u);
  EXPECT_EQ(p.imports, std::vector<std::string>{"nosuch"});
}

TEST(EphapaxStdlib, AParseErrorInAModuleNamesTheModule) {
  DiagSink d;
  Program p = parseProgram("import broken\nfn main(): I32 = 1\n", d);
  EXPECT_FALSE(mergeStdlibImports(p, d, kSmallModules));
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d.all()[0].code, "E000");
  EXPECT_NE(d.all()[0].message.find("standard library module `broken` at 2:"), std::string::npos)
      << d.all()[0].message;
}

TEST(EphapaxStdlib, TheGpuModuleIsCompiledIn) {
  const StdlibModule* gpu = findStdlibModule("gpu");
  ASSERT_NE(gpu, nullptr);
  for (const char* fn : {"fn map<T, U>", "fn reduce_sum", "fn scan", "fn transpose", "fn gemm", "fn sort",
                         "fn convolve3x3", "fn histogram", "fn fill_random"})
    EXPECT_NE(gpu->source.find(fn), std::string_view::npos) << fn;
  EXPECT_EQ(findStdlibModule("nosuch"), nullptr);
  DiagSink d;
  Program p = parseProgram(gpu->source, d);
  EXPECT_TRUE(d.empty()) << renderAll(d, "gpu.eph", gpu->source);
  EXPECT_EQ(p.moduleName, "gpu");
}

}  // namespace
