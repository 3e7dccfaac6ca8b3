// eph_value_bench: residuals and the gradient of their sum through ephc's
// compiled Value-graph kernels on one device (issue 12 item 8's GPU side;
// bench/device/value.sh runs it on the GPU machine beside
// bench/device/torch_value.py, PyTorch autograd on the same problem).
//
// The problem is bench/value/ValueBench.h's (edge lengths of a grid mesh, or
// the hinge angles), float64. One evaluation is three dispatches: zero the
// gradient, the residual kernel @vg0, the gradient kernel @vg0.g (atomic adds
// of ∂r/∂x into the gradient of Σr); with --jacobian, @vg0 and @vg0.j (the
// Jacobian's values, no atomics). The parameters, index tables and outputs stay
// on the device, as PyTorch's tensors do.
//
// Before timing, each size is checked against the float64 reference
// evaluator (frontends/value/Eval.h) on the host: every residual and every
// gradient entry (or, with --jacobian, the residuals). Then, per size:
//   wall ms  --runs batches of --batch evaluations each submitted back to back,
//            then one wait; the median of the batches' time / batch
//   gpu ms   (vulkan) the sum of one evaluation's dispatch times from GPU
//            timestamps; the median over the last batch's evaluations
// and checksums of the outputs (Σr, Σ|g|, Σ g·w with w_k = sin(k)) for the
// peer to compare with.
//
//   eph_value_bench [--target vulkan|cpu|interp] [--family edge|hinge]
//                   [--sizes 1000000,4000000] [--runs 7] [--batch 20]
//                   [--jacobian] [--workgroup 64] [--json FILE] [--no-check]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "bench/value/ValueBench.h"
#include "frontends/value/Eval.h"
#ifdef EPH_VALUE_BENCH_VULKAN
#include "runtime/vulkan/VulkanDevice.h"
#endif

using namespace vbench;

namespace {

struct Row {
  size_t n = 0, params = 0;
  double traceMs = 0, compileMs = 0, checkMs = 0;
  double resErr = 0, gradErr = 0;
  double sumR = 0, sumAbsG = 0, dotGW = 0;
  std::vector<double> wall, gpu, profiledWall;
  std::vector<std::pair<std::string, std::vector<double>>> kernels;  // per dispatch of an evaluation
};

}  // namespace

int main(int argc, char** argv) {
  std::string target = "vulkan", sizes = "1000000,4000000", json, family = "edge";
  int runs = 7, batch = 20;
  unsigned wg = 64;
  bool jacobian = false, doCheck = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) fail(a + " wants a value");
      return argv[++i];
    };
    if (a == "--target") target = next();
    else if (a == "--family") family = next();
    else if (a == "--sizes") sizes = next();
    else if (a == "--runs") runs = std::max(1, std::atoi(next().c_str()));
    else if (a == "--batch") batch = std::max(1, std::atoi(next().c_str()));
    else if (a == "--workgroup") wg = unsigned(std::max(1, std::atoi(next().c_str())));
    else if (a == "--jacobian") jacobian = true;
    else if (a == "--no-check") doCheck = false;
    else if (a == "--json") json = next();
    else fail("usage: eph_value_bench [--target T] [--family edge|hinge] [--sizes N,..] [--runs R] [--batch B] "
              "[--jacobian] [--workgroup W] [--json FILE] [--no-check]");
  }
  Family fam;
  if (!parseFamily(family, fam)) fail("--family wants edge or hinge");

  // On vulkan, two devices: wall times on one without GPU timestamps (a
  // timestamp is a command and a query to read back per dispatch), GPU times
  // on one with them.
  std::unique_ptr<eph::runtime::Device> dev;
#ifdef EPH_VALUE_BENCH_VULKAN
  std::unique_ptr<eph::runtime::VulkanDevice> prof;
  if (target == "vulkan") {
    eph::runtime::VulkanOptions vo;
    auto d = eph::runtime::VulkanDevice::open(vo);
    if (!d) fail(d.error().str());
    dev = std::move(*d);
    vo.profile = true;
    auto p = eph::runtime::VulkanDevice::open(vo);
    if (!p) fail(p.error().str());
    prof = std::move(*p);
  }
