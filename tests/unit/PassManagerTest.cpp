// The pass manager: pipeline parsing, the registry, verification after each
// pass, errors that stop the pipeline, --print-after output, timing, and
// plugin loading errors.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "ir/Builder.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "passes/PassManager.h"

using namespace eph;

namespace {

const char* kModule = R"(host @f(%x: i32) -> i32 {
  %two = const {value = 2} : i32
  %three = const {value = 3} : i32
  %six = mul %two, %three : i32
  %r = add %x, %six : i32
  return %r
}
)";

std::unique_ptr<ir::Module> parse(ir::Context& ctx, const char* text = kModule) {
  auto m = ir::parseModule(ctx, text, "test.eir");
  EXPECT_TRUE(m) << (m ? "" : m.error().str());
  return m ? std::move(*m) : nullptr;
}

// Test passes, registered once under names no built-in uses.
struct TestPasses {
  static inline int counterRuns = 0;
  TestPasses() {
    auto& r = passes::PassRegistry::get();
    // Leaves the module invalid: the function's `return` goes away.
    r.add({"test-break-ir", "erase every return", [](ir::Module& m, passes::Diagnostics&) {
             for (auto& fn : m.functions())
               if (ir::Op* t = fn->body().terminator()) t->erase();
             return true;
           }});
    // Reports two errors and changes nothing.
    r.add({"test-fail", "report two errors", [](ir::Module& m, passes::Diagnostics& d) {
             d.error(m.functions()[0]->loc(), "first problem");
             d.error({}, "second problem");
             return false;
           }});
    r.add({"test-count", "count runs", [](ir::Module&, passes::Diagnostics&) {
             ++counterRuns;
             return false;
           }});
  }
};
TestPasses& testPasses() {
  static TestPasses p;
  return p;
}

}  // namespace

TEST(PassManager, BuiltinsAreRegisteredWithSummaries) {
  for (const char* name : {"canonicalize", "cse", "dce", "inline", "linearity"}) {
    const passes::Pass* p = passes::PassRegistry::get().lookup(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_FALSE(p->summary.empty()) << name;
  }
  EXPECT_EQ(passes::PassRegistry::get().lookup("nope"), nullptr);
}

TEST(PassManager, RegistryRefusesATakenName) {
  EXPECT_FALSE(passes::PassRegistry::get().add({"cse", "again", nullptr}));
  EXPECT_FALSE(passes::PassRegistry::get().add({"", "nameless", nullptr}));
}

TEST(PassManager, ParsesAPipelineWithWhitespace) {
  auto pm = passes::PassManager::parse(" canonicalize , cse,\tdce ");
  ASSERT_TRUE(pm);
  ASSERT_EQ(pm->passes().size(), 3u);
  EXPECT_EQ(pm->passes()[0]->name, "canonicalize");
  EXPECT_EQ(pm->passes()[1]->name, "cse");
  EXPECT_EQ(pm->passes()[2]->name, "dce");
}

TEST(PassManager, EmptyPipelineRunsNothing) {
  auto pm = passes::PassManager::parse("  ");
  ASSERT_TRUE(pm);
  EXPECT_TRUE(pm->passes().empty());
}

TEST(PassManager, UnknownPassIsAnErrorNamingIt) {
  auto pm = passes::PassManager::parse("cse,frobnicate,dce");
  ASSERT_FALSE(pm);
  EXPECT_EQ(pm.error().message, "unknown pass 'frobnicate' (see 'ephc passes')");
}

TEST(PassManager, EmptyNameInAListIsAnError) {
  auto pm = passes::PassManager::parse("cse,,dce");
  ASSERT_FALSE(pm);
  EXPECT_EQ(pm.error().message, "unknown pass '' (see 'ephc passes')");
  EXPECT_FALSE(passes::PassManager::parse("cse,"));
}

TEST(PassManager, RunReportsWhetherAnythingChanged) {
  ir::Context ctx;
  auto m = parse(ctx);
  auto pm = passes::PassManager::parse("canonicalize");
  ASSERT_TRUE(pm);
  auto changed = pm->run(*m);
  ASSERT_TRUE(changed);
  EXPECT_TRUE(*changed);
  auto again = pm->run(*m);
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again);
}

