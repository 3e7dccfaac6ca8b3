// Differential tests of barriers in called device functions: one call deep,
// nested calls, a barrier in a loop inside the callee, calls under a uniform
// `if` and inside a kernel's loop. The cpu target inlines such calls into a
// copy of the module before it splits kernels at their barriers
// (targets/llvm/BarrierCalls.h). Each program runs on the interpreter, the
// cpu target and Vulkan (when this build and machine have them), and the
// results must agree by ephc diff's rules. A trap inside inlined code is
// reported at the callee's op, as the interpreter reports it, and the
// module itself is not changed.
#include <gtest/gtest.h>

#include <memory>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "runtime/Compare.h"
#include "runtime/Device.h"
#include "tests/support/DeviceRun.h"

namespace eph::test {
namespace {

// Device functions the kernels call: 16 invocations share a workgroup.
const char* const kFunctions = R"(
// Each invocation gets the value of its mirror invocation.
device @mirror(%s: buffer<u32, workgroup, write>, %lid: u32, %v: u32) -> u32 {
  store %s, %lid, %v
  barrier
  %last = const {value = 15} : u32
  %j = sub %last, %lid : u32
  %w = load %s, %j : u32
  barrier
  return %w
}

// Publishes a value in device memory; the barrier makes it visible.
device @publish(%tmp: buffer<u32, device, write>, %gid: u32, %v: u32) {
  store %tmp, %gid, %v
  barrier
  return
}

// The next invocation's value (wrapping in the workgroup), through @publish.
device @neighbour(%tmp: buffer<u32, device, write>, %gid: u32, %lid: u32, %v: u32) -> u32 {
  call %tmp, %gid, %v {callee = @publish}
  %one = const {value = 1} : u32
  %mask = const {value = 15} : u32
  %next = add %lid, %one : u32
  %l = and %next, %mask : u32
  %base = sub %gid, %lid : u32
  %j = add %base, %l : u32
  %w = load %tmp, %j : u32
  barrier
  return %w
}

// Three calls deep: @neighbour twice, with arithmetic between.
device @twice(%tmp: buffer<u32, device, write>, %gid: u32, %lid: u32, %v: u32) -> u32 {
  %a = call %tmp, %gid, %lid, %v {callee = @neighbour} : u32
  %three = const {value = 3} : u32
  %b = mul %a, %three : u32
  %c = call %tmp, %gid, %lid, %b {callee = @neighbour} : u32
  return %c
}

// The workgroup's sum by a tree: a barrier in a loop.
device @tree_sum(%s: buffer<u32, workgroup, write>, %lid: u32, %v: u32) -> u32 {
  store %s, %lid, %v
  barrier
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %four = const {value = 4} : u32
  %eight = const {value = 8} : u32
  for %zero, %four, %one { |%k: u32|
    %h = shr %eight, %k : u32
    %active = lt %lid, %h : bool
    if %active {
      %a = load %s, %lid : u32
      %j = add %lid, %h : u32
      %b = load %s, %j : u32
      %t = add %a, %b : u32
      store %s, %lid, %t
      yield
    } {
      yield
    }
    barrier
    yield
  }
  %total = load %s, %zero : u32
  barrier
  return %total
}

// Reads past the end of workgroup memory after a barrier.
device @past_the_end(%s: buffer<u32, workgroup, write>, %lid: u32) -> u32 {
  barrier
  %far = const {value = 100} : u32
  %j = add %lid, %far : u32
  %w = load %s, %j : u32
  return %w
}
)";

// The kernel's header and the host program: in[i] = 7 i + 7 for 4
// workgroups of 16; main returns out (which starts as a copy of in).
const char* const kKernelHeader = R"(
kernel @k(%in: buffer<u32, device, read>, %out: buffer<u32, device, write>, %tmp: buffer<u32, device, write>) workgroup(16, 1, 1) {
  %s = workgroup.alloc {size = 16} : buffer<u32, workgroup, write>
  %lid = local_id {dim = 0} : u32
  %gid = global_id {dim = 0} : u32
  %x = load %in, %gid : u32
)";
const char* const kHost = R"(
host @main() -> buffer<u32, host, linear> {
  %n = const {value = 64} : u32
  %groups = const {value = 4} : u32
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %seven = const {value = 7} : u32
  %h = alloc %n : buffer<u32, host, linear>
  for %zero, %n, %one { |%i: u32|
    %a = mul %i, %seven : u32
    %b = add %a, %seven : u32
    store %h, %i, %b
    yield
  }
  %din = alloc %n : buffer<u32, device, linear>
  %dout = alloc %n : buffer<u32, device, linear>
  %dtmp = alloc %n : buffer<u32, device, linear>
  h2d %din, %h
  h2d %dout, %h
  h2d %dtmp, %h
  dispatch %groups, %one, %one, %din, %dout, %dtmp {kernel = @k}
  wait
  d2h %h, %dout
  free %din
  free %dout
  free %dtmp
  return %h
}
)";

