// CpuDevice: host programs give the interpreter's results on the cpu target
// (examples, barriers at top level and inside uniform if/for/while, values
// live across barriers, 2D/3D workgroups, workgroup memory, atomics,
// device functions, struct/sum/array/vec3/bool storage), traps come back as
// the interpreter's errors at the right op, unsupported barriers are compile
// errors, the thread count is honoured and compiled modules are cached.
#ifdef EPH_HAVE_LLVM

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <span>
#include <vector>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cpu/KernelCache.h"

namespace eph::test {
namespace {

// Runs @main of `text` on `target` (with a CpuDevice built from `opts` for
// "cpu"); results one per line, or "error: <message>".
std::string runMain(const std::string& text, const std::string& target, runtime::CpuOptions opts = {}) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx, text, "test.eir");
  if (!m) return "parse error: " + m.error().str();
  if (Status s = ir::verify(**m); !s) return "verify error: " + s.error().str();
  std::unique_ptr<runtime::Device> dev;
  if (target == "cpu") {
    dev = std::make_unique<runtime::CpuDevice>(opts);
  } else {
    auto d = runtime::openDevice(target);
    if (!d) return "no device: " + d.error().message;
    dev = std::move(*d);
  }
  interp::Interpreter in(**m);
  auto r = runtime::runHost(*dev, in, *(*m)->lookup("main"), {});
  if (!r) return "error: " + r.error().str();
  std::string s;
  for (auto& v : *r) s += interp::format(v, &in.memory()) + "\n";
  return s;
}

// A host @main that uploads n u32 values i*mul+add, dispatches @k over
// `groups` x 1 x 1 with (in, out) buffers, and returns out.
std::string withHost(const std::string& kernel, unsigned n, unsigned groups, unsigned outN, const std::string& outType = "u32") {
  std::string N = std::to_string(n), G = std::to_string(groups), O = std::to_string(outN);
  return kernel + R"(
host @main() -> buffer<)" + outType + R"(, host, linear> {
  %n = const {value = )" + N + R"(} : u32
  %no = const {value = )" + O + R"(} : u32
  %g = const {value = )" + G + R"(} : u32
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %three = const {value = 3} : u32
  %h = alloc %n : buffer<u32, host, linear>
  for %zero, %n, %one { |%i: u32|
    %a = mul %i, %three : u32
    %b = add %a, %one : u32
    store %h, %i, %b
    yield
  }
  %ho = alloc %no : buffer<)" + outType + R"(, host, linear>
  for %zero, %no, %one { |%i: u32|
    %c = cast %zero : )" + outType + R"(
    store %ho, %i, %c
    yield
  }
  %d = alloc %n : buffer<u32, device, linear>
  %do = alloc %no : buffer<)" + outType + R"(, device, linear>
  h2d %d, %h
  h2d %do, %ho
  dispatch %g, %one, %one, %d, %do {kernel = @k}
  wait
  d2h %ho, %do
  free %h
  free %d
  free %do
  return %ho
}
)";
}

void expectSame(const std::string& text, const std::string& expected = "") {
  std::string want = runMain(text, "interp");
  std::string got = runMain(text, "cpu");
  EXPECT_EQ(want, got) << text;
  EXPECT_EQ(want.rfind("error", 0), std::string::npos) << want;
  if (!expected.empty()) EXPECT_EQ(got, expected);
}

