// cuda_bench: the hand-written CUDA peers of the Ephapax benchmark kernels
// (bench/ephapax/*.eph), the same algorithms with the same tile sizes, work
// per thread and reduction scheme (vadd.cu, reduce.cu, sgemm.cu). Each is
// checked against a CPU reference (output poisoned with NaN first), then
// timed like eph_gpu_bench times its kernels: at least 300 ms of untimed
// warm-up, then --runs launches back to back, each between two CUDA events;
// the median is reported. Prints one JSON object per line (and appends them
// to --json FILE).
//
// Built on the GPU machine by bench/device/run.sh:
//   nvcc -O3 -arch=sm_90 -o cuda_bench bench/device/cuda/cuda_bench.cu
//   cuda_bench [--runs 20] [--vadd N,..] [--reduce N,..] [--sgemm N,..] [--json FILE] [--small]
//              [--only vadd,vadd4,reduce,sgemm] [--impl NAME (the JSON "impl", default cuda)]
//   --only may also name sgemm_db (double-buffered shared memory), sgemm_db_cur and the diagnostic SGEMM
//   variants sgemm_fence, sgemm_norestrict, sgemm_carveout
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "reduce.cu"
#include "sgemm.cu"
#include "vadd.cu"

namespace {

int gRuns = 20;
std::string gImpl = "cuda";
FILE* gJson = nullptr;

void fail(const std::string& msg) {
  std::fprintf(stderr, "cuda_bench: %s\n", msg.c_str());
  std::exit(1);
}

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail(std::string(what) + ": " + cudaGetErrorString(e));
}

// Uniform floats in [lo, hi) from a hash of the index: fast to make on the
// device, reproducible on the host.
__host__ __device__ inline float hashFloat(uint64_t i, uint32_t seed, float lo, float hi) {
  uint64_t s = (i + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t(seed) << 32);
  s ^= s >> 33, s *= 0xff51afd7ed558ccdull, s ^= s >> 33, s *= 0xc4ceb9fe1a85ec53ull, s ^= s >> 33;
  return lo + (hi - lo) * float(double(s >> 11) * 0x1p-53);
}

__global__ void fillKernel(float* p, size_t n, uint32_t seed, float lo, float hi) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = hashFloat(i, seed, lo, hi);
}

__global__ void poisonKernel(float* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = __int_as_float(0x7fc00000);
}

float* devRandom(size_t n, uint32_t seed, float lo, float hi) {
  float* p;
  ck(cudaMalloc(&p, n * 4), "cudaMalloc");
  fillKernel<<<1024, 256>>>(p, n, seed, lo, hi);
  ck(cudaGetLastError(), "fill");
  return p;
}

float* devPoisoned(size_t n) {
  float* p;
  ck(cudaMalloc(&p, n * 4), "cudaMalloc");
  poisonKernel<<<1024, 256>>>(p, n);
  ck(cudaGetLastError(), "poison");
  return p;
}

std::vector<float> download(const float* p, size_t n) {
  std::vector<float> v(n);
  ck(cudaMemcpy(v.data(), p, n * 4, cudaMemcpyDeviceToHost), "download");
  return v;
}

// Warm up for >= 300 ms of GPU time (the clocks drop while the CPU checks),
// then time gRuns launches of `launch`, each between two events.
template <class F>
std::vector<double> timeRuns(F launch) {
  cudaEvent_t a, b;
  ck(cudaEventCreate(&a), "event");
  ck(cudaEventCreate(&b), "event");
  float warm = 0;
  for (int batch = 0; warm < 300 && batch < 2000; ++batch) {
    ck(cudaEventRecord(a), "record");
    for (int r = 0; r < gRuns; ++r) launch();
    ck(cudaEventRecord(b), "record");
    ck(cudaEventSynchronize(b), "sync");
    float ms;
    ck(cudaEventElapsedTime(&ms, a, b), "elapsed");
    warm += ms;
  }
  ck(cudaEventDestroy(a), "event");
  ck(cudaEventDestroy(b), "event");
  std::vector<cudaEvent_t> ev(gRuns + 1);
  for (auto& e : ev) ck(cudaEventCreate(&e), "event");
  ck(cudaEventRecord(ev[0]), "record");
  // Back to back, like dispatches recorded into one command buffer; one
  // event between consecutive runs marks the end of one and start of the next.
  for (int r = 0; r < gRuns; ++r) {
    launch();
    ck(cudaEventRecord(ev[r + 1]), "record");
  }
  ck(cudaEventSynchronize(ev[gRuns]), "sync");
  ck(cudaGetLastError(), "launch");
  std::vector<double> ms(gRuns);
  for (int r = 0; r < gRuns; ++r) {
    float t;
    ck(cudaEventElapsedTime(&t, ev[r], ev[r + 1]), "elapsed");
    ms[r] = t;
  }
  for (auto& e : ev) ck(cudaEventDestroy(e), "event");
  return ms;
}

