// runtime/BufferChecks.h: with RunOptions::checkBuffers, use after free,
// double free and leaks of device buffers are errors that name where the
// buffer was allocated (and freed), on every device. The programs are
// hand-written IR that the verifier accepts (it does not track ownership) and
// that the linearity pass, not run here, would reject; the C++ tests drive
// the Device hooks directly, as a C++ user can.
#include <gtest/gtest.h>

#include <cstdlib>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/BufferChecks.h"
#include "runtime/Device.h"

namespace eph::test {
namespace {

// @inc adds 1 to each of 4 elements; @main's body is spliced in.
std::string program(const std::string& body) {
  return R"(kernel @inc(%b: buffer<i32, device, write>) workgroup(4, 1, 1) {
  %i = global_id {dim = 0} : u32
  %v = load %b, %i : i32
  %one = const {value = 1} : i32
  %r = add %v, %one : i32
  store %b, %i, %r
  return
}

host @main() -> i32 {
  %n = const {value = 4} : u32
  %g = const {value = 1} : u32
  %z = const {value = 0} : i32
  %zu = const {value = 0} : u32
  %h = alloc %n : buffer<i32, host, linear>
  for %zu, %n, %g { |%i: u32|
    store %h, %i, %z
    yield
  }
)" + body + R"(  free %h
  return %z
}
)";
}

// Line 15 is the host buffer's alloc; the spliced body starts at line 20.
constexpr const char* kFile = "checks.eir";

// The targets to check on: the interpreter, cpu when built, and vulkan when
// a device opens.
std::vector<std::string> targets() {
  std::vector<std::string> ts;
  for (const std::string& t : runtime::availableTargets())
    if (t != "vulkan" || runtime::openDevice(t)) ts.push_back(t);
  return ts;
}

struct Outcome {
  bool ok = false;
  std::string error;  // Error::str()
  int32_t result = 0;
};

Outcome run(const std::string& text, const std::string& target, bool checks) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx, text, kFile);
  EXPECT_TRUE(m) << m.error().str();
  if (!m) return {};
  Status v = ir::verify(**m);
  EXPECT_TRUE(v) << v.error().str();
  auto dev = runtime::openDevice(target);
  EXPECT_TRUE(dev);
  if (!dev) return {};
  interp::Interpreter in(**m);
  runtime::RunOptions opts;
  opts.checkBuffers = checks;
  auto r = runtime::runHost(**dev, in, *(*m)->lookup("main"), {}, opts);
  if (!r) return {false, r.error().str(), 0};
  return {true, "", int32_t((*r)[0].i)};
}

TEST(BufferChecks, DispatchAfterFreeNamesAllocationAndFree) {
  std::string text = program(
      "  %d = alloc %n : buffer<i32, device, linear>\n"  // 20
      "  h2d %d, %h\n"                                    // 21
      "  free %d\n"                                       // 22
      "  dispatch %g, %g, %g, %d {kernel = @inc}\n");     // 23
  for (const std::string& t : targets()) {
    Outcome o = run(text, t, true);
    EXPECT_FALSE(o.ok) << t;
    EXPECT_EQ(o.error,
              "checks.eir:23:3: error: use after free: buffer allocated at checks.eir:20:3 was freed at "
              "checks.eir:22:3 and used again at checks.eir:23:3 (by dispatch of @inc, argument 0)")
        << t;
  }
}

TEST(BufferChecks, TransfersAfterFree) {
  std::string h2d = program(
      "  %d = alloc %n : buffer<i32, device, linear>\n"
      "  free %d\n"
      "  h2d %d, %h\n");
  std::string d2h = program(
      "  %d = alloc %n : buffer<i32, device, linear>\n"
      "  h2d %d, %h\n"
      "  free %d\n"
      "  d2h %h, %d\n");
  for (const std::string& t : targets()) {
    EXPECT_EQ(run(h2d, t, true).error,
              "checks.eir:22:3: error: use after free: buffer allocated at checks.eir:20:3 was freed at "
              "checks.eir:21:3 and used again at checks.eir:22:3 (by h2d)")
        << t;
    EXPECT_EQ(run(d2h, t, true).error,
              "checks.eir:23:3: error: use after free: buffer allocated at checks.eir:20:3 was freed at "
              "checks.eir:22:3 and used again at checks.eir:23:3 (by d2h)")
        << t;
  }
}

TEST(BufferChecks, DoubleFree) {
  std::string text = program(
      "  %d = alloc %n : buffer<i32, device, linear>\n"
      "  free %d\n"
      "  free %d\n");
  for (const std::string& t : targets()) {
    Outcome o = run(text, t, true);
    EXPECT_EQ(o.error,
              "checks.eir:22:3: error: double free: buffer allocated at checks.eir:20:3 was freed at "
              "checks.eir:21:3 and freed again at checks.eir:22:3")
        << t;
  }
}

