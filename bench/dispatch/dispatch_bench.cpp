// eph_dispatch_bench: the host cost of one dispatch through the runtime API,
// on each device this build has. A one-workgroup kernel (64 invocations,
// each adding 1 to its element) is dispatched N times into one buffer:
//
//   record   mean time of Device::dispatch (what the host spends per
//            dispatch: argument checks, descriptor set, barrier tracking,
//            command recording; on cpu the kernel runs inside it)
//   wait     the final wait (on Vulkan: submitting the batch and running it)
//   total    (record + wait) / N
//
// Vulkan runs twice: without GPU timestamps (the default) and with them
// (VulkanOptions::profile, as every dispatch was stamped before they became
// opt-in). The buffer's final contents are checked (N in every element).
//
// Each figure is the median of R runs (R = 5).
//
// Then, on Vulkan, pipelined submission (VulkanOptions::batchCommands and
// batchesInFlight): a chain of K batches of M dependent dispatches of @spin
// (one workgroup of 64 invocations, each running an LCG for S steps on its
// element; every dispatch reads what the one before wrote), recorded and
// then waited for, wall time per dispatch, in four ways:
//
//   serial      batchCommands 0: one command buffer, submitted at the wait
//               (how every batch ran before pipelining): the host records
//               everything while the GPU idles, then the GPU runs it all
//   1 in flight batches of exactly M (maxBatchCommands M), batchesInFlight
//               1: each submitted when full and waited for before the next
//               is recorded
//   fixed       batches of exactly M, 3 in flight: the host records batch
//               N+1 while the GPU runs batch N, and waits when 3 are out
//   adaptive    the default policy: batchCommands M, maxBatchCommands 4096,
//               3 in flight: a batch of M or more goes when the GPU has run
//               the one before, so the host rarely waits
//
// for S = 0 and S = --steps (so that a dispatch's GPU time is near its
// recording time); the buffer's final contents are checked.
//
//   eph_dispatch_bench [N] [R] [K] [M] [S]      (default 20000 5 100 64 2000)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/Device.h"
#ifdef EPH_HAVE_LLVM
#include "runtime/cpu/CpuDevice.h"
#endif
#ifdef EPH_HAVE_VULKAN
#include "runtime/vulkan/VulkanDevice.h"
#endif

namespace {

using namespace eph;
using Clock = std::chrono::steady_clock;

const char* kBump = R"(
kernel @bump(%b: buffer<u32, device, write>) workgroup(64, 1, 1) {
  %i = local_id {dim = 0} : u32
  %one = const {value = 1} : u32
  %x = load %b, %i : u32
  %y = add %x, %one : u32
  store %b, %i, %y
  return
}
)";

void check(const Status& s) {
  if (!s) {
    std::fprintf(stderr, "eph_dispatch_bench: %s\n", s.error().str().c_str());
    std::exit(1);
  }
}

struct Times {
  double record = 0, wait = 0, total = 0;
};

