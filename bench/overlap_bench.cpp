// eph_overlap_bench: do transfers overlap compute where the dependencies
// allow? (issue #6, async.) Shown with the GPU timestamps of
// VulkanDevice::takeTimeline.
//
// 1. The Ephapax program bench/ephapax/overlap.eph runs as written (host code
//    on the interpreter, device work on the GPU): `overlapped` issues a long
//    dispatch and an unrelated h2d with nothing ordering them; `serial` the
//    same where the dispatch reads what the h2d wrote. Their timelines are
//    printed: in the first the h2d runs inside the dispatch's interval, in
//    the second the dispatch starts after the h2d ends.
// 2. The same `spin` kernel and uploads through the runtime API at several
//    upload sizes, the kernel's iteration count calibrated so that it takes
//    about as long as the upload alone. Per size, medians over --runs:
//      upload   the h2d alone (its own submission)
//      compute  the dispatch alone
//      overlap  both, independent, in one submission: GPU span
//      serial   both, the dispatch reading the upload: GPU span
//    and `hidden` = (upload + compute - overlap) / min(upload, compute), the
//    fraction of the shorter one hidden behind the other (1: fully, 0: none).
//
//   eph_overlap_bench [--eph DIR] [--sizes MiB,..] [--runs N] [--json FILE]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "frontends/ephapax/Frontend.h"
#include "ir/interp/Interp.h"
#include "runtime/vulkan/VulkanDevice.h"