TEST(BufferChecks, LeaksAreReportedAtTheAllocationSite) {
  std::string one = program(
      "  %d = alloc %n : buffer<i32, device, linear>\n"
      "  h2d %d, %h\n"
      "  dispatch %g, %g, %g, %d {kernel = @inc}\n");
  std::string three = program(
      "  %a = alloc %n : buffer<i32, device, linear>\n"
      "  %b = alloc %n : buffer<i32, device, affine>\n"
      "  %c = alloc %n : buffer<i32, device, linear>\n"
      "  free %b\n"
      "  %e = alloc %g : buffer<i32, device, linear>\n");
  for (const std::string& t : targets()) {
    EXPECT_EQ(run(one, t, true).error,
              "checks.eir:20:3: error: leak: buffer allocated at checks.eir:20:3 (4 x i32) was never freed "
              "(last used at checks.eir:22:3) when @main returned")
        << t;
    EXPECT_EQ(run(three, t, true).error,
              "checks.eir:20:3: error: leak: buffer allocated at checks.eir:20:3 (4 x i32) was never freed "
              "(and never used) when @main returned; 2 more leaked, allocated at checks.eir:22:3, "
              "checks.eir:24:3")
        << t;
    // Without the checks nothing looks at leaks: the program runs.
    Outcome off = run(one, t, false);
    EXPECT_TRUE(off.ok) << t << ": " << off.error;
  }
}

TEST(BufferChecks, CorrectProgramsRunTheSameWithChecks) {
  std::string text = program(
      "  %d = alloc %n : buffer<i32, device, linear>\n"
      "  h2d %d, %h\n"
      "  dispatch %g, %g, %g, %d {kernel = @inc}\n"
      "  dispatch %g, %g, %g, %d {kernel = @inc}\n"
      "  d2h %h, %d\n"
      "  free %d\n"
      "  %x = load %h, %g : i32\n"
      "  store %h, %z, %x\n");
  for (const std::string& t : targets()) {
    Outcome on = run(text, t, true), off = run(text, t, false);
    EXPECT_TRUE(on.ok) << t << ": " << on.error;
    EXPECT_TRUE(off.ok) << t << ": " << off.error;
  }
}

// A C++ user calling the hooks directly: free, then use, through the decorator.
TEST(BufferChecks, CppApiUseAfterFreeDoubleFreeAndLeak) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx, program(""), kFile);
  ASSERT_TRUE(m) << m.error().str();
  const ir::Type* i32 = ctx.intType(32, true);
  const ir::Type* buf = ctx.bufferType(i32, ir::Space::Device, ir::Ownership::Linear);
  static const std::string file = "user.cpp";
  auto loc = [&](unsigned line) { return Loc{&file, line, 1}; };
  for (const std::string& t : targets()) {
    auto dev = runtime::openDevice(t);
    ASSERT_TRUE(dev);
    runtime::CheckedDevice checked(**dev);
    ASSERT_TRUE(checked.prepare(**m));
    EXPECT_EQ(checked.target(), t);
    auto a = checked.alloc(buf, 2, loc(10));
    auto b = checked.alloc(buf, 3, loc(11));
    ASSERT_TRUE(a && b);
    EXPECT_EQ(checked.liveBuffers(), 2u);
    ASSERT_TRUE(checked.free(*a, loc(12)));
    interp::BufferData host;
    host.elemType = i32;
    host.elems.assign(2, interp::RtValue::ofInt(i32, 7));
    host.written.assign(2, true);
    Status up = checked.upload(*a, host, loc(13));
    ASSERT_FALSE(up) << t;
    EXPECT_EQ(up.error().str(),
              "user.cpp:13:1: error: use after free: buffer allocated at user.cpp:10:1 was freed at "
              "user.cpp:12:1 and used again at user.cpp:13:1 (by h2d)");
    Status twice = checked.free(*a, loc(14));
    ASSERT_FALSE(twice);
    EXPECT_EQ(twice.error().message,
              "double free: buffer allocated at user.cpp:10:1 was freed at user.cpp:12:1 and freed again at "
              "user.cpp:14:1");
    Status unknown = checked.free(*b + 100, loc(15));
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error().message,
              "free of device buffer handle " + std::to_string(*b + 100) + ", which this device never allocated");
    Status leak = checked.checkLeaks("main");
    ASSERT_FALSE(leak);
    EXPECT_EQ(leak.error().loc, loc(11));
    EXPECT_EQ(leak.error().message,
              "leak: buffer allocated at user.cpp:11:1 (3 x i32) was never freed (and never used) when @main returned");
    uint64_t returned[] = {*b};
    EXPECT_TRUE(checked.checkLeaks("main", returned));  // a buffer handed back is not a leak
    ASSERT_TRUE(checked.free(*b, loc(16)));
    EXPECT_EQ(checked.liveBuffers(), 0u);
    EXPECT_TRUE(checked.checkLeaks("main"));
  }
}

TEST(BufferChecks, EnvironmentTurnsThemOn) {
  const char* old = std::getenv("EPH_CHECK_BUFFERS");
  std::string saved = old ? old : "";
  ::setenv("EPH_CHECK_BUFFERS", "1", 1);
  EXPECT_TRUE(runtime::RunOptions::fromEnvironment().checkBuffers);
  ::setenv("EPH_CHECK_BUFFERS", "0", 1);
  EXPECT_FALSE(runtime::RunOptions::fromEnvironment().checkBuffers);
  ::unsetenv("EPH_CHECK_BUFFERS");
  EXPECT_FALSE(runtime::RunOptions::fromEnvironment().checkBuffers);
  if (old) ::setenv("EPH_CHECK_BUFFERS", saved.c_str(), 1);
}

}  // namespace
}  // namespace eph::test