void report(const char* name, uint64_t size, const char* unit, double work, double error,
            const std::vector<double>& ms) {
  std::vector<double> s = ms;
  std::sort(s.begin(), s.end());
  double med = s[s.size() / 2];
  double rate = work / (med * 1e-3) / (std::strcmp(unit, "TFLOP/s") == 0 ? 1e12 : 1e9);
  std::ostringstream o;
  o.precision(7);
  o << "{\"impl\": \"" << gImpl << "\", \"name\": \"" << name << "\", \"size\": " << size << ", \"unit\": \"" << unit
    << "\", \"work\": " << work << ", \"median_ms\": " << med << ", \"rate\": " << rate
    << ", \"check_error\": " << error << ", \"min_ms\": " << s.front() << ", \"max_ms\": " << s.back()
    << ", \"runs_ms\": [";
  for (size_t i = 0; i < ms.size(); ++i) o << (i ? ", " : "") << ms[i];
  o << "]}";
  std::printf("%s\n", o.str().c_str());
  std::fflush(stdout);
  if (gJson) std::fprintf(gJson, "%s\n", o.str().c_str()), std::fflush(gJson);
}

// vec4: vadd4 (one float4 per thread, n a multiple of 4), else vadd.
void benchVadd(uint64_t n, bool vec4) {
  float *a = devRandom(n, 1, -1, 1), *b = devRandom(n, 2, -1, 1), *c = devPoisoned(n);
  uint64_t threads = vec4 ? n / 4 : n;
  unsigned blocks = unsigned((threads + 255) / 256);
  auto launch = [&] {
    if (vec4)
      vadd4<<<blocks, 256>>>(reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b),
                             reinterpret_cast<float4*>(c), int(threads));
    else
      vadd<<<blocks, 256>>>(a, b, c, int(n));
  };
  launch();
  ck(cudaDeviceSynchronize(), "vadd");
  auto ha = download(a, n), hb = download(b, n), hc = download(c, n);
  for (uint64_t i = 0; i < n; ++i)
    if (!(hc[i] == ha[i] + hb[i])) fail("vadd: element " + std::to_string(i) + " is " + std::to_string(hc[i]));
  report(vec4 ? "vadd4" : "vadd", n, "GB/s", 12.0 * n, 0.0, timeRuns(launch));
  cudaFree(a), cudaFree(b), cudaFree(c);
}

void benchReduce(uint64_t n) {
  uint64_t n4 = n / 4;
  float* x = devRandom(n, 3, 0, 1);
  const unsigned groups = unsigned(std::max<uint64_t>(1, std::min<uint64_t>(2048, (n4 + 1023) / 1024)));
  float *partial = devPoisoned(groups), *out = devPoisoned(1);
  auto launch = [&] {
    reduce_partial<<<groups, 256>>>(reinterpret_cast<const float4*>(x), partial, int(n4));
    reduce_final<<<1, 256>>>(partial, out, int(groups));
  };
  launch();
  ck(cudaDeviceSynchronize(), "reduce");
  auto hx = download(x, n);
  double want = 0;
  for (float v : hx) want += v;
  float got = download(out, 1)[0];
  double err = std::fabs(got - want) / want;
  if (!(err < 1e-4)) fail("reduce: got " + std::to_string(got) + ", want " + std::to_string(want));
  report("reduce", n, "GB/s", 4.0 * n, err, timeRuns(launch));
  cudaFree(x), cudaFree(partial), cudaFree(out);
}

