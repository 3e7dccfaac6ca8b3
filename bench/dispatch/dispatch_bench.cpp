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
//   eph_dispatch_bench [N] [R]      (default 20000 5)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

}  // namespace

int main(int argc, char** argv) {
  unsigned n = argc > 1 ? unsigned(std::atoi(argv[1])) : 20000;
  unsigned reps = argc > 2 ? unsigned(std::atoi(argv[2])) : 5;
  if (n == 0 || reps == 0) {
    std::fprintf(stderr, "usage: eph_dispatch_bench [N > 0] [R > 0]\n");
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
#endif
  return 0;
}