namespace {

using eph::runtime::VulkanDevice;
namespace ir = eph::ir;
namespace interp = eph::interp;

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "eph_overlap_bench: %s\n", why.c_str());
  std::exit(1);
}
void check(const eph::Status& s) {
  if (!s) fail(s.error().str());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The GPU span of a timeline: last end minus first start (one submission).
double span(const std::vector<VulkanDevice::CommandTime>& tl) {
  double lo = 1e300, hi = 0;
  for (auto& t : tl) lo = std::min(lo, t.startMs), hi = std::max(hi, t.endMs);
  return tl.empty() ? 0 : hi - lo;
}

void printTimeline(const char* title, const std::vector<VulkanDevice::CommandTime>& tl) {
  std::printf("%s\n  %-9s %-10s %4s %10s %10s\n", title, "command", "kernel", "sub", "start ms", "end ms");
  for (auto& t : tl)
    std::printf("  %-9s %-10s %4u %10.3f %10.3f\n", t.what.c_str(), t.name.c_str(), t.submission, t.startMs,
                t.endMs);
}

// Whether the h2d's interval lies inside a dispatch's, in one submission.
bool h2dInsideDispatch(const std::vector<VulkanDevice::CommandTime>& tl) {
  for (auto& h : tl)
    for (auto& d : tl)
      if (h.what == "h2d" && d.what == "dispatch" && h.submission == d.submission && h.startMs < d.endMs &&
          h.endMs > d.startMs)
        return true;
  return false;
}

struct Row {
  double mib = 0;
  int iters = 0;
  double upload = 0, compute = 0, overlap = 0, serial = 0, hidden = 0;
};

class Bench {
 public:
  Bench(VulkanDevice& dev, ir::Context& ctx, const ir::Module& m, int runs)
      : dev_(dev), ctx_(ctx), spin_(*m.lookup("spin")), runs_(runs) {
    if (!spin_.isKernel()) fail("bench/ephapax/overlap.eph has no kernel `spin`");
  }

  Row measure(double mib) {
    const uint64_t m = 1 << 20;  // spin invocations
    uint64_t n = uint64_t(mib * (1 << 20)) / 4;
    uint64_t up = alloc(n), up2 = alloc(n), seed = alloc(4), work = alloc(m);
    std::vector<float> host(n, 1.0f);
    auto bytes = std::as_bytes(std::span(host));
    check(dev_.uploadBytes(seed, std::as_bytes(std::span(host).first(4))));
    check(dev_.wait({}));
    dev_.takeTimeline();

    Row r;
    r.mib = mib;
    r.upload = median(times([&] { check(dev_.uploadBytes(up, bytes)); }));
    // Double the iterations until the dispatch takes as long as the upload.
    for (r.iters = 64; r.iters < (1 << 24); r.iters *= 2)
      if (median(times([&] { dispatchSpin(seed, work, m, r.iters); }, 1)) >= r.upload) break;
    r.compute = median(times([&] { dispatchSpin(seed, work, m, r.iters); }));
    r.overlap = median(times([&] {
      dispatchSpin(seed, work, m, r.iters);
      check(dev_.uploadBytes(up, bytes));
    }));
    char title[96];
    std::snprintf(title, sizeof title, "%.0f MiB, independent, the last run:", mib);
    printTimeline(title, last_);
    r.serial = median(times([&] {
      check(dev_.uploadBytes(up2, bytes));
      dispatchSpin(up2, work, m, r.iters);
    }));
    r.hidden = (r.upload + r.compute - r.overlap) / std::min(r.upload, r.compute);
    for (uint64_t h : {up, up2, seed, work}) check(dev_.free(h, {}));
    return r;
  }

 private:
  uint64_t alloc(uint64_t n) {
    auto h = dev_.alloc(ctx_.bufferType(ctx_.f32(), ir::Space::Device, ir::Ownership::Linear), n, {});
    if (!h) fail(h.error().str());
    return *h;
  }
  interp::RtValue buffer(uint64_t h, ir::Ownership own) {
    interp::RtValue v;
    v.type = ctx_.bufferType(ctx_.f32(), ir::Space::Device, own);
    v.buffer = h;
    return v;
  }
  // spin(src, out, iters) over m invocations, as `dispatch` lowers it: the
  // grid is appended for the kernel's bounds guard.
  void dispatchSpin(uint64_t src, uint64_t out, uint64_t m, int iters) {
    std::vector<interp::RtValue> args = {buffer(src, ir::Ownership::Read), buffer(out, ir::Ownership::Write),
                                         interp::RtValue::ofInt(ctx_.i32(), iters)};
    for (uint64_t g : {m, uint64_t(1), uint64_t(1)}) args.push_back(interp::RtValue::ofInt(ctx_.u32(), int64_t(g)));
    if (args.size() != spin_.paramTypes().size()) fail("spin's parameters changed; update eph_overlap_bench");
    uint32_t groups = uint32_t((m + spin_.workgroupSize[0] - 1) / spin_.workgroupSize[0]);
    check(dev_.dispatch(spin_, {groups, 1, 1}, args, {}));
  }
  // GPU span of `record`, submitted alone, `runs` times (after one untimed).
  std::vector<double> times(const std::function<void()>& record, int runs = 0) {
    std::vector<double> out;
    for (int r = 0; r <= (runs ? runs : runs_); ++r) {
      record();
      check(dev_.wait({}));
      auto tl = dev_.takeTimeline();
      if (tl.empty()) fail("the device gave no timestamps");
      if (r > 0) out.push_back(span(tl));
      last_ = tl;
    }
    return out;
  }

  VulkanDevice& dev_;
  ir::Context& ctx_;
  const ir::Function& spin_;
  int runs_;
  std::vector<VulkanDevice::CommandTime> last_;  // the last timeline `times` saw
};

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "bench/ephapax", json, sizes = "16,64,256";
  int runs = 9;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--eph") dir = value();
    else if (a == "--sizes") sizes = value();
    else if (a == "--runs") runs = std::max(1, std::atoi(value().c_str()));
    else if (a == "--json") json = value();
    else fail("usage: eph_overlap_bench [--eph DIR] [--sizes MiB,..] [--runs N] [--json FILE]");
  }
  std::string path = dir + "/overlap.eph";
  std::ifstream in(path);
  if (!in) fail("cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  ir::Context ctx;
  eph::ephapax::DiagSink diags;
  auto m = eph::ephapax::compile(ctx, ss.str(), path, diags);
  if (!m || !diags.empty()) fail(eph::ephapax::renderAll(diags, path, ss.str()));
  eph::runtime::VulkanOptions opts;
  opts.profile = true;  // the timeline is GPU timestamps
  auto dev = VulkanDevice::open(opts);
  if (!dev) fail("Vulkan is not available: " + dev.error().str());
  std::printf("device: %s\n", (*dev)->caps().name.c_str());

  // 1. The Ephapax program: run(n, m, iters) returns its wrong elements (0).
  interp::Interpreter interp(*m);
  std::vector<interp::RtValue> args = {interp::RtValue::ofInt(ctx.i32(), 1 << 18),
                                       interp::RtValue::ofInt(ctx.i32(), 1 << 18),
                                       interp::RtValue::ofInt(ctx.i32(), 16384)};
  auto r = eph::runtime::runHost(**dev, interp, *m->lookup("run"), args);
  if (!r) fail(r.error().str());
  std::string wrong = interp::format((*r)[0], &interp.memory());
  auto tl = (*dev)->takeTimeline();
  std::vector<VulkanDevice::CommandTime> first, second;
  // overlapped's work is the submission holding the dispatch recorded first.
  int64_t overlappedSub = -1, serialSub = -1;
  for (auto& t : tl)
    if (t.what == "dispatch") {
      if (overlappedSub < 0) overlappedSub = t.submission;
      else if (serialSub < 0 && t.submission != overlappedSub) serialSub = t.submission;
    }
  for (auto& t : tl) {
    if (int64_t(t.submission) == overlappedSub) first.push_back(t);
    if (int64_t(t.submission) == serialSub) second.push_back(t);
  }
  std::printf("overlap.eph run(2^18, 2^18, 16384): %s wrong elements\n", wrong.c_str());
  printTimeline("overlapped (the h2d is independent of the dispatch):", first);
  printTimeline("serial (the dispatch reads the h2d's buffer):", second);
  bool ephOverlaps = h2dInsideDispatch(first), ephSerial = !h2dInsideDispatch(second);
  std::printf("overlapped: the h2d %s the dispatch; serial: it %s\n\n",
              ephOverlaps ? "runs during" : "does NOT run during", ephSerial ? "does not" : "DOES");

  // 2. Sizes through the runtime API.
  Bench bench(**dev, ctx, *m, runs);
  std::vector<Row> rows;
  std::stringstream list(sizes);
  for (std::string s; std::getline(list, s, ',');) rows.push_back(bench.measure(std::atof(s.c_str())));
  std::printf("%8s %8s %11s %11s %11s %11s %8s\n", "MiB", "iters", "upload ms", "compute ms", "overlap ms",
              "serial ms", "hidden");
  for (auto& x : rows)
    std::printf("%8.0f %8d %11.3f %11.3f %11.3f %11.3f %7.0f%%\n", x.mib, x.iters, x.upload, x.compute, x.overlap,
                x.serial, 100 * x.hidden);
  if (!json.empty()) {
    std::ofstream o(json);
    o << "{\n  \"device\": \"" << (*dev)->caps().name << "\",\n  \"ephapax_wrong\": " << wrong
      << ",\n  \"ephapax_overlapped\": " << (ephOverlaps ? "true" : "false")
      << ",\n  \"ephapax_serial_ordered\": " << (ephSerial ? "true" : "false") << ",\n  \"rows\": [";
    for (size_t i = 0; i < rows.size(); ++i) {
      auto& x = rows[i];
      o << (i ? "," : "") << "\n    {\"mib\": " << x.mib << ", \"iters\": " << x.iters << ", \"upload_ms\": " << x.upload
        << ", \"compute_ms\": " << x.compute << ", \"overlap_ms\": " << x.overlap << ", \"serial_ms\": " << x.serial
        << ", \"hidden\": " << x.hidden << "}";
    }
    o << "\n  ]\n}\n";
  }
  return wrong == "0" && ephSerial ? 0 : 1;
}