// name: sgemm, sgemm_db, sgemm_db_cur, or a diagnostic variant (sgemm_fence,
// sgemm_norestrict, sgemm_carveout).
void benchSgemm(uint32_t n, const std::string& name) {
  size_t nn = size_t(n) * n;
  float *a = devRandom(nn, 4, -1, 1), *b = devRandom(nn, 5, -1, 1), *c = devPoisoned(nn);
  dim3 grid(n / 128, n / 128);
  auto kernel = name == "sgemm_fence"        ? sgemm128_fence
                : name == "sgemm_norestrict" ? sgemm128_norestrict
                : name == "sgemm_db"         ? sgemm128_db
                : name == "sgemm_db_cur"     ? sgemm128_db_cur
                                             : sgemm128;
  // The carveout is a property of the function: set for this variant only
  // (and put back to the default at the end).
  const bool carveout = name == "sgemm_carveout";
  if (carveout)
    ck(cudaFuncSetAttribute(sgemm128, cudaFuncAttributePreferredSharedMemoryCarveout,
                            int(cudaSharedmemCarveoutMaxShared)),
       "carveout");
  auto launch = [&] {
    kernel<<<grid, 256>>>(int(n), a, reinterpret_cast<const float4*>(b), reinterpret_cast<float4*>(c), int(n / 4));
  };
  launch();
  ck(cudaDeviceSynchronize(), "sgemm");
  auto A = download(a, nn), B = download(b, nn), C = download(c, nn);
  std::mt19937 rng(n);
  std::uniform_int_distribution<uint32_t> pick(0, n - 1);
  size_t samples = n <= 512 ? nn : 512;
  double num = 0, den = 0;
  for (size_t s = 0; s < samples; ++s) {
    uint32_t i = n <= 512 ? uint32_t(s / n) : pick(rng), j = n <= 512 ? uint32_t(s % n) : pick(rng);
    double want = 0;
    for (uint32_t k = 0; k < n; ++k) want += double(A[size_t(i) * n + k]) * B[size_t(k) * n + j];
    double got = C[size_t(i) * n + j];
    if (std::isnan(got)) fail("sgemm: C[" + std::to_string(i) + "][" + std::to_string(j) + "] not written");
    num += (got - want) * (got - want), den += want * want;
  }
  double err = std::sqrt(num / den);
  if (!(err < 1e-5)) fail("sgemm " + std::to_string(n) + ": relative error " + std::to_string(err));
  report(name.c_str(), n, "TFLOP/s", 2.0 * double(n) * n * n, err, timeRuns(launch));
  if (carveout)
    ck(cudaFuncSetAttribute(sgemm128, cudaFuncAttributePreferredSharedMemoryCarveout,
                            int(cudaSharedmemCarveoutDefault)),
       "carveout");
  cudaFree(a), cudaFree(b), cudaFree(c);
}

std::vector<uint64_t> sizes(const std::string& s) {
  std::vector<uint64_t> v;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) v.push_back(std::strtoull(item.c_str(), nullptr, 0));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::string vaddS = "16777216,67108864,268435456", reduceS = vaddS, sgemmS = "1024,2048,4096", json;
  std::string only = "vadd,vadd4,reduce,sgemm";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--runs") gRuns = std::atoi(value().c_str());
    else if (a == "--vadd") vaddS = value();
    else if (a == "--reduce") reduceS = value();
    else if (a == "--sgemm") sgemmS = value();
    else if (a == "--json") json = value();
    else if (a == "--impl") gImpl = value();
    else if (a == "--only") only = value();
    else if (a == "--small") vaddS = reduceS = "1048576,1049124", sgemmS = "128,256,512";
    else fail("unknown argument '" + a + "'");
  }
  if (gRuns <= 0) fail("--runs must be positive");
  if (!json.empty() && !(gJson = std::fopen(json.c_str(), "a"))) fail("cannot open " + json);
  cudaDeviceProp prop;
  ck(cudaGetDeviceProperties(&prop, 0), "device");
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver), cudaRuntimeGetVersion(&runtime);
  std::fprintf(stderr, "cuda_bench on %s, %d SMs, CUDA driver %d, runtime %d\n", prop.name,
               prop.multiProcessorCount, driver, runtime);
  auto want = [&](const std::string& name) { return ("," + only + ",").find("," + name + ",") != std::string::npos; };
  for (uint64_t n : sizes(vaddS)) {
    if (want("vadd")) benchVadd(n, false);
    if (want("vadd4") && n % 4 == 0) benchVadd(n, true);
  }
  if (want("reduce"))
    for (uint64_t n : sizes(reduceS)) {
      if (n % 4) fail("--reduce sizes must be multiples of 4");
      benchReduce(n);
    }
  for (const char* name : {"sgemm", "sgemm_db", "sgemm_db_cur", "sgemm_fence", "sgemm_norestrict", "sgemm_carveout"})
    if (want(name))
      for (uint64_t n : sizes(sgemmS)) {
        if (n % 128) fail("--sgemm sizes must be multiples of 128");
        benchSgemm(uint32_t(n), name);
      }
  if (gJson) std::fclose(gJson);
  return 0;
}
