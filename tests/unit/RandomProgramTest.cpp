// Differential testing at scale: a few hundred random well-typed programs
// (tests/support/RandomProgram.h) run on the interpreter and on every other
// target this build and machine have, and their results must agree: on the
// cpu target bit for bit (it follows the interpreter's rounding exactly), on
// Vulkan within ephc diff's float tolerance. The cpu target also runs a
// share of them at -O0 and without the uniform-loop interchange, so both
// lowerings of loops stay covered.
//
// EPH_RANDOM_PROGRAMS sets how many (default 300) and EPH_RANDOM_SEED the
// first seed (default 1); a failure prints the seed and the program, and the
// program minimised to the lines it needs to fail (tests/support/Minimise.h),
// to keep in tests/regressions/random/ once the bug is understood.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"
#include "runtime/Compare.h"
#include "runtime/Device.h"
#include "tests/support/DeviceRun.h"
#include "tests/support/Minimise.h"
#include "tests/support/RandomProgram.h"
#ifdef EPH_HAVE_LLVM
#include "runtime/cpu/CpuDevice.h"
#endif

namespace eph::test {
namespace {

namespace fs = std::filesystem;

uint64_t envNumber(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return std::strtoull(v, nullptr, 10);
}


struct Target {
  std::string name;
  std::unique_ptr<runtime::Device> device;
  runtime::Tolerance tol;
  unsigned every = 1;  // runs programs whose number is a multiple of this
};

// The cpu target (also at -O0 and without the loop interchange, on a share of
// the programs) and every other target but the interpreter.
std::vector<Target> targetsToCompare() {
  std::vector<Target> targets;
#ifdef EPH_HAVE_LLVM
  runtime::Tolerance exact{0, 0, 0};
  targets.push_back({"cpu", std::make_unique<runtime::CpuDevice>(), exact, 1});
  runtime::CpuOptions o0;
  o0.lower.optLevel = 0;
  targets.push_back({"cpu -O0", std::make_unique<runtime::CpuDevice>(o0), exact, 5});
  runtime::CpuOptions flat;
  flat.lower.hoistUniformLoops = false;
  targets.push_back({"cpu without loop interchange", std::make_unique<runtime::CpuDevice>(flat), exact, 3});
#endif
  for (const std::string& t : runtime::availableTargets()) {
    if (t == "interp" || t == "cpu") continue;
    auto dev = runtime::openDevice(t);
    if (dev) targets.push_back({t, std::move(*dev), runtime::Tolerance{}, 1});
  }
  return targets;
}

// Runs @main of program `text` on the interpreter (the reference) and, after
// `pipeline` (none when empty), on `dev`. nullopt when the text does not
// parse, verify, have @main or run on the interpreter (a reduction went too
// far); else what `dev` got wrong, "" when it agrees.
std::optional<std::string> disagreement(runtime::Device& ref, runtime::Device& dev, const runtime::Tolerance& tol,
                                        const std::string& text, const std::string& file,
                                        const std::string& pipeline = {}) {
  ir::Context ctx;
  auto plain = ir::parseModule(ctx, text, file);
  auto m = ir::parseModule(ctx, text, file);
  if (!plain || !m || !ir::verify(**plain) || !(*plain)->lookup("main")) return std::nullopt;
  HostRun want = runMainOn(ref, **plain);
  if (!want.results) return std::nullopt;
  if (!pipeline.empty()) {
    auto pm = passes::PassManager::parse(pipeline);
    if (!pm) return "pipeline " + pipeline + ": " + pm.error().str();
    if (auto changed = pm->run(**m); !changed) return pipeline + ": " + changed.error().str();
  }
  HostRun got = runMainOn(dev, **m);
  if (!got.results) return got.results.error().str();
  auto diff = runtime::compareResults(*want.results, want.interp->memory(), *got.results, got.interp->memory(), tol);
  if (!diff) return std::string();
  std::string what = "result " + std::to_string(diff->result) + " element " + std::to_string(diff->element) +
                     ": interp " + diff->a + ", target " + diff->b + " " + diff->what;
  return pipeline.empty() ? what : what + "\noptimized:\n" + ir::print(**m);
}

// A failure of program `seed`: the message, and the program minimised to
// what still fails the same way.
std::string failureReport(runtime::Device& ref, runtime::Device& dev, const runtime::Tolerance& tol, uint64_t seed,
                          const std::string& text, const std::string& pipeline = {}) {
  std::string file = "random-" + std::to_string(seed) + ".eir";
  std::string first = disagreement(ref, dev, tol, text, file, pipeline).value_or("?");
  return first + "\n" + text + "\n" +
         keepMinimised("seed-" + std::to_string(seed), text, [&](const std::string& smaller) {
           auto d = disagreement(ref, dev, tol, smaller, file, pipeline);
           return d && !d->empty();
         });
}

TEST(RandomPrograms, AgreeWithTheInterpreterOnEveryTarget) {
  uint64_t count = envNumber("EPH_RANDOM_PROGRAMS", 300);
  uint64_t first = envNumber("EPH_RANDOM_SEED", 1);
  std::vector<Target> targets = targetsToCompare();
  auto ref = runtime::openDevice("interp");
  ASSERT_TRUE(ref);

  unsigned failures = 0;
  for (uint64_t seed = first; seed < first + count && failures < 3; ++seed) {
    std::string text = generateRandomProgram(seed);
    ir::Context ctx;
    auto m = ir::parseModule(ctx, text, "random-" + std::to_string(seed) + ".eir");
    ASSERT_TRUE(m) << "seed " << seed << ": " << m.error().str() << "\n" << text;
    Status valid = ir::verify(**m);
    ASSERT_TRUE(valid) << "seed " << seed << ": " << valid.error().str() << "\n" << text;
    HostRun want = runMainOn(**ref, **m);
    ASSERT_TRUE(want.results) << "seed " << seed << ": interpreter: " << want.results.error().str() << "\n" << text;
    for (Target& t : targets) {
      if (seed % t.every) continue;
      HostRun got = runMainOn(*t.device, **m);
      bool agree = got.results && !runtime::compareResults(*want.results, want.interp->memory(), *got.results,
                                                           got.interp->memory(), t.tol);
      if (agree) continue;
      ++failures;
      ADD_FAILURE() << "seed " << seed << " on " << t.name << ": "
                    << failureReport(**ref, *t.device, t.tol, seed, text);
    }
  }
}

// The minimised failures of the tests here, kept (tests/regressions/random/):
// each runs on every target, as written and optimized (inline,optimize and
// O2), against the interpreter.
TEST(RandomPrograms, RegressionsAgreeOnEveryTarget) {
  std::vector<Target> targets = targetsToCompare();
  auto ref = runtime::openDevice("interp");
  ASSERT_TRUE(ref);
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(fs::path(EPH_SOURCE_DIR) / "tests" / "regressions" / "random"))
    if (e.path().extension() == ".eir") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    for (Target& t : targets)
      for (std::string pipeline : {"", "inline,optimize", "O2"}) {
        auto d = disagreement(**ref, *t.device, t.tol, text.str(), f.filename().string(), pipeline);
        ASSERT_TRUE(d) << f << " does not run on the interpreter";
        EXPECT_EQ(*d, "") << f << " on " << t.name << (pipeline.empty() ? "" : " after " + pipeline);
      }
  }
}

