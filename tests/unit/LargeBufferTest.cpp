// Large device buffers: the interpreter's cap on one allocation (2^26
// elements) holds for the buffers the interpreter stores itself (host
// buffers, device buffers of the reference interpreter and InterpDevice); a
// device buffer on the cpu target is limited only by the device. A host
// program allocates a 1 GiB f32 buffer (2^28 elements), fills it with a
// kernel and reduces it on the device, so that only one value comes back to
// the host; the sum is checked against its closed form, and the same
// program at a small size against the interpreter.
#ifdef EPH_HAVE_LLVM

#include <gtest/gtest.h>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/cpu/CpuDevice.h"

namespace eph::test {
namespace {

// fill: d[i] = i & 7. partial: invocation g sums its chunk of d (exact in
// f32: at most 7 * chunk < 2^24) into p[g]. total: one invocation adds p.
const char* kProgram = R"(
kernel @fill(%d: buffer<f32, device, write>) workgroup(256, 1, 1) {
  %gid = global_id {dim = 0} : u32
  %n = buffer.len %d : u32
  %inside = lt %gid, %n : bool
  if %inside {
    %seven = const {value = 7} : u32
    %r = and %gid, %seven : u32
    %f = cast %r : f32
    store %d, %gid, %f
    yield
  } {
    yield
  }
  return
}

kernel @partial(%d: buffer<f32, device, read>, %p: buffer<u64, device, write>, %chunk: u32) workgroup(64, 1, 1) {
  %gid = global_id {dim = 0} : u32
  %np = buffer.len %p : u32
  %inside = lt %gid, %np : bool
  if %inside {
    %begin = mul %gid, %chunk : u32
    %end = add %begin, %chunk : u32
    %zf = const {value = 0.0} : f32
    %one = const {value = 1} : u32
    %s = for %begin, %end, %one, %zf : f32 { |%i: u32, %acc: f32|
      %x = load %d, %i : f32
      %a = add %acc, %x : f32
      yield %a
    }
    %u = cast %s : u64
    store %p, %gid, %u
    yield
  } {
    yield
  }
  return
}

kernel @total(%p: buffer<u64, device, read>, %out: buffer<u64, device, write>) workgroup(1, 1, 1) {
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %z = const {value = 0} : u64
  %np = buffer.len %p : u32
  %s = for %zero, %np, %one, %z : u64 { |%i: u32, %acc: u64|
    %x = load %p, %i : u64
    %a = add %acc, %x : u64
    yield %a
  }
  store %out, %zero, %s
  return
}

host @main(%n: u32, %parts: u32) -> buffer<u64, host, linear> {
  %one = const {value = 1} : u32
  %c255 = const {value = 255} : u32
  %c256 = const {value = 256} : u32
  %c63 = const {value = 63} : u32
  %c64 = const {value = 64} : u32
  %d = alloc %n : buffer<f32, device, linear>
  %n255 = add %n, %c255 : u32
  %g1 = div %n255, %c256 : u32
  dispatch %g1, %one, %one, %d {kernel = @fill}
  %p = alloc %parts : buffer<u64, device, linear>
  %chunk = div %n, %parts : u32
  %p63 = add %parts, %c63 : u32
  %g2 = div %p63, %c64 : u32
  dispatch %g2, %one, %one, %d, %p, %chunk {kernel = @partial}
  %o = alloc %one : buffer<u64, device, linear>
  dispatch %one, %one, %one, %p, %o {kernel = @total}
  wait
  %h = alloc %one : buffer<u64, host, linear>
  d2h %h, %o
  free %d
  free %p
  free %o
  return %h
}
)";

// Runs @main(n, parts) on `target` with host code run as `host`; the result
// as ephc prints it, or "error: <message>".
std::string run(const std::string& target, uint64_t n, uint64_t parts,
                runtime::RunOptions::Host host = runtime::RunOptions::Host::Auto) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx, kProgram, "large.eir");
  if (!m) return "parse error: " + m.error().str();
  if (Status s = ir::verify(**m); !s) return "verify error: " + s.error().str();
  std::unique_ptr<runtime::Device> dev;
  if (target == "cpu") {
    dev = std::make_unique<runtime::CpuDevice>();
  } else {
    auto d = runtime::openDevice(target);
    if (!d) return "no device: " + d.error().message;
    dev = std::move(*d);
  }
  interp::Interpreter in(**m);
  runtime::RunOptions opts;
  opts.host = host;
  std::vector<interp::RtValue> args(2);
  args[0].type = ctx.u32();
  args[0].i = int64_t(n);
  args[1].type = ctx.u32();
  args[1].i = int64_t(parts);
  auto r = runtime::runHost(*dev, in, *(*m)->lookup("main"), args, opts);
  if (!r) return "error: " + r.error().str();
  return interp::format((*r)[0], &in.memory());
}

// The sum of i & 7 over i < n, n a multiple of 8.
std::string closedForm(uint64_t n) { return "[" + std::to_string(n / 8 * 28) + "]"; }

TEST(LargeBuffers, TheProgramGivesTheInterpretersResultAtASmallSize) {
  EXPECT_EQ(run("interp", 4096, 64), closedForm(4096));
  EXPECT_EQ(run("cpu", 4096, 64), closedForm(4096));
  EXPECT_EQ(run("cpu", 4096, 64, runtime::RunOptions::Host::Interp), closedForm(4096));
}

// 2^28 f32 = 1 GiB on the device, filled and summed there: compiled host
// code (the cpu default) and interpreted host code both allocate it.
TEST(LargeBuffers, OneGibibyteF32BufferRunsOnCpu) {
  const uint64_t n = uint64_t(1) << 28;
  EXPECT_EQ(run("cpu", n, 16384), closedForm(n));
}

TEST(LargeBuffers, InterpretedHostCodeAllocatesBeyondTheInterpretersCapOnCpu) {
  // 150,000,000 f32 (600 MB), the size that once failed at the cap.
  const uint64_t n = 150000000;
  EXPECT_EQ(run("cpu", n, 15000, runtime::RunOptions::Host::Interp), closedForm(n));
}

TEST(LargeBuffers, TheInterpretersOwnDeviceBuffersKeepItsCap) {
  EXPECT_EQ(run("interp", 150000000, 15000),
            "error: large.eir:61:3: error: allocation of 150000000 elements is larger than the interpreter's "
            "limit of 67108864");
  // The reference interpreter without a device.
  ir::Context ctx;
  auto m = ir::parseModule(ctx, kProgram, "large.eir");
  ASSERT_TRUE(m);
  interp::Interpreter in(**m);
  std::vector<interp::RtValue> args(2);
  args[0].type = args[1].type = ctx.u32();
  args[0].i = 150000000;
  args[1].i = 15000;
  auto r = in.call(*(*m)->lookup("main"), args);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().str(),
            "large.eir:61:3: error: allocation of 150000000 elements is larger than the interpreter's limit of "
            "67108864");
}

TEST(LargeBuffers, ACpuBufferBeyondTheDevicesLargestIsAnError) {
  runtime::CpuDevice dev;
  ir::Context ctx;
  const ir::Type* t = ctx.bufferType(ctx.f32(), ir::Space::Device, ir::Ownership::Linear);
  uint64_t count = dev.caps().maxBufferBytes / 4 + 1;
  auto h = dev.alloc(t, count, {});
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().message, "allocation of " + std::to_string(count) +
                                   " elements is larger than the device's largest buffer (" +
                                   std::to_string(dev.caps().maxBufferBytes) + " bytes)");
}

}  // namespace
}  // namespace eph::test

#endif  // EPH_HAVE_LLVM