#endif
  if (!dev) {
    auto d = eph::runtime::openDevice(target);
    if (!d) fail(d.error().str());
    dev = std::move(*d);
  }
  // Warm-up (at least 300 ms of evaluations: the GPU's clocks climb), then
  // `runs` batches; per-evaluation wall ms of each batch.
  auto timeBatches = [&](eph::runtime::Device& d, KernelRunner& k) {
    auto t0 = Clock::now();
    while (msSince(t0) < 300) {
      for (int b = 0; b < batch; ++b) k.dispatch();
      check(d.wait({}));
    }
    std::vector<double> wall;
    for (int run = 0; run < runs; ++run) {
      t0 = Clock::now();
      for (int b = 0; b < batch; ++b) k.dispatch();
      check(d.wait({}));
      wall.push_back(msSince(t0) / batch);
    }
    return wall;
  };
  std::string devName = dev->caps().name;
  bool f64Atomics = dev->caps().atomicFloat64Add;
  std::fprintf(stderr, "device: %s (%s), float64 atomic add: %s\n", devName.c_str(), dev->caps().driver.c_str(),
               f64Atomics ? "yes" : "no");

  std::vector<Row> rows;
  std::stringstream in(sizes);
  for (std::string t; std::getline(in, t, ',');) {
    Row row;
    row.n = size_t(std::atof(t.c_str()));
    if (row.n < 1) fail("--sizes wants positive counts");
    Mesh m = makeMesh(fam, row.n);
    auto t0 = Clock::now();
    eph::value::Graph g = buildGraph(m);
    row.traceMs = msSince(t0);
    KernelRunner ours(*dev, g, m, jacobian, wg);
    row.compileMs = ours.compileMs;
    row.params = ours.numParams();
    std::vector<double> r, out;
    ours.dispatch();
    ours.download(r, out);
    if (doCheck) {
      t0 = Clock::now();
      eph::value::Evaluation ref = eph::value::evaluate(g);
      for (size_t i = 0; i < row.n; ++i) row.resErr = std::max(row.resErr, std::abs(r[i] - ref.residuals[i]));
      if (!jacobian)
        for (size_t k = 0; k < ref.gradient.size(); ++k)
          row.gradErr = std::max(row.gradErr, std::abs(out[k] - ref.gradient[k]) / std::max(1.0, std::abs(ref.gradient[k])));
      row.checkMs = msSince(t0);
      if (row.resErr > 1e-12 || row.gradErr > 1e-10)
        fail(family + " " + std::to_string(row.n) + ": against the float64 reference: residuals " +
             std::to_string(row.resErr) + ", gradient " + std::to_string(row.gradErr));
    }
    for (double v : r) row.sumR += v;
    if (!jacobian)
      for (size_t k = 0; k < out.size(); ++k) row.sumAbsG += std::abs(out[k]), row.dotGW += out[k] * std::sin(double(k));
    row.wall = timeBatches(*dev, ours);
#ifdef EPH_VALUE_BENCH_VULKAN
    if (prof) {
      KernelRunner timed(*prof, g, m, jacobian, wg);
      prof->takeDispatchTimes();
      row.profiledWall = timeBatches(*prof, timed);
      auto times = prof->takeDispatchTimes();  // the warm-up's too: the last runs·batch evaluations count
      int per = timed.dispatchesPerEval();
      size_t last = size_t(runs * batch * per);
      if (times.size() >= last) {
        times.erase(times.begin(), times.end() - long(last));
        for (size_t e = 0; e < times.size() / per; ++e) {
          double s = 0;
          for (int d = 0; d < per; ++d) {
            s += times[e * per + d].ms;
            if (e == 0) row.kernels.push_back({times[d].kernel, {}});
            row.kernels[d].second.push_back(times[e * per + d].ms);
          }
          row.gpu.push_back(s);
        }
      } else {
        std::fprintf(stderr, "warning: %zu dispatch times for %zu dispatches\n", times.size(), last);
      }
    }
#endif
    std::fprintf(stderr, "%s %zu: wall %.4f ms, gpu %.4f ms per evaluation (trace %.0f ms, compile %.0f ms, check %.0f ms)\n",
                 family.c_str(), row.n, median(row.wall), median(row.gpu), row.traceMs, row.compileMs, row.checkMs);
    for (auto& [name, t] : row.kernels) std::fprintf(stderr, "  %s: %.4f ms\n", name.c_str(), median(t));
    rows.push_back(std::move(row));
  }

  std::string date = utcNow();
  const char* what = jacobian ? "residuals + Jacobian" : "residuals + gradient of the sum";
  std::printf("eph_value_bench on %s, %s: %s, float64, %s; median of %d batches of %d\n", devName.c_str(),
              date.c_str(), family.c_str(), what, runs, batch);
  std::printf("%10s %10s %10s %10s %10s %10s\n", "N", "params", "wall ms", "gpu ms", "res err", "grad err");
  for (const Row& r : rows)
    std::printf("%10zu %10zu %10.4f %10.4f %10.1e %10.1e\n", r.n, r.params, median(r.wall), median(r.gpu), r.resErr,
                r.gradErr);
  if (!json.empty()) {
    std::ofstream o(json);
    o.precision(17);
    o << "{\n  \"bench\": \"eph_value_bench\",\n  \"device\": \"" << jsonEscape(devName) << "\",\n  \"driver\": \""
      << jsonEscape(dev->caps().driver) << "\",\n  \"float64_atomic_add\": " << (f64Atomics ? "true" : "false") << ",\n  \"target\": \"" << target << "\",\n  \"date\": \"" << date
      << "\",\n  \"family\": \"" << family << "\",\n  \"what\": \"" << what << "\",\n  \"runs\": " << runs
      << ",\n  \"batch\": " << batch << ",\n  \"workgroup\": " << wg << ",\n  \"results\": [\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      o << "    {\"residuals\": " << r.n << ", \"params\": " << r.params << ", \"wall_ms\": " << median(r.wall)
        << ", \"gpu_ms\": " << median(r.gpu) << ", \"profiled_wall_ms\": " << median(r.profiledWall) << ", \"trace_ms\": " << r.traceMs << ", \"compile_ms\": " << r.compileMs
        << ", \"residual_error\": " << r.resErr << ", \"gradient_error\": " << r.gradErr << ", \"sum_r\": " << r.sumR
        << ", \"sum_abs_grad\": " << r.sumAbsG << ", \"grad_dot_sin\": " << r.dotGW << ", \"kernels_gpu_ms\": {";
      for (size_t k = 0; k < r.kernels.size(); ++k)
        o << (k ? ", " : "") << "\"" << r.kernels[k].first << "\": " << median(r.kernels[k].second);
      o << "}, \"wall_runs_ms\": [";
      for (size_t k = 0; k < r.wall.size(); ++k) o << (k ? ", " : "") << r.wall[k];
      o << "]}" << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    o << "  ]\n}\n";
  }
  return 0;
}
