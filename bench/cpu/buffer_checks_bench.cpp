// eph_buffer_checks_bench: what runtime buffer checks (runtime/BufferChecks.h,
// `ephc run --check-buffers`) cost, on the interp and cpu devices.
//
//   Hooks/<target>/<checks>        one round of small device ops called
//                                  directly (alloc 16 x i32, h2d, dispatch of
//                                  a 16-wide kernel, d2h, free), through a
//                                  CheckedDevice or not
//   HostProgram/<target>/<checks>  runHost of a host program doing that
//                                  round 1000 times in a loop (interpreter
//                                  included), RunOptions::checkBuffers off/on
//
// checks = 0 is the plain device (no decorator installed), 1 the checked one.
// Use --benchmark_repetitions=N --benchmark_report_aggregates_only=true for
// medians.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/BufferChecks.h"
#include "runtime/Device.h"

namespace eph::bench {
namespace {

constexpr const char* kProgram = R"(
kernel @inc(%b: buffer<i32, device, write>) workgroup(16, 1, 1) {
  %i = global_id {dim = 0} : u32
  %v = load %b, %i : i32
  %one = const {value = 1} : i32
  %r = add %v, %one : i32
  store %b, %i, %r
  return
}

host @main(%rounds: u32) -> i32 {
  %n = const {value = 16} : u32
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %z = const {value = 0} : i32
  %h = alloc %n : buffer<i32, host, linear>
  for %zero, %n, %one { |%i: u32|
    store %h, %i, %z
    yield
  }
  for %zero, %rounds, %one { |%k: u32|
    %d = alloc %n : buffer<i32, device, linear>
    h2d %d, %h
    dispatch %one, %one, %one, %d {kernel = @inc}
    d2h %h, %d
    free %d
    yield
  }
  %x = load %h, %zero : i32
  free %h
  return %x
}
)";

const char* const kTargets[] = {"interp", "cpu"};

struct Fixture {
  ir::Context ctx;
  std::unique_ptr<ir::Module> module;
  std::unique_ptr<runtime::Device> device;

  explicit Fixture(const char* target) {
    auto m = ir::parseModule(ctx, kProgram, "buffer_checks_bench.eir");
    if (!m || !ir::verify(**m)) std::abort();
    module = std::move(*m);
    auto d = runtime::openDevice(target);
    if (!d || !(*d)->prepare(*module)) std::abort();
    device = std::move(*d);
  }
};

void Hooks(benchmark::State& state) {
  const char* target = kTargets[state.range(0)];
  bool checks = state.range(1) != 0;
  Fixture f(target);
  runtime::CheckedDevice checked(*f.device);
  runtime::Device& dev = checks ? static_cast<runtime::Device&>(checked) : *f.device;
  const ir::Type* i32 = f.ctx.i32();
  const ir::Type* buf = f.ctx.bufferType(i32, ir::Space::Device, ir::Ownership::Linear);
  const ir::Type* borrow = f.ctx.bufferType(i32, ir::Space::Device, ir::Ownership::Write);
  const ir::Function& inc = *f.module->lookup("inc");
  interp::BufferData host;
  host.elemType = i32;
  host.elems.assign(16, interp::RtValue::ofInt(i32, 1));
  host.written.assign(16, true);
  Loc site;
  for (auto _ : state) {
    auto h = dev.alloc(buf, 16, site);
    if (!h) std::abort();
    interp::RtValue arg;
    arg.type = borrow;
    arg.buffer = *h;
    bool ok = dev.upload(*h, host, site) && dev.dispatch(inc, {1, 1, 1}, {&arg, 1}, site) &&
              dev.download(host, *h, site) && dev.free(*h, site);
    if (!ok) std::abort();
  }
  state.SetLabel(std::string(target) + (checks ? " checked" : " plain"));
}

void HostProgram(benchmark::State& state) {
  const char* target = kTargets[state.range(0)];
  runtime::RunOptions opts;
  opts.checkBuffers = state.range(1) != 0;
  Fixture f(target);
  const ir::Function& main = *f.module->lookup("main");
  constexpr uint32_t kRounds = 1000;
  for (auto _ : state) {
    interp::Interpreter in(*f.module);
    auto r = runtime::runHost(*f.device, in, main, {interp::RtValue::ofInt(f.ctx.u32(), kRounds)}, opts);
    if (!r || (*r)[0].i != int64_t(kRounds)) std::abort();
  }
  state.SetItemsProcessed(state.iterations() * kRounds);
  state.SetLabel(std::string(target) + (opts.checkBuffers ? " checked" : " plain"));
}

BENCHMARK(Hooks)->ArgsProduct({{0, 1}, {0, 1}})->ArgNames({"target", "checks"});
BENCHMARK(HostProgram)->ArgsProduct({{0, 1}, {0, 1}})->ArgNames({"target", "checks"})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace eph::bench

BENCHMARK_MAIN();