Times once(const std::string& label, runtime::Device& dev, const ir::Module& m, ir::Context& ctx, unsigned n) {
  check(dev.prepare(m));
  const ir::Function& k = *m.lookup("bump");
  const ir::Type* t = ctx.bufferType(ctx.u32(), ir::Space::Device, ir::Ownership::Linear);
  auto h = dev.alloc(t, 64, {});
  if (!h) check(h.error());
  std::vector<uint32_t> data(64, 0);
  check(dev.uploadBytes(*h, std::as_bytes(std::span(data)), {}));
  interp::RtValue arg;
  arg.type = t;
  arg.buffer = *h;
  std::vector<interp::RtValue> args = {arg};
  // Warm up (pipeline, descriptor pools, first submit).
  for (int i = 0; i < 100; ++i) check(dev.dispatch(k, {1, 1, 1}, args, {}));
  check(dev.wait({}));
  auto t0 = Clock::now();
  for (unsigned i = 0; i < n; ++i) check(dev.dispatch(k, {1, 1, 1}, args, {}));
  auto t1 = Clock::now();
  check(dev.wait({}));
  auto t2 = Clock::now();
  check(dev.downloadBytes(std::as_writable_bytes(std::span(data)), *h, {}));
  for (uint32_t v : data)
    if (v != n + 100) {
      std::fprintf(stderr, "eph_dispatch_bench: %s: wrong result %u, want %u\n", label.c_str(), v, n + 100);
      std::exit(1);
    }
  check(dev.free(*h, {}));
  return {std::chrono::duration<double, std::micro>(t1 - t0).count() / n,
          std::chrono::duration<double, std::milli>(t2 - t1).count(),
          std::chrono::duration<double, std::micro>(t2 - t0).count() / n};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void run(const std::string& label, runtime::Device& dev, const ir::Module& m, ir::Context& ctx, unsigned n,
         unsigned reps) {
  std::vector<double> record, wait, total;
  for (unsigned r = 0; r < reps; ++r) {
    Times t = once(label, dev, m, ctx, n);
    record.push_back(t.record);
    wait.push_back(t.wait);
    total.push_back(t.total);
  }
  std::printf("%-22s N=%-7u record %7.2f us/dispatch   wait %8.2f ms   total %7.2f us/dispatch\n", label.c_str(), n,
              median(record), median(wait), median(total));
}

#ifdef EPH_HAVE_VULKAN
const char* kSpin = R"(
kernel @spin(%b: buffer<u32, device, write>, %steps: u32) workgroup(64, 1, 1) {
  %i = local_id {dim = 0} : u32
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %a = const {value = 1664525} : u32
  %c = const {value = 1013904223} : u32
  %x0 = load %b, %i : u32
  %x = for %zero, %steps, %one, %x0 : u32 { |%j: u32, %acc: u32|
    %m = mul %acc, %a : u32
    %n = add %m, %c : u32
    yield %n
  }
  %y = add %x, %one : u32
  store %b, %i, %y
  return
}
)";

// One chain of k * m dispatches of @spin on a device opened with `o`, checked:
// wall microseconds per dispatch, recording and the final wait together, and
// of the final wait alone (what the GPU had left when the host was done).
struct ChainTime {
  double total = 0, wait = 0;
};
ChainTime chain(const runtime::VulkanOptions& o, const ir::Module& m, ir::Context& ctx, unsigned k, unsigned perBatch,
             uint32_t steps) {
  auto dev = runtime::VulkanDevice::open(o);
  if (!dev) check(dev.error());
  check((*dev)->prepare(m));
  const ir::Function& spin = *m.lookup("spin");
  const ir::Type* t = ctx.bufferType(ctx.u32(), ir::Space::Device, ir::Ownership::Linear);
  auto h = (*dev)->alloc(t, 64, {});
  if (!h) check(h.error());
  std::vector<uint32_t> data(64);
  for (uint32_t i = 0; i < 64; ++i) data[i] = i;
  check((*dev)->uploadBytes(*h, std::as_bytes(std::span(data)), {}));
  std::vector<interp::RtValue> args(2);
  args[0].type = t;
  args[0].buffer = *h;
  args[1] = interp::RtValue::ofInt(ctx.u32(), steps);
  check((*dev)->dispatch(spin, {1, 1, 1}, args, {}));  // warm up: pipeline, pools
  check((*dev)->wait({}));
  unsigned n = k * perBatch;
  auto t0 = Clock::now();
  for (unsigned i = 0; i < n; ++i) check((*dev)->dispatch(spin, {1, 1, 1}, args, {}));
  auto recorded = Clock::now();
  check((*dev)->wait({}));
  auto t1 = Clock::now();
  std::vector<uint32_t> got(64);
  check((*dev)->downloadBytes(std::as_writable_bytes(std::span(got)), *h, {}));
  static std::map<std::pair<unsigned, uint32_t>, std::vector<uint32_t>> expected;  // by (n, steps)
  std::vector<uint32_t>& want = expected[{n, steps}];
  if (want.empty())
    for (uint32_t x : data) {
      for (unsigned d = 0; d <= n; ++d) {
        for (uint32_t s = 0; s < steps; ++s) x = x * 1664525u + 1013904223u;
        x += 1;
      }
      want.push_back(x);
    }
  if (got != want) {
    std::fprintf(stderr, "eph_dispatch_bench: chain: wrong result\n");
    std::exit(1);
  }
  return {std::chrono::duration<double, std::micro>(t1 - t0).count() / n,
          std::chrono::duration<double, std::micro>(t1 - recorded).count() / n};
}