// The reduction, on a stand-in failure ("the program verifies and has a
// `rem`"): the result still fails, is much smaller, and no line of it can go.
TEST(RandomPrograms, MinimiseKeepsOnlyWhatTheFailureNeeds) {
  auto fails = [](const std::string& t) {
    ir::Context ctx;
    auto m = ir::parseModule(ctx, t, "m.eir");
    return m && ir::verify(**m) && t.find(" = rem ") != std::string::npos;
  };
  uint64_t seed = 1;
  while (!fails(generateRandomProgram(seed))) ++seed;
  std::string text = generateRandomProgram(seed);
  std::string small = minimiseProgram(text, fails);
  EXPECT_TRUE(fails(small)) << small;
  auto lines = [](const std::string& t) { return std::count(t.begin(), t.end(), '\n'); };
  EXPECT_LT(4 * lines(small), lines(text)) << small;
  EXPECT_EQ(minimiseProgram(small, fails), small);
}

// The generator itself: deterministic, and different seeds give different programs.
TEST(RandomPrograms, GeneratorIsDeterministic) {
  EXPECT_EQ(generateRandomProgram(7), generateRandomProgram(7));
  EXPECT_NE(generateRandomProgram(7), generateRandomProgram(8));
  RandomProgramOptions plain;
  plain.barriers = plain.atomics = plain.floats = false;
  std::string text = generateRandomProgram(7, plain);
  EXPECT_EQ(text.find("atomic."), std::string::npos);
  EXPECT_EQ(text.find("  barrier"), std::string::npos);
  // Some programs exchange through a called device function (its barriers
  // are inlined on the cpu target).
  bool called = false;
  for (uint64_t seed = 1; seed <= 20 && !called; ++seed)
    called = generateRandomProgram(seed).find("{callee = @exchange}") != std::string::npos;
  EXPECT_TRUE(called);
}