std::string readExample(const std::string& name) {
  std::ifstream in(std::string(EPH_SOURCE_DIR) + "/examples/ir/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CpuDevice, ExamplesGiveTheInterpretersResults) {
  expectSame(readExample("saxpy.eir"), "0\n1000000\n");
  expectSame(readExample("reduce.eir"), "499500\ntrue\n");
  expectSame(readExample("histogram.eir"), "[250, 500, 0, 0, 250, 0, 0, 0]\n");
}

// A freed block of 64 KiB or more is kept for the next allocation of its
// size (a program run again allocates the same sizes): the same memory comes
// back as it was left (buffers are not zeroed, as on Vulkan; with every new
// buffer filled with 0xff bytes for a trial, only this test's old check of
// zeros failed); other sizes and small blocks come fresh, and the freed
// handle stays an error.
TEST(CpuDevice, FreedLargeBlocksAreReused) {
  ir::Context ctx;
  runtime::CpuDevice dev;
  const ir::Type* buf = ctx.bufferType(ctx.f32(), ir::Space::Device, ir::Ownership::Linear);
  const uint64_t n = 1 << 16;  // 256 KiB
  auto a = dev.alloc(buf, n, {});
  ASSERT_TRUE(a);
  std::vector<float> ones(n, 1.0f);
  ASSERT_TRUE(dev.uploadBytes(*a, std::as_bytes(std::span(ones)), {}));
  std::byte* first = dev.bytes(*a).data();
  ASSERT_TRUE(dev.free(*a, {}));
  EXPECT_FALSE(dev.free(*a, {}));  // freed is freed
  auto other = dev.alloc(buf, n + 64, {});
  ASSERT_TRUE(other);
  EXPECT_NE(dev.bytes(*other).data(), first);
  auto again = dev.alloc(buf, n, {});
  ASSERT_TRUE(again);
  EXPECT_EQ(dev.bytes(*again).data(), first);
  std::vector<float> got(n, 7.0f);
  ASSERT_TRUE(dev.downloadBytes(std::as_writable_bytes(std::span(got)), *again, {}));
  EXPECT_EQ(std::count(got.begin(), got.end(), 1.0f), int64_t(n));  // not zeroed
}

TEST(CpuDevice, ValuesLiveAcrossTopLevelBarriers) {
  // Each invocation keeps %v and %w across two barriers and reads its
  // neighbours' values from workgroup memory.
  expectSame(withHost(R"(
kernel @k(%in: buffer<u32, device, read>, %out: buffer<u32, device, write>) workgroup(32, 1, 1) {
  %s = workgroup.alloc {size = 32} : buffer<u32, workgroup, write>
  %lid = local_id {dim = 0} : u32
  %gid = global_id {dim = 0} : u32
  %one = const {value = 1} : u32
  %mask = const {value = 31} : u32
  %v = load %in, %gid : u32
  %w = mul %v, %v : u32
  store %s, %lid, %v
  barrier
  %next = add %lid, %one : u32
  %j = and %next, %mask : u32
  %u = load %s, %j : u32
  barrier
  store %s, %lid, %w
  barrier
  %x = load %s, %j : u32
  %t = add %u, %x : u32
  %r = sub %t, %v : u32
  store %out, %gid, %r
  return
}
)", 96, 3, 96));
}

TEST(CpuDevice, BarriersInsideUniformLoopsAndIfs) {
  // Tree reduction with a while loop halving s (a loop-carried value, checked
  // uniform at run time) and a for loop with a barrier, plus a uniform if.
  expectSame(withHost(R"(
kernel @k(%in: buffer<u32, device, read>, %out: buffer<u32, device, write>) workgroup(64, 1, 1) {
  %s = workgroup.alloc {size = 64} : buffer<u32, workgroup, write>
  %lid = local_id {dim = 0} : u32
  %gid = global_id {dim = 0} : u32
  %grp = workgroup_id {dim = 0} : u32
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %two = const {value = 2} : u32
  %half = const {value = 32} : u32
  %v = load %in, %gid : u32
  store %s, %lid, %v
  barrier
  %end = while %half : u32 { |%h: u32|
    %more = gt %h, %zero : bool
    condition %more, %h
  } { |%h: u32|
    %act = lt %lid, %h : bool
    if %act {
      %a = load %s, %lid : u32
      %j = add %lid, %h : u32
      %b = load %s, %j : u32
      %c = add %a, %b : u32
      store %s, %lid, %c
      yield
    } {
      yield
    }
    barrier
    %h2 = div %h, %two : u32
    yield %h2
  }
  %total = load %s, %zero : u32
  barrier
  %acc = for %zero, %two, %one, %total : u32 { |%k: u32, %a: u32|
    %p = add %lid, %k : u32
    store %s, %lid, %p
    barrier
    %q = load %s, %zero : u32
    %a2 = add %a, %q : u32
    barrier
    yield %a2
  }
  %odd = rem %grp, %two : u32
  %isodd = eq %odd, %one : bool
  %final = if %isodd : u32 {
    store %s, %lid, %acc
    barrier
    %z = load %s, %zero : u32
    %m = add %z, %end : u32
    yield %m
  } {
    yield %acc
  }
  store %out, %gid, %final
  return
}
)", 256, 4, 256));
}

TEST(CpuDevice, MultiDimensionalWorkgroupsAndBuiltins) {
  expectSame(withHost(R"(
device @mix(%a: u32) -> u32 {
  %x = local_id {dim = 0} : u32
  %y = local_id {dim = 1} : u32
  %z = local_id {dim = 2} : u32
  %sg = subgroup_id : u32
  %sl = subgroup_local_id : u32
  %t = mul %y, %a : u32
  %u = add %t, %x : u32
  %w = add %u, %z : u32
  %v = mul %sg, %sl : u32
  %r = add %w, %v : u32
  return %r
}
kernel @k(%in: buffer<u32, device, read>, %out: buffer<u32, device, write>) workgroup(4, 3, 2) {
  %gx = global_id {dim = 0} : u32
  %gy = global_id {dim = 1} : u32
  %gz = global_id {dim = 2} : u32
  %nx = num_workgroups {dim = 0} : u32
  %sx = workgroup_size {dim = 0} : u32
  %w = mul %nx, %sx : u32
  %row = mul %gy, %w : u32
  %three = const {value = 3} : u32
  %plane = mul %three, %w : u32
  %zoff = mul %gz, %plane : u32
  %i0 = add %row, %gx : u32
  %i = add %i0, %zoff : u32
  %v = load %in, %i : u32
  %m = call %v {callee = @mix} : u32
  store %out, %i, %m
  return
}
)", 48, 2, 48));
}

TEST(CpuDevice, AtomicsOnIntegersAndFloats) {
  expectSame(R"(
kernel @k(%ints: buffer<i32, device, write>, %floats: buffer<f32, device, write>, %big: buffer<u64, device, write>) workgroup(64, 1, 1) {
  %gid = global_id {dim = 0} : u32
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %two = const {value = 2} : u32
  %three = const {value = 3} : u32
  %v = cast %gid : i32
  %a = atomic.add %ints, %zero, %v : i32
  %b = atomic.min %ints, %one, %v : i32
  %c = atomic.max %ints, %two, %v : i32
  %f = cast %gid : f32
  %d = atomic.add %floats, %zero, %f : f32
  %w = cast %gid : u64
  %e = atomic.max %big, %zero, %w : u64
  %x = atomic.xchg %ints, %three, %v : i32
  %seven = const {value = 7} : i32
  %nine = const {value = 9} : i32
  %y = atomic.cmpxchg %ints, %three, %seven, %nine : i32
  return
}
host @main() -> (buffer<i32, host, linear>, buffer<f32, host, linear>, buffer<u64, host, linear>) {
  %four = const {value = 4} : u32
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %g = const {value = 16} : u32
  %z = const {value = 0} : i32
  %big = const {value = 1000000} : i32
  %zf = const {value = 0.0} : f32
  %zu = const {value = 0} : u64
  %hi = alloc %four : buffer<i32, host, linear>
  %hf = alloc %one : buffer<f32, host, linear>
  %hu = alloc %one : buffer<u64, host, linear>
  %two = const {value = 2} : u32
  %three = const {value = 3} : u32
  store %hi, %zero, %z
  store %hi, %one, %big
  store %hi, %two, %z
  store %hi, %three, %z
  store %hf, %zero, %zf
  store %hu, %zero, %zu
  %di = alloc %four : buffer<i32, device, linear>
  %df = alloc %one : buffer<f32, device, linear>
  %du = alloc %one : buffer<u64, device, linear>
  h2d %di, %hi
  h2d %df, %hf
  h2d %du, %hu
  dispatch %g, %one, %one, %di, %df, %du {kernel = @k}
  wait
  d2h %hf, %df
  d2h %hu, %du
  %hi2 = alloc %four : buffer<i32, host, linear>
  d2h %hi2, %di
  %seven = const {value = 7} : i32
  %nine = const {value = 9} : i32
  %last = load %hi2, %three : i32
  %ok = eq %last, %nine : bool
  %fixed = select %ok, %seven, %last : i32
  store %hi2, %three, %fixed
  free %hi
  free %di
  free %df
  free %du
  return %hi2, %hf, %hu
}
)");
}

TEST(CpuDevice, StorageLayoutOfStructsSumsArraysAndBools) {
  // Elements round-trip through storage layout and get transformed in kernels.
  std::string text = R"(
kernel @k(%a: buffer<struct<bool, vec<f32, 3>, i8, array<u16, 3>>, device, write>, %s: buffer<sum<f64, vec<i32, 2>, bool>, device, write>, %p: struct<u8, f64, bool>) workgroup(2, 1, 1) {
  %i = global_id {dim = 0} : u32
  %e = load %a, %i : struct<bool, vec<f32, 3>, i8, array<u16, 3>>
  %b = struct.extract %e {index = 0} : bool
  %nb = not %b : bool
  %v = struct.extract %e {index = 1} : vec<f32, 3>
  %v2 = add %v, %v : vec<f32, 3>
  %arr = struct.extract %e {index = 3} : array<u16, 3>
  %one = const {value = 1} : u32
  %x = array.get %arr, %one : u16
  %pb = struct.extract %p {index = 2} : bool
  %pu = struct.extract %p {index = 0} : u8
  %pu16 = cast %pu : u16
  %x2 = add %x, %pu16 : u16
  %arr2 = array.set %arr, %one, %x2 : array<u16, 3>
  %e1 = struct.insert %e, %nb {index = 0} : struct<bool, vec<f32, 3>, i8, array<u16, 3>>
  %e2 = struct.insert %e1, %v2 {index = 1} : struct<bool, vec<f32, 3>, i8, array<u16, 3>>
  %e3 = struct.insert %e2, %arr2 {index = 3} : struct<bool, vec<f32, 3>, i8, array<u16, 3>>
  store %a, %i, %e3
  %old = load %s, %i : sum<f64, vec<i32, 2>, bool>
  %tag = sum.tag %old : u32
  %new = match %old : sum<f64, vec<i32, 2>, bool> { |%d: f64|
    %pd = struct.extract %p {index = 1} : f64
    %d2 = mul %d, %pd : f64
    %r = sum.make %d2 {tag = 0} : sum<f64, vec<i32, 2>, bool>
    yield %r
  } { |%w: vec<i32, 2>|
    %r = sum.make %pb {tag = 2} : sum<f64, vec<i32, 2>, bool>
    yield %r
  } { |%q: bool|
    %w = vec.make %i, %tag : vec<u32, 2>
    %wi = cast %w : vec<i32, 2>
    %r = sum.make %wi {tag = 1} : sum<f64, vec<i32, 2>, bool>
    yield %r
  }
  store %s, %i, %new
  return
}
host @main() -> (buffer<struct<bool, vec<f32, 3>, i8, array<u16, 3>>, host, linear>, buffer<sum<f64, vec<i32, 2>, bool>, host, linear>) {
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %two = const {value = 2} : u32
  %three = const {value = 3} : u32
  %t = const {value = true} : bool
  %f1 = const {value = 1.5} : f32
  %f2 = const {value = -2.25} : f32
  %v = vec.make %f1, %f2, %f1 : vec<f32, 3>
  %c = const {value = -5} : i8
  %u1 = const {value = 7} : u16
  %u2 = const {value = 65530} : u16
  %arr = array.make %u1, %u2, %u1 : array<u16, 3>
  %e = struct.make %t, %v, %c, %arr : struct<bool, vec<f32, 3>, i8, array<u16, 3>>
  %ha = alloc %two : buffer<struct<bool, vec<f32, 3>, i8, array<u16, 3>>, host, linear>
  store %ha, %zero, %e
  store %ha, %one, %e
  %d = const {value = 0.1} : f64
  %s0 = sum.make %d {tag = 0} : sum<f64, vec<i32, 2>, bool>
  %s1 = sum.make %t {tag = 2} : sum<f64, vec<i32, 2>, bool>
  %hs = alloc %two : buffer<sum<f64, vec<i32, 2>, bool>, host, linear>
  store %hs, %zero, %s0
  store %hs, %one, %s1
  %da = alloc %two : buffer<struct<bool, vec<f32, 3>, i8, array<u16, 3>>, device, linear>
  %ds = alloc %two : buffer<sum<f64, vec<i32, 2>, bool>, device, linear>
  h2d %da, %ha
  h2d %ds, %hs
  %pu = const {value = 9} : u8
  %pd = const {value = 3.0} : f64
  %p = struct.make %pu, %pd, %t : struct<u8, f64, bool>
  dispatch %one, %one, %one, %da, %ds, %p {kernel = @k}
  wait
  d2h %ha, %da
  d2h %hs, %ds
  free %da
  free %ds
  return %ha, %hs
}
)";
  expectSame(text);
}

std::string trapKernel(const std::string& body) {
  return withHost(R"(
kernel @k(%in: buffer<u32, device, read>, %out: buffer<u32, device, write>) workgroup(8, 1, 1) {
  %gid = global_id {dim = 0} : u32
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
)" + body + R"(
  return
}
)", 16, 2, 16);
}

TEST(CpuDevice, TrapsBecomeTheInterpretersErrors) {
  std::string oob = trapKernel("  %j = add %gid, %one : u32\n  %v = load %in, %j : u32 loc(\"k.eir\":7:3)\n  store %out, %gid, %v");
  std::string got = runMain(oob, "cpu");
  // Invocation 15 (of 16, in two workgroups) reads in[16]: the same error on both.
  const char* oobError = "k.eir:7:3: error: index 16 is out of bounds for a buffer of 16 elements (in the "
                         "invocation with global id (15, 0, 0))";
  EXPECT_NE(got.find(oobError), std::string::npos) << got;
  EXPECT_NE(runMain(oob, "interp").find(oobError), std::string::npos);

  std::string div = trapKernel("  %v = load %in, %gid : u32\n  %q = div %v, %zero : u32 loc(\"k.eir\":9:5)\n  store %out, %gid, %q");
  got = runMain(div, "cpu");
  EXPECT_NE(got.find("k.eir:9:5: error: 'div': integer division by zero"), std::string::npos) << got;

  std::string step = trapKernel("  %s = load %in, %zero : u32\n  %z = sub %s, %s : u32\n  for %zero, %one, %z { |%i: u32|\n    yield\n  } loc(\"k.eir\":4:4)\n  store %out, %gid, %z");
  got = runMain(step, "cpu");
  EXPECT_NE(got.find("k.eir:4:4: error: 'for': 'for' has a step of 0"), std::string::npos) << got;

  std::string diverge = trapKernel(
      "  %lid = local_id {dim = 0} : u32\n  %two = const {value = 2} : u32\n  %c = lt %lid, %two : bool\n"
      "  if %c {\n    barrier\n    yield\n  } {\n    yield\n  } loc(\"k.eir\":12:3)\n  store %out, %gid, %lid");
  got = runMain(diverge, "cpu");
  EXPECT_NE(got.find("k.eir:12:3: error: barrier divergence"), std::string::npos) << got;
  EXPECT_NE(runMain(diverge, "interp").find("barrier divergence"), std::string::npos);
}

TEST(CpuDevice, UnsupportedBarriersAreCompileErrors) {
  // A barrier in a called function runs (the call is inlined,
  // targets/llvm/BarrierCalls.h), but not when the call sits in a 'match':
  // the error names the match.
  std::string viaCall = R"(
device @sync() {
  barrier
  return
}
kernel @k(%out: buffer<u32, device, write>, %s: sum<u32, f32>) workgroup(8, 1, 1) {
  call {callee = @sync}
  match %s { |%a: u32|
    call {callee = @sync}
    yield
  } { |%b: f32|
    yield
  } loc("b.eir":8:3)
  return
}
host @main() {
  return
}
)";
  // Kernels compile when first dispatched (never here), or all at prepare()
  // with CpuOptions::eager.
  EXPECT_EQ(runMain(viaCall, "cpu"), "");
  runtime::KernelCache cache("");
  runtime::CpuOptions eager;
  eager.eager = true;
  eager.cache = &cache;
  std::string got = runMain(viaCall, "cpu", eager);
  EXPECT_NE(got.find("b.eir:8:3: error: 'match': a barrier inside 'match' is not supported"), std::string::npos) << got;

  std::string inMatch = R"(
kernel @k(%out: buffer<u32, device, write>, %s: sum<u32, f32>) workgroup(8, 1, 1) {
  match %s { |%a: u32|
    barrier
    yield
  } { |%b: f32|
    yield
  } loc("b.eir":2:3)
  return
}
host @main() {
  return
}
)";
  got = runMain(inMatch, "cpu", eager);
  EXPECT_NE(got.find("b.eir:2:3: error: 'match': a barrier inside 'match' is not supported"), std::string::npos) << got;
}

TEST(CpuDevice, ThreadCountsGiveTheSameResults) {
  std::string text = readExample("histogram.eir");
  for (unsigned threads : {1u, 2u, 5u}) {
    runtime::CpuOptions o;
    o.threads = threads;
    runtime::CpuDevice dev(o);
    EXPECT_EQ(dev.threads(), threads);
    EXPECT_EQ(runMain(text, "cpu", o), "[250, 500, 0, 0, 250, 0, 0, 0]\n");
  }
  setenv("EPH_THREADS", "3", 1);
  EXPECT_EQ(runtime::CpuDevice().threads(), 3u);
  unsetenv("EPH_THREADS");
  EXPECT_FALSE(runtime::CpuDevice().caps().isGpu);
}

TEST(CpuDevice, CompiledKernelsAreCachedByContent) {
  std::string text = readExample("saxpy.eir") + "\n// a comment does not change the module\n";
  runtime::KernelCache cache("");  // memory only
  runtime::CpuOptions o;
  o.cache = &cache;
  EXPECT_EQ(runMain(text, "cpu", o), "0\n1000000\n");
  size_t before = cache.stats().compiled;
  EXPECT_GE(before, 1u);
  EXPECT_EQ(runMain(text, "cpu", o), "0\n1000000\n");
  EXPECT_EQ(runMain(readExample("saxpy.eir"), "cpu", o), "0\n1000000\n");
  EXPECT_EQ(cache.stats().compiled, before);
  o.lower.optLevel = 0;
  EXPECT_EQ(runMain(text, "cpu", o), "0\n1000000\n");
  EXPECT_EQ(cache.stats().compiled, 2 * before);
}

TEST(CpuDevice, OpensThroughTheDeviceApi) {
  auto targets = runtime::availableTargets();
  EXPECT_NE(std::find(targets.begin(), targets.end(), "cpu"), targets.end());
  auto dev = runtime::openDevice("cpu");
  ASSERT_TRUE(dev) << dev.error().message;
  EXPECT_EQ((*dev)->target(), "cpu");
  std::string def = runtime::defaultTarget();
  EXPECT_TRUE(def == "cpu" || def == "vulkan") << def;
}

}  // namespace
}  // namespace eph::test

#endif  // EPH_HAVE_LLVM
