// Bounds checks on every target (issue 15, item 7): an index out of bounds is
// the interpreter's error on interp, cpu and vulkan (with
// DeviceOptions::checkBounds, `--check-bounds`): the access's location, the
// index, the length and the invocation's global id, in the same words. A
// program in bounds gives the same results with the checks on, and every
// kernel still passes spirv-val with them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "ir/interp/Interp.h"
#include "runtime/Device.h"
#ifdef EPH_HAVE_VULKAN
#include "targets/spirv/CapsProfiles.h"
#include "targets/spirv/Spirv.h"
#endif

namespace eph::test {
namespace {

// interp, cpu where this build has it, vulkan where a device opens (always
// with EPH_REQUIRE_VULKAN=1, so that a machine without one fails).
std::vector<std::string> targets() {
  std::vector<std::string> out;
  for (const std::string& t : runtime::availableTargets()) {
    if (t != "vulkan") out.push_back(t);
    else if (const char* req = std::getenv("EPH_REQUIRE_VULKAN"); (req && std::string(req) == "1") ||
                                                                    runtime::openDevice("vulkan"))
      out.push_back(t);
  }
  return out;
}

// Runs @main of `text` on `target` with the checks on or off: its results,
// one per line, or "error: " and the error.
std::string run(const std::string& text, const std::string& target, bool checkBounds = true) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx, text, "k.eir");
  if (!m) return "parse error: " + m.error().str();
  if (Status s = ir::verify(**m); !s) return "verify error: " + s.error().str();
  runtime::DeviceOptions opts;
  opts.checkBounds = checkBounds;
  auto dev = runtime::openDevice(target, -1, opts);
  if (!dev) return "no device: " + dev.error().message;
  interp::Interpreter in(**m);
  auto r = runtime::runHost(**dev, in, *(*m)->lookup("main"), {});
  if (!r) return "error: " + r.error().str();
  std::string s;
  for (auto& v : *r) s += interp::format(v, &in.memory()) + "\n";
  return s;
}

// Kernel @k over 8 invocations (two workgroups of 4) with `body`, given
// %in = [0..7] (read) and %out (8 zeros, written); main returns out.
// %gid, %lid, %one and %seven are defined; %odd is 10 for invocation 7 and
// 0 for the others, so that one invocation alone goes out of bounds.
std::string program(const std::string& body) {
  return R"(
kernel @k(%in: buffer<u32, device, read>, %out: buffer<u32, device, write>) workgroup(4, 1, 1) {
  %gid = global_id {dim = 0} : u32
  %lid = local_id {dim = 0} : u32
  %one = const {value = 1} : u32
  %seven = const {value = 7} : u32
  %ten = const {value = 10} : u32
  %last = div %gid, %seven : u32
  %odd = mul %last, %ten : u32
)" + body + R"(
  return
}

host @main() -> buffer<u32, host, linear> {
  %n = const {value = 8} : u32
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %two = const {value = 2} : u32
  %h = alloc %n : buffer<u32, host, linear>
  %o = alloc %n : buffer<u32, host, linear>
  for %zero, %n, %one { |%i: u32|
    store %h, %i, %i
    store %o, %i, %zero
    yield
  }
  %din = alloc %n : buffer<u32, device, linear>
  %dout = alloc %n : buffer<u32, device, linear>
  h2d %din, %h
  h2d %dout, %o
  dispatch %two, %one, %one, %din, %dout {kernel = @k}
  wait
  d2h %o, %dout
  free %h
  free %din
  free %dout
  return %o
}
)";
}

std::string suffix(const std::string& gid) { return " (in the invocation with global id " + gid + ")"; }

struct Case {
  const char* name;
  std::string body;
  std::string error;  // what every target reports
};

std::vector<Case> outOfBoundsCases() {
  return {
      {"load", "  %j = add %gid, %odd : u32\n  %v = load %in, %j : u32 loc(\"k.eir\":7:3)\n  store %out, %gid, %v",
       "k.eir:7:3: error: index 17 is out of bounds for a buffer of 8 elements" + suffix("(7, 0, 0)")},
      {"two in one invocation: the first is reported",
       "  %j = add %gid, %odd : u32\n  %v = load %in, %j : u32 loc(\"k.eir\":2:2)\n  %j2 = add %j, %one : u32\n"
       "  %w = load %in, %j2 : u32 loc(\"k.eir\":3:3)\n  %s = add %v, %w : u32\n  store %out, %gid, %s",
       "k.eir:2:2: error: index 17 is out of bounds for a buffer of 8 elements" + suffix("(7, 0, 0)")},
      {"store with a negative signed index",
       "  %s = cast %gid : i32\n  %m1 = const {value = -1} : i32\n  %j = add %s, %m1 : i32\n"
       "  store %out, %j, %gid loc(\"k.eir\":3:5)",
       "k.eir:3:5: error: index -1 is out of bounds for a buffer of 8 elements" + suffix("(0, 0, 0)")},
      {"atomic", "  %j = add %gid, %odd : u32\n  %old = atomic.add %out, %j, %one : u32 loc(\"k.eir\":4:4)",
       "k.eir:4:4: error: index 17 is out of bounds for a buffer of 8 elements" + suffix("(7, 0, 0)")},
      {"64-bit index", "  %j = add %gid, %odd : u32\n  %w = cast %j : u64\n  %v = load %in, %w : u32 loc(\"k.eir\":5:1)\n"
       "  store %out, %gid, %v",
       "k.eir:5:1: error: index 17 is out of bounds for a buffer of 8 elements" + suffix("(7, 0, 0)")},
      {"workgroup memory",
       "  %sh = workgroup.alloc {size = 4} : buffer<u32, workgroup, write>\n  %j = add %lid, %odd : u32\n"
       "  store %sh, %j, %gid loc(\"k.eir\":6:2)",
       "k.eir:6:2: error: index 13 is out of bounds for a buffer of 4 elements" + suffix("(7, 0, 0)")},
  };
}