// Optimizer fuzzing: each random program, put through the optimizing
// pipelines (`optimize`, and `inline` before it), must give the unoptimized
// program's results on the interpreter and on every other target; so must
// programs with a chain of pointwise kernels after @k
// (RandomProgramOptions::pointwise: what `O2`'s fuse, vectorize and memplan
// rewrite, which they leave the plain programs as they are), put through
// `O2`; every third program only, as a chain's 2 to 5 more kernels make one
// about three times as slow to compile (on 2 shared cores, with a cold kernel
// cache: 15-17 s for the other two pipelines, 35 s with O2 on every program,
// 23 s on a third). A failure prints the seed, the pipeline, both modules and
// the program minimised, to be kept in tests/regressions/random/
// (RegressionsAgreeOnEveryTarget).
TEST(RandomPrograms, OptimizedProgramsAgreeWithUnoptimizedOnEveryTarget) {
  uint64_t count = envNumber("EPH_RANDOM_PROGRAMS", 300) / 3;
  uint64_t first = envNumber("EPH_RANDOM_SEED", 1);
  std::vector<std::pair<std::string, std::unique_ptr<runtime::Device>>> targets;
  for (const std::string& t : runtime::availableTargets())
    if (auto dev = runtime::openDevice(t)) targets.push_back({t, std::move(*dev)});
  auto ref = runtime::openDevice("interp");
  ASSERT_TRUE(ref);
  RandomProgramOptions chains;
  chains.pointwise = true;
  struct Fuzz {
    const char* pipeline;
    RandomProgramOptions options;
    unsigned every;  // runs programs first, first + every, ...
  };
  unsigned failures = 0;
  for (const Fuzz& fuzz : {Fuzz{"default,optimize", {}, 1}, Fuzz{"inline,optimize", {}, 1}, Fuzz{"O2", chains, 3}}) {
    const char* pipeline = fuzz.pipeline;
    auto pm = passes::PassManager::parse(pipeline);
    ASSERT_TRUE(pm) << pm.error().str();
    for (uint64_t seed = first; seed < first + count && failures < 3; seed += fuzz.every) {
      std::string text = generateRandomProgram(seed, fuzz.options);
      ir::Context ctx;
      auto plain = ir::parseModule(ctx, text, "random-" + std::to_string(seed) + ".eir");
      auto opt = ir::parseModule(ctx, text, "random-" + std::to_string(seed) + ".eir");
      ASSERT_TRUE(plain && opt) << "seed " << seed << "\n" << text;
      auto changed = pm->run(**opt);
      ASSERT_TRUE(changed) << "seed " << seed << " " << pipeline << ": " << changed.error().str() << "\n" << text;
      HostRun want = runMainOn(**ref, **plain);
      ASSERT_TRUE(want.results) << "seed " << seed << ": " << want.results.error().str() << "\n" << text;
      for (auto& [name, device] : targets) {
        HostRun got = runMainOn(*device, **opt);
        runtime::Tolerance tol = name == "vulkan" ? runtime::Tolerance{} : runtime::Tolerance{0, 0, 0};
        bool agree = got.results && !runtime::compareResults(*want.results, want.interp->memory(), *got.results,
                                                             got.interp->memory(), tol);
        if (agree) continue;
        ++failures;
        ADD_FAILURE() << "seed " << seed << ", " << pipeline << ", on " << name << ": "
                      << failureReport(**ref, *device, tol, seed, text, pipeline);
      }
    }
  }
}

// The pointwise chains give O2 work to do: among the first 40 programs
// (13 fuse, 34 vectorise, 35 share an arena), and the chain leaves
// what comes before it (@k) as it was.
TEST(RandomPrograms, PointwiseChainsAreWhatO2Rewrites) {
  RandomProgramOptions chains;
  chains.pointwise = true;
  auto pm = passes::PassManager::parse("O2");
  ASSERT_TRUE(pm) << pm.error().str();
  unsigned fused = 0, vectorized = 0, planned = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::string text = generateRandomProgram(seed, chains);
    size_t chain = text.find("kernel @pw0");
    ASSERT_NE(chain, std::string::npos) << text;
    EXPECT_EQ(text.substr(0, chain), generateRandomProgram(seed).substr(0, chain)) << "the chain changed @k";
    ir::Context ctx;
    auto m = ir::parseModule(ctx, text, "random-" + std::to_string(seed) + ".eir");
    ASSERT_TRUE(m) << "seed " << seed << ": " << m.error().str() << "\n" << text;
    Status valid = ir::verify(**m);
    ASSERT_TRUE(valid) << "seed " << seed << ": " << valid.error().str() << "\n" << text;
    auto changed = pm->run(**m);
    ASSERT_TRUE(changed) << "seed " << seed << ": " << changed.error().str() << "\n" << text;
    std::string after = ir::print(**m);
    fused += after.find("_pw") != std::string::npos;  // @pw0_pw1, ...
    vectorized += after.find(".x4(") != std::string::npos;
    planned += after.find("buffer.view") != std::string::npos;
  }
  EXPECT_GE(fused, 5u);
  EXPECT_GE(vectorized, 5u);
  EXPECT_GE(planned, 5u);
}

}  // namespace
}  // namespace eph::test
