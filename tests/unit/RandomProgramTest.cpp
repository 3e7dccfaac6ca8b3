// Differential testing at scale: a few hundred random well-typed programs
// (tests/support/RandomProgram.h) run on the interpreter and on every other
// target this build and machine have, and their results must agree: on the
// cpu target bit for bit (it follows the interpreter's rounding exactly), on
// Vulkan within ephc diff's float tolerance. The cpu target also runs a
// share of them at -O0 and without the uniform-loop interchange, so both
// lowerings of loops stay covered.
//
// EPH_RANDOM_PROGRAMS sets how many (default 300) and EPH_RANDOM_SEED the
// first seed (default 1); a failure prints the seed and the program.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"
#include "runtime/Compare.h"
#include "runtime/Device.h"
#include "tests/support/DeviceRun.h"
#include "tests/support/RandomProgram.h"
#ifdef EPH_HAVE_LLVM
#include "runtime/cpu/CpuDevice.h"
#endif

namespace eph::test {
namespace {

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

TEST(RandomPrograms, AgreeWithTheInterpreterOnEveryTarget) {
  uint64_t count = envNumber("EPH_RANDOM_PROGRAMS", 300);
  uint64_t first = envNumber("EPH_RANDOM_SEED", 1);
  runtime::Tolerance exact{0, 0, 0};

  std::vector<Target> targets;
#ifdef EPH_HAVE_LLVM
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
      if (!got.results) {
        ++failures;
        ADD_FAILURE() << "seed " << seed << " on " << t.name << ": " << got.results.error().str() << "\n" << text;
        continue;
      }
      auto diff = runtime::compareResults(*want.results, want.interp->memory(), *got.results, got.interp->memory(), t.tol);
      if (diff) {
        ++failures;
        ADD_FAILURE() << "seed " << seed << " on " << t.name << ": result " << diff->result << " element "
                      << diff->element << ": interp " << diff->a << ", " << t.name << " " << diff->b << " "
                      << diff->what << "\n" << text;
      }
    }
  }
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
// program's results on the interpreter and on every other target. A failure
// prints the seed, the pipeline and both modules; minimised failures are kept
// as regression tests in tests/lit/passes/.
TEST(RandomPrograms, OptimizedProgramsAgreeWithUnoptimizedOnEveryTarget) {
  uint64_t count = envNumber("EPH_RANDOM_PROGRAMS", 300) / 3;
  uint64_t first = envNumber("EPH_RANDOM_SEED", 1);
  std::vector<std::pair<std::string, std::unique_ptr<runtime::Device>>> targets;
  for (const std::string& t : runtime::availableTargets())
    if (auto dev = runtime::openDevice(t)) targets.push_back({t, std::move(*dev)});
  auto ref = runtime::openDevice("interp");
  ASSERT_TRUE(ref);
  unsigned failures = 0;
  for (const char* pipeline : {"default,optimize", "inline,optimize"}) {
    auto pm = passes::PassManager::parse(pipeline);
    ASSERT_TRUE(pm) << pm.error().str();
    for (uint64_t seed = first; seed < first + count && failures < 3; ++seed) {
      std::string text = generateRandomProgram(seed);
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
        std::string where = "seed " + std::to_string(seed) + ", " + pipeline + ", on " + name;
        if (!got.results) {
          ++failures;
          ADD_FAILURE() << where << ": " << got.results.error().str() << "\n" << text << "\noptimized:\n" << ir::print(**opt);
          continue;
        }
        runtime::Tolerance tol = name == "vulkan" ? runtime::Tolerance{} : runtime::Tolerance{0, 0, 0};
        if (auto diff = runtime::compareResults(*want.results, want.interp->memory(), *got.results, got.interp->memory(), tol)) {
          ++failures;
          ADD_FAILURE() << where << ": result " << diff->result << " element " << diff->element << ": unoptimized "
                        << diff->a << ", optimized " << diff->b << " " << diff->what << "\n" << text << "\noptimized:\n"
                        << ir::print(**opt);
        }
      }
    }
  }
}

}  // namespace
}  // namespace eph::test