TEST(BoundsCheck, EveryTargetReportsTheSameError) {
  for (const Case& c : outOfBoundsCases())
    for (const std::string& t : targets()) {
      SCOPED_TRACE(std::string(c.name) + " on " + t);
      std::string got = run(program(c.body), t);
      EXPECT_EQ(got.substr(0, got.find('\n')), "error: " + c.error) << got;
    }
}

TEST(BoundsCheck, Arrays) {
  // A dynamic index into a fixed array: the same words, "an array" (the
  // SPIR-V target clamps the access and records the index).
  std::string body =
      "  %a = array.make %gid, %gid, %gid, %gid : array<u32, 4>\n  %j = add %lid, %odd : u32\n"
      "  %v = array.get %a, %j : u32 loc(\"k.eir\":8:8)\n  store %out, %gid, %v";
  std::string want = "error: k.eir:8:8: error: index 13 is out of bounds for an array of 4 elements" + suffix("(7, 0, 0)");
  for (const std::string& t : targets()) {
    SCOPED_TRACE(t);
    std::string got = run(program(body), t);
    EXPECT_EQ(got.substr(0, got.find('\n')), want) << got;
  }
}

TEST(BoundsCheck, InBoundsProgramsGiveTheSameResultsWithTheChecks) {
  std::string body =
      "  %v = load %in, %gid : u32\n  %w = add %v, %one : u32\n  store %out, %gid, %w\n"
      "  %old = atomic.add %out, %gid, %one : u32\n"  // its own element: no race with the stores
      "  %sh = workgroup.alloc {size = 4} : buffer<u32, workgroup, write>\n  store %sh, %lid, %v\n";
  std::string want = run(program(body), "interp");
  ASSERT_EQ(want.find("error"), std::string::npos) << want;
  for (const std::string& t : targets())
    for (bool check : {false, true}) {
      SCOPED_TRACE(t + (check ? " with checks" : " without checks"));
      EXPECT_EQ(run(program(body), t, check), want);
    }
}

#ifdef EPH_HAVE_VULKAN
// Every kernel of the IR examples and lit tests that emits without the
// checks emits with them too, and passes spirv-val (inside emitKernel).
TEST(BoundsCheck, CheckedSpirvValidates) {
  namespace fs = std::filesystem;
  size_t kernels = 0, checked = 0;
  std::vector<fs::path> files;
  for (const char* dir : {"examples/ir", "tests/lit"})
    for (auto& e : fs::recursive_directory_iterator(fs::path(EPH_SOURCE_DIR) / dir))
      if (e.path().extension() == ".eir") files.push_back(e.path());
  // lavapipe adds floats atomically; minimal needs a compare-exchange loop.
  for (const char* profile : {"lavapipe", "minimal"}) {
    DeviceCaps caps = *spirv::capsProfile(profile);
    for (const fs::path& file : files) {
      std::ifstream in(file);
      std::stringstream text;
      text << in.rdbuf();
      ir::Context ctx;
      auto m = ir::parseModule(ctx, text.str(), file.string());
      if (!m || !ir::verify(**m)) continue;  // invalid on purpose
      for (auto& f : (*m)->functions()) {
        if (!f->isKernel()) continue;
        ++kernels;
        if (!spirv::emitKernel(*f, caps)) continue;  // cannot run on this device anyway
        std::vector<const ir::Op*> sites;
        auto words = spirv::emitKernel(*f, caps, {.checkBounds = true, .sites = &sites});
        EXPECT_TRUE(words) << file << " @" << f->name() << " (" << profile << "): " << words.error().str();
        checked += bool(words);
      }
    }
  }
  EXPECT_GE(checked, 40u) << "of " << kernels << " kernels";
}
#endif

}  // namespace
}  // namespace eph::test