void pipelining(ir::Context& ctx, unsigned reps, unsigned k, unsigned perBatch, uint32_t maxSteps) {
  auto m = ir::parseModule(ctx, kSpin, "spin.eir");
  if (!m) check(m.error());
  check(ir::verify(**m));
  std::printf("\npipelined submission: %u batches of %u dependent dispatches, wall us per dispatch in all "
              "(of it in the final wait)\n",
              k, perBatch);
  std::printf("%-6s %18s %18s %18s %18s\n", "steps", "serial", "1 in flight", "fixed", "adaptive");
  for (uint32_t steps : {0u, maxSteps}) {
    unsigned ways[4][3] = {{0, 0, 3}, {perBatch, perBatch, 1}, {perBatch, perBatch, 3}, {perBatch, 4096, 3}};
    std::vector<double> us[4], waits[4];
    for (unsigned r = 0; r < reps; ++r)  // the ways in turn: a shared machine's load drifts over all alike
      for (int w = 0; w < 4; ++w) {
        runtime::VulkanOptions o;
        o.cacheDir = "off";
        o.batchCommands = ways[w][0];
        o.maxBatchCommands = ways[w][1];
        o.batchesInFlight = ways[w][2];
        ChainTime t = chain(o, **m, ctx, k, perBatch, steps);
        us[w].push_back(t.total);
        waits[w].push_back(t.wait);
      }
    std::printf("%-6u", steps);
    for (int w = 0; w < 4; ++w) std::printf("  %7.2f (%7.2f)", median(us[w]), median(waits[w]));
    std::printf("\n");
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  unsigned n = argc > 1 ? unsigned(std::atoi(argv[1])) : 20000;
  unsigned reps = argc > 2 ? unsigned(std::atoi(argv[2])) : 5;
  unsigned batches = argc > 3 ? unsigned(std::atoi(argv[3])) : 100;
  unsigned perBatch = argc > 4 ? unsigned(std::atoi(argv[4])) : 64;
  unsigned steps = argc > 5 ? unsigned(std::atoi(argv[5])) : 2000;
  if (n == 0 || reps == 0 || batches == 0 || perBatch == 0) {
    std::fprintf(stderr, "usage: eph_dispatch_bench [N > 0] [R > 0] [K > 0] [M > 0] [S]\n");
    return 2;
  }
  ir::Context ctx;
  auto m = ir::parseModule(ctx, kBump, "bump.eir");
  if (!m) check(m.error());
  check(ir::verify(**m));
#ifdef EPH_HAVE_LLVM
  {
    runtime::CpuDevice cpu;
    run("cpu", cpu, **m, ctx, n, reps);
  }
#endif
#ifdef EPH_HAVE_VULKAN
  for (bool profile : {false, true}) {
    runtime::VulkanOptions o;
    o.profile = profile;
    o.cacheDir = "off";
    auto dev = runtime::VulkanDevice::open(o);
    if (!dev) {
      std::printf("vulkan: not available (%s)\n", dev.error().message.c_str());
      break;
    }
    run(profile ? "vulkan (timestamps)" : "vulkan", **dev, **m, ctx, n, reps);
  }
  if (runtime::listVulkanDevices()) pipelining(ctx, reps, batches, perBatch, steps);
#endif
  return 0;
}
