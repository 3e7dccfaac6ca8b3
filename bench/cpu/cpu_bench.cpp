// eph_cpu_bench: the cpu target against plain C++ loops and OpenBLAS.
//
//   saxpy  n = 2^20 (and 1024): y = a*x + y
//   sum    n = 2^20: the sum of x
//   sgemm  n = 1024: C = A * B, row-major
//   compile: milliseconds per kernel through each target's compiler, from
//            the parsed module (frontend excluded): LLVM -O2 lowering +
//            optimisation + JIT, and SPIR-V emission + validation when built
//
// The cpu target runs through the Device API exactly as a host program
// would (buffers uploaded once; each iteration is one dispatch, or two for
// sum). After Google Benchmark's own output, a table of medians and ratios
// is printed and written as JSON (--summary=FILE, default
// eph_cpu_bench.json). Use --benchmark_repetitions to get medians.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "bench/cpu/Kernels.h"
#include "bench/cpu/PlainLoops.h"
#include "ir/Layout.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/cpu/CpuDevice.h"
#include "targets/llvm/Llvm.h"
#ifdef EPH_HAVE_OPENBLAS
#include <cblas.h>
#endif
#ifdef EPH_BENCH_SPIRV
#include "targets/spirv/Spirv.h"
#endif

namespace eph::bench {
namespace {

std::vector<float> pattern(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float((i * 7919) % 1000) * scale;
  return v;
}

// A parsed kernel module and a CpuDevice with buffers uploaded once.
class CpuKernel {
 public:
  explicit CpuKernel(const std::string& text) {
    auto m = ir::parseModule(ctx_, text, "bench.eir");
    if (!m || !ir::verify(**m)) std::abort();
    module_ = std::move(*m);
    if (!dev_.prepare(*module_)) std::abort();
  }
  // A device buffer of f32 holding `values`.
  interp::RtValue buffer(const ir::Type* type, const std::vector<float>& values) {
    auto h = dev_.alloc(type, values.size() * 4 / ir::storageStride(type->elem()), {});
    if (!h) std::abort();
    std::memcpy(dev_.bytes(*h).data(), values.data(), values.size() * 4);
    interp::RtValue v;
    v.type = type;
    v.buffer = *h;
    return v;
  }
  const float* data(const interp::RtValue& buf) { return reinterpret_cast<const float*>(dev_.bytes(buf.buffer).data()); }
  const ir::Function& kernel(const char* name) { return *module_->lookup(name); }
  void dispatch(const ir::Function& k, std::array<uint32_t, 3> groups, const std::vector<interp::RtValue>& args) {
    Status s = dev_.dispatch(k, groups, args, {});
    if (!s) {
      std::cerr << s.error().str() << "\n";
      std::abort();
    }
  }
  ir::Context ctx_;
  std::unique_ptr<ir::Module> module_;
  runtime::CpuDevice dev_;
};

// ---- saxpy ------------------------------------------------------------------

void BM_saxpy_plain(benchmark::State& st) {
  size_t n = size_t(st.range(0));
  auto x = pattern(n, 0.5f), y = pattern(n, 0.25f);
  for (auto _ : st) {
    saxpyPlain(1.0001f, x.data(), y.data(), n);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetBytesProcessed(int64_t(st.iterations() * n * 12));
}

void BM_saxpy_native(benchmark::State& st) {
  size_t n = size_t(st.range(0));
  auto x = pattern(n, 0.5f), y = pattern(n, 0.25f);
  for (auto _ : st) {
    saxpyNative(1.0001f, x.data(), y.data(), n);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetBytesProcessed(int64_t(st.iterations() * n * 12));
}

#ifdef EPH_HAVE_OPENBLAS
void BM_saxpy_openblas(benchmark::State& st) {
  size_t n = size_t(st.range(0));
  auto x = pattern(n, 0.5f), y = pattern(n, 0.25f);
  for (auto _ : st) {
    cblas_saxpy(int(n), 1.0001f, x.data(), 1, y.data(), 1);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetBytesProcessed(int64_t(st.iterations() * n * 12));
}
#endif

void BM_saxpy_eph(benchmark::State& st) {
  size_t n = size_t(st.range(0));
  CpuKernel k(kSaxpyKernel);
  const ir::Function& f = k.kernel("saxpy");
  interp::RtValue a = interp::RtValue::ofFloat(f.paramTypes()[0], 1.0001);
  auto x = k.buffer(f.paramTypes()[1], pattern(n, 0.5f));
  auto y = k.buffer(f.paramTypes()[2], pattern(n, 0.25f));
  uint32_t groups = uint32_t((n + 255) / 256);
  for (auto _ : st) k.dispatch(f, {groups, 1, 1}, {a, x, y});
  st.SetBytesProcessed(int64_t(st.iterations() * n * 12));
  // Check against the plain loop on fresh data.
  auto px = pattern(n, 0.5f), py = pattern(n, 0.25f);
  auto y1 = k.buffer(f.paramTypes()[2], py);
  k.dispatch(f, {groups, 1, 1}, {a, x, y1});
  saxpyPlain(1.0001f, px.data(), py.data(), n);
  if (std::memcmp(k.data(y1), py.data(), n * 4) != 0) st.SkipWithError("saxpy: wrong result");
}

// ---- sum --------------------------------------------------------------------

void BM_sum_plain(benchmark::State& st) {
  size_t n = size_t(st.range(0));
  auto x = pattern(n, 0.001f);
  for (auto _ : st) benchmark::DoNotOptimize(sumPlain(x.data(), n));
  st.SetBytesProcessed(int64_t(st.iterations() * n * 4));
}

void BM_sum_native(benchmark::State& st) {
  size_t n = size_t(st.range(0));
  auto x = pattern(n, 0.001f);
  for (auto _ : st) benchmark::DoNotOptimize(sumNative(x.data(), n));
  st.SetBytesProcessed(int64_t(st.iterations() * n * 4));
}

#ifdef EPH_HAVE_OPENBLAS
// sasum: the sum of |x|; the inputs are non-negative, so it is the sum.
void BM_sum_openblas(benchmark::State& st) {
  size_t n = size_t(st.range(0));
  auto x = pattern(n, 0.001f);
  for (auto _ : st) benchmark::DoNotOptimize(cblas_sasum(int(n), x.data(), 1));
  st.SetBytesProcessed(int64_t(st.iterations() * n * 4));
}
#endif

void BM_sum_eph(benchmark::State& st) {
  size_t n = size_t(st.range(0));
  constexpr uint32_t kGroups = 64;  // partial sums; each workgroup sums n / 64 elements
  CpuKernel k(kSumKernel);
  const ir::Function& f = k.kernel("sum");
  auto x = k.buffer(f.paramTypes()[0], pattern(n, 0.001f));
  auto partial = k.buffer(f.paramTypes()[1], std::vector<float>(kGroups, 0.f));
  auto total = k.buffer(f.paramTypes()[1], std::vector<float>(1, 0.f));
  interp::RtValue chunk = interp::RtValue::ofInt(f.paramTypes()[2], int64_t(n / kGroups));
  interp::RtValue last = interp::RtValue::ofInt(f.paramTypes()[2], kGroups);
  for (auto _ : st) {
    k.dispatch(f, {kGroups, 1, 1}, {x, partial, chunk});
    k.dispatch(f, {1, 1, 1}, {partial, total, last});
    benchmark::DoNotOptimize(k.data(total)[0]);
  }
  st.SetBytesProcessed(int64_t(st.iterations() * n * 4));
  double want = 0;
  auto px = pattern(n, 0.001f);
  for (float v : px) want += v;
  if (std::fabs(k.data(total)[0] - want) > 1e-4 * want) st.SkipWithError("sum: wrong result");
}

// ---- sgemm ------------------------------------------------------------------

void BM_sgemm_plain(benchmark::State& st) {
  size_t n = size_t(st.range(0));
  auto a = pattern(n * n, 0.001f), b = pattern(n * n, 0.002f);
  std::vector<float> c(n * n);
  for (auto _ : st) {
    sgemmPlain(a.data(), b.data(), c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  st.counters["GFLOPS"] = benchmark::Counter(double(st.iterations()) * 2.0 * n * n * n / 1e9, benchmark::Counter::kIsRate);
}

void BM_sgemm_native(benchmark::State& st) {
  size_t n = size_t(st.range(0));
  auto a = pattern(n * n, 0.001f), b = pattern(n * n, 0.002f);
  std::vector<float> c(n * n);
  for (auto _ : st) {
    sgemmNative(a.data(), b.data(), c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  st.counters["GFLOPS"] = benchmark::Counter(double(st.iterations()) * 2.0 * n * n * n / 1e9, benchmark::Counter::kIsRate);
}

#ifdef EPH_HAVE_OPENBLAS
void BM_sgemm_openblas(benchmark::State& st) {
  size_t n = size_t(st.range(0));
  auto a = pattern(n * n, 0.001f), b = pattern(n * n, 0.002f);
  std::vector<float> c(n * n);
  for (auto _ : st) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0f, a.data(), int(n), b.data(),
                int(n), 0.0f, c.data(), int(n));
    benchmark::DoNotOptimize(c.data());
  }
  st.counters["GFLOPS"] = benchmark::Counter(double(st.iterations()) * 2.0 * n * n * n / 1e9, benchmark::Counter::kIsRate);
}
#endif

void BM_sgemm_eph(benchmark::State& st) {
  size_t n = size_t(st.range(0));
  CpuKernel k(sgemmPackKernel() + sgemmKernel());
  const ir::Function& f = k.kernel("sgemm");
  const ir::Function& pack = k.kernel("pack");
  auto pa = pattern(n * n, 0.001f), pb = pattern(n * n, 0.002f);
  auto a = k.buffer(f.paramTypes()[0], pa);
  auto b = k.buffer(f.paramTypes()[1], pb);
  auto packed = k.buffer(f.paramTypes()[1], std::vector<float>(n * n, 0.f));
  auto c = k.buffer(f.paramTypes()[2], std::vector<float>(n * n, 0.f));
  interp::RtValue nv = interp::RtValue::ofInt(f.paramTypes()[3], int64_t(n));
  std::array<uint32_t, 3> grid = {uint32_t(n / kSgemmRows), uint32_t(n / (4 * kSgemmVecCols)), 1};
  uint32_t packGroups = uint32_t(n * n / 4 / 64);
  for (auto _ : st) {
    k.dispatch(pack, {packGroups, 1, 1}, {b, packed, nv});
    k.dispatch(f, grid, {a, packed, c, nv});
  }
  st.counters["GFLOPS"] = benchmark::Counter(double(st.iterations()) * 2.0 * n * n * n / 1e9, benchmark::Counter::kIsRate);
  std::vector<float> want(n * n);
  sgemmPlain(pa.data(), pb.data(), want.data(), n);
  const float* got = k.data(c);
  for (size_t i = 0; i < n * n; i += 997)
    if (std::fabs(got[i] - want[i]) > 1e-3f * std::fabs(want[i]) + 1e-3f) {
      st.SkipWithError("sgemm: wrong result");
      break;
    }
}

// ---- compile time ---------------------------------------------------------------

struct NamedKernel {
  const char* name;
  std::string text;
  const char* kernel;
};
const NamedKernel kAll[] = {{"saxpy", kSaxpyKernel, "saxpy"},
                            {"sum", kSumKernel, "sum"},
                            {"sgemm", sgemmKernel(), "sgemm"},
                            {"pack", sgemmPackKernel(), "pack"}};

void BM_compile_llvm_O2(benchmark::State& st) {
  const NamedKernel& nk = kAll[st.range(0)];
  st.SetLabel(nk.name);
  ir::Context ctx;
  auto m = ir::parseModule(ctx, nk.text, "bench.eir");
  if (!m) std::abort();
  llvmtarget::LowerOptions o;
  o.optLevel = 2;
  for (auto _ : st) {
    auto jit = llvmtarget::jitCompile(**m, o);
    if (!jit) {
      st.SkipWithError(jit.error().str().c_str());
      break;
    }
    benchmark::DoNotOptimize(jit->get());
  }
}

#ifdef EPH_BENCH_SPIRV
void BM_compile_spirv(benchmark::State& st) {
  const NamedKernel& nk = kAll[st.range(0)];
  st.SetLabel(nk.name);
  ir::Context ctx;
  auto m = ir::parseModule(ctx, nk.text, "bench.eir");
  if (!m) std::abort();
  DeviceCaps caps;
  caps.float16 = caps.float64 = caps.int8 = caps.int16 = caps.int64 = true;
  caps.atomicFloat32Add = true;
  for (auto _ : st) {
    auto words = spirv::emitKernel(*(*m)->lookup(nk.kernel), caps);
    if (!words) {
      st.SkipWithError(words.error().str().c_str());
      break;
    }
    benchmark::DoNotOptimize(words->data());
  }
}
#endif

void registerAll() {
  for (int64_t n : {int64_t(1) << 20, int64_t(1024)}) {
    benchmark::RegisterBenchmark("saxpy/plain", BM_saxpy_plain)->Arg(n);
    benchmark::RegisterBenchmark("saxpy/native", BM_saxpy_native)->Arg(n);
#ifdef EPH_HAVE_OPENBLAS
    benchmark::RegisterBenchmark("saxpy/openblas", BM_saxpy_openblas)->Arg(n);
#endif
    benchmark::RegisterBenchmark("saxpy/eph_cpu", BM_saxpy_eph)->Arg(n)->UseRealTime();
  }
  int64_t n = int64_t(1) << 20;
  benchmark::RegisterBenchmark("sum/plain", BM_sum_plain)->Arg(n);
  benchmark::RegisterBenchmark("sum/native", BM_sum_native)->Arg(n);
#ifdef EPH_HAVE_OPENBLAS
  benchmark::RegisterBenchmark("sum/openblas", BM_sum_openblas)->Arg(n);
#endif
  benchmark::RegisterBenchmark("sum/eph_cpu", BM_sum_eph)->Arg(n)->UseRealTime();
  benchmark::RegisterBenchmark("sgemm/plain", BM_sgemm_plain)->Arg(1024)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("sgemm/native", BM_sgemm_native)->Arg(1024)->Unit(benchmark::kMillisecond);
#ifdef EPH_HAVE_OPENBLAS
  benchmark::RegisterBenchmark("sgemm/openblas", BM_sgemm_openblas)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif
  benchmark::RegisterBenchmark("sgemm/eph_cpu", BM_sgemm_eph)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
  for (int64_t k = 0; k < 4; ++k) {
    benchmark::RegisterBenchmark("compile/llvm_O2_jit", BM_compile_llvm_O2)->Arg(k)->Unit(benchmark::kMillisecond);
#ifdef EPH_BENCH_SPIRV
    benchmark::RegisterBenchmark("compile/spirv_emit_validate", BM_compile_spirv)->Arg(k)->Unit(benchmark::kMillisecond);
#endif
  }
}

// Collects the median (or the single run) of every benchmark for the summary.
class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      bool aggregate = r.run_type == Run::RT_Aggregate;
      if (aggregate && r.aggregate_name != "median") continue;
      std::string name = r.run_name.str();
      if (!aggregate && medians.count(name) && hasMedian.count(name)) continue;
      double ns = r.GetAdjustedRealTime() * (r.time_unit == benchmark::kMillisecond ? 1e6
                                             : r.time_unit == benchmark::kMicrosecond ? 1e3 : 1.0);
      medians[name] = ns;
      labels[name] = r.report_label;
      if (aggregate) hasMedian.insert(name);
    }
  }
  std::map<std::string, double> medians;  // nanoseconds
  std::map<std::string, std::string> labels;
  std::set<std::string> hasMedian;
};

std::string fmtNs(double ns) {
  char buf[64];
  if (ns >= 1e6) std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
  else if (ns >= 1e3) std::snprintf(buf, sizeof buf, "%.2f us", ns / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  return buf;
}

void summarise(const Collector& c, const std::string& path) {
  auto get = [&](const std::string& name) { auto it = c.medians.find(name); return it == c.medians.end() ? 0.0 : it->second; };
  struct Row {
    std::string what, ours, plain, blas;
  };
  std::vector<Row> rows = {
      {"saxpy n=2^20", "saxpy/eph_cpu/1048576/real_time", "saxpy/plain/1048576", "saxpy/openblas/1048576"},
      {"saxpy n=1024", "saxpy/eph_cpu/1024/real_time", "saxpy/plain/1024", "saxpy/openblas/1024"},
      {"sum n=2^20", "sum/eph_cpu/1048576/real_time", "sum/plain/1048576", "sum/openblas/1048576"},
      {"sgemm n=1024", "sgemm/eph_cpu/1024/real_time", "sgemm/plain/1024", "sgemm/openblas/1024/real_time"},
  };
  std::ofstream json(path);
  json << "{\n  \"host\": \"" << llvmtarget::hostCpuDescription() << "\",\n  \"rows\": [\n";
  std::printf("\n%-14s %12s %12s %12s %14s %14s\n", "benchmark", "eph cpu", "plain -O3", "OpenBLAS", "plain/eph", "OpenBLAS/eph");
  for (size_t i = 0; i < rows.size(); ++i) {
    double ours = get(rows[i].ours), plain = get(rows[i].plain), blas = get(rows[i].blas);
    double vsPlain = ours > 0 ? plain / ours : 0, vsBlas = ours > 0 ? blas / ours : 0;
    std::printf("%-14s %12s %12s %12s %13.1f%% %13.1f%%\n", rows[i].what.c_str(), fmtNs(ours).c_str(),
                fmtNs(plain).c_str(), blas ? fmtNs(blas).c_str() : "-", 100 * vsPlain, 100 * vsBlas);
    json << "    {\"benchmark\": \"" << rows[i].what << "\", \"eph_cpu_ns\": " << ours << ", \"plain_ns\": " << plain
         << ", \"openblas_ns\": " << blas << ", \"eph_vs_plain\": " << vsPlain << ", \"eph_vs_openblas\": " << vsBlas
         << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  json << "  ],\n  \"compile_ms\": [\n";
  std::printf("\n%-32s %-8s %10s\n", "compiler", "kernel", "ms/kernel");
  bool first = true;
  for (auto& [name, ns] : c.medians) {
    if (name.rfind("compile/", 0) != 0) continue;
    std::string label = c.labels.at(name);
    std::string which = name.substr(8, name.find('/', 8) - 8);
    std::printf("%-32s %-8s %10.2f\n", which.c_str(), label.c_str(), ns / 1e6);
    json << (first ? "" : ",\n") << "    {\"compiler\": \"" << which << "\", \"kernel\": \"" << label
         << "\", \"ms\": " << ns / 1e6 << "}";
    first = false;
  }
  json << "\n  ]\n}\n";
  std::printf("\nsummary written to %s\n", path.c_str());
}

}  // namespace
}  // namespace eph::bench

int main(int argc, char** argv) {
  std::string summary = "eph_cpu_bench.json";
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--summary=", 10) == 0) summary = argv[i] + 10;
    else args.push_back(argv[i]);
  }
  int n = int(args.size());
  benchmark::Initialize(&n, args.data());
  eph::bench::registerAll();
  eph::bench::Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  eph::bench::summarise(collector, summary);
  benchmark::Shutdown();
  return 0;
}