struct Case {
  std::string name;
  std::string body;  // kernel ops after the header, computing %y (stored to out[gid])
};

const std::vector<Case> kCases = {
    {"one call", "  %y = call %s, %lid, %x {callee = @mirror} : u32\n"},
    {"nested calls", "  %y = call %tmp, %gid, %lid, %x {callee = @twice} : u32\n"},
    {"barrier in a loop in the callee",
     "  %t = call %s, %lid, %x {callee = @tree_sum} : u32\n"
     "  %y = add %t, %lid : u32\n"},
    {"calls under a uniform if and in a loop",
     "  %wg = workgroup_id {dim = 0} : u32\n"
     "  %two = const {value = 2} : u32\n"
     "  %low = lt %wg, %two : bool\n"
     "  %m = if %low : u32 {\n"
     "    %a = call %s, %lid, %x {callee = @mirror} : u32\n"
     "    yield %a\n"
     "  } {\n"
     "    %b = call %tmp, %gid, %lid, %x {callee = @neighbour} : u32\n"
     "    yield %b\n"
     "  }\n"
     "  %zero = const {value = 0} : u32\n"
     "  %one = const {value = 1} : u32\n"
     "  %three = const {value = 3} : u32\n"
     "  %y = for %zero, %three, %one, %m : u32 { |%k: u32, %acc: u32|\n"
     "    %t = call %s, %lid, %acc {callee = @tree_sum} : u32\n"
     "    %u = add %t, %k : u32\n"
     "    %v = add %u, %lid : u32\n"
     "    yield %v\n"
     "  }\n"},
};

std::string programText(const std::string& body) {
  return std::string(kFunctions) + kKernelHeader + body + "  store %out, %gid, %y\n  return\n}\n" + kHost;
}


// The targets besides the interpreter that this build and machine have.
std::vector<std::unique_ptr<runtime::Device>> otherDevices() {
  std::vector<std::unique_ptr<runtime::Device>> devices;
  for (const std::string& t : runtime::availableTargets()) {
    if (t == "interp") continue;
    if (auto dev = runtime::openDevice(t)) devices.push_back(std::move(*dev));
  }
  return devices;
}

TEST(DifferentialBarrierCalls, AgreeOnEveryTarget) {
  auto devices = otherDevices();
#ifdef EPH_HAVE_LLVM
  bool haveCpu = false;
  for (auto& d : devices) haveCpu = haveCpu || d->target() == "cpu";
  EXPECT_TRUE(haveCpu);
#endif
  auto ref = runtime::openDevice("interp");
  ASSERT_TRUE(ref);
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    std::string text = programText(c.body);
    ir::Context ctx;
    auto m = ir::parseModule(ctx, text, "barrier-calls.eir");
    ASSERT_TRUE(m) << m.error().str() << "\n" << text;
    Status valid = ir::verify(**m);
    ASSERT_TRUE(valid) << valid.error().str();
    std::string before = ir::print(**m);
    HostRun want = runMainOn(**ref, **m);
    ASSERT_TRUE(want.results) << "interp: " << want.results.error().str();
    for (auto& dev : devices) {
      HostRun got = runMainOn(*dev, **m);
      ASSERT_TRUE(got.results) << dev->target() << ": " << got.results.error().str();
      auto diff = runtime::compareResults(*want.results, want.interp->memory(), *got.results, got.interp->memory(), {});
      EXPECT_FALSE(diff) << dev->target() << ": element " << diff->element << ": interp " << diff->a << ", "
                         << dev->target() << " " << diff->b;
    }
    // The inlining is the cpu target's own: the module is as it was.
    EXPECT_EQ(ir::print(**m), before);
  }
}

// A trap in inlined code names the callee's op on every target, as the
// interpreter does.
TEST(DifferentialBarrierCalls, TrapInCalleeIsReportedAtTheCalleesOp) {
  std::string text = programText("  %y = call %s, %lid {callee = @past_the_end} : u32\n");
  ir::Context ctx;
  auto m = ir::parseModule(ctx, text, "barrier-calls.eir");
  ASSERT_TRUE(m) << m.error().str();
  ASSERT_TRUE(ir::verify(**m));
  auto ref = runtime::openDevice("interp");
  ASSERT_TRUE(ref);
  HostRun want = runMainOn(**ref, **m);
  ASSERT_FALSE(want.results);
  const Loc& at = want.results.error().loc;
  ASSERT_TRUE(at.known());
  for (auto& dev : otherDevices()) {
    if (dev->target() == "vulkan") continue;  // robust buffer access: no traps
    HostRun got = runMainOn(*dev, **m);
    ASSERT_FALSE(got.results) << dev->target();
    EXPECT_EQ(got.results.error().loc.line, at.line) << got.results.error().str();
    EXPECT_EQ(got.results.error().loc.col, at.col) << got.results.error().str();
  }
}

}  // namespace
}  // namespace eph::test
