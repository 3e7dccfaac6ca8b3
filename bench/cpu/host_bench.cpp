// Host code compiled by the LLVM target (runtime/cpu/HostAbi.h) against the
// interpreter running the same host function: a recursive fib(25) (242785
// calls), a loop over a host buffer (a sum of squares over 4096 elements
// stored and loaded through bounds-checked host buffer accesses), and
// recursive data: a list of 100000 boxed cells built by a loop and summed by
// a while loop (box.new / box.get with their type checks). All run
// through runtime::runHost on a CpuDevice, as `ephc run --target=cpu
// --host=jit|interp` does; the JIT compile is cached, outside the timing.
//
//   eph_host_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/Device.h"

namespace eph::bench {
namespace {

constexpr const char* kProgram = R"(host @fib(%n: i32) -> i32 {
  %two = const {value = 2} : i32
  %small = lt %n, %two : bool
  %r = if %small : i32 {
    yield %n
  } {
    %one = const {value = 1} : i32
    %a = sub %n, %one : i32
    %b = sub %n, %two : i32
    %fa = call %a {callee = @fib} : i32
    %fb = call %b {callee = @fib} : i32
    %s = add %fa, %fb : i32
    yield %s
  }
  return %r
}

host @fib25() -> i32 {
  %n = const {value = 25} : i32
  %r = call %n {callee = @fib} : i32
  return %r
}

host @list_sum() -> i64 {
  %zero = const {value = 0} : i64
  %one = const {value = 1} : i64
  %n = const {value = 100000} : i64
  %u = struct.make : struct<>
  %nil = sum.make %u {tag = 0} : sum<struct<>, struct<i64, box>>
  %b0 = box.new %nil : box
  %l = for %zero, %n, %one, %b0 : box { |%i: i64, %acc: box|
    %cell = struct.make %i, %acc : struct<i64, box>
    %cons = sum.make %cell {tag = 1} : sum<struct<>, struct<i64, box>>
    %b = box.new %cons : box
    yield %b
  }
  %last, %total = while %l, %zero : box, i64 { |%c: box, %acc: i64|
    %v = box.get %c : sum<struct<>, struct<i64, box>>
    %go = match %v : bool { |%e: struct<>|
      %f = const {value = false} : bool
      yield %f
    } { |%p: struct<i64, box>|
      %t = const {value = true} : bool
      yield %t
    }
    condition %go, %c, %acc
  } { |%c: box, %acc: i64|
    %v = box.get %c : sum<struct<>, struct<i64, box>>
    %nl, %na = match %v : box, i64 { |%e: struct<>|
      yield %c, %acc
    } { |%p: struct<i64, box>|
      %x = struct.extract %p {index = 0} : i64
      %rest = struct.extract %p {index = 1} : box
      %a = add %acc, %x : i64
      yield %rest, %a
    }
    yield %nl, %na
  }
  return %total
}

host @squares() -> i64 {
  %n = const {value = 4096} : i64
  %zero = const {value = 0} : i64
  %one = const {value = 1} : i64
  %b = alloc %n : buffer<i64, host, linear>
  for %zero, %n, %one { |%i: i64|
    %sq = mul %i, %i : i64
    store %b, %i, %sq
    yield
  }
  %s = for %zero, %n, %one, %zero : i64 { |%i: i64, %acc: i64|
    %x = load %b, %i : i64
    %acc1 = add %acc, %x : i64
    yield %acc1
  }
  free %b
  return %s
}
)";

struct Fixture {
  ir::Context ctx;
  std::unique_ptr<ir::Module> module;
  std::unique_ptr<runtime::Device> device;
  Fixture() {
    auto m = ir::parseModule(ctx, kProgram, "host_bench.eir");
    if (!m || !ir::verify(**m)) std::abort();
    module = std::move(*m);
    auto d = runtime::openDevice("cpu");
    if (!d) std::abort();
    device = std::move(*d);
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void run(benchmark::State& st, const char* entry, runtime::RunOptions::Host host, int64_t expect) {
  Fixture& f = fixture();
  runtime::RunOptions opts;
  opts.host = host;
  const ir::Function& fn = *f.module->lookup(entry);
  for (auto _ : st) {
    interp::Interpreter in(*f.module);
    auto r = runtime::runHost(*f.device, in, fn, {}, opts);
    if (!r || r->size() != 1 || (*r)[0].i != expect) {
      st.SkipWithError(r ? "wrong result" : r.error().str().c_str());
      break;
    }
  }
}

void BM_fib25_interp(benchmark::State& st) { run(st, "fib25", runtime::RunOptions::Host::Interp, 75025); }
void BM_fib25_compiled(benchmark::State& st) { run(st, "fib25", runtime::RunOptions::Host::Jit, 75025); }
// sum of i^2 for i < 4096
constexpr int64_t kSquares = int64_t(4095) * 4096 * 8191 / 6;
void BM_squares_interp(benchmark::State& st) { run(st, "squares", runtime::RunOptions::Host::Interp, kSquares); }
void BM_squares_compiled(benchmark::State& st) { run(st, "squares", runtime::RunOptions::Host::Jit, kSquares); }

// sum of i for i < 100000
constexpr int64_t kListSum = int64_t(99999) * 100000 / 2;
void BM_list_sum_interp(benchmark::State& st) { run(st, "list_sum", runtime::RunOptions::Host::Interp, kListSum); }
void BM_list_sum_compiled(benchmark::State& st) { run(st, "list_sum", runtime::RunOptions::Host::Jit, kListSum); }

BENCHMARK(BM_fib25_interp)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fib25_compiled)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_squares_interp)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_squares_compiled)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_list_sum_interp)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_list_sum_compiled)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace eph::bench

BENCHMARK_MAIN();