TEST(PassManager, InvalidModuleAfterAPassStopsThePipeline) {
  testPasses();
  TestPasses::counterRuns = 0;
  ir::Context ctx;
  auto m = parse(ctx);
  auto pm = passes::PassManager::parse("test-count,test-break-ir,test-count");
  ASSERT_TRUE(pm);
  std::vector<Error> errors;
  std::ostringstream out;
  EXPECT_FALSE(pm->run(*m, {.out = &out}, errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message.rfind("after pass 'test-break-ir': ", 0), 0u) << errors[0].message;
  EXPECT_EQ(TestPasses::counterRuns, 1);  // the pass after the broken one never ran
}

TEST(PassManager, VerifyEachCanBeTurnedOff) {
  testPasses();
  ir::Context ctx;
  auto m = parse(ctx);
  auto pm = passes::PassManager::parse("test-break-ir");
  ASSERT_TRUE(pm);
  std::vector<Error> errors;
  EXPECT_TRUE(pm->run(*m, {.verifyEach = false}, errors));
  EXPECT_TRUE(errors.empty());
}

TEST(PassManager, PassErrorsAreAllReturnedAndStopThePipeline) {
  testPasses();
  TestPasses::counterRuns = 0;
  ir::Context ctx;
  auto m = parse(ctx);
  auto pm = passes::PassManager::parse("test-fail,test-count");
  ASSERT_TRUE(pm);
  std::vector<Error> errors;
  EXPECT_FALSE(pm->run(*m, {}, errors));
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].message, "first problem");
  EXPECT_EQ(errors[0].loc.line, 1u);
  EXPECT_EQ(errors[1].message, "second problem");
  EXPECT_EQ(TestPasses::counterRuns, 0);

  auto single = pm->run(*m);  // the Expected overload gives the first error
  ASSERT_FALSE(single);
  EXPECT_EQ(single.error().message, "first problem");
}

TEST(PassManager, PrintAfterNamedPass) {
  ir::Context ctx;
  auto m = parse(ctx);
  auto pm = passes::PassManager::parse("canonicalize,cse,dce");
  ASSERT_TRUE(pm);
  std::ostringstream out;
  std::vector<Error> errors;
  ASSERT_TRUE(pm->run(*m, {.printAfter = {"cse"}, .out = &out}, errors));
  std::string expected = "// -----// IR after cse //----- //\n" + ir::print(*m);
  EXPECT_EQ(out.str(), expected);
  EXPECT_NE(out.str().find("%six = const {value = 6} : i32"), std::string::npos) << out.str();
}

TEST(PassManager, PrintAfterAllPrintsEveryPassInOrder) {
  ir::Context ctx;
  auto m = parse(ctx);
  auto pm = passes::PassManager::parse("canonicalize,cse,dce");
  ASSERT_TRUE(pm);
  std::ostringstream out;
  std::vector<Error> errors;
  ASSERT_TRUE(pm->run(*m, {.printAfter = {"all"}, .out = &out}, errors));
  std::string s = out.str();
  size_t a = s.find("IR after canonicalize"), b = s.find("IR after cse"), c = s.find("IR after dce");
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(c, std::string::npos);
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
}

TEST(PassManager, TimePassesPrintsATableWithEveryPassAndTotal) {
  ir::Context ctx;
  auto m = parse(ctx);
  auto pm = passes::PassManager::parse("canonicalize,dce");
  ASSERT_TRUE(pm);
  std::ostringstream out;
  std::vector<Error> errors;
  ASSERT_TRUE(pm->run(*m, {.timePasses = true, .out = &out}, errors));
  std::string s = out.str();
  EXPECT_NE(s.find("Pass execution timing"), std::string::npos) << s;
  EXPECT_NE(s.find("\ncanonicalize "), std::string::npos) << s;
  EXPECT_NE(s.find("\ndce "), std::string::npos) << s;
  EXPECT_NE(s.find("\ntotal "), std::string::npos) << s;
  EXPECT_NE(s.find("100.0%"), std::string::npos) << s;
}

TEST(PassManager, PluginThatDoesNotExist) {
  Status s = passes::loadPassPlugin("/nonexistent/libnothing.so");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "no such file");
}

TEST(PassManager, PluginWithoutTheRegistrationFunction) {
  // libstdc++ is a real shared library that exports no ephRegisterPasses.
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&std::terminate), &info), 0);
  ASSERT_NE(info.dli_fname, nullptr);
  Status s = passes::loadPassPlugin(info.dli_fname);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("does not export 'ephRegisterPasses'"), std::string::npos)
      << s.error().message;
}

TEST(PassManager, PluginThatIsNotALibrary) {
  Status s = passes::loadPassPlugin(EPH_SOURCE_DIR "/passes/PassManager.h");
  ASSERT_FALSE(s);
  EXPECT_FALSE(s.error().message.empty());
  EXPECT_EQ(s.error().message.find('\n'), std::string::npos);  // one line
}
